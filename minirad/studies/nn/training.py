"""Minibatch training as the paper ran it: Adam with L2 weight decay, a step schedule,
batches drawn with replacement, seeds, and a progress line.

The model is any ``grad_fn(params, x_batch, y_batch, rng) -> (loss, grads)``
over a list of numpy arrays, so the hand-written MLP and traced programs train
through the same loop.

>>> import numpy as np
>>> target = np.array([1.0, -2.0], np.float32)
>>> def grad_fn(params, x, y, rng):          # minimise |w - target|^2, data unused
...     diff = params[0] - target
...     return float(diff @ diff), [2 * diff]
>>> x = np.zeros((10, 1), np.float32); y = np.zeros(10, np.int64)
>>> history = train(grad_fn, [np.zeros(2, np.float32)], x, y, batch=4, iterations=2000,
...                 lr=0.05, rng=0, progress=False)
>>> np.allclose(history.params[0], target, atol=1e-2)
True
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ...rng import as_generator

__all__ = ["Adam", "History", "Progress", "learning_rate", "train"]


def learning_rate(initial: float, iteration: int, decay_every: int, decay: float = 0.6) -> float:
    """The step schedule: ``initial * decay ** (iteration // decay_every)``.

    >>> learning_rate(1.0, 0, 100), learning_rate(1.0, 250, 100)
    (1.0, 0.36)
    """
    if decay_every < 1:
        raise ValueError(f"decay_every must be a positive number of iterations, not {decay_every}")
    return initial * decay ** (iteration // decay_every)


@dataclass
class Adam:
    """Adam (Kingma and Ba) with L2 weight decay added to the gradient, as in
    ``torch.optim.Adam(weight_decay=...)`` which the paper used.

    >>> opt = Adam(); p = [np.array([1.0])]
    >>> opt.step(p, [np.array([0.5])], lr=0.1); p[0]   # first step moves by lr
    array([0.9])
    """

    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    t: int = 0
    m: list = field(default_factory=list)
    v: list = field(default_factory=list)

    def step(self, params: list, grads: list, lr: float) -> None:
        """Update ``params`` in place."""
        if len(grads) != len(params):
            raise ValueError(f"{len(grads)} gradients for {len(params)} parameters")
        if not self.m:
            self.m = [np.zeros_like(p) for p in params]
            self.v = [np.zeros_like(p) for p in params]
        self.t += 1
        c1 = 1 - self.beta1 ** self.t
        c2 = 1 - self.beta2 ** self.t
        for p, g, m, v in zip(params, grads, self.m, self.v):
            if self.weight_decay:
                g = g + self.weight_decay * p
            m *= self.beta1
            m += (1 - self.beta1) * g
            v *= self.beta2
            v += (1 - self.beta2) * g * g
            p -= (lr * (m / c1) / (np.sqrt(v / c2) + self.eps)).astype(p.dtype, copy=False)


class Progress:
    """One progress line: rewritten in place on a terminal, every 10% otherwise."""

    def __init__(self, total: int, label: str, stream=None, enabled: bool = True):
        self.total, self.label, self.enabled = total, label, enabled
        self.stream = stream or sys.stderr
        self.start = time.perf_counter()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.next_report = 0

    def update(self, done: int, note: str = "") -> None:
        if not self.enabled:
            return
        if not self.tty and done < self.total and done < self.next_report:
            return
        self.next_report = done + max(1, self.total // 10)
        elapsed = time.perf_counter() - self.start
        eta = elapsed / done * (self.total - done) if done else float("nan")
        line = f"{self.label}: {done}/{self.total} {note} [{elapsed:.0f}s, eta {eta:.0f}s]"
        if self.tty:
            self.stream.write("\r" + line.ljust(100) + ("\n" if done >= self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


@dataclass
class History:
    """Evaluations along training: iteration numbers and ``eval_fn`` values."""

    iterations: list
    evaluations: list
    params: list
    seconds: float
    batch_losses: list


def train(grad_fn, params, x, y, *, batch: int, iterations: int, lr: float,
          weight_decay: float = 0.0, decay_every: int | None = None, decay: float = 0.6,
          rng=None, eval_fn=None, eval_every: int | None = None, progress=True,
          label: str = "train") -> History:
    """Train ``params`` (copied, not modified) for ``iterations`` Adam steps.

    Each step draws ``batch`` examples uniformly *with replacement* from
    ``(x, y)`` and calls ``grad_fn(params, xb, yb, rng)``. The learning rate is
    multiplied by ``decay`` every ``decay_every`` steps. ``eval_fn(params)`` is
    recorded at step 0, every ``eval_every`` steps and at the end.
    """
    for name, value in (("batch", batch), ("iterations", iterations)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, not {lr!r}")
    gen = as_generator(rng)
    params = [p.copy() for p in params]
    optimizer = Adam(weight_decay=weight_decay)
    decay_every = decay_every or iterations
    eval_every = eval_every or max(1, iterations // 20)
    bar = Progress(iterations, label, enabled=bool(progress),
                   stream=progress if hasattr(progress, "write") else None)
    marks, values, batch_losses = [], [], []
    start = time.perf_counter()
    for it in range(iterations + 1):
        if eval_fn is not None and (it % eval_every == 0 or it == iterations):
            marks.append(it)
            values.append(eval_fn(params))
        if it == iterations:
            break
        rows = gen.integers(len(y), size=batch)
        loss, grads = grad_fn(params, x[rows], y[rows], gen)
        if not np.isfinite(loss):
            raise ValueError(f"{label}: the loss became {loss} at iteration {it}; "
                             f"lr={lr} is too large for this problem")
        batch_losses.append(loss)
        optimizer.step(params, grads, learning_rate(lr, it, decay_every, decay))
        bar.update(it + 1, f"loss {loss:.3f}")
    return History(marks, values, params, time.perf_counter() - start, batch_losses)
