"""Matrix functions of traced arrays: ``np.linalg.inv``, ``det``, ``slogdet``, ``cholesky``.

Each is one vertex whose edge is built from the blocks the graph already
has, so it saves, loads, samples and draws as they do (``np.linalg.solve``
is :mod:`minirad.implicit.solves`'s; ``np.linalg.norm`` is with the
reductions).  For matrices stacked along leading axes, each matrix alone:

* ``Y = inv(A)``: ``dY = -Y dA Y``, the edge ``-1 ∘ (Y @ .) ∘ (. @ Y)``
  keeping ``Y`` (the output) once;
* ``det(A)``: ``d det = sum(adj(A)^T * dA)``, the edge ``sum ∘ diag(adj(A)^T)``.
  The adjugate is taken from the singular value decomposition, ``adj(A) =
  det(U) det(V) V diag(prod of the other s_j) U^T``, so it exists for a
  singular A too (the derivative of a determinant always does);
* ``slogdet(A)``: the sign is a constant; ``log|det A|`` has the edge ``sum ∘
  diag(A^{-T})``, refused where A is singular (the logarithm is -inf there);
* ``L = cholesky(A)``: ``dL = L Φ(L^{-1} dA L^{-T})``, Φ taking the lower
  triangle and half the diagonal: the edge ``(L @ .) ∘ Φ ∘ (L^{-1} @ .) ∘
  (. @ L^{-T}) ∘ S``, where S reads the triangle numpy reads (the lower one,
  the upper with ``upper=True``: numpy never looks at the other) as the
  symmetric matrix it stands for.  It keeps ``L``; ``L^{-1}`` is rebuilt
  from it.

>>> import numpy as np, minirad
>>> A = np.array([[2.0, 1.0], [1.0, 3.0]])
>>> minirad.jacobian(lambda A: np.linalg.det(A), A)     # the cofactors: [[3, -1], [-1, 2]]
array([[ 3., -1., -1.,  2.]])
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..graph.lcg import value_key
from ..graph.operators import (
    FROM_SHAPES,
    Diagonal,
    Gather,
    MatMul,
    Retained,
    SumAxes,
    Transpose,
    compose,
    fresh_key,
)
from .arrays import Tracked, record, register_rules
from .reductions import products_of_others

__all__ = ["SlogdetResult", "adjugate", "cholesky", "det", "inv", "slogdet"]

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
"""What ``np.linalg.slogdet`` returns on a traced matrix: the sign (a constant) and
the traced ``log|det|``."""


def _matrices(a: Tracked, what: str) -> int:
    """The order n of the square matrices ``a`` stacks, checked."""
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"np.linalg.{what} needs square matrices (..., n, n), not shape "
                         f"{a.shape}")
    return a.shape[-1]


def _computed(function, value, what: str):
    """``function(value)``; numpy's ``LinAlgError`` (a ``ValueError``) stays one, so that
    the traced program's own ``except np.linalg.LinAlgError`` catches it."""
    try:
        return function(value)
    except np.linalg.LinAlgError as error:
        raise np.linalg.LinAlgError(f"np.linalg.{what} of this matrix is undefined "
                                    f"({error})") from None


def _over_matrices(a: Tracked) -> SumAxes:
    """The sum over each matrix's entries: the reduction of det and slogdet."""
    return SumAxes(a.shape, (a.ndim - 2, a.ndim - 1), False, 1.0, a.dtype)


