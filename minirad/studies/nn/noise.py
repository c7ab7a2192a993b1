"""Gradient noise per layer (paper Figure 5): how far minibatch and RAD estimates
of the weight gradients fall from the gradient over the whole training set.

For every setting (estimator kind, fraction, batch) we draw ``draws`` random
minibatches (with replacement), estimate the gradient, and record per weight
tensor the mean over its entries of the squared error against the full gradient.
Any model works that offers ``loss_and_grad(params, x, y, kind, fraction, rng=)``
returning weights and biases alternately.

>>> from minirad.studies.nn import mlp_numpy
>>> gen = np.random.default_rng(0)
>>> x = gen.standard_normal((40, 5)).astype(np.float32); y = gen.integers(3, size=40)
>>> params = mlp_numpy.init_mlp((5, 4, 3), rng=0)
>>> rows = gradient_noise(mlp_numpy.loss_and_grad, params, x, y,
...                       [Setting("exact", "exact", 1.0, 40)], draws=3, rng=0)
>>> rows[0]["mse"].shape                    # one number per weight matrix
(2,)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...rng import as_generator
from .training import Progress

__all__ = ["Setting", "full_gradient", "gradient_noise"]


@dataclass(frozen=True)
class Setting:
    """One point of Figure 5: a label (one line per label), how inputs are kept, the batch."""

    label: str
    kind: str
    fraction: float
    batch: int


def full_gradient(loss_and_grad, params, x, y, chunk: int = 500) -> list[np.ndarray]:
    """The exact gradient of the mean loss over all of ``(x, y)``, in float64,
    accumulated over chunks so large models fit in memory."""
    total = None
    for start in range(0, len(y), chunk):
        part = slice(start, start + chunk)
        _, grads = loss_and_grad(params, x[part], y[part])
        weight = len(y[part]) / len(y)
        grads = [weight * g.astype(np.float64) for g in grads]
        total = grads if total is None else [t + g for t, g in zip(total, grads)]
    return total


def gradient_noise(loss_and_grad, params, x, y, settings, draws: int = 20, rng=None,
                   per_example_bytes=None, full=None, progress=False) -> list[dict]:
    """One row per setting: ``mse`` (one number per weight tensor, the mean over the
    draws), its standard error ``se`` over the ``draws`` (nan for one draw) and, when
    ``per_example_bytes(fraction)`` is given, the retained ``bytes`` of the batch."""
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be a positive integer, not {draws!r}")
    full = full if full is not None else full_gradient(loss_and_grad, params, x, y)
    full_weights = full[0::2]
    gen = as_generator(rng)
    bar = Progress(len(settings), "gradient noise", enabled=bool(progress))
    rows = []
    for i, setting in enumerate(settings):
        errors = np.zeros((draws, len(full_weights)))
        for j in range(draws):
            pick = gen.integers(len(y), size=setting.batch)
            _, grads = loss_and_grad(params, x[pick], y[pick], setting.kind, setting.fraction,
                                     rng=gen)
            errors[j] = [np.mean((g.astype(np.float64) - f) ** 2)
                         for g, f in zip(grads[0::2], full_weights)]
        se = errors.std(axis=0, ddof=1) / np.sqrt(draws) if draws > 1 else \
            np.full(len(full_weights), np.nan)
        row = {"label": setting.label, "kind": setting.kind, "fraction": setting.fraction,
               "batch": setting.batch, "mse": errors.mean(axis=0), "se": se, "draws": draws}
        if per_example_bytes is not None:
            row["bytes"] = setting.batch * per_example_bytes(setting.fraction)
        rows.append(row)
        bar.update(i + 1, setting.label)
    return rows
