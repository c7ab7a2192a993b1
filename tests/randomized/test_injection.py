"""Random matrix injection (minirad.randomized.injection) on any graph: the random P's,
chains of Jacobians as graphs, vertices and edges of traced programs, given draws (picks),
the batched estimates and the exact variances, memory, files, bad input.

Oracles: matrices multiplied by hand (numpy), every outcome of the random matrices
enumerated on tiny sizes, Algorithm 1's law enumerated (tests/oracles.py), the scalar graph
of a chain, and Monte Carlo.  Statistical tests use fixed seeds; the unbiasedness tests
take their number of draws from the exact covariance so that a 5% bias fails them, and
state their false-failure rates (tests/oracles.py, "unbiasedness with power").
"""

import itertools
import math
import zlib

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
    paper_mlp,
)

import minirad
from minirad import LCG, examples, trace
from minirad.exact.jacobians import jacobian
from minirad.exact.sweeps import gradient
from minirad.examples import chain_graph
from minirad.graph.files import load_graph, save_graph
from minirad.graph.memory import retained_memory
from minirad.graph.operators import Diagonal, Projection, Retained, SumAxes, compose
from minirad.graph.scalarize import from_chain, scalarize, vertex_copies
from minirad.randomized.injection import (
    activation_sampling_variance,
    draws,
    inject_edge,
    inject_edges,
    inject_vertex,
    injected_jacobians,
    injection_variance,
    random_basis,
    random_projection,
    sample_activations,
)
from minirad.randomized.sampling import path_sampling_variance
from minirad.tracing import name
from minirad.tracing.ops import relu
from minirad.tracing.rules import avg_pool2d, conv2d, softmax_cross_entropy

LAWS = ("sample", "rademacher")


def random_chain(sizes, seed, zero=False):
    """Factors J_l of shape (sizes[l], sizes[l-1]) with standard normal entries."""
    rng = np.random.default_rng(seed)
    chain = [rng.standard_normal((b, a)) for a, b in zip(sizes, sizes[1:])]
    if zero:
        chain[1][0, 0] = 0.0  # a zero partial is still an edge of the scalar graph
    return chain


def product(chain, projections=None):
    """J_L P_{L-1} ... P_1 J_1 P_0 by hand: ``projections[l]`` after position l's vector
    (0: the input, L: the output)."""
    projections = projections or {}
    x = projections.get(0, np.eye(chain[0].shape[1]))
    for l, factor in enumerate(chain, start=1):
        x = factor @ x
        if l in projections:
            x = projections[l] @ x
    return x


def at(positions, chain):
    """The vertices of ``from_chain(chain)`` at chain positions (theta, v1, ..., y)."""
    return [("theta" if l == 0 else "y" if l == len(chain) else f"v{l}") for l in positions]


# ------------------------------------------------------------------ the random P
def all_projections(law, d, k):
    """Every equally likely outcome of P (d x d) with k samples."""
    if law == "sample":
        for seq in itertools.product(range(d), repeat=k):
            yield np.diag(np.bincount(seq, minlength=d) * (d / k))
    else:
        for signs in itertools.product((-1.0, 1.0), repeat=d * k):
            r = np.reshape(signs, (d, k)) / np.sqrt(k)
            yield r @ r.T


def injection_law(chain, k, law, where):
    """Every equally likely outcome of the injected estimate."""
    sizes = [chain[0].shape[1]] + [m.shape[0] for m in chain]
    per_position = [list(all_projections(law, sizes[l], k)) for l in where]
    return np.array([product(chain, dict(zip(where, ps)))
                     for ps in itertools.product(*per_position)])


def same_law(a, b):
    return a.keys() == b.keys() and all(abs(a[key] - b[key]) < 1e-12 for key in a)


@pytest.mark.parametrize("law,d,k", [("sample", 3, 1), ("sample", 3, 2), ("sample", 4, 3),
                                        ("sample", 2, 5), ("rademacher", 3, 1),
                                        ("rademacher", 3, 2), ("rademacher", 2, 4)])
def test_expected_projection_is_identity_by_enumeration(law, d, k):
    outcomes = np.array(list(all_projections(law, d, k)))
    assert np.allclose(outcomes.mean(axis=0), np.eye(d), atol=1e-14)


@pytest.mark.parametrize("law,d,k", [("sample", 3, 2), ("rademacher", 3, 2),
                                        ("sample", 4, 1), ("rademacher", 2, 3)])
def test_second_moment_identity_used_by_the_exact_variance(law, d, k):
    # E[P A P] = A + D(A): checked through injection_variance on the chain
    # [column] -> P -> [row], whose variance is a^T (E[P b b^T P] - b b^T) a
    rng = np.random.default_rng(d * 10 + k)
    chain = [rng.standard_normal((d, 1)), rng.standard_normal((1, d))]
    outcomes = injection_law(chain, k, law, [1])
    assert np.allclose(outcomes.var(axis=0),
                       injection_variance(from_chain(chain), ["v1"], k, law), atol=1e-12)


