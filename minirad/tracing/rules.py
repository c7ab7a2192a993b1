"""The rules of numpy's array operations, and the table that maps numpy to rules.

An elementwise operation is an entry of the operation table
(:mod:`minirad.tracing.ops`).  Everything else a traced array supports is a
:class:`Rule` here: a function that computes the value, and a function that
gives each traced operand's Jacobian block (an operator of
:mod:`minirad.graph.operators`), called only when an algorithm reads the
edge's label.  Most numpy functions are written with these rules
(``np.var`` is a mean of squares, ``np.linalg.norm`` a square root of a sum);
the modules beside this one hold those (:mod:`~minirad.tracing.reductions`,
:mod:`~minirad.tracing.contractions`, :mod:`~minirad.tracing.linalg`,
:mod:`~minirad.tracing.rearrange`) and register them under numpy's names.

>>> import numpy as np
>>> from minirad import ops, trace
>>> W, x = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -1.0])
>>> g = trace(lambda W, x: ops.relu(W @ x).sum(), W, x)
>>> [label.kind for label in g.labels]     # W @ x: a stored matrix on each edge
['matmul', 'matmul', 'mask', 'sum']

Writing a rule: give its name, a template over the operands ``{0}``, ``{1}``
(and the parameters by name), ``value(*operands, **params)`` on plain arrays,
``block(i, operands, out, edge, **params)`` for operand ``i``, and per operand
what that block keeps (the words of :func:`~minirad.tracing.tracer.kept`);
then :func:`register` it under numpy's name.  ``docs/numpy_support.md`` lists
every rule with what its edges keep.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sparse

from ..graph.operators import (
    Dense,
    Embed,
    Gather,
    Identity,
    Im2Col,
    MatMul,
    Outer,
    Reshape,
    Retained,
    Softmax,
    SparseMatMul,
    SumAxes,
    Transpose,
    matmul_shape,
)
from .ops import COMPARISONS, IDENTITIES, NOT_DIFFERENTIABLE, OPS, UFUNCS, Op
from .tracer import (
    FUNCTIONS,
    MAX_ENTRIES,
    METHODS,
    Traced,
    call,
    check_entries,
    constant,
    elementwise_block,
    function_key,
    read,
    record,
)

__all__ = ["Rule", "as_float_dtype", "astype", "avg_pool2d", "clip", "conv2d", "count",
           "getitem", "matmul", "plain", "refuse_options", "register", "register_rules",
           "reshape", "round_", "softmax", "softmax_cross_entropy", "softmax_values",
           "squeeze", "supported", "swapaxes", "transpose", "where"]


@dataclass(frozen=True, eq=False)
class Rule:
    """An array operation: its value, and each operand's Jacobian block."""

    name: str
    template: str | Callable
    value: Callable
    block: Callable
    keeps: tuple[str, ...] = ()
    moves: bool = False   # only moves entries: its value can be rebuilt from its operand's


def plain(x):
    """The value of a traced value (anything else as it is)."""
    return x.value if isinstance(x, Traced) else x


def refuse_options(what: str, **options) -> None:
    """A ``TypeError`` naming the options of a numpy call that a rule does not take
    (those given other than None): ``out=``, ``where=``, ``initial=``, ..."""
    given = [k for k, v in options.items() if v is not None]
    if given:
        raise TypeError(f"{what} with {', '.join(f'{k}=' for k in given)}: not supported on "
                        f"traced arrays; call it without")


# ------------------------------------------------------------------ matmul
def _matmul_value(a, b, gathered=None):
    return np.asarray(np.matmul(a, b))


def _matmul_block(i, values, y, edge, gathered=None):
    # by a parameter (an input of the graph), nothing more is kept; by an intermediate
    # value (an activation), that value is: the outer-product edge of a weight gradient
    kind = MatMul if edge.parameter(1 - i) else Outer
    return kind(np.asarray(values[1 - i], dtype=y.dtype), "right" if i == 0 else "left",
                np.shape(values[i]), lambda: _matmul_kept(i, edge, gathered),
                edge.gathered(1 - i) or (gathered if i == 0 else None))


