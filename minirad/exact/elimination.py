"""Elimination: collapse an LCG into its Jacobian, by vertices, edges or faces.

The chain rule applied to a part of the graph at a time, until every
intermediate is gone and the graph is bipartite: its edges, input -> output,
are then the Jacobian's entries.  :func:`eliminate` takes an ``order`` (which
steps, in turn) and ``on`` (what a step eliminates), as graphax's
``jacve(f, order=...)`` does:

* ``on="vertices"``: eliminating an intermediate ``v`` joins every
  predecessor ``p`` of ``v`` to every successor ``s`` by the edge ``p -> s``
  with label ``ds/dv * dv/dp``, added onto ``p -> s`` if that edge exists
  (parallel paths add up), and deletes ``v`` (Griewank and Walther,
  *Evaluating Derivatives*, 2nd ed., 2008, Sec. 9.1).  Forward and reverse
  mode are the orders "first intermediate first" and "last intermediate first".
* ``on="edges"``: the chain rule for the paths through one edge ``i -> j``
  (labels ``c_ji``), in one of two ways (Naumann, *Optimal accumulation of
  Jacobian matrices by elimination methods on the dual computational graph*,
  Math. Program. 99, 2004, Sec. 2; Griewank and Walther Sec. 10.1).  **Front
  elimination** (``j`` an intermediate): for every successor ``k`` of ``j``,
  put ``c_kj * c_ji`` on ``i -> k`` (added if the edge exists), then delete
  ``i -> j``; a ``j`` left without in-edges is deleted with its out-edges.
  **Back elimination** (``i`` an intermediate): for every predecessor ``h`` of
  ``i``, put ``c_ji * c_ih`` on ``h -> j``; a ``i`` left without out-edges is
  deleted.  Eliminating vertex ``v`` is front-eliminating its in-edges, or
  back-eliminating its out-edges (:func:`vertex_order_as_edges`).
* ``on="faces"``: the chain rule for one pair of consecutive edges at a time,
  on Naumann's dual c-graph (:mod:`minirad.exact.dual`, Sec. 4 of his paper).
  Front-eliminating ``i -> j`` is eliminating every face out of its dual
  vertex, back-eliminating it every face into it (:func:`edges_as_faces`), so
  vertex and edge elimination are face elimination in particular orders: the
  optima can only fall from vertices to edges to faces.

Every order is one of :data:`ORDERS` or a list of steps: vertices (names or
numbers), ``(i, j, end)`` triples with ``end`` ``"front"`` or ``"back"``, or
faces ``(a, b)`` with each dual vertex named by its path (``("x1", "v2")``)
or its paths.  The named orders on edges and faces are the vertex orders
written as edges (``"forward"``: each vertex's in-edges front-eliminated;
``"reverse"``: its out-edges back-eliminated) and as faces, the Markowitz
rule for edges (and those edges as faces) and an exhaustive search.

Cost convention
---------------
Each product costs the algebra's ``multiply_cost`` and each product added to
a label that is there already one ``add_cost`` (:mod:`minirad.graph.labels`);
a product that creates a new (fill-in) edge costs no addition.  On a graph of
numbers every product and sum costs 1, so eliminating vertex ``v`` costs
``|pred(v)| * |succ(v)|`` multiplications, front-eliminating ``i -> j``
``|succ(j)|`` and back-eliminating it ``|pred(i)|``, and a face one; every
edge counts, partials of ±1 included: the counts depend on the structure
only.  On a graph with arrays they are flops: a diagonal times a dense block
costs its entries, two dense blocks m x k x n (faces need numbers).

>>> from minirad import examples
>>> g = examples.figure1()
>>> [eliminate(g, order).multiplications for order in ("forward", "reverse", "optimal")]
[6, 6, 5]
>>> result = eliminate(g, "optimal")
>>> result.order, result.graph
(('v3', 'v4', 'v5', 'v2'), LCG(3 vertices: 2 inputs, 0 intermediates, 1 output; 2 edges))
>>> [eliminate(g, "optimal", on=on).multiplications for on in ON]
[5, 5, 5]

On a chain of blocks the cheapest vertex order is the matrix-chain order:

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
from functools import cached_property, partial

import networkx as nx
import numpy as np

from ..graph.labels import FLOATS
from ..graph.lcg import INTERMEDIATE, LCG, takes_graph_or_function
from ._markowitz import markowitz_in_place
from .dual import Dual, DualName, Registry, dual_graph
from .orders import (
    CHAIN_LIMIT,
    OPTIMAL_LIMIT,
    chain_vertices,
    cheapest_edge_order,
    cheapest_face_order,
    cheapest_order,
    check_search,
    is_chain,
    optimal_chain,
)
from .overflow import check_finite
from .result import Accumulation, from_labels

__all__ = [
    "BACK", "ENDS", "FRONT", "ON", "ORDERS", "SEARCH_LIMIT", "Elimination", "Step",
    "cheaper_than", "dual_graph", "edges_as_faces", "eliminate", "eliminate_vertex",
    "elimination_cost", "elimination_order", "vertex_order_as_edges",
]

#: what a step eliminates
ON = ("vertices", "edges", "faces")
#: the named orders, on each of ON
ORDERS = ("forward", "reverse", "markowitz", "optimal")
#: the two ends of an edge that edge elimination bypasses: its head (front) or tail (back)
FRONT, BACK = "front", "back"
ENDS = (FRONT, BACK)
#: on a graph with arrays (not a chain) the optimal vertex order tries every order of at
#: most this many intermediates
SEARCH_LIMIT = 7


@dataclass(frozen=True)
class Step:
    """What one elimination step did, in names, on the graph just before it.

    ``on`` says what was eliminated and ``eliminated`` names it: a vertex, an
    edge ``(i, j, end)``, or a face ``(a, b)`` of two dual vertices (each
    named by its paths).  The step joins each of ``predecessors`` to each of
    ``successors`` by a product: for a vertex ``v`` its predecessors (in
    operand order) and successors; for front elimination of ``i -> j``,
    ``(i,)`` and the successors of ``j``; for back elimination, the
    predecessors of ``i`` and ``(j,)``; for a face, the dual predecessors of
    ``a`` and the dual successors of ``b``.  ``fill_in`` lists what the step
    created (edges, or the new dual vertex), ``updated`` what received an
    addition (edges, or the dual vertex that absorbed the product and those a
    merge made), and ``removed`` what it deleted besides what it eliminated
    (vertices left without in- or out-edges, dual vertices left without
    successors or predecessors, and the two halves of each merge).
    ``fill_in_labels`` and ``updated_labels`` are the labels of ``fill_in``
    and ``updated`` after the step (floats, or Jacobian blocks on a graph with
    arrays); ``multiplications`` and ``additions`` its costs in the graph's
    algebra.
    """

    eliminated: object
    predecessors: tuple
    successors: tuple
    fill_in: tuple
    updated: tuple
    removed: tuple
    multiplications: int
    additions: int
    fill_in_labels: tuple = field(default=(), compare=False)  # numbers, not structure
    updated_labels: tuple = field(default=(), compare=False)
    on: str = "vertices"


@dataclass(frozen=True, eq=False, repr=False)
class Elimination(Accumulation):
    """The result of :func:`eliminate`: an :class:`~minirad.exact.result.Accumulation`
    with method ``"eliminate"``, the steps taken as its ``order``, and what
    elimination leaves.

    ``on`` is what was eliminated.  ``jacobian`` is the Jacobian (rows and
    columns the entries of the outputs and inputs; ``blocks`` on a graph with
    arrays) whenever the order finished the graph; only an explicit order that
    stops early leaves it None.  ``graph`` is the LCG left at the end (for
    faces, the bipartite LCG of the Jacobian once finished, else None),
    ``dual`` the dual c-graph left (faces only, as
    :func:`minirad.exact.dual.dual_graph` draws it), ``steps`` what each step
    did (:class:`Step`), and ``graphs`` holds the graph (for faces, the dual
    graph) before each step followed by the final one, or is empty unless
    ``keep_graphs=True`` was asked for.

    Vertex steps are made the first time they are read, by eliminating again
    in ``order`` with the steps recorded (``replay``): recording names and
    labels costs more than the elimination itself, and most callers only
    want the Jacobian or the counts.
    """

    jacobian: np.ndarray | None
    multiplications: int
    additions: int
    method: str = "eliminate"
    on: str = field(default="vertices", kw_only=True)
    graph: LCG | None = field(default=None, kw_only=True)
    dual: nx.DiGraph | None = field(default=None, kw_only=True)
    graphs: tuple = field(default=(), kw_only=True)
    replay: Callable[[], tuple[Step, ...]] | None = field(default=None, kw_only=True,
                                                          repr=False)

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        """What each step did (:class:`Step`), in order."""
        return () if self.replay is None else tuple(self.replay())

    def __repr__(self) -> str:
        shape = None if self.jacobian is None else self.jacobian.shape
        return (f"Elimination(on={self.on!r}, {len(self.order)} steps, jacobian shape {shape}, "
                f"multiplications={self.multiplications}, additions={self.additions})")


def _as_list(labels) -> list:
    return labels.tolist() if isinstance(labels, np.ndarray) else list(labels)


# ---------------------------------------------------------- working graph
class _Working:
    """A mutable copy of an LCG's edges, which vertex and edge steps change in place.

    Vertices keep the numbers of the LCG it was made from; ``pred[v]`` maps
    each predecessor to its label (operand order, fill-ins appended) and
    ``succ[u]`` is an insertion-ordered set of successors.  Deleted vertices
    have ``pred[v] is None``.
    """

    __slots__ = ("g", "pred", "succ", "touched", "middle")

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
        self.middle = frozenset(g.intermediates)

    def degree(self, v: int) -> int:
        """The Markowitz degree |pred(v)| * |succ(v)|."""
        return len(self.pred[v]) * len(self.succ[v])

    def copy(self) -> _Working:
        """An independent working graph in the same state (labels are shared: no
        step changes a label in place)."""
        other = _Working.__new__(_Working)
        other.g, other.middle = self.g, self.middle
        other.pred = [None if d is None else dict(d) for d in self.pred]
        other.succ = [None if d is None else dict(d) for d in self.succ]
        other.touched = set(self.touched)
        return other

    def _join(self, pairs) -> tuple[int, int, list, list]:
        """The chain rule and the path sum for each ``(source, target, outer, inner)``:
        ``multiply(outer, inner)`` added onto ``source -> target`` or made its label."""
        algebra, pred, succ = self.g.algebra, self.pred, self.succ
        fill_in, updated, multiplications, additions = [], [], 0, 0
        for source, target, outer, inner in pairs:
            multiplications += algebra.multiply_cost(outer, inner)
            product = algebra.multiply(outer, inner)
            into = pred[target]
            if source in into:
                additions += algebra.add_cost(into[source], product)
                into[source] = algebra.add(into[source], product)
                updated.append((source, target))
            else:
                into[source] = product
                succ[source][target] = None
                fill_in.append((source, target))
        return multiplications, additions, fill_in, updated

    def _record(self, eliminated, below, above, fill_in, updated, removed, m, a, on) -> Step:
        names, pred = self.g.names, self.pred
        return Step(eliminated, tuple(names[p] for p in below), tuple(names[s] for s in above),
                    tuple((names[p], names[s]) for p, s in fill_in),
                    tuple((names[p], names[s]) for p, s in updated),
                    tuple(names[w] for w in removed), m, a,
                    tuple(pred[s][p] for p, s in fill_in), tuple(pred[s][p] for p, s in updated),
                    on)

    # ------------------------------------------------------------- vertices
    def eliminate_vertex(self, v: int, record: bool) -> tuple[int, int, Step | None]:
        """Eliminate the intermediate ``v``: ``p -> v -> s`` becomes ``p -> s``, the
        label ``multiply(outer=ds/dv, inner=dv/dp)``, for every pair in turn."""
        preds, succs = self.pred[v], sorted(self.succ[v])
        below = list(preds.items())
        # each successor gives up its edge from v before its products land
        outer = {s: self.pred[s].pop(v) for s in succs}
        pairs = [(p, s, outer[s], d_vp) for s in succs for p, d_vp in below]
        m, a, fill_in, updated = self._join(pairs)
        for p in preds:
            del self.succ[p][v]
        self.pred[v] = self.succ[v] = None
        self.touched.update(succs)
        step = None
        if record:
            step = self._record(self.g.names[v], [p for p, _ in below], succs, fill_in,
                                updated, (), m, a, "vertices")
        return m, a, step

    def eliminate_fast(self, v: int) -> tuple[int, int]:
        """:meth:`eliminate_vertex` without the record, for algebras whose multiply
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

    # ---------------------------------------------------------------- edges
    def drop_isolated(self) -> None:
        """An intermediate no edge touches has no edge to eliminate: it goes first."""
        for v in self.middle:
            if not self.pred[v] and not self.succ[v]:
                self.pred[v] = self.succ[v] = None

    def edges_finished(self) -> bool:
        return all(self.pred[v] is None for v in self.middle)

    def edge_candidates(self) -> list[tuple[int, int, str]]:
        """Every edge elimination possible now, edges by (target, source), front first."""
        found = []
        for v, into in enumerate(self.pred):
            for u in sorted(into or ()):
                if v in self.middle:
                    found.append((u, v, FRONT))
                if u in self.middle:
                    found.append((u, v, BACK))
        return found

    def edge_cost(self, u: int, v: int, end: str) -> int:
        return len(self.succ[v]) if end == FRONT else len(self.pred[u])

    def edge_fill_in(self, u: int, v: int, end: str) -> int:
        """How many new edges the step would create."""
        if end == FRONT:
            return sum(1 for k in self.succ[v] if u not in self.pred[k])
        return sum(1 for h in self.pred[u] if h not in self.pred[v])

    def eliminate_edge(self, u: int, v: int, end: str) -> Step:
        pred, succ = self.pred, self.succ
        c_vu = pred[v].pop(u)  # first: fill-ins into v then follow its other operands
        del succ[u][v]
        if end == FRONT:  # u -> k for every successor k of v
            partners = sorted(succ[v])
            pairs = [(u, k, pred[k][v], c_vu) for k in partners]
            below, above = [u], partners
            self.touched.update(partners, [v])
        else:             # h -> v for every predecessor h of u
            partners = list(pred[u])
            pairs = [(h, v, c_vu, pred[u][h]) for h in partners]
            below, above = partners, [v]
            self.touched.add(v)
        m, a, fill_in, updated = self._join(pairs)
        # a vertex no input reaches (front) or that reaches no output (back) goes,
        # and so does an intermediate the step left without any edge
        gone, other = (v, u) if end == FRONT else (u, v)
        removed = [gone] if not (pred[gone] if end == FRONT else succ[gone]) else []
        removed += [other] if other in self.middle and not pred[other] and not succ[other] else []
        for w in removed:
            for k in succ[w]:
                del pred[k][w]
            for h in pred[w]:
                del succ[h][w]
            pred[w] = succ[w] = None
        names = self.g.names
        return self._record((names[u], names[v], end), below, above, fill_in, updated,
                            removed, m, a, "edges")

    # ---------------------------------------------------------------- results
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


