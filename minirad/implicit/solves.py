"""Implicit operators: edges whose Jacobian is applied by solving, never formed.

A linear solve ``x = A^{-1} b`` is one vertex with an edge from ``b`` and
one from ``A``.  Their Jacobian blocks are ``dx/db = A^{-1}`` and
``dx/dA: dA -> -A^{-1} dA x``; applying them takes a solve with ``A``
(forward) or with ``A^T`` (reverse: the adjoint ``lambda = A^{-T} xbar``,
then ``bbar = lambda`` and ``Abar = -lambda x^T``).  The inverse is never
built: each edge keeps ``A``'s LU factorisation (shared by both edges) and
the edge from ``A`` also keeps ``x``.

A root ``x(p)`` of ``f(x, p) = 0``, found by any iteration, is one vertex
with one edge from ``p``: by the implicit function theorem
``dx/dp = -f_x^{-1} f_p``, applied by a solve with ``f_x`` (forward) or
``f_x^T`` (reverse), whatever the iteration did and however many steps it
took.  Differentiating *through* the iterations gives the same gradient at
convergence, but keeps every iterate (:func:`solve_root` against an
unrolled loop: see ``tests/implicit/test_implicit.py`` and ``bench``).

Inside :func:`minirad.trace`, ``np.linalg.solve`` on
traced arrays records a solve (this module registers it), and :func:`solve_root`
a root: each a :class:`~minirad.tracing.rules.Rule` whose value solves (and a
replay solves again) and whose block is the operator below, built when an
algorithm reads the edge, from the factors the solve found.

>>> import numpy as np
>>> from minirad import trace
>>> A, b = np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0])
>>> g = trace(lambda A, b: np.linalg.solve(A, b).sum(), A, b)
>>> [op.kind for op in g.labels]
['solve_matrix', 'solve', 'sum']
"""

from __future__ import annotations

import math
import warnings
import weakref

import numpy as np
import scipy.linalg as linalg
import scipy.sparse as sparse

from ..exact.jacobians import jacobian
from ..graph.files import register_reader
from ..graph.operators import Operator, Retained, fresh_key
from ..tracing import trace
from ..tracing.rules import Rule, plain, register_rules
from ..tracing.tracer import Traced, detach, record

__all__ = ["ImplicitSolution", "LinearSolve", "SolveMatrix", "checked_factors", "solve",
           "solve_root"]


def _lu_bits(n: int, dtype) -> int:
    """The LU factors (n x n) plus the pivots (n 32-bit integers)."""
    return n * n * np.dtype(dtype).itemsize * 8 + n * 32


def _factor(A: np.ndarray, what: str):
    """LU factors of A; a LinAlgError (a ValueError) for a singular (or numerically
    singular) A."""
    with warnings.catch_warnings():   # a singular A is reported below, as a LinAlgError
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        lu = linalg.lu_factor(A, check_finite=True)
    _check_nonsingular(lu[0], what)
    return lu


def _check_nonsingular(lu: np.ndarray, what: str) -> None:
    """Refuse a numerically singular U with numpy's ``LinAlgError`` (a ``ValueError``),
    the error ``np.linalg.solve`` raises, so that a traced program's own ``except
    np.linalg.LinAlgError`` catches it as it would untraced."""
    diagonal = np.abs(np.diag(lu))
    if diagonal.min(initial=np.inf) <= np.finfo(lu.dtype).eps * lu.shape[0] * max(
            diagonal.max(initial=0.0), np.finfo(lu.dtype).tiny):
        raise np.linalg.LinAlgError(f"{what} is singular to working precision; the solve (and "
                                    f"its derivative) is undefined")


