"""The per-layer budget allocation: exact variance formula against Monte Carlo,
the allocation against brute force."""

import itertools

import numpy as np
import pytest

from minirad.studies.nn import budget, mlp_numpy


@pytest.mark.slow
def test_exact_variance_matches_monte_carlo():
    gen = np.random.default_rng(3)
    params = [p.astype(np.float64) for p in mlp_numpy.init_mlp((12, 9, 4), rng=2)]
    x, y = gen.standard_normal((5, 12)), gen.integers(4, size=5)
    c = budget.variance_coefficients(params, x, y)
    fractions = [3 / 12, 2 / 9]
    exact = mlp_numpy.loss_and_grad(params, x, y)[1][0::2]
    n = 4000
    total = np.zeros(2)
    for _ in range(n):
        grads = mlp_numpy.loss_and_grad(params, x, y, "different_sample", fractions,
                                        rng=gen)[1][0::2]
        total += [np.sum((g - e) ** 2) for g, e in zip(grads, exact)]
    measured = total / n
    predicted = budget.sampling_variance(c, [3, 2])
    # the Monte Carlo mean of a squared error: a few percent relative error at n = 4000
    np.testing.assert_allclose(measured, predicted, rtol=0.1)


def test_allocation_is_optimal_by_brute_force():
    gen = np.random.default_rng(0)
    for _ in range(20):
        c = gen.random(3) * 10
        widths = gen.integers(2, 8, size=3)
        total = int(gen.integers(3, widths.sum() + 2))
        k = budget.allocate(c, widths, total)
        assert sum(k) <= total and all(1 <= a <= d for a, d in zip(k, widths))
        best = min(sum(c / np.array(ks)) for ks in itertools.product(*(range(1, d + 1)
                                                                       for d in widths))
                   if sum(ks) <= total)
        assert sum(c / np.array(k)) == pytest.approx(best, rel=1e-12)


def test_bad_allocation_input():
    with pytest.raises(ValueError, match="budget"):
        budget.allocate([1.0, 2.0], [5, 5], 1)
    with pytest.raises(ValueError, match="coefficient"):
        budget.allocate([1.0], [5, 5], 4)
    with pytest.raises(ValueError, match="one fraction per layer"):
        mlp_numpy.forward(mlp_numpy.init_mlp((3, 2, 2), rng=0), np.ones((1, 3)), np.zeros(1, int),
                          "different_sample", [0.5])
