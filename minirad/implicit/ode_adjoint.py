"""Gradients through ODE solves: differentiate the time steps, or solve the adjoint ODE.

For ``u' = f(u, p)``, ``u(0) = u0`` and a loss ``G = g(u(T))`` there are two
ways to ``dG/dp``:

* **discretise, then differentiate**: the solver is a program (here the
  classical Runge-Kutta method, RK4, with a fixed step h), its LCG a chain
  of time steps, and a reverse sweep through it, stage by stage, is the
  exact gradient of *that* program (:func:`discrete_gradient`);
* **differentiate, then discretise**: the continuous adjoint
  ``lambda' = -f_u(u(t))^T lambda``, ``lambda(T) = g_u``, solved backwards
  in time, and ``dG/dp = integral of f_p^T lambda dt``
  (:func:`continuous_gradient`).  It approximates the same number to the
  accuracy of both solvers.

The backward solve needs ``u(t)`` at every step, and there are three ways to
have it (``states=``): keep every state of the forward solve (``"stored"``:
memory for all N states; midpoints by cubic Hermite interpolation), keep
every K-th and recompute the others from the nearest one (``"checkpoints"``:
identical numbers, N/K + K states or so, each other state recomputed once), or
integrate ``u' = f`` backwards from ``u(T)`` beside ``lambda``
(``"reintegrate"``: no memory at all).  The last is the one that fails: a
dissipative system such as diffusion forgets its high frequencies going
forward, so going backward amplifies them, rounding errors included, by
``exp(+D k^2 t)``; the reconstructed state and the gradient are garbage
long before ``t = 0``.  An oscillator, which loses nothing, reintegrates fine.

>>> problem = oscillator()
>>> p = problem.parameters
>>> exact = discrete_gradient(problem, p).gradient
>>> stored = continuous_gradient(problem, p, states="stored").gradient
>>> bool(np.allclose(stored, exact, rtol=0.05))      # the same gradient, O(h) apart
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._arguments import check_memory, format_number
from ..exact import blocks
from ..tracing.arrays import trace_arrays

__all__ = [
    "STATES", "Gradient", "ODEProblem", "continuous_gradient", "diffusion",
    "discrete_gradient", "loss", "lotka_volterra", "oscillator", "solve", "traced_gradient",
]

STATES = ("stored", "checkpoints", "reintegrate")


@dataclass(frozen=True)
class ODEProblem:
    """``u' = f(u, p)`` from ``u0`` over ``n_steps`` RK4 steps of size ``h``,
    with the loss ``G = |u(T) - target|^2 / 2``.  ``f_u(u, p)`` and
    ``f_p(u, p)`` are the Jacobians (matrices); ``parameters`` a default p."""

    name: str
    f: Callable
    f_u: Callable
    f_p: Callable
    u0: np.ndarray
    target: np.ndarray
    h: float
    n_steps: int
    parameters: np.ndarray
    grid: np.ndarray | None = field(default=None, repr=False)

    @property
    def T(self) -> float:
        return self.h * self.n_steps


def _check_parameters(problem: ODEProblem, p) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != problem.parameters.shape:
        raise ValueError(f"{problem.name} takes parameters of shape "
                         f"{problem.parameters.shape}, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("parameters must be finite")
    return p


def _rk4_step(problem, u, p):
    h, f = problem.h, problem.f
    k1 = f(u, p)
    k2 = f(u + h / 2 * k1, p)
    k3 = f(u + h / 2 * k2, p)
    k4 = f(u + h * k3, p)
    return u + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def solve(problem: ODEProblem, p) -> np.ndarray:
    """Every state of the forward RK4 solve, shape ``(n_steps + 1, n)``; a
    ``ValueError`` if the solve overflows (a step too large for RK4's stability)."""
    p = _check_parameters(problem, p)
    check_memory(8 * (problem.n_steps + 1) * len(problem.u0),
                 f"{problem.name}: the {format_number(problem.n_steps + 1)} states of the solve")
    u = np.empty((problem.n_steps + 1, len(problem.u0)))
    u[0] = problem.u0
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, with the step
        for n in range(problem.n_steps):
            u[n + 1] = _rk4_step(problem, u[n], p)
    if not np.all(np.isfinite(u)):
        first = int(np.argmax(~np.isfinite(u).all(axis=1)))
        raise ValueError(f"{problem.name}: the RK4 solve overflowed at step {first} of "
                         f"{problem.n_steps} (step h = {problem.h:g}); take more, smaller steps")
    return u


def loss(problem: ODEProblem, p) -> float:
    """``|u_N - target|^2 / 2`` after the forward solve."""
    r = solve(problem, p)[-1] - problem.target
    return 0.5 * float(r @ r)


@dataclass(frozen=True)
class Gradient:
    """``dG/dp`` by one method, what the backward pass kept (``stored_states``,
    the peak number of states in memory), the extra forward steps it re-ran
    (``recomputed_steps``), and the states it used on the way back (``states``,
    row ``n`` at time ``n h``; for ``"reintegrate"`` the reconstructed ones)."""

    method: str
    gradient: np.ndarray
    stored_states: int
    recomputed_steps: int
    states: np.ndarray = field(repr=False)


def discrete_gradient(problem: ODEProblem, p) -> Gradient:
    """The reverse sweep through the RK4 steps, stage by stage: the exact
    gradient of the discrete program (every state stored).

    Each step ``u+ = u + h/6 (k1 + 2 k2 + 2 k3 + k4)`` with
    ``k_i = f(y_i)``, ``y_1 = u``, ``y_2 = u + h/2 k1``, ``y_3 = u + h/2 k2``,
    ``y_4 = u + h k3`` is a small LCG; its reverse sweep pulls the adjoint
    of ``u+`` back to ``u`` and to ``p``.
    """
    p = _check_parameters(problem, p)
    h, f = problem.h, problem.f
    u = solve(problem, p)
    lam = u[-1] - problem.target
    grad = np.zeros_like(p)
    for n in range(problem.n_steps - 1, -1, -1):
        k1 = f(u[n], p)
        y = [u[n], u[n] + h / 2 * k1]
        k2 = f(y[1], p)
        y.append(u[n] + h / 2 * k2)
        y.append(u[n] + h * f(y[2], p))
        stage = [h / 6 * lam, h / 3 * lam, h / 3 * lam, h / 6 * lam]  # adjoints of k1..k4
        back = lam.copy()
        for i, reach in ((3, h), (2, h / 2), (1, h / 2), (0, 0.0)):
            pulled = problem.f_u(y[i], p).T @ stage[i]     # adjoint of y_i
            grad += problem.f_p(y[i], p).T @ stage[i]
            back += pulled
            if i:
                stage[i - 1] = stage[i - 1] + reach * pulled
        lam = back
    return Gradient("discrete", grad, problem.n_steps + 1, 0, u)


def traced_gradient(problem: ODEProblem, p) -> Gradient:
    """Discretise, then differentiate, literally: trace the RK4 loop and the loss
    into a vector LCG (:func:`minirad.tracing.arrays.trace_arrays`) and run its
    reverse sweep.  The same numbers as :func:`discrete_gradient`, which is
    that sweep written out by hand.

    >>> problem = oscillator(n_steps=20)
    >>> by_hand = discrete_gradient(problem, problem.parameters).gradient
    >>> bool(np.allclose(traced_gradient(problem, problem.parameters).gradient, by_hand,
    ...                  rtol=1e-12))
    True
    """
    p = _check_parameters(problem, p)

    def program(q):
        u = problem.u0
        for _ in range(problem.n_steps):
            u = _rk4_step(problem, u, q)
        r = u - problem.target
        return 0.5 * (r * r).sum()

    g = trace_arrays(program, p)
    return Gradient("reverse sweep on the vector LCG", blocks.gradient(g)[0],
                    problem.n_steps + 1, 0, solve(problem, p))


def _adjoint_rhs(problem, p, u, lam):
    """d/dt of (lambda, mu), mu collecting integral f_p^T lambda as t runs backwards."""
    return -problem.f_u(u, p).T @ lam, -problem.f_p(u, p).T @ lam


def continuous_gradient(problem: ODEProblem, p, states: str = "stored",
                        checkpoint_every: int | None = None) -> Gradient:
    """The continuous adjoint, solved backwards by RK4 on the forward grid,
    with ``u(t)`` from ``states`` (:data:`STATES`).

    ``"stored"`` and ``"checkpoints"`` take ``u`` at the grid points from
    the forward solve (midpoints by cubic Hermite interpolation from the
    end values and slopes); ``"checkpoints"`` keeps every
    ``checkpoint_every``-th state (default about sqrt(N)) and re-runs the
    forward steps of one segment at a time, giving the same numbers as
    ``"stored"``.  ``"reintegrate"`` keeps only ``u(T)`` and integrates
    ``u' = f`` backwards beside the adjoint with the same RK4 steps.
    """
    if states not in STATES:
        raise ValueError(f"states must be one of {', '.join(map(repr, STATES))}, not "
                         f"{states!r}")
    p = _check_parameters(problem, p)
    N, h, f = problem.n_steps, problem.h, problem.f
    forward = solve(problem, p)
    lam = forward[-1] - problem.target
    mu = np.zeros_like(p)
    used = np.full_like(forward, np.nan)
    used[N] = forward[N]
    recomputed, kept = 0, N + 1
    K = checkpoint_every if checkpoint_every is not None else max(1, round(np.sqrt(N)))
    if states == "checkpoints":
        if not 1 <= K <= N:
            raise ValueError(f"checkpoint_every must lie in 1..{N}, got {K}")
        checkpoints = {n: forward[n] for n in range(0, N + 1, K)}
        checkpoints[N] = forward[N]           # u(T) starts the backward solve anyway
        kept = len(checkpoints) + K - 1       # plus the states of one segment
    segment: dict[int, np.ndarray] = {}

    def state_at(n: int) -> np.ndarray:
        nonlocal recomputed, segment
        if states == "stored":
            return forward[n]
        if n in checkpoints:
            return checkpoints[n]
        if n not in segment:  # re-run the forward steps from the checkpoint below n
            start = n - n % K
            segment = {start: checkpoints[start]}
            for m in range(start, min(start + K, N) - 1):   # up to the next checkpoint
                segment[m + 1] = _rk4_step(problem, segment[m], p)
                recomputed += 1
        return segment[n]

    u = forward[N]
    for n in range(N, 0, -1):
        if states == "reintegrate":  # RK4 for (u, lambda, mu) together, backwards in time
            def rhs(u_, lam_):
                return (f(u_, p), *_adjoint_rhs(problem, p, u_, lam_))
            with np.errstate(over="ignore", invalid="ignore"):
                k1 = rhs(u, lam)
                k2 = rhs(u - h / 2 * k1[0], lam - h / 2 * k1[1])
                k3 = rhs(u - h / 2 * k2[0], lam - h / 2 * k2[1])
                k4 = rhs(u - h * k3[0], lam - h * k3[1])
                step = [(a + 2 * b + 2 * c + d) / 6 for a, b, c, d in zip(k1, k2, k3, k4)]
                u, lam, mu = u - h * step[0], lam - h * step[1], mu - h * step[2]
            used[n - 1] = u
            continue
        late, early = state_at(n), state_at(n - 1)
        mid = (late + early) / 2 + h / 8 * (f(early, p) - f(late, p))   # cubic Hermite
        k1 = _adjoint_rhs(problem, p, late, lam)
        k2 = _adjoint_rhs(problem, p, mid, lam - h / 2 * k1[0])
        k3 = _adjoint_rhs(problem, p, mid, lam - h / 2 * k2[0])
        k4 = _adjoint_rhs(problem, p, early, lam - h * k3[0])
        lam = lam - h * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6
        mu = mu - h * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6
        used[n - 1] = early
    if states == "reintegrate":
        kept = 1
    # mu' = -f_p^T lambda from mu(T) = 0 run down to t = 0: mu(0) = integral f_p^T lambda dt
    return Gradient(f"continuous ({states})", mu, kept, recomputed, used)


# ------------------------------------------------------------- problems
def _positive(name: str, value, integer: bool = False):
    """``value`` checked to be a positive finite number (a positive int if ``integer``)."""
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, kinds):
        raise TypeError(f"{name} must be a positive {'integer' if integer else 'number'}, "
                        f"not a {type(value).__name__}")
    try:  # (float() of an int past 1e308 overflows: not a usable size either)
        usable = value > 0 if integer else value > 0 and math.isfinite(float(value))
    except OverflowError:
        usable = False
    if not usable:
        shown = format_number(value) if isinstance(value, (int, np.integer)) else repr(value)
        raise ValueError(f"{name} must be a positive {'integer' if integer else 'finite number'}"
                         f", not {shown}")
    return value


