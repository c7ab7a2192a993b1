"""Replay (minirad.tracing.replay): a traced array graph run again at new inputs gives the
graph tracing afresh gives (the oracle), bit for bit, with the same memory accounting;
injections draw anew on each replayed graph; a program whose path depends on its values
is refused."""

import numpy as np
import pytest

import minirad
from minirad import ops
from minirad.exact.sweeps import gradient
from minirad.graph.lcg import LCG
from minirad.graph.memory import retained_memory
from minirad.graph.operators import Diagonal
from minirad.randomized.injection import inject_edge
from minirad.studies.nn import convnet_numpy, graph, mlp_numpy
from minirad.tracing import rules
from minirad.tracing.catalog import EXAMPLES
from minirad.tracing.replay import recording, replay
from minirad.tracing.rules import Rule
from minirad.tracing.tracer import record


def assert_same_graph(h: LCG, g: LCG) -> None:
    """Every vertex value, name and op, every edge and every label's action equal, bit
    for bit (a label is compared by applying it and its transpose to one test array)."""
    assert h.names == g.names and h.ops == g.ops
    assert h.inputs == g.inputs and h.outputs == g.outputs
    np.testing.assert_array_equal(h.sources, g.sources)
    np.testing.assert_array_equal(h.targets, g.targets)
    for a, b in zip(h.values, g.values):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    gen = np.random.default_rng(0)
    for e, (a, b) in enumerate(zip(h.labels, g.labels)):
        assert a.kind == b.kind, e
        probe = gen.standard_normal(a.in_shape).astype(a.dtype)
        back = gen.standard_normal(a.out_shape).astype(a.dtype)
        np.testing.assert_array_equal(a.apply(probe), b.apply(probe))
        np.testing.assert_array_equal(a.apply_transpose(back), b.apply_transpose(back))


def relaxation(x, c, steps=5):
    for _ in range(steps):
        x = x + 0.01 * (c * x - x * x * x)
    return x.sum()


def test_replay_equals_tracing_afresh_on_a_time_stepping_loop():
    gen = np.random.default_rng(1)
    x, c = gen.uniform(-1, 1, 7), gen.uniform(0.5, 1.5, 7)
    g = minirad.trace(relaxation, x, c)
    x2, c2 = gen.uniform(-1, 1, 7), gen.uniform(0.5, 1.5, 7)
    h = replay(g, x2, c2)
    fresh = minirad.trace(relaxation, x2, c2)
    assert_same_graph(h, fresh)
    for a, b in zip(gradient(h), gradient(fresh)):
        np.testing.assert_array_equal(a, b)
    # and the gradient is the program's: a central difference (independent of the graph)
    step = 1e-6
    up, down = relaxation(x2 + [step, 0, 0, 0, 0, 0, 0], c2), relaxation(
        x2 - [step, 0, 0, 0, 0, 0, 0], c2)
    assert gradient(h)[0][0] == pytest.approx((up - down) / (2 * step), rel=1e-7)
    # a replayed graph replays again
    assert_same_graph(replay(h, x, c), g)


def small_networks():
    gen = np.random.default_rng(3)
    mlp = [p.astype(np.float64) for p in mlp_numpy.init_mlp((10, 8, 8, 3), rng=1)]
    conv = [p.astype(np.float64) for p in convnet_numpy.init_convnet((2, 3, 2, 2), size=8,
                                                                       rng=1)]
    return [(graph.mlp_program, mlp, lambda: gen.standard_normal((6, 10)), 3),
            (graph.convnet_program, conv, lambda: gen.standard_normal((3, 1, 8, 8)), 10)]


@pytest.mark.parametrize("case", range(2), ids=["mlp", "convnet"])
def test_replay_with_new_parameters_and_a_new_minibatch(case):
    program, params, batch, classes = small_networks()[case]
    gen = np.random.default_rng(4)

    def f(x, y, *ps):
        return program(x, y)(*ps)
    x, y = batch(), gen.integers(classes, size=len(batch()))
    g = minirad.trace(f, x, y, *params, wrt=range(2, 2 + len(params)))
    new = [p + 0.1 * gen.standard_normal(p.shape) for p in params]
    x2, y2 = batch(), gen.integers(classes, size=len(y))
    h = replay(g, x2, y2, *new)
    fresh = minirad.trace(f, x2, y2, *new, wrt=range(2, 2 + len(params)))
    assert_same_graph(h, fresh)
    # the memory accounting of the graph, and of an injected one, is tracing afresh's
    assert retained_memory(h).total == retained_memory(fresh).total
    e = next(e for e, label in enumerate(h.labels) if label.kind == "outer")
    assert (retained_memory(inject_edge(h, e, 0.5, rng=1)).total
            == retained_memory(inject_edge(fresh, e, 0.5, rng=1)).total)
    # the gradient is the hand-written network's at the new point
    floor = (mlp_numpy if case == 0 else convnet_numpy).loss_and_grad(new, x2, y2)[1]
    for a, b in zip(gradient(h), floor):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


