"""The source text of the rules: each formula of the operation table as numpy code.

Code generation (:mod:`minirad.tracing.codegen`) writes a traced program out as
Python.  It needs, for every operation, its value and its local partials as
*source text*.  They are not written here a second time: an entry of the
operation table (:mod:`minirad.tracing.ops`) already holds them as Python
functions, and :func:`formula` reads the text off such a function by running
it once on :class:`Symbol` operands, which record every operation done to them
(``lambda x, y: 1.0 - y * y`` run on symbols gives ``1.0 - y * y``, and
``np.cos`` gives ``np.cos(x)``).  The generated code then makes exactly the
calls the rule makes, in the same order, so it computes the same numbers to the
last bit.  A function whose result depends on a value it looks at (an ``if``,
``math.cos``, which wants a float) cannot be read this way; code generation then
calls the function itself, by name.

The rules of :mod:`minirad.tracing.rules` give their derivative as an operator
(a Jacobian block), not as a formula; :data:`VALUES` and :data:`PRODUCTS` hold
the few rules whose value and vector-Jacobian product code generation writes
out as numpy (a matrix product, a sum), each checked against the rule itself in
``tests/test_codegen.py``.  Every other rule is called by name, its block built
from the values and applied (``J.apply_transpose(u)``).

>>> from minirad.tracing.ops import OPS
>>> formula(OPS["tanh"].on_arrays[1][0], 2)     # d tanh(x)/dx from y = tanh(x)
'1.0 - {1} * {1}'
>>> formula(OPS["sin"].on_arrays[0], 1), formula(OPS["sin"].partials[0], 2)
('np.sin({0})', None)
"""

from __future__ import annotations

import functools
import keyword
import math

import numpy as np

from .rules import MATMUL

__all__ = ["PRODUCTS", "Symbol", "Unwritable", "VALUES", "formula", "literal", "operand_text",
           "python_name"]

# Python's operator precedence, lowest first (the few levels generated code uses)
COMPARE, ADDITIVE, MULTIPLICATIVE, UNARY, POWER, ATOM = range(6)
_BINARY = {"+": ADDITIVE, "-": ADDITIVE, "*": MULTIPLICATIVE, "/": MULTIPLICATIVE,
           "@": MULTIPLICATIVE, "//": MULTIPLICATIVE, "%": MULTIPLICATIVE, "**": POWER,
           "<": COMPARE, "<=": COMPARE, ">": COMPARE, ">=": COMPARE, "==": COMPARE,
           "!=": COMPARE}


class Unwritable(Exception):
    """A function cannot be read as a formula (it looked at a value)."""


class Symbol:
    """A stand-in operand that records what is done to it as Python source."""

    __slots__ = ("text", "precedence")
    __array_priority__ = 10_000     # numpy hands every mixed operation to the symbol

    def __init__(self, text: str, precedence: int = ATOM):
        self.text, self.precedence = text, precedence

    def __repr__(self):
        return f"Symbol({self.text!r})"

    def _binary(self, other, op: str, reflected: bool = False):
        left, right = (other, self) if reflected else (self, other)
        level = _BINARY[op]
        right_assoc = op == "**"
        a = operand_text(left, level + right_assoc)
        b = operand_text(right, level + (not right_assoc))
        return Symbol(f"{a} {op} {b}", level)

    def __add__(self, other):
        return self._binary(other, "+")

    def __radd__(self, other):
        return self._binary(other, "+", True)

    def __sub__(self, other):
        return self._binary(other, "-")

    def __rsub__(self, other):
        return self._binary(other, "-", True)

    def __mul__(self, other):
        return self._binary(other, "*")

    def __rmul__(self, other):
        return self._binary(other, "*", True)

    def __truediv__(self, other):
        return self._binary(other, "/")

    def __rtruediv__(self, other):
        return self._binary(other, "/", True)

    def __pow__(self, other):
        return self._binary(other, "**")

    def __rpow__(self, other):
        return self._binary(other, "**", True)

    def __matmul__(self, other):
        return self._binary(other, "@")

    def __rmatmul__(self, other):
        return self._binary(other, "@", True)

    def __lt__(self, other):
        return self._binary(other, "<")

    def __le__(self, other):
        return self._binary(other, "<=")

    def __gt__(self, other):
        return self._binary(other, ">")

    def __ge__(self, other):
        return self._binary(other, ">=")

    def __eq__(self, other):
        return self._binary(other, "==")

    def __ne__(self, other):
        return self._binary(other, "!=")

    __hash__ = object.__hash__

    def __neg__(self):
        return Symbol(f"-{operand_text(self, UNARY)}", UNARY)

    def __pos__(self):
        return self

    def __bool__(self):
        raise Unwritable("the function branches on a value")

    def __float__(self):
        raise Unwritable("the function needs a float")

    __int__ = __index__ = __float__

    def __array__(self, *args, **kwargs):
        raise Unwritable("the function makes an array of the operand")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs:
            raise Unwritable(f"numpy's {ufunc.__name__}.{method} with options")
        return _call(f"np.{ufunc.__name__}", inputs, {})

    def __array_function__(self, func, types, args, kwargs):
        module = getattr(func, "__module__", "") or ""
        parts = [p for p in module.split(".")[1:] if not p.startswith("_")]
        return _call("np." + ".".join([*parts, func.__name__]), args, kwargs)


