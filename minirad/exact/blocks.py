"""Jacobians of a vector LCG by sweeps over operator blocks.

The forward and reverse sweeps *are* the scalar LCG's reference recurrences
(:func:`minirad.graph.labels.forward` and :func:`~minirad.graph.labels.reverse`), run
with the graph's own algebra, :data:`~minirad.graph.operators.OPERATORS`: a
tangent or adjoint is an array and an edge label an operator, so one step
is a JVP ``J t`` or a VJP ``a J``.  Operation counts come from the algebra
and respect structure (a diagonal costs d, not d²).  Bauer's formula walks
the paths with :func:`minirad.graph.labels.walk`; path counts are a forward sweep
over :data:`~minirad.graph.labels.COUNTS`.  Elimination and the matrix-chain order
count flops (the algebra's costs) rather than label multiplications.

Seeds may carry a leading *stack* axis: a stack of N tangents moves through
the graph at once, which is how :func:`jacobian` gets every column.

>>> import numpy as np
>>> from minirad import trace
>>> g = trace(lambda x: (x * x).sum(), np.array([1.0, 2.0, 3.0]))
>>> gradient(g)[0]
array([2., 4., 6.])
>>> jacobian(g, "forward")
array([[2., 4., 6.]])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..graph import labels
from ..graph.operators import OPERATORS

#: the largest Jacobian (entries) :func:`jacobian` assembles
JACOBIAN_LIMIT = 4_000_000


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


def forward_sweep(g, tangents) -> labels.Propagation:
    """Push one tangent per input (None: zero) forward: ``t_v = sum_u J_vu t_u``.

    The reference recurrence (:func:`minirad.graph.labels.forward`): edges in
    topological order, each one ``algebra.multiply(label, tangent)``, meeting
    paths ``algebra.add``; ``values[v]`` is None where no tangent arrives.

    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda x: np.exp(x) * 2.0, np.zeros(3))
    >>> sweep = forward_sweep(g, [np.array([1.0, 0.0, 0.0])])
    >>> sweep.values[g.outputs[0]], sweep.multiplications   # two diagonals of size 3
    (array([2., 0., 0.]), 6)
    """
    return labels.forward(g, _seeds(g, list(tangents), g.inputs, "input"))


def reverse_sweep(g, adjoints) -> labels.Propagation:
    """Pull one adjoint per output (None: zero) back: ``a_u = sum_v a_v J_vu``.

    The reference recurrence (:func:`minirad.graph.labels.reverse`): edges in
    reverse order, each one ``algebra.multiply(adjoint, label)`` (a VJP),
    accumulated with ``algebra.add`` where a vertex is used several times.

    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda x: x * x + x, np.array([1.0, 2.0]))
    >>> reverse_sweep(g, [np.ones(2)]).values[g.inputs[0]]   # 2x + 1
    array([3., 5.])
    """
    return labels.reverse(g, _seeds(g, list(adjoints), g.outputs, "output"))


def _zeros_for(g, v, lead=()):
    return np.zeros(lead + g.shapes[v], dtype=g.dtypes[v])


def jvp(g, tangents) -> list[np.ndarray]:
    """The output tangents ``J t`` for one tangent array per input.

    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda A, x: A @ x, np.eye(2), np.array([1.0, 2.0]))
    >>> jvp(g, [np.zeros((2, 2)), np.array([1.0, 0.0])])   # dx only: A dx
    [array([1., 0.])]
    """
    sweep = forward_sweep(g, tangents)
    return [sweep.values[v] if sweep.values[v] is not None else _zeros_for(g, v)
            for v in g.outputs]


def vjp(g, adjoints) -> list[np.ndarray]:
    """The input adjoints ``a J`` for one adjoint array per output.

    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda A, x: A @ x, np.eye(2), np.array([1.0, 2.0]))
    >>> dA, dx = vjp(g, [np.array([1.0, 0.0])])
    >>> dA                                                 # the outer product a x^T
    array([[1., 2.],
           [0., 0.]])
    """
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
    ``"reverse"`` sweep.

    >>> import numpy as np
    >>> from minirad import trace
    >>> jacobian(trace(lambda x: x[::-1] * 2.0, np.ones(2)), "forward")
    array([[0., 2.],
           [2., 0.]])
    """
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


