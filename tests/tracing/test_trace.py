"""Tracing Python functions into LCGs."""

import math

import numpy as np
import pytest

from minirad import examples, load_graph, ops, replay, save_graph, trace


def test_lecture_example_matches_the_lecture_trace_line_by_line():
    g = examples.lecture()
    assert round(g.value("y"), 3) == 11.652
    lines = g.wengert().splitlines()
    assert len(lines) == 7
    # the lecture's primal trace: v0 = x1, v1 = x2, v2 = ln v0, v3 = v0 * v1,
    # v4 = sin v1, v5 = v2 + v3, v6 = v5 - v4, and y = v6
    expected = [("v0 = x1", 2.0), ("v1 = x2", 5.0), ("v2 = log(v0)", math.log(2.0)),
                ("v3 = v0 * v1", 10.0), ("v4 = sin(v1)", math.sin(5.0)),
                ("v5 = v2 + v3", math.log(2.0) + 10.0),
                ("v6 = v5 - v4", math.log(2.0) + 10.0 - math.sin(5.0))]
    for line, (assignment, value) in zip(lines, expected):
        assert line.startswith(assignment + " ")
        assert f"= {value!r}" in line
    assert lines[6].endswith("(output y)")
    assert "dv3/dv0 = 5.0, dv3/dv1 = 2.0" in lines[3]
    assert "dv6/dv5 = 1.0, dv6/dv4 = -1.0" in lines[6]


def test_figure1_has_the_papers_shape_and_hand_derived_partials():
    x1, x2 = 0.7, 1.3
    g = examples.figure1(x1, x2)
    assert (len(g.inputs), len(g.intermediates), len(g.outputs), g.n_edges) == (2, 4, 1, 8)
    a, b = math.exp(x1), math.sin(x2)
    c = b * x2
    d = a * c
    # vertices in trace order: x1, x2, a, b, c, d, y
    hand = {("x1", "v2"): a,            # da/dx1 = exp(x1)
            ("x2", "v3"): math.cos(x2),  # db/dx2 = cos(x2)
            ("v3", "v4"): x2,            # dc/db = x2
            ("x2", "v4"): b,             # dc/dx2 = b
            ("v2", "v5"): c,             # dd/da = c
            ("v4", "v5"): a,             # dd/dc = a
            ("v2", "y"): d,              # dy/da = d
            ("v5", "y"): a}              # dy/dd = a
    assert {(g.name(u), g.name(v)): p for u, v, p in g.edges()} == pytest.approx(hand, rel=1e-15)
    assert g.value("y") == pytest.approx(a * d)


def test_constants_are_folded_into_partials():
    g = trace(lambda x: 3.0 * x + 1, 2.0)
    assert g.n_vertices == 3 and g.n_edges == 2
    assert g.partial("x", "v1") == 3.0
    assert g.op("v1") == "3.0 * {0}" and g.op("y") == "{0} + 1.0"


@pytest.mark.parametrize("f, df", [
    (lambda x: x + 2, lambda x: 1.0), (lambda x: 2 + x, lambda x: 1.0),
    (lambda x: x - 2, lambda x: 1.0), (lambda x: 2 - x, lambda x: -1.0),
    (lambda x: x * 2, lambda x: 2.0), (lambda x: 2 * x, lambda x: 2.0),
    (lambda x: x / 2, lambda x: 0.5), (lambda x: 2 / x, lambda x: -2 / x**2),
    (lambda x: x ** 3, lambda x: 3 * x**2), (lambda x: 2 ** x, lambda x: 2**x * math.log(2)),
    (lambda x: x ** x, lambda x: x**x * (math.log(x) + 1)),
    (lambda x: -x, lambda x: -1.0), (lambda x: abs(x), lambda x: 1.0),
    (lambda x: x * x, lambda x: 2 * x), (lambda x: x - x, lambda x: 0.0),
    (lambda x: x / x, lambda x: 0.0),
    (lambda x: np.float64(2.0) * x, lambda x: 2.0),
])
def test_operators_in_both_orders(f, df):
    x = 1.7
    g = trace(f, x)
    assert g.value("y") == pytest.approx(f(x))
    assert g.n_edges == 1  # one vertex, one edge: constants never become vertices
    assert g.partials[0] == pytest.approx(df(x), rel=1e-12)


