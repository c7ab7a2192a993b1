"""The explorable page in a real browser: a headless Chromium clicks through it.

Each number the page shows is read off the page and held against minirad's
own function: elimination counts against ``eliminate``, running means
against ``sampled_jacobians``, bytes against ``memory``.  Skipped, saying
why, where no Chromium (or websocket-client) is installed.
"""

import json

import browser
import numpy as np
import pytest
from oracles import small_mlp

from minirad import (
    LCG,
    count_paths,
    eliminate,
    examples,
    retained_memory,
    sample_activations,
    sample_paths,
    sampled_jacobians,
)
from minirad.draw.explore import explore
from minirad.exact.sweeps import reverse_sweep

pytestmark = [pytest.mark.skipif(browser.why_not() is not None,
                                 reason=f"browser tests: {browser.why_not()}"),
              # one browser for the module: one worker runs it (--dist loadgroup)
              pytest.mark.xdist_group("explore_browser")]


@pytest.fixture(scope="module")
def chromium():
    driver = browser.Browser()
    yield driver
    driver.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    made = {}
    one_edge = LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=["y"])
    for name, g in (("figure1", examples.figure1()), ("lecture", examples.lecture()),
                    ("mlp", small_mlp()[0]), ("dag", examples.random_dag(3, 14, 2, rng=0)),
                    ("one_edge", one_edge)):
        made[name] = (g, explore(g).save(folder / f"{name}.html"))
    return made


def opened(chromium, pages, name, **size):
    g, path = pages[name]
    chromium.errors.clear()
    chromium.requests.clear()
    chromium.open(path, **size)
    return g


def printed(x, digits):
    """x as the page prints it: to ``digits`` significant digits."""
    return float(f"{x:.{digits}g}")


def test_clicking_vertices_counts_as_eliminate_does(chromium, pages):
    g = opened(chromium, pages, "figure1")
    chromium.click("#tab-eliminate")
    order = [g.names[v] for v in np.random.default_rng(0).permutation(g.intermediates)]
    for i, name in enumerate(order, 1):
        chromium.click(f'[data-vertex="{g.index(name)}"]')
        expected = eliminate(g, order[:i])
        assert int(chromium.text("#elim-mults")) == expected.multiplications
        assert int(chromium.text("#elim-adds")) == expected.additions
    jacobian = eliminate(g, order).jacobian
    for j in range(len(g.inputs)):
        assert float(chromium.text(f"#jac-0-{j}")) == printed(jacobian[0, j], 8)
    chromium.click("#elim-undo")  # one step back: the counts of the order less its last vertex
    assert int(chromium.text("#elim-mults")) == eliminate(g, order[:-1]).multiplications
    assert chromium.errors == []


@pytest.mark.parametrize("strategy", ["forward", "reverse", "markowitz", "optimal"])
def test_playing_minirads_orders_step_by_step(chromium, pages, strategy):
    g = opened(chromium, pages, "figure1")
    chromium.click("#tab-eliminate")
    chromium.click(f"#play-{strategy}")
    chromium.click("#elim-pause")
    result = eliminate(g, strategy)
    done = int(chromium.text("#elim-done"))
    for i in range(done + 1, len(result.order) + 1):
        chromium.click("#elim-step")
        assert int(chromium.text("#elim-done")) == i
        assert int(chromium.text("#elim-mults")) == eliminate(g, result.order[:i]).multiplications
        assert chromium.text("#elim-check").startswith("✓")  # the page's step is minirad's
    assert int(chromium.text("#elim-mults")) == result.multiplications
    assert chromium.errors == []


