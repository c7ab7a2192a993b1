"""The study's networks as traced programs on the LCG of arrays, the estimators as
injections on the graph, and the memory as the graph's own accounting.

Training traces each network once and replays its graph at every later minibatch
(:class:`Replayed`, :func:`minirad.replay`): the graph's values and Jacobian blocks
are made again by the library's rules, bit for bit those of a fresh trace, without
running the network's Python again.

Each network is a plain numpy program of its parameters (the data are constants
of the trace): :func:`mlp_program`, :func:`convnet_program`, :func:`irnn_program`.
Tracing it gives an LCG of arrays whose ``outer`` edges keep the input of a linear
or convolutional layer for that layer's weight gradient; the RAD estimators
replace exactly those stored inputs (:func:`inject`, the paper's scheme of
:func:`minirad.randomized.injection.sample_activations`, one seed per layer), so the
reverse sweep passes ``W^T`` and the ReLU masks exactly.

>>> from minirad.studies.nn import mlp_numpy
>>> params = mlp_numpy.init_mlp((6, 5, 3), rng=0)
>>> x = np.ones((4, 6), np.float32); y = np.array([0, 1, 2, 0])
>>> loss, grads = loss_and_grad(params, x, y)
>>> bool(np.allclose(grads[0], mlp_numpy.loss_and_grad(params, x, y)[1][0]))
True
"""

from __future__ import annotations

import inspect

import numpy as np

from ...exact.sweeps import gradient
from ...graph.memory import retained_memory
from ...randomized.injection import inject_edge
from ...rng import as_generator
from ...tracing import name, replay, trace
from ...tracing.ops import relu
from ...tracing.replay import recording
from ...tracing.rules import avg_pool2d, conv2d, softmax_cross_entropy
from ...tracing.tracer import parameter_names

__all__ = ["INJECTIONS", "Replayed", "convnet_program", "inject", "irnn_logits", "irnn_program",
           "loss_and_grad", "mlp_logits", "mlp_program", "retained_bytes", "table1_from_graph",
           "traced"]

# estimator kind -> (method, per_row) in minirad.randomized.injection's terms;
# "exact" injects nothing
INJECTIONS = {
    "different_sample": ("sample", True),
    "same_sample": ("sample", False),
    "project": ("rademacher", False),
    "different_project": ("rademacher", True),
}


def mlp_logits(params, x):
    """The MLP's output for ``[W1, b1, ..., WL, bL]``: ReLU layers, a linear last layer.
    On plain arrays this is the network itself; traced, it names each layer."""
    a = x
    last = len(params) // 2 - 1
    for i in range(last + 1):
        h = name(a @ params[2 * i] + params[2 * i + 1], f"h{i + 1}")
        a = name(relu(h), f"a{i + 1}") if i < last else h
    return a


def mlp_program(x, y):
    """``f(W1, b1, ..., WL, bL)``: :func:`mlp_logits`, then the mean softmax cross-entropy."""
    def f(*params):
        return softmax_cross_entropy(mlp_logits(params, x), y)
    return f


def convnet_program(x, y):
    """The paper's ConvNet on images ``x`` (B, C, H, W): parameters as
    :func:`minirad.studies.nn.convnet_numpy.init_convnet` makes them."""
    def f(k1, b1, k2, b2, k3, b3, k4, b4, w, b):
        a = x
        for i, (kernel, bias) in enumerate(((k1, b1), (k2, b2), (k3, b3), (k4, b4))):
            h = conv2d(a, kernel, padding=2) + bias.reshape(1, -1, 1, 1)
            a = name(relu(h), f"a{i + 1}")
            if i in (1, 3):
                a = avg_pool2d(a, 2)
        flat = a.reshape(a.shape[0], -1)
        return softmax_cross_entropy(flat @ w + b, y)
    return f


