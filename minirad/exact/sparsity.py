"""Jacobian sparsity patterns from the graph alone, and colourings of them.

Entry ``(i, j)`` of the Jacobian is a sum over the paths from input ``j``
to output ``i`` (Bauer).  Whether it *can* be nonzero therefore depends
only on whether such a path exists: run the same forward recurrence as
every sweep (:func:`minirad.graph.labels.forward`) over :data:`~minirad.graph.labels.BOOLEANS`,
every label ``True``, and no number is ever touched.  The result is the
*structural* pattern: it contains every nonzero of the Jacobian, and more
only where paths cancel (``x - x``) or a partial happens to be zero at
this point (a ReLU below its kink).

A pattern decides how many sweeps the Jacobian needs.  Two columns that
share no row can be seeded *together*: one forward sweep with the sum of
their unit seeds gives both columns, because each row of the result holds
at most one of them.  Grouping columns that way is colouring the *column
intersection graph* (columns adjacent when some row holds both); rows and
reverse sweeps likewise.  :func:`colour_columns` and :func:`colour_rows`
do it with networkx's greedy colouring.

The tridiagonal pattern needs 3 forward seeds whatever its size:

>>> import numpy as np
>>> P = np.eye(6, dtype=bool) | np.eye(6, k=1, dtype=bool) | np.eye(6, k=-1, dtype=bool)
>>> c = colour_columns(P)
>>> c.n_colours, c.groups
(3, ((0, 3), (1, 4), (2, 5)))
>>> is_valid(P, c)
True
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np
import scipy.sparse as sparse

from ..graph import labels
from ..graph.lcg import takes_graph_or_function

__all__ = [
    "BITSETS", "BOOLEAN_BLOCKS", "COLOURING_STRATEGIES", "Colouring", "as_pattern",
    "colour_columns", "colour_rows", "intersection_graph", "is_valid", "operator_pattern",
    "pattern", "pattern_reference",
    "scalar_sizes",
]


def _through(label, bits: int) -> int:
    return bits if label else 0


#: BOOLEANS for all inputs at once: a value is a Python int whose bit ``j``
#: says "input j reaches here"; multiply passes the bits through an existing
#: edge, add is bitwise or.  One sweep gives the whole pattern.
BITSETS = labels.Algebra("bitsets", _through, operator.or_, zero=0, one=None)


# -------------------------------------------------------------- sizes
@takes_graph_or_function
def scalar_sizes(g, vertices) -> list[int]:
    """How many numbers each vertex holds: 1 for a number, the array size for an
    array (its scalar copies are its entries in C order).

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> scalar_sizes(g, g.inputs)
    [1, 1]
    """
    return [math.prod(g.shapes[v]) for v in vertices]


def _is_vector(g) -> bool:
    """True when some label is a Jacobian block (the graph has array vertices)."""
    return g.algebra is not labels.FLOATS


# ------------------------------------------------------------ patterns
@takes_graph_or_function
def pattern_reference(g) -> np.ndarray:
    """The structural pattern of a scalar LCG, one BOOLEANS forward sweep per input:
    ``P[i, j]`` is True when some path leads from input ``j`` to output ``i``.

    >>> from minirad import examples
    >>> pattern_reference(examples.two_outputs()).astype(int)
    array([[1, 1],
           [1, 1]])
    """
    if _is_vector(g):
        raise TypeError("pattern_reference works on a scalar LCG; use pattern() for "
                        "an LCG of arrays")
    true_labels = [True] * len(g.sources)
    P = np.zeros((len(g.outputs), len(g.inputs)), dtype=bool)
    for j, x in enumerate(g.inputs):
        reached = labels.forward(g, {x: True}, algebra=labels.BOOLEANS, labels=true_labels)
        P[:, j] = [bool(reached.values[y]) for y in g.outputs]
    return P


@takes_graph_or_function
def pattern(g) -> np.ndarray:
    """The structural pattern of the Jacobian, shape ``(outputs, inputs)`` counted in
    numbers (an LCG of arrays's arrays contribute one row or column per entry, as in
    :func:`minirad.scalarize`).

    A scalar LCG takes one forward sweep over :data:`BITSETS` (every input's
    Booleans at once; equal to :func:`pattern_reference`).  An LCG of arrays runs
    the same recurrence over Boolean sparse matrices, each edge contributing
    :func:`operator_pattern` of its operator, so a diagonal block stays a
    diagonal and nothing is expanded to scalars.

    >>> from minirad import trace, ops
    >>> g = trace(lambda x: [x[0] * x[1], ops.sin(x[2])], [1.0, 2.0, 3.0])
    >>> pattern(g).astype(int)
    array([[1, 1, 0],
           [0, 0, 1]])
    """
    if _is_vector(g):
        return _vector_pattern(g)
    seeds = {x: 1 << j for j, x in enumerate(g.inputs)}
    swept = labels.forward(g, seeds, algebra=BITSETS, labels=[True] * len(g.sources))
    P = np.zeros((len(g.outputs), len(g.inputs)), dtype=bool)
    for i, y in enumerate(g.outputs):
        bits = swept.values[y] or 0
        for j in range(len(g.inputs)):
            P[i, j] = bool(bits >> j & 1)
    return P


# kinds whose matrix is diagonal: their pattern is where ``apply(ones)`` is nonzero
_DIAGONAL_KINDS = ("identity", "diagonal", "mask")


def operator_pattern(op) -> sparse.csr_array:
    """The Boolean pattern of an operator's matrix (out_size x in_size), sparse.

    An operator with a ``pattern()`` method gives its own; a diagonal kind
    (identity, diagonal, mask) is a diagonal; any other operator is densified
    (:meth:`~minirad.graph.operators.Operator.to_dense`, refused above its size
    limit) and its nonzeros taken, as :func:`minirad.scalarize` does.

    >>> class Scale:                    # any object with the operator interface
    ...     kind, in_shape, out_shape, shape = "diagonal", (3,), (3,), (3, 3)
    ...     def apply(self, x): return np.array([2.0, 0.0, 1.0]) * x
    >>> operator_pattern(Scale()).toarray().astype(int)
    array([[1, 0, 0],
           [0, 0, 0],
           [0, 0, 1]])
    """
    if isinstance(op, float):   # an edge between two numbers
        return sparse.csr_array(np.array([[op != 0]]))
    own = getattr(op, "pattern", None)
    if callable(own):
        return sparse.csr_array(own(), dtype=bool)
    if getattr(op, "kind", None) in _DIAGONAL_KINDS:
        diagonal = np.asarray(op.apply(np.ones(op.in_shape))).reshape(-1) != 0
        return sparse.csr_array(sparse.diags_array(diagonal, dtype=bool))
    return sparse.csr_array(np.asarray(op.to_dense()) != 0)


def _product(outer, inner):
    return sparse.csr_array((outer.astype(np.int64) @ inner.astype(np.int64)) != 0)


def _union(a, b):
    return sparse.csr_array((a.astype(np.int8) + b.astype(np.int8)) != 0)


#: BOOLEANS on blocks: a label or value is a Boolean sparse matrix; the block
#: recurrence over it gives the scalar-level pattern of an LCG of arrays
BOOLEAN_BLOCKS = labels.Algebra("boolean blocks", _product, _union)


def _vector_pattern(g) -> np.ndarray:
    block_labels = [operator_pattern(op) for op in g.labels]
    in_sizes, out_sizes = scalar_sizes(g, g.inputs), scalar_sizes(g, g.outputs)
    rows = np.concatenate([[0], np.cumsum(out_sizes)]).astype(int)
    cols = np.concatenate([[0], np.cumsum(in_sizes)]).astype(int)
    P = np.zeros((rows[-1], cols[-1]), dtype=bool)
    for j, x in enumerate(g.inputs):
        seed = sparse.csr_array(sparse.eye_array(in_sizes[j], dtype=bool))
        swept = labels.forward(g, {x: seed}, algebra=BOOLEAN_BLOCKS, labels=block_labels)
        for i, y in enumerate(g.outputs):
            if swept.values[y] is not None:
                P[rows[i]:rows[i + 1], cols[j]:cols[j + 1]] = swept.values[y].toarray()
    return P


# ----------------------------------------------------------- colouring
def _natural(G, colours):
    """Greedy in index order: optimal on banded patterns (column j gets j mod width)."""
    return sorted(G)


#: networkx greedy strategies tried by ``strategy="best"`` (the fewest colours wins,
#: ties to the earlier one); any other networkx strategy name is accepted too
COLOURING_STRATEGIES: dict[str, str | Callable] = {
    "natural": _natural,
    "largest_first": "largest_first",
    "smallest_last": "smallest_last",
    "saturation_largest_first": "saturation_largest_first",
}


def as_pattern(P) -> np.ndarray:
    """A pattern as a 2-D Boolean array (numbers: nonzero is True).

    >>> as_pattern([[0.0, 2.5]]).tolist()
    [[False, True]]
    """
    P = np.asarray(P)
    if P.ndim != 2:
        raise ValueError(f"a sparsity pattern is a 2-D array (outputs x inputs), got shape "
                         f"{P.shape}")
    if P.dtype != bool:
        if not np.issubdtype(P.dtype, np.number):
            raise TypeError(f"a sparsity pattern holds Booleans or numbers, not {P.dtype}")
        P = P != 0
    return P


def intersection_graph(P, side: str = "columns") -> nx.Graph:
    """Columns (or rows) of ``P`` as vertices, adjacent when some row (column)
    holds both: the graph whose proper colourings are valid seed groupings.

    >>> P = np.array([[1, 1, 0], [0, 0, 1]], dtype=bool)
    >>> sorted(intersection_graph(P).edges()), sorted(intersection_graph(P, "rows").edges())
    ([(0, 1)], [])
    """
    P = as_pattern(P)
    if side not in ("columns", "rows"):
        raise ValueError(f"side must be 'columns' or 'rows', not {side!r}")
    M = sparse.csr_array(P if side == "columns" else P.T, dtype=np.int64)
    shared = sparse.coo_array(M.T @ M)   # shared[j, k] > 0: some row holds j and k
    G = nx.Graph()
    G.add_nodes_from(range(M.shape[1]))
    G.add_edges_from((int(j), int(k)) for j, k in zip(shared.row, shared.col) if j < k)
    return G


@dataclass(frozen=True)
class Colouring:
    """A grouping of the columns (forward seeds) or rows (reverse seeds) of a
    pattern.  ``colours[j]`` is the group of column (row) ``j``; ``groups``
    lists each group's members; ``strategy`` is the networkx strategy used."""

    side: str
    colours: tuple[int, ...]
    strategy: str

    @property
    def n_colours(self) -> int:
        return max(self.colours, default=-1) + 1

    @property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        members: list[list[int]] = [[] for _ in range(self.n_colours)]
        for j, c in enumerate(self.colours):
            members[c].append(j)
        return tuple(tuple(m) for m in members)

    def seeds(self) -> np.ndarray:
        """The seed matrix: ``(n_columns, n_colours)`` with a 1 where column j
        is in group c (forward, ``J @ S``), or ``(n_colours, n_rows)``
        (reverse, ``W @ J``)."""
        S = np.zeros((len(self.colours), self.n_colours))
        S[np.arange(len(self.colours)), list(self.colours)] = 1.0
        return S if self.side == "columns" else S.T

    def __repr__(self) -> str:
        return (f"Colouring({self.side}: {self.n_colours} colours for {len(self.colours)} "
                f"{self.side}, {self.strategy})")


