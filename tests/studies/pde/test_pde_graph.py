"""The PDE as a vector LCG: its reverse sweep is the adjoint engine's gradient, sampled
edge labels give the eq. 8 estimate, and its memory is the engine's count."""

import numpy as np
import pytest

from minirad.exact.sweeps import gradient
from minirad.graph.memory import retained_memory
from minirad.graph.scalarize import scalarize
from minirad.studies.pde import (
    Reactor,
    exact_gradient,
    exact_retained_bytes,
    initial_theta,
    rad_gradient,
    sampler,
    simulate,
)
from minirad.studies.pde import engine as pde_engine
from minirad.studies.pde.graph import pde_graph

P = Reactor.quick(n_steps=24)
THETA = initial_theta(rng=4)


def relative(a, b):
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


def test_reverse_sweep_on_the_graph_is_the_adjoint_engine():
    g = pde_graph(P, THETA)
    assert float(g.value(g.outputs[0])) == pytest.approx(simulate(P, THETA), rel=1e-13)
    reference = gradient(g)[0]  # the vector LCG's reverse sweep
    assert relative(exact_gradient(P, THETA)[1], reference) < 1e-12
    fast = pde_engine.run(P, [THETA], ["exact"]).gradients[0]
    assert relative(fast, reference) < 1e-10


def test_sampled_edge_labels_give_the_eq8_estimate():
    """P_n on the two edges that keep phi_n (the loss row and dt diag(phi_n)): the
    graph's reverse sweep is the eq. 8 estimate with the same draws."""
    for fraction in (0.1, 0.01):
        samples = sampler(P, fraction, rng=3)
        on_graph = gradient(pde_graph(P, THETA, samples))[0]
        estimate = rad_gradient(P, THETA, fraction, rng=3).gradient
        assert relative(estimate, on_graph) < 1e-12


def test_graph_memory_is_the_counted_bytes_plus_the_last_state():
    """retained_memory(g) keeps phi_0 .. phi_N; the adjoint engine seeds phi_N as soon as it is
    computed, so it keeps one state fewer."""
    state = P.size * 8
    assert retained_memory(pde_graph(P, THETA)).total == exact_retained_bytes(P) + state
    samples = sampler(P, 0.01, rng=0)
    k = samples[0].shape[1]
    assert retained_memory(pde_graph(P, THETA, samples)).total == (P.n_steps + 1) * k * 10
    est = rad_gradient(P, THETA, 0.01, rng=0)
    assert est.retained_bytes == P.n_steps * k * 10


def test_small_graph_scalarizes_to_the_same_gradient():
    """On a tiny grid every scalar method applies: the scalar LCG's Jacobian."""
    from minirad.exact.jacobians import accumulate

    p = Reactor(cells=4, n_steps=3, dt=1 / 256)
    g = pde_graph(p, THETA)
    scalar = accumulate(scalarize(g), method="reverse").jacobian
    assert relative(scalar.ravel(), exact_gradient(p, THETA)[1]) < 1e-12


def test_long_horizons_are_refused():
    with pytest.raises(ValueError, match="too long a horizon"):
        pde_graph(Reactor(), THETA)


def test_eq8_graph_comes_from_edge_injection_with_the_sampler_draws():
    """The sampled graph is the exact graph with P_n injected (``inject_edges``) on
    dt diag(phi_n) and on phi_n's loss row, given the draws of row n of the sampler."""
    indices, _ = samples = sampler(P, 0.1, rng=5)
    g = pde_graph(P, THETA, samples)
    assert len(g.injections) == 2 * P.n_steps
    assert all(r["given_picks"] and r["k"] == indices.shape[1] and r["d"] == P.size
               for r in g.injections)
    on_diag = [r["edge"] for r in g.injections[:P.n_steps]]
    on_loss = [r["edge"] for r in g.injections[P.n_steps:]]
    assert on_diag == [[f"C{n}", f"phi{n + 1}"] for n in range(P.n_steps)]
    assert on_loss == [[f"phi{n}", "L"] for n in range(1, P.n_steps + 1)]
    # the sampled diagonal of step 3 is dt phi_3 (d/k) counts, by hand
    exact = pde_graph(P, THETA)
    n = 3
    counts = np.bincount(indices[n], minlength=P.size).reshape(P.side, P.side)
    by_hand = P.dt * exact.value(f"phi{n}") * counts * (P.size / indices.shape[1])
    np.testing.assert_allclose(g.label(f"C{n}", f"phi{n + 1}").d, by_hand, rtol=1e-14)


def test_the_released_sampler_is_not_an_injection():
    with pytest.raises(ValueError, match="released sampler"):
        pde_graph(P, THETA, sampler(P, 0.1, rng=0, variant="released"))
    indices, weight = sampler(P, 0.1, rng=0)
    with pytest.raises(ValueError, match="one row of draws per state"):
        pde_graph(P, THETA, (indices[1:], weight))