@pytest.mark.parametrize("law", LAWS)
def test_expected_projection_is_identity_by_monte_carlo(law):
    # per entry |mean - I| < 5 sd with the exact sd (sampling: diagonal variance (d-1)/k,
    # off-diagonal 0; Rademacher: diagonal 0, off-diagonal 1/k): false-failure rate
    # < 6e-7 per entry under the CLT; one P at a time, and the batched estimates of the
    # chain theta -> y (J = I) with P at y
    d, k = 5, 2
    rng = np.random.default_rng(0)
    single = np.array([random_projection(d, k, law, rng=rng) for _ in range(4000)])
    batched = injected_jacobians(from_chain([np.eye(d)]), ["y"], k, 100000, law, rng=1)
    sd = (np.sqrt((d - 1) / k) * np.eye(d) if law == "sample"
          else np.sqrt(1 / k) * (1 - np.eye(d)))
    for found in (single, batched):
        assert np.all(np.abs(found.mean(axis=0) - np.eye(d)) <= 5 * sd / np.sqrt(len(found))
                      + 1e-12)
    R = random_basis(5, 2, law, n_rows=4000, rng=7)        # one draw per row
    P = np.einsum("ndk,nek->nde", R, R)
    assert np.all(np.abs(P.mean(axis=0) - np.eye(d)) <= 5 * sd / np.sqrt(4000) + 1e-12)


def test_projections_have_the_promised_shape():
    P = random_projection(6, 3, rng=2)
    assert np.count_nonzero(P - np.diag(np.diag(P))) == 0 and np.trace(P) == pytest.approx(6.0)
    assert np.count_nonzero(np.diag(P)) <= 3
    R = random_projection(6, 2, "rademacher", rng=2)
    assert np.allclose(R, R.T) and np.linalg.matrix_rank(R) <= 2
    assert np.allclose(np.diag(R), 1.0)
    assert np.count_nonzero(np.diag(random_projection(10, 0.3, rng=0))) <= 3  # ceil(3.0)
    R = random_basis(4, 2, rng=0)
    assert np.allclose((R ** 2).sum(axis=1), [0.0, 0.0, 2.0, 2.0])         # (d/k) x counts


# ------------------------------------------------------- chains of Jacobians as graphs
def test_a_chain_is_the_graph_from_chain_and_its_scalar_graph_is_chain_graph():
    chain = random_chain([2, 3, 4, 2], 0)
    g = from_chain(chain)
    assert np.allclose(jacobian(g), chain[2] @ chain[1] @ chain[0])
    s = scalarize(g)
    old = chain_graph(chain)
    assert (s.n_vertices, s.n_edges) == (old.n_vertices, old.n_edges)
    np.testing.assert_allclose(minirad.jacobian(s), minirad.jacobian(old), rtol=1e-12)


@pytest.mark.parametrize("law", LAWS)
def test_injecting_at_chain_vertices_is_the_matrix_product_with_p(law):
    chain = random_chain([2, 4, 3, 2], 1)
    g = from_chain(chain)
    rng = np.random.default_rng(5)
    by_hand = product(chain, {1: random_projection(4, 2, law, rng=rng),
                              2: random_projection(3, 2, law, rng=rng)})
    rng = np.random.default_rng(5)
    h = inject_vertex(inject_vertex(g, "v1", 2, law, rng=rng), "v2", 2, law, rng=rng)
    np.testing.assert_allclose(jacobian(h), by_hand, rtol=1e-12)
    # at the output the projection goes on the edges into it
    h = inject_vertex(g, "y", 1, law, rng=6)
    P = h.labels[-1].parts[0].to_dense()
    np.testing.assert_allclose(jacobian(h), product(chain, {3: P}), rtol=1e-12)


def test_batched_estimates_are_reproducible_and_draw_per_vertex_in_order():
    g = from_chain(random_chain([1, 3, 3, 1], 2))
    a = injected_jacobians(g, ["v1", "v2"], 1, 50, "rademacher", rng=3)
    assert a.shape == (50, 1, 1)
    assert np.array_equal(a, injected_jacobians(g, ["v1", "v2"], 1, 50, "rademacher", rng=3))
    assert not np.array_equal(a, injected_jacobians(g, ["v1", "v2"], 1, 50, "rademacher",
                                                    rng=4))


@pytest.mark.parametrize("law,k,where", [("sample", 1, [1, 2]), ("sample", 2, [0, 1, 3]),
                                            ("rademacher", 1, [1, 2]), ("rademacher", 2, [2])])
def test_unbiased_with_exact_variance_by_enumeration(law, k, where):
    chain = random_chain([2, 2, 3, 2], 4) if law == "sample" else random_chain([1, 2, 2, 1], 4)
    outcomes = injection_law(chain, k, law, where)
    g = from_chain(chain)
    assert np.allclose(outcomes.mean(axis=0), product(chain), atol=1e-12)
    assert np.allclose(outcomes.var(axis=0), injection_variance(g, at(where, chain), k, law),
                       atol=1e-10)
    # the batched estimates draw from that law (chi-square p > 1e-6: false-failure 1e-6)
    estimates = injected_jacobians(g, at(where, chain), k, 20000, law, rng=11)
    assert chi_square_p(estimates, as_law(outcomes)) > 1e-6


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("k", [1, 2, 0.5])
def test_unbiased_by_monte_carlo_with_power(law, k):
    # the number of estimates from the exact covariance, so that a 5% bias fails the
    # test (tests/oracles.py: false-failure rate below (m + 1) x 5.7e-7).  Positive
    # partials: with random signs the paths cancel, and the same power takes 10^7 draws
    rng = np.random.default_rng(7)
    chain = [rng.uniform(0.5, 1.5, (b, a)) for a, b in zip([2, 4, 4], [4, 4, 3])]
    g = from_chain(chain)
    where = ["v1", "v2"]
    covariance = injection_variance(g, where, k, law, covariance=True)
    exact = product(chain)
    n = draws_for_power(exact[0], covariance[0])
    assert n <= 250_000
    estimates = injected_jacobians(g, where, k, n, law, rng=8)
    for row in range(3):
        assert_unbiased(estimates[:, row], exact[row], covariance[row])
    assert_power(estimates[:, 0], exact[0], covariance[0])
    # the sample variance against the exact one, its standard error from the
    # fourth moment: |z| < 5, false-failure rate about 6e-7 per entry
    variance = injection_variance(g, where, k, law)
    centred = estimates - estimates.mean(axis=0)
    s2 = centred.var(axis=0, ddof=1)
    se = np.sqrt(((centred**4).mean(axis=0) - s2**2) / len(estimates))
    assert np.all(np.abs(s2 - variance) < 5 * se)


