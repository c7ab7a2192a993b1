"""Lab 8's exercises: memory of reverse mode, checkpointing, RAD at equal memory, eq. 8.

The oracles are minirad's own
accounting and schedules: :mod:`minirad.studies.nn.memory` (Table 1's rules),
:mod:`minirad.checkpoint.schedules` (the store-all reverse sweep, the closed forms of
the uniform schedule) and the ledger of that module run on the PDE's sampled
chain (:func:`minirad.studies.pde.rad_gradient`); for the eq. 8 estimator (8.5), that
sampled chain itself, given the same draws as the student's function.  The checkpointing check does
not trust what the student says it did: it hands over a chain whose ``step``
and ``vjp`` count their calls, verify which state they receive, and count (by
weak references) how many of the states they produced are still alive.
Exercises of many small questions (8.1, 8.3, 8.4) group them in a few cases,
so that a hint can name the slip that explains every answer of a group.

>>> def peak(n, every):                   # while segment j is reversed
...     lengths = [min(every, n - start) for start in range(0, n, every)]
...     return max(j + length for j, length in enumerate(lengths))
>>> check_uniform_cost(lambda n, every: (2 * n - -(-n // every), peak(n, every)))
Exercise 8.3 passed: forward steps and peak states agree with minirad on 2 groups of \
(n, every) cases
>>> check_uniform_cost(lambda n, every: (2 * n - n // every, peak(n, every)))
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 8.3 (cost of the sqrt(N) schedule), on n=3, every=2: \
your number of forward steps is 5, expected 4 -- n // every rounds down, but the last, shorter \
segment has a checkpoint too: there are ceil(n / every) segments
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable

import numpy as np

from ..checkpoint.schedules import (
    Chain,
    StoreAll,
    reverse_chain,
    uniform_forward_steps,
    uniform_peak_stored,
)
from ..studies.nn.memory import mlp, total_bytes
from ..studies.pde import (
    Reactor,
    chain,
    index_dtype,
    initial_state,
    initial_theta,
    rad_gradient,
    source_profile,
    step,
    target,
)
from .checking import CheckFailed, as_numbers, call_student, one, type_name
from .exercise import exercise

__all__ = [
    "MISTAKES", "check_checkpointed_gradient", "check_eq8_gradient", "check_rad_budget",
    "check_table1_bytes", "check_uniform_cost", "eq8_reference", "table1_variant",
]


def _at(where: str, name: str) -> str:
    """The message's location for one question of a group: ``"Exercise 8.3 (...), on n=3,
    every=2"``."""
    return where.split(", on ", 1)[0] + ", on " + name


def _ask_each(fns, case, where, name, args_of):
    """The probe of a group of questions: the student's answer to each."""
    return [call_student(fns[0], _at(where, name(q)), *args_of(q)) for q in case["questions"]]


def _group_answers(answer, n: int, where: str) -> list:
    if not (isinstance(answer, list) and len(answer) == n):
        raise CheckFailed(f"{where}: the grader could not read your answers")
    return answer


# ------------------------------------------------------ 8.1 Table 1 by hand
# (sizes, fraction, batch): small networks first, where a slip shows in few numbers;
# the paper's network at its six fractions last
_TABLE1_CASES = [
    ((3, 2), 1.0, 1),
    ((3, 2), 0.5, 1),
    ((5, 4, 3), 1.0, 2),
    ((5, 4, 3), 0.5, 2),
    ((10, 7, 7, 2), 0.3, 7),
    ((10, 7, 7, 2), 0.1, 1),
    ((30, 20, 10), 0.1, 5),
    *[((784, 300, 300, 300, 10), f, 150) for f in (1.0, 0.8, 0.5, 0.3, 0.1, 0.05)],
]
PAPER = (784, 300, 300, 300, 10)


def _fraction(rng, low: float, high: float, sizes) -> float:
    """A fraction with two decimals whose ``f * d`` does not land a rounding error above a
    whole number for any width ``d`` of ``sizes`` (0.17 * 300 is 51.00000000000001): there
    a plain ``math.ceil`` keeps one entry more than Table 1's rule, a slip in floating
    point that Exercise 8.1 is not about."""
    while True:
        f = round(float(rng.uniform(low, high)), 2)
        if all(math.ceil(f * d) == math.ceil(round(f * d, 9)) for d in sizes):
            return f


def _table1_cases(rng) -> list[dict]:
    if rng is None:
        small, paper = _TABLE1_CASES[:7], _TABLE1_CASES[7:]
    else:
        small = []
        for depth in (1, 1, 2, 2, 3, 3, 2):
            sizes = tuple(int(d) for d in rng.integers(2, 40, depth + 1))
            fraction = 1.0 if len(small) in (0, 2) else _fraction(rng, 0.05, 0.9, sizes)
            small.append((sizes, fraction, int(rng.integers(1, 9))))
        batch = int(rng.integers(50, 300))
        fractions = [1.0] + sorted({_fraction(rng, 0.03, 0.95, PAPER) for _ in range(5)},
                                   reverse=True)
        paper = [(PAPER, f, batch) for f in fractions]
    return [{"name": "seven small networks", "questions": [list(q) for q in small]},
            {"name": f"the paper's network {PAPER} at {len(paper)} fractions",
             "questions": [list(q) for q in paper]}]


def _table1_question(q) -> str:
    sizes, fraction, batch = q
    return f"sizes={tuple(sizes)}, fraction={fraction}, batch={batch}"


def _probe_table1(fns, case, where):
    return _ask_each(fns, case, where, _table1_question,
                     lambda q: (tuple(q[0]), q[1], q[2]))