def test_unsupported_operand_raises_type_error():
    with pytest.raises(TypeError, match="unsupported operand type for mul: str"):
        trace(lambda x: x * "a", 1.0)
    with pytest.raises(TypeError, match="sin does not support"):
        ops.sin("a")


@pytest.mark.parametrize("f, op", [
    (lambda x: ops.log(x - 1.0), "log"),
    (lambda x: ops.sqrt(x - 1.0), "sqrt"),     # value 0 but infinite partial
    (lambda x: 1.0 / (x - 1.0), "div"),
    (lambda x: x / (x - 1.0), "div"),
    (lambda x: ops.exp(1000.0 * x), "exp"),
    (lambda x: (-x) ** 0.5, "pow"),
])
def test_non_finite_values_name_the_operation_and_vertex(f, op):
    with pytest.raises(ValueError, match=rf"{op}\(.*\) at vertex v\d+ is not finite"):
        trace(f, 1.0)


def test_outputs_get_their_own_vertex_when_needed():
    def f(x, y):
        a = x * y
        b = ops.sin(a)
        return a, b, b, x      # a is used later, b returned twice, x is an input

    g = trace(f, 1.0, 2.0)
    outs = [g.name(v) for v in g.outputs]
    assert outs == ["f[0]", "f[1]", "f[2]", "f[3]"]  # a parameter is called y
    for v in g.outputs:
        assert g.successors(v) == ()
    # every one of them is a unit copy of the value it returns
    for name in outs:
        (p,) = g.predecessors(name)
        assert g.partial(p, name) == 1.0 and g.op(name) == "{0}"
    assert g.predecessors("f[1]") == g.predecessors("f[2]")
    assert g.n_vertices == 4 + 4


def test_a_value_returned_once_is_the_output_itself():
    g = trace(lambda x: (x * 2.0, ops.sin(x)), 1.0)
    assert g.n_vertices == 3 and g.op("y[1]") == "sin({0})"


def test_control_flow_follows_the_values():
    def f(x):
        return x * x if x > 0 else -x

    assert trace(f, 2.0).op("y") == "{0} * {0}"
    assert trace(f, -2.0).op("y") == "-{0}"


def test_dead_values_stay_in_the_trace():
    def f(x):
        ops.exp(x)  # computed, never used
        return 2.0 * x

    g = trace(f, 1.0)
    assert g.n_vertices == 3
    dead = g.index("v1")
    assert g.kind(dead) == "intermediate" and g.successors(dead) == ()


def test_vector_arguments_and_results():
    def f(x, w):
        return np.array([x[0] * w, ops.tanh(x[1]) + x[2]])

    g = trace(f, [1.0, 2.0, 3.0], 0.5)
    assert [g.name(v) for v in g.inputs] == ["x[0]", "x[1]", "x[2]", "w"]
    assert [g.name(v) for v in g.outputs] == ["y[0]", "y[1]"]
    assert g.value("y[1]") == pytest.approx(math.tanh(2.0) + 3.0)
    g = trace(lambda x: sum(x), [1.0, 2.0])
    assert g.value("y") == 3.0


def test_numpy_reductions_work_on_traced_arrays():
    w = np.array([0.5, -1.0, 2.0])
    g = trace(lambda x: np.dot(w, x), np.ones(3))
    assert g.value("y") == pytest.approx(1.5)


def test_ops_work_elementwise_on_vectors_of_traced_numbers_and_on_traced_arrays():
    g = trace(lambda x: ops.sin(np.array(x, dtype=object)), [0.0, 1.0])
    assert [g.value(v) for v in g.outputs] == pytest.approx([0.0, math.sin(1.0)])
    g = trace(lambda x: ops.sin(x), np.array([0.0, 1.0]))   # an array: one vertex
    assert g.n_vertices == 2 and g.value("y") == pytest.approx([0.0, math.sin(1.0)])


