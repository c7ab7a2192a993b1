r"""Path sampling: randomized reverse mode by sparsifying the LCG, on any graph.

Algorithm 1 of Oktay et al., "Randomized Automatic Differentiation" (ICLR
2021, Appendix C) walks the graph in topological order.  A vertex is
*visited* when one of its incoming edges has been sampled (inputs are
always visited); a visited vertex ``v`` with out-degree ``d_v`` draws
``k_v`` of its out-edges uniformly with replacement, and every draw of the
edge ``v -> w`` adds ``(d_v / k_v) * dw/dv`` to the sampled graph ``Q``.
Vertices that are never visited store nothing: that is the memory saving.
Reverse accumulation on ``Q`` then gives an unbiased estimate of the
Jacobian.

Arrays: the two levels of the paper's Sec. 3.2
----------------------------------------------
On a graph whose vertices hold arrays (edges carry Jacobian blocks), one
path through array vertices stands for many paths through their entries
(the paper's Fig. 3).  :func:`sample_paths` samples at both levels:

1. *paths through the array vertices*: Algorithm 1 as above, each edge a
   block ``J``, each drawn edge scaled by ``d_v / k_v`` per draw;
2. *inside each visited vertex*, with ``entries`` given: ``v`` also draws
   ``m_v`` of its ``n_v`` entries uniformly with replacement, and every edge
   leaving it in ``Q`` becomes ``J P_v``, with ``P_v = (n_v / m_v) sum_j
   e_{i_j} e_{i_j}^T`` the sampling matrix of eq. 4: only paths through the
   drawn entries remain (inputs and outputs are not sampled inside).

Why it is unbiased: write ``\hat v`` for the estimate of ``v``'s adjoint
(reverse accumulation on ``Q``).  Then ``\hat v = P_v sum_w c_vw J_vw^T
\hat w`` with ``c_vw`` the draw count times ``d_v / k_v``.  ``v``'s own draws
(``c_v.`` and ``P_v``) are independent of each other and of every ``\hat w``
(those depend on the draws of later vertices only), ``E[c_vw] = 1`` (Appendix
C's eq. 10) and ``E[P_v] = I`` (eq. 4), so ``E[\hat v] = sum_w J_vw^T E[\hat
w]``: by induction in reverse topological order, from the exact seeds at the
outputs, every ``E[\hat v]`` is the exact adjoint.  A vertex never visited
has no drawn in-edge, so its draws reach no input: skipping it changes no
estimate.  A number has a single entry (``P_v = 1``, nothing drawn), so on a
graph of numbers this *is* Algorithm 1, draw for draw.

Algorithm 1 run on :func:`minirad.graph.scalarize.scalarize` ``(g)`` is the
other way to sample the same paths: every entry draws among its own
out-edges; :func:`path_sampling_variance` gives the exact variance of either,
so the two can be compared (:func:`minirad.randomized.experiments.compare_levels`).

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
>>> from minirad.exact.sweeps import reverse_sweep
>>> exact = reverse_sweep(g).jacobian
>>> mean = sampled_jacobians(g, 2, 20000, rng=1).mean(axis=0)
>>> standard_error = np.sqrt(path_sampling_variance(g, 2) / 20000)
>>> bool(np.all(np.abs(mean - exact) <= 5 * standard_error + 1e-9))
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._arguments import check_memory, format_number, number_of_estimates
from ..exact.jacobians import jacobian as exact_jacobian
from ..exact.overflow import AccumulationOverflow, check_finite
from ..exact.result import Accumulation, format_count
from ..exact.sweeps import reverse_sweep
from ..graph.labels import FLOATS
from ..graph.lcg import LCG, levels, reachable, takes_graph_or_function
from ..graph.operators import Diagonal, compose
from ..rng import as_generator as _rng
from . import _batches as _path_batches
from .moments import EXACT_VARIANCE_LIMIT, ProjectionLaw, estimate_variance
from .stacked import Layout, reverse_stack, samples_per_chunk

__all__ = [
    "EXACT_VARIANCE_LIMIT", "PathSample", "draws_per_vertex", "entries_per_vertex",
    "path_sampling_variance", "sample_paths", "sampled_jacobians",
]

# draws the batched sampler records per chunk of samples (about 24 bytes each)
_CHUNK_DRAWS = 1 << 23
# bytes one draw costs the batched sampler while its sample is in hand (24 to 29
# measured with tracemalloc), and the reference sampler at the vertex drawing
_BYTES_PER_DRAW = 32
_BYTES_PER_DRAW_REFERENCE = 24
# the draws of one sample are counted in int64: k times the vertices must stay below
_MOST_DRAWS = 2**63
_SAMPLES_PER_LEVEL = 160

# ------------------------------------------------------------ arguments
@takes_graph_or_function
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
        _check_countable(g, k, "k")
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
            _check_countable(g, count, f"k[{vertex!r}]")
            if not has_succ[v]:
                raise ValueError(f"k names vertex {g.names[v]}, which has no out-edges to "
                                 f"sample; only vertices with successors draw")
            draws[v] = int(count)
        return draws
    raise TypeError(f"k must be an int, a float fraction in (0, 1] or a mapping from vertices "
                    f"to ints, not {type(k).__name__}")


@takes_graph_or_function
def entries_per_vertex(g: LCG, entries) -> np.ndarray:
    """How many of its entries each vertex draws inside (the second level of
    :func:`sample_paths`), as an int array over ``g``'s vertices; 0: it keeps them all.

    ``entries`` may be ``None`` (no vertex samples inside), an int ``>= 1`` or a
    float fraction in ``(0, 1]`` of each vertex's size (rounded up), both for
    every intermediate vertex with more than one entry, or a mapping from such
    vertices to an int ``>= 1`` (or ``None``).  Inputs and outputs are never
    sampled inside: an input's adjoint is the estimate itself, an output's is
    its seed.  A number has one entry, so it never draws.

    >>> from minirad.graph.scalarize import from_chain
    >>> g = from_chain([np.ones((4, 1)), np.ones((3, 4)), np.ones((1, 3))])
    >>> entries_per_vertex(g, 0.5).tolist(), entries_per_vertex(g, {"v2": 2}).tolist()
    ([0, 2, 2, 0], [0, 0, 2, 0])
    """
    inside = np.zeros(g.n_vertices, dtype=np.int64)
    if entries is None:
        return inside
    # a graph of numbers has nothing to sample inside (and may have millions of vertices)
    sizes = (np.ones(g.n_vertices, dtype=np.int64) if g.algebra is FLOATS else
             np.array([g.size(v) for v in range(g.n_vertices)], dtype=np.int64))
    eligible = (sizes > 1) & (g.out_degrees > 0)
    eligible[list(g.inputs)] = False
    if isinstance(entries, (bool, np.bool_)):
        raise TypeError("entries must be an int, a float fraction in (0, 1], a mapping from "
                        "vertices to ints or None, not a bool")
    if isinstance(entries, (int, np.integer)):
        if entries < 1:
            raise ValueError(f"entries must be at least 1 (draws inside a vertex), got {entries}")
        return np.where(eligible, int(entries), 0).astype(np.int64)
    if isinstance(entries, (float, np.floating)):
        if not 0.0 < entries <= 1.0:  # also rejects NaN
            raise ValueError(f"a float entries is the fraction of each vertex's entries to draw "
                             f"and must lie in (0, 1], got {entries}; for a count pass an int")
        return np.where(eligible, np.ceil(np.round(entries * sizes, 9)), 0).astype(np.int64)
    if isinstance(entries, Mapping):
        for vertex, count in entries.items():
            v = g.index(vertex)
            if count is None:
                continue
            if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
                raise TypeError(f"entries[{vertex!r}] is {count!r}; draws inside a vertex are "
                                f"ints >= 1 (or None to keep every entry)")
            if count < 1:
                raise ValueError(f"entries[{vertex!r}] must be at least 1, got {count}")
            if not eligible[v]:
                raise ValueError(f"entries names vertex {g.names[v]}, which cannot be sampled "
                                 f"inside: only intermediate vertices with successors and more "
                                 f"than one entry draw entries")
            inside[v] = int(count)
        return inside
    raise TypeError(f"entries must be an int, a float fraction in (0, 1], a mapping from "
                    f"vertices to ints or None, not {type(entries).__name__}")


def _check_countable(g: LCG, k, name: str) -> None:
    """Refuse a number of draws per vertex whose total on ``g`` overflows int64."""
    most = (_MOST_DRAWS - 1) // max(1, g.n_vertices)
    if k > most:
        raise ValueError(f"{name}={format_count(int(k))} draws per vertex cannot be counted on "
                         f"a graph of {g.n_vertices} vertices (at most {most:,}), and no "
                         f"computer could hold one sample's draws anyway")


def on_paths(g: LCG, outputs=None) -> np.ndarray:
    """Mask of the vertices on some path from an input to one of ``outputs``
    (default: all outputs): the only vertices Algorithm 1 can visit and that
    matter to the estimate.  With none, the Jacobian is zero, and so is every
    estimate.  The mask for all outputs is memoized, read-only.

    >>> from minirad import examples
    >>> g = examples.two_outputs()
    >>> [g.names[v] for v in np.flatnonzero(~on_paths(g))]
    []
    """
    from_inputs = g.memo("sampling.from_inputs", lambda: _read_only(reachable(g, g.inputs)))
    if outputs is None:
        mask = g.memo("sampling.on_paths", lambda: _read_only(
            from_inputs & reachable(g, g.outputs, direction="reverse")))
    else:
        mask = from_inputs & reachable(g, outputs, direction="reverse")
    return mask


def _jacobian_shape(g: LCG) -> tuple[int, int]:
    """(output entries, input entries): (n_outputs, n_inputs) on a graph of numbers."""
    if g.algebra is FLOATS:
        return len(g.outputs), len(g.inputs)
    rows, columns = (sum(g.size(v) for v in ends) for ends in (g.outputs, g.inputs))
    return rows, columns


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _entry_weights(rng, size: int, m: int, rows: int = 1) -> np.ndarray:
    """The diagonal of ``P = (n/m) sum_j e_{i_j} e_{i_j}^T`` for ``rows`` independent
    draws of ``m`` of ``size`` entries: (rows, size)."""
    picks = rng.integers(size, size=(rows, m))
    cells = (np.arange(rows)[:, None] * size + picks).ravel()
    return np.bincount(cells, minlength=rows * size).reshape(rows, size) * (size / m)


# ----------------------------------------------------------- Algorithm 1
@dataclass(frozen=True, eq=False, repr=False)
class PathSample:
    """One run of Algorithm 1 on ``original`` (both levels on an array graph).

    ``counts``, ``factors`` and ``weights`` are aligned with ``original``'s edge
    arrays: how often each edge was drawn; the number its label is multiplied
    by in ``Q``, ``counts * d_v / k_v`` (0 where not drawn); and, for an edge
    between two numbers, its partial in ``Q`` (the factor times the partial),
    for an edge that carries a block, the factor again.  ``visited`` marks the
    vertices Algorithm 1 did not skip; ``draws`` is the number of draws each
    vertex makes when visited (0: keeps all its out-edges), as
    :func:`draws_per_vertex` resolves the argument ``k``; ``inside`` maps each
    vertex that drew entries to the diagonal of its ``P_v`` (the vertex's shape).
    ``graph`` is ``Q`` itself: the same vertices, only the drawn edges, carrying
    the sampled labels.
    """

    original: LCG
    graph: LCG
    counts: np.ndarray
    factors: np.ndarray
    weights: np.ndarray
    visited: np.ndarray
    draws: np.ndarray
    inside: dict

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
        """The reverse sweep on ``Q`` (:func:`minirad.exact.sweeps.reverse_sweep`), with
        its operation counts: the work of the sampled backward pass."""
        return reverse_sweep(self.graph)

    @property
    def jacobian(self) -> np.ndarray:
        """The estimate: reverse accumulation on ``Q`` for every output and input at
        once, shape (output entries, input entries): (n_outputs, n_inputs) on a graph
        of numbers."""
        if self.graph.algebra is not FLOATS:
            return exact_jacobian(self.graph)
        try:
            return self.accumulation.jacobian
        except AccumulationOverflow as error:  # say that it is the sample's estimate
            raise AccumulationOverflow(f"sampling (Algorithm 1, the estimate on the sampled "
                                       f"graph Q): {error}") from None

    def __repr__(self) -> str:
        return (f"PathSample({self.edges_stored} of {self.full_edges} edges and "
                f"{self.vertices_stored} of {self.full_vertices} vertices stored)")


@takes_graph_or_function
def sample_paths(g: LCG, k=1, *, entries=None, rng=None) -> PathSample:
    """Run Algorithm 1 once: a sparse LCG ``Q`` whose Jacobian is an unbiased estimate.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    k : int, float or mapping, optional
        Draws per vertex (default 1): an int ``>= 1``, a fraction of each
        out-degree in ``(0, 1]``, or a mapping from vertices to an int or None
        (those left out keep every out-edge); see :func:`draws_per_vertex`.
    entries : int, float or mapping, optional
        On a graph with arrays, how many entries each array vertex samples inside
        it, the second level of the RAD paper's Sec. 3.2 (default: none); see
        :func:`entries_per_vertex`.
    rng : numpy.random.Generator or int, optional
        The generator, or a seed (same seed, same result).

    Returns
    -------
    PathSample
        ``counts`` and ``weights`` per edge, the ``visited`` vertices, ``inside``
        (the entries each array vertex kept), the sampled graph ``Q`` and its
        ``jacobian``, the estimate.

    Raises
    ------
    ValueError
        For a bad ``k`` or ``entries`` (a count below 1, a fraction outside
        ``(0, 1]``, an unknown vertex), or an estimate that overflows.

    See Also
    --------
    sampled_jacobians : Many estimates at once.
    path_sampling_variance : Their exact variance.
    minirad.render : Draws a sample over its graph.

    Notes
    -----
    Algorithm 1 of Oktay et al., *Randomized Automatic Differentiation* (ICLR
    2021).  Vertices are visited in topological order; a vertex none of whose
    incoming edges was drawn is skipped (inputs are always visited).  A visited
    vertex ``v`` with out-degree ``d_v`` draws ``k_v`` successors uniformly with
    replacement, and each draw of ``w`` adds ``(d_v / k_v) * dw/dv`` to
    ``Q(v, w)``; then, if ``entries`` asks it to, it draws ``m_v`` of its ``n_v``
    entries, and its edges in ``Q`` become ``Q(v, w) P_v`` (the module docstring
    says why both levels are unbiased).

    Examples
    --------
    >>> from minirad import examples
    >>> g = examples.independent_paths(4, 3)
    >>> s = sample_paths(g, k=2, rng=3)
    >>> s
    PathSample(8 of 16 edges and 8 of 14 vertices stored)
    >>> s.counts[:4].tolist(), s.weights[:4].tolist()
    ([1, 0, 0, 1], [2.0, 0.0, 0.0, 2.0])
    >>> s.jacobian.tolist()  # every path has product 1, so no error here
    [[4.0]]

    On arrays (here ``theta -> v1 (3 entries) -> y``), the second level keeps one
    entry of ``v1``, weighted 3:

    >>> from minirad.graph.scalarize import from_chain
    >>> h = from_chain([np.array([[1.0], [2.0], [3.0]]), np.ones((1, 3))])
    >>> s = sample_paths(h, k=1, rng=0, entries=1)
    >>> s.inside[1].tolist(), s.jacobian.tolist()      # entry 2 drawn: 3 x 3 = 9
    ([0.0, 0.0, 3.0], [[9.0]])
    """
    draws = draws_per_vertex(g, k)
    inside = entries_per_vertex(g, entries)
    most = int(draws.max(initial=0))
    check_memory(_BYTES_PER_DRAW_REFERENCE * most,
                 f"a sample with k={k!r} ({most:,} draws at one vertex)",
                 lambda _: "; draw fewer per vertex")
    rng = _rng(rng)
    order, ptr = g.out_edges_csr
    visited = np.zeros(g.n_vertices, dtype=bool)
    visited[list(g.inputs)] = True
    counts = np.zeros(g.n_edges, dtype=np.int64)
    sampled_inside = {}
    bounds = ptr.tolist()
    for v in range(g.n_vertices):
        if not visited[v] or bounds[v] == bounds[v + 1]:
            continue  # line 9 of Algorithm 1: nothing reaches v, so v stores nothing
        out = order[bounds[v]:bounds[v + 1]]
        chosen = out if draws[v] == 0 else out[rng.integers(len(out), size=draws[v])]
        np.add.at(counts, chosen, 1)
        visited[g.targets[chosen]] = True
        if inside[v]:  # the second level: m_v of v's n_v entries
            sampled_inside[v] = _read_only(
                _entry_weights(rng, g.size(v), int(inside[v]))[0].reshape(g.shape(v)))
    # the factors: each draw of v -> w adds (d_v / k_v) * dw/dv, so the edge's
    # label is multiplied by counts * d_v / k_v (by 1 where v keeps every edge)
    degree = np.diff(ptr)[g.sources]
    per_draw = np.where(draws[g.sources] > 0, degree / np.maximum(draws[g.sources], 1), 1.0)
    factors = counts * per_draw
    drawn = np.flatnonzero(counts)  # in edge order: still grouped by target
    if g.algebra is FLOATS:
        weights = factors * g.partials
        q = LCG.from_trusted_arrays(g.names, g.sources[drawn], g.targets[drawn],
                                    weights[drawn], g.inputs, g.outputs, g.values, g.ops)
    else:
        weights = factors.copy()
        labels = []
        for e in drawn.tolist():
            label, u = g.labels[e], int(g.sources[e])
            if isinstance(label, float):
                weights[e] = factors[e] * label
                labels.append(float(weights[e]))
                continue
            if u in sampled_inside:
                label = compose(label, Diagonal(sampled_inside[u], g.shape(u), ()))
            if factors[e] != 1.0:  # a constant factor: structure kept, nothing retained
                label = compose(Diagonal(np.asarray(factors[e]), label.out_shape, ()), label)
            labels.append(label)
        q = LCG(g.names, g.sources[drawn], g.targets[drawn], labels, g.inputs, g.outputs,
                values=g.values, ops=g.ops, shapes=g.shapes, dtypes=g.dtypes)
    for array in (counts, factors, weights, visited, draws):
        array.flags.writeable = False
    return PathSample(g, q, counts, factors, weights, visited, draws, sampled_inside)


def _draw_stack(g: LCG, draws: np.ndarray, inside: np.ndarray, c: int, rng):
    """Algorithm 1 (both levels) for ``c`` samples at once, vertex by vertex in
    topological order: every sample that visits ``v`` draws there, with one call
    on the generator for all of them.  Returns the factors (c, n_edges) and, per
    vertex sampled inside, the diagonals of its ``P_v`` (c, 1, n_v)."""
    order, ptr = g.out_edges_csr
    visited = np.zeros((c, g.n_vertices), dtype=bool)
    visited[:, list(g.inputs)] = True
    factors = np.zeros((c, g.n_edges))
    diagonals = {}
    for v in range(g.n_vertices):
        out = order[ptr[v]:ptr[v + 1]]
        who = np.flatnonzero(visited[:, v])
        if not len(out) or not len(who):
            continue
        d, k = len(out), int(draws[v])
        if k == 0:
            counts = np.ones((len(who), d))
        else:
            picks = rng.integers(d, size=(len(who), k))
            cells = (np.arange(len(who))[:, None] * d + picks).ravel()
            counts = np.bincount(cells, minlength=len(who) * d).reshape(len(who), d)
        factors[np.ix_(who, out)] = counts * (d / k if k else 1.0)
        visited[who[:, None], g.targets[out][None, :]] |= counts > 0
        if inside[v]:
            weights = np.zeros((c, 1, g.size(v)))
            weights[who, 0] = _entry_weights(rng, g.size(v), int(inside[v]), len(who))
            diagonals[v] = weights
    return factors, diagonals


def _stacked_estimates(g: LCG, factors: np.ndarray, diagonals: dict) -> np.ndarray:
    """The estimates of the samples whose draws are ``factors`` and ``diagonals`` (as
    :func:`_draw_stack` returns them): reverse accumulation over the stack."""
    layouts = {v: Layout(g.shape(v)) for v in diagonals}
    steps = {v: (lambda adj, lay=layouts[v], w=w: lay.scale(adj, w))
             for v, w in diagonals.items()}
    return reverse_stack(g, len(factors), factors, steps)


@takes_graph_or_function
def sampled_jacobians(g: LCG, k=1, n: int = 1000, *, entries=None,
                      direction: str | None = None, progress=None, rng=None) -> np.ndarray:
    """``n`` independent Algorithm 1 estimates of the Jacobian at once.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    k : int, float or mapping, optional
        Draws per vertex, as for :func:`sample_paths` (default 1).
    n : int, optional
        How many estimates (default 1000).
    entries : int, float or mapping, optional
        The second level on a graph with arrays, as for :func:`sample_paths`.
    direction : {"forward", "reverse"}, optional
        On a graph of numbers, which way the accumulation over the recorded
        draws runs (default: the side with fewer seeds, outputs against inputs;
        both give the same numbers); on a graph with arrays only ``"reverse"``.
    progress : callable, optional
        Called as ``progress(done, n)`` after each chunk of samples.
    rng : numpy.random.Generator or int, optional
        The generator, or a seed (same seed, same result).

    Returns
    -------
    numpy.ndarray
        Shape ``(n, output entries, input entries)``: ``(n, n_outputs,
        n_inputs)`` on a graph of numbers.

    Raises
    ------
    ValueError
        For a bad ``k``, ``n``, ``entries`` or ``direction``, more estimates or
        draws than memory holds (checked before any is drawn; the message says
        what fits), or an estimate that overflows.
    TypeError
        For an ``n`` that is not an integer.

    See Also
    --------
    sample_paths : One estimate, with its sampled graph.
    path_sampling_variance : Their exact variance.
    compare : Estimates set against the exact Jacobian.

    Notes
    -----
    The same algorithm as :func:`sample_paths`, vectorised over the samples:
    vertex by vertex every sample that visits the vertex draws there, all with
    one call on the generator, and one reverse sweep over the stack of samples
    (:func:`minirad.randomized.stacked.reverse_stack`) gives the estimates.  Each
    sample is a run of Algorithm 1 with its law; only the order in which the
    generator's numbers are used differs from calling :func:`sample_paths` ``n``
    times, so the same seed gives different (equally distributed) estimates.
    On a graph of numbers a faster engine runs instead
    (:mod:`minirad.randomized._batches`, held equal to the reference on the same
    draws): level by level, or, where every vertex draws once (``k=1``), as walks
    of one path per input.  Samples are processed in chunks of bounded memory;
    the same seed gives the same array.

    Examples
    --------
    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> J = sampled_jacobians(g, k=1, n=5, rng=0)
    >>> J.shape
    (5, 1, 2)
    >>> bool((J == sampled_jacobians(g, k=1, n=5, rng=0)).all())
    True
    >>> sampled_jacobians(lambda x1, x2: x1 * x2, 3.0, 4.0, k=1, n=2, rng=0).tolist()
    [[[4.0, 3.0]], [[4.0, 3.0]]]
    """
    draws = draws_per_vertex(g, k)
    inside = entries_per_vertex(g, entries)
    n = number_of_estimates(n)
    rng = _rng(rng)
    if direction not in (None, "reverse", "forward"):
        raise ValueError(f"direction must be 'reverse' or 'forward', not {direction!r}")
    check_sizes(g, k, n)
    if g.algebra is not FLOATS and direction == "forward":
        raise ValueError("on an array graph the sampled estimates are accumulated in "
                         "reverse; pass direction=None or 'reverse'")
    if not on_paths(g).any():  # no input reaches an output: J = 0, and so is every estimate
        return np.zeros((n, *_jacobian_shape(g)))
    if g.algebra is not FLOATS:
        chunk = samples_per_chunk(g, n, g.n_edges)
        parts = []
        for start in range(0, n, chunk):
            size = min(chunk, n - start)
            parts.append(_stacked_estimates(g, *_draw_stack(g, draws, inside, size, rng)))
            if progress is not None:
                progress(start + size, n)
        out = np.concatenate(parts)
        bad = np.flatnonzero(~np.isfinite(out).all(axis=(1, 2)))
        if len(bad):
            check_finite(g, out[bad[0]], "sampling (Algorithm 1)",
                         what=f" in estimate {bad[0] + 1} of {n}")
        return out
    return _engine_estimates(g, k, draws, n, rng, direction, progress)


def _engine_estimates(g: LCG, k, draws: np.ndarray, n: int, rng, direction, progress):
    """:func:`sampled_jacobians` on a graph of numbers, by the engine of
    :mod:`minirad.randomized._batches`."""
    n_in, n_out = len(g.inputs), len(g.outputs)
    if direction is None:
        direction = "reverse" if n_out <= n_in else "forward"
    plan = _batch_plan(g, k, draws)
    width = n_out if direction == "reverse" else n_in
    # the table of values takes one float per (vertex, sample, seed); the draws
    # are budgeted by the most a sample can make at first, then by twice the
    # mean the samples so far made (their sum over a chunk concentrates)
    if plan.single:  # walks keep one small int per (vertex, sample)
        most = max(1, _path_batches.WALK_ENTRIES // (plan.size + 1))
    else:
        most = max(1, _path_batches.TABLE_ENTRIES // ((plan.size + 1) * max(1, width)))
        # each level costs a round of numpy calls, whatever the number of samples,
        # while the tables outgrow the caches: about this many samples per level
        # balance the two (measured on the bench graphs)
        most = min(most, _SAMPLES_PER_LEVEL * (len(plan.levels) - 1))
    per_sample = max(1, plan.most_draws)
    scratch = _path_batches.borrow()
    out = np.empty((n, n_out, n_in))
    start = 0
    while start < n:
        size = min(most, max(1, _CHUNK_DRAWS // per_sample))
        size = -(-(n - start) // -(-(n - start) // size))  # chunks of equal size
        stop = start + size
        with np.errstate(over="ignore", invalid="ignore"):  # checked just below
            if plan.single:  # one draw per vertex: walks, whatever the direction
                out[start:stop], made = _path_batches.walks(plan, stop - start, rng, n_in, n_out)
            else:
                drawn = _path_batches.draw(plan, stop - start, rng, scratch)
                out[start:stop] = _path_batches.estimate(plan, drawn, n_in, n_out,
                                                         direction == "forward", scratch)
                made = drawn.n_draws
        per_sample = max(1, 2 * made // (stop - start))
        bad = np.flatnonzero(~np.isfinite(out[start:stop]).all(axis=(1, 2)))
        if len(bad):
            check_finite(g, out[start + bad[0]], "sampling (Algorithm 1)",
                         what=f" in estimate {start + bad[0] + 1} of {n}")
        if progress is not None:
            progress(stop, n)
        start = stop
    _path_batches.give_back(scratch)
    return out


def check_sizes(g: LCG, k, n: int, copies: int = 1) -> None:
    """Refuse, before drawing anything, what memory cannot hold: ``n`` estimates of
    ``g``'s Jacobian (8 bytes an entry, ``copies`` arrays of them), or the draws one
    sample makes with ``k`` (:func:`sampled_jacobians` keeps a sample's draws in hand).

    >>> from minirad import examples
    >>> check_sizes(examples.figure1(), 1, 10 ** 15)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 1,000,000,000,000,000 estimates of a 1 x 2 Jacobian would need 14.2 PiB ...
    """
    draws = draws_per_vertex(g, k)
    n = number_of_estimates(n)
    rows, columns = _jacobian_shape(g)
    each = 8 * copies * rows * columns
    check_memory(each * n, f"{format_number(n)} estimates of a {rows} x {columns} Jacobian",
                 lambda available: f"; at most {available // max(each, 1):,} fit")
    if g.algebra is not FLOATS or not on_paths(g).any():  # drawn in chunks, or nothing drawn
        return
    plan = _batch_plan(g, k, draws)
    if not plan.single:  # walks keep no draws (see _batches.walks)
        check_memory(_BYTES_PER_DRAW * plan.most_draws,
                     f"a sample with k={k!r} (up to {plan.most_draws:,} draws)",
                     lambda _: "; draw fewer per vertex")


def _batch_plan(g: LCG, k, draws: np.ndarray) -> _path_batches.Plan:
    """The batched sampler's tables for ``g`` and these draws per vertex,
    memoized for an int or float ``k`` (which, the graph being immutable,
    fix the draws); a mapping gets a fresh plan, so that studies trying
    many do not pile them up on the graph."""
    def build():
        return _path_batches.Plan(g, draws, on_paths(g), levels(g))

    if isinstance(k, Mapping):
        return build()
    key = f"int.{int(k)}" if isinstance(k, (int, np.integer)) else f"float.{float(k)!r}"
    return g.memo(f"sampling.batch_plan.{key}", build)


# ------------------------------------------------------------ exact variance
@takes_graph_or_function
def path_sampling_variance(g: LCG, k=1, max_entries: int = EXACT_VARIANCE_LIMIT, *,
                           entries=None, covariance: bool = False) -> np.ndarray:
    r"""The exact variance of every entry of the Algorithm 1 estimate, without sampling.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    k : int, float or mapping, optional
        Draws per vertex, as for :func:`sample_paths` (default 1).
    max_entries : int, optional
        The most entries on paths to one output the dense covariance may hold
        (default :data:`EXACT_VARIANCE_LIMIT`).
    entries : int, float or mapping, optional
        The second level on a graph with arrays, as for :func:`sample_paths`.
    covariance : bool, optional
        Return the covariance of each row of the estimate instead.

    Returns
    -------
    numpy.ndarray
        Shape ``(output entries, input entries)`` (``(n_outputs, n_inputs)`` on a
        graph of numbers); with ``covariance``, ``(output entries, input
        entries, input entries)``.

    Raises
    ------
    ValueError
        For a bad ``k`` or ``entries``, or more than ``max_entries`` entries on
        the paths to an output.

    See Also
    --------
    sample_paths : What it is the variance of.
    minirad.randomized.moments.estimate_variance : The recursion, which also
        serves random matrix injection.

    Notes
    -----
    A recursion over the vertices in reverse topological order, for one output
    entry ``y`` at a time; its cost is a dense covariance over the R entries on
    paths to ``y``, O(R^2) memory and O(R * edges) time per output entry.

    Derivation, on a graph of numbers.  Fix ``y`` and write ``\bar z`` for dy/dz
    and ``\hat z`` for its estimate (reverse accumulation on ``Q``).  Skipped
    vertices change no input's estimate (a skipped vertex is unreachable from the
    inputs in ``Q``), so we may let every vertex draw, independently.  Then

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
    ``J[y, theta]`` is ``C(theta, theta)``.  On an array graph the same
    recursion runs over the entries, partials becoming blocks, and a vertex
    sampled inside adds ``(n Diag(M) - M) / m`` to its covariance, ``M`` the
    second moment of its adjoint (the moments of ``P_v``).

    Examples
    --------
    >>> from minirad import examples
    >>> g = examples.independent_paths(4, 3, partials="random", rng=0)
    >>> float(path_sampling_variance(g, k=1)[0, 0]) > 0.0
    True
    >>> path_sampling_variance(examples.interleaved(3, 2), k=2).tolist()  # equal paths
    [[0.0]]
    """
    draws = draws_per_vertex(g, k)
    inside = entries_per_vertex(g, entries)
    if not on_paths(g).any():  # no input reaches an output: every estimate is 0
        rows, columns = _jacobian_shape(g)
        return np.zeros((rows, columns, columns) if covariance else (rows, columns))
    laws = {v: ProjectionLaw(Layout(g.shape(v)), "sample", int(m))
            for v, m in enumerate(inside.tolist()) if m}
    return estimate_variance(g, draws, vertex_laws=laws, max_entries=max_entries,
                             covariance=covariance)
