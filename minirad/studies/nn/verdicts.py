"""What a report may claim from noisy numbers: orders with ties, chance level, and which of
two noise measurements is larger.

A study's numbers come from a few seeds or a few draws.  A report built on them claims
a difference only when it is larger than the spread that produced it:

* :func:`ranking` orders estimators by their mean over seeds, and writes two neighbours
  as a tie when their means differ by less than the seed-to-seed spread of that
  difference, ``sqrt(sd_a^2 + sd_b^2)``; with one seed there is no spread, and no order;
* :func:`at_chance` names the classifiers whose accuracy is within three binomial
  standard deviations of guessing;
* :func:`noise_verdict` says which of two mean squared errors is larger only when they
  differ by more than a t-test at 5% allows.

>>> ranking({"baseline": [0.01, 0.02], "rad": [0.15, 0.16], "small": [0.16, 0.18]})
'baseline < rad ≈ small'
>>> ranking({"baseline": [0.01], "rad": [0.15]})
'not ranked (one seed: no seed-to-seed spread to tell a difference from)'
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import t as student_t

__all__ = ["at_chance", "noise_verdict", "ranking"]


def ranking(values: dict, higher_is_better: bool = False) -> str:
    """The names of ``values`` (name -> one number per seed) best first: ``<`` (or ``>``)
    between neighbours told apart, ``≈`` between neighbours whose means differ by less
    than ``sqrt(sd_a^2 + sd_b^2)`` (the spread of that difference from seed to seed)."""
    arrays = {name: np.asarray(v, dtype=float) for name, v in values.items()}
    if min(len(a) for a in arrays.values()) < 2:
        return "not ranked (one seed: no seed-to-seed spread to tell a difference from)"
    sign = -1.0 if higher_is_better else 1.0
    order = sorted(arrays, key=lambda name: sign * arrays[name].mean())
    text = order[0]
    for a, b in zip(order, order[1:]):
        gap = abs(arrays[a].mean() - arrays[b].mean())
        spread = math.hypot(arrays[a].std(ddof=1), arrays[b].std(ddof=1))
        text += (" ≈ " if gap <= spread else " > " if higher_is_better else " < ") + b
    return text


def at_chance(accuracies: dict, n_test: int, classes: int = 10) -> list[str]:
    """Names whose every accuracy (fractions, one per seed) lies within three binomial
    standard deviations of ``1 / classes`` on ``n_test`` examples.

    >>> at_chance({"a": [0.10], "b": [0.91]}, n_test=1000)
    ['a']
    """
    guess = 1.0 / classes
    band = 3 * math.sqrt(guess * (1 - guess) / n_test)
    return [name for name, accs in accuracies.items()
            if np.all(np.abs(np.asarray(accs, dtype=float) - guess) <= band)]


def noise_verdict(a: tuple, b: tuple, draws: int) -> str:
    """'higher', 'lower' (a against b) or 'not told apart', for two (mean, standard error)
    pairs each from ``draws`` draws: a verdict only where the means differ by more than
    Student's 97.5% quantile (``draws - 1`` degrees of freedom) times the standard error
    of the difference, so that two equal noises are called different at most ~5% of the
    time, however few the draws.

    >>> noise_verdict((2.0, 0.1), (1.0, 0.1), draws=30), noise_verdict((2.0, 0.1), (1.0, 0.1), 2)
    ('higher', 'not told apart')
    """
    if draws < 2:
        return "not told apart"
    spread = student_t.ppf(0.975, draws - 1) * math.hypot(a[1], b[1])
    if not abs(a[0] - b[0]) > spread:
        return "not told apart"
    return "higher" if a[0] > b[0] else "lower"
