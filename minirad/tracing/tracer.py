"""The tracer: a Python function of numbers or numpy arrays into its LCG.

Read this module first; :func:`minirad.trace` is :func:`trace` below.

A :class:`Traced` value is a number or an array together with its place on a
:class:`Tape`.  Every operation on it (``x * y``, ``np.sin(x)``, ``x @ W``,
``x.sum()``) looks up its *rule* and calls :func:`record`, which computes the
new value with the rule and appends one entry to the tape: the rule, the
operands (tape positions, or constants) and the parameters.  Nothing else
happens per operation: no derivative is worked out, nothing is checked that
can be checked later.  When the function returns, :func:`trace` turns the
tape into an :class:`~minirad.graph.lcg.LCG`, whose edge labels are worked
out from the tape only when an algorithm first reads them (:func:`labels`).

A rule is one of two kinds:

* an elementwise :class:`~minirad.tracing.ops.Op` of the operation table
  (``sin``, ``*``, ``relu``): ``partials[i](a, b, y)`` is the derivative of
  each entry, which becomes a float between numbers and a diagonal (or a bit
  mask) between arrays;
* a :class:`~minirad.tracing.rules.Rule` for everything else (``@``, ``sum``,
  indexing): its ``block`` gives the Jacobian block itself, an operator of
  :mod:`minirad.graph.operators`.

Arguments the program is not differentiated by (``wrt``) are traced too, as
*data*: what the program computes from them is on the tape, so
:func:`~minirad.tracing.replay.replay` recomputes it, but it is not a vertex
of the LCG, whose vertices are the values that depend on the inputs.  Every
value the program reads (a comparison ``x > 0``, ``bool(x)``, an index) is
written down as a *read*, so that replay can tell when new inputs would take
the program down another path.

>>> from minirad import ops
>>> g = trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
>>> print(g.wengert())
v0 = x1        = 2.0
v1 = x2        = 5.0
v2 = log(v0)   = 0.6931471805599453    dv2/dv0 = 0.5
v3 = v0 * v1   = 10.0                  dv3/dv0 = 5.0, dv3/dv1 = 2.0
v4 = v2 + v3   = 10.693147180559945    dv4/dv2 = 1.0, dv4/dv3 = 1.0
v5 = sin(v1)   = -0.9589242746631385   dv5/dv1 = 0.28366218546322625
v6 = v4 - v5   = 11.652071455223084    dv6/dv4 = 1.0, dv6/dv5 = -1.0   (output y)
"""

from __future__ import annotations

import functools
import inspect
import math
from array import array
from numbers import Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sparse

from ..graph.lcg import LCG, value_key
from ..graph.names import VertexNames, VertexOps
from ..graph.operators import (
    OPERATORS,
    Broadcast,
    Diagonal,
    Identity,
    Mask,
    Retained,
    compose,
)
from .naming import named_vertices
from .numbers import NO_PARAMS, VECTOR_VERTICES, FastArithmetic, number_edges
from .ops import OPS, NonFiniteError, Op, evaluate, evaluate_array, partial_at

COPY = OPS["copy"]

MAX_AXES = 31
"""The most axes a traced array may have: the sweeps stack arrays along one more axis,
and numpy's broadcasting stops at 32."""

MAX_ENTRIES = 2 ** 28
"""The most entries an array the tracer makes or copies may have (2 GiB of float64): a
larger shape is refused before anything is allocated."""

__all__ = ["Tape", "Traced", "detach", "name", "trace"]


def check_entries(shape, what: str) -> None:
    """Refuse a shape of more than :data:`MAX_ENTRIES` entries or :data:`MAX_AXES` axes
    before anything that size is allocated."""
    if len(shape) > MAX_AXES:
        raise ValueError(f"{what}: a traced array has at most {MAX_AXES} axes, not "
                         f"{len(shape)}")
    size = math.prod(shape)
    if size > MAX_ENTRIES:
        raise ValueError(f"{what} of shape {tuple(shape)} would have {size:.3g} entries; the "
                         f"tracer makes arrays of at most {MAX_ENTRIES:,} "
                         f"(minirad.tracing.tracer.MAX_ENTRIES)")


class Tape:
    """The record of one trace: per value the rule that made it, its operands
    (tape positions as ``int``, constants as themselves) and its parameters.

    They are kept in columns, one list each, rather than one tuple per step: a
    tuple of a rule is an object Python's garbage collector must visit at every
    full collection, and a long trace would make millions of them.  :attr:`steps`
    reads the columns as ``(rule, operands, params)`` triples."""

    def __init__(self):
        self.values = []     # every value, data and inputs included
        self.rules = []      # the rule that made it; None for an argument
        self.operands = []   # its operands (a tuple); None for an argument
        self.params = []     # its parameters (a dict); None for an argument
        self.active = []     # whether the value depends on an input (is a vertex)
        self.names = {}      # tape position -> a name given (arguments, tracing.name)
        self.reads = []      # (tape length, function, operands, result): what was read
        self.constant_names = {}   # id of an argument used as it is -> its parameter name
        self.constants = {}  # (id of a constant array, dtype) -> (it, the tape's copy)

    def append(self, value, active: bool, rule=None, operands=None, params=None) -> Traced:
        """Add a value made by ``rule`` from ``operands`` (an argument: no rule)."""
        self.values.append(value)
        self.rules.append(rule)
        self.operands.append(operands)
        self.params.append(params)
        self.active.append(active)
        # a number on a long tape records +, -, * faster (minirad.tracing.numbers)
        kind = Number if type(value) is float and len(self.values) > VECTOR_VERTICES else Traced
        return kind(self, len(self.values) - 1, value)

    @property
    def steps(self) -> Steps:
        """Per value ``(rule, operands, params)``, or None for an argument."""
        return Steps(self)


class Steps:
    """A tape's columns read as one ``(rule, operands, params)`` triple per value."""

    __slots__ = ("tape",)

    def __init__(self, tape: Tape):
        self.tape = tape

    def __len__(self) -> int:
        return len(self.tape.rules)

    def __getitem__(self, t: int):
        tape = self.tape
        rule = tape.rules[t]
        return None if rule is None else (rule, tape.operands[t], tape.params[t])

    def __iter__(self):
        tape = self.tape
        for rule, operands, params in zip(tape.rules, tape.operands, tape.params):
            yield None if rule is None else (rule, operands, params)


