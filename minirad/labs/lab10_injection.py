"""Lab 10's exercises: a sampling matrix (10.1) and a Rademacher matrix (10.2).

Each check runs the student's function on several ``(d, k)``, with a
targeted hint for the common slips (a sampling matrix without its ``d/k``
scale, counts kept from one call to the next, a Rademacher matrix without
its ``1/k`` or with signs from ``{0, 1}``).  A matrix in float32 is judged
to float32's own precision: nothing in these exercises asks for float64.

>>> import numpy as np
>>> def sampling_P(d, k, rng):           # k draws with replacement, each worth d/k
...     return np.diag(np.bincount(rng.integers(0, d, size=k), minlength=d) * (d / k))
>>> check_sampling_P(sampling_P)
Exercise 10.1 passed: sampling P well formed, reproducible, E[P] = I and uniform draws on 5 \
(d, k) cases
>>> check_sampling_P(lambda d, k, rng: sampling_P(d, k, rng) * k / d)
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 10.1 (sampling P), on d=3, k=1: your diagonal is \
[0.0, 0.0, 1.0]; each entry must be (times drawn) x d/k = (times drawn) x 3 -- your diagonal \
holds the draw counts themselves; scale them by d/k so that E[P] = I
"""

from __future__ import annotations

import math

import numpy as np

from .checking import CheckFailed, as_numbers, call_student, low_precision, one
from .exercise import exercise

__all__ = ["MISTAKES", "check_rademacher_P", "check_sampling_P"]


#: what the exercises of this module ask the student to write, in minirad
INJECTION_REFERENCE = ("minirad.randomized.injection", "minirad.randomized.moments")

#: the mean of the student's matrices may miss I by this many standard errors
Z_LIMIT = 5.0

# (d, k) cases; d = 1 first: the smallest case already shows a missing scale
_PROJECTION_CASES = [(1, 1), (3, 1), (3, 2), (5, 3), (4, 8)]
_SAMPLES = 2000


def _cases(rng) -> list[dict]:
    """Each case: d, k, two seeds to reproduce with, and the seed the statistics use."""
    if rng is None:
        chosen, seeds, seed = _PROJECTION_CASES, [123, 456], 2021
    else:
        chosen = [(1, 1), (int(rng.integers(2, 5)), 1), (3, 2),
                  (int(rng.integers(4, 7)), 3), (int(rng.integers(3, 6)), int(rng.integers(6, 10)))]
        seeds, seed = [int(s) for s in rng.integers(10 ** 6, size=2)], int(rng.integers(10 ** 6))
    return [{"name": f"d={d}, k={k}", "d": d, "k": k, "seeds": seeds, "seed": seed}
            for d, k in chosen]


def _probe(fns, case, where):
    """Ten calls on a generator seeded with each of two seeds, twice, then the samples.

    Ten calls, not one: with d = 3 and k = 1 a single sampling matrix has only
    three possible values, so one call could agree by chance; ten independent
    calls of a sampler that ignores ``rng`` agree with probability 3**-10.
    """
    fn, d, k = fns[0], case["d"], case["k"]
    repeat = {}
    for seed in case["seeds"]:
        runs = []
        for _ in range(2):
            rng = np.random.default_rng(seed)
            runs.append([call_student(fn, where, d, k, rng) for _ in range(10)])
        repeat[seed] = runs
    rng = np.random.default_rng(case["seed"])
    return {"repeat": repeat, "samples": [call_student(fn, where, d, k, rng)
                                          for _ in range(_SAMPLES)]}


def _tolerance(result) -> float:
    """How far a whole number of draws may be off: 1e-9, or a few units of the last digit
    of a matrix held in fewer bits (float32)."""
    low = low_precision(result)
    return 1e-9 if low is None else 16 * float(np.finfo(low).eps)


def _matrix(result, d: int, where: str) -> np.ndarray:
    P = as_numbers(result, where, ", which is not a matrix of numbers")
    if P.shape != (d, d):
        hint = (" -- return the d x d matrix R @ R.T, not R.T @ R" if P.ndim == 2
                and P.shape[0] == P.shape[1] else "")
        raise CheckFailed(f"{where}: your function returned shape {P.shape}; P is a d x d "
                          f"matrix, here ({d}, {d}){hint}")
    if not np.all(np.isfinite(P)):
        raise CheckFailed(f"{where}: your matrix has entries that are not finite")
    return P