@pytest.mark.parametrize("law", LAWS)
@pytest.mark.parametrize("seed", range(5))
def test_variance_grows_with_the_number_of_injections(law, seed):
    # exact: each injection adds a positive semidefinite term (see the docstring)
    chain = random_chain([2, 4, 4, 4, 4, 2], seed)
    g = from_chain(chain)
    nested = [[], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [0, 1, 2, 3, 4, 5]]
    variances = [injection_variance(g, at(where, chain), 2, law) for where in nested]
    assert np.all(variances[0] == 0)
    for fewer, more in zip(variances, variances[1:]):
        assert np.all(more >= fewer - 1e-12) and more.sum() > fewer.sum()


def test_more_samples_per_injection_lower_the_variance():
    chain = random_chain([1, 6, 6, 6, 1], 3)
    g = from_chain(chain)
    v = [injection_variance(g, ["v1", "v2", "v3"], k)[0, 0] for k in (1, 2, 4, 8)]
    assert all(a > b for a, b in zip(v, v[1:]))


# ---------------------------------------- the scalar graph and Algorithm 1
def test_chain_graph_is_the_scalar_lcg():
    chain = random_chain([2, 3, 3, 2], 9, zero=True)
    g = chain_graph(chain)
    assert g.n_edges == 2 * 3 + 3 * 3 + 3 * 2  # zeros included
    assert g.names[:2] == ("x1", "x2") and g.names[-2:] == ("y1", "y2")
    assert g.partial("a1", "b1") == 0.0
    assert np.allclose(dense_jacobian(g), product(chain))
    ones = [np.ones((3, 1)), np.ones((3, 3)), np.ones((3, 3)), np.ones((1, 3))]
    assert chain_graph(ones).same_as(examples.interleaved(3, 3))


@pytest.mark.parametrize("seed", range(5))
def test_injection_samples_vertices_of_the_scalar_graph(seed):
    # claim 1: J_L P ... P J_1 is the Jacobian of the scalar graph with every
    # edge into a component scaled by that component's entry of P
    rng = np.random.default_rng(seed)
    sizes = [2, 4, 3, 4, 3]
    chain = random_chain(sizes, seed)
    projections = {l: random_projection(sizes[l], 2, rng=rng) for l in (0, 1, 3, 4)}
    g = chain_graph(chain, projections)
    assert np.allclose(dense_jacobian(g), product(chain, projections))
    kept = [np.count_nonzero(np.diag(projections[l])) if l in projections else sizes[l]
            for l in range(5)]
    # edges into unsampled components are dropped, and so are those out of unsampled inputs
    assert g.n_edges == kept[0] * kept[1] + sum(kept[l] * sizes[l - 1] for l in (2, 3, 4))


