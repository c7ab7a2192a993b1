"""Elementary functions: one table, each operation once, for numbers and arrays.

Each entry of :data:`OPS` holds an operation's value and local partials,
its rule for numbers beside its rule for numpy arrays.  The tracer
(:mod:`minirad.tracing.tracer`) computes a value with the rule for numbers
when every operand is a number, with numpy's otherwise, and when an
algorithm reads an edge's label it takes the partial: a float between
numbers, a diagonal Jacobian block between arrays (a bit mask where the
partial is a boolean array, as for ``relu``).  Where one formula serves
both (``a * b``, ``1.0 - y * y``) it is written once; where numbers need
:mod:`math` and arrays :mod:`numpy` (``sin``), the entry has both.

The functions below (``sin``, ``exp``, ``hypot``, ...: one per entry but
the arithmetic operators) work on traced numbers, traced arrays, plain
numbers and numpy arrays alike, and numpy's own ufuncs (``np.sin(x)``,
``np.maximum(x, 0.0)``, ``np.logaddexp(a, b)``) map onto the same entries
(:data:`UFUNCS`): every elementwise numpy ufunc of real numbers that has a
derivative somewhere is an entry, or an alias of one (``np.fmax`` is
``maximum``); :data:`IDENTITIES` give their operand back, :data:`COMPARISONS`
read values, and :data:`NOT_DIFFERENTIABLE` says why the rest are refused.

>>> from minirad import ops
>>> ops.sin(0.0), ops.sigmoid(0.0), ops.maximum(2.0, 3.0)
(0.0, 0.5, 3.0)
>>> OPS["mul"].partials[0](2.0, 5.0, 10.0)   # d(a*b)/da = b
5.0
>>> ops.relu(np.array([-1.0, 2.0]))           # the array rule, on a plain array
array([0., 2.])

Adding an operation is one entry in ``_TABLE``: its name, a template, the
rule for numbers and (where the formula differs) for arrays, what its
backward pass keeps, and numpy's name for it.  The shape of an entry
(:class:`Op`) is what every reader of the table relies on (the two tracers
of numbers, the array tracer, the generated table of
``docs/numpy_support.md``): a new operation adds a row, not a field.

Kinks
-----
Some operations have a kink, a point where the derivative jumps, or a jump
of the value itself.  There minirad uses one fixed subgradient (an element
of the set of slopes between the left and right derivatives), the same as
PyTorch (JAX agrees on relu and on the ties):

* ``abs`` at 0: derivative **0**, the midpoint of [-1, 1] (and what a central
  difference gives); ``copysign(a, b)`` in ``a`` at ``a = 0`` and ``hypot(a,
  b)`` at ``a = b = 0`` take 0 the same way;
* ``relu`` at 0: derivative **0**, the flat side (so a ReLU's Jacobian is a
  bit mask);
* ``maximum(a, b)`` and ``minimum(a, b)`` at a tie ``a == b``: **1/2** to each
  operand, so ``maximum(x, x)`` has derivative 1 and ``maximum(a, b) +
  minimum(a, b) = a + b`` keeps its derivative exactly;
* the steps ``sign``, ``floor``, ``ceil``, ``trunc``, ``rint`` and
  ``floor_divide``: derivative **0** everywhere, at their jumps too (the
  derivative on either side); ``remainder`` and ``fmod`` take the derivative
  of the piece their value lies on (1 in ``a``, minus the quotient in ``b``),
  and ``heaviside(x, h)`` has derivative 0 in ``x`` and 1 in ``h`` where ``x
  == 0``.

The array rules beyond the table follow the same convention:
``x.max()`` and ``x.min()`` (``np.max``, ``np.amax``, over any axes) share the
derivative equally among the ``k`` entries that tie for the maximum, **1/k**
each (with two entries, maximum's 1/2), so ``x.max()`` of ``[a, a]`` has
gradient ``[1/2, 1/2]``; ``np.linalg.norm`` at the zero vector and ``np.std``
of equal entries take 0, as ``abs`` does at 0.  Indexing at ``x.argmax()``
is different: it is an index, a constant at the traced point, so
``x[x.argmax()]`` gives all of the derivative to the first of the tied
entries (numpy's argmax picks the first); ``np.sort`` likewise follows its
stable permutation (equal entries keep their order), as JAX and PyTorch do.

The price of the common convention: ``relu(x)`` and ``maximum(x, 0.0)`` agree
everywhere except at exactly ``x = 0``, where their derivatives are 0 and
1/2, both valid subgradients.  Each operation's ``kink`` field in the table
says the same; the array rules follow it entry by entry.

>>> [evaluate(OPS[name], (0.0,))[1] for name in ("abs", "relu", "floor")]
[(0.0,), (0.0,), (0.0,)]
>>> evaluate(OPS["maximum"], (1.0, 1.0))[1], evaluate(OPS["minimum"], (1.0, 1.0))[1]
((0.5, 0.5), (0.5, 0.5))

``pow`` has partials wherever they are finite, including at a zero base:
d(a**0)/da = 0 for every a, and d(a**b)/db = 0 at a = 0 for b > 0 (0**b is 0
for every positive b), as JAX gives.  Where a derivative is infinite
(``sqrt``, ``cbrt``, ``arcsin`` at its ends) or undefined (``arctan2(0, 0)``)
the operation is refused with a ``ValueError``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Op:
    """An elementary operation.

    For numbers: ``value(*args)`` computes the result; ``partials[i](*args,
    out)`` the local derivative of the result with respect to argument
    ``i``, given the arguments and the result (which many rules reuse: d exp
    = exp).  For numpy arrays: ``array_value`` and ``array_partials``, the
    same rules elementwise (None: the rules for numbers work on arrays as
    written).  An array partial may be a number (a constant factor), an
    array (a diagonal Jacobian block) or a boolean array (a bit mask, which
    the backward pass rebuilds from the result).

    ``keeps[i]`` names the arrays partial ``i`` is worked out from, which the
    backward pass must keep (for a mask: nothing but the bits): operands by
    their parameter names (``x`` for one operand, ``a`` and ``b`` for two)
    and ``y`` for the result, space-separated.  ``template`` shows the
    operation over its operands ``{0}``, ``{1}``; ``ufunc`` is numpy's name
    for it (``np.<ufunc>`` on a traced value records this entry); ``kink``
    names the subgradient used at a kink, for the four operations that have
    one.
    """

    name: str
    template: str
    value: Callable[..., float]
    partials: tuple[Callable[..., float], ...]
    array_value: Callable[..., np.ndarray] | None = None
    array_partials: tuple[Callable[..., np.ndarray], ...] | None = None
    keeps: tuple[str, ...] = ()
    ufunc: str | None = None
    kink: str = ""  # the subgradient taken where the derivative jumps (see Kinks above)

    @property
    def arity(self) -> int:
        return len(self.partials)

    @functools.cached_property   # read at every traced operation; an Op never changes
    def on_arrays(self) -> tuple[Callable, tuple[Callable, ...]]:
        """The value and partials for numpy arrays."""
        return self.array_value or self.value, self.array_partials or self.partials

    def kept(self, i: int) -> tuple[int, ...]:
        """Which arrays partial ``i`` keeps: operand positions, and ``arity`` for the result."""
        try:
            return _kept(self, i)
        except TypeError:   # an Op of one's own with an unhashable field: worked out each time
            return _kept.__wrapped__(self, i)


@functools.lru_cache(maxsize=1024)   # read at every traced operation; an Op never changes
def _kept(op: Op, i: int) -> tuple[int, ...]:
    names = ("x", "y") if op.arity == 1 else ("a", "b", "y")
    words = op.keeps[i].split() if i < len(op.keeps) else ()
    return tuple(names.index(word) for word in words)


# --------------------------------------------------------- rules for numbers
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


_POW_EXPONENT = "a**b is differentiable in b only for a > 0, or a = 0 with b > 0"


def _pow_exponent(a, b, y):
    """d(a**b)/db = a**b * log(a) for a > 0, and 0 at a = 0 for b > 0 (0**b is 0 for
    every positive b); elsewhere a**b is not differentiable in b."""
    if a > 0.0:
        return y * math.log(a)
    if a == 0.0 and b > 0.0:
        return 0.0
    raise ValueError(_POW_EXPONENT)


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


# ---------------------------------------------------------- rules for arrays
# (evaluated with numpy's floating-point warnings off: a non-finite entry is
# refused by evaluate_array, with the entry that made it)
def _sigmoid_array(x):
    e = np.exp(-np.abs(x))  # never overflows; the two branches of _sigmoid at once
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(np.result_type(x, np.float32))


def _pow_base_array(a, b, y):
    return np.where(np.equal(b, 0), 0.0, b * a ** (b - 1))


def _pow_exponent_array(a, b, y):
    positive = np.greater(a, 0)
    if not np.all(positive | (np.equal(a, 0) & np.greater(b, 0))):
        raise ValueError(_POW_EXPONENT)
    return np.where(positive, y * np.log(np.where(positive, a, 1)), 0.0)


def _larger(first: bool):
    """d max(a, b)/da (``first``) or d/db on arrays: a mask of where that operand is the
    larger, or 1/2 at ties (then a diagonal)."""
    def partial(a, b, y):
        mine, other = (a, b) if first else (b, a)
        tie = np.equal(a, b)
        return np.where(tie, 0.5, mine > other) if np.any(tie) else np.greater(mine, other)
    return partial


def _smaller(first: bool):
    def partial(a, b, y):
        mine, other = (a, b) if first else (b, a)
        tie = np.equal(a, b)
        return np.where(tie, 0.5, mine < other) if np.any(tie) else np.less(mine, other)
    return partial


_LN2, _LN10 = math.log(2.0), math.log(10.0)
# Python 3.11 has both; before, the same values (cbrt to within an ulp)
_exp2 = getattr(math, "exp2", lambda x: 2.0 ** x)
_cbrt = getattr(math, "cbrt", lambda x: math.copysign(abs(x) ** (1.0 / 3.0), x))
_DEGREE = math.pi / 180.0


def _zero(*args):
    """The partial of a step (floor, sign, ...): 0 on either side of every jump."""
    return 0.0


def _logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow: the larger plus a correction."""
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _logaddexp2(a, b):
    return max(a, b) + math.log1p(2.0 ** -abs(a - b)) / _LN2


