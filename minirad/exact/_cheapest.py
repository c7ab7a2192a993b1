"""The cheapest way from one graph structure to a finished one: Dijkstra over structures.

Edge and face elimination (unlike vertex elimination) can reach the same
structure by sequences of different lengths, and a step's cost depends on
the structure it is taken on, so their optimal sequences are shortest paths
in the graph whose nodes are structures and whose arcs are single steps.
Costs are ``(multiplications, additions)`` compared lexicographically: the
fewest multiplications, then the fewest additions among those.

A lower bound on the multiplications still to come (``estimate``) lets the
search skip structures that cannot lead to a cheaper sequence (A*).  It must
never overestimate; a structure reached again more cheaply is searched
again, so the bound need not fall evenly along a sequence.  ``limit`` asks
only whether some sequence costs at most that many multiplications: every
structure whose cost so far plus its bound exceeds it is dropped, which is
how a gap between two kinds of elimination is confirmed or ruled out cheaply.

>>> moves = {"a": [("to b", (1, 0), "b"), ("to c", (3, 0), "c")], "b": [("b to c", (1, 1), "c")]}
>>> cheapest("a", lambda s: moves.get(s, []), lambda s: s == "c", max_states=10)
((2, 1), ['to b', 'b to c'])
>>> cheapest("a", lambda s: moves.get(s, []), lambda s: s == "c", max_states=10, limit=1) is None
True
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterable

__all__ = ["cheapest"]


def cheapest(start: Hashable, moves: Callable[[Hashable], Iterable], finished: Callable,
             max_states: int, estimate: Callable[[Hashable], int] = lambda state: 0,
             limit: int | None = None) -> tuple[tuple[int, int], list] | None:
    """The least cost and one cheapest list of moves from ``start`` to a finished state.

    ``moves(state)`` yields ``(move, (multiplications, additions), next_state)``;
    ``finished(state)`` says whether a state is a goal and ``estimate(state)``
    bounds the multiplications left from below.  Ties between equally
    cheap sequences go to the one found first (moves in the order ``moves``
    lists them), so the answer is deterministic.  With ``limit``, None when
    every sequence costs more than ``limit`` multiplications.  Past
    ``max_states`` distinct structures the search stops with a
    ``ValueError`` rather than exhausting memory.
    """
    if limit is not None and estimate(start) > limit:
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
                if limit is not None and bound > limit:
                    continue
                if known is None and len(best) >= max_states:
                    raise ValueError(f"the exhaustive search met more than {max_states} distinct "
                                     f"graph structures without finishing; the graph is too "
                                     f"large for it: use a heuristic instead")
                best[after] = (total, state, move)
                heapq.heappush(heap, ((bound, total[1]), pushed, total, after))
                pushed += 1
    if limit is not None:
        return None
    raise ValueError("no sequence of steps finishes this graph")