def _read(answer, case, where) -> dict:
    if not (isinstance(answer, dict) and set(answer) == {"repeat", "samples"}):
        raise CheckFailed(f"{where}: the grader could not read your matrices")
    return answer


def _reproducible(answer, case, where, kept_state) -> None:
    """The two runs on each seed must agree; when they do not, ``kept_state(run)`` says
    whether one run looks like counts carried from each call to the next."""
    d = case["d"]
    for seed in case["seeds"]:
        first, again = ([_matrix(P, d, where) for P in run] for run in answer["repeat"][seed])
        if all(np.array_equal(a, b) for a, b in zip(first, again)):
            continue
        if kept_state(first) or kept_state(again):
            raise CheckFailed(f"{where}: two runs of ten calls on np.random.default_rng({seed}) "
                              f"returned different matrices, and within a run each matrix holds "
                              f"the one before it plus k new draws: your function keeps its "
                              f"counts from one call to the next; start every call from zeros "
                              f"(make the diagonal inside the function)")
        raise CheckFailed(f"{where}: two runs of ten calls on np.random.default_rng({seed}) "
                          f"returned different matrices; take every random number from the "
                          f"rng argument, never from np.random or the random module (and "
                          f"keep nothing from one call to the next)")


def _unbiased(samples: np.ndarray, where: str, hint: str) -> None:
    """Every entry of the mean of ``samples`` within Z_LIMIT standard errors of I."""
    n, d = samples.shape[0], samples.shape[1]
    mean = samples.mean(axis=0)
    stderr = samples.std(axis=0, ddof=1) / np.sqrt(n)
    miss = np.abs(mean - np.eye(d))
    bad = miss > Z_LIMIT * stderr + 1e-9
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise CheckFailed(f"{where}: over {n} of your matrices the mean of P[{i}, {j}] is "
                          f"{mean[i, j]:.4g}, but E[P] = I needs {float(i == j):g} "
                          f"({miss[i, j] / max(stderr[i, j], 1e-300):.1f} standard errors "
                          f"away){hint}")


def _accumulates(d: int, k: int):
    def kept_state(run) -> bool:
        steps = [np.diag(b) - np.diag(a) for a, b in zip(run, run[1:])]
        return bool(steps) and all(
            np.all(s >= -1e-9) and abs(s.sum() - d) <= 1e-6 * d
            and np.allclose(s / (d / k), np.rint(s / (d / k)), atol=1e-6) for s in steps)
    return kept_state


@exercise("10.1", "sampling matrix P", takes=("sampling_P",), points=3, minutes=25, seconds=60,
          reference=INJECTION_REFERENCE, topic="sampling P", cases=_cases, probe=_probe,
          passed="sampling P well formed, reproducible, E[P] = I and uniform draws on {n} "
                 "(d, k) cases")