def _transposed(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


def inv(a):
    """``np.linalg.inv``: its edge multiplies by the inverse on both sides."""
    if not isinstance(a, Tracked):
        return np.linalg.inv(a)
    _matrices(a, "inv")
    inverse = _computed(np.linalg.inv, a.value, "inv")
    kept = a.tape.retain_value_of_next(inverse, "the inverse")
    block = compose(Diagonal(np.asarray(-1.0, inverse.dtype), a.shape),
                    compose(MatMul(inverse, "left", a.shape, kept),
                            MatMul(inverse, "right", a.shape, kept)))
    return record(a.tape, inverse, "inv({0})", [(a, block)])


def adjugate(A: np.ndarray) -> np.ndarray:
    """The adjugate of each square matrix of ``A`` (``det(A) inv(A)`` where that exists),
    from the singular value decomposition, so a singular matrix has one too.

    >>> adjugate(np.array([[1.0, 2.0], [2.0, 4.0]]))          # singular: [[4, -2], [-2, 1]]
    array([[ 4., -2.],
           [-2.,  1.]])
    """
    U, s, Vt = np.linalg.svd(A)
    signs = np.sign(np.linalg.det(U) * np.linalg.det(Vt))
    scaled = _transposed(Vt) * products_of_others(s)[..., None, :]
    return (signs[..., None, None] * (scaled @ _transposed(U))).astype(A.dtype, copy=False)


def det(a):
    """``np.linalg.det``: its edge is the sum of the cofactors times the change."""
    if not isinstance(a, Tracked):
        return np.linalg.det(a)
    _matrices(a, "det")
    result = _computed(np.linalg.det, a.value, "det")
    cofactors = _transposed(adjugate(a.value))
    block = compose(_over_matrices(a), Diagonal(cofactors, a.shape, a.tape.retain_rebuilt(
        cofactors, a, "the cofactors")))
    return record(a.tape, result, "det({0})", [(a, block)])


def slogdet(a):
    """``np.linalg.slogdet``: the sign, and ``log|det|`` traced."""
    if not isinstance(a, Tracked):
        return np.linalg.slogdet(a)
    _matrices(a, "slogdet")
    sign, logabsdet = _computed(np.linalg.slogdet, a.value, "slogdet")
    if not np.all(np.isfinite(logabsdet)):
        raise ValueError("np.linalg.slogdet: the matrix is singular, so log|det| is -inf "
                         "and has no derivative")
    inverse_t = _transposed(_computed(np.linalg.inv, a.value, "slogdet"))
    block = compose(_over_matrices(a), Diagonal(inverse_t, a.shape, a.tape.retain_rebuilt(
        inverse_t, a, "the inverse transposed")))
    return SlogdetResult(sign, record(a.tape, logabsdet, "slogdet({0})", [(a, block)]))


def _symmetric_reading(shape: tuple, upper: bool) -> np.ndarray:
    """Positions that read the symmetric matrix of one triangle of each matrix."""
    n = shape[-1]
    ids = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    row, column = np.arange(n)[:, None], np.arange(n)[None, :]
    own = (row <= column) if upper else (row >= column)
    return np.where(own, ids, _transposed(ids))


def cholesky(a, /, *, upper=False):
    """``np.linalg.cholesky``: the factor of the triangle numpy reads."""
    if not isinstance(a, Tracked):
        return np.linalg.cholesky(a, upper=upper)
    n = _matrices(a, "cholesky")
    factor = _computed(lambda A: np.linalg.cholesky(A, upper=upper), a.value, "cholesky")
    lower = _transposed(factor) if upper else factor
    inverse = _computed(np.linalg.inv, lower, "cholesky")
    tape, shape, dtype = a.tape, a.shape, a.dtype
    kept_factor = tape.retain_value_of_next(factor, "the factor")
    kept_inverse = (Retained(fresh_key("inverse"), inverse.size * inverse.itemsize * 8,
                             recompute_from=value_key(tape.next_index),
                             source_bits=factor.size * factor.itemsize * 8,
                             what="the inverse of the factor"),)
    half = (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(dtype)
    pattern = (Retained(fresh_key("pattern"), half.size * half.itemsize * 8,
                        recompute_from=FROM_SHAPES, what="the lower triangle, half the "
                        "diagonal"),)
    parts = [MatMul(lower, "left", shape, kept_factor), Diagonal(half, shape, pattern),
             MatMul(inverse, "left", shape, kept_inverse),
             MatMul(_transposed(inverse), "right", shape, kept_inverse),
             Gather(shape, _symmetric_reading(shape, upper), dtype)]
    if upper:
        parts.insert(0, Transpose(shape, (*range(a.ndim - 2), a.ndim - 1, a.ndim - 2), dtype))
    block = parts[-1]
    for part in reversed(parts[:-1]):
        block = compose(part, block)
    return record(tape, factor, "cholesky({0})" if not upper else "cholesky({0}, upper)",
                  [(a, block)])


register_rules({"linalg.inv": inv, "linalg.det": det, "linalg.slogdet": slogdet,
                "linalg.cholesky": cholesky})
