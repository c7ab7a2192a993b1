"""The array tracer: numpy programs into an LCG whose labels are Jacobian blocks.

:func:`minirad.trace` runs a function on :class:`Tracked` arrays whenever an
argument it differentiates is a numpy array (a float argument is then a
vertex of shape ``()``).  Each operation computes its value with numpy and
records one vertex (the result) and one edge per traced operand, labelled
with the operator that is the local Jacobian block (see
:mod:`minirad.graph.operators`).  Plain arrays and numbers are constants:
they appear inside operators, never as vertices.

Elementwise operations (``+ - * / **``, every numpy ufunc with a
derivative: ``np.sin``, ``np.logaddexp``, ``np.floor``, ..., and
``minirad.ops.relu``) come from the one table of :mod:`minirad.tracing.ops`,
whose array rules give each partial as a diagonal (a bit mask for a ReLU).
The rest are array rules, each the numpy function's own name and arguments
(and its ndarray method: ``x.max(axis=0)`` is ``np.max(x, axis=0)``).  This
module holds ``@`` / ``np.matmul`` (also by a constant ``scipy.sparse``
matrix: write :func:`matmul`), ``sum`` / ``mean``, ``reshape``, ``ravel``,
``transpose``, indexing, slicing and boolean masks, ``np.concatenate`` /
``np.stack``, ``np.where``, ``np.clip``, ``np.round``, :func:`softmax`,
:func:`softmax_cross_entropy`, :func:`conv2d` and :func:`avg_pool2d`; the
modules beside it register the others (:mod:`~minirad.tracing.reductions`,
:mod:`~minirad.tracing.contractions`, :mod:`~minirad.tracing.linalg`,
:mod:`~minirad.tracing.rearrange`).  ``docs/numpy_support.md`` lists them
all, with what each rule's edges keep; :func:`supported` lists the names,
and :func:`register` adds a rule of your own.  The helpers also run on plain
arrays, so one program serves both.  float32 inputs stay float32 throughout
(where numpy's own rules keep them so).

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
use instead: numpy functions and ndarray methods without a rule (naming the
function, and :func:`register` to give it one), ufuncs without a derivative
(``np.spacing``, the bitwise ones), options a rule does not take (``out=``,
``where=``), writing into a traced array (``x[0] = 1``, ``x.sort()``) or
writing a traced value into a plain one, ``float(x)``, masked arrays, arrays
of more than :data:`MAX_AXES` axes or :data:`MAX_ENTRIES` entries, and any
non-finite value or derivative.

Writing a rule
--------------
A rule computes the value with numpy on the plain values (``x.value``) and
records one vertex with :func:`record`: the value, a template, and one pair
(traced operand, Jacobian block) per traced operand, the block an operator of
:mod:`minirad.graph.operators` whose :class:`~minirad.graph.operators.Retained`
records say what the backward pass keeps (:meth:`Tape.retain` and
:meth:`Tape.retain_rebuilt` make them).  :func:`traced_operands` turns the
constants among the operands into the trace's read-only copies,
:func:`refuse_options` names numpy options the rule does not take, and
:func:`register` (or :func:`register_rules`) files it under numpy's name.
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
from .ops import (
    COMPARISONS,
    IDENTITIES,
    NOT_DIFFERENTIABLE,
    OPS,
    UFUNCS,
    NonFiniteError,
    Op,
    evaluate_array,
)
from .recording import Operand, Recording, call, read, recorded, replayable

__all__ = ["Tape", "Tracked", "register", "register_rules", "supported", "trace_on_arrays"]

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
        self.recording = Recording()   # what replay reruns (minirad.tracing.recording)

    def new_vertex(self, value: np.ndarray, op: str, parents, name=None,
                   finite: bool = False) -> Tracked:
        """Append a vertex whose value is ``value`` (made read-only); ``parents`` is a
        list of (Tracked, operator), the operators of a repeated parent added.
        ``finite=True``: the caller has checked every entry is finite."""
        value = np.asarray(value)
        if value.ndim > MAX_AXES:
            check_axes(value.shape, op.split("(")[0] or "an operation")
        if not finite and not np.isfinite(value).all():
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
        check_entries(x.shape, "a constant")
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

    def retain_rebuilt(self, array: np.ndarray, source, what: str) -> tuple[Retained, ...]:
        """Keeping ``array`` (a boolean one as one bit per entry), which the backward pass
        can also rebuild from the value of ``source`` (a traced array): free when that
        value is kept anyway."""
        source_value = source.value
        bits = 1 if array.dtype == np.bool_ else array.dtype.itemsize * 8
        return (Retained(fresh_key("rebuilt"), int(array.size) * bits,
                         recompute_from=self.key(source),
                         source_bits=source_value.size * source_value.dtype.itemsize * 8,
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


class Tracked(Operand):
    """A traced array: a value plus its vertex on the tape.

    Behaves like a read-only numpy array for the supported operations
    (:func:`supported`); anything else raises ``TypeError`` naming it.
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
        return read(np.equal, self, other)

    def __ne__(self, other):
        return read(np.not_equal, self, other)

    def __lt__(self, other):
        return read(np.less, self, other)

    def __le__(self, other):
        return read(np.less_equal, self, other)

    def __gt__(self, other):
        return read(np.greater, self, other)

    def __ge__(self, other):
        return read(np.greater_equal, self, other)

    __hash__ = object.__hash__  # identity: equal values are still two vertices

    def __bool__(self):
        if self.value.size != 1:
            raise ValueError(f"the truth value of a traced array of shape {self.shape} is "
                             f"ambiguous; compare first and use .any() or .all() on the "
                             f"result: (x > 0).all()")
        return read(bool, self)

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
    # the ndarray methods that are numpy functions of x (x.max(axis=0) is np.max(x, 0)) go
    # through the same rules, set below the class (_METHODS); these are the others
    def reshape(self, *shape, order="C"):
        _c_order("reshape", order)
        return reshape(self, shape[0] if len(shape) == 1 else shape)

    def transpose(self, *axes):
        return transpose(self, (axes[0] if len(axes) == 1 else axes) if axes else None)

    def flatten(self, order="C"):
        _c_order("flatten", order)
        return reshape(self, -1)   # a traced value is never written into: a copy is a view

    def copy(self, order="C"):
        return self  # read-only: a copy would be the same value

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return astype(self, dtype)

    def conj(self):
        return self   # real numbers

    conjugate = conj
    real = property(conj)
    mT = property(lambda self: swapaxes(self, -1, -2))

    def __round__(self, ndigits=None):
        return _FUNCTIONS["round"](self, ndigits or 0)

    def __getattr__(self, name):
        # the ndarray methods and attributes without a rule: say so, and what to use
        if not name.startswith("_") and hasattr(np.ndarray, name):
            hint = _METHOD_HINTS.get(name, _NO_RULE)
            raise TypeError(f"x.{name} is not supported on traced arrays; {hint}")
        raise AttributeError(f"'Tracked' object has no attribute {name!r}")

    # ---------------------------------------------------------------- numpy
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        name = ufunc.__name__
        if kwargs.get("out") is not None:
            raise TypeError(f"numpy's {name} with out=: a traced value cannot be written "
                            f"into an array; use the result it returns")
        if method != "__call__":
            hint = _UFUNC_METHODS.get((name, method), "write it with the functions of the "
                                                      "rules instead (np.sum, np.cumsum, ...)")
            raise TypeError(f"numpy's {name}.{method} is not supported on traced arrays; "
                            f"{hint}")
        if name in COMPARISONS:
            return read(ufunc, *inputs, **kwargs)
        if name in IDENTITIES and len(inputs) == 1 and not kwargs:
            return inputs[0]   # +x
        rule = _UFUNC_RULES.get(name)
        if rule is not None:
            return call(rule, inputs, kwargs)
        op = UFUNCS.get(name)
        if op is not None:
            if kwargs:
                raise TypeError(f"numpy's {name} with {', '.join(f'{k}=' for k in kwargs)}: "
                                f"not supported on traced arrays; call np.{name} with its "
                                f"operands alone")
            return elementwise(op, *inputs)
        if name in NOT_DIFFERENTIABLE:
            raise TypeError(f"numpy's {name} has no derivative on traced arrays: "
                            f"{NOT_DIFFERENTIABLE[name]}")
        raise TypeError(f"numpy's {name} has no rule for traced arrays; "
                        f"{_how_to_add(f'np.{name}')}")

    def __array_function__(self, func, types, args, kwargs):
        key = function_key(func)
        handler = _FUNCTIONS.get(key)
        if handler is None:
            raise TypeError(f"numpy.{key} has no rule for traced arrays; "
                            f"{_how_to_add(f'np.{key}')}")
        if getattr(handler, "reads", False):
            return handler(*args, **kwargs)
        return call(handler, args, kwargs)