def _matmul_kept(i, edge, gathered):
    kept = edge.kept("b" if i == 0 else "a")
    if gathered is not None and i == 0:   # patches of a constant image: rebuilt from it
        kept = (Retained(f"patches:{edge.target}", kept[0].nbits, recompute_from=
                         f"image:{edge.target}", source_bits=gathered[0].nbytes * 8,
                         what="patches"),)
    return kept


MATMUL = Rule("matmul", "{0} @ {1}", _matmul_value, _matmul_block, ("b", "a"))


def _sparse_value(A, x, side):
    return np.asarray(A @ x if side == "left" else x @ A)


def _sparse_block(i, values, y, edge, side):
    A, x = values
    return SparseMatMul(A, side, np.shape(x), (Retained(f"sparse:{id(A)}", _sparse_bits(A),
                                                        what="sparse matrix"),))


def _sparse_bits(A) -> int:
    return (A.data.nbytes + A.indices.nbytes + A.indptr.nbytes) * 8


SPARSE_MATMUL = Rule("matmul", lambda p, k: f"{p[0]} @ {p[1]}" if k["side"] == "left"
                     else f"{p[1]} @ {p[0]}", _sparse_value, _sparse_block)


def matmul(a, b):
    """``a @ b`` under numpy's rules; a constant operand may be a scipy.sparse matrix
    (write ``matmul(A, x)``: scipy's own ``A @ x`` does not hand over to traced arrays)."""
    if sparse.issparse(a) or sparse.issparse(b):
        A, x, side = (a, b, "left") if sparse.issparse(a) else (b, a, "right")
        if not isinstance(x, Traced):
            return a @ b
        copy = sparse.csr_array(A, dtype=x.dtype, copy=True)
        if x.tape is not None and id(A) in x.tape.constant_names:   # an argument as it is
            x.tape.constant_names[id(copy)] = x.tape.constant_names[id(A)]
        A = copy
        shape = matmul_shape(A.shape, x.shape) if side == "left" else matmul_shape(
            x.shape, A.shape)
        check_entries(shape, "matmul")
        return record(SPARSE_MATMUL, A, x, side=side)
    shape = matmul_shape(np.shape(plain(a)), np.shape(plain(b)))  # names both shapes
    check_entries(shape, "matmul")
    return record(MATMUL, a, b)


# -------------------------------------------------------------- reductions
def _axes(x, axis, keepdims, scale_by_count: bool, what: str) -> SumAxes:
    try:
        op = SumAxes(np.shape(x), axis, keepdims, 1.0, np.asarray(x).dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} over axis={axis!r} of shape {np.shape(x)}: {error}") from None
    if scale_by_count:
        count = math.prod(np.shape(x)[a] for a in op.axes)
        if count == 0:
            raise ValueError("mean of an empty selection")
        op = SumAxes(np.shape(x), axis, keepdims, 1.0 / count, np.asarray(x).dtype)
    return op


def _axis_text(name):
    return lambda p, k: (f"{name}({p[0]})" if k["axis"] is None
                         else f"{name}({p[0]}, axis={k['axis']})")


SUM = Rule("sum", _axis_text("sum"),
           lambda x, axis, keepdims: np.asarray(np.sum(x, axis=axis, keepdims=keepdims)),
           lambda i, v, y, edge, axis, keepdims: _axes(v[0], axis, keepdims, False, "sum"))
MEAN = Rule("mean", _axis_text("mean"),
            lambda x, axis, keepdims: np.asarray(np.mean(x, axis=axis, keepdims=keepdims)),
            lambda i, v, y, edge, axis, keepdims: _axes(v[0], axis, keepdims, True, "mean"))


