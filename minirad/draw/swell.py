"""The picture of expression swell: symbolic derivatives against the LCG.

:func:`plot_swell` measures (:func:`minirad.symbolic.swell`) two families as
they grow and draws, on a log scale, the size of the derivative as SymPy
writes it (tree nodes, nothing shared), after SymPy's common-subexpression
elimination, the program itself as a tree, and the edges of the program's
LCG, which a reverse sweep multiplies along once each.  Left: the AD
lecture's ``prod(x_1..x_n)``, whose gradient has n entries of n - 1 factors;
right: ``x_(k+1) = sin(x_k) x_k`` repeated n times, whose formula doubles at
every step.  Needs SymPy (``pip install 'minirad[symbolic]'``).

>>> fig = plot_swell(sizes=(2, 4), depths=(1, 2))
>>> [line.get_label() for line in fig.axes[0].get_lines()]   # doctest: +NORMALIZE_WHITESPACE
['derivative as SymPy trees', 'derivative after sympy.cse', 'the program as a tree',
 'LCG edges (one multiply each per sweep)']
"""

from __future__ import annotations

from .. import examples, symbolic
from .render import PATH_COLORS

__all__ = ["plot_swell"]

#: (label, Swell field, colour, marker) of each line, in the legend's order
LINES = (
    ("derivative as SymPy trees", "derivative_nodes", PATH_COLORS[1], "o"),
    ("derivative after sympy.cse", "cse_nodes", PATH_COLORS[2], "s"),
    ("the program as a tree", "formula_nodes", "#999999", "^"),
    ("LCG edges (one multiply each per sweep)", "lcg_edges", PATH_COLORS[0], "D"),
)


def _figure(width: float, height: float):
    from .figure import Figure  # shows inline in any Jupyter kernel

    return Figure(figsize=(width, height), layout="constrained")


def _draw(ax, xs, rows):
    for label, name, color, marker in LINES:
        ax.plot(xs, [getattr(row, name) for row in rows], marker=marker, color=color,
                label=label, linestyle="--" if name == "formula_nodes" else "-", markersize=4)
    ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)


def plot_swell(sizes=(2, 4, 8, 16, 32, 64), depths=tuple(range(1, 11))):
    """Two panels: the gradient of ``prod(x_1..x_n)`` for n in ``sizes``
    (log-log), and the derivative of ``depths`` repeated compositions
    (log y)."""
    products = [symbolic.swell(examples.product_program, *[1.0] * n) for n in sizes]
    compositions = [symbolic.swell(examples.composition_program(n), 0.5) for n in depths]
    fig = _figure(11.0, 4.4)
    left, right = fig.subplots(1, 2)
    _draw(left, sizes, products)
    left.set_xscale("log", base=2)
    left.set_xticks(sizes, [str(n) for n in sizes])
    left.minorticks_off()
    left.set_xlabel("n, the number of inputs")
    left.set_ylabel("nodes or edges (log scale)")
    left.set_title(r"gradient of $y = x_1 x_2 \cdots x_n$", fontsize=10)
    _draw(right, depths, compositions)
    right.set_xticks(depths)
    right.set_xlabel(r"n, the number of steps $x_{k+1} = \sin(x_k)\, x_k$")
    right.set_title(r"derivative of $x_n$ with respect to $x_0$", fontsize=10)
    left.legend(fontsize=8, loc="upper left")
    fig.suptitle("Symbolic derivatives grow faster than the program's LCG; common-"
                 "subexpression elimination recovers part of the sharing", fontsize=10)
    return fig
