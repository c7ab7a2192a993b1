"""Elementary functions: one table with each operation's value and local partials.

The tracer (:mod:`minirad.trace`) reads this table to record a vertex and
its incoming edges; the functions below (``sin``, ``exp``, ...) work on
traced scalars and plain numbers alike, and elementwise on numpy arrays.

>>> from minirad import ops
>>> ops.sin(0.0), ops.sigmoid(0.0), ops.maximum(2.0, 3.0)
(0.0, 0.5, 3.0)
>>> OPS["mul"].partials[0](2.0, 5.0, 10.0)   # d(a*b)/da = b
5.0
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Op:
    """An elementary operation.

    ``value(*args)`` computes the result; ``partials[i](*args, out)`` the
    local derivative of the result with respect to argument ``i``, given the
    arguments and the result (which many rules reuse: d exp = exp).
    ``template`` shows the operation over its operands ``{0}``, ``{1}``.
    """

    name: str
    template: str
    value: Callable[..., float]
    partials: tuple[Callable[..., float], ...]

    @property
    def arity(self) -> int:
        return len(self.partials)


def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _pow(a, b):
    out = a ** b
    if isinstance(out, complex):  # a negative base to a fractional power
        raise ValueError("negative base with a non-integer exponent")
    return float(out)


def _sign(x):
    return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)


_TABLE = [
    # binary ------------------------------------------------------------
    Op("add", "{0} + {1}", lambda a, b: a + b, (lambda a, b, y: 1.0, lambda a, b, y: 1.0)),
    Op("sub", "{0} - {1}", lambda a, b: a - b, (lambda a, b, y: 1.0, lambda a, b, y: -1.0)),
    Op("mul", "{0} * {1}", lambda a, b: a * b, (lambda a, b, y: b, lambda a, b, y: a)),
    Op("div", "{0} / {1}", lambda a, b: a / b,
       (lambda a, b, y: 1.0 / b, lambda a, b, y: -y / b)),
    Op("pow", "{0} ** {1}", _pow,
       (lambda a, b, y: b * _pow(a, b - 1.0), lambda a, b, y: y * math.log(a))),
    Op("maximum", "maximum({0}, {1})", max,
       (lambda a, b, y: 1.0 if a >= b else 0.0, lambda a, b, y: 0.0 if a >= b else 1.0)),
    Op("minimum", "minimum({0}, {1})", min,
       (lambda a, b, y: 1.0 if a <= b else 0.0, lambda a, b, y: 0.0 if a <= b else 1.0)),
    # unary -------------------------------------------------------------
    Op("neg", "-{0}", lambda x: -x, (lambda x, y: -1.0,)),
    Op("abs", "abs({0})", abs, (lambda x, y: _sign(x),)),
    Op("sin", "sin({0})", math.sin, (lambda x, y: math.cos(x),)),
    Op("cos", "cos({0})", math.cos, (lambda x, y: -math.sin(x),)),
    Op("tan", "tan({0})", math.tan, (lambda x, y: 1.0 + y * y,)),
    Op("exp", "exp({0})", math.exp, (lambda x, y: y,)),
    Op("log", "log({0})", math.log, (lambda x, y: 1.0 / x,)),
    Op("log1p", "log1p({0})", math.log1p, (lambda x, y: 1.0 / (1.0 + x),)),
    Op("sqrt", "sqrt({0})", math.sqrt, (lambda x, y: 0.5 / y,)),
    Op("tanh", "tanh({0})", math.tanh, (lambda x, y: 1.0 - y * y,)),
    Op("sigmoid", "sigmoid({0})", _sigmoid, (lambda x, y: y * (1.0 - y),)),
    Op("relu", "relu({0})", lambda x: x if x > 0.0 else 0.0,
       (lambda x, y: 1.0 if x > 0.0 else 0.0,)),
    Op("arctan", "arctan({0})", math.atan, (lambda x, y: 1.0 / (1.0 + x * x),)),
    # the unit edge that gives an output its own vertex
    Op("copy", "{0}", lambda x: x, (lambda x, y: 1.0,)),
]

OPS: dict[str, Op] = {op.name: op for op in _TABLE}
"""Every elementary operation by name."""


class NonFiniteError(ValueError):
    """An operation produced a value or partial that is not a finite number."""


def _call(op: Op, args: tuple) -> str:
    return f"{op.name}({', '.join(repr(float(a)) for a in args)})"


def evaluate(op: Op, args: tuple, wrt=None) -> tuple[float, tuple[float, ...]]:
    """Value and local partials of ``op`` at float arguments, checked finite.

    ``wrt`` lists the arguments to differentiate by (default: all); a
    constant operand's derivative is never needed, nor checked.

    >>> evaluate(OPS["mul"], (2.0, 5.0))
    (10.0, (5.0, 2.0))
    >>> evaluate(OPS["sqrt"], (0.0,))
    Traceback (most recent call last):
    ...
    minirad.ops.NonFiniteError: sqrt(0.0) = 0.0, but its derivative there is not finite ...
    """
    try:
        out = float(op.value(*args))
    except (ArithmeticError, ValueError) as error:
        raise NonFiniteError(f"{_call(op, args)} is undefined ({error})") from None
    if not math.isfinite(out):
        raise NonFiniteError(f"{_call(op, args)} = {out}, not a finite number")
    partials = []
    for i in range(op.arity) if wrt is None else wrt:
        d = op.partials[i]
        which = "its derivative" if op.arity == 1 else f"its derivative in argument {i}"
        try:
            partial = float(d(*args, out))
        except (ArithmeticError, ValueError) as error:
            raise NonFiniteError(f"{_call(op, args)} = {out!r}, but {which} there is not "
                                 f"finite ({error})") from None
        if not math.isfinite(partial):
            raise NonFiniteError(f"{_call(op, args)} = {out!r}, but {which} there is "
                                 f"{partial}")
        partials.append(partial)
    return out, tuple(partials)


def apply(op: Op, *args):
    """Apply ``op`` to traced scalars, plain numbers or numpy arrays."""
    for x in args:
        record = getattr(x, "_record", None)
        if record is not None:
            return record(op, args)
    if any(isinstance(x, np.ndarray) for x in args):
        result = np.frompyfunc(lambda *xs: apply(op, *xs), op.arity, 1)(*args)
        # plain numbers in, plain float array out; traced scalars stay an object array
        if all(type(r) is float for r in np.ravel(result)):
            return np.asarray(result, dtype=float)
        return result
    for x in args:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise TypeError(f"{op.name} does not support {type(x).__name__} operands; use "
                            f"numbers, traced scalars or numpy arrays of them")
    return evaluate(op, tuple(float(x) for x in args))[0]


def sin(x):
    return apply(OPS["sin"], x)


def cos(x):
    return apply(OPS["cos"], x)


def tan(x):
    return apply(OPS["tan"], x)


def exp(x):
    return apply(OPS["exp"], x)


def log(x):
    return apply(OPS["log"], x)


def log1p(x):
    return apply(OPS["log1p"], x)


def sqrt(x):
    return apply(OPS["sqrt"], x)


def tanh(x):
    return apply(OPS["tanh"], x)


def sigmoid(x):
    return apply(OPS["sigmoid"], x)


def relu(x):
    return apply(OPS["relu"], x)


def arctan(x):
    return apply(OPS["arctan"], x)


def maximum(x, y):
    return apply(OPS["maximum"], x, y)


def minimum(x, y):
    return apply(OPS["minimum"], x, y)