def test_injection_is_drawn_anew_on_each_replayed_graph():
    """An injection on a replayed graph is the one on the graph traced afresh, for one
    seed; two seeds draw two different estimates (the injection holds no draws)."""
    params, gen = mlp_numpy.init_mlp((10, 8, 3), rng=2), np.random.default_rng(5)
    x, y = gen.standard_normal((6, 10)).astype(np.float32), gen.integers(3, size=6)

    def f(x, y, *ps):
        return graph.mlp_program(x, y)(*ps)
    g = minirad.trace(f, x, y, *params, wrt=range(2, 6))
    x2 = gen.standard_normal((6, 10)).astype(np.float32)
    h = replay(g, x2, y, *params)
    fresh = minirad.trace(f, x2, y, *params, wrt=range(2, 6))
    one = gradient(graph.inject(h, "different_sample", 0.3, rng=11))
    same = gradient(graph.inject(fresh, "different_sample", 0.3, rng=11))
    other = gradient(graph.inject(h, "different_sample", 0.3, rng=12))
    for a, b in zip(one, same):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(one[0], other[0])


def test_replay_refuses_a_program_whose_path_depends_on_the_values():
    def f(x):
        if x.sum() > 0:          # a Python branch on a value
            return (x * x).sum()
        return (x * 3.0).sum()
    g = minirad.trace(f, np.array([1.0, 2.0]))
    assert_same_graph(replay(g, np.array([3.0, 4.0])), minirad.trace(f, np.array([3.0, 4.0])))
    with pytest.raises(ValueError, match="depends on them"):
        replay(g, np.array([-3.0, 1.0]))


def test_a_comparison_used_as_a_mask_replays_while_it_reads_the_same():
    def f(x):
        return np.where(x > 0, x, 0.0).sum()
    g = minirad.trace(f, np.array([1.0, -2.0]))
    h = replay(g, np.array([5.0, -1.0]))          # the same signs: the same graph
    assert gradient(h)[0].tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="read differently now"):
        replay(g, np.array([-5.0, 1.0]))
    # a ReLU by rule replays at any signs: its mask is part of its Jacobian block
    g = minirad.trace(lambda x: ops.relu(x).sum(), np.array([1.0, -2.0]))
    assert gradient(replay(g, np.array([-5.0, 1.0])))[0].tolist() == [0.0, 1.0]


def test_detach_is_a_value_read():
    def f(x):
        return (x * minirad.detach(x)).sum()
    g = minirad.trace(f, np.array([1.0, 2.0]))
    assert gradient(replay(g, np.array([1.0, 2.0])))[0].tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="read differently now"):
        replay(g, np.array([3.0, 2.0]))


def test_replay_checks_the_arguments():
    def f(w, x, scale):
        return (x @ w * scale).sum()
    w, x = np.ones(3), np.ones((2, 3))
    g = minirad.trace(f, w, x, 2.0, wrt=[0])
    with pytest.raises(TypeError, match="3 arguments"):
        replay(g, w, x)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        replay(g, np.ones(4), x, 2.0)
    with pytest.raises(ValueError, match="shape"):
        replay(g, w, np.ones((5, 3)), 2.0)
    with pytest.raises(ValueError, match="was a number"):
        replay(g, w, x, "3.0")
    with pytest.raises(ValueError, match="non-finite"):
        replay(g, np.array([1.0, np.nan, 0.0]), x, 2.0)


def test_data_is_traced_so_a_replay_recomputes_what_the_program_made_of_it():
    # the defects of issue 37: data the program scaled, sliced, standardised or turned
    # into one-hot rows was frozen at the traced point, and replay answered wrongly
    w, x = np.array([1.0, -1.0]), np.ones((4, 2))
    programs = [
        lambda w, x: ((x * 2.0) @ w).sum(),
        lambda w, x: (x[0] @ w).sum() * 3.0,
        lambda w, x: ((x - x.mean(0)) @ w ** 2).sum() + (x.std() * w).sum(),
        lambda w, x: ((x @ w) * (x.sum(1) == 2.0)).sum(),
        lambda w, x, n=3: (np.tanh(x @ w) * n).sum(),
    ]
    gen = np.random.default_rng(5)
    for f in programs:
        g = minirad.trace(f, w, x, wrt=[0])
        for _ in range(3):
            w2, x2 = gen.standard_normal(2), gen.standard_normal((4, 2))
            try:
                h = replay(g, w2, x2)
            except ValueError as error:     # a value read differently: refused, never wrong
                assert "read differently now" in str(error)
                continue
            assert h.same_as(minirad.trace(f, w2, x2, wrt=[0]))
    # a number given as data, a one-hot cross-entropy with new labels
    g = minirad.trace(lambda w, x, s: (x @ w * s).sum(), w, x, 2.0, wrt=[0])
    assert replay(g, w, x, 3.0).value("y") == pytest.approx((x @ w * 3.0).sum())
    logits = lambda W, X, labels: rules.softmax_cross_entropy(X @ W, labels)  # noqa: E731
    W, X = gen.standard_normal((2, 3)), gen.standard_normal((5, 2))
    g = minirad.trace(logits, W, X, np.array([0, 1, 2, 0, 1]), wrt=[0])
    new = np.array([2, 2, 1, 0, 0])
    np.testing.assert_array_equal(gradient(replay(g, W, X, new))[0],
                                  gradient(minirad.trace(logits, W, X, new, wrt=[0]))[0])


