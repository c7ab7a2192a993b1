"""Dual numbers (minirad/tracing/dual.py) against the forward sweep on the traced graph.

Forward mode by duals and the forward sweep apply the same partials from the same
table in the same order, so on every program they must agree to the last bit: on
random programs of numbers (every operation of the table, in every spelling) and on
random numpy array programs.  The lecture's example and hand-derived derivatives
check the numbers themselves.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import array_programs
from test_trace_reference import random_program

from minirad import jacobian, jvp, ops, trace
from minirad.tracing.catalog import EXAMPLES
from minirad.tracing.dual import Dual, jacobian_by_duals, jvp_by_duals


def bits(x) -> np.ndarray:
    """The float64 bit patterns, zeros of either sign alike (+ 0.0 makes -0.0 into 0.0: a
    sweep leaves a value no seed reaches at 0.0, where duals may compute -1.0 * 0.0)."""
    return (np.asarray(x, dtype=np.float64) + 0.0).view(np.int64)


def test_the_lectures_tangent_trace():
    # y = ln(x1) + x1 x2 - sin(x2) at (2, 5): dy/dx1 = 1/x1 + x2 = 5.5,
    # dy/dx2 = x1 - cos(x2) = 1.716 (the lecture's forward-mode table)
    f = lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2)  # noqa: E731
    value, dx1 = jvp_by_duals(f, (2.0, 5.0), (1.0, 0.0))
    _, dx2 = jvp_by_duals(f, (2.0, 5.0), (0.0, 1.0))
    assert value == pytest.approx(math.log(2) + 10 - math.sin(5), rel=1e-15)
    assert dx1 == 5.5 and dx2 == pytest.approx(2 - math.cos(5), rel=1e-15)
    # all directions in one pass: a vector tangent per input
    np.testing.assert_array_equal(jacobian_by_duals(f, 2.0, 5.0), [[dx1, dx2]])


def test_random_programs_of_numbers_equal_the_forward_sweep_to_the_last_bit():
    rng = np.random.default_rng(20261127)
    compared = 0
    while compared < 150:
        program = random_program(rng, int(rng.integers(1, 30)))
        a, b, x0, x1 = rng.uniform(0.2, 1.5, 4)
        try:
            g = trace(program, a, b, [x0, x1])
        except ValueError:  # a value or partial off the domain (log of a negative, ...)
            continue
        v = rng.normal(size=4)
        duals = program(Dual(a, v[0]), Dual(b, v[1]), [Dual(x0, v[2]), Dual(x1, v[3])])
        tangents = [r.tangent if isinstance(r, Dual) else 0.0 for r in duals]
        assert np.array_equal(bits(tangents), bits(jvp(g, v))), g.wengert()
        compared += 1


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(array_programs(), st.integers(0, 2**16))
def test_random_array_programs_equal_the_forward_sweep_to_the_last_bit(program, seed):
    f, args = program
    rng = np.random.default_rng(seed)
    g = trace(f, *args)
    v = [rng.normal(size=np.shape(a)) for a in args]
    duals = f(*(Dual(a, t) for a, t in zip(args, v)))
    for dual, swept in zip(duals, jvp(g, v)):
        assert np.shape(dual.tangent) == np.shape(swept)
        assert np.array_equal(bits(dual.tangent), bits(swept))


def test_duals_in_object_arrays_and_numpy_functions():
    # a layer written with numpy on an object array of duals, against the traced Jacobian
    W = np.array([[0.5, -1.0], [2.0, 0.25]])
    f = lambda a, b: tuple(np.tanh(W @ np.array([a, b])))  # noqa: E731
    np.testing.assert_allclose(jacobian_by_duals(f, 0.3, -0.7), jacobian(f, 0.3, -0.7),
                               rtol=1e-15)
    # the hypot, arctan2 and maximum entries through numpy: d hypot(3, 4)/da = 3/5
    x = Dual(3.0, 1.0)
    assert np.hypot(x, 4.0).tangent == pytest.approx(0.6, rel=1e-15)
    assert np.arctan2(x, 4.0).tangent == pytest.approx(4.0 / 25.0, rel=1e-15)
    assert np.maximum(x, x).tangent == 1.0  # the tie rule: 1/2 to each, summed
    assert np.square(x).tangent == 6.0 and (x ** 2).tangent == 6.0


def test_array_duals_follow_linear_operations():
    A = np.arange(6.0).reshape(2, 3)
    dA = np.ones((2, 3))
    d = Dual(A, dA)
    np.testing.assert_array_equal(d.sum(axis=0).tangent, [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(d.T.tangent, dA.T)
    np.testing.assert_array_equal(np.stack([d[0], d[1]]).tangent, dA)
    np.testing.assert_array_equal(np.mean(d).tangent, 1.0)
    # the product rule of @: d(A x) = dA x + A dx
    x = Dual(np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal((d @ x).tangent, dA @ x.value + A @ x.tangent)


def test_bad_input_is_refused_with_a_message():
    with pytest.raises(TypeError, match="value is a str"):
        Dual("2", 1.0)
    with pytest.raises(TypeError, match="nested duals"):
        Dual(Dual(1.0, 1.0), 0.0)
    with pytest.raises(ValueError, match="shape"):
        Dual(np.zeros(3), np.zeros(2))
    with pytest.raises(TypeError, match="drop its tangent"):
        float(Dual(1.0, 1.0))
    # every numpy function with a rule works on duals: d det(A)[dA] = det(A) tr(A^-1 dA)
    A, dA = np.array([[2.0, 1.0], [0.5, 3.0]]), np.array([[0.3, -1.0], [2.0, 0.7]])
    d = np.linalg.det(Dual(A, dA))
    assert d.tangent == pytest.approx(np.linalg.det(A) * np.trace(np.linalg.solve(A, dA)))
    with pytest.raises(TypeError, match="str"):
        Dual(1.0, 1.0) + "a"
    with pytest.raises(ValueError, match="log"):
        ops.log(Dual(-1.0, 1.0))
    # several directions of a number meeting an array: a stack of tangents, one per direction
    y = Dual(1.0, np.array([1.0, 2.0, 3.0])) * np.arange(4.0).reshape(2, 2)
    np.testing.assert_array_equal(y.tangent, np.multiply.outer([1.0, 2.0, 3.0],
                                                               np.arange(4.0).reshape(2, 2)))
    with pytest.raises(ValueError, match="one tangent per argument"):
        jvp_by_duals(lambda x: x, (1.0,), (1.0, 2.0))


def _directional_difference(f, args, v, h):
    """``(f(x + h v) - f(x - h v)) / 2h``: the derivative along ``v``, to O(h^2)."""
    plus = np.asarray(f(*(a + h * t for a, t in zip(args, v))), dtype=np.float64)
    minus = np.asarray(f(*(a - h * t for a, t in zip(args, v))), dtype=np.float64)
    return (plus - minus) / (2 * h)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_rule_of_the_catalog_runs_on_duals(name):
    # every rule's example (contractions of three operands, solve and cholesky among them,
    # whose blocks ask their edge for what they keep) pushed through duals: the tracer's
    # forward sweep to the last bit, and central differences along the same direction
    example = EXAMPLES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    args = example.arguments(rng)
    v = [rng.normal(size=np.shape(a)) for a in args]
    value, tangent = jvp_by_duals(example.function(), args, v)
    swept = jvp(trace(example.function(), *args), v)
    swept = swept[0] if isinstance(swept, list) and len(swept) == 1 else swept
    assert np.array_equal(bits(tangent), bits(swept))
    single = np.asarray(value).dtype == np.float32   # float32 rounding: a wider step
    h, rtol = (1e-3, 1e-3) if single else (1e-6, 1e-6)
    np.testing.assert_allclose(tangent, _directional_difference(example.function(), args, v, h),
                               rtol=rtol, atol=rtol)


def test_constants_and_arrays_where_duals_take_numbers():
    # an int constant among three einsum operands is a constant, not a tape position
    a = Dual(np.arange(3.0), np.array([1.0, 0.0, -1.0]))
    y = np.einsum("i,i,->i", a, a, 3)
    np.testing.assert_array_equal(y.tangent, 6 * a.value * a.tangent)   # d(3 a^2) = 6 a da
    with pytest.raises(TypeError, match="jacobian_by_duals takes numbers.*jvp_by_duals"):
        jacobian_by_duals(lambda x: x * 2, np.ones(3))
    with pytest.raises(ValueError, match="seed directions.*MAX_ENTRIES"):
        jacobian_by_duals(lambda *x: x[0], *([1.0] * 200_000))   # 4e10 seeds: refused first


def test_a_small_convolutional_network_on_duals():
    # the programs the issue found refused or misreported (conv2d, softmax_cross_entropy,
    # softmax along axis 1, np.transpose with axes, einsum) in one network: the tangent is
    # the traced Jacobian times the direction, and central differences along it
    from minirad.tracing.rules import avg_pool2d, conv2d, softmax, softmax_cross_entropy

    rng = np.random.default_rng(39)
    x, labels = rng.normal(size=(2, 1, 6, 6)), np.array([1, 0])

    def net(w, W):
        h = avg_pool2d(ops.relu(conv2d(x, w, padding=1)), 2)
        z = np.transpose(h.reshape(2, -1) @ W, (1, 0)).T
        return (softmax_cross_entropy(z, labels) + softmax(z, axis=1)[:, 0].sum()
                + np.einsum("ij,ij->", z, z))

    args = [rng.normal(size=(2, 1, 3, 3)), rng.normal(size=(18, 3))]
    v = [rng.normal(size=a.shape) for a in args]
    value, tangent = jvp_by_duals(net, args, v)
    assert np.shape(tangent) == ()
    by_jacobian = jacobian(net, *args) @ np.concatenate([t.ravel() for t in v])
    np.testing.assert_allclose(tangent, by_jacobian[0], rtol=1e-13)
    np.testing.assert_allclose(tangent, _directional_difference(net, args, v, 1e-6), rtol=1e-6)
    assert value == pytest.approx(float(net(*args)), rel=1e-15)