def table1_variant(sizes, fraction, batch, float_bytes=4, weights=True, biases=True,
                    logits="whole", relu_at_baseline=False, relu_bytes=1 / 8, keep=None,
                    relu_on_output=False) -> float:
    """Table 1's total under the rules, with one rule changed (a slip) by a keyword."""
    keep = keep or (lambda d, f: math.ceil(round(f * d, 9)))
    inputs, outputs = sizes[:-1], sizes[1:]
    params = sum(a * b + (b if biases else 0) for a, b in zip(inputs, outputs))
    relu_units = sum(outputs[:-1]) + (outputs[-1] if relu_on_output else 0)
    if fraction == 1.0:
        floats = sum(inputs) + sizes[-1]
        bits = relu_units if relu_at_baseline else 0
    else:
        floats = sum(keep(d, fraction) for d in inputs)
        floats += {"whole": sizes[-1], "sampled": keep(sizes[-1], fraction), "none": 0}[logits]
        bits = relu_units
    if logits == "none" and fraction == 1.0:
        floats -= sizes[-1]
    per_example = float_bytes * floats + bits * relu_bytes
    return (float_bytes * params if weights else 0) + batch * per_example


_TABLE1_SLIPS = {
    "8-byte floats": (
        dict(float_bytes=8),
        "the paper stores every value as a 32-bit float: 4 bytes, not 8"),
    "weights left out": (
        dict(weights=False),
        "Table 1's peak memory includes the weights and biases (4 bytes per parameter), "
        "kept once for the whole batch"),
    "biases left out": (
        dict(biases=False),
        "the parameters are the weights AND the biases: a layer from d_in to d_out has "
        "d_in * d_out + d_out of them"),
    "logits left out": (
        dict(logits="none"),
        "the logits (the last layer's output) are kept too, for the loss's backward pass"),
    "logits sampled": (
        dict(logits="sampled"),
        "RAD samples the inputs of linear layers; the logits are kept whole"),
    "ReLU bits at the baseline": (
        dict(relu_at_baseline=True),
        "at fraction 1 the ReLU masks cost nothing: they are rebuilt from the stored layer "
        "inputs (only a sampled input cannot rebuild its mask)"),
    "ReLU masks as floats": (
        dict(relu_bytes=4),
        "a ReLU mask is one bit per unit (1/8 byte), not a float"),
    "ReLU masks as bytes": (
        dict(relu_bytes=1),
        "a ReLU mask is one bit per unit: divide the number of units by 8, not by 1"),
    "ReLU masks forgotten": (
        dict(relu_bytes=0),
        "with a sampled input the ReLU mask can no longer be rebuilt: RAD keeps one bit per "
        "ReLU unit"),
    "ReLU on the output layer": (
        dict(relu_on_output=True),
        "the last layer has no ReLU: only the hidden units carry a mask bit"),
    "floor instead of ceil": (
        dict(keep=lambda d, f: math.floor(round(f * d, 9))),
        "a layer input of d entries keeps ceil(f d) of them, rounded up (never 0)"),
    "rounded to nearest": (
        dict(keep=lambda d, f: round(f * d)),
        "a layer input of d entries keeps ceil(f d) of them, rounded up"),
}


@exercise("8.1", "Table 1 by hand", takes=("table1_bytes",), points=3, minutes=25, seconds=30,
          reference=("minirad.studies.nn.memory:total_bytes",
                     "minirad.studies.nn.memory:table1_rows",
                     "minirad.studies.nn.graph:table1_from_graph"),
          cases=_table1_cases, probe=_probe_table1,
          passed="Table 1's accounting agrees with minirad on {n} groups of (network, "
                 "fraction, batch) cases")
def check_table1_bytes(case, answer, where) -> None:
    """Exercise 8.1: ``fn(sizes, fraction, batch)`` is Table 1's peak memory of an MLP, in bytes.

    ``sizes = (d_0, ..., d_L)``: a fully connected network with a ReLU after
    every hidden layer.  Compared with :func:`minirad.studies.nn.memory.total_bytes`
    on small networks and on the paper's network at several fractions, with a
    hint for 8-byte floats, weights or logits left out, sampled logits, ReLU
    bits charged at the baseline, masks counted as floats or bytes or forgotten,
    a mask on the output layer, and ``floor``/``round`` where the rule says ``ceil``.

    >>> def table1_bytes(sizes, fraction, batch):
    ...     inputs, outputs = sizes[:-1], sizes[1:]
    ...     parameters = sum(a * b + b for a, b in zip(inputs, outputs))
    ...     if fraction == 1:
    ...         per_example = 4 * (sum(inputs) + sizes[-1])
    ...     else:                                 # ceil(f d) floats, one bit per hidden ReLU
    ...         kept = sum(math.ceil(fraction * d) for d in inputs)
    ...         per_example = 4 * (kept + sizes[-1]) + sum(outputs[:-1]) / 8
    ...     return 4 * parameters + batch * per_example
    >>> check_table1_bytes(table1_bytes)
    Exercise 8.1 passed: Table 1's accounting agrees with minirad on 2 groups of (network, \
fraction, batch) cases
    """
    questions = [(tuple(s), f, b) for s, f, b in case["questions"]]
    raw = _group_answers(answer, len(questions), where)
    answers = []
    for q, result in zip(questions, raw):
        try:
            answers.append(float(result))
        except (TypeError, ValueError):
            raise CheckFailed(f"{_at(where, _table1_question(q))}: your function returned "
                              f"{type_name(result)}; return the total in bytes, one "
                              f"number") from None
    expected = [total_bytes(mlp(sizes), f, batch) for sizes, f, batch in questions]
    assert expected == [table1_variant(*q) for q in questions]  # two codings agree
    same = lambda a, b: math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)  # noqa: E731
    for i, (mine, want) in enumerate(zip(answers, expected)):
        if same(mine, want):
            continue
        message = (f"{_at(where, _table1_question(questions[i]))}: your total is {mine:,.2f} "
                   f"bytes, expected {want:,.2f}")
        if math.isclose(mine, want / 1e6, rel_tol=1e-9):
            raise CheckFailed(message + " -- return bytes, not megabytes")
        slips = [([table1_variant(*q, **variant) for q in questions], hint)
                 for variant, hint in _TABLE1_SLIPS.values()]
        raise CheckFailed(message + _named_slip(answers, slips, i, same))