def _quotient(a, b, y):
    """The whole number of b's that a - y is (a remainder y = a - q b): read off the
    value computed, so the partial -q is that of the piece the value lies on."""
    return round((a - y) / b)


def _arctan2_partial(first: bool):
    """d arctan2(a, b)/da = b / (a^2 + b^2) (``first``), d/db = -a / (a^2 + b^2)."""
    def partial(a, b, y):
        r = math.hypot(a, b)
        return (b if first else -a) / r / r
    return partial


def _hypot_partial(first: bool):
    """d hypot(a, b)/da = a / y (``first``) or b / y; 0 at a = b = 0 (see Kinks)."""
    def partial(a, b, y):
        return ((a if first else b) / y) if y else 0.0
    return partial


def _copysign_partial(a, b, y):
    """d copysign(a, b)/da: the sign of a times the sign b lends; 0 at a = 0."""
    return _sign(a) * math.copysign(1.0, b)


def _heaviside(x, h):
    return 0.0 if x < 0.0 else (h if x == 0.0 else 1.0)


# ---------------------------------------------- array rules for the entries below
def _quotient_array(a, b, y):
    return -np.rint((a - y) / b)


def _arctan2_array(first: bool):
    def partial(a, b, y):
        r = np.hypot(a, b)
        return (b if first else -a) / r / r
    return partial


