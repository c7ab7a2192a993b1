"""The explorable page, without a browser: what it stores, its size, its refusals, the command.

The page in a real browser is tested in tests/draw/test_explore_browser.py.
"""

import json
import re

import numpy as np
import pytest
from oracles import small_mlp

from minirad import (
    eliminate,
    examples,
    retained_memory,
    sample_activations,
    sample_paths,
    sampled_jacobians,
    save_graph,
    trace,
)
from minirad.cli import main
from minirad.draw import explore_arrays, explore_data
from minirad.draw.explore import explore
from minirad.draw.explore_layout import positions
from minirad.exact.paths import count_paths
from minirad.exact.sweeps import gradient, reverse_sweep


def stored_data(page):
    """The JSON block of the page's HTML, read back as the browser reads it."""
    block = re.search(r'<script type="application/json" id="minirad-data">(.*?)</script>',
                      page.html, re.S).group(1)
    return json.loads(block)


def test_the_page_is_one_file_that_fetches_nothing():
    page = explore(examples.figure1())
    # nothing outside the file: no URL, no src= or href= attribute, no import
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page.html)
    assert not re.search(r"\b(src|href)\s*=", page.html)
    assert "@import" not in page.html and "import(" not in page.html
    assert stored_data(page) == json.loads(json.dumps(page.data))  # the data, exactly


def test_a_vertex_name_cannot_end_the_data_block():
    from minirad import LCG

    g = LCG.from_edges([("x", "</script><b>", 2.0), ("</script><b>", "y", 3.0)],
                       inputs=["x"], outputs=["y"])
    page = explore(g)
    assert stored_data(page)["graph"]["names"][1] == "</script><b>"


def test_a_page_of_200_vertices_stays_under_one_megabyte():
    g = examples.random_dag(3, 190, 7, density=0.015, rng=0)
    assert g.n_vertices == 200
    assert len(explore(g).html.encode("utf-8")) < 1_000_000


def test_running_statistics_equal_numpy_on_the_first_n_estimates():
    g = examples.lecture()
    section = explore_data.sample_section(g, ks=(2,), seeds=(1,), n=50)
    case = section["menu"][0]
    # the first 12 are the single runs the page steps through, the rest drawn in a batch
    rng = np.random.default_rng(1)
    first = [sample_paths(g, 2, rng=rng).jacobian.ravel() for _ in range(12)]
    estimates = np.concatenate([first, sampled_jacobians(g, 2, 38, rng=rng).reshape(38, -1)])
    assert [single["estimate"] for single in case["singles"]] == [list(e) for e in first]
    assert np.array_equal(np.array(case["estimates"]), estimates)  # stored in full
    for count in (2, 7, 50):
        first = estimates[:count]
        assert np.allclose(case["mean"][count - 1], first.mean(axis=0), rtol=1e-13, atol=0)
        assert np.allclose(case["variance"][count - 1], first.var(axis=0, ddof=1), rtol=1e-7)
        assert np.allclose(case["stderr"][count - 1],
                           first.std(axis=0, ddof=1) / np.sqrt(count), rtol=1e-7)
    assert case["variance"][0] == ["nan", "nan"]  # one estimate has no spread


def test_each_single_run_is_algorithm_1_on_one_generator():
    from minirad import sample_paths

    g = examples.figure1()
    case = explore_data.sample_section(g, ks=(1,), seeds=(3,), n=2, runs=4)["menu"][0]
    rng = np.random.default_rng(3)
    for stored in case["singles"]:
        s = sample_paths(g, 1, rng=rng)
        assert stored["edges"] == np.flatnonzero(s.counts).tolist()
        assert stored["estimate"] == s.jacobian.ravel().tolist()
        # the estimate is the reverse sweep on the drawn edges with their weights
        q = np.zeros((g.n_vertices, g.n_vertices))
        for e, w in zip(stored["edges"], stored["weights"]):
            q[g.sources[e], g.targets[e]] = w
        adjoint = np.zeros(g.n_vertices)
        adjoint[g.outputs[0]] = 1.0
        for v in range(g.n_vertices - 1, -1, -1):
            adjoint[v] += q[v] @ adjoint
        assert np.allclose(adjoint[list(g.inputs)], stored["estimate"], rtol=1e-14)


