"""The fast path of :mod:`minirad.studies.pde`: one time loop for a batch of parameter
vectors, each with its own estimator (exact, or RAD at its own fraction).

The reference is the chain of :func:`minirad.studies.pde.chain` reversed by
:mod:`minirad.checkpointing`; this engine computes the same numbers (tested
equal to 1e-12) with fewer numpy calls per step: states live in zero-padded
(B, side+2, side+2) buffers so the stencil is five slice additions, every
member of the batch steps together, the samples of all steps are drawn up
front and the sampled values go into one preallocated array, so what is
retained is exactly what is counted.

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

from .._random import as_generator
from .pde import Reactor, check_theta, coefficient_matrix, initial_state, sampler

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


def _stencil(p: Reactor, src: np.ndarray, dst: np.ndarray, diag: np.ndarray) -> None:
    """dst interior = A src interior (both zero-padded (B, w, w); diag (B, side, 1))."""
    out = dst[:, 1:-1, 1:-1]
    np.add(src[:, 2:, 1:-1], src[:, :-2, 1:-1], out=out)
    out += src[:, 1:-1, 2:]
    out += src[:, 1:-1, :-2]
    out *= p.ratio
    out += src[:, 1:-1, 1:-1] * diag


def _time(p: Reactor, n: int) -> np.ndarray:
    t = math.pi * n * p.dt
    return np.array([1.0, math.sin(t), math.cos(t)])


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


def _members(p: Reactor, kinds, rng, variant):
    """Each member's sample table (N+1, k) of padded flat indices and weight, or None for
    an exact member."""
    rng = as_generator(rng)
    out = []
    for kind in kinds:
        if isinstance(kind, str):
            if kind != "exact":
                raise ValueError(f"a member is 'exact' or a fraction in (0, 1], not {kind!r}")
            out.append(None)
        else:
            out.append(sampler(p, kind, rng, variant))
    return out


def run(p: Reactor, thetas, kinds, rng=None, variant: str = "eq8",
        gradient: bool = True) -> EngineResult:
    """Losses and gradients for a batch: ``thetas`` (B, 7), ``kinds[b]`` is ``"exact"``
    or a RAD fraction; ``variant`` applies to every sampled member."""
    thetas = check_theta(np.atleast_2d(thetas))
    kinds = list(kinds)
    if len(kinds) != len(thetas):
        raise ValueError(f"{len(kinds)} kinds for {len(thetas)} parameter vectors")
    grid, n_steps, batch = _Grid(p), p.n_steps, len(thetas)
    members = _members(p, kinds, rng, variant) if gradient else [None] * batch
    exact = [b for b, m in enumerate(members) if m is None]
    sampled = [b for b, m in enumerate(members) if m is not None]
    ex = _selector(exact)
    cells = grid.width ** 2

    # what the reverse sweep will need, allocated once
    retained = np.zeros(batch, dtype=np.int64)
    if gradient and exact:
        states = np.empty((n_steps + 1, len(exact), p.side, p.side))
        retained[exact] = n_steps * p.size * 8
    if sampled:
        tables = [members[b][0] for b in sampled]
        ks = [t.shape[1] for t in tables]
        flat_index = np.concatenate(
            [grid.to_padded[t] + b * cells for t, b in zip(tables, sampled)], axis=1)
        weight = np.concatenate([np.full(k, members[b][1]) for k, b in zip(ks, sampled)])
        owner = np.repeat(np.arange(len(sampled)), ks)
        # bins (x-profile j, member) for one bincount of the (3, K) contributions
        bins = (np.arange(3)[:, None] * len(sampled) + owner).ravel()
        values = np.empty((n_steps + 1, len(owner)))
        for k, b, t in zip(ks, sampled, tables):
            retained[b] = n_steps * k * (8 + t.itemsize)

    q = grid.factors(thetas)
    cur = np.zeros((batch, grid.width, grid.width))
    cur[:] = grid.phi0
    nxt = np.zeros_like(cur)
    squares = np.zeros(batch)
    for n in range(n_steps + 1):
        if gradient and exact:
            states[n] = cur[ex, 1:-1, 1:-1]
        if sampled:
            values[n] = cur.reshape(-1)[flat_index[n]]
        if n > 0:
            diff = cur - grid.phi0
            diff -= math.sin(math.pi * n * p.dt) * grid.bump
            squares += np.einsum("bij,bij->b", diff, diff)
        if n < n_steps:
            _stencil(p, cur, nxt, (_time(p, n) @ q)[:, :, None])
            cur, nxt = nxt, cur
    losses = squares / (n_steps * p.size)
    if not gradient:
        return EngineResult(losses, None, retained)

    scale = 2.0 / (n_steps * p.size)
    seed_phi0, seed_bump = scale * grid.phi0, scale * grid.bump
    inner0, bump0 = seed_phi0[1:-1, 1:-1], seed_bump[1:-1, 1:-1]
    acc = np.zeros((batch, 3, 3))            # sampled members: (x-profile, time factor)
    # exact members: sum_y phi_n lam_{n+1} of every step, contracted with the time factors
    # and the x-profiles after the loop (a working array of the reverse sweep, not retained)
    profiles = np.empty((n_steps, len(exact), p.side)) if exact else None
    lam = np.zeros((batch, grid.width, grid.width))
    prev = np.zeros_like(lam)
    lam_inner = lam[:, 1:-1, 1:-1]
    for n in range(n_steps, -1, -1):
        # phi_n's own seed: the loss's dependence on phi_n (exact or sampled)
        if n > 0:
            shift = math.sin(math.pi * n * p.dt)
            if exact:
                seed = states[n] * scale
                seed -= inner0
                seed -= shift * bump0
                lam_inner[ex] += seed
            if sampled:
                at = flat_index[n] % cells
                residual = values[n] - grid.phi0.reshape(-1)[at] - shift * grid.bump.reshape(-1)[at]
                lam.reshape(-1)[:] += np.bincount(flat_index[n], weights=weight * scale * residual,
                                                  minlength=batch * cells)
        if n == 0:
            break
        # step n-1 backwards: lam holds lam_n; theta's share needs phi_{n-1}
        f = _time(p, n - 1)
        if exact:
            np.einsum("bij,bij->bi", states[n - 1], lam_inner[ex], out=profiles[n - 1])
        if sampled:
            at = flat_index[n - 1] % cells
            w = weight * values[n - 1] * lam.reshape(-1)[flat_index[n - 1]]
            s = np.bincount(bins, weights=(grid.basis_flat[:, at] * w).ravel(),
                            minlength=3 * len(sampled)).reshape(3, len(sampled))
            acc[sampled] += s.T[:, :, None] * f
        _stencil(p, lam, prev, (f @ q)[:, :, None])
        lam, prev = prev, lam
        lam_inner = lam[:, 1:-1, 1:-1]
    if exact:
        t = math.pi * p.dt * np.arange(n_steps)
        times = np.stack([np.ones(n_steps), np.sin(t), np.cos(t)], axis=1)
        acc[ex] += np.einsum("nbi,nk,ji->bjk", profiles, times, grid.basis_inner,
                             optimize=True)
    acc *= p.dt
    grads = np.stack([acc[:, 0, 0], acc[:, 0, 1], acc[:, 0, 2], acc[:, 1, 1], acc[:, 1, 2],
                      acc[:, 2, 1], acc[:, 2, 2]], axis=1)
    return EngineResult(losses, grads, retained)
