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
shapes rebuild, so :func:`minirad.retained_memory` charges nothing for it (the
positions are worked out only when an algorithm reads the edge).  Except
for ``np.sort``: its permutation comes from the values, and the backward
pass keeps it (or sorts again).  At a tie sort follows its stable order, as
JAX and PyTorch do (see the Kinks of :mod:`minirad.tracing.ops`).

>>> import numpy as np, minirad
>>> g = minirad.trace(lambda x: np.sort(x)[0] * 10.0 + np.roll(x, 1)[0], np.array([3.0, 1.0, 2.0]))
>>> minirad.jacobian(g)                  # the smallest is x[1]; roll brings x[2] to the front
array([[ 0., 10.,  1.]])
"""

from __future__ import annotations

import functools

import numpy as np

from ..graph.operators import Broadcast, Gather, SumAxes, compose
from .reductions import rebuilt
from .rules import (
    Rule,
    check_entries,
    plain,
    refuse_options,
    register_rules,
    reshape,
    transpose,
)
from .tracer import Traced, read, record

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90", "sort", "take", "take_along_axis",
           "tile", "repeat", "pad", "diagonal", "diag", "triu", "tril", "trace", "expand_dims",
           "moveaxis", "broadcast_to", "atleast_1d", "atleast_2d", "atleast_3d", "hstack",
           "vstack", "dstack", "column_stack"]


def _moved_value(x, how, text):
    try:
        return np.array(how(np.asarray(x)))   # a copy: a view would share memory
    except MemoryError:
        raise ValueError(f"{text.format('x')} would not fit in memory") from None


def _moved_block(i, values, y, edge, how, text):
    x = np.asarray(values[0])
    ids = np.arange(1, x.size + 1, dtype=np.int64).reshape(x.shape)
    positions = np.asarray(how(ids)) - 1     # filled-in zeros become -1: a zero
    return Gather(x.shape, positions, x.dtype)


_RULES: dict[str, Rule] = {}   # one rule per numpy function, named after it


def rearranged(x, how, template: str):
    """``how(x)`` for a function ``how`` of one array that only moves entries (and may
    fill in zeros), recorded with the :class:`Gather` that ``how`` makes of the
    positions; ``template`` shows it (``"flip({0})"``).  ``how`` is kept with the
    recording and applied again by a replay: it may read shapes and constants only.
    On a plain array, ``how(x)``."""
    if not isinstance(x, Traced):
        return how(np.asarray(x))
    name = template.split("(")[0]
    rule = _RULES.get(name)
    if rule is None:
        rule = _RULES[name] = Rule(name, lambda p, k: k["text"].format(*p), _moved_value,
                                   _moved_block, moves=True)
    return record(rule, x, how=how, text=template)


def _frozen(k):
    """An index array (or list) as a rule keeps it: a traced one read (a replay checks it
    reads the same), and a read-only copy: changing the caller's array changes nothing."""
    if isinstance(k, Traced):
        k = read(np.array, k)
    if isinstance(k, (list, np.ndarray)):
        k = np.array(k)
        k.flags.writeable = False
    return k


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, not {value!r}")
    return int(value)


def _grown(shape, what: str) -> None:
    """Refuse before allocating: ``shape`` is the size a rearrangement would make."""
    check_entries(tuple(int(n) for n in shape), what)


def _shape(x) -> tuple:
    return np.shape(plain(x))


# -------------------------------------------------------- order and position
def flip(m, axis=None):
    axis = tuple(axis) if isinstance(axis, list) else axis
    return rearranged(m, lambda a: np.flip(a, axis), "flip({0})")


def fliplr(m):
    return rearranged(m, np.fliplr, "fliplr({0})")


def flipud(m):
    return rearranged(m, np.flipud, "flipud({0})")


def roll(a, shift, axis=None):
    shift, axis = _frozen(shift), _frozen(axis)
    return rearranged(a, lambda v: np.roll(v, shift, axis), f"roll({{0}}, {shift!r})")


def rot90(m, k=1, axes=(0, 1)):
    axes = _frozen(axes)
    return rearranged(m, lambda a: np.rot90(a, k, axes), f"rot90({{0}}, {k!r})")


