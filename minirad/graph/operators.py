"""Linear operators: the edge labels of an LCG of arrays.

In an LCG of arrays (RAD paper Sec. 3.2, Fig. 3) a vertex holds an array and
the edge ``u -> v`` holds the local Jacobian dv/du as a *linear operator*
from arrays of ``u``'s shape to arrays of ``v``'s shape.  An operator is
never stored as a matrix unless it has to be: a ReLU keeps a bit mask, an
elementwise function a diagonal, ``x @ W`` keeps ``W``.  Every operator knows

* ``out_shape`` and ``in_shape``;
* ``apply(x)`` (the JVP: ``J x``) and ``apply_transpose(y)`` (the VJP:
  ``J^T y``); both accept a stack of arrays along extra *leading* axes;
* ``to_dense()``: the matrix of shape ``(out_size, in_size)``, refused above
  :data:`DENSE_LIMIT` entries;
* ``flops``: multiply-adds to apply it once (data movement is free);
* ``retained``: what the backward pass must keep to apply it, as
  :class:`Retained` records (``retained_bytes`` is their total).  Two edges
  naming the same ``key`` share one copy; :func:`minirad.retained_memory`
  does that accounting over a whole graph.

:data:`OPERATORS` is the label algebra over operators: ``multiply(outer,
inner)`` is the composition ``outer ∘ inner`` (with an array on one side it
applies the operator: a JVP or VJP step), ``add`` is accumulation.

>>> import numpy as np
>>> d = Diagonal(np.array([1.0, 2.0, 3.0]))
>>> OPERATORS.multiply(d, d).kind           # two diagonals make a diagonal
'diagonal'
>>> m = MatMul(np.arange(6.0).reshape(2, 3), side="left", variable_shape=(3,))
>>> j = OPERATORS.multiply(m, d)            # m ∘ d: no structure survives, and it is
>>> j.kind, OPERATORS.multiply_cost(m, d)  # small, so it becomes a dense block
('dense', 6)
>>> j.to_dense()
array([[ 0.,  2.,  6.],
       [ 3.,  8., 15.]])
>>> OPERATORS.multiply(np.ones(2), j)      # a VJP: ones @ J
array([ 3., 10., 21.])
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sparse

from .labels import Algebra

__all__ = ["DENSE_LIMIT", "FROM_SHAPES", "OPERATORS", "Added", "Broadcast", "Composed",
           "CumSum", "Dense", "Diagonal", "Embed", "Gather", "Identity", "Im2Col",
           "InjectedMatMul", "Mask", "MatMul", "Operator", "Outer", "ProjectedMatMul",
           "Projection", "Reshape", "Retained", "Softmax", "SparseMatMul", "SumAxes",
           "Transpose", "compose"]

#: the largest matrix (entries) that ``to_dense`` will build
DENSE_LIMIT = 4_000_000

_keys = itertools.count()


def fresh_key(what: str = "array") -> str:
    """A key no other retained array has (for arrays no one else shares)."""
    return f"{what}#{next(_keys)}"


@dataclass(frozen=True)
class Retained:
    """One array the backward pass keeps for an operator.

    ``key`` names the array: edges that keep the same key share one copy.
    ``nbits`` is its size (``8 * nbytes``; a bit mask has one bit per entry).
    ``recompute_from``, when set, is the key of another array this one can be
    rebuilt from (a ReLU mask from the ReLU's output, an im2col matrix from
    the image), of ``source_bits`` bits: if that array is kept anyway, this
    one costs nothing, and if it is smaller it is what gets kept.
    """

    key: str
    nbits: int
    recompute_from: str | None = None
    source_bits: int = 0
    what: str = ""

    @property
    def nbytes(self) -> float:
        return self.nbits / 8


def _shape(shape, what: str) -> tuple[int, ...]:
    try:  # a shape seen before: the tracer makes thousands of operators of a few shapes
        return _SHAPES[shape]
    except (KeyError, TypeError):
        pass
    try:
        checked = tuple(int(s) for s in shape)
    except TypeError:
        raise TypeError(f"{what} must be a tuple of ints, not {shape!r}") from None
    if any(s < 0 for s in checked):
        raise ValueError(f"{what} {checked} has a negative length")
    if type(shape) is tuple and len(_SHAPES) < 4096 and all(type(s) is int for s in shape):
        _SHAPES[shape] = checked
    return checked


_SHAPES: dict[tuple, tuple[int, ...]] = {}   # the shapes _shape has checked, as themselves


def _array_bits(a: np.ndarray) -> int:
    return int(a.size) * a.dtype.itemsize * 8


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``g`` down to ``shape`` (undo numpy broadcasting), keeping any extra leading axes
    that ``g`` has beyond what broadcasting added."""
    extra = g.ndim - len(shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, (s, t) in enumerate(zip(shape, g.shape)) if s == 1 and t != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


class Operator:
    """A linear map from arrays of ``in_shape`` to arrays of ``out_shape``.

    Subclasses implement ``_apply(xs)`` and ``_transpose(ys)`` on stacks
    (a leading axis of length n; the result has n entries of the right size,
    possibly in a different shape), ``flops`` and, for saving, ``spec()``.
    """

    kind = "operator"

    def __init__(self, out_shape, in_shape, dtype=np.float64, retained=()):
        self.out_shape = _shape(out_shape, "out_shape")
        self.in_shape = _shape(in_shape, "in_shape")
        self.dtype = np.dtype(dtype)
        self._retained = retained if callable(retained) else tuple(retained)

    @property
    def retained(self) -> tuple:
        """What the backward pass must keep to apply this operator (:class:`Retained`
        records).  A traced graph's blocks work theirs out when first asked (memory
        accounting asks; a sweep does not)."""
        if callable(self._retained):
            self._retained = tuple(self._retained())
        return self._retained

    # ----------------------------------------------------------- sizes
    @property
    def out_size(self) -> int:
        return math.prod(self.out_shape)

    @property
    def in_size(self) -> int:
        return math.prod(self.in_shape)

    @property
    def shape(self) -> tuple[int, int]:
        """The shape of the matrix: (out_size, in_size)."""
        return self.out_size, self.in_size

    @property
    def retained_bytes(self) -> float:
        """Bytes this operator alone keeps for the backward pass (bits / 8)."""
        return sum(r.nbits for r in self.retained) / 8

    @property
    def flops(self) -> int:
        raise NotImplementedError

    # ---------------------------------------------------------- applying
    def _stack(self, x, shape: tuple[int, ...], what: str):
        x = np.asarray(x)
        k = len(shape)
        if x.ndim < k or (k and x.shape[x.ndim - k:] != shape):
            raise ValueError(f"{what} of {self!r} takes arrays of shape {shape} (optionally "
                             f"stacked along leading axes), not shape {x.shape}")
        lead = x.shape[:x.ndim - k]
        return x.reshape((math.prod(lead),) + shape), lead

    def apply(self, x) -> np.ndarray:
        """``J x`` (a JVP); ``x`` has shape ``in_shape``, or a stack of those."""
        xs, lead = self._stack(x, self.in_shape, "apply")
        return np.reshape(self._apply(xs), lead + self.out_shape)

    def apply_transpose(self, y) -> np.ndarray:
        """``J^T y`` (a VJP); ``y`` has shape ``out_shape``, or a stack of those."""
        ys, lead = self._stack(y, self.out_shape, "apply_transpose")
        return np.reshape(self._transpose(ys), lead + self.in_shape)

    def to_dense(self, limit: int = DENSE_LIMIT) -> np.ndarray:
        """The matrix (out_size, in_size); refused above ``limit`` entries."""
        entries = self.out_size * self.in_size
        if entries > limit:
            raise ValueError(f"{self!r} is {self.out_size} x {self.in_size} = {entries:,} "
                             f"entries as a dense matrix, above the limit of {limit:,}; apply "
                             f"it to vectors instead, or pass a larger limit")
        eye = np.eye(self.in_size, dtype=self.dtype).reshape((self.in_size,) + self.in_shape)
        return np.ascontiguousarray(
            np.reshape(self._apply(eye), (self.in_size, self.out_size)).T)

    def _apply(self, xs):
        raise NotImplementedError

    def _transpose(self, ys):
        raise NotImplementedError

    # ------------------------------------------------------------ saving
    def spec(self) -> tuple[dict, dict]:
        """JSON-safe parameters and the arrays that rebuild this operator."""
        raise NotImplementedError(f"{type(self).__name__} cannot be saved")

    def label(self) -> str:
        """A short name for pictures and listings."""
        return self.kind

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.out_shape} <- {self.in_shape})"


