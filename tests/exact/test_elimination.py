"""Vertex elimination, checked against oracles that do not eliminate vertices:
hand counts and hand derivatives, Bauer's path sum by enumeration, a dense
solve of (I - L) J = E, brute force over all orders, and a Markowitz chooser
that rescans the whole graph.  On graphs with arrays: matrix-product costs
by hand (the textbook matrix chain), brute force over all orders, and the
reverse sweep of every graph the elimination passes through.  And every kind of
elimination (vertices, edges, faces) in every order on random programs, some
with values that reach no output, against minirad.jacobian."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import array_programs, close, rational_jacobian

import minirad
from minirad import LCG, examples, ops, trace
from minirad.exact.elimination import (
    ON,
    ORDERS,
    SEARCH_LIMIT,
    Elimination,
    Step,
    eliminate,
    eliminate_vertex,
    elimination_cost,
    elimination_order,
)
from minirad.exact.jacobians import jacobian
from minirad.exact.orders import CHAIN_LIMIT, OPTIMAL_LIMIT, chain_labels, optimal_chain
from minirad.graph.lcg import reachable
from minirad.graph.operators import OPERATORS, Dense, Diagonal, Operator
from minirad.graph.scalarize import from_chain

# ------------------------------------------------------------------ oracles


def path_jacobian(g: LCG) -> np.ndarray:
    """Bauer's formula by enumerating every input-to-output path (small graphs)."""
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n_vertices))
    G.add_edges_from((u, v) for u, v, _ in g.edges())
    J = np.zeros((len(g.outputs), len(g.inputs)))
    for i, y in enumerate(g.outputs):
        for j, x in enumerate(g.inputs):
            for path in nx.all_simple_paths(G, x, y):
                J[i, j] += math.prod(g.partial(a, b) for a, b in zip(path, path[1:]))
    return J


def assert_matches_oracle(J: np.ndarray, g: LCG):
    # 1e-10 relative to the magnitude of the path terms, so that cancellation
    # between paths is not mistaken for error (the oracle itself is exact)
    expected = rational_jacobian(g)
    scale = rational_jacobian(g, absolute=True)
    assert J.shape == expected.shape
    assert np.all(np.abs(J - expected) <= 1e-10 * scale + 1e-300)


def reachable_pairs(g: LCG) -> set:
    G = nx.DiGraph()
    G.add_nodes_from(g.names)
    G.add_edges_from((g.names[u], g.names[v]) for u, v, _ in g.edges())
    return {(g.names[x], g.names[y]) for x in g.inputs for y in g.outputs
            if nx.has_path(G, g.names[x], g.names[y])}


def rescan_markowitz_choice(h: LCG) -> int:
    """The least |pred| * |succ| intermediate, ties to the lowest number,
    by looking at every intermediate."""
    return min(h.intermediates, key=lambda v: (h.in_degree(v) * h.out_degree(v), v))


# ------------------------------------------------------- reference counts
# Figure 1: a = exp(x1), b = sin(x2), c = b*x2, d = a*c, y = a*d.  Edges:
# x1->a, x2->b, b->c, x2->c, a->d, c->d, a->y, d->y   (a, b, c, d = v2..v5).
#   forward  a: 1*2 (x1->d, x1->y new)   b: 1*1 (x2->c merges)
#            c: 1*1 (x2->d new)          d: 2*1 (x1->y merges, x2->y new)    = 6
#   reverse  d: 2*1 (a->y merges)   c: 2*1   b: 1*1 (x2->y merges)   a: 1*1  = 6
#   optimal  b: 1, c: 1 (now x2 -> d only), d: {a, x2} x {y} = 2, a: 1     = 5
#   markowitz: b (degree 1), c (1), then a and d tie at 2 -> a first       = 6
FIGURE1 = {"forward": (6, 2), "reverse": (6, 2), "optimal": (5, 2), "markowitz": (6, 2)}

# two_outputs: v2 = x0*x1, v3 = sin(v2), v4 = x0*v3, y0 = cos(v4), y1 = v4/x1.
#   forward  v2: 2*1   v3: 2*1 (x0->v4 merges)   v4: 2*2 (x1->y1 merges)     = 8
#   reverse  v4: 2*2   v3: 1*2   v2: 2*2 (x0->y0, x0->y1, x1->y1 merge)     = 10
#   markowitz degrees v2 2, v3 1, v4 4: v3 (1), then v2 (2, x0->v4 merges),
#            then v4: 2*2 (x1->y1 merges)                                   = 7
#   optimal: no order beats 7 (checked by brute force below too)
TWO_OUTPUTS = {"forward": (8, 2), "reverse": (10, 3), "markowitz": (7, 2), "optimal": (7, 2)}


