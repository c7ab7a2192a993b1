"""Tests for minirad.randomized.chains: random matrix injection on Jacobian chains.

Exact checks enumerate every outcome of the random matrices on tiny sizes;
Monte Carlo checks use fixed seeds and state their false-failure rates.
"""

import itertools

import numpy as np
import pytest
from oracles import algorithm1_outcomes, as_law
from oracles import dense_jacobian as exact_jacobian

from minirad import examples
from minirad.randomized.chains import (
    apply_projections,
    chain_graph,
    chain_product,
    inject,
    injected_products,
    injection_variance,
    rademacher_projection,
    sampling_projection,
)
from minirad.randomized.sampling import path_sampling_variance


def random_chain(sizes, seed, zero=False):
    """Factors J_l of shape (sizes[l], sizes[l-1]) with standard normal entries."""
    rng = np.random.default_rng(seed)
    chain = [rng.standard_normal((b, a)) for a, b in zip(sizes, sizes[1:])]
    if zero:
        chain[1][0, 0] = 0.0  # a zero partial is still an edge of the scalar graph
    return chain


# --------------------------------------------------------- enumeration
def all_projections(kind, d, k):
    """Every equally likely outcome of P (d x d) with k samples."""
    if kind == "sample":
        for seq in itertools.product(range(d), repeat=k):
            yield np.diag(np.bincount(seq, minlength=d) * (d / k))
    else:
        for signs in itertools.product((-1.0, 1.0), repeat=d * k):
            r = np.reshape(signs, (d, k)) / np.sqrt(k)
            yield r @ r.T


def injection_law(chain, k, kind, where):
    """Every equally likely outcome of the injected estimate."""
    sizes = [chain[0].shape[1]] + [m.shape[0] for m in chain]
    per_position = [list(all_projections(kind, sizes[l], k)) for l in where]
    outcomes = []
    for ps in itertools.product(*per_position):
        outcomes.append(apply_projections(chain, dict(zip(where, ps))))
    return np.array(outcomes)


def same_law(a, b):
    return a.keys() == b.keys() and all(abs(a[key] - b[key]) < 1e-12 for key in a)


# ------------------------------------------------------------ E[P] = I
@pytest.mark.parametrize("kind,d,k", [("sample", 3, 1), ("sample", 3, 2), ("sample", 4, 3),
                                      ("sample", 2, 5), ("rademacher", 3, 1),
                                      ("rademacher", 3, 2), ("rademacher", 2, 4)])
def test_expected_projection_is_identity_by_enumeration(kind, d, k):
    outcomes = np.array(list(all_projections(kind, d, k)))
    assert np.allclose(outcomes.mean(axis=0), np.eye(d), atol=1e-14)


@pytest.mark.parametrize("kind,d,k", [("sample", 3, 2), ("rademacher", 3, 2),
                                      ("sample", 4, 1), ("rademacher", 2, 3)])
def test_second_moment_identity_used_by_the_exact_variance(kind, d, k):
    # E[P A P] = A + D(A): checked through injection_variance on the chain
    # [column] -> P -> [row], whose variance is a^T (E[P b b^T P] - b b^T) a
    rng = np.random.default_rng(d * 10 + k)
    b, a = rng.standard_normal((d, 1)), rng.standard_normal((1, d))
    chain = [b, a]
    outcomes = injection_law(chain, k, kind, [1])
    assert np.allclose(outcomes.var(axis=0), injection_variance(chain, k, kind), atol=1e-12)


@pytest.mark.parametrize("kind", ["sample", "rademacher"])
def test_expected_projection_is_identity_by_monte_carlo(kind):
    # per entry |mean - I| < 5 sd with the exact sd (sampling: diagonal
    # variance (d-1)/k, off-diagonal 0; Rademacher: diagonal 0, off-diagonal
    # 1/k): false-failure rate < 6e-7 per entry under the CLT
    d, k, n = 5, 2, 4000
    rng = np.random.default_rng(0)
    maker = sampling_projection if kind == "sample" else rademacher_projection
    single = np.array([maker(d, k, rng) for _ in range(n)])
    batched = injected_products([np.eye(d)], k, 100000, kind, rng=1, where=[1])
    sd = (np.sqrt((d - 1) / k) * np.eye(d) if kind == "sample"
          else np.sqrt(1 / k) * (1 - np.eye(d)))
    for draws in (single, batched):
        assert np.all(np.abs(draws.mean(axis=0) - np.eye(d)) <= 5 * sd / np.sqrt(len(draws))
                      + 1e-12)


