"""Markowitz elimination, fast (private: read :mod:`minirad.exact.elimination` first).

The reference is :func:`minirad.exact.elimination.eliminate` with ``"markowitz"``
as a reader meets it there: a heap of ``(degree, vertex)`` keys with stale
entries skipped (``_markowitz``) choosing each vertex, and
``_Working.eliminate`` applying the chain rule to it.  :func:`markowitz_in_place`
picks the same vertices in the same order (ties to the lowest vertex
number), forms the same products and sums in the same order and counts the
same operations; ``tests/exact/test_elimination.py`` holds the two equal on many
random graphs.  It differs only in bookkeeping, which is what dominated
on large sparse graphs (issue 16):

* the selection is a bucket queue: one small heap of vertex numbers per
  Markowitz degree and a heap of the degrees that have a bucket, so a push
  or pop sorts among the vertices of one degree instead of among every
  stale entry of the graph;
* a vertex whose degree *rises* is not pushed again: its old entry, in a
  lower bucket, is moved up when it reaches the front (a lazy increase).
  Every remaining vertex keeps an entry no higher than its degree, so the
  front of the lowest bucket is still the true minimum;
* the two factors of each degree, ``|pred(u)|`` and ``|succ(u)|``, are kept
  in lists, updated exactly where the step has the dict at hand, so a
  neighbour's new degree reads no other dict (on a graph of 10^4 vertices
  and more those dicts are rarely in cache);
* the step's arithmetic is inline, and additions are counted from how much
  each successor's operand dict grew.

The graph's labels must multiply with Python's ``*`` and add with ``+``
(floats, integer counts), as for ``_Working.eliminate_fast``.

>>> pred = [{}, {0: 2.0}, {1: 3.0}]          # 0 -> 1 -> 2, partials 2 and 3
>>> succ = [{1: None}, {2: None}, {}]
>>> markowitz_in_place(pred, succ, (1,), set())
([1], 1, 0)
>>> pred[2]
{0: 6.0}
"""

from __future__ import annotations

from collections.abc import Sequence
from heapq import heapify, heappop, heappush

__all__ = ["markowitz_in_place"]


def markowitz_in_place(pred: list, succ: list, candidates: Sequence[int],
                       touched: set) -> tuple[list[int], int, int]:
    """Eliminate every vertex of ``candidates`` (ascending) in Markowitz order.

    ``pred[v]`` maps each predecessor of ``v`` to its label and ``succ[u]``
    has the successors of ``u`` as keys (the working graph of
    :mod:`minirad.exact.elimination`); both are updated in place, eliminated
    vertices get ``None``, and the successors whose operands changed are
    added to ``touched``.  Returns the vertices in the order eliminated, the
    multiplications and the additions.
    """
    n_in = [len(p) for p in pred]
    n_out = [len(s) for s in succ]
    degree = [-1] * len(pred)  # -1: not (or no longer) a candidate
    buckets: dict[int, list[int]] = {}
    for v in candidates:
        d = degree[v] = n_in[v] * n_out[v]
        bucket = buckets.get(d)
        if bucket is None:
            buckets[d] = [v]
        else:
            bucket.append(v)  # ascending candidates: each bucket is already a heap
    degrees = list(buckets)
    heapify(degrees)
    order: list[int] = []
    multiplications = additions = 0
    while degrees:
        # the front of the lowest bucket, moving lazily raised entries up
        d = degrees[0]
        bucket = buckets[d]
        v = -1
        while bucket:
            u = heappop(bucket)
            now = degree[u]
            if now == d:
                v = u
                break
            if now > d:
                raised = buckets.get(now)
                if raised is None:
                    buckets[now] = [u]
                    heappush(degrees, now)
                else:
                    heappush(raised, u)
            # now < d or now == -1: a leftover entry of a vertex pushed elsewhere
        if not bucket:
            del buckets[d]
            heappop(degrees)
        if v < 0:
            continue
        degree[v] = -1
        order.append(v)

        # the chain rule: p -> v -> s becomes p -> s with label ds/dv * dv/dp
        preds, succs = pred[v], succ[v]
        below = list(preds.items())
        k = len(below)
        for s in succs:
            into_s = pred[s]
            d_sv = into_s.pop(v)
            before = len(into_s)
            for p, d_vp in below:
                if p in into_s:
                    into_s[p] += d_sv * d_vp
                else:
                    into_s[p] = d_sv * d_vp
                    succ[p][s] = None
            grown = len(into_s)
            n_in[s] = grown
            additions += k - (grown - before)  # products that met an existing edge
        for p in preds:
            out = succ[p]
            del out[v]
            n_out[p] = len(out)
        pred[v] = succ[v] = None
        touched.update(succs)
        multiplications += k * len(succs)

        # only v's neighbours changed degree; rises wait in their old bucket
        for u in (*preds, *succs):
            old = degree[u]
            if old >= 0:
                new = n_in[u] * n_out[u]
                if new != old:
                    degree[u] = new
                    if new < old:
                        bucket = buckets.get(new)
                        if bucket is None:
                            buckets[new] = [u]
                            heappush(degrees, new)
                        else:
                            heappush(bucket, u)
    return order, multiplications, additions