def test_constant_output():
    g = trace(lambda x: (x * 2.0, 3.0), 1.0)
    assert g.value("y[1]") == 3.0 and g.predecessors("y[1]") == ()


def test_bad_arguments():
    with pytest.raises(TypeError, match="must be a number or a list of numbers"):
        trace(lambda x: x, [1j, 2.0])
    with pytest.raises(TypeError, match="trace takes numbers, lists of numbers and numpy"):
        trace(lambda x: x, "abc")
    with pytest.raises(TypeError, match="returned a dict"):
        trace(lambda x: {"y": x}, 1.0)


def test_parameter_named_like_an_output_keeps_its_name():
    g = trace(lambda y: y * 2.0, 1.0)
    assert len(set(g.names)) == g.n_vertices
    assert g.name(g.inputs[0]) == "y" and g.name(g.outputs[0]) == "f"
    g = trace(lambda v1, y, f: v1 * y * f, 1.0, 2.0, 3.0)
    assert [g.name(v) for v in g.inputs] == ["v1", "y", "f"]
    assert g.name(g.outputs[0]) == "out" and len(set(g.names)) == g.n_vertices
    g = trace(lambda y, f, out: (y * f, f * out), 1.0, 2.0, 3.0)  # every usual name is taken
    assert [g.name(v) for v in g.outputs] == ["y[0]", "y[1]"] and len(set(g.names)) == 5


@pytest.mark.slow
def test_trace_of_a_million_operations_has_no_recursion(tmp_path):
    def long_program(x):
        s = x
        for _ in range(500_000):
            s = s * 0.999999 + x
        return s

    g = trace(long_program, 1.0)
    assert g.n_vertices == 1_000_001
    assert load_graph(save_graph(g, tmp_path / "long.json")).n_edges == g.n_edges


# --------------------------------------------- mistakes that must not pass silently
def test_math_functions_on_traced_values_are_refused():
    import math as m

    with pytest.raises(TypeError, match="would drop its derivative; use minirad.ops"):
        trace(lambda x: m.sin(x) + x, 1.0)
    with pytest.raises(TypeError, match="float\\(\\) of a traced value"):
        trace(lambda x: float(x), 1.0)


def test_detach_makes_a_constant_on_purpose():
    from minirad import detach, jacobian

    assert jacobian(lambda x: x * detach(x), 3.0).tolist() == [[3.0]]
    assert detach(2.5) == 2.5


def test_equality_compares_values_so_branches_follow_the_trace():
    from minirad import jacobian

    def f(x):
        if x == 1.0:
            return 3.0 * x
        return x * x

    assert jacobian(f, 1.0).tolist() == [[3.0]]
    assert jacobian(f, 2.0).tolist() == [[4.0]]
    g = trace(lambda x: (x != 1.0) * 1.0 + x, 1.0)
    assert g.op("y") == "0.0 + {0}"


def test_numpy_ufuncs_map_onto_the_operation_table():
    from minirad import gradcheck, jacobian

    W = np.array([[1.0, 2.0], [0.5, -1.0]])

    def mlp(x):
        h = np.tanh(W @ x) * np.float64(2.0)
        return h + np.sin(x[0]) - np.exp(x) / np.float64(3.0) + np.maximum(x, 0.1)

    x = [0.3, -0.2]  # a vector of traced numbers; np.array(x) below: a traced array
    J = jacobian(mlp, x)
    assert gradcheck(mlp, x).passed
    np.testing.assert_allclose(jacobian(trace(mlp, np.array(x))), J, rtol=1e-13)
    sech2 = 1.0 / np.cosh(W @ x) ** 2
    expected = 2.0 * sech2[:, None] * W + np.array([[np.cos(0.3), 0.0]] * 2)
    expected -= np.diag(np.exp(x)) / 3.0
    expected += np.diag([1.0, 0.0])  # maximum(x, 0.1): x[0] = 0.3 passes, x[1] = -0.2 does not
    assert np.allclose(J, expected, rtol=1e-13)
    # every ufunc of the table works on a traced number too (d cosh = sinh) ...
    assert jacobian(lambda x: np.cosh(x), 1.0)[0, 0] == pytest.approx(np.sinh(1.0), rel=1e-15)
    # ... and one without a derivative says why
    with pytest.raises(TypeError, match="numpy's spacing has no derivative: it measures"):
        trace(lambda x: np.spacing(x), 1.0)
    with pytest.raises(TypeError, match="numpy's add.reduce .* no entry in minirad's operation"):
        trace(lambda x: np.add.reduce(x), 1.0)


