"""Forward and reverse sweeps: the Jacobian by dynamic programming on the LCG.

A forward sweep seeds an input with tangent 1 and pushes tangents along
the edges in topological order: the tangent of ``v`` is the sum over its
in-edges of partial times the tangent of the predecessor.  A reverse sweep
seeds an output with adjoint 1 and pulls adjoints back in reverse order:
the adjoint of ``u`` is the sum over its out-edges of partial times the
adjoint of the successor, so a vertex used several times receives the sum
of its partial adjoints (the lecture's ``node_to_grad`` algorithm).  Both
are Bauer's path sum with the common prefixes (forward) or suffixes
(reverse) of the paths factored out.

Every exact method returns an :class:`Accumulation`: the Jacobian plus the
multiplications and additions it took.

Cost convention
---------------
A sweep for one seed skips the vertices the seed cannot reach: their
tangents (adjoints) are structurally zero.  For each seed, every edge whose
tail the seed reaches (forward) or whose head reaches the seed (reverse) is
one multiplication, partials of ±1 included, and a vertex that combines
``t >= 1`` such edges costs ``t - 1`` additions.  A sweep over several
seeds costs the sum over its seeds.  The vectorised engines below may
multiply some structural zeros in bulk; the counts describe the algorithm,
not how numpy blocks the arithmetic.

Engines
-------
Edges are grouped by target and vertices numbered topologically, so one
pass over the edge arrays in order is a forward sweep and one pass in
reverse order is a reverse sweep.  Three engines run that recurrence:

* ``"loop"``: a plain Python loop over the edge lists; no call overhead,
  so it wins on small graphs such as traced scalar programs;
* ``"levels"``: vertices are grouped into wavefronts (topological levels)
  and each wavefront is one sparse matrix product; it wins when the graph
  is wide, i.e. has many edges per level;
* ``"triangular"``: the sweep is the unit triangular solve
  ``(I - L) T = S`` (forward) or ``(I - L)^T A = S`` (reverse), with ``L``
  the strictly lower triangular matrix of partials, done by SciPy's
  compiled solver; it wins on large graphs with long dependency chains.

``engine="auto"`` picks one from the graph's size and number of levels.
Derived schedules are cached on the graph under keys ``"sweeps.*"``.

>>> from minirad import examples
>>> g = examples.lecture()
>>> result = reverse_sweep(g)
>>> result.jacobian.round(3)
array([[5.5  , 1.716]])
>>> result.multiplications, result.additions
(8, 2)
>>> forward_sweep(g, inputs=["x1"]).tangents[:, 0].round(3).tolist()
[1.0, 0.0, 0.5, 5.0, 0.0, 5.5, 5.5]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

from .graph import LCG, reachable, takes_lcg

ENGINES = ("auto", "loop", "levels", "triangular")

# Below this many edge-times-seed updates the Python loop (~0.1-0.2 us per
# update) beats the solver, whose call costs a few hundred microseconds.
_LOOP_WORK = 4_000
# A wavefront costs one sparse product (~5-10 us of call overhead); measured
# on layered graphs of 10^5 and 10^6 edges, wavefronts beat the solver while
# they carry more than about this many edges each; deeper graphs go to the solver.
_EDGES_PER_LEVEL = 700
_MIN_LEVELS = 8


# --------------------------------------------------------------- the result
@dataclass(frozen=True, eq=False)
class Accumulation:
    """A Jacobian together with what it cost to accumulate.

    ``jacobian`` has shape ``(n_outputs, n_inputs)`` (or the selected rows
    or columns of a sweep over a subset of seeds); ``multiplications`` and
    ``additions`` follow the method's cost convention; ``method`` names it.

    Sweeps also keep their per-vertex values, one column per seed:
    ``tangents[v, j]`` is d v / d seeds[j] (forward sweeps) and
    ``adjoints[v, j]`` is d seeds[j] / d v (reverse sweeps).
    """

    jacobian: np.ndarray
    multiplications: int
    additions: int
    method: str
    tangents: np.ndarray | None = field(default=None, kw_only=True)
    adjoints: np.ndarray | None = field(default=None, kw_only=True)
    seeds: tuple[int, ...] = field(default=(), kw_only=True)

    @property
    def operations(self) -> int:
        """Multiplications plus additions."""
        return self.multiplications + self.additions

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, jacobian shape "
                f"{self.jacobian.shape}, multiplications={self.multiplications}, "
                f"additions={self.additions})")


# ---------------------------------------------------------------- arguments
def _select(g: LCG, given, pool: tuple[int, ...], role: str) -> tuple[int, ...]:
    """Resolve a seed selection (None, one vertex or several) to numbers."""
    if given is None:
        return pool
    if isinstance(given, (str, Integral)) and not isinstance(given, bool):
        given = [given]
    elif isinstance(given, (bytes, bool)) or not isinstance(given, (Sequence, np.ndarray)):
        raise TypeError(f"{role}s must be a vertex, a sequence of vertices or None, not "
                        f"{type(given).__name__}")
    members = set(pool)
    chosen, seen = [], set()
    for vertex in given:
        v = g.index(vertex)
        if v not in members:
            valid = ", ".join(g.names[p] for p in pool[:8]) + (", ..." if len(pool) > 8 else "")
            raise ValueError(f"{g.names[v]} is not an {role} of the graph; its {role}s are "
                             f"{valid or 'none'}")
        if v in seen:
            raise ValueError(f"{role} {g.names[v]} is selected twice")
        seen.add(v)
        chosen.append(v)
    return tuple(chosen)


def _check_engine(engine) -> str:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; valid engines are "
                         f"{', '.join(map(repr, ENGINES))}")
    return engine


def _seed_block(name: str, given, length: int, seeds_first: bool) -> tuple[np.ndarray, bool]:
    """Validate a jvp/vjp argument; return it as (length, k) and whether it was 1-D."""
    try:
        array = np.asarray(given, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if array.ndim == 1 and array.shape[0] == length:
        block, flat = array[:, None], True
    elif array.ndim == 2 and array.shape[1 if seeds_first else 0] == length:
        block, flat = (array.T if seeds_first else array), False
    else:
        layout = f"(k, {length})" if seeds_first else f"({length}, k)"
        raise ValueError(f"{name} has shape {array.shape}; expected ({length},) or {layout}")
    if not np.all(np.isfinite(block)):
        raise ValueError(f"{name} contains non-finite entries; seeds must be finite")
    return block, flat


# ------------------------------------------------------------------ engines
def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], stops[i])`` for all i, vectorised."""
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total)