def _reduction(rule, scale_by_count: bool):
    def reduce(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None,
               initial=None):
        refuse_options(f"np.{rule.name}", out=out, where=where, initial=initial)
        if isinstance(axis, list):
            axis = tuple(axis)
        _axes(plain(a), axis, keepdims, scale_by_count, rule.name)   # a clear message now
        return as_float_dtype(record(rule, a, axis=axis, keepdims=bool(keepdims)), dtype,
                              rule.name)
    return reduce


def as_float_dtype(x, dtype, what: str):
    """``x`` in the floating ``dtype`` a numpy call asked for, or ``x`` for None."""
    if dtype is None:
        return x
    if np.dtype(dtype).kind != "f":
        raise TypeError(f"{what}(dtype={np.dtype(dtype)}) of a traced array would drop its "
                        f"derivative; ask for a floating dtype")
    return astype(x, dtype)


# ------------------------------------------------------------ data movement
RESHAPE = Rule("reshape", "reshape({0}, {shape})",
               lambda x, shape: np.reshape(x, shape),
               lambda i, v, y, edge, shape: Reshape(np.shape(v[0]), y.shape, y.dtype),
               moves=True)


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    _c_order("reshape", order)
    shape = shape if shape is not None else newshape
    try:
        out_shape = np.empty(np.shape(plain(a)), dtype=np.bool_).reshape(shape).shape
    except (TypeError, ValueError) as error:
        raise ValueError(f"reshape: cannot reshape shape {np.shape(plain(a))} into {shape!r} "
                         f"({error})") from None
    check_entries(out_shape, "reshape")
    return record(RESHAPE, a, shape=out_shape)


def _c_order(what: str, order) -> None:
    if order not in ("C", "A", "K"):
        raise TypeError(f"x.{what}(order={order!r}): traced arrays are in C order; reshape "
                        f"the transpose for another order")


TRANSPOSE = Rule("transpose", lambda p, k: f"{p[0]}.T" if k["axes"] is None
                 else f"transpose({p[0]}, {k['axes']})",
                 lambda x, axes: np.transpose(x, axes).copy(),
                 lambda i, v, y, edge, axes: Transpose(np.shape(v[0]), axes, y.dtype),
                 moves=True)


def transpose(a, axes=None):
    try:
        op = Transpose(np.shape(plain(a)), axes)
    except (TypeError, ValueError) as error:
        raise ValueError(f"transpose: axes {axes!r} for shape {np.shape(plain(a))}: "
                         f"{error}") from None
    return record(TRANSPOSE, a, axes=None if axes is None else op.axes)


def swapaxes(a, axis1, axis2):
    ndim = np.ndim(plain(a))
    axes = list(range(ndim))
    try:
        i, j = operator.index(axis1) % max(ndim, 1), operator.index(axis2) % max(ndim, 1)
        axes[i], axes[j] = axes[j], axes[i]
    except (TypeError, IndexError):
        raise ValueError(f"swapaxes: axes {axis1!r}, {axis2!r} for shape "
                         f"{np.shape(plain(a))}") from None
    return transpose(a, tuple(axes))


def squeeze(a, axis=None):
    try:
        shape = np.squeeze(np.empty(np.shape(plain(a)), dtype=np.bool_), axis).shape
    except (TypeError, ValueError) as error:
        raise ValueError(f"squeeze: axis {axis!r} of shape {np.shape(plain(a))}: "
                         f"{error}") from None
    return reshape(a, shape)


def _positions(shape, key):
    return np.asarray(np.arange(math.prod(shape)).reshape(shape)[key])


def _gather_block(i, values, y, edge, key):
    x = values[0]
    masks = [k for k in (key if isinstance(key, tuple) else (key,))
             if isinstance(k, np.ndarray) and k.dtype == np.bool_]
    kept = (Retained(f"mask:{edge.target}", sum(int(k.size) for k in masks),
                     what="the boolean mask"),) if masks else None
    return Gather(np.shape(x), _positions(np.shape(x), key), np.asarray(x).dtype, kept)


GETITEM = Rule("getitem", lambda p, k: f"{p[0]}[{_key_text(k['key'])}]",
               lambda x, key: np.asarray(x[key]), _gather_block, moves=True)


