"""Lab 12's exercises: dual numbers and forward over reverse.

* Exercise 12.1: a dual number type, ``Dual(value, tangent)``, with the
  arithmetic operators both ways round and the methods ``sin``, ``cos``,
  ``exp`` and ``log`` that numpy calls (:func:`check_dual_numbers`): each rule
  on its own against its derivative by hand, then programs against minirad's
  forward sweep over the traced graph.
* Exercise 12.2: a Hessian-vector product by forward over reverse,
  ``hvp(f, x, v, gradient, Dual)``: run a reverse-mode ``gradient`` on dual
  numbers seeded with ``v`` (:func:`check_hvp`), against minirad's Hessian of
  the recorded gradient graph.  The check hands in a correct ``gradient`` and
  ``Dual`` (minirad's), so a slip in 12.1 costs no points here.

Same contract as :mod:`minirad.labs.checking`: one line on success, otherwise a
:class:`~minirad.labs.checking.CheckFailed` naming the input and what is wrong.
``tests/test_labs_higher.py`` runs both checks on correct answers.

>>> class Dual:                        # a first try, with a slip in the product rule
...     def __init__(self, value, tangent):
...         self.value, self.tangent = value, tangent
...     def __add__(self, other):
...         return Dual(self.value + other.value, self.tangent + other.tangent)
...     def __sub__(self, other):
...         return Dual(self.value - other.value, self.tangent - other.tangent)
...     def __mul__(self, other):
...         return Dual(self.value * other.value, self.tangent * other.tangent)
>>> check_dual_numbers(Dual)
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 12.1 (dual numbers), on x * y (the product rule) at \
x = 0.7, y = 1.9 with tangents 0.3, -1.1: the tangent is -0.33..., expected -0.2... -- the \
product rule is (a b)' = a' b + a b', not a' b'
>>> def hvp(f, x, v, gradient, Dual):
...     return [g.value for g in gradient(f, *(Dual(a, b) for a, b in zip(x, v)))]
>>> check_hvp(hvp)
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 12.2 (Hessian-vector product), on x*y*y + sin(x) at \
(0.7, -1.3): your Hessian-vector product entry [0] is 2.45484, expected -1.94422 -- that is \
the gradient itself: the product H v is the tangent of each gradient entry, not its value
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .checking import (
    CheckFailed,
    call_student,
    compare_jacobian,
    location,
    one,
    passed,
)
from .exercise import exercise

__all__ = ["DUAL_PROGRAMS", "HVP_PROGRAMS", "MISTAKES", "RULES", "check_dual_numbers", "check_hvp"]


#: the point and the tangents of the rules by hand
X, Y, TX, TY = 0.7, 1.9, 0.3, -1.1

#: (name, rule, value, tangent by hand) at x = X, y = Y with tangents TX, TY
RULES = [
    ("x + y", lambda x, y: x + y, X + Y, TX + TY),
    ("x - y", lambda x, y: x - y, X - Y, TX - TY),
    ("x * y (the product rule)", lambda x, y: x * y, X * Y, TX * Y + X * TY),
    ("x / y (the quotient rule)", lambda x, y: x / y, X / Y, (TX * Y - X * TY) / (Y * Y)),
    ("2.5 - x * 3.0 (constants on either side)", lambda x, y: 2.5 - x * 3.0, 2.5 - 3 * X,
     -3.0 * TX),
    ("1.0 / y + 2.0 * x (constants on either side)", lambda x, y: 1.0 / y + 2.0 * x,
     1 / Y + 2 * X, -TY / (Y * Y) + 2 * TX),
    ("np.sin(x)", lambda x, y: np.sin(x), math.sin(X), math.cos(X) * TX),
    ("np.cos(x)", lambda x, y: np.cos(x), math.cos(X), -math.sin(X) * TX),
    ("np.exp(x) + np.log(y)", lambda x, y: np.exp(x) + np.log(y), math.exp(X) + math.log(Y),
     math.exp(X) * TX + TY / Y),
]

#: (name, program of two numbers, point): numpy functions and arithmetic only, so the
#: same program runs on your duals and on minirad's traced numbers
DUAL_PROGRAMS = [
    ("the lecture's log(x1) + x1*x2 - sin(x2)", lambda a, b: np.log(a) + a * b - np.sin(b),
     (2.0, 5.0)),
    ("the lab's x*y + sin(x)", lambda a, b: a * b + np.sin(a), (2.0, 3.0)),
    ("exp(sin(x) * y) / (1 + y*y)", lambda a, b: np.exp(np.sin(a) * b) / (1.0 + b * b),
     (0.4, -0.8)),
    ("x used five times: x*x*x - x/x + cos(x)", lambda a, b: a * a * a - a / a + np.cos(a),
     (1.3, 0.0)),
    ("y alone: log(y) - 1/y", lambda a, b: np.log(b) - 1.0 / b, (0.5, 2.5)),
    ("a deep chain of sin", lambda a, b: _chain(a, b), (0.9, 0.3)),
]

#: (name, program, point, direction v) for Exercise 12.2
HVP_PROGRAMS = [
    ("x*y*y + sin(x)", lambda x, y: x * y * y + np.sin(x), (0.7, -1.3), (1.0, 0.5)),
    ("the lecture's log(x1) + x1*x2 - sin(x2)", lambda a, b: np.log(a) + a * b - np.sin(b),
     (2.0, 5.0), (-0.3, 0.8)),
    ("exp(x*y) * cos(z) / (1 + x*x)",
     lambda x, y, z: np.exp(x * y) * np.cos(z) / (1.0 + x * x), (0.3, -0.6, 1.1),
     (0.2, 1.0, -0.7)),
    ("a chain over four inputs",
     lambda a, b, c, d: np.sin(a * b) * np.log(2.0 + c * c) + d * np.exp(0.3 * a - d),
     (0.5, 1.5, -0.4, 0.8), (1.0, -1.0, 0.25, 2.0)),
]


def _chain(a, b):
    for _ in range(6):
        a = np.sin(a) * b + a
    return a


def _on_duals(program, Dual, values, tangents):
    """``program`` run on the student's duals."""
    return program(*(Dual(x, t) for x, t in zip(values, tangents)))


