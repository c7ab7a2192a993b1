"""Finite differences and gradient checks.

Oracles: derivatives known in closed form (exp, polynomials), the error
behaviour predicted by Taylor's theorem (truncation O(h) / O(h^2), rounding
O(eps/h)), and, for gradcheck itself, functions whose traced Jacobian must
agree with finite differences (or, when tracing is cut, must not), programs
of numbers and of arrays alike.
"""

import importlib
import math

import numpy as np
import pytest

from minirad import detach, examples, ops
from minirad.exact.jacobians import METHODS
from minirad.gradcheck import (
    GradcheckReport,
    central_difference,
    directional_difference,
    forward_difference,
    gradcheck,
    numerical_jacobian,
    random_directions,
)
from minirad.tracing.tracer import Traced

STEPS = [10.0 ** -k for k in range(1, 16)]


# --------------------------------------------------- truncation vs rounding
@pytest.mark.parametrize("rule, best_range", [(central_difference, (1e-7, 1e-3)),
                                              (forward_difference, (1e-10, 1e-6))])
def test_error_falls_then_rises_as_h_shrinks(rule, best_range):
    errors = [abs(rule(math.exp, 1.0, h) - math.e) for h in STEPS]
    best = int(np.argmin(errors))
    assert best_range[0] <= STEPS[best] <= best_range[1]
    # falling: truncation error dominates for large h
    assert all(a > b for a, b in zip(errors[:3], errors[1:4]))
    # rising: rounding error dominates for tiny h, far above the best
    assert errors[-1] > 1e3 * errors[best]
    assert errors[-2] > errors[best] and errors[-3] > errors[best]


def test_truncation_orders():
    # exp''' = exp'' = e at 1: central error ~ e h^2 / 6, forward error ~ e h / 2
    for h in (1e-1, 1e-2):
        central = central_difference(math.exp, 1.0, h) - math.e
        forward = forward_difference(math.exp, 1.0, h) - math.e
        assert central == pytest.approx(math.e * h * h / 6, rel=0.05)
        assert forward == pytest.approx(math.e * h / 2, rel=0.05)


def test_scalar_rules_on_polynomials():
    # the central difference of a quadratic is exact up to rounding
    assert central_difference(lambda t: 3 * t * t - t, 2.0, 1e-2) == pytest.approx(11.0,
                                                                                   rel=1e-12)
    assert forward_difference(lambda t: t * t, 1.0, 0.5) == pytest.approx(2.5, rel=1e-15)
    np.testing.assert_allclose(central_difference(lambda t: np.array([t, t**3]), 1.0, 1e-4),
                               [1.0, 3.0], rtol=1e-7)


@pytest.mark.parametrize("h", [0.0, -1e-3, math.inf, math.nan, "small", True])
def test_bad_steps(h):
    with pytest.raises(ValueError, match="positive finite number"):
        central_difference(math.sin, 1.0, h)
    with pytest.raises(ValueError, match="positive finite number"):
        numerical_jacobian(math.sin, 1.0, h=h)


