"""Forward and reverse sweeps: the Jacobian by dynamic programming on the LCG.

A forward sweep seeds an input with tangent 1 and pushes tangents along the
edges in topological order: the tangent of ``v`` is the sum over its in-edges
of label times the tangent of the predecessor.  A reverse sweep seeds an
output with adjoint 1 and pulls adjoints back in reverse order: the adjoint of
``u`` is the sum over its out-edges of the successor's adjoint times the label,
so a value used several times receives the sum of its partial adjoints (the
lecture's ``node_to_grad``).  Both are Bauer's path sum with the common prefixes
(forward) or suffixes (reverse) of the paths factored out.

The recurrence is :func:`minirad.graph.labels.forward` and
:func:`~minirad.graph.labels.reverse`, over the graph's labels::

    for u, v, label in edges:                 # forward: tangents
        tangent[v] = add(tangent[v], multiply(label, tangent[u]))
    for u, v, label in reversed(edges):       # reverse: adjoints
        adjoint[u] = add(adjoint[u], multiply(adjoint[v], label))

It runs on every graph: where a vertex holds an array, its tangent or adjoint
is an array of its shape and a label a Jacobian block, so one step is a JVP
``J t`` or a VJP ``a J`` (the RAD paper's vectorized graph, Sec. 3.2).  A
sweep seeds every entry of a vertex at once, stacked along a leading axis.
On a large graph of numbers the same numbers come faster from the engines of
:mod:`minirad.exact._engines` (a loop over floats, wavefronts of sparse
products, a triangular solve), tested equal to the recurrence:
``engine="auto"`` picks one by the graph's size, ``"reference"`` always runs
the recurrence.

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
A sweep for one seed skips the vertices the seed cannot reach.  Each edge it
traverses costs the algebra's ``multiply_cost`` (1 between numbers, a block's
flops between arrays, times the stacked seeds), and a vertex that combines
``t >= 1`` traversed edges costs ``t - 1`` additions.  The counts are worked
out when first read.

>>> from minirad import examples
>>> g = examples.lecture()
>>> result = reverse_sweep(g)
>>> result.jacobian.round(3)
array([[5.5  , 1.716]])
>>> result.multiplications, result.additions
(8, 2)
>>> forward_sweep(g, wrt=["x1"]).tangents[:, 0].round(3).tolist()
[1.0, 0.0, 0.5, 5.0, 0.0, 5.5, 5.5]
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
from ..graph.lcg import LCG, reachable, takes_graph_or_function
from ..tracing import pullbacks
from . import _engines, cotangents
from .overflow import check_finite
from .result import JACOBIAN_LIMIT, Accumulation, check_size

__all__ = ["ENGINES", "Accumulation", "forward_sweep", "gradient", "jvp", "reverse_jacobian",
           "reverse_sweep", "vjp"]

ENGINES = ("auto", "reference", "loop", "levels", "triangular", "pullbacks")

#: a graph of numbers with more edges than this is swept by the fast engines
REFERENCE_EDGES = 2_000


# -------------------------------------------------------------------- sweeps
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
    chosen = select(g, wrt, g.inputs, "input")
    values, jac, counts = sweep(g, chosen, g.outputs, True, keep_values, engine)
    if not np.isfinite(jac).all():    # names the vertex where it went wrong
        check_finite(g, jac, "forward", columns=chosen)
    return Accumulation(jac, None, None, "forward", tangents=values, seeds=chosen,
                        shapes=_shapes(g, g.outputs, chosen), counts=counts)


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
    chosen = select(g, outputs, g.outputs, "output")
    columns = select(g, wrt, g.inputs, "input")
    run = None
    if (in_place is not False or lazy is not False) and not cotangents.check_options(
            in_place, lazy):
        def run(h, seeds):
            return cotangents.reverse_accumulation(
                h, seeds, wanted=None if keep_values else columns, in_place=in_place,
                lazy=lazy)
    values, jac_t, counts = sweep(g, chosen, columns, False, keep_values, engine, run)
    if not np.isfinite(jac_t).all():   # names the vertex where it went wrong
        check_finite(g, jac_t.T, "reverse", rows=chosen, columns=columns, direction="reverse")
    return Accumulation(jac_t.T, None, None, "reverse", adjoints=values, seeds=chosen,
                        shapes=_shapes(g, chosen, columns), counts=counts)


@takes_graph_or_function
def reverse_jacobian(g: LCG) -> np.ndarray:
    """The Jacobian alone, by :func:`reverse_sweep`'s sweeps, keeping no values and
    counting nothing: what :func:`minirad.jacobian` runs by default.

    >>> from minirad import examples
    >>> reverse_jacobian(examples.lecture()).round(3)
    array([[5.5  , 1.716]])
    """
    _, jac_t, _ = sweep(g, g.outputs, g.inputs, False, False, "auto")
    if not np.isfinite(jac_t).all():   # names the vertex where it went wrong
        check_finite(g, jac_t.T, "reverse", direction="reverse")
    return jac_t.T


# Without values to keep, seeds are swept in blocks of about this many values, so the
# Jacobian of a huge graph never needs n_vertices x n_seeds memory at once
_BLOCK_VALUES = 1 << 22
# Kept values hold one array per vertex and seed: at most this many numbers (256 MiB)
_KEPT_VALUES = 1 << 25


def sweep(g: LCG, chosen, far, forward: bool, keep_values: bool, engine: str, run=None):
    """Sweep unit seeds on every entry of the ``chosen`` vertices.

    Returns the per-vertex values (or None), the block of the Jacobian read at the
    ``far`` vertices (``far`` entries by seeds) and a function giving the counts.
    ``run(g, seeds)`` replaces the recurrence (a reverse sweep with options)."""
    engine = _engine(g, engine, run is None)
    if engine != "reference":
        return _fast(g, chosen, far, forward, keep_values, engine)
    recurrence = run or (labels.forward if forward else labels.reverse)
    far_at = _offsets(g, far)
    sizes = [math.prod(g.shapes[v]) for v in chosen]
    if far_at[-1] * sum(sizes) > JACOBIAN_LIMIT:   # refused before it is allocated
        check_size(far_at[-1], sum(sizes))
    entries = sum(math.prod(g.shapes[v]) for v in range(g.n_vertices))
    if keep_values and sum(sizes) * entries > _KEPT_VALUES:
        raise ValueError(f"keeping the values of every vertex for {sum(sizes):,} seeds takes "
                         f"{sum(sizes) * entries:,} numbers, above the limit of "
                         f"{_KEPT_VALUES:,}; pass keep_values=False (the Jacobian alone is "
                         f"swept in bounded blocks)")
    ends = np.zeros((far_at[-1], sum(sizes)))
    kept = [[] for _ in range(g.n_vertices)]
    multiplications = additions = column = 0
    widest = max((math.prod(g.shapes[v]) for v in range(g.n_vertices)), default=1)
    for s, size in zip(chosen, sizes):
        step = size if keep_values else max(1, min(size, _BLOCK_VALUES // widest))
        for lo in range(0, size, step):
            hi = min(size, lo + step)
            unit = np.eye(size)[lo:hi].reshape((hi - lo,) + g.shapes[s])
            with np.errstate(over="ignore", invalid="ignore"):   # checked by the caller
                swept = recurrence(g, {s: unit})
            multiplications += swept.multiplications
            additions += swept.additions
            for i, v in enumerate(far):
                if swept.values[v] is not None:
                    ends[far_at[i]:far_at[i + 1], column:column + hi - lo] = np.reshape(
                        swept.values[v], (hi - lo, -1)).T
            for v, value in enumerate(swept.values if keep_values else ()):
                kept[v].append(np.zeros((hi - lo,) + g.shapes[v], g.dtypes[v]) if value is None
                               else np.asarray(value))
            column += hi - lo
    values = _kept(g, kept) if keep_values else None
    return values, ends, lambda: (multiplications, additions)


def _kept(g: LCG, kept):
    """Per-vertex values as a sweep returns them: an ``(n_vertices, n_seeds)`` array on a
    graph of numbers, else one ``(n_seeds,) + shape`` array per vertex."""
    values = tuple(np.concatenate(parts) if parts else np.zeros((0,) + g.shapes[v], g.dtypes[v])
                   for v, parts in enumerate(kept))
    if g.algebra is labels.FLOATS:
        return np.array(values, dtype=np.float64).reshape(g.n_vertices, -1)
    return values


def _fast(g: LCG, chosen, far, forward: bool, keep_values: bool, engine: str):
    """:func:`sweep` on a graph of numbers by a fast engine, in blocks of seeds."""
    n, k = g.n_vertices, len(chosen)
    if len(far) * k > JACOBIAN_LIMIT:
        check_size(len(far), k)
    block = k if keep_values else max(1, min(k, _BLOCK_VALUES // max(n, 1)))
    values = np.zeros((n, 0)) if keep_values else None
    ends = np.empty((len(far), k))
    for lo in range(0, k, block):
        hi = min(k, lo + block)
        with np.errstate(over="ignore", invalid="ignore"):   # checked by the caller
            swept = _engines.propagate_units(g, chosen[lo:hi], forward, engine)
        ends[:, lo:hi] = swept[list(far), :]
        if keep_values:
            values = swept
    return values, ends, lambda: _sweep_cost(g, chosen, forward)


def _engine(g: LCG, engine, plain: bool, adjoints: bool = False) -> str:
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; valid engines are "
                         f"{', '.join(map(repr, ENGINES))}")
    numbers = g.algebra is labels.FLOATS
    if engine == "pullbacks" and not (adjoints and pullbacks.sweepable(g)):
        raise ValueError("engine 'pullbacks' sweeps the adjoints of a traced graph with array "
                         "vertices (gradient, vjp); 'auto' picks it for large ones")
    if engine == "pullbacks" and not plain:
        raise ValueError("in_place and lazy are options of the 'reference' engine; engine "
                         "'pullbacks' accumulates plainly")
    if engine not in ("auto", "reference", "pullbacks") and not numbers:
        raise ValueError(f"engine {engine!r} sweeps graphs of numbers only; this graph has "
                         f"array vertices, which the 'reference' engine sweeps ('auto' picks it)")
    if engine not in ("auto", "reference") and not plain:
        raise ValueError(f"in_place and lazy are options of the 'reference' engine ('auto' "
                         f"picks it); engine {engine!r} accumulates plainly")
    if engine == "auto":
        if not plain or g.n_edges <= REFERENCE_EDGES:
            return "reference"
        if numbers:
            return "auto"
        return "pullbacks" if adjoints and pullbacks.sweepable(g) else "reference"
    return engine


def _sweep_cost(g: LCG, seeds: Sequence[int], forward: bool) -> tuple[int, int]:
    """Multiplications and additions of a sweep over ``seeds`` on a graph of numbers,
    from reachability alone (the recurrence counts the same: tests/test_engines.py)."""
    per_seed = g.memo("sweeps.cost." + ("forward" if forward else "reverse"), dict)
    degree = g.out_degrees if forward else np.diff(g.in_edges_ptr)
    for seed in seeds:
        if seed not in per_seed:
            reached = reachable(g, [seed], "forward" if forward else "reverse")
            edges = int(degree[reached].sum())
            # each reached vertex but the seed combines >= 1 traversed edges
            per_seed[seed] = (edges, edges - (int(reached.sum()) - 1))
    return (sum(per_seed[seed][0] for seed in seeds),
            sum(per_seed[seed][1] for seed in seeds))


# ------------------------------------------------------------ products
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
    engine = _engine(g, engine, True)
    seeds, stack = _entries(g, "v", v, g.inputs)
    return _results(g, _propagate(g, seeds, stack, True, engine), g.outputs, stack)


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
    engine : {"auto", "reference", "loop", "levels", "triangular", "pullbacks"}, optional
        Which implementation sweeps, as for :func:`forward_sweep`;
        ``"pullbacks"`` on a traced graph with arrays (:mod:`minirad.tracing.pullbacks`),
        which ``"auto"`` picks above :data:`REFERENCE_EDGES` edges.
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
    seeds, stack = _entries(g, "u", u, g.outputs)
    return _pulled(g, seeds, stack, engine, wrt, in_place, lazy)


@takes_graph_or_function
def gradient(g: LCG, engine: str = "auto", *, wrt=None, in_place: bool = False,
             lazy: bool = False):
    """The gradient of a graph whose one output is a number: one reverse sweep.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    engine : {"auto", "reference", "loop", "levels", "triangular", "pullbacks"}, optional
        Which implementation sweeps, as for :func:`forward_sweep`;
        ``"pullbacks"`` on a traced graph with arrays (:mod:`minirad.tracing.pullbacks`),
        which ``"auto"`` picks above :data:`REFERENCE_EDGES` edges.
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
    y = g.outputs[0]
    return _pulled(g, {y: np.ones((), dtype=g.dtypes[y])}, (), engine, wrt, in_place, lazy)


