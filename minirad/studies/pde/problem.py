"""Reaction-diffusion control (RAD paper Sec. 5 and Appendix B): the problem, its exact
gradient by the adjoint recurrence, and the randomized estimator of eq. 8.

The neutron flux ``phi(x, y, t)`` on the unit square obeys
``dphi/dt = D lap(phi) + C(x, t; theta) phi`` with ``phi = 0`` on the boundary,
``D = 1/4`` and ``phi_0 = sin(pi x) sin(pi y)``.  On a grid of spacing ``1/32``
(``31 x 31 = 961`` unknowns) the explicit FTCS step is

    phi_{n+1} = A_n phi_n,   A_n = I + r L + dt diag(C_n),   r = D dt / dx^2 = 1/16,

with ``L`` the 5-point Laplacian (zero outside the interior) and ``C_n`` the
7-term Fourier series of the paper at ``t_n = n dt``.  ``A_n`` is symmetric, so
the adjoint step is the same stencil applied to the adjoint.  The loss is the
mean squared error per grid point and per step,
``L = (1/N) sum_{n=1..N} (1/d) |phi_n - target(t_n)|^2``,
``target = phi_0 + 1/4 sin(pi t) sin(2 pi x) sin(pi y)``.

The gradient is a chain reversed by :func:`minirad.checkpoint.schedules.reverse_chain`:
the reverse sweep needs, for step ``n``, the state ``phi_n`` twice, in the
loss's seed ``2 (phi_n - target_n) / (N d)`` and in the edge
``d phi_{n+1} / d C_n = dt diag(phi_n)``.  Everything else (``C_n``, the
target) is recomputed from ``theta`` and ``t``.  The RAD estimator (eq. 8)
keeps instead ``k`` entries of each ``phi_n``, drawn uniformly with
replacement and weighted ``d / k``: the same sample serves both uses, and
as the two uses of one ``phi_n`` never meet in one term of the gradient's
path sum, the estimate stays unbiased.  The adjoint through ``A_n`` stays
exact.  Memory per step: ``d`` floats for reverse mode, ``k`` floats and
``k`` two-byte indices for RAD.

Differences from the authors' released code (PrincetonLIPS/
RandomizedAutomaticDifferentiation, ``diffusionsimsimple.py``), which
this module follows for the grid, ``dt``, the 40,961 steps and
``theta_0 = 4.932``: the released loss is ``dt`` times the sum over steps of
the mean over all 33 x 33 points of ``(phi_{n+1} - target(t_n))^2``, about
``10 * 961 / 1089`` times ours, with its target one step behind; and its
sampler (``variant="released"`` here) keeps ``int(f * 1089)`` distinct points
of the whole grid, boundary included, without the ``d / k`` weight.

>>> p = Reactor.quick(n_steps=64)
>>> theta = initial_theta(rng=0)
>>> loss, grad = exact_gradient(p, theta)
>>> bool(abs(loss - simulate(p, theta)) < 1e-13 * loss), grad.shape
(True, (7,))
>>> est = rad_gradient(p, theta, fraction=0.1, rng=0)
>>> est.retained_bytes, exact_retained_bytes(p)     # per gradient, all steps
(62080, 492032)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...checkpoint.schedules import Chain, StoreAll, reverse_chain
from ...rng import as_generator

__all__ = [
    "ADAM_BETAS", "Reactor", "RadEstimate", "adam", "adam_step", "chain", "check_theta",
    "exact_gradient", "exact_retained_bytes", "index_dtype", "initial_state", "initial_theta",
    "rad_gradient", "sample_count", "sampler", "simulate", "source_profile", "step", "target",
]

#: theta_0 of the authors' code: the decay rate of the fundamental mode, so the flux starts
#: nearly steady
THETA0 = 4.932
VARIANTS = ("eq8", "released")


@dataclass(frozen=True)
class Reactor:
    """The discretised problem.  Defaults are the paper's: 40,961 steps of 1/4096."""

    cells: int = 32          # grid spacing 1 / cells
    dt: float = 1.0 / 4096
    n_steps: int = 40961     # the released code's count: t_n = n dt, n = 0 .. 40960
    diffusion: float = 0.25

    def __post_init__(self):
        for name in ("cells", "n_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"Reactor.{name} must be a positive integer, not {value!r}")
        if self.cells < 3:
            raise ValueError(f"Reactor.cells must be at least 3 (an interior), not {self.cells}")
        for name in ("dt", "diffusion"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"Reactor.{name} must be a positive finite number, not "
                                 f"{value!r}")
        if 4 * self.ratio > 1:
            raise ValueError(f"FTCS is unstable: 4 D dt / dx^2 = {4 * self.ratio:.3g} > 1; "
                             f"use a smaller dt (at most {self.dx ** 2 / (4 * self.diffusion)})")

    @classmethod
    def quick(cls, n_steps: int = 4096, **kwargs) -> Reactor:
        """The paper's grid over a shorter horizon (4096 steps: t up to 1)."""
        return cls(n_steps=n_steps, **kwargs)

    @property
    def dx(self) -> float:
        return 1.0 / self.cells

    @property
    def ratio(self) -> float:
        """r = D dt / dx^2 (1/16 by default)."""
        return self.diffusion * self.dt / self.dx ** 2

    @property
    def side(self) -> int:
        """Interior points per side (31)."""
        return self.cells - 1

    @property
    def size(self) -> int:
        """Unknowns d (961)."""
        return self.side ** 2

    @property
    def x(self) -> np.ndarray:
        """Interior coordinates (the same along x and y)."""
        return np.arange(1, self.cells) * self.dx

    @property
    def basis(self) -> np.ndarray:
        """(3, side): the x-profiles 1, sin(2 pi x), cos(2 pi x) that C is made of."""
        x = self.x
        return np.stack([np.ones_like(x), np.sin(2 * np.pi * x), np.cos(2 * np.pi * x)])


def initial_theta(rng=0) -> np.ndarray:
    """theta_0 = 4.932, the six others uniform on (-0.1, 0.1).

    >>> initial_theta(rng=0).round(3).tolist()
    [4.932, -0.046, -0.092, -0.097, 0.063, 0.083, 0.021]
    """
    theta = as_generator(rng).uniform(-0.1, 0.1, size=7)
    theta[0] = THETA0
    return theta


def check_theta(theta) -> np.ndarray:
    """theta as a float array whose last axis has the 7 coefficients, or a clear error."""
    theta = np.asarray(theta, dtype=float)
    if theta.shape[-1:] != (7,):
        raise ValueError(f"theta must have 7 entries (last axis), got shape {theta.shape}")
    if not np.all(np.isfinite(theta)):
        raise ValueError("theta has non-finite entries")
    return theta


def time_factors(t: float) -> np.ndarray:
    """[1, sin(pi t), cos(pi t)]: C's dependence on time."""
    return np.array([1.0, math.sin(math.pi * t), math.cos(math.pi * t)])


def coefficient_matrix(theta) -> np.ndarray:
    """theta as (..., 3, 3) with C(x, t) = basis(x) . (Theta @ time_factors(t)):
    rows are the x-profiles 1, sin 2 pi x, cos 2 pi x; columns 1, sin pi t, cos pi t."""
    theta = check_theta(theta)
    out = np.zeros(theta.shape[:-1] + (3, 3))
    out[..., 0, :] = theta[..., 0:3]
    out[..., 1, 1:] = theta[..., 3:5]
    out[..., 2, 1:] = theta[..., 5:7]
    return out


def source_profile(p: Reactor, theta, t: float) -> np.ndarray:
    """C(x, t; theta) on the interior x (C does not depend on y): shape (..., side).

    >>> p = Reactor()
    >>> float(source_profile(p, [1, 0, 2, 0, 0, 0, 0], 0.0)[0])   # theta0 + theta2 cos(0)
    3.0
    """
    return (coefficient_matrix(theta) @ time_factors(t)) @ p.basis


def initial_state(p: Reactor) -> np.ndarray:
    """phi_0 = sin(pi x) sin(pi y) on the interior, shape (side, side), axes (x, y)."""
    s = np.sin(np.pi * p.x)
    return np.outer(s, s)


def target(p: Reactor, t: float) -> np.ndarray:
    """phi_0 + 1/4 sin(pi t) sin(2 pi x) sin(pi y)."""
    bump = np.outer(np.sin(2 * np.pi * p.x), np.sin(np.pi * p.x))
    return initial_state(p) + 0.25 * math.sin(math.pi * t) * bump


def stencil(p: Reactor, u: np.ndarray, profile: np.ndarray) -> np.ndarray:
    """A u = u + r lap(u) + dt C u for an interior array u (..., side, side) and C's
    x-profile (..., side).  A is symmetric: this is also the adjoint step."""
    out = (1 - 4 * p.ratio + p.dt * profile)[..., :, None] * u
    neighbours = np.zeros_like(u)
    neighbours[..., 1:, :] += u[..., :-1, :]
    neighbours[..., :-1, :] += u[..., 1:, :]
    neighbours[..., :, 1:] += u[..., :, :-1]
    neighbours[..., :, :-1] += u[..., :, 1:]
    return out + p.ratio * neighbours


def step(p: Reactor, theta, n: int, phi: np.ndarray) -> np.ndarray:
    """phi_{n+1} from phi_n."""
    return stencil(p, phi, source_profile(p, theta, n * p.dt))


def simulate(p: Reactor, theta) -> float:
    """The loss at theta (a plain forward loop).

    >>> round(simulate(Reactor.quick(), initial_theta(rng=0)), 6)
    0.009418
    """
    theta = check_theta(theta)
    phi, total = initial_state(p), 0.0
    for n in range(p.n_steps):
        phi = step(p, theta, n, phi)
        total += float(np.sum((phi - target(p, (n + 1) * p.dt)) ** 2))
    return total / (p.n_steps * p.size)


# --------------------------------------------------------------- sampling
def sample_count(p: Reactor, fraction: float, variant: str = "eq8") -> int:
    """k: ceil(f d) draws for eq. 8 (at least 1); int(f (cells+1)^2) grid points (at least
    1) for the released code's sampler.

    >>> p = Reactor()
    >>> [sample_count(p, f) for f in (1, 0.1, 0.01, 0.002, 0.001)]
    [961, 97, 10, 2, 1]
    >>> sample_count(p, 0.01, "released")
    10
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, not {variant!r}")
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.floating)) \
            or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be a number in (0, 1], not {fraction!r}")
    if variant == "eq8":
        return max(1, math.ceil(fraction * p.size - 1e-9))
    return max(1, int(fraction * (p.cells + 1) ** 2))


def index_dtype(p: Reactor):
    """The smallest unsigned integer type that numbers the grid points."""
    return np.uint16 if (p.cells + 1) ** 2 <= 2 ** 16 else np.uint32


def sampler(p: Reactor, fraction: float, rng, variant: str = "eq8"):
    """Draw the samples of all steps ``n = 0 .. N`` at once (a stored schedule, so every
    checkpointing schedule sees the same draws): ``(indices, weight)``.

    ``indices`` (N+1, k) are flat interior indices; for ``"released"``, points drawn
    on the boundary are marked with index ``d`` (they hold phi = 0 and drop out).
    ``weight`` is d / k for eq. 8, 1 for the released code.
    """
    k, rng = sample_count(p, fraction, variant), as_generator(rng)
    rows = p.n_steps + 1
    if variant == "eq8":
        return rng.integers(0, p.size, size=(rows, k), dtype=index_dtype(p)), p.size / k
    # without replacement among all (cells+1)^2 grid points: the first k of a permutation
    grid = (p.cells + 1) ** 2
    picks = np.argsort(rng.random((rows, grid)), axis=1)[:, :k]
    i, j = np.divmod(picks, p.cells + 1)
    inside = (i >= 1) & (i <= p.side) & (j >= 1) & (j <= p.side)
    flat = np.where(inside, (i - 1) * p.side + (j - 1), p.size)
    return flat.astype(index_dtype(p)), 1.0


# ------------------------------------------------------------------ chains
def chain(p: Reactor, theta, samples=None) -> Chain:
    """The simulation as a :class:`~minirad.checkpoint.schedules.Chain` whose parameter cotangent is
    dL/dtheta.  ``samples`` (from :func:`sampler`) makes each step's residual the sampled
    entries of phi_n instead of phi_n (the eq. 8 estimator)."""
    theta = check_theta(theta)
    scale = 2.0 / (p.n_steps * p.size)
    d_c = p.basis  # dC/dtheta, up to the time factors
    # what every step recomputes from theta and t, prepared once (the same numbers as
    # source_profile and target give)
    profile_of_time = coefficient_matrix(theta).T @ d_c  # C(x, t) = time_factors(t) @ this
    phi0 = initial_state(p)
    bump = target(p, 0.5) - phi0  # 1/4 sin(2 pi x) sin(pi y)

    def step_n(n, phi):
        return stencil(p, phi, time_factors(n * p.dt) @ profile_of_time)

    def target_at(n):
        return phi0 + math.sin(math.pi * n * p.dt) * bump

    if samples is None:
        def vjp(n, phi, lam):
            lam_prev = step_n(n, lam)  # A_n is symmetric
            w = p.dt * np.sum(phi * lam, axis=1)  # dt diag(phi_n), summed over y
            return lam_prev, _theta_bar(d_c @ w, n * p.dt)

        def seed(n, phi):
            return None if n == 0 else scale * (phi - target_at(n))

        return Chain(step=step_n, vjp=vjp, seed=seed)

    indices, weight = samples
    if indices.shape[0] != p.n_steps + 1:
        raise ValueError(f"samples hold {indices.shape[0]} steps' draws; this reactor needs "
                         f"{p.n_steps + 1}")

    def residual(n, phi):
        idx = indices[n]
        padded = np.append(phi.ravel(), 0.0)  # index d: a boundary point (released sampler)
        return idx, padded[idx]

    def vjp_sampled(n, kept, lam):
        idx, values = kept
        lam_prev = step_n(n, lam)
        lam_at = np.append(lam.ravel(), 0.0)[idx]
        w = np.bincount(idx, weights=weight * p.dt * values * lam_at, minlength=p.size + 1)
        w = w[:p.size].reshape(p.side, p.side).sum(axis=1)
        return lam_prev, _theta_bar(d_c @ w, n * p.dt)

    def seed_sampled(n, kept):
        if n == 0:
            return None
        idx, values = kept
        residuals = values - np.append(target_at(n).ravel(), 0.0)[idx]
        g = np.bincount(idx, weights=weight * scale * residuals, minlength=p.size + 1)
        return g[:p.size].reshape(p.side, p.side)

    return Chain(step=step_n, vjp=vjp_sampled, seed=seed_sampled, residual=residual)


def _theta_bar(s: np.ndarray, t: float) -> np.ndarray:
    """dL/dtheta of one step from s = (sum w, sum w sin 2pi x, sum w cos 2pi x)."""
    f = time_factors(t)
    return np.array([s[0], s[0] * f[1], s[0] * f[2], s[1] * f[1], s[1] * f[2],
                     s[2] * f[1], s[2] * f[2]])


def exact_gradient(p: Reactor, theta, schedule=None, details: bool = False):
    """(loss, dL/dtheta) by the adjoint recurrence under a checkpointing schedule
    (default: store every phi_n).  With ``details=True`` also the
    :class:`~minirad.checkpoint.schedules.ChainGradient` (counts, peak memory)."""
    c, squares = chain(p, theta), []

    def seed(n, phi):  # each state's seed is taken once: total the loss there
        if n > 0:
            _add_exactly(squares, float(np.sum((phi - target(p, n * p.dt)) ** 2)))
        return c.seed(n, phi)

    result = reverse_chain(Chain(step=c.step, vjp=c.vjp, seed=seed), initial_state(p), p.n_steps,
                      StoreAll() if schedule is None else schedule)
    loss = math.fsum(squares) / (p.n_steps * p.size)
    return (loss, result.param_bar, result) if details else (loss, result.param_bar)


def _add_exactly(partials: list, x: float) -> None:
    """Add ``x`` to a sum kept as a few non-overlapping floats (Shewchuk's algorithm, the
    one math.fsum runs): ``math.fsum(partials)`` is then the correctly rounded sum of
    every term added, as if all of them had been kept, in a handful of floats instead
    of one per step (40,961 floats are 1.3 MB: more than a binomial schedule holds)."""
    i = 0
    for y in partials:
        if abs(x) < abs(y):
            x, y = y, x
        high = x + y
        low = y - (high - x)
        if low:
            partials[i] = low
            i += 1
        x = high
    partials[i:] = [x]


@dataclass(frozen=True)
class RadEstimate:
    """One RAD gradient estimate and what it cost.  Both byte figures are counts of the
    arrays kept, not measurements: see :func:`rad_gradient` for what a measurement adds."""

    gradient: np.ndarray
    k: int
    retained_bytes: int     # counted: sampled values and their indices, all steps
    forward_steps: int
    peak_bytes: int         # counted: arrays held at once by the schedule (checkpoints, samples)


def rad_gradient(p: Reactor, theta, fraction: float, rng=None, variant: str = "eq8",
                 schedule=None) -> RadEstimate:
    """The eq. 8 estimate of dL/dtheta keeping a ``fraction`` of each phi_n
    (``variant="released"``: the authors' released sampler, biased, see the module
    docstring).  Any checkpointing schedule; its checkpoints hold whole states.

    This is the reference, one residual object per step in the schedule's list: measured
    with tracemalloc it holds about 420 bytes a step more than it counts (the arrays'
    and the tuple's headers, the schedule's bookkeeping), 5x the count at fraction 0.01;
    and it draws every step's samples up front, so under checkpoints it also holds all
    N+1 rows of indices, which ``peak_bytes`` does not count.  The study's engine
    (:mod:`minirad.studies.pde.engine`) keeps what it counts.
    """
    samples = sampler(p, fraction, rng, variant)
    result = reverse_chain(chain(p, theta, samples), initial_state(p), p.n_steps,
                      StoreAll() if schedule is None else schedule)
    k = samples[0].shape[1]
    retained = p.n_steps * k * (8 + samples[0].itemsize)
    return RadEstimate(result.param_bar, k, retained, result.forward_steps, result.peak_bytes)


def exact_retained_bytes(p: Reactor) -> int:
    """What reverse mode keeps: phi_n (d floats) for each of the N steps."""
    return p.n_steps * p.size * 8


# ------------------------------------------------------------------ Adam
#: Adam's decay rates of its two moments (Kingma and Ba's defaults)
ADAM_BETAS = (0.9, 0.999)


def adam_step(m, v, t: int, lr: float = 1e-2, betas=ADAM_BETAS, eps: float = 1e-8):
    """The step Adam's ``t``-th iteration subtracts from theta, given the moments ``m`` and
    ``v`` after it: ``lr m_hat / (sqrt(v_hat) + eps)``, the moments corrected for their
    zero start.

    >>> round(float(adam_step(0.1, 0.001, 1)), 9)    # the first step is lr, whatever the gradient
    0.01
    """
    m_hat = m / (1 - betas[0] ** t)
    v_hat = v / (1 - betas[1] ** t)
    return lr * m_hat / (np.sqrt(v_hat) + eps)


def adam(grad_fn, theta0, iterations: int, lr: float = 1e-2, betas=ADAM_BETAS,
         eps: float = 1e-8, resume: dict | None = None, on_iteration=None):
    """Adam (Kingma and Ba) on ``grad_fn(theta, i) -> (loss, gradient)``; returns
    (theta, losses).  The loss recorded at iteration i is that of the parameters the
    gradient was taken at.  ``theta`` may hold a batch of independent problems
    (rows), each with its own moments: Adam works entry by entry.

    A long run can stop and go on: ``on_iteration(state)`` receives, after every
    iteration, a dict with the iterations done, theta, both moments and the losses so
    far; passing such a dict as ``resume`` continues from it and takes exactly the steps
    an uninterrupted run would (if ``grad_fn`` draws random numbers, restore its
    generator too).

    >>> theta, losses = adam(lambda th, i: (float(th @ th), 2 * th), np.array([1.0, -2.0]), 300,
    ...                      lr=0.1)
    >>> bool(losses[-1] < 1e-3 * losses[0])
    True
    >>> saved = []
    >>> _ = adam(lambda th, i: (float(th @ th), 2 * th), np.array([1.0, -2.0]), 120, lr=0.1,
    ...          on_iteration=lambda state: saved.append(state) if state["done"] == 120 else None)
    >>> again, more = adam(lambda th, i: (float(th @ th), 2 * th), None, 300, lr=0.1,
    ...                    resume=saved[0])
    >>> bool(np.array_equal(again, theta) and np.array_equal(more, losses))
    True
    """
    if resume is None:
        theta = np.array(theta0, dtype=float)
        m, v, losses, start = np.zeros_like(theta), np.zeros_like(theta), [], 0
    else:
        theta, m, v = (np.array(resume[key], dtype=float) for key in ("theta", "m", "v"))
        losses, start = [np.array(x, dtype=float) for x in resume["losses"]], resume["done"]
        if len(losses) != start or not theta.shape == m.shape == v.shape:
            raise ValueError(f"a resumed Adam state needs {start} losses and theta, m, v "
                             f"of one shape; got {len(losses)} losses and shapes "
                             f"{theta.shape}, {m.shape}, {v.shape}")
        if start > iterations:
            raise ValueError(f"the saved state has done {start} iterations, more than the "
                             f"{iterations} asked for")
    for i in range(start, iterations):
        loss, g = grad_fn(theta, i)
        losses.append(np.array(loss, dtype=float))  # a batch of problems gives an array
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        theta = theta - adam_step(m, v, i + 1, lr, betas, eps)
        if on_iteration is not None:
            on_iteration({"done": i + 1, "theta": theta, "m": m, "v": v, "losses": list(losses)})
    return theta, np.array(losses)
