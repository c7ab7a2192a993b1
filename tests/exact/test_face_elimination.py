"""Face elimination on the dual c-graph, checked against networkx's line graph, hand
derivations, Bauer's path products (every dual vertex sums its paths), the exact
rational Jacobian, and edge elimination, of which it is a refinement."""

import functools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import rational_jacobian

from minirad import LCG, examples
from minirad.exact.dual import dual_graph
from minirad.exact.elimination import (
    cheaper_than,
    edges_as_faces,
    eliminate,
    vertex_order_as_edges,
)
from minirad.exact.orders import OPTIMAL_FACES


# ------------------------------------------------------------------ helpers
def eliminable(D: nx.DiGraph) -> list:
    """Faces of a dual graph between two vertices that are neither sources nor sinks."""
    return sorted((a, b) for a, b in D.edges()
                  if D.nodes[a]["kind"] == "edges" and D.nodes[b]["kind"] == "edges")


def path_sum(g: LCG, paths) -> float:
    """Bauer: the sum over the paths of the products of their partials."""
    return sum(math.prod(g.partial(u, v) for u, v in zip(p, p[1:])) for p in paths)


def by_ends(D: nx.DiGraph):
    """A dual graph seen through the ends of its vertices' paths: (first, last) pairs."""
    def ends(node):
        return (node[0][0], node[0][-1])
    return ({ends(a): D.nodes[a]["label"] for a in D if D.nodes[a]["kind"] == "edges"},
            {(ends(a), ends(b)) for a, b in D.edges()})


def into(step):
    """The dual vertex a face step put its product in: made (fill-in) or grown (absorbed)."""
    return (step.fill_in + step.updated)[0]


def label(step):
    return (step.fill_in_labels + step.updated_labels)[0]


def absorbed(step) -> bool:
    return not step.fill_in


def assert_is_jacobian(J, g: LCG):
    expected = rational_jacobian(g)
    scale = rational_jacobian(g, absolute=True)
    assert J.shape == expected.shape
    assert np.all(np.abs(J - expected) <= 1e-10 * scale + 1e-300)


@st.composite
def graphs(draw, max_intermediates=5):
    return examples.random_dag(
        draw(st.integers(1, 3)), draw(st.integers(0, max_intermediates)),
        draw(st.integers(1, 2)), draw(st.floats(0.1, 0.9)),
        rng=draw(st.integers(0, 2 ** 32 - 1)))


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------- the dual graph
@SETTINGS
@given(g=graphs())
def test_the_dual_without_sources_and_sinks_is_the_line_graph(g):
    D = dual_graph(g)
    inner = D.subgraph(a for a in D if D.nodes[a]["kind"] == "edges")
    line = nx.line_graph(g.to_networkx())
    assert {a[0] for a in inner} == set(line.nodes)
    assert {(a[0], b[0]) for a, b in inner.edges()} == set(line.edges)
    for (u, v), in inner:
        assert D.nodes[((u, v),)]["label"] == g.partial(u, v)
    # a source per input leading to its out-edges, a sink per output fed by its in-edges
    for x in g.inputs:
        name = g.names[x]
        assert D.nodes[((name,),)]["kind"] == "source"
        assert {b[0] for b in D.successors(((name,),))} == {
            (name, g.names[w]) for w in g.successors(x)}
    for y in g.outputs:
        name = g.names[y]
        assert {a[0] for a in D.predecessors(((name,),))} == {
            (g.names[u], name) for u in g.predecessors(y)}


# ---------------------------------------------------------------- by hand
def test_the_lab_by_hand():
    # f = x*y + sin(x) at (2, 3): x -> v2 (3), y -> v2 (2), x -> v3 (cos 2), v2, v3 -> f (1)
    g = examples.lab()
    result = eliminate(g, [(("x", "v2"), ("v2", "f")), (("y", "v2"), ("v2", "f")),
                                 (("x", "v3"), ("v3", "f"))], keep_graphs=True, on="faces")
    first, second, third = result.steps
    assert (into(first), absorbed(first), first.removed) == (
        (("x", "v2", "f"),), False, ((("x", "v2"),),))
    assert label(first) == 3.0 and first.on == "faces"
    # the second face leaves v2 -> f without predecessors: it goes
    assert second.removed == ((("y", "v2"),), (("v2", "f"),))
    # the third product has the predecessors and successors of x -> v2 -> f: absorbed
    assert absorbed(third) and into(third) == (("x", "v2", "f"), ("x", "v3", "f"))
    assert (result.multiplications, result.additions) == (3, 1)
    assert result.jacobian.tolist() == [[3.0 + math.cos(2.0), 2.0]]
    assert len(result.graphs) == 4 and eliminable(result.dual) == []
    h = result.graph      # the bipartite LCG of the Jacobian
    assert [(h.names[u], h.names[v], d) for u, v, d in h.edges()] == [
        ("x", "f", 3.0 + math.cos(2.0)), ("y", "f", 2.0)]


