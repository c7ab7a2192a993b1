r"""Random matrix injection on a chain of Jacobians (Section 3.2 of the RAD paper).

A vector program ``theta -> A -> B -> C -> y`` has the Jacobian
``J = J_L ... J_2 J_1``, one matrix per step (``J_l`` maps the vector at
position ``l-1`` to the one at position ``l``; position 0 is the input,
position ``L`` the output).  Inserting independent random matrices with
``E[P] = I`` between the factors keeps the product unbiased:
``E[J_L P_{L-1} ... P_1 J_1] = J``.  Two choices of ``P`` (d x d) are built in:

* ``kind="sample"``: ``P = (d/k) sum_{s=1..k} e_i e_i^T`` with ``i``
  uniform on ``1..d``, drawn with replacement: a diagonal matrix that keeps
  ``k`` (or fewer) of the ``d`` components, so only those need storing;
* ``kind="rademacher"``: ``P = R R^T`` with ``R`` a ``d x k`` matrix of
  independent ``±1/sqrt(k)``: a random projection onto ``k`` dimensions.

Relation to path sampling
-------------------------
:func:`chain_graph` gives the scalar LCG of a chain: one vertex per vector
component, one edge per matrix entry.  What holds exactly:

1. *Injection samples vertices.*  Multiplying by a sampling ``P`` at
   position ``l`` scales every edge into component ``i`` of that vector by
   ``P[i, i]``: the estimate is Bauer's path sum over the scalar graph with
   each path weighted by the ``P`` entries of the vertices it passes, and
   paths through unsampled vertices dropped (``chain_graph(chain, Ps)``
   builds that graph).  Algorithm 1 samples *edges*, independently at each
   vertex, so the two are different estimators in general: same mean,
   different variance (injecting ``k = 2`` at every layer of
   ``interleaved(3, 3, "random", rng=0)`` gives variance 77.7, Algorithm 1
   with ``k = 2`` on the same scalar graph 67.9).
2. *They coincide when a single vertex feeds the sampled layer.*  If the
   vector before position ``l`` has one component (a scalar input ``theta``
   before position 1), then Algorithm 1 at ``theta`` with ``k`` draws puts
   on ``theta``'s out-edges exactly the weights ``diag(P_1)``.  So
   injecting at position 1 only is Algorithm 1 with ``k = {theta: k}``
   (every other vertex keeping its edges): the same law.
3. *With one draw they coincide column by column.*  Fix an input
   ``theta``.  With ``k = 1``, Algorithm 1 follows one path out of
   ``theta``: each vertex on it draws one successor uniformly,
   independently of the past, so the path is uniform over all paths from
   ``theta`` (every vertex of a layer has the same out-degree) and carries
   the weight ``prod d_l``.  Injecting ``k = 1`` at
   every position ``1..L`` (the output too, when it has several
   components) picks one component per vector uniformly and independently:
   the same path law, the same weight.  So every column of the Jacobian
   (hence every entry) has the same law under both.  With several inputs
   the columns are coupled differently: injection sends every column
   through the same components, while in Algorithm 1 the inputs draw
   independently, so the joint laws differ.

The tests check 2 and 3 by equal exact variances and by enumerating both
distributions, and 1 by rebuilding the estimate from the scalar graph.

>>> rng = np.random.default_rng(0)
>>> chain = [rng.standard_normal((3, 1)), rng.standard_normal((3, 3)),
...          rng.standard_normal((1, 3))]
>>> estimates = injected_products(chain, k=1, n=40000, rng=1)
>>> standard_error = np.sqrt(injection_variance(chain, k=1) / 40000)
>>> bool(np.all(np.abs(estimates.mean(axis=0) - chain_product(chain)) < 5 * standard_error))
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .._arguments import number_of_estimates
from ..rng import as_generator as _rng
from .layered import chain_graph, chain_sizes, check_chain, check_positions, check_projections

__all__ = [
    "KINDS", "apply_projections", "chain_graph", "chain_product", "inject",
    "injected_products", "injection_variance", "rademacher_projection",
    "sampling_projection",
]

KINDS = ("sample", "rademacher")


# ------------------------------------------------------------ arguments
def _per_vector(d: int, k) -> int:
    """``k``, the components a projection keeps of a ``d``-vector (or the
    dimension it projects onto): an int >= 1, or a fraction in (0, 1] of ``d``."""
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("k must be an int >= 1 or a float fraction in (0, 1], not a bool")
    if isinstance(k, (int, np.integer)):
        if k < 1:
            raise ValueError(f"k must be at least 1 (samples per vector), got {k}")
        return int(k)
    if isinstance(k, (float, np.floating)):
        if not 0.0 < k <= 1.0:
            raise ValueError(f"a float k is the fraction of each vector's components to keep "
                             f"and must lie in (0, 1], got {k}; for a count pass an int")
        return math.ceil(k * d)
    raise TypeError(f"k must be an int >= 1 or a float fraction in (0, 1], not "
                    f"{type(k).__name__}")


def _check_d(d) -> int:
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d (the dimension) must be an int >= 1, got {d!r}")
    return int(d)


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    return kind


# ---------------------------------------------------------- the matrices
def sampling_projection(d: int, k=1, rng=None) -> np.ndarray:
    """``P = (d/k) sum_s e_i e_i^T``: ``k`` components drawn uniformly with replacement.

    ``E[P] = I`` because each draw hits component ``i`` with probability
    ``1/d``.  ``k`` may also be a fraction in (0, 1] of ``d``.

    >>> sampling_projection(4, 2, rng=0)
    array([[0., 0., 0., 0.],
           [0., 0., 0., 0.],
           [0., 0., 2., 0.],
           [0., 0., 0., 2.]])
    """
    d = _check_d(d)
    k = _per_vector(d, k)
    rng = _rng(rng)
    diagonal = np.bincount(rng.integers(d, size=k), minlength=d) * (d / k)
    return np.diag(diagonal)


def rademacher_projection(d: int, k=1, rng=None) -> np.ndarray:
    """``P = R R^T`` with ``R`` (d x k) of independent ``±1/sqrt(k)``; ``E[P] = I``.

    >>> P = rademacher_projection(3, 2, rng=0)
    >>> P.shape, bool(np.allclose(P, P.T)), round(float(np.trace(P)), 12)
    ((3, 3), True, 3.0)
    """
    d = _check_d(d)
    k = _per_vector(d, k)
    rng = _rng(rng)
    r = (2.0 * rng.integers(2, size=(d, k)) - 1.0) / math.sqrt(k)
    return r @ r.T


def _draw(kind: str, d: int, k: int, rng) -> np.ndarray:
    maker = sampling_projection if kind == "sample" else rademacher_projection
    return maker(d, k, rng)


# ------------------------------------------------------------ the chain
def chain_product(chain) -> np.ndarray:
    """The exact Jacobian ``J_L ... J_1``.

    >>> chain_product([np.ones((2, 1)), np.array([[1.0, 2.0]])]).tolist()
    [[3.0]]
    """
    return apply_projections(chain, {})


def apply_projections(chain, projections: Mapping) -> np.ndarray:
    """``J_L P_{L-1} ... P_1 J_1`` for given matrices: ``projections[l]`` is
    inserted at position ``l`` (0 = before ``J_1``, ``L`` = after ``J_L``).

    >>> chain = [np.array([[1.0], [2.0]]), np.array([[3.0, 4.0]])]
    >>> apply_projections(chain, {1: np.diag([2.0, 0.0])}).tolist()  # path via component 1
    [[6.0]]
    """
    chain = check_chain(chain)
    sizes = chain_sizes(chain)
    checked = check_projections(projections, sizes)
    x = checked.get(0, np.eye(sizes[0]))
    for l, factor in enumerate(chain, start=1):
        x = factor @ x
        if l in checked:
            x = checked[l] @ x
    return x


def _setup(chain, k, kind: str, where):
    """The checked chain, the kind, the vector size at every position and, at
    each injected position, the components its projection keeps (``k`` resolved)."""
    chain = check_chain(chain)
    kind = _check_kind(kind)
    sizes = chain_sizes(chain)
    per_vector = {l: _per_vector(sizes[l], k) for l in check_positions(where, len(chain))}
    return chain, kind, sizes, per_vector


def inject(chain, k=1, kind: str = "sample", rng=None, where=None) -> np.ndarray:
    """One estimate of the chain's Jacobian with a random ``P`` at each position in ``where``.

    ``where`` lists positions ``0..L`` (default: every vector strictly
    inside the chain, ``1..L-1``); ``k`` is the number of components kept
    per injected vector (the dimension of a Rademacher projection), an int
    or a fraction of each vector's dimension; ``kind`` is ``"sample"`` or ``"rademacher"``.

    >>> chain = [np.ones((3, 1)), np.ones((1, 3))]
    >>> inject(chain, k=1, rng=0).tolist()  # equal paths: sampling is exact here
    [[3.0]]
    """
    chain, kind, sizes, per_vector = _setup(chain, k, kind, where)
    rng = _rng(rng)
    return apply_projections(chain, {l: _draw(kind, sizes[l], kk, rng)
                                     for l, kk in per_vector.items()})


def injected_products(chain, k=1, n: int = 1000, kind: str = "sample", rng=None,
                      where=None) -> np.ndarray:
    """``n`` independent :func:`inject` estimates at once, shape (n, m, p).

    >>> chain = [np.array([[1.0], [3.0]]), np.array([[1.0, 1.0]])]
    >>> sorted(set(injected_products(chain, k=1, n=50, rng=0).ravel().tolist()))
    [2.0, 6.0]
    """
    chain, kind, sizes, per_vector = _setup(chain, k, kind, where)
    n = number_of_estimates(n)
    rng = _rng(rng)

    def project(x, l):
        d, kk = sizes[l], per_vector[l]
        if kind == "sample":
            counts = rng.multinomial(kk, np.full(d, 1.0 / d), size=n)
            return x * (counts * (d / kk))[:, :, None]
        r = (2.0 * rng.integers(2, size=(n, d, kk)) - 1.0) / math.sqrt(kk)
        return r @ (r.transpose(0, 2, 1) @ x)

    x = np.broadcast_to(np.eye(sizes[0]), (n, sizes[0], sizes[0]))
    if 0 in per_vector:
        x = project(x, 0)
    for l, factor in enumerate(chain, start=1):
        x = factor @ x
        if l in per_vector:
            x = project(x, l)
    return np.ascontiguousarray(x)


def injection_variance(chain, k=1, kind: str = "sample", where=None) -> np.ndarray:
    r"""The exact variance of every entry of the :func:`inject` estimate, shape (m, p).

    Follow one column ``theta`` of the Jacobian: ``x_l`` is the estimate at
    position ``l``, with mean ``mu_l`` (the exact partial product) and
    covariance ``S_l``.  A factor maps ``S -> J S J^T``.  A projection ``P``,
    independent of ``x``, maps ``S -> S + D(S + mu mu^T)`` because
    ``E[P A P] = A + D(A)`` for every symmetric ``A``, where

    * sampling: ``D(A) = (d Diag(A) - A) / k``, from the multinomial moments
      ``E[c_i c_j] = 1 - 1/k + (d/k)[i = j]`` of ``P = diag(c)``;
    * Rademacher: ``D(A) = (A + tr(A) I - 2 Diag(A)) / k``, from
      ``E[r_i r_a r_b r_j]`` of a ±1 vector (pairings of the indices).

    Both ``D`` map positive semidefinite matrices to positive semidefinite
    ones (Cauchy-Schwarz for sampling; a sum of squares for Rademacher), so
    every extra injection can only raise the variance of every entry.

    >>> injection_variance([np.array([[1.0], [3.0]]), np.array([[1.0, 1.0]])], k=1).tolist()
    [[4.0]]
    """
    chain, kind, sizes, per_vector = _setup(chain, k, kind, where)

    def extra(a, l):  # D(A) for a stack of symmetric matrices a (p, d, d)
        d, kk = sizes[l], per_vector[l]
        diag = np.einsum("cii->ci", a)
        if kind == "sample":
            out = -a
            out[:, np.arange(d), np.arange(d)] += d * diag
        else:
            out = a.copy()
            out[:, np.arange(d), np.arange(d)] += diag.sum(axis=1, keepdims=True) - 2.0 * diag
        return out / kk

    p = sizes[0]
    mean = np.eye(p)[:, :, None]  # column theta's mean vector at position 0, (p, d, 1)
    cov = np.zeros((p, p, p))
    for l in range(len(chain) + 1):
        if l > 0:
            factor = chain[l - 1]
            mean = factor @ mean
            cov = factor @ cov @ factor.T
        if l in per_vector:
            cov = cov + extra(cov + mean @ mean.transpose(0, 2, 1), l)
    variance = np.einsum("cii->ic", cov)
    return np.maximum(variance, 0.0)  # clears rounding below zero