@pytest.mark.parametrize("make, expected", [(examples.figure1, FIGURE1),
                                            (examples.two_outputs, TWO_OUTPUTS)])
def test_reference_counts(make, expected):
    g = make()
    for strategy, (multiplications, additions) in expected.items():
        result = eliminate(g, strategy)
        assert (result.multiplications, result.additions) == (multiplications, additions), \
            strategy
        assert elimination_cost(g, strategy) == (multiplications, additions)
        assert result.order == elimination_order(g, strategy)


def test_reference_orders():
    assert elimination_order(examples.figure1(), "optimal") == ("v3", "v4", "v5", "v2")
    assert elimination_order(examples.figure1(), "markowitz") == ("v3", "v4", "v2", "v5")
    assert elimination_order(examples.two_outputs(), "markowitz") == ("v3", "v2", "v4")
    assert elimination_order(examples.two_outputs(), "reverse") == ("v4", "v3", "v2")


def test_optimal_matches_brute_force_on_named_examples():
    for g in (examples.figure1(), examples.two_outputs(), examples.lecture(), examples.lab()):
        costs = [elimination_cost(g, list(p)) for p in itertools.permutations(g.intermediates)]
        assert elimination_cost(g, "optimal") == min(costs)


def test_two_outputs_jacobian_by_hand():
    x0, x1 = 1.5, 0.5
    s, c = math.sin(x0 * x1), math.cos(x0 * x1)
    t = x0 * s
    dt_dx0, dt_dx1 = s + x0 * x1 * c, x0 * x0 * c
    expected = np.array([[-math.sin(t) * dt_dx0, -math.sin(t) * dt_dx1],
                         [dt_dx0 / x1, dt_dx1 / x1 - t / x1 ** 2]])
    g = examples.two_outputs(x0, x1)
    for strategy in ("forward", "reverse", "markowitz", "optimal"):
        np.testing.assert_allclose(eliminate(g, strategy).jacobian, expected, rtol=1e-13)


def test_named_examples_against_path_enumeration():
    for g in (examples.figure1(), examples.lecture(), examples.lab()):
        J = eliminate(g, "optimal").jacobian
        np.testing.assert_allclose(J, path_jacobian(g), rtol=1e-13)
    np.testing.assert_allclose(eliminate(examples.lab(), "reverse").jacobian,
                               [[2.5838531634528574, 2.0]], rtol=1e-15)


# ----------------------------------------------------------- single steps
def test_eliminate_vertex_by_hand():
    # lab: v2 = x*y, v3 = sin(x), y' = v2 + v3
    g = examples.lab(2.0, 3.0)
    h = eliminate_vertex(g, "v2")
    assert h.names == ("x", "y", "v3", "f")
    assert (h.inputs, h.outputs, h.intermediates) == ((0, 1), (3,), (2,))
    # y' keeps its surviving operand, then gains x and y through v2
    assert h.predecessors("f") == (2, 0, 1)
    assert h.partial("x", "f") == 3.0 * 1.0 and h.partial("y", "f") == 2.0 * 1.0
    assert h.op("f") == "" and h.op("v3") == g.op("v3") and h.op("x") == "input"
    np.testing.assert_array_equal(h.values, g.values[[0, 1, 3, 4]])
    # a vertex number refers to the graph it is given
    assert eliminate_vertex(g, 2).same_as(h)


def test_eliminate_vertex_merges_parallel_edges():
    g = LCG.from_edges([("x", "a", 2.0), ("a", "y", 3.0), ("x", "y", 0.5)],
                       inputs=["x"], outputs=["y"])
    h = eliminate_vertex(g, "a")
    assert h.n_edges == 1 and h.partial("x", "y") == 0.5 + 3.0 * 2.0


def test_step_records_two_outputs_forward():
    steps = eliminate(examples.two_outputs(), "forward").steps
    assert steps[0] == Step("v2", ("x0", "x1"), ("v3",), (("x0", "v3"), ("x1", "v3")), (),
                            (), 2, 0)
    assert steps[1] == Step("v3", ("x0", "x1"), ("v4",), (("x1", "v4"),), (("x0", "v4"),),
                            (), 2, 1)
    last = steps[2]
    assert last.eliminated == "v4" and last.successors == ("y[0]", "y[1]")
    assert set(last.predecessors) == {"x0", "x1"}
    assert set(last.fill_in) == {("x0", "y[0]"), ("x0", "y[1]"), ("x1", "y[0]")}
    assert last.updated == (("x1", "y[1]"),)
    assert (last.multiplications, last.additions) == (4, 1)


