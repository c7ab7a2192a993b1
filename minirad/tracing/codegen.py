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

from dataclasses import dataclass, field

import numpy as np

from ..graph.lcg import LCG, takes_graph_or_function
from .tracer import Recording, is_data
from .writer import MODES, Writer

__all__ = ["Code", "codegen", "compiled"]


# ------------------------------------------------------------ the public API
@takes_graph_or_function
def codegen(g: LCG, mode: str = "adjoint", *, preaccumulate: bool = True) -> Code:
    """The Python program of a traced graph, written out as numpy calls.

    Its ``mode`` is ``"forward"``, ``"tangent"`` or ``"adjoint"``.  ``print`` the
    result to read it, call it on new arguments to run it (see :class:`Code`).

    Parameters
    ----------
    g : LCG
        A graph made by :func:`minirad.trace` (or :func:`minirad.replay`); or a Python
        function followed by the point to trace it at, ``codegen(f, 2.0, 5.0)`` (then
        ``mode`` by keyword).
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
    written = Writer(g, kept, mode, bool(preaccumulate)).code()
    return Code(mode, written.source, written.function, kept, g, written.calls,
                written.forward_calls, written.eliminated,
                bool(preaccumulate) and mode != "forward")


@takes_graph_or_function
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

