"""The opcode tape behind minirad.trace against the plain tracer it must equal.

minirad.trace runs programs of numbers on minirad/tracing/tape.py, which
records most operations as a code and operand numbers and works their
partials out afterwards, for the whole tape at once.  The library's
teaching tracer, minirad/tracing/tracer.py, does what its docstring says and
nothing more: every operation calls :func:`minirad.tracing.ops.evaluate` for
its value and partials and appends its vertex and in-edges on the spot.
Both run the same random programs, which use every operation of the table
in every spelling (operators both ways round, Python and numpy constants,
an operand twice, minirad.ops functions, numpy ufuncs, abs and unary minus);
the graphs must agree exactly: vertex numbering, names, templates, edges in
order, and every value and partial to the last bit.
"""

import math

import numpy as np
import pytest

from minirad import ops, trace
from minirad.tracing import tracer
from minirad.tracing.ops import OPS, NonFiniteError, evaluate


def reference_trace(f, args, monkeypatch):
    """The teaching tracer's graph of ``f`` at ``args``, and the names of the operations
    it recorded (read off its calls of evaluate)."""
    used = set()

    def recording(op, floats, wrt=None):
        used.add(op.name)
        return evaluate(op, floats, wrt)

    with monkeypatch.context() as patch:
        patch.setattr(tracer, "evaluate", recording)
        return tracer.trace(f, *args), used


# ------------------------------------------------------------- random programs
# every function of the table, as minirad.ops and as numpy spells it
UNARY = tuple(name for name, op in OPS.items() if op.arity == 1 and hasattr(ops, name))
# numpy runs these on an object it does not know by calling its method of the same name
# (floor, trunc, sign and reciprocal call math.floor, <, 1 / x instead)
NUMPY_UNARY = tuple(op.ufunc for op in OPS.values() if op.arity == 1 and op.ufunc == op.name
                    and op.name not in ("positive", "sign", "floor", "ceil", "trunc",
                                        "reciprocal"))
BINARY = tuple(name for name, op in OPS.items() if op.arity == 2 and hasattr(ops, name))


# six ways to combine two pool values u, w and a constant c, per kind of step
STEPS = {
    "binary": (lambda u, w, c: u + w, lambda u, w, c: u - w, lambda u, w, c: u * w,
               lambda u, w, c: u / w, lambda u, w, c: ops.maximum(u, w),
               lambda u, w, c: ops.minimum(u, w)),
    "constant": (lambda u, w, c: u + c, lambda u, w, c: c + u, lambda u, w, c: u - c,
                 lambda u, w, c: c - u, lambda u, w, c: u * c, lambda u, w, c: c * u),
    # numpy and integer constants, division by and of a constant, maximum with one
    "other constant": (lambda u, w, c: np.float64(c) * u, lambda u, w, c: u * 2,
                       lambda u, w, c: 3 - u, lambda u, w, c: u + np.float64(c),
                       lambda u, w, c: c / u, lambda u, w, c: ops.maximum(u, c)),
    "sign": (lambda u, w, c: -u, lambda u, w, c: abs(u), lambda u, w, c: +u * 1.0,
             lambda u, w, c: -(u - w), lambda u, w, c: abs(u - c),
             lambda u, w, c: ops.relu(-u)),
    "twice": (lambda u, w, c: u + u, lambda u, w, c: u - u, lambda u, w, c: u * u,
              lambda u, w, c: u / u, lambda u, w, c: ops.maximum(u, u),
              lambda u, w, c: u ** u),
    "pow": (lambda u, w, c: u ** 2, lambda u, w, c: u ** 2.0, lambda u, w, c: u ** 3,
            lambda u, w, c: u ** c, lambda u, w, c: 2.0 ** u, lambda u, w, c: abs(u) ** w),
}


