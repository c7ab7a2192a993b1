"""Drawing LCGs: the DOT source says what is highlighted and how; files are valid;
the matplotlib fallback works when the dot program is hidden."""

import importlib
import re
import warnings
import xml.etree.ElementTree as ET

import graphviz
import numpy as np
import pytest
from matplotlib.figure import Figure

from minirad import LCG, examples
from minirad.exact.elimination import eliminate
from minirad.exact.paths import paths as all_paths
from minirad.randomized.sampling import sample_paths

R = importlib.import_module("minirad.draw.render")  # the module (also callable as the function)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FIGURE1_PATHS = [("x1", "v2", "y"), ("x1", "v2", "v5", "y"),
                 ("x2", "v3", "v4", "v5", "y"), ("x2", "v4", "v5", "y")]

pytestmark = pytest.mark.drawing  # every test here runs again without dot (.ci/run)

needs_dot = pytest.mark.skipif(not R.has_dot(), reason="the graphviz dot program is not "
                                                       "installed (CI installs it)")


# ------------------------------------------------------------- DOT parsing
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|<.*>|[^\s\]]+)')


def _attrs(text):
    return {k: v[1:-1] if v.startswith('"') else v for k, v in _ATTR.findall(text)}


def edges(dot):
    """(tail, head, attrs) for every edge line, in order, invisible ones left out."""
    found = []
    for line in dot.source.splitlines():
        match = re.match(r'\s*("(?:[^"\\]|\\.)*"|\S+) -> ("(?:[^"\\]|\\.)*"|\S+)(?: \[(.*)\])?$',
                         line)
        if match:
            attrs = _attrs(match.group(3) or "")
            if attrs.get("style") != "invis":
                found.append((match.group(1).strip('"'), match.group(2).strip('"'), attrs))
    return found


def nodes(dot):
    found = {}
    for line in dot.source.splitlines():
        match = re.match(r'\s*("(?:[^"\\]|\\.)*"|[^\s{}]+) \[(.*)\]$', line)
        if match and "->" not in line and match.group(1) not in ("graph", "node", "edge"):
            found[match.group(1).strip('"')] = _attrs(match.group(2))
    return found


def legend_text(dot):
    """The text of every legend entry (the legend is a column of vertices and a table)."""
    return "\n".join(attrs["label"].replace("\\n", " ") for name, attrs in nodes(dot).items()
                     if name.startswith("legend"))


def rows(dot):
    """The members of each rank=same group, bottom row first."""
    blocks = re.findall(r"\{\s*rank=same\s+(.*?)\}", dot.source, flags=re.S)
    return [block.split() for block in blocks]


def strands(dot):
    """Colours drawn on each edge: one strand per colour."""
    drawn = {}
    for u, v, attrs in edges(dot):
        drawn.setdefault((u, v), []).append(attrs.get("color"))
    return drawn


