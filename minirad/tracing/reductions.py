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
from ..graph.operators import CumSum, Diagonal, Mask, Reshape, SumAxes, compose
from .arrays import (
    Tracked,
    as_float_dtype,
    check_entries,
    elementwise,
    record,
    refuse_options,
    register_rules,
    sum_,
)
from .ops import OPS
from .recording import replayable


def _summing(x: Tracked, axis, keepdims: bool, what: str) -> SumAxes:
    try:
        return SumAxes(x.shape, axis, keepdims, 1.0, x.dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{what} over axis={axis!r} of shape {x.shape}: {error}") from None


def _template(what: str, axis) -> str:
    return f"{what}({{0}})" if axis is None else f"{what}({{0}}, axis={axis})"


def _weighted(x: Tracked, out, weights, summing: SumAxes, template: str, kept_what: str):
    """Record ``out``, whose edge from ``x`` is ``sum ∘ diag(weights)`` (a bit mask when
    the weights are booleans), the weights kept as rebuilt from x."""
    kept = x.tape.retain_rebuilt(weights, x, kept_what)
    if weights.dtype == np.bool_:
        inner = Mask(weights, x.dtype, kept)
    else:
        inner = Diagonal(weights.astype(x.dtype, copy=False), x.shape, kept)
    return record(x.tape, out, template, [(x, compose(summing, inner))])


def _not_empty(x: Tracked, summing: SumAxes, what: str) -> None:
    if any(x.shape[a] == 0 for a in summing.axes) or x.size == 0:
        raise ValueError(f"{what} of an empty selection (shape {x.shape}) has no value")


# ----------------------------------------------------------------- max and min
def _extreme(which, what: str):
    def rule(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        refuse_options(f"np.{what}", out=out, initial=initial, where=where)
        if not isinstance(a, Tracked):
            return which(a, axis=axis, keepdims=keepdims)
        summing = _summing(a, axis, keepdims, what)
        _not_empty(a, summing, what)
        value = a.value
        result = which(value, axis=summing.axes, keepdims=keepdims)
        ties = value == which(value, axis=summing.axes, keepdims=True)
        count = ties.sum(axis=summing.axes, keepdims=True)
        if np.all(count == 1):
            weights = ties
        else:   # k entries tie for the extreme: 1/k each (the convention of maximum's 1/2)
            weights = ties / count
        return _weighted(a, result, weights, summing, _template(what, axis),
                         f"where the {what} is")
    rule.__name__ = rule.__qualname__ = what
    rule.__doc__ = (f"``np.{what}(x, axis, keepdims=...)``: the derivative goes to the "
                    f"{what}, shared equally by entries that tie for it.")
    return rule


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


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """``np.prod``: each entry's weight is the product of the others (zeros included)."""
    refuse_options("np.prod", out=out, initial=initial, where=where)
    if not isinstance(a, Tracked):
        return np.prod(a, axis=axis, keepdims=keepdims)
    summing = _summing(a, axis, keepdims, "prod")
    value = a.value
    reduced = summing.axes
    ends = tuple(range(value.ndim - len(reduced), value.ndim))
    moved = np.moveaxis(value, reduced, ends)
    lines = moved.reshape(moved.shape[:value.ndim - len(reduced)] + (-1,))
    with np.errstate(all="ignore"):
        others = np.moveaxis(products_of_others(lines).reshape(moved.shape), ends, reduced)
        result = np.prod(value, axis=reduced, keepdims=keepdims)
    traced = _weighted(a, result, others, summing, _template("prod", axis),
                       "the products of the other entries")
    return as_float_dtype(traced, dtype, "np.prod")


# ------------------------------------------------------------------ variances
def _spread(which: str):
    def rule(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
             mean=None, correction=None):
        refuse_options(f"np.{which}", out=out, where=where, mean=mean)
        if correction is not None:
            ddof = correction
        if not isinstance(a, Tracked):
            return getattr(np, which)(a, axis=axis, ddof=ddof, keepdims=keepdims)
        summing = _summing(a, axis, keepdims, which)
        count = math.prod(a.shape[i] for i in summing.axes)
        if not isinstance(ddof, (int, float, np.integer, np.floating)) or not (
                0 <= ddof < count):
            raise ValueError(f"np.{which}: ddof={ddof!r} must lie in [0, {count}), the number "
                             f"of entries reduced")
        value = a.value
        centered = value - value.mean(axis=summing.axes, keepdims=True)
        result = getattr(np, which)(value, axis=summing.axes, ddof=ddof, keepdims=keepdims)
        scale = count - ddof
        if which == "var":
            weights = 2 * centered / scale
        else:   # d std = d var / (2 std); 0 where std is 0, as abs at 0 (Kinks)
            spread = np.std(value, axis=summing.axes, ddof=ddof, keepdims=True)
            safe = np.where(spread > 0, spread, 1)
            weights = np.where(spread > 0, centered / (scale * safe), 0)
        traced = _weighted(a, result, weights, summing, _template(which, axis),
                           "the deviations from the mean")
        return as_float_dtype(traced, dtype, f"np.{which}")
    rule.__name__ = rule.__qualname__ = which
    rule.__doc__ = f"``np.{which}(x, axis, ddof=...)``, one vertex."
    return rule


var = _spread("var")
std = _spread("std")


# ------------------------------------------------------------ running sums
def _running(a, axis, what: str):
    """The axis a running sum or product runs along (0 of the flattened array for None),
    and the reshape that flattens (or None)."""
    if axis is None:
        return 0, Reshape(a.shape, (a.size,), a.dtype)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not (
            -a.ndim <= axis < a.ndim):
        raise ValueError(f"{what}: axis {axis!r} is out of range for shape {a.shape}")
    return int(axis) % a.ndim, None


def cumsum(a, axis=None, dtype=None, out=None):
    """``np.cumsum``: its edge is the running sum itself (:class:`CumSum`)."""
    refuse_options("np.cumsum", out=out)
    if not isinstance(a, Tracked):
        return np.cumsum(a, axis=axis)
    axis_, flatten = _running(a, axis, "cumsum")
    result = np.cumsum(a.value, axis=axis)
    block = CumSum(result.shape, axis_, a.dtype)
    if flatten is not None:
        block = compose(block, flatten)
    traced = record(a.tape, result, _template("cumsum", axis), [(a, block)])
    return as_float_dtype(traced, dtype, "np.cumsum")


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


def cumprod(a, axis=None, dtype=None, out=None):
    """``np.cumprod``: a contraction with each line's triangle of partial products."""
    refuse_options("np.cumprod", out=out)
    if not isinstance(a, Tracked):
        return np.cumprod(a, axis=axis)
    axis_, flatten = _running(a, axis, "cumprod")
    value = a.value.reshape(-1) if flatten is not None else a.value
    lines = np.moveaxis(value, axis_, -1)
    length = lines.shape[-1] if lines.ndim else 1
    check_entries(lines.shape + (length,), "cumprod: the partial products")
    with np.errstate(all="ignore"):
        triangles = _partial_products(lines)
        result = np.cumprod(a.value, axis=axis)
    letters = string.ascii_letters[:value.ndim]
    line, running = letters[axis_], string.ascii_letters[value.ndim]
    rest = letters.replace(line, "")
    subscripts = f"{rest}{running}{line},{letters}->{letters.replace(line, running)}"
    block = Einsum(subscripts, [triangles], 1, value.shape, a.dtype,
                   a.tape.retain_rebuilt(triangles, a, "the partial products"))
    if flatten is not None:
        block = compose(block, flatten)
    traced = record(a.tape, result, _template("cumprod", axis), [(a, block)])
    return as_float_dtype(traced, dtype, "np.cumprod")


def _cumulative(function, what: str):
    """``np.cumulative_sum`` and ``np.cumulative_prod`` (numpy 2), without the initial."""
    def rule(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
        if include_initial:
            raise TypeError(f"np.{what}(include_initial=True): not supported on traced "
                            f"arrays; concatenate the initial value yourself")
        if axis is None and np.ndim(x.value if isinstance(x, Tracked) else x) > 1:
            raise ValueError(f"np.{what} needs an axis for arrays of more than one axis")
        return function(x, 0 if axis is None else axis, dtype, out)
    return rule


# ------------------------------------------------------------------ logsumexp
@replayable   # called directly, not through numpy: its calls are steps of the recording
def logsumexp(x, axis=None, keepdims=False):
    """``log(sum(exp(x), axis))``, computed stably (the largest entry taken out); its
    edge is ``sum ∘ diag(softmax(x))``.

    >>> import minirad
    >>> g = minirad.trace(lambda x: logsumexp(x), np.array([1000.0, 1000.0]))
    >>> float(g.value("y")), minirad.jacobian(g)     # 1000 + log 2, softmax = [1/2, 1/2]
    (1000.6931471805599, array([[0.5, 0.5]]))
    """
    value = np.asarray(x.value if isinstance(x, Tracked) else x)
    axes = tuple(range(value.ndim)) if axis is None else axis
    top = np.max(value, axis=axes, keepdims=True)
    with np.errstate(all="ignore"):
        kept = top + np.log(np.sum(np.exp(value - top), axis=axes, keepdims=True))
    result = kept if keepdims else np.squeeze(kept, axis=axes)
    if not isinstance(x, Tracked):
        return result
    summing = _summing(x, axis, keepdims, "logsumexp")
    return _weighted(x, result, np.exp(value - kept), summing, _template("logsumexp", axis),
                     "softmax of the entries")


# ---------------------------------------------------------------------- norms
def _two_norm(x: Tracked, axis, keepdims: bool, result):
    """The 2-norm (Frobenius) over ``axis``, whose value numpy gave as ``result``."""
    summing = _summing(x, axis, keepdims, "norm")
    value = x.value
    size = np.sqrt(np.sum(value * value, axis=summing.axes, keepdims=True))
    safe = np.where(size > 0, size, 1)
    weights = np.where(size > 0, value / safe, 0)   # 0 at the zero vector (Kinks)
    return _weighted(x, result, weights.astype(x.dtype), summing, _template("norm", axis),
                     "the direction x / |x|")


def _vector_norm(x, order, axis, keepdims):
    """The vector norm of ``order`` along ``axis`` (one axis, or None for all)."""
    magnitude = elementwise(OPS["abs"], x)
    if order == np.inf:
        return amax(magnitude, axis, keepdims=keepdims)
    if order == -np.inf:
        return amin(magnitude, axis, keepdims=keepdims)
    if order == 0:   # how many entries are not zero: a count, constant at the traced point
        count = np.count_nonzero(x.value, axis=axis, keepdims=keepdims)
        return np.asarray(count, dtype=x.dtype)
    if order == 1:
        return sum_(magnitude, axis, keepdims)
    return sum_(magnitude ** order, axis, keepdims) ** (1.0 / order)


def _matrix_norm(x, order, axes, keepdims):
    """The matrix norms that are sums and maxima of entries: 1, -1, inf, -inf."""
    rows, columns = (a % x.ndim for a in axes)
    summed, extreme = (rows, columns) if order in (1, -1) else (columns, rows)
    sums = sum_(elementwise(OPS["abs"], x), summed, keepdims=True)
    result = (amax if order > 0 else amin)(sums, extreme, keepdims=True)
    if keepdims:
        return result
    shape = tuple(n for i, n in enumerate(x.shape) if i not in (rows, columns))
    return result.reshape(shape)


def norm(x, ord=None, axis=None, keepdims=False):
    """``np.linalg.norm``: the 2-norm and Frobenius norm as one vertex; the 1, inf and
    other vector norms, and the 1 and inf matrix norms, by abs, sum and max."""
    if not isinstance(x, Tracked):
        return np.linalg.norm(x, ord, axis, keepdims)
    result = np.linalg.norm(x.value, ord, axis, keepdims)   # numpy's value, and its checks
    axes = (tuple(range(x.ndim)) if axis is None else
            tuple(axis) if isinstance(axis, (tuple, list)) else (axis,))
    if ord is None or ord == (2 if len(axes) == 1 else "fro"):
        return _two_norm(x, axes, keepdims, result)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if ord in (1, -1, np.inf, -np.inf):
        return _matrix_norm(x, ord, axes, keepdims)
    raise TypeError(f"np.linalg.norm(ord={ord!r}) of a matrix needs its singular values, "
                    f"which have no rule on traced arrays")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """``np.linalg.vector_norm``: all entries as one vector unless ``axis`` says."""
    if axis is None and isinstance(x, Tracked):
        result = norm(x.reshape(-1), ord, 0)
        return result.reshape((1,) * x.ndim) if keepdims else result
    return norm(x, ord, axis, keepdims) if isinstance(x, Tracked) else \
        np.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)


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
           "products_of_others", "ptp", "std", "var", "vector_norm"]
