"""The array tracer: every supported operation against central differences (float64),
both sweeps, scalarize against the scalar tracer, float32 end to end, the paper's MLP
memory (Appendix A), and refusals."""

import numpy as np
import pytest
from oracles import central_differences, paper_mlp

import minirad
from minirad import ops, trace
from minirad.exact.jacobians import jacobian
from minirad.exact.sweeps import gradient, jvp, vjp
from minirad.graph.memory import retained_memory
from minirad.graph.scalarize import scalarize
from minirad.tracing.ops import relu, sigmoid
from minirad.tracing.rules import avg_pool2d, conv2d, softmax, softmax_cross_entropy

RNG = np.random.default_rng(3)


def positive(*shape):
    return RNG.uniform(0.5, 2.0, shape)


def normal(*shape):
    return RNG.standard_normal(shape)


LABELS = np.array([2, 0, 1])

PROGRAMS = {
    "matmul matrix": (lambda A, B: A @ B, [normal(3, 4), normal(4, 2)]),
    "matmul vector": (lambda A, x: A @ x, [normal(3, 4), normal(4)]),
    "matmul vector-matrix": (lambda x, A: x @ A, [normal(4), normal(4, 3)]),
    "matmul batched": (lambda A, B: np.matmul(A, B), [normal(2, 3, 4), normal(4, 2)]),
    "add broadcast": (lambda a, b: a + b, [normal(3, 4), normal(4)]),
    "sub broadcast": (lambda a, b: a - b, [normal(3, 1), normal(4)]),
    "mul broadcast": (lambda a, b: a * b, [normal(2, 3), normal(3)]),
    "div": (lambda a, b: a / b, [normal(3), positive(3)]),
    "constants": (lambda a: 2.0 - a * 3.0 + 1.5 / (a * a + 1.0), [normal(4)]),
    "neg pow": (lambda a: -(a ** 3) + a ** 2.5, [positive(4)]),
    "sum mean axis": (lambda a: (a.sum(axis=0), a.mean(axis=1), np.sum(a), a.mean()),
                      [normal(3, 4)]),
    "sum keepdims": (lambda a: a.sum(axis=1, keepdims=True) * a, [normal(3, 4)]),
    "exp log": (lambda a: np.exp(a) + np.log(a), [positive(5)]),
    "tanh sigmoid": (lambda a: np.tanh(a) * sigmoid(a), [normal(5)]),
    "relu abs": (lambda a: relu(a) + np.abs(a), [np.array([-1.5, -0.3, 0.4, 2.0])]),
    "square sqrt": (lambda a: np.square(a) + np.sqrt(a), [positive(4)]),
    "maximum minimum": (lambda a: np.maximum(a, 0.2) + np.minimum(a, -0.1),
                        [np.array([-1.0, 0.0, 0.5, 1.5])]),
    "reshape transpose": (lambda a: a.reshape(4, 3).T @ np.transpose(a.reshape(3, 4)),
                          [normal(12)]),
    "index slice": (lambda a: a[1:, ::2] * a[0, 1] + a[np.array([0, 2]), 1], [normal(3, 4)]),
    "concatenate stack": (lambda a, b: np.concatenate([a, b * 2.0, np.ones(2)]) @
                          np.stack([a, a, b, b, a, b], axis=1).T, [normal(2), normal(2)]),
    "softmax": (lambda a: softmax(a, axis=1), [normal(2, 4)]),
    "softmax cross-entropy": (lambda z: softmax_cross_entropy(z, LABELS), [normal(3, 4) * 5]),
    "conv2d": (lambda x, w: conv2d(x, w, padding=1), [normal(2, 2, 4, 4), normal(3, 2, 3, 3)]),
    "conv2d stride": (lambda x, w: conv2d(x, w, stride=2),
                      [normal(1, 1, 5, 5), normal(2, 1, 3, 3)]),
    "avg_pool2d": (lambda x: avg_pool2d(x * x, 2), [normal(1, 2, 4, 4)]),
    "reused variable": (lambda a: a * a + a @ a, [normal(3)]),
}


