"""Reductions of traced arrays beyond ``sum`` and ``mean``: each one vertex, one edge.

``np.max`` and ``np.min`` (``amax``, ``amin``, ``ptp``), ``np.prod``,
``np.var`` and ``np.std`` (with ``ddof``), ``np.cumsum`` and ``np.cumprod``,
``np.linalg.norm`` (vectors, Frobenius and the other norms without singular
values), and :func:`logsumexp`, as functions and as ndarray methods.  Most
reductions are a weighted sum: the output is ``sum(w * dx, axes)`` to first
order, with weights ``w`` of the input's shape, so their edge is
``sum ∘ diag(w)`` and keeps ``w`` (one number per entry, which the backward
pass could also rebuild from the input; :func:`minirad.retained_memory` counts it so).

* max and min: ``w`` is 1 where the entry is the extreme, 0 elsewhere (a bit
  mask); ``k`` entries tying for it get 1/k each, the tie convention of
  :mod:`minirad.tracing.ops` (Kinks);
* prod: ``w`` is the product of the other entries, taken as a product of
  prefixes and suffixes, never as ``prod / x``, so a zero entry is no trouble
  (with one zero only its weight is nonzero; with two, every weight is 0);
* var: ``w = 2 (x - mean) / (n - ddof)`` (the mean's own dependence on x sums
  to zero); std: ``(x - mean) / ((n - ddof) std)``, 0 where std is 0 (Kinks);
* the 2-norm: ``w = x / |x|``, 0 at the zero vector (Kinks); logsumexp: ``w =
  softmax(x)``.

Each is a :class:`~minirad.tracing.rules.Rule`: its value is numpy's, and its
block (``sum ∘ diag(w)``, the weights worked out from the operand) is built only
when an algorithm reads the edge's label.

A running sum's edge is :class:`~minirad.graph.operators.CumSum` (lower
triangular ones, kept as nothing); a running product's is a contraction
(:class:`~minirad.graph.einsum.Einsum`) with one triangular matrix of
partial products per line, ``L x L`` numbers for a line of length ``L``.

>>> import numpy as np, minirad
>>> g = minirad.trace(lambda x: x.max(), np.array([1.0, 3.0, 3.0]))
>>> minirad.jacobian(g)                      # a tie of two: 1/2 each
array([[0. , 0.5, 0.5]])
>>> minirad.jacobian(lambda x: np.prod(x), np.array([0.0, 2.0, 3.0]))
array([[6., 0., 0.]])
"""

from __future__ import annotations

import math
import string

import numpy as np

from ..graph.einsum import Einsum
from ..graph.operators import CumSum, Diagonal, Mask, Reshape, Retained, SumAxes, compose
from .ops import OPS
from .rules import Rule, as_float_dtype, check_entries, plain, refuse_options, register_rules
from .tracer import Edge, read, record


def rebuilt(edge: Edge, array: np.ndarray, what: str, tag: str) -> tuple[Retained, ...]:
    """The record of ``array`` (one bit per entry when boolean) that the edge of a rule
    of one operand keeps, and that the backward pass could also rebuild from that
    operand's value: :func:`minirad.memory` charges nothing for it when that value is
    kept anyway.  ``tag`` names it (``prod#5``: the array of vertex 5's edge)."""
    source = edge.kept("x")
    if not source:   # the operand is a number: the block keeps a number
        return ()
    bits = 1 if array.dtype == np.bool_ else array.dtype.itemsize * 8
    return (Retained(f"{tag}#{edge.target}", int(array.size) * bits,
                     recompute_from=source[0].key, source_bits=source[0].nbits, what=what),)


def _summing(shape, axis, keepdims: bool, what: str, dtype=np.float64) -> SumAxes:
    try:
        return SumAxes(shape, axis, keepdims, 1.0, dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} over axis={axis!r} of shape {tuple(shape)}: {error}") from None


def _axis(axis):
    """An axis as a rule's parameter: a list of axes as a tuple."""
    return tuple(axis) if isinstance(axis, list) else axis


def _template(what: str):
    return lambda p, k: (f"{what}({p[0]})" if k.get("axis") is None
                         else f"{what}({p[0]}, axis={k['axis']})")


