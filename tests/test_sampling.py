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
from oracles import algorithm1_outcomes, as_law, chi_square_p, dense_jacobian

from minirad import examples
from minirad.graph.lcg import LCG
from minirad.randomized.experiments import compare, variance_by_depth
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
    with pytest.warns(DeprecationWarning, match="PathSample.draws"):
        assert s.k is s.draws  # the old name still reads
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
    # 5.7e-7 per entry under the CLT (finite support, so the CLT applies)
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
    # |z| < 5 per entry with the exact variance: false-failure rate 5.7e-7 per entry
    g = NAMED[name]()
    n = 20000
    J = sampled_jacobians(g, k, n, rng=3)
    sd = np.sqrt(path_sampling_variance(g, k) / n)
    assert np.all(np.abs(J.mean(axis=0) - dense_jacobian(g)) <= 5 * sd + 1e-9)


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
    # accumulation must give sample_paths' estimates (tests/test_path_batches.py
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


def test_graph_without_input_output_path_raises_value_error():
    g = no_path_graph()
    for call in (lambda: sample_paths(g), lambda: sampled_jacobians(g, 1, 5),
                 lambda: path_sampling_variance(g), lambda: compare(g, 1, 5)):
        with pytest.raises(ValueError, match="no path from any input"):
            call()


def test_exact_variance_refuses_large_graphs_naming_the_limit():
    g = examples.interleaved(5, 5)
    with pytest.raises(ValueError, match="max_vertices=10"):
        path_sampling_variance(g, 1, max_vertices=10)


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
