"""A graph with array vertices as a graph of numbers: one vertex per entry.

:func:`scalarize` turns every Jacobian block into its nonzero entries, so
that everything written for numbers (Bauer's paths, elimination counted in
multiplications, Algorithm 1, the pictures) applies to a small array graph,
and tests can hold the two levels against each other.  :func:`from_chain`
builds the array graph of a chain of Jacobians.
"""

from __future__ import annotations

import math

import numpy as np

from .lcg import INPUT, LCG, takes_graph_or_function
from .operators import DENSE_LIMIT, Dense

__all__ = ["SCALARIZE_LIMIT", "entry_names", "from_chain", "scalarize"]

#: the largest scalar graph ``scalarize`` builds (scalar edges)
SCALARIZE_LIMIT = 200_000


def entry_names(name: str, shape: tuple) -> list[str]:
    """Names of the scalar copies of an array vertex: ``x`` or ``x[0,1]``, ..."""
    if shape == ():
        return [name]
    return [f"{name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


@takes_graph_or_function
def scalarize(g: LCG, max_entries: int = SCALARIZE_LIMIT) -> LCG:
    """The graph of numbers of a graph with arrays: one vertex per array entry.

    Parameters
    ----------
    g : LCG
        The graph (or a function, followed by its point, to trace first); a
        graph of numbers comes back as it is.
    max_entries : int, optional
        The most scalar vertices, and scalar edges, the result may have.

    Returns
    -------
    LCG
        One vertex per array entry (named ``x[0]``, ``x[1]``, ...), one edge
        per nonzero entry of each Jacobian block, the same Jacobian.

    Raises
    ------
    ValueError
        When the result would have more than ``max_entries`` vertices or edges
        (checked before they are made).

    See Also
    --------
    minirad.exact.paths.count_scalar_paths : Its path counts, without building it.
    minirad.graph.scalarize.from_chain : A chain of Jacobian blocks as a graph.

    Notes
    -----
    Every scalar algorithm (Bauer's paths, face elimination, Algorithm 1 on
    single entries, the pictures) then applies, and the two levels of the RAD
    paper's Sec. 3.2 can be held against each other.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda x: (x * x).sum(), np.array([1.0, 2.0]))
    >>> s = scalarize(g)
    >>> s.n_vertices, s.n_edges, [s.partial(u, v) for u, v, _ in s.edges()]
    (5, 4, [2.0, 4.0, 1.0, 1.0])
    """
    if isinstance(g.labels, np.ndarray):
        return g   # already a graph of numbers
    sizes = [math.prod(s) for s in g.shapes]
    if sum(sizes) > max_entries:
        raise ValueError(f"scalarizing makes {sum(sizes):,} scalar vertices, above the limit "
                         f"of {max_entries:,}; pass a larger max_entries")
    first = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    src, dst, partials = [], [], []
    total = 0
    for u, v, op in g.edges():
        if isinstance(op, float):   # between two numbers: the 1 x 1 block itself
            op = Dense(np.array([[op]]), (), ())
        try:
            dense = op.to_dense(limit=max(DENSE_LIMIT, 50 * max_entries))
        except ValueError as error:
            raise ValueError(f"cannot scalarize edge {g.names[u]} -> {g.names[v]}: "
                             f"{error}") from None
        rows, cols = np.nonzero(dense)
        total += len(rows)
        if total > max_entries:
            raise ValueError(f"scalarizing makes more than {max_entries:,} scalar edges; pass a "
                             f"larger max_entries")
        src.append(first[u] + cols)
        dst.append(first[v] + rows)
        partials.append(dense[rows, cols].astype(np.float64))
    names = [n for v in range(g.n_vertices) for n in entry_names(g.names[v], g.shapes[v])]
    values = (np.concatenate([np.asarray(x, dtype=np.float64).reshape(-1) for x in g.values])
              if g.values is not None and names else None)

    def concat(parts):
        return np.concatenate(parts) if parts else np.zeros(0)
    inputs = [i for v in g.inputs for i in range(first[v], first[v + 1])]
    outputs = [i for v in g.outputs for i in range(first[v], first[v + 1])]
    ops = ["input" if g.kind(v) == INPUT else "" for v in range(g.n_vertices)
           for _ in range(sizes[v])]
    return LCG(names, concat(src), concat(dst), concat(partials), inputs, outputs,
               values=values, ops=ops)


@takes_graph_or_function
def vertex_copies(g: LCG, vertex) -> range:
    """The numbers of a vertex's scalar copies in :func:`scalarize` ``(g)``."""
    v = g.index(vertex)
    start = sum(math.prod(s) for s in g.shapes[:v])
    return range(start, start + math.prod(g.shapes[v]))


def from_chain(chain) -> LCG:
    """The LCG of a chain of Jacobians ``J_L ... J_1`` (``chain[0]`` applied first):
    vertices ``theta``, ``v1``, ..., ``y`` holding vectors, one dense edge per
    factor; ``scalarize(from_chain(chain))`` is
    :func:`minirad.examples.chain_graph` ``(chain)`` up to names.

    >>> g = from_chain([np.ones((3, 1)), np.ones((2, 3))])
    >>> g.names, g.shapes
    (('theta', 'v1', 'y'), ((1,), (3,), (2,)))
    """
    if isinstance(chain, np.ndarray) or not len(chain):
        raise ValueError("a chain is a non-empty list of 2-D matrices")
    factors = [np.asarray(m, dtype=np.float64) for m in chain]
    for l, m in enumerate(factors):
        if m.ndim != 2:
            raise ValueError(f"chain[{l}] has shape {m.shape}; factors are 2-D matrices")
        if l and m.shape[1] != factors[l - 1].shape[0]:
            raise ValueError(f"chain[{l}] has {m.shape[1]} columns but chain[{l - 1}] has "
                             f"{factors[l - 1].shape[0]} rows")
        if not np.all(np.isfinite(m)):
            raise ValueError(f"chain[{l}] has a non-finite entry")
    L = len(factors)
    names = ["theta"] + [f"v{l}" for l in range(1, L)] + ["y"]
    shapes = [(factors[0].shape[1],)] + [(m.shape[0],) for m in factors]
    labels = [Dense(m, (m.shape[0],), (m.shape[1],)) for m in factors]
    return LCG(names, range(L), range(1, L + 1), labels, [0], [L], shapes=shapes)


