"""Path sampling: randomized reverse mode by sparsifying the LCG.

Algorithm 1 of Oktay et al., "Randomized Automatic Differentiation" (ICLR
2021, Appendix C) walks the graph in topological order.  A vertex is
*visited* when one of its incoming edges has been sampled (inputs are
always visited); a visited vertex ``v`` with out-degree ``d_v`` draws
``k_v`` of its out-edges uniformly with replacement, and every draw of the
edge ``v -> w`` adds ``(d_v / k_v) * dw/dv`` to the sampled graph ``Q``.
Vertices that are never visited store nothing: that is the memory saving.
Reverse accumulation on ``Q`` then gives an unbiased estimate of the
Jacobian.

Several outputs
---------------
The paper states the algorithm for a single output.  One sampled graph
``Q`` serves every output at once: the unbiasedness proof is an induction
over the vertices in reverse topological order that holds output by
output, so reverse accumulation on ``Q`` from each output gives an unbiased
estimate of that output's row (the rows share their randomness, so they
are correlated with each other).

>>> from minirad import examples
>>> g = examples.figure1()
>>> sample = sample_paths(g, k=1, rng=0)
>>> sample.edges_stored, sample.full_edges
(5, 8)
>>> sample.jacobian.shape
(1, 2)
>>> from minirad.sweeps import reverse_sweep
>>> exact = reverse_sweep(g).jacobian
>>> mean = sampled_jacobians(g, 2, 20000, rng=1).mean(axis=0)
>>> standard_error = np.sqrt(path_sampling_variance(g, 2) / 20000)
>>> bool(np.all(np.abs(mean - exact) <= 5 * standard_error + 1e-9))
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._random import as_generator as _rng
from ._random import seed_from
from .examples import independent_paths, interleaved
from .graph import LCG, reachable, takes_lcg
from .sweeps import Accumulation, reverse_sweep

__all__ = [
    "EXACT_VARIANCE_LIMIT", "Comparison", "DepthStudy", "PathSample", "compare",
    "draws_per_vertex", "path_sampling_variance", "sample_paths",
    "sampled_jacobians", "variance_by_depth",
]

#: path_sampling_variance keeps a dense covariance over this many vertices at most
EXACT_VARIANCE_LIMIT = 3000

# floats held at once by the batched sampler's state (about 64 MB)
_CHUNK_FLOATS = 1 << 23


# ------------------------------------------------------------ arguments
@takes_lcg
def draws_per_vertex(g: LCG, k) -> np.ndarray:
    """How many out-edges each vertex draws, as an int array over ``g``'s vertices.

    ``k`` may be

    * an int ``>= 1``: every vertex with successors draws ``k`` times;
    * a float fraction in ``(0, 1]``: vertex ``v`` draws
      ``ceil(k * d_v)`` times, ``d_v`` its out-degree (so ``k=1`` is one
      draw but ``k=1.0`` is ``d_v`` draws);
    * a mapping from vertices (names or numbers) to an int ``>= 1`` or
      ``None``.  Vertices mapped to ``None`` or left out do not sample:
      they keep all their out-edges with their exact partials.  This
      follows the paper's practice of sampling only where memory is
      tight; pass an int or a fraction to sample everywhere, as
      Algorithm 1 does.

    In the result, 0 means "keeps every out-edge" (for vertices without
    successors there is nothing to keep).

    >>> from minirad import examples
    >>> g = examples.interleaved(4, 2)
    >>> draws_per_vertex(g, 0.5).tolist()
    [2, 2, 2, 2, 2, 1, 1, 1, 1, 0]
    >>> draws_per_vertex(g, {"theta": 3}).tolist()
    [3, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    >>> draws_per_vertex(g, 0)
    Traceback (most recent call last):
    ...
    ValueError: k must be at least 1 (draws per vertex), got 0
    """
    degree = g.out_degrees
    has_succ = degree > 0
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("k must be an int, a float fraction in (0, 1] or a mapping from "
                        "vertices to ints, not a bool")
    if isinstance(k, (int, np.integer)):
        if k < 1:
            raise ValueError(f"k must be at least 1 (draws per vertex), got {k}")
        return np.where(has_succ, int(k), 0).astype(np.int64)
    if isinstance(k, (float, np.floating)):
        if not 0.0 < k <= 1.0:  # also rejects NaN
            raise ValueError(f"a float k is the fraction of each vertex's out-edges to draw and "
                             f"must lie in (0, 1], got {k}; for a number of draws pass an int")
        return np.ceil(k * degree).astype(np.int64)
    if isinstance(k, Mapping):
        draws = np.zeros(g.n_vertices, dtype=np.int64)
        for vertex, count in k.items():
            v = g.index(vertex)
            if count is None:
                continue
            if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
                raise TypeError(f"k[{vertex!r}] is {count!r}; per-vertex draws are ints >= 1 "
                                f"(or None to keep every out-edge)")
            if count < 1:
                raise ValueError(f"k[{vertex!r}] must be at least 1, got {count}")
            if not has_succ[v]:
                raise ValueError(f"k names vertex {g.names[v]}, which has no out-edges to "
                                 f"sample; only vertices with successors draw")
            draws[v] = int(count)
        return draws
    raise TypeError(f"k must be an int, a float fraction in (0, 1] or a mapping from vertices "
                    f"to ints, not {type(k).__name__}")


def _check_n(n) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n (the number of estimates) must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n (the number of estimates) must be at least 1, got {n}")
    return int(n)


def _on_paths(g: LCG, outputs=None, required: bool = True) -> np.ndarray:
    """Mask of the vertices on some input-to-output path; raises when there is
    none (unless not ``required``).  The mask for all outputs is cached on the
    (immutable) graph."""
    if outputs is None and "sampling.on_paths" in g._cache:
        return g._cache["sampling.on_paths"]
    if "sampling.from_inputs" not in g._cache:  # the same for every output
        g._cache["sampling.from_inputs"] = reachable(g, g.inputs)
    backward = reachable(g, g.outputs if outputs is None else outputs, forward=False)
    mask = g._cache["sampling.from_inputs"] & backward
    if outputs is None and mask.any():
        mask.flags.writeable = False
        g._cache["sampling.on_paths"] = mask
    if required and not mask.any():
        raise ValueError(f"{g!r} has no path from any input to any output, so there is "
                         f"nothing to sample; connect an input to an output")
    return mask


# ----------------------------------------------------------- Algorithm 1
@dataclass(frozen=True, eq=False, repr=False)
class PathSample:
    """One run of Algorithm 1 on ``original``.

    ``counts``, ``weights`` are aligned with ``original``'s edge arrays:
    how often each edge was drawn, and its partial in ``Q`` (0 where not
    drawn).  ``visited`` marks the vertices Algorithm 1 did not skip;
    ``k`` is the number of draws each vertex makes when visited (0: keeps
    all its out-edges).  ``graph`` is ``Q`` itself: the same vertices,
    only the drawn edges, carrying the sampled weights.
    """

    original: LCG
    graph: LCG
    counts: np.ndarray
    weights: np.ndarray
    visited: np.ndarray
    k: np.ndarray

    @property
    def edges_stored(self) -> int:
        """Edges of ``Q``: the partials a sampled backward pass must keep."""
        return self.graph.n_edges

    @property
    def vertices_stored(self) -> int:
        """Visited vertices: the only ones whose partials must be recorded."""
        return int(self.visited.sum())

    @property
    def full_edges(self) -> int:
        return self.original.n_edges

    @property
    def full_vertices(self) -> int:
        return self.original.n_vertices

    @cached_property
    def accumulation(self) -> Accumulation:
        """The reverse sweep on ``Q`` (:func:`minirad.sweeps.reverse_sweep`), with
        its operation counts: the work of the sampled backward pass."""
        return reverse_sweep(self.graph)

    @property
    def jacobian(self) -> np.ndarray:
        """The estimate: reverse accumulation on ``Q`` for every output and
        input at once, shape (n_outputs, n_inputs)."""
        return self.accumulation.jacobian

    def __repr__(self) -> str:
        return (f"PathSample({self.edges_stored} of {self.full_edges} edges and "
                f"{self.vertices_stored} of {self.full_vertices} vertices stored)")


@takes_lcg
def sample_paths(g: LCG, k=1, rng=None) -> PathSample:
    """Run Algorithm 1 once: sample a sparse LCG ``Q`` whose Jacobian is unbiased.

    Vertices are visited in topological order; a vertex none of whose
    incoming edges was drawn is skipped (inputs are always visited).  A
    visited vertex ``v`` with out-degree ``d_v`` draws ``k_v`` successors
    uniformly with replacement, and each draw of ``w`` adds
    ``(d_v / k_v) * dw/dv`` to ``Q(v, w)``.  ``k`` is described in
    :func:`draws_per_vertex`; ``rng`` is a ``numpy.random.Generator`` or a
    seed (same seed, same sample).

    >>> from minirad import examples
    >>> g = examples.independent_paths(4, 3)
    >>> s = sample_paths(g, k=2, rng=3)
    >>> s
    PathSample(8 of 16 edges and 8 of 14 vertices stored)
    >>> s.counts[:4].tolist(), s.weights[:4].tolist()
    ([1, 0, 0, 1], [2.0, 0.0, 0.0, 2.0])
    >>> s.jacobian.tolist()  # every path has product 1, so no error here
    [[4.0]]
    """
    draws = draws_per_vertex(g, k)
    _on_paths(g)
    rng = _rng(rng)
    order, ptr = g.out_edges_csr
    visited = np.zeros(g.n_vertices, dtype=bool)
    visited[list(g.inputs)] = True
    counts = np.zeros(g.n_edges, dtype=np.int64)
    bounds = ptr.tolist()
    for v in range(g.n_vertices):
        if not visited[v] or bounds[v] == bounds[v + 1]:
            continue  # line 9 of Algorithm 1: nothing reaches v, so v stores nothing
        out = order[bounds[v]:bounds[v + 1]]
        chosen = out if draws[v] == 0 else out[rng.integers(len(out), size=draws[v])]
        np.add.at(counts, chosen, 1)
        visited[g.targets[chosen]] = True
    degree = np.diff(ptr)[g.sources]
    per_draw = np.where(draws[g.sources] > 0, degree / np.maximum(draws[g.sources], 1), 1.0)
    weights = counts * per_draw * g.partials
    kept = counts > 0  # a mask keeps the edges grouped by target, as _trusted requires
    q = LCG._trusted(g.names, g.sources[kept], g.targets[kept], weights[kept], g.inputs,
                     g.outputs, g.values, g.ops)
    for array in (counts, weights, visited, draws):
        array.flags.writeable = False
    return PathSample(g, q, counts, weights, visited, draws)


# ------------------------------------------------------- batched sampling
class _Plan:
    """The vertices on input-output paths, renumbered 0..R-1, each with its
    out-edges (local targets, partials) and its draws.  Successors off
    those paths become the extra slot R: a sink when drawing or pushing
    tangents, a zero when pulling adjoints (they never reach an output)."""

    def __init__(self, g: LCG, draws: np.ndarray):
        on = _on_paths(g)
        self.size = int(on.sum())
        local = np.full(g.n_vertices, self.size, dtype=np.int64)
        local[on] = np.arange(self.size)
        self.inputs = local[list(g.inputs)]
        self.outputs = local[list(g.outputs)]
        order, ptr = g.out_edges_csr
        self.steps = []
        for v in np.flatnonzero(on):
            out = order[ptr[v]:ptr[v + 1]]
            if len(out):
                self.steps.append((int(local[v]), local[g.targets[out]], g.partials[out],
                                   int(draws[v])))
        # per sample, at most this many draws are recorded (every vertex visited)
        self.most_draws = sum(k if k else len(t) for _, t, _, k in self.steps)


def _draw_visited(plan: _Plan, c: int, rng):
    """Algorithm 1 for ``c`` samples at once, vertex by vertex in topological
    order: only the samples in which a vertex is visited draw there.  Yields
    ``(v, targets, partials, k, rows, pick)``: the samples ``rows`` that
    visit ``v`` and their draws ``pick`` (positions among v's out-edges;
    None when v keeps them all).  Row ``plan.size`` of ``visited`` is the
    sink for successors off every path."""
    visited = np.zeros((plan.size + 1, c), dtype=bool)  # vertex-major: rows are contiguous
    live = plan.inputs[plan.inputs < plan.size]
    visited[live] = True
    for v, targets, partials, k in plan.steps:
        rows = np.flatnonzero(visited[v])
        if len(rows) == 0:
            continue  # line 9 of Algorithm 1, for every sample at once
        if k == 0:
            visited[np.ix_(targets, rows)] = True
            yield v, targets, partials, k, rows, None
            continue
        pick = rng.integers(len(targets), size=(len(rows), k))
        visited[targets[pick], rows[:, None]] = True
        yield v, targets, partials, k, rows, pick


def _reverse_batch(plan: _Plan, n_out: int, c: int, rng) -> np.ndarray:
    """``c`` estimates: draw forward, then reverse accumulation over the
    draws.  A visited vertex only reads adjoints of successors it drew,
    which are visited too, so unvisited entries are never read."""
    draws = list(_draw_visited(plan, c, rng))
    adjoint = np.zeros((plan.size + 1, c, n_out))
    live = plan.outputs < plan.size
    adjoint[plan.outputs[live], :, np.flatnonzero(live)] = 1.0
    for v, targets, partials, k, rows, pick in reversed(draws):
        d = len(targets)
        if pick is None:
            adjoint[v, rows] = np.einsum("e,emo->mo", partials, adjoint[np.ix_(targets, rows)])
        elif k <= d:
            weight = partials[pick] * (d / k)
            adjoint[v, rows] = np.einsum("mj,mjo->mo", weight,
                                         adjoint[targets[pick], rows[:, None]])
        else:  # many draws: count them per edge instead of gathering each
            hits = _hits(pick, d)
            adjoint[v, rows] = np.einsum("me,emo->mo", hits * (partials * (d / k)),
                                         adjoint[np.ix_(targets, rows)])
    return adjoint[plan.inputs].transpose(1, 2, 0)


def _forward_batch(plan: _Plan, n_in: int, c: int, rng) -> np.ndarray:
    """``c`` estimates by forward accumulation while drawing."""
    tangent = np.zeros((plan.size + 1, c, n_in))
    live = plan.inputs < plan.size
    tangent[plan.inputs[live], :, np.flatnonzero(live)] = 1.0
    for v, targets, partials, k, rows, pick in _draw_visited(plan, c, rng):
        d = len(targets)
        x = tangent[v, rows]
        if pick is None:
            tangent[np.ix_(targets, rows)] += partials[:, None, None] * x[None]
        elif k <= d:
            weight = partials[pick] * (d / k)
            for j in range(k):  # one column at a time: no repeated (target, row) pair
                tangent[targets[pick[:, j]], rows] += weight[:, j, None] * x
        else:
            hits = _hits(pick, d)
            tangent[np.ix_(targets, rows)] += (hits * (partials * (d / k))).T[:, :, None] * x
    estimates = tangent[plan.outputs].transpose(1, 0, 2)
    estimates[:, plan.outputs == plan.size] = 0.0  # outputs off every path read the sink
    return estimates


def _hits(pick: np.ndarray, d: int) -> np.ndarray:
    """Draw counts per out-edge, (rows, d), from the draws (rows, k)."""
    m = len(pick)
    flat = (np.arange(m)[:, None] * d + pick).ravel()
    return np.bincount(flat, minlength=m * d).reshape(m, d)


@takes_lcg
def sampled_jacobians(g: LCG, k=1, n: int = 1000, rng=None, *,
                      direction: str | None = None) -> np.ndarray:
    """``n`` independent Algorithm 1 estimates at once, shape (n, n_outputs, n_inputs).

    The same algorithm as :func:`sample_paths`, vectorised over the
    samples instead of run once per sample: vertices are visited in
    topological order, and at each vertex the samples that visit it (those
    with a drawn edge into it) draw their successors with one call.  The
    estimates then come from one sweep for all samples together:
    ``direction="reverse"`` runs reverse accumulation over the recorded
    draws, ``"forward"`` pushes tangents while drawing (no record needed);
    by default the one with fewer seeds (outputs vs inputs); both give the
    same numbers.  Only the order of the random stream differs from calling
    :func:`sample_paths` ``n`` times (draws are taken vertex by vertex
    rather than sample by sample), so the distribution is the same; with
    ``n=1`` on a graph whose every vertex lies on an input-output path the
    two even return the same estimate for the same seed.  Samples are
    processed in chunks of bounded memory; the same seed gives the same
    array.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> J = sampled_jacobians(g, k=1, n=5, rng=0)
    >>> J.shape
    (5, 1, 2)
    >>> bool((J == sampled_jacobians(g, k=1, n=5, rng=0)).all())
    True
    """
    draws = draws_per_vertex(g, k)
    n = _check_n(n)
    rng = _rng(rng)
    n_in, n_out = len(g.inputs), len(g.outputs)
    if direction is None:
        direction = "reverse" if n_out <= n_in else "forward"
    if direction not in ("reverse", "forward"):
        raise ValueError(f"direction must be 'reverse' or 'forward', not {direction!r}")
    plan = _Plan(g, draws)
    width = n_out if direction == "reverse" else n_in
    per_sample = (plan.size + 1) * (width + 1) + plan.most_draws
    chunk = int(np.clip(_CHUNK_FLOATS // per_sample, 1, n))
    batch = _reverse_batch if direction == "reverse" else _forward_batch
    out = np.empty((n, n_out, n_in))
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        out[start:stop] = batch(plan, width, stop - start, rng)
    return out


# ------------------------------------------------------------ exact variance
def _adjoint_covariance(g: LCG, draws: np.ndarray, output: int, limit: int):
    """Exact adjoints and the covariance of their estimates, for one output.

    Returns ``(vertices, mean, cov)`` over the vertices on paths from the
    inputs to ``output`` (none when no input reaches it).  See
    :func:`path_sampling_variance` for the recursion."""
    on = _on_paths(g, outputs=[output], required=False)
    vertices = np.flatnonzero(on)
    size = len(vertices)
    if size > limit:
        raise ValueError(f"the exact variance keeps a dense {size} x {size} covariance for "
                         f"output {g.names[output]}, more than max_vertices={limit}; estimate "
                         f"the variance with compare() or raise max_vertices")
    local = np.full(g.n_vertices, -1, dtype=np.int64)
    local[vertices] = np.arange(size)
    mean = np.zeros(size)
    cov = np.zeros((size, size))
    order, ptr = g.out_edges_csr
    for a in range(size - 1, -1, -1):
        v = vertices[a]
        if v == output:
            mean[a] = 1.0  # the seed is exact: it has no variance
            continue
        out = order[ptr[v]:ptr[v + 1]]
        d = len(out)
        succ = local[g.targets[out]]
        keep = succ >= 0  # successors off the paths have estimate 0 always
        s, p = succ[keep], g.partials[out][keep]
        x = p * mean[s]
        mean[a] = x.sum()
        cov[a, a + 1:] = p @ cov[s, a + 1:]
        cov[a + 1:, a] = cov[a, a + 1:]
        propagated = p @ cov[np.ix_(s, s)] @ p
        k = draws[v]
        if k == 0:
            cov[a, a] = propagated
        else:
            local_noise = (d * (x @ x) - x.sum() ** 2) / k
            cov[a, a] = (local_noise + (1.0 - 1.0 / k) * propagated
                         + (d / k) * (p * p) @ np.diag(cov)[s])
    return vertices, mean, cov


@takes_lcg
def path_sampling_variance(g: LCG, k=1, max_vertices: int = EXACT_VARIANCE_LIMIT) -> np.ndarray:
    r"""The exact variance of every entry of the Algorithm 1 estimate, (n_outputs, n_inputs).

    No sampling: a recursion over the vertices in reverse topological order,
    for one output ``y`` at a time.

    Derivation.  Fix ``y`` and write ``\bar z`` for dy/dz and ``\hat z`` for
    its estimate (reverse accumulation on ``Q``).  Skipped vertices change
    no input's estimate (a skipped vertex is unreachable from the inputs in
    ``Q``), so we may let every vertex draw, independently.  Then

        \hat y = 1,    \hat z = \sum_s c_{zs} p_{zs} \hat s,

    with ``p_{zs} = ds/dz`` and ``c_{zs} = (d/k) N_{zs}``, where the draw
    counts ``N_{z.}`` are multinomial (``k`` draws, ``d`` equally likely
    successors).  Multinomial moments give ``E c = 1`` and

        E[c_{zs} c_{zt}] = 1 - 1/k + (d/k) [s = t].

    ``c_{z.}`` depends on ``z``'s draws only, and every ``\hat s`` (and
    every ``\hat b`` with ``b`` after ``z``) on the draws of later vertices,
    so they are independent.  With ``C(a, b) = Cov(\hat a, \hat b)`` this gives,
    for ``a`` before ``b``,

        C(a, b) = \sum_s p_{as} C(s, b),

    and, by the law of total variance with ``x_s = p_{as} \bar s``,

        C(a, a) = (d \sum_s x_s^2 - (\sum_s x_s)^2) / k
                  + (1 - 1/k) \sum_{s,t} p_{as} p_{at} C(s, t)
                  + (d/k) \sum_s p_{as}^2 C(s, s).

    The first term is the noise of ``a``'s own draws if its successors'
    adjoints were exact (nonnegative by Cauchy-Schwarz, zero when every
    ``x_s`` is equal); the others carry the successors' noise, including
    their covariances.  For ``k = 1`` the middle term vanishes and only the
    diagonal is needed; for ``k > 1`` the covariances are needed because
    successors share descendants.  A vertex that keeps all its edges has
    ``c = 1``: only the middle term, with weight 1.  The variance of
    ``J[y, theta]`` is ``C(theta, theta)``.

    Cost: a dense covariance over the R vertices on paths to ``y``, O(R^2)
    memory and O(R * edges) time per output; ``R > max_vertices`` raises
    ``ValueError``.

    >>> from minirad import examples
    >>> g = examples.independent_paths(4, 3, partials="random", rng=0)
    >>> float(path_sampling_variance(g, k=1)[0, 0]) > 0.0
    True
    >>> path_sampling_variance(examples.interleaved(3, 2), k=2).tolist()  # equal paths
    [[0.0]]
    """
    draws = draws_per_vertex(g, k)
    _on_paths(g)
    variance = np.zeros((len(g.outputs), len(g.inputs)))
    for row, y in enumerate(g.outputs):
        vertices, _, cov = _adjoint_covariance(g, draws, y, max_vertices)
        if len(vertices) == 0:
            continue  # no input reaches y: that row is exactly zero
        where = np.searchsorted(vertices, g.inputs)
        for col, theta in enumerate(g.inputs):
            if where[col] < len(vertices) and vertices[where[col]] == theta:
                variance[row, col] = max(cov[where[col], where[col]], 0.0)  # rounding
    return variance


# ------------------------------------------------------------- comparison
@dataclass(frozen=True, eq=False, repr=False)
class Comparison:
    """Exact Jacobian against ``n`` sampled estimates.

    ``mean``, ``variance`` (unbiased, ddof=1) and ``stderr`` are per
    entry; ``z`` is ``(mean - exact) / stderr``, with ``stderr`` floored at
    ``1e-12 * max(|exact|, 1)`` so that entries the sampling cannot change
    (exact up to rounding) get ``z`` near 0; ``running_error[m-1]`` is
    ``||mean of the first m estimates - exact|| / ||exact||`` (Frobenius;
    the plain norm of the error when the exact Jacobian is zero).
    ``exact_variance`` is :func:`path_sampling_variance` when the graph is
    small enough, else ``None``.
    """

    exact: np.ndarray
    estimates: np.ndarray
    mean: np.ndarray
    variance: np.ndarray
    stderr: np.ndarray
    z: np.ndarray
    running_error: np.ndarray
    exact_variance: np.ndarray | None
    k: np.ndarray

    @property
    def n(self) -> int:
        return len(self.estimates)

    def __repr__(self) -> str:
        worst = np.nanmax(np.abs(self.z)) if np.isfinite(self.z).any() else float("nan")
        return (f"Comparison(n={self.n}, relative error of the mean "
                f"{self.running_error[-1]:.3g}, max |z| {worst:.2f})")


@takes_lcg
def compare(g: LCG, k=1, n: int = 1000, rng=None) -> Comparison:
    """Draw ``n`` estimates and set them against the exact Jacobian.

    >>> from minirad import examples
    >>> result = compare(examples.figure1(), k=1, n=4000, rng=0)
    >>> result.running_error.shape
    (4000,)
    >>> bool(np.all(np.abs(result.z) < 4.5))
    True
    >>> bool(np.allclose(result.variance, result.exact_variance, rtol=0.2))
    True
    """
    draws = draws_per_vertex(g, k)
    estimates = sampled_jacobians(g, k, n, rng)
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


def _layer_chain(g: LCG, width: int, depth: int) -> list[np.ndarray]:
    """The vector chain of a Figure 2 graph: theta -> layer 1 -> ... -> y."""
    rank = np.empty(g.n_vertices, dtype=np.int64)  # position within its layer
    layer = np.empty(g.n_vertices, dtype=np.int64)
    rank[0], layer[0] = 0, 0
    rank[1:-1] = np.arange(width * depth) % width
    layer[1:-1] = np.arange(width * depth) // width + 1
    rank[-1], layer[-1] = 0, depth + 1
    sizes = [1] + [width] * depth + [1]
    chain = [np.zeros((sizes[l + 1], sizes[l])) for l in range(depth + 1)]
    for l in range(depth + 1):
        stage = layer[g.sources] == l
        chain[l][rank[g.targets[stage]], rank[g.sources[stage]]] = g.partials[stage]
    return chain


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
    vertices of every layer (:mod:`minirad.injection`).  Every depth uses
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
    from .injection import injection_variance

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
            chain = _layer_chain(g, width, depth)
            var.append(injection_variance(chain, fraction, where=range(1, depth + 1))[0, 0])
    jac, var = np.array(jac), np.array(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(jac != 0, var / jac**2, np.inf)
    return DepthStudy(family, method, int(width), float(fraction), depths, jac, var, rel)

