"""Tracing numpy array programs into a vector LCG.

:func:`trace_arrays` runs a function on :class:`Tracked` arrays.  Each
operation computes its value with numpy and records one vertex (the result
array) and one edge per traced operand, labelled with the operator that is
the local Jacobian block (see :mod:`minirad.graph.operators`).  Plain arrays and
numbers are constants: they appear inside operators, never as vertices.
Scalar tracing (:func:`minirad.trace`) is separate and unchanged.

Supported: ``@`` / ``np.matmul`` (vectors, matrices, batches), ``+ - * /``
with broadcasting, negation, ``** c``, ``sum`` / ``mean`` (with ``axis``),
``np.exp log tanh sqrt abs square``, :func:`sigmoid`, :func:`relu`,
``np.maximum`` / ``np.minimum`` with a constant, ``reshape``, ``transpose``
/ ``.T``, indexing and slicing, ``np.concatenate`` / ``np.stack``,
:func:`softmax`, :func:`softmax_cross_entropy`, :func:`conv2d` and
:func:`avg_pool2d`.  The helpers also run on plain arrays, so one program
serves both.  float32 inputs stay float32 throughout.

>>> import numpy as np
>>> W, x = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -1.0])
>>> g = trace_arrays(lambda W, x: relu(W @ x).sum(), W, x)
>>> [op.kind for op in g.labels]     # W @ x: a stored matrix on each edge
['matmul', 'matmul', 'mask', 'sum']
>>> g = trace_arrays(lambda W: relu(W @ x).sum(), W)
>>> [op.kind for op in g.labels]     # x is data: the edge from W keeps it
['outer', 'mask', 'sum']
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import scipy.sparse as sparse

from ..graph.lcg import LCG, value_key
from ..graph.operators import (
    OPERATORS,
    Broadcast,
    Dense,
    Diagonal,
    Embed,
    Gather,
    Identity,
    Im2Col,
    Mask,
    MatMul,
    Outer,
    Reshape,
    Retained,
    Softmax,
    SparseMatMul,
    SumAxes,
    Transpose,
    compose,
    fresh_key,
    matmul_shape,
)
from .tape import parameter_names

SUPPORTED = ("@/matmul (also by a constant scipy.sparse matrix), + - * / (broadcasting), "
             "negation, ** constant, sum, mean, exp, log, tanh, sqrt, abs, square, sigmoid, "
             "relu, maximum/minimum with a constant, reshape, transpose/.T, indexing/slicing, "
             "concatenate, stack, softmax, softmax_cross_entropy, conv2d, avg_pool2d")


class Tape:
    """The growing record of one array trace."""

    def __init__(self):
        self.names: list[str | None] = []
        self.ops: list[str] = []
        self.values: list[np.ndarray] = []
        self.sources: list[int] = []
        self.targets: list[int] = []
        self.operators: list = []
        self.used: list[bool] = []
        self.n_inputs = 0
        self.constants: dict[int, tuple[str, np.ndarray]] = {}   # id -> (key, array)
        self.derived: dict[str, tuple[str, int]] = {}   # key -> (rebuilt from key, its bits)
        self.constant_names: dict[int, tuple[str, object]] = {}  # id -> (parameter name, arg)
        self.gathers: dict[str, tuple] = {}   # key -> (source array, gathering operator)

    def new_vertex(self, value: np.ndarray, op: str, parents, name=None) -> Tracked:
        """Append a vertex; ``parents`` is a list of (Tracked, operator), duplicates added."""
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{op.split('(')[0] or 'an operation'} produced a non-finite "
                             f"value; the traced program must stay finite")
        v = len(self.values)
        merged: dict[int, object] = {}
        for parent, operator in parents:
            if parent.index in merged:
                merged[parent.index] = OPERATORS.add(merged[parent.index], operator)
            else:
                merged[parent.index] = operator
        for u, operator in merged.items():
            self.sources.append(u)
            self.targets.append(v)
            self.operators.append(operator)
            self.used[u] = True
        self.values.append(value)
        self.ops.append(op)
        self.names.append(name)
        self.used.append(False)
        return Tracked(self, v, value)

    @property
    def next_index(self) -> int:
        return len(self.values)

    def key(self, x) -> str:
        """The key of the array an operator keeps: a vertex value or a constant."""
        if isinstance(x, Tracked):
            return value_key(x.index)
        entry = self.constants.get(id(x))
        if entry is None or entry[1] is not x:
            entry = self.constants[id(x)] = (fresh_key("const"), x)
        return entry[0]

    def retain(self, x, what: str = "") -> tuple[Retained, ...]:
        """What keeping the array ``x`` (Tracked, constant array or number) costs."""
        array = x.value if isinstance(x, Tracked) else np.asarray(x)
        if array.size == 1 and not isinstance(x, Tracked):
            return ()
        key = self.key(x) if isinstance(x, (Tracked, np.ndarray)) else fresh_key("const")
        source = self.derived.get(key)
        bits = int(array.size) * array.dtype.itemsize * 8
        if source is None:
            return (Retained(key, bits, what=what),)
        return (Retained(key, bits, recompute_from=source[0], source_bits=source[1],
                         what=what),)

    def retain_sparse(self, A) -> tuple[Retained, ...]:
        """Keeping a constant sparse matrix: its values and index arrays, once per matrix."""
        csr = sparse.csr_array(A)
        bits = (csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes) * 8
        return (Retained(self.key(A), bits, what="sparse matrix"),)

    def retain_value_of_next(self, value: np.ndarray, what: str = "") -> tuple[Retained, ...]:
        """Keeping the value of the vertex about to be recorded."""
        return (Retained(value_key(self.next_index), value.size * value.dtype.itemsize * 8,
                         what=what),)

    def note_moved(self, result_key: str, source) -> None:
        """``result_key`` is a rearrangement of ``source``: it can be rebuilt from it."""
        root = self.key(source)
        array = source.value if isinstance(source, Tracked) else np.asarray(source)
        root, bits = self.derived.get(root, (root, array.size * array.dtype.itemsize * 8))
        self.derived[result_key] = (root, bits)


class Tracked:
    """A traced array: a value plus its vertex on the tape.

    Behaves like a read-only numpy array for the supported operations; any
    other numpy function raises ``TypeError`` naming it.
    """

    __slots__ = ("tape", "index", "value")
    __array_priority__ = 1000

    def __init__(self, tape: Tape, index: int, value: np.ndarray):
        self.tape, self.index, self.value = tape, index, value

    def __repr__(self):
        return f"Tracked(v{self.index}, shape={self.value.shape}, dtype={self.value.dtype})"

    shape = property(lambda self: self.value.shape)
    ndim = property(lambda self: self.value.ndim)
    dtype = property(lambda self: self.value.dtype)
    size = property(lambda self: self.value.size)
    T = property(lambda self: transpose(self))

    def __len__(self):
        return len(self.value)

    def __iter__(self):
        # rows one by one, each an indexing operation (for row in X: ...)
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(len(self.value)))

    def __bool__(self):
        raise TypeError("the truth value of a traced array is not defined: control flow on "
                        "traced values would not be recorded")

    def __float__(self):
        raise TypeError("float() of a traced array would drop its derivative")

    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        return subtract(self, other)

    def __rsub__(self, other):
        return subtract(other, self)

    def __mul__(self, other):
        return multiply(self, other)

    def __rmul__(self, other):
        return multiply(other, self)

    def __truediv__(self, other):
        return divide(self, other)

    def __rtruediv__(self, other):
        return divide(other, self)

    def __neg__(self):
        return negative(self)

    def __pos__(self):
        return self

    def __pow__(self, c):
        return power(self, c)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __getitem__(self, key):
        return getitem(self, key)

    def sum(self, axis=None, keepdims=False):
        return sum_(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis, keepdims)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return transpose(self, (axes[0] if len(axes) == 1 else axes) if axes else None)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a traced array cannot become a plain numpy array (that would drop "
                        f"its derivative); supported operations: {SUPPORTED} (for a "
                        f"scipy.sparse matrix A write minirad.tracing.arrays.matmul(A, x))")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        handler = _UFUNCS.get(ufunc.__name__)
        if method != "__call__" or kwargs or handler is None:
            raise TypeError(f"numpy's {ufunc.__name__} ({method}) is not supported on traced "
                            f"arrays; supported: {SUPPORTED}")
        return handler(*inputs)

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func.__name__)
        if handler is None:
            raise TypeError(f"numpy.{func.__name__} is not supported on traced arrays; "
                            f"supported: {SUPPORTED}")
        return handler(*args, **kwargs)


# --------------------------------------------------------------- helpers
def _value(x):
    return x.value if isinstance(x, Tracked) else x


def _tape_of(*xs) -> Tape | None:
    tapes = {id(x.tape): x.tape for x in xs if isinstance(x, Tracked)}
    if len(tapes) > 1:
        raise ValueError("the operands come from two different traces")
    return next(iter(tapes.values()), None)


def _check_constant(x, op: str):
    if isinstance(x, Tracked):
        return x
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (Real, np.ndarray, np.generic)):
        raise TypeError(f"{op}: unsupported operand of type {type(x).__name__}; traced arrays "
                        f"combine with numpy arrays and real numbers")
    return x


def _broadcast_shape(op: str, a, b) -> tuple:
    sa, sb = np.shape(_value(a)), np.shape(_value(b))
    try:
        return tuple(np.broadcast_shapes(sa, sb))
    except ValueError:
        raise ValueError(f"{op}: shapes {sa} and {sb} do not broadcast") from None


def _spread(x: Tracked, shape: tuple):
    """The operator taking x to its broadcast copy of ``shape``."""
    if x.shape == shape:
        return Identity(shape, x.dtype)
    return Broadcast(x.shape, shape, x.dtype)


# ------------------------------------------------------------ arithmetic
def add(a, b):
    a, b = _check_constant(a, "add"), _check_constant(b, "add")
    tape = _tape_of(a, b)
    shape = _broadcast_shape("add", a, b)
    out = np.asarray(_value(a) + _value(b))
    parents = [(x, _spread(x, shape)) for x in (a, b) if isinstance(x, Tracked)]
    return _record(tape, out, _template("{} + {}", a, b), parents)


def subtract(a, b):
    a, b = _check_constant(a, "subtract"), _check_constant(b, "subtract")
    tape = _tape_of(a, b)
    shape = _broadcast_shape("subtract", a, b)
    out = np.asarray(_value(a) - _value(b))
    parents = []
    if isinstance(a, Tracked):
        parents.append((a, _spread(a, shape)))
    if isinstance(b, Tracked):
        parents.append((b, compose(Diagonal(np.asarray(-1, out.dtype), shape),
                                   _spread(b, shape))))
    return _record(tape, out, _template("{} - {}", a, b), parents)


def multiply(a, b):
    a, b = _check_constant(a, "multiply"), _check_constant(b, "multiply")
    tape = _tape_of(a, b)
    shape = _broadcast_shape("multiply", a, b)
    out = np.asarray(_value(a) * _value(b))
    parents = []
    for x, other in ((a, b), (b, a)):
        if isinstance(x, Tracked):
            d = np.asarray(_value(other), dtype=out.dtype)
            parents.append((x, compose(Diagonal(d, shape, tape.retain(other)), _spread(x, shape))))
    return _record(tape, out, _template("{} * {}", a, b), parents)


def divide(a, b):
    a, b = _check_constant(a, "divide"), _check_constant(b, "divide")
    tape = _tape_of(a, b)
    shape = _broadcast_shape("divide", a, b)
    bv = _value(b)
    if np.any(np.asarray(bv) == 0):
        raise ValueError("divide: the divisor has a zero entry")
    out = np.asarray(_value(a) / bv)
    parents = []
    if isinstance(a, Tracked):
        d = np.asarray(1 / np.asarray(bv, dtype=out.dtype))
        parents.append((a, compose(Diagonal(d, shape, tape.retain(b)), _spread(a, shape))))
    if isinstance(b, Tracked):
        d = np.asarray(-out / bv)
        parents.append((b, compose(Diagonal(d, shape, tape.retain_value_of_next(out)
                                            + tape.retain(b)), _spread(b, shape))))
    return _record(tape, out, _template("{} / {}", a, b), parents)


def negative(x):
    out = -x.value
    return _record(x.tape, out, "-{0}", [(x, Diagonal(np.asarray(-1, out.dtype), out.shape))])


def power(x, c):
    if not isinstance(x, Tracked):
        return np.power(x, _value(c))
    if isinstance(c, Tracked) or not isinstance(c, Real) or isinstance(c, bool):
        raise TypeError("power: only a traced array to a constant real power (x ** c) is "
                        "supported")
    xv = x.value
    if c != int(c) and np.any(xv < 0):
        raise ValueError(f"power: a negative base to the non-integer power {c}")
    if c - 1 < 0 and np.any(xv == 0):
        raise ValueError(f"power: zero to the power {c} has no finite derivative")
    out = np.asarray(xv ** c)
    d = np.asarray(c * xv ** (c - 1), dtype=out.dtype)
    return _record(x.tape, out, "{0} ** " + repr(c), [(x, Diagonal(d, out.shape,
                                                                 x.tape.retain(x)))])


def _elementwise(name: str, f, derivative, keep: str):
    """An elementwise function whose Jacobian is a diagonal computed from the input
    (``keep="input"``) or the output (``keep="output"``), which is what is retained."""
    def traced(x):
        if not isinstance(x, Tracked):
            return f(x)
        out = np.asarray(f(x.value))
        d = np.asarray(derivative(x.value, out), dtype=out.dtype)
        kept = x.tape.retain(x) if keep == "input" else x.tape.retain_value_of_next(out)
        return _record(x.tape, out, name + "({0})", [(x, Diagonal(d, out.shape, kept))])
    traced.__name__ = name
    traced.__doc__ = f"``{name}`` of a traced or plain array (elementwise)."
    return traced


def _log(x):
    if np.any(x <= 0):
        raise ValueError("log: the argument has an entry <= 0")
    return np.log(x)


def _sqrt(x):
    if np.any(x <= 0):
        raise ValueError("sqrt: the argument has an entry <= 0 (no finite derivative)")
    return np.sqrt(x)


def _sigmoid(x):
    x = np.asarray(x)
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                    np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x)))).astype(x.dtype)


exp = _elementwise("exp", np.exp, lambda x, y: y, "output")
log = _elementwise("log", _log, lambda x, y: 1 / x, "input")
tanh = _elementwise("tanh", np.tanh, lambda x, y: 1 - y * y, "output")
sqrt = _elementwise("sqrt", _sqrt, lambda x, y: 0.5 / y, "output")
square = _elementwise("square", np.square, lambda x, y: 2 * x, "input")
absolute = _elementwise("abs", np.abs, lambda x, y: np.sign(x), "input")
sigmoid = _elementwise("sigmoid", _sigmoid, lambda x, y: y * (1 - y), "output")


def relu(x):
    """``max(x, 0)``; its Jacobian is a bit mask (1 bit per entry), which can be
    rebuilt from the output when that is kept anyway."""
    if not isinstance(x, Tracked):
        return np.maximum(x, 0)
    return _clip(x, 0, "relu({0})", greater=True, ties_half=False)  # relu: 0 at 0


def _clip(x: Tracked, c, template: str, greater: bool, ties_half: bool = True):
    c = np.asarray(c, dtype=x.dtype)
    out = np.maximum(x.value, c) if greater else np.minimum(x.value, c)
    mask = x.value > c if greater else x.value < c
    tape = x.tape
    tie = x.value == c
    if ties_half and np.any(tie):
        # minirad's kink convention (minirad.ops): a tie gives 1/2 to each operand,
        # so the Jacobian is no longer a bit mask but a diagonal of 0, 1/2 and 1
        if out.shape != np.shape(tie):
            raise ValueError(f"maximum/minimum with a constant of shape {c.shape} would "
                             f"change the shape {x.shape}")
        d = np.where(tie, 0.5, mask).astype(out.dtype)
        return _record(tape, np.asarray(out), template, [(x, Diagonal(d, out.shape))])
    kept = Retained(fresh_key("mask"), int(mask.size), recompute_from=value_key(
        tape.next_index), source_bits=out.size * out.dtype.itemsize * 8, what="mask")
    if out.shape != mask.shape:
        raise ValueError(f"maximum/minimum with a constant of shape {c.shape} would change "
                         f"the shape {x.shape}")
    return _record(tape, np.asarray(out), template, [(x, Mask(mask, out.dtype, (kept,)))])


def maximum(a, b):
    x, c = (a, b) if isinstance(a, Tracked) else (b, a)
    if isinstance(c, Tracked) or not isinstance(x, Tracked):
        raise TypeError("maximum: supported between a traced array and a constant only")
    return _clip(x, c, f"maximum({{0}}, {_short(c)})", greater=True)


def minimum(a, b):
    x, c = (a, b) if isinstance(a, Tracked) else (b, a)
    if isinstance(c, Tracked) or not isinstance(x, Tracked):
        raise TypeError("minimum: supported between a traced array and a constant only")
    return _clip(x, c, f"minimum({{0}}, {_short(c)})", greater=False)


def _short(c) -> str:
    c = np.asarray(c)
    return repr(float(c)) if c.size == 1 else f"array{c.shape}"


# -------------------------------------------------------------- matmul
def _sparse_matmul(a, b):
    """``A @ x`` or ``x @ A`` with A a constant scipy.sparse matrix."""
    x, A, side = (b, a, "left") if sparse.issparse(a) else (a, b, "right")
    if not isinstance(x, Tracked):
        return a @ b
    shape = matmul_shape(A.shape, x.shape) if side == "left" else matmul_shape(x.shape, A.shape)
    op = SparseMatMul(A, side, x.shape, x.tape.retain_sparse(A))
    out = np.asarray(op.apply(x.value)).reshape(shape)
    name = _constant_text(A, x.tape)
    return _record(x.tape, out, f"{name} @ {{0}}" if side == "left" else f"{{0}} @ {name}",
                   [(x, op)])


def matmul(a, b):
    """``a @ b`` under numpy's rules; a constant operand may be a scipy.sparse matrix
    (write ``matmul(A, x)``: scipy's own ``A @ x`` does not hand over to traced arrays)."""
    if sparse.issparse(a) or sparse.issparse(b):
        return _sparse_matmul(a, b)
    a, b = _check_constant(a, "matmul"), _check_constant(b, "matmul")
    tape = _tape_of(a, b)
    av, bv = np.asarray(_value(a)), np.asarray(_value(b))
    matmul_shape(av.shape, bv.shape)   # a ValueError naming both shapes
    out = np.asarray(np.matmul(av, bv))
    parents = []
    for x, other, side in ((a, b, "right"), (b, a, "left")):
        if isinstance(x, Tracked):
            stored = np.asarray(_value(other))
            # multiplying by a parameter (an input, or a rearrangement of one) costs nothing
            # extra; by an activation, the activation is kept: the outer-product edge
            key = tape.key(other)
            root = tape.derived.get(key, (key,))[0]
            parameter = root in {value_key(v) for v in range(tape.n_inputs)}
            kind = MatMul if parameter else Outer
            parents.append((x, kind(stored, side, x.shape, tape.retain(other),
                                    tape.gathers.get(key))))
    return _record(tape, out, _template("{} @ {}", a, b), parents)


# ----------------------------------------------------------- reductions
def sum_(x, axis=None, keepdims=False):
    if not isinstance(x, Tracked):
        return np.sum(x, axis=axis, keepdims=keepdims)
    op = SumAxes(x.shape, axis, keepdims, 1.0, x.dtype)
    out = np.asarray(x.value.sum(axis=op.axes, keepdims=keepdims))
    return _record(x.tape, out, "sum({0})" if axis is None else f"sum({{0}}, axis={axis})",
                   [(x, op)])


def mean(x, axis=None, keepdims=False):
    if not isinstance(x, Tracked):
        return np.mean(x, axis=axis, keepdims=keepdims)
    probe = SumAxes(x.shape, axis, keepdims, 1.0, x.dtype)
    count = math.prod(x.shape[a] for a in probe.axes)
    if count == 0:
        raise ValueError("mean of an empty selection")
    op = SumAxes(x.shape, axis, keepdims, 1.0 / count, x.dtype)
    out = np.asarray(x.value.mean(axis=op.axes, keepdims=keepdims))
    return _record(x.tape, out, "mean({0})" if axis is None else f"mean({{0}}, axis={axis})",
                   [(x, op)])


# --------------------------------------------------------- data movement
def _moved(x: Tracked, out: np.ndarray, template: str, op):
    x.tape.note_moved(value_key(x.tape.next_index), x)
    return _record(x.tape, out, template, [(x, op)])


def reshape(x, shape):
    if not isinstance(x, Tracked):
        return np.reshape(x, shape)
    try:
        out = x.value.reshape(shape)
    except ValueError:
        raise ValueError(f"reshape: cannot reshape shape {x.shape} into {shape}") from None
    return _moved(x, out, f"reshape({{0}}, {out.shape})", Reshape(x.shape, out.shape, x.dtype))


def transpose(x, axes=None):
    if not isinstance(x, Tracked):
        return np.transpose(x, axes)
    op = Transpose(x.shape, axes, x.dtype)
    out = np.ascontiguousarray(x.value.transpose(op.axes))
    return _moved(x, out, "{0}.T" if axes is None else f"transpose({{0}}, {op.axes})", op)


def getitem(x, key):
    if isinstance(key, Tracked):
        raise TypeError("indexing with a traced array is not supported; index with constants")
    try:
        positions = np.arange(x.size).reshape(x.shape)[key]
    except (IndexError, TypeError) as error:
        raise ValueError(f"index {key!r} is invalid for shape {x.shape}: {error}") from None
    positions = np.asarray(positions)
    out = np.asarray(x.value.reshape(-1)[positions])
    op = Gather(x.shape, positions, x.dtype)
    x.tape.gathers[value_key(x.tape.next_index)] = (x.value, op)
    return _moved(x, out, "{0}[" + _key_text(key) + "]", op)


def _key_text(key) -> str:
    parts = key if isinstance(key, tuple) else (key,)

    def one(k):
        if isinstance(k, slice):
            return ":".join("" if p is None else str(p) for p in (k.start, k.stop)) + (
                "" if k.step is None else f":{k.step}")
        if k is None:
            return "None"
        if k is Ellipsis:
            return "..."
        return str(k) if np.ndim(k) == 0 else "array"
    return ", ".join(one(k) for k in parts)


def concatenate(arrays, axis=0):
    arrays = list(arrays)
    tape = _tape_of(*arrays)
    if tape is None:
        return np.concatenate(arrays, axis=axis)
    values = [np.asarray(_value(a)) for a in arrays]
    try:
        out = np.concatenate(values, axis=axis)
    except ValueError:
        raise ValueError(f"concatenate: shapes {[v.shape for v in values]} do not join along "
                         f"axis {axis}") from None
    ax = axis % out.ndim
    ends = np.cumsum([v.shape[ax] for v in values])[:-1]
    pieces = np.split(np.arange(out.size).reshape(out.shape), ends, axis=ax)
    parents = [(a, Embed(out.shape, p, out.dtype)) for a, p in zip(arrays, pieces)
               if isinstance(a, Tracked)]
    return _record(tape, out, f"concatenate({_slots(arrays)}, axis={axis})", parents)


def stack(arrays, axis=0):
    arrays = list(arrays)
    tape = _tape_of(*arrays)
    if tape is None:
        return np.stack(arrays, axis=axis)
    values = [np.asarray(_value(a)) for a in arrays]
    try:
        out = np.stack(values, axis=axis)
    except ValueError:
        raise ValueError(f"stack: shapes {[v.shape for v in values]} differ") from None
    positions = np.arange(out.size).reshape(out.shape)
    parents = [(a, Embed(out.shape, np.take(positions, i, axis=axis), out.dtype))
               for i, a in enumerate(arrays) if isinstance(a, Tracked)]
    return _record(tape, out, f"stack({_slots(arrays)}, axis={axis})", parents)


# ------------------------------------------------------------- softmax
def _softmax_values(z, axis):
    shifted = z - z.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, computed stably; its Jacobian keeps the output."""
    if not isinstance(x, Tracked):
        return _softmax_values(np.asarray(x), axis)
    out = _softmax_values(x.value, axis)
    tape = x.tape
    return _record(tape, out, f"softmax({{0}}, axis={axis})",
                   [(x, Softmax(out, axis, tape.retain_value_of_next(out)))])


def softmax_cross_entropy(logits, labels):
    """Mean over the batch of ``-log softmax(logits)[label]``, computed stably.

    ``logits`` has shape (B, C) (or (C,)); ``labels`` holds class indices of
    shape (B,) (or a scalar), or one-hot / probability rows like ``logits``.
    The Jacobian is the row ``(softmax(logits) - onehot) / B``, kept as B x C
    floats: the paper's "logits, not sampled".
    """
    z = np.asarray(_value(logits))
    if z.ndim not in (1, 2):
        raise ValueError(f"softmax_cross_entropy: logits must have shape (B, C) or (C,), not "
                         f"{z.shape}")
    if isinstance(labels, Tracked):
        raise TypeError("softmax_cross_entropy: labels must be constants")
    labels = np.asarray(labels)
    if labels.shape == z.shape and np.issubdtype(labels.dtype, np.floating):
        target = labels.astype(z.dtype)
    else:
        expected = z.shape[:-1]
        if labels.shape != expected or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"softmax_cross_entropy: labels must be integer classes of shape "
                             f"{expected} or rows of shape {z.shape}, not {labels.dtype} "
                             f"{labels.shape}")
        if labels.size and (labels.min() < 0 or labels.max() >= z.shape[-1]):
            raise ValueError(f"softmax_cross_entropy: labels must lie in 0..{z.shape[-1] - 1}")
        target = np.zeros(z.shape, z.dtype)
        np.put_along_axis(target, labels[..., None], 1, axis=-1)
    batch = z.shape[0] if z.ndim == 2 else 1
    shifted = z - z.max(axis=-1, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    log_p = shifted - log_sum
    loss = np.asarray(-(target * log_p).sum() / batch, dtype=z.dtype)
    if not isinstance(logits, Tracked):
        return loss
    grad = ((np.exp(log_p) * target.sum(axis=-1, keepdims=True) - target) / batch).astype(z.dtype)
    tape = logits.tape
    kept = (Retained(fresh_key("softmax"), grad.size * grad.dtype.itemsize * 8,
                     what="softmax probabilities"),)
    return _record(tape, loss, "softmax_cross_entropy({0})",
                   [(logits, Dense(grad.reshape(1, -1), (), z.shape, kept))])


# ---------------------------------------------------------- convolution
def conv2d(x, w, stride: int = 1, padding: int = 0):
    """2-D cross-correlation (deep learning's convolution) of images ``x`` (B, C, H, W)
    with kernels ``w`` (F, C, kh, kw), by im2col: patches gathered into a matrix and
    multiplied by the kernels.  The patch matrix is kept for dW but can be rebuilt
    from ``x``, so :func:`minirad.memory` counts ``x``."""
    xv, wv = np.asarray(_value(x)), np.asarray(_value(w))
    if xv.ndim != 4 or wv.ndim != 4 or xv.shape[1] != wv.shape[1]:
        raise ValueError(f"conv2d: needs images (B, C, H, W) and kernels (F, C, kh, kw) with "
                         f"the same C; got shapes {xv.shape} and {wv.shape}")
    if int(stride) < 1 or int(padding) < 0:
        raise ValueError(f"conv2d: stride must be >= 1 and padding >= 0, not {stride}, "
                         f"{padding}")
    f, c, kh, kw = wv.shape
    try:
        im2col = Im2Col(xv.shape, (kh, kw), int(stride), int(padding), xv.dtype)
    except ValueError as error:
        raise ValueError(f"conv2d: {error}") from None
    ho, wo = im2col.pixels
    tape = _tape_of(x, w)
    patches = im2col.apply(xv)
    if isinstance(x, Tracked):
        tape.gathers[value_key(tape.next_index)] = (xv, im2col)
        cols = _moved(x, patches, "im2col({0})", im2col)
    else:
        cols = patches
        if tape is not None:
            tape.note_moved(tape.key(cols), x if isinstance(x, np.ndarray) else xv)
            tape.gathers[tape.key(cols)] = (xv, im2col)
    kernels = reshape(w, (f, c * kh * kw)) if isinstance(w, Tracked) else wv.reshape(f, -1)
    out = matmul(kernels, cols)                                    # (B, F, Ho*Wo)
    return reshape(out, (xv.shape[0], f, ho, wo))


def avg_pool2d(x, size: int = 2):
    """Average over non-overlapping ``size`` x ``size`` windows of (B, C, H, W) images."""
    xv = np.asarray(_value(x))
    size = int(size)
    if xv.ndim != 4 or size < 1 or xv.shape[2] % size or xv.shape[3] % size:
        raise ValueError(f"avg_pool2d: needs images (B, C, H, W) with H and W divisible by "
                         f"{size}; got shape {xv.shape}")
    b, c, h, w = xv.shape
    windows = reshape(x, (b, c, h // size, size, w // size, size))
    return mean(windows, axis=(3, 5))


# --------------------------------------------------------------- record
def _slot(i: int) -> str:
    return "{" + str(i) + "}"


def _slots(xs) -> str:
    """``{0}, c, {0}``: predecessor slots (a repeated operand keeps its slot), then constants."""
    seen: dict[int, int] = {}
    tape = _tape_of(*xs)
    return ", ".join(_slot(seen.setdefault(x.index, len(seen))) if isinstance(x, Tracked)
                     else _constant_text(x, tape) for x in xs)


def _constant_text(x, tape: Tape | None) -> str:
    """A constant in an operation: its value if a number, its parameter name if it was an
    argument of the traced function (not traced), else ``c``."""
    if not sparse.issparse(x) and (np.size(x) == 1 and not isinstance(x, np.ndarray)
                                   or np.ndim(x) == 0):
        return _short(x)
    if tape is not None:
        entry = tape.constant_names.get(id(x))
        if entry is not None and entry[1] is x:
            return entry[0]
    return "c"


def _template(pattern: str, a, b) -> str:
    """The operation over predecessor slots: ``a * a`` reads ``{0} * {0}``."""
    tape = _tape_of(a, b)
    slots, seen = [], {}
    for x in (a, b):
        if isinstance(x, Tracked):
            slots.append(_slot(seen.setdefault(x.index, len(seen))))
        else:
            slots.append(_constant_text(x, tape))
    return pattern.format(*slots)


def _record(tape: Tape, out, template: str, parents) -> Tracked:
    out = np.asarray(out)
    if not parents:
        return out
    return tape.new_vertex(out, template, parents)


def name(x, label: str):
    """Name the vertex of a traced array (``h1``, ``a1``): pictures and listings use it.
    On a plain array it does nothing.  Returns ``x``."""
    if isinstance(x, Tracked):
        if not isinstance(label, str) or not label:
            raise ValueError(f"a vertex name must be a non-empty string, not {label!r}")
        x.tape.names[x.index] = label
    return x


_UFUNCS = {
    "add": add, "subtract": subtract, "multiply": multiply, "divide": divide,
    "true_divide": divide, "negative": negative, "power": power, "matmul": matmul,
    "exp": exp, "log": log, "tanh": tanh, "sqrt": sqrt, "square": square,
    "absolute": absolute, "maximum": maximum, "minimum": minimum,
}
_FUNCTIONS = {
    "sum": lambda x, axis=None, keepdims=False: sum_(x, axis, keepdims),
    "mean": lambda x, axis=None, keepdims=False: mean(x, axis, keepdims),
    "reshape": lambda x, shape=None, newshape=None: reshape(x, shape if shape is not None
                                                            else newshape),
    "transpose": lambda x, axes=None: transpose(x, axes),
    "concatenate": lambda arrays, axis=0: concatenate(arrays, axis),
    "stack": lambda arrays, axis=0: stack(arrays, axis),
    "matmul": lambda a, b: matmul(a, b),
    "shape": lambda x: x.shape,
    "ndim": lambda x: x.ndim,
}


def register(function: str, handler) -> None:
    """Let ``numpy.<function>`` called on traced arrays run ``handler`` instead.

    For modules that add operations without editing this one
    (:mod:`minirad.implicit.solves` registers ``np.linalg.solve``).  The handler
    takes numpy's arguments and must record its own vertex.
    """
    if not isinstance(function, str) or not callable(handler):
        raise TypeError("register takes a numpy function's name and a callable")
    _FUNCTIONS[function] = handler


# ---------------------------------------------------------------- trace
def trace_arrays(f, *args, wrt=None) -> LCG:
    """Run ``f(*args)`` on traced arrays and return its vector LCG.

    ``args`` are arrays (or numbers); those at the positions in ``wrt``
    (default: all) become input vertices named after ``f``'s parameters, the
    rest are passed as plain constants.  ``f`` returns a traced array or a
    tuple/list of them: the outputs, named ``y`` (or ``y0``, ``y1``, ...).
    An output that is an input, is used later or is returned twice gets its
    own vertex joined by an identity edge.

    >>> import numpy as np
    >>> g = trace_arrays(lambda X, W: (X @ W).mean(), np.ones((5, 3)), np.ones((3, 2)),
    ...                  wrt=[1])
    >>> g.names, g.shape("W"), g.labels[0].kind
    (('W', 'v1', 'y'), (3, 2), 'outer')
    """
    names = parameter_names(f, len(args))
    wrt = range(len(args)) if wrt is None else list(wrt)
    for position in wrt:
        if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not (
                0 <= position < len(args)):
            raise ValueError(f"wrt must list argument positions 0..{len(args) - 1}, not "
                             f"{position!r}")
    tape = Tape()
    call = list(args)
    input_names = []
    for position in sorted(set(wrt)):
        arg = args[position]
        if isinstance(arg, Tracked):
            raise TypeError(f"argument {position} is already traced")
        array = np.asarray(arg)
        if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype,
                                                                     np.complexfloating):
            raise TypeError(f"argument {position} ({names[position]}) must be a real array, "
                            f"not {array.dtype}")
        if not np.issubdtype(array.dtype, np.floating):
            array = array.astype(np.float64)
        if not np.all(np.isfinite(array)):
            raise ValueError(f"argument {position} ({names[position]}) has a non-finite entry")
        array = array.copy()
        array.flags.writeable = False
        call[position] = tape.new_vertex(array, "input", [], name=names[position])
        input_names.append(names[position])
    tape.n_inputs = len(tape.values)
    for position, arg in enumerate(args):
        if position not in wrt:
            tape.constant_names[id(arg)] = (names[position], arg)
    result = f(*call)
    several = isinstance(result, (tuple, list))
    results = list(result) if several else [result]
    returned: dict[int, int] = {}
    for r in results:
        if isinstance(r, Tracked):
            returned[r.index] = returned.get(r.index, 0) + 1
    outputs = []
    for position, r in enumerate(results):
        if not isinstance(r, Tracked):
            raise TypeError(f"output {position} is a {type(r).__name__}, not a traced array "
                            f"computed from the inputs")
        if r.tape is not tape:
            raise ValueError(f"output {position} was not computed from this trace's inputs")
        v = r.index
        if v < tape.n_inputs or tape.used[v] or returned[v] > 1 or v in outputs:
            v = tape.new_vertex(r.value, "{0}", [(r, Identity(r.shape, r.dtype))]).index
        outputs.append(v)
    base = "y" if "y" not in input_names else "f"
    out_names = [base] if not several else [f"{base}{j}" for j in range(len(outputs))]
    vertex_names = [n if n is not None else f"v{i}" for i, n in enumerate(tape.names)]
    for v, label in zip(outputs, out_names):
        if tape.names[v] is None:
            vertex_names[v] = label
    taken: dict[str, int] = {}
    for i, label in enumerate(vertex_names):
        while label in taken:
            label += "'"
        taken[label] = i
        vertex_names[i] = label
    return LCG(vertex_names, tape.sources, tape.targets, tape.operators,
                     range(tape.n_inputs), outputs, values=tape.values, ops=tape.ops)
