"""Linear operators: each against a matrix built independently by hand, the adjoint
identity <A x, y> = <x, A^T y>, stacks, structure-preserving algebra, costs, bad input."""

import math

import numpy as np
import pytest

from minirad.graph.operators import (
    DENSE_LIMIT,
    FROM_SHAPES,
    OPERATORS,
    Added,
    Broadcast,
    Composed,
    Dense,
    Diagonal,
    Embed,
    Gather,
    Identity,
    Im2Col,
    Mask,
    MatMul,
    Outer,
    Reshape,
    Retained,
    Softmax,
    SumAxes,
    Transpose,
    compose,
)

RNG = np.random.default_rng(12)


def _sum_matrix(in_shape, axes, keepdims, scale):
    out_shape = tuple(1 if i in axes else s for i, s in enumerate(in_shape)) if keepdims else \
        tuple(s for i, s in enumerate(in_shape) if i not in axes)
    J = np.zeros((math.prod(out_shape), math.prod(in_shape)))
    for i, idx in enumerate(np.ndindex(*in_shape)):
        kept = tuple(0 if a in axes else j for a, j in enumerate(idx)) if keepdims else \
            tuple(j for a, j in enumerate(idx) if a not in axes)
        J[np.ravel_multi_index(kept, out_shape) if out_shape else 0, i] = scale
    return J


def _broadcast_matrix(in_shape, out_shape):
    padded = (1,) * (len(out_shape) - len(in_shape)) + in_shape
    J = np.zeros((math.prod(out_shape), math.prod(in_shape)))
    for o, idx in enumerate(np.ndindex(*out_shape)):
        src = tuple(0 if p == 1 else j for p, j in zip(padded, idx))
        J[o, np.ravel_multi_index(src[len(out_shape) - len(in_shape):], in_shape)
          if in_shape else 0] = 1
    return J


def _cases():
    """(operator, its matrix built without the operator's code)."""
    d = RNG.standard_normal((3, 4))
    mask = RNG.random((3, 4)) > 0.5
    dense = RNG.standard_normal((5, 12))
    p = RNG.random((2, 4))
    p /= p.sum(axis=1, keepdims=True)
    soft = np.zeros((8, 8))
    for r in range(2):
        soft[4 * r:4 * r + 4, 4 * r:4 * r + 4] = np.diag(p[r]) - np.outer(p[r], p[r])
    A = RNG.standard_normal((4, 3))
    x = RNG.standard_normal((5, 4))
    positions = np.array([[2, -1, 0], [5, 5, 1]])
    gather = np.zeros((6, 6))
    for o, i in enumerate(positions.ravel()):
        if i >= 0:
            gather[o, i] += 1
    embed_pos = np.array([1, 4, 3])
    embed = np.zeros((6, 3))
    embed[embed_pos, np.arange(3)] = 1
    perm = np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1).ravel()
    return [
        (Identity((2, 3)), np.eye(6)),
        (Diagonal(d), np.diag(d.ravel())),
        (Diagonal(np.array([1.0, 2.0, 3.0, 4.0]), (3, 4)), np.diag(np.tile([1, 2, 3, 4.0], 3))),
        (Diagonal(np.asarray(-2.0), (3,)), -2 * np.eye(3)),
        (Mask(mask), np.diag(mask.ravel().astype(float))),
        (Dense(dense, (5,), (3, 4)), dense),
        (Softmax(p, axis=1), soft),
        (MatMul(A, "right", (5, 4)), np.kron(np.eye(5), A.T)),     # X -> X @ A
        (MatMul(A, "left", (3, 2)), np.kron(A, np.eye(2))),        # X -> A @ X
        (Outer(x, "left", (4, 6)), np.kron(x, np.eye(6))),         # dW -> x @ dW
        (MatMul(A, "left", (3,)), A),                              # vector
        (MatMul(A, "right", (4,)), A.T),                           # x @ A, x a vector
        (SumAxes((2, 3, 4), (1,)), _sum_matrix((2, 3, 4), (1,), False, 1.0)),
        (SumAxes((2, 3, 4), (0, 2), keepdims=True, scale=0.125),
         _sum_matrix((2, 3, 4), (0, 2), True, 0.125)),
        (SumAxes((2, 3)), np.ones((1, 6))),
        (Broadcast((4,), (3, 4)), _broadcast_matrix((4,), (3, 4))),
        (Broadcast((3, 1), (2, 3, 4)), _broadcast_matrix((3, 1), (2, 3, 4))),
        (Reshape((2, 6), (3, 4)), np.eye(12)),
        (Transpose((2, 3, 4), (2, 0, 1)), np.eye(24)[perm]),
        (Gather((6,), positions), gather),
        (Embed((6,), embed_pos), embed),
    ]


