"""The study's networks traced on the vector LCG: the same gradients as the
hand-written numpy networks, memory from the graph against Table 1's rules,
unbiased injections."""

import numpy as np
import pytest
from oracles import assert_power, assert_unbiased, draws_for_power

from minirad.exact.sweeps import gradient
from minirad.graph.lcg import LCG
from minirad.graph.memory import retained_memory as graph_memory
from minirad.graph.operators import InjectedMatMul, ProjectedMatMul
from minirad.randomized.injection import activation_sampling_variance
from minirad.studies.nn import convnet_numpy, graph, memory, mlp_numpy
from minirad.studies.nn.activations import signs


def small_mlp():
    gen = np.random.default_rng(123)
    params = [p.astype(np.float64) for p in mlp_numpy.init_mlp((10, 8, 8, 3), rng=1)]
    return params, gen.standard_normal((6, 10)), gen.integers(3, size=6)


def small_convnet():
    gen = np.random.default_rng(5)
    params = [p.astype(np.float64) for p in convnet_numpy.init_convnet((2, 3, 2, 2), size=8,
                                                                       rng=1)]
    return params, gen.standard_normal((3, 1, 8, 8)), np.array([0, 4, 9])


def test_traced_mlp_and_convnet_equal_the_numpy_floor():
    params, x, y = small_mlp()
    loss, grads = graph.loss_and_grad(params, x, y)
    floor_loss, floor_grads = mlp_numpy.loss_and_grad(params, x, y)
    assert loss == pytest.approx(floor_loss, rel=1e-12)
    for a, b in zip(grads, floor_grads):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
    cparams, cx, cy = small_convnet()
    _, grads = graph.loss_and_grad(cparams, cx, cy, program=graph.convnet_program)
    for a, b in zip(grads, convnet_numpy.loss_and_grad(cparams, cx, cy)[1]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)


# different project (Figure 9 only) has no numpy floor: the injection module draws it
@pytest.mark.parametrize("kind", sorted(set(graph.INJECTIONS) - {"different_project"}))
def test_graph_estimators_equal_the_floors_on_the_same_samples(kind):
    """The injections on the traced graph and the hand-written floors draw one seed
    per layer from the same generator, so on one seed they estimate with the same
    samples: the gradients agree to rounding, for the MLP and the ConvNet (whose
    conv inputs are sampled per example and channel, or projected per channel)."""
    params, x, y = small_mlp()
    loss, grads = graph.loss_and_grad(params, x, y, kind, 0.3, rng=7)
    floor_loss, floor_grads = mlp_numpy.loss_and_grad(params, x, y, kind, 0.3, rng=7)
    assert loss == pytest.approx(floor_loss, rel=1e-12)
    for a, b in zip(grads, floor_grads):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
    cparams, cx, cy = small_convnet()
    _, grads = graph.loss_and_grad(cparams, cx, cy, kind, 0.3, rng=7,
                                   program=graph.convnet_program)
    floor_grads = convnet_numpy.loss_and_grad(cparams, cx, cy, kind, 0.3, rng=7)[1]
    for a, b in zip(grads, floor_grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    # a different seed gives a different estimate (the samples really are shared)
    other = graph.loss_and_grad(params, x, y, kind, 0.3, rng=8)[1]
    assert not np.allclose(other[0], mlp_numpy.loss_and_grad(params, x, y, kind, 0.3,
                                                             rng=7)[1][0])
    # in float32, as the study trains, they agree to float32 rounding
    p32 = [p.astype(np.float32) for p in params]
    a = graph.loss_and_grad(p32, x.astype(np.float32), y, kind, 0.3, rng=3)[1]
    b = mlp_numpy.loss_and_grad(p32, x.astype(np.float32), y, kind, 0.3, rng=3)[1]
    for u, v in zip(a, b):
        np.testing.assert_allclose(u, v, rtol=1e-4, atol=1e-6)


def test_traced_irnn_matches_central_differences():
    gen = np.random.default_rng(0)
    params = [gen.standard_normal(s) * 0.3 for s in ((4, 5), (5,), (5, 5), (5,), (5, 3), (3,))]
    params[2] += np.eye(5)  # the IRNN's identity start
    x, y = gen.standard_normal((2, 3, 4)), np.array([0, 2])
    _, grads = graph.loss_and_grad(params, x, y, program=graph.irnn_program)

    def loss_at(ps):
        h = np.zeros((2, 5))
        for t in range(3):
            h = np.maximum(x[:, t] @ ps[0] + ps[1] + h @ ps[2] + ps[3], 0)
        z = h @ ps[4] + ps[5]
        z = z - z.max(axis=1, keepdims=True)
        return -np.mean((z - np.log(np.exp(z).sum(axis=1, keepdims=True)))[[0, 1], y])

    h = 1e-6
    for p, g in zip(params, grads):
        for index in np.ndindex(p.shape):
            old = p[index]
            p[index] = old + h
            up = loss_at(params)
            p[index] = old - h
            down = loss_at(params)
            p[index] = old
            assert g[index] == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-8)