def getitem(x, key):
    parts = key if isinstance(key, tuple) else (key,)
    if any(isinstance(k, Traced) for k in parts):
        raise TypeError("indexing with a traced array is not supported; index with constants "
                        "(a comparison such as x > 0 gives one)")
    key = tuple(_index_copy(k) for k in parts) if isinstance(key, tuple) else _index_copy(key)
    shape = np.shape(plain(x))
    check_entries(shape, "indexing")
    try:
        positions = _positions(shape, key)
    except (IndexError, TypeError, ValueError) as error:
        raise ValueError(f"index {key!r:.60} is invalid for shape {shape}: {error}") from None
    check_entries(positions.shape, "indexing")
    return record(GETITEM, x, key=key)


def _index_copy(k):
    """An index as the tape keeps it: arrays copied, read-only (changing the caller's
    index array later changes nothing)."""
    if isinstance(k, np.ndarray):
        check_entries(k.shape, "an index array")
    if isinstance(k, (list, np.ndarray)):
        try:
            k = np.array(k)
        except ValueError as error:
            raise ValueError(f"the index {k!r:.60} is not an array ({error})") from None
        k.flags.writeable = False
    return k


def _key_text(key) -> str:
    def one(k):
        if isinstance(k, slice):
            return ":".join("" if p is None else str(p) for p in (k.start, k.stop)) + (
                "" if k.step is None else f":{k.step}")
        if k is None:
            return "None"
        if k is Ellipsis:
            return "..."
        return str(k) if np.ndim(k) == 0 else "array"
    return ", ".join(one(k) for k in (key if isinstance(key, tuple) else (key,)))


ASTYPE = Rule("astype", "{0}.astype({dtype})",
              lambda x, dtype: np.asarray(x, dtype=dtype),
              lambda i, v, y, edge, dtype: Identity(y.shape, y.dtype))


def astype(x, dtype, order="K", casting="unsafe", subok=True, copy=True):
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"astype({dtype}) of a traced array would drop its derivative; a "
                        f"traced array is floating point (take minirad.detach(x) on purpose)")
    if dtype == np.asarray(plain(x)).dtype:
        return x
    return record(ASTYPE, x, dtype=dtype.name)


# ------------------------------------------------------------------- joining
def _joined_value(*arrays, how, axis):
    return np.asarray(getattr(np, how)(arrays, axis=axis))


def _joined_block(i, values, y, edge, how, axis):
    positions = np.arange(y.size).reshape(y.shape)
    if how == "stack":
        return Embed(y.shape, np.take(positions, i, axis=axis), y.dtype)
    if axis is None:
        ends = np.cumsum([np.size(v) for v in values])[:-1]
        return Embed(y.shape, np.split(positions, ends)[i], y.dtype)
    ends = np.cumsum([np.shape(v)[axis % y.ndim] for v in values])[:-1]
    return Embed(y.shape, np.split(positions, ends, axis=axis % y.ndim)[i], y.dtype)


JOIN = Rule("join", lambda p, k: f"{k['how']}({', '.join(p)}, axis={k['axis']})",
            _joined_value, _joined_block)


def _join(how):
    def join(arrays, axis=0, out=None, *, dtype=None, casting=None):
        refuse_options(f"np.{how}", out=out, dtype=dtype, casting=casting)
        if isinstance(arrays, Traced):
            raise TypeError(f"{how} takes a sequence of arrays, not one traced array")
        arrays = list(arrays)
        shapes = [np.shape(plain(a)) for a in arrays]
        try:   # the shape alone, on views that allocate nothing
            shape = getattr(np, how)([np.broadcast_to(np.float32(0), s) for s in shapes],
                                     axis=axis).shape
        except (TypeError, ValueError, np.exceptions.AxisError) as error:
            raise ValueError(f"{how}: shapes {shapes} do not join along axis {axis} "
                             f"({error})") from None
        check_entries(shape, how)
        return record(JOIN, *arrays, how=how, axis=axis)
    return join


