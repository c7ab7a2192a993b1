"""Face elimination on the dual c-graph: the chain rule one pair of edges at a time.

Naumann (*Optimal accumulation of Jacobian matrices by elimination methods on
the dual computational graph*, Math. Program. 99, 2004, Sec. 4) moves the LCG
onto its **dual c-graph**, a directed line graph:

* every edge ``i -> j`` of the LCG is a dual vertex, labelled ``c_ji``;
* every input ``x`` gets a *source* dual vertex and every output ``y`` a
  *sink* dual vertex (the edges into the inputs and out of the outputs
  that the LCG leaves implicit);
* a **face** is a dual edge ``(i -> j) => (j -> k)``: two LCG edges that meet
  at ``j``; sources lead to the edges out of their input, the edges into an
  output lead to its sink.

A dual vertex here is named by the set of LCG paths it sums: the edge
``i -> j`` by the one path ``(i, j)``, the source of ``x`` by ``(x,)`` and
the sink of ``y`` by ``(y,)``.  A face ``(a, b)`` between two dual
vertices neither of which is a source or a sink is **eliminated** by
(Naumann's definition, as in his ANGEL tool):

1. if some dual vertex ``c`` has the predecessors of ``a`` and the
   successors of ``b`` (exactly), its label becomes ``c + b * a``
   (*absorption*: one multiplication, one addition); otherwise a new
   vertex with those predecessors and successors is made with label
   ``b * a`` (*fill-in*: one multiplication).  Either way it now sums the
   paths ``p + q`` for ``p`` in ``a`` and ``q`` in ``b``;
2. the face ``(a, b)`` is deleted;
3. ``a``, if left without successors, is deleted (it lies on no path any
   more); otherwise, if another vertex has exactly its predecessors and
   successors, the two are merged into one, their labels added (one
   addition).  The same for ``b`` with predecessors.

Every dual vertex's label stays the sum over its paths of the products of
their partials, and when no face is left to eliminate every remaining vertex
sums all the paths from one input to one output: its label is a Jacobian
entry.  Front-eliminating the LCG edge ``i -> j`` is eliminating every face
out of its dual vertex, back-eliminating it every face into it
(:func:`edges_as_faces`), so edge and vertex elimination are face
elimination in particular orders, and the face optimum is never above the
edge optimum.  Naumann reports graphs where it is strictly below; none has
been found among the thousands of small graphs searched so far
(:mod:`minirad.exact.elimination_gaps` says which), although the steps
here are his (and those of his ANGEL library) and reach dual graphs no edge
sequence reaches: eliminating two faces ``(i1->j, j->k1)`` and
``(i2->j, j->k2)`` leaves ``i1->j`` meeting only ``j->k2``, where every edge
sequence leaves every edge into ``j`` meeting every edge out of it.  One face
costs one multiplication; labels are combined through the graph's algebra.

>>> from minirad import examples
>>> g = examples.lab()  # f = x*y + sin(x): v2 = x*y, v3 = sin(x)
>>> sorted(dual_graph(g).nodes)  # doctest: +NORMALIZE_WHITESPACE
[(('f',),), (('v2', 'f'),), (('v3', 'f'),), (('x',),), (('x', 'v2'),), (('x', 'v3'),),
 (('y',),), (('y', 'v2'),)]
>>> result = eliminate_faces(g, "optimal")
>>> result.multiplications, result.additions
(3, 1)
>>> result.sequence[0]
((('x', 'v2'),), (('v2', 'f'),))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from ..graph.calls import takes_graph_or_function
from ..graph.labels import FLOATS
from ..graph.lcg import LCG
from ._cheapest import cheapest
from .overflow import check_finite
from .result import Accumulation

__all__ = [
    "OPTIMAL_EDGES", "ORDERS", "FaceElimination", "FaceStep", "cheaper_than", "dual_graph",
    "edges_as_faces", "eliminate_faces",
]

ORDERS = ("optimal",)

#: the exhaustive search is refused on graphs with more edges than this
OPTIMAL_EDGES = 10
#: ... and stops past this many distinct dual structures
OPTIMAL_STATES = 50_000

#: a dual vertex by name: its LCG paths, each a tuple of vertex names, in sorted order
DualName = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class FaceStep:
    """What one face elimination did; dual vertices named by their paths.

    ``face`` is ``(a, b)``; ``into`` the vertex that received ``b * a``
    (named after the step), ``absorbed`` whether it existed already;
    ``merged`` the pairs of vertices the step merged into one, in turn
    (named before the merge), ``removed`` the vertices it deleted;
    ``label`` the label of ``into`` after the step.
    """

    face: tuple[DualName, DualName]
    into: DualName
    absorbed: bool
    merged: tuple[DualName, ...]
    removed: tuple[DualName, ...]
    multiplications: int
    additions: int
    label: object = field(default=None, compare=False)


@dataclass(frozen=True, eq=False, repr=False)
class FaceElimination(Accumulation):
    """The result of :func:`eliminate_faces`: an
    :class:`~minirad.exact.result.Accumulation` with method ``"face elimination"``.

    ``sequence`` lists the faces eliminated, ``steps`` what each did
    (:class:`FaceStep`), ``dual`` the dual c-graph left at the end (as
    :func:`dual_graph` draws it) and ``duals`` the one before each step
    followed by the final one (only with ``keep_graphs=True``).
    ``jacobian`` is None while faces are left.
    """

    jacobian: np.ndarray | None
    multiplications: int
    additions: int
    method: str = "face elimination"
    sequence: tuple[tuple[DualName, DualName], ...] = field(default=(), kw_only=True)
    steps: tuple[FaceStep, ...] = field(default=(), kw_only=True)
    dual: nx.DiGraph = field(default=None, kw_only=True)
    duals: tuple[nx.DiGraph, ...] = field(default=(), kw_only=True)

    def __repr__(self) -> str:
        shape = None if self.jacobian is None else self.jacobian.shape
        return (f"FaceElimination({len(self.sequence)} faces, jacobian shape {shape}, "
                f"multiplications={self.multiplications}, additions={self.additions})")


# ------------------------------------------------------------ dual c-graph
class _Registry:
    """Path sets as small integers: a dual vertex's number names its path set,
    so that equal structures have equal numbers, whatever the order of steps."""

    def __init__(self):
        self.number: dict[frozenset, int] = {}
        self.paths: list[frozenset] = []
        self._ends: list[tuple[int, int]] = []

    def __call__(self, paths: frozenset) -> int:
        found = self.number.get(paths)
        if found is None:
            found = self.number[paths] = len(self.paths)
            self.paths.append(paths)
        return found

    def is_end(self, a: int) -> bool:
        """A source or sink: the one path of one vertex."""
        return len(next(iter(self.paths[a]))) == 1

    @property
    def ends(self) -> list[tuple[int, int]]:
        """The first and last LCG vertex of each number's paths (all its paths share them)."""
        while len(self._ends) < len(self.paths):
            path = next(iter(self.paths[len(self._ends)]))
            self._ends.append((path[0], path[-1]))
        return self._ends


