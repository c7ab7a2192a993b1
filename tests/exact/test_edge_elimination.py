"""Edge elimination, checked against oracles that do not eliminate edges the library's
way: hand derivations, vertex elimination (of which it is a refinement), the exact
rational Jacobian, and a brute-force search over every edge sequence written here
from the definitions."""

import functools
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import rational_jacobian

import minirad
from minirad import LCG, examples
from minirad.exact.elimination import Step, eliminate, elimination_cost, vertex_order_as_edges
from minirad.exact.orders import OPTIMAL_EDGES
from minirad.exact.overflow import AccumulationOverflow


# ------------------------------------------------------------------ oracles
def brute_force_optimum(g: LCG) -> int:
    """The fewest multiplications of any complete edge sequence, by trying every
    step from every structure (Naumann's definitions, on sets of name pairs)."""
    middle = {g.names[v] for v in g.intermediates}

    @functools.cache
    def best(edges: frozenset) -> int:
        if not any(u in middle or v in middle for u, v in edges):
            return 0
        options = []
        for i, j in edges:
            if j in middle:  # front: i joins every successor k of j
                after = (edges - {(i, j)}) | {(i, k) for a, k in edges if a == j}
                if not any(b == j for _, b in after):  # j unreachable: it goes
                    after = {(a, b) for a, b in after if a != j}
                options.append(sum(a == j for a, _ in edges) + best(frozenset(after)))
            if i in middle:  # back: every predecessor h of i joins j
                after = (edges - {(i, j)}) | {(h, j) for h, b in edges if b == i}
                if not any(a == i for a, _ in after):  # i leads nowhere: it goes
                    after = {(a, b) for a, b in after if b != i}
                options.append(sum(b == i for _, b in edges) + best(frozenset(after)))
        return min(options)

    return best(frozenset((g.names[u], g.names[v]) for u, v, _ in g.edges()))


def assert_is_jacobian(J, g: LCG):
    expected = rational_jacobian(g)
    scale = rational_jacobian(g, absolute=True)
    assert J.shape == expected.shape
    assert np.all(np.abs(J - expected) <= 1e-10 * scale + 1e-300)


@st.composite
def graphs(draw, max_intermediates=6):
    return examples.random_dag(
        draw(st.integers(1, 3)), draw(st.integers(0, max_intermediates)),
        draw(st.integers(1, 3)), draw(st.floats(0.1, 0.9)),
        rng=draw(st.integers(0, 2 ** 32 - 1)))


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# x -> a (2), a -> b (3), a -> c (5), b -> y (7), c -> y (11), x -> c (13): a small
# graph whose every label is an integer, so every product below is exact.
SMALL = [("x", "a", 2.0), ("a", "b", 3.0), ("a", "c", 5.0), ("b", "y", 7.0), ("c", "y", 11.0),
         ("x", "c", 13.0)]


def small() -> LCG:
    return LCG.from_edges(SMALL, inputs=["x"], outputs=["y"])


# ------------------------------------------------------------ single steps
def test_front_elimination_by_hand():
    # front x -> a: a's successors b and c; x -> b is new (3 * 2), x -> c exists
    # (13 + 5 * 2); a has no in-edge left, so it goes with a -> b and a -> c
    result = eliminate(small(), [("x", "a", "front")], on="edges")
    (step,) = result.steps
    assert step == Step(("x", "a", "front"), ("x",), ("b", "c"), (("x", "b"),), (("x", "c"),),
                        ("a",), 2, 1, on="edges")
    assert step.fill_in_labels == (6.0,) and step.updated_labels == (23.0,)
    h = result.graph
    assert "a" not in h.names
    assert {(h.names[u], h.names[v]): d for u, v, d in h.edges()} == {
        ("x", "b"): 6.0, ("x", "c"): 23.0, ("b", "y"): 7.0, ("c", "y"): 11.0}
    assert eliminate(small(), [("x", "a", "front")], on="edges").graph.same_as(h)


def test_back_elimination_by_hand():
    # back c -> y: c's predecessors a and x; a -> y (11 * 5) and x -> y (11 * 13) are
    # both new; c has no out-edge left, so it goes with a -> c and x -> c
    result = eliminate(small(), [("c", "y", "back")], on="edges")
    (step,) = result.steps
    assert (step.predecessors, step.successors, step.fill_in, step.updated, step.removed) == (
        ("a", "x"), ("y",), (("a", "y"), ("x", "y")), (), ("c",))
    assert (step.multiplications, step.additions) == (2, 0)
    assert step.fill_in_labels == (55.0, 143.0)
    h = result.graph
    assert {(h.names[u], h.names[v]): d for u, v, d in h.edges()} == {
        ("x", "a"): 2.0, ("a", "b"): 3.0, ("b", "y"): 7.0, ("a", "y"): 55.0, ("x", "y"): 143.0}
    assert eliminate(small(), [("c", "y", "back")], on="edges").graph.same_as(h)


