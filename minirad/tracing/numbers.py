"""A long program of numbers: its steps recorded, and its edges made, faster.

Two things cost most when a program of a million operations on numbers is
traced: recording each step through :func:`~minirad.tracing.tracer.record`,
whose loop over the operands serves every kind of operation, and making the
graph's edges one step at a time in :func:`~minirad.tracing.tracer.traced_edges`.
This module does both faster, on long tapes only (above :data:`VECTOR_VERTICES`
values; below, the tracer's own code runs, the code a student reads), and to the
same result, bit for bit (``tests/tracing/test_numbers.py``):

* :class:`FastArithmetic` gives a long tape's numbers ``+``, ``-`` and ``*`` that
  append the very step ``record`` would (its rule, operands and no parameters),
  without the loop;
* :func:`number_edges` makes the same edges, in the same order, column by column:
  the operands of all steps at once as arrays, then each rule's partial on the
  operands of all its steps.

The second is exact only where a rule's partial is one formula for numbers and
arrays (the operation table says so by giving no ``array_partials``: ``b``,
``1.0 / b``, ``1.0 - y * y``), made of arithmetic that IEEE 754 rounds the same in
Python and numpy; the other rules' partials (``math.cos`` against ``np.cos``, a
kink's branch) are worked out step by step on Python floats, as the loop does.
Where the columns are not what it expects (a rule of more than two operands, data
that is an array, a partial that is not finite, whose error must name the edge),
:func:`number_edges` answers None and the loop runs instead.

>>> from minirad import ops
>>> from minirad.tracing.tracer import Tape, record, OPS
>>> tape = Tape()
>>> x = tape.append(3.0, True)
>>> y = record(OPS["mul"], x, x)                  # one edge: d(x * x)/dx = x + x
>>> z = record(OPS["sin"], record(OPS["add"], y, 1.0))
>>> sources, targets, labels, _ = number_edges(tape, [0, 1, 2, 3], [0, 1, 2, 3])
>>> sources.tolist(), targets.tolist(), labels.tolist()[:2]
([0, 1, 2], [1, 2, 3], [6.0, 1.0])
"""

from __future__ import annotations

import operator

import numpy as np

from .ops import OPS, Op, partial_at

__all__ = ["FastArithmetic", "VECTOR_VERTICES", "number_edges"]

VECTOR_VERTICES = 2_000
"""Above this many values on a tape, its numbers record ``+``, ``-``, ``*`` by
:class:`FastArithmetic`, and above this many vertices :func:`minirad.trace` makes the
edges of a program of numbers with :func:`number_edges`; below, the tracer's own code
runs, the code a student reads."""

NO_PARAMS: dict = {}
"""The parameters of a step that has none (shared, never written into)."""

ADD, SUB, MUL = OPS["add"], OPS["sub"], OPS["mul"]


class FastArithmetic:
    """``+``, ``-`` and ``*`` of a traced number with a number or another traced number
    of the same tape: the step :func:`~minirad.tracing.tracer.record` appends, appended
    directly.  Anything else (a constant of another type, an array, a dual number) goes
    to ``record``.  The tracer's numbers take these methods on long tapes
    (:class:`minirad.tracing.tracer.Number`)."""

    __slots__ = ()

    def _step(self, rule, other, swapped: bool):
        tape, i = self.tape, self.index
        if type(other) is float:
            active = tape.active[i]
            operands = (other, i) if swapped else (i, other)
            a, b = (other, self.value) if swapped else (self.value, other)
        elif getattr(other, "tape", None) is tape and type(other.value) is float:
            active = tape.active[i] or tape.active[other.index]   # (never swapped)
            operands, a, b = (i, other.index), self.value, other.value
        else:
            return self._record(rule, (other, self) if swapped else (self, other))
        return tape.append(rule.value(a, b), active, rule, operands, NO_PARAMS)

    def __add__(self, other):
        return self._step(ADD, other, False)

    def __radd__(self, other):
        return self._step(ADD, other, True)

    def __sub__(self, other):
        return self._step(SUB, other, False)

    def __rsub__(self, other):
        return self._step(SUB, other, True)

    def __mul__(self, other):
        return self._step(MUL, other, False)

    def __rmul__(self, other):
        return self._step(MUL, other, True)


