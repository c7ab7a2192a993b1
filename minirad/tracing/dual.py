"""Dual numbers: forward mode by operator overloading, on the table of operations.

A :class:`Dual` carries a value and a tangent, the derivative of that value
along one direction (or a vector of tangents, one per direction, to push
several directions at once).  Each operation looks itself up in the same
table as the tracers (:data:`minirad.tracing.ops.OPS`), takes its value and
local partials from it, and sets the result's tangent to the sum over its
operands of partial x operand tangent: the chain rule applied the moment
the operation runs, with no graph kept.  That is the forward sweep of
:mod:`minirad.exact.sweeps` done during the program instead of after it,
and it gives the same numbers to the last bit (the suite checks it on random
programs of numbers and of arrays).

>>> from minirad import ops
>>> x1, x2 = Dual(2.0, 1.0), Dual(5.0, 0.0)            # seed the direction d/dx1
>>> y = ops.log(x1) + x1 * x2 - ops.sin(x2)
>>> round(y.value, 3), y.tangent                       # the lecture's y and dy/dx1
(11.652, 5.5)
>>> jacobian_by_duals(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0).round(3)
array([[5.5  , 1.716]])

One pass gives one column of the Jacobian (``J v`` for the seeded ``v``), so
a gradient of n inputs costs n passes, where a reverse sweep costs one;
:func:`jacobian_by_duals` pushes all n directions in one pass with a vector
tangent, which saves Python's overhead but not the arithmetic.

A dual's value may be a numpy array; its tangent then has the value's
shape, and besides the table's elementwise functions it follows the linear
array operations (``@``, ``sum``, indexing, ``reshape``, ``.T``,
``np.stack``, ``np.concatenate``) by applying them to the tangent too.
Duals of numbers also work inside object arrays (``np.tanh(W @ xs)``), as
traced numbers do.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from .ops import (
    COMPARISONS,
    IDENTITIES,
    OPS,
    UFUNCS,
    ComparesValues,
    Op,
    evaluate,
    evaluate_array,
)

__all__ = ["Dual", "jacobian_by_duals", "jvp_by_duals"]

# numpy functions linear in their array arguments: the tangent goes through them as is
_LINEAR = {np.stack, np.concatenate, np.sum, np.reshape, np.transpose, np.ravel,
           np.squeeze, np.expand_dims, np.moveaxis, np.swapaxes, np.mean}


class Dual(ComparesValues):
    """A value and its tangent (a float, an array of the value's shape, or for a
    number a vector: one tangent per direction)."""

    __slots__ = ("value", "tangent")
    __array_priority__ = 100  # numpy hands mixed expressions to us (ndarray * Dual)

    def __init__(self, value, tangent=0.0):
        if isinstance(value, Dual) or isinstance(tangent, Dual):
            raise TypeError("a dual number's value and tangent are numbers or arrays; nested "
                            "duals (derivatives of derivatives) are not supported")
        self.value, self.tangent = _operand(value, "value"), _tangent(tangent, value)

    def __repr__(self):
        return f"Dual({self.value!r}, tangent={self.tangent!r})"

    def _record(self, op: Op, args):
        """Apply the table's ``op`` to ``args`` (duals and constants):
        :mod:`minirad.ops` calls this for ``ops.sin(x)`` and the like."""
        return _apply(op, args)

    # arithmetic: one entry of the table each, both ways round
    def __add__(self, other):
        return _apply(OPS["add"], (self, other))

    def __radd__(self, other):
        return _apply(OPS["add"], (other, self))

    def __sub__(self, other):
        return _apply(OPS["sub"], (self, other))

    def __rsub__(self, other):
        return _apply(OPS["sub"], (other, self))

    def __mul__(self, other):
        return _apply(OPS["mul"], (self, other))

    def __rmul__(self, other):
        return _apply(OPS["mul"], (other, self))

    def __truediv__(self, other):
        return _apply(OPS["div"], (self, other))

    def __rtruediv__(self, other):
        return _apply(OPS["div"], (other, self))

    def __pow__(self, other):
        return _apply(OPS["pow"], (self, other))

    def __rpow__(self, other):
        return _apply(OPS["pow"], (other, self))

    def __neg__(self):
        return _apply(OPS["neg"], (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return _apply(OPS["abs"], (self,))

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __float__(self):
        raise TypeError("float() of a dual number would drop its tangent; use minirad.ops "
                        "(ops.sin, ...) instead of math")

    # the linear operations of arrays: the same operation on the tangent
    @property
    def shape(self) -> tuple:
        return np.shape(self.value)

    @property
    def T(self):
        return Dual(np.transpose(self.value), np.transpose(self.tangent))

    def __getitem__(self, index):
        # an entry of an array stays an array (of shape ()), as the array tracer keeps it
        return Dual(np.asarray(np.asarray(self.value)[index]),
                    np.asarray(np.asarray(self.tangent)[index]))

    def sum(self, axis=None, keepdims=False):
        axes = _axes(self.value, axis)  # as a tuple, as the sweep's sum block sums
        return Dual(np.asarray(np.sum(self.value, axis=axes, keepdims=keepdims)),
                    np.asarray(np.sum(self.tangent, axis=axes, keepdims=keepdims)))

    def mean(self, axis=None, keepdims=False):
        axes = _axes(self.value, axis)
        scale = 1.0 / np.prod([np.shape(self.value)[a] for a in axes])
        return Dual(np.asarray(np.mean(self.value, axis=axes, keepdims=keepdims)),
                    np.asarray(np.sum(self.tangent, axis=axes, keepdims=keepdims) * scale))

    def reshape(self, *shape):
        return Dual(np.reshape(self.value, *shape), np.reshape(self.tangent, *shape))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """``np.sin(d)``, ``np.maximum(d, 0.0)``, ``array * d``: the table's entry for
        numpy's ufunc, as :mod:`minirad.ops` would apply it."""
        name = ufunc.__name__
        if method != "__call__" or kwargs:
            raise TypeError(f"np.{name}.{method} with {sorted(kwargs)} is not supported on dual "
                            f"numbers; call np.{name}(...) plainly")
        if name in UFUNCS:
            return _apply(UFUNCS[name], inputs)
        if name == "matmul":
            return _matmul(*inputs)
        if name == "square":
            return _apply(OPS["pow"], (inputs[0], 2))
        if name in IDENTITIES:
            return inputs[0]
        if name in COMPARISONS:
            return ufunc(*(_value(x) for x in inputs))
        raise TypeError(f"np.{name} is not supported on dual numbers: it is not an entry of "
                        f"minirad's table of operations (minirad.tracing.ops.OPS)")

    def __array_function__(self, func, types, args, kwargs):
        """numpy functions linear in their arrays (``np.stack``, ``np.sum``, ...): the
        same function of the values and of the tangents."""
        if func in (np.sum, np.mean) and isinstance(args[0], Dual):
            return getattr(args[0], func.__name__)(*args[1:], **kwargs)
        if func not in _LINEAR:
            raise TypeError(f"np.{func.__name__} is not supported on dual numbers; the "
                            f"linear ones are: {', '.join(sorted(f.__name__ for f in _LINEAR))}")
        return Dual(func(*_map(args, _value), **kwargs), func(*_map(args, _tangent_of),
                                                             **kwargs))