def _named_slip(answers, slips, failing: int, same) -> str:
    """The hint of the slip the student's answers follow: one that explains every case if
    there is one (two slips may give the same number on one case), else one that explains
    the failing case, else nothing.  ``slips`` is a list of (answers under the slip, hint).

    >>> _named_slip([1, 5], [([1, 4], "a"), ([1, 5], "b")], 1, int.__eq__)
    ' -- b'
    """
    for values, hint in slips:
        if all(same(a, v) for a, v in zip(answers, values)):
            return f" -- {hint}"
    for values, hint in slips:
        if same(answers[failing], values[failing]):
            return f" -- {hint}"
    return ""


# -------------------------------------------- 8.2 the sqrt(N) schedule itself
class _Probe:
    """A chain x_{i+1} = x_i + h sin(a_i x_i + c_i) on vectors, whose step and vjp count
    their calls, check the state they are given, and track the states alive."""

    def __init__(self, n: int, a, c, x0):
        self.n, self.h = n, 0.3
        self.a, self.c, self.x0 = np.asarray(a), np.asarray(c), np.asarray(x0)
        self.states = [self.x0]
        for i in range(n):
            self.states.append(self._step(i, self.states[-1]))
        self.reset()

    def _step(self, i, x):
        return x + self.h * np.sin(self.a[i] * x + self.c[i])

    def _vjp(self, i, x, lam):
        return lam * (1 + self.h * self.a[i] * np.cos(self.a[i] * x + self.c[i]))

    def reference(self) -> np.ndarray:
        chain = Chain(step=self._step, vjp=lambda i, x, lam: (self._vjp(i, x, lam), None),
                      seed=lambda i, x: 2 * x if i == self.n else None)
        return reverse_chain(chain, self.x0, self.n).state_bar

    def reset(self) -> None:
        self.steps, self.vjps, self.alive, self.peak = 0, [], 0, 0
        self.first_sweep_peak = None  # the peak before the first vjp call
        self.problem = None

    def _died(self) -> None:
        self.alive -= 1

    def _which(self, x) -> str:
        """The name of the state x is, if it is one of x_0 .. x_n."""
        for j, s in enumerate(self.states):
            if np.shape(x) == s.shape and np.array_equal(x, s):
                return f"x_{j}"
        return "no state of the chain"

    def _expect(self, i, x, what) -> None:
        if self.problem is None and not (np.shape(x) == (3,) and np.array_equal(x, self.states[i])):
            self.problem = (what, i, self._which(x))

    def step(self, i, x):
        self.steps += 1
        self.peak = max(self.peak, self.alive)
        if not isinstance(i, (int, np.integer)) or not 0 <= i < self.n:
            raise ValueError(f"step({i!r}, x): i must be an integer 0 .. {self.n - 1}")
        self._expect(i, x, "step")
        out = self._step(i, np.asarray(x, dtype=float))
        self.alive += 1
        weakref.finalize(out, self._died)
        self.peak = max(self.peak, self.alive)
        return out

    def vjp(self, i, x, lam):
        self.peak = max(self.peak, self.alive)
        if not isinstance(i, (int, np.integer)) or not 0 <= i < self.n:
            raise ValueError(f"vjp({i!r}, x, lam): i must be an integer 0 .. {self.n - 1}")
        if self.first_sweep_peak is None:
            self.first_sweep_peak = self.peak
        self.vjps.append(int(i))
        self._expect(i, x, "vjp")
        return self._vjp(i, np.asarray(x, dtype=float), np.asarray(lam, dtype=float))

    def seed(self, x):
        self._expect(self.n, x, "seed")
        return 2 * np.asarray(x, dtype=float)


# (n, every): one step, uneven and even segments, every = 1 and every = n
_CHECKPOINT_CASES = [(1, 1), (10, 3), (16, 4), (20, 1), (20, 20), (50, 7), (100, 10)]


def _checkpoint_cases(rng) -> list[dict]:
    """Each case: a chain's coefficients (so the kernel and the grader build the same
    chain), its length n and the checkpoint spacing."""
    if rng is None:
        chosen, coefficients = _CHECKPOINT_CASES, np.random.default_rng(8)
    else:
        chosen = [(1, 1), (int(rng.integers(8, 14)), 3), (16, 4), (int(rng.integers(15, 25)), 1)]
        n = int(rng.integers(15, 25))
        chosen += [(n, n), (int(rng.integers(40, 60)), int(rng.integers(5, 9))),
                   (int(rng.integers(80, 120)), 10)]
        coefficients = rng
    cases = []
    for n, every in chosen:
        a = coefficients.uniform(0.5, 1.5, size=(n, 3))
        c = coefficients.uniform(-1, 1, size=(n, 3))
        cases.append({"name": f"a chain of n={n} steps, every={every}", "n": n, "every": every,
                      "a": a, "c": c, "x0": coefficients.standard_normal(3)})
    return cases


def _probe_checkpoints(fns, case, where):
    probe = _Probe(case["n"], case["a"], case["c"], case["x0"])
    result = call_student(fns[0], where, probe.step, probe.vjp, probe.seed, probe.x0,
                          case["n"], case["every"], seconds=10.0)
    return {"result": result, "steps": probe.steps, "vjps": probe.vjps, "peak": probe.peak,
            "first_sweep_peak": probe.first_sweep_peak,
            "problem": list(probe.problem) if probe.problem else None}