@pytest.fixture
def no_dot(monkeypatch, tmp_path):
    """Hide the dot program (an empty PATH) and let the warning fire afresh."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(R, "_warned_missing_dot", False)
    assert not R.has_dot()


def _sample_with_a_skip(g):
    for seed in range(50):
        sample = sample_paths(g, k=1, rng=seed)
        if not sample.visited.all():
            return sample
    raise AssertionError("no sample skipped a vertex")


# ------------------------------------------------------------------ plain
def test_plain_drawing_reads_bottom_up_with_partials():
    g = examples.figure1()
    dot = R.render(g)
    assert isinstance(dot, graphviz.Digraph)
    assert dot.graph_attr["rankdir"] == "BT"
    assert rows(dot) == [["x1", "x2"], ["v2", "v3"], ["v4"], ["v5"], ["y"]]
    drawn = {(u, v): a for u, v, a in edges(dot)}
    assert set(drawn) == {(g.names[u], g.names[v]) for u, v, _ in g.edges()}
    assert drawn["x2", "v3"]["label"] == "-0.4161"  # 4 significant digits
    shapes = {name: a["shape"] for name, a in nodes(dot).items() if name in g.names}
    assert shapes["x1"] == "box" and shapes["v2"] == "ellipse" and shapes["y"] == "doubleoctagon"
    assert "legend" not in dot.source  # nothing highlighted, nothing to explain


def test_ops_values_and_digits():
    dot = R.render(examples.figure1(), show_ops=True, show_values=True, digits=2)
    labels = {name: a["label"] for name, a in nodes(dot).items()}
    assert labels["v2"] == "v2 = exp(x1)\\n= 2.7"
    assert labels["x1"] == "x1 = 1"
    assert {a["label"] for _, _, a in edges(dot)} >= {"2.7", "-0.42"}
    assert R.render(examples.figure1(), edge_labels=False).source.count("label=") == 7


def test_op_constants_are_rounded_to_digits():
    from minirad import ops, trace

    g = trace(lambda x: 0.1257302210933933 * x + ops.sin(x) ** 3.0 + 25000000000.0 * x, 2.0)
    labels = [a["label"] for name, a in nodes(R.render(g, show_ops=True)).items()
              if name in g.names]
    assert "v1 = 0.1257 * x" in labels  # not 0.1257302210933933
    assert "v3 = v2 ** 3" in labels and "v5 = 2.5e+10 * x" in labels
    assert not any("0.12573" in label or "3.0" in label for label in labels)
    assert "v1 = 0.13 * x" in {a["label"] for a in nodes(R.render(g, show_ops=True,
                                                                   digits=2)).values()}
    # names that look like numbers are left alone: only the template is rounded
    h = LCG.from_edges([("x1.23456", "v", 2.0)], inputs=["x1.23456"], outputs=["v"],
                       ops={"v": "2.000001 * {0}"})
    assert nodes(R.render(h, show_ops=True))["v"]["label"] == "v = 2 * x1.23456"


def test_awkward_names_get_safe_ids():
    g = LCG.from_edges([("a:b", "c\\d", 1.0)], inputs=["a:b"], outputs=["c\\d"])
    dot = R.render(g)
    assert [(u, v) for u, v, _ in edges(dot)] == [("n0", "n1")]
    assert nodes(dot)["n0"]["label"] == "a:b"


# -------------------------------------------------------------- highlights
def test_sample_highlight():
    g = examples.figure1()
    sample = _sample_with_a_skip(g)
    dot = R.render(g, sample)
    drawn = edges(dot)
    assert len(drawn) == g.n_edges
    for e, (u, v, attrs) in enumerate(drawn):  # edges come out in g's edge order
        assert (u, v) == (g.names[g.sources[e]], g.names[g.targets[e]])
        if sample.counts[e]:
            assert attrs["color"] == R.SAMPLE_COLOR
            assert float(attrs["penwidth"]) == R.SAMPLE_WIDTH
            assert attrs["label"] == f"draws {sample.counts[e]}, w = {sample.weights[e]:.4g}"
            assert "style" not in attrs
        else:
            assert attrs["style"] == "dashed" and attrs["color"] == R.DIM
    drawn_nodes = nodes(dot)
    for v, name in enumerate(g.names):
        grey = drawn_nodes[name]["fillcolor"] == R.DIM_FILL
        assert grey == (not sample.visited[v])
        assert ("dashed" in drawn_nodes[name]["style"]) == (not sample.visited[v])
    assert "sampled edge" in legend_text(dot)
    assert "skipped vertex" in legend_text(dot)


def test_sample_from_another_graph_is_refused():
    sample = sample_paths(examples.lecture(), k=1, rng=0)
    with pytest.raises(ValueError, match="different graph"):
        R.render(examples.figure1(), sample)
    with pytest.raises(TypeError, match="cannot draw a float"):
        R.render(examples.figure1(), 3.5)


def test_four_paths_of_figure1d():
    g = examples.figure1()
    dot = R.render(g, all_paths(g))  # a generator of vertex-number tuples
    drawn = strands(dot)
    # one strand per path through the edge, each path in its own colour
    assert len(drawn["v5", "y"]) == 3 and len(set(drawn["v5", "y"])) == 3
    assert drawn["x1", "v2"] == [R.PATH_COLORS[0], R.PATH_COLORS[1]]
    assert len(drawn["x2", "v3"]) == 1
    assert len({c for colours in drawn.values() for c in colours}) == 4
    legend = legend_text(dot)
    assert "path 4: x2 → v4 → v5 → y" in legend and "product 6.719" in legend


def test_a_path_alone_keeps_its_number_and_colour():
    g = examples.figure1()
    dot = R.render(g, R.Paths([FIGURE1_PATHS[2]], labels=["path 3"],
                              colors=[R.PATH_COLORS[2]]))
    assert strands(dot)["x2", "v3"] == [R.PATH_COLORS[2]]
    assert "path 3: x2 → v3 → v4 → v5 → y" in legend_text(dot)
    figure = R.draw_matplotlib(g, R.Paths(FIGURE1_PATHS[3], labels="path 4",
                                          colors="#123456"))  # one path: plain strings will do
    legend = figure.axes[0].get_legend()
    assert legend.get_texts()[-1].get_text().startswith("path 4: x2 → v4")
    assert legend.get_lines()[-1].get_color() == "#123456"
    with pytest.raises(ValueError, match="one per path"):
        R.render(g, R.Paths(FIGURE1_PATHS, colors=["red"]))


def test_one_path_by_numbers_greys_the_rest():
    g = examples.figure1()
    dot = R.render(g, [0, 2, 6])
    drawn = strands(dot)
    assert drawn["x1", "v2"] == drawn["v2", "y"] == [R.PATH_COLORS[0]]
    assert drawn["x2", "v3"] == [R.DIM]


@pytest.mark.parametrize("bad, error, message", [
    ([("x1", "v3", "y")], ValueError, "not an edge"),
    ([("x1",)], ValueError, "at least"),
    ([("x1", "nope")], ValueError, "unknown vertex"),
    (R.Paths("x1"), TypeError, "a path"),
    ([{"x1", "v2"}], TypeError, "sequence of vertices"),
])
def test_bad_paths(bad, error, message):
    with pytest.raises(error, match=message):
        R.render(examples.figure1(), bad)


def test_step_highlight():
    g = examples.two_outputs()
    result = eliminate(g, "markowitz", keep_graphs=True)
    before, step = result.graphs[1], result.steps[1]  # eliminating v2: one fill-in, one update
    assert step.eliminated == "v2" and step.fill_in and step.updated
    dot = R.render(before, step)
    drawn = {(u, v): a for u, v, a in edges(dot)}
    for p, s in step.fill_in:  # proposed edges: dashed, highlighted, not yet in the graph
        assert not before.has_edge(p, s)
        attrs = drawn[p, s]
        assert attrs["style"] == "dashed" and attrs["color"] == R.FILL_IN_COLOR
        assert attrs["constraint"] == "false"
        new = before.partial(p, "v2") * before.partial("v2", s)
        assert attrs["label"] == f"new {new:.4g}"
    for p, s in step.updated:
        attrs = drawn[p, s]
        old = before.partial(p, s)
        new = old + before.partial(p, "v2") * before.partial("v2", s)
        assert attrs["color"] == R.UPDATED_COLOR
        assert attrs["label"] == f"{old:.4g} → {new:.4g}"
    for p in step.predecessors:
        assert drawn[p, "v2"]["color"] == R.STEP_EDGE_COLOR
    assert nodes(dot)["v2"]["fillcolor"] == R.STEP_VERTEX_FILL
    # naming the vertex draws the same picture
    assert R.render(before, R.Eliminating("v2")).source == dot.source


def test_bad_steps():
    g = examples.two_outputs()
    with pytest.raises(ValueError, match="only intermediates"):
        R.render(g, R.Eliminating("x0"))
    later = eliminate(g, "markowitz").steps[1]
    with pytest.raises(ValueError, match="different graph"):
        R.render(g, later)  # drawn on the original, not the graph before the step
    with pytest.raises(TypeError, match="Step"):
        R.render(g, 3.5)


def test_highlights_combine():
    g = examples.figure1()
    sample = sample_paths(g, k=1, rng=1)
    dot = R.render(g, sample, [FIGURE1_PATHS[0]], R.Eliminating("v4"))
    drawn = strands(dot)
    assert drawn["x1", "v2"] == [R.SAMPLE_COLOR, R.PATH_COLORS[0]]
    assert R.STEP_EDGE_COLOR in drawn["v4", "v5"]
    legend = legend_text(dot)
    assert all(text in legend for text in ("sampled edge", "path 1", "vertex eliminated: v4"))


def test_kept_vertices_of_an_injection():
    from minirad.examples import chain_graph

    chain = [np.array([[2.0], [3.0]]), np.array([[0.5, -1.0]])]
    P = np.diag([2.0, 0.0])  # keeps the first component after the first factor, twice over
    full, injected = chain_graph(chain), chain_graph(chain, {1: P})
    a1, a2 = full.names[1], full.names[2]
    dot = R.render(full, R.Factors({a1: 2.0, a2: 0.0}, name="P_ii"))
    drawn = {(u, v): attrs for u, v, attrs in edges(dot)}
    used = {edge for edge, attrs in drawn.items() if attrs["color"] == R.KEPT_COLOR}
    assert used == {("theta", a1), (a1, "y")}
    for u, v, attrs in edges(dot):
        if (u, v) not in used:
            assert attrs["style"] == "dashed" and attrs["color"] == R.DIM
    # the edge into the kept vertex carries P_ii and the weight of the injected graph
    assert drawn["theta", a1]["label"] == f"P_ii 2, w = {injected.partial('theta', a1):.4g}"
    assert drawn[a1, "y"]["label"] == "0.5"  # y is not listed: its plain partial
    labels = nodes(dot)
    assert labels[a1]["label"] == f"{a1}\\nP_ii = 2" and labels[a1]["color"] == R.KEPT_COLOR
    assert labels[a2]["fillcolor"] == R.DIM_FILL and "dashed" in labels[a2]["style"]
    assert labels["theta"]["fillcolor"] == R.FILL["input"]  # ends not listed stay kept
    legend = legend_text(dot)
    assert "kept vertex: its P_ii scales the edges into it" in legend
    assert "dropped vertex (P_ii = 0)" in legend and "sampled" not in legend
    figure = R.draw_matplotlib(full, {a1: 2.0, a2: 0.0})  # the fallback agrees
    assert any(t.get_text() == f"{a1}\nfactor = 2" for t in figure.axes[0].texts)


def test_bad_kept():
    g = examples.figure1()
    with pytest.raises(TypeError, match="mapping"):
        R.render(g, R.Factors(["v2"]))
    with pytest.raises(TypeError, match="numbers"):
        R.render(g, {"v2": "half"})
    with pytest.raises(ValueError, match="unknown vertex"):
        R.render(g, {"nope": 1.0})
    with pytest.raises(ValueError, match="two pictures"):
        R.render(g, {"v2": 1.0}, sample_paths(g, k=1, rng=0))
    with pytest.raises(ValueError, match="one of each kind"):
        R.render(g, {"v2": 1.0}, R.Factors({"v3": 1.0}))


def test_legend_can_be_forced():
    assert "legend" in R.render(examples.lab(), legend=True).source
    assert "legend" not in R.render(examples.lab(), [("x", "v2")], legend=False).source


def test_too_large_graph_is_refused_with_advice():
    g = examples.random_dag(3, 30, 2, rng=0)
    with pytest.raises(ValueError, match=r"max_vertices=35.*subgraph"):
        R.render(g, max_vertices=20)
    assert R.render(g, max_vertices=35).lcg is g
    with pytest.raises(TypeError, match="LCG"):
        R.render("not a graph")


# ------------------------------------------------------------ elimination
def test_render_elimination_saves_each_step(tmp_path):
    g = examples.figure1()
    pattern = str(tmp_path / "step_{:02d}.dot")
    drawings = R.render_elimination(g, "markowitz", pattern)
    assert len(drawings) == len(g.intermediates) + 1
    assert "step 1/4: eliminate v3" in drawings[0].source
    assert "6 multiplications" in drawings[-1].source
    final = {(u, v) for u, v, _ in edges(drawings[-1])}
    assert final == {("x1", "y"), ("x2", "y")}  # bipartite: the Jacobian's entries
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == [f"step_{i:02d}.dot" for i in range(1, 6)]
    headed = R.render_elimination(g, "markowitz", title="Figure 1")
    assert [d.options["title"] for d in headed] == [
        "Figure 1\n" + d.options["title"] for d in drawings]


# ------------------------------------------------------------ saving: dot
def test_a_drawing_keeps_graphvizs_own_save(tmp_path):
    """Issue 39: Drawing.save overrode graphviz's with another signature, which broke
    graphviz's render (it calls save(filename, directory=...)). graphviz's save writes
    the DOT text, as for any graphviz graph; minirad's picture by extension is R.save_drawing."""
    import graphviz

    dot = R.render(examples.figure1(), FIGURE1_PATHS)
    written = dot.save("g.gv", directory=tmp_path)
    assert open(written, encoding="utf-8").read() == dot.source + "\n" * (
        not dot.source.endswith("\n"))
    assert type(dot).save is graphviz.Digraph.save


