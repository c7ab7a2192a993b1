"""The study's three networks, ready to train: parameters, data layout, the memory
rules, and how a gradient is computed.

A :class:`Network` bundles what the training loop needs for one architecture:

* ``program``: the network as a traced program (:mod:`minirad.studies.nn.graph`),
  traced once and replayed at every minibatch; its gradient, with an estimator
  injected on the graph, is the *reference*;
* ``floor``: the hand-written numpy network (``None`` for the IRNN), a fast path
  tested equal to the reference on the same samples
  (``tests/studies/nn/test_studies_nn_graph.py``);
* ``logits``: the forward pass on plain arrays, for evaluation;
* ``inputs``: how 784-pixel rows become the network's input (images, sequences);
* ``rules``: its :mod:`~minirad.studies.nn.memory` network, for the equal-memory batch.

:func:`gradient_function` turns a network, an estimator kind and an engine
(``"graph"`` or ``"floor"``) into the ``grad_fn`` that
:func:`minirad.studies.nn.training.train` calls.

>>> net = irnn(hidden=8)
>>> params = net.init(0)
>>> bool(np.all(params[2] == np.eye(8)))        # W_hh starts at the identity
True
>>> x = net.inputs(np.zeros((3, 784), np.float32))
>>> x.shape                                      # 28 steps of 28 pixels
(3, 28, 28)
>>> loss, grads = gradient_function(net, "different_sample", 0.1)(params, x, [0, 1, 2], 0)
>>> [g.shape for g in grads][:3]
[(28, 8), (8,), (8, 8)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...rng import as_generator
from . import convnet_numpy, memory, mlp_numpy
from . import graph as nn_graph
from .activations import log_softmax

__all__ = ["ENGINES", "Network", "convnet", "evaluate", "gradient_function", "init_irnn",
           "irnn", "mlp"]

ENGINES = ("graph", "floor")


@dataclass(frozen=True)
class Network:
    """One architecture as the study trains it (see the module docstring)."""

    name: str
    program: Callable
    init: Callable
    inputs: Callable
    logits: Callable
    rules: memory.Network
    floor: Callable | None = None


def mlp(sizes=mlp_numpy.PAPER_SIZES) -> Network:
    """The paper's MNIST MLP (784-300-300-300-10 by default)."""
    sizes = tuple(sizes)
    return Network("mlp", nn_graph.mlp_program, lambda rng: mlp_numpy.init_mlp(sizes, rng=rng),
                   lambda x: x, nn_graph.mlp_logits, memory.mlp(sizes), mlp_numpy.loss_and_grad)


def convnet(channels=(16, 32, 32, 32)) -> Network:
    """The paper's ConvNet on 1x28x28 MNIST images (it ran on CIFAR-10's 3x32x32)."""
    channels = tuple(channels)
    return Network("convnet", nn_graph.convnet_program,
                   lambda rng: convnet_numpy.init_convnet(channels, rng=rng),
                   lambda x: x.reshape(-1, 1, 28, 28), convnet_numpy.logits,
                   memory.convnet(in_channels=1, size=28, channels=channels),
                   convnet_numpy.loss_and_grad)


def init_irnn(hidden: int = 100, inputs: int = 28, classes: int = 10, rng=None,
              dtype=np.float32) -> list[np.ndarray]:
    """``[W_ih, b_ih, W_hh, b_hh, W, b]`` as the paper's Appendix A initialises them:
    ``W_hh`` the identity, ``W_ih`` and ``W`` with independent N(0, 0.001^2) entries
    (the paper writes N(0, 0.001)), the biases zero."""
    for what, value in (("hidden", hidden), ("inputs", inputs), ("classes", classes)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{what} must be a positive integer, not {value!r}")
    gen = as_generator(rng)
    return [gen.normal(0, 1e-3, (inputs, hidden)).astype(dtype), np.zeros(hidden, dtype),
            np.eye(hidden, dtype=dtype), np.zeros(hidden, dtype),
            gen.normal(0, 1e-3, (hidden, classes)).astype(dtype), np.zeros(classes, dtype)]


def irnn(hidden: int = 100, pixels_per_step: int = 28) -> Network:
    """The IRNN on sequential MNIST: rows of 28 pixels for 28 steps by default, or
    ``pixels_per_step=1`` for the paper's pixel-by-pixel 784 steps."""
    if pixels_per_step not in (1, 2, 4, 7, 14, 28, 56, 112, 196, 392, 784):
        raise ValueError(f"pixels_per_step must divide 784 (28: row by row, 1: pixel by "
                         f"pixel), not {pixels_per_step!r}")
    steps = 784 // pixels_per_step
    return Network("irnn", nn_graph.irnn_program,
                   lambda rng: init_irnn(hidden, pixels_per_step, rng=rng),
                   lambda x: x.reshape(-1, steps, pixels_per_step), nn_graph.irnn_logits,
                   memory.irnn(steps=steps, inputs=pixels_per_step, hidden=hidden))


def gradient_function(net: Network, kind: str, fraction: float, engine: str = "graph"):
    """``grad_fn(params, x, y, rng) -> (loss, grads)`` with the estimator ``kind``
    (``exact``, ``different_sample``, ``same_sample``, ``project``).

    ``engine="graph"`` traces the program at the first minibatch and replays its graph
    at the others (:class:`minirad.studies.nn.graph.Replayed`), injects the estimator
    on the graph and sweeps it in reverse; ``"floor"`` runs the hand-written numpy
    network.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "floor" and net.floor is None:
        raise ValueError(f"the {net.name} has no numpy floor; use engine='graph'")
    if kind != "exact" and kind not in nn_graph.INJECTIONS:
        raise ValueError(f"kind must be exact or one of {', '.join(nn_graph.INJECTIONS)}, "
                         f"not {kind!r}")
    fraction = 1.0 if kind == "exact" else fraction
    graphs = nn_graph.Replayed(net.program)

    def grad_fn(params, x, y, rng):
        y = np.asarray(y)
        if engine == "floor":
            return net.floor(params, x, y, kind, fraction, rng=rng)
        return nn_graph.loss_and_grad(params, x, y, kind, fraction, rng=rng,
                                      program=net.program, graphs=graphs)

    return grad_fn


def evaluate(net: Network, params, x, y, chunk: int = 250) -> tuple[float, float]:
    """Mean cross-entropy and accuracy over all of ``(x, y)`` (784-pixel rows),
    in chunks so that a ConvNet's patch matrices stay small."""
    x, y = np.asarray(x), np.asarray(y)
    total, correct = 0.0, 0
    for start in range(0, len(y), chunk):
        z = np.asarray(net.logits(params, net.inputs(x[start:start + chunk])), np.float64)
        labels = y[start:start + chunk]
        total -= log_softmax(z)[np.arange(len(labels)), labels].sum()
        correct += int((z.argmax(axis=1) == labels).sum())
    return total / len(y), correct / len(y)
