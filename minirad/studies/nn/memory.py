"""Table 1 of the RAD paper from its own rules: peak training memory of a network.

The paper (Appendix A) counts, per example of a minibatch,

* **baseline**: every input of a linear or convolutional layer, plus the logits,
  as 4-byte floats; ReLU derivatives are recomputed on the backward pass (free);
* **RAD at fraction f**: each such input sampled (or projected) down to
  ``ceil(f * d)`` floats, one bit for every ReLU unit (the mask can no longer be
  recomputed from a sampled input), the logits kept whole;

average pooling and biases have constant Jacobians and cost nothing. The total
is ``4 * parameters + batch * per_example`` bytes and 1 MB is 10**6 bytes.

A network is described by the layers whose input the backward pass keeps
(:class:`Layer`); :func:`mlp`, :func:`convnet` and :func:`irnn` build the paper's
three. For the fully connected network the rules give Appendix A's numbers:

>>> net = mlp()
>>> per_example_bytes(net, 1.0), per_example_bytes(net, 0.1)
(6776.0, 828.5)
>>> round(total_bytes(net, 0.1) / 1e6, 2)
1.8

Where the printed table disagrees with the rules, :data:`PAPER_TABLE1` keeps
the printed numbers and :func:`table1_rows` shows both (see ``docs`` in
:data:`DISCREPANCIES`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DISCREPANCIES", "FRACTIONS", "PAPER_REDUCED_BATCH", "PAPER_TABLE1", "Layer",
           "convnet", "equal_memory_batch", "irnn", "mlp", "parameter_count",
           "per_example_bytes", "table1_rows", "total_bytes"]

FLOAT_BYTES = 4  # the paper stores every kept value in 32 bits
FRACTIONS = (1.0, 0.8, 0.5, 0.3, 0.1, 0.05)

# Table 1 as printed (MB, batch 150, weights included); fraction 1.0 is the baseline
PAPER_TABLE1 = {
    "convnet": (23.08, 19.19, 12.37, 7.82, 3.28, 2.14),
    "mlp": (2.69, 2.51, 2.21, 2.00, 1.80, 1.75),
    "irnn": (47.93, 39.98, 25.85, 16.43, 7.01, 4.66),
}
# Sec. 4.3: the minibatch the paper gave "reduced batch" to match RAD's memory at f = 0.1
PAPER_REDUCED_BATCH = {"mlp": 22, "convnet": 20, "irnn": 21}

DISCREPANCIES = {
    "mlp": "Appendix A prints the RAD sum as (79+30+30+30+30+10) floats, one 30 too many; "
           "its own result 828.5 bytes is (79+30+30+30+10)*4 + 900/8, which is what the "
           "rules give. At f = 0.5 the rules give 2.2045 MB and the table prints 2.21 "
           "(the value rounded twice, 2.2045 -> 2.205 -> 2.21). The paper's reduced batch "
           "of 22 is not what its accounting gives: 150 * 828.5 / 6776 = 18.3.",
    "convnet": "The paper charges one bit for 16384 + 8192 + 8192 + 2048 = 34,816 ReLU "
               "units: those are the sizes of the *inputs* of conv2, conv3, conv4 and the "
               "linear layer, i.e. measured after pooling. The ReLUs of conv2 and conv4 sit "
               "before a pool, so their masks have 32*32*32 and 32*16*16 entries: the rule "
               "'one bit per ReLU unit' gives 65,536 bits (8,192 bytes per example instead "
               "of 4,352). Every printed RAD entry matches the 34,816-bit count exactly.",
    "irnn": "The per-example bytes match Appendix A (317,176 and 44,376), but the printed "
            "totals carry 353,600 bytes of weights = 4 * 88,400 = 4 * (784*100 + 100*100), "
            "as if the input-to-hidden matrix read the whole 784-pixel image at once. The "
            "network has 11,310 parameters (W_ih 100x1, W_hh 100x100, two biases, the "
            "100->10 output layer), so the rules give 0.31 MB less in every column.",
}


@dataclass(frozen=True)
class Layer:
    """A linear or convolutional layer as the memory rules see it.

    ``stored``: entries per example of the input its weight gradient needs;
    ``relu``: ReLU units per example applied to its output (0 if none);
    ``params``: weights plus biases; ``repeats``: how many times the layer is
    applied per example (time steps of a recurrent cell share one weight).
    """

    name: str
    stored: int
    relu: int
    params: int
    repeats: int = 1

    def __post_init__(self):
        for field in ("stored", "relu", "params", "repeats"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"layer {self.name!r}: {field} must be a non-negative "
                                 f"integer, not {value!r}")


@dataclass(frozen=True)
class Network:
    """The layers in order and the number of logits (stored unsampled)."""

    name: str
    layers: tuple[Layer, ...]
    logits: int


def mlp(sizes=(784, 300, 300, 300, 10)) -> Network:
    """The paper's fully connected MNIST network (ReLU after every hidden layer)."""
    sizes = tuple(sizes)
    if len(sizes) < 2 or any(not isinstance(s, int) or s < 1 for s in sizes):
        raise ValueError(f"sizes must be two or more positive integers, not {sizes!r}")
    layers = tuple(
        Layer(f"fc{i + 1}", stored=d_in, relu=d_out if i < len(sizes) - 2 else 0,
              params=d_in * d_out + d_out)
        for i, (d_in, d_out) in enumerate(zip(sizes[:-1], sizes[1:])))
    return Network("mlp", layers, logits=sizes[-1])