def check_sampling_P(case, answer, where) -> None:
    """Exercise 10.1: ``fn(d, k, rng)`` returns one sampling matrix ``P = (d/k) sum_s e_i e_i^T``.

    ``k`` components are drawn uniformly with replacement from ``d``; ``P``
    is diagonal and ``P[i, i]`` is (times ``i`` was drawn) x ``d/k``.  The
    check, for each ``(d, k)``: shape ``(d, d)``; diagonal; every diagonal
    entry a whole multiple of ``d/k`` adding up to ``k`` draws (so the trace
    is ``d``); reproducibility (ten calls on a seeded ``rng``, twice); over
    2000 matrices the mean is within 5 standard errors of ``I`` (a correct
    answer fails with probability below one in a million per entry); and for
    ``k >= 2`` the same component is drawn twice about as often as draws with
    replacement make it happen.  Float32 matrices are judged to float32's
    precision.
    """
    d, k = case["d"], case["k"]
    answer = _read(answer, case, where)
    _reproducible(answer, case, where, _accumulates(d, k))
    samples = np.empty((len(answer["samples"]), d, d))
    repeats = 0
    for n, raw in enumerate(answer["samples"]):
        P = _matrix(raw, d, where)
        tol = _tolerance(raw)
        if np.any(np.abs(P - np.diag(np.diag(P))) > tol * d):
            raise CheckFailed(f"{where}: your P has a nonzero entry off the diagonal; a "
                              f"sampling matrix is diagonal (sum of e_i e_i^T)")
        counts = np.diag(P) / (d / k)
        if np.any(np.abs(counts - np.rint(counts)) > tol * max(1, k)) or np.any(counts < -tol):
            hint = ""
            if np.allclose(np.diag(P), np.rint(np.diag(P))) and abs(np.trace(P) - k) < 1e-6:
                hint = (" -- your diagonal holds the draw counts themselves; scale them by "
                        "d/k so that E[P] = I")
            raise CheckFailed(f"{where}: your diagonal is {np.diag(P).round(6).tolist()}; "
                              f"each entry must be (times drawn) x d/k = (times drawn) x "
                              f"{d / k:.6g}{hint}")
        counts = np.rint(counts).astype(int)
        if counts.sum() != k:
            hint = ""
            if counts.sum() == d and d != k:
                hint = (" -- that is d draws scaled by d/k; draw k components, not d")
            elif counts.sum() < k:
                hint = (" -- a component drawn twice must count twice (add, do not "
                        "overwrite)")
            raise CheckFailed(f"{where}: your diagonal is {np.diag(P).round(6).tolist()}, "
                              f"{counts.sum()} draw(s) of d/k = {d / k:.6g}; P holds "
                              f"exactly k = {k} draws, so its trace is d = {d}{hint}")
        repeats += int((counts * (counts - 1)).sum())
        samples[n] = P
    _unbiased(samples, where, " -- draw each component with probability 1/d")
    expected = len(samples) * k * (k - 1) / d
    if k >= 2 and d >= 2 and not 0.7 <= repeats / expected <= 1.3:
        raise CheckFailed(f"{where}: over {len(samples)} matrices a component was drawn twice "
                          f"{repeats} times (counting pairs of draws), but uniform draws "
                          f"with replacement repeat about {expected:.0f} times; draw the k "
                          f"components independently, with replacement")


@exercise("10.2", "Rademacher matrix P", takes=("rademacher_P",), points=3, minutes=25,
          seconds=60, reference=INJECTION_REFERENCE, topic="Rademacher P", cases=_cases,
          probe=_probe,
          passed="Rademacher P symmetric, unit diagonal, E[P] = I and Var = 1/k off the "
                 "diagonal on {n} (d, k) cases")
