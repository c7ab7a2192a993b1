"""Each fast engine of minirad/_engines.py equals the reference recurrence it
stands in for (minirad.labels), on graphs of every shape the engines special-case:
small (the loop), wide (wavefronts), deep (the triangular solve), several seeds."""

import numpy as np
import pytest

import minirad
from minirad import _engines, examples, labels, ops
from minirad.paths import count_paths, count_paths_reference, path_costs
from minirad.sampling import draws_per_vertex, on_paths, sample_paths, sampled_jacobians
from minirad.sweeps import ENGINES, forward_sweep, reverse_sweep


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
    "deep": minirad.trace(_deep_program, np.linspace(0.1, 1.0, 120)),
    "no_edges": minirad.LCG.from_edges([], ["x"], ["y"], vertices=["x", "y"]),
}


def _reference_values(g, seed, forward):
    sweep = labels.forward if forward else labels.reverse
    return sweep(g, {seed: 1.0})


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "reference"])
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
    assert count_paths_reference(g, backward=True).tolist() == expected.tolist()
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
    useful = minirad.graph.reachable(g, g.outputs, forward=False)
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
        assert minirad.graph.levels(g).tolist() == level


@pytest.mark.parametrize("k", [1, 2, 0.5])
def test_one_batched_sample_is_algorithm_1_run_once(k):
    """The batched kernels with n=1 replay Algorithm 1's draws from the same
    seed (every vertex lies on a path here), so they give the reference's
    estimate: the sampled graph's Jacobian by the label recurrence."""
    g = examples.random_layered(5, 3, 3, rng=4)
    assert on_paths(g).all()
    for seed in range(3):
        sample = sample_paths(g, k, rng=seed)
        q = sample.graph
        reference = [[(labels.reverse(q, {y: 1.0}).values[x] or 0.0) for x in q.inputs]
                     for y in q.outputs]
        for direction in ("reverse", "forward"):
            batched = sampled_jacobians(g, k, 1, rng=seed, direction=direction)[0]
            np.testing.assert_allclose(batched, reference, rtol=1e-10, atol=1e-12)
    assert draws_per_vertex(g, k).shape == (g.n_vertices,)
