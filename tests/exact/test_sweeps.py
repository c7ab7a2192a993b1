"""Forward and reverse sweeps, jvp and vjp, their engines and their counts, on
graphs of numbers and on graphs with arrays.

Oracles: the lecture's tangent and adjoint traces (hand-derived values),
calculus by hand, the Jacobian by numpy's dense solver, operation counts
recomputed from networkx reachability, and on arrays the products with the
Jacobian of the scalarized graph and counts from the blocks' flops by hand.
"""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import array_programs, close, dense_jacobian, random_dags

import minirad
from minirad import LCG, examples, ops, trace
from minirad.exact.sweeps import Accumulation, forward_sweep, gradient, jvp, reverse_sweep, vjp
from minirad.graph import labels
from minirad.graph.scalarize import from_chain, scalarize

ENGINES = ["loop", "levels", "triangular", "auto"]


# ----------------------------------------------------------------- helpers


def assert_matches_dense(g, J):
    exact = dense_jacobian(g)
    magnitude = dense_jacobian(g, np.abs(g.partials))
    slack = 1e-13 * max(1.0, float(np.abs(magnitude).max()))
    assert np.all(np.abs(J - exact) <= 1e-10 * np.abs(magnitude) + slack)


def as_networkx(g):
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n_vertices))
    G.add_edges_from(zip(g.sources.tolist(), g.targets.tolist()))
    return G


def expected_cost(g, seeds, reverse=False):
    """Edges whose tail a seed reaches; t - 1 additions per reached vertex with t of
    them.  A reverse sweep is a forward sweep on the graph with every edge turned
    around: edges whose head reaches a seed, additions per tail."""
    G = as_networkx(g)
    if reverse:
        G = G.reverse(copy=False)
    multiplications = additions = 0
    for s in seeds:
        reached = nx.descendants(G, s) | {s}
        traversed = [(u, v) for u, v in G.edges if u in reached]
        multiplications += len(traversed)
        into = {}
        for _, v in traversed:
            into[v] = into.get(v, 0) + 1
        additions += sum(t - 1 for t in into.values())
    return multiplications, additions


small_dags = random_dags(inputs=(1, 4), intermediates=(0, 25), outputs=(1, 4),
                         density=(0.05, 0.9))


# ------------------------------------------------------- the lecture's traces
def test_lecture_graph_follows_the_lecture_numbering():
    g = examples.lecture()
    assert g.names == ("x1", "x2", "v2", "v3", "v4", "v5", "y")


@pytest.mark.parametrize("engine", ENGINES)
def test_forward_tangent_trace_of_the_lecture(engine):
    g = examples.lecture()  # x1 = 2, x2 = 5
    r = forward_sweep(g, wrt=["x1"], engine=engine)
    # v0 = x1, v1 = x2, v2 = ln v0, v3 = v0 v1, v4 = sin v1, v5 = v2 + v3, v6 = v5 - v4
    expected = [1.0, 0.0, 1 / 2, 5.0, 0.0, 5.5, 5.5]
    assert r.tangents.shape == (7, 1)
    np.testing.assert_allclose(r.tangents[:, 0], expected, rtol=1e-15, atol=0)
    assert r.jacobian.tolist() == [[5.5]]
    assert r.seeds == (0,)
    # and seeded with x2: the tangent of sin(x2) is cos(5)
    t2 = forward_sweep(g, wrt="x2", engine=engine).tangents[:, 0]
    np.testing.assert_allclose(t2, [0, 1, 0, 2, math.cos(5), 2, 2 - math.cos(5)],
                               rtol=1e-15, atol=1e-16)


@pytest.mark.parametrize("engine", ENGINES)
def test_reverse_adjoint_trace_of_the_lecture(engine):
    g = examples.lecture()
    r = reverse_sweep(g, engine=engine)
    # v6bar = 1, v5bar = 1, v4bar = -1, v3bar = 1, v2bar = 1,
    # v1bar = v3bar * v0 + v4bar * cos v1 = 2 - cos 5, v0bar = v2bar / v0 + v3bar * v1 = 5.5
    expected = [5.5, 2 - math.cos(5), 1.0, 1.0, -1.0, 1.0, 1.0]
    np.testing.assert_allclose(r.adjoints[:, 0], expected, rtol=1e-15)
    assert [round(a, 3) for a in r.adjoints[:, 0]] == [5.5, 1.716, 1, 1, -1, 1, 1]
    assert r.jacobian.shape == (1, 2)
    assert round(r.jacobian[0, 0], 3) == 5.5 and round(r.jacobian[0, 1], 3) == 1.716


