"""Im2Col, the patch operator of a traced convolution: against a Gather whose
positions are written out patch entry by patch entry, its dense matrix, the
adjoint identity, a traced convolution against central differences and the
hand-written floor, the file (new and old layout), bad input."""

import json

import numpy as np
import pytest

from minirad import trace
from minirad.exact.sweeps import gradient
from minirad.graph.files import load_graph, save_graph
from minirad.graph.memory import retained_memory
from minirad.graph.operators import Gather, Im2Col, MatMul
from minirad.studies.nn import convnet_numpy
from minirad.tracing.rules import conv2d

RNG = np.random.default_rng(41)


def hand_positions(shape, kh, kw, stride, padding):
    """Flat index into the images of every patch entry, -1 on padding: the loops a
    textbook writes, (B, C*kh*kw, Ho*Wo), channel-major down a patch's column."""
    b, c, h, w = shape
    ho, wo = (h + 2 * padding - kh) // stride + 1, (w + 2 * padding - kw) // stride + 1
    out = np.full((b, c * kh * kw, ho * wo), -1)
    for n in range(b):
        for r in range(ho):
            for s in range(wo):
                for ch in range(c):
                    for i in range(kh):
                        for j in range(kw):
                            row, col = r * stride + i - padding, s * stride + j - padding
                            if 0 <= row < h and 0 <= col < w:
                                out[n, (ch * kh + i) * kw + j, r * wo + s] = (
                                    ((n * c + ch) * h + row) * w + col)
    return out


CASES = [((2, 1, 4, 4), (3, 3), 1, 1), ((1, 2, 5, 6), (2, 3), 1, 0),
         ((2, 3, 6, 5), (3, 3), 2, 1), ((1, 1, 7, 7), (5, 5), 1, 2),
         ((1, 2, 3, 3), (1, 1), 3, 0)]


@pytest.mark.parametrize("shape, kernel, stride, padding", CASES)
def test_im2col_is_the_gather_of_the_hand_written_positions(shape, kernel, stride, padding):
    op = Im2Col(shape, kernel, stride, padding)
    positions = hand_positions(shape, *kernel, stride, padding)
    reference = Gather(shape, positions)
    assert (op.out_shape, op.in_shape) == (reference.out_shape, reference.in_shape)
    np.testing.assert_array_equal(op.to_dense(), reference.to_dense())
    xs = RNG.standard_normal((3,) + shape)
    ys = RNG.standard_normal((3,) + op.out_shape)
    np.testing.assert_array_equal(op.apply(xs), reference.apply(xs))
    # overlapping windows add up in the transpose (the order of the adds may differ)
    np.testing.assert_allclose(op.apply_transpose(ys), reference.apply_transpose(ys),
                               rtol=1e-13, atol=1e-13)
    assert np.isclose(np.sum(op.apply(xs[0]) * ys[0]), np.sum(xs[0] * op.apply_transpose(ys[0])))
    assert op.retained_bytes == 0 and op.flops == 0       # data movement, keeps shapes only


def test_float32_stays_float32():
    op = Im2Col((2, 3, 8, 8), (5, 5), 1, 2, np.float32)
    x = np.ones((2, 3, 8, 8), np.float32)
    assert op.apply(x).dtype == np.float32
    assert op.apply_transpose(op.apply(x)).dtype == np.float32


def test_traced_convolution_equals_the_floor_and_central_differences():
    x = RNG.standard_normal((2, 3, 8, 8))
    w, bias = RNG.standard_normal((4, 3, 5, 5)) * 0.2, RNG.standard_normal(4)
    np.testing.assert_allclose(conv2d(x, w, padding=2) + bias.reshape(1, -1, 1, 1),
                               convnet_numpy.conv2d(x, w, bias), rtol=1e-12, atol=1e-12)
    weights = RNG.standard_normal((2, 4, 8, 8))

    def f(x, w):
        return (np.tanh(conv2d(x, w, padding=2)) * weights).sum()
    g = trace(f, x, w)
    dx, dw = gradient(g)
    h = 1e-6
    for array, grad in ((x, dx), (w, dw)):
        for index in [tuple(RNG.integers(s) for s in array.shape) for _ in range(12)]:
            old = array[index]
            array[index] = old + h
            up = f(x, w)
            array[index] = old - h
            down = f(x, w)
            array[index] = old
            assert grad[index] == pytest.approx((up - down) / (2 * h), rel=1e-6, abs=1e-9)


def test_the_patch_edge_charges_the_image_and_remembers_how_to_gather():
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    g = trace(lambda w: conv2d(x, w, padding=2).sum(),
              RNG.standard_normal((4, 3, 5, 5)).astype(np.float32))
    outer = next(op for op in g.labels if op.kind == "outer")
    source, gather = outer.gathered
    # the graph's own read-only copy of the image, so refilling x later changes nothing
    assert isinstance(gather, Im2Col) and np.array_equal(source, x) and source is not x
    assert not source.flags.writeable
    np.testing.assert_array_equal(gather.apply(source), outer.stored)
    # the patches (25x the image) can be rebuilt from the image: the image is what counts
    assert retained_memory(g).total == x.nbytes


def test_files_keep_the_gathering_and_read_the_older_positions(tmp_path):
    x = RNG.standard_normal((1, 2, 5, 5))
    g = trace(lambda w: (np.tanh(conv2d(x, w, padding=1)) ** 2).sum(),
              RNG.standard_normal((3, 2, 3, 3)))
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    e = next(e for e, op in enumerate(g.labels) if op.kind == "outer")
    assert isinstance(h.labels[e].gathered[1], Im2Col)
    np.testing.assert_array_equal(h.labels[e].gathered[0], x)
    np.testing.assert_allclose(gradient(h)[0], gradient(g)[0], rtol=1e-14)
    # a file of the earlier layout (the source and one int position per patch entry)
    with np.load(tmp_path / "g.npz", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    doc = json.loads(arrays["manifest"].tobytes())
    entry = doc["edges"][e]["operator"]
    del entry["gathered"]
    arrays[f"edge/{e}/positions"] = hand_positions(x.shape, 3, 3, 1, 1)
    entry["arrays"]["positions"] = f"edge/{e}/positions"
    arrays["manifest"] = np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8)
    np.savez(tmp_path / "old.npz", **arrays)
    old = load_graph(tmp_path / "old.npz")
    assert isinstance(old.labels[e].gathered[1], Gather)
    np.testing.assert_array_equal(old.labels[e].gathered[1].apply(x), g.labels[e].stored)


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match=r"images \(B, C, H, W\)"):
        Im2Col((2, 3, 4), (3, 3))
    with pytest.raises(ValueError, match="positive sizes"):
        Im2Col((1, 1, 4, 4), (0, 3))
    with pytest.raises(ValueError, match="stride must be an int >= 1"):
        Im2Col((1, 1, 4, 4), (3, 3), stride=0)
    with pytest.raises(ValueError, match="padding must be an int >= 0"):
        Im2Col((1, 1, 4, 4), (3, 3), padding=-1)
    with pytest.raises(ValueError, match="does not fit"):
        Im2Col((1, 1, 2, 2), (3, 3))
    with pytest.raises(ValueError, match="must map the source's shape"):
        MatMul(np.ones((1, 4, 9)), "left", (9, 2), gathered=(np.ones((1, 1, 5, 5)),
                                                              Im2Col((1, 1, 4, 4), (3, 3))))
    with pytest.raises(ValueError, match="gathered positions must be integers"):
        MatMul(np.ones((2, 3)), "left", (3, 2), gathered=(np.ones(6), np.ones((2, 3))))
