"""Tests for minirad.randomized.sampling: Algorithm 1, the batched sampler, exact variance.

Two independent oracles: the dense Jacobian (rows and columns of
(I - L)^{-1}) and an exhaustive enumeration of Algorithm 1's draws on tiny
graphs, which gives the estimator's exact distribution.  Statistical tests
use fixed seeds; each states the false-failure rate its threshold would
have under fresh seeds.
"""

import dataclasses
import math

import numpy as np
import pytest
from oracles import (
    algorithm1_outcomes,
    as_law,
    assert_power,
    assert_unbiased,
    chi_square_p,
    dense_jacobian,
    draws_for_power,
)

from minirad import examples, jacobian, trace
from minirad.graph.lcg import LCG
from minirad.graph.scalarize import from_chain, scalarize
from minirad.randomized.experiments import compare, compare_levels, variance_by_depth
from minirad.randomized.injection import injection_variance
from minirad.randomized.sampling import (
    draws_per_vertex,
    path_sampling_variance,
    sample_paths,
    sampled_jacobians,
)

# ------------------------------------------------------------------ oracles


def exact_moments(outcomes):
    p = np.array([q for q, _ in outcomes])
    J = np.array([j for _, j in outcomes])
    mean = np.tensordot(p, J, 1)
    return p.sum(), mean, np.tensordot(p, (J - mean) ** 2, 1)


def no_path_graph():
    # y is isolated on purpose, so the vertices are declared
    return LCG.from_edges([("x", "a", 1.0)], inputs=["x"], outputs=["y"],
                          vertices=["x", "a", "y"])


NAMED = {"figure1": examples.figure1, "lecture": examples.lecture, "lab": examples.lab,
         "two_outputs": examples.two_outputs}

# small enough to enumerate every outcome of Algorithm 1
TINY = [
    ("figure1", examples.figure1(), 1),
    ("figure1", examples.figure1(), 2),
    ("lecture", examples.lecture(), 2),
    ("lab", examples.lab(), 3),
    ("two_outputs", examples.two_outputs(), 1),
    ("two_outputs", examples.two_outputs(), 3),
    ("two_outputs", examples.two_outputs(), 0.5),
    ("interleaved", examples.interleaved(2, 3, "random", rng=1), 2),
    ("interleaved/mapping", examples.interleaved(3, 2, "random", rng=1), {"theta": 2, "a1": 1}),
    ("random_dag", examples.random_dag(2, 4, 2, 0.5, rng=3), 2),
    ("random_dag", examples.random_dag(2, 5, 2, 0.4, rng=5), 1),
]


# ------------------------------------------------------------------ oracle
@pytest.mark.parametrize("name", sorted(NAMED))
def test_dense_oracle_matches_known_gradients(name):
    known = {"lab": [[2.5838531634528574, 2.0]], "lecture": [[5.5, 1.7163378145367738]]}
    g = NAMED[name]()
    if name in known:
        assert np.allclose(dense_jacobian(g), known[name])
    assert dense_jacobian(g).shape == (len(g.outputs), len(g.inputs))


# -------------------------------------------------------------- Algorithm 1
@pytest.mark.parametrize("k", [1, 3, 0.5, {"v5": 2}])
@pytest.mark.parametrize("seed", range(4))
def test_sample_is_a_consistent_run_of_algorithm_1(k, seed):
    g = examples.random_dag(3, 15, 2, 0.3, rng=seed)
    s = sample_paths(g, k, rng=seed)
    draws = draws_per_vertex(g, k)
    degree = np.diff(g.out_edges_csr[1])
    assert np.array_equal(s.draws, draws)
    # visited: the inputs and every vertex with a drawn incoming edge, nothing else
    expected = np.zeros(g.n_vertices, dtype=bool)
    expected[list(g.inputs)] = True
    expected[g.targets[s.counts > 0]] = True
    assert np.array_equal(s.visited, expected)
    # a visited vertex makes exactly k_v draws (all its edges once when k_v = 0)
    made = np.bincount(g.sources, weights=s.counts, minlength=g.n_vertices)
    want = np.where(s.visited, np.where(draws > 0, draws, degree), 0)
    assert np.array_equal(made, want)
    # each draw adds (d_v / k_v) * partial
    scale = np.where(draws > 0, degree / np.maximum(draws, 1), 1.0)[g.sources]
    assert np.allclose(s.weights, s.counts * scale * g.partials)
    # Q: g's vertices, the drawn edges, the weights, edges still grouped by target
    q = s.graph
    assert q.names == g.names and q.inputs == g.inputs and q.outputs == g.outputs
    assert np.array_equal(q.sources, g.sources[s.counts > 0])
    assert np.array_equal(q.targets, g.targets[s.counts > 0])
    assert np.array_equal(q.partials, s.weights[s.counts > 0])
    assert np.all(np.diff(q.targets) >= 0)
    assert s.edges_stored == int((s.counts > 0).sum()) and s.full_edges == g.n_edges
    assert s.vertices_stored == int(s.visited.sum()) and s.full_vertices == g.n_vertices
    assert np.allclose(s.jacobian, dense_jacobian(g, s.weights))