@pytest.mark.parametrize("op, matrix", _cases(), ids=lambda c: getattr(c, "kind", ""))
def test_operator_matches_its_matrix(op, matrix):
    assert op.shape == matrix.shape
    np.testing.assert_allclose(op.to_dense(), matrix, atol=1e-14)
    x = RNG.standard_normal(op.in_shape)
    y = RNG.standard_normal(op.out_shape)
    np.testing.assert_allclose(np.ravel(op.apply(x)), matrix @ x.ravel(), atol=1e-12)
    np.testing.assert_allclose(np.ravel(op.apply_transpose(y)), matrix.T @ y.ravel(), atol=1e-12)
    # the adjoint identity
    assert np.isclose(np.sum(op.apply(x) * y), np.sum(x * op.apply_transpose(y)))
    # a stack of three goes through at once
    xs = RNG.standard_normal((3,) + op.in_shape)
    stacked = op.apply(xs)
    assert stacked.shape == (3,) + op.out_shape
    for i in range(3):
        np.testing.assert_allclose(stacked[i], op.apply(xs[i]), atol=1e-12)


def test_batched_matmul_with_broadcasting_satisfies_the_adjoint_identity():
    for a_shape, b_shape, side in [((2, 3, 4), (4, 5), "right"), ((4,), (2, 4, 5), "right"),
                                   ((3, 4), (2, 4, 5), "right"), ((2, 1, 3, 4), (5, 4, 2), "left"),
                                   ((3, 4), (4,), "left"), ((2, 3, 4), (4,), "left")]:
        a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
        stored, variable = (b, a) if side == "right" else (a, b)
        op = MatMul(stored, side, variable.shape)
        np.testing.assert_allclose(op.apply(variable), np.matmul(a, b), atol=1e-12)
        x = RNG.standard_normal(op.in_shape)
        y = RNG.standard_normal(op.out_shape)
        assert np.isclose(np.sum(op.apply(x) * y), np.sum(x * op.apply_transpose(y)))


def test_float32_stays_float32():
    d = np.ones(4, np.float32)
    x = np.ones(4, np.float32)
    for op in (Diagonal(d), Mask(d > 0, np.float32), MatMul(np.ones((4, 4), np.float32), "left",
                                                            (4,)), SumAxes((4,), dtype=np.float32)):
        assert op.apply(x).dtype == np.float32
        assert op.apply_transpose(op.apply(x)).dtype == np.float32


def test_retained_bytes_follow_dtype_and_bits():
    assert Diagonal(np.ones((3, 4), np.float32)).retained_bytes == 48
    assert Diagonal(np.ones((3, 4))).retained_bytes == 96
    assert Diagonal(np.asarray(3.0), (3, 4)).retained_bytes == 0     # a constant factor
    assert Mask(np.ones(12, bool)).retained_bytes == 1.5              # one bit per entry
    assert Outer(np.ones((150, 784), np.float32), "left", (784, 300)).retained_bytes \
        == 150 * 784 * 4
    for op in (Identity((3,)), SumAxes((3, 4)), Broadcast((4,), (3, 4)), Reshape((12,), (3, 4)),
               Transpose((3, 4)), Im2Col((1, 1, 3, 3), (2, 2))):
        assert op.retained_bytes == 0                                 # shapes only
    # an index array is held (two int64 positions) and marked as rebuilt from the shapes
    for op in (Gather((3,), np.array([0, 2])), Embed((5,), np.array([1, 3]))):
        assert op.retained_bytes == 16
        assert [r.recompute_from for r in op.retained] == [FROM_SHAPES]


def test_memory_reports_index_arrays_apart_and_counts_equal_ones_once():
    """Two uses of the slice v[1:] hold equal positions (one key), v[:2] its own.  retained_memory()
    charges none of them (the shapes rebuild them) but reports their bytes, counted by hand:
    3 + 2 int64 positions.  What it charges: the float32 constant x[1:] that the product
    keeps (3 x 4 B) and the four float partials of the two additions (4 x 8 B); the factors
    of v[:2] * v[:2] are slices of the input, which the caller keeps anyway."""
    from minirad import trace
    from minirad.graph.memory import retained_memory

    x = np.arange(4.0, dtype=np.float32)
    g = trace(lambda v: (v[1:] * x[1:]).sum() + (v[1:] * 2.0).sum()
                     + (v[:2] * v[:2]).sum(), np.ones(4, np.float32))
    keys = {r.key for op in g.labels if isinstance(op, Gather) for r in op.retained}
    assert len(keys) == 2
    m = retained_memory(g)
    assert m.from_shapes == (3 + 2) * 8
    assert m.total == 3 * 4 + 4 * 8
    assert sum("24 B of indices rebuilt from the shapes" in note for note in m.notes) == 2


