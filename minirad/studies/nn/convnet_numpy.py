"""The paper's ConvNet written by hand in numpy (im2col), for gradient-noise studies.

conv 5x5 (c1) -> ReLU -> conv (c2) -> ReLU -> 2x2 average pool -> conv (c3) -> ReLU
-> conv (c4) -> ReLU -> 2x2 average pool -> flatten -> linear 10 -> softmax
cross-entropy; every convolution has zero padding 2, so it keeps the image size.
The paper ran it on CIFAR-10 (3x32x32); here it reads MNIST (1x28x28).

As in the MLP, only the stored input of each convolution and of the linear
layer is randomized; adjoints pass exactly through the weights, the ReLU masks
and the pools. For a convolution input of shape (C, H, W):

* ``different_sample``: for every example *and channel*, ``ceil(f H W)`` spatial
  positions drawn with replacement (scaled by ``H W / k``);
* ``same_sample``: one set of positions shared by the batch and the channels
  (weight tying makes this less harmful than in the MLP, paper Figure 6).

So a convolution keeps ``C * ceil(f H W)`` floats per example, a little more
than the rules' ``ceil(f C H W)`` (1,264 against 1,255 for 16x28x28 at 0.1).

This floor keeps ReLU masks as boolean arrays (it serves gradient noise, not
memory measurement).

>>> params = init_convnet(channels=(2, 2, 2, 2), size=8, rng=0)
>>> x = np.zeros((3, 1, 8, 8), np.float32); y = np.array([0, 1, 2])
>>> [g.shape for g in loss_and_grad(params, x, y)[1]][:2]
[(2, 1, 5, 5), (2,)]
"""

from __future__ import annotations

import numpy as np

from ...rng import as_generator
from .activations import keep_input, log_softmax, restore_input

__all__ = ["conv2d", "init_convnet", "logits", "loss", "loss_and_grad"]

KERNEL, PAD = 5, 2


