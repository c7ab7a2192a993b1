"""The continuous adjoint of the reactor of :mod:`minirad.studies.pde`, solved backwards
with the forward state stored, checkpointed, or re-integrated backwards in time.

The study's gradient is *discretise, then differentiate*: the reverse sweep
through its explicit (FTCS) time steps (:func:`minirad.studies.pde.exact_gradient`).
*Differentiate, then discretise* starts from the PDE instead.  With
``f(phi, t) = D lap(phi) + C(x, t; theta) phi`` and the study's loss, which
observes the state at the step times ``t_n = n dt``,
``L = (1/N) sum_{n=1..N} (1/d) |phi(t_n) - target(t_n)|^2``, the adjoint obeys

    lambda' = -J(t)^T lambda  between observations,
    lambda jumps by dL/dphi(t_n) = 2 (phi(t_n) - target(t_n)) / (N d) at each t_n
    (from lambda = 0 after T),
    dL/dtheta = integral_0^T (df/dtheta)^T lambda dt,

with ``J = D lap + diag(C)`` symmetric and ``(df/dtheta) = diag(phi) dC/dtheta``
(the jumps are how an adjoint meets observations inside the interval, as in
neural ODEs fitted to a time series).
:func:`continuous_gradient` solves it backwards by RK4 on the study's time grid,
the same scheme as :func:`minirad.implicit.ode_adjoint.continuous_gradient`, with
``phi(t)`` taken three ways (:data:`minirad.implicit.ode_adjoint.STATES`):

* ``"stored"``: every forward state kept (midpoints by cubic Hermite
  interpolation from the end values and slopes);
* ``"checkpoints"``: a checkpoint every ``checkpoint_every`` steps (about
  sqrt(N)), the states in between recomputed one segment at a time, by
  :func:`minirad.checkpoint.schedules.reverse_chain`
  (:class:`~minirad.checkpoint.schedules.Uniform`);
  the same numbers as ``"stored"``, bit for bit;
* ``"reintegrate"``: only ``phi(T)`` kept; ``phi' = f`` integrated backwards by
  RK4 beside the adjoint.  Diffusion damps a mode of wavenumber ``k`` by
  ``exp(-D k^2 t)`` going forward, so going backward every trace of that mode,
  rounding and discretisation errors included, grows by ``exp(+D k^2 t)``: on
  the study's grid the fastest mode grows by a factor :func:`growth_per_step`
  (about 1.65) *per time step*, and the reconstructed state is garbage after
  a few dozen steps (t ~ 0.01), long before ``t = 0``.

With stored or checkpointed states the continuous gradient differs from the
discrete one by the FTCS step's first-order error (a relative 9e-4 at the
study's dt over 64 or 128 steps, halving with dt); the re-integrated state stays
within 1e-6 of the forward one for about 50 steps back, is as far off as it is
large after about 80 and off by 1e38 after 256, and the gradient with it.

>>> from minirad.studies.pde import Reactor, initial_theta, exact_gradient
>>> p, theta = Reactor.quick(n_steps=128), initial_theta(rng=0)
>>> discrete = exact_gradient(p, theta)[1]
>>> def error(run):
...     return float(np.linalg.norm(run.gradient - discrete) / np.linalg.norm(discrete))
>>> stored = continuous_gradient(p, theta, "stored")
>>> round(error(stored), 6)                          # FTCS's first-order error in dt
0.000879
>>> kept = continuous_gradient(p, theta, "checkpoints")
>>> bool(np.array_equal(kept.gradient, stored.gradient)), stored.stored_states, kept.stored_states
(True, 128, 21)
>>> back = continuous_gradient(p, theta, "reintegrate")
>>> error(back) > 1e15, back.stored_states         # 128 steps back (t = 1/32) ruin it
(True, 1)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...checkpoint.schedules import Chain, StoreAll, Uniform, reverse_chain, sqrt_every
from ...implicit.ode_adjoint import STATES
from .problem import (
    Reactor,
    chain,
    check_theta,
    coefficient_matrix,
    initial_state,
    source_profile,
    target,
    time_factors,
)

__all__ = ["ReactorAdjoint", "continuous_gradient", "discrete_partials", "growth_per_step",
           "rate"]

#: d C / d theta as (7, 3, 3): entry (e, j, k) is d Theta_jk / d theta_e, Theta the
#: coefficient matrix (x-profile j, time factor k) of
#: :func:`~minirad.studies.pde.coefficient_matrix`
_LAYOUT = coefficient_matrix(np.eye(7))


@dataclass(frozen=True)
class ReactorAdjoint:
    """dL/dtheta by one method, and how it got there.

    ``partial[n]`` is the theta-cotangent gathered from ``t = T`` down to
    ``t_n`` (so ``partial[0]`` is the gradient, ``partial[N]`` zero);
    ``states[n]`` the state used at ``t_n`` on the way back (the forward
    state, or for ``"reintegrate"`` the reconstructed one); ``stored_states``
    the most states held at once (checkpoints and the states of one segment;
    the working state and the adjoint not counted), ``forward_steps`` the
    forward steps taken, recomputations included."""

    method: str
    gradient: np.ndarray
    partial: np.ndarray = field(repr=False)
    states: np.ndarray = field(repr=False)
    stored_states: int
    forward_steps: int


def rate(p: Reactor, theta, phi: np.ndarray, t: float) -> np.ndarray:
    """``f(phi, t) = D lap(phi) + C(x, t) phi`` on the interior (zero outside): the
    right-hand side whose forward-Euler step is the study's ``phi + dt f``.

    >>> from minirad.studies.pde import step, initial_theta
    >>> p, theta = Reactor.quick(), initial_theta(rng=0)
    >>> phi = initial_state(p)
    >>> bool(np.allclose(phi + p.dt * rate(p, theta, phi, 0.0), step(p, theta, 0, phi),
    ...                  rtol=0, atol=1e-15))
    True
    """
    lap = -4.0 * phi
    lap[1:, :] += phi[:-1, :]
    lap[:-1, :] += phi[1:, :]
    lap[:, 1:] += phi[:, :-1]
    lap[:, :-1] += phi[:, 1:]
    return (p.diffusion / p.dx ** 2) * lap + source_profile(p, theta, t)[:, None] * phi


def _theta_rate(p: Reactor, phi: np.ndarray, lam: np.ndarray, t: float) -> np.ndarray:
    """(df/dtheta)^T lam at time t: sum over the grid of phi lam dC/dtheta."""
    s = p.basis @ np.sum(phi * lam, axis=1)          # per x-profile j
    return np.einsum("ejk,j,k->e", _LAYOUT, s, time_factors(t))


def growth_per_step(p: Reactor, theta=None) -> float:
    """How much one backward RK4 step of ``phi' = f`` amplifies the fastest decaying
    mode: ``R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24`` at ``z = dt mu``, with
    ``mu = 8 D sin^2(pi side / (2 cells)) / dx^2`` that mode's decay rate under the
    5-point Laplacian.  With ``theta``, the source C (a growth rate) takes its
    mean over x at t = 0 off that decay rate (about 5 of 2043, a 0.1% effect).

    >>> p = Reactor()
    >>> round(p.dt * 8 * p.diffusion * math.sin(math.pi * 31 / 64) ** 2 / p.dx ** 2, 4)
    0.4988
    >>> round(growth_per_step(p), 4), round(growth_per_step(p, [4.932, 0, 0, 0, 0, 0, 0]), 4)
    (1.6465, 1.6445)
    """
    mu = 8 * p.diffusion * math.sin(math.pi * p.side / (2 * p.cells)) ** 2 / p.dx ** 2
    if theta is not None:
        mu -= float(np.mean(source_profile(p, theta, 0.0)))
    z = p.dt * mu
    return 1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24


class _Backward:
    """One RK4 step of the adjoint from t_{n+1} back to t_n, given phi_n and phi_{n+1},
    then the jump of the observation at t_n."""

    def __init__(self, p: Reactor, theta):
        self.p, self.theta = p, theta
        self.scale = 2.0 / (p.n_steps * p.size)

    def jump(self, n, phi):
        """What the observation of phi at t_n adds to lambda (n = 1 .. N)."""
        return self.scale * (phi - target(self.p, n * self.p.dt))

    def rhs(self, phi, lam, t):
        """(d lambda / dt, d mu / dt) with mu running from 0 at T to dL/dtheta at 0."""
        return -rate(self.p, self.theta, lam, t), -_theta_rate(self.p, phi, lam, t)

    def step(self, n, phi_n, phi_next, lam):
        p, h = self.p, self.p.dt
        t0, t1 = n * h, (n + 1) * h
        # cubic Hermite midpoint from the two states and their slopes
        mid = ((phi_n + phi_next) / 2
               + h / 8 * (rate(p, self.theta, phi_n, t0) - rate(p, self.theta, phi_next, t1)))
        k1 = self.rhs(phi_next, lam, t1)
        k2 = self.rhs(mid, lam - h / 2 * k1[0], t1 - h / 2)
        k3 = self.rhs(mid, lam - h / 2 * k2[0], t1 - h / 2)
        k4 = self.rhs(phi_n, lam - h * k3[0], t0)
        lam = lam - h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        mu = -h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        return (lam + self.jump(n, phi_n) if n > 0 else lam), mu

    def unstep(self, n, phi_next):
        """phi_n from phi_{n+1} by one RK4 step backwards in time."""
        p, h, th = self.p, self.p.dt, self.theta
        t1 = (n + 1) * h
        k1 = rate(p, th, phi_next, t1)
        k2 = rate(p, th, phi_next - h / 2 * k1, t1 - h / 2)
        k3 = rate(p, th, phi_next - h / 2 * k2, t1 - h / 2)
        k4 = rate(p, th, phi_next - h * k3, t1 - h)
        return phi_next - h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def continuous_gradient(p: Reactor, theta, states_from: str = "stored",
                        checkpoint_every: int | None = None) -> ReactorAdjoint:
    """dL/dtheta from the continuous adjoint, solved backwards by RK4 with the state
    from ``states_from`` (see the module docstring; ``checkpoint_every`` defaults to
    :func:`minirad.checkpoint.schedules.sqrt_every`).  The forward states are the study's
    own FTCS steps in every case."""
    if states_from not in STATES:
        raise ValueError(f"states_from must be one of {', '.join(map(repr, STATES))}, not "
                         f"{states_from!r}")
    theta = check_theta(theta)
    if theta.shape != (7,):
        raise ValueError(f"theta must have shape (7,), got {theta.shape}")
    N = p.n_steps
    backward = _Backward(p, theta)
    study = chain(p, theta)           # the study's forward step, unchanged
    used = np.full((N + 1, p.side, p.side), np.nan)
    partial = np.zeros((N + 1, 7))
    if states_from == "reintegrate":
        return _reintegrate(p, study, backward, used, partial)

    if states_from == "stored":
        schedule = StoreAll()
    else:
        every = sqrt_every(N) if checkpoint_every is None else checkpoint_every
        if isinstance(every, bool) or not isinstance(every, (int, np.integer)) \
                or not 1 <= every <= N:
            raise ValueError(f"checkpoint_every must be an integer in 1..{N}, got {every!r}")
        schedule = Uniform(int(every))

    # The backward solve as a chain reversal: the cotangent handed from step n+1 to
    # step n carries (lambda(t_{n+1}), phi_{n+1}), since an RK4 step needs both ends.
    def seed(n, phi):
        if n < N:
            return None
        used[N] = phi
        return backward.jump(N, phi), phi

    def vjp(n, phi_n, carried):
        lam, phi_next = carried
        used[n] = phi_n
        lam, mu = backward.step(n, phi_n, phi_next, lam)
        partial[n] = partial[n + 1] + mu
        return (lam, phi_n), mu

    result = reverse_chain(Chain(step=study.step, vjp=vjp, seed=seed), initial_state(p), N,
                      schedule)
    return ReactorAdjoint(f"continuous ({states_from})", result.param_bar, partial, used,
                          result.peak_stored, result.forward_steps)


def _reintegrate(p, study, backward, used, partial) -> ReactorAdjoint:
    N = p.n_steps
    phi = initial_state(p)
    for n in range(N):
        phi = study.step(n, phi)
    used[N] = phi
    lam = backward.jump(N, phi)
    # the reconstructed state grows without bound: let it reach inf/nan, then say so
    with np.errstate(over="ignore", invalid="ignore"):
        for n in range(N - 1, -1, -1):
            earlier = backward.unstep(n, phi)
            lam, mu = backward.step(n, earlier, phi, lam)
            partial[n] = partial[n + 1] + mu
            used[n] = phi = earlier
    return ReactorAdjoint("continuous (reintegrate)", partial[0].copy(), partial, used, 1, N)


def discrete_partials(p: Reactor, theta) -> tuple[np.ndarray, np.ndarray]:
    """The study's own reverse sweep (:func:`minirad.studies.pde.chain`, all states
    stored) with its theta-cotangent recorded as it goes: ``(partial, states)``,
    ``partial[n]`` the sum of the steps ``n .. N-1`` (``partial[0]`` is
    :func:`~minirad.studies.pde.exact_gradient`'s gradient), ``states[n]`` the
    forward state ``phi_n``.

    >>> from minirad.studies.pde import initial_theta, exact_gradient
    >>> p, theta = Reactor.quick(n_steps=16), initial_theta(rng=0)
    >>> partial, states = discrete_partials(p, theta)
    >>> bool(np.array_equal(partial[0], exact_gradient(p, theta)[1])), states.shape
    (True, (17, 31, 31))
    """
    theta = check_theta(theta)
    study, N = chain(p, theta), p.n_steps
    partial = np.zeros((N + 1, 7))
    states = np.empty((N + 1, p.side, p.side))
    total = [None]

    def vjp(n, phi_n, lam):
        states[n] = phi_n
        lam, bar = study.vjp(n, phi_n, lam)
        # the same additions, in the same order, as checkpointing's running total
        total[0] = bar if total[0] is None else total[0] + bar
        partial[n] = total[0]
        return lam, bar

    result = reverse_chain(Chain(step=study.step, vjp=vjp, seed=study.seed), initial_state(p), N)
    states[N] = result.final_state
    return partial, states
