"""Derivatives of derivatives: the reverse pass recorded as a graph.

A reverse sweep computes the adjoints with numbers.  Run it instead on
traced numbers and every adjoint becomes a vertex: the local partials
(``cos(x)`` for a ``sin``), their products with the adjoints and the sums
over a vertex's uses are recorded after the program's own operations.  The
result, :func:`gradient_graph`, is the lecture's picture of reverse mode as
"more nodes of the graph": one LCG whose inputs are the program's inputs,
whose first vertices are the program itself (the forward part, numbered as
:func:`minirad.trace` numbers them) and whose outputs are the gradient.

Everything minirad does to a graph it then does to the gradient: its
Jacobian is the Hessian (:func:`hessian`); a forward sweep along ``v`` is a
Hessian-vector product, forward over reverse (:func:`hvp`), which costs a
few gradients and forms no Hessian; and Algorithm 1 sampled on it gives
unbiased Hessian estimates.

>>> from minirad import ops
>>> f = lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2)   # the lecture's example
>>> G = gradient_graph(f, 2.0, 5.0)
>>> G.names[G.outputs[0]], G.names[G.outputs[1]]
('x̄1', 'x̄2')
>>> [round(G.value(v), 3) for v in G.outputs]                # the gradient, as values
[5.5, 1.716]
>>> hessian(f, 2.0, 5.0).round(4)                            # the Jacobian of G
array([[-0.25  ,  1.    ],
       [ 1.    , -0.9589]])
>>> hvp(f, 2.0, 5.0, v=[1.0, 0.0])                           # its first column, no H formed
[-0.25, 1.0]

How it is recorded: ``f`` runs on the tracer's own traced numbers
(:mod:`minirad.tracing.tracer`) whose values are themselves traced numbers of
an outer trace, so every operation of ``f`` happens in the outer trace too;
then the reverse sweep runs over the inner tape, with each partial computed
by the table's own rule (:func:`minirad.tracing.ops.traced_partials`) on the
outer values, so every operation of the table has its second derivative
without a second rule.  Programs of numbers and numpy array programs are
both recorded with one vertex per number: an array argument becomes an
object array of traced numbers (so ``@``, ``sum``, indexing and the table's
functions work, an entry or a sum staying a 0-d array as numpy's entries
do; numpy functions with no loop for Python objects, such as
``np.linalg.inv``, do not), and its entries are inputs named ``X[0]``,
``X[1]``, ... in C order.
"""

from __future__ import annotations

import inspect
from numbers import Real
from typing import NamedTuple

import numpy as np

from ..graph.lcg import LCG
from ..tracing.naming import output_names
from ..tracing.ops import Op, traced_partials
from ..tracing.tracer import (
    FUNCTIONS,
    TRACED,
    Tape,
    argument_positions,
    record,
    trace,
)
from .jacobians import jacobian
from .sweeps import jvp

__all__ = ["ReversePass", "backward_vertices", "gradient_graph", "hessian", "hvp",
           "recorded_gradient"]


def _flat_arguments(args, positions) -> list:
    """The numbers of the differentiated arguments, in order (arrays in C order)."""
    flat = []
    for p in positions:
        arg = args[p]
        if isinstance(arg, np.ndarray):
            if arg.dtype.kind not in "fiu":
                raise TypeError(f"argument {p} is an array of dtype {arg.dtype}; higher "
                                f"derivatives need real numbers")
            flat.extend(float(x) for x in arg.ravel())
        elif isinstance(arg, (list, tuple)):
            flat.extend(arg)
        else:
            flat.append(arg)
    return flat


def _checked(flat: list) -> list:
    for x in flat:
        if isinstance(x, (bool, np.bool_)) or not isinstance(x, Real):
            raise TypeError(f"an input is a {type(x).__name__}; differentiate by numbers, lists "
                            f"of numbers or numpy arrays")
    return flat


class ReversePass(NamedTuple):
    """What :func:`recorded_gradient` recorded: the gradient (one adjoint per input, of
    the values' type: float or traced number), the tape of ``f``, the adjoint of
    every value the sweep reached, and the tape position of ``f``'s result (None for
    a constant)."""

    gradient: list
    tape: Tape
    adjoints: dict
    result: int | None


