"""The networks as the study trains them: training on the traced graph equals
training on the numpy floor, the IRNN's estimators on the graph are unbiased,
evaluation matches the floors, and the ConvNet's Figure 5 comparison at small size."""

import numpy as np
import pytest

from minirad.studies.nn import convnet_numpy, memory, mlp_numpy, networks
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn import study as nn
from minirad.studies.nn.noise import Setting, full_gradient, gradient_noise
from minirad.studies.nn.training import train
from minirad.tracing import trace


@pytest.mark.slow
@pytest.mark.parametrize("network, kind", [("mlp", "different_sample"), ("mlp", "project"),
                                           ("convnet", "same_sample"), ("convnet", "project")])
def test_training_on_the_graph_equals_training_on_the_floor(network, kind):
    """Same seeds, same batches, same samples: the parameters after a few Adam steps
    agree to float32 rounding (the study may train on either)."""
    gen = np.random.default_rng(0)
    x, y = gen.random((40, 784), dtype=np.float32), gen.integers(10, size=40)
    net = networks.mlp((784, 12, 10)) if network == "mlp" else networks.convnet((2, 2, 2, 2))
    histories = [train(networks.gradient_function(net, kind, 0.2, engine), net.init(1),
                       net.inputs(x), y, batch=8, iterations=4, lr=1e-2, rng=3,
                       progress=False) for engine in networks.ENGINES]
    graph, floor = histories
    np.testing.assert_allclose(graph.batch_losses, floor.batch_losses, rtol=1e-5)
    for a, b in zip(graph.params, floor.params):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["different_sample", "same_sample", "project"])
def test_irnn_estimators_on_the_graph_are_unbiased(kind):
    """Sampling or projecting at every step of the unrolled IRNN (the stored x_t for
    W_ih and h_{t-1} for W_hh, each step its own draw): 200 estimates, one z-score
    per weight entry (entries whose estimate never varies beyond rounding are
    left out: dead ReLU units). Over seeds 0..9 of each kind the mean z stayed
    within 0.09 of 0 and its sd in [0.93, 1.06]; the bounds below were never
    crossed (false-failure rate below 26% at 95% confidence by the rule of three
    over 10 runs per kind, far lower given the margins, over three times the
    observed spread)."""
    net = networks.irnn(hidden=3, pixels_per_step=392)   # 2 steps of 392 pixels
    gen = np.random.default_rng(2)
    params = [(p + 0.3 * gen.standard_normal(p.shape)).astype(np.float64)
              for p in net.init(0)]
    x = net.inputs(gen.random((3, 784))).astype(np.float64)
    y = np.array([1, 5, 7])
    _, exact = networks.gradient_function(net, "exact", 1.0)(params, x, y, 0)
    exact = np.concatenate([g.ravel() for g in exact[0::2]])
    grad_fn = networks.gradient_function(net, kind, 0.3)
    gen = np.random.default_rng(0)
    n = 200
    draws = np.array([np.concatenate([g.ravel() for g in grad_fn(params, x, y, gen)[1][0::2]])
                      for _ in range(n)])
    stderr = draws.std(axis=0, ddof=1) / np.sqrt(n)
    keep = stderr > 1e-9 * np.abs(exact).max()
    z = (draws.mean(axis=0)[keep] - exact[keep]) / stderr[keep]
    assert abs(z.mean()) < 0.3 and 0.7 < z.std() < 1.4, (z.mean(), z.std())


def test_evaluate_matches_the_floors():
    gen = np.random.default_rng(1)
    x, y = gen.random((30, 784), dtype=np.float32), gen.integers(10, size=30)
    net = networks.mlp((784, 20, 10))
    params = net.init(0)
    loss, accuracy = networks.evaluate(net, params, x, y, chunk=7)
    assert loss == pytest.approx(mlp_numpy.loss(params, x, y), rel=1e-5)
    assert accuracy == mlp_numpy.accuracy(params, x, y)
    net = networks.convnet((2, 2, 2, 2))
    params = net.init(0)
    loss, _ = networks.evaluate(net, params, x, y, chunk=11)
    assert loss == pytest.approx(convnet_numpy.loss(params, net.inputs(x), y), rel=1e-5)


def test_irnn_inputs_and_rules():
    net = networks.irnn()
    x = np.arange(2 * 784, dtype=np.float32).reshape(2, 784)
    assert np.array_equal(net.inputs(x)[1, 3], x[1, 84:112])      # row 3 of image 1
    assert net.rules == memory.irnn(steps=28, inputs=28)
    assert networks.irnn(pixels_per_step=1).inputs(x).shape == (2, 784, 1)
    assert nn.estimator_batch("reduced_batch", rules=net.rules) == memory.equal_memory_batch(
        memory.irnn(steps=28, inputs=28))


