"""Lab 6's exercises: one descent step (6.1), descent with sampled gradients (6.2), the
implicit gradient through a root (6.3), the adjoint of a linear solve (6.4) and the
continuous adjoint of an ODE solve (6.5).

The functions descended travel by name (:data:`PROGRAMS`), the points, rates
and seeds as numbers; the hidden cases draw those at random.

>>> round(line_fit_loss(0.0, 0.0), 6)
0.310417
"""

from __future__ import annotations

import numpy as np

from .. import examples
from ..exact.sweeps import reverse_sweep, vjp
from ..implicit import ode_adjoint
from ..randomized.sampling import sample_paths, sampled_jacobians
from ..tracing import ops, trace
from .checking import CheckFailed, as_numbers, call_student, low_precision, one
from .exercise import exercise

__all__ = [
    "MISTAKES", "ODE_PROBLEMS", "PROGRAMS", "adjoint_inputs", "check_descent_step",
    "check_implicit_gradient", "check_ode_adjoint", "check_sgd", "check_solve_adjoint",
    "implicit_problems", "line_fit_loss",
]


def line_fit_loss(a, b):
    """Mean squared error of the line ``a*t + b`` on six fixed points (a small sum of terms).

    Its LCG has ``a`` and ``b`` feeding six terms each, so path sampling
    has something to choose; the minimum is near ``(0.718, 0.242)``.

    >>> round(line_fit_loss(0.0, 0.0), 6)
    0.310417
    """
    total = 0.0
    for t, s in _LINE_POINTS:
        r = a * t + b - s
        total = total + r * r
    return total / len(_LINE_POINTS)


_LINE_POINTS = ((-1.0, -0.6), (-0.6, -0.1), (-0.2, 0.2), (0.2, 0.3), (0.6, 0.8), (1.0, 0.85))


def _three_variables(x, y, z):
    return x * y * z + ops.exp(x * z) - y * y


#: the programs the exercises descend, by the name a case gives
PROGRAMS = {
    "g(x, y) = y*y + sin(x)": examples.descent_program,
    "f(x, y) = x*y + sin(x)": examples.lab_program,
    "the lecture's ln(x1) + x1*x2 - sin(x2)": examples.lecture_program,
    "x*y*z + exp(x*z) - y*y": _three_variables,
    "line_fit_loss": line_fit_loss,
}


# --------------------------------------------------------------- lab 6: 6.1
_DESCENT_CASES = [  # (program, point, rate)
    ("g(x, y) = y*y + sin(x)", (1.0, 1.0), 0.2),
    ("g(x, y) = y*y + sin(x)", (1.5, -2.4), 0.2),
    ("f(x, y) = x*y + sin(x)", (2.0, 3.0), 0.1),
    ("the lecture's ln(x1) + x1*x2 - sin(x2)", (2.0, 5.0), 0.05),
    ("x*y*z + exp(x*z) - y*y", (0.5, -1.0, 2.0), 0.01),
]


def _shown(point) -> str:
    return "(" + ", ".join(f"{x:g}" for x in point) + ")"


def _descent_cases(rng) -> list[dict]:
    if rng is None:
        chosen = _DESCENT_CASES
    else:
        chosen = [("g(x, y) = y*y + sin(x)", rng.uniform(-2.5, 2.5, 2), 0.2),
                  ("g(x, y) = y*y + sin(x)", rng.uniform(-2.5, 2.5, 2), 0.1),
                  ("f(x, y) = x*y + sin(x)", rng.uniform(-3, 3, 2), 0.1),
                  ("the lecture's ln(x1) + x1*x2 - sin(x2)", rng.uniform([0.5, -3], [3, 6]),
                   0.05),
                  ("x*y*z + exp(x*z) - y*y", rng.uniform(-1, 1, 3), 0.01)]
        chosen = [(name, tuple(np.round(point, 3).tolist()),
                   round(rate * float(rng.uniform(0.5, 1.5)), 4)) for name, point, rate in chosen]
    return [{"name": f"{name} at {_shown(point)}, rate {rate:g}", "f": name,
             "point": list(point), "rate": rate} for name, point, rate in chosen]


def _probe_descent(fns, case, where):
    return call_student(fns[0], where, PROGRAMS[case["f"]], case["rate"], *case["point"],
                        seconds=10)


def _gradient(f, point) -> np.ndarray:
    return reverse_sweep(trace(f, *point)).jacobian[0]


def _point(result, n: int, where: str, what: str) -> np.ndarray:
    x = as_numbers(result, where, f"; return {what}")
    if x.shape != (n,):
        raise CheckFailed(f"{where}: your function returned shape {x.shape}; return {what} "
                          f"(shape ({n},))")
    return x


