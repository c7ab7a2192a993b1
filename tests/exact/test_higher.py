"""The reverse pass recorded as a graph (minirad/exact/higher.py): gradients of
gradients, Hessians and Hessian-vector products.

Oracles: Hessians derived by hand; central differences of the gradient; and on random
programs, at least 100 of numbers drawn from the whole operation table
(tests/oracles.py) and 50 of arrays (slow tests, run by ``.ci/run``), JAX's ``hessian``
and ``jvp(grad)`` to 1e-10 where JAX is installed, else (as in CI, which installs no JAX)
central differences of minirad's exact gradient.  Two older JAX comparisons on a few
programs skip without JAX.  Algorithm 1 sampled on the recorded gradient graph is
z-tested for unbiasedness.
"""

import math

import numpy as np
import pytest
from oracles import (
    assert_power,
    assert_unbiased,
    close,
    draws_for_power,
    random_table_program,
)

from minirad import forward_sweep, jacobian, jvp, ops, reverse_sweep, trace, vjp
from minirad.draw.modes import lecture_family, sweep_cost
from minirad.exact.higher import backward_vertices, gradient_graph, hessian, hvp
from minirad.randomized.sampling import path_sampling_variance, sampled_jacobians

LECTURE = (lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)


# ------------------------------------------------------------- random programs
# each step applies one of these to earlier values; written once for numpy (which
# applies them to minirad's traced numbers) and for jax.numpy
STEPS = ("sin", "tanh", "exp", "arctan", "log1p", "mul", "add", "div", "sub")