def test_projections_have_the_promised_shape():
    P = sampling_projection(6, 3, rng=2)
    assert np.count_nonzero(P - np.diag(np.diag(P))) == 0 and np.trace(P) == pytest.approx(6.0)
    assert np.count_nonzero(np.diag(P)) <= 3
    R = rademacher_projection(6, 2, rng=2)
    assert np.allclose(R, R.T) and np.linalg.matrix_rank(R) <= 2
    assert np.allclose(np.diag(R), 1.0)
    assert np.count_nonzero(np.diag(sampling_projection(10, 0.3, rng=0))) <= 3  # ceil(3.0)


# ------------------------------------------------------------ the chain
def test_chain_product_and_apply_projections():
    chain = random_chain([2, 3, 4, 2], 0)
    assert np.allclose(chain_product(chain), chain[2] @ chain[1] @ chain[0])
    P0, P1, P3 = np.diag([2.0, 0.0]), np.diag([0.0, 3.0, 0.0]), np.eye(2) * 2
    want = P3 @ chain[2] @ chain[1] @ P1 @ chain[0] @ P0
    assert np.allclose(apply_projections(chain, {0: P0, 1: P1, 3: P3}), want)


@pytest.mark.parametrize("kind", ["sample", "rademacher"])
def test_inject_draws_one_projection_per_position_in_order(kind):
    chain = random_chain([2, 4, 3, 2], 1)
    rng = np.random.default_rng(5)
    maker = sampling_projection if kind == "sample" else rademacher_projection
    by_hand = apply_projections(chain, {1: maker(4, 2, rng), 2: maker(3, 2, rng)})
    assert np.allclose(inject(chain, 2, kind, rng=5), by_hand)
    assert np.array_equal(inject(chain, 2, kind, rng=5), inject(chain, 2, kind, rng=5))


def test_injected_products_are_reproducible():
    chain = random_chain([1, 3, 3, 1], 2)
    a = injected_products(chain, 1, 50, "rademacher", rng=3)
    assert a.shape == (50, 1, 1)
    assert np.array_equal(a, injected_products(chain, 1, 50, "rademacher", rng=3))


@pytest.mark.parametrize("kind,k,where", [("sample", 1, [1, 2]), ("sample", 2, [0, 1, 3]),
                                          ("rademacher", 1, [1, 2]), ("rademacher", 2, [2])])
def test_unbiased_with_exact_variance_by_enumeration(kind, k, where):
    chain = random_chain([2, 2, 3, 2], 4) if kind == "sample" else random_chain([1, 2, 2, 1], 4)
    outcomes = injection_law(chain, k, kind, where)
    assert np.allclose(outcomes.mean(axis=0), chain_product(chain), atol=1e-12)
    assert np.allclose(outcomes.var(axis=0), injection_variance(chain, k, kind, where),
                       atol=1e-10)


@pytest.mark.parametrize("kind", ["sample", "rademacher"])
@pytest.mark.parametrize("k", [1, 2, 0.5])
def test_unbiased_by_monte_carlo(kind, k):
    # |mean - J| < 5 sd with the exact variance: false-failure rate < 6e-7 per entry (CLT)
    chain = random_chain([2, 5, 6, 4, 3], 7)
    n = 20000
    estimates = injected_products(chain, k, n, kind, rng=8)
    sd = np.sqrt(injection_variance(chain, k, kind) / n)
    assert np.all(np.abs(estimates.mean(axis=0) - chain_product(chain)) < 5 * sd)
    # the sample variance against the exact one, its standard error from the
    # fourth moment: |z| < 5, false-failure rate about 6e-7 per entry
    centred = estimates - estimates.mean(axis=0)
    s2 = centred.var(axis=0, ddof=1)
    se = np.sqrt(((centred**4).mean(axis=0) - s2**2) / n)
    assert np.all(np.abs(s2 - injection_variance(chain, k, kind)) < 5 * se)


@pytest.mark.parametrize("kind", ["sample", "rademacher"])
@pytest.mark.parametrize("seed", range(5))
def test_variance_grows_with_the_number_of_injections(kind, seed):
    # exact: each injection adds a positive semidefinite term (see the docstring)
    chain = random_chain([2, 4, 4, 4, 4, 2], seed)
    nested = [[], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [0, 1, 2, 3, 4, 5]]
    variances = [injection_variance(chain, 2, kind, where) for where in nested]
    assert np.all(variances[0] == 0)
    for fewer, more in zip(variances, variances[1:]):
        assert np.all(more >= fewer - 1e-12) and more.sum() > fewer.sum()