@exercise("6.1", "one gradient-descent step", takes=("descend",), points=1, minutes=10,
          seconds=30, topic="one descent step", cases=_descent_cases, probe=_probe_descent,
          passed="one descent step agrees with minirad on {n} functions and points")
def check_descent_step(case, answer, where) -> None:
    """Exercise 6.1: ``fn(f, rate, *args)`` returns the point after one gradient-descent step.

    The new point is ``args - rate * grad f(args)``, one float per argument
    of ``f``, with the gradient from minirad (trace, then a reverse sweep).
    Checked on the lab's objective ``g(x, y) = y*y + sin(x)`` (from (1, 1)
    with rate 0.2 the step lands on (0.891939538826372, 0.6)) and on three
    other functions.

    >>> import numpy as np
    >>> from minirad.exact.jacobians import jacobian
    >>> check_descent_step(lambda f, rate, *args:
    ...                    np.array(args) - rate * jacobian(f, *args)[0])
    Exercise 6.1 passed: one descent step agrees with minirad on 5 functions and points
    """
    f, point, rate = PROGRAMS[case["f"]], tuple(case["point"]), case["rate"]
    mine = _point(answer, len(point), where, "the new point, one float per argument")
    x = np.array(point)
    grad = _gradient(f, point)
    expected = x - rate * grad
    error = np.abs(mine - expected)
    if np.all(error <= 1e-12 * np.maximum(1.0, np.abs(expected))):
        return
    hint = ""
    if np.allclose(mine, x + rate * grad, rtol=1e-12, atol=1e-12):
        hint = " -- you stepped uphill: subtract rate * gradient"
    elif np.allclose(mine, x - grad, rtol=1e-12, atol=1e-12):
        hint = " -- you forgot to scale the gradient by the rate"
    elif f is examples.descent_program and point == (1.0, 1.0) and np.allclose(
            mine, (0.891939538826372, 0.8), rtol=1e-12):
        hint = (" -- that is the reverse-mode lab's published step, which loses one of the "
                "two adjoints of y in y*y; use minirad's gradient (dg/dy = 2y = 2)")
    i = int(np.argmax(error))
    raise CheckFailed(f"{where}: your new point is {mine.tolist()}, expected "
                      f"{expected.tolist()} (coordinate {i} differs){hint}")