def _hypot_array(first: bool):
    def partial(a, b, y):
        # written as one quotient of two wheres, so it runs on traced numbers too
        return np.where(y != 0, a if first else b, 0.0) / np.where(y != 0, y, 1)
    return partial


_STEP = "a jump: derivative 0 on either side and at it"


def _steps(name: str, number: Callable, array: Callable) -> Op:
    """A step function (floor, sign, ...): its derivative is 0 wherever it has one."""
    return Op(name, f"{name}({{0}})", number, (_zero,), array, (_zero,), keeps=("",),
              ufunc=name, kink=_STEP)

_TABLE = [
    # binary ------------------------------------------------------------
    Op("add", "{0} + {1}", lambda a, b: a + b, (lambda a, b, y: 1.0, lambda a, b, y: 1.0),
       keeps=("", ""), ufunc="add"),
    Op("sub", "{0} - {1}", lambda a, b: a - b, (lambda a, b, y: 1.0, lambda a, b, y: -1.0),
       keeps=("", ""), ufunc="subtract"),
    Op("mul", "{0} * {1}", lambda a, b: a * b, (lambda a, b, y: b, lambda a, b, y: a),
       keeps=("b", "a"), ufunc="multiply"),
    Op("div", "{0} / {1}", lambda a, b: a / b,
       (lambda a, b, y: 1.0 / b, lambda a, b, y: -y / b), keeps=("b", "y b"), ufunc="divide"),
    Op("pow", "{0} ** {1}", _pow, (_pow_base, _pow_exponent),
       np.power, (_pow_base_array, _pow_exponent_array), keeps=("a b", "y a"), ufunc="power"),
    Op("float_power", "float_power({0}, {1})", _pow, (_pow_base, _pow_exponent),
       np.float_power, (_pow_base_array, _pow_exponent_array), keeps=("a b", "y a"),
       ufunc="float_power"),
    Op("maximum", "maximum({0}, {1})", max,
       (lambda a, b, y: _tie(a, b, True), lambda a, b, y: _tie(a, b, False)),
       np.maximum, (_larger(True), _larger(False)), keeps=("a b", "a b"), ufunc="maximum",
       kink="a tie a == b: 1/2 to each operand"),
    Op("minimum", "minimum({0}, {1})", min,
       (lambda a, b, y: _tie_min(a, b, True), lambda a, b, y: _tie_min(a, b, False)),
       np.minimum, (_smaller(True), _smaller(False)), keeps=("a b", "a b"), ufunc="minimum",
       kink="a tie a == b: 1/2 to each operand"),
    Op("arctan2", "arctan2({0}, {1})", math.atan2,
       (_arctan2_partial(True), _arctan2_partial(False)),
       np.arctan2, (_arctan2_array(True), _arctan2_array(False)), keeps=("a b", "a b"),
       ufunc="arctan2"),
    Op("hypot", "hypot({0}, {1})", math.hypot, (_hypot_partial(True), _hypot_partial(False)),
       np.hypot, (_hypot_array(True), _hypot_array(False)), keeps=("a y", "b y"),
       ufunc="hypot", kink="a = b = 0: derivative 0 in both"),
    Op("logaddexp", "logaddexp({0}, {1})", _logaddexp,
       (lambda a, b, y: math.exp(a - y), lambda a, b, y: math.exp(b - y)),
       np.logaddexp, (lambda a, b, y: np.exp(a - y), lambda a, b, y: np.exp(b - y)),
       keeps=("a y", "b y"), ufunc="logaddexp"),
    Op("logaddexp2", "logaddexp2({0}, {1})", _logaddexp2,
       (lambda a, b, y: 2.0 ** (a - y), lambda a, b, y: 2.0 ** (b - y)),
       np.logaddexp2, (lambda a, b, y: np.exp2(a - y), lambda a, b, y: np.exp2(b - y)),
       keeps=("a y", "b y"), ufunc="logaddexp2"),
    Op("copysign", "copysign({0}, {1})", math.copysign, (_copysign_partial, _zero),
       np.copysign, (lambda a, b, y: np.sign(a) * np.sign(y), _zero),  # y's sign is b's
       keeps=("a y", ""), ufunc="copysign", kink="a = 0: derivative 0 in a (as abs)"),
    Op("remainder", "remainder({0}, {1})", lambda a, b: a % b,
       (lambda a, b, y: 1.0, lambda a, b, y: -_quotient(a, b, y)),
       np.remainder, (lambda a, b, y: 1.0, _quotient_array), keeps=("", "a b y"),
       ufunc="remainder", kink="a jump (a/b whole): the derivative of the piece it lies on"),
    Op("fmod", "fmod({0}, {1})", math.fmod,
       (lambda a, b, y: 1.0, lambda a, b, y: -_quotient(a, b, y)),
       np.fmod, (lambda a, b, y: 1.0, _quotient_array), keeps=("", "a b y"), ufunc="fmod",
       kink="a jump (a/b whole): the derivative of the piece it lies on"),
    Op("floor_divide", "floor_divide({0}, {1})", lambda a, b: float(a // b), (_zero, _zero),
       np.floor_divide, (_zero, _zero), keeps=("", ""), ufunc="floor_divide", kink=_STEP),
    Op("heaviside", "heaviside({0}, {1})", _heaviside,
       (_zero, lambda x, h, y: 1.0 if x == 0.0 else 0.0),
       np.heaviside, (_zero, lambda x, h, y: np.equal(x, 0) * np.ones_like(y)),
       keeps=("", "a"), ufunc="heaviside", kink="x = 0: derivative 0 in x, 1 in h"),
    # unary -------------------------------------------------------------
    Op("neg", "-{0}", lambda x: -x, (lambda x, y: -1.0,), keeps=("",), ufunc="negative"),
    Op("abs", "abs({0})", abs, (lambda x, y: _sign(x),),
       np.abs, (lambda x, y: np.sign(x),), keeps=("x",), ufunc="absolute",
       kink="x = 0: derivative 0"),
    _steps("sign", _sign, np.sign),
    _steps("floor", lambda x: float(math.floor(x)), np.floor),
    _steps("ceil", lambda x: float(math.ceil(x)), np.ceil),
    _steps("trunc", lambda x: float(math.trunc(x)), np.trunc),
    _steps("rint", lambda x: float(round(x)), np.rint),   # both round half to even
    Op("sin", "sin({0})", math.sin, (lambda x, y: math.cos(x),),
       np.sin, (lambda x, y: np.cos(x),), keeps=("x",), ufunc="sin"),
    Op("cos", "cos({0})", math.cos, (lambda x, y: -math.sin(x),),
       np.cos, (lambda x, y: -np.sin(x),), keeps=("x",), ufunc="cos"),
    Op("tan", "tan({0})", math.tan, (lambda x, y: 1.0 + y * y,),
       np.tan, keeps=("y",), ufunc="tan"),
    Op("arcsin", "arcsin({0})", math.asin, (lambda x, y: 1.0 / math.sqrt(1.0 - x * x),),
       np.arcsin, (lambda x, y: 1.0 / np.sqrt(1.0 - x * x),), keeps=("x",), ufunc="arcsin"),
    Op("arccos", "arccos({0})", math.acos, (lambda x, y: -1.0 / math.sqrt(1.0 - x * x),),
       np.arccos, (lambda x, y: -1.0 / np.sqrt(1.0 - x * x),), keeps=("x",), ufunc="arccos"),
    Op("arctan", "arctan({0})", math.atan, (lambda x, y: 1.0 / (1.0 + x * x),), np.arctan,
       keeps=("x",), ufunc="arctan"),
    Op("sinh", "sinh({0})", math.sinh, (lambda x, y: math.cosh(x),),
       np.sinh, (lambda x, y: np.cosh(x),), keeps=("x",), ufunc="sinh"),
    Op("cosh", "cosh({0})", math.cosh, (lambda x, y: math.sinh(x),),
       np.cosh, (lambda x, y: np.sinh(x),), keeps=("x",), ufunc="cosh"),
    Op("tanh", "tanh({0})", math.tanh, (lambda x, y: 1.0 - y * y,), np.tanh, keeps=("y",),
       ufunc="tanh"),
    Op("arcsinh", "arcsinh({0})", math.asinh, (lambda x, y: 1.0 / math.hypot(x, 1.0),),
       np.arcsinh, (lambda x, y: 1.0 / np.hypot(x, 1.0),), keeps=("x",), ufunc="arcsinh"),
    Op("arccosh", "arccosh({0})", math.acosh,
       (lambda x, y: 1.0 / (math.sqrt(x - 1.0) * math.sqrt(x + 1.0)),), np.arccosh,
       (lambda x, y: 1.0 / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0)),), keeps=("x",),
       ufunc="arccosh"),
    Op("arctanh", "arctanh({0})", math.atanh, (lambda x, y: 1.0 / (1.0 - x * x),), np.arctanh,
       keeps=("x",), ufunc="arctanh"),
    Op("exp", "exp({0})", math.exp, (lambda x, y: y,), np.exp, keeps=("y",), ufunc="exp"),
    Op("exp2", "exp2({0})", _exp2, (lambda x, y: y * _LN2,), np.exp2, keeps=("y",),
       ufunc="exp2"),
    Op("expm1", "expm1({0})", math.expm1, (lambda x, y: math.exp(x),),
       np.expm1, (lambda x, y: np.exp(x),), keeps=("x",), ufunc="expm1"),
    Op("log", "log({0})", math.log, (lambda x, y: 1.0 / x,), np.log, keeps=("x",),
       ufunc="log"),
    Op("log2", "log2({0})", math.log2, (lambda x, y: 1.0 / (x * _LN2),), np.log2,
       keeps=("x",), ufunc="log2"),
    Op("log10", "log10({0})", math.log10, (lambda x, y: 1.0 / (x * _LN10),), np.log10,
       keeps=("x",), ufunc="log10"),
    Op("log1p", "log1p({0})", math.log1p, (lambda x, y: 1.0 / (1.0 + x),), np.log1p,
       keeps=("x",), ufunc="log1p"),
    Op("sqrt", "sqrt({0})", math.sqrt, (lambda x, y: 0.5 / y,), np.sqrt, keeps=("y",),
       ufunc="sqrt"),
    Op("cbrt", "cbrt({0})", _cbrt, (lambda x, y: 1.0 / (3.0 * y * y),), np.cbrt,
       keeps=("y",), ufunc="cbrt"),
    Op("reciprocal", "1 / {0}", lambda x: 1.0 / x, (lambda x, y: -y * y,), np.reciprocal,
       keeps=("y",), ufunc="reciprocal"),
    Op("deg2rad", "deg2rad({0})", lambda x: x * _DEGREE, (lambda x, y: _DEGREE,), np.deg2rad,
       keeps=("",), ufunc="deg2rad"),
    Op("rad2deg", "rad2deg({0})", lambda x: x / _DEGREE, (lambda x, y: 1.0 / _DEGREE,),
       np.rad2deg, keeps=("",), ufunc="rad2deg"),
    Op("sigmoid", "sigmoid({0})", _sigmoid, (lambda x, y: y * (1.0 - y),), _sigmoid_array,
       keeps=("y",)),
    Op("relu", "relu({0})", lambda x: x if x > 0.0 else 0.0,
       (lambda x, y: 1.0 if x > 0.0 else 0.0,),
       lambda x: np.maximum(x, 0.0), (lambda x, y: np.greater(x, 0.0),), keeps=("y",),
       kink="x = 0: derivative 0"),
    # the unit edge that gives an output its own vertex
    Op("copy", "{0}", lambda x: x, (lambda x, y: 1.0,), keeps=("",)),
]