@pytest.mark.parametrize("engine", ENGINES)
def test_lab_gradient(engine):
    g = examples.lab()  # f(x, y) = x*y + sin(x) at (2, 3)
    for J in (reverse_sweep(g, engine=engine).jacobian, forward_sweep(g, engine=engine).jacobian):
        assert J[0, 0] == pytest.approx(2.5838531634528574, rel=1e-15)
        assert J[0, 1] == pytest.approx(2.0, rel=1e-15)


def test_a_vertex_used_several_times_sums_its_partial_adjoints():
    # x feeds the product twice (as x*x: one edge of partial 2x), sin, and the sum
    g = minirad.trace(lambda x: x * x * ops.sin(x) + x, 1.3)
    x = 1.3
    expected = 2 * x * math.sin(x) + x * x * math.cos(x) + 1
    for engine in ENGINES:
        assert reverse_sweep(g, engine=engine).jacobian[0, 0] == pytest.approx(expected,
                                                                                 rel=1e-14)
        assert forward_sweep(g, engine=engine).jacobian[0, 0] == pytest.approx(expected,
                                                                                 rel=1e-14)


def test_two_outputs_by_hand():
    x0, x1 = 1.5, 0.5
    t = x0 * math.sin(x0 * x1)
    dt = [math.sin(x0 * x1) + x0 * math.cos(x0 * x1) * x1, x0 * x0 * math.cos(x0 * x1)]
    expected = [[-math.sin(t) * dt[0], -math.sin(t) * dt[1]],
                [dt[0] / x1, dt[1] / x1 - t / x1**2]]
    g = examples.two_outputs(x0, x1)
    np.testing.assert_allclose(reverse_sweep(g).jacobian, expected, rtol=1e-14)
    np.testing.assert_allclose(forward_sweep(g).jacobian, expected, rtol=1e-14)
    np.testing.assert_allclose(reverse_sweep(g, outputs="y[1]").jacobian, [expected[1]],
                               rtol=1e-14)


# --------------------------------------------------------- random graphs
@settings(max_examples=80, deadline=None)
@given(small_dags, st.sampled_from(ENGINES))
def test_sweeps_match_dense_solve(g, engine):
    assert_matches_dense(g, forward_sweep(g, engine=engine).jacobian)
    assert_matches_dense(g, reverse_sweep(g, engine=engine).jacobian)


