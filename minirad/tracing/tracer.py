"""The tracer of numbers, written plainly: read this one first.

A :class:`Traced` number is a value and the number of its vertex.  Each
operation on it looks the operation up in the table
(:data:`minirad.tracing.ops.OPS`), asks :func:`~minirad.tracing.ops.evaluate`
for the value and the local partials, and at once appends the new vertex
and one in-edge per traced operand to a :class:`Recorder`.  Plain numbers
are constants: they end up inside the partials (the edge of ``0.5 * x``
carries 0.5), never as vertices.  Control flow follows the values
(comparisons read them), so the graph is the path this call took.  When
``f`` returns, the recorder's lists become an :class:`~minirad.graph.lcg.LCG`.

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

:func:`minirad.trace` gives the same graph, bit for bit (the suite checks
this on random programs), but runs programs of numbers on
:mod:`minirad.tracing.tape`, an engine that records the same thing several
times faster: a code per operation, partials worked out afterwards for the
whole tape at once.  Read that one second, if at all.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from ..graph.lcg import LCG
from .naming import ARRAY_HINT, argument_positions, named_vertices, parameter_names
from .ops import OPS, ComparesValues, NonFiniteError, evaluate

__all__ = ["Recorder", "Traced", "trace"]


class Recorder:
    """The graph as it grows: per vertex its value, template and in-edges
    (pairs of a predecessor and a partial)."""

    def __init__(self):
        self.values, self.templates, self.in_edges = [], [], []

    def vertex(self, value: float, template: str, in_edges) -> int:
        self.values.append(value)
        self.templates.append(template)
        self.in_edges.append(in_edges)
        return len(self.values) - 1


class Traced(ComparesValues):
    """A traced number: its value and its vertex in ``recorder``."""

    __slots__ = ("recorder", "index", "value")

    def __init__(self, recorder: Recorder, index: int, value: float):
        self.recorder, self.index, self.value = recorder, index, value

    def __repr__(self):
        return f"Traced(v{self.index} = {self.value!r})"

    def _record(self, op, args):
        """Record the operation ``op`` on ``args`` (traced numbers and constants);
        :mod:`minirad.ops` calls this for ``ops.sin(x)`` and the like."""
        recorder = self.recorder
        floats = tuple(_number(a, op, recorder) for a in args)
        wrt = [i for i, a in enumerate(args) if isinstance(a, Traced)]
        try:
            value, partials = evaluate(op, floats, wrt)
        except NonFiniteError as error:
            operands = ", ".join(f"v{a.index}" if isinstance(a, Traced) else repr(f)
                                 for a, f in zip(args, floats))
            raise ValueError(f"{op.name}({operands}) at vertex v{len(recorder.values)} is not "
                             f"finite: {error}") from None
        # the template names the operands {0}, {1} in order of first appearance
        # (x * x reads {0} * {0}) and writes constants in
        slots, pieces = {}, []
        for a, f in zip(args, floats):
            traced = isinstance(a, Traced)
            pieces.append(f"{{{slots.setdefault(a.index, len(slots))}}}" if traced else repr(f))
        in_edges = {}  # one edge per predecessor: x * x has one edge, partial 2x
        for i, d in zip(wrt, partials):
            u = args[i].index
            in_edges[u] = in_edges[u] + d if u in in_edges else d
        v = recorder.vertex(value, op.template.format(*pieces), list(in_edges.items()))
        return Traced(recorder, v, value)

    # arithmetic: one entry of the table each, both ways round
    def __add__(self, other):
        return self._record(OPS["add"], (self, other))

    def __radd__(self, other):
        return self._record(OPS["add"], (other, self))

    def __sub__(self, other):
        return self._record(OPS["sub"], (self, other))

    def __rsub__(self, other):
        return self._record(OPS["sub"], (other, self))

    def __mul__(self, other):
        return self._record(OPS["mul"], (self, other))

    def __rmul__(self, other):
        return self._record(OPS["mul"], (other, self))

    def __truediv__(self, other):
        return self._record(OPS["div"], (self, other))

    def __rtruediv__(self, other):
        return self._record(OPS["div"], (other, self))

    def __pow__(self, other):
        return self._record(OPS["pow"], (self, other))

    def __rpow__(self, other):
        return self._record(OPS["pow"], (other, self))

    def __neg__(self):
        return self._record(OPS["neg"], (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return self._record(OPS["abs"], (self,))

    def __float__(self):
        raise TypeError(f"float() of a traced number (v{self.index}) would drop its "
                        f"derivative; use minirad.ops (ops.sin, ...) instead of math")


# numpy applies np.sin, np.exp, np.hypot, ... to an object it does not know by calling
# its method of that name: so np.tanh(W @ x) works on (object arrays of) traced numbers
for _op in OPS.values():
    if _op.arity == 1 and _op.ufunc == _op.name:
        setattr(Traced, _op.name, lambda self, _op=_op: self._record(_op, (self,)))
    elif _op.arity == 2 and _op.ufunc == _op.name:
        setattr(Traced, _op.name, lambda self, other, _op=_op: self._record(_op, (self, other)))


def _number(x, op, recorder: Recorder) -> float:
    """An operand's value as a float; a traced number of another trace, a boolean or a
    non-number is refused."""
    if isinstance(x, Traced):
        if x.recorder is not recorder:
            raise ValueError(f"{op.name} mixes numbers from two different traces")
        return x.value
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"unsupported operand type for {op.name}: {type(x).__name__}; traced "
                        f"numbers combine with other traced numbers and real numbers"
                        f"{ARRAY_HINT if isinstance(x, np.ndarray) else ''}")
    try:
        return float(x)
    except OverflowError:
        raise ValueError(f"{op.name}: a constant integer too large for a float64") from None


def trace(f, *args, wrt=None) -> LCG:
    """Run ``f(*args)`` on traced numbers and return its LCG: what
    :func:`minirad.trace` does for a program of numbers.

    Arguments are numbers or lists of numbers (one input per element, named
    ``x[0]``, ``x[1]``, ... after the parameter ``x``); those not listed in
    ``wrt`` (default: all) are passed as they are.  An output that is an
    input, is used later or is returned twice gets its own vertex, joined by
    a unit ``copy`` edge; a constant output is a vertex without in-edges.
    """
    recorder = Recorder()
    names = parameter_names(f, len(args))
    call, input_names = list(args), []
    for position in argument_positions(wrt, len(args)):
        arg, name = args[position], names[position]
        if isinstance(arg, (list, tuple)):
            call[position] = [_input(recorder, x, f"{name}[{j}]") for j, x in enumerate(arg)]
            input_names += [f"{name}[{j}]" for j in range(len(arg))]
        else:
            call[position] = _input(recorder, arg, name)
            input_names.append(name)
    n_inputs = len(recorder.values)

    result = f(*call)
    several = isinstance(result, (tuple, list, np.ndarray))  # an array: a 1-D one
    results = list(result) if several else [result]
    used = {u for in_edges in recorder.in_edges for u, _ in in_edges}
    returned = [r.index for r in results if isinstance(r, Traced)]
    outputs = []
    for r in results:
        if isinstance(r, Traced):
            if r.recorder is not recorder:
                raise ValueError("an output was not computed from this trace's inputs")
            v = r.index
            if v < n_inputs or v in used or returned.count(v) > 1:
                v = r._record(OPS["copy"], (r,)).index
        elif isinstance(r, Real) and not isinstance(r, bool):
            v = recorder.vertex(_finite(r, "an output"), repr(float(r)), [])
        else:
            raise TypeError(f"f returned a {type(r).__name__}; outputs are traced numbers or "
                            f"finite numbers")
        outputs.append(v)

    n = len(recorder.values)
    named = named_vertices(n, input_names, outputs, several)
    sources = [u for in_edges in recorder.in_edges for u, _ in in_edges]
    targets = [v for v, in_edges in enumerate(recorder.in_edges) for _ in in_edges]
    partials = [d for in_edges in recorder.in_edges for _, d in in_edges]
    return LCG([named.get(v, f"v{v}") for v in range(n)], sources, targets, partials,
               range(n_inputs), outputs, values=recorder.values, ops=recorder.templates)


def _input(recorder: Recorder, x, name: str) -> Traced:
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"input {name} is a {type(x).__name__}; trace takes numbers and lists "
                        f"of numbers")
    value = _finite(x, f"input {name}")
    return Traced(recorder, recorder.vertex(value, "input", []), value)


def _finite(x: Real, what: str) -> float:
    try:
        value = float(x)
    except OverflowError:  # an integer beyond 1.8e308
        value = math.inf
    if not math.isfinite(value):
        raise ValueError(f"{what} is {x!r:.40}; a trace's inputs and outputs are finite")
    return value