class Traced:
    """A value on a tape.  It supports Python's arithmetic and numpy's functions
    (through :mod:`minirad.tracing.rules`); a comparison reads its value."""

    __slots__ = ("tape", "index", "value")
    __array_priority__ = 1000   # x @ W and W @ x both come to Traced

    def __init__(self, tape: Tape, index: int, value):
        self.tape, self.index, self.value = tape, index, value

    def __repr__(self):
        shape = f", shape={self.value.shape}" if isinstance(self.value, np.ndarray) else ""
        return f"Traced(t{self.index} = {self.value!r:.60}{shape})"

    def _record(self, op, args):   # minirad.ops.sin(x) and the like come here
        return record(op, *args)

    # arithmetic: one entry of the operation table each, both ways round
    def __add__(self, other):
        return record(ADD, self, other)

    def __radd__(self, other):
        return record(ADD, other, self)

    def __sub__(self, other):
        return record(SUB, self, other)

    def __rsub__(self, other):
        return record(SUB, other, self)

    def __mul__(self, other):
        return record(MUL, self, other)

    def __rmul__(self, other):
        return record(MUL, other, self)

    def __truediv__(self, other):
        return record(DIV, self, other)

    def __rtruediv__(self, other):
        return record(DIV, other, self)

    def __pow__(self, other):
        return record(POW, self, other)

    def __rpow__(self, other):
        return record(POW, other, self)

    def __neg__(self):
        return record(OPS["neg"], self)

    def __pos__(self):
        return self

    def __abs__(self):
        return record(OPS["abs"], self)

    # values read, not differentiated: at the traced point a comparison is a constant
    def __lt__(self, other):
        return read(np.less, self, other)

    def __le__(self, other):
        return read(np.less_equal, self, other)

    def __gt__(self, other):
        return read(np.greater, self, other)

    def __ge__(self, other):
        return read(np.greater_equal, self, other)

    def __eq__(self, other):
        return read(np.equal, self, other)

    def __ne__(self, other):
        return read(np.not_equal, self, other)

    __hash__ = object.__hash__   # identity: two equal values are still two vertices

    def __bool__(self):
        if np.size(self.value) != 1:
            raise ValueError(f"the truth value of a traced array of shape {self.shape} is "
                             f"ambiguous; compare first and use .any() or .all(): "
                             f"(x > 0).all()")
        return read(bool, self)

    def __float__(self):
        return self._read_plain(float, "float()")

    def __int__(self):
        return self._read_plain(int, "int()")

    def __index__(self):
        return self._read_plain(_as_index, "using it as an index")

    # numpy: shapes are read freely; functions, ufuncs and methods go to their rules
    shape = property(lambda self: np.shape(self.value))
    ndim = property(lambda self: np.ndim(self.value))
    size = property(lambda self: np.size(self.value))
    dtype = property(lambda self: np.asarray(self.value).dtype)
    T = property(lambda self: FUNCTIONS["transpose"](self))
    mT = property(lambda self: FUNCTIONS["swapaxes"](self, -1, -2))
    real = property(lambda self: self)   # real numbers

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a traced number (an array of shape ())")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a traced number (an array of shape ())")
        return (self[i] for i in range(self.shape[0]))

    def __matmul__(self, other):
        return FUNCTIONS["matmul"](self, other)

    def __rmatmul__(self, other):
        return FUNCTIONS["matmul"](other, self)

    def __getitem__(self, key):
        return FUNCTIONS["getitem"](self, key)

    def __setitem__(self, key, value):
        raise TypeError("a traced array cannot be written into (x[...] = ... would not be "
                        "recorded); make a new array instead: np.where(mask, new, x), "
                        "np.concatenate or np.stack of the pieces")

    def __array__(self, dtype=None, copy=None):
        if not isinstance(self.value, np.ndarray) and dtype in (None, object):
            # np.array([x, y]) of traced numbers: an array of objects, on which numpy's
            # functions call the numbers' own arithmetic (and their methods: x.tanh())
            holder = np.empty((), dtype=object)
            holder[()] = self
            return holder
        raise TypeError("a traced value cannot become a plain numpy array (np.asarray, or "
                        "writing it into a plain array: A[i] = x), which would drop its "
                        "derivative; gather traced pieces with np.stack or np.concatenate, "
                        "or take minirad.detach(x) for its plain value")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        if kwargs.get("out") is not None:
            raise TypeError(f"numpy's {name} with out=: a traced value cannot be written into "
                            f"an array; use the result it returns")
        if method != "__call__":
            hint = UFUNC_METHODS.get((name, method), "write it with the functions of the rules "
                                                     "instead (np.sum, np.cumsum, ...)")
            raise TypeError(f"numpy's {name}.{method} has no entry in minirad's operation "
                            f"table; {hint}")
        if ufunc.__name__ not in FUNCTIONS and not any(
                isinstance(a.value, np.ndarray) for a in inputs if type(a) in TRACED):
            # a ufunc of one's own (np.frompyfunc, np.vectorize) on traced numbers: numpy's
            # loop over objects calls their arithmetic
            return getattr(ufunc, method)(*[a.__array__() if type(a) in TRACED else a
                                             for a in inputs], **kwargs)
        return call(FUNCTIONS, ufunc.__name__, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return call(FUNCTIONS, function_key(func), args, kwargs)

    def __getattr__(self, attribute):   # the ndarray methods: x.sum(axis=0) is np.sum(x, 0)
        method = METHODS.get(attribute)
        if method is not None:
            return lambda *args, **kwargs: method(self, *args, **kwargs)
        op = FUNCTIONS.get(attribute)
        if isinstance(op, Op) and not isinstance(self.value, np.ndarray):
            # numpy applies np.tanh to an array of objects by calling each one's .tanh()
            return lambda *others: record(op, self, *others)
        if not attribute.startswith("_") and hasattr(np.ndarray, attribute):
            raise TypeError(f"x.{attribute} is not supported on traced arrays; "
                            f"{REFUSED.get(attribute, 'it has no rule: ' + missing(attribute))}")
        raise AttributeError(f"'Traced' object has no attribute {attribute!r}")

    def _read_plain(self, convert, what: str):
        """Data (not differentiated) may become a plain number, as a value read;
        a value with a derivative may not: the derivative would be lost."""
        if self.tape.active[self.index]:
            raise TypeError(f"{what} of a traced value (t{self.index}) would drop its "
                            f"derivative; use minirad.ops (ops.sin, ...) or numpy's functions "
                            f"instead of math, or minirad.detach(x) on purpose")
        return read(convert, self)


class Number(FastArithmetic, Traced):
    """A traced number on a long tape: a :class:`Traced` value whose ``+``, ``-`` and
    ``*`` append their step without :func:`record`'s loop, the same step bit for bit
    (:class:`~minirad.tracing.numbers.FastArithmetic`)."""

    __slots__ = ()


TRACED = (Traced, Number)
"""The classes of the values on a tape (``type(x) in TRACED``: a dual number, another
subclass of :class:`Traced`, is a value of another kind)."""


def _as_index(x):
    return x.__index__()


FUNCTIONS: dict = {}
"""The rules of numpy's functions and ufuncs, by numpy's name (``"sum"``, ``"sin"``,
``"linalg.norm"``): the operation table's entries and the array rules
(:mod:`minirad.tracing.rules`) fill it; :func:`register` adds one of your own."""

METHODS: dict = {}
"""ndarray methods by name, each a function of the array and the method's arguments."""

def missing(key: str) -> str:
    """What to do about numpy's ``key``, which has no rule."""
    return (f"docs/numpy_support.md (or minirad.tracing.supported()) lists what traced arrays "
            f"support; write it with those, or add a rule of your own with "
            f"minirad.tracing.register(np.{key}, rule)")


_DROPS = ("it would drop the derivative; take minirad.detach(x) for the plain values on "
          "purpose")
_WRITES = ("a traced array is never written into; make a new array instead (np.where, "
           "np.concatenate, np.stack)")
UFUNC_METHODS = {("add", "reduce"): "use np.sum", ("multiply", "reduce"): "use np.prod",
                 ("maximum", "reduce"): "use np.max", ("minimum", "reduce"): "use np.min",
                 ("add", "accumulate"): "use np.cumsum",
                 ("multiply", "accumulate"): "use np.cumprod",
                 ("logaddexp", "reduce"): "use minirad.tracing.reductions.logsumexp"}
"""What to use instead of a ufunc's methods (``np.add.reduce`` is ``np.sum``)."""

REFUSED = {
    **dict.fromkeys(("item", "tolist", "tobytes", "tofile", "dump", "dumps", "view",
                     "getfield", "data", "ctypes", "flat", "base"), _DROPS),
    **dict.fromkeys(("fill", "put", "itemset", "setfield", "setflags", "resize", "partition",
                     "byteswap"), _WRITES),
    "sort": f"x.sort() sorts in place, and {_WRITES}: np.sort(x) returns the sorted copy",
}
"""Why the ndarray methods traced values refuse are refused."""


def call(rules: dict, key: str, args, kwargs):
    """Call the rule of numpy's ``key`` on ``args``."""
    rule = rules.get(key)
    if rule is None:
        raise TypeError(f"numpy.{key} has no rule for traced arrays; {missing(key)}")
    if isinstance(rule, Op):
        if kwargs:
            raise TypeError(f"numpy's {key} with {', '.join(kwargs)}=: not supported on "
                            f"traced values; call it with its operands alone")
        if any(isinstance(a, np.ndarray) and a.dtype == object for a in args):
            # an array of traced numbers: the operation entry by entry
            return np.frompyfunc(lambda *xs: record(rule, *xs), len(args), 1)(*args)
        return record(rule, *args)
    return rule(*args, **kwargs)


def function_key(function) -> str:
    """numpy's name for ``function`` below the ``numpy`` namespace: ``"sum"`` for
    ``np.sum``, ``"linalg.norm"`` for ``np.linalg.norm``.

    >>> function_key(np.linalg.norm), function_key(np.max)
    ('linalg.norm', 'max')
    """
    module = getattr(function, "__module__", None) or ""
    parts = [p for p in module.split(".")[1:] if not p.startswith("_")]
    return ".".join([*parts, function.__name__])


ADD, SUB, MUL, DIV, POW = (OPS[name] for name in ("add", "sub", "mul", "div", "pow"))


# ------------------------------------------------------------------ recording
def record(rule, *args, **params):
    """Apply ``rule`` to ``args`` (traced values and constants) and append the
    result to the tape; with no traced operand, just compute it."""
    tape, operands, values, active, numbers, convert = None, [], [], False, True, False
    for a in args:
        if type(a) in TRACED:
            if tape is not a.tape:
                if tape is not None:
                    raise ValueError(f"{rule.name} mixes values of two different traces")
                tape = a.tape
            operands.append(a.index)
            values.append(a.value)
            active = active or tape.active[a.index]
            numbers = numbers and type(a.value) is float
        elif type(a) is float:       # the common constant, kept as it is
            operands.append(a)
            values.append(a)
        elif isinstance(a, Traced):  # a value of another kind (a dual number) applies it
            return type(a).apply(rule, args, params)
        else:
            operands.append(a)
            values.append(None)     # a constant to convert, below
            numbers, convert = False, True
    if convert:
        _constants(tape, rule, operands, values)
    if len(values) == 2 and not numbers and type(rule) is Op:
        _broadcasts(rule, values)   # checked before numpy allocates
    try:
        out = compute(rule, values, params)
    except (ArithmeticError, ValueError) as error:
        # numpy's own class where it has one (a program's ``except LinAlgError`` runs)
        kind = np.linalg.LinAlgError if isinstance(error, np.linalg.LinAlgError) else ValueError
        if tape is None:
            raise kind(f"{rule.name}: {error}") from None
        # a program may catch it: replay must see it raise again
        tape.reads.append((len(tape.rules), functools.partial(computed, rule),
                           tuple(operands), params, RAISED))
        raise kind(not_finite(tape, rule, operands, params, len(tape.rules), error)) from None
    if tape is None:
        return out
    if type(out) is np.ndarray:
        out.setflags(write=False)
    return tape.append(out, active, rule, tuple(operands), params or NO_PARAMS)


def _constants(tape, rule, operands, values) -> None:
    """Convert the constants among ``operands`` as the tape keeps them (in place).  An
    array used again unchanged is the same copy, so what edges keep counts it once."""
    for i, a in enumerate(operands):
        if values[i] is None:
            dtype = _float_type(values)
            key = (id(a), dtype)
            seen = tape.constants.get(key) if tape is not None else None
            if seen is not None and seen[0] is a and np.array_equal(a, seen[1]):
                operands[i] = values[i] = seen[1]
                continue
            try:
                operands[i] = values[i] = constant(a, rule.name, dtype)
            except ValueError as error:   # within a trace, the message names the vertex too
                if tape is None:
                    raise
                at = f"{rule.name} at vertex {vertex_name(tape, len(tape.rules))}"
                raise ValueError(str(error).replace(rule.name, at, 1)) from None
            if tape is not None and type(a) is np.ndarray:
                tape.constants[key] = (a, values[i])


def _broadcasts(rule, values) -> None:
    """Refuse an elementwise operation whose shapes do not broadcast or broadcast too big."""
    first, second = getattr(values[0], "shape", ()), getattr(values[1], "shape", ())
    if first != second and first and second:   # a number broadcasts to anything
        try:
            shape = np.broadcast_shapes(first, second)
        except ValueError:
            raise ValueError(f"{rule.name}: shapes {first} and {second} do not "
                             f"broadcast") from None
        check_entries(shape, rule.name)


def _digits(n: int) -> int:
    """About how many decimal digits ``n`` has (``str`` refuses integers this long)."""
    return int(abs(n).bit_length() * 0.30103) + 1


def compute(rule, values, params):
    """The value of ``rule`` on plain operands: the rule for numbers when they are all
    numbers, numpy's otherwise."""
    if isinstance(rule, Op):
        if type(values[0]) is float and (len(values) == 1 or type(values[1]) is float):
            return rule.value(*values)
        out = rule.on_arrays[0](*values)
        # numpy's values are arrays; values of an outer trace (a tape nested in another,
        # minirad.exact.higher) stay what that trace made
        if type(out) is np.ndarray or not isinstance(out, (np.generic, float)):
            return out
        return np.asarray(out)
    return rule.value(*values, **params)


def computed(rule, *values, **params):
    return compute(rule, values, params)


RAISED = "raised"
"""What the tape writes down as read when an operation raised (the program caught it)."""


def _float_type(values):
    """The dtype an integer constant among traced ``values`` becomes: the first traced
    array's (a float32 program stays float32)."""
    return next((v.dtype for v in values if type(v) is np.ndarray), np.float64)


def constant(x, what: str, dtype=np.float64):
    """An operand that is not traced, as the tape keeps it: a Python number as a float
    (an ``int`` on the tape is a position), an array as a read-only copy (of integers
    or booleans, as ``dtype``)."""
    if type(x) is float:
        return x
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{what}: a boolean operand ({x!r}); write 1.0 or 0.0")
    if isinstance(x, Real):
        try:
            return float(x)
        except OverflowError:
            raise ValueError(f"{what}: its constant operand, an integer of about {_digits(x)} "
                             f"digits, is too large for a float64") from None
    if sparse.issparse(x):   # a constant sparse matrix, already the trace's own copy
        return x
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{what}: masked arrays are not supported (their mask would be "
                        f"dropped); use np.where(mask, x, fill) or pass x.filled(value)")
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{what}: a constant of dtype {x.dtype}; constants are real "
                            f"numbers and plain arrays of them")
        check_entries(x.shape, f"{what}: a constant")
        copy = np.array(x, dtype=dtype if x.dtype.kind in "biu" else x.dtype)
        copy.flags.writeable = False
        return copy
    raise TypeError(f"unsupported operand type for {what}: {type(x).__name__}; traced values "
                    f"combine with other traced values, real numbers and numpy arrays")