def test_a_merge_by_hand():
    # i -> j directly and through m; j -> y1, j -> y2.  After faces (m->j, j->y1) and
    # (i->m, m->j), a piece i -> m -> j serves only y2; eliminating (i->j, j->y1) leaves
    # i -> j serving only y2 too: the two have one role and are merged (one addition).
    g = LCG.from_edges([("x", "i", 2.0), ("i", "j", 3.0), ("i", "m", 5.0), ("m", "j", 7.0),
                        ("j", "y1", 11.0), ("j", "y2", 13.0)], inputs=["x"],
                       outputs=["y1", "y2"])
    result = eliminate(g, [(("m", "j"), ("j", "y1")), (("i", "m"), ("m", "j")),
                                 (("i", "j"), ("j", "y1"))], on="faces")
    assert [absorbed(s) for s in result.steps] == [False, False, False]
    merged = (("i", "j"), ("i", "m", "j"))
    # j -> y1 is left without predecessors and goes; the two halves of the merge go too,
    # and their sum is the vertex updated
    assert result.steps[2].removed == ((("j", "y1"),), (("i", "j"),), (("i", "m", "j"),))
    assert result.steps[2].updated == (merged,)
    assert [s.additions for s in result.steps] == [0, 0, 1]
    assert result.dual.nodes[merged]["label"] == 3.0 + 7.0 * 5.0
    assert [b for b in result.dual.successors(merged)] == [(("j", "y2"),)]


def test_a_junction_no_edge_sequence_reaches():
    # Two chains x1 -> i1 -> j -> k1 -> y1 and x2 -> i2 -> j -> k2 -> y2 cross at j.
    # Eliminating the two "straight" faces at j first is Naumann's face step, not an
    # edge step: after it i1 -> j meets only j -> k2 and i2 -> j only j -> k1, where
    # every edge sequence keeps each edge into j meeting each edge out of it.
    g = LCG.from_edges([("x1", "i1", 2.0), ("x2", "i2", 3.0), ("i1", "j", 5.0),
                        ("i2", "j", 7.0), ("j", "k1", 11.0), ("j", "k2", 13.0),
                        ("k1", "y1", 17.0), ("k2", "y2", 19.0)], inputs=["x1", "x2"],
                       outputs=["y1", "y2"])
    straight = [(("i1", "j"), ("j", "k1")), (("i2", "j"), ("j", "k2"))]
    first = eliminate(g, straight, on="faces")
    assert [(into(s), absorbed(s), s.removed, label(s)) for s in first.steps] == [
        ((("i1", "j", "k1"),), False, (), 55.0), ((("i2", "j", "k2"),), False, (), 91.0)]
    assert [face for face in eliminable(first.dual) if face[0][0][-1] == "j"] == [
        ((("i1", "j"),), (("j", "k2"),)), ((("i2", "j"),), (("j", "k1"),))]
    # Finishing in any order: the four crossings at j shared nothing, so each of the
    # four paths (four partials) needs two more products: 4 + 4 * 2 = 12 (vertex
    # elimination of i1, i2, k1, k2 and then j needs 8).
    sequence = list(straight)
    while eliminable(dual := eliminate(g, sequence, on="faces").dual):
        sequence.append(eliminable(dual)[-1])
    result = eliminate(g, sequence, on="faces")
    assert (result.multiplications, result.additions) == (12, 0)
    assert result.jacobian.tolist() == [[2 * 5 * 11 * 17, 3 * 7 * 11 * 17],
                                        [2 * 5 * 13 * 19, 3 * 7 * 13 * 19]]


# --------------------------------------------------------- any sequence
@pytest.mark.slow
@SETTINGS
@given(g=graphs(), data=st.data())
def test_every_dual_vertex_sums_its_paths(g, data):
    sequence, D = [], dual_graph(g)
    while eliminable(D):
        sequence.append(data.draw(st.sampled_from(eliminable(D))))
        D = eliminate(g, sequence, on="faces").dual
    result = eliminate(g, sequence, keep_graphs=True, on="faces")
    assert_is_jacobian(result.jacobian, g)
    assert result.multiplications == len(sequence)
    for dual in result.graphs:
        for node, data_ in dual.nodes(data=True):
            if data_["kind"] == "edges":
                assert np.isclose(data_["label"], path_sum(g, node), rtol=1e-12, atol=1e-300)
                assert len({(p[0], p[-1]) for p in node}) == 1  # one start, one end
    # at the end, each vertex sums every path from one input to one output
    for node in result.dual:
        if result.dual.nodes[node]["kind"] == "edges":
            x, y = node[0][0], node[0][-1]
            assert set(node) == set(map(tuple, nx.all_simple_paths(g.to_networkx(), x, y)))


