"""Gradients through ODE solves: differentiate the time steps, or solve the adjoint ODE.

For ``u' = f(u, p)`` from ``u(0) = u0`` and a cost with a terminal part
``phi`` and a running part ``g`` (either may be left out)::

    G(p) = phi(u(T)) + integral_0^T g(u(t), p, t) dt

there are two ways to ``dG/dp``:

* **discretise, then differentiate**: the solver is a program (here the
  classical Runge-Kutta method, RK4, with a fixed step h; the running cost
  is integrated by the same stages, as a last component of the state), and
  a reverse sweep through its time steps, stage by stage, is the exact
  gradient of *that* program (:func:`discrete_gradient`, or
  :func:`traced_gradient`, which traces the whole loop into one LCG);
* **differentiate, then discretise**: the continuous adjoint of the
  lecture on differentiable programming::

      lambda(T) = phi_u(u(T))^T,     lambda' = -f_u^T lambda - g_u^T,
      dG/dp = integral_0^T (lambda^T f_p + g_p) dt

  solved backwards in time by RK4, the integral as a component ``mu``
  beside ``lambda`` (:func:`continuous_gradient`).  ``u0`` does not depend
  on p here; if it did, ``lambda(0)^T du0/dp`` would be added.

Neither forms a Jacobian.  ``f_u^T lambda + g_u^T`` and ``lambda^T f_p + g_p``
are together one vector-Jacobian product: trace ``(u, p) -> (f(u, p),
g(u, p, t))`` at the point into an LCG of arrays (:func:`linearize`, with
:func:`minirad.trace`) and sweep it backwards from the
seeds ``(lambda, 1)`` (:func:`minirad.exact.sweeps.vjp`).  That is the
neural-ODE form: ``f`` may be any numpy program the array tracer follows, a
neural network included, and the backward solve is a sequence of its
backward passes.  The discrete adjoint pulls each stage back through the
same product.

Both approximate the same number, each to RK4's fourth order, so they
differ by O(h^4); :func:`convergence` measures the order as the slope of
the gap against h on a log-log scale.

The backward solve needs ``u(t)`` at every step, and there are three ways to
have it (``states_from=``): keep every state of the forward solve and
interpolate between them (``"stored"``: memory for all N states; midpoints by
cubic Hermite interpolation), keep every K-th and recompute the others from
the nearest one (``"checkpoints"``: identical numbers, N/K + K states or so,
each other state recomputed once), or integrate ``u' = f`` backwards from
``u(T)`` beside ``lambda`` (``"reintegrate"``: no memory at all).  The last is
the one that fails: a dissipative system such as diffusion forgets its high
frequencies going forward, so going backward amplifies them, rounding errors
included, by ``exp(+D k^2 t)``; the reconstructed state and the gradient are
garbage long before ``t = 0``.  An oscillator, which loses nothing,
reintegrates fine.

>>> problem = oscillator(n_steps=40)
>>> p = problem.parameters
>>> exact = discrete_gradient(problem, p).gradient
>>> stored = continuous_gradient(problem, p, states_from="stored").gradient
>>> bool(np.allclose(stored, exact, rtol=1e-3))      # the same gradient, O(h^4) apart
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from numbers import Integral

import numpy as np

from .._arguments import check_memory, format_number
from ..exact.sweeps import gradient, vjp
from ..graph.lcg import LCG
from ..tracing import trace

__all__ = [
    "STATES", "Convergence", "Gradient", "ODEProblem", "continuous_gradient", "convergence",
    "diffusion", "discrete_gradient", "linearize", "loss", "lotka_volterra", "oscillator",
    "integrate", "squared_distance", "traced_gradient",
]

STATES = ("stored", "checkpoints", "reintegrate")

#: the classical RK4 tableau: stage i is taken at t + NODES[i] h from
#: u + NODES[i] h k_(i-1), and the step adds h sum WEIGHTS[i] k_i
NODES = (0.0, 0.5, 0.5, 1.0)
WEIGHTS = (1 / 6, 1 / 3, 1 / 3, 1 / 6)


@dataclass(frozen=True)
class ODEProblem:
    """``u' = f(u, p)`` from ``u0`` over ``n_steps`` RK4 steps of size ``h``,
    with the cost ``G = terminal(u(T)) + integral of running(u, p, t) dt``.

    ``f(u, p)`` returns an array shaped like ``u``; ``terminal(u)`` and
    ``running(u, p, t)`` return a number; all three are numpy code that
    :func:`minirad.trace` can follow (``+ - * /``,
    ``@``, indexing, ``np.stack``, ``np.exp``, ...), because their
    derivatives are taken by tracing them.  One of the costs may be
    ``None``.  ``parameters`` is a default p.
    """

    name: str
    f: Callable
    u0: np.ndarray
    h: float
    n_steps: int
    parameters: np.ndarray
    terminal: Callable | None = None
    running: Callable | None = None
    grid: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.terminal is None and self.running is None:
            raise ValueError(f"{self.name}: an ODEProblem needs a cost: terminal(u), "
                             f"running(u, p, t) or both")
        if isinstance(self.n_steps, bool) or not isinstance(self.n_steps, Integral) or \
                self.n_steps < 1:
            raise ValueError(f"{self.name}: n_steps must be a positive integer, not "
                             f"{self.n_steps!r}")
        if not (isinstance(self.h, (int, float, np.floating)) and np.isfinite(self.h)
                and self.h > 0):
            raise ValueError(f"{self.name}: the step h must be a positive number, not "
                             f"{self.h!r}")
        u0 = np.asarray(self.u0)
        if u0.ndim != 1 or not np.issubdtype(u0.dtype, np.number) or not np.all(
                np.isfinite(u0)):
            raise ValueError(f"{self.name}: u0 must be a 1-D array of finite numbers, not "
                             f"{self.u0!r:.60}")

    @property
    def T(self) -> float:
        return self.h * self.n_steps


def squared_distance(target) -> Callable:
    """The cost ``u -> |u - target|^2 / 2``, as a terminal cost (a running
    cost takes ``(u, p, t)``: wrap it, or see :func:`lotka_volterra`).

    >>> float(squared_distance([1.0, 2.0])(np.array([0.0, 0.0])))
    2.5
    """
    target = np.array(target, dtype=np.float64)

    def cost(u):
        r = u - target
        return 0.5 * (r * r).sum()

    return cost


def _check_parameters(problem: ODEProblem, p) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.shape != problem.parameters.shape:
        raise ValueError(f"{problem.name} takes parameters of shape "
                         f"{problem.parameters.shape}, got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise ValueError("parameters must be finite")
    slope = np.shape(problem.f(problem.u0, p))
    if slope != np.shape(problem.u0):
        raise ValueError(f"{problem.name}: f(u, p) must have the shape of u, "
                         f"{np.shape(problem.u0)}, but f(u0, p) has shape {slope}")
    costs = [("terminal(u0)", problem.terminal, (problem.u0,)),
             ("running(u0, p, 0)", problem.running, (problem.u0, p, 0.0))]
    for call, cost, args in costs:
        if cost is not None and np.ndim(cost(*args)) != 0:
            raise ValueError(f"{problem.name}: the cost must be a number, but {call} has "
                             f"shape {np.shape(cost(*args))}")
    return p


# ------------------------------------------------------- the forward solve
def _rk4_step(problem: ODEProblem, u, p, t: float):
    """One RK4 step from ``u`` at time ``t``: the next state and the running
    cost's integral over the step (0.0 without one).  Also runs on traced
    arrays, which is how :func:`traced_gradient` records the solver."""
    h, slopes, costs = problem.h, [], []
    for c in NODES:
        y = u if not slopes else u + c * h * slopes[-1]
        slopes.append(problem.f(y, p))
        if problem.running is not None:
            costs.append(problem.running(y, p, t + c * h))
    step = u + h * sum(w * k for w, k in zip(WEIGHTS, slopes))
    return step, h * sum(w * q for w, q in zip(WEIGHTS, costs)) if costs else 0.0


def _forward(problem: ODEProblem, p):
    check_memory(8 * (problem.n_steps + 1) * len(problem.u0),
                 f"{problem.name}: the {format_number(problem.n_steps + 1)} states of the solve")
    u = np.empty((problem.n_steps + 1, len(problem.u0)))
    u[0], running = problem.u0, 0.0
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, with the step
        for n in range(problem.n_steps):
            u[n + 1], cost = _rk4_step(problem, u[n], p, n * problem.h)
            running += cost
    if not (np.all(np.isfinite(u)) and np.isfinite(running)):
        first = int(np.argmax(~np.isfinite(u).all(axis=1)))
        raise ValueError(f"{problem.name}: the RK4 solve overflowed at step {first} of "
                         f"{problem.n_steps} (step h = {problem.h:g}); take more, smaller steps")
    return u, running


def integrate(problem: ODEProblem, p) -> np.ndarray:
    """Every state of the forward RK4 solve, shape ``(n_steps + 1, n)``; a
    ``ValueError`` if the solve overflows (a step too large for RK4's stability)."""
    return _forward(problem, _check_parameters(problem, p))[0]


def loss(problem: ODEProblem, p) -> float:
    """``G(p)`` of the discrete program: ``terminal(u_N)`` plus the running
    cost integrated by the RK4 stages."""
    u, running = _forward(problem, _check_parameters(problem, p))
    terminal = 0.0 if problem.terminal is None else problem.terminal(u[-1])
    return float(terminal + running)


# ------------------------------------------------- one vector-Jacobian product
def linearize(problem: ODEProblem, u, p, t: float) -> LCG:
    """The LCG of arrays of ``(u, p) -> f(u, p)`` at one point, with the running
    cost ``g(u, p, t)`` as a second output when the problem has one.  Its
    first output's value is ``f(u, p)``; a reverse sweep seeded with
    ``(lambda, 1)`` gives ``lambda^T f_u + g_u`` and ``lambda^T f_p + g_p``.

    >>> problem = oscillator()
    >>> g = linearize(problem, np.array([1.0, 0.5]), problem.parameters, 0.0)
    >>> g.value(g.outputs[0])                          # (v, -k x - c v)
    array([ 0.5 , -2.15])
    >>> [a.tolist() for a in vjp(g, [np.array([0.0, 1.0])])]   # (f_u, f_p)^T (0, 1)
    [[-2.0, -0.3], [-1.0, -0.5]]
    """
    running = problem.running
    if running is None:
        return trace(problem.f, u, p)
    return trace(lambda u, p: (problem.f(u, p), running(u, p, t)), u, p)


def _pull(graph: LCG, lam: np.ndarray, weight: float):
    """``(lambda^T f_u + weight g_u, lambda^T f_p + weight g_p)``: one reverse sweep."""
    seeds = [lam] if len(graph.outputs) == 1 else [lam, np.array(float(weight))]
    return vjp(graph, seeds)


def _slope(graph: LCG) -> np.ndarray:
    return graph.value(graph.outputs[0])


def _terminal_gradient(problem: ODEProblem, u: np.ndarray) -> np.ndarray:
    if problem.terminal is None:
        return np.zeros_like(u)
    return gradient(trace(problem.terminal, u))[0]


@dataclass(frozen=True)
class Gradient:
    """``dG/dp`` by one method, what the backward pass kept (``stored_states``,
    the peak number of states in memory), the extra forward steps it re-ran
    (``recomputed_steps``), and the states it used on the way back (``states``,
    row ``n`` at time ``n h``; for ``"reintegrate"`` the reconstructed ones,
    NaN from where they stopped being finite)."""

    method: str
    gradient: np.ndarray
    stored_states: int
    recomputed_steps: int
    states: np.ndarray = field(repr=False)


# ---------------------------------------------------- discretise, then differentiate
def discrete_gradient(problem: ODEProblem, p) -> Gradient:
    """The reverse sweep through the RK4 steps, stage by stage: the exact
    gradient of the discrete program (every state stored).

    A step ``u+ = u + h sum_i b_i k_i``, ``c+ = c + h sum_i b_i q_i`` with
    ``k_i = f(y_i, p)``, ``q_i = g(y_i, p, t + c_i h)`` and
    ``y_i = u + c_i h k_(i-1)`` is a small LCG.  Its reverse sweep gives
    ``k_i`` the adjoint ``h b_i lambda`` (plus what ``y_(i+1)`` sends back)
    and ``q_i`` the adjoint ``h b_i``; the vector-Jacobian product of stage
    ``i`` (:func:`linearize`) turns them into the adjoint of ``y_i`` and a
    share of ``dG/dp``, and the adjoints of the ``y_i`` add up to that of ``u``.
    """
    p = _check_parameters(problem, p)
    h = problem.h
    u = integrate(problem, p)
    lam = _terminal_gradient(problem, u[-1])
    grad = np.zeros_like(p)
    for n in range(problem.n_steps - 1, -1, -1):
        graphs = []                      # the stages of this step, forward again
        for c in NODES:
            y = u[n] if not graphs else u[n] + c * h * _slope(graphs[-1])
            graphs.append(linearize(problem, y, p, (n + c) * h))
        slope_adjoints = [h * w * lam for w in WEIGHTS]
        back = lam.copy()
        for i in range(3, -1, -1):
            pulled, share = _pull(graphs[i], slope_adjoints[i], h * WEIGHTS[i])
            grad += share
            back += pulled
            if i:                        # y_i = u + c_i h k_(i-1)
                slope_adjoints[i - 1] = slope_adjoints[i - 1] + NODES[i] * h * pulled
        lam = back
    return Gradient("discrete", grad, problem.n_steps + 1, 0, u)


def traced_gradient(problem: ODEProblem, p) -> Gradient:
    """Discretise, then differentiate, literally: trace the RK4 loop and the cost
    into one LCG of arrays (:func:`minirad.trace`) and run its
    reverse sweep.  The same numbers as :func:`discrete_gradient`, which is
    that sweep taken one stage at a time.

    >>> problem = lotka_volterra(n_steps=20)
    >>> by_hand = discrete_gradient(problem, problem.parameters).gradient
    >>> bool(np.allclose(traced_gradient(problem, problem.parameters).gradient, by_hand,
    ...                  rtol=1e-12))
    True
    """
    p = _check_parameters(problem, p)

    def program(q):
        u, total = problem.u0, 0.0
        for n in range(problem.n_steps):
            u, cost = _rk4_step(problem, u, q, n * problem.h)
            total = total + cost
        return total + (problem.terminal(u) if problem.terminal is not None else 0.0)

    g = trace(program, p)
    return Gradient("reverse sweep on the LCG of arrays", gradient(g)[0],
                    problem.n_steps + 1, 0, integrate(problem, p))


# ---------------------------------------------------- differentiate, then discretise
def _rates(graph: LCG, lam: np.ndarray):
    """d/dt of (lambda, mu): ``-(f_u^T lambda + g_u^T)``, ``-(f_p^T lambda + g_p^T)``
    (mu runs from 0 at T down to t = 0, where it holds the integral)."""
    pulled, share = _pull(graph, lam, 1.0)
    return -pulled, -share


def _finite(*arrays) -> bool:
    return all(np.all(np.isfinite(a)) for a in arrays)


def continuous_gradient(problem: ODEProblem, p, states_from: str = "stored",
                        checkpoint_every: int | None = None) -> Gradient:
    """The continuous adjoint, solved backwards by RK4 on the forward grid,
    with ``u(t)`` from ``states_from`` (:data:`STATES`); every right-hand side is
    one reverse sweep through ``f`` (and ``g``) traced at ``u(t)``.

    ``"stored"`` and ``"checkpoints"`` take ``u`` at the grid points from
    the forward solve (midpoints by cubic Hermite interpolation from the
    end values and slopes); ``"checkpoints"`` keeps every
    ``checkpoint_every``-th state (default about sqrt(N)) and re-runs the
    forward steps of one segment at a time, giving the same numbers as
    ``"stored"``.  ``"reintegrate"`` keeps only ``u(T)`` and integrates
    ``u' = f`` backwards beside the adjoint with the same RK4 steps; once
    that state stops being finite the gradient is NaN.
    """
    if states_from not in STATES:
        raise ValueError(f"states_from must be one of {', '.join(map(repr, STATES))}, not "
                         f"{states_from!r}")
    p = _check_parameters(problem, p)
    N, h = problem.n_steps, problem.h
    forward = integrate(problem, p)
    lam = _terminal_gradient(problem, forward[N])
    mu = np.zeros_like(p)
    used = np.full_like(forward, np.nan)
    used[N] = forward[N]
    if states_from == "reintegrate":
        mu = _reintegrate(problem, p, forward[N], lam, used)
        return Gradient("continuous (reintegrate)", mu, 1, 0, used)

    recomputed, kept = 0, N + 1
    if states_from == "checkpoints":
        K = checkpoint_every if checkpoint_every is not None else max(1, round(np.sqrt(N)))
        if isinstance(K, bool) or not isinstance(K, Integral) or not 1 <= K <= N:
            raise ValueError(f"checkpoint_every must lie in 1..{N}, got {K!r}")
        checkpoints = {n: forward[n] for n in range(0, N + 1, K)}
        checkpoints[N] = forward[N]           # u(T) starts the backward solve anyway
        kept = len(checkpoints) + K - 1       # plus the states of one segment
    segment: dict[int, np.ndarray] = {}

    def state_at(n: int) -> np.ndarray:
        nonlocal recomputed, segment
        if states_from == "stored":
            return forward[n]
        if n in checkpoints:
            return checkpoints[n]
        if n not in segment:  # re-run the forward steps from the checkpoint below n
            start = n - n % K
            segment = {start: checkpoints[start]}
            for m in range(start, min(start + K, N) - 1):   # up to the next checkpoint
                segment[m + 1] = _rk4_step(problem, segment[m], p, m * h)[0]
                recomputed += 1
        return segment[n]

    late = linearize(problem, state_at(N), p, N * h)
    for n in range(N, 0, -1):
        early_state = state_at(n - 1)
        early = linearize(problem, early_state, p, (n - 1) * h)
        mid_state = ((state_at(n) + early_state) / 2
                     + h / 8 * (_slope(early) - _slope(late)))      # cubic Hermite
        mid = linearize(problem, mid_state, p, (n - 0.5) * h)
        k1 = _rates(late, lam)
        k2 = _rates(mid, lam - h / 2 * k1[0])
        k3 = _rates(mid, lam - h / 2 * k2[0])
        k4 = _rates(early, lam - h * k3[0])
        lam = lam - h * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6
        mu = mu - h * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6
        used[n - 1] = early_state
        late = early
    # mu' = -(f_p^T lambda + g_p^T) from mu(T) = 0 down to t = 0: mu(0) = the integral
    return Gradient(f"continuous ({states_from})", mu, kept, recomputed, used)


def _reintegrate(problem: ODEProblem, p, u, lam, used) -> np.ndarray:
    """RK4 for (u, lambda, mu) together, backwards in time from T; fills
    ``used`` with the reconstructed states and returns mu(0)."""
    h = problem.h
    mu = np.zeros_like(p)

    def rates(u_, lam_, t):   # d/dt of (u, lambda, mu) at one point
        graph = linearize(problem, u_, p, t)
        return (_slope(graph), *_rates(graph, lam_))

    with np.errstate(over="ignore", invalid="ignore"):   # diffusion overflows on purpose
        for n in range(problem.n_steps, 0, -1):
            t = n * h
            k1 = rates(u, lam, t)
            ks = [k1]
            for c in (0.5, 0.5, 1.0):
                y, m = u - c * h * ks[-1][0], lam - c * h * ks[-1][1]
                if not _finite(y, m):
                    return np.full_like(p, np.nan)
                ks.append(rates(y, m, t - c * h))
            step = [sum(w * k[j] for w, k in zip(WEIGHTS, ks)) for j in range(3)]
            u, lam, mu = u - h * step[0], lam - h * step[1], mu - h * step[2]
            if not _finite(u, lam):
                return np.full_like(p, np.nan)
            used[n - 1] = u
    return mu


# ------------------------------------------------------------ the gap between them
@dataclass(frozen=True)
class Convergence:
    """The relative gap ``|continuous - discrete| / |discrete|`` between the
    two gradients at several step sizes (T fixed), and ``order``, the slope
    of ``log gap`` against ``log h`` fitted by least squares (NaN when fewer
    than two gaps are positive)."""

    step_sizes: np.ndarray
    gaps: np.ndarray
    order: float


def convergence(problem: ODEProblem, refinements=(1, 2, 4, 8), states_from: str = "stored",
                p=None) -> Convergence:
    """Solve ``problem`` with ``h / r`` and ``n_steps * r`` for each ``r`` in
    ``refinements`` and measure how far the continuous adjoint
    (:func:`continuous_gradient`) lies from the discrete one.

    >>> c = convergence(oscillator(n_steps=16), refinements=(1, 2))
    >>> c.step_sizes
    array([0.625 , 0.3125])
    >>> c.gaps.round(5), round(c.order, 2)              # RK4: fourth order
    (array([0.01498, 0.00096]), 3.97)
    """
    refinements = list(refinements)
    if len(set(refinements)) < 2 or any(
            isinstance(r, bool) or not isinstance(r, Integral) or r < 1 for r in refinements):
        raise ValueError(f"refinements must be at least two different positive integers, not "
                         f"{refinements!r}")
    p = problem.parameters if p is None else p
    steps, gaps = [], []
    for r in refinements:
        finer = replace(problem, h=problem.h / r, n_steps=problem.n_steps * r)
        exact = discrete_gradient(finer, p).gradient
        got = continuous_gradient(finer, p, states_from).gradient
        steps.append(finer.h)
        gaps.append(float(np.linalg.norm(got - exact) / np.linalg.norm(exact)))
    steps, gaps = np.array(steps), np.array(gaps)
    fit = np.isfinite(gaps) & (gaps > 0)
    order = (float(np.polyfit(np.log(steps[fit]), np.log(gaps[fit]), 1)[0])
             if len(set(steps[fit])) >= 2 else float("nan"))
    return Convergence(steps, gaps, order)


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


def oscillator(n_steps: int = 100, T: float = 10.0) -> ODEProblem:
    """A damped oscillator ``x'' = -k x - c x'`` as ``u = (x, v)``, ``p = (k, c)``,
    with the terminal cost ``|u(T) - (0.2, -0.1)|^2 / 2``.

    >>> problem = oscillator(n_steps=10)
    >>> integrate(problem, problem.parameters).shape
    (11, 2)
    """
    def f(u, p):   # np.stack, not np.array: traced arrays go through it too
        return np.stack([u[1], -p[0] * u[0] - p[1] * u[1]])

    return ODEProblem("damped oscillator", f, np.array([1.0, 0.0]), _step_size(n_steps, T), n_steps,
                      np.array([2.0, 0.3]), terminal=squared_distance([0.2, -0.1]))


def lotka_volterra(n_steps: int = 100, T: float = 5.0) -> ODEProblem:
    """Predator and prey: ``x' = a x - b x y``, ``y' = -c y + d x y``,
    ``p = (a, b, c, d)``, fitted to data: the running cost
    ``|u(t) - d(t)|^2 / 2`` with ``d(t) = (1 + sin t / 2, 1 + cos t / 2)``,
    and the terminal cost ``|u(T) - (2, 0.5)|^2 / 2``.

    >>> problem = lotka_volterra(n_steps=50)
    >>> round(loss(problem, problem.parameters), 4)
    30.1862
    """
    sign = np.array([1.0, -1.0])

    def f(u, p):   # both rows at once: (x, y) * ((a, -c) + (-b, d) * (y, x))
        return u * (sign * p[[0, 2]] - sign * p[[1, 3]] * u[::-1])

    def data_misfit(u, p, t):
        r = u - np.array([1.0 + 0.5 * np.sin(t), 1.0 + 0.5 * np.cos(t)])
        return 0.5 * (r * r).sum()

    return ODEProblem("Lotka-Volterra", f, np.array([1.0, 1.0]), _step_size(n_steps, T), n_steps,
                      np.array([1.5, 1.0, 3.0, 1.0]), terminal=squared_distance([2.0, 0.5]),
                      running=data_misfit)


def diffusion(n_grid: int = 31, n_steps: int = 400, D: float = 0.25,
              ratio: float = 0.25) -> ODEProblem:
    """1-D reaction-diffusion ``u_t = D u_xx + (p0 + p1 sin(pi x)) u`` on (0, 1),
    ``u = 0`` at both ends, ``u0 = sin(pi x)``: the PDE study's equation on a
    line, with the terminal cost ``|u(T) - sin(pi x) / 2|^2 / 2``.  The grid
    has ``n_grid`` interior points; ``h = ratio dx^2 / D`` (RK4 is stable for
    ratio <= 0.69: h times the largest rate must stay below 2.78).

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

    h = ratio * dx**2 / D
    return ODEProblem("diffusion", f, np.sin(np.pi * x), h, n_steps, np.array([0.5, 1.0]),
                      terminal=squared_distance(0.5 * shape), grid=x)
