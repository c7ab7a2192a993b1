"""The reaction-diffusion study: exact gradient against two independent oracles, the
eq. 8 estimator unbiased, the released sampler's bias, the fast engine equal to the
reference chain, checkpointing exact on the PDE, memory as counted."""

import math
import tracemalloc

import numpy as np
import pytest

from minirad.checkpoint.schedules import (
    Binomial,
    StoreAll,
    Uniform,
    binomial_forward_steps,
    sqrt_every,
)
from minirad.studies.pde import (
    Reactor,
    exact_gradient,
    exact_retained_bytes,
    initial_state,
    initial_theta,
    problem,
    rad_gradient,
    sample_count,
    simulate,
    source_profile,
    target,
)
from minirad.studies.pde import engine as pde_engine
from minirad.studies.pde.study import relative_noise


def relative(a, b):
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


# ------------------------------------------------------------- exactness
def test_exact_gradient_matches_central_differences():
    p = Reactor.quick(n_steps=150)
    theta = initial_theta(rng=3)
    loss, grad = exact_gradient(p, theta)
    h = 1e-4  # the loss is quadratic in phi and smooth in theta: h^2 error ~ 1e-8 relative
    fd = np.array([(simulate(p, theta + h * e) - simulate(p, theta - h * e)) / (2 * h)
                   for e in np.eye(7)])
    assert relative(grad, fd) < 1e-6
    assert loss == pytest.approx(simulate(p, theta), rel=1e-14)


def dense_gradient(p, theta):
    """The paper's path sum written out with dense matrices:
    sum_t g_t^T sum_{i<=t} (A_{t-1} ... A_i) dt diag(phi_{i-1}) dC_{i-1}/dtheta."""
    s, n = p.side, p.n_steps
    tri = -2 * np.eye(s) + np.eye(s, k=1) + np.eye(s, k=-1)
    lap = np.kron(tri, np.eye(s)) + np.kron(np.eye(s), tri)  # axis order (x, y), C order
    xs = np.repeat(p.x, s)  # the x of each flattened point
    A, dC, phis = [], [], [initial_state(p).ravel()]
    for i in range(n):
        t = i * p.dt
        C = np.repeat(source_profile(p, theta, t), s)
        A.append(np.eye(s * s) + p.ratio * lap + p.dt * np.diag(C))
        st, ct = math.sin(math.pi * t), math.cos(math.pi * t)
        dC.append(np.stack([np.ones_like(xs), st + 0 * xs, ct + 0 * xs,
                            st * np.sin(2 * np.pi * xs), ct * np.sin(2 * np.pi * xs),
                            st * np.cos(2 * np.pi * xs), ct * np.cos(2 * np.pi * xs)], axis=1))
        phis.append(A[-1] @ phis[-1])
    grad = np.zeros(7)
    for t in range(1, n + 1):
        g = 2 / (n * p.size) * (phis[t] - target(p, t * p.dt).ravel())
        for i in range(1, t + 1):
            prod = np.eye(s * s)
            for j in range(i, t):
                prod = A[j] @ prod
            grad += g @ prod @ (p.dt * np.diag(phis[i - 1])) @ dC[i - 1]
    return grad


def test_exact_gradient_equals_the_papers_path_sum():
    p = Reactor(cells=5, n_steps=12, dt=1 / 256)
    theta = initial_theta(rng=1)
    assert relative(exact_gradient(p, theta)[1], dense_gradient(p, theta)) < 1e-12


# ---------------------------------------------------------- fast engine
@pytest.mark.parametrize("variant", ["eq8", "released"])
def test_engine_equals_the_reference_chain(variant):
    p = Reactor.quick(n_steps=120)
    th = [initial_theta(rng=s) for s in range(4)]
    kinds = ["exact", 0.1, 0.01, 0.001] if variant == "eq8" else ["exact", 0.5, 0.1, 0.01]
    out = pde_engine.run(p, th, kinds, rng=7, variant=variant)
    rng = np.random.default_rng(7)  # the engine draws the sampled members in order
    for b, kind in enumerate(kinds):
        if kind == "exact":
            loss, ref = exact_gradient(p, th[b])
            assert out.losses[b] == pytest.approx(loss, rel=1e-13)
        else:
            ref = rad_gradient(p, th[b], kind, rng=rng, variant=variant).gradient
        assert relative(out.gradients[b], ref) < 1e-10, (b, kind)


def test_engine_refuses_bad_members():
    p = Reactor.quick(n_steps=4)
    with pytest.raises(ValueError, match="'exact' or a fraction"):
        pde_engine.run(p, [initial_theta()], ["all"])
    with pytest.raises(ValueError, match="2 kinds for 1 parameter"):
        pde_engine.run(p, [initial_theta()], ["exact", 0.1])
    with pytest.raises(ValueError, match="fraction must be a number in"):
        pde_engine.run(p, [initial_theta()], [0.0])