def test_result_fields():
    g = examples.figure1()
    result = eliminate(g, "reverse")
    assert isinstance(result, Elimination) and result.method == "eliminate"
    assert result.graphs == ()
    assert not result.jacobian.flags.writeable
    kept = eliminate(g, "reverse", keep_graphs=True)
    assert kept.graphs[0] is g and kept.graphs[-1].same_as(kept.graph)
    assert kept.steps == result.steps


def test_no_intermediates_and_empty_order():
    g = LCG.from_edges([("x", "y", 2.0), ("z", "y", -1.0)], inputs=["x", "z"],
                       outputs=["y"])
    result = eliminate(g, "optimal", keep_graphs=True)
    assert result.multiplications == result.additions == 0 and result.order == ()
    np.testing.assert_array_equal(result.jacobian, [[2.0, -1.0]])
    assert len(result.graphs) == 1
    partial = eliminate(examples.figure1(), [])
    assert partial.jacobian is None and partial.graph.same_as(examples.figure1())


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("order, fragment", [
    (["v2", "x1"], "vertex 'x1' .* is an input"),
    (["y"], "vertex 'y' .* is an output"),
    (["v2", "nope"], "unknown vertex 'nope'"),
    ([99], "unknown vertex 99"),
    (["v2", "v3", "v2"], "repeats vertex 'v2'"),
    (["v2", 2], "repeats vertex 'v2'"),
    ("sideways", "unknown elimination order 'sideways'"),
    ("v2", "unknown elimination order 'v2'"),
])
def test_bad_orders(order, fragment):
    g = examples.figure1()
    before = (g.names, g.partials.copy(), g.sources.copy(), g.targets.copy())
    for call in (eliminate, elimination_cost, elimination_order):
        with pytest.raises(ValueError, match=fragment):
            call(g, order)
    assert g.names == before[0] and all(np.array_equal(a, b) for a, b in zip(
        (g.partials, g.sources, g.targets), before[1:]))


def test_bad_vertex_and_types():
    g = examples.figure1()
    with pytest.raises(ValueError, match="'x2' .* is an input"):
        eliminate_vertex(g, "x2")
    with pytest.raises(ValueError, match="'y' .* is an output"):
        eliminate_vertex(g, 6)
    with pytest.raises(TypeError, match="or a list, not set"):
        eliminate(g, {"v2", "v3"})
    with pytest.raises(TypeError, match="not float"):
        eliminate(g, [2.0])
    with pytest.raises(TypeError, match="LCG"):
        eliminate(g.to_networkx(), "forward")


def test_optimal_refuses_large_graphs():
    g = examples.random_dag(2, OPTIMAL_LIMIT + 1, 2, 0.3, rng=0)
    with pytest.raises(ValueError, match=f"limited to {OPTIMAL_LIMIT} intermediates"):
        eliminate(g, "optimal")
    with pytest.raises(ValueError, match="limited to"):
        elimination_order(g, "optimal")


# ------------------------------------------------------- random graphs
@st.composite
def graphs(draw, max_intermediates=8):
    g = examples.random_dag(
        draw(st.integers(1, 3)), draw(st.integers(0, max_intermediates)),
        draw(st.integers(1, 3)), draw(st.floats(0.05, 0.9)),
        rng=draw(st.integers(0, 2 ** 32 - 1)))
    style = draw(st.sampled_from(["normal", "units", "wide"]))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    if style == "units":  # ±1 partials still count, and paths may cancel exactly
        partials = rng.choice([-1.0, 1.0], size=g.n_edges)
    elif style == "wide":
        partials = rng.standard_normal(g.n_edges) * 10.0 ** rng.integers(-3, 4, g.n_edges)
    else:
        partials = g.partials
    return LCG(g.names, g.sources, g.targets, partials, g.inputs, g.outputs)


SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(g=graphs(), data=st.data())
def test_every_order_gives_the_jacobian(g, data):
    permutation = data.draw(st.permutations(g.intermediates))
    orders = ["forward", "reverse", "markowitz", "optimal", list(permutation)]
    results = [eliminate(g, order) for order in orders]
    for result in results:
        assert_matches_oracle(result.jacobian, g)
    optimal = results[3]
    for result in results:
        assert optimal.multiplications <= result.multiplications
        if optimal.multiplications == result.multiplications:
            assert optimal.additions <= result.additions