def test_the_pages_step_is_minirads_bit_for_bit(chromium, pages):
    """Every intermediate graph of several orders, label for label, equals eliminate's."""
    g = opened(chromium, pages, "dag")
    rng = np.random.default_rng(1)
    orders = [list(rng.permutation(g.intermediates).tolist()) for _ in range(4)]
    states = chromium.evaluate(f"""(() => {{
        const page = window.miniradExplore;
        return {json.dumps(orders)}.map((order) => {{
            const work = page.freshWorking();
            return order.map((v) => {{
                const step = page.eliminateStep(work, v);
                const edges = [];
                work.pred.forEach((into, t) => {{
                    if (into) into.forEach((d, s) => edges.push([s, t, d]));
                }});
                return [step.multiplications, step.additions, edges];
            }});
        }});
    }})()""")
    for order, steps in zip(orders, states):
        result = eliminate(g, order, keep_graphs=True)
        for (mults, adds, edges), step, after in zip(steps, result.steps, result.graphs[1:]):
            assert (mults, adds) == (step.multiplications, step.additions)
            page_edges = {(g.names[s], g.names[t]): d for s, t, d in edges}
            minirad_edges = {(after.names[s], after.names[t]): d for s, t, d in after.edges()}
            assert page_edges == minirad_edges  # the same doubles, not just close ones
    assert chromium.errors == []


def test_drawn_samples_show_sampled_jacobians_running_mean(chromium, pages):
    g = opened(chromium, pages, "lecture")
    chromium.click("#tab-sample")
    chromium.evaluate("""(() => {
        for (const [id, value] of [["sample-k", "2"], ["sample-seed", "1"]]) {
            const select = document.getElementById(id);
            select.value = value;
            select.dispatchEvent(new Event("change"));
        }
    })()""")
    rng = np.random.default_rng(1)  # the 12 runs the page steps through, then a batch
    first = [sample_paths(g, 2, rng=rng).jacobian.ravel() for _ in range(12)]
    estimates = np.concatenate([first, sampled_jacobians(g, 2, 88, rng=rng).reshape(88, -1)])
    for button, count in (("#draw-1", 1), ("#draw-10", 11), ("#draw-all", 100)):
        chromium.click(button)
        first = estimates[:count]
        for e in range(first.shape[1]):
            assert float(chromium.text(f"#sample-mean-{e}")) == printed(first[:, e].mean(), 6)
            assert float(chromium.text(f"#sample-last-{e}")) == printed(first[-1, e], 6)
            if count > 1:
                stderr = first[:, e].std(ddof=1) / np.sqrt(count)
                assert float(chromium.text(f"#sample-stderr-{e}")) == printed(stderr, 3)
    exact = reverse_sweep(g).jacobian.ravel()
    assert float(chromium.text("#sample-exact-1")) == printed(exact[1], 6)
    assert chromium.evaluate("document.querySelectorAll('#mean-plot polyline').length") == 1
    assert chromium.errors == []


def test_memory_slider_shows_minirads_bytes(chromium, pages):
    g = opened(chromium, pages, "mlp")
    chromium.click("#tab-memory")
    assert chromium.text("#memory-bytes") == f"{retained_memory(g).total:,.0f} B"
    chromium.evaluate("document.getElementById('memory-slider').focus()")
    for f in (1.0, 0.5, 0.25, 0.1, 0.05):
        chromium.key("ArrowRight")
        m = retained_memory(sample_activations(g, f, rng=0))
        shown = chromium.text("#memory-bytes").replace(",", "").removesuffix(" B")
        assert float(shown) == m.total
        for e, charged in enumerate(m.per_edge):
            cell = chromium.text(f"#memory-edge-{e}").replace(",", "").removesuffix(" B")
            assert float(cell) == charged
        assert f"f = {f:g}" in chromium.text("#memory-fraction")
    assert chromium.errors == []


def test_keyboard_alone_reaches_every_panel_and_eliminates(chromium, pages):
    g = opened(chromium, pages, "figure1")
    chromium.evaluate("document.getElementById('tab-exact').focus()")
    selected = []
    for _ in range(4):
        chromium.key("ArrowRight")
        selected.append(chromium.evaluate(
            "document.querySelector('[role=tab][aria-selected=true]').dataset.mode"))
    assert selected == ["eliminate", "paths", "sample", "exact"]
    chromium.key("ArrowRight")  # back to Eliminate, then Tab through the page to v3
    v3 = g.index("v3")
    for _ in range(40):
        chromium.key("Tab")
        if chromium.evaluate("document.activeElement.dataset.vertex") == str(v3):
            break
    else:
        pytest.fail("Tab never reached vertex v3")
    chromium.key("Enter")
    assert int(chromium.text("#elim-mults")) == eliminate(g, ["v3"]).multiplications
    assert chromium.errors == []