def test_paths_sum_to_the_jacobian_and_counts_are_exact():
    g = examples.figure1()
    section = explore_data.paths_section(g)
    exact = reverse_sweep(g).jacobian.ravel()
    counts = count_paths(g).ravel()
    for entry, value, count in zip(section["entries"], exact, counts):
        assert entry["complete"] and len(entry["paths"]) == count
        assert entry["listed_sum"] == pytest.approx(value, rel=1e-14)
    # the hand count of Figure 1: x1 reaches y by v2 -> y and v2 -> v5 -> y
    assert section["entries"][0]["paths"] == [[0, 2, 5, 6], [0, 2, 6]]


def test_a_limited_list_says_so():
    g = examples.interleaved(3, 4)
    entry = explore_data.paths_section(g, max_paths=5)["entries"][0]
    assert entry["count"] == str(count_paths(g)[0, 0]) and not entry["complete"]
    assert len(entry["paths"]) == 5


def test_elimination_steps_add_up_to_the_counts_of_each_order():
    g = examples.two_outputs()
    section = explore_data.elimination_section(g)
    # lab 4's hand counts for two_outputs: forward 8, reverse 10, Markowitz 7
    assert {name: o["multiplications"] for name, o in section["orders"].items()} == {
        "forward": 8, "reverse": 10, "markowitz": 7, "optimal": 7}
    for order in section["orders"].values():
        assert sum(s["multiplications"] for s in order["steps"]) == order["multiplications"]
        assert sum(s["additions"] for s in order["steps"]) == order["additions"]


def test_one_draw_variance_is_the_closed_form_of_an_mlp_layer():
    g, X, (W1, W2) = small_mlp()
    variance = explore_arrays.one_draw_variance(g)
    # W2's gradient is h^T 1 with h = relu(X W1) stored; one draw of d entries per row
    # scales a count (binomial, 1 draw, p = 1/d) by d: each entry's variance is
    # (d - 1) * sum over rows of h^2 * delta^2, with delta = 1 (the loss is a sum)
    h = np.maximum(X @ W1, 0)
    d = h.shape[1]
    assert np.allclose(variance["W2"], (d - 1) * (h ** 2).sum(axis=0)[:, None]
                       * np.ones((1, W2.shape[1])), rtol=1e-12)
    # W1's gradient is X^T delta1, delta1 = mask * (1 W2^T): the same form with d = 3
    delta = (X @ W1 > 0) * (np.ones((X.shape[0], W2.shape[1])) @ W2.T)
    expected = (X.shape[1] - 1) * (X ** 2).T @ (delta ** 2)
    assert np.allclose(variance["W1"], expected, rtol=1e-12)


@pytest.mark.slow
def test_memory_section_variance_matches_many_sampled_gradients():
    g, _, _ = small_mlp()
    section = explore_arrays.memory_section(g, fractions=(0.5,), rng=0)
    stored = section["steps"][1]["variance"]
    exact = [np.asarray(x) for x in gradient(g)]
    rng = np.random.default_rng(11)
    n = 4000
    squares = [np.zeros_like(x) for x in exact]
    for _ in range(n):
        for s, e, x in zip(squares, exact, gradient(sample_activations(g, 0.5, rng=rng))):
            s += (x - e) ** 2
    measured = [float(s.sum()) / n for s in squares]
    # a sum of squared deviations over 4000 draws: its relative spread is below 5% here
    # (the squared deviations have a kurtosis under 10); 15% is over 3 of those spreads
    assert np.allclose(measured, stored, rtol=0.15)


def test_memory_section_bytes_are_minirads():
    g, _, _ = small_mlp()
    section = explore_arrays.memory_section(g, fractions=(0.5, 0.1), rng=3)
    assert section["steps"][0]["total"] == retained_memory(g).total
    for step in section["steps"][1:]:
        m = retained_memory(sample_activations(g, step["fraction"], rng=3))
        assert step["per_edge"] == list(m.per_edge) and step["total"] == m.total
    # sampling keeps fewer bytes and pays in variance
    totals = [s["total"] for s in section["steps"]]
    variances = [sum(s["variance"]) for s in section["steps"]]
    assert totals[2] < totals[0] and variances[0] == 0 < variances[1] < variances[2]