@SETTINGS
@given(g=graphs(), data=st.data())
def test_full_elimination_leaves_the_jacobian_as_a_bipartite_graph(g, data):
    order = data.draw(st.sampled_from(["forward", "reverse", "markowitz"]))
    result = eliminate(g, order)
    h = result.graph
    assert h.intermediates == ()
    assert h.names == tuple(name for name in g.names if g.kind(name) != "intermediate")
    edges = {(h.names[u], h.names[v]) for u, v, _ in h.edges()}
    assert all(h.kind(a) == "input" and h.kind(b) == "output" for a, b in edges)
    assert edges == reachable_pairs(g)
    # the edges are the Jacobian's entries, and there are no others
    row = {h.names[y]: i for i, y in enumerate(h.outputs)}
    column = {h.names[x]: j for j, x in enumerate(h.inputs)}
    from_edges = np.zeros_like(result.jacobian)
    for u, v, d in h.edges():
        from_edges[row[h.names[v]], column[h.names[u]]] = d
    np.testing.assert_array_equal(from_edges, result.jacobian)


@SETTINGS
@given(g=graphs(), data=st.data())
def test_partial_order_then_the_rest_equals_the_full_order(g, data):
    order = list(data.draw(st.permutations([g.names[v] for v in g.intermediates])))
    cut = data.draw(st.integers(0, len(order)))
    full = eliminate(g, order, keep_graphs=True)
    first = eliminate(g, order[:cut])
    assert (first.jacobian is None) == (cut < len(order))
    assert set(first.graph.names) == set(g.names) - set(order[:cut])
    rest = eliminate(first.graph, order[cut:])
    assert rest.graph.same_as(full.graph)
    np.testing.assert_array_equal(rest.jacobian, full.jacobian)
    assert first.multiplications + rest.multiplications == full.multiplications
    assert first.additions + rest.additions == full.additions
    assert first.steps + rest.steps == full.steps
    assert full.graphs[cut].same_as(first.graph)
    # one intermediate fewer per step
    assert [len(h.intermediates) for h in full.graphs] == \
        list(range(len(order), -1, -1))


@SETTINGS
@given(g=graphs(), data=st.data())
def test_steps_agree_with_the_graphs_they_connect(g, data):
    order = data.draw(st.sampled_from(["forward", "reverse", "markowitz"]))
    result = eliminate(g, order, keep_graphs=True)
    for step, before, after in zip(result.steps, result.graphs, result.graphs[1:]):
        v = before.index(step.eliminated)
        assert step.predecessors == tuple(before.names[p] for p in before.predecessors(v))
        assert step.successors == tuple(before.names[s] for s in before.successors(v))
        assert step.multiplications == len(step.predecessors) * len(step.successors)
        assert step.additions == len(step.updated)
        assert eliminate_vertex(before, v).same_as(after)
        for p, s in step.fill_in:
            assert not before.has_edge(p, s) and after.has_edge(p, s)
        for p, s in step.updated:
            expected = before.partial(p, s) + before.partial(v, s) * before.partial(p, v)
            assert after.partial(p, s) == expected
        assert after.n_edges == before.n_edges + len(step.fill_in) \
            - len(step.predecessors) - len(step.successors)


@SETTINGS
@given(g=graphs(max_intermediates=12))
def test_markowitz_matches_a_full_rescan(g):
    result = eliminate(g, "markowitz", keep_graphs=True)
    for step, before in zip(result.steps, result.graphs):
        assert before.index(step.eliminated) == rescan_markowitz_choice(before)
    assert elimination_cost(g, "markowitz") == (result.multiplications, result.additions)


@settings(max_examples=25, deadline=None)
@given(g=graphs(max_intermediates=6))
def test_optimal_matches_brute_force(g):
    best = min(elimination_cost(g, list(p)) for p in itertools.permutations(g.intermediates))
    assert elimination_cost(g, "optimal") == best


@SETTINGS
@given(g=graphs(), data=st.data())
def test_cost_without_graphs_matches_elimination(g, data):
    order = list(data.draw(st.permutations(g.intermediates)))
    result = eliminate(g, order)
    assert elimination_cost(g, order) == (result.multiplications, result.additions)
    assert result.order == elimination_order(g, order)
    assert result.multiplications == sum(s.multiplications for s in result.steps)
    assert result.additions == sum(s.additions for s in result.steps)