def _pulled(g: LCG, seeds: dict, stack: tuple, engine, wrt, in_place: bool, lazy: bool):
    """The adjoints of the inputs ``wrt`` of one reverse sweep from ``seeds``."""
    plain = cotangents.check_options(in_place, lazy)
    engine = _engine(g, engine, plain, adjoints=not stack)
    columns = select(g, wrt, g.inputs, "input")
    if plain:
        values = _propagate(g, seeds, stack, False, engine)
    else:
        values = cotangents.reverse_accumulation(g, seeds, wanted=columns, in_place=in_place,
                                                 lazy=lazy).values
    return _results(g, values, columns, stack)


def _propagate(g: LCG, seeds: dict, stack: tuple, forward: bool, engine: str):
    """Per-vertex values of one sweep from ``seeds`` (None where nothing arrives)."""
    if engine == "pullbacks":
        with np.errstate(all="ignore"):
            values = pullbacks.reverse(g, seeds, wanted=g.inputs)
        if all(values[v] is None or np.isfinite(values[v]).all() for v in g.inputs):
            return values
        engine = "reference"   # its labels name a partial that is not finite
    if engine == "reference":
        with np.errstate(over="ignore", invalid="ignore"):
            return (labels.forward if forward else labels.reverse)(g, seeds).values
    block = np.zeros((g.n_vertices, math.prod(stack)))
    for v, seed in seeds.items():
        block[v] = np.reshape(seed, -1)
    swept = _engines.propagate(g, block, forward, engine)
    return [row.reshape(stack) for row in swept]


