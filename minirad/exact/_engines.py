"""The fast engines behind minirad's reference recurrences (private: read
:mod:`minirad.graph.labels`, :mod:`minirad.exact.sweeps`, :mod:`minirad.exact.paths` and
:mod:`minirad.randomized.sampling` first).

Everything here computes exactly what a plain recurrence over the edge
labels computes -- :func:`minirad.graph.labels.forward` and
:func:`minirad.graph.labels.reverse` on floats, the same on counts -- only
faster, by working on numpy arrays or sparse matrices.  ``tests/test_engines.py`` holds each
engine equal to its reference.

* sweeps over floats: ``run_loop`` (a Python loop over the edge lists, for
  small graphs), ``run_levels`` (one sparse product per wavefront of the
  topological levels, for wide graphs), ``run_triangular`` (SciPy's unit
  triangular solve ``(I - L) T = S``, for large deep graphs); ``propagate``
  picks one (``propagate_units`` for unit seeds, which the solve takes ready
  negated); ``sweep_cost`` counts a sweep's operations from reachability;
* path counts: ``path_counts`` and ``total_counts`` carry Python-int counts
  for several seeds in one pass; ``walk_products`` enumerates paths with
  their prefix products, never entering a vertex that reaches no target;
* batched Algorithm 1 lives in :mod:`minirad.randomized._batches`.

Derived arrays are kept on the graph with :meth:`minirad.graph.lcg.LCG.memo`
under keys ``"sweeps.*"``, ``"paths.*"`` and ``"graph.levels"``.  This
module imports nothing from minirad, so any module may use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import add

import numpy as np

from ..graph.levels import level_count, levels_within, ranges

# Below this many edge-times-seed updates the Python loop (~0.1-0.2 us per
# update) beats the solver, whose call costs a few hundred microseconds.
LOOP_WORK = 4_000
# A wavefront costs one sparse product (~5-10 us of call overhead); measured
# on layered graphs of 10^5 and 10^6 edges, wavefronts beat the solver while
# they carry more than about this many edges each; deeper graphs go to the solver.
EDGES_PER_LEVEL = 700
MIN_LEVELS = 8

# ------------------------------------------------------------------ engines
def edge_lists(g):
    """The edge arrays as Python lists, in order and reversed (memoized)."""
    def lists():
        src, dst, par = g.sources.tolist(), g.targets.tolist(), g.partials.tolist()
        return src, dst, par, src[::-1], dst[::-1], par[::-1]

    return g.memo("sweeps.lists", lists)


def run_loop(g, seeds: np.ndarray, forward: bool) -> np.ndarray:
    src, dst, par, rsrc, rdst, rpar = edge_lists(g)
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


@dataclass(frozen=True)
class Schedule:
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
    depth: int


def level_schedule(g, cap: int | None) -> Schedule | None:
    """The wavefront schedule (memoized), or None when the graph has more than
    ``cap`` levels."""
    if "sweeps.schedule" not in g.memos:
        level = levels_within(g, cap)
        if level is None:
            return None
        return g.memo("sweeps.schedule", lambda: build_schedule(g, level, level_count(level)))
    schedule = g.memos["sweeps.schedule"]
    return schedule if cap is None or schedule.depth <= cap else None


def build_schedule(g, level: np.ndarray, depth: int) -> Schedule:
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
    by_head = ranges(in_ptr[perm], in_ptr[perm + 1])
    by_tail = out_order[ranges(out_ptr[perm], out_ptr[perm + 1])]
    forward = blocks(by_head, np.diff(in_ptr)[perm], tail,
                     [(starts[k], starts[k + 1]) for k in range(1, depth)])
    reverse = blocks(by_tail, np.diff(out_ptr)[perm], head,
                     [(starts[k], starts[k] + with_succ[k]) for k in range(depth - 2, -1, -1)])
    if np.array_equal(perm, np.arange(n)):
        return Schedule(None, None, forward, reverse, depth)
    return Schedule(perm, position, forward, reverse, depth)


def run_levels(g, seeds: np.ndarray, forward: bool) -> np.ndarray:
    schedule = level_schedule(g, cap=None)
    x = seeds[schedule.perm] if schedule.perm is not None else seeds.copy()
    if x.shape[1] == 1:  # a vector product is cheaper than a one-column matrix product
        x = x[:, 0]
    for lo, hi, matrix in (schedule.forward if forward else schedule.reverse):
        x[lo:hi] += matrix @ x
    x = x.reshape(len(x), -1)
    return x[schedule.position] if schedule.position is not None else x


def unit_lower(g):
    """``I - L`` in CSC form, L[v, u] = dv/du: the forward sweep's system, for
    SciPy's public solver (the fallback of :func:`run_triangular`).

    Column u holds the diagonal 1 and then -dv/du for each successor v in
    increasing order, which is exactly the out-edge listing, so the matrix is
    assembled directly in canonical form with 32-bit indices (what SciPy's
    solver wants, sparing it a conversion on every call).
    """
    def assemble():
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
        return matrix

    return g.memo("sweeps.matrix", assemble)


def _substitution():
    """SciPy's compiled sparse substitution (what ``spsolve_triangular`` calls
    once it has checked and copied its input), or None where this SciPy does
    not have it under that name.  Private to SciPy, so its use is guarded:
    :func:`run_triangular` falls back to the public solver."""
    try:
        from scipy.sparse.linalg._dsolve._superlu import gstrs
    except ImportError:  # pragma: no cover - depends on the SciPy version
        return None
    return gstrs


def strict_upper(g):
    """The reverse sweep's system ``(I - L^T) A = S``, negated, as SuperLU's
    pair of factors: ``L^T - I``.

    SuperLU keeps the diagonal of its U factor with the (otherwise unit)
    L factor, so the pair is an "identity" L whose stored diagonal is -1 and
    a U holding ``L^T`` itself: column v lists v's in-edges, which is how the
    edges are already grouped, so the partials are used as they are (no
    negated copy) and only the indices are narrowed to 32 bits.  Solving
    with the right-hand side negated gives the adjoints, or, transposed,
    the tangents: the same operations as for ``I - L^T`` up to the sign of
    every term, so the same numbers bit for bit.
    """
    def assemble():
        n = g.n_vertices
        minus_identity = (np.full(n, -1.0), np.arange(n, dtype=np.intc),
                          np.arange(n + 1, dtype=np.intc))
        return minus_identity, (g.partials, g.sources.astype(np.intc),
                                g.in_edges_ptr.astype(np.intc))

    return g.memo("sweeps.strict_upper", assemble)


def run_triangular(g, seeds: np.ndarray, forward: bool) -> np.ndarray:
    """The sweep as a unit triangular solve: reverse ``(I - L)^T A = S``,
    forward ``(I - L) T = S``, both on the one (negated) matrix of
    :func:`strict_upper`, so with ``-S`` on the right (the forward sweep
    solves with its transpose)."""
    if not can_solve_negated(g):
        return run_triangular_public(g, seeds, forward)
    return solve_negated(g, np.negative(seeds, dtype=np.float64), forward)


def can_solve_negated(g) -> bool:
    """Whether :func:`solve_negated` can run: SciPy's compiled substitution
    is there and the graph's numbers fit its 32-bit indices."""
    return _substitution() is not None and max(g.n_vertices, g.n_edges) < np.iinfo(np.intc).max


