"""Cheapest elimination orders: the exact searches behind ``order="optimal"``.

Which order of elimination (:mod:`minirad.exact.elimination`) costs least?
Exact answers, each where it is affordable:

* :func:`cheapest_order`, vertices of a graph of numbers: every product costs
  one multiplication, so what eliminating a vertex costs depends only on the
  *set* already eliminated, and a dynamic programme over the 2**k subsets of
  the k intermediates finds the best order;
* :func:`optimal_chain`, vertices of a chain ``J_L ... J_1`` of any labels:
  the matrix-chain dynamic programme over parenthesizations, each product
  priced by the labels' algebra (two diagonals multiply in d, dense blocks in
  m x k x n).  Eliminating the vertex between two factors multiplies them, so
  every parenthesization is an elimination order and back;
* :func:`cheapest_edge_order` and :func:`cheapest_face_order`, edges and
  faces of a graph of numbers: these can reach the same structure by
  sequences of different lengths, and a step's cost depends on the structure
  it is taken on, so their optima are shortest paths in the graph whose nodes
  are structures and whose arcs are single steps (:func:`cheapest`,
  Dijkstra's algorithm with a lower bound, A*).

Costs are ``(multiplications, additions)`` compared lexicographically: the
fewest multiplications, then the fewest additions among those.

>>> from minirad import examples
>>> [examples.figure1().names[v] for v in cheapest_order(examples.figure1())]
['v3', 'v4', 'v5', 'v2']
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass

from ..graph.labels import FLOATS
from ..graph.lcg import takes_graph_or_function
from ..graph.operators import OPERATORS
from .dual import Dual, Registry

__all__ = ["CHAIN_LIMIT", "OPTIMAL_EDGES", "OPTIMAL_FACES", "OPTIMAL_LIMIT", "ChainOrder",
           "chain_labels", "chain_vertices", "check_search", "cheapest", "cheapest_edge_order",
           "cheapest_face_order", "cheapest_order", "is_chain", "optimal_chain"]

#: the vertex search visits 2**k sets of eliminated vertices: at most this many intermediates
OPTIMAL_LIMIT = 16
#: the matrix-chain programme on k intermediates forms k**2 / 2 products of sub-chains and
#: prices k**3 / 6 splits: about 3 s at k = 80 (blocks of 30 x 30), half a minute at 160
CHAIN_LIMIT = 64
#: the edge search is refused on graphs with more edges than this ...
OPTIMAL_EDGES = 14
#: ... and the face search on graphs with more edges than this
OPTIMAL_FACES = 10
#: the searches over structures stop past this many distinct structures
EDGE_STATES, FACE_STATES = 200_000, 50_000


def _bits(mask: int) -> Iterator[int]:
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


# ------------------------------------------------------- vertices of numbers
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


# ------------------------------------------------- shortest paths over structures
def cheapest(start: Hashable, moves: Callable[[Hashable], Iterable], finished: Callable,
             max_states: int, estimate: Callable[[Hashable], int] = lambda state: 0,
             at_most: int | None = None) -> tuple[tuple[int, int], list] | None:
    """The least cost and one cheapest list of moves from ``start`` to a finished state.

    ``moves(state)`` yields ``(move, (multiplications, additions), next_state)``;
    ``finished(state)`` says whether a state is a goal and ``estimate(state)``
    bounds the multiplications left from below (it must never overestimate; a
    structure reached again more cheaply is searched again, so the bound need
    not fall evenly along a sequence).  Ties between equally cheap sequences go
    to the one found first (moves in the order ``moves`` lists them), so the
    answer is deterministic.  With ``at_most``, every structure whose cost so far
    plus its bound exceeds it is dropped, and the answer is None when every
    sequence costs more than ``at_most`` multiplications: how a gap between two
    kinds of elimination is confirmed or ruled out cheaply.  Past
    ``max_states`` distinct structures the search stops with a ``ValueError``
    rather than exhausting memory.

    >>> moves = {"a": [("to b", (1, 0), "b"), ("to c", (3, 0), "c")],
    ...          "b": [("b to c", (1, 1), "c")]}
    >>> cheapest("a", lambda s: moves.get(s, []), lambda s: s == "c", max_states=10)
    ((2, 1), ['to b', 'b to c'])
    >>> cheapest("a", lambda s: moves.get(s, []), lambda s: s == "c", 10, at_most=1) is None
    True
    """
    if at_most is not None and estimate(start) > at_most:
        return None
    best = {start: ((0, 0), None, None)}  # state -> (cost so far, previous state, move)
    heap = [((estimate(start), 0), 0, (0, 0), start)]
    pushed = 1
    while heap:
        _, _, cost, state = heapq.heappop(heap)
        if cost != best[state][0]:  # reached again more cheaply since this entry was pushed
            continue
        if finished(state):
            sequence = []
            while best[state][1] is not None:
                _, state, move = best[state]
                sequence.append(move)
            return cost, sequence[::-1]
        for move, (m, a), after in moves(state):
            total = (cost[0] + m, cost[1] + a)
            known = best.get(after)
            if known is None or total < known[0]:
                bound = total[0] + estimate(after)
                if at_most is not None and bound > at_most:
                    continue
                if known is None and len(best) >= max_states:
                    raise ValueError(f"the exhaustive search met more than {max_states} distinct "
                                     f"graph structures without finishing; the graph is too "
                                     f"large for it: use a heuristic instead")
                best[after] = (total, state, move)
                heapq.heappush(heap, ((bound, total[1]), pushed, total, after))
                pushed += 1
    if at_most is not None:
        return None
    raise ValueError("no sequence of steps finishes this graph")


@takes_graph_or_function
def cheapest_edge_order(g, at_most: int | None = None) -> list[tuple[int, int, str]] | None:
    """A cheapest edge elimination sequence of a graph of numbers, as ``(i, j, end)``
    steps by vertex number, by :func:`cheapest` over edge sets (bitmasks of
    predecessors); with ``at_most``, None unless one costs at most ``at_most``
    multiplications.

    >>> from minirad import examples
    >>> g = examples.edge_beats_vertex()
    >>> [(g.names[u], g.names[v], end) for u, v, end in cheapest_edge_order(g)][:2]
    [('a', 'b', 'back'), ('x', 'b', 'front')]
    >>> cheapest_edge_order(g, at_most=5) is None      # its optimum is 6 multiplications
    True
    """
    if g.algebra is not FLOATS:
        raise ValueError("the optimal edge sequence is searched with every product costing one "
                         "multiplication, which holds on a graph of numbers only; on a graph "
                         "of arrays use 'markowitz' or an explicit order, or search "
                         "minirad.scalarize(g)")
    if g.n_edges > OPTIMAL_EDGES and at_most is None:
        raise ValueError(f"the optimal edge sequence is searched over every edge structure; it "
                         f"is limited to {OPTIMAL_EDGES} edges and this graph has {g.n_edges}. "
                         f"Use 'markowitz' or an explicit order")
    middle = frozenset(g.intermediates)
    start = [0] * g.n_vertices
    for u, v in zip(g.sources.tolist(), g.targets.tolist()):
        start[v] |= 1 << u
    # Values off every input-output path cost nothing to clear, first: front-eliminate
    # the in-edges of an intermediate with no successor (|succ| = 0 products), and
    # back-eliminate the out-edges of one with no predecessor (|pred| = 0).  No step on
    # the rest of the graph is cheaper for their being there, so the search starts after
    # them, and every intermediate left needs a step costing at least one (A* below).
    free, start = _clear_dead(start, middle)

    def successors(P) -> list[int]:
        S = [0] * len(P)
        for v, into in enumerate(P):
            for u in _bits(into):
                S[u] |= 1 << v
        return S

    def moves(P):
        S = successors(P)
        for v, into in enumerate(P):
            for u in _bits(into):
                if v in middle:  # front: u joins every successor of v
                    after = list(P)
                    after[v] &= ~(1 << u)
                    for k in _bits(S[v]):
                        after[k] |= 1 << u
                    if not after[v]:
                        for k in _bits(S[v]):
                            after[k] &= ~(1 << v)
                    yield ((u, v, "front"), (S[v].bit_count(), (S[v] & S[u]).bit_count()),
                           tuple(after))
                if u in middle:  # back: every predecessor of u joins v
                    after = list(P)
                    after[v] = (after[v] & ~(1 << u)) | P[u]
                    if not S[u] & ~(1 << v):
                        after[u] = 0
                    yield ((u, v, "back"), (P[u].bit_count(), (P[u] & P[v]).bit_count()),
                           tuple(after))

    inner = sum(1 << v for v in middle)

    def finished(P) -> bool:  # no edge into or out of an intermediate
        return not any(P[v] for v in middle) and not any(into & inner for into in P)

    # Every intermediate still joined to the graph (all of it on input-output paths
    # now) needs a step of its own, front on its last in-edge or back on its last
    # out-edge, costing at least one multiplication: a lower bound on what is left,
    # which spares the search most structures (A*).
    def estimate(P) -> int:
        return sum(1 for v in middle if P[v])

    found = cheapest(tuple(start), moves, finished, EDGE_STATES, estimate, at_most)
    return None if found is None else free + found[1]


def _clear_dead(P: list[int], middle: frozenset) -> tuple[list, list[int]]:
    """The free steps that remove every edge off the input-output paths from the
    structure ``P`` (bitmasks of predecessors), and the structure they leave."""
    P, steps = list(P), []
    while True:
        S = [0] * len(P)
        for v, into in enumerate(P):
            for u in _bits(into):
                S[u] |= 1 << v
        dead_end = next((v for v in sorted(middle) if P[v] and not S[v]), None)
        if dead_end is not None:     # front-eliminate its in-edges: |succ| = 0 each
            steps += [(u, dead_end, "front") for u in _bits(P[dead_end])]
            P[dead_end] = 0
            continue
        unreached = next((u for u in sorted(middle) if S[u] and not P[u]), None)
        if unreached is None:
            return steps, P
        for v in _bits(S[unreached]):   # back-eliminate its out-edges: |pred| = 0 each
            steps.append((unreached, v, "back"))
            P[v] &= ~(1 << unreached)


def _apart(crossings) -> int:
    """How many of these faces at one vertex, each given as (ancestors of its
    first vertex's start, descendants of its second vertex's end), are pairwise
    apart (no common ancestor, or no common descendant): counted greedily."""
    chosen = []
    for above, below in sorted(crossings):
        if all(not above & a or not below & b for a, b in chosen):
            chosen.append((above, below))
    return len(chosen)


def _reach(g) -> tuple[list[int], list[int]]:
    """Bitmasks of every vertex's ancestors and descendants, itself included
    (vertices are numbered in topological order)."""
    above = [1 << v for v in range(g.n_vertices)]
    below = list(above)
    edges = sorted(zip(g.sources.tolist(), g.targets.tolist()), key=lambda e: e[1])
    for u, v in edges:
        above[v] |= above[u]
    for u, v in reversed(edges):
        below[u] |= below[v]
    return above, below


@takes_graph_or_function
def cheapest_face_order(g, at_most: int | None = None) -> list | None:
    """A cheapest face elimination sequence of a graph of numbers, faces named by
    their dual vertices' paths, by :func:`cheapest` over dual structures; with
    ``at_most``, None unless one costs at most ``at_most`` multiplications (then it is
    limited by the structures met, not by the number of edges).

    >>> from minirad import examples
    >>> cheapest_face_order(examples.lab())[0]
    ((('x', 'v2'),), (('v2', 'f'),))
    """
    if g.n_edges > OPTIMAL_FACES and at_most is None:
        raise ValueError(f"the optimal face sequence is searched over every dual structure; "
                         f"it is limited to {OPTIMAL_FACES} LCG edges and this graph has "
                         f"{g.n_edges}. Use 'markowitz' or an explicit order")
    registry = Registry()
    start = Dual.of(g, registry, labelled=False)
    above, below = _reach(g)
    entries = {(x, y) for x in g.inputs for y in g.outputs if below[x] >> y & 1}

    def moves(key):
        dual = Dual.from_key(g, registry, key)
        for a, b in dual.eliminable():
            after = dual.copy()
            multiplications, additions, *_ = after.eliminate(a, b)
            yield (a, b), (multiplications, additions), after.key()

    def estimate(key) -> int:
        # Three lower bounds on the eliminations left (A*), each step costing one:
        # * a dual vertex that is not yet a Jacobian entry must still be the first or
        #   second vertex of an elimination, or merge with a twin that is; one step
        #   settles at most two;
        # * each missing Jacobian entry is made by a step of its own (a step makes
        #   at most one vertex);
        # * an LCG path through an intermediate j where two of its pieces meet is
        #   joined there by exactly one step, whose first vertex starts at an
        #   ancestor of the path's current piece and whose second ends at a
        #   descendant; faces at j with no common ancestor or no common descendant
        #   of their ends need a step each.
        is_end, ends = registry.is_end, registry.ends
        middle = {v for face in key for v in face if not is_end(v)}
        made = {ends[v] for v in middle} & entries
        at = {}
        for a, b in key:
            if not is_end(a) and not is_end(b):
                at.setdefault(ends[a][1], set()).add((above[ends[a][0]], below[ends[b][1]]))
        return max((len(middle) - len(made) + 1) // 2, len(entries) - len(made),
                   sum(_apart(crossings) for crossings in at.values()))

    found = cheapest(start.key(), moves,
                     lambda key: Dual.from_key(g, registry, key).finished(), FACE_STATES,
                     estimate, at_most)
    if found is None:
        return None
    return [(start.names(a), start.names(b)) for a, b in found[1]]
