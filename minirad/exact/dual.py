"""Naumann's dual c-graph: the working graph of face elimination.

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

A dual vertex is named by the set of LCG paths it sums: the edge ``i -> j`` by
the one path ``(i, j)``, the source of ``x`` by ``(x,)`` and the sink of ``y``
by ``(y,)``.  Only the edges on some path from an input to an output are
there: a value that reaches no output (or that no input reaches) adds nothing
to the Jacobian, so its edges are dropped before face elimination starts.  A
face ``(a, b)`` between two dual vertices neither of which is a source or a
sink is **eliminated** by (Naumann's definition, as in his ANGEL tool):

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
entry.  :func:`minirad.exact.elimination.eliminate` with ``on="faces"`` runs
these steps; this module holds the graph they run on.

>>> from minirad import examples
>>> sorted(dual_graph(examples.lab()).nodes)  # doctest: +NORMALIZE_WHITESPACE
[(('f',),), (('v2', 'f'),), (('v3', 'f'),), (('x',),), (('x', 'v2'),), (('x', 'v3'),),
 (('y',),), (('y', 'v2'),)]
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from ..graph.labels import FLOATS
from ..graph.lcg import LCG, reachable, takes_graph_or_function

__all__ = ["DualName", "dual_graph"]

#: a dual vertex by name: its LCG paths, each a tuple of vertex names, in sorted order
DualName = tuple[tuple[str, ...], ...]


def on_paths(g: LCG) -> list[bool]:
    """Whether each edge of ``g`` lies on some path from an input to an output."""
    reached = reachable(g, g.inputs) & reachable(g, g.outputs, direction="reverse")
    return (reached[g.sources] & reached[g.targets]).tolist()


class Registry:
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


class Dual:
    """A mutable dual c-graph: ``pred``/``succ`` map each dual vertex (a path-set
    number) to a set of them; ``label`` holds labels, or is None for a search
    over structures only."""

    def __init__(self, g: LCG, registry: Registry, pred, succ, label):
        self.g, self.registry, self.pred, self.succ = g, registry, pred, succ
        self.label = label

    @classmethod
    def of(cls, g: LCG, registry: Registry, labelled: bool = True) -> Dual:
        """The dual c-graph of ``g``'s edges on input-output paths: inputs never have
        in-edges nor outputs out-edges, so a face meets at an intermediate, or joins
        a source or sink to an edge."""
        if g.algebra is not FLOATS:
            raise TypeError("face elimination works on a graph of numbers; for a graph of "
                            "arrays use minirad.scalarize(g) (one vertex per entry), or edge "
                            "or vertex elimination, which take both")
        labels = g.labels.tolist()
        kept = on_paths(g)
        edge = {(u, v): registry(frozenset({(u, v)}))
                for u, v, keep in zip(g.sources.tolist(), g.targets.tolist(), kept) if keep}
        end = {v: registry(frozenset({(v,)})) for v in (*g.inputs, *g.outputs)}
        pred = {a: set() for a in (*end.values(), *edge.values())}
        succ = {a: set() for a in pred}
        faces = [(end[u], a) for (u, v), a in edge.items() if u in end]
        faces += [(a, end[v]) for (u, v), a in edge.items() if v in end]
        faces += [(a, edge[v, w]) for (u, v), a in edge.items() for w in g.successors(v)
                  if (v, w) in edge]
        for a, b in faces:
            succ[a].add(b)
            pred[b].add(a)
        label = None
        if labelled:
            label = {a: labels[e] for e, (u, v) in enumerate(zip(g.sources.tolist(),
                                                                  g.targets.tolist()))
                     if (a := edge.get((u, v))) is not None}
        return cls(g, registry, pred, succ, label)

    def copy(self) -> Dual:
        return Dual(self.g, self.registry, {a: set(s) for a, s in self.pred.items()},
                    {a: set(s) for a, s in self.succ.items()},
                    None if self.label is None else dict(self.label))

    def key(self) -> frozenset:
        return frozenset((a, b) for a, out in self.succ.items() for b in out)

    @classmethod
    def from_key(cls, g: LCG, registry: Registry, key) -> Dual:
        """The unlabelled dual whose faces are ``key`` (a structure of the search)."""
        pred, succ = {}, {}
        for a, b in key:
            succ.setdefault(a, set()).add(b)
            pred.setdefault(b, set()).add(a)
            pred.setdefault(a, set())
            succ.setdefault(b, set())
        return cls(g, registry, pred, succ, None)

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
        return x + y, 1

    def eliminate(self, a: int, b: int) -> tuple[int, int, int, bool, list, list, list]:
        """Eliminate face ``(a, b)``: (multiplications, additions, vertex receiving
        the product, absorbed?, merged pairs, the vertices they became, removed vertices)."""
        registry, label = self.registry, self.label
        paths = registry.paths
        joined = frozenset(p + q[1:] for p in paths[a] for q in paths[b])
        multiplications, additions = 1, 0
        product = None if label is None else label[b] * label[a]
        c = self._twin(self.pred[a], self.succ[b])
        if c is not None:  # absorption: c + b * a
            into = registry(paths[c] | joined)
            self._rename(c, into)
            additions += 1
            if label is not None:
                label[into] = label.pop(c) + product
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
        merged, unions, removed = [], [], []
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
                unions.append(union)
        return multiplications, additions, into, c is not None, merged, unions, removed

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

    def joining(self, u: int, v: int) -> int | None:
        """The dual vertex whose paths run from ``u`` to ``v`` (one while only whole
        LCG edges have been eliminated; all paths of a dual vertex share their ends),
        or None when there is none (an edge on no input-output path)."""
        for a in self.pred:
            path = next(iter(self.registry.paths[a]))
            if len(path) > 1 and (path[0], path[-1]) == (u, v):
                return a
        return None

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


@takes_graph_or_function
def dual_graph(g: LCG) -> nx.DiGraph:
    """Naumann's dual c-graph of ``g`` as a networkx DiGraph (see the module docstring).

    Nodes are named by their paths: ``(("x1", "v2"),)`` for the LCG edge
    ``x1 -> v2``, ``(("x1",),)`` for the source of input ``x1`` and
    ``(("y",),)`` for the sink of output ``y``; each has a ``kind``
    (``"source"``, ``"sink"`` or ``"edges"``) and a ``label``.  Its edges
    are the faces.  Without sources and sinks, and on a graph whose every
    value lies on an input-output path, it is networkx's ``line_graph`` of the
    LCG.

    >>> from minirad import examples
    >>> D = dual_graph(examples.lab())
    >>> sorted(b for a, b in D.out_edges([(("x", "v2"),)]))
    [(('v2', 'f'),)]
    >>> D.nodes[(("x", "v2"),)]["label"], D.nodes[(("x",),)]["kind"]
    (3.0, 'source')
    """
    return Dual.of(g, Registry()).to_networkx()
