"""Source transformation: a traced graph written out as a Python program.

The third way to a derivative, beside tracing and a static graph: the derivative
is a program one reads.  :func:`codegen` writes the recording of a trace (its
tape: every operation, with its operands) as a straight line of numpy calls,
the Wengert list made executable, with the graph's vertex names as variable
names and one comment per vertex naming the rule it comes from.  Three modes:

* ``"forward"``: the program itself, ``y = f(x)``;
* ``"tangent"``: forward mode, each tangent computed beside its value,
  ``(y, y_dot) = f(x, x_dot)``;
* ``"adjoint"``: reverse mode, the forward statements then the adjoint ones in
  reverse order, ``(y, x_bar) = f(x, y_bar)`` (``y_bar`` is 1 for a program that
  returns one number).

Each derivative statement comes from the rule of one edge: an elementwise
operation's partial is the formula of the operation table
(:mod:`minirad.tracing.sources` reads it off the rule), a matrix product's
products are written out, and every other rule's Jacobian block is built from
the forward values and applied (``J.apply_transpose(u)``).

Preaccumulation (``preaccumulate=True``, the default) makes the derivative
cheaper before it is written, as the course's vertex elimination does: an
intermediate vertex of an elementwise chain is eliminated, its diagonal blocks
multiplied into its neighbours' (with constant factors such as 0.01 or -1
multiplied at generation time, never in the program), so the derivative makes
fewer numpy calls than the graph has edges; the saving is :attr:`Code.saved`.
Products are then reordered, and the derivative agrees with
:func:`minirad.gradient` to rounding; with ``preaccumulate=False`` the code makes
the reference sweep's operations in its order and agrees to the last bit.
Cotangents are added into an array the program owns (the ``add!!`` of
:mod:`minirad.exact.cotangents`), and every variable is deleted after its last
read.  Every value the program read (a comparison, an index, :func:`detach`) is
a guard that raises ``ValueError`` when new inputs would take another path.

>>> from minirad import ops, trace
>>> g = trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
>>> code = codegen(g)
>>> print(code)
def adjoint(x1, x2, y_bar):
    \"\"\"The adjoint of a traced graph (7 vertices, 8 edges),
    written by minirad.codegen.
    The derivative makes 6 operations (preaccumulation eliminated 4 vertices of
    elementwise chains first).\"\"\"
    v2 = math.log(x1)                         # v2 = log(x1)
    dv2_dx1 = 1.0 / x1                        # dv2/dx1
    dy_dx1 = dv2_dx1 + x2                     # dy/dx1, preaccumulated
    del dv2_dx1
    v3 = x1 * x2                              # v3 = x1 * x2
    v4 = v2 + v3                              # v4 = v2 + v3
    v5 = math.sin(x2)                         # v5 = sin(x2)
    dv5_dx2 = sin_d0(x2, v5)                  # dv5/dx2
    dy_dx2 = x1 - dv5_dx2                     # dy/dx2, preaccumulated
    del dv5_dx2
    y = v4 - v5                               # y = v4 - v5
    finite((x1, x2, v2, v3, v4, v5, y,))      # every value is finite, as the trace's were
    del v2, v3, v4, v5
    x2_bar = y_bar * dy_dx2                   # the edge x2 -> y
    del dy_dx2
    x1_bar = y_bar * dy_dx1                   # the edge x1 -> y
    del dy_dx1
    finite((x1_bar, x2_bar,))                 # the derivative is finite, as the sweep's would be
    return y, (x1_bar, x2_bar,)
>>> value, grad = code(2.0, 5.0)               # run it at new inputs: value and gradient
>>> value, grad.round(3)
(11.652071455223084, array([5.5  , 1.716]))
>>> code.calls, code.saved                     # six operations, three fewer than edge by edge
(6, 3)
"""

from __future__ import annotations

import builtins
import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from ..graph.lcg import LCG, reachable
from ..graph.operators import (
    FROM_SHAPES,
    OPERATORS,
    Added,
    Broadcast,
    Composed,
    CumSum,
    Embed,
    Gather,
    Identity,
    Im2Col,
    Reshape,
    SumAxes,
    Transpose,
)
from .ops import Op
from .program import BACKWARD, Linear, Program
from .sources import PRODUCTS, VALUES, formula, literal, python_name
from .tracer import RAISED, Edge, Recording, is_data

MODES = ("forward", "tangent", "adjoint")
_SHAPE_READS = (np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj)
"""Reads of shapes and dtypes alone, which the checks of the arguments hold fixed: not
guarded."""
_BUILTINS = ("max", "min", "abs", "round", "dict", "float", "int", "bool", "len")