@pytest.mark.parametrize("key", PROGRAMS)
def test_traced_operation_matches_central_differences(key):
    f, args = PROGRAMS[key]
    g = trace(f, *args)
    numeric = central_differences(f, args)
    for method in ("forward", "reverse"):
        np.testing.assert_allclose(jacobian(g, method=method), numeric, rtol=1e-6, atol=1e-7,
                                   err_msg=f"{key}, {method}")
    # the values are the program's values
    out = f(*args)
    for v, o in zip(g.outputs, out if isinstance(out, tuple) else (out,)):
        np.testing.assert_allclose(g.value(v), o)


def test_jvp_vjp_and_gradient_agree():
    f, args = PROGRAMS["conv2d"]
    g = trace(lambda x, w: (conv2d(x, w, padding=1) ** 2).sum(), *args)
    grads = gradient(g)
    t = [normal(*a.shape) for a in args]
    (directional,) = jvp(g, t)
    assert np.isclose(directional, sum(np.sum(gr * ti) for gr, ti in zip(grads, t)))
    for a, b in zip(vjp(g, [np.ones(())]), grads):
        np.testing.assert_allclose(a, b)


def _scalar_program(vector_f, shapes):
    """The same program on object arrays of traced scalars, for minirad.trace."""
    def f(*flat):
        arrays = [np.asarray(x, dtype=object).reshape(s) for x, s in zip(flat, shapes)]
        out = vector_f(*arrays)
        return np.asarray(out, dtype=object).reshape(-1)
    return f


SCALAR_TWINS = {
    "tanh layer": (lambda W, x, b: np.tanh(W @ x + b), lambda W, x, b: np.tanh(W @ x + b),
                   [normal(3, 4), normal(4), normal(3)]),
    "exp log div": (lambda a, b: np.exp(a) / b + np.log(b) * a.sum(),
                    lambda a, b: np.exp(a) / b + np.log(b[0]) * 0 + np.log(b) * a.sum(),
                    [normal(3), positive(3)]),
    "index concat": (lambda a: np.concatenate([a[::-1] * a[0], a[1:] ** 2]),
                     lambda a: np.concatenate([a[::-1] * a[0], a[1:] ** 2]), [normal(4)]),
    "softmax": (lambda z: softmax(z),
                lambda z: np.exp(z) / np.exp(z).sum(), [normal(4)]),
}


@pytest.mark.parametrize("key", SCALAR_TWINS)
def test_scalarize_equals_the_scalar_trace(key):
    vector_f, scalar_f, args = SCALAR_TWINS[key]
    g = trace(vector_f, *args)
    s = scalarize(g)
    twin = minirad.trace(_scalar_program(scalar_f, [a.shape for a in args]),
                         *[a.ravel().tolist() for a in args])
    expected = minirad.jacobian(twin)
    for method in ("reverse", "forward", "bauer", "eliminate"):
        np.testing.assert_allclose(minirad.jacobian(s, method=method), expected, rtol=1e-10,
                                   atol=1e-12, err_msg=method)
    np.testing.assert_allclose(jacobian(g), expected, rtol=1e-10, atol=1e-12)
    assert s.n_vertices == sum(np.prod(sh, dtype=int) for sh in g.shapes)


def test_scalarize_refuses_large_graphs():
    g = trace(lambda a: (a * a).sum(), np.ones(1000))
    with pytest.raises(ValueError, match="above the limit of 100"):
        scalarize(g, max_entries=100)