OPS: dict[str, Op] = {op.name: op for op in _TABLE}
"""Every elementary operation by name."""

UFUNCS: dict[str, Op] = {op.ufunc: op for op in _TABLE if op.ufunc}
"""The entries by numpy's name for them: ``np.sin(x)`` on a traced value records
``UFUNCS["sin"]``.  numpy's other names for the same functions are aliases here
(``np.fabs`` is ``absolute`` on real numbers, ``np.fmax`` is ``maximum`` on finite ones)."""
UFUNCS.update({"true_divide": OPS["div"],   # numpy < 2 names its division so
               "fabs": OPS["abs"], "fmax": OPS["maximum"],
               "fmin": OPS["minimum"], "radians": OPS["deg2rad"], "degrees": OPS["rad2deg"]})

IDENTITIES = ("positive", "conjugate")
"""numpy ufuncs that give a real operand back unchanged (``np.positive(x)`` is ``+x``, and
``np.conj`` of a real number is itself): on a traced value they return it, as ``+x`` does."""

COMPARISONS = ("less", "less_equal", "greater", "greater_equal", "equal", "not_equal",
               "isfinite", "isnan", "isinf", "signbit", "logical_and", "logical_or",
               "logical_xor", "logical_not")
"""numpy ufuncs that read a traced value without differentiating it: their
results are plain booleans (at the traced point a comparison is a constant)."""

