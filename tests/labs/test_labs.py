"""The lab series: every lab runs (once per session, in-process: tests/oracles.py), prints
each exercise's success line and saves its pictures, its handout's stubs grade as "not
implemented", the checks accept the reference solutions and reject planted mistakes, and
the percent-format to notebook conversion handles its markers.

Labs are discovered by globbing tutorials/lab*.py, so new labs are covered
without editing this file.  The tests of one lab share an xdist worker (lab_group), so
that the lab runs once per suite; tests/test_notebooks.py grades it once in a kernel.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution, solved_lab, solved_output

from minirad import examples, labs
from minirad.exact.paths import count_paths as minirad_count_paths
from minirad.labs import notebook
from minirad.labs.exercise import exercises_of_lab
from minirad.labs.scoring import grade_in_process

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((ROOT / "tutorials").glob("lab*.py"))
LAB_IDS = [lab.stem for lab in LABS]


def lab_number(path: Path) -> int:
    return int(re.match(r"lab(\d+)", path.name).group(1))


# ------------------------------------------------ running the labs themselves
# the labs that draw graphs run again without the dot program (.ci/run)
DRAWN = re.compile(r"\b(render|render_elimination|elimination_strip|draw_matplotlib)\(")


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=[lab_group(lab.stem)] + [
    pytest.mark.drawing] * bool(DRAWN.search(lab.read_text(encoding="utf-8")))) for lab in LABS],
    ids=LAB_IDS)
def test_lab_runs_prints_each_success_line_and_saves_its_pictures(lab, tmp_path_factory):
    """The solutions as a script would run them (outside a kernel): no cell fails, every
    exercise's check prints its success line, every picture is saved as a PNG."""
    result = solved_lab(lab.stem, tmp_path_factory)
    assert result.ok, result.tracebacks[0] if result.tracebacks else result
    printed, folder = solved_output(lab.stem, tmp_path_factory)
    for label in notebook.exercises(lab):
        number = label.split(":")[0]  # "Exercise 2.1"
        assert f"{number} passed:" in printed, f"no success line for {label}"
    saved = re.findall(r"^picture saved: (.+)$", printed, flags=re.M)
    assert saved, "a lab shows at least one picture"
    for path in saved:
        path = Path(path) if os.path.isabs(path) else folder / path
        assert path.parent == folder / "pictures" and path.stat().st_size > 1000, path


@pytest.mark.slow
@pytest.mark.parametrize("lab", [pytest.param(lab, marks=lab_group(lab.stem)) for lab in LABS],
                         ids=LAB_IDS)
def test_each_stub_of_the_handout_grades_as_not_implemented(lab, tmp_path_factory):
    """The handout's exercise cells run over the solved notebook's variables: each stub
    replaces its solution, and the grader calls the exercise "not implemented"."""
    result = solved_lab(lab.stem, tmp_path_factory)
    assert result.ok, result
    namespace = dict(result.namespace)
    handout = notebook.to_notebook(lab, solutions=False)
    specs = exercises_of_lab(lab_number(lab))
    for cell in handout.cells:
        if cell.cell_type == "code" and "raise NotImplementedError(" in cell.source:
            try:
                exec(compile(cell.source, "<handout cell>", "exec"), namespace)
            except NotImplementedError as stub:   # a stub at the top of the cell: the
                # definitions it stands for (a class body, or 7.1's whole block) are missing
                names = re.findall(r"^(?:class|def) (\w+)", cell.source, flags=re.M)
                names += [name for spec in specs if spec.label == str(stub)
                          for name in spec.takes]
                for name in names:
                    namespace.pop(name, None)
    text = "\n".join(cell.source for cell in handout.cells)
    for spec in specs:
        assert f'NotImplementedError("{spec.label}")' in text
        if any(name not in namespace for name in spec.takes):
            continue   # the grader finds the name missing beside its stub: not implemented
        fns = tuple(namespace[name] for name in spec.takes)
        score = grade_in_process(spec, fns, spec.cases(None))
        assert (score.points, score.status) == (0, "not implemented"), (spec.number, score)
        assert score.message == f"{spec.label}: not implemented (the exercise's stub is " \
                                "still there)"