# ------------------------------------------------------- edges as faces
@SETTINGS
@given(g=graphs(), data=st.data())
def test_edge_and_vertex_elimination_are_face_elimination(g, data):
    order = list(data.draw(st.permutations(g.intermediates)))
    for sequence in (vertex_order_as_edges(g, order, data.draw(st.sampled_from(
            ["front", "back"]))), "markowitz"):
        edges = eliminate(g, sequence, keep_graphs=True, on="edges")
        faces = eliminate(g, edges_as_faces(g, sequence), keep_graphs=True, on="faces")
        assert (faces.multiplications, faces.additions) == (edges.multiplications,
                                                            edges.additions)
        np.testing.assert_array_equal(faces.jacobian, edges.jacobian)
        # after each edge step's faces, the dual graph is the dual of the LCG edge
        # elimination left, vertex for vertex and label for label
        done = 0
        for step, after in zip(edges.steps, edges.graphs[1:]):
            done += step.multiplications
            assert by_ends(faces.graphs[done]) == by_ends(dual_graph(after))
    vertices = eliminate(g, order)
    faces = eliminate(g, edges_as_faces(g, vertex_order_as_edges(g, order)), on="faces")
    assert (faces.multiplications, faces.additions) == (vertices.multiplications,
                                                        vertices.additions)
    np.testing.assert_array_equal(faces.jacobian, vertices.jacobian)


# ------------------------------------------------------------------ optimum
def brute_force_optimum(g: LCG) -> tuple[int, int]:
    """The cheapest (multiplications, additions) over every face sequence, trying
    every face from every dual structure met (through the public API)."""
    @functools.cache
    def best(sequence: tuple) -> tuple[int, int]:
        result = eliminate(g, list(sequence), on="faces")
        options = eliminable(result.dual)
        if not options:
            return (0, 0)
        costs = []
        for face in options:
            step = eliminate(g, [*sequence, face], on="faces").steps[-1]
            rest = best_from(sequence + (face,))
            costs.append((step.multiplications + rest[0], step.additions + rest[1]))
        return min(costs)

    seen = {}

    def best_from(sequence):
        D = eliminate(g, list(sequence), on="faces").dual
        key = frozenset(D.edges())
        if key not in seen:
            seen[key] = best(sequence)
        return seen[key]

    return best_from(())


@pytest.mark.slow
@pytest.mark.parametrize("make", [examples.lab, examples.lecture, examples.figure1])
def test_optimal_matches_brute_force_on_named_examples(make):
    g = make()
    result = eliminate(g, "optimal", on="faces")
    assert (result.multiplications, result.additions) == brute_force_optimum(g)
    assert_is_jacobian(result.jacobian, g)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs(max_intermediates=3))
def test_optimal_matches_brute_force_and_never_loses_to_edges(g):
    if g.n_edges > 6:  # the brute force reruns every prefix: keep it small
        return
    result = eliminate(g, "optimal", on="faces")
    assert (result.multiplications, result.additions) == brute_force_optimum(g)
    edges = eliminate(g, "optimal", on="edges")
    assert (result.multiplications, result.additions) <= (edges.multiplications,
                                                          edges.additions)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs(max_intermediates=3))
def test_cheaper_than_finds_the_optimum_only_above_it(g):
    if g.n_edges > 6:
        return
    least = brute_force_optimum(g)[0]
    assert cheaper_than(g, least) is None
    found = cheaper_than(g, least + 1)
    assert found.multiplications == least
    assert_is_jacobian(found.jacobian, g)


def test_cheaper_than_needs_a_whole_number():
    for bad in (2.5, True, "3"):
        with pytest.raises(TypeError, match="multiplications must be an integer"):
            cheaper_than(examples.lab(), bad)


def test_optimal_refuses_large_graphs():
    g = examples.random_dag(2, 6, 2, density=0.6, rng=0)
    assert g.n_edges > OPTIMAL_FACES
    with pytest.raises(ValueError, match=f"limited to {OPTIMAL_FACES} LCG edges"):
        eliminate(g, "optimal", on="faces")


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("sequence, error, fragment", [
    ("best", ValueError, "unknown elimination order 'best'"),
    (3, TypeError, "not int"),
    ([("x", "v2")], TypeError, "face #0 names a dual vertex by 'x'; name it by its path"),
    ([(("x", "v2"),)], TypeError, "a face is a pair (a, b) of dual vertices"),
    ([(("x", "v2"), ("v3", "f"))], ValueError, "is not a face that can be eliminated now"),
    ([(("x",), ("x", "v2"))], ValueError, "neither a source nor a sink"),
    ([(("x", "f"), ("v2", "f"))], ValueError, "no dual vertex sums exactly the paths"),
    ([(("x", "v2"), 7)], TypeError, "names a dual vertex by 7"),
    ([(("x", 2.5), ("v2", "f"))], TypeError, "a path is a sequence of vertex names"),
])
def test_bad_sequences(sequence, error, fragment):
    with pytest.raises(error) as caught:
        eliminate(examples.lab(), sequence, on="faces")
    assert fragment in str(caught.value)


def test_bad_graphs():
    with pytest.raises(TypeError, match="works on an LCG"):
        dual_graph("x -> y")
    with pytest.raises(TypeError, match="works on an LCG"):
        edges_as_faces(None, [])