@needs_dot
def test_graphvizs_own_render_works_on_a_drawing(tmp_path):
    dot = R.render(examples.figure1(), FIGURE1_PATHS)
    png = dot.render(tmp_path / "g", format="png")
    assert open(png, "rb").read(8) == PNG_MAGIC


@pytest.mark.slow
@needs_dot
def test_save_with_dot(tmp_path):
    dot = R.render(examples.figure1(), FIGURE1_PATHS)
    png = R.save_drawing(dot, tmp_path / "paths.png")
    assert open(png, "rb").read(8) == PNG_MAGIC
    svg = tmp_path / "paths.svg"
    R.save_drawing(dot, svg)
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert "#0072b2" in svg.read_text().lower()  # the first path's colour is in the picture
    pdf = R.save_drawing(dot, tmp_path / "paths.pdf")
    assert open(pdf, "rb").read(5) == b"%PDF-"
    strip = R.elimination_strip(examples.figure1(), "markowitz", tmp_path / "strip.png")
    assert isinstance(strip, Figure)
    assert (tmp_path / "strip.png").read_bytes()[:8] == PNG_MAGIC
    titled = R.elimination_strip(examples.figure1(), "markowitz", title="one\ntwo")
    assert titled.get_suptitle() == "one\ntwo"
    # the tiles keep their size; the title gets a band of its own above them
    width, height = strip.get_size_inches()
    assert titled.get_size_inches()[0] == width and titled.get_size_inches()[1] > height
    top = max(ax.get_position().y1 for ax in titled.axes)
    assert top * titled.get_size_inches()[1] == pytest.approx(height)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["png", "svg", "pdf"])
