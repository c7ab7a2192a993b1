"""The fast path of :mod:`minirad.studies.pde`: one time loop for a batch of parameter
vectors, each with its own estimator (exact, or RAD at its own fraction).

The references are the simulation as an LCG of arrays
(:func:`minirad.studies.pde.graph.pde_graph`, reversed by
:func:`minirad.exact.sweeps.gradient`) and the chain of
:func:`minirad.studies.pde.chain` reversed by :mod:`minirad.checkpoint.schedules`
(tested equal to each other); this engine computes the same numbers (tested
equal to 1e-10 in relative norm; the sums run in another order) with fewer
numpy calls per step: states live in zero-padded (B, side+2, side+2) buffers
so the stencil is a few slice additions, every member of the batch steps
together, C's diagonal is recomputed from theta and t for a block of steps at
once, the samples of all steps are drawn up front and the sampled values go
into one preallocated array, so what is retained is what is counted.

>>> from minirad.studies.pde import Reactor, initial_theta, exact_gradient
>>> p = Reactor.quick(n_steps=64)
>>> theta = initial_theta(rng=0)
>>> out = run(p, [theta, theta], ["exact", 0.1], rng=0)
>>> exact = exact_gradient(p, theta)[1]
>>> bool(np.linalg.norm(out.gradients[0] - exact) < 1e-10 * np.linalg.norm(exact))
True
>>> out.retained_bytes.tolist()     # reverse mode keeps phi_n; RAD 97 values + indices
[492032, 62080]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...rng import as_generator
from .problem import Reactor, check_theta, coefficient_matrix, initial_state, sampler

__all__ = ["EngineResult", "run", "simulate_batch"]


@dataclass(frozen=True)
class EngineResult:
    """Per member of the batch: the loss, the gradient (estimate) and the bytes retained
    for the reverse sweep (states or sampled values, and sample indices)."""

    losses: np.ndarray
    gradients: np.ndarray | None
    retained_bytes: np.ndarray


class _Grid:
    """Constant arrays of one reactor, on the padded grid."""

    def __init__(self, p: Reactor):
        self.p = p
        self.width = p.side + 2
        inner = np.zeros((self.width, self.width))
        inner[1:-1, 1:-1] = 1.0
        phi0 = np.zeros((self.width, self.width))
        phi0[1:-1, 1:-1] = initial_state(p)
        x = np.arange(self.width) * p.dx
        bump = np.outer(np.sin(2 * np.pi * x), np.sin(np.pi * x)) * inner
        self.phi0, self.bump = phi0, 0.25 * bump
        # dC/dtheta's x-profiles on the padded grid (zero on the boundary, where phi = 0)
        basis = np.stack([np.ones_like(x), np.sin(2 * np.pi * x), np.cos(2 * np.pi * x)])
        self.basis_flat = (basis[:, :, None] * inner[None]).reshape(3, -1)
        self.basis_inner = basis[:, 1:-1]
        interior = np.arange(p.size)
        self.to_padded = ((interior // p.side + 1) * self.width + interior % p.side + 1)
        # the released sampler's boundary marker (index d) lands on a corner, always zero
        self.to_padded = np.append(self.to_padded, 0)

    def factors(self, thetas: np.ndarray) -> np.ndarray:
        """Q (B, 3, side): the diagonal of A_n is [1, sin pi t, cos pi t] @ Q."""
        p = self.p
        q = coefficient_matrix(thetas).transpose(0, 2, 1) @ self.basis_inner * p.dt
        q[:, 0, :] += 1 - 4 * p.ratio
        return q


def _stencil(ratio: float, src: np.ndarray, dst: np.ndarray, diag: np.ndarray) -> None:
    """dst interior = A src interior (both zero-padded (B, w, w); diag (B, side, 1))."""
    out = dst[:, 1:-1, 1:-1]
    np.add(src[:, 2:, 1:-1], src[:, :-2, 1:-1], out=out)
    out += src[:, 1:-1, 2:]
    out += src[:, 1:-1, :-2]
    out *= ratio
    out += src[:, 1:-1, 1:-1] * diag


def _times(p: Reactor, start: int, stop: int) -> np.ndarray:
    """[1, sin(pi t_n), cos(pi t_n)] for n in start .. stop-1, shape (stop - start, 3)."""
    t = math.pi * p.dt * np.arange(start, stop)
    return np.stack([np.ones_like(t), np.sin(t), np.cos(t)], axis=1)


def _diagonals(p: Reactor, q: np.ndarray, reverse: bool = False, block: int = 64):
    """(n, time factors, diagonal of A_n as (B, side, 1)) for every step, recomputed from
    theta and t a block of steps at a time (one matmul per block, not per step)."""
    starts = range(0, p.n_steps, block)
    for start in (reversed(starts) if reverse else starts):
        stop = min(start + block, p.n_steps)
        times = _times(p, start, stop)
        diags = np.einsum("nk,bkx->nbx", times, q)[..., None]
        order = range(stop - 1, start - 1, -1) if reverse else range(start, stop)
        for n in order:
            yield n, times[n - start], diags[n - start]


def _selector(members: list[int]):
    """A slice when the members are contiguous (a view, no copy), else the list."""
    if members and members == list(range(members[0], members[-1] + 1)):
        return slice(members[0], members[-1] + 1)
    return members


def simulate_batch(p: Reactor, thetas) -> np.ndarray:
    """The losses of a batch of parameter vectors (B, 7), stepped together.

    >>> from minirad.studies.pde import simulate, initial_theta
    >>> p = Reactor.quick(n_steps=32)
    >>> th = initial_theta(rng=1)
    >>> bool(np.isclose(simulate_batch(p, [th])[0], simulate(p, th), rtol=1e-13))
    True
    """
    return run(p, thetas, ["exact"] * len(np.atleast_2d(thetas)), gradient=False).losses


def _members(p: Reactor, kinds, rng, variants):
    """Each member's sample table (N+1, k) of interior indices and weight, or None for an
    exact member."""
    rng = as_generator(rng)
    out = []
    for kind, variant in zip(kinds, variants):
        if isinstance(kind, str):
            if kind != "exact":
                raise ValueError(f"a member is 'exact' or a fraction in (0, 1], not {kind!r}")
            out.append(None)
        else:
            out.append(sampler(p, kind, rng, variant))
    return out


class _Samples:
    """The sampled members' draws side by side: a (N+1, K) table of small unsigned
    interior indices (what is retained, with the values), turned into flat indices of
    the padded batch one step at a time."""

    def __init__(self, grid: _Grid, members, sampled: list[int]):
        tables = [members[b][0] for b in sampled]
        ks = [t.shape[1] for t in tables]
        self.grid, self.count = grid, len(sampled)
        self.table = np.concatenate(tables, axis=1)
        owner = np.repeat(np.arange(len(sampled)), ks)
        self.offset = np.repeat(np.asarray(sampled) * grid.width ** 2, ks)
        self.weight = np.concatenate([np.full(k, members[b][1]) for k, b in zip(ks, sampled)])
        # bins (x-profile j, member) for one bincount of the (3, K) contributions
        self.bins = (np.arange(3)[:, None] * len(sampled) + owner).ravel()
        self.bytes = {b: k * (8 + t.itemsize) for b, k, t in zip(sampled, ks, tables)}

    def at(self, n: int) -> np.ndarray:
        """Flat indices into one member's padded grid."""
        return self.grid.to_padded[self.table[n]]

    def flat(self, n: int) -> np.ndarray:
        """Flat indices into the whole padded batch."""
        return self.at(n) + self.offset