def test_sampled_backward_pass_costs_less():
    g = examples.interleaved(6, 6, "random", rng=0)
    s = sample_paths(g, 1, rng=0)
    assert s.accumulation.method == "reverse"
    assert s.accumulation.multiplications == s.edges_stored == 7  # one path
    assert np.allclose(s.jacobian, s.accumulation.jacobian)


def test_sample_is_frozen_and_read_only():
    s = sample_paths(examples.figure1(), rng=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.draws = 3
    with pytest.raises(ValueError):
        s.counts[0] = 7
    assert "stored" in repr(s)


def test_same_seed_same_sample_and_generators_work():
    g = examples.random_dag(3, 20, 2, 0.3, rng=1)
    a, b = sample_paths(g, 2, rng=11), sample_paths(g, 2, rng=11)
    assert np.array_equal(a.counts, b.counts) and np.array_equal(a.weights, b.weights)
    c = sample_paths(g, 2, rng=np.random.default_rng(11))
    assert np.array_equal(a.counts, c.counts)
    assert not all(np.array_equal(a.counts, sample_paths(g, 2, rng=s).counts)
                   for s in range(12, 20))


def test_keeping_every_edge_is_exact():
    g = examples.random_dag(3, 10, 2, 0.4, rng=2)
    s = sample_paths(g, {}, rng=0)
    assert s.visited[list(g.outputs)].all() and np.allclose(s.jacobian, dense_jacobian(g))
    assert np.allclose(sampled_jacobians(g, {}, 3, rng=0), dense_jacobian(g))
    assert np.all(path_sampling_variance(g, {}) == 0.0)


def test_skipping_saves_memory_on_independent_paths():
    # k=1 on theta picks one chain: exactly one chain's vertices are stored
    g = examples.independent_paths(10, 5)
    s = sample_paths(g, 1, rng=0)
    assert s.vertices_stored == 1 + 5 + 1 and s.edges_stored == 6
    assert s.jacobian[0, 0] == 10.0


# ----------------------------------------- exact distribution (enumeration)
@pytest.mark.parametrize("name,g,k", TINY, ids=[f"{n}-k{k}" for n, _, k in TINY])
def test_unbiased_and_exact_variance_by_enumeration(name, g, k):
    outcomes = algorithm1_outcomes(g, k)
    total, mean, variance = exact_moments(outcomes)
    assert total == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(mean, dense_jacobian(g), rtol=1e-10, atol=1e-12)  # Appendix C
    assert np.allclose(path_sampling_variance(g, k), variance, rtol=1e-9, atol=1e-12)


def test_variance_of_k1_is_zero_on_equal_paths_and_positive_otherwise():
    assert path_sampling_variance(examples.interleaved(3, 3), 1)[0, 0] == 0.0
    assert path_sampling_variance(examples.interleaved(3, 3, "random", rng=0), 1)[0, 0] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name,g,k", [TINY[1], TINY[4], TINY[7], TINY[8]],
                         ids=["figure1-k2", "two_outputs-k1", "interleaved-k2", "mapping"])
def test_both_samplers_draw_from_the_exact_law(name, g, k):
    # p > 1e-6 for each of three samplers: false-failure rate < 3e-6 per graph
    probabilities, estimates = zip(*algorithm1_outcomes(g, k))
    law = as_law(estimates, probabilities)
    single = [sample_paths(g, k, rng=rng).jacobian
              for rng in [np.random.default_rng(2024)] for _ in range(1500)]
    assert chi_square_p(single, law) > 1e-6
    for direction in ("reverse", "forward"):
        batched = sampled_jacobians(g, k, 20000, rng=7, direction=direction)
        assert chi_square_p(batched, law) > 1e-6


# -------------------------------------------------------- statistical tests
@pytest.mark.parametrize("seed", range(30))
def test_unbiased_on_random_dags(seed):
    # z uses the exact variance; |z| < 5 per entry has false-failure rate
    # 5.7e-7 per entry under the CLT (finite support, so the CLT applies).  A check for
    # gross errors on many shapes: on most of these graphs a 5% bias would take 10^5 to
    # 10^9 estimates to show (their paths nearly cancel); the tests with that power are
    # test_unbiased_on_named_examples and the array graphs' tests below
    rng = np.random.default_rng(seed)
    g = examples.random_dag(int(rng.integers(1, 4)), int(rng.integers(3, 15)),
                            int(rng.integers(1, 3)), float(rng.uniform(0.2, 0.6)), rng=rng)
    k = [1, 2, 0.5][seed % 3]
    n = 4000
    J = sampled_jacobians(g, k, n, rng=seed + 100)
    sd = np.sqrt(path_sampling_variance(g, k) / n)
    error = J.mean(axis=0) - dense_jacobian(g)
    assert np.all(np.abs(error) <= 5 * sd + 1e-9 * (1 + np.abs(dense_jacobian(g))))