def test_saving_a_figure_twice_gives_the_same_bytes(tmp_path, fmt):
    figure = R.draw_matplotlib(examples.figure1(), title="no timestamp")
    first, second = (R.save_drawing(figure, tmp_path / f"{name}.{fmt}") for name in ("a", "b"))
    assert open(first, "rb").read() == open(second, "rb").read()


def test_save_rejects_unknown_formats_and_objects(tmp_path):
    with pytest.raises(ValueError, match=r"\.png"):
        R.save_drawing(R.render(examples.lab()), tmp_path / "lab.bmp")
    with pytest.raises(TypeError, match="render"):
        R.save_drawing("digraph {}", tmp_path / "lab.png")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------- saving: no dot
@pytest.mark.slow
def test_fallback_without_dot(no_dot, tmp_path):
    g = examples.figure1()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the DOT text needs no dot program: no warning
        dot = R.render(g, sample_paths(g, k=1, rng=0))
        R.save_drawing(dot, tmp_path / "sample.dot")
    assert "rankdir=BT" in dot.source and "rankdir=BT" in (tmp_path / "sample.dot").read_text()
    with pytest.warns(R.MissingDotWarning, match="matplotlib"):
        R.save_drawing(dot, tmp_path / "first.png")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: no second warning
        png = R.save_drawing(dot, tmp_path / "sample.png")
    assert open(png, "rb").read(8) == PNG_MAGIC
    svg = R.save_drawing(dot, tmp_path / "sample.svg")
    assert ET.parse(svg).getroot().tag.endswith("svg")
    assert "image/svg+xml" in dot._repr_mimebundle_()
    with pytest.raises(RuntimeError, match="dot"):
        R.save_drawing(graphviz.Digraph(), tmp_path / "plain.png")


