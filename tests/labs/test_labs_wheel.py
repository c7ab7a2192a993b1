"""The course install path without an index: the wheel ``python -m build`` makes, installed
into a fresh virtual environment, grades a lab with its own ``minirad lab grade``.

What an instructor does (tutorials/INSTRUCTORS.md, "Installing minirad from a wheel"):
build the wheel once, hand it out, install it with pip.  The test builds the wheel from a
copy of the sources (so the checkout gets no ``build/`` folder) and checks that it holds
every file of the package (the labs' modules, which hold the checks and the references,
and the data files beside them).  It installs the wheel with ``pip install --no-index``
into a new environment, then grades Lab 2's solutions and a copy with a planted mistake.
The environment takes the installed dependencies (numpy, nbclient, ...) from the one
running the tests, through a ``.pth`` file written after the install, because a test
must not reach an index.  So minirad itself must come from the wheel: the test checks
``minirad.__file__`` in the environment's Python, and a last cell of each submission
breaks 2.2 in a kernel that imported any other minirad (a wrong path there did cost 2.2).
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow   # builds a wheel, makes a virtual environment, grades twice

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "README.md", "minirad_command.py", "minirad")
HONEST_LINE = "tangent[v] += g.partial(u, v) * tangent[u]"
WRONG_LINE = "tangent[v] = g.partial(u, v) * tangent[u]"   # the mistake 2.1's hint names


def _run(command, cwd, env=None, timeout=600) -> str:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, timeout=timeout,
                          capture_output=True, text=True)
    assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _package_files(root: Path) -> set[str]:
    """Every file of the package as it would be shipped (no caches)."""
    return {path.relative_to(root).as_posix() for path in (root / "minirad").rglob("*")
            if path.is_file() and "__pycache__" not in path.parts} | {"minirad_command.py"}


def _build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    # --no-isolation: setuptools from this environment (the dev extra), no index reached
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
          "--outdir", tmp_path / "dist", source], cwd=tmp_path)
    (wheel,) = (tmp_path / "dist").glob("minirad-*.whl")
    return wheel


def _clean_env(venv: Path) -> dict:
    """The environment a student's shell would have: the new environment's programs first,
    nothing that points Python at this checkout."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(venv)
    return env


def _scores(folder: Path) -> dict[str, dict]:
    with open(folder / "scores.csv", newline="", encoding="utf-8") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_the_wheel_installed_without_an_index_grades_a_lab(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if ".dist-info/" not in name}
        entry_points = archive.read(next(n for n in archive.namelist()
                                         if n.endswith(".dist-info/entry_points.txt")))
    # every module and data file the grader may load, the labs' checks and references too
    assert _package_files(ROOT) <= shipped, sorted(_package_files(ROOT) - shipped)
    assert {"minirad/labs/lab02_lcg.py", "minirad/draw/explore_page/explore.js"} <= shipped
    assert b"minirad = minirad_command:main" in entry_points

    venv = tmp_path / "course-env"
    # without pip of its own (no ensurepip needed): this environment's pip installs into it
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    env = _clean_env(venv)
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-index",
          "--no-deps", "--disable-pip-version-check", wheel], cwd=tmp_path, env=env)
    # the dependencies: this environment's installed packages, appended after the new
    # environment's own site-packages (a path in a .pth file runs none of that folder's
    # own .pth files, so an editable minirad there stays unimportable)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     cwd=tmp_path, env=env).strip())
    ours = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site / "test-dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")

    found = _run([python, "-c", "import minirad, minirad.labs, minirad_command; "
                  "print(minirad.__file__); print(minirad_command.__file__)"],
                 cwd=tmp_path, env=env).split()
    assert [Path(f).parent for f in found] == [site / "minirad", site], found

    # the instructor's steps, with the installed command: solutions, then grading
    _run([venv / "bin" / "minirad", "lab", "solutions", ROOT / "tutorials" / "lab2_lcg.py",
          "-o", tmp_path / "solutions"], cwd=tmp_path, env=env)
    (solved,) = (tmp_path / "solutions").glob("lab2*.ipynb")
    text = solved.read_text(encoding="utf-8")
    assert text.count(HONEST_LINE) == 1
    # the kernels too must import the wheel's minirad: a last cell that breaks the answer
    # to 2.2 in a kernel that imported another one
    nb = nbformat.reads(text, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import os\n"
        f"if os.path.dirname(os.path.realpath(minirad.__file__)) != "
        f"{str((site / 'minirad').resolve())!r}:\n"
        "    def reverse_sweep(g):\n"
        "        raise RuntimeError('minirad imported from ' + minirad.__file__)\n"))
    text = nbformat.writes(nb)
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    (submissions / "lab2_lcg-honest.ipynb").write_text(text, encoding="utf-8")
    (submissions / "lab2_lcg-wrong.ipynb").write_text(text.replace(HONEST_LINE, WRONG_LINE),
                                                       encoding="utf-8")
    _run([venv / "bin" / "minirad", "lab", "grade", *sorted(submissions.glob("*.ipynb")),
          "-o", tmp_path / "grades", "--jobs", "2"], cwd=tmp_path, env=env, timeout=900)

    scores = _scores(tmp_path / "grades")
    assert set(scores) == {"honest", "wrong"}
    honest, wrong = scores["honest"], scores["wrong"]
    assert honest["max"] == wrong["max"] == "6", scores
    assert honest["total"] == "6" and honest["2.1"] == "3" and honest["2.2"] == "3", honest
    # the planted mistake costs points on 2.1 only
    assert float(wrong["2.1"]) < 3 and wrong["2.2"] == "3", wrong
    assert float(wrong["total"]) < 6