def convnet(in_channels=3, size=32, channels=(16, 32, 32, 32), kernel=5, classes=10) -> Network:
    """The paper's CIFAR-10 ConvNet: conv, conv, 2x2 avg pool, conv, conv, avg pool, linear.

    Every convolution keeps the spatial size (zero padding ``kernel // 2``) and is
    followed by a ReLU; the ReLU units are counted where the ReLU acts, before pooling.

    >>> [layer.stored for layer in convnet().layers]
    [3072, 16384, 8192, 8192, 2048]
    """
    if size % 4:
        raise ValueError(f"size must be divisible by 4 (two 2x2 pools), not {size}")
    c1, c2, c3, c4 = channels
    sides = (size, size, size // 2, size // 2)
    c_in = (in_channels, c1, c2, c3)
    layers = []
    for i, (ci, co, side) in enumerate(zip(c_in, (c1, c2, c3, c4), sides)):
        layers.append(Layer(f"conv{i + 1}", stored=ci * side * side, relu=co * side * side,
                            params=ci * co * kernel * kernel + co))
    flat = c4 * (size // 4) ** 2
    layers.append(Layer("fc", stored=flat, relu=0, params=flat * classes + classes))
    return Network("convnet", tuple(layers), logits=classes)


def irnn(steps=784, inputs=1, hidden=100, classes=10) -> Network:
    """The paper's recurrent network on sequential MNIST (Le et al.'s IRNN).

    At each of ``steps`` steps ``h_t = relu(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``;
    the backward pass keeps ``x_t`` for ``W_ih`` and ``h_{t-1}`` for ``W_hh``; a
    linear layer reads the last hidden state.
    """
    return Network("irnn", (
        Layer("ih", stored=inputs, relu=0, params=inputs * hidden + hidden, repeats=steps),
        Layer("hh", stored=hidden, relu=hidden, params=hidden * hidden + hidden, repeats=steps),
        Layer("out", stored=hidden, relu=0, params=hidden * classes + classes),
    ), logits=classes)


def _check_fraction(fraction) -> float:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
            or not 0 < fraction <= 1:
        raise ValueError(f"fraction must be a number in (0, 1], not {fraction!r}")
    return float(fraction)


def kept_entries(d: int, fraction: float) -> int:
    """``ceil(f * d)``, computed so that 0.1 * 30 is 3 and not 4 (floating point
    rounding must not add an entry).

    >>> kept_entries(784, 0.1), kept_entries(30, 0.1), kept_entries(3072, 0.8)
    (79, 3, 2458)
    """
    return math.ceil(round(_check_fraction(fraction) * d, 9))


def parameter_count(net: Network) -> int:
    """Weights and biases (a recurrent cell's weights are counted once)."""
    return sum(layer.params for layer in net.layers)


def per_example_bytes(net: Network, fraction: float = 1.0) -> float:
    """Bytes the backward pass keeps per minibatch element.

    ``fraction=1`` is the baseline (no ReLU bits: masks are recomputed); below 1
    every stored input is cut to ``ceil(f d)`` floats and each ReLU unit costs a bit.

    >>> per_example_bytes(irnn(), 1.0), per_example_bytes(irnn(), 0.1)
    (317176.0, 44376.0)
    """
    fraction = _check_fraction(fraction)
    if fraction == 1.0:
        floats = sum(layer.repeats * layer.stored for layer in net.layers) + net.logits
        return float(FLOAT_BYTES * floats)
    floats = sum(layer.repeats * kept_entries(layer.stored, fraction) for layer in net.layers)
    bits = sum(layer.repeats * layer.relu for layer in net.layers)
    return FLOAT_BYTES * (floats + net.logits) + bits / 8


def total_bytes(net: Network, fraction: float = 1.0, batch: int = 150) -> float:
    """``4 * parameters + batch * per_example_bytes``: Table 1's peak memory in bytes."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, not {batch!r}")
    return FLOAT_BYTES * parameter_count(net) + batch * per_example_bytes(net, fraction)


def equal_memory_batch(net: Network, fraction: float = 0.1, batch: int = 150) -> int:
    """The largest exact-backprop minibatch whose memory does not exceed RAD's.

    Weights are the same on both sides, so this is
    ``floor(batch * per_example(f) / per_example(1))`` (at least 1).

    >>> equal_memory_batch(mlp()), equal_memory_batch(irnn())
    (18, 20)
    """
    ratio = per_example_bytes(net, fraction) / per_example_bytes(net, 1.0)
    return max(1, math.floor(batch * ratio + 1e-9))


def table1_rows(fractions=FRACTIONS, batch: int = 150) -> list[dict]:
    """One row per network: MB from the rules beside the printed MB, per fraction.

    >>> rows = {row["network"]: row for row in table1_rows()}
    >>> rows["mlp"]["rules_mb"][0], rows["mlp"]["paper_mb"][0]
    (2.69, 2.69)
    """
    rows = []
    for net in (convnet(), mlp(), irnn()):
        paper = dict(zip(FRACTIONS, PAPER_TABLE1[net.name]))
        rows.append({
            "network": net.name,
            "parameters": parameter_count(net),
            "fractions": tuple(fractions),
            "per_example_bytes": tuple(per_example_bytes(net, f) for f in fractions),
            "rules_mb": tuple(round(total_bytes(net, f, batch) / 1e6, 2) for f in fractions),
            "paper_mb": tuple(paper.get(f) if batch == 150 else None for f in fractions),
            "equal_memory_batch": equal_memory_batch(net, 0.1, batch),
            "paper_reduced_batch": PAPER_REDUCED_BATCH[net.name] if batch == 150 else None,
        })
    return rows
