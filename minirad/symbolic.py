"""Symbolic differentiation with SymPy, and the expression swell that motivates AD.

A minirad program runs on numbers, on traced scalars (which record its LCG)
and, here, on SymPy symbols: :func:`formula` runs it on :class:`Symbolic`
values, whose elementary functions are SymPy's (the table :data:`RULES`,
one entry per operation of :data:`minirad.tracing.ops.OPS`).  SymPy then
differentiates the formula by its rules (:func:`derivative`), which is what
the AD lecture calls symbolic differentiation.

The catch is size.  A formula is a tree: a subexpression used twice is
written out twice, and the product and chain rules copy their operands into
every term.  :func:`tree_size` counts a tree's nodes (each repeated
subexpression again, counted by dynamic programming over the distinct ones,
so even 10^30 nodes take microseconds); :func:`cse_size` counts what is left
after SymPy's common-subexpression elimination (``sympy.cse``) names each
repeated subexpression once.  :func:`swell` sets both beside the edges of
the program's LCG, which is what a sweep multiplies along: the gradient of
``prod(x_1..x_n)`` is n products of n - 1 factors, n^2 nodes as a tree, while
the LCG has 2(n - 1) edges; ``x_(k+1) = sin(x_k) x_k`` doubles its tree at
every step, and its derivative grows faster still.

SymPy is an optional dependency: ``pip install 'minirad[symbolic]'``.

>>> from minirad import examples
>>> f = formula(examples.lecture_program, 2.0, 5.0)
>>> f.outputs
(x1*x2 + log(x1) - sin(x2),)
>>> derivative(f)
Matrix([[x2 + 1/x1, x1 - cos(x2)]])
>>> jacobian(examples.lecture_program, 2.0, 5.0).round(3)      # the lecture's numbers
array([[5.5  , 1.716]])
>>> swell(examples.product_program, *[1.0] * 8)
Swell(n_inputs=8, formula_nodes=9, derivative_nodes=64, cse_nodes=52, lcg_edges=14)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .tracing import trace

__all__ = ["RULES", "Formula", "Swell", "Symbolic", "cse_size", "derivative", "formula",
           "jacobian", "swell", "sympy", "tree_size"]

EXTRA = "pip install 'minirad[symbolic]'"


def sympy():
    """The sympy module, imported on first use; a clear error when it is missing."""
    try:
        return importlib.import_module("sympy")
    except ImportError:
        raise ModuleNotFoundError(f"minirad.symbolic needs SymPy, an optional dependency: "
                                  f"{EXTRA}") from None


def _sigmoid(x):
    return 1 / (1 + sympy().exp(-x))


_STEPS: dict = {}


def _step(name: str):
    """A piecewise-constant function (``floor``, ``sign``, ...) as SymPy sees it with
    minirad's convention: derivative 0 everywhere, its jumps included (SymPy's own
    ``floor`` has no derivative and its ``sign`` a Dirac delta).  ``lambdify``
    evaluates it with numpy's function of the same name."""
    if name not in _STEPS:
        sp = sympy()

        def fdiff(self, argindex=1):
            return sp.S.Zero

        def numpycode(self, printer):
            return f"numpy.{name}({printer._print(self.args[0])})"

        _STEPS[name] = type(f"step_{name}", (sp.Function,),
                            {"nargs": 1, "fdiff": fdiff, "_numpycode": numpycode})
    return _STEPS[name]


def _cbrt(x):
    return _step("sign")(x) * sympy().Abs(x) ** sympy().Rational(1, 3)


def _heaviside(x, h):
    sp = sympy()
    return sp.Piecewise((0, x < 0), (h, sp.Eq(x, 0)), (1, True))


