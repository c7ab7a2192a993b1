"""Beyond the paper: spend a memory budget where it buys the most variance reduction.

The paper keeps the same fraction f of every layer's input. With
"different sample" (k indices per example, with replacement) the weight
gradient of layer l has, for a fixed minibatch, the exact variance (summed
over the entries of W_l)

    V_l(k_l) = c_l / k_l,    c_l = (d_l - 1) * sum_b |x_b|^2 |delta_b|^2

(one draw per example gives ``d x_i e_i delta^T`` with mean ``x delta^T``;
draws and examples are independent). Keeping ``k_l`` floats per example per
layer under a budget ``sum_l k_l <= K`` then minimises ``sum_l c_l / k_l``:
the continuous optimum is ``k_l ∝ sqrt(c_l)``; :func:`allocate` finds the
integer optimum by greedy marginal gains (exact for this convex separable
objective).

>>> allocate([4.0, 1.0], [100, 100], budget=6)
(4, 2)
"""

from __future__ import annotations

import numpy as np

from . import mlp_numpy

__all__ = ["allocate", "sampling_variance", "variance_coefficients"]


def variance_coefficients(params, x, y) -> np.ndarray:
    """``c_l`` per layer for the minibatch ``(x, y)`` (float64)."""
    out = []
    for inputs, adjoints in mlp_numpy.layer_adjoints(params, x, y):
        inputs = inputs.astype(np.float64)
        adjoints = adjoints.astype(np.float64)
        d = inputs.shape[1]
        out.append((d - 1) * float(np.sum((inputs ** 2).sum(1) * (adjoints ** 2).sum(1))))
    return np.array(out)


def sampling_variance(coefficients, kept) -> np.ndarray:
    """``c_l / k_l``: per-layer variance of the different-sample weight gradients."""
    return np.asarray(coefficients, float) / np.asarray(kept, float)


def allocate(coefficients, widths, budget: int) -> tuple[int, ...]:
    """Integer ``k_l`` (1 <= k_l <= d_l, sum <= budget) minimising ``sum c_l / k_l``."""
    c = np.asarray(coefficients, float)
    widths = [int(d) for d in widths]
    if len(c) != len(widths) or np.any(c < 0) or not np.all(np.isfinite(c)):
        raise ValueError("give one finite non-negative coefficient per layer width")
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) \
            or not len(widths) <= budget:
        raise ValueError(f"budget must be an integer of at least one float per layer "
                         f"({len(widths)}), not {budget!r}")
    k = [1] * len(widths)
    for _ in range(min(int(budget), sum(widths)) - len(widths)):
        gains = [c[i] / (k[i] * (k[i] + 1)) if k[i] < widths[i] else -1.0
                 for i in range(len(k))]
        k[int(np.argmax(gains))] += 1
    return tuple(k)