def test_more_samples_per_injection_lower_the_variance():
    chain = random_chain([1, 6, 6, 6, 1], 3)
    v = [injection_variance(chain, k)[0, 0] for k in (1, 2, 4, 8)]
    assert all(a > b for a, b in zip(v, v[1:]))


# ---------------------------------------- the scalar graph and Algorithm 1
def test_chain_graph_is_the_scalar_lcg():
    chain = random_chain([2, 3, 3, 2], 9, zero=True)
    g = chain_graph(chain)
    assert g.n_edges == 2 * 3 + 3 * 3 + 3 * 2  # zeros included
    assert g.names[:2] == ("x1", "x2") and g.names[-2:] == ("y1", "y2")
    assert g.partial("a1", "b1") == 0.0
    assert np.allclose(exact_jacobian(g), chain_product(chain))
    ones = [np.ones((3, 1)), np.ones((3, 3)), np.ones((3, 3)), np.ones((1, 3))]
    assert chain_graph(ones).same_as(examples.interleaved(3, 3))


@pytest.mark.parametrize("seed", range(5))
def test_injection_samples_vertices_of_the_scalar_graph(seed):
    # claim 1: J_L P ... P J_1 is the Jacobian of the scalar graph with every
    # edge into a component scaled by that component's entry of P
    rng = np.random.default_rng(seed)
    chain = random_chain([2, 4, 3, 4, 3], seed)
    sizes = [2, 4, 3, 4, 3]
    projections = {l: sampling_projection(sizes[l], 2, rng) for l in (0, 1, 3, 4)}
    g = chain_graph(chain, projections)
    assert np.allclose(exact_jacobian(g), apply_projections(chain, projections))
    kept = [np.count_nonzero(np.diag(projections[l])) if l in projections else sizes[l]
            for l in range(5)]
    # edges into unsampled components are dropped, and so are those out of unsampled inputs
    assert g.n_edges == kept[0] * kept[1] + sum(kept[l] * sizes[l - 1] for l in (2, 3, 4))


@pytest.mark.parametrize("sizes,seed", [([1, 2, 3, 1], 0), ([1, 3, 2, 2], 1),
                                        ([1, 2, 2, 2, 1], 2)])
def test_one_draw_everywhere_is_algorithm_1_by_enumeration(sizes, seed):
    # claim 3: scalar input, k = 1 at every position 1..L (the output too)
    chain = random_chain(sizes, seed, zero=True)
    g = chain_graph(chain)
    where = list(range(1, len(chain) + 1))
    injected = as_law(injection_law(chain, 1, "sample", where))
    probabilities, outcomes = zip(*algorithm1_outcomes(g, 1))
    assert same_law(injected, as_law(outcomes, probabilities))


@pytest.mark.parametrize("seed", range(4))
def test_one_draw_everywhere_has_the_variance_of_algorithm_1(seed):
    # claim 3 on graphs too big to enumerate: the two exact variances agree
    sizes = [1, 4, 5, 3, 4, 2] if seed % 2 else [1, 6, 6, 6, 1]
    chain = random_chain(sizes, seed, zero=True)
    where = list(range(1, len(chain) + 1))
    assert np.allclose(injection_variance(chain, 1, where=where),
                       path_sampling_variance(chain_graph(chain), 1), rtol=1e-10)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_injection_after_a_scalar_is_algorithm_1_at_that_scalar(k):
    # claim 2: injecting only at position 1 is Algorithm 1 drawing k times at
    # theta while every other vertex keeps its edges
    chain = random_chain([1, 3, 2, 2], k)
    g = chain_graph(chain)
    injected = as_law(injection_law(chain, k, "sample", [1]))
    probabilities, outcomes = zip(*algorithm1_outcomes(g, {"theta": k}))
    assert same_law(injected, as_law(outcomes, probabilities))
    wide = random_chain([1, 7, 5, 4, 3], k)
    assert np.allclose(injection_variance(wide, k, where=[1]),
                       path_sampling_variance(chain_graph(wide), {"theta": k}))


