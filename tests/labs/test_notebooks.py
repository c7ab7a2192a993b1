"""minirad in its real notebook environment: a fresh Jupyter kernel, no ``%matplotlib inline``.

Every lab's solutions notebook is graded by ``minirad lab grade`` (each in its
own sandboxed kernel, once per test session: tests/oracles.py graded_lab): it must
score full marks, no cell may fail, and no picture may reach the notebook only as
a text repr (``<Figure size 640x480 with 1 Axes>``,
``[<minirad.draw.render.Drawing at 0x...>]``), which is what a student would
see.  (The handouts' stubs are graded in tests/test_labs.py, over the lab's one
in-process run.)  Each value minirad returns as a picture is also checked on its
own in one kernel.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from oracles import graded_lab, lab_group

from minirad.labs.exercise import exercises_of_lab

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((ROOT / "tutorials").glob("lab*.py"))

# the text repr of a picture object: what shows when no image format was found
PICTURE_AS_TEXT = re.compile(r"<(matplotlib\.figure\.)?Figure size"
                             r"|<[\w.]+ (object )?at 0x[0-9a-f]+>")
IMAGES = ("image/png", "image/svg+xml")


def _kernel_env() -> dict:
    """A plain kernel: no backend chosen for it, and this checkout's minirad importable."""
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
    return env


def _execute(nb, folder: Path):
    nb = nbformat.reads(json.dumps(nb), as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}})
    client.execute(env=_kernel_env())
    return nb


def _outputs(cells):
    """(cell number, output) for every output of a notebook's cells (as nbformat cells or
    as the grader's report gives them)."""
    for number, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            yield number, output


def _displays(cells):
    """(cell number, output) for every displayed value."""
    for number, output in _outputs(cells):
        if output["output_type"] in ("display_data", "execute_result"):
            yield number, output


def _text_only_pictures(cells) -> list[str]:
    return [f"cell {number}: {output['data']['text/plain'][:80]!r}"
            for number, output in _displays(cells)
            if not any(kind in output["data"] for kind in IMAGES)
            and PICTURE_AS_TEXT.search(output["data"].get("text/plain", ""))]


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=lab_group(lab.stem)) for lab in LABS],
                         ids=[lab.stem for lab in LABS])
def test_lab_solutions_score_full_marks_in_a_kernel_with_inline_pictures(lab,
                                                                           tmp_path_factory):
    report = graded_lab(lab.stem, tmp_path_factory)
    assert report.scores and not report.error, report.error
    failed = [(s.number, s.status, s.message) for s in report.scores if s.status != "passed"]
    assert not failed, failed
    assert report.total == report.max_total == sum(
        spec.points for spec in exercises_of_lab(report.lab))
    cells = report.executed
    errors = [o for _, o in _outputs(cells) if o["output_type"] == "error"]
    assert not errors, errors[0]
    assert not _text_only_pictures(cells), _text_only_pictures(cells)
    images = [output for _, output in _displays(cells) if any(k in output["data"] for k in IMAGES)]
    assert images, f"{lab.name} showed no picture inline"
    streams = "".join(output.get("text", "") for _, output in _outputs(cells)
                      if output["output_type"] == "stream")
    # labs.show displays inline in a kernel; saving to a file instead would be a bug
    assert "picture saved:" not in streams
    # nothing the lab's own code does is refused by the grader's kernel
    assert not [note for note in report.notes if note.startswith("refused")], report.notes


@pytest.mark.slow
def test_a_failed_check_shows_its_hint_first_and_only_the_student_s_frames(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        "from minirad import labs",
        "def forward_sweep(g):\n    return 1 / 0",
        "labs.check_forward_sweep(forward_sweep)",
        "labs.check_forward_sweep(lambda g: [[0.0, 0.0]])")]
    nb = nbformat.reads(json.dumps(nb), as_version=4)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute(env=_kernel_env())
    for cell, hint in ((nb.cells[2], "your function raised ZeroDivisionError"),
                       (nb.cells[3], "your Jacobian entry [0, 0] is 0")):
        (error,) = [o for o in cell.outputs if o["output_type"] == "error"]
        assert error["ename"] == "CheckFailed"
        lines = "\n".join(error["traceback"]).splitlines()
        assert hint in lines[0], lines
        assert not any("minirad/labs" in line or "site-packages" in line for line in lines)
    # the student's own frame: where the division by zero is
    assert "return 1 / 0" in "\n".join(nb.cells[2].outputs[-1]["traceback"])