#: each elementary operation of minirad.tracing.ops.OPS as SymPy builds it
RULES: dict[str, Callable] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "maximum": lambda a, b: sympy().Max(a, b),
    "minimum": lambda a, b: sympy().Min(a, b),
    "neg": lambda x: -x,
    "abs": lambda x: sympy().Abs(x),
    "sin": lambda x: sympy().sin(x),
    "cos": lambda x: sympy().cos(x),
    "tan": lambda x: sympy().tan(x),
    "exp": lambda x: sympy().exp(x),
    "log": lambda x: sympy().log(x),
    "log1p": lambda x: sympy().log(1 + x),
    "sqrt": lambda x: sympy().sqrt(x),
    "tanh": lambda x: sympy().tanh(x),
    "sigmoid": _sigmoid,
    "relu": lambda x: sympy().Max(x, 0),
    "arctan": lambda x: sympy().atan(x),
    "copy": lambda x: x,
    "arcsin": lambda x: sympy().asin(x),
    "arccos": lambda x: sympy().acos(x),
    "arcsinh": lambda x: sympy().asinh(x),
    "arccosh": lambda x: sympy().acosh(x),
    "arctanh": lambda x: sympy().atanh(x),
    "sinh": lambda x: sympy().sinh(x),
    "cosh": lambda x: sympy().cosh(x),
    "exp2": lambda x: 2 ** x,
    "expm1": lambda x: sympy().exp(x) - 1,
    "log2": lambda x: sympy().log(x) / sympy().log(2),
    "log10": lambda x: sympy().log(x) / sympy().log(10),
    "cbrt": _cbrt,
    "reciprocal": lambda x: 1 / x,
    "deg2rad": lambda x: x * sympy().pi / 180,
    "rad2deg": lambda x: x * 180 / sympy().pi,
    "sign": lambda x: _step("sign")(x),
    "floor": lambda x: _step("floor")(x),
    "ceil": lambda x: _step("ceil")(x),
    "trunc": lambda x: _step("trunc")(x),
    "rint": lambda x: _step("rint")(x),
    "arctan2": lambda a, b: sympy().atan2(a, b),
    "hypot": lambda a, b: sympy().sqrt(a ** 2 + b ** 2),
    "logaddexp": lambda a, b: sympy().log(sympy().exp(a) + sympy().exp(b)),
    "logaddexp2": lambda a, b: sympy().log(2 ** a + 2 ** b) / sympy().log(2),
    "float_power": lambda a, b: a ** b,
    "copysign": lambda a, b: sympy().Abs(a) * _step("sign")(b),
    "floor_divide": lambda a, b: _step("floor")(a / b),
    "fmod": lambda a, b: a - b * _step("trunc")(a / b),
    "remainder": lambda a, b: a - b * _step("floor")(a / b),
    "heaviside": _heaviside,
}


def _expr(x):
    return x.expr if isinstance(x, Symbolic) else x


class Symbolic:
    """A SymPy expression that a minirad program can compute with: Python's
    arithmetic and minirad's elementary functions (``ops.sin`` and the rest,
    which hand an operand with a ``_record`` method the operation to apply)
    build a bigger expression.

    >>> from minirad import ops
    >>> x = Symbolic(sympy().Symbol("x"))
    >>> ops.sin(x * x) + 1
    Symbolic(sin(x**2) + 1)
    """

    __slots__ = ("expr",)

    def __init__(self, expr):
        self.expr = expr

    def __repr__(self):
        return f"Symbolic({self.expr})"

    def _record(self, op, args):
        if op.name not in RULES:
            raise TypeError(f"minirad.symbolic has no SymPy rule for {op.name!r}; it knows "
                            f"{', '.join(sorted(RULES))}")
        return Symbolic(RULES[op.name](*map(_expr, args)))

    def _binary(name, reflected=False):   # builds the methods below, then goes
        def method(self, other):
            if not isinstance(other, (Symbolic, int, float, np.integer, np.floating)):
                return NotImplemented
            a, b = (_expr(other), self.expr) if reflected else (self.expr, _expr(other))
            return Symbolic(RULES[name](a, b))
        return method

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("div"), _binary("div", True)
    __pow__, __rpow__ = _binary("pow"), _binary("pow", True)
    del _binary

    def __neg__(self):
        return Symbolic(-self.expr)

    def __pos__(self):
        return self

    def __abs__(self):
        return Symbolic(RULES["abs"](self.expr))

    def _no_branch(self, *other):
        raise TypeError("a program run on symbols cannot branch on a value (if x > 0, max, "
                        "...); write the branch with ops.maximum, ops.relu or ops.abs")

    __bool__ = __lt__ = __le__ = __gt__ = __ge__ = _no_branch


@dataclass(frozen=True)
class Formula:
    """A program written out as SymPy expressions: its ``inputs`` (real
    symbols named as the LCG names its inputs) and one expression per
    output."""

    inputs: tuple
    outputs: tuple