def read(function, *args, **kwargs):
    """A value the program reads (a comparison, ``bool(x)``, an index): ``function``
    on the plain values, written down so that a replay can check it reads the same."""
    tape = next((a.tape for a in args if type(a) in TRACED), None)
    plain = [a.value if isinstance(a, Traced) else a for a in args]
    result = function(*plain, **kwargs)
    if tape is not None:
        # on the tape an int is a position: a constant int is kept as a 0-d array
        operands = tuple(a.index if type(a) in TRACED else np.asarray(a) if type(a) is int
                         else a for a in args)
        tape.reads.append((len(tape.rules), function, operands, kwargs, result))
    return result


def read_again(function, args, kwargs, was):
    """Read a value again as the program read it (``function`` on plain ``args``):
    whether it reads ``was`` again (an error raised reads as :data:`RAISED`), and what
    it reads now.  Replay and generated code check the path this way."""
    try:
        now = function(*args, **kwargs)
    except (ArithmeticError, ValueError):
        now = RAISED
    if now is RAISED or was is RAISED:
        return now is was, now
    try:
        return bool(np.array_equal(now, was)), now
    except (TypeError, ValueError):
        return now == was, now


def _short(x) -> str:
    return repr(float(x)) if np.ndim(x) == 0 else f"an array of shape {np.shape(x)}"