_ADD, _SUB, _MUL, _DIV, _POW = (OPS[k] for k in ("add", "sub", "mul", "div", "pow"))

def _how_to_add(function: str) -> str:
    return (f"docs/numpy_support.md (or minirad.tracing.arrays.supported()) lists what traced "
            f"arrays support; write it with those, or add a rule of your own with "
            f"minirad.tracing.arrays.register({function}, rule)")


_NO_RULE = f"it has no rule; {_how_to_add('np.<function>')}"
_MUTATES = ("a traced array is never written into; make a new array instead (np.where, "
            "np.concatenate, np.stack)")
_DROPS = ("it would drop the derivative; take minirad.detach(x) for the plain values on "
          "purpose")
_METHOD_HINTS = {
    **dict.fromkeys(("item", "tolist", "tobytes", "tofile", "dump", "dumps", "view",
                     "getfield", "data", "ctypes", "flat", "base"),
                    _DROPS),
    **dict.fromkeys(("fill", "put", "itemset", "setfield", "setflags", "resize", "partition",
                     "byteswap"), _MUTATES),
    "sort": f"x.sort() sorts in place, and {_MUTATES}: np.sort(x) returns the sorted copy",
}
_UFUNC_METHODS = {("add", "reduce"): "use np.sum", ("multiply", "reduce"): "use np.prod",
                  ("maximum", "reduce"): "use np.max", ("minimum", "reduce"): "use np.min",
                  ("add", "accumulate"): "use np.cumsum",
                  ("multiply", "accumulate"): "use np.cumprod",
                  ("logaddexp", "reduce"): "use minirad.tracing.reductions.logsumexp"}


def _c_order(what: str, order) -> None:
    if order not in ("C", "A", "K"):
        raise TypeError(f"x.{what}(order={order!r}): traced arrays are in C order; reshape "
                        f"the transpose for another order")


