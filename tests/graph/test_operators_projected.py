"""ProjectedMatMul, the low-rank edge label of a shared Rademacher projection: against
the matrix built by hand from S R R^T, against MatMul by the d-wide S P it stands for,
the adjoint identity, stacks, costs, what it retains, the file, bad input."""

import numpy as np
import pytest

from minirad import trace
from minirad.exact.jacobians import jacobian
from minirad.graph.files import load_graph, save_graph
from minirad.graph.lcg import LCG
from minirad.graph.memory import retained_memory
from minirad.graph.operators import MatMul, ProjectedMatMul, Retained

RNG = np.random.default_rng(31)


def _signs(d, k):
    return RNG.choice([-1.0, 1.0], size=(d, k))


def test_left_side_is_the_hand_built_matrix():
    # dW -> (S R R^T / k) @ dW for dW (d, m): the matrix is kron(S P, I_m)
    n, d, k, m = 5, 7, 3, 4
    S, R = RNG.standard_normal((n, d)), _signs(d, k)
    op = ProjectedMatMul.project(S, R, "left", (d, m), scale=1 / k)
    SP = S @ R @ R.T / k                      # the d-wide estimate, formed by hand
    matrix = np.kron(SP, np.eye(m))
    assert op.shape == matrix.shape == (n * m, d * m)
    np.testing.assert_allclose(op.to_dense(), matrix, atol=1e-13)
    np.testing.assert_allclose(op.stored_estimate(), SP, atol=1e-13)
    np.testing.assert_allclose(op.kept, S @ R, atol=1e-13)
    x, y = RNG.standard_normal((d, m)), RNG.standard_normal((n, m))
    np.testing.assert_allclose(op.apply(x).ravel(), matrix @ x.ravel(), atol=1e-12)
    np.testing.assert_allclose(op.apply_transpose(y).ravel(), matrix.T @ y.ravel(), atol=1e-12)


def test_right_side_is_the_hand_built_matrix():
    # x -> x @ (R R^T S / k) for x (n, d): the matrix is kron(I_n, (P S)^T)
    n, d, k, m = 3, 6, 2, 5
    S, R = RNG.standard_normal((d, m)), _signs(d, k)
    op = ProjectedMatMul.project(S, R, "right", (n, d), scale=1 / k)
    PS = R @ R.T @ S / k
    np.testing.assert_allclose(op.to_dense(), np.kron(np.eye(n), PS.T), atol=1e-13)
    np.testing.assert_allclose(op.kept, R.T @ S, atol=1e-13)
    np.testing.assert_allclose(op.stored_estimate(), PS, atol=1e-13)


@pytest.mark.parametrize("stored_shape, side, variable_shape", [
    ((4, 6), "left", (6,)),              # a matrix times a vector
    ((6,), "left", (6, 3)),              # a vector (one example) times a weight matrix
    ((2, 4, 6), "left", (6, 3)),         # a batch of stored matrices, one weight matrix
    ((6, 3), "right", (6,)),             # x @ S, x a vector
    ((6,), "right", (4, 6)),             # x @ s, s a vector
    ((2, 6, 3), "right", (4, 6)),        # broadcast over the stored batch
])
def test_every_shape_equals_matmul_by_the_projected_operand(stored_shape, side, variable_shape):
    """The operator is MatMul(S P) (MatMul is checked against kron matrices in
    test_operators.py), applied and transposed, one vector or a stack of three."""
    d, k = 6, 4
    S, R = RNG.standard_normal(stored_shape), _signs(d, k)
    op = ProjectedMatMul.project(S, R, side, variable_shape, scale=0.25)
    axis = -1 if side == "left" or S.ndim == 1 else -2
    SP = np.moveaxis(np.moveaxis(S, axis, -1) @ R @ R.T * 0.25, -1, axis)
    dense = MatMul(SP, side, variable_shape)
    assert (op.out_shape, op.in_shape) == (dense.out_shape, dense.in_shape)
    np.testing.assert_allclose(op.to_dense(), dense.to_dense(), atol=1e-12)
    xs = RNG.standard_normal((3,) + op.in_shape)
    ys = RNG.standard_normal((3,) + op.out_shape)
    np.testing.assert_allclose(op.apply(xs), dense.apply(xs), atol=1e-12)
    np.testing.assert_allclose(op.apply_transpose(ys), dense.apply_transpose(ys), atol=1e-12)
    # the adjoint identity <A x, y> = <x, A^T y>
    assert np.isclose(np.sum(op.apply(xs[0]) * ys[0]), np.sum(xs[0] * op.apply_transpose(ys[0])))


