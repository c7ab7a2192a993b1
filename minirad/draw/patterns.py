"""Pictures of Jacobian structure: the pattern with its colour groups, the seeds
and multiplications of each way of sweeping it, and each edge's Jacobian block
of a graph of arrays as the matrix it stands for.

Like :mod:`minirad.draw.plots`, every function returns a :class:`minirad.draw.figure.Figure`
built without pyplot (it shows inline in Jupyter; elsewhere ``fig.savefig``).

>>> from minirad import examples
>>> fig = plot_pattern(examples.banded(6))
>>> [ax.get_title().splitlines()[0] for ax in fig.axes]
['forward: 3 column groups', 'reverse: 3 row groups']
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from ..exact.compressed import STRATEGIES, Plan, plan
from ..exact.sparsity import as_pattern, colour_columns, colour_rows, pattern
from ..graph.lcg import takes_graph_or_function
from . import palette
from .render import PATH_COLORS

__all__ = ["plot_blocks", "plot_pattern", "plot_strategies"]

#: cells larger than this many per side are not numbered
NUMBER_LIMIT = 24


def _figure(width: float, height: float):
    from .figure import Figure  # shows inline in any Jupyter kernel

    return Figure(figsize=(width, height), layout="constrained")


def _as_pattern(g_or_pattern) -> np.ndarray:
    if hasattr(g_or_pattern, "inputs") and hasattr(g_or_pattern, "labels"):
        return pattern(g_or_pattern)
    return as_pattern(g_or_pattern)


def _panel(ax, P: np.ndarray, colours, side: str) -> None:
    m, n = P.shape
    groups = max(colours, default=-1) + 1
    if groups <= len(PATH_COLORS):
        palette = list(PATH_COLORS[:groups])
    else:  # more groups than the path colours: distinct hues (the numbers tell them apart too)
        from matplotlib import colormaps

        palette = [colormaps["turbo"](0.05 + 0.9 * c / (groups - 1)) for c in range(groups)]
    cell = np.full(P.shape, -1)
    for k, c in enumerate(colours):
        if side == "columns":
            cell[P[:, k], k] = c
        else:
            cell[k, P[k, :]] = c
    ax.imshow(np.ma.masked_less(cell, 0), cmap=ListedColormap(palette or ["white"]),
              vmin=-0.5, vmax=max(groups, 1) - 0.5, interpolation="nearest")
    if max(m, n) <= NUMBER_LIMIT:
        from matplotlib.colors import to_rgb

        for (i, j), c in np.ndenumerate(cell):
            if c >= 0:
                r, g, b = to_rgb(palette[c])
                ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
                ax.text(j, i, str(c), ha="center", va="center", fontsize=8, color=ink)
    ax.set_xticks(range(n) if n <= NUMBER_LIMIT else [])
    ax.set_yticks(range(m) if m <= NUMBER_LIMIT else [])
    ax.set_xticks(np.arange(-0.5, n, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, m, 1), minor=True)
    ax.grid(which="minor", color="#dddddd", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel("input (column)")
    ax.set_ylabel("output (row)")


def plot_pattern(g_or_pattern, strategy: str = "best"):
    """The Jacobian's sparsity pattern twice: nonzeros coloured by the forward
    seed group of their column, and by the reverse seed group of their row.
    A number in a cell is its group; one sweep per group recovers every cell
    of that colour, since within a group no row (column) holds two of them.

    ``g_or_pattern`` is an LCG (of numbers or of arrays), or a Boolean pattern.
    """
    P = _as_pattern(g_or_pattern)
    m, n = P.shape
    columns, rows = colour_columns(P, strategy), colour_rows(P, strategy)
    size = min(5.0, 1.0 + 0.28 * max(m, n))
    fig = _figure(2 * size + 1.0, size + 1.3)
    left, right = fig.subplots(1, 2)
    _panel(left, P, columns.colours, "columns")
    left.set_title(f"forward: {columns.n_colours} column groups\n"
                   f"({columns.n_colours} sweeps instead of {n}); colour = group of the column",
                   fontsize=9)
    _panel(right, P, rows.colours, "rows")
    right.set_title(f"reverse: {rows.n_colours} row groups\n"
                    f"({rows.n_colours} sweeps instead of {m}); colour = group of the row",
                    fontsize=9)
    fig.suptitle(f"Jacobian sparsity pattern, {m} x {n}, {int(P.sum())} structural nonzeros",
                 fontsize=10)
    return fig


def plot_strategies(g_or_plan, by: str | None = None):
    """A table: for each strategy, its forward and reverse sweeps, the
    multiplications and additions by the sweeps' convention, and the
    multiplications if every sweep visited every edge; the chosen row is
    highlighted and its reason printed underneath.

    >>> from minirad import examples
    >>> fig = plot_strategies(examples.arrow(6), by="passes")
    >>> fig.axes[0].get_title()
    'Seeds and multiplications per strategy (chosen by passes: mixed)'
    """
    if isinstance(g_or_plan, Plan):
        p = g_or_plan if by is None else Plan(g_or_plan.pattern, g_or_plan.seedings, by)
    else:
        p = plan(g_or_plan, STRATEGIES, by or "multiplications")
    header = ["strategy", "forward sweeps", "reverse sweeps", "multiplications", "additions",
              "mults if every sweep\nvisited every edge"]
    rows = [[s.name, s.forward_sweeps, s.reverse_sweeps, s.multiplications, s.additions,
             s.pass_multiplications] for s in p.seedings]
    reason = p.explanation().splitlines()[len(p.seedings) + 1:]
    text = "\n".join(_wrap(line) for line in reason)
    lines = text.count("\n") + 1
    table_height, text_height = 0.4 * (len(rows) + 1.5), 0.17 * lines + 0.2
    fig = _figure(8.6, table_height + text_height + 0.4)
    ax = fig.subplots()
    ax.axis("off")
    share = text_height / (table_height + text_height)
    table = ax.table(cellText=[[str(x) for x in r] for r in rows], colLabels=header,
                     cellLoc="center", bbox=[0.0, share, 1.0, 1.0 - share],
                     colWidths=[0.19, 0.15, 0.15, 0.16, 0.12, 0.23])
    table.auto_set_font_size(False)
    table.set_fontsize(9)
    for (r, _), cell in table.get_celld().items():
        if r == 0:
            cell.set_text_props(weight="bold")
        elif p.seedings[r - 1] is p.best:
            cell.set_facecolor("#d9f0d3")
            cell.set_text_props(weight="bold")
    ax.set_title(f"Seeds and multiplications per strategy (chosen by {p.by}: {p.best.name})",
                 fontsize=10)
    ax.text(0.0, share * 0.9, text, transform=ax.transAxes, fontsize=8, va="top")
    return fig


def _wrap(line: str, width: int = 120) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(line, width)) or line


@takes_graph_or_function
def plot_blocks(g, max_entries: int = 4096, title: str | None = None):
    """Every edge's Jacobian block as a small heatmap: the structure an operator
    stores compactly (a diagonal, a mask, the Kronecker pattern of ``x @ W`` seen
    from W), seen as the matrix it stands for, red positive and blue negative,
    each on its own scale (the colour bar beside it), centred on 0.
    Blocks of more than ``max_entries`` entries are named but not drawn.

    >>> import numpy as np
    >>> from minirad import examples
    >>> figure = plot_blocks(examples.figure3())
    >>> blocks = [ax for ax in figure.axes if ax.images]
    >>> len(blocks), blocks[0].get_title().splitlines()[1]
    (5, '15 × 20, 60 nonzero')
    >>> len(figure.axes) - len(blocks)      # one colour bar each
    5
    """
    from matplotlib.ticker import MaxNLocator

    n = g.n_edges
    if n == 0:
        raise ValueError("the graph has no edges, so no Jacobian blocks to draw")
    cols = min(n, 3)
    rows = -(-n // cols)
    figure = _figure(3.9 * cols, 3.4 * rows)
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        figure.delaxes(ax)
    for ax, (u, v, label) in zip(axes, g.edges()):
        block = np.array([[label]]) if isinstance(label, float) else None
        name = f"∂{g.names[v]}/∂{g.names[u]}: " + (
            "a number" if block is not None else label.label())
        out_size, in_size = (1, 1) if block is not None else (label.out_size, label.in_size)
        if out_size * in_size > max_entries:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"{name}\n{out_size} × {in_size}\n(too large to draw)",
                    ha="center", va="center", fontsize=9)
            continue
        if block is None:
            block = np.asarray(label.to_dense(), dtype=np.float64)
        scale = float(np.abs(block).max()) or 1.0
        image = ax.imshow(block, cmap=palette.DIVERGING, vmin=-scale, vmax=scale,
                          interpolation="nearest", aspect="auto")
        bar = figure.colorbar(image, ax=ax, shrink=0.85, pad=0.02)
        bar.ax.tick_params(labelsize=9)
        ax.set_title(f"{name}\n{out_size} × {in_size}, {int(np.count_nonzero(block))} nonzero",
                     fontsize=9.5)
        ax.set_xlabel(f"{g.names[u]} entries", fontsize=9)
        ax.set_ylabel(f"{g.names[v]} entries", fontsize=9)
        ax.tick_params(labelsize=9)
        for axis, count in ((ax.xaxis, block.shape[1]), (ax.yaxis, block.shape[0])):
            if count <= 8:
                axis.set_ticks(range(count))
            else:
                axis.set_major_locator(MaxNLocator(integer=True))
    if title:
        figure.suptitle(title, fontsize=11)
    return figure