def test_non_finite_inputs_and_errors_inside_numpy_are_reported_plainly():
    with pytest.raises(ValueError, match=r"argument 0 \(x\) element 1 is nan"):
        trace(lambda x: np.dot(np.ones((2, 2)), x), [1.0, np.nan])
    with pytest.raises(ValueError, match=r"argument 0 \(x\) is inf"):
        trace(lambda x: x, float("inf"))
    # an overflow inside numpy's object loop arrives as our ValueError, not a SystemError
    with pytest.raises(ValueError, match=r"add\(1e\+308, 1e\+308\) = inf"):
        trace(lambda x: np.dot(np.ones((2, 2)), x), [1e308, 1e308])


def test_error_says_whether_the_value_or_the_derivative_is_at_fault():
    with pytest.raises(ValueError, match=r"sqrt\(0.0\) = 0.0, but its derivative there is not"):
        trace(lambda x: ops.sqrt(x), 0.0)
    with pytest.raises(ValueError, match=r"log\(-1.0\) is undefined"):
        trace(lambda x: ops.log(x), -1.0)
    with pytest.raises(ValueError, match=r"pow\(0.0, 0.5\) = 0.0, but its derivative in "
                                         r"argument 0"):
        trace(lambda x: x ** 0.5, 0.0)


def test_powers_and_mixed_traces_on_every_spelling():
    g = trace(lambda x, y: x ** 2 + x ** y + x ** np.float64(2.0), 1.5, 2.0)
    assert g.value(g.outputs[0]) == pytest.approx(3 * 1.5 ** 2)
    assert reverse_gradient(g) == pytest.approx([2 * 1.5 * 3, 1.5 ** 2 * math.log(1.5)])
    with pytest.raises(ValueError, match=r"pow\(v0, 2.0\) at vertex v1 is not finite"):
        trace(lambda x: x ** 2, 1e200)
    other = {}
    trace(lambda x: other.setdefault("x", x), 1.0)
    for combine in (lambda a, b: a + b, lambda a, b: b * a, lambda a, b: a ** b,
                    lambda a, b: b - a):
        with pytest.raises(ValueError, match="mixes values of two different traces"):
            trace(lambda x, combine=combine: combine(x, other["x"]), 2.0)


def reverse_gradient(g):
    from minirad.exact.sweeps import reverse_sweep

    return reverse_sweep(g).jacobian[0].tolist()


def test_a_finished_trace_keeps_its_tape_for_replay_and_a_failed_one_nothing():
    # the graph keeps the program's record (minirad.replay reruns it); a value the
    # program kept after the trace still reads its number and records nothing new
    kept = []
    g = trace(lambda x: kept.append(x) or x * 2.0 + 1.0, 3.0)
    assert g.n_vertices == 3 and g.value("y") == 7.0
    tape = kept[0].tape
    assert tape.values == [3.0, 6.0, 7.0] and g.memos["tracing.recording"].tape is tape
    assert replay(g, 4.0).value("y") == 9.0
    with pytest.raises(ValueError, match="leaves here"):
        trace(lambda x: kept.append(x) or _raise(ValueError("leaves here")), 1.0)


def _raise(error):
    raise error