class Cells(np.ndarray):
    """An array of traced numbers (an array argument in the recorded pass) whose
    elementwise numpy functions are recorded entry by entry, as the operation
    table's own entries.  numpy's loops over Python objects would not do:
    ``np.maximum`` returns its constant operand itself where it wins, a float on
    which a later ``np.sqrt`` finds no method, and ``np.float_power`` has no loop
    for objects at all."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        plain = [_plain(a) for a in inputs]
        if kwargs.get("out") is not None:   # np.mean divides its sum in place
            kwargs["out"] = tuple(_plain(a) for a in kwargs["out"])
        op = FUNCTIONS.get(ufunc.__name__)
        if method == "__call__" and isinstance(op, Op) and not kwargs:
            out = np.frompyfunc(lambda *xs: record(op, *xs), len(plain), 1)(*plain)
        else:
            out = getattr(ufunc, method)(*plain, **kwargs)
        if type(out) in TRACED:   # a reduction to one number (x.sum(), np.mean)
            return _cell(out)
        return out.view(Cells) if isinstance(out, np.ndarray) and out.dtype == object else out

    def __getitem__(self, index):
        # an entry stays a 0-d array, as numpy's own float64 entries stay numpy scalars:
        # a bare traced number would take x[0] * W for a product by a constant array
        # and refuse np.sum(x[0])
        out = super().__getitem__(index)
        return out if isinstance(out, np.ndarray) else _cell(out)


def _plain(a):
    return a.view(np.ndarray) if isinstance(a, Cells) else a


def _cell(number) -> Cells:
    """A traced number as a 0-d :class:`Cells`."""
    holder = np.empty((), dtype=object)
    holder[()] = number
    return holder.view(Cells)


def recorded_gradient(f, args, positions, inputs) -> ReversePass:
    """Run ``f`` on :class:`Recorded` numbers whose values are ``inputs`` (one per
    number of the differentiated arguments), then its reverse sweep on those
    values.

    >>> recorded_gradient(lambda x, y: x * y, (3.0, 4.0), [0, 1], [3.0, 4.0]).gradient
    [4.0, 3.0]
    """
    tape = Tape()
    numbers = iter([tape.append(x, True) for x in inputs])
    call = list(args)
    for p in positions:
        arg = args[p]
        if isinstance(arg, np.ndarray):
            cells = np.empty(arg.shape, dtype=object)
            for index in np.ndindex(arg.shape):
                cells[index] = next(numbers)
            call[p] = cells.view(Cells)
        elif isinstance(arg, (list, tuple)):
            call[p] = [next(numbers) for _ in arg]
        else:
            call[p] = next(numbers)
    result = f(*call)
    if isinstance(result, np.ndarray) and result.shape == () and result.dtype == object:
        result = result.item()
    if type(result) not in TRACED:
        if isinstance(result, Real) and not isinstance(result, bool):
            return ReversePass([0.0] * len(inputs), tape, {}, None)  # a constant: zero
        raise TypeError(f"f returned a {type(result).__name__}; a gradient is of a function "
                        f"with one number as its result")
    if result.tape is not tape:
        raise ValueError("f's result was not computed from this call's inputs")
    adjoints = {result.index: 1.0}
    for t in range(result.index, len(inputs) - 1, -1):
        adjoint, step = adjoints.get(t), tape.steps[t]
        if adjoint is None or step is None:
            continue
        op, operands, _ = step
        if not isinstance(op, Op):
            raise TypeError(f"{op.name} has no rule on numbers; higher derivatives record "
                            f"programs of numbers, and arrays as arrays of numbers")
        wrt = [i for i, o in enumerate(operands) if type(o) is int]
        outer = tuple(tape.values[o] if type(o) is int else o for o in operands)
        for i, partial in zip(wrt, traced_partials(op, outer, tape.values[t], wrt)):
            term = _times(adjoint, partial)
            if term is not None:
                u = operands[i]
                adjoints[u] = term if u not in adjoints else adjoints[u] + term
    return ReversePass([adjoints.get(i, 0.0) for i in range(len(inputs))], tape, adjoints,
                       result.index)


def _times(adjoint, partial):
    """adjoint x partial, without recording a product by a constant 1 or 0."""
    if isinstance(partial, float):
        if partial == 0.0:
            return None
        if partial == 1.0:
            return adjoint
    if isinstance(adjoint, float) and adjoint == 1.0:
        return partial
    return adjoint * partial


def gradient_graph(f, *args, wrt=None) -> LCG:
    """The gradient of ``f`` (a function with one number as its result) at ``args``,
    recorded as one LCG: the program's vertices first, then the reverse pass's.

    Inputs and forward vertices are named as :func:`minirad.trace` names them;
    the adjoint of a vertex ``v3`` is ``v̄3`` (the last of the recorded sums that
    make it), the outputs are the adjoints of the inputs (``x̄1``, ...), and the
    other vertices of the reverse pass (partials, products, partial sums) are
    ``b₀``, ``b₁``, ...  :func:`backward_vertices` tells the two parts apart.

    >>> G = gradient_graph(lambda x: x * x * x, 2.0)     # d/dx x^3 = 3x^2
    >>> G.value(G.outputs[0]), G.n_vertices - len(backward_vertices(G))
    (12.0, 3)
    """
    positions = argument_positions(wrt, len(args))
    _checked(_flat_arguments(args, positions))
    outer_args = list(args)
    for p in positions:
        if isinstance(args[p], np.ndarray):
            outer_args[p] = [float(x) for x in args[p].ravel()]
    seen = {}

    def gradient_of_f(*outer):
        numbers = _flat_arguments(outer, positions)
        seen["pass"] = recorded_gradient(f, args, positions, numbers)
        return tuple(seen["pass"].gradient)

    try:
        gradient_of_f.__signature__ = inspect.signature(f)
    except (TypeError, ValueError):
        pass
    G = trace(gradient_of_f, *outer_args, wrt=positions)
    return _named(G, seen["pass"])


def _named(G: LCG, recorded: ReversePass) -> LCG:
    """``G`` with the names of :func:`gradient_graph`."""
    names, tape, adjoints, result = list(G.names), recorded.tape, recorded.adjoints, \
        recorded.result
    outer = [value.index if type(value) in TRACED else -1 for value in tape.values]
    n_forward = max(outer) + 1
    if result is not None and tape.steps[result] is not None:
        names[outer[result]] = output_names([names[i] for i in G.inputs], 1, False)[0]
    adjoint_names = {}
    for i, w in enumerate(G.outputs):  # the gradient: the inputs' adjoints
        if w >= n_forward:
            adjoint_names[w] = _bar(names[G.inputs[i]])
    taken = set(names[:n_forward]) | set(adjoint_names.values())
    for u in range(len(tape.values)):  # the other adjoints recorded as vertices of their own
        a = adjoints.get(u)
        if type(a) in TRACED and a.index >= n_forward and outer[u] >= 0:
            bar = _bar(names[outer[u]])
            if bar not in taken and a.index not in adjoint_names:
                adjoint_names[a.index] = bar
                taken.add(bar)
    # the rest of the reverse pass, numbered b₀, b₁, ... in order, with no gaps
    others = (v for v in range(n_forward, G.n_vertices) if v not in adjoint_names)
    for j, v in enumerate(others):
        names[v] = _backward_name(j)
    for v, name in adjoint_names.items():
        names[v] = name
    return LCG(names, G.sources, G.targets, G.labels, G.inputs, G.outputs, values=G.values,
               ops=G.ops)


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _backward_name(j: int) -> str:
    """``b₀``, ``b₁``, ...: subscripts, which no parameter name of ``f`` can hold."""
    return "b" + str(j).translate(_SUBSCRIPTS)


def _bar(name: str) -> str:
    """``x1`` -> ``x̄1``: the adjoint's name, a bar over the first letter."""
    return name[0] + "\u0304" + name[1:]