def test_focusing_a_vertex_shows_its_value_operation_and_partials(chromium, pages):
    g = opened(chromium, pages, "figure1")
    chromium.evaluate(f"document.querySelector('[data-vertex=\"{g.index('v4')}\"]').focus()")
    info = chromium.text("#vertex-info")
    assert "v4 = v3 * x2" in info
    assert f"value {printed(g.value('v4'), 8):g}" in info
    assert f"∂v4/∂x2 = {printed(g.partial('x2', 'v4'), 8):g}" in info


def test_no_network_and_readable_on_a_phone(chromium, pages):
    opened(chromium, pages, "lecture", width=390, height=844, mobile=True)
    assert chromium.requests == [f"file://{pages['lecture'][1]}"]
    # nothing wider than the screen: the panel goes below the graph
    assert chromium.evaluate("document.documentElement.scrollWidth") <= 390
    graph, panel = chromium.evaluate("""[document.getElementById('graph-box'),
        document.getElementById('panel-exact')].map((n) => n.getBoundingClientRect().top)""")
    assert panel > graph
    assert chromium.errors == []


@pytest.mark.parametrize("name", ["dag", "one_edge", "mlp"])
def test_every_panel_opens_and_works_without_error(chromium, pages, name):
    opened(chromium, pages, name)
    for tab in chromium.evaluate("[...document.querySelectorAll('[role=tab]:not([hidden])')]"
                                 ".map((t) => t.id)"):
        chromium.click(f"#{tab}")
        for button in chromium.evaluate(
                "[...document.querySelectorAll('[role=tabpanel]:not([hidden]) button')]"
                ".filter((b) => !b.disabled && b.id).map((b) => b.id)"):
            chromium.click(f"#{button}")
            chromium.evaluate("document.getElementById('elim-pause')?.click()")
    assert chromium.errors == []


@pytest.mark.parametrize("scale", [1e10, 1e150])
def test_the_plots_of_huge_estimates_have_finite_coordinates(chromium, tmp_path, scale):
    """Issue 39: with an exact variance of 1e40 the y range of the variance plot collapsed
    to one number (1e40 +- 1 is 1e40), every coordinate NaN and the exact line missing;
    with entries near 1e300 the range itself overflows. The oracle for the exact line:
    where path_sampling_variance puts it on the printed axis."""
    from minirad import path_sampling_variance

    g = LCG.from_edges([("x", "a", scale), ("x", "b", 1.0), ("a", "y", scale),
                        ("b", "y", 1.0)], inputs=["x"], outputs=["y"])
    chromium.errors.clear()
    chromium.open(explore(g).save(tmp_path / "huge.html"))
    chromium.click("#tab-sample")
    for button in ("#draw-1", "#draw-10", "#draw-all"):
        chromium.click(button)
        coordinates = chromium.evaluate("""[...document.querySelectorAll(
            '#mean-plot *, #variance-plot *')].flatMap((e) => ['x1', 'x2', 'y1', 'y2', 'points']
            .map((a) => e.getAttribute(a)).filter((v) => v !== null))""")
        assert coordinates and not any("NaN" in c or "Infinity" in c for c in coordinates)
    assert chromium.errors == []
    chromium.click("#tab-exact")    # an edge label is a number of a few digits, not 21
    labels = chromium.evaluate("[...document.querySelectorAll('text.elabel')]"
                               ".map((e) => e.textContent)")
    assert labels and max(map(len, labels)) <= 9, labels
    assert f"{scale:.0e}" in labels      # 1e+10, as Python writes it
    if scale > 1e100:   # the variance, 1e600, is beyond any float: said, not NaN
        with pytest.raises(ValueError, match="the exact variance of the estimate: dy/dx "
                                             "overflowed to inf"):
            path_sampling_variance(g)
        assert "overflowed" in chromium.evaluate("document.body.textContent")
        return
    variance = float(path_sampling_variance(g)[0, 0])   # 1e40
    top, bottom = (float(chromium.evaluate(
        f"document.querySelectorAll('#variance-plot text')[{i}].textContent")) for i in (0, 1))
    y = float(chromium.evaluate(
        "document.querySelector('#variance-plot line.exact').getAttribute('y1')"))
    # the dashed line sits where the axis labels put the exact variance (plot rows 24..128)
    assert y == pytest.approx(24 + 104 * (top - variance) / (top - bottom), abs=6.0)  # 2 digits


