"""The array tracer: numpy programs into an LCG whose labels are Jacobian blocks.

:func:`minirad.trace` runs a function on :class:`Tracked` arrays whenever an
argument it differentiates is a numpy array (a float argument is then a
vertex of shape ``()``).  Each operation computes its value with numpy and
records one vertex (the result) and one edge per traced operand, labelled
with the operator that is the local Jacobian block (see
:mod:`minirad.graph.operators`).  Plain arrays and numbers are constants:
they appear inside operators, never as vertices.

Elementwise operations (``+ - * / **``, ``np.sin``, ``np.exp``, ...,
``minirad.ops.relu``) come from the one table of :mod:`minirad.tracing.ops`,
whose array rules give each partial as a diagonal (a bit mask for a ReLU);
the rest are the array rules below: ``@`` / ``np.matmul`` (also by a
constant ``scipy.sparse`` matrix: write :func:`matmul`), ``np.dot``,
``sum`` / ``mean``, ``reshape``, ``ravel``, ``transpose``, indexing and
slicing, ``np.concatenate`` / ``np.stack``, ``np.where``, ``np.clip``,
:func:`softmax`, :func:`softmax_cross_entropy`, :func:`conv2d` and
:func:`avg_pool2d`.  :data:`SUPPORTED` lists them all, and :func:`register`
adds one.  The helpers also run on plain arrays, so one program serves both.
float32 inputs stay float32 throughout.

>>> import numpy as np
>>> from minirad import ops, trace
>>> W, x = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1.0, -1.0])
>>> g = trace(lambda W, x: ops.relu(W @ x).sum(), W, x)
>>> [op.kind for op in g.labels]     # W @ x: a stored matrix on each edge
['matmul', 'matmul', 'mask', 'sum']
>>> g = trace(lambda W: ops.relu(W @ x).sum(), W)
>>> [op.kind for op in g.labels]     # x is data: the edge from W keeps it
['outer', 'mask', 'sum']

What a graph holds
------------------
A graph does not change once built.  Every vertex value is a read-only
array, and every constant array an operator keeps is a read-only copy taken
when the program first uses it (one copy per constant per trace, checked
against the original when it is used again): refilling a batch buffer
``X[:] = 7`` after tracing leaves the graph, and its gradient, as traced.
The copies cost a pass over the constants: on the MLP of
``bench/bench_vector.py`` (a 150 x 784 float32 batch) about 0.3 ms of an
18 ms trace and gradient, under 2%; the graph, in turn, keeps the values
the tracer made as they are, without copying them again.

Comparisons (``x > 0``, ``x == y``, ``np.isfinite(x)``), ``argmax`` and the
like read the values and give plain booleans or indices, as the tracer of
numbers does: the LCG is the linearisation at the traced point, where a
comparison is a constant.  So ``np.where(x > 0, x, 0.0)`` and ``if x[0] >
0:`` work, and the graph holds for the branch taken at that point.

What it refuses, with a ``TypeError`` or ``ValueError`` that says what to
use instead: numpy functions and ndarray methods without a rule (``x.max()``,
``np.cumsum``), writing into a traced array (``x[0] = 1``) or writing a
traced value into a plain one, ``float(x)``, masked arrays, arrays of more
than :data:`MAX_AXES` axes or :data:`MAX_ENTRIES` entries, and any
non-finite value or derivative.
"""

from __future__ import annotations

import math
import operator
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
from .naming import output_names
from .ops import COMPARISONS, OPS, UFUNCS, NonFiniteError, Op, evaluate_array

MAX_AXES = 31
"""The most axes a traced array may have: the sweeps stack arrays along one more axis,
and numpy's broadcasting stops at 32."""

