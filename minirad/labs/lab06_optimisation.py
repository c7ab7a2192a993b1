"""Lab 6's exercises: one descent step (6.1), descent with sampled gradients (6.2) and the
implicit gradient through a root (6.3).

The functions descended travel by name (:data:`PROGRAMS`), the points, rates
and seeds as numbers; the hidden cases draw those at random.

>>> round(line_fit_loss(0.0, 0.0), 6)
0.310417
"""

from __future__ import annotations

import numpy as np

from .. import examples
from ..exact.sweeps import reverse_sweep
from ..randomized.sampling import sample_paths, sampled_jacobians
from ..tracing import ops, trace
from .checking import CheckFailed, as_numbers, call_student, one
from .exercise import exercise

__all__ = [
    "MISTAKES", "PROGRAMS", "check_descent_step", "check_implicit_gradient", "check_sgd",
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
}
