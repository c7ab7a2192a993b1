"""Checks of lab 8 (memory, checkpointing, RAD at equal memory): they accept the lab's
reference solutions and minirad itself, and reject planted mistakes with a message
naming the case and the slip.  Each planted answer is written the way a student would
write it, independently of the check's own list of slips."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from oracles import expect_failure, lab_group, solved_lab

from minirad import labs
from minirad.checkpoint.schedules import (
    Chain,
    Uniform,
    reverse_chain,
    uniform_forward_steps,
    uniform_peak_stored,
)
from minirad.studies.nn.memory import mlp, total_bytes
from minirad.studies.pde import index_dtype

pytestmark = lab_group("lab8_memory")  # one run of the lab per test session

STEM = "lab8_memory"


@pytest.fixture(scope="module")
def lab8(tmp_path_factory):
    result = solved_lab(STEM, tmp_path_factory)
    assert result.ok, result
    return result.namespace


@pytest.mark.slow
def test_checks_accept_the_lab_solutions(lab8, capsys):
    labs.check_table1_bytes(lab8["table1_bytes"])
    labs.check_checkpointed_gradient(lab8["checkpointed_gradient"])
    labs.check_uniform_cost(lab8["uniform_cost"])
    labs.check_rad_budget(lab8["rad_samples_for_budget"])
    labs.check_eq8_gradient(lab8["eq8_gradient"])
    out = capsys.readouterr().out.splitlines()[-5:]
    for line, number in zip(out, ("8.1", "8.2", "8.3", "8.4", "8.5"), strict=True):
        assert re.match(rf"Exercise {number} passed: ", line), line


def minirad_schedule(step, vjp, seed, x0, n, every):
    chain = Chain(step=step, vjp=lambda i, x, lam: (vjp(i, x, lam), None),
                  seed=lambda i, x: seed(x) if i == n else None)
    return reverse_chain(chain, x0, n, Uniform(every)).state_bar


def index_bytes(p):
    return np.dtype(index_dtype(p)).itemsize


def right_budget(p, budget):
    return min(p.size, budget // (p.n_steps * (8 + index_bytes(p))))


def test_checks_refuse_minirad_itself_and_accept_a_right_budget(capsys):
    expect_failure(labs.check_table1_bytes,
                   lambda sizes, f, batch: total_bytes(mlp(sizes), f, batch),
                   "Exercise 8.1", "used the reference", "total_bytes")
    expect_failure(labs.check_checkpointed_gradient, minirad_schedule, "Exercise 8.2",
                   "used the reference", "reverse_chain (minirad.checkpoint.schedules)")
    expect_failure(labs.check_uniform_cost,
                   lambda n, e: (uniform_forward_steps(n, e), uniform_peak_stored(n, e)),
                   "Exercise 8.3", "used the reference", "uniform_forward_steps")
    labs.check_rad_budget(right_budget)
    assert capsys.readouterr().out.count("passed:") == 1


def test_stubs_pass_through():
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise 9.9: stub")

    for check in (labs.check_table1_bytes, labs.check_checkpointed_gradient,
                  labs.check_uniform_cost, labs.check_rad_budget):
        with pytest.raises(NotImplementedError):
            check(stub)


# ------------------------------------------------------- 8.1 planted slips
def table1(sizes, fraction, batch, float_bytes=4, weights=True, logits=True,
           sample_logits=False, baseline_bits=False, bit_bytes=1 / 8, no_bits=False,
           keep=lambda d, f: math.ceil(round(f * d, 9)), output_relu=False, megabytes=False):
    """A student's Table 1 total, with one slip switched on by a keyword."""
    inputs, outputs = sizes[:-1], sizes[1:]
    parameters = sum(a * b + b for a, b in zip(inputs, outputs))
    units = sum(outputs) if output_relu else sum(outputs[:-1])
    last = sizes[-1] if logits else 0
    if fraction == 1:
        per_example = float_bytes * (sum(inputs) + last)
        if baseline_bits:
            per_example += units * bit_bytes
    else:
        if sample_logits:
            last = keep(last, fraction)
        per_example = float_bytes * (sum(keep(d, fraction) for d in inputs) + last)
        if not no_bits:
            per_example += units * bit_bytes
    total = (float_bytes * parameters if weights else 0) + batch * per_example
    return total / 1e6 if megabytes else total