def test_flops_respect_structure():
    assert Diagonal(np.ones(100)).flops == 100                        # d, not d^2
    assert Dense(np.ones((100, 100)), (100,), (100,)).flops == 10_000
    assert MatMul(np.ones((150, 784)), "left", (784, 300)).flops == 150 * 300 * 784
    assert Identity((100,)).flops == 0 and Reshape((100,), (10, 10)).flops == 0


def test_to_dense_refuses_large_operators_with_size_and_limit():
    op = Diagonal(np.ones(3000))
    with pytest.raises(ValueError, match="3000 x 3000 = 9,000,000 entries.*limit of 4,000,000"):
        op.to_dense()
    assert DENSE_LIMIT == 4_000_000
    assert op.to_dense(limit=10**7).shape == (3000, 3000)


def test_compose_keeps_structure_where_it_can():
    d1, d2 = Diagonal(RNG.standard_normal(5)), Diagonal(RNG.standard_normal(5))
    m = Mask(RNG.random(5) > 0.5)
    assert isinstance(compose(d1, d2), Diagonal)
    assert isinstance(compose(d1, m), Diagonal)
    assert isinstance(compose(m, m), Mask)
    assert compose(Identity((5,)), d1) is d1
    assert isinstance(compose(Reshape((2, 3), (6,)), Reshape((3, 2), (2, 3))), Reshape)
    assert isinstance(compose(Reshape((6,), (2, 3)), Reshape((2, 3), (6,))), Identity)
    lazy = compose(Dense(np.ones((2, 5)), (2,), (5,)), d1)
    assert isinstance(lazy, Composed)
    # retained arrays are the union of the parts'
    assert {r.key for r in compose(d1, d2).retained} == {r.key for r in d1.retained + d2.retained}


def test_operators_algebra_multiply_is_composition_outer_after_inner():
    A = Dense(RNG.standard_normal((3, 4)), (3,), (4,))
    B = Dense(RNG.standard_normal((4, 5)), (4,), (5,))
    d = Diagonal(RNG.standard_normal(4))
    np.testing.assert_allclose(OPERATORS.multiply(A, B).to_dense(), A.matrix @ B.matrix)
    np.testing.assert_allclose(OPERATORS.multiply(A, d).to_dense(), A.matrix @ np.diag(d.d))
    assert OPERATORS.multiply_cost(A, B) == 3 * 4 * 5
    assert OPERATORS.multiply_cost(d, Diagonal(np.ones(4))) == 4
    # with an array: a JVP on the right, a VJP on the left; costs are flops per vector
    t, a = RNG.standard_normal(4), RNG.standard_normal(3)
    np.testing.assert_allclose(OPERATORS.multiply(A, t), A.matrix @ t)
    np.testing.assert_allclose(OPERATORS.multiply(a, A), a @ A.matrix)
    assert OPERATORS.multiply_cost(A, np.ones((7, 4))) == 7 * 12
    assert OPERATORS.multiply_cost(d, t) == 4


def test_operators_algebra_add():
    d1, d2 = Diagonal(np.array([1.0, 2.0])), Diagonal(np.array([3.0, 5.0]))
    assert isinstance(OPERATORS.add(d1, d2), Diagonal)
    np.testing.assert_allclose(OPERATORS.add(d1, Identity((2,))).to_dense(), np.diag([2.0, 3.0]))
    s = OPERATORS.add(Gather((2,), np.array([1, 0])), d1)
    assert isinstance(s, Added)
    np.testing.assert_allclose(s.to_dense(), [[1, 1], [1, 2]])
    np.testing.assert_allclose(OPERATORS.add(np.ones(2), np.ones(2)), [2.0, 2.0])
    assert OPERATORS.add_cost(d1, d2) == 2


def test_bad_input_names_the_problem():
    with pytest.raises(ValueError, match=r"shapes \(3,\) and \(4, 2\) do not align"):
        MatMul(np.ones((4, 2)), "right", (3,))
    with pytest.raises(ValueError, match="takes arrays of shape"):
        Diagonal(np.ones(3)).apply(np.ones(4))
    with pytest.raises(ValueError, match="does not broadcast"):
        Broadcast((3,), (4,))
    with pytest.raises(ValueError, match="cannot reshape"):
        Reshape((3,), (4,))
    with pytest.raises(ValueError, match="cannot compose"):
        compose(Diagonal(np.ones(3)), Diagonal(np.ones(4)))
    with pytest.raises(TypeError, match="OPERATORS.multiply takes"):
        OPERATORS.multiply(np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="side must be"):
        MatMul(np.ones((2, 2)), "top", (2,))
    with pytest.raises(TypeError, match="boolean"):
        Mask(np.ones(3))
    with pytest.raises(ValueError, match="distinct"):
        Embed((4,), np.array([1, 1]))
    with pytest.raises(ValueError, match=r"positions must lie in \[-1, 3\)"):
        Gather((3,), np.array([3]))
    assert Retained("k", 8).nbytes == 1