# ------------------------------------------------------------ checking orders
def _check_on(on) -> str:
    if on not in ON:
        raise ValueError(f"on must be one of {', '.join(map(repr, ON))}, not {on!r}")
    return on


def _unknown_order(name, on: str) -> ValueError:
    what = {"vertices": "intermediate vertices", "edges": "(i, j, end) steps",
            "faces": "faces (a, b)"}[on]
    return ValueError(f"unknown elimination order {name!r}; use one of "
                      f"{', '.join(map(repr, ORDERS))} or a list of {what}")


def _as_sequence(order, on: str) -> list:
    # a set or mapping has no order to follow, so it is refused rather than guessed at
    if isinstance(order, (bytes, Set, Mapping)) or not isinstance(order, Iterable):
        raise TypeError(f"an elimination order on {on} is one of {', '.join(ORDERS)} or a list, "
                        f"not {type(order).__name__}")
    return list(order)


def _vertices(g: LCG, order) -> list[int]:
    """Validate an explicit vertex order: known intermediates, each at most once."""
    seen: set[int] = set()
    vertices = []
    for position, vertex in enumerate(_as_sequence(order, "vertices")):
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


def _edge_step(work: _Working, entry, position: int) -> tuple[int, int, str]:
    """An entry ``(i, j, end)`` of an edge order, checked against the current graph."""
    g = work.g
    if isinstance(entry, (str, bytes, Set, Mapping)) or not isinstance(entry, Iterable) \
            or len(entry := tuple(entry)) != 3:
        raise TypeError(f"step #{position} is {entry!r}; each step is a triple (i, j, end) "
                        f"with end {FRONT!r} or {BACK!r}")
    i, j, end = entry
    if end not in ENDS:
        raise ValueError(f"step #{position} has end {end!r}; use {FRONT!r} or {BACK!r}")
    u, v = g.index(i), g.index(j)
    if work.pred[v] is None or u not in work.pred[v]:
        raise ValueError(f"step #{position}: there is no edge {g.names[u]} -> {g.names[v]} in "
                         f"the graph at that point (never there, already eliminated, or its "
                         f"vertex deleted)")
    gone = v if end == FRONT else u
    if gone not in work.middle:
        role = "head" if end == FRONT else "tail"
        raise ValueError(f"step #{position}: {end} elimination of {g.names[u]} -> "
                         f"{g.names[v]} needs its {role} to be an intermediate, but "
                         f"{g.names[gone]} is an {g.kind(gone)}; use "
                         f"{BACK if end == FRONT else FRONT!r}")
    return u, v, end


