"""The numpy a student writes (issue 33): every rule of the catalog against central
differences (fourth order, to 1e-8) in float64 and against the float64 answer in float32,
the kink and tie conventions the op table's docstring states, the refusals, the numpy
ufuncs each accounted for, user rules through register, and the generated page."""

import math
import zlib

import numpy as np
import pytest
from oracles import ROOT

import minirad
from minirad import trace
from minirad.exact.sweeps import gradient, vjp
from minirad.tracing import ops, rules
from minirad.tracing.catalog import DOMAINS, EXAMPLES, supported_table
from minirad.tracing.ops import COMPARISONS, IDENTITIES, NOT_DIFFERENTIABLE, UFUNCS, Op


def central_jacobian(f, args, h=1e-3):
    """The Jacobian of ``f`` (arrays -> one array) by fourth-order central differences:
    error h^4 f^(5) / 30 plus rounding, about 1e-12 at h = 1e-3 for these programs."""
    def flat(xs):
        return np.ravel(np.asarray(f(*xs), dtype=np.float64))
    columns = []
    for i, a in enumerate(args):
        for j in range(a.size):
            def at(t, i=i, j=j):
                moved = [x.copy() for x in args]
                moved[i].reshape(-1)[j] += t
                return flat(moved)
            columns.append((-at(2 * h) + 8 * at(h) - 8 * at(-h) + at(-2 * h)) / (12 * h))
    return np.stack(columns, axis=1)


def arguments(example, dtype=np.float64):
    """The example's operands, drawn with a seed of its own (the same every run)."""
    return example.arguments(np.random.default_rng(zlib.crc32(example.name.encode())), dtype)


def close(actual, expected, tolerance):
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=tolerance, atol=tolerance * scale)


# ---------------------------------------------------------------- every rule
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_rule_matches_fourth_order_central_differences(name):
    example = EXAMPLES[name]
    f, args = example.function(), arguments(example)
    g = trace(f, *args)
    np.testing.assert_allclose(g.value(g.outputs[0]), f(*args), rtol=1e-13, atol=1e-15)
    # a float32 result (astype) rounds what the differences see: float32's tolerance
    tolerance = 1e-8 if g.value(g.outputs[0]).dtype == np.float64 else 1e-3
    close(minirad.jacobian(g), central_jacobian(f, args), tolerance)


# numpy's own rules make these float64 from float32: float_power always computes in
# float64, and a float64 constant (the sparse Laplacian) promotes what it multiplies
PROMOTED = {"np.float_power(a, b)", "rules.matmul(L, x), L sparse"}


@pytest.mark.parametrize("name", EXAMPLES)
def test_float32_stays_float32_and_agrees_with_float64(name):
    example = EXAMPLES[name]
    args = arguments(example, np.float32)
    g = trace(example.function(), *args)
    if name not in PROMOTED:
        assert {np.dtype(d) for d in g.dtypes} == {np.dtype(np.float32)}
        shape = g.shape(g.outputs[0])   # a reverse sweep keeps the program's precision
        adjoints = gradient(g) if shape == () else vjp(g, [np.ones(shape, np.float32)])
        assert all(np.asarray(a).dtype == np.float32 for a in adjoints)
    # the same point in float64: float32 rounding, amplified a little by the rule
    exact = minirad.jacobian(trace(example.function(), *[a.astype(np.float64) for a in args]))
    close(minirad.jacobian(g), exact, 2e-4)


# ------------------------------------------------------------------ conventions
def test_max_shares_a_tie_equally_as_maximum_does():
    grad = gradient(trace(lambda x: x.max(), np.array([1.0, 3.0, 3.0, 2.0])))[0]
    np.testing.assert_array_equal(grad, [0.0, 0.5, 0.5, 0.0])   # 1/k for k = 2 ties
    grad = gradient(trace(lambda x: np.max(x, axis=1).sum() + np.min(x, axis=0).sum(),
                          np.array([[1.0, 1.0, 1.0], [2.0, 0.0, 1.0]])))[0]
    # maxima: row 0 three ways (1/3 each), row 1 at 2.0; minima: 1.0 / 0.0 / both 1.0
    np.testing.assert_allclose(grad, [[1 / 3 + 1, 1 / 3, 1 / 3 + 0.5], [1.0, 1.0, 0.5]])
    # the same derivative as maximum's 1/2 at a tie of two
    a = np.array([2.0, 2.0])
    by_max = gradient(trace(lambda a: np.max(a), a))[0]
    by_maximum = gradient(trace(lambda a: np.maximum(a[0], a[1]), a))[0]
    np.testing.assert_array_equal(by_max, by_maximum)
    # and the docstring says so
    assert "``x.max()``" in ops.__doc__.split("Kinks\n-----")[1]


