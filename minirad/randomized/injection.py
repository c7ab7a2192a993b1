"""Random matrix injection on the LCG (RAD paper Sec. 3.2, eqs. 2-6), on any graph.

Insert a random ``P = R R^T`` with ``E[P] = I`` where the graph's paths
pass, so the Jacobian becomes an unbiased estimate that needs less memory:

* :func:`inject_vertex`: P at a vertex (every path through it passes P
  once): with ``law="sample"`` this samples the vertex's scalar copies,
  the paper's remark below eq. 3 (a number has one copy: there P = 1);
* :func:`inject_edge`: P on one edge; on an ``x @ W`` edge it samples (or
  projects) the stored activation along the contracted axis, keeping only
  ``k`` numbers per row: ``S_P[dh/dW]`` of Sec. 4.2 (on a convolution, the
  image's spatial positions per example and channel, the paper's Fig. 4); on
  a diagonal edge it samples the diagonal (eq. 8's ``S_P[dphi_i/dC_{i-1}]``);
  the draws can be given (``picks``) instead of drawn; :func:`inject_edges`
  does many edges;
* :func:`sample_activations`: the paper's scheme for neural networks, every
  stored activation sampled, different rows drawing different samples.

``k`` is a count (an int >= 1) or a fraction of d (a float in (0, 1],
rounded up).  The graph records every injection in ``g.injections``.  A
chain of Jacobians ``J_L ... J_1`` (the paper's Fig. 2c) is the graph
:func:`minirad.graph.scalarize.from_chain` builds, with vertices ``theta``,
``v1``, ..., ``y``; injecting at ``v1`` is the paper's ``J_2 P J_1``.

The statistics, without sampling or by many samples at once:

* :func:`injected_jacobians`: ``n`` estimates with fresh ``P``'s at given
  vertices, in one reverse sweep over the stack of samples;
* :func:`injection_variance` and :func:`activation_sampling_variance`: the exact
  variance of every entry of those estimates
  (:func:`minirad.randomized.moments.estimate_variance`).

>>> import numpy as np
>>> from minirad import ops, trace
>>> from minirad.graph.memory import retained_memory
>>> X = np.ones((4, 10), np.float32)
>>> g = trace(lambda W: ops.relu(X @ W).sum(), np.ones((10, 3), np.float32))
>>> retained_memory(g).total                    # X (40 floats) and the ReLU mask (12 bits)
161.5
>>> h = sample_activations(g, 0.2, rng=0)
>>> retained_memory(h).total                    # 2 of 10 entries per row: 8 floats, and the mask
33.5
>>> h.injections[0]["k"], h.labels[0].label()
(2, 'outer, sampled k=2')
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from .._arguments import number_of_estimates
from ..graph.lcg import LCG, relabelled, takes_graph_or_function
from ..graph.operators import (
    Composed,
    Diagonal,
    Im2Col,
    InjectedMatMul,
    MatMul,
    Operator,
    ProjectedMatMul,
    Projection,
    Retained,
    compose,
    fresh_key,
    index_bits,
)
from ..graph.patches import ProjectedPatches, SampledPatches
from ..rng import as_generator
from .moments import (
    EXACT_VARIANCE_LIMIT,
    ProjectionLaw,
    SourceProjection,
    StoredProjection,
    estimate_variance,
)
from .stacked import Layout, reverse_stack, samples_per_chunk

__all__ = ["LAWS", "activation_sampling_variance", "draws", "inject_edge", "inject_edges",
           "inject_vertex", "injected_jacobians", "injection_variance", "random_basis",
           "random_projection", "sample_activations"]

LAWS = ("sample", "rademacher")


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


def _check_law(law: str) -> str:
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, not {law!r}")
    return law


def _signs(rng, shape) -> np.ndarray:
    """Independent ±1 (float64): the draw behind every Rademacher ``R``, so that one
    seed gives the signs of :func:`minirad.studies.nn.activations.signs` too."""
    return 2.0 * rng.integers(2, size=shape, dtype=np.int8) - 1.0


def random_basis(d: int, k: int, law: str = "sample", n_rows=None, dtype=np.float64, *,
                 rng=None) -> np.ndarray:
    """R of shape (d, k), or (n_rows, d, k) with one independent draw per row, such that
    ``E[R R^T] = I``: sampled scaled basis vectors sqrt(d/k) e_i (i uniform, with
    replacement) or Rademacher entries ±1/sqrt(k).

    >>> R = random_basis(4, 2, rng=0)
    >>> (R ** 2).sum(axis=1)            # the diagonal of P = R R^T: (d/k) x counts
    array([0., 0., 2., 2.])
    """
    _check_law(law)
    rng = as_generator(rng)
    shape = (d, k) if n_rows is None else (n_rows, d, k)
    if law == "rademacher":
        return (_signs(rng, shape) / math.sqrt(k)).astype(dtype)
    R = np.zeros(shape, dtype=dtype)
    picks = rng.integers(0, d, size=shape[:-2] + (k,))
    scale = math.sqrt(d / k)
    if n_rows is None:
        R[picks, np.arange(k)] = scale
    else:
        R[np.arange(n_rows)[:, None], picks, np.arange(k)[None, :]] = scale
    return R


def random_projection(d: int, k, law: str = "sample", *, rng=None) -> np.ndarray:
    """One random ``P = R R^T`` (d x d) with ``E[P] = I``: ``k`` (a count, or a
    fraction of ``d``) sampled entries or Rademacher columns (:func:`random_basis`).

    >>> random_projection(3, 2, rng=0)   # entries 2 and 1 drawn: (d/k) x counts
    array([[0. , 0. , 0. ],
           [0. , 1.5, 0. ],
           [0. , 0. , 1.5]])
    """
    _check_law(law)
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d (the dimension) must be an int >= 1, got {d!r}")
    d, k, rng = int(d), draws(int(d), k), as_generator(rng)
    # the draws random_basis makes, but P formed from whole numbers, so that its entries
    # are exactly (d/k) x counts and (sum of signs) / k
    if law == "sample":
        return np.diag(np.bincount(rng.integers(0, d, size=k), minlength=d) * (d / k))
    S = _signs(rng, (d, k))
    return S @ S.T / k


# ------------------------------------------------------------------ at a vertex
def _layout(g: LCG, v: int, axis, batch_axis, per_row: bool) -> Layout:
    shape = g.shape(v)
    nd = len(shape)
    for given, what in ((axis, "axis"), (batch_axis, "batch_axis")):
        if given is not None and not -nd <= int(given) < nd:
            raise ValueError(f"{what} {given} is out of range for {g.names[v]} of shape {shape}")
    if axis is not None and batch_axis is not None and int(axis) % nd == int(batch_axis) % nd:
        raise ValueError("the projection axis and the batch axis must differ")
    return Layout(shape, axis, batch_axis, per_row)


@takes_graph_or_function
def inject_vertex(g: LCG, vertex, k, law: str = "sample", axis=None,
                  batch_axis=None, per_row: bool = True, *, rng=None) -> LCG:
    """Random matrix injection at a vertex: every edge leaving it becomes ``J ∘ P``.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    vertex : str or int
        Where P goes, by name or number (at an output, every edge into it becomes
        ``P ∘ J``).
    k : int or float
        Columns of R: a count ``>= 1``, or a fraction of the entries, rounded up.
    law : {"sample", "rademacher"}, optional
        The random law of ``P = R R^T`` (:data:`LAWS`): scaled basis vectors drawn
        uniformly with replacement (``"sample"``, the default) or Rademacher
        columns.
    axis : int, optional
        The axis P acts along (default: all axes but ``batch_axis``, flattened).
    batch_axis : int, optional
        The axis along which examples lie.
    per_row : bool, optional
        With a batch axis (or on a multiplication edge), draw one P per row
        ("different sample", the default) or one for all rows ("same sample").
    rng : numpy.random.Generator or int, optional
        The generator, or a seed (same seed, same draws).

    Returns
    -------
    LCG
        The graph with P injected, the injection recorded in ``g.injections``.

    Raises
    ------
    ValueError
        For an unknown law, a bad ``k``, an axis out of range or equal to the
        batch axis, or an unknown vertex.

    See Also
    --------
    inject_edge : P on one edge, where it can keep less memory.
    injected_jacobians : Many estimates with fresh P's.
    injection_variance : Their exact variance.

    Notes
    -----
    ``P = R R^T`` with ``E[P] = I`` (the RAD paper's Sec. 3.2, eqs. 2-6), so the
    Jacobian becomes an unbiased estimate.  A vertex that holds a number has one
    entry, so there ``P = 1`` exactly: the graph keeps its labels (and records
    the injection).  The projection stays a separate factor of each edge, so
    what the edges retain is unchanged: vertex injection changes which paths are
    followed, not memory.  To keep less, inject on the edges that keep
    activations (:func:`inject_edge`, :func:`sample_activations`).

    Examples
    --------
    >>> from minirad.graph.scalarize import from_chain
    >>> g = from_chain([np.ones((4, 1)), np.ones((1, 4))])    # theta -> v1 (4) -> y
    >>> h = inject_vertex(g, "v1", 2, rng=0)                 # keep 2 of the 4 copies of v1
    >>> h.labels[1].label(), h.injections[0]["k"]
    ('dense∘P k=2', 2)
    >>> from minirad import examples
    >>> inject_vertex(examples.lecture(), "v2", 1, rng=0).labels.tolist() == \\
    ...     examples.lecture().labels.tolist()                # a number: P = 1
    True
    """
    _check_law(law)
    v = g.index(vertex)
    layout = _layout(g, v, axis, batch_axis, per_row)
    d = layout.d
    kk = draws(d, k)
    out = [e for e in range(g.n_edges) if g.sources[e] == v]
    touched = out if out else [e for e in range(g.n_edges) if g.targets[e] == v]
    labels = {}
    if d > 1:   # one entry: P = (1/k) sum of k copies of 1 = 1, nothing to draw
        rows = layout.rows if batch_axis is not None and per_row else None
        R = random_basis(d, kk, law, rows, np.result_type(g.dtype(v), np.float32), rng=rng)
        P = Projection(g.shape(v), R, axis, batch_axis, law)
        labels = {e: compose(g.labels[e], P) if out else compose(P, g.labels[e])
                  for e in touched}
    return relabelled(g, labels, [dict(kind="vertex", at=g.names[v], method=law, k=kk, d=d,
                                    axis=axis, batch_axis=batch_axis,
                                    per_row=bool(per_row and batch_axis is not None),
                                    edges=[int(e) for e in touched])])


# -------------------------------------------------------------------- on an edge
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


def _draw_picks(rows: np.ndarray, k, per_row: bool, rng, picks) -> tuple[np.ndarray, int]:
    """The sampled indices into the rows (n, d) of an array, (n, k) or (1, k), and k."""
    n, d = rows.shape
    if picks is not None:
        picks = _given_picks(picks, d, n if per_row else 1)
        return picks, picks.shape[1]
    kk = draws(d, k)
    return rng.integers(0, d, size=(n, kk) if per_row else (1, kk)), kk


def _sampled_rows(rows: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """``rows P``: each row times (d/k) x how often each entry was drawn."""
    n, d = rows.shape
    k = picks.shape[1]
    # one row of counts per draw (np.bincount: np.add.at is slow before numpy 1.25)
    counts = np.bincount((np.arange(len(picks))[:, None] * d + picks).ravel(),
                         minlength=len(picks) * d).reshape(len(picks), d)
    return rows * (counts * (d / k)).astype(rows.dtype)


def _projected_rows(rows: np.ndarray, k: int, per_row: bool, rng) -> np.ndarray:
    """``rows R R^T / k`` with Rademacher signs R, one per row or shared."""
    n, d = rows.shape
    if not per_row:
        R = _signs(rng, (d, k)).astype(rows.dtype)
        return (rows @ R) @ R.T / rows.dtype.type(k)
    R = _signs(rng, (n, d, k)).astype(rows.dtype)
    return np.einsum("nk,ndk->nd", np.einsum("nd,ndk->nk", rows, R), R) / rows.dtype.type(k)


def _reduced_rows(rows, k, law, per_row, rng, picks):
    """The rows with P applied, and k."""
    if law == "sample":
        picks, kk = _draw_picks(rows, k, per_row, rng, picks)
        return _sampled_rows(rows, picks), kk
    kk = draws(rows.shape[1], k)
    return _projected_rows(rows, kk, per_row, rng), kk


def _kept(law: str, n: int, k: int, dtype, what: str) -> tuple[Retained]:
    """What a reduced array retains: ``k`` floats for each of its ``n`` rows (the
    indices or signs are regenerated from the seed, as the paper's Table 1 counts)."""
    return (Retained(fresh_key("sampled"), n * k * np.dtype(dtype).itemsize * 8,
                     what=f"{law} of {what}, k={k} per row"),)


def _contracted_axis(label: MatMul) -> int:
    return -1 if label.side == "left" else (0 if label.stored.ndim == 1 else -2)


def _source_rows(source: np.ndarray) -> np.ndarray:
    """A gathered source as rows of the entries sampled together: an image (B, C, H, W)
    as one row of spatial positions per example and channel (the paper's Fig. 4),
    anything else one row per index of its first axis."""
    if source.ndim == 4:
        return source.reshape(-1, source.shape[2] * source.shape[3])
    return source.reshape(source.shape[0] if source.ndim > 1 else 1, -1)


def _injected_gathered(label: MatMul, k, law, per_row, rng, picks):
    """A convolution's kernel edge with its image sampled or projected row by row."""
    source, gather = label.gathered
    rows = _source_rows(source)
    n, d = rows.shape
    windowed = isinstance(gather, Im2Col) and gather.stride == 1 and label.side == "right"
    if law == "sample":
        picks, kk = _draw_picks(rows, k, per_row, rng, picks)
        kept = _kept(law, n, kk, source.dtype, "the image")
        if windowed:   # keep the drawn entries; the reverse step reads the adjoint's windows
            values = np.take_along_axis(rows, np.broadcast_to(picks, (n, kk)), axis=1)
            return SampledPatches(gather, picks, values, d / kk, label.in_shape, law,
                                  kept), kk, d
        reduced = _sampled_rows(rows, picks)
    else:
        kk = draws(d, k)
        kept = _kept(law, n, kk, source.dtype, "the image")
        if windowed and not per_row:   # keep rows @ R; the reverse step rebuilds the image
            R = _signs(rng, (d, kk))
            return ProjectedPatches.project(gather, source, R, 1 / kk, label.in_shape, law,
                                            kept), kk, d
        reduced = _projected_rows(rows, kk, per_row, rng)
    stored = gather.apply(reduced.reshape(source.shape).astype(source.dtype, copy=False))
    return (InjectedMatMul(stored.astype(label.stored.dtype, copy=False), label.side,
                           label.in_shape, kk, law, kept), kk, d)


def _injected_matmul(label: MatMul, k, law, per_row, rng, picks):
    """``x @ W`` seen from W with its stored operand projected along the contracted axis."""
    S = label.stored
    axis = _contracted_axis(label)
    moved = np.moveaxis(S, axis, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    n, d = rows.shape
    if law == "rademacher" and not per_row:
        # S P = (S R) R^T / k has rank k: keep S R, apply R^T / k in the reverse sweep
        kk = draws(d, k)
        return ProjectedMatMul.project(S, _signs(rng, (d, kk)), label.side, label.in_shape,
                                       1 / kk, law,
                                       _kept(law, n, kk, S.dtype, "the stored operand")), kk, d
    reduced, kk = _reduced_rows(rows, k, law, per_row, rng, picks)
    projected = np.moveaxis(reduced.reshape(moved.shape), -1, axis)
    return (InjectedMatMul(projected, label.side, label.in_shape, kk, law,
                           _kept(law, n, kk, S.dtype, "the stored operand")), kk, d)


def _sampled_diagonal(D: Diagonal, k, rng, picks) -> tuple[Diagonal, int, int]:
    """diag(D.d) P = diag(D.d * p) for a sampling P: the diagonal keeps k entries."""
    d = D.in_size
    full = np.broadcast_to(D.d, D.in_shape).reshape(1, -1)
    picks, kk = _draw_picks(full, k, False, rng, picks)
    sampled = _sampled_rows(full.astype(D.dtype), picks).reshape(D.in_shape)
    digest = hashlib.blake2b(picks.tobytes() + str(d).encode(), digest_size=8).hexdigest()
    base = D.retained[0].key if D.retained else fresh_key("diag")
    kept = (Retained(f"{base}:sample:{digest}", kk * (D.dtype.itemsize * 8 + index_bits(d)),
                     what=f"{kk} sampled entries of the diagonal and their indices"),)
    return Diagonal(sampled, D.in_shape, kept), kk, d


def _injected(label, k, law: str, per_row: bool, rng, picks):
    """The label with P injected, k, and d."""
    if isinstance(label, float):   # an edge between two numbers: d = 1, so P = 1
        return label, (1 if picks is None else _given_picks(picks, 1, 1).shape[1]), 1
    if law == "sample" and isinstance(label, Diagonal):
        return _sampled_diagonal(label, k, rng, picks)
    if law == "sample" and isinstance(label, Composed) and isinstance(label.parts[-1],
                                                                           Diagonal):
        inner, kk, d = _sampled_diagonal(label.parts[-1], k, rng, picks)
        return Composed(label.parts[:-1] + (inner,)), kk, d
    if isinstance(label, MatMul) and label.gathered is not None:
        return _injected_gathered(label, k, law, per_row, rng, picks)
    if isinstance(label, MatMul):
        return _injected_matmul(label, k, law, per_row, rng, picks)
    shape = label.in_shape
    d = math.prod(shape)
    dtype = np.result_type(label.dtype, np.float32)
    if picks is None:
        kk = draws(d, k)
        R = random_basis(d, kk, law, None, dtype, rng=rng)
    else:
        given = _given_picks(picks, d, 1)[0]
        kk = len(given)
        R = np.zeros((d, kk), dtype=dtype)
        R[given, np.arange(kk)] = math.sqrt(d / kk)
    return compose(label, Projection(shape, R, None, None, law)), kk, d


@takes_graph_or_function
def inject_edge(g: LCG, edge, k=None, law: str = "sample", per_row: bool = True,
                picks=None, *, rng=None) -> LCG:
    """Random matrix injection on one edge: keep less of what the backward pass stores.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    edge : int or tuple
        An edge number or a ``(source, target)`` pair.
    k : int or float, optional
        Entries kept per row: a count ``>= 1``, or a fraction, rounded up
        (not with ``picks``).
    law : {"sample", "rademacher"}, optional
        The random law of P, as for :func:`inject_vertex` (default ``"sample"``).
    per_row : bool, optional
        One P per row or one for all, as for :func:`inject_vertex` (default True).
    picks : array_like, optional
        The draws of a ``"sample"`` injection instead of ``k`` and ``rng``: the
        indices (with replacement) into the sampled axis, flattened, shape
        ``(k,)``, or ``(rows, k)`` for a per-row multiplication edge.
    rng : numpy.random.Generator or int, optional
        The generator, or a seed (same seed, same draws).

    Returns
    -------
    LCG
        The graph with the edge's label replaced, the injection recorded.

    Raises
    ------
    ValueError
        For an unknown law or edge, a bad ``k``, ``picks`` out of range or of
        the wrong shape, or ``picks`` with a law that draws no indices.

    See Also
    --------
    sample_activations : The paper's scheme, on every edge that keeps an activation.
    inject_vertex : P at a vertex.
    minirad.retained_memory : What the edge keeps before and after.

    Notes
    -----
    On a multiplication edge (``x @ W`` seen from W, kinds ``outer``/``matmul``)
    the stored operand S is replaced by its projection along the contracted
    axis, ``k`` numbers kept per row (a shared Rademacher P keeps ``S R``
    only): ``S_P[dh/dW]`` of the RAD paper's Sec. 4.2.  On a convolution's kernel
    edge the image is sampled instead, per example and channel over its spatial
    positions (Fig. 4).  On a diagonal edge, or a composition whose innermost
    factor is a diagonal (a loss row ``sum ∘ diag(r)``), sampling folds into the
    diagonal, which then keeps only its ``k`` sampled entries and their indices
    (eq. 8).  Any other edge becomes ``J ∘ P`` with P over the source array; an
    edge between two numbers keeps its label (P = 1).  With ``picks``,
    ``P = (d/k) sum_j e_{picks_j} e_{picks_j}^T``; two diagonal edges that keep
    the same array and are given the same picks share the sampled copy.  With a
    seed for ``rng``, the draws are those of
    :func:`minirad.studies.nn.activations.sample_pattern` and
    :func:`~minirad.studies.nn.activations.signs` for that seed.

    Examples
    --------
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
    return inject_edges(g, [edge], k, law, per_row, None if picks is None else [picks],
                        rng=rng)


@takes_graph_or_function
def inject_edges(g: LCG, edges, k=None, law: str = "sample", per_row: bool = True,
                 picks=None, *, rng=None) -> LCG:
    """:func:`inject_edge` on each of ``edges`` (drawing in the order given, so the same
    as one call per edge), building the new graph once.  ``picks``, when given, has
    one entry per edge.

    >>> from minirad import trace
    >>> g = trace(lambda x: (np.exp(x) * x).sum(), np.zeros(4))
    >>> h = inject_edges(g, [("x", "v1"), ("x", "v2")], 2, rng=0)   # the two uses of x
    >>> [(r["edge"], r["k"]) for r in h.injections]
    [(['x', 'v1'], 2), (['x', 'v2'], 2)]
    """
    _check_law(law)
    if isinstance(edges, (int, np.integer, str)):
        raise TypeError("edges is a list of edges (numbers or (source, target) pairs)")
    edges = list(edges)
    if picks is not None:
        if law != "sample":
            raise ValueError(f"picks are the indices of a sampling; law {law!r} does not "
                             f"draw indices (use law='sample')")
        if isinstance(picks, np.ndarray) and picks.ndim == 1 or len(picks) != len(edges):
            raise ValueError(f"give one array of picks per edge ({len(edges)} edges)")
    elif k is None:
        raise ValueError("give k (a count of draws or a fraction of d) or the picks themselves")
    rng = as_generator(rng)   # one stream for all the edges
    labels, records = {}, []
    for i, edge in enumerate(edges):
        e = g.edge_index(*edge) if isinstance(edge, (tuple, list)) else int(edge)
        if not 0 <= e < g.n_edges:
            raise ValueError(f"edge {edge} does not exist; the graph has {g.n_edges} edges")
        given = None if picks is None else picks[i]
        labels[e], kk, d = _injected(g.labels[e], k, law, per_row, rng, given)
        u, v = int(g.sources[e]), int(g.targets[e])
        records.append(dict(kind="edge", edge=[g.names[u], g.names[v]], method=law, k=kk,
                            d=d, per_row=bool(per_row), given_picks=given is not None))
    return relabelled(g, labels, records)


def _activation_edges(g: LCG) -> list[int]:
    """The edges that keep an activation for a weight gradient (kind ``outer``)."""
    return [e for e, label in enumerate(g.labels)
            if isinstance(label, Operator) and label.kind == "outer"]


@takes_graph_or_function
def sample_activations(g: LCG, k, law: str = "sample", per_row: bool = True, *,
                       rng=None) -> LCG:
    """The RAD paper's activation sampling: every stored activation sampled to ``k`` per row.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    k : int or float
        Entries kept per row: a count ``>= 1``, or a fraction, rounded up.
    law : {"sample", "rademacher"}, optional
        The random law of P, as for :func:`inject_vertex` (default ``"sample"``).
    per_row : bool, optional
        One P per row or one for all, as for :func:`inject_vertex` (default True).
    rng : numpy.random.Generator or int, optional
        The generator, or a seed (same seed, same draws).

    Returns
    -------
    LCG
        Every edge that keeps an activation for a weight gradient (kind
        ``outer``) injected; a graph of numbers keeps no activation and comes
        back as it is.

    Raises
    ------
    ValueError
        As :func:`inject_edge` raises.

    See Also
    --------
    inject_edge : One edge at a time.
    activation_sampling_variance : The exact variance of the estimate.
    minirad.retained_memory : The memory saved.

    Notes
    -----
    Sec. 4.2 of Oktay et al. (ICLR 2021): other Jacobians (ReLU masks, the loss)
    stay exact, so along any path from a weight to the loss exactly one P is
    met, and the estimate is unbiased.  Different rows draw different samples
    (``per_row``), the paper's "different sample".

    Examples
    --------
    >>> from minirad import ops, retained_memory, trace
    >>> X = np.ones((4, 10), np.float32)
    >>> g = trace(lambda W: ops.relu(X @ W).sum(), np.ones((10, 3), np.float32))
    >>> h = sample_activations(g, 0.2, rng=0)
    >>> retained_memory(g).total, retained_memory(h).total   # 40 floats, then 2 per row
    (161.5, 33.5)
    """
    edges = _activation_edges(g)
    return inject_edges(g, edges, k, law, per_row, rng=as_generator(rng)) if edges else g


# ------------------------------------------------------------------ statistics
def _vertex_layouts(g: LCG, vertices, k, law, axis, batch_axis, per_row):
    """{vertex: (layout, k)} for P's at ``vertices`` (one entry: nothing random)."""
    _check_law(law)
    if isinstance(vertices, (str, int, np.integer)):
        raise TypeError("vertices is a list of vertices (names or numbers)")
    chosen = {}
    for vertex in vertices:
        v = g.index(vertex)
        if v in chosen:
            raise ValueError(f"vertex {g.names[v]} is listed twice")
        layout = _layout(g, v, axis, batch_axis, per_row)
        chosen[v] = (layout, draws(layout.d, k))
    return {v: lk for v, lk in chosen.items() if lk[0].d > 1}


@takes_graph_or_function
def injected_jacobians(g: LCG, vertices, k=1, n: int = 1000, law: str = "sample", *,
                       axis=None, batch_axis=None, per_row: bool = True,
                       rng=None) -> np.ndarray:
    """``n`` estimates of the Jacobian with an independent P at each of ``vertices``
    (as :func:`inject_vertex` puts them, drawn in the order given), shape
    (n, output entries, input entries): one reverse sweep over the stack of
    samples (:func:`minirad.randomized.stacked.reverse_stack`), not ``n`` graphs.

    >>> from minirad.graph.scalarize import from_chain
    >>> g = from_chain([np.array([[1.0], [3.0]]), np.array([[1.0, 1.0]])])
    >>> sorted(set(injected_jacobians(g, ["v1"], k=1, n=50, rng=0).ravel().tolist()))
    [2.0, 6.0]
    """
    chosen = _vertex_layouts(g, vertices, k, law, axis, batch_axis, per_row)
    n = number_of_estimates(n)
    rng = as_generator(rng)
    extra = sum(layout.index.size * kk for layout, kk in chosen.values())
    chunk = samples_per_chunk(g, n, extra)
    parts = []
    for start in range(0, n, chunk):
        c = min(chunk, n - start)
        steps = {}
        for v, (layout, kk) in chosen.items():
            if law == "sample":
                picks = rng.integers(0, layout.d, size=(c, layout.rows, kk))
                cell = np.arange(c * layout.rows).reshape(c, layout.rows, 1) * layout.d
                counts = np.bincount((cell + picks).ravel(), minlength=c * layout.rows
                                     * layout.d).reshape(c, layout.rows, layout.d)
                steps[v] = (lambda adj, lay=layout, w=counts * (layout.d / kk):
                            lay.scale(adj, w))
            else:
                R = _signs(rng, (c, layout.rows, layout.d, kk)) / math.sqrt(kk)
                steps[v] = lambda adj, lay=layout, R=R: lay.project(adj, R)
        parts.append(reverse_stack(g, c, at_vertex=steps))
    return np.concatenate(parts)


@takes_graph_or_function
def injection_variance(g: LCG, vertices=(), k=1, law: str = "sample", *, edges=(),
                       axis=None, batch_axis=None, per_row: bool = True,
                       max_entries: int = EXACT_VARIANCE_LIMIT,
                       covariance: bool = False) -> np.ndarray:
    r"""The exact variance of every entry of the Jacobian estimate under injected P's.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    vertices : sequence, optional
        The vertices with an independent P each, as :func:`inject_vertex` and
        :func:`injected_jacobians` put them.
    k : int or float, optional
        Columns of R (or entries kept per row on an edge), as for
        :func:`inject_vertex`.
    law : {"sample", "rademacher"}, optional
        The random law of P, as for :func:`inject_vertex` (default ``"sample"``).
    edges : sequence, optional
        The edges with an independent P each, as :func:`inject_edges` puts them.
    axis : int, optional
        The axis P acts along at the vertices.
    batch_axis : int, optional
        The axis along which examples lie.
    per_row : bool, optional
        One P per row or one for all, as for :func:`inject_vertex` (default True).
    max_entries : int, optional
        The most entries the dense covariance may hold.
    covariance : bool, optional
        Return the covariance of each row of the estimate instead.

    Returns
    -------
    numpy.ndarray
        Shape ``(output entries, input entries)``; with ``covariance``,
        ``(output entries, input entries, input entries)``.

    Raises
    ------
    ValueError
        For a vertex or edge listed twice or unknown, a bad ``k`` or law, or a
        covariance too large to form.
    TypeError
        For ``vertices`` or ``edges`` given as one vertex or edge, not a list.

    See Also
    --------
    injected_jacobians : The estimates, sampled.
    minirad.randomized.moments.estimate_variance : The recursion behind it.
    minirad.path_sampling_variance : The same for Algorithm 1.

    Notes
    -----
    A P injected at a vertex maps the second moment ``A`` of the adjoint there to
    ``E[P A P] = A + D(A)``: ``D(A) = (d Diag(A) - A) / k`` for sampling (the
    multinomial moments ``E[c_i c_j] = 1 - 1/k + (d/k)[i = j]`` of ``P = diag(c)``),
    ``(A + tr(A) I - 2 Diag(A)) / k`` for Rademacher (the pairings of four ±1's).
    Both map positive semidefinite matrices to positive semidefinite ones
    (Cauchy-Schwarz; a sum of squares), so every extra injection can only raise
    the variance of every entry.  An injected edge adds the extra second moment
    of its random label (see :mod:`minirad.randomized.moments`); on a sampled
    activation that is a sum over the entries of a row (over pairs of entries for
    Rademacher).

    Examples
    --------
    >>> from minirad.graph.scalarize import from_chain
    >>> g = from_chain([np.array([[1.0], [3.0]]), np.array([[1.0, 1.0]])])
    >>> injection_variance(g, ["v1"], k=1).tolist()     # the two outcomes 2 and 6
    [[4.0]]
    """
    chosen = _vertex_layouts(g, vertices, k, law, axis, batch_axis, per_row)
    laws = {v: ProjectionLaw(layout, law, kk) for v, (layout, kk) in chosen.items()}
    if isinstance(edges, (int, np.integer, str)):
        raise TypeError("edges is a list of edges (numbers or (source, target) pairs)")
    edge_laws = {}
    for edge in edges:
        e = g.edge_index(*edge) if isinstance(edge, (tuple, list)) else int(edge)
        if not 0 <= e < g.n_edges:
            raise ValueError(f"edge {edge} does not exist; the graph has {g.n_edges} edges")
        if e in edge_laws:
            raise ValueError(f"edge {edge} is listed twice")
        edge_law = _edge_law(g.labels[e], k, law, per_row)
        if edge_law is not None:
            edge_laws[e] = edge_law
    return estimate_variance(g, vertex_laws=laws, edge_laws=edge_laws, max_entries=max_entries,
                             covariance=covariance)


def _edge_law(label, k, law: str, per_row: bool):
    """The law of the random label :func:`inject_edge` gives ``label`` (None: P = 1)."""
    if isinstance(label, float):
        return None
    if isinstance(label, MatMul):
        return _stored_law(label, k, law, per_row)
    # a diagonal (sampling folds into it), or any other label: J P with P on the source
    layout = Layout(label.in_shape)
    return SourceProjection(ProjectionLaw(layout, law, draws(layout.d, k)))


def _stored_law(label, k, law: str, per_row: bool):
    """The :class:`~minirad.randomized.moments.StoredProjection` of an activation edge
    as :func:`inject_edge` samples it: the array whose rows are projected, and the
    edge's Jacobian as a function of that array."""
    if label.gathered is not None:
        source, gather = label.gathered
        rows = _source_rows(source)

        def build(array):
            stored = gather.apply(array.reshape(source.shape))
            return MatMul(stored, label.side, label.in_shape, ()).to_dense()
    else:
        moved = np.moveaxis(label.stored, _contracted_axis(label), -1)
        rows = moved.reshape(-1, moved.shape[-1])

        def build(array):
            stored = np.moveaxis(array.reshape(moved.shape), -1, _contracted_axis(label))
            return MatMul(stored, label.side, label.in_shape, ()).to_dense()
    layout = Layout(rows.shape, axis=1, batch_axis=0, per_row=per_row)
    return StoredProjection(rows, build, ProjectionLaw(layout, law, draws(rows.shape[1], k)))


@takes_graph_or_function
def activation_sampling_variance(g: LCG, k, law: str = "sample", per_row: bool = True, *,
                                 max_entries: int = EXACT_VARIANCE_LIMIT,
                                 covariance: bool = False) -> np.ndarray:
    """The exact variance of every entry of the :func:`sample_activations` estimate
    (its Jacobian, shape (output entries, input entries)), where it is computable:
    :func:`injection_variance` on the edges that keep activations (``covariance``: the
    covariance of each row instead).

    >>> from minirad import trace
    >>> X = np.array([[1.0, 3.0]])
    >>> g = trace(lambda W: (X @ W).sum(), np.ones((2, 1)))
    >>> activation_sampling_variance(g, 1).tolist()   # dW = 2 X[0, p] e_p: 2 or 6 for dW_2
    [[1.0, 9.0]]
    """
    return injection_variance(g, (), k, law, edges=_activation_edges(g), per_row=per_row,
                              max_entries=max_entries, covariance=covariance)
