"""Gradient checkpointing on a chain-shaped LCG of arrays.

:mod:`minirad.checkpoint.schedules` reverses a chain given by step functions.  This
module reads the chain out of a :class:`~minirad.LCG` (PDE time
steps, RNN steps, the layers of an MLP) and runs that graph's reverse sweep
under a schedule (:class:`~minirad.checkpoint.schedules.StoreAll`,
:class:`~minirad.checkpoint.schedules.Uniform`, :class:`~minirad.checkpoint.schedules.Binomial`).

**What qualifies as a chain.**  The graph has one scalar output ``L`` (the
loss).  Pick a start vertex ``s_0`` (default: the first input).  The *chain
vertices* are those reachable from ``s_0``; every other vertex is a *side*
vertex (parameters, data, anything computed from them alone, such as the
source field of a PDE step or a slice ``X[t]`` of an input).  States
``s_0 < s_1 < ... < s_n`` are chain vertices, numbered in this order; step
``i`` owns the vertices numbered in ``(s_i, s_{i+1}]`` and the *loss part*
is every vertex after ``s_n``.  The graph is a chain over these states when
no edge between chain vertices skips a state: an edge ``u -> v`` into a
vertex outside the loss part has no state strictly between ``u`` and ``v``.
Edges from side vertices go anywhere (parameters are read by every step),
and edges into the loss part may come from any step (per-step loss terms).
So the state ``x_i`` (the value of ``s_i``) is all that one step hands to
the next.  ``states=None`` takes every chain vertex that no edge skips
(with only the edges into ``L`` exempt); name the states to group several
operations into one step, or when per-step terms are collected by a vertex
other than ``L`` (``np.stack(terms).sum()``).

**What runs.**  An LCG of arrays records one forward run: its operators already
hold what every step's reverse needs.  So a forward step here reads
``x_{i+1}`` from the record instead of computing it, and the schedule's
counts and peaks (:class:`~minirad.checkpoint.schedules.ChainGradient`) are those a
program that recomputes each step from its state would have; the graph
itself keeps what ``retained_memory(g)`` says.  The reverse step ``i`` is the reverse
sweep (:func:`minirad.graph.labels.reverse`) over the edges into step ``i``'s
vertices, taken in the same order, so every schedule gives
:func:`minirad.exact.sweeps.gradient` bit for bit: each vertex receives the same
terms, computed from the same numbers and added in the same order.  The
one move is that a per-step loss edge ``u -> (loss part)`` is pulled when
step ``i`` is reversed rather than before the first step; it is still the
first term ``u`` receives (its highest-numbered edge), and the loss part's
adjoints are final by then.  To save memory for real, give
:mod:`minirad.checkpoint.schedules` a chain whose step functions recompute (as
:func:`minirad.studies.pde.chain` does).

>>> import numpy as np
>>> from minirad import trace
>>> from minirad.exact.sweeps import gradient as full_gradient
>>> from minirad.checkpoint.schedules import Binomial, binomial_forward_steps
>>> def mlp(x, W):                              # eight tanh layers sharing W
...     for _ in range(8):
...         x = np.tanh(x @ W)
...     return (x * x).sum()
>>> g = trace(mlp, np.ones(3), np.eye(3) * 0.9)
>>> shape = chain_shape(g)
>>> [g.names[s] for s in shape.states][:4], shape.n_steps   # every vertex no edge skips
(['x', 'v2', 'v3', 'v4'], 17)
>>> layers = chain_shape(g, states=["x"] + [f"v{2 * l + 3}" for l in range(8)])
>>> layers.n_steps                                           # one step per layer
8
>>> run = checkpointed_gradient(g, Binomial(snapshots=3), states=layers.states)
>>> all(bool((a == b).all()) for a, b in zip(run.gradients, full_gradient(g)))
True
>>> run.counts.forward_steps == binomial_forward_steps(8, 3) + 1, run.counts.peak_stored
(True, 4)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.lcg import LCG, takes_graph_or_function
from . import schedules as checkpointing

__all__ = ["ChainShape", "CheckpointedGradient", "chain_shape", "checkpointed_gradient"]


@dataclass(frozen=True)
class ChainShape:
    """An LCG of arrays read as a chain (see the module docstring).

    ``states`` are the vertex numbers ``s_0 < ... < s_n``; ``loss`` is the output;
    ``side`` the side vertices; ``blocks[i]`` the edge numbers ``(first, stop)``
    into step ``i``'s vertices, ``prologue`` those into ``s_0`` and the side
    vertices before it, ``loss_part`` those into the vertices after ``s_n``.
    """

    states: tuple[int, ...]
    loss: int
    side: frozenset
    blocks: tuple[tuple[int, int], ...]
    prologue: tuple[int, int]
    loss_part: tuple[int, int]

    @property
    def n_steps(self) -> int:
        return len(self.states) - 1


@dataclass(frozen=True)
class CheckpointedGradient:
    """The result of :func:`checkpointed_gradient`: ``gradients``, one array per input of the graph
    (as :func:`minirad.exact.sweeps.gradient` gives them), and ``counts``, the schedule's
    :class:`~minirad.checkpoint.schedules.ChainGradient` (forward steps, peak states held)."""

    gradients: list
    counts: checkpointing.ChainGradient


def _reachable(g: LCG, start: int) -> np.ndarray:
    order, ptr = g.out_edges_csr
    seen = np.zeros(g.n_vertices, dtype=bool)
    seen[start] = True
    for u in range(start, g.n_vertices):   # numbering is topological: one pass suffices
        if seen[u]:
            seen[g.targets[order[ptr[u]:ptr[u + 1]]]] = True
    return seen


def _skipped(g: LCG, chain: np.ndarray, exempt_from: int) -> np.ndarray:
    """How many chain edges (not into a vertex >= exempt_from) pass strictly over each vertex."""
    src, dst = g.sources, g.targets
    inner = chain[src] & chain[dst] & (dst < exempt_from)
    cover = np.zeros(g.n_vertices + 1, dtype=np.int64)
    np.add.at(cover, src[inner] + 1, 1)
    np.add.at(cover, dst[inner], -1)
    return np.cumsum(cover)[:-1]


@takes_graph_or_function
def chain_shape(g: LCG, start=None, states=None) -> ChainShape:
    """Read ``g`` as a chain from ``start`` (default: the first input) over ``states``
    (names or numbers, ``start`` first; default: every chain vertex no edge skips).
    Raises ``ValueError`` naming what breaks the chain shape."""
    if len(g.outputs) != 1 or g.shapes[g.outputs[0]] != ():
        raise ValueError(f"a chain ends in one scalar loss; this graph has outputs of shapes "
                         f"{[g.shapes[v] for v in g.outputs]}")
    loss = g.outputs[0]
    if start is None:
        if not g.inputs:
            raise ValueError("the graph has no input to start the chain from; name a start "
                             "vertex")
        start = g.inputs[0]
    s0 = g.index(start)
    chain = _reachable(g, s0)
    if not chain[loss]:
        raise ValueError(f"the loss {g.names[loss]} does not depend on the start vertex "
                         f"{g.names[s0]}: no chain leads from it to the loss")
    if states is None:
        cover = _skipped(g, chain, exempt_from=loss)
        found = tuple(int(v) for v in np.flatnonzero(chain & (cover == 0)) if v != loss)
    else:
        if isinstance(states, (str, int, np.integer)):
            raise TypeError("states is a list of vertices (names or numbers), start first")
        found = tuple(g.index(v) for v in states)
        if not found or found[0] != s0:
            raise ValueError(f"the states must begin with the start vertex {g.names[s0]}")
        for a, b in zip(found, found[1:]):
            if b <= a:
                raise ValueError(f"the states must be in the graph's order: {g.names[b]} "
                                 f"comes after {g.names[a]} in the list but not in the graph")
        for v in found:
            if not chain[v]:
                raise ValueError(f"{g.names[v]} does not depend on the start vertex "
                                 f"{g.names[s0]}, so it cannot be a state of its chain")
            if v == loss:
                raise ValueError(f"the loss {g.names[loss]} cannot be a state; the states "
                                 f"end before it")
    if len(found) < 2:
        raise ValueError(f"no state follows {g.names[s0]}: every vertex between it and the "
                         f"loss is skipped by some edge, so the graph is not a chain of "
                         f"steps from {g.names[s0]}; name the states (or a later start)")
    last = found[-1]
    cover = _skipped(g, chain, exempt_from=last + 1)
    for v in found:
        if cover[v]:
            src, dst = g.sources, g.targets
            e = int(np.flatnonzero(chain[src] & chain[dst] & (src < v) & (v < dst)
                                   & (dst <= last))[0])
            raise ValueError(f"edge {g.names[src[e]]} -> {g.names[dst[e]]} skips the state "
                             f"{g.names[v]}: a step may read only its own state, side "
                             f"values (parameters) and its own vertices; only edges into "
                             f"the loss part (after {g.names[last]}) may come from any step")
    if not _reachable(g, last)[loss]:
        raise ValueError(f"the last state {g.names[last]} does not reach the loss "
                         f"{g.names[loss]}")
    bounds = [int(np.searchsorted(g.targets, v, side="right")) for v in found]
    blocks = tuple(zip(bounds, bounds[1:]))
    return ChainShape(found, loss, frozenset(np.flatnonzero(~chain).tolist()), blocks,
                      (0, bounds[0]), (bounds[-1], g.n_edges))


def _pull(g: LCG, edges, adjoint: dict) -> None:
    """The reverse sweep's step for each edge, in the order given: the adjoint of the
    target times the label, added to the source's (as :func:`minirad.graph.labels.reverse`)."""
    algebra = g.algebra
    for e in edges:
        v = int(g.targets[e])
        if adjoint.get(v) is None:
            continue
        u = int(g.sources[e])
        term = algebra.multiply(adjoint[v], g.labels[e])
        adjoint[u] = term if adjoint.get(u) is None else algebra.add(adjoint[u], term)


