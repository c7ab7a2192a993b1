"""Each fast engine of minirad/_engines.py equals the reference recurrence it
stands in for (minirad.graph.labels), on graphs of every shape the engines special-case:
small (the loop), wide (wavefronts), deep (the triangular solve), several seeds."""

import numpy as np
import pytest

import minirad
from minirad import examples, ops
from minirad.exact import _engines
from minirad.exact.paths import count_paths, count_paths_reference, path_costs
from minirad.exact.sweeps import ENGINES, forward_sweep, reverse_sweep
from minirad.graph import labels
from minirad.randomized import _batches as _path_batches
from minirad.randomized.sampling import draws_per_vertex, on_paths, sample_paths


def _deep_program(x):
    s = x[0]
    for i in range(1, len(x)):
        s = ops.sin(s) * x[i] + s / (1 + i)
    return s


GRAPHS = {
    "figure1": examples.figure1(),
    "two_outputs": examples.two_outputs(),
    "random_dag": examples.random_dag(4, 30, 3, rng=2),
    "wide": examples.random_layered(30, 4, 5, rng=1),
    "deep": minirad.trace(_deep_program, np.linspace(0.1, 1.0, 120).tolist()),
    "no_edges": minirad.LCG.from_edges([], ["x"], ["y"], vertices=["x", "y"]),
}


def _reference_values(g, seed, forward):
    sweep = labels.forward if forward else labels.reverse
    return sweep(g, {seed: 1.0})


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("engine", [e for e in ENGINES if e not in ("reference", "pullbacks")])
def test_every_sweep_engine_equals_the_label_recurrence(name, engine):
    g = GRAPHS[name]
    for forward, seeds, run in ((True, g.inputs, forward_sweep), (False, g.outputs,
                                                                   reverse_sweep)):
        result = run(g, engine=engine)
        values = result.tangents if forward else result.adjoints
        for c, seed in enumerate(seeds):
            swept = _reference_values(g, seed, forward)
            expected = [0.0 if x is None else x for x in swept.values]
            np.testing.assert_allclose(values[:, c], expected, rtol=1e-10, atol=1e-12)
            # the counts from reachability are the recurrence's own counts
            alone = run(g, [seed], engine=engine)
            assert (alone.multiplications, alone.additions) == (
                swept.multiplications, swept.additions)


def test_the_reference_engine_is_the_recurrence():
    g = GRAPHS["random_dag"]
    np.testing.assert_allclose(reverse_sweep(g, engine="reference").jacobian,
                               reverse_sweep(g, engine="loop").jacobian, rtol=1e-12)
    assert forward_sweep(g, engine="reference").multiplications == \
        forward_sweep(g, engine="triangular").multiplications


@pytest.mark.parametrize("name", ["figure1", "two_outputs", "random_dag", "wide"])
def test_path_count_engines_equal_sweeps_over_counts(name):
    g = GRAPHS[name]
    expected = count_paths_reference(g)
    assert count_paths(g).tolist() == expected.tolist()
    assert count_paths_reference(g, direction="reverse").tolist() == expected.tolist()
    # total_counts: all seeds at once is the sum of the per-seed sweeps
    ones = [1] * g.n_edges
    into = _engines.total_counts(g, g.inputs, forward=True)
    by_seed = [labels.forward(g, {x: 1}, algebra=labels.COUNTS, labels=ones).values
               for x in g.inputs]
    assert into == [sum(column[v] or 0 for column in by_seed) for v in range(g.n_vertices)]
    # and the term-by-term cost of Bauer's formula follows from walking every path
    walked = [p for x in g.inputs for y in g.outputs for p in labels.walk(g, x, y)]
    if len(walked) < 5000:
        entries = sum(1 for x in g.inputs for y in g.outputs
                      if labels.path_sum(g, x, y) is not None)
        assert path_costs(g) == (sum(len(p) - 2 for p in walked), len(walked) - entries)


@pytest.mark.parametrize("name", ["figure1", "two_outputs", "random_dag"])
def test_path_walk_engine_equals_the_reference_walk(name):
    g = GRAPHS[name]
    useful = minirad.graph.lcg.reachable(g, g.outputs, direction="reverse")
    for x in g.inputs:
        fast = dict(_engines.walk_products(g, [x], list(g.outputs), useful))
        slow = {p: labels.path_label(g, p) for y in g.outputs for p in labels.walk(g, x, y)}
        assert fast.keys() == slow.keys()
        for path, product in fast.items():
            assert product == pytest.approx(slow[path], rel=1e-12)
    bauer = minirad.bauer(g).jacobian
    reference = [[labels.path_sum(g, x, y) or 0.0 for x in g.inputs] for y in g.outputs]
    np.testing.assert_allclose(bauer, reference, rtol=1e-12, atol=1e-14)