@pytest.mark.slow
@pytest.mark.drawing
def test_every_picture_minirad_returns_shows_as_an_image(tmp_path):
    cells = [
        "from minirad import examples, plots, render, render_elimination\n"
        "from minirad.draw.render import draw_matplotlib\n"
        "from minirad.draw.render import elimination_strip\n"
        "import minirad\n"
        "print(minirad.__file__)\n"
        "g = examples.figure1()",
        "plots.plot_compare(g, n=50, rng=0)",
        "plots.plot_convergence(g, ks=(1, 2), n=50, rng=0)",
        "plots.plot_variance_vs_k(g, ks=(1, 2))",
        "plots.plot_variance_vs_depth(width=2, depths=range(1, 3))",
        "plots.plot_elimination_costs({'Figure 1': g}, ['forward', 'reverse'])",
        "draw_matplotlib(g)",
        "elimination_strip(g)",
        "render(g)",
        "render_elimination(g)",
        "g",
        "examples.figure3()",  # a graph of arrays shows as its drawing too
        # labs.show sends a Figure as an image even when pyplot's backend draws nothing inline
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "from minirad import labs\nfig, ax = plt.subplots()\nax.plot([0, 1])\n"
        "labs.show(fig, 'a pyplot figure')",
        "labs.show(render_elimination(g), 'elimination')",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nb = _execute(nb, tmp_path)
    printed = nb.cells[0].outputs[0]["text"].strip()
    assert Path(printed).resolve().parent == ROOT / "minirad", "the kernel imported another minirad"
    shown = {number: output for number, output in _displays(nb.cells)}
    for number, source in enumerate(cells[1:], 1):
        assert number in shown, f"{source} displayed nothing"
        kinds = set(shown[number]["data"])
        assert kinds & set(IMAGES), f"{source} displayed only {sorted(kinds)}"
    # the strip is one image, and the graph keeps its text repr beside its drawing
    assert "image/png" in shown[cells.index("render_elimination(g)")]["data"]
    assert shown[cells.index("g")]["data"]["text/plain"].startswith("LCG(7 vertices")
    assert shown[cells.index("examples.figure3()")]["data"]["text/plain"].startswith(
        "LCG(6 vertices")


@pytest.mark.drawing
def test_a_large_graph_shows_as_text_in_a_kernel(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from minirad import examples\nexamples.random_dag(3, 150, 2, rng=0)")]
    (output,) = [output for _, output in _displays(_execute(nb, tmp_path).cells)]
    assert set(output["data"]) == {"text/plain"}
    assert "not drawn: 155 vertices" in output["data"]["text/plain"]


# ------------------------------------------------------- what the README promises
def _extras() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_the_dev_extra_brings_the_notebook_tools_that_execute_the_labs():
    extras = _extras()
    labs = {re.split(r"[<>=!~ ]", requirement)[0] for requirement in extras["labs"]}
    assert {"nbclient", "ipykernel", "nbformat"} <= labs
    assert "minirad[labs]" in extras["dev"]  # dev includes labs
    install = (ROOT / "docs" / "install.md").read_text()  # the README's set-up, in full
    assert "the notebook tools that execute the labs" in install


def test_the_readme_states_python_version_venv_and_test_time():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up")[1].split("## ")[0]
    assert re.search(r"Python 3\.1\d or newer", setup)
    assert "python3 -m venv .venv" in setup
    assert re.search(r"suite takes about \w+ minutes", setup)
