"""Many random estimates at once: one reverse sweep over a stack of samples.

Every randomized estimator of minirad is reverse accumulation on the graph with
random numbers put in: path sampling (Algorithm 1) scales each edge by how
often it was drawn, random matrix injection multiplies the adjoint of a vertex
by a random ``P = R R^T``.  :func:`reverse_stack` runs that sweep for ``n``
samples together: the adjoint of a vertex is a stack of shape
``(n, width) + shape`` (``width``: one seed per output entry), and each step
asks the edge's label for its VJP (``g.algebra.multiply(adjoint, label)``,
which takes the stack as it comes), so it works on any LCG.

:class:`Layout` says how a projection acts on an array: its entries as
``rows x others x d``, one independent ``P`` per row (a single row when the
draw is shared), the same ``P`` for every index of ``others``, acting along
``d`` entries.  :func:`minirad.randomized.injection.inject_vertex`'s
``axis``, ``batch_axis`` and ``per_row`` give it.

>>> from minirad import examples
>>> g = examples.lecture()                        # a graph of numbers: one seed
>>> reverse_stack(g, 3).shape                     # 3 copies of the exact Jacobian
(3, 1, 2)
>>> bool(np.allclose(reverse_stack(g, 3)[0], [[5.5, 1.716]], atol=1e-3))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from ..graph.lcg import LCG, takes_graph_or_function

__all__ = ["STACK_ENTRIES", "Layout", "reverse_stack"]

#: the adjoint stacks of one chunk of samples hold at most this many floats (32 MB)
STACK_ENTRIES = 1 << 22


class Layout:
    """The entries of an array of ``shape`` as ``(rows, others, d)`` for a projection
    along ``axis`` (None: every axis but ``batch_axis``, flattened), one draw per
    index of ``batch_axis`` when ``per_row`` (else one shared draw).

    ``index[r, o, p]`` is the flat entry number (C order) at row ``r``, other
    index ``o`` and position ``p``; ``group`` and ``position`` give, per entry,
    the row whose ``P`` it meets and its place along the projected axis.

    >>> layout = Layout((2, 3), axis=1, batch_axis=0, per_row=True)
    >>> layout.index.tolist(), layout.d
    ([[[0, 1, 2]], [[3, 4, 5]]], 3)
    >>> Layout((2, 3), axis=1, batch_axis=0, per_row=False).index.tolist()
    [[[0, 1, 2], [3, 4, 5]]]
    >>> Layout((2, 3)).index.tolist()                 # one P over all 6 entries
    [[[0, 1, 2, 3, 4, 5]]]
    """

    def __init__(self, shape, axis=None, batch_axis=None, per_row: bool = True):
        shape = tuple(int(s) for s in shape)
        nd = len(shape)
        batch = None if batch_axis is None else int(batch_axis) % max(nd, 1)
        along = [i for i in range(nd) if i != batch and (axis is None or i == int(axis) % nd)]
        others = [i for i in range(nd) if i != batch and i not in along]
        lead = [] if batch is None else [batch]
        moved = np.arange(math.prod(shape)).reshape(shape).transpose(lead + others + along)
        d = math.prod(shape[i] for i in along)
        rows = shape[batch] if batch is not None and per_row else 1
        self.shape, self.d = shape, d
        self.index = moved.reshape(rows, -1, d)
        self.group = np.empty(moved.size, dtype=np.int64)
        self.group[self.index] = np.arange(rows)[:, None, None]
        self.position = np.empty(moved.size, dtype=np.int64)
        self.position[self.index] = np.arange(d)

    @property
    def rows(self) -> int:
        return self.index.shape[0]

    def scale(self, stack: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """``stack`` (n, width) + shape with entry ``(r, o, p)`` of sample ``s``
        multiplied by ``weights[s, r, p]``: a sampling ``P`` (a diagonal) per sample."""
        n = len(stack)
        per_entry = np.empty((n, self.index.size), dtype=weights.dtype)
        per_entry[:, self.index] = weights[:, :, None, :]
        return stack * per_entry.reshape((n, 1) + self.shape)

    def project(self, stack: np.ndarray, R: np.ndarray) -> np.ndarray:
        """``stack`` (n, width) + shape with every ``(r, o, :)`` replaced by ``R R^T``
        times it, ``R`` of shape (n, rows, d, k): a dense ``P`` per sample and row."""
        n, width = stack.shape[:2]
        flat = stack.reshape(n, width, -1)
        moved = flat[:, :, self.index]                       # (n, width, rows, others, d)
        inner = np.einsum("nwrod,nrdk->nwrok", moved, R)
        out = np.empty_like(flat)
        out[:, :, self.index] = np.einsum("nwrok,nrdk->nwrod", inner, R)
        return out.reshape(stack.shape)


def samples_per_chunk(g: LCG, n: int, extra: int = 0) -> int:
    """How many samples :func:`reverse_stack` takes at a time so that the adjoint
    stacks (one seed per output entry, every vertex) and ``extra`` floats per sample
    stay within :data:`STACK_ENTRIES`."""
    width = sum(g.size(v) for v in g.outputs)
    per_sample = width * sum(g.size(v) for v in range(g.n_vertices)) + extra
    return max(1, min(n, STACK_ENTRIES // max(per_sample, 1)))


@takes_graph_or_function
def reverse_stack(g: LCG, n: int, edge_weights: np.ndarray | None = None,
                  at_vertex: Mapping[int, Callable] | None = None) -> np.ndarray:
    """Reverse accumulation for ``n`` samples at once: shape (n, outputs, inputs),
    one row per output entry and one column per input entry (in the graph's
    output and input order, arrays in C order).

    ``edge_weights`` (n, n_edges), when given, scales edge ``e``'s contribution in
    sample ``s`` by ``edge_weights[s, e]`` (0: the edge is not in that sample's
    graph).  ``at_vertex[v]``, when given, is applied to the finished adjoint
    stack of ``v`` (shape (n, width) + v's shape) before it is pulled further:
    a random ``P`` at ``v``.  Without either, every sample is the exact Jacobian.
    """
    at_vertex = {} if at_vertex is None else at_vertex
    width = sum(g.size(v) for v in g.outputs)
    adjoint: list = [None] * g.n_vertices
    start = 0
    for v in g.outputs:  # the seeds: the identity over the output entries
        size = g.size(v)
        seed = np.zeros((width, size))
        seed[start:start + size] = np.eye(size)
        adjoint[v] = np.broadcast_to(seed.reshape((1, width) + g.shape(v)),
                                     (n, width) + g.shape(v))
        start += size
    multiply, labels = g.algebra.multiply, g.labels
    ptr = g.in_edges_ptr
    for v in range(g.n_vertices - 1, -1, -1):
        # every out-edge of v has a later target, so v's adjoint is complete here
        if adjoint[v] is None:
            continue
        if v in at_vertex:
            adjoint[v] = at_vertex[v](adjoint[v])
        for e in range(ptr[v], ptr[v + 1]):
            if edge_weights is not None and not edge_weights[:, e].any():
                continue
            pulled = multiply(adjoint[v], labels[e])
            if edge_weights is not None:
                pulled = pulled * edge_weights[:, e].reshape((n,) + (1,) * (pulled.ndim - 1))
            u = int(g.sources[e])
            adjoint[u] = pulled if adjoint[u] is None else adjoint[u] + pulled
    out = np.zeros((n, width, sum(g.size(v) for v in g.inputs)))
    start = 0
    for v in g.inputs:
        size = g.size(v)
        if adjoint[v] is not None:
            out[:, :, start:start + size] = np.reshape(adjoint[v], (n, width, size))
        start += size
    return out