NOT_DIFFERENTIABLE = {
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_count", "invert",
                     "left_shift", "right_shift", "gcd", "lcm", "isnat"),
                    "it works on integers (or dates), which have no derivative"),
    **dict.fromkeys(("frexp", "ldexp"), "it splits or builds a float from an integer "
                                        "exponent; write x * 2.0 ** e instead"),
    **dict.fromkeys(("nextafter", "spacing"), "it measures floating-point spacing, not a "
                                              "function of real numbers"),
}
"""numpy ufuncs on numbers that are neither an entry nor a comparison, and why: their
message when called on a traced value.  (``square``, ``matmul``, ``modf``, ``divmod``
and the vector products are array rules of :mod:`minirad.tracing.rules`.)"""


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


def partial_at(op: Op, positions, values, y) -> float:
    """The partial of ``op`` on numbers in its operands at ``positions``, added in order:
    an operand that stands twice (``x * x``) is one edge of the graph, whose label is
    the sum of its partials.

    >>> partial_at(OPS["mul"], (0, 1), (3.0, 3.0), 9.0)
    6.0
    """
    d = float(op.partials[positions[0]](*values, y))
    for i in positions[1:]:     # (not sum(), whose 0 + -0.0 would lose the sign of 0)
        d += op.partials[i](*values, y)
    return d


