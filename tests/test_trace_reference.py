"""The tracer against a reference tracer written the plain way.

The tracer records most operations as a code and operand numbers and works
their partials out afterwards, for the whole tape at once (minirad/trace.py).
The reference below does what the module docstring describes and nothing
more: every operation calls :func:`minirad.ops.evaluate` for its value and
partials and appends its vertex and in-edges on the spot.  Both run the same
random programs, which use every operation of the table in every spelling
(operators both ways round, Python and numpy constants, an operand twice,
minirad.ops functions, numpy ufuncs, abs and unary minus); the graphs must
agree exactly: vertex numbering, names, templates, edges in order, and
every value and partial to the last bit.
"""

import math

import numpy as np
import pytest

from minirad import ops, trace
from minirad.tracing.ops import OPS, NonFiniteError, evaluate


class Recorder:
    """The reference tape: per vertex its value, template and in-edges."""

    def __init__(self):
        self.values, self.templates, self.in_edges = [], [], []
        self.operations = set()  # the names of the operations recorded

    def vertex(self, value, template, in_edges):
        self.values.append(value)
        self.templates.append(template)
        self.in_edges.append(in_edges)
        return len(self.values) - 1


class Ref:
    """A traced scalar of the reference: a value and a vertex number."""

    def __init__(self, recorder, index, value):
        self.recorder, self.index, self.value = recorder, index, value

    def _record(self, op, args):
        """Record ``op`` on ``args`` (Refs and numbers) with the table's rules."""
        self.recorder.operations.add(op.name)
        floats = tuple(a.value if isinstance(a, Ref) else float(a) for a in args)
        wrt = tuple(i for i, a in enumerate(args) if isinstance(a, Ref))
        try:
            out, partials = evaluate(op, floats, wrt)
        except NonFiniteError as error:
            raise ReferenceFailure(op.name, len(self.recorder.values)) from error
        # operands in the template: {0}, {1} by first appearance (one vertex
        # twice is {0} twice), constants written in as their repr
        slots, pieces = {}, []
        for a in args:
            if isinstance(a, Ref):
                pieces.append(f"{{{slots.setdefault(a.index, len(slots))}}}")
            else:
                pieces.append(repr(float(a)))
        template = op.template.format(*pieces)
        edges = {}  # one edge per vertex, partials summed (x * x: 2x)
        for i, d in zip(wrt, partials):
            u = args[i].index
            edges[u] = edges[u] + d if u in edges else d
        v = self.recorder.vertex(out, template, list(edges.items()))
        return Ref(self.recorder, v, out)

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


# numpy calls x.sin(), x.exp(), ... on objects it does not know
for _name in ("sin", "cos", "tan", "exp", "log", "log1p", "sqrt", "tanh", "arctan"):
    setattr(Ref, _name, lambda self, _op=OPS[_name]: self._record(_op, (self,)))


class ReferenceFailure(Exception):
    def __init__(self, op, vertex):
        super().__init__(op, vertex)
        self.op, self.vertex = op, vertex


def reference_trace(f, args, names):
    """What trace(f, *args) should give, as plain lists; scalar and list arguments."""
    recorder = Recorder()
    traced, input_names = [], []
    for arg, name in zip(args, names):
        if isinstance(arg, list):
            elements = []
            for j, x in enumerate(arg):
                elements.append(Ref(recorder, recorder.vertex(x, "input", []), x))
                input_names.append(f"{name}[{j}]")
            traced.append(elements)
        else:
            traced.append(Ref(recorder, recorder.vertex(arg, "input", []), arg))
            input_names.append(name)
    n_inputs = len(recorder.values)
    results = list(f(*traced))
    used = {u for edges in recorder.in_edges for u, _ in edges}
    returned = [r.index for r in results if isinstance(r, Ref)]
    outputs = []
    for r in results:
        if isinstance(r, Ref):
            v = r.index
            # an input, a value used later or returned twice gets a unit copy
            if v < n_inputs or v in used or returned.count(v) > 1:
                v = recorder.vertex(r.value, "{0}", [(v, 1.0)])
                recorder.operations.add("copy")
        else:  # a constant output: a vertex of its own without in-edges
            v = recorder.vertex(float(r), repr(float(r)), [])
        outputs.append(v)
    n = len(recorder.values)
    names = [f"v{i}" for i in range(n)]
    names[:n_inputs] = input_names
    for j, v in enumerate(outputs):
        names[v] = f"y[{j}]"
    sources = [u for edges in recorder.in_edges for u, _ in edges]
    targets = [v for v, edges in enumerate(recorder.in_edges) for _ in edges]
    partials = [d for edges in recorder.in_edges for _, d in edges]
    return {"names": names, "ops": recorder.templates, "values": recorder.values,
            "sources": sources, "targets": targets, "partials": partials,
            "inputs": list(range(n_inputs)), "outputs": outputs, "used": recorder.operations}