# ------------------------------------------------------------ where and clip
def _where_block(i, values, y, edge, condition):
    chosen = np.broadcast_to(condition if i == 0 else ~condition, y.shape)
    return elementwise_block(chosen, values[i], y, (Retained(
        f"mask:{edge.target}.{i}", int(y.size), what="where condition"),))


WHERE = Rule("where", "where(c, {0}, {1})",
             lambda x, y, condition: np.asarray(np.where(condition, x, y)), _where_block)


def where(condition, x=None, y=None):
    """``np.where(condition, x, y)``: ``x`` where the condition holds, else ``y``.  The
    condition is read as a constant (the branch taken at the traced point); each
    traced branch's edge is a mask.  With the condition alone, its indices."""
    if x is None and y is None:
        return read(np.nonzero, condition)
    if x is None or y is None:
        raise TypeError("where takes a condition alone, or a condition, x and y")
    for part in (condition, x, y):
        check_entries(np.shape(plain(part)), "where")
    condition = read(_as_bool, condition)
    try:
        shape = np.broadcast_shapes(np.shape(condition), np.shape(plain(x)), np.shape(plain(y)))
    except ValueError:
        raise ValueError(f"where: shapes {np.shape(condition)}, {np.shape(plain(x))} and "
                         f"{np.shape(plain(y))} do not broadcast") from None
    check_entries(shape, "where")
    return record(WHERE, x, y, condition=condition)


def _as_bool(c):
    c = np.array(c, dtype=bool)
    c.flags.writeable = False
    return c


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    """``np.clip``: maximum and minimum of the table (1/2 at a tie: see its Kinks)."""
    refuse_options("np.clip", out=out)
    low = a_min if min is None else min
    high = a_max if max is None else max
    if low is not None:
        a = record(OPS["maximum"], a, low)
    if high is not None:
        a = record(OPS["minimum"], a, high)
    return a


def round_(a, decimals=0, out=None):
    """``np.round``: a step in each entry, derivative 0 (see the Kinks of
    :mod:`minirad.tracing.ops`)."""
    refuse_options("np.round", out=out)
    if decimals == 0:
        return record(OPS["rint"], a)
    scale = 10.0 ** decimals
    return record(OPS["rint"], a * scale) / scale


# ------------------------------------------------------------------ softmax
def softmax_values(z, axis=-1):
    shifted = z - z.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