@pytest.mark.parametrize("slip, fragments", [
    (dict(float_bytes=8), ["sizes=(3, 2), fraction=1.0, batch=1", "4 bytes, not 8"]),
    (dict(weights=False), ["your total is 20.00 bytes, expected 52.00",
                           "includes the weights and biases"]),
    (dict(logits=False), ["the logits (the last layer's output) are kept too"]),
    (dict(sample_logits=True), ["fraction=0.5", "the logits are kept whole"]),
    (dict(baseline_bits=True), ["sizes=(5, 4, 3), fraction=1.0",
                                "at fraction 1 the ReLU masks cost nothing"]),
    (dict(bit_bytes=4), ["sizes=(5, 4, 3), fraction=0.5", "not a float"]),
    (dict(bit_bytes=1), ["divide the number of units by 8"]),
    (dict(no_bits=True), ["RAD keeps one bit per ReLU unit"]),
    (dict(output_relu=True), ["the last layer has no ReLU"]),
    (dict(keep=lambda d, f: math.floor(f * d)), ["fraction=0.5", "rounded up (never 0)"]),
    (dict(keep=lambda d, f: round(f * d)), ["sizes=(5, 4, 3), fraction=0.5",
                                            "ceil(f d) of them, rounded up"]),
    (dict(megabytes=True), ["return bytes, not megabytes"]),
])
def test_table1_check_names_each_slip(slip, fragments):
    labs.check_table1_bytes(table1)  # the unplanted accounting passes
    expect_failure(labs.check_table1_bytes, lambda *a: table1(*a, **slip),
                   "Exercise 8.1 (Table 1 by hand), on sizes=", *fragments)


def test_floor_and_sampled_logits_coincide_once_but_are_told_apart():
    """On (3, 2) at f = 0.5 both slips give 44 bytes; the hint follows the slip that
    explains every case."""
    floor = lambda *a: table1(*a, keep=lambda d, f: math.floor(f * d))  # noqa: E731
    sampled = lambda *a: table1(*a, sample_logits=True)  # noqa: E731
    assert floor((3, 2), 0.5, 1) == sampled((3, 2), 0.5, 1) == 44
    assert "rounded up" in expect_failure(labs.check_table1_bytes, floor)
    assert "kept whole" in expect_failure(labs.check_table1_bytes, sampled)


# ------------------------------------------------------- 8.2 planted slips
def store_everything(step, vjp, seed, x0, n, every):
    states = [x0]
    for i in range(n):
        states.append(step(i, states[-1]))
    lam = seed(states[-1])
    for i in range(n - 1, -1, -1):
        lam = vjp(i, states[i], lam)
    return lam


def list_then_checkpoints(step, vjp, seed, x0, n, every):
    """Every state in a list, the checkpoints picked from it: the list is never dropped."""
    xs = [x0]
    for i in range(n):
        xs.append(step(i, xs[-1]))
    checkpoints = {i: xs[i] for i in range(0, n, every)}
    lam = seed(xs[-1])
    for start in reversed(range(0, n, every)):
        stop = min(start + every, n)
        states = [checkpoints.pop(start)]
        for i in range(start, stop - 1):
            states.append(step(i, states[-1]))
        for i in range(stop - 1, start - 1, -1):
            lam = vjp(i, states.pop(), lam)
    return lam


def recompute_from_start(step, vjp, seed, x0, n, every):
    x = x0
    for i in range(n):
        x = step(i, x)
    lam = seed(x)
    for i in range(n - 1, -1, -1):
        x = x0
        for j in range(i):
            x = step(j, x)
        lam = vjp(i, x, lam)
    return lam