def test_selection_at_argmax_and_sort_give_the_first_of_the_tied():
    x = np.array([1.0, 3.0, 3.0])
    np.testing.assert_array_equal(gradient(trace(lambda x: x[x.argmax()], x))[0], [0, 1, 0])
    np.testing.assert_array_equal(gradient(trace(lambda x: np.sort(x)[-2], x))[0], [0, 1, 0])
    np.testing.assert_array_equal(gradient(trace(lambda x: np.sort(x)[-1], x))[0], [0, 0, 1])


def test_products_with_zeros_and_spreads_and_norms_at_zero():
    J = minirad.jacobian
    np.testing.assert_array_equal(J(lambda x: np.prod(x), np.array([0.0, 2.0, 3.0])),
                                  [[6.0, 0.0, 0.0]])          # the others' product: 2 * 3
    np.testing.assert_array_equal(J(lambda x: np.prod(x), np.array([0.0, 0.0, 3.0])),
                                  [[0.0, 0.0, 0.0]])          # two zeros: every weight 0
    x = np.array([[0.0, 2.0], [3.0, 0.0], [1.5, 2.0]])
    close(J(lambda x: np.cumprod(x, axis=0).sum(), x),
          central_jacobian(lambda x: np.cumprod(x, axis=0).sum(), [x]), 1e-10)
    # at the kinks the subgradient 0, as abs at 0 (the Kinks of minirad.tracing.ops)
    np.testing.assert_array_equal(J(lambda x: np.linalg.norm(x), np.zeros(3)), [[0, 0, 0]])
    np.testing.assert_array_equal(J(lambda x: np.std(x), np.full(3, 2.0)), [[0, 0, 0]])
    np.testing.assert_array_equal(J(lambda a, b: np.hypot(a, b), np.zeros(2), np.zeros(2)),
                                  np.zeros((2, 4)))


def test_contractions_take_numbers_as_operands():
    """y_i = x v_i + x^2: dy_i/dx = v_i + 2x, dy_i/dv_j = x if i = j (by hand), whether
    x is a traced number or an array of shape ()."""
    def f(x, v):
        return np.einsum(",i->i", x, v) + np.einsum(",->", x, x)
    for x in (3.0, np.array(3.0)):
        np.testing.assert_array_equal(minirad.jacobian(f, x, np.array([1.0, 2.0])),
                                      [[7.0, 3.0, 0.0], [8.0, 0.0, 3.0]])


def test_a_singular_determinant_has_its_adjugate_for_a_gradient():
    A = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 2.5]])   # rank 2
    # det is a polynomial: central differences are exact up to rounding
    close(minirad.jacobian(lambda A: np.linalg.det(A), A),
          central_jacobian(lambda A: np.linalg.det(A), [A]), 1e-9)


def test_cholesky_reads_only_the_triangle_numpy_reads():
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    for upper in (False, True):
        def f(A, upper=upper):
            return np.linalg.cholesky(A, upper=upper) * np.arange(1.0, 10.0).reshape(3, 3)
        J = minirad.jacobian(f, A)
        close(J, central_jacobian(f, [A]), 1e-8)
        unread = np.triu_indices(3, 1) if not upper else np.tril_indices(3, -1)
        ignored = np.ravel_multi_index(unread, (3, 3))
        np.testing.assert_array_equal(J[:, ignored], 0.0)   # numpy never looks there


def test_what_the_rules_keep_is_counted_by_hand():
    """retained_memory() of the arrays the rules' edges keep: an array the backward pass could
    rebuild from a kept (or input) value costs nothing, else its own bytes."""
    a, b = np.arange(12.0).reshape(3, 4), np.full((3, 4), 2.0)   # no ties for the max
    # the contraction's edges keep the other operand: inputs, which the caller keeps
    assert minirad.retained_memory(trace(lambda a, b: np.vdot(a, b), a, b)).total == 0
    # the max's mask (12 bits) is rebuilt from x * 2 (96 B) if that is kept; it is not,
    # so the 1.5 B mask is what is kept (the constant factor 2 keeps nothing)
    assert minirad.retained_memory(trace(lambda x: np.max(x * 2.0, axis=0), a)).total == 1.5
    # the cofactors of det(A) are rebuilt from A, an input: nothing; the weights of the
    # variance of A * A (96 B) are rebuilt from it: A * A's diagonal keeps A (an input)
    assert minirad.retained_memory(trace(lambda A: np.linalg.det(A), np.eye(3) * 2.0)).total == 0
    assert minirad.retained_memory(trace(lambda x: np.var(x * x), a)).total == 96