# --------------------------------------------------------------- helpers
def plain(x):
    """The value of a traced array (anything else as it is): what a rule computes with."""
    return x.value if isinstance(x, Tracked) else x


def _tape_of(*xs) -> Tape | None:
    tapes = {id(x.tape): x.tape for x in xs if isinstance(x, Tracked)}
    if len(tapes) > 1:
        raise ValueError("the operands come from two different traces")
    return next(iter(tapes.values()), None)


def check_axes(shape, what: str) -> None:
    """Refuse a shape of more than :data:`MAX_AXES` axes, naming ``what`` made it."""
    if len(shape) > MAX_AXES:
        raise ValueError(f"{what}: a traced array has at most {MAX_AXES} axes, not "
                         f"{len(shape)}")


def check_entries(shape, what: str) -> None:
    """Refuse a shape of more than :data:`MAX_ENTRIES` entries before anything that size
    is allocated, naming ``what`` would have made it."""
    size = math.prod(shape)
    if size > MAX_ENTRIES:
        raise ValueError(f"{what} of shape {tuple(shape)} would have {size:.3g} entries; the "
                         f"tracer makes arrays of at most {MAX_ENTRIES:,} "
                         f"(minirad.tracing.arrays.MAX_ENTRIES)")


def _float_dtype(xs) -> np.dtype:
    """The floating dtype of the traced operands among ``xs``."""
    dtypes = [x.value.dtype for x in xs if isinstance(x, Tracked)]
    if dtypes[0] in _SINGLE_OR_DOUBLE and all(d == dtypes[0] for d in dtypes):
        return dtypes[0]   # what result_type gives, without its cost per operation
    return np.result_type(*dtypes, np.float32)


_SINGLE_OR_DOUBLE = (np.dtype(np.float32), np.dtype(np.float64))


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
        check_axes(x.shape, what)
        return tape.constant(x, dtype)
    raise TypeError(f"{what}: unsupported operand of type {type(x).__name__}; traced arrays "
                    f"combine with numpy arrays and real numbers")


def traced_operands(what: str, xs) -> tuple[Tape | None, list]:
    """The trace of the operands ``xs`` (None if none is traced) and the operands, each
    constant array as the trace's read-only copy (integers and booleans as floats)."""
    tape = _tape_of(*xs)
    if tape is None:
        return None, list(xs)
    dtype = _float_dtype(xs)
    return tape, [_operand(x, what, tape, dtype) for x in xs]


def _broadcast_shape(what: str, *xs) -> tuple:
    shapes = [np.shape(plain(x)) for x in xs]
    if all(s == shapes[0] for s in shapes):
        return shapes[0]   # nothing to broadcast, and it was checked when it was made
    try:
        shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what}: shapes {' and '.join(map(str, shapes))} do not "
                         f"broadcast") from None
    check_entries(shape, what)
    return shape


def _spread(x: Tracked, shape: tuple):
    """The operator taking x to its broadcast copy of ``shape``."""
    if x.shape == shape:
        return Identity(shape, x.dtype)
    return Broadcast(x.shape, shape, x.dtype)


# ----------------------------------------------------- the operation table
@replayable
def elementwise(op: Op, *operands):
    """Record the operation ``op`` of the table (:mod:`minirad.tracing.ops`) on traced
    arrays and constants: its array rule gives the value and each traced operand's
    partial, which becomes that edge's Jacobian block (a constant factor, a bit mask
    or a diagonal, after the broadcast), keeping what ``op.keeps`` names."""
    tape, operands = traced_operands(op.name, operands)
    if tape is None:
        return evaluate_array(op, tuple([plain(x) for x in operands]), wrt=())[0]
    _broadcast_shape(op.name, *operands)  # refused before numpy allocates it
    return elementwise_vertex(tape, op, operands, template_text(op.template, operands, tape))


def elementwise_vertex(tape: Tape, op: Op, operands, template: str) -> Tracked:
    """The vertex of ``op`` on operands :func:`elementwise` has checked (traced arrays of
    ``tape``, numbers, the trace's constant copies), shown as ``template``; what a replay
    calls directly when it knows the operands are what they were when traced."""
    values = tuple([plain(x) for x in operands])
    wrt = [i for i, x in enumerate(operands) if isinstance(x, Tracked)]
    try:
        out, partials = evaluate_array(op, values, wrt)
    except NonFiniteError as error:
        detail = str(error).removeprefix(f"{op.name}: ")
        raise ValueError(f"{op.name} at vertex v{tape.next_index} is not finite: "
                         f"{detail}") from None
    parents = [(operands[i], _block(tape, op, i, d, operands, out))
               for i, d in zip(wrt, partials)]
    # evaluate_array checked the value finite
    return tape.new_vertex(out, template, parents, finite=True)


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