def checked_factors(lu, piv, what: str = "the factorisation") -> tuple:
    """``(lu, piv)`` as :func:`scipy.linalg.lu_factor` returns them, checked: ``lu``
    a square finite float32 or float64 matrix (L below the diagonal with a unit
    diagonal left out, U on and above), ``piv`` n integers with
    ``i <= piv[i] < n`` (row i was swapped with row piv[i]), U not singular.  Any
    such pair is the factorisation of ``A = P L U``, so a file can hold the factors
    themselves (:mod:`minirad.graph.files`) and the operators apply exactly as before.

    >>> lu, piv = checked_factors(*linalg.lu_factor(np.array([[0.0, 2.0], [1.0, 1.0]])))
    >>> piv.tolist()
    [1, 1]
    >>> checked_factors(np.zeros((2, 2)), np.array([0, 1]))   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    numpy.linalg.LinAlgError: the factorisation is singular to working precision; ...
    """
    lu, piv = np.asarray(lu), np.asarray(piv)
    if lu.ndim != 2 or lu.shape[0] != lu.shape[1] or lu.dtype not in (np.float32, np.float64):
        raise ValueError(f"{what}: lu must be a square float32 or float64 matrix, not "
                         f"{lu.dtype} of shape {lu.shape}")
    if not np.all(np.isfinite(lu)):
        raise ValueError(f"{what}: lu has non-finite entries")
    n = lu.shape[0]
    if piv.shape != (n,) or not np.issubdtype(piv.dtype, np.integer) or not np.all(
            (np.arange(n) <= piv) & (piv < n)):
        raise ValueError(f"{what}: piv must be {n} integers with i <= piv[i] < {n}")
    _check_nonsingular(lu, what)
    return lu, piv.astype(np.int32, copy=False)


def _columns(xs: np.ndarray, n: int) -> tuple[np.ndarray, tuple]:
    """A stack (N, n, ...) as an (n, N * rest) block of right-hand sides."""
    shape = xs.shape
    return np.moveaxis(xs.reshape(shape[0], n, -1), 1, 0).reshape(n, -1), shape


def _uncolumns(block: np.ndarray, shape: tuple) -> np.ndarray:
    n = shape[1]
    return np.moveaxis(block.reshape(n, shape[0], -1), 0, 1).reshape(shape)


