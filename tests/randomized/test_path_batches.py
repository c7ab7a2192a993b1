"""Tests for minirad.randomized._batches, the batched Algorithm 1 behind
minirad.randomized.sampling.sampled_jacobians.

It uses the generator in another order than the reference
(minirad.randomized.sampling.sample_paths), so the two are compared through what must
agree: every batched sample is a run of Algorithm 1 (checked sample by
sample), its estimate is the sampled graph's Jacobian (dense oracle), the
accumulation gives the reference's estimates on the reference's own draws
(tests/randomized/test_sampling.py, tests/exact/test_engines.py), and the draws have the
law Algorithm 1 prescribes (chi-square tests with fixed seeds, each with
its false-failure rate).  The law of the estimates against an exhaustive
enumeration is in tests/randomized/test_sampling.py.
"""

import numpy as np
import pytest
from oracles import algorithm1_outcomes, as_law, chi_square_p, dense_jacobian
from scipy import stats

from minirad import examples
from minirad.graph.lcg import LCG, levels
from minirad.randomized import _batches as _path_batches
from minirad.randomized.sampling import (
    draws_per_vertex,
    on_paths,
    path_sampling_variance,
    sampled_jacobians,
)


def plan_for(g, k):
    return _path_batches.Plan(g, draws_per_vertex(g, k), on_paths(g), levels(g))


def with_dead_end():
    # b lies off every input-output path (it reaches no output), c is fed
    # only by b: draws into b are made and then ignored
    return LCG.from_edges([("x", "a", 2.0), ("x", "b", -1.0), ("a", "y", 3.0),
                           ("b", "c", 1.5), ("a", "z", 0.5), ("x", "z", 1.0)],
                          inputs=["x"], outputs=["y", "z"])


# the estimates run reverse with two outputs (two seeds as one complex column)
# and forward with one or three inputs (real columns)
CASES = [
    ("figure1", examples.figure1(), 1),
    ("random_dag-k2", examples.random_dag(3, 15, 2, 0.3, rng=1), 2),
    ("random_dag-fraction", examples.random_dag(3, 15, 2, 0.3, rng=2), 0.5),
    ("random_dag-mapping", examples.random_dag(3, 15, 2, 0.3, rng=3), {"v5": 2, "v9": 1}),
    ("interleaved-k3", examples.interleaved(4, 3, "random", rng=0), 3),
    ("dead_end", with_dead_end(), 1),
]


@pytest.mark.parametrize("name,g,k", CASES, ids=[c[0] for c in CASES])
def test_every_batched_sample_is_a_run_of_algorithm_1(name, g, k):
    plan = plan_for(g, k)
    draws = draws_per_vertex(g, k)
    degree = g.out_degrees
    on = on_paths(g)
    c = 60
    drawn = _path_batches.draw(plan, c, np.random.default_rng(11))
    sample, edge = drawn.flat(plan)
    # the marks of the on-path vertices: which samples visited each
    visited = np.zeros((c, g.n_vertices), dtype=bool)
    for local, v in enumerate(plan.vertices):
        visited[:, v] = drawn.visits(local)
    scale = np.where(draws > 0, degree / np.maximum(draws, 1), 1.0)[g.sources]
    for forward in (False, True):
        estimates = _path_batches.estimate(plan, drawn, len(g.inputs), len(g.outputs), forward)
        for s in range(c):
            counts = np.bincount(edge[sample == s], minlength=g.n_edges)
            # visited (on the paths): the inputs and the heads of drawn edges
            expected = np.zeros(g.n_vertices, dtype=bool)
            expected[list(g.inputs)] = True
            expected[g.targets[counts > 0]] = True
            assert np.array_equal(visited[s], expected & on)
            # a visited vertex makes exactly k_v draws (every edge once when k_v = 0);
            # off the paths nothing is drawn (it could not change the estimate)
            made = np.bincount(g.sources, weights=counts, minlength=g.n_vertices)
            want = np.where(visited[s], np.where(draws > 0, draws, degree), 0)
            assert np.array_equal(made, want)
            # the estimate is the Jacobian of Q: each draw adds (d_v / k_v) * partial
            np.testing.assert_allclose(estimates[s], dense_jacobian(g, counts * scale * g.partials),
                                       rtol=1e-10, atol=1e-12)