# ------------------------------------------------------------ the public API
def codegen(g: LCG, mode: str = "adjoint", *, preaccumulate: bool = True) -> Code:
    """The Python program of a traced graph: its ``mode`` is ``"forward"``,
    ``"tangent"`` or ``"adjoint"``.  ``print`` the result to read it, call it on new
    arguments to run it (see :class:`Code`).

    Parameters
    ----------
    g : LCG
        A graph made by :func:`minirad.trace` (or :func:`minirad.replay`).
    mode : str
        ``"adjoint"`` (value and gradient: reverse mode), ``"tangent"`` (value and a
        directional derivative: forward mode) or ``"forward"`` (value only).
    preaccumulate : bool
        Eliminate the intermediate vertices of elementwise chains first (fewer numpy
        calls, products in another order); False writes the reference sweep's
        operations in its order, so the numbers agree with it bit for bit.

    Returns
    -------
    Code
        The source (``str(code)``), the compiled function, and what it costs.

    Raises
    ------
    TypeError
        ``g`` is not a graph, or ``mode`` is not a string.
    ValueError
        ``g`` was not traced (built by hand, loaded: there is no program), or ``mode``
        is unknown.

    See Also
    --------
    compiled : the code of a graph, generated once and kept with it.
    minirad.replay : the interpreter of the same recording.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda x: (0.5 * x * x).sum(), np.array([1.0, 2.0]))
    >>> code = codegen(g)
    >>> code(np.array([3.0, -1.0]))[1]            # the gradient at a new point: x
    [array([ 3., -1.])]
    >>> "v1 = 0.5 * x" in str(codegen(g, "forward"))
    True
    """
    if not isinstance(g, LCG):
        raise TypeError(f"codegen takes a traced LCG, not {type(g).__name__}")
    if not isinstance(mode, str):
        raise TypeError(f"mode must be a string, not {type(mode).__name__}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; the modes are {', '.join(map(repr, MODES))}")
    kept = g.memos.get("tracing.recording")
    if kept is None:
        raise ValueError("this graph was not traced by minirad.trace (built by hand, loaded "
                         "or transformed), so there is no program to write; trace it")
    return _Writer(g, kept, mode, bool(preaccumulate)).code()