def backward_vertices(G: LCG) -> list[int]:
    """The vertices :func:`gradient_graph` recorded during the reverse pass."""
    return [v for v, name in enumerate(G.names) if "\u0304" in name or (
        name[:1] == "b" and name[1:] and set(name[1:]) <= set("₀₁₂₃₄₅₆₇₈₉"))]


def hessian(f, *args, wrt=None) -> np.ndarray:
    """The Hessian of ``f`` at ``args``: the Jacobian of :func:`gradient_graph`, dense,
    rows and columns in the order of the inputs (arrays flattened in C order).

    >>> hessian(lambda x, y: x * x * y, 3.0, 2.0)       # [[2y, 2x], [2x, 0]]
    array([[4., 6.],
           [6., 0.]])
    """
    return jacobian(gradient_graph(f, *args, wrt=wrt))


def hvp(f, *args, v, wrt=None) -> list:
    """The Hessian-vector product ``H v`` of ``f`` at ``args``, forward over reverse: a
    forward sweep along ``v`` over the recorded reverse pass (:func:`gradient_graph`).
    No Hessian is formed: it costs a few gradients.

    ``v`` and the result take the form of :func:`minirad.jvp`'s on a graph of
    numbers: one entry per number differentiated (array arguments flattened in C
    order), a float, or an array of shape ``(k,)`` for k vectors at once.

    >>> hvp(lambda x, y: x * x * y, 3.0, 2.0, v=[1.0, 1.0])
    [10.0, 6.0]
    """
    positions = argument_positions(wrt, len(args))
    flat = _checked(_flat_arguments(args, positions))
    v = np.asarray(v, dtype=float)
    if v.ndim not in (1, 2) or len(v) != len(flat):
        raise ValueError(f"v has shape {v.shape}; give one entry per input ({len(flat)}), "
                         f"each a number, or an array of shape (k,) for k vectors")
    if not np.isfinite(v).all():
        raise ValueError("v has non-finite entries")
    return jvp(gradient_graph(f, *args, wrt=wrt), list(v))
