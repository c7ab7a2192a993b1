"""Lab 1's exercises: the central difference (1.1) and the directional difference (1.2).

The functions the student differentiates travel as data (a family and its
coefficients, :func:`scalar_function`, :func:`vector_function`), so that the
grader's kernel and the grader build the same function; the hidden cases
draw the coefficients, the points and the directions at random.

>>> check_central_difference(lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h))
Exercise 1.1 passed: central difference within its O(h^2) error on 12 functions and step sizes
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .checking import EPS, CheckFailed, as_float, call_student, one
from .exercise import exercise

__all__ = ["MISTAKES", "check_central_difference", "check_directional_difference",
           "scalar_function", "vector_function"]

REFERENCE = ("minirad.gradcheck",)
STEPS = (1e-2, 1e-3, 1e-4)


# ------------------------------------------------------- 1.1: f(x) of one number
def scalar_function(spec) -> tuple[Callable, Callable, Callable, str]:
    """``(f, f', bound, name)`` for ``spec = [family, coefficients...]``, where
    ``bound(x, h)`` bounds ``|f'''|`` on ``[x - h, x + h]`` (what makes a central
    difference's truncation error ``h^2/6 |f'''|`` checkable).

    >>> f, fprime, bound, name = scalar_function(["sin", 2.0, 0.5, 1.0])
    >>> name, round(fprime(0.0), 6), bound(0.0, 0.1)
    ('1*sin(2x + 0.5)', 1.755165, 8.0)
    """
    family, *c = spec
    if family == "sin":   # c sin(a x + b)
        a, b, s = c
        return (lambda x: s * math.sin(a * x + b), lambda x: s * a * math.cos(a * x + b),
                lambda x, h: abs(s * a ** 3), f"{s:g}*sin({a:g}x + {b:g})")
    if family == "exp":   # s exp(a x)
        a, s = c
        return (lambda x: s * math.exp(a * x), lambda x: s * a * math.exp(a * x),
                lambda x, h: abs(s * a ** 3) * math.exp(a * x + abs(a) * h),
                f"{s:g}*exp({a:g}x)")
    if family == "cubic":  # p3 x^3 + p2 x^2 + p1 x
        p3, p2, p1 = c
        return (lambda x: p3 * x ** 3 + p2 * x ** 2 + p1 * x,
                lambda x: 3 * p3 * x ** 2 + 2 * p2 * x + p1, lambda x, h: abs(6 * p3),
                f"{p3:g}*x**3 + {p2:g}*x**2 + {p1:g}*x")
    if family == "log":   # log(x + s), x + s > h
        (s,) = c
        return (lambda x: math.log(x + s), lambda x: 1 / (x + s),
                lambda x, h: 2 / (x + s - h) ** 3, f"log(x + {s:g})")
    raise ValueError(f"unknown function family {family!r}")


_PUBLISHED_SCALARS = [  # (the name the messages use, spec, x)
    ("sin", ["sin", 1.0, 0.0, 1.0], 1.0),
    ("exp", ["exp", 1.0, 1.0], 0.5),
    ("x**3 - 2*x", ["cubic", 1.0, 0.0, -2.0], 2.0),
    ("log", ["log", 0.0], 2.0),
]


def _scalar_cases(rng) -> list[dict]:
    if rng is None:
        return [{"name": f"{name} at x={x} with h={h:g}", "f": spec, "x": x, "h": h}
                for name, spec, x in _PUBLISHED_SCALARS for h in STEPS]
    cases = []
    for family in ("sin", "exp", "cubic", "log"):
        for h in STEPS:
            x = round(float(rng.uniform(0.2, 2.5)), 3)
            spec = {"sin": lambda: ["sin", *np.round(rng.uniform(0.5, 2.5, 3), 3).tolist()],
                    "exp": lambda: ["exp", *np.round(rng.uniform(0.3, 1.5, 2), 3).tolist()],
                    "cubic": lambda: ["cubic", *np.round(rng.uniform(-2, 2, 3), 3).tolist()],
                    "log": lambda: ["log", round(float(rng.uniform(0.5, 2.0)), 3)]}[family]()
            name = scalar_function(spec)[3]
            cases.append({"name": f"{name} at x={x} with h={h:g}", "f": spec, "x": x, "h": h})
    return cases


def _probe_scalar(fns, case, where):
    f = scalar_function(case["f"])[0]
    return call_student(fns[0], where, f, case["x"], case["h"])


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
          seconds=30, reference=REFERENCE, cases=_scalar_cases, probe=_probe_scalar,
          passed="central difference within its O(h^2) error on {n} functions and step sizes")
def check_central_difference(case, answer, where) -> None:
    """Exercise 1.1: ``fn(f, x, h)`` must return (f(x+h) - f(x-h)) / (2h).

    Runs ``fn`` on smooth functions at three step sizes and requires the
    error against the exact derivative to stay within what a central
    difference makes: ``h**2 / 6 * max|f'''|`` plus a rounding allowance.
    A one-sided difference fails because its error is of order ``h``.
    """
    f, fprime, third, _ = scalar_function(case["f"])
    x, h = case["x"], case["h"]
    value = as_float(answer, where)
    exact = fprime(x)
    size = max(abs(f(x + h)), abs(f(x - h)), abs(f(x)))
    bound = h * h / 6 * third(x, h) * 1.01 + 8 * EPS * size / h + 4 * EPS * abs(exact)
    error = abs(value - exact)
    if not error <= bound:
        raise CheckFailed(
            f"{where}: your estimate is {value:.10g}, the exact derivative is "
            f"{exact:.10g}; the error {error:.2g} exceeds the {bound:.2g} a central "
            f"difference makes here{_one_sided_hint(f, x, h, value)}")


# ------------------------------------------------- 1.2: f(x) of a vector
def vector_function(spec) -> tuple[Callable, Callable, str]:
    """``(f, grad f, name)`` for ``spec``: ``["lecture"]``, ``["lab"]`` or
    ``["quadratic", A, b]`` (``x A x / 2 + b x``).

    >>> f, grad, name = vector_function(["lab"])
    >>> name, bool(f(np.array([2.0, 3.0])) == 6 + math.sin(2.0))
    ("the lab's x*y + sin(x)", True)
    """
    family = spec[0]
    if family == "lecture":
        return (lambda v: math.log(v[0]) + v[0] * v[1] - math.sin(v[1]),
                lambda v: np.array([1 / v[0] + v[1], v[0] - math.cos(v[1])]),
                "the lecture's ln(x1) + x1*x2 - sin(x2)")
    if family == "lab":
        return (lambda v: v[0] * v[1] + math.sin(v[0]),
                lambda v: np.array([v[1] + math.cos(v[0]), v[0]]), "the lab's x*y + sin(x)")
    if family == "quadratic":
        A, b = np.asarray(spec[1], dtype=float), np.asarray(spec[2], dtype=float)
        return (lambda v: 0.5 * v @ A @ v + b @ v, lambda v: A @ v + b,
                f"a quadratic in {len(b)} variables")
    raise ValueError(f"unknown function family {family!r}")


_A = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, -1.0, 0.0],
               [0.0, -1.0, 2.0, 0.3], [0.5, 0.0, 0.3, 1.0]])
_B = np.array([1.0, -2.0, 0.5, 3.0])


def _directions(dimension: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Two random unit directions and one of length 2 (delta is not normalised)."""
    unit = [d / np.linalg.norm(d) for d in rng.standard_normal((2, dimension))]
    return unit + [2.0 * unit[0]]


def _vector_cases(rng) -> list[dict]:
    if rng is None:
        points = [(["lecture"], np.array([2.0, 5.0])), (["lab"], np.array([2.0, 3.0])),
                  (["quadratic", _A, _B], np.array([0.3, -1.0, 2.0, 0.5]))]
        directions = np.random.default_rng(12)
    else:
        n = int(rng.integers(3, 6))
        M = rng.standard_normal((n, n))
        points = [(["lecture"], np.round(rng.uniform([0.5, -3], [3, 3]), 3)),
                  (["lab"], np.round(rng.uniform(-3, 3, 2), 3)),
                  (["quadratic", M + M.T + n * np.eye(n), rng.standard_normal(n)],
                   np.round(rng.standard_normal(n), 3))]
        directions = rng
    cases = []
    for spec, x in points:
        name = vector_function(spec)[2]
        for delta in _directions(len(x), directions):
            cases.append({"name": f"{name} at x={x.tolist()} along "
                                  f"delta={np.round(delta, 3).tolist()}",
                          "f": spec, "x": x, "delta": delta, "h": 1e-3})
    return cases


def _probe_vector(fns, case, where):
    f = vector_function(case["f"])[0]
    return call_student(fns[0], where, f, case["x"].copy(), case["delta"].copy(), case["h"])


@exercise("1.2", "directional difference", takes=("directional_difference",), points=2,
          minutes=15, seconds=30, reference=REFERENCE, cases=_vector_cases,
          probe=_probe_vector,
          passed="directional difference matches delta . grad f on {n} functions and "
                 "directions")
def check_directional_difference(case, answer, where) -> None:
    """Exercise 1.2: ``fn(f, x, delta, h)`` must return (f(x + h delta) - f(x - h delta)) / (2h).

    That number approximates ``delta @ grad f(x)`` with an O(h^2) error.
    The check compares with the exact directional derivative along random
    directions (one of them of length 2: ``delta`` must not be normalised),
    allowing a few times the error of a correct central difference.

    >>> check_directional_difference(
    ...     lambda f, x, d, h: (f(x + h * d) - f(x - h * d)) / (2 * h))
    Exercise 1.2 passed: directional difference matches delta . grad f on 9 functions and \
directions
    """
    f, grad, _ = vector_function(case["f"])
    x, delta, h = case["x"], case["delta"], case["h"]
    value = as_float(answer, where)
    exact = float(delta @ grad(x))
    reference = (f(x + h * delta) - f(x - h * delta)) / (2 * h)
    allowed = 4 * abs(reference - exact) + 1e-9 * (1 + abs(exact))
    if abs(value - exact) <= allowed:
        return
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


# ------------------------------------------------------- planted mistakes
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
