"""Elementary functions: one table with each operation's value and local partials.

The tracer (:mod:`minirad.trace`) reads this table to record a vertex and
its incoming edges; the functions below (``sin``, ``exp``, ...) work on
traced scalars and plain numbers alike, and elementwise on numpy arrays.

>>> from minirad import ops
>>> ops.sin(0.0), ops.sigmoid(0.0), ops.maximum(2.0, 3.0)
(0.0, 0.5, 3.0)
>>> OPS["mul"].partials[0](2.0, 5.0, 10.0)   # d(a*b)/da = b
5.0

Kinks
-----
Four operations have a kink, a point where the derivative jumps.  There
minirad uses one fixed subgradient (an element of the set of slopes
between the left and right derivatives), the same as PyTorch (JAX agrees on
relu and on the ties):

* ``abs`` at 0: derivative **0**, the midpoint of [-1, 1] (and what a central
  difference gives);
* ``relu`` at 0: derivative **0**, the flat side (so a ReLU's Jacobian is a
  bit mask);
* ``maximum(a, b)`` and ``minimum(a, b)`` at a tie ``a == b``: **1/2** to each
  operand, so ``maximum(x, x)`` has derivative 1 and ``maximum(a, b) +
  minimum(a, b) = a + b`` keeps its derivative exactly.

The price of the common convention: ``relu(x)`` and ``maximum(x, 0.0)`` agree
everywhere except at exactly ``x = 0``, where their derivatives are 0 and
1/2, both valid subgradients.  Each operation's ``kink`` field in the table
says the same.

>>> [evaluate(OPS[name], (0.0,))[1] for name in ("abs", "relu")]
[(0.0,), (0.0,)]
>>> evaluate(OPS["maximum"], (1.0, 1.0))[1], evaluate(OPS["minimum"], (1.0, 1.0))[1]
((0.5, 0.5), (0.5, 0.5))

``pow`` has partials wherever they are finite, including at a zero base:
d(a**0)/da = 0 for every a, and d(a**b)/db = 0 at a = 0 for b > 0 (0**b is 0
for every positive b), as JAX gives.
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
    ``template`` shows the operation over its operands ``{0}``, ``{1}``;
    ``kink`` names the subgradient used at a kink, for the four operations
    that have one.
    """

    name: str
    template: str
    value: Callable[..., float]
    partials: tuple[Callable[..., float], ...]
    kink: str = ""  # the subgradient taken where the derivative jumps (see Kinks above)

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


def _pow_base(a, b, y):
    """d(a**b)/da = b * a**(b-1), and 0 for b = 0: a**0 is 1 for every a, 0 included."""
    if b == 0.0:
        return 0.0
    return b * _pow(a, b - 1.0)


def _pow_exponent(a, b, y):
    """d(a**b)/db = a**b * log(a) for a > 0, and 0 at a = 0 for b > 0 (0**b is 0 for
    every positive b); elsewhere a**b is not differentiable in b."""
    if a > 0.0:
        return y * math.log(a)
    if a == 0.0 and b > 0.0:
        return 0.0
    raise ValueError("a**b is differentiable in b only for a > 0, or a = 0 with b > 0")


def _tie(a, b, first: bool) -> float:
    """d max(a, b)/da (``first``) or d/db: 1 for the larger, 1/2 each at a tie."""
    if a == b:
        return 0.5
    return 1.0 if (a > b) == first else 0.0


def _tie_min(a, b, first: bool) -> float:
    """d min(a, b)/da (``first``) or d/db: 1 for the smaller, 1/2 each at a tie."""
    if a == b:
        return 0.5
    return 1.0 if (a < b) == first else 0.0


_TABLE = [
    # binary ------------------------------------------------------------
    Op("add", "{0} + {1}", lambda a, b: a + b, (lambda a, b, y: 1.0, lambda a, b, y: 1.0)),
    Op("sub", "{0} - {1}", lambda a, b: a - b, (lambda a, b, y: 1.0, lambda a, b, y: -1.0)),
    Op("mul", "{0} * {1}", lambda a, b: a * b, (lambda a, b, y: b, lambda a, b, y: a)),
    Op("div", "{0} / {1}", lambda a, b: a / b,
       (lambda a, b, y: 1.0 / b, lambda a, b, y: -y / b)),
    Op("pow", "{0} ** {1}", _pow, (_pow_base, _pow_exponent)),
    Op("maximum", "maximum({0}, {1})", max,
       (lambda a, b, y: _tie(a, b, True), lambda a, b, y: _tie(a, b, False)),
       kink="a tie a == b: 1/2 to each operand"),
    Op("minimum", "minimum({0}, {1})", min,
       (lambda a, b, y: _tie_min(a, b, True), lambda a, b, y: _tie_min(a, b, False)),
       kink="a tie a == b: 1/2 to each operand"),
    # unary -------------------------------------------------------------
    Op("neg", "-{0}", lambda x: -x, (lambda x, y: -1.0,)),
    Op("abs", "abs({0})", abs, (lambda x, y: _sign(x),), kink="x = 0: derivative 0"),
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
       (lambda x, y: 1.0 if x > 0.0 else 0.0,), kink="x = 0: derivative 0"),
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
    minirad.tracing.ops.NonFiniteError: sqrt(0.0) = 0.0, but its derivative there is not finite ...
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
    try:
        floats = tuple(float(x) for x in args)
    except OverflowError:  # an int beyond 1.8e308, such as 2**2000
        raise NonFiniteError(f"{op.name}: an integer argument is too large for a float64 (at "
                             f"most about 1.8e308)") from None
    return evaluate(op, floats)[0]


def _function(name: str):
    """The operation ``name`` of the table as a function of one argument: a
    traced scalar (which records it), a number, or a numpy array (elementwise).
    Tracing calls these once per operation, so a traced scalar is served
    first and in one call; everything else goes through :func:`apply`."""
    op = OPS[name]

    def function(x):
        record = getattr(x, "_record", None)
        if record is not None:
            return record(op, (x,))
        return apply(op, x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``{op.template.format('x')}`` of a traced scalar, a number, or "
                        f"elementwise of a numpy array.")
    return function


sin = _function("sin")
cos = _function("cos")
tan = _function("tan")
exp = _function("exp")
log = _function("log")
log1p = _function("log1p")
sqrt = _function("sqrt")
tanh = _function("tanh")
sigmoid = _function("sigmoid")
relu = _function("relu")
arctan = _function("arctan")


def maximum(x, y):
    return apply(OPS["maximum"], x, y)


def minimum(x, y):
    return apply(OPS["minimum"], x, y)
