"""Lab 9's exercises: randomized AD for neural networks.

The two estimators of a linear
layer's weight gradient ``x^T delta`` (``x`` the stored input, ``delta`` the
adjoint of the layer's output) are checked without looking inside them:

* a **probe** call with ``x`` all ones and ``delta`` the identity returns
  ``(x P)^T``, so every column shows one row's sampling matrix: the number of
  times each feature was drawn, times ``d/k``.  From it the check reads the
  scale, the number of draws ``k = ceil(f d)``, whether rows share a sample,
  and how often a feature is drawn twice (with or without replacement);
* the **mean** of 600 estimates on random ``(x, delta)`` must lie within 5
  standard errors of ``x^T delta`` in every entry, the standard error taken
  from the estimator's exact variance (a correct estimator fails an entry
  with probability about 6e-7, under the normal approximation of the mean
  of 600 draws; below 1e-4 for the whole check).

>>> import numpy as np
>>> from minirad.studies.nn.memory import kept_entries
>>> def different(x, delta, f, rng):   # each row draws its own k features
...     B, d = x.shape
...     k = kept_entries(d, f)
...     P = np.zeros((B, d))
...     for row in P:
...         np.add.at(row, rng.integers(0, d, size=k), d / k)
...     return (x * P).T @ delta
>>> check_different_sample(different)
Exercise 9.1 passed: different-sample estimate well formed, reproducible and unbiased on 6 \
layers
>>> def unscaled(x, delta, f, rng):    # a slip: the d/k left out
...     return different(x, delta, f, rng) * f
>>> check_different_sample(unscaled)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 9.1 (different-sample weight gradient), on B=4, \
d=5, out=3, f=0.4: with x all ones and delta = I your column 0 (row 0's x P) is [...]; each \
entry must be (times drawn) x d/k = (times drawn) x 2.5 -- multiply the kept entries by \
d/k = 2.5, so that E[x P] = x
"""

from __future__ import annotations

import math

import numpy as np

from ..studies.nn.memory import kept_entries
from .checking import CheckFailed, as_numbers, call_student, one
from .exercise import exercise

__all__ = [
    "MISTAKES", "check_different_sample", "check_same_sample", "check_z_scores",
    "estimate_variance", "reference_z_scores",
]


#: the mean of the student's estimates may miss the exact gradient by this many standard errors
Z_LIMIT = 5.0
_ESTIMATES = 600
_PROBES = 300  # a third of them where every row is a sample of its own

# (B, d, out, f): the second has 0.28 * 25 = 7.000000000000001, whose plain ceil is 8; the
# last has f d = 2.1, where floor (2) and ceil (3) differ and d/k = 7/3 is not 1/f
_LAYERS = [(4, 5, 3, 0.4), (6, 25, 2, 0.28), (3, 8, 4, 0.5), (5, 10, 3, 0.05), (4, 3, 2, 1.0),
           (4, 7, 3, 0.3)]
#: (d, f) whose product in floating point lies just above a whole number
_ROUNDING_TRAPS = [(25, 0.28), (50, 0.14), (100, 0.07), (10, 0.7), (20, 0.35), (100, 0.29)]


def _name(B, d, out, f) -> str:
    return f"B={B}, d={d}, out={out}, f={f}"


def _array(result, shape, where: str, what: str = "your function returned") -> np.ndarray:
    G = as_numbers(result, where, returned=what)
    if G.shape != shape:
        hint = ""
        if G.shape == shape[::-1]:
            hint = " -- that is the transpose: the weight gradient x^T delta has shape (d, out)"
        raise CheckFailed(f"{where}: {what} shape {G.shape}, expected {shape}{hint}")
    if not np.all(np.isfinite(G)):
        raise CheckFailed(f"{where}: {what} entries that are not finite")
    return G


def _layer(B, d, out, seed):
    """A stored input like a ReLU layer's (nonnegative, some zeros) and an adjoint."""
    gen = np.random.default_rng(seed)
    x = np.maximum(gen.standard_normal((B, d)), 0.0) + 0.1 * (gen.random((B, d)) < 0.5)
    return x, gen.standard_normal((B, out))