def test_draws_are_uniform_and_independent_within_a_vertex():
    # random_dag gives the vertices different out-degrees, so the draws go
    # through uniform_below; with k = 2 the ordered pair of a vertex's two
    # draws must be uniform over its d^2 cells.  Chi-square p > 1e-6 for each
    # of at most 50 vertices: a false-failure rate below 5e-5.
    g = examples.random_dag(2, 40, 2, 0.25, rng=5)
    plan = plan_for(g, 2)
    drawn = _path_batches.draw(plan, 20000, np.random.default_rng(3))
    sample, edge = drawn.flat(plan)
    first, second = edge[0::2], edge[1::2]  # a pair's two draws are consecutive
    assert np.array_equal(g.sources[first], g.sources[second])
    assert np.array_equal(sample[0::2], sample[1::2])
    order, ptr = g.out_edges_csr
    slot = np.empty(g.n_edges, dtype=np.int64)
    slot[order] = np.arange(g.n_edges) - ptr[g.sources[order]]  # position among v's out-edges
    tested = 0
    for v in np.unique(g.sources[first]):
        d = int(ptr[v + 1] - ptr[v])
        mine = g.sources[first] == v
        if d < 2 or mine.sum() < 50 * d * d:
            continue
        cells = np.bincount(slot[first[mine]] * d + slot[second[mine]], minlength=d * d)
        assert stats.chisquare(cells).pvalue > 1e-6, (v, d, cells)
        tested += 1
    assert tested >= 10


@pytest.mark.parametrize("bound", [1, 2, 3, 7, 1000, 3 * 2**30])
def test_uniform_below_is_exactly_uniform(bound):
    # 3 * 2**30 rejects a quarter of the 32-bit draws, exercising the redraws.
    # Chi-square over at most 1000 cells, p > 1e-6: false-failure rate 1e-6 each
    rng = np.random.default_rng(bound)
    n = 200_000
    bounds = np.full(n, bound, dtype=np.uint64)
    threshold = (np.uint64(2**32) - bounds) % bounds
    x = _path_batches.uniform_below(rng, bounds, threshold)
    assert x.dtype == np.int64 and x.min() >= 0 and x.max() < bound
    if bound == 1:
        return
    cells = bound if bound <= 1000 else 3  # 3 equal bins of 2**30 for the largest bound
    binned = x * cells // bound
    assert stats.chisquare(np.bincount(binned, minlength=cells)).pvalue > 1e-6
    if bound % 2 == 0:  # the low bit too
        assert stats.chisquare(np.bincount(x % 2, minlength=2)).pvalue > 1e-6


def test_same_generator_state_gives_the_same_draws():
    g = examples.random_dag(3, 20, 2, 0.3, rng=7)
    plan = plan_for(g, 2)
    a = _path_batches.draw(plan, 100, np.random.default_rng(1))
    b = _path_batches.draw(plan, 100, np.random.default_rng(1))
    for x, y in zip(a.flat(plan), b.flat(plan)):
        assert np.array_equal(x, y)
    assert a.n_draws == len(a.flat(plan)[0]) > 0


# ------------------------------------------------- one draw per vertex: walks
def meeting_graph():
    # x1 and x2 reach a in the first round, x3 a round later (through m); a
    # sends every walk to y1 or to y2, so all three must follow a's one draw
    return LCG.from_edges([("x1", "a", 2.0), ("x2", "a", 3.0), ("x3", "m", 5.0),
                           ("m", "a", 7.0), ("a", "b", 0.5), ("a", "c", -1.5),
                           ("b", "y1", 1.25), ("c", "y2", 4.0)],
                          inputs=["x1", "x2", "x3"], outputs=["y1", "y2"])