MAX_ENTRIES = 2 ** 28
"""The most entries an array the tracer makes may have (2 GiB of float64): a larger
shape is refused before anything is allocated."""


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
        self.keys: dict[int, tuple[str, object]] = {}   # id -> (key, the array kept)
        self.copies: dict[tuple, tuple[object, object]] = {}  # (id, dtype) -> (original, copy)
        self.derived: dict[str, tuple[str, int]] = {}   # key -> (rebuilt from key, its bits)
        self.constant_names: dict[int, tuple[str, object]] = {}  # id -> (parameter name, arg)
        self.gathers: dict[str, tuple] = {}   # key -> (source array, gathering operator)

    def new_vertex(self, value: np.ndarray, op: str, parents, name=None) -> Tracked:
        """Append a vertex whose value is ``value`` (made read-only); ``parents`` is a
        list of (Tracked, operator), the operators of a repeated parent added."""
        value = np.asarray(value)
        _check_axes(value.shape, op.split("(")[0] or "an operation")
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{op.split('(')[0] or 'an operation'} produced a non-finite "
                             f"value; the traced program must stay finite")
        value.flags.writeable = False
        v = len(self.values)
        merged: dict[int, object] = {}
        for parent, block in parents:
            if parent.index in merged:
                merged[parent.index] = OPERATORS.add(merged[parent.index], block)
            else:
                merged[parent.index] = block
        for u, block in merged.items():
            self.sources.append(u)
            self.targets.append(v)
            self.operators.append(block)
            self.used[u] = True
        self.values.append(value)
        self.ops.append(op)
        self.names.append(name)
        self.used.append(False)
        return Tracked(self, v, value)

    @property
    def next_index(self) -> int:
        return len(self.values)

    def constant(self, x, dtype) -> np.ndarray:
        """The read-only copy of the constant array ``x`` (as ``dtype`` if it holds
        integers or booleans) that this trace keeps: made at its first use, and made
        again if the caller changed ``x`` in between."""
        target = np.dtype(dtype) if x.dtype.kind in "biu" else x.dtype
        entry = self.copies.get((id(x), target))
        if entry is not None and entry[0] is x and (entry[1] is x or np.array_equal(entry[1], x)):
            return entry[1]
        _check_entries(x.shape, "a constant")
        copy = np.array(x, dtype=target)
        copy.flags.writeable = False
        self.copies[(id(x), target)] = (x, copy)
        named = self.constant_names.get(id(x))
        if named is not None and named[1] is x:
            self.constant_names[id(copy)] = (named[0], copy)
        return copy

    def own(self, x: np.ndarray) -> np.ndarray:
        """Take ``x``, an array the tracer made itself, as a constant without copying it."""
        x.flags.writeable = False
        self.copies[(id(x), x.dtype)] = (x, x)
        return x

    def key(self, x) -> str:
        """The key of the array an operator keeps: a vertex value or a constant."""
        if isinstance(x, Tracked):
            return value_key(x.index)
        entry = self.keys.get(id(x))
        if entry is None or entry[1] is not x:
            entry = self.keys[id(x)] = (fresh_key("const"), x)
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

    Behaves like a read-only numpy array for the supported operations
    (:data:`SUPPORTED`); anything else raises ``TypeError`` naming it.
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
    itemsize = property(lambda self: self.value.itemsize)
    nbytes = property(lambda self: self.value.nbytes)
    T = property(lambda self: transpose(self))

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d traced array")
        return len(self.value)

    def __iter__(self):
        # rows one by one, each an indexing operation (for row in X: ...)
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(len(self.value)))

    # ------------------------------------------------ values, not derivatives
    # a comparison is a constant at the traced point: it reads the values
    def __eq__(self, other):
        return np.equal(self.value, _value(other))

    def __ne__(self, other):
        return np.not_equal(self.value, _value(other))

    def __lt__(self, other):
        return np.less(self.value, _value(other))

    def __le__(self, other):
        return np.less_equal(self.value, _value(other))

    def __gt__(self, other):
        return np.greater(self.value, _value(other))

    def __ge__(self, other):
        return np.greater_equal(self.value, _value(other))

    __hash__ = object.__hash__  # identity: equal values are still two vertices

    def __bool__(self):
        if self.value.size != 1:
            raise ValueError(f"the truth value of a traced array of shape {self.shape} is "
                             f"ambiguous; compare first and use .any() or .all() on the "
                             f"result: (x > 0).all()")
        return bool(self.value)

    def _dropped(self, what: str):
        raise TypeError(f"{what} of a traced array would drop its derivative; use "
                        f"minirad.ops (ops.sin, ...) or numpy's functions on it instead of "
                        f"math, or minirad.detach(x) for its plain value on purpose")

    def __float__(self):
        self._dropped("float()")

    def __int__(self):
        self._dropped("int()")

    def __complex__(self):
        self._dropped("complex()")

    def __index__(self):
        self._dropped("using it as an index")

    def __setitem__(self, key, value):
        raise TypeError("a traced array cannot be written into (x[...] = ... would not be "
                        "recorded); make a new array instead: np.where(mask, new, x), "
                        "np.concatenate or np.stack of the pieces")

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a traced array cannot become a plain numpy array (np.array, "
                        "np.asarray, or writing it into a plain array: A[i] = x), which "
                        "would drop its derivative; gather traced pieces with np.stack or "
                        "np.concatenate, or take minirad.detach(x) for its plain value "
                        "(a scipy.sparse matrix A multiplies it as "
                        "minirad.tracing.arrays.matmul(A, x))")

    # ------------------------------------------------------------- arithmetic
    def _record(self, op: Op, args):
        """Record the operation ``op`` of the table on ``args`` (minirad.ops calls this)."""
        return elementwise(op, *args)

    def __add__(self, other):
        return elementwise(_ADD, self, other)

    def __radd__(self, other):
        return elementwise(_ADD, other, self)

    def __sub__(self, other):
        return elementwise(_SUB, self, other)

    def __rsub__(self, other):
        return elementwise(_SUB, other, self)

    def __mul__(self, other):
        return elementwise(_MUL, self, other)

    def __rmul__(self, other):
        return elementwise(_MUL, other, self)

    def __truediv__(self, other):
        return elementwise(_DIV, self, other)

    def __rtruediv__(self, other):
        return elementwise(_DIV, other, self)

    def __pow__(self, other):
        return elementwise(_POW, self, other)

    def __rpow__(self, other):
        return elementwise(_POW, other, self)

    def __neg__(self):
        return elementwise(OPS["neg"], self)

    def __abs__(self):
        return elementwise(OPS["abs"], self)

    def __pos__(self):
        return self

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __getitem__(self, key):
        return getitem(self, key)

    # ---------------------------------------------------------------- methods
    def sum(self, axis=None, keepdims=False):
        return sum_(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return mean(self, axis, keepdims)

    def reshape(self, *shape):
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return transpose(self, (axes[0] if len(axes) == 1 else axes) if axes else None)

    def ravel(self):
        return reshape(self, -1)

    flatten = ravel  # a traced value is never written into, so a copy is a view

    def copy(self):
        return self  # read-only: a copy would be the same value

    def astype(self, dtype):
        return astype(self, dtype)

    def dot(self, other):
        return dot(self, other)

    def clip(self, a_min=None, a_max=None):
        return clip(self, a_min, a_max)

    def squeeze(self, axis=None):
        return squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        return swapaxes(self, axis1, axis2)

    def argmax(self, *args, **kwargs):
        return self.value.argmax(*args, **kwargs)

    def argmin(self, *args, **kwargs):
        return self.value.argmin(*args, **kwargs)

    def argsort(self, *args, **kwargs):
        return self.value.argsort(*args, **kwargs)

    def nonzero(self):
        return self.value.nonzero()

    def __getattr__(self, name):
        # the ndarray methods and attributes without a rule: say so, and what to use
        if not name.startswith("_") and hasattr(np.ndarray, name):
            hint = _METHOD_HINTS.get(name, _NO_RULE)
            raise TypeError(f"x.{name} is not supported on traced arrays; {hint}")
        raise AttributeError(f"'Tracked' object has no attribute {name!r}")

    # ---------------------------------------------------------------- numpy
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        if method == "__call__" and not kwargs:
            if name in COMPARISONS:
                return ufunc(*(_value(x) for x in inputs))
            op = UFUNCS.get(name)
            if op is not None:
                return elementwise(op, *inputs)
            if name in _UFUNC_RULES:
                return _UFUNC_RULES[name](*inputs)
        if kwargs.get("out") is not None:
            raise TypeError(f"numpy's {name} with out=: a traced value cannot be written "
                            f"into an array; use the result it returns")
        raise TypeError(f"numpy's {name} ({method}) is not supported on traced arrays; "
                        f"supported: {SUPPORTED}")

    def __array_function__(self, func, types, args, kwargs):
        handler = _FUNCTIONS.get(func.__name__)
        if handler is None:
            raise TypeError(f"numpy.{func.__name__} is not supported on traced arrays; "
                            f"supported: {SUPPORTED}; to add a rule, see "
                            f"minirad.tracing.arrays.register")
        return handler(*args, **kwargs)


_ADD, _SUB, _MUL, _DIV, _POW = (OPS[k] for k in ("add", "sub", "mul", "div", "pow"))

_NO_RULE = ("it has no rule yet; write it with the supported operations "
            "(minirad.tracing.arrays.SUPPORTED)")
_MUTATES = ("a traced array is never written into; make a new array instead (np.where, "
            "np.concatenate, np.stack)")
_DROPS = ("it would drop the derivative; take minirad.detach(x) for the plain values on "
          "purpose")
_METHOD_HINTS = {
    **dict.fromkeys(("max", "min"), "reductions max/min have no rule yet; for the larger "
                                     "of x and a constant use np.maximum(x, c)"),
    **dict.fromkeys(("item", "tolist", "tobytes", "tofile", "dump", "dumps", "view",
                     "getfield", "data", "ctypes", "flat", "base"),
                    _DROPS),
    **dict.fromkeys(("fill", "put", "itemset", "setfield", "setflags", "resize", "sort",
                     "partition", "byteswap"), _MUTATES),
}


# --------------------------------------------------------------- helpers
def _value(x):
    return x.value if isinstance(x, Tracked) else x


def _tape_of(*xs) -> Tape | None:
    tapes = {id(x.tape): x.tape for x in xs if isinstance(x, Tracked)}
    if len(tapes) > 1:
        raise ValueError("the operands come from two different traces")
    return next(iter(tapes.values()), None)


def _check_axes(shape, what: str) -> None:
    if len(shape) > MAX_AXES:
        raise ValueError(f"{what}: a traced array has at most {MAX_AXES} axes, not "
                         f"{len(shape)}")


def _check_entries(shape, what: str) -> None:
    size = math.prod(shape)
    if size > MAX_ENTRIES:
        raise ValueError(f"{what} of shape {tuple(shape)} would have {size:.3g} entries; the "
                         f"tracer makes arrays of at most {MAX_ENTRIES:,} "
                         f"(minirad.tracing.arrays.MAX_ENTRIES)")


def _float_dtype(xs) -> np.dtype:
    """The floating dtype of the traced operands among ``xs``."""
    return np.result_type(*[x.dtype for x in xs if isinstance(x, Tracked)], np.float32)


def _operand(x, what: str, tape: Tape, dtype):
    """``x`` as an operand of a traced operation: a traced array, a real number, or the
    trace's read-only copy of a constant array (integers and booleans as ``dtype``)."""
    if isinstance(x, Tracked):
        return x
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{what}: masked arrays are not supported (their mask would be "
                        f"dropped); use np.where(mask, x, fill) or pass x.filled(value)")
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{what}: a boolean operand ({x!r}); write 1.0 or 0.0")
    if isinstance(x, (int, float, np.integer, np.floating)):
        if isinstance(x, int) and not isinstance(x, np.integer):
            try:
                float(x)
            except OverflowError:
                raise ValueError(f"{what}: the integer constant of {len(str(abs(x)))} digits "
                                 f"is too large for a float64 (at most about 1.8e308)") from None
        return x
    if isinstance(x, Real):  # a Fraction and the like: as a float
        return float(x)
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{what}: a constant array of dtype {x.dtype}; constants are "
                            f"real arrays (bool, int or float)")
        _check_axes(x.shape, what)
        return tape.constant(x, dtype)
    raise TypeError(f"{what}: unsupported operand of type {type(x).__name__}; traced arrays "
                    f"combine with numpy arrays and real numbers")