@pytest.mark.parametrize("name", sorted(NAMED))
@pytest.mark.parametrize("k", [1, 2])
def test_unbiased_on_named_examples(name, k):
    # as many estimates as a 5% bias needs to fail the test, from the exact covariance
    # of each row; false-failure rates in tests/oracles.py ("unbiasedness with power")
    # (figure1's dy/dx2 = 0.57 has variance 166 at k = 1, its two paths nearly cancel: a
    # 5% bias would take 10^7 estimates to show, so there it is checked with 20,000)
    g = NAMED[name]()
    exact = dense_jacobian(g)
    covariance = path_sampling_variance(g, k, covariance=True)
    rows = [r for r in range(len(exact)) if covariance[r].any()]
    n = 20_000 if name == "figure1" else max(draws_for_power(exact[r], covariance[r])
                                             for r in rows)
    assert n <= 100_000
    J = sampled_jacobians(g, k, n, rng=3)
    for r in range(len(exact)):
        assert_unbiased(J[:, r], exact[r], covariance[r])
    for r in rows if name != "figure1" else ():
        assert_power(J[:, r], exact[r], covariance[r])


def variance_z(samples, exact_variance):
    """(sample variance - exact) / its standard error.

    The standard error adds the fourth-moment term (m4 - s^4) / n to the
    normal-theory term 2 s^4 / (n - 1): the first alone vanishes for
    two-point laws (common here with k = 1), where s^2 is then far from
    normal; the sum is conservative.  A floor keeps entries with zero
    variance (exact up to rounding) from dividing rounding by rounding."""
    n = len(samples)
    centred = samples - samples.mean(axis=0)
    s2 = (centred**2).sum(axis=0) / (n - 1)
    m4 = (centred**4).mean(axis=0)
    se = np.sqrt(np.maximum(m4 - s2**2, 0.0) / n + 2 * s2**2 / (n - 1))
    se += 1e-10 * np.maximum(samples.mean(axis=0) ** 2, 1.0)
    return (s2 - exact_variance) / se


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("k", [1, 2, 0.5])
def test_exact_variance_matches_monte_carlo(seed, k):
    # graphs too big to enumerate: |z| < 5 per entry, a false-failure rate
    # below 6e-7 per entry under the normal approximation of the sample
    # variance.  That approximation needs a moderate kurtosis: larger random
    # DAGs (long chains of normal partials) give kurtosis in the thousands,
    # where 4e4 samples miss the rare large estimates and no CLT check is
    # reliable; the formula itself is checked exactly by enumeration above.
    g = examples.random_dag(2, 12 + seed, 2, 0.3 - 0.01 * seed, rng=seed)
    J = sampled_jacobians(g, k, 40000, rng=seed)
    z = variance_z(J, path_sampling_variance(g, k))
    assert np.all(np.abs(z) < 5), z


@pytest.mark.parametrize("family", ["independent", "interleaved"])
def test_exact_variance_matches_monte_carlo_on_figure_2(family):
    # bounded, balanced partials: moderate tails; |z| < 5 as above
    make = examples.independent_paths if family == "independent" else examples.interleaved
    g = make(5, 4, partials="balanced", rng=1)
    for k in (1, 2, 0.4):
        J = sampled_jacobians(g, k, 40000, rng=2)
        assert np.all(np.abs(variance_z(J, path_sampling_variance(g, k))) < 5)


def test_batched_and_single_samplers_agree_in_mean_and_variance():
    # two-sample z on the means (|z| < 5: 5.7e-7 per entry); each variance
    # against the exact one with variance_z (|z| < 5)
    g = examples.random_dag(3, 14, 2, 0.3, rng=4)
    k = 2
    single = np.array([sample_paths(g, k, rng=r).jacobian
                       for r in [np.random.default_rng(5)] for _ in range(2000)])
    exact = path_sampling_variance(g, k)
    for direction in ("reverse", "forward"):
        batched = sampled_jacobians(g, k, 20000, rng=6, direction=direction)
        sd = np.sqrt(exact / len(single) + exact / len(batched))
        assert np.all(np.abs(single.mean(0) - batched.mean(0)) <= 5 * sd + 1e-9)
        assert np.all(np.abs(variance_z(batched, exact)) < 5)
    assert np.all(np.abs(variance_z(single, exact)) < 5)