# ----------------------------------------------------- the paper's MLP (Appendix A)
def test_paper_mlp_memory_at_baseline_is_6776_bytes_per_example():
    mlp, params = paper_mlp()
    g = trace(mlp, *params)
    assert all(dt == np.float32 for dt in g.dtypes)
    assert g.value("y").dtype == np.float32
    assert all(gr.dtype == np.float32 for gr in gradient(g))
    m = retained_memory(g)
    # (784 + 300 + 300 + 300 + 10) floats of 4 bytes: every linear layer's input and the
    # logits; ReLU masks rebuilt from the kept activations, biases and W's free
    assert m.per_example(150) == (784 + 300 + 300 + 300 + 10) * 4 == 6776
    kinds = {g.labels[e].kind: 0 for e in range(g.n_edges)}
    for e, b in enumerate(m.per_edge):
        kinds[g.labels[e].kind] += b
    assert kinds == {"outer": 150 * (784 + 900) * 4, "identity": 0, "broadcast": 0, "mask": 0,
                     "matmul": 0, "dense": 150 * 10 * 4}
    assert m.kept_anyway == sum(p.nbytes for p in params[2::2])   # W2, W3, W4 as matmul edges


def test_memory_follows_dtype():
    mlp, params = paper_mlp(batch=4, dtype=np.float64)
    assert retained_memory(trace(mlp, *params)).per_example(4) == 2 * 6776


def test_gradient_of_mlp_matches_a_hand_written_backward_pass():
    mlp, params = paper_mlp(batch=5, dtype=np.float64, rng=1)
    g = trace(mlp, *params)
    grads = gradient(g)
    # finite differences on a few random entries of each parameter
    rng = np.random.default_rng(5)
    for i, p in enumerate(params):
        for j in rng.integers(0, p.size, 3):
            plus = [q.copy() for q in params]
            minus = [q.copy() for q in params]
            plus[i].reshape(-1)[j] += 1e-6
            minus[i].reshape(-1)[j] -= 1e-6
            numeric = (mlp(*plus) - mlp(*minus)) / 2e-6
            assert np.isclose(grads[i].reshape(-1)[j], numeric, rtol=1e-5, atol=1e-8)


# ----------------------------------------------------------------------- refusals
def test_unsupported_numpy_function_is_named():
    with pytest.raises(TypeError, match=r"numpy.linalg.pinv has no rule for traced arrays; "
                                        r"docs/numpy_support.md .*"
                                        r"register\(np.linalg.pinv, rule\)"):
        trace(lambda a: np.linalg.pinv(a), np.ones((3, 3)))
    with pytest.raises(TypeError, match="numpy's spacing has no derivative: .*floating-point"):
        trace(lambda a: np.spacing(a), np.ones(3))


def test_shape_mismatch_names_both_shapes_and_the_op():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(2, 3\) do not align"):
        trace(lambda a: a @ a, np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"add: shapes \(3,\) and \(4,\) do not broadcast"):
        trace(lambda a, b: a + b, np.ones(3), np.ones(4))


def test_bad_arguments_and_values():
    with pytest.raises(ValueError, match="non-finite"):
        trace(lambda a: a * 2.0, np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match=r"log at vertex v1 is not finite: the result is nan at "
                                         r"index \(1,\), where the operands are -1.0"):
        trace(lambda a: np.log(a), np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"sqrt at vertex v1 is not finite: its derivative is "
                                         r"inf at index \(0,\)"):   # when asked for
        jacobian(trace(lambda a: np.sqrt(a), np.array([0.0, 1.0])))
    with pytest.raises(TypeError, match="must be a real array"):
        trace(lambda a: a, np.array(["x"]))
    with pytest.raises(ValueError, match="truth value .* shape \\(2,\\) is ambiguous"):
        trace(lambda a: a if a else a, np.ones(2))
    with pytest.raises(ValueError, match="wrt must list"):
        trace(lambda a: a, np.ones(1), wrt=[3])
    with pytest.raises(ValueError, match="labels must lie"):
        trace(lambda z: softmax_cross_entropy(z, np.array([5])), np.ones((1, 3)))


def test_outputs_that_are_inputs_or_reused_get_copies():
    g = trace(lambda a: (a, a * 2.0, (a * 2.0).sum()), np.ones(2))
    assert [g.kind(v) for v in g.outputs] == ["output"] * 3
    assert g.labels[g.in_edges_ptr[g.outputs[0]]].kind == "identity"
    assert [g.names[v] for v in g.outputs] == ["y[0]", "y[1]", "y[2]"]  # as for numbers


