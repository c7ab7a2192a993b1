"""The figure gallery: every picture in ``figures/``, rebuilt by one command.

``minirad figures`` calls :func:`build_figures`, which draws the paper's
Figure 1 graph (its partials, its four paths, one Algorithm 1 sample and
its vertex elimination) and the randomized-AD plots (sampled Jacobians,
convergence, variance against depth and against k, elimination costs).
Every random choice comes from a fixed seed (:data:`SEEDS`) and the files
carry no timestamps, so building twice gives the same bytes.  Without the
graphviz ``dot`` program the graph drawings fall back to matplotlib.

The figures, in the order they are built (``figures/README.md`` says what
to look for in each):

>>> [figure.name for figure in FIGURES]  # doctest: +NORMALIZE_WHITESPACE
['figure1_lcg', 'figure1_paths', 'figure1_sample', 'figure1_elimination',
 'interleaved_heatmaps', 'convergence', 'variance_vs_depth', 'variance_vs_k',
 'elimination_costs', 'figure3_vector_lcg', 'sparsity', 'adjoint_reintegration',
 'edge_beats_vertex', 'adjoint_convergence', 'symbolic_swell', 'gradient_graph',
 'mode_costs']
>>> figure_files()[:3]
['figure1_lcg.png', 'figure1_lcg.svg', 'figure1_paths.png']

Each entry draws its own files; building all of them takes a few seconds:

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> [os.path.basename(path) for path in FIGURES[2].make(folder)]
['figure1_sample.png']
>>> written = build_figures(folder, progress=None)  # doctest: +SKIP
>>> [os.path.basename(path) for path in written] == figure_files()  # doctest: +SKIP
True
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass

from . import examples
from .draw import plots
from .draw.render import (
    PATH_COLORS,
    Paths,
    elimination_strip,
    render,
    render_elimination,
    sample_title,
    save_drawing,
)
from .examples import chain_graph
from .graph.lcg import LCG
from .rng import as_generator

__all__ = ["FIGURES", "SEEDS", "Entry", "build_figures", "figure_files", "layered_multi"]

#: every seed the gallery uses, by what it seeds
SEEDS = {
    "figure1_sample": 0,        # Algorithm 1 on Figure 1: skips v3 = sin(x2)
    "layered_graph": 2021,      # partials of the 4-input, 3-output layered graph
    "heatmaps": 1,              # the sampled Jacobians of interleaved_heatmaps.png
    "convergence": 7,           # the sample streams of convergence.png
    "variance_vs_depth": 0,     # balanced partials of the Figure 2 families
    "variance_vs_k": 3,         # the empirical crosses of variance_vs_k.png
    "figure3": 0,               # data, weights and activation samples of the Figure 3 MLP
}

#: the heatmap graph, as the titles describe it
LAYERED = "x1..x4 → a1..a4 → b1..b4 → y1..y3"
HEATMAP_SAMPLES = 2000
CONVERGENCE_SAMPLES = 5000
VARIANCE_SAMPLES = 4000
DPI = 150


# ------------------------------------------------------------------ graphs
def layered_multi(n_inputs: int = 4, width: int = 4, depth: int = 2, n_outputs: int = 3,
                  rng=None) -> LCG:
    """Interleaved layers (the paper's Figure 2b) with several inputs and outputs.

    The scalar graph (:func:`minirad.examples.chain_graph`) of a chain of
    dense matrices: inputs ``x1..`` feed every vertex of the first layer
    (``a1..``), every vertex of a layer feeds every vertex of the next
    (``b1..``, ...; ``h<layer>_<i>`` past 24 layers), and the last layer
    feeds every output ``y1..`` (a lone input is ``theta``, a lone output
    ``y``).  Partials are drawn from ``rng`` (a Generator or a seed):
    magnitudes uniform in [0.5, 1.5) with random signs, so that Jacobian
    entries come out both positive and negative and some paths cancel.

    >>> g = layered_multi(rng=0)
    >>> g
    LCG(15 vertices: 4 inputs, 8 intermediates, 3 outputs; 44 edges)
    >>> [g.name(v) for v in g.successors("a2")]
    ['b1', 'b2', 'b3', 'b4']
    """
    rng = as_generator(rng)
    sizes = [n_inputs, *[width] * depth, n_outputs]
    count = sum(low * high for low, high in zip(sizes, sizes[1:]))
    # all signs, then all magnitudes, edges listed by source layer by layer:
    # the draws that the gallery's seed has always given
    signs = rng.choice([-1.0, 1.0], size=count)
    partials = signs * rng.uniform(0.5, 1.5, size=count)
    chain, start = [], 0
    for low, high in zip(sizes, sizes[1:]):
        # drawn (source, target), a chain factor is (target, source)
        chain.append(partials[start:start + low * high].reshape(low, high).T)
        start += low * high
    return chain_graph(chain)


def _heatmap_graph() -> LCG:
    return layered_multi(4, 4, 2, 3, rng=SEEDS["layered_graph"])


def _path_names(g: LCG) -> list[tuple[str, ...]]:
    from .exact.paths import paths

    return [tuple(g.names[v] for v in path) for path in paths(g)]


def _elimination_pictures(g: LCG) -> int:
    """How many pictures render_elimination makes: one per step, then the result."""
    return len(g.intermediates) + 1


def _save(picture, folder: str, name: str, dpi: int = DPI) -> str:
    """Save a drawing or Figure: :func:`minirad.draw.render.save_drawing` writes no timestamps
    and falls back to matplotlib without ``dot``."""
    return save_drawing(picture, os.path.join(folder, name), dpi=dpi)


# ----------------------------------------------------------------- figures
def _figure1_lcg(folder: str) -> list[str]:
    g = examples.figure1()
    drawing = render(
        g, show_ops=True, show_values=True, legend=True,
        title="Figure 1(c): the LCG of y = exp(x1) · exp(x1) · sin(x2) · x2 at (x1, x2) = (1, 2)"
              "\neach vertex: its operation and value; each edge u → v: the local partial ∂v/∂u")
    return [_save(drawing, folder, "figure1_lcg.png"), _save(drawing, folder, "figure1_lcg.svg")]


def _figure1_paths(folder: str) -> list[str]:
    from .exact.jacobians import jacobian
    from .exact.paths import path_product

    g = examples.figure1()
    routes = _path_names(g)
    J = jacobian(g)[0]
    written = [_save(render(
        g, routes,
        title=f"The {len(routes)} input-output paths of Figure 1: "
              f"dy/dx1 = {J[0]:.4g} and dy/dx2 = {J[1]:.4g} are sums of path products"),
        folder, "figure1_paths.png")]
    for number, route in enumerate(routes, 1):
        factors = [g.partial(u, v) for u, v in zip(route, route[1:])]
        product = " × ".join(f"{p:.4g}" for p in factors)
        drawing = render(  # its number and colour from figure1_paths.png
            g, Paths([route], labels=[f"path {number}"], colors=[PATH_COLORS[number - 1]]),
            title=f"Figure 1, path {number} of {len(routes)}: {' → '.join(route)}\n"
                  f"its product of partials: {product} = {path_product(g, route):.4g}")
        written.append(_save(drawing, folder, f"figure1_path{number}.png"))
    return written


def _figure1_sample(folder: str) -> list[str]:
    from .randomized.sampling import sample_paths

    g = examples.figure1()
    seed = SEEDS["figure1_sample"]
    sample = sample_paths(g, k=1, rng=seed)
    title = sample_title(g, sample, f"One Algorithm 1 sample, k=1, seed {seed}")
    return [_save(render(g, sample, title=title), folder, "figure1_sample.png")]


def _figure1_elimination(folder: str) -> list[str]:
    g = examples.figure1()
    head = "Figure 1, vertex elimination in Markowitz order"
    steps = [_save(drawing, folder, f"figure1_elimination_step{number}.png")
             for number, drawing in enumerate(render_elimination(g, "markowitz", title=head), 1)]
    dpi = 110
    strip = elimination_strip(
        g, "markowitz", ncols=2, dpi=dpi,
        title=f"{head}:\neach step eliminates a vertex of least |pred| × |succ|")
    return [_save(strip, folder, "figure1_elimination.png", dpi=dpi), *steps]


def _interleaved_heatmaps(folder: str) -> list[str]:
    g = _heatmap_graph()
    k, n, seed = 1, HEATMAP_SAMPLES, SEEDS["heatmaps"]
    figure = plots.plot_compare(
        g, k=k, n=n, rng=seed, exact_std=True,
        title=f"Path sampling on interleaved layers ({LAYERED}, {g.n_edges} edges): "
              f"k={k}, n={n}, seed {seed}")
    return [_save(figure, folder, "interleaved_heatmaps.png")]


def _convergence(folder: str) -> list[str]:
    seed = SEEDS["convergence"]
    figure = plots.plot_convergence(
        _heatmap_graph(), ks=(1, 2, 4), n=CONVERGENCE_SAMPLES, rng=seed,
        title=f"Error of the running mean shrinks like $1/\\sqrt{{n}}$\n"
              f"interleaved layers {LAYERED}\n"
              f"k = 1, 2, 4 draws per vertex, n ≤ {CONVERGENCE_SAMPLES}, seed {seed}")
    return [_save(figure, folder, "convergence.png")]


def _variance_vs_depth(folder: str) -> list[str]:
    seed = SEEDS["variance_vs_depth"]
    width, fraction = 4, 0.25
    figure = plots.plot_variance_vs_depth(
        width=width, depths=range(1, 13), fraction=fraction, rng=seed,
        title=f"Figure 2: exact relative variance of path sampling against depth\n"
              f"width {width}, each vertex draws {fraction:.0%} of its out-edges, "
              f"balanced partials (seed {seed})")
    return [_save(figure, folder, "variance_vs_depth.png")]


def _variance_vs_k(folder: str) -> list[str]:
    seed = SEEDS["variance_vs_k"]
    figure = plots.plot_variance_vs_k(
        examples.figure1(), ks=(1, 2, 4, 8, 16), n=VARIANCE_SAMPLES, rng=seed,
        title=f"Figure 1: exact variance of path sampling against k\n"
              f"crosses: {VARIANCE_SAMPLES} samples per k, seed {seed}")
    return [_save(figure, folder, "variance_vs_k.png")]


def _elimination_costs(folder: str) -> list[str]:
    graphs = {
        "Figure 1": examples.figure1(),
        "lecture": examples.lecture(),
        "two outputs": examples.two_outputs(),
        "interleaved\n3×3": examples.interleaved(3, 3),
        "layered\n4 → 4 → 4 → 3": _heatmap_graph(),
    }
    return [_save(plots.plot_elimination_costs(graphs), folder, "elimination_costs.png")]


# ---------------------------------------------------------------- registry
@dataclass(frozen=True)
class Entry:
    """One figure of the gallery: ``make(folder)`` writes the files named by
    ``files()`` into ``folder`` and returns their paths.  ``needs`` names an
    optional dependency and the extra that installs it, ``("sympy",
    "symbolic")``; without it the build skips the figure and says so."""

    name: str
    files: Callable[[], list[str]]
    make: Callable[[str], list[str]]
    description: str
    needs: tuple[str, str] | None = None


def _figure3(folder: str) -> list[str]:
    from .draw.patterns import plot_blocks

    seed = SEEDS["figure3"]
    return [
        _save(render(examples.figure3(rng=seed), show_ops=True, batch=3,
                     title="Figure 3(a): the LCG of a two-layer ReLU MLP, batch of 3, float32\n"
                           "each vertex an array, each edge a Jacobian block and the bytes "
                           "the backward pass keeps for it"),
              folder, "figure3_vector_lcg.png"),
        _save(render(examples.figure3(injected=True, rng=seed), show_ops=True, batch=3,
                     title="The same graph with activation sampling (Sec. 4.2): each stored "
                           "activation keeps k=2 entries per example\n(dashed: injected "
                           "projections); the ReLU mask now costs 1 bit per entry"),
              folder, "figure3_vector_lcg_sampled.png"),
        _save(plot_blocks(examples.figure3(rng=seed),
                          title="The Jacobian blocks of Figure 3(a) as matrices (red positive, "
                                "blue negative): what each operator stores compactly"),
              folder, "figure3_blocks.png"),
    ]


def _sparsity(folder: str) -> list[str]:
    from .draw.patterns import plot_pattern, plot_strategies

    return [_save(plot_pattern(examples.banded(10)), folder, "sparsity_pattern.png"),
            _save(plot_strategies(examples.arrow(8), by="passes"), folder,
                  "sparsity_strategies.png")]


def _adjoint_reintegration(folder: str) -> list[str]:
    from .draw.adjoints import plot_reintegration
    from .implicit import ode_adjoint

    problems = [ode_adjoint.oscillator(), ode_adjoint.lotka_volterra(), ode_adjoint.diffusion()]
    return [_save(plot_reintegration(problems), folder, "adjoint_reintegration.png")]


def _edge_beats_vertex(folder: str) -> list[str]:
    from .draw.edge_steps import edge_elimination_strip
    from .exact.elimination import elimination_cost

    g = examples.edge_beats_vertex()
    edge, vertex = elimination_cost(g, "optimal", on="edges")[0], elimination_cost(g, "optimal")[0]
    figure = edge_elimination_strip(
        g, "optimal", dpi=110,
        title=f"examples.edge_beats_vertex(): the cheapest edge elimination sequence takes "
              f"{edge} multiplications; the cheapest vertex order needs {vertex}")
    return [_save(figure, folder, "edge_beats_vertex.png", dpi=110)]


def _adjoint_convergence(folder: str) -> list[str]:
    from .draw.adjoints import plot_adjoint_convergence
    from .implicit import ode_adjoint

    problems = [ode_adjoint.oscillator(n_steps=20), ode_adjoint.lotka_volterra(n_steps=32),
                ode_adjoint.diffusion(n_grid=15, n_steps=20, ratio=0.6)]
    return [_save(plot_adjoint_convergence(problems), folder, "adjoint_convergence.png")]


def _symbolic_swell(folder: str) -> list[str]:
    from .draw.swell import plot_swell

    return [_save(plot_swell(), folder, "symbolic_swell.png")]
def _gradient_graph(folder: str) -> list[str]:
    from .draw.render import Part
    from .exact.higher import backward_vertices, gradient_graph, hessian
    from .tracing import ops

    f = lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2)  # noqa: E731 - the lecture's
    G = gradient_graph(f, 2.0, 5.0)
    H = hessian(f, 2.0, 5.0)
    drawing = render(
        G, Part(backward_vertices(G), "the reverse pass, recorded: partials, adjoint products "
                                      "and sums (orange-red)"),
        show_ops=True,
        title="The lecture's y = ln(x1) + x1·x2 − sin(x2) at (2, 5) with its reverse\n"
              "pass recorded as more vertices: the outputs x̄1, x̄2 are the gradient;\n"
              f"the Jacobian of this graph is the Hessian [[{H[0, 0]:.4g}, {H[0, 1]:.4g}], "
              f"[{H[1, 0]:.4g}, {H[1, 1]:.4g}]]")
    return [_save(drawing, folder, "gradient_graph.png")]


def _mode_costs(folder: str) -> list[str]:
    from .draw.modes import plot_mode_costs

    return [_save(plot_mode_costs(), folder, "mode_costs.png")]


def _one(name: str, *extra: str) -> Callable[[], list[str]]:
    return lambda: [name, *extra]


FIGURES: tuple[Entry, ...] = (
    Entry("figure1_lcg", _one("figure1_lcg.png", "figure1_lcg.svg"), _figure1_lcg,
           "the LCG of Figure 1 with operations, values and partials"),
    Entry("figure1_paths",
           lambda: ["figure1_paths.png"] + [
               f"figure1_path{i}.png"
               for i in range(1, len(_path_names(examples.figure1())) + 1)],
           _figure1_paths, "its four input-output paths, together and one by one"),
    Entry("figure1_sample", _one("figure1_sample.png"), _figure1_sample,
           "one Algorithm 1 sample (k=1) laid over it"),
    Entry("figure1_elimination",
           lambda: ["figure1_elimination.png"] + [
               f"figure1_elimination_step{i}.png"
               for i in range(1, _elimination_pictures(examples.figure1()) + 1)],
           _figure1_elimination, "its vertex elimination in Markowitz order"),
    Entry("interleaved_heatmaps", _one("interleaved_heatmaps.png"), _interleaved_heatmaps,
           "exact against sampled Jacobians of a 4-input, 3-output layered graph"),
    Entry("convergence", _one("convergence.png"), _convergence,
           "relative error of the running mean against the number of samples"),
    Entry("variance_vs_depth", _one("variance_vs_depth.png"), _variance_vs_depth,
           "Figure 2: variance against depth, independent paths against interleaved layers"),
    Entry("variance_vs_k", _one("variance_vs_k.png"), _variance_vs_k,
           "exact variance against the number of draws per vertex"),
    Entry("elimination_costs", _one("elimination_costs.png"), _elimination_costs,
           "multiplications of forward, reverse, Markowitz and optimal elimination"),
    Entry("figure3_vector_lcg", _one("figure3_vector_lcg.png", "figure3_vector_lcg_sampled.png",
                                     "figure3_blocks.png"),
          _figure3, "Figure 3: the LCG of arrays of a small MLP, exact and with activation "
                    "sampling, with the memory each edge keeps"),
    Entry("sparsity", _one("sparsity_pattern.png", "sparsity_strategies.png"), _sparsity,
          "a tridiagonal pattern with its seed groups; sweeps and multiplications per "
          "strategy on an arrow"),
    Entry("adjoint_reintegration", _one("adjoint_reintegration.png"), _adjoint_reintegration,
          "the continuous adjoint with stored, checkpointed and re-integrated states"),
    Entry("edge_beats_vertex", _one("edge_beats_vertex.png"), _edge_beats_vertex,
          "edge elimination beating every vertex order, step by step"),
    Entry("adjoint_convergence", _one("adjoint_convergence.png"), _adjoint_convergence,
          "the gap between the continuous and the discrete adjoint against the step size"),
    Entry("symbolic_swell", _one("symbolic_swell.png"), _symbolic_swell,
          "SymPy's derivatives (trees, after CSE) against the LCG's edges as programs grow",
          needs=("sympy", "symbolic")),
    Entry("gradient_graph", _one("gradient_graph.png"), _gradient_graph,
          "the lecture's example with its reverse pass recorded as more vertices"),
    Entry("mode_costs", _one("mode_costs.png"), _mode_costs,
          "multiplications of dual numbers, forward and reverse sweeps, and a "
          "Hessian-vector product"),
)


def figure_files() -> list[str]:
    """The names of the files :func:`build_figures` writes, in order."""
    return [name for figure in FIGURES for name in figure.files()]


def build_figures(folder="figures", progress: Callable[[str], object] | None = print
                  ) -> list[str]:
    """Draw every figure of the gallery into ``folder``; return the paths written.

    The folder is created if needed; files of the same names are replaced
    (each through a temporary file, so a failure leaves no half-written
    picture).  ``progress(message)`` is called once per entry of
    :data:`FIGURES`, after its files are written (``None``: silent).  A
    figure whose optional dependency is missing (:attr:`Entry.needs`) is
    skipped, and its message says which extra to install.  Deterministic:
    fixed seeds (:data:`SEEDS`), no timestamps.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    written: list[str] = []
    for number, figure in enumerate(FIGURES, 1):
        if figure.needs and importlib.util.find_spec(figure.needs[0]) is None:
            if progress is not None:
                progress(f"[{number}/{len(FIGURES)}] {figure.name}: skipped, it needs "
                         f"{figure.needs[0]} (pip install 'minirad[{figure.needs[1]}]')")
            continue
        paths = figure.make(folder)
        written += paths
        if progress is not None:
            names = ", ".join(os.path.basename(p) for p in paths)
            progress(f"[{number}/{len(FIGURES)}] {figure.name}: {figure.description} -> {names}")
    return written
