"""How a reverse sweep accumulates its cotangents: plainly, in place, or on demand.

The reference reverse sweep (:func:`minirad.graph.labels.reverse`) takes the
edges in reverse order and, for each edge ``u -> v``, adds the term
``adjoint[v] * label`` to ``adjoint[u]`` with the algebra's ``add``.  On a
graph of arrays every term is a new array and so is every sum: a vertex
used three times costs three terms and two sums.  The ChainRules notes (the
course's seed 002) show two ways to do less, and :func:`reverse` offers both:

* ``in_place=True``, the maybe-mutating add ``add!!``
  (:func:`add_bang`): when the accumulator is the sweep's *own* array, the
  term is added into it instead of into a new array.  An array is the
  sweep's own when the sweep made it and nothing else can see it: a term
  computed into a fresh buffer is, a term that is a view of the successor's
  cotangent (the pullback of a copy, a reshape or a transpose returns its
  input) is not, nor is a seed the caller passed in, nor a read-only array.
  A sum that had to be allocated is the sweep's own from then on.  Numbers
  (Python floats) are immutable: for them ``add!!`` is plain ``+``.
* ``lazy=True``, deferred cotangents: a cotangent is a :class:`Thunk`, the
  list of edges whose terms it would sum, and is computed only when forced.
  The sweep forces the cotangents it is asked for (``wanted``); forcing one
  forces the cotangents its terms read, first.  A branch of the graph from
  which no wanted vertex can be reached stays a thunk that is never forced:
  none of its terms is multiplied, added or allocated.

Both change how much is allocated, never a number: the same terms are
added in the same order (the reference's, reverse edge order), and numpy's
``a += b`` rounds exactly as ``a + b`` does, so every cotangent equals the
reference's bit for bit (``tests/exact/test_cotangents.py``).

>>> import numpy as np
>>> from minirad import trace
>>> x = np.arange(4.0)
>>> g = trace(lambda x: (x * 2.0 + x * 3.0 + x * 4.0).sum(), x)   # x used 3 times
>>> seeds = {g.outputs[0]: np.ones(())}
>>> plain = reverse_accumulation(g, seeds)
>>> mine = reverse_accumulation(g, seeds, in_place=True)
>>> plain.values[0], mine.values[0]
(array([9., 9., 9., 9.]), array([9., 9., 9., 9.]))
>>> plain.allocations, mine.allocations   # 3 terms into x and 2 sums; in place, no sums
(5, 3)

A branch the wanted cotangents do not need is never computed:

>>> g = trace(lambda w, d: (w * w).sum() + (np.exp(d) * d).sum(), x, x)
>>> w, d = g.inputs
>>> swept = reverse_accumulation(g, {g.outputs[0]: np.ones(())}, wanted=[w], lazy=True)
>>> swept.values[w], type(swept.values[d]).__name__, swept.deferred
(array([0., 2., 4., 6.]), 'Thunk', 4)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import numpy as np

from ..graph.lcg import takes_graph_or_function

__all__ = ["Sweep", "Thunk", "add_bang", "check_options", "reverse_accumulation"]

class Thunk:
    """A cotangent not computed yet: where it starts (a seed, or None) and the
    edges ``u -> v`` whose terms ``adjoint[v] * label`` it sums, in the order
    the reference sweep adds them."""

    __slots__ = ("start", "edges")

    def __init__(self, start=None):
        self.start = start
        self.edges: list[int] = []

    def __repr__(self) -> str:
        return f"Thunk({len(self.edges)} terms pending)"


class Sweep(NamedTuple):
    """What :func:`reverse` leaves: a cotangent per vertex (None where no seed is
    reached, a :class:`Thunk` where it was never forced), the operations the sweep
    did, and the arrays it allocated (terms in new buffers and sums; numbers are
    not counted) with their bytes."""

    values: list
    multiplications: int
    additions: int
    allocations: int
    allocated_bytes: int
    deferred: int


def check_options(in_place, lazy) -> bool:
    """Validate the two options; True when they ask for the plain reference sweep.

    >>> check_options(False, False), check_options(True, False)
    (True, False)
    """
    for name, option in (("in_place", in_place), ("lazy", lazy)):
        if not isinstance(option, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, not {type(option).__name__}")
    return not in_place and not lazy


def _can_hold(total, term) -> bool:
    """Whether ``total += term`` gives ``total + term`` in ``total``'s buffer: a
    writeable array whose dtype and shape the sum keeps."""
    return (isinstance(total, np.ndarray) and isinstance(term, (np.ndarray, np.generic))
            and total.flags.writeable and np.result_type(total, term) == total.dtype
            and np.broadcast_shapes(total.shape, np.shape(term)) == total.shape)


def add_bang(add, total, term, own: bool):
    """The maybe-mutating add ``add!!``: ``total + term``, written into ``total``
    when it is the caller's ``own`` array and can hold the sum, else ``add(total,
    term)`` in a new one.  Returns the sum and whether it is the caller's own.

    >>> import operator
    >>> a = np.zeros(3)
    >>> total, own = add_bang(operator.add, a, np.ones(3), own=True)
    >>> total is a, a                          # mutated: a was ours
    (True, array([1., 1., 1.]))
    >>> total, own = add_bang(operator.add, a, np.ones(3), own=False)
    >>> total is a, a, own                     # allocated: a is someone else's
    (False, array([1., 1., 1.]), True)
    >>> add_bang(operator.add, 1.5, 2.0, own=True)   # numbers are immutable: plain +
    (3.5, False)
    """
    if own and _can_hold(total, term):
        np.add(total, term, out=total)
        return total, True
    total = add(total, term)
    return total, isinstance(total, np.ndarray)


class _Accumulator:
    """The cotangents of one sweep and the bookkeeping of what they cost."""

    def __init__(self, g, seeds: Mapping, in_place: bool):
        self.algebra = g.algebra
        labels = g.labels
        # Python floats: scalar arithmetic on them is faster than on numpy scalars
        self.labels = labels.tolist() if isinstance(labels, np.ndarray) else labels
        self.sources, self.targets = g.sources.tolist(), g.targets.tolist()
        self.in_place = in_place
        self.values = [None] * g.n_vertices
        self.own = [False] * g.n_vertices     # seeds belong to the caller
        for v, seed in seeds.items():
            self.values[int(v)] = seed
        self.multiplications = self.additions = self.allocations = self.allocated_bytes = 0

    def take(self, e: int) -> None:
        """Add the term of edge ``e`` (u -> v) to the cotangent of u."""
        u, v = self.sources[e], self.targets[e]
        adjoint, label = self.values[v], self.labels[e]
        term = self.algebra.multiply(adjoint, label)
        self.multiplications += self.algebra.multiply_cost(adjoint, label)
        # a linear map's output can share memory only with its input: a term that does
        # not is a new buffer, the sweep's own
        fresh = isinstance(term, np.ndarray) and not np.may_share_memory(term, adjoint)
        if fresh:
            self._allocated(term)
        total = self.values[u]
        if total is None:
            self.values[u], self.own[u] = term, fresh and term.flags.writeable
            return
        self.additions += self.algebra.add_cost(total, term)
        if self.in_place:
            result, self.own[u] = add_bang(self.algebra.add, total, term, self.own[u])
        else:
            result = self.algebra.add(total, term)
        if result is not total and isinstance(result, np.ndarray):
            self._allocated(result)
        self.values[u] = result

    def _allocated(self, array: np.ndarray) -> None:
        self.allocations += 1
        self.allocated_bytes += array.nbytes

    def result(self) -> Sweep:
        deferred = sum(isinstance(x, Thunk) for x in self.values)
        return Sweep(self.values, self.multiplications, self.additions, self.allocations,
                     self.allocated_bytes, deferred)


@takes_graph_or_function
def reverse_accumulation(g, seeds: Mapping, *, wanted: Iterable[int] | None = None,
                         in_place: bool = False, lazy: bool = False) -> Sweep:
    """The reverse sweep ``adjoint[u] = sum over edges u -> v of adjoint[v] * label``
    from ``seeds`` (vertex number -> cotangent), with the accumulation of the module
    docstring.  ``wanted`` lists the vertices whose cotangents a lazy sweep forces
    (default: every vertex, which defers nothing); an eager sweep computes all.

    With ``in_place=False`` and ``lazy=False`` this is the reference sweep
    itself, term for term.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> swept = reverse_accumulation(g, {g.index("y"): 1.0}, lazy=True, wanted=[g.index("x2")])
    >>> round(swept.values[g.index("x2")], 3), swept.multiplications   # 2 of the 8 edges
    (1.716, 5)
    """
    check_options(in_place, lazy)
    state = _Accumulator(g, seeds, bool(in_place))
    edges = range(len(state.sources) - 1, -1, -1)
    if not lazy:
        for e in edges:
            if state.values[state.targets[e]] is not None:
                state.take(e)
        return state.result()
    values = state.values
    for e in edges:        # the same pass, recording each term instead of computing it
        if values[state.targets[e]] is not None:
            u = state.sources[e]
            if not isinstance(values[u], Thunk):
                values[u] = Thunk(values[u])
            values[u].edges.append(e)
    _force(state, range(g.n_vertices) if wanted is None else wanted)
    return state.result()


def _force(state: _Accumulator, wanted: Iterable[int]) -> None:
    """Compute the thunks of ``wanted`` and of every thunk they read, and nothing else.

    A thunk reads the cotangents of the heads of its edges, which are later
    vertices; computing the needed thunks from the last vertex to the first
    therefore finds each term's cotangent ready (no recursion, however deep
    the graph)."""
    values, needed, stack = state.values, set(), [int(v) for v in wanted]
    while stack:
        u = stack.pop()
        if isinstance(values[u], Thunk) and u not in needed:
            needed.add(u)
            stack.extend(state.targets[e] for e in values[u].edges)
    for u in sorted(needed, reverse=True):
        thunk = values[u]
        values[u] = thunk.start
        for e in thunk.edges:
            state.take(e)