@pytest.mark.slow
def test_fallback_strip_without_dot(no_dot, tmp_path):
    with pytest.warns(R.MissingDotWarning):
        figure = R.elimination_strip(examples.two_outputs(), "markowitz",
                                     tmp_path / "strip.png", ncols=2, title="two outputs")
    assert len(figure.axes) == 4  # 3 steps and the final graph
    assert figure.get_suptitle() == "two outputs"
    assert (tmp_path / "strip.png").read_bytes()[:8] == PNG_MAGIC


def test_draw_matplotlib_draws_every_highlight():
    g = examples.figure1()
    figure = R.draw_matplotlib(g, sample_paths(g, k=1, rng=0), FIGURE1_PATHS,
                               R.Eliminating("v5"), show_values=True, title="all at once")
    ax = figure.axes[0]
    texts = {t.get_text() for t in ax.texts}
    assert {"x1 = 1", "y = 13.44"} <= texts
    assert any(t.startswith("new ") for t in texts)  # a fill-in edge label
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "input" in legend and any(t.startswith("path 4") for t in legend)
    assert ax.get_title() == "all at once"
    # into a given axes
    host = Figure()
    target = host.add_subplot()
    assert R.draw_matplotlib(g, ax=target) is host
    assert target.get_legend() is None


def test_fallback_rows_follow_levels():
    g = examples.figure1()
    figure = R.draw_matplotlib(g)
    rows = {t.get_text(): t.get_position()[1] for t in figure.axes[0].texts
            if t.get_text() in g.names}
    assert rows["x1"] == rows["x2"] == 0 and rows["y"] == max(rows.values())
    assert rows["v2"] == rows["v3"] == 1
    columns = {t.get_text(): t.get_position()[0] for t in figure.axes[0].texts}
    assert columns["x1"] < columns["x2"]  # inputs in Jacobian column order


def test_generated_paths_are_kept_for_saving():
    g = examples.figure1()
    dot = R.render(g, all_paths(g))
    assert len(dot.highlights[0]) == 4  # a generator was read once and kept
    assert len(strands(dot)["v5", "y"]) == 3


def test_a_new_kind_of_highlight_is_one_entry():
    """HIGHLIGHTS is the whole dispatch: a recogniser and a drawing function."""
    class Marked(str):
        pass

    def draw(scene, vertex, digits):
        scene.nodes[scene.g.index(str(vertex))].fill = "#00ff00"

    R.HIGHLIGHTS.insert(0, ("marked", lambda h: isinstance(h, Marked), draw))
    try:
        dot = R.render(examples.lab(), Marked("v2"))
    finally:
        del R.HIGHLIGHTS[0]
    assert nodes(dot)["v2"]["fillcolor"] == "#00ff00"


def test_a_source_target_pair_draws_every_path_between_them():
    """Issue 10: R.render(g, (source, target)) means all paths, with a cap."""
    from minirad.draw.render import MAX_PATHS_BETWEEN

    g = examples.figure1()
    pair = R.render(g, ("x2", "y"))
    listed = R.render(g, list(all_paths(g, "x2", "y")))  # the oracle: the paths listed by hand
    assert pair.source == listed.source
    wide = examples.interleaved(3, 4)  # 3**4 = 81 paths from theta to y
    with pytest.raises(ValueError, match=rf"there are 81 paths from theta to y, too many to "
                                         rf"draw .* \(at most {MAX_PATHS_BETWEEN}\)"):
        R.render(wide, ("theta", "y"))
    with pytest.raises(ValueError, match="there is no path from y to x1"):
        R.render(g, ("y", "x1"))


# ------------------------------------------------------- issue 10: pictures
def test_dot_legend_draws_each_kind_of_vertex_in_its_own_shape():
    g = examples.figure1()
    dot = R.render(g, sample_paths(g, 1, rng=0))
    drawn = nodes(dot)
    shape_of_vertex = {drawn[g.names[v]]["shape"] for v in g.inputs}
    legend = {attrs["label"]: attrs for name, attrs in drawn.items() if name.startswith("legend_")}
    assert legend["input"]["shape"] == drawn["x1"]["shape"] == "box" == shape_of_vertex.pop()
    assert "rounded" in legend["input"]["style"] and "rounded" in drawn["x1"]["style"]
    assert legend["intermediate"]["shape"] == drawn["v2"]["shape"] == "ellipse"
    assert legend["output"]["shape"] == drawn["y"]["shape"] == "doubleoctagon"
    skipped = next(attrs for label, attrs in legend.items() if label.startswith("skipped"))
    assert skipped["shape"] == drawn["v3"]["shape"] and "dashed" in skipped["style"]


