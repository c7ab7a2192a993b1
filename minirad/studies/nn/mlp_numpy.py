"""The paper's fully connected network written by hand in numpy: the floor.

``784 -> 300 -> 300 -> 300 -> 10`` with ReLU and a softmax cross-entropy loss
(mean over the batch), float32 end to end. The forward pass returns a *tape*:
exactly what the backward pass keeps, so its size can be counted and measured.

* Every layer input is kept through :func:`~minirad.studies.nn.activations.keep_input`
  (exact, sampled or projected); the logits are kept whole.
* With exact inputs the ReLU masks are recomputed from the next layer's kept
  input (``relu(h) > 0`` exactly where ``h > 0``); with reduced inputs that is
  impossible, so the masks are kept as packed bits (1 bit per unit).
* The backward pass propagates the adjoint exactly (through ``W^T`` and the
  masks); only the weight gradients ``(x P)^T delta`` are estimates.

This module is the speed floor of the benchmarks and an independent oracle for
the traced networks.

>>> params = init_mlp((4, 3, 2), rng=0)
>>> x = np.ones((5, 4), np.float32); y = np.array([0, 1, 0, 1, 1])
>>> loss, grads = loss_and_grad(params, x, y)
>>> [g.shape for g in grads]
[(4, 3), (3,), (3, 2), (2,)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...rng import as_generator
from .activations import Kept, keep_input, log_softmax, restore_input

__all__ = ["Tape", "accuracy", "backward", "forward", "init_mlp", "layer_adjoints", "loss",
           "loss_and_grad", "tape_bytes"]

PAPER_SIZES = (784, 300, 300, 300, 10)


def init_mlp(sizes=PAPER_SIZES, rng=None, dtype=np.float32) -> list[np.ndarray]:
    """``[W1, b1, W2, b2, ...]`` with ``W`` of shape (d_in, d_out).

    Entries uniform on ``±1/sqrt(d_in)`` (PyTorch's default for ``nn.Linear``,
    which the paper's released code used).
    """
    sizes = tuple(sizes)
    if len(sizes) < 2 or any(isinstance(s, bool) or not isinstance(s, (int, np.integer))
                             or s < 1 for s in sizes):
        raise ValueError(f"sizes must be two or more positive integers, not {sizes!r}")
    gen = as_generator(rng)
    params = []
    for d_in, d_out in zip(sizes[:-1], sizes[1:]):
        bound = 1.0 / np.sqrt(d_in)
        params.append(gen.uniform(-bound, bound, (d_in, d_out)).astype(dtype))
        params.append(gen.uniform(-bound, bound, d_out).astype(dtype))
    return params


def _check(params, x, y):
    if len(params) % 2 or not params:
        raise ValueError("params must be [W1, b1, W2, b2, ...]")
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim != 2 or x.shape[1] != params[0].shape[0]:
        raise ValueError(f"x must have shape (batch, {params[0].shape[0]}), got {x.shape}")
    if y.shape != (x.shape[0],) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must be {x.shape[0]} integer class labels, got shape {y.shape} "
                         f"of {y.dtype}")
    classes = params[-1].shape[0]
    if y.size and (y.min() < 0 or y.max() >= classes):
        raise ValueError(f"labels must lie in 0..{classes - 1}")
    return x, y


@dataclass
class Tape:
    """What the backward pass keeps: layer inputs, ReLU bits (when needed), logits, labels."""

    inputs: list[Kept]
    masks: list[np.ndarray] | None  # packed bits, one array per hidden layer
    mask_shapes: list[tuple[int, int]]
    logits: np.ndarray
    labels: np.ndarray


def _per_layer(fraction, n_layers: int) -> list:
    if isinstance(fraction, (list, tuple, np.ndarray)):
        if len(fraction) != n_layers:
            raise ValueError(f"give one fraction per layer ({n_layers}), not {len(fraction)}")
        return list(fraction)
    return [fraction] * n_layers


def forward(params, x, y, kind: str = "exact", fraction=1.0, rng=None,
            replace: bool = True) -> tuple[float, Tape]:
    """Mean cross-entropy of the batch and the tape for :func:`backward`.

    ``fraction`` is one number for every layer or a sequence, one per layer.
    """
    x, y = _check(params, x, y)
    gen = as_generator(rng)
    inputs, masks, shapes = [], [], []
    a = x
    n_layers = len(params) // 2
    fractions = _per_layer(fraction, n_layers)
    for i in range(n_layers):
        W, b = params[2 * i], params[2 * i + 1]
        inputs.append(keep_input(a, kind, fractions[i], rng=gen, replace=replace))
        h = a @ W + b
        if i < n_layers - 1:
            if kind != "exact":
                masks.append(np.packbits(h > 0))  # 1 bit per unit, flattened
            shapes.append(h.shape)
            a = np.maximum(h, 0)
        else:
            logits = h
    loss = -float(np.mean(log_softmax(logits)[np.arange(len(y)), y]))
    return loss, Tape(inputs, masks if kind != "exact" else None, shapes, logits, y)


def backward(params, tape: Tape) -> list[np.ndarray]:
    """Gradients ``[dW1, db1, ...]`` of the mean loss from a tape (exact adjoints)."""
    batch = len(tape.labels)
    probs = np.exp(log_softmax(tape.logits))
    probs[np.arange(batch), tape.labels] -= 1
    delta = probs / probs.dtype.type(batch)
    grads = [None] * len(params)
    for i in reversed(range(len(params) // 2)):
        kept = tape.inputs[i]
        grads[2 * i] = restore_input(kept).T @ delta
        grads[2 * i + 1] = delta.sum(axis=0)
        if i == 0:
            break
        delta = delta @ params[2 * i].T
        shape = tape.mask_shapes[i - 1]
        if tape.masks is None:
            mask = kept.values > 0  # recomputed: the kept input is relu(h)
        else:
            mask = np.unpackbits(tape.masks[i - 1], count=shape[0] * shape[1]).reshape(shape)
        delta = delta * mask
    return grads


def loss_and_grad(params, x, y, kind: str = "exact", fraction=1.0, rng=None,
                  replace: bool = True):
    """Forward then backward: ``(loss, grads)``."""
    loss, tape = forward(params, x, y, kind, fraction, rng, replace)
    return loss, backward(params, tape)


def layer_adjoints(params, x, y) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per layer, its input ``x_l`` (B, d) and the adjoint ``delta_l`` (B, out) of its
    output: the exact weight gradient is ``x_l^T delta_l``."""
    _, tape = forward(params, x, y)
    batch = len(tape.labels)
    probs = np.exp(log_softmax(tape.logits))
    probs[np.arange(batch), tape.labels] -= 1
    delta = probs / probs.dtype.type(batch)
    pairs = []
    for i in reversed(range(len(params) // 2)):
        kept = tape.inputs[i].values
        pairs.append((kept, delta))
        if i:
            delta = (delta @ params[2 * i].T) * (kept > 0)
    return pairs[::-1]


def _logits(params, x) -> np.ndarray:
    """The network's output, keeping nothing for a backward pass."""
    a = x
    for i in range(0, len(params), 2):
        a = a @ params[i] + params[i + 1]
        if i < len(params) - 2:
            a = np.maximum(a, 0)
    return a


def loss(params, x, y) -> float:
    """Mean cross-entropy without keeping anything."""
    x, y = _check(params, x, y)
    return -float(np.mean(log_softmax(_logits(params, x))[np.arange(len(y)), y]))


def accuracy(params, x, y) -> float:
    """Fraction of examples whose largest logit is the label."""
    x, y = _check(params, x, y)
    return float(np.mean(_logits(params, x).argmax(axis=1) == y))


def tape_bytes(tape: Tape) -> int:
    """Bytes of the arrays a tape holds (labels excluded: they are data, not activations).

    >>> params = init_mlp(rng=0)
    >>> x = np.zeros((150, 784), np.float32); y = np.zeros(150, np.int64)
    >>> tape_bytes(forward(params, x, y)[1]) / 150
    6776.0
    >>> tape_bytes(forward(params, x, y, "different_sample", 0.1, rng=0)[1]) / 150
    828.5
    """
    total = sum(kept.nbytes for kept in tape.inputs) + tape.logits.nbytes
    if tape.masks is not None:
        total += sum(mask.nbytes for mask in tape.masks)
    return int(total)
