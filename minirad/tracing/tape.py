"""The opcode tape: the engine :func:`minirad.trace` runs programs of numbers on.

Read :mod:`minirad.tracing.tracer` first: it is the same tracer written
plainly, and this module records the same graph, bit for bit, faster.
Every arithmetic operation on a :class:`Var` appends one vertex (its value
and operation) and one edge per traced operand (its local partial, taken
from :data:`minirad.ops.OPS`) to a tape.  Python numbers are constants: they
are folded into the partials and never become vertices.  Control flow simply
follows the values, so the trace is the path this particular call took.

>>> from minirad import ops, trace
>>> g = trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
>>> g
LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
>>> round(g.value("y"), 3)
11.652

What is recorded, and when.  The graph is the one you would get by calling
:func:`minirad.ops.evaluate` on every operation and appending its vertex and
in-edges at once, as :mod:`minirad.tracing.tracer` does
(``tests/test_trace_reference.py`` checks the two against each other, bit
for bit, on random programs).  For speed the tape holds
less: per operation a code, its operand numbers and its value, plus the
constant it was given (``0.5 * x``) or a partial that cannot be worked out
later (``sin``: its ``cos``).  Partials of sums, products, constants,
squares and functions such as relu and tanh are computed after the run, for
the whole tape at once, one numpy expression per code (:func:`read_tape`);
the templates (``g.ops``) only when they are first read.

What it costs.  Tracing the bench program (``bench/bench_trace.py``) takes
26-29x the CPU time of running it on plain floats; keeping each partial on
the tape, as before, took about 1.2x as long again.  ``python -m
bench.trace_breakdown`` takes that apart: calling the operator methods and
making one small object per operation is already about 10x, numbering the
vertex and checking that the result is finite 15x, appending the code and
operands 20x; converting the lists to numpy, working out the partials and
freeing the lists add several x more.  A Python tracer built on
operator overloading cannot reach the 15x of issue 16: the layers every such
tracer needs take that before anything is recorded.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from numbers import Integral, Real

import numpy as np

from ..graph.lcg import LCG
from ..graph.names import VertexNames, VertexOps
from . import ops as ops_module
from .naming import ARRAY_HINT, named_vertices
from .ops import (
    COMPARISONS,
    IDENTITIES,
    NOT_DIFFERENTIABLE,
    OPS,
    UFUNCS,
    ComparesValues,
    NonFiniteError,
    Op,
    apply,
    evaluate,
)

__all__ = ["Tape", "Var", "trace_on_tape"]

_ADD, _SUB, _MUL, _DIV, _POW = (OPS[k] for k in ("add", "sub", "mul", "div", "pow"))
_NEG, _ABS, _COPY = OPS["neg"], OPS["abs"], OPS["copy"]

# What made each vertex: its code.  Per vertex the tape keeps the code and
# the value; per code a fixed count of operand numbers (`operands`) and of
# floats (`numbers`: a constant written into the operation, or partials
# taken from minirad.tracing.ops.OPS at the time), and for three codes a template.
# Sums, differences, products, negations, copies, squares and the
# one-operand functions in _VECTORISED keep no partial at all: theirs are
# 1, -1, a constant or a function of the operand's and the result's values,
# which `read_tape` works out for the whole tape at once, one numpy expression
# per code.  Every other operation is UNARY (one traced operand; its
# partial kept) or GENERAL (two; both kept).
(INPUT, CONSTANT, GENERAL, UNARY, ADD, SUB, MUL, ADD_RIGHT, ADD_LEFT, SUB_RIGHT, SUB_LEFT,
 MUL_RIGHT, MUL_LEFT, NEG, COPY, SQUARE, RELU, ABS, EXP, TANH, SIGMOID, ARCTAN, ADD_TWICE,
 SUB_TWICE, MUL_TWICE) = range(25)
_N_CODES = MUL_TWICE + 1
_PAIRS = (ADD, SUB, MUL)  # two traced operands, partials not kept
# x + x, x - x, x * x: one operand and one edge, the two partials summed (2, 0, 2x)
_TWICE = {ADD: ADD_TWICE, SUB: SUB_TWICE, MUL: MUL_TWICE}
# x op c (*_RIGHT) and c op x (*_LEFT): one operand, and the constant c in `numbers`
_WITH_CONSTANT = {ADD_RIGHT: (_ADD, False), ADD_LEFT: (_ADD, True), SUB_RIGHT: (_SUB, False),
                  SUB_LEFT: (_SUB, True), MUL_RIGHT: (_MUL, False), MUL_LEFT: (_MUL, True)}
# one-operand functions of the table whose partial is finite wherever the
# value is, computed afterwards from x (the operand's value) and y (the
# result's) with the very float operations of their rules in minirad.ops, so
# the partials are the same to the last bit
_VECTORISED = {RELU: lambda x, y: np.where(x > 0.0, 1.0, 0.0),
               ABS: lambda x, y: np.where(x > 0.0, 1.0, np.where(x < 0.0, -1.0, 0.0)),
               EXP: lambda x, y: y,
               TANH: lambda x, y: 1.0 - y * y,
               SIGMOID: lambda x, y: y * (1.0 - y),
               ARCTAN: lambda x, y: 1.0 / (1.0 + x * x),
               SQUARE: lambda x, y: 2.0 * x,  # d(x ** 2)/dx = 2.0 * x ** 1.0 = 2.0 * x
               MUL_TWICE: lambda x, y: x + x}  # d(x * x)/dx: the partials x and x, summed
_FUNCTION_CODES = {"relu": RELU, "abs": ABS, "exp": EXP, "tanh": TANH, "sigmoid": SIGMOID,
                   "arctan": ARCTAN}
# the table's own entries (by identity: a replaced entry takes the general path)
_VECTORISED_CODE = {id(OPS[name]): code for name, code in _FUNCTION_CODES.items()}

# bytes, as the codes: the per-vertex arrays read from them stay small
_N_OPERANDS = np.ones(_N_CODES, dtype=np.uint8)
_N_OPERANDS[[INPUT, CONSTANT]] = 0
_N_OPERANDS[[GENERAL, *_PAIRS]] = 2
_N_NUMBERS = np.zeros(_N_CODES, dtype=np.uint8)
_N_NUMBERS[[UNARY, *_WITH_CONSTANT]] = 1
_N_NUMBERS[GENERAL] = 2
_HAS_TEMPLATE = np.zeros(_N_CODES, dtype=bool)  # the template is listed in `templates`
_HAS_TEMPLATE[[CONSTANT, GENERAL, UNARY]] = True


class Tape:
    """The growing record of one trace, as flat Python lists: appending to a
    list is several times faster than to an ``array.array``, even counting
    the one conversion of each list to numpy at the end.

    ``codes`` and ``values`` have one entry per vertex; ``operands``,
    ``numbers`` and ``templates`` as many as each vertex's code says
    (``_N_OPERANDS``, ``_N_NUMBERS``, ``_HAS_TEMPLATE``), in vertex order.
    The scalars' class (``scalar_type``) appends to these lists itself; the
    methods below are for everything else.
    """

    __slots__ = ("codes", "operands", "numbers", "values", "templates", "scalar_type")

    def __init__(self):
        self.codes: list[int] = []
        self.operands: list[int] = []
        self.numbers: list[float] = []
        self.values: list[float] = []
        self.templates: list[str] = []
        self.scalar_type = _scalar_type(self)

    def scalar(self, index: int, value: float) -> Var:
        """The traced scalar of vertex ``index``, whose value is ``value``."""
        x = self.scalar_type()
        x.index = index
        x.value = value
        return x

    def release(self) -> None:
        """Empty every list (the tape is not read again)."""
        for column in (self.codes, self.operands, self.numbers, self.values, self.templates):
            column.clear()

    def new_input(self, value: float) -> Var:
        i = len(self.values)
        self.codes.append(INPUT)
        self.values.append(value)
        return self.scalar(i, value)

    def constant(self, value: float) -> int:
        """Append a vertex with no predecessors (a constant output); its number."""
        i = len(self.values)
        self.codes.append(CONSTANT)
        self.templates.append(repr(value))
        self.values.append(value)
        return i

    def unary(self, template: str, u: int, partial: float, value: float) -> int:
        """Append a vertex with one in-edge, from ``u``; its number."""
        i = len(self.values)
        self.codes.append(UNARY)
        self.operands.append(u)
        self.numbers.append(partial)
        self.templates.append(template)
        self.values.append(value)
        return i

    def general(self, template: str, u: int, w: int, du: float, dw: float, value: float) -> int:
        """Append a vertex with in-edges from ``u`` and ``w`` (two vertices); its number."""
        i = len(self.values)
        self.codes.append(GENERAL)
        self.operands.extend((u, w))
        self.numbers.extend((du, dw))
        self.templates.append(template)
        self.values.append(value)
        return i

    def copy(self, u: int, value: float) -> int:
        """Append a unit copy of vertex ``u``; its number."""
        i = len(self.values)
        self.codes.append(COPY)
        self.operands.append(u)
        self.values.append(value)
        return i


def _constant(x, op: Op, tape: Tape) -> float:
    # plain floats and ints first: isinstance(x, Real) is an ABC check, slow on this hot path
    if type(x) is float:
        return x
    if type(x) is int or isinstance(x, Real) and not isinstance(x, bool):
        try:
            return float(x)
        except OverflowError:  # an int beyond 1.8e308, such as 2**2000
            digits = int(abs(int(x)).bit_length() * math.log10(2)) + 1
            raise ValueError(f"{op.name} at vertex v{len(tape.values)}: its constant operand, "
                             f"an integer of about {digits} digits, is too large for a float64 "
                             f"(at most about 1.8e308)") from None
    if isinstance(x, Var):
        _mixed(op)
    raise TypeError(f"unsupported operand type for {op.name}: {type(x).__name__}; traced "
                    f"scalars combine with other traced scalars and real numbers"
                    f"{ARRAY_HINT if isinstance(x, np.ndarray) else ''}")


# Templates with a constant written in, per operation and constant.  A program
# reuses a few constants many times, and repr(float) plus str.replace cost
# about as much as the rest of recording the operation.  Signed zeros and NaN
# are left out (0.0 == -0.0 but their reprs differ; NaN never finds itself).
_RIGHT_CONSTANT: dict[str, dict[float, str]] = {}
_LEFT_CONSTANT: dict[str, dict[float, str]] = {}
_TEMPLATE_CACHE_SIZE = 1024


def _template_with_constant(op: Op, c: float, left: bool) -> str:
    """``op.template`` with ``c`` as its left or right operand; the traced operand reads {0}."""
    caches = _LEFT_CONSTANT if left else _RIGHT_CONSTANT
    cache = caches.get(op.name)
    if cache is None:
        cache = caches[op.name] = {}
    template = cache.get(c)
    if template is None:
        if left:
            template = op.template.replace("{0}", repr(c)).replace("{1}", "{0}")
        else:
            template = op.template.replace("{1}", repr(c))
        if c and c == c and len(cache) < _TEMPLATE_CACHE_SIZE:
            cache[c] = template
    return template


def _fail(op: Op, operands, tape: Tape):
    """Raise the error for ``op`` on ``operands``, worded by :func:`evaluate`."""
    args = tuple(_value(x) for x in operands)
    wrt = tuple(i for i, x in enumerate(operands) if isinstance(x, Var))
    try:
        evaluate(op, args, wrt)
        detail = "the result is not a finite number"
    except NonFiniteError as error:
        detail = str(error)
    names = ", ".join(f"v{x.index}" if isinstance(x, Var) else repr(x) for x in operands)
    raise ValueError(f"{op.name}({names}) at vertex v{len(tape.values)} is not finite: "
                     f"{detail}") from None


class Var(ComparesValues):
    """A traced scalar: a value plus its vertex number on the tape of its trace.

    Each trace makes its own subclass (see :func:`_scalar_type`) whose
    ``+``, ``-``, ``*`` and negation write straight into that trace's tape;
    everything else lives here.  ``x.tape`` is the tape of ``x``'s trace.
    """

    __slots__ = ("index", "value")
    tape: Tape  # a class attribute of each trace's subclass

    def __repr__(self):
        return f"Var(v{self.index} = {self.value!r})"

    # ------------------------------------------------------------ recording
    def _record(self, op: Op, args):
        """Record ``op`` applied to ``args`` (traced scalars and constants)."""
        if len(args) == 1:
            return _unary(op, self)
        x, y = args
        if isinstance(x, Var):
            return _binary(op, x, y)
        return _binary_reflected(op, _constant(x, op, y.tape), y)

    def __truediv__(self, other):
        return _binary(_DIV, self, other)

    def __rtruediv__(self, other):
        return _binary_reflected(_DIV, _constant(other, _DIV, self.tape), self)

    def __pow__(self, other):
        return _binary(_POW, self, other)

    def __rpow__(self, other):
        return _binary_reflected(_POW, _constant(other, _POW, self.tape), self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _unary(_ABS, self)

    def __float__(self):
        # math.sin(x) and float(x) would silently turn x into a constant with no derivative
        raise TypeError(f"float() of a traced scalar (v{self.index}) would drop its derivative; "
                        f"use minirad.ops (ops.sin, ops.exp, ...) instead of math, or "
                        f"minirad.detach(x) to make it a constant on purpose")

    # ---------------------------------------------------------------- numpy
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """np.sin(x), np.float64(2) * x, W_row * x: numpy ufuncs map onto the table;
        comparisons and predicates (np.greater, np.isfinite) read the values."""
        name = ufunc.__name__
        if name in IDENTITIES and method == "__call__" and len(inputs) == 1 and not kwargs:
            return inputs[0]   # +x
        if name in NOT_DIFFERENTIABLE:
            raise TypeError(f"numpy's {name} has no derivative: {NOT_DIFFERENTIABLE[name]}")
        if method != "__call__" or kwargs or (name not in UFUNCS and name not in COMPARISONS
                                              and name != "square"):
            shown = name if method == "__call__" else f"{name}.{method}"
            raise TypeError(f"numpy's {shown} has no entry in minirad's operation table; "
                            f"use arithmetic or minirad.ops: {_OPS_FUNCTIONS}")
        if name in COMPARISONS:
            def scalar(*xs):
                return ufunc(*(_value(x) for x in xs))
        elif name == "square":
            def scalar(x):
                return x ** 2
        else:
            op = UFUNCS[name]

            def scalar(*xs):
                return apply(op, *xs)
        if any(isinstance(x, np.ndarray) for x in inputs):
            # 0-d object arrays, so that numpy does not hand the loop back to us
            boxed = [x if isinstance(x, np.ndarray) else np.asarray(x, dtype=object)
                     for x in inputs]
            return np.frompyfunc(scalar, len(inputs), 1)(*boxed)
        return scalar(*inputs)


def _scalar_type(tape: Tape) -> type:
    """The class of one trace's scalars: a subclass of :class:`Var` whose
    ``+``, ``-``, ``*``, negation, squares and one-operand functions of the
    table record straight into ``tape``.

    These are most of what programs do, and recording them is most of the
    cost of tracing, so each is written out in full: the tape's lists are
    closure variables (the cheapest name lookup Python has) appended to as
    ``list.append(x)``, which CPython 3.11+ runs without a call (a bound
    ``append`` kept in a variable is a full call, several times slower);
    the result is made without an ``__init__`` call, and nothing else is
    called.  A scalar of another trace has another class, so ``type(other)
    is Scalar`` also tells two traces apart.  Float ``+ - *`` never raise;
    ``z - z`` is 0.0 for a finite z and nan for inf or nan: a cheap
    finiteness test.
    """
    codes, operands, numbers, values, templates = (tape.codes, tape.operands, tape.numbers,
                                                   tape.values, tape.templates)
    vectorised_code = _VECTORISED_CODE.get

    class Scalar(Var):
        __slots__ = ()

        def __add__(self, other):
            new = Scalar()
            if type(other) is Scalar:
                new.value = out = self.value + other.value
                if out - out:
                    _fail(_ADD, (self, other), tape)
                new.index = len(values)
                if other is self:
                    codes.append(ADD_TWICE)
                    operands.append(self.index)
                else:
                    codes.append(ADD)
                    operands.append(self.index)
                    operands.append(other.index)
            else:
                c = other if type(other) is float else _constant(other, _ADD, tape)
                new.value = out = self.value + c
                if out - out:
                    _fail(_ADD, (self, c), tape)
                new.index = len(values)
                codes.append(ADD_RIGHT)
                operands.append(self.index)
                numbers.append(c)
            values.append(out)
            return new

        def __radd__(self, other):
            c = other if type(other) is float else _constant(other, _ADD, tape)
            new = Scalar()
            new.value = out = c + self.value
            if out - out:
                _fail(_ADD, (c, self), tape)
            new.index = len(values)
            codes.append(ADD_LEFT)
            operands.append(self.index)
            numbers.append(c)
            values.append(out)
            return new

        def __sub__(self, other):
            new = Scalar()
            if type(other) is Scalar:
                new.value = out = self.value - other.value
                if out - out:
                    _fail(_SUB, (self, other), tape)
                new.index = len(values)
                if other is self:
                    codes.append(SUB_TWICE)
                    operands.append(self.index)
                else:
                    codes.append(SUB)
                    operands.append(self.index)
                    operands.append(other.index)
            else:
                c = other if type(other) is float else _constant(other, _SUB, tape)
                new.value = out = self.value - c
                if out - out:
                    _fail(_SUB, (self, c), tape)
                new.index = len(values)
                codes.append(SUB_RIGHT)
                operands.append(self.index)
                numbers.append(c)
            values.append(out)
            return new

        def __rsub__(self, other):
            c = other if type(other) is float else _constant(other, _SUB, tape)
            new = Scalar()
            new.value = out = c - self.value
            if out - out:
                _fail(_SUB, (c, self), tape)
            new.index = len(values)
            codes.append(SUB_LEFT)
            operands.append(self.index)
            numbers.append(c)
            values.append(out)
            return new

        def __mul__(self, other):
            new = Scalar()
            if type(other) is Scalar:
                new.value = out = self.value * other.value
                if out - out:
                    _fail(_MUL, (self, other), tape)
                new.index = len(values)
                if other is self:
                    codes.append(MUL_TWICE)
                    operands.append(self.index)
                else:
                    codes.append(MUL)
                    operands.append(self.index)
                    operands.append(other.index)
            else:
                c = other if type(other) is float else _constant(other, _MUL, tape)
                new.value = out = self.value * c
                if out - out:
                    _fail(_MUL, (self, c), tape)
                new.index = len(values)
                codes.append(MUL_RIGHT)
                operands.append(self.index)
                numbers.append(c)
            values.append(out)
            return new

        def __rmul__(self, other):
            c = other if type(other) is float else _constant(other, _MUL, tape)
            new = Scalar()
            new.value = out = c * self.value
            if out - out:
                _fail(_MUL, (c, self), tape)
            new.index = len(values)
            codes.append(MUL_LEFT)
            operands.append(self.index)
            numbers.append(c)
            values.append(out)
            return new

        def __neg__(self):
            new = Scalar()
            new.value = out = -self.value
            new.index = len(values)
            codes.append(NEG)
            operands.append(self.index)
            values.append(out)
            return new

        # one traced operand of a function of the table (ops.relu(x), ops.sin(x),
        # abs(x)): the same value and partial as _unary takes from the table, with
        # fewer calls on the way, and for the functions in _VECTORISED no partial
        # computed here at all
        def _record(self, op, args):
            if len(args) != 1:
                return Var._record(self, op, args)
            a = self.value
            code = vectorised_code(id(op))
            new = Scalar()
            if code is None:
                try:
                    new.value = out = float(op.value(a))
                    da = float(op.partials[0](a, out))
                except (ArithmeticError, ValueError):
                    out = da = math.nan
                if (out - out) or (da - da):  # not finite
                    _fail(op, (self,), tape)
                new.index = len(values)
                codes.append(UNARY)
                numbers.append(da)
                templates.append(op.template)
            else:
                # the table's own function, which gives a float for a float
                try:
                    new.value = out = op.value(a)
                except (ArithmeticError, ValueError):
                    out = math.nan
                if out - out:
                    _fail(op, (self,), tape)
                new.index = len(values)
                codes.append(code)
            operands.append(self.index)
            values.append(out)
            return new

        def __abs__(self):
            return self._record(_ABS, (self,))

        def __pow__(self, other):
            a = self.value
            if (type(other) is int or type(other) is float) and other == 2:
                # squares: a ** 2.0 as the table computes it; its partial
                # 2.0 * a ** 1.0 is 2.0 * a (a ** 1.0 is exact), worked out later
                try:
                    out = a ** 2.0
                except OverflowError:
                    out = math.inf
                if out - out:
                    _fail(_POW, (self, 2.0), tape)
                new = Scalar()
                new.value = out
                new.index = len(values)
                codes.append(SQUARE)
                operands.append(self.index)
                values.append(out)
                return new
            if type(other) is not float and isinstance(other, Var):
                return _binary(_POW, self, other)
            b = other if type(other) is float else _constant(other, _POW, tape)
            try:
                out = _POW.value(a, b)
                da = _POW.partials[0](a, b, out)
            except (ArithmeticError, ValueError):
                _fail(_POW, (self, b), tape)
            if (out - out) or (da - da):
                _fail(_POW, (self, b), tape)
            new = Scalar()
            new.value = out
            new.index = tape.unary(_template_with_constant(_POW, b, left=False), self.index,
                                   da, out)
            return new

    Scalar.tape = tape
    Scalar.__name__ = Scalar.__qualname__ = "Var"  # what error messages and type() show
    return Scalar


def _value(x):
    return x.value if isinstance(x, Var) else x


# functions that numpy and minirad name alike: numpy calls x.sin(), x.exp(), ... on
# the elements of object arrays, so np.tanh(W @ x) works.  Set once here, on the base
# class: each trace's scalars record them through their own fast _record, and a new
# trace makes no more methods than before, however long the table grows.
_SHARED_NAMES = tuple(op.ufunc for op in OPS.values()
                      if op.arity == 1 and op.ufunc and op.ufunc == op.name)
for _name in _SHARED_NAMES:
    setattr(Var, _name, lambda self, _op=OPS[_name]: self._record(_op, (self,)))

# what a user may call from minirad.tracing.ops (the table minus operators and copies)
_OPS_FUNCTIONS = ", ".join(name for name in OPS if hasattr(ops_module, name))


def _mixed(op: Op):
    raise ValueError(f"{op.name} mixes scalars from two different traces")


def _unary(op: Op, x: Var) -> Var:
    a = x.value
    try:  # evaluate() inlined for one argument: it is several calls slower
        out = float(op.value(a))
        da = float(op.partials[0](a, out))
    except (ArithmeticError, ValueError):
        out = da = math.nan
    if (out - out) or (da - da):  # not finite
        _fail(op, (x,), x.tape)
    return _record_unary(x.tape, op.template, x.index, da, out)


def _binary(op: Op, x: Var, y) -> Var:
    """``op(x, y)`` for a traced ``x``, any operation of the table."""
    tape = x.tape
    a = x.value
    if isinstance(y, Var):
        if y.tape is not tape:
            _mixed(op)
        b = y.value
        d0, d1 = op.partials
        try:
            out = op.value(a, b)
            da = d0(a, b, out)
            db = d1(a, b, out)
        except (ArithmeticError, ValueError):
            _fail(op, (x, y), tape)
        if (out - out) or (da - da) or (db - db):
            _fail(op, (x, y), tape)
        if y is x:  # x*x is one edge with partial 2x, not two parallel edges
            return _record_unary(tape, op.template.replace("{1}", "{0}"), x.index, da + db, out)
        return tape.scalar(tape.general(op.template, x.index, y.index, da, db, out), out)
    b = _constant(y, op, tape)
    try:
        out = op.value(a, b)
        da = op.partials[0](a, b, out)
    except (ArithmeticError, ValueError):
        _fail(op, (x, b), tape)
    if (out - out) or (da - da):
        _fail(op, (x, b), tape)
    return _record_unary(tape, _template_with_constant(op, b, left=False), x.index, da, out)


def _binary_reflected(op: Op, a: float, y: Var) -> Var:
    """``op(a, y)`` for a constant ``a`` and a traced ``y``."""
    tape = y.tape
    b = y.value
    try:
        out = op.value(a, b)
        db = op.partials[1](a, b, out)
    except (ArithmeticError, ValueError):
        _fail(op, (a, y), tape)
    if (out - out) or (db - db):
        _fail(op, (a, y), tape)
    return _record_unary(tape, _template_with_constant(op, a, left=True), y.index, db, out)


def _record_unary(tape: Tape, template: str, u: int, partial: float, out: float) -> Var:
    return tape.scalar(tape.unary(template, u, partial, out), out)


def _copy(x: Var) -> Var:
    return x.tape.scalar(x.tape.copy(x.index, x.value), x.value)


# ----------------------------------------------------------- the tape, read
# per code: the partial of its first and second in-edge where it is fixed
# (NaN: read from `numbers` or worked out from values), whether its first
# partial is its entry in `numbers`, and the template of codes that have one
_FIRST = np.full(_N_CODES, np.nan)
_FIRST[[ADD, SUB, ADD_RIGHT, ADD_LEFT, SUB_RIGHT, COPY]] = 1.0
_FIRST[ADD_TWICE], _FIRST[SUB_TWICE] = 1.0 + 1.0, 1.0 + -1.0  # the two partials summed
_FIRST[[SUB_LEFT, NEG]] = -1.0
_SECOND = np.full(_N_CODES, np.nan)
_SECOND[ADD], _SECOND[SUB] = 1.0, -1.0
_PARTIAL_IN_NUMBERS = np.zeros(_N_CODES, dtype=bool)
_PARTIAL_IN_NUMBERS[[MUL_RIGHT, MUL_LEFT, UNARY]] = True
_CODE_TEMPLATE = {INPUT: "input", ADD: _ADD.template, SUB: _SUB.template, MUL: _MUL.template,
                  NEG: _NEG.template, COPY: _COPY.template,
                  SQUARE: _template_with_constant(_POW, 2.0, left=False),
                  **{code: OPS[name].template for name, code in _FUNCTION_CODES.items()}}
_CODE_TEMPLATE.update({twice: _CODE_TEMPLATE[code].replace("{1}", "{0}")  # {0} + {0}
                       for code, twice in _TWICE.items()})


def _operands_used(n: int, operands: np.ndarray) -> np.ndarray:
    """Mask of the ``n`` vertices that are an operand of some later vertex."""
    used = np.zeros(n, dtype=bool)
    used[operands] = True
    return used


def _by_code(codes: np.ndarray) -> dict[int, np.ndarray]:
    """The vertices of each code present, in increasing order: one stable
    sort of the codes (a radix sort for bytes), instead of one pass over
    all of them per code."""
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=_N_CODES)).tolist()
    starts = [0, *ends[:-1]]
    return {code: order[starts[code]:ends[code]] for code in range(_N_CODES)
            if ends[code] > starts[code]}


def read_tape(tape: Tape, operands: np.ndarray):
    """The edge columns (sources, targets, partials; grouped by target in
    operand order), their offsets per target (``in_edges_ptr``), the values
    and the template of every vertex, for the whole tape at once
    (``operands`` is ``tape.operands`` as an array).

    The partials are what minirad.ops.OPS gives for these operations: 1 and
    1 for a + b, 1 and -1 for a - b, b and a for a * b, the constant c for
    c * x, the rules of _VECTORISED, and the partials kept on the tape for
    the rest.  A repeated operand (x + x, x * x) is one edge with the two
    partials summed, as the general path records it.  The operands, in
    order, are already the sources of the edges, grouped by target.  The
    templates are worked out when first read (:meth:`VertexOps.deferred`)."""
    codes = np.frombuffer(bytes(tape.codes), dtype=np.uint8)
    numbers = np.array(tape.numbers, dtype=np.float64)
    values = np.fromiter(tape.values, dtype=np.float64, count=len(tape.values))
    n, m = len(codes), len(operands)
    groups = _by_code(codes)
    degree = _N_OPERANDS[codes]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(degree, dtype=np.int64, out=ptr[1:])
    first = ptr[:-1]  # where each vertex's operands start
    number = None
    if len(numbers):  # where each vertex's numbers start
        number = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(_N_NUMBERS[codes], dtype=np.int64, out=number[1:])
    # each edge's partial written once, one group of vertices (one code) at a time
    partials = np.empty(m)
    same = []  # first edges of a pair whose two operands are one vertex
    for code, at in groups.items():
        if not _N_OPERANDS[code]:
            continue
        edge = first[at]
        if code == MUL:  # d(a*b)/da = b, d(a*b)/db = a
            second = edge + 1
            a, b = operands[edge], operands[second]
            partials[edge] = values[b]
            partials[second] = values[a]
        elif code == GENERAL:
            kept = number[at]
            partials[edge] = numbers[kept]
            partials[edge + 1] = numbers[kept + 1]
        elif code in _VECTORISED:
            partials[edge] = _VECTORISED[code](values[operands[edge]], values[at])
        elif _PARTIAL_IN_NUMBERS[code]:
            partials[edge] = numbers[number[at]]
        else:  # 1, -1, ... fixed by the code
            partials[edge] = _FIRST[code]
            if _N_OPERANDS[code] == 2:
                partials[edge + 1] = _SECOND[code]
        if code in _PAIRS:
            # one vertex twice, as two scalar objects (copy.copy(x) * x; x * x
            # is MUL_TWICE): one edge, the two partials summed, as for x * x
            if code != MUL:
                a, b = operands[edge], operands[edge + 1]
            twice = a == b
            if twice.any():
                same.append(edge[twice])
    same = np.concatenate(same) if same else np.zeros(0, dtype=np.int64)
    targets = np.repeat(np.arange(n, dtype=np.int64), degree)
    sources, repeated = operands, targets[same]
    if len(same):
        partials[same] += partials[same + 1]
        keep = np.ones(m, dtype=bool)
        keep[same + 1] = False
        sources, targets, partials = sources[keep], targets[keep], partials[keep]
        removed = np.zeros(n + 1, dtype=np.int64)
        removed[repeated + 1] = 1
        ptr -= np.cumsum(removed)
    # the templates are worked out from the codes, the numbers and the tape's
    # own templates when first read; only those (a byte and a few floats per
    # vertex) are kept for it, not the larger arrays above
    templates = list(tape.templates)  # the tape is emptied after this
    ops = VertexOps.deferred(n, lambda: _templates(templates, codes, numbers, repeated))
    return sources, targets, ptr, partials, values, ops


def _templates(listed, codes, numbers, repeated):
    """Each vertex's operation template, as a table of templates and one
    number per vertex (what :class:`minirad.graph.names.VertexOps` takes): by
    code, with the constants written in and the templates ``listed`` on the
    tape; ``repeated`` are the vertices whose two operands are one vertex."""
    table = [_CODE_TEMPLATE.get(code, "") for code in range(_N_CODES)]
    ids = codes.astype(np.int64)
    for code in _PAIRS:  # x + x reads {0} + {0}
        ids[repeated[codes[repeated] == code]] = len(table)
        table.append(table[code].replace("{1}", "{0}"))
    groups = _by_code(codes)
    number = np.zeros(len(codes) + 1, dtype=np.int64)  # where each vertex's numbers start
    np.cumsum(_N_NUMBERS[codes], dtype=np.int64, out=number[1:])
    for code, (op, left) in _WITH_CONSTANT.items():
        at = groups.get(code)
        if at is not None:
            # distinct constants by bit pattern, so 0.0 and -0.0 keep their own reprs
            bits, which = np.unique(numbers[number[at]].view(np.int64), return_inverse=True)
            ids[at] = len(table) + which
            table += [_template_with_constant(op, c, left) for c in bits.view(np.float64).tolist()]
    if listed:
        ids[_HAS_TEMPLATE[codes]] = np.arange(len(table), len(table) + len(listed))
        table += listed
    return table, ids


# -------------------------------------------------------------------- trace
def _make_inputs(tape: Tape, args, wrt, names):
    """The arguments to call ``f`` with (those at ``wrt`` traced, the rest as they
    are) and the name of every input vertex."""
    call, input_names = list(args), []
    for position in wrt:
        arg, name = args[position], names[position]
        if isinstance(arg, Real) and not isinstance(arg, bool):
            if isinstance(arg, Integral) and abs(int(arg)) > sys.float_info.max:
                raise ValueError(f"argument {position} ({name}) is an integer too large for a "
                                 f"float64 (at most about 1.8e308); trace needs finite inputs")
            if not math.isfinite(arg):
                raise ValueError(f"argument {position} ({name}) is {arg}; trace needs finite "
                                 f"inputs")
            call[position] = tape.new_input(float(arg))
            input_names.append(name)
            continue
        if isinstance(arg, (str, bytes)) or not isinstance(arg, (list, tuple)):
            raise TypeError(f"argument {position} ({name}) is a {type(arg).__name__}; trace "
                            f"takes numbers, lists of numbers and numpy arrays")
        array = np.asarray(arg)
        if array.ndim != 1 or not (np.issubdtype(array.dtype, np.number)
                                   and not np.issubdtype(array.dtype, np.complexfloating)):
            raise TypeError(f"argument {position} ({name}) must be a number or a list of "
                            f"numbers; got shape {array.shape}, dtype {array.dtype}")
        bad = np.flatnonzero(~np.isfinite(array))
        if len(bad):
            raise ValueError(f"argument {position} ({name}) element {bad[0]} is "
                             f"{array[bad[0]]}; trace needs finite inputs")
        elements = [tape.new_input(float(x)) for x in array.tolist()]
        input_names.extend(f"{name}[{j}]" for j in range(len(elements)))
        call[position] = type(arg)(elements)
    return call, input_names


def _flatten_result(result):
    if isinstance(result, (Var, Real)):
        return [result], False
    if isinstance(result, np.ndarray):
        if result.ndim > 1:
            raise TypeError(f"f returned an array of shape {result.shape}; a program of "
                            f"numbers returns a number, a tuple/list or a 1-D array of them")
        return list(result.reshape(-1)), True
    if isinstance(result, (tuple, list)):
        return list(result), True
    raise TypeError(f"f returned a {type(result).__name__}; a program of numbers returns a "
                    f"number, a tuple/list or a 1-D array of them")


def _int_array(numbers: list[int]) -> np.ndarray:
    # np.fromiter with a count reads a list of ints faster than np.array does
    return np.fromiter(numbers, dtype=np.int64, count=len(numbers))


def _root_cause(error: BaseException) -> BaseException:
    cause = error
    while cause is not None and not isinstance(cause, (ValueError, TypeError)):
        cause = cause.__cause__ or cause.__context__
    return error if cause is None else cause


def trace_on_tape(f, args, wrt, names) -> LCG:
    """Run ``f(*args)`` with the arguments at positions ``wrt`` traced (numbers, or
    lists of numbers: one input per element, named ``x[0]``, ``x[1]``, ...) and the
    rest passed as they are; ``names`` names every argument.  What
    :func:`minirad.trace` calls for a program of numbers.

    ``f`` may return a number, a tuple/list or a 1-D array: one output per element,
    named ``y`` (a single number) or ``y[0]``, ``y[1]``, ... (``f`` instead of
    ``y`` when a parameter is called ``y``).  An output that is also an input, is
    used later, or is returned twice gets a fresh vertex joined by a unit ``copy``
    edge, so outputs never have successors.

    >>> from minirad import trace
    >>> g = trace(lambda x: (x * x, x), 3.0)
    >>> print(g.wengert())
    v0 = x         = 3.0
    v1 = v0 * v0   = 9.0   dv1/dv0 = 6.0   (output y[0])
    v2 = v0        = 3.0   dv2/dv0 = 1.0   (output y[1])
    """
    tape = Tape()
    try:
        return _trace_on(tape, f, args, wrt, names)
    finally:
        # the tape is read once, here; its scalars' class is a reference cycle
        # (as every class is) that holds the columns until the cyclic collector
        # gets to it, which may be many traces later: free them now
        tape.release()


def _trace_on(tape: Tape, f, args, wrt, names) -> LCG:
    traced, input_names = _make_inputs(tape, args, wrt, names)
    n_inputs = len(tape.values)
    try:
        result = f(*traced)
    except SystemError as error:
        # numpy's object loops (np.dot on traced arrays) wrap our ValueError in a SystemError
        raise _root_cause(error) from None
    results, several = _flatten_result(result)

    used = operands = None
    returned = Counter(r.index for r in results if isinstance(r, Var))
    outputs = []
    for position, r in enumerate(results):
        if isinstance(r, Var):
            if r.tape is not tape:
                raise ValueError(f"output {position} was not computed from this trace's inputs")
            v = r.index
            if v < n_inputs or returned[v] > 1:
                v = _copy(r).index
            elif v < len(tape.values) - 1:  # the last vertex is nobody's operand
                if used is None:
                    operands = _int_array(tape.operands)
                    used = _operands_used(len(tape.values), operands)
                if used[v]:
                    v = _copy(r).index
        elif isinstance(r, Real) and not isinstance(r, bool):
            if not math.isfinite(float(r)):
                raise ValueError(f"output {position} is the constant {r}; outputs must be finite")
            # a constant output: a vertex with no predecessors
            v = tape.constant(float(r))
        else:
            raise TypeError(f"output {position} is a {type(r).__name__}; outputs must be traced "
                            f"numbers or numbers")
        outputs.append(v)

    n = len(tape.values)
    vertex_names = VertexNames(n, named_vertices(n, input_names, outputs, several))
    if operands is None:
        operands = _int_array(tape.operands)
    elif len(operands) < len(tape.operands):  # the copies made for the outputs
        operands = np.concatenate((operands, _int_array(tape.operands[len(operands):])))
    sources, targets, in_edges_ptr, partials, values, templates = read_tape(tape, operands)
    return LCG.from_trusted_arrays(vertex_names, sources, targets, partials, range(n_inputs),
                                   outputs, values, templates, in_edges_ptr=in_edges_ptr)