def segments(step, vjp, seed, x0, n, every, *, after=False, whole=False, forward_order=False,
             keep_lam_n=False):
    """The uniform schedule with one slip: vjp given x_(i+1), a segment recomputed up to its
    end state, segments reversed first to last, or lam_n returned."""
    checkpoints, x = {}, x0
    for i in range(n):
        if i % every == 0:
            checkpoints[i] = x
        x = step(i, x)
    lam_n = lam = seed(x)
    del x
    starts = list(range(0, n, every))
    for start in (starts if forward_order else reversed(starts)):
        stop = min(start + every, n)
        states = [checkpoints.pop(start)]
        for i in range(start, stop if (whole or after) else stop - 1):
            states.append(step(i, states[-1]))
        if whole:
            states.pop()
        for i in range(stop - 1, start - 1, -1):
            lam = vjp(i, states[i - start + 1] if after else states[i - start], lam)
    return lam_n if keep_lam_n else lam


@pytest.mark.parametrize("fn, fragments", [
    (store_everything, ["n=10 steps, every=3", "called step 10 times, expected 16",
                        "without recomputation you must have kept every state"]),
    (list_then_checkpoints, ["n=10 steps, every=3", "states at once", "at most 6",
                             "already in the first sweep: keep only the checkpoints"]),
    (recompute_from_start, ["called step 55 times, expected 16",
                            "start from the nearest checkpoint"]),
    (lambda *a: segments(*a, after=True), ["called vjp(0, x, lam) with x_1",
                                           "the state *before* the step, x_0"]),
    (lambda *a: segments(*a, whole=True), ["n=1 steps", "called step 2 times, expected 1",
                                           "the state x_e it leads to is not needed"]),
    (lambda *a: segments(*a, forward_order=True), ["called vjp for i = [2, 1, 0, 5",
                                                   "reverse the segments from the last one"]),
    (lambda *a: segments(*a, keep_lam_n=True), ["your lam_0 is",
                                                "the last vjp call (i = 0) produced"]),
])
def test_checkpoint_check_names_each_slip(fn, fragments):
    labs.check_checkpointed_gradient(segments)  # the unplanted schedule passes
    expect_failure(labs.check_checkpointed_gradient, fn,
                   "Exercise 8.2 (sqrt(N) checkpointing), on a chain of n=", *fragments)


def test_checkpoint_check_counts_states_held_not_states_made():
    """A schedule that keeps its recomputed segment around after reversing it holds
    more than it should, though it calls step the right number of times."""
    def hoarder(step, vjp, seed, x0, n, every):
        checkpoints, x, kept = {}, x0, []
        for i in range(n):
            if i % every == 0:
                checkpoints[i] = x
            x = step(i, x)
        lam = seed(x)
        for start in reversed(range(0, n, every)):
            stop = min(start + every, n)
            states = [checkpoints.pop(start)]
            for i in range(start, stop - 1):
                states.append(step(i, states[-1]))
            kept.extend(states)  # never released
            for i in range(stop - 1, start - 1, -1):
                lam = vjp(i, states[i - start], lam)
        return lam

    expect_failure(labs.check_checkpointed_gradient, hoarder, "n=10 steps, every=3",
                   "states at once", "in the reverse sweep: drop the states of a segment")