def solve_negated(g, negated_seeds: np.ndarray, forward: bool) -> np.ndarray:
    """:func:`run_triangular` for seeds given already negated (an (n, k)
    block, or one seed as a vector), left untouched: SciPy copies its
    right-hand side before solving in place."""
    n = g.n_vertices
    (l_data, l_rows, l_ptr), (u_data, u_rows, u_ptr) = strict_upper(g)
    rhs = negated_seeds[:, 0] if negated_seeds.ndim == 2 and negated_seeds.shape[1] == 1 \
        else negated_seeds
    x, info = _substitution()("T" if forward else "N", n, n, l_data, l_rows, l_ptr,
                              n, len(u_data), u_data, u_rows, u_ptr, rhs)
    if info:  # pragma: no cover - a unit triangular system is never singular
        raise RuntimeError(f"the triangular solve failed (SuperLU info {info})")
    return np.asarray(x, dtype=np.float64).reshape(n, -1)


def negated_unit_seeds(g, vertices: Sequence[int]) -> np.ndarray:
    """-1 at ``vertices[c]`` in column c, 0 elsewhere: unit seeds, negated for
    :func:`solve_negated`.  A single seed's vector is kept (read-only, under
    ``"sweeps.negated_seed"``, one vertex at a time), so sweeping a graph
    again from the same vertex builds nothing."""
    n, k = g.n_vertices, len(vertices)
    if k == 1:
        v = int(vertices[0])
        kept = g.memo("sweeps.negated_seed", lambda: [None])  # [(vertex, its column)]
        entry = kept[0]  # read once: another thread may replace it (whole) meanwhile
        if entry is None or entry[0] != v:
            column = np.zeros(n)
            column[v] = -1.0
            column.flags.writeable = False
            entry = kept[0] = (v, column)
        return entry[1]
    seeds = np.zeros((n, k), order="F")
    seeds[list(vertices), np.arange(k)] = -1.0
    return seeds