# ------------------------------------------------------------- Bauer on blocks
def count_vector_paths(g) -> np.ndarray:
    """Paths from each input to each output *in the vector graph* (exact Python ints,
    shape (n_outputs, n_inputs)): a forward sweep over integers.  Compare
    ``minirad.count_paths(scalarize(g))`` for the paths between array entries.

    >>> import numpy as np
    >>> from minirad import trace
    >>> count_vector_paths(trace(lambda x: np.exp(x) * x, np.ones(3)))
    array([[2]], dtype=object)
    """
    ones = [1] * g.n_edges
    counts = np.zeros((len(g.outputs), len(g.inputs)), dtype=object)
    for c, s in enumerate(g.inputs):
        reached = labels.forward(g, {s: 1}, algebra=labels.COUNTS, labels=ones).values
        for r, t in enumerate(g.outputs):
            counts[r, c] = reached[t] or 0
    return counts


@dataclass(frozen=True)
class BlockJacobian:
    """A Jacobian assembled from operator blocks, with the algebra's operation counts.

    ``blocks[r][c]`` is the operator (or None: no path) from input c to output r.
    """

    method: str
    blocks: tuple
    multiplications: int
    additions: int
    shapes: tuple

    @property
    def operations(self) -> int:
        return self.multiplications + self.additions

    def dense(self, limit: int = JACOBIAN_LIMIT) -> np.ndarray:
        """The blocks as one float64 matrix (rows: outputs, columns: inputs)."""
        out_shapes, in_shapes = self.shapes
        rows = []
        for r, o in enumerate(out_shapes):
            row = []
            for c, i in enumerate(in_shapes):
                op = self.blocks[r][c]
                row.append(np.zeros((math.prod(o), math.prod(i))) if op is None
                           else np.asarray(op.to_dense(limit), dtype=np.float64))
            rows.append(np.concatenate(row, axis=1) if row else np.zeros((math.prod(o), 0)))
        return np.concatenate(rows, axis=0) if rows else np.zeros((0, 0))


def vector_bauer(g, max_paths: int = 100_000) -> BlockJacobian:
    """Bauer's formula on blocks: for each input/output pair, the sum over vector paths
    of the product of the operators along the path (outer ∘ ... ∘ inner).

    Every path is multiplied on its own (that is what makes the path sum expensive);
    refused when there are more than ``max_paths`` paths.

    >>> import numpy as np
    >>> from minirad import trace
    >>> result = vector_bauer(trace(lambda x: np.exp(x) * x, np.zeros(2)))
    >>> result.dense(), result.multiplications              # (e^x x)' = e^x (1 + x)
    (array([[1., 0.],
           [0., 1.]]), 2)
    """
    total = sum(count_vector_paths(g).ravel().tolist())
    if total > max_paths:
        raise ValueError(f"the graph has {total:,} vector paths, more than max_paths = "
                         f"{max_paths:,}")
    algebra = g.algebra
    mults = adds = 0
    blocks = []
    for t in g.outputs:
        row = []
        for s in g.inputs:
            acc = None
            for path in labels.walk(g, s, t):
                product = None
                for u, v in zip(path, path[1:]):
                    label = g.labels[g.edge_index(u, v)]
                    if product is None:
                        product = label
                    else:
                        mults += algebra.multiply_cost(label, product)
                        product = algebra.multiply(label, product)
                if acc is None:
                    acc = product
                else:
                    adds += algebra.add_cost(acc, product)
                    acc = algebra.add(acc, product)
            row.append(acc)
        blocks.append(tuple(row))
    return BlockJacobian("bauer", tuple(blocks), mults, adds,
                         (tuple(g.shapes[v] for v in g.outputs),
                          tuple(g.shapes[v] for v in g.inputs)))


# -------------------------------------------------------- elimination on blocks
ORDERS = ("forward", "reverse", "markowitz")


