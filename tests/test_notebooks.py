"""minirad in its real notebook environment: a fresh Jupyter kernel, no ``%matplotlib inline``.

Every lab's solutions notebook is executed by nbclient in its own kernel; any
cell error fails, and so does a picture that reaches the notebook only as a
text repr (``<Figure size 640x480 with 1 Axes>``, ``[<minirad.draw.render.Drawing
at 0x...>]``), which is what a student would see.  Each value minirad returns
as a picture is also checked on its own in one kernel.  Each lab's handout is
executed too, up to its first stub. The ten labs take a few minutes
together on one core.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from minirad.labs import notebook

ROOT = Path(__file__).resolve().parents[1]
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


def _displays(nb):
    """(cell number, output) for every displayed value of the executed notebook."""
    for number, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output["output_type"] in ("display_data", "execute_result"):
                yield number, output


def _text_only_pictures(nb) -> list[str]:
    return [f"cell {number}: {output['data']['text/plain'][:80]!r}"
            for number, output in _displays(nb)
            if not any(kind in output["data"] for kind in IMAGES)
            and PICTURE_AS_TEXT.search(output["data"].get("text/plain", ""))]


@pytest.mark.parametrize("lab", LABS, ids=[lab.stem for lab in LABS])
def test_lab_solutions_execute_in_a_kernel_with_inline_pictures(lab, tmp_path):
    nb = _execute(notebook.to_notebook(lab, solutions=True), tmp_path)
    assert not _text_only_pictures(nb), _text_only_pictures(nb)
    images = [output for _, output in _displays(nb) if any(k in output["data"] for k in IMAGES)]
    assert images, f"{lab.name} showed no picture inline"
    streams = "".join(output.get("text", "") for cell in nb.cells
                      for output in cell.get("outputs", []) if output["output_type"] == "stream")
    # labs.show displays inline in a kernel; saving to a file instead would be a bug
    assert "picture saved:" not in streams
    assert not list(tmp_path.rglob("*.png")), "a picture was written to disk instead of shown"


@pytest.mark.parametrize("lab", LABS, ids=[lab.stem for lab in LABS])
def test_handout_executes_in_a_kernel_up_to_its_first_stub(lab, tmp_path):
    """What a student meets: every cell before the first exercise runs, its pictures show
    inline, and the first stub stops the notebook with that exercise's name."""
    label = notebook.exercises(lab)[0]
    nb = nbformat.reads(json.dumps(notebook.to_notebook(lab, solutions=False)), as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as caught:
        client.execute(env=_kernel_env())
    assert caught.value.ename == "NotImplementedError", caught.value
    assert caught.value.evalue == label
    stopped = [number for number, cell in enumerate(nb.cells)
               if any(o["output_type"] == "error" for o in cell.get("outputs", []))]
    assert len(stopped) == 1, stopped
    stub = next(number for number, cell in enumerate(nb.cells)
                if f'raise NotImplementedError("{label}")' in cell.source)
    assert stub <= stopped[0]  # the stub's own cell, or the check cell that calls it
    assert not any(cell.get("outputs") for cell in nb.cells[stopped[0] + 1:])
    assert not _text_only_pictures(nb), _text_only_pictures(nb)
    assert not list(tmp_path.rglob("*.png")), "a picture was written to disk instead of shown"


def test_every_picture_minirad_returns_shows_as_an_image(tmp_path):
    cells = [
        "from minirad import examples, plots, render, render_elimination, draw_matplotlib\n"
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
    shown = {number: output for number, output in _displays(nb)}
    for number, source in enumerate(cells[1:], 1):
        assert number in shown, f"{source} displayed nothing"
        kinds = set(shown[number]["data"])
        assert kinds & set(IMAGES), f"{source} displayed only {sorted(kinds)}"
    # the strip is one image, and the graph keeps its text repr beside its drawing
    assert "image/png" in shown[cells.index("render_elimination(g)")]["data"]
    assert shown[cells.index("g")]["data"]["text/plain"].startswith("LCG(7 vertices")


def test_a_large_graph_shows_as_text_in_a_kernel(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from minirad import examples\nexamples.random_dag(3, 150, 2, rng=0)")]
    (output,) = [output for _, output in _displays(_execute(nb, tmp_path))]
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
    readme = (ROOT / "README.md").read_text()
    assert "notebook tools that execute the labs" in readme


def test_the_readme_states_python_version_venv_and_test_time():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up")[1].split("## ")[0]
    assert re.search(r"Python 3\.1\d or newer", setup)
    assert "python3 -m venv .venv" in setup
    assert re.search(r"suite takes about \w+ minutes", setup)