# ------------------------------------------------------------------ refusals
@pytest.mark.parametrize("program, error, message", [
    (lambda x: np.sum(x, out=np.zeros(())), TypeError, r"np.sum with out=: not supported"),
    (lambda x: np.max(x, initial=0.0), TypeError, r"np.max with initial="),
    (lambda x: np.var(x, ddof=4), ValueError, r"ddof=4 must lie in \[0, 4\)"),
    (lambda x: np.linalg.norm(x.reshape(2, 2), "nuc"), TypeError, "singular values"),
    (lambda x: np.pad(x, 1, mode="mean"), TypeError, "modes constant, edge"),
    (lambda x: np.einsum("ij->", x), ValueError, "do not fit an operand of 1 axes"),
    (lambda x: np.einsum("i,i->ii", x, x), ValueError, "appeared more than once"),
    (lambda x: np.einsum("i,i->k", x, x), ValueError, "output letter 'k' .* is no operand's"),
    (lambda x: np.take(x, [4]), ValueError, r"np.take: an index lies outside .* \(-4 to 3\)"),
    (lambda x: np.take(x, [1.5]), TypeError, "np.take: indices must be integers"),
    (lambda x: np.sort(x, axis=1), ValueError, r"np.sort: axis 1 is out of range"),
    (lambda x: np.max(x[:0]), ValueError, "max of an empty selection"),
    (lambda x: np.tensordot(x, x, axes=3), ValueError, r"axes=3 must lie in 0..1"),
    (lambda x: np.tile(x, (10 ** 6, 10 ** 6)), ValueError, "would have 4e\\+12 entries"),
    (lambda x: np.repeat(x, 10 ** 12), ValueError, "entries"),
    (lambda x: np.linalg.inv(np.ones((4, 4)) * x), ValueError, "inv of this matrix is "
                                                                "undefined"),
    (lambda x: np.linalg.slogdet(np.outer(x, x)), ValueError, "singular, so log|det| is -inf"),
    (lambda x: np.linalg.cholesky(-np.diag(x)), ValueError, "not positive definite"),
    (lambda x: np.linalg.pinv(x.reshape(2, 2)), TypeError, r"register\(np.linalg.pinv, rule"),
    (lambda x: np.ldexp(x, 2), TypeError, "has no derivative: .* integer exponent"),
    (lambda x: np.add.reduce(x), TypeError, "add.reduce .* use np.sum"),
    (lambda x: np.sin(x, where=x > 0), TypeError, "sin with where=: not supported"),
    (lambda x: x.cumsum(axis=3), ValueError, "axis 3 is out of range"),
])
def test_what_has_no_rule_or_no_derivative_is_refused_by_name(program, error, message):
    with pytest.raises(error, match=message):
        trace(program, np.array([1.0, 2.0, 3.0, 4.0]))


def test_every_numpy_ufunc_has_a_rule_or_says_why_not():
    for name in sorted(n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)):
        ufunc = getattr(np, name)
        entry = UFUNCS.get(ufunc.__name__)
        low, high = DOMAINS.get(entry.name if entry else "", (0.5, 2.0))
        x = np.linspace(low, high, 5)[1:4]   # inside the domain
        if ufunc.__name__ in NOT_DIFFERENTIABLE:
            with pytest.raises(TypeError, match=f"{ufunc.__name__} has no derivative"):
                trace(lambda v, u=ufunc: u(*[v] * u.nin), x)
            continue
        assert ufunc.__name__ in {*UFUNCS, *IDENTITIES, *COMPARISONS, "matmul", "square",
                                  "modf", "divmod", "vecdot", "matvec", "vecmat"}, name
        def f(v, u=ufunc):
            M = v.reshape(3, 1) * v   # a matrix for the products of matrices and vectors
            u(*{"matmul": (M, v), "matvec": (M, v), "vecmat": (v, M)}.get(
                u.__name__, (v,) * u.nin))
            return v * 1.0            # comparisons give plain booleans: return v too
        trace(f, x)