# --------------------------------------------------------------- lab 6: 6.2
def _sgd_reference(f, start, rate, steps, k, seed, batched: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.array(start, dtype=float)
    path = [x.copy()]
    for _ in range(steps):
        g = trace(f, *x)
        if k is None:
            grad = reverse_sweep(g).jacobian[0]
        elif batched:
            grad = sampled_jacobians(g, k, 1, rng=rng)[0, 0]
        else:
            grad = sample_paths(g, k, rng=rng).jacobian[0]
        x = x - rate * grad
        path.append(x.copy())
    return np.array(path)



_SGD_CASES = [  # (program, start, rate, steps, k, seed)
    ("g(x, y) = y*y + sin(x)", (1.5, -2.4), 0.2, 12, None, 0),
    ("g(x, y) = y*y + sin(x)", (1.5, -2.4), 0.2, 12, 1, 0),
    ("line_fit_loss", (0.0, 0.0), 0.3, 15, 1, 1),
    ("line_fit_loss", (2.0, -1.0), 0.2, 15, 3, 2),
    ("x*y*z + exp(x*z) - y*y", (0.5, -1.0, 2.0), 0.01, 10, 1, 3),
]


def _sgd_cases(rng) -> list[dict]:
    if rng is None:
        chosen = _SGD_CASES
    else:
        seed = lambda: int(rng.integers(10 ** 6))  # noqa: E731
        point = lambda low, high, n: tuple(np.round(rng.uniform(low, high, n), 3).tolist())  # noqa: E731
        chosen = [("g(x, y) = y*y + sin(x)", point(-2.5, 2.5, 2), 0.2, 12, None, seed()),
                  ("g(x, y) = y*y + sin(x)", point(-2.5, 2.5, 2), 0.2, 12, 1, seed()),
                  ("line_fit_loss", point(-2, 2, 2), 0.3, 15, 1, seed()),
                  ("line_fit_loss", point(-2, 2, 2), 0.2, 15, int(rng.integers(2, 5)), seed()),
                  ("x*y*z + exp(x*z) - y*y", point(-1, 1, 3), 0.01, 10, 1, seed())]
    cases = []
    for name, start, rate, steps, k, seed in chosen:
        how = "exact gradients" if k is None else f"k={k}"
        cases.append({"name": f"{name} from {_shown(start)}, {how}, rate {rate}, {steps} steps, "
                              f"rng=np.random.default_rng({seed})",
                      "f": name, "start": list(start), "rate": rate, "steps": steps, "k": k,
                      "seed": seed})
    return cases


def _probe_sgd(fns, case, where):
    handed = np.array(case["start"], dtype=float)
    result = call_student(fns[0], where, PROGRAMS[case["f"]], handed, case["rate"],
                          case["steps"], case["k"], np.random.default_rng(case["seed"]),
                          seconds=30)
    return {"result": result, "changed": not np.array_equal(handed, np.array(case["start"]))}


@exercise("6.2", "descent with sampled gradients", takes=("sgd",), points=3, minutes=25,
          seconds=60, cases=_sgd_cases, probe=_probe_sgd,
          passed="descent with sampled gradients agrees with minirad on {n} runs")
def check_sgd(case, answer, where) -> None:
    """Exercise 6.2: ``fn(f, start, rate, steps, k, rng)`` runs ``steps`` steps of descent.

    Returns an array of shape ``(steps + 1, len(start))``: the start, then
    each iterate.  Each step traces ``f`` at the current point and, for an
    int ``k``, uses the Algorithm 1 estimate
    ``sample_paths(trace(f, *x), k, rng=rng).jacobian[0]`` (or, equally,
    ``sampled_jacobians(trace(f, *x), k, 1, rng=rng)[0, 0]``) drawn from the
    ``rng`` passed in; ``k=None`` means the exact gradient.  With the same
    seed the run is then reproducible, and the check compares it iterate by
    iterate (to 1e-9) with minirad's run.

    >>> from minirad.randomized.sampling import sample_paths
    >>> from minirad.exact.sweeps import reverse_sweep
    >>> def sgd(f, start, rate, steps, k, rng):
    ...     x = np.array(start, dtype=float)
    ...     path = [x]
    ...     for _ in range(steps):
    ...         g = trace(f, *x)
    ...         grad = (reverse_sweep(g).jacobian[0] if k is None
    ...                 else sample_paths(g, k, rng=rng).jacobian[0])
    ...         x = x - rate * grad
    ...         path.append(x)
    ...     return np.array(path)
    >>> check_sgd(sgd)
    Exercise 6.2 passed: descent with sampled gradients agrees with minirad on 5 runs
    """
    f, start, rate, steps = PROGRAMS[case["f"]], case["start"], case["rate"], case["steps"]
    k, seed = case["k"], case["seed"]
    if not (isinstance(answer, dict) and set(answer) == {"result", "changed"}):
        raise CheckFailed(f"{where}: the grader could not read your answer")
    if answer["changed"]:
        raise CheckFailed(f"{where}: your function changed the start array it was given; "
                          f"work on a copy")
    mine = as_numbers(answer["result"], where, "; return an array of the iterates")
    n = len(start)
    if mine.shape != (steps + 1, n):
        hint = ""
        if mine.shape == (steps, n):
            hint = " -- include the start as row 0"
        raise CheckFailed(f"{where}: your function returned shape {mine.shape}; expected "
                          f"({steps + 1}, {n}): the start, then one row per step{hint}")
    candidates = [_sgd_reference(f, start, rate, steps, k, seed, batched)
                  for batched in (False, True)]
    tolerance = lambda ref: 1e-9 * np.maximum(1.0, np.abs(ref))  # noqa: E731
    if any(np.all(np.abs(mine - ref) <= tolerance(ref)) for ref in candidates):
        return
    reference = candidates[0]
    t = int(np.argmax(np.any(np.abs(mine - reference) > tolerance(reference), axis=1)))
    hint = ""
    exact = _sgd_reference(f, start, rate, steps, None, seed, False)
    if k is not None and np.allclose(mine, exact, rtol=1e-9, atol=1e-12):
        hint = (" -- your run follows the exact gradient; use the Algorithm 1 estimate "
                "with k draws per vertex")
    elif t == 0:
        hint = " -- row 0 is the start itself"
    elif k is not None:
        hint = (" -- estimate each step's gradient with sample_paths(trace(f, *x), k, "
                "rng=rng).jacobian[0], drawing from the rng you were given (do not make a "
                "new one)")
    raise CheckFailed(f"{where}: your iterate {t} is {mine[t].tolist()}, expected "
                      f"{reference[t].tolist()}{hint}")


# ---------------------------------------------- implicit function theorem
def _problem(n: int, m: int, rng) -> dict:
    A = 3.0 * np.eye(n) + np.triu(rng.uniform(0.5, 1.0, (n, n)), 1)
    return {"A": A, "B": rng.standard_normal((n, m)), "c": rng.standard_normal(n),
            "p": rng.standard_normal(m)}


def implicit_problems() -> dict[str, dict]:
    """The problems :func:`check_implicit_gradient` runs on: for each, the root
    ``x`` of ``f(x, p) = A x + x^3 / 10 - B p`` (A not symmetric, so a forgotten
    transpose shows), the Jacobians ``f_x``, ``f_p`` there, ``g_x`` of the cost
    ``g(x) = c . x + |x|^2 / 2``, and ``p``.

    >>> sorted(implicit_problems())
    ['2 unknowns, 3 parameters', '4 unknowns, 2 parameters']
    """
    return {f"{n} unknowns, {m} parameters": _problem(n, m, np.random.default_rng(seed))
            for n, m, seed in ((2, 3, 5), (4, 2, 11))}


def _implicit_cases(rng) -> list[dict]:
    if rng is None:
        problems = implicit_problems()
    else:
        problems = {}
        for n, m in ((2, 3), (4, 2), (3, 3)):
            n, m = n + int(rng.integers(0, 2)), m + int(rng.integers(0, 2))
            problems[f"{n} unknowns, {m} parameters"] = _problem(n, m, rng)
    cases = []
    for name, problem in problems.items():
        x = _root(problem["A"], problem["B"], problem["p"])
        cases.append({"name": name, **problem, "f_x": problem["A"] + np.diag(0.3 * x ** 2),
                      "f_p": -problem["B"], "g_x": problem["c"] + x})
    return cases


def _probe_implicit(fns, case, where):
    return call_student(fns[0], where, case["f_x"].copy(), case["f_p"].copy(),
                        case["g_x"].copy())


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
          minutes=20, seconds=30, reference=("minirad.implicit.solves",),
          topic="implicit gradient", cases=_implicit_cases, probe=_probe_implicit,
          passed="implicit gradient agrees with central differences on {n} problems")