# ---------------------------------------------------------------------- trace
def trace(f, *args, wrt=None) -> LCG:
    """Run ``f(*args)`` on traced values and return its linearized computational graph.

    Parameters
    ----------
    f : callable
        A Python function of numbers or numpy arrays, written with
        :mod:`minirad.ops` or numpy's own functions.
    *args : float, list of float or numpy.ndarray
        The point to trace at: a number, a list of numbers (a vector: one
        input per element, named ``x[0]``, ``x[1]``, ...) or an array.
    wrt : int or sequence of int, optional
        The positions of the arguments to differentiate by (default: all);
        the others are data, passed to ``f`` as they are, constants inside
        the graph.

    Returns
    -------
    LCG
        One vertex per operation (per array operation when an argument is an
        array), inputs named after ``f``'s parameters and outputs ``y`` (or
        ``y[0]``, ``y[1]``, ... when ``f`` returns several).

    Raises
    ------
    TypeError
        When an argument is neither a number nor an array, or ``f`` calls a
        function minirad has no derivative rule for (the message names it).
    ValueError
        When ``wrt`` names no argument, or a value is not finite.

    See Also
    --------
    minirad.replay : The same graph at another point, without running ``f``.
    minirad.jacobian : Its Jacobian; ``jacobian(f, *args)`` traces first.
    minirad.detach : A value the trace treats as a constant.

    Notes
    -----
    One tracer for numbers and arrays: each operation on a :class:`Traced`
    value appends a step (its rule, operands and parameters) to the
    :class:`Tape`, and :func:`graph` turns the active steps into vertices.
    When every argument differentiated is a number or a list of numbers the
    edges carry floats (a graph of numbers); when one is an array, a vertex
    is a whole array (a number being an array of shape ``()``) and the edges
    carry Jacobian blocks, built only when read (the RAD paper's vectorized
    graph, Sec. 3.2).  Control flow follows the values (comparisons read
    them), so the graph is the linearisation along the path this call took;
    :func:`minirad.replay` checks those reads at a new point.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import ops
    >>> trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
    >>> g = trace(lambda X, w, s: ops.tanh(X @ w * s).sum(), np.ones((4, 3)), np.ones(3), 0.5,
    ...           wrt=[1, 2])                      # X is data; s is a vertex of shape ()
    >>> [g.shape(v) for v in g.inputs], g.names[g.outputs[0]]
    ([(3,), ()], 'y')
    """
    positions = argument_positions(wrt, len(args))
    names = parameter_names(f, len(args))
    tape, call = Tape(), list(args)
    vectors = not any(isinstance(args[p], np.ndarray) for p in positions)
    for position in positions:      # the inputs first: they are vertices 0, 1, ...
        call[position] = argument(tape, args[position], names[position], True,
                                  f"argument {position} ({names[position]})", vectors)
    n_inputs = len(tape.values)
    for position, arg in enumerate(args):
        if position not in positions and is_data(arg):
            call[position] = argument(tape, arg, names[position], False,
                                      f"argument {position} ({names[position]})")
        elif position not in positions:
            tape.constant_names[id(arg)] = names[position]
    with np.errstate(all="ignore"):   # what is not finite is found below, once
        result = f(*call)
    several = isinstance(result, (tuple, list)) or (
        isinstance(result, np.ndarray) and result.dtype == object)
    outputs = finish(tape, [output(tape, r) for r in (result if several else [result])],
                     n_inputs)
    check_finite(tape, outputs)
    kept = Recording(tape, args, positions, outputs, n_inputs,
                     [tape.names[t] for t in range(n_inputs)], several)
    g = graph(tape, outputs, n_inputs, kept.input_names, several)
    g.memo("tracing.recording", lambda: kept)
    return g


