"""Cheapest elimination orders: over every subset (graphs of numbers) and on chains.

Which order of vertex elimination (:mod:`minirad.exact.elimination`) costs
least?  Two exact answers, each where it is affordable:

* :func:`cheapest_order`, on a graph of numbers: every product costs one
  multiplication, so what eliminating a vertex costs depends only on the
  *set* already eliminated, and a dynamic programme over the 2**k subsets
  of the k intermediates finds the best order;
* :func:`optimal_chain`, on a chain ``J_L ... J_1`` of any labels: the
  matrix-chain dynamic programme over parenthesizations, each product
  priced by the labels' algebra (two diagonals multiply in d, dense blocks
  in m x k x n).  Eliminating the vertex between two factors multiplies
  them, so every parenthesization is an elimination order and back.

>>> from minirad import examples
>>> [examples.figure1().names[v] for v in cheapest_order(examples.figure1())]
['v3', 'v4', 'v5', 'v2']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..graph.calls import takes_graph_or_function
from ..graph.labels import FLOATS
from ..graph.operators import OPERATORS

__all__ = ["CHAIN_LIMIT", "OPTIMAL_LIMIT", "ChainOrder", "chain_labels", "chain_vertices",
           "check_search", "cheapest_order", "is_chain", "optimal_chain"]

#: the exhaustive search visits 2**k sets of eliminated vertices
OPTIMAL_LIMIT = 16
#: the matrix-chain programme on k intermediates forms k**2 / 2 products of sub-chains and
#: prices k**3 / 6 splits: about 3 s at k = 80 (blocks of 30 x 30), half a minute at 160
CHAIN_LIMIT = 64


# ------------------------------------------------------- graphs of numbers
def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


@takes_graph_or_function
def cheapest_order(g, max_intermediates: int = OPTIMAL_LIMIT) -> list[int]:
    """An order of least (multiplications, additions) on a graph of numbers, by
    dynamic programming over subsets.

    The structure left after eliminating a set S does not depend on the
    order: u -> w survives iff some path from u to w has all its interior
    vertices in S.  So the cost of eliminating v next depends only on S,
    and the cheapest way to reach S is a shortest path over the 2**k
    subsets, computed one subset size at a time with one structure per
    subset (as bitmasks of predecessors and successors).  Ties go to the
    lexicographically smallest order (by vertex number), which is exact
    because an optimal order's prefix is an optimal order for the set it
    eliminates.  More than ``max_intermediates`` intermediates are refused.
    """
    mids = g.intermediates
    k = len(mids)
    check_search(k, max_intermediates, f"searches all 2**{k} subsets of the graph's {k} "
                                       f"intermediates")
    n = g.n_vertices
    P, S = [0] * n, [0] * n
    for u, v in zip(g.sources.tolist(), g.targets.tolist()):
        P[v] |= 1 << u
        S[u] |= 1 << v
    best: dict[int, tuple[tuple[int, int], tuple[int, ...]]] = {0: ((0, 0), ())}
    layer = {0: (P, S)}
    for _ in range(k):
        following = {}
        for done, (P, S) in layer.items():
            so_far, prefix = best[done]
            for i, v in enumerate(mids):
                if done >> i & 1:
                    continue
                into, out = P[v], S[v]
                after = done | 1 << i
                known = best.get(after)
                multiplications = so_far[0] + into.bit_count() * out.bit_count()
                # counting merges is the slow part; skip it when this step cannot win
                if known is None or multiplications <= known[0][0]:
                    merges = sum((P[s] & into).bit_count() for s in _bits(out))
                    cost = (multiplications, so_far[1] + merges)
                    if known is None or cost < known[0] or (
                            cost == known[0] and prefix + (i,) < known[1]):
                        best[after] = (cost, prefix + (i,))
                if after not in following:
                    following[after] = _structure_after(P, S, v)
        layer = following
    return [mids[i] for i in best[(1 << k) - 1][1]]


def check_search(k: int, limit: int, what: str) -> None:
    """Refuse an optimal-order search over ``k`` intermediates beyond ``limit``, before it
    starts, saying what it would do and how to ask for it anyway.

    >>> check_search(20, 16, "searches all 2**20 subsets")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the optimal order searches all 2**20 subsets; ... pass max_intermediates=20 ...
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise TypeError(f"max_intermediates must be an int >= 0, not {limit!r}")
    if k > limit:
        raise ValueError(f"the optimal order {what}; it is limited to {limit} intermediates. "
                         f"Use 'markowitz' or an explicit order, or pass "
                         f"max_intermediates={k} to search anyway (it may take very long)")


def _structure_after(P: list[int], S: list[int], v: int) -> tuple[list[int], list[int]]:
    into, out, bit = P[v], S[v], ~(1 << v)
    P, S = P.copy(), S.copy()
    for s in _bits(out):
        P[s] = (P[s] & bit) | into
    for p in _bits(into):
        S[p] = (S[p] & bit) | out
    P[v] = S[v] = 0
    return P, S


# ------------------------------------------------------------------ chains
@takes_graph_or_function
def is_chain(g) -> bool:
    """One input, one output, and every other vertex one predecessor and one successor."""
    return (len(g.inputs) == 1 and len(g.outputs) == 1 and g.n_edges == g.n_vertices - 1
            and all(g.in_degree(v) == 1 and g.out_degree(v) == 1 for v in g.intermediates))


@takes_graph_or_function
def chain_vertices(g) -> list[int]:
    """The vertices of a chain graph from its input to its output."""
    if not is_chain(g):
        raise ValueError("not a chain: needs one input, one output and every other vertex "
                         "with exactly one predecessor and one successor")
    path = [g.inputs[0]]
    while path[-1] != g.outputs[0]:
        (w,) = g.successors(path[-1])
        path.append(w)
    return path


@takes_graph_or_function
def chain_labels(g) -> list:
    """The labels of a chain graph (:func:`chain_vertices`), from the input side.

    >>> import numpy as np
    >>> from minirad.graph.scalarize import from_chain
    >>> [label.shape for label in chain_labels(from_chain([np.ones((3, 2)), np.ones((4, 3))]))]
    [(3, 2), (4, 3)]
    """
    path = chain_vertices(g)
    return [g.label(u, v) for u, v in zip(path, path[1:])]


@dataclass(frozen=True)
class ChainOrder:
    """The cheapest way to multiply a chain of labels J_L ... J_1.

    ``cost`` is its multiplications under the algebra, ``order`` the
    positions of the intermediate vertices (1..L-1, counted from the input)
    in an elimination order that performs it, ``product`` the product and
    ``parenthesized`` the order as text.
    """

    cost: int
    order: tuple
    product: object
    parenthesized: str


def optimal_chain(labels, algebra=None) -> ChainOrder:
    """Matrix-chain dynamic programming over the factors of a chain (the first
    factor applied first), priced by ``algebra`` (default: the one the labels
    belong to), so structure counts (two diagonals multiply in d, a dense
    block in m k n).

    >>> import numpy as np
    >>> from minirad.graph.operators import Dense
    >>> chain = [Dense(np.ones((30, 10)), (30,), (10,)), Dense(np.ones((5, 30)), (5,), (30,)),
    ...          Dense(np.ones((60, 5)), (60,), (5,))]
    >>> best = optimal_chain(chain)
    >>> best.cost, best.parenthesized
    (4500, '(J3 (J2 J1))')
    """
    n = len(labels)
    if n == 0:
        raise ValueError("an empty chain has no product")
    if algebra is None:
        algebra = FLOATS if all(isinstance(x, float) for x in labels) else OPERATORS
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
