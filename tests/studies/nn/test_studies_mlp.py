"""The hand-written numpy MLP (the floor) and its randomized weight gradients:
exact gradient against central differences, every estimator exact when its
random matrix is the identity, unbiasedness of the RAD estimators on one fixed
minibatch, and the retained bytes counted and measured."""

import numpy as np
import pytest

from minirad.studies.nn import mlp_numpy as mlp
from minirad.studies.nn.activations import keep_input, restore_input
from minirad.studies.nn.study import estimator_batch, estimator_kind, measured_bytes

RAD = ("different_sample", "same_sample", "project")


def small_problem(sizes=(10, 8, 8, 3), batch=6):
    gen = np.random.default_rng(123)
    params = [p.astype(np.float64) for p in mlp.init_mlp(sizes, rng=1)]
    x = gen.standard_normal((batch, sizes[0]))
    y = gen.integers(sizes[-1], size=batch)
    return params, x, y


def flat_weights(grads):
    return np.concatenate([g.ravel() for g in grads[0::2]])


def test_exact_gradient_matches_central_differences():
    params, x, y = small_problem()
    _, grads = mlp.loss_and_grad(params, x, y)
    h = 1e-6
    for p, g in zip(params, grads):
        numeric = np.zeros_like(p)
        for index in np.ndindex(p.shape):
            old = p[index]
            p[index] = old + h
            up = mlp.loss(params, x, y)
            p[index] = old - h
            down = mlp.loss(params, x, y)
            p[index] = old
            numeric[index] = (up - down) / (2 * h)
        np.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-9)


def test_forward_loss_equals_plain_loss():
    params, x, y = small_problem()
    for kind in ("exact",) + RAD:
        assert mlp.forward(params, x, y, kind, 0.5, rng=0)[0] == pytest.approx(
            mlp.loss(params, x, y), rel=1e-12)


@pytest.mark.parametrize("kind", ["different_sample", "same_sample"])
def test_sampling_without_replacement_at_fraction_one_is_exact(kind):
    # k = d distinct indices is a permutation: P = I, the estimate is the gradient
    # (and the backward pass uses the stored ReLU bits instead of recomputing them)
    params, x, y = small_problem()
    _, exact = mlp.loss_and_grad(params, x, y)
    _, estimate = mlp.loss_and_grad(params, x, y, kind, 1.0, rng=3, replace=False)
    for a, b in zip(estimate, exact):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def test_baseline_and_reduced_batch_are_the_exact_gradient():
    params, x, y = small_problem()
    _, exact = mlp.loss_and_grad(params, x, y)
    for name in ("baseline", "reduced_batch"):
        _, grads = mlp.loss_and_grad(params, x, y, estimator_kind(name), 0.1, rng=0)
        for a, b in zip(grads, exact):
            np.testing.assert_array_equal(a, b)
    assert estimator_batch("reduced_batch") == 18 and estimator_batch("baseline") == 150


def test_biases_and_adjoints_are_exact_under_sampling():
    # only the stored layer inputs are randomized: bias gradients (sums of adjoints) stay exact
    params, x, y = small_problem()
    _, exact = mlp.loss_and_grad(params, x, y)
    for kind in RAD:
        _, grads = mlp.loss_and_grad(params, x, y, kind, 0.2, rng=5)
        for a, b in zip(grads[1::2], exact[1::2]):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("kind", RAD)
