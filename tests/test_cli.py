"""The minirad command: each subcommand, and one-line errors."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from minirad import LCG, examples, jacobian, load_graph, save_graph
from minirad.cli import main
from minirad.draw.render import has_dot


@pytest.mark.drawing
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
    return save_graph(g, tmp_path / name)


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


def test_jacobian_by_edges_and_faces(tmp_path, capsys):
    """--on reaches the one elimination engine: edge_beats_vertex's optima are 7
    (vertices), 6 (edges), 6 (faces); every way prints its Jacobian and its steps."""
    g = examples.edge_beats_vertex()
    path = saved(tmp_path, g)
    for on, count, step in (("vertices", 7, " a "), ("edges", 6, "a->b(back)"),
                            ("faces", 6, "=>")):
        assert main(["jacobian", path, "--method", "eliminate", "--order", "optimal",
                     "--on", on]) == 0
        out = capsys.readouterr().out
        assert np.allclose(matrix_from(out, 1), jacobian(g), rtol=1e-14, atol=0)
        assert f"eliminate: {count} multiplications" in out and step in out + " ", out
    assert main(["jacobian", path, "--method", "eliminate", "--order", "a,b", "--on",
                 "faces"]) == 1
    assert "a list of names is a vertex order" in capsys.readouterr().err
    assert main(["jacobian", path, "--method", "forward", "--on", "edges"]) == 1


@pytest.mark.drawing
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
                 "--precision", "17", "-o", str(plot)]) == 0
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
    # a vector is a numpy array, so the graph has array vertices: an .npz archive
    assert main(["trace", "prog:f", "1,2", "0.5", "-o", "f.json"]) == 1
    assert "save it as an .npz archive" in capsys.readouterr().err
    assert main(["trace", "prog:f", "1,2", "0.5", "-o", "f.npz"]) == 0
    g = load_graph(tmp_path / "f.npz")
    assert [(g.name(v), g.shape(v)) for v in g.inputs] == [("x", (2,)), ("w", ())]
    capsys.readouterr()
    assert main(["wengert", "f.npz"]) == 0
    assert capsys.readouterr().out.strip() == g.wengert()
    assert main(["trace", "prog.py:f", "1,2", "0.5", "-o", "g.npz"]) == 0


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
    (["jacobian", "{g}", "--method", "forward", "--order", "v3"],
     "--order and --on apply only to"),
    (["jacobian", "{g}", "--method", "eliminate", "--order", "x0"], "is an input"),
    (["compare", "{g}", "--k", "0"], "k must be at least 1"),
    (["compare", "{g}", "--k", "two"], "is not a whole number of draws"),
    (["render", "{g}", "-o", "{tmp}/g.png", "--max-vertices", "3"], "more than --max-vertices 3"),
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
    assert "is not a valid LCG file" in capsys.readouterr().err


def test_console_script_runs():
    result = subprocess.run([sys.executable, "-m", "minirad", "demo"], capture_output=True,
                            text=True, check=True)
    assert "Wengert list" in result.stdout


# ------------------------------------------------------------ issue 10: hardening
USER_PROGRAM = textwrap.dedent("""
    from minirad import ops


    def f(x):
        n = x.shape[0]               # numpy code: x must be an array
        return ops.sin(x[0]) * n + x[1]


    def bad(x, w):
        return helper(x) * w


    def helper(x):
        return x * undefined_name
