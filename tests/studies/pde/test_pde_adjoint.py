"""The continuous adjoint of the PDE study's reactor: its right-hand side against the
study's step, its gradient converging to the study's reverse sweep at first order in
dt, checkpoints equal to stored states with the closed-form memory and recomputation,
and re-integration blowing up at the rate the fastest mode predicts."""

import re

import numpy as np
import pytest

from minirad.checkpoint.schedules import sqrt_every, uniform_forward_steps, uniform_peak_stored
from minirad.studies.pde import (
    Reactor,
    chain,
    exact_gradient,
    initial_state,
    initial_theta,
    step,
)
from minirad.studies.pde.adjoint import (
    continuous_gradient,
    discrete_partials,
    growth_per_step,
    rate,
)
from minirad.studies.pde.adjoint_plots import plot_reintegration, reintegration

THETA = initial_theta(rng=0)


def relative(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def test_rate_is_the_studys_step_and_self_adjoint():
    p = Reactor.quick(n_steps=8)
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(2, p.side, p.side))
    for n in (0, 5):
        t = n * p.dt
        assert np.allclose(u + p.dt * rate(p, THETA, u, t), step(p, THETA, n, u), rtol=0,
                           atol=1e-14)
        # J = D lap + diag(C) is symmetric: the adjoint equation uses the same operator
        assert np.vdot(rate(p, THETA, u, t), v) == pytest.approx(
            np.vdot(u, rate(p, THETA, v, t)), rel=1e-12)


def test_continuous_gradient_converges_to_the_discrete_one_at_first_order():
    # the same horizon (64 steps of 1/4096), dt halved twice: FTCS's error halves
    gaps = []
    for k in (1, 2, 4):
        p = Reactor(n_steps=64 * k, dt=1 / (4096 * k))
        gaps.append(relative(continuous_gradient(p, THETA).gradient, exact_gradient(p, THETA)[1]))
    assert gaps[0] < 2e-3
    for coarse, fine in zip(gaps, gaps[1:]):
        assert 1.9 < coarse / fine < 2.1


@pytest.mark.parametrize("every", [1, 5, None, 40])
def test_checkpoints_give_the_stored_numbers_with_the_closed_form_memory(every):
    p = Reactor.quick(n_steps=40)
    stored = continuous_gradient(p, THETA, "stored")
    kept = continuous_gradient(p, THETA, "checkpoints", checkpoint_every=every)
    assert np.array_equal(kept.gradient, stored.gradient)
    assert np.array_equal(kept.partial, stored.partial)
    assert np.array_equal(kept.states, stored.states)
    K = sqrt_every(40) if every is None else every
    assert kept.stored_states == uniform_peak_stored(40, K)
    assert kept.forward_steps == uniform_forward_steps(40, K)
    assert (stored.stored_states, stored.forward_steps) == (40, 40)


def test_discrete_partials_are_the_studys_reverse_sweep():
    p = Reactor.quick(n_steps=20)
    partial, states = discrete_partials(p, THETA)
    assert np.array_equal(partial[0], exact_gradient(p, THETA)[1])
    assert not partial[-1].any()
    phi, study = initial_state(p), chain(p, THETA)
    for n in range(p.n_steps + 1):
        assert np.array_equal(states[n], phi)
        assert np.allclose(states[n], phi if n == 0 else step(p, THETA, n - 1, states[n - 1]),
                           rtol=0, atol=1e-15)
        phi = study.step(n, phi)


def test_reintegrating_diffusion_backwards_blows_up_at_the_predicted_rate():
    p = Reactor.quick(n_steps=160)
    _, forward = discrete_partials(p, THETA)
    back = continuous_gradient(p, THETA, "reintegrate")
    assert (back.stored_states, back.forward_steps) == (1, 160)
    assert np.array_equal(back.states[-1], forward[-1])
    size = np.linalg.norm(forward.reshape(161, -1), axis=1)
    error = np.linalg.norm((back.states - forward).reshape(161, -1), axis=1) / size
    # ten steps back the state is still right to the schemes' mismatch (RK4 backwards
    # against the study's Euler forwards) ...
    assert error[150] < 1e-6
    # ... then the fastest-decaying mode takes over and grows by R(dt mu) per step
    grows = np.flatnonzero((error > 1e-2) & (error < 1e40))
    assert len(grows) > 50
    slope = -np.polyfit(grows, np.log(error[grows]), 1)[0]
    assert np.exp(slope) == pytest.approx(growth_per_step(p, THETA), rel=0.02)
    with np.errstate(over="ignore", invalid="ignore"):
        assert not relative(back.gradient, exact_gradient(p, THETA)[1]) < 1e10


def test_bad_input():
    p = Reactor.quick(n_steps=10)
    with pytest.raises(ValueError, match="states_from must be one of 'stored', 'checkpoints'"):
        continuous_gradient(p, THETA, "guessed")
    for every in (0, 11, 2.5, True):
        with pytest.raises(ValueError, match=r"checkpoint_every must be an integer in 1\.\.10"):
            continuous_gradient(p, THETA, "checkpoints", checkpoint_every=every)
    with pytest.raises(ValueError, match="7 entries"):
        continuous_gradient(p, np.zeros(3))
    with pytest.raises(ValueError, match=r"shape \(7,\)"):
        continuous_gradient(p, np.zeros((2, 7)))


def test_the_picture_says_what_it_shows():
    numbers = reintegration(Reactor.quick(n_steps=96))
    methods = numbers["methods"]
    assert methods["stored"]["error"] == methods["checkpoints"]["error"] < 2e-3
    assert methods["reintegrate"]["error"] > 1e6
    fig = plot_reintegration(numbers)
    left, right = fig.axes
    assert any("predicted: x 1.64" in line.get_label() for line in left.lines)
    labels = [line.get_label() for line in right.lines if not line.get_label().startswith("_")]
    assert re.fullmatch(r"stored: \d\.\de-04 at t = 0, 96 states kept, 96 forward steps",
                        labels[0])
    assert "1 state kept" in labels[2]
