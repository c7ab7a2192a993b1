"""Lab 7's last section (add!!): the check accepts the lab's solution, refuses minirad's
own add!! as the reference, rejects planted slips with a message naming the case and the
slip, and the lab's counts are the ChainRules notes' (3 allocations with +, 2 with add!!)."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad.exact.cotangents import add_bang
from minirad.labs.lab07_tracked_arrays import check_add_bang

pytestmark = lab_group("lab7_tracked_arrays")  # one run of the lab per test session


def lab7(name, tmp_path_factory):
    return lab_solution("lab7_tracked_arrays", name, tmp_path_factory)


@pytest.mark.slow
def test_the_check_accepts_the_lab_solution_and_refuses_minirad_s_own(tmp_path_factory, capsys):
    solution = lab7("add_bang", tmp_path_factory)
    capsys.readouterr()  # what the notebook printed, if it ran just now
    check_add_bang(solution)
    assert capsys.readouterr().out.count("Exercise 7.4 passed: ") == 1
    expect_failure(check_add_bang,
                   lambda total, term, own: add_bang(operator.add, total, term, own),
                   "used the reference", "minirad.exact.cotangents")


def by_hand(total, term, own):
    """A correct add!! written here, independent of minirad's."""
    can_hold = (isinstance(total, np.ndarray) and total.flags.writeable
                and np.result_type(total, term) == total.dtype
                and np.broadcast_shapes(total.shape, np.shape(term)) == total.shape)
    if own and can_hold:
        np.add(total, term, out=total)
        return total, True
    total = total + term
    return total, isinstance(total, np.ndarray)


@pytest.mark.slow
def test_the_lab_counts_what_the_notes_count(tmp_path_factory):
    data = np.arange(1.0, 7.0)
    backward, plain, bang, first_two, mysum = (
        lab7(name, tmp_path_factory) for name in
        ("backward", "accum_counted", "accum_bang", "sum_first_and_second", "mysum"))
    # the notes: a-bar, b-bar and their sum; add!! writes b-bar into a-bar
    assert backward(first_two, data, plain)[1] == 3
    assert backward(first_two, data, bang)[1] == 2
    # mysum over n entries: n index pullbacks and n - 1 sums; add!! makes no sum
    n = len(data)
    grad, count = backward(mysum, data, plain)
    assert count == 2 * n - 1 and np.array_equal(grad, np.ones(n))
    assert backward(mysum, data, bang)[1] == n


def always_new(total, term, own):
    total = total + term
    return total, isinstance(total, np.ndarray)


def always_writes(total, term, own):
    if isinstance(total, np.ndarray):
        np.add(total, term, out=total)
        return total, True
    return total + term, False


def ignores_dtype(total, term, own):
    if own and isinstance(total, np.ndarray) and total.flags.writeable and np.shape(
            term) == total.shape:
        np.add(total, term, out=total)          # same_kind casting: rounds a float64 sum
        return total, True
    return always_new(total, term, own)


def forgets_the_new_sum_is_ours(total, term, own):
    result, now_own = by_hand(total, term, own)
    return result, now_own and result is total


@pytest.mark.parametrize("slip, fragments", [
    (always_new, ["your own float64 vector", "the accumulator was yours and can hold the sum"]),
    (always_writes, ["an array that is not yours", "it is not yours"]),
    (ignores_dtype, ["float32 vector plus a float64", "a float32 buffer cannot hold"]),
    (forgets_the_new_sum_is_ours, ["not yours (own=False)", "so it is yours (own=True)"]),
    (lambda total, term, own: total + term, ["return a pair (sum, own)"]),
])
def test_planted_slips_are_named(slip, fragments):
    expect_failure(check_add_bang, slip, "Exercise 7.4 (add!!), on ", *fragments)


def test_a_stub_passes_through():
    def stub(total, term, own):
        raise NotImplementedError("Exercise 7.4: write add_bang")

    with pytest.raises(NotImplementedError):
        check_add_bang(stub)
