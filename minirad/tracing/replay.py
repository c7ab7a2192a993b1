"""Run a traced graph again at new inputs, without running the program again.

A training loop or an optimisation evaluates one program thousands of times, at
new parameters (and new minibatches), always along the same path.  Tracing it
every time runs the program's Python every time; :func:`replay` does not.  The
trace wrote down every rule the program called and every value it read
(:mod:`minirad.tracing.recording`); replay reruns those rules on the new values,
so every vertex's value and every edge's Jacobian block is made again by the
same code that made them the first time, and gives a new graph, to sweep,
inject into or count as any traced graph.

>>> import numpy as np
>>> from minirad import ops, trace
>>> from minirad.exact.sweeps import gradient
>>> def f(w, x):
...     return ops.tanh(x @ w).sum()
>>> w, x = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
>>> g = trace(f, w, x, wrt=[0])                   # x is data
>>> w2 = np.array([0.1, 0.2])
>>> h = replay(g, w2, x + 1)                      # new weights, new data
>>> bool(np.array_equal(gradient(h)[0], gradient(trace(f, w2, x + 1, wrt=[0]))[0]))
True

What the new graph guarantees
-----------------------------
* The same numbers as tracing afresh, bit for bit: the same rules run in the
  same order on the same values (``tests/test_replay.py``).
* The same memory accounting (:func:`minirad.retained_memory`): the operators say what
  they keep as they did when traced.
* Nothing drawn: an injection (:mod:`minirad.randomized.injection`) is applied
  to the replayed graph, with its own draws, each time.

What it refuses
---------------
A program whose path depends on its values: if a value it read when traced (a
comparison ``x > 0``, ``bool(x)``, ``np.argmax``, :func:`minirad.detach`) reads
differently now, the graph would differ, and replay raises ``ValueError``
(trace again at those inputs).  So write a ReLU as ``minirad.ops.relu(x)`` or
``np.maximum(x, 0)``, a rule whose mask is part of its Jacobian block, rather
than ``np.where(x > 0, x, 0)``, whose mask is a value the program read: the
first replays at any inputs, the second only while the signs stay the same.
Likewise new inputs must have the shapes and dtypes traced, and an argument
that is not differentiated may change only when the program used it as it is
(a new minibatch ``x`` for ``x @ W``); a number among them, or an array the
program sliced in Python (``x[:, t]``), must stay the same.

A rule of the program's own that it calls directly, neither registered
(:func:`minirad.tracing.arrays.register`) nor wrapped in
:func:`minirad.tracing.recording.replayable`, makes vertices replay cannot make
again: it refuses them.  Every rule of ``docs/numpy_support.md`` replays
(``tests/test_replay.py`` replays each at new operands).

What replay cannot see: a program that reads ``x.value`` itself, or keeps state
between calls.  A graph of numbers (the opcode tape) and a graph not made by
:func:`minirad.trace` (built by hand, loaded, injected) have no recording:
replay refuses them.
"""

from __future__ import annotations

import numpy as np

from ..graph.lcg import LCG
from .arrays import Tape, Tracked, elementwise, elementwise_vertex, finish, input_vertex
from .recording import Argument, Derived, Read, Recorded, Slot, on_values

__all__ = ["recorded_program", "replay"]


def recorded_program(g) -> Recorded:
    """What ``g`` keeps for :func:`replay` (none of its values: keep this rather than the
    graph between replays), or a ``ValueError`` saying why it has none."""
    if isinstance(g, Recorded):
        return g
    if not isinstance(g, LCG):
        raise TypeError(f"replay takes a graph made by minirad.trace, not "
                        f"{type(g).__name__}")
    kept = g.memos.get("tracing.recorded")
    if kept is None:
        raise ValueError("this graph has no recording to replay: replay runs again a graph "
                         "that minirad.trace made from a numpy array program (not a graph of "
                         "numbers, nor one built by hand, loaded or injected); replay the "
                         "traced graph, then inject into the result")
    return kept