def retained_spec(op: Operator) -> list:
    """``op.retained`` as the lists a saved file holds (see :mod:`minirad.graph.files`)."""
    return [[r.key, r.nbits, r.recompute_from, r.source_bits, r.what] for r in op.retained]


#: the ``recompute_from`` of an array rebuilt from the shapes alone: the index array of a
#: :class:`Gather` or an :class:`Embed` (:func:`minirad.graph.memory.retained_memory` charges
#: nothing for it and reports it apart, as ``Memory.from_shapes``)
FROM_SHAPES = "shapes"


def index_record(positions: np.ndarray, what: str) -> Retained:
    """The :class:`Retained` record of an index array: its bytes, rebuilt from the shapes
    (:data:`FROM_SHAPES`), under a key made from its contents, so that equal index
    arrays (the same slice taken twice) count once.

    >>> record = index_record(np.arange(3), "the positions of x[1:4]")
    >>> record.nbits, record.recompute_from
    (192, 'shapes')
    """
    positions = np.ascontiguousarray(positions)
    digest = hashlib.blake2b(positions.tobytes() + str(positions.shape).encode(),
                             digest_size=8).hexdigest()
    return Retained(f"index:{digest}", _array_bits(positions), recompute_from=FROM_SHAPES,
                    what=what)


def index_bits(d: int) -> int:
    """Bits of the smallest unsigned integer that numbers ``d`` entries (what a kept
    sample index costs).

    >>> index_bits(256), index_bits(257)
    (8, 16)
    """
    return next(b for b in (8, 16, 32, 64) if d <= 2 ** b)


class Identity(Operator):
    """dv/du = I: a copy, or the unit partial of ``a + b``."""

    kind = "identity"

    def __init__(self, shape, dtype=np.float64):
        super().__init__(shape, shape, dtype)

    flops = 0

    def _apply(self, xs):
        return xs

    _transpose = _apply

    def spec(self):
        return {"shape": list(self.in_shape), "dtype": self.dtype.name}, {}


class Diagonal(Operator):
    """Elementwise scaling ``x -> d * x`` (d broadcasts to ``shape``): the
    Jacobian of ``exp``, ``tanh``, ``a * b`` with respect to one factor, ...

    A scalar ``d`` is a constant factor and retains nothing.

    >>> Diagonal(np.array([2.0, 3.0])).apply(np.array([1.0, 1.0]))
    array([2., 3.])
    """

    kind = "diagonal"

    def __init__(self, d, shape=None, retained=None):
        d = np.asarray(d)
        if d.dtype.kind != "f":
            d = d.astype(np.float64)
        shape = d.shape if shape is None else _shape(shape, "shape")
        try:
            if d.shape != shape and np.broadcast_shapes(d.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"a diagonal of shape {d.shape} does not broadcast to the "
                             f"operator shape {shape}") from None
        if retained is None:
            retained = () if d.size == 1 else (Retained(fresh_key("diag"), _array_bits(d)),)
        super().__init__(shape, shape, d.dtype, retained)
        self.d = d

    @property
    def flops(self):
        return self.in_size

    def _apply(self, xs):
        return xs * self.d

    _transpose = _apply

    def spec(self):
        return ({"shape": list(self.in_shape), "retained": retained_spec(self)},
                {"d": self.d})

    def label(self):
        return "scale" if self.d.size == 1 else "diag"


class Mask(Operator):
    """Keep the entries where ``mask`` is true, zero the rest: the ReLU Jacobian,
    retained as one bit per entry.

    >>> Mask(np.array([True, False])).retained_bytes
    0.25
    """

    kind = "mask"

    def __init__(self, mask, dtype=np.float64, retained=None):
        mask = np.asarray(mask)
        if mask.dtype != np.bool_:
            raise TypeError(f"a mask must be a boolean array, not {mask.dtype}")
        if retained is None:
            retained = (Retained(fresh_key("mask"), int(mask.size)),)
        super().__init__(mask.shape, mask.shape, dtype, retained)
        self.mask = mask

    @property
    def flops(self):
        return self.in_size

    def _apply(self, xs):
        return np.where(self.mask, xs, xs.dtype.type(0))

    _transpose = _apply

    def spec(self):
        return ({"dtype": self.dtype.name, "retained": retained_spec(self)},
                {"mask": self.mask})


class Dense(Operator):
    """An explicit matrix (out_size x in_size): small blocks, products, a loss gradient."""

    kind = "dense"

    def __init__(self, matrix, out_shape, in_shape, retained=None):
        matrix = np.asarray(matrix)
        if not np.issubdtype(matrix.dtype, np.floating):
            matrix = matrix.astype(np.float64)
        out_shape, in_shape = _shape(out_shape, "out_shape"), _shape(in_shape, "in_shape")
        if matrix.shape != (math.prod(out_shape), math.prod(in_shape)):
            raise ValueError(f"a dense operator {out_shape} <- {in_shape} needs a matrix of "
                             f"shape {(math.prod(out_shape), math.prod(in_shape))}, not "
                             f"{matrix.shape}")
        if retained is None:
            retained = (Retained(fresh_key("dense"), _array_bits(matrix)),)
        super().__init__(out_shape, in_shape, matrix.dtype, retained)
        self.matrix = matrix

    @property
    def flops(self):
        return self.out_size * self.in_size

    def _apply(self, xs):
        return xs.reshape(len(xs), -1) @ self.matrix.T

    def _transpose(self, ys):
        return ys.reshape(len(ys), -1) @ self.matrix

    def to_dense(self, limit: int = DENSE_LIMIT):
        return self.matrix.copy()

    def spec(self):
        return ({"out_shape": list(self.out_shape), "in_shape": list(self.in_shape),
                 "retained": retained_spec(self)}, {"matrix": self.matrix})


class Softmax(Operator):
    """The Jacobian of ``p = softmax(x, axis)``: ``v -> p * (v - sum(p * v, axis))``.
    Dense per row but stored as ``p`` alone (it is symmetric)."""

    kind = "softmax"

    def __init__(self, p, axis: int = -1, retained=None):
        p = np.asarray(p)
        if p.ndim == 0:
            raise ValueError("softmax needs an array with at least one axis")
        axis = int(axis)
        if not -p.ndim <= axis < p.ndim:
            raise ValueError(f"softmax axis {axis} is out of range for shape {p.shape}")
        if retained is None:
            retained = (Retained(fresh_key("softmax"), _array_bits(p)),)
        super().__init__(p.shape, p.shape, p.dtype, retained)
        self.p, self.axis = p, axis % p.ndim

    @property
    def flops(self):
        return 3 * self.in_size

    def _apply(self, xs):
        pv = self.p * xs
        return pv - self.p * pv.sum(axis=self.axis + 1, keepdims=True)

    _transpose = _apply

    def spec(self):
        return {"axis": self.axis, "retained": retained_spec(self)}, {"p": self.p}