class _Dual:
    """A mutable dual c-graph: ``pred``/``succ`` map each dual vertex (a path-set
    number) to a set of them; ``label`` holds labels, or is None for a search
    over structures only."""

    def __init__(self, g: LCG, registry: _Registry, pred, succ, label, algebra):
        self.g, self.registry, self.pred, self.succ = g, registry, pred, succ
        self.label, self.algebra = label, algebra

    @classmethod
    def of(cls, g: LCG, registry: _Registry, labelled: bool = True) -> _Dual:
        """The dual c-graph of ``g``: inputs never have in-edges nor outputs out-edges,
        so a face meets at an intermediate, or joins a source or sink to an edge."""
        if g.algebra is not FLOATS:
            raise TypeError("face elimination works on a graph of numbers; for a graph of "
                            "arrays use minirad.scalarize(g) (one vertex per entry), or edge "
                            "or vertex elimination, which take both")
        labels = g.labels.tolist() if isinstance(g.labels, np.ndarray) else list(g.labels)
        edge = {(u, v): registry(frozenset({(u, v)}))
                for u, v in zip(g.sources.tolist(), g.targets.tolist())}
        end = {v: registry(frozenset({(v,)})) for v in (*g.inputs, *g.outputs)}
        pred = {a: set() for a in (*end.values(), *edge.values())}
        succ = {a: set() for a in pred}
        faces = [(end[u], a) for (u, v), a in edge.items() if u in end]
        faces += [(a, end[v]) for (u, v), a in edge.items() if v in end]
        faces += [(a, edge[v, w]) for (u, v), a in edge.items() for w in g.successors(v)]
        for a, b in faces:
            succ[a].add(b)
            pred[b].add(a)
        label = dict(zip(edge.values(), labels)) if labelled else None
        return cls(g, registry, pred, succ, label, g.algebra)

    def copy(self) -> _Dual:
        return _Dual(self.g, self.registry, {a: set(s) for a, s in self.pred.items()},
                     {a: set(s) for a, s in self.succ.items()},
                     None if self.label is None else dict(self.label), self.algebra)

    def key(self) -> frozenset:
        return frozenset((a, b) for a, out in self.succ.items() for b in out)

    def eliminable(self) -> list[tuple[int, int]]:
        is_end = self.registry.is_end
        return sorted((a, b) for a, out in self.succ.items() if not is_end(a)
                      for b in out if not is_end(b))

    def _twin(self, preds: set, succs: set, other_than: int | None = None) -> int | None:
        """The dual vertex with exactly these predecessors and successors, if any."""
        for c in self.succ[next(iter(preds))]:
            if c != other_than and self.pred[c] == preds and self.succ[c] == succs:
                return c
        return None

    def _rename(self, old: int, new: int) -> None:
        for p in self.pred[old]:
            self.succ[p].discard(old)
            self.succ[p].add(new)
        for s in self.succ[old]:
            self.pred[s].discard(old)
            self.pred[s].add(new)
        self.pred[new], self.succ[new] = self.pred.pop(old), self.succ.pop(old)

    def _delete(self, a: int) -> None:
        for p in self.pred.pop(a):
            self.succ[p].discard(a)
        for s in self.succ.pop(a):
            self.pred[s].discard(a)
        if self.label is not None:
            del self.label[a]

    def _sum(self, a: int, b: int) -> tuple[object, int]:
        """``label[a] + label[b]`` and its cost (1 without labels)."""
        if self.label is None:
            return None, 1
        x, y = self.label[a], self.label[b]
        return self.algebra.add(x, y), self.algebra.add_cost(x, y)

    def eliminate(self, a: int, b: int) -> tuple[int, int, int, bool, list, list]:
        """Eliminate face ``(a, b)``: (multiplications, additions, vertex receiving
        the product, absorbed?, merged vertices, removed vertices)."""
        registry, label, algebra = self.registry, self.label, self.algebra
        paths = registry.paths
        joined = frozenset(p + q[1:] for p in paths[a] for q in paths[b])
        multiplications, additions, product = 1, 0, None
        if label is not None:
            multiplications = algebra.multiply_cost(label[b], label[a])
            product = algebra.multiply(label[b], label[a])
        c = self._twin(self.pred[a], self.succ[b])
        if c is not None:  # absorption: c + b * a
            into = registry(paths[c] | joined)
            self._rename(c, into)
            if label is not None:
                additions += algebra.add_cost(label[c], product)
                label[into] = algebra.add(label.pop(c), product)
            else:
                additions += 1
        else:              # fill-in: a new vertex b * a
            into = registry(joined)
            self.pred[into], self.succ[into] = set(self.pred[a]), set(self.succ[b])
            for p in self.pred[a]:
                self.succ[p].add(into)
            for s in self.succ[b]:
                self.pred[s].add(into)
            if label is not None:
                label[into] = product
        self.succ[a].discard(b)
        self.pred[b].discard(a)
        merged, removed = [], []
        for v, ends in ((a, self.succ), (b, self.pred)):
            if not ends[v]:
                self._delete(v)
                removed.append(v)
                continue
            twin = self._twin(self.pred[v], self.succ[v], other_than=v)
            if twin is not None:  # two vertices with one role: one sum
                total, cost = self._sum(v, twin)
                union = registry(paths[v] | paths[twin])
                self._delete(twin)
                self._rename(v, union)
                if label is not None:
                    label[union] = total
                    del label[v]
                additions += cost
                merged += [v, twin]
        return multiplications, additions, into, c is not None, merged, removed

    def finished(self) -> bool:
        is_end = self.registry.is_end
        return not any(not is_end(a) and not is_end(b)
                       for a, out in self.succ.items() for b in out)

    def jacobian(self) -> np.ndarray:
        g, paths = self.g, self.registry.paths
        row = {y: r for r, y in enumerate(g.outputs)}
        column = {x: c for c, x in enumerate(g.inputs)}
        J = np.zeros((len(g.outputs), len(g.inputs)))
        for a, label in self.label.items():  # sources and sinks carry no label
            path = next(iter(paths[a]))
            J[row[path[-1]], column[path[0]]] = label
        J.flags.writeable = False
        return J

    def joining(self, u: int, v: int) -> int:
        """The dual vertex whose paths run from ``u`` to ``v`` (one while only whole
        LCG edges have been eliminated; all paths of a dual vertex share their ends)."""
        for a in self.pred:
            path = next(iter(self.registry.paths[a]))
            if len(path) > 1 and (path[0], path[-1]) == (u, v):
                return a
        raise ValueError(f"no dual vertex joins {self.g.names[u]} to {self.g.names[v]}")

    def names(self, a: int) -> DualName:
        names = self.g.names
        return tuple(sorted(tuple(names[v] for v in p) for p in self.registry.paths[a]))

    def to_networkx(self) -> nx.DiGraph:
        G = nx.DiGraph()
        for a in self.pred:
            kind = "edges" if not self.registry.is_end(a) else (
                "source" if next(iter(self.registry.paths[a]))[0] in self.g.inputs else "sink")
            G.add_node(self.names(a), kind=kind,
                       label=None if self.label is None else self.label.get(a))
        G.add_edges_from((self.names(a), self.names(b)) for a, out in self.succ.items()
                         for b in out)
        return G


