r"""Exact variances of the randomized estimators: one recursion over the adjoints.

Every estimator of :mod:`minirad.randomized` is reverse accumulation with
independent random numbers put in, each with mean one (or the identity):

* path sampling (Algorithm 1) scales the edge ``a -> s`` by ``c_{as}``, the
  number of times ``a`` drew it times ``d_a / k_a``;
* a random ``P = R R^T`` at a vertex multiplies that vertex's adjoint
  (random matrix injection, and the second level of path sampling on arrays);
* a random edge label ``R`` with mean ``J`` (an injected edge: a stored
  activation sampled, or ``J P`` with ``P`` on the source).

Fix one output entry and write ``\hat a`` for the estimate of the adjoint of
vertex ``a`` (a vector over ``a``'s entries), ``\mu_a`` for its mean (the exact
adjoint) and ``C(a, b)`` for ``Cov(\hat a, \hat b)``.  In reverse topological
order,

    u = \sum_s c_{as} R_{as}^T \hat s,        \hat a = P_a u.

The random numbers of ``a`` (its draws ``c_a``, its ``P_a``, the labels of its
out-edges) are independent of each other and of every ``\hat b`` with ``b``
after ``a``, and have mean one, so ``\mu_a = \sum_s J_{as}^T \mu_s`` and, for
``b`` after ``a``, ``C(a, b) = \sum_s J_{as}^T C(s, b)``.  The variance of
``u`` follows from the multinomial moments ``E[c_s c_t] = 1 - 1/k + (d/k)[s=t]``
(``c = 1`` where ``a`` keeps every edge), with ``x_s = J_{as}^T \mu_s``:

    Cov(u) = (d/k) \sum_s (x_s - \bar x)(x_s - \bar x)^T            (a's own draws)
             + (1 - 1/k) \sum_{s,t} J_s^T C(s,t) J_t + (d/k) \sum_s J_s^T C(s,s) J_s
             + (1 + (d-1)/k) \sum_s X_s(C(s,s) + \mu_s \mu_s^T),

the sum over all ``d`` successors (those off the paths have ``x_s = 0``),
``\bar x`` their mean, and ``X_s(Z) = E[R_s^T Z R_s] - J_s^T Z J_s`` the extra
second moment of a random label (0 for a fixed one).  Then
``C(a, a) = Cov(u) + D_a(Cov(u) + \mu_a \mu_a^T)`` with
``D(A) = E[P A P] - A``: for a sampling ``P`` (``k`` of ``d`` entries, with
replacement) ``D(A) = (d Diag(A) - A) / k``; for a Rademacher ``P``
``D(A) = (A^T + tr(A) I - 2 Diag(A)) / k`` (both on each block of entries
that meet the same ``P``; entries meeting independent ``P``'s get 0).  The
variance of an input's estimate is the diagonal of ``C(\theta, \theta)``.

On a graph of numbers with only edge draws this is the recursion of
:func:`minirad.randomized.sampling.path_sampling_variance`; on a chain with
``P``'s at its vectors it is the exact variance of random matrix injection.
The covariance is dense over every entry of the vertices on paths to the
output, so it is refused above ``max_entries``.

>>> from minirad import examples
>>> g = examples.independent_paths(2, 1, partials="random", rng=0)
>>> estimate_variance(g, draws=np.array([1, 0, 0, 0])).round(6).tolist()  # theta draws once
[[0.047285]]
"""

from __future__ import annotations

import math

import numpy as np

from ..exact.overflow import check_finite
from ..graph.labels import FLOATS
from ..graph.lcg import LCG, reachable, takes_graph_or_function
from .stacked import Layout

__all__ = ["EXACT_VARIANCE_LIMIT", "ProjectionLaw", "SourceProjection", "StoredProjection",
           "estimate_variance"]

#: the exact variance keeps a dense covariance over at most this many entries
EXACT_VARIANCE_LIMIT = 3000
# a random edge label's extra second moment is formed from at most this many dense blocks
# entries (the products of its parts with the adjoint's second moment)
_EXTRA_WORK = 50_000_000