def _dual_vertex(dual: Dual, given, what: str) -> int:
    """The dual vertex named by ``given``: one path (a sequence of vertices) or a
    collection of paths."""
    g = dual.g
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise TypeError(f"{what} names a dual vertex by {given!r}; name it by its path, e.g. "
                        f"('x1', 'v2'), or by a list of paths")
    given = list(given)
    single = given and not any(isinstance(p, (list, tuple)) for p in given)
    try:
        paths = frozenset(tuple(g.index(v) for v in p) for p in ([given] if single else given))
    except TypeError:
        raise TypeError(f"{what} is {given!r}; a path is a sequence of vertex names or "
                        f"numbers") from None
    a = dual.registry.number.get(paths)
    if a is None or a not in dual.pred:
        raise ValueError(f"{what}: no dual vertex sums exactly the paths {sorted(paths)} at "
                         f"this point; its vertices are listed by Elimination.dual (or "
                         f"dual_graph(g))")
    return a


def _face(dual: Dual, entry, position: int) -> tuple[int, int]:
    if isinstance(entry, (str, bytes, Set, Mapping)) or not isinstance(entry, Iterable) \
            or len(entry := tuple(entry)) != 2:
        raise TypeError(f"face #{position} is {entry!r}; a face is a pair (a, b) of dual "
                        f"vertices, e.g. (('x1', 'v2'), ('v2', 'y'))")
    a, b = (_dual_vertex(dual, side, f"face #{position}") for side in entry)
    if b not in dual.succ[a] or dual.registry.is_end(a) or dual.registry.is_end(b):
        raise ValueError(f"face #{position}: {dual.names(a)} => {dual.names(b)} is not a face "
                         f"that can be eliminated now (it must join two dual vertices, "
                         f"neither a source nor a sink, that meet at an intermediate)")
    return a, b


