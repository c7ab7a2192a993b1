"""Write the labs as notebooks for the site, with the ``minirad lab`` command.

The labs live in ``tutorials/`` as percent-format scripts with solution
markers; the command that turns them into handouts and solutions belongs to
the library (``minirad lab handout|solutions``), so the site calls it rather
than copying its logic.  The site then changes each notebook in two ways:
an explorable page the lab tells the reader to make is embedded after the
sentence that says so (``explore_pages.embed``), and a solution's title says
that it is one, so that a search tells a lab's handout and its solutions
apart.

Notebooks whose bytes did not change are left alone, so an unchanged lab is
neither read again by Sphinx nor executed again; and when neither the labs
nor the code that writes them changed since the last build (a stamp in the
folder records their hash), the command is not run at all.
"""

from __future__ import annotations

import filecmp
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import explore_pages

STAMP = ".written-from"
# the code that decides what a notebook holds, besides the labs themselves
WRITERS = ("minirad/labs", "minirad/cli.py", "docs/_ext/lab_pages.py",
           "docs/_ext/explore_pages.py")


def natural_key(name: str) -> list:
    """Sort ``lab10`` after ``lab9``: digits compare as numbers.

    >>> sorted(["lab10_x", "lab2_y", "lab1_z"], key=natural_key)
    ['lab1_z', 'lab2_y', 'lab10_x']
    """
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _fingerprint(tutorials: Path, form: str) -> str:
    root = tutorials.resolve().parent
    files = sorted(tutorials.glob("*.py"))
    for writer in WRITERS:
        path = root / writer
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    digest = hashlib.sha256(form.encode())
    for file in files:
        digest.update(str(file.relative_to(root)).encode())
        digest.update(file.read_bytes() if file.exists() else b"")
    return digest.hexdigest()


def _solutions_title(notebook: dict) -> None:
    """Add "(solutions)" to the notebook's first heading."""
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        lines = "".join(cell["source"]).split("\n")
        for i, line in enumerate(lines):
            if line.startswith("# "):
                lines[i] = line.rstrip() + " (solutions)"
                cell["source"] = "\n".join(lines)
                return


def write_notebooks(tutorials: Path, folder: Path, form: str) -> tuple[list[Path], set[str]]:
    """Run ``minirad lab <form> tutorials -o folder``; ``form`` is "handout" or "solutions".

    Returns the notebooks in ``folder``, in the labs' order, and the explorable
    pages they embed (``module:function`` specs); notebooks of labs that no
    longer exist are removed.
    """
    stamp = folder / STAMP
    fingerprint = _fingerprint(tutorials, form)
    if stamp.exists():
        recorded = json.loads(stamp.read_text(encoding="utf-8"))
        if recorded["fingerprint"] == fingerprint:
            return _in_order(folder), set(recorded["explorable"])
    specs: set[str] = set()
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "minirad", "lab", form, str(tutorials), "-o", scratch]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{run.stdout}{run.stderr}")
        made = sorted(Path(scratch).glob("*.ipynb"))
        if not made:
            raise RuntimeError(f"{' '.join(command)} wrote no notebook")
        for path in made:
            notebook = json.loads(path.read_text(encoding="utf-8"))
            specs |= explore_pages.embed(notebook, to_site="../../")
            if form == "solutions":
                _solutions_title(notebook)
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n",
                            encoding="utf-8")
        folder.mkdir(parents=True, exist_ok=True)
        names = {path.name for path in made}
        for old in folder.glob("*.ipynb"):
            if old.name not in names:
                old.unlink()
        for path in made:
            target = folder / path.name
            if not target.exists() or not filecmp.cmp(path, target, shallow=False):
                shutil.copyfile(path, target)
    stamp.write_text(json.dumps({"fingerprint": fingerprint, "explorable": sorted(specs)}),
                     encoding="utf-8")
    return _in_order(folder), specs


def _in_order(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.ipynb"), key=lambda path: natural_key(path.stem))


def toctree(folder: str, notebooks: list[Path]) -> str:
    """A toctree of the notebooks, in the labs' order (``lab10`` after ``lab9``)."""
    lines = ["```{toctree}", ":maxdepth: 1", ""]
    lines += [f"{folder}/{path.stem}" for path in notebooks]
    return "\n".join([*lines, "```", ""])