def matmul_shape(a: tuple, b: tuple) -> tuple[int, ...]:
    """The shape of ``a @ b`` under numpy's matmul rules, or a ValueError naming both.

    >>> matmul_shape((150, 784), (784, 300))
    (150, 300)
    >>> matmul_shape((3,), (4, 2))
    Traceback (most recent call last):
    ...
    ValueError: matmul: shapes (3,) and (4, 2) do not align (3 != 4)
    """
    a, b = tuple(a), tuple(b)
    if not a or not b:
        raise ValueError(f"matmul: shapes {a} and {b}: operands must have at least one axis "
                         f"(use * for scalars)")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: shapes {a} and {b} do not align ({a2[-1]} != {b2[-2]})")
    try:
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        raise ValueError(f"matmul: shapes {a} and {b}: batch axes {a2[:-2]} and {b2[:-2]} do "
                         f"not broadcast") from None
    return tuple(batch) + ((a2[-2],) if len(a) > 1 else ()) + ((b2[-1],) if len(b) > 1 else ())


class MatMul(Operator):
    """Multiplication by a stored array under numpy's ``@`` rules (vectors,
    matrices, batches with broadcasting).

    ``side="left"``: ``x -> A @ x`` (the edge from ``x`` in ``A @ x``);
    ``side="right"``: ``x -> x @ A``.  When ``A`` is a parameter the program
    keeps anyway this costs no extra memory; when it is an activation use
    :class:`Outer`, whose retained array is the memory bottleneck of the paper.

    >>> A = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> MatMul(A, side="right", variable_shape=(2,)).apply(np.array([1.0, 0.0]))
    array([1., 2.])
    """

    kind = "matmul"

    def __init__(self, stored, side: str, variable_shape, retained=None, gathered=None):
        stored = np.asarray(stored)
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' (x -> A @ x) or 'right' (x -> x @ A), not "
                             f"{side!r}")
        variable_shape = _shape(variable_shape, "variable_shape")
        if side == "left":
            out = matmul_shape(stored.shape, variable_shape)
            a, b = stored.shape, variable_shape
        else:
            out = matmul_shape(variable_shape, stored.shape)
            a, b = variable_shape, stored.shape
        self._a2 = (1,) + a if len(a) == 1 else a
        self._b2 = b + (1,) if len(b) == 1 else b
        self._batch = np.broadcast_shapes(self._a2[:-2], self._b2[:-2])
        if retained is None:
            retained = (Retained(fresh_key(self.kind), _array_bits(stored)),)
        super().__init__(out, variable_shape, stored.dtype, retained)
        self.stored, self.side = stored, side
        if gathered is not None:
            gathered = _gathering(stored, *gathered)
        # (source, gather): stored = gather.apply(source), a rearrangement of a smaller
        # array, as im2col patches are of an image; injection then samples the source
        self.gathered = gathered
        # the stored operand as a matrix (or stack of matrices), promoted like numpy does
        self._s2 = stored.reshape(self._a2 if side == "left" else self._b2)
        self._inner = self._a2[-1]

    @property
    def flops(self):
        return self.out_size * self._inner

    def _variable(self, xs):
        mine = self._b2 if self.side == "left" else self._a2
        other = self._a2 if self.side == "left" else self._b2
        pad = max(0, len(other) - len(mine))
        return (len(xs),) + (1,) * pad + mine

    def _plain(self, n: int) -> bool:
        # one vector through a plain matrix product: numpy's 2-D matmul (straight to BLAS)
        return n == 1 and self._batch == () and self._s2.ndim == 2

    def _apply(self, xs):
        if self._plain(len(xs)):
            x = xs.reshape(self._b2 if self.side == "left" else self._a2)
            return (self._s2 @ x if self.side == "left" else x @ self._s2)[None]
        x = xs.reshape(self._variable(xs))
        return np.matmul(self._s2, x) if self.side == "left" else np.matmul(x, self._s2)

    def _transpose(self, ys):
        if self._plain(len(ys)):
            y = ys.reshape(self._a2[-2], self._b2[-1])
            return (self._s2.T @ y if self.side == "left" else y @ self._s2.T)[None]
        y = ys.reshape((len(ys),) + self._batch + (self._a2[-2], self._b2[-1]))
        st = np.swapaxes(self._s2, -1, -2)
        g = np.matmul(st, y) if self.side == "left" else np.matmul(y, st)
        return _sum_to(g, self._variable(ys))

    def spec(self):
        # the gathering operator of ``gathered`` is written by minirad.graph.files beside this
        arrays = {"stored": self.stored}
        if self.gathered is not None:
            arrays.update(source=self.gathered[0])
        return ({"side": self.side, "variable_shape": list(self.in_shape),
                 "retained": retained_spec(self)}, arrays)

    def label(self):
        return "matmul"


def _gathering(stored: np.ndarray, source, gather):
    """``(source, gather)`` checked: ``gather`` an operator from the source's shape to the
    stored shape (:class:`Im2Col`, :class:`Gather`), or integer positions for a Gather."""
    source = np.asarray(source)
    if not isinstance(gather, Operator):
        positions = np.asarray(gather)
        if positions.shape != stored.shape or not np.issubdtype(positions.dtype, np.integer):
            raise ValueError(f"gathered positions must be integers of the stored shape "
                             f"{stored.shape}, not {positions.dtype} {positions.shape}")
        gather = Gather(source.shape, positions, source.dtype)
    if gather.in_shape != source.shape or gather.out_shape != stored.shape:
        raise ValueError(f"the gathering {gather!r} must map the source's shape {source.shape} "
                         f"to the stored shape {stored.shape}")
    return source, gather


