"""Dual numbers: forward mode by operator overloading, on the tracer's own rules.

A :class:`Dual` carries a value and a tangent, the derivative of that value
along one direction (or a stack of tangents along a leading axis, one per
direction, to push several directions at once).  It is a traced value of
another kind: its arithmetic, its numpy functions and its methods are the
tracer's (:class:`~minirad.tracing.tracer.Traced`), and every operation goes
through the same rules (:mod:`minirad.tracing.ops`, :mod:`minirad.tracing.rules`
and the modules beside them).  Instead of appending to a tape, a rule applied
to duals computes its value and, at once, the result's tangent: the sum over
the dual operands of the operand's Jacobian block applied to its tangent
(the partial times the tangent between numbers).  That is the forward sweep
of :mod:`minirad.exact.sweeps` done during the program instead of after it,
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
:func:`jacobian_by_duals` pushes all n directions in one pass with stacked
tangents, which saves Python's overhead but not the arithmetic.  Every numpy
function with a rule works on duals of arrays, as on traced arrays.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..graph.operators import OPERATORS, Operator, Retained
from .ops import Op
from .tracer import TRACED, Traced, check_entries, compute, elementwise_block

__all__ = ["Dual", "jacobian_by_duals", "jvp_by_duals"]


class Dual(Traced):
    """A value and its tangent (a float, an array of the value's shape, or either with
    one leading axis more: one tangent per direction)."""

    __slots__ = ("tangent",)

    def __init__(self, value, tangent=0.0):
        if isinstance(value, Traced) or isinstance(tangent, Traced):
            raise TypeError("a dual number's value and tangent are numbers or arrays; nested "
                            "duals (derivatives of derivatives) are not supported")
        super().__init__(None, -1, _operand(value))
        self.tangent = _tangent(tangent, self.value)

    def __repr__(self):
        return f"Dual({self.value!r}, tangent={self.tangent!r})"

    def _read_plain(self, convert, what: str):
        raise TypeError(f"{what} of a dual number would drop its tangent; use minirad.ops "
                        f"(ops.sin, ...) or numpy's functions instead of math")

    @classmethod
    def apply(cls, rule, args, params):
        """``rule`` on ``args`` (duals and constants): its value, and the tangent as the
        sum over the distinct dual operands of their block applied to their tangent."""
        if any(type(a) in TRACED for a in args):
            raise TypeError(f"{rule.name} mixes dual numbers and traced values; trace the "
                            f"program, or run it on dual numbers alone")
        values = [a.value if isinstance(a, Dual) else a for a in args]
        with np.errstate(all="ignore"):
            try:
                out = compute(rule, values, params)
            except (ArithmeticError, ValueError) as error:
                raise ValueError(f"{rule.name} of dual numbers is undefined: {error}") from None
            tangent = None
            for dual, positions in _distinct(args).values():
                label = _label(rule, positions, values, out, params)
                term = label * dual.tangent if type(label) is float else OPERATORS.multiply(
                    label, dual.tangent)
                tangent = term if tangent is None else tangent + term
        if not (np.isfinite(out).all() and np.isfinite(tangent).all()):
            raise ValueError(f"{rule.name} of dual numbers is not finite: value {out!r:.60}, "
                             f"tangent {tangent!r:.60}")
        return cls(out, tangent)


def _distinct(args) -> dict:
    """The dual operands, each once, with its positions among ``args`` (``x * x``: one
    operand at two positions, its partials added first, as the graph's one edge)."""
    found = {}
    for i, a in enumerate(args):
        if isinstance(a, Dual):
            found.setdefault(id(a), (a, []))[1].append(i)
    return found


class _NoEdge:
    """What a rule's block may ask of its edge, for blocks no graph keeps: the operands
    (their values), a record per array a block would keep (under a key no graph shares:
    blocks read the records' keys and sizes, nothing counts them), nothing gathered."""

    target = t = -1

    def __init__(self, values, out):
        # values, not tape positions: an int among them is a constant, so a float here
        self.operands = tuple(float(v) if type(v) is int else v for v in values)
        self._out = out

    def kept(self, words):
        names = ("x",) if len(self.operands) == 1 else ("a", "b")
        records = []
        for word in words.split():
            j = int(word) if word.isdigit() else None if word == "y" else names.index(word)
            value = self._out if j is None else self.operands[j]
            if np.ndim(value):   # a number is kept inside the block, as Edge.kept has it
                records.append(Retained(f"dual:{word}", int(np.size(value)) * np.dtype(
                    np.result_type(value)).itemsize * 8, what=word))
        return tuple(records)

    def gathered(self, j):
        return None

    def parameter(self, j):
        return True


def _label(rule, positions, values, out, params):
    """The operand's label, as the traced graph's edge has it: a float between numbers,
    a Jacobian block otherwise."""
    label = None
    for i in positions:
        if isinstance(rule, Op):
            numbers = not isinstance(out, np.ndarray)
            d = rule.partials[i](*values, out) if numbers else rule.on_arrays[1][i](*values, out)
            part = float(d) if numbers else elementwise_block(d, values[i], out)
        else:
            part = rule.block(i, values, out, _NoEdge(values, out), **params)
        label = part if label is None else OPERATORS.add(label, part)
    if isinstance(label, Operator) and label.out_shape == () == label.in_shape:
        label = float(label.to_dense()[0, 0])
    return label


def _operand(x):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (Real, np.ndarray)):
        raise TypeError(f"a dual number's value is a {type(x).__name__}; it must be a number "
                        f"or a numpy array of real numbers")
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "fiu":
            raise TypeError(f"a dual number's value is a real array, not one of {x.dtype}")
        return x.astype(np.float64) if x.dtype.kind in "iu" else x
    return float(x)