def _operands(what: str, xs) -> tuple[Tape | None, list]:
    tape = _tape_of(*xs)
    if tape is None:
        return None, list(xs)
    dtype = _float_dtype(xs)
    return tape, [_operand(x, what, tape, dtype) for x in xs]


def _broadcast_shape(what: str, *xs) -> tuple:
    shapes = [np.shape(_value(x)) for x in xs]
    try:
        shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what}: shapes {' and '.join(map(str, shapes))} do not "
                         f"broadcast") from None
    _check_entries(shape, what)
    return shape


def _spread(x: Tracked, shape: tuple):
    """The operator taking x to its broadcast copy of ``shape``."""
    if x.shape == shape:
        return Identity(shape, x.dtype)
    return Broadcast(x.shape, shape, x.dtype)


# ----------------------------------------------------- the operation table
def elementwise(op: Op, *operands):
    """Record the operation ``op`` of the table (:mod:`minirad.tracing.ops`) on traced
    arrays and constants: its array rule gives the value and each traced operand's
    partial, which becomes that edge's Jacobian block (a constant factor, a bit mask
    or a diagonal, after the broadcast), keeping what ``op.keeps`` names."""
    tape, operands = _operands(op.name, operands)
    values = tuple(_value(x) for x in operands)
    if tape is None:
        return evaluate_array(op, values, wrt=())[0]
    _broadcast_shape(op.name, *operands)  # refused before numpy allocates it
    wrt = [i for i, x in enumerate(operands) if isinstance(x, Tracked)]
    try:
        out, partials = evaluate_array(op, values, wrt)
    except NonFiniteError as error:
        detail = str(error).removeprefix(f"{op.name}: ")
        raise ValueError(f"{op.name} at vertex v{tape.next_index} is not finite: "
                         f"{detail}") from None
    parents = [(operands[i], _block(tape, op, i, d, operands, out))
               for i, d in zip(wrt, partials)]
    return _record(tape, out, _template(op.template, operands, tape), parents)


