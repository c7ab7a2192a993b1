"""Lab 13's exercises: the derivative as a program (source transformation).

* Exercise 13.1: the adjoint program of ``y = sum(tanh(W @ x))`` written by hand,
  ``adjoint(W, x, y_bar) -> (y, (W_bar, x_bar))`` (:func:`check_adjoint_by_hand`),
  against the adjoint code minirad generates from the traced graph
  (:func:`minirad.codegen`), at matrices of several shapes (non-square both ways,
  so that a transposed answer cannot fit) and cotangents other than 1.
* Exercise 13.2: preaccumulation by hand: the two diagonals of one step of the
  relaxation ``x' = x + 0.01 (c x - x^3)``, ``step_diagonals(x, c) -> (d_x, d_c)``
  (:func:`check_step_diagonals`), the step's intermediate vertices eliminated,
  against the diagonal of the traced step's Jacobian.

The cases carry shapes, cotangents and the arrays themselves (W, x, c); the hidden
cases draw them at random.

>>> def adjoint(W, x, y_bar):          # a first try: the chain rule stops at the sum
...     v = np.tanh(W @ x)
...     return v.sum(), (np.outer(np.full(len(v), y_bar), x), W.T @ np.full(len(v), y_bar))
>>> check_adjoint_by_hand(adjoint)
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 13.1 (adjoint code by hand), on W of shape (3, 2), \
y_bar = 1.0: your W_bar entry [0, 0] is ... -- the tanh's partial is missing: multiply the \
cotangent of tanh(W @ x) by 1 - tanh(W @ x)**2 before the matrix product
"""

from __future__ import annotations

import numpy as np

from .checking import CheckFailed, call_student, compare_jacobian, one
from .exercise import exercise

__all__ = ["MISTAKES", "RATE", "check_adjoint_by_hand", "check_step_diagonals", "layer",
           "relaxation_step"]

RATE = 0.01


def layer(W, x):
    """The program of Exercise 13.1: ``sum(tanh(W @ x))``."""
    return np.tanh(W @ x).sum()


def relaxation_step(x, c):
    """One step of the relaxation of Exercise 13.2."""
    return x + RATE * (c * x - x * x * x)


# ----------------------------------------------------------------- 13.1
#: (W's shape, y_bar) of the published cases: a non-square W both ways round, a
#: cotangent other than 1
SHAPES = [((3, 2), 1.0), ((2, 4), 1.0), ((4, 3), -0.5), ((1, 5), 2.5)]


def _adjoint_cases(rng) -> list[dict]:
    draw = np.random.default_rng(13) if rng is None else rng
    shapes = SHAPES if rng is None else [
        ((int(m), int(n)), round(float(b), 2)) for m, n, b in zip(
            rng.integers(1, 6, 4), rng.integers(1, 6, 4), rng.uniform(-2.0, 2.0, 4))]
    return [{"name": f"W of shape {shape}, y_bar = {y_bar}",
             "W": draw.standard_normal(shape).round(4), "x": draw.standard_normal(shape[1])
             .round(4), "y_bar": y_bar} for shape, y_bar in shapes]


def _probe_adjoint(fns, case, where):
    result = call_student(fns[0], where, case["W"].copy(), case["x"].copy(), case["y_bar"])
    try:
        y, (W_bar, x_bar) = result
        return {"y": float(y), "W_bar": np.asarray(W_bar, dtype=float),
                "x_bar": np.asarray(x_bar, dtype=float)}
    except (TypeError, ValueError):
        return {"form": repr(result)[:80]}


def _generated(W, x, y_bar):
    """minirad's adjoint code for the same program: value and (W_bar, x_bar)."""
    from ..tracing.codegen import codegen
    from ..tracing.tracer import trace

    code = codegen(trace(layer, W, x), preaccumulate=False)
    return code(W, x, cotangents=[np.asarray(y_bar)])


