"""ODE gradients: the reverse sweep through RK4 steps against central differences,
the continuous adjoint against it (converging as the step shrinks), checkpoints
against stored states, and the instability of re-integrating diffusion backwards."""

import numpy as np
import pytest

from minirad.draw.adjoints import plot_reintegration
from minirad.implicit import ode_adjoint as ode

PROBLEMS = {
    "oscillator": lambda: ode.oscillator(n_steps=200),
    "lotka-volterra": lambda: ode.lotka_volterra(n_steps=250),
    "diffusion": lambda: ode.diffusion(n_grid=15, n_steps=120),
}


def central_differences(problem, p, eps=1e-6):
    return np.array([(ode.loss(problem, p + eps * e) - ode.loss(problem, p - eps * e))
                     / (2 * eps) for e in np.eye(len(p))])


@pytest.mark.parametrize("name", PROBLEMS)
def test_discrete_gradient_matches_central_differences(name):
    problem = PROBLEMS[name]()
    p = problem.parameters
    got = ode.discrete_gradient(problem, p).gradient
    np.testing.assert_allclose(got, central_differences(problem, p), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", PROBLEMS)
def test_hand_written_sweep_is_the_vector_lcg_reverse_sweep(name):
    base = PROBLEMS[name]()
    problem = ode.ODEProblem(base.name, base.f, base.f_u, base.f_p, base.u0, base.target,
                             base.h, 30, base.parameters)
    traced = ode.traced_gradient(problem, problem.parameters).gradient
    by_hand = ode.discrete_gradient(problem, problem.parameters).gradient
    np.testing.assert_allclose(traced, by_hand, rtol=1e-11, atol=1e-14)


def test_discrete_gradient_on_a_linear_problem_by_hand():
    # u' = -k u, one RK4 step: u1 = u0 * R(-k h), R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24
    problem = ode.ODEProblem("decay", lambda u, p: -p[0] * u, lambda u, p: -p[0] * np.eye(1),
                             lambda u, p: -u[:, None], np.array([1.0]), np.array([0.0]),
                             0.1, 1, np.array([2.0]))
    z = -0.2
    R, dR = 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24, 1 + z + z**2 / 2 + z**3 / 6
    # G = R^2 / 2, dG/dk = R * dR * dz/dk = R * dR * (-h)
    assert ode.discrete_gradient(problem, problem.parameters).gradient[0] == pytest.approx(
        R * dR * -0.1, rel=1e-14)


@pytest.mark.parametrize("name", PROBLEMS)
def test_continuous_adjoint_with_stored_states_converges_to_the_discrete_gradient(name):
    errors = []
    for refine in (1, 2):
        base = PROBLEMS[name]()
        problem = ode.ODEProblem(base.name, base.f, base.f_u, base.f_p, base.u0, base.target,
                                 base.h / refine, base.n_steps * refine, base.parameters)
        exact = ode.discrete_gradient(problem, problem.parameters).gradient
        got = ode.continuous_gradient(problem, problem.parameters).gradient
        errors.append(np.linalg.norm(got - exact) / np.linalg.norm(exact))
    assert errors[0] < 1e-5
    # both are fourth-order accurate: halving h shrinks the gap by about 16
    assert errors[1] < errors[0] / 4 or errors[1] < 1e-12


@pytest.mark.parametrize("name", PROBLEMS)
def test_checkpoints_give_the_stored_numbers_with_less_memory(name):
    problem = PROBLEMS[name]()
    stored = ode.continuous_gradient(problem, problem.parameters, "stored")
    for K in (1, 7, problem.n_steps):
        kept = ode.continuous_gradient(problem, problem.parameters, "checkpoints",
                                       checkpoint_every=K)
        assert np.array_equal(kept.gradient, stored.gradient)
        checkpoints = set(range(0, problem.n_steps + 1, K)) | {problem.n_steps}
        assert kept.stored_states == len(checkpoints) + K - 1
        # every state that is not a checkpoint is recomputed once, segment by segment
        assert kept.recomputed_steps == problem.n_steps + 1 - len(checkpoints)
    assert stored.stored_states == problem.n_steps + 1


def test_reintegration_is_fine_for_an_oscillator_and_unstable_for_diffusion():
    osc = ode.oscillator(n_steps=200)
    exact = ode.discrete_gradient(osc, osc.parameters)
    back = ode.continuous_gradient(osc, osc.parameters, "reintegrate")
    assert back.stored_states == 1
    np.testing.assert_allclose(back.gradient, exact.gradient, rtol=1e-5)
    assert np.max(np.abs(back.states - exact.states)) < 1e-6

    heat = ode.diffusion(n_grid=31, n_steps=400)
    exact = ode.discrete_gradient(heat, heat.parameters)
    stored = ode.continuous_gradient(heat, heat.parameters, "stored")
    np.testing.assert_allclose(stored.gradient, exact.gradient, rtol=1e-9)
    back = ode.continuous_gradient(heat, heat.parameters, "reintegrate")
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.linalg.norm(back.gradient - exact.gradient) / np.linalg.norm(exact.gradient)
    assert not error < 1e3   # huge or non-finite
    # the reconstructed state departs from the forward one by ever more as t runs back
    with np.errstate(invalid="ignore", over="ignore"):
        drift = np.abs(back.states - exact.states).max(axis=1)
    assert drift[heat.n_steps // 2] > 1e3 * max(drift[heat.n_steps - 10], 1e-300)


def test_bad_input():
    problem = ode.oscillator(n_steps=10)
    with pytest.raises(ValueError, match="states must be one of"):
        ode.continuous_gradient(problem, problem.parameters, "guessed")
    with pytest.raises(ValueError, match=r"parameters of shape \(2,\), got \(3,\)"):
        ode.loss(problem, np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        ode.discrete_gradient(problem, np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="checkpoint_every must lie in 1..10"):
        ode.continuous_gradient(problem, problem.parameters, "checkpoints", checkpoint_every=11)


def test_reintegration_picture_reports_the_overflow():
    fig = plot_reintegration([ode.oscillator(n_steps=100), ode.diffusion(n_steps=400)])
    left, right = fig.axes
    notes = [t.get_text() for t in left.texts]
    assert any(note.startswith("diffusion: error passes 1e+40") for note in notes)
    labels = [t.get_text() for t in right.texts]
    assert sum("kept" in label for label in labels) == 6
    assert "> 1e+40" in labels[-1] or "non-finite" in labels[-1]


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("make", [ode.oscillator, ode.lotka_volterra])
def test_steps_and_horizon_are_checked(make):
    for options, error, words in (({"n_steps": 0}, ValueError, "n_steps must be a positive"),
                                  ({"n_steps": -3}, ValueError, "n_steps must be a positive"),
                                  ({"n_steps": 2.5}, TypeError, "n_steps must be a positive"),
                                  ({"n_steps": True}, TypeError, "not a bool"),
                                  ({"T": float("nan")}, ValueError, "T must be a positive"),
                                  ({"T": float("inf")}, ValueError, "T must be a positive"),
                                  ({"T": 0.0}, ValueError, "T must be a positive"),
                                  ({"T": "10"}, TypeError, "T must be a positive")):
        with pytest.raises(error, match=words):
            make(**options)


def test_diffusion_grid_and_stability_are_checked():
    for options, words in (({"n_grid": 0}, "n_grid"), ({"D": float("nan")}, "D must be"),
                           ({"ratio": -0.1}, "ratio must be"), ({"n_steps": 0}, "n_steps")):
        with pytest.raises(ValueError, match=words):
            ode.diffusion(**options)
    # RK4's stability interval on the negative axis ends at -2.785: 4 ratio must stay below
    with pytest.raises(ValueError, match="unstable"):
        ode.diffusion(ratio=0.7)
    assert np.isfinite(ode.continuous_gradient(ode.diffusion(n_grid=15, n_steps=60, ratio=0.69),
                                               [0.5, 1.0]).gradient).all()


def test_a_solve_that_overflows_or_cannot_fit_is_refused(monkeypatch):
    import minirad._arguments

    problem = ode.oscillator(n_steps=1, T=1e300)  # one step of 1e300: RK4 overflows
    for method in (ode.solve, ode.discrete_gradient, ode.continuous_gradient):
        with pytest.raises(ValueError, match="overflowed at step 1 of 1"):
            method(problem, problem.parameters)
    monkeypatch.setattr(minirad._arguments, "memory_available", lambda: 2**30)
    big = ode.oscillator(n_steps=10**9)  # (10**9 + 1) states of 2 floats: 14.9 GiB
    with pytest.raises(ValueError, match="1,000,000,001 states of the solve would need 14.9 GiB"):
        ode.solve(big, big.parameters)
