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
multiplications and additions it took (for sweeps, counted when first read).

Cost convention
---------------
A sweep for one seed skips the vertices the seed cannot reach: their
tangents (adjoints) are structurally zero.  For each seed, every edge whose
tail the seed reaches (forward) or whose head reaches the seed (reverse) is
one multiplication, partials of ±1 included, and a vertex that combines
``t >= 1`` such edges costs ``t - 1`` additions.  A sweep over several
seeds costs the sum over its seeds.  The vectorised engines may
multiply some structural zeros in bulk; the counts describe the algorithm,
not how numpy blocks the arithmetic.

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
convention counts), and ``engine="reference"`` runs them, one seed at a
time.  The other engines compute the same numbers faster
(:mod:`minirad.exact._engines`, tested equal to the reference):

* ``"loop"``: the same loop over plain Python float lists, no per-edge
  function calls; best on small graphs such as traced scalar programs;
* ``"levels"``: vertices grouped into wavefronts (topological levels),
  each wavefront one sparse matrix product; best on wide graphs;
* ``"triangular"``: the sweep as the unit triangular solve
  ``(I - L) T = S`` (forward) or ``(I - L)^T A = S`` (reverse), with ``L``
  the strictly lower triangular matrix of partials, by SciPy's compiled
  solver; best on large graphs with long dependency chains.

``engine="auto"`` picks one from the graph's size and number of levels.

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
from numbers import Integral

import numpy as np

from ..graph import labels
from ..graph.lcg import LCG, reachable, takes_lcg
from . import _engines
from .overflow import check_finite
from .result import Accumulation

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
    """Multiplications and additions of a sweep over ``seeds`` (see the module
    docstring), from reachability alone: the reference recurrence counts the
    same (tests/test_engines.py).  Per-seed figures are memoized, as they
    depend only on structure."""
    per_seed = g.memo("sweeps.cost." + ("forward" if forward else "reverse"), dict)
    missing = [seed for seed in seeds if seed not in per_seed]
    if missing:
        degree = g.out_degrees if forward else np.diff(g.in_edges_ptr)
        for seed in missing:
            reached = reachable(g, [seed], forward)
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
        with np.errstate(over="ignore", invalid="ignore"):  # checked by the caller
            swept = _propagate_units(g, chosen[lo:hi], forward, engine)
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
    check_finite(g, jac, "forward", columns=chosen)
    return Accumulation(jac, None, None, "forward", tangents=tangents, seeds=chosen,
                        counts=lambda: _sweep_cost(g, chosen, True))


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
    check_finite(g, jac_t.T, "reverse", rows=chosen, backward=True)
    return Accumulation(jac_t.T, None, None, "reverse", adjoints=adjoints, seeds=chosen,
                        counts=lambda: _sweep_cost(g, chosen, False))


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