def irnn_logits(params, x):
    """Le et al.'s IRNN on sequences ``x`` (B, T, D), or on the list of its T steps
    (B, D): ``h_t = relu(x_t W_ih + b_ih + h_{t-1} W_hh + b_hh)`` from ``h_0 = 0``,
    then a linear layer on ``h_T``."""
    w_ih, b_ih, w_hh, b_hh, w, b = params
    steps = _time_steps(x) if isinstance(x, np.ndarray) else list(x)
    h = np.zeros((steps[0].shape[0], w_hh.shape[0]), steps[0].dtype)
    for t, x_t in enumerate(steps):
        h = name(relu(x_t @ w_ih + b_ih + h @ w_hh + b_hh), f"h{t + 1}")
    return h @ w + b


def _time_steps(x: np.ndarray) -> list[np.ndarray]:
    return [x[:, t, :] for t in range(x.shape[1])]


def irnn_program(x, y):
    """``f(W_ih, b_ih, W_hh, b_hh, W, b)``: :func:`irnn_logits`, then the mean
    softmax cross-entropy."""
    def f(*params):
        return softmax_cross_entropy(irnn_logits(params, x), y)
    return f


# how a program takes its minibatch as arguments of the traced function: the IRNN reads
# x one time step at a time, so its steps are the arguments (a slice taken inside the
# program would be a constant replay cannot take again)
_DATA = {irnn_program: _time_steps}


class Replayed:
    """A network's graph at each minibatch: traced at the first, replayed at the others
    (:func:`minirad.replay`), one traced graph per shape of minibatch.

    The traced function takes the minibatch and the labels as arguments it does not
    differentiate, so a replay can take new ones; the graph equals
    :func:`traced`'s bit for bit (``tests/studies/nn/test_studies_networks.py``).

    >>> from minirad.studies.nn import mlp_numpy
    >>> params = mlp_numpy.init_mlp((6, 5, 3), rng=0)
    >>> graphs = Replayed(mlp_program)
    >>> x, y = np.ones((4, 6), np.float32), np.array([0, 1, 2, 0])
    >>> g1 = graphs(params, x, y)          # traced
    >>> g2 = graphs(params, 2 * x, y)      # replayed
    >>> bool(np.array_equal(gradient(g2)[0], gradient(traced(mlp_program, params, 2 * x, y))[0]))
    True
    """

    def __init__(self, program):
        self.program = program
        # per shape of minibatch, the recording of its trace (none of the graph's values,
        # so a long run holds no graph between iterations)
        self.recordings: dict[tuple, object] = {}

    def __call__(self, params, x, y):
        pieces = _DATA.get(self.program, lambda x: [x])(x)
        y = np.asarray(y)
        arguments = [*pieces, y, *params]
        key = tuple((a.shape, a.dtype.str) for a in arguments)
        kept = self.recordings.get(key)
        if kept is not None:
            return replay(kept, *arguments)
        g = trace(self._function(x, y, len(pieces), len(params)), *arguments,
                  wrt=range(len(pieces) + 1, len(arguments)))
        self.recordings[key] = recording(g)
        return g

    def _function(self, x, y, n_pieces: int, n_params: int):
        """The program as a function of (pieces, labels, parameters), its parameters named
        as :func:`traced` names them."""
        program, stepwise = self.program, self.program in _DATA

        def f(*arguments):
            pieces, labels = arguments[:n_pieces], arguments[n_pieces]
            data = list(pieces) if stepwise else pieces[0]
            return program(data, labels)(*arguments[n_pieces + 1:])
        names = ([f"x{t}" for t in range(n_pieces)] if stepwise else ["x"]) + ["y"] + \
            parameter_names(program(x, y), n_params)
        f.__signature__ = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
        return f


def traced(program, params, x, y):
    """The LCG of arrays of ``program(x, y)`` at ``params`` (the parameters are its inputs)."""
    return trace(program(x, y), *params)