@pytest.mark.parametrize("k", [1, 2, 0.5, {"v5": 2}])
def test_batched_estimates_equal_the_reference_on_the_reference_draws(k):
    # the batched sampler uses the generator in another order than sample_paths,
    # so one seed gives different samples; fed sample_paths' own draws, its
    # accumulation must give sample_paths' estimates (tests/randomized/test_path_batches.py
    # checks that its own draws are runs of Algorithm 1 with the right law)
    from minirad.graph.lcg import levels
    from minirad.randomized import _batches as _path_batches
    from minirad.randomized.sampling import on_paths

    for seed in range(5):
        g = examples.random_dag(3, 15, 2, 0.3, rng=seed)
        rng = np.random.default_rng(seed)
        samples = [sample_paths(g, k, rng=rng) for _ in range(30)]
        plan = _path_batches.Plan(g, draws_per_vertex(g, k), on_paths(g), levels(g))
        drawn = _path_batches.replay(plan, np.array([s.visited for s in samples]),
                                     np.array([s.counts for s in samples]))
        reference = np.array([s.jacobian for s in samples])
        for forward in (False, True):
            batched = _path_batches.estimate(plan, drawn, 3, 2, forward)
            np.testing.assert_allclose(batched, reference, rtol=1e-12, atol=1e-12)


def test_forward_and_reverse_accumulate_the_same_draws():
    g = examples.random_dag(3, 20, 3, 0.3, rng=1)
    for k in (1, 3, 0.5):
        assert np.allclose(sampled_jacobians(g, k, 500, rng=2, direction="reverse"),
                           sampled_jacobians(g, k, 500, rng=2, direction="forward"))


def test_batched_sampler_is_reproducible():
    g = examples.random_dag(2, 20, 3, 0.3, rng=8)
    a = sampled_jacobians(g, 2, 300, rng=9)
    assert a.shape == (300, 3, 2)
    assert np.array_equal(a, sampled_jacobians(g, 2, 300, rng=9))
    assert np.array_equal(a, sampled_jacobians(g, 2, 300, rng=np.random.default_rng(9)))
    assert not np.array_equal(a, sampled_jacobians(g, 2, 300, rng=10))


def test_small_chunks_give_the_same_estimator(monkeypatch):
    # chunks of a few samples each: still reproducible and unbiased
    # (|z| < 5 with the exact variance: false-failure rate 5.7e-7 per entry)
    import minirad.randomized.sampling

    g = examples.random_dag(2, 8, 2, 0.4, rng=3)
    monkeypatch.setattr(minirad.randomized.sampling, "_CHUNK_DRAWS", 100)
    chunks = []
    sampled_jacobians(g, 2, 2000, rng=4, progress=lambda done, n: chunks.append(done))
    assert len(chunks) > 10 and chunks[-1] == 2000
    J = sampled_jacobians(g, 2, 2000, rng=4)
    assert np.array_equal(J, sampled_jacobians(g, 2, 2000, rng=4))
    sd = np.sqrt(path_sampling_variance(g, 2) / len(J))
    assert np.all(np.abs(J.mean(axis=0) - dense_jacobian(g)) <= 5 * sd + 1e-9)


def test_unreachable_output_rows_are_zero():
    g = LCG.from_edges([("x", "a", 2.0), ("a", "y1", 3.0), ("a", "b", 1.0), ("c", "y2", 1.0)],
                       inputs=["x"], outputs=["y1", "y2"])
    assert np.array_equal(sampled_jacobians(g, 1, 50, rng=0)[:, 1], np.zeros((50, 1)))
    assert np.array_equal(sample_paths(g, 1, rng=0).jacobian[1], [0.0])
    assert path_sampling_variance(g, 1)[1, 0] == 0.0
    assert path_sampling_variance(g, 1)[0, 0] == pytest.approx(36.0)  # 2 * 2 * 3^2 - 6^2


# ----------------------------------------------------------------- compare
def test_compare_reports_consistent_statistics():
    g = examples.two_outputs()
    r = compare(g, 2, 3000, rng=1)
    assert r.n == 3000 and r.estimates.shape == (3000, 2, 2)
    assert np.allclose(r.exact, dense_jacobian(g))
    assert np.allclose(r.mean, r.estimates.mean(0))
    assert np.allclose(r.variance, r.estimates.var(0, ddof=1))
    assert np.allclose(r.stderr, np.sqrt(r.variance / 3000))
    assert np.allclose(r.exact_variance, path_sampling_variance(g, 2))
    assert r.running_error.shape == (3000,)
    first = np.linalg.norm(r.estimates[0] - r.exact) / np.linalg.norm(r.exact)
    last = np.linalg.norm(r.mean - r.exact) / np.linalg.norm(r.exact)
    assert r.running_error[0] == pytest.approx(first) and r.running_error[-1] == pytest.approx(last)
    assert np.all(np.abs(r.z) < 5)  # false-failure rate 5.7e-7 per entry (CLT)
    assert "Comparison" in repr(r)