def init_convnet(channels=(16, 32, 32, 32), in_channels: int = 1, size: int = 28,
                 classes: int = 10, rng=None, dtype=np.float32) -> list[np.ndarray]:
    """``[K1, b1, ..., K4, b4, W, b]``: kernels (out, in, 5, 5), a (features, classes)
    matrix; uniform on ``±1/sqrt(fan_in)`` like PyTorch's defaults."""
    if size % 4 or size < 4:
        raise ValueError(f"size must be a positive multiple of 4 (two 2x2 pools), not {size}")
    if len(channels) != 4 or any(not isinstance(c, (int, np.integer)) or c < 1
                                 for c in channels):
        raise ValueError(f"channels must be four positive integers, not {channels!r}")
    gen = as_generator(rng)
    params = []
    for c_in, c_out in zip((in_channels,) + tuple(channels[:3]), channels):
        bound = 1 / np.sqrt(c_in * KERNEL * KERNEL)
        params.append(gen.uniform(-bound, bound, (c_out, c_in, KERNEL, KERNEL)).astype(dtype))
        params.append(gen.uniform(-bound, bound, c_out).astype(dtype))
    features = channels[3] * (size // 4) ** 2
    bound = 1 / np.sqrt(features)
    params.append(gen.uniform(-bound, bound, (features, classes)).astype(dtype))
    params.append(gen.uniform(-bound, bound, classes).astype(dtype))
    return params


def _im2col(x: np.ndarray) -> np.ndarray:
    """(B, C, H, W) -> (B, C*5*5, H*W): the padded 5x5 patch around every pixel.

    Each of the 25 kernel offsets copies one contiguous (H, W) block per channel.
    """
    b, c, h, w = x.shape
    padded = np.pad(x, ((0, 0), (0, 0), (PAD, PAD), (PAD, PAD)))
    cols = np.empty((b, c, KERNEL, KERNEL, h, w), x.dtype)
    for i in range(KERNEL):
        for j in range(KERNEL):
            cols[:, :, i, j] = padded[:, :, i:i + h, j:j + w]
    return cols.reshape(b, c * KERNEL * KERNEL, h * w)


def _col2im(cols: np.ndarray, shape) -> np.ndarray:
    """The transpose of :func:`_im2col`: patches added back onto the image."""
    b, c, h, w = shape
    cols = cols.reshape(b, c, KERNEL, KERNEL, h, w)
    padded = np.zeros((b, c, h + 2 * PAD, w + 2 * PAD), cols.dtype)
    for i in range(KERNEL):
        for j in range(KERNEL):
            padded[:, :, i:i + h, j:j + w] += cols[:, :, i, j]
    return padded[:, :, PAD:PAD + h, PAD:PAD + w]


def conv2d(x, kernel, bias) -> np.ndarray:
    """Cross-correlation with zero padding 2 (what deep-learning libraries call conv)."""
    b, _, h, w = x.shape
    out = np.matmul(kernel.reshape(len(kernel), -1), _im2col(x)) + bias[:, None]
    return out.reshape(b, len(kernel), h, w)


def _pool(x):
    b, c, h, w = x.shape
    return x.reshape(b, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def _unpool(d):
    return np.repeat(np.repeat(d, 2, axis=2), 2, axis=3) / d.dtype.type(4)


def _keep(a, kind, fraction, gen, replace):
    """Conv inputs are sampled over spatial positions, one row per (example, channel)."""
    rows = a.reshape(a.shape[0] * a.shape[1], -1) if a.ndim == 4 else a
    return keep_input(rows, kind, fraction, rng=gen, replace=replace), a.shape


def _restore(kept):
    stored, shape = kept
    return restore_input(stored).reshape(shape)


def _check(params, x, y):
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim != 4 or x.shape[1] != params[0].shape[1]:
        raise ValueError(f"x must have shape (batch, {params[0].shape[1]}, H, W), got {x.shape}")
    if y.shape != (len(x),) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must be {len(x)} integer class labels, got shape {y.shape}")
    return x, y


def loss_and_grad(params, x, y, kind: str = "exact", fraction: float = 1.0, rng=None,
                  replace: bool = True):
    """Mean cross-entropy and its gradient (weight gradients estimated per ``kind``)."""
    x, y = _check(params, x, y)
    gen = as_generator(rng)
    kept, masks = [], []
    a = x
    for layer in range(4):
        kept.append(_keep(a, kind, fraction, gen, replace))
        h = conv2d(a, params[2 * layer], params[2 * layer + 1])
        masks.append(h > 0)
        a = np.maximum(h, 0)
        if layer in (1, 3):
            a = _pool(a)
    pooled_shape = a.shape
    flat = a.reshape(len(x), -1)
    kept.append(_keep(flat, kind, fraction, gen, replace))
    logits = flat @ params[8] + params[9]
    logp = log_softmax(logits)
    loss = -float(np.mean(logp[np.arange(len(y)), y]))

    delta = np.exp(logp)
    delta[np.arange(len(y)), y] -= 1
    delta /= delta.dtype.type(len(y))
    grads = [None] * 10
    grads[8] = _restore(kept[4]).T @ delta
    grads[9] = delta.sum(axis=0)
    d = (delta @ params[8].T).reshape(pooled_shape)
    for layer in reversed(range(4)):
        if layer in (1, 3):
            d = _unpool(d)
        d = d * masks[layer]
        kernel = params[2 * layer]
        flat_kernel = kernel.reshape(len(kernel), -1)
        d = d.reshape(len(d), len(kernel), -1)  # (B, out channels, H*W)
        cols = _im2col(_restore(kept[layer]))
        grads[2 * layer] = np.tensordot(d, cols, axes=([0, 2], [0, 2])).reshape(kernel.shape)
        grads[2 * layer + 1] = d.sum(axis=(0, 2))
        if layer:
            d = _col2im(np.matmul(flat_kernel.T, d), kept[layer][1])
    return loss, grads


def logits(params, x) -> np.ndarray:
    """The network's output (the forward pass only, nothing kept)."""
    a = x
    for layer in range(4):
        a = np.maximum(conv2d(a, params[2 * layer], params[2 * layer + 1]), 0)
        if layer in (1, 3):
            a = _pool(a)
    return a.reshape(len(x), -1) @ params[8] + params[9]


def loss(params, x, y) -> float:
    """Mean cross-entropy (the forward pass only)."""
    x, y = _check(params, x, y)
    return -float(np.mean(log_softmax(logits(params, x))[np.arange(len(y)), y]))