def _edge_lists(g: LCG):
    if "sweeps.lists" not in g._cache:
        src, dst, par = g.sources.tolist(), g.targets.tolist(), g.partials.tolist()
        g._cache["sweeps.lists"] = (src, dst, par, src[::-1], dst[::-1], par[::-1])
    return g._cache["sweeps.lists"]


def _run_loop(g: LCG, seeds: np.ndarray, forward: bool) -> np.ndarray:
    src, dst, par, rsrc, rdst, rpar = _edge_lists(g)
    values = np.empty_like(seeds)
    for c in range(seeds.shape[1]):
        x = seeds[:, c].tolist()
        if forward:
            for s, d, p in zip(src, dst, par):
                x[d] += p * x[s]
        else:
            for s, d, p in zip(rsrc, rdst, rpar):
                x[s] += p * x[d]
        values[:, c] = x
    return values


def _levels(g: LCG, cap: int | None) -> np.ndarray | None:
    """Topological level of every vertex (longest path from a vertex without
    predecessors), by Kahn's algorithm one wavefront at a time; None when
    there are more than ``cap`` levels."""
    n = g.n_vertices
    if cap is not None and _chain_length(g, cap) > cap:
        return None
    order, ptr = g.out_edges_csr
    heads = g.targets[order]
    remaining = np.diff(g.in_edges_ptr)
    level = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(remaining == 0)
    depth = 0
    while len(frontier):
        if cap is not None and depth >= cap:
            return None
        level[frontier] = depth
        ends = heads[_ranges(ptr[frontier], ptr[frontier + 1])]
        if len(ends) == 0:
            break
        low = int(ends.min())
        span = int(ends.max()) - low + 1
        if span <= 4 * len(ends):  # a dense window: counting beats sorting
            hits = np.bincount(ends - low, minlength=span)
            reached = np.flatnonzero(hits)
            hits = hits[reached]
            reached += low
        else:
            reached, hits = np.unique(ends, return_counts=True)
        remaining[reached] -= hits
        frontier = reached[remaining[reached] == 0]
        depth += 1
    return level