def test_bad_network_arguments():
    with pytest.raises(ValueError, match="engine must be one of"):
        networks.gradient_function(networks.mlp(), "exact", 1.0, "gpu")
    with pytest.raises(ValueError, match="no numpy floor"):
        networks.gradient_function(networks.irnn(), "exact", 1.0, "floor")
    with pytest.raises(ValueError, match="kind must be"):
        networks.gradient_function(networks.mlp(), "sampled", 0.1)
    with pytest.raises(ValueError, match="pixels_per_step"):
        networks.irnn(pixels_per_step=5)
    with pytest.raises(ValueError, match="hidden"):
        networks.init_irnn(hidden=0)
    with pytest.raises(ValueError, match="network must be"):
        nn.train_other("lstm", None, nn.StudyConfig())


@pytest.mark.slow
def test_convnet_rad_has_less_noise_than_the_equal_memory_batch_on_tied_layers():
    """Figure 5's weight-tying argument at test size: on 8x8 digits (scikit-learn), a
    ConvNet with channels (2, 4, 4, 4), different sample at f = 0.1 and batch 150
    against the exact batch of the same memory (26, from the rules). The two
    convolutions that see the whole 8x8 image (their kernels tied over 64
    positions) are less noisy under RAD: over seeds 0..4 (20 draws each) the ratio
    of MSEs was 2.35 to 5.07 (conv1) and 1.45 to 2.40 (conv2). After the first pool
    the images are 4x4 and the tying is weak: there the ratio was 0.68 to 1.18, and
    0.63 to 0.71 on the linear layer; the study measures 28x28 MNIST, where the
    pooled layers are 14x14 (docs/nn_study.md)."""
    digits = pytest.importorskip("sklearn.datasets").load_digits()
    x = (digits.images[:600] / 16).astype(np.float32).reshape(-1, 1, 8, 8)
    y = digits.target[:600]
    channels = (2, 4, 4, 4)
    params = convnet_numpy.init_convnet(channels, size=8, rng=0)
    reduced = memory.equal_memory_batch(memory.convnet(in_channels=1, size=8,
                                                       channels=channels))
    assert reduced == 26
    full = full_gradient(convnet_numpy.loss_and_grad, params, x, y, chunk=300)
    rad, small = gradient_noise(convnet_numpy.loss_and_grad, params, x, y,
                                [Setting("rad", "different_sample", 0.1, 150),
                                 Setting("exact", "exact", 1.0, reduced)],
                                draws=20, rng=0, full=full)
    ratio = small["mse"] / rad["mse"]
    assert ratio[0] > 1.5 and ratio[1] > 1.2, ratio


@pytest.mark.parametrize("network", ["mlp", "convnet", "irnn"])
def test_training_replays_the_graph_traced_at_the_first_minibatch(network, monkeypatch):
    """The study's graph engine traces once and replays at every later minibatch: each
    iteration's loss and gradient equal those of a graph traced afresh at that minibatch
    (the oracle), bit for bit, for an estimator that draws on the graph."""
    traces = []
    monkeypatch.setattr(nn_graph, "trace", lambda *a, **k: traces.append(1) or trace(*a, **k))
    gen = np.random.default_rng(4)
    net = {"mlp": lambda: networks.mlp((784, 12, 10)),
           "convnet": lambda: networks.convnet((2, 2, 2, 2)),
           "irnn": lambda: networks.irnn(hidden=5, pixels_per_step=112)}[network]()
    grad_fn = networks.gradient_function(net, "different_sample", 0.3)
    params = net.init(1)
    for step in range(3):
        x = net.inputs(gen.random((6, 784), dtype=np.float32))
        y = gen.integers(10, size=6)
        loss, grads = grad_fn(params, x, y, np.random.default_rng(step))
        fresh_loss, fresh = nn_graph.loss_and_grad(params, x, y, "different_sample", 0.3,
                                                   rng=np.random.default_rng(step),
                                                   program=net.program)
        assert loss == fresh_loss
        for a, b in zip(grads, fresh):
            np.testing.assert_array_equal(a, b)
        params = [p - 0.1 * g for p, g in zip(params, grads)]
        assert len(traces) == 1 + (step + 1)   # one by the study, one per oracle