@settings(max_examples=25, deadline=None)
@given(g=graphs(max_intermediates=12))
def test_agrees_with_the_sweeps(g):
    # a second, independently written accumulation
    from minirad.exact import sweeps

    J = eliminate(g, "markowitz").jacobian
    for sweep in (sweeps.forward_sweep, sweeps.reverse_sweep):
        expected = sweep(g).jacobian
        scale = rational_jacobian(g, absolute=True)
        assert np.all(np.abs(J - expected) <= 1e-10 * scale + 1e-300)


@pytest.mark.parametrize("density", [0.02, 0.05, 0.2])
def test_the_unrecorded_fast_path_is_the_recorded_reference_exactly(density):
    # eliminate() runs the fast path (inline arithmetic, no Step records);
    # its steps are a replay through the recorded reference.  Both must pick
    # the same vertices and leave bit-for-bit the same graph and counts.
    import minirad.exact.elimination as elimination

    g = examples.random_dag(5, 150, 5, density, rng=int(density * 100))
    for order in ("markowitz", "forward", "reverse"):
        fast = elimination._run_vertices(g, order, record=False, keep_graphs=False)
        reference = elimination._run_vertices(g, order, record=True, keep_graphs=False)
        assert fast.taken == reference.taken  # the vertices, in order
        counts = (reference.multiplications, reference.additions)
        assert (fast.multiplications, fast.additions) == counts
        assert fast.work.to_lcg().same_as(reference.work.to_lcg())
        np.testing.assert_array_equal(fast.work.jacobian(), reference.work.jacobian())
        result = eliminate(g, order)
        assert result.steps == tuple(reference.steps)
        assert (result.multiplications, result.additions) == counts


def assert_fast_markowitz_is_the_reference(g):
    """minirad.exact._markowitz (bucket queue, lazy increases) against the reference
    heap chooser and recorded steps: same vertices in the same order, same
    counts, bit-for-bit the same graph left and Jacobian."""
    import minirad.exact.elimination as elimination

    fast = elimination._run_vertices(g, "markowitz", record=False, keep_graphs=False)
    reference = elimination._run_vertices(g, "markowitz", record=True, keep_graphs=False)
    assert fast.taken == reference.taken
    assert (fast.multiplications, fast.additions) == (reference.multiplications,
                                                      reference.additions)
    assert fast.work.touched == reference.work.touched  # which vertices lose their op
    assert fast.work.to_lcg().same_as(reference.work.to_lcg())
    np.testing.assert_array_equal(fast.work.jacobian(), reference.work.jacobian())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs(max_intermediates=40))
def test_fast_markowitz_is_the_reference_on_random_graphs(g):
    assert_fast_markowitz_is_the_reference(g)


@pytest.mark.parametrize("seed", range(6))
def test_fast_markowitz_is_the_reference_where_degrees_tie_and_rise(seed):
    # layered graphs with one fan-in everywhere: many vertices share each
    # degree (ties go to the lowest number), and fill-in raises degrees, the
    # case the fast chooser handles lazily
    rng = np.random.default_rng(seed)
    width, depth, fan_in = int(rng.integers(2, 7)), int(rng.integers(3, 9)), 2
    layered = examples.random_layered(width, depth, min(fan_in, width), rng=seed)
    assert_fast_markowitz_is_the_reference(layered)
    sparse = examples.random_dag(4, 300, 4, density=float(rng.uniform(0.005, 0.03)), rng=seed)
    assert_fast_markowitz_is_the_reference(sparse)


def test_markowitz_matches_a_full_rescan_on_a_larger_graph():
    g = examples.random_dag(5, 120, 5, 0.05, rng=7)
    result = eliminate(g, "markowitz", keep_graphs=True)
    for step, before in zip(result.steps, result.graphs):
        assert before.index(step.eliminated) == rescan_markowitz_choice(before)


# ------------------------------------------------------------ graphs with arrays
def chain_graph(factors):
    shapes = [factors[0].in_shape] + [op.out_shape for op in factors]
    names = ["x"] + [f"v{i}" for i in range(1, len(factors))] + ["y"]
    return LCG(names, range(len(factors)), range(1, len(factors) + 1), factors, [0],
               [len(factors)], shapes=shapes)


def random_chain(rng, length):
    sizes = rng.integers(1, 7, length + 1).tolist()
    factors = []
    for i in range(length):
        if sizes[i] == sizes[i + 1] and rng.random() < 0.4:
            factors.append(Diagonal(rng.standard_normal(sizes[i])))
        else:
            factors.append(Dense(rng.standard_normal((sizes[i + 1], sizes[i])), (sizes[i + 1],),
                                 (sizes[i],)))
    return factors