class ProjectionLaw:
    """The law of a random ``P = R R^T`` on the entries of an array: ``method``
    (``"sample"``: ``k`` of the ``d`` entries drawn with replacement, each weighted
    ``d / k``; ``"rademacher"``: ``R`` of ``±1/sqrt(k)``), acting along ``layout``
    (one independent ``P`` per row of the layout).

    >>> law = ProjectionLaw(Layout((2,)), "sample", 1)
    >>> (law.extra(np.eye(2)) + 0.0).tolist()          # Var of P's diagonal: (d - 1) / k
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def __init__(self, layout: Layout, method: str, k: int):
        self.layout, self.method, self.k = layout, method, int(k)

    def extra(self, A: np.ndarray) -> np.ndarray:
        """``E[P A P] - A`` for a matrix ``A`` over the array's entries."""
        d, k = self.layout.d, self.k
        out = np.zeros_like(A)
        eye = np.eye(d)
        for rows in self.layout.index:              # (others, d): the entries of one P
            flat = rows.ravel()
            block = A[np.ix_(flat, flat)].reshape(rows.shape + rows.shape)   # (o, p, o', q)
            if self.method == "sample":
                extra = block * (d * eye[None, :, None, :] - 1.0) / k
            else:
                swapped = block.transpose(0, 3, 2, 1)                   # B[o, q, o', p]
                trace = np.einsum("arbr->ab", block)                    # tr of each d x d
                same = np.einsum("apbp->apb", block)                    # B[o, p, o', p]
                extra = (swapped + eye[None, :, None, :] * (trace[:, None, :, None]
                                                           - 2.0 * same[:, :, :, None])) / k
            out[np.ix_(flat, flat)] = extra.reshape(len(flat), len(flat))
        return out


class SourceProjection:
    """A random edge label ``J P`` with ``P`` (:class:`ProjectionLaw`) on the source:
    ``X(Z) = D(J^T Z J)``."""

    def __init__(self, law: ProjectionLaw):
        self.law = law

    def extra(self, J: np.ndarray, Z: np.ndarray) -> np.ndarray:
        return self.law.extra(J.T @ Z @ J)


class StoredProjection:
    """A random edge label that keeps an array ``A`` projected row by row (the
    activation of ``x @ W`` sampled): ``label(A')`` is the edge's dense Jacobian
    with ``A'`` in place of ``A`` (linear in ``A'``), ``law`` the ``P`` on ``A``'s
    entries.  The label is a sum over the entries of the ``P``'s, so its extra
    second moment is a sum of products of the label's parts (see the module
    docstring of :mod:`minirad.randomized.moments`)."""

    def __init__(self, A: np.ndarray, label, law: ProjectionLaw):
        self.A, self.label, self.law = np.asarray(A, dtype=np.float64), label, law

    def _part(self, values: np.ndarray, entries: np.ndarray) -> np.ndarray:
        array = np.zeros(self.A.size)
        array[entries] = values
        return self.label(array.reshape(self.A.shape))

    def extra(self, J: np.ndarray, Z: np.ndarray) -> np.ndarray:
        law, flat = self.law, self.A.reshape(-1)
        d, k = law.layout.d, law.k
        parts = law.layout.rows * d * (d if law.method == "rademacher" else 1)
        if parts * J.size * max(J.shape) > _EXTRA_WORK:
            raise ValueError(f"the exact variance of this injected edge sums {parts:,} products "
                             f"of {J.shape[0]} x {J.shape[1]} blocks, too many to form; "
                             f"estimate the variance by Monte Carlo (injected estimates "
                             f"against the exact Jacobian)")
        out = np.zeros((J.shape[1], J.shape[1]))
        for rows in law.layout.index:               # (others, d): one P
            if law.method == "sample":
                # label = sum_p xi_p F_p with Cov(xi_p, xi_q) = (d [p = q] - 1) / k
                whole = self._part(flat[rows.ravel()], rows.ravel())
                out -= whole.T @ Z @ whole / k
                for p in range(d):
                    F = self._part(flat[rows[:, p]], rows[:, p])
                    out += (d / k) * (F.T @ Z @ F)
                continue
            # label = sum_{p,q} P_pq H_pq, H_pq: column p of the row moved to column q;
            # Cov(P_pq, P_p'q') = ([p=p'][q=q'] + [p=q'][q=p'] - 2 [p=q=p'=q']) / k
            H = [[self._part(flat[rows[:, p]], rows[:, q]) for q in range(d)] for p in range(d)]
            for p in range(d):
                for q in range(d):
                    ZH = Z @ H[p][q]
                    out += (H[p][q].T @ ZH + H[q][p].T @ ZH) / k
                out -= 2.0 * H[p][p].T @ Z @ H[p][p] / k
        return out


