"""What an array trace writes down so that its graph can run again at new inputs
(:func:`minirad.tracing.replay.replay` reads it).

While :func:`minirad.trace` runs a numpy program on traced arrays, every call the
program itself makes to a rule (``x * y``, ``np.sum``, ``x @ W``,
``minirad.ops.relu``, ``softmax_cross_entropy``, ...) is written down as a
:class:`Step`: the rule, its arguments with each traced operand replaced by its
vertex number (a :class:`Slot`), and the vertices the call made.  The rules that
rule calls in turn are not steps of their own: they run again with it.  Each
value the program *read* (a comparison such as ``x > 0``, ``bool(x)``,
``np.argmax``, ``np.where(x)``, :func:`minirad.detach`) is written down as a
:class:`Read`, with what it gave; a read within a rule that made vertices is
that rule's own, and happens again when it runs again.

Replaying reruns the steps, in order, on the new values, so the library's own
rules make every value and every Jacobian block again while the program's Python
does not run; and it reads every read again: when one gives something else,
the program would have taken another path, and replay refuses.

A constant array a step used is kept as the trace's read-only copy, so changing
the caller's array after tracing changes nothing; a constant that *is* a
non-differentiated argument of the traced function is written down as that
argument (an :class:`Argument`), so that replay can pass a new one (a new
minibatch).  A constant the program derived from such an argument in Python
(``x[:, t]``) cannot be derived again without running the program: it is kept,
and replay refuses a new value of that argument.

>>> import numpy as np
>>> from minirad import ops, trace
>>> g = trace(lambda x: ops.relu(x * 2.0).sum() if (x > -5).all() else x.sum(), np.ones(3))
>>> events = g.memos["tracing.recorded"].events
>>> [type(event).__name__ for event in events]        # x > -5, then *, relu, sum
['Read', 'Step', 'Step', 'Step']
>>> events[1].args[1:], (events[1].first, events[1].stop)   # x * 2.0 made vertex 1
((Slot(index=0), 2.0), (1, 2))
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["Argument", "Derived", "Operand", "Read", "Recorded", "Recording", "Slot", "Step",
           "call", "on_values", "read", "recorded", "replayable"]


class Operand:
    """The base class of a traced array (:class:`minirad.tracing.arrays.Tracked`): what a
    recording recognises as an operand.  It has a ``tape``, an ``index`` and a ``value``."""

    __slots__ = ()


class Slot(NamedTuple):
    """A traced operand, by its vertex number."""

    index: int


class Argument(NamedTuple):
    """A non-differentiated argument of the traced function, used as it is."""

    position: int


class Derived(NamedTuple):
    """A constant the program computed in Python from the argument at ``position``
    (a slice of it, say): kept as ``array``, valid while that argument is unchanged."""

    position: int
    array: np.ndarray


class Step(NamedTuple):
    """One call of ``rule`` by the program: it made the vertices ``first .. stop - 1``."""

    rule: Any
    args: tuple
    kwargs: dict
    first: int
    stop: int


class Read(NamedTuple):
    """The program read its values: ``reader`` on the plain values gave ``result``."""

    reader: Any
    args: tuple
    kwargs: dict
    result: Any


class Recording:
    """The steps and reads of one trace, in the order the program made them, and the
    non-differentiated arguments (id -> (position, the argument))."""

    __slots__ = ("events", "depth", "arguments", "derived", "pending")

    def __init__(self):
        self.events: list[Step | Read] = []
        self.depth = 0
        self.pending: list[Read] = []    # reads within the call under way
        self.arguments: dict[int, tuple[int, Any]] = {}
        self.derived: set[int] = set()   # positions of arguments a Derived came from


def _tape_in(items):
    """The tape of the first traced operand among ``items`` (one level into lists)."""
    for x in items:
        if isinstance(x, Operand):
            return x.tape
        if isinstance(x, (list, tuple)):
            for y in x:
                if isinstance(y, Operand):
                    return y.tape
    return None


def call(rule, args: tuple, kwargs: dict):
    """``rule(*args, **kwargs)``, written down as a step of the trace when the program
    itself made the call (not a rule within a rule) and it made vertices."""
    tape = _tape_in(args) or (_tape_in(kwargs.values()) if kwargs else None)
    if tape is None or tape.recording.depth:
        return rule(*args, **kwargs)
    recording = tape.recording
    first = len(tape.values)
    recording.depth, recording.pending = 1, []
    try:
        result = rule(*args, **kwargs)
    finally:
        recording.depth = 0
    if len(tape.values) > first:
        recording.events.append(Step(rule, _frozen(args, tape),
                                     _frozen(kwargs, tape) if kwargs else {}, first,
                                     len(tape.values)))
    else:   # a call that only read values (np.where(x), a rule's argmax): its reads count
        recording.events += recording.pending
    return result


def replayable(rule):
    """``rule`` as a function whose calls by the program are steps (see :func:`call`)."""
    def recorded(*args, **kwargs):
        return call(rule, args, kwargs)
    recorded.__name__, recorded.__qualname__ = rule.__name__, rule.__qualname__
    recorded.__doc__, recorded.__wrapped__ = rule.__doc__, rule
    return recorded


def read(reader, *args, **kwargs):
    """``reader`` on the plain values of ``args`` (a comparison, ``bool``, ``argmax``),
    written down with its result."""
    result = on_values(reader, args, kwargs)
    tape = _tape_in(args) or (_tape_in(kwargs.values()) if kwargs else None)
    if tape is not None:
        kept = np.array(result) if isinstance(result, np.ndarray) else result
        event = Read(reader, _frozen(args, tape), _frozen(kwargs, tape), kept)
        recording = tape.recording
        # within a call, the read counts only if the call makes no vertex (else the rule
        # runs again on replay and reads again itself)
        (recording.pending if recording.depth else recording.events).append(event)
    return result


def on_values(reader, args, kwargs):
    """``reader(*args, **kwargs)`` with every traced operand replaced by its value."""
    return reader(*(_plain(a) for a in args), **{k: _plain(v) for k, v in kwargs.items()})


def _plain(x):
    if isinstance(x, Operand):
        return x.value
    if isinstance(x, (list, tuple)) and any(isinstance(y, Operand) for y in x):
        return type(x)(_plain(y) for y in x)
    return x


def _frozen(x, tape):
    """``x`` as a step keeps it: traced operands as slots, arguments by position, other
    constant arrays as read-only copies (the trace's own copy when it made one)."""
    if isinstance(x, Operand):
        return Slot(x.index)
    if isinstance(x, (float, int, str)) or x is None:
        return x
    if isinstance(x, tuple):
        return tuple([_frozen(y, tape) for y in x])
    if isinstance(x, list):
        return [_frozen(y, tape) for y in x]
    if isinstance(x, dict):
        return {k: _frozen(v, tape) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return _constant(x, tape)
    return x


def _constant(x: np.ndarray, tape):
    arguments = tape.recording.arguments
    entry = arguments.get(id(x))
    if entry is not None and entry[1] is x:
        return Argument(entry[0])
    copy = tape.copies.get((id(x), x.dtype))
    if copy is not None and copy[0] is x:
        kept = copy[1]
    elif not x.flags.writeable and x.base is None:
        kept = x
    else:
        kept = np.array(x)
        kept.flags.writeable = False
    for position, argument in arguments.values():
        if isinstance(argument, np.ndarray) and np.may_share_memory(x, argument):
            tape.recording.derived.add(position)
            return Derived(position, kept)
    return kept


class Recorded(NamedTuple):
    """What a graph traced from an array program keeps for replay (in its memo
    ``"tracing.recorded"``): the events, the call (``args``: each differentiated
    argument as the array traced, the others as given; ``snapshots``: copies of the
    arguments a :class:`Derived` constant came from), the positions differentiated,
    the parameter names, the vertices the program returned (``several``: as a tuple),
    the vertex names it gave (:func:`minirad.tracing.arrays.name`) and each vertex's
    operation.  It holds none of the graph's values."""

    events: tuple
    args: tuple
    snapshots: dict
    wrt: tuple
    names: tuple
    returned: tuple
    several: bool
    vertex_names: tuple
    vertex_ops: tuple


def recorded(tape, args, wrt, names, returned, several) -> Recorded:
    """The :class:`Recorded` of a finished trace (``returned``: vertex numbers)."""
    snapshots = {p: np.array(args[p]) for p in tape.recording.derived}
    return Recorded(tuple(tape.recording.events), tuple(args), snapshots, tuple(wrt),
                    tuple(names), tuple(returned), several, tuple(tape.names),
                    tuple(tape.ops))