class Recording(NamedTuple):
    """What a traced graph keeps to be replayed (:mod:`minirad.tracing.replay`): its tape,
    the arguments it was traced with, which were differentiated, and the outputs."""

    tape: Tape
    args: tuple
    positions: list
    outputs: list
    n_inputs: int
    input_names: list
    several: bool


def parameter_names(f, count: int) -> list[str]:
    """Names for ``count`` arguments of ``f``: its parameter names where it has
    them (``*args`` numbered), ``x0, x1, ...`` beyond."""
    try:
        parameters = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names = []
    for p in parameters:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            names.extend(f"{p.name}{j}" for j in range(count - len(names)))
    names.extend(f"x{j}" for j in range(len(names), count))
    return names[:count]

def argument_positions(wrt, count: int) -> list[int]:
    """``wrt`` (positions of the arguments to differentiate by, or one position, or
    None for all ``count``) as a sorted list, checked."""
    if wrt is None:
        return list(range(count))
    if isinstance(wrt, (int, np.integer)) and not isinstance(wrt, (bool, np.bool_)):
        wrt = [wrt]
    try:
        wrt = list(wrt)
    except TypeError:
        raise TypeError(f"wrt must list argument positions, not {wrt!r}") from None
    for position in wrt:
        if isinstance(position, (bool, np.bool_)) or not isinstance(
                position, (int, np.integer)) or not 0 <= position < count:
            valid = f"0..{count - 1}" if count else "none (no arguments)"
            raise ValueError(f"wrt must list argument positions {valid}, not {position!r}")
    return sorted(set(int(p) for p in wrt))


def is_data(arg) -> bool:
    """Whether an argument not differentiated is traced as data: a number or an array."""
    return (isinstance(arg, np.ndarray) and arg.dtype.kind in "biuf") or (
        isinstance(arg, Real) and not isinstance(arg, (bool, np.bool_)))