def test_variance_refused_where_a_path_meets_two_sampled_edges():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    g = trace(lambda W, V: ((A @ W) @ (A @ V)).sum(), np.eye(3), np.eye(3))
    products = [e for e, op in enumerate(g.labels) if op.kind in ("matmul", "outer")]
    with pytest.raises(ValueError, match="a path meets two sampled edges"):
        explore_arrays.one_draw_variance(g, edges=products)
    with pytest.raises(ValueError, match="is a sum, not a product"):
        explore_arrays.one_draw_variance(g, edges=[g.n_edges - 1])


def test_array_page_eliminates_lists_paths_and_samples_on_blocks():
    """Every panel, and every number in it minirad's: the steps of each set of eliminated
    arrays, the paths of arrays with their products, the two-level samples."""
    g, _, _ = small_mlp()
    data = explore(g).data
    assert data["kind"] == "arrays" and data["memory"] is not None
    elimination = data["elimination"]
    assert set(elimination["orders"]) == {"forward", "reverse", "markowitz", "optimal"}
    assert elimination["orders"]["reverse"]["multiplications"] == \
        eliminate(g, "reverse").multiplications
    inter = elimination["intermediates"]
    assert len(elimination["states"]) == 2 ** len(inter)
    for mask, steps in enumerate(elimination["states"]):  # every click from every state
        gone = [g.names[v] for i, v in enumerate(inter) if mask >> i & 1]
        for v, step in steps.items():
            expected = eliminate(g, gone + [g.names[int(v)]]).multiplications \
                - eliminate(g, gone).multiplications if gone else \
                eliminate(g, [g.names[int(v)]]).multiplications
            assert step["multiplications"] == expected
    entry = data["paths"]["entries"][0]
    assert entry["count"] == str(count_paths(g)[0, 0]) and entry["difference"] < 1e-9
    menu = data["sample"]["menu"]
    assert {item["entries"] for item in menu} == {None, 1, 2}
    first = next(item for item in menu if item["entries"] == 1 and item["seed"] == 0
                 and item["k"] == 1)["singles"][0]
    s = sample_paths(g, 1, rng=np.random.default_rng(0), entries=1)
    assert first["inside"] == {str(v): w.ravel().tolist() for v, w in s.inside.items()}


def test_a_page_is_titled_by_the_function_the_command_names(tmp_path, capsys):
    path = tmp_path / "page.html"
    assert main(["explore", "minirad.examples:figure1", "-o", str(path)]) == 0
    text = path.read_text(encoding="utf-8")
    assert "<title>figure1 · minirad explore</title>" in text
    assert '<h1 id="title">figure1</h1>' in text
    assert explore(examples.figure1()).data["title"].startswith("an LCG of 7 vertices")