def random_program(rng, n_inputs: int, steps: int):
    """f(*xs, lib=np): a random straight-line program of numbers with one result."""
    plan = [(str(rng.choice(STEPS)), int(rng.integers(1 << 20)), int(rng.integers(1 << 20)),
             round(float(rng.uniform(-1.5, 1.5)), 2)) for _ in range(steps)]

    def f(*xs, lib=np):
        pool = list(xs)
        for kind, i, j, c in plan:
            u, w = pool[i % len(pool)], pool[j % len(pool)]
            if kind == "exp":
                pool.append(lib.exp(0.3 * u))
            elif kind == "log1p":
                pool.append(lib.log1p(u * u))
            elif kind == "mul":
                pool.append(u * w)
            elif kind == "add":
                pool.append(u + c * w)
            elif kind == "sub":
                pool.append(c - u * w)
            elif kind == "div":
                pool.append(u / (1.0 + w * w))
            else:
                pool.append(getattr(lib, kind)(u))
        return pool[-1] + pool[-2] * pool[len(pool) // 2]

    return f


# elementwise functions an array program draws from, smooth and with kinks, written for
# numpy (on minirad's traced arrays) and jax.numpy alike
ELEMENTWISE = (
    lambda u, lib: lib.tanh(u), lambda u, lib: lib.sin(u), lambda u, lib: lib.arctan(u),
    lambda u, lib: lib.exp(0.3 * u), lambda u, lib: lib.log1p(u * u),
    lambda u, lib: lib.sqrt(1.0 + u * u), lambda u, lib: lib.square(u),
    lambda u, lib: 1.0 / (1.0 + lib.exp(-u)), lambda u, lib: lib.abs(u) * u,
    lambda u, lib: lib.maximum(u, 0.1) * u, lambda u, lib: lib.hypot(u, 1.0),
    lambda u, lib: lib.cos(u) ** 2,
)
MATRIX, VECTOR, PAIR = (2, 3), (3,), (2,)


def random_array_program(rng, steps=6):
    """(f, (W, x, s)): a random straight-line program of a matrix, a vector and a 0-d
    array: elementwise functions (smooth ones and kinks), + - * / with broadcasting,
    matrix-vector products both ways, sums along an axis and in all, means, a row, a
    slice; f(W, x, s, lib=np) runs on numpy (minirad's traced arrays) and jax.numpy."""
    plan = []
    shapes = [MATRIX, VECTOR, ()]
    for _ in range(steps):
        i, j = (int(k) for k in rng.integers(0, len(shapes), 2))
        si, sj = shapes[i], shapes[j]
        options = ["elementwise"]
        try:
            if np.broadcast_shapes(si, sj) in (MATRIX, VECTOR, PAIR, ()):
                options.append("binary")
        except ValueError:
            pass
        if si == MATRIX and sj == VECTOR:
            options.append("W@x")
        if si == PAIR and sj == MATRIX:
            options.append("p@W")
        if si == MATRIX:
            options += ["sum0", "sum1", "row"]
        if si != ():
            options += ["total", "mean"]
        if si == VECTOR:
            options.append("head")
        kind = str(rng.choice(options))
        plan.append((kind, i, j, int(rng.integers(len(ELEMENTWISE))), int(rng.integers(4)),
                     round(float(rng.uniform(-1, 1)), 2)))
        shapes.append(np.broadcast_shapes(si, sj) if kind == "binary" else {
            "elementwise": si, "W@x": PAIR, "p@W": VECTOR, "sum0": VECTOR, "sum1": PAIR,
            "row": VECTOR, "total": (), "mean": (), "head": PAIR}[kind])

    def f(W, x, s, lib=np):
        pool = [W, x, s]
        for kind, i, j, k, op, c in plan:
            u, w = pool[i], pool[j]
            if kind == "elementwise":
                pool.append(ELEMENTWISE[k](u, lib))
            elif kind == "binary":
                pool.append((u + c * w, u - w, u * w, u / (1.0 + w * w))[op])
            elif kind in ("W@x", "p@W"):
                pool.append(u @ w)
            elif kind in ("sum0", "sum1"):
                pool.append(u.sum(axis=int(kind[-1])))
            elif kind == "row":
                pool.append(u[1])
            elif kind == "head":
                pool.append(u[:2])
            else:
                pool.append(getattr(lib, "sum" if kind == "total" else "mean")(u))
        # one number: the last value summed, times the middle one, plus a product of two
        # entries of x (so the Hessian mixes inputs even when the steps did not)
        return lib.sum(pool[-1]) * (1.0 + 0.5 * lib.sum(pool[len(pool) // 2])) + x[0] * x[2]

    args = (rng.uniform(-1, 1, MATRIX), rng.uniform(-1, 1, VECTOR),
            np.array(rng.uniform(0.5, 1.5)))
    return f, args


# ------------------------------------------------------------------ the graph
def test_the_forward_part_is_the_program_itself_and_the_outputs_its_gradient():
    f, x1, x2 = LECTURE
    g, G = trace(f, x1, x2), gradient_graph(f, x1, x2)
    n = G.n_vertices - len(backward_vertices(G))
    assert n == g.n_vertices  # the program's vertices come first, numbered as trace numbers
    assert list(G.ops[:n]) == list(g.ops) and np.array_equal(G.values[:n], g.values)
    forward_edges = G.targets < n
    assert np.array_equal(G.labels[forward_edges], g.labels)
    # the outputs are the gradient (1/x1 + x2, x1 - cos x2), as values and by name
    np.testing.assert_allclose(G.values[list(G.outputs)], [5.5, 2 - math.cos(5)], rtol=1e-15)
    assert [G.names[v] for v in G.outputs] == ["x̄1", "x̄2"]
    # every vertex of the reverse pass depends on the forward part
    assert all(G.ops[v] != "input" for v in backward_vertices(G))


def test_names_tell_the_two_parts_apart_whatever_the_program():
    # an input called b0, and work done after the result (which the gradient ignores)
    def f(b0, x):
        result = b0 * x * x
        ops.sin(x)  # dead: computed, never used
        return result

    G = gradient_graph(f, 2.0, 3.0)
    back = backward_vertices(G)
    assert G.index("b0") not in back and len(set(G.names)) == G.n_vertices
    assert G.op(G.index("y")) == "{0} * {1}"  # the result, not the dead sin
    assert G.n_vertices - len(back) == trace(f, 2.0, 3.0).n_vertices  # the dead sin too
    np.testing.assert_allclose(G.values[list(G.outputs)], [9.0, 12.0])


def test_the_gradient_of_a_gradient_is_the_second_derivative():
    # f = x sin x: f' = sin x + x cos x, f'' = 2 cos x - x sin x
    x = 0.7
    G = gradient_graph(lambda x: x * ops.sin(x), x)
    assert G.value(G.outputs[0]) == pytest.approx(math.sin(x) + x * math.cos(x), rel=1e-15)
    assert vjp(G, [1.0])[0] == pytest.approx(2 * math.cos(x) - x * math.sin(x), rel=1e-14)


def test_hessian_of_a_hand_derived_function_and_central_differences():
    # f = x^2 y + sin(x y):
    #   f_xx = 2y - y^2 sin(xy), f_xy = 2x + cos(xy) - xy sin(xy), f_yy = -x^2 sin(xy)
    x, y = 0.8, -1.3
    s, c = math.sin(x * y), math.cos(x * y)
    by_hand = np.array([[2 * y - y * y * s, 2 * x + c - x * y * s],
                        [2 * x + c - x * y * s, -x * x * s]])
    f = lambda x, y: x * x * y + ops.sin(x * y)  # noqa: E731
    np.testing.assert_allclose(hessian(f, x, y), by_hand, rtol=1e-13)
    # on random programs: central differences of the gradient (error ~ h^2)
    rng = np.random.default_rng(11)
    for _ in range(10):
        program, z = random_program(rng, 3, 12), rng.uniform(-1, 1, 3)
        h = 1e-5
        columns = []
        for j in range(3):
            e = np.eye(3)[j] * h
            columns.append((jacobian(program, *(z + e)) - jacobian(program, *(z - e)))[0]
                           / (2 * h))
        close(hessian(program, *z), np.array(columns).T, rtol=1e-6)


def test_hessian_vector_products_three_ways_agree():
    # duals over the recorded reverse pass, a forward sweep over the gradient graph,
    # and the Hessian times v
    rng = np.random.default_rng(5)
    for _ in range(10):
        program, z, v = random_program(rng, 4, 15), rng.uniform(-1, 1, 4), rng.normal(size=4)
        G = gradient_graph(program, *z)
        close(hvp(program, *z, v=v), jvp(G, v), rtol=1e-13)
        close(hvp(program, *z, v=v), hessian(program, *z) @ v, rtol=1e-13)
        # k vectors at once, as columns
        V = rng.normal(size=(4, 3))
        close(hvp(program, *z, v=V), np.column_stack([hvp(program, *z, v=c) for c in V.T]),
              rtol=1e-15)


def test_array_programs_and_data_arguments():
    W = np.array([[0.5, -1.0, 0.2], [1.5, 0.3, -0.7]])
    x = np.array([0.1, -0.4, 0.9])
    f = lambda W, x: (np.tanh(W @ x) ** 2).sum()  # noqa: E731
    G = gradient_graph(f, W, x)
    assert len(G.inputs) == 9 and G.names[G.inputs[6]] == "x[0]"
    # the gradient equals minirad's own on the array graph
    close(G.values[list(G.outputs)],
          np.concatenate([np.ravel(a) for a in vjp(trace(f, W, x), [np.array(1.0)])]),
          rtol=1e-14)
    # W as data: the Hessian in x alone is the lower-right block of the whole one
    close(hessian(f, W, x, wrt=[1]), hessian(f, W, x)[6:, 6:], rtol=1e-14)
    # by hand: f = sum tanh(z)^2, z = W x: H = W' diag(2 (1 - t^2)(1 - 3 t^2)) W
    t = np.tanh(W @ x)
    close(hessian(f, W, x, wrt=[1]), W.T @ np.diag(2 * (1 - t * t) * (1 - 3 * t * t)) @ W,
          rtol=1e-13)


# ----------------------------------------------------------------- against JAX
@pytest.fixture(scope="module")
def jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def test_elementwise_numpy_functions_on_array_arguments_keep_their_second_derivatives():
    """numpy's loops over objects would return the constant of np.maximum itself, then
    find no sqrt on it, and have no float_power at all (issue 39); hand derivations:
    d2/dw2 sqrt(w) = -w**-1.5 / 4 where w > 0.5 and 0 where the constant wins, and
    d2/dx2 x**3 = 6 x."""
    w = np.array([0.3, 0.9])
    H = hessian(lambda w: np.sqrt(np.maximum(w, 0.5)).sum(), w)
    np.testing.assert_allclose(H, np.diag([0.0, -0.25 * 0.9 ** -1.5]), rtol=1e-14)
    (Hv,) = hvp(lambda x: np.float_power(x, 3.0).sum(), np.array([2.0]), v=[np.array([1.0])])
    np.testing.assert_allclose(Hv, [12.0], rtol=1e-14)
    H = hessian(lambda x: (np.hypot(x, 1.0) * np.heaviside(x, 0.5)).sum(), np.array([2.0]))
    np.testing.assert_allclose(H, [[5.0 ** -1.5]], rtol=1e-13)   # d2/dx2 sqrt(x^2 + 1)


@pytest.mark.slow
def test_hessians_and_hvps_of_random_programs_equal_jax(jax):
    jnp = jax.numpy
    rng = np.random.default_rng(2026)
    for _ in range(6):  # JAX dispatches each operation of each new program: seconds each
        n = int(rng.integers(1, 5))
        program, z, v = random_program(rng, n, int(rng.integers(3, 20))), \
            rng.uniform(-1, 1, n), rng.normal(size=n)
        on_jax = lambda t, program=program: program(*t, lib=jnp)  # noqa: E731
        close(hessian(program, *z), np.asarray(jax.hessian(on_jax)(jnp.array(z))), rtol=1e-10)
        _, expected = jax.jvp(jax.grad(on_jax), (jnp.array(z),), (jnp.array(v),))
        close(hvp(program, *z, v=v), np.asarray(expected), rtol=1e-10)


@pytest.mark.slow
def test_hessians_and_hvps_of_random_array_programs_equal_jax(jax):
    jnp = jax.numpy
    rng = np.random.default_rng(7)
    for _ in range(4):
        program, args = random_array_program(rng)
        on_jax = lambda z, f=program: f(*array_arguments(z), lib=jnp)  # noqa: E731
        z = jnp.array(np.concatenate([np.ravel(a) for a in args]))
        close(hessian(program, *args), np.asarray(jax.hessian(on_jax)(z)), rtol=1e-10)
        v = rng.normal(size=10)
        _, expected = jax.jvp(jax.grad(on_jax), (z,), (jnp.array(v),))
        close(hvp(program, *args, v=v), np.asarray(expected), rtol=1e-10)


# ------------------------------------- the whole op table and array programs (issue 39)
@pytest.fixture(scope="module")
def jax_if_installed():
    """JAX with 64-bit floats where it is installed, else None: then the oracle is
    central differences of minirad's exact gradient (CI installs no JAX)."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def array_arguments(z):
    """(W, x, s) of :func:`random_array_program` from their 10 numbers in C order."""
    return z[:6].reshape(MATRIX), z[6:9], z[9]


# Central differences of the exact gradient g, (g(z + h e) - g(z - h e)) / 2h, err by
# h^2/6 times g's third derivative (truncation) plus about eps |g| / h (the gradient's
# rounding, eps = 1.1e-16).  At h = 1e-5 both are near 1e-11 for derivatives of order
# one, so a tolerance of 1e-5 relative to the largest of 1, |H| and |g| leaves room for
# third derivatives up to about 1e5 times that scale, while a wrong second partial (a
# rule's derivative off by a term) is off by order one.  A kink (abs, relu, maximum,
# floor, ...) within h of the point would break the differences: the seeds are fixed, so
# the programs and points do not change from run to run.
STEP, FD_TOLERANCE = 1e-5, 1e-5


def assert_second_derivatives(f, args, unflatten, on_jax, jax, rng):
    """hessian(f, *args) and hvp(f, *args, v) against JAX, or central differences of
    minirad's exact gradient along each coordinate and along v; hvp equals H v to
    rounding either way."""
    z = np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in args])
    v = rng.normal(size=z.size)
    H, Hv = hessian(f, *args), np.asarray(hvp(f, *args, v=v))
    np.testing.assert_allclose(Hv, H @ v, rtol=1e-12,
                               atol=1e-12 * max(1.0, np.abs(H).max()) * np.abs(v).sum())
    if jax is not None:
        jnp = jax.numpy
        close(H, np.asarray(jax.hessian(on_jax)(jnp.array(z))), rtol=1e-10)
        _, expected = jax.jvp(jax.grad(on_jax), (jnp.array(z),), (jnp.array(v),))
        close(Hv, np.asarray(expected), rtol=1e-10)
        return

    def gradient(point):
        return jacobian(f, *unflatten(point), method="reverse")[0]

    def along(d):
        return (gradient(z + STEP * d) - gradient(z - STEP * d)) / (2 * STEP)

    differences = np.column_stack([along(e) for e in np.eye(z.size)])
    scale = max(1.0, np.abs(differences).max(), np.abs(gradient(z)).max())
    np.testing.assert_allclose(H, differences, rtol=0, atol=FD_TOLERANCE * scale)
    np.testing.assert_allclose(Hv, along(v), rtol=0,
                               atol=FD_TOLERANCE * scale * max(1.0, np.abs(v).sum()))


class JaxOps:
    """minirad.ops's functions as JAX spells them (for random_table_program.using)."""

    def __init__(self, jax):
        self.jax = jax

    def __getattr__(self, name):
        if name in ("sigmoid", "relu"):
            return getattr(self.jax.nn, name)
        return getattr(self.jax.numpy, name)


@pytest.mark.slow
def test_hessians_and_hvps_of_programs_of_the_whole_op_table(jax_if_installed):
    """At least 100 random programs of numbers drawn from every operation of the table
    in every spelling (tests/oracles.py); the tracer's refusals (values that are not
    finite at the random point) are counted and must be a minority."""
    jax = jax_if_installed
    rng = np.random.default_rng(39)
    compared = refused = 0
    for _ in range(180):
        program = random_table_program(rng, int(rng.integers(1, 20)))
        f = lambda a, b, x, p=program: sum(p(a, b, x))  # noqa: E731
        args = (float(rng.uniform(0.2, 1.5)), float(rng.uniform(-1.5, -0.2)),
                [float(rng.uniform(-1, 1)), float(rng.uniform(0.1, 2))])
        try:
            trace(f, *args)
        except ValueError as error:
            assert "is not finite" in str(error), error
            refused += 1
            continue
        on_jax = None
        if jax is not None:
            jax_program = program.using(JaxOps(jax), jax.numpy)
            on_jax = lambda t, p=jax_program: sum(p(t[0], t[1], [t[2], t[3]]))  # noqa: E731
        assert_second_derivatives(f, args, lambda z: (z[0], z[1], [z[2], z[3]]), on_jax,
                                  jax, rng)
        compared += 1
    assert compared >= 100 and refused < compared, (compared, refused)


@pytest.mark.slow
def test_hessians_and_hvps_of_random_array_programs(jax_if_installed):
    """At least 50 random array programs (elementwise functions with kinks, broadcasting,
    matrix products, reductions, indexing; a 0-d array argument)."""
    jax = jax_if_installed
    rng = np.random.default_rng(3939)
    compared = refused = 0
    for _ in range(55):
        program, args = random_array_program(rng, int(rng.integers(2, 9)))
        try:
            trace(program, *args)
        except ValueError as error:
            assert "is not finite" in str(error), error
            refused += 1
            continue
        on_jax = None if jax is None else (
            lambda z, f=program: f(*array_arguments(z), lib=jax.numpy))
        assert_second_derivatives(program, args, array_arguments, on_jax, jax, rng)
        compared += 1
    assert compared >= 50, (compared, refused)


def test_numbers_and_entries_of_array_arguments_mix_as_in_numpy():
    """Issue 39: an entry W[0] or a sum W.sum() was a bare traced number, which took
    W.sum() * W for a product by a constant array (TypeError: a constant of dtype
    object) and refused np.sum(W[0]); a 0-d array argument met the same.  By hand:
    f = (w0 + w1) w0 + mean(W) w1 + np.sum(w1) = w0^2 + 1.5 w0 w1 + w1^2 / 2 + w1,
    H = [[2, 1.5], [1.5, 1]]; g = sum(s x) + s^2 over (s, x0, x1): H = [[2, 1, 1],
    [1, 0, 0], [1, 0, 0]]."""
    W = np.array([0.7, -1.2])
    f = lambda W: (W.sum() * W)[0] + np.mean(W) * W[1] + np.sum(W[1])  # noqa: E731
    np.testing.assert_allclose(hessian(f, W), [[2.0, 1.5], [1.5, 1.0]], rtol=1e-15)
    np.testing.assert_allclose(hvp(f, W, v=[1.0, -1.0]), [0.5, 0.5], rtol=1e-15)
    g = lambda s, x: (s * x).sum() + np.sum(s * s)  # noqa: E731
    np.testing.assert_allclose(hessian(g, np.array(0.5), np.array([1.0, 2.0])),
                               [[2, 1, 1], [1, 0, 0], [1, 0, 0]], rtol=1e-15)


# ---------------------------------------------------------------- what it costs
def test_a_hessian_vector_product_costs_a_few_gradients():
    # A forward sweep along v over the gradient graph G (one HVP) multiplies once per
    # edge of G reachable from the inputs; the reverse sweep over the program's
    # graph g (one gradient) once per edge of g on a path to the output.  On the
    # lecture's example summed over n inputs every edge counts in both, and the
    # ratio is G's edges over g's: by hand at n = 2, g has 8 edges and the reverse
    # pass adds 7 (cos, its product by -1, a sum; 1/x1, a sum): 15 / 8.
    f, x = lecture_family(2)
    assert (gradient_graph(f, *x).n_edges, trace(f, *x).n_edges) == (15, 8)
    for n in (8, 64):
        f, x = lecture_family(n)
        G, g = gradient_graph(f, *x), trace(f, *x)
        assert sweep_cost(G, G.inputs) == G.n_edges and reverse_cost(g) == g.n_edges
        assert 1.8 < G.n_edges / g.n_edges < 2.0  # a constant: it does not grow with n
    # on random programs each edge of g adds at most its partial's rule, one product
    # and one sum to G; observed 1.2 to 2.2 times g's edges
    rng = np.random.default_rng(3)
    for _ in range(10):
        program, z = random_program(rng, 6, 40), rng.uniform(-1, 1, 6)
        G, g = gradient_graph(program, *z), trace(program, *z)
        assert G.n_edges < 3 * g.n_edges
        # the full Hessian by n forward sweeps, one per input, costs n HVPs along e_j
        assert forward_cost(G, None) == sum(forward_cost(G, [j]) for j in range(6))


def reverse_cost(g) -> int:
    return reverse_sweep(g).multiplications


def forward_cost(G, inputs) -> int:
    return forward_sweep(G, inputs).multiplications


# ------------------------------------------------------ randomized AD on the graph
def test_path_sampling_on_the_gradient_graph_estimates_the_hessian_without_bias():
    # Algorithm 1 (k = 1) on the recorded gradient graph of the lecture's example:
    # each row of the estimate is z-tested against the exact Hessian row with the
    # exact covariance; a test fails by chance with probability below 3 x 5.7e-7 per
    # row (see oracles.py), and a 5% bias fails it with probability above 1 - 3e-7
    f, x1, x2 = LECTURE
    G = gradient_graph(f, x1, x2)
    H = hessian(f, x1, x2)
    covariance = path_sampling_variance(G, 1, covariance=True)
    rows = [r for r in range(2) if covariance[r].any()]
    assert rows, "no randomness: the test would prove nothing"
    n = max(draws_for_power(H[r], covariance[r]) for r in rows)
    assert n <= 200_000
    estimates = sampled_jacobians(G, 1, n, rng=28)
    for r in range(2):
        assert_unbiased(estimates[:, r], H[r], covariance[r])
    for r in rows:
        assert_power(estimates[:, r], H[r], covariance[r])
    # a Hessian-vector product estimated as (estimate) v: its mean is H v
    v = np.array([0.6, -0.8])
    products = estimates @ v
    for r in rows:
        assert_unbiased(products[:, r:r + 1], (H @ v)[r:r + 1],
                        (v @ covariance[r] @ v).reshape(1, 1))


# -------------------------------------------------------------------- bad input
def test_bad_input_is_refused_with_a_message():
    with pytest.raises(TypeError, match="one number as its result"):
        gradient_graph(lambda x, y: (x, y), 1.0, 2.0)
    with pytest.raises(TypeError, match="an input is a str"):
        hessian(lambda x: x, "1")
    with pytest.raises(TypeError, match="an input is a bool"):
        hessian(lambda x: x, True)
    with pytest.raises(ValueError, match="one entry per input"):
        hvp(lambda x, y: x * y, 1.0, 2.0, v=[1.0])
    with pytest.raises(ValueError, match="wrt must list argument positions"):
        hessian(lambda x: x, 1.0, wrt=[3])
    with pytest.raises(ValueError, match="log"):
        hessian(lambda x: ops.log(x), -1.0)
    # a constant function: zero gradient, zero Hessian
    np.testing.assert_array_equal(hessian(lambda x: 2.0, 1.0), [[0.0]])
    np.testing.assert_array_equal(hvp(lambda x: 2.0, 1.0, v=[1.0]), [0.0])


# ------------------------------------------------------- every rule of the table
def test_every_operation_of_the_table_has_its_second_derivative():
    # the Hessian of each table entry alone, against central differences of the
    # table's own first partials (error ~ h^2): the recorded reverse pass evaluates
    # each partial rule on traced numbers, so every entry needs no second rule
    from minirad.tracing.ops import OPS, evaluate

    points = {1: (0.6,), 2: (0.7, 0.4)}
    special = {"arccosh": (1.6,)}
    h = 1e-5
    for name, op in OPS.items():
        point = special.get(name, points[op.arity])
        H = hessian(lambda *x, op=op: ops.apply(op, *x), *point)
        for j in range(op.arity):
            e = np.eye(op.arity)[j] * h
            ahead = evaluate(op, tuple(np.add(point, e)))[1]
            behind = evaluate(op, tuple(np.subtract(point, e)))[1]
            column = (np.array(ahead) - np.array(behind)) / (2 * h)
            close(H[:, j], column, rtol=1e-6)


def test_the_reverse_pass_vertices_are_numbered_without_gaps():
    """b₀, b₁, b₂, ...: the names read as a count of the reverse pass's other vertices."""
    G = gradient_graph(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    numbered = [name for name in G.names if name.startswith("b")]
    assert numbered == [f"b{chr(0x2080 + j)}" for j in range(len(numbered))]
    assert len(numbered) == 3 and {G.names[v] for v in G.outputs} == {"x̄1", "x̄2"}
