"""Run a traced graph again at new inputs, without running the program again.

A training loop evaluates one program thousands of times, at new parameters and
new data, along the same path.  The tape of a trace (:mod:`minirad.tracing.tracer`)
holds every operation the program made, the data arguments' included, and every
value it read.  :func:`replay` reruns those operations on the new arguments and
reads every read again; when one reads differently, the program would have taken
another path, and replay refuses.  The result is a new graph, as if traced afresh.

>>> import numpy as np
>>> from minirad import ops, trace, gradient
>>> def f(w, x):
...     return ops.tanh(x @ w).sum()
>>> w, x = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
>>> g = trace(f, w, x, wrt=[0])                   # x is data
>>> w2 = np.array([0.1, 0.2])
>>> h = replay(g, w2, 2 * x)                      # new weights, new data
>>> bool(np.array_equal(gradient(h)[0], gradient(trace(f, w2, 2 * x, wrt=[0]))[0]))
True

What it refuses, with a ``ValueError`` that says what changed: arguments of
another shape or dtype; a non-traced argument that is not the same (a string, a
list of arrays: the program used it in Python); a value the program read
(``x > 0``, ``bool(x)``, ``int(n)``, :func:`minirad.detach`) that reads
differently, an operation that raised where it no longer does, or the reverse;
and a graph that was not traced (built by hand, loaded, injected).  So write a
ReLU as ``minirad.ops.relu(x)`` or ``np.maximum(x, 0)``, whose mask is part of its
Jacobian block, rather than ``np.where(x > 0, x, 0)``, whose mask is a value the
program read: the first replays at any inputs, the second only while the signs
stay the same.  What replay cannot see: a program that keeps state between calls.
"""

from __future__ import annotations

import numpy as np

from ..graph.lcg import LCG
from .tracer import Recording, Tape, check_finite, compute, graph, is_data, read_again

__all__ = ["recording", "replay"]


def recording(g: LCG) -> Recording:
    """The recording of a traced graph; ``ValueError`` for any other graph."""
    if not isinstance(g, LCG):
        raise TypeError(f"replay takes a traced LCG or its recording, not {type(g).__name__}")
    kept = g.memos.get("tracing.recording")
    if kept is None:
        raise ValueError("this graph was not traced by minirad.trace (built by hand, loaded "
                         "or transformed), so there is no program to replay; trace it again")
    return kept