def test_levels_are_the_longest_path_lengths():
    for g in GRAPHS.values():
        level = [0] * g.n_vertices
        for u, v, _ in g.edges():
            level[v] = max(level[v], level[u] + 1)
        assert minirad.graph.lcg.levels(g).tolist() == level


@pytest.mark.parametrize("k", [1, 2, 0.5])
def test_batched_accumulation_is_the_label_recurrence_on_each_sample(k):
    """The batched sampler's accumulation, fed the draws of Algorithm 1 run
    once per sample (sample_paths), gives each sampled graph's Jacobian by
    the reference label recurrence."""
    g = examples.random_layered(5, 3, 3, rng=4)
    assert on_paths(g).all()
    samples = [sample_paths(g, k, rng=seed) for seed in range(3)]
    plan = _path_batches.Plan(g, draws_per_vertex(g, k), on_paths(g), minirad.graph.lcg.levels(g))
    drawn = _path_batches.replay(plan, np.array([s.visited for s in samples]),
                                 np.array([s.counts for s in samples]))
    for forward in (False, True):
        batched = _path_batches.estimate(plan, drawn, len(g.inputs), len(g.outputs), forward)
        for sample, estimate in zip(samples, batched):
            q = sample.graph
            reference = [[(labels.reverse(q, {y: 1.0}).values[x] or 0.0) for x in q.inputs]
                         for y in q.outputs]
            np.testing.assert_allclose(estimate, reference, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["wide", "deep", "random_dag"])
def test_the_direct_substitution_equals_scipys_public_solver(name):
    # run_triangular calls SciPy's compiled substitution on the edge arrays as
    # they are; run_triangular_public is the fallback through spsolve_triangular
    g = GRAPHS[name]
    rng = np.random.default_rng(5)
    for forward in (True, False):
        for k in (1, 3):
            seeds = rng.normal(size=(g.n_vertices, k))
            np.testing.assert_allclose(_engines.run_triangular(g, seeds, forward),
                                       _engines.run_triangular_public(g, seeds, forward),
                                       rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["wide", "deep", "random_dag"])
def test_the_negated_system_gives_the_unit_systems_numbers_bit_for_bit(name):
    # strict_upper hands SuperLU L^T - I (diagonal -1, partials as they are)
    # and run_triangular negates the seeds; solving I - L^T (diagonal 1,
    # negated partials) with the seeds as they are must give the same floats
    gstrs = _engines._substitution()
    if gstrs is None:
        pytest.skip("this SciPy has no compiled substitution under that name")
    g = GRAPHS[name]
    n = g.n_vertices
    rows, ptr = g.sources.astype(np.intc), g.in_edges_ptr.astype(np.intc)
    identity = (np.ones(n), np.arange(n, dtype=np.intc), np.arange(n + 1, dtype=np.intc))
    rng = np.random.default_rng(6)
    for forward in (True, False):
        seeds = rng.normal(size=(n, 1))
        expected, info = gstrs("T" if forward else "N", n, n, *identity, n, g.n_edges,
                               -g.partials, rows, ptr, seeds[:, 0].copy())
        assert info == 0
        np.testing.assert_array_equal(_engines.run_triangular(g, seeds, forward)[:, 0],
                                      expected)


@pytest.mark.parametrize("name", ["wide", "deep", "random_dag"])
def test_unit_seeds_given_negated_give_the_same_floats_bit_for_bit(name):
    # propagate_units hands the triangular solve its seeds ready negated (a
    # single seed's column kept on the graph); the floats must be those of
    # run_triangular on the unit seeds, whichever seed came before
    if not _engines.can_solve_negated(GRAPHS[name]):
        pytest.skip("this SciPy has no compiled substitution under that name")
    g = GRAPHS[name]
    for forward, ends in ((True, g.inputs), (False, g.outputs)):
        for vertices in ([ends[0]], [ends[-1]], [ends[0]], list(ends)):
            expected = _engines.run_triangular(g, _engines.unit_seeds(g.n_vertices, vertices),
                                               forward)
            got = _engines.propagate_units(g, vertices, forward, "triangular")
            np.testing.assert_array_equal(got, expected)
    kept = _engines.negated_unit_seeds(g, [g.outputs[0]])
    assert not kept.flags.writeable and kept.sum() == -1.0 and kept[g.outputs[0]] == -1.0