def test_compare_with_one_estimate_and_exact_entries():
    r = compare(examples.figure1(), 1, 1, rng=0)
    assert np.isnan(r.variance).all() and np.isnan(r.z).all()
    # dy/dx1 on figure1 is never wrong: both paths out of v2 contribute the
    # same, so the draw there does not matter; z must not blow up rounding
    r = compare(examples.figure1(), 1, 500, rng=0)
    assert r.exact_variance[0, 0] == 0.0 and abs(r.z[0, 0]) < 0.1


def test_running_error_shrinks():
    r = compare(examples.lecture(), 1, 20000, rng=2)
    assert r.running_error[-1] < 0.1 * np.mean(r.running_error[:10])


# ------------------------------------------------------------------- depth
def test_independent_paths_keep_a_flat_relative_variance():
    for width, fraction in [(4, 0.5), (8, 0.25)]:
        study = variance_by_depth("independent", width, [1, 2, 3, 5, 8, 13], fraction)
        rel = study.relative_variance
        assert rel.min() > 0 and rel.max() / rel.min() == pytest.approx(1.0, abs=1e-9)
        assert study.growth == pytest.approx(1.0, abs=1e-9)


def test_interleaved_relative_variance_grows_geometrically():
    for width, fraction, factor in [(4, 0.5, 1.1), (8, 0.25, 1.1), (4, 0.25, 1.3)]:
        study = variance_by_depth("interleaved", width, [1, 2, 3, 4, 6, 8, 12], fraction)
        assert study.growth > factor
        assert np.all(np.diff(study.relative_variance) > 0)


def test_injection_on_independent_paths_explodes():
    # sampling a fraction of every layer's vertices cuts most chains
    study = variance_by_depth("independent", 4, [1, 2, 4, 8], 0.5, method="injection")
    assert study.growth > 2.0


def test_depth_study_rejects_bad_arguments():
    with pytest.raises(ValueError, match="family"):
        variance_by_depth("tree", 3, [1, 2])
    with pytest.raises(ValueError, match="method"):
        variance_by_depth("interleaved", 3, [1, 2], method="magic")
    with pytest.raises(ValueError, match="fraction"):
        variance_by_depth("interleaved", 3, [1, 2], fraction=2)
    with pytest.raises(ValueError, match="depths"):
        variance_by_depth("interleaved", 3, [])


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("k", [0, -1, 1.5, 0.0, math.nan, -0.5, {"v2": 0}])
def test_bad_k_raises_value_error(k):
    g = examples.figure1()
    for call in (lambda: sample_paths(g, k), lambda: sampled_jacobians(g, k, 5),
                 lambda: path_sampling_variance(g, k), lambda: compare(g, k, 5)):
        with pytest.raises(ValueError, match="k"):
            call()


@pytest.mark.parametrize("k", ["2", True, [1, 2], {"v2": 1.5}])
def test_k_of_the_wrong_type_raises_type_error(k):
    with pytest.raises(TypeError, match="k"):
        sample_paths(examples.figure1(), k)


def test_mapping_k_names_real_vertices_with_successors():
    g = examples.figure1()
    with pytest.raises(ValueError, match="unknown vertex"):
        sample_paths(g, {"nope": 1})
    with pytest.raises(ValueError, match="no out-edges"):
        sample_paths(g, {"y": 1})
    assert draws_per_vertex(g, {g.index("v2"): 2, "x2": None})[g.index("v2")] == 2


@pytest.mark.parametrize("n", [0, -3])
def test_bad_n_raises_value_error(n):
    with pytest.raises(ValueError, match="n"):
        sampled_jacobians(examples.figure1(), 1, n)
    with pytest.raises(ValueError, match="n"):
        compare(examples.figure1(), 1, n)


def test_non_integer_n_raises_type_error():
    with pytest.raises(TypeError, match="n"):
        sampled_jacobians(examples.figure1(), 1, 2.5)


@pytest.mark.parametrize("rng", ["seed", 1.5, [1, 2], True])
def test_bad_rng_raises_value_error(rng):
    with pytest.raises(ValueError, match="rng"):
        sample_paths(examples.figure1(), 1, rng=rng)
    with pytest.raises(ValueError, match="rng"):
        sampled_jacobians(examples.figure1(), 1, 3, rng=rng)