def formula(f: Callable, *point: float) -> Formula:
    """Run ``f`` on symbols, one per scalar argument: the formula it computes.

    The point only names the inputs: ``f`` is traced there
    (:func:`minirad.trace`) and each symbol takes its input vertex's name.

    >>> from minirad import examples
    >>> formula(examples.figure1_program, 1.0, 2.0).outputs
    (x2*exp(2*x1)*sin(x2),)
    """
    graph = trace(f, *point)
    shapes = [graph.shape(v) for v in graph.inputs]
    if len(graph.inputs) != len(point) or any(shapes):
        raise ValueError(f"formula takes one number per argument of f, not arrays: "
                         f"{len(point)} arguments made {len(graph.inputs)} inputs of shapes "
                         f"{', '.join(map(str, shapes))}")
    symbols = tuple(sympy().Symbol(graph.name(v), real=True) for v in graph.inputs)
    result = f(*map(Symbolic, symbols))
    results = result if isinstance(result, (tuple, list)) else (result,)
    return Formula(symbols, tuple(sympy().sympify(_expr(r)) for r in results))


def derivative(form: Formula):
    """The Jacobian of a :class:`Formula` by SymPy's rules: a SymPy Matrix,
    rows the outputs, columns the inputs."""
    return sympy().Matrix(form.outputs).jacobian(form.inputs)


def jacobian(f: Callable, *point: float) -> np.ndarray:
    """SymPy's Jacobian of ``f`` evaluated at ``point`` (by ``sympy.lambdify``
    over numpy): shape (outputs, inputs), as :func:`minirad.jacobian` returns."""
    form = formula(f, *point)
    evaluate = sympy().lambdify(form.inputs, derivative(form), modules="numpy", cse=True)
    return np.asarray(evaluate(*point), dtype=np.float64).reshape(
        len(form.outputs), len(form.inputs))


def _entries(exprs) -> list:
    """One expression, or a list, tuple or Matrix of them, as a list of expressions."""
    sp = sympy()
    if isinstance(exprs, sp.MatrixBase):
        return list(exprs)
    entries = []
    for e in exprs if isinstance(exprs, (list, tuple)) else [exprs]:
        try:
            entries.append(sp.sympify(e, strict=True))   # strict: no parsing of strings
        except sp.SympifyError:
            raise TypeError(f"give SymPy expressions (one, a list or a Matrix), not "
                            f"{type(e).__name__} {e!r:.40}") from None
    return entries


def tree_size(exprs) -> int:
    """Nodes of the expression trees of ``exprs`` (one expression, a list or a
    Matrix), summed, with nothing shared: a subexpression used k times counts
    k times.  A node is SymPy's: a symbol, a number, or an operation over its
    ``args`` (``x - y`` is ``Add(x, Mul(-1, y))``, 5 nodes).

    >>> x = sympy().Symbol("x")
    >>> tree_size(x * (x + 1)), tree_size([x, x + 1])
    (5, 4)
    """
    sizes: dict = {}
    total = 0
    for root in _entries(exprs):
        stack = [root]                       # without recursion: deep trees are fine
        while stack:
            e = stack[-1]
            waiting = [a for a in e.args if a not in sizes]
            if waiting:
                stack.extend(waiting)
                continue
            stack.pop()
            sizes[e] = 1 + sum(sizes[a] for a in e.args)
        total += sizes[root]
    return total


def cse_size(exprs) -> int:
    """Nodes left after ``sympy.cse``: the trees of the named subexpressions
    (``x0 = ...``) plus those of the reduced expressions, in which a named
    subexpression is one leaf.

    >>> x = sympy().Symbol("x")
    >>> e = sympy().sin(x + 1) * (x + 1)
    >>> tree_size(e), cse_size(e)          # x0 = x + 1 (3 nodes); x0*sin(x0) (4 nodes)
    (8, 7)
    """
    named, reduced = sympy().cse(_entries(exprs))
    return tree_size([value for _, value in named]) + tree_size(reduced)


@dataclass(frozen=True)
class Swell:
    """The size of one program's derivative, written three ways: as trees
    (``derivative_nodes``), after common-subexpression elimination
    (``cse_nodes``), and as the LCG a sweep runs over (``lcg_edges``, one
    multiplication each per seed); ``formula_nodes`` is the program itself
    as a tree."""

    n_inputs: int
    formula_nodes: int
    derivative_nodes: int
    cse_nodes: int
    lcg_edges: int


def swell(f: Callable, *point: float) -> Swell:
    """Measure :class:`Swell` for ``f``, its LCG traced at ``point``.

    >>> from minirad import examples
    >>> swell(examples.composition_program(4), 0.5)
    Swell(n_inputs=1, formula_nodes=39, derivative_nodes=353, cse_nodes=73, lcg_edges=12)
    """
    form = formula(f, *point)
    entries = list(derivative(form))
    return Swell(len(form.inputs), tree_size(form.outputs), tree_size(entries),
                 cse_size(entries), trace(f, *point).n_edges)
