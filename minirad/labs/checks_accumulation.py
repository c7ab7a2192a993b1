"""Exercise check for lab 7's last section: the maybe-mutating add ``add!!``.

Same contract as :mod:`minirad.labs.checks`.  The student writes
``add_bang(total, term, own) -> (sum, own)``: ``total + term``, written into
``total`` when ``own`` says the array is the caller's and it can hold the
sum, else in a new array, which the caller then owns.  The oracle is numpy's
``total + term`` (the sum must be the same bits either way) and, for what
may be mutated, the rule of :func:`minirad.exact.cotangents.add_bang`.

>>> import numpy as np
>>> def add_bang(total, term, own):
...     can_hold = (isinstance(total, np.ndarray) and total.flags.writeable
...                 and np.result_type(total, term) == total.dtype
...                 and np.broadcast_shapes(total.shape, np.shape(term)) == total.shape)
...     if own and can_hold:
...         np.add(total, term, out=total)
...         return total, True
...     total = total + term
...     return total, isinstance(total, np.ndarray)
>>> check_add_bang(add_bang)
Exercise 7.4 passed: add!! gives total + term bit for bit, writes only into arrays it owns \
and can hold the sum, on 7 cases
>>> check_add_bang(lambda total, term, own: (total + term, True))
Traceback (most recent call last):
...
minirad.labs.checks.CheckFailed: Exercise 7.4 (add!!), on your own float64 vector plus a \
vector: you returned a new array, but the accumulator was yours and can hold the sum: add the \
term into it (np.add(total, term, out=total)) and return it
"""

from __future__ import annotations

import numpy as np

from .checks import CheckFailed, call_student, location, passed
from .exercise import exercise

__all__ = ["check_add_bang"]

EXERCISE = "Exercise 7.4"


def _cases():
    """(name, total, term, own, whether add!! should write into total)."""
    shared = np.arange(4.0) / 3                     # someone else's (a view, a seed, ...)
    return [
        ("your own float64 vector plus a vector", np.arange(4.0) / 3, np.full(4, 0.1), True,
         True),
        ("an array that is not yours (own=False)", shared, np.full(4, 0.1), False, False),
        ("a read-only array (np.broadcast_to of a seed)", np.broadcast_to(np.array(0.7), (3,)),
         np.arange(3.0), True, False),
        ("your own float32 vector plus a float64 vector (the sum is float64)",
         np.arange(3, dtype=np.float32) / 3, np.full(3, 0.1), True, False),
        ("your own (1, 3) row plus a (2, 3) matrix (the sum is (2, 3))",
         np.ones((1, 3)), np.arange(6.0).reshape(2, 3), True, False),
        ("your own 0-d array plus a 0-d array", np.array(0.25), np.array(1 / 3), True, True),
        ("two numbers (floats cannot be written into)", 0.25, 1 / 3, True, False),
    ]


def _as_result(result, where: str):
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{where}: return a pair (sum, own), not {type(result).__name__}")
    return result


@exercise("7.4", "add!!", takes=("add_bang",), points=3, minutes=25, seconds=60,
          reference=("minirad.exact.cotangents",))
def check_add_bang(add_bang) -> None:
    """Check ``add_bang(total, term, own) -> (sum, own)`` on seven cases."""
    cases = _cases()
    for name, total, term, own, writes in cases:
        where = location(EXERCISE, "add!!", name)
        before = np.array(total, copy=True)
        expected = total + term
        sum_, now_own = _as_result(call_student(add_bang, where, total, term, own), where)
        if np.shape(sum_) != np.shape(expected) or np.result_type(sum_) != np.result_type(
                expected):
            raise CheckFailed(f"{where}: your sum has shape {np.shape(sum_)} and dtype "
                              f"{np.result_type(sum_)}; total + term has shape "
                              f"{np.shape(expected)} and dtype {np.result_type(expected)}"
                              + (" -- a float32 buffer cannot hold a float64 sum: allocate"
                                 if np.result_type(sum_) == np.float32 else ""))
        if not np.array_equal(sum_, expected):
            raise CheckFailed(f"{where}: your sum {np.round(sum_, 6).tolist()} is not total + "
                              f"term = {np.round(expected, 6).tolist()}")
        if writes and sum_ is not total:
            raise CheckFailed(f"{where}: you returned a new array, but the accumulator was "
                              f"yours and can hold the sum: add the term into it "
                              f"(np.add(total, term, out=total)) and return it")
        if not writes and not np.array_equal(np.asarray(total), before):
            raise CheckFailed(f"{where}: you wrote into total, which must stay as it was: "
                              + ("it is not yours" if not own else
                                 "it cannot hold the sum") + "; allocate total + term instead")
        owned = isinstance(sum_, np.ndarray)
        if bool(now_own) != owned:
            raise CheckFailed(f"{where}: you said own={now_own!r}; the sum is "
                              + ("an array you made or wrote, so it is yours (own=True)"
                                 if owned else "a number, which has no buffer to write into "
                                               "later (own=False)"))
    passed(EXERCISE, f"add!! gives total + term bit for bit, writes only into arrays it owns "
                     f"and can hold the sum, on {len(cases)} cases")
