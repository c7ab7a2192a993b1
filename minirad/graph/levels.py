"""Topological levels: the wavefronts of a DAG, which vertices can be computed together.

A vertex's level is the length of the longest path to it from a vertex without
predecessors; every edge goes from a lower level to a higher one.  The sweeps'
wavefront engine (:mod:`minirad.exact._engines`) and the pictures read them.

>>> from minirad import examples
>>> levels_within(examples.lecture(), None).tolist()
[0, 0, 1, 1, 1, 2, 3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["chain_length", "level_count", "levels", "levels_within", "ranges",
           "topological_levels"]


def ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(starts[i], stops[i])`` for all i, vectorised."""
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total)


def topological_levels(g, cap: int | None) -> np.ndarray | None:
    """Topological level of every vertex (longest path from a vertex without
    predecessors), by Kahn's algorithm one wavefront at a time; None when
    there are more than ``cap`` levels."""
    n = g.n_vertices
    if cap is not None and chain_length(g, cap) > cap:
        return None
    order, ptr = g.out_edges_csr
    heads = g.targets[order]
    remaining = np.diff(g.in_edges_ptr)
    level = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(remaining == 0)
    depth = 0
    while len(frontier):
        if cap is not None and depth >= cap:
            return None
        level[frontier] = depth
        ends = heads[ranges(ptr[frontier], ptr[frontier + 1])]
        if len(ends) == 0:
            break
        low = int(ends.min())
        span = int(ends.max()) - low + 1
        if span <= 4 * len(ends):  # a dense window: counting beats sorting
            hits = np.bincount(ends - low, minlength=span)
            reached = np.flatnonzero(hits)
            hits = hits[reached]
            reached += low
        else:
            reached, hits = np.unique(ends, return_counts=True)
        remaining[reached] -= hits
        frontier = reached[remaining[reached] == 0]
        depth += 1
    return level


def chain_length(g, limit: int) -> int:
    """Vertices on one long path, found by walking back from the last vertex to
    its latest predecessor; a cheap lower bound on the number of levels that
    spares a deep graph a long, doomed level count.  Stops past ``limit``."""
    ptr = g.in_edges_ptr
    has_pred = np.flatnonzero(ptr[1:] > ptr[:-1])
    if len(has_pred) == 0:
        return 1 if g.n_vertices else 0
    latest = np.full(g.n_vertices, -1, dtype=np.int64)
    latest[has_pred] = np.maximum.reduceat(g.sources, ptr[has_pred])
    step = latest.tolist()
    v, length = int(has_pred[-1]), 1
    while v >= 0 and length <= limit:
        v = step[v]
        length += 1
    return length - (v < 0)


def levels_within(g, cap: int | None) -> np.ndarray | None:
    """The topological levels (memoized as ``"graph.levels"``), or None when
    there are more than ``cap`` of them (remembered per cap, so a deep graph
    is not counted twice)."""
    known = g.memos.get("graph.levels")
    if known is not None:
        return known if cap is None or level_count(known) <= cap else None
    if cap is None:
        return g.memo("graph.levels", lambda: read_only(topological_levels(g, None)))
    level = g.memo(f"sweeps.levels_within.{cap}", lambda: topological_levels(g, cap))
    if level is None:
        return None
    return g.memo("graph.levels", lambda: read_only(level))


def level_count(level: np.ndarray) -> int:
    return int(level.max()) + 1 if len(level) else 0


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def levels(g) -> np.ndarray:
    """Topological level of every vertex: the number of edges on the longest
    path into it from a vertex without predecessors (read-only, memoized).

    The sweeps' wavefronts and the rows of a picture are these levels.

    >>> from minirad import LCG
    >>> g = LCG.from_edges([("x", "a", 1.0), ("a", "y", 1.0), ("x", "y", 1.0)],
    ...                    inputs=["x"], outputs=["y"])
    >>> levels(g).tolist()
    [0, 1, 2]
    """
    return levels_within(g, None)