# ------------------------------------------------------------------ faces
def _vertex(dual: _Dual, given, what: str) -> int:
    """The dual vertex named by ``given``: one path (a sequence of vertices) or
    a collection of paths."""
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
                         f"this point; its vertices are listed by FaceElimination.dual (or "
                         f"dual_graph(g))")
    return a


def _face(dual: _Dual, entry, position: int) -> tuple[int, int]:
    if isinstance(entry, (str, bytes, Set, Mapping)) or not isinstance(entry, Iterable) \
            or len(entry := tuple(entry)) != 2:
        raise TypeError(f"face #{position} is {entry!r}; a face is a pair (a, b) of dual "
                        f"vertices, e.g. (('x1', 'v2'), ('v2', 'y'))")
    a, b = (_vertex(dual, side, f"face #{position}") for side in entry)
    if b not in dual.succ[a] or dual.registry.is_end(a) or dual.registry.is_end(b):
        raise ValueError(f"face #{position}: {dual.names(a)} => {dual.names(b)} is not a face "
                         f"that can be eliminated now (it must join two dual vertices, "
                         f"neither a source nor a sink, that meet at an intermediate)")
    return a, b


def _reach(g: LCG) -> tuple[list[int], list[int]]:
    """Bitmasks of every vertex's ancestors and descendants, itself included
    (vertices are numbered in topological order)."""
    above = [1 << v for v in range(g.n_vertices)]
    below = list(above)
    edges = sorted(zip(g.sources.tolist(), g.targets.tolist()), key=lambda e: e[1])
    for u, v in edges:
        above[v] |= above[u]
    for u, v in reversed(edges):
        below[u] |= below[v]
    return above, below


