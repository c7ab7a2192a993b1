"""Checkpointing read off a chain-shaped vector LCG: the PDE's graph, a traced RNN and a
traced deep MLP reverse under every schedule to sweeps.gradient bit for bit, with the
closed-form counts; graphs that are not chains are refused by name."""

import numpy as np
import pytest

from minirad import trace
from minirad.checkpoint.on_graph import chain_shape, checkpointed_gradient
from minirad.checkpoint.schedules import (
    Binomial,
    StoreAll,
    Uniform,
    binomial_forward_steps,
    sqrt_every,
    uniform_forward_steps,
    uniform_peak_stored,
)
from minirad.exact.sweeps import gradient as full_gradient
from minirad.studies.pde import Reactor, initial_theta
from minirad.studies.pde.graph import pde_graph
from minirad.tracing import name
from minirad.tracing.ops import relu
from minirad.tracing.rules import softmax_cross_entropy


def schedules(n):
    return [(StoreAll(), n, n),
            (Uniform(sqrt_every(n)), uniform_forward_steps(n, sqrt_every(n)),
             uniform_peak_stored(n, sqrt_every(n))),
            (Uniform(3), uniform_forward_steps(n, 3), uniform_peak_stored(n, 3)),
            (Binomial(2), binomial_forward_steps(n, 2) + 1, 3 if n > 2 else n),
            (Binomial(4), binomial_forward_steps(n, 4) + 1, 5 if n > 4 else n)]


def check_every_schedule(g, **where):
    """Bit-for-bit gradients and the closed-form counts (the reference: sweeps.gradient)."""
    reference = full_gradient(g)
    n = chain_shape(g, **where).n_steps
    for schedule, steps, peak in schedules(n):
        run = checkpointed_gradient(g, schedule, **where)
        assert len(run.gradients) == len(reference)
        for got, want in zip(run.gradients, reference):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want), schedule
        assert run.counts.forward_steps == steps, schedule
        assert run.counts.peak_stored == peak, schedule
    return n


# ------------------------------------------------------------------ the PDE
def test_pde_graph_is_a_chain_of_time_steps():
    p = Reactor.quick(n_steps=20)
    g = pde_graph(p, initial_theta(rng=1))
    shape = chain_shape(g, start="phi1")
    assert [g.names[s] for s in shape.states] == [f"phi{n}" for n in range(1, 21)]
    # theta and the source fields C_n depend on no state: side values of every step
    assert {g.names[v] for v in shape.side} == {"theta"} | {f"C{n}" for n in range(20)}
    assert check_every_schedule(g, start="phi1") == 19
    # memory: the schedule holds states of 31 x 31 floats, as many as it says
    run = checkpointed_gradient(g, Uniform(sqrt_every(19)), start="phi1")
    assert run.counts.peak_bytes == run.counts.peak_stored * p.size * 8


def test_pde_graph_from_theta_is_not_a_chain():
    """From theta every C_n is a chain vertex and theta -> C_n skips every phi_n: the only
    chain is one step, the whole simulation (phi_4, read by nothing but the loss, ends it)."""
    g = pde_graph(Reactor.quick(n_steps=4), initial_theta(rng=1))
    assert [g.names[s] for s in chain_shape(g).states] == ["theta", "phi4"]
    with pytest.raises(ValueError, match=r"edge theta -> C2 skips the state phi2"):
        chain_shape(g, states=["theta", "phi2", "phi3"])


# ------------------------------------------------------------------ an RNN
def rnn(T, collect):
    """h_{t+1} = relu(W h_t + x_t) traced from h_0, with W and the inputs X as side values;
    the loss is the sum of per-step terms |h_t|^2 / 2 (or of the last state only)."""
    rng = np.random.default_rng(7)
    H, D = 6, 4
    W = rng.normal(0.0, 0.5, (H, H))
    U = rng.normal(0.0, 0.5, (H, D))
    X = rng.normal(0.0, 1.0, (T, D))
    h0 = rng.normal(0.0, 1.0, H)

    def f(h, W, X):
        terms = []
        for t in range(T):
            h = name(relu(W @ h + U @ X[t]), f"h{t + 1}")
            terms.append(0.5 * (h * h).sum())
        return np.stack(terms).sum() if collect else terms[-1]

    return trace(f, h0, W, X)


