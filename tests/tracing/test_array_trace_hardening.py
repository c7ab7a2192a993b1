"""The array tracer never answers wrongly (issue 26) and reads the one operation table
(issue 25): every rule against central differences or a hand derivation, comparisons
that read values, graphs that do not change after they are built, and clear refusals."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from oracles import central_differences

import minirad
from minirad import ops, trace
from minirad.graph.files import load_graph, save_graph
from minirad.tracing import rules
from minirad.tracing.catalog import DOMAINS
from minirad.tracing.ops import OPS, UFUNCS, evaluate, evaluate_array
from minirad.tracing.rules import avg_pool2d, conv2d
from minirad.tracing.tracer import MAX_AXES

RNG = np.random.default_rng(26)


def gradient(g):
    """The gradient of a graph with one output, one array per input, by a reverse sweep."""
    row = minirad.jacobian(g)[0]
    sizes = [math.prod(g.shape(v)) for v in g.inputs]
    return [part.reshape(g.shape(v)) for part, v in
            zip(np.split(row, np.cumsum(sizes)[:-1]), g.inputs)]


# ----------------------------------------------------------- one operation table
# points inside every operation's domain, away from its kinks
DOMAIN = DOMAINS


@pytest.mark.parametrize("name", [n for n in OPS if n != "copy"])
def test_each_array_rule_is_the_number_rule_entry_by_entry(name):
    op = OPS[name]
    low, high = DOMAIN.get(name, (-2.0, 2.0))
    args = tuple(RNG.uniform(low, high, 7) for _ in range(op.arity))
    out, partials = evaluate_array(op, args)
    for j in range(7):
        value, expected = evaluate(op, tuple(float(a[j]) for a in args))
        assert out[j] == pytest.approx(value, rel=1e-14, abs=1e-15)
        for d, e in zip(partials, expected):
            entry = np.broadcast_to(np.asarray(d, dtype=float), out.shape)[j]
            assert entry == pytest.approx(e, rel=1e-13, abs=1e-15), (name, j)


@pytest.mark.parametrize("ufunc", sorted(UFUNCS))
def test_every_numpy_ufunc_of_the_table_traces_numbers_and_arrays(ufunc):
    op = UFUNCS[ufunc]
    low, high = DOMAIN.get(op.name, (-2.0, 2.0))
    shapes = [(2, 3), (3,)][:op.arity]
    args = [RNG.uniform(low, high, s) for s in shapes]
    weights = RNG.standard_normal((2, 3))

    def f(*xs):
        return (getattr(np, ufunc)(*xs) * weights).sum()

    g = trace(f, *args)
    assert g.n_vertices == op.arity + 3   # the inputs, the operation, * weights, sum
    np.testing.assert_allclose(minirad.jacobian(g), central_differences(f, args), rtol=1e-6,
                               atol=1e-8)
    # the same entry on traced numbers: the tape records its template
    numbers = [float(a.flat[0]) for a in args]
    h = trace(lambda *xs: getattr(np, ufunc)(*xs), *numbers)
    assert h.op(h.outputs[0]) == op.template.format(*(f"{{{i}}}" for i in range(op.arity)))


def test_minirad_ops_and_numpy_record_the_same_operation_on_arrays():
    x = RNG.uniform(0.5, 1.5, 4)
    for name in ("sin", "cos", "exp", "log", "tanh", "sqrt", "arctan", "log1p", "tan"):
        a = trace(lambda v, name=name: getattr(ops, name)(v), x)
        b = trace(lambda v, name=name: getattr(np, name)(v), x)
        assert a.ops == b.ops and np.array_equal(a.value("y"), b.value("y"))
    g = trace(lambda v: (ops.sigmoid(v) + ops.relu(v - 1.0)).sum(), x)
    expected = [s * (1 - s) + (xi > 1.0) for xi, s in zip(x, 1 / (1 + np.exp(-x)))]
    np.testing.assert_allclose(gradient(g)[0], expected, rtol=1e-13)


def test_powers_with_a_traced_exponent_and_both_operands_traced():
    a, b = np.array([1.5, 2.0, 0.7]), np.array([2.0, 0.5, -1.0])
    g = trace(lambda a, b: (a ** b + 2.0 ** a + np.maximum(a, b)).sum(), a, b)
    da, db = gradient(g)
    np.testing.assert_allclose(da, b * a ** (b - 1) + np.log(2) * 2.0 ** a + (a > b), rtol=1e-13)
    np.testing.assert_allclose(db, a ** b * np.log(a) + (b > a), rtol=1e-13)
    g = trace(lambda a, b: (a ** b).sum(), np.array([-1.0]), np.array([2.0]))
    with pytest.raises(ValueError, match="differentiable in b only for a > 0"):  # when asked
        gradient(g)


# ------------------------------------------------------- comparisons read values
def test_a_branch_on_equality_follows_the_value():
    # issue 26: x[0] == 0.5 compared identity, so the program took the wrong branch
    def f(x):
        if x[0] == 0.5:
            return x[0] + (x[1:] ** 2).sum()
        return x.sum()

    g = trace(f, np.array([0.5, 1.0, 1.0]))
    np.testing.assert_array_equal(gradient(g)[0], [1.0, 2.0, 2.0])   # by hand: 1, 2x, 2x


def test_comparisons_give_plain_booleans_and_where_works():
    x = np.array([-1.5, 0.3, 2.0, -0.2])
    seen = {}

    def f(v):
        for name, compare in (("<", v < 0.3), ("<=", v <= 0.3), (">", v > 0.3),
                              (">=", v >= 0.3), ("==", v == 0.3), ("!=", v != 0.3),
                              ("isfinite", np.isfinite(v)), ("greater", np.greater(v, v))):
            seen[name] = compare
        return np.where(v > 0, v, 0.1 * v).sum()

    g = trace(f, x)
    expected = {"<": x < 0.3, "<=": x <= 0.3, ">": x > 0.3, ">=": x >= 0.3, "==": x == 0.3,
                "!=": x != 0.3, "isfinite": np.ones(4, bool), "greater": np.zeros(4, bool)}
    for name, value in seen.items():
        assert type(value) is np.ndarray and value.dtype == bool
        np.testing.assert_array_equal(value, expected[name], err_msg=name)
    np.testing.assert_allclose(gradient(g)[0], np.where(x > 0, 1.0, 0.1), rtol=1e-15)
    np.testing.assert_allclose(minirad.jacobian(g), central_differences(f, [x]), rtol=1e-7)
    # the condition alone gives the indices, of the values
    np.testing.assert_array_equal(trace(lambda v: v[np.where(v > 0)].sum(), x).value("y"), 2.3)


# ------------------------------------------------------ graphs do not change
def test_refilling_the_batch_buffer_after_tracing_changes_nothing():
    # issue 26: relu(X @ W).sum() had gradient 4 (ones), 28 after X[:] = 7
    X, W = np.ones((4, 3)), np.ones((3, 2))
    g = trace(lambda W: ops.relu(X @ W).sum(), W)
    X[:] = 7
    np.testing.assert_array_equal(gradient(g)[0], np.full((3, 2), 4.0))   # X^T @ ones: 4
    c, A = np.array([1.0, 2.0, 3.0]), np.eye(3)
    S = sp.csr_array(np.diag([1.0, 2.0, 3.0]))
    h = trace(lambda x: (x * c).sum() + (A @ x).sum() + rules.matmul(S, x).sum(), np.ones(3))
    c[:], A[:], S.data[:] = 9.0, 5.0, 0.0
    np.testing.assert_array_equal(gradient(h)[0], [1 + 1 + 1, 2 + 1 + 2, 3 + 1 + 3])


def test_a_constant_changed_between_two_uses_is_copied_again():
    c = np.array([1.0, 2.0])

    def f(x):
        first = x * c
        c[:] = 10.0           # the program itself changes its constant
        return (first + x * c).sum()

    np.testing.assert_array_equal(gradient(trace(f, np.ones(2)))[0], [11.0, 12.0])


def test_values_are_read_only_everywhere():
    def f(x):
        h = x * 2.0
        with pytest.raises(ValueError, match="read-only"):
            h.value[0] = 100.0
        return (h * h).sum()

    g = trace(f, np.ones(2))
    np.testing.assert_array_equal(gradient(g)[0], [8.0, 8.0])   # d (2x)^2 / dx = 8x
    assert not any(v.flags.writeable for v in g.values)


# --------------------------------------------------------------- ndarray methods
METHODS = {
    "ravel": lambda x: x.ravel(), "flatten": lambda x: x.flatten(), "copy": lambda x: x.copy(),
    "astype": lambda x: x.astype(np.float64), "dot": lambda x: x.dot(x.T),
    "clip": lambda x: x.clip(-0.5, 0.5), "squeeze": lambda x: x[None].squeeze(0),
    "swapaxes": lambda x: x.swapaxes(0, 1), "sum": lambda x: x.sum(axis=1),
    "mean": lambda x: x.mean(axis=0), "T": lambda x: x.T, "reshape": lambda x: x.reshape(3, 2),
    "np.dot": lambda x: np.dot(x, np.ones(3)), "np.clip": lambda x: np.clip(x, -1.0, 0.2),
    "np.ravel": lambda x: np.ravel(x), "np.squeeze": lambda x: np.squeeze(x[:, :1]),
}


@pytest.mark.parametrize("name", METHODS)
def test_supported_methods_match_central_differences(name):
    x = np.array([[0.1, -0.7, 0.3], [1.2, -0.1, 0.6]])
    weights = RNG.standard_normal(np.shape(METHODS[name](x)))

    def f(x):
        return (METHODS[name](x) * weights).sum()

    np.testing.assert_allclose(minirad.jacobian(trace(f, x)), central_differences(f, [x]),
                               rtol=1e-6, atol=1e-9)


def test_astype_keeps_floats_and_refuses_the_rest():
    g = trace(lambda x: x.astype(np.float32) * 2.0, np.ones(2))
    assert g.value("y").dtype == np.float32
    with pytest.raises(TypeError, match=r"astype\(int64\) .* would drop its derivative"):
        trace(lambda x: x.astype(np.int64), np.ones(2))


def test_every_ndarray_attribute_works_or_says_what_to_use():
    names = [n for n in dir(np.ndarray) if not n.startswith("_")]
    seen = {}

    def f(x):
        for n in names:
            try:
                getattr(x, n)
                seen[n] = "ok"
            except TypeError as error:
                seen[n] = str(error)
        return x

    trace(f, np.ones(3))
    refused = {n: message for n, message in seen.items() if message != "ok"}
    for n, message in refused.items():   # the documented TypeError names the method
        assert message.startswith(f"x.{n} is not supported on traced arrays; "), n
    assert {"item", "tolist", "fill", "sort"} <= set(refused)
    assert not {"max", "min", "prod", "var", "std", "cumsum", "cumprod", "trace", "repeat",
                "take", "round", "diagonal", "conj", "real", "mT"} & set(refused)
    assert "detach" in refused["tolist"] and "never written into" in refused["fill"]
    assert "np.sort(x) returns the sorted copy" in refused["sort"]   # x.sort() sorts in place


def test_writing_into_or_out_of_a_traced_array_says_what_to_do():
    def into(x):
        x[0] = 1.0
        return x

    with pytest.raises(TypeError, match="cannot be written into .* np.where"):
        trace(into, np.ones(3))

    def out_of(x):
        plain = np.zeros((2, 3))
        plain[0] = x
        return x

    with pytest.raises(TypeError, match="writing it into a plain array: A.i. = x.* np.stack"):
        trace(out_of, np.ones(3))

    def entry_out_of(x):
        plain = np.zeros(3)
        plain[0] = x[0]   # numpy wraps our TypeError: the chain still says what to do
        return x

    with pytest.raises(ValueError) as caught:
        trace(entry_out_of, np.ones(3))
    assert "minirad.detach(x)" in str(caught.value.__cause__)


# ----------------------------------------------------- sizes, options, dtypes
def test_axes_beyond_the_limit_are_refused_where_they_appear():
    with pytest.raises(ValueError, match=f"at most {MAX_AXES} axes, not 33"):
        trace(lambda x: x.reshape((1,) * 33), np.ones(1))
    with pytest.raises(ValueError, match=f"at most {MAX_AXES} axes, not 64"):
        trace(lambda x: x.reshape((1,) * 64), np.ones(1))
    with pytest.raises(ValueError, match=r"argument 0 \(x\): .* not 40"):
        trace(lambda x: x, np.ones((1,) * 40))
    # at the limit the graph is differentiated (a stack of sweeps adds one axis)
    g = trace(lambda x: (np.sin(x.reshape((1,) * MAX_AXES)) * 2.0).sum(), np.array([0.5]))
    np.testing.assert_allclose(gradient(g)[0], [2 * math.cos(0.5)], rtol=1e-15)


def test_huge_shapes_are_refused_before_anything_is_allocated():
    huge = np.broadcast_to(1.0, (10**6, 10**6))   # a view: 8 bytes behind 10^12 entries
    with pytest.raises(ValueError, match="would have 1e\\+12 entries"):
        trace(lambda x: x * huge, np.ones(1))
    with pytest.raises(ValueError, match="padded images .* entries"):
        trace(lambda w: conv2d(np.ones((1, 1, 4, 4)), w, padding=10**6), np.ones((1, 1, 2, 2)))


@pytest.mark.parametrize("call, message", [
    (lambda w: conv2d(np.ones((1, 1, 4, 4)), w, stride=1.5), "stride must be an int >= 1, not 1.5"),
    (lambda w: conv2d(np.ones((1, 1, 4, 4)), w, padding=0.5), "padding must be an int >= 0"),
    (lambda w: conv2d(np.ones((1, 1, 4, 4)), w, stride=True), "stride must be an int"),
    (lambda w: avg_pool2d(w, size=2.7), "size must be an int >= 1, not 2.7"),
])
def test_window_options_are_whole_numbers_not_truncated(call, message):
    with pytest.raises(TypeError, match=message):
        trace(call, np.ones((1, 1, 2, 2)))


def test_masked_arrays_are_refused_rather_than_unmasked():
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    with pytest.raises(TypeError, match="masked array; its mask would be dropped"):
        trace(lambda x: x.sum(), masked)
    with pytest.raises(TypeError, match="masked arrays are not supported"):
        trace(lambda x: x * masked, np.ones(3))


def test_integer_and_boolean_constants_become_floats_that_save_and_load(tmp_path):
    ints, mask = np.array([1, 2, 3]), np.array([True, False, True])

    def f(x):
        return (x * ints).sum() + x @ mask + (np.eye(3, dtype=int) @ x).sum()

    for dtype in (np.float64, np.float32):
        g = trace(f, np.ones(3, dtype))
        assert all(np.dtype(d) == dtype for d in g.dtypes)      # float32 stays float32
        save_graph(g, tmp_path / "g.npz")
        (grad,) = gradient(load_graph(tmp_path / "g.npz"))
        np.testing.assert_array_equal(grad, [1 + 1 + 1, 2 + 0 + 1, 3 + 1 + 1])


# ------------------------------------------------------- numbers and arrays mixed
def test_a_number_beside_arrays_is_a_vertex_of_shape_nothing():
    x = np.array([0.3, -1.2, 0.8])

    def f(s, x, n):
        return (ops.tanh(s * x) * n).sum()

    g = trace(f, 0.5, x, 2.0, wrt=[0, 1])          # n is data
    assert [g.shape(v) for v in g.inputs] == [(), (3,)] and g.names[:2] == ("s", "x")
    numeric = central_differences(lambda s, x: f(s, x, 2.0), [np.array(0.5), x])
    for method in ("forward", "reverse"):
        np.testing.assert_allclose(minirad.jacobian(g, method=method), numeric, rtol=1e-7)
    # lists of numbers beside an array: one array vertex each
    h = trace(lambda a, b: (a * b).sum(), [1.0, 2.0], np.ones(2))
    assert [h.shape(v) for v in h.inputs] == [(2,), (2,)]


def test_data_arguments_of_a_program_of_numbers_are_constants():
    g = trace(lambda x, c: x * c + c, 2.0, 3.0, wrt=[0])
    assert g.n_vertices == 3 and g.names[0] == "x" and g.partial("x", "v1") == 3.0
    with pytest.raises(ValueError, match=r"wrt must list argument positions 0..1, not 2"):
        trace(lambda x, c: x, 2.0, 3.0, wrt=[2])


def test_a_new_entry_in_the_table_is_all_an_operation_needs(monkeypatch):
    # an operation is one entry: cosh again here (issue 33 added it), for numbers and arrays
    from minirad.tracing.ops import Op
    cosh = Op("cosh", "cosh({0})", math.cosh, (lambda x, y: math.sinh(x),),
              np.cosh, (lambda x, y: np.sinh(x),), keeps=("x",), ufunc="cosh")
    monkeypatch.setitem(OPS, "cosh", cosh)
    monkeypatch.setitem(UFUNCS, "cosh", cosh)
    x = np.array([0.3, -1.1])
    g = trace(lambda v: (np.cosh(v) * v).sum(), x)
    np.testing.assert_allclose(gradient(g)[0], np.sinh(x) * x + np.cosh(x), rtol=1e-14)
    h = trace(lambda t: np.cosh(t) * t, 0.3)
    assert h.op("v1") == "cosh({0})"
    np.testing.assert_allclose(minirad.jacobian(h), [[math.sinh(0.3) * 0.3 + math.cosh(0.3)]])