def _value_and_tangent(result, where: str, seeded: str):
    """The value and tangent of the student's result, which must be a dual number."""
    if not (hasattr(result, "value") and hasattr(result, "tangent")):
        raise CheckFailed(f"{where}: the program returned {type(result).__name__} "
                          f"{result!r:.60} from duals; every operation on a Dual must return "
                          f"a Dual with .value and .tangent{seeded}")
    try:
        return float(result.value), float(result.tangent)
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: the result's value and tangent are "
                          f"{type(result.value).__name__} and {type(result.tangent).__name__}; "
                          f"for numbers in they are numbers") from None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


@exercise("12.1", "dual numbers", takes=("Dual",), points=4, minutes=30, seconds=30,
          reference=("minirad.tracing.dual", "minirad.exact.sweeps", "minirad.exact.jacobians",
                     "minirad.exact.higher"))
def check_dual_numbers(Dual: Callable) -> None:
    """Exercise 12.1: ``Dual(value, tangent)`` carries ``.value`` and ``.tangent``;
    ``+ - * /`` with duals and plain numbers on either side, unary ``-`` and the
    methods ``sin``, ``cos``, ``exp``, ``log`` (which ``np.sin(d)`` and the like call)
    return duals whose tangent is the derivative along the seeded direction."""
    for name, rule, value, tangent in RULES:
        where = location("Exercise 12.1", "dual numbers", f"{name} at x = {X}, y = {Y} with "
                         f"tangents {TX}, {TY}")
        result = call_student(_on_duals, where, rule, Dual, (X, Y), (TX, TY))
        mine, mine_tangent = _value_and_tangent(result, where, "")
        if not _close(mine, value):
            hint = (_REVERSED if name.startswith("2.5 - x") and _close(mine, -value) else
                    " -- the value of a dual is the operation on the values alone")
            raise CheckFailed(f"{where}: the value is {mine!r}, expected {value!r}{hint}")
        if not _close(mine_tangent, tangent):
            raise CheckFailed(f"{where}: the tangent is {mine_tangent!r}, expected {tangent!r}"
                              f"{_rule_hint(name, mine_tangent)}")
    from ..exact.jacobians import jacobian

    for name, program, point in DUAL_PROGRAMS:
        expected = jacobian(program, *point, method="forward")[0]
        for j in range(2):
            seeds = [1.0 if i == j else 0.0 for i in range(2)]
            where = location("Exercise 12.1", "dual numbers",
                             f"{name} at {point}, seeded d/d{'xy'[j]}")
            result = call_student(_on_duals, where, program, Dual, point, seeds)
            _, tangent = _value_and_tangent(result, where, "")
            if not _close(tangent, expected[j]):
                raise CheckFailed(f"{where}: the tangent is {tangent!r}, minirad's forward "
                                  f"sweep gives {float(expected[j])!r}")
    passed("Exercise 12.1", f"{len(RULES)} rules by hand and {len(DUAL_PROGRAMS)} programs "
                            f"agree with minirad's forward sweep")