def _step_size(n_steps, T) -> float:
    """The RK4 step ``T / n_steps`` for ``n_steps`` steps up to time ``T``."""
    _positive("n_steps", n_steps, integer=True)
    try:
        h = _positive("T", T) / n_steps
    except OverflowError:  # n_steps past 1e308
        h = 0.0
    if not h > 0:
        raise ValueError(f"T = {T!r} over {format_number(n_steps)} steps is a step of 0: use fewer "
                         f"steps")
    return h


def oscillator(n_steps: int = 400, T: float = 10.0) -> ODEProblem:
    """A damped oscillator ``x'' = -k x - c x'`` as ``u = (x, v)``, ``p = (k, c)``.

    >>> problem = oscillator(n_steps=10)
    >>> solve(problem, problem.parameters).shape
    (11, 2)
    """
    def f(u, p):   # np.stack, not np.array: traced arrays go through it too
        return np.stack([u[1], -p[0] * u[0] - p[1] * u[1]])

    def f_u(u, p):
        return np.array([[0.0, 1.0], [-p[0], -p[1]]])

    def f_p(u, p):
        return np.array([[0.0, 0.0], [-u[0], -u[1]]])

    return ODEProblem("damped oscillator", f, f_u, f_p, np.array([1.0, 0.0]),
                      np.array([0.2, -0.1]), _step_size(n_steps, T), n_steps,
                      np.array([2.0, 0.3]))