def check_implicit_gradient(case, answer, where) -> None:
    """Exercise 6.3: ``fn(f_x, f_p, g_x)`` returns ``dg/dp`` (shape: the number of
    parameters) at a root of ``f(x, p) = 0``: ``-lambda^T f_p`` with
    ``f_x^T lambda = g_x``.  Checked against central differences of the cost
    through a Newton solve."""
    p, f_x, f_p, g_x = case["p"], case["f_x"], case["f_p"], case["g_x"]
    try:
        got = np.asarray(answer, dtype=float) if np.ndim(answer) else np.full(1, np.nan)
    except (TypeError, ValueError):
        got = np.full(1, np.nan)
    eps = 1e-6
    want = np.array([(_cost(case, p + eps * e) - _cost(case, p - eps * e)) / (2 * eps)
                     for e in np.eye(len(p))])
    if got.shape != want.shape:
        extra = (" (that looks like dx/dp, the full n x m matrix; multiply by g_x, or "
                 "better, solve with f_x^T for g_x first)" if got.shape == f_p.shape else "")
        raise CheckFailed(f"{where}: return one number per parameter, shape {want.shape}; "
                          f"got shape {got.shape}{extra}")
    if np.allclose(got, want, rtol=1e-5, atol=1e-8):
        return
    hint = ""
    if np.allclose(-got, want, rtol=1e-5, atol=1e-8):
        hint = " (off by the sign: dx/dp = -f_x^{-1} f_p)"
    else:
        untransposed = -(np.linalg.solve(f_x, g_x) @ f_p)
        if np.allclose(got, untransposed, rtol=1e-5, atol=1e-8):
            hint = " (lambda solves f_x^T lambda = g_x: the transpose of f_x, not f_x)"
    raise CheckFailed(f"{where}: dg/dp should be {np.round(want, 6).tolist()} (central "
                      f"differences), you returned {np.round(got, 6).tolist()}{hint}")


# ------------------------------------------------ the adjoint of a linear solve
def _solve_case(n: int, columns: int | None, rng) -> dict:
    """A non-symmetric, well-conditioned A (a forgotten transpose shows), b and x_bar."""
    A = n * np.eye(n) + rng.uniform(-1.0, 1.0, (n, n)) + np.triu(rng.uniform(0.5, 1.5, (n, n)), 1)
    shape = (n,) if columns is None else (n, columns)
    what = "a vector b" if columns is None else f"b with {columns} columns"
    return {"name": f"A {n} x {n}, {what}", "A": A, "b": rng.standard_normal(shape),
            "x_bar": rng.standard_normal(shape)}


