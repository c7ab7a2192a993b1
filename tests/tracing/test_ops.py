"""The operation table: every local partial against a central difference."""

import math

import numpy as np
import pytest

from minirad import ops
from minirad.tracing.catalog import DEFAULT_DOMAIN, DOMAINS
from minirad.tracing.ops import OPS, evaluate

POINTS = {"log": 1.3, "log1p": 0.4, "sqrt": 2.2, "relu": 0.7, "abs": -0.8}
BINARY_POINTS = [(1.3, 0.6), (0.6, 1.3), (2.0, -0.5)]
QUOTIENTS = ("remainder", "fmod", "floor_divide")   # their values jump where a/b is whole


def _point(name: str) -> float:
    """0.37, or the middle of the operation's domain when 0.37 lies outside it."""
    low, high = DOMAINS.get(name, DEFAULT_DOMAIN)
    return POINTS.get(name, 0.37 if low < 0.37 < high else (low + high) / 2)


@pytest.mark.parametrize("name", [n for n, op in OPS.items() if op.arity == 1])
def test_unary_partials_match_central_differences(name):
    op = OPS[name]
    x = _point(name)
    h = 1e-6
    _, (d,) = evaluate(op, (x,))
    fd = (op.value(x + h) - op.value(x - h)) / (2 * h)
    assert d == pytest.approx(fd, rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("name", [n for n, op in OPS.items() if op.arity == 2])
@pytest.mark.parametrize("a, b", BINARY_POINTS)
def test_binary_partials_match_central_differences(name, a, b):
    op = OPS[name]
    if name in ("pow", "float_power") and a < 0:
        pytest.skip("a negative base has no real power for a general exponent")
    if name in QUOTIENTS and (a / b).is_integer():
        pytest.skip("a jump of the value: test_partials_at_the_jumps checks it")
    h = 1e-6
    _, (da, db) = evaluate(op, (a, b))
    assert da == pytest.approx((op.value(a + h, b) - op.value(a - h, b)) / (2 * h), rel=1e-7)
    assert db == pytest.approx((op.value(a, b + h) - op.value(a, b - h)) / (2 * h), rel=1e-7)


def test_functions_work_on_plain_numbers_and_arrays():
    assert ops.exp(0.0) == 1.0 and ops.log(1) == 0.0
    assert ops.sigmoid(-1000.0) == 0.0 and ops.sigmoid(1000.0) == 1.0
    assert list(ops.relu(np.array([-1.0, 2.0]))) == [0.0, 2.0]
    assert ops.minimum(1.0, 2.0) == 1.0 and ops.arctan(1.0) == pytest.approx(math.pi / 4)


def test_plain_numbers_are_checked_too():
    with pytest.raises(ValueError, match="log"):
        ops.log(0.0)
    with pytest.raises(TypeError, match="bool"):
        ops.exp(True)


def test_float_arrays_stay_float_arrays():
    out = ops.tanh(np.array([0.0, 1.0]))
    assert out.dtype == np.float64 and out[1] == pytest.approx(math.tanh(1.0))


# ---------------------------------------------------------- pow at a zero base
def _central(f, x, h=1e-4):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_pow_has_finite_partials_at_a_zero_base_where_they_exist():
    import minirad

    # x**0 is 1 for every x: its derivative at 0 is 0 (it was refused as non-finite)
    assert minirad.jacobian(lambda x: x**0, 0.0).tolist() == [[0.0]]
    assert _central(lambda x: x**0, 0.0) == 0.0
    # x**y at (0, 2), both traced: x**2 is flat at 0, and 0**y is 0 for every y > 0
    J = minirad.jacobian(lambda x, y: x**y, 0.0, 2.0)
    assert J.tolist() == [[0.0, 0.0]]  # the values JAX gives
    assert _central(lambda x: x**2.0, 0.0) == 0.0
    assert _central(lambda y: 0.0**y, 2.0) == 0.0
    # away from zero nothing changed: d(a**b)/da = b a**(b-1), d/db = a**b log a
    _, (da, db) = evaluate(OPS["pow"], (1.5, 2.5))
    assert da == pytest.approx(2.5 * 1.5**1.5) and db == pytest.approx(1.5**2.5 * math.log(1.5))


@pytest.mark.parametrize("f, args, message", [
    (lambda x, y: x**y, (0.0, 0.0), "differentiable in b only for a > 0"),  # 0**y jumps at 0
    (lambda x: x**0.5, (0.0,), "derivative in argument 0 there is not finite"),  # sqrt at 0
    (lambda x, y: x**y, (-2.0, 2.0), "differentiable in b only"),  # (-2)**y is not real
])
def test_pow_partials_that_do_not_exist_are_still_refused(f, args, message):
    import minirad

    with pytest.raises(ValueError, match=message):
        minirad.jacobian(f, *args)


# ------------------------------------------------------- huge integer constants
@pytest.mark.parametrize("f, op", [
    (lambda x: x * 2**2000, "mul"), (lambda x: 2**2000 * x, "mul"), (lambda x: x + 2**2000, "add"),
    (lambda x: 2**2000 / x, "div"), (lambda x: x ** 2**2000, "pow"),
    (lambda x: ops.maximum(2**2000, x), "maximum"),
])
def test_a_constant_too_large_for_a_float_names_the_op_and_vertex(f, op):
    import minirad

    with pytest.raises(ValueError, match=f"{op} at vertex v1: its constant operand, an integer "
                                         f"of about 603 digits, is too large for a float64"):
        minirad.trace(f, 1.0)


def test_huge_integers_elsewhere_are_value_errors_too():
    import minirad

    with pytest.raises(ValueError, match=r"argument 0 \(x\) is an integer too large"):
        minirad.trace(lambda x: x, 2**2000)
    with pytest.raises(ValueError, match="sin: an integer argument is too large"):
        ops.sin(2**2000)


# ------------------------------------------------------------------ the kinks
# where the derivative jumps (the value is continuous) ...
KINKS = {"abs": (0.0,), "relu": (0.0,), "maximum": (1.5, 1.5), "minimum": (1.5, 1.5),
         "copysign": (0.0, -1.0), "hypot": (0.0, 0.0)}
# ... and where the value jumps, with the partials the docstring states there
JUMPS = {"sign": ((0.0,), (0.0,)), "floor": ((1.0,), (0.0,)), "ceil": ((1.0,), (0.0,)),
         "trunc": ((-1.0,), (0.0,)), "rint": ((0.5,), (0.0,)),
         "floor_divide": ((2.0, 1.0), (0.0, 0.0)), "remainder": ((2.0, 1.0), (1.0, -2.0)),
         "fmod": ((-2.0, 1.0), (1.0, 2.0)), "heaviside": ((0.0, 0.5), (0.0, 1.0))}


def test_the_kink_convention_is_in_the_table_and_the_docs():
    assert {name for name, op in OPS.items() if op.kink} == set(KINKS) | set(JUMPS)
    kinks_section = ops.__doc__.split("Kinks\n-----")[1]
    for name in [*KINKS, *JUMPS]:
        assert f"``{name}" in kinks_section


def test_partials_at_the_kinks_follow_the_stated_convention():
    assert evaluate(OPS["abs"], (0.0,))[1] == (0.0,)
    assert evaluate(OPS["relu"], (0.0,))[1] == (0.0,)
    assert evaluate(OPS["maximum"], (1.5, 1.5))[1] == (0.5, 0.5)
    assert evaluate(OPS["minimum"], (1.5, 1.5))[1] == (0.5, 0.5)
    assert evaluate(OPS["copysign"], (0.0, -1.0))[1] == (0.0, 0.0)
    assert evaluate(OPS["hypot"], (0.0, 0.0))[1] == (0.0, 0.0)
    # either side of a kink the ordinary derivative holds
    assert evaluate(OPS["maximum"], (1.5, 1.0))[1] == (1.0, 0.0)
    assert evaluate(OPS["minimum"], (1.5, 1.0))[1] == (0.0, 1.0)
    assert evaluate(OPS["abs"], (-1e-300,))[1] == (-1.0,)
    assert evaluate(OPS["copysign"], (-2.0, -1.0))[1] == (1.0, 0.0)   # -|a| = a for a < 0


@pytest.mark.parametrize("name", JUMPS)
def test_partials_at_the_jumps_are_those_of_the_piece_the_value_is_on(name):
    op = OPS[name]
    point, stated = JUMPS[name]
    value, partials = evaluate(op, point)
    assert partials == stated
    h = 1e-7
    for i, d in enumerate(partials):
        if (name, i) in (("heaviside", 0), ("sign", 0)):
            continue   # their value at 0 lies on neither side's piece: 0 by convention
        moved = [op.value(*[x + s * h if j == i else x for j, x in enumerate(point)])
                 for s in (1, -1)]
        # on one side at least, the value goes on along the piece with slope d
        assert min(abs(moved[0] - value - h * d), abs(moved[1] - value + h * d)) < 1e-12, i


def test_the_kink_convention_keeps_identities_exact():
    import minirad

    # maximum(x, x) = x and maximum + minimum = a + b hold for the derivatives too
    assert minirad.jacobian(lambda x: ops.maximum(x, x), 2.0).tolist() == [[1.0]]
    J = minirad.jacobian(lambda a, b: ops.maximum(a, b) + ops.minimum(a, b), 2.0, 2.0)
    assert J.tolist() == [[1.0, 1.0]]
    # abs(x) = maximum(x, -x): both give 0 at x = 0
    assert minirad.jacobian(lambda x: ops.maximum(x, -x), 0.0).tolist() == [[0.0]]
    assert minirad.jacobian(lambda x: abs(x), 0.0).tolist() == [[0.0]]


def test_where_the_kink_derivatives_agree_with_central_differences():
    # abs and the ties of maximum/minimum take the midpoint, which a central difference
    # gives; relu takes its flat side (0) where a central difference gives 1/2
    for name, point in KINKS.items():
        op = OPS[name]
        _, partials = evaluate(op, point)
        for i, d in enumerate(partials):
            def along(t, op=op, point=point, i=i):
                return op.value(*[x + t if j == i else x for j, x in enumerate(point)])
            expected = 0.5 if name == "relu" else d
            assert _central(along, 0.0) == pytest.approx(expected)