def _tangent(tangent, value):
    """A tangent as the dual keeps it: of the value's shape, or with one leading axis more
    (a stack of directions); a number stays a float (or a subclass of float: a tangent
    that counts its multiplications)."""
    if isinstance(tangent, (bool, np.bool_)) or not isinstance(tangent, (Real, np.ndarray)):
        raise TypeError(f"a tangent is a number or a numpy array, not a "
                        f"{type(tangent).__name__}")
    if not isinstance(tangent, np.ndarray):
        return tangent if isinstance(tangent, float) else float(tangent)
    tangent = np.asarray(tangent, dtype=np.float64)
    shape = np.shape(value)
    if tangent.shape == () and shape:
        return np.full(shape, float(tangent))
    if tangent.shape != shape and tangent.shape[1:] != shape:
        raise ValueError(f"the tangent of a value of shape {shape} has that shape, or one "
                         f"leading axis more (a stack of directions), not {tangent.shape}")
    return tangent


def _tangent_of(x):
    return x.tangent if isinstance(x, Dual) else np.zeros(np.shape(x))


def jvp_by_duals(f, args, tangents):
    """``f(*args)`` and its directional derivative along ``tangents`` (one per
    argument, each of its argument's shape, or with a leading axis of directions),
    by one forward pass on dual numbers.  Returns ``(value, tangent)``, each a tuple
    when ``f`` returns several values.

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
        return (tuple(r.value if isinstance(r, Dual) else r for r in result),
                tuple(_tangent_of(r) for r in result))
    return (result.value if isinstance(result, Dual) else result), _tangent_of(result)


def jacobian_by_duals(f, *args) -> np.ndarray:
    """The Jacobian of ``f`` at ``args`` (numbers) in one forward pass whose tangents
    are stacks: input ``j`` is seeded with the unit vector ``e_j``, so an output's
    tangent is its row of the Jacobian.  Rows: outputs; columns: inputs.

    >>> jacobian_by_duals(lambda a, b: (a * b, a + b), 2.0, 3.0)
    array([[3., 2.],
           [1., 1.]])
    """
    for x in args:
        if np.ndim(x):
            raise TypeError(f"jacobian_by_duals takes numbers, not an array of shape "
                            f"{np.shape(x)}; for arrays push directions with jvp_by_duals "
                            f"(a stack of tangents at once), or use minirad.jacobian")
    n = len(args)
    check_entries((n, n), "jacobian_by_duals: the seed directions")
    duals = [Dual(x, np.eye(n)[j]) for j, x in enumerate(args)]
    result = f(*duals)
    results = result if isinstance(result, (tuple, list)) else (result,)
    return np.array([np.broadcast_to(_tangent_of(r), (n,)) for r in results], dtype=float)

