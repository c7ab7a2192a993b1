"""Lab 1's exercises: the central difference (1.1) and the directional difference (1.2).

>>> check_central_difference(lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h))
Exercise 1.1 passed: central difference within its O(h^2) error on 4 functions x 3 step sizes
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .checking import (
    EPS,
    CheckFailed,
    call_student,
    location,
    one,
    passed,
)
from .exercise import exercise

__all__ = ["MISTAKES", "check_central_difference", "check_directional_difference"]


# ----------------------------------------------------------- lab 1: numbers
# (name, f, exact f', bound on |f'''| near x, x); the bound makes the
# central difference's truncation error h^2/6 * |f'''| checkable.
_SCALAR_CASES = [
    ("sin", math.sin, math.cos, lambda x, h: 1.0, 1.0),
    ("exp", math.exp, math.exp, lambda x, h: math.exp(x + h), 0.5),
    ("x**3 - 2*x", lambda x: x ** 3 - 2 * x, lambda x: 3 * x ** 2 - 2, lambda x, h: 6.0, 2.0),
    ("log", math.log, lambda x: 1 / x, lambda x, h: 2 / (x - h) ** 3, 2.0),
]
_STEPS = (1e-2, 1e-3, 1e-4)


def _one_sided_hint(f, x, h, value) -> str:
    """Name the usual slips when the student's number matches one of them."""
    candidates = {
        "the forward difference (f(x+h) - f(x)) / h, whose error shrinks only like h":
            (f(x + h) - f(x)) / h,
        "the backward difference (f(x) - f(x-h)) / h, whose error shrinks only like h":
            (f(x) - f(x - h)) / h,
        "(f(x+h) - f(x-h)) / h: divide by 2h, not h": (f(x + h) - f(x - h)) / h,
        "(f(x+h) - f(x-h)) / 2 * h: Python reads that as ((...) / 2) * h; write / (2 * h)":
            (f(x + h) - f(x - h)) / 2 * h,
    }
    for text, candidate in candidates.items():
        if abs(value - candidate) <= 1e-9 * max(1.0, abs(candidate)):
            return f" -- your number matches {text}"
    return ""


@exercise("1.1", "central difference", takes=("central_difference",), points=2, minutes=15,
          seconds=30, reference=("minirad.gradcheck",))
def check_central_difference(fn: Callable) -> None:
    """Exercise 1.1: ``fn(f, x, h)`` must return (f(x+h) - f(x-h)) / (2h).

    Runs ``fn`` on four smooth functions at three step sizes and requires
    the error against the exact derivative to stay within what a central
    difference makes: ``h**2 / 6 * max|f'''|`` plus a rounding allowance.
    A one-sided difference fails because its error is of order ``h``.

    >>> check_central_difference(lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h))
    Exercise 1.1 passed: central difference within its O(h^2) error on 4 functions x 3 step sizes
    """
    exercise, topic = "Exercise 1.1", "central difference"
    for name, f, fprime, third, x in _SCALAR_CASES:
        for h in _STEPS:
            where = location(exercise, topic, f"{name} at x={x} with h={h:g}")
            value = call_student(fn, where, f, x, h)
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise CheckFailed(f"{where}: your function returned {value!r}; expected one "
                                  f"float") from None
            exact = fprime(x)
            size = max(abs(f(x + h)), abs(f(x - h)), abs(f(x)))
            bound = h * h / 6 * third(x, h) * 1.01 + 8 * EPS * size / h + 4 * EPS * abs(exact)
            error = abs(value - exact)
            if not error <= bound:
                raise CheckFailed(
                    f"{where}: your estimate is {value:.10g}, the exact derivative is "
                    f"{exact:.10g}; the error {error:.2g} exceeds the {bound:.2g} a central "
                    f"difference makes here{_one_sided_hint(f, x, h, value)}")
    passed(exercise, f"central difference within its O(h^2) error on "
                     f"{len(_SCALAR_CASES)} functions x {len(_STEPS)} step sizes")


def _lecture_f(v):
    return math.log(v[0]) + v[0] * v[1] - math.sin(v[1])


def _lecture_grad(v):
    return np.array([1 / v[0] + v[1], v[0] - math.cos(v[1])])


_A = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, -1.0, 0.0],
               [0.0, -1.0, 2.0, 0.3], [0.5, 0.0, 0.3, 1.0]])
_B = np.array([1.0, -2.0, 0.5, 3.0])