def argument(tape: Tape, x, name: str, active: bool, what: str = "", vectors=True):
    """The traced value of an argument: a number, a numpy array, or a list of numbers
    (one traced number each, named ``x[0]``, ``x[1]``, ...; an array beside arrays,
    when not ``vectors``).  ``what`` names it in messages (``argument 0 (x)``)."""
    if isinstance(x, (list, tuple)) and active and vectors and all(
            isinstance(xi, Real) or np.ndim(xi) == 0 and not isinstance(xi, np.ndarray)
            for xi in x):    # a vector of numbers: one input each
        return [argument(tape, xi, f"{name}[{j}]", active, f"{what} element {j}")
                for j, xi in enumerate(x)]
    if isinstance(x, (list, tuple)) and active:    # nested: an array, if it is one
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as error:
            raise TypeError(f"{what} is not an array of numbers ({error})") from None
    if isinstance(x, Traced):
        raise TypeError(f"{what} is already traced")
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{what} is a masked array; its mask would be dropped: pass "
                        f"x.filled(value), or the unmasked entries")
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        check_entries(x.shape, what)
        # an input is differentiated, so floating point; data keeps its dtype (labels)
        value = np.array(x, dtype=x.dtype if x.dtype.kind == "f" or not active else np.float64)
        value.flags.writeable = False   # the graph's own copy: changing x later changes nothing
    elif isinstance(x, Real) and not isinstance(x, (bool, np.bool_)):
        try:
            value = float(x) if active or not isinstance(x, int) else x
        except OverflowError:
            raise ValueError(f"{what} is an integer too large for a float64 (about "
                             f"{_digits(x)} digits)") from None
    elif isinstance(x, np.ndarray):
        raise TypeError(f"{what} must be a real array, not one of {x.dtype}")
    else:
        raise TypeError(f"{what} is a {type(x).__name__}; it must be a number or a list of "
                        f"numbers, or a numpy array (trace takes numbers, lists of numbers and "
                        f"numpy arrays)")
    if active and not np.isfinite(value).all():
        if np.ndim(value) == 0:
            raise ValueError(f"{what} is {value}; trace needs finite inputs")
        raise ValueError(f"{what} has a non-finite entry; trace needs finite inputs")
    tape.names[len(tape.values)] = name
    return tape.append(value, active)


def output(tape: Tape, r) -> int:
    """The tape position of one result of the program."""
    if type(r) not in TRACED:
        if isinstance(r, Real) and not isinstance(r, (bool, np.bool_)):
            return tape.append(float(r), False).index   # a constant output
        raise TypeError(f"f returned a {type(r).__name__}; outputs are traced values or "
                        f"numbers")
    if r.tape is not tape:
        raise ValueError("an output was not computed from this trace's inputs")
    return r.index


def check_finite(tape: Tape, outputs) -> None:
    """Refuse a trace whose values are not all finite, naming the first value that
    went wrong.  A program of numbers has every value checked; a program of arrays its
    outputs (a value that is not finite reaches them, or a derivative, which the
    sweeps check: :mod:`minirad.exact.overflow`)."""
    numbers = all(type(v) is float for v in tape.values)
    checked = [np.array(tape.values)] if numbers else [tape.values[t] for t in outputs]
    if all(np.isfinite(v).all() for v in checked):
        return
    for t, value in enumerate(tape.values):
        if tape.steps[t] is not None and not np.isfinite(value).all():
            raise ValueError(not_finite(tape, *tape.steps[t], t))


def not_finite(tape: Tape, rule, operands, params, t: int, error=None) -> str:
    """The message for the value at tape position ``t`` that is not finite (or whose
    rule raised, or whose partial is not finite): the operation over its operands,
    the vertex, and in what way, worded by :func:`minirad.tracing.ops.evaluate`."""
    values = [_innermost(tape.values[o] if type(o) is int else o) for o in operands]
    detail = "the result is not finite" if error is None else str(error)
    if isinstance(rule, Op):
        wrt = [i for i, o in enumerate(operands) if type(o) is int and tape.active[o]]
        try:
            if all(np.ndim(v) == 0 for v in values):
                evaluate(rule, tuple(float(v) for v in values), wrt)
            else:
                evaluate_array(rule, tuple(values), wrt)
        except NonFiniteError as error:
            detail = str(error)
    at = f"at vertex {vertex_name(tape, t)} is not finite"
    if any(np.ndim(v) for v in values):     # arrays: the detail says where, and the operands
        return f"{rule.name} {at}: {detail.removeprefix(rule.name + ': ')}"
    names = ", ".join(vertex_name(tape, o) if type(o) is int else _short(o) for o in operands)
    return f"{rule.name}({names}) {at}: {detail}"


def _innermost(x):
    """The plain value of a value of a trace nested in others (minirad.exact.higher)."""
    while type(x) in TRACED:
        x = x.value
    return x


def vertex_name(tape: Tape, t: int) -> str:
    """How a message names the value at tape position ``t``: the vertex it is (or will
    be), ``v<number>``; a value of data by its name, or as data."""
    if t < len(tape.active) and not tape.active[t]:
        return tape.names.get(t, f"data value {t}")
    return f"v{sum(tape.active[:t])}"


# ---------------------------------------------------------------------- graph
def finish(tape: Tape, outputs: list, n_inputs: int) -> list:
    """The outputs' tape positions, where an output that is an input, feeds another
    operation or is returned twice gets a value of its own, a unit ``copy``."""
    used = {o for operands in tape.operands if operands for o in operands if type(o) is int}
    returned = list(outputs)
    for k, t in enumerate(returned):
        if tape.active[t] and (t < n_inputs or t in used or returned.count(t) > 1):
            outputs[k] = tape.append(tape.values[t], True, COPY, (t,), {}).index
    return outputs


def graph(tape: Tape, outputs, n_inputs: int, input_names, several: bool) -> LCG:
    """The LCG of a finished tape: its active values are the vertices, numbered in
    tape order, the inputs first.  Between numbers an edge's label is its partial,
    worked out now; a Jacobian block is worked out when first read (:func:`labels`)."""
    active = tape.active
    tape_of = [t for t, a in enumerate(active) if a]        # vertex -> tape position
    tape_of += [t for t in outputs if not active[t]]         # a constant output is a vertex
    vertex = [-1] * len(active)                              # tape position -> vertex
    for v, t in enumerate(tape_of):
        vertex[t] = v
    numbers = all(type(tape.values[t]) is float for t in tape_of)
    made = (number_edges(tape, tape_of, vertex)        # the same, by numpy, when long
            if numbers and len(tape_of) > VECTOR_VERTICES else None)
    sources, targets, partials, edges = made or traced_edges(tape, tape_of, vertex, numbers)
    values = [tape.values[t] for t in tape_of]
    edge_labels = partials if numbers else functools.partial(labels, tape, edges, vertex)
    g = LCG.traced(functools.partial(vertex_names, tape, tape_of, vertex, outputs,
                                     n_inputs, input_names, several),
                   sources, targets, edge_labels, range(n_inputs),
                   [vertex[t] for t in outputs], values,
                   lambda: VertexOps(*templates(tape, tape_of)))
    if not numbers:   # the edges' records, for minirad.tracing.pullbacks
        g.memo("tracing.edges", lambda: (tape, edges, vertex))
    return g