def test_sampled_edges_state_the_weight_rule_in_words():
    g = examples.figure1()
    sample = sample_paths(g, 1, rng=0)
    dot = R.render(g, sample)
    labels = [attrs.get("label", "") for _, _, attrs in edges(dot)]
    assert "draws 1, w = 9.887" in labels  # v2 -> y: 1 draw x d_v2/k = 2/1 x 4.943
    assert not any(re.search(r"×\d", label) for label in labels)  # no "×1" beside a name
    assert "w = n × d_v/k × partial" in legend_text(dot)


def test_elimination_pictures_keep_every_vertex_in_place():
    """Pinned positions: each vertex has the same point in every step's picture
    (x1 and x2 used to swap in step 3 and v3 to jump across v4)."""
    import json

    if not R.has_dot():
        pytest.skip("needs the graphviz dot program")
    g = examples.figure1()
    where = {}
    for legend in (True, False):
        for drawing in R.render_elimination(g, "markowitz", legend=legend):
            laid = json.loads(drawing.pipe(format="json"))
            for obj in laid["objects"]:
                if obj.get("name") in g.names:
                    where.setdefault(obj["name"], set()).add(obj["pos"])
            if not legend:  # the invisible corners fix the frame: one size for every step
                where.setdefault("frame", set()).add(laid["bb"])
    assert all(len(spots) == 1 for spots in where.values()), where
    x = {name: float(next(iter(where[name])).split(",")[0]) for name in g.names}
    assert x["x1"] < x["x2"]


def test_elimination_strip_has_one_legend():
    figure = R.elimination_strip(examples.figure1(), "markowitz")
    assert len(figure.legends) == 1
    texts = [t.get_text() for t in figure.legends[0].get_texts()]
    assert texts[:3] == ["input", "intermediate", "output"]
    assert "fill-in edge (created): new partial" in texts
    assert all(ax.get_legend() is None for ax in figure.axes)
    # legend text at 13 pt: at the saved 110 dpi about 20 pixels high, not ~6
    assert figure.legends[0].get_texts()[0].get_fontsize() >= 12



@needs_dot
@pytest.mark.parametrize("ncols", [1, 2, 3])
def test_elimination_strip_legend_stays_inside_the_figure(ncols):
    # the columns were counted as if filled `rows` at a time; matplotlib gives the extra
    # entries to the first columns, so 7 keys in 6 columns ran off the right edge
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = R.elimination_strip(examples.figure1(), "markowitz", ncols=ncols)
    renderer = FigureCanvasAgg(figure).get_renderer()
    box = figure.legends[0].get_window_extent(renderer)
    assert 0 <= box.x0 and box.x1 <= figure.bbox.width, (box, figure.bbox.width)


# ------------------------------------------------------ graphs of arrays
def lab8_graph():
    """Lab 8's two-layer network on a batch of 4 (float32): nine array edges, two of
    them bias additions, with the labels that used to be printed over each other."""
    from minirad import trace
    from minirad.tracing import name
    from minirad.tracing.ops import relu
    from minirad.tracing.rules import softmax_cross_entropy

    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 6)).astype(np.float32)

    def two_layers(W1, b1, W2, b2):
        a = name(relu(name(x @ W1 + b1, "h")), "a")
        return softmax_cross_entropy(name(a @ W2 + b2, "logits"), np.array([0, 2, 1, 0]))
    return trace(two_layers, rng.standard_normal((6, 5)).astype(np.float32),
                        np.zeros(5, np.float32), rng.standard_normal((5, 3)).astype(np.float32),
                        np.zeros(3, np.float32))


def test_array_labels_name_shapes_blocks_bytes_and_the_total():
    g = examples.figure3()
    source = R.render(g, show_ops=True, title="t", batch=3).source
    # bytes by hand: X is 3 x 4 float32 (48 B), a1 3 x 5 (60 B), the softmax's
    # probabilities 3 x 2 (24 B); the mask is rebuilt from a1 > 0, W2 is kept anyway
    for text in ("h1 ∈ R^(3×5)\\nX @ W1", "W2 ∈ R^(5×2)", "y ∈ R\\n", "relu(h1)",
                 "outer\\n48 B", "outer\\n60 B", "mask\\n0 B (rebuilt from a1)",
                 "matmul\\n0 B (W2 kept anyway)", "dense\\n24 B",
                 "retained for the backward pass: 132 B (44 B per example of 3)"):
        assert text in source, text
    assert "dashed" not in source and "legend" not in source
    assert "X @ W1" not in R.render(g).source  # operations only when asked for