# (name, f, exact gradient, point)
_VECTOR_CASES = [
    ("the lecture's ln(x1) + x1*x2 - sin(x2)", _lecture_f, _lecture_grad, np.array([2.0, 5.0])),
    ("the lab's x*y + sin(x)", lambda v: v[0] * v[1] + math.sin(v[0]),
     lambda v: np.array([v[1] + math.cos(v[0]), v[0]]), np.array([2.0, 3.0])),
    ("a quadratic in 4 variables", lambda v: 0.5 * v @ _A @ v + _B @ v,
     lambda v: _A @ v + _B, np.array([0.3, -1.0, 2.0, 0.5])),
]


def _directions(dimension: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Two random unit directions and one of length 2 (delta is not normalised)."""
    unit = [d / np.linalg.norm(d) for d in rng.standard_normal((2, dimension))]
    return unit + [2.0 * unit[0]]


@exercise("1.2", "directional difference", takes=("directional_difference",), points=2,
          minutes=15, seconds=30, reference=("minirad.gradcheck",))
def check_directional_difference(fn: Callable) -> None:
    """Exercise 1.2: ``fn(f, x, delta, h)`` must return (f(x + h delta) - f(x - h delta)) / (2h).

    That number approximates ``delta @ grad f(x)`` with an O(h^2) error.
    The check compares with the exact directional derivative along random
    directions (one of them of length 2: ``delta`` must not be normalised),
    allowing a few times the error of a correct central difference.

    >>> check_directional_difference(
    ...     lambda f, x, d, h: (f(x + h * d) - f(x - h * d)) / (2 * h))
    Exercise 1.2 passed: directional difference matches delta . grad f on 3 functions x 3 directions
    """
    exercise, topic = "Exercise 1.2", "directional difference"
    rng = np.random.default_rng(12)
    h = 1e-3
    for name, f, grad, x in _VECTOR_CASES:
        for delta in _directions(len(x), rng):
            where = location(exercise, topic, f"{name} at x={x.tolist()} along "
                                           f"delta={np.round(delta, 3).tolist()}")
            value = call_student(fn, where, f, x.copy(), delta.copy(), h)
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise CheckFailed(f"{where}: your function returned {value!r}; expected one "
                                  f"float") from None
            exact = float(delta @ grad(x))
            reference = (f(x + h * delta) - f(x - h * delta)) / (2 * h)
            allowed = 4 * abs(reference - exact) + 1e-9 * (1 + abs(exact))
            if not abs(value - exact) <= allowed:
                hint = ""
                forward = (f(x + h * delta) - f(x)) / h
                if abs(value - forward) <= 1e-9 * max(1.0, abs(forward)):
                    hint = " -- your number matches the one-sided (forward) difference"
                elif abs(value * np.linalg.norm(delta) - exact) <= allowed:
                    hint = " -- it looks as if you normalised delta; use it as given"
                elif abs(value - 2 * exact) <= 2 * allowed:
                    hint = (" -- that is twice delta . grad f: the two points are 2h apart, so "
                            "divide by 2h, not h")
                elif abs(2 * value - exact) <= allowed:
                    hint = (" -- that is half of delta . grad f: divide the difference by 2h, "
                            "not by 4h (or h / 2 steps)")
                raise CheckFailed(f"{where}: your estimate is {value:.10g}, but delta . grad "
                                  f"f(x) = {exact:.10g} (a central difference is off by only "
                                  f"{abs(reference - exact):.2g} here){hint}")
    passed(exercise, f"directional difference matches delta . grad f on "
                     f"{len(_VECTOR_CASES)} functions x 3 directions")


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "1.1": [
        ("a one-sided (forward) difference", one(lambda f, x, h: (f(x + h) - f(x)) / h)),
        ("dividing by h instead of 2h", one(lambda f, x, h: (f(x + h) - f(x - h)) / h)),
        ("writing / 2 * h for / (2 * h)", one(lambda f, x, h: (f(x + h) - f(x - h)) / 2 * h)),
    ],
    "1.2": [
        ("a one-sided (forward) difference",
         one(lambda f, x, d, h: (f(x + h * d) - f(x)) / h)),
        ("a normalised direction",
         one(lambda f, x, d, h: (f(x + h * d / np.linalg.norm(d))
                                  - f(x - h * d / np.linalg.norm(d))) / (2 * h))),
        ("dividing by h instead of 2h",
         one(lambda f, x, d, h: (f(x + h * d) - f(x - h * d)) / h)),
    ],
}
