"""Checks of exercises 5.2 (exact k = 1 variance), 10.1 and 10.2 (sampling and Rademacher P):
they accept the labs' reference solutions, refuse minirad's own functions as "used the
reference", and reject planted mistakes with a message naming the input and the slip.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad import examples, labs
from minirad.exact.jacobians import jacobian as minirad_jacobian
from minirad.labs import lab05_randomized, lab10_injection
from minirad.randomized.injection import random_projection
from minirad.randomized.sampling import path_sampling_variance, sampled_jacobians

REFERENCES = [
    ("lab5_randomized", "variance_k1", labs.check_variance_k1, "5.2"),
    ("lab10_injection", "sampling_P", labs.check_sampling_P, "10.1"),
    ("lab10_injection", "rademacher_P", labs.check_rademacher_P, "10.2"),
]


def sampling_P(d, k, rng):
    """A student's sampling matrix: k draws with replacement, each worth d/k."""
    return np.diag(np.bincount(rng.integers(d, size=k), minlength=d) * (d / k))


@pytest.mark.slow
@pytest.mark.parametrize("stem, name, check, number",
                         [pytest.param(*r, marks=lab_group(r[0])) for r in REFERENCES],
                         ids=[r[1] for r in REFERENCES])
def test_check_accepts_the_lab_solution(stem, name, check, number, tmp_path_factory, capsys):
    solution = lab_solution(stem, name, tmp_path_factory)
    capsys.readouterr()
    check(solution)
    out = capsys.readouterr().out
    assert re.fullmatch(rf"Exercise {re.escape(number)} passed: .+\n", out), out


def test_checks_are_exported_and_let_stubs_through():
    for module in (lab05_randomized, lab10_injection):
        for name in module.__all__:
            if name.startswith("check_"):
                assert getattr(labs, name) is getattr(module, name)

    def stub(*args):
        raise NotImplementedError("Exercise 9.9: stub")

    for check in (labs.check_sampling_P, labs.check_rademacher_P, labs.check_variance_k1):
        with pytest.raises(NotImplementedError, match="Exercise 9.9"):
            check(stub)


# --------------------------------------------------------- planted mistakes
def test_sampling_check_rejects_a_missing_scale():
    expect_failure(labs.check_sampling_P,
                   lambda d, k, rng: np.diag(np.bincount(rng.integers(d, size=k), minlength=d)),
                   "Exercise 10.1 (sampling P), on d=3, k=1", "scale them by d/k")


def test_minirad_s_own_matrices_are_refused_as_the_reference():
    expect_failure(labs.check_sampling_P, lambda d, k, rng: random_projection(d, k, rng=rng),
                   "Exercise 10.1", "on d=1, k=1", "used the reference", "random_projection")
    expect_failure(labs.check_rademacher_P,
                   lambda d, k, rng: random_projection(d, k, "rademacher", rng=rng),
                   "Exercise 10.2", "used the reference", "random_projection")
    expect_failure(labs.check_variance_k1, lambda g: path_sampling_variance(g, 1),
                   "Exercise 5.2", "used the reference", "path_sampling_variance")


def test_sampling_check_rejects_d_draws_and_overwriting():
    expect_failure(labs.check_sampling_P,
                   lambda d, k, rng: np.diag(np.bincount(rng.integers(d, size=d), minlength=d)
                                             * d / k),
                   "on d=3, k=1", "draw k components, not d")

    def overwrite(d, k, rng):
        diagonal = np.zeros(d)
        diagonal[rng.integers(d, size=k)] = d / k  # a repeated index counts once
        return np.diag(diagonal)

    expect_failure(labs.check_sampling_P, overwrite, "on d=3, k=2", "add, do not overwrite")


def test_sampling_check_rejects_draws_without_replacement_and_a_global_rng():
    def without(d, k, rng):
        if k > d:
            return sampling_P(d, k, rng)
        return np.diag(np.bincount(rng.choice(d, size=k, replace=False), minlength=d) * d / k)

    expect_failure(labs.check_sampling_P, without, "on d=3, k=2", "with replacement")
    expect_failure(labs.check_sampling_P,
                   lambda d, k, rng: sampling_P(d, k, np.random.default_rng()),
                   "on d=3, k=1", "returned different matrices",
                   "from the rng argument")