# ------------------------------------------------------------- the tracer
def _program(x, y, z, arithmetic):
    """Every fast-path form: var op var, var op constant, constant op var, a
    repeated operand, negation, signed zero and integer constants, mixed with
    operations that always take the general path."""
    add, sub, mul = arithmetic
    a = add(mul(x, y), z)
    b = sub(mul(a, 0.5), 3)
    c = sub(-0.0, add(2, mul(-1.5, b)))
    d = add(mul(c, c), add(a, a))
    e = sub(d, d)
    f = add(ops.sin(mul(e, x)), -mul(d, 0.0))
    g = sub(mul(f, y), sub(z, 2.5))
    h = mul(g, 3) ** 2 / add(x, 1e-3)
    return add(h, mul(-0.0, y)), a, x


def test_traced_arithmetic_equals_the_operation_table_path():
    # x + y etc. are recorded as codes and their partials filled in for the
    # whole tape afterwards; ops.apply sends the same operations through the
    # general path, which reads each partial off minirad.ops.OPS as it goes
    def through_table(name):
        return lambda u, v: ops.apply(ops.OPS[name], u, v)

    table = (through_table("add"), through_table("sub"), through_table("mul"))
    native = (lambda u, v: u + v, lambda u, v: u - v, lambda u, v: u * v)
    for point in ((0.3, -1.2, 2.0), (1.5, 0.25, -0.75)):
        fast = minirad.trace(lambda x, y, z: _program(x, y, z, native), *point)
        general = minirad.trace(lambda x, y, z: _program(x, y, z, table), *point)
        assert fast.same_as(general)
        # by hand: the product x*y inside a (output 1, a copy) has partials y and x
        product = fast.predecessors(fast.predecessors(fast.outputs[1])[0])[0]
        assert (fast.partial("x", product), fast.partial("y", product)) == point[1::-1]


@pytest.mark.parametrize("name", ["figure1", "two_outputs", "random_dag", "wide", "deep"])
def test_float_and_exact_path_counts_agree_below_two_to_the_53(name):
    g = GRAPHS[name]
    for forward, ends in ((True, g.inputs), (False, g.outputs)):
        for chosen in (list(ends), list(ends[:1])):
            floats = _engines.float_path_counts(g, chosen, forward)
            exact = _engines.exact_path_counts(g, chosen, forward)
            if max(max(row) for row in exact) < 2**53:
                assert floats == exact
            else:  # "deep" doubles its paths at every step: 2**119 of them
                assert floats is None


def test_path_counts_beyond_two_to_the_53_fall_back_to_exact_ints():
    # interleaved(2, depth): 2**depth paths; 2**60 is beyond exact float64
    big = examples.interleaved(2, 60)
    assert _engines.float_path_counts(big, list(big.inputs[:1]), True) is None
    assert count_paths(big).tolist() == count_paths_reference(big).tolist()
    assert count_paths(big)[0, 0] == 2**60
    # just below the limit the float path answers, and exactly
    small = examples.interleaved(2, 52)
    floats = _engines.float_path_counts(small, list(small.inputs[:1]), True)
    assert floats is not None and floats[small.outputs[0]][0] == 2**52


def test_traced_squares_and_table_functions_equal_the_general_path():
    # x ** 2 and ops.sin(x) etc. are recorded by the trace's own scalar class
    # without the generic code; apply(pow, x, 2.5 - 0.5) and numpy's method
    # spelling x.sin() go through the generic path, which reads every value
    # and partial off minirad.ops.OPS
    def general_pow(u, c):
        return ops.apply(ops.OPS["pow"], u, c)

    def fast(x, y):
        return (ops.sin(x) ** 2 + ops.tanh(y) * x ** 2.0 + ops.exp(x * y) ** 2
                + abs(y) ** 3 + ops.sqrt(x * x) ** 0.5 + (-y) ** 2)

    def general(x, y):
        return (general_pow(x.sin(), 2.5 - 0.5) + y.tanh() * general_pow(x, 2.0)
                + general_pow((x * y).exp(), 2.0) + general_pow(ops.apply(ops.OPS["abs"], y), 3)
                + general_pow((x * x).sqrt(), 0.5) + general_pow(-y, 2.0))

    for point in ((0.3, -1.2), (1.5, 0.25), (-0.7, 0.0)):
        fast_g, general_g = minirad.trace(fast, *point), minirad.trace(general, *point)
        assert fast_g.same_as(general_g)
        # by hand: d(x**2)/dx = 2x on the edge out of the input x
        square = next(v for v in fast_g.successors("x") if fast_g.op(v) == "{0} ** 2.0")
        assert fast_g.partial("x", square) == 2 * point[0]