class SparseMatMul(Operator):
    """Multiplication by a constant ``scipy.sparse`` matrix A (2-D, m x n):
    ``x -> A @ x`` (``side="left"``, x of shape (n,) or (n, k)) or ``x -> x @ A``
    (``side="right"``, x of shape (n_rows, m) or (m,)): a discretized differential
    operator, a graph Laplacian.  Costs nnz(A) multiply-adds per column.

    >>> import scipy.sparse as sp
    >>> A = sp.csr_array(np.array([[2.0, 0.0], [0.0, 3.0]]))
    >>> SparseMatMul(A, "left", (2,)).apply(np.array([1.0, 1.0]))
    array([2., 3.])
    """

    kind = "sparse"

    def __init__(self, A, side: str, variable_shape, retained=None):
        if not sparse.issparse(A) or A.ndim != 2:
            raise TypeError(f"SparseMatMul needs a 2-D scipy.sparse matrix, not "
                            f"{type(A).__name__}")
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' (x -> A @ x) or 'right' (x -> x @ A), not "
                             f"{side!r}")
        A = sparse.csr_array(A)
        variable_shape = _shape(variable_shape, "variable_shape")
        if len(variable_shape) not in (1, 2):
            raise ValueError(f"a sparse matrix multiplies vectors or matrices, not arrays of "
                             f"shape {variable_shape}")
        if side == "left":
            out = matmul_shape(A.shape, variable_shape)
        else:
            out = matmul_shape(variable_shape, A.shape)
        if retained is None:
            bits = (A.data.nbytes + A.indices.nbytes + A.indptr.nbytes) * 8
            retained = (Retained(fresh_key("sparse"), bits),)
        super().__init__(out, variable_shape, A.dtype, retained)
        self.A, self.side = A, side

    @property
    def flops(self):
        columns = self.in_size // (self.A.shape[1] if self.side == "left" else self.A.shape[0])
        return int(self.A.nnz) * columns

    def _columns(self, xs, rows: int):
        """The stack as a matrix whose columns are vectors of length ``rows``."""
        n = len(xs)
        if self.side == "left":   # x (rows,) or (rows, k): columns along axis 1
            x = xs.reshape(n, rows, -1)
            return x.transpose(1, 0, 2).reshape(rows, -1), x.shape[2]
        x = xs.reshape(n, -1, rows)   # x (r, rows) or (rows,): vectors along the last axis
        return x.reshape(-1, rows).T, x.shape[1]

    def _product(self, M, xs, rows):
        n = len(xs)
        cols, k = self._columns(xs, rows)
        y = np.asarray(M @ cols)
        if self.side == "left":
            return y.reshape(-1, n, k).transpose(1, 0, 2)
        return y.T.reshape(n, k, -1)

    def _apply(self, xs):
        if self.side == "left":
            return self._product(self.A, xs, self.A.shape[1])
        return self._product(self.A.T, xs, self.A.shape[0])

    def _transpose(self, ys):
        if self.side == "left":
            return self._product(self.A.T, ys, self.A.shape[0])
        return self._product(self.A, ys, self.A.shape[1])

    def spec(self):
        return ({"side": self.side, "variable_shape": list(self.in_shape),
                 "shape": list(self.A.shape), "retained": retained_spec(self)},
                {"data": self.A.data, "indices": self.A.indices, "indptr": self.A.indptr})


class Outer(MatMul):
    """Multiplication by a stored *activation*: the edge from ``W`` in ``x @ W``
    (``dW -> x @ dW``).  Its matrix is an outer-product structure and its
    retained ``x`` is what random matrix injection samples (paper Sec. 4.2)."""

    kind = "outer"

    def label(self):
        return "outer"


class SumAxes(Operator):
    """``x -> scale * x.sum(axes, keepdims)``: ``sum`` and (with scale 1/n) ``mean``."""

    kind = "sum"

    def __init__(self, in_shape, axes=None, keepdims: bool = False, scale: float = 1.0,
                 dtype=np.float64):
        in_shape = _shape(in_shape, "in_shape")
        nd = len(in_shape)
        if axes is None:
            axes = tuple(range(nd))
        elif isinstance(axes, (int, np.integer)):
            axes = (int(axes),)
        axes = tuple(int(a) for a in axes)
        if any(not -nd <= a < nd for a in axes) or len(set(a % max(nd, 1) for a in axes)) != len(
                axes):
            raise ValueError(f"sum over axes {axes} is invalid for shape {in_shape}")
        axes = tuple(sorted(a % nd for a in axes))
        kept = tuple(1 if i in axes else s for i, s in enumerate(in_shape))
        out = kept if keepdims else tuple(s for i, s in enumerate(in_shape) if i not in axes)
        super().__init__(out, in_shape, dtype)
        self.axes, self.keepdims, self.scale, self._kept = axes, bool(keepdims), float(scale), kept

    @property
    def flops(self):
        return self.in_size

    def _apply(self, xs):
        s = xs.sum(axis=tuple(a + 1 for a in self.axes), keepdims=self.keepdims)
        return s * s.dtype.type(self.scale) if self.scale != 1.0 else s

    def _transpose(self, ys):
        y = np.broadcast_to(ys.reshape((len(ys),) + self._kept), (len(ys),) + self.in_shape)
        return y * y.dtype.type(self.scale) if self.scale != 1.0 else y

    def spec(self):
        return ({"in_shape": list(self.in_shape), "axes": list(self.axes),
                 "keepdims": self.keepdims, "scale": self.scale, "dtype": self.dtype.name}, {})

    def label(self):
        return "sum" if self.scale == 1.0 else "mean"


class CumSum(Operator):
    """``x -> np.cumsum(x, axis)``: the Jacobian of a running sum, lower triangular ones
    along ``axis``; its transpose runs the sum backwards.  It keeps nothing.

    >>> CumSum((3,), 0).apply_transpose(np.array([1.0, 2.0, 3.0]))
    array([6., 5., 3.])
    """

    kind = "cumsum"

    def __init__(self, shape, axis: int, dtype=np.float64):
        shape = _shape(shape, "shape")
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not (
                -len(shape) <= axis < len(shape)):
            raise ValueError(f"cumsum axis {axis!r} is out of range for shape {shape}")
        super().__init__(shape, shape, dtype)
        self.axis = int(axis) % len(shape)

    @property
    def flops(self):
        return self.in_size

    def _apply(self, xs):
        return np.cumsum(xs, axis=self.axis + 1)

    def _transpose(self, ys):
        backwards = np.flip(ys, axis=self.axis + 1)
        return np.flip(np.cumsum(backwards, axis=self.axis + 1), axis=self.axis + 1)

    def spec(self):
        return {"shape": list(self.in_shape), "axis": self.axis, "dtype": self.dtype.name}, {}


class Broadcast(Operator):
    """``x -> broadcast_to(x, out_shape)`` (numpy rules); its transpose sums back."""

    kind = "broadcast"

    def __init__(self, in_shape, out_shape, dtype=np.float64):
        in_shape, out_shape = _shape(in_shape, "in_shape"), _shape(out_shape, "out_shape")
        try:
            ok = np.broadcast_shapes(in_shape, out_shape) == out_shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(f"shape {in_shape} does not broadcast to {out_shape}")
        super().__init__(out_shape, in_shape, dtype)
        self._padded = (1,) * (len(out_shape) - len(in_shape)) + in_shape

    flops = 0

    def _apply(self, xs):
        return np.broadcast_to(xs.reshape((len(xs),) + self._padded), (len(xs),) + self.out_shape)

    def _transpose(self, ys):
        return _sum_to(ys, (len(ys),) + self._padded)

    def spec(self):
        return ({"in_shape": list(self.in_shape), "out_shape": list(self.out_shape),
                 "dtype": self.dtype.name}, {})


class Reshape(Operator):
    """``x -> x.reshape(out_shape)``."""

    kind = "reshape"

    def __init__(self, in_shape, out_shape, dtype=np.float64):
        in_shape, out_shape = _shape(in_shape, "in_shape"), _shape(out_shape, "out_shape")
        if math.prod(in_shape) != math.prod(out_shape):
            raise ValueError(f"cannot reshape {in_shape} into {out_shape}: sizes "
                             f"{math.prod(in_shape)} and {math.prod(out_shape)} differ")
        super().__init__(out_shape, in_shape, dtype)

    flops = 0

    def _apply(self, xs):
        return xs.reshape((len(xs),) + self.out_shape)

    def _transpose(self, ys):
        return ys.reshape((len(ys),) + self.in_shape)

    def spec(self):
        return ({"in_shape": list(self.in_shape), "out_shape": list(self.out_shape),
                 "dtype": self.dtype.name}, {})