def test_injecting_at_a_vertex_then_scalarizing_samples_its_scalar_copies():
    g = small_network()
    h = inject_vertex(g, "a", 0.4, "sample", axis=1, batch_axis=0, per_row=True, rng=3)
    P = h.labels[h.injections[0]["edges"][0]].parts[-1]
    weights = (P.R ** 2).sum(axis=-1)          # diag of P per row: (d/k) x times drawn
    assert np.allclose(P.to_dense(), np.diag(weights.ravel()))
    # sample the scalar copies of "a" in the scalar graph of g: scale their out-edges
    s = scalarize(g)
    copies = list(vertex_copies(g, "a"))
    scale = dict(zip(copies, weights.ravel()))
    partials = np.array([p * scale.get(u, 1.0) for u, _, p in s.edges()])
    keep = partials != 0
    sampled = LCG(s.names, s.sources[keep], s.targets[keep], partials[keep], s.inputs,
                  s.outputs)
    injected = scalarize(h)
    np.testing.assert_allclose(minirad.jacobian(injected), minirad.jacobian(sampled),
                               rtol=1e-10, atol=1e-12)
    assert injected.n_edges == sampled.n_edges
    np.testing.assert_allclose(minirad.jacobian(injected), jacobian(h), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("sizes,seed", [([1, 2, 3, 1], 0), ([1, 3, 2, 2], 1),
                                        ([1, 2, 2, 2, 1], 2)])
def test_one_draw_everywhere_is_algorithm_1_by_enumeration(sizes, seed):
    # claim 3: scalar input, k = 1 at every position 1..L (the output too)
    chain = random_chain(sizes, seed, zero=True)
    where = list(range(1, len(chain) + 1))
    injected = as_law(injection_law(chain, 1, "sample", where))
    probabilities, outcomes = zip(*algorithm1_outcomes(chain_graph(chain), 1))
    assert same_law(injected, as_law(outcomes, probabilities))


@pytest.mark.parametrize("seed", range(4))
def test_one_draw_everywhere_has_the_variance_of_algorithm_1(seed):
    # claim 3 on graphs too big to enumerate: the two exact variances agree
    sizes = [1, 4, 5, 3, 4, 2] if seed % 2 else [1, 6, 6, 6, 1]
    chain = random_chain(sizes, seed, zero=True)
    where = at(range(1, len(chain) + 1), chain)
    assert np.allclose(injection_variance(from_chain(chain), where, 1),
                       path_sampling_variance(chain_graph(chain), 1), rtol=1e-10)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_injection_after_a_scalar_is_algorithm_1_at_that_scalar(k):
    # claim 2: injecting only at position 1 is Algorithm 1 drawing k times at
    # theta while every other vertex keeps its edges
    chain = random_chain([1, 3, 2, 2], k)
    injected = as_law(injection_law(chain, k, "sample", [1]))
    probabilities, outcomes = zip(*algorithm1_outcomes(chain_graph(chain), {"theta": k}))
    assert same_law(injected, as_law(outcomes, probabilities))
    wide = random_chain([1, 7, 5, 4, 3], k)
    assert np.allclose(injection_variance(from_chain(wide), ["v1"], k),
                       path_sampling_variance(chain_graph(wide), {"theta": k}))


def test_vertex_and_edge_sampling_differ_in_general():
    # same mean, different variance: k = 2 everywhere on Figure 2b/2c
    g = examples.interleaved(3, 3, partials="random", rng=0)
    chain = [np.array([[g.partial("theta", f"a{i}")] for i in (1, 2, 3)])]
    for left, right in ("ab", "bc"):
        chain.append(np.array([[g.partial(f"{left}{j}", f"{right}{i}") for j in (1, 2, 3)]
                               for i in (1, 2, 3)]))
    chain.append(np.array([[g.partial(f"c{j}", "y") for j in (1, 2, 3)]]))
    assert chain_graph(chain).same_as(g)
    injected = injection_variance(from_chain(chain), ["v1", "v2", "v3"], 2)
    sampled = path_sampling_variance(g, 2)
    assert np.allclose(product(chain), dense_jacobian(g))
    assert (round(injected[0, 0], 1), round(sampled[0, 0], 1)) == (77.7, 67.9)  # as documented


def test_with_two_inputs_one_draw_matches_column_by_column_but_not_jointly():
    # claim 3's fine print: each column has the same law, the joint law differs
    chain = random_chain([2, 3, 2, 1], 5)
    g = chain_graph(chain)
    injected = injection_law(chain, 1, "sample", [1, 2, 3])
    probabilities, outcomes = zip(*algorithm1_outcomes(g, 1))
    outcomes = np.array(outcomes)
    for column in (0, 1):
        assert same_law(as_law(injected[:, :, column]),
                        as_law(outcomes[:, :, column], probabilities))
    assert np.allclose(injection_variance(from_chain(chain), ["v1", "v2", "y"], 1),
                       path_sampling_variance(g, 1))
    shared = (injected[:, 0, 0] * injected[:, 0, 1]).mean()
    separate = np.dot(probabilities, outcomes[:, 0, 0] * outcomes[:, 0, 1])
    assert abs(shared - separate) > 1e-3 * abs(separate)


# ---------------------------------------------------- on traced programs
def small_network(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((3, 4))

    def f(W, V):
        return (np.tanh(name(relu(X @ W), "a") @ V) ** 2).sum()
    return trace(f, rng.standard_normal((4, 3)), rng.standard_normal((3, 2)))


def flat_gradient(g):
    return np.concatenate([x.ravel() for x in gradient(g)])


VERTEX_WAYS = {"vertex per-row": dict(axis=1, batch_axis=0, per_row=True),
               "vertex shared": dict(axis=1, batch_axis=0, per_row=False),
               "vertex flat": {}}


@pytest.mark.parametrize("how", sorted(VERTEX_WAYS))
@pytest.mark.parametrize("law", LAWS)
def test_vertex_injection_is_unbiased_with_its_exact_variance(how, law):
    # batched estimates with the law of inject_vertex (checked by the loop below), as
    # many as draws_for_power asks: a 5% bias fails the test (false-failure rates:
    # tests/oracles.py, and |z| < 5 on the sample variances: 5.7e-7 per entry)
    g = small_network()
    options = VERTEX_WAYS[how]
    exact = flat_gradient(g)
    covariance = injection_variance(g, ["a"], 2, law, covariance=True, **options)[0]
    n = draws_for_power(exact, covariance)
    estimates = injected_jacobians(g, ["a"], 2, n, law,
                                   rng=zlib.crc32(f"{how}/{law}".encode()), **options)[:, 0]
    assert_unbiased(estimates, exact, covariance)
    assert_power(estimates, exact, covariance)
    # one graph at a time: the same law (400 estimates, two-sample z on the means with the
    # exact variance: false-failure rate 5.7e-7 per entry)
    rng = np.random.default_rng(3)
    single = np.array([flat_gradient(inject_vertex(g, "a", 2, law, rng=rng, **options))
                       for _ in range(400)])
    sd = np.sqrt(np.diag(covariance) * (1 / 400 + 1 / n))
    assert np.all(np.abs(single.mean(axis=0) - estimates.mean(axis=0)) <= 5 * sd + 1e-9)
    assert single.std(axis=0).max() > 0      # it is random


EDGE_WAYS = {"edge per-row": (8, True, "outer"), "edge shared": (8, False, "outer"),
             "generic edge": (24, True, "mask")}


@pytest.mark.slow
@pytest.mark.parametrize("how", sorted(EDGE_WAYS) + ["activations"])
@pytest.mark.parametrize("law", LAWS)
def test_edge_injection_is_unbiased_with_its_exact_variance(how, law):
    # one graph per estimate, as many as draws_for_power asks (k chosen so that this
    # is at most 6,000 here: k draws with replacement may exceed d); false-failure
    # rates in tests/oracles.py, and 5.7e-7 per entry for the sample variance against
    # the exact one
    g = small_network()
    exact = flat_gradient(g)
    rng = np.random.default_rng(zlib.crc32(f"{how}/{law}".encode()))
    if how == "activations":
        covariance = activation_sampling_variance(g, 0.75, law, covariance=True)[0]

        def draw():
            return sample_activations(g, 0.75, law, rng=rng)
    else:
        k, per_row, kind = EDGE_WAYS[how]
        edge = next(e for e, op in enumerate(g.labels) if op.kind == kind)
        covariance = injection_variance(g, (), k, law, edges=[edge], per_row=per_row,
                                        covariance=True)[0]

        def draw():
            return inject_edge(g, edge, k, law, per_row=per_row, rng=rng)
    n = draws_for_power(exact, covariance)
    assert n <= 6000
    estimates = np.array([flat_gradient(draw()) for _ in range(n)])
    assert_unbiased(estimates, exact, covariance)
    assert_power(estimates, exact, covariance)
    centred = estimates - estimates.mean(axis=0)
    s2 = centred.var(axis=0, ddof=1)
    se = np.sqrt(((centred**4).mean(axis=0) - s2**2) / n)
    random = np.diag(covariance) > 0
    assert np.all(np.abs(s2 - np.diag(covariance))[random] < 5 * se[random])


def test_activation_variance_by_enumerating_the_picks():
    """The exact variance of activation sampling against every equally likely set of
    picks, each injected with inject_edge(picks=): X (2 x 3) keeps k = 1 entry per row."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((2, 3))
    g = trace(lambda W: (np.tanh(X @ W) ** 2).sum(), rng.standard_normal((3, 2)))
    edge = next(e for e, op in enumerate(g.labels) if op.kind == "outer")
    outcomes = np.array([flat_gradient(inject_edge(g, edge, picks=np.array([[a], [b]])))
                         for a in range(3) for b in range(3)])
    np.testing.assert_allclose(outcomes.mean(axis=0), flat_gradient(g), rtol=1e-12)
    np.testing.assert_allclose(activation_sampling_variance(g, 1)[0], outcomes.var(axis=0),
                               rtol=1e-10, atol=1e-14)
    shared = np.array([flat_gradient(inject_edge(g, edge, picks=[a], per_row=False))
                       for a in range(3)])
    np.testing.assert_allclose(activation_sampling_variance(g, 1, per_row=False)[0],
                               shared.var(axis=0), rtol=1e-10, atol=1e-14)


def test_injection_on_a_graph_of_numbers_is_the_identity_and_is_recorded():
    """A number has one entry, so P = 1 at a vertex or on an edge between numbers:
    the labels stay, the injection is recorded, the variance is 0."""
    g = examples.lecture()
    for law in LAWS:
        h = inject_vertex(g, "v3", 2, law, rng=0)
        assert np.array_equal(h.labels, g.labels) and h.algebra is g.algebra
        assert h.injections[0]["d"] == 1 and h.injections[0]["at"] == "v3"
        e = inject_edge(g, 0, 3, law, rng=0)
        assert np.array_equal(e.labels, g.labels) and e.injections[0]["d"] == 1
        assert np.array_equal(injected_jacobians(g, ["v3"], 2, 3, law, rng=0)[0],
                              minirad.jacobian(g))
        assert np.all(injection_variance(g, ["v3"], 2, law, edges=[0]) == 0)
    assert sample_activations(g, 0.5, rng=0) is g            # no activation kept


def test_a_scalar_vertex_of_an_array_program_is_not_sampled():
    """In a mixed graph the number s = x.sum() feeds an array: P at s is 1, while P at
    the array v = exp(x) samples."""
    g = trace(lambda x: (np.exp(x) * x.sum()).sum(), np.array([0.1, 0.4, -0.3]))
    s = next(v for v in range(g.n_vertices) if g.shape(v) == () and g.kind(v) != "output")
    assert np.all(injection_variance(g, [s], 1) == 0)
    assert np.all(injection_variance(g, [g.names[1]], 1) > 0)


def test_random_basis_has_expectation_identity():
    # exact per-entry variances of P = R R^T: sampling, (d-1)/k on the diagonal and 0 off
    # it; Rademacher, 0 on the diagonal and 1/k off it.  |z| < 5: 5.7e-7 per entry
    d, k, n = 5, 2, 4000
    for law, sd in (("sample", np.sqrt((d - 1) / k) * np.eye(d)),
                       ("rademacher", np.sqrt(1 / k) * (1 - np.eye(d)))):
        R = random_basis(d, k, law, n_rows=n, rng=7)
        P = np.einsum("ndk,nek->nde", R, R)
        assert np.all(np.abs(P.mean(axis=0) - np.eye(d)) <= 5 * sd / np.sqrt(n) + 1e-12)


def test_k_as_count_or_fraction_and_bad_input():
    assert draws(784, 0.1) == 79 and draws(300, 0.1) == 30 and draws(10, 1.0) == 10
    with pytest.raises(ValueError, match="fraction must lie in"):
        draws(10, 1.5)
    with pytest.raises(ValueError, match="at least 1"):
        draws(10, 0)
    with pytest.raises(TypeError, match="k must be a count"):
        draws(10, "3")
    g = small_network()
    with pytest.raises(ValueError, match="law must be one of"):
        inject_vertex(g, "a", 2, "bernoulli")
    with pytest.raises(ValueError, match="unknown vertex 'b'"):
        inject_vertex(g, "b", 2)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        inject_vertex(g, "a", 2, axis=3)
    with pytest.raises(ValueError, match="must differ"):
        inject_vertex(g, "a", 2, axis=1, batch_axis=1)
    with pytest.raises(ValueError, match="does not exist"):
        inject_edge(g, 99, 2)
    with pytest.raises(TypeError, match="works on an LCG"):
        inject_vertex([np.eye(2)], "a", 1)


def test_bad_input_to_the_estimates_and_variances():
    g = from_chain(random_chain([1, 3, 3, 1], 0))
    with pytest.raises(ValueError, match="n"):
        injected_jacobians(g, ["v1"], 1, 0)
    with pytest.raises(TypeError, match="n"):
        injected_jacobians(g, ["v1"], 1, 2.0)
    with pytest.raises(ValueError, match="law"):
        injected_jacobians(g, ["v1"], 1, 2, "gaussian")
    with pytest.raises(ValueError, match="listed twice"):
        injection_variance(g, ["v1", "v1"], 1)
    with pytest.raises(TypeError, match="list of vertices"):
        injection_variance(g, "v1", 1)
    with pytest.raises(ValueError, match="unknown vertex"):
        injection_variance(g, ["v9"], 1)
    with pytest.raises(ValueError, match="rng"):
        injected_jacobians(g, ["v1"], 1, 3, rng="seed")
    with pytest.raises(ValueError, match="k"):
        injection_variance(g, ["v1"], 0)
    with pytest.raises(ValueError, match="max_entries=3"):
        injection_variance(g, ["v1"], 1, max_entries=3)
    with pytest.raises(ValueError, match="does not exist"):
        injection_variance(g, edges=[7])
    with pytest.raises(ValueError, match="d"):
        random_projection(0, 1)


@pytest.mark.parametrize("chain,error,match", [
    (np.ones((2, 2)), TypeError, "list"),
    ([], TypeError, "list"),
    ([np.ones(3)], ValueError, "2-D"),
    ([np.ones((2, 1)), np.ones((1, 3))], ValueError, "J2 has 3 columns"),
    ([np.array([[np.inf]])], ValueError, "non-finite"),
])
def test_bad_chain(chain, error, match):
    with pytest.raises(error, match=match):
        chain_graph(chain)


def test_bad_projections():
    chain = random_chain([1, 3, 1], 0)
    with pytest.raises(ValueError, match="3 x 3"):
        chain_graph(chain, {1: np.eye(2)})
    with pytest.raises(TypeError, match="projections"):
        chain_graph(chain, [np.eye(3)])
    with pytest.raises(ValueError, match="diagonal"):
        chain_graph(chain, {1: np.ones((3, 3))})
    with pytest.raises(ValueError, match="position 4"):
        chain_graph(chain, {4: np.eye(1)})


# ------------------------------------------------------------------ memory, files
@pytest.mark.parametrize("per_row", [True, False])
@pytest.mark.parametrize("law", LAWS)
def test_paper_mlp_at_fraction_01_keeps_8285_bytes_per_example(law, per_row):
    mlp, params = paper_mlp()
    g = trace(mlp, *params)
    h = sample_activations(g, 0.1, law=law, per_row=per_row, rng=0)
    # (79 + 30 + 30 + 30 + 10) floats of 4 bytes + (300 + 300 + 300) one-bit ReLU masks
    assert retained_memory(h).per_example(150) == (79 + 30 + 30 + 30 + 10) * 4 + 900 / 8 == 828.5
    assert [r["k"] for r in h.injections] == [79, 30, 30, 30]
    assert all(gr.dtype == np.float32 for gr in gradient(h))


def paper_convnet(batch=2, rng=0):
    """The paper's CIFAR-10 ConvNet (Appendix A), float32."""
    rng = np.random.default_rng(rng)
    x = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    kernels = [(16, 3, 5, 5), (32, 16, 5, 5), (32, 32, 5, 5), (32, 32, 5, 5)]
    params = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in kernels]
    params.append((rng.standard_normal((32 * 8 * 8, 10)) * 0.01).astype(np.float32))

    def net(x, W1, W2, W3, W4, W5):
        h = relu(conv2d(x, W1, padding=2))
        h = avg_pool2d(relu(conv2d(h, W2, padding=2)), 2)
        h = relu(conv2d(h, W3, padding=2))
        h = avg_pool2d(relu(conv2d(h, W4, padding=2)), 2).reshape(batch, -1)
        return softmax_cross_entropy(h @ W5, labels)
    return trace(net, x, *params, wrt=range(1, 6))


def test_paper_convnet_memory_and_where_it_differs_from_appendix_a():
    g = paper_convnet()
    inputs = [3 * 32 * 32, 16 * 32 * 32, 32 * 16 * 16, 32 * 16 * 16, 32 * 8 * 8]
    # Appendix A's baseline: every conv/linear input and the logits, 4 bytes each
    paper = (sum(inputs) + 10) * 4
    assert paper == 151_592
    # our rules also charge the masks of the two ReLUs that feed an average pool: their
    # outputs are not kept (the pool's are), so the masks cannot be rebuilt for free;
    # the paper assumes they are recomputed (which means re-running the convolution)
    masks_before_pools = (32 * 32 * 32 + 32 * 16 * 16) / 8
    assert retained_memory(g).per_example(2) == paper + masks_before_pools
    # activation sampling at 0.1 samples each layer's *input* (the image, not its im2col
    # patches) over its spatial positions, per example and channel (the paper's Fig. 4):
    # ceil(0.1 H W) per channel, 3 x 103 + 16 x 103 + 32 x 26 + 32 x 26 floats, and the
    # linear layer's 205 of 2048; logits unsampled; ReLU masks at 1 bit per entry of each
    # ReLU (the paper counts the two masks before the pools at their pooled size)
    h = sample_activations(g, 0.1, rng=0)
    sampled = [3 * 103, 16 * 103, 32 * 26, 32 * 26, 205]
    assert [c * math.ceil(0.1 * d / c) for c, d in zip([3, 16, 32, 32, 1], inputs)] == sampled
    masks = (16 * 32 * 32 + 32 * 32 * 32 + 32 * 16 * 16 + 32 * 16 * 16) / 8
    assert retained_memory(h).per_example(2) == (sum(sampled) + 10) * 4 + masks


@pytest.mark.slow
@pytest.mark.parametrize("per_row", [True, False])
def test_sampling_a_gathered_source_is_unbiased(per_row):
    # a convolution's image sampled per example (and channel) over its spatial
    # positions; draws and rates as in the edge test above
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 1, 4, 4))
    g = trace(lambda w: (np.tanh(conv2d(x, w, padding=1)) ** 2).sum(),
                     rng.standard_normal((2, 1, 3, 3)))
    edge = next(e for e, op in enumerate(g.labels) if op.kind == "outer")
    assert g.labels[edge].gathered is not None
    exact = gradient(g)[0].ravel()
    covariance = injection_variance(g, (), 10, edges=[edge], per_row=per_row,
                                    covariance=True)[0]
    n = draws_for_power(exact, covariance)
    assert n <= 5000
    estimates = [gradient(inject_edge(g, edge, 10, per_row=per_row, rng=rng))[0].ravel()
                 for _ in range(n)]
    assert_unbiased(estimates, exact, covariance)
    assert_power(estimates, exact, covariance)
    assert inject_edge(g, edge, 5, rng=0).labels[edge].retained[0].nbits == 2 * 5 * 64


