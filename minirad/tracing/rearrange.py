"""Rearrangements of traced arrays: the numpy functions that only move entries.

``np.flip``, ``roll``, ``rot90``, ``tile``, ``repeat``, ``take``,
``take_along_axis``, ``split`` (and ``array_split``, ``hsplit``, ...),
``diagonal``, ``diag``, ``triu``, ``tril``, ``pad``, ``sort`` and
``trace``; and, with the cheaper blocks of reshapes, transposes and
broadcasts, ``expand_dims``, ``moveaxis``, ``broadcast_to``, ``atleast_1d``
(2d, 3d) and ``hstack``, ``vstack``, ``dstack``, ``column_stack``.

A function that only moves entries (and perhaps fills in zeros) is its own
Jacobian: applied to the numbers 1, 2, ..., n laid out as x, it says where
each output entry comes from (0 where it is a filled-in zero).  So one rule,
:func:`rearranged`, serves them all: the edge is a
:class:`~minirad.graph.operators.Gather` of those positions, which the
shapes rebuild, so :func:`minirad.retained_memory` charges nothing for it.  Except
for ``np.sort``: its permutation comes from the values, and the backward
pass keeps it (or sorts again).  At a tie sort follows its stable order, as
JAX and PyTorch do (see the Kinks of :mod:`minirad.tracing.ops`).

>>> import numpy as np, minirad
>>> g = minirad.trace(lambda x: np.sort(x)[0] * 10.0 + np.roll(x, 1)[0], np.array([3.0, 1.0, 2.0]))
>>> minirad.jacobian(g)                  # the smallest is x[1]; roll brings x[2] to the front
array([[ 0., 10.,  1.]])
"""

from __future__ import annotations

import numpy as np

from ..graph.lcg import value_key
from ..graph.operators import Broadcast, Gather, Retained, SumAxes, compose, fresh_key
from .arrays import (
    Tracked,
    check_entries,
    concatenate,
    moved,
    plain,
    record,
    refuse_options,
    register_rules,
    reshape,
    transpose,
)

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90", "sort", "take", "take_along_axis",
           "tile", "repeat", "pad", "diagonal", "diag", "triu", "tril", "trace", "expand_dims",
           "moveaxis", "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d", "hstack",
           "vstack", "dstack", "column_stack"]


def rearranged(x, how, template: str, kept=None):
    """``how(x)`` for a function ``how`` of one array that only moves entries (and may
    fill in zeros), recorded with the :class:`Gather` that ``how`` makes of the
    positions; ``kept`` is its retained record when the positions are not the shapes'.
    On a plain array, ``how(x)``."""
    if not isinstance(x, Tracked):
        return how(np.asarray(x))
    ids = np.arange(1, x.size + 1, dtype=np.int64).reshape(x.shape)
    try:
        positions = np.asarray(how(ids)) - 1     # filled-in zeros become -1: a zero
        result = np.array(how(x.value))           # a copy: a view would share memory
    except MemoryError:
        raise ValueError(f"{template.format('x')} would not fit in memory") from None
    op = Gather(x.shape, positions, x.dtype, kept)
    if positions.size and positions.min() >= 0:   # a plain gather: injection may sample x
        x.tape.gathers[value_key(x.tape.next_index)] = (x.value, op)
    return moved(x, result, template, op)


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {value!r}")
    return int(value)


def _grown(x, shape, what: str) -> None:
    """Refuse before allocating: ``shape`` is the size a rearrangement would make."""
    check_entries(tuple(int(n) for n in shape), what)


# -------------------------------------------------------- order and position
def flip(m, axis=None):
    return rearranged(m, lambda a: np.flip(a, axis), "flip({0})")


def fliplr(m):
    return rearranged(m, np.fliplr, "fliplr({0})")


def flipud(m):
    return rearranged(m, np.flipud, "flipud({0})")


def roll(a, shift, axis=None):
    return rearranged(a, lambda v: np.roll(v, shift, axis), f"roll({{0}}, {shift!r})")


