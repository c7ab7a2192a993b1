"""Where the time of a scalar trace goes: the bench program, one layer at a time.

``bench_trace`` compares ``minirad.trace`` with the same program on plain
floats.  This script takes the difference apart.  It runs the program of
:func:`bench.bench_trace.program` (10^5 operations by default) on stand-ins
that each do one thing more than the last, then times the stages of the real
tracer after the program has run:

1. ``floats``: the floor, plain Python floats;
2. ``dispatch``: an object whose ``+ * **`` and relu return the object itself:
   what Python charges to call an operator method (relu as ``ops.relu``
   reaches it: a function, a ``getattr`` and a bound-method call);
3. ``+ new object``: each operation makes a new object with ``__slots__`` and
   sets its value (the least any operator-overloading tracer does);
4. ``+ vertex number``: ... sets its vertex number (``len`` of the value list)
   and appends its value;
5. ``+ checks``: ... tells traced operands from constants and checks the
   result is finite (the tracer's error behaviour needs both);
6. ``minirad run``: the real tracer's scalars, which also append the
   operation code and the operand numbers;
7. the stages after the run: converting the lists to numpy (operands;
   codes, numbers and values), working out every partial and template
   (``read_tape``), and freeing the lists.

Times are CPU times (``time.process_time``) measured in turns in one
process, the median of ``--repeats`` rounds, so a busy machine slows every
row alike.  ``python -m bench.trace_breakdown [--ops N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

import minirad
from bench.bench_trace import INPUTS, program, steps_for
from minirad import ops
from minirad.tracing import tape as trace_module
from minirad.tracing.ops import OPS

RELU = OPS["relu"]


def _relu_float(t):
    return t if t > 0.0 else 0.0


def _relu_traced(x):
    # what ops.relu does for a traced scalar
    record = getattr(x, "_record", None)
    return record(RELU, (x,))


class Dispatch:
    __slots__ = ("index", "value")

    def __add__(self, other):
        return self

    __mul__ = __rmul__ = __pow__ = __add__

    def _record(self, op, args):
        return self


class NewObject:
    __slots__ = ("index", "value")

    def __add__(self, other):
        new = NewObject()
        new.value = self.value + other.value
        return new

    def __mul__(self, other):
        new = NewObject()
        new.value = self.value * other.value
        return new

    def __rmul__(self, other):
        new = NewObject()
        new.value = other * self.value
        return new

    def __pow__(self, other):
        new = NewObject()
        new.value = self.value ** 2.0
        return new

    def _record(self, op, args):
        new = NewObject()
        new.value = op.value(self.value)
        return new


def _numbered_type(values):
    class Numbered:
        __slots__ = ("index", "value")

        def __add__(self, other):
            new = Numbered()
            new.value = out = self.value + other.value
            new.index = len(values)
            values.append(out)
            return new

        def __mul__(self, other):
            new = Numbered()
            new.value = out = self.value * other.value
            new.index = len(values)
            values.append(out)
            return new

        def __rmul__(self, other):
            new = Numbered()
            new.value = out = other * self.value
            new.index = len(values)
            values.append(out)
            return new

        def __pow__(self, other):
            new = Numbered()
            new.value = out = self.value ** 2.0
            new.index = len(values)
            values.append(out)
            return new

        def _record(self, op, args):
            new = Numbered()
            new.value = out = op.value(self.value)
            new.index = len(values)
            values.append(out)
            return new

    return Numbered


def _checked_type(values):
    class Checked:
        __slots__ = ("index", "value")

        def __add__(self, other):
            new = Checked()
            if type(other) is Checked:
                new.value = out = self.value + other.value
                if out - out:
                    raise ValueError("not finite")
            new.index = len(values)
            values.append(out)
            return new

        def __mul__(self, other):
            new = Checked()
            if type(other) is Checked:
                new.value = out = self.value * other.value
                if out - out:
                    raise ValueError("not finite")
            new.index = len(values)
            values.append(out)
            return new

        def __rmul__(self, other):
            c = other if type(other) is float else float(other)
            new = Checked()
            new.value = out = c * self.value
            if out - out:
                raise ValueError("not finite")
            new.index = len(values)
            values.append(out)
            return new

        def __pow__(self, other):
            if (type(other) is int or type(other) is float) and other == 2:
                out = self.value ** 2.0
                if out - out:
                    raise ValueError("not finite")
                new = Checked()
                new.value = out
                new.index = len(values)
                values.append(out)
                return new
            raise TypeError("squares only")

        def _record(self, op, args):
            if len(args) != 1:
                raise TypeError("one operand only")
            new = Checked()
            new.value = out = op.value(self.value)
            if out - out:
                raise ValueError("not finite")
            new.index = len(values)
            values.append(out)
            return new

    return Checked


def _stand_in(kind):
    """A function running the program on stand-in scalars of one layer."""
    values = []
    cls = {"dispatch": lambda: Dispatch, "new": lambda: NewObject,
           "numbered": lambda: _numbered_type(values), "checked": lambda: _checked_type(values)}
    scalar = cls[kind]()

    def run(steps):
        values.clear()
        xs = []
        for v in INPUTS:
            x = scalar()
            x.value, x.index = v, len(values)
            values.append(v)
            xs.append(x)
        program(*xs, steps, _relu_traced)

    return run


LAYERS = (("floats", "the program on Python floats (the floor)"),
          ("dispatch", "operator methods called, nothing made"),
          ("new", "+ a new object per operation, its value set"),
          ("numbered", "+ its vertex number (len) and value appended"),
          ("checked", "+ constant/traced test and finiteness check"),
          ("run", "minirad's scalars: + code and operand numbers appended"),
          ("operands", "after the run: operand list to numpy"),
          ("edges", "after the run: codes, numbers, values to numpy; partials, templates"),
          ("release", "after the run: the lists freed"),
          ("trace", "minirad.trace(...) end to end (a check on the sum)"))


def measure(size: int, repeats: int) -> dict[str, float]:
    steps = steps_for(size)
    stand_ins = {kind: _stand_in(kind) for kind in ("dispatch", "new", "numbered", "checked")}
    clock = time.process_time
    times: dict[str, list[float]] = {name: [] for name, _ in LAYERS}
    for _ in range(repeats):
        gc.collect()
        start = clock()
        program(*INPUTS, steps, _relu_float)
        times["floats"].append(clock() - start)
        for kind, run in stand_ins.items():
            gc.collect()
            start = clock()
            run(steps)
            times[kind].append(clock() - start)
        tape = trace_module.Tape()
        xs = [tape.new_input(v) for v in INPUTS]
        gc.collect()
        start = clock()
        program(*xs, steps, ops.relu)
        ran = clock()
        operands = np.array(tape.operands, dtype=np.int64)
        converted = clock()
        trace_module.read_tape(tape, operands)
        edged = clock()
        tape.release()
        released = clock()
        times["run"].append(ran - start)
        times["operands"].append(converted - ran)
        times["edges"].append(edged - converted)
        times["release"].append(released - edged)
        gc.collect()
        start = clock()
        minirad.trace(lambda x, y, z: program(x, y, z, steps, ops.relu), *INPUTS)
        times["trace"].append(clock() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def report(medians: dict[str, float], size: int) -> str:
    floor = medians["floats"]
    lines = [f"{size:,} operations; CPU time, median of the rounds; x = multiple of the floor",
             "", "| layer | what | ms | x floor | step |", "|---|---|---|---|---|"]
    previous = 0.0
    for name, what in LAYERS:
        ms = medians[name] * 1e3
        ratio = medians[name] / floor
        if name in ("floats", "trace"):
            step = "-"
        elif name in ("operands", "edges", "release"):
            step = f"+{ratio:.1f}x"
        else:
            step = f"+{ratio - previous:.1f}x"
            previous = ratio
        lines.append(f"| {name} | {what} | {ms:.1f} | {ratio:.1f}x | {step} |")
    after = sum(medians[k] for k in ("run", "operands", "edges", "release")) / floor
    lines.append(f"\nrun + stages after it: {after:.1f}x the floor "
                 f"(end to end: {medians['trace'] / floor:.1f}x)")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000, help="program size (operations)")
    parser.add_argument("--repeats", type=int, default=9, help="rounds; the median is shown")
    args = parser.parse_args(argv)
    print(report(measure(args.ops, args.repeats), args.ops))


if __name__ == "__main__":
    main()
