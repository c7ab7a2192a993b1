"""The label algebra and the reference recurrences, against independent oracles:
numpy's dense solve for the Jacobian, networkx for path counts and reachability."""

import itertools
import operator

import networkx as nx
import numpy as np
import pytest
from oracles import dense_jacobian

from minirad import LCG, examples
from minirad.graph.labels import (
    BOOLEANS,
    COUNTS,
    FLOATS,
    Algebra,
    forward,
    path_label,
    path_sum,
    reverse,
    walk,
)

GRAPHS = [examples.figure1(), examples.lecture(), examples.two_outputs(),
          examples.random_dag(3, 12, 2, rng=4), examples.interleaved(3, 3)]


def _nx(g):
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n_vertices))
    G.add_edges_from(zip(g.sources.tolist(), g.targets.tolist()))
    return G


def test_the_algebras_are_frozen_and_say_what_they_are():
    assert (FLOATS.zero, FLOATS.one, COUNTS.zero, COUNTS.one) == (0.0, 1.0, 0, 1)
    assert (BOOLEANS.zero, BOOLEANS.one) == (False, True)
    assert repr(COUNTS) == "Algebra('counts')"
    with pytest.raises(AttributeError):
        FLOATS.multiply = operator.add
    assert FLOATS.multiply_cost(2.0, 3.0) == 1 and FLOATS.add_cost(2.0, 3.0) == 1
    assert LCG.from_edges([("x", "y", 2.0)], ["x"], ["y"]).algebra is FLOATS


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: repr(g))
def test_forward_and_reverse_over_floats_give_the_dense_jacobian(g):
    expected = dense_jacobian(g)
    for c, x in enumerate(g.inputs):
        values = forward(g, {x: 1.0}).values
        column = [0.0 if values[y] is None else values[y] for y in g.outputs]
        np.testing.assert_allclose(column, expected[:, c], rtol=1e-12, atol=1e-12)
    for r, y in enumerate(g.outputs):
        values = reverse(g, {y: 1.0}).values
        row = [0.0 if values[x] is None else values[x] for x in g.inputs]
        np.testing.assert_allclose(row, expected[r], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: repr(g))
def test_counts_and_booleans_give_path_counts_and_reachability(g):
    G = _nx(g)
    ones, trues = [1] * g.n_edges, [True] * g.n_edges
    for x, y in itertools.product(g.inputs, g.outputs):
        expected = len(list(nx.all_simple_paths(G, x, y)))
        counted = forward(g, {x: 1}, algebra=COUNTS, labels=ones).values[y]
        assert (counted or 0) == expected
        assert type(counted or 0) is int
        back = reverse(g, {y: 1}, algebra=COUNTS, labels=ones).values[x]
        assert (back or 0) == expected
        reached = forward(g, {x: True}, algebra=BOOLEANS, labels=trues).values[y]
        assert bool(reached) == nx.has_path(G, x, y)
        assert (path_sum(g, x, y, algebra=COUNTS, labels=ones) or 0) == expected


def test_costs_follow_the_sweep_convention():
    # lecture graph from x1: edges leaving vertices x1 reaches are multiplications
    g = examples.lecture()
    swept = forward(g, {g.index("x1"): 1.0})
    reached = [v for v in range(g.n_vertices) if swept.values[v] is not None]
    edges_used = sum(g.out_degree(v) for v in reached)
    assert swept.multiplications == edges_used
    assert swept.additions == edges_used - (len(reached) - 1)


def test_a_custom_algebra_runs_the_same_recurrence():
    # (max, +) on log-magnitudes: the largest path product, a tropical semiring
    tropical = Algebra("max-plus", operator.add, max, zero=float("-inf"), one=0.0)
    g = examples.interleaved(3, 2, partials="random", rng=1)
    logs = np.log(np.abs(g.partials)).tolist()
    best = forward(g, {g.inputs[0]: 0.0}, algebra=tropical, labels=logs).values[g.outputs[0]]
    products = [abs(path_label(g, p)) for p in walk(g, g.inputs[0], g.outputs[0])]
    assert best == pytest.approx(np.log(max(products)))


def test_path_label_multiplies_later_edges_on_the_outside():
    # 2x2 matrices do not commute: the chain rule's order shows
    a, b = np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 0.0]])
    g = LCG.from_edges([("x", "h", 1.0), ("h", "y", 1.0)], ["x"], ["y"])
    matrices = Algebra("matrices", operator.matmul, operator.add)
    product = path_label(g, [0, 1, 2], algebra=matrices, labels=[a, b])
    np.testing.assert_array_equal(product, b @ a)
    reached = forward(g, {0: np.eye(2)}, algebra=matrices, labels=[a, b]).values[2]
    np.testing.assert_array_equal(reached, b @ a)
    adjoint = reverse(g, {2: np.eye(2)}, algebra=matrices, labels=[a, b]).values[0]
    np.testing.assert_array_equal(adjoint, b @ a)


def test_walk_lists_every_path_once():
    g = examples.figure1()
    G = _nx(g)
    for x, y in itertools.product(g.inputs, g.outputs):
        assert sorted(walk(g, x, y)) == sorted(tuple(p) for p in nx.all_simple_paths(G, x, y))
    assert list(walk(g, 0, 0)) == [(0,)]
    assert path_label(g, [0]) is None


def test_labels_must_match_the_edges():
    g = examples.lab()
    with pytest.raises(ValueError, match="one label per edge"):
        forward(g, {0: 1.0}, labels=[1.0])
