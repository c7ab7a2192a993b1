"""Plots: each returns a Figure with the expected axes, lines, scales and labels,
and leaves pyplot's state alone."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from minirad import examples
from minirad.draw import plots
from minirad.exact.orders import OPTIMAL_LIMIT

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def no_pyplot_figures():
    """The library builds Figures without pyplot: nothing to show, nothing leaked."""
    before = plt.get_fignums()
    yield
    assert plt.get_fignums() == before


def test_heatmaps_share_a_scale_centred_on_zero(tmp_path):
    exact = np.array([[1.0, -2.0], [0.5, 0.0]])
    mean = np.array([[1.5, -2.0], [0.5, 0.0]])
    single = np.array([[3.0, -1.0], [0.0, 0.0]])
    std = np.array([[0.5, 0.25], [0.0, 0.0]])
    fig = plots.jacobian_heatmaps(exact, mean, single, std, n=50, k=2,
                                  input_names=["a", "b"], output_names=["p", "q"])
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 8  # five heatmaps, three colour bars
    heatmaps = fig.axes[:5]
    limits = [ax.images[0].get_clim() for ax in heatmaps]
    # fitted to the exact and mean panels; the single sample's 3 is clipped
    assert limits[0] == limits[1] == limits[2] == (-2.0, 2.0)
    assert limits[3] == (0.0, 0.5)
    assert limits[4] == (-plots.Z_LIMIT, plots.Z_LIMIT)  # z-scores, centred on 0
    assert heatmaps[0].images[0].colorbar.extend == "both"
    titles = [ax.get_title() for ax in heatmaps]
    assert "n=50" in titles[1] and "k=2" in titles[2] and "k=2" in titles[3]
    assert titles[2].endswith("colours clipped at ±2")
    assert "clipped" not in titles[0] + titles[1] + titles[3]
    assert titles[4].startswith("mean − exact, in standard errors")
    # mean - exact in standard errors: (1.5 - 1) / (0.5 / sqrt(50)); entries that cannot vary: 0
    z = heatmaps[4].images[0].get_array()
    assert z[0, 0] == pytest.approx(0.5 / (0.5 / np.sqrt(50))) and z[1, 1] == 0.0
    assert [t.get_text() for t in heatmaps[0].get_xticklabels()] == ["a", "b"]
    assert {t.get_text() for t in heatmaps[0].texts} == {"1", "-2", "0.5", "0"}
    ink = {t.get_text(): t.get_color() for t in heatmaps[2].texts}
    assert ink["3"] == "white" and ink["0"] == "black"  # readable on the clipped dark red
    fig.savefig(tmp_path / "heat.png")
    assert (tmp_path / "heat.png").read_bytes()[:8] == PNG_MAGIC


def test_heatmaps_unclipped_when_the_sample_fits():
    J = np.array([[1.0, -2.0]])
    fig = plots.jacobian_heatmaps(J, J, J / 2, np.ones((1, 2)), k=1)
    assert fig.axes[2].get_title() == "one sample (k=1)"
    assert fig.axes[0].images[0].colorbar.extend == "neither"
    assert len(fig.axes) == 6  # without n there are no standard errors: no z-score panel


def test_the_z_panel_matches_the_comparison_and_is_centred_on_zero():
    from minirad.randomized.experiments import compare

    g = examples.two_outputs()
    result = compare(g, k=1, n=400, rng=5)
    fig = plots.plot_comparison(g, result, k=1)
    panel = fig.axes[4]
    # an independent route to the same numbers: compare's own z = (mean - exact) / stderr
    assert np.allclose(panel.images[0].get_array(), result.z)
    assert panel.images[0].get_cmap().name == "PuOr_r"  # diverging, unlike the Jacobian's
    low, high = panel.images[0].get_clim()
    assert low == -high  # centred on 0
    shown = {t.get_text() for t in panel.texts}
    assert shown == {f"{z:+.1f}" for z in result.z.ravel()}


def test_z_scores_of_entries_that_cannot_vary():
    exact = np.array([1.0, 2.0, 3.0])
    mean = np.array([1.0, 2.0 + 1e-14, 3.5])
    std = np.zeros(3)
    z = plots.z_scores(exact, mean, std, 100)
    # exact to rounding: 0; a zero-variance miss is a bias no z-score measures: NaN
    assert z[0] == 0.0 and z[1] == 0.0 and np.isnan(z[2])


def test_heatmaps_refuse_mismatched_shapes():
    with pytest.raises(ValueError, match="single has shape"):
        plots.jacobian_heatmaps(np.ones((1, 2)), np.ones((1, 2)), np.ones((2, 2)),
                                np.ones((1, 2)))
    with pytest.raises(ValueError, match="input_names"):
        plots.jacobian_heatmaps(np.ones(2), np.ones(2), np.ones(2), np.ones(2),
                                input_names=["only one"])


def test_plot_compare_names_the_graph_vertices():
    g = examples.two_outputs()
    fig = plots.plot_compare(g, k=2, n=300, rng=0)
    assert len(fig.axes) == 8
    assert fig.axes[1].get_title() == "mean of n=300 samples"
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["y[0]", "y[1]"]
    assert "k=2" in fig.get_suptitle()
    assert "k=50% of out-edges" in plots.plot_compare(g, k=0.5, n=20, rng=0).axes[2].get_title()


def test_plot_compare_can_show_the_exact_std_under_its_own_title():
    from minirad.randomized.sampling import path_sampling_variance

    g = examples.figure1()
    sampled = plots.plot_compare(g, n=50, rng=0)
    exact = plots.plot_compare(g, n=50, rng=0, exact_std=True, title="my\ntitle")
    assert exact.get_suptitle() == "my\ntitle"
    assert "k=1" in sampled.get_suptitle()
    assert np.allclose(exact.axes[3].images[0].get_array(),
                       np.sqrt(path_sampling_variance(g, 1)))
    assert not np.allclose(sampled.axes[3].images[0].get_array(),
                           exact.axes[3].images[0].get_array())
    for a, b in zip(sampled.axes[:3], exact.axes[:3]):  # the same samples
        assert np.array_equal(a.images[0].get_array(), b.images[0].get_array())


@pytest.mark.parametrize("plot", [plots.plot_compare, plots.plot_convergence,
                                  plots.plot_variance_vs_k])
def test_plots_of_one_graph_refuse_anything_else(plot):
    with pytest.raises(TypeError, match=f"{plot.__name__} works on an LCG"):
        plot({"f": examples.figure1()})


def test_plot_convergence_is_log_log_with_expected_lines():
    fig = plots.plot_convergence(examples.lecture(), ks=[1, 2, 4], n=200, rng=1)
    (ax,) = fig.axes
    assert ax.get_xscale() == ax.get_yscale() == "log"
    lines = ax.get_lines()
    assert len(lines) == 3 * 2 + 1  # a curve and its expected error per k, one legend key
    dotted = [line for line in lines if line.get_linestyle() == ":" and len(line.get_xdata())]
    for line in dotted:  # the expected error falls exactly as 1/sqrt(n)
        x, y = line.get_xdata(), line.get_ydata()
        assert np.allclose(y * np.sqrt(x), y[0])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == ["k=1", "k=2", "k=4"]
    assert "number of samples" in ax.get_xlabel() and "relative error" in ax.get_ylabel()


def test_plots_take_a_title():
    g = examples.figure1()
    figures = [plots.plot_convergence(g, ks=[1], n=20, rng=0, title="my\ntitle"),
               plots.plot_variance_vs_depth(width=2, depths=[1, 2], title="my\ntitle"),
               plots.plot_elimination_costs({"f": g}, title="my\ntitle")]
    assert [fig.axes[0].get_title() for fig in figures] == ["my\ntitle"] * 3
    # two panels: the title goes above both
    assert plots.plot_variance_vs_k(g, ks=[1, 2], title="my\ntitle").get_suptitle() == \
        "my\ntitle"


def test_plot_convergence_same_seed_same_picture():
    a = plots.plot_convergence(examples.figure1(), ks=[1], n=50, rng=3).axes[0].get_lines()[0]
    b = plots.plot_convergence(examples.figure1(), ks=[1], n=50, rng=3).axes[0].get_lines()[0]
    assert np.array_equal(a.get_ydata(), b.get_ydata(), equal_nan=True)
    with pytest.raises(ValueError, match="ks"):
        plots.plot_convergence(examples.figure1(), ks=[])


def test_plot_variance_vs_depth_both_families():
    fig = plots.plot_variance_vs_depth(width=3, depths=[1, 2, 3, 4], fraction=0.5,
                                       methods=("paths", "injection"))
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    lines = ax.get_lines()
    assert len(lines) == 4  # two families by two methods
    independent, interleaved = lines[0].get_ydata(), lines[1].get_ydata()
    assert np.allclose(independent, independent[0])  # flat: Section 3.3 of the paper
    assert interleaved[-1] > interleaved[0]  # grows with depth
    assert "independent" in lines[0].get_label() and "interleaved" in lines[1].get_label()


def test_plot_variance_vs_k():
    from minirad import jacobian
    from minirad.randomized.sampling import path_sampling_variance

    g = examples.figure1()
    ks = [1, 2, 4]
    fig = plots.plot_variance_vs_k(g, ks=ks, n=500, rng=0)
    whole, each = fig.axes
    # quantities normalised differently live on different axes, each saying which
    assert "\\|J\\|^2" in whole.get_ylabel() and "J_{ij}^2" in each.get_ylabel()
    J = jacobian(g)
    variances = np.array([path_sampling_variance(g, k) for k in ks])
    exact_total, *rest = whole.get_lines()
    assert np.allclose(exact_total.get_ydata(), variances.sum(axis=(1, 2)) / (J**2).sum())
    assert rest[-1].get_label() == "from n=500 samples per k"
    assert rest[-1].get_color() not in {line.get_color() for line in whole.get_lines()[:-1]}
    assert np.all(np.diff(exact_total.get_ydata()) < 0)  # more draws, less variance
    # dy/dx1 never varies (its two paths have one product): no line, no legend entry, a note
    (entry, guide) = each.get_lines()
    assert entry.get_label() == "dy/dx2"
    assert np.allclose(entry.get_ydata(), variances[:, 0, 1] / J[0, 1] ** 2)
    assert [t.get_text() for t in each.texts] == [
        "dy/dx1: variance exactly 0 at every k (not drawn on the log axis)"]
    for ax in fig.axes:
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        drawn = [line.get_label() for line in ax.get_lines()
                 if np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any()]
        assert legend == drawn  # every legend entry has a line
        assert ax.get_xlabel() == "k, draws per vertex"
    # the 1/k guides run above every curve, so none hides under them, with slope exactly -1
    for ax in fig.axes:
        guide = next(line for line in ax.get_lines() if "slope guide" in line.get_label())
        x, y = np.asarray(guide.get_xdata()), np.asarray(guide.get_ydata())
        assert np.allclose(x * y, x[0] * y[0])
        for line in ax.get_lines():
            if line is not guide:
                assert np.all(y > 2 * np.asarray(line.get_ydata(), dtype=float))
    assert "fraction" in plots.plot_variance_vs_k(g, ks=[0.5, 1.0]).axes[0].get_xlabel()
    with pytest.raises(ValueError, match="not a mix"):
        plots.plot_variance_vs_k(g, ks=[1, 0.5])


def test_plot_variance_vs_k_with_many_entries_has_one_panel():
    g = examples.random_dag(3, 6, 3, rng=0)  # 9 entries: only the whole Jacobian
    fig = plots.plot_variance_vs_k(g, ks=[1, 2])
    assert len(fig.axes) == 1 and "\\|J\\|^2" in fig.axes[0].get_ylabel()


def test_plot_elimination_costs_marks_infeasible_optimal():
    big = examples.random_dag(2, OPTIMAL_LIMIT + 1, 1, rng=0)
    graphs = {"Figure 1": examples.figure1(), "big": big}
    fig = plots.plot_elimination_costs(graphs)
    (ax,) = fig.axes
    assert len(ax.patches) == 2 * 4
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("n/a") == 1
    assert {"6", "5"} <= set(texts)  # Figure 1: 6 by forward, 5 by the optimal order
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Figure 1", "big"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "forward", "reverse", "markowitz", "optimal"]
    assert "multiplications" in ax.get_ylabel()


def test_plot_elimination_costs_bad_input():
    with pytest.raises(TypeError, match="dict"):
        plots.plot_elimination_costs([examples.figure1()])
    with pytest.raises(TypeError, match="graph 'f' is a str, not an LCG"):
        plots.plot_elimination_costs({"f": "figure1"})
    with pytest.raises(ValueError, match="by must be"):
        plots.plot_elimination_costs({"f": examples.figure1()}, by="flops")


def test_plot_comparison_of_a_graph_of_arrays_names_every_entry(tmp_path):
    """Issue 39: on a graph of arrays the heatmaps have one column per input entry; they
    were given one name per input vertex and refused ("input_names has 2 names for 30
    entries").  Long rows get at most 24 spread tick labels and no numbers in the cells;
    an entry whose exact variance is 0 shows a spread of 0, not its rounding noise."""
    from minirad.randomized.experiments import compare

    g = examples.figure3()                            # y = f(W1 (4 x 5), W2 (5 x 2))
    result = compare(g, k=1, n=20, rng=0)
    fig = plots.plot_comparison(g, result, k=1)
    columns = [f"W1[{i},{j}]" for i in range(4) for j in range(5)] + \
              [f"W2[{i},{j}]" for i in range(5) for j in range(2)]
    assert fig.axes[0].images[0].get_array().shape == (1, 30)
    shown = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    positions = fig.axes[0].get_xticks()
    assert shown == [columns[int(p)] for p in positions] and len(shown) == 24
    assert shown[0] == "W1[0,0]" and shown[-1] == "W2[4,1]"
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["y"]
    assert not any(ax.texts for ax in fig.axes[:5])   # 30 columns: too narrow for numbers
    assert not result.varies.any()                    # a chain: k=1 keeps the only edge
    assert not fig.axes[3].images[0].get_array().any()
    fig.savefig(tmp_path / "arrays.png")
    assert (tmp_path / "arrays.png").read_bytes()[:8] == PNG_MAGIC