class Transpose(Operator):
    """``x -> x.transpose(axes)``."""

    kind = "transpose"

    def __init__(self, in_shape, axes=None, dtype=np.float64):
        in_shape = _shape(in_shape, "in_shape")
        axes = tuple(reversed(range(len(in_shape)))) if axes is None else tuple(
            int(a) for a in axes)
        if sorted(axes) != list(range(len(in_shape))):
            raise ValueError(f"transpose axes {axes} are not a permutation of the "
                             f"{len(in_shape)} axes of shape {in_shape}")
        super().__init__(tuple(in_shape[a] for a in axes), in_shape, dtype)
        self.axes = axes

    flops = 0

    def _apply(self, xs):
        return xs.transpose((0,) + tuple(a + 1 for a in self.axes))

    def _transpose(self, ys):
        inverse = np.argsort(self.axes)
        return ys.transpose((0,) + tuple(int(a) + 1 for a in inverse))

    def spec(self):
        return ({"in_shape": list(self.in_shape), "axes": list(self.axes),
                 "dtype": self.dtype.name}, {})


class Gather(Operator):
    """``y.flat[i] = x.flat[positions.flat[i]]``, with ``-1`` meaning zero (padding):
    indexing and slicing (a convolution's patches are an :class:`Im2Col`, which
    needs no positions).  The operator holds ``positions`` (int64, one per output
    entry): it is retained (:func:`index_record`), but rebuilt from the index
    expression and the shapes, so :func:`minirad.graph.memory.retained_memory` charges
    it nothing and reports it as ``from_shapes`` (unless ``retained`` says
    otherwise: a sort's permutation is rebuilt by sorting again, from the values).

    >>> Gather((3,), np.array([2, -1, 0])).apply(np.array([10.0, 20.0, 30.0]))
    array([30.,  0., 10.])
    """

    kind = "index"

    def __init__(self, in_shape, positions, dtype=np.float64, retained=None):
        in_shape = _shape(in_shape, "in_shape")
        positions = np.asarray(positions)
        if not np.issubdtype(positions.dtype, np.integer):
            raise TypeError(f"positions must be integers, not {positions.dtype}")
        size = math.prod(in_shape)
        if positions.size and (positions.min() < -1 or positions.max() >= size):
            raise ValueError(f"positions must lie in [-1, {size}) for an input of shape "
                             f"{in_shape}")
        self.positions = positions.astype(np.int64)
        if retained is None:
            retained = (index_record(self.positions, "the positions an index reads"),)
        super().__init__(positions.shape, in_shape, dtype, retained)
        flat = self.positions.reshape(-1)
        self._padded = bool((flat < 0).any())
        self._flat = np.where(flat < 0, size, flat)   # the zero column sits at the end
        self._unique = len(np.unique(flat[flat >= 0])) == int((flat >= 0).sum())

    flops = 0

    def _apply(self, xs):
        flat = xs.reshape(len(xs), -1)
        if self._padded:
            flat = np.concatenate([flat, np.zeros((len(xs), 1), flat.dtype)], axis=1)
        return flat[:, self._flat]

    def _transpose(self, ys):
        n = len(ys)
        flat = ys.reshape(n, -1)
        size = self.in_size
        if self._unique:
            out = np.zeros((n, size + 1), dtype=ys.dtype)
            out[:, self._flat] = flat
        else:  # repeated positions add up: a sparse product does that in C
            scatter = sparse.csr_matrix(
                (np.ones(len(self._flat), dtype=ys.dtype), (self._flat, np.arange(len(
                    self._flat)))), shape=(size + 1, len(self._flat)))
            out = np.asarray((scatter @ flat.T).T)
        return out[:, :size]

    def spec(self):
        return ({"in_shape": list(self.in_shape), "dtype": self.dtype.name,
                 "retained": retained_spec(self)}, {"positions": self.positions})