@replayable
def where(condition, x=None, y=None):
    """``np.where(condition, x, y)``: ``x`` where the condition holds, else ``y``.  The
    condition is read as a constant (the branch taken at the traced point); each
    traced branch's edge is a mask.  With the condition alone, its indices."""
    if x is None and y is None:
        return read(np.nonzero, condition)   # indices: a value read, as argmax is
    if x is None or y is None:
        raise TypeError("where takes a condition alone, or a condition, x and y")
    condition = np.asarray(plain(condition)).astype(bool)
    tape, (x, y) = traced_operands("where", (x, y))
    if tape is None:
        return np.where(condition, x, y)
    shape = _broadcast_shape("where", condition, x, y)
    out = np.asarray(np.where(condition, plain(x), plain(y)))
    parents = []
    for branch, chosen in ((x, condition), (y, ~condition)):
        if isinstance(branch, Tracked):
            mask = np.broadcast_to(chosen, shape)
            kept = (Retained(fresh_key("mask"), int(mask.size), what="where condition"),)
            parents.append((branch, compose(Mask(mask, out.dtype, kept),
                                            _spread(branch, shape))))
    template = f"where(c, {template_text('{0}, {1}', [x, y], tape)})"
    return record(tape, out, template, parents)


@replayable
def clip(x, a_min=None, a_max=None):
    """``np.clip``: ``minimum(maximum(x, a_min), a_max)``, with their tie convention."""
    if a_min is not None:
        x = elementwise(OPS["maximum"], x, a_min)
    if a_max is not None:
        x = elementwise(OPS["minimum"], x, a_max)
    return x


@replayable
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
    return record(x.tape, x.value.astype(dtype), f"{{0}}.astype({dtype.name})",
                   [(x, Identity(x.shape, dtype))])


