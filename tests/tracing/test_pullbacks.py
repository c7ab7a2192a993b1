"""The reverse sweep by pullbacks (minirad.tracing.pullbacks) against the labels' sweep.

The oracle is the reference recurrence on the graph's Jacobian blocks; the sweep by
pullbacks must give the same bits, in the same dtype, or raise the same error.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import array_programs

import minirad
from minirad.exact.sweeps import REFERENCE_EDGES, gradient, vjp
from minirad.tracing import pullbacks as pullbacks_module


def same_bits(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.tobytes() == y.tobytes(), (x, y)


@settings(max_examples=150, deadline=None)
@given(array_programs(), st.integers(0, 2**16))
def test_random_array_programs_pull_back_to_the_labels_bits(program, seed):
    f, args = program
    g = minirad.trace(f, *args)
    rng = np.random.default_rng(seed)
    u = [rng.standard_normal(g.shapes[v]) for v in g.outputs]
    same_bits(vjp(g, u, engine="pullbacks"), vjp(g, u, engine="reference"))


RNG = np.random.default_rng(3)
X, W, B = RNG.normal(size=(5, 4)), RNG.normal(size=(4, 3)), RNG.normal(size=3)

PROGRAMS = {
    # masks (relu, abs, maximum's ties), a broadcast bias, x * x and x + x, constants
    "mlp": (lambda W, b: (np.maximum(X @ W + b, 0.0) ** 2).sum(), (W, B)),
    "twice": (lambda x: (x * x + x + x - 3.0 * x / (1.0 + x * x)).sum(), (X,)),
    "kinks": (lambda x: (np.abs(x) + np.maximum(x, x) + np.minimum(x, 0.5)).sum(), (X,)),
    "where": (lambda x: np.where(x > 0, np.sin(x), x ** 3).sum(), (X,)),
    "float32": (lambda x: (np.tanh(x) * np.exp(x) - x).sum(),
                (X.astype(np.float32),)),
    "constant array": (lambda x: (x * X - X / (2.0 + x ** 2)).sum(), (X,)),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_hand_picked_programs_pull_back_to_the_labels_bits(name):
    f, args = PROGRAMS[name]
    g = minirad.trace(f, *args)
    same_bits(gradient(g, engine="pullbacks"), gradient(g, engine="reference"))


def relaxation(x, c, steps):
    for _ in range(steps):
        x = x + 0.01 * (c * x - x * x * x)
    return x.sum()


def test_auto_pulls_back_on_large_graphs_and_sweeps_labels_on_small(monkeypatch):
    calls = []
    pull = pullbacks_module.pull
    monkeypatch.setattr(pullbacks_module, "pull", lambda *a: calls.append(1) or pull(*a))
    x, c = RNG.uniform(-1, 1, 7), RNG.uniform(0.5, 1.5, 7)
    small = minirad.trace(relaxation, x, c, 3, wrt=[0, 1])
    gradient(small)
    assert not calls and small.n_edges <= REFERENCE_EDGES
    large = minirad.trace(relaxation, x, c, 400, wrt=[0, 1])
    assert large.n_edges > REFERENCE_EDGES
    fast = gradient(large)
    assert len(calls) == large.n_edges
    same_bits(fast, gradient(large, engine="reference"))


def test_a_partial_that_is_not_finite_is_named_as_the_labels_name_it():
    g = minirad.trace(lambda x: np.sqrt(x * x).sum(), np.array([0.0, 1.0]))
    with pytest.raises(ValueError) as reference:
        gradient(g, engine="reference")
    with pytest.raises(ValueError) as fast:
        gradient(g, engine="pullbacks")
    assert str(fast.value) == str(reference.value)
    assert "sqrt" in str(fast.value)


def test_an_overflow_returns_what_the_labels_return():
    g = minirad.trace(lambda x: np.exp(np.exp(x)).sum(), np.array([6.0, 0.0]))
    same_bits(gradient(g, engine="pullbacks"), gradient(g, engine="reference"))


def test_the_engine_is_refused_where_it_does_not_apply():
    numbers = minirad.trace(lambda x: x * x, 2.0)
    with pytest.raises(ValueError, match="traced graph with array"):
        gradient(numbers, engine="pullbacks")
    arrays = minirad.trace(lambda x: x * 2.0, np.ones(2))
    with pytest.raises(ValueError, match="traced graph with array"):
        minirad.reverse_sweep(arrays, engine="pullbacks")   # a Jacobian, not adjoints
    with pytest.raises(ValueError, match="in_place and lazy"):
        vjp(arrays, [np.ones(2)], engine="pullbacks", lazy=True)