def test_walkers_of_one_sample_follow_its_one_draw():
    g = meeting_graph()
    plan = plan_for(g, 1)
    assert plan.single
    n = 4000
    J, made = _path_batches.walks(plan, n, np.random.default_rng(5), 3, 2)
    to_y1 = J[:, 0, 0] != 0
    # every input's walk ends where a's single draw sends it: the product of
    # its partials up to a, times (d_a / k) = 2 and the partials after a
    before = np.array([2.0, 3.0, 35.0])
    assert np.array_equal(J[to_y1, 0], np.tile(before * 2 * 0.5 * 1.25, (to_y1.sum(), 1)))
    assert np.array_equal(J[~to_y1, 1], np.tile(before * 2 * -1.5 * 4.0, ((~to_y1).sum(), 1)))
    assert not J[to_y1, 1].any() and not J[~to_y1, 0].any()
    # draws made: one each at x1, x2, x3 and m; the walkers of x1 and x2 stand
    # on a together, then on b or c, and both draw each time (one draw is
    # kept); x3's arrives later and follows
    assert made == 8 * n
    # a's draw is fair: binomial, |z| < 5 has false-failure rate 5.7e-7
    assert abs(to_y1.mean() - 0.5) <= 5 * np.sqrt(0.25 / n)


@pytest.mark.parametrize("name,g,k", [
    ("figure1", examples.figure1(), 1),
    ("meeting", meeting_graph(), 1),
    ("random_dag", examples.random_dag(3, 5, 2, 0.5, rng=4), 1),
    ("fraction", examples.random_dag(2, 6, 2, 0.4, rng=6), 0.1),
], ids=["figure1", "meeting", "random_dag", "fraction"])
def test_walks_have_the_law_of_algorithm_1(name, g, k):
    # the whole estimate (every output and input at once, so the walkers'
    # sharing of draws counts) against the exhaustive law: p > 1e-6 per
    # graph, a false-failure rate of 1e-6 each (k = 0.1 also draws once)
    assert plan_for(g, k).single
    probabilities, estimates = zip(*algorithm1_outcomes(g, k))
    J = sampled_jacobians(g, k, 20000, rng=8)
    assert chi_square_p(J, as_law(estimates, probabilities)) > 1e-6
    # unbiased: |z| < 5 per entry with the exact variance (false-failure 5.7e-7
    # each), beside rounding where the variance is 0
    exact, sd = dense_jacobian(g), np.sqrt(path_sampling_variance(g, k) / len(J))
    assert np.all(np.abs(J.mean(axis=0) - exact) <= 5 * sd + 1e-12 * (1 + np.abs(exact)))


def test_walks_through_a_vertex_of_high_degree():
    # 300 successors: the table of draws needs more than a byte per entry
    edges = [("x1", "h", 2.0), ("x2", "h", -1.0)]
    edges += [("h", f"v{i}", 1.0 + i / 100) for i in range(300)]
    edges += [(f"v{i}", "y", (-1.0) ** i) for i in range(300)]
    g = LCG.from_edges(edges, inputs=["x1", "x2"], outputs=["y"])
    plan = plan_for(g, 1)
    assert plan.single and plan.degree.max() == 300
    J, _ = _path_batches.walks(plan, 20000, np.random.default_rng(2), 2, 1)
    # both walks of a sample leave h by the same draw: the same factor after h
    assert np.array_equal(J[:, 0, 0] / 2.0, J[:, 0, 1] / -1.0)
    sd = np.sqrt(path_sampling_variance(g, 1) / len(J))
    assert np.all(np.abs(J.mean(axis=0) - dense_jacobian(g)) <= 5 * sd)  # 5.7e-7 each