def test_sampling_check_rejects_a_biased_draw():
    def biased(d, k, rng):  # component 0 twice as likely as the others
        p = np.ones(d)
        p[0] = 2.0
        idx = rng.choice(d, size=k, p=p / p.sum())
        return np.diag(np.bincount(idx, minlength=d) * d / k)

    expect_failure(labs.check_sampling_P, biased, "on d=3, k=1", "mean of P[0, 0]",
                   "probability 1/d")


def test_rademacher_check_rejects_a_missing_one_over_k():
    def unscaled(d, k, rng):
        R = rng.choice([-1.0, 1.0], size=(d, k))
        return R @ R.T

    expect_failure(labs.check_rademacher_P, unscaled, "Exercise 10.2 (Rademacher P), on d=3, k=2",
                   "that is k", "+-1/sqrt(k), not +-1")

    def over_k(d, k, rng):
        R = rng.choice([-1.0, 1.0], size=(d, k)) / k
        return R @ R.T

    expect_failure(labs.check_rademacher_P, over_k, "on d=3, k=2", "divide R by sqrt(k), not by k")


def test_rademacher_check_rejects_gaussians_wrong_products_and_shared_signs():
    def gaussian(d, k, rng):
        R = rng.standard_normal((d, k)) / np.sqrt(k)
        return R @ R.T

    expect_failure(labs.check_rademacher_P, gaussian, "not from a normal distribution")

    expect_failure(labs.check_rademacher_P,
                   lambda d, k, rng: (lambda R: R.T @ R)(rng.choice([-1.0, 1.0], (d, k))
                                                         / np.sqrt(k)),
                   "R @ R.T, not R.T @ R")

    def shared(d, k, rng):  # one sign per column: every P[i, j] is 1
        R = np.repeat(rng.choice([-1.0, 1.0], size=(1, k)), d, axis=0) / np.sqrt(k)
        return R @ R.T

    expect_failure(labs.check_rademacher_P, shared, "on d=3, k=1", "mean of P[0, 1]")


@pytest.mark.slow
@lab_group("lab5_randomized")
def test_variance_check_names_each_slip(tmp_path_factory):
    variance_k1 = lab_solution("lab5_randomized", "variance_k1", tmp_path_factory)
    for slip, wrong in (("forgets to square", 0), ("leaves out the factor d", 1),
                        ("without subtracting", 2)):
        expect_failure(labs.check_variance_k1,
                       lambda g, i=wrong: list(lab05_randomized.planted_variances(g).values())[i],
                       "Exercise 5.2 (variance of Algorithm 1, k = 1), on figure1()", slip)
    expect_failure(labs.check_variance_k1, lambda g: variance_k1(g) / 2,
                   "on figure1()", "expected")
    expect_failure(labs.check_variance_k1, lambda g: variance_k1(g).T, "shape")
    # subtracting J^2 twice leaves a negative entry: named as such
    expect_failure(labs.check_variance_k1,
                   lambda g: variance_k1(g) - minirad_jacobian(g) ** 2,
                   "on figure1()", "is negative, and a variance never is")


def test_planted_variances_are_really_wrong_and_the_reference_matches_sampling():
    """The hints must not fire on correct answers: each slip differs from the truth
    somewhere, and the truth agrees with a Monte Carlo measurement (20000 samples; the
    measured variance is within 10%, a miss with a chance far below 1e-6 for this graph)."""
    g = examples.interleaved(3, 3, partials="random", rng=0)
    exact = path_sampling_variance(g, 1)
    for wrong in lab05_randomized.planted_variances(g).values():
        assert not np.allclose(wrong, exact)
    measured = sampled_jacobians(g, 1, 20000, rng=5).var(axis=0, ddof=1)
    np.testing.assert_allclose(measured, exact, rtol=0.1)