@pytest.mark.parametrize("seed", range(12))
def test_the_matrix_chain_order_is_optimal(seed):
    rng = np.random.default_rng(seed)
    factors = random_chain(rng, int(rng.integers(2, 6)))
    g = chain_graph(factors)
    assert chain_labels(g) == factors
    best = optimal_chain(factors, OPERATORS)
    exact = jacobian(g)
    close(best.product.to_dense(), exact)
    # the programme's order, run as an elimination, costs exactly what it says
    middle = g.intermediates
    run = eliminate(g, [middle[p - 1] for p in best.order])
    assert run.multiplications == best.cost
    close(run.jacobian, exact)
    assert eliminate(g, "optimal").multiplications == best.cost
    for order in ("forward", "reverse", "markowitz"):
        assert best.cost <= eliminate(g, order).multiplications
    # and no elimination order at all does better (every order is a parenthesization)
    cheapest = min(elimination_cost(g, list(p))[0] for p in itertools.permutations(middle))
    assert best.cost == cheapest


def test_the_textbook_matrix_chain():
    # (10x30)(30x5)(5x60): 4,500 via (AB)C, 27,000 via A(BC)
    A = Dense(np.ones((10, 30)), (10,), (30,))
    B = Dense(np.ones((30, 5)), (30,), (5,))
    C = Dense(np.ones((5, 60)), (5,), (60,))
    best = optimal_chain([C, B, A])      # C applied first: the product is A B C
    assert best.cost == 10 * 30 * 5 + 10 * 5 * 60 == 4500
    assert best.parenthesized == "((J3 J2) J1)"
    g = chain_graph([C, B, A])
    # forward eliminates v1 (between C and B) first: (B C) is 30 x 60, then A (B C)
    assert elimination_cost(g, "forward") == (30 * 5 * 60 + 10 * 30 * 60, 0)
    assert elimination_cost(g, "reverse") == (4500, 0)
    # a chain of numbers is a chain too, one multiplication per product
    assert optimal_chain([2.0, 3.0, 4.0]).cost == 2


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(array_programs(max_steps=3), st.data())
def test_every_graph_an_array_elimination_passes_through_has_the_jacobian(program, data):
    f, args = program
    g = trace(f, *args)
    exact = jacobian(g)
    order = data.draw(st.permutations(g.intermediates))
    result = eliminate(g, list(order), keep_graphs=True)
    close(result.jacobian, exact)
    assert result.blocks is not None and len(result.graphs) == len(order) + 1
    for h in result.graphs:          # elimination never changes the Jacobian
        close(jacobian(h), exact)
    steps = result.steps
    assert [s.eliminated for s in steps] == [g.names[v] for v in order]
    assert sum(s.multiplications for s in steps) == result.multiplications
    assert sum(s.additions for s in steps) == result.additions
    for step, after in zip(steps, result.graphs[1:]):
        for (p, s), label in zip(step.fill_in + step.updated,
                                 step.fill_in_labels + step.updated_labels):
            kept = after.label(p, s)
            assert type(kept) is type(label)
            if isinstance(label, Operator):
                close(kept.to_dense(), label.to_dense())
    if order:
        one = eliminate_vertex(g, order[0])
        close(jacobian(one), exact)
        assert one.n_vertices == g.n_vertices - 1


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(array_programs(max_steps=3))
def test_the_optimal_order_of_a_small_array_graph_is_the_cheapest_of_all(program):
    f, args = program
    g = trace(f, *args)
    if len(g.intermediates) > 5:
        return   # brute force over 720 orders or more: too slow for the suite
    costs = [elimination_cost(g, list(p)) for p in itertools.permutations(g.intermediates)]
    assert elimination_cost(g, "optimal") == min(costs)


def test_optimal_on_arrays_is_limited_unless_the_graph_is_a_chain():
    long_chain = from_chain([np.ones((2, 2))] * (SEARCH_LIMIT + 5))
    assert eliminate(long_chain, "optimal").multiplications == 8 * (SEARCH_LIMIT + 4)
    wide = trace(lambda x: sum(np.tanh(x * float(k)) for k in range(1, 6)), np.ones(2))
    assert len(wide.intermediates) > SEARCH_LIMIT
    with pytest.raises(ValueError, match=f"limited to {SEARCH_LIMIT} intermediates"):
        eliminate(wide, "optimal")
    np.testing.assert_allclose(eliminate(wide, "markowitz").jacobian, jacobian(wide))