def test_graph_memory_is_table1_for_the_mlp_and_irnn():
    params = mlp_numpy.init_mlp(rng=0)
    x, y = np.zeros((3, 784), np.float32), np.zeros(3, np.int64)
    g = graph.traced(graph.mlp_program, params, x, y)
    assert graph_memory(g).per_example(3) == 6776
    for kind in graph.INJECTIONS:
        assert graph_memory(graph.inject(g, kind, 0.1, rng=0)).per_example(3) == 828.5
    # the IRNN on row-sequential MNIST (28 steps of 28 pixels) against the rules
    rnn = [np.zeros((28, 100), np.float32), np.zeros(100, np.float32),
           np.eye(100, dtype=np.float32), np.zeros(100, np.float32),
           np.zeros((100, 10), np.float32), np.zeros(10, np.float32)]
    g = graph.traced(graph.irnn_program, rnn, np.zeros((2, 28, 28), np.float32),
                     np.zeros(2, np.int64))
    rules = memory.irnn(steps=28, inputs=28)
    assert graph_memory(g).per_example(2) == memory.per_example_bytes(rules, 1.0)
    sampled = graph.inject(g, "different_sample", 0.1, rng=0)
    assert graph_memory(sampled).per_example(2) == memory.per_example_bytes(rules, 0.1)


def test_graph_memory_of_the_convnet_charges_masks_before_pooling():
    # RAD at 0.1 is the rules' number; the baseline is the rules' number plus the ReLU
    # masks of conv2 and conv4, which cannot be rebuilt from the pooled arrays kept
    params = convnet_numpy.init_convnet((16, 32, 32, 32), in_channels=3, size=32, rng=0)
    g = graph.traced(graph.convnet_program, params, np.zeros((1, 3, 32, 32), np.float32),
                     np.zeros(1, np.int64))
    net = memory.convnet()
    assert graph_memory(g).total == memory.per_example_bytes(net, 1.0) + (32768 + 8192) / 8
    sampled = graph.inject(g, "different_sample", 0.1, rng=0)
    assert graph_memory(sampled).total == memory.per_example_bytes(net, 0.1) + CHANNEL_ROUNDING


# The graph samples a conv input per channel, ceil(f H W) positions each, where the rules
# charge ceil(f C H W) per input: at f = 0.1 on the CIFAR ConvNet 309 instead of 308 floats
# (3x32x32), 1,648 instead of 1,639 (16x32x32), 832 instead of 820 (32x16x16, twice)
CHANNEL_ROUNDING = 4 * ((309 - 308) + (1648 - 1639) + 2 * (832 - 820))


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(graph.INJECTIONS))
def test_graph_injections_are_unbiased(kind):
    """The graph's own injections on a small MLP (6 -> 5 -> 3, a batch of 12, f = 0.8),
    against the exact gradient, with the exact covariance of activation sampling
    (minirad.randomized.injection.activation_sampling_variance: one independent P per
    layer, as inject draws them) and as many estimates as a 5% bias needs to fail the
    test: false-failure rate below (m + 1) x 5.7e-7, power above 1 - 3e-7
    (tests/oracles.py, "unbiasedness with power")."""
    params = [p.astype(np.float64) for p in mlp_numpy.init_mlp((6, 5, 3), rng=1)]
    gen = np.random.default_rng(123)
    x, y = gen.standard_normal((12, 6)), gen.integers(3, size=12)
    g = graph.traced(graph.mlp_program, params, x, y)
    exact = np.concatenate([w.ravel() for w in gradient(g)])
    method, per_row = graph.INJECTIONS[kind]
    covariance = activation_sampling_variance(g, 0.8, method, per_row, covariance=True)[0]
    n = draws_for_power(exact, covariance)
    assert n <= 5000
    estimates = np.array([np.concatenate([w.ravel() for w in gradient(graph.inject(g, kind,
                                                                                  0.8, gen))])
                          for _ in range(n)])
    assert_unbiased(estimates, exact, covariance)
    assert_power(estimates, exact, covariance)


@pytest.mark.parametrize("kind", sorted(set(graph.INJECTIONS) - {"different_project"}))  # no floor
def test_a_biased_injection_fails_the_comparison_with_the_floors(kind, monkeypatch):
    """The graph estimators are held equal to the hand-written floors on the same samples
    (above, to 1e-10): a 5% bias inside the injection, every injected label scaled by
    1.05, fails that comparison for the MLP and for the ConvNet, whose exact covariance
    is too large for a statistical test with that power (the ConvNet's floor has its
    own statistical tests, tests/studies/nn/test_studies_convnet.py)."""
    from minirad.graph.operators import Diagonal, compose
    from minirad.randomized import injection

    def biased(label, *args):
        label, k, d = unbiased(label, *args)
        return compose(Diagonal(np.asarray(1.05), label.out_shape, ()), label), k, d

    unbiased = injection._injected
    monkeypatch.setattr(injection, "_injected", biased)
    for program, floor, (params, x, y) in ((graph.mlp_program, mlp_numpy, small_mlp()),
                                           (graph.convnet_program, convnet_numpy,
                                            small_convnet())):
        grads = graph.loss_and_grad(params, x, y, kind, 0.3, rng=7, program=program)[1]
        floor_grads = floor.loss_and_grad(params, x, y, kind, 0.3, rng=7)[1]
        weights = range(0, len(grads), 2)
        assert not any(np.allclose(grads[i], floor_grads[i], rtol=1e-10, atol=1e-13)
                       for i in weights)
        np.testing.assert_allclose(grads[0], 1.05 * floor_grads[0], rtol=1e-9, atol=1e-13)


