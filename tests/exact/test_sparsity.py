"""Sparsity patterns, colourings and compressed sweeps.

Oracles: the Jacobian by numpy's dense solver and in exact rationals
(tests/oracles.py), patterns
written down by hand for banded, arrow and block-diagonal programs, the
known chromatic numbers of their intersection graphs (a band of width w
needs 2w + 1 colours: any 2w + 1 consecutive columns share a row), reachability
by networkx, and the counts of the dense sweeps in minirad.exact.sweeps.
"""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from oracles import dense_jacobian, random_dags, rational_jacobian

from minirad import examples, ops, trace
from minirad.exact.compressed import STRATEGIES, plan, recover, seeding, sparse_jacobian
from minirad.exact.jacobians import jacobian
from minirad.exact.sparsity import (
    Colouring,
    colour_columns,
    colour_rows,
    intersection_graph,
    is_valid,
    pattern,
    pattern_reference,
)
from minirad.exact.sweeps import forward_sweep, reverse_sweep
from minirad.graph.scalarize import scalarize

small_dags = random_dags((1, 5), (0, 12), (1, 5), (0.1, 0.6))


def reach_pattern(g):
    """P[i, j]: networkx says output i is a descendant of input j."""
    G = nx.DiGraph(list(zip(g.sources.tolist(), g.targets.tolist())))
    G.add_nodes_from(range(g.n_vertices))
    return np.array([[y in nx.descendants(G, x) for x in g.inputs] for y in g.outputs])


# ------------------------------------------------------------- patterns
@settings(max_examples=60, deadline=None)
@given(small_dags)
def test_pattern_is_reachability_and_holds_every_nonzero(g):
    P = pattern(g)
    assert np.array_equal(P, pattern_reference(g))
    assert np.array_equal(P, reach_pattern(g))
    J = rational_jacobian(g)  # exact: no rounding noise posing as a nonzero
    assert not np.any((J != 0) & ~P)  # structural: never misses a nonzero