def _dense(label, source_shape, target_shape) -> np.ndarray:
    """An edge label as a matrix (target entries x source entries)."""
    if isinstance(label, float):
        return np.array([[label]])
    return label.to_dense().reshape(math.prod(target_shape), math.prod(source_shape))


@takes_graph_or_function
def estimate_variance(g: LCG, draws: np.ndarray | None = None, vertex_laws=None,
                      edge_laws=None, max_entries: int = EXACT_VARIANCE_LIMIT,
                      covariance: bool = False) -> np.ndarray:
    """The exact variance of every entry of the estimate, (output entries, input entries),
    or with ``covariance`` the covariance of each row of the estimate, (output entries,
    input entries, input entries).

    ``draws[v]`` is how many out-edges vertex ``v`` draws (Algorithm 1; 0 or None:
    it keeps them all); ``vertex_laws`` maps vertices to the :class:`ProjectionLaw`
    of the ``P`` that multiplies their adjoint; ``edge_laws`` maps edge numbers to a
    :class:`SourceProjection` or :class:`StoredProjection`.  Raises ``ValueError``
    when the vertices on paths to an output hold more than ``max_entries`` entries.
    """
    draws = np.zeros(g.n_vertices, dtype=np.int64) if draws is None else draws
    vertex_laws = {} if vertex_laws is None else vertex_laws
    edge_laws = {} if edge_laws is None else edge_laws
    sizes = (np.ones(g.n_vertices, dtype=np.int64) if g.algebra is FLOATS else
             np.array([g.size(v) for v in range(g.n_vertices)], dtype=np.int64))
    in_first = np.concatenate([[0], np.cumsum(sizes[list(g.inputs)])]).astype(np.int64)
    n_in = int(in_first[-1])
    rows = np.zeros((int(sizes[list(g.outputs)].sum()), n_in, n_in))
    from_inputs = reachable(g, g.inputs)
    order, ptr = g.out_edges_csr
    blocks: dict[int, np.ndarray] = {}
    row = 0
    for y in g.outputs:
        on = from_inputs & reachable(g, [y], direction="reverse")
        vertices = np.flatnonzero(on)
        total = int(sizes[vertices].sum())
        if total > max_entries:
            raise ValueError(f"the exact variance keeps a dense {total} x {total} covariance "
                             f"for output {g.names[y]}, more than max_entries={max_entries}; "
                             f"estimate the variance by Monte Carlo or raise max_entries")
        first = np.full(g.n_vertices + 1, -1, dtype=np.int64)
        first[vertices] = np.concatenate([[0], np.cumsum(sizes[vertices])[:-1]])
        for i in range(int(sizes[y])):
            if len(vertices) and on[y]:
                with np.errstate(over="ignore", invalid="ignore"):  # checked below
                    cov = _covariance(g, y, i, vertices, first, sizes, draws, vertex_laws,
                                      edge_laws, order, ptr, blocks, total)
                spans = [(in_first[col], np.arange(first[theta], first[theta] + sizes[theta]))
                         for col, theta in enumerate(g.inputs) if on[theta]]
                cols = np.concatenate([np.arange(start, start + len(span))
                                       for start, span in spans]) if spans else np.zeros(0, int)
                local = np.concatenate([span for _, span in spans]) if spans else cols
                rows[row][np.ix_(cols, cols)] = cov[np.ix_(local, local)]
            row += 1
    # squared products can leave the float range where the Jacobian itself does not
    check_finite(g, np.where(np.isfinite(rows).all(axis=2), 0.0, np.inf),
                 "the exact variance of the estimate")
    if covariance:
        return rows
    # rounding can leave -1e-17 where the variance is 0
    return np.maximum(np.diagonal(rows, axis1=1, axis2=2), 0.0).copy()