def _chain_length(g: LCG, limit: int) -> int:
    """Vertices on one long path, found by walking back from the last vertex to
    its latest predecessor; a cheap lower bound on the number of levels that
    spares a deep graph a long, doomed level count.  Stops past ``limit``."""
    ptr = g.in_edges_ptr
    has_pred = np.flatnonzero(ptr[1:] > ptr[:-1])
    if len(has_pred) == 0:
        return 1 if g.n_vertices else 0
    latest = np.full(g.n_vertices, -1, dtype=np.int64)
    latest[has_pred] = np.maximum.reduceat(g.sources, ptr[has_pred])
    step = latest.tolist()
    v, length = int(has_pred[-1]), 1
    while v >= 0 and length <= limit:
        v = step[v]
        length += 1
    return length - (v < 0)


@dataclass(frozen=True)
class _Schedule:
    """Wavefronts in a level-major renumbering of the vertices.

    ``perm[i]`` is the vertex at position i (None when the numbering is
    already level-major).  ``forward`` holds, per level from the second on,
    the rows ``lo:hi`` of its vertices and the sparse matrix of their
    in-edges over all positions; ``reverse`` the same for out-edges, deepest
    level first, covering only vertices that have successors.
    """

    perm: np.ndarray | None
    position: np.ndarray | None
    forward: list
    reverse: list


def _level_schedule(g: LCG, cap: int | None) -> _Schedule | None:
    """The wavefront schedule, or None when the graph has more than ``cap`` levels."""
    state = g._cache.get("sweeps.levels")
    if state is not None:
        schedule, depth, tried = state
        if schedule is not None:
            return schedule if cap is None or depth <= cap else None
        if cap is not None and cap <= tried:
            return None
    level = _levels(g, cap)
    if level is None:
        g._cache["sweeps.levels"] = (None, None, cap)
        return None
    depth = int(level.max()) + 1 if len(level) else 0
    schedule = _build_schedule(g, level, depth)
    g._cache["sweeps.levels"] = (schedule, depth, None)
    return schedule


def _build_schedule(g: LCG, level: np.ndarray, depth: int) -> _Schedule:
    import scipy.sparse as sp

    n = g.n_vertices
    leaf = g.out_degrees == 0
    # level-major; within a level, vertices with successors first so the
    # reverse sweep's rows are a contiguous block
    perm = np.lexsort((leaf, level))
    position = np.empty(n, dtype=np.int64)
    position[perm] = np.arange(n)
    starts = np.searchsorted(level[perm], np.arange(depth + 1))
    with_succ = (np.add.reduceat((~leaf[perm]).astype(np.int64), starts[:-1]) if depth
                 else np.zeros(0, dtype=np.int64))
    tail, head = position[g.sources], position[g.targets]
    index_type = np.int32 if n < 2**31 - 1 and g.n_edges < 2**31 - 1 else np.int64
    in_ptr = g.in_edges_ptr
    out_order, out_ptr = g.out_edges_csr

    def blocks(edges, degree, cols_of, row_spans):
        """Per span of rows, a CSR matrix of the given edges (grouped by row)."""
        cols, data = cols_of[edges].astype(index_type), g.partials[edges]
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(degree, out=ptr[1:])
        out = []
        for lo, hi in row_spans:
            if hi > lo and ptr[hi] > ptr[lo]:
                e0, e1 = ptr[lo], ptr[hi]
                matrix = sp.csr_array(
                    (data[e0:e1], cols[e0:e1], (ptr[lo:hi + 1] - e0).astype(index_type)),
                    shape=(hi - lo, n))
                out.append((int(lo), int(hi), matrix))
        return out

    # edges grouped by the position of their head (tail), found by reading the
    # in-edge (out-edge) lists of the vertices in position order: no sorting
    by_head = _ranges(in_ptr[perm], in_ptr[perm + 1])
    by_tail = out_order[_ranges(out_ptr[perm], out_ptr[perm + 1])]
    forward = blocks(by_head, np.diff(in_ptr)[perm], tail,
                     [(starts[k], starts[k + 1]) for k in range(1, depth)])
    reverse = blocks(by_tail, np.diff(out_ptr)[perm], head,
                     [(starts[k], starts[k] + with_succ[k]) for k in range(depth - 2, -1, -1)])
    if np.array_equal(perm, np.arange(n)):
        return _Schedule(None, None, forward, reverse)
    return _Schedule(perm, position, forward, reverse)


def _run_levels(g: LCG, seeds: np.ndarray, forward: bool) -> np.ndarray:
    schedule = _level_schedule(g, cap=None)
    x = seeds[schedule.perm] if schedule.perm is not None else seeds.copy()
    if x.shape[1] == 1:  # a vector product is cheaper than a one-column matrix product
        x = x[:, 0]
    for lo, hi, matrix in (schedule.forward if forward else schedule.reverse):
        x[lo:hi] += matrix @ x
    x = x.reshape(len(x), -1)
    return x[schedule.position] if schedule.position is not None else x


