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

The rules and programs travel by name (:data:`RULES`, :data:`DUAL_PROGRAMS`,
:data:`HVP_PROGRAMS`), the points, tangents and directions as numbers; the
hidden cases draw those at random.  One program of 12.2 leaves an input
unused, so that the gradient the check hands in has a plain ``0.0`` there,
not a dual number: an ``hvp`` that reads ``.tangent`` of every entry fails it.

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

import numpy as np

from .checking import CheckFailed, call_student, compare_jacobian, one
from .exercise import exercise

__all__ = ["DUAL_PROGRAMS", "HVP_PROGRAMS", "MISTAKES", "RULES", "check_dual_numbers",
           "check_hvp"]

#: the point and the tangents of the published rules
X, Y, TX, TY = 0.7, 1.9, 0.3, -1.1

#: (name, rule, value(x, y), tangent(x, y, tx, ty) by hand)
RULES = [
    ("x + y", lambda x, y: x + y, lambda x, y: x + y, lambda x, y, tx, ty: tx + ty),
    ("x - y", lambda x, y: x - y, lambda x, y: x - y, lambda x, y, tx, ty: tx - ty),
    ("x * y (the product rule)", lambda x, y: x * y, lambda x, y: x * y,
     lambda x, y, tx, ty: tx * y + x * ty),
    ("x / y (the quotient rule)", lambda x, y: x / y, lambda x, y: x / y,
     lambda x, y, tx, ty: (tx * y - x * ty) / (y * y)),
    ("2.5 - x * 3.0 (constants on either side)", lambda x, y: 2.5 - x * 3.0,
     lambda x, y: 2.5 - 3 * x, lambda x, y, tx, ty: -3.0 * tx),
    ("1.0 / y + 2.0 * x (constants on either side)", lambda x, y: 1.0 / y + 2.0 * x,
     lambda x, y: 1 / y + 2 * x, lambda x, y, tx, ty: -ty / (y * y) + 2 * tx),
    ("np.sin(x)", lambda x, y: np.sin(x), lambda x, y: math.sin(x),
     lambda x, y, tx, ty: math.cos(x) * tx),
    ("np.cos(x)", lambda x, y: np.cos(x), lambda x, y: math.cos(x),
     lambda x, y, tx, ty: -math.sin(x) * tx),
    ("np.exp(x) + np.log(y)", lambda x, y: np.exp(x) + np.log(y),
     lambda x, y: math.exp(x) + math.log(y), lambda x, y, tx, ty: math.exp(x) * tx + ty / y),
]


def _chain(a, b):
    for _ in range(6):
        a = np.sin(a) * b + a
    return a


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
    ("a deep chain of sin", _chain, (0.9, 0.3)),
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
    ("exp(x) * sin(y), z unused (its gradient entry is a plain 0.0)",
     lambda x, y, z: np.exp(x) * np.sin(y), (0.5, 1.0, 2.0), (0.3, -0.2, 1.5)),
]

_RULES = {name: (rule, value, tangent) for name, rule, value, tangent in RULES}
_DUAL_PROGRAMS = {name: (program, point) for name, program, point in DUAL_PROGRAMS}
_HVP_PROGRAMS = {name: (program, point, v) for name, program, point, v in HVP_PROGRAMS}

#: where the hidden points may fall, per program (logarithms of positive numbers only)
_DOMAINS = {"the lecture's log(x1) + x1*x2 - sin(x2)": ([0.5, -3.0], [3.0, 6.0]),
            "y alone: log(y) - 1/y": ([-2.0, 0.5], [2.0, 3.0]),
            "x used five times: x*x*x - x/x + cos(x)": ([0.5, -1.0], [2.0, 1.0])}


def _round(values) -> list[float]:
    return [round(float(v), 3) for v in values]


# ----------------------------------------------------------------- 12.1
def _dual_cases(rng) -> list[dict]:
    if rng is None:
        x, y, tx, ty = X, Y, TX, TY
        programs = [(name, list(point)) for name, _, point in DUAL_PROGRAMS]
    else:
        x, y = _round(rng.uniform([0.3, 0.5], [1.5, 2.5]))
        tx, ty = _round(rng.uniform(-1.5, 1.5, 2))
        programs = [(name, _round(rng.uniform(*_DOMAINS.get(name, ([-1.5, -1.5], [1.5, 1.5])))))
                    for name, _, _ in DUAL_PROGRAMS]
    cases = [{"name": f"{name} at x = {x}, y = {y} with tangents {tx}, {ty}", "rule": name,
              "point": [x, y], "tangents": [tx, ty]} for name, *_ in RULES]
    for name, point in programs:
        for j in range(2):
            cases.append({"name": f"{name} at {tuple(point)}, seeded d/d{'xy'[j]}",
                          "program": name, "point": point,
                          "tangents": [1.0 if i == j else 0.0 for i in range(2)]})
    return cases