@pytest.mark.parametrize("lab", LABS, ids=LAB_IDS)
def test_handout_and_solutions_forms(lab):
    source = lab.read_text()
    handout = json.dumps(notebook.to_notebook(lab, solutions=False))
    solutions = json.dumps(notebook.to_notebook(lab, solutions=True))
    for text in (handout, solutions):
        assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    for label in notebook.exercises(lab):
        assert json.dumps(f'raise NotImplementedError("{label}")')[1:-1] in handout
    # the solutions keep every code line of the file except the markers
    code = [line for line in source.splitlines()
            if line.strip() and not line.startswith("#") and "SOLUTION" not in line]
    for line in code:
        assert json.dumps(line)[1:-1] in solutions, line


# ------------------------------------------------- checks: accept and reject
REFERENCES = [
    ("lab1_finite_differences", "central_difference", labs.check_central_difference),
    ("lab1_finite_differences", "directional_difference", labs.check_directional_difference),
    ("lab2_lcg", "forward_sweep", labs.check_forward_sweep),
    ("lab2_lcg", "reverse_sweep", labs.check_reverse_sweep),
    ("lab3_bauer", "count_paths", labs.check_count_paths),
]


@pytest.mark.slow
@pytest.mark.parametrize("stem, name, check",
                         [pytest.param(*r, marks=lab_group(r[0])) for r in REFERENCES],
                         ids=[r[1] for r in REFERENCES])
def test_check_accepts_the_reference_solution(stem, name, check, tmp_path_factory, capsys):
    solution = lab_solution(stem, name, tmp_path_factory)
    capsys.readouterr()  # what the notebook printed, if it ran just now
    check(solution)
    assert re.fullmatch(r"Exercise \d\.\d passed: .+\n", capsys.readouterr().out)


def test_central_difference_rejects_one_sided_and_misbracketed():
    expect_failure(labs.check_central_difference, lambda f, x, h: (f(x + h) - f(x)) / h,
                   "Exercise 1.1", "on sin at x=1.0", "forward difference")
    expect_failure(labs.check_central_difference,
                   lambda f, x, h: (f(x + h) - f(x - h)) / 2 * h, "write / (2 * h)")
    expect_failure(labs.check_central_difference, lambda f, x, h: "0.5", "on sin")


def test_directional_difference_rejects_forward_and_normalised():
    expect_failure(labs.check_directional_difference,
                   lambda f, x, d, h: (f(x + h * d) - f(x)) / h, "Exercise 1.2", "forward")
    expect_failure(labs.check_directional_difference,
                   lambda f, x, d, h: (f(x + h * d / np.linalg.norm(d))
                                       - f(x - h * d / np.linalg.norm(d))) / (2 * h),
                   "normalised delta")


def forward_overwrites(g):
    """Planted bug: assigns each incoming contribution instead of adding it."""
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for column, x in enumerate(g.inputs):
        tangent = np.zeros(g.n_vertices)
        tangent[x] = 1.0
        for u, v, partial in g.edges():
            tangent[v] = partial * tangent[u]
        jacobian[:, column] = tangent[list(g.outputs)]
    return jacobian


def forward_never_resets(g):
    """Planted bug: reuses the tangents of the previous input."""
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    tangent = np.zeros(g.n_vertices)
    for column, x in enumerate(g.inputs):
        tangent[x] = 1.0
        for u, v, partial in g.edges():
            tangent[v] += partial * tangent[u]
        jacobian[:, column] = tangent[list(g.outputs)]
    return jacobian


def reverse_ignoring_one_edge(g):
    """Planted bug: the last edge of the graph never passes its adjoint back."""
    edges = list(g.edges())[:-1]
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for row, y in enumerate(g.outputs):
        adjoint = np.zeros(g.n_vertices)
        adjoint[y] = 1.0
        for u, v, partial in reversed(edges):
            adjoint[u] += partial * adjoint[v]
        jacobian[row] = adjoint[list(g.inputs)]
    return jacobian


def test_forward_sweep_check_rejects_planted_bugs():
    expect_failure(labs.check_forward_sweep, forward_overwrites,
                   "Exercise 2.1 (forward sweep), on figure1(): your Jacobian entry [0, 0]")
    expect_failure(labs.check_forward_sweep, forward_never_resets, "your Jacobian entry")
    expect_failure(labs.check_forward_sweep, lambda g: forward_overwrites(g).T,
                   "returned shape (2, 1)", "transpose")
    expect_failure(labs.check_forward_sweep, lambda g: forward_overwrites(g).ravel(),
                   "shape (2,) but the Jacobian has shape (1, 2)")