@exercise("8.2", "the sqrt(N) schedule", takes=("checkpointed_gradient",), points=4,
          minutes=35, seconds=60, reference=("minirad.checkpoint.schedules:reverse_chain",
                                             "minirad.checkpoint.on_graph"),
          topic="sqrt(N) checkpointing", cases=_checkpoint_cases, probe=_probe_checkpoints,
          passed="lam_0, the order of the reverse steps, 2n - ceil(n/every) forward steps and "
                 "the states held agree with minirad on {n} (n, every) cases")
def check_checkpointed_gradient(case, answer, where) -> None:
    """Exercise 8.2: ``fn(step, vjp, seed, x0, n, every)`` reverses a chain with checkpoints.

    ``step(i, x_i) -> x_{i+1}``, ``vjp(i, x_i, lam_{i+1}) -> lam_i`` and
    ``seed(x_n) -> lam_n``; ``fn`` returns ``lam_0``, keeping a checkpoint every
    ``every`` steps and recomputing one segment at a time in the reverse sweep.
    The check compares ``lam_0`` with minirad's store-all reverse sweep,
    requires ``vjp`` to be called for ``i = n-1, ..., 0`` with ``x_i`` each
    time and ``step(i, x)`` with ``x_i``, exactly ``2n - ceil(n / every)``
    calls of ``step`` (:func:`~minirad.checkpoint.schedules.uniform_forward_steps`),
    and at most ``uniform_peak_stored(n, every) + 1`` states produced by
    ``step`` alive at once (one more for the working state).  Hints name
    storing every state, recomputing from ``x_0``, recomputing a segment's last
    state, the state of the wrong side of a step, and segments reversed in the
    wrong order.

    >>> from minirad.checkpoint.schedules import Chain, Uniform, reverse_chain
    >>> def fn(step, vjp, seed, x0, n, every):
    ...     chain = Chain(step=step, vjp=lambda i, x, lam: (vjp(i, x, lam), None),
    ...                   seed=lambda i, x: seed(x) if i == n else None)
    ...     return reverse_chain(chain, x0, n, Uniform(every)).state_bar
    >>> check_checkpointed_gradient(fn)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 8.2 (sqrt(N) checkpointing), on a chain of n=1 \
steps, every=1: used the reference -- your function called minirad's reverse_chain ...
    """
    n, every = case["n"], case["every"]
    expected = _Probe(n, case["a"], case["c"], case["x0"]).reference()
    if not (isinstance(answer, dict) and {"result", "steps", "vjps", "peak"} <= set(answer)):
        raise CheckFailed(f"{where}: the grader could not read your answer")
    result, steps_taken, vjps = answer["result"], answer["steps"], answer["vjps"]
    peak, first_sweep_peak = answer["peak"], answer["first_sweep_peak"]
    if answer["problem"] is not None:
        what, i, got = answer["problem"]
        call = {"step": f"step({i}, x)", "vjp": f"vjp({i}, x, lam)",
                "seed": "seed(x)"}.get(what, what)
        hint = ""
        if what == "vjp" and got == f"x_{i + 1}":
            hint = (f" -- step i maps x_i to x_(i+1); its vjp needs the state *before* "
                    f"the step, x_{i}")
        elif what == "seed":
            hint = " -- the seed is the loss's gradient at the last state x_n"
        raise CheckFailed(f"{where}: your code called {call} with {got}, but that call "
                          f"needs x_{i}{hint}")
    if list(vjps) != list(range(n - 1, -1, -1)):
        hint = ""
        if sorted(vjps) == list(range(n)):
            hint = (" -- every step was reversed once, but not from the last to the first: "
                    "reverse the segments from the last one back to the first, and within "
                    "a segment from its end to its start")
        shown = list(vjps[:12]) + (["..."] if len(vjps) > 12 else [])
        raise CheckFailed(f"{where}: your code called vjp for i = {shown}, but the reverse "
                          f"sweep calls it once for each i = {n - 1}, {n - 2}, ..., 0 in "
                          f"that order{hint}")
    mine = as_numbers(result, where, "; return lam_0, the array vjp(0, x_0, lam_1) gave")
    if mine.shape != expected.shape or not np.allclose(mine, expected, rtol=1e-12,
                                                      atol=1e-14):
        raise CheckFailed(f"{where}: your lam_0 is {np.round(mine, 6).tolist()}, expected "
                          f"{np.round(expected, 6).tolist()} -- return the cotangent the "
                          f"last vjp call (i = 0) produced")
    steps = uniform_forward_steps(n, every)
    if steps_taken != steps:
        hint = ""
        if steps_taken == n + n * (n - 1) // 2 and n > 2:
            hint = (" -- you recompute each x_i from x_0; start from the nearest checkpoint "
                    "and keep the segment's states while you reverse it")
        elif steps_taken == 2 * n:
            hint = (" -- a segment from checkpoint x_s to x_e needs x_s .. x_(e-1): e - s - 1 "
                    "steps from its checkpoint; the state x_e it leads to is not needed")
        elif steps_taken == n:
            hint = " -- without recomputation you must have kept every state"
        raise CheckFailed(f"{where}: your code called step {steps_taken} times, expected "
                          f"{steps} = 2n - ceil(n/every) (one forward sweep, then "
                          f"every - 1 steps per segment){hint}")
    limit = uniform_peak_stored(n, every) + 1
    if peak > limit:
        if (first_sweep_peak or 0) > limit:
            hint = (" -- already in the first sweep: keep only the checkpoints x_0, "
                    "x_every, x_2every, ... there, not every state")
        else:
            hint = (" -- in the reverse sweep: drop the states of a segment once it is "
                    "reversed (each is needed by one vjp call), and drop a checkpoint once "
                    "its segment is recomputed")
        raise CheckFailed(f"{where}: your code held {peak} states at once, but the "
                          f"schedule needs at most {limit} (the checkpoints before the "
                          f"segment being reversed, that segment's states, and the working "
                          f"state){hint}")