def _unit_lower(g: LCG):
    """``I - L`` in CSC form, L[v, u] = dv/du: the forward sweep's system.

    Column u holds the diagonal 1 and then -dv/du for each successor v in
    increasing order, which is exactly the out-edge listing, so the matrix is
    assembled directly in canonical form with 32-bit indices (what SciPy's
    solver wants, sparing it a conversion on every call).
    """
    if "sweeps.matrix" not in g._cache:
        import scipy.sparse as sp

        n, m = g.n_vertices, g.n_edges
        order, ptr = g.out_edges_csr
        index_type = np.int32 if n + m < 2**31 - 1 else np.int64
        indptr = (ptr + np.arange(n + 1)).astype(index_type)
        diagonal = indptr[:-1]
        # the k-th out-edge overall sits after the diagonals of columns 0..its source
        off = np.arange(m) + g.sources[order] + 1
        indices = np.empty(n + m, dtype=index_type)
        data = np.empty(n + m)
        indices[diagonal] = np.arange(n)
        data[diagonal] = 1.0
        indices[off] = g.targets[order]
        data[off] = -g.partials[order]
        matrix = sp.csc_array((data, indices, indptr), shape=(n, n))
        matrix.has_sorted_indices = True
        g._cache["sweeps.matrix"] = matrix
    return g._cache["sweeps.matrix"]


def _run_triangular(g: LCG, seeds: np.ndarray, forward: bool) -> np.ndarray:
    from scipy.sparse.linalg import spsolve_triangular

    matrix = _unit_lower(g)
    rhs = seeds[:, 0] if seeds.shape[1] == 1 else seeds
    if forward:
        x = spsolve_triangular(matrix, rhs, lower=True, unit_diagonal=True)
    else:  # the transpose is a CSR view, which scipy solves without converting
        x = spsolve_triangular(matrix.T, rhs, lower=False, unit_diagonal=True)
    return np.asarray(x, dtype=np.float64).reshape(g.n_vertices, -1)