class Scripted:
    """A stand-in generator that hands out the given 32-bit words, in turn."""

    def __init__(self, *words):
        self.words = list(words)

    def integers(self, high, size, dtype):
        assert high == 2**32
        return np.array(self.words.pop(0), dtype=dtype).reshape(size)


def test_picks_draw_again_exactly_the_rejected_words():
    # a has 3 out-edges: Lemire rejects the u whose low half of 3u is below
    # (2**32 - 3) mod 3 = 1, i.e. u = 0 alone; u maps to (3u) >> 32
    g = LCG.from_edges([("x", "a", 1.0), ("a", "b", 1.0), ("a", "c", 1.0), ("a", "y", 1.0),
                        ("b", "y", 1.0), ("c", "y", 1.0)], inputs=["x"], outputs=["y"])
    plan = plan_for(g, 1)
    a = int(np.flatnonzero(plan.degree == 3)[0])
    x = int(plan.inputs[0])  # one out-edge: threshold 0, never rejected
    rng = Scripted([0, 2**32 - 1, 5, 0], [2**31])
    got = _path_batches.picks(rng, plan, np.array([a, a, a, x]), 1)[0]
    assert got.tolist() == [1, 2, 0, 0]  # the first drawn again from 2**31: (3 * 2**31) >> 32
    assert rng.words == []


def test_picks_with_a_common_degree_draw_as_per_vertex():
    # a level whose vertices share their degree passes it: the same words give
    # the same picks, rejected words drawn again (graph as in the test above)
    g = LCG.from_edges([("x", "a", 1.0), ("a", "b", 1.0), ("a", "c", 1.0), ("a", "y", 1.0),
                        ("b", "y", 1.0), ("c", "y", 1.0)], inputs=["x"], outputs=["y"])
    plan = plan_for(g, 1)
    a = int(np.flatnonzero(plan.degree == 3)[0])
    rng = Scripted([0, 2**32 - 1, 5], [2**31])
    got = _path_batches.picks(rng, plan, np.array([a, a, a]), 1, degree=3)[0]
    assert got.tolist() == [1, 2, 0] and rng.words == []


@pytest.mark.parametrize("direction", ["reverse", "forward"])
def test_tables_kept_between_calls_change_no_estimate(direction):
    # sampled_jacobians keeps its tables from call to call and clears only the
    # marks: after a call on a larger graph has filled them, the same seed
    # gives the same estimates as with new tables
    small = examples.random_dag(3, 15, 2, 0.3, rng=1)
    big = examples.random_dag(2, 60, 3, 0.3, rng=2)
    first = sampled_jacobians(small, 2, 500, rng=3, direction=direction)
    sampled_jacobians(big, 2, 2000, rng=4, direction=direction)
    assert np.array_equal(first, sampled_jacobians(small, 2, 500, rng=3, direction=direction))
    plan = plan_for(small, 2)
    fresh = _path_batches.draw(plan, 500, np.random.default_rng(3))
    assert np.array_equal(first, _path_batches.estimate(plan, fresh, 3, 2, direction == "forward"))


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.SFC64, np.random.MT19937])
def test_words_are_uniform_and_independent(bits):
    # 64-bit generators give two words per raw output, MT19937 goes through
    # rng.integers.  Chi-square p > 1e-6 on the top byte, the low byte, and the
    # top nibbles of consecutive words (the halves of one output): false-failure
    # rate below 3e-6 per generator
    w = _path_batches.words(np.random.Generator(bits(11)), 400_001)
    assert w.dtype == np.uint32 and len(w) == 400_001
    assert stats.chisquare(np.bincount(w >> 24, minlength=256)).pvalue > 1e-6
    assert stats.chisquare(np.bincount(w & 255, minlength=256)).pvalue > 1e-6
    pairs = (w[:-1:2] >> 28) * 16 + (w[1::2] >> 28)
    assert stats.chisquare(np.bincount(pairs, minlength=256)).pvalue > 1e-6