def reverse_overwrites(g):
    """Planted bug: assigns each adjoint passed back instead of adding it."""
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for row, y in enumerate(g.outputs):
        adjoint = np.zeros(g.n_vertices)
        adjoint[y] = 1.0
        for v in reversed(range(g.n_vertices)):
            for u in g.predecessors(v):
                adjoint[u] = g.partial(u, v) * adjoint[v]
        jacobian[row] = adjoint[list(g.inputs)]
    return jacobian


def reverse_overwrites_pulling(g):
    """Planted bug: each vertex pulls from its successors, keeping only the last."""
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for row, y in enumerate(g.outputs):
        adjoint = np.zeros(g.n_vertices)
        adjoint[y] = 1.0
        for u in reversed(range(g.n_vertices)):
            for v in g.successors(u):
                adjoint[u] = g.partial(u, v) * adjoint[v]
        jacobian[row] = adjoint[list(g.inputs)]
    return jacobian


def forward_overwrites_pushing(g):
    """Planted bug: each vertex pushes its tangent to its successors with =."""
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for column, x in enumerate(g.inputs):
        tangent = np.zeros(g.n_vertices)
        tangent[x] = 1.0
        for u in range(g.n_vertices):
            for v in g.successors(u):
                tangent[v] = g.partial(u, v) * tangent[u]
        jacobian[:, column] = tangent[list(g.outputs)]
    return jacobian


def test_sweep_checks_name_the_overwrite_mistake():
    message = expect_failure(
        labs.check_forward_sweep, forward_overwrites,
        "Exercise 2.1 (forward sweep), on figure1(): your Jacobian entry [0, 0] is 0, "
        "expected 26.8754", "several incoming edges must ADD", "not overwrite them")
    assert "reverse_sweep" not in message and "forward_sweep(" not in message
    expect_failure(labs.check_forward_sweep, forward_overwrites_pushing,
                   "entry [0, 0] is 0, expected 26.8754", "must ADD")
    expect_failure(labs.check_reverse_sweep, reverse_overwrites,
                   "Exercise 2.2 (reverse sweep), on figure1(): your Jacobian entry [0, 0] is "
                   "13.4377, expected 26.8754", "several outgoing edges", "must ADD",
                   "not overwrite them")
    expect_failure(labs.check_reverse_sweep, reverse_overwrites_pulling, "must ADD")
    # other mistakes get no such hint
    for check, fn in ((labs.check_forward_sweep, forward_never_resets),
                      (labs.check_reverse_sweep, reverse_ignoring_one_edge)):
        assert "overwrite" not in expect_failure(check, fn, "your Jacobian entry")


def test_reverse_sweep_check_rejects_planted_bugs():
    expect_failure(labs.check_reverse_sweep, reverse_ignoring_one_edge,
                   "Exercise 2.2 (reverse sweep), on figure1()", "expected 26.8754")
    expect_failure(labs.check_reverse_sweep, lambda g: (reverse_ignoring_one_edge(g), 3),
                   "returned a tuple")


def test_sweep_check_reports_student_exceptions_with_the_graph():
    def crash_on_two_outputs(g):
        if len(g.outputs) > 1:
            raise KeyError("oops")
        return minirad_jacobian(g)

    def minirad_jacobian(g):  # a student's reverse sweep (minirad's own is out of reach)
        adjoint = np.zeros((g.n_vertices, len(g.outputs)))
        adjoint[list(g.outputs), range(len(g.outputs))] = 1.0
        for u, v, partial in reversed(list(g.edges())):
            adjoint[u] += partial * adjoint[v]
        return adjoint[list(g.inputs)].T

    message = expect_failure(labs.check_reverse_sweep, crash_on_two_outputs,
                             "on two_outputs(): your function raised KeyError")
    assert "reverse_sweep" not in message  # never show minirad's code


def test_checks_let_unsolved_stubs_through():
    def stub(g):
        raise NotImplementedError("Exercise 2.1: forward sweep")

    with pytest.raises(NotImplementedError, match="Exercise 2.1: forward sweep"):
        labs.check_forward_sweep(stub)


def counts_as(kind):
    """Dynamic programming with counts held in a numpy array of ``kind``."""
    def count(g):
        counts = np.zeros((g.n_vertices, len(g.inputs)), dtype=kind)
        for i, x in enumerate(g.inputs):
            counts[x, i] = 1
        for u, v, _ in g.edges():
            counts[v] += counts[u]
        return counts[list(g.outputs)]
    return count