def random_program(rng, steps):
    """A straight-line program of ``steps`` random operations on (a, b, x[0], x[1]),
    as a function that runs on the tracer's scalars and on Refs alike."""
    plan = []
    for _ in range(steps):
        kind = str(rng.choice([*STEPS, "unary", "numpy", "binary table"]))
        plan.append((kind, rng.integers(1 << 30), rng.integers(1 << 30),
                     rng.integers(len(UNARY) * len(NUMPY_UNARY)), rng.integers(6),
                     float(rng.uniform(-2, 2))))

    def program(a, b, x):
        pool = [a, b, x[0], x[1]]
        for kind, i, j, k, which, c in plan:
            u, w = pool[i % len(pool)], pool[j % len(pool)]
            c = round(c, 2) or 0.5  # a few distinct constants, so templates repeat
            if kind == "unary":
                pool.append(getattr(ops, UNARY[k % len(UNARY)])(u))
            elif kind == "numpy":
                pool.append(getattr(np, NUMPY_UNARY[k % len(NUMPY_UNARY)])(u))
            elif kind == "binary table":
                pool.append(getattr(ops, BINARY[k % len(BINARY)])(u, w))
            else:
                pool.append(STEPS[kind][which](u, w, c))
        # outputs: some intermediates, an input, a value twice, a constant
        picks = [pool[-1], pool[len(pool) // 2], pool[-1], pool[1], 2.5, pool[-3]]
        return tuple(picks[: 1 + int(plan[0][1] % len(picks))])

    return program


def assert_same(g, ref):
    assert list(g.names) == list(ref.names)
    assert list(g.ops) == list(ref.ops)
    assert g.inputs == ref.inputs and g.outputs == ref.outputs
    assert g.sources.tolist() == ref.sources.tolist()
    assert g.targets.tolist() == ref.targets.tolist()
    # to the last bit: compare the float64 bit patterns
    assert np.array_equal(g.values.view(np.int64), ref.values.view(np.int64))
    differ = np.flatnonzero(g.partials.view(np.int64) != ref.partials.view(np.int64))
    assert len(differ) == 0, [(g.ops[g.targets[e]], g.partials[e], ref.partials[e])
                              for e in differ]
    # the in-edge offsets the tracer hands the graph are those it would count itself
    counted = np.zeros(g.n_vertices + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.targets, minlength=g.n_vertices), out=counted[1:])
    assert np.array_equal(g.in_edges_ptr, counted)


def test_random_programs_trace_exactly_as_the_reference(monkeypatch):
    rng = np.random.default_rng(20261123)
    traced = failed = 0
    used = set()
    for _ in range(600):
        program = random_program(rng, int(rng.integers(1, 30)))
        args = (float(rng.uniform(0.2, 1.5)), float(rng.uniform(-1.5, -0.2)),
                [float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2))])
        try:
            ref, ops_used = reference_trace(program, args, monkeypatch)
        except ValueError as failure:
            # the tape refuses the same operation at the same vertex, in the same words
            with pytest.raises(ValueError) as refused:
                trace(program, *args)
            assert str(refused.value) == str(failure)
            failed += 1
            continue
        assert_same(trace(program, *args), ref)
        used |= ops_used
        traced += 1
    assert traced >= 200 and failed >= 50  # both halves of the comparison were exercised
    assert used == set(OPS)  # every operation of the table, in some graph


def test_single_outputs_constants_and_names_follow_the_same_rules(monkeypatch):
    cases = [
        (lambda x: ops.sin(x) * 2.0, (0.5,), None),            # one output: y
        (lambda x, y: x * y, (2.0, 3.0), None),                # a parameter y: the output is f
        (lambda v1, x: (v1 * x, 1.5), (2.0, 3.0), None),       # a parameter v1; a constant
        (lambda x, c: x * c, (2.0, 4.0), [0]),                 # c is data, not a vertex
        (lambda x: np.tanh(np.array(x, dtype=object) * 0.5), ([0.1, -0.2, 0.3],), None),
    ]
    for f, args, wrt in cases:
        assert_same(trace(f, *args, wrt=wrt), tracer.trace(f, *args, wrt=wrt))
    assert tracer.trace(cases[1][0], 2.0, 3.0).names[-1] == "f"
    assert tracer.trace(cases[3][0], 2.0, 4.0, wrt=[0]).n_vertices == 2


def test_vectorised_partials_equal_the_table_to_the_last_bit():
    # the partials worked out per code afterwards, at points where rounding differs
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
    # x * x is recorded as such at once; a copy of a traced scalar is another
    # object for the same vertex, merged into one edge after the run
    import copy

    def program(a, b, x):
        c = copy.copy(a)
        return (a * c + copy.copy(b) - b, a * a - c + c, x[0] - copy.copy(x[0]), a + a)

    args = (1.5, -0.5, [0.25, 2.0])
    g = trace(program, *args)
    assert_same(g, tracer.trace(program, *args))
    assert list(g.ops).count("{0} * {0}") == 2 and "{0} - {0}" in g.ops