def _first_bad(array, args) -> str:
    """Where ``array`` is first not finite, and the operands there."""
    where = np.unravel_index(int(np.flatnonzero(~np.isfinite(array))[0]), np.shape(array))
    shown = []
    for a in args:
        a = np.broadcast_to(a, np.shape(array))
        shown.append(repr(float(a[where])))
    return f"at index {tuple(int(i) for i in where)}, where the operands are {', '.join(shown)}"


def evaluate_array(op: Op, args: tuple, wrt=None) -> tuple[np.ndarray, tuple]:
    """Value and local partials of ``op`` on numpy arrays (and numbers), elementwise,
    checked finite: the array counterpart of :func:`evaluate`.  A partial is a number,
    an array or a boolean mask (see :class:`Op`).

    >>> out, (d,) = evaluate_array(OPS["tanh"], (np.zeros(2),))
    >>> out, d
    (array([0., 0.]), array([1., 1.]))
    >>> evaluate_array(OPS["log"], (np.array([1.0, -1.0]),))
    Traceback (most recent call last):
    ...
    minirad.tracing.ops.NonFiniteError: log: the result is nan at index (1,), where ...
    """
    value, rules = op.on_arrays
    with np.errstate(all="ignore"):
        try:
            out = np.asarray(value(*args))
        except (ArithmeticError, ValueError) as error:
            raise NonFiniteError(f"{op.name} is undefined here ({error})") from None
        if out.dtype.kind != "f":
            raise TypeError(f"{op.name} gave a result of dtype {out.dtype}; minirad "
                            f"differentiates floating-point arrays")
        if not np.isfinite(out).all():
            first = out.flat[np.flatnonzero(~np.isfinite(out))[0]]
            raise NonFiniteError(f"{op.name}: the result is {first} {_first_bad(out, args)}")
        partials = []
        for i in range(op.arity) if wrt is None else wrt:
            which = "its derivative" if op.arity == 1 else f"its derivative in argument {i}"
            try:
                d = rules[i](*args, out)
            except (ArithmeticError, ValueError) as error:
                raise NonFiniteError(f"{op.name}: {which} is not finite here "
                                     f"({error})") from None
            if np.asarray(d).dtype != np.bool_ and not np.isfinite(d).all():
                first = np.asarray(d).flat[np.flatnonzero(~np.isfinite(d))[0]]
                raise NonFiniteError(f"{op.name}: {which} is {first} "
                                     f"{_first_bad(np.asarray(d), args)}")
            partials.append(d)
    return out, tuple(partials)


