"""Exercise checks on sparsity and implicit differentiation.

* Exercise 4.3 (lab 4): colour the columns of a sparsity pattern so that one
  forward sweep per colour recovers the Jacobian (:func:`check_column_colouring`);
* Exercise 6.3 (lab 6): the gradient of a cost through a root of
  ``f(x, p) = 0`` by one transposed solve, the implicit function theorem
  (:func:`check_implicit_gradient`).

Same contract as :mod:`minirad.labs.checks`: one line on success, otherwise a
:class:`~minirad.labs.checks.CheckFailed` naming the input and what is wrong.

>>> def colour_columns(P):                # greedy: the lowest colour no row forbids
...     colours = []
...     for j in range(P.shape[1]):
...         taken = {colours[i] for i in range(j) if (P[:, i] & P[:, j]).any()}
...         colours.append(min(set(range(j + 1)) - taken))
...     return colours
>>> check_column_colouring(colour_columns)
Exercise 4.3 passed: column colouring valid and compact on 6 patterns
>>> check_column_colouring(lambda P: [0] * P.shape[1])
Traceback (most recent call last):
...
minirad.labs.checks.CheckFailed: Exercise 4.3 (column colouring), on tridiagonal(6): columns 0 \
and 1 both have colour 0 but both are nonzero in row 0: one forward sweep seeded with both \
would add their entries in that row
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..exact.sparsity import colour_columns
from .checks import CheckFailed, call_student, location, passed
from .exercise import exercise

__all__ = ["check_column_colouring", "check_implicit_gradient", "colouring_patterns",
           "implicit_problems"]


# ----------------------------------------------------------- colouring
def colouring_patterns() -> dict[str, np.ndarray]:
    """The patterns :func:`check_column_colouring` runs on, by name.

    >>> list(colouring_patterns())[:2]
    ['tridiagonal(6)', 'pentadiagonal(6)']
    """
    n = 6
    i, j = np.indices((n, n))
    rng = np.random.default_rng(43)
    random = rng.random((7, 9)) < 0.3
    return {
        "tridiagonal(6)": abs(i - j) <= 1,
        "pentadiagonal(6)": abs(i - j) <= 2,
        "arrow, dense row (5)": ((i == j) | (i == 0))[:5, :5],
        "arrow, dense column (5)": ((i == j) | (j == 0))[:5, :5],
        "block diagonal (3 x 2)": i // 2 == j // 2,
        "random 7 x 9 (seed 43)": random,
    }


def _colours(result, n: int, where: str) -> list[int]:
    try:
        colours = [int(c) for c in result]
        if any(c != float(r) for c, r in zip(colours, result)):
            raise ValueError
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: return a list of integer colours, one per column; got "
                          f"{result!r:.80}") from None
    if len(colours) != n:
        raise CheckFailed(f"{where}: the pattern has {n} columns but you returned "
                          f"{len(colours)} colours (one per column, not per row?)")
    if min(colours, default=0) < 0:
        raise CheckFailed(f"{where}: colours are numbered 0, 1, 2, ...; got {min(colours)}")
    return colours


@exercise("4.3", "colour the columns of a pattern", takes=("colour_columns",), points=2,
          minutes=20, seconds=60, reference=("minirad.exact.sparsity", "minirad.exact.compressed"))
def check_column_colouring(fn: Callable) -> None:
    """Exercise 4.3: ``fn(P)`` returns one colour per column of the Boolean pattern
    ``P`` (rows: outputs, columns: inputs) such that no row holds two columns of
    the same colour, using no more colours than greedy colouring does (in
    column order or largest-first order, whichever needs more)."""
    patterns = colouring_patterns()
    for name, P in patterns.items():
        where = location("Exercise 4.3", "column colouring", name)
        colours = _colours(call_student(fn, where, P.copy()), P.shape[1], where)
        for row in range(P.shape[0]):
            seen: dict[int, int] = {}
            for col in np.flatnonzero(P[row]).tolist():
                c = colours[col]
                if c in seen:
                    raise CheckFailed(
                        f"{where}: columns {seen[c]} and {col} both have colour {c} but both "
                        f"are nonzero in row {row}: one forward sweep seeded with both would "
                        f"add their entries in that row")
                seen[c] = col
        # what greedy colouring reaches, in column order and largest-first order
        bound = max(colour_columns(P, "natural").n_colours,
                    colour_columns(P, "largest_first").n_colours)
        used = len(set(colours))
        if used > bound:
            raise CheckFailed(
                f"{where}: your colouring is valid but uses {used} colours; greedy colouring "
                f"(take the columns in order, give each the smallest colour that no column "
                f"sharing a row with it has) needs only {bound}")
    passed("Exercise 4.3", f"column colouring valid and compact on {len(patterns)} patterns")


# ---------------------------------------------- implicit function theorem
def implicit_problems() -> dict[str, dict]:
    """The problems :func:`check_implicit_gradient` runs on: for each, the root
    ``x`` of ``f(x, p) = A x + x^3 / 10 - B p`` (A not symmetric, so a forgotten
    transpose shows), the Jacobians ``f_x``, ``f_p`` there, ``g_x`` of the cost
    ``g(x) = c . x + |x|^2 / 2``, and ``p``.

    >>> sorted(implicit_problems())
    ['2 unknowns, 3 parameters', '4 unknowns, 2 parameters']
    """
    problems = {}
    for n, m, seed in ((2, 3, 5), (4, 2, 11)):
        rng = np.random.default_rng(seed)
        A = 3.0 * np.eye(n) + np.triu(rng.uniform(0.5, 1.0, (n, n)), 1)
        B = rng.standard_normal((n, m))
        c = rng.standard_normal(n)
        p = rng.standard_normal(m)
        problems[f"{n} unknowns, {m} parameters"] = {"A": A, "B": B, "c": c, "p": p}
    return problems


def _root(A, B, p):
    x = np.zeros(len(A))
    for _ in range(100):   # Newton's method, plain numpy
        step = np.linalg.solve(A + np.diag(0.3 * x ** 2), A @ x + 0.1 * x ** 3 - B @ p)
        x = x - step
        if np.max(np.abs(step)) < 1e-15:
            break
    return x


def _cost(problem, p):
    x = _root(problem["A"], problem["B"], p)
    return float(problem["c"] @ x + 0.5 * x @ x)


@exercise("6.3", "the implicit gradient", takes=("implicit_gradient",), points=3,
          minutes=20, seconds=30, reference=("minirad.implicit.solves",))
def check_implicit_gradient(fn: Callable) -> None:
    """Exercise 6.3: ``fn(f_x, f_p, g_x)`` returns ``dg/dp`` (shape: the number of
    parameters) at a root of ``f(x, p) = 0``: ``-lambda^T f_p`` with
    ``f_x^T lambda = g_x``.  Checked against central differences of the cost
    through a Newton solve."""
    problems = implicit_problems()
    for name, problem in problems.items():
        where = location("Exercise 6.3", "implicit gradient", name)
        A, B, c, p = problem["A"], problem["B"], problem["c"], problem["p"]
        x = _root(A, B, p)
        f_x, f_p, g_x = A + np.diag(0.3 * x ** 2), -B, c + x
        result = call_student(fn, where, f_x.copy(), f_p.copy(), g_x.copy())
        got = np.asarray(result, dtype=float) if np.ndim(result) else np.full(1, np.nan)
        eps = 1e-6
        want = np.array([(_cost(problem, p + eps * e) - _cost(problem, p - eps * e)) / (2 * eps)
                         for e in np.eye(len(p))])
        if got.shape != want.shape:
            extra = (" (that looks like dx/dp, the full n x m matrix; multiply by g_x, or "
                     "better, solve with f_x^T for g_x first)" if got.shape == f_p.shape else "")
            raise CheckFailed(f"{where}: return one number per parameter, shape {want.shape}; "
                              f"got shape {got.shape}{extra}")
        if np.allclose(got, want, rtol=1e-5, atol=1e-8):
            continue
        hint = ""
        if np.allclose(-got, want, rtol=1e-5, atol=1e-8):
            hint = " (off by the sign: dx/dp = -f_x^{-1} f_p)"
        else:
            untransposed = -(np.linalg.solve(f_x, g_x) @ f_p)
            if np.allclose(got, untransposed, rtol=1e-5, atol=1e-8):
                hint = " (lambda solves f_x^T lambda = g_x: the transpose of f_x, not f_x)"
        raise CheckFailed(f"{where}: dg/dp should be {np.round(want, 6).tolist()} (central "
                          f"differences), you returned {np.round(got, 6).tolist()}{hint}")
    passed("Exercise 6.3", f"implicit gradient agrees with central differences on "
                           f"{len(problems)} problems")