def test_elimination_costs_on_arrays_are_flops():
    # y = exp(x) * x: two diagonal paths of 3 entries; eliminating exp(x) multiplies
    # two diagonals (3) and adds the product to the direct edge (3)
    g = trace(lambda x: np.exp(x) * x, np.array([0.0, 1.0, 2.0]))
    result = eliminate(g, "forward")
    assert (result.multiplications, result.additions) == (3, 3)
    x = np.array([0.0, 1.0, 2.0])
    np.testing.assert_allclose(result.jacobian, np.diag(np.exp(x) * (1 + x)), rtol=1e-15)
    (step,) = result.steps
    assert step.updated == (("x", "y"),) and step.updated_labels[0].kind == "diagonal"


def test_bad_orders_on_arrays():
    g = from_chain([np.ones((2, 2))] * 3)
    with pytest.raises(ValueError, match="vertex 'theta' .* is an input"):
        eliminate(g, ["theta"])
    with pytest.raises(ValueError, match="unknown elimination order 'sideways'"):
        eliminate(g, "sideways")
    with pytest.raises(ValueError, match="not a chain"):
        chain_labels(trace(lambda a, b: a * b, np.ones(2), np.ones(2)))
    partial = eliminate(g, ["v1"])
    assert partial.jacobian is None and partial.blocks is None
    assert math.isfinite(eliminate(g).operations)


# --------------------------------------------- every kind, every order, random programs
PROGRAM_OPS = (
    lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - 0.5 * b,
    lambda a, b: ops.sin(a), lambda a, b: ops.cos(a) * b, lambda a, b: ops.tanh(a + b),
    lambda a, b: ops.exp(0.3 * ops.sin(a)),
)


def random_program(rng: np.random.Generator, dead: bool):
    """A program of numbers: 1 to 3 inputs, 2 to 6 operations on earlier values.
    Without ``dead`` it returns every value no later operation uses, so that every
    value reaches an output; with ``dead``, one to three of its values, and one more
    value computed last from earlier ones and never returned: it reaches no output."""
    n_inputs, n_ops = int(rng.integers(1, 4)), int(rng.integers(2, 7))
    recipe = [(int(rng.integers(len(PROGRAM_OPS))), int(rng.integers(n_inputs + i)),
               int(rng.integers(n_inputs + i))) for i in range(n_ops + dead)]
    last = n_inputs + n_ops - 1
    if dead:
        returned = sorted({last, *map(int, rng.integers(n_inputs, last + 1,
                                                        size=int(rng.integers(0, 3))))})
    else:
        # sin(a) and exp(0.3 sin(a)) leave their second operand unused
        used = {a for _, a, b in recipe} | {b for op, a, b in recipe if op not in (3, 6)}
        returned = [v for v in range(last + 1) if v not in used]

    def program(*xs):
        values = list(xs)
        for op, a, b in recipe:
            values.append(PROGRAM_OPS[op](values[a], values[b]))
        return tuple(values[i] for i in returned) if len(returned) > 1 else values[
            returned[0]]

    return minirad.trace(program, *rng.uniform(-1.5, 1.5, n_inputs).tolist())


def random_steps(g, on: str, rng: np.random.Generator) -> list:
    """A complete explicit order drawn step by step among the steps possible on the
    graph (or dual graph) the earlier steps left, through the public API only."""
    taken = []
    while True:
        left = eliminate(g, taken, on=on)
        if on == "vertices":
            options = [left.graph.names[v] for v in left.graph.intermediates]
        elif on == "edges":
            h = left.graph
            options = [(h.names[u], h.names[v], end) for u, v, _ in h.edges()
                       for end, w in (("front", v), ("back", u)) if w in h.intermediates]
        else:
            D = left.dual
            options = [(a, b) for a, b in D.edges()
                       if D.nodes[a]["kind"] == D.nodes[b]["kind"] == "edges"]
        if not options:
            return taken
        taken.append(options[int(rng.integers(len(options)))])