def test_an_endpoint_with_edges_left_stays():
    # back a -> b: a keeps its edge to c; b's only operand becomes x (3 * 2)
    (step,) = eliminate(small(), [("a", "b", "back")], on="edges").steps
    assert step.removed == () and step.fill_in == (("x", "b"),)
    h = eliminate(small(), [("a", "b", "back")], on="edges").graph
    assert [h.name(v) for v in h.successors("a")] == ["c"]
    assert h.partial("x", "b") == 6.0 and h.op("b") == ""


def test_a_sequence_to_the_end_by_hand():
    # front x -> a (2 mults, 1 add: x->b = 6, x->c = 23), then front x -> b (1: x -> y = 42),
    # then front x -> c (1, 1 add: x -> y = 42 + 11 * 23 = 295)
    result = eliminate(small(), [("x", "a", "front"), ("x", "b", "front"),
                                       ("x", "c", "front")], keep_graphs=True, on="edges")
    assert result.jacobian.tolist() == [[295.0]]
    assert (result.multiplications, result.additions) == (4, 2)
    assert len(result.graphs) == 4 and result.graphs[0] is not None
    assert [len(h.intermediates) for h in result.graphs] == [3, 2, 1, 0]
    assert result.order == (("x", "a", "front"), ("x", "b", "front"), ("x", "c", "front"))


def test_a_sequence_may_stop_early():
    result = eliminate(small(), [("x", "a", "front")], on="edges")
    assert result.jacobian is None
    assert eliminate(small(), [], on="edges").graph.same_as(small())


# ------------------------------------------------- vertex elimination inside
@SETTINGS
@given(g=graphs(), data=st.data())
def test_vertex_elimination_is_edge_elimination(g, data):
    order = list(data.draw(st.permutations(g.intermediates)))
    direction = data.draw(st.sampled_from(["front", "back"]))
    vertices = eliminate(g, order, keep_graphs=True)
    sequence = vertex_order_as_edges(g, order, direction)
    edges = eliminate(g, sequence, keep_graphs=True, on="edges")
    assert (edges.multiplications, edges.additions) == (vertices.multiplications,
                                                        vertices.additions)
    assert edges.graph.same_as(vertices.graph)
    np.testing.assert_array_equal(edges.jacobian, vertices.jacobian)
    # the graph after each vertex's edges is the one vertex elimination leaves there
    for k in range(len(order) + 1):
        steps = len(vertex_order_as_edges(g, order[:k], direction))
        assert sequence[:steps] == vertex_order_as_edges(g, order[:k], direction)
        assert edges.graphs[steps].same_as(vertices.graphs[k])


def test_vertex_order_as_edges_names_the_edges():
    g = examples.figure1()
    assert vertex_order_as_edges(g, ["v2"], "front") == (("x1", "v2", "front"),)
    assert vertex_order_as_edges(g, ["v2"], "back") == (("v2", "v5", "back"),
                                                        ("v2", "y", "back"))
    assert len(vertex_order_as_edges(g, "forward")) > len(g.intermediates)


# ------------------------------------------------------------- any sequence
@SETTINGS
@given(g=graphs(), data=st.data())
def test_every_complete_sequence_gives_the_jacobian(g, data):
    # a random step at a time, until no edge touches an intermediate
    sequence, h = [], g
    while h.intermediates:
        options = [(h.names[u], h.names[v], way) for u, v, _ in h.edges()
                   for way, end in (("front", v), ("back", u)) if h.kind(end) == "intermediate"]
        step = data.draw(st.sampled_from(options))
        sequence.append(step)
        h = eliminate(h, [step], on="edges").graph
    result = eliminate(g, sequence, keep_graphs=True, on="edges")
    assert_is_jacobian(result.jacobian, g)
    assert result.graph.same_as(h)
    for step, before, after in zip(result.steps, result.graphs, result.graphs[1:]):
        i, j, end = step.eliminated
        cost = before.out_degree(j) if end == "front" else before.in_degree(i)
        assert step.multiplications == cost
        assert step.additions == len(step.updated)
        assert all(not before.has_edge(*e) and after.has_edge(*e) for e in step.fill_in)
        assert all(before.has_edge(*e) for e in step.updated)
        assert all(v not in after.names for v in step.removed)
        assert not (i in after.names and j in after.names and after.has_edge(i, j))


# ----------------------------------------------------------------- optimum
@pytest.mark.parametrize("make", [examples.figure1, examples.two_outputs, examples.lecture,
                                  examples.lab, examples.edge_beats_vertex])
def test_optimal_matches_brute_force_on_named_examples(make):
    g = make()
    result = eliminate(g, "optimal", on="edges")
    assert result.multiplications == brute_force_optimum(g)
    assert_is_jacobian(result.jacobian, g)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs(max_intermediates=4))
