"""Put explorable pages on the site, where the text discusses them.

The labs tell a student to make a graph's explorable page, in a sentence
such as "make Figure 1's explorable page with ``minirad explore
minirad.examples:figure1 -o figure1.html`` and open it (Eliminate panel)".
On the site the page is right there: :func:`embed` puts a frame holding it
after each such sentence of a lab notebook, opened on the tab the sentence
names, and :func:`write_pages` writes each page named anywhere with
:func:`minirad.explore`, the function behind the command.  The site's own
pages embed them with a frame of class ``explorable``.

A page is rewritten only when its bytes change, so that an unchanged site
copies it and nothing more; and when neither the list of pages nor minirad's
files (its code, and the page's script, style and template) changed since the
pages were written (a stamp records their hash), no page is
computed at all: tracing the graphs and sampling them for every page was most
of a build with nothing changed.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import re
from pathlib import Path

# `minirad explore module:function ...`, and the tab named beside it
COMMAND = re.compile(r"`minirad explore (?P<spec>[\w.]+:\w+)[^`]*`")
TAB = re.compile(r"\((?P<tab>Exact|Eliminate|Paths|Sample|Memory) (?:panel|tab)\)")
#: minirad's files that make a page: its code, and the page's template, script and style
MADE_FROM = (".py", ".html", ".js", ".css")


def page_name(spec: str) -> str:
    """The file a graph's page is saved as: ``minirad.examples:figure1`` -> ``figure1.html``."""
    return spec.rpartition(":")[2] + ".html"


def mentions(text: str) -> list[tuple[str, str]]:
    """The (spec, tab) of every explorable page a piece of Markdown tells the reader to make.

    >>> mentions("make it with `minirad explore minirad.examples:figure1 -o f.html` "
    ...          "and open it (Sample panel)")
    [('minirad.examples:figure1', 'sample')]
    """
    tab = TAB.search(text)
    return [(m["spec"], tab["tab"].lower() if tab else "exact") for m in COMMAND.finditer(text)]


def frame(src: str, title: str) -> str:
    """The HTML of a frame that shows one explorable page."""
    return (f'<iframe class="explorable" src="{html.escape(src, quote=True)}" '
            f'title="{html.escape(title, quote=True)}" loading="lazy"></iframe>')


def embed(notebook: dict, to_site: str) -> set[str]:
    """Insert a frame after every Markdown cell of ``notebook`` (nbformat's JSON, changed in
    place) that names an explorable page; ``to_site`` is the path from the notebook's page
    to the site's root. Returns the specs of the pages it embedded."""
    cells, specs = [], set()
    for cell in notebook["cells"]:
        cells.append(cell)
        if cell["cell_type"] != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for spec, tab in mentions(source):
            specs.add(spec)
            name = spec.rpartition(":")[2]
            src = f"{to_site}explore/{page_name(spec)}#{tab}"
            cells.append({"cell_type": "markdown", "metadata": {}, "id": f"explore-{len(cells)}",
                          "source": frame(src, f"the explorable page of {name}, {tab} tab")})
    notebook["cells"] = cells
    return specs


def fingerprint(specs) -> str:
    """A hash of what the pages of ``specs`` are made from: the specs and minirad's files."""
    import minirad

    root = Path(minirad.__file__).resolve().parent
    digest = hashlib.sha256("\n".join(sorted(set(specs))).encode())
    for file in sorted(root.rglob("*")):
        if file.suffix in MADE_FROM and "__pycache__" not in file.parts:
            digest.update(str(file.relative_to(root)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def write_pages(specs, folder: Path, stamp: Path) -> list[Path]:
    """Write the explorable page of each ``module:function`` spec into ``folder`` (the
    function called with no arguments gives the graph); pages of other names are removed.
    Nothing is computed when the file ``stamp`` (kept outside ``folder``, which the site
    copies) says that the pages were written from the same specs and the same minirad
    (:func:`fingerprint`)."""
    import minirad

    made_from = fingerprint(specs)
    pages = [folder / page_name(spec) for spec in sorted(set(specs))]
    if stamp.exists() and stamp.read_text(encoding="utf-8") == made_from \
            and all(page.exists() for page in pages):
        return pages
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in sorted(set(specs)):
        module, _, function = spec.rpartition(":")
        g = getattr(importlib.import_module(module), function)()
        target = folder / page_name(spec)
        text = minirad.explore(g, title=function).html  # titled as `minirad explore` titles it
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    for old in folder.glob("*.html"):
        if old not in written:
            old.unlink()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(made_from, encoding="utf-8")
    return written