@pytest.mark.parametrize("seed", range(300))
def test_every_kind_of_elimination_in_every_order_gives_the_jacobian(seed):
    """300 random programs, half of them with a value that reaches no output: vertex,
    edge and face elimination in every named order and in an explicit order drawn at
    random agree with minirad.jacobian to 1e-12, or refuse the order (the exhaustive
    search, on a graph too large for it) with a ValueError."""
    rng = np.random.default_rng(seed)
    g = random_program(rng, dead=seed % 2 == 0)
    to_outputs = reachable(g, g.outputs, direction="reverse")
    assert to_outputs.all() == (seed % 2 == 1), g.wengert()
    expected = minirad.jacobian(g)
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    for on in ON:
        for order in (*ORDERS, random_steps(g, on, rng)):
            try:
                result = eliminate(g, order, on=on)
            except ValueError as refused:
                assert order == "optimal" and "limited to" in str(refused), (on, order)
                continue
            assert result.jacobian is not None, (on, order)
            np.testing.assert_allclose(result.jacobian, expected, rtol=1e-12,
                                       atol=1e-12 * scale, err_msg=f"{on}, {order}")
            assert elimination_cost(g, order, on) == (result.multiplications,
                                                      result.additions)


def test_the_issues_program_with_a_value_that_reaches_no_output():
    """sin(x) is computed and dropped: face elimination used to fail with KeyError 1."""
    g = minirad.trace(lambda x: (ops.sin(x), ops.cos(ops.exp(x)))[1], 0.5)
    expected = minirad.jacobian(g)
    for order in ORDERS:
        for on in ON:
            np.testing.assert_allclose(eliminate(g, order, on=on).jacobian, expected,
                                       rtol=1e-15)
    dead = [g.names[v] for v in g.intermediates if not g.successors(v)]
    assert dead, g.wengert()
    faces = eliminate(g, "optimal", on="faces", keep_graphs=True)
    # the dead value's edge is not in the dual graph: no face of it is paid for
    assert not any(v in path for node in faces.graphs[0] for path in node for v in dead)
    assert faces.multiplications == eliminate(g, "optimal").multiplications == 1


# ----------------------------------------------------------------- issue 39
def test_the_matrix_chain_search_is_limited_and_says_how_to_ask_for_more():
    """Issue 39: the optimal order of a chain of arrays had no limit (200 steps took 96 s,
    10^4 never ended). Refused past CHAIN_LIMIT intermediates, naming the keyword; with
    it, the search runs. The oracle: 2 x 2 blocks of ones cost 8 per product in every
    order, so the optimal order costs 8 (L - 1) on L blocks."""
    blocks = CHAIN_LIMIT + 2                           # CHAIN_LIMIT + 1 intermediates
    chain = from_chain([np.ones((2, 2))] * blocks)
    for call in (eliminate, elimination_order, elimination_cost):
        with pytest.raises(ValueError, match=f"limited to {CHAIN_LIMIT} intermediates.*"
                                             f"max_intermediates={CHAIN_LIMIT + 1}"):
            call(chain, "optimal")
    short = from_chain([np.ones((2, 2))] * 12)      # asking for more: the search runs
    assert eliminate(short, "optimal", max_intermediates=11).multiplications == 8 * 11
    with pytest.raises(ValueError, match="products of its 66 sub-chains"):
        eliminate(short, "optimal", max_intermediates=10)
    huge = from_chain([np.ones((1, 1))] * 2000)      # refused at once, nothing formed
    with pytest.raises(ValueError, match="products of its 1,999,000 sub-chains"):
        eliminate(huge, "optimal")


def test_max_intermediates_moves_every_optimal_search_limit():
    """The one keyword raises or lowers the limit of all three searches; within it the
    answer is the default search's (the oracle: brute force over every order)."""
    numbers = examples.random_dag(2, 5, 2, 0.5, rng=3)
    arrays = trace(lambda x: np.tanh(x) * np.sin(x) + np.exp(x), np.ones(2))
    for g in (numbers, arrays):
        k = len(g.intermediates)
        with pytest.raises(ValueError, match=f"limited to {k - 1} intermediates.*"
                                             f"max_intermediates={k}"):
            eliminate(g, "optimal", max_intermediates=k - 1)
        costs = [elimination_cost(g, list(p)) for p in itertools.permutations(g.intermediates)]
        assert elimination_cost(g, "optimal", max_intermediates=k) == min(costs)
    wide = trace(lambda x: sum(np.tanh(x * float(k)) for k in range(1, 6)), np.ones(2))
    message = f"tries every order of its {len(wide.intermediates)} intermediates"
    with pytest.raises(ValueError, match=message):
        eliminate(wide, "optimal")
    for bad in (-1, 2.5, True, "9"):
        with pytest.raises(TypeError, match="max_intermediates must be an int"):
            eliminate(numbers, "optimal", max_intermediates=bad)