# --------------------------------------------------------------- arguments
def select(g: LCG, given, pool: tuple[int, ...], role: str) -> tuple[int, ...]:
    """Resolve a seed selection (None, one vertex or several) to vertex numbers."""
    if given is None:
        return pool
    if isinstance(given, (str, Integral)) and not isinstance(given, bool):
        given = [given]
    elif isinstance(given, (bytes, bool)) or not isinstance(given, (Sequence, np.ndarray)):
        raise TypeError(f"{role}s must be a vertex, a sequence of vertices or None, not "
                        f"{type(given).__name__}")
    members, chosen = set(pool), []
    for vertex in given:
        v = g.index(vertex)
        if v not in members:
            valid = ", ".join(g.names[p] for p in pool[:8]) + (", ..." if len(pool) > 8 else "")
            raise ValueError(f"{g.names[v]} is not an {role} of the graph; its {role}s are "
                             f"{valid or 'none'}")
        if v in chosen:
            raise ValueError(f"{role} {g.names[v]} is selected twice")
        chosen.append(v)
    return tuple(chosen)


def _offsets(g: LCG, vertices) -> list[int]:
    starts = [0]
    for v in vertices:
        starts.append(starts[-1] + math.prod(g.shapes[v]))
    return starts


def _shapes(g: LCG, rows, columns):
    if g.algebra is labels.FLOATS:
        return None
    return tuple(g.shapes[v] for v in rows), tuple(g.shapes[v] for v in columns)


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


def _results(g: LCG, values, vertices, stack: tuple) -> list:
    """The swept values at ``vertices`` in the form of the module docstring."""
    found = [np.zeros(stack + g.shapes[v], dtype=g.dtypes[v]) if values[v] is None
             else np.asarray(values[v]) for v in vertices]
    return [float(x) if x.ndim == 0 else x for x in found]