def _linear_gradient_graph(point):
    """The gradient graph of a linear program: its gradient is a constant, so no path
    joins an input to an output (issue 39)."""
    from minirad.exact.higher import gradient_graph

    return gradient_graph(lambda x: (2.0 * x).sum() if np.ndim(x) else 2.0 * x, point)


@pytest.mark.parametrize("g", [no_path_graph(), _linear_gradient_graph(1.5),
                               _linear_gradient_graph(np.ones(3))], ids=["numbers",
                                                                         "gradient_graph",
                                                                         "gradient_graph_array"])
def test_a_graph_without_input_output_path_samples_the_zero_jacobian(g):
    """Issue 39: with no input-to-output path the exact Jacobian is zero (the oracle:
    the reverse sweep), and so is every estimate, with variance 0; it used to raise."""
    exact = jacobian(g)
    assert exact.size > 0 and not exact.any()
    estimates = sampled_jacobians(g, 2, 5, rng=0)
    assert estimates.shape == (5, *exact.shape) and not estimates.any()
    assert sample_paths(g, 1, rng=0).jacobian.shape == exact.shape
    assert not sample_paths(g, 1, rng=0).jacobian.any()
    assert path_sampling_variance(g).shape == exact.shape and not path_sampling_variance(g).any()
    columns = exact.shape[1]
    assert path_sampling_variance(g, covariance=True).shape == (exact.shape[0], columns, columns)
    result = compare(g, 1, 5, rng=0)
    assert not result.mean.any() and result.running_error[-1] == 0.0


def test_exact_variance_refuses_large_graphs_naming_the_limit():
    g = examples.interleaved(5, 5)
    with pytest.raises(ValueError, match="max_entries=10"):
        path_sampling_variance(g, 1, max_entries=10)


def test_bad_direction():
    with pytest.raises(ValueError, match="direction"):
        sampled_jacobians(examples.figure1(), 1, 3, direction="sideways")


def test_sampled_jacobians_and_compare_take_a_function_and_a_point():
    """Issue 10: like jacobian(f, *point). The oracle: the same call on the traced graph."""
    from minirad import ops, trace

    def f(x1, x2):
        return ops.log(x1) + x1 * x2 - ops.sin(x2)

    g = trace(f, 2.0, 5.0)
    assert np.array_equal(sampled_jacobians(f, 2.0, 5.0, k=1, n=50, rng=3),
                          sampled_jacobians(g, 1, 50, rng=3))
    assert np.array_equal(compare(f, 2.0, 5.0, k=1, n=30, rng=1).estimates,
                          compare(g, k=1, n=30, rng=1).estimates)
    with pytest.raises(TypeError, match="needs the point"):
        sampled_jacobians(f, k=1)


# ------------------------------------------------- arrays: the two levels of Sec. 3.2
def literal_algorithm1(g, k, rng):
    """Algorithm 1 as the paper's pseudo-code reads (Appendix C), on a graph of numbers:
    vertices in topological order, skip those with no sampled incoming edge, else k
    uniform draws among the successors, one rng.integers call per visited vertex.
    Returns the draw count of every edge."""
    counts = np.zeros(g.n_edges, dtype=np.int64)
    visited = set(g.inputs)
    for v in range(g.n_vertices):
        succ = list(g.successors(v))
        if v not in visited or not succ:
            continue
        for i in rng.integers(len(succ), size=k):
            counts[g.edge_index(v, succ[i])] += 1
            visited.add(succ[i])
    return counts


def array_program(seed=0):
    """A small array program: x (2) -> A x (3) -> tanh -> squared -> sum, plus x . b."""
    rng = np.random.default_rng(seed)
    A, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    return trace(lambda x: (np.tanh(A @ x) ** 2).sum() + (x * b).sum(),
                        rng.standard_normal(2))


@pytest.mark.parametrize("seed", range(3))
def test_on_a_graph_of_numbers_it_is_algorithm_1_draw_for_draw(seed):
    """The same seed gives the same draws as the pseudo-code, with or without entries
    (a number has one entry: nothing is drawn inside)."""
    g = examples.random_dag(3, 15, 2, 0.3, rng=seed)
    for k in (1, 2):
        literal = literal_algorithm1(g, k, np.random.default_rng(seed))
        assert np.array_equal(sample_paths(g, k, rng=seed).counts, literal)
        assert np.array_equal(sample_paths(g, k, rng=seed, entries=1).counts, literal)


