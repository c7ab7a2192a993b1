"""Chains of Jacobians and the layered scalar graphs they stand for.

A vector program ``theta -> A -> B -> y`` has one Jacobian factor per step,
``[J1, J2, J3]`` with ``J_l`` mapping the vector at position ``l-1`` to the
one at position ``l``.  Its scalar LCG has a vertex per vector component and
an edge per matrix entry, in layers (the paper's Figure 2).  This module is
the one place that converts between the two: :func:`chain_graph` (chain to
graph) and :func:`chain_from_graph` (graph to chain), with the layer names
``a1 a2 ... b1 ...`` they share and the checks on chains and on the
positions between their factors.  Random matrix injection
(:mod:`minirad.randomized.chains`), the Figure 2 families (:mod:`minirad.examples`),
the depth study (:mod:`minirad.randomized.experiments`) and the gallery all go through it.

>>> chain = [np.array([[1.0], [2.0]]), np.array([[3.0, 4.0]])]
>>> g = chain_graph(chain)
>>> g.names, g.n_edges
(('theta', 'a1', 'a2', 'y'), 4)
>>> [m.tolist() for m in chain_from_graph(g)]
[[[1.0], [2.0]], [[3.0, 4.0]]]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..graph.lcg import LCG, levels

__all__ = ["chain_from_graph", "chain_graph", "chain_sizes", "check_chain",
           "check_positions", "check_projections", "layer_names"]


def layer_names(depth: int, width: int) -> list[list[str]]:
    """``a1 a2 ...`` for the first layer, ``b1 ...`` for the second, as in the
    paper's Figure 2; deep graphs run out of letters and use ``h<layer>_<i>``.

    >>> layer_names(2, 3)
    [['a1', 'a2', 'a3'], ['b1', 'b2', 'b3']]
    >>> layer_names(30, 1)[-1]
    ['h30_1']
    """
    if depth <= 24:  # a..x, so that no layer is called y
        return [[f"{chr(ord('a') + l)}{i + 1}" for i in range(width)] for l in range(depth)]
    return [[f"h{l + 1}_{i + 1}" for i in range(width)] for l in range(depth)]



def check_chain(chain) -> list[np.ndarray]:
    if isinstance(chain, np.ndarray) or not isinstance(chain, Sequence) or len(chain) == 0:
        raise TypeError("chain must be a nonempty list of 2-D arrays [J1, J2, ..., JL] whose "
                        "product JL ... J1 is the Jacobian")
    matrices = []
    for l, factor in enumerate(chain, start=1):
        m = np.asarray(factor, dtype=np.float64)
        if m.ndim != 2 or 0 in m.shape:
            raise ValueError(f"chain factor J{l} has shape {m.shape}; each factor must be a "
                             f"nonempty 2-D matrix")
        if not np.all(np.isfinite(m)):
            raise ValueError(f"chain factor J{l} has non-finite entries; partials must be finite")
        if matrices and m.shape[1] != matrices[-1].shape[0]:
            raise ValueError(f"J{l} has {m.shape[1]} columns but J{l - 1} has "
                             f"{matrices[-1].shape[0]} rows; J{l} @ J{l - 1} must be defined")
        matrices.append(m)
    return matrices


def chain_sizes(chain: list[np.ndarray]) -> list[int]:
    """The vector dimension at each position 0..L."""
    return [chain[0].shape[1]] + [m.shape[0] for m in chain]


def check_positions(where, n_factors: int) -> list[int]:
    """Sorted injection positions; default: every vector strictly inside the chain."""
    if where is None:
        return list(range(1, n_factors))
    if not isinstance(where, Iterable) or isinstance(where, (str, bytes)):
        raise TypeError(f"where must be an iterable of positions 0..{n_factors}, not "
                        f"{type(where).__name__}")
    positions = []
    for l in where:
        if isinstance(l, (bool, np.bool_)) or not isinstance(l, (int, np.integer)) or not (
                0 <= l <= n_factors):
            raise ValueError(f"injection position {l!r} is not valid: positions are the ints "
                             f"0 (input) .. {n_factors} (output)")
        if l in positions:
            raise ValueError(f"injection position {l} is listed twice")
        positions.append(int(l))
    return sorted(positions)


def check_projections(projections, sizes: list[int]) -> dict[int, np.ndarray]:
    """Projections by position, each a square matrix of the vector size there."""
    if not isinstance(projections, Mapping):
        raise TypeError(f"projections must map positions to matrices, not "
                        f"{type(projections).__name__}")
    checked = {}
    for l in check_positions(projections.keys(), len(sizes) - 1):
        p = np.asarray(projections[l], dtype=np.float64)
        if p.shape != (sizes[l], sizes[l]):
            raise ValueError(f"the matrix at position {l} has shape {p.shape}; the vector "
                             f"there has {sizes[l]} components, so it must be "
                             f"{sizes[l]} x {sizes[l]}")
        checked[l] = p
    return checked


def chain_graph(chain, projections: Mapping | None = None) -> LCG:
    """The scalar LCG of a chain: a vertex per component, an edge per matrix entry.

    The inverse of :func:`chain_from_graph`.

    Inputs are ``theta`` (or ``x1..xp``), the vectors inside the chain are
    lettered by position as in :func:`minirad.examples.interleaved`, and
    outputs are ``y`` (or ``y1..ym``).  Every entry becomes an edge, zeros
    included, so out-degrees are the vector sizes.

    With ``projections`` (diagonal sampling matrices by position, as from
    :func:`minirad.randomized.chains.sampling_projection`), every edge into component ``i`` at
    position ``l`` (out of input ``i`` at position 0) is multiplied by
    ``P[i, i]`` and dropped where that is zero: the graph whose Jacobian is
    the injected estimate, showing that injection samples vertices.

    >>> from minirad import examples
    >>> chain = [np.ones((3, 1)), np.ones((3, 3)), np.ones((3, 3)), np.ones((1, 3))]
    >>> chain_graph(chain).same_as(examples.interleaved(3, 3))
    True
    >>> chain_graph([np.ones((2, 1)), np.ones((1, 2))], {1: np.diag([2.0, 0.0])}).n_edges
    3
    """
    chain = check_chain(chain)
    sizes = chain_sizes(chain)
    scale = [np.ones(d) for d in sizes]
    for l, p in check_projections({} if projections is None else projections, sizes).items():
        if np.any(p != np.diag(np.diag(p))):
            raise ValueError(f"the projection at position {l} must be a diagonal matrix (a "
                             f"sampling projection: only those keep or drop whole vertices)")
        scale[l] = np.diag(p).copy()
    inner = layer_names(len(chain) - 1, max(sizes)) if len(chain) > 1 else []
    names = [["theta"] if sizes[0] == 1 else [f"x{i + 1}" for i in range(sizes[0])]]
    names += [layer[:d] for layer, d in zip(inner, sizes[1:-1])]
    names += [["y"] if sizes[-1] == 1 else [f"y{i + 1}" for i in range(sizes[-1])]]
    first = np.cumsum([0] + sizes)
    sources, targets, partials = [], [], []
    for l, factor in enumerate(chain, start=1):
        into, out_of = np.meshgrid(np.arange(sizes[l]), np.arange(sizes[l - 1]), indexing="ij")
        column_scale = scale[0] if l == 1 else np.ones(sizes[l - 1])  # inputs: out-edges
        weight = factor * scale[l][:, None] * column_scale[None, :]
        kept = (scale[l][:, None] != 0) & (column_scale[None, :] != 0)
        sources.append((first[l - 1] + out_of)[kept])
        targets.append((first[l] + into)[kept])
        partials.append(weight[kept])
    flat = [name for layer in names for name in layer]
    return LCG(flat, np.concatenate(sources), np.concatenate(targets),
               np.concatenate(partials), inputs=range(sizes[0]),
               outputs=range(first[-2], first[-1]))


def chain_from_graph(g: LCG) -> list[np.ndarray]:
    """The chain of Jacobian factors of a layered graph: the inverse of :func:`chain_graph`.

    Layers are the topological levels (:func:`minirad.graph.lcg.levels`);
    within a layer vertices keep their order, so row ``i`` of ``J_l`` is the
    ``i``-th vertex of layer ``l``.  Every edge must join consecutive layers,
    the inputs must be the first layer and the outputs the last.

    >>> from minirad import examples
    >>> [m.shape for m in chain_from_graph(examples.interleaved(3, 2))]
    [(3, 1), (3, 3), (1, 3)]
    >>> chain_from_graph(examples.figure1())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: edge x2 -> v4 skips from layer 0 to layer 2; a chain's graph has edges between ...
    """
    level = levels(g)
    depth = int(level.max()) if g.n_vertices else 0
    if sorted(g.inputs) != np.flatnonzero(level == 0).tolist() or \
            sorted(g.outputs) != np.flatnonzero(level == depth).tolist():
        raise ValueError("the inputs must be exactly the first layer and the outputs the last "
                         "for a graph to be a chain")
    skips = np.flatnonzero(level[g.targets] != level[g.sources] + 1)
    if len(skips):
        e = skips[0]
        u, v = int(g.sources[e]), int(g.targets[e])
        raise ValueError(f"edge {g.names[u]} -> {g.names[v]} skips from layer {level[u]} to "
                         f"layer {level[v]}; a chain's graph has edges between consecutive "
                         f"layers only")
    rank = np.empty(g.n_vertices, dtype=np.int64)
    sizes = np.bincount(level, minlength=depth + 1)
    for l in range(depth + 1):
        members = np.flatnonzero(level == l)
        if l == 0:
            members = np.asarray(g.inputs, dtype=np.int64)  # Jacobian column order
        elif l == depth:
            members = np.asarray(g.outputs, dtype=np.int64)  # Jacobian row order
        rank[members] = np.arange(len(members))
    chain = [np.zeros((sizes[l + 1], sizes[l])) for l in range(depth)]
    for l in range(depth):
        stage = level[g.sources] == l
        chain[l][rank[g.targets[stage]], rank[g.sources[stage]]] = g.partials[stage]
    return chain