def test_injected_graphs_record_and_round_trip(tmp_path):
    g = inject_vertex(sample_activations(small_network(), 0.5, rng=1), "a", 2, "rademacher",
                      axis=1, batch_axis=0, rng=2)
    assert [r["kind"] for r in g.injections] == ["edge", "edge", "vertex"]
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    assert h.injections == g.injections
    np.testing.assert_allclose(jacobian(h), jacobian(g))
    kept, before = retained_memory(h), retained_memory(g)
    assert (kept.per_edge, kept.notes) == (before.per_edge, before.notes)


# ------------------------------------------------ given draws and diagonals (picks)
def two_uses():
    """x is kept by two diagonal edges: d exp(x)/dx keeps exp(x), d(x*x)/dx keeps x."""
    x = np.array([0.3, -1.2, 0.7, 2.0, -0.4])
    return trace(lambda x: (np.exp(x) * 0.5 + name(x * x, "sq")).sum(), x)


def dense_projection(picks, d):
    """P = (d/k) sum_j e_{p_j} e_{p_j}^T, by hand."""
    P = np.zeros((d, d))
    for i in picks:
        P[i, i] += d / len(picks)
    return P


def test_given_picks_on_a_diagonal_edge_fold_into_the_diagonal():
    g = two_uses()
    e = g.edge_index("x", "v1")
    picks = np.array([4, 1, 4])
    h = inject_edge(g, e, picks=picks)
    op = h.labels[e]
    assert op.kind == "diagonal"
    J = g.labels[e].to_dense()
    np.testing.assert_allclose(op.to_dense(), J @ dense_projection(picks, 5), rtol=1e-15)
    # 3 of the 5 float64 entries and 3 one-byte indices, in place of 5 floats
    assert op.retained_bytes == 3 * 9 and g.labels[e].retained_bytes == 40
    record = h.injections[-1]
    assert (record["k"], record["d"], record["given_picks"]) == (3, 5, True)


