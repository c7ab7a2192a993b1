"""What the backward pass keeps of a layer's input: exactly, sampled, or projected.

The weight gradient of a linear layer ``h = x W + b`` is ``x^T delta``. RAD
(paper Sec. 4.2) replaces the stored ``x`` by ``x P`` with a random ``P`` whose
mean is the identity, so the gradient estimate ``(x P)^T delta`` stays unbiased
while only ``k = ceil(f d)`` numbers per example are kept:

* ``"exact"``: ``P = I``, keeps all ``d`` entries (baseline and reduced batch);
* ``"different_sample"``: per example ``P_b = (d/k) sum_j e_i e_i^T``, ``k`` indices
  drawn uniformly with replacement, independently for every row of the batch;
* ``"same_sample"``: the same ``k`` indices for the whole batch;
* ``"project"``: ``P = R R^T / k`` with ``R`` a ``d x k`` matrix of independent
  signs (Rademacher), shared by the batch; keeps ``x R``.

Indices and signs are not kept: they are regenerated from a stored integer
seed in the backward pass, which is why the memory rules count only the kept
floats.

>>> x = np.arange(12.0).reshape(2, 6)
>>> kept = keep_input(x, "different_sample", 0.5, rng=0)
>>> kept.values.shape                     # ceil(0.5 * 6) = 3 floats per row
(2, 3)
>>> restore_input(kept).shape             # x P, as the weight gradient needs it
(2, 6)
>>> bool(np.all(restore_input(keep_input(x, "exact", 1.0)) == x))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...rng import as_generator
from .memory import kept_entries

__all__ = ["KINDS", "Kept", "keep_input", "log_softmax", "restore_input", "sample_pattern",
           "signs"]

KINDS = ("exact", "same_sample", "different_sample", "project")


@dataclass(frozen=True)
class Kept:
    """A layer input as retained for the backward pass.

    ``values``: the kept floats, (B, d) when exact and (B, k) otherwise;
    ``d``: the full width; ``seed``: regenerates the indices or signs;
    ``replace``: sampling with replacement (the paper) or without.
    """

    kind: str
    values: np.ndarray
    d: int
    seed: int | None = None
    replace: bool = True

    @property
    def nbytes(self) -> int:
        """Bytes of kept floats (the seed is one integer, not counted)."""
        return int(self.values.nbytes)


def sample_pattern(kind: str, batch: int, d: int, k: int, seed: int,
                   replace: bool = True) -> np.ndarray:
    """(B, k) column indices for ``different_sample``, (1, k) for ``same_sample``: the
    sampling pattern, reproducible from ``seed`` (the traced networks of
    :mod:`minirad.studies.nn.graph` draw theirs here too, so both can be compared
    on the same samples).

    >>> sample_pattern("same_sample", 3, 10, 2, seed=0).shape
    (1, 2)
    """
    gen = np.random.default_rng(seed)
    rows = batch if kind == "different_sample" else 1
    if replace:
        return gen.integers(d, size=(rows, k))
    # without replacement: k distinct indices per row (at k = d a permutation, so P = I)
    return np.argsort(gen.random((rows, d)), axis=1)[:, :k]


def signs(d: int, k: int, seed: int, dtype=np.float32) -> np.ndarray:
    """The (d, k) Rademacher matrix of ``project``, reproducible from ``seed``.

    >>> R = signs(50, 4, seed=1)
    >>> R.shape, np.unique(R).tolist(), bool(np.array_equal(R, signs(50, 4, seed=1)))
    ((50, 4), [-1.0, 1.0], True)
    """
    gen = np.random.default_rng(seed)
    return (2 * gen.integers(2, size=(d, k), dtype=np.int8) - 1).astype(dtype)


def keep_input(x, kind: str = "exact", fraction: float = 1.0, rng=None,
               replace: bool = True) -> Kept:
    """Reduce a (B, d) layer input to what the backward pass stores."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"a layer input must be a (batch, features) array, got shape {x.shape}")
    batch, d = x.shape
    if kind == "exact":
        return Kept(kind, x, d)
    k = kept_entries(d, fraction)
    seed = int(as_generator(rng).integers(2**63))
    if kind == "project":
        return Kept(kind, x @ signs(d, k, seed, x.dtype), d, seed)
    idx = sample_pattern(kind, batch, d, k, seed, replace)
    values = np.take_along_axis(x, np.broadcast_to(idx, (batch, k)), axis=1)
    return Kept(kind, values, d, seed, replace)


def restore_input(kept: Kept) -> np.ndarray:
    """``x P``: the (B, d) matrix that multiplies the adjoint in the weight gradient.

    Repeated indices add up (sampling with replacement); each kept entry is
    scaled by ``d/k`` for sampling, and the projection is undone by ``R^T / k``.
    """
    values = kept.values
    if kept.kind == "exact":
        return values
    batch, k = values.shape
    d = kept.d
    if kept.kind == "project":
        return (values @ signs(d, k, kept.seed, values.dtype).T) / values.dtype.type(k)
    idx = sample_pattern(kept.kind, batch, d, k, kept.seed, kept.replace)
    idx = np.broadcast_to(idx, (batch, k))
    flat = (np.arange(batch)[:, None] * d + idx).ravel()
    out = np.bincount(flat, weights=values.ravel(), minlength=batch * d)
    return (out * (d / k)).reshape(batch, d).astype(values.dtype, copy=False)


def log_softmax(z):
    """Row-wise log of the softmax of logits ``z`` (batch, classes), shifted by each
    row's maximum so that large logits do not overflow.

    >>> np.exp(log_softmax(np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]]))).round(3).tolist()
    [[0.25, 0.75], [0.5, 0.5]]
    """
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))