def number_edges(tape, tape_of, vertex):
    """``(sources, targets, labels, [])`` of the graph of numbers whose vertex ``v`` is
    the value at tape position ``tape_of[v]`` (``vertex`` maps back), as int64, int64
    and float64 arrays, as :func:`~minirad.tracing.tracer.traced_edges` gives them;
    None where the tracer's loop must make them."""
    try:    # (a value of data that is an array: the loop's case)
        values = np.fromiter(tape.values, float, len(tape.values))
    except (TypeError, ValueError):
        return None
    active, vertex = np.array(tape.active, dtype=bool), np.asarray(vertex, dtype=np.int64)
    parts = []
    for start in range(0, len(tape_of), CHUNK):   # a bounded amount of memory at a time
        part = _edges(tape, tape_of[start:start + CHUNK], values, active, vertex)
        if part is None:
            return None
        parts.append(part)
    return (*(np.concatenate(column) for column in zip(*parts)), [])


CHUNK = 2 ** 20
"""How many steps :func:`number_edges` works on at once."""


def _edges(tape, tape_of, values, active, vertex):
    """The edges of the steps at tape positions ``tape_of``, in order; None where the
    tracer's loop must make them."""
    made = [t for t in tape_of if tape.rules[t] is not None and tape.active[t]]
    if not made:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    rules = list(map(tape.rules.__getitem__, made))
    operands = list(map(tape.operands.__getitem__, made))
    made = np.array(made, dtype=np.int64)
    arity = np.fromiter(map(len, operands), np.int64, len(operands))
    kinds = np.fromiter(map(id, rules), np.int64, len(rules))
    by_kind = np.argsort(kinds, kind="stable")
    starts = np.flatnonzero(np.diff(kinds[by_kind], prepend=kinds[by_kind[:1]] - 1))
    groups = np.split(by_kind, starts[1:])    # the steps of each rule
    if (arity > 2).any() or any(type(rules[steps[0]]) is not Op for steps in groups):
        return None
    # each operand slot (0, 1) of every step: its tape position, value, and whether a vertex
    first, a, traced_a = _column(list(map(_FIRST, operands)), values, active)
    second, b, traced_b = _column(list(map(_LAST, operands)), values, active)
    traced_b &= arity == 2
    twice = traced_a & traced_b & (first == second)          # x * x: one edge
    y = values[made]
    labels_a, labels_b = np.empty(len(made)), np.empty(len(made))
    for steps in groups:
        rule = rules[steps[0]]
        for slot, labels, traced in ((0, labels_a, traced_a), (1, labels_b, traced_b & ~twice)):
            at = steps[traced[steps]]
            if not len(at):
                continue
            both = twice[at]
            try:
                if rule.array_partials is None:
                    d = _partial(rule, slot, a[at], b[at], y[at])
                    if slot == 0 and both.any():
                        d = np.where(both, d + _partial(rule, 1, a[at], b[at], y[at]), d)
                else:    # step by step, on Python's floats, as number_label does
                    d = [partial_at(rule, (0, 1) if two else (slot,),
                                    operands[:rule.arity], out)
                         for two, *operands, out in zip(both.tolist(), a[at].tolist(),
                                                        b[at].tolist(), y[at].tolist())]
            except (ArithmeticError, TypeError, ValueError):   # the loop names the edge
                return None
            labels[at] = d
    # the edges of each step in order: its first operand's, then its second's
    keep = np.concatenate([traced_a, traced_b & ~twice])
    order = np.argsort(np.concatenate([2 * np.arange(len(made)), 2 * np.arange(len(made)) + 1])
                       [keep], kind="stable")
    sources = vertex[np.concatenate([first, second])[keep]][order]
    targets = vertex[np.concatenate([made, made])[keep]][order]
    labels = np.concatenate([labels_a, labels_b])[keep][order]
    if not np.isfinite(labels).all():   # the loop names the first edge that is not
        return None
    return sources, targets, labels


_FIRST, _LAST = operator.itemgetter(0), operator.itemgetter(-1)


def _column(operands, values, active):
    """For one operand slot of every step: its tape position (-1 for a constant), its
    value, and whether it is a vertex."""
    is_position = np.array([type(o) is int for o in operands], dtype=bool)
    number = np.array(operands, dtype=float)    # positions are exact as floats (< 2**53)
    position = np.where(is_position, number, -1).astype(np.int64)
    return position, np.where(is_position, values[position], number), (
        is_position & active[position])


def _partial(rule: Op, i: int, a, b, y) -> np.ndarray:
    """Partial ``i`` of ``rule`` on arrays of its operands ``a`` (and ``b``)."""
    with np.errstate(all="ignore"):
        d = rule.partials[i](a, b, y) if rule.arity == 2 else rule.partials[i](a, y)
    return np.broadcast_to(np.asarray(d, dtype=float), y.shape)