@takes_graph_or_function
def checkpointed_gradient(g: LCG, schedule=None, start=None, states=None) -> CheckpointedGradient:
    """The gradient of ``g``'s scalar loss with respect to each input, by the reverse sweep
    of its chain (:func:`chain_shape`) under a checkpointing ``schedule`` (default
    :class:`~minirad.checkpoint.schedules.StoreAll`).  Equal to
    :func:`minirad.exact.sweeps.gradient` bit for bit; see the module docstring for an example."""
    shape = chain_shape(g, start, states)
    if g.values is None:
        raise ValueError("the graph was built without values; a chain needs its states")
    s, n = shape.states, shape.n_steps
    inputs = set(g.inputs)
    adjoint = {shape.loss: np.ones((), dtype=g.dtypes[shape.loss])}
    # per-step loss edges (from a chain vertex of step i, or its state) into the loss part
    late = [[] for _ in range(n)]
    loss_first, loss_stop = shape.loss_part
    now = []
    for e in range(loss_stop - 1, loss_first - 1, -1):
        u = int(g.sources[e])
        if u in shape.side or u >= s[n]:
            now.append(e)
        else:
            late[int(np.searchsorted(s, u, side="right")) - 1].append(e)

    def step(i, x):
        return g.values[s[i + 1]]

    def seed(i, x):
        if i < n:
            return None    # the step's loss edges are pulled by vjp, before its other edges
        _pull(g, now, adjoint)
        return adjoint[s[n]]

    def vjp(i, x, lam):
        adjoint[s[i + 1]] = lam
        first, stop = shape.blocks[i]
        _pull(g, late[i], adjoint)
        _pull(g, range(stop - 1, first - 1, -1), adjoint)
        for v in range(s[i] + 1, s[i + 1] + 1):  # step i's vertices are done with (a
            if v not in inputs:                    # side vertex too: its in-edges are pulled)
                adjoint.pop(v, None)
        return adjoint[s[i]], None

    run = checkpointing.reverse_chain(checkpointing.Chain(step=step, vjp=vjp, seed=seed),
                                 g.values[s[0]], n, schedule)
    adjoint[s[0]] = run.state_bar
    first, stop = shape.prologue
    _pull(g, range(stop - 1, first - 1, -1), adjoint)
    grads = [adjoint[v] if adjoint.get(v) is not None else np.zeros(g.shapes[v], g.dtypes[v])
             for v in g.inputs]
    return CheckpointedGradient(grads, run)