def _apart(crossings) -> int:
    """How many of these faces at one vertex, each given as (ancestors of its
    first vertex's start, descendants of its second vertex's end), are pairwise
    apart (no common ancestor, or no common descendant): counted greedily."""
    chosen = []
    for above, below in sorted(crossings):
        if all(not above & a or not below & b for a, b in chosen):
            chosen.append((above, below))
    return len(chosen)


def _optimal(g: LCG, limit: int | None = None) -> list[tuple[int, int]] | None:
    """A cheapest face sequence (dual vertices by name); with ``limit``, None unless
    one costs at most ``limit`` multiplications."""
    registry = _Registry()
    start = _Dual.of(g, registry, labelled=False)
    above, below = _reach(g)
    entries = {(x, y) for x in g.inputs for y in g.outputs if below[x] >> y & 1}

    def rebuild(key) -> _Dual:
        pred, succ = {}, {}
        for a, b in key:
            succ.setdefault(a, set()).add(b)
            pred.setdefault(b, set()).add(a)
            pred.setdefault(a, set())
            succ.setdefault(b, set())
        return _Dual(g, registry, pred, succ, None, g.algebra)

    def moves(key):
        dual = rebuild(key)
        for a, b in dual.eliminable():
            after = dual.copy()
            multiplications, additions, *_ = after.eliminate(a, b)
            yield (a, b), (multiplications, additions), after.key()

    def estimate(key) -> int:
        # Three lower bounds on the eliminations left (A*), each step costing one:
        # * a dual vertex that is not yet a Jacobian entry must still be the first or
        #   second vertex of an elimination, or merge with a twin that is; one step
        #   settles at most two;
        # * each missing Jacobian entry is made by a step of its own (a step makes
        #   at most one vertex);
        # * an LCG path through an intermediate j where two of its pieces meet is
        #   joined there by exactly one step, whose first vertex starts at an
        #   ancestor of the path's current piece and whose second ends at a
        #   descendant; faces at j with no common ancestor or no common descendant
        #   of their ends need a step each.
        is_end, ends = registry.is_end, registry.ends
        middle = {v for face in key for v in face if not is_end(v)}
        made = {ends[v] for v in middle} & entries
        at = {}
        for a, b in key:
            if not is_end(a) and not is_end(b):
                at.setdefault(ends[a][1], set()).add((above[ends[a][0]], below[ends[b][1]]))
        return max((len(middle) - len(made) + 1) // 2, len(entries) - len(made),
                   sum(_apart(crossings) for crossings in at.values()))

    found = cheapest(start.key(), moves, lambda key: rebuild(key).finished(), OPTIMAL_STATES,
                     estimate, limit)
    if found is None:
        return None
    return [(start.names(a), start.names(b)) for a, b in found[1]]