def test_injected_projections_are_drawn_distinctly_with_their_k():
    from minirad.randomized.injection import inject_vertex

    dot = R.render(examples.figure3(injected=True))
    injected = [(u, v) for u, v, attrs in edges(dot) if attrs.get("style") == "dashed"]
    assert injected == [("W1", "h1"), ("W2", "h2")]  # the two edges that keep an activation
    assert all(attrs["color"] == R.INJECTED_COLOR for u, v, attrs in edges(dot)
               if (u, v) in injected)
    assert dot.source.count("sampled k=2") == 2 and "2 injected projections" in dot.source
    # sampling 2 of 4 entries of X per row: 3 x 2 float32 and 3 x 2 one-byte indices
    assert "outer\\n24 B\\nsampled k=2" in dot.source
    assert "edge carrying an injected projection" in legend_text(dot)
    g = inject_vertex(examples.figure3(), "a1", 3, "rademacher", axis=1, batch_axis=0, rng=0)
    dot = R.render(g)
    assert nodes(dot)["a1"]["color"] == R.INJECTED_COLOR and nodes(dot)["a1"]["penwidth"] == "2"
    after = [(u, v) for u, v, attrs in edges(dot) if "P k=3" in attrs.get("label", "")]
    assert after == [("a1", "h2")]  # P sits where the paths leave a1
    assert "injected vertex" in legend_text(dot)


def test_injections_are_drawn_on_a_graph_of_numbers_too():
    g = examples.figure1()
    marked = LCG(g.names, g.sources, g.targets, g.partials, g.inputs, g.outputs, g.values,
                 g.ops, injections=[{"kind": "edge", "edge": ["v2", "y"], "method": "sample",
                                     "k": 1}, {"kind": "vertex", "at": "v4", "k": 1}])
    dot = R.render(marked)
    drawn = {(u, v): attrs for u, v, attrs in edges(dot)}
    assert drawn["v2", "y"]["label"] == f"{g.partial('v2', 'y'):.4g}\\nsampled k=1"
    assert drawn["v4", "v5"]["style"] == "dashed" and "P k=1" in drawn["v4", "v5"]["label"]
    assert nodes(dot)["v4"]["color"] == R.INJECTED_COLOR
    assert "retained" not in dot.source  # a graph of numbers: no memory in the title


def test_highlights_on_a_graph_of_arrays():
    from minirad.exact.elimination import Step
    from minirad.graph.operators import OPERATORS

    g = examples.figure3()
    dot = R.render(g, [("W1", "h1", "a1", "h2", "y")])
    # the path multiplies to dy/dW1: one row (y is a number), 20 columns (W1 is 4 x 5)
    assert "path 1: W1 → h1 → a1 → h2 → y  (product: a 1 × 20 block)" in legend_text(dot)
    assert strands(dot)["W1", "h1"] == [R.PATH_COLORS[0]] and strands(dot)["W2", "h2"] == [R.DIM]
    # eliminating a1 by hand: its one fill-in edge h1 -> h2 carries matmul after mask,
    # which the operator algebra multiplies out into one dense 6 x 15 block
    product = OPERATORS.multiply(g.label("a1", "h2"), g.label("h1", "a1"))
    step = Step("a1", ("h1",), ("h2",), (("h1", "h2"),), (), (), 1, 0, (product,), ())
    drawn = {(u, v): attrs for u, v, attrs in edges(R.render(g, step))}
    assert product.shape == (6, 15) and drawn["h1", "h2"]["label"] == "new dense"
    assert drawn["h1", "h2"]["color"] == R.FILL_IN_COLOR
    factors = {(u, v): attrs for u, v, attrs in edges(R.render(g, {"h1": 1.0, "a1": 2.0}))}
    assert factors["h1", "a1"]["label"] == "factor 2, w = 2 × mask"
    assert factors["a1", "h2"]["style"] == "dashed"  # h2 is not listed: dropped


@pytest.mark.slow
def test_array_pictures_with_and_without_dot_are_deterministic(tmp_path, monkeypatch):
    g = examples.figure3(injected=True)
    for dot_installed in (True, False):
        if dot_installed and not R.has_dot():
            continue
        monkeypatch.setattr(R, "has_dot", lambda installed=dot_installed: installed)
        monkeypatch.setattr(R, "_warned_missing_dot", True)
        first = R.save_drawing(R.render(g, title="t", batch=3), tmp_path / f"a{dot_installed}.png")
        again = R.save_drawing(R.render(g, title="t", batch=3), tmp_path / f"b{dot_installed}.png")
        data = open(first, "rb").read()
        assert data[:8] == PNG_MAGIC and len(data) > 5000 and open(again, "rb").read() == data
    monkeypatch.setattr(R, "has_dot", lambda: False)
    dot_file = R.save_drawing(R.render(g), tmp_path / "g.dot")  # the DOT text needs no dot program
    assert open(dot_file, encoding="utf-8").read().startswith("digraph lcg {")
    with pytest.raises(TypeError, match="render works on an LCG .*, not ndarray"):
        R.render(np.ones(3))


def test_a_name_in_angle_brackets_is_quoted_not_read_as_html():
    g = LCG.from_edges([("<lambda>", "y", 2.0)], inputs=["<lambda>"], outputs=["y"])
    source = R.render(g).source
    assert '"<lambda>" [label="<lambda>"' in source and '"<lambda>" -> y' in source
    if R.has_dot():  # dot reads it: the name is drawn as text
        assert "&lt;lambda&gt;" in R.render(g).pipe(format="svg").decode()