_REVERSED = " -- c - d is not d - c: __rsub__ gets the operands the other way round"


def _rule_hint(name: str, tangent: float) -> str:
    """What a wrong tangent of one rule most likely comes from."""
    slips = {
        "x * y": (TX * TY, " -- the product rule is (a b)' = a' b + a b', not a' b'"),
        "x / y": ((TX * Y + X * TY) / (Y * Y),
                  " -- the quotient rule subtracts: (a / b)' = (a' b - a b') / b^2"),
        "np.cos": (math.sin(X) * TX, " -- cos' = -sin: the sign is missing"),
        "np.exp(x) + np.log(y)": (math.exp(X) * TX + TY * Y, " -- log' = 1/y: divide the "
                                                            "tangent by the value"),
        "2.5 - x": (3.0 * TX, _REVERSED),
    }
    for start, (wrong, hint) in slips.items():
        if name.startswith(start) and _close(tangent, wrong):
            return hint
    return ""


def _minirad_gradient(f, *xs):
    """A correct reverse-mode gradient whose values may be dual numbers (what the check
    hands to the student's hvp): minirad's recorded reverse pass."""
    from ..exact.higher import recorded_gradient

    return recorded_gradient(f, xs, list(range(len(xs))), list(xs)).gradient


@exercise("12.2", "Hessian-vector product", takes=("hvp",), points=3, minutes=25, seconds=60,
          reference=("minirad.exact.higher:hvp", "minirad.exact.higher:hessian",
                     "minirad.exact.higher:gradient_graph", "minirad.exact.jacobians",
                     "minirad.exact.sweeps", "minirad.gradcheck"))
def check_hvp(fn: Callable) -> None:
    """Exercise 12.2: ``fn(f, x, v, gradient, Dual)`` returns the n numbers ``H v`` (H
    the Hessian of ``f`` at the list ``x``) by running ``gradient(f, *inputs)`` once, on
    dual numbers ``Dual(x[i], v[i])``."""
    from ..exact.higher import hessian
    from ..tracing.dual import Dual

    for name, program, point, v in HVP_PROGRAMS:
        where = location("Exercise 12.2", "Hessian-vector product", f"{name} at {point}")
        H = hessian(program, *point)
        expected = H @ np.asarray(v)
        result = call_student(fn, where, program, list(point), list(v), _minirad_gradient, Dual)
        try:
            compare_jacobian(result, expected, where, what="Hessian-vector product",
                             rtol=1e-10)
        except CheckFailed as failure:
            hint = _hvp_hint(result, program, point, v, H)
            raise CheckFailed(str(failure) + hint) from None
    passed("Exercise 12.2", f"H v agrees with minirad's Hessian on {len(HVP_PROGRAMS)} programs "
                            f"of 2 to 4 inputs")


def _hvp_hint(result, program, point, v, H) -> str:
    try:
        mine = np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        return ""
    if mine.shape != (len(point),):
        return ""
    gradient = [float(g.value) if hasattr(g, "value") else float(g)
                for g in _minirad_gradient(program, *point)]
    guesses = [
        (gradient, " -- that is the gradient itself: the product H v is the tangent of each "
                   "gradient entry, not its value"),
        (H @ np.ones(len(point)), " -- that is H times a vector of ones: seed input i with the "
                                  "tangent v[i], not 1"),
        (H[:, 0] * v[0], " -- only the first input got its tangent: seed every input i with "
                         "v[i]"),
    ]
    for guess, hint in guesses:
        if np.allclose(mine, guess, rtol=1e-9, atol=1e-12):
            return hint
    if np.allclose(mine, H @ np.asarray(v), rtol=1e-4):
        return (" -- close, but only to about 1e-5: a difference quotient of the gradient? "
                "Dual numbers give H v exactly, to rounding")
    return ""