SOFTMAX = Rule("softmax", "softmax({0}, axis={axis})",
               lambda x, axis: softmax_values(np.asarray(x), axis),
               lambda i, v, y, edge, axis: Softmax(y, axis, edge.kept("y")), ("y",))


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, computed stably; its Jacobian keeps the output."""
    ndim = np.ndim(plain(x))
    if ndim == 0 or not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise ValueError(f"softmax: axis {axis!r} is out of range for shape "
                         f"{np.shape(plain(x))}")
    return record(SOFTMAX, x, axis=int(axis))


def _cross_entropy_parts(z, target):
    batch = z.shape[0] if z.ndim == 2 else 1
    shifted = z - z.max(axis=-1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return batch, log_p


def _cross_entropy_value(z, target):
    batch, log_p = _cross_entropy_parts(z, target)
    return np.asarray(-(target * log_p).sum() / batch, dtype=z.dtype)


def _cross_entropy_block(i, values, y, edge):
    z, target = values
    batch, log_p = _cross_entropy_parts(z, target)
    grad = ((np.exp(log_p) * target.sum(axis=-1, keepdims=True) - target) / batch).astype(
        z.dtype)
    kept = (Retained(f"softmax:{edge.target}", grad.size * grad.dtype.itemsize * 8,
                     what="softmax probabilities"),)
    return Dense(grad.reshape(1, -1), (), z.shape, kept)


CROSS_ENTROPY = Rule("softmax_cross_entropy", "softmax_cross_entropy({0})",
                     _cross_entropy_value, _cross_entropy_block)


def softmax_cross_entropy(logits, labels):
    """Mean over the batch of ``-log softmax(logits)[label]``, computed stably.

    ``logits`` has shape (B, C) (or (C,)); ``labels`` holds class indices of
    shape (B,) (or a scalar), or one-hot / probability rows like ``logits``.
    The Jacobian is the row ``(softmax(logits) - onehot) / B``, kept as B x C
    floats: the paper's "logits, not sampled".  Labels given as data (an argument
    not differentiated) are data on the tape too: a replay takes new ones.
    """
    z = np.asarray(plain(logits))
    if z.ndim not in (1, 2) or z.shape[-1] == 0 or (z.ndim == 2 and z.shape[0] == 0):
        raise ValueError(f"softmax_cross_entropy: logits must have shape (B, C) or (C,) with "
                         f"B, C >= 1, not {z.shape}")
    if isinstance(labels, Traced) and (labels.tape is None or labels.tape.active[labels.index]):
        raise TypeError("softmax_cross_entropy: labels must be constants or data")
    if isinstance(labels, np.ma.MaskedArray):
        raise TypeError("softmax_cross_entropy: masked labels are not supported")
    label_values = np.asarray(plain(labels))
    if label_values.shape == z.shape and np.issubdtype(label_values.dtype, np.floating):
        if not np.all(np.isfinite(label_values)):
            raise ValueError("softmax_cross_entropy: the target rows must be finite")
        return record(CROSS_ENTROPY, logits, labels)
    expected = z.shape[:-1]
    if label_values.shape != expected or not np.issubdtype(label_values.dtype, np.integer):
        raise ValueError(f"softmax_cross_entropy: labels must be integer classes of shape "
                         f"{expected} or rows of shape {z.shape}, not {label_values.dtype} "
                         f"{label_values.shape}")
    if label_values.size and (label_values.min() < 0 or label_values.max() >= z.shape[-1]):
        raise ValueError(f"softmax_cross_entropy: labels must lie in 0..{z.shape[-1] - 1}")
    return record(CROSS_ENTROPY, logits, record(ONE_HOT, labels, classes=z.shape[-1],
                                                dtype=z.dtype.name))


ONE_HOT = Rule("one_hot", "one_hot({0})", lambda labels, classes, dtype: np.eye(
    classes, dtype=dtype)[np.asarray(labels, dtype=np.int64)], None)


# -------------------------------------------------------------- convolution
def count(value, what: str, least: int) -> int:
    """An integer option (a stride, a padding, a window) as an int >= ``least``: a float
    such as 1.5 is refused, not truncated."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int >= {least}, not {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int >= {least}, not {value!r}") from None
    if value < least or value > MAX_ENTRIES:
        raise ValueError(f"{what} must be an int from {least} to {MAX_ENTRIES:,}, not {value}")
    return value


IM2COL = Rule("im2col", "im2col({0})",
              lambda x, im2col: np.asarray(im2col.apply(x)),
              lambda i, v, y, edge, im2col: im2col, moves=True)


def conv2d(x, w, stride: int = 1, padding: int = 0):
    """2-D cross-correlation (deep learning's convolution) of images ``x`` (B, C, H, W)
    with kernels ``w`` (F, C, kh, kw), by im2col: patches gathered into a matrix and
    multiplied by the kernels.  The patch matrix is kept for dW but can be rebuilt
    from ``x``, so :func:`minirad.memory` counts ``x``."""
    stride, padding = count(stride, "conv2d: stride", 1), count(padding, "conv2d: padding", 0)
    xv, wv = np.asarray(plain(x)), np.asarray(plain(w))
    if not isinstance(x, Traced) and isinstance(w, Traced) and xv.ndim == 4:
        x = xv = constant(xv, "conv2d", wv.dtype)   # the trace's own read-only copy
    if xv.ndim != 4 or wv.ndim != 4 or xv.shape[1] != wv.shape[1]:
        raise ValueError(f"conv2d: needs images (B, C, H, W) and kernels (F, C, kh, kw) with "
                         f"the same C; got shapes {xv.shape} and {wv.shape}")
    f, c, kh, kw = wv.shape
    b, _, h, wd = xv.shape
    check_entries((b, c, h + 2 * padding, wd + 2 * padding), "conv2d: the padded images")
    try:
        im2col = Im2Col(xv.shape, (kh, kw), stride, padding, xv.dtype)
    except ValueError as error:
        raise ValueError(f"conv2d: {error}") from None
    check_entries(im2col.out_shape, "conv2d: the patch matrix")
    ho, wo = im2col.pixels
    cols = record(IM2COL, x, im2col=im2col)
    kernels = reshape(w, (f, c * kh * kw))
    if isinstance(x, Traced):
        out = matmul(kernels, cols)                                  # (B, F, Ho*Wo)
    else:   # the patches of a constant image: the kernels' edge still knows the image
        out = record(MATMUL, kernels, cols, gathered=(xv, im2col))
    return reshape(out, (b, f, ho, wo))


