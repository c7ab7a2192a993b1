"""Exercise checks on derivative code written by hand (lab 13).

* Exercise 13.1: the adjoint program of ``y = sum(tanh(W @ x))`` written by hand,
  ``adjoint(W, x, y_bar) -> (y, (W_bar, x_bar))`` (:func:`check_adjoint_by_hand`),
  against the adjoint code minirad generates from the traced graph
  (:func:`minirad.codegen`), at matrices of several shapes and cotangents other
  than 1.
* Exercise 13.2: preaccumulation by hand: the two diagonals of one step of the
  relaxation ``x' = x + 0.01 (c x - x^3)``, ``step_diagonals(x, c) -> (d_x, d_c)``
  (:func:`check_step_diagonals`), the step's intermediate vertices eliminated,
  against the diagonal of the step's Jacobian.

Same contract as :mod:`minirad.labs.checks`: one line on success, otherwise a
:class:`~minirad.labs.checks.CheckFailed` naming the input and what is wrong.
``tests/test_labs_codegen.py`` runs both checks on correct answers.

>>> def adjoint(W, x, y_bar):          # a first try: the chain rule stops at the sum
...     v = np.tanh(W @ x)
...     return v.sum(), (np.outer(np.full(len(v), y_bar), x), W.T @ np.full(len(v), y_bar))
>>> check_adjoint_by_hand(adjoint)
Traceback (most recent call last):
...
minirad.labs.checks.CheckFailed: Exercise 13.1 (adjoint code by hand), on W of shape (3, 2), \
y_bar = 1.0: your W_bar entry [0, 0] is ... -- the tanh's partial is missing: multiply the \
cotangent of tanh(W @ x) by 1 - tanh(W @ x)**2 before the matrix product
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .checks import CheckFailed, call_student, compare_jacobian, location, passed
from .exercise import exercise

__all__ = ["CASES", "RATE", "check_adjoint_by_hand", "check_step_diagonals", "layer",
           "relaxation_step"]

RATE = 0.01


def layer(W, x):
    """The program of Exercise 13.1: ``sum(tanh(W @ x))``."""
    return np.tanh(W @ x).sum()


def relaxation_step(x, c):
    """One step of the relaxation of Exercise 13.2."""
    return x + RATE * (c * x - x * x * x)


#: (W's shape, y_bar) of Exercise 13.1's cases: a non-square W (a transposed answer
#: cannot fit), one the other way round, a cotangent other than 1
CASES = [((3, 2), 1.0), ((2, 4), 1.0), ((4, 3), -0.5), ((1, 5), 2.5)]


def _generated(W, x, y_bar):
    """minirad's adjoint code for the same program: value and (W_bar, x_bar)."""
    from ..tracing.codegen import codegen
    from ..tracing.tracer import trace

    code = codegen(trace(layer, W, x), preaccumulate=False)
    return code(W, x, cotangents=[np.asarray(y_bar)])


def _parts(result, where: str):
    """``(y, (W_bar, x_bar))`` of the student's adjoint, as floats and arrays."""
    try:
        y, (W_bar, x_bar) = result
        return float(y), np.asarray(W_bar, dtype=float), np.asarray(x_bar, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: adjoint must return (y, (W_bar, x_bar)), the value and "
                          f"one cotangent per input, not {result!r:.80}") from None


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
                     "minirad.exact.jacobians"))