# ------------------------------------------------------- planted mistakes
class _Dual:
    """A correct dual number, the base of the planted slips of Exercise 12.1."""

    def __init__(self, value, tangent=0.0):
        self.value, self.tangent = value, tangent

    @classmethod
    def lift(cls, x):
        return x if isinstance(x, _Dual) else cls(x, 0.0)

    def __add__(self, other):
        other = self.lift(other)
        return type(self)(self.value + other.value, self.tangent + other.tangent)

    __radd__ = __add__

    def __sub__(self, other):
        other = self.lift(other)
        return type(self)(self.value - other.value, self.tangent - other.tangent)

    def __rsub__(self, other):
        return self.lift(other) - self

    def __mul__(self, other):
        other = self.lift(other)
        return type(self)(self.value * other.value,
                          self.tangent * other.value + self.value * other.tangent)

    __rmul__ = __mul__

    def __truediv__(self, other):
        other = self.lift(other)
        return type(self)(self.value / other.value, (self.tangent * other.value - self.value
                                                     * other.tangent) / other.value ** 2)

    def __rtruediv__(self, other):
        return self.lift(other) / self

    def __neg__(self):
        return type(self)(-self.value, -self.tangent)

    def sin(self):
        return type(self)(math.sin(self.value), math.cos(self.value) * self.tangent)

    def cos(self):
        return type(self)(math.cos(self.value), -math.sin(self.value) * self.tangent)

    def exp(self):
        return type(self)(math.exp(self.value), math.exp(self.value) * self.tangent)

    def log(self):
        return type(self)(math.log(self.value), self.tangent / self.value)


def _dual_slip(name: str, method):
    """``_Dual`` with one method replaced by a wrong one."""
    return one(type("Dual", (_Dual,), {name: method}))


def _hvp_slip(kind: str):
    """A wrong Hessian-vector product for Exercise 12.2, built on the gradient and Dual
    the check hands in."""
    def hvp(f, x, v, gradient, Dual):
        if kind == "difference":  # the gradient differenced along v
            h = 1e-6
            ahead = gradient(f, *(a + h * b for a, b in zip(x, v)))
            return [(float(p) - float(q)) / h for p, q in zip(ahead, gradient(f, *x))]
        seeds = {"gradient": v, "ones": [1.0] * len(x),
                 "first": [v[0]] + [0.0] * (len(x) - 1)}[kind]
        adjoints = gradient(f, *(Dual(a, t) for a, t in zip(x, seeds)))
        read = (lambda a: a.value) if kind == "gradient" else (lambda a: a.tangent)
        return [float(read(a)) if isinstance(a, Dual) else 0.0 for a in adjoints]
    return one(hvp)


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "12.1": [
        ("the product rule as a' b'", _dual_slip(
            "__mul__", lambda self, other: type(self)(
                self.value * self.lift(other).value, self.tangent * self.lift(other).tangent))),
        ("the quotient rule with a plus", _dual_slip(
            "__truediv__", lambda self, other: type(self)(
                self.value / self.lift(other).value,
                (self.tangent * self.lift(other).value + self.value * self.lift(other).tangent)
                / self.lift(other).value ** 2))),
        ("cos' = sin, the sign lost", _dual_slip(
            "cos", lambda self: type(self)(math.cos(self.value),
                                           math.sin(self.value) * self.tangent))),
        ("log' = y instead of 1/y", _dual_slip(
            "log", lambda self: type(self)(math.log(self.value), self.tangent * self.value))),
        ("__rsub__ as d - c", _dual_slip("__rsub__", lambda self, other: self - other)),
        ("no __rmul__: 2.0 * d fails",
         _dual_slip("__rmul__", lambda self, other: NotImplemented)),
    ],
    "12.2": [
        ("the gradient's values returned, not their tangents", _hvp_slip("gradient")),
        ("every input seeded with tangent 1", _hvp_slip("ones")),
        ("only the first input seeded", _hvp_slip("first")),
        ("a difference quotient of the gradient along v", _hvp_slip("difference")),
    ],
}
