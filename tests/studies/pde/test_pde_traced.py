"""The reaction-diffusion loss as a traced numpy program (minirad.studies.pde.traced):
its value is the study's simulation, its gradient by replay is the adjoint's, and an
optimisation on the replayed graph takes the engine's steps."""

import numpy as np

from minirad.studies.pde import Reactor, adam, exact_gradient, initial_theta, simulate
from minirad.studies.pde import engine as pde_engine
from minirad.studies.pde.traced import ReplayedGradient, loss


def test_the_traced_loss_is_the_simulation_and_its_replayed_gradient_the_adjoint():
    p = Reactor.quick(n_steps=64)
    theta = initial_theta(rng=0)
    assert np.isclose(loss(p, theta), simulate(p, theta), rtol=1e-12, atol=0)
    gradient = ReplayedGradient(p)
    gradient(theta)                                    # traced here
    other = theta + np.linspace(-0.2, 0.3, 7)
    value, g = gradient(other)                         # replayed at another theta
    reference_value, reference = exact_gradient(p, other)   # the chain's adjoint
    assert np.isclose(value, reference_value, rtol=1e-12, atol=0)
    np.testing.assert_allclose(g, reference, rtol=1e-10, atol=1e-12 * np.abs(reference).max())


def test_adam_on_the_replayed_graph_takes_the_engines_steps():
    p = Reactor.quick(n_steps=32)
    theta0 = initial_theta(rng=1)

    def engine(theta, i):
        out = pde_engine.run(p, [theta], ["exact"])
        return float(out.losses[0]), out.gradients[0]
    gradient = ReplayedGradient(p)
    by_engine, losses = adam(engine, theta0, 4, lr=0.05)
    by_graph, graph_losses = adam(lambda theta, i: gradient(theta), theta0, 4, lr=0.05)
    np.testing.assert_allclose(by_graph, by_engine, rtol=1e-9)
    np.testing.assert_allclose(graph_losses, losses, rtol=1e-12)