# ------------------------------------------------- finite-difference Jacobians
def test_numerical_jacobian_of_scalar_and_vector_arguments():
    def f(a, v, t):
        return a * v[0] * v[1] + t[0], ops.exp(a) * t[1]

    args = (0.5, [2.0, 3.0], np.array([1.0, -1.0]))
    e = math.exp(0.5)
    expected = [[6.0, 1.5, 1.0, 1.0, 0.0],
                [-e, 0.0, 0.0, 0.0, e]]
    np.testing.assert_allclose(numerical_jacobian(f, *args), expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(numerical_jacobian(f, *args, scheme="forward"), expected,
                               rtol=1e-6, atol=1e-6)
    # tuples stay tuples, arrays stay arrays: f sees the container it was written for
    seen = []
    numerical_jacobian(lambda p, q: seen.append((type(p), type(q))) or p[0] * q[0],
                       (1.0, 2.0), np.array([3.0]))
    assert set(seen) == {(tuple, np.ndarray)}


def test_numerical_jacobian_of_a_one_dimensional_array_result():
    J = numerical_jacobian(lambda x: np.array([x[0] ** 2, x[0] * x[1], 7.0]), [1.0, 2.0])
    np.testing.assert_allclose(J, [[2.0, 0.0], [2.0, 1.0], [0.0, 0.0]], atol=1e-9)


def test_numerical_jacobian_bad_input():
    with pytest.raises(ValueError, match="unknown scheme 'backward'"):
        numerical_jacobian(math.sin, 1.0, scheme="backward")
    # a nested list is not an array: numpy arrays of any shape are (see the array tests)
    with pytest.raises(TypeError, match=r"argument 0 has shape \(2, 2\)"):
        numerical_jacobian(lambda m: 0.0, [[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match="argument 1 is a str"):
        numerical_jacobian(lambda a, b: a, 1.0, "b")
    with pytest.raises(ValueError, match="at least one argument"):
        numerical_jacobian(lambda: 1.0)
    with pytest.raises(ValueError, match="non-finite"):
        numerical_jacobian(lambda x: x * math.inf, 1.0)
    with pytest.raises(TypeError, match="f returned a dict"):
        numerical_jacobian(lambda x: {"y": x}, 1.0)


# ------------------------------------------------------------- directions
def test_random_directions_are_unit_and_reproducible():
    d = random_directions(5, 20, rng=7)
    assert d.shape == (20, 5)
    np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, rtol=1e-14)
    np.testing.assert_array_equal(d, random_directions(5, 20, rng=np.random.default_rng(7)))
    assert not np.array_equal(d, random_directions(5, 20, rng=8))
    with pytest.raises(ValueError, match="count must be a non-negative integer"):
        random_directions(3, -1)
    with pytest.raises(ValueError, match="rng must be"):
        random_directions(3, 1, rng="seed")


def test_directional_difference_is_the_jacobian_times_the_direction():
    def f(x, y):
        return x * y + ops.sin(x), y * y

    J = np.array([[3.0 + math.cos(2.0), 2.0], [0.0, 6.0]])
    for d in random_directions(2, 5, rng=0):
        np.testing.assert_allclose(directional_difference(f, (2.0, 3.0), d), J @ d,
                                   rtol=1e-8, atol=1e-9)
    with pytest.raises(ValueError, match=r"direction must be 2 finite numbers"):
        directional_difference(f, (2.0, 3.0), [1.0, 0.0, 0.0])


# -------------------------------------------------------------- gradcheck
def softmax_cross_entropy(z):
    m = ops.exp(z[0]) + ops.exp(z[1]) + ops.exp(z[2])
    return ops.log(m) - z[1]


def polynomial(c, x):
    total = 0.0
    for k, ck in enumerate(c):
        total = total + ck * x ** k
    return total


def mlp(w, x):
    h0 = ops.tanh(w[0] * x[0] + w[1] * x[1])
    h1 = ops.sigmoid(w[2] * x[0] - w[3] * x[1])
    return h0 * h1 / (1.0 + h0 * h0), ops.sqrt(h1 * h1 + 1.0)


TRACED = [
    (examples.lecture_program, (2.0, 5.0)),
    (examples.lab_program, (2.0, 3.0)),
    (examples.descent_program, (1.0, 1.0)),
    (examples.figure1_program, (1.0, 2.0)),
    (examples.two_outputs_program, (1.5, 0.5)),
    (softmax_cross_entropy, ([0.2, -1.0, 0.5],)),
    (polynomial, ([1.0, -2.0, 0.5, 0.25], 1.3)),
    (mlp, ([0.1, -0.4, 0.7, 0.3], (1.0, -2.0))),
]


@pytest.mark.parametrize("f, args", TRACED, ids=[f.__name__ for f, _ in TRACED])
@pytest.mark.parametrize("method", METHODS)
def test_every_traced_jacobian_passes_gradcheck(f, args, method):
    report = gradcheck(f, *args, method=method, n_directions=3, rng=0)
    assert isinstance(report, GradcheckReport)
    assert report.passed
    assert report.max_abs_error < 1e-7
    assert report.numerical.shape == report.jacobian.shape
    assert len(report.directional_error) == 3


def test_gradcheck_with_an_explicit_elimination_order():
    assert gradcheck(examples.figure1_program, 1.0, 2.0, method="eliminate",
                     order=["v5", "v2", "v4", "v3"]).passed


def test_gradcheck_names_the_worst_entry():
    def cut(x, y):
        return x * y, x * detach(y)  # detach hides y from the trace in the second output

    with pytest.raises(ValueError, match=r"d f\[1\] / d y is 0.0 by minirad's 'reverse' "
                                         r"method but 2.0\d* by central differences"):
        gradcheck(cut, 2.0, 3.0)
    report = gradcheck(cut, 2.0, 3.0, raise_on_failure=False)
    assert not report.passed
    assert report.worst == ("f[1]", "y")
    assert report.max_abs_error == pytest.approx(2.0, rel=1e-6)
    assert report.rel_error[1, 1] == pytest.approx(1.0)
    assert "FAILED" in repr(report)


def test_gradcheck_reports_a_failing_direction(monkeypatch):
    module = importlib.import_module("minirad.gradcheck")  # minirad.gradcheck is the function

    # entries agree, but pretend the function moves differently along random directions
    real = module.directional_difference
    monkeypatch.setattr(module, "directional_difference",
                        lambda f, args, d, h=None: real(f, args, d, h) + 1e-3)
    # lab_program has a parameter called y, so its output vertex is named y'
    with pytest.raises(ValueError, match=r"along random direction #0: output f changes at "
                                         r"rate .* by minirad's 'forward' method"):
        gradcheck(examples.lab_program, 2.0, 3.0, method="forward", n_directions=2, rng=0)
    report = gradcheck(examples.lab_program, 2.0, 3.0, n_directions=2, rng=0,
                       raise_on_failure=False)
    assert not report.passed
    assert np.all(report.abs_error < 1e-7)
    np.testing.assert_allclose(report.directional_error, 1e-3, rtol=1e-3)


def test_gradcheck_without_directions():
    report = gradcheck(lambda x: x * detach(x), 3.0, n_directions=0, raise_on_failure=False)
    assert not report.passed and report.directional_error.shape == (0,)


def test_gradcheck_tolerances_and_arguments():
    # a tolerance of zero cannot be met by finite differences
    assert not gradcheck(ops.exp, 1.0, rtol=0.0, atol=0.0, raise_on_failure=False).passed
    assert gradcheck(ops.exp, 1.0, rtol=1e-6, atol=0.0).passed
    with pytest.raises(ValueError, match="rtol must be a non-negative number"):
        gradcheck(ops.exp, 1.0, rtol=-1.0)
    with pytest.raises(ValueError, match="directions must be a non-negative integer"):
        gradcheck(ops.exp, 1.0, n_directions=1.5)
    with pytest.raises(ValueError, match="unknown method 'numeric'"):
        gradcheck(ops.exp, 1.0, method="numeric")


# ------------------------------------------------------------------ arrays
def test_gradcheck_on_array_programs_by_every_method():
    W = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.6]])
    x = np.array([1.0, -2.0, 0.5])
    for method in METHODS:
        report = gradcheck(lambda W, x: (np.tanh(W @ x), (W * W).sum()), W, x, method=method,
                           rng=0)
        assert report.passed and report.jacobian.shape == (3, 9), method
    # a number beside an array: one column for the number, then the array's entries
    report = gradcheck(lambda s, W: np.exp(s * W).sum(axis=0), 0.3, W, rng=1)
    assert report.passed and report.jacobian.shape == (3, 7)
    np.testing.assert_allclose(numerical_jacobian(lambda W: W.sum(axis=1), W),
                               [[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], atol=1e-9)


def test_gradcheck_names_the_worst_array_entry():
    def differs(W):   # traced, W is minirad's array: a rule the tracer gets "wrong"
        return W * (2.0 if isinstance(W, Traced) else 3.0)

    W = np.ones((2, 2))
    report = gradcheck(differs, W, raise_on_failure=False, rng=0)
    assert not report.passed
    assert report.worst == ("y[0,0]", "W[0,0]")
    with pytest.raises(ValueError, match=r"d y\[0,0\] / d W\[0,0\] is 2.0 by minirad's "):
        gradcheck(differs, W)
