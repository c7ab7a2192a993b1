"""Show the repository's own Markdown files on the site, once, with their links intact.

Some pages of the site are files that live elsewhere in the repository and
are read there too: the instructors' guide (``tutorials/INSTRUCTORS.md``),
the notes on every figure (``figures/README.md``), the committed runs of the
case studies (``figures/nn/README.md``, ...).  The site does not copy them:
a page of ``docs/`` names the file in one line,

    <!-- include: ../tutorials/INSTRUCTORS.md -->

and :meth:`Site.include` puts the file's text in its place when Sphinx reads
the page (and tells Sphinx that the page depends on the file, so that an
unchanged file costs nothing on the next build).  When the page has a title
of its own above that line, the file's headings move one level down.

A link in a Markdown file is written for the repository, relative to where
the file lives there.  :meth:`Site.rewrite_links` maps it onto the site: a
link to a file that a page includes points at that page, a lab script at its
handout, a picture anywhere in the repository stays a picture (Sphinx copies
it), and a link to anything else the site does not carry (a test file,
``bench/RESULTS.md``) keeps its text and loses the link.  Anything that is not
an existing file of the repository is left as it is (Sphinx reports a broken
link).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# [text](target) and ![alt](target); the target has no spaces or parentheses
LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:|^#|^/", re.IGNORECASE)
INCLUDE = re.compile(r"^<!-- include: (?P<path>\S+) -->[ \t]*$", re.MULTILINE)
PICTURES = (".png", ".svg", ".jpg", ".gif")


def demote_headings(text: str) -> str:
    r"""Markdown ``text`` with every heading one level lower, code blocks left alone.

    >>> demote_headings("# A\n\n```\n# code\n```\n## B")
    '## A\n\n```\n# code\n```\n### B'
    """
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        lines.append(line)
    return "\n".join(lines)


class Site:
    """Where each file of the repository ``root`` shows on the site built from ``docs``.

    ``left_out`` are folders of ``docs`` that this build leaves out (the
    instructors' section of a site for students): links to them lose their
    target.  ``forms`` maps a repository folder to the site folder that shows its files
    in another form, with the suffix they have there: ``{"tutorials":
    ("labs/handouts", ".ipynb")}`` shows ``tutorials/lab1.py`` as the page
    ``labs/handouts/lab1.ipynb``.
    """

    def __init__(self, root: Path, docs: Path, forms: dict[str, tuple[str, str]] | None = None,
                 left_out: list[str] = ()):
        self.root, self.docs = root.resolve(), docs.resolve()
        self.forms = {self.root / folder: (self.docs / target, suffix)
                      for folder, (target, suffix) in (forms or {}).items()}
        self.left_out = [self.docs / folder for folder in ("_build", *left_out)]
        self.includes: dict[Path, Path] = {}   # repository file -> the page that includes it
        for page in sorted(self.docs.rglob("*.md")):
            if self._left_out(page):
                continue
            for match in INCLUDE.finditer(page.read_text(encoding="utf-8")):
                self.includes.setdefault((page.parent / match["path"]).resolve(), page)

    def _left_out(self, path: Path) -> bool:
        return any(path.is_relative_to(folder) for folder in self.left_out)

    def include(self, page: Path, text: str) -> tuple[str, list[Path]]:
        """``text`` of the site's ``page`` with each include line replaced by the file
        it names, that file's links mapped onto the site; and the files included."""
        page = page.resolve()
        files: list[Path] = []

        def included(match: re.Match) -> str:
            file = (page.parent / match["path"]).resolve()
            if not file.is_file():
                raise FileNotFoundError(f"{page}: the included file {match['path']} "
                                        f"does not exist")
            files.append(file)
            included = self.rewrite_links(page, file.read_text(encoding="utf-8"), origin=file)
            titled = re.search(r"^# ", text[:match.start()], re.MULTILINE)
            return demote_headings(included) if titled else included

        return INCLUDE.sub(included, text), files

    def on_site(self, path: Path) -> Path | None:
        """The page or picture of the site that shows a repository file or folder (a
        folder shows as its README), or None when the site does not carry it."""
        path = Path(os.path.normpath(path))
        if path.is_dir():
            path = path / "README.md"
        if not path.exists():
            return None
        if path in self.includes:
            return self.includes[path]
        if path.suffix.lower() in PICTURES:
            return path
        if path.is_relative_to(self.docs):
            return None if self._left_out(path) else path
        for folder, (target, suffix) in self.forms.items():
            if path.is_relative_to(folder):
                shown = (target / path.relative_to(folder)).with_suffix(suffix)
                return shown if shown.exists() else None
        return None

    def rewrite_links(self, page: Path, text: str, origin: Path | None = None) -> str:
        """``text`` of the site's ``page``, written at ``origin`` in the repository (the
        page itself unless given), with its repository links mapped onto the site."""
        page = page.resolve()
        origin = (origin or page).resolve()

        def mapped(match: re.Match) -> str:
            target = match["target"]
            if EXTERNAL.match(target):
                return match[0]  # a web address, or a heading of this page
            path, _, anchor = target.partition("#")
            if not (origin.parent / path).exists():
                return match[0]  # not a file: code, or a broken link that Sphinx reports
            shown = self.on_site(origin.parent / path)
            if shown is None:
                return match["text"]
            if shown == page and anchor:
                return f"{match['bang']}[{match['text']}](#{anchor})"
            link = os.path.relpath(shown, page.parent).replace(os.sep, "/")
            return f"{match['bang']}[{match['text']}]({link}{'#' + anchor if anchor else ''})"

        return LINK.sub(mapped, text)
