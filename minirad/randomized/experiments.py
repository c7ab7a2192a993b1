"""Experiments with the randomized estimators: applications of the algorithms, not algorithms.

* :func:`compare`: ``n`` sampled estimates set against the exact Jacobian
  (bias z-scores, running error, empirical against exact variance);
* :func:`variance_by_depth`: Section 3.3 of the RAD paper computed exactly,
  relative variance against depth for the Figure 2 families (:data:`FAMILIES`),
  by path sampling or by random matrix injection.

The algorithms themselves live in :mod:`minirad.randomized.sampling` (Algorithm 1, the
batched sampler, the exact variance) and :mod:`minirad.randomized.chains`; the
pictures of these experiments in :mod:`minirad.draw.plots`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._arguments import takes_graph_or_function
from ..exact.sweeps import reverse_sweep
from ..examples import independent_paths, interleaved
from ..graph.lcg import LCG
from ..rng import seed_from
from .chains import injection_variance
from .layered import chain_from_graph
from .sampling import check_sizes, draws_per_vertex, path_sampling_variance, sampled_jacobians

__all__ = ["FAMILIES", "Comparison", "DepthStudy", "check_compare", "compare",
           "variance_by_depth"]


@dataclass(frozen=True, eq=False, repr=False)
class Comparison:
    """Exact Jacobian against ``n`` sampled estimates.

    ``mean``, ``variance`` (unbiased, ddof=1) and ``stderr`` are per
    entry; ``z`` is ``(mean - exact) / stderr``, with ``stderr`` floored at
    ``1e-12 * max(|exact|, 1)`` so that entries the sampling cannot change
    (exact up to rounding) get ``z`` near 0; ``running_error[m-1]`` is
    ``||mean of the first m estimates - exact|| / ||exact||`` (Frobenius;
    the plain norm of the error when the exact Jacobian is zero).
    ``exact_variance`` is :func:`~minirad.randomized.sampling.path_sampling_variance`
    when the graph is small enough, else ``None``; ``draws`` is the draws
    per vertex that ``k`` resolved to (:func:`~minirad.randomized.sampling.draws_per_vertex`).
    """

    exact: np.ndarray
    estimates: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    stderr: np.ndarray
    z: np.ndarray
    running_error: np.ndarray
    exact_variance: np.ndarray | None
    draws: np.ndarray

    @property
    def k(self) -> np.ndarray:
        """Deprecated name of :attr:`draws`."""
        warnings.warn("Comparison.k is now called Comparison.draws", DeprecationWarning,
                      stacklevel=2)
        return self.draws

    @property
    def n(self) -> int:
        return len(self.estimates)

    def __repr__(self) -> str:
        worst = np.nanmax(np.abs(self.z)) if np.isfinite(self.z).any() else float("nan")
        return (f"Comparison(n={self.n}, relative error of the mean "
                f"{self.running_error[-1]:.3g}, max |z| {worst:.2f})")


@takes_graph_or_function
def compare(g: LCG, k=1, n: int = 1000, rng=None, *, progress=None) -> Comparison:
    """Draw ``n`` estimates and set them against the exact Jacobian.

    ``progress`` is passed to :func:`~minirad.randomized.sampling.sampled_jacobians`.

    >>> from minirad import examples
    >>> result = compare(examples.figure1(), k=1, n=4000, rng=0)
    >>> result.running_error.shape
    (4000,)
    >>> bool(np.all(np.abs(result.z) < 4.5))
    True
    >>> bool(np.allclose(result.variance, result.exact_variance, rtol=0.2))
    True

    A function and a point work too (the options then by keyword):

    >>> compare(lambda x1, x2: x1 * x2, 3.0, 4.0, k=1, n=10, rng=0).exact.tolist()
    [[4.0, 3.0]]
    """
    check_compare(g, k, n)
    draws = draws_per_vertex(g, k)
    estimates = sampled_jacobians(g, k, n, rng, progress=progress)
    exact = reverse_sweep(g).jacobian
    mean = estimates.mean(axis=0)
    if len(estimates) > 1:
        variance = estimates.var(axis=0, ddof=1)
    else:
        variance = np.full_like(mean, np.nan)
    stderr = np.sqrt(variance / len(estimates))
    error = mean - exact
    # entries whose estimate never varies differ from the exact value by
    # rounding only; a floor keeps z from dividing rounding by rounding
    floor = 1e-12 * np.maximum(np.abs(exact), 1.0)
    z = error / np.sqrt(np.nan_to_num(stderr, nan=0.0) ** 2 + floor**2)
    z[np.isnan(stderr)] = np.nan
    running = np.cumsum(estimates, axis=0) / np.arange(1, len(estimates) + 1)[:, None, None]
    gap = np.sqrt(((running - exact) ** 2).sum(axis=(1, 2)))
    scale = np.linalg.norm(exact)
    running_error = gap / scale if scale > 0 else gap
    try:
        exact_variance = path_sampling_variance(g, k)
    except ValueError:
        exact_variance = None
    for array in (exact, estimates, mean, variance, stderr, z, running_error, draws):
        array.flags.writeable = False
    return Comparison(exact, estimates, mean, variance, stderr, z, running_error,
                      exact_variance, draws)


def check_compare(g: LCG, k=1, n: int = 1000) -> None:
    """Refuse, without drawing anything, what :func:`compare` would refuse about
    ``k`` and ``n``: a bad value, or more estimates or draws than memory holds.

    >>> from minirad import examples
    >>> check_compare(examples.figure1(), k=1, n=10 ** 12)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 1,000,000,000,000 estimates of a 1 x 2 Jacobian would need 58.2 TiB of ...
    """
    # compare holds the estimates, their running means and numpy's temporaries of
    # them: about four copies at the peak (3.3 to 3.5 measured with tracemalloc)
    check_sizes(g, k, n, copies=4)


# ----------------------------------------------------- Section 3.3: depth
FAMILIES = {"independent": independent_paths, "interleaved": interleaved}


@dataclass(frozen=True, eq=False)
class DepthStudy:
    """Exact variance of a Figure 2 family against depth (see :func:`variance_by_depth`)."""

    family: str
    method: str
    width: int
    fraction: float
    depths: np.ndarray
    jacobian: np.ndarray
    variance: np.ndarray
    relative_variance: np.ndarray

    @property
    def growth(self) -> float:
        """exp(slope) of a least-squares line through log relative variance
        against depth: the factor by which each extra layer multiplies it."""
        rel = self.relative_variance
        if len(rel) < 2 or np.any(rel <= 0):
            return float("nan")
        return float(np.exp(np.polyfit(self.depths, np.log(rel), 1)[0]))


def variance_by_depth(family: str, width: int, depths: Sequence[int], fraction: float = 0.5,
                      partials="balanced", rng=0, method: str = "paths") -> DepthStudy:
    """Section 3.3 of the paper, computed exactly: relative variance against depth.

    For each depth, builds the Figure 2 graph ``family`` (``"independent"``
    or ``"interleaved"``) with ``partials`` (see
    :func:`minirad.examples.independent_paths`; the default, balanced
    partials, keeps the Jacobian equal to the number of paths) and returns
    the exact variance of the estimate divided by the squared Jacobian.
    ``method="paths"`` is Algorithm 1 with ``k = fraction`` (each vertex
    draws ``ceil(fraction * d_v)`` out-edges); ``method="injection"``
    injects a sampling matrix keeping ``ceil(fraction * width)`` of the
    vertices of every layer (:mod:`minirad.randomized.chains`).  Every depth uses
    the same seed, so ``theta``'s out-partials agree across depths.

    Path sampling on independent paths only samples at ``theta`` (every
    other vertex has one successor), so its relative variance stays flat;
    on interleaved layers each layer adds noise and it grows geometrically.

    >>> flat = variance_by_depth("independent", 4, [1, 2, 4, 8])
    >>> round(flat.growth, 6)
    1.0
    >>> variance_by_depth("interleaved", 4, [1, 2, 4, 8]).growth > 1.1
    True
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, not {family!r}")
    if method not in ("paths", "injection"):
        raise ValueError(f"method must be 'paths' or 'injection', not {method!r}")
    if isinstance(fraction, (bool, np.bool_)) or not isinstance(
            fraction, (float, np.floating)) or not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be a float in (0, 1], got {fraction!r}")
    depths = np.asarray(depths)
    if depths.ndim != 1 or len(depths) == 0 or not np.issubdtype(depths.dtype, np.integer):
        raise ValueError(f"depths must be a nonempty list of ints, got {depths.tolist()!r}")
    rng = seed_from(rng)  # one seed for every depth
    jac, var = [], []
    for depth in depths.tolist():
        g = FAMILIES[family](width, depth, partials=partials, rng=rng)
        jac.append(reverse_sweep(g).jacobian[0, 0])
        if method == "paths":
            var.append(path_sampling_variance(g, fraction)[0, 0])
        else:
            chain = chain_from_graph(g)
            var.append(injection_variance(chain, fraction, where=range(1, depth + 1))[0, 0])
    jac, var = np.array(jac), np.array(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(jac != 0, var / jac**2, np.inf)
    return DepthStudy(family, method, int(width), float(fraction), depths, jac, var, rel)