def _solve_cases(rng) -> list[dict]:
    if rng is None:
        rng, sizes = np.random.default_rng(64), ((2, None), (3, None), (4, 2))
    else:
        sizes = ((int(rng.integers(2, 4)), None), (int(rng.integers(4, 7)), None),
                 (int(rng.integers(3, 6)), int(rng.integers(2, 4))))
    return [_solve_case(n, columns, rng) for n, columns in sizes]


def _probe_solve(fns, case, where):
    result = call_student(fns[0], where, case["A"].copy(), case["b"].copy(),
                          case["x_bar"].copy(), seconds=10)
    return list(result) if isinstance(result, tuple) else result


def _close(mine: np.ndarray, want: np.ndarray, rtol: float) -> bool:
    return mine.shape == want.shape and bool(np.all(
        np.abs(mine - want) <= rtol * max(1.0, float(np.max(np.abs(want), initial=0.0)))))


def _solve_slip(A, b, x_bar, A_bar, b_bar, rtol) -> str:
    """The hint for a wrong pair: which of the usual slips it is."""
    x = np.linalg.solve(A, b)
    lam = np.linalg.solve(A.T, x_bar)
    untransposed = np.linalg.solve(A, x_bar)
    if _close(b_bar, untransposed, rtol):
        return (" -- lambda solves A^T lambda = x_bar, with the transpose of A: the reverse "
                "sweep applies the transposed Jacobian of x = A^{-1} b")
    if _close(b_bar, x_bar, rtol):
        return (" -- b_bar is lambda = A^{-T} x_bar, not x_bar itself: x depends on b through "
                "A^{-1}, so x_bar comes back through A^{-T}")
    if _close(A_bar, lam @ x.T if x.ndim == 2 else np.outer(lam, x), rtol):
        return " -- A_bar has the wrong sign: dx = -A^{-1} dA x, so A_bar = -lambda x^T"
    if _close(A_bar, -(x @ lam.T if x.ndim == 2 else np.outer(x, lam)), rtol):
        return (" -- A_bar is -lambda x^T (entry (i, j) is -lambda_i x_j: row i of A meets "
                "lambda_i), not -x lambda^T")
    return ""


@exercise("6.4", "the adjoint of a linear solve", takes=("solve_adjoint",), points=2,
          minutes=15, seconds=30, reference=("minirad.implicit.solves",),
          topic="solve adjoint", cases=_solve_cases, probe=_probe_solve,
          passed="the adjoint of x = A^-1 b agrees with minirad's reverse sweep on {n} systems")
def check_solve_adjoint(case, answer, where) -> None:
    """Exercise 6.4: ``fn(A, b, x_bar)`` returns ``(A_bar, b_bar)``, the adjoints of ``A``
    and ``b`` for ``x = A^{-1} b`` given the adjoint ``x_bar`` of ``x``.

    ``lambda`` solves ``A^T lambda = x_bar``; then ``b_bar = lambda`` and
    ``A_bar = -lambda x^T`` (``b`` and ``x_bar`` may hold several columns:
    ``A_bar = -Lambda X^T``).  Checked against the reverse sweep of minirad's
    traced ``np.linalg.solve`` (:mod:`minirad.implicit.solves`), with hints
    for a forgotten transpose, ``b_bar = x_bar``, the sign and ``x lambda^T``.

    >>> def solve_adjoint(A, b, x_bar):
    ...     lam = np.linalg.solve(A.T, x_bar)
    ...     return -lam @ np.linalg.solve(A, b).T if b.ndim == 2 else -np.outer(
    ...         lam, np.linalg.solve(A, b)), lam
    >>> check_solve_adjoint(solve_adjoint)
    Exercise 6.4 passed: the adjoint of x = A^-1 b agrees with minirad's reverse sweep on 3 \
systems
    """
    A, b, x_bar = case["A"], case["b"], case["x_bar"]
    if not (isinstance(answer, list) and len(answer) == 2):
        raise CheckFailed(f"{where}: return the pair (A_bar, b_bar)")
    A_bar = as_numbers(answer[0], where, "; A_bar is an n x n array of numbers")
    b_bar = as_numbers(answer[1], where, "; b_bar is an array of numbers shaped like b")
    want_A, want_b = vjp(trace(lambda A, b: np.linalg.solve(A, b), A, b), [x_bar])
    for name, mine, want in (("A_bar", A_bar, want_A), ("b_bar", b_bar, want_b)):
        if mine.shape != want.shape:
            raise CheckFailed(f"{where}: your {name} has shape {mine.shape}, expected "
                              f"{want.shape} (the shape of {name[0]})")
    low = low_precision(answer[0]) or low_precision(answer[1])
    rtol = 1e-9 if low is None else 1e-4     # float32 holds 7 digits; A is well conditioned
    good_A, good_b = _close(A_bar, want_A, rtol), _close(b_bar, want_b, rtol)
    if good_A and good_b:
        return
    wrong = " and ".join(name for name, good in (("A_bar", good_A), ("b_bar", good_b))
                         if not good)
    raise CheckFailed(f"{where}: your {wrong} differ from the reverse sweep's "
                      f"(A_bar {np.round(want_A, 6).tolist()}, b_bar "
                      f"{np.round(want_b, 6).tolist()})" + _solve_slip(A, b, x_bar, A_bar,
                                                                      b_bar, rtol))