def _block(tape: Tape, op: Op, i: int, d, operands, out: np.ndarray):
    """The Jacobian block of ``op``'s result in operand ``i``, whose partial is ``d``."""
    spread = _spread(operands[i], out.shape)
    if type(d) in (int, float):  # a constant of the rule (numpy's scalars are data)
        if d == 1.0:
            return spread
        return compose(Diagonal(np.asarray(d, dtype=out.dtype), out.shape), spread)
    d = np.asarray(d)
    if d.dtype == np.bool_:  # a bit mask, rebuilt from the result when that is kept
        kept = Retained(fresh_key("mask"), int(out.size), recompute_from=value_key(
            tape.next_index), source_bits=out.size * out.dtype.itemsize * 8, what="mask")
        return compose(Mask(np.broadcast_to(d, out.shape), out.dtype, (kept,)), spread)
    kept = ()
    for j in op.kept(i):
        kept += tape.retain_value_of_next(out) if j == op.arity else tape.retain(operands[j])
    return compose(Diagonal(np.asarray(d, dtype=out.dtype), out.shape, kept), spread)


def where(condition, x=None, y=None):
    """``np.where(condition, x, y)``: ``x`` where the condition holds, else ``y``.  The
    condition is read as a constant (the branch taken at the traced point); each
    traced branch's edge is a mask.  With the condition alone, its indices."""
    if x is None and y is None:
        return np.nonzero(_value(condition))
    if x is None or y is None:
        raise TypeError("where takes a condition alone, or a condition, x and y")
    condition = np.asarray(_value(condition)).astype(bool)
    tape, (x, y) = _operands("where", (x, y))
    if tape is None:
        return np.where(condition, x, y)
    shape = _broadcast_shape("where", condition, x, y)
    out = np.asarray(np.where(condition, _value(x), _value(y)))
    parents = []
    for branch, chosen in ((x, condition), (y, ~condition)):
        if isinstance(branch, Tracked):
            mask = np.broadcast_to(chosen, shape)
            kept = (Retained(fresh_key("mask"), int(mask.size), what="where condition"),)
            parents.append((branch, compose(Mask(mask, out.dtype, kept),
                                            _spread(branch, shape))))
    template = f"where(c, {_template('{0}, {1}', [x, y], tape)})"
    return _record(tape, out, template, parents)