def _probe_dual(fns, case, where):
    Dual = fns[0]
    f = _RULES[case["rule"]][0] if "rule" in case else _DUAL_PROGRAMS[case["program"]][0]

    def on_duals():
        return f(*(Dual(x, t) for x, t in zip(case["point"], case["tangents"])))

    result = call_student(on_duals, where)
    if not (hasattr(result, "value") and hasattr(result, "tangent")):
        return {"dual": False, "type": type(result).__name__, "repr": repr(result)[:60]}
    return {"dual": True, "value": result.value, "tangent": result.tangent}


def _value_and_tangent(answer, where: str):
    """The value and tangent of the student's result, which must be a dual number."""
    if not (isinstance(answer, dict) and "dual" in answer):
        raise CheckFailed(f"{where}: the grader could not read your result")
    if not answer["dual"]:
        raise CheckFailed(f"{where}: the program returned {answer['type']} "
                          f"{answer['repr']} from duals; every operation on a Dual must return "
                          f"a Dual with .value and .tangent")
    try:
        return float(answer["value"]), float(answer["tangent"])
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: the result's value and tangent are "
                          f"{type(answer['value']).__name__} and "
                          f"{type(answer['tangent']).__name__}; for numbers in they are "
                          f"numbers") from None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-12 * max(1.0, abs(b))


_REVERSED = " -- c - d is not d - c: __rsub__ gets the operands the other way round"
_REVERSED_DIV = (" -- c / d is not d / c: __rtruediv__ gets the operands the other way round "
                 "(1.0 / y calls y.__rtruediv__(1.0), which must compute 1.0 / y)")


def _value_hint(name: str, x: float, y: float, value: float) -> str:
    """What a wrong value of one rule most likely comes from."""
    if name.startswith("2.5 - x") and _close(value, -(2.5 - 3 * x)):
        return _REVERSED
    if name.startswith("1.0 / y") and _close(value, y + 2 * x):
        return _REVERSED_DIV
    return " -- the value of a dual is the operation on the values alone"


def _rule_hint(name: str, x, y, tx, ty, tangent: float) -> str:
    """What a wrong tangent of one rule most likely comes from."""
    slips = {
        "x * y": (tx * ty, " -- the product rule is (a b)' = a' b + a b', not a' b'"),
        "x / y": ((tx * y + x * ty) / (y * y),
                  " -- the quotient rule subtracts: (a / b)' = (a' b - a b') / b^2"),
        "np.cos": (math.sin(x) * tx, " -- cos' = -sin: the sign is missing"),
        "np.exp(x) + np.log(y)": (math.exp(x) * tx + ty * y, " -- log' = 1/y: divide the "
                                                            "tangent by the value"),
        "2.5 - x": (3.0 * tx, _REVERSED),
        "1.0 / y": (ty + 2 * tx, _REVERSED_DIV),
    }
    for start, (wrong, hint) in slips.items():
        if name.startswith(start) and _close(tangent, wrong):
            return hint
    return ""


@exercise("12.1", "dual numbers", takes=("Dual",), points=4, minutes=30, seconds=30,
          reference=("minirad.tracing.dual", "minirad.exact.sweeps", "minirad.exact.jacobians",
                     "minirad.exact.higher"),
          cases=_dual_cases, probe=_probe_dual,
          passed="{n} rules by hand and seeded programs agree with minirad's forward sweep")
def check_dual_numbers(case, answer, where) -> None:
    """Exercise 12.1: ``Dual(value, tangent)`` carries ``.value`` and ``.tangent``;
    ``+ - * /`` with duals and plain numbers on either side, unary ``-`` and the
    methods ``sin``, ``cos``, ``exp``, ``log`` (which ``np.sin(d)`` and the like call)
    return duals whose tangent is the derivative along the seeded direction."""
    mine, mine_tangent = _value_and_tangent(answer, where)
    (x, y), (tx, ty) = case["point"], case["tangents"]
    if "rule" in case:
        name = case["rule"]
        _, value, tangent = _RULES[name]
        value, tangent = value(x, y), tangent(x, y, tx, ty)
        if not _close(mine, value):
            raise CheckFailed(f"{where}: the value is {mine!r}, expected {value!r}"
                              f"{_value_hint(name, x, y, mine)}")
        if not _close(mine_tangent, tangent):
            raise CheckFailed(f"{where}: the tangent is {mine_tangent!r}, expected {tangent!r}"
                              f"{_rule_hint(name, x, y, tx, ty, mine_tangent)}")
        return
    from ..exact.jacobians import jacobian

    program, _ = _DUAL_PROGRAMS[case["program"]]
    expected = float(jacobian(program, x, y, method="forward")[0] @ np.array([tx, ty]))
    if not _close(mine_tangent, expected):
        raise CheckFailed(f"{where}: the tangent is {mine_tangent!r}, minirad's forward "
                          f"sweep gives {expected!r}")