def test_banded_arrow_block_patterns_by_hand():
    n = 7
    i, j = np.indices((n, n))
    assert np.array_equal(pattern(examples.banded(n, 2)), abs(i - j) <= 2)
    arrow = (i == j) | (i == 0) | (j == 0)
    assert np.array_equal(pattern(examples.arrow(n)), arrow)
    assert np.array_equal(pattern(examples.arrow(n, column=False)), (i == j) | (i == 0))
    assert np.array_equal(pattern(examples.arrow(n, row=False)), (i == j) | (j == 0))
    b, c = np.indices((6, 6))
    assert np.array_equal(pattern(examples.block_diagonal(3, 2)), b // 2 == c // 2)
    for g in (examples.banded(n, 2), examples.arrow(n), examples.block_diagonal(3, 2)):
        J = rational_jacobian(g)
        assert np.array_equal(J != 0, pattern(g))  # generic points: no cancellation


def test_structural_pattern_keeps_a_cancelled_entry():
    g = trace(lambda x, y: [x - x + y, ops.sin(y)], 1.0, 2.0)
    assert pattern(g).tolist() == [[True, True], [False, True]]
    assert dense_jacobian(g)[0, 0] == 0.0


# ------------------------------------------------------------ colouring
@pytest.mark.parametrize("n, width", [(5, 1), (12, 1), (12, 2), (9, 3)])
def test_banded_needs_2w_plus_1_colours_each_way(n, width):
    P = pattern(examples.banded(n, width))
    for colouring in (colour_columns(P), colour_rows(P)):
        assert colouring.n_colours == 2 * width + 1
        assert is_valid(P, colouring)


@pytest.mark.parametrize("n", [3, 6, 10])
def test_arrow_colour_counts(n):
    row_only = pattern(examples.arrow(n, column=False))
    assert (colour_columns(row_only).n_colours, colour_rows(row_only).n_colours) == (n, 2)
    column_only = pattern(examples.arrow(n, row=False))
    assert (colour_columns(column_only).n_colours, colour_rows(column_only).n_colours) == (2, n)
    full = pattern(examples.arrow(n))
    assert (colour_columns(full).n_colours, colour_rows(full).n_colours) == (n, n)


@pytest.mark.parametrize("blocks, size", [(1, 4), (3, 3), (4, 2)])
def test_block_diagonal_needs_the_block_size(blocks, size):
    P = pattern(examples.block_diagonal(blocks, size))
    assert colour_columns(P).n_colours == size == colour_rows(P).n_colours


@settings(max_examples=60, deadline=None)
@given(small_dags)
def test_colourings_are_valid_and_respect_the_clique_bound(g):
    P = pattern(g)
    for side, colouring in (("columns", colour_columns(P)), ("rows", colour_rows(P))):
        assert is_valid(P, colouring)
        # a row (column) with k nonzeros is a k-clique: at least k colours
        bound = P.sum(axis=1 if side == "columns" else 0).max(initial=0)
        assert colouring.n_colours >= bound
        G = intersection_graph(P, side)
        for a, b in G.edges():
            assert colouring.colours[a] != colouring.colours[b]


def test_is_valid_rejects_a_shared_row_and_a_wrong_length():
    P = np.array([[1, 1, 0], [0, 0, 1]], dtype=bool)
    assert is_valid(P, Colouring("columns", (0, 1, 0), "by hand"))
    assert not is_valid(P, Colouring("columns", (0, 0, 1), "by hand"))
    with pytest.raises(ValueError, match="colouring has 2 columns"):
        is_valid(P, Colouring("columns", (0, 1), "by hand"))


def test_seed_matrices():
    P = pattern(examples.banded(5))
    c = colour_columns(P)
    S = c.seeds()
    assert S.shape == (5, 3) and np.array_equal(S.sum(axis=1), np.ones(5))
    J = dense_jacobian(examples.banded(5))
    compressed = J @ S
    for j in range(5):  # each column read back from its group's compressed column
        rows = np.flatnonzero(P[:, j])
        assert np.array_equal(compressed[rows, c.colours[j]], J[rows, j])
    assert colour_rows(P).seeds().shape == (3, 5)


# ---------------------------------------------------- compressed sweeps
GRAPHS = {
    "banded": examples.banded(9, 1),
    "arrow": examples.arrow(6),
    "arrow row": examples.arrow(6, column=False),
    "arrow column": examples.arrow(6, row=False),
    "blocks": examples.block_diagonal(3, 3),
    "lecture": examples.lecture(),
    "two outputs": examples.two_outputs(),
}


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_recovers_the_jacobian(name, strategy):
    g = GRAPHS[name]
    chosen = seeding(g, strategy)
    result = recover(g, chosen)
    np.testing.assert_allclose(result.jacobian, dense_jacobian(g), rtol=1e-12, atol=1e-14)
    # the price, computed from structure alone, is what the sweeps then did
    assert (result.multiplications, result.additions) == (chosen.multiplications,
                                                          chosen.additions)


@settings(max_examples=40, deadline=None)
@given(small_dags)
def test_random_programs_every_strategy_and_prices(g):
    J = dense_jacobian(g)
    p = plan(g)
    for s in p.seedings:
        result = recover(g, s, p.pattern)
        np.testing.assert_allclose(result.jacobian, J, rtol=1e-10, atol=1e-12)
        assert result.multiplications == s.multiplications
    # dense strategies cost what minirad.exact.sweeps counts
    fwd, rev = forward_sweep(g), reverse_sweep(g)
    assert (p["forward"].multiplications, p["forward"].additions) == (fwd.multiplications,
                                                                      fwd.additions)
    assert (p["reverse"].multiplications, p["reverse"].additions) == (rev.multiplications,
                                                                      rev.additions)
    # seeding together reaches the union of what the seeds reach: never more edges
    assert p["coloured forward"].multiplications <= fwd.multiplications
    assert p["coloured reverse"].multiplications <= rev.multiplications
    assert p.best.multiplications == min(s.multiplications for s in p.seedings)


def test_sweep_counts_and_passes_on_the_tridiagonal():
    g = examples.banded(10)
    p = plan(g)
    assert [p[s].sweeps for s in STRATEGIES[:4]] == [10, 10, 3, 3]
    # disjoint reach per group: colouring saves passes, not multiplications
    assert p["coloured forward"].multiplications == p["forward"].multiplications
    assert p["coloured reverse"].pass_multiplications == 3 * g.n_edges
    assert p.best.name == "coloured reverse"
    assert "saves passes over the graph" in p.explanation()


def test_choice_on_the_arrow_depends_on_the_criterion():
    g = examples.arrow(8)
    by_mults, by_passes = plan(g), plan(g, by="passes")
    assert by_mults.best.name == "reverse"
    assert by_passes.best.name == "mixed" and by_passes.best.sweeps == 3
    assert "plan(g, by='passes') picks it" in by_mults.explanation()
    assert "Chosen: mixed, 3 sweep(s) instead of 8" in by_passes.explanation()
    acc, _ = sparse_jacobian(g, by="passes")
    np.testing.assert_allclose(acc.jacobian, dense_jacobian(g), rtol=1e-12, atol=1e-14)


def test_half_arrows_pick_the_two_colour_direction():
    assert plan(examples.arrow(8, column=False), by="passes").best.name == "coloured reverse"
    assert plan(examples.arrow(8, row=False), by="passes").best.name == "coloured forward"


def test_strategy_names_are_distinct_even_without_a_split():
    p = plan(examples.block_diagonal(3, 4))   # every row and column has 4 nonzeros
    assert [s.name for s in p.seedings] == list(STRATEGIES)
    assert p["mixed"].sweeps == p["coloured forward"].sweeps


# --------------------------------------------------------- vector LCG
W = np.random.default_rng(5).standard_normal((3, 4))
A_DIAG = np.diag([2.0, 3.0, 4.0, 5.0])
VECTOR_PROGRAMS = {
    "elementwise": (lambda x: np.tanh(x) * x + 1.0, (np.linspace(0.1, 0.9, 5),)),
    "matmul and a slice": (lambda x, b: np.tanh(W @ x) * 2.0 + b[:3],
                           (np.ones(4), np.arange(5.0))),
    "sum and reshape": (lambda X: (X * X).sum(axis=0).reshape(3), (np.ones((2, 3)),)),
    "solve with a diagonal": (lambda b: np.exp(np.linalg.solve(A_DIAG, b)), (np.ones(4),)),
    "outer product": (lambda W2, x: W2 @ x, (np.ones((2, 3)), np.array([1.0, 0.0, 2.0]))),
}


@pytest.mark.parametrize("name", VECTOR_PROGRAMS)
def test_vector_pattern_is_the_scalarized_pattern(name):
    program, args = VECTOR_PROGRAMS[name]
    g = trace(program, *args)
    P = pattern(g)
    assert np.array_equal(P, pattern(scalarize(g)))
    assert not np.any((jacobian(g) != 0) & ~P)


def test_vector_pattern_keeps_diagonal_blocks_diagonal():
    g = trace(*VECTOR_PROGRAMS["solve with a diagonal"][:1],
              *VECTOR_PROGRAMS["solve with a diagonal"][1])
    assert np.array_equal(pattern(g), np.eye(4, dtype=bool))
    assert plan(g).best.sweeps == 1   # a diagonal Jacobian: one sweep, any direction


@pytest.mark.parametrize("name", VECTOR_PROGRAMS)
def test_vector_strategies_recover_the_block_jacobian(name):
    program, args = VECTOR_PROGRAMS[name]
    g = trace(program, *args)
    J = jacobian(g)
    p = plan(g)
    for s in p.seedings:
        result = recover(g, s, p.pattern)
        np.testing.assert_allclose(result.jacobian, J, rtol=1e-12, atol=1e-14)
        assert result.multiplications == s.multiplications
        # the same blocks as the reverse sweep's, one per (output, input)
        for mine, swept in zip(result.blocks, reverse_sweep(g).blocks):
            for a, b in zip(mine, swept):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    # the dense forward strategy costs what one unit seed per input entry costs
    assert p["forward"].sweeps == sum(np.size(a) for a in args)


# ------------------------------------------------------------ bad input
def test_bad_input():
    g = examples.lecture()
    with pytest.raises(ValueError, match="unknown strategy 'sideways'"):
        seeding(g, "sideways")
    with pytest.raises(ValueError, match="unknown strategy"):
        plan(g, strategies=("forward", "diagonal"))
    with pytest.raises(ValueError, match="by must be one of"):
        plan(g, by="speed")
    with pytest.raises(ValueError, match="2-D array"):
        colour_columns(np.ones(3))
    with pytest.raises(ValueError, match="unknown colouring strategy 'rainbow'"):
        colour_columns(np.eye(2), strategy="rainbow")
    with pytest.raises(ValueError, match="side must be"):
        intersection_graph(np.eye(2), "diagonals")
    with pytest.raises(TypeError, match="Booleans or numbers"):
        colour_rows(np.array([["a"]]))