def test_arrays_of_one_entry_sample_what_their_scalar_graph_samples():
    """A graph whose arrays all have one entry (shape (1,)): its scalarized graph has the
    same vertices and edges, and for one seed the two levels draw exactly what
    Algorithm 1 draws there (nothing inside), with the same estimate."""
    A = np.array([[2.0]])
    g = trace(lambda x: np.tanh(A @ x) * x + np.exp(x) * (A @ x), np.array([0.4]))
    s = scalarize(g)
    assert (s.n_vertices, s.n_edges) == (g.n_vertices, g.n_edges)
    for seed in range(5):
        a = sample_paths(g, 1, rng=seed, entries=1)
        b = sample_paths(s, 1, rng=seed)
        assert np.array_equal(a.counts, b.counts) and a.inside == {}
        np.testing.assert_allclose(a.jacobian, b.jacobian, rtol=1e-12)


def test_a_sample_on_arrays_is_the_graph_with_drawn_edges_and_sampled_entries():
    g = array_program()
    s = sample_paths(g, 2, rng=4, entries=1)
    # only visited vertices draw, and only intermediates of more than one entry
    assert set(s.inside) == {v for v in g.intermediates if g.size(v) > 1 and s.visited[v]
                             and g.out_degree(v) > 0}
    assert s.inside
    for v, diagonal in s.inside.items():
        # one of n entries drawn: that entry weighted n, the others 0
        assert sorted(diagonal.ravel().tolist()) == [0.0] * (g.size(v) - 1) + [g.size(v)]
    # Q by hand: each drawn edge's block times its factor, times P of its source
    degree = np.diff(g.out_edges_csr[1])[g.sources]
    labels = []
    for e in np.flatnonzero(s.counts):
        u = int(g.sources[e])
        block = g.labels[e].to_dense() if not isinstance(g.labels[e], float) \
            else np.array([[g.labels[e]]])
        P = np.diag(s.inside[u].ravel()) if u in s.inside else np.eye(block.shape[1])
        factor = s.counts[e] * (degree[e] / 2 if s.draws[u] else 1.0)
        labels.append(factor * block @ P)
        q = s.graph.label(g.names[u], g.names[int(g.targets[e])])
        np.testing.assert_allclose(q.to_dense() if not isinstance(q, float) else [[q]],
                                   labels[-1], rtol=1e-12)
    assert s.graph.n_edges == len(labels)


@pytest.mark.slow
@pytest.mark.parametrize("k,entries", [(1, None), (1, 1), (2, 2), (1, 0.5)])
def test_two_levels_on_arrays_are_unbiased_with_their_exact_variance(k, entries):
    # draws from the exact covariance so that a 5% bias fails the test; rates in
    # tests/oracles.py ("unbiasedness with power"); the sample variance against the
    # exact one: |z| < 5, 5.7e-7 per entry
    g = array_program()
    exact = jacobian(g)[0]
    covariance = path_sampling_variance(g, k, entries=entries, covariance=True)[0]
    if not covariance.any():
        pytest.fail("no randomness: the test would prove nothing")
    n = draws_for_power(exact, covariance)
    assert n <= 500_000
    estimates = sampled_jacobians(g, k, n, rng=5, entries=entries)[:, 0]
    assert_unbiased(estimates, exact, covariance)
    assert_power(estimates, exact, covariance)
    variance = np.diag(covariance)
    assert np.all(np.abs(variance_z(estimates, variance)) < 5)
    # sample_paths draws from the same law: two-sample z on the means, 5.7e-7 per entry
    rng = np.random.default_rng(6)
    single = np.array([sample_paths(g, k, rng=rng, entries=entries).jacobian[0]
                       for _ in range(1500)])
    sd = np.sqrt(variance * (1 / 1500 + 1 / n))
    assert np.all(np.abs(single.mean(axis=0) - estimates.mean(axis=0)) <= 5 * sd + 1e-9)


def test_stacked_estimates_equal_the_reference_on_the_reference_draws():
    """The batched estimates of an array graph are reverse accumulation over a stack of
    samples; fed sample_paths' own draws, it gives sample_paths' estimates."""
    from minirad.randomized.sampling import _stacked_estimates

    g = array_program(1)
    samples = [sample_paths(g, 1, rng=r, entries=1) for r in range(20)]
    factors = np.array([s.factors for s in samples])
    # a vertex a sample did not visit drew nothing there (its P never reaches an input)
    sampled = set().union(*(s.inside for s in samples))
    assert sampled
    diagonals = {v: np.array([s.inside.get(v, np.zeros(g.shape(v))).reshape(1, -1)
                              for s in samples]) for v in sampled}
    np.testing.assert_allclose(_stacked_estimates(g, factors, diagonals),
                               np.array([s.jacobian for s in samples]), rtol=1e-12,
                               atol=1e-14)