def traced_partials(op: Op, args: tuple, out, wrt=None) -> tuple:
    """The local partials of ``op`` computed on traced numbers (or dual numbers):
    ``args`` and ``out`` are the operands and the result as values of another trace,
    so each partial comes back as a value of that trace too, a function of the
    operands that can itself be differentiated (what a recorded backward pass needs).

    The rules run are the array rules, written with numpy, which applies ``np.cos``
    and the like to traced numbers by calling their methods; a partial that does
    not depend on a traced operand (the 1 of a sum, the mask of a relu) comes back
    as a float.

    >>> from minirad.tracing.tracer import trace
    >>> g = trace(lambda x: traced_partials(OPS["sin"], (x,), sin(x))[0], 0.0)
    >>> g.ops[-1], g.value(g.outputs[0])      # d sin(x)/dx = cos(x), recorded
    ('cos({0})', 1.0)
    """
    rules = op.on_arrays[1]
    partials = []
    for i in range(op.arity) if wrt is None else wrt:
        d = rules[i](*args, out)
        if isinstance(d, np.ndarray):  # np.where over traced numbers: a 0-d object array
            d = d[()]
        partials.append(d if hasattr(d, "_record") else float(d))
    return tuple(partials)


def _real_array(x, op: Op) -> np.ndarray:
    if x.dtype.kind in "iu":
        return x.astype(np.float64)
    if x.dtype.kind != "f":
        raise TypeError(f"{op.name} does not support arrays of dtype {x.dtype}; use real "
                        f"numbers, traced values or numpy arrays of them")
    return x