def clip(x, a_min=None, a_max=None):
    """``np.clip``: ``minimum(maximum(x, a_min), a_max)``, with their tie convention."""
    if a_min is not None:
        x = elementwise(OPS["maximum"], x, a_min)
    if a_max is not None:
        x = elementwise(OPS["minimum"], x, a_max)
    return x


def astype(x, dtype):
    """``x.astype(dtype)`` for a floating ``dtype``: an identity edge between the dtypes."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"astype({dtype}) of a traced array would drop its derivative; "
                        f"convert to a floating dtype, or take minirad.detach(x) for the "
                        f"plain values")
    if not isinstance(x, Tracked):
        return np.asarray(x).astype(dtype)
    if dtype == x.dtype:
        return x
    return _record(x.tape, x.value.astype(dtype), f"{{0}}.astype({dtype.name})",
                   [(x, Identity(x.shape, dtype))])


# -------------------------------------------------------------- matmul
def _sparse_matmul(a, b):
    """``A @ x`` or ``x @ A`` with A a constant scipy.sparse matrix."""
    x, A, side = (b, a, "left") if sparse.issparse(a) else (a, b, "right")
    if not isinstance(x, Tracked):
        return a @ b
    A = _sparse_constant(x.tape, A, x.dtype)
    shape = matmul_shape(A.shape, x.shape) if side == "left" else matmul_shape(x.shape, A.shape)
    _check_entries(shape, "matmul")
    op = SparseMatMul(A, side, x.shape, x.tape.retain_sparse(A))
    out = np.asarray(op.apply(x.value)).reshape(shape)
    name = _constant_text(A, x.tape)
    return _record(x.tape, out, f"{name} @ {{0}}" if side == "left" else f"{{0}} @ {name}",
                   [(x, op)])


def _sparse_constant(tape: Tape, A, dtype):
    """The trace's copy of a constant sparse matrix (integers as ``dtype``), as for
    arrays: made at first use, again if the caller changed it."""
    entry = tape.copies.get((id(A), "sparse"))
    if entry is not None and entry[0] is A and (A != entry[1]).nnz == 0:
        return entry[1]
    if A.dtype.kind not in "biuf":
        raise TypeError(f"matmul: a sparse matrix of dtype {A.dtype}; it must be real")
    copy = sparse.csr_array(A, dtype=dtype if A.dtype.kind in "biu" else A.dtype, copy=True)
    tape.copies[(id(A), "sparse")] = (A, copy)
    named = tape.constant_names.get(id(A))
    if named is not None and named[1] is A:
        tape.constant_names[id(copy)] = (named[0], copy)
    return copy


def matmul(a, b):
    """``a @ b`` under numpy's rules; a constant operand may be a scipy.sparse matrix
    (write ``matmul(A, x)``: scipy's own ``A @ x`` does not hand over to traced arrays)."""
    if sparse.issparse(a) or sparse.issparse(b):
        return _sparse_matmul(a, b)
    tape, (a, b) = _operands("matmul", (a, b))
    av, bv = np.asarray(_value(a)), np.asarray(_value(b))
    shape = matmul_shape(av.shape, bv.shape)   # a ValueError naming both shapes
    if tape is None:
        return np.matmul(av, bv)
    _check_entries(shape, "matmul")
    out = np.asarray(np.matmul(av, bv))
    parents = []
    for x, other, side in ((a, b, "right"), (b, a, "left")):
        if isinstance(x, Tracked):
            stored = np.asarray(_value(other), dtype=out.dtype)
            # multiplying by a parameter (an input, or a rearrangement of one) costs nothing
            # extra; by an activation, the activation is kept: the outer-product edge
            key = tape.key(other)
            root = tape.derived.get(key, (key,))[0]
            parameter = root in {value_key(v) for v in range(tape.n_inputs)}
            kind = MatMul if parameter else Outer
            parents.append((x, kind(stored, side, x.shape, tape.retain(other),
                                    tape.gathers.get(key))))
    return _record(tape, out, _template("{0} @ {1}", [a, b], tape), parents)


def dot(a, b):
    """``np.dot`` where it is ``*`` (a number on one side) or ``@`` (at most two axes)."""
    da, db = np.ndim(_value(a)), np.ndim(_value(b))
    if da == 0 or db == 0:
        return elementwise(_MUL, a, b)
    if da <= 2 and db <= 2:
        return matmul(a, b)
    raise TypeError(f"np.dot of shapes {np.shape(_value(a))} and {np.shape(_value(b))} has "
                    f"no rule (it pairs axes unlike matmul); use @ / np.matmul, or reshape")


# ----------------------------------------------------------- reductions
def _axes_operator(x, axis, keepdims, scale_by_count: bool):
    try:
        op = SumAxes(x.shape, axis, keepdims, 1.0, x.dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"sum/mean over axis={axis!r} of shape {x.shape}: {error}") from None
    if scale_by_count:
        count = math.prod(x.shape[a] for a in op.axes)
        if count == 0:
            raise ValueError("mean of an empty selection")
        op = SumAxes(x.shape, axis, keepdims, 1.0 / count, x.dtype)
    return op


def sum_(x, axis=None, keepdims=False):
    if not isinstance(x, Tracked):
        return np.sum(x, axis=axis, keepdims=keepdims)
    op = _axes_operator(x, axis, keepdims, scale_by_count=False)
    out = np.asarray(x.value.sum(axis=op.axes, keepdims=keepdims))
    return _record(x.tape, out, "sum({0})" if axis is None else f"sum({{0}}, axis={axis})",
                   [(x, op)])


def mean(x, axis=None, keepdims=False):
    if not isinstance(x, Tracked):
        return np.mean(x, axis=axis, keepdims=keepdims)
    op = _axes_operator(x, axis, keepdims, scale_by_count=True)
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
    except (TypeError, ValueError) as error:
        raise ValueError(f"reshape: cannot reshape shape {x.shape} into {shape!r} "
                         f"({error})") from None
    _check_axes(out.shape, "reshape")
    return _moved(x, out, f"reshape({{0}}, {out.shape})", Reshape(x.shape, out.shape, x.dtype))


def squeeze(x, axis=None):
    if not isinstance(x, Tracked):
        return np.squeeze(x, axis)
    try:  # the shape alone, on a view that allocates nothing
        shape = np.squeeze(np.broadcast_to(np.float32(0), x.shape), axis).shape
    except (TypeError, ValueError) as error:
        raise ValueError(f"squeeze: axis {axis!r} of shape {x.shape}: {error}") from None
    return reshape(x, shape)


def transpose(x, axes=None):
    if not isinstance(x, Tracked):
        return np.transpose(x, axes)
    try:
        op = Transpose(x.shape, axes, x.dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"transpose: axes {axes!r} for shape {x.shape}: {error}") from None
    out = x.value.transpose(op.axes).copy()  # C order (ascontiguousarray makes 0-d 1-d)
    return _moved(x, out, "{0}.T" if axes is None else f"transpose({{0}}, {op.axes})", op)


def swapaxes(x, axis1, axis2):
    if not isinstance(x, Tracked):
        return np.swapaxes(x, axis1, axis2)
    axes = list(range(x.ndim))
    try:
        i, j = operator.index(axis1) % max(x.ndim, 1), operator.index(axis2) % max(x.ndim, 1)
        axes[i], axes[j] = axes[j], axes[i]
    except (TypeError, IndexError):
        raise ValueError(f"swapaxes: axes {axis1!r}, {axis2!r} for shape {x.shape}") from None
    return transpose(x, axes)


def getitem(x, key):
    if isinstance(key, Tracked) or (isinstance(key, tuple) and any(
            isinstance(k, Tracked) for k in key)):
        raise TypeError("indexing with a traced array is not supported; index with constants "
                        "(a comparison such as x > 0 gives one)")
    _check_entries(x.shape, "indexing")
    try:
        positions = np.arange(x.size).reshape(x.shape)[key]
    except (IndexError, TypeError, ValueError) as error:
        raise ValueError(f"index {key!r} is invalid for shape {x.shape}: {error}") from None
    positions = np.asarray(positions)
    _check_axes(positions.shape, "indexing")
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


def _joined(what: str, arrays):
    """The pieces of a concatenate or stack: their tape, operands and values."""
    if isinstance(arrays, Tracked):
        raise TypeError(f"{what} takes a sequence of arrays, not one traced array")
    tape, arrays = _operands(what, list(arrays))
    return tape, arrays, [np.asarray(_value(a)) for a in arrays]


def concatenate(arrays, axis=0):
    tape, arrays, values = _joined("concatenate", arrays)
    if tape is None:
        return np.concatenate(values, axis=axis)
    _check_entries((sum(v.size for v in values),), "concatenate")
    try:
        out = np.concatenate(values, axis=axis)
    except (TypeError, ValueError) as error:
        raise ValueError(f"concatenate: shapes {[v.shape for v in values]} do not join along "
                         f"axis {axis} ({error})") from None
    ax = axis % out.ndim
    ends = np.cumsum([v.shape[ax] for v in values])[:-1]
    pieces = np.split(np.arange(out.size).reshape(out.shape), ends, axis=ax)
    parents = [(a, Embed(out.shape, p, out.dtype)) for a, p in zip(arrays, pieces)
               if isinstance(a, Tracked)]
    return _record(tape, out, f"concatenate({_slots(arrays, tape)}, axis={axis})", parents)


def stack(arrays, axis=0):
    tape, arrays, values = _joined("stack", arrays)
    if tape is None:
        return np.stack(values, axis=axis)
    _check_entries((sum(v.size for v in values),), "stack")
    try:
        out = np.stack(values, axis=axis)
    except (TypeError, ValueError) as error:
        raise ValueError(f"stack: shapes {[v.shape for v in values]} differ, or axis {axis} "
                         f"is out of range ({error})") from None
    _check_axes(out.shape, "stack")
    positions = np.arange(out.size).reshape(out.shape)
    parents = [(a, Embed(out.shape, np.take(positions, i, axis=axis), out.dtype))
               for i, a in enumerate(arrays) if isinstance(a, Tracked)]
    return _record(tape, out, f"stack({_slots(arrays, tape)}, axis={axis})", parents)


# ------------------------------------------------------------- softmax
def _softmax_values(z, axis):
    shifted = z - z.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, computed stably; its Jacobian keeps the output."""
    if not isinstance(x, Tracked):
        return _softmax_values(np.asarray(x), axis)
    if x.ndim == 0 or not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"softmax: axis {axis!r} is out of range for shape {x.shape}")
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
    if isinstance(labels, Tracked):
        raise TypeError("softmax_cross_entropy: labels must be constants")
    if isinstance(labels, np.ma.MaskedArray):
        raise TypeError("softmax_cross_entropy: masked labels are not supported")
    z = np.asarray(_value(logits))
    if z.ndim not in (1, 2) or z.shape[-1] == 0:
        raise ValueError(f"softmax_cross_entropy: logits must have shape (B, C) or (C,) with "
                         f"C >= 1, not {z.shape}")
    labels = np.asarray(labels)
    if labels.shape == z.shape and np.issubdtype(labels.dtype, np.floating):
        target = labels.astype(z.dtype)
        if not np.all(np.isfinite(target)):
            raise ValueError("softmax_cross_entropy: the target rows must be finite")
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
    if batch == 0:
        raise ValueError("softmax_cross_entropy: the batch is empty")
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
def _count(value, what: str, least: int) -> int:
    """An integer option (a stride, a padding, a window) as an int >= ``least``: a float
    such as 1.5 is refused, not truncated."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an int >= {least}, not {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int >= {least}, not {value!r}") from None
    if value < least or value > MAX_ENTRIES:
        raise ValueError(f"{what} must be an int from {least} to {MAX_ENTRIES:,}, not {value}")
    return value