# ------------------------------------------------------- the adjoint of an ODE solve
#: the problems of Exercise 6.5, by the name a case gives
ODE_PROBLEMS = {
    "oscillator": ode_adjoint.oscillator,
    "Lotka-Volterra": ode_adjoint.lotka_volterra,
    "diffusion": lambda n_steps: ode_adjoint.diffusion(n_grid=5, n_steps=n_steps),
}


def _ode_cases(rng) -> list[dict]:
    chosen = [("oscillator", 16), ("Lotka-Volterra", 12), ("diffusion", 10)]
    cases = []
    for name, n_steps in chosen:
        default = ODE_PROBLEMS[name](n_steps=n_steps).parameters
        if rng is None:
            p = default
        else:
            n_steps += int(rng.integers(0, 6))
            p = np.round(default * rng.uniform(0.8, 1.2, default.shape), 4)
        cases.append({"name": f"{name}, {n_steps} steps, p = {np.round(p, 4).tolist()}",
                      "problem": name, "n_steps": n_steps, "p": np.asarray(p, dtype=float)})
    return cases


def _ode_problem(case) -> ode_adjoint.ODEProblem:
    return ODE_PROBLEMS[case["problem"]](n_steps=case["n_steps"])


def adjoint_inputs(problem: ode_adjoint.ODEProblem, p):
    """What Exercise 6.5's function receives for ``problem`` at ``p``: ``(vjp, states, h,
    lam_T)``.

    ``states`` has ``2 N + 1`` rows, ``u`` at ``t = j h / 2``: the forward RK4
    solve's states in the even rows, the midpoints of its steps (cubic Hermite
    interpolation from the end values and slopes) in the odd ones.
    ``vjp(u, lam, t)`` returns ``(f_u^T lam + g_u^T, f_p^T lam + g_p^T)`` at
    ``(u, t)``, one reverse sweep through ``f`` (and the running cost ``g``)
    traced there; ``lam_T`` is the terminal cost's gradient at ``u(T)``.

    >>> vjp_, states, h, lam_T = adjoint_inputs(ode_adjoint.oscillator(n_steps=20),
    ...                                         np.array([2.0, 0.3]))
    >>> states.shape, h                      # 20 steps of 0.5 up to T = 10
    ((41, 2), 0.5)
    >>> bool(np.allclose(lam_T, states[-1] - [0.2, -0.1]))   # |u(T) - target|^2 / 2
    True
    """
    p = np.asarray(p, dtype=float)
    forward = ode_adjoint.integrate(problem, p)
    h = problem.h
    slopes = np.array([problem.f(u, p) for u in forward])
    states = np.empty((2 * len(forward) - 1, forward.shape[1]))
    states[0::2] = forward
    states[1::2] = (forward[1:] + forward[:-1]) / 2 + h / 8 * (slopes[:-1] - slopes[1:])
    lam_T = (np.zeros_like(forward[-1]) if problem.terminal is None else
             reverse_sweep(trace(problem.terminal, forward[-1])).jacobian[0])

    def pull(u, lam, t):
        graph = ode_adjoint.linearize(problem, np.asarray(u, dtype=float), p, float(t))
        seeds = [np.asarray(lam, dtype=float)]
        if len(graph.outputs) == 2:
            seeds.append(np.array(1.0))
        pulled, share = vjp(graph, seeds)
        return pulled, share

    return pull, states, h, lam_T


def _probe_ode(fns, case, where):
    pull, states, h, lam_T = adjoint_inputs(_ode_problem(case), case["p"])
    return call_student(fns[0], where, pull, states.copy(), h, lam_T.copy(), seconds=60)