# ------------------------------------------------------------------ orders
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


def _markowitz_edge(work: _Working) -> tuple[int, int, str]:
    """The edge step of least cost (the edge's Markowitz degree: |succ(j)| for front,
    |pred(i)| for back, as the lowest-Markowitz edge rule of Naumann's ANGEL tool);
    among those the one creating the fewest new edges, then the edge nearest the
    outputs, front first."""
    return min(work.edge_candidates(),
               key=lambda c: (work.edge_cost(*c), work.edge_fill_in(*c), -c[1], -c[0],
                              c[2] != FRONT))


def _searched(g: LCG, max_intermediates: int = SEARCH_LIMIT) -> list[int]:
    """A vertex order of least (multiplications, additions) on a graph with arrays, by
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
            m, a, _ = child.eliminate_vertex(v, record=False)
            visit(child, [u for u in left if u != v], order + [v], (cost[0] + m, cost[1] + a))

    visit(_Working(g), mids, [], (0, 0))
    return best[1]


def _optimal(g: LCG, on: str, max_intermediates: int | None = None) -> list:
    """The one exhaustive search, for what is eliminated: over subsets (vertices of
    numbers), the matrix chain (vertices of a chain of blocks), every order (a
    small graph with arrays), or shortest paths over structures (edges, faces);
    each refused beyond its limit (:data:`~minirad.exact.orders.OPTIMAL_LIMIT`,
    :data:`~minirad.exact.orders.CHAIN_LIMIT`, :data:`SEARCH_LIMIT` intermediates,
    unless ``max_intermediates`` allows more; :data:`~minirad.exact.orders.OPTIMAL_EDGES`
    and :data:`~minirad.exact.orders.OPTIMAL_FACES` edges)."""
    if on == "edges":
        return cheapest_edge_order(g)
    if on == "faces":
        return cheapest_face_order(g)

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


def _vertex_plan(g: LCG, order, max_intermediates: int | None = None) -> list[int] | None:
    """The vertices of a vertex order, or None for the dynamic Markowitz order."""
    if isinstance(order, str):
        if order == "forward":
            return list(g.intermediates)
        if order == "reverse":
            return list(reversed(g.intermediates))
        if order == "markowitz":
            return None
        if order == "optimal":
            return _optimal(g, "vertices", max_intermediates)
        raise _unknown_order(order, "vertices")
    return _vertices(g, order)


def _edge_plan(g: LCG, order) -> list | None:
    """The steps of an edge order (checked as they are taken), or None for the
    dynamic Markowitz rule."""
    if isinstance(order, str):
        if order == "forward":
            return list(vertex_order_as_edges(g, "forward", FRONT))
        if order == "reverse":
            return list(vertex_order_as_edges(g, "reverse", BACK))
        if order == "markowitz":
            return None
        if order == "optimal":
            return [(g.names[u], g.names[v], end) for u, v, end in _optimal(g, "edges")]
        raise _unknown_order(order, "edges")
    return _as_sequence(order, "edges")


def _face_plan(g: LCG, order) -> list:
    """The faces of a face order (checked as they are taken)."""
    if isinstance(order, str):
        if order == "optimal":
            return _optimal(g, "faces")
        if order in ORDERS:   # the vertex or edge order, written as faces
            return list(edges_as_faces(g, _edge_plan_names(g, order)))
        raise _unknown_order(order, "faces")
    return _as_sequence(order, "faces")


def _edge_plan_names(g: LCG, order) -> list:
    """A named edge order as its steps."""
    plan = _edge_plan(g, order)
    return list(_run_edges(g, order, keep_graphs=False).taken) if plan is None else plan


# --------------------------------------------------------------- the runs
@dataclass
class _Run:
    """What a run of steps leaves: its working graph (or dual), the steps taken by
    name, their costs, the recorded steps and the snapshots."""

    work: object
    taken: list
    multiplications: int
    additions: int
    steps: list
    graphs: list
    finished: bool


def _run_vertices(g: LCG, order, record: bool, keep_graphs: bool,
                  max_intermediates: int | None = None) -> _Run:
    plan = _vertex_plan(g, order, max_intermediates)
    work = _Working(g)
    # on floats the products and sums are Python's * and +, written inline
    fast = not record and g.algebra is FLOATS
    if fast and plan is None and not keep_graphs:
        # the same order, products and counts as the loop below (tested equal),
        # with cheaper bookkeeping: see minirad.exact._markowitz
        eliminated, multiplications, additions = markowitz_in_place(
            work.pred, work.succ, g.intermediates, work.touched)
        return _Run(work, eliminated, multiplications, additions, [], [],
                    len(eliminated) == len(g.intermediates))
    chosen = _markowitz(work, g.intermediates) if plan is None else iter(plan)
    multiplications = additions = 0
    eliminated, steps, graphs = [], [], []
    for v in chosen:
        if keep_graphs:
            graphs.append(work.to_lcg() if eliminated else g)
        if fast:
            m, a = work.eliminate_fast(v)
        else:
            m, a, step = work.eliminate_vertex(v, record)
            if record:
                steps.append(step)
        multiplications += m
        additions += a
        eliminated.append(v)
    return _Run(work, eliminated, multiplications, additions, steps, graphs,
                len(eliminated) == len(g.intermediates))


def _run_edges(g: LCG, order, keep_graphs: bool) -> _Run:
    plan = _edge_plan(g, order)
    work = _Working(g)
    work.drop_isolated()
    steps, graphs, taken = [], [], []
    position = 0
    while (position < len(plan)) if plan is not None else not work.edges_finished():
        if keep_graphs:
            graphs.append(work.to_lcg() if steps else g)
        u, v, end = (_markowitz_edge(work) if plan is None
                     else _edge_step(work, plan[position], position))
        steps.append(work.eliminate_edge(u, v, end))
        taken.append((g.names[u], g.names[v], end))
        position += 1
    return _Run(work, taken, sum(s.multiplications for s in steps),
                sum(s.additions for s in steps), steps, graphs, work.edges_finished())


def _run_faces(g: LCG, order, keep_graphs: bool) -> _Run:
    plan = _face_plan(g, order)
    dual = Dual.of(g, Registry())
    steps, duals, taken = [], [], []
    for position, entry in enumerate(plan):
        if keep_graphs:
            duals.append(dual.to_networkx())
        a, b = _face(dual, entry, position)
        face = (dual.names(a), dual.names(b))
        before = {v: dual.names(v) for v in dual.pred}
        below = tuple(before[p] for p in sorted(dual.pred[a]))
        above = tuple(before[s] for s in sorted(dual.succ[b]))
        m, s, into, absorbed, merged, unions, removed = dual.eliminate(a, b)
        made = () if absorbed else (into,)
        grown = ((into,) if absorbed else ()) + tuple(unions)
        steps.append(Step(face, below, above, tuple(dual.names(c) for c in made),
                          tuple(dual.names(c) for c in grown),
                          tuple(before[v] for v in (*removed, *merged)), m, s,
                          tuple(dual.label[c] for c in made),
                          tuple(dual.label[c] for c in grown), "faces"))
        taken.append(face)
    if keep_graphs:
        duals.append(dual.to_networkx())
    return _Run(dual, taken, sum(s.multiplications for s in steps),
                sum(s.additions for s in steps), steps, duals, dual.finished())


def _run(g: LCG, order, on: str, keep_graphs: bool = False,
         max_intermediates: int | None = None) -> _Run:
    if max_intermediates is not None and on != "vertices":
        raise ValueError(f"max_intermediates bounds the search over vertex orders; the "
                         f"search on {on} is bounded by the number of edges")
    if on == "vertices":
        return _run_vertices(g, order, record=False, keep_graphs=keep_graphs,
                             max_intermediates=max_intermediates)
    if on == "edges":
        return _run_edges(g, order, keep_graphs)
    return _run_faces(g, order, keep_graphs)


def _recorded_steps(g: LCG, vertices: list[int]) -> list[Step]:
    """The steps of a vertex order, recorded: names and labels cost more than the
    elimination, so the fast runs leave them out and this makes them when read."""
    return _run_vertices(g, vertices, record=True, keep_graphs=False).steps


def _bipartite(g: LCG, J: np.ndarray) -> LCG:
    """The LCG of the Jacobian: inputs joined to outputs by its nonzero entries."""
    edges = [(g.names[x], g.names[y], float(J[r, c])) for r, y in enumerate(g.outputs)
             for c, x in enumerate(g.inputs) if J[r, c] != 0]
    return LCG.from_edges(edges, [g.names[x] for x in g.inputs],
                          [g.names[y] for y in g.outputs],
                          vertices=[g.names[v] for v in (*g.inputs, *g.outputs)])


# -------------------------------------------------------------- public API
@takes_graph_or_function
def eliminate(g: LCG, order="markowitz", on: str = "vertices", keep_graphs: bool = False, *,
              max_intermediates: int | None = None) -> Elimination:
    """Eliminate vertices, edges or faces of ``g`` in ``order``, until the Jacobian is left.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    order : {"markowitz", "forward", "reverse", "optimal"} or list, optional
        The order (default ``"markowitz"``): first intermediate first,
        last first, always the cheapest step on the current graph (the vertex
        of least ``|pred| * |succ|``, ties to the lowest number; the edge rule
        of the module docstring; on faces, the Markowitz edges as faces), or
        least cost by an exhaustive search; or a list of steps: vertices,
        ``(i, j, end)`` edges or faces, each checked against the graph the
        earlier steps left.
    on : {"vertices", "edges", "faces"}, optional
        What a step eliminates (default ``"vertices"``).
    keep_graphs : bool, optional
        Keep the graph before every step (and the last): ``result.graphs``.
    max_intermediates : int, optional
        Raise (or lower) the limit of the exhaustive vertex search, in
        intermediates.

    Returns
    -------
    Elimination
        ``jacobian`` (None only when an explicit list stops early), ``order``
        (the steps taken), ``multiplications``, ``additions``, ``steps`` (a
        :class:`Step` each), ``graph`` (what is left; for faces the bipartite
        LCG), ``dual`` (faces) and ``graphs``.

    Raises
    ------
    ValueError
        For an unknown order or ``on``, a step the graph does not allow at that
        point (a vertex that is not an intermediate or already gone, an edge
        not there, a face not eliminable), an exhaustive search on a graph too
        large for it (the message says how to ask anyway), or a Jacobian that
        overflows (``AccumulationOverflow``).
    TypeError
        For an order that is neither a name nor a list (a set has no order),
        a malformed step, or faces on a graph with arrays.

    See Also
    --------
    elimination_cost : The counts alone, without graphs.
    elimination_order : The steps a named order takes.
    minirad.render_elimination : One picture per vertex step.

    Notes
    -----
    Vertex elimination is Griewank and Walther, *Evaluating Derivatives* (2nd
    ed., 2008), Ch. 9; edge and face elimination are Naumann's (*Math.
    Program.* 99, 2004, Sec. 2 and 4).  Vertex and edge orders are face orders
    in particular, so the optima can only fall from vertices to edges to faces.
    The cost convention is the module docstring's; eliminating vertex ``v``
    costs ``|pred(v)| * |succ(v)|`` multiplications on a graph of numbers.

    Examples
    --------
    >>> from minirad import examples
    >>> result = eliminate(examples.two_outputs(), "markowitz", keep_graphs=True)
    >>> result.order, result.multiplications, result.additions
    (('v3', 'v2', 'v4'), 7, 2)
    >>> first = result.steps[0]
    >>> first.eliminated, first.predecessors, first.successors, first.fill_in, first.updated
    ('v3', ('v2',), ('v4',), (('v2', 'v4'),), ())
    >>> [len(h.intermediates) for h in result.graphs]
    [3, 2, 1, 0]
    >>> g = examples.lab()  # f = x*y + sin(x): v2 = x*y, v3 = sin(x)
    >>> edges = eliminate(g, [("x", "v2", "front"), ("v3", "f", "back")], on="edges")
    >>> edges.steps[0].fill_in, edges.steps[1].updated, edges.steps[1].removed
    ((('x', 'f'),), (('x', 'f'),), ('v3',))
    >>> faces = eliminate(g, "optimal", on="faces")
    >>> faces.multiplications, faces.additions, faces.order[0]
    (3, 1, ((('x', 'v2'),), (('v2', 'f'),)))
    """
    on = _check_on(on)
    with np.errstate(over="ignore", invalid="ignore"):   # blocks overflowing: checked below
        run = _run(g, order, on, keep_graphs, max_intermediates)
    graphs = list(run.graphs)
    jacobian, dual = (run.work.jacobian() if run.finished else None), None
    taken, replay = tuple(run.taken), partial(tuple, run.steps)
    if on == "faces":
        dual = run.work.to_networkx()
        final = _bipartite(g, jacobian) if run.finished else None
    else:
        final = run.work.to_lcg() if run.taken else g
        if on == "vertices":
            taken = tuple(g.names[v] for v in run.taken)
            # the same order again, explicitly, with every step recorded
            replay = partial(_recorded_steps, g, list(run.taken))
        if keep_graphs:
            graphs.append(final)
    result = Elimination(
        jacobian, run.multiplications, run.additions, order=taken, on=on, graph=final,
        dual=dual, graphs=tuple(graphs), replay=replay,
        shapes=None if g.algebra is FLOATS else (tuple(g.shapes[v] for v in g.outputs),
                                                 tuple(g.shapes[v] for v in g.inputs)))
    if jacobian is not None and not np.isfinite(jacobian).all():
        where = None
        if g.algebra is FLOATS and on == "vertices":
            # the first step whose new or updated partials are not finite is where it overflowed
            where = next((step.eliminated for step in result.steps if not np.isfinite(
                np.asarray(step.fill_in_labels + step.updated_labels, dtype=float)).all()), None)
        check_finite(g, jacobian, "eliminate", vertex=where and f"{where} (when eliminated)",
                     what="" if on == "vertices" else f" (eliminating {on})")
    return result


@takes_graph_or_function
def eliminate_vertex(g: LCG, vertex) -> LCG:
    """The graph left by eliminating the one intermediate ``vertex``.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    vertex : str or int
        An intermediate, by name or number.

    Returns
    -------
    LCG
        Vertices renumbered; names, values and ops kept, except that the
        successors of ``vertex`` get op ``""``, since their operands changed.
        A successor keeps its other operands in order and gains the
        predecessors of ``vertex`` it did not already have, appended in its
        operand order.

    Raises
    ------
    ValueError
        When ``vertex`` is not a vertex of ``g``, or is an input or an output.

    See Also
    --------
    eliminate : Every intermediate in an order, with the counts.

    Notes
    -----
    Every path ``p -> vertex -> s`` becomes the edge ``p -> s`` with label
    ``ds/dvertex * dvertex/dp``, added to an edge already there (the chain rule
    and the path sum; Griewank and Walther, 2008, Sec. 9.1).

    Examples
    --------
    >>> from minirad import examples
    >>> g = examples.lab()
    >>> h = eliminate_vertex(g, "v2")
    >>> h.names, h.predecessors("f"), h.partial("x", "f")
    (('x', 'y', 'v3', 'f'), (2, 0, 1), 3.0)
    """
    (v,) = _vertices(g, [vertex])
    work = _Working(g)
    work.eliminate_vertex(v, record=False)
    return work.to_lcg()


@takes_graph_or_function
def elimination_order(g: LCG, order="markowitz", on: str = "vertices", *,
                      max_intermediates: int | None = None) -> tuple:
    """The steps an elimination order takes on ``g``, by name.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    order : {"markowitz", "forward", "reverse", "optimal"} or list, optional
        The order, as :func:`eliminate` takes it (default ``"markowitz"``).
    on : {"vertices", "edges", "faces"}, optional
        What a step eliminates (default ``"vertices"``).
    max_intermediates : int, optional
        Raise (or lower) the limit of the exhaustive vertex search, in
        intermediates.

    Returns
    -------
    tuple
        Vertex names, ``(i, j, end)`` edges or faces, as ``Elimination.order``
        lists them: a named order resolved, an explicit list checked.

    Raises
    ------
    ValueError
        As :func:`eliminate` raises for the order.
    TypeError
        As :func:`eliminate` raises for the order.

    See Also
    --------
    eliminate : Take those steps.
    vertex_order_as_edges : A vertex order written as edge steps.

    Examples
    --------
    >>> from minirad import examples
    >>> elimination_order(examples.figure1(), "markowitz")
    ('v3', 'v4', 'v2', 'v5')
    >>> elimination_order(examples.lab(), "forward", on="edges")
    (('x', 'v2', 'front'), ('y', 'v2', 'front'), ('x', 'v3', 'front'))
    >>> elimination_order(examples.figure1(), "sideways")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown elimination order 'sideways'; use one of 'forward', 'reverse', ...
    """
    run = _run(g, order, _check_on(on), max_intermediates=max_intermediates)
    if on == "vertices":
        return tuple(g.names[v] for v in run.taken)
    return tuple(run.taken)


@takes_graph_or_function
def elimination_cost(g: LCG, order="markowitz", on: str = "vertices", *,
                     max_intermediates: int | None = None) -> tuple[int, int]:
    """``(multiplications, additions)`` of an order, without building graphs
    (``max_intermediates`` as in :func:`eliminate`).

    >>> from minirad import examples
    >>> elimination_cost(examples.two_outputs(), "reverse")
    (10, 3)
    >>> elimination_cost(examples.two_outputs(), ["v3"])
    (1, 0)
    >>> elimination_cost(examples.edge_beats_vertex(), "optimal", on="edges")
    (6, 5)
    """
    run = _run(g, order, _check_on(on), max_intermediates=max_intermediates)
    return run.multiplications, run.additions


@takes_graph_or_function
def cheaper_than(g: LCG, multiplications: int, on: str = "faces") -> Elimination | None:
    """A cheapest elimination of ``g`` on ``on`` if it takes fewer than
    ``multiplications`` multiplications, else None.

    The exhaustive search of ``eliminate(g, "optimal", on=on)``, told to drop
    every structure from which no sequence can come in under the limit:
    asking whether faces or edges beat a known cost (the vertex optimum, say)
    is much cheaper than finding their optimum.  On edges and faces it is
    limited by the number of structures met, not by the number of edges.

    >>> from minirad import examples
    >>> g = examples.lab()  # its face optimum is 3
    >>> cheaper_than(g, 3) is None, cheaper_than(g, 4).multiplications
    (True, 3)
    """
    if isinstance(multiplications, bool) or not isinstance(multiplications, (int, np.integer)):
        raise TypeError(f"multiplications must be an integer, not "
                        f"{type(multiplications).__name__}")
    limit = int(multiplications) - 1
    on = _check_on(on)
    if on == "vertices":
        best = eliminate(g, "optimal")
        return best if best.multiplications <= limit else None
    if on == "edges":
        found = cheapest_edge_order(g, at_most=limit)
        found = found and [(g.names[u], g.names[v], end) for u, v, end in found]
    else:
        found = cheapest_face_order(g, at_most=limit)
    return None if found is None else eliminate(g, found, on=on)


@takes_graph_or_function
def vertex_order_as_edges(g: LCG, order, end: str = FRONT) -> tuple[tuple[str, str, str], ...]:
    """The edge steps that eliminate the vertices of ``order`` one by one.

    ``end="front"`` front-eliminates each vertex's in-edges (in operand
    order), ``"back"`` back-eliminates its out-edges (in vertex order); a
    vertex without in-edges (front) or out-edges (back) has its other edges
    eliminated the other way, at no cost.  Either gives the graphs, labels and
    costs of the vertex order.  ``order`` is a list of intermediates or a
    vertex order's name.

    >>> from minirad import examples
    >>> vertex_order_as_edges(examples.lab(), ["v2", "v3"])
    (('x', 'v2', 'front'), ('y', 'v2', 'front'), ('x', 'v3', 'front'))
    """
    if end not in ENDS:
        raise ValueError(f"end must be {FRONT!r} or {BACK!r}, not {end!r}")
    work = _Working(g)
    work.drop_isolated()
    sequence = []
    for v in map(g.index, elimination_order(g, order)):  # validated names or a named order
        if work.pred[v] is None:
            continue
        forward = end == FRONT and work.pred[v] or not work.succ[v]
        steps = ([(u, v, FRONT) for u in work.pred[v]] if forward
                 else [(v, w, BACK) for w in sorted(work.succ[v])])
        for u, w, way in steps:
            work.eliminate_edge(u, w, way)
            sequence.append((g.names[u], g.names[w], way))
    return tuple(sequence)


@takes_graph_or_function
def edges_as_faces(g: LCG, order) -> tuple[tuple[DualName, DualName], ...]:
    """The faces whose elimination is the edge elimination ``order``.

    Front-eliminating ``i -> j`` eliminates the faces from its dual vertex
    to those of the edges out of ``j``; back-eliminating it, the faces into
    it from those of the edges into ``i``.  An edge on no input-output path
    has no dual vertex (face elimination drops it first), so its steps have
    no faces.  The face sequence gives the same Jacobian, for the
    multiplications and additions of the edge steps on input-output paths.
    ``order`` is an edge order (a list of ``(i, j, end)`` or a name).

    >>> from minirad import examples
    >>> edges_as_faces(examples.lab(), [("x", "v2", "front")])
    (((('x', 'v2'),), (('v2', 'f'),)),)
    """
    edges = _run_edges(g, order, keep_graphs=False).taken  # checked, as names
    dual = Dual.of(g, Registry())
    faces = []
    for i, j, end in edges:
        a = dual.joining(g.index(i), g.index(j))
        if a is None:   # an edge off every input-output path: not in the dual
            continue
        pairs = ([(a, b) for b in dual.succ[a]] if end == FRONT
                 else [(p, a) for p in dual.pred[a]])
        for p, q in sorted(pairs, key=lambda face: (dual.names(face[0]), dual.names(face[1]))):
            faces.append((dual.names(p), dual.names(q)))
            dual.eliminate(p, q)
    return tuple(faces)

