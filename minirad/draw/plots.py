"""Matplotlib figures for randomized AD: sampled Jacobians, convergence, variance, costs.

Every function returns a :class:`matplotlib.figure.Figure` built without
pyplot: nothing global is touched, nothing is shown.  In Jupyter the Figure
displays as a cell's value, in any kernel (see :mod:`minirad.draw.figure`);
elsewhere call ``fig.savefig(...)`` (or :func:`minirad.draw.render.save_drawing`).

>>> from minirad import examples
>>> fig = plot_compare(examples.figure1(), k=1, n=200, rng=0)
>>> [ax.get_title() for ax in fig.axes[:2]]
['exact Jacobian', 'mean of n=200 samples']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..graph.lcg import LCG, takes_graph_or_function
from ..graph.scalarize import entry_names
from ..rng import as_generator
from . import palette
from .render import PATH_COLORS as COLORS  # one colour per curve, as render colours paths

__all__ = [
    "jacobian_heatmaps", "plot_compare", "plot_convergence", "plot_elimination_costs",
    "plot_variance_vs_depth", "plot_variance_vs_k", "z_scores",
]

#: above this many entries, or this many columns, the heatmaps are not annotated with numbers
ANNOTATE_LIMIT = 64
ANNOTATE_COLUMNS = 8
#: the empirical crosses of plot_variance_vs_k, a colour no line there has
EMPIRICAL_COLOR = palette.PURPLE


def _figure(width: float, height: float):
    from .figure import Figure  # a matplotlib Figure that shows inline in any Jupyter kernel

    return Figure(figsize=(width, height), layout="constrained")


def _k_text(k) -> str:
    """How a draw count reads in a title: k=2, k=50% of out-edges, or per vertex."""
    if isinstance(k, Mapping):
        return "k set per vertex"
    if isinstance(k, (float, np.floating)):
        return f"k={k:.0%} of out-edges"
    return f"k={k}"


# ---------------------------------------------------------------- heatmaps
def _matrix(name: str, a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim == 1:
        a = a[None, :]  # a gradient: one output row
    if a.ndim != 2:
        raise ValueError(f"{name} must be a Jacobian of shape (n_outputs, n_inputs), got shape "
                         f"{a.shape}")
    return a


def _annotate(ax, a: np.ndarray, norm, cmap, signed: bool = False) -> None:
    """Write each entry in its cell, in black or white, whichever shows on the colour
    (``signed``: z-scores, with their sign and one decimal)."""
    # rounding noise (a variance of 1e-26 for an entry that cannot vary) reads as 0
    tiny = 1e-9 * max(1.0, float(np.nanmax(np.abs(a), initial=0.0)))
    for (i, j), value in np.ndenumerate(a):
        if not np.isfinite(value):
            continue
        r, g, b, _ = cmap(norm(value))
        ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
        if abs(value) < tiny:
            text = "0"
        else:
            text = f"{value:+.1f}" if signed else f"{value:.3g}"
        ax.text(j, i, text, ha="center", va="center", fontsize=9, color=ink)


#: the z-score panel's colours run from -Z_LIMIT to +Z_LIMIT (clipped beyond)
Z_LIMIT = 4.0


def z_scores(exact, mean, std, n: int) -> np.ndarray:
    """``(mean - exact) / (std / sqrt(n))``: how many standard errors each
    entry of the mean of ``n`` samples lies from the exact value.

    An entry whose standard deviation is 0 (rounding noise included) cannot
    vary: its z-score is 0 when the mean equals the exact value to rounding,
    and NaN otherwise (a zero-variance estimator that misses is a bias no
    z-score can measure).

    >>> z_scores(np.array([1.0, 2.0]), np.array([1.5, 2.0]), np.array([2.0, 0.0]), 16)
    array([1., 0.])
    """
    exact, mean, std = (np.asarray(a, dtype=float) for a in (exact, mean, std))
    tiny = 1e-12 * np.maximum(np.abs(exact), 1.0)
    stderr = std / np.sqrt(n)
    varies = stderr > tiny
    z = np.divide(mean - exact, stderr, out=np.zeros_like(mean), where=varies)
    z[~varies & (np.abs(mean - exact) > tiny)] = np.nan
    return z


def jacobian_heatmaps(exact, mean, single, std, *, n: int | None = None, k=None,
                      input_names: Sequence[str] | None = None,
                      output_names: Sequence[str] | None = None, title: str | None = None):
    """Heatmaps side by side: exact Jacobian, mean of n samples, one sample, std,
    and (given ``n``) whether the mean agrees with the exact Jacobian within noise.

    The first three share one diverging colour scale centred on 0 (blue
    negative, red positive) so they can be compared cell by cell.  The
    scale is fitted to the exact and mean panels: one sample is often many
    times larger, and a scale that held it would wash them out.  Its colours
    are clipped instead (its numbers are not), as its title says, and the
    colour bar's pointed ends show it.  The per-entry standard deviation of
    one sample has its own scale.  The last panel shows each entry's
    z-score, ``(mean - exact) / (std / sqrt(n))`` (:func:`z_scores`), on a
    diverging scale of its own centred on 0 and clipped at ±:data:`Z_LIMIT`:
    for an unbiased estimator about 95% of entries lie within ±2, and
    pale cells mean agreement.  Small Jacobians get their numbers written
    in the cells.  The Figure has 5 heatmap axes (4 without ``n``) followed
    by one colour-bar axis per scale.

    >>> import numpy as np
    >>> J = np.array([[1.0, -2.0]])
    >>> fig = jacobian_heatmaps(J, J, 2 * J, np.array([[0.0, 1.0]]), n=10, k=1)
    >>> len(fig.axes)
    8
    >>> print(fig.axes[2].get_title())  # 2 * J is off the scale of J
    one sample (k=1)
    colours clipped at ±2
    >>> print(fig.axes[4].get_title())
    mean − exact, in standard errors
    z = (mean − exact) / (std / √n)
    """
    from matplotlib import colormaps
    from matplotlib.colors import Normalize

    exact, mean, single, std = (_matrix(name, a) for name, a in
                                (("exact", exact), ("mean", mean), ("single", single),
                                 ("std", std)))
    for name, a in (("mean", mean), ("single", single), ("std", std)):
        if a.shape != exact.shape:
            raise ValueError(f"{name} has shape {a.shape} but exact has shape {exact.shape}; "
                             f"all four must be (n_outputs, n_inputs) of the same graph")
    n_out, n_in = exact.shape
    input_names = _names(input_names, n_in, "input_names", "x")
    output_names = _names(output_names, n_out, "output_names", "y")
    panels = [exact, mean, single, std]
    if n is not None:
        panels.append(z_scores(exact, mean, std, n))
    # two rows: the three panels of one colour scale above, with that scale's bar under
    # all three; the standard deviation and the z-scores below, each with its own bar
    panel = max(2.2, min(4.0, 0.5 * n_in + 1.1))
    high = max(1.8, min(4.5, 0.45 * n_out + 1.0))
    figure = _figure(3 * panel + 1.2, 2 * high + 2.4 + (0.4 if title else 0.0))
    grid = figure.add_gridspec(2, 6, height_ratios=[1.25, 1.0])
    first = figure.add_subplot(grid[0, 0:2])
    axes = [first] + [figure.add_subplot(grid[0, 2 * i:2 * i + 2], sharey=first)
                      for i in (1, 2)]
    below = (grid[1, 0:3], grid[1, 3:6]) if n is not None else (grid[1, 1:5],)
    axes += [figure.add_subplot(spot, sharey=first) for spot in below]
    scale = float(np.nanmax(np.abs(np.concatenate([exact, mean])))) or 1.0
    shared = Normalize(-scale, scale)  # centred on 0
    clipped = bool(np.nanmax(np.abs(single), initial=0.0) > scale)
    spread = Normalize(0.0, float(np.nanmax(std)) or 1.0)
    standard = Normalize(-Z_LIMIT, Z_LIMIT)
    diverging, sequential = colormaps["RdBu_r"], colormaps["viridis"]
    agreement = colormaps["PuOr_r"]  # diverging too, but unlike the Jacobian's colours
    sample = f"n={n} samples" if n is not None else "the samples"
    kind = f" ({_k_text(k)})" if k is not None else ""
    clipping = f"\ncolours clipped at ±{scale:.3g}" if clipped else ""
    titles = ("exact Jacobian", f"mean of {sample}", f"one sample{kind}{clipping}",
              f"std of one sample{kind}",
              "mean − exact, in standard errors\nz = (mean − exact) / (std / √n)")
    scales = [(shared, diverging)] * 3 + [(spread, sequential), (standard, agreement)]
    images = []
    for index, (ax, a, text, (norm, cmap)) in enumerate(zip(axes, panels, titles, scales)):
        images.append(ax.imshow(a, cmap=cmap, norm=norm, aspect="auto",
                                interpolation="nearest"))
        if a.size <= ANNOTATE_LIMIT and n_in <= ANNOTATE_COLUMNS:
            _annotate(ax, a, norm, cmap, signed=index == 4)
        ax.set_title(text, fontsize=10)
        ax.set_xticks(*_ticks(input_names), rotation=90 if n_in > 6 else 0)
        ax.set_xlabel("input")
        ax.tick_params(labelleft=index in (0, 3))
    for ax in (axes[0], axes[3]):
        ax.set_yticks(*_ticks(output_names))
        ax.set_ylabel("output")
    figure.colorbar(images[0], ax=list(axes[:3]), location="bottom", shrink=0.6, aspect=40,
                    label="Jacobian entry (the scale of all three panels above)",
                    extend="both" if clipped else "neither")
    figure.colorbar(images[3], ax=axes[3], shrink=0.9, label="standard deviation")
    if n is not None:
        beyond = bool(np.nanmax(np.abs(panels[4]), initial=0.0) > Z_LIMIT)
        bar = figure.colorbar(images[4], ax=axes[4], shrink=0.9, extend="both" if beyond
                              else "neither", label="z (|z| < 2 for ~95%\nif unbiased)")
        bar.set_ticks([-4, -2, 0, 2, 4])
    if title:
        figure.suptitle(title)
    return figure


def _ticks(names: list[str], most: int = 24) -> tuple[list[int], list[str]]:
    """Positions and labels of at most ``most`` ticks, evenly spread over ``names``
    (the entries of an array each have a column: hundreds of labels would overlap).

    >>> _ticks(["a", "b", "c"]), _ticks([f"x[{i}]" for i in range(100)], 4)
    (([0, 1, 2], ['a', 'b', 'c']), ([0, 33, 66, 99], ['x[0]', 'x[33]', 'x[66]', 'x[99]']))
    """
    if len(names) <= most:
        return list(range(len(names))), list(names)
    positions = np.unique(np.linspace(0, len(names) - 1, most).round().astype(int)).tolist()
    return positions, [names[i] for i in positions]


def _names(names, count: int, what: str, stem: str) -> list[str]:
    if names is None:
        return [f"{stem}{i}" for i in range(count)]
    names = [str(name) for name in names]
    if len(names) != count:
        raise ValueError(f"{what} has {len(names)} names for {count} entries")
    return names


@takes_graph_or_function
def plot_compare(g: LCG, k=1, n: int = 1000, title: str | None = None,
                 exact_std: bool = False, *, rng=None):
    """Exact Jacobian of ``g`` against path sampling: see :func:`jacobian_heatmaps`.

    Draws ``n`` estimates with :func:`minirad.randomized.experiments.compare` (``k`` as
    there); "one sample" is the first of them and "std" is the per-entry
    standard deviation of a single estimate: estimated from the ``n``
    samples, or with ``exact_std=True`` the exact one
    (:func:`minirad.randomized.sampling.path_sampling_variance`).  ``title`` replaces
    the default title.

    >>> from minirad import examples
    >>> fig = plot_compare(examples.figure1(), n=50, rng=0, exact_std=True, title="Figure 1")
    >>> fig.get_suptitle(), fig.axes[3].get_title()
    ('Figure 1', 'std of one sample (k=1)')
    """
    from ..randomized.experiments import compare

    return plot_comparison(g, compare(g, k=k, n=n, rng=rng), k, title, exact_std)


@takes_graph_or_function
def plot_comparison(g: LCG, result, k, title: str | None = None, exact_std: bool = False):
    """:func:`plot_compare` for a :class:`~minirad.randomized.experiments.Comparison` already
    computed with draws ``k`` on ``g``, so nothing is sampled twice.

    >>> from minirad import examples
    >>> from minirad.randomized.experiments import compare
    >>> g = examples.figure1()
    >>> len(plot_comparison(g, compare(g, 1, 50, rng=0), 1).axes)  # 5 heatmaps, 3 colour bars
    8
    """
    if exact_std:
        if result.exact_variance is None:
            raise ValueError("this graph is too large for the exact variance "
                             "(minirad.path_sampling_variance refuses it); pass "
                             "exact_std=False for the standard deviation of the samples")
        std = np.sqrt(result.exact_variance)
    else:
        std = np.sqrt(result.variance) if result.n > 1 else np.zeros_like(result.mean)
        std = np.where(result.varies, std, 0.0)  # elsewhere only rounding made a spread
    def entries(vertices):  # an array vertex is one row or column per entry (W[1,0])
        return [name for v in vertices for name in entry_names(g.names[v], g.shape(v))]

    return jacobian_heatmaps(
        result.exact, result.mean, result.estimates[0], std, n=result.n, k=k,
        input_names=entries(g.inputs), output_names=entries(g.outputs),
        title=title or f"Path sampling against the exact Jacobian ({_k_text(k)})")


# ------------------------------------------------------------- convergence
def _seeds(rng, count: int) -> list[int]:
    """Independent seeds, one per curve, from a seed or a Generator."""
    return [int(s) for s in as_generator(rng).integers(2**63, size=count)]


def _check_ks(ks, where: str) -> list:
    if isinstance(ks, (str, bytes, Mapping)) or not isinstance(ks, Sequence) or not ks:
        raise ValueError(f"{where}: ks must be a nonempty list of draw counts such as [1, 2, 4] "
                         f"(or of fractions such as [0.25, 0.5]), not {ks!r}")
    return list(ks)


@takes_graph_or_function
def plot_convergence(g: LCG, ks=(1, 2, 4), n: int = 2000, title: str | None = None, *,
                     rng=None):
    """Relative error of the running mean against the number of samples, log-log.

    One solid curve per ``k``: ``||mean of the first m estimates - J|| / ||J||``
    for m = 1..n.  When the exact variance is known, a dotted line of the
    same colour shows the expected error ``sqrt(sum of variances / m) / ||J||``,
    which falls as ``1/sqrt(m)``; without exact variances (large graphs) a
    grey dashed ``1/sqrt(m)`` line is drawn for reference instead.  ``title``
    replaces the default title.

    >>> from minirad import examples
    >>> fig = plot_convergence(examples.figure1(), ks=[1, 2], n=100, rng=0)
    >>> len(fig.axes[0].get_lines())  # 2 curves, 2 expected lines, 1 legend entry
    5
    """
    from ..randomized.experiments import compare

    ks = _check_ks(ks, "plot_convergence")
    figure = _figure(6.4, 4.4)
    ax = figure.add_subplot()
    m, first, predicted = None, None, False
    for color, k, seed in zip(_cycle(len(ks)), ks, _seeds(rng, len(ks))):
        result = compare(g, k=k, n=n, rng=seed)
        m = np.arange(1, result.n + 1)
        error = np.where(result.running_error > 0, result.running_error, np.nan)  # log axes
        ax.plot(m, error, color=color, linewidth=1.2, label=_k_text(k))
        if first is None and np.isfinite(error[-1]):
            first = error[-1]
        if result.exact_variance is not None:
            scale = np.linalg.norm(result.exact) or 1.0
            expected = np.sqrt(result.exact_variance.sum() / m) / scale
            if expected[0] > 0:
                ax.plot(m, expected, color=color, linestyle=":", linewidth=1.5)
                predicted = True
    if predicted:
        # the expected errors already fall as 1/sqrt(n): they are the reference lines
        ax.plot([], [], color="black", linestyle=":",
                label=r"expected $\sqrt{\sum\mathrm{Var}/n}\,/\,\|J\| \propto 1/\sqrt{n}$")
    else:
        ax.plot(m, (first or 1.0) * np.sqrt(m[-1] / m), color="grey", linestyle="--",
                linewidth=1, label=r"$\propto 1/\sqrt{n}$ (reference)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of samples averaged, n")
    ax.set_ylabel(r"relative error $\|\bar{J}_n - J\| \,/\, \|J\|$")
    ax.set_title(title or "Monte Carlo error of path sampling shrinks like $1/\\sqrt{n}$",
                 fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return figure


def _cycle(count: int) -> list[str]:
    return [COLORS[i % len(COLORS)] for i in range(count)]


# --------------------------------------------------------------- variance
def plot_variance_vs_depth(width: int = 4, depths=range(1, 9), fraction: float = 0.5,
                           methods: Sequence[str] = ("paths",), partials="balanced",
                           title: str | None = None, *, rng=0):
    """Figure 2 of the paper, computed exactly: relative variance against depth.

    For both families -- independent paths (Figure 2a) and interleaved,
    fully connected layers (Figure 2b) -- of the given ``width``, plots
    ``Var(estimate) / J**2`` at each depth on a log scale, sampling the
    fixed ``fraction`` of out-edges at every vertex (``methods`` may add
    ``"injection"``: random matrix injection keeping that fraction of every
    layer's vertices, drawn dashed).  Computed by
    :func:`minirad.randomized.experiments.variance_by_depth`; no sampling noise.  ``title``
    replaces the default title.

    >>> fig = plot_variance_vs_depth(width=3, depths=[1, 2, 3])
    >>> len(fig.axes[0].get_lines())
    2
    """
    from ..randomized.experiments import variance_by_depth

    depths = list(depths)
    if isinstance(methods, str):
        methods = (methods,)
    figure = _figure(6.4, 4.4)
    ax = figure.add_subplot()
    family_names = {"independent": "independent paths (Fig. 2a)",
                    "interleaved": "interleaved layers (Fig. 2b)"}
    method_names = {"paths": "path sampling", "injection": "matrix injection"}
    for method, style in zip(methods, ("-", "--", ":")):
        for (family, label), color in zip(family_names.items(), COLORS):
            study = variance_by_depth(family, width, depths, fraction=fraction,
                                      partials=partials, rng=rng, method=method)
            relative = np.where(study.relative_variance > 0, study.relative_variance, np.nan)
            ax.plot(study.depths, relative, color=color, linestyle=style, marker="o",
                    markersize=4, label=f"{label}, {method_names.get(method, method)}")
    ax.set_yscale("log")
    ax.set_xlabel("depth (number of layers)")
    ax.set_ylabel(r"relative variance $\mathrm{Var}(\hat J)\,/\,J^2$")
    ax.set_title(title or f"Variance against depth: width {width}, "
                          f"sampling fraction {fraction:.0%}", fontsize=10)
    ax.set_xticks(depths)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return figure


#: a 1/k slope guide is drawn this many times above the curve it accompanies, so it never
#: hides under it (a guide gives the slope, not a value)
GUIDE_OFFSET = 3.0


def _slope_guide(ax, x: np.ndarray, top: float) -> None:
    """A dashed ``1/k`` line starting ``GUIDE_OFFSET`` times above ``top`` at the first k."""
    ax.plot(x, GUIDE_OFFSET * top * x[0] / x, color="grey", linestyle="--", linewidth=1.2,
            label=f"slope guide $\\propto 1/k$ (drawn ×{GUIDE_OFFSET:g} above)")


@takes_graph_or_function
def plot_variance_vs_k(g: LCG, ks=(1, 2, 4, 8, 16), n: int | None = None,
                       title: str | None = None, *, rng=None):
    """Exact variance of path sampling against the number of draws per vertex, log-log.

    Two quantities, normalised differently, so each has its own panel:

    * left, the whole Jacobian: ``sum_ij Var(J_ij) / ||J||**2`` (Frobenius
      norm), with crosses for the empirical value from ``n`` samples per
      ``k`` when ``n`` is given, a check of the formula;
    * right (when the Jacobian has at most 6 entries), each entry relative to
      its own square, ``Var(J_ij) / J_ij**2``.  An entry whose variance is 0
      has no place on a log axis: it gets no line and no legend entry, and
      the panel says in words that its variance is exactly 0.

    Each panel has a dashed ``1/k`` slope guide, drawn above its curves so
    it never hides under them.  ``ks`` may also be fractions of out-edges.
    ``title`` goes above both panels.

    >>> from minirad import examples
    >>> fig = plot_variance_vs_k(examples.figure1(), ks=[1, 2, 4])
    >>> [line.get_label() for line in fig.axes[1].get_lines()][:1]
    ['dy/dx2']
    >>> print(fig.axes[1].texts[0].get_text())
    dy/dx1: variance exactly 0 at every k (not drawn on the log axis)
    """
    from ..exact.jacobians import jacobian
    from ..randomized.sampling import path_sampling_variance, sampled_jacobians

    ks = _check_ks(ks, "plot_variance_vs_k")
    fractions = all(isinstance(k, (float, np.floating)) for k in ks)
    counts = all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in ks)
    if not (fractions or counts):
        raise ValueError(f"plot_variance_vs_k: ks must be all ints (draws per vertex) or all "
                         f"floats (fractions of out-edges), not a mix: {ks!r}")
    exact = jacobian(g)
    variances = np.array([path_sampling_variance(g, k) for k in ks])  # (len(ks), out, in)
    entries = [(i, j) for i in range(exact.shape[0]) for j in range(exact.shape[1])]
    per_entry = len(entries) <= 6
    figure = _figure(10.5 if per_entry else 6.4, 4.6)
    axes = figure.subplots(1, 2 if per_entry else 1, squeeze=False)[0]
    x = np.asarray(ks, dtype=float)

    # the whole Jacobian
    ax = axes[0]
    norm = float(np.linalg.norm(exact) ** 2)
    if norm > 0:
        total = variances.sum(axis=(1, 2)) / norm
        drawn = np.where(total > 0, total, np.nan)
        ax.plot(x, drawn, color="black", linewidth=2.2, marker="o", label="exact")
        if np.isfinite(drawn).any():
            _slope_guide(ax, x, float(np.nanmax(drawn[:1])))
        else:
            _say(ax, "variance exactly 0 at every k: sampling reproduces J")
        if n is not None:
            seeds = _seeds(rng, len(ks))
            empirical = [sampled_jacobians(g, k, n, rng=seed).var(axis=0, ddof=1).sum() / norm
                         for k, seed in zip(ks, seeds)]
            ax.plot(x, empirical, linestyle="none", marker="x", color=EMPIRICAL_COLOR,
                    markersize=8, markeredgewidth=1.6, label=f"from n={n} samples per k")
    else:
        _say(ax, "the Jacobian is 0: a relative variance is undefined")
    ax.set_ylabel(r"$\sum_{ij} \mathrm{Var}(\hat J_{ij}) \;/\; \|J\|^2$")
    ax.set_title("the whole Jacobian: total variance relative to $\\|J\\|^2$", fontsize=10)

    # each entry against its own square
    if per_entry:
        ax = axes[1]
        notes, tops = [], []
        for (i, j), color in zip(entries, COLORS):
            name = f"d{g.names[g.outputs[i]]}/d{g.names[g.inputs[j]]}"
            variance = variances[:, i, j]
            if np.all(variance == 0):
                notes.append(f"{name}: variance exactly 0 at every k (not drawn on the log axis)")
                continue
            if exact[i, j] == 0:
                notes.append(f"{name}: J = 0 but the variance is not: relative variance undefined")
                continue
            rel = variance / exact[i, j] ** 2
            ax.plot(x, np.where(rel > 0, rel, np.nan), color=color, linewidth=1.4, marker=".",
                    markersize=8, label=name)
            tops.append(float(rel[0]))
        if tops:
            _slope_guide(ax, x, max(tops))
        for row, note in enumerate(notes):
            _say(ax, note, row)
        ax.set_ylabel(r"$\mathrm{Var}(\hat J_{ij}) \;/\; J_{ij}^2$ for each entry")
        ax.set_title("each entry: its variance relative to its own square", fontsize=10)

    from matplotlib.ticker import FormatStrFormatter, LogLocator

    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(x, [f"{k:g}" for k in ks])
        ax.minorticks_off()
        # 1, 2, 5 per decade, written out: a decade or less of data would show one label
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.set_xlabel("fraction of out-edges drawn per vertex" if fractions
                      else "k, draws per vertex")
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_lines():
            ax.legend(fontsize=8, loc="upper right")
    figure.suptitle(title or "Exact variance of path sampling against k")
    return figure


def _say(ax, text: str, row: int = 0) -> None:
    """A note in words at the bottom left of a panel, where a line cannot say it."""
    ax.text(0.02, 0.03 + 0.07 * row, text, transform=ax.transAxes, fontsize=8.5,
            ha="left", va="bottom", color="#333333",
            bbox=dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="#bbbbbb"))


# ------------------------------------------------------- elimination costs
def plot_elimination_costs(graphs: Mapping[str, LCG],
                           orders: Sequence[str] = ("forward", "reverse", "markowitz", "optimal"),
                           by: str = "multiplications", title: str | None = None):
    """Grouped bars: the cost of each elimination order on each graph.

    One group per graph, one bar per order, the count written on each bar.
    The optimal order is an exhaustive search and is computed only for
    graphs with at most :data:`minirad.exact.orders.OPTIMAL_LIMIT`
    intermediates; elsewhere its place reads "n/a".  ``by`` is
    ``"multiplications"`` or ``"additions"``; ``title`` replaces the default title.

    >>> from minirad import examples
    >>> fig = plot_elimination_costs({"Figure 1": examples.figure1(),
    ...                               "two outputs": examples.two_outputs()})
    >>> len(fig.axes[0].patches)
    8
    """
    from ..exact.elimination import elimination_cost
    from ..exact.orders import OPTIMAL_LIMIT

    if not isinstance(graphs, Mapping) or not graphs:
        raise TypeError(f"graphs must be a nonempty dict from a name to an LCG, not "
                        f"{type(graphs).__name__}")
    for name, g in graphs.items():
        if not isinstance(g, LCG):
            raise TypeError(f"plot_elimination_costs: graph {name!r} is a "
                            f"{type(g).__name__}, not an LCG")
    if by not in ("multiplications", "additions"):
        raise ValueError(f"by must be 'multiplications' or 'additions', not {by!r}")
    if isinstance(orders, str):
        orders = (orders,)
    which = 0 if by == "multiplications" else 1
    table = {}
    for name, g in graphs.items():
        for order in orders:
            feasible = order != "optimal" or len(g.intermediates) <= OPTIMAL_LIMIT
            table[name, order] = elimination_cost(g, order)[which] if feasible else None
    figure = _figure(max(6.0, 1.5 + 0.3 * len(orders) * len(graphs) + 0.3 * len(graphs)), 4.4)
    ax = figure.add_subplot()
    bar = 0.8 / len(orders)
    centres = np.arange(len(graphs))
    tallest = max((v for v in table.values() if v is not None), default=1) or 1
    for i, (order, color) in enumerate(zip(orders, _cycle(len(orders)))):
        xs = centres - 0.4 + bar * (i + 0.5)
        heights = [table[name, order] for name in graphs]
        bars = ax.bar(xs, [h or 0 for h in heights], bar * 0.92, color=color, label=order)
        for rect, h in zip(bars, heights):
            text = "n/a" if h is None else str(h)
            ax.text(rect.get_x() + rect.get_width() / 2, (h or 0) + tallest * 0.01, text,
                    ha="center", va="bottom", fontsize=8,
                    color="grey" if h is None else "black")
    ax.set_xticks(centres, list(graphs))
    ax.set_ylabel(f"{by} to accumulate the Jacobian")
    ax.set_xlabel("graph")
    ax.set_ylim(0, tallest * 1.15)
    ax.set_title(title or f"Vertex elimination: {by} by order "
                          f"(optimal only up to {OPTIMAL_LIMIT} intermediates)", fontsize=10)
    ax.legend(title="elimination order", fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return figure