def _sort_block(i, values, y, edge, axis):
    x = np.asarray(values[0])
    permutation = np.argsort(x, axis=axis, kind="stable")
    positions = np.take_along_axis(np.arange(x.size).reshape(x.shape), permutation, axis)
    return Gather(x.shape, positions, x.dtype,
                  rebuilt(edge, permutation, "the sorting permutation", "permutation"))


SORT = Rule("sort", "sort({0})", lambda x, axis: np.sort(x, axis=axis, kind="stable"),
            _sort_block, ("x",))


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    """``np.sort``: the gradient goes back through the permutation, which comes from the
    values (kept, or rebuilt by sorting x again); equal entries keep their order."""
    refuse_options("np.sort", order=order)
    if not isinstance(a, Traced):
        return np.sort(a, axis=axis)
    x = reshape(a, -1) if axis is None else a
    axis = 0 if axis is None else axis
    ndim = len(_shape(x))
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or not (
            -ndim <= axis < ndim):
        raise ValueError(f"np.sort: axis {axis!r} is out of range for shape {_shape(x)}")
    return record(SORT, x, axis=int(axis))


def _indices(indices, length: int, mode: str, what: str):
    """Indices into an axis of ``length`` entries as a rule keeps them (:func:`_frozen`),
    checked: integers, and inside the axis unless ``mode`` wraps or clips them."""
    indices = _frozen(indices)
    kind = np.asarray(indices).dtype
    if np.size(indices) and kind.kind not in "iu":
        raise TypeError(f"{what}: indices must be integers, not {kind}")
    if mode == "raise" and np.size(indices) and (
            np.min(indices) < -length or np.max(indices) >= length):
        raise ValueError(f"{what}: an index lies outside the {length} entries of the axis "
                         f"(-{length} to {length - 1})")
    return indices


def take(a, indices, axis=None, out=None, mode="raise"):
    refuse_options("np.take", out=out)
    if isinstance(a, Traced):
        shape, size = _shape(a), a.size
        length = size if axis is None else shape[axis % max(len(shape), 1)]
        indices = _indices(indices, length, mode, "np.take")
        rest = size if axis is None else size // max(length, 1)
        _grown((np.size(indices), rest if axis is not None else 1), "np.take")
    return rearranged(a, lambda v: np.take(v, indices, axis, mode=mode), "take({0}, c)")


def take_along_axis(arr, indices, axis=-1):
    if isinstance(arr, Traced):
        shape = _shape(arr)
        length = arr.size if axis is None else shape[axis % max(len(shape), 1)]
        indices = _indices(indices, length, "raise", "np.take_along_axis")
    return rearranged(arr, lambda v: np.take_along_axis(v, indices, axis),
                      "take_along_axis({0}, c)")


# ---------------------------------------------------------------- repetition
def tile(A, reps):
    reps = _frozen(reps)
    if isinstance(A, Traced):
        counts = (reps,) if np.ndim(reps) == 0 else tuple(reps)
        shape = (1,) * (len(counts) - A.ndim) + _shape(A)
        counts = (1,) * (len(shape) - len(counts)) + counts
        _grown([n * _count(c, "np.tile: reps") for n, c in zip(shape, counts)], "np.tile")
    return rearranged(A, lambda v: np.tile(v, reps), f"tile({{0}}, {reps!r})")