# ------------------------------------------- 8.3 the cost in closed form
_COST_CASES = ([(n, every) for n in (1, 2, 3, 5, 8, 9, 10, 12, 16) for every in range(1, n + 1)
                if every <= 6 or every == n]
               + [(100, 10), (100, 8), (100, 7), (1000, 31), (1000, 32), (1000, 1000),
                  (1000, 1), (40961, 202)])


def _cost_cases(rng) -> list[dict]:
    if rng is None:
        small = [c for c in _COST_CASES if c[0] <= 16]
        large = [c for c in _COST_CASES if c[0] > 16]
    else:
        small = sorted({(int(n), int(e)) for n in rng.integers(1, 20, 12)
                        for e in rng.integers(1, 8, 3) if e <= n} | {(1, 1)})
        large = [(int(n), int(e)) for n, e in zip(rng.integers(50, 50_000, 8),
                                                   rng.integers(2, 300, 8))]
        large += [(int(rng.integers(100, 2000)), 1)]
        large += [(n, n) for n in [int(rng.integers(100, 2000))]]
    return [{"name": "n up to 16", "questions": [list(q) for q in small]},
            {"name": "n from 50", "questions": [list(q) for q in large]}]


def _probe_cost(fns, case, where):
    return _ask_each(fns, case, where, lambda q: f"n={q[0]}, every={q[1]}", tuple)