# -------------------------------------------------------------- matmul
def _sparse_matmul(a, b):
    """``A @ x`` or ``x @ A`` with A a constant scipy.sparse matrix."""
    x, A, side = (b, a, "left") if sparse.issparse(a) else (a, b, "right")
    if not isinstance(x, Tracked):
        return a @ b
    A = _sparse_constant(x.tape, A, x.dtype)
    shape = matmul_shape(A.shape, x.shape) if side == "left" else matmul_shape(x.shape, A.shape)
    check_entries(shape, "matmul")
    op = SparseMatMul(A, side, x.shape, x.tape.retain_sparse(A))
    out = np.asarray(op.apply(x.value)).reshape(shape)
    name = _constant_text(A, x.tape)
    return record(x.tape, out, f"{name} @ {{0}}" if side == "left" else f"{{0}} @ {name}",
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


@replayable
def matmul(a, b):
    """``a @ b`` under numpy's rules; a constant operand may be a scipy.sparse matrix
    (write ``matmul(A, x)``: scipy's own ``A @ x`` does not hand over to traced arrays)."""
    if sparse.issparse(a) or sparse.issparse(b):
        return _sparse_matmul(a, b)
    tape, (a, b) = traced_operands("matmul", (a, b))
    av, bv = np.asarray(plain(a)), np.asarray(plain(b))
    shape = matmul_shape(av.shape, bv.shape)   # a ValueError naming both shapes
    if tape is None:
        return np.matmul(av, bv)
    check_entries(shape, "matmul")
    out = np.asarray(np.matmul(av, bv))
    parents = []
    for x, other, side in ((a, b, "right"), (b, a, "left")):
        if isinstance(x, Tracked):
            stored = np.asarray(plain(other), dtype=out.dtype)
            # multiplying by a parameter (an input, or a rearrangement of one) costs nothing
            # extra; by an activation, the activation is kept: the outer-product edge
            key = tape.key(other)
            root = tape.derived.get(key, (key,))[0]
            parameter = root in {value_key(v) for v in range(tape.n_inputs)}
            kind = MatMul if parameter else Outer
            parents.append((x, kind(stored, side, x.shape, tape.retain(other),
                                    tape.gathers.get(key))))
    return record(tape, out, template_text("{0} @ {1}", [a, b], tape), parents)


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


@replayable
def sum_(x, axis=None, keepdims=False):
    if not isinstance(x, Tracked):
        return np.sum(x, axis=axis, keepdims=keepdims)
    op = _axes_operator(x, axis, keepdims, scale_by_count=False)
    out = np.asarray(x.value.sum(axis=op.axes, keepdims=keepdims))
    return record(x.tape, out, "sum({0})" if axis is None else f"sum({{0}}, axis={axis})",
                   [(x, op)])


@replayable
def mean(x, axis=None, keepdims=False):
    if not isinstance(x, Tracked):
        return np.mean(x, axis=axis, keepdims=keepdims)
    op = _axes_operator(x, axis, keepdims, scale_by_count=True)
    out = np.asarray(x.value.mean(axis=op.axes, keepdims=keepdims))
    return record(x.tape, out, "mean({0})" if axis is None else f"mean({{0}}, axis={axis})",
                   [(x, op)])


# --------------------------------------------------------- data movement
def moved(x: Tracked, out: np.ndarray, template: str, op):
    """Record ``out``, a rearrangement of ``x`` by the operator ``op`` (which only moves
    entries): the memory count then knows ``out`` can be rebuilt from ``x``."""
    x.tape.note_moved(value_key(x.tape.next_index), x)
    return record(x.tape, out, template, [(x, op)])


@replayable
def reshape(x, shape):
    if not isinstance(x, Tracked):
        return np.reshape(x, shape)
    try:
        out = x.value.reshape(shape)
    except (TypeError, ValueError) as error:
        raise ValueError(f"reshape: cannot reshape shape {x.shape} into {shape!r} "
                         f"({error})") from None
    check_axes(out.shape, "reshape")
    return moved(x, out, f"reshape({{0}}, {out.shape})", Reshape(x.shape, out.shape, x.dtype))


@replayable
def squeeze(x, axis=None):
    if not isinstance(x, Tracked):
        return np.squeeze(x, axis)
    try:  # the shape alone, on a view that allocates nothing
        shape = np.squeeze(np.broadcast_to(np.float32(0), x.shape), axis).shape
    except (TypeError, ValueError) as error:
        raise ValueError(f"squeeze: axis {axis!r} of shape {x.shape}: {error}") from None
    return reshape(x, shape)


@replayable
def transpose(x, axes=None):
    if not isinstance(x, Tracked):
        return np.transpose(x, axes)
    try:
        op = Transpose(x.shape, axes, x.dtype)
    except (TypeError, ValueError) as error:
        raise ValueError(f"transpose: axes {axes!r} for shape {x.shape}: {error}") from None
    out = x.value.transpose(op.axes).copy()  # C order (ascontiguousarray makes 0-d 1-d)
    return moved(x, out, "{0}.T" if axes is None else f"transpose({{0}}, {op.axes})", op)


@replayable
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


@replayable
def getitem(x, key):
    if isinstance(key, Tracked) or (isinstance(key, tuple) and any(
            isinstance(k, Tracked) for k in key)):
        raise TypeError("indexing with a traced array is not supported; index with constants "
                        "(a comparison such as x > 0 gives one)")
    check_entries(x.shape, "indexing")
    try:
        positions = np.arange(x.size).reshape(x.shape)[key]
    except (IndexError, TypeError, ValueError) as error:
        raise ValueError(f"index {key!r} is invalid for shape {x.shape}: {error}") from None
    positions = np.asarray(positions)
    check_axes(positions.shape, "indexing")
    out = np.asarray(x.value.reshape(-1)[positions])
    # a boolean mask (x[x > 0]) is data, not a shape: the backward pass keeps its bits
    masks = [k for k in (key if isinstance(key, tuple) else (key,))
             if isinstance(k, np.ndarray) and k.dtype == np.bool_]
    kept = (Retained(fresh_key("mask"), sum(int(k.size) for k in masks),
                     what="the boolean mask"),) if masks else None
    op = Gather(x.shape, positions, x.dtype, kept)
    x.tape.gathers[value_key(x.tape.next_index)] = (x.value, op)
    return moved(x, out, "{0}[" + _key_text(key) + "]", op)


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
    tape, arrays = traced_operands(what, list(arrays))
    return tape, arrays, [np.asarray(plain(a)) for a in arrays]


@replayable
def concatenate(arrays, axis=0):
    tape, arrays, values = _joined("concatenate", arrays)
    if tape is None:
        return np.concatenate(values, axis=axis)
    if axis is None:  # numpy's meaning: every array flattened, then joined
        return concatenate([reshape(a, (-1,)) for a in arrays], 0)
    check_entries((sum(v.size for v in values),), "concatenate")
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
    return record(tape, out, f"concatenate({slots_text(arrays, tape)}, axis={axis})", parents)


@replayable
def stack(arrays, axis=0):
    tape, arrays, values = _joined("stack", arrays)
    if tape is None:
        return np.stack(values, axis=axis)
    check_entries((sum(v.size for v in values),), "stack")
    try:
        out = np.stack(values, axis=axis)
    except (TypeError, ValueError) as error:
        raise ValueError(f"stack: shapes {[v.shape for v in values]} differ, or axis {axis} "
                         f"is out of range ({error})") from None
    check_axes(out.shape, "stack")
    positions = np.arange(out.size).reshape(out.shape)
    parents = [(a, Embed(out.shape, np.take(positions, i, axis=axis), out.dtype))
               for i, a in enumerate(arrays) if isinstance(a, Tracked)]
    return record(tape, out, f"stack({slots_text(arrays, tape)}, axis={axis})", parents)


# ------------------------------------------------------------- softmax
def _softmax_values(z, axis):
    shifted = z - z.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


@replayable
def softmax(x, axis=-1):
    """``exp(x) / sum(exp(x), axis)``, computed stably; its Jacobian keeps the output."""
    if not isinstance(x, Tracked):
        return _softmax_values(np.asarray(x), axis)
    if x.ndim == 0 or not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"softmax: axis {axis!r} is out of range for shape {x.shape}")
    out = _softmax_values(x.value, axis)
    tape = x.tape
    return record(tape, out, f"softmax({{0}}, axis={axis})",
                   [(x, Softmax(out, axis, tape.retain_value_of_next(out)))])


