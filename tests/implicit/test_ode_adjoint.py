"""ODE gradients: the reverse sweep through RK4 steps against central differences,
the continuous adjoint (VJPs of the traced f, a running cost) against it and
against a closed form, the order at which the two meet, checkpoints against
stored states, and the instability of re-integrating diffusion backwards."""

from dataclasses import replace

import numpy as np
import pytest

from minirad import vjp
from minirad.draw.adjoints import plot_adjoint_convergence, plot_reintegration
from minirad.implicit import ode_adjoint as ode

PROBLEMS = {
    "oscillator": lambda: ode.oscillator(n_steps=40),
    "lotka-volterra": lambda: ode.lotka_volterra(n_steps=40),   # running and terminal cost
    "diffusion": lambda: ode.diffusion(n_grid=9, n_steps=30),
}


def central_differences(problem, p, eps=1e-6):
    return np.array([(ode.loss(problem, p + eps * e) - ode.loss(problem, p - eps * e))
                     / (2 * eps) for e in np.eye(len(p))])


# u' = -k u from u0, p = (k,), with the running cost g = (u - e^-t)^2 / 2 + k^2 / 10
# (it depends on u, t and p) and the terminal cost u(T)^2 / 2. With u = u0 e^-kt:
#   G(k) = u0^2 e^-2kT / 2 + A(k) + k^2 T / 10,
#   A(k) = [u0^2 (1 - e^-2kT) / (2k) - 2 u0 (1 - e^-(k+1)T) / (k+1) + (1 - e^-2T) / 2] / 2.
U0, T = 1.5, 2.0


def decay(n_steps):
    return ode.ODEProblem(
        "decay", lambda u, p: -p[0] * u, np.array([U0]), T / n_steps, n_steps, np.array([0.7]),
        terminal=lambda u: 0.5 * (u * u).sum(),
        running=lambda u, p, t: 0.5 * ((u - np.exp(-t)) ** 2).sum() + 0.1 * p[0] * p[0])


def decay_cost(k):
    a = 0.5 * (U0**2 * (1 - np.exp(-2 * k * T)) / (2 * k)
               - 2 * U0 * (1 - np.exp(-(k + 1) * T)) / (k + 1) + (1 - np.exp(-2 * T)) / 2)
    return U0**2 * np.exp(-2 * k * T) / 2 + a + 0.1 * k * k * T


def decay_gradient(k):
    """dG/dk, differentiated by hand term by term."""
    e2, e1 = np.exp(-2 * k * T), np.exp(-(k + 1) * T)
    da = 0.5 * (U0**2 * (2 * T * e2 * 2 * k - 2 * (1 - e2)) / (4 * k * k)
                - 2 * U0 * (T * e1 * (k + 1) - (1 - e1)) / (k + 1) ** 2)
    return -T * U0**2 * e2 + da + 0.2 * k * T


def test_the_hand_derivation_of_the_decay_problem():
    # the closed-form gradient against central differences of the closed-form cost
    for k in (0.3, 0.7, 2.0):
        by_differences = (decay_cost(k + 1e-6) - decay_cost(k - 1e-6)) / 2e-6
        assert decay_gradient(k) == pytest.approx(by_differences, rel=1e-8)


def test_the_discrete_program_solves_the_decay_problem():
    problem = decay(200)
    assert ode.loss(problem, problem.parameters) == pytest.approx(decay_cost(0.7), rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["discrete", "stored", "checkpoints", "reintegrate"])
def test_every_gradient_of_the_decay_problem_meets_the_closed_form(method):
    errors = []
    for n_steps in (25, 50):
        problem = decay(n_steps)
        got = (ode.discrete_gradient(problem, problem.parameters) if method == "discrete" else
               ode.continuous_gradient(problem, problem.parameters, method))
        errors.append(abs(got.gradient[0] - decay_gradient(0.7)) / abs(decay_gradient(0.7)))
    assert errors[1] < 1e-6
    assert errors[1] < errors[0] / 8    # fourth order: about 16 times smaller at h / 2