def apply(op: Op, *args):
    """Apply ``op`` to traced values, plain numbers or numpy arrays."""
    for x in args:
        record = getattr(x, "_record", None)
        if record is not None:
            return record(op, args)
    arrays = [x for x in args if isinstance(x, np.ndarray)]
    if any(x.dtype == object for x in arrays):
        # an object array of traced numbers: one operation per element
        result = np.frompyfunc(lambda *xs: apply(op, *xs), op.arity, 1)(*args)
        if all(type(r) is float for r in np.ravel(result)):
            return np.asarray(result, dtype=float)
        return result
    for x in args:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating,
                                                     np.ndarray)):
            raise TypeError(f"{op.name} does not support {type(x).__name__} operands; use "
                            f"numbers, traced values or numpy arrays of them")
    if arrays:
        args = tuple(_real_array(x, op) if isinstance(x, np.ndarray) else x for x in args)
        return evaluate_array(op, args, wrt=())[0]
    try:
        floats = tuple(float(x) for x in args)
    except OverflowError:  # an int beyond 1.8e308, such as 2**2000
        raise NonFiniteError(f"{op.name}: an integer argument is too large for a float64 (at "
                             f"most about 1.8e308)") from None
    return evaluate(op, floats)[0]


def _function(name: str):
    """The operation ``name`` of the table as a function of one argument: a
    traced value (which records it), a number, or a numpy array (elementwise).
    Tracing calls these once per operation, so a traced value is served
    first and in one call; everything else goes through :func:`apply`."""
    op = OPS[name]

    def function(x):
        record = getattr(x, "_record", None)
        if record is not None:
            return record(op, (x,))
        return apply(op, x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``{op.template.format('x')}`` of a traced number or array, a "
                        f"number, or elementwise of a numpy array.")
    return function


def _function_of_two(name: str):
    """The operation ``name`` of the table as a function of two arguments."""
    op = OPS[name]

    def function(a, b):
        return apply(op, a, b)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"``{op.template.format('a', 'b')}`` of traced numbers or arrays, "
                        f"numbers, or elementwise of numpy arrays.")
    return function


# one function per operation, named as in the table, so that a new entry is a new
# function too: sin, cos, ..., hypot, logaddexp, ... (the arithmetic operators are
# + - * / ** and unary - +, abs() is abs, copy is for outputs only)
_OPERATORS = ("add", "sub", "mul", "div", "pow", "neg", "abs", "copy")
for _op in _TABLE:
    if _op.name not in _OPERATORS and _op.name not in ("maximum", "minimum"):
        globals()[_op.name] = (_function if _op.arity == 1 else _function_of_two)(_op.name)


def maximum(x, y):
    """The larger of ``x`` and ``y`` (elementwise); 1/2 to each at a tie (see Kinks)."""
    return apply(OPS["maximum"], x, y)


def minimum(x, y):
    """The smaller of ``x`` and ``y`` (elementwise); 1/2 to each at a tie (see Kinks)."""
    return apply(OPS["minimum"], x, y)