# ------------------------------------------------------------ ndarray methods
METHODS = {
    "max": lambda x: x.max(axis=0), "min": lambda x: x.min(), "prod": lambda x: x.prod(1),
    "var": lambda x: x.var(ddof=1), "std": lambda x: x.std(axis=0),
    "clip": lambda x: x.clip(min=-0.2), "dot": lambda x: x.dot(x.T), "ravel": lambda x: x.ravel(),
    "flatten": lambda x: x.flatten(), "astype": lambda x: x.astype(np.float64),
    "copy": lambda x: x.copy(), "cumsum": lambda x: x.cumsum(axis=0),
    "cumprod": lambda x: x.cumprod(), "trace": lambda x: x.trace(),
    "diagonal": lambda x: x.diagonal(1), "repeat": lambda x: x.repeat(2, axis=1),
    "take": lambda x: x.take([0, 4]), "round": lambda x: x.round() + x, "mT": lambda x: x.mT,
    "conj": lambda x: x.conj(), "sum": lambda x: x.sum(axis=1, keepdims=True),
}


@pytest.mark.parametrize("name", METHODS)
def test_ndarray_methods_are_the_numpy_functions(name):
    x = np.array([[0.3, -0.7, 1.1], [1.4, 0.2, -0.45]])   # no entry where round jumps
    weights = np.sin(np.arange(np.size(METHODS[name](x))) + 1.0).reshape(
        np.shape(METHODS[name](x)))

    def f(x):
        return (METHODS[name](x) * weights).sum()

    close(minirad.jacobian(trace(f, x)), central_jacobian(f, [x]), 1e-8)


# ------------------------------------------------------------------ user rules
def _sinc_slope(x, y):
    safe = np.where(x == 0, 1.0, x)
    return np.where(x == 0, 0.0, (np.cos(np.pi * x) - y) / safe)


@pytest.fixture
def sinc_rule():
    """np.sinc given a rule for the test's length, then as it was (no rule)."""
    rules_given = []

    def give(rule):
        rules_given.append(rules.register(np.sinc, rule))
    yield give
    rules.register(np.sinc, rules_given[0] if rules_given else None)


def test_a_user_rule_as_an_entry_is_checked_against_central_differences(sinc_rule):
    x = np.array([0.0, 0.3, -1.2, 2.5])
    with pytest.raises(TypeError, match=r"numpy.sinc has no rule .*register\(np.sinc, rule"):
        trace(lambda x: np.sinc(x), x)
    sinc_rule(Op("sinc", "sinc({0})", np.sinc, (_sinc_slope,), keeps=("x y",)))

    def f(x):
        return (np.sinc(x) * np.arange(1.0, 5.0)).sum()

    g = trace(f, x)
    assert g.ops[1] == "sinc({0})" and g.labels[0].kind == "diagonal"
    close(minirad.jacobian(g), central_jacobian(f, [x]), 1e-8)


def test_a_user_rule_as_a_function_records_its_own_vertex(sinc_rule):
    from minirad.graph.operators import Diagonal
    from minirad.tracing.tracer import record

    # a Rule: the value on plain arrays, the Jacobian block built when it is read
    sinc = rules.Rule("sinc", "sinc({0})", lambda x: np.sinc(x),
                      lambda i, values, y, edge: Diagonal(_sinc_slope(values[0], y)))

    def rule(x):
        return record(sinc, x)
    sinc_rule(rule)
    x = np.array([[0.1, -0.4], [0.0, 1.7]])

    def f(x):
        return (np.sinc(x * 2.0) ** 2).sum()

    close(minirad.jacobian(f, x), central_jacobian(f, [x]), 1e-8)
    # a rule written with supported operations needs no derivative of its own
    sinc_rule(lambda x: np.sin(np.pi * x) / (np.pi * x))
    close(minirad.jacobian(f, x[:, :1] + 0.5), central_jacobian(f, [x[:, :1] + 0.5]), 1e-8)


def test_register_refuses_what_is_not_a_rule():
    with pytest.raises(TypeError, match="a rule is an Op .* or a function, not int"):
        rules.register(np.sinc, 3)
    with pytest.raises(TypeError, match="register takes a numpy function or ufunc"):
        rules.register(3, lambda x: x)


# ---------------------------------------------------------------- the page
@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.2.0",
                    reason="the page is written with every rule, np.matvec's included")
def test_the_committed_page_is_the_one_the_catalog_writes():
    page = (ROOT / "docs" / "numpy_support.md").read_text(encoding="utf-8")
    assert page == supported_table(), ("docs/numpy_support.md is stale: run python -m "
                                       "minirad.tracing.catalog docs/numpy_support.md")


def test_the_page_lists_every_entry_and_what_its_rules_keep():
    page = supported_table()
    for name in UFUNCS:
        assert f"np.{name}" in page, name
    row = next(line for line in page.splitlines() if line.startswith("| `np.linalg.inv(A)`"))
    # Y = inv(A) of a 3 x 3 float64 matrix: the output, 9 floats, kept once by both products
    assert row.endswith("| y 72 B |") and math.prod((3, 3)) * 8 == 72
