"""The reaction-diffusion simulation as an LCG of arrays (for a short horizon): the graph the
adjoint engine of :mod:`minirad.studies.pde` is a fast path of.

Vertices: ``theta`` (input), then per step ``C_n`` (the source field) and
``phi_{n+1}``, and the loss ``L``.  Edges and what they keep for the reverse
sweep:

* ``theta -> C_n``: dC_n/dtheta, recomputed from t: keeps nothing;
* ``phi_n -> phi_{n+1}``: A_n = I + r L + dt diag(C_n), a stencil whose
  diagonal is recomputed from theta and t: keeps nothing;
* ``C_n -> phi_{n+1}``: dt diag(phi_n): keeps phi_n;
* ``phi_n -> L``: the row 2 (phi_n - target_n)^T / (N d), a sum after a
  diagonal: keeps phi_n (the same copy: one key per state).

``samples`` (from :func:`minirad.studies.pde.sampler`) are eq. 8's draws: the
graph gets the sampling matrix P_n (d/k times k draws of e_i e_i^T) by
:func:`minirad.randomized.injection.inject_edges`, given those draws, on the two edges that
keep phi_n.  Both diagonals fold P_n in and keep only the k sampled entries
and their indices, one shared copy per state.

>>> from minirad.exact.sweeps import gradient
>>> from minirad.studies.pde import Reactor, initial_theta, exact_gradient
>>> p = Reactor.quick(n_steps=6)
>>> g = pde_graph(p, initial_theta(rng=0))
>>> g
LCG(14 vertices: 1 input, 12 intermediates, 1 output; 23 edges)
>>> exact = exact_gradient(p, initial_theta(rng=0))[1]
>>> bool(np.allclose(gradient(g)[0], exact, rtol=1e-12, atol=0))
True
"""

from __future__ import annotations

import math

import numpy as np

from ...graph.lcg import LCG, value_key
from ...graph.operators import Diagonal, Operator, Retained, SumAxes, compose, fresh_key
from ...randomized.injection import inject_edges
from .problem import Reactor, check_theta, coefficient_matrix, initial_state, stencil, target

__all__ = ["SourceBasis", "Stencil", "pde_graph"]


class SourceBasis(Operator):
    """dC_n/dtheta: theta (7,) -> the field C_n (side, side); a known function of t,
    so nothing is kept."""

    kind = "source basis"

    def __init__(self, p: Reactor, t: float):
        super().__init__((p.side, p.side), (7,))
        self.side, self.basis = p.side, p.basis
        self.f = np.array([1.0, math.sin(math.pi * t), math.cos(math.pi * t)])

    @property
    def flops(self):
        return 3 * self.side * self.side

    def _apply(self, xs):
        coefs = coefficient_matrix(xs) @ self.f           # (n, 3): the x-profiles' weights
        profile = coefs @ self.basis                       # (n, side)
        return np.repeat(profile[:, :, None], self.side, axis=2)

    def _transpose(self, ys):
        s = ys.sum(axis=2) @ self.basis.T                  # (n, 3)
        f = self.f
        return np.stack([s[:, 0], s[:, 0] * f[1], s[:, 0] * f[2], s[:, 1] * f[1],
                         s[:, 1] * f[2], s[:, 2] * f[1], s[:, 2] * f[2]], axis=1)


class Stencil(Operator):
    """A_n = I + r L + dt diag(C_n) on the interior; symmetric, and C_n is recomputed
    from theta and t, so nothing is kept."""

    kind = "stencil"

    def __init__(self, p: Reactor, profile: np.ndarray):
        super().__init__((p.side, p.side), (p.side, p.side))
        self.p, self.profile = p, profile

    @property
    def flops(self):
        return 7 * self.in_size

    def _apply(self, xs):
        return stencil(self.p, xs, self.profile)

    _transpose = _apply