def test_vertex_and_edge_sampling_differ_in_general():
    # same mean, different variance: k = 2 everywhere on Figure 2b/2c, and
    # k = 1 with two inputs (Algorithm 1 then draws at each input separately)
    g = examples.interleaved(3, 3, partials="random", rng=0)
    chain = [np.array([[g.partial("theta", f"a{i}")] for i in (1, 2, 3)])]
    for left, right in ("ab", "bc"):
        chain.append(np.array([[g.partial(f"{left}{j}", f"{right}{i}") for j in (1, 2, 3)]
                               for i in (1, 2, 3)]))
    chain.append(np.array([[g.partial(f"c{j}", "y") for j in (1, 2, 3)]]))
    assert chain_graph(chain).same_as(g)
    injected = injection_variance(chain, 2, where=[1, 2, 3])
    sampled = path_sampling_variance(g, 2)
    assert np.allclose(chain_product(chain), exact_jacobian(g))
    assert abs(injected[0, 0] - sampled[0, 0]) > 1e-3 * sampled[0, 0]
    assert (round(injected[0, 0], 1), round(sampled[0, 0], 1)) == (77.7, 67.9)  # as documented


def test_with_two_inputs_one_draw_matches_column_by_column_but_not_jointly():
    # claim 3's fine print: each column has the same law, the joint law differs
    chain = random_chain([2, 3, 2, 1], 5)
    g = chain_graph(chain)
    where = [1, 2, 3]
    injected = injection_law(chain, 1, "sample", where)
    probabilities, outcomes = zip(*algorithm1_outcomes(g, 1))
    outcomes = np.array(outcomes)
    for column in (0, 1):
        assert same_law(as_law(injected[:, :, column]),
                        as_law(outcomes[:, :, column], probabilities))
    assert np.allclose(injection_variance(chain, 1, where=where),
                       path_sampling_variance(g, 1))
    shared = (injected[:, 0, 0] * injected[:, 0, 1]).mean()
    separate = np.dot(probabilities, outcomes[:, 0, 0] * outcomes[:, 0, 1])
    assert abs(shared - separate) > 1e-3 * abs(separate)


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("chain,match", [
    (np.ones((2, 2)), "list"),
    ([], "list"),
    ([np.ones(3)], "2-D"),
    ([np.ones((2, 1)), np.ones((1, 3))], "J2 has 3 columns"),
    ([np.array([[np.inf]])], "non-finite"),
])
def test_bad_chain(chain, match):
    with pytest.raises((ValueError, TypeError), match=match):
        inject(chain)


@pytest.mark.parametrize("k", [0, -2, 1.5, 0.0])
def test_bad_k(k):
    chain = random_chain([1, 3, 1], 0)
    for call in (lambda: inject(chain, k), lambda: injected_products(chain, k, 3),
                 lambda: injection_variance(chain, k), lambda: sampling_projection(3, k),
                 lambda: rademacher_projection(3, k)):
        with pytest.raises(ValueError, match="k"):
            call()
    with pytest.raises(TypeError, match="k"):
        inject(chain, "2")


def test_bad_n_kind_where_rng_and_d():
    chain = random_chain([1, 3, 3, 1], 0)
    with pytest.raises(ValueError, match="n"):
        injected_products(chain, 1, 0)
    with pytest.raises(TypeError, match="n"):
        injected_products(chain, 1, 2.0)
    with pytest.raises(ValueError, match="kind"):
        inject(chain, 1, kind="gaussian")
    with pytest.raises(ValueError, match="position 4"):
        inject(chain, 1, where=[4])
    with pytest.raises(ValueError, match="twice"):
        inject(chain, 1, where=[1, 1])
    with pytest.raises(TypeError, match="where"):
        inject(chain, 1, where="12")
    with pytest.raises(ValueError, match="rng"):
        inject(chain, 1, rng="seed")
    with pytest.raises(ValueError, match="rng"):
        injected_products(chain, 1, 3, rng=0.5)
    with pytest.raises(ValueError, match="d"):
        sampling_projection(0)


def test_bad_projections():
    chain = random_chain([1, 3, 1], 0)
    with pytest.raises(ValueError, match="3 x 3"):
        apply_projections(chain, {1: np.eye(2)})
    with pytest.raises(TypeError, match="projections"):
        apply_projections(chain, [np.eye(3)])
    with pytest.raises(ValueError, match="diagonal"):
        chain_graph(chain, {1: np.ones((3, 3))})