def test_program_runs_on_plain_arrays_too():
    x = normal(2, 2, 4, 4)
    w = normal(3, 2, 3, 3)
    plain = conv2d(x, w, padding=1)
    g = trace(lambda x, w: conv2d(x, w, padding=1), x, w)
    np.testing.assert_allclose(g.value(g.outputs[0]), plain)
    assert relu(np.array([-1.0, 1.0])).tolist() == [0.0, 1.0]
    assert ops is not None


def test_iterating_over_rows_and_read_only_values():
    g = trace(lambda X: sum(row * row for row in X).sum(), np.arange(6.0).reshape(3, 2))
    np.testing.assert_allclose(gradient(g)[0], 2 * np.arange(6.0).reshape(3, 2))
    with pytest.raises(ValueError, match="read-only"):
        g.values[0][0, 0] = 1.0


def test_constant_sparse_matrices():
    import scipy.sparse as sp

    from minirad.graph.operators import SparseMatMul
    from minirad.tracing.rules import matmul
    n = 6
    laplacian = sp.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1],
                         format="csr")
    dense = laplacian.toarray()
    u0 = np.sin(np.linspace(0, 3, n))

    def step(u, L):                        # two explicit heat-equation steps
        for _ in range(2):
            u = u + 0.1 * matmul(L, u)
        return np.tanh(u)

    def step_dense(u):
        for _ in range(2):
            u = u + 0.1 * (dense @ u)
        return np.tanh(u)
    g = trace(step, u0, laplacian, wrt=[0])
    assert "L @ v" in g.wengert().replace("v0", "v")
    np.testing.assert_allclose(jacobian(g), central_differences(step_dense, [u0]), rtol=1e-6,
                               atol=1e-8)
    for side, x_shape in (("left", (n, 3)), ("right", (2, n)), ("right", (n,))):
        op = SparseMatMul(laplacian, side, x_shape)
        reference = np.kron(dense, np.eye(3)) if x_shape == (n, 3) else (
            np.kron(np.eye(2), dense.T) if x_shape == (2, n) else dense.T)
        np.testing.assert_allclose(op.to_dense(), reference)
        y = np.random.default_rng(0).standard_normal(op.out_shape)
        x = np.random.default_rng(1).standard_normal(op.in_shape)
        assert np.isclose(np.sum(op.apply(x) * y), np.sum(x * op.apply_transpose(y)))
    # the matrix is counted once however often it is used: values + indices + row pointers
    csr = sp.csr_array(laplacian)
    assert retained_memory(g).arrays and max(retained_memory(g).arrays.values()) == (
        csr.data.nbytes + csr.indices.nbytes + csr.indptr.nbytes)


def test_ties_follow_the_scalar_kink_convention():
    """maximum/minimum with a constant give 1/2 at a tie (minirad.ops' convention),
    relu gives 0 at 0; the array tracer and the scalar tracer agree entry by entry."""
    import minirad
    from minirad import ops, trace
    from minirad.tracing.ops import maximum, minimum, relu

    x = np.array([0.0, 1.0, -1.0, 0.0])
    cases = [
        (lambda v: (maximum(v, 0.0) * 3.0 + minimum(v, 0.0)).sum(),
         lambda a: ops.maximum(a, 0.0) * 3.0 + ops.minimum(a, 0.0)),
        (lambda v: relu(v).sum(), lambda a: ops.relu(a)),
    ]
    for array_program, scalar_program in cases:
        (grad,) = gradient(trace(array_program, x))
        scalar = [minirad.jacobian(minirad.trace(scalar_program, float(a)))[0, 0] for a in x]
        np.testing.assert_array_equal(grad, scalar)
    (grad,) = gradient(trace(cases[0][0], x))
    assert grad[0] == 2.0  # 3 * 1/2 + 1/2 at the tie
