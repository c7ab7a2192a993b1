"""The reverse sweep of a traced graph by pullbacks: each edge as ``adjoint -> adjoint J``.

The reverse sweep (:func:`minirad.graph.labels.reverse`) multiplies each adjoint
by its edge's label, a Jacobian block that the tracer builds from the tape, and
keeps every vertex's adjoint.  On a long program of small arrays, building a
block object per edge costs several times the arithmetic, and keeping every
adjoint makes the memory of the whole program's adjoints at once.
:func:`reverse` is the same recurrence, in the same order, with two changes:

* an edge's adjoint times its label is the edge's pullback (:func:`pull`): an
  elementwise edge (``sin``, ``*``, ...) between arrays of one shape multiplies
  the adjoint by the rule's partial, as its :class:`Diagonal` block would, and
  never builds the block; every other edge (a broadcast, ``@``, ``sum``, a bit
  mask) multiplies by its label, built when it is reached;
* an adjoint is dropped once the edges into its vertex are swept, unless it is
  wanted: what a backward pass does.

:func:`minirad.gradient` and :func:`minirad.vjp` use it on traced graphs of more
than :data:`minirad.exact.sweeps.REFERENCE_EDGES` edges, or when asked with
``engine="pullbacks"``.  Nothing is counted (sweep the labels to count), and a
partial is not checked finite edge by edge: the caller checks the result and,
if it is not finite, sweeps the labels, which name the edge.  The result is
tested equal, to the last bit, to the labels' sweep
(``tests/tracing/test_pullbacks.py``).

>>> import numpy as np
>>> from minirad import trace
>>> g = trace(lambda x: (np.sin(x) * x).sum(), np.array([0.0, 1.0]))
>>> reverse(g, {g.outputs[0]: np.ones(())}, wanted=g.inputs)[0]   # cos(x) x + sin(x)
array([0.        , 1.38177329])
"""

from __future__ import annotations

import numpy as np

from ..graph.operators import OPERATORS
from .ops import Op
from .tracer import edge_label

__all__ = ["pull", "reverse", "sweepable"]


def sweepable(g) -> bool:
    """Whether :func:`reverse` sweeps ``g``: a traced graph with array vertices."""
    return "tracing.edges" in g.memos


def reverse(g, seeds, wanted) -> list:
    """The adjoints of one reverse sweep of the traced graph ``g`` from ``seeds``
    (vertex -> adjoint), at the ``wanted`` vertices (None elsewhere and where
    nothing arrives)."""
    tape, edges, vertex = g.memos["tracing.edges"]
    values = [None] * g.n_vertices
    for v, seed in seeds.items():
        values[v] = seed
    keep = set(wanted)
    src, dst = g.sources.tolist(), g.targets.tolist()
    for e in range(len(src) - 1, -1, -1):
        v, u = dst[e], src[e]
        adjoint = values[v]
        if adjoint is not None:
            term = pull(tape, vertex, adjoint, edges[e])
            values[u] = term if values[u] is None else np.asarray(values[u] + term)
        if (e == 0 or dst[e - 1] != v) and v not in keep:
            values[v] = None   # the edges into v (which a trace lists together) are swept
    return values


def pull(tape, vertex, adjoint, edge):
    """``adjoint`` times the Jacobian of one edge ``(t, o, positions)`` of a traced
    graph: from operand ``o`` (at ``positions``) to the value at tape position ``t``."""
    t, o, positions = edge
    rule, operands, values = tape.rules[t], tape.operands[t], tape.values
    y = values[t]
    if type(rule) is not Op or type(y) is not np.ndarray or not y.ndim or getattr(
            values[o], "shape", ()) != y.shape:   # a block of another kind, or a broadcast
        return OPERATORS.multiply(adjoint, edge_label(tape, edge, vertex))
    at = [values[p] if type(p) is int else p for p in operands]
    partials = rule.on_arrays[1]
    if len(positions) == 1:
        d = partials[positions[0]](*at, y)
        if type(d) is np.ndarray and d.dtype == y.dtype:
            return adjoint * d
        if type(d) is float and d == 1.0:
            return adjoint
        if getattr(d, "dtype", None) == np.bool_:    # a bit mask, as Mask applies it
            return np.where(np.broadcast_to(d, y.shape), adjoint, adjoint.dtype.type(0))
        return adjoint * np.asarray(d, dtype=y.dtype)
    d = None
    for i in positions:     # x * x: the parts as their blocks hold them, added in order
        part = partials[i](*at, y)
        if getattr(part, "dtype", None) == np.bool_:
            part = np.broadcast_to(part, y.shape).astype(y.dtype)
        elif type(part) is float and part == 1.0:
            part = np.ones((), y.dtype)
        else:
            part = np.asarray(part, dtype=y.dtype)
        d = part if d is None else d + part
    return adjoint * d