def test_count_paths_check_rejects_off_by_one_floats_and_int64():
    exact = counts_as(object)  # Python ints: right, the student's way
    expect_failure(labs.check_count_paths, lambda g: exact(g) + 1,
                   "Exercise 3.1 (count paths), on figure1(): your count for entry [0, 0] is 3, "
                   "expected exactly 2")
    # floats and int64 agree on every small graph and fail on the 3^45 one
    expect_failure(labs.check_count_paths, counts_as(float), "on interleaved(3, 45)", "floats")
    expect_failure(labs.check_count_paths, counts_as(np.int64), "on interleaved(3, 45)",
                   "wrap around")
    expect_failure(labs.check_count_paths, lambda g: exact(g).T.tolist(),
                   "transpose")


def counts_overwritten(g):
    """Planted bug: a vertex's counts are replaced by each predecessor's, not added."""
    counts = [[0] * len(g.inputs) for _ in range(g.n_vertices)]
    for i, x in enumerate(g.inputs):
        counts[x][i] = 1
    for v in range(g.n_vertices):
        for u in g.predecessors(v):
            counts[v] = list(counts[u])
    return [counts[y] for y in g.outputs]


def test_count_paths_check_names_the_overwrite_mistake():
    message = expect_failure(labs.check_count_paths, counts_overwritten,
                             "Exercise 3.1 (count paths), on figure1(): your count for entry "
                             "[0, 0] is 0, expected exactly 2", "several incoming edges must ADD",
                             "not overwrite them")
    assert "wrap around" not in message and "floats" not in message
    # the same slip in a numpy int array is named as the slip, not as overflow
    def overwritten_in_numpy(g):
        counts = np.zeros((g.n_vertices, len(g.inputs)), dtype=np.int64)
        counts[list(g.inputs), range(len(g.inputs))] = 1
        for u, v, _ in g.edges():
            counts[v] = counts[u]
        return counts[list(g.outputs)]

    message = expect_failure(labs.check_count_paths, overwritten_in_numpy, "on figure1()",
                             "must ADD")
    assert "wrap around" not in message
    # an off-by-one on small counts held in lists blames neither overwriting nor overflow
    message = expect_failure(labs.check_count_paths,
                             lambda g: [[int(c) + 1 for c in row]
                                        for row in counts_as(object)(g).tolist()],
                             "is 3, expected exactly 2")
    assert "--" not in message


def test_count_paths_check_stops_enumeration(monkeypatch):
    def enumerate_paths(g):  # visits every path, depth first
        counts = [[0] * len(g.inputs) for _ in g.outputs]
        for i, x in enumerate(g.inputs):
            stack = [x]
            while stack:
                v = stack.pop()
                if v in g.outputs:
                    counts[g.outputs.index(v)][i] += 1
                stack.extend(g.successors(v))
        return counts

    from minirad.labs import lab03_bauer

    monkeypatch.setattr(lab03_bauer, "SECONDS", 1.0)
    message = expect_failure(labs.check_count_paths, enumerate_paths,
                             "took longer than 1 s", "dynamic programming")
    assert "random_dag(2, 60, 2, density=0.5, rng=4)" in message


def test_check_graphs_are_named_reproducibly():
    graphs = labs.check_graphs("sweeps")
    assert graphs["figure1()"].same_as(examples.figure1())
    assert graphs["random_dag(3, 10, 2, rng=0)"].same_as(examples.random_dag(3, 10, 2, rng=0))
    assert max(int(c) for g in labs.check_graphs("counts").values()
               for c in minirad_count_paths(g).flat) > 10 ** 20
    with pytest.raises(ValueError, match="unknown suite"):
        labs.check_graphs("nope")


# ------------------------------------------------------------------ pictures
@pytest.mark.drawing
def test_show_saves_figures_and_drawings(tmp_path, monkeypatch, capsys):
    import matplotlib.pyplot as plt

    from minirad.draw.render import render

    monkeypatch.setenv("MINIRAD_LAB_OUTPUT", str(tmp_path / "out"))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = labs.show(fig, "lab0 first/plot")
    assert Path(path) == tmp_path / "out" / "lab0_first_plot.png"
    assert Path(path).read_bytes().startswith(b"\x89PNG")
    assert not plt.fignum_exists(fig.number)  # closed, so Jupyter would not draw it twice
    drawing = labs.show(render(examples.lab()), "lab0_graph")
    assert Path(drawing).read_bytes().startswith(b"\x89PNG")
    assert capsys.readouterr().out.count("picture saved: ") == 2
    with pytest.raises(TypeError, match="graphviz drawing"):
        labs.show("not a picture", "x")