# numpy applies np.sin, np.hypot, ... to the duals inside an object array by calling
# their methods of that name
for _op in OPS.values():
    if _op.ufunc == _op.name:
        setattr(Dual, _op.name, lambda *args, _op=_op: _apply(_op, args))


def _apply(op: Op, args):
    """The dual number of ``op`` at ``args``: value and partials from the table, and
    the tangent as the sum of partial x tangent over the distinct dual operands."""
    if any(isinstance(a, np.ndarray) and a.dtype == object for a in args):
        return NotImplemented  # an array of duals: numpy applies op entry by entry
    values = tuple(_operand(_value(a), f"an operand of {op.name}") for a in args)
    duals = [i for i, a in enumerate(args) if isinstance(a, Dual)]
    if any(isinstance(v, np.ndarray) for v in values):
        for i in duals:
            if not isinstance(args[i].value, np.ndarray) and np.ndim(args[i].tangent):
                raise ValueError(f"{op.name}: a dual number with a vector of tangents meets "
                                 f"an array; several directions at once are for programs of "
                                 f"numbers")
        value, partials = evaluate_array(op, values, duals)
    else:
        value, partials = evaluate(op, values, duals)
    # one term per distinct operand, its partials summed first (x * x: (x + x) t),
    # as the tracers merge them into one edge
    merged: dict[int, list] = {}
    for i, d in zip(duals, partials):
        key = id(args[i])
        if key in merged:
            merged[key][1] = merged[key][1] + d
        else:
            merged[key] = [args[i], d]
    # summed as the forward sweep sums, so that even the sign of a zero agrees: from
    # +0.0 on a graph of numbers, from the first term on a graph of arrays
    tangent = None if isinstance(value, np.ndarray) else 0.0
    for dual, d in merged.values():
        term = _times(d, dual.tangent)
        tangent = term if tangent is None else tangent + term
    if isinstance(value, np.ndarray) and np.shape(tangent) != value.shape:
        tangent = np.broadcast_to(tangent, value.shape).copy()  # x + array: spread out
    return Dual(value, tangent)