def test_it_keeps_only_the_thin_product_and_costs_the_thin_order():
    n, d, k, m = 150, 784, 79, 300
    S = np.ones((n, d), np.float32)
    op = ProjectedMatMul.project(S, _signs(d, k), "left", (d, m), scale=1 / k)
    assert op.kept.shape == (n, k) and op.kept.dtype == np.float32
    # only S R counts: R is regenerated from a seed, as the paper charges it
    assert op.retained_bytes == n * k * 4 == op.kept.nbytes
    # R^T dW (k x m, d each) then kept @ that (n x m, k each): far below n * m * d
    assert op.flops == k * m * d + n * m * k < n * m * d
    assert op.apply_transpose(np.ones((n, m), np.float32)).dtype == np.float32
    mine = (Retained("shared", 8 * n * k * 4, what="given"),)
    assert ProjectedMatMul.project(S, _signs(d, k), "left", (d, m), 1 / k,
                                   retained=mine).retained == mine
    assert op.label() == "outer, projected k=79"


def test_a_graph_with_a_projected_edge_survives_the_file(tmp_path):
    X = RNG.standard_normal((5, 6))
    g = trace(lambda W: np.tanh(X @ W).sum(), RNG.standard_normal((6, 2)))
    op = ProjectedMatMul.project(X, _signs(6, 3), "left", (6, 2), scale=1 / 3)
    labels = [op if label.kind == "outer" else label for label in g.labels]
    h = LCG(g.names, g.sources, g.targets, labels, g.inputs, g.outputs, values=g.values,
                  ops=g.ops, shapes=g.shapes, dtypes=g.dtypes)
    save_graph(h, tmp_path / "h.npz")
    back = load_graph(tmp_path / "h.npz")
    assert [type(label) for label in back.labels] == [type(label) for label in h.labels]
    np.testing.assert_allclose(jacobian(back), jacobian(h), rtol=1e-14)
    assert retained_memory(back).total == retained_memory(h).total
    # the projection really changed the Jacobian (it is an estimate, not the exact one)
    assert not np.allclose(jacobian(h), jacobian(g))


def test_bad_input_names_the_problem():
    S, R = np.ones((4, 6)), np.ones((6, 2))
    with pytest.raises(ValueError, match="side must be"):
        ProjectedMatMul.project(S, R, "top", (6, 3))
    with pytest.raises(ValueError, match=r"R must be a \(d, k\)"):
        ProjectedMatMul(np.ones((4, 2)), np.ones(6), "left", (6, 3))
    with pytest.raises(ValueError, match="R has 6 rows"):
        ProjectedMatMul.project(np.ones((4, 5)), R, "left", (5, 3))
    with pytest.raises(ValueError, match="length k = 2"):
        ProjectedMatMul(np.ones((4, 3)), R, "left", (6, 3))
    with pytest.raises(ValueError, match="length d = 6"):
        ProjectedMatMul(np.ones((4, 2)), R, "left", (5, 3))
    with pytest.raises(ValueError, match="scale must be finite"):
        ProjectedMatMul(np.ones((4, 2)), R, "left", (6, 3), scale=float("nan"))


def test_the_vjp_is_the_derivative_of_the_projected_program():
    """For a fixed R, W -> sum(tanh((S P) W) * C) is an ordinary function; its central
    differences are the VJP through the low-rank operator."""
    n, d, k, m = 4, 9, 3, 2
    S, R, C = RNG.standard_normal((n, d)), _signs(d, k), RNG.standard_normal((n, m))
    op = ProjectedMatMul.project(S, R, "left", (d, m), scale=1 / k)
    SP = S @ R @ R.T / k
    W = RNG.standard_normal((d, m)) * 0.3

    def f(W):
        return float(np.sum(np.tanh(SP @ W) * C))
    adjoint = (1 - np.tanh(op.apply(W)) ** 2) * C
    vjp = op.apply_transpose(adjoint)
    h = 1e-6
    for index in np.ndindex(W.shape):
        step = np.zeros_like(W)
        step[index] = h
        assert vjp[index] == pytest.approx((f(W + step) - f(W - step)) / (2 * h), rel=1e-6,
                                           abs=1e-9)