def lotka_volterra(n_steps: int = 500, T: float = 5.0) -> ODEProblem:
    """Predator and prey: ``x' = a x - b x y``, ``y' = -c y + d x y``,
    ``p = (a, b, c, d)``."""
    def f(u, p):
        x, y = u[0], u[1]
        return np.stack([p[0] * x - p[1] * x * y, -p[2] * y + p[3] * x * y])

    def f_u(u, p):
        x, y = u
        return np.array([[p[0] - p[1] * y, -p[1] * x], [p[3] * y, -p[2] + p[3] * x]])

    def f_p(u, p):
        x, y = u
        return np.array([[x, -x * y, 0.0, 0.0], [0.0, 0.0, -y, x * y]])

    return ODEProblem("Lotka-Volterra", f, f_u, f_p, np.array([1.0, 1.0]),
                      np.array([2.0, 0.5]), _step_size(n_steps, T), n_steps,
                      np.array([1.5, 1.0, 3.0, 1.0]))


def diffusion(n_grid: int = 31, n_steps: int = 400, D: float = 0.25,
              ratio: float = 0.25) -> ODEProblem:
    """1-D reaction-diffusion ``u_t = D u_xx + (p0 + p1 sin(pi x)) u`` on (0, 1),
    ``u = 0`` at both ends, ``u0 = sin(pi x)``: the PDE study's equation on a
    line.  The grid has ``n_grid`` interior points; ``h = ratio dx^2 / D``
    (RK4 is stable for ratio <= 0.69: h times the largest rate must stay
    below 2.78).

    >>> problem = diffusion(n_grid=7, n_steps=3)
    >>> problem.u0.shape, problem.h        # dx = 1/8: h = 0.25 * (1/64) / 0.25
    ((7,), 0.015625)
    """
    _positive("n_grid", n_grid, integer=True)
    _positive("n_steps", n_steps, integer=True)
    _positive("D", D)
    if _positive("ratio", ratio) > 0.69:  # past it the steps grow without bound: NaN gradients
        raise ValueError(f"ratio = {ratio!r} makes RK4 unstable on this grid (h times the "
                         f"fastest decay rate, 4 ratio, must stay below 2.78): use ratio <= 0.69")
    dx = 1.0 / (n_grid + 1)
    x = np.linspace(dx, 1 - dx, n_grid)
    L = (np.diag(np.full(n_grid, -2.0)) + np.diag(np.ones(n_grid - 1), 1)
         + np.diag(np.ones(n_grid - 1), -1)) * (D / dx**2)
    shape = np.sin(np.pi * x)

    def f(u, p):
        return L @ u + (p[0] + p[1] * shape) * u

    def f_u(u, p):
        return L + np.diag(p[0] + p[1] * shape)

    def f_p(u, p):
        return np.stack([u, shape * u], axis=1)

    h = ratio * dx**2 / D
    return ODEProblem("diffusion", f, f_u, f_p, np.sin(np.pi * x), 0.5 * np.sin(np.pi * x),
                      h, n_steps, np.array([0.5, 1.0]), grid=x)
