"""The gap search of minirad.exact.elimination_gaps and the named example it found."""

import itertools
import re

import networkx as nx
import pytest

from minirad import examples
from minirad.exact.elimination import ON
from minirad.exact.elimination_gaps import (
    SEEDS,
    every_small_dag,
    face_edge_census,
    optimum,
    search_gap,
)


def test_the_search_finds_the_named_example():
    gap = search_gap("edges", "vertices", max_edges=10, n_graphs=300,
                     rng=SEEDS["edge_beats_vertex"])
    assert gap.costs == {"edges": 6, "vertices": 7}
    assert gap.tries == 44
    assert examples.random_dag(**gap.parameters).same_as(gap.graph)
    # the named example is the same graph, renamed and with new partials
    found, named = gap.graph.to_networkx(), examples.edge_beats_vertex().to_networkx()
    assert nx.is_isomorphic(found, named, node_match=lambda a, b: a["kind"] == b["kind"])
    assert [optimum(examples.edge_beats_vertex(), on) for on in ("vertices", "edges")] == [7, 6]


def test_no_gap_in_too_few_tries():
    assert search_gap("edges", "vertices", max_edges=10, n_graphs=43,
                      rng=SEEDS["edge_beats_vertex"]) is None


@pytest.mark.parametrize("cheaper, dearer, fragment", [
    ("vertices", "edges", "can never be strictly cheaper"),
    ("edges", "edges", "can never be strictly cheaper"),
    ("edges", "vertex", "unknown kind of elimination 'vertex'"),
])
def test_bad_kinds(cheaper, dearer, fragment):
    with pytest.raises(ValueError, match=fragment):
        search_gap(cheaper, dearer, n_graphs=1, rng=0)


def test_optimum_of_each_kind():
    assert [optimum(examples.lab(), on) for on in ON] == [3, 3, 3]
    with pytest.raises(ValueError, match="on must be one of"):
        optimum(examples.lab(), "paths")


# ------------------------------------------------------- every small graph
def small_dags_by_brute_force(n_inputs, n_intermediates, n_outputs, max_edges) -> list:
    """Every edge subset of the shape whose vertices all lie on an input-to-output
    path, one per class of graphs that networkx finds isomorphic with the inputs
    and outputs kept in place."""
    inputs = [f"x{i}" for i in range(n_inputs)]
    middle = [f"m{i}" for i in range(n_intermediates)]
    outputs = [f"y{i}" for i in range(n_outputs)]
    possible = ([(x, m) for x in inputs for m in middle]
                + [(a, b) for i, a in enumerate(middle) for b in middle[i + 1:]]
                + [(m, y) for m in middle for y in outputs])
    found = []
    for chosen in itertools.product([False, True], repeat=len(possible)):
        edges = [e for e, keep in zip(possible, chosen) if keep]
        if not edges or len(edges) > max_edges:
            continue
        G = nx.DiGraph(edges)
        G.add_nodes_from([*inputs, *middle, *outputs])
        if not all(any(nx.has_path(G, x, v) for x in inputs)
                   and any(nx.has_path(G, v, y) for y in outputs) for v in middle):
            continue
        if not all(G.out_degree(x) for x in inputs) or not all(G.in_degree(y) for y in outputs):
            continue
        for v in G:
            G.nodes[v]["role"] = "m" if v in middle else v
        if not any(nx.is_isomorphic(G, H, node_match=lambda a, b: a["role"] == b["role"])
                   for H in found):
            found.append(G)
    return found


@pytest.mark.parametrize("shape", [(1, 2, 2, 7), (2, 2, 1, 7), (1, 3, 1, 9), (2, 2, 2, 5)])
def test_every_small_dag_is_every_graph_once(shape):
    graphs = dict(every_small_dag(*shape))
    assert len(graphs) == len(small_dags_by_brute_force(*shape))
    for name, g in graphs.items():
        assert g.n_edges == len(name.split()) <= shape[3]
        assert (len(g.inputs), len(g.intermediates), len(g.outputs)) == shape[:3]


def test_no_face_gap_among_the_smallest_graphs():
    # all 49 graphs with one input, three intermediates and one output
    census = face_edge_census(1, 3, 1, 9)
    assert census == {"graphs": len(small_dags_by_brute_force(1, 3, 1, 9)),
                      "face below edge": []}
    assert census["graphs"] == 49


def test_the_random_face_search_asks_only_for_a_gap():
    assert search_gap("faces", "edges", max_edges=10, n_graphs=20, rng=0) is None


@pytest.mark.parametrize("shape, error, fragment", [
    ((0, 1, 1, 3), ValueError, "n_inputs must be at least 1, got 0"),
    ((1, -1, 1, 3), ValueError, "n_intermediates must be at least 0, got -1"),
    ((1, 1, 1, 2.0), TypeError, "max_edges must be an integer, not float"),
    ((True, 1, 1, 2), TypeError, "n_inputs must be an integer, not bool"),
])
def test_bad_shapes(shape, error, fragment):
    with pytest.raises(error, match=re.escape(fragment)):
        next(every_small_dag(*shape))


def test_the_census_stays_within_the_edge_search():
    with pytest.raises(ValueError, match="takes at most 14 edges"):
        face_edge_census(1, 3, 3, 15)