def check_adjoint_by_hand(adjoint: Callable) -> None:
    """Exercise 13.1: ``adjoint(W, x, y_bar)`` returns ``(y, (W_bar, x_bar))`` for
    ``y = sum(tanh(W @ x))``, equal to minirad's generated adjoint code."""
    rng = np.random.default_rng(13)
    for shape, y_bar in CASES:
        W, x = rng.standard_normal(shape), rng.standard_normal(shape[1])
        where = location("Exercise 13.1", "adjoint code by hand",
                         f"W of shape {shape}, y_bar = {y_bar}")
        result = call_student(adjoint, where, W.copy(), x.copy(), y_bar)
        y, W_bar, x_bar = _parts(result, where)
        want_y, (want_W, want_x) = _generated(W, x, y_bar)
        if not np.isclose(y, float(want_y), rtol=1e-12, atol=1e-12):
            raise CheckFailed(f"{where}: your y is {y!r}, expected {float(want_y)!r} -- the "
                              f"forward statements come first: v = tanh(W @ x), y = v.sum()")
        if W_bar.shape == shape[::-1] and shape[0] != shape[1]:
            raise CheckFailed(f"{where}: W_bar has shape {W_bar.shape}, W has {shape} -- a "
                              f"cotangent has its variable's shape: W_bar = outer(v2_bar, x), "
                              f"the cotangent of W @ x first")
        if W_bar.shape == shape and not np.allclose(W_bar, want_W, rtol=1e-10, atol=1e-12):
            hint = _adjoint_hint(W, x, y_bar, W_bar)
            if hint:
                i = np.unravel_index(int(np.argmax(np.abs(W_bar - want_W))), shape)
                raise CheckFailed(f"{where}: your W_bar entry {list(map(int, i))} is "
                                  f"{W_bar[i]:.6g}, expected {want_W[i]:.6g}{hint}")
        compare_jacobian(W_bar, want_W, where, "W_bar", rtol=1e-10)
        if x_bar.shape != x.shape:
            raise CheckFailed(f"{where}: x_bar has shape {x_bar.shape}, x has {x.shape} -- the "
                              f"adjoint of W @ x in x is W.T @ v2_bar, not W @ v2_bar")
        compare_jacobian(x_bar, want_x, where, "x_bar", rtol=1e-10)
    passed("Exercise 13.1", f"{len(CASES)} shapes and cotangents agree with minirad's "
                            f"generated adjoint code")


@exercise("13.2", "preaccumulating a step", takes=("step_diagonals",), points=2, minutes=20,
          seconds=30, reference=("minirad.tracing.codegen", "minirad.exact.sweeps",
                                 "minirad.exact.jacobians", "minirad.exact.elimination"))
def check_step_diagonals(step_diagonals: Callable) -> None:
    """Exercise 13.2: ``step_diagonals(x, c)`` returns the diagonals ``(d_x, d_c)`` of
    one relaxation step's Jacobian, ``dx'/dx`` and ``dx'/dc``, as arrays like ``x``."""
    from ..exact.jacobians import jacobian
    from ..tracing.tracer import trace

    rng = np.random.default_rng(14)
    for n in (1, 4, 7):
        x, c = rng.uniform(-1.5, 1.5, n), rng.uniform(0.5, 1.5, n)
        where = location("Exercise 13.2", "preaccumulating a step", f"x and c of length {n}")
        result = call_student(step_diagonals, where, x.copy(), c.copy())
        try:
            d_x, d_c = (np.asarray(d, dtype=float) for d in result)
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: step_diagonals must return (d_x, d_c), two arrays "
                              f"like x, not {result!r:.80}") from None
        full = jacobian(trace(relaxation_step, x, c))
        want_x, want_c = np.diag(full[:, :n]), np.diag(full[:, n:])
        if d_x.shape == want_x.shape and np.allclose(d_x, want_x - 1.0, rtol=1e-12):
            raise CheckFailed(f"{where}: d_x misses 1 everywhere -- x reaches x' directly too "
                              f"(the edge of x + ...): its path adds the identity")
        if d_x.shape == want_x.shape and np.allclose(d_x, 1.0 + RATE * (c - x * x),
                                                     rtol=1e-12):
            raise CheckFailed(f"{where}: d_x is 1 + 0.01 (c - x^2) -- x * x * x has the "
                              f"derivative 3 x^2: x reaches it along three edges")
        compare_jacobian(d_x, want_x, where, "d_x", rtol=1e-12)
        if d_c.shape == want_c.shape and np.allclose(d_c, x, rtol=1e-12):
            raise CheckFailed(f"{where}: d_c is x -- the constant 0.01 of the step multiplies "
                              f"every path through c * x")
        compare_jacobian(d_c, want_c, where, "d_c", rtol=1e-12)
    passed("Exercise 13.2", "the diagonals of three steps agree with the Jacobian of the "
                            "traced step")
