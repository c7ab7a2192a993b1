"""Search small graphs for a gap between two kinds of optimal elimination.

Every vertex elimination order is an edge elimination sequence, and every
edge sequence a face sequence, with the same cost; so the optima can only
fall from vertex to edge to face elimination.  Naumann (*Optimal accumulation
of Jacobian matrices by elimination methods on the dual computational
graph*, Math. Program. 99, 2004) shows that both falls can be strict.  This
study looks for graphs that show it: :func:`search_gap` draws random LCGs
(:func:`minirad.examples.random_dag`) and returns the first one on which the
optimum of the cheaper kind is strictly below the other's;
:func:`face_edge_census` goes through every small graph of one shape
(:func:`every_small_dag`).  The named example ``examples.edge_beats_vertex()``
came out of :func:`search_gap`.

**Face below edge has not been found.**  Every graph searched had equal face
and edge optima (multiplications, both searches exhaustive):

* some 14,000 graphs of 8 to 14 edges when face elimination was written:
  random ones, and every 1-input 1-output graph with four intermediates and
  10 to 12 edges;
* every graph of :func:`every_small_dag` (all DAGs up to renumbering the
  intermediates, without input-output edges) with three intermediates and
  1 input and 1 output (49 graphs), 1 and 2 (512), 2 and 1 (512), 1 and 3
  (4,112 with up to 14 edges: ``face_edge_census(1, 3, 3, 14)``); and, run
  outside the library with the same definitions and the edge search's limit
  lifted, the 4,113 graphs with 3 inputs and 1 output.  The 5,696 graphs
  with 2 inputs, 2 outputs and up to 14 edges were not finished: their census
  ran past 15 minutes;
* 468 more graphs of 8 to 18 edges, searched the same way outside the
  library: 52 from :func:`minirad.examples.random_dag` (1 to 3 inputs and
  outputs, 3 to 6 intermediates, 11 to 15 edges), 193 layered ones (1 to 3
  inputs and outputs, two or three layers of 1 to 3 vertices, each vertex
  fed by 1 to 3 vertices of the two layers before it), 47 "bat" shapes
  (inputs feeding 2 or 3 vertices that all feed one hub with 2 or 3
  successors, which feed the outputs, plus up to four random shortcuts) and
  176 random graphs with 2 inputs, 4 intermediates, 2 outputs and 11 to 14
  edges, at least one intermediate with 2 in- and 2 out-edges, where a face
  product could be shared.  118 more drawn were too large for 20,000 to
  30,000 dual structures and are not counted.

Before searching, the face elimination of
:mod:`minirad.exact.elimination` (``on="faces"``) was checked against Naumann's
definition and against the face elimination of his ANGEL library (absorption
into a vertex with the same predecessors and successors, deletion of a vertex
left without successors or predecessors, merging of twins, no face at a source
or sink): it is not more restrictive.  It reaches dual structures no edge
sequence reaches (a junction where not every piece into a vertex meets every
piece out of it), and its exhaustive optimum matches a brute force over every
face sequence on small graphs (``tests/exact/test_face_elimination.py``).  All three
optima come from the one search of ``eliminate(g, "optimal", on=...)``, and the
census asks it, with a bound, only whether faces come in under the edges
(:func:`minirad.exact.elimination.cheaper_than`).  The gap
Naumann reports must need larger or more particular graphs than these.

>>> gap = search_gap("edges", "vertices", max_edges=10, n_graphs=300,
...                  rng=SEEDS["edge_beats_vertex"])
>>> gap.costs, gap.graph
({'edges': 6, 'vertices': 7}, LCG(6 vertices: 1 input, 4 intermediates, 1 output; 10 edges))
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .. import examples
from ..graph.lcg import LCG, takes_graph_or_function
from ..rng import as_generator
from .elimination import ON, cheaper_than, elimination_cost
from .orders import OPTIMAL_EDGES

__all__ = ["SEEDS", "Gap", "every_small_dag", "face_edge_census", "markowitz_rules",
           "optimum", "search_gap"]


#: the seeds whose searches found the named examples
SEEDS = {"edge_beats_vertex": 1}


@dataclass(frozen=True)
class Gap:
    """A graph on which the ``cheaper`` kind's optimum is strictly below the ``dearer``'s.

    ``costs`` maps both kinds (``on`` of :func:`minirad.exact.elimination.eliminate`:
    ``"vertices"``, ``"edges"``, ``"faces"``) to their optimal multiplications, ``tries`` is
    the number of graphs drawn until this one, and ``parameters`` the
    arguments of :func:`minirad.examples.random_dag` that rebuild it.
    """

    graph: LCG
    costs: dict
    tries: int
    parameters: dict


@takes_graph_or_function
def optimum(g: LCG, on: str) -> int:
    """The multiplications of the cheapest elimination ``on`` vertices, edges or faces,
    by exhaustive search (``elimination_cost(g, "optimal", on=on)``).

    >>> [optimum(examples.figure1(), on) for on in ON]
    [5, 5, 5]
    """
    return elimination_cost(g, "optimal", on=on)[0]


def search_gap(cheaper: str = "edges", dearer: str = "vertices", *, n_inputs=(1, 2),
               n_intermediates=(3, 5), n_outputs=(1, 2), max_edges: int = 10,
               n_graphs: int = 1000,
               rng=None) -> Gap | None:
    """The first random graph whose ``cheaper`` optimum is strictly below its ``dearer`` one.

    Graphs are drawn with :func:`minirad.examples.random_dag`, the numbers of
    inputs, intermediates and outputs uniform in the inclusive ranges given,
    the edge density uniform in [0.3, 0.9]; graphs with more than
    ``max_edges`` edges are drawn again without counting.  Returns None when
    ``n_graphs`` graphs show no gap.
    """
    for on in (cheaper, dearer):
        if on not in ON:
            raise ValueError(f"unknown kind of elimination {on!r}; use one of {ON}")
    if ON.index(cheaper) <= ON.index(dearer):
        raise ValueError(f"{cheaper} elimination can never be strictly cheaper than {dearer} "
                         f"elimination, whose sequences it includes; search for a gap the "
                         f"other way round")
    rng = as_generator(rng)
    drawn = 0
    while drawn < n_graphs:
        parameters = {
            "n_inputs": int(rng.integers(n_inputs[0], n_inputs[1] + 1)),
            "n_intermediates": int(rng.integers(n_intermediates[0], n_intermediates[1] + 1)),
            "n_outputs": int(rng.integers(n_outputs[0], n_outputs[1] + 1)),
            "density": float(rng.uniform(0.3, 0.9)),
            "rng": int(rng.integers(2 ** 31)),
        }
        g = examples.random_dag(**parameters)
        if g.n_edges > max_edges:
            continue
        drawn += 1
        found = _beats(g, cheaper, dearer)
        if found is not None:
            return Gap(g, found, drawn, parameters)
    return None


def _beats(g: LCG, cheaper: str, dearer: str) -> dict | None:
    """Both optima if the ``cheaper`` kind's is strictly below the ``dearer``'s, else None.
    Face elimination is only asked whether it beats the other optimum, which
    spares its search most structures."""
    high = optimum(g, dearer)
    if cheaper == "faces":
        faces = cheaper_than(g, high, on="faces")
        return None if faces is None else {cheaper: faces.multiplications, dearer: high}
    low = optimum(g, cheaper)
    return {cheaper: low, dearer: high} if low < high else None


def every_small_dag(n_inputs: int, n_intermediates: int, n_outputs: int, max_edges: int):
    """Every LCG of this shape with at most ``max_edges`` edges, as ``(name, LCG)``
    pairs, each graph once however its intermediates are numbered.

    Edges run from inputs to intermediates, from an intermediate to a later one
    and from intermediates to outputs, each vertex on some input-to-output
    path; partials are 1.  An edge straight from an input to an output is left
    out: it is a Jacobian entry already, and a product landing on it is added
    where it would otherwise be a new entry, for the same multiplications.
    The name lists the edges.

    >>> [name for name, g in every_small_dag(1, 1, 1, 2)]
    ['x0>m0 m0>y0']
    >>> [name for name, g in every_small_dag(1, 2, 1, 4)]  # doctest: +NORMALIZE_WHITESPACE
    ['x0>m0 m0>m1 m1>y0', 'x0>m0 x0>m1 m0>m1 m1>y0', 'x0>m0 x0>m1 m0>y0 m1>y0',
     'x0>m0 m0>m1 m0>y0 m1>y0']
    """
    sizes = {"n_inputs": n_inputs, "n_intermediates": n_intermediates,
             "n_outputs": n_outputs, "max_edges": max_edges}
    for what, size in sizes.items():
        least = 0 if what == "n_intermediates" else 1
        if isinstance(size, bool) or not isinstance(size, int):
            raise TypeError(f"{what} must be an integer, not {type(size).__name__}")
        if size < least:
            raise ValueError(f"{what} must be at least {least}, got {size}")
    inputs = [f"x{i}" for i in range(n_inputs)]
    middle = [f"m{i}" for i in range(n_intermediates)]
    outputs = [f"y{i}" for i in range(n_outputs)]
    possible = ([(x, m) for x in inputs for m in middle]
                + [(a, b) for i, a in enumerate(middle) for b in middle[i + 1:]]
                + [(m, y) for m in middle for y in outputs])
    seen = set()
    for count in range(1, min(max_edges, len(possible)) + 1):
        for edges in itertools.combinations(possible, count):
            starts, ends = {u for u, _ in edges}, {v for _, v in edges}
            if not (starts >= {*inputs, *middle} and ends >= {*middle, *outputs}):
                continue  # a vertex off every input-to-output path
            key = min(tuple(sorted((rename.get(u, u), rename.get(v, v)) for u, v in edges))
                      for rename in (dict(zip(middle, order))
                                     for order in itertools.permutations(middle)))
            if key in seen:
                continue
            seen.add(key)
            yield (" ".join(f"{u}>{v}" for u, v in edges),
                   LCG.from_edges([(u, v, 1.0) for u, v in edges], inputs, outputs,
                                  vertices=[*inputs, *middle, *outputs]))


def face_edge_census(n_inputs: int, n_intermediates: int, n_outputs: int,
                     max_edges: int) -> dict:
    """How many graphs of :func:`every_small_dag` there are, and the names of
    those whose face elimination optimum is strictly below their edge
    elimination optimum (both exhaustive, so ``max_edges`` is at most the
    edge search's limit, :data:`minirad.exact.orders.OPTIMAL_EDGES`).
    ``face_edge_census(1, 3, 3, 14)`` takes about two minutes.

    >>> face_edge_census(1, 2, 1, 4)  # the four graphs above
    {'graphs': 4, 'face below edge': []}
    """
    if isinstance(max_edges, int) and max_edges > OPTIMAL_EDGES:
        raise ValueError(f"max_edges is {max_edges}, but the exhaustive edge elimination search "
                         f"takes at most {OPTIMAL_EDGES} edges")
    graphs, gaps = 0, []
    for name, g in every_small_dag(n_inputs, n_intermediates, n_outputs, max_edges):
        graphs += 1
        if _beats(g, "faces", "edges") is not None:
            gaps.append(name)
    return {"graphs": graphs, "face below edge": gaps}


def markowitz_rules(n_graphs: int = 150, *, rng=None) -> dict:
    """Vertex Markowitz against the edge Markowitz rule on random graphs.

    Draws ``n_graphs`` graphs with :func:`minirad.examples.random_dag` (1 to 3
    inputs and outputs, 3 to 14 intermediates, density in [0.2, 0.6]) and
    returns the total multiplications of each rule and on how many graphs
    the edge rule was cheaper or dearer than the vertex rule.

    >>> markowitz_rules(150, rng=0)
    {'vertex': 5560, 'edge': 5554, 'edge cheaper': 54, 'edge dearer': 57}
    """
    rng = as_generator(rng)
    counts = {"vertex": 0, "edge": 0, "edge cheaper": 0, "edge dearer": 0}
    for _ in range(n_graphs):
        g = examples.random_dag(int(rng.integers(1, 4)), int(rng.integers(3, 15)),
                                int(rng.integers(1, 4)), density=float(rng.uniform(0.2, 0.6)),
                                rng=int(rng.integers(2 ** 31)))
        vertex = elimination_cost(g, "markowitz")[0]
        edge = elimination_cost(g, "markowitz", on="edges")[0]
        counts["vertex"] += vertex
        counts["edge"] += edge
        counts["edge cheaper"] += edge < vertex
        counts["edge dearer"] += edge > vertex
    return counts