def conv2d(x, w, stride: int = 1, padding: int = 0):
    """2-D cross-correlation (deep learning's convolution) of images ``x`` (B, C, H, W)
    with kernels ``w`` (F, C, kh, kw), by im2col: patches gathered into a matrix and
    multiplied by the kernels.  The patch matrix is kept for dW but can be rebuilt
    from ``x``, so :func:`minirad.memory` counts ``x``."""
    stride, padding = _count(stride, "conv2d: stride", 1), _count(padding, "conv2d: padding", 0)
    tape, (x, w) = _operands("conv2d", (x, w))
    xv, wv = np.asarray(_value(x)), np.asarray(_value(w))
    if xv.ndim != 4 or wv.ndim != 4 or xv.shape[1] != wv.shape[1]:
        raise ValueError(f"conv2d: needs images (B, C, H, W) and kernels (F, C, kh, kw) with "
                         f"the same C; got shapes {xv.shape} and {wv.shape}")
    f, c, kh, kw = wv.shape
    b, _, h, wd = xv.shape
    _check_entries((b, c, h + 2 * padding, wd + 2 * padding), "conv2d: the padded images")
    try:
        im2col = Im2Col(xv.shape, (kh, kw), stride, padding, xv.dtype)
    except ValueError as error:
        raise ValueError(f"conv2d: {error}") from None
    _check_entries(im2col.out_shape, "conv2d: the patch matrix")
    ho, wo = im2col.pixels
    patches = im2col.apply(xv)
    if isinstance(x, Tracked):
        tape.gathers[value_key(tape.next_index)] = (xv, im2col)
        cols = _moved(x, patches, "im2col({0})", im2col)
    else:
        cols = patches if tape is None else tape.own(patches)
        if tape is not None:
            tape.note_moved(tape.key(cols), xv)
            tape.gathers[tape.key(cols)] = (xv, im2col)
    kernels = reshape(w, (f, c * kh * kw)) if isinstance(w, Tracked) else wv.reshape(f, -1)
    out = matmul(kernels, cols)                                    # (B, F, Ho*Wo)
    return reshape(out, (b, f, ho, wo))