def traced_edges(tape: Tape, tape_of, vertex, numbers: bool):
    """``(sources, targets, partials, edges)``: an edge from each operand that is a
    vertex to the step's value.  Between numbers its label, the partial, is worked out
    now; otherwise ``edges`` keeps ``(t, o, positions)`` for :func:`labels`."""
    active, operands_of, values = tape.active, tape.operands, tape.values
    sources, targets = array("q"), array("q")                # compact: 8 bytes an edge end
    partials, edges = array("d"), []
    for t in tape_of:
        operands = operands_of[t]
        if operands is None or not active[t]:
            continue
        if numbers:                # the operands' values, once for all the step's edges
            at = [values[o] if type(o) is int else o for o in operands]
        for o, positions in traced_operands(operands, active):
            sources.append(vertex[o])
            targets.append(vertex[t])
            if numbers:
                partials.append(number_label(tape, t, positions, at))
            else:
                edges.append((t, o, positions))
    return sources, targets, partials, edges


def vertex_names(tape: Tape, tape_of, vertex, outputs, n_inputs, input_names, several):
    """The names of a traced graph's vertices (worked out when first read): inputs after
    the function's parameters, outputs ``y``, names given by :func:`name`, and
    ``v<number>`` for the rest (:mod:`minirad.tracing.naming`)."""
    names = named_vertices(len(tape_of), input_names, [vertex[t] for t in outputs], several)
    for t, name in tape.names.items():
        if t >= n_inputs and vertex[t] >= 0 and vertex[t] not in names:
            names[vertex[t]] = name
    return VertexNames(len(tape_of), names)


def traced_operands(operands, active):
    """``(o, positions)`` for each operand ``o`` that is a vertex, at its ``positions``
    among the operands: ``x * x`` makes one edge, whose partials are added."""
    if len(operands) == 1:    # (most operations: no dictionary needed)
        o = operands[0]
        return ((o, (0,)),) if type(o) is int and active[o] else ()
    if len(operands) == 2:
        a, b = operands
        first, second = type(a) is int and active[a], type(b) is int and active[b]
        if first and second:
            return ((a, (0, 1)),) if a == b else ((a, (0,)), (b, (1,)))
        return ((a, (0,)),) if first else ((b, (1,)),) if second else ()
    by_operand = {}
    for i, o in enumerate(operands):
        if type(o) is int and active[o]:
            by_operand[o] = by_operand.get(o, ()) + (i,)
    return by_operand.items()


def number_label(tape: Tape, t: int, positions, values=None) -> float:
    """The partial of the number at tape position ``t`` in its operands at ``positions``
    (summed: ``x * x`` is one edge), by the table's rule for numbers, checked finite;
    ``values`` are the operands' values, when the caller has them already."""
    rule = tape.rules[t]
    if values is None:
        values = [tape.values[o] if type(o) is int else o for o in tape.operands[t]]
    y = tape.values[t]
    try:
        d = partial_at(rule, positions, values, y)
    except (ArithmeticError, ValueError):
        d = math.nan
    if not math.isfinite(d):
        raise ValueError(not_finite(tape, rule, tape.operands[t], tape.params[t], t))
    return d


def templates(tape: Tape, tape_of):
    """Each vertex's operation over its operands ``{0}``, ``{1}``, ... (constants and data
    written in), as :class:`~minirad.graph.names.VertexOps` takes them."""
    table, ids = {"input": 0}, []
    for t in tape_of:
        step = tape.steps[t]
        if step is None:
            text = "input" if tape.active[t] else repr(tape.values[t])
        else:
            rule, operands, params = step
            slots, pieces = {}, []
            for o in operands:
                if type(o) is int and tape.active[o]:
                    pieces.append("{" + str(slots.setdefault(o, len(slots))) + "}")
                else:
                    pieces.append(_constant_text(tape, o))
            text = (rule.template(pieces, params) if callable(rule.template)
                    else rule.template.format(*pieces, **params))
        ids.append(table.setdefault(text, len(table)))
    return tuple(table), ids


def _constant_text(tape: Tape, o) -> str:
    if type(o) is int:   # data: its name if it has one
        return tape.names.get(o, "c") if np.ndim(tape.values[o]) else repr(
            float(tape.values[o]))
    text = repr(float(o)) if np.ndim(o) == 0 else tape.constant_names.get(id(o), "c")
    return text.replace("{", "{{").replace("}", "}}")


# --------------------------------------------------------------------- labels
def labels(tape: Tape, edges, vertex):
    """Every edge's label, worked out from the tape when first read: the rule's
    partial, a float between numbers, a Jacobian block otherwise."""
    with np.errstate(all="ignore"):   # a partial that is not finite is refused by name
        return _labels(tape, edges, vertex)


def _labels(tape: Tape, edges, vertex):
    return [edge_label(tape, edge, vertex) for edge in edges]


def edge_label(tape: Tape, edge, vertex):
    """The label of one edge ``(t, o, positions)``: from operand ``o`` (at ``positions``
    among the operands) to the value at tape position ``t``."""
    t, _, positions = edge
    rule, operands, params = tape.steps[t]
    if type(tape.values[t]) is float and isinstance(rule, Op):   # a number: its partial
        return number_label(tape, t, positions)
    values = [tape.values[p] if type(p) is int else p for p in operands]
    try:
        return _block(rule, positions, values, tape.values[t],
                      Edge(tape, t, operands, vertex), params)
    except (ArithmeticError, ValueError):
        raise ValueError(not_finite(tape, rule, operands, params, t)) from None


def _block(rule, positions, values, y, edge, params):
    """The Jacobian block of an edge into an array (or a number made from arrays)."""
    label = None
    for i in positions:
        if isinstance(rule, Op):
            part = elementwise(rule, i, values, y, edge)
        else:
            part = rule.block(i, values, y, edge, **params)
        label = part if label is None else OPERATORS.add(label, part)  # x * x
    if np.shape(y) == () == np.shape(values[positions[0]]):   # between two numbers: a float
        label = float(label.to_dense()[0, 0])
    return label