def test_a_caught_error_is_a_path_replay_checks():
    def f(x):
        try:
            return ops.log(x) * 2.0
        except ValueError:
            return x * x
    g = minirad.trace(f, -1.0)                          # log raised: the other branch
    assert replay(g, -2.0).value("y") == 4.0
    with pytest.raises(ValueError, match="read differently now"):
        replay(g, 3.0)                                  # log would not raise now


def test_replay_refuses_graphs_without_a_recording():
    g = minirad.trace(lambda a, b: a * b, 2.0, 3.0)         # a graph of numbers replays
    assert replay(g, 4.0, 5.0).value("y") == 20.0
    hand = LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=["y"])
    with pytest.raises(ValueError, match="not traced"):
        replay(hand)
    with pytest.raises(TypeError, match="traced LCG or its recording"):
        replay("g")
    # a rule of the program's own, recorded as numpy's are: it replays as they do
    double = Rule("double", "2 {0}", lambda x: 2.0 * x,
                  lambda i, values, y, edge: Diagonal(np.full(np.shape(y), 2.0)))

    def program(x):
        return record(double, x * 3.0).sum()
    g = minirad.trace(program, np.ones(3))
    assert replay(g, np.zeros(3)).same_as(minirad.trace(program, np.zeros(3)))


def test_a_constant_changed_after_tracing_does_not_change_the_replay():
    A = np.eye(2)
    g = minirad.trace(lambda x: rules.matmul(A, x).sum(), np.ones(2))
    A[:] = 5.0       # the trace kept its own copy: replay uses that one
    assert gradient(replay(g, np.ones(2)))[0].tolist() == [1.0, 1.0]


def test_the_tracer_builds_the_graph_the_checked_constructor_builds():
    """The tracer skips the constructor's checks (LCG.from_trusted_blocks): the graph is
    the one the constructor makes of the same columns, a block between two numbers
    turned into its float."""
    def f(W, x):
        s = (ops.tanh(x @ W) ** 2).sum()
        return s * 3.0 - s / 2.0
    g = minirad.trace(f, np.arange(6.0).reshape(3, 2) / 10, np.ones(3), wrt=[0])
    checked = LCG(g.names, g.sources, g.targets, g.labels, g.inputs, g.outputs,
                  values=g.values, ops=g.ops)
    assert g.same_as(checked)
    floats = [e for e, label in enumerate(g.labels) if isinstance(label, float)]
    assert floats and all(type(checked.labels[e]) is float for e in floats)


def test_indices_read_from_the_values_are_checked():
    def f(x):
        (big,) = np.where(x)            # the indices of the nonzero entries: a value read
        return (x[big] * 2.0).sum()
    g = minirad.trace(f, np.array([0.0, 3.0, 4.0]))
    assert gradient(replay(g, np.array([0.0, 1.0, 1.0])))[0].tolist() == [0.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="read differently now"):
        replay(g, np.array([1.0, 0.0, 1.0]))


# the examples whose program reads its values (a comparison) to build its graph
READS_VALUES = {"np.where(x > 0, x, 0.1 * x)"}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_rule_replays_to_the_graph_traced_afresh(name):
    """Every rule of docs/numpy_support.md, traced at one draw of its operands and
    replayed at another, gives the graph tracing the second draw gives, bit for bit;
    a program that reads its values may instead be refused, and only for that."""
    example = EXAMPLES[name]
    f = example.function()
    first, second = (example.arguments(np.random.default_rng(seed)) for seed in (0, 1))
    g = minirad.trace(f, *first)
    try:
        h = replay(g, *second)
    except ValueError as error:
        assert name in READS_VALUES and "read differently now" in str(error)
        return
    assert h.same_as(minirad.trace(f, *second))


def test_a_recording_replays_without_holding_the_graphs_values():
    """What a loop keeps between iterations: recording(g) replays as g does."""
    import gc

    gen = np.random.default_rng(6)
    x, c = gen.uniform(-1, 1, 50), gen.uniform(0.5, 1.5, 50)
    g = minirad.trace(relaxation, x, c)
    kept = recording(g)
    del g
    gc.collect()
    assert replay(kept, c, x).same_as(minirad.trace(relaxation, c, x))


def test_elementwise_steps_with_constant_arrays_and_numpy_scalars_replay_too():
    """Replay reruns an elementwise step directly when its constants are plain numbers;
    with a constant array, an integer array or a numpy scalar it reruns the whole rule:
    both give the fresh trace's graph."""
    C, steps = np.array([1.0, 2.0, 3.0]), np.arange(3)

    def f(x):
        return (x * C + steps - np.float64(0.5) * x + 2 * x).sum()
    g = minirad.trace(f, np.ones(3))
    assert replay(g, np.array([0.5, -1.0, 2.0])).same_as(
        minirad.trace(f, np.array([0.5, -1.0, 2.0])))