@settings(max_examples=50, deadline=None)
@given(small_dags, st.sampled_from(ENGINES), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_jvp_and_vjp_match_dense_products(g, engine, k, seed):
    rng = np.random.default_rng(seed)
    J = dense_jacobian(g)
    magnitude = dense_jacobian(g, np.abs(g.partials))
    v = rng.standard_normal((len(g.inputs), k))
    u = rng.standard_normal((k, len(g.outputs)))
    slack = 1e-12 * max(1.0, float(magnitude.max()))
    bound_v = 1e-10 * (np.abs(magnitude) @ np.abs(v)) + slack
    bound_u = 1e-10 * (np.abs(u) @ np.abs(magnitude)) + slack
    # one entry per vertex: k tangents of an input are its entry's k numbers
    assert np.all(np.abs(np.array(jvp(g, list(v), engine=engine)) - J @ v) <= bound_v)
    assert np.all(np.abs(np.array(vjp(g, list(u.T), engine=engine)).T - u @ J) <= bound_u)
    assert np.all(np.abs(np.array(jvp(g, v[:, 0], engine=engine)) - J @ v[:, 0])
                  <= bound_v[:, 0])
    assert np.all(np.abs(np.array(vjp(g, u[0], engine=engine)) - u[0] @ J) <= bound_u[0])


@settings(max_examples=50, deadline=None)
@given(small_dags, st.data())
def test_subsets_of_seeds_give_columns_and_rows(g, data):
    full = dense_jacobian(g)
    cols = data.draw(st.lists(st.sampled_from(range(len(g.inputs))), unique=True))
    rows = data.draw(st.lists(st.sampled_from(range(len(g.outputs))), unique=True))
    fwd = forward_sweep(g, wrt=[g.names[g.inputs[c]] for c in cols])
    rev = reverse_sweep(g, outputs=[g.outputs[r] for r in rows])
    assert fwd.jacobian.shape == (len(g.outputs), len(cols))
    assert rev.jacobian.shape == (len(rows), len(g.inputs))
    np.testing.assert_allclose(fwd.jacobian, full[:, cols], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(rev.jacobian, full[rows, :], rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ counts
@settings(max_examples=80, deadline=None)
@given(small_dags, st.data())
def test_counts_equal_the_edges_the_sweeps_traverse(g, data):
    assert ((forward_sweep(g).multiplications, forward_sweep(g).additions)
            == expected_cost(g, g.inputs))
    assert ((reverse_sweep(g).multiplications, reverse_sweep(g).additions)
            == expected_cost(g, g.outputs, reverse=True))
    some = data.draw(st.lists(st.sampled_from(g.inputs), unique=True))
    r = forward_sweep(g, wrt=some)
    assert (r.multiplications, r.additions) == expected_cost(g, some)


def test_counts_of_the_lecture_by_hand():
    g = examples.lecture()
    # from x1: edges out of x1 (2), v2, v3, v5 -> 5; v5 adds its two terms
    r = forward_sweep(g, wrt="x1")
    assert (r.multiplications, r.additions) == (5, 1)
    # reverse from y reaches every vertex: all 8 edges; x1 and x2 each sum two terms
    r = reverse_sweep(g)
    assert (r.multiplications, r.additions) == (8, 2)
    assert r.operations == 10


def test_counts_on_a_big_graph_use_the_compiled_reachability():
    g = examples.random_layered(60, 40, 4, rng=1)  # 9,600 edges: past the small-graph threshold
    seeds = g.outputs[:3]
    r = reverse_sweep(g, outputs=seeds)
    assert (r.multiplications, r.additions) == expected_cost(g, seeds, reverse=True)
    f = forward_sweep(g, wrt=g.inputs[:2])
    assert (f.multiplications, f.additions) == expected_cost(g, g.inputs[:2])
    # the forward sweep from every input costs at most n_inputs * n_edges
    assert forward_sweep(g).multiplications <= len(g.inputs) * g.n_edges


# ----------------------------------------------------------------- engines
def test_engines_agree_on_a_wide_graph():
    g = examples.random_layered(200, 12, 6, rng=0)  # 14,400 edges in 13 levels
    u = np.random.default_rng(0).standard_normal(len(g.outputs))
    reference = vjp(g, u, engine="loop")
    for engine in ("levels", "triangular", "auto"):
        np.testing.assert_allclose(vjp(g, u, engine=engine), reference, rtol=1e-10,
                                   atol=1e-12)
    v = list(np.random.default_rng(1).standard_normal((len(g.inputs), 3)))
    reference = jvp(g, v, engine="loop")
    for engine in ("levels", "triangular", "auto"):
        np.testing.assert_allclose(jvp(g, v, engine=engine), reference, rtol=1e-10,
                                   atol=1e-12)
    assert "sweeps.schedule" in g.memos  # the wavefronts were built


def test_engines_agree_on_a_deep_traced_program():
    def chain(x):
        s = x[0]
        for i in range(1, len(x)):
            s = ops.sin(s) * x[i] + s / (1 + i)
        return s

    g = minirad.trace(chain, np.linspace(0.1, 1.0, 500).tolist())  # ~2,000 edges, ~1,500 levels
    reference = reverse_sweep(g, engine="loop").jacobian
    for engine in ("levels", "triangular", "auto"):
        np.testing.assert_allclose(reverse_sweep(g, engine=engine).jacobian, reference,
                                   rtol=1e-10, atol=1e-13)
    assert "sweeps.schedule" in g.memos  # built when "levels" was forced


def test_auto_sends_deep_graphs_to_the_solver():
    def chain(x):
        s = x[0]
        for i in range(1, len(x)):
            s = s * x[i] + ops.sin(s)
        return s

    g = minirad.trace(chain, np.full(2000, 0.5).tolist())
    expected = vjp(g, [1.0], engine="loop")
    # the first sweep goes straight to the solver: nothing about levels is computed
    np.testing.assert_allclose(vjp(g, [1.0], engine="auto"), expected, rtol=1e-10)
    assert not [key for key in g.memos if "levels" in key or "schedule" in key]
    # a second sweep looks at the levels, gives up counting them early and
    # remembers that: no schedule, no levels, a remembered cap
    np.testing.assert_allclose(vjp(g, [1.0], engine="auto"), expected, rtol=1e-10)
    assert "sweeps.schedule" not in g.memos and "graph.levels" not in g.memos
    assert [g.memos[key] for key in g.memos if key.startswith("sweeps.levels_within.")] == [None]


@pytest.mark.slow
def test_the_first_sweep_builds_nothing_and_counts_only_when_read():
    g = examples.random_layered(500, 10, 5, rng=4)  # wide: later sweeps use wavefronts
    result = reverse_sweep(g)
    assert "sweeps.schedule" not in g.memos and "out_csr" not in g.memos
    assert not [key for key in g.memos if key.startswith("sweeps.cost")]
    reference = reverse_sweep(g, engine="reference")
    assert (result.multiplications, result.additions) == (reference.multiplications,
                                                          reference.additions)
    np.testing.assert_allclose(reverse_sweep(g).jacobian, reference.jacobian, rtol=1e-10)
    assert "sweeps.schedule" in g.memos  # the second sweep invested in wavefronts


def test_schedules_are_cached_under_sweeps_keys():
    g = examples.random_layered(100, 5, 5, rng=3)
    before = set(g.memos)
    reverse_sweep(g)
    forward_sweep(g)
    jvp(g, np.ones(len(g.inputs)), engine="levels")
    jvp(g, np.ones(len(g.inputs)), engine="triangular")
    added = set(g.memos) - before
    # sweeps keep their own state under "sweeps." keys, beside the graph's shared views
    shared = ("in_ptr", "out_csr", "reach.lists.forward", "reach.lists.reverse",
              "graph.levels")
    assert added and all(key.startswith("sweeps.") or key in shared for key in added)


# ------------------------------------------------------------ odd graphs
def test_constant_and_copied_outputs():
    g = minirad.trace(lambda x: (x * 2.0, 3.0, x), 1.5)
    for method in (forward_sweep, reverse_sweep):
        assert method(g).jacobian.tolist() == [[2.0], [0.0], [1.0]]


def test_no_seeds_and_no_edges():
    g = examples.lecture()
    assert forward_sweep(g, wrt=[]).jacobian.shape == (1, 0)
    assert reverse_sweep(g, outputs=[]).jacobian.shape == (0, 2)
    assert forward_sweep(g, wrt=[]).multiplications == 0
    bare = LCG(["x", "y"], [], [], [], inputs=[0], outputs=[1])
    assert forward_sweep(bare).jacobian.tolist() == [[0.0]]
    assert reverse_sweep(bare).jacobian.tolist() == [[0.0]]


def test_accumulation_is_a_frozen_record():
    r = reverse_sweep(examples.lecture())
    assert isinstance(r, Accumulation)
    assert repr(r) == ("Accumulation(method='reverse', jacobian shape (1, 2), "
                       "multiplications=8, additions=2)")
    with pytest.raises(AttributeError):
        r.multiplications = 0
    # extra per-vertex fields are keyword-only, so subclasses can add positional ones
    a = Accumulation(np.eye(1), 1, 0, "custom")
    assert a.tangents is None and a.adjoints is None and a.seeds == ()


# ------------------------------------------------------------- bad input
def test_bad_seed_selections():
    g = examples.lecture()
    with pytest.raises(ValueError, match="unknown vertex 'x3'"):
        forward_sweep(g, wrt=["x3"])
    with pytest.raises(ValueError, match="v3 is not an input of the graph; its inputs are "
                                         "x1, x2"):
        forward_sweep(g, wrt=["v3"])
    with pytest.raises(ValueError, match="x1 is not an output of the graph; its outputs are y"):
        reverse_sweep(g, outputs="x1")
    with pytest.raises(ValueError, match="input x1 is selected twice"):
        forward_sweep(g, wrt=["x1", 0])
    with pytest.raises(ValueError, match="unknown vertex 12"):
        reverse_sweep(g, outputs=[12])
    with pytest.raises(TypeError, match="sequence of vertices"):
        forward_sweep(g, wrt={"x1"})


def test_bad_engine_and_vectors():
    g = examples.lecture()
    with pytest.raises(ValueError, match="unknown engine 'gpu'; valid engines are 'auto'"):
        reverse_sweep(g, engine="gpu")
    with pytest.raises(ValueError, match="v has 3 entries; give one per vertex"):
        jvp(g, [1.0, 2.0, 3.0])
    # a matrix is refused rather than read by rows or by columns
    with pytest.raises(TypeError, match=r"u must be a list .* of shape \(2, 2\)"):
        vjp(g, np.ones((2, 2)))
    with pytest.raises(ValueError, match="non-finite"):
        jvp(g, [1.0, np.nan])
    with pytest.raises(TypeError, match="the entry of u for y must be an array of real numbers"):
        vjp(g, ["a"])
    with pytest.raises(ValueError, match=r"the entry of v for x2 has shape \(3,\); expected "
                                         r"\(2,\)"):
        jvp(g, [np.ones(2), np.ones(3)])


@pytest.mark.parametrize("width, depth, degree", [(20, 5, 3), (300, 30, 6)])
def test_out_edge_grouping_matches_a_stable_sort(width, depth, degree):
    # the second graph (54,000 edges) takes the transposition route, not argsort
    g = examples.random_layered(width, depth, degree, rng=5)
    order, ptr = g.out_edges_csr
    np.testing.assert_array_equal(order, np.argsort(g.sources, kind="stable"))
    np.testing.assert_array_equal(ptr[1:], np.cumsum(np.bincount(g.sources,
                                                                 minlength=g.n_vertices)))


# ----------------------------------------------------------- graphs with arrays
def flat(entries):
    return np.concatenate([np.ravel(e) for e in entries])


@settings(max_examples=25, deadline=None)
@given(array_programs(max_steps=4), st.integers(0, 2**32 - 1))
def test_array_sweeps_are_products_with_the_scalarized_jacobian(program, seed):
    f, args = program
    g = trace(f, *args)
    J = minirad.jacobian(scalarize(g))          # the oracle: a graph of numbers
    rng = np.random.default_rng(seed)
    t = [rng.standard_normal(g.shape(x)) for x in g.inputs]
    a = [rng.standard_normal(g.shape(y)) for y in g.outputs]
    close(flat(jvp(g, t)), J @ flat(t))
    close(flat(vjp(g, a)), flat(a) @ J)
    # k products at once: every entry stacked along a leading axis of length 3
    ts = [rng.standard_normal((3,) + g.shape(x)) for x in g.inputs]
    stacked = jvp(g, ts)
    for j in range(3):
        close(flat(e[j] for e in stacked), J @ flat(t[j] for t in ts))
    # the full sweeps: the Jacobian, per-vertex values, one column (row) per entry
    forward, reverse = forward_sweep(g), reverse_sweep(g)
    close(forward.jacobian, J)
    close(reverse.jacobian, J)
    for x in range(g.n_vertices):
        assert forward.tangents[x].shape == (J.shape[1],) + g.shapes[x]
        assert reverse.adjoints[x].shape == (J.shape[0],) + g.shapes[x]
    y = g.outputs[-1]
    close(forward.tangents[y].reshape(J.shape[1], -1).T, J[-g.size(y):])


def test_array_sweeps_keep_tangents_and_adjoints_of_every_vertex():
    # y = A @ x with x = tanh(w): dy/dw = A diag(1 - tanh(w)^2)
    A, w = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), np.array([0.1, -0.3])
    g = trace(lambda A, w: A @ np.tanh(w), A, w)
    expected = A * (1 - np.tanh(w) ** 2)
    r = forward_sweep(g, wrt="w")
    np.testing.assert_allclose(r.jacobian, expected, rtol=1e-15)
    assert r.seeds == (g.index("w"),) and r.shapes == (((3,),), ((2,),))
    np.testing.assert_allclose(r.blocks[0][0], expected, rtol=1e-15)
    # the tangent of tanh(w) for the seed on entry j is column j of its diagonal
    t = r.tangents[g.predecessors("y")[1]]
    np.testing.assert_allclose(t, np.diag(1 - np.tanh(w) ** 2), rtol=1e-15)
    back = reverse_sweep(g)
    assert back.blocks[0][0].shape == (3, 3, 2)    # dy/dA: out (3,) + in (3, 2)
    np.testing.assert_allclose(back.blocks[0][1], expected, rtol=1e-15)
    # d y_i / d A_ij = tanh(w)_j
    np.testing.assert_allclose(back.blocks[0][0][1, 1], np.tanh(w), rtol=1e-15)


def test_sweep_costs_respect_structure():
    g = trace(lambda x: np.tanh(np.exp(x)), np.ones(100) * 0.1)
    # 100 unit tangents through two diagonal edges of 100 flops each: 100 x 200,
    # where two dense 100 x 100 blocks would cost 100 x 20,000
    assert forward_sweep(g).multiplications == 100 * 200
    # a given tangent costs 200; a stack of 3 costs 3 times as much
    x = g.inputs[0]
    assert labels.forward(g, {x: np.ones(100)}).multiplications == 200
    assert labels.forward(g, {x: np.ones((3, 100))}).multiplications == 600
    # one adjoint back through a sum (100) and two diagonals (100 each)
    h = trace(lambda x: np.tanh(np.exp(x)).sum(), np.ones(100) * 0.1)
    assert reverse_sweep(h).multiplications == 300 and reverse_sweep(h).additions == 0
    # an explicit matrix costs m x n per tangent
    assert forward_sweep(from_chain([np.ones((50, 100))])).multiplications == 100 * 5000
    # where paths meet, an addition per entry: y = exp(x) + x gets two terms of 4 entries
    k = trace(lambda x: np.exp(x) + x, np.ones(4))
    assert reverse_sweep(k).additions == 4 * 4    # 4 unit adjoints of 4 entries each


@pytest.mark.parametrize("kind", ["numbers", "arrays"])
def test_sweeping_in_blocks_without_keeping_values(kind, monkeypatch):
    import minirad.exact.sweeps as module

    if kind == "numbers":
        g = examples.random_dag(7, 20, 5, 0.3, rng=11)
        block = 2 * g.n_vertices                      # blocks of two seeds
    else:
        g = trace(lambda W, x: np.tanh(W @ x) * x[:2], np.ones((2, 5)) * 0.3, np.ones(5))
        block = 2 * 10                                # the widest vertex has 10 entries
    full_f, full_r = forward_sweep(g), reverse_sweep(g)
    monkeypatch.setattr(module, "_BLOCK_VALUES", block)
    lean_f = forward_sweep(g, keep_values=False)
    lean_r = reverse_sweep(g, keep_values=False)
    assert lean_f.tangents is None and lean_r.adjoints is None
    np.testing.assert_array_equal(lean_f.jacobian, full_f.jacobian)
    np.testing.assert_array_equal(lean_r.jacobian, full_r.jacobian)
    for lean, full in ((lean_f, full_f), (lean_r, full_r)):
        assert (lean.multiplications, lean.additions) == (full.multiplications, full.additions)


def test_tangents_and_results_take_one_form_on_numbers_and_on_arrays():
    # the same program traced on numbers and on 0-d arrays (the array tracer): the same
    # lists, a float per number, and stacked seeds as arrays of shape (k,) per vertex
    def f(s, t):
        return ops.exp(s * 1.0) * t * 3.0

    e = math.exp(0.5)
    on_numbers = trace(f, 0.5, 2.0)
    on_arrays = trace(lambda s, t: (np.exp(s * np.ones(3)) * t).sum(), np.array(0.5),
                      np.array(2.0))
    assert on_numbers.algebra is labels.FLOATS and on_arrays.algebra is not labels.FLOATS
    for g in (on_numbers, on_arrays):
        tangent, cotangent, grad = jvp(g, [1.0, 0.0]), vjp(g, [1.0]), gradient(g)
        assert all(type(x) is float for x in (*tangent, *cotangent, *grad))
        np.testing.assert_allclose(tangent, [6 * e], rtol=1e-15)
        np.testing.assert_allclose(cotangent, [6 * e, 3 * e], rtol=1e-15)
        assert grad == cotangent
        columns = jvp(g, [np.array([1.0, 0.0]), np.array([0.0, 1.0])])   # two tangents
        assert len(columns) == 1 and columns[0].shape == (2,)
        np.testing.assert_allclose(columns[0], [6 * e, 3 * e], rtol=1e-15)
        rows = vjp(g, [np.array([1.0, 2.0])])                              # two adjoints
        np.testing.assert_allclose(rows, [[6 * e, 12 * e], [3 * e, 6 * e]], rtol=1e-15)
    # an array input: one entry per input, a number as a float, None for zero
    h = trace(lambda s, x: s * x, 2.0, np.array([1.0, 3.0]))
    ds, dx = vjp(h, [np.array([1.0, 1.0])])
    assert isinstance(ds, float) and ds == 4.0
    np.testing.assert_array_equal(dx, [2.0, 2.0])
    np.testing.assert_array_equal(jvp(h, [None, np.array([1.0, 0.0])])[0], [2.0, 0.0])
    np.testing.assert_array_equal(jvp(h, [1.0, None])[0], [1.0, 3.0])


def test_gradient_keeps_the_programs_precision():
    W = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    g = trace(lambda W: (np.tanh(W) ** 2).sum(), W)
    (dW,) = gradient(g)
    assert dW.dtype == np.float32
    by_hand = 2 * np.tanh(W) * (1 - np.tanh(W) ** 2)
    np.testing.assert_allclose(dW, by_hand, rtol=1e-6)
    (seeded,) = vjp(g, [1.0])       # a float64 seed: the same numbers, promoted
    np.testing.assert_allclose(seeded, by_hand, rtol=1e-6)


def test_bad_tangents_and_engines_on_arrays():
    g = trace(lambda A, x: A @ x, np.eye(2), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="v has 1 entries; give one per vertex"):
        jvp(g, [np.ones(2)])
    with pytest.raises(ValueError, match=r"the entry of v for A has shape \(2,\); expected "
                                         r"\(2, 2\)"):
        jvp(g, [np.ones(2), np.ones(2)])
    with pytest.raises(ValueError, match=r"the entry of v for x has shape \(3, 2\); expected "
                                         r"\(4, 2\)"):
        jvp(g, [np.ones((4, 2, 2)), np.ones((3, 2))])   # stacks of different lengths
    with pytest.raises(ValueError, match="non-finite"):
        vjp(g, [np.array([np.nan, 0.0])])
    with pytest.raises(ValueError, match=r"u has 2 entries; give one per vertex \(1: y\)"):
        vjp(g, np.ones(2))      # the one output's adjoint is [np.ones(2)]
    with pytest.raises(TypeError, match="must be an array of real numbers"):
        vjp(g, [["a", "b"]])
    with pytest.raises(ValueError, match="engine 'levels' sweeps graphs of numbers only"):
        reverse_sweep(g, engine="levels")
    with pytest.raises(ValueError, match=r"gradient needs one output that is a number; .*"
                                         r"\[\(2,\)\]; use vjp"):
        gradient(g)
    with pytest.raises(ValueError, match="A is not an output of the graph"):
        reverse_sweep(g, outputs="A")
    # 4,000 unit tangents kept at 12,001 entries: refused before allocating (the Jacobian
    # alone, 1 x 4,000, is swept in bounded blocks with keep_values=False)
    wide = trace(lambda x: np.tanh(np.exp(x)).sum(), np.zeros(4000))
    with pytest.raises(ValueError, match="pass keep_values=False"):
        forward_sweep(wide)