def test_layout_without_dot_is_minirads_matplotlib_rows(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no dot program
    g = examples.figure1()
    spots = positions(g)
    assert spots.layout == "matplotlib"
    row = {name: y for name, y in zip(spots.names, spots.y)}
    # bottom-up, one row per level: inputs lowest (largest SVG y), then v2 and v3, ..., y
    assert row["x1"] == row["x2"] > row["v2"] == row["v3"] > row["v4"] > row["v5"] > row["y"]
    xs = sorted(x for x, y in zip(spots.x, spots.y) if y == row["x1"])
    assert xs[1] - xs[0] >= spots.width[0]  # boxes in a row do not touch


def test_layout_with_dot_keeps_dots_order(monkeypatch):
    from minirad.draw.render import has_dot, layout_positions

    if not has_dot():
        pytest.skip("the graphviz dot program is not installed")
    g = examples.lecture()
    spots, dot = positions(g), layout_positions(g, legend=False, edge_labels=False)
    assert spots.layout == "dot"
    for a in g.names:
        for b in g.names:  # the same left-to-right and bottom-up order as dot's picture
            assert (spots.x[g.index(a)] < spots.x[g.index(b)]) == (dot[a][0] < dot[b][0])
            assert (spots.y[g.index(a)] > spots.y[g.index(b)]) == (dot[a][1] < dot[b][1])


@pytest.mark.parametrize("bad, message", [
    (dict(n=1), "n must be a whole number"),
    (dict(seeds=(-1,)), "seeds must be non-negative"),
    (dict(ks=(0,)), "k must be at least 1"),
])
def test_bad_options_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        explore(examples.lecture(), **bad)


def test_bad_graphs_and_paths_are_refused(tmp_path):
    with pytest.raises(TypeError, match="needs the point to trace the function at"):
        explore(lambda x: x)
    with pytest.raises(TypeError, match="works on an LCG"):
        explore("x -> y")
    with pytest.raises(ValueError, match="more than max_vertices=200"):
        explore(examples.random_dag(3, 200, 2, density=0.01, rng=0))
    page = explore(examples.lab())
    with pytest.raises(ValueError, match="ending in .html"):
        page.save(tmp_path / "page.png")
    with pytest.raises(ValueError, match="does not exist"):
        page.save(tmp_path / "missing" / "page.html")
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_notebook_display_is_a_frame_holding_the_page():
    import html

    page = explore(examples.lab())
    shown = page._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and html.unescape(
        shown.split('srcdoc="')[1].split('" title=')[0]) == page.html


def test_command_writes_pages_from_a_builder_a_traced_function_and_files(tmp_path, capsys):
    out = tmp_path / "f1.html"
    assert main(["explore", "minirad.examples:figure1", "-o", str(out)]) == 0
    assert stored_data_of(out)["graph"]["names"] == list(examples.figure1().names)
    assert main(["explore", "minirad.examples:lecture_program", "2", "5", "-o", str(out)]) == 0
    assert stored_data_of(out)["exact"]["jacobian"] == reverse_sweep(
        examples.lecture()).jacobian.ravel().tolist()
    saved = tmp_path / "g.json"
    save_graph(examples.two_outputs(), saved)
    assert main(["explore", str(saved), "-o", str(out)]) == 0
    g, _, _ = small_mlp()
    save_graph(g, tmp_path / "mlp.npz")
    assert main(["explore", str(tmp_path / "mlp.npz"), "-o", str(out)]) == 0
    assert stored_data_of(out)["memory"]["steps"][0]["total"] == retained_memory(g).total
    module = tmp_path / "norm.py"  # a vector point is an array: the page of a graph of arrays
    module.write_text("def f(x):\n    return (x * x).sum()\n")
    assert main(["explore", f"{module}:f", "1,2,3", "-o", str(out)]) == 0
    assert stored_data_of(out)["kind"] == "arrays"
    assert stored_data_of(out)["graph"]["shapes"][0] == "R^(3)"
    assert "open it in a browser" in capsys.readouterr().out


def stored_data_of(path):
    class Read:
        html = path.read_text("utf-8")
    return stored_data(Read)


@pytest.mark.parametrize("argv, message", [
    (["explore", "minirad.examples:figure1", "-o", "page.png"], "ending in .html"),
    (["explore", "missing.json", "-o", "page.html"], "no such file"),
    (["explore", "minirad.examples:figure1_program", "-o", "page.html"], "missing 2"),
    (["explore", "minirad.examples:FIGURE", "-o", "page.html"], "has no function"),
])
def test_command_refuses_bad_input_in_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_the_vertex_limit_is_checked_before_any_panel_is_built(monkeypatch, tmp_path, capsys):
    """Issue 39: a 5,000-vertex graph cost 70-105 s and 3 GiB of panels before the layout
    refused it. Now refused first (no panel function runs), naming the keyword and the
    command-line flag that ask for more; within the limit the page is built."""
    def never(*args, **kwargs):
        raise AssertionError("a panel was built for a graph that is refused")

    for module, name in ((explore_data, "graph_section"), (explore_data, "exact_section"),
                         (explore_arrays, "graph_section")):
        monkeypatch.setattr(module, name, never)
    big = examples.random_dag(10, 5000, 10, density=0.001, rng=0)
    with pytest.raises(ValueError, match="5,020 vertices, more than max_vertices=200.*pass "
                                         "max_vertices=5020 \\(--max-vertices 5020\\)"):
        explore(big)
    monkeypatch.undo()
    g = examples.lecture()                                 # 7 vertices
    with pytest.raises(ValueError, match="more than max_vertices=6"):
        explore(g, max_vertices=6)
    assert explore(g, max_vertices=7).data["layout"]["x"]
    path = str(save_graph(g, tmp_path / "g.json"))
    assert main(["explore", path, "-o", str(tmp_path / "p.html"), "--max-vertices", "6"]) == 1
    assert "--max-vertices 7" in capsys.readouterr().err
    assert main(["explore", path, "-o", str(tmp_path / "p.html"), "--max-vertices", "7"]) == 0