def _adjoint_hint(W, x, y_bar, mine_W) -> str:
    """What a wrong W_bar most likely comes from."""
    v = np.tanh(W @ x)
    slips = [
        (np.outer(np.full(len(v), y_bar), x), " -- the tanh's partial is missing: multiply the "
                                               "cotangent of tanh(W @ x) by 1 - tanh(W @ x)**2 "
                                               "before the matrix product"),
        (np.outer(y_bar * (1 - v), x), " -- tanh' = 1 - tanh**2: square the value"),
        (np.outer(1 - v * v, x), " -- y_bar is the cotangent of y: every term scales with it"),
    ]
    for wrong, hint in slips:
        if wrong.shape == mine_W.shape and np.allclose(mine_W, wrong, rtol=1e-9, atol=1e-12):
            return hint
    return ""


@exercise("13.1", "adjoint code by hand", takes=("adjoint",), points=3, minutes=25, seconds=30,
          reference=("minirad.tracing.codegen", "minirad.tracing.replay", "minirad.exact.sweeps",
                     "minirad.exact.jacobians"),
          cases=_adjoint_cases, probe=_probe_adjoint,
          passed="{n} shapes and cotangents agree with minirad's generated adjoint code")
def check_adjoint_by_hand(case, answer, where) -> None:
    """Exercise 13.1: ``adjoint(W, x, y_bar)`` returns ``(y, (W_bar, x_bar))`` for
    ``y = sum(tanh(W @ x))``, equal to minirad's generated adjoint code."""
    if "form" in answer:
        raise CheckFailed(f"{where}: adjoint must return (y, (W_bar, x_bar)), the value and "
                          f"one cotangent per input, not {answer['form']}")
    W, x, y_bar = case["W"], case["x"], case["y_bar"]
    want_y, (want_W, want_x) = _generated(W, x, y_bar)
    y, W_bar, x_bar = answer["y"], answer["W_bar"], answer["x_bar"]
    if not np.isclose(y, float(want_y), rtol=1e-12, atol=1e-12):
        raise CheckFailed(f"{where}: your y is {y!r}, expected {float(want_y)!r} -- the forward "
                          f"statements come first: v = tanh(W @ x), y = v.sum()")
    if W_bar.shape == W.shape[::-1] and W.shape[0] != W.shape[1]:
        raise CheckFailed(f"{where}: W_bar has shape {W_bar.shape}, W has {W.shape} -- a "
                          f"cotangent has its variable's shape: W_bar = outer(v2_bar, x), the "
                          f"cotangent of W @ x first")
    if W_bar.shape == W.shape and not np.allclose(W_bar, want_W, rtol=1e-10, atol=1e-12):
        hint = _adjoint_hint(W, x, y_bar, W_bar)
        if hint:
            i = np.unravel_index(int(np.argmax(np.abs(W_bar - want_W))), W.shape)
            raise CheckFailed(f"{where}: your W_bar entry {list(map(int, i))} is "
                              f"{W_bar[i]:.6g}, expected {want_W[i]:.6g}{hint}")
    compare_jacobian(W_bar, want_W, where, "W_bar", rtol=1e-10)
    if x_bar.shape != x.shape:
        raise CheckFailed(f"{where}: x_bar has shape {x_bar.shape}, x has {x.shape} -- the "
                          f"adjoint of W @ x in x is W.T @ v2_bar")
    compare_jacobian(x_bar, want_x, where, "x_bar", rtol=1e-10)


# ----------------------------------------------------------------- 13.2
def _diagonal_cases(rng) -> list[dict]:
    draw = np.random.default_rng(14) if rng is None else rng
    return [{"name": f"x and c of length {n}", "x": draw.uniform(-1.5, 1.5, n).round(4),
             "c": draw.uniform(0.5, 1.5, n).round(4)} for n in (1, 4, 7)]


def _probe_diagonals(fns, case, where):
    result = call_student(fns[0], where, case["x"].copy(), case["c"].copy())
    try:
        d_x, d_c = (np.asarray(d, dtype=float) for d in result)
        return {"d_x": d_x, "d_c": d_c}
    except (TypeError, ValueError):
        return {"form": repr(result)[:80]}


