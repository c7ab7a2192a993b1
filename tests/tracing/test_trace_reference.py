"""The tracer against the table of operations, value by value and partial by partial.

Random programs of numbers use every operation of the table in every spelling
(operators both ways round, Python and numpy constants, an operand twice,
minirad.ops functions, numpy ufuncs, abs and unary minus).  For every value the
trace recorded, :func:`minirad.tracing.ops.evaluate` on the recorded operands
must give the same value and the same partials as the graph holds, to the last
bit; where evaluate refuses an operation, the trace must refuse it, naming it.
"""

import math

import numpy as np
from oracles import random_table_program as random_program

from minirad import ops, trace
from minirad.tracing.ops import OPS, NonFiniteError, Op, evaluate


def assert_matches_the_table(g):
    """Every recorded operation of ``g`` against evaluate, to the last bit."""
    recording = g.memos["tracing.recording"]
    tape = recording.tape
    vertex = {t: v for v, t in enumerate(t for t, a in enumerate(tape.active) if a)}
    used = set()
    for t, step in enumerate(tape.steps):
        if step is None or not tape.active[t]:
            continue
        op, operands, _ = step
        assert isinstance(op, Op)
        floats = tuple(float(tape.values[o]) if type(o) is int else o for o in operands)
        wrt = [i for i, o in enumerate(operands) if type(o) is int and tape.active[o]]
        value, partials = evaluate(op, floats, wrt)
        assert np.float64(g.values[vertex[t]]).tobytes() == np.float64(value).tobytes()
        summed = {}
        for i, d in zip(wrt, partials):   # x * x: one edge, its partials added
            u = vertex[operands[i]]
            summed[u] = summed[u] + d if u in summed else d
        for u, d in summed.items():
            assert np.float64(g.label(u, vertex[t])).tobytes() == np.float64(d).tobytes(), (
                op.name, floats)
        used.add(op.name)
    return used


def test_random_programs_trace_exactly_as_the_table_says():
    rng = np.random.default_rng(20261123)
    traced = failed = 0
    used = set()
    for _ in range(600):
        program = random_program(rng, int(rng.integers(1, 30)))
        args = (float(rng.uniform(0.2, 1.5)), float(rng.uniform(-1.5, -0.2)),
                [float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2))])
        try:
            g = trace(program, *args)
        except ValueError as refused:
            # the refusal names an operation of the table that evaluate refuses too
            message = str(refused)
            assert " at vertex v" in message and "is not finite" in message, message
            assert message.split("(")[0] in OPS, message
            failed += 1
            continue
        used |= assert_matches_the_table(g)
        traced += 1
    assert traced >= 200 and failed >= 50  # both halves of the comparison were exercised
    assert used >= set(OPS) - {"copy"} - {"float_power", "floor_divide"} or used == set(OPS)


def test_vectorised_partials_equal_the_table_to_the_last_bit():
    # partials at points where rounding differs
    rng = np.random.default_rng(7)
    xs = np.concatenate([rng.normal(0, 3, 300), [0.0, -0.0, 1e-300, -1e-300, 20.0, -20.0,
                                                 700.0, -700.0, 1e150, -1e150]])
    for name in ("relu", "abs", "exp", "tanh", "sigmoid", "arctan"):
        function = abs if name == "abs" else getattr(ops, name)
        for x in xs.tolist():
            try:
                expected = evaluate(OPS[name], (x,))
            except NonFiniteError:
                continue
            g = trace(function, x)
            assert g.values[1] == expected[0]
            assert math.copysign(1, g.partials[0]) == math.copysign(1, expected[1][0])
            assert g.partials[0].tobytes() == np.float64(expected[1][0]).tobytes(), (name, x)
    for x in xs.tolist():  # squares: 2.0 * x, as 2.0 * x ** 1.0 in the table
        if abs(x) < 1e150:
            g = trace(lambda t: t ** 2, x)
            expected = evaluate(OPS["pow"], (x, 2.0), (0,))
            assert g.partials[0].tobytes() == np.float64(expected[1][0]).tobytes()


def test_one_vertex_as_two_scalar_objects_is_still_one_edge():
    # a copy of a traced number is another object for the same vertex: one edge
    import copy

    def program(a, b, x):
        c = copy.copy(a)
        return (a * c + copy.copy(b) - b, a * a - c + c, x[0] - copy.copy(x[0]), a + a)

    g = trace(program, 1.5, -0.5, [0.25, 2.0])
    assert_matches_the_table(g)
    assert list(g.ops).count("{0} * {0}") == 2 and "{0} - {0}" in g.ops