# ------------------------------------------------------------ issue 42
def test_the_open_tab_is_in_the_address_and_the_address_opens_it(chromium, pages):
    opened(chromium, pages, "figure1")
    for tab in ("sample", "paths", "exact"):
        chromium.click(f"#tab-{tab}")
        assert chromium.evaluate("location.hash") == f"#{tab}"
    chromium.open("about:blank")
    chromium.open(f"file://{pages['figure1'][1]}#eliminate")
    assert chromium.evaluate(
        "document.querySelector('[role=tab][aria-selected=true]').dataset.mode") == "eliminate"
    assert chromium.evaluate("window.scrollY") == 0  # opened from the top, title in view
    assert chromium.errors == []


def test_edge_labels_sit_beside_their_edges_on_a_background(chromium, pages):
    opened(chromium, pages, "figure1")
    crossed = chromium.evaluate("""(() => {
        const found = [];
        for (const label of document.querySelectorAll('.elabel-box')) {
            const box = label.querySelector('rect').getBBox();
            const edge = `.edge[data-edge="${label.dataset.edge}"] path.line`;
            const path = document.querySelector(edge);
            const length = path.getTotalLength();
            for (let s = 0; s <= length; s += 1) {
                const p = path.getPointAtLength(s);
                if (p.x > box.x && p.x < box.x + box.width
                        && p.y > box.y && p.y < box.y + box.height) {
                    found.push(label.dataset.edge); break;
                }
            }
        }
        return found;
    })()""")
    labels = chromium.evaluate("document.querySelectorAll('.elabel-box rect.elabel-bg').length")
    assert labels == pages["figure1"][0].n_edges
    assert crossed == []


def test_the_variance_plot_does_not_go_below_zero(chromium, pages):
    opened(chromium, pages, "lecture")
    chromium.click("#tab-sample")
    chromium.click("#draw-all")
    lowest = chromium.evaluate("document.querySelectorAll('#variance-plot text')[1].textContent")
    assert float(lowest) >= 0
    assert chromium.errors == []


def test_a_graph_of_arrays_eliminates_lists_paths_and_samples_its_blocks(chromium, pages):
    g = opened(chromium, pages, "mlp")
    shown = chromium.evaluate("[...document.querySelectorAll('[role=tab]:not([hidden])')]"
                              ".map((t) => t.dataset.mode)")
    assert shown == ["exact", "eliminate", "paths", "sample", "memory"]
    chromium.click("#tab-eliminate")
    order = [g.names[v] for v in np.random.default_rng(3).permutation(g.intermediates)]
    for i, name in enumerate(order, 1):
        chromium.click(f'[data-vertex="{g.index(name)}"]')
        assert int(chromium.text("#elim-mults")) == eliminate(g, order[:i]).multiplications
    assert chromium.evaluate("document.querySelectorAll('#elim-jacobian-blocks li').length") \
        == len(g.inputs) * len(g.outputs)
    chromium.click("#tab-paths")
    assert chromium.text("#path-count").startswith(f"{count_paths(g)[0, 0]} path")
    chromium.click("#tab-sample")
    chromium.evaluate("""(() => { const s = document.getElementById('sample-inside');
        s.value = '1'; s.dispatchEvent(new Event('change')); })()""")
    s = sample_paths(g, 1, rng=np.random.default_rng(0), entries=1)
    cells = chromium.evaluate("document.querySelectorAll('rect.cell.kept').length")
    assert cells == sum(int(np.count_nonzero(w)) for w in s.inside.values()) > 0
    chromium.click("#draw-1")
    assert float(chromium.text("#sample-last-0")) == printed(s.jacobian.ravel()[0], 6)
    assert chromium.errors == []


def test_memory_of_a_graph_with_nothing_to_sample_has_no_slider(chromium, tmp_path):
    from minirad import trace

    g = trace(lambda x: np.sin(x).sum(), np.ones(3))
    page = explore(g).save(tmp_path / "nothing.html")
    chromium.open(page)
    chromium.click("#tab-memory")
    assert chromium.evaluate("document.getElementById('memory-slider-line').hidden")
    assert "nothing to sample" in chromium.text("#memory-note")
    assert chromium.errors == []