def rot90(m, k=1, axes=(0, 1)):
    return rearranged(m, lambda a: np.rot90(a, k, axes), f"rot90({{0}}, {k!r})")


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort``: the gradient goes back through the permutation, which comes from the
    values (kept, or rebuilt by sorting x again); equal entries keep their order."""
    refuse_options("np.sort", order=order)
    if not isinstance(a, Tracked):
        return np.sort(a, axis=axis)
    x = reshape(a, -1) if axis is None else a
    axis = 0 if axis is None else axis
    try:
        permutation = np.argsort(x.value, axis=axis, kind="stable")
    except (TypeError, ValueError) as error:   # numpy's AxisError is a ValueError
        raise ValueError(f"np.sort: axis {axis!r} of shape {x.shape}: {error}") from None
    positions_bits = permutation.size * 64
    kept = (Retained(fresh_key("permutation"), positions_bits,
                     recompute_from=x.tape.key(x),
                     source_bits=x.value.size * x.value.itemsize * 8,
                     what="the sorting permutation"),)
    return rearranged(x, lambda v: np.take_along_axis(v, permutation, axis), "sort({0})", kept)


def take(a, indices, axis=None, out=None, mode="raise"):
    refuse_options("np.take", out=out)
    indices = np.asarray(plain(indices))
    if isinstance(a, Tracked):
        rest = a.size if axis is None else a.size // max(a.shape[axis % max(a.ndim, 1)], 1)
        _grown(a, (indices.size, rest if axis is not None else 1), "np.take")
    return rearranged(a, lambda v: np.take(v, indices, axis, mode=mode), "take({0}, c)")


def take_along_axis(arr, indices, axis=-1):
    indices = np.asarray(plain(indices))
    return rearranged(arr, lambda v: np.take_along_axis(v, indices, axis),
                      "take_along_axis({0}, c)")


# ---------------------------------------------------------------- repetition
def tile(A, reps):
    if isinstance(A, Tracked):
        counts = (reps,) if np.ndim(reps) == 0 else tuple(reps)
        shape = (1,) * (len(counts) - A.ndim) + A.shape
        counts = (1,) * (len(shape) - len(counts)) + counts
        _grown(A, [n * _count(c, "np.tile: reps") for n, c in zip(shape, counts)], "np.tile")
    return rearranged(A, lambda v: np.tile(v, reps), f"tile({{0}}, {reps!r})")


def repeat(a, repeats, axis=None):
    if isinstance(a, Tracked):
        times = np.asarray(repeats)
        if times.dtype.kind not in "iu" or np.any(times < 0):
            raise ValueError(f"np.repeat: repeats must be counts >= 0, not {repeats!r}")
        along = a.size if axis is None else a.shape[axis % max(a.ndim, 1)]
        total = int(times.sum()) if times.ndim else int(times) * along
        _grown(a, (total, a.size // max(along, 1)), "np.repeat")
    return rearranged(a, lambda v: np.repeat(v, repeats, axis), f"repeat({{0}}, {repeats!r})")


def pad(array, pad_width, mode="constant", **options):
    """``np.pad`` in the modes that move entries: constant (any value: its derivative
    is 0), edge, wrap, reflect and symmetric (of even type)."""
    if mode not in ("constant", "edge", "wrap", "reflect", "symmetric") or \
            options.get("reflect_type", "even") != "even":
        raise TypeError(f"np.pad(mode={mode!r}, {options}) computes new values; traced "
                        f"arrays support the modes constant, edge, wrap, reflect and "
                        f"symmetric")
    if not isinstance(array, Tracked):
        return np.pad(array, pad_width, mode, **options)
    widths = np.broadcast_to(np.asarray(pad_width), (array.ndim, 2))
    _grown(array, [n + int(w.sum()) for n, w in zip(array.shape, widths)], "np.pad")
    values = dict(options, constant_values=0) if mode == "constant" else options

    def how(v):   # the positions pad with 0 (a filled-in zero), the values as asked
        return np.pad(v, pad_width, mode, **(values if v.dtype == np.int64 else options))
    return rearranged(array, how, "pad({0})")


# -------------------------------------------------------------------- splits
def _pieces(function, what: str):
    def rule(ary, indices_or_sections, axis=0):
        if not isinstance(ary, Tracked):
            return function(ary, indices_or_sections, axis)
        slices = function(np.arange(ary.size).reshape(ary.shape), indices_or_sections, axis)
        return [rearranged(ary, lambda v, s=s: v.reshape(-1)[s], f"{what}({{0}})[{i}]")
                for i, s in enumerate(slices)]
    return rule


def _pieces_along(function, what: str):
    def rule(ary, indices_or_sections):
        if not isinstance(ary, Tracked):
            return function(ary, indices_or_sections)
        slices = function(np.arange(ary.size).reshape(ary.shape), indices_or_sections)
        return [rearranged(ary, lambda v, s=s: v.reshape(-1)[s], f"{what}({{0}})[{i}]")
                for i, s in enumerate(slices)]
    return rule


# ----------------------------------------------------------------- diagonals
def diagonal(a, offset=0, axis1=0, axis2=1):
    return rearranged(a, lambda v: np.diagonal(v, offset, axis1, axis2), "diagonal({0})")


def diag(v, k=0):
    """``np.diag``: a vector's matrix (zeros off the diagonal) or a matrix's diagonal."""
    if isinstance(v, Tracked):
        if v.ndim not in (1, 2):
            raise ValueError(f"np.diag takes a vector or a matrix, not shape {v.shape}")
        if v.ndim == 1:
            _grown(v, ((v.size + abs(k)) ** 2,), "np.diag")
    return rearranged(v, lambda a: np.diag(a, k), "diag({0})")


def triu(m, k=0):
    return rearranged(m, lambda a: np.triu(a, k), "triu({0})")


def tril(m, k=0):
    return rearranged(m, lambda a: np.tril(a, k), "tril({0})")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``np.trace``: the sum of a diagonal, one vertex (a gather, then the sum)."""
    refuse_options("np.trace", dtype=dtype, out=out)
    if not isinstance(a, Tracked):
        return np.trace(a, offset, axis1, axis2)
    positions = np.diagonal(np.arange(a.size).reshape(a.shape), offset, axis1, axis2)
    gather = Gather(a.shape, positions, a.dtype)
    summing = SumAxes(positions.shape, positions.ndim - 1, False, 1.0, a.dtype)
    result = np.trace(a.value, offset, axis1, axis2)
    return record(a.tape, result, "trace({0})", [(a, compose(summing, gather))])