def _eq8_draws(p: Reactor, samples) -> np.ndarray:
    """The sampled indices (N+1, k) of eq. 8's sampler, checked."""
    indices, weight = samples
    indices = np.asarray(indices)
    if indices.ndim != 2 or indices.shape[0] != p.n_steps + 1:
        raise ValueError(f"samples must hold one row of draws per state phi_0 .. phi_N "
                         f"({p.n_steps + 1} rows), not shape {indices.shape}")
    k = indices.shape[1]
    if weight != p.size / k or indices.max() >= p.size:
        raise ValueError("pde_graph injects eq. 8's sampling (weight d/k, so E[P] = I); the "
                         "released sampler keeps boundary points without the weight and is no "
                         "such injection: use rad_gradient(..., variant='released') for it")
    return indices


def pde_graph(p: Reactor, theta, samples=None) -> LCG:
    """The LCG of arrays of :func:`minirad.studies.pde.simulate` at ``theta`` (exact edge
    labels, or eq. 8's sampled ones); its input is theta, its output the loss."""
    theta = check_theta(theta)
    if p.n_steps * p.size > 2_000_000:
        raise ValueError(f"pde_graph keeps every state: {p.n_steps} steps is too long a "
                         f"horizon for it (use the adjoint engine)")
    profile_of_time = coefficient_matrix(theta).T @ p.basis
    scale = 2.0 / (p.n_steps * p.size)
    names, values, ops = ["theta"], [theta], ["input"]
    sources, targets, labels = [], [], []
    phi, phi_vertex, phi0_key = initial_state(p), None, fresh_key("phi_0")
    state_bits = p.size * 64
    for n in range(p.n_steps):
        t = n * p.dt
        f = np.array([1.0, math.sin(math.pi * t), math.cos(math.pi * t)])
        profile = f @ profile_of_time
        c_vertex = len(names)
        names.append(f"C{n}")
        values.append(np.repeat(profile[:, None], p.side, axis=1))
        ops.append("C({0}, t)")
        sources.append(0)
        targets.append(c_vertex)
        labels.append(SourceBasis(p, t))
        key = phi0_key if phi_vertex is None else value_key(phi_vertex)
        diag_edge = Diagonal(p.dt * phi, retained=(Retained(key, state_bits),))
        new = stencil(p, phi, profile)
        v = len(names)
        names.append(f"phi{n + 1}")
        values.append(new)
        if phi_vertex is None:
            ops.append("{0} * phi_0 + A0 phi_0")
            sources.append(c_vertex)
            targets.append(v)
            labels.append(diag_edge)
        else:
            ops.append("A{n} {0} + dt {1} * {0}".replace("{n}", str(n)))
            sources += [phi_vertex, c_vertex]
            targets += [v, v]
            labels += [Stencil(p, profile), diag_edge]
        phi, phi_vertex = new, v
    # the loss, one row per state (edges grouped by their common target)
    loss_vertex, total = len(names), 0.0
    for n in range(1, p.n_steps + 1):
        v = 2 * n  # phi_n's vertex number: theta, then (C, phi) per step
        residual = values[v] - target(p, n * p.dt)
        total += float(np.sum(residual ** 2))
        row = Diagonal(scale * residual, retained=(Retained(value_key(v), state_bits),))
        sources.append(v)
        targets.append(loss_vertex)
        labels.append(compose(SumAxes(row.in_shape), row))
    names.append("L")
    values.append(np.array(total / (p.n_steps * p.size)))
    ops.append("mean squared error")
    g = LCG(names, sources, targets, labels, [0], [loss_vertex], values=values, ops=ops)
    if samples is None:
        return g
    # eq. 8: P_n on the edge dt diag(phi_n) (C_n -> phi_{n+1}) and on phi_n's loss row, the
    # same draws on both, so the two edges share one sampled copy of phi_n
    draws = _eq8_draws(p, samples)
    edges = ([(f"C{n}", f"phi{n + 1}") for n in range(p.n_steps)]
             + [(f"phi{n}", "L") for n in range(1, p.n_steps + 1)])
    picks = list(draws[:p.n_steps]) + list(draws[1:])
    return inject_edges(g, edges, picks=picks)