def _backward(pull, states, h, lam, sign=1.0, late_first=True, midpoints=True,
              weighted=True, result="mu"):
    """RK4 backwards for (lambda, mu), with switches for the planted slips."""
    N = (len(states) - 1) // 2
    mu = None
    for n in range(N, 0, -1):
        t = n * h
        late, early = (states[2 * n], states[2 * n - 2]) if late_first else (
            states[2 * n - 2], states[2 * n])
        mid = states[2 * n - 1] if midpoints else late
        ks = []
        for y, c, step in ((late, 0.0, 0.0), (mid, 0.5, 0.5), (mid, 0.5, 0.5), (early, 1.0, 1.0)):
            a = lam if not ks else lam - step * h * ks[-1][0]
            pulled, share = pull(y, a, t - c * h)
            ks.append((-sign * np.asarray(pulled), -sign * np.asarray(share)))
        lam = lam - h * (ks[0][0] + 2 * ks[1][0] + 2 * ks[2][0] + ks[3][0]) / 6
        shares = ((ks[0][1] + 2 * ks[1][1] + 2 * ks[2][1] + ks[3][1]) / 6 if weighted
                  else ks[0][1])
        mu = -h * shares if mu is None else mu - h * shares
    return lam if result == "lambda" else mu


_ODE_SLIPS = (
    ({"sign": -1.0}, "the adjoint runs backwards: lambda' = -f_u^T lambda - g_u^T, so each "
                     "step from t_n down to t_n - h adds h times the weighted vjps"),
    ({"late_first": False}, "the backward step starts at its late end: k1 at t_n (row 2n), "
                            "k4 at t_n - h (row 2n - 2)"),
    ({"midpoints": False}, "k2 and k3 take u at the midpoint t_n - h/2 (row 2n - 1 of the "
                           "states)"),
    ({"weighted": False}, "integrate mu with the same RK4 stages and weights as lambda "
                          "(h (k1 + 2 k2 + 2 k3 + k4) / 6)"),
    ({"result": "lambda"}, "that is lambda(0), the gradient with respect to u0; return mu(0), "
                           "the gradient with respect to p"),
)


@exercise("6.5", "the adjoint of an ODE solve", takes=("adjoint_gradient",), points=3,
          minutes=30, seconds=120,
          reference=tuple(f"minirad.implicit.ode_adjoint:{name}" for name in (
              "continuous_gradient", "discrete_gradient", "traced_gradient", "convergence")),
          topic="ODE adjoint", cases=_ode_cases, probe=_probe_ode,
          passed="the continuous adjoint agrees with minirad's on {n} problems")
def check_ode_adjoint(case, answer, where) -> None:
    """Exercise 6.5: ``fn(vjp, states, h, lam_T)`` solves the adjoint ODE backwards by RK4
    and returns ``dG/dp``.

    ``lambda' = -f_u^T lambda - g_u^T`` from ``lambda(T) = lam_T`` and
    ``mu' = -f_p^T lambda - g_p^T`` from ``mu(T) = 0``, down to ``t = 0``, where
    ``mu(0) = dG/dp``; one RK4 step per forward step, with the states of
    :func:`adjoint_inputs` (``u(t_n)`` in row ``2n``, the midpoint in row
    ``2n - 1``).  Checked against
    :func:`minirad.implicit.ode_adjoint.continuous_gradient` (``states_from="stored"``)
    to 1e-8; a miss says how far the answer lies from the discrete adjoint.

    >>> def adjoint_gradient(vjp, states, h, lam_T):
    ...     lam, mu = lam_T, 0.0
    ...     for n in range((len(states) - 1) // 2, 0, -1):
    ...         t = n * h
    ...         k1 = vjp(states[2 * n], lam, t)
    ...         k2 = vjp(states[2 * n - 1], lam + h / 2 * k1[0], t - h / 2)
    ...         k3 = vjp(states[2 * n - 1], lam + h / 2 * k2[0], t - h / 2)
    ...         k4 = vjp(states[2 * n - 2], lam + h * k3[0], t - h)
    ...         lam = lam + h * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6
    ...         mu = mu + h * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6
    ...     return mu
    >>> check_ode_adjoint(adjoint_gradient)
    Exercise 6.5 passed: the continuous adjoint agrees with minirad's on 3 problems
    """
    problem, p = _ode_problem(case), case["p"]
    want = ode_adjoint.continuous_gradient(problem, p, states_from="stored").gradient
    mine = as_numbers(answer, where, "; return dG/dp, one number per parameter")
    if mine.shape != want.shape:
        raise CheckFailed(f"{where}: your function returned shape {mine.shape}; dG/dp has one "
                          f"entry per parameter, shape {want.shape}")
    low = low_precision(answer)
    rtol = 1e-8 if low is None else 1e-4
    if _close(mine, want, rtol):
        return
    discrete = ode_adjoint.discrete_gradient(problem, p).gradient
    gap = float(np.linalg.norm(mine - discrete) / np.linalg.norm(discrete))
    expected_gap = float(np.linalg.norm(want - discrete) / np.linalg.norm(discrete))
    hint = ""
    pull, states, h, lam_T = adjoint_inputs(problem, p)
    for switches, text in _ODE_SLIPS:
        slipped = _backward(pull, states, h, lam_T, **switches)
        if slipped.shape == mine.shape and _close(mine, slipped, 1e-6):
            hint = " -- " + text
            break
    raise CheckFailed(f"{where}: your dG/dp is {np.round(mine, 6).tolist()}, the continuous "
                      f"adjoint's is {np.round(want, 6).tolist()}; yours lies {gap:.2g} "
                      f"(relative) from the discrete adjoint, where RK4's continuous adjoint "
                      f"lies {expected_gap:.2g}{hint}")


