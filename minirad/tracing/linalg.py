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

from ..graph.operators import (
    FROM_SHAPES,
    Diagonal,
    Gather,
    MatMul,
    Retained,
    SumAxes,
    Transpose,
    compose,
)
from .reductions import products_of_others, rebuilt
from .rules import Rule, plain, register_rules
from .tracer import read, record

__all__ = ["SlogdetResult", "adjugate", "cholesky", "det", "inv", "slogdet"]

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
"""What ``np.linalg.slogdet`` returns on a traced matrix: the sign (a value read, as a
comparison is) and the traced ``log|det|``."""


def _matrices(a, what: str) -> int:
    """The order n of the square matrices ``a`` stacks, checked."""
    shape = np.shape(plain(a))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"np.linalg.{what} needs square matrices (..., n, n), not shape "
                         f"{shape}")
    return shape[-1]


def _computed(function, value, what: str):
    """``function(value)``; numpy's ``LinAlgError`` (a ``ValueError``) stays one, so that
    the traced program's own ``except np.linalg.LinAlgError`` catches it."""
    try:
        return function(value)
    except np.linalg.LinAlgError as error:
        raise np.linalg.LinAlgError(f"np.linalg.{what} of this matrix is undefined "
                                    f"({error})") from None


def _over_matrices(shape, dtype) -> SumAxes:
    """The sum over each matrix's entries: the reduction of det and slogdet."""
    return SumAxes(shape, (len(shape) - 2, len(shape) - 1), False, 1.0, dtype)


def _transposed(m: np.ndarray) -> np.ndarray:
    return np.swapaxes(m, -1, -2)


# --------------------------------------------------------------------- inverse
def _inv_block(i, values, y, edge):
    kept = edge.kept("y")   # the inverse, the output: kept once by both products
    shape = y.shape
    return compose(Diagonal(np.asarray(-1.0, y.dtype), shape),
                   compose(MatMul(y, "left", shape, kept), MatMul(y, "right", shape, kept)))


INV = Rule("inv", "inv({0})", lambda a: np.asarray(_computed(np.linalg.inv, a, "inv")),
           _inv_block, ("y",))


def inv(a):
    """``np.linalg.inv``: its edge multiplies by the inverse on both sides."""
    _matrices(a, "inv")
    return record(INV, a)


# ----------------------------------------------------------------- determinants
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


def _det_block(i, values, y, edge):
    A = np.asarray(values[0])
    cofactors = _transposed(adjugate(A))
    return compose(_over_matrices(A.shape, A.dtype), Diagonal(cofactors, A.shape, rebuilt(
        edge, cofactors, "the cofactors", "cofactors")))


DET = Rule("det", "det({0})", lambda a: np.asarray(_computed(np.linalg.det, a, "det")),
           _det_block, ("x",))


def det(a):
    """``np.linalg.det``: its edge is the sum of the cofactors times the change."""
    _matrices(a, "det")
    return record(DET, a)


def _log_abs_det(a):
    logabsdet = _computed(np.linalg.slogdet, a, "slogdet")[1]
    if not np.all(np.isfinite(logabsdet)):
        raise ValueError("np.linalg.slogdet: the matrix is singular, so log|det| is -inf "
                         "and has no derivative")
    return np.asarray(logabsdet)


def _slogdet_block(i, values, y, edge):
    A = np.asarray(values[0])
    inverse_t = _transposed(_computed(np.linalg.inv, A, "slogdet"))
    return compose(_over_matrices(A.shape, A.dtype), Diagonal(inverse_t, A.shape, rebuilt(
        edge, inverse_t, "the inverse transposed", "inverse")))


SLOGDET = Rule("slogdet", "slogdet({0})", _log_abs_det, _slogdet_block, ("x",))


def sign_of_det(a):
    """The sign of each determinant (numpy's ``slogdet(a)[0]``)."""
    return np.linalg.slogdet(a)[0]


def slogdet(a):
    """``np.linalg.slogdet``: the sign, a value read (a replay checks it stays the same),
    and ``log|det|`` traced."""
    _matrices(a, "slogdet")
    logabsdet = record(SLOGDET, a)
    return SlogdetResult(read(sign_of_det, a), logabsdet)


# ------------------------------------------------------------------- cholesky
def _symmetric_reading(shape: tuple, upper: bool) -> np.ndarray:
    """Positions that read the symmetric matrix of one triangle of each matrix."""
    n = shape[-1]
    ids = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    row, column = np.arange(n)[:, None], np.arange(n)[None, :]
    own = (row <= column) if upper else (row >= column)
    return np.where(own, ids, _transposed(ids))


def _cholesky_block(i, values, y, edge, upper):
    shape, dtype, n = y.shape, y.dtype, y.shape[-1]
    lower = _transposed(y) if upper else y
    inverse = _computed(np.linalg.inv, lower, "cholesky")
    kept_factor = edge.kept("y")
    kept_inverse = (Retained(f"inverse#{edge.target}", inverse.size * inverse.itemsize * 8,
                             recompute_from=kept_factor[0].key,
                             source_bits=kept_factor[0].nbits,
                             what="the inverse of the factor"),)
    half = (np.tril(np.ones((n, n)), -1) + 0.5 * np.eye(n)).astype(dtype)
    pattern = (Retained(f"pattern:{n}:{dtype.name}", half.size * half.itemsize * 8,
                        recompute_from=FROM_SHAPES,
                        what="the lower triangle, half the diagonal"),)
    parts = [MatMul(lower, "left", shape, kept_factor), Diagonal(half, shape, pattern),
             MatMul(inverse, "left", shape, kept_inverse),
             MatMul(_transposed(inverse), "right", shape, kept_inverse),
             Gather(shape, _symmetric_reading(shape, upper), dtype)]
    if upper:
        parts.insert(0, Transpose(shape, (*range(len(shape) - 2), len(shape) - 1,
                                          len(shape) - 2), dtype))
    block = parts[-1]
    for part in reversed(parts[:-1]):
        block = compose(part, block)
    return block


CHOLESKY = Rule("cholesky", lambda p, k: f"cholesky({p[0]}, upper)" if k["upper"]
                else f"cholesky({p[0]})",
                lambda a, upper: np.asarray(_computed(
                    lambda A: np.linalg.cholesky(A, upper=upper), a, "cholesky")),
                _cholesky_block, ("y",))


def cholesky(a, /, *, upper=False):
    """``np.linalg.cholesky``: the factor of the triangle numpy reads."""
    _matrices(a, "cholesky")
    return record(CHOLESKY, a, upper=bool(upper))


register_rules({"linalg.inv": inv, "linalg.det": det, "linalg.slogdet": slogdet,
                "linalg.cholesky": cholesky})
