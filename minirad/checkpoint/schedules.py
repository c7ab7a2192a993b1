"""Gradient checkpointing on a chain of steps: trade recomputation for memory.

A *chain* is a computation ``x_{i+1} = step(i, x_i)`` for ``i = 0 .. n-1``
(PDE time steps, RNN steps, the layers of an MLP) whose reverse sweep needs,
for every step, something computed from ``x_i``: its *residual*.  Reverse
mode with everything stored keeps all ``n`` residuals; a checkpointing
schedule keeps a few states (*checkpoints*) and recomputes the others from
the nearest one when the reverse sweep reaches them.

Three schedules, all giving bit-for-bit the same gradient (the same steps
and VJPs run on the same values, and the parameter cotangents are added up
in the same order, ``i = n-1`` down to ``0``):

* :class:`StoreAll`: the reference; ``n`` forward steps, ``n`` residuals kept.
* :class:`Uniform`: a checkpoint every ``every`` steps (``every ~ sqrt(n)``
  gives the lecture's sqrt(N) memory); ``2n - ceil(n / every)`` forward steps.
* :class:`Binomial`: Griewank and Walther's optimal schedule (revolve) for a
  given number of snapshots ``s``; ``binomial_forward_steps(n, s) + 1``
  forward steps, the fewest any schedule holding ``s`` states can do; it
  holds the ``s`` snapshots plus the residual of the step being reversed.

The chain is given by functions, so any state type works (arrays, tuples):

* ``step(i, x) -> x_next``
* ``vjp(i, r, lam_next) -> (lam, param_bar)``: the cotangent of ``x_i``
  through step ``i`` and this step's contribution to the parameter
  cotangent (``None`` when there is none), from the residual ``r`` of ``x_i``.
* ``seed(i, r) -> g`` (optional): the loss's direct dependence on ``x_i``
  (``None`` for none); it is added to ``x_i``'s cotangent.  Called once per
  ``i``, in decreasing ``i``, so a caller may also total the loss in it.
* ``residual(i, x) -> r`` (optional, default ``x`` itself): what the reverse
  sweep needs of ``x_i``.  A residual smaller than the state (a sample of
  it, as in randomized AD) combined with checkpoints gives both savings.

A chain-shaped LCG of arrays (a traced RNN or MLP, the PDE's graph) is read as
such a chain by :mod:`minirad.checkpoint.on_graph`.

>>> import numpy as np
>>> a = 0.9
>>> chain = Chain(step=lambda i, x: a * x + np.sin(x),
...               vjp=lambda i, x, lam: ((a + np.cos(x)) * lam, None),
...               seed=lambda i, x: 1.0 if i == 8 else None)
>>> full = reverse_chain(chain, 0.5, 8)                       # d x_8 / d x_0
>>> cheap = reverse_chain(chain, 0.5, 8, Binomial(snapshots=2))
>>> bool(full.state_bar == cheap.state_bar), full.forward_steps, cheap.forward_steps
(True, 8, 15)
>>> binomial_forward_steps(8, 2) + 1
15
>>> full.peak_stored, cheap.peak_stored    # 8 states against 2 snapshots + the one in use
(8, 3)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Binomial", "Chain", "ChainGradient", "StoreAll", "Uniform", "binomial_capacity",
    "binomial_forward_steps", "binomial_forward_steps_dp", "reverse_chain", "repetition_number",
    "sqrt_every", "uniform_forward_steps", "uniform_peak_stored",
]


@dataclass(frozen=True)
class Chain:
    """A chain of steps and the pieces of its reverse sweep (see the module docstring)."""

    step: Callable[[int, Any], Any]
    vjp: Callable[[int, Any, Any], tuple[Any, Any]]
    seed: Callable[[int, Any], Any] | None = None
    residual: Callable[[int, Any], Any] | None = None


@dataclass(frozen=True)
class StoreAll:
    """Keep every residual: plain reverse mode."""


@dataclass(frozen=True)
class Uniform:
    """A checkpoint every ``every`` steps; the reverse sweep recomputes one segment at a time."""

    every: int


@dataclass(frozen=True)
class Binomial:
    """Griewank-Walther binomial checkpointing (revolve) with ``snapshots`` stored states,
    the initial state included."""

    snapshots: int


@dataclass(frozen=True)
class ChainGradient:
    """The result of :func:`reverse_chain`.

    ``state_bar`` is the cotangent of ``x_0``; ``param_bar`` the total of the
    steps' parameter cotangents (``None`` if every step returned ``None``);
    ``final_state`` is ``x_n``.  ``forward_steps`` counts calls of ``step``;
    ``peak_stored`` is the largest number of objects (checkpointed states and
    residuals; an object that is both counts once) held at the same time by
    the schedule, ``peak_bytes`` their bytes (numpy ``nbytes``, 8 per Python
    number); the working state being advanced is not counted.
    """

    state_bar: Any
    param_bar: Any
    final_state: Any
    forward_steps: int
    peak_stored: int
    peak_bytes: int


# ------------------------------------------------------------ closed forms
def binomial_capacity(snapshots: int, repetitions: int) -> int:
    """beta(s, r) = C(s + r, s): the most steps ``s`` snapshots can reverse when no step
    is advanced more than ``r`` times (Griewank 1992).

    >>> binomial_capacity(2, 3)
    10
    """
    if repetitions < 0:
        return 0
    return math.comb(snapshots + repetitions, snapshots)


def repetition_number(n_steps: int, snapshots: int) -> int:
    """The r with beta(s, r - 1) < n <= beta(s, r).

    beta(s, r) grows with r, so r is found by doubling, then bisection: a few
    dozen binomial coefficients even for ``n`` in the billions.

    >>> repetition_number(10, 2), repetition_number(11, 2), repetition_number(10**9, 1)
    (3, 4, 999999999)
    """
    _check_counts(n_steps, snapshots)
    if n_steps <= 1:
        return 0
    low, high = 0, 1  # beta(s, low) < n throughout; beta(s, high) >= n once the doubling stops
    while binomial_capacity(snapshots, high) < n_steps:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        if binomial_capacity(snapshots, middle) < n_steps:
            low = middle
        else:
            high = middle
    return high


def binomial_forward_steps(n_steps: int, snapshots: int) -> int:
    """Griewank and Walther's minimal number of forward steps to reverse ``n`` steps with
    ``s`` snapshots: ``r n - beta(s + 1, r - 1)``.

    It counts the advances needed to bring each ``x_i`` into hand for its
    reverse step (one snapshot holds ``x_0``); :func:`reverse_chain` calls ``step``
    once more, to compute ``x_n`` itself.

    >>> binomial_forward_steps(5, 1)   # one snapshot: 4 + 3 + 2 + 1 advances
    10
    >>> binomial_forward_steps(5, 5)   # enough snapshots: each step once, the last never
    4
    """
    r = repetition_number(n_steps, snapshots)
    return r * n_steps - binomial_capacity(snapshots + 1, r - 1)


def binomial_forward_steps_dp(n_steps: int, snapshots: int) -> int:
    """The same minimum by dynamic programming over every first split (an independent
    check of the closed form; O(n^2 s), for small n).

    >>> binomial_forward_steps_dp(8, 2) == binomial_forward_steps(8, 2)
    True
    """
    _check_counts(n_steps, snapshots)
    # best[c][l]: fewest advances to reverse l steps holding c snapshots
    best = [[0] * (n_steps + 1) for _ in range(snapshots + 1)]
    for length in range(1, n_steps + 1):
        best[1][length] = length * (length - 1) // 2
    for c in range(2, snapshots + 1):
        for length in range(2, n_steps + 1):
            best[c][length] = min(j + best[c - 1][length - j] + best[c][j]
                                  for j in range(1, length))
    return best[snapshots][n_steps]


def sqrt_every(n_steps: int) -> int:
    """The checkpoint spacing that minimises what :class:`Uniform` holds at once (about
    sqrt(n)); among equals the smallest, which recomputes least.

    Closed form, no search.  Below ``n`` the peak is ``e + ceil(n / e) - 2``, plus 1
    when ``e`` divides ``n`` (:func:`uniform_peak_stored`).  The least value of
    ``e + ceil(n / e)`` is the least ``m`` with ``floor(m / 2) ceil(m / 2) >= n``,
    taken exactly by the ``e`` with ``e (m - e) >= n``, an interval around
    ``m / 2``; its smallest member that does not divide ``n`` is the answer.  If
    every member divides ``n``, the peak is one more, reached at the interval's
    first member or at a smaller ``e`` of the interval for ``m + 1`` that does not
    divide ``n``.  Near sqrt(n) at most two consecutive numbers divide ``n``, so
    each scan takes a few steps.

    >>> sqrt_every(100), uniform_peak_stored(100, 8), uniform_peak_stored(100, 10)
    (8, 19, 19)
    >>> sqrt_every(10**12), uniform_peak_stored(10**12, 999_001)  # 10**6 holds as many
    (999001, 1999999)
    """
    _check_counts(n_steps, 1)
    n = int(n_steps)
    m = 2 * math.isqrt(n)
    while (m // 2) * (m - m // 2) < n:
        m += 1
    first = _first_fitting(n, m)
    for e in range(first, m - first + 1):
        if n % e:
            return min(e, n)
    for e in range(_first_fitting(n, m + 1), first):
        if n % e:
            return min(e, n)
    return min(first, n)


def _first_fitting(n: int, m: int) -> int:
    """The least e >= 1 with e (m - e) >= n (one exists: floor(m/2) ceil(m/2) >= n)."""
    e = max(1, (m - math.isqrt(max(m * m - 4 * n, 0))) // 2 - 1)
    while e * (m - e) < n:
        e += 1
    return e


def uniform_forward_steps(n_steps: int, every: int) -> int:
    """Forward steps of :class:`Uniform`: ``n`` in the first sweep plus ``length - 1`` per
    segment to recompute it from its checkpoint, ``2n - ceil(n / every)`` in all.

    >>> uniform_forward_steps(100, 10)
    190
    """
    _check_counts(n_steps, every)
    return 2 * n_steps - -(-n_steps // every)


def uniform_peak_stored(n_steps: int, every: int) -> int:
    """Most objects :class:`Uniform` holds at once when the residual is the state itself:
    while segment ``j`` (0-based, length ``L_j``) is reversed it holds checkpoints
    ``0..j`` and the segment's ``L_j`` states, one of which is checkpoint ``j``.

    >>> uniform_peak_stored(100, 10)
    19
    """
    _check_counts(n_steps, every)
    if every >= n_steps:
        return int(n_steps)  # one segment: every state of it
    # the peak is while the second-last segment (checkpoints 0..S-2, every states)
    # or the last (checkpoints 0..S-1, its L states, L = every when every divides n)
    # is reversed: S - 2 + every, or S - 1 + L
    segments = -(-n_steps // every)
    return int(every + segments - 2 + (n_steps % every == 0))


def _check_counts(n_steps, snapshots) -> None:
    for name, value in (("n_steps", n_steps), ("snapshots/every", snapshots)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be a positive integer, not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value}")


# ------------------------------------------------------------ bookkeeping
def _nbytes(obj) -> int:
    if isinstance(obj, np.ndarray | np.generic):
        return int(obj.nbytes)
    if isinstance(obj, tuple | list):
        return sum(_nbytes(x) for x in obj)
    if isinstance(obj, int | float | complex):
        return 8
    return 0


class _Ledger:
    """What a schedule holds: objects by identity (one held twice counts once), and the peak."""

    def __init__(self):
        self.held: dict[int, list] = {}  # id -> [object, times held]
        self.bytes = self.peak_stored = self.peak_bytes = 0

    def hold(self, obj) -> None:
        entry = self.held.setdefault(id(obj), [obj, 0])
        if entry[1] == 0:
            self.bytes += _nbytes(obj)
        entry[1] += 1
        self.peak_stored = max(self.peak_stored, len(self.held))
        self.peak_bytes = max(self.peak_bytes, self.bytes)

    def release(self, obj) -> None:
        entry = self.held[id(obj)]
        entry[1] -= 1
        if entry[1] == 0:
            del self.held[id(obj)]
            self.bytes -= _nbytes(obj)


class _Run:
    """One gradient computation: counts steps, holds objects, runs the reverse steps in order."""

    def __init__(self, chain: Chain, n_steps: int):
        self.chain, self.n = chain, n_steps
        self.ledger = _Ledger()
        self.forward_steps = 0
        self.lam = self.param_bar = self.final_state = None

    def step(self, i, x):
        self.forward_steps += 1
        return self.chain.step(i, x)

    def residual(self, i, x):
        return x if self.chain.residual is None else self.chain.residual(i, x)

    def seed(self, i, r):
        return None if self.chain.seed is None else self.chain.seed(i, r)

    def finish_forward(self, x_n) -> None:
        """``x_n`` is in hand: its seed starts the reverse sweep."""
        self.final_state = x_n
        self.lam = self.seed(self.n, self.residual(self.n, x_n))
        if self.lam is None:
            raise ValueError("the seed of the last state x_n is None: the loss must depend "
                             "on x_n (return a zero cotangent if it truly does not)")

    def reverse_step(self, i, r) -> None:
        """Step ``i`` backwards; every schedule calls this for i = n-1, ..., 0 in order."""
        lam, p = self.chain.vjp(i, r, self.lam)
        g = self.seed(i, r)
        self.lam = lam if g is None else lam + g
        if p is not None:
            self.param_bar = p if self.param_bar is None else self.param_bar + p

    def result(self) -> ChainGradient:
        return ChainGradient(self.lam, self.param_bar, self.final_state, self.forward_steps,
                             self.ledger.peak_stored, self.ledger.peak_bytes)


# -------------------------------------------------------------- schedules
def reverse_chain(chain: Chain, x0, n_steps: int, schedule=None) -> ChainGradient:
    """Reverse the chain ``x_{i+1} = step(i, x_i)``, ``i < n_steps``, under a schedule
    (default :class:`StoreAll`).  See the module docstring for an example.
    """
    if not isinstance(chain, Chain):
        raise TypeError(f"chain must be a minirad.checkpoint.schedules.Chain, not "
                        f"{type(chain).__name__}")
    _check_counts(n_steps, 1)
    schedule = StoreAll() if schedule is None else schedule
    run = _Run(chain, int(n_steps))
    if isinstance(schedule, StoreAll):
        _store_all(run, x0)
    elif isinstance(schedule, Uniform):
        _check_counts(n_steps, schedule.every)
        _uniform(run, x0, int(schedule.every))
    elif isinstance(schedule, Binomial):
        _check_counts(n_steps, schedule.snapshots)
        _binomial(run, x0, int(schedule.snapshots))
    else:
        raise TypeError(f"schedule must be StoreAll(), Uniform(every) or Binomial(snapshots), "
                        f"not {type(schedule).__name__}")
    return run.result()


def _store_all(run: _Run, x0) -> None:
    residuals, x = [], x0
    for i in range(run.n):
        residuals.append(run.residual(i, x))
        run.ledger.hold(residuals[-1])
        x = run.step(i, x)
    run.finish_forward(x)
    for i in range(run.n - 1, -1, -1):
        run.reverse_step(i, residuals[i])
        run.ledger.release(residuals.pop())


def _uniform(run: _Run, x0, every: int) -> None:
    starts = list(range(0, run.n, every))
    checkpoints, x = {}, x0
    for i in range(run.n):
        if i % every == 0:
            checkpoints[i] = x
            run.ledger.hold(x)
        x = run.step(i, x)
    run.finish_forward(x)
    for start in reversed(starts):
        stop = min(start + every, run.n)
        x, residuals = checkpoints[start], []
        for i in range(start, stop):
            if i > start:
                x = run.step(i - 1, x)
            residuals.append(run.residual(i, x))
            run.ledger.hold(residuals[-1])
        for i in range(stop - 1, start - 1, -1):
            run.reverse_step(i, residuals[i - start])
            run.ledger.release(residuals.pop())
        run.ledger.release(checkpoints.pop(start))


def _binomial(run: _Run, x0, snapshots: int) -> None:
    run.ledger.hold(x0)
    _revolve(run, 0, run.n, x0, snapshots)
    run.ledger.release(x0)


def _advance(run: _Run, i: int, x, j: int):
    """x_j from x_i."""
    for m in range(i, j):
        x = run.step(m, x)
    return x


def _reverse_one(run: _Run, i: int, x) -> None:
    """Reverse step i with x_i in hand (computing x_n first when i is the last step)."""
    if i == run.n - 1:
        run.finish_forward(run.step(i, x))
    r = run.residual(i, x)
    run.ledger.hold(r)
    run.reverse_step(i, r)
    run.ledger.release(r)


def _revolve(run: _Run, lo: int, hi: int, x_lo, snapshots: int) -> None:
    """Reverse steps lo .. hi-1; x_lo is held in one of ``snapshots`` slots.

    With one slot every x_i is advanced to from x_lo.  With more, advance to a
    split point j, hold x_j in a new slot, reverse j .. hi-1 with one slot
    fewer, free it and reverse lo .. j-1.  The split is one that attains the
    closed form: with r the repetition number of (l, s), the left part
    (j steps, s slots) must fit r - 1 repetitions and the right part (l - j
    steps, s - 1 slots) r repetitions, i.e. beta(s, r-2) <= j <= beta(s, r-1)
    and beta(s-1, r-1) <= l - j <= beta(s-1, r); then
    j + t(l-j, s-1) + t(j, s) = r l - beta(s+1, r-1) by Pascal's rule.

    The right parts go first, so the left parts wait on a stack, each with the
    snapshot to free before it starts: a loop, not a recursion, however many
    snapshots there are (Python's recursion limit is about a thousand).
    """
    waiting = [(lo, hi, x_lo, snapshots, None)]
    while waiting:
        lo, hi, x_lo, snapshots, done_with = waiting.pop()
        if done_with is not None:  # the right part that needed it is reversed
            run.ledger.release(done_with)
        while hi - lo > 1 and snapshots > 1:
            length = hi - lo
            r = repetition_number(length, snapshots)
            j = max(1, binomial_capacity(snapshots, r - 2),
                    length - binomial_capacity(snapshots - 1, r))
            x_j = _advance(run, lo, x_lo, lo + j)
            run.ledger.hold(x_j)
            waiting.append((lo, lo + j, x_lo, snapshots, x_j))  # the left part, for later
            lo, x_lo, snapshots = lo + j, x_j, snapshots - 1
        for i in range(hi - 1, lo - 1, -1):
            _reverse_one(run, i, _advance(run, lo, x_lo, i))
