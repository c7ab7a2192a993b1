"""A long program of numbers (minirad.tracing.numbers) against the tracer's own code:
the steps FastArithmetic appends are the ones record appends, and the edges numpy
makes are the loop's (traced_edges), in the same order, with the same labels to the
last bit, and the same refusals with the same message."""

import numpy as np
import pytest
from test_trace_reference import random_program

from bench.bench_trace import INPUTS, program
from minirad import ops, trace
from minirad.tracing import numbers, tracer


def _traced(f, args, monkeypatch, by_numpy: bool):
    """The graph of ``f`` (or the refusal's message), recorded and made fast or by the
    tracer's own code; whether numpy made its edges, and how many steps FastArithmetic
    recorded."""
    made = []

    def spy(*a):
        made.append(numbers.number_edges(*a))
        return made[-1]

    steps = []
    step = numbers.FastArithmetic._step

    def counted(self, *a):
        steps.append(1)
        return step(self, *a)

    monkeypatch.setattr(tracer, "VECTOR_VERTICES", 0 if by_numpy else 10 ** 12)
    monkeypatch.setattr(tracer, "number_edges", spy)
    monkeypatch.setattr(numbers.FastArithmetic, "_step", counted)
    try:
        g = trace(f, *args)
    except ValueError as refused:
        return str(refused), False, 0
    assert bool(steps) <= by_numpy    # the fast steps only on a long tape
    return g, bool(made) and made[0] is not None, len(steps)


def _same(g, h) -> None:
    """The same graph, from the same tape: every step's rule, operands (of the same
    types), parameters, activity and value."""
    tapes = [x.memos["tracing.recording"].tape for x in (g, h)]
    columns = [[(t.rules, t.params, t.active, list(map(repr, t.values)),
                 [None if o is None else [(type(p), p) for p in o] for o in t.operands])
                for t in [tape]] for tape in tapes]
    assert columns[0] == columns[1]
    assert g.sources.tolist() == h.sources.tolist()
    assert g.targets.tolist() == h.targets.tolist()
    assert np.asarray(g.labels, dtype=float).tobytes() == np.asarray(h.labels,
                                                                     dtype=float).tobytes()
    assert np.asarray(g.values).tobytes() == np.asarray(h.values).tobytes()
    assert (g.inputs, g.outputs, g.names, g.wengert()) == (h.inputs, h.outputs, h.names,
                                                           h.wengert())


def test_random_programs_give_the_loop_s_graph_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(20261129)
    by_numpy = refused = traced = fast_steps = 0
    for _ in range(400):
        f = random_program(rng, int(rng.integers(1, 40)))
        args = (float(rng.uniform(0.2, 1.5)), float(rng.uniform(-1.5, -0.2)),
                [float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2))])
        fast, used, steps = _traced(f, args, monkeypatch, True)
        loop, _, _ = _traced(f, args, monkeypatch, False)
        if isinstance(loop, str):
            assert fast == loop
            refused += 1
            continue
        _same(fast, loop)
        by_numpy, traced, fast_steps = by_numpy + used, traced + 1, fast_steps + steps
    # numpy made every graph the loop made; both kinds of outcome were compared
    assert by_numpy == traced >= 150 and refused >= 30 and fast_steps >= 500


@pytest.mark.parametrize("chunk", [numbers.CHUNK, 97])
def test_a_long_program_with_constants_and_squares(monkeypatch, chunk):
    monkeypatch.setattr(numbers, "CHUNK", chunk)     # (97: the steps in 50 chunks)
    steps = 400      # 4,802 operations: relu, pow, constants on either side, shared operands
    f = lambda x, y, z: program(x, y, z, steps, ops.relu) * x - x * x / (1.0 + y * y)  # noqa: E731
    fast, used, fast_steps = _traced(f, INPUTS, monkeypatch, True)
    assert used and fast_steps >= 10 * steps    # +, -, * with constants and each other
    _same(fast, _traced(f, INPUTS, monkeypatch, False)[0])


def test_a_partial_that_is_not_finite_is_named_as_the_loop_names_it(monkeypatch):
    def f(x):       # sqrt's partial 0.5 / 0 is infinite at a finite value, twice
        z = x - x
        return ops.sqrt(x) + ops.cbrt(z) + ops.sqrt(z)

    fast, _, _ = _traced(f, (2.0,), monkeypatch, True)
    loop, _, _ = _traced(f, (2.0,), monkeypatch, False)
    assert isinstance(fast, str) and fast == loop and "cbrt" in fast, (fast, loop)


def test_data_that_is_an_array_leaves_the_graph_to_the_loop(monkeypatch):
    f = lambda x, X: x * float(X[0]) + x * x   # noqa: E731  (X is data, read as a number)
    args = (1.5, np.array([2.0, 3.0]))
    monkeypatch.setattr(tracer, "VECTOR_VERTICES", 0)
    g = trace(f, *args, wrt=[0])
    assert numbers.number_edges(g.memos["tracing.recording"].tape, [0, 1], [0, 1]) is None
    assert sorted(g.labels.tolist()) == [1.0, 1.0, 2.0, 3.0]   # X[0], 2x, the sum's