# ------------------------------------------------------------- random programs
UNARY = ("sin", "cos", "tan", "exp", "log", "log1p", "sqrt", "tanh", "sigmoid", "relu",
         "arctan")
NUMPY_UNARY = ("sin", "cos", "tan", "exp", "log", "log1p", "sqrt", "tanh", "arctan")


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
        kind = str(rng.choice([*STEPS, "unary", "numpy"]))
        plan.append((kind, rng.integers(1 << 30), rng.integers(1 << 30),
                     rng.integers(len(UNARY)), rng.integers(6), float(rng.uniform(-2, 2))))

    def program(a, b, x):
        pool = [a, b, x[0], x[1]]
        for kind, i, j, k, which, c in plan:
            u, w = pool[i % len(pool)], pool[j % len(pool)]
            c = round(c, 2) or 0.5  # a few distinct constants, so templates repeat
            if kind == "unary":
                pool.append(getattr(ops, UNARY[k])(u))
            elif kind == "numpy":
                pool.append(getattr(np, NUMPY_UNARY[k % len(NUMPY_UNARY)])(u))
            else:
                pool.append(STEPS[kind][which](u, w, c))
        # outputs: some intermediates, an input, a value twice, a constant
        picks = [pool[-1], pool[len(pool) // 2], pool[-1], pool[1], 2.5, pool[-3]]
        return tuple(picks[: 1 + int(plan[0][1] % len(picks))])

    return program


def assert_same(g, ref):
    assert list(g.names) == ref["names"]
    assert list(g.ops) == ref["ops"]
    assert list(g.inputs) == ref["inputs"] and list(g.outputs) == ref["outputs"]
    assert g.sources.tolist() == ref["sources"] and g.targets.tolist() == ref["targets"]
    # to the last bit: compare the float64 bit patterns
    assert np.array_equal(g.values.view(np.int64), np.array(ref["values"]).view(np.int64))
    expected = np.array(ref["partials"], dtype=np.float64)
    differ = np.flatnonzero(g.partials.view(np.int64) != expected.view(np.int64))
    assert len(differ) == 0, [(g.ops[g.targets[e]], g.partials[e], expected[e]) for e in differ]
    # the in-edge offsets the tracer hands the graph are those it would count itself
    counted = np.zeros(g.n_vertices + 1, dtype=np.int64)
    np.cumsum(np.bincount(g.targets, minlength=g.n_vertices), out=counted[1:])
    assert np.array_equal(g.in_edges_ptr, counted)


def test_random_programs_trace_exactly_as_the_reference():
    rng = np.random.default_rng(20261123)
    traced = failed = 0
    used = set()
    for _ in range(400):
        program = random_program(rng, int(rng.integers(1, 40)))
        args = (float(rng.uniform(0.2, 1.5)), float(rng.uniform(-1.5, -0.2)),
                [float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2))])
        try:
            ref = reference_trace(program, args, ["a", "b", "x"])
        except ReferenceFailure as failure:
            # the tracer refuses the same operation at the same vertex
            with pytest.raises(ValueError, match=rf"^{failure.op}\(.*\) at vertex "
                                                 rf"v{failure.vertex} is not finite"):
                trace(program, *args)
            failed += 1
            continue
        g = trace(program, *args)
        assert_same(g, ref)
        used |= ref["used"]
        traced += 1
    assert traced >= 200 and failed >= 50  # both halves of the comparison were exercised
    assert used == set(OPS)  # every operation of the table, in some graph


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
    assert_same(g, reference_trace(program, args, ["a", "b", "x"]))
    assert list(g.ops).count("{0} * {0}") == 2 and "{0} - {0}" in g.ops