def test_rad_estimators_are_unbiased_on_a_fixed_minibatch(kind):
    """z = (mean of 2000 estimates - exact) / standard error, one per weight entry.

    The z-scores of one run are correlated (entries share the sampled indices), so
    their spread varies more than for independent normals: over seeds 0..99 for each
    estimator the mean z stayed within 0.23 of 0 and the sd of z within [0.57, 1.56].
    The bounds below (|mean| < 0.4, 0.45 < sd < 1.8) leave a margin around that and
    were never crossed in those 100 runs per estimator: by the rule of three the
    false-failure rate is below 3% (95% confidence), and with the margin likely far
    lower; the seed is fixed, so the test itself is deterministic. The estimate
    scaled by 0.9 gives an sd of z above 3 and fails.
    """
    params, x, y = small_problem()
    exact = flat_weights(mlp.loss_and_grad(params, x, y)[1])
    gen = np.random.default_rng(0)
    n = 2000
    draws = np.array([flat_weights(mlp.loss_and_grad(params, x, y, kind, 0.3, rng=gen)[1])
                      for _ in range(n)])
    stderr = draws.std(axis=0, ddof=1) / np.sqrt(n)
    constant = stderr == 0  # e.g. rows of a unit that is dead for the whole batch
    np.testing.assert_allclose(draws[0, constant], exact[constant], atol=1e-15)
    z = (draws.mean(axis=0)[~constant] - exact[~constant]) / stderr[~constant]
    assert z.size > 100
    assert abs(z.mean()) < 0.4, z.mean()
    assert 0.45 < z.std() < 1.8, z.std()
    scaled = (0.9 * draws.mean(axis=0)[~constant] - exact[~constant]) / (0.9 * stderr[~constant])
    assert scaled.std() > 1.8  # the test has the power to see a 10% bias


def test_kept_inputs_restore_shapes_and_exactness():
    x = np.random.default_rng(0).standard_normal((4, 20)).astype(np.float32)
    assert restore_input(keep_input(x)) is x
    for kind in RAD:
        kept = keep_input(x, kind, 0.1, rng=1)
        assert kept.values.shape == (4, 2) and kept.values.dtype == np.float32
        assert restore_input(kept).shape == (4, 20)
        assert restore_input(kept).dtype == np.float32
    same = restore_input(keep_input(x, "same_sample", 0.1, rng=2))
    columns = np.flatnonzero(np.any(same != 0, axis=0))
    assert len(columns) <= 2 and np.all(same[:, columns] != 0)  # one column set for all rows
    with pytest.raises(ValueError, match="kind"):
        keep_input(x, "sampled")
    with pytest.raises(ValueError, match="shape"):
        keep_input(x[0], "exact")


def test_retained_bytes_counted_and_measured():
    params = mlp.init_mlp(rng=0)
    gen = np.random.default_rng(1)
    x = gen.random((300, 784), dtype=np.float32)
    y = gen.integers(10, size=300)
    exact = measured_bytes(params, x, y, 150, "exact", 1.0)
    rad = measured_bytes(params, x, y, 150, "different_sample", 0.1)
    assert exact["tape"] == 150 * 6776 and rad["tape"] == 150 * 828.5
    # tracemalloc sees the same arrays plus a few hundred bytes of Python objects
    for counted in (exact, rad):
        assert counted["tape"] <= counted["tracemalloc"] < counted["tape"] + 5000
        assert counted["peak"] >= counted["tracemalloc"]
    assert rad["tracemalloc"] <= 0.13 * exact["tracemalloc"]


def test_float32_end_to_end():
    params = mlp.init_mlp((6, 5, 3), rng=0)
    x = np.ones((4, 6), np.float32)
    y = np.array([0, 1, 2, 0])
    for kind in ("exact",) + RAD:
        _, grads = mlp.loss_and_grad(params, x, y, kind, 0.5, rng=0)
        assert all(g.dtype == np.float32 for g in grads)


def test_bad_input():
    params = mlp.init_mlp((6, 5, 3), rng=0)
    x = np.ones((4, 6), np.float32)
    with pytest.raises(ValueError, match="x must have shape"):
        mlp.loss(params, np.ones((4, 5)), np.zeros(4, int))
    with pytest.raises(ValueError, match="labels"):
        mlp.loss(params, x, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="integer class labels"):
        mlp.loss(params, x, np.zeros(4))
    with pytest.raises(ValueError, match="sizes"):
        mlp.init_mlp((6, 0, 3))
