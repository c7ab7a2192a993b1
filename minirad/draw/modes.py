"""What forward mode, reverse mode and a Hessian-vector product cost, counted and drawn.

The cost of a method is its multiplications of a partial by a tangent or an
adjoint, the count :mod:`minirad.exact.sweeps` uses (partials of 1 and -1
included):

* forward mode by dual numbers (:mod:`minirad.tracing.dual`): counted while
  it runs, one pass per input, every operand's tangent multiplied (zeros too:
  a dual does not know its tangent is structurally zero);
* the forward sweep over the traced graph: one seed per input, each
  multiplying along the edges its seed reaches;
* the reverse sweep: one seed, the output, for the whole gradient;
* a Hessian-vector product: one forward sweep along ``v`` over the recorded
  gradient graph (:func:`minirad.exact.higher.gradient_graph`).

>>> from minirad import ops
>>> costs = mode_costs(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
>>> costs["duals"], costs["forward sweep"], costs["reverse sweep"]
(16, 10, 8)
"""

from __future__ import annotations

import numpy as np

from ..graph.lcg import LCG, reachable, takes_graph_or_function
from .figure import Figure
from .render import PATH_COLORS as COLORS

__all__ = ["lecture_family", "mode_costs", "plot_mode_costs", "sweep_cost"]


def _dual_multiplications(f, args) -> int:
    """The multiplications partial x tangent of ``len(args)`` passes of ``f`` on dual
    numbers, one per input, counted by tangents that count them."""
    from ..tracing.dual import Dual

    count = [0]

    class Counting(float):
        """A tangent: a float that counts the products it takes part in."""

        def __rmul__(self, other):
            count[0] += 1
            return Counting(float(other) * float(self))

        __mul__ = __rmul__

        def __add__(self, other):
            return Counting(float(self) + float(other))

        __radd__ = __add__

    for j in range(len(args)):
        f(*(Dual(x, Counting(1.0 if i == j else 0.0)) for i, x in enumerate(args)))
    return count[0]


@takes_graph_or_function
def sweep_cost(g: LCG, seeds, direction: str = "forward") -> int:
    """The multiplications of one sweep seeded on all of ``seeds`` together (one
    tangent vector, or one adjoint): every edge out of (``direction="forward"``) or
    into (``"reverse"``) a vertex the seeds reach.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> sweep_cost(g, g.inputs), sweep_cost(g, g.outputs, direction="reverse")
    (8, 8)
    """
    reached = reachable(g, list(seeds), direction)
    degree = g.out_degrees if direction == "forward" else np.diff(g.in_edges_ptr)
    return int(degree[reached].sum())


def mode_costs(f, *args) -> dict[str, int]:
    """The multiplications of each way to the gradient of ``f`` at ``args`` (numbers),
    and of one Hessian-vector product: a dict with the keys ``"duals"`` (n passes),
    ``"forward sweep"`` (n seeds), ``"reverse sweep"`` (one seed) and ``"hvp"`` (one
    forward sweep along a dense ``v`` over the recorded gradient graph)."""
    from ..exact.higher import gradient_graph
    from ..exact.sweeps import forward_sweep, reverse_sweep
    from ..tracing import trace

    g = trace(f, *args)
    G = gradient_graph(f, *args)
    return {"duals": _dual_multiplications(f, args),
            "forward sweep": forward_sweep(g).multiplications,
            "reverse sweep": reverse_sweep(g).multiplications,
            "hvp": sweep_cost(G, G.inputs)}


def lecture_family(n: int):
    """The lecture's example y = ln(x1) + x1 x2 - sin(x2) summed over the neighbouring
    pairs of n inputs: ``(f, args)``, a program of n inputs and one output (n = 2 is
    the lecture's own, at its point (2, 5))."""
    from ..tracing import ops

    def f(*x):
        terms = [ops.log(a) + a * b - ops.sin(b) for a, b in zip(x, x[1:])]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total

    return f, tuple(2.0 + 3.0 * (i % 2) for i in range(n))


def _family_costs(n: int) -> dict[str, int]:
    f, args = lecture_family(n)
    return mode_costs(f, *args)


def plot_mode_costs(sizes=(2, 4, 8, 16, 32, 64), title: str | None = None):
    """Three panels of multiplication counts (:func:`mode_costs`): (a) the lecture's
    example, one bar per method; (b) the same summed over n inputs
    (:func:`lecture_family`), against n; (c) one Hessian-vector product over one
    gradient, against n.

    >>> fig = plot_mode_costs(sizes=(2, 4))
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['', 'inputs n', 'inputs n']
    """
    sizes = [int(n) for n in sizes]
    if not sizes or min(sizes) < 2:
        raise ValueError(f"sizes are numbers of inputs, each at least 2, not {sizes}")
    table = [_family_costs(n) for n in sizes]
    lecture = _family_costs(2)
    methods = ("duals", "forward sweep", "reverse sweep")
    shown = {"duals": "forward mode, dual numbers (n passes)",
             "forward sweep": "forward sweep on the graph (n seeds)",
             "reverse sweep": "reverse sweep (one seed)"}
    figure = Figure(figsize=(12.5, 4.8), layout="constrained")
    bars, lines, ratio = figure.subplots(1, 3, gridspec_kw={"width_ratios": [0.8, 1.2, 1.0]})

    heights = [lecture[m] for m in methods]
    rects = bars.bar(range(3), heights, color=COLORS[:3], width=0.6)
    for rect, h in zip(rects, heights):
        bars.text(rect.get_x() + rect.get_width() / 2, h + 0.2, str(h), ha="center",
                  va="bottom", fontsize=9)
    bars.set_xticks(range(3), ["duals\n(2 passes)", "forward\nsweep\n(2 seeds)",
                               "reverse\nsweep\n(1 seed)"], fontsize=9.5)
    bars.set_ylim(0, max(heights) * 1.25)
    bars.set_ylabel("multiplications for the gradient")
    bars.set_title("(a) the lecture's y = ln(x1) + x1·x2 − sin(x2)", fontsize=10)

    for method, color, marker in zip(methods, COLORS, "os^"):
        lines.plot(sizes, [row[method] for row in table], marker=marker, color=color,
                   label=shown[method])
    for ax in (lines, ratio):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
    lines.set_yscale("log")
    lines.set_xlabel("inputs n")
    lines.set_ylabel("multiplications for the gradient")
    lines.set_title("(b) the same summed over neighbouring pairs of n inputs", fontsize=10)
    lines.legend(fontsize=9, loc="upper left")
    lines.grid(True, alpha=0.3)

    ratios = [row["hvp"] / row["reverse sweep"] for row in table]
    ratio.plot(sizes, ratios, marker="o", color=COLORS[3],
               label=f"one Hessian-vector product / one gradient "
                     f"({min(ratios):.2f} to {max(ratios):.2f})")
    ratio.plot(sizes, [n * r for n, r in zip(sizes, ratios)], marker="s", color=COLORS[4],
               label="the full Hessian (n products) / one gradient")
    ratio.set_yscale("log")
    ratio.set_xlabel("inputs n")
    ratio.set_ylabel("multiplications, in gradients")
    ratio.set_title("(c) forward over reverse on the recorded gradient graph", fontsize=10)
    ratio.legend(fontsize=9, loc="upper left")
    ratio.grid(True, alpha=0.3)
    figure.suptitle(title or "Multiplications of forward and reverse mode (partial × tangent "
                             "or adjoint, as the sweeps count them)", fontsize=11)
    return figure