# -------------------------------------------------------------- public API
@takes_graph_or_function
def dual_graph(g: LCG) -> nx.DiGraph:
    """Naumann's dual c-graph of ``g`` as a networkx DiGraph (see the module docstring).

    Nodes are named by their paths: ``(("x1", "v2"),)`` for the LCG edge
    ``x1 -> v2``, ``(("x1",),)`` for the source of input ``x1`` and
    ``(("y",),)`` for the sink of output ``y``; each has a ``kind``
    (``"source"``, ``"sink"`` or ``"edges"``) and a ``label``.  Its edges
    are the faces.  Without sources and sinks it is networkx's
    ``line_graph`` of the LCG.

    >>> from minirad import examples
    >>> D = dual_graph(examples.lab())
    >>> sorted(b for a, b in D.out_edges([(("x", "v2"),)]))
    [(('v2', 'f'),)]
    >>> D.nodes[(("x", "v2"),)]["label"], D.nodes[(("x",),)]["kind"]
    (3.0, 'source')
    """
    return _Dual.of(g, _Registry()).to_networkx()


@takes_graph_or_function
def eliminate_faces(g: LCG, order="optimal", keep_graphs: bool = False) -> FaceElimination:
    """Eliminate faces of ``g``'s dual c-graph in sequence; the Jacobian once none is left.

    ``order`` is a list of faces ``(a, b)``, each dual vertex named by
    its path (``("x1", "v2")`` for an LCG edge) or by a list of paths (a
    vertex made by earlier steps), checked against the dual graph the
    earlier steps left; or ``"optimal"``, a cheapest sequence found by
    exhaustive search (at most :data:`OPTIMAL_EDGES` LCG edges).  A list
    may stop early: then ``jacobian`` is None.

    >>> from minirad import examples
    >>> g = examples.lab()
    >>> step = eliminate_faces(g, [(("x", "v2"), ("v2", "f"))]).steps[0]
    >>> step.into, step.absorbed, step.removed
    ((('x', 'v2', 'f'),), False, ((('x', 'v2'),),))
    """
    registry = _Registry()
    dual = _Dual.of(g, registry)
    if isinstance(order, str):
        if order not in ORDERS:
            raise ValueError(f"unknown face elimination strategy {order!r}; use 'optimal' or "
                             f"a list of faces (a, b)")
        if g.n_edges > OPTIMAL_EDGES:
            raise ValueError(f"the optimal face sequence is searched over every dual structure; "
                             f"it is limited to {OPTIMAL_EDGES} LCG edges and this graph has "
                             f"{g.n_edges}. Use an explicit sequence, e.g. edges_as_faces")
        order = _optimal(g)
    elif isinstance(order, (bytes, Set, Mapping)) or not isinstance(order, Iterable):
        raise TypeError(f"a face elimination order is 'optimal' or a list of faces (a, b), "
                        f"not {type(order).__name__}")
    steps, duals, taken = [], [], []
    for position, entry in enumerate(order):
        if keep_graphs:
            duals.append(dual.to_networkx())
        a, b = _face(dual, entry, position)
        face = (dual.names(a), dual.names(b))
        before = {v: dual.names(v) for v in dual.pred}
        m, s, into, absorbed, merged, removed = dual.eliminate(a, b)
        steps.append(FaceStep(face, dual.names(into), absorbed,
                              tuple(before[v] for v in merged),
                              tuple(before[v] for v in removed), m, s, dual.label[into]))
        taken.append(face)
    final = dual.to_networkx()
    if keep_graphs:
        duals.append(final)
    jacobian = dual.jacobian() if dual.finished() else None
    if jacobian is not None and g.algebra is FLOATS:
        check_finite(g, jacobian, "face elimination")
    return FaceElimination(
        jacobian, sum(s.multiplications for s in steps), sum(s.additions for s in steps),
        sequence=tuple(taken), steps=tuple(steps), dual=final, duals=tuple(duals))


