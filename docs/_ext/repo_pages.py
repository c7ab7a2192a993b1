"""Show the committed runs of the case studies on the site, their links intact.

The study pages (``docs/nn_study.md``, ``docs/pde_study.md``) point into the
repository: to the folders of committed results (``figures/nn/``,
``figures/pde/``, each with a README, a results page and its pictures).  The
site copies those folders under ``docs/runs/`` and adds each folder's pictures
at the end of its README, so that the tables and figures show on the site.

A link in a Markdown page is written for the repository, relative to where the
page lives there.  :func:`rewrite_links` maps it onto the site: a link to a
copied file or folder points at its copy; a link to anything else the site
does not carry (``bench/README.md``, a test file) keeps its text and loses the
link, since the site cannot show it.  Anything that is not an existing file of
the repository is left as it is (Sphinx reports a broken link).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

# [text](target) and ![alt](target); the target has no spaces or parentheses
LINK = re.compile(r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:|^#|^/", re.IGNORECASE)
PICTURES = (".png", ".svg")


class Site:
    """Where each file of the repository ``root`` shows on the site built from ``docs``.

    ``mirrored`` are repository folders (relative to ``root``) copied under
    ``docs/runs/`` with their sub-folders.
    """

    def __init__(self, root: Path, docs: Path, mirrored: list[str]):
        self.root, self.docs = root.resolve(), docs.resolve()
        self.copies = {self.root / folder: self.docs / "runs" / Path(folder).name
                       for folder in mirrored}

    def copy(self) -> None:
        """Copy the mirrored folders' Markdown pages and pictures; each README lists its
        folder's pictures at its end, and the other pages are marked as reached from it."""
        for source, target in self.copies.items():
            if target.exists():
                shutil.rmtree(target)
            for folder, _, files in os.walk(source):
                here = Path(folder)
                into = target / here.relative_to(source)
                into.mkdir(parents=True, exist_ok=True)
                for name in files:
                    if name.endswith(PICTURES) or name == "README.md":
                        shutil.copyfile(here / name, into / name)
                    elif name.endswith(".md"):
                        # reached from its README, not listed in the table of contents
                        text = (here / name).read_text(encoding="utf-8")
                        (into / name).write_text("---\norphan: true\n---\n\n" + text,
                                                 encoding="utf-8")
                pictures = sorted(name for name in files if name.endswith(PICTURES))
                readme = into / "README.md"
                if pictures and readme.exists():
                    with readme.open("a", encoding="utf-8") as f:
                        f.write("\n\n## The pictures\n\n")
                        for name in pictures:
                            f.write(f"### `{name}`\n\n![{name}]({name})\n\n")

    def origin(self, page: Path) -> Path:
        """The repository file that a page of the site was copied from (itself if none)."""
        page = page.resolve()
        for source, target in self.copies.items():
            if page.is_relative_to(target):
                return source / page.relative_to(target)
        return page

    def on_site(self, path: Path) -> Path | None:
        """The site's copy of a repository file or folder (a folder shows as its
        README), or None when the site does not carry it."""
        path = Path(os.path.normpath(path))
        if path.is_dir():
            path = path / "README.md"
        if path.is_relative_to(self.docs) and path.exists():
            return path
        for source, target in self.copies.items():
            if path.is_relative_to(source) and path.exists():
                return target / path.relative_to(source)
        return None

    def rewrite_links(self, page: Path, text: str) -> str:
        """``text`` of the site's ``page`` with its repository links mapped onto the site."""
        page = page.resolve()
        origin = self.origin(page)

        def mapped(match: re.Match) -> str:
            target = match["target"]
            if EXTERNAL.match(target):
                return match[0]
            path, _, anchor = target.partition("#")
            if not (origin.parent / path).exists():
                return match[0]  # not a file: code, or a broken link that Sphinx reports
            copy = self.on_site(origin.parent / path)
            if copy is None:
                return match["text"]
            link = os.path.relpath(copy, page.parent).replace(os.sep, "/")
            return f"{match['bang']}[{match['text']}]({link}{'#' + anchor if anchor else ''})"

        return LINK.sub(mapped, text)