# ---------------------------------------------------------- unbiasedness
N_ESTIMATES = 300


@pytest.mark.parametrize("fraction", [0.1, 0.01, 0.001])
def test_eq8_is_unbiased(fraction):
    """300 estimates average to the exact gradient within standard errors on every theta
    component.  |z| < 4.5 on 7 components: for a normal mean the chance that a correct
    estimator fails is 7 x 6.8e-6 ~ 5e-5 per fraction (the seed is fixed, so the test
    is deterministic; the rate says how lucky a pass would have to be)."""
    p = Reactor.quick(n_steps=60)
    theta = initial_theta(rng=0)
    exact = exact_gradient(p, theta)[1]
    est = pde_engine.run(p, [theta] * N_ESTIMATES, [fraction] * N_ESTIMATES, rng=11).gradients
    stderr = est.std(axis=0, ddof=1) / math.sqrt(N_ESTIMATES)
    z = (est.mean(axis=0) - exact) / stderr
    assert np.all(np.abs(z) < 4.5), z
    # not vacuous: the noise is real, and larger at smaller fractions
    assert np.all(stderr > 1e-3 * np.abs(exact))


@pytest.mark.slow
def test_noise_of_one_estimate_shrinks_like_one_over_sqrt_k_and_with_the_steps():
    """The spread of one eq. 8 estimate (200 estimates per point): from k = 10 to k = 97
    it falls by sqrt(9.7) within 25%, and from 16 to 256 steps (dt fixed) it falls about
    4x, as 1/sqrt(N) predicts. Over seeds 0-19 the first ratio over sqrt(9.7) ranged over
    0.94-1.20 (sd ~0.06) and the second over 3.7-4.3 (sd ~0.17): both bounds are over
    3 sd away, a false failure below 1e-3. At 64 steps k = 1 lies 12-54% above the
    1/sqrt(k) line (heavy tails of a single draw), so it is not part of the check."""
    theta, rng = initial_theta(rng=0), np.random.default_rng(0)

    def noise(n_steps, fraction):
        p = Reactor.quick(n_steps=n_steps)
        est = pde_engine.run(p, [theta] * 200, [fraction] * 200, rng=rng).gradients
        return relative_noise(est, exact_gradient(p, theta)[1])

    assert 0.75 < noise(64, 0.01) / noise(64, 0.1) / math.sqrt(9.7) < 1.33
    by_steps = [noise(n, 0.1) for n in (16, 64, 256)]
    assert by_steps == sorted(by_steps, reverse=True)
    assert 3 < by_steps[0] / by_steps[-1] < 5.3


def test_released_sampler_is_biased_by_the_kept_share_squared():
    """The released code keeps m of 1089 grid points unweighted in both places a state is
    used, so its mean is (m / 1089)^2 times the gradient: right direction, wrong length."""
    p = Reactor.quick(n_steps=60)
    theta = initial_theta(rng=0)
    exact = exact_gradient(p, theta)[1]
    fraction = 0.2
    est = pde_engine.run(p, [theta] * N_ESTIMATES, [fraction] * N_ESTIMATES, rng=12,
                         variant="released").gradients
    stderr = est.std(axis=0, ddof=1) / math.sqrt(N_ESTIMATES)
    share = sample_count(p, fraction, "released") / (p.cells + 1) ** 2
    assert np.all(np.abs((est.mean(axis=0) - share ** 2 * exact) / stderr) < 4.5)
    assert np.all(np.abs((est.mean(axis=0) - exact) / stderr) > 20)  # far from unbiased


# ---------------------------------------------------------- checkpointing
def test_checkpointed_pde_gradient_is_bit_for_bit_and_counted():
    p = Reactor.quick(n_steps=300)
    theta = initial_theta(rng=2)
    loss, ref, full = exact_gradient(p, theta, StoreAll(), details=True)
    assert full.peak_stored == p.n_steps and full.peak_bytes == exact_retained_bytes(p)
    every = sqrt_every(p.n_steps)
    for schedule, steps in [(Uniform(every), 2 * p.n_steps - math.ceil(p.n_steps / every)),
                            (Binomial(6), binomial_forward_steps(p.n_steps, 6) + 1)]:
        got_loss, got, result = exact_gradient(p, theta, schedule, details=True)
        assert np.array_equal(got, ref) and got_loss == loss
        assert result.forward_steps == steps
    assert exact_gradient(p, theta, Uniform(every), details=True)[2].peak_stored \
        <= 2 * math.sqrt(p.n_steps)