def _step_slips(n, every):
    segments = -(-n // every)
    return [
        (2 * n - n // every,
         "n // every rounds down, but the last, shorter segment has a checkpoint too: there "
         "are ceil(n / every) segments"),
        (2 * n,
         "a segment of L steps recomputes L - 1 of them: its first state is the checkpoint "
         "itself"),
        (n + segments * (every - 1),
         "the last segment may be shorter than every: it recomputes only its own length "
         "minus 1"),
        (n - segments, "count the first forward sweep too (n steps)"),
    ]


def _peak_slips(n, every):
    segments, peak = -(-n // every), uniform_peak_stored(n, every)
    return [
        (segments - 1 + every,
         "when the last segment is shorter than every, the peak is reached while the segment "
         "before it is reversed"),
        (peak + 1, "checkpoint j is also the first state of segment j: count it once"),
        (segments + every, "checkpoint j is also the first state of segment j: count it once"),
    ]


@exercise("8.3", "the cost of the schedule", takes=("uniform_cost",), points=2, minutes=15,
          seconds=30, reference=("minirad.checkpoint.schedules:uniform_forward_steps",
                                 "minirad.checkpoint.schedules:uniform_peak_stored"),
          topic="cost of the sqrt(N) schedule", cases=_cost_cases, probe=_probe_cost,
          passed="forward steps and peak states agree with minirad on {n} groups of "
                 "(n, every) cases")
def check_uniform_cost(case, answer, where) -> None:
    """Exercise 8.3: ``fn(n, every) -> (forward_steps, peak_states)`` of the uniform schedule.

    ``forward_steps`` counts the calls of ``step`` (the first sweep and the
    recomputations); ``peak_states`` is the most states held at once, ``x_0``
    counted as the first checkpoint, the working state not counted (while
    segment ``j`` is reversed: checkpoints ``0 .. j`` and the segment's states,
    one of which is checkpoint ``j``).  Compared with
    :func:`~minirad.checkpoint.schedules.uniform_forward_steps` and
    :func:`~minirad.checkpoint.schedules.uniform_peak_stored`, with hints for
    ``n // every`` segments, recomputing a whole segment, ignoring a short last
    segment, and a checkpoint counted twice.
    """
    questions = [tuple(q) for q in case["questions"]]
    raw = _group_answers(answer, len(questions), where)
    answers = []
    for (n, every), result in zip(questions, raw):
        try:
            if isinstance(result, (str, bytes, dict)):
                raise TypeError
            steps, peak = (int(v) if float(v) == int(v) else float(v) for v in result)
        except (TypeError, ValueError, OverflowError):
            raise CheckFailed(f"{_at(where, f'n={n}, every={every}')}: your function returned "
                              f"{result!r:.60}; return two whole numbers (forward_steps, "
                              f"peak_states)") from None
        answers.append((steps, peak))
    for i, (n, every) in enumerate(questions):
        expected = (uniform_forward_steps(n, every), uniform_peak_stored(n, every))
        if answers[i] == expected:
            continue
        part = 0 if answers[i][0] != expected[0] else 1
        what = ("number of forward steps", "peak number of states held")[part]
        slip_lists = [_step_slips, _peak_slips][part]
        per_case = [slip_lists(*q) for q in questions]
        slips = [([q[j][0] for q in per_case], per_case[0][j][1])
                 for j in range(len(per_case[0]))]
        mine = [a[part] for a in answers]
        raise CheckFailed(f"{_at(where, f'n={n}, every={every}')}: your {what} "
                          f"is {answers[i][part]}, expected {expected[part]}"
                          + _named_slip(mine, slips, i, lambda a, b: a == b))


# ---------------------------------------------- 8.4 RAD at a memory budget
# (cells, n_steps, dt, budget in bytes); the last grid numbers its points past 2**16,
# so its sample indices take 4 bytes
_BUDGET_CASES = [
    (8, 10, 1 / 4096, 2_000),
    (8, 10, 1 / 4096, 1_999),
    (8, 10, 1 / 4096, 10_000),
    (16, 40, 1 / 4096, 40_000),
    (16, 64, 1 / 4096, 10_000),
    (32, 20, 1 / 4096, 77_000),
    (32, 7, 1 / 4096, 5_000),
    (256, 2, 1e-5, 100_000),
]


def _budget_cases(rng) -> list[dict]:
    if rng is None:
        first, second = _BUDGET_CASES[:4], _BUDGET_CASES[4:]
    else:
        first, second = [], []
        for group, cells in ((first, (8, 8, 8, 16)), (second, (16, 32, 32, 256))):
            for c in cells:
                n_steps = int(rng.integers(2, 40)) if c < 256 else 2
                dt = 1 / 4096 if c < 256 else 1e-5
                per_sample = n_steps * 10
                budget = int(per_sample * rng.integers(1, 3 * c)) + int(rng.integers(0, 3))
                group.append((c, n_steps, dt, budget))
    return [{"name": "the first four reactors", "questions": [list(q) for q in first]},
            {"name": "four more reactors", "questions": [list(q) for q in second]}]


def _reactor(q) -> Reactor:
    return Reactor(cells=q[0], n_steps=q[1], dt=q[2])


def _probe_budget(fns, case, where):
    return _ask_each(fns, case, where, lambda q: _budget_name(_reactor(q), q[3]),
                     lambda q: (_reactor(q), q[3]))


def _rad_peak(p: Reactor, k: int) -> int:
    """Bytes RAD with k samples per state holds at its peak, measured by the checkpointing
    ledger on the sampled chain (store-all schedule)."""
    return rad_gradient(p, initial_theta(rng=0), min(1.0, k / p.size), rng=0).peak_bytes


@exercise("8.4", "RAD at a memory budget", takes=("rad_samples_for_budget",), points=2,
          minutes=15, seconds=60, reference=("minirad.studies.pde:rad_gradient",),
          cases=_budget_cases, probe=_probe_budget,
          passed="the sample count fits each budget and one more does not, on {n} groups of "
                 "reactors")
def check_rad_budget(case, answer, where) -> None:
    """Exercise 8.4: ``fn(p, budget)`` is the most samples per state RAD can keep in ``budget``.

    ``p`` is a :class:`~minirad.studies.pde.Reactor`; RAD stores, for each of
    the ``N`` steps, ``k`` sampled values (8 bytes) and their ``k`` indices (of
    the type :func:`~minirad.studies.pde.index_dtype` gives).  The answer is the
    largest ``k`` (at most ``d``) whose peak memory, measured by running the
    estimator under minirad's ledger, fits the budget.  Reactors and budgets
    in two groups (one grid with 4-byte indices); hints for indices left out,
    ``N + 1`` states, rounding up or to nearest, and 2-byte indices assumed.

    >>> from minirad.studies.pde import index_dtype
    >>> check_rad_budget(lambda p, b: min(p.size, b // (p.n_steps * (8 + np.dtype(
    ...     index_dtype(p)).itemsize))))
    Exercise 8.4 passed: the sample count fits each budget and one more does not, on 2 groups \
of reactors
    """
    reactors = [(Reactor(cells=c, n_steps=n, dt=dt), budget)
                for c, n, dt, budget in case["questions"]]
    raw = _group_answers(answer, len(reactors), where)
    answers = []
    for (p, budget), result in zip(reactors, raw):
        if isinstance(result, (float, np.floating)) and float(result).is_integer():
            result = int(result)
        if isinstance(result, bool) or not isinstance(result, (int, np.integer)):
            raise CheckFailed(f"{_at(where, _budget_name(p, budget))}: your function returned "
                              f"{result!r:.60}; k is a whole number of samples (use // or "
                              f"math.floor)")
        answers.append(int(result))
    for i, (p, budget) in enumerate(reactors):
        expected = _budget_slips(p, budget)[0][0]
        assert _rad_peak(p, expected) <= budget < (  # the ledger agrees with the formula
            _rad_peak(p, expected + 1) if expected < p.size else math.inf)
        k = answers[i]
        if k == expected:
            continue
        message = f"{_at(where, _budget_name(p, budget))}: your k is {k}, expected {expected}"
        if 1 <= k <= p.size:
            held = _rad_peak(p, k)
            message += (f" (k = {k} holds {held:,} bytes, over the budget)" if held > budget
                        else f" (k = {k} holds {held:,} bytes; k + 1 still fits)")
        per_case = [_budget_slips(*r)[1:] for r in reactors]
        slips = [([r[j][0] for r in per_case], per_case[i][j][1])
                 for j in range(len(per_case[0]))]
        raise CheckFailed(message + _named_slip(answers, slips, i, lambda a, b: a == b))


def _budget_name(p: Reactor, budget: int) -> str:
    return f"Reactor(cells={p.cells}, n_steps={p.n_steps}), budget={budget:,} bytes"


def _budget_slips(p: Reactor, budget: int) -> list[tuple[int, str]]:
    """The right k first, then (k under a slip, hint) for the common slips."""
    n, d = p.n_steps, p.size
    index_bytes = np.dtype(index_dtype(p)).itemsize
    per_sample = n * (8 + index_bytes)
    return [
        (min(d, budget // per_sample), ""),
        (min(d, budget // (n * 8)),
         f"each sample also keeps its index, so that the reverse sweep knows where on the grid "
         f"it was drawn: {index_bytes} more bytes (np.dtype(index_dtype(p)).itemsize)"),
        (min(d, budget // ((n + 1) * (8 + index_bytes))),
         "the reverse sweep keeps samples of phi_0 .. phi_(N-1), N states: the last state is "
         "used as soon as it is computed"),
        (min(d, -(-budget // per_sample)),
         "round down: a k that needs more bytes than the budget does not fit"),
        (min(d, round(budget / per_sample)),
         "round down: a k that needs more bytes than the budget does not fit"),
        (min(d, budget // (n * 10)),
         "the indices take np.dtype(index_dtype(p)).itemsize bytes: 4 on a grid with more "
         "than 65,536 points, not always 2"),
        (budget // per_sample,
         f"at most d = {d} samples per state: k = d already keeps every value (and, with the "
         f"indices, more bytes than reverse mode)"),
    ]


# --------------------------------------------------------- 8.5: the eq. 8 estimator
_EQ8_CASES = [  # (cells, n_steps, dt, k, seed of theta and draws)
    (4, 6, 1 / 32, 3, 0),
    (5, 8, 1 / 64, 2, 1),
    (4, 5, 1 / 32, 9, 2),     # k = d: repeated draws are certain to occur
    (6, 4, 1 / 64, 1, 3),
]


def _eq8_case(cells: int, n_steps: int, dt: float, k: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    theta = initial_theta(rng) + rng.normal(scale=[2.0] + [1.0] * 6)  # a strong, varied source
    d = (cells - 1) ** 2
    indices = rng.integers(0, d, size=(n_steps + 1, k))
    return {"name": f"Reactor(cells={cells}, n_steps={n_steps}, dt=1/{round(1 / dt)}), k={k}",
            "cells": cells, "n_steps": n_steps, "dt": dt, "theta": theta.round(6).tolist(),
            "indices": indices.tolist()}


def _eq8_cases(rng) -> list[dict]:
    """Each case: a small reactor, theta, and the draws of every step (N + 1 rows of k flat
    interior indices); the published ones include k = d, where draws repeat."""
    if rng is None:
        return [_eq8_case(*c) for c in _EQ8_CASES]
    cases = []
    for i in range(4):
        cells = int(rng.integers(4, 8))
        d = (cells - 1) ** 2
        k = d if i == 2 else int(rng.integers(1, d))
        cases.append(_eq8_case(cells, int(rng.integers(3, 10)), 1 / (2 * cells ** 2), k,
                               int(rng.integers(2 ** 31))))
    return cases


def _eq8_inputs(case) -> tuple[Reactor, np.ndarray, np.ndarray]:
    p = Reactor(cells=case["cells"], n_steps=case["n_steps"], dt=case["dt"])
    return p, np.array(case["theta"]), np.array(case["indices"], dtype=np.int64)


def _probe_eq8(fns, case, where):
    return call_student(fns[0], where, *_eq8_inputs(case), seconds=30)


def eq8_reference(p: Reactor, theta, indices) -> np.ndarray:
    """minirad's eq. 8 estimate with the draws ``indices`` (N+1, k), weight d/k: the sampled
    chain of :func:`minirad.studies.pde.chain` reversed by the store-all schedule."""
    indices = np.asarray(indices)
    samples = (indices, p.size / indices.shape[1])
    return reverse_chain(chain(p, theta, samples), initial_state(p), p.n_steps,
                         StoreAll()).param_bar


def _eq8(weight=True, add=True, exact_seed=False, late=False):
    """The eq. 8 estimate as a student writes it, or with one of the planted slips."""
    def scatter(out, idx, values):
        if add:
            np.add.at(out, idx, values)
        else:
            out[idx] += values  # a repeated index keeps one of its values

    def eq8_gradient(p, theta, indices):
        d, k, n_steps = p.size, indices.shape[1], p.n_steps
        w, scale = (d / k if weight else 1.0), 2.0 / (n_steps * d)
        phi, kept, states = initial_state(p), [], []
        for n in range(n_steps + 1):
            kept.append(phi.ravel()[indices[n]])
            states.append(phi.ravel())
            if n < n_steps:
                phi = step(p, theta, n, phi)
        lam, grad = np.zeros(d), np.zeros(7)

        def source_term(n):
            u = np.zeros(d)
            scatter(u, indices[n], w * p.dt * kept[n] * lam[indices[n]])
            return source_profile(p, np.eye(7), n * p.dt) @ u.reshape(p.side, p.side).sum(1)

        for n in range(n_steps, -1, -1):
            if n < n_steps:
                grad += 0.0 if late else source_term(n)
                lam = step(p, theta, n, lam.reshape(p.side, p.side)).ravel()
                grad += source_term(n) if late else 0.0
            if n > 0:
                residual = states[n] - target(p, n * p.dt).ravel()
                if exact_seed:
                    lam += scale * residual
                else:
                    scatter(lam, indices[n], w * scale * residual[indices[n]])
        return grad
    return eq8_gradient


def _eq8_slips() -> list[tuple[str, Callable, str]]:
    return [
        ("the weight d/k left out", _eq8(weight=False),
         "each kept entry stands for d/k entries of phi_n: without the weight d/k the "
         "estimate is k/d times too small on average"),
        ("a repeated draw overwritten", _eq8(add=False),
         "an entry drawn twice counts twice: add each draw's term with np.add.at (an "
         "assignment or += through an index array keeps only one of the repeats)"),
        ("the loss's seed kept exact", _eq8(exact_seed=True),
         "eq. 8 samples dL/dphi_n too (its S_P[dL/dphi_t]): the seed 2 (phi_n - target_n) "
         "/ (N d) is kept only at the drawn entries, weighted d/k -- keeping it whole needs "
         "all of phi_n, the memory eq. 8 saves"),
        ("the adjoint one step late", _eq8(late=True),
         "the source C_n acts on the step phi_n -> phi_(n+1), so its term pairs the kept "
         "phi_n with lambda_(n+1), before the adjoint is taken back through A_n"),
    ]


@exercise("8.5", "the eq. 8 estimator", takes=("eq8_gradient",), points=3, minutes=30,
          seconds=60, reference=("minirad.studies.pde:rad_gradient", "minirad.studies.pde:chain",
                                 "minirad.studies.pde.engine", "minirad.studies.pde.graph",
                                 "minirad.checkpoint.schedules:reverse_chain"),
          topic="eq. 8", cases=_eq8_cases, probe=_probe_eq8,
          passed="your eq. 8 estimate equals minirad's, draw for draw, on {n} reactors")
def check_eq8_gradient(case, answer, where) -> None:
    """Exercise 8.5: ``fn(p, theta, indices)`` is the eq. 8 estimate of dL/dtheta.

    ``p`` is a small :class:`~minirad.studies.pde.Reactor`, ``theta`` its 7
    coefficients, ``indices`` an int array (N+1, k): the flat interior entries
    of ``phi_0 .. phi_N`` the estimator keeps.  The answer, 7 numbers, must
    equal :func:`eq8_reference` (minirad's sampled chain with those draws) to
    1e-9 of its largest entry; no randomness, so no statistics.  Hints for
    the weight d/k left out, repeated draws overwritten, the loss's seed kept
    exact, and the adjoint paired one step late.

    >>> check_eq8_gradient(_eq8())
    Exercise 8.5 passed: your eq. 8 estimate equals minirad's, draw for draw, on 4 reactors
    >>> check_eq8_gradient(_eq8(weight=False))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 8.5 (eq. 8), on Reactor(cells=4, ...), k=3: \
your entry [0] is ... -- each kept entry stands for d/k entries of phi_n: ...
    """
    p, theta, indices = _eq8_inputs(case)
    expected = eq8_reference(p, theta, indices)
    mine = as_numbers(answer, where, "; return dL/dtheta, 7 numbers")
    if mine.shape != (7,):
        raise CheckFailed(f"{where}: your function returned shape {mine.shape}; dL/dtheta "
                          f"has 7 entries, shape (7,)")
    scale = float(np.abs(expected).max())
    error = np.abs(mine - expected)
    error[np.isnan(error)] = np.inf
    if np.all(error <= 1e-9 * scale):
        return
    i = int(np.argmax(error))
    message = (f"{where}: your entry [{i}] is {mine[i]:.10g}, minirad's eq. 8 estimate with "
               f"the same draws is {expected[i]:.10g}")
    for _, slip, hint in _eq8_slips():
        wrong = slip(p, theta, indices)
        if np.abs(wrong - expected).max() > 1e-9 * scale and \
                np.abs(mine - wrong).max() <= 1e-9 * scale:
            raise CheckFailed(f"{message} -- {hint}")
    raise CheckFailed(message)


# ------------------------------------------------------- planted mistakes
def _checkpoints(every_state=False, from_start=False):
    def checkpointed_gradient(step, vjp, seed, x0, n, every):
        if every_state:
            states = [x0]
            for i in range(n):
                states.append(step(i, states[-1]))
            lam = seed(states[-1])
            for i in reversed(range(n)):
                lam = vjp(i, states[i], lam)
            return lam
        checkpoints, x = {0: x0}, x0
        for i in range(n):
            x = step(i, x)
            if (i + 1) % every == 0 and i + 1 < n:
                checkpoints[i + 1] = x
        lam = seed(x)
        for start in reversed(range(0, n, every)):
            x = x0 if from_start else checkpoints[start]
            states = [x]
            for i in range(0 if from_start else start, min(start + every, n) - 1):
                states.append(step(i, states[-1]))
            states = states[-(min(start + every, n) - start):]
            for offset in reversed(range(len(states))):
                lam = vjp(start + offset, states[offset], lam)
        return lam
    return checkpointed_gradient


def _cost(segments=lambda n, e: -(-n // e), first_sweep=True):
    def uniform_cost(n, every):
        count = segments(n, every)
        steps = (n if first_sweep else 0) + (n - count)
        lengths = [min(every, n - j * every) for j in range(count)]
        return steps, max((j + length for j, length in enumerate(lengths)), default=0)
    return uniform_cost


def _budget(value_bytes=8, index=True, states=lambda p: p.n_steps, rounding=math.floor):
    def rad_samples_for_budget(p, budget):
        per_sample = value_bytes + (np.dtype(index_dtype(p)).itemsize if index else 0)
        return min(p.size, int(rounding(budget / (states(p) * per_sample))))
    return rad_samples_for_budget


def _table1_slip(variant: dict):
    return lambda sizes, f, batch: table1_variant(sizes, f, batch, **variant)


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "8.1": [
        (slip, one(_table1_slip(variant)))
        for slip, variant in (("8-byte floats", dict(float_bytes=8)),
                              ("the biases left out", dict(biases=False)),
                              ("ReLU masks counted as bytes", dict(relu_bytes=1)),
                              ("floor(f d) where the rule says ceil",
                               dict(keep=lambda d, f: math.floor(round(f * d, 9)))))
    ],
    "8.2": [
        ("every state kept", one(_checkpoints(every_state=True))),
        ("segments recomputed from x_0", one(_checkpoints(from_start=True))),
    ],
    "8.3": [
        ("n // every segments", one(_cost(segments=lambda n, e: n // e))),
        ("the first sweep left out", one(_cost(first_sweep=False))),
    ],
    "8.4": [
        ("the indices left out", one(_budget(index=False))),
        ("N + 1 states", one(_budget(states=lambda p: p.n_steps + 1))),
        ("rounded up", one(_budget(rounding=math.ceil))),
    ],
    "8.5": [(slip, one(fn)) for slip, fn, _ in _eq8_slips()],
}
