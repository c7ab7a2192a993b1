"""Experiments with the randomized estimators: applications of the algorithms, not algorithms.

* :func:`compare`: ``n`` sampled estimates set against the exact Jacobian
  (bias z-scores, running error, empirical against exact variance), on any graph;
* :func:`compare_levels`: path sampling on an array graph (both levels) beside
  Algorithm 1 on its scalarized graph, by their exact variances;
* :func:`variance_by_depth`: Section 3.3 of the RAD paper computed exactly,
  relative variance against depth for the Figure 2 families (:data:`FAMILIES`)
  or any family of graphs, by path sampling or by random matrix injection.

The algorithms themselves live in :mod:`minirad.randomized.sampling` (Algorithm 1, the
batched sampler, the exact variance) and :mod:`minirad.randomized.injection`; the
pictures of these experiments in :mod:`minirad.draw.plots`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..exact.jacobians import jacobian
from ..examples import independent_paths, interleaved
from ..graph.labels import FLOATS
from ..graph.lcg import LCG, levels, takes_graph_or_function
from ..graph.scalarize import from_chain, scalarize
from ..rng import seed_from
from .injection import injection_variance
from .sampling import (
    check_sizes,
    draws_per_vertex,
    entries_per_vertex,
    path_sampling_variance,
    sampled_jacobians,
)

__all__ = ["ESTIMATORS", "FAMILIES", "Comparison", "DepthStudy", "LevelComparison", "compare",
           "compare_levels", "variance_by_depth"]

#: the estimators variance_by_depth compares (its method=)
ESTIMATORS = ("paths", "injection")


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
    On an array graph the entries are those of the Jacobian over the arrays'
    entries (:func:`minirad.jacobian`).
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
    def n(self) -> int:
        return len(self.estimates)

    @property
    def varies(self) -> np.ndarray:
        """Which entries the estimator can change: all but those whose exact variance
        is 0 (where the estimates differ by rounding only, their spread and ``z`` say
        nothing); every entry when the exact variance is unknown.

        >>> from minirad import examples
        >>> compare(examples.figure1(), 1, 10, rng=0).varies.tolist()  # dy/dx1: equal paths
        [[False, True]]
        """
        if self.exact_variance is None:
            return np.ones(self.exact.shape, dtype=bool)
        return self.exact_variance != 0

    def __repr__(self) -> str:
        worst = np.nanmax(np.abs(self.z)) if np.isfinite(self.z).any() else float("nan")
        return (f"Comparison(n={self.n}, relative error of the mean "
                f"{self.running_error[-1]:.3g}, max |z| {worst:.2f})")


@takes_graph_or_function
def compare(g: LCG, k=1, n: int = 1000, *, entries=None, progress=None,
            rng=None) -> Comparison:
    """Draw ``n`` Algorithm 1 estimates and set them against the exact Jacobian.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    k : int, float or mapping, optional
        Draws per vertex, as for :func:`~minirad.randomized.sampling.sample_paths`.
    n : int, optional
        How many estimates (default 1000).
    entries : int, float or mapping, optional
        The second level on graphs with arrays, as for
        :func:`~minirad.randomized.sampling.sampled_jacobians`.
    progress : callable, optional
        Called as ``progress(done, n)`` after each chunk of samples.
    rng : numpy.random.Generator or int, optional
        The generator, or a seed (same seed, same draws).

    Returns
    -------
    Comparison
        The ``exact`` Jacobian, the estimates' ``mean``, ``variance`` and
        ``stderr`` per entry, the ``exact_variance``, the z-scores ``z`` of the
        mean and the ``running_error`` of the running mean.

    Raises
    ------
    ValueError
        For a bad ``k`` or ``n``, or more estimates or draws than memory holds
        (checked before any work).

    See Also
    --------
    minirad.sampled_jacobians : The estimates alone.
    minirad.path_sampling_variance : The exact variance they are set against.
    minirad.plots.plot_compare : The same comparison as heatmaps.

    Notes
    -----
    The mean of unbiased estimates tends to the exact Jacobian at the rate
    ``sqrt(variance / n)``; the z-scores ``(mean - exact) / stderr`` are then
    about standard normal (the RAD paper's Sec. 3).

    Examples
    --------
    >>> from minirad import examples
    >>> result = compare(examples.figure1(), k=1, n=4000, rng=0)
    >>> result.running_error.shape
    (4000,)
    >>> bool(np.all(np.abs(result.z) < 4.5))
    True
    >>> bool(np.allclose(result.variance, result.exact_variance, rtol=0.2))
    True
    >>> compare(lambda x1, x2: x1 * x2, 3.0, 4.0, k=1, n=10, rng=0).exact.tolist()
    [[4.0, 3.0]]
    """
    check_compare(g, k, n)
    draws = draws_per_vertex(g, k)
    estimates = sampled_jacobians(g, k, n, entries=entries, progress=progress, rng=rng)
    exact = np.array(jacobian(g), dtype=np.float64)
    mean = estimates.mean(axis=0)
    if len(estimates) > 1:
        with np.errstate(over="ignore"):  # a spread beyond the float range is inf
            variance = estimates.var(axis=0, ddof=1)
    else:
        variance = np.full_like(mean, np.nan)
    stderr = np.sqrt(variance / len(estimates))
    error = mean - exact
    # entries whose estimate never varies differ from the exact value by
    # rounding only; a floor keeps z from dividing rounding by rounding
    floor = 1e-12 * np.maximum(np.abs(exact), 1.0)
    z = error / np.hypot(np.where(np.isnan(stderr), 0.0, stderr), floor)  # hypot: no overflow
    z[np.isnan(stderr)] = np.nan
    running = np.cumsum(estimates, axis=0) / np.arange(1, len(estimates) + 1)[:, None, None]
    gap = _frobenius(running - exact)
    scale = float(_frobenius(exact[None])[0])
    running_error = gap / scale if scale > 0 else gap
    try:
        exact_variance = path_sampling_variance(g, k, entries=entries)
    except ValueError:
        exact_variance = None
    for array in (exact, estimates, mean, variance, stderr, z, running_error, draws):
        array.flags.writeable = False
    return Comparison(exact, estimates, mean, variance, stderr, z, running_error,
                      exact_variance, draws)


def _frobenius(stack: np.ndarray) -> np.ndarray:
    """The Frobenius norm of each matrix of a stack (m, rows, columns), scaled by its
    largest entry first, so that entries near the largest double do not overflow."""
    top = np.abs(stack).max(axis=(1, 2), initial=0.0)
    unit = np.where((top > 0) & np.isfinite(top), top, 1.0)[:, None, None]
    norms = unit[:, 0, 0] * np.sqrt(((stack / unit) ** 2).sum(axis=(1, 2)))
    return np.where(np.isfinite(top), norms, np.inf)


# ------------------------------------------------ two levels against one
@dataclass(frozen=True, eq=False)
class LevelComparison:
    """Path sampling on an array graph against Algorithm 1 on its scalarized graph
    (see :func:`compare_levels`): the exact Jacobian and each estimator's exact
    variance, per entry (output entries x input entries)."""

    jacobian: np.ndarray
    array_variance: np.ndarray
    scalar_variance: np.ndarray

    @property
    def relative(self) -> tuple[float, float]:
        """Each estimator's summed variance over the squared Frobenius norm of the
        Jacobian: (array graph, scalarized graph)."""
        scale = float((self.jacobian ** 2).sum()) or 1.0
        return float(self.array_variance.sum()) / scale, float(self.scalar_variance.sum()) / scale


@takes_graph_or_function
def compare_levels(g: LCG, k=1, entries=None, scalar_k=None) -> LevelComparison:
    """The exact variances of two ways of sampling paths through an array program:

    * on ``g`` itself, the two levels of :func:`~minirad.randomized.sampling.sample_paths`
      (``k`` draws among the array out-edges of each vertex, ``entries`` inside it);
    * on :func:`~minirad.graph.scalarize.scalarize` ``(g)``, Algorithm 1 with
      ``scalar_k`` (default ``k``) draws among each entry's own out-edges.

    Both are unbiased; which is less noisy depends on the program.  Only small
    graphs: the variances keep dense covariances over the entries.

    >>> from minirad import trace
    >>> A = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    >>> g = trace(lambda x: (np.tanh(A @ x) ** 2).sum(), np.array([0.3, -0.2]))
    >>> levels = compare_levels(g, k=1, entries=1)
    >>> levels.array_variance.shape, levels.scalar_variance.shape
    ((1, 2), (1, 2))
    >>> [round(r, 3) for r in levels.relative]     # array graph, scalarized graph
    [22.385, 1.51]
    """
    return LevelComparison(np.array(jacobian(g), dtype=np.float64),
                           path_sampling_variance(g, k, entries=entries),
                           path_sampling_variance(scalarize(g), k if scalar_k is None
                                                  else scalar_k))


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
    """Exact variance of a family of graphs against depth (see :func:`variance_by_depth`).

    Per depth, ``jacobian`` is the Frobenius norm of the exact Jacobian (``|J|``
    for one input and one output), ``variance`` the summed variance of its
    entries' estimates and ``relative_variance`` their ratio ``variance /
    jacobian**2``."""

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


def _layers_as_arrays(g: LCG) -> LCG:
    """A layered graph of numbers as the array graph of its chain: one vertex per
    topological level (the inputs first, the outputs last), one dense block per pair
    of consecutive levels (rows and columns in vertex order)."""
    level = levels(g)
    depth = int(level.max()) if g.n_vertices else 0
    if sorted(g.inputs) != np.flatnonzero(level == 0).tolist() or \
            sorted(g.outputs) != np.flatnonzero(level == depth).tolist():
        raise ValueError("injection by layers needs a layered graph: the inputs must be "
                         "exactly the first level and the outputs the last")
    skips = np.flatnonzero(level[g.targets] != level[g.sources] + 1)
    if len(skips):
        u, v = int(g.sources[skips[0]]), int(g.targets[skips[0]])
        raise ValueError(f"edge {g.names[u]} -> {g.names[v]} skips from level {level[u]} to "
                         f"level {level[v]}; injection by layers needs edges between "
                         f"consecutive levels only")
    rank = np.empty(g.n_vertices, dtype=np.int64)
    for l in range(depth + 1):
        members = np.flatnonzero(level == l)
        if l == 0:
            members = np.asarray(g.inputs, dtype=np.int64)   # Jacobian column order
        elif l == depth:
            members = np.asarray(g.outputs, dtype=np.int64)  # Jacobian row order
        rank[members] = np.arange(len(members))
    sizes = np.bincount(level, minlength=depth + 1)
    chain = [np.zeros((sizes[l + 1], sizes[l])) for l in range(depth)]
    for l in range(depth):
        stage = level[g.sources] == l
        chain[l][rank[g.targets[stage]], rank[g.sources[stage]]] = g.partials[stage]
    return from_chain(chain)


def _injection_by_layers(g: LCG, fraction: float) -> np.ndarray:
    """The exact variance of injecting a sampling P keeping ``fraction`` of every
    intermediate vertex: of every layer, on a layered graph of numbers."""
    arrays = _layers_as_arrays(g) if g.algebra is FLOATS else g
    return injection_variance(arrays, arrays.intermediates, fraction)


def variance_by_depth(family, width: int, depths: Sequence[int], fraction: float = 0.5,
                      partials="balanced", method: str = "paths", *, rng=0) -> DepthStudy:
    """Section 3.3 of the paper, computed exactly: relative variance against depth.

    For each depth, builds ``family(width, depth, partials=partials, rng=rng)``
    (a name in :data:`FAMILIES`, ``"independent"`` or ``"interleaved"``, or any
    function with that signature that returns an LCG, of numbers or of arrays)
    and returns the exact variance of the estimate divided by the squared
    Jacobian (see :class:`DepthStudy`).  For the named families ``partials``
    is as in :func:`minirad.examples.independent_paths`; the default, balanced
    partials, keeps the Jacobian equal to the number of paths.

    ``method="paths"`` is Algorithm 1 with ``k = fraction`` (each vertex draws
    ``ceil(fraction * d_v)`` out-edges; on an array graph each intermediate
    vertex also draws ``ceil(fraction * n_v)`` of its entries);
    ``method="injection"`` injects a sampling matrix keeping ``fraction`` of the
    entries of every intermediate vertex (:mod:`minirad.randomized.injection`):
    of every layer, on a layered graph of numbers.  Every depth uses the same
    seed, so ``theta``'s out-partials agree across depths.

    Path sampling on independent paths only samples at ``theta`` (every
    other vertex has one successor), so its relative variance stays flat;
    on interleaved layers each layer adds noise and it grows geometrically.

    >>> flat = variance_by_depth("independent", 4, [1, 2, 4, 8])
    >>> round(flat.growth, 6)
    1.0
    >>> variance_by_depth("interleaved", 4, [1, 2, 4, 8]).growth > 1.1
    True
    """
    if isinstance(family, str):
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {sorted(FAMILIES)} or a function "
                             f"(width, depth, partials=, rng=) -> LCG, not {family!r}")
        build, name = FAMILIES[family], family
    elif callable(family):
        build, name = family, getattr(family, "__name__", "family")
    else:
        raise TypeError(f"family must be a name in {sorted(FAMILIES)} or a function "
                        f"(width, depth, partials=, rng=) -> LCG, not {type(family).__name__}")
    if method not in ESTIMATORS:
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
        g = build(width, depth, partials=partials, rng=rng)
        if not isinstance(g, LCG):
            raise TypeError(f"family(width, {depth}, ...) returned a {type(g).__name__}, not "
                            f"an LCG")
        jac.append(float(np.sqrt((np.asarray(jacobian(g), dtype=np.float64) ** 2).sum())))
        if method == "paths":
            inside = fraction if entries_per_vertex(g, fraction).any() else None
            var.append(float(path_sampling_variance(g, fraction, entries=inside).sum()))
        else:
            var.append(float(_injection_by_layers(g, fraction).sum()))
    jac, var = np.array(jac), np.array(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(jac != 0, var / jac**2, np.inf)
    return DepthStudy(name, method, int(width), float(fraction), depths, jac, var, rel)