@replayable
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
    z = np.asarray(plain(logits))
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
    return record(tape, loss, "softmax_cross_entropy({0})",
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


@replayable
def conv2d(x, w, stride: int = 1, padding: int = 0):
    """2-D cross-correlation (deep learning's convolution) of images ``x`` (B, C, H, W)
    with kernels ``w`` (F, C, kh, kw), by im2col: patches gathered into a matrix and
    multiplied by the kernels.  The patch matrix is kept for dW but can be rebuilt
    from ``x``, so :func:`minirad.retained_memory` counts ``x``."""
    stride, padding = _count(stride, "conv2d: stride", 1), _count(padding, "conv2d: padding", 0)
    tape, (x, w) = traced_operands("conv2d", (x, w))
    xv, wv = np.asarray(plain(x)), np.asarray(plain(w))
    if xv.ndim != 4 or wv.ndim != 4 or xv.shape[1] != wv.shape[1]:
        raise ValueError(f"conv2d: needs images (B, C, H, W) and kernels (F, C, kh, kw) with "
                         f"the same C; got shapes {xv.shape} and {wv.shape}")
    f, c, kh, kw = wv.shape
    b, _, h, wd = xv.shape
    check_entries((b, c, h + 2 * padding, wd + 2 * padding), "conv2d: the padded images")
    try:
        im2col = Im2Col(xv.shape, (kh, kw), stride, padding, xv.dtype)
    except ValueError as error:
        raise ValueError(f"conv2d: {error}") from None
    check_entries(im2col.out_shape, "conv2d: the patch matrix")
    ho, wo = im2col.pixels
    patches = im2col.apply(xv)
    if isinstance(x, Tracked):
        tape.gathers[value_key(tape.next_index)] = (xv, im2col)
        cols = moved(x, patches, "im2col({0})", im2col)
    else:
        cols = patches if tape is None else tape.own(patches)
        if tape is not None:
            tape.note_moved(tape.key(cols), xv)
            tape.gathers[tape.key(cols)] = (xv, im2col)
    kernels = reshape(w, (f, c * kh * kw)) if isinstance(w, Tracked) else wv.reshape(f, -1)
    out = matmul(kernels, cols)                                    # (B, F, Ho*Wo)
    return reshape(out, (b, f, ho, wo))


@replayable
def avg_pool2d(x, size: int = 2):
    """Average over non-overlapping ``size`` x ``size`` windows of (B, C, H, W) images."""
    size = _count(size, "avg_pool2d: size", 1)
    xv = np.asarray(plain(x))
    if xv.ndim != 4 or xv.shape[2] % size or xv.shape[3] % size:
        raise ValueError(f"avg_pool2d: needs images (B, C, H, W) with H and W divisible by "
                         f"{size}; got shape {xv.shape}")
    b, c, h, w = xv.shape
    windows = reshape(x, (b, c, h // size, size, w // size, size))
    return mean(windows, axis=(3, 5))


# --------------------------------------------------------------- record
def _slot(i: int) -> str:
    return "{" + str(i) + "}"


def slots_text(xs, tape: Tape | None) -> str:
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


def template_text(pattern: str, xs, tape: Tape) -> str:
    """``pattern`` over the operands: traced ones as predecessor slots (``a * a`` reads
    ``{0} * {0}``), constants written in."""
    slots, seen = [], {}
    for x in xs:
        if isinstance(x, Tracked):
            slots.append(_slot(seen.setdefault(x.index, len(seen))))
        else:
            slots.append(_constant_text(x, tape).replace("{", "{{").replace("}", "}}"))
    return pattern.format(*slots)


def record(tape: Tape, out, template: str, parents) -> Tracked:
    """The vertex of ``out`` on ``tape``, with one edge per (traced operand, Jacobian
    block) in ``parents`` (a plain array when there are none: a constant); ``template``
    shows the operation over ``{0}``, ``{1}``, ... (:func:`template_text` writes one)."""
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


def refuse_options(what: str, **options) -> None:
    """A ``TypeError`` naming the options of a numpy call that a rule does not take
    (those given other than None): ``out=``, ``where=``, ``initial=``, ..."""
    given = [k for k, v in options.items() if v is not None]
    if given:
        raise TypeError(f"{what} with {', '.join(f'{k}=' for k in given)}: not supported on "
                        f"traced arrays; call it without")


def as_float_dtype(x, dtype, what: str):
    """``x`` in the floating ``dtype`` a numpy call asked for (``np.sum(x, dtype=...)``),
    or ``x`` itself for None."""
    if dtype is None:
        return x
    if np.dtype(dtype).kind != "f":
        raise TypeError(f"{what}(dtype={np.dtype(dtype)}) of a traced array would drop its "
                        f"derivative; ask for a floating dtype")
    return astype(x, dtype)


def _values_only(function):
    """A numpy function that reads values only (indices, shapes, comparisons): it runs
    on the plain values, as a comparison does."""
    def on_values(*args, **kwargs):
        return read(function, *args, **kwargs)
    on_values.reads = True
    return on_values


def _reduction(function):
    """``np.sum`` or ``np.mean``: axes and keepdims, a floating dtype, nothing else."""
    def rule(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None,
             initial=None):
        refuse_options(f"np.{function.__name__.rstrip('_')}", out=out, where=where,
                       initial=initial)
        return as_float_dtype(function(a, axis, keepdims), dtype, function.__name__)
    return rule


def _clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    refuse_options("np.clip", out=out)
    return clip(a, a_min if min is None else min, a_max if max is None else max)


def _round(a, decimals=0, out=None):
    """``np.round``: a step in each entry, derivative 0 (see the Kinks of
    :mod:`minirad.tracing.ops`); to whole numbers it is the table's ``rint``."""
    refuse_options("np.round", out=out)
    if decimals == 0 or not isinstance(a, Tracked):
        return elementwise(OPS["rint"], a) if decimals == 0 else np.round(a, decimals)
    result = np.round(a.value, decimals)
    return record(a.tape, result, f"round({{0}}, {decimals})",
                  [(a, Diagonal(np.zeros((), a.dtype), a.shape))])


def _reshape_rule(a, shape=None, order="C", *, newshape=None, copy=None):
    _c_order("reshape", order)
    return reshape(a, shape if shape is not None else newshape)


def _ravel_rule(a, order="C"):
    _c_order("ravel", order)
    return reshape(a, -1)


def _joined_rule(function):
    """``np.concatenate`` or ``np.stack``: the arrays and an axis."""
    def rule(arrays, axis=0, out=None, *, dtype=None, casting=None):
        refuse_options(f"np.{function.__name__}", out=out, dtype=dtype, casting=casting)
        return function(arrays, axis)
    return rule


# numpy ufuncs that are array rules rather than entries of the table: their pieces are
_UFUNC_RULES = {
    "matmul": matmul,
    "square": lambda x: elementwise(_POW, x, 2),
    # the fractional and whole parts, each with the sign of x
    "modf": lambda x: (elementwise(OPS["fmod"], x, 1.0), elementwise(OPS["trunc"], x)),
    "divmod": lambda a, b: (elementwise(OPS["floor_divide"], a, b),
                            elementwise(OPS["remainder"], a, b)),
}

# numpy functions, by function_key: the rules of this module; the others register theirs
# (minirad.tracing.reductions, .contractions, .linalg, .rearrange, minirad.implicit.solves)
_FUNCTIONS = {
    "sum": _reduction(sum_),
    "mean": _reduction(mean),
    "reshape": _reshape_rule,
    "ravel": _ravel_rule,
    "squeeze": lambda a, axis=None: squeeze(a, axis),
    "transpose": lambda a, axes=None: transpose(a, axes),
    "matrix_transpose": lambda x: swapaxes(x, -1, -2),
    "swapaxes": swapaxes,
    "concatenate": _joined_rule(concatenate),
    "stack": _joined_rule(stack),
    "where": where,
    "clip": _clip,
    "copy": lambda a, order="K", subok=False: a,
    "round": _round,
    "around": _round,
    "fix": lambda x, out=None: elementwise(OPS["trunc"], x),
    "real": lambda val: val,
    **{f: _values_only(getattr(np, f)) for f in (
        "shape", "ndim", "size", "argmax", "argmin", "argsort", "argwhere", "nonzero",
        "flatnonzero", "count_nonzero", "isclose", "allclose", "array_equal", "result_type",
        "all", "any", "searchsorted", "iscomplexobj", "isrealobj")},
}

# the ndarray methods that are numpy functions of the array: x.max(axis=0) is
# np.max(x, axis=0), whatever rule np.max has (looked up when called)
_METHODS = ("sum", "mean", "max", "min", "prod", "var", "std", "cumsum", "cumprod", "ravel",
            "squeeze", "swapaxes", "dot", "clip", "trace", "diagonal", "repeat", "take",
            "round", "argmax", "argmin", "argsort", "nonzero", "all", "any", "searchsorted")


def _method(function: str):
    def method(self, *args, **kwargs):
        rule = _FUNCTIONS[function]
        if getattr(rule, "reads", False):
            return rule(self, *args, **kwargs)
        return call(rule, (self, *args), kwargs)
    method.__name__ = method.__qualname__ = function
    method.__doc__ = f"``np.{function}(x, ...)``, with the same arguments."
    return method


for _name in _METHODS:
    setattr(Tracked, _name, _method(_name))


def function_key(function) -> str:
    """numpy's name for ``function`` below the ``numpy`` namespace: ``"sum"`` for
    ``np.sum``, ``"linalg.norm"`` for ``np.linalg.norm`` (a name given as text is kept).

    >>> function_key(np.linalg.norm), function_key(np.max), function_key("linalg.inv")
    ('linalg.norm', 'max', 'linalg.inv')
    """
    if isinstance(function, str):
        return function
    module = getattr(function, "__module__", None) or ""
    parts = [p for p in module.split(".")[1:] if not p.startswith("_")]
    return ".".join([*parts, function.__name__])


def register(function, rule):
    """Give ``function`` (a numpy function or ufunc, as ``np.sinc`` or
    ``np.linalg.pinv``) a rule for traced arrays; returns the rule it had, if any
    (``rule=None`` removes the rule, so ``register(f, previous)`` puts it back).

    The rule is called with numpy's arguments whenever one of them is a traced
    array.  It is one of:

    * an :class:`~minirad.tracing.ops.Op`, an elementwise operation written as
      the entries of the operation table are (its value and partials, for
      arrays): the tracer records it as it records ``np.sin``;
    * a function returning the result, either computed with operations the
      tracer supports (their derivatives come with them), or recorded as one new
      vertex by :func:`record` with a Jacobian block (an operator of
      :mod:`minirad.graph.operators`) per traced operand.

    >>> import minirad
    >>> from minirad.tracing.ops import Op
    >>> def slope(x, y):   # d sinc(x)/dx = (cos(pi x) - sinc(x)) / x, 0 at x = 0
    ...     safe = np.where(x == 0, 1.0, x)
    ...     return np.where(x == 0, 0.0, (np.cos(np.pi * x) - y) / safe)
    >>> sinc = Op("sinc", "sinc({0})", np.sinc, (slope,), keeps=("x y",))
    >>> previous = register(np.sinc, sinc)
    >>> g = minirad.trace(lambda x: np.sinc(x).sum(), np.array([0.0, 0.5]))
    >>> minirad.jacobian(g).round(4)                # 0, and (0 - 2/pi) / 0.5 = -4/pi
    array([[ 0.    , -1.2732]])
    >>> register(np.sinc, previous) is sinc         # as it was: no rule
    True

    :mod:`minirad.implicit.solves` registers ``np.linalg.solve`` this way, and
    :mod:`minirad.tracing.reductions`, :mod:`~minirad.tracing.contractions`,
    :mod:`~minirad.tracing.linalg` and :mod:`~minirad.tracing.rearrange` register
    the rules of their numpy functions.
    """
    if not (isinstance(function, (str, np.ufunc)) or callable(function)):
        raise TypeError(f"register takes a numpy function or ufunc, not "
                        f"{type(function).__name__}")
    if rule is not None and not (isinstance(rule, Op) or callable(rule)):
        raise TypeError(f"a rule is an Op (an elementwise entry) or a function, not "
                        f"{type(rule).__name__}")
    if isinstance(rule, Op):
        if rule.arity not in (1, 2):
            raise ValueError(f"an elementwise rule has one or two operands, not {rule.arity}")
        op = rule
        rule = lambda *operands: elementwise(op, *operands)   # noqa: E731
        rule.op = op
    rules, key = ((_UFUNC_RULES, function.__name__) if isinstance(function, np.ufunc)
                  else (_FUNCTIONS, function_key(function)))
    previous = rules.pop(key, None) if rule is None else rules.get(key)
    if rule is not None:
        rules[key] = rule
    return getattr(previous, "op", previous)


def register_rules(rules: dict) -> None:
    """:func:`register` each rule under its numpy name (``"linalg.norm"`` for
    ``np.linalg.norm``), leaving out the functions this numpy does not have
    (``np.matvec`` came with numpy 2.2)."""
    for path, rule in rules.items():
        function = np
        for part in path.split("."):
            function = getattr(function, part, None)
        if function is not None:
            register(function, rule)


def supported() -> str:
    """What traced arrays support, read off the table and the registered rules
    (``docs/numpy_support.md`` says it with each rule's edges and memory)."""
    table = sorted({*UFUNCS, *_UFUNC_RULES, *IDENTITIES})
    methods = sorted({*_METHODS, "reshape", "transpose", "T", "mT", "flatten", "copy",
                      "astype", "conj"})
    return (f"+ - * / ** @ and comparisons; numpy ufuncs (and minirad.ops): "
            f"{', '.join(table)}; reading values only: {', '.join(COMPARISONS)}; numpy "
            f"functions: {', '.join(sorted(_FUNCTIONS))}; methods: {', '.join(methods)}; "
            f"indexing, slicing and boolean masks; in minirad.tracing.arrays: softmax, "
            f"softmax_cross_entropy, conv2d, avg_pool2d, matmul by a scipy.sparse matrix")


# ---------------------------------------------------------------- trace
def trace_on_arrays(f, args, wrt, names) -> LCG:
    """Run ``f(*args)`` with the arguments at positions ``wrt`` traced (the rest passed
    as they are) and return its LCG; ``names`` names every argument.  What
    :func:`minirad.trace` calls when an argument it differentiates is an array.  The
    graph keeps what :func:`minirad.tracing.replay.replay` needs to run it again."""
    tape = Tape()
    arguments = list(args)
    for position in wrt:
        arguments[position] = input_vertex(tape, args[position], position, names[position])
    tape.n_inputs = len(tape.values)
    for position, arg in enumerate(args):
        if position not in wrt:
            tape.constant_names[id(arg)] = (names[position], arg)
            tape.recording.arguments[id(arg)] = (position, arg)
    result = f(*arguments)
    several = isinstance(result, (tuple, list))
    results = list(result) if several else [result]
    for position, r in enumerate(results):
        if not isinstance(r, Tracked):
            raise TypeError(f"output {position} is a {type(r).__name__}, not a traced array "
                            f"computed from the inputs")
        if r.tape is not tape:
            raise ValueError(f"output {position} was not computed from this trace's inputs")
    kept = recorded(tape, [a.value if isinstance(a, Tracked) else a for a in arguments], wrt, names,
                    [r.index for r in results], several)
    g = finish(tape, results, [names[p] for p in wrt], several)
    g.memo("tracing.recorded", lambda: kept)
    return g


def input_vertex(tape: Tape, arg, position: int, label: str) -> Tracked:
    """The input vertex of the argument ``arg`` (an array or a number), checked."""
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
    check_axes(array.shape, f"argument {position} ({label})")
    check_entries(array.shape, f"argument {position} ({label})")
    array = np.array(array, dtype=array.dtype if array.dtype.kind == "f" else np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"argument {position} ({label}) has a non-finite entry; trace "
                         f"needs finite inputs")
    return tape.new_vertex(array, "input", [], name=label)


def finish(tape: Tape, results: list, input_names: list, several: bool) -> LCG:
    """The LCG of a finished trace whose program returned the traced ``results``: an
    output that is an input, is used, or is returned twice gets an identity vertex."""
    returned: dict[int, int] = {}
    for r in results:
        returned[r.index] = returned.get(r.index, 0) + 1
    outputs = []
    for r in results:
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
    # the tape guarantees what the constructor checks (see LCG.from_trusted_blocks)
    return LCG.from_trusted_blocks(vertex_names, tape.sources, tape.targets, tape.operators,
                                   range(tape.n_inputs), outputs, tape.values, tape.ops)