def test_optimal_matches_brute_force_and_never_loses_to_vertices(g):
    if g.n_edges > 10:
        return
    result = eliminate(g, "optimal", on="edges")
    assert result.multiplications == brute_force_optimum(g)
    assert (result.multiplications, result.additions) <= elimination_cost(g, "optimal")


def test_edge_elimination_strictly_beats_every_vertex_order():
    g = examples.edge_beats_vertex()
    vertex_costs = {elimination_cost(g, list(p))[0] for p in itertools.permutations(
        g.intermediates)}
    assert min(vertex_costs) == 7
    assert brute_force_optimum(g) == 6
    result = eliminate(g, "optimal", on="edges")
    assert result.multiplications == 6
    assert_is_jacobian(result.jacobian, g)
    # hand: dy/dx sums six path products, 2 + 4 + 1.5 + 2 - 3 - 0.75
    assert result.jacobian.tolist() == [[5.75]]


def test_optimal_refuses_large_graphs():
    g = examples.random_dag(2, 8, 2, density=0.6, rng=0)
    assert g.n_edges > OPTIMAL_EDGES
    with pytest.raises(ValueError, match=f"limited to {OPTIMAL_EDGES} edges"):
        eliminate(g, "optimal", on="edges")


# --------------------------------------------------------------- heuristic
@SETTINGS
@given(g=graphs(max_intermediates=10))
def test_markowitz_takes_a_cheapest_step_each_time(g):
    # rescan every possible step on the graph before each step: the rule takes one of
    # least cost, and among those one creating the fewest new edges
    result = eliminate(g, "markowitz", keep_graphs=True, on="edges")
    assert_is_jacobian(result.jacobian, g)
    for step, before in zip(result.steps, result.graphs):
        middle = set(before.intermediates)
        options = []
        for u, v, _ in before.edges():
            if v in middle:
                successors = before.successors(v)
                options.append((len(successors), sum(not before.has_edge(u, k)
                                                     for k in successors)))
            if u in middle:
                predecessors = before.predecessors(u)
                options.append((len(predecessors), sum(not before.has_edge(h, v)
                                                       for h in predecessors)))
        assert (step.multiplications, len(step.fill_in)) == min(options)


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("sequence, error, fragment", [
    ("sideways", ValueError, "unknown elimination order 'sideways'"),
    ({("x", "a", "front")}, TypeError, "not set"),
    (7, TypeError, "not int"),
    ([("x", "a")], TypeError, "step #0 is ('x', 'a')"),
    (["xa-front"], TypeError, "each step is a triple"),
    ([("x", "a", "up")], ValueError, "end 'up'"),
    ([("x", "b", "front")], ValueError, "no edge x -> b"),
    ([("b", "y", "front")], ValueError, "y is an output; use 'back'"),
    ([("x", "a", "back")], ValueError, "x is an input; use 'front'"),
    ([("x", "a", "front"), ("x", "a", "front")], ValueError, "step #1: there is no edge x -> a"),
    ([("x", "zz", "front")], ValueError, "zz"),
])
def test_bad_sequences(sequence, error, fragment):
    with pytest.raises(error) as caught:
        eliminate(small(), sequence, on="edges")
    assert fragment in str(caught.value)


def test_bad_graph_and_direction():
    with pytest.raises(TypeError, match="works on an LCG"):
        eliminate({"x": 1}, "markowitz", on="edges")
    with pytest.raises(ValueError, match="end must be 'front' or 'back'"):
        vertex_order_as_edges(small(), ["a"], "sideways")


def test_overflow_is_reported():
    g = LCG.from_edges([("x", "a", 1e200), ("a", "y", 1e200)], inputs=["x"], outputs=["y"])
    with pytest.raises(AccumulationOverflow, match=r"eliminate: dy/dx overflowed .*"
                                                   r"\(eliminating edges\)"):
        eliminate(g, "markowitz", on="edges")


def test_a_graph_of_arrays_is_eliminated_edge_by_edge():
    # the Jacobian blocks multiply as in vertex elimination: every sequence gives
    # minirad's Jacobian, and a vertex order run as edges costs what it costs as vertices
    A = np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0]])
    g = minirad.trace(lambda x: (np.tanh(A @ x) ** 2).sum() + (x * x).sum(),
                      np.array([0.3, -0.2, 0.5]))
    exact = minirad.jacobian(g)
    for order in ("forward", "reverse"):
        by_edges = eliminate(g, vertex_order_as_edges(g, order, "front"), on="edges")
        by_vertices = eliminate(g, order)
        np.testing.assert_allclose(by_edges.jacobian, exact, rtol=1e-14)
        assert by_edges.multiplications == by_vertices.multiplications
    np.testing.assert_allclose(eliminate(g, "markowitz", on="edges").jacobian, exact, rtol=1e-14)
    with pytest.raises(ValueError, match="graph of numbers only"):
        eliminate(g, "optimal", on="edges")
    with pytest.raises(TypeError, match="minirad.scalarize"):
        eliminate(g, on="faces")
