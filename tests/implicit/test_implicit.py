"""Implicit operators: linear solves and roots as single edges of the vector LCG.

Oracles: central differences of the solve and of the root; numpy's inverse
(the matrix the operators never form); the same computation unrolled
(Jacobi or fixed-point iterations traced step by step); the implicit
function theorem worked by hand on x^3 + x = p; the dot-product identity
<y, J x> = <J^T y, x> for every apply/apply_transpose pair.  Saved and
loaded graphs against the originals (bit for bit) and central differences.
"""

import json

import numpy as np
import pytest
import scipy.linalg as linalg
import scipy.sparse

from minirad import jacobian, load_graph, save_graph, trace
from minirad.exact.sparsity import pattern
from minirad.exact.sweeps import gradient
from minirad.graph.memory import retained_memory
from minirad.graph.scalarize import scalarize
from minirad.implicit.solves import ImplicitSolution, LinearSolve, SolveMatrix, solve, solve_root

RNG = np.random.default_rng(17)
N = 4
A0 = RNG.standard_normal((N, N)) + 4 * np.eye(N)      # diagonally dominant-ish, well posed
B0 = RNG.standard_normal(N)
W = RNG.standard_normal(N)


def central(f, x, eps=1e-6):
    """Central differences of a scalar function of one array."""
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        grad[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return grad


def loss_of_solve(A, b):
    x = np.linalg.solve(A, b)
    return (W @ x) ** 2 if x.ndim == 1 else (x ** 2).sum()


# ------------------------------------------------------------ operators
@pytest.mark.parametrize("rhs", [(N,), (N, 3)])
def test_operators_obey_the_dot_product_identity_and_match_dense(rhs):
    b = RNG.standard_normal(rhs)
    lu = linalg.lu_factor(A0)
    x = np.linalg.solve(A0, b)
    for op, shape_in in ((LinearSolve(lu, rhs), rhs), (SolveMatrix(lu, x), (N, N))):
        u = RNG.standard_normal((5,) + shape_in)         # a stack of five
        y = RNG.standard_normal((5,) + rhs)
        left = np.sum(y * op.apply(u), axis=tuple(range(1, y.ndim)))
        right = np.sum(op.apply_transpose(y) * u, axis=tuple(range(1, u.ndim)))
        np.testing.assert_allclose(left, right, rtol=1e-12)
    # b -> x is A^{-1} (block diagonal over columns); A -> x by central differences
    dense_b = LinearSolve(lu, rhs).to_dense()
    np.testing.assert_allclose(dense_b, np.kron(np.linalg.inv(A0), np.eye(int(np.prod(rhs[1:])))),
                               rtol=1e-12, atol=1e-14)
    dense_A = SolveMatrix(lu, x).to_dense()
    eps = 1e-6
    for k in range(N * N):
        E = np.zeros(N * N)
        E[k] = eps
        E = E.reshape(N, N)
        fd = (np.linalg.solve(A0 + E, b) - np.linalg.solve(A0 - E, b)).reshape(-1) / (2 * eps)
        np.testing.assert_allclose(dense_A[:, k], fd, rtol=1e-6, atol=1e-9)


def test_operators_retain_the_factors_not_the_inverse():
    g = trace(lambda A, b: (solve(A, b) ** 2).sum(), A0, B0)
    kinds = [op.kind for op in g.labels]
    assert kinds[:2] == ["solve_matrix", "solve"]
    lu_keys = [{r.key for r in op.retained if r.what == "LU factors"} for op in g.labels[:2]]
    assert lu_keys[0] == lu_keys[1] and len(lu_keys[0]) == 1        # one shared factorisation
    m = retained_memory(g)
    lu_bytes, x_bytes = N * N * 8 + N * 4, N * 8
    # the solve's two edges keep LU once plus x; the square keeps x once more (its diagonal)
    assert m.per_edge[0] + m.per_edge[1] == lu_bytes + x_bytes


# ---------------------------------------------------- traced linear solves
@pytest.mark.parametrize("rhs", [(N,), (N, 2)])
def test_traced_solve_gradient_matches_central_differences(rhs):
    b = RNG.standard_normal(rhs)

    def program(A, b):
        x = np.linalg.solve(A, b)
        return (W @ x) ** 2 if x.ndim == 1 else (x * x).sum()

    g = trace(program, A0, b)
    dA, db = gradient(g)
    np.testing.assert_allclose(dA, central(lambda A: loss_of_solve(A, b), A0), rtol=1e-6)
    np.testing.assert_allclose(db, central(lambda v: loss_of_solve(A0, v), b), rtol=1e-6)
    # the scalar LCG of the same graph: every entry through the operators' matrices
    J = jacobian(g)

    np.testing.assert_allclose(jacobian(scalarize(g)), J, rtol=1e-10, atol=1e-13)


def test_constant_matrix_or_constant_right_hand_side():
    g = trace(lambda b: solve(A0, b).sum(), B0)
    assert [op.kind for op in g.labels][0] == "solve"
    np.testing.assert_allclose(gradient(g)[0], np.linalg.solve(A0.T, np.ones(N)),
                               rtol=1e-12)
    g = trace(lambda A: solve(A, B0).sum(), A0)
    assert g.labels[0].kind == "solve_matrix"
    np.testing.assert_allclose(gradient(g)[0],
                               central(lambda A: np.linalg.solve(A, B0).sum(), A0), rtol=1e-6)


def test_solve_against_unrolled_richardson_iterations():
    """x = A^{-1} b by Richardson's iteration x <- x - (A x - b) / 12, traced step by
    step with respect to both A and b: the same gradient through both edges."""
    A = A0 + 6 * np.eye(N)     # eigenvalues near 10: the iteration contracts by about 1/2

    def unrolled(A, b):
        x = b / 12.0
        for _ in range(120):
            x = x - (A @ x - b) / 12.0
        return (x * x).sum()

    implicit = trace(lambda A, b: (solve(A, b) * solve(A, b)).sum(), A, B0)
    through = trace(unrolled, A, B0)
    for mine, theirs in zip(gradient(implicit), gradient(through)):
        np.testing.assert_allclose(mine, theirs, rtol=1e-10)
    assert through.n_vertices > 100 * implicit.n_vertices / 5


def test_float32_stays_float32():
    A, b = A0.astype(np.float32), B0.astype(np.float32)
    g = trace(lambda A, b: solve(A, b).sum(), A, b)
    assert g.values[g.outputs[0]].dtype == np.float32 or g.dtypes[g.outputs[0]] == np.float32
    assert {op.dtype for op in g.labels[:2]} == {np.dtype(np.float32)}


def test_pattern_of_a_vector_graph_with_solves_is_its_scalar_pattern():
    A = np.diag([2.0, 3.0, 4.0])
    g = trace(lambda b: np.exp(solve(A, b)) * 2.0, np.array([1.0, 2.0, 3.0]))
    P = pattern(g)
    assert np.array_equal(P, np.eye(3, dtype=bool))             # A diagonal: A^{-1} diagonal
    assert np.array_equal(P, pattern(scalarize(g)))


# ---------------------------------------------------------------- roots
def cubic(x, p):
    return x ** 3 + x - p


def test_root_by_hand():
    p = np.array([2.0, 10.0, -2.0])
    g = trace(lambda p: solve_root(cubic, np.zeros(3), p), p)
    x = g.values[g.outputs[0]]
    np.testing.assert_allclose(x, [1.0, 2.0, -1.0], rtol=1e-12)
    assert g.labels[0].kind == "implicit"
    # dx/dp = 1 / (3 x^2 + 1): the implicit function theorem by hand
    np.testing.assert_allclose(jacobian(g), np.diag(1 / (3 * x ** 2 + 1)), rtol=1e-12)


A_ROOT = np.array([[3.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 5.0]])
A_INV = np.linalg.inv(A_ROOT)


def coupled(x, p):
    """A x + x^3 / 10 = p[:3] * p[3]: three coupled equations, four parameters."""
    return A_ROOT @ x + 0.1 * x ** 3 - p[:3] * p[3]


def root_loss_unrolled(p, iterations=60):
    x = np.zeros(3)
    for _ in range(iterations):                     # a contraction: x <- A^{-1} (rhs - x^3/10)
        x = A_INV @ (p[:3] * p[3] - 0.1 * x ** 3)
    return (x * x).sum()


def test_root_gradient_against_central_differences_and_unrolled_iterations():
    p = np.array([1.0, -2.0, 0.5, 1.5])
    implicit = trace(lambda p: (lambda x: (x * x).sum())(solve_root(coupled, np.zeros(3),
                                                                           p)), p)
    through = trace(root_loss_unrolled, p)
    got = gradient(implicit)[0]
    np.testing.assert_allclose(got, central(lambda q: root_loss_unrolled(q, 200), p), rtol=1e-7)
    np.testing.assert_allclose(got, gradient(through)[0], rtol=1e-9)
    # one edge against sixty iterations' worth: the implicit graph keeps far less
    assert retained_memory(implicit).total < retained_memory(through).total / 5
    # the root's operator is -f_x^{-1} f_p, by the chain rule on the plain values
    root = next(v for v in range(implicit.n_vertices) if implicit.op(v) == "root({0})")
    x = implicit.values[root]
    f_x = A_ROOT + np.diag(0.3 * x ** 2)
    f_p = -np.concatenate([np.diag(np.full(3, p[3])), p[:3, None]], axis=1)
    np.testing.assert_allclose(implicit.labels[0].to_dense(), -np.linalg.solve(f_x, f_p),
                               rtol=1e-12)


def test_replayed_solves_and_roots_equal_fresh_traces():
    """A replay solves again (and runs Newton again) at the new inputs: the same
    gradients as a trace there, the two solve edges again sharing one factorisation."""
    from minirad.tracing import replay
    A1, b1 = A0 + 0.5 * np.eye(N), B0[::-1].copy()
    h, fresh = replay(trace(loss_of_solve, A0, B0), A1, b1), trace(loss_of_solve, A1, b1)
    for got, want in zip(gradient(h), gradient(fresh)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    assert h.labels[0].lu[0] is h.labels[1].lu[0]
    np.testing.assert_allclose(h.labels[1].to_dense(), np.linalg.inv(A1), rtol=1e-12)

    def loss(q):
        x = solve_root(coupled, np.zeros(3), q)
        return (x * x).sum()
    p0, p1 = np.array([1.0, -2.0, 0.5, 1.5]), np.array([0.5, 1.0, -1.0, 2.0])
    h = replay(trace(loss, p0), p1)
    np.testing.assert_allclose(gradient(h)[0], gradient(trace(loss, p1))[0], rtol=1e-12)
    np.testing.assert_allclose(gradient(h)[0], central(loss, p1), rtol=1e-7, atol=1e-10)


def test_implicit_solution_dot_product_identity():
    lu = linalg.lu_factor(A0)
    f_p = RNG.standard_normal((N, 2))
    op = ImplicitSolution(lu, f_p, (N,), (2,))
    u, y = RNG.standard_normal((3, 2)), RNG.standard_normal((3, N))
    np.testing.assert_allclose(np.sum(y * op.apply(u), axis=1),
                               np.sum(op.apply_transpose(y) * u, axis=1), rtol=1e-12)


# ------------------------------------------------------------ bad input
def test_bad_input():
    with pytest.raises(ValueError, match=r"square matrix, not shape \(2, 3\)"):
        solve(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match=r"b must have shape \(2,\) or \(2, k\)"):
        solve(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="singular"):
        trace(lambda b: solve(np.ones((2, 2)), b), np.ones(2))
    with pytest.raises(ValueError, match="no root to tolerance"):
        solve_root(lambda x, p: x * x + p, np.array([0.7]), np.array([1.0]), max_iter=5)
    with pytest.raises(ValueError, match="as many equations as unknowns"):
        solve_root(lambda x, p: np.concatenate([x, p]), np.zeros(2), np.ones(1))
    with pytest.raises(ValueError, match="x0 must be a 1-D array"):
        solve_root(cubic, np.zeros((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="max_iter must be a positive int"):
        solve_root(cubic, np.zeros(1), np.ones(1), max_iter=0)


@pytest.mark.parametrize("tol", [float("nan"), float("inf"), 1.0, 5.0, -1e-12])
def test_a_tolerance_that_accepts_a_non_root_is_refused(tol):
    """x^2 + 1 has no real root: a NaN tolerance used to return x = 2.98 after the
    last Newton step, an infinite one x0 itself."""
    with pytest.raises(ValueError, match=r"tol must be a number in \[0, 1\)"):
        solve_root(lambda x, p: x * x + p, np.array([0.7]), np.array([1.0]), tol=tol)


def test_tolerance_types_and_starting_points_are_checked():
    for tol in ("1e-9", True, None, 1j):
        with pytest.raises(TypeError, match="tol must be a number"):
            solve_root(cubic, np.zeros(1), np.array([2.0]), tol=tol)
    with pytest.raises(ValueError, match="x0 and p must be finite"):
        solve_root(cubic, np.array([np.nan]), np.array([2.0]))
    with pytest.raises(ValueError, match="x0 and p must be finite"):
        solve_root(cubic, np.zeros(1), np.array([np.inf]))
    # the valid end: tol=0 asks for an exact zero, which Newton reaches on x^3 + x = 2
    assert solve_root(cubic, np.zeros(1), np.array([2.0]), tol=0).tolist() == [1.0]


# ------------------------------------------------------------ the file
def saved_and_loaded(g, tmp_path):
    path = tmp_path / "g.npz"
    save_graph(g, path)
    return load_graph(path), path


@pytest.mark.parametrize("rhs", [(N,), (N, 2)])
def test_a_graph_with_solves_survives_the_file(tmp_path, rhs):
    b0 = RNG.standard_normal(rhs)
    g = trace(lambda A, b: loss_of_solve(A, b), A0, b0)
    h, path = saved_and_loaded(g, tmp_path)
    assert [getattr(op, "kind", "number") for op in h.labels] == [
        getattr(op, "kind", "number") for op in g.labels]
    # the factors themselves were saved: the same solves, bit for bit
    for got, want in zip(gradient(h), gradient(g)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jacobian(h), jacobian(g))
    gA, gb = gradient(h)
    np.testing.assert_allclose(gA, central(lambda A: loss_of_solve(A, b0), A0), rtol=1e-6)
    np.testing.assert_allclose(gb, central(lambda b: loss_of_solve(A0, b), b0), rtol=1e-6)
    mg, mh = retained_memory(g), retained_memory(h)
    assert (mh.per_edge, mh.notes, mh.total) == (mg.per_edge, mg.notes, mg.total)
    assert "lu shared" in mh.notes[1]
    # the two edges' shared factors are written once, and share one key after loading
    with np.load(path) as z:
        assert sum(name.endswith("/lu") for name in z.files) == 1
    assert h.labels[0].retained[0].key == h.labels[1].retained[0].key


def only_first(x, p):
    """p enters one equation of three: f_p is mostly zeros (kept sparse)."""
    return A_ROOT @ x + 0.1 * x ** 3 - np.concatenate([p[:1] * p[1], np.zeros(2)])


@pytest.mark.parametrize("f, p, sparse_f_p", [
    (coupled, np.array([1.0, -2.0, 0.5, 1.5]), False),
    (only_first, np.array([1.0, -2.0, 0.5, 1.5]), True),
])
def test_a_graph_with_a_root_survives_the_file(tmp_path, f, p, sparse_f_p):
    def loss(q):
        x = solve_root(f, np.zeros(3), q)
        return (x * x).sum()
    g = trace(loss, p)
    h, _ = saved_and_loaded(g, tmp_path)
    assert h.labels[0].kind == "implicit"
    np.testing.assert_array_equal(gradient(h)[0], gradient(g)[0])
    # central differences of Newton's root at perturbed parameters
    np.testing.assert_allclose(gradient(h)[0], central(loss, p), rtol=1e-7, atol=1e-10)
    assert retained_memory(h).per_edge == retained_memory(g).per_edge
    assert scipy.sparse.issparse(h.labels[0].f_p) == scipy.sparse.issparse(g.labels[0].f_p) \
        == sparse_f_p


def test_a_float32_solve_stays_float32_through_the_file(tmp_path):
    A, b = A0.astype(np.float32), B0.astype(np.float32)
    g = trace(lambda A, b: (solve(A, b) ** 2).sum(), A, b)
    h, _ = saved_and_loaded(g, tmp_path)
    assert [op.dtype for op in h.labels] == [op.dtype for op in g.labels]
    np.testing.assert_array_equal(gradient(h)[1], gradient(g)[1])
    assert retained_memory(h).per_edge == retained_memory(g).per_edge


def _tampered(tmp_path, change_manifest=None, change_arrays=None):
    g = trace(lambda A, b: (solve(A, b) ** 2).sum(), A0, B0)
    good = tmp_path / "good.npz"
    save_graph(g, good)
    with np.load(good, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    doc = json.loads(arrays["manifest"].tobytes())
    if change_manifest:
        change_manifest(doc["edges"][0]["operator"], doc["edges"][1]["operator"])
    if change_arrays:
        change_arrays(arrays)
    arrays["manifest"] = np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays)
    return bad


def _set(name, value):
    def change(arrays):
        arrays[name] = value(arrays[name])
    return change


@pytest.mark.parametrize("change_arrays, message", [
    (_set("edge/0/piv", lambda piv: piv + N), r"piv must be 4 integers with i <= piv\[i\] < 4"),
    (_set("edge/0/piv", lambda piv: piv.astype(np.float64)), "piv must be 4 integers"),
    (_set("edge/0/lu", lambda lu: lu * np.tri(N, k=-1)), "singular to working precision"),
    (_set("edge/0/lu", lambda lu: np.where(np.eye(N) > 0, np.nan, lu)), "finite float array"),
    (_set("edge/0/lu", lambda lu: lu[:, :-1]), "square float32 or float64 matrix"),
    (_set("edge/0/x", lambda x: x.astype(np.float32)), "x has dtype float32"),
    (_set("edge/0/x", lambda x: x[:-1]), r"has shape \(4,\) or \(4, k\)"),
])
def test_tampered_factors_are_refused(tmp_path, change_arrays, message):
    bad = _tampered(tmp_path, change_arrays=change_arrays)
    with pytest.raises(ValueError, match=message) as error:
        load_graph(bad)
    assert "is not a valid LCG archive" in str(error.value)


@pytest.mark.parametrize("change, message", [
    (lambda m, s: m["params"].update(keys=["lu#1"]), r"keys must be 2 string\(s\)"),
    (lambda m, s: s["params"].update(keys=[3]), r"keys must be 1 string\(s\)"),
    (lambda m, s: s["params"].pop("keys"), "lacks the field 'keys'"),
    (lambda m, s: s["params"].update(shape=[N + 1]), "takes right-hand sides of shape"),
    (lambda m, s: s["arrays"].pop("piv"), "lacks the array 'piv'"),
])
def test_tampered_manifests_are_refused(tmp_path, change, message):
    bad = _tampered(tmp_path, change_manifest=change)
    with pytest.raises(ValueError, match=message):
        load_graph(bad)


def test_a_tampered_root_is_refused(tmp_path):
    g = trace(lambda q: solve_root(coupled, np.zeros(3), q).sum(),
              np.array([1.0, -2.0, 0.5, 1.5]))
    save_graph(g, tmp_path / "root.npz")
    with np.load(tmp_path / "root.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["edge/0/f_p"] = arrays["edge/0/f_p"][:, :2]
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=r"f_p must have shape \(3, 4\)"):
        load_graph(tmp_path / "bad.npz")