def check_rademacher_P(case, answer, where) -> None:
    """Exercise 10.2: ``fn(d, k, rng)`` returns one Rademacher matrix ``P = R R^T``.

    ``R`` is ``d x k`` with independent entries ``+1/sqrt(k)`` or
    ``-1/sqrt(k)``, each with probability 1/2, so ``E[P] = I``.  The check,
    for each ``(d, k)``: shape ``(d, d)``; symmetric; diagonal exactly 1
    (each row of ``R`` has ``k`` entries of square ``1/k``); off-diagonal
    entries whole multiples of ``1/k`` in ``[-1, 1]``; rank at most ``k``;
    reproducibility with a seeded ``rng``; the mean of 2000 matrices within 5
    standard errors of ``I``; and the variance of an off-diagonal entry within
    25% of ``1/k``.  Float32 matrices are judged to float32's precision.

    >>> import numpy as np
    >>> def rademacher_P(d, k, rng):
    ...     R = rng.choice([-1.0, 1.0], size=(d, k)) / np.sqrt(k)
    ...     return R @ R.T
    >>> check_rademacher_P(rademacher_P)
    Exercise 10.2 passed: Rademacher P symmetric, unit diagonal, E[P] = I and Var = 1/k off \
the diagonal on 5 (d, k) cases
    """
    d, k = case["d"], case["k"]
    answer = _read(answer, case, where)
    _reproducible(answer, case, where, lambda run: False)
    samples = np.empty((len(answer["samples"]), d, d))
    for n, raw in enumerate(answer["samples"]):
        P = _matrix(raw, d, where)
        tol = max(_tolerance(raw), 1e-12)
        if not np.allclose(P, P.T, rtol=0, atol=tol):
            raise CheckFailed(f"{where}: your P is not symmetric; P = R @ R.T is")
        diagonal = np.diag(P)
        if not np.allclose(diagonal, 1.0, rtol=0, atol=tol * max(1, k)):
            hint = ""
            scaled = P * k
            zero_one = (np.allclose(scaled, np.rint(scaled), atol=tol * k) and np.all(
                P >= -tol) and np.all(diagonal <= 1 + tol))
            if np.allclose(diagonal, k):
                hint = (" -- that is k: the entries of R are +-1/sqrt(k), not +-1, so that "
                        "P = R R^T carries the factor 1/k")
            elif np.allclose(diagonal, 1 / k):
                hint = " -- that is 1/k: divide R by sqrt(k), not by k"
            elif zero_one:
                hint = (" -- every entry of your P is a whole multiple of 1/k, none negative, "
                        "and the diagonal counts how many entries of a row of R are nonzero: "
                        "your signs come from {0, 1}; draw them from {-1, +1} (each with "
                        "probability 1/2), so that every square is 1/k")
            else:
                hint = (" -- draw the entries of R from {-1, +1} (then divide by sqrt(k)), "
                        "not from a normal distribution")
            raise CheckFailed(f"{where}: your diagonal is {diagonal.round(6).tolist()}; "
                              f"every diagonal entry of R R^T is a sum of k squares "
                              f"(+-1/sqrt(k))^2 = 1/k, so exactly 1{hint}")
        scaled = P * k
        off = np.abs(scaled - np.rint(scaled))
        if off.max() > tol * k or np.abs(P).max() > 1 + tol:
            worst = np.unravel_index(np.argmax(off + (np.abs(P) > 1 + tol)), P.shape)
            raise CheckFailed(f"{where}: your P has the entry {P[worst]:.6g}; every entry "
                              f"of R R^T is a sum of k products +-1/k, a whole multiple of "
                              f"1/k = {1 / k:.6g} between -1 and 1 (draw the entries of R "
                              f"from {{-1, +1}} / sqrt(k), not from a normal)")
        if d > k and np.linalg.matrix_rank(P) > k:
            raise CheckFailed(f"{where}: your P has rank {np.linalg.matrix_rank(P)}, but "
                              f"R R^T with R of shape (d, k) has rank at most k = {k}: that "
                              f"is what makes it cheap to store")
        samples[n] = P
    _unbiased(samples, where, " -- each entry of R is + or - with probability 1/2")
    if d >= 2:
        var = samples[:, 0, 1].var(ddof=1)
        if not 0.75 <= var * k <= 1.25:
            raise CheckFailed(f"{where}: over {len(samples)} matrices P[0, 1] has variance "
                              f"{var:.4g}, but independent +-1/sqrt(k) entries give 1/k = "
                              f"{1 / k:.4g}; draw every entry of R independently")


# ------------------------------------------------------- planted mistakes
def _sampling(draws=lambda d, k: k, scale=True, add=True, replace=True):
    def sampling_P(d, k, rng):
        n = draws(d, k)
        picks = rng.integers(d, size=n) if replace else rng.permutation(d)[:min(n, d)]
        diagonal = np.zeros(d)
        for i in picks:
            diagonal[i] = diagonal[i] + 1 if add else 1
        return np.diag(diagonal * (d / k if scale else 1.0))
    return sampling_P


def _rademacher(divide=math.sqrt, transpose=False, signs=(-1.0, 1.0)):
    def rademacher_P(d, k, rng):
        R = rng.choice(list(signs), size=(d, k)) / divide(k)
        return R.T @ R if transpose else R @ R.T
    return rademacher_P


def _kept_counts():
    """A sampling matrix whose counts live outside the function and are never reset."""
    counts = {}

    def sampling_P(d, k, rng):
        diagonal = counts.setdefault((d, k), np.zeros(d))
        for i in rng.integers(d, size=k):
            diagonal[i] += 1
        return np.diag(diagonal * (d / k))
    return sampling_P


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "10.1": [
        ("the draw counts without d/k", one(_sampling(scale=False))),
        ("d draws instead of k", one(_sampling(draws=lambda d, k: d))),
        ("a repeated draw overwritten", one(_sampling(add=False))),
        ("draws without replacement", one(_sampling(replace=False))),
        ("counts kept from one call to the next", lambda: (_kept_counts(),)),
    ],
    "10.2": [
        ("+-1 entries without the 1/sqrt(k)", one(_rademacher(divide=lambda k: 1.0))),
        ("R / k instead of R / sqrt(k)", one(_rademacher(divide=lambda k: k))),
        ("R^T R instead of R R^T", one(_rademacher(transpose=True))),
        ("signs drawn from {0, 1} instead of {-1, +1}", one(_rademacher(signs=(0.0, 1.0)))),
    ],
}