def test_rnn_with_per_step_loss_terms():
    T = 13
    g = rnn(T, collect=True)
    states = ["h"] + [f"h{t}" for t in range(1, T + 1)]
    assert check_every_schedule(g, states=states) == T
    # the stack collecting the terms skips every h_t: detection finds no h_t after h1's
    # term, so the steps must be named (the stack is not the loss, whose edges are exempt)
    found = {g.names[s] for s in chain_shape(g).states}
    assert "h1" in found and not found & {f"h{t}" for t in range(2, T + 1)}


def test_rnn_with_a_final_loss_detects_its_steps():
    g = rnn(9, collect=False)
    shape = chain_shape(g)
    assert {f"h{t}" for t in range(1, 10)} <= {g.names[s] for s in shape.states}
    check_every_schedule(g)
    check_every_schedule(g, states=["h"] + [f"h{t}" for t in range(1, 10)])


# ---------------------------------------------------------------- a deep MLP
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_deep_mlp_layers(dtype):
    """Twelve relu layers of their own weights, a batch of 5, softmax cross-entropy; the
    data is a constant, so the chain starts at the first weight matrix."""
    rng = np.random.default_rng(3)
    widths = [8] * 13
    Ws = [rng.normal(0.0, 0.6, (a, b)).astype(dtype) for a, b in zip(widths, widths[1:])]
    x = rng.normal(0.0, 1.0, (5, 8)).astype(dtype)
    labels = rng.integers(0, 8, 5)

    def f(*Ws):
        h = x
        for layer, W in enumerate(Ws):
            h = name(relu(h @ W), f"h{layer + 1}")
        return softmax_cross_entropy(h, labels)

    g = trace(f, *Ws)
    states = ["Ws0"] + [f"h{layer}" for layer in range(1, 13)]
    assert g.names[0] == "Ws0"
    assert check_every_schedule(g, states=states) == 12
    assert check_every_schedule(g) > 12       # every vertex between layers is a state too


def test_shared_weights_used_twice_a_step_and_a_state_read_twice():
    """W enters each step twice and h_t feeds two branches: more terms meet in one vertex,
    still added in the reverse sweep's order."""
    W = np.array([[0.5, -0.2, 0.1], [0.3, 0.4, -0.6], [0.2, 0.1, 0.3]])

    def f(h, W):
        for t in range(7):
            h = name(np.tanh(W @ h) + (W @ h) * 0.3 + h * h * 0.1, f"h{t + 1}")
        return (h * h).sum()

    g = trace(f, np.array([0.3, -0.5, 0.9]), W)
    check_every_schedule(g, states=["h"] + [f"h{t}" for t in range(1, 8)])


# ----------------------------------------------------------------- refusals
def skip_graph():
    def f(h, W):
        h1 = name(np.tanh(W @ h), "h1")
        h2 = name(np.tanh(W @ h1), "h2")
        h3 = name(np.tanh(W @ h2) + h1, "h3")        # a skip connection over h2
        return (h3 * h3).sum()

    return trace(f, np.ones(2), np.eye(2))


def test_a_skip_connection_is_refused_by_name():
    g = skip_graph()
    with pytest.raises(ValueError, match=r"edge h1 -> .* skips the state h2"):
        chain_shape(g, states=["h", "h1", "h2", "h3"])
    shape = chain_shape(g)             # detection steps over h2: h1 -> h3 is one step
    assert "h2" not in [g.names[s] for s in shape.states]
    assert {"h", "h1", "h3"} <= {g.names[s] for s in shape.states}
    check_every_schedule(g)


def test_bad_input_is_named():
    g = skip_graph()
    with pytest.raises(TypeError, match="LCG"):
        chain_shape("not a graph")
    with pytest.raises(ValueError, match="begin with the start vertex h"):
        chain_shape(g, states=["h1", "h3"])
    with pytest.raises(ValueError, match="in the graph's order"):
        chain_shape(g, states=["h", "h3", "h1"])
    with pytest.raises(ValueError, match="does not depend on the start vertex h"):
        chain_shape(g, states=["h", "W", "h1"])
    with pytest.raises(ValueError, match="cannot be a state"):
        chain_shape(g, states=["h", "h1", g.names[g.outputs[0]]])
    with pytest.raises(TypeError, match="list of vertices"):
        chain_shape(g, states="h1")
    with pytest.raises(ValueError, match="unknown vertex"):
        chain_shape(g, start="nope")
    two = trace(lambda x: x * 2.0, np.ones(3))
    with pytest.raises(ValueError, match="one scalar loss"):
        chain_shape(two)
    with pytest.raises(ValueError, match="does not depend on the start vertex"):
        chain_shape(trace(lambda a, b: (a * a).sum(), np.ones(2), np.ones(2)),
                    start="b")