def inject(g, kind: str, fraction: float, rng=None):
    """The graph of an estimator: ``exact`` as is, otherwise every stored layer
    input (the activation on an ``outer`` edge) sampled or projected by
    :func:`minirad.randomized.injection.inject_edge`.

    Fully connected layers keep ``ceil(f d)`` entries of each example's input
    (``different_sample``), of every example's input at the same positions
    (``same_sample``), or its projection by one shared Rademacher matrix
    (``project``). Convolutions follow the paper's Figure 4: the image is sampled
    over its spatial positions, ``ceil(f H W)`` per example and channel, and a
    stride-1 convolution's edge keeps only those numbers (see
    :func:`~minirad.randomized.injection.inject_edge`).

    Every layer draws an integer seed from ``rng``, in the order of the layers, and
    injects with it; for one seed, ``inject_edge`` draws the pattern
    :func:`minirad.studies.nn.activations.sample_pattern` or
    :func:`~minirad.studies.nn.activations.signs` draws, as the numpy floors do, so on
    one seed both estimate with the same samples.

    ``different_project`` (the paper's Appendix A, its Figure 9) projects every
    example's stored input by its own Rademacher matrix (``method="rademacher",
    per_row=True``; the numpy floors have no such estimator).
    """
    if kind == "exact":
        return g
    if kind not in INJECTIONS:
        raise ValueError(f"kind must be exact or one of {', '.join(INJECTIONS)}, not {kind!r}")
    method, per_row = INJECTIONS[kind]
    gen = as_generator(rng)
    for e in [e for e, label in enumerate(g.labels) if label.kind == "outer"]:
        g = inject_edge(g, e, fraction, method, per_row, rng=int(gen.integers(2**63)))
    return g


def loss_and_grad(params, x, y, kind: str = "exact", fraction: float = 1.0, rng=None,
                  program=mlp_program, graphs: Replayed | None = None):
    """Trace (or replay, from ``graphs``), inject, reverse sweep: ``(loss, [dW1, db1,
    ...])`` like the numpy floor."""
    g = traced(program, params, x, y) if graphs is None else graphs(params, x, y)
    g = inject(g, kind, fraction, rng)
    return float(g.values[g.outputs[0]]), gradient(g)


def retained_bytes(g) -> float:
    """Bytes the graph's reverse sweep keeps (:func:`minirad.retained_memory`)."""
    return retained_memory(g).total


def _paper_networks():
    """(name, program, float32 parameters, two examples, labels) at the paper's sizes."""
    from . import convnet_numpy, mlp_numpy
    zeros = np.zeros
    rnn = [zeros((1, 100), np.float32), zeros(100, np.float32), np.eye(100, dtype=np.float32),
           zeros(100, np.float32), zeros((100, 10), np.float32), zeros(10, np.float32)]
    label = zeros(2, np.int64)
    return [
        ("convnet", convnet_program, convnet_numpy.init_convnet(in_channels=3, size=32, rng=0),
         zeros((2, 3, 32, 32), np.float32), label),
        ("mlp", mlp_program, mlp_numpy.init_mlp(rng=0), zeros((2, 784), np.float32), label),
        ("irnn", irnn_program, rnn, zeros((2, 784, 1), np.float32), label),
    ]


def table1_from_graph(fraction: float = 0.1) -> dict:
    """Per-example bytes by the traced graphs' own accounting, for the paper's three
    networks (CIFAR-sized ConvNet, 784-step IRNN): ``name -> (baseline, RAD at f)``.

    Beside :func:`minirad.studies.nn.memory.per_example_bytes` (the paper's rules) this
    shows what an implementation must keep: equal for the MLP and the IRNN; for the
    ConvNet the baseline also keeps the ReLU masks before each pool, which cannot be
    rebuilt from the pooled arrays.
    """
    out = {}
    for name_, program, params, x, y in _paper_networks():
        g = traced(program, params, x, y)
        batch = len(y)  # two examples: a batch of one lets the tracer fold some shapes
        sampled = inject(g, "different_sample", fraction, rng=0)
        out[name_] = (retained_memory(g).per_example(batch),
                      retained_memory(sampled).per_example(batch))
    return out