def test_drawn_sampling_of_a_diagonal_is_the_projection_it_replaces():
    """With rng the draws are those random_basis makes, so the folded diagonal is J P for
    the P that the generic J ∘ P form would have used."""
    g = two_uses()
    e = g.edge_index("x", "v1")
    h = inject_edge(g, e, 2, rng=11)
    P = Projection((5,), random_basis(5, 2, rng=11))
    np.testing.assert_allclose(h.labels[e].to_dense(),
                               compose(g.labels[e], P).to_dense(), rtol=1e-15)


@pytest.mark.slow
def test_sampled_diagonals_are_unbiased():
    # the two uses of x sampled independently (k = 4 of 5 each; x positive, so that the
    # two terms of each entry do not cancel); draws from the exact covariance (a 5% bias
    # fails the test), rates in tests/oracles.py
    x = np.array([0.3, 1.2, 0.7, 2.0, 0.4])
    g = trace(lambda x: (np.exp(x) * 0.5 + name(x * x, "sq")).sum(), x)
    exact = gradient(g)[0]
    edges = [("x", "v1"), ("x", "sq")]
    covariance = injection_variance(g, (), 4, edges=edges, covariance=True)[0]
    n = draws_for_power(exact, covariance)
    assert n <= 9000
    rng = np.random.default_rng(5)
    estimates = np.array([gradient(inject_edges(g, edges, 4, rng=rng))[0] for _ in range(n)])
    assert_unbiased(estimates, exact, covariance)
    assert_power(estimates, exact, covariance)