def test_blocks_are_drawn_as_their_matrices_and_large_ones_listed():
    from minirad.draw.patterns import plot_blocks

    g = examples.figure3()
    figure = plot_blocks(g)
    blocks = [ax for ax in figure.axes if ax.get_label() != "<colorbar>"]
    assert len(blocks) == g.n_edges  # and a colour bar beside each
    assert len(figure.axes) == 2 * g.n_edges
    first = figure.axes[0].images[0].get_array()
    np.testing.assert_array_equal(first, g.labels[0].to_dense())
    # dh1/dW1 for h1 = X @ W1: I_3 ⊗ ... one entry of X per (h1, W1) pair that meet: 3 x 4 x 5
    assert "15 × 20, 60 nonzero" in figure.axes[0].get_title()
    small = plot_blocks(g, max_entries=10)
    assert not small.axes[0].images and "too large to draw" in small.axes[0].texts[0].get_text()


def _boxes(figure):
    """The display box of every text drawn in the graph's axes (vertices and edge
    labels, with their padding), after the figure is laid out as it is saved."""
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    ax = figure.axes[0]
    return [(t.get_text(), (t.get_bbox_patch() or t).get_window_extent(renderer))
            for t in ax.texts]


@pytest.mark.slow
@pytest.mark.parametrize("picture", [
    lambda: R.draw_matplotlib(examples.figure3(), show_ops=True, batch=3),
    lambda: R.draw_matplotlib(examples.figure3(injected=True), show_ops=True, batch=3),
    lambda: R.draw_matplotlib(lab8_graph(), title="lab 8", batch=4),
    lambda: R.draw_matplotlib(examples.figure1(), sample_paths(examples.figure1(), 1, rng=0),
                              FIGURE1_PATHS, R.Eliminating("v5"), show_ops=True,
                              show_values=True),
    lambda: R.draw_matplotlib(examples.interleaved(3, 3), show_values=True),
    # dense enough that 18 pairs of labels overlapped at the middle of their edges
    lambda: R.draw_matplotlib(examples.random_layered(4, 3, 3, rng=0)),
    lambda: R.draw_matplotlib(examples.random_dag(3, 8, 2, rng=1)),
], ids=["figure 3", "figure 3 sampled", "lab 8", "figure 1 highlighted", "interleaved",
        "random layered", "random dag"])
def test_matplotlib_labels_do_not_overlap(picture):
    boxes = _boxes(picture())
    assert len(boxes) > 5
    for i, (text, box) in enumerate(boxes):
        for other, second in boxes[i + 1:]:
            width = min(box.x1, second.x1) - max(box.x0, second.x0)
            height = min(box.y1, second.y1) - max(box.y0, second.y0)
            assert width <= 0.5 or height <= 0.5, f"{text!r} overlaps {other!r}"


def _texts_lines_run_through(figure) -> list[str]:
    """The texts of a matplotlib drawing that one of its edges' lines runs through, as
    drawn: each line (the arrows' paths and the bends between them) sampled in display
    coordinates against each text's own extent (shrunk a little: a line may touch it)."""
    from matplotlib.patches import FancyArrowPatch

    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    ax = figure.axes[0]
    lines = [line.get_transform().transform(line.get_xydata()) for line in ax.lines]
    for patch in ax.patches:
        if isinstance(patch, FancyArrowPatch):
            path = patch.get_transform().transform_path(patch.get_path())
            lines += path.to_polygons(closed_only=False)
    t = np.linspace(0.0, 1.0, 60)[:, None]
    crossed = []
    for text in ax.texts:
        box = text.get_window_extent(renderer).shrunk(0.9, 0.8)
        if any(np.any((q[:, 0] > box.x0) & (q[:, 0] < box.x1) & (q[:, 1] > box.y0)
                      & (q[:, 1] < box.y1))
               for line in lines for q in (a + t * (b - a) for a, b in zip(line, line[1:]))):
            crossed.append(text.get_text())
    return crossed


def _figure1_steps():
    result = eliminate(examples.figure1(), "markowitz", keep_graphs=True)
    return [(before, step) for before, step in zip(result.graphs, result.steps)]


@pytest.mark.parametrize("picture", [
    lambda: R.draw_matplotlib(examples.figure1(), show_ops=True, show_values=True),
    *[lambda i=i: R.draw_matplotlib(*_figure1_steps()[i]) for i in range(4)],
    lambda: R.draw_matplotlib(examples.random_dag(3, 8, 2, rng=1)),
], ids=["figure 1", "step 1", "step 2", "step 3", "step 4", "random dag"])
def test_matplotlib_edge_labels_are_not_crossed_by_a_line(picture):
    """A label beside one segment of a bent edge was crossed by the edge's next segment
    (figure1_elimination without dot: "new 13.44", "new 0.569"; the issue: "0.5" read
    "0:5"); on these graphs every label has room clear of every line."""
    assert _texts_lines_run_through(picture()) == []