# ------------------------------------------------ reshapes, transposes, broadcasts
def expand_dims(a, axis):
    if not isinstance(a, Tracked):
        return np.expand_dims(a, axis)
    shape = np.expand_dims(np.broadcast_to(np.float32(0), a.shape), axis).shape
    return reshape(a, shape)


def moveaxis(a, source, destination):
    if not isinstance(a, Tracked):
        return np.moveaxis(a, source, destination)
    return transpose(a, _moved_axes(a.ndim, source, destination))


def _moved_axes(ndim: int, source, destination) -> tuple[int, ...]:
    """The transpose that is ``np.moveaxis``: which old axis each new one is."""
    def axes(given):
        listed = [given] if np.ndim(given) == 0 else list(given)
        if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                   and -ndim <= a < ndim for a in listed):
            raise ValueError(f"np.moveaxis: axes {source!r} and {destination!r} must be "
                             f"distinct axes of {ndim}")
        return [int(a) % ndim for a in listed]
    sources, targets = axes(source), axes(destination)
    if len(sources) != len(targets) or len(set(sources)) < len(sources) or \
            len(set(targets)) < len(targets):
        raise ValueError(f"np.moveaxis: axes {source!r} and {destination!r} must be as many "
                         f"distinct axes")
    order = [n for n in range(ndim) if n not in sources]
    for target, moved_axis in sorted(zip(targets, sources)):
        order.insert(target, moved_axis)
    return tuple(order)


def broadcast_to(array, shape, subok=False):
    if not isinstance(array, Tracked):
        return np.broadcast_to(array, shape)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    _grown(array, shape, "np.broadcast_to")
    try:
        op = Broadcast(array.shape, shape, array.dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"np.broadcast_to: {error}") from None
    result = np.array(np.broadcast_to(array.value, shape))
    return moved(array, result, f"broadcast_to({{0}}, {shape})", op)


def _at_least(ndim: int):
    def one(x):
        if not isinstance(x, Tracked):
            return getattr(np, f"atleast_{ndim}d")(x)
        if x.ndim >= ndim:
            return x
        shape = {1: (x.size,), 2: (1,) * (2 - x.ndim) + x.shape,
                 3: ((1, 1, 1) if x.ndim == 0 else (1, x.size, 1) if x.ndim == 1 else
                     x.shape + (1,))}[ndim]
        return reshape(x, shape)

    def rule(*arys):
        shaped = [one(x) for x in arys]
        return shaped[0] if len(shaped) == 1 else tuple(shaped)
    return rule


atleast_1d, atleast_2d, atleast_3d = (_at_least(n) for n in (1, 2, 3))


def _arrays(tup, what: str) -> list:
    if isinstance(tup, Tracked):
        raise TypeError(f"{what} takes a sequence of arrays, not one traced array")
    return list(tup)


def hstack(tup, *, dtype=None, casting="same_kind"):
    refuse_options("np.hstack", dtype=dtype)
    arrays = [atleast_1d(a) for a in _arrays(tup, "np.hstack")]
    return concatenate(arrays, 0 if all(np.ndim(plain(a)) == 1 for a in arrays) else 1)


def vstack(tup, *, dtype=None, casting="same_kind"):
    refuse_options("np.vstack", dtype=dtype)
    return concatenate([atleast_2d(a) for a in _arrays(tup, "np.vstack")], 0)


def dstack(tup):
    return concatenate([atleast_3d(a) for a in _arrays(tup, "np.dstack")], 2)


def column_stack(tup):
    def column(a):
        if np.ndim(plain(a)) < 2:
            return reshape(a, (-1, 1)) if isinstance(a, Tracked) else np.reshape(a, (-1, 1))
        return a
    return concatenate([column(a) for a in _arrays(tup, "np.column_stack")], 1)


register_rules({
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90,
    "sort": sort, "take": take, "take_along_axis": take_along_axis, "tile": tile,
    "repeat": repeat, "pad": pad, "split": _pieces(np.split, "split"),
    "array_split": _pieces(np.array_split, "array_split"),
    "hsplit": _pieces_along(np.hsplit, "hsplit"), "vsplit": _pieces_along(np.vsplit, "vsplit"),
    "dsplit": _pieces_along(np.dsplit, "dsplit"), "diagonal": diagonal, "diag": diag,
    "triu": triu, "tril": tril, "trace": trace, "expand_dims": expand_dims,
    "moveaxis": moveaxis, "broadcast_to": broadcast_to, "atleast_1d": atleast_1d,
    "atleast_2d": atleast_2d, "atleast_3d": atleast_3d, "hstack": hstack, "vstack": vstack,
    "dstack": dstack, "column_stack": column_stack,
    "linalg.diagonal": lambda x, /, *, offset=0: diagonal(x, offset, -2, -1),
    "linalg.trace": lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype),
})
