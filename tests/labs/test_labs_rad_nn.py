"""Checks of lab 9 (RAD for neural networks): they accept the lab's reference solutions
and minirad's own estimators, and reject planted mistakes with a message naming the
layer and the slip."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad import labs
from minirad.labs import lab09_rad_nn
from minirad.studies.nn.activations import keep_input, restore_input
from minirad.studies.nn.memory import kept_entries

pytestmark = lab_group("lab9_rad_nn")  # one run of the lab per test session

STEM = "lab9_rad_nn"

REFERENCES = [
    ("different_sample_grad", labs.check_different_sample, "9.1"),
    ("z_scores", labs.check_z_scores, "9.2"),
    ("same_sample_grad", labs.check_same_sample, "9.3"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, check, number", REFERENCES, ids=[r[0] for r in REFERENCES])
def test_check_accepts_the_lab_solution(name, check, number, tmp_path_factory, capsys):
    solution = lab_solution(STEM, name, tmp_path_factory)
    capsys.readouterr()
    check(solution)
    out = capsys.readouterr().out
    assert re.fullmatch(rf"Exercise {re.escape(number)} passed: .+\n", out), out


def minirad_estimator(kind):
    return lambda x, delta, f, rng: restore_input(keep_input(x, kind, f, rng)).T @ delta


def test_checks_refuse_minirad_itself_and_are_exported():
    expect_failure(labs.check_different_sample, minirad_estimator("different_sample"),
                   "Exercise 9.1", "used the reference", "keep_input")
    expect_failure(labs.check_same_sample, minirad_estimator("same_sample"),
                   "Exercise 9.3", "used the reference", "keep_input")
    expect_failure(labs.check_z_scores, lab09_rad_nn.reference_z_scores,
                   "Exercise 9.2", "used the reference", "reference_z_scores")
    for name in lab09_rad_nn.__all__:
        if name.startswith("check_"):
            assert getattr(labs, name) is getattr(lab09_rad_nn, name)


def test_stubs_pass_through():
    def stub(*args):
        raise NotImplementedError("Exercise 9.9: stub")

    for check in (labs.check_different_sample, labs.check_same_sample, labs.check_z_scores):
        with pytest.raises(NotImplementedError, match="Exercise 9.9"):
            check(stub)


def test_the_reference_z_scores_against_a_hand_computation():
    estimates = np.array([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0]])   # column 1 never varies
    z = lab09_rad_nn.reference_z_scores(estimates, np.array([2.0, 2.0]))
    # column 0: mean 3, s = 2, standard error 2/sqrt(3): z = sqrt(3)/2
    assert z[0] == pytest.approx(math.sqrt(3) / 2) and z[1] == 0.0
    z = lab09_rad_nn.reference_z_scores(estimates, np.array([2.0, 2.5]))
    assert z[1] == -np.inf


def test_the_variance_behind_the_standard_errors_matches_enumeration():
    """The checks' standard errors come from a formula ((d-1)/k per scaled draw count);
    here the variance is computed from every equally likely outcome of the draws."""
    import itertools

    gen = np.random.default_rng(5)
    B, d, k = 2, 3, 2
    x, delta = gen.random((B, d)), gen.standard_normal((B, 2))
    draws = list(itertools.product(range(d), repeat=k))   # one row's ordered draws

    def estimate(rows):
        counts = np.zeros((B, d))
        for r, row in enumerate(rows):
            for i in row:
                counts[r, i] += 1
        return (x * counts * (d / k)).T @ delta

    outcomes = {
        False: [estimate(rows) for rows in itertools.product(draws, repeat=B)],
        True: [estimate([row] * B) for row in draws],
    }
    for shared, values in outcomes.items():
        values = np.array(values)
        assert np.allclose(values.mean(axis=0), x.T @ delta)
        assert np.allclose(values.var(axis=0), lab09_rad_nn.estimate_variance(x, delta, k, shared))


# ------------------------------------------------------- planted estimators
def sampled(x, delta, f, rng, *, k=None, draws=None, replace=True, shared=False, scale=True,
            add=True):
    """The sampling estimator with one knob turned the wrong way (``k`` in the scale d/k,
    ``draws`` the number drawn, ``k`` unless given)."""
    B, d = x.shape
    k = kept_entries(d, f) if k is None else k
    draws = k if draws is None else draws
    rows = 1 if shared else B
    if replace:
        idx = rng.integers(d, size=(rows, draws))
    else:
        idx = np.argsort(rng.random((rows, d)), axis=1)[:, :min(draws, d)]
    counts = np.zeros((rows, d))
    for r in range(rows):
        if add:
            np.add.at(counts[r], idx[r], 1.0)
        else:
            counts[r, idx[r]] = 1.0
    weights = counts * (d / k if scale else 1.0)
    return (x * weights).T @ delta


def different(**slip):
    return lambda x, delta, f, rng: sampled(x, delta, f, rng, **slip)


def same(**slip):
    return lambda x, delta, f, rng: sampled(x, delta, f, rng, shared=True, **slip)


def test_the_planted_knobs_set_right_pass():
    labs.check_different_sample(different())
    labs.check_same_sample(same())


WHERE_1 = "Exercise 9.1 (different-sample weight gradient), on B=4, d=5, out=3, f=0.4"
WHERE_3 = "Exercise 9.3 (same-sample weight gradient), on B=4, d=5, out=3, f=0.4"


@pytest.mark.parametrize("fn, fragments", [
    (different(scale=False), [WHERE_1, "multiply the kept entries by d/k = 2.5"]),
    (lambda x, delta, f, rng: sampled(x, delta, f, rng, k=math.ceil(f * x.shape[1])),
     ["on B=6, d=25, out=2, f=0.28", "whose ceil is 8", "kept_entries"]),
    (different(replace=False), [WHERE_1, "drawn twice", "draw with replacement"]),
    (same(), [WHERE_1, "one sample shared by the minibatch", "independently for every row"]),
    (lambda x, delta, f, rng: different()(x, delta, f, np.random.default_rng()),
     [WHERE_1, "returned different estimates", "from the rng argument"]),
    (different(add=False), [WHERE_1, "add the repeats"]),
    (lambda x, delta, f, rng: different(draws=x.shape[1])(x, delta, f, rng),
     [WHERE_1, "that is d draws"]),
    (lambda x, delta, f, rng: sampled(delta, x, f, rng).T,  # samples the adjoint's rows
     [WHERE_1, "you sampled the adjoint delta"]),
    (lambda x, delta, f, rng: different()(x, delta, f, rng).T,
     [WHERE_1, "that is the transpose"]),
])
def test_different_sample_check_names_each_slip(fn, fragments):
    expect_failure(labs.check_different_sample, fn, *fragments)


@pytest.mark.parametrize("fn, fragments", [
    (different(), [WHERE_3, "drew different features", "ONE set of k = 2"]),
    (same(scale=False), [WHERE_3, "multiply the kept entries by d/k"]),
    (same(replace=False), [WHERE_3, "draw with replacement"]),
    (lambda x, delta, f, rng: same()(x, delta, f, np.random.default_rng()),
     [WHERE_3, "from the rng argument"]),
    (lambda x, delta, f, rng: sampled(x, delta, f, rng, shared=True,
                                      k=math.ceil(f * x.shape[1])),
     ["on B=6, d=25", "kept_entries"]),
])
def test_same_sample_check_names_each_slip(fn, fragments):
    expect_failure(labs.check_same_sample, fn, *fragments)


def test_a_biased_draw_is_caught_by_the_mean():
    """Draws that favour feature 0 keep the form right; only the average can tell."""
    def biased(x, delta, f, rng):
        B, d = x.shape
        k = kept_entries(d, f)
        p = np.full(d, 1.0)
        p[0] = 3.0
        idx = rng.choice(d, size=(B, k), p=p / p.sum())
        counts = np.zeros((B, d))
        for r in range(B):
            np.add.at(counts[r], idx[r], 1.0)
        return (x * counts * (d / k)).T @ delta

    expect_failure(labs.check_different_sample, biased, "standard errors away",
                   "each feature with probability 1/d")


# -------------------------------------------------------------- z-score slips
def z_with(denominator, sign=1.0, fold=False, nan=False):
    def z(estimates, exact):
        estimates = np.asarray(estimates, dtype=float)
        n = len(estimates)
        miss = sign * (estimates.mean(axis=0) - exact)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = miss / denominator(estimates, n)
        if fold:
            out = np.abs(out)
        if not nan:   # the rule for entries that never vary, right: 0 or +-inf
            flat = estimates.std(axis=0) == 0
            hit = np.isclose(estimates.mean(axis=0), exact)
            out[flat] = np.where(hit, 0.0, np.copysign(np.inf, miss))[flat]
        return out
    return z


def se(estimates, n):
    return estimates.std(axis=0, ddof=1) / np.sqrt(n)


@pytest.mark.parametrize("fn, fragments", [
    (z_with(lambda e, n: e.std(axis=0, ddof=1)), ["s / sqrt(n), not by the standard deviation"]),
    (z_with(lambda e, n: e.std(axis=0, ddof=0) / np.sqrt(n)), ["ddof=1"]),
    (z_with(lambda e, n: e.var(axis=0, ddof=1) / np.sqrt(n)), ["not the variance"]),
    (z_with(lambda e, n: e.var(axis=0, ddof=1) / n), ["take the square root"]),
    (z_with(se, sign=-1.0), ["the sign is reversed"]),
    (z_with(se, fold=True), ["keep the sign of mean - exact"]),
    (z_with(se, nan=True), ["is nan", "s = 0"]),
    (lambda estimates, exact: np.asarray(estimates).mean(axis=0), ["expected"]),
    (lambda estimates, exact: z_with(se)(estimates, exact).ravel(), ["shape of exact"]),
])
def test_z_score_check_names_each_slip(fn, fragments):
    message = expect_failure(labs.check_z_scores, fn, "Exercise 9.2 (z-scores), on ",
                             *fragments)
    assert "Traceback" not in message