def _colour(P: np.ndarray, side: str, strategy: str) -> Colouring:
    G = intersection_graph(P, side)
    names = list(COLOURING_STRATEGIES) if strategy == "best" else [strategy]
    best = None
    for name in names:
        chosen = COLOURING_STRATEGIES.get(name, name)
        try:
            colouring = nx.greedy_color(G, strategy=chosen)
        except (nx.NetworkXError, KeyError, AttributeError):
            valid = ", ".join(["'best'", *map(repr, COLOURING_STRATEGIES)])
            raise ValueError(f"unknown colouring strategy {name!r}; use {valid} or another "
                             f"networkx greedy_color strategy") from None
        colours = tuple(colouring[j] for j in range(G.number_of_nodes()))
        if best is None or max(colours, default=-1) < max(best[0], default=-1):
            best = (colours, name)
    # renumber groups by their first member, so group 0 holds column 0
    order = {c: k for k, c in enumerate(dict.fromkeys(best[0]))}
    return Colouring(side, tuple(order[c] for c in best[0]), best[1])


def colour_columns(P, strategy: str = "best") -> Colouring:
    """Group the columns of pattern ``P`` so that no two columns of a group share a
    row: each group is one forward sweep.  ``strategy`` is ``"best"`` (try
    :data:`COLOURING_STRATEGIES`, keep the fewest colours) or one strategy.

    >>> P = np.array([[1, 1, 1], [0, 1, 0], [0, 0, 1]], dtype=bool)   # a dense row
    >>> colour_columns(P).n_colours, colour_rows(P).n_colours
    (3, 2)
    """
    return _colour(as_pattern(P), "columns", strategy)


def colour_rows(P, strategy: str = "best") -> Colouring:
    """Group the rows of pattern ``P`` so that no two rows of a group share a
    column: each group is one reverse sweep (see :func:`colour_columns`)."""
    return _colour(as_pattern(P), "rows", strategy)


def is_valid(P, colouring: Colouring) -> bool:
    """Whether every entry of ``P`` can be read back from the compressed sweeps:
    no row (column) holds two columns (rows) of one group.

    >>> P = np.ones((2, 2), dtype=bool)
    >>> is_valid(P, Colouring("columns", (0, 0), "by hand"))
    False
    """
    P = as_pattern(P)
    M = P if colouring.side == "columns" else P.T
    if len(colouring.colours) != M.shape[1]:
        raise ValueError(f"the colouring has {len(colouring.colours)} {colouring.side}, the "
                         f"pattern {M.shape[1]}")
    S = colouring.seeds() if colouring.side == "columns" else colouring.seeds().T
    return bool(np.all(M.astype(np.int64) @ S.astype(np.int64) <= 1))