def test_bad_kind():
    params, x, y = small_mlp()
    with pytest.raises(ValueError, match="kind"):
        graph.loss_and_grad(params, x, y, "sampled", 0.1)


@pytest.mark.slow
def test_table1_from_the_graph_beside_the_rules():
    rows = graph.table1_from_graph(0.1)
    rules = {"convnet": memory.convnet(), "mlp": memory.mlp(), "irnn": memory.irnn()}
    for name, (base, rad) in rows.items():
        print(f"{name:8s} graph {base:>10,.1f} {rad:>9,.1f}   rules "
              f"{memory.per_example_bytes(rules[name], 1.0):>10,.1f} "
              f"{memory.per_example_bytes(rules[name], 0.1):>9,.1f}")
        extra = CHANNEL_ROUNDING if name == "convnet" else 0
        assert rad == memory.per_example_bytes(rules[name], 0.1) + extra
    assert rows["mlp"][0] == 6776 and rows["irnn"][0] == 317176
    assert rows["convnet"][0] == 151592 + (32768 + 8192) / 8


def _dense_projection_graph(g, h, fraction, seed):
    """``h = inject(g, "project", ...)`` written the direct way: each stored layer input
    S replaced by the d-wide ``(S R) R^T / k`` in an InjectedMatMul, R drawn as inject
    draws it (one seed per ``outer`` edge, in edge order); convolutions as ``h`` has them."""
    gen = np.random.default_rng(seed)
    labels = list(g.labels)
    for e, label in enumerate(g.labels):
        if label.kind != "outer":
            continue
        layer_seed = int(gen.integers(2**63))
        if label.gathered is not None:
            labels[e] = h.labels[e]   # a convolution: inject keeps its dense form
            continue
        S = label.stored
        axis = -1 if label.side == "left" else (0 if S.ndim == 1 else -2)
        moved = np.moveaxis(S, axis, -1)
        rows = moved.reshape(-1, moved.shape[-1])
        d = rows.shape[1]
        k = memory.kept_entries(d, fraction)
        R = signs(d, k, layer_seed, S.dtype)
        dense = np.moveaxis(((rows @ R) @ R.T / k).reshape(moved.shape), -1, axis)
        labels[e] = InjectedMatMul(dense, label.side, label.in_shape, k, "rademacher")
    return labels


def _networks():
    gen = np.random.default_rng(5)
    params, x, y = small_mlp()
    cparams = small_convnet()[0]
    rnn = [gen.standard_normal(s) * 0.3 for s in ((4, 5), (5,), (5, 5), (5,), (5, 3), (3,))]
    return [(graph.mlp_program, params, x, y),
            (graph.convnet_program, cparams, gen.standard_normal((3, 1, 8, 8)),
             np.array([0, 4, 9])),
            (graph.irnn_program, rnn, gen.standard_normal((2, 3, 4)), np.array([0, 2]))]


@pytest.mark.parametrize("network", range(3), ids=["mlp", "convnet", "irnn"])
def test_low_rank_projection_equals_the_dense_projected_input(network):
    """``project`` keeps ``x R`` and applies ``R^T / k`` in the reverse sweep (a
    ProjectedMatMul); on the same seed that is the estimate of the d-wide ``x R R^T / k``
    to rounding, edge by edge and for the whole gradient, and what each edge holds is
    what the memory accounting charges."""
    program, params, x, y = _networks()[network]
    g = graph.traced(program, params, x, y)
    h = graph.inject(g, "project", 0.3, rng=7)
    reference = _dense_projection_graph(g, h, 0.3, 7)
    gen = np.random.default_rng(0)
    projected = [e for e, label in enumerate(h.labels) if isinstance(label, ProjectedMatMul)]
    outer = [e for e, label in enumerate(g.labels) if label.kind == "outer"]
    assert projected == [e for e in outer if g.labels[e].gathered is None] and projected
    for e in projected:
        op, dense = h.labels[e], reference[e]
        np.testing.assert_allclose(op.stored_estimate(), dense.stored, rtol=1e-12, atol=1e-14)
        ys = gen.standard_normal((2,) + op.out_shape)
        np.testing.assert_allclose(op.apply_transpose(ys), dense.apply_transpose(ys),
                                   rtol=1e-11, atol=1e-13)
        # what the edge physically keeps is what retained_memory() charges for it
        assert op.retained_bytes == op.kept.nbytes
    ref_graph = LCG(g.names, g.sources, g.targets, reference, g.inputs, g.outputs,
                          values=g.values, ops=g.ops, shapes=g.shapes, dtypes=g.dtypes)
    for a, b in zip(gradient(h), gradient(ref_graph)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    # an estimate, not the exact gradient
    assert not np.allclose(gradient(h)[0], gradient(g)[0])
