"""Accumulation that leaves the float range: find where, and say so.

Tracing refuses non-finite values and partials, yet a product of finite
partials can still overflow: on ``x -> a -> y`` with both partials 1e200
the Jacobian is 1e400, which is ``inf`` in double precision.  Every method
(Bauer's sum, the forward and reverse sweeps, vertex elimination, path
sampling) checks its result and raises :class:`AccumulationOverflow`, a
``ValueError``, naming the method, the Jacobian entry and the vertex where
the value first left the float range, instead of returning ``inf`` or
``nan`` silently.

>>> from minirad.graph.lcg import LCG
>>> from minirad.exact.sweeps import forward_sweep
>>> g = LCG.from_edges([("x", "a", 1e200), ("a", "y", 1e200)], inputs=["x"], outputs=["y"])
>>> forward_sweep(g)
Traceback (most recent call last):
...
minirad.exact.overflow.AccumulationOverflow: forward: dy/dx overflowed to inf ...
"""

from __future__ import annotations

import math

import numpy as np

from ..graph.labels import FLOATS, forward, reverse
from ..graph.lcg import takes_graph_or_function
from .result import entry_name

__all__ = ["AccumulationOverflow", "check_finite"]


class AccumulationOverflow(ValueError):
    """A Jacobian entry overflowed the double-precision range (about ±1.8e308)."""


def _finite(value) -> bool:
    return value is None or (isinstance(value, (int, float, np.number)) and math.isfinite(value))


def first_overflow(g, input_vertex=None, output_vertex=None) -> int | None:
    """The vertex where the derivative first stops being finite.

    With ``input_vertex``: the first vertex, in topological order, whose
    tangent d v / d input is not finite (a forward sweep from that input).
    With ``output_vertex``: the first vertex, walking back from the output,
    whose adjoint d output / d v is not finite.  None when nothing overflows
    or the graph's labels are not floats.
    """
    if g.algebra is not FLOATS:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        if input_vertex is not None:
            values = forward(g, {int(input_vertex): 1.0}).values
            scan = range(g.n_vertices)
        else:
            values = reverse(g, {int(output_vertex): 1.0}).values
            scan = range(g.n_vertices - 1, -1, -1)
        return next((v for v in scan if not _finite(values[v])), None)


@takes_graph_or_function
def check_finite(g, jacobian, method: str, *, rows=None, columns=None, vertex=None,
                 direction: str = "forward", what: str = "") -> None:
    """Raise :class:`AccumulationOverflow` unless every entry of ``jacobian`` is finite.

    ``rows``/``columns`` are the output/input vertices of the matrix (all of
    them by default; an array vertex stands for its entries); ``vertex``
    names where it overflowed when the method knows (an elimination step),
    else, on a graph of numbers, it is found with :func:`first_overflow`
    (walking back from the output when ``direction="reverse"``).  ``what`` is added to
    the message (e.g. which sample).
    """
    jacobian = np.asarray(jacobian)
    if jacobian.dtype.kind not in "fc" or np.isfinite(jacobian).all():
        return
    rows = list(g.outputs if rows is None else rows)
    columns = list(g.inputs if columns is None else columns)
    r, c = (int(i) for i in np.argwhere(~np.isfinite(jacobian))[0])
    if vertex is None and g.algebra is FLOATS:   # rows and columns are vertices
        found = (first_overflow(g, output_vertex=rows[r]) if direction == "reverse"
                 else first_overflow(g, columns[c]))
        vertex = None if found is None else g.names[found]
    at = f", first at vertex {vertex}" if vertex is not None else ""
    raise AccumulationOverflow(
        f"{method}: d{entry_name(g, rows, r)}/d{entry_name(g, columns, c)} overflowed to "
        f"{jacobian[r, c]}{what} "
        f"(a product of partials left the double-precision range, about ±1.8e308){at}; "
        f"rescale the program's variables so that its derivatives are representable")