def _engine_for(g: LCG, k: int, engine: str) -> str:
    if engine != "auto":
        return engine
    if g.n_edges * k <= _LOOP_WORK:
        return "loop"
    cap = max(_MIN_LEVELS, g.n_edges // _EDGES_PER_LEVEL)
    return "levels" if _level_schedule(g, cap) is not None else "triangular"


def _propagate(g: LCG, seeds: np.ndarray, forward: bool, engine: str) -> np.ndarray:
    """Solve the sweep recurrence for a (n_vertices, k) block of seeds."""
    if seeds.shape[1] == 0 or g.n_edges == 0:
        return seeds.copy()
    chosen = _engine_for(g, seeds.shape[1], engine)
    if chosen == "loop":
        return _run_loop(g, seeds, forward)
    if chosen == "levels":
        return _run_levels(g, seeds, forward)
    return _run_triangular(g, seeds, forward)


# ------------------------------------------------------------------- counts
def _sweep_cost(g: LCG, seeds: Sequence[int], forward: bool) -> tuple[int, int]:
    """Multiplications and additions of a sweep over ``seeds`` (see the module
    docstring); per-seed figures are cached, as they depend only on structure."""
    cache = g._cache.setdefault("sweeps.cost." + ("forward" if forward else "reverse"), {})
    missing = [seed for seed in seeds if seed not in cache]
    if missing:
        degree = g.out_degrees if forward else np.diff(g.in_edges_ptr)
        for seed in missing:
            reached = reachable(g, [seed], forward)
            edges = int(degree[reached].sum())
            # each reached vertex but the seed combines >= 1 traversed edges
            cache[seed] = (edges, edges - (int(reached.sum()) - 1))
    multiplications = sum(cache[seed][0] for seed in seeds)
    additions = sum(cache[seed][1] for seed in seeds)
    return multiplications, additions


# ------------------------------------------------------------------- sweeps
# Without per-vertex values to keep, seeds are swept in blocks holding about
# this many values, so a Jacobian of a huge graph never needs n_vertices x
# n_seeds memory at once.
_BLOCK_VALUES = 1 << 22


def _sweep(g: LCG, chosen: tuple[int, ...], forward: bool, engine: str,
           keep_values: bool) -> tuple[np.ndarray | None, np.ndarray]:
    """Per-vertex values (or None) and their rows at the far end (outputs for a
    forward sweep, inputs for a reverse one), one column per seed."""
    n, k = g.n_vertices, len(chosen)
    far = list(g.outputs if forward else g.inputs)
    block = k if keep_values else max(1, min(k, _BLOCK_VALUES // max(n, 1)))
    values = None
    ends = np.empty((len(far), k))
    for lo in range(0, k, block) if k else []:
        hi = min(k, lo + block)
        seeds = np.zeros((n, hi - lo))
        seeds[list(chosen[lo:hi]), np.arange(hi - lo)] = 1.0
        swept = _propagate(g, seeds, forward, engine)
        ends[:, lo:hi] = swept[far, :]
        if keep_values:
            values = swept
    if keep_values and values is None:
        values = np.zeros((n, 0))
    return values, ends


@takes_lcg
def forward_sweep(g: LCG, inputs=None, engine: str = "auto",
                  keep_values: bool = True) -> Accumulation:
    """Tangents of every vertex with respect to each selected input.

    ``inputs`` is None (all inputs), one input or a sequence of inputs, by
    name or number.  ``jacobian`` has one column per selected input;
    ``tangents`` has shape ``(n_vertices, len(inputs))``, or is None with
    ``keep_values=False``, which sweeps the seeds in memory-bounded blocks.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> r = forward_sweep(g, inputs="x2")
    >>> r.jacobian.round(3), r.multiplications, r.additions
    (array([[1.716]]), 5, 1)
    """
    engine = _check_engine(engine)
    chosen = _select(g, inputs, g.inputs, "input")
    tangents, jac = _sweep(g, chosen, True, engine, keep_values)
    multiplications, additions = _sweep_cost(g, chosen, True)
    return Accumulation(jac, multiplications, additions, "forward", tangents=tangents,
                        seeds=chosen)


@takes_lcg
def reverse_sweep(g: LCG, outputs=None, engine: str = "auto",
                  keep_values: bool = True) -> Accumulation:
    """Adjoints of every vertex for each selected output.

    ``outputs`` is None (all outputs), one output or a sequence of outputs.
    ``jacobian`` has one row per selected output; ``adjoints`` has shape
    ``(n_vertices, len(outputs))``, or is None with ``keep_values=False``.

    >>> from minirad import examples
    >>> r = reverse_sweep(examples.lecture())
    >>> r.adjoints[:, 0].round(3).tolist()
    [5.5, 1.716, 1.0, 1.0, -1.0, 1.0, 1.0]
    """
    engine = _check_engine(engine)
    chosen = _select(g, outputs, g.outputs, "output")
    adjoints, jac_t = _sweep(g, chosen, False, engine, keep_values)
    multiplications, additions = _sweep_cost(g, chosen, False)
    return Accumulation(jac_t.T, multiplications, additions, "reverse", adjoints=adjoints,
                        seeds=chosen)


@takes_lcg
def jvp(g: LCG, v, engine: str = "auto") -> np.ndarray:
    """Jacobian-vector product ``J @ v`` by one forward sweep per column of v.

    ``v`` has shape ``(n_inputs,)`` or ``(n_inputs, k)``; the result has
    shape ``(n_outputs,)`` or ``(n_outputs, k)``.

    >>> from minirad import examples
    >>> jvp(examples.lab(), [1.0, 1.0]).round(4)
    array([4.5839])
    """
    engine = _check_engine(engine)
    block, flat = _seed_block("v", v, len(g.inputs), seeds_first=False)
    seeds = np.zeros((g.n_vertices, block.shape[1]))
    seeds[list(g.inputs), :] = block
    result = _propagate(g, seeds, True, engine)[list(g.outputs), :]
    return result[:, 0] if flat else result


@takes_lcg
def vjp(g: LCG, u, engine: str = "auto") -> np.ndarray:
    """Vector-Jacobian product ``u @ J`` by one reverse sweep per row of u.

    ``u`` has shape ``(n_outputs,)`` or ``(k, n_outputs)``; the result has
    shape ``(n_inputs,)`` or ``(k, n_inputs)``.

    >>> from minirad import examples
    >>> vjp(examples.two_outputs(), [1.0, 0.0]).round(4)
    array([-1.05  , -1.4049])
    """
    engine = _check_engine(engine)
    block, flat = _seed_block("u", u, len(g.outputs), seeds_first=True)
    seeds = np.zeros((g.n_vertices, block.shape[1]))
    seeds[list(g.outputs), :] = block
    result = _propagate(g, seeds, False, engine)[list(g.inputs), :].T
    return result[0] if flat else result