def compiled(g: LCG, mode: str = "adjoint") -> Code:
    """The :func:`codegen` of ``g`` (preaccumulated), generated on the first call and kept
    with the graph: what a training loop runs instead of :func:`minirad.replay`.

    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda w, x: np.tanh(x @ w).sum(), np.zeros(2), np.eye(2), wrt=[0])
    >>> step = compiled(g)
    >>> value, (dw,) = step(np.array([0.5, 0.0]), np.eye(2))    # new weights, new data
    >>> compiled(g) is step
    True
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; the modes are {', '.join(map(repr, MODES))}")
    return g.memo(f"codegen.{mode}", lambda: codegen(g, mode))


@dataclass(eq=False)
class Code:
    """A generated program: its source (``str(code)``), the compiled ``function`` of
    its parameters, and what it costs.

    Call it with the arguments the program was traced with (new values of the same
    shapes and dtypes): ``"forward"`` returns the value, ``"adjoint"`` the value and
    the gradient (laid out as :func:`minirad.gradient`'s; give ``cotangents``, one
    per output, for a program that does not return one number), ``"tangent"`` the
    value and the output tangents for ``tangents`` (one per input).

    ``calls`` counts the numpy operations of the derivative statements and
    ``forward_calls`` those of the program itself; ``eliminated`` lists the
    vertices preaccumulation removed and ``saved`` how many operations that saved
    (against the same program written without preaccumulation).
    """

    mode: str
    source: str
    function: object
    recording: Recording
    graph: LCG = field(repr=False)
    calls: int = 0
    forward_calls: int = 0
    eliminated: tuple = ()
    preaccumulated: bool = True

    def __str__(self) -> str:
        return self.source

    @property
    def saved(self) -> int:
        """Derivative operations saved by preaccumulation (0 without it)."""
        if not self.preaccumulated or self.mode == "forward":
            return 0
        plain = self.graph.memo(f"codegen.plain.{self.mode}",
                                lambda: codegen(self.graph, self.mode, preaccumulate=False))
        return plain.calls - self.calls

    def __call__(self, *args, cotangents=None, tangents=None):
        g, kept = self.graph, self.recording
        parameters = _arguments(kept, args)
        if self.mode == "adjoint":
            parameters += _seeds(g, cotangents)
        elif self.mode == "tangent":
            parameters += _tangents(g, tangents)
        with np.errstate(all="ignore"):
            try:
                out = self.function(*parameters)
            except ArithmeticError as error:
                raise ValueError(f"the program is not defined at these inputs ({error})") \
                    from None
        if self.mode == "forward":
            return out
        value, derivative = out
        return value, _laid_out(g, g.inputs if self.mode == "adjoint" else g.outputs,
                                derivative)


# ---------------------------------------------------------- the arguments
def _arguments(kept: Recording, args) -> list:
    """The generated function's parameters from the traced function's arguments,
    checked as :func:`minirad.replay` checks them."""
    if len(args) != len(kept.args):
        raise TypeError(f"the program was traced with {len(kept.args)} arguments, not "
                        f"{len(args)}")
    tape = kept.tape
    slots = iter(t for t, step in enumerate(tape.steps) if step is None)
    data = [p for p in range(len(args)) if p not in kept.positions and is_data(kept.args[p])]
    for p in range(len(args)):
        if p not in kept.positions and p not in data and not _same(args[p], kept.args[p]):
            raise ValueError(f"argument {p} ({type(kept.args[p]).__name__}) changed, and the "
                             f"program used it in Python, which the code cannot follow; "
                             f"trace again")
    out = []
    for p in [*kept.positions, *data]:
        new, was = args[p], kept.args[p]
        several = isinstance(was, (list, tuple)) and p in kept.positions
        pieces = list(new) if several and isinstance(new, (list, tuple, np.ndarray)) else [new]
        if len(pieces) != (len(was) if several else 1):
            raise ValueError(f"argument {p} has {len(pieces)} entries; it was traced with "
                             f"{len(was) if several else 1}")
        for piece in pieces:
            t = next(slots)
            out.append(_argument(p, piece, tape.values[t], tape.active[t]))
    return out


def _argument(p: int, new, old, active: bool):
    if type(old) is float or not isinstance(old, np.ndarray):
        if isinstance(new, (bool, np.bool_)) or not isinstance(
                new, (int, float, np.integer, np.floating)):
            raise ValueError(f"argument {p} was a number; got {type(new).__name__}")
        value = float(new) if type(old) is float else new
    else:
        value = np.asarray(new)
        if value.shape != old.shape or value.dtype != old.dtype:
            raise ValueError(f"argument {p} was traced with shape {old.shape} and dtype "
                             f"{old.dtype}; got {value.shape} and {value.dtype} (trace again "
                             f"for other shapes)")
    if active and not np.isfinite(value).all():
        raise ValueError(f"argument {p} has a non-finite entry")
    return value


def _same(new, was) -> bool:
    if new is was:
        return True
    try:
        if isinstance(new, np.ndarray) or isinstance(was, np.ndarray):
            return bool(np.array_equal(new, was))
        return type(new) is type(was) and bool(new == was)
    except (TypeError, ValueError):
        return False


def _seeds(g: LCG, cotangents) -> list:
    if cotangents is None:
        if len(g.outputs) == 1 and g.shape(g.outputs[0]) == ():
            return [np.ones((), dtype=g.dtype(g.outputs[0]))]
        raise TypeError(f"the program has outputs of shapes {[g.shape(v) for v in g.outputs]}; "
                        f"give cotangents=[one array per output]")
    return _per_vertex(g, g.outputs, cotangents, "cotangents")


def _tangents(g: LCG, tangents) -> list:
    if tangents is None:
        raise TypeError("a tangent program needs tangents=[one per input]")
    return _per_vertex(g, g.inputs, tangents, "tangents")


def _per_vertex(g: LCG, vertices, given, what: str) -> list:
    if isinstance(given, np.ndarray) and given.ndim == 1 and all(
            g.shape(v) == () for v in vertices):
        given = list(given)
    if not isinstance(given, (list, tuple)) or len(given) != len(vertices):
        raise ValueError(f"{what} must list one entry per vertex "
                         f"({', '.join(g.names[v] for v in vertices)})")
    out = []
    for v, entry in zip(vertices, given):
        array = np.asarray(entry, dtype=g.dtype(v))
        if array.shape != g.shape(v) or not np.isfinite(array).all():
            raise ValueError(f"the entry of {what} for {g.names[v]} must be finite, of shape "
                             f"{g.shape(v)}, not {array.shape}")
        out.append(float(array) if isinstance(g.value(v), float) else array)
    return out


def _laid_out(g: LCG, vertices, values):
    """One derivative per vertex as :func:`minirad.gradient` lays it out: a float
    array when every vertex is a number, else a list of arrays."""
    values = [np.zeros(g.shape(v), g.dtype(v)) if x is None else x
              for v, x in zip(vertices, values)]
    if all(g.shape(v) == () for v in vertices) and all(
            isinstance(g.value(v), float) for v in vertices):
        return np.array(values, dtype=np.float64).reshape(len(vertices))
    return [float(x) if np.ndim(x) == 0 and isinstance(g.value(v), float) else np.asarray(x)
            for v, x in zip(vertices, values)]


# ------------------------------------------------------------- helpers run
def guard(what: str, function, args, kwargs, was) -> None:
    """Read a value again as the traced program read it; raise when it reads otherwise
    (new inputs would take another path)."""
    try:
        now = function(*args, **kwargs)
    except (ArithmeticError, ValueError):
        now = RAISED
    if now is RAISED or was is RAISED:
        same = now is was
    else:
        try:
            same = bool(np.array_equal(now, was))
        except (TypeError, ValueError):
            same = now == was
    if not same:
        raise ValueError(f"the program read {what}, which depends on the inputs: {was!r:.60} "
                         f"when traced, {now!r:.60} now, so at these inputs it takes another "
                         f"path (trace again)")


def finite(values) -> None:
    """Raise when a value is not finite (the trace would have refused it)."""
    for v in values:
        if not np.all(np.isfinite(v)):
            raise ValueError("a value is not finite at these inputs (trace there to see which "
                             "vertex)")


def block_label(rule, positions, params, edge: Edge, *values):
    """The label of one edge of a rule, as the tracer builds it (the blocks of each
    position of the operand, added), from the operands' values and the result's."""
    *operands, y = values
    label = None
    for i in positions:
        part = rule.block(i, operands, y, edge, **params)
        label = part if label is None else OPERATORS.add(label, part)
    if type(label) is not float and np.shape(y) == () == np.shape(operands[positions[0]]):
        label = float(label.to_dense()[0, 0])     # between two numbers: a float
    return label


_SHAPE_ONLY = (Identity, SumAxes, Broadcast, Reshape, Transpose, Im2Col, CumSum, Embed, Gather)


def _static(label) -> bool:
    """Whether a block depends on the shapes alone (so it is built once, not per call)."""
    if isinstance(label, (Composed, Added)):
        return all(_static(p) for p in (label.parts if isinstance(label, Composed)
                                        else label.terms))
    return isinstance(label, _SHAPE_ONLY) and all(
        r.recompute_from == FROM_SHAPES for r in label.retained)


# -------------------------------------------------------------- the writer
@dataclass
class _Diagonal:
    """An elementwise edge: the diagonal as a linear combination, and the operand's
    shape when it was broadcast (None otherwise)."""

    d: Linear
    spread: tuple | None = None


@dataclass
class _Block:
    """An edge of a rule: its operator (a constant, or the variable holding it) or its
    products written out."""

    rule: object
    t: int
    positions: list
    label: str | None = None        # the variable or constant of the operator
    number: bool = False            # a float label (between two numbers)
    texts: tuple | None = None      # (vjp, jvp) source, where written out


class _Writer:
    """Writes one traced graph as one program."""

    def __init__(self, g: LCG, kept: Recording, mode: str, preaccumulate: bool):
        self.g, self.kept, self.mode = g, kept, mode
        self.names = list(g.names)                       # as comments name vertices
        self.ids = [python_name(n) for n in self.names]   # as variables are named
        self.tape = tape = kept.tape
        self.tape_of = [t for t, a in enumerate(tape.active) if a] + [
            t for t in kept.outputs if not tape.active[t]]
        self.vertex = {t: v for v, t in enumerate(self.tape_of)}
        dtypes = {np.asarray(x).dtype for x in tape.values if not isinstance(x, float)}
        self.p = Program(exact=not preaccumulate, taken=("finite", "guard", *_BUILTINS),
                         in_place=len(dtypes) <= 1)
        self.p.namespace.update(finite=finite, guard=guard)
        self.var = [None] * len(tape.values)    # tape position -> its variable
        self.preaccumulate = preaccumulate and mode != "forward"
        self.eliminated = []

    # ------------------------------------------------------------ the code
    def code(self) -> Code:
        p, g = self.p, self.g
        parameters = self.parameters()
        self.forward()
        if self.mode == "forward":
            returned = self.values_returned()
        else:
            preds = self.labels()
            if self.preaccumulate:
                self.eliminate(preds)
            if self.mode == "adjoint":
                seeds = [p.parameter(self.ids[v] + "_bar", BACKWARD) for v in g.outputs]
                parameters += seeds
                derivative = self.adjoint(preds, seeds)
            else:
                seeds = [p.parameter(self.ids[v] + "_dot") for v in g.inputs]
                parameters += seeds
                derivative = self.tangent(preds, seeds)
            present = [d for d in derivative if d in p.position]
            if present:
                p.check(f"finite(({', '.join(present)},))", present,
                        "the derivative is finite, as the sweep's would be")
            returned = f"{self.values_returned()}, ({', '.join(derivative)},)"
        p.live(returned)
        forward_calls = sum(s.calls for s in p.statements if s.key[1] < self._forward_end)
        calls = p.calls() - forward_calls
        what = {"forward": "program", "tangent": "tangent (forward mode)",
                "adjoint": "adjoint"}[self.mode]
        doc = (f"The {what} of a traced graph ({g.n_vertices} vertices, {g.n_edges} edges),"
               f"\n    written by minirad.codegen.")
        if self.mode != "forward":
            doc += f"\n    The derivative makes {calls} operations"
            if self.eliminated:
                doc += (f" (preaccumulation eliminated {len(self.eliminated)} vertices of\n"
                        f"    elementwise chains first)")
            doc += "."
        source = p.source(self.mode, parameters, returned, doc)
        namespace = dict(p.namespace)
        exec(compile(source, f"<minirad.codegen {self.mode}>", "exec"), namespace)  # noqa: S102
        return Code(self.mode, source, namespace[self.mode], self.kept, g, calls,
                    forward_calls, tuple(self.names[v] for v in self.eliminated),
                    self.preaccumulate)

    def parameters(self) -> list[str]:
        """The function's parameters: the inputs (by vertex name), then the data."""
        tape, kept, p = self.tape, self.kept, self.p
        slots = [t for t, step in enumerate(tape.steps) if step is None]
        n_data = sum(1 for q in range(len(kept.args))
                     if q not in kept.positions and is_data(kept.args[q]))
        names = []
        for t in slots[:kept.n_inputs + n_data]:
            wanted = self.names[self.vertex[t]] if tape.active[t] else tape.names.get(
                t, f"data{t}")
            self.var[t] = p.parameter(wanted)
            names.append(self.var[t])
        for t in slots[kept.n_inputs + n_data:]:      # constant outputs
            self.var[t] = p.constant(tape.values[t], "constant") if literal(
                tape.values[t]) is None else literal(tape.values[t])
        return names

    def name(self, t: int) -> str:
        """How a comment names the value at tape position ``t``."""
        if t in self.vertex:
            return self.names[self.vertex[t]]
        return self.var[t] or f"data{t}"

    def shown(self, o) -> str:
        """How a message names an operand: its vertex or data name, a number, or ``c``."""
        if type(o) is int:
            return self.name(o)
        if isinstance(o, (float, np.ndarray, np.generic)) and np.ndim(o) == 0:
            return repr(np.asarray(o).item())
        return "c"

    def operand(self, o) -> str:
        """The text of an operand: its variable, or a constant written in or bound."""
        if type(o) is int:
            return self.var[o]
        text = literal(o)
        if text is None:
            return self.p.constant(o, "c")
        return f"({text})" if text.startswith("-") else text

    # ------------------------------------------------------------- forward
    def forward(self) -> None:
        """One statement per value of the tape, and a guard per value read."""
        tape, p = self.tape, self.p
        reads = [r for r in tape.reads if r[1] not in _SHAPE_READS]
        for t, step in enumerate(tape.steps):
            while reads and reads[0][0] <= t:
                self.guard(reads.pop(0))
            if step is None:
                continue
            rule, operands, params = step
            wanted = self.names[self.vertex[t]] if t in self.vertex else tape.names.get(
                t, f"data{t}")
            text = self.value_text(rule, operands, params, tape.values[t])
            comment = (f"{self.name(t)} = " + self.template(rule, operands, params))
            self.var[t] = p.emit(text, [self.var[o] for o in operands if type(o) is int],
                                 wanted, comment=comment, at=float(t), own=False, reuse=False,
                                 pure=False)
        for read in reads:
            self.guard(read)
        if all(type(x) is float for x in tape.values):
            names = [self.var[t] for t in range(len(tape.values)) if self.var[t] in p.position]
            p.check(f"finite(({', '.join(names)},))", names,
                    "every value is finite, as the trace's were", at=len(tape.values) - 0.5)
        else:
            outs = [self.var[t] for t in self.kept.outputs if self.var[t] in p.position]
            if outs:
                p.check(f"finite(({', '.join(outs)},))", outs, "the outputs are finite",
                        at=len(tape.values) - 0.5)
        self._forward_end = len(p.statements) and p.statements[-1].key[1] + 1

    def template(self, rule, operands, params) -> str:
        pieces = [self.shown(o) for o in operands]
        try:
            return (rule.template(pieces, params) if callable(rule.template)
                    else rule.template.format(*pieces, **params))
        except (KeyError, IndexError, ValueError):
            return rule.name

    def value_text(self, rule, operands, params, value) -> str:
        texts = [self.operand(o) for o in operands]
        values = [self.tape.values[o] if type(o) is int else o for o in operands]
        if isinstance(rule, Op):
            number = all(type(v) is float for v in values)
            function = rule.value if number else rule.on_arrays[0]
            text = self.call(function, texts, f"{rule.name}_value")
            return text if number or np.ndim(value) else f"np.asarray({text})"
        written = VALUES.get(rule)
        text = written(values) if written is not None else None
        if text is not None:
            return text.format(*texts)
        arguments = texts + [f"{k}={self.operand_param(v)}" for k, v in params.items()]
        return f"{self.p.constant(rule.value, rule.name + '_value')}({', '.join(arguments)})"

    def operand_param(self, v) -> str:
        text = literal(v)
        return text if text is not None else self.p.constant(v, "param")

    def call(self, function, texts, wanted: str) -> str:
        """``function(*texts)`` as source: its formula when it has one, else a call by
        name (a function of math or a builtin by its own)."""
        template = formula(function, len(texts))
        if template is not None:
            return template.format(*texts)
        own = getattr(function, "__name__", "")
        module = {"math": math, "builtins": builtins}.get(getattr(function, "__module__", ""))
        if module is not None and getattr(module, own, None) is function:
            name = f"math.{own}" if module is math else own
        else:
            name = self.p.constant(function, wanted)
        return f"{name}({', '.join(texts)})"

    def guard(self, read) -> None:
        at, function, operands, kwargs, result = read
        p = self.p
        texts = [self.var[o] if type(o) is int else self.operand(o) for o in operands]
        name = getattr(function, "__name__", "value")
        shown = f"{name}({', '.join(self.shown(o) for o in operands)})"
        was = literal(result) if result is not RAISED else None
        if was is None:
            was = p.constant(result, "was")
        fn = p.constant(function, python_name(f"read_{name}"))
        args = "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
        kw = literal(tuple(sorted(kwargs.items())))
        kw_text = f"dict({kw})" if kw is not None and kwargs else (
            "{}" if not kwargs else p.constant(kwargs, "options"))
        p.check(f"guard({shown!r}, {fn}, {args}, {kw_text}, {was})",
                [self.var[o] for o in operands if type(o) is int],
                "the trace read this value: the path holds", at=at - 0.5)

    def values_returned(self) -> str:
        outs = [self.var[t] for t in self.kept.outputs]
        return outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ",)"

    # -------------------------------------------------------------- labels
    def labels(self) -> list[dict]:
        """Per vertex, its in-edges: predecessor -> label (:class:`_Diagonal` or
        :class:`_Block`), in the graph's edge order."""
        tape, g = self.tape, self.g
        preds = [dict() for _ in range(g.n_vertices)]
        live = reachable(g, g.outputs, "reverse")   # an edge no output reads: not written
        for v, t in enumerate(self.tape_of):
            step = tape.steps[t]
            if step is None or not tape.active[t] or not live[v]:
                continue
            rule, operands, params = step
            positions = {}
            for i, o in enumerate(operands):
                if type(o) is int and tape.active[o]:
                    positions.setdefault(o, []).append(i)
            for o, where in positions.items():
                label = (self.diagonal(rule, t, operands, where, o) if isinstance(rule, Op)
                         else self.block(rule, t, operands, params, where))
                preds[v][self.vertex[o]] = label
        return preds

    def diagonal(self, op: Op, t: int, operands, positions, o) -> _Diagonal:
        tape, p = self.tape, self.p
        values = [tape.values[q] if type(q) is int else q for q in operands]
        y = tape.values[t]
        number = all(type(x) is float for x in values)
        total = None
        for i in positions:
            function = op.partials[i] if number else op.on_arrays[1][i]
            part = self.partial(op, i, function, operands, values, t, number)
            total = part if total is None else p.add(total, part)
        spread = None if number or np.shape(values[positions[0]]) == np.shape(y) else \
            np.shape(values[positions[0]])
        return _Diagonal(total, spread)

    def partial(self, op: Op, i: int, function, operands, values, t: int,
                number: bool) -> Linear:
        """The partial of operand ``i`` as a linear combination: a number, a variable of
        the program, or a new statement computing it."""
        p, tape = self.p, self.tape
        y = tape.values[t]
        texts = [self.operand(o) for o in operands] + [self.var[t]]
        template = formula(function, len(operands) + 1)
        reads = [self.var[o] for o in operands if type(o) is int] + [self.var[t]]
        if template is not None and template.startswith("{") and template.endswith("}") \
                and template[1:-1].isdigit():
            k = int(template[1:-1])
            source = (operands + (t,))[k] if k < len(operands) else t
            if type(source) is int:
                return Linear.of(self.var[source])
            if literal(source) is not None and np.ndim(source) == 0:
                return Linear((), float(source))
            return Linear.of(p.constant(source, "c"))
        if template is not None and "{" not in template.replace("{{", ""):
            return Linear((), float(eval(template, {"np": np, "math": math})))  # noqa: S307
        d = None
        if not number:
            with np.errstate(all="ignore"):
                d = function(*values, y)
        mask = isinstance(d, np.ndarray) and d.dtype == np.bool_
        text = template.format(*texts) if template is not None else (
            f"{p.constant(function, f'{op.name}_d{i}')}({', '.join(texts)})")
        if isinstance(d, np.ndarray) and not mask and d.dtype != np.asarray(y).dtype:
            text = f"np.asarray({text}, dtype=np.{np.asarray(y).dtype.name})"
        v, u = self.names[self.vertex[t]], self.name(operands[i])
        var = p.emit(text, reads, python_name(f"d{v}_d{u}".replace("[", "").replace("]", "")),
                     comment=f"d{v}/d{u}", own=False, mask=mask,
                     at=float(t))
        return Linear.of(var)

    def block(self, rule, t: int, operands, params, positions) -> _Block:
        tape, p = self.tape, self.p
        values = [tape.values[q] if type(q) is int else q for q in operands]
        y = tape.values[t]
        number = np.shape(y) == () == np.shape(values[positions[0]])
        written = PRODUCTS.get(rule)
        if written is not None and len(positions) == 1 and written[0](values):
            i = positions[0]
            return _Block(rule, t, positions, texts=(written[1][i], written[2][i]))
        edge = Edge(tape, t, operands, self.vertex)
        with np.errstate(all="ignore"):
            label = block_label(rule, positions, params, edge, *values, y)
        v, u = (python_name(n).strip("_") for n in (self.names[self.vertex[t]],
                                                    self.name(operands[positions[0]])))
        if not number and _static(label):
            return _Block(rule, t, positions, p.constant(label, f"J_{v}_{u}"))
        builder = _Builder(rule, positions, params, edge, operands)
        name = p.constant(builder, f"{rule.name}_block")
        args = [self.var[o] for o in operands if type(o) is int] + [self.var[t]]
        var = p.emit(f"{name}({', '.join(args)})", args, f"J_{v}_{u}",
                     comment=f"d{v}/d{u}: the block of {rule.name}", own=False, calls=1,
                     at=float(t))
        return _Block(rule, t, positions, var, number)

    # -------------------------------------------------------- elimination
    def eliminate(self, preds: list[dict]) -> None:
        """Vertex elimination of the intermediate vertices of elementwise chains, in a
        dynamic order (the lowest-numbered vertex that qualifies first)."""
        g = self.g
        succs = [set() for _ in range(g.n_vertices)]
        for v, edges in enumerate(preds):
            for u in edges:
                succs[u].add(v)
        ends = set(g.inputs) | set(g.outputs)
        heap = [v for v in range(g.n_vertices) if v not in ends]
        heapq.heapify(heap)
        gone = set()
        while heap:
            v = heapq.heappop(heap)
            if v in gone or not self.eliminable(v, preds, succs):
                continue
            self.eliminate_vertex(v, preds, succs)
            gone.add(v)
            self.eliminated.append(v)
            for w in [*preds[v], *succs[v]]:
                if w not in ends and w not in gone:
                    heapq.heappush(heap, w)
            preds[v], succs[v] = {}, set()

    def eliminable(self, v: int, preds, succs) -> bool:
        ins, outs = preds[v], succs[v]
        if not ins or not outs:
            return False
        if not all(isinstance(label, _Diagonal) for label in ins.values()):
            return False
        out_labels = [preds[w][v] for w in outs]
        if not all(isinstance(label, _Diagonal) and label.spread is None
                   for label in out_labels):
            return False
        products = 0
        for w, out in zip(outs, out_labels):
            for u, inner in ins.items():
                there = preds[w].get(u)
                if there is not None and not (isinstance(there, _Diagonal)
                                              and there.spread == inner.spread):
                    return False
                products += not out.d.constant and not inner.d.constant
        return products <= 1

    def eliminate_vertex(self, v: int, preds, succs) -> None:
        p, name = self.p, self.names
        for w in sorted(succs[v]):
            out = preds[w].pop(v)
            for u, inner in preds[v].items():
                d = p.multiply(out.d, inner.d, f"d{self.ids[w]}_d{self.ids[u]}",
                               comment=f"d{name[w]}/d{name[u]} through {name[v]}")
                there = preds[w].get(u)
                preds[w][u] = _Diagonal(d if there is None else p.add(there.d, d),
                                        inner.spread)
                succs[u].add(w)
        for u in preds[v]:
            succs[u].discard(v)

    # ------------------------------------------------------------- sweeps
    def adjoint(self, preds, seeds) -> list[str]:
        """The reverse sweep: cotangents pulled back vertex by vertex, last first."""
        g, p = self.g, self.p
        names = self.ids
        cot: dict[int, Linear] = {v: Linear.of(s) for v, s in zip(g.outputs, seeds)}
        for v in range(g.n_vertices - 1, -1, -1):
            if v not in cot or not preds[v] or cot[v].constant:
                continue
            coef, var = p.single(cot[v], f"{names[v]}_bar")
            bar = Linear.of(var, coef)
            for u, label in reversed(list(preds[v].items())):
                wanted = f"{names[u]}_bar" if u not in cot else ""
                term = self.pullback(bar, label, u, v, wanted)
                cot[u] = p.accumulate(cot.get(u), term, f"{names[u]}_bar",
                                      comment=f"{names[u]}_bar: the edge {self.names[u]} -> "
                                              f"{self.names[v]} too")
        out = []
        for x in g.inputs:
            if x in cot and not cot[x].constant:
                out.append(p.materialize(cot[x], f"{names[x]}_bar"))
            else:
                out.append("None")
        return out

    def pullback(self, bar: Linear, label, u: int, v: int, wanted: str) -> Linear:
        """The term ``bar * label`` that the edge u -> v adds to u's cotangent."""
        p, g = self.p, self.g
        comment = f"the edge {self.names[u]} -> {self.names[v]}"
        if isinstance(label, _Diagonal):
            term = p.multiply(bar, self.settled(label.d, u, v), wanted, comment)
            if label.spread is None or term.constant:
                return term
            coef, var = p.single(term)
            spread = Broadcast(label.spread, g.shape(v), g.dtype(v))
            summed = any(a != b for a, b in zip((1,) * (len(g.shape(v)) - len(
                label.spread)) + label.spread, g.shape(v)))
            op = p.constant(spread, f"spread_{self.ids[u]}")
            return Linear.of(p.emit(f"{op}.apply_transpose({var})", (var,), wanted,
                                    comment=comment + ", summed back", own=summed), coef)
        coef, var = p.single(bar)
        if label.texts is not None:
            texts = [self.operand(o) for o in self.tape.steps[label.t][1]]
            text = label.texts[0].format(*texts, u=var)
            return Linear.of(p.emit(text, [var, *texts], wanted, comment=comment), coef)
        if label.number:
            text = f"{var} * {label.label}"
        else:
            text = f"{label.label}.apply_transpose({var})"
        return Linear.of(p.emit(text, (var, label.label), wanted, comment=comment,
                                own=label.number), coef)

    def settled(self, d: Linear, u: int, v: int) -> Linear:
        """An edge's diagonal as one scaled variable (written out, named after the edge,
        when it is a combination of several)."""
        if d.constant or (len(d.terms) == 1 and not d.const):
            return d
        names, ids, p = self.names, self.ids, self.p
        how = "preaccumulated" if self.preaccumulate else "the partials of its uses added"
        # written where its operands are (so that they can be freed), not beside v
        coef, var = p.single(d, f"d{ids[v]}_d{ids[u]}".replace("__", "_"),
                             f"d{names[v]}/d{names[u]}, {how}")
        return Linear.of(var, coef)

    def tangent(self, preds, seeds) -> list[str]:
        """The forward sweep: each tangent beside its value, in the graph's order."""
        g, p = self.g, self.p
        names = self.ids
        tan: dict[int, Linear] = {v: Linear.of(s) for v, s in zip(g.inputs, seeds)}
        for v in range(g.n_vertices):
            if v in tan:
                continue
            total = None
            p.least = float(self.tape_of[v])      # beside the value, not before it
            for u, label in preds[v].items():
                if u not in tan or tan[u].constant:
                    continue
                term = self.pushforward(tan[u], label, u, v,
                                        f"{names[v]}_dot" if total is None else "")
                total = p.accumulate(total, term, f"{names[v]}_dot")
            if total is not None:
                if len(total.terms) > 1 or total.const:
                    coef, var = p.single(total, f"{names[v]}_dot")
                    total = Linear.of(var, coef)
                tan[v] = total
        p.least = -1.0
        return [p.materialize(tan[o], f"{names[o]}_dot") if o in tan and not tan[o].constant
                else "None" for o in g.outputs]

    def pushforward(self, dot: Linear, label, u: int, v: int, wanted: str) -> Linear:
        """The term ``label * dot`` that the edge u -> v adds to v's tangent."""
        p, g = self.p, self.g
        comment = f"the edge {self.names[u]} -> {self.names[v]}"
        if isinstance(label, _Diagonal):
            term = p.multiply(self.settled(label.d, u, v), dot, wanted, comment)
            if label.spread is None or term.constant:
                return term
            coef, var = p.single(term)
            return Linear.of(p.emit(f"np.broadcast_to({var}, {g.shape(v)!r})", (var,), wanted,
                                    comment=comment + ", broadcast", own=False), coef)
        coef, var = p.single(dot)
        if label.texts is not None:
            texts = [self.operand(o) for o in self.tape.steps[label.t][1]]
            text = label.texts[1].format(*texts, t=var)
            return Linear.of(p.emit(text, [var, *texts], wanted, comment=comment), coef)
        text = f"{label.label} * {var}" if label.number else f"{label.label}.apply({var})"
        return Linear.of(p.emit(text, (var, label.label), wanted, comment=comment,
                                own=label.number), coef)


class _Builder:
    """Builds the block of one rule's edge from the values at run time."""

    def __init__(self, rule, positions, params, edge, operands):
        self.rule, self.positions, self.params, self.edge = rule, positions, params, edge
        self.slots = [i for i, o in enumerate(operands) if type(o) is int]
        self.constants = list(operands)

    def __call__(self, *values):
        *given, y = values
        operands = list(self.constants)
        for i, value in zip(self.slots, given):
            operands[i] = value
        return block_label(self.rule, self.positions, self.params, self.edge, *operands, y)

    def __repr__(self):
        return f"the block of {self.rule.name}"
