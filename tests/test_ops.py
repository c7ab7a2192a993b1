"""The operation table: every local partial against a central difference."""

import math

import numpy as np
import pytest

from minirad import ops
from minirad.ops import OPS, evaluate

POINTS = {"log": 1.3, "log1p": 0.4, "sqrt": 2.2, "relu": 0.7, "abs": -0.8}
BINARY_POINTS = [(1.3, 0.6), (0.6, 1.3), (2.0, -0.5)]


@pytest.mark.parametrize("name", [n for n, op in OPS.items() if op.arity == 1])
def test_unary_partials_match_central_differences(name):
    op = OPS[name]
    x = POINTS.get(name, 0.37)
    h = 1e-6
    _, (d,) = evaluate(op, (x,))
    fd = (op.value(x + h) - op.value(x - h)) / (2 * h)
    assert d == pytest.approx(fd, rel=1e-7, abs=1e-8)


@pytest.mark.parametrize("name", [n for n, op in OPS.items() if op.arity == 2])
@pytest.mark.parametrize("a, b", BINARY_POINTS)
def test_binary_partials_match_central_differences(name, a, b):
    op = OPS[name]
    if name == "pow" and a < 0:
        pytest.skip("a negative base has no real power for a general exponent")
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