def test_show_displays_inline_in_a_kernel(tmp_path, monkeypatch):
    import sys
    import types

    from minirad.labs import checking

    # a stand-in for IPython.display, so the test runs whether or not IPython is installed
    shown = []
    display_module = types.ModuleType("IPython.display")
    display_module.display = shown.append
    ipython = types.ModuleType("IPython")
    ipython.display = display_module
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_module)
    monkeypatch.setattr(checking, "_in_kernel", lambda: True)
    monkeypatch.setenv("MINIRAD_LAB_OUTPUT", str(tmp_path))
    from minirad.draw.render import render

    drawing = render(examples.lab())
    assert labs.show(drawing, "inline") is None
    assert shown == [drawing] and not list(tmp_path.iterdir())


# --------------------------------------------------------- notebook format
LAB_TEXT = textwrap.dedent('''\
    # ---
    # jupyter:
    #   jupytext:
    #     formats: py:percent
    # ---

    # %% [markdown]
    # # Lab 0
    #
    # Some *prose*.

    # %%
    import math

    # %%
    def double(x):
        """Twice x."""
        # BEGIN SOLUTION Exercise 0.1: double
        y = 2 * x
        return y
        # END SOLUTION


    class Box:
        def get(self):
            # BEGIN SOLUTION Exercise 0.2: box
            return 1
            # END SOLUTION

    # %% [md]
    # ## Markdown, short tag

    # %% a titled code cell
    value = double(3)
    ''')


