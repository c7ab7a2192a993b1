"""Edge elimination: collapse an LCG into its Jacobian one edge at a time.

Vertex elimination (:mod:`minirad.exact.elimination`) applies the chain rule
to every path through a vertex at once.  Edge elimination applies it to the
paths through one edge, in one of two directions.  The definitions are
Naumann's (*Optimal accumulation of Jacobian matrices by elimination methods
on the dual computational graph*, Math. Program. 99, 2004, Sec. 2) and
Griewank and Walther's (*Evaluating Derivatives*, 2nd ed., 2008, Sec. 10.1),
with ``c_ji`` the label of edge ``i -> j`` (dj/di):

* **Front elimination** of ``i -> j`` (``j`` an intermediate): for every
  successor ``k`` of ``j``, put ``c_kj * c_ji`` on ``i -> k``, adding it to
  the label there if the edge exists (one addition) and creating the edge
  otherwise (fill-in); then delete ``i -> j``.  If ``j`` is left without
  in-edges, no input reaches it any more: ``j`` and its out-edges are deleted.
  Cost: ``|succ(j)|`` multiplications.
* **Back elimination** of ``i -> j`` (``i`` an intermediate): for every
  predecessor ``h`` of ``i``, put ``c_ji * c_ih`` on ``h -> j`` the same way;
  then delete ``i -> j``.  If ``i`` is left without out-edges, it reaches no
  output any more: ``i`` and its in-edges are deleted.  Cost: ``|pred(i)|``
  multiplications.

Every path through the eliminated edge is rerouted over a new or merged edge
with the same product, so no path sum (Jacobian entry) changes.  When no edge
touches an intermediate vertex, the graph is bipartite and holds the
Jacobian, exactly as after vertex elimination.  Eliminating vertex ``v`` is
front-eliminating all its in-edges, or back-eliminating all its out-edges: the
same products, sums, graph and cost (:func:`vertex_order_as_edges`).
Edge sequences that are not vertex eliminations can be cheaper than every
vertex order (``examples.edge_beats_vertex()``); face elimination
(:mod:`minirad.exact.face_elimination`) goes further still.

Labels are combined through the graph's algebra (``g.algebra.multiply``
and ``add``, with their ``multiply_cost`` and ``add_cost``), as in vertex
elimination, so a graph of arrays is eliminated edge by edge too, its labels
Jacobian blocks and its costs flops; on graphs of numbers every operation
counts 1.  The exhaustive ``"optimal"`` search prices every product as one
multiplication, so it takes graphs of numbers only.

Heuristic and optimum, against vertex elimination's, in multiplications on
the graphs whose vertex costs ``tests/exact/test_elimination.py`` derives by hand,
and on the graph found where edge elimination wins (``"markowitz"`` is the
edge rule of :func:`eliminate_edges`):

>>> from minirad import examples
>>> from minirad.exact.elimination import elimination_cost
>>> graphs = {"Figure 1": examples.figure1(), "two outputs": examples.two_outputs(),
...           "lecture": examples.lecture(), "lab": examples.lab(),
...           "beats vertex": examples.edge_beats_vertex()}
>>> print(f"{'graph':<13}{'vertex Markowitz':>17}{'vertex optimum':>15}"
...       f"{'edge Markowitz':>15}{'edge optimum':>13}")
graph         vertex Markowitz vertex optimum edge Markowitz edge optimum
>>> for name, g in graphs.items():
...     row = [elimination_cost(g, "markowitz")[0], elimination_cost(g, "optimal")[0],
...            eliminate_edges(g, "markowitz").multiplications,
...            eliminate_edges(g, "optimal").multiplications]
...     print(f"{name:<13}" + "".join(f"{n:>{w}}" for n, w in zip(row, (17, 15, 15, 13))))
Figure 1                     6              5              5            5
two outputs                  7              7              7            7
lecture                      6              6              6            6
lab                          3              3              3            3
beats vertex                 7              7              8            6

The edge rule finds Figure 1's optimum, which vertex Markowitz misses, but
misses the one of ``edge_beats_vertex()``: greedy rules are not optimal.  On
150 random graphs (``minirad.exact.elimination_gaps.markowitz_rules(150,
rng=0)``) the two rules cost about the same in all, 5,554 multiplications
for the edge rule against 5,560, the edge rule cheaper on 54 graphs and
dearer on 57.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field

import numpy as np

from ..graph.calls import takes_graph_or_function
from ..graph.labels import FLOATS
from ..graph.lcg import LCG
from ._cheapest import cheapest
from .elimination import elimination_order
from .overflow import check_finite
from .result import Accumulation, from_labels

__all__ = [
    "BACK", "ENDS", "FRONT", "OPTIMAL_EDGES", "ORDERS", "EdgeElimination", "EdgeStep",
    "back_eliminate", "eliminate_edges", "front_eliminate", "vertex_order_as_edges",
]

FRONT, BACK = "front", "back"
ENDS = (FRONT, BACK)
ORDERS = ("markowitz", "optimal")

#: the exhaustive search is refused on graphs with more edges than this
OPTIMAL_EDGES = 14
#: ... and stops past this many distinct structures
OPTIMAL_STATES = 200_000


@dataclass(frozen=True)
class EdgeStep:
    """What one edge elimination did, in vertex names, on the graph just before it.

    ``edge`` is ``(i, j)`` and ``direction`` ``"front"`` or ``"back"``;
    ``partners`` are the edges' other ends it was multiplied with (the
    successors of ``j`` for front, the predecessors of ``i`` for back);
    ``fill_in`` the edges it created, ``updated`` the existing edges it added
    to, and ``removed`` the vertex it left without in-edges (front) or
    out-edges (back), deleted with its other edges, if any.
    ``fill_in_labels`` and ``updated_labels`` are those edges' labels after
    the step.
    """

    edge: tuple[str, str]
    direction: str
    partners: tuple[str, ...]
    fill_in: tuple[tuple[str, str], ...]
    updated: tuple[tuple[str, str], ...]
    removed: tuple[str, ...]
    multiplications: int
    additions: int
    fill_in_labels: tuple = field(default=(), compare=False)  # numbers, not structure
    updated_labels: tuple = field(default=(), compare=False)


@dataclass(frozen=True, eq=False, repr=False)
class EdgeElimination(Accumulation):
    """The result of :func:`eliminate_edges`: an
    :class:`~minirad.exact.result.Accumulation` with method ``"edge elimination"``.

    ``sequence`` lists the steps taken as ``(i, j, direction)`` in vertex
    names, ``steps`` what each did (:class:`EdgeStep`), ``graph`` the graph
    left at the end and ``graphs`` the graph before each step followed by the
    final one (only with ``keep_graphs=True``).  ``jacobian`` is None when
    the sequence stopped before every intermediate was gone.
    """

    jacobian: np.ndarray | None
    multiplications: int
    additions: int
    method: str = "edge elimination"
    sequence: tuple[tuple[str, str, str], ...] = field(default=(), kw_only=True)
    steps: tuple[EdgeStep, ...] = field(default=(), kw_only=True)
    graph: LCG = field(default=None, kw_only=True)
    graphs: tuple[LCG, ...] = field(default=(), kw_only=True)

    def __repr__(self) -> str:
        shape = None if self.jacobian is None else self.jacobian.shape
        return (f"EdgeElimination({len(self.sequence)} steps, jacobian shape {shape}, "
                f"multiplications={self.multiplications}, additions={self.additions})")


# ---------------------------------------------------------- working graph
class _Edges:
    """A mutable copy of an LCG's edges: ``pred[v]`` maps each predecessor to
    the label of its edge into ``v`` (operand order, fill-ins appended),
    ``succ[u]`` is an insertion-ordered set of successors; a deleted vertex
    has ``pred[v] is None``."""

    def __init__(self, g: LCG):
        self.g = g
        n = g.n_vertices
        self.pred: list[dict | None] = [{} for _ in range(n)]
        self.succ: list[dict | None] = [{} for _ in range(n)]
        labels = g.labels
        labels = labels.tolist() if isinstance(labels, np.ndarray) else list(labels)
        for u, v, label in zip(g.sources.tolist(), g.targets.tolist(), labels):
            self.pred[v][u] = label
            self.succ[u][v] = None
        self.middle = frozenset(g.intermediates)
        for v in self.middle:  # an intermediate no edge touches has nothing to eliminate
            if not self.pred[v] and not self.succ[v]:
                self.pred[v] = self.succ[v] = None
        self.touched: set[int] = set()  # vertices whose operands changed

    def finished(self) -> bool:
        return all(self.pred[v] is None for v in self.middle)

    def candidates(self) -> list[tuple[int, int, str]]:
        """Every elimination possible now, edges by (target, source), front first."""
        found = []
        for v, into in enumerate(self.pred):
            for u in sorted(into or ()):
                if v in self.middle:
                    found.append((u, v, FRONT))
                if u in self.middle:
                    found.append((u, v, BACK))
        return found

    def cost(self, u: int, v: int, direction: str) -> int:
        return len(self.succ[v]) if direction == FRONT else len(self.pred[u])

    def fill_in(self, u: int, v: int, direction: str) -> int:
        """How many new edges the step would create."""
        if direction == FRONT:
            return sum(1 for k in self.succ[v] if u not in self.pred[k])
        return sum(1 for h in self.pred[u] if h not in self.pred[v])

    def eliminate(self, u: int, v: int, direction: str) -> EdgeStep:
        algebra, pred, succ = self.g.algebra, self.pred, self.succ
        c_vu = pred[v].pop(u)  # first: fill-ins into v then follow its other operands
        del succ[u][v]
        if direction == FRONT:  # i -> k for every successor k of v, i = u
            partners = sorted(succ[v])
            pairs = [(u, k, pred[k][v], c_vu) for k in partners]
            self.touched.update(partners, [v])
        else:                   # h -> j for every predecessor h of u, j = v
            partners = list(pred[u])
            pairs = [(h, v, c_vu, pred[u][h]) for h in partners]
            self.touched.add(v)
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
        # a vertex no input reaches (front) or that reaches no output (back) goes,
        # and so does an intermediate the step left without any edge
        end, other = (v, u) if direction == FRONT else (u, v)
        removed = [end] if not (pred[end] if direction == FRONT else succ[end]) else []
        removed += [other] if other in self.middle and not pred[other] and not succ[other] else []
        for w in removed:
            for k in succ[w]:
                del pred[k][w]
            for h in pred[w]:
                del succ[h][w]
            pred[w] = succ[w] = None
        names = self.g.names
        return EdgeStep(
            (names[u], names[v]), direction, tuple(names[w] for w in partners),
            tuple((names[a], names[b]) for a, b in fill_in),
            tuple((names[a], names[b]) for a, b in updated),
            tuple(names[w] for w in removed), multiplications, additions,
            tuple(pred[b][a] for a, b in fill_in), tuple(pred[b][a] for a, b in updated))

    def to_lcg(self) -> LCG:
        g = self.g
        alive = [v for v in range(g.n_vertices) if self.pred[v] is not None]
        number = {v: i for i, v in enumerate(alive)}
        # alive vertices keep their order (still topological); edges go by target
        edges = [(number[u], number[v], label) for v in alive for u, label in self.pred[v].items()]
        sources, targets, labels = zip(*edges) if edges else ((), (), ())
        names = [g.names[v] for v in alive]
        inputs, outputs = [number[x] for x in g.inputs], [number[y] for y in g.outputs]
        ops = ["" if v in self.touched else g.ops[v] for v in alive]
        if g.algebra is FLOATS:
            return LCG.from_trusted_arrays(names, sources, targets, labels, inputs, outputs,
                                           g.values[alive], ops)
        return LCG(names, list(sources), list(targets), list(labels), inputs, outputs,
                   values=None if g.values is None else [g.values[v] for v in alive], ops=ops,
                   shapes=[g.shapes[v] for v in alive], dtypes=[g.dtypes[v] for v in alive],
                   injections=g.injections)

    def jacobian(self) -> np.ndarray:
        g = self.g
        if g.algebra is FLOATS:
            column = {x: c for c, x in enumerate(g.inputs)}
            J = np.zeros((len(g.outputs), len(g.inputs)))
            for r, y in enumerate(g.outputs):
                for x, label in self.pred[y].items():
                    J[r, column[x]] = label
        else:   # the remaining edges are the blocks, input -> output
            J = from_labels(g, g.outputs, g.inputs, lambda y, x: self.pred[y].get(x))
        J.flags.writeable = False
        return J


# ------------------------------------------------------------- sequences
def _step(work: _Edges, entry, position: int) -> tuple[int, int, str]:
    """An entry ``(i, j, direction)`` of a sequence, checked against the current graph."""
    g = work.g
    if isinstance(entry, (str, bytes, Set, Mapping)) or not isinstance(entry, Iterable) \
            or len(entry := tuple(entry)) != 3:
        raise TypeError(f"step #{position} is {entry!r}; each step is a triple (i, j, "
                        f"direction) with direction {FRONT!r} or {BACK!r}")
    i, j, direction = entry
    if direction not in ENDS:
        raise ValueError(f"step #{position} has direction {direction!r}; use {FRONT!r} or "
                         f"{BACK!r}")
    u, v = g.index(i), g.index(j)
    if work.pred[v] is None or u not in work.pred[v]:
        raise ValueError(f"step #{position}: there is no edge {g.names[u]} -> {g.names[v]} in "
                         f"the graph at that point (never there, already eliminated, or its "
                         f"vertex deleted)")
    end = v if direction == FRONT else u
    if end not in work.middle:
        role = "head" if direction == FRONT else "tail"
        raise ValueError(f"step #{position}: {direction} elimination of {g.names[u]} -> "
                         f"{g.names[v]} needs its {role} to be an intermediate, but "
                         f"{g.names[end]} is an {g.kind(end)}; use "
                         f"{BACK if direction == FRONT else FRONT!r}")
    return u, v, direction


def _markowitz_choice(work: _Edges) -> tuple[int, int, str]:
    """The step of least cost (the edge's Markowitz degree: |succ(j)| for front,
    |pred(i)| for back); among those the one creating the fewest new edges, then
    the edge nearest the outputs, front first."""
    return min(work.candidates(), key=lambda c: (work.cost(*c), work.fill_in(*c), -c[1], -c[0],
                                                 c[2] != FRONT))


def _optimal(g: LCG) -> list[tuple[int, int, str]]:
    """A cheapest sequence, by Dijkstra over edge sets (bitmasks of predecessors)."""
    if g.algebra is not FLOATS:
        raise ValueError("the optimal edge sequence is searched with every product costing one "
                         "multiplication, which holds on a graph of numbers only; on a graph "
                         "of arrays use 'markowitz' or an explicit sequence, or search "
                         "minirad.scalarize(g)")
    if g.n_edges > OPTIMAL_EDGES:
        raise ValueError(f"the optimal edge sequence is searched over every edge structure; it "
                         f"is limited to {OPTIMAL_EDGES} edges and this graph has {g.n_edges}. "
                         f"Use 'markowitz' or an explicit sequence")
    middle = frozenset(g.intermediates)
    start = [0] * g.n_vertices
    for u, v in zip(g.sources.tolist(), g.targets.tolist()):
        start[v] |= 1 << u

    def successors(P) -> list[int]:
        S = [0] * len(P)
        for v, into in enumerate(P):
            for u in _bits(into):
                S[u] |= 1 << v
        return S

    def moves(P):
        S = successors(P)
        for v, into in enumerate(P):
            for u in _bits(into):
                if v in middle:  # front: u joins every successor of v
                    after = list(P)
                    after[v] &= ~(1 << u)
                    for k in _bits(S[v]):
                        after[k] |= 1 << u
                    if not after[v]:
                        for k in _bits(S[v]):
                            after[k] &= ~(1 << v)
                    yield ((u, v, FRONT), (S[v].bit_count(), (S[v] & S[u]).bit_count()),
                           tuple(after))
                if u in middle:  # back: every predecessor of u joins v
                    after = list(P)
                    after[v] = (after[v] & ~(1 << u)) | P[u]
                    if not S[u] & ~(1 << v):
                        after[u] = 0
                    yield ((u, v, BACK), (P[u].bit_count(), (P[u] & P[v]).bit_count()),
                           tuple(after))

    inner = sum(1 << v for v in middle)

    def finished(P) -> bool:  # no edge into or out of an intermediate
        return not any(P[v] for v in middle) and not any(into & inner for into in P)

    # Without intermediates that lack in- or out-edges, every intermediate still
    # joined to the graph needs a step of its own (front on its last in-edge or
    # back on its last out-edge) costing at least one multiplication: a lower
    # bound on what is left, which spares the search most structures (A*).
    plain = all(g.in_degree(v) and g.out_degree(v) for v in middle)

    def estimate(P) -> int:
        return sum(1 for v in middle if P[v]) if plain else 0

    return cheapest(tuple(start), moves, finished, OPTIMAL_STATES, estimate)[1]


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


# -------------------------------------------------------------- public API
@takes_graph_or_function
def eliminate_edges(g: LCG, order="markowitz", keep_graphs: bool = False) -> EdgeElimination:
    """Eliminate edges of ``g`` in sequence; the Jacobian once no intermediate is left.

    ``order`` is a list of steps ``(i, j, end)``, vertices by name or
    number and ``direction`` ``"front"`` or ``"back"``, each checked against
    the graph the earlier steps left (a list may stop early: then
    ``jacobian`` is None), or a strategy: ``"markowitz"`` (always the step of
    least cost on the current graph, ``|succ(j)|`` for front and ``|pred(i)|``
    for back, as the lowest-Markowitz edge rule of Naumann's ANGEL tool;
    ties to the edge nearest the outputs, front before back) or
    ``"optimal"`` (exhaustive, at most :data:`OPTIMAL_EDGES` edges).

    >>> from minirad import examples
    >>> g = examples.lab()  # f = x*y + sin(x): v2 = x*y, v3 = sin(x)
    >>> result = eliminate_edges(g, [("x", "v2", "front"), ("v3", "f", "back")])
    >>> step = result.steps[0]
    >>> step.fill_in, step.removed, step.multiplications
    ((('x', 'f'),), (), 1)
    >>> result.steps[1].updated, result.steps[1].removed
    ((('x', 'f'),), ('v3',))
    >>> result.jacobian is None, result.graph
    (True, LCG(4 vertices: 2 inputs, 1 intermediate, 1 output; 3 edges))
    >>> eliminate_edges(g, "optimal").jacobian.tolist() == [[3.0 + float(np.cos(2.0)), 2.0]]
    True
    """
    work = _Edges(g)
    if isinstance(order, str):
        if order not in ORDERS:
            raise ValueError(f"unknown edge elimination strategy {order!r}; use one of "
                             f"{', '.join(map(repr, ORDERS))} or a list of (i, j, "
                             f"direction) steps")
        plan = _optimal(g) if order == "optimal" else None
    elif isinstance(order, (bytes, Set, Mapping)) or not isinstance(order, Iterable):
        raise TypeError(f"an edge elimination order is one of {', '.join(ORDERS)} or a "
                        f"list of (i, j, end) steps, not {type(order).__name__}")
    else:
        plan = list(order)
    steps, graphs, taken = [], [], []
    position = 0
    while (position < len(plan)) if plan is not None else not work.finished():
        if keep_graphs:
            graphs.append(work.to_lcg() if steps else g)
        u, v, direction = (_markowitz_choice(work) if plan is None
                           else _step(work, plan[position], position))
        steps.append(work.eliminate(u, v, direction))
        taken.append((g.names[u], g.names[v], direction))
        position += 1
    final = work.to_lcg() if steps else g
    if keep_graphs:
        graphs.append(final)
    jacobian = work.jacobian() if work.finished() else None
    if jacobian is not None and g.algebra is FLOATS:
        check_finite(g, jacobian, "edge elimination")
    return EdgeElimination(
        jacobian, sum(s.multiplications for s in steps), sum(s.additions for s in steps),
        sequence=tuple(taken), steps=tuple(steps), graph=final, graphs=tuple(graphs))


@takes_graph_or_function
def front_eliminate(g: LCG, i, j) -> LCG:
    """The graph left by front-eliminating the edge ``i -> j`` (``j`` an intermediate).

    >>> from minirad import examples
    >>> g = examples.figure1()  # v2 = exp(x1) feeds v5 and y
    >>> h = front_eliminate(g, "x1", "v2")  # v2 loses its only in-edge, so it goes
    >>> "v2" in h.names, h.partial("x1", "y") == g.partial("v2", "y") * g.partial("x1", "v2")
    (False, True)
    """
    return eliminate_edges(g, [(i, j, FRONT)]).graph


@takes_graph_or_function
def back_eliminate(g: LCG, i, j) -> LCG:
    """The graph left by back-eliminating the edge ``i -> j`` (``i`` an intermediate).

    >>> from minirad import examples
    >>> g = examples.figure1()
    >>> h = back_eliminate(g, "v2", "y")  # v2 keeps its other out-edge, to v5
    >>> [h.name(v) for v in h.predecessors("y")], h.successors("v2") == (h.index("v5"),)
    (['v5', 'x1'], True)
    """
    return eliminate_edges(g, [(i, j, BACK)]).graph


@takes_graph_or_function
def vertex_order_as_edges(g: LCG, order, end: str = FRONT) -> tuple[tuple[str, str, str], ...]:
    """The edge sequence that eliminates the vertices of ``order`` one by one.

    ``end="front"`` front-eliminates each vertex's in-edges (in operand
    order), ``"back"`` back-eliminates its out-edges (in vertex order); a
    vertex without in-edges (front) or out-edges (back) has its other edges
    eliminated the other way, at no cost.  Either gives the graphs, labels and
    costs of :func:`minirad.exact.elimination.eliminate` in that order.
    ``order`` is a list of intermediates or a vertex strategy name.

    >>> from minirad import examples
    >>> vertex_order_as_edges(examples.lab(), ["v2", "v3"])
    (('x', 'v2', 'front'), ('y', 'v2', 'front'), ('x', 'v3', 'front'))
    """
    if end not in ENDS:
        raise ValueError(f"end must be {FRONT!r} or {BACK!r}, not {end!r}")
    work = _Edges(g)
    sequence = []
    for v in map(g.index, elimination_order(g, order)):  # validated names or a strategy
        if work.pred[v] is None:
            continue
        forward = end == FRONT and work.pred[v] or not work.succ[v]
        steps = ([(u, v, FRONT) for u in work.pred[v]] if forward
                 else [(v, w, BACK) for w in sorted(work.succ[v])])
        for u, w, way in steps:
            work.eliminate(u, w, way)
            sequence.append((g.names[u], g.names[w], way))
    return tuple(sequence)