""")


def test_a_vector_argument_is_a_numpy_array(tmp_path, monkeypatch):
    (tmp_path / "prog.py").write_text(USER_PROGRAM)
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "prog.py:f", "1,2,3", "-o", "f.npz"]) == 0
    g = load_graph(tmp_path / "f.npz")
    # hand derivation: d/dx0 = 3 cos(1), d/dx1 = 1, d/dx2 = 0 (x2 enters only through n)
    assert np.allclose(jacobian(g), [[3 * np.cos(1.0), 1.0, 0.0]], rtol=1e-15, atol=0)


def test_an_error_in_user_code_is_one_line_and_their_frame(tmp_path, monkeypatch, capsys):
    (tmp_path / "prog.py").write_text(USER_PROGRAM)
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "prog.py:bad", "1", "2", "-o", "f.json"]) == 1
    err = capsys.readouterr().err
    first, second = err.rstrip("\n").split("\n")
    assert first == ("minirad trace: error in prog.py:bad: NameError: name 'undefined_name' "
                     "is not defined")
    assert second == "  at prog.py:15 in helper: return x * undefined_name"
    assert "Traceback" not in err and "minirad/" not in err
    assert not (tmp_path / "f.json").exists()
    with pytest.raises(NameError):  # --debug: the real exception, with its traceback
        main(["--debug", "trace", "prog.py:bad", "1", "2", "-o", "f.json"])


def test_help_shows_each_default_once_and_every_command_is_described(capsys):
    from minirad import __version__
    from minirad.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert set(commands) == {"demo", "wengert", "trace", "jacobian", "render", "compare",
                             "figures", "lab", "study", "explore"}
    for name, sub in commands.items():
        assert sub.description and len(sub.description) > 40, name
        text = sub.format_help()
        assert "(default: None)" not in text and "(default: False)" not in text, name
        assert not re.search(r"\(default \w+\)", text), name  # the old hand-written form
        assert all(text.count(f"(default: {d}") <= 1 for d in ("0)", "200)", "1000)")), name
    assert "(default: 200)" in commands["render"].format_help()
    assert "(default: 0)" in commands["render"].format_help()  # --seed
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"minirad {__version__}"


def test_compare_checks_its_options_before_announcing_work(tmp_path, capsys):
    g = saved(tmp_path, examples.two_outputs())
    for bad in (["--k", "0"], ["--samples", "0"], ["--precision", "0"]):
        assert main(["compare", g, *bad]) == 1
        captured = capsys.readouterr()
        assert "drawing" not in captured.out and captured.err.count("\n") == 1


def test_compare_with_one_sample_explains_instead_of_nan(tmp_path, capsys):
    assert main(["compare", saved(tmp_path, examples.figure1()), "--samples", "1"]) == 0
    out = capsys.readouterr().out
    assert "nan" not in out.lower()
    assert "standard error of the mean: undefined with one estimate" in out
    assert "drawing 1 Algorithm 1 estimate (" in out


def test_compare_precision_worst_entry_and_noise_warning(tmp_path, capsys):
    """Figure 1 at 10,000 samples: dy/dx1's estimate is exact (variance 0), so the
    worst entry is dy/dx2, whose mean has a standard error of 23% of it; the
    norm, dominated by dy/dx1, hides that."""
    from minirad.randomized.experiments import compare
    from minirad.randomized.sampling import path_sampling_variance

    g = examples.figure1()
    assert main(["compare", saved(tmp_path, g), "--samples", "10000", "--precision", "3"]) == 0
    captured = capsys.readouterr()
    oracle = compare(g, k=1, n=10000, rng=0)  # the library, same seed
    mean = matrix_from(captured.out.split("mean of 10000 estimates:")[1], 1)
    assert np.allclose(mean, oracle.mean, rtol=5e-3)  # 3 significant digits
    cells = captured.out.split("mean of 10000 estimates:")[1].splitlines()[2].split()[1:]
    assert all(len(x.replace(".", "").replace("-", "").lstrip("0")) <= 3 for x in cells)
    off = abs(oracle.mean[0, 1] - oracle.exact[0, 1]) / abs(oracle.exact[0, 1])
    # within 5 standard errors of the exact variance (false-failure rate 5.7e-7)
    standard_error = np.sqrt(path_sampling_variance(g, 1)[0, 1] / 10000)
    assert 0 < off <= 5 * standard_error / abs(oracle.exact[0, 1])
    assert f"worst entry dy/dx2: mean {oracle.mean[0, 1]:.3g} against exact " \
           f"{oracle.exact[0, 1]:.3g}, off by {100 * off:.3g}%" in captured.out
    # one estimate of dy/dx2 has standard deviation sqrt(165.6) = 12.9, 22.6 times 0.569
    assert "warning: the estimator's standard deviation is 22.6 times |dy/dx2|" in captured.err


def test_compare_shows_progress_on_long_runs(tmp_path, capsys, monkeypatch):
    import minirad.cli

    monkeypatch.setattr(minirad.cli, "PROGRESS_AFTER", 0.0)  # every run counts as long
    g = examples.interleaved(8, 60)  # big enough for several memory-bounded chunks
    assert main(["compare", saved(tmp_path, g), "--samples", "3000", "--k", "0.5"]) == 0
    err = capsys.readouterr().err
    assert "estimates drawn: 3000 of 3000" in err
    assert re.search(r"estimates drawn: \d+ of 3000", err.split("\n")[0])


@pytest.mark.drawing
@pytest.mark.skipif(not has_dot(), reason="bounds the graphviz dot program, which is not "
                                           "installed")
def test_render_refusals_name_the_flags_and_dot_is_bounded(tmp_path, capsys):
    big = saved(tmp_path, examples.interleaved(4, 100))  # 402 vertices
    assert main(["render", big, "-o", str(tmp_path / "g.png")]) == 1
    assert "more than --max-vertices 200" in capsys.readouterr().err
    out = tmp_path / "g.svg"
    assert main(["render", big, "-o", str(out), "--max-vertices", "1000",
                 "--timeout", "0.001"]) == 1
    err = capsys.readouterr().err
    assert "may take a while (stopped after --timeout 0.001 s)" in err
    assert "did not finish drawing 402 vertices in 0.001 s, so nothing was written" in err
    assert not out.exists()


def test_a_long_order_is_truncated_with_a_count(tmp_path, capsys):
    chain = LCG.from_edges([("x", "v0", 2.0)] + [(f"v{i}", f"v{i + 1}", 1.0) for i in range(29)]
                           + [("v29", "y", 1.0)], inputs=["x"], outputs=["y"])
    assert main(["jacobian", saved(tmp_path, chain), "--method", "eliminate",
                 "--order", "forward"]) == 0
    out = capsys.readouterr().out
    assert "order v0 v1 v2 v3 v4 v5 v6 v7 ... v27 v28 v29 (19 more not shown; 30 steps " \
           "in all)" in out


@pytest.mark.drawing
def test_missing_dot_warning_is_one_clean_line(tmp_path, capsys, monkeypatch):
    import minirad.draw.render

    monkeypatch.setattr(minirad.draw.render, "has_dot", lambda: False)
    monkeypatch.setattr(minirad.draw.render, "_warned_missing_dot", False)
    assert main(["render", saved(tmp_path, examples.lab()), "-o", str(tmp_path / "g.png")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("minirad render: warning: the graphviz 'dot' program was not found")
    assert "warnings.warn" not in err and ".py:" not in err
    # issue 39: it named a Python attribute (.source); a command-line user saves a .dot file
    assert ".source" not in err and "saving as .dot still writes the DOT text" in err


@pytest.mark.drawing
def test_render_sample_has_the_galleries_title(tmp_path, capsys):
    g = examples.figure1()
    out = tmp_path / "s.dot"
    assert main(["render", saved(tmp_path, g), "-o", str(out), "--sample", "1"]) == 0
    source = out.read_text()
    # seed 0 keeps x2 -> v4 and skips v3: estimate 13.44 for dy/dx2 (the gallery's figure)
    assert "One Algorithm 1 sample, k=1, seed 0: 5 of 8 edges, 6 of 7 vertices stored" in source
    assert "estimate (dy/dx1, dy/dx2) = (26.88, 13.44); exact = (26.88, 0.569)" in source


def test_bauer_on_a_deep_graph_is_a_readable_one_line_refusal(tmp_path, capsys):
    """2**15000 paths (4516 digits, past Python's int-to-str limit of 4300)."""
    g = examples.interleaved(2, 14999)
    assert main(["jacobian", saved(tmp_path, g), "--method", "bauer"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "integer string conversion" not in err
    assert re.search(r"has ~\d\.\de4515 input-to-output paths", err) and "reverse" in err


# ------------------------------------------------------------ graphs of arrays
@pytest.mark.drawing
def test_a_saved_graph_of_arrays_works_with_every_command(tmp_path, capsys):
    """wengert, jacobian and render read an .npz archive (they used to say it "is not
    UTF-8 text"); the Jacobian's blocks are printed in the shapes of their inputs."""
    g = examples.figure3()
    path = saved(tmp_path, g, "g.npz")
    assert main(["wengert", path]) == 0
    assert capsys.readouterr().out.strip() == g.wengert().strip()
    assert main(["jacobian", path, "--method", "forward"]) == 0
    out = capsys.readouterr().out
    assert "dy/dW1 (4 × 5):" in out and "dy/dW2 (5 × 2):" in out
    # the printed gradient, read back, against the reverse sweep of the library
    numbers = [float(x) for x in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", out)]
    np.testing.assert_allclose(numbers, jacobian(g).ravel(), rtol=1e-15)
    picture = tmp_path / "g.svg"
    assert main(["render", path, "-o", str(picture), "--paths", "W1", "y"]) == 0
    assert picture.read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
    dot_text = tmp_path / "g.dot"
    assert main(["render", path, "-o", str(dot_text), "--ops"]) == 0
    assert "h1 ∈ R^(3×5)\\nX @ W1" in dot_text.read_text(encoding="utf-8")


def test_jacobian_of_a_graph_of_arrays_reports_its_operation_counts(tmp_path, capsys):
    """y = sum(tanh(W @ x)), W 2 x 3, x of 3, counted by hand in flops: the edges
    W -> W@x and x -> W@x cost 6 each per seed, tanh's diagonal 2, the sum 2.
    reverse: one seed (y), every edge once: 6 + 6 + 2 + 2 = 16;
    forward: 6 seeds of W through 6 + 2 + 2, 3 seeds of x through 6 + 2 + 2: 90."""
    from minirad import trace

    g = trace(lambda W, x: np.tanh(W @ x).sum(), np.full((2, 3), 0.1), np.ones(3))
    path = saved(tmp_path, g, "g.npz")
    for method, count in (("reverse", 16), ("forward", 90)):
        assert main(["jacobian", path, "--method", method]) == 0
        out = capsys.readouterr().out
        assert out.splitlines()[-1] == f"{method}: {count} multiplications, 0 additions"
        assert "dy/dW (2 × 3):" in out
    assert main(["jacobian", path, "--method", "eliminate", "--order", "v3,v2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith(", order v3 v2")


# ------------------------------------------- issue 26: sizes, the process, honest reports
@pytest.fixture
def one_gib(monkeypatch):
    """Declare 1 GiB of free memory, so that what is refused is the same on every machine."""
    import minirad._arguments

    monkeypatch.setattr(minirad._arguments, "memory_available", lambda: 2**30)


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    return captured.err


def test_counts_too_large_for_memory_are_refused_before_any_work(tmp_path, capsys, one_gib):
    path = saved(tmp_path, examples.figure1())  # 1 output, 2 inputs; 6 vertices draw
    # compare keeps 4 arrays of 8-byte estimates: 64 bytes each, so 2**30 / 64 fit
    assert main(["compare", path, "--samples", "100000000000"]) == 1
    err = one_line_error(capsys)
    assert f"would need {10**11 * 64 / 2**40:.3g} TiB of memory, more than the 1 GiB " \
           f"available; at most {2**30 // 64:,} fit" in err
    assert main(["compare", path, "--k", "1" + "0" * 30]) == 1
    assert "cannot be counted" in one_line_error(capsys)
    assert main(["compare", path, "--k", "1000000000000", "--samples", "3"]) == 1
    assert "(up to 6,000,000,000,000 draws) would need" in one_line_error(capsys)
    assert main(["render", path, "-o", str(tmp_path / "g.dot"), "--sample", "10" + "0" * 11]) == 1
    assert "(1,000,000,000,000 draws at one vertex) would need" in one_line_error(capsys)
    folder = tmp_path / "study"
    assert main(["study", "pde", "--steps", "1000000000", "-o", str(folder)]) == 1
    # reverse mode keeps the 961 unknowns of every step: 10**9 * 961 * 8 bytes
    assert f"would need {10**9 * 961 * 8 / 2**40:.3g} TiB" in one_line_error(capsys)
    assert not folder.exists()


def test_the_library_checks_n_against_memory_at_the_boundary(monkeypatch):
    import minirad._arguments
    from minirad.randomized.experiments import compare
    from minirad.randomized.sampling import sampled_jacobians

    g = examples.figure1()  # 16 bytes per estimate (two float64 entries)
    monkeypatch.setattr(minirad._arguments, "memory_available", lambda: 16 * 1000)
    monkeypatch.setattr(minirad._arguments, "CHECKED_FROM", 0)  # check even a few KiB
    assert sampled_jacobians(g, 1, 1000, rng=0).shape == (1000, 1, 2)
    with pytest.raises(ValueError, match="1,001 estimates of a 1 x 2 Jacobian would need "
                                         "15.6 KiB .* at most 1,000 fit"):
        sampled_jacobians(g, 1, 1001, rng=0)
    assert compare(g, k=1, n=250, rng=0).n == 250  # four copies of 250 estimates
    with pytest.raises(ValueError, match="at most 250 fit"):
        compare(g, k=1, n=251, rng=0)


def test_an_interrupt_while_starting_exits_quietly_with_130(capsys, monkeypatch):
    import runpy

    import minirad.cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(minirad.cli, "build_parser", interrupted)
    assert main(["demo"]) == 130
    assert capsys.readouterr().err == ""

    class InterruptTheImport:  # Ctrl-C while `python -m minirad` imports the command
        def find_spec(self, name, path=None, target=None):
            if name == "minirad.cli":
                raise KeyboardInterrupt

    monkeypatch.delitem(sys.modules, "minirad.cli")
    monkeypatch.setattr(sys, "meta_path", [InterruptTheImport(), *sys.meta_path])
    with pytest.raises(SystemExit) as stop:
        runpy.run_module("minirad", run_name="__main__")
    assert stop.value.code == 130 and capsys.readouterr().err == ""


def test_the_command_s_launcher_exits_quietly_when_interrupted_while_minirad_loads():
    # a fresh interpreter whose import of minirad's graph module is "interrupted", as a
    # Ctrl-C in the second the package takes to load would be; the console script
    # `minirad` runs minirad_command.main
    program = ("import sys\n"
               "class Interrupt:\n"
               "    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'minirad.graph.lcg':\n"
               "            raise KeyboardInterrupt\n"
               "sys.meta_path.insert(0, Interrupt())\n"
               "import minirad_command\n"
               "sys.argv = ['minirad', 'demo']\n"
               "sys.exit(minirad_command.main())\n")
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, timeout=120)
    assert (run.returncode, run.stderr) == (130, "")


def test_an_interrupt_during_a_run_exits_quietly_with_130(tmp_path):
    import signal
    import time

    path = saved(tmp_path, examples.interleaved(8, 60))  # about 75 s for 10**6 estimates
    run = subprocess.Popen([sys.executable, "-m", "minirad", "compare", path, "--k", "0.5",
                            "--samples", "1000000"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, cwd=Path(__file__).parent.parent,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert run.stdout.readline().startswith(b"drawing 1000000")
        time.sleep(0.3)
        run.send_signal(signal.SIGINT)
        _, err = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130 and b"Traceback" not in err


def test_an_exception_whose_str_raises_is_still_one_message(tmp_path, capsys):
    module = tmp_path / "broken.py"
    module.write_text("class Odd(Exception):\n    def __str__(self):\n"
                      "        raise RuntimeError('no message')\n\n\n"
                      "def f(x):\n    raise Odd()\n")
    assert main(["trace", f"{module}:f", "1.0", "-o", str(tmp_path / "g.json")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "error in" in err and "Odd: (its message cannot be shown: its __str__ raised " \
                                 "RuntimeError)" in err
    assert err.splitlines()[1].strip().startswith("at ") and "raise Odd()" in err


def test_write_errors_name_the_file_asked_for(tmp_path, capsys):
    module = tmp_path / "square.py"
    module.write_text("def f(x):\n    return x * x\n")
    folder = tmp_path / "adir.json"
    folder.mkdir()
    assert main(["trace", f"{module}:f", "2.0", "-o", str(folder)]) == 1
    err = one_line_error(capsys)
    assert f"Is a directory: '{folder}'" in err and ".minirad-" not in err
    picture = tmp_path / "pic.svg"
    picture.mkdir()
    assert main(["render", saved(tmp_path, examples.lab()), "-o", str(picture)]) == 1
    err = one_line_error(capsys)
    assert f"'{picture}'" in err and ".minirad-" not in err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".minirad-")]


def test_argument_errors_are_one_line_with_status_1(tmp_path, capsys):
    path = saved(tmp_path, examples.figure1())
    for argv, words in ((["bogus"], "invalid choice: 'bogus'"),
                        (["compare"], "the following arguments are required: file"),
                        (["compare", path, "--samples", "x"], "invalid int value: 'x'"),
                        (["render", path, "-o", str(tmp_path / "g.svg"), "--timeout", "nan"],
                         "--timeout must be a positive number of seconds, not nan"),
                        (["render", path, "-o", str(tmp_path / "g.svg"), "--timeout", "inf"],
                         "--timeout must be a positive number of seconds, not inf"),
                        (["compare", path, "--seed", "-1"], "seed must be a non-negative"),
                        (["wengert", str(tmp_path)], "is not a file")):
        assert main(argv) == 1, argv
        captured = capsys.readouterr()
        assert captured.err.count("\n") == 1 and words in captured.err, captured.err
        assert "drawing" not in captured.out


def test_compare_prints_a_zero_standard_error_where_the_exact_variance_is_zero(tmp_path,
                                                                                capsys):
    """dy/dx1 of Figure 1: both of its paths carry a * a * c, so every estimate is the
    exact value and the spread of the estimates is rounding (about 1e-14): shown as 0."""
    from minirad.randomized.experiments import compare
    from minirad.randomized.sampling import path_sampling_variance

    g = examples.figure1()
    assert path_sampling_variance(g, 1)[0, 0] == 0 and path_sampling_variance(g, 1)[0, 1] > 0
    assert main(["compare", saved(tmp_path, g), "--samples", "1000", "--precision", "17"]) == 0
    out = capsys.readouterr().out
    printed = matrix_from(out.split("standard error of the mean:")[1], 1)[0]
    oracle = compare(g, k=1, n=1000, rng=0)
    assert oracle.stderr[0, 0] != 0  # what was printed before: rounding
    assert printed[0] == 0.0 and printed[1] == pytest.approx(oracle.stderr[0, 1], rel=1e-15)


def test_writing_dot_text_warns_of_no_missing_dot(tmp_path, capsys, monkeypatch):
    import minirad.draw.render

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(minirad.draw.render, "_warned_missing_dot", False)
    out = tmp_path / "g.dot"
    assert main(["render", saved(tmp_path, examples.figure1()), "-o", str(out)]) == 0
    assert capsys.readouterr().err == ""
    assert out.read_text().startswith("digraph lcg {")


# ----------------------------------------------------------------- issue 39
@pytest.mark.drawing
def test_compare_of_a_graph_of_arrays_saves_its_heatmaps(tmp_path, capsys):
    """Issue 39: `compare LAYER.npz -o x.png` printed its numbers, then failed ("input_names
    has 2 names for 30 entries"). Every entry of figure3's chain has exact variance 0
    (k=1 keeps each vertex's only edge), so no z-score is printed: it would be rounding
    divided by rounding."""
    path = saved(tmp_path, examples.figure3(), "layer.npz")
    picture = tmp_path / "cmp.png"
    assert main(["compare", path, "--samples", "20", "-o", str(picture)]) == 0
    out = capsys.readouterr().out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {picture}" in out
    assert "max |z|" not in out
    assert "no z-score: no entry's estimate can vary (the exact variance is 0 for all 30)" in out


def test_compare_prints_z_only_over_the_entries_that_vary(tmp_path, capsys):
    """Figure 1: dy/dx1 has exact variance 0 (both paths carry a * a * c), dy/dx2 does not.
    The printed max |z| is dy/dx2's own, (mean - exact) / stderr from the library (the
    oracle), and says the other entry is left out."""
    from minirad.randomized.experiments import compare

    g = examples.figure1()
    assert main(["compare", saved(tmp_path, g), "--samples", "500", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    oracle = compare(g, k=1, n=500, rng=3)
    z = (oracle.mean[0, 1] - oracle.exact[0, 1]) / oracle.stderr[0, 1]
    assert (f"max |z| = {abs(z):.2f} (mean minus exact, in standard errors; over the 1 entry "
            f"that varies, not the 1 of exact variance 0)") in out


@pytest.mark.parametrize("flag", ["--notebook-seconds", "--cell-seconds", "--exercise-seconds"])
@pytest.mark.parametrize("seconds", ["-1", "0", "nan", "inf", "1e300"])
def test_lab_grade_refuses_time_limits_no_grading_can_use(tmp_path, capsys, flag, seconds):
    """Issue 39: -1 or 0 marked every solution "timed out", inf ended in an OverflowError
    traceback. Refused in one line before any kernel starts (no output folder)."""
    submission = tmp_path / "lab1_x.ipynb"
    submission.write_text("{}")
    out = tmp_path / "grades"
    assert main(["lab", "grade", str(submission), "-o", str(out), flag, seconds]) == 1
    err = one_line_error(capsys)
    assert f"argument {flag}: a time limit must be a positive, finite number of seconds" in err
    assert not out.exists()


@pytest.mark.parametrize("argv, words", [
    (["--iterations", "1000000000000"], "1000000000000 iterations of 40961 steps would take "
                                         "about 1.9e+08 days"),
    (["--steps", "100000", "--iterations", "100000"], "pass --max-days 47 to run it anyway"),
    (["--paper-figures", "--steps", "100000000000"], "--steps 100000000000 would take about"),
    (["--max-days", "nan"], "--max-days must be a positive number of days"),
    (["--max-days", "inf", "--iterations", "1000000000000"], "--max-days must be a positive"),
    (["--max-days", "-1"], "--max-days must be a positive number of days"),
])
def test_study_pde_refuses_a_run_it_cannot_finish(tmp_path, capsys, monkeypatch, argv, words):
    """Issue 39: --iterations 10**12 was accepted and ran indefinitely. The estimate errs
    short (SECONDS_PER_STEP a step and member, the oracle below), so what is refused cannot
    finish in --max-days; nothing starts (the study is a stand-in that records a call)."""
    from minirad.studies.pde import study as pde_figures

    ran = []
    monkeypatch.setattr(pde_figures, "run_study", lambda *a, **k: ran.append(a) or [])
    out = tmp_path / "study"
    assert main(["study", "pde", "-o", str(out), *argv]) == 1
    assert words in one_line_error(capsys) and not ran and not out.exists()
    members = 1 + len(pde_figures.FRACTIONS) + len(pde_figures.StudyConfig().released)
    days = pde_figures.SECONDS_PER_STEP * 40961 * members * 10**12 / 86400
    assert f"{days:,.3g}" == "1.9e+08"
    assert main(["study", "pde", "-o", str(out), "--iterations", "800"]) == 0 and ran


def test_running_out_of_memory_is_one_line_not_a_traceback(tmp_path, capsys, monkeypatch):
    """Issue 39: a 10^6-edge graph ended `minirad explore` in a MemoryError traceback. The
    checks now refuse it first; whatever no check foresees still ends in one line."""
    import minirad.draw.explore

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(minirad.draw.explore, "explore", exhausted)
    path = saved(tmp_path, examples.figure1())
    assert main(["explore", path, "-o", str(tmp_path / "p.html")]) == 1
    assert "ran out of memory" in one_line_error(capsys)


def test_jacobian_refusals_name_the_flags_that_ask_for_more(tmp_path, capsys):
    """Issue 39: each size refusal says how to ask for more; on the command line that is a
    flag, not the library's keyword. Counts from tests/oracles.py's broom (n(n+1)/2
    products along n paths) and Figure 1 (4 intermediates, optimal cost 5)."""
    from oracles import broom

    path = saved(tmp_path, broom(300))
    assert main(["jacobian", path, "--method", "bauer", "--max-products", "45149"]) == 1
    assert "pass --max-products 45150 to multiply" in one_line_error(capsys)
    assert main(["jacobian", path, "--method", "bauer", "--max-products", "45150"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("bauer: 45150 multiplications")
    assert main(["jacobian", path, "--method", "bauer", "--max-paths", "299"]) == 1
    assert "pass --max-paths 300 to sum them" in one_line_error(capsys)
    figure1 = saved(tmp_path, examples.figure1(), "f.json")
    argv = ["jacobian", figure1, "--method", "eliminate", "--order", "optimal"]
    assert main(argv + ["--max-intermediates", "3"]) == 1
    assert "pass --max-intermediates 4 to search anyway" in one_line_error(capsys)
    assert main(argv + ["--max-intermediates", "4"]) == 0
    assert "eliminate: 5 multiplications" in capsys.readouterr().out
    assert main(["jacobian", figure1, "--max-paths", "3"]) == 1
    assert "applies only to method='bauer'" in one_line_error(capsys)