# ------------------------------------------------------- planted mistakes
def _descend(sign=-1.0, rated=True):
    def descend(f, rate, *args):
        from ..exact.sweeps import reverse_sweep
        from ..tracing import trace

        gradient = reverse_sweep(trace(f, *args)).jacobian[0]
        return tuple(float(x + sign * (rate if rated else 1.0) * d)
                     for x, d in zip(args, gradient))
    return descend


def _sgd(exact=False, fresh=False, start_row=True):
    def sgd(f, start, rate, steps, k=None, rng=None):
        from ..exact.sweeps import reverse_sweep
        from ..randomized.sampling import sample_paths
        from ..tracing import trace

        point = np.array(start, dtype=float)
        path = [point] if start_row else []
        for _ in range(steps):
            graph = trace(f, *point)
            if k is None or exact:
                gradient = reverse_sweep(graph).jacobian[0]
            else:
                gradient = sample_paths(graph, k, rng=np.random.default_rng(0) if fresh
                                        else rng).jacobian[0]
            point = point - rate * gradient
            path.append(point)
        return np.array(path)
    return sgd


def _solve_adjoint(transpose=True, b_bar_is_x_bar=False, sign=-1.0, outer="lambda x"):
    def solve_adjoint(A, b, x_bar):
        x = np.linalg.solve(A, b)
        lam = np.linalg.solve(A.T if transpose else A, x_bar)
        pair = (lam, x) if outer == "lambda x" else (x, lam)
        A_bar = sign * (pair[0] @ pair[1].T if x.ndim == 2 else np.outer(*pair))
        return A_bar, (x_bar if b_bar_is_x_bar else lam)
    return solve_adjoint


def _ode(**switches):
    def adjoint_gradient(vjp, states, h, lam_T):
        return _backward(vjp, states, h, lam_T, **switches)
    return adjoint_gradient


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "6.1": [
        ("a step uphill", one(_descend(sign=1.0))),
        ("the gradient not scaled by the rate", one(_descend(rated=False))),
    ],
    "6.2": [
        ("the exact gradient instead of an estimate", one(_sgd(exact=True))),
        ("a new generator instead of the one given", one(_sgd(fresh=True))),
        ("no row for the start", one(_sgd(start_row=False))),
    ],
    "6.3": [
        ("the wrong sign", one(lambda f_x, f_p, g_x: np.linalg.solve(f_x.T, g_x) @ f_p)),
        ("f_x instead of its transpose",
         one(lambda f_x, f_p, g_x: -np.linalg.solve(f_x, g_x) @ f_p)),
    ],
    "6.4": [
        ("A instead of its transpose", one(_solve_adjoint(transpose=False))),
        ("b_bar = x_bar", one(_solve_adjoint(b_bar_is_x_bar=True))),
        ("A_bar with the wrong sign", one(_solve_adjoint(sign=1.0))),
        ("x lambda^T instead of lambda x^T", one(_solve_adjoint(outer="x lambda"))),
    ],
    "6.5": [(f"the adjoint with {name}", one(_ode(**switches))) for name, switches in (
        ("the wrong sign", {"sign": -1.0}), ("its stages in reverse", {"late_first": False}),
        ("no midpoints", {"midpoints": False}), ("mu by Euler steps", {"weighted": False}),
        ("lambda(0) returned", {"result": "lambda"}))],
}