@pytest.mark.parametrize("k", [1, 2, 0.5])
def test_the_engine_for_numbers_equals_the_stacked_reference_on_the_same_draws(k):
    """On a graph of numbers the fast engine (randomized/_batches.py) stands behind the
    reference: on sample_paths' draws, its estimates equal reverse accumulation over the
    stack of samples (the reference the array graphs run)."""
    from minirad.graph.lcg import levels
    from minirad.randomized import _batches
    from minirad.randomized.sampling import _stacked_estimates, on_paths

    g = examples.random_dag(3, 15, 2, 0.3, rng=7)
    samples = [sample_paths(g, k, rng=r) for r in range(25)]
    plan = _batches.Plan(g, draws_per_vertex(g, k), on_paths(g), levels(g))
    drawn = _batches.replay(plan, np.array([s.visited for s in samples]),
                            np.array([s.counts for s in samples]))
    engine = _batches.estimate(plan, drawn, 3, 2, False)
    stacked = _stacked_estimates(g, np.array([s.factors for s in samples]), {})
    np.testing.assert_allclose(engine, stacked, rtol=1e-12, atol=1e-12)


def test_compare_levels_holds_each_exact_variance_against_monte_carlo():
    """The two ways of sampling paths through an array program, each exact variance
    against the sample variance of its own estimates (|z| < 5: 5.7e-7 per entry)."""
    g = array_program(2)
    levels = compare_levels(g, k=1, entries=1)
    np.testing.assert_allclose(levels.jacobian, jacobian(g), rtol=1e-12)
    on_arrays = sampled_jacobians(g, 1, 200_000, rng=8, entries=1)
    on_numbers = sampled_jacobians(scalarize(g), 1, 200_000, rng=9)
    assert np.all(np.abs(variance_z(on_arrays, levels.array_variance)) < 5)
    assert np.all(np.abs(variance_z(on_numbers, levels.scalar_variance)) < 5)
    assert levels.array_variance.sum() != pytest.approx(levels.scalar_variance.sum())


def test_compare_and_the_depth_study_on_array_graphs():
    g = array_program(3)
    r = compare(g, 1, 4000, rng=1, entries=1)
    np.testing.assert_allclose(r.exact, jacobian(g), rtol=1e-12)
    np.testing.assert_allclose(r.exact_variance,
                               path_sampling_variance(g, 1, entries=1), rtol=1e-12)
    assert np.all(np.abs(r.z) < 5)   # false-failure rate 5.7e-7 per entry (CLT)

    def chain(width, depth, partials=None, rng=None):   # a family of array graphs
        return from_chain([np.full((width, 1), 1.0)] + [np.full((width, width), 1.0 / width)]
                          * (depth - 1) + [np.ones((1, width))])
    paths = variance_by_depth(chain, 3, [1, 2, 3], 0.5)
    injected = variance_by_depth(chain, 3, [1, 2, 3], 0.5, method="injection")
    # on these equal paths P = I in mean and every entry of a layer carries the same
    # adjoint, so sampling the entries of a layer is exact for one input
    assert np.all(paths.jacobian == 3.0) and paths.family == "chain"
    assert np.allclose(injected.variance, [
        injection_variance(chain(3, d), chain(3, d).intermediates, 0.5).sum()
        for d in (1, 2, 3)])


def test_entries_are_checked():
    g = array_program()
    with pytest.raises(ValueError, match="at least 1"):
        sample_paths(g, 1, entries=0)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        sample_paths(g, 1, entries=1.5)
    with pytest.raises(TypeError, match="entries must be"):
        sample_paths(g, 1, entries="2")
    with pytest.raises(ValueError, match="cannot be sampled inside"):
        sample_paths(g, 1, entries={g.names[g.inputs[0]]: 1})
    with pytest.raises(ValueError, match="accumulated in reverse"):
        sampled_jacobians(g, 1, 3, direction="forward")


def test_an_exact_variance_beyond_the_float_range_is_refused_not_nan():
    """Issue 39: with paths of products 1e300 and 1 the variance of one estimate is about
    1e600; the recursion returned NaN (inf - inf) with numpy's overflow warnings. Now it
    says which entry overflowed, as every exact method does (AccumulationOverflow)."""
    from minirad.exact.overflow import AccumulationOverflow

    g = LCG.from_edges([("x", "a", 1e150), ("x", "b", 1.0), ("a", "y", 1e150), ("b", "y", 1.0)],
                       inputs=["x"], outputs=["y"])
    assert np.isfinite(jacobian(g)).all()             # the Jacobian itself is 1e300 + 1
    for covariance in (False, True):
        with pytest.raises(AccumulationOverflow, match="the exact variance of the estimate: "
                                                       "dy/dx overflowed to inf"):
            path_sampling_variance(g, 1, covariance=covariance)
    assert compare(g, 1, 10, rng=0).exact_variance is None   # compare reports it unknown