def unit_seeds(n: int, vertices: Sequence[int]) -> np.ndarray:
    """1 at ``vertices[c]`` in column c of an (n, len(vertices)) block, 0 elsewhere."""
    seeds = np.zeros((n, len(vertices)))
    seeds[list(vertices), np.arange(len(vertices))] = 1.0
    return seeds


def run_triangular_public(g, seeds: np.ndarray, forward: bool) -> np.ndarray:
    """:func:`run_triangular` through SciPy's public ``spsolve_triangular``."""
    from scipy.sparse.linalg import spsolve_triangular

    matrix = unit_lower(g)
    rhs = seeds[:, 0] if seeds.shape[1] == 1 else seeds
    if forward:
        x = spsolve_triangular(matrix, rhs, lower=True, unit_diagonal=True)
    else:  # the transpose is a CSR view, which scipy solves without converting
        x = spsolve_triangular(matrix.T, rhs, lower=False, unit_diagonal=True)
    return np.asarray(x, dtype=np.float64).reshape(g.n_vertices, -1)


def engine_for(g, k: int, engine: str) -> str:
    if engine != "auto":
        return engine
    if g.n_edges * k <= LOOP_WORK:
        return "loop"
    # The first sweep of a graph goes to the solver, which reads the edge
    # arrays as they are; only a graph swept again pays for the wavefront
    # schedule (levels, an out-edge sort), which then makes wide graphs faster.
    sweeps = g.memo("sweeps.count", lambda: [0])
    sweeps[0] += 1
    if sweeps[0] == 1 and "sweeps.schedule" not in g.memos:
        return "triangular"
    cap = max(MIN_LEVELS, g.n_edges // EDGES_PER_LEVEL)
    return "levels" if level_schedule(g, cap) is not None else "triangular"


def propagate(g, seeds: np.ndarray, forward: bool, engine: str) -> np.ndarray:
    """Solve the sweep recurrence for a (n_vertices, k) block of seeds."""
    if seeds.shape[1] == 0 or g.n_edges == 0:
        return seeds.copy()
    return RUNS[engine_for(g, seeds.shape[1], engine)](g, seeds, forward)


def propagate_units(g, vertices: Sequence[int], forward: bool, engine: str) -> np.ndarray:
    """:func:`propagate` of unit seeds, one column per vertex of ``vertices``:
    the triangular solve takes them ready negated (:func:`negated_unit_seeds`)."""
    if not vertices or g.n_edges == 0:
        return unit_seeds(g.n_vertices, vertices)
    chosen = engine_for(g, len(vertices), engine)
    if chosen == "triangular" and can_solve_negated(g):
        return solve_negated(g, negated_unit_seeds(g, vertices), forward)
    return RUNS[chosen](g, unit_seeds(g.n_vertices, vertices), forward)


RUNS = {"loop": run_loop, "levels": run_levels, "triangular": run_triangular}


# ------------------------------------------------------------------ counting
# Sums of non-negative integers below this are exact in float64, however
# they are ordered, as every partial sum is below the final one too.
EXACT_FLOATS = 2**53


def path_counts(g, ends: Sequence[int], forward: bool) -> list[list[int]]:
    """``counts[v][c]``: paths from ``ends[c]`` to ``v`` (forward) or from ``v``
    to ``ends[c]`` (backward), as Python ints.

    First as floats, by the compiled triangular solve with every label 1;
    the counts are exact when none reaches 2**53 (checked).  Otherwise, one
    pass over the edges with Python ints (:func:`exact_path_counts`), which
    is also the quicker way on small graphs."""
    if g.n_edges * len(ends) <= LOOP_WORK:
        return exact_path_counts(g, ends, forward)
    counts = float_path_counts(g, ends, forward)
    if counts is not None:
        return counts
    return exact_path_counts(g, ends, forward)


def float_path_counts(g, ends: Sequence[int], forward: bool) -> list[list[int]] | None:
    """:func:`path_counts` in float64, or None when a count reaches 2**53 (or
    the compiled solver is not available)."""
    gstrs = _substitution()
    n, k = g.n_vertices, len(ends)
    if gstrs is None or g.n_edges == 0 or max(n, g.n_edges) >= np.iinfo(np.intc).max:
        return None
    (l_data, l_rows, l_ptr), (_, u_rows, u_ptr) = strict_upper(g)
    # every label 1 in the negated system of strict_upper, so -1 on the right
    unit = g.memo("paths.ones", lambda: np.ones(g.n_edges))
    rhs = np.zeros((n, k), order="F")
    rhs[list(ends), np.arange(k)] = -1.0
    x, info = gstrs("T" if forward else "N", n, n, l_data, l_rows, l_ptr,
                    n, len(unit), unit, u_rows, u_ptr, rhs[:, 0] if k == 1 else rhs)
    x = np.asarray(x).reshape(n, k)
    if info or not x.max(initial=0.0) < EXACT_FLOATS:  # also catches inf and nan
        return None
    return x.astype(np.int64).tolist()


def exact_path_counts(g, ends: Sequence[int], forward: bool) -> list[list[int]]:
    """:func:`path_counts` with Python ints, one pass over the edges."""
    k = len(ends)
    if k == 1:
        return [[c] for c in total_counts(g, ends, forward)]
    counts = [[0] * k for _ in range(g.n_vertices)]
    for c, v in enumerate(ends):
        counts[v][c] = 1
    src, dst = g.sources.tolist(), g.targets.tolist()
    # edges are grouped by target in topological order, so one pass in order
    # (or in reverse order) sees every vertex's count complete before using it
    pairs = zip(src, dst) if forward else zip(reversed(dst), reversed(src))
    for near, far in pairs:
        row = counts[near]
        if any(row):
            counts[far] = list(map(add, counts[far], row))
    return counts


def total_counts(g, ends: Sequence[int], forward: bool) -> list[int]:
    """Paths from any of ``ends`` to each vertex (forward), or from each vertex
    to any of ``ends`` (backward): one column, so plain ints suffice."""
    counts = [0] * g.n_vertices
    for v in ends:
        counts[v] = 1
    src, dst = g.sources.tolist(), g.targets.tolist()
    pairs = zip(src, dst) if forward else zip(reversed(dst), reversed(src))
    for near, far in pairs:
        counts[far] += counts[near]
    return counts




# -------------------------------------------------------------- path walks
def successor_lists(g) -> tuple[list[list[int]], list[list]]:
    """Per vertex: successors in increasing order and the labels to them (memoized)."""
    def lists():
        order, ptr = g.out_edges_csr
        heads = g.targets[order].tolist()
        labels = g.labels
        labels = labels[order].tolist() if isinstance(labels, np.ndarray) else [
            labels[e] for e in order.tolist()]
        bounds = ptr.tolist()
        return ([heads[bounds[v]:bounds[v + 1]] for v in range(g.n_vertices)],
                [labels[bounds[v]:bounds[v + 1]] for v in range(g.n_vertices)])

    return g.memo("paths.successors", lists)


def walk_products(g, sources: Sequence[int], targets: Sequence[int], useful: np.ndarray,
                  products: bool = True):
    """Yield ``(path, path label)`` for every source-to-target path, depth first.

    The reference is :func:`minirad.graph.labels.walk` with
    :func:`minirad.graph.labels.path_label` per path; here each path's label
    extends its prefix's by one multiply, and the walk never enters a vertex
    that cannot reach a target (``useful``, a mask over the vertices).  A
    path of one vertex has label ``g.algebra.one``.  With ``products=False``
    only the paths are wanted: every label is None and nothing is multiplied.
    """
    multiply = g.algebra.multiply
    succ, label = successor_lists(g)
    useful = useful.tolist()
    is_target = set(targets)
    for s in sources:
        if not useful[s]:
            continue
        path, prefixes = [s], [None]  # None: the empty product, the identity
        # stack[i] is the position of the next successor of path[i] to try
        stack = [0]
        if s in is_target:
            yield (s,), g.algebra.one
        while stack:
            v = path[-1]
            options = succ[v]
            i = stack[-1]
            while i < len(options) and not useful[options[i]]:
                i += 1
            if i == len(options):
                path.pop()
                prefixes.pop()
                stack.pop()
                continue
            stack[-1] = i + 1
            w = options[i]
            path.append(w)
            prefix = prefixes[-1]
            prefixes.append(None if not products else label[v][i] if prefix is None
                            else multiply(label[v][i], prefix))
            stack.append(0)
            if w in is_target:
                yield tuple(path), prefixes[-1]
