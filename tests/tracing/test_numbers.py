"""The edges of a program of numbers made by numpy (minirad.tracing.numbers) against
the tracer's own loop (traced_edges): the same edges in the same order, the same
labels to the last bit, the same refusals with the same message."""

import numpy as np
import pytest
from test_trace_reference import random_program

from bench.bench_trace import INPUTS, program
from minirad import ops, trace
from minirad.tracing import numbers, tracer


def _traced(f, args, monkeypatch, by_numpy: bool):
    """The graph of ``f`` (or the refusal's message), made by numpy or by the loop;
    and whether numpy made it."""
    made = []

    def spy(*a):
        made.append(numbers.number_edges(*a))
        return made[-1]

    monkeypatch.setattr(tracer, "VECTOR_VERTICES", 0 if by_numpy else 10 ** 12)
    monkeypatch.setattr(tracer, "number_edges", spy)
    try:
        g = trace(f, *args)
    except ValueError as refused:
        return str(refused), False
    return g, bool(made) and made[0] is not None


def _same(g, h) -> None:
    assert g.sources.tolist() == h.sources.tolist()
    assert g.targets.tolist() == h.targets.tolist()
    assert np.asarray(g.labels, dtype=float).tobytes() == np.asarray(h.labels,
                                                                     dtype=float).tobytes()
    assert np.asarray(g.values).tobytes() == np.asarray(h.values).tobytes()
    assert (g.inputs, g.outputs, g.names, g.wengert()) == (h.inputs, h.outputs, h.names,
                                                           h.wengert())


def test_random_programs_give_the_loop_s_graph_bit_for_bit(monkeypatch):
    rng = np.random.default_rng(20261129)
    by_numpy = refused = traced = 0
    for _ in range(400):
        f = random_program(rng, int(rng.integers(1, 40)))
        args = (float(rng.uniform(0.2, 1.5)), float(rng.uniform(-1.5, -0.2)),
                [float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2))])
        fast, used = _traced(f, args, monkeypatch, True)
        loop, _ = _traced(f, args, monkeypatch, False)
        if isinstance(loop, str):
            assert fast == loop
            refused += 1
            continue
        _same(fast, loop)
        by_numpy, traced = by_numpy + used, traced + 1
    # numpy made every graph the loop made; both kinds of outcome were compared
    assert by_numpy == traced >= 150 and refused >= 30


@pytest.mark.parametrize("chunk", [numbers.CHUNK, 97])
def test_a_long_program_with_constants_and_squares(monkeypatch, chunk):
    monkeypatch.setattr(numbers, "CHUNK", chunk)     # (97: the steps in 50 chunks)
    steps = 400      # 4,802 operations: relu, pow, constants on either side, shared operands
    f = lambda x, y, z: program(x, y, z, steps, ops.relu) * x - x * x / (1.0 + y * y)  # noqa: E731
    fast, used = _traced(f, INPUTS, monkeypatch, True)
    assert used
    _same(fast, _traced(f, INPUTS, monkeypatch, False)[0])


def test_a_partial_that_is_not_finite_is_named_as_the_loop_names_it(monkeypatch):
    def f(x):       # sqrt's partial 0.5 / 0 is infinite at a finite value, twice
        z = x - x
        return ops.sqrt(x) + ops.cbrt(z) + ops.sqrt(z)

    fast, used = _traced(f, (2.0,), monkeypatch, True)
    loop, _ = _traced(f, (2.0,), monkeypatch, False)
    assert isinstance(fast, str) and fast == loop and "cbrt" in fast, (fast, loop)


def test_data_that_is_an_array_leaves_the_graph_to_the_loop(monkeypatch):
    f = lambda x, X: x * float(X[0]) + x * x   # noqa: E731  (X is data, read as a number)
    args = (1.5, np.array([2.0, 3.0]))
    monkeypatch.setattr(tracer, "VECTOR_VERTICES", 0)
    g = trace(f, *args, wrt=[0])
    assert numbers.number_edges(g.memos["tracing.recording"].tape, [0, 1], [0, 1]) is None
    assert sorted(g.labels.tolist()) == [1.0, 1.0, 2.0, 3.0]   # X[0], 2x, the sum's