def test_same_array_same_picks_share_one_copy():
    """Two edges keeping one array (a state, as phi_n in the PDE: dt diag(phi_n) and the
    loss row), sampled with the same draws, keep one copy of the k entries (eq. 8's
    shared sample); different draws keep two."""
    x = np.array([1.0, 2.0, 3.0, 4.0])
    keep = (Retained("state", 4 * 64),)
    g = LCG(["x", "y", "L"], [0, 0, 1], [1, 2, 2],
            [Diagonal(2 * x, retained=keep), compose(SumAxes((4,)), Diagonal(x, None, keep)),
             SumAxes((4,))], [0], [2], values=[x, x * x, np.array(0.0)])
    assert retained_memory(g).total == 32
    picks = np.array([3, 3, 0])
    shared = inject_edges(g, [(0, 1), (0, 2)], picks=[picks, picks])
    assert retained_memory(shared).total == 3 * 9                   # one copy: 3 floats, 3 indices
    apart = inject_edges(g, [(0, 1), (0, 2)], picks=[picks, np.array([1, 1, 2])])
    assert retained_memory(apart).total == 2 * 3 * 9
    # the loss edge sum ∘ diag(x) sampled: sum over the picks of (d/k) x_i
    P = dense_projection(picks, 4)
    np.testing.assert_allclose(shared.labels[1].to_dense(), (x @ P)[None, :], rtol=1e-15)