def avg_pool2d(x, size: int = 2):
    """Average over non-overlapping ``size`` x ``size`` windows of (B, C, H, W) images."""
    size = count(size, "avg_pool2d: size", 1)
    shape = np.shape(plain(x))
    if len(shape) != 4 or shape[2] % size or shape[3] % size:
        raise ValueError(f"avg_pool2d: needs images (B, C, H, W) with H and W divisible by "
                         f"{size}; got shape {shape}")
    b, c, h, w = shape
    return np.mean(reshape(x, (b, c, h // size, size, w // size, size)), axis=(3, 5))


# ------------------------------------------------------------- numpy's names
def register(function, rule):
    """Give ``function`` (a numpy function or ufunc, as ``np.sinc``, or its name as
    ``"linalg.pinv"``) a rule for traced values; returns the rule it had, if any
    (``rule=None`` removes it, so ``register(f, previous)`` puts it back).

    A rule is an :class:`~minirad.tracing.ops.Op` (an elementwise operation, written
    as the entries of the operation table are) or a function of numpy's arguments
    that returns the result computed with operations the tracer supports, or
    recorded with :func:`~minirad.tracing.tracer.record` and a :class:`Rule`.

    >>> import minirad
    >>> def slope(x, y):   # d sinc(x)/dx = (cos(pi x) - sinc(x)) / x, 0 at x = 0
    ...     safe = np.where(x == 0, 1.0, x)
    ...     return np.where(x == 0, 0.0, (np.cos(np.pi * x) - y) / safe)
    >>> sinc = Op("sinc", "sinc({0})", np.sinc, (slope,), keeps=("x y",))
    >>> previous = register(np.sinc, sinc)
    >>> g = minirad.trace(lambda x: np.sinc(x).sum(), np.array([0.0, 0.5]))
    >>> minirad.jacobian(g).round(4)                # 0, and (0 - 2/pi) / 0.5 = -4/pi
    array([[ 0.    , -1.2732]])
    >>> register(np.sinc, previous) is sinc         # as it was: no rule
    True
    """
    if not (isinstance(function, (str, np.ufunc)) or callable(function)):
        raise TypeError(f"register takes a numpy function or ufunc, not "
                        f"{type(function).__name__}")
    if rule is not None and not (isinstance(rule, Op) or callable(rule)):
        raise TypeError(f"a rule is an Op (an elementwise entry) or a function, not "
                        f"{type(rule).__name__}")
    if isinstance(rule, Op) and rule.arity not in (1, 2):
        raise ValueError(f"an elementwise rule has one or two operands, not {rule.arity}")
    key = function if isinstance(function, str) else (
        function.__name__ if isinstance(function, np.ufunc) else function_key(function))
    previous = FUNCTIONS.pop(key, None) if rule is None else FUNCTIONS.get(key)
    if rule is not None:
        FUNCTIONS[key] = rule
    return previous


def register_rules(rules: dict) -> None:
    """:func:`register` each rule under its numpy name, leaving out the functions this
    numpy does not have (``np.matvec`` came with numpy 2.2)."""
    for path, rule in rules.items():
        function = np
        for part in path.split("."):
            function = getattr(function, part, None)
        if function is not None:
            register(path, rule)


def _values_only(function):
    """A numpy function that reads values only (indices, shapes, comparisons)."""
    return lambda *args, **kwargs: read(function, *args, **kwargs)


def _not_differentiable(name: str, why: str):
    def refuse(*args, **kwargs):
        raise TypeError(f"numpy's {name} has no derivative: {why}")
    return refuse


register_rules({
    **{name: op for name, op in UFUNCS.items()},
    **{name: _values_only(getattr(np, name)) for name in COMPARISONS},
    **{name: (lambda x: x) for name in IDENTITIES},
    **{name: _not_differentiable(name, why) for name, why in NOT_DIFFERENTIABLE.items()},
    "matmul": matmul,
    "sum": _reduction(SUM, False), "mean": _reduction(MEAN, True),
    "reshape": reshape, "ravel": lambda a, order="C": reshape(a, -1, order),
    "squeeze": squeeze, "transpose": transpose, "swapaxes": swapaxes,
    "matrix_transpose": lambda x: swapaxes(x, -1, -2),
    "concatenate": _join("concatenate"), "stack": _join("stack"),
    "where": where, "clip": clip, "round": round_, "around": round_,
    "copy": lambda a, order="K", subok=False: a, "real": lambda val: val,
    "fix": lambda x, out=None: record(OPS["trunc"], x),
    "square": lambda x: record(OPS["pow"], x, 2.0),
    "modf": lambda x: (record(OPS["fmod"], x, 1.0), record(OPS["trunc"], x)),
    "divmod": lambda a, b: (record(OPS["floor_divide"], a, b), record(OPS["remainder"], a, b)),
    **{name: _values_only(getattr(np, name)) for name in (
        "shape", "ndim", "size", "argmax", "argmin", "argsort", "argwhere", "nonzero",
        "flatnonzero", "count_nonzero", "isclose", "allclose", "array_equal", "result_type",
        "all", "any", "searchsorted", "iscomplexobj", "isrealobj", "ones_like", "zeros_like",
        "full_like", "empty_like")},
})

FUNCTIONS["getitem"] = getitem     # x[key]: numpy has no function of that name


def _method(name: str):
    """The ndarray method that is numpy's function ``name`` of the array (``x.max(axis=0)``
    is ``np.max(x, axis=0)``), whatever rule that function has when called."""
    def method(x, *args, **kwargs):
        return call(FUNCTIONS, name, (x, *args), kwargs)
    return method


METHODS.update({name: _method(name) for name in (
    "sum", "mean", "max", "min", "prod", "var", "std", "cumsum", "cumprod", "ravel",
    "squeeze", "swapaxes", "dot", "clip", "trace", "diagonal", "repeat", "take", "round",
    "argmax", "argmin", "argsort", "nonzero", "all", "any", "searchsorted")})
METHODS.update({
    "reshape": lambda x, *shape, order="C": reshape(
        x, shape[0] if len(shape) == 1 else shape, order),
    "transpose": lambda x, *axes: transpose(
        x, (axes[0] if len(axes) == 1 else axes) if axes else None),
    "flatten": lambda x, order="C": reshape(x, -1, order),
    "copy": lambda x, order="C": x,     # a traced value is never written into
    "astype": astype, "conj": lambda x: x, "conjugate": lambda x: x,
})


def supported() -> str:
    """What traced values support, read off the table and the registered rules
    (``docs/numpy_support.md`` says it with each rule's edges and memory)."""
    return (f"+ - * / ** @ and comparisons; numpy functions and ufuncs: "
            f"{', '.join(sorted(FUNCTIONS))}; methods: {', '.join(sorted(METHODS))}; "
            f"indexing, slicing and boolean masks; in minirad.tracing.rules: softmax, "
            f"softmax_cross_entropy, conv2d, avg_pool2d, matmul by a scipy.sparse matrix")
