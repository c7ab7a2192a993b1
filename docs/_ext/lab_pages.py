"""Write the labs as notebooks for the site, with the ``minirad lab`` command.

The labs live in ``tutorials/`` as percent-format scripts with solution
markers; the command that turns them into handouts and solutions belongs to
the library (``minirad lab handout|solutions``), so the site calls it rather
than copying its logic.  Notebooks whose bytes did not change are left alone,
so an unchanged lab is neither read again by Sphinx nor executed again.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def write_notebooks(tutorials: Path, folder: Path, form: str) -> list[Path]:
    """Run ``minirad lab <form> tutorials -o folder``; ``form`` is "handout" or "solutions".

    Returns the notebooks in ``folder``; notebooks of labs that no longer exist
    are removed.
    """
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "minirad", "lab", form, str(tutorials), "-o", scratch]
        run = subprocess.run(command, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{run.stdout}{run.stderr}")
        made = sorted(Path(scratch).glob("*.ipynb"))
        if not made:
            raise RuntimeError(f"{' '.join(command)} wrote no notebook")
        folder.mkdir(parents=True, exist_ok=True)
        names = {path.name for path in made}
        for old in folder.glob("*.ipynb"):
            if old.name not in names:
                old.unlink()
        for path in made:
            target = folder / path.name
            if not target.exists() or not filecmp.cmp(path, target, shallow=False):
                shutil.copyfile(path, target)
    return sorted(folder.glob("*.ipynb"))