def vector_eliminate(g, order="markowitz") -> BlockJacobian:
    """Vertex elimination on blocks: removing intermediate v joins every predecessor u
    to every successor w by ``label(v->w) ∘ label(u->v)``, added to an existing
    ``u -> w`` label.  ``order`` is ``"forward"``, ``"reverse"``, ``"markowitz"``
    (fewest |pred| x |succ| first, recomputed after each step, ties to the lowest
    number) or a list of intermediate vertices (names or numbers).  Costs are the
    algebra's: a dense product m x k x n, a diagonal product d, ...

    >>> import numpy as np
    >>> from minirad.graph.scalarize import from_chain
    >>> g = from_chain([np.ones((4, 1)), np.ones((4, 4)), np.ones((1, 4))])
    >>> [vector_eliminate(g, o).multiplications for o in ("forward", "reverse")]
    [20, 20]
    """
    algebra = g.algebra
    into: dict[int, dict[int, object]] = {v: {} for v in range(g.n_vertices)}
    out_of: dict[int, set] = {v: set() for v in range(g.n_vertices)}
    for u, v, label in g.edges():
        into[v][u] = label
        out_of[u].add(v)
    remaining = list(g.intermediates)
    if isinstance(order, str):
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS} or a list of intermediate "
                             f"vertices, not {order!r}")
        plan = None if order == "markowitz" else (
            remaining if order == "forward" else remaining[::-1])
    else:
        plan = [g.index(v) for v in order]
        if sorted(plan) != sorted(remaining):
            raise ValueError(f"an elimination order must list every intermediate vertex "
                             f"once: {[g.names[v] for v in remaining]}")
    mults = adds = 0
    left = set(remaining)
    for step in range(len(remaining)):
        if plan is None:
            v = min(left, key=lambda x: (len(into[x]) * len(out_of[x]), x))
        else:
            v = plan[step]
        left.discard(v)
        for w in sorted(out_of[v]):
            outer = into[w].pop(v)
            for u, inner in into[v].items():
                mults += algebra.multiply_cost(outer, inner)
                term = algebra.multiply(outer, inner)
                if u in into[w]:
                    adds += algebra.add_cost(into[w][u], term)
                    term = algebra.add(into[w][u], term)
                into[w][u] = term
                out_of[u].add(w)
        for u in into[v]:
            out_of[u].discard(v)
        into[v] = {}
        out_of[v] = set()
    blocks = tuple(tuple(into[t].get(s) for s in g.inputs) for t in g.outputs)
    name = order if isinstance(order, str) else "given order"
    return BlockJacobian(f"eliminate ({name})", blocks, mults, adds,
                         (tuple(g.shapes[v] for v in g.outputs),
                          tuple(g.shapes[v] for v in g.inputs)))


# ------------------------------------------------------------ matrix chains
def chain_labels(g) -> list:
    """The operators of a chain graph (one input, one output, every vertex one
    predecessor and one successor), from the input side."""
    if len(g.inputs) != 1 or len(g.outputs) != 1 or g.n_edges != g.n_vertices - 1 or any(
            len(g.predecessors(v)) != 1 or len(g.successors(v)) != 1 for v in g.intermediates):
        raise ValueError("not a chain: needs one input, one output and every other vertex "
                         "with exactly one predecessor and one successor")
    labels, v = [], g.inputs[0]
    while v != g.outputs[0]:
        (w,) = g.successors(v)
        labels.append(g.labels[g.edge_index(v, w)])
        v = w
    return labels


@dataclass(frozen=True)
class ChainOrder:
    """The cheapest way to multiply a chain of operators J_L ∘ ... ∘ J_1.

    ``split[i][j]`` is where the optimal product of factors i..j splits; ``cost``
    its multiplications under the algebra; ``order`` the intermediate vertices
    (1..L-1, counted from the input) in an elimination order that performs it.
    """

    cost: int
    order: tuple
    product: object
    parenthesized: str


def optimal_chain(labels, algebra=None) -> ChainOrder:
    """Matrix-chain dynamic programming over operator factors (first factor applied
    first), with the algebra's multiplication costs, so structure counts (two
    diagonals multiply in d, a dense block in m k n).

    Eliminating vertex v of a chain multiplies the two blocks that meet at v;
    any parenthesization is an elimination order and back.

    >>> import numpy as np
    >>> from minirad.graph.operators import Dense
    >>> chain = [Dense(np.ones((30, 10)), (30,), (10,)), Dense(np.ones((5, 30)), (5,), (30,)),
    ...          Dense(np.ones((60, 5)), (60,), (5,))]
    >>> best = optimal_chain(chain)
    >>> best.cost, best.parenthesized
    (4500, '(J3 (J2 J1))')
    """
    if algebra is None:
        algebra = OPERATORS
    n = len(labels)
    if n == 0:
        raise ValueError("an empty chain has no product")
    best: dict[tuple[int, int], tuple[int, object, int]] = {}
    for i in range(n):
        best[i, i] = (0, labels[i], -1)
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            j = i + length - 1
            choice = None
            for s in range(i, j):
                lower, upper = best[i, s], best[s + 1, j]   # factors i..s applied first
                cost = lower[0] + upper[0] + algebra.multiply_cost(upper[1], lower[1])
                if choice is None or cost < choice[0]:
                    choice = (cost, s, lower[1], upper[1])
            cost, s, lower, upper = choice
            best[i, j] = (cost, algebra.multiply(upper, lower), s)

    def elimination(i, j):
        # the split vertex (between factor s and s+1) is eliminated last
        if i == j:
            return []
        s = best[i, j][2]
        return elimination(i, s) + elimination(s + 1, j) + [s + 1]

    def text(i, j):
        if i == j:
            return f"J{i + 1}"
        s = best[i, j][2]
        return f"({text(s + 1, j)} {text(i, s)})"
    cost, product, _ = best[0, n - 1]
    return ChainOrder(cost, tuple(elimination(0, n - 1)), product, text(0, n - 1))
