"""Vertex elimination: collapse an LCG, one intermediate at a time, into its Jacobian.

Eliminating an intermediate vertex ``v`` joins every predecessor ``p`` of
``v`` to every successor ``s`` of ``v`` by the edge ``p -> s`` with partial
``ds/dv * dv/dp`` (the chain rule), adds that product onto ``p -> s`` if the
edge already exists (parallel paths add up), and deletes ``v``.  Once every
intermediate is gone the graph is bipartite and its edges, input -> output,
are exactly the nonzero-structure entries of the Jacobian.  Forward and
reverse mode are the two orders "first intermediate first" and "last
intermediate first"; other orders can be cheaper.

The same code runs on every graph: labels are multiplied and added by the
graph's algebra (:mod:`minirad.graph.labels`), so on a graph with arrays a
label is a Jacobian block and the chain rule is the product of two blocks,
``J_sv J_vp``; the Jacobian comes out as blocks, and the matrix-chain
programme of :mod:`minirad.exact.orders` gives the cheapest order on chains.

Cost convention
---------------
Eliminating ``v`` forms one product per (predecessor, successor) pair,
counted on the current graph (the one left by the earlier eliminations),
each costing the algebra's ``multiply_cost``; each product that lands on an
edge that already exists costs one ``add_cost``, and a product that creates
a new (fill-in) edge costs none.  On a graph of numbers every product and
sum costs 1, so eliminating ``v`` costs ``|pred(v)| * |succ(v)|``
multiplications; every edge counts, including edges whose partial happens
to be 1 or -1: the counts depend on the graph's structure only, never on
its numbers.  On a graph with arrays they are flops: a diagonal times a
dense block costs its entries, two dense blocks m x k x n.

>>> from minirad import examples
>>> g = examples.figure1()
>>> [eliminate(g, order).multiplications for order in ("forward", "reverse", "optimal")]
[6, 6, 5]
>>> result = eliminate(g, "optimal")
>>> result.order, result.graph
(('v3', 'v4', 'v5', 'v2'), LCG(3 vertices: 2 inputs, 0 intermediates, 1 output; 2 edges))

On a chain of blocks the cheapest order is the matrix-chain order:

>>> import numpy as np
>>> from minirad.graph.scalarize import from_chain
>>> chain = from_chain([np.ones((30, 10)), np.ones((5, 30)), np.ones((60, 5))])
>>> [eliminate(chain, order).multiplications for order in ("forward", "reverse", "optimal")]
[4500, 27000, 4500]
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Set
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..graph.calls import takes_graph_or_function
from ..graph.labels import FLOATS
from ..graph.lcg import INTERMEDIATE, LCG
from ._markowitz import markowitz_in_place
from .orders import (
    CHAIN_LIMIT,
    OPTIMAL_LIMIT,
    chain_vertices,
    cheapest_order,
    check_search,
    is_chain,
    optimal_chain,
)
from .overflow import check_finite
from .result import Accumulation, from_labels

__all__ = [
    "CHAIN_LIMIT", "OPTIMAL_LIMIT", "SEARCH_LIMIT", "ORDERS", "Elimination", "Step",
    "eliminate", "eliminate_vertex", "elimination_cost", "elimination_order",
]

ORDERS = ("forward", "reverse", "markowitz", "optimal")

#: on a graph with arrays (not a chain) the optimal order tries every order of at
#: most this many intermediates
SEARCH_LIMIT = 7


@dataclass(frozen=True)
class Step:
    """What one elimination did, in vertex names (the renderer draws this).

    ``predecessors`` are in operand order and ``successors`` in vertex
    order, both on the graph just before the step; ``fill_in`` lists the
    edges the step created and ``updated`` the existing edges whose label
    received an addition.  ``fill_in_labels`` and ``updated_labels`` are
    the labels those edges carry after the step, in the same order (floats,
    or Jacobian blocks on a graph with arrays); ``multiplications`` and
    ``additions`` are the step's costs in the graph's algebra.
    """

    vertex: str
    predecessors: tuple[str, ...]
    successors: tuple[str, ...]
    fill_in: tuple[tuple[str, str], ...]
    updated: tuple[tuple[str, str], ...]
    multiplications: int
    additions: int
    fill_in_labels: tuple = field(default=(), compare=False)  # numbers, not structure
    updated_labels: tuple = field(default=(), compare=False)


@dataclass(frozen=True, eq=False, repr=False)
class Elimination(Accumulation):
    """The result of :func:`eliminate`: an :class:`~minirad.exact.result.Accumulation`
    with method ``"eliminate"`` and its ``order``, plus what elimination leaves.

    ``jacobian`` is the Jacobian (rows and columns the entries of the
    outputs and inputs; ``blocks`` on a graph with arrays) when every
    intermediate was eliminated, else None.  ``graph`` is the graph left at
    the end, ``steps`` what each step did, and ``graphs`` holds the graph
    before each step followed by the final graph, or is empty unless
    ``keep_graphs=True`` was asked for.

    ``steps`` are made the first time they are read, by eliminating again
    in ``order`` with the steps recorded (``replay``): recording names and
    labels costs more than the elimination itself, and most callers only
    want the Jacobian or the counts.
    """

    jacobian: np.ndarray | None
    multiplications: int
    additions: int
    method: str = "eliminate"
    graph: LCG = field(default=None, kw_only=True)
    graphs: tuple[LCG, ...] = field(default=(), kw_only=True)
    replay: Callable[[], tuple[Step, ...]] | None = field(default=None, kw_only=True,
                                                          repr=False)

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        """What each step did (:class:`Step`), in order."""
        return () if self.replay is None else tuple(self.replay())

    def __repr__(self) -> str:
        shape = None if self.jacobian is None else self.jacobian.shape
        return (f"Elimination(order={self.order!r}, jacobian shape {shape}, "
                f"multiplications={self.multiplications}, additions={self.additions})")


def _as_list(labels) -> list:
    return labels.tolist() if isinstance(labels, np.ndarray) else list(labels)


# ---------------------------------------------------------- working graph
class _Working:
    """A mutable copy of an LCG's edges for elimination in place.

    Vertices keep the numbers of the LCG it was made from; ``pred[v]`` maps
    each predecessor to its partial (operand order, fill-ins appended) and
    ``succ[u]`` is an insertion-ordered set of successors.  Eliminated
    vertices have ``pred[v] is None``.
    """

    __slots__ = ("g", "pred", "succ", "touched")

    def __init__(self, g: LCG):
        n = g.n_vertices
        self.g = g
        self.pred: list[dict | None] = [{} for _ in range(n)]
        self.succ: list[dict | None] = [{} for _ in range(n)]
        # one int object per vertex for every key that names it: a dict lookup
        # then matches by identity, without reading a second int from memory
        number = list(range(n))
        for u, v, d in zip(g.sources.tolist(), g.targets.tolist(), _as_list(g.labels)):
            u, v = number[u], number[v]
            self.pred[v][u] = d
            self.succ[u][v] = None
        # vertices whose operands changed, so their op template no longer fits
        self.touched: set[int] = set()

    def degree(self, v: int) -> int:
        """The Markowitz degree |pred(v)| * |succ(v)|."""
        return len(self.pred[v]) * len(self.succ[v])

    def copy(self) -> _Working:
        """An independent working graph in the same state (labels are shared: no
        step changes a label in place)."""
        other = _Working.__new__(_Working)
        other.g = self.g
        other.pred = [None if d is None else dict(d) for d in self.pred]
        other.succ = [None if d is None else dict(d) for d in self.succ]
        other.touched = set(self.touched)
        return other

    def eliminate(self, v: int, record: bool) -> tuple[int, int, Step | None]:
        """The chain rule and the path sum on labels, through the graph's algebra:
        ``p -> v -> s`` becomes ``multiply(outer=ds/dv, inner=dv/dp)``, added to
        an existing ``p -> s``; each product and sum costs what the algebra says."""
        algebra = self.g.algebra
        multiply, add = algebra.multiply, algebra.add
        preds = self.pred[v]
        succs = sorted(self.succ[v])
        below = list(preds.items())
        fill_in, updated = [], []
        multiplications = additions = 0
        for s in succs:
            into_s = self.pred[s]
            d_sv = into_s.pop(v)
            for p, d_vp in below:
                multiplications += algebra.multiply_cost(d_sv, d_vp)
                product = multiply(d_sv, d_vp)
                if p in into_s:
                    additions += algebra.add_cost(into_s[p], product)
                    into_s[p] = add(into_s[p], product)
                    updated.append((p, s))
                else:
                    into_s[p] = product
                    self.succ[p][s] = None
                    fill_in.append((p, s))
        for p in preds:
            del self.succ[p][v]
        self.pred[v] = self.succ[v] = None
        self.touched.update(succs)
        step = None
        if record:
            names = self.g.names
            step = Step(names[v], tuple(names[p] for p, _ in below),
                        tuple(names[s] for s in succs),
                        tuple((names[p], names[s]) for p, s in fill_in),
                        tuple((names[p], names[s]) for p, s in updated),
                        multiplications, additions,
                        tuple(self.pred[s][p] for p, s in fill_in),
                        tuple(self.pred[s][p] for p, s in updated))
        return multiplications, additions, step

    def eliminate_fast(self, v: int) -> tuple[int, int]:
        """:meth:`eliminate` without the record, for algebras whose multiply
        and add are Python's ``*`` and ``+`` (floats, counts): the same
        products and sums in the same order, so the same labels, but the
        arithmetic inline and the successors unsorted (their order changes
        no label: each successor's operands are a dict of their own)."""
        pred, succ = self.pred, self.succ
        preds = pred[v]
        below = list(preds.items())
        succs = succ[v]
        additions = 0
        for s in succs:
            into_s = pred[s]
            d_sv = into_s.pop(v)
            for p, d_vp in below:
                if p in into_s:
                    into_s[p] += d_sv * d_vp
                    additions += 1
                else:
                    into_s[p] = d_sv * d_vp
                    succ[p][s] = None
        for p in preds:
            del succ[p][v]
        pred[v] = succ[v] = None
        self.touched.update(succs)
        return len(below) * len(succs), additions

    def to_lcg(self) -> LCG:
        g = self.g
        alive = [v for v in range(g.n_vertices) if self.pred[v] is not None]
        new = {v: i for i, v in enumerate(alive)}
        src, dst, labels = [], [], []
        # renumbering keeps the old relative order, so it stays topological and
        # walking targets in order keeps the edges grouped by target
        for v in alive:
            i = new[v]
            for u, d in self.pred[v].items():
                src.append(new[u])
                dst.append(i)
                labels.append(d)
        ops = ["" if v in self.touched else g.ops[v] for v in alive]
        names = [g.names[v] for v in alive]
        inputs, outputs = [new[v] for v in g.inputs], [new[v] for v in g.outputs]
        if g.algebra is FLOATS:
            return LCG.from_trusted_arrays(names, np.asarray(src, dtype=np.int64),
                                           np.asarray(dst, dtype=np.int64),
                                           np.asarray(labels, dtype=float), inputs, outputs,
                                           g.values[alive], ops)
        return LCG(names, src, dst, labels, inputs, outputs,
                   values=None if g.values is None else [g.values[v] for v in alive], ops=ops,
                   shapes=[g.shapes[v] for v in alive], dtypes=[g.dtypes[v] for v in alive],
                   injections=g.injections)

    def jacobian(self) -> np.ndarray:
        g = self.g
        if g.algebra is FLOATS:
            column = {v: j for j, v in enumerate(g.inputs)}
            J = np.zeros((len(g.outputs), len(g.inputs)))
            for i, y in enumerate(g.outputs):
                for u, d in self.pred[y].items():
                    J[i, column[u]] = d
        else:   # the remaining edges are the blocks, input -> output
            J = from_labels(g, g.outputs, g.inputs, lambda y, x: self.pred[y].get(x))
        J.flags.writeable = False
        return J


# ------------------------------------------------------------------ orders
def _resolve(g: LCG, order) -> list[int]:
    """Validate an explicit order: known intermediates, each at most once."""
    # a set or mapping has no order to follow, so it is refused rather than guessed at
    if isinstance(order, (str, bytes, Set, Mapping)) or not isinstance(order, Iterable):
        raise TypeError(f"an elimination order is one of {', '.join(ORDERS)} or a list "
                        f"of intermediate vertices, not {type(order).__name__}")
    seen: set[int] = set()
    vertices = []
    for position, vertex in enumerate(list(order)):
        v = g.index(vertex)
        kind = g.kind(v)
        if kind != INTERMEDIATE:
            raise ValueError(f"vertex {g.names[v]!r} (order entry #{position}) is an {kind}; "
                             f"only intermediates can be eliminated: {_shown(g)}")
        if v in seen:
            raise ValueError(f"order entry #{position} repeats vertex {g.names[v]!r}; each "
                             f"intermediate can be eliminated once")
        seen.add(v)
        vertices.append(v)
    return vertices


def _shown(g: LCG) -> str:
    mids = [g.names[v] for v in g.intermediates]
    if not mids:
        return "this graph has none"
    return ", ".join(mids[:8]) + (", ..." if len(mids) > 8 else "")


def _unknown_strategy(name: str) -> ValueError:
    return ValueError(f"unknown elimination strategy {name!r}; use one of "
                      f"{', '.join(map(repr, ORDERS))} or a list of intermediate vertices")


def _markowitz(work: _Working, candidates) -> Iterator[int]:
    """Yield the vertex of least Markowitz degree, recomputed after each step.

    The caller eliminates each yielded vertex before asking for the next.
    Only the neighbours of an eliminated vertex change degree, so only they
    are pushed again; stale heap entries are skipped when popped.  Heap keys
    order by ``(degree, number)``: ties go to the lowest vertex number.
    """
    pred, succ = work.pred, work.succ
    # heap keys are the ints degree * n + v: ordered as (degree, v), and
    # compared several times faster than tuples
    n = len(pred)
    current = {v: work.degree(v) for v in candidates}
    heap = [d * n + v for v, d in current.items()]
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        d, v = divmod(pop(heap), n)
        if current.get(v) != d:
            continue
        neighbours = [*pred[v], *succ[v]]
        del current[v]
        yield v
        for u in neighbours:
            known = current.get(u)
            if known is not None:
                d = len(pred[u]) * len(succ[u])
                if d != known:
                    current[u] = d
                    push(heap, d * n + u)


def _searched(g: LCG, max_intermediates: int = SEARCH_LIMIT) -> list[int]:
    """An order of least (multiplications, additions) on a graph with arrays, by
    trying every order, depth first in lexicographic order of vertex numbers
    and abandoning a prefix as soon as it costs as much as the best order so
    far (so ties go to the lexicographically smallest order).

    The subset programme of :func:`minirad.exact.orders.cheapest_order` does
    not apply here: what a product of blocks costs depends on the form of the
    blocks (a sum of a dense block and a diagonal stays two terms, two dense
    blocks become one), and that form can depend on the order in which the
    same set of vertices was eliminated.
    """
    mids = list(g.intermediates)
    k = len(mids)
    digits = math.lgamma(k + 1) / math.log(10)     # of k!, which is not formed for large k
    orders = f"{math.factorial(k):,}" if k <= 20 else f"about 10**{digits:.0f}"
    check_search(k, max_intermediates, f"of a graph with arrays (not a chain) tries every "
                                       f"order of its {k} intermediates, {orders} orders")
    best: list = [None, None]   # cost, order

    def visit(work: _Working, left: list[int], order: list[int], cost: tuple[int, int]):
        if best[0] is not None and cost >= best[0]:
            return
        if not left:
            best[0], best[1] = cost, list(order)
            return
        for v in left:
            child = work.copy()
            m, a, _ = child.eliminate(v, record=False)
            visit(child, [u for u in left if u != v], order + [v], (cost[0] + m, cost[1] + a))

    visit(_Working(g), mids, [], (0, 0))
    return best[1]


def _optimal(g: LCG, max_intermediates: int | None = None) -> list[int]:
    """The optimal order: over subsets on a graph of numbers, the matrix-chain
    programme on a chain of blocks, every order on a small graph with arrays; each
    refused beyond its limit (:data:`OPTIMAL_LIMIT`, :data:`CHAIN_LIMIT`,
    :data:`SEARCH_LIMIT` intermediates) unless ``max_intermediates`` allows more."""
    def limit(default: int) -> int:
        return default if max_intermediates is None else max_intermediates

    if g.algebra is FLOATS:
        return cheapest_order(g, limit(OPTIMAL_LIMIT))
    if is_chain(g):
        k = len(g.intermediates)
        check_search(k, limit(CHAIN_LIMIT), f"of a chain of {k + 1} blocks forms the products "
                                            f"of its {k * (k + 1) // 2:,} sub-chains")
        path = chain_vertices(g)
        labels = [g.label(u, v) for u, v in zip(path, path[1:])]
        return [path[position] for position in optimal_chain(labels, g.algebra).order]
    return _searched(g, limit(SEARCH_LIMIT))


def _plan(g: LCG, order, max_intermediates: int | None = None) -> list[int] | None:
    """The vertices of a static order, or None for the dynamic Markowitz order."""
    if isinstance(order, str):
        if order == "forward":
            return list(g.intermediates)
        if order == "reverse":
            return list(reversed(g.intermediates))
        if order == "markowitz":
            return None
        if order == "optimal":
            return _optimal(g, max_intermediates)
        raise _unknown_strategy(order)
    return _resolve(g, order)


def _run(g: LCG, order, record: bool, keep_graphs: bool, max_intermediates=None):
    plan = _plan(g, order, max_intermediates)
    work = _Working(g)
    # on floats the products and sums are Python's * and +, written inline
    fast = not record and g.algebra is FLOATS
    if fast and plan is None and not keep_graphs:
        # the same order, products and counts as the loop below (tested equal),
        # with cheaper bookkeeping: see minirad.exact._markowitz
        eliminated, multiplications, additions = markowitz_in_place(
            work.pred, work.succ, g.intermediates, work.touched)
        return work, eliminated, multiplications, additions, [], []
    chosen = _markowitz(work, g.intermediates) if plan is None else iter(plan)
    multiplications = additions = 0
    eliminated, steps, graphs = [], [], []
    for v in chosen:
        if keep_graphs:
            graphs.append(work.to_lcg() if eliminated else g)
        if fast:
            m, a = work.eliminate_fast(v)
        else:
            m, a, step = work.eliminate(v, record)
            if record:
                steps.append(step)
        multiplications += m
        additions += a
        eliminated.append(v)
    return work, eliminated, multiplications, additions, steps, graphs


# -------------------------------------------------------------- public API
@takes_graph_or_function
def eliminate(g: LCG, order="markowitz", keep_graphs: bool = False, *,
              max_intermediates: int | None = None) -> Elimination:
    """Eliminate intermediates of ``g`` in the given order.

    ``order`` is a strategy name -- ``"forward"`` (topological order),
    ``"reverse"``, ``"markowitz"`` (always the vertex of least
    ``|pred| * |succ|`` on the current graph, ties to the lowest vertex
    number) or ``"optimal"`` (least cost: exhaustive over subsets on a graph
    of numbers, at most :data:`OPTIMAL_LIMIT` intermediates; on a graph with
    arrays the matrix-chain programme on a chain of at most :data:`CHAIN_LIMIT`
    intermediates, else every order of at most :data:`SEARCH_LIMIT`
    intermediates; ``max_intermediates`` raises (or lowers) that limit) -- or a
    list of intermediate vertices by name or number.  A list may stop early:
    the result then holds the partially eliminated graph and no Jacobian.  See
    the module docstring for the cost convention.

    >>> from minirad import examples
    >>> result = eliminate(examples.two_outputs(), "markowitz", keep_graphs=True)
    >>> result.order, result.multiplications, result.additions
    (('v3', 'v2', 'v4'), 7, 2)
    >>> first = result.steps[0]
    >>> first.vertex, first.predecessors, first.successors, first.fill_in, first.updated
    ('v3', ('v2',), ('v4',), (('v2', 'v4'),), ())
    >>> [len(h.intermediates) for h in result.graphs]
    [3, 2, 1, 0]
    >>> result.jacobian.shape
    (2, 2)
    """
    with np.errstate(over="ignore", invalid="ignore"):   # blocks overflowing: checked below
        work, eliminated, multiplications, additions, _, graphs = _run(
            g, order, record=False, keep_graphs=keep_graphs,
            max_intermediates=max_intermediates)
    final = work.to_lcg() if eliminated else g
    if keep_graphs:
        graphs.append(final)
    complete = len(eliminated) == len(g.intermediates)
    jacobian = work.jacobian() if complete else None
    result = Elimination(
        jacobian=jacobian,
        graph=final,
        multiplications=multiplications,
        additions=additions,
        order=tuple(g.names[v] for v in eliminated),
        graphs=tuple(graphs),
        # the same order again, explicitly, with every step recorded
        replay=lambda: _run(g, eliminated, record=True, keep_graphs=False)[4],
        shapes=None if g.algebra is FLOATS else (tuple(g.shapes[v] for v in g.outputs),
                                                 tuple(g.shapes[v] for v in g.inputs)),
    )
    if jacobian is not None and not np.isfinite(jacobian).all():
        where = None
        if g.algebra is FLOATS:
            # the first step whose new or updated partials are not finite is where it overflowed
            where = next((step.vertex for step in result.steps if not np.isfinite(
                np.asarray(step.fill_in_labels + step.updated_labels, dtype=float)).all()), None)
        check_finite(g, jacobian, "eliminate", vertex=where and f"{where} (when eliminated)")
    return result


@takes_graph_or_function
def eliminate_vertex(g: LCG, v) -> LCG:
    """The graph left by eliminating the one intermediate ``v`` (name or number).

    Vertices are renumbered; names, values and ops are kept, except that
    the successors of ``v`` get op ``""``, since their operands changed.  A
    successor keeps its other operands in order and gains the predecessors
    of ``v`` it did not already have, appended in ``v``'s operand order.

    >>> from minirad import examples
    >>> g = examples.lab()
    >>> h = eliminate_vertex(g, "v2")
    >>> h.names, h.predecessors("f"), h.partial("x", "f")
    (('x', 'y', 'v3', 'f'), (2, 0, 1), 3.0)
    """
    (v,) = _resolve(g, [v])
    work = _Working(g)
    work.eliminate(v, record=False)
    return work.to_lcg()


@takes_graph_or_function
def elimination_order(g: LCG, order="markowitz", *,
                      max_intermediates: int | None = None) -> tuple[str, ...]:
    """The vertex names an ``order`` eliminates, in turn: ``order`` is one of
    :data:`ORDERS` (``"forward"``, ``"reverse"``, ``"markowitz"``, ...) or an
    explicit list, which is validated and returned as names (as ``order=`` of
    :func:`eliminate` and :func:`minirad.exact.jacobians.jacobian`;
    ``max_intermediates`` as in :func:`eliminate`).

    >>> from minirad import examples
    >>> elimination_order(examples.figure1(), "markowitz")
    ('v3', 'v4', 'v2', 'v5')
    >>> elimination_order(examples.figure1(), "sideways")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown elimination strategy 'sideways'; use one of 'forward', 'reverse', ...
    """
    _, eliminated, _, _, _, _ = _run(g, order, record=False, keep_graphs=False,
                                     max_intermediates=max_intermediates)
    return tuple(g.names[v] for v in eliminated)


@takes_graph_or_function
def elimination_cost(g: LCG, order="markowitz", *,
                     max_intermediates: int | None = None) -> tuple[int, int]:
    """``(multiplications, additions)`` of an order, without building graphs
    (``max_intermediates`` as in :func:`eliminate`).

    >>> from minirad import examples
    >>> elimination_cost(examples.two_outputs(), "reverse")
    (10, 3)
    >>> elimination_cost(examples.two_outputs(), ["v3"])
    (1, 0)
    """
    _, _, multiplications, additions, _, _ = _run(g, order, record=False, keep_graphs=False,
                                                  max_intermediates=max_intermediates)
    return multiplications, additions
