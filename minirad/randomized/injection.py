"""Random matrix injection on the vector LCG (RAD paper Sec. 3.2, eqs. 2-6).

Insert a random ``P = R R^T`` with ``E[P] = I`` where the graph's paths
pass, so the Jacobian becomes an unbiased estimate that needs less memory:

* :func:`inject_vertex`: P at a vertex (every path through it passes P
  once): with ``method="sample"`` this samples the vertex's scalar copies,
  the paper's remark below eq. 3;
* :func:`inject_edge`: P on one edge; on an ``x @ W`` edge it samples (or
  projects) the stored activation along the contracted axis, keeping only
  ``k`` numbers per row: ``S_P[dh/dW]`` of Sec. 4.2; on a diagonal edge it
  samples the diagonal (eq. 8's ``S_P[dphi_i/dC_{i-1}]``); the draws can be
  given (``picks``) instead of drawn; :func:`inject_edges` does many edges;
* :func:`sample_activations`: the paper's scheme for neural networks, every
  stored activation sampled, different rows drawing different samples.

``k`` is a count (an int >= 1) or a fraction of d (a float in (0, 1],
rounded up).  The graph records every injection in ``g.injections``.

>>> import numpy as np
>>> from minirad import ops, trace
>>> from minirad.graph.memory import memory
>>> X = np.ones((4, 10), np.float32)
>>> g = trace(lambda W: ops.relu(X @ W).sum(), np.ones((10, 3), np.float32))
>>> memory(g).total                    # X (40 floats) and the ReLU mask (12 bits)
161.5
>>> h = sample_activations(g, 0.2, rng=0)
>>> memory(h).total                    # 2 of 10 entries per row: 8 floats, and the mask
33.5
>>> h.injections[0]["k"], h.labels[0].label()
(2, 'outer, sampled k=2')
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from ..graph.lcg import LCG, relabelled
from ..graph.operators import (
    Composed,
    Diagonal,
    InjectedMatMul,
    MatMul,
    Projection,
    Retained,
    compose,
    fresh_key,
    index_bits,
)
from ..rng import as_generator

METHODS = ("sample", "rademacher")


def draws(d: int, k) -> int:
    """The number of columns of R: ``k`` itself, or ``ceil(k * d)`` for a fraction.

    >>> draws(784, 0.1), draws(300, 0.1), draws(5, 3)
    (79, 30, 3)
    """
    if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)):
        raise TypeError(f"k must be a count (int >= 1) or a fraction (float in (0, 1]), not "
                        f"{type(k).__name__}")
    if isinstance(k, (int, np.integer)):
        if k < 1:
            raise ValueError(f"k = {k}: a count of draws must be at least 1")
        return int(k)
    if not 0 < k <= 1:
        raise ValueError(f"k = {k}: a fraction must lie in (0, 1]; give an int for a count")
    return max(1, math.ceil(round(k * d, 9)))


def _check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    return method


def random_basis(d: int, k: int, method: str = "sample", rows=None, rng=None,
                 dtype=np.float64) -> np.ndarray:
    """R of shape (d, k), or (rows, d, k) with one independent draw per row, such that
    ``E[R R^T] = I``: sampled scaled basis vectors sqrt(d/k) e_i (i uniform, with
    replacement) or Rademacher entries ±1/sqrt(k).

    >>> R = random_basis(4, 2, rng=0)
    >>> (R ** 2).sum(axis=1)            # the diagonal of P = R R^T: (d/k) x counts
    array([0., 0., 2., 2.])
    """
    _check_method(method)
    rng = as_generator(rng)
    shape = (d, k) if rows is None else (rows, d, k)
    if method == "rademacher":
        return (rng.choice(np.array([-1.0, 1.0]), size=shape) / math.sqrt(k)).astype(dtype)
    R = np.zeros(shape, dtype=dtype)
    picks = rng.integers(0, d, size=shape[:-2] + (k,))
    scale = math.sqrt(d / k)
    if rows is None:
        R[picks, np.arange(k)] = scale
    else:
        R[np.arange(rows)[:, None], picks, np.arange(k)[None, :]] = scale
    return R


def inject_vertex(g: LCG, vertex, k, method: str = "sample", axis=None,
                  batch_axis=None, per_row: bool = True, rng=None) -> LCG:
    """P at ``vertex``: every edge leaving it becomes ``J ∘ P`` (an output vertex:
    every edge into it ``P ∘ J``).  P acts along ``axis`` (default: all axes
    but ``batch_axis``, flattened); with a ``batch_axis``, ``per_row`` draws
    one P per row ("different sample") or one for all rows ("same sample").

    The projection stays a separate factor of each edge (``J ∘ P``), so what
    the edges retain is unchanged: vertex injection changes which paths are
    followed, not memory.  To keep less, inject on the edges that keep
    activations (:func:`inject_edge`, :func:`sample_activations`).

    >>> from minirad.graph.scalarize import from_chain
    >>> g = from_chain([np.ones((4, 1)), np.ones((1, 4))])    # theta -> v1 (4) -> y
    >>> h = inject_vertex(g, "v1", 2, rng=0)                 # keep 2 of the 4 copies of v1
    >>> h.labels[1].label(), h.injections[0]["k"]
    ('dense∘P k=2', 2)
    """
    v = g.index(vertex)
    shape = g.shapes[v]
    nd = len(shape)
    for given, what in ((axis, "axis"), (batch_axis, "batch_axis")):
        if given is not None and not -nd <= int(given) < nd:
            raise ValueError(f"{what} {given} is out of range for {g.names[v]} of shape {shape}")
    rest = [i for i in range(nd) if (batch_axis is None or i != int(batch_axis) % nd)
            and (axis is None or i == int(axis) % nd)]
    d = math.prod(shape[i] for i in rest)
    kk = draws(d, k)
    rows = shape[int(batch_axis)] if batch_axis is not None and per_row else None
    R = random_basis(d, kk, method, rows, rng, np.result_type(g.dtypes[v], np.float32))
    P = Projection(shape, R, axis, batch_axis, method)
    out = [e for e in range(g.n_edges) if g.sources[e] == v]
    touched = out if out else [e for e in range(g.n_edges) if g.targets[e] == v]
    labels = {e: compose(g.labels[e], P) if out else compose(P, g.labels[e]) for e in touched}
    return relabelled(g, labels, [dict(kind="vertex", at=g.names[v], method=method, k=kk, d=d,
                                    axis=axis, batch_axis=batch_axis,
                                    per_row=bool(per_row and batch_axis is not None),
                                    edges=[int(e) for e in touched])])


def _project_rows(S: np.ndarray, axis: int, k: int, method: str, per_row: bool, rng,
                  picks=None):
    """S with its ``axis`` replaced by ``S P`` (P = R R^T), one draw per row or shared
    (``picks``: the sampled indices, given instead of drawn)."""
    moved = np.moveaxis(S, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    n, d = rows.shape
    if method == "sample":
        if picks is None:
            picks = as_generator(rng).integers(0, d, size=(n, k) if per_row else (1, k))
        else:
            picks = _given_picks(picks, d, n if per_row else 1)
        # (d/k) x how often each entry was drawn, one row per draw (np.bincount: np.add.at
        # is slow before numpy 1.25)
        n_draws = len(picks)
        counts = np.bincount((np.arange(n_draws)[:, None] * d + picks).ravel(),
                             minlength=n_draws * d).reshape(n_draws, d)
        projected = rows * (counts * (d / k)).astype(S.dtype)
    else:
        R = random_basis(d, k, "rademacher", n if per_row else None, as_generator(rng),
                         S.dtype)
        if per_row:
            projected = np.einsum("nk,ndk->nd", np.einsum("nd,ndk->nk", rows, R), R)
        else:
            projected = (rows @ R) @ R.T
    return np.moveaxis(projected.reshape(moved.shape), -1, axis), n


def inject_edge(g: LCG, edge, k=None, method: str = "sample", per_row: bool = True,
                rng=None, picks=None) -> LCG:
    """P on one edge.  On a multiplication edge (``x @ W`` seen from W, kinds
    ``outer``/``matmul``) the stored operand S is replaced by its projection along
    the contracted axis, ``k`` numbers kept per row (``per_row``: each row its own
    draw, else one draw for all).  On a diagonal edge, or a composition whose
    innermost factor is a diagonal (a loss row ``sum ∘ diag(r)``), sampling folds
    into the diagonal (P is diagonal too), which then keeps only its ``k``
    sampled entries and their indices.  Any other edge becomes ``J ∘ P`` with P
    over the source array.  ``edge`` is an edge number or a (source, target) pair.

    ``picks`` gives the draws of a ``"sample"`` injection instead of ``k`` and
    ``rng``: the indices (with replacement) into the sampled axis, flattened,
    shape ``(k,)``, or ``(rows, k)`` for a per-row multiplication edge; then
    ``P = (d/k) sum_j e_{picks_j} e_{picks_j}^T``.  Two diagonal edges that keep
    the same array and are given the same picks share the sampled copy: one
    sample of a state serving two uses, as in the RAD paper's eq. 8.

    >>> from minirad import trace
    >>> X = np.arange(12.0).reshape(3, 4)
    >>> g = trace(lambda W: (X @ W).sum(), np.ones((4, 2)))
    >>> h = inject_edge(g, ("W", "v1"), 2, rng=0)     # each row of X keeps 2 of its 4
    >>> h.labels[0].retained_bytes, g.labels[0].retained_bytes
    (48.0, 96.0)
    >>> g = trace(lambda x: np.exp(x).sum(), np.zeros(4))
    >>> h = inject_edge(g, ("x", "v1"), picks=[3, 0, 3])   # P = diag(4/3 x [1, 0, 0, 2])
    >>> h.labels[0].d, h.labels[0].retained_bytes         # 3 floats and 3 one-byte indices
    (array([1.33333333, 0.        , 0.        , 2.66666667]), 27.0)
    """
    return inject_edges(g, [edge], k, method, per_row, rng,
                        None if picks is None else [picks])


def inject_edges(g: LCG, edges, k=None, method: str = "sample", per_row: bool = True,
                 rng=None, picks=None) -> LCG:
    """:func:`inject_edge` on each of ``edges`` (drawing in the order given, so the same
    as one call per edge), building the new graph once.  ``picks``, when given, has
    one entry per edge.

    >>> from minirad import trace
    >>> g = trace(lambda x: (np.exp(x) * x).sum(), np.zeros(4))
    >>> h = inject_edges(g, [("x", "v1"), ("x", "v2")], 2, rng=0)   # the two uses of x
    >>> [(r["edge"], r["k"]) for r in h.injections]
    [(['x', 'v1'], 2), (['x', 'v2'], 2)]
    """
    _check_method(method)
    if isinstance(edges, (int, np.integer, str)):
        raise TypeError("edges is a list of edges (numbers or (source, target) pairs)")
    edges = list(edges)
    if picks is not None:
        if method != "sample":
            raise ValueError(f"picks are the indices of a sampling; method {method!r} does not "
                             f"draw indices (use method='sample')")
        if isinstance(picks, np.ndarray) and picks.ndim == 1 or len(picks) != len(edges):
            raise ValueError(f"give one array of picks per edge ({len(edges)} edges)")
    elif k is None:
        raise ValueError("give k (a count of draws or a fraction of d) or the picks themselves")
    else:
        rng = as_generator(rng)   # one stream for all the edges
    labels, records = {}, []
    for i, edge in enumerate(edges):
        e = g.edge_index(*edge) if isinstance(edge, (tuple, list)) else int(edge)
        if not 0 <= e < g.n_edges:
            raise ValueError(f"edge {edge} does not exist; the graph has {g.n_edges} edges")
        given = None if picks is None else picks[i]
        labels[e], kk, d = _injected(g.labels[e], k, method, per_row, rng, given)
        u, v = int(g.sources[e]), int(g.targets[e])
        records.append(dict(kind="edge", edge=[g.names[u], g.names[v]], method=method, k=kk,
                            d=d, per_row=bool(per_row), given_picks=given is not None))
    return relabelled(g, labels, records)


def _given_picks(picks, d: int, rows: int) -> np.ndarray:
    """Picks as an int array (rows, k) of indices in [0, d)."""
    picks = np.asarray(picks)
    if picks.size == 0 or not np.issubdtype(picks.dtype, np.integer):
        raise ValueError(f"picks must be a non-empty array of integer indices, not "
                         f"{picks.dtype} of shape {picks.shape}")
    if picks.ndim == 1 and rows == 1:
        picks = picks[None, :]
    if picks.ndim != 2 or picks.shape[0] != rows:
        raise ValueError("picks must have shape (k,)" + (f" or ({rows}, k), one draw per row"
                                                          if rows > 1 else "")
                         + f", not {picks.shape}")
    if picks.min() < 0 or picks.max() >= d:
        raise ValueError(f"picks must be indices 0..{d - 1} into the sampled axis (d = {d}); "
                         f"got values from {picks.min()} to {picks.max()}")
    return picks.astype(np.int64)


def _sampled_diagonal(D: Diagonal, k, rng, picks) -> tuple[Diagonal, int, int]:
    """diag(D.d) P = diag(D.d * p) for a sampling P: the diagonal keeps k entries."""
    d = D.in_size
    if picks is None:
        kk = draws(d, k)
        picks = as_generator(rng).integers(0, d, size=(1, kk))
    else:
        picks = _given_picks(picks, d, 1)
        kk = picks.shape[1]
    weights = np.bincount(picks[0], minlength=d) * (d / kk)
    full = np.broadcast_to(D.d, D.in_shape).reshape(-1)
    sampled = (full * weights.astype(D.dtype)).reshape(D.in_shape)
    digest = hashlib.blake2b(picks.tobytes() + str(d).encode(), digest_size=8).hexdigest()
    base = D.retained[0].key if D.retained else fresh_key("diag")
    kept = (Retained(f"{base}:sample:{digest}", kk * (D.dtype.itemsize * 8 + index_bits(d)),
                     what=f"{kk} sampled entries of the diagonal and their indices"),)
    return Diagonal(sampled, D.in_shape, kept), kk, d


def _injected(label, k, method: str, per_row: bool, rng, picks):
    """The label with P injected, k, and d."""
    if method == "sample" and isinstance(label, Diagonal):
        return _sampled_diagonal(label, k, rng, picks)
    if method == "sample" and isinstance(label, Composed) and isinstance(label.parts[-1],
                                                                           Diagonal):
        inner, kk, d = _sampled_diagonal(label.parts[-1], k, rng, picks)
        return Composed(label.parts[:-1] + (inner,)), kk, d
    if isinstance(label, MatMul) and label.gathered is not None:
        # the stored operand is gathered from a smaller source (im2col patches of an image):
        # sample the source, one draw per example (its first axis), and gather again
        source, gather = label.gathered
        batch = source.shape[0] if per_row and source.ndim > 1 else 1
        rows = source.reshape(batch, -1)
        d = rows.shape[1]
        kk = draws(d, k) if picks is None else _given_picks(picks, d, batch).shape[1]
        sampled, _ = _project_rows(rows, 1, kk, method, per_row, rng, picks)
        stored = gather.apply(sampled.reshape(source.shape).astype(source.dtype, copy=False))
        kept = (Retained(fresh_key("sampled"), batch * kk * source.dtype.itemsize * 8,
                         what=f"{method} of the gathered source, k={kk} per row"),)
        return (InjectedMatMul(stored.astype(label.stored.dtype), label.side, label.in_shape,
                               kk, method, kept), kk, d)
    if isinstance(label, MatMul):
        S = label.stored
        axis = -1 if label.side == "left" else (0 if S.ndim == 1 else -2)
        d = S.shape[axis]
        n_rows = S.size // d
        kk = (draws(d, k) if picks is None
              else _given_picks(picks, d, n_rows if per_row else 1).shape[1])
        projected, rows = _project_rows(S, axis, kk, method, per_row, rng, picks)
        kept = (Retained(fresh_key("sampled"), rows * kk * S.dtype.itemsize * 8,
                         what=f"{method} of the stored operand, k={kk} per row"),)
        return InjectedMatMul(projected, label.side, label.in_shape, kk, method, kept), kk, d
    shape = label.in_shape
    d = math.prod(shape)
    dtype = np.result_type(label.dtype, np.float32)
    if picks is None:
        kk = draws(d, k)
        R = random_basis(d, kk, method, None, rng, dtype)
    else:
        given = _given_picks(picks, d, 1)[0]
        kk = len(given)
        R = np.zeros((d, kk), dtype=dtype)
        R[given, np.arange(kk)] = math.sqrt(d / kk)
    return compose(label, Projection(shape, R, None, None, method)), kk, d


def sample_activations(g: LCG, k, method: str = "sample", per_row: bool = True,
                       rng=None) -> LCG:
    """The paper's activation sampling (Sec. 4.2): every edge that keeps an activation
    for a weight gradient (kind ``outer``) gets its activation sampled or projected
    to ``k`` entries per row.  Other Jacobians (ReLU masks, the loss) are exact, so
    along any path from a weight to the loss exactly one P is met."""
    edges = [e for e, label in enumerate(g.labels) if label.kind == "outer"]
    return inject_edges(g, edges, k, method, per_row, as_generator(rng)) if edges else g