def avg_pool2d(x, size: int = 2):
    """Average over non-overlapping ``size`` x ``size`` windows of (B, C, H, W) images."""
    size = _count(size, "avg_pool2d: size", 1)
    xv = np.asarray(_value(x))
    if xv.ndim != 4 or xv.shape[2] % size or xv.shape[3] % size:
        raise ValueError(f"avg_pool2d: needs images (B, C, H, W) with H and W divisible by "
                         f"{size}; got shape {xv.shape}")
    b, c, h, w = xv.shape
    windows = reshape(x, (b, c, h // size, size, w // size, size))
    return mean(windows, axis=(3, 5))


# --------------------------------------------------------------- record
def _slot(i: int) -> str:
    return "{" + str(i) + "}"


def _slots(xs, tape: Tape | None) -> str:
    """``{0}, c, {0}``: predecessor slots (a repeated operand keeps its slot), then constants."""
    seen: dict[int, int] = {}
    return ", ".join(_slot(seen.setdefault(x.index, len(seen))) if isinstance(x, Tracked)
                     else _constant_text(x, tape) for x in xs)


def _constant_text(x, tape: Tape | None) -> str:
    """A constant in an operation: its value if a number, its parameter name if it was an
    argument of the traced function (not traced), else ``c``."""
    if not sparse.issparse(x) and np.ndim(x) == 0:
        return repr(float(np.asarray(x)))
    if tape is not None:
        entry = tape.constant_names.get(id(x))
        if entry is not None and entry[1] is x:
            return entry[0]
    return "c"


def _template(pattern: str, xs, tape: Tape) -> str:
    """``pattern`` over the operands: traced ones as predecessor slots (``a * a`` reads
    ``{0} * {0}``), constants written in."""
    slots, seen = [], {}
    for x in xs:
        if isinstance(x, Tracked):
            slots.append(_slot(seen.setdefault(x.index, len(seen))))
        else:
            slots.append(_constant_text(x, tape).replace("{", "{{").replace("}", "}}"))
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


def _values_only(function):
    """A numpy function that reads values only (indices, shapes, comparisons): it runs
    on the plain values, as a comparison does."""
    def on_values(*args, **kwargs):
        return function(*(_value(a) for a in args),
                        **{k: _value(v) for k, v in kwargs.items()})
    return on_values


# numpy ufuncs that are array rules rather than entries of the table
_UFUNC_RULES = {"matmul": matmul, "square": lambda x: elementwise(_POW, x, 2)}

_FUNCTIONS = {
    "sum": lambda x, axis=None, keepdims=False: sum_(x, axis, keepdims),
    "mean": lambda x, axis=None, keepdims=False: mean(x, axis, keepdims),
    "reshape": lambda x, shape=None, newshape=None: reshape(x, shape if shape is not None
                                                            else newshape),
    "ravel": lambda x: reshape(x, -1),
    "squeeze": lambda x, axis=None: squeeze(x, axis),
    "transpose": lambda x, axes=None: transpose(x, axes),
    "swapaxes": swapaxes,
    "concatenate": lambda arrays, axis=0: concatenate(arrays, axis),
    "stack": lambda arrays, axis=0: stack(arrays, axis),
    "matmul": lambda a, b: matmul(a, b),
    "dot": lambda a, b: dot(a, b),
    "where": where,
    "clip": lambda a, a_min=None, a_max=None: clip(a, a_min, a_max),
    "copy": lambda a: a,
    **{f: _values_only(getattr(np, f)) for f in ("shape", "ndim", "size", "argmax", "argmin",
                                                  "argsort", "nonzero", "flatnonzero",
                                                  "count_nonzero", "isclose", "allclose",
                                                  "array_equal", "result_type")},
}


def register(function: str, handler) -> None:
    """Let ``numpy.<function>`` called on traced arrays run ``handler`` instead.

    For modules that add operations without editing this one
    (:mod:`minirad.implicit.solves` registers ``np.linalg.solve``).  The handler
    takes numpy's arguments and must record its own vertex
    (``tape.new_vertex(value, template, [(operand, block), ...])``).
    """
    if not isinstance(function, str) or not callable(handler):
        raise TypeError("register takes a numpy function's name and a callable")
    _FUNCTIONS[function] = handler


def supported() -> str:
    """What traced arrays support, read off the table and the rules above."""
    table = sorted({op.ufunc or op.name for op in OPS.values() if op.name != "copy"})
    return (f"+ - * / ** @, comparisons; numpy ufuncs and minirad.ops: {', '.join(table)}, "
            f"square; numpy functions: {', '.join(sorted(_FUNCTIONS))}; methods: sum, mean, "
            f"reshape, ravel, flatten, transpose/.T, swapaxes, squeeze, astype (floats), "
            f"copy, dot, clip, argmax, argmin, argsort; indexing and slicing; in "
            f"minirad.tracing.arrays: softmax, softmax_cross_entropy, conv2d, avg_pool2d, "
            f"matmul by a scipy.sparse matrix")


SUPPORTED = supported()


# ---------------------------------------------------------------- trace
def trace_on_arrays(f, args, wrt, names) -> LCG:
    """Run ``f(*args)`` with the arguments at positions ``wrt`` traced (the rest passed
    as they are) and return its LCG; ``names`` names every argument.  What
    :func:`minirad.trace` calls when an argument it differentiates is an array."""
    tape = Tape()
    call = list(args)
    input_names = []
    for position in wrt:
        arg, label = args[position], names[position]
        if isinstance(arg, Tracked):
            raise TypeError(f"argument {position} ({label}) is already traced")
        if isinstance(arg, np.ma.MaskedArray):
            raise TypeError(f"argument {position} ({label}) is a masked array; its mask would "
                            f"be dropped: pass arg.filled(value), or the unmasked entries")
        try:
            array = np.asarray(arg)
        except (TypeError, ValueError) as error:
            raise TypeError(f"argument {position} ({label}) is not an array of numbers "
                            f"({error})") from None
        if array.dtype.kind not in "iuf":
            raise TypeError(f"argument {position} ({label}) must be a real array, not "
                            f"{array.dtype}")
        _check_axes(array.shape, f"argument {position} ({label})")
        _check_entries(array.shape, f"argument {position} ({label})")
        array = np.array(array, dtype=array.dtype if array.dtype.kind == "f" else np.float64)
        if not np.all(np.isfinite(array)):
            raise ValueError(f"argument {position} ({label}) has a non-finite entry; trace "
                             f"needs finite inputs")
        call[position] = tape.new_vertex(array, "input", [], name=label)
        input_names.append(label)
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
    vertex_names = [n if n is not None else f"v{i}" for i, n in enumerate(tape.names)]
    for v, label in zip(outputs, output_names(input_names, len(outputs), several)):
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