@takes_graph_or_function
def cheaper_than(g: LCG, multiplications: int) -> FaceElimination | None:
    """A cheapest face elimination of ``g`` if it takes fewer than ``multiplications``
    multiplications, else None.

    The exhaustive search of ``eliminate_faces(g, "optimal")``, told to drop
    every dual structure from which no sequence can come in under the
    limit: asking whether face elimination beats a known cost (the edge
    optimum, say) is much cheaper than finding the face optimum.  It is
    limited by the number of structures met (:data:`OPTIMAL_STATES`), not
    by the number of edges.

    >>> from minirad import examples
    >>> g = examples.lab()  # its face optimum is 3
    >>> cheaper_than(g, 3) is None, cheaper_than(g, 4).multiplications
    (True, 3)
    """
    if isinstance(multiplications, bool) or not isinstance(multiplications, (int, np.integer)):
        raise TypeError(f"multiplications must be an integer, not "
                        f"{type(multiplications).__name__}")
    sequence = _optimal(g, limit=int(multiplications) - 1)
    return None if sequence is None else eliminate_faces(g, sequence)


@takes_graph_or_function
def edges_as_faces(g: LCG, order) -> tuple[tuple[DualName, DualName], ...]:
    """The faces whose elimination is the edge elimination ``order``.

    Front-eliminating ``i -> j`` eliminates the faces from its dual vertex
    to those of the edges out of ``j``; back-eliminating it, the faces into
    it from those of the edges into ``i``.  The face sequence has the
    edge sequence's multiplications and additions and gives the same
    Jacobian.  ``order`` is as for
    :func:`minirad.exact.edge_elimination.eliminate_edges` (a list of
    ``(i, j, end)`` or a strategy name).

    >>> from minirad import examples
    >>> edges_as_faces(examples.lab(), [("x", "v2", "front")])
    (((('x', 'v2'),), (('v2', 'f'),)),)
    """
    from .edge_elimination import FRONT, eliminate_edges

    edges = eliminate_edges(g, order).sequence  # validated, as names
    dual = _Dual.of(g, _Registry())
    faces = []
    for i, j, direction in edges:
        a = dual.joining(g.index(i), g.index(j))
        pairs = ([(a, b) for b in dual.succ[a]] if direction == FRONT
                 else [(p, a) for p in dual.pred[a]])
        for p, q in sorted(pairs, key=lambda face: (dual.names(face[0]), dual.names(face[1]))):
            faces.append((dual.names(p), dual.names(q)))
            dual.eliminate(p, q)
    return tuple(faces)
