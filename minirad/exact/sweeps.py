"""Forward and reverse sweeps: the Jacobian by dynamic programming on the LCG.

A forward sweep seeds an input with tangent 1 and pushes tangents along
the edges in topological order: the tangent of ``v`` is the sum over its
in-edges of label times the tangent of the predecessor.  A reverse sweep
seeds an output with adjoint 1 and pulls adjoints back in reverse order:
the adjoint of ``u`` is the sum over its out-edges of the adjoint of the
successor times the label, so a vertex used several times receives the sum
of its partial adjoints (the lecture's ``node_to_grad`` algorithm).  Both
are Bauer's path sum with the common prefixes (forward) or suffixes
(reverse) of the paths factored out.

The same functions run on every graph.  Where a vertex holds an array,
its tangent or adjoint is an array of its shape and an edge label is a
Jacobian block (:mod:`minirad.graph.operators`), so one step of the sweep
is a JVP ``J t`` or a VJP ``a J`` and a diagonal block costs d, not d²
(the RAD paper's vectorized graph, Sec. 3.2).

Every exact method returns an :class:`Accumulation`: the Jacobian plus the
multiplications and additions it took (for sweeps, counted when first read).

Tangents, adjoints and results
------------------------------
:func:`jvp` takes one tangent per input and returns one per output;
:func:`vjp` takes one adjoint per output and returns one per input;
:func:`gradient` returns one per input.  Each side is given, and comes
back, in one form whatever the graph holds: a list with one entry per
vertex, in the graph's order of inputs (outputs), each an array of the
vertex's shape or, for a number, a float (None for zero when given).  Every
entry may carry the same leading *stack* axes, for several products at
once: ``[array of shape (k,), array of shape (k,)]`` are k tangents of two
numbers.  So on a graph of numbers ``jvp(g, [1.0, 0.0])`` is the first
column of the Jacobian, as a list of floats, and on a graph of arrays the
entries have the arrays' shapes.

:func:`gradient` is the VJP of a graph with one number as output, seeded
with 1 in the output's dtype.  :func:`forward_sweep` and
:func:`reverse_sweep` seed unit tangents (adjoints) on every entry of the
selected inputs (outputs) and keep every vertex's values.

Cost convention
---------------
A sweep for one seed skips the vertices the seed cannot reach: their
tangents (adjoints) are structurally zero.  Each edge the sweep traverses
costs the algebra's ``multiply_cost`` (:mod:`minirad.graph.labels`): 1 for
a number, the block's flops for an array, times the number of stacked
seeds, and each vertex that combines ``t >= 1`` traversed edges costs
``t - 1`` of the algebra's additions (1 for a number, one per entry for an
array).  On a graph of numbers: for each seed, every edge whose tail the
seed reaches (forward) or whose head reaches the seed (reverse) is one
multiplication, partials of ±1 included.  A sweep over several seeds costs
the sum over its seeds.  The vectorised engines may multiply some
structural zeros in bulk; the counts describe the algorithm, not how numpy
blocks the arithmetic.

The recurrence
--------------
Edges are grouped by target and vertices numbered topologically, so one
pass over the edges in order is a forward sweep and one pass in reverse
order is a reverse sweep.  That is the whole algorithm; over the graph's
labels (:mod:`minirad.graph.labels`) it reads::

    for u, v, label in edges:                 # forward: tangents
        tangent[v] = add(tangent[v], multiply(label, tangent[u]))
    for u, v, label in reversed(edges):       # reverse: adjoints
        adjoint[u] = add(adjoint[u], multiply(adjoint[v], label))

:func:`minirad.graph.labels.forward` and :func:`minirad.graph.labels.reverse` are
exactly this (skipping vertices not reached, which is what the cost
convention counts), and ``engine="reference"`` runs them.  It is the only
engine for a graph with arrays, which it sweeps with all of a vertex's
unit seeds stacked.  On a graph of numbers the other engines compute the
same numbers faster (:mod:`minirad.exact._engines`, tested equal to the
reference):

* ``"loop"``: the same loop over plain Python float lists, no per-edge
  function calls; best on small graphs such as traced scalar programs;
* ``"levels"``: vertices grouped into wavefronts (topological levels),
  each wavefront one sparse matrix product; best on wide graphs;
* ``"triangular"``: the sweep as the unit triangular solve
  ``(I - L) T = S`` (forward) or ``(I - L)^T A = S`` (reverse), with ``L``
  the strictly lower triangular matrix of partials, by SciPy's compiled
  solver; best on large graphs with long dependency chains.

``engine="auto"`` picks one from the graph's size and number of levels.

The reverse functions take ``wrt=`` (the inputs whose cotangents are wanted)
and two options of the reference recurrence from the ChainRules notes,
:mod:`minirad.exact.cotangents`: ``in_place=True`` adds each term
into the sweep's own accumulator (``add!!``) and ``lazy=True`` defers every
cotangent until a wanted input needs it.  The numbers are the reference's,
bit for bit; only the arrays allocated (and, lazily, the work) change.

>>> from minirad import examples
>>> g = examples.lecture()
>>> result = reverse_sweep(g)
>>> result.jacobian.round(3)
array([[5.5  , 1.716]])
>>> result.multiplications, result.additions
(8, 2)
>>> forward_sweep(g, wrt=["x1"]).tangents[:, 0].round(3).tolist()
[1.0, 0.0, 0.5, 5.0, 0.0, 5.5, 5.5]

The same calls on a program of arrays:

>>> import numpy as np
>>> from minirad import trace
>>> h = trace(lambda x: (x * x).sum(), np.array([1.0, 2.0, 3.0]))
>>> gradient(h)
[array([2., 4., 6.])]
>>> reverse_sweep(h).jacobian, reverse_sweep(h).multiplications   # two VJPs of 3 flops
(array([[2., 4., 6.]]), 6)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral

import numpy as np

from ..graph import labels
from ..graph.calls import takes_graph_or_function
from ..graph.labels import FLOATS
from ..graph.lcg import LCG, reachable
from . import _engines, cotangents
from .overflow import check_finite
from .result import Accumulation, check_size

__all__ = ["ENGINES", "Accumulation", "forward_sweep", "gradient", "jvp", "reverse_sweep",
           "vjp"]

ENGINES = ("auto", "reference", "loop", "levels", "triangular")


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


def _check_engine(g: LCG, engine, plain: bool = True) -> str:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; valid engines are "
                         f"{', '.join(map(repr, ENGINES))}")
    if g.algebra is not FLOATS and engine not in ("auto", "reference"):
        raise ValueError(f"engine {engine!r} sweeps graphs of numbers only; this graph has "
                         f"array vertices, which the 'reference' engine sweeps ('auto' picks it)")
    if not plain and engine not in ("auto", "reference"):
        raise ValueError(f"in_place and lazy are options of the 'reference' engine ('auto' "
                         f"picks it); engine {engine!r} accumulates plainly")
    return engine


def _numbers(g: LCG, vertices) -> bool:
    return all(g.shapes[v] == () for v in vertices)


def _entries(g: LCG, name: str, given, vertices) -> tuple[dict, tuple]:
    """Seeds ``{vertex: array}`` from one entry per vertex (the module docstring's
    form), and their common stack shape."""
    if isinstance(given, (str, bytes)) or not isinstance(given, (Sequence, np.ndarray)) or (
            isinstance(given, np.ndarray) and given.ndim != 1):
        raise TypeError(f"{name} must be a list with one entry per vertex (an array of its "
                        f"shape, a float for a number, or None for zero; stacked products "
                        f"carry the same leading axes in every entry), not "
                        f"{type(given).__name__}"
                        + (f" of shape {given.shape}" if isinstance(given, np.ndarray) else ""))
    if len(given) != len(vertices):
        raise ValueError(f"{name} has {len(given)} entries; give one per vertex "
                         f"({len(vertices)}: {', '.join(g.names[v] for v in vertices)})")
    seeds, stack = {}, None
    for v, entry in zip(vertices, given):
        if entry is None:
            continue
        try:
            array = np.asarray(entry)
        except (TypeError, ValueError):
            array = np.asarray(None)
        if array.dtype.kind not in "biuf":
            raise TypeError(f"the entry of {name} for {g.names[v]} must be an array of real "
                            f"numbers, not {type(entry).__name__}")
        shape = g.shapes[v]
        lead = array.shape[:array.ndim - len(shape)]
        if array.ndim < len(shape) or array.shape[len(lead):] != shape or (
                stack is not None and lead != stack):
            wanted = shape if stack is None else stack + shape
            raise ValueError(f"the entry of {name} for {g.names[v]} has shape {array.shape}; "
                             f"expected {wanted}" + ("" if stack is not None else
                                                     " (optionally stacked along leading axes)"))
        if not np.all(np.isfinite(array)):
            raise ValueError(f"the entry of {name} for {g.names[v]} has non-finite entries; "
                             f"seeds must be finite")
        stack = lead
        # arrays, never numpy scalars: the algebra tells a label from a value by type
        seeds[v] = array if array.dtype.kind == "f" else array.astype(np.float64)
    return seeds, () if stack is None else stack


def _seed_rows(g: LCG, seeds: dict, stack: tuple) -> np.ndarray:
    """The seeds of a graph of numbers as the ``(n_vertices, k)`` float array the
    engines sweep, the stack flattened into its k columns."""
    block = np.zeros((g.n_vertices, math.prod(stack)))
    for v, array in seeds.items():
        block[v] = array.reshape(-1)
    return block


def _results(g: LCG, values, vertices, stack: tuple) -> list:
    """The swept values at ``vertices`` in the form of the module docstring."""
    found = [np.zeros(stack + g.shapes[v], dtype=g.dtypes[v]) if values[v] is None
             else np.asarray(values[v]) for v in vertices]
    return [float(x) if x.ndim == 0 else x for x in found]


# ------------------------------------------------------------------ engines
def _reverse(g: LCG, seeds: dict, wanted, in_place: bool, lazy: bool):
    """One reverse sweep from ``seeds``: the reference recurrence, or the same
    recurrence with the accumulation options of :mod:`minirad.exact.cotangents`
    (``wanted``: the cotangents a lazy sweep forces; None for all)."""
    if cotangents.check_options(in_place, lazy):
        return labels.reverse(g, seeds)
    return cotangents.reverse_accumulation(g, seeds, wanted=wanted, in_place=in_place, lazy=lazy)


def _reference(g: LCG, seeds: np.ndarray, forward: bool) -> np.ndarray:
    """The label recurrence itself, one column of seeds at a time."""
    sweep = labels.forward if forward else labels.reverse
    swept = np.zeros_like(seeds)
    for c in range(seeds.shape[1]):
        start = {v: float(seeds[v, c]) for v in np.flatnonzero(seeds[:, c]).tolist()}
        values = sweep(g, start).values
        swept[:, c] = [0.0 if x is None else x for x in values]
    return swept


def _propagate(g: LCG, seeds: np.ndarray, forward: bool, engine: str) -> np.ndarray:
    """Solve the sweep recurrence for a (n_vertices, k) block of seeds."""
    if engine == "reference":
        return _reference(g, seeds, forward)
    return _engines.propagate(g, seeds, forward, engine)


def _propagate_units(g: LCG, vertices: Sequence[int], forward: bool, engine: str) -> np.ndarray:
    """:func:`_propagate` of unit seeds, one column per vertex of ``vertices``."""
    if engine == "reference":
        return _reference(g, _engines.unit_seeds(g.n_vertices, vertices), forward)
    return _engines.propagate_units(g, vertices, forward, engine)


# ------------------------------------------------------------------- counts
def _sweep_cost(g: LCG, seeds: Sequence[int], forward: bool) -> tuple[int, int]:
    """Multiplications and additions of a sweep over ``seeds`` on a graph of
    numbers (see the module docstring), from reachability alone: the reference
    recurrence counts the same (tests/test_engines.py).  Per-seed figures are
    memoized, as they depend only on structure."""
    per_seed = g.memo("sweeps.cost." + ("forward" if forward else "reverse"), dict)
    missing = [seed for seed in seeds if seed not in per_seed]
    if missing:
        degree = g.out_degrees if forward else np.diff(g.in_edges_ptr)
        for seed in missing:
            reached = reachable(g, [seed], "forward" if forward else "reverse")
            edges = int(degree[reached].sum())
            # each reached vertex but the seed combines >= 1 traversed edges
            per_seed[seed] = (edges, edges - (int(reached.sum()) - 1))
    multiplications = sum(per_seed[seed][0] for seed in seeds)
    additions = sum(per_seed[seed][1] for seed in seeds)
    return multiplications, additions


# ------------------------------------------------------------------- sweeps
# Without per-vertex values to keep, seeds are swept in blocks holding about
# this many values, so a Jacobian of a huge graph never needs n_vertices x
# n_seeds memory at once.
_BLOCK_VALUES = 1 << 22
# On a graph with arrays, kept values hold one array per vertex and seed: at most this many
# numbers (256 MiB of float64)
_KEPT_VALUES = 1 << 25


def _sweep(g: LCG, chosen: tuple[int, ...], forward: bool, engine: str,
           keep_values: bool, far=None) -> tuple[np.ndarray | None, np.ndarray]:
    """Per-vertex values (or None) and their rows at the far end (outputs for a
    forward sweep, the inputs ``far`` or all of them for a reverse one), one column
    per seed."""
    n, k = g.n_vertices, len(chosen)
    far = list(far if far is not None else g.outputs if forward else g.inputs)
    block = k if keep_values else max(1, min(k, _BLOCK_VALUES // max(n, 1)))
    values = None
    ends = np.empty((len(far), k))
    for lo in range(0, k, block) if k else []:
        hi = min(k, lo + block)
        with np.errstate(over="ignore", invalid="ignore"):  # checked by the caller
            swept = _propagate_units(g, chosen[lo:hi], forward, engine)
        ends[:, lo:hi] = swept[far, :]
        if keep_values:
            values = swept
    if keep_values and values is None:
        values = np.zeros((n, 0))
    return values, ends


def _sweep_arrays(g: LCG, chosen: tuple[int, ...], forward: bool, keep_values: bool,
                  far=None, sweep=None):
    """The reference recurrence (or ``sweep(g, seeds)``, one with options), seeded with
    the unit vectors of every entry of each chosen vertex, stacked (in chunks of
    about ``_BLOCK_VALUES`` values per vertex when the values are not kept).

    Returns the per-vertex values (or None), the Jacobian (entries of ``far``, by
    default the outputs or inputs, x seed entries for a forward sweep) and the
    operation counts."""
    far = far if far is not None else g.outputs if forward else g.inputs
    sizes = [math.prod(g.shapes[v]) for v in chosen]
    far_at = np.cumsum([0] + [math.prod(g.shapes[v]) for v in far])
    k = sum(sizes)
    check_size(int(far_at[-1]), k)
    entries = sum(math.prod(shape) for shape in g.shapes)
    if keep_values and k * entries > _KEPT_VALUES:
        raise ValueError(f"keeping the values of every vertex for {k:,} seeds takes "
                         f"{k * entries:,} numbers, above the limit of {_KEPT_VALUES:,}; pass "
                         f"keep_values=False (the Jacobian alone is swept in bounded blocks)")
    widest = max((math.prod(shape) for shape in g.shapes), default=1)
    sweep = sweep or (labels.forward if forward else labels.reverse)
    ends = np.zeros((int(far_at[-1]), k))
    kept = [[] for _ in range(g.n_vertices)] if keep_values else None
    multiplications = additions = 0
    column = 0
    for s, size in zip(chosen, sizes):
        step = size if keep_values else max(1, min(size, _BLOCK_VALUES // max(widest, 1)))
        for lo in range(0, size, step):
            hi = min(size, lo + step)
            unit = np.eye(size)[lo:hi].reshape((hi - lo,) + g.shapes[s])
            with np.errstate(over="ignore", invalid="ignore"):  # checked by the caller
                swept = sweep(g, {s: unit})
            multiplications += swept.multiplications
            additions += swept.additions
            for i, v in enumerate(far):
                if swept.values[v] is not None:
                    ends[far_at[i]:far_at[i + 1], column:column + hi - lo] = np.reshape(
                        swept.values[v], (hi - lo, -1)).T
            if keep_values:
                for v, value in enumerate(swept.values):
                    kept[v].append(np.zeros((hi - lo,) + g.shapes[v], dtype=g.dtypes[v])
                                   if value is None else np.asarray(value))
            column += hi - lo
    values = None
    if keep_values:
        values = tuple(np.concatenate(parts) if parts else
                       np.zeros((0,) + g.shapes[v], dtype=g.dtypes[v])
                       for v, parts in enumerate(kept))
    return values, ends, multiplications, additions


def _shapes(g: LCG, rows, columns) -> tuple[tuple, tuple]:
    return tuple(g.shapes[v] for v in rows), tuple(g.shapes[v] for v in columns)


@takes_graph_or_function
def forward_sweep(g: LCG, wrt=None, engine: str = "auto",
                  keep_values: bool = True) -> Accumulation:
    """Tangents of every vertex with respect to each selected input: forward mode.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    wrt : str, int or sequence, optional
        The inputs to seed, by name or number (default: all of them).
    engine : {"auto", "reference", "loop", "levels", "triangular"}, optional
        Which implementation sweeps (:data:`ENGINES`; the same numbers): the
        label recurrence itself, or a faster engine on a graph of numbers
        (``"auto"`` picks by the graph's size and levels; the module docstring).
    keep_values : bool, optional
        Keep every vertex's tangents (default); with False the seeds are swept
        in memory-bounded blocks and only the Jacobian is kept.

    Returns
    -------
    Accumulation
        ``jacobian`` with one column per entry of the selected inputs,
        ``tangents`` (``(n_vertices, n_columns)`` on a graph of numbers, one
        ``(n_columns,) + shape`` array per vertex with arrays; None with
        ``keep_values=False``), ``blocks`` on a graph with arrays, and the
        ``multiplications`` and ``additions`` (counted when first read).

    Raises
    ------
    ValueError
        For an unknown engine, an engine other than the reference on a graph
        with arrays (or with ``in_place`` or ``lazy``), an input or output
        selected twice or not of the graph, or a sweep that overflows
        (``AccumulationOverflow``, naming the entry and the vertex).

    See Also
    --------
    reverse_sweep : Adjoints, one sweep per output.
    jvp : One Jacobian-vector product.
    minirad.jacobian : The Jacobian by any method.

    Notes
    -----
    ``tangent[v] = sum over edges u -> v of label(u, v) * tangent[u]``, in
    topological order (Griewank and Walther, *Evaluating Derivatives*, 2nd
    ed., 2008, Sec. 3.1); each traversed edge costs the algebra's
    ``multiply_cost``, each vertex combining ``t`` terms ``t - 1`` additions.

    Examples
    --------
    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> r = forward_sweep(g, wrt="x2")
    >>> r.jacobian.round(3), r.multiplications, r.additions
    (array([[1.716]]), 5, 1)
    >>> import numpy as np
    >>> from minirad import trace
    >>> h = trace(lambda A, x: A @ x, np.eye(2), np.array([1.0, 2.0]))
    >>> r = forward_sweep(h, wrt="x")
    >>> r.jacobian                                    # dy/dx = A
    array([[1., 0.],
           [0., 1.]])
    >>> r.blocks[0][0].shape, r.tangents[h.index("y")].shape
    ((2, 2), (2, 2))
    """
    engine = _check_engine(g, engine)
    chosen = _select(g, wrt, g.inputs, "input")
    if g.algebra is not FLOATS:
        tangents, jac, mults, adds = _sweep_arrays(g, chosen, True, keep_values)
        check_finite(g, jac, "forward", columns=chosen)
        return Accumulation(jac, mults, adds, "forward", tangents=tangents, seeds=chosen,
                            shapes=_shapes(g, g.outputs, chosen))
    tangents, jac = _sweep(g, chosen, True, engine, keep_values)
    check_finite(g, jac, "forward", columns=chosen)
    return Accumulation(jac, None, None, "forward", tangents=tangents, seeds=chosen,
                        counts=lambda: _sweep_cost(g, chosen, True))


@takes_graph_or_function
def reverse_sweep(g: LCG, outputs=None, engine: str = "auto", keep_values: bool = True, *,
                  wrt=None, in_place: bool = False, lazy: bool = False) -> Accumulation:
    """Adjoints of every vertex for each selected output: reverse mode.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    outputs : str, int or sequence, optional
        The outputs to seed, by name or number (default: all of them).
    engine : {"auto", "reference", "loop", "levels", "triangular"}, optional
        Which implementation sweeps, as for :func:`forward_sweep`.
    keep_values : bool, optional
        Keep every vertex's adjoints (default); with False only the Jacobian.
    wrt : str, int or sequence, optional
        The inputs whose columns are wanted (default: all, in order).
    in_place : bool, optional
        Add each term into the sweep's own accumulator (``add!!``) where it may
        (:mod:`minirad.exact.cotangents`); the same numbers, fewer arrays.
    lazy : bool, optional
        Defer every cotangent until a ``wrt`` input needs it: a branch that
        reaches none is never computed.

    Returns
    -------
    Accumulation
        ``jacobian`` with one row per entry of the selected outputs and one
        column per entry of ``wrt``, ``adjoints`` (``(n_vertices, n_rows)`` on a
        graph of numbers, one ``(n_rows,) + shape`` array per vertex with
        arrays; None with ``keep_values=False``), ``blocks`` with arrays, and the
        ``multiplications`` and ``additions`` of what was done.

    Raises
    ------
    ValueError
        For an unknown engine, an engine other than the reference on a graph
        with arrays (or with ``in_place`` or ``lazy``), an input or output
        selected twice or not of the graph, or a sweep that overflows
        (``AccumulationOverflow``, naming the entry and the vertex).

    See Also
    --------
    forward_sweep : Tangents, one sweep per input.
    vjp : One vector-Jacobian product.
    gradient : The gradient of a graph with one number as output.

    Notes
    -----
    ``adjoint[u] = sum over edges u -> v of adjoint[v] * label(u, v)``, in
    reverse topological order: the lecture's ``node_to_grad`` algorithm
    (Griewank and Walther, *Evaluating Derivatives*, 2nd ed., 2008, Sec. 3.2).
    ``in_place`` and ``lazy`` are the ChainRules notes' ``add!!`` and thunks.

    Examples
    --------
    >>> from minirad import examples
    >>> r = reverse_sweep(examples.lecture())
    >>> r.adjoints[:, 0].round(3).tolist()
    [5.5, 1.716, 1.0, 1.0, -1.0, 1.0, 1.0]
    >>> r = reverse_sweep(examples.lecture(), wrt="x2", keep_values=False, lazy=True)
    >>> r.jacobian.round(3), r.multiplications       # 5 of the 8 edges lead back to x2
    (array([[1.716]]), 5)
    """
    plain = cotangents.check_options(in_place, lazy)
    engine = _check_engine(g, engine, plain)
    chosen = _select(g, outputs, g.outputs, "output")
    columns = _select(g, wrt, g.inputs, "input")
    if g.algebra is FLOATS and plain:
        adjoints, jac_t = _sweep(g, chosen, False, engine, keep_values, columns)
        check_finite(g, jac_t.T, "reverse", rows=chosen, columns=columns, direction="reverse")
        return Accumulation(jac_t.T, None, None, "reverse", adjoints=adjoints, seeds=chosen,
                            counts=lambda: _sweep_cost(g, chosen, False))

    def sweep(h, seeds):
        return _reverse(h, seeds, None if keep_values else columns, in_place, lazy)

    adjoints, jac_t, mults, adds = _sweep_arrays(g, chosen, False, keep_values, columns, sweep)
    check_finite(g, jac_t.T, "reverse", rows=chosen, columns=columns, direction="reverse")
    shapes = _shapes(g, chosen, columns)
    if g.algebra is FLOATS:   # the layout of a graph of numbers: (n_vertices, n_rows)
        shapes = None
        adjoints = None if adjoints is None else np.array(adjoints).reshape(g.n_vertices, -1)
    return Accumulation(jac_t.T, mults, adds, "reverse", adjoints=adjoints, seeds=chosen,
                        shapes=shapes)


@takes_graph_or_function
def jvp(g: LCG, v, engine: str = "auto"):
    """Jacobian-vector product ``J v``: one tangent per input in, one per output out.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    v : list
        One tangent per input vertex, in the graph's input order: a float for
        a number, an array of the vertex's shape for an array, None for zero.
        Every entry may carry the same leading stack axes, for several
        products at once.
    engine : {"auto", "reference", "loop", "levels", "triangular"}, optional
        Which implementation sweeps, as for :func:`forward_sweep`.

    Returns
    -------
    list
        One tangent per output vertex, in the form of ``v``: a float for a
        number, an array of its shape otherwise (with the stack axes of ``v``),
        on a graph of numbers and on one with arrays alike.

    Raises
    ------
    TypeError
        When ``v`` is not a list of real numbers or arrays (a matrix is refused
        rather than read by rows or columns).
    ValueError
        For an unknown engine, or an engine other than the reference on a graph
        with arrays; when ``v`` has the wrong number of entries, an entry of the
        wrong shape or one that is not finite.

    See Also
    --------
    vjp : The other side: ``u J``.
    forward_sweep : Unit tangents on every input, every vertex kept.

    Notes
    -----
    One forward sweep seeded with ``v`` (:func:`forward_sweep`'s recurrence).

    Examples
    --------
    >>> from minirad import examples
    >>> jvp(examples.lab(), [1.0, 1.0])                    # f = x y + sin x at (2, 3)
    [4.583853163452858]
    >>> jvp(examples.lab(), [[1.0, 0.0], [0.0, 1.0]])      # two tangents: the Jacobian
    [array([2.58385316, 2.        ])]
    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda A, x: A @ x, np.eye(2), np.array([1.0, 2.0]))
    >>> jvp(g, [np.zeros((2, 2)), np.array([1.0, 0.0])])   # dx only: A dx
    [array([1., 0.])]
    """
    engine = _check_engine(g, engine)
    seeds, stack = _entries(g, "v", v, g.inputs)
    if g.algebra is not FLOATS:
        return _results(g, labels.forward(g, seeds).values, g.outputs, stack)
    swept = _propagate(g, _seed_rows(g, seeds, stack), True, engine)
    return _results(g, [row.reshape(stack) for row in swept], g.outputs, stack)


@takes_graph_or_function
def vjp(g: LCG, u, engine: str = "auto", *, wrt=None, in_place: bool = False,
        lazy: bool = False):
    """Vector-Jacobian product ``u J``: one adjoint per output in, one per input out.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    u : list
        One adjoint per output vertex, in the form of :func:`jvp`'s ``v``.
    engine : {"auto", "reference", "loop", "levels", "triangular"}, optional
        Which implementation sweeps, as for :func:`forward_sweep`.
    wrt : str, int or sequence, optional
        The inputs whose adjoints are wanted (default: all, in order).
    in_place : bool, optional
        Add into the sweep's own arrays, as for :func:`reverse_sweep`.
    lazy : bool, optional
        Defer cotangents until wanted, as for :func:`reverse_sweep`.

    Returns
    -------
    list
        One adjoint per input of ``wrt``, in the form of ``u``: a float for a
        number, an array of its shape otherwise, on a graph of numbers and on
        one with arrays alike.

    Raises
    ------
    TypeError
        When ``u`` is not a list of real numbers or arrays, or ``in_place`` or
        ``lazy`` is not a bool.
    ValueError
        For an unknown engine, an engine other than the reference on a graph
        with arrays (or with ``in_place`` or ``lazy``), an input or output
        selected twice or not of the graph, or a sweep that overflows
        (``AccumulationOverflow``, naming the entry and the vertex); when ``u``
        has the wrong number of entries, an entry of the wrong shape or one
        that is not finite.

    See Also
    --------
    jvp : The other side: ``J v``.
    gradient : ``vjp`` with the seed 1 on a graph with one number as output.

    Notes
    -----
    One reverse sweep seeded with ``u`` (:func:`reverse_sweep`'s recurrence);
    ``in_place`` and ``lazy`` give the same numbers bit for bit.

    Examples
    --------
    >>> from minirad import examples
    >>> [round(a, 4) for a in vjp(examples.two_outputs(), [1.0, 0.0])]
    [-1.05, -1.4049]
    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda A, x: A @ x, np.eye(2), np.array([1.0, 2.0]))
    >>> dA, dx = vjp(g, [np.array([1.0, 0.0])])
    >>> dA                                                 # the outer product a x^T
    array([[1., 2.],
           [0., 0.]])
    >>> vjp(g, [np.array([1.0, 0.0])], wrt="x", lazy=True)   # A^T a, and dA never formed
    [array([1., 0.])]
    """
    plain = cotangents.check_options(in_place, lazy)
    engine = _check_engine(g, engine, plain)
    columns = _select(g, wrt, g.inputs, "input")
    seeds, stack = _entries(g, "u", u, g.outputs)
    if g.algebra is not FLOATS or not plain:
        values = _reverse(g, seeds, columns, in_place, lazy).values
        return _results(g, values, columns, stack)
    swept = _propagate(g, _seed_rows(g, seeds, stack), False, engine)
    return _results(g, [row.reshape(stack) for row in swept], columns, stack)


@takes_graph_or_function
def gradient(g: LCG, engine: str = "auto", *, wrt=None, in_place: bool = False,
             lazy: bool = False):
    """The gradient of a graph whose one output is a number: one reverse sweep.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    engine : {"auto", "reference", "loop", "levels", "triangular"}, optional
        Which implementation sweeps, as for :func:`forward_sweep`.
    wrt : str, int or sequence, optional
        The inputs whose derivatives are wanted (default: all, in order).
    in_place : bool, optional
        Add into the sweep's own arrays, as for :func:`reverse_sweep`.
    lazy : bool, optional
        Defer cotangents until wanted, as for :func:`reverse_sweep`.

    Returns
    -------
    list
        One derivative per input of ``wrt``: a float for a number, an array of
        its shape (in the program's precision: float32 stays float32) for an
        array, on a graph of numbers and on one with arrays alike.

    Raises
    ------
    ValueError
        When the graph has more than one output, or an output that is not a
        number (use :func:`vjp`), or as :func:`vjp` raises.

    See Also
    --------
    vjp : Any seed, any outputs.
    minirad.gradcheck : Check it against finite differences.

    Notes
    -----
    The reverse sweep seeded with 1 in the output's dtype, so a float32
    program's gradient is float32, the same bits as a hand-written backward
    pass.

    Examples
    --------
    >>> from minirad import examples
    >>> gradient(examples.lab())                     # f = x y + sin x at (2, 3)
    [2.5838531634528574, 2.0]
    >>> import numpy as np
    >>> from minirad import trace
    >>> gradient(trace(lambda W: (W * W).sum(), np.ones((2, 2), np.float32)))
    [array([[2., 2.],
           [2., 2.]], dtype=float32)]
    """
    if len(g.outputs) != 1 or g.shapes[g.outputs[0]] != ():
        raise ValueError(f"gradient needs one output that is a number; this graph has outputs "
                         f"of shapes {[g.shapes[v] for v in g.outputs]}; use vjp")
    plain = cotangents.check_options(in_place, lazy)
    engine = _check_engine(g, engine, plain)
    if g.algebra is FLOATS and plain:
        return vjp(g, [1.0], engine, wrt=wrt)
    columns = _select(g, wrt, g.inputs, "input")
    y = g.outputs[0]
    # seeded in the output's dtype: a float32 program's gradient is float32, as it would be
    # by hand, and the same bits as a hand-written backward pass
    values = _reverse(g, {y: np.ones((), dtype=g.dtypes[y])}, columns, in_place, lazy).values
    return _results(g, values, columns, ())
