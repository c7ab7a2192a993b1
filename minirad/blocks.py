"""Jacobians of a vector LCG by sweeps over operator blocks.

The forward and reverse sweeps are the same recurrences as on the scalar
LCG, written over the label algebra (``g.algebra.multiply`` / ``add``): on a
vector LCG a tangent or adjoint is an array and an edge label an operator,
so one step is a JVP ``J t`` or a VJP ``a J``.  Operation counts come from
the algebra and respect structure (a diagonal costs d, not d²).

Seeds may carry a leading *stack* axis: a stack of N tangents moves through
the graph at once, which is how :func:`jacobian` gets every column.

>>> import numpy as np
>>> from minirad.array_trace import trace_arrays
>>> g = trace_arrays(lambda x: (x * x).sum(), np.array([1.0, 2.0, 3.0]))
>>> gradient(g)[0]
array([2., 4., 6.])
>>> jacobian(g, "forward")
array([[2., 4., 6.]])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the largest Jacobian (entries) :func:`jacobian` assembles
JACOBIAN_LIMIT = 4_000_000


@dataclass(frozen=True)
class Sweep:
    """The result of one sweep: per-vertex tangents (forward) or adjoints (reverse),
    None where nothing arrived, and the operation counts of the algebra."""

    direction: str
    values: tuple
    multiplications: int
    additions: int

    @property
    def operations(self) -> int:
        return self.multiplications + self.additions


def _seeds(g, given, vertices, role):
    if len(given) != len(vertices):
        raise ValueError(f"give one seed per {role} ({len(vertices)}), not {len(given)}")
    seeds = {}
    for v, s in zip(vertices, given):
        if s is None:
            continue
        s = np.asarray(s)
        shape = g.shapes[v]
        if s.shape[s.ndim - len(shape):] != shape or s.ndim < len(shape):
            raise ValueError(f"the seed for {role} {g.names[v]} must have shape {shape} "
                             f"(optionally stacked), not {s.shape}")
        seeds[v] = s
    return seeds


def forward_sweep(g, tangents) -> Sweep:
    """Push one tangent per input (None: zero) forward: ``t_v = sum_u J_vu t_u``.

    The reference recurrence: vertices in topological order, each edge one
    ``algebra.multiply(label, tangent)``, meeting paths ``algebra.add``.
    """
    algebra = g.algebra
    tangent = [None] * g.n_vertices
    for v, s in _seeds(g, list(tangents), g.inputs, "input").items():
        tangent[v] = s
    ptr = g.in_edges_ptr
    mults = adds = 0
    for v in range(g.n_vertices):
        for e in range(ptr[v], ptr[v + 1]):
            t = tangent[g.sources[e]]
            if t is None:
                continue
            label = g.labels[e]
            term = algebra.multiply(label, t)
            mults += algebra.multiply_cost(label, t)
            if tangent[v] is None:
                tangent[v] = term
            else:
                adds += algebra.add_cost(tangent[v], term)
                tangent[v] = algebra.add(tangent[v], term)
    return Sweep("forward", tuple(tangent), mults, adds)


def reverse_sweep(g, adjoints) -> Sweep:
    """Pull one adjoint per output (None: zero) back: ``a_u = sum_v a_v J_vu``.

    The reference recurrence: vertices in reverse topological order, each
    edge one ``algebra.multiply(adjoint, label)`` (a VJP), accumulated with
    ``algebra.add`` where a vertex is used several times.
    """
    algebra = g.algebra
    adjoint = [None] * g.n_vertices
    for v, s in _seeds(g, list(adjoints), g.outputs, "output").items():
        adjoint[v] = s
    ptr = g.in_edges_ptr
    mults = adds = 0
    for v in range(g.n_vertices - 1, -1, -1):
        a = adjoint[v]
        if a is None:
            continue
        for e in range(ptr[v], ptr[v + 1]):
            u, label = g.sources[e], g.labels[e]
            term = algebra.multiply(a, label)
            mults += algebra.multiply_cost(a, label)
            if adjoint[u] is None:
                adjoint[u] = term
            else:
                adds += algebra.add_cost(adjoint[u], term)
                adjoint[u] = algebra.add(adjoint[u], term)
    return Sweep("reverse", tuple(adjoint), mults, adds)


def _zeros_for(g, v, lead=()):
    return np.zeros(lead + g.shapes[v], dtype=g.dtypes[v])


def jvp(g, tangents) -> list[np.ndarray]:
    """The output tangents ``J t`` for one tangent array per input."""
    sweep = forward_sweep(g, tangents)
    return [sweep.values[v] if sweep.values[v] is not None else _zeros_for(g, v)
            for v in g.outputs]


def vjp(g, adjoints) -> list[np.ndarray]:
    """The input adjoints ``a J`` for one adjoint array per output."""
    sweep = reverse_sweep(g, adjoints)
    return [sweep.values[v] if sweep.values[v] is not None else _zeros_for(g, v)
            for v in g.inputs]


def gradient(g) -> list[np.ndarray]:
    """For a graph with one scalar output: its gradient, one array per input
    (a reverse sweep seeded with 1, in the output's dtype)."""
    if len(g.outputs) != 1 or g.shapes[g.outputs[0]] != ():
        raise ValueError(f"gradient needs one scalar output; this graph has outputs of shapes "
                         f"{[g.shapes[v] for v in g.outputs]}; use vjp")
    y = g.outputs[0]
    return vjp(g, [np.ones((), dtype=g.dtypes[y])])


def _identity_seeds(g, vertices):
    sizes = [math.prod(g.shapes[v]) for v in vertices]
    total = sum(sizes)
    seeds, start = [], 0
    for v, size in zip(vertices, sizes):
        block = np.zeros((total, size))
        block[start:start + size] = np.eye(size)
        seeds.append(block.reshape((total,) + g.shapes[v]))
        start += size
    return seeds, total


def jacobian(g, method: str = "reverse", limit: int = JACOBIAN_LIMIT) -> np.ndarray:
    """The full Jacobian (sum of output sizes x sum of input sizes), in float64,
    columns in input order (entries in C order), by a stacked ``"forward"`` or
    ``"reverse"`` sweep."""
    n_in = sum(math.prod(g.shapes[v]) for v in g.inputs)
    n_out = sum(math.prod(g.shapes[v]) for v in g.outputs)
    if n_in * n_out > limit:
        raise ValueError(f"the Jacobian is {n_out} x {n_in} = {n_in * n_out:,} entries, above "
                         f"the limit of {limit:,}")
    if method == "forward":
        seeds, total = _identity_seeds(g, g.inputs)
        outs = jvp(g, seeds) if seeds else []
        cols = [np.broadcast_to(o, (total,) + g.shapes[v]).reshape(total, -1).T
                for o, v in zip(outs, g.outputs)]
        return np.concatenate(cols, axis=0) if cols else np.zeros((0, n_in))
    if method == "reverse":
        seeds, total = _identity_seeds(g, g.outputs)
        ins = vjp(g, seeds) if seeds else []
        rows = [np.broadcast_to(a, (total,) + g.shapes[v]).reshape(total, -1)
                for a, v in zip(ins, g.inputs)]
        return np.concatenate(rows, axis=1) if rows else np.zeros((n_out, 0))
    raise ValueError(f"method must be 'forward' or 'reverse', not {method!r}")