class Im2Col(Operator):
    """The patches a convolution multiplies: images ``x`` (B, C, H, W) to matrices
    (B, C*kh*kw, Ho*Wo) whose column ``r`` holds the ``kh`` x ``kw`` window at
    output pixel ``r`` (zero outside the image, ``padding`` wide), channel-major,
    so that a convolution is ``kernels.reshape(F, C*kh*kw) @ patches``.

    The same linear map as a :class:`Gather` with one position per patch entry,
    without the positions: ``apply`` copies one shifted slice of the padded
    images per kernel offset, and ``apply_transpose`` adds the patches back the
    same way (``kh * kw`` slice-adds, where overlapping windows add up).  It
    keeps nothing, only shapes: no index array, so it has no :class:`Retained`
    record (a gathering im2col would hold ``C*kh*kw*Ho*Wo`` int64 positions per
    image, rebuilt from the shapes as a :class:`Gather`'s are).

    >>> op = Im2Col((1, 1, 3, 3), (2, 2))
    >>> op.out_shape                    # 4 entries per patch, 2x2 output pixels
    (1, 4, 4)
    >>> op.apply(np.arange(9.0).reshape(1, 1, 3, 3))[0]   # column r: the window at pixel r
    array([[0., 1., 3., 4.],
           [1., 2., 4., 5.],
           [3., 4., 6., 7.],
           [4., 5., 7., 8.]])
    >>> op.apply_transpose(np.ones(op.out_shape))[0, 0]   # how many windows cover a pixel
    array([[1., 2., 1.],
           [2., 4., 2.],
           [1., 2., 1.]])
    """

    kind = "im2col"
    flops = 0

    def __init__(self, in_shape, kernel, stride: int = 1, padding: int = 0, dtype=np.float64):
        in_shape = _shape(in_shape, "in_shape")
        kernel = _shape(kernel, "kernel")
        if len(in_shape) != 4 or len(kernel) != 2 or min(kernel, default=0) < 1:
            raise ValueError(f"im2col takes images (B, C, H, W) and a kernel (kh, kw) of "
                             f"positive sizes, not {in_shape} and {kernel}")
        for what, value, least in (("stride", stride, 1), ("padding", padding, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or value < least:
                raise ValueError(f"{what} must be an int >= {least}, not {value!r}")
        b, c, h, w = in_shape
        (kh, kw), stride, padding = kernel, int(stride), int(padding)
        ho = (h + 2 * padding - kh) // stride + 1
        wo = (w + 2 * padding - kw) // stride + 1
        if ho <= 0 or wo <= 0:
            raise ValueError(f"a {kh}x{kw} kernel does not fit an image of {h}x{w} with "
                             f"padding {padding}")
        super().__init__((b, c * kh * kw, ho * wo), in_shape, dtype)
        self.kernel, self.stride, self.padding = kernel, stride, padding
        self.pixels = (ho, wo)   # the output image's height and width
        # a stack of patches as (n, B, C, kh, kw, Ho, Wo): offset (i, j) is one block
        self._blocks = (b, c) + kernel + self.pixels

    def _padded(self, n: int, dtype) -> np.ndarray:
        b, c, h, w = self.in_shape
        p = self.padding
        return np.zeros((n, b, c, h + 2 * p, w + 2 * p), dtype)

    def _window(self, i: int, j: int):
        """The slices of the padded images that kernel offset (i, j) reads."""
        (ho, wo), s = self.pixels, self.stride
        return (Ellipsis, slice(i, i + s * (ho - 1) + 1, s), slice(j, j + s * (wo - 1) + 1, s))

    def _apply(self, xs):
        n = len(xs)
        h, w = self.in_shape[2:]
        p = self.padding
        padded = self._padded(n, xs.dtype)
        padded[..., p:p + h, p:p + w] = xs.reshape((n,) + self.in_shape)
        blocks = np.empty((n,) + self._blocks, xs.dtype)
        for i in range(self.kernel[0]):
            for j in range(self.kernel[1]):
                blocks[:, :, :, i, j] = padded[self._window(i, j)]
        return blocks.reshape((n,) + self.out_shape)

    def _transpose(self, ys):
        n = len(ys)
        h, w = self.in_shape[2:]
        blocks = ys.reshape((n,) + self._blocks)
        padded = self._padded(n, ys.dtype)
        for i in range(self.kernel[0]):
            for j in range(self.kernel[1]):
                padded[self._window(i, j)] += blocks[:, :, :, i, j]
        p = self.padding
        return padded[..., p:p + h, p:p + w]

    def spec(self):
        return ({"in_shape": list(self.in_shape), "kernel": list(self.kernel),
                 "stride": self.stride, "padding": self.padding, "dtype": self.dtype.name}, {})

    def label(self):
        return f"im2col {self.kernel[0]}x{self.kernel[1]}"


class Embed(Operator):
    """``y = zeros(out_shape); y.flat[positions] = x``: the edge from one part of a
    ``concatenate`` or ``stack`` (positions distinct).  ``positions`` (int64) is
    retained as an index array rebuilt from the shapes, as a :class:`Gather`'s is."""

    kind = "concatenate"

    def __init__(self, out_shape, positions, dtype=np.float64):
        out_shape = _shape(out_shape, "out_shape")
        positions = np.asarray(positions)
        if not np.issubdtype(positions.dtype, np.integer):
            raise TypeError(f"positions must be integers, not {positions.dtype}")
        size = math.prod(out_shape)
        flat = positions.reshape(-1)
        if flat.size and (flat.min() < 0 or flat.max() >= size
                          or len(np.unique(flat)) != flat.size):
            raise ValueError(f"embedding positions must be distinct and lie in [0, {size})")
        self.positions = positions.astype(np.int64)
        super().__init__(out_shape, positions.shape, dtype,
                         (index_record(self.positions, "the positions a part fills"),))
        self._flat = flat.astype(np.int64)

    flops = 0

    def _apply(self, xs):
        out = np.zeros((len(xs), self.out_size), dtype=xs.dtype)
        out[:, self._flat] = xs.reshape(len(xs), -1)
        return out

    def _transpose(self, ys):
        return ys.reshape(len(ys), -1)[:, self._flat]

    def spec(self):
        return ({"out_shape": list(self.out_shape), "dtype": self.dtype.name},
                {"positions": self.positions})


class Projection(Operator):
    """A random ``P = R R^T`` (E[P] = I) acting along one axis of an array:
    random matrix injection (paper Sec. 3.2, eqs. 2-6).

    ``R`` has shape (d, k): one draw shared by every row of ``batch_axis``
    ("same sample"), or by the whole array when there is no batch axis; or
    (n_rows, d, k): one draw per index of ``batch_axis`` ("different sample").  With
    ``axis=None`` P acts on all non-batch axes flattened.  ``method`` is
    ``"sample"`` (columns sqrt(d/k) e_i, i drawn with replacement, so P is a
    diagonal of (d/k) x counts) or ``"rademacher"`` (entries ±1/sqrt(k)).
    P is symmetric.  R is not counted as retained: it is regenerated from
    the random seed, as in the paper.
    """

    kind = "projection"

    def __init__(self, shape, R, axis=None, batch_axis=None, method="sample"):
        shape = _shape(shape, "shape")
        R = np.asarray(R)
        nd = len(shape)
        if batch_axis is not None:
            batch_axis = int(batch_axis) % max(nd, 1)
        if axis is not None:
            axis = int(axis) % max(nd, 1)
            if axis == batch_axis:
                raise ValueError("the projection axis and the batch axis must differ")
        rest = [i for i in range(nd) if i != batch_axis and (axis is None or i == axis)]
        d = math.prod(shape[i] for i in rest)
        per_row = (shape[batch_axis], d) if batch_axis is not None else None
        if not (R.ndim == 2 and R.shape[0] == d or R.ndim == 3 and R.shape[:2] == per_row):
            raise ValueError(f"R must have shape (d, k) = ({d}, k) (one draw)"
                             + (f" or {per_row + ('k',)} (one per row)" if per_row else "")
                             + f" for a projection along "
                             f"{'the flattened axes' if axis is None else f'axis {axis}'} of "
                             f"{shape}, not {R.shape}")
        super().__init__(shape, shape, R.dtype)
        self.R, self.axis, self.batch_axis, self.method = R, axis, batch_axis, str(method)
        self.d, self.k = d, R.shape[-1]
        self._rest = rest

    @property
    def flops(self):
        rows = 1 if self.batch_axis is None else self.in_shape[self.batch_axis]
        others = self.in_size // (self.d * rows) if self.d else 0
        return 2 * self.d * self.k * rows * others

    def _to_rows(self, xs):
        """(n, [rows,] others, d): the projected axes last, the batch axis first."""
        n = len(xs)
        nd = len(self.in_shape)
        lead = [self.batch_axis] if self.batch_axis is not None else []
        others = [i for i in range(nd) if i not in lead and i not in self._rest]
        perm = [0] + [i + 1 for i in lead + others + self._rest]
        moved = xs.transpose(perm)
        shape = (n,) + tuple(self.in_shape[i] for i in lead) + (
            math.prod(self.in_shape[i] for i in others), self.d)
        return moved.reshape(shape), perm, moved.shape

    def _apply(self, xs):
        rows, perm, moved_shape = self._to_rows(xs)
        if self.R.ndim == 2:   # one draw for every row
            y = (rows @ self.R) @ self.R.T
        else:
            y = np.einsum("nbod,bdk->nbok", rows, self.R)
            y = np.einsum("nbok,bdk->nbod", y, self.R)
        return y.reshape(moved_shape).transpose(np.argsort(perm))

    _transpose = _apply

    def spec(self):
        return ({"shape": list(self.in_shape), "axis": self.axis, "batch_axis": self.batch_axis,
                 "method": self.method}, {"R": self.R})

    def label(self):
        return f"P k={self.k}"


class InjectedMatMul(MatMul):
    """A :class:`MatMul` whose stored operand was replaced by its random projection
    along the contracted axis (``S P``, or ``S_b P_b`` per row): the paper's
    activation sampling, ``S_P[dh/dW]``.  Only ``k`` numbers per row are kept
    (the sampled entries, or ``S_b R_b``), which is what ``retained`` says."""

    kind = "injected"

    def __init__(self, stored, side, variable_shape, k, method, retained=None):
        super().__init__(stored, side, variable_shape, retained)
        self.k, self.method = int(k), str(method)

    def spec(self):
        params, arrays = super().spec()
        params.update(k=self.k, method=self.method)
        return params, arrays

    def label(self):
        return f"outer, {'sampled' if self.method == 'sample' else 'projected'} k={self.k}"


class ProjectedMatMul(Operator):
    """A :class:`MatMul` by ``S R R^T`` (times ``scale``) that keeps only ``S R``.

    Random matrix injection with one shared projection ``P = R R^T scale``
    (``R`` of shape (d, k), d the contracted length of ``S``) replaces a stored
    operand ``S`` by ``S P``.  That product is d wide again, but it has rank k:
    this operator keeps ``kept = S R`` (``side="left"``, x -> S P @ x) or
    ``kept = R^T S`` (``side="right"``, x -> x @ P S) and multiplies by ``R``
    only when applied, so the VJP of ``x -> S P x`` is ``R (kept^T y) scale``:
    two thin products instead of a d-wide one.  It equals ``MatMul(S P, ...)``
    (see :meth:`stored_estimate`).  Only ``kept`` is retained: ``R`` is held
    for speed but, as in the paper, counts nothing, since it is regenerated
    from a seed.

    >>> S = np.array([[1.0, 2.0, 3.0]])                 # one row, d = 3
    >>> R = np.array([[1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])
    >>> op = ProjectedMatMul.project(S, R, "left", (3,), scale=0.5)
    >>> op.kept, op.stored_estimate()                   # S R, and S R R^T / 2
    (array([[0., 4.]]), array([[-2.,  2.,  2.]]))
    >>> op.apply_transpose(np.array([1.0]))             # R (kept^T y) / 2
    array([-2.,  2.,  2.])
    >>> op.retained_bytes                               # the two floats of S R
    16.0
    """

    kind = "projected"

    def __init__(self, kept, R, side: str, variable_shape, scale: float = 1.0,
                 method: str = "rademacher", retained=None):
        kept, R = np.asarray(kept), np.asarray(R)
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' (x -> S P @ x) or 'right' (x -> x @ P S), "
                             f"not {side!r}")
        if R.ndim != 2 or not np.issubdtype(R.dtype, np.floating):
            raise ValueError(f"R must be a (d, k) float matrix, not {R.dtype} of shape {R.shape}")
        if not math.isfinite(scale):
            raise ValueError(f"scale must be finite, not {scale}")
        variable_shape = _shape(variable_shape, "variable_shape")
        d, k = R.shape
        # the contracted axis: the last of a left operand, the first of a matrix's rows
        # on the right (numpy's @ rules: a 1-d operand contracts its only axis)
        kept_axis = -1 if side == "left" or kept.ndim == 1 else -2
        var_axis = (-1 if len(variable_shape) == 1 else -2) if side == "left" else -1
        if kept.ndim == 0 or kept.shape[kept_axis] != k:
            raise ValueError(f"kept (the stored operand times R) must have length k = {k} on "
                             f"its contracted axis, not shape {kept.shape}")
        if not variable_shape or variable_shape[var_axis] != d:
            raise ValueError(f"the variable must have length d = {d} (R's rows) on its "
                             f"contracted axis, not shape {variable_shape}")
        dtype = np.result_type(kept.dtype, R.dtype)
        R = R.astype(dtype, copy=False)
        scaled = R * dtype.type(scale)
        # x -> R^T x scale (left) or x R scale (right), then the thin product with kept
        if retained is None:
            retained = (Retained(fresh_key(self.kind), _array_bits(kept)),)
        to_k = (MatMul(scaled.T, "left", variable_shape, ()) if side == "left"
                else MatMul(scaled, "right", variable_shape, ()))
        thin = MatMul(kept, side, to_k.out_shape, retained)
        super().__init__(thin.out_shape, variable_shape, dtype, retained)
        self.kept, self.R, self.side, self.scale = kept, R, side, float(scale)
        self.k, self.method = k, str(method)
        self._to_k, self._thin = to_k, thin

    @classmethod
    def project(cls, stored, R, side: str, variable_shape, scale: float = 1.0,
                method: str = "rademacher", retained=None):
        """The operator for ``MatMul(stored, side, variable_shape)`` with ``stored`` projected
        along its contracted axis: computes ``kept`` (``stored @ R`` or ``R^T @ stored``),
        with ``R`` in ``stored``'s float type."""
        stored, R = np.asarray(stored), np.asarray(R)
        if side not in ("left", "right"):
            raise ValueError(f"side must be 'left' (x -> S P @ x) or 'right' (x -> x @ P S), "
                             f"not {side!r}")
        if R.ndim != 2:
            raise ValueError(f"R must be a (d, k) matrix, not of shape {R.shape}")
        axis = -1 if side == "left" or stored.ndim == 1 else -2
        if stored.ndim == 0 or stored.shape[axis] != R.shape[0]:
            raise ValueError(f"R has {R.shape[0]} rows; the stored operand of shape "
                             f"{stored.shape} must have that length on its contracted axis")
        # R in the stored operand's precision (Rademacher signs are exact in any float)
        R = R.astype(stored.dtype if np.issubdtype(stored.dtype, np.floating) else np.float64)
        kept = np.moveaxis(np.moveaxis(stored, axis, -1) @ R, -1, axis)
        return cls(kept, R, side, variable_shape, scale, method, retained)

    def stored_estimate(self) -> np.ndarray:
        """``S P``: the d-wide stored operand this operator stands for (built on request)."""
        axis = -1 if self.side == "left" or self.kept.ndim == 1 else -2
        back = np.moveaxis(self.kept, axis, -1) @ self.R.T
        return np.moveaxis(back * back.dtype.type(self.scale), -1, axis)

    @property
    def flops(self):
        return self._to_k.flops + self._thin.flops

    def _apply(self, xs):
        small = np.reshape(self._to_k._apply(xs), (len(xs),) + self._to_k.out_shape)
        return self._thin._apply(small)

    def _transpose(self, ys):
        # the thin product first (k wide), then R: the cheap order
        small = np.reshape(self._thin._transpose(ys), (len(ys),) + self._thin.in_shape)
        return self._to_k._transpose(small)

    def spec(self):
        return ({"side": self.side, "variable_shape": list(self.in_shape), "scale": self.scale,
                 "method": self.method, "retained": retained_spec(self)},
                {"kept": self.kept, "R": self.R})

    def label(self):
        return f"outer, projected k={self.k}"


class Composed(Operator):
    """``parts[0] ∘ parts[1] ∘ ...``, applied right to left without forming the product."""

    kind = "composed"

    def __init__(self, parts):
        parts = tuple(parts)
        if len(parts) < 2:
            raise ValueError("a composition needs at least two operators")
        for outer, inner in zip(parts, parts[1:]):
            if outer.in_shape != inner.out_shape:
                raise ValueError(f"cannot compose {outer!r} after {inner!r}: shapes "
                                 f"{outer.in_shape} and {inner.out_shape} differ")
        retained = {r.key: r for p in parts for r in p.retained}
        super().__init__(parts[0].out_shape, parts[-1].in_shape,
                         np.result_type(*[p.dtype for p in parts]), retained.values())
        self.parts = parts

    @property
    def flops(self):
        return sum(p.flops for p in self.parts)

    def _apply(self, xs):
        for p in reversed(self.parts):
            xs = np.reshape(p._apply(xs), (len(xs),) + p.out_shape)
        return xs

    def _transpose(self, ys):
        for p in self.parts:
            ys = np.reshape(p._transpose(ys), (len(ys),) + p.in_shape)
        return ys

    def label(self):
        return "∘".join(p.label() for p in self.parts)


class Added(Operator):
    """``sum(terms)``: where two paths between the same vertices meet, unmerged."""

    kind = "added"

    def __init__(self, terms):
        terms = tuple(terms)
        if len(terms) < 2:
            raise ValueError("a sum of operators needs at least two terms")
        for t in terms[1:]:
            if (t.out_shape, t.in_shape) != (terms[0].out_shape, terms[0].in_shape):
                raise ValueError(f"cannot add {terms[0]!r} and {t!r}: shapes differ")
        retained = {r.key: r for t in terms for r in t.retained}
        super().__init__(terms[0].out_shape, terms[0].in_shape,
                         np.result_type(*[t.dtype for t in terms]), retained.values())
        self.terms = terms

    @property
    def flops(self):
        return sum(t.flops for t in self.terms) + (len(self.terms) - 1) * self.out_size

    def _apply(self, xs):
        return sum(np.reshape(t._apply(xs), (len(xs),) + self.out_shape) for t in self.terms)

    def _transpose(self, ys):
        return sum(np.reshape(t._transpose(ys), (len(ys),) + self.in_shape) for t in self.terms)

    def label(self):
        return "+".join(t.label() for t in self.terms)


# ------------------------------------------------------------------ the algebra
def _merge_retained(a: Operator, b: Operator):
    return tuple({r.key: r for r in a.retained + b.retained}.values())


def compose(outer: Operator, inner: Operator) -> Operator:
    """``outer ∘ inner``, structured where the structure survives (identity,
    diagonal times diagonal or mask, reshape of a reshape), otherwise a lazy
    :class:`Composed`.  Use :data:`OPERATORS` ``.multiply`` for the rule that
    forms dense products when they are small.

    >>> compose(Diagonal(np.array([2.0, 3.0])), Mask(np.array([True, False]))).to_dense()
    array([[2., 0.],
           [0., 0.]])
    """
    if outer.in_shape != inner.out_shape:
        raise ValueError(f"cannot compose {outer!r} after {inner!r}: shapes {outer.in_shape} "
                         f"and {inner.out_shape} differ")
    if isinstance(outer, Identity):
        return inner
    if isinstance(inner, Identity):
        return outer
    diagonal_like = (Diagonal, Mask)
    if isinstance(outer, diagonal_like) and isinstance(inner, diagonal_like):
        if isinstance(outer, Mask) and isinstance(inner, Mask):
            return Mask(outer.mask & inner.mask, np.result_type(outer.dtype, inner.dtype),
                        _merge_retained(outer, inner))
        d = (outer.mask if isinstance(outer, Mask) else outer.d) * (
            inner.mask if isinstance(inner, Mask) else inner.d)
        return Diagonal(np.asarray(d, dtype=np.result_type(outer.dtype, inner.dtype)),
                        outer.in_shape, _merge_retained(outer, inner))
    if isinstance(outer, Reshape) and isinstance(inner, Reshape):
        if outer.out_shape == inner.in_shape:
            return Identity(inner.in_shape, np.result_type(outer.dtype, inner.dtype))
        return Reshape(inner.in_shape, outer.out_shape, outer.dtype)
    outer_parts = outer.parts if isinstance(outer, Composed) else (outer,)
    inner_parts = inner.parts if isinstance(inner, Composed) else (inner,)
    return Composed(outer_parts + inner_parts)


def _dense_product_cost(outer: Operator, inner: Operator) -> int:
    # the cheaper of applying outer to every column of inner or inner^T to every row of outer
    return min(outer.flops * inner.in_size, inner.flops * outer.out_size)


# tangents and adjoints: arrays (a numpy scalar is a 0-d array)
_ARRAYS = (np.ndarray, np.generic)


def _as_block(label, shape: tuple) -> Operator:
    """A float label (an edge between two numbers) as the 1 x 1 block it stands for."""
    return Diagonal(np.asarray(label, dtype=np.float64), shape)


def _is_float(label) -> bool:
    return type(label) is float


def _multiply(outer, inner):
    if _is_float(outer) and _is_float(inner):
        return outer * inner
    if _is_float(outer):
        if isinstance(inner, Operator):
            return _multiply(_as_block(outer, inner.out_shape), inner)
        return np.asarray(outer * np.asarray(inner))  # a tangent of a number
    if _is_float(inner):
        if isinstance(outer, Operator):
            return _multiply(outer, _as_block(inner, outer.in_shape))
        return np.asarray(np.asarray(outer) * inner)  # an adjoint of a number
    outer_op, inner_op = isinstance(outer, Operator), isinstance(inner, Operator)
    if outer_op and inner_op:
        product = compose(outer, inner)
        if product.out_shape == () and product.in_shape == ():
            return float(product.to_dense()[0, 0])  # between two numbers: a float again
        if isinstance(product, Composed) and outer.out_size * inner.in_size <= DENSE_LIMIT:
            # no structure survives: form the (small enough) matrix, at the visible cost
            # that multiply_cost reports
            return Dense(product.to_dense(), outer.out_shape, inner.in_shape)
        return product
    if outer_op and isinstance(inner, _ARRAYS):
        return outer.apply(inner)
    if inner_op and isinstance(outer, _ARRAYS):
        return inner.apply_transpose(outer)
    raise TypeError(f"OPERATORS.multiply takes two labels (operators or floats), or a label "
                    f"and an array (JVP: label, tangent; VJP: adjoint, label), not "
                    f"{type(outer).__name__} and {type(inner).__name__}")


def _stack_count(array: np.ndarray, shape: tuple) -> int:
    return int(array.size // max(math.prod(shape), 1)) if math.prod(shape) else 0


def _multiply_cost(outer, inner) -> int:
    if _is_float(outer) and _is_float(inner):
        return 1
    if _is_float(outer):
        if isinstance(inner, Operator):
            return _multiply_cost(_as_block(outer, inner.out_shape), inner)
        return int(np.size(inner))
    if _is_float(inner):
        if isinstance(outer, Operator):
            return _multiply_cost(outer, _as_block(inner, outer.in_shape))
        return int(np.size(outer))
    if isinstance(outer, Operator) and isinstance(inner, Operator):
        product = compose(outer, inner)
        if isinstance(product, Composed):
            return _dense_product_cost(outer, inner)
        if product is outer or product is inner or isinstance(product, (Identity, Reshape)):
            return 0
        return product.in_size  # two diagonals multiply entry by entry
    if isinstance(outer, Operator):
        return outer.flops * _stack_count(np.asarray(inner), outer.in_shape)
    return inner.flops * _stack_count(np.asarray(outer), inner.out_shape)


def _add(a, b):
    if _is_float(a) or _is_float(b):
        # labels between two numbers: a block of shape () -> () counts as its float
        return _number(a) + _number(b)
    if isinstance(a, _ARRAYS) and isinstance(b, _ARRAYS):
        return np.asarray(a + b)   # 0-d arrays add up to a numpy scalar: keep an array
    if not (isinstance(a, Operator) and isinstance(b, Operator)):
        raise TypeError(f"OPERATORS.add takes two operators or two arrays, not "
                        f"{type(a).__name__} and {type(b).__name__}")
    if (a.out_shape, a.in_shape) != (b.out_shape, b.in_shape):
        raise ValueError(f"cannot add {a!r} and {b!r}: shapes differ")
    diagonal_like = (Identity, Diagonal, Mask)
    if isinstance(a, diagonal_like) and isinstance(b, diagonal_like):
        def d(op):
            if isinstance(op, Identity):
                return np.ones((), op.dtype)
            return op.mask.astype(op.dtype) if isinstance(op, Mask) else op.d
        return Diagonal(d(a) + d(b), a.in_shape, _merge_retained(a, b))
    if isinstance(a, Dense) and isinstance(b, Dense):
        return Dense(a.matrix + b.matrix, a.out_shape, a.in_shape, _merge_retained(a, b))
    terms = (a.terms if isinstance(a, Added) else (a,)) + (b.terms if isinstance(b, Added)
                                                          else (b,))
    return Added(terms)


def _number(label) -> float:
    if _is_float(label):
        return label
    if isinstance(label, Operator) and label.out_shape == label.in_shape == ():
        return float(label.to_dense()[0, 0])
    raise TypeError(f"cannot add the float label of an edge between numbers to "
                    f"{type(label).__name__}")


def _entries(op) -> int:
    if _is_float(op):
        return 1
    if isinstance(op, _ARRAYS):
        return int(op.size)
    if isinstance(op, (Identity, Diagonal, Mask)):
        return op.in_size
    return op.out_size * op.in_size


def _add_cost(a, b) -> int:
    return max(_entries(a), _entries(b))


#: The label algebra of graphs with array vertices: composition and sum of linear
#: operators, with floats as the labels of edges between two numbers.
OPERATORS = Algebra(name="operators", multiply=_multiply, add=_add, zero=None, one=None,
                    multiply_cost=_multiply_cost, add_cost=_add_cost)