def _weighted(x: np.ndarray, weights: np.ndarray, axis, keepdims: bool, edge: Edge,
              what: str, tag: str):
    """The block ``sum ∘ diag(weights)`` of a reduction of ``x`` over ``axis`` (a bit mask
    when the weights are booleans), the weights kept as rebuilt from x."""
    kept = rebuilt(edge, weights, what, tag)
    if weights.dtype == np.bool_:
        inner = Mask(weights, x.dtype, kept)
    else:
        inner = Diagonal(weights.astype(x.dtype, copy=False), x.shape, kept)
    return compose(_summing(x.shape, axis, keepdims, tag, x.dtype), inner)


def _not_empty(shape, summing: SumAxes, what: str) -> None:
    if any(shape[a] == 0 for a in summing.axes) or math.prod(shape) == 0:
        raise ValueError(f"{what} of an empty selection (shape {tuple(shape)}) has no value")


# ----------------------------------------------------------------- max and min
def _extreme(which, what: str):
    def value(x, axis, keepdims):
        return np.asarray(which(x, axis=axis, keepdims=keepdims))

    def block(i, values, y, edge, axis, keepdims):
        x = np.asarray(values[0])
        axes = _summing(x.shape, axis, keepdims, what).axes
        ties = x == which(x, axis=axes, keepdims=True)
        count = ties.sum(axis=axes, keepdims=True)
        # k entries tie for the extreme: 1/k each (the convention of maximum's 1/2)
        weights = ties if np.all(count == 1) else ties / count
        return _weighted(x, weights, axis, keepdims, edge, f"where the {what} is", what)

    rule = Rule(what, _template(what), value, block, ("x",))

    def function(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        refuse_options(f"np.{what}", out=out, initial=initial, where=where)
        axis, shape = _axis(axis), np.shape(plain(a))
        _not_empty(shape, _summing(shape, axis, keepdims, what), what)
        return record(rule, a, axis=axis, keepdims=bool(keepdims))
    function.__name__ = function.__qualname__ = what
    function.__doc__ = (f"``np.{what}(x, axis, keepdims=...)``: the derivative goes to the "
                        f"{what}, shared equally by entries that tie for it.")
    return function


amax = _extreme(np.max, "max")
amin = _extreme(np.min, "min")


def ptp(a, axis=None, out=None, keepdims=False):
    """``np.ptp``: ``max - min``, two reductions."""
    refuse_options("np.ptp", out=out)
    return amax(a, axis, keepdims=keepdims) - amin(a, axis, keepdims=keepdims)


# ------------------------------------------------------------------- products
def products_of_others(lines: np.ndarray) -> np.ndarray:
    """For each entry of each line (the last axis), the product of the line's other
    entries: exclusive prefix times exclusive suffix products, exact at zeros."""
    ones = np.ones(lines.shape[:-1] + (1,), lines.dtype)
    before = np.concatenate([ones, np.cumprod(lines[..., :-1], axis=-1)], axis=-1)
    after = np.concatenate([np.cumprod(lines[..., :0:-1], axis=-1)[..., ::-1], ones], axis=-1)
    return before * after


def _prod_block(i, values, y, edge, axis, keepdims):
    x = np.asarray(values[0])
    reduced = _summing(x.shape, axis, keepdims, "prod").axes
    if x.size == 0:   # an empty product is 1, whatever the (no) entries
        return _weighted(x, np.zeros(x.shape, x.dtype), axis, keepdims, edge,
                         "the products of the other entries", "prod")
    ends = tuple(range(x.ndim - len(reduced), x.ndim))
    moved = np.moveaxis(x, reduced, ends)
    lines = moved.reshape(moved.shape[:x.ndim - len(reduced)] + (-1,))
    with np.errstate(all="ignore"):
        others = np.moveaxis(products_of_others(lines).reshape(moved.shape), ends, reduced)
    return _weighted(x, others, axis, keepdims, edge, "the products of the other entries",
                     "prod")


PROD = Rule("prod", _template("prod"),
            lambda x, axis, keepdims: np.asarray(np.prod(x, axis=axis, keepdims=keepdims)),
            _prod_block, ("x",))


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.prod``: each entry's weight is the product of the others (zeros included)."""
    refuse_options("np.prod", out=out, initial=initial, where=where)
    axis = _axis(axis)
    _summing(np.shape(plain(a)), axis, keepdims, "prod")
    return as_float_dtype(record(PROD, a, axis=axis, keepdims=bool(keepdims)), dtype,
                          "np.prod")


# ------------------------------------------------------------------ variances
def _spread(which: str):
    def value(x, axis, ddof, keepdims):
        return np.asarray(getattr(np, which)(x, axis=axis, ddof=ddof, keepdims=keepdims))

    def block(i, values, y, edge, axis, ddof, keepdims):
        x = np.asarray(values[0])
        axes = _summing(x.shape, axis, keepdims, which).axes
        scale = math.prod(x.shape[a] for a in axes) - ddof
        centered = x - x.mean(axis=axes, keepdims=True)
        if which == "var":
            weights = 2 * centered / scale
        else:   # d std = d var / (2 std); 0 where std is 0, as abs at 0 (Kinks)
            spread = np.std(x, axis=axes, ddof=ddof, keepdims=True)
            safe = np.where(spread > 0, spread, 1)
            weights = np.where(spread > 0, centered / (scale * safe), 0)
        return _weighted(x, weights, axis, keepdims, edge, "the deviations from the mean",
                         which)

    rule = Rule(which, _template(which), value, block, ("x",))

    def function(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
                 mean=None, correction=None):
        refuse_options(f"np.{which}", out=out, where=where, mean=mean)
        if correction is not None:
            ddof = correction
        axis, shape = _axis(axis), np.shape(plain(a))
        count = math.prod(shape[i] for i in _summing(shape, axis, keepdims, which).axes)
        if isinstance(ddof, (bool, np.bool_)) or not isinstance(
                ddof, (int, float, np.integer, np.floating)) or not 0 <= ddof < count:
            raise ValueError(f"np.{which}: ddof={ddof!r} must lie in [0, {count}), the number "
                             f"of entries reduced")
        traced = record(rule, a, axis=axis, ddof=ddof, keepdims=bool(keepdims))
        return as_float_dtype(traced, dtype, f"np.{which}")
    function.__name__ = function.__qualname__ = which
    function.__doc__ = f"``np.{which}(x, axis, ddof=...)``, one vertex."
    return function


var = _spread("var")
std = _spread("std")


# ------------------------------------------------------------ running sums
def _running(shape, axis, what: str):
    """The axis a running sum or product runs along, checked (None: the flattened array)."""
    if axis is None:
        return None
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not (
            -len(shape) <= axis < len(shape)):
        raise ValueError(f"{what}: axis {axis!r} is out of range for shape {tuple(shape)}")
    return int(axis)


def _flattened(block, x: np.ndarray, axis):
    """``block`` after the flattening of ``x`` that a running sum of axis None makes."""
    return block if axis is not None else compose(block, Reshape(x.shape, (x.size,), x.dtype))


def _cumsum_block(i, values, y, edge, axis):
    x = np.asarray(values[0])
    return _flattened(CumSum(y.shape, 0 if axis is None else axis, y.dtype), x, axis)


CUMSUM = Rule("cumsum", _template("cumsum"),
              lambda x, axis: np.asarray(np.cumsum(x, axis=axis)), _cumsum_block)


def cumsum(a, axis=None, dtype=None, out=None):
    """``np.cumsum``: its edge is the running sum itself (:class:`CumSum`)."""
    refuse_options("np.cumsum", out=out)
    axis = _running(np.shape(plain(a)), axis, "cumsum")
    return as_float_dtype(record(CUMSUM, a, axis=axis), dtype, "np.cumsum")


def _partial_products(lines: np.ndarray) -> np.ndarray:
    """``M[..., i, j] = d(prod of line[..., :i+1]) / d line[..., j]``: the product of
    the entries up to ``i`` but ``j`` for ``j <= i``, else 0; by running products of the
    entries after ``j``, never by division, so zeros are exact."""
    n = lines.shape[-1]
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    # after[..., j, i] = product of line[j+1 .. i] (1 for i <= j)
    after = np.cumprod(np.where(j > i, lines[..., None, :], 1), axis=-1)
    before = np.concatenate([np.ones(lines.shape[:-1] + (1,), lines.dtype),
                             np.cumprod(lines[..., :-1], axis=-1)], axis=-1)
    return np.where(j <= i, before[..., None, :] * np.swapaxes(after, -1, -2), 0)


def _cumprod_block(i, values, y, edge, axis):
    x = np.asarray(values[0])
    value = x.reshape(-1) if axis is None else x
    along = 0 if axis is None else axis % x.ndim
    with np.errstate(all="ignore"):
        triangles = _partial_products(np.moveaxis(value, along, -1))
    letters = string.ascii_letters[:value.ndim]
    line, running = letters[along], string.ascii_letters[value.ndim]
    rest = letters.replace(line, "")
    subscripts = f"{rest}{running}{line},{letters}->{letters.replace(line, running)}"
    block = Einsum(subscripts, [triangles], 1, value.shape, x.dtype,
                   rebuilt(edge, triangles, "the partial products", "cumprod"))
    return _flattened(block, x, axis)


CUMPROD = Rule("cumprod", _template("cumprod"),
               lambda x, axis: np.asarray(np.cumprod(x, axis=axis)), _cumprod_block, ("x",))


def cumprod(a, axis=None, dtype=None, out=None):
    """``np.cumprod``: a contraction with each line's triangle of partial products."""
    refuse_options("np.cumprod", out=out)
    shape = np.shape(plain(a))
    axis = _running(shape, axis, "cumprod")
    lines = (math.prod(shape),) if axis is None else shape
    length = lines[axis % len(lines)] if axis is not None else lines[0]
    check_entries(tuple(lines) + (length,), "cumprod: the partial products")
    return as_float_dtype(record(CUMPROD, a, axis=axis), dtype, "np.cumprod")


def _cumulative(function, what: str):
    """``np.cumulative_sum`` and ``np.cumulative_prod`` (numpy 2), without the initial."""
    def rule(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if include_initial:
            raise TypeError(f"np.{what}(include_initial=True): not supported on traced "
                            f"arrays; concatenate the initial value yourself")
        if axis is None and np.ndim(plain(x)) > 1:
            raise ValueError(f"np.{what} needs an axis for arrays of more than one axis")
        return function(x, 0 if axis is None else axis, dtype, out)
    return rule


# ------------------------------------------------------------------ logsumexp
def _logsumexp(x, axis, keepdims):
    x = np.asarray(x)
    axes = tuple(range(x.ndim)) if axis is None else axis
    top = np.max(x, axis=axes, keepdims=True)
    with np.errstate(all="ignore"):
        kept = top + np.log(np.sum(np.exp(x - top), axis=axes, keepdims=True))
    return kept if keepdims else np.squeeze(kept, axis=axes)


def _logsumexp_block(i, values, y, edge, axis, keepdims):
    x = np.asarray(values[0])
    with np.errstate(all="ignore"):
        weights = np.exp(x - _logsumexp(x, axis, True))
    return _weighted(x, weights, axis, keepdims, edge, "softmax of the entries", "logsumexp")


LOGSUMEXP = Rule("logsumexp", _template("logsumexp"), _logsumexp, _logsumexp_block, ("x",))


def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x), axis))``, computed stably (the largest entry taken out); its
    edge is ``sum ∘ diag(softmax(x))``.

    >>> import minirad
    >>> g = minirad.trace(lambda x: logsumexp(x), np.array([1000.0, 1000.0]))
    >>> float(g.value("y")), minirad.jacobian(g)     # 1000 + log 2, softmax = [1/2, 1/2]
    (1000.6931471805599, array([[0.5, 0.5]]))
    """
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    axis, shape = _axis(axis), np.shape(plain(x))
    _not_empty(shape, _summing(shape, axis, keepdims, "logsumexp"), "logsumexp")
    return record(LOGSUMEXP, x, axis=axis, keepdims=bool(keepdims))


# ---------------------------------------------------------------------- norms
def _norm_axes(ndim: int, axis) -> tuple[int, ...]:
    return (tuple(range(ndim)) if axis is None else
            tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))


def _two_norm_block(i, values, y, edge, ord, axis, keepdims):
    x = np.asarray(values[0])
    axes = _norm_axes(x.ndim, axis)
    with np.errstate(all="ignore"):
        size = np.sqrt(np.sum(x * x, axis=axes, keepdims=True))
        safe = np.where(size > 0, size, 1)
        weights = np.where(size > 0, x / safe, 0).astype(x.dtype)   # 0 at 0 (Kinks)
    return _weighted(x, weights, axes, keepdims, edge, "the direction x / |x|", "norm")


TWO_NORM = Rule("norm", _template("norm"),
                lambda x, ord, axis, keepdims: np.asarray(np.linalg.norm(x, ord, axis,
                                                                         keepdims)),
                _two_norm_block, ("x",))


def _nonzero_count(x, axis, keepdims):
    x = np.asarray(x)
    return np.asarray(np.count_nonzero(x, axis=axis, keepdims=keepdims), dtype=x.dtype)


def _vector_norm(x, order, axis, keepdims):
    """The vector norm of ``order`` along ``axis`` (one axis, or None for all)."""
    magnitude = record(OPS["abs"], x)
    if order == np.inf:
        return amax(magnitude, axis, keepdims=keepdims)
    if order == -np.inf:
        return amin(magnitude, axis, keepdims=keepdims)
    if order == 0:   # how many entries are not zero: a value read, constant at this point
        return read(_nonzero_count, x, axis=axis, keepdims=keepdims)
    if order == 1:
        return np.sum(magnitude, axis=axis, keepdims=keepdims)
    return np.sum(magnitude ** order, axis=axis, keepdims=keepdims) ** (1.0 / order)


def _matrix_norm(x, order, axes, keepdims):
    """The matrix norms that are sums and maxima of entries: 1, -1, inf, -inf."""
    shape = np.shape(plain(x))
    rows, columns = (a % len(shape) for a in axes)
    summed, extreme = (rows, columns) if order in (1, -1) else (columns, rows)
    sums = np.sum(record(OPS["abs"], x), axis=summed, keepdims=True)
    result = (amax if order > 0 else amin)(sums, extreme, keepdims=True)
    if keepdims:
        return result
    return result.reshape(tuple(n for i, n in enumerate(shape) if i not in (rows, columns)))


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: the 2-norm and Frobenius norm as one vertex; the 1, inf and
    other vector norms, and the 1 and inf matrix norms, by abs, sum and max."""
    ndim = np.ndim(plain(x))
    try:   # numpy's checks of ord and axis: they read ndim alone
        with np.errstate(all="ignore"):
            np.linalg.norm(np.zeros((1,) * ndim), ord, axis, keepdims)
    except (TypeError, ValueError) as error:
        raise (TypeError if isinstance(error, TypeError) else ValueError)(
            f"np.linalg.norm(ord={ord!r}, axis={axis!r}) of {ndim} axes: {error}") from None
    axis = _axis(axis)
    axes = _norm_axes(ndim, axis)
    if ord is None or ord == (2 if len(axes) == 1 else "fro"):
        return record(TWO_NORM, x, ord=ord, axis=axis, keepdims=bool(keepdims))
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        return _matrix_norm(x, ord, axes, keepdims)
    raise TypeError(f"np.linalg.norm(ord={ord!r}) of a matrix needs its singular values, "
                    f"which have no rule on traced arrays")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """``np.linalg.vector_norm``: all entries as one vector unless ``axis`` says."""
    if axis is None:
        shape = np.shape(plain(x))
        result = norm(np.reshape(x, -1), ord, 0)
        return np.reshape(result, (1,) * len(shape)) if keepdims else result
    return norm(x, ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """``np.linalg.matrix_norm``: over the last two axes."""
    return norm(x, ord, (-2, -1), keepdims)


# ------------------------------------------------------------------- the rules
register_rules({
    "max": amax, "amax": amax, "min": amin, "amin": amin, "ptp": ptp, "prod": prod,
    "var": var, "std": std, "cumsum": cumsum, "cumprod": cumprod,
    "cumulative_sum": _cumulative(cumsum, "cumulative_sum"),
    "cumulative_prod": _cumulative(cumprod, "cumulative_prod"),
    "linalg.norm": norm, "linalg.vector_norm": vector_norm, "linalg.matrix_norm": matrix_norm,
})

__all__ = ["amax", "amin", "cumprod", "cumsum", "logsumexp", "matrix_norm", "norm", "prod",
           "products_of_others", "ptp", "rebuilt", "std", "var", "vector_norm"]