@pytest.mark.parametrize("name", PROBLEMS)
def test_discrete_gradient_matches_central_differences(name):
    problem = PROBLEMS[name]()
    p = problem.parameters
    got = ode.discrete_gradient(problem, p).gradient
    np.testing.assert_allclose(got, central_differences(problem, p), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", PROBLEMS)
def test_hand_written_sweep_is_the_vector_lcg_reverse_sweep(name):
    problem = replace(PROBLEMS[name](), n_steps=15)
    traced = ode.traced_gradient(problem, problem.parameters).gradient
    by_hand = ode.discrete_gradient(problem, problem.parameters).gradient
    np.testing.assert_allclose(traced, by_hand, rtol=1e-11, atol=1e-14)


def test_discrete_gradient_on_a_linear_problem_by_hand():
    # u' = -k u, one RK4 step: u1 = u0 * R(-k h), R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24
    problem = ode.ODEProblem("decay", lambda u, p: -p[0] * u, np.array([1.0]), 0.1, 1,
                             np.array([2.0]), terminal=ode.squared_distance([0.0]))
    z = -0.2
    R, dR = 1 + z + z**2 / 2 + z**3 / 6 + z**4 / 24, 1 + z + z**2 / 2 + z**3 / 6
    # G = R^2 / 2, dG/dk = R * dR * dz/dk = R * dR * (-h)
    assert ode.discrete_gradient(problem, problem.parameters).gradient[0] == pytest.approx(
        R * dR * -0.1, rel=1e-14)


def test_the_vector_jacobian_product_is_the_transposed_jacobian():
    # the oscillator's Jacobians by hand: f_u = [[0, 1], [-k, -c]], f_p = [[0, 0], [-x, -v]]
    problem = ode.oscillator()
    u, (k, c), lam = np.array([0.4, -1.3]), problem.parameters, np.array([0.25, 2.0])
    graph = ode.linearize(problem, u, problem.parameters, 0.0)
    du, dp = vjp(graph, [lam])
    np.testing.assert_allclose(du, np.array([[0.0, 1.0], [-k, -c]]).T @ lam, rtol=1e-15)
    np.testing.assert_allclose(dp, np.array([[0.0, 0.0], [-u[0], -u[1]]]).T @ lam, rtol=1e-15)


def test_a_neural_network_right_hand_side():
    """The neural-ODE case: f is a small network whose weights are p; nobody
    writes its Jacobian, the tracer reads it off the program."""
    def f(u, p):
        W1, b1, W2 = p[:8].reshape(4, 2), p[8:12], p[12:20].reshape(2, 4)
        return W2 @ np.tanh(W1 @ u + b1)

    p = np.random.default_rng(0).standard_normal(20) * 0.5
    problem = ode.ODEProblem("network", f, np.array([1.0, -0.5]), 0.05, 20, p,
                             terminal=ode.squared_distance([0.3, 0.3]),
                             running=lambda u, p, t: 0.5 * (u * u).sum() * t)
    discrete = ode.discrete_gradient(problem, p).gradient
    np.testing.assert_allclose(discrete, central_differences(problem, p), rtol=1e-6,
                               atol=1e-9)
    continuous = ode.continuous_gradient(problem, p).gradient
    assert np.linalg.norm(continuous - discrete) < 1e-5 * np.linalg.norm(discrete)


# fourth order, measured: the least-squares slope of log gap against log h over h, h/2, h/4
# (measured 4.00, 4.06, 4.10; the gallery's adjoint_convergence.png goes on to h/8).
# Lotka-Volterra's gap has a bump (a local slope of 5) between h = 0.25 and 0.17, so its h
# starts below.
ORDERS = {
    "oscillator": lambda: ode.oscillator(n_steps=20),          # h from 0.5 to 0.125
    "lotka-volterra": lambda: ode.lotka_volterra(n_steps=32),  # h from 0.156 to 0.039
    "decay": lambda: decay(8),                                 # h from 0.25 to 0.0625
}


@pytest.mark.slow
@pytest.mark.parametrize("name", ORDERS)
def test_continuous_and_discrete_adjoints_meet_at_rk4s_order(name):
    run = ode.convergence(ORDERS[name](), refinements=(1, 2, 4))
    assert np.all(np.diff(run.gaps) < 0)
    assert run.gaps[-1] < 1e-4
    assert run.order == pytest.approx(4.0, abs=0.3)


@pytest.mark.parametrize("name", PROBLEMS)
def test_checkpoints_give_the_stored_numbers_with_less_memory(name):
    problem = PROBLEMS[name]()
    stored = ode.continuous_gradient(problem, problem.parameters, "stored")
    for K in (1, 7, problem.n_steps):
        kept = ode.continuous_gradient(problem, problem.parameters, "checkpoints",
                                       checkpoint_every=K)
        assert np.array_equal(kept.gradient, stored.gradient)
        assert np.array_equal(kept.states, stored.states)
        checkpoints = set(range(0, problem.n_steps + 1, K)) | {problem.n_steps}
        assert kept.stored_states == len(checkpoints) + K - 1
        # every state that is not a checkpoint is recomputed once, segment by segment
        assert kept.recomputed_steps == problem.n_steps + 1 - len(checkpoints)
    assert stored.stored_states == problem.n_steps + 1


@pytest.mark.slow
def test_reintegration_is_fine_for_an_oscillator_and_unstable_for_diffusion():
    osc = ode.oscillator(n_steps=60)
    exact = ode.discrete_gradient(osc, osc.parameters)
    back = ode.continuous_gradient(osc, osc.parameters, "reintegrate")
    assert back.stored_states == 1
    np.testing.assert_allclose(back.gradient, exact.gradient, rtol=1e-4)
    # within RK4's own error at h = 1/6 (about 2e-4 here); diffusion below is off by 1e61
    assert np.max(np.abs(back.states - exact.states)) < 1e-3

    # h times the fastest rate is 2.4 (stable going forward), so each RK4 step back
    # multiplies that mode by R(2.4) = 1 + 2.4 + 2.4^2/2 + 2.4^3/6 + 2.4^4/24, about 10
    heat = ode.diffusion(n_grid=15, n_steps=80, ratio=0.6)
    exact = ode.discrete_gradient(heat, heat.parameters)
    stored = ode.continuous_gradient(heat, heat.parameters, "stored")
    np.testing.assert_allclose(stored.gradient, exact.gradient, rtol=1e-8)
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
    with pytest.raises(ValueError, match="states_from must be one of"):
        ode.continuous_gradient(problem, problem.parameters, "guessed")
    with pytest.raises(ValueError, match=r"parameters of shape \(2,\), got \(3,\)"):
        ode.loss(problem, np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        ode.discrete_gradient(problem, np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="checkpoint_every must lie in 1..10"):
        ode.continuous_gradient(problem, problem.parameters, "checkpoints", checkpoint_every=11)
    with pytest.raises(ValueError, match="needs a cost"):
        replace(problem, terminal=None)
    with pytest.raises(ValueError, match="n_steps must be a positive integer"):
        replace(problem, n_steps=0)
    with pytest.raises(ValueError, match="step h must be a positive number"):
        replace(problem, h=float("nan"))
    with pytest.raises(ValueError, match="u0 must be a 1-D array of finite numbers"):
        replace(problem, u0=np.array(1.0))
    wrong_shape = replace(problem, f=lambda u, p: u[:1])
    with pytest.raises(ValueError, match=r"f\(u0, p\) has shape \(1,\)"):
        ode.discrete_gradient(wrong_shape, problem.parameters)
    vector_cost = replace(problem, terminal=lambda u: u * u)
    with pytest.raises(ValueError, match=r"the cost must be a number, but terminal\(u0\) has "
                                         r"shape \(2,\)"):
        ode.continuous_gradient(vector_cost, problem.parameters)
    with pytest.raises(ValueError, match="at least two different positive integers"):
        ode.convergence(problem, refinements=(2, 2))
    with pytest.raises(ValueError, match="at least one ODEProblem"):
        plot_adjoint_convergence([])


@pytest.mark.slow
def test_reintegration_picture_reports_the_overflow():
    fig = plot_reintegration([ode.oscillator(n_steps=30),
                              ode.diffusion(n_grid=9, n_steps=80, ratio=0.6)])
    left, right = fig.axes
    notes = [t.get_text() for t in left.texts]
    assert any(note.startswith("diffusion: error passes 1e+40") for note in notes)
    labels = [t.get_text() for t in right.texts]
    assert sum("kept" in label for label in labels) == 6
    assert "> 1e+40" in labels[-1] or "non-finite" in labels[-1]


def test_convergence_picture_labels_each_measured_slope():
    problems = [ode.oscillator(n_steps=16), decay(8)]
    fig = plot_adjoint_convergence(problems, refinements=(1, 2))
    lines = fig.axes[0].get_lines()
    slopes = [ode.convergence(p, refinements=(1, 2)).order for p in problems]
    assert [line.get_label() for line in lines] == [
        f"damped oscillator: slope {slopes[0]:.2f}", f"decay: slope {slopes[1]:.2f}",
        "slope 4 (guide)"]
    np.testing.assert_allclose(lines[1].get_xdata(), [0.25, 0.125])


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
    for method in (ode.integrate, ode.discrete_gradient, ode.continuous_gradient):
        with pytest.raises(ValueError, match="overflowed at step 1 of 1"):
            method(problem, problem.parameters)
    monkeypatch.setattr(minirad._arguments, "memory_available", lambda: 2**30)
    big = ode.oscillator(n_steps=10**9)  # (10**9 + 1) states of 2 floats: 14.9 GiB
    with pytest.raises(ValueError, match="1,000,000,001 states of the solve would need 14.9 GiB"):
        ode.integrate(big, big.parameters)