def _call(name: str, args, kwargs) -> Symbol:
    texts = [operand_text(a, COMPARE) for a in args]
    texts += [f"{k}={operand_text(v, COMPARE)}" for k, v in kwargs.items()]
    return Symbol(f"{name}({', '.join(texts)})")


def literal(x) -> str | None:
    """``x`` as Python source that evaluates to the same value, or None: numbers
    (``repr`` gives back the same float), numpy scalars and types, tuples of them."""
    if x is None or isinstance(x, (bool, int, str)):
        return repr(x)
    if type(x) is float:
        return repr(x) if math.isfinite(x) else None
    if isinstance(x, np.generic) and x.dtype.kind in "biuf" and np.isfinite(x):
        return repr(x)      # numpy 2 writes np.float32(0.5)
    if isinstance(x, type) and issubclass(x, np.generic):
        return f"np.{x.__name__}"
    if isinstance(x, tuple):
        items = [literal(i) for i in x]
        if None in items:
            return None
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return None


def operand_text(x, level: int) -> str:
    """The text of an operand at an operator of precedence ``level`` (parenthesized when
    it binds less tightly, or is a negative number)."""
    if isinstance(x, Symbol):
        return x.text if x.precedence >= level else f"({x.text})"
    text = literal(x)
    if text is None:
        raise Unwritable(f"a constant of type {type(x).__name__} inside the formula")
    text = text.replace("{", "{{").replace("}", "}}")
    return f"({text})" if text.startswith("-") and level > ADDITIVE else text


@functools.lru_cache(maxsize=4096)
def formula(function, arity: int) -> str | None:
    """The source of ``function(*operands)`` over placeholders ``{0}``, ``{1}``, ...,
    as :meth:`str.format` fills them, or None when the function cannot be read as a
    formula (a number when it ignores its operands: ``'1.0'``).

    >>> formula(lambda a, b, y: b, 3), formula(lambda a, b, y: -y / b, 3)
    ('{1}', '-{2} / {1}')
    >>> formula(lambda x, y: 1.0 if x > 0 else 0.0, 2) is None    # it reads x
    True
    """
    symbols = [Symbol("{" + str(i) + "}") for i in range(arity)]
    try:
        with np.errstate(all="ignore"):
            out = function(*symbols)
        return operand_text(out, COMPARE) if isinstance(out, Symbol) else (
            literal(out) if isinstance(out, (int, float)) and not isinstance(out, bool)
            else None)
    except (Unwritable, TypeError, ValueError, AttributeError, ArithmeticError):
        return None


def python_name(text: str) -> str:
    """A Python identifier for a vertex name: ``x[0]`` is ``x_0``, ``v2'`` is ``v2_``.

    >>> python_name("x[0]"), python_name("v2'"), python_name("lambda"), python_name("2a")
    ('x_0', 'v2_', 'lambda_', '_2a')
    """
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in text).rstrip("_") or "_"
    if text.endswith("'"):
        name += "_"
    if name[0].isdigit():
        name = "_" + name
    return name + "_" if keyword.iskeyword(name) else name


# ----------------------------------------------------- the rules written out
def _both_matrices(operands) -> bool:
    return all(np.ndim(v) == 2 for v in operands)


VALUES = {
    # rule: the value's source over the operands {0}, {1}, given their values
    # (np.matmul of two vectors is a numpy scalar; the rule's value is an array)
    MATMUL: lambda values: "{0} @ {1}" if max(np.ndim(v) for v in values) > 1
    else "np.asarray({0} @ {1})",
}
"""Values of rules written out as numpy source, where the rule's own value function
would cost a Python call more than it is worth (the hot rules of a training loop):
each gives the text for the operands' values (None: call the rule's own)."""

PRODUCTS = {
    # rule: (when, vector-Jacobian products of operand 0, 1; Jacobian-vector products)
    MATMUL: (_both_matrices, ("{u} @ {1}.T", "{0}.T @ {u}"), ("{t} @ {1}", "{0} @ {t}")),
}
"""Vector-Jacobian products (``{u}`` the cotangent of the result) and Jacobian-vector
products (``{t}`` the tangent of the operand) written out as numpy source, per operand,
for the rules where building the operator would cost more than the product; ``when``
(of the operands' values) says when the text applies."""