def test_rad_with_checkpoints_is_the_same_estimate_with_less_memory():
    p = Reactor.quick(n_steps=400)
    theta = initial_theta(rng=2)
    plain = rad_gradient(p, theta, 0.01, rng=5)
    both = rad_gradient(p, theta, 0.01, rng=5, schedule=Uniform(50))
    assert np.array_equal(plain.gradient, both.gradient)
    # 8 checkpointed states of 961 floats + one segment's 50 samples, against 400 samples
    assert both.peak_bytes == 8 * p.size * 8 + 50 * plain.k * 10
    assert plain.peak_bytes == plain.retained_bytes == 400 * plain.k * 10


# ---------------------------------------------------------------- memory
def test_retained_bytes_at_one_percent_are_under_two_percent():
    p = Reactor()
    k = sample_count(p, 0.01)
    assert k == 10
    rad = p.n_steps * k * (8 + 2)  # float64 values and uint16 indices
    assert rad / exact_retained_bytes(p) <= 0.02


def test_measured_memory_follows_the_count():
    """tracemalloc's peak during a gradient: what reverse mode saves over RAD is what the
    counts say, and RAD's peak is its count plus fixed working buffers (the grid's
    constant arrays, one block of 64 diagonals, bincount scratch)."""
    p = Reactor.quick(n_steps=800)
    theta = initial_theta(rng=0)
    peaks, counted = {}, {}
    for kind in ("exact", 0.01):
        tracemalloc.start()
        out = pde_engine.run(p, [theta], [kind], rng=0)
        peaks[kind] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        counted[kind] = int(out.retained_bytes[0])
    saved, saved_counted = peaks["exact"] - peaks[0.01], counted["exact"] - counted[0.01]
    assert abs(saved - saved_counted) <= 0.1 * saved_counted
    assert counted[0.01] <= peaks[0.01] <= counted[0.01] + 300_000


def _measured(function, *args, **kwargs):
    tracemalloc.start()
    try:
        return function(*args, **kwargs), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_reference_holds_what_its_docstring_says_beyond_its_count():
    """rad_gradient's docstring: about 420 bytes a step more than it counts (the
    residual's Python objects), and under checkpoints all N+1 rows of draws besides.
    Measured as the growth from 400 to 800 steps, so fixed buffers cancel."""
    theta = initial_theta(rng=0)
    extra = {}
    for n in (400, 800):
        est, peak = _measured(rad_gradient, Reactor.quick(n_steps=n), theta, 0.01, rng=0)
        extra[n] = peak - est.peak_bytes
    assert 300 <= (extra[800] - extra[400]) / 400 <= 600
    p = Reactor.quick(n_steps=800)
    forward = _measured(simulate, p, theta)[1]
    both, peak = _measured(rad_gradient, p, theta, 0.1, rng=0, schedule=Uniform(40))
    draws = (p.n_steps + 1) * both.k * 2
    assert peak - forward >= both.peak_bytes + draws


def test_the_exact_gradient_keeps_no_list_of_the_loss_terms():
    """Under a binomial schedule the exact gradient holds a few states; its loss is summed
    in a few floats, not one per step (which grew the peak by 32 bytes a step)."""
    theta = initial_theta(rng=0)
    peaks = [_measured(exact_gradient, Reactor.quick(n_steps=n), theta, Binomial(16))[1]
             for n in (600, 1200)]
    assert peaks[1] - peaks[0] < 8_000   # with a list of floats: 16,600 more (measured)


def test_the_loss_is_summed_exactly_in_a_few_floats():
    """The sum of exact_gradient's loss against math.fsum of every term (correctly rounded),
    on terms spanning 40 orders of magnitude; and the loss against the plain forward loop."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        terms = (rng.standard_normal(500) * 10.0 ** rng.integers(-20, 20, size=500)).tolist()
        partials = []
        for x in terms:
            problem._add_exactly(partials, x)
        assert math.fsum(partials) == math.fsum(terms) and len(partials) < 60
    p = Reactor.quick(n_steps=64)
    loss = exact_gradient(p, initial_theta(rng=0))[0]
    assert abs(loss - simulate(p, initial_theta(rng=0))) <= 1e-13 * loss


# --------------------------------------------------------------- bad input
def test_bad_reactors_and_parameters_are_refused():
    with pytest.raises(ValueError, match="unstable"):
        Reactor(dt=1 / 1000)
    with pytest.raises(ValueError, match="cells must be at least 3"):
        Reactor(cells=2)
    with pytest.raises(ValueError, match="n_steps must be a positive integer"):
        Reactor(n_steps=0)
    with pytest.raises(ValueError, match="7 entries"):
        simulate(Reactor.quick(n_steps=3), [1.0, 2.0])
    with pytest.raises(ValueError, match="non-finite"):
        simulate(Reactor.quick(n_steps=3), [np.nan] * 7)
    with pytest.raises(ValueError, match="variant must be one of"):
        sample_count(Reactor(), 0.1, "paper")
    with pytest.raises(ValueError, match=r"fraction must be a number in \(0, 1\]"):
        rad_gradient(Reactor.quick(n_steps=3), initial_theta(), 1.5)