class LinearSolve(Operator):
    """``db -> A^{-1} db`` by LU solves (the edge ``b -> x`` of ``x = A^{-1} b``).

    >>> A = np.array([[2.0, 1.0], [0.0, 4.0]])
    >>> op = LinearSolve(linalg.lu_factor(A), (2,))
    >>> op.apply(np.array([3.0, 4.0])), op.apply_transpose(np.array([2.0, 1.0]))
    (array([1., 1.]), array([1., 0.]))
    >>> bool(np.allclose(op.to_dense(), np.linalg.inv(A)))
    True
    """

    kind = "solve"

    def __init__(self, lu, shape, key: str | None = None):
        self.lu = lu
        n = lu[0].shape[0]
        shape = tuple(shape)
        if not shape or shape[0] != n or len(shape) > 2:
            raise ValueError(f"a solve with a {n} x {n} matrix takes right-hand sides of shape "
                             f"({n},) or ({n}, k), not {shape}")
        retained = (Retained(key or fresh_key("lu"), _lu_bits(n, lu[0].dtype),
                             what="LU factors"),)
        super().__init__(shape, shape, lu[0].dtype, retained)

    @property
    def flops(self) -> int:
        n = self.in_shape[0]
        return 2 * n * n * (self.in_size // n)   # two triangular solves per column

    def spec(self):
        """The factors themselves (not A): loading applies the very same solves."""
        return ({"shape": list(self.in_shape), "keys": [self.retained[0].key]},
                {"lu": self.lu[0], "piv": self.lu[1]})

    def _apply(self, xs):
        block, shape = _columns(xs, self.in_shape[0])
        return _uncolumns(linalg.lu_solve(self.lu, block), shape)

    def _transpose(self, ys):
        block, shape = _columns(ys, self.in_shape[0])
        return _uncolumns(linalg.lu_solve(self.lu, block, trans=1), shape)


class SolveMatrix(Operator):
    """``dA -> -A^{-1} dA x`` (the edge ``A -> x`` of ``x = A^{-1} b``); its
    transpose ``xbar -> -(A^{-T} xbar) x^T``.  Keeps A's LU factors and x.

    >>> A, x = np.array([[2.0, 0.0], [0.0, 4.0]]), np.array([1.0, 1.0])
    >>> op = SolveMatrix(linalg.lu_factor(A), x)
    >>> op.apply(np.array([[1.0, 0.0], [0.0, 0.0]]))     # dA e1 e1^T: -A^{-1} (1, 0)
    array([-0.5, -0. ])
    """

    kind = "solve_matrix"

    def __init__(self, lu, x, key: str | None = None, solution_key: str | None = None):
        self.lu, self.x = lu, np.asarray(x)
        n = lu[0].shape[0]
        if self.x.ndim not in (1, 2) or self.x.shape[0] != n:
            raise ValueError(f"the solution of a {n} x {n} system has shape ({n},) or ({n}, k), "
                             f"not {self.x.shape}")
        retained = (Retained(key or fresh_key("lu"), _lu_bits(n, lu[0].dtype),
                             what="LU factors"),
                    Retained(solution_key or fresh_key("solution"),
                             self.x.size * self.x.dtype.itemsize * 8, what="solution x"))
        super().__init__(self.x.shape, (n, n), lu[0].dtype, retained)

    @property
    def flops(self) -> int:
        n, k = self.in_shape[0], self.x.size // self.in_shape[0]
        return n * n * k + 2 * n * n * k   # dA @ x, then the solves

    def spec(self):
        return ({"keys": [r.key for r in self.retained]},
                {"lu": self.lu[0], "piv": self.lu[1], "x": self.x})

    def _apply(self, dAs):
        x = self.x if self.x.ndim == 2 else self.x[:, None]
        products = dAs @ x                                  # (N, n, k)
        block, shape = _columns(products, self.in_shape[0])
        return -_uncolumns(linalg.lu_solve(self.lu, block), shape)

    def _transpose(self, ys):
        n = self.in_shape[0]
        ys = ys.reshape(len(ys), n, -1)
        block, shape = _columns(ys, n)
        lam = _uncolumns(linalg.lu_solve(self.lu, block, trans=1), shape)   # (N, n, k)
        x = self.x if self.x.ndim == 2 else self.x[:, None]
        return -lam @ x.T                                   # (N, n, n)


_FACTORS: dict[int, tuple] = {}   # id(solution) -> (a reference to it, what made it)


def _remember(solution: np.ndarray, made) -> None:
    """Keep ``made`` (the LU factors a solve found its solution with) while the solution
    lives, so that the Jacobian blocks of its edges, built later, share them."""
    key = id(solution)
    _FACTORS[key] = (weakref.ref(solution), made)
    weakref.finalize(solution, _FACTORS.pop, key, None)


def _recalled(solution: np.ndarray):
    """What :func:`_remember` kept for ``solution``, or None."""
    entry = _FACTORS.get(id(solution))
    return entry[1] if entry is not None and entry[0]() is solution else None


def _solve_shapes(A_shape, B_shape) -> None:
    if len(A_shape) != 2 or A_shape[0] != A_shape[1]:
        raise ValueError(f"solve: A must be a square matrix, not shape {A_shape}")
    if len(B_shape) not in (1, 2) or B_shape[0] != A_shape[0]:
        raise ValueError(f"solve: b must have shape ({A_shape[0]},) or ({A_shape[0]}, k) for "
                         f"A of shape {A_shape}, not {B_shape}")


def _solve_value(a, b):
    A, B = np.asarray(a), np.asarray(b)
    dtype = np.result_type(A.dtype, B.dtype, np.float32)
    A, B = A.astype(dtype, copy=False), B.astype(dtype, copy=False)
    lu = _factor(A, "solve: A")
    x = np.asarray(linalg.lu_solve(lu, B))
    _remember(x, lu)
    return x


def _solve_block(i, values, y, edge):
    lu = _recalled(y)
    if lu is None:   # the solution came from elsewhere (a copy): factor A again
        lu = _factor(np.asarray(values[0], dtype=y.dtype), "solve: A")
    key = f"lu#{edge.target}"   # one factorisation, shared by the two edges
    if i == 0:
        return SolveMatrix(lu, y, key, edge.kept("y")[0].key)
    return LinearSolve(lu, np.shape(values[1]), key)


def _solve_text(pieces, params) -> str:
    a, b = ("A" if pieces[0] == "c" else pieces[0]), ("b" if pieces[1] == "c" else pieces[1])
    return f"solve({a}, {b})"


SOLVE = Rule("solve", _solve_text, _solve_value, _solve_block, ("y", ""))


def solve(a, b):
    """``np.linalg.solve(a, b)`` for a square ``a`` and ``b`` of shape (n,) or (n, k);
    on traced arrays it records :class:`SolveMatrix` and :class:`LinearSolve` edges
    (both keep one shared LU factorisation, and the first the solution).

    >>> solve(np.eye(2) * 2.0, np.array([1.0, 1.0]))
    array([0.5, 0.5])
    """
    _solve_shapes(np.shape(plain(a)), np.shape(plain(b)))
    if not isinstance(a, Traced) and not isinstance(b, Traced):
        return _solve_value(a, b)
    return record(SOLVE, a, b)


register_rules({"linalg.solve": solve})


# ------------------------------------------------------------- roots
class ImplicitSolution(Operator):
    """``dp -> -f_x^{-1} f_p dp``: the edge ``p -> x`` of a root of ``f(x, p) = 0``,
    applied by solves with ``f_x`` (LU, kept) and products with ``f_p`` (kept,
    as a sparse matrix when it is mostly zeros).

    >>> op = ImplicitSolution(linalg.lu_factor(np.array([[2.0]])), np.array([[-1.0]]),
    ...                       (1,), (1,))
    >>> op.apply(np.array([1.0]))                # x = p / 2: dx/dp = 1/2
    array([0.5])
    """

    kind = "implicit"

    def __init__(self, lu_fx, f_p: np.ndarray, x_shape, p_shape, key: str | None = None,
                 f_p_key: str | None = None):
        self.lu, f_p = lu_fx, np.asarray(f_p)
        n = lu_fx[0].shape[0]
        if f_p.shape != (n, math.prod(p_shape)):
            raise ValueError(f"f_p must have shape ({n}, {math.prod(p_shape)}), not "
                             f"{f_p.shape}")
        nonzeros = int(np.count_nonzero(f_p))
        if 2 * nonzeros < f_p.size:   # mostly zeros (p enters a few equations): keep it sparse
            self.f_p = sparse.csr_array(f_p)
            bits = nonzeros * (f_p.dtype.itemsize * 8 + 32) + (n + 1) * 32
        else:
            self.f_p = f_p
            bits = f_p.size * f_p.dtype.itemsize * 8
        retained = (Retained(key or fresh_key("lu"), _lu_bits(n, lu_fx[0].dtype),
                             what="LU factors of f_x"),
                    Retained(f_p_key or fresh_key("f_p"), bits, what="f_p"))
        super().__init__(x_shape, p_shape, lu_fx[0].dtype, retained)

    @property
    def flops(self) -> int:
        n = self.lu[0].shape[0]
        entries = self.f_p.nnz if sparse.issparse(self.f_p) else self.f_p.size
        return entries + 2 * n * n

    def spec(self):
        """f_p as a dense matrix: loading makes the same sparse-or-dense choice again."""
        f_p = self.f_p.toarray() if sparse.issparse(self.f_p) else self.f_p
        return ({"x_shape": list(self.out_shape), "p_shape": list(self.in_shape),
                 "keys": [r.key for r in self.retained]},
                {"lu": self.lu[0], "piv": self.lu[1], "f_p": f_p})

    def _apply(self, dps):
        rhs = self.f_p @ dps.reshape(len(dps), -1).T        # (n, N)
        return -linalg.lu_solve(self.lu, rhs).T

    def _transpose(self, ys):
        lam = linalg.lu_solve(self.lu, ys.reshape(len(ys), -1).T, trans=1)   # f_x^T lam = y
        return -(self.f_p.T @ lam).T


def _residual_jacobians(f, x: np.ndarray, p: np.ndarray):
    """f(x, p) and its Jacobians f_x, f_p, by tracing f once and one stacked sweep."""
    g = trace(f, x, p)
    if len(g.outputs) != 1:
        raise ValueError(f"f must return one array (the residual), not {len(g.outputs)}")
    value = np.asarray(g.values[g.outputs[0]], dtype=np.float64).reshape(-1)
    if value.size != x.size:
        raise ValueError(f"f(x, p) has {value.size} entries for {x.size} unknowns; a root "
                         f"needs as many equations as unknowns")
    J = jacobian(g, method="forward" if x.size + p.size <= value.size else "reverse")
    return value, J[:, :x.size], J[:, x.size:]


def _newton(f, x0, p, tol, max_iter):
    """Newton's method from ``x0`` on ``f(x, p) = 0``: the root, and ``f_x``, ``f_p``
    there."""
    x, pv = np.array(x0, dtype=np.float64), np.asarray(p, dtype=np.float64)
    for _ in range(max_iter):
        value, f_x, f_p = _residual_jacobians(f, x, pv)
        if np.linalg.norm(value) <= tol * (1.0 + np.linalg.norm(x)):
            return x, f_x, f_p
        x = x - linalg.lu_solve(_factor(f_x, "solve_root: f_x"), value)
        if not np.all(np.isfinite(x)):
            raise ValueError("solve_root: Newton's method diverged (a non-finite iterate)")
    value, f_x, f_p = _residual_jacobians(f, x, pv)
    if np.linalg.norm(value) > tol * (1.0 + np.linalg.norm(x)):
        raise ValueError(f"solve_root: no root to tolerance {tol} after {max_iter} Newton "
                         f"steps (|f| = {np.linalg.norm(value):.3g}); try another x0 or more "
                         f"steps")
    return x, f_x, f_p


def _root_value(p, f, x0, tol, max_iter):
    """The root, its derivative's factors (of ``f_x``, checked not singular) and ``f_p``
    remembered for the edge."""
    x, f_x, f_p = _newton(f, x0, p, tol, max_iter)
    _remember(x, (_factor(f_x, "solve_root: f_x at the root"), f_p))
    return x


def _root_block(i, values, y, edge, f, x0, tol, max_iter):
    p = np.asarray(values[0], dtype=np.float64)
    made = _recalled(y)
    if made is None:   # the root came from elsewhere (a copy): the Jacobians again
        _, f_x, f_p = _residual_jacobians(f, y, p)
        made = _factor(f_x, "solve_root: f_x at the root"), f_p
    return ImplicitSolution(*made, y.shape, p.shape, f"lu#{edge.target}",
                            f"f_p#{edge.target}")


ROOT = Rule("root", "root({0})", _root_value, _root_block)


def solve_root(f, x0, p, tol: float = 1e-12, max_iter: int = 50):
    """A root of ``f(x, p) = 0`` by Newton's method: one vertex, one implicit edge from ``p``.

    Parameters
    ----------
    f : callable
        ``f(x, p)``, a numpy function :func:`minirad.trace` can trace; its
        Jacobians ``f_x`` and ``f_p`` come from tracing it.
    x0 : numpy.ndarray
        The 1-D starting point, a constant.
    p : numpy.ndarray
        The parameters: a traced array (then the root is traced) or a plain one.
    tol : float, optional
        The relative residual accepted, ``|f| <= tol (1 + |x|)``, in [0, 1)
        (default 1e-12).
    max_iter : int, optional
        The most Newton steps (default 50).

    Returns
    -------
    numpy.ndarray or Tracked
        The root ``x(p)``: traced, with one :class:`ImplicitSolution` edge from
        ``p``, when ``p`` is traced.

    Raises
    ------
    ValueError
        For an ``x0`` that is not 1-D, non-finite inputs, a bad ``tol`` or
        ``max_iter``, a singular ``f_x``, or Newton's method diverging or not
        reaching ``tol`` in ``max_iter`` steps.
    TypeError
        For a ``tol`` that is not a number.

    See Also
    --------
    solve : ``np.linalg.solve`` on traced arrays, an implicit edge too.
    minirad.gradient : Its derivative, through the edge.

    Notes
    -----
    The iterates are not recorded: only the solution and its edge, whose label
    is ``dx/dp = -f_x^{-1} f_p`` (the implicit function theorem), applied by
    LU solves with ``f_x`` and its transpose, never formed.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import gradient, trace
    >>> f = lambda x, p: x ** 3 + x - p                  # x(p): x^3 + x = p
    >>> g = trace(lambda p: solve_root(f, np.zeros(1), p).sum(), np.array([2.0]))
    >>> float(g.values[g.outputs[0]])                    # x = 1
    1.0
    >>> float(gradient(g)[0][0])                         # dx/dp = 1 / (3 x^2 + 1)
    0.25
    """
    x = np.array(detach(x0), dtype=np.float64)
    x.flags.writeable = False
    if x.ndim != 1:
        raise ValueError(f"solve_root: x0 must be a 1-D array, not shape {x.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(plain(p)))):
        raise ValueError("solve_root: x0 and p must be finite")
    if isinstance(max_iter, bool) or not (isinstance(max_iter, int) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive int, not {max_iter!r}")
    # NaN would accept no iterate and then return the last one as a root; a
    # tolerance of 1 or more accepts points that are no root at all (x0 itself)
    what = "tol must be a number in [0, 1), the relative residual accepted (|f| <= tol (1 + |x|))"
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer,
                                                                 np.floating)):
        raise TypeError(f"{what}, not a {type(tol).__name__}")
    if not 0 <= tol < 1:
        raise ValueError(f"{what}, not {tol!r}")
    if not isinstance(p, Traced):
        return _newton(f, x, p, tol, max_iter)[0]
    return record(ROOT, p, f=f, x0=x, tol=tol, max_iter=max_iter)


# --------------------------------------------------------------------- files
def _reader(kind: str):
    """How a graph file's solve of ``kind`` is read (:func:`minirad.graph.files.register_reader`):
    its keys and its LU factors, checked non-singular."""
    count = {"solve": 1, "solve_matrix": 2, "implicit": 2}[kind]

    def read(f):
        keys = f.param("keys", list)
        if len(keys) != count or not all(isinstance(k, str) for k in keys):
            f.fail(f"{f.where}.params.keys must be {count} string(s)")
        keys = [f.key(k) for k in keys]
        lu = checked_factors(f.floats("lu"), f.array("piv"), f"{f.where}: the factors")
        if kind == "solve":
            return LinearSolve(lu, f.shape("shape"), keys[0])
        if kind == "solve_matrix":
            x = f.floats("x")
            if x.dtype != lu[0].dtype:
                f.fail(f"{f.where}.x has dtype {x.dtype}, its factors {lu[0].dtype}")
            return SolveMatrix(lu, x, *keys)
        return ImplicitSolution(lu, f.floats("f_p"), f.shape("x_shape"), f.shape("p_shape"),
                                *keys)
    return read


for _kind in ("solve", "solve_matrix", "implicit"):
    register_reader(_kind, _reader(_kind))