def repeat(a, repeats, axis=None):
    repeats = _frozen(repeats)
    if isinstance(a, Traced):
        times = np.asarray(repeats)
        if times.dtype.kind not in "iu" or np.any(times < 0):
            raise ValueError(f"np.repeat: repeats must be counts >= 0, not {repeats!r}")
        shape = _shape(a)
        along = a.size if axis is None else shape[axis % max(len(shape), 1)]
        total = int(times.sum()) if times.ndim else int(times) * along
        _grown((total, a.size // max(along, 1)), "np.repeat")
    return rearranged(a, lambda v: np.repeat(v, repeats, axis), f"repeat({{0}}, {repeats!r})")


def pad(array, pad_width, mode="constant", **options):
    """``np.pad`` in the modes that move entries: constant (any value: its derivative
    is 0), edge, wrap, reflect and symmetric (of even type)."""
    if mode not in ("constant", "edge", "wrap", "reflect", "symmetric") or \
            options.get("reflect_type", "even") != "even":
        raise TypeError(f"np.pad(mode={mode!r}, {options}) computes new values; traced "
                        f"arrays support the modes constant, edge, wrap, reflect and "
                        f"symmetric")
    if not isinstance(array, Traced):
        return np.pad(array, pad_width, mode, **options)
    pad_width = _frozen(pad_width)
    options = {k: _frozen(v) for k, v in options.items()}
    shape = _shape(array)
    widths = np.broadcast_to(np.asarray(pad_width), (len(shape), 2))
    _grown([n + int(w.sum()) for n, w in zip(shape, widths)], "np.pad")
    values = dict(options, constant_values=0) if mode == "constant" else options

    def how(v):   # the positions pad with 0 (a filled-in zero), the values as asked
        return np.pad(v, pad_width, mode, **(values if v.dtype == np.int64 else options))
    return rearranged(array, how, "pad({0})")


# -------------------------------------------------------------------- splits
def _pieces(split, what: str, along: bool):
    """The rule of ``np.split`` and its kin (``along``: the ones of a fixed axis)."""
    def rule(ary, indices_or_sections, axis=0):
        arguments = (indices_or_sections,) if along else (indices_or_sections, axis)
        if not isinstance(ary, Traced):
            return split(ary, *arguments)
        slices = split(np.arange(ary.size).reshape(_shape(ary)), *arguments)
        return [rearranged(ary, functools.partial(_flat_take, _frozen(s)),
                           f"{what}({{0}})[{i}]") for i, s in enumerate(slices)]
    return rule


def _flat_take(positions, v):
    return v.reshape(-1)[positions]


# ----------------------------------------------------------------- diagonals
def diagonal(a, offset=0, axis1=0, axis2=1):
    return rearranged(a, lambda v: np.diagonal(v, offset, axis1, axis2), "diagonal({0})")


def diag(v, k=0):
    """``np.diag``: a vector's matrix (zeros off the diagonal) or a matrix's diagonal."""
    if isinstance(v, Traced):
        shape = _shape(v)
        if len(shape) not in (1, 2):
            raise ValueError(f"np.diag takes a vector or a matrix, not shape {shape}")
        if len(shape) == 1:
            _grown(((v.size + abs(k)) ** 2,), "np.diag")
    return rearranged(v, lambda a: np.diag(a, k), "diag({0})")


def triu(m, k=0):
    return rearranged(m, lambda a: np.triu(a, k), "triu({0})")


def tril(m, k=0):
    return rearranged(m, lambda a: np.tril(a, k), "tril({0})")


def _trace_block(i, values, y, edge, offset, axis1, axis2):
    x = np.asarray(values[0])
    positions = np.diagonal(np.arange(x.size).reshape(x.shape), offset, axis1, axis2)
    summing = SumAxes(positions.shape, positions.ndim - 1, False, 1.0, x.dtype)
    return compose(summing, Gather(x.shape, positions, x.dtype))


TRACE = Rule("trace", "trace({0})",
             lambda x, offset, axis1, axis2: np.asarray(np.trace(x, offset, axis1, axis2)),
             _trace_block)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """``np.trace``: the sum of a diagonal, one vertex (a gather, then the sum)."""
    refuse_options("np.trace", dtype=dtype, out=out)
    if not isinstance(a, Traced):
        return np.trace(a, offset, axis1, axis2)
    try:   # numpy's checks of the axes, on a view that allocates nothing
        np.diagonal(np.broadcast_to(np.float32(0), _shape(a)), offset, axis1, axis2)
    except (TypeError, ValueError) as error:
        raise ValueError(f"np.trace: {error}") from None
    return record(TRACE, a, offset=offset, axis1=axis1, axis2=axis2)


# ------------------------------------------------ reshapes, transposes, broadcasts
def expand_dims(a, axis):
    if not isinstance(a, Traced):
        return np.expand_dims(a, axis)
    shape = np.expand_dims(np.broadcast_to(np.float32(0), _shape(a)), axis).shape
    return reshape(a, shape)


def moveaxis(a, source, destination):
    if not isinstance(a, Traced):
        return np.moveaxis(a, source, destination)
    return transpose(a, _moved_axes(len(_shape(a)), source, destination))


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


BROADCAST = Rule("broadcast_to", "broadcast_to({0}, {shape})",
                 lambda x, shape: np.array(np.broadcast_to(x, shape)),
                 lambda i, values, y, edge, shape: Broadcast(np.shape(values[0]), shape,
                                                             y.dtype), moves=True)


def broadcast_to(array, shape, subok=False):
    if not isinstance(array, Traced):
        return np.broadcast_to(array, shape)
    shape = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    _grown(shape, "np.broadcast_to")
    try:
        Broadcast(_shape(array), shape)
    except (TypeError, ValueError) as error:
        raise ValueError(f"np.broadcast_to: {error}") from None
    return record(BROADCAST, array, shape=tuple(int(n) for n in shape))


def _at_least(ndim: int):
    def one(x):
        if not isinstance(x, Traced):
            return getattr(np, f"atleast_{ndim}d")(x)
        shape = _shape(x)
        if len(shape) >= ndim:
            return x
        size = x.size
        shape = {1: (size,), 2: (1,) * (2 - len(shape)) + shape,
                 3: ((1, 1, 1) if not shape else (1, size, 1) if len(shape) == 1 else
                     shape + (1,))}[ndim]
        return reshape(x, shape)

    def rule(*arys):
        shaped = [one(x) for x in arys]
        return shaped[0] if len(shaped) == 1 else tuple(shaped)
    return rule


atleast_1d, atleast_2d, atleast_3d = (_at_least(n) for n in (1, 2, 3))


def _arrays(tup, what: str) -> list:
    if isinstance(tup, Traced):
        raise TypeError(f"{what} takes a sequence of arrays, not one traced array")
    return list(tup)


def hstack(tup, *, dtype=None, casting="same_kind"):
    refuse_options("np.hstack", dtype=dtype)
    arrays = [atleast_1d(a) for a in _arrays(tup, "np.hstack")]
    return np.concatenate(arrays, 0 if all(np.ndim(plain(a)) == 1 for a in arrays) else 1)


def vstack(tup, *, dtype=None, casting="same_kind"):
    refuse_options("np.vstack", dtype=dtype)
    return np.concatenate([atleast_2d(a) for a in _arrays(tup, "np.vstack")], 0)


def dstack(tup):
    return np.concatenate([atleast_3d(a) for a in _arrays(tup, "np.dstack")], 2)


def column_stack(tup):
    def column(a):
        return np.reshape(a, (-1, 1)) if np.ndim(plain(a)) < 2 else a
    return np.concatenate([column(a) for a in _arrays(tup, "np.column_stack")], 1)


register_rules({
    "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll, "rot90": rot90,
    "sort": sort, "take": take, "take_along_axis": take_along_axis, "tile": tile,
    "repeat": repeat, "pad": pad, "split": _pieces(np.split, "split", False),
    "array_split": _pieces(np.array_split, "array_split", False),
    "hsplit": _pieces(np.hsplit, "hsplit", True), "vsplit": _pieces(np.vsplit, "vsplit", True),
    "dsplit": _pieces(np.dsplit, "dsplit", True), "diagonal": diagonal, "diag": diag,
    "triu": triu, "tril": tril, "trace": trace, "expand_dims": expand_dims,
    "moveaxis": moveaxis, "broadcast_to": broadcast_to, "atleast_1d": atleast_1d,
    "atleast_2d": atleast_2d, "atleast_3d": atleast_3d, "hstack": hstack, "vstack": vstack,
    "dstack": dstack, "column_stack": column_stack,
    "linalg.diagonal": lambda x, /, *, offset=0: diagonal(x, offset, -2, -1),
    "linalg.trace": lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype),
})