def elementwise(op: Op, i: int, values, y, edge):
    """The block of operand ``i`` of an entry of the operation table: its partial as a
    diagonal (a bit mask where the partial is boolean) after the operand's broadcast."""
    d = op.on_arrays[1][i](*values, y)
    if not (type(d) is bool or np.isfinite(d).all()):
        raise ValueError("a partial that is not finite")   # named by the caller
    if isinstance(d, np.ndarray) and d.dtype == np.bool_:   # kept as bits, or rebuilt
        return elementwise_block(d, values[i], y, (Retained(
            f"mask:{edge.target}.{i}", int(y.size), recompute_from=value_key(edge.target),
            source_bits=y.nbytes * 8, what="mask"),))
    words = op.keeps[i] if i < len(op.keeps) else ""
    return elementwise_block(d, values[i], y, lambda: edge.kept(words))


def elementwise_block(d, x, y, kept=()):
    """The Jacobian block ``diag(d)`` (``d`` broadcast to ``y``'s shape; a bit mask
    when boolean, nothing when 1) taking ``x`` to ``y``, broadcast included; ``kept``
    are its :class:`Retained` records (or a function giving them, asked when needed)."""
    spread = Identity(y.shape, y.dtype) if np.shape(x) == y.shape else Broadcast(
        np.shape(x), y.shape, y.dtype)
    if isinstance(d, np.ndarray) and d.dtype == np.bool_:
        return compose(Mask(np.broadcast_to(d, y.shape), y.dtype, kept), spread)
    if type(d) in (int, float) and d == 1.0:
        return spread
    return compose(Diagonal(np.asarray(d, dtype=y.dtype), y.shape, kept), spread)


class Edge:
    """What a rule's block may ask about the edge it labels: the vertex it ends at,
    what it keeps (:meth:`kept`), and whether an operand was gathered by im2col."""

    def __init__(self, tape: Tape, t: int, operands, vertex):
        self.tape, self.t, self.operands, self.vertex = tape, t, operands, vertex
        self.target = vertex[t]

    def kept(self, words: str) -> tuple[Retained, ...]:
        """One :class:`Retained` record per array a block keeps, from a rule's ``keeps``
        words (operand names ``x``, or ``a`` and ``b``, or operand positions ``0``, ``1``,
        ...; ``y`` for the result), keyed by whose value it is (``value:<vertex>``,
        ``data:<t>`` for data, ``const:<id>`` for a constant the tape holds), so that edges keeping
        one array count it once.  An input's value is marked ``what="input"`` (the
        caller keeps it anyway); a value a rule only moved entries of (a reshape, a
        transpose: ``Rule.moves``) can be rebuilt from the value it was moved from."""
        tape, operands = self.tape, self.operands
        names = ("x",) if len(operands) == 1 else ("a", "b")
        records = []
        for word in words.split():
            j = len(operands) if word == "y" else int(word) if word.isdigit() else names.index(
                word)
            o = self.t if j == len(operands) else operands[j]
            value = tape.values[o] if type(o) is int else o
            if np.ndim(value) == 0:
                continue    # a number is kept inside the block
            bits = int(value.size) * value.dtype.itemsize * 8
            if type(o) is not int:   # a constant, keyed by the object: one array, one count
                records.append(Retained(f"const:{id(o)}", bits, what=word))
                continue
            root = self.root(o)
            what = "input" if j < len(operands) and self.parameter(j) else word
            if root == o:
                records.append(Retained(self.key(o), bits, what=what))
            else:
                source = tape.values[root]
                records.append(Retained(self.key(o), bits, recompute_from=self.key(root),
                                        source_bits=int(source.size) * source.dtype.itemsize * 8,
                                        what=what))
        return tuple(records)

    def root(self, o: int) -> int:
        """The value the value at tape position ``o`` was moved from (by rules that only
        move entries, ``Rule.moves``: a reshape, a transpose), or ``o`` itself."""
        steps = self.tape.steps
        while steps[o] is not None and getattr(steps[o][0], "moves", False) and type(
                steps[o][1][0]) is int:
            o = steps[o][1][0]
        return o

    def parameter(self, j: int) -> bool:
        """Whether operand ``j`` is a number or a parameter (an input's value, or entries
        moved from one): what the caller keeps anyway."""
        o = self.operands[j]
        if type(o) is not int:
            return np.ndim(o) == 0
        root = self.root(o)
        return np.ndim(self.tape.values[o]) == 0 or (
            self.tape.steps[root] is None and self.tape.active[root])

    def key(self, o: int) -> str:
        """The key of the value at tape position ``o``."""
        return value_key(self.vertex[o]) if self.tape.active[o] else f"data:{o}"

    def gathered(self, j: int):
        """``(source, im2col)`` when operand ``j`` is an im2col gather of ``source``."""
        o = self.operands[j]
        step = self.tape.steps[o] if type(o) is int else None
        if step is None or step[0].name != "im2col":
            return None
        return self.tape.values[step[1][0]] if type(step[1][0]) is int else step[1][0], \
            step[2]["im2col"]


def name(x, label: str):
    """Name the vertex of a traced value (``h1``, ``a1``): pictures and listings use
    it.  On anything else it does nothing.  Returns ``x``."""
    if type(x) in TRACED:
        if not isinstance(label, str) or not label:
            raise ValueError(f"a vertex name must be a non-empty string, not {label!r}")
        x.tape.names[x.index] = label
    return x


def detach(x):
    """The plain value of a traced number or array: a constant from here on.

    No derivative flows through what ``detach`` returns: use it on purpose
    only, for a value the derivative should not see (a stopped gradient).

    Parameters
    ----------
    x : object
        A traced number or array, or anything else (returned unchanged).

    Returns
    -------
    object
        The number or array ``x`` holds.

    See Also
    --------
    minirad.trace : What makes traced values.

    Examples
    --------
    >>> from minirad import jacobian
    >>> jacobian(lambda x: x * detach(x), 3.0)   # d/dx of x*x would be 6
    array([[3.]])
    """
    return read(_same, x) if type(x) in TRACED else x


def _same(x):
    return x