def _sampler_cases(shared: bool):
    def cases(rng) -> list[dict]:
        if rng is None:
            layers, seeds, seed = _LAYERS, [123, 456], 2021
            inputs = [(_layer(B, d, out, 99), _layer(B, d, out, seed=B * 1000 + d))
                      for B, d, out, _ in layers]
        else:
            d, f = _ROUNDING_TRAPS[int(rng.integers(len(_ROUNDING_TRAPS)))]
            layers = [(int(rng.integers(3, 6)), int(rng.integers(4, 9)), int(rng.integers(2, 5)),
                       round(float(rng.uniform(0.2, 0.6)), 2)),
                      (int(rng.integers(3, 7)), d, int(rng.integers(2, 4)), f),
                      (int(rng.integers(3, 6)), int(rng.integers(6, 12)), 3,
                       round(float(rng.uniform(0.03, 0.12)), 3)),
                      (int(rng.integers(3, 6)), int(rng.integers(2, 5)), 2, 1.0),
                      (int(rng.integers(3, 6)), 7, 3, 0.3)]
            seeds, seed = [int(s) for s in rng.integers(10 ** 6, size=2)], int(
                rng.integers(10 ** 6))
            inputs = [(_layer(B, d, out, int(rng.integers(10 ** 6))),
                       _layer(B, d, out, int(rng.integers(10 ** 6)))) for B, d, out, _ in layers]
        return [{"name": _name(*layer), "layer": list(layer), "seeds": seeds, "seed": seed,
                 "repeat_inputs": list(first), "inputs": list(second),
                 "probes": _PROBES if shared else _PROBES // 3}
                for layer, (first, second) in zip(layers, inputs)]
    return cases


def _probe_sampler(fns, case, where):
    fn = fns[0]
    B, d, out, f = case["layer"]
    x, delta = case["repeat_inputs"]
    repeat = {}
    for seed in case["seeds"]:
        runs = []
        for _ in range(2):
            rng = np.random.default_rng(seed)
            runs.append([call_student(fn, where, x.copy(), delta.copy(), f, rng)
                         for _ in range(5)])
        repeat[seed] = runs
    rng = np.random.default_rng(case["seed"])
    probes = [call_student(fn, where, np.ones((B, d)), np.eye(B), f, rng)
              for _ in range(case["probes"])]
    x, delta = case["inputs"]
    estimates = [call_student(fn, where, x.copy(), delta.copy(), f, rng)
                 for _ in range(_ESTIMATES)]
    return {"repeat": repeat, "probes": probes, "estimates": estimates}


def _probe_counts(result, B, d, f, k, where, shared: bool) -> np.ndarray:
    """One probe call's answer: the (B, d) draw counts, checked for scale and number."""
    G = _array(result, (d, B), where,
               "with x all ones and delta = I (out = B) your function returned")
    scale = d / k
    if k < d and d > 1 and np.allclose(G, G[:1]) and not np.allclose(G, G[0, 0]):
        raise CheckFailed(f"{where}: with x all ones and delta = I every row of your estimate "
                          f"is the same, {G[0].round(6).tolist()}: you sampled the adjoint "
                          f"delta (the outputs); RAD samples the stored input x, the layer's "
                          f"input features, and keeps delta exact")
    as_k = G.T / scale
    right = np.allclose(as_k, np.rint(as_k)) and np.allclose(as_k.sum(axis=1), k)
    floor = math.floor(round(f * d, 9))
    # k taken as floor(f d), consistently (scale d/floor); not when the answer also reads as
    # k draws of d/k (3 draws of one feature, 3 x 7/3 = 7, is also 2 draws of 7/2)
    if 0 < floor != k and not right:
        counts = G.T * floor / d
        if np.allclose(counts, np.rint(counts)) and np.allclose(counts.sum(axis=1), floor):
            raise CheckFailed(f"{where}: with x all ones and delta = I a row of your x P holds "
                              f"{floor} draws of d/{floor}: that is floor(f d) = {floor}; RAD "
                              f"keeps k = ceil(f d) = {k}, rounding up (a fraction of a feature "
                              f"cannot be kept, so keep one more)")
    naive = math.ceil(f * d)
    if naive != k and not right:   # k computed as ceil(f * d) in floating point
        counts = G.T * naive / d
        if np.allclose(counts, np.rint(counts)) and np.allclose(counts.sum(axis=1), naive):
            raise CheckFailed(f"{where}: with x all ones and delta = I a row of your x P holds "
                              f"{naive} draws of d/{naive}; here k = ceil(f d) = {k}, but in "
                              f"floating point {f} * {d} = {f * d!r}, whose ceil is {naive}: "
                              f"use kept_entries(d, f), which rounds before the ceil")
    counts = G.T / scale
    if np.any(np.abs(counts - np.rint(counts)) > 1e-9) or np.any(counts < -1e-9):
        column = G[:, 0].round(6).tolist()
        hint = ""
        if np.allclose(G, np.rint(G)) and np.allclose(G.sum(axis=0), k):
            hint = f" -- multiply the kept entries by d/k = {scale:.6g}, so that E[x P] = x"
        elif np.allclose(G * scale, np.rint(G * scale)) and np.allclose(G.sum(axis=0), k / scale):
            hint = f" -- multiply the kept entries by d/k = {scale:.6g}, so that E[x P] = x"
        elif (not math.isclose(1 / f, scale) and np.allclose(G * f, np.rint(G * f))
              and np.allclose((G * f).sum(axis=0), k)):
            hint = (f" -- you scaled each draw by 1/f = {1 / f:.6g}; the scale is d/k = "
                    f"{d}/{k} = {scale:.6g}, because k = ceil(f d) = {k} draws are made, not "
                    f"f d = {f * d:.6g}")
        raise CheckFailed(f"{where}: with x all ones and delta = I your column 0 (row 0's x P) is "
                          f"{column}; each entry must be (times drawn) x d/k = (times drawn) x "
                          f"{scale:.6g}{hint}")
    counts = np.rint(counts).astype(int)
    drawn = counts.sum(axis=1)
    by_f = G.T * f  # the counts, had the student scaled by 1/f instead of d/k
    if (np.any(drawn != k) and not math.isclose(1 / f, scale)
            and np.allclose(by_f, np.rint(by_f)) and np.allclose(by_f.sum(axis=1), k)):
        raise CheckFailed(f"{where}: with x all ones and delta = I your x P scales each draw by "
                          f"1/f = {1 / f:.6g}; the scale is d/k = {d}/{k} = {scale:.6g}, "
                          f"because k = ceil(f d) = {k} draws are made, not f d = {f * d:.6g}")
    if np.any(drawn != k):
        wrong = int(drawn[drawn != k][0])
        hint = ""
        if 0 < floor != k and np.all(drawn == floor):
            hint = (f" -- that is floor(f d) = {floor}; RAD keeps ceil(f d) = {k}, rounding up "
                    f"(a fraction of a feature cannot be kept, so keep one more)")
        elif naive != k and wrong == naive:
            hint = (f" -- in floating point {f} * {d} = {f * d!r}, whose ceil is {naive}; use "
                    f"kept_entries(d, f), which rounds before the ceil")
        elif wrong == d and d != k:
            hint = " -- that is d draws; draw k = ceil(f d) features, not d"
        elif wrong < k:
            hint = (" -- a feature drawn twice must count twice (add the repeats, do not "
                    "overwrite them)")
        raise CheckFailed(f"{where}: with x all ones and delta = I a row of your x P holds "
                          f"{wrong} draw(s) of d/k = {scale:.6g}; each row keeps exactly "
                          f"k = ceil(f d) = {k} draws (so it adds up to d = {d}){hint}")
    return counts


def estimate_variance(x, delta, k, shared: bool) -> np.ndarray:
    """The exact variance of each entry of ``(x P)^T delta`` (different sample, or
    same sample when ``shared``), on which the checks' standard errors rest.

    A draw count (binomial: ``k`` draws, probability ``1/d``) times ``d/k`` has
    variance ``(d/k)^2 k (1/d)(1 - 1/d) = (d - 1)/k``.

    >>> x, delta = np.ones((2, 4)), np.ones((2, 1))
    >>> estimate_variance(x, delta, 1, shared=False).ravel()   # 2 rows x (4-1)/1
    array([6., 6., 6., 6.])
    >>> estimate_variance(x, delta, 1, shared=True).ravel()    # (4-1) x 2^2
    array([12., 12., 12., 12.])
    """
    d = x.shape[1]
    per_count = (d - 1) / k
    if shared:   # one count per feature, shared by the rows: Var = (d-1)/k (x^T delta)^2
        return per_count * (x.T @ delta) ** 2
    return per_count * (x * x).T @ (delta * delta)   # independent rows add their variances


def _judge_sampler(case, answer, where, shared: bool) -> None:
    B, d, out, f = case["layer"]
    k = kept_entries(d, f)
    if not (isinstance(answer, dict) and {"repeat", "probes", "estimates"} <= set(answer)):
        raise CheckFailed(f"{where}: the grader could not read your estimates")
    for seed in case["seeds"]:
        first, again = ([_array(G, (d, out), where) for G in run] for run in answer["repeat"][seed])
        if not all(np.array_equal(a, b) for a, b in zip(first, again)):
            raise CheckFailed(f"{where}: two runs of five calls on np.random.default_rng({seed}) "
                              f"returned different estimates; take every random number from the "
                              f"rng argument, never from np.random or the random module")
    repeats, same_rows, pairs = 0, 0, 0
    for G in answer["probes"]:
        counts = _probe_counts(G, B, d, f, k, where, shared)
        drawn = counts[:1] if shared else counts   # a shared sample is one draw of k
        repeats += int((drawn * (drawn - 1)).sum())
        same_rows += int(np.all(counts == counts[:1]))
        pairs += 1
    if shared and same_rows < pairs:
        raise CheckFailed(f"{where}: with x all ones and delta = I the rows of your x P drew "
                          f"different features; same sample draws ONE set of k = {k} "
                          f"features for the whole minibatch and uses it for every row")
    if not shared and B >= 2 and k < d and same_rows == pairs:
        raise CheckFailed(f"{where}: with x all ones and delta = I every row of your x P "
                          f"drew the same features in all {pairs} calls: that is one sample "
                          f"shared by the minibatch (same sample); different sample draws "
                          f"k = {k} features independently for every row")
    rows = pairs * (1 if shared else B)
    expected = rows * k * (k - 1) / d
    # judged only where the count is large enough: a correct sampler lands in the band
    # with probability above 1 - 1e-4 (its count of repeats is nearly Poisson)
    if expected >= 100 and not 0.5 <= repeats / expected <= 1.5:
        raise CheckFailed(f"{where}: over {rows} sampled rows a feature was drawn twice "
                          f"{repeats} times (counting pairs of draws), but k = {k} uniform "
                          f"draws with replacement from d = {d} repeat about "
                          f"{expected:.0f} times; draw with replacement, each draw "
                          f"independent (rng.integers(d, size=k))")
    x, delta = case["inputs"]
    exact = x.T @ delta
    estimates = [_array(G, (d, out), where) for G in answer["estimates"]]
    n = len(estimates)
    mean = np.sum(estimates, axis=0) / n
    stderr = np.sqrt(estimate_variance(x, delta, k, shared) / n)
    miss = np.abs(mean - exact)
    bad = miss > Z_LIMIT * stderr + 1e-9 * (1 + np.abs(exact))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise CheckFailed(f"{where}: over {n} estimates the mean of entry [{i}, {j}] "
                          f"is {mean[i, j]:.6g}, but x^T delta there is {exact[i, j]:.6g} "
                          f"({miss[i, j] / max(stderr[i, j], 1e-300):.1f} standard errors "
                          f"away); sample the input x (each feature with probability 1/d), "
                          f"keep delta exact, and return (x P)^T delta")


@exercise("9.1", "different-sample weight gradient", takes=("different_sample_grad",),
          points=3, minutes=25, seconds=60, reference=("minirad.studies.nn.activations",),
          cases=_sampler_cases(shared=False), probe=_probe_sampler,
          passed="different-sample estimate well formed, reproducible and unbiased on {n} "
                 "layers")
def check_different_sample(case, answer, where) -> None:
    """Exercise 9.1: ``fn(x, delta, f, rng)`` estimates ``x.T @ delta`` by different sample.

    ``x`` is the stored input (B, d), ``delta`` the adjoint of the output
    (B, out).  Every row ``b`` of ``x`` draws ``k = ceil(f d)`` features
    uniformly with replacement, independently of the other rows; ``x P``
    keeps row ``b``'s drawn entries, each multiplied by (times drawn) x
    ``d/k``, and zeros elsewhere; the result is ``(x P)^T delta``, shape
    (d, out).  On each layer: reproducibility on a seeded ``rng``; 100 probe
    calls (``x`` ones, ``delta = I``) that must show whole draws scaled by
    ``d/k``, exactly ``k`` per row, rows drawn independently, and repeated
    features about as often as with replacement; and the mean of 600 estimates
    within 5 standard errors of ``x.T @ delta``.  Hints name a missing ``d/k``,
    ``ceil`` of ``f * d`` taken in floating point, sampling without
    replacement, one sample shared by the batch, sampling ``delta`` instead of
    ``x``, and a global random generator.
    """
    _judge_sampler(case, answer, where, shared=False)


@exercise("9.3", "same-sample weight gradient", takes=("same_sample_grad",), points=2,
          minutes=15, seconds=60, reference=("minirad.studies.nn.activations",),
          cases=_sampler_cases(shared=True), probe=_probe_sampler,
          passed="same-sample estimate well formed, reproducible and unbiased on {n} layers")
def check_same_sample(case, answer, where) -> None:
    """Exercise 9.3: ``fn(x, delta, f, rng)`` estimates ``x.T @ delta`` by same sample.

    As :func:`check_different_sample`, except that ONE set of ``k = ceil(f d)``
    features (drawn with replacement) serves every row of the minibatch: the
    300 probe calls must show identical rows (300, not 100, because a shared
    sample gives one row's worth of repeats per call, not ``B``).

    >>> from minirad.studies.nn.activations import keep_input, restore_input
    >>> from minirad.studies.nn.memory import kept_entries
    >>> def same(x, delta, f, rng):       # one draw of k features for the whole batch
    ...     d = x.shape[1]
    ...     k = kept_entries(d, f)
    ...     P = np.zeros(d)
    ...     np.add.at(P, rng.integers(0, d, size=k), d / k)
    ...     return (x * P).T @ delta
    >>> check_same_sample(same)
    Exercise 9.3 passed: same-sample estimate well formed, reproducible and unbiased on 6 layers
    """
    _judge_sampler(case, answer, where, shared=True)


# --------------------------------------------------------------- z-scores
def reference_z_scores(estimates, exact) -> np.ndarray:
    """``(mean - exact) / (s / sqrt(n))`` per entry, ``s`` the sample standard
    deviation (``ddof=1``); where ``s = 0``: 0 if the mean is ``np.isclose`` to
    ``exact``, else ``inf`` with the sign of the difference."""
    estimates = np.asarray(estimates, dtype=float)
    exact = np.asarray(exact, dtype=float)
    n = len(estimates)
    diff = estimates.mean(axis=0) - exact
    stderr = estimates.std(axis=0, ddof=1) / np.sqrt(n)
    z = np.zeros(diff.shape)
    np.divide(diff, stderr, out=z, where=stderr > 0)
    flat = (stderr == 0) & ~np.isclose(estimates.mean(axis=0), exact)
    z[flat] = np.copysign(np.inf, diff[flat])
    return z


def _z_data(gen, scale: float = 1.0) -> list[tuple[str, np.ndarray, np.ndarray]]:
    cases = []
    samples = gen.standard_normal((50, 3, 4)) + 0.3 * scale
    cases.append(("50 estimates of a 3x4 gradient, exact all zeros", samples, np.zeros((3, 4))))
    samples = gen.exponential(2.0, size=(400, 6))
    cases.append(("400 estimates of 6 numbers, exact 2", samples, np.full(6, 2.0)))
    samples = gen.standard_normal((3, 2, 2)).astype(np.float32)
    cases.append(("3 estimates in float32 (2x2)", samples,
                  np.array([[0.5, -1.0], [0.0, 2.0]]) * scale))
    samples = gen.standard_normal((20, 2, 3))
    samples[:, 0, 1] = 1.5   # a weight whose estimate never varies, and is exact
    samples[:, 1, 2] = 0.0   # a dead unit: always 0, and so is the exact gradient
    samples[:, 1, 0] = 4.0   # never varies, but wrong: an infinitely sure bias
    exact = np.zeros((2, 3))
    exact[0, 1], exact[1, 0] = 1.5, 3.0
    cases.append(("20 estimates with three entries that never vary", samples, exact))
    return cases


def _z_cases(rng) -> list[dict]:
    gen = np.random.default_rng(9) if rng is None else rng
    scale = 1.0 if rng is None else float(rng.uniform(0.5, 2.0))
    return [{"name": name, "estimates": estimates, "exact": exact}
            for name, estimates, exact in _z_data(gen, scale)]


def _probe_z(fns, case, where):
    with np.errstate(all="ignore"):   # a student's 0/0 is reported by the check, not warned
        return call_student(fns[0], where, case["estimates"].copy(), case["exact"].copy())


def _z_hint(mine: np.ndarray, estimates: np.ndarray, exact: np.ndarray) -> str:
    n = len(estimates)
    mean = estimates.mean(axis=0)
    diff = mean - exact
    moving = estimates.std(axis=0) > 0
    if not moving.any():
        return ""
    close = lambda a: (a.shape == mine.shape  # noqa: E731
                       and np.allclose(mine[moving], a[moving], rtol=1e-6))
    s1, s0 = estimates.std(axis=0, ddof=1), estimates.std(axis=0, ddof=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slips = [
            (diff / s1, "divide by the standard error s / sqrt(n), not by the standard "
                        "deviation s of one estimate"),
            (diff / (s1 * s1 / n), "the standard error is s / sqrt(n), a standard deviation: "
                                   "take the square root of the variance"),
            (diff / (s1 * s1 / np.sqrt(n)), "the standard error is s / sqrt(n), with s the "
                                            "standard deviation, not the variance"),
            (diff / (s0 / np.sqrt(n)), "use the sample standard deviation with ddof=1 "
                                       "(dividing by n - 1): the mean is estimated too"),
            (-diff / (s1 / np.sqrt(n)), "the sign is reversed: z = (mean - exact) / standard "
                                        "error, positive when the estimates run high"),
            (np.abs(diff) / (s1 / np.sqrt(n)), "keep the sign of mean - exact: a histogram of "
                                               "z-scores must be centred, not folded at 0"),
        ]
    for wrong, hint in slips:
        if close(wrong):
            return " -- " + hint
    return ""


@exercise("9.2", "z-scores", takes=("z_scores",), points=1, minutes=10, seconds=30,
          reference=("minirad.labs.lab09_rad_nn:reference_z_scores",
                     "minirad.draw.plots:z_scores"),
          cases=_z_cases, probe=_probe_z, passed="z-scores agree with minirad on {n} cases")
def check_z_scores(case, answer, where) -> None:
    """Exercise 9.2: ``fn(estimates, exact)`` returns the z-score of every entry.

    ``estimates`` has shape (n, ...) (n independent estimates of an array of
    ``exact``'s shape); the result has ``exact``'s shape and holds
    ``(mean - exact) / (s / sqrt(n))`` with ``s`` the sample standard
    deviation (``ddof=1``).  Where ``s = 0`` (every estimate the same) the
    z-score is 0 if that value is ``np.isclose`` to ``exact`` and ``inf``
    (with the sign of mean - exact) otherwise.  Compared with minirad's on four
    cases; hints name a missing ``sqrt(n)``, a variance in place of a
    standard deviation, ``ddof=0``, a reversed sign, an absolute value, and
    ``nan`` where an entry never varies.

    >>> check_z_scores(reference_z_scores)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 9.2 (z-scores), on 50 estimates of a 3x4 \
gradient, exact all zeros: used the reference -- your function called minirad's ...
    """
    estimates, exact = case["estimates"], case["exact"]
    mine = as_numbers(answer, where)
    expected = reference_z_scores(estimates, exact)
    if mine.shape != expected.shape:
        raise CheckFailed(f"{where}: your function returned shape {mine.shape}; the z-scores "
                          f"have the shape of exact, {expected.shape} (average over axis 0)")
    finite = np.isfinite(expected)
    if np.isnan(mine).any():
        i = tuple(int(v) for v in np.argwhere(np.isnan(mine))[0])
        raise CheckFailed(f"{where}: your z-score at {list(i)} is nan; there every estimate "
                          f"is {estimates[(slice(None),) + i][0]:.6g}, so s = 0: return 0 "
                          f"when that equals exact, and +-inf when it does not")
    ok = np.allclose(mine[finite], expected[finite], rtol=1e-6, atol=1e-9) and np.array_equal(
        mine[~finite], expected[~finite])
    if not ok:
        bad = ~np.isclose(mine, expected, rtol=1e-6, atol=1e-9) & ~(
            np.isinf(mine) & (mine == expected))
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise CheckFailed(f"{where}: your z-score at {list(i)} is {mine[i]:.6g}, expected "
                          f"{expected[i]:.6g}" + _z_hint(mine, estimates, exact))


# ------------------------------------------------------- planted mistakes
def _estimator(shared=False, scale=lambda d, k, f: d / k, keep=kept_entries):
    def estimate(x, delta, f, rng):
        B, d = x.shape
        k = keep(d, f)
        P = np.zeros((B, d))
        rows = [P[0]] if shared else P
        for row in rows:
            np.add.at(row, rng.integers(0, d, size=k), scale(d, k, f))
        if shared:
            P[:] = P[0]
        return (x * P).T @ delta
    return estimate


def _z(stderr=lambda s, n: s / np.sqrt(n), ddof=1, sign=1.0):
    def z_scores(estimates, exact):
        estimates = np.asarray(estimates, dtype=float)
        miss = sign * (estimates.mean(axis=0) - exact)
        s = stderr(estimates.std(axis=0, ddof=ddof), len(estimates))
        z = np.zeros(miss.shape)
        np.divide(miss, s, out=z, where=s > 0)
        flat = (s == 0) & ~np.isclose(estimates.mean(axis=0), exact)
        z[flat] = np.copysign(np.inf, miss[flat])
        return z
    return z_scores


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "9.1": [
        ("the d/k left out", one(_estimator(scale=lambda d, k, f: 1.0))),
        ("scaled by 1/f instead of d/k", one(_estimator(scale=lambda d, k, f: 1 / f))),
        ("floor(f d) draws", one(_estimator(keep=lambda d, f: max(1, math.floor(f * d))))),
        ("one sample shared by the batch", one(_estimator(shared=True))),
    ],
    "9.2": [
        ("s instead of s / sqrt(n)", one(_z(stderr=lambda s, n: s))),
        ("ddof=0", one(_z(ddof=0))),
        ("the sign reversed", one(_z(sign=-1.0))),
    ],
    "9.3": [
        ("rows drawn independently", one(_estimator(shared=False))),
        ("the d/k left out", one(_estimator(shared=True, scale=lambda d, k, f: 1.0))),
        ("floor(f d) draws",
         one(_estimator(shared=True, keep=lambda d, f: max(1, math.floor(f * d))))),
    ],
}