def replay(g, *args) -> LCG:
    """Trace the same program again at new arguments, without running it.

    The graph :func:`minirad.trace` would make of the program at ``args``, made
    by rerunning the rules the trace recorded (the program's own Python does
    not run): what a training loop wants at each step.

    Parameters
    ----------
    g : LCG or Recording
        A traced (or replayed) graph, or its :func:`recording`, which holds
        none of the graph's values: what a loop keeps between iterations.
    *args : numpy.ndarray or float
        All the arguments, as passed to ``trace`` (the same positions are
        differentiated), at the new point.

    Returns
    -------
    LCG
        The new graph, equal bit for bit to tracing afresh at ``args``.

    Raises
    ------
    ValueError
        When the program would take another path at ``args`` (a value it read
        reads differently), an argument's shape or dtype differs from the
        traced one, or an argument that shaped the program as a constant (a
        number, an array sliced in Python) changed.
    TypeError
        For the wrong number of arguments, or a graph not made by
        :func:`minirad.trace`.

    See Also
    --------
    minirad.trace : The first trace, which records what replay reruns.
    recording : What a graph keeps for replay.

    Notes
    -----
    The module docstring says what the new graph guarantees and what replay
    refuses.  Unlike every other function on a graph, replay takes no Python
    function in place of ``g``: its positional arguments are the new point.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import gradient, ops, trace
    >>> g = trace(lambda w: ops.tanh(w).sum(), np.array([0.5, -1.0]))
    >>> h = replay(g, np.array([0.0, 0.0]))
    >>> gradient(h)                              # 1 - tanh(0)**2 = 1
    [array([1., 1.])]
    """
    kept = g if isinstance(g, Recording) else recording(g)
    old = kept.tape
    if len(args) != len(kept.args):
        raise TypeError(f"replay takes the {len(kept.args)} arguments the program was traced "
                         f"with, not {len(args)}")
    tape = Tape()
    tape.names, tape.active = old.names, old.active
    tape.rules, tape.operands, tape.params = old.rules, old.operands, old.params
    tape.values = [None] * len(old.values)
    # the tape holds the inputs first (the arguments differentiated, in order), then data
    slots = iter(t for t, rule in enumerate(old.rules) if rule is None)
    data = [p for p in range(len(args)) if p not in kept.positions and is_data(kept.args[p])]
    for position in range(len(args)):
        if position not in kept.positions and position not in data:
            _same_argument(position, args[position], kept.args[position])
    for position in [*kept.positions, *data]:
        new, was = args[position], kept.args[position]
        several = isinstance(was, (list, tuple)) and position in kept.positions
        pieces = list(new) if several and isinstance(new, (list, tuple, np.ndarray)) else [new]
        if len(pieces) != (len(was) if several else 1):
            raise ValueError(f"argument {position} has {len(pieces)} entries; it was traced "
                             f"with {len(was) if several else 1}")
        for piece in pieces:
            t = next(slots)
            tape.values[t] = _argument(position, piece, old.values[t], old.active[t])
    reads = iter(old.reads)
    read = next(reads, None)
    for t, (rule, operands, params) in enumerate(zip(old.rules, old.operands, old.params)):
        while read is not None and read[0] == t:
            _check(read, tape.values)
            read = next(reads, None)
        if rule is not None:
            tape.values[t] = compute(rule, [tape.values[o] if type(o) is int else o
                                            for o in operands], params)
        elif tape.values[t] is None:    # a constant output
            tape.values[t] = old.values[t]
    while read is not None:
        _check(read, tape.values)
        read = next(reads, None)
    tape.reads = old.reads
    check_finite(tape, kept.outputs)
    h = graph(tape, kept.outputs, kept.n_inputs, kept.input_names, kept.several)
    h.memo("tracing.recording", lambda: kept._replace(tape=tape, args=tuple(args)))
    return h


def _argument(position, new, old, active: bool):
    """A new argument in the form the tape holds it, checked against the old one."""
    if type(old) is float or not isinstance(old, np.ndarray):
        if isinstance(new, (bool, np.bool_)) or not isinstance(new, (int, float, np.integer,
                                                                     np.floating)):
            raise ValueError(f"argument {position} was a number; got {type(new).__name__}")
        value = float(new) if type(old) is float else new
    else:
        value = np.asarray(new)
        if value.shape != old.shape or value.dtype != old.dtype:
            raise ValueError(f"argument {position} was traced with shape {old.shape} and dtype "
                             f"{old.dtype}; got {value.shape} and {value.dtype} (trace again "
                             f"for other shapes)")
        value = value.copy()
        value.flags.writeable = False
    if active and not np.isfinite(value).all():
        raise ValueError(f"argument {position} has a non-finite entry")
    return value


def _same_argument(position, new, was) -> None:
    same = new is was
    if not same:
        try:
            same = bool(np.array_equal(new, was)) if isinstance(new, np.ndarray) else (
                type(new) is type(was) and bool(new == was))
        except (TypeError, ValueError):
            same = False
    if not same:
        raise ValueError(f"argument {position} ({type(was).__name__}) changed, and the program "
                         f"used it in Python, where replay cannot follow; trace again")


def _check(read, values) -> None:
    """Read again what the program read; refuse when it reads differently."""
    _, function, operands, kwargs, result = read
    plain = [values[o] if type(o) is int else o for o in operands]
    same, now = read_again(function, plain, kwargs, result)
    if not same:
        name = getattr(function, "__name__", "a value")
        raise ValueError(f"the program read {name} of the traced values, which depends on "
                         f"them: {result!r:.60} when traced; it would read differently now "
                         f"({now!r:.60}), so at these inputs it takes another path (trace "
                         f"again)")
