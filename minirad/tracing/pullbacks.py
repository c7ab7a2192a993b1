"""A traced graph's edges as pullbacks: each the function ``adjoint -> adjoint J``.

The reverse sweep (:func:`minirad.graph.labels.reverse`) multiplies each adjoint
by its edge's label, a Jacobian block that the tracer builds from the tape.  On a
long program of small arrays, building a block object per edge costs several
times the arithmetic.  So :func:`minirad.gradient` runs the very same sweep
with the tape's records of the edges as labels and an algebra whose
``multiply(adjoint, edge)`` is the edge's pullback (:func:`pullbacks`), on traced
graphs of more than :data:`minirad.exact.sweeps.REFERENCE_EDGES` edges, or when
asked with ``engine="pullbacks"``:

* an elementwise edge (``sin``, ``*``, ...) between arrays of one shape multiplies
  the adjoint by the rule's partial, which is what its :class:`Diagonal` block
  would do, without the block;
* every other edge (a broadcast, ``@``, ``sum``, a bit mask) multiplies by its
  label as the labels' sweep does, built when first needed.

Nothing is counted (the counts are the labels': sweep those to count), and a
partial is not checked finite edge by edge: the caller checks the result and,
if it is not finite, sweeps the labels, which name the edge.  The result is
tested equal, to the last bit, to the labels' sweep
(``tests/tracing/test_pullbacks.py``).

>>> import numpy as np
>>> from minirad import trace
>>> from minirad.graph.labels import reverse
>>> g = trace(lambda x: (np.sin(x) * x).sum(), np.array([0.0, 1.0]))
>>> algebra, edges = pullbacks(g)
>>> swept = reverse(g, {g.outputs[0]: np.ones(())}, algebra=algebra, labels=edges)
>>> swept.values[g.inputs[0]]              # cos(x) x + sin(x)
array([0.        , 1.38177329])
"""

from __future__ import annotations

import functools

import numpy as np

from ..graph.labels import Algebra
from ..graph.operators import OPERATORS
from .ops import Op
from .tracer import edge_label

__all__ = ["pullbacks"]


def pullbacks(g):
    """``(algebra, edges)`` for :func:`minirad.graph.labels.reverse` to sweep ``g`` by
    pullbacks, or None when ``g`` is not a traced graph with array vertices."""
    record = g.memos.get("tracing.edges")
    if record is None:
        return None
    tape, edges, vertex = record
    return Algebra("pullbacks", functools.partial(pull, tape, vertex), _add,
                   multiply_cost=_nothing, add_cost=_nothing), edges


def _add(a, b):
    return np.asarray(a + b)   # adjoints are arrays: the operators' algebra adds them so


def _nothing(a, b) -> int:
    return 0


def pull(tape, vertex, adjoint, edge):
    """``adjoint`` times the Jacobian of one edge ``(t, o, positions)`` of a traced
    graph: from operand ``o`` (at ``positions``) to the value at tape position ``t``."""
    t, o, positions = edge
    rule, operands, values = tape.rules[t], tape.operands[t], tape.values
    y = values[t]
    if type(rule) is not Op or type(y) is not np.ndarray or not y.ndim or np.shape(
            values[o]) != y.shape:   # a block of another kind, or a broadcast
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