def test_picks_on_a_multiplication_edge_sample_each_row():
    X = np.arange(12.0).reshape(3, 4)
    g = trace(lambda W: (X @ W).sum(), np.ones((4, 2)))
    picks = np.array([[0, 0], [1, 3], [2, 2]])        # row r of X keeps entries picks[r]
    h = inject_edge(g, ("W", "v1"), picks=picks)
    stored = np.stack([X[r] @ dense_projection(picks[r], 4) for r in range(3)])
    np.testing.assert_allclose(h.labels[0].stored, stored, rtol=1e-15)
    shared = inject_edge(g, ("W", "v1"), picks=np.array([1, 2]), per_row=False)
    np.testing.assert_allclose(shared.labels[0].stored, X @ dense_projection([1, 2], 4))


def test_several_edges_at_once_equal_one_at_a_time():
    g = two_uses()
    edges = [("x", "v1"), ("x", "sq")]
    together = inject_edges(g, edges, 2, rng=3)
    rng = np.random.default_rng(3)
    apart = inject_edge(inject_edge(g, edges[0], 2, rng=rng), edges[1], 2, rng=rng)
    np.testing.assert_array_equal(jacobian(together), jacobian(apart))
    assert together.injections == apart.injections


def test_round_trip_keeps_the_sampled_diagonal(tmp_path):
    g = inject_edge(two_uses(), ("x", "v1"), picks=[0, 0, 3])
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    np.testing.assert_array_equal(jacobian(h), jacobian(g))
    assert retained_memory(h).total == retained_memory(g).total and h.injections == g.injections


def test_bad_picks_are_named():
    g = two_uses()
    with pytest.raises(ValueError, match="does not draw indices"):
        inject_edge(g, 0, picks=[1, 2], law="rademacher")
    with pytest.raises(ValueError, match=r"indices 0..4"):
        inject_edge(g, 0, picks=[1, 5])
    with pytest.raises(ValueError, match="integer indices"):
        inject_edge(g, 0, picks=[0.5, 1.0])
    with pytest.raises(ValueError, match=r"shape \(k,\)"):
        inject_edge(g, 0, picks=[[1, 2], [0, 1]])
    with pytest.raises(ValueError, match="give k"):
        inject_edge(g, 0)
    with pytest.raises(ValueError, match="one array of picks per edge"):
        inject_edges(g, [0, 1], picks=[[1, 2]])
    with pytest.raises(TypeError, match="list of edges"):
        inject_edges(g, 0, 2)