def _times(partial, tangent):
    """partial x tangent, a boolean mask selecting (as the sweep's mask blocks do)."""
    if isinstance(partial, np.ndarray) and partial.dtype == np.bool_:
        return np.where(partial, tangent, 0.0)
    return partial * tangent


def _matmul(a, b):
    """``a @ b`` with the product rule: ``da @ b + a @ db``."""
    value = np.matmul(_value(a), _value(b))
    terms = []
    if isinstance(a, Dual):
        terms.append(np.matmul(a.tangent, _value(b)))
    if isinstance(b, Dual):
        terms.append(np.matmul(_value(a), b.tangent))
    return Dual(value, terms[0] + terms[1] if len(terms) == 2 else terms[0])


def _axes(value, axis) -> tuple:
    """``axis`` of a sum over ``value`` as a sorted tuple of non-negative axes."""
    nd = np.ndim(value)
    if axis is None:
        return tuple(range(nd))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(sorted(int(a) % max(nd, 1) for a in axes))


def _value(x):
    return x.value if isinstance(x, Dual) else x


def _tangent_of(x):
    if isinstance(x, Dual):
        return x.tangent
    return np.zeros(np.shape(x)) if isinstance(x, (np.ndarray, Real)) else x


def _map(args, f):
    """``f`` on every dual in ``args``, inside lists and tuples too (np.stack's list)."""
    return tuple(type(a)(f(x) for x in a) if isinstance(a, (list, tuple)) else f(a)
                 for a in args)


def _operand(x, what: str):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (Real, np.ndarray)):
        raise TypeError(f"{what} is a {type(x).__name__}; dual numbers combine with numbers "
                        f"and numpy arrays of real numbers")
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "fiu":
            raise TypeError(f"{what} is an array of dtype {x.dtype}; dual numbers hold real "
                            f"floating-point arrays")
        return x.astype(np.float64) if x.dtype.kind in "iu" else x
    return float(x)


def _tangent(tangent, value):
    if isinstance(tangent, (bool, np.bool_)) or not isinstance(tangent, (Real, np.ndarray)):
        raise TypeError(f"a tangent is a number or a numpy array, not a "
                        f"{type(tangent).__name__}")
    if isinstance(tangent, np.ndarray):
        tangent = np.asarray(tangent, dtype=np.float64)
    elif not isinstance(tangent, float):  # a float (or a subclass: a counting tangent) stays
        tangent = float(tangent)
    shape = np.shape(value)
    if shape and np.shape(tangent) not in ((), shape):
        raise ValueError(f"the tangent of an array of shape {shape} has that shape, not "
                         f"{np.shape(tangent)}")
    if shape and np.shape(tangent) == ():
        tangent = np.full(shape, tangent)
    return tangent


def jvp_by_duals(f, args, tangents):
    """``f(*args)`` and its directional derivative along ``tangents`` (one per
    argument, each of its argument's shape; a number's may be a vector of
    directions), by one forward pass on dual numbers.  Returns ``(value, tangent)``,
    each a tuple when ``f`` returns several values.

    >>> from minirad import ops
    >>> jvp_by_duals(lambda x, y: x * ops.exp(y), (3.0, 0.0), (1.0, 1.0))
    (3.0, 4.0)
    """
    args, tangents = tuple(args), tuple(tangents)
    if len(args) != len(tangents):
        raise ValueError(f"jvp_by_duals needs one tangent per argument: {len(args)} arguments, "
                         f"{len(tangents)} tangents")
    result = f(*(Dual(x, t) for x, t in zip(args, tangents)))
    if isinstance(result, (tuple, list)):
        return tuple(_value(r) for r in result), tuple(_tangent_of(r) for r in result)
    return _value(result), _tangent_of(result)


def jacobian_by_duals(f, *args) -> np.ndarray:
    """The Jacobian of ``f`` at ``args`` (numbers) in one forward pass whose tangents
    are vectors: input ``j`` is seeded with the unit vector ``e_j``, so an output's
    tangent is its row of the Jacobian.  Rows: outputs; columns: inputs.

    >>> jacobian_by_duals(lambda a, b: (a * b, a + b), 2.0, 3.0)
    array([[3., 2.],
           [1., 1.]])
    """
    n = len(args)
    duals = [Dual(x, np.eye(n)[j]) for j, x in enumerate(args)]
    result = f(*duals)
    results = result if isinstance(result, (tuple, list)) else (result,)
    return np.array([np.broadcast_to(_tangent_of(r), (n,)) for r in results], dtype=float)