def run(p: Reactor, thetas, kinds, rng=None, variant="eq8", gradient: bool = True
        ) -> EngineResult:
    """Losses and gradients for a batch: ``thetas`` (B, 7), ``kinds[b]`` is ``"exact"``
    or a RAD fraction; ``variant`` (one for all, or one per member) picks eq. 8 or the
    released sampler for the sampled members."""
    thetas = check_theta(np.atleast_2d(thetas))
    kinds = list(kinds)
    if len(kinds) != len(thetas):
        raise ValueError(f"{len(kinds)} kinds for {len(thetas)} parameter vectors")
    variants = [variant] * len(kinds) if isinstance(variant, str) else list(variant)
    if len(variants) != len(kinds):
        raise ValueError(f"{len(variants)} variants for {len(kinds)} members")
    grid, n_steps, batch = _Grid(p), p.n_steps, len(thetas)
    members = _members(p, kinds, rng, variants) if gradient else [None] * batch
    exact = [b for b, m in enumerate(members) if m is None]
    sampled = [b for b, m in enumerate(members) if m is not None]
    ex = _selector(exact)
    cells = grid.width ** 2

    # what the reverse sweep will need, allocated once: phi_n (or its samples), n < N;
    # the last state is seeded as soon as it is computed
    retained = np.zeros(batch, dtype=np.int64)
    if gradient and exact:
        states = np.empty((n_steps, len(exact), p.side, p.side))
        retained[exact] = n_steps * p.size * 8
    if sampled:
        samples = _Samples(grid, members, sampled)
        values = np.empty((n_steps, samples.table.shape[1]))
        for b, size in samples.bytes.items():
            retained[b] = n_steps * size

    q, ratio = grid.factors(thetas), p.ratio
    cur = np.zeros((batch, grid.width, grid.width))
    cur[:] = grid.phi0
    nxt = np.zeros_like(cur)
    squares = np.zeros(batch)
    for n, _, diag in _diagonals(p, q):
        if gradient and exact:
            states[n] = cur[ex, 1:-1, 1:-1]
        if sampled:
            values[n] = cur.reshape(-1)[samples.flat(n)]
        if n > 0:
            squares += _squared_error(p, grid, cur, n)
        _stencil(ratio, cur, nxt, diag)
        cur, nxt = nxt, cur
    squares += _squared_error(p, grid, cur, n_steps)
    losses = squares / (n_steps * p.size)
    if not gradient:
        return EngineResult(losses, None, retained)

    # lam below is the adjoint divided by 2 / (N d): the seeds are then plain residuals
    targets = np.stack([grid.phi0, grid.bump]).reshape(2, -1)
    inner_targets = np.stack([grid.phi0[1:-1, 1:-1], grid.bump[1:-1, 1:-1]]).reshape(2, -1)

    def add_seed(n, lam, phi_exact, phi_sampled):
        """lam += the loss's direct dependence on phi_n (exact members: all of phi_n;
        sampled members: its samples, weighted)."""
        mix = np.array([1.0, math.sin(math.pi * n * p.dt)])
        if exact:
            inner = lam[ex, 1:-1, 1:-1]
            inner += phi_exact
            inner -= (mix @ inner_targets).reshape(p.side, p.side)
        if sampled:
            residual = phi_sampled - mix @ targets[:, samples.at(n)]
            lam.reshape(-1)[:] += np.bincount(samples.flat(n), weights=samples.weight * residual,
                                              minlength=batch * cells)

    acc = np.zeros((batch, 3, 3))            # sampled members: (x-profile, time factor)
    # exact members: sum_y phi_n lam_{n+1} of every step, contracted with the time factors
    # and the x-profiles after the loop (a working array of the reverse sweep, not retained)
    profiles = np.empty((n_steps, len(exact), p.side)) if exact else None
    lam = np.zeros((batch, grid.width, grid.width))
    prev = np.zeros_like(lam)
    add_seed(n_steps, lam, cur[ex, 1:-1, 1:-1] if exact else None,
             cur.reshape(-1)[samples.flat(n_steps)] if sampled else None)
    for n, f, diag in _diagonals(p, q, reverse=True):
        # lam holds lam_{n+1}; theta's share of step n needs phi_n
        if exact:
            np.einsum("bij,bij->bi", states[n], lam[ex, 1:-1, 1:-1], out=profiles[n])
        if sampled:
            w = samples.weight * values[n] * lam.reshape(-1)[samples.flat(n)]
            s = np.bincount(samples.bins, weights=(grid.basis_flat[:, samples.at(n)] * w).ravel(),
                            minlength=3 * len(sampled)).reshape(3, len(sampled))
            acc[sampled] += s.T[:, :, None] * f
        _stencil(ratio, lam, prev, diag)
        lam, prev = prev, lam
        if n > 0:
            add_seed(n, lam, states[n] if exact else None, values[n] if sampled else None)
    if exact:
        acc[ex] += np.einsum("nbi,nk,ji->bjk", profiles, _times(p, 0, n_steps),
                             grid.basis_inner, optimize=True)
    acc *= p.dt * 2.0 / (n_steps * p.size)
    grads = np.stack([acc[:, 0, 0], acc[:, 0, 1], acc[:, 0, 2], acc[:, 1, 1], acc[:, 1, 2],
                      acc[:, 2, 1], acc[:, 2, 2]], axis=1)
    return EngineResult(losses, grads, retained)


def _squared_error(p: Reactor, grid: _Grid, phi: np.ndarray, n: int) -> np.ndarray:
    """|phi_n - target(t_n)|^2 per member."""
    diff = phi - grid.phi0
    diff -= math.sin(math.pi * n * p.dt) * grid.bump
    return np.einsum("bij,bij->b", diff, diff)