@exercise("13.2", "preaccumulating a step", takes=("step_diagonals",), points=2, minutes=20,
          seconds=30, reference=("minirad.tracing.codegen", "minirad.exact.sweeps",
                                 "minirad.exact.jacobians", "minirad.exact.elimination"),
          cases=_diagonal_cases, probe=_probe_diagonals,
          passed="the diagonals of {n} steps agree with the Jacobian of the traced step")
def check_step_diagonals(case, answer, where) -> None:
    """Exercise 13.2: ``step_diagonals(x, c)`` returns the diagonals ``(d_x, d_c)`` of
    one relaxation step's Jacobian, ``dx'/dx`` and ``dx'/dc``, as arrays like ``x``."""
    from ..exact.jacobians import jacobian
    from ..tracing.tracer import trace

    if "form" in answer:
        raise CheckFailed(f"{where}: step_diagonals must return (d_x, d_c), two arrays like "
                          f"x, not {answer['form']}")
    x, c = case["x"], case["c"]
    n = len(x)
    full = jacobian(trace(relaxation_step, x, c))
    want_x, want_c = np.diag(full[:, :n]), np.diag(full[:, n:])
    d_x, d_c = answer["d_x"], answer["d_c"]
    if d_x.shape == want_x.shape and np.allclose(d_x, want_x - 1.0, rtol=1e-12):
        raise CheckFailed(f"{where}: d_x misses 1 everywhere -- x reaches x' directly too (the "
                          f"edge of x + ...): its path adds the identity")
    if d_x.shape == want_x.shape and np.allclose(d_x, 1.0 + RATE * (c - x * x), rtol=1e-12):
        raise CheckFailed(f"{where}: d_x is 1 + 0.01 (c - x^2) -- x * x * x has the "
                          f"derivative 3 x^2: x reaches it along three edges")
    compare_jacobian(d_x, want_x, where, "d_x", rtol=1e-12)
    if d_c.shape == want_c.shape and np.allclose(d_c, x, rtol=1e-12):
        raise CheckFailed(f"{where}: d_c is x -- the constant 0.01 of the step multiplies every "
                          f"path through c * x")
    compare_jacobian(d_c, want_c, where, "d_c", rtol=1e-12)


# ------------------------------------------------------- planted mistakes
def _adjoint_slip(kind: str):
    """A wrong adjoint of sum(tanh(W @ x)) for Exercise 13.1."""
    def adjoint(W, x, y_bar):
        v = np.tanh(W @ x)
        v_bar = np.full(v.shape, float(y_bar))
        v2_bar = {"no tanh": v_bar, "tanh' = 1 - tanh": v_bar * (1.0 - v),
                  "no y_bar": 1.0 - v * v}.get(kind, v_bar * (1.0 - v * v))
        W_bar = np.outer(x, v2_bar) if kind == "transposed" else np.outer(v2_bar, x)
        x_bar = v2_bar @ W.T if kind == "x_bar by W" else W.T @ v2_bar
        return float(v.sum()), (W_bar, x_bar)
    return one(adjoint)


def _diagonal_slip(kind: str):
    """Wrong diagonals of one relaxation step for Exercise 13.2."""
    def step_diagonals(x, c):
        cube = x * x if kind == "x^2" else 3.0 * x * x
        d_x = RATE * (c - cube) + (0.0 if kind == "no identity" else 1.0)
        return d_x, (x if kind == "no 0.01" else RATE * x)
    return one(step_diagonals)


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "13.1": [
        ("the tanh's partial left out", _adjoint_slip("no tanh")),
        ("tanh' written as 1 - tanh", _adjoint_slip("tanh' = 1 - tanh")),
        ("the cotangent y_bar not applied", _adjoint_slip("no y_bar")),
        ("W_bar as outer(x, v2_bar), transposed", _adjoint_slip("transposed")),
        ("x_bar as v2_bar @ W.T", _adjoint_slip("x_bar by W")),
    ],
    "13.2": [
        ("the identity path x -> x' left out", _diagonal_slip("no identity")),
        ("x^3's derivative as x^2", _diagonal_slip("x^2")),
        ("d_c without the 0.01", _diagonal_slip("no 0.01")),
    ],
}