# ----------------------------------------------------------------- 12.2
def _minirad_gradient(f, *xs):
    """A correct reverse-mode gradient whose values may be dual numbers (what the check
    hands to the student's hvp): minirad's recorded reverse pass.  An input the output
    does not depend on gets a plain 0.0, not a dual."""
    from ..exact.higher import recorded_gradient

    return recorded_gradient(f, xs, list(range(len(xs))), list(xs)).gradient


def _hvp_cases(rng) -> list[dict]:
    cases = []
    for name, _, point, v in HVP_PROGRAMS:
        if rng is not None:
            low, high = _DOMAINS.get(name, (-1.2, 1.2))
            point = _round(rng.uniform(low, high, len(point))) if name not in _DOMAINS else \
                _round(rng.uniform(low, high))
            v = _round(rng.uniform(-1.5, 1.5, len(point)))
        cases.append({"name": f"{name} at {tuple(point)}", "program": name,
                      "point": list(point), "v": list(v)})
    return cases


def _probe_hvp(fns, case, where):
    from ..tracing.dual import Dual

    program = _HVP_PROGRAMS[case["program"]][0]
    return call_student(fns[0], where, program, list(case["point"]), list(case["v"]),
                        _minirad_gradient, Dual)


@exercise("12.2", "Hessian-vector product", takes=("hvp",), points=3, minutes=25, seconds=60,
          reference=("minirad.exact.higher:hvp", "minirad.exact.higher:hessian",
                     "minirad.exact.higher:gradient_graph", "minirad.exact.jacobians",
                     "minirad.exact.sweeps", "minirad.gradcheck"),
          cases=_hvp_cases, probe=_probe_hvp,
          passed="H v agrees with minirad's Hessian on {n} programs of 2 to 4 inputs")
def check_hvp(case, answer, where) -> None:
    """Exercise 12.2: ``fn(f, x, v, gradient, Dual)`` returns the n numbers ``H v`` (H
    the Hessian of ``f`` at the list ``x``) by running ``gradient(f, *inputs)`` once, on
    dual numbers ``Dual(x[i], v[i])``.  One program leaves an input unused: its gradient
    entry is a plain ``0.0``, whose tangent is 0."""
    from ..exact.higher import hessian

    program = _HVP_PROGRAMS[case["program"]][0]
    point, v = case["point"], case["v"]
    H = hessian(program, *point)
    expected = H @ np.asarray(v)
    try:
        compare_jacobian(answer, expected, where, what="Hessian-vector product", rtol=1e-10)
    except CheckFailed as failure:
        raise CheckFailed(str(failure) + _hvp_hint(answer, program, point, v, H)) from None


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
        seeds = {"gradient": v, "ones": [1.0] * len(x), "every entry": v,
                 "first": [v[0]] + [0.0] * (len(x) - 1)}[kind]
        adjoints = gradient(f, *(Dual(a, t) for a, t in zip(x, v if kind == "every entry"
                                                             else seeds)))
        read = (lambda a: a.value) if kind == "gradient" else (lambda a: a.tangent)
        if kind == "every entry":   # a plain 0.0 has no .tangent: this raises there
            return [float(a.tangent) for a in adjoints]
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
        ("__rtruediv__ as d / c (operands reversed)",
         _dual_slip("__rtruediv__", lambda self, other: self / other)),
        ("no __rmul__: 2.0 * d fails",
         _dual_slip("__rmul__", lambda self, other: NotImplemented)),
    ],
    "12.2": [
        ("the gradient's values returned, not their tangents", _hvp_slip("gradient")),
        ("every input seeded with tangent 1", _hvp_slip("ones")),
        ("only the first input seeded", _hvp_slip("first")),
        ("a difference quotient of the gradient along v", _hvp_slip("difference")),
        ("the tangent read from every gradient entry, a plain 0.0 too",
         _hvp_slip("every entry")),
    ],
}