# ------------------------------------------------------- 8.3 planted slips
def ceil_div(n, every):
    return -(-n // every)


def right_peak(n, every):
    return max(j + min(every, n - j * every) for j in range(ceil_div(n, every)))


@pytest.mark.parametrize("fn, fragments", [
    (lambda n, e: (2 * n - n // e, right_peak(n, e)),
     ["n=3, every=2", "forward steps is 5, expected 4", "ceil(n / every) segments"]),
    (lambda n, e: (2 * n - (n > 0) * 0, right_peak(n, e)),
     ["n=1, every=1", "forward steps is 2, expected 1", "recomputes L - 1 of them"]),
    (lambda n, e: (n + ceil_div(n, e) * (e - 1), right_peak(n, e)),
     ["n=3, every=2", "only its own length minus 1"]),
    (lambda n, e: (n - ceil_div(n, e), right_peak(n, e)),
     ["count the first forward sweep too"]),
    (lambda n, e: (2 * n - ceil_div(n, e), ceil_div(n, e) + e - 1),
     ["n=3, every=2", "peak number of states held is 3, expected 2",
      "the segment before it is reversed"]),
    (lambda n, e: (2 * n - ceil_div(n, e), ceil_div(n, e) + e),
     ["n=1, every=1", "count it once"]),
])
def test_uniform_cost_check_names_each_slip(fn, fragments):
    labs.check_uniform_cost(lambda n, e: (2 * n - ceil_div(n, e), right_peak(n, e)))
    expect_failure(labs.check_uniform_cost, fn,
                   "Exercise 8.3 (cost of the sqrt(N) schedule), on n=", *fragments)


def test_uniform_cost_check_refuses_a_non_pair():
    expect_failure(labs.check_uniform_cost, lambda n, e: 2 * n,
                   "return two whole numbers (forward_steps, peak_states)")


# ------------------------------------------------------- 8.4 planted slips
@pytest.mark.parametrize("fn, fragments", [
    (lambda p, b: min(p.size, b // (p.n_steps * 8)),
     ["Reactor(cells=8, n_steps=10), budget=2,000 bytes", "your k is 25, expected 20",
      "over the budget", "also keeps its index"]),
    (lambda p, b: min(p.size, b // ((p.n_steps + 1) * (8 + index_bytes(p)))),
     ["your k is 18, expected 20", "k + 1 still fits", "N states"]),
    (lambda p, b: min(p.size, math.ceil(b / (p.n_steps * (8 + index_bytes(p))))),
     ["budget=1,999 bytes", "round down"]),
    (lambda p, b: min(p.size, b // (p.n_steps * 10)),
     ["Reactor(cells=256, n_steps=2)", "not always 2"]),
    (lambda p, b: b // (p.n_steps * (8 + index_bytes(p))),
     ["budget=10,000 bytes", "your k is 100, expected 49", "at most d = 49"]),
    (lambda p, b: right_budget(p, b) / 1.0 + 0.5,
     ["k is a whole number of samples"]),
])
def test_budget_check_names_each_slip(fn, fragments):
    expect_failure(labs.check_rad_budget, fn, "Exercise 8.4 (RAD at a memory budget), on ",
                   *fragments)


def test_hidden_table1_cases_do_not_hinge_on_a_rounding_error_of_f_times_d():
    """0.17 * 300 is 51.00000000000001 in floating point: the lab's own solution (a plain
    ceil) kept 52 entries where Table 1's rule keeps 51, and lost a hidden case of 8.1.
    Over many students' draws, that solution agrees with minirad on every hidden case."""
    from minirad.labs.exercise import EXERCISES

    def plain_ceil(sizes, fraction, batch):   # the tutorial's solution, as a student writes it
        inputs, outputs = sizes[:-1], sizes[1:]
        parameters = sum(d_in * d_out + d_out for d_in, d_out in zip(inputs, outputs))
        if fraction == 1:
            return 4 * parameters + batch * 4 * (sum(inputs) + sizes[-1])
        kept = sum(math.ceil(fraction * d) for d in inputs)
        return 4 * parameters + batch * (4 * (kept + sizes[-1]) + sum(outputs[:-1]) / 8)

    assert plain_ceil((784, 300, 300, 300, 10), 0.17, 214) != total_bytes(mlp(), 0.17, 214)
    for seed in range(300):
        for case in EXERCISES["8.1"].cases(np.random.default_rng(seed)):
            for sizes, fraction, batch in case["questions"]:
                assert plain_ceil(tuple(sizes), fraction, batch) == total_bytes(
                    mlp(tuple(sizes)), fraction, batch), (seed, sizes, fraction, batch)


# ------------------------------------------------------------ 8.5: eq. 8
def test_eq8_reference_keeping_every_entry_once_is_the_exact_gradient():
    """Independent oracle: with k = d and every entry drawn exactly once, eq. 8 keeps
    all of each state with weight 1, so it is the plain adjoint's gradient."""
    from minirad.labs.lab08_memory import eq8_reference
    from minirad.studies.pde import Reactor, exact_gradient, initial_theta

    p = Reactor(cells=5, n_steps=7, dt=1 / 64)
    theta = initial_theta(rng=3) + np.arange(7) * 0.5
    everything = np.tile(np.arange(p.size)[::-1], (p.n_steps + 1, 1))
    exact = exact_gradient(p, theta)[1]
    assert np.allclose(eq8_reference(p, theta, everything), exact, rtol=1e-12, atol=0)


def test_eq8_reference_is_unbiased_over_every_draw():
    """The mean over all d^(N+1) equally likely draws of one entry per state (k = 1) is
    the exact gradient: eq. 8 is unbiased, exactly, not only in a Monte Carlo test."""
    import itertools

    from minirad.labs.lab08_memory import eq8_reference
    from minirad.studies.pde import Reactor, exact_gradient, initial_theta

    p = Reactor(cells=3, n_steps=2, dt=1 / 16)       # d = 4 entries, 3 states: 64 draws
    theta = initial_theta(rng=0) + 1.0
    total = sum(eq8_reference(p, theta, np.array(draw).reshape(-1, 1))
                for draw in itertools.product(range(p.size), repeat=p.n_steps + 1))
    assert np.allclose(total / p.size ** (p.n_steps + 1), exact_gradient(p, theta)[1],
                       rtol=1e-12, atol=0)


def _eq8_written_by_a_student(weighted=True, scatter_add=True):
    """Eq. 8 written as a student would, from the lab's text (not the check's slips):
    state and adjoint as (side, side) grids, the draws as (row, column) pairs."""
    from minirad.studies.pde import initial_state, source_profile, step, target

    def eq8_gradient(p, theta, indices):
        k = indices.shape[1]
        w = p.size / k if weighted else 1.0
        rows, cols = np.divmod(indices, p.side)
        phi, kept = initial_state(p), []
        for n in range(p.n_steps + 1):
            kept.append(phi[rows[n], cols[n]].copy())
            if n < p.n_steps:
                phi = step(p, theta, n, phi)
        lam, grad = np.zeros((p.side, p.side)), np.zeros(7)
        for n in reversed(range(p.n_steps + 1)):
            if n < p.n_steps:
                u = np.zeros((p.side, p.side))
                terms = w * p.dt * kept[n] * lam[rows[n], cols[n]]
                if scatter_add:
                    np.add.at(u, (rows[n], cols[n]), terms)
                else:
                    u[rows[n], cols[n]] += terms   # a repeated draw is written once
                grad += source_profile(p, np.eye(7), n * p.dt) @ u.sum(axis=1)
                lam = step(p, theta, n, lam)
            if n:
                seed = w * 2 * (kept[n] - target(p, n * p.dt)[rows[n], cols[n]]) / (
                    p.n_steps * p.size)
                if scatter_add:
                    np.add.at(lam, (rows[n], cols[n]), seed)
                else:
                    lam[rows[n], cols[n]] += seed
        return grad
    return eq8_gradient


def test_eq8_check_accepts_a_student_s_grid_version_and_refuses_minirad(capsys):
    from minirad.labs.lab08_memory import eq8_reference
    from minirad.studies.pde import rad_gradient

    labs.check_eq8_gradient(_eq8_written_by_a_student())
    assert "Exercise 8.5 passed" in capsys.readouterr().out
    expect_failure(labs.check_eq8_gradient, eq8_reference, "Exercise 8.5",
                   "used the reference", "chain")
    expect_failure(labs.check_eq8_gradient,
                   lambda p, theta, idx: rad_gradient(p, theta, 0.5, rng=0).gradient,
                   "used the reference", "rad_gradient")


def test_eq8_check_names_the_student_s_slips():
    expect_failure(labs.check_eq8_gradient, _eq8_written_by_a_student(weighted=False),
                   "Exercise 8.5 (eq. 8), on Reactor(cells=4, n_steps=6", "weight d/k")
    expect_failure(labs.check_eq8_gradient, _eq8_written_by_a_student(scatter_add=False),
                   "drawn twice counts twice", "np.add.at")
    expect_failure(labs.check_eq8_gradient, lambda p, theta, idx: np.zeros(6),
                   "shape (6,)", "7 entries")
    expect_failure(labs.check_eq8_gradient, lambda p, theta, idx: "gradient",
                   "returned str")
