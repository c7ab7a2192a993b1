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
 'elimination_costs']
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

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import examples, plots
from ._files import write_atomically
from ._random import as_generator
from .graph import LCG
from .render import (  # names: the package's ``render`` attribute is the function, not the module
    Drawing,
    _warn_missing_dot,
    draw_matplotlib,
    elimination_strip,
    has_dot,
    render,
    render_elimination,
    save,
)

__all__ = ["FIGURES", "SEEDS", "Entry", "build_figures", "figure_files", "layered_multi"]

#: every seed the gallery uses, by what it seeds
SEEDS = {
    "figure1_sample": 0,        # Algorithm 1 on Figure 1: skips v3 = sin(x2)
    "layered_graph": 2021,      # partials of the 4-input, 3-output layered graph
    "heatmaps": 1,              # the sampled Jacobians of interleaved_heatmaps.png
    "convergence": 7,           # the sample streams of convergence.png
    "variance_vs_depth": 0,     # balanced partials of the Figure 2 families
    "variance_vs_k": 3,         # the empirical crosses of variance_vs_k.png
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

    Inputs ``x1..`` feed every vertex of the first layer (``a1..``), every
    vertex of a layer feeds every vertex of the next (``b1..``, ...), and
    the last layer feeds every output ``y1..``.  Partials are drawn from
    ``rng`` (a Generator or a seed): magnitudes uniform in [0.5, 1.5) with
    random signs, so that Jacobian entries come out both positive and
    negative and some paths cancel.

    >>> g = layered_multi(rng=0)
    >>> g
    LCG(15 vertices: 4 inputs, 8 intermediates, 3 outputs; 44 edges)
    >>> [g.name(v) for v in g.successors("a2")]
    ['b1', 'b2', 'b3', 'b4']
    """
    rng = as_generator(rng)
    inputs = [f"x{i + 1}" for i in range(n_inputs)]
    layers = [[f"{chr(ord('a') + l)}{i + 1}" for i in range(width)] for l in range(depth)]
    outputs = [f"y{j + 1}" for j in range(n_outputs)]
    stages = [inputs, *layers, outputs]
    pairs = [(u, v) for low, high in zip(stages, stages[1:]) for u in low for v in high]
    signs = rng.choice([-1.0, 1.0], size=len(pairs))
    partials = signs * rng.uniform(0.5, 1.5, size=len(pairs))
    return LCG.from_edges([(u, v, float(p)) for (u, v), p in zip(pairs, partials)],
                          inputs=inputs, outputs=outputs)


def _heatmap_graph() -> LCG:
    return layered_multi(4, 4, 2, 3, rng=SEEDS["layered_graph"])


def _path_names(g: LCG) -> list[tuple[str, ...]]:
    from .paths import paths

    return [tuple(g.names[v] for v in path) for path in paths(g)]


def _elimination_pictures(g: LCG) -> int:
    """How many pictures render_elimination makes: one per step, then the result."""
    return len(g.intermediates) + 1


# ------------------------------------------------------------------ saving
def _save_figure(figure, path: str, dpi: int = DPI) -> str:
    """Save a matplotlib Figure with no timestamp or version in the file."""
    import matplotlib

    fmt = os.path.splitext(path)[1].lstrip(".").lower()
    metadata = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None},
                "pdf": {"CreationDate": None, "Producer": None, "Creator": None}}.get(fmt)
    # svg ids are random unless salted
    with matplotlib.rc_context({"svg.hashsalt": "minirad"}):
        write_atomically(path, lambda f: figure.savefig(
            f, format=fmt, dpi=dpi, metadata=metadata))
    return path


def _save_drawing(drawing: Drawing, path: str) -> str:
    """Save a render() drawing: with dot if present, else with the matplotlib fallback."""
    if has_dot():
        return save(drawing, path, dpi=DPI)
    _warn_missing_dot()
    return _save_figure(draw_matplotlib(drawing.lcg, **drawing.options), path)


# ----------------------------------------------------------------- figures
def _figure1_lcg(folder: str) -> list[str]:
    g = examples.figure1()
    drawing = render(
        g, show_ops=True, show_values=True, legend=True,
        title="Figure 1(c): the LCG of y = exp(x1) · exp(x1) · sin(x2) · x2 at (x1, x2) = (1, 2)"
              "\neach vertex: its operation and value; each edge u → v: the local partial ∂v/∂u")
    return [_save_drawing(drawing, os.path.join(folder, "figure1_lcg.png")),
            _save_drawing(drawing, os.path.join(folder, "figure1_lcg.svg"))]


def _figure1_paths(folder: str) -> list[str]:
    from .jacobian import jacobian
    from .paths import path_product

    g = examples.figure1()
    routes = _path_names(g)
    J = jacobian(g)[0]
    written = [_save_drawing(render(
        g, paths=routes,
        title=f"The {len(routes)} input-output paths of Figure 1: "
              f"dy/dx1 = {J[0]:.4g} and dy/dx2 = {J[1]:.4g} are sums of path products"),
        os.path.join(folder, "figure1_paths.png"))]
    for number, route in enumerate(routes, 1):
        factors = [g.partial(u, v) for u, v in zip(route, route[1:])]
        product = " × ".join(f"{p:.4g}" for p in factors)
        drawing = render(
            g, paths=[route], legend=False,
            title=f"Figure 1, path {number} of {len(routes)}: {' → '.join(route)}\n"
                  f"its product of partials: {product} = {path_product(g, route):.4g}")
        written.append(_save_drawing(drawing, os.path.join(folder,
                                                           f"figure1_path{number}.png")))
    return written


def _figure1_sample(folder: str) -> list[str]:
    from .jacobian import jacobian
    from .sampling import sample_paths

    g = examples.figure1()
    seed = SEEDS["figure1_sample"]
    sample = sample_paths(g, k=1, rng=seed)
    exact, estimate = jacobian(g)[0], sample.jacobian[0]
    title = (f"One Algorithm 1 sample, k=1, seed {seed}: {sample.edges_stored} of "
             f"{sample.full_edges} edges, {sample.vertices_stored} of {sample.full_vertices} "
             f"vertices stored\nestimate (dy/dx1, dy/dx2) = ({estimate[0]:.4g}, "
             f"{estimate[1]:.4g}); exact = ({exact[0]:.4g}, {exact[1]:.4g})")
    return [_save_drawing(render(g, sample=sample, title=title),
                          os.path.join(folder, "figure1_sample.png"))]


def _figure1_elimination(folder: str) -> list[str]:
    g = examples.figure1()
    head = "Figure 1, vertex elimination in Markowitz order"
    written = []
    for number, drawing in enumerate(render_elimination(g, "markowitz"), 1):
        # the same picture, its title headed by what is being eliminated in which order
        titled = render(drawing.lcg, **dict(drawing.options,
                                            title=f"{head}\n{drawing.options['title']}"))
        written.append(_save_drawing(titled, os.path.join(
            folder, f"figure1_elimination_step{number}.png")))
    dpi = 110
    strip = elimination_strip(g, "markowitz", ncols=3, dpi=dpi)
    _headline(strip, f"{head}: each step eliminates a vertex of least |pred| × |succ|")
    return [_save_figure(strip, os.path.join(folder, "figure1_elimination.png"), dpi=dpi),
            *written]


def _headline(figure, text: str, fontsize: float = 20, inches: float = 0.6) -> None:
    """A title above a Figure whose axes fill it (as elimination_strip's do with dot)."""
    if figure.get_layout_engine() is not None:  # constrained layout makes room itself
        figure.suptitle(text, fontsize=fontsize)
        return
    width, height = figure.get_size_inches()
    boxes = [ax.get_position(original=True) for ax in figure.axes]
    figure.set_size_inches(width, height + inches)
    shrink = height / (height + inches)  # the tiles keep their size, below the title
    for ax, box in zip(figure.axes, boxes):
        ax.set_position([box.x0, box.y0 * shrink, box.width, box.height * shrink])
    figure.suptitle(text, fontsize=fontsize, y=1 - 0.5 * inches / (height + inches),
                    va="center")


def _interleaved_heatmaps(folder: str) -> list[str]:
    from .sampling import compare

    g = _heatmap_graph()
    k, n, seed = 1, HEATMAP_SAMPLES, SEEDS["heatmaps"]
    result = compare(g, k=k, n=n, rng=seed)
    single = result.estimates[0]
    figure = plots.jacobian_heatmaps(
        result.exact, result.mean, single, np.sqrt(result.exact_variance),
        n=n, k=k, input_names=[g.names[v] for v in g.inputs],
        output_names=[g.names[v] for v in g.outputs],
        title=f"Path sampling on interleaved layers ({LAYERED}, {g.n_edges} edges): "
              f"k={k}, n={n}, seed {seed}")
    # one k=1 sample is up to ten times the exact entries; on a scale that held it the exact
    # and mean panels would be all white, so the scale is theirs and the sample's colours clip
    scale = float(np.abs(np.concatenate([result.exact, result.mean])).max())
    for ax in figure.axes[:3]:
        image = ax.images[0]
        image.set_clim(-scale, scale)
        data = image.get_array()
        for text in ax.texts:  # black or white ink, whichever shows on the new colour
            column, row = text.get_position()
            r, g_, b, _ = image.to_rgba(data[int(round(row)), int(round(column))])
            text.set_color("black" if 0.299 * r + 0.587 * g_ + 0.114 * b > 0.5 else "white")
    figure.axes[3].set_title("exact std of one sample (k=1)", fontsize=10)
    if np.abs(single).max() > scale:
        axis = figure.axes[2]
        axis.set_title(f"{axis.get_title()}\n(colours clipped at ±{scale:.3g})", fontsize=10)
    return [_save_figure(figure, os.path.join(folder, "interleaved_heatmaps.png"))]


def _convergence(folder: str) -> list[str]:
    g = _heatmap_graph()
    seed = SEEDS["convergence"]
    figure = plots.plot_convergence(g, ks=(1, 2, 4), n=CONVERGENCE_SAMPLES, rng=seed)
    figure.axes[0].set_title(f"Error of the running mean shrinks like $1/\\sqrt{{n}}$\n"
                             f"interleaved layers {LAYERED}\n"
                             f"k = 1, 2, 4 draws per vertex, n ≤ {CONVERGENCE_SAMPLES}, "
                             f"seed {seed}", fontsize=10)
    return [_save_figure(figure, os.path.join(folder, "convergence.png"))]


def _variance_vs_depth(folder: str) -> list[str]:
    seed = SEEDS["variance_vs_depth"]
    width, fraction = 4, 0.25
    figure = plots.plot_variance_vs_depth(width=width, depths=range(1, 13), fraction=fraction,
                                          rng=seed)
    figure.axes[0].set_title(
        f"Figure 2: exact relative variance of path sampling against depth\n"
        f"width {width}, each vertex draws {fraction:.0%} of its out-edges, "
        f"balanced partials (seed {seed})", fontsize=10)
    return [_save_figure(figure, os.path.join(folder, "variance_vs_depth.png"))]


def _variance_vs_k(folder: str) -> list[str]:
    seed = SEEDS["variance_vs_k"]
    figure = plots.plot_variance_vs_k(examples.figure1(), ks=(1, 2, 4, 8, 16),
                                      n=VARIANCE_SAMPLES, rng=seed)
    ax = figure.axes[0]
    ax.set_title(f"Figure 1: exact variance of path sampling against k\n"
                 f"crosses: {VARIANCE_SAMPLES} samples per k, seed {seed}", fontsize=10)
    # an entry that never varies has no point on log axes: say so rather than show nothing
    for line in ax.get_lines():
        if np.isnan(np.asarray(line.get_ydata(), dtype=float)).all():
            line.set_label(f"{line.get_label()}: variance 0 at every k, no line")
    ax.legend(fontsize=8)
    return [_save_figure(figure, os.path.join(folder, "variance_vs_k.png"))]


def _elimination_costs(folder: str) -> list[str]:
    graphs = {
        "Figure 1": examples.figure1(),
        "lecture": examples.lecture(),
        "two outputs": examples.two_outputs(),
        "interleaved\n3×3": examples.interleaved(3, 3),
        "layered\n4 → 4 → 4 → 3": _heatmap_graph(),
    }
    figure = plots.plot_elimination_costs(graphs)
    return [_save_figure(figure, os.path.join(folder, "elimination_costs.png"))]


# ---------------------------------------------------------------- registry
@dataclass(frozen=True)
class Entry:
    """One figure of the gallery: ``make(folder)`` writes the files named by
    ``files()`` into ``folder`` and returns their paths."""

    name: str
    files: Callable[[], list[str]]
    make: Callable[[str], list[str]]
    description: str


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
    :data:`FIGURES`, after its files are written (``None``: silent).
    Deterministic: fixed seeds (:data:`SEEDS`), no timestamps.
    """
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    written: list[str] = []
    for number, figure in enumerate(FIGURES, 1):
        paths = figure.make(folder)
        written += paths
        if progress is not None:
            names = ", ".join(os.path.basename(p) for p in paths)
            progress(f"[{number}/{len(FIGURES)}] {figure.name}: {figure.description} -> {names}")
    return written
