"""Markowitz elimination, fast (private: read :mod:`minirad.elimination` first).

The reference is :func:`minirad.elimination.eliminate` with ``"markowitz"``
as a reader meets it there: a heap of ``(degree, vertex)`` keys with stale
entries skipped (``_markowitz``) choosing each vertex, and
``_Working.eliminate`` applying the chain rule to it.  :func:`markowitz_in_place`
picks the same vertices in the same order (ties to the lowest vertex
number), forms the same products and sums in the same order and counts the
same operations; ``tests/test_elimination.py`` holds the two equal on many
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

import numpy as np

__all__ = ["DENSE_FROM", "DENSE_LIMIT", "markowitz_in_place"]

#: the sparse loop hands the rest to the dense phase once even the cheapest
#: remaining vertex costs this many multiplications (float labels only) ...
DENSE_FROM = 96
#: ... and the vertices left fit square matrices of this many rows (13 bytes
#: an entry: 117 MB at 3,000)
DENSE_LIMIT = 3_000


def markowitz_in_place(pred: list, succ: list, candidates: Sequence[int], touched: set,
                       dense_from: int | None = None,
                       dense_limit: int = DENSE_LIMIT) -> tuple[list[int], int, int]:
    """Eliminate every vertex of ``candidates`` (ascending) in Markowitz order.

    ``pred[v]`` maps each predecessor of ``v`` to its label and ``succ[u]``
    has the successors of ``u`` as keys (the working graph of
    :mod:`minirad.elimination`); both are updated in place, eliminated
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
        if dense_from is not None and d >= dense_from and len(pred) - len(order) <= dense_limit:
            m, a = _dense_phase(pred, succ, [u for u, du in enumerate(degree) if du >= 0],
                                order, touched)
            return order, multiplications + m, additions + a
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


def _dense_phase(pred: list, succ: list, candidates: list[int], order: list[int],
                 touched: set) -> tuple[int, int]:
    alive = [u for u, p in enumerate(pred) if p is not None]
    M = len(alive)
    position = dict(zip(alive, range(M)))
    # the working graph as M x M matrices, row = target, column = source:
    # labels, and a stamp > 0 where an edge exists that orders each row's
    # operands as the dicts would (fill-ins appended); ``into`` is the pattern
    # transposed, so that a vertex's successors are a row too.  Where there is
    # no edge the label is -0.0, the one float x with -0.0 + x == x for every
    # x (bit for bit), so a fill-in can be added like an update
    labels = np.full((M, M), -0.0)
    stamp = np.zeros((M, M), dtype=np.int32)
    edge = np.zeros((M, M), dtype=bool)
    into = np.zeros((M, M), dtype=bool)
    rows, columns, values, ranks = [], [], [], []
    for i, s in enumerate(alive):
        operands = pred[s]
        rows.extend([i] * len(operands))
        ranks.extend(range(1, len(operands) + 1))
        columns.extend(operands)
        values.extend(operands.values())
    rows = np.asarray(rows, dtype=np.intp)
    columns = np.asarray([position[p] for p in columns], dtype=np.intp)
    labels[rows, columns] = values
    stamp[rows, columns] = ranks
    edge[rows, columns] = True
    into[columns, rows] = True
    # n_in * n_out is the Markowitz degree; a vertex that is no candidate
    # (any more) gets factors so large that it is never the least
    never = 1e30
    n_in = np.bincount(rows, minlength=M).astype(float)
    n_out = np.bincount(columns, minlength=M).astype(float)
    is_candidate = np.zeros(M, dtype=bool)
    is_candidate[[position[u] for u in candidates]] = True
    n_in[~is_candidate] = n_out[~is_candidate] = never
    degree = np.empty(M)
    was_touched = np.zeros(M, dtype=bool)
    flat_labels, flat_stamp = labels.reshape(-1), stamp.reshape(-1)
    flat_edge, flat_into = edge.reshape(-1), into.reshape(-1)
    multiplications = additions = 0
    for step in range(1, len(candidates) + 1):
        np.multiply(n_in, n_out, out=degree)
        i = int(degree.argmin())  # ties: the first, i.e. the lowest vertex number
        order.append(alive[i])
        n_in[i] = n_out[i] = never
        P = edge[i].nonzero()[0]
        S = into[i].nonzero()[0]
        k, n_s = len(P), len(S)
        below, above = P * M + i, S * M + i
        flat_into[below] = False  # i leaves its predecessors' results ...
        flat_edge[above] = False  # ... and its successors' operands
        was_touched[S] = True
        if not (k and n_s):
            n_in[S] -= 1
            n_out[P] -= 1
            continue
        P = P[flat_stamp[i * M + P].argsort()]  # i's operands in order
        multiplications += k * n_s
        block = S[:, None] * M + P
        flat_labels[block] += flat_labels[above][:, None] * flat_labels[i * M + P]
        r, c = (~flat_edge[block]).nonzero()  # fill-ins; each other product costs an addition
        additions += k * n_s - len(r)
        if len(r):
            fill = block[r, c]
            flat_edge[fill] = True
            flat_into[P[c] * M + S[r]] = True
            flat_stamp[fill] = c + (step * M + 1)  # appended in i's operand order
            n_in[S] += np.bincount(r, minlength=n_s) - 1
            n_out[P] += np.bincount(c, minlength=k) - 1
        else:
            n_in[S] -= 1
            n_out[P] -= 1
    # back into the dicts, each row in its operands' order
    for u in candidates:
        pred[u] = succ[u] = None
    kept = [i for i in range(M) if pred[alive[i]] is not None]
    for i in kept:
        succ[alive[i]] = {}
    for i in kept:
        s = alive[i]
        P = edge[i].nonzero()[0]
        P = P[stamp[i, P].argsort()]
        pred[s] = dict(zip([alive[j] for j in P.tolist()], labels[i, P].tolist()))
        for j in P.tolist():
            succ[alive[j]][s] = None
    touched.update(alive[i] for i in np.flatnonzero(was_touched).tolist())
    return multiplications, additions
