"""SampledPatches and ProjectedPatches, a convolution's kernel edge over a sampled or
projected image: the dense image against a hand loop over the samples (or the d-wide
x R R^T / k), the fast reverse steps (windows of the adjoint; shifted products with the
flat image) against the reference (MatMul by the patches of that image), the matrix,
stacks and float32, what they retain, how the ConvNet's injection uses them, the file,
bad input."""

import numpy as np
import pytest

from minirad.exact.sweeps import gradient
from minirad.graph import patches as sampled_patches
from minirad.graph.files import load_graph, save_graph
from minirad.graph.lcg import relabelled
from minirad.graph.memory import retained_memory
from minirad.graph.operators import Im2Col, MatMul
from minirad.graph.patches import ProjectedPatches, SampledPatches
from minirad.studies.nn import convnet_numpy, graph
from minirad.studies.nn.activations import sample_pattern, signs

RNG = np.random.default_rng(13)


def sampled(shape, kernel, padding, per="channel", shared=False, k=None, filters=3,
            dtype=np.float64):
    """An operator over a random image, its rows per channel (B*C rows) or per example."""
    b, c, h, w = shape
    rows = b * c if per == "channel" else b
    d = b * c * h * w // rows
    k = k or max(1, d // 3)
    image = RNG.standard_normal(shape).astype(dtype)
    picks = RNG.integers(d, size=(1 if shared else rows, k))
    values = np.take_along_axis(image.reshape(rows, d), np.broadcast_to(picks, (rows, k)), 1)
    op = SampledPatches(Im2Col(shape, kernel, 1, padding, dtype), picks, values, d / k,
                        (filters, c * kernel[0] * kernel[1]))
    return op, image, picks


def hand_image(image, picks, rows, scale):
    """The estimate by a loop over the samples: scale x value added once per draw."""
    flat = image.reshape(rows, -1)
    out = np.zeros_like(flat)
    for r in range(rows):
        for q in picks[r % len(picks)]:
            out[r, q] += scale * flat[r, q]
    return out.reshape(image.shape)


CASES = [((2, 3, 6, 5), (3, 3), 1, "channel", False),
         ((2, 3, 6, 5), (3, 2), 0, "example", False),
         ((3, 2, 7, 7), (5, 5), 2, "channel", True),     # same sample: one set of positions
         ((1, 1, 4, 4), (1, 1), 0, "channel", False),
         ((2, 2, 5, 6), (2, 4), 3, "example", True)]     # padding wider than the kernel


@pytest.mark.parametrize("path", ["windows", "products"])
@pytest.mark.parametrize("shape, kernel, padding, per, shared", CASES)
def test_fast_reverse_step_equals_the_reference(shape, kernel, padding, per, shared, path,
                                                monkeypatch):
    # each fast path on every case: windows always (any count of samples is below twice
    # the padded image) or never
    monkeypatch.setattr(sampled_patches, "WINDOWS_BELOW", 2.0 if path == "windows" else 0.0)
    op, image, picks = sampled(shape, kernel, padding, per, shared)
    rows = len(op.values)
    np.testing.assert_allclose(op.image(), hand_image(image, picks, rows, op.scale),
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(op.patches(), op.im2col.apply(op.image()))
    reference = MatMul(op.patches(), "right", op.in_shape)
    assert (op.out_shape, op.in_shape) == (reference.out_shape, reference.in_shape)
    ys = RNG.standard_normal((3,) + op.out_shape)
    # the same sums in another order: equal to rounding
    np.testing.assert_allclose(op.apply_transpose(ys), reference.apply_transpose(ys),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(op.apply_transpose(ys[0]), reference.apply_transpose(ys[0]),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(op.to_dense(), reference.to_dense())
    xs = RNG.standard_normal((2,) + op.in_shape)
    assert np.isclose(np.sum(op.apply(xs[0]) * ys[0]), np.sum(xs[0] * op.apply_transpose(ys[0])))


def projected(shape, kernel, padding, per="channel", k=None, filters=3, dtype=np.float64):
    b, c, h, w = shape
    d = h * w if per == "channel" else c * h * w
    k = k or max(1, d // 3)
    image = RNG.standard_normal(shape).astype(dtype)
    R = RNG.choice([-1.0, 1.0], size=(d, k))
    op = ProjectedPatches.project(Im2Col(shape, kernel, 1, padding, dtype), image, R, 1 / k,
                                  (filters, c * kernel[0] * kernel[1]))
    return op, image, R


@pytest.mark.parametrize("shape, kernel, padding, per, shared", CASES)
def test_projected_fast_reverse_step_equals_the_reference(shape, kernel, padding, per, shared):
    op, image, R = projected(shape, kernel, padding, per)
    k = R.shape[1]
    rows = image.reshape(-1, R.shape[0])
    np.testing.assert_allclose(op.kept, rows @ R, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(op.image(), (rows @ R @ R.T / k).reshape(shape), rtol=1e-12,
                               atol=1e-12)
    reference = MatMul(op.patches(), "right", op.in_shape)
    ys = RNG.standard_normal((3,) + op.out_shape)
    np.testing.assert_allclose(op.apply_transpose(ys), reference.apply_transpose(ys),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(op.to_dense(), reference.to_dense())
    xs = RNG.standard_normal(op.in_shape)
    assert np.isclose(np.sum(op.apply(xs) * ys[0]), np.sum(xs * op.apply_transpose(ys[0])))
    # only kept counts: R is regenerated from a seed
    assert op.retained_bytes == op.kept.nbytes


@pytest.mark.parametrize("k", [1, 20])
def test_float32_and_blocks_smaller_than_one_channel(monkeypatch, k):
    # tiny blocks: every channel's samples are summed over many blocks; at the default
    # threshold one sample per row of 81 is read by windows, 20 by shifted products
    monkeypatch.setattr(sampled_patches, "BLOCK_BYTES", 256)
    op, _, _ = sampled((4, 3, 9, 9), (5, 5), 2, k=k, dtype=np.float32)
    ys = RNG.standard_normal(op.out_shape).astype(np.float32)
    fast = op.apply_transpose(ys)
    assert fast.dtype == np.float32
    reference = MatMul(op.patches().astype(np.float64), "right", op.in_shape)
    np.testing.assert_allclose(fast, reference.apply_transpose(ys.astype(np.float64)),
                               rtol=1e-4, atol=1e-4)
    # blocks of one image each for the projection
    op, _, _ = projected((4, 3, 9, 9), (5, 5), 2, k=20, dtype=np.float32)
    fast = op.apply_transpose(ys)
    assert fast.dtype == np.float32
    reference = MatMul(op.patches().astype(np.float64), "right", op.in_shape)
    np.testing.assert_allclose(fast, reference.apply_transpose(ys.astype(np.float64)),
                               rtol=1e-4, atol=1e-4)


def test_it_retains_the_values_and_their_indices():
    op, _, _ = sampled((2, 3, 6, 5), (3, 3), 1, k=4, dtype=np.float32)
    # 6 rows of 30 entries: 24 float32 values and 24 one-byte indices
    assert op.retained_bytes == 24 * 4 + 24 == op.values.nbytes + op.picks.size
    assert op.flops == 24 * 9 * 3
    big, _, _ = sampled((1, 1, 20, 20), (3, 3), 1, k=5)      # d = 400 needs 16-bit indices
    assert big.retained_bytes == 5 * 8 + 5 * 2


def test_the_convnet_injection_keeps_the_sampled_entries_only():
    """The traced ConvNet's sampled conv edges are SampledPatches whose patches are the
    patches of the image sampled by hand from the same seed pattern, bit for bit; memory
    charges their k floats per (example, channel) row, as before; the gradient equals the
    graph with the reference operators in their place."""
    params = [p.astype(np.float64) for p in convnet_numpy.init_convnet((2, 3, 2, 2), size=8,
                                                                       rng=1)]
    x, y = RNG.standard_normal((3, 1, 8, 8)), np.array([0, 4, 9])
    g = graph.traced(graph.convnet_program, params, x, y)
    for kind in ("different_sample", "same_sample"):
        h = graph.inject(g, kind, 0.3, rng=7)
        convs = [e for e, op in enumerate(h.labels) if isinstance(op, SampledPatches)]
        assert convs == [e for e, op in enumerate(g.labels) if op.kind == "outer"
                         and op.gathered is not None]
        reference = {}
        for e in convs:
            op, (source, gather) = h.labels[e], g.labels[e].gathered
            rows = source.reshape(-1, source.shape[2] * source.shape[3])
            n, d = rows.shape
            k = int(np.ceil(round(0.3 * d, 9)))
            assert op.values.shape == (n, k) and op.picks.shape == ((n, k) if kind ==
                                                                    "different_sample" else (1, k))
            # the pattern of the layer's seed: one seed per stored input, in layer order
            outer = [f for f, label in enumerate(g.labels) if label.kind == "outer"]
            seeds = np.random.default_rng(7).integers(2**63, size=len(outer))
            pattern = sample_pattern(kind, n, d, k, int(seeds[outer.index(e)]))
            np.testing.assert_array_equal(op.picks, pattern)
            counts = np.zeros((n, d))
            for r in range(n):
                for q in pattern[r % len(pattern)]:
                    counts[r, q] += 1
            by_hand = (rows * (counts * (d / k))).reshape(source.shape)
            np.testing.assert_array_equal(op.patches(), gather.apply(by_hand))
            assert retained_memory(h).per_edge[e] == n * k * 8   # the floats; indices: the seed
            reference[e] = MatMul(op.patches(), "right", op.in_shape)
        for a, b in zip(gradient(h), gradient(relabelled(h, reference))):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
    # project: rows @ R kept, R the signs of the layer's seed; the image x R R^T / k
    h = graph.inject(g, "project", 0.3, rng=7)
    convs = [e for e, op in enumerate(h.labels) if isinstance(op, ProjectedPatches)]
    outer = [f for f, label in enumerate(g.labels) if label.kind == "outer"]
    assert convs == [e for e in outer if g.labels[e].gathered is not None]
    seeds = np.random.default_rng(7).integers(2**63, size=len(outer))
    reference = {}
    for e in convs:
        op, source = h.labels[e], g.labels[e].gathered[0]
        rows = source.reshape(-1, source.shape[2] * source.shape[3])
        n, d = rows.shape
        k = int(np.ceil(round(0.3 * d, 9)))
        R = signs(d, k, int(seeds[outer.index(e)]), rows.dtype)
        np.testing.assert_array_equal(op.R, R)
        np.testing.assert_allclose(op.image(), (rows @ R @ R.T / k).reshape(source.shape),
                                   rtol=1e-12, atol=1e-13)
        assert retained_memory(h).per_edge[e] == n * k * 8 == op.kept.nbytes
        reference[e] = MatMul(op.patches(), "right", op.in_shape)
    for a, b in zip(gradient(h), gradient(relabelled(h, reference))):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("kind", ["different_sample", "project"])
def test_the_file_keeps_it(tmp_path, kind):
    params = convnet_numpy.init_convnet((2, 3, 2, 2), size=8, rng=1)
    x = RNG.standard_normal((2, 1, 8, 8)).astype(np.float32)
    h = graph.inject(graph.traced(graph.convnet_program, params, x, np.array([1, 2])),
                     kind, 0.3, rng=0)
    save_graph(h, tmp_path / "h.npz")
    back = load_graph(tmp_path / "h.npz")
    assert [type(op) for op in back.labels] == [type(op) for op in h.labels]
    assert retained_memory(back).per_edge == retained_memory(h).per_edge
    for a, b in zip(gradient(back), gradient(h)):
        np.testing.assert_array_equal(a, b)


def test_bad_input():
    gather = Im2Col((1, 2, 4, 4), (3, 3), 1, 1)
    good = dict(picks=[[0, 5]], values=np.ones((2, 2)), scale=8.0, variable_shape=(3, 18))
    SampledPatches(gather, **good)
    with pytest.raises(TypeError, match="must be a minirad.graph.operators.Im2Col"):
        SampledPatches("im2col", **good)
    with pytest.raises(ValueError, match="stride-1 convolutions, not stride 2"):
        SampledPatches(Im2Col((1, 2, 4, 4), (3, 3), 2, 1), **good)
    for change, message in [
        (dict(values=np.ones(4)), "values must be a non-empty"),
        (dict(values=np.ones((2, 2), int)), "values must be a non-empty"),
        (dict(values=np.ones((3, 2))), "do not divide the image"),
        (dict(picks=[[0.0, 5.0]]), "picks must be integer indices"),
        (dict(picks=[[0, 5, 1]]), "picks must be integer indices"),
        (dict(picks=[[0, 16]]), "indices 0..15"),
        (dict(picks=[[-1, 0]]), "indices 0..15"),
        (dict(scale=float("inf")), "scale must be finite"),
        (dict(variable_shape=(3, 9)), r"shape \(F, 18\)"),
    ]:
        with pytest.raises((ValueError, TypeError), match=message):
            SampledPatches(gather, **{**good, **change})
    op = SampledPatches(gather, **good)
    with pytest.raises(ValueError, match="takes arrays of shape"):
        op.apply_transpose(np.ones((1, 3, 15)))


def test_projected_bad_input():
    gather = Im2Col((1, 2, 4, 4), (3, 3), 1, 1)
    good = dict(kept=np.ones((2, 3)), R=np.ones((16, 3)), scale=1 / 3, variable_shape=(3, 18))
    ProjectedPatches(gather, **good)
    with pytest.raises(TypeError, match="must be a minirad.graph.operators.Im2Col"):
        ProjectedPatches(None, **good)
    with pytest.raises(ValueError, match="stride-1 convolutions, not stride 2"):
        ProjectedPatches(Im2Col((1, 2, 4, 4), (3, 3), 2, 1), **good)
    for change, message in [
        (dict(kept=np.ones(3)), "kept must be a non-empty"),
        (dict(kept=np.ones((3, 3))), "do not divide the image"),
        (dict(R=np.ones((16, 2))), r"R must be a \(16, 3\) float matrix"),
        (dict(R=np.ones((16, 3), int)), r"R must be a \(16, 3\) float matrix"),
        (dict(scale=float("nan")), "scale must be finite"),
        (dict(variable_shape=(3, 18, 1)), r"shape \(F, 18\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            ProjectedPatches(gather, **{**good, **change})
    with pytest.raises(ValueError, match="d dividing the image"):
        ProjectedPatches.project(gather, np.ones((1, 2, 4, 4)), np.ones((5, 3)), 1 / 3, (3, 18))
