"""Checks of lab 5's exercises 5.2-5.4 (exact k = 1 variance, sampling and Rademacher P):
they accept the lab's reference solutions and minirad's own functions, and reject
planted mistakes with a message naming the input and the slip.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from oracles import expect_failure, lab_solution

from minirad import examples, labs
from minirad.labs import checks_injection
from minirad.randomized.injection import random_projection
from minirad.randomized.sampling import path_sampling_variance, sampled_jacobians

REFERENCES = [
    ("variance_k1", labs.check_variance_k1, "5.2"),
    ("sampling_P", labs.check_sampling_P, "5.3"),
    ("rademacher_P", labs.check_rademacher_P, "5.4"),
]


@pytest.mark.parametrize("name, check, number", REFERENCES, ids=[r[0] for r in REFERENCES])
def test_check_accepts_the_lab_solution(name, check, number, tmp_path_factory, capsys):
    solution = lab_solution("lab5_randomized", name, tmp_path_factory)
    capsys.readouterr()
    check(solution)
    out = capsys.readouterr().out
    assert re.fullmatch(rf"Exercise {re.escape(number)} passed: .+\n", out), out


def test_checks_are_exported_and_let_stubs_through():
    for name in checks_injection.__all__:
        assert getattr(labs, name) is getattr(checks_injection, name)

    def stub(*args):
        raise NotImplementedError("Exercise 9.9: stub")

    for check in (labs.check_sampling_P, labs.check_rademacher_P, labs.check_variance_k1):
        with pytest.raises(NotImplementedError, match="Exercise 9.9"):
            check(stub)


# --------------------------------------------------------- planted mistakes
def test_sampling_check_rejects_a_missing_scale():
    expect_failure(labs.check_sampling_P,
                   lambda d, k, rng: np.diag(np.bincount(rng.integers(d, size=k), minlength=d)),
                   "Exercise 5.3 (sampling P), on d=3, k=1", "scale them by d/k")


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
            return random_projection(d, k, rng=rng)
        return np.diag(np.bincount(rng.choice(d, size=k, replace=False), minlength=d) * d / k)

    expect_failure(labs.check_sampling_P, without, "on d=3, k=2", "with replacement")
    expect_failure(labs.check_sampling_P,
                   lambda d, k, rng: random_projection(d, k, rng=np.random.default_rng()),
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

    expect_failure(labs.check_rademacher_P, unscaled, "Exercise 5.4 (Rademacher P), on d=3, k=2",
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


def test_variance_check_names_each_slip():
    for slip, wrong in (("forgets to square", 0), ("leaves out the factor d", 1),
                        ("without subtracting", 2)):
        expect_failure(labs.check_variance_k1,
                       lambda g, i=wrong: list(checks_injection._planted_variances(g).values())[i],
                       "Exercise 5.2 (variance of Algorithm 1, k = 1), on figure1()", slip)
    expect_failure(labs.check_variance_k1, lambda g: path_sampling_variance(g, 2),
                   "on figure1()", "expected")
    expect_failure(labs.check_variance_k1, lambda g: path_sampling_variance(g, 1).T,
                   "shape")


def test_planted_variances_are_really_wrong_and_the_reference_matches_sampling():
    """The hints must not fire on correct answers: each slip differs from the truth
    somewhere, and the truth agrees with a Monte Carlo measurement (20000 samples; the
    measured variance is within 10%, a miss with a chance far below 1e-6 for this graph)."""
    g = examples.interleaved(3, 3, partials="random", rng=0)
    exact = path_sampling_variance(g, 1)
    for wrong in checks_injection._planted_variances(g).values():
        assert not np.allclose(wrong, exact)
    measured = sampled_jacobians(g, 1, 20000, rng=5).var(axis=0, ddof=1)
    np.testing.assert_allclose(measured, exact, rtol=0.1)