def _out_blocks(g, a, on, succ, first, sizes, mean, blocks):
    """For vertex ``a`` and its out-edges ``on`` to the successors ``succ`` on the paths:
    the successors' entries (``index``) and which successor each is (``owner``), the
    transposed blocks side by side (``Bt``, ``n_a`` x successor entries), the means they
    carry back (``x``, one row per successor) and the blocks (``J``; None for partials,
    which ``g.partials`` holds)."""
    if g.algebra is FLOATS:   # 1 x 1 blocks: the partials themselves, at one go
        p = g.partials[on]
        index = first[succ]
        x = (p * mean[index])[:, None]
        return index, np.arange(len(on)), p[None, :], x, None
    J = []
    for e, s in zip(on.tolist(), succ.tolist()):
        if e not in blocks:
            blocks[e] = _dense(g.labels[e], g.shape(a), g.shape(s))
        J.append(blocks[e])
    index = np.concatenate([np.arange(first[s], first[s] + sizes[s]) for s in succ])
    owner = np.repeat(np.arange(len(succ)), sizes[succ])
    Bt = np.hstack([j.T for j in J])
    x = np.array([j.T @ mean[first[s]:first[s] + sizes[s]] for j, s in zip(J, succ)])
    return index, owner, Bt, x, J


def _covariance(g, y, entry, vertices, first, sizes, draws, vertex_laws, edge_laws, order,
                ptr, blocks, total) -> np.ndarray:
    """The covariance of the adjoint estimates over the entries of ``vertices`` (on
    paths to output ``y``), for the seed at entry ``entry`` of ``y``."""
    mean = np.zeros(total)
    cov = np.zeros((total, total))
    for a in vertices[::-1].tolist():
        n_a = int(sizes[a])
        here = slice(first[a], first[a] + n_a)
        if a == y:
            mu = np.zeros(n_a)
            mu[entry] = 1.0
            spread = np.zeros((n_a, n_a))
        else:
            out = order[ptr[a]:ptr[a + 1]]
            on = out[first[g.targets[out]] >= 0]
            succ = g.targets[on]
            index, owner, Bt, x, J = _out_blocks(g, a, on, succ, first, sizes, mean, blocks)
            mu = x.sum(axis=0)
            after = slice(first[a] + n_a, total)
            cross = Bt @ cov[index, after]
            cov[here, after] = cross
            cov[after, here] = cross.T
            inner = cov[np.ix_(index, index)]
            propagated = Bt @ inner @ Bt.T
            d, k = len(out), int(draws[a])
            extra = np.zeros((n_a, n_a))
            for i, (e, s) in enumerate(zip(on.tolist(), succ.tolist()) if edge_laws else ()):
                if e in edge_laws:
                    j = J[i] if J is not None else np.array([[g.partials[e]]])
                    span = slice(first[s], first[s] + sizes[s])
                    second = cov[span, span] + np.outer(mean[span], mean[span])
                    extra += edge_laws[e].extra(j, second)
            if k == 0:
                spread = propagated + extra
            else:
                if len(owner) == len(succ):   # one entry per successor: C(s, s) diagonal
                    own = (Bt * np.diag(inner)) @ Bt.T
                else:
                    same = owner[:, None] == owner[None, :]
                    own = Bt @ (inner * same) @ Bt.T
                centred = x - mu / d
                local = (centred.T @ centred + (d - len(succ)) * np.outer(mu / d, mu / d)) * d / k
                spread = (local + (1.0 - 1.0 / k) * propagated + (d / k) * own
                          + (1.0 + (d - 1.0) / k) * extra)
        if a in vertex_laws:
            spread = spread + vertex_laws[a].extra(spread + np.outer(mu, mu))
        mean[here] = mu
        cov[here, here] = spread
    return cov
