"""The minirad command: each subcommand, and one-line errors."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from minirad import LCG, examples, jacobian
from minirad.cli import main


def test_demo_runs_figure1_end_to_end(capsys, tmp_path):
    assert main(["demo", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert examples.figure1().wengert() in out
    assert "4 paths from the inputs to y" in out
    # the five exact ways print the same Jacobian (checked in the library) with their costs
    for line in ("bauer: 8 multiplications", "reverse: 8 multiplications",
                 "eliminate: 6 multiplications, 2 additions, order v3 v4 v2 v5",
                 "eliminate: 5 multiplications, 2 additions, order v3 v4 v5 v2"):
        assert line in out
    for name in ("figure1_lcg.png", "figure1_paths.png", "figure1_sample.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")


def saved(tmp_path, g, name="g.json"):
    path = tmp_path / name
    g.to_json(path)
    return str(path)


def matrix_from(out, n_rows):
    """The first labelled matrix printed by the command, as floats."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(" "))
    return [[float(x) for x in line.split()[1:]] for line in lines[start + 1:start + 1 + n_rows]]


@pytest.mark.parametrize("options", [
    ["--method", "bauer"], ["--method", "forward"], ["--method", "reverse"],
    ["--method", "eliminate", "--order", "markowitz"],
    ["--method", "eliminate", "--order", "v3,v2,v4"],
])
def test_jacobian_prints_the_matrix_and_its_cost(options, tmp_path, capsys):
    g = examples.two_outputs()
    assert main(["jacobian", saved(tmp_path, g)] + options) == 0
    out = capsys.readouterr().out
    assert np.allclose(matrix_from(out, 2), jacobian(g), rtol=1e-14, atol=0)
    assert "multiplications" in out and "additions" in out


def test_jacobian_order_counts(tmp_path, capsys):
    path = saved(tmp_path, examples.two_outputs())
    main(["jacobian", path, "--method", "eliminate", "--order", "forward"])
    assert "eliminate: 8 multiplications" in capsys.readouterr().out
    main(["jacobian", path, "--method", "eliminate", "--order", "reverse"])
    assert "eliminate: 10 multiplications" in capsys.readouterr().out


def test_render_with_sample_and_paths(tmp_path, capsys):
    path = saved(tmp_path, examples.figure1())
    out_file = tmp_path / "g.svg"
    assert main(["render", path, "-o", str(out_file), "--sample", "1", "--seed", "3",
                 "--paths", "x2", "y"]) == 0
    svg = out_file.read_text()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg[:500]
    assert "the sample stores" in capsys.readouterr().out


def test_compare_prints_exact_and_mean_and_saves_heatmaps(tmp_path, capsys):
    g = examples.figure1()
    plot = tmp_path / "cmp.png"
    assert main(["compare", saved(tmp_path, g), "--k", "1", "--samples", "2000", "--seed", "1",
                 "-o", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "exact Jacobian:" in out and "mean of 2000 estimates:" in out and "max |z|" in out
    exact = matrix_from(out.split("exact Jacobian:")[1], 1)
    assert np.allclose(exact, jacobian(g), rtol=1e-14, atol=0)
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_lab_handout_and_solutions(tmp_path, capsys):
    tutorials = Path(__file__).resolve().parents[1] / "tutorials"
    assert main(["lab", "handout", str(tutorials), "-o", str(tmp_path / "h")]) == 0
    assert main(["lab", "solutions", str(tutorials), "-o", str(tmp_path / "s")]) == 0
    handouts = sorted(p.name for p in (tmp_path / "h").glob("*.ipynb"))
    assert handouts == sorted(p.name for p in (tmp_path / "s").glob("*.ipynb"))
    assert len(handouts) == len(list(tutorials.glob("lab*.py")))
    handout = (tmp_path / "h" / handouts[0]).read_text()
    assert "NotImplementedError" in handout and "BEGIN SOLUTION" not in handout


def test_trace_then_wengert(tmp_path, capsys, monkeypatch):
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        from minirad import ops
        def f(x, w):
            return ops.tanh(x[0] * w + x[1])
    """))
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "prog:f", "1,2", "0.5", "-o", "f.json"]) == 0
    g = LCG.from_json(tmp_path / "f.json")
    assert [g.name(v) for v in g.inputs] == ["x[0]", "x[1]", "w"]
    capsys.readouterr()
    assert main(["wengert", "f.json"]) == 0
    assert capsys.readouterr().out.strip() == g.wengert()
    assert main(["trace", "prog.py:f", "1,2", "0.5", "-o", "g.json"]) == 0


@pytest.mark.parametrize("argv, message", [
    (["wengert", "missing.json"], "no such file: missing.json"),
    (["trace", "nocolon", "1", "-o", "x.json"], "is not MODULE:FUNCTION"),
    (["trace", "no_such_module_xyz:f", "1", "-o", "x.json"], "cannot import module"),
    (["trace", "math:nothing", "1", "-o", "x.json"], "has no function 'nothing'"),
    (["trace", "math:sin", "abc", "-o", "x.json"], "is not a number"),
    (["compare", "missing.json"], "no such file"),
    (["lab", "handout", "nowhere", "-o", "out"], "no such file or folder: nowhere"),
])
def test_errors_are_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["jacobian", "{g}", "--method", "forward", "--order", "v3"], "--order applies only to"),
    (["jacobian", "{g}", "--method", "eliminate", "--order", "x0"], "is an input"),
    (["compare", "{g}", "--k", "0"], "k must be at least 1"),
    (["compare", "{g}", "--k", "two"], "is not a whole number of draws"),
    (["render", "{g}", "-o", "{tmp}/g.png", "--max-vertices", "3"], "more than max_vertices=3"),
    (["compare", "{g}", "-o", "{tmp}/out.txt"], "use a name ending in .png, .svg, .pdf"),
    (["render", "{g}", "-o", "{tmp}/missing/g.png"], "does not exist"),
    (["compare", "{g}", "--seed", "-1"], "non-negative integer"),
])
def test_bad_options_are_one_line_errors(argv, message, tmp_path, capsys):
    g = saved(tmp_path, examples.two_outputs())
    argv = [a.format(g=g, tmp=tmp_path) for a in argv]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_compare_refuses_a_bad_picture_name_before_sampling(tmp_path, capsys):
    g = saved(tmp_path, examples.two_outputs())
    assert main(["compare", g, "-o", str(tmp_path / "out.txt")]) == 1
    assert "drawing" not in capsys.readouterr().out  # nothing was computed first


def test_not_an_lcg_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    assert main(["wengert", str(bad)]) == 1
    assert "not an LCG file" in capsys.readouterr().err


def test_console_script_runs():
    result = subprocess.run([sys.executable, "-m", "minirad", "demo"], capture_output=True,
                            text=True, check=True)
    assert "Wengert list" in result.stdout