def write(tmp_path, text, name="lab0_demo.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_cells_markdown_and_header(tmp_path):
    cells = notebook.read_lab(write(tmp_path, LAB_TEXT)).cells
    assert [c.cell_type for c in cells] == ["markdown", "code", "code", "markdown", "code"]
    assert cells[0].source == "# Lab 0\n\nSome *prose*."
    assert cells[3].source == "## Markdown, short tag"
    assert cells[4].source == "value = double(3)"


def test_handout_stubs_keep_indentation_and_compile(tmp_path):
    nb = notebook.to_notebook(write(tmp_path, LAB_TEXT), solutions=False)
    code = "".join(nb["cells"][2]["source"])
    assert '    raise NotImplementedError("Exercise 0.1: double")' in code
    assert '\n        raise NotImplementedError("Exercise 0.2: box")' in code
    assert "y = 2 * x" not in code and "SOLUTION" not in code
    assert '"""Twice x."""' in code  # the docstring outside the block stays
    compile(code, "cell", "exec")
    namespace = {}
    exec(code, namespace)
    with pytest.raises(NotImplementedError, match="Exercise 0.1: double"):
        namespace["double"](1)


def test_solutions_drop_only_the_markers(tmp_path):
    nb = notebook.to_notebook(write(tmp_path, LAB_TEXT), solutions=True)
    code = "".join(nb["cells"][2]["source"])
    assert "SOLUTION" not in code
    assert "    y = 2 * x\n    return y\n" in code
    namespace = {}
    exec(code, namespace)
    assert namespace["double"](4) == 8 and namespace["Box"]().get() == 1


def test_notebook_structure_is_valid_nbformat(tmp_path):
    (path,) = notebook.write_notebooks(write(tmp_path, LAB_TEXT), tmp_path / "out")
    nb = json.loads(Path(path).read_text())
    assert (nb["nbformat"], nb["nbformat_minor"]) == (4, 4)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["metadata"]["minirad"] == {"source": "lab0_demo.py", "form": "handout"}
    for cell in nb["cells"]:
        assert isinstance(cell["source"], list)
        assert all(line.endswith("\n") for line in cell["source"][:-1])
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
    nbformat = pytest.importorskip("nbformat")
    nbformat.validate(nbformat.from_dict(nb))
    for lab in LABS:
        for solutions in (False, True):
            nbformat.validate(nbformat.from_dict(notebook.to_notebook(lab, solutions)))


MALFORMED = {
    "begin without end": ("# %%\nx = 1\n# BEGIN SOLUTION Exercise 9.1: a\ny = 2\n",
                          "line 3: BEGIN SOLUTION 'Exercise 9.1: a' has no '# END SOLUTION'"),
    "end without begin": ("# %%\nx = 1\n# END SOLUTION\n",
                          "line 3: END SOLUTION without a matching BEGIN"),
    "nested": ("# %%\n# BEGIN SOLUTION Exercise 9.1: a\n# BEGIN SOLUTION Exercise 9.2: b\n"
               "# END SOLUTION\n# END SOLUTION\n", "line 3: BEGIN SOLUTION inside"),
    "no label": ("# %%\n# BEGIN SOLUTION\nx = 1\n# END SOLUTION\n",
                 "line 2: BEGIN SOLUTION needs the exercise"),
    "split across cells": ("# %%\n# BEGIN SOLUTION Exercise 9.1: a\n\n# %%\n# END SOLUTION\n",
                           "line 2: BEGIN SOLUTION"),
    "in markdown": ("# %% [markdown]\n# text\n# BEGIN SOLUTION Exercise 9.1: a\n",
                    "line 3: solution markers belong in code cells"),
}


@pytest.mark.parametrize("text, message", MALFORMED.values(), ids=list(MALFORMED))
def test_malformed_markers_name_file_and_line(tmp_path, text, message):
    path = write(tmp_path, text, "lab9_bad.py")
    with pytest.raises(ValueError) as caught:
        notebook.to_notebook(path, solutions=False)
    assert str(caught.value).startswith(str(path)), caught.value
    assert message in str(caught.value)


def test_write_notebooks_writes_one_per_lab_or_nothing(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    write(source, LAB_TEXT, "lab0_demo.py")
    write(source, "# %%\nx = 1\n", "lab1_other.py")
    (source / "helper.py").write_text("x = 1\n")  # not a lab: ignored
    written = notebook.write_notebooks(source, tmp_path / "out")
    assert [Path(p).name for p in written] == ["lab0_demo.ipynb", "lab1_other.ipynb"]
    nb = json.loads(Path(written[0]).read_text())
    assert "NotImplementedError" in "".join(nb["cells"][2]["source"])
    single = notebook.write_notebooks(source / "lab1_other.py", tmp_path / "one",
                                      solutions=True)
    assert [Path(p).name for p in single] == ["lab1_other.ipynb"]

    write(source, "# %%\n# END SOLUTION\n", "lab2_broken.py")
    with pytest.raises(ValueError, match="lab2_broken.py, line 2"):
        notebook.write_notebooks(source, tmp_path / "never")
    assert not (tmp_path / "never").exists()  # a bad lab leaves nothing behind
    with pytest.raises(ValueError, match="no such file"):
        notebook.write_notebooks(tmp_path / "missing", tmp_path / "out")
    with pytest.raises(ValueError, match="no lab files"):
        notebook.write_notebooks(tmp_path / "out", tmp_path / "out2")


def test_run_notebook_reports_the_failing_cell_and_restores_state(tmp_path):
    (tmp_path / "data.txt").write_text("42")
    nb = {"cells": [
        {"cell_type": "markdown", "source": ["# title"]},
        {"cell_type": "code", "source": ["import os\n", "n = int(open('data.txt').read())\n",
                                         "backend = os.environ['MPLBACKEND']"]},
        {"cell_type": "code", "source": ["raise NotImplementedError('Exercise 0.1: x')"]},
        {"cell_type": "code", "source": ["m = n + 1"]},
        {"cell_type": "code", "source": ["1 / 0"]},
        {"cell_type": "code", "source": ["never = True"]},
    ]}
    path = tmp_path / "demo.ipynb"
    path.write_text(json.dumps(nb))
    cwd, backend = os.getcwd(), os.environ.get("MPLBACKEND")

    result = notebook.run_notebook(path)  # runs in the notebook's folder
    assert (result.cell, str(result.error), result.executed) == (2, "Exercise 0.1: x", 2)
    assert result.namespace["n"] == 42 and result.namespace["backend"] == "Agg"

    result = notebook.run_notebook(path, stop_at_not_implemented=False)
    assert [(cell, type(error)) for cell, error in result.errors] == [
        (2, NotImplementedError), (4, ZeroDivisionError)]
    assert result.namespace["m"] == 43 and "never" not in result.namespace
    assert "ZeroDivisionError" in result.tracebacks[-1]
    assert os.getcwd() == cwd and os.environ.get("MPLBACKEND") == backend
    with pytest.raises(ValueError, match="notebook dict or an .ipynb"):
        notebook.run_notebook(tmp_path / "lab.py")


def test_lab_cell_count_matches_markers():
    for lab in LABS:
        text = lab.read_text()
        markers = sum(1 for line in text.splitlines() if line.startswith("# %%"))
        assert len(notebook.read_lab(lab).cells) == markers, lab.name