def replay(g, *args) -> LCG:
    """Trace the same program again at new arguments, without running it.

    The graph :func:`minirad.trace` would make of the program at ``args``, made
    by rerunning the rules the trace recorded (the program's own Python does
    not run): what a training loop wants at each step.

    Parameters
    ----------
    g : LCG or Recorded
        A graph traced from an array program (or replayed), or its
        :func:`recorded_program`, which holds none of the graph's values: what
        a loop keeps between iterations.
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
    recorded_program : What a graph keeps for replay.

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
    kept = recorded_program(g)
    if len(args) != len(kept.args):
        raise TypeError(f"replay takes the {len(kept.args)} arguments the graph was traced "
                        f"with ({', '.join(kept.names)}), not {len(args)}")
    tape = Tape()
    for position in kept.wrt:
        _same_shape(kept, position, args[position])
        input_vertex(tape, args[position], position, kept.names[position])
    tape.n_inputs = len(tape.values)
    tape.recording.depth = 1   # the rules rerun are not steps of a new recording
    for position, arg in enumerate(args):
        if position not in kept.wrt:
            _check_constant(kept, position, arg)
            tape.constant_names[id(arg)] = (kept.names[position], arg)
    for event in kept.events:
        event_args = _resolved(event.args, tape, kept, args)
        event_kwargs = _resolved(event.kwargs, tape, kept, args)
        if isinstance(event, Read):
            _check_read(event, on_values(event.reader, event_args, event_kwargs), tape)
            continue
        if tape.next_index != event.first:
            raise ValueError(f"replay: vertex v{tape.next_index} "
                             f"({kept.vertex_ops[tape.next_index]}) "
                             f"was made outside the rules the trace recorded: {_OUTSIDE}")
        if event.rule is _ELEMENTWISE and _numbers_and_slots(event.args[1:]):
            # the operands are the traced ones at the same shapes, the constants the same
            # numbers: the checks and the template of a first trace need not run again
            elementwise_vertex(tape, event_args[0], event_args[1:],
                               kept.vertex_ops[event.first])
        else:
            event.rule(*event_args, **event_kwargs)
        if tape.next_index != event.stop:
            raise ValueError(f"replay: {getattr(event.rule, '__name__', 'a rule')} made "
                             f"{tape.next_index - event.first} vertices where the trace made "
                             f"{event.stop - event.first}; the program's structure depends on "
                             f"its values: trace it again at these inputs")
    if tape.next_index != len(kept.vertex_names):
        raise ValueError(f"replay: the trace made {len(kept.vertex_names)} vertices and the "
                         f"recorded rules {tape.next_index}: a vertex was made outside the rules "
                         f"it recorded: {_OUTSIDE}")
    tape.names[:] = kept.vertex_names
    results = [_tracked(tape, v) for v in kept.returned]
    h = finish(tape, results, [kept.names[p] for p in kept.wrt], kept.several)
    h.memo("tracing.recorded", lambda: kept)
    return h


_ELEMENTWISE = elementwise.__wrapped__   # the rule a step records (not its recording wrapper)


def _numbers_and_slots(operands) -> bool:
    return all(type(x) is Slot or type(x) in (float, int) for x in operands)


_OUTSIDE = ("by a rule of the program's own that it called directly, not through numpy or "
            "an operator; give the rule to minirad.tracing.arrays.register, or wrap it in "
            "minirad.tracing.recording.replayable, or trace the program again instead")


def _tracked(tape: Tape, v: int) -> Tracked:
    if v >= len(tape.values):   # an operand the recorded rules have not made
        raise ValueError(f"replay: vertex v{v} was made outside the rules the trace "
                         f"recorded: {_OUTSIDE}")
    return Tracked(tape, v, tape.values[v])


def _resolved(x, tape: Tape, kept: Recorded, args):
    """The arguments of a step on the replay's tape and the new arguments."""
    kind = type(x)   # by exact type first: this runs for every operand of every step
    if kind is Slot:
        return _tracked(tape, x.index)
    if kind is tuple:
        return tuple([_resolved(y, tape, kept, args) for y in x])
    if kind in _AS_THEY_ARE:
        return x
    if kind is Argument:
        return args[x.position]
    if kind is Derived:
        return x.array
    if kind is list:
        return [_resolved(y, tape, kept, args) for y in x]
    if kind is dict:
        return {k: _resolved(v, tape, kept, args) for k, v in x.items()}
    return x


_AS_THEY_ARE = (float, int, str, bool, type(None), np.ndarray)


def _same_shape(kept: Recorded, position: int, arg) -> None:
    """A differentiated argument must come with the shape and dtype traced."""
    traced = kept.args[position]
    try:
        new = np.asarray(arg)
    except (TypeError, ValueError) as error:
        raise TypeError(f"argument {position} ({kept.names[position]}) is not an array of "
                        f"numbers ({error})") from None
    dtype = new.dtype if new.dtype.kind == "f" else np.dtype(np.float64)
    if new.shape != traced.shape or (new.dtype.kind in "iuf" and dtype != traced.dtype):
        raise ValueError(f"replay: argument {position} ({kept.names[position]}) was traced "
                         f"with shape {traced.shape} and dtype {traced.dtype}, not "
                         f"{new.shape} and {new.dtype}; the graph holds for the shapes "
                         f"traced: trace again for others")


def _check_constant(kept: Recorded, position: int, arg) -> None:
    """A non-differentiated argument: an array may change (same shape and dtype) unless
    the program sliced it in Python; anything else must be the same."""
    traced, label = kept.args[position], kept.names[position]
    if isinstance(traced, np.ndarray):
        if not isinstance(arg, np.ndarray) or arg.shape != traced.shape or \
                arg.dtype != traced.dtype:
            got = (f"{arg.shape} and {arg.dtype}" if isinstance(arg, np.ndarray)
                   else type(arg).__name__)
            raise ValueError(f"replay: argument {position} ({label}) was traced as an array "
                             f"of shape {traced.shape} and dtype {traced.dtype}, not {got}")
        snapshot = kept.snapshots.get(position)
        if snapshot is not None and not np.array_equal(arg, snapshot):
            raise ValueError(f"replay: argument {position} ({label}) changed, but the program "
                             f"computed constants from it in Python (a slice such as "
                             f"{label}[:, t]), which replay cannot compute again; index it "
                             f"before the call (pass the pieces as arguments), or trace again")
        return
    try:
        same = arg is traced or bool(arg == traced)
    except (TypeError, ValueError):
        same = False
    if not same:
        raise ValueError(f"replay: argument {position} ({label}) was traced as {traced!r} and "
                         f"is now {arg!r}; an argument that is not an array may shape the "
                         f"program (a count of steps, an option), so it must stay the same: "
                         f"trace again")


def _check_read(event: Read, now, tape: Tape) -> None:
    if not _same(now, event.result):
        what = getattr(event.reader, "__name__", "a value read")
        raise ValueError(f"replay: the program read its values ({what}, before vertex "
                         f"v{tape.next_index}) and they read differently now: its path "
                         f"through the code, and so its graph, depends on them; trace it "
                         f"again at these inputs (a ReLU written as minirad.ops.relu or "
                         f"np.maximum(x, 0) replays at any inputs, np.where(x > 0, ...) "
                         f"does not)")


def _same(a, b) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)
                and all(_same(x, y) for x, y in zip(a, b)))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
