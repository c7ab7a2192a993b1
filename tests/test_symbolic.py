"""Symbolic differentiation with SymPy: the formulas minirad programs compute, SymPy's
Jacobian against minirad's at random points, tree and CSE sizes against independent
counts and closed forms, and the swell against the LCG's edges."""

import sys

import numpy as np
import pytest

import minirad
from minirad import examples, ops, symbolic
from minirad.tracing.ops import OPS

sp = pytest.importorskip("sympy")


def relative_gap(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_the_lecture_program_is_the_lecture_formula():
    x1, x2 = sp.symbols("x1 x2", real=True)
    form = symbolic.formula(examples.lecture_program, 2.0, 5.0)
    assert form.inputs == (x1, x2)
    assert sp.simplify(form.outputs[0] - (sp.log(x1) + x1 * x2 - sp.sin(x2))) == 0
    # the lecture's numbers: dy/dx1 = 1/x1 + x2 = 5.5, dy/dx2 = x1 - cos(x2) = 1.716
    np.testing.assert_allclose(symbolic.jacobian(examples.lecture_program, 2.0, 5.0),
                               [[5.5, 2.0 - np.cos(5.0)]], rtol=1e-15)


def test_the_lab_gradient_is_the_lab_seeds_number():
    # the reverse-mode lab: f(x, y) = x*y + sin(x) has gradient (2.5838531634528574, 2.0)
    np.testing.assert_allclose(symbolic.jacobian(examples.lab_program, 2.0, 3.0),
                               [[2.5838531634528574, 2.0]], rtol=1e-15)


PROGRAMS = {
    "lecture": (examples.lecture_program, 2),
    "lab": (examples.lab_program, 2),
    "figure1": (examples.figure1_program, 2),
    "two outputs": (examples.two_outputs_program, 2),
    "product of 7": (examples.product_program, 7),
    "composition of 6": (examples.composition_program(6), 1),
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_sympy_and_minirad_agree_at_random_points(name):
    f, n = PROGRAMS[name]
    rng = np.random.default_rng(7)
    for _ in range(5):
        point = rng.uniform(0.2, 2.0, size=n)     # positive: the lecture takes log(x1)
        by_sympy = symbolic.jacobian(f, *point)
        by_minirad = minirad.jacobian(f, *point)
        assert by_sympy.shape == by_minirad.shape
        assert relative_gap(by_sympy, by_minirad) < 1e-12


UNARY = ["neg", "abs", "sin", "cos", "tan", "exp", "log", "log1p", "sqrt", "tanh", "sigmoid",
         "relu", "arctan"]


def test_every_operation_of_the_table_has_a_sympy_rule():
    assert set(symbolic.RULES) == set(OPS)


@pytest.mark.parametrize("name", UNARY)
def test_each_unary_rule_differentiates_as_the_table(name):
    op = OPS[name]

    def f(x):
        return ops.apply(op, x)

    for point in (0.3, 0.9, 1.7):      # away from kinks and poles
        np.testing.assert_allclose(symbolic.jacobian(f, point), minirad.jacobian(f, point),
                                   rtol=1e-13)


# the rest of the table, each at points inside its domain and away from its jumps
MORE_UNARY = {"arcsin": (0.3, -0.6), "arccos": (0.3, -0.6), "arctanh": (0.3, -0.6),
              "arccosh": (1.3, 2.7), "arcsinh": (0.3, -1.7), "sinh": (0.3, -1.7),
              "cosh": (0.3, -1.7), "exp2": (0.3, -1.7), "expm1": (0.3, -1.7),
              "log2": (0.3, 1.7), "log10": (0.3, 1.7), "cbrt": (0.3, -1.7),
              "reciprocal": (0.3, -1.7), "deg2rad": (0.3, -1.7), "rad2deg": (0.3, -1.7),
              "sign": (0.3, -1.7), "floor": (0.3, -1.7), "ceil": (0.3, -1.7),
              "trunc": (0.3, -1.7), "rint": (0.3, -1.7)}


@pytest.mark.parametrize("name", sorted(MORE_UNARY))
def test_the_rest_of_the_unary_rules_differentiate_as_the_table(name):
    op = OPS[name]

    def f(x):
        return ops.apply(op, x) * x      # the operand used twice: the step's 0 shows

    for point in MORE_UNARY[name]:
        np.testing.assert_allclose(symbolic.jacobian(f, point), minirad.jacobian(f, point),
                                   rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                  "arctan2", "hypot", "logaddexp", "logaddexp2", "float_power",
                                  "copysign", "floor_divide", "fmod", "remainder", "heaviside"])
def test_each_binary_rule_differentiates_as_the_table(name):
    op = OPS[name]

    def f(a, b):
        return ops.apply(op, a, b) * a      # an operand used twice, as in a real program

    np.testing.assert_allclose(symbolic.jacobian(f, 1.3, 0.6), minirad.jacobian(f, 1.3, 0.6),
                               rtol=1e-13)


def test_python_arithmetic_on_both_sides():
    def f(x, y):
        return (2 - x) / (1 + y) + 3 * x ** 2 - 2 ** y + abs(-x) - (+y)

    np.testing.assert_allclose(symbolic.jacobian(f, 0.4, 1.1), minirad.jacobian(f, 0.4, 1.1),
                               rtol=1e-13)


EXPRESSIONS = [
    "x", "x + y", "x*y*sin(x*y) + cos(x*y)**2", "exp(sin(x) + x) * log(sin(x) + x)",
    "Max(x, y*x) - Abs(x - y)/(1 + x**2)",
]


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_tree_size_counts_every_node_of_the_tree(text):
    # the independent count: walk the whole tree node by node
    e = sp.sympify(text)
    assert symbolic.tree_size(e) == len(list(sp.preorder_traversal(e)))
    entries = list(sp.Matrix([e]).jacobian(sp.symbols("x y")))
    assert symbolic.tree_size(entries) == sum(len(list(sp.preorder_traversal(d)))
                                              for d in entries)


def test_tree_size_of_a_deep_composition_by_hand():
    # x_1 = Mul(x, sin(x)): 4 nodes. SymPy flattens products, so x_k = Mul(args of x_(k-1),
    # sin(x_(k-1))) has (s - 1) + (1 + s) + 1 = 2 s + 1 nodes: s_k = 5 * 2^(k-1) - 1.
    for depth in (1, 2, 3, 10, 60):
        form = symbolic.formula(examples.composition_program(depth), 0.5)
        assert symbolic.tree_size(form.outputs) == 5 * 2 ** (depth - 1) - 1


def test_cse_size_counts_the_named_subexpressions_and_what_is_left():
    x = sp.Symbol("x")
    e = sp.sin(x + 1) * (x + 1)
    assert symbolic.tree_size(e) == 8        # Mul(Add(x, 1), sin(Add(x, 1)))
    assert symbolic.cse_size(e) == 7         # x0 = Add(x, 1): 3; Mul(x0, sin(x0)): 4
    assert symbolic.cse_size(x * sp.sin(x)) == symbolic.tree_size(x * sp.sin(x))   # nothing


def test_the_product_gradient_swells_quadratically_against_a_linear_lcg():
    for n in (3, 5, 12, 30):
        s = symbolic.swell(examples.product_program, *[1.0] * n)
        assert s.n_inputs == n
        assert s.formula_nodes == n + 1                 # one flat Mul
        assert s.derivative_nodes == n * n              # n entries: a Mul of n - 1 symbols
        assert s.lcg_edges == 2 * (n - 1)               # n - 1 multiplications, 2 edges each
        # CSE shares some products of pairs, but the gradient stays quadratic
        assert n * n / 3 < s.cse_nodes <= s.derivative_nodes


def test_the_composition_swells_exponentially_and_cse_takes_most_of_it_back():
    sizes = {n: symbolic.swell(examples.composition_program(n), 0.5) for n in (4, 8)}
    for n, s in sizes.items():
        assert s.lcg_edges == 3 * n == minirad.trace(examples.composition_program(n),
                                                     0.5).n_edges
        assert s.lcg_edges < s.cse_nodes < s.derivative_nodes
        assert s.formula_nodes < s.derivative_nodes
    assert sizes[8].cse_nodes < sizes[8].formula_nodes     # smaller than the program's tree
    assert sizes[8].derivative_nodes > 2 ** 4 * sizes[4].derivative_nodes   # doubles a step
    assert sizes[8].cse_nodes < 4 * sizes[4].cse_nodes


def test_without_sympy_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "sympy", None)   # what a failed import leaves
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'minirad\[symbolic\]'"):
        symbolic.swell(examples.lab_program, 2.0, 3.0)


def test_bad_input():
    with pytest.raises(ValueError, match="one number per argument of f, not arrays"):
        symbolic.formula(lambda x: x[0] * x[1], np.array([1.0, 2.0]))

    def branching(x):
        return x if x > 0 else -x

    with pytest.raises(TypeError, match="cannot branch on a value"):
        symbolic.formula(branching, 1.0)
    with pytest.raises(ValueError, match="depth must be a positive integer"):
        examples.composition_program(0)
    for wrong in ("x + 1", [sp.Symbol("x"), object()]):
        with pytest.raises(TypeError, match="give SymPy expressions"):
            symbolic.tree_size(wrong)
    x = sp.Symbol("x")
    assert symbolic.tree_size(sp.Matrix([[x + 1, 2 * x]])) == 6    # a Matrix: its entries


def test_swell_picture_draws_the_measurements():
    from minirad.draw.swell import plot_swell

    fig = plot_swell(sizes=(3, 6), depths=(2, 3))
    left, right = fig.axes
    edges = [line for line in left.get_lines() if line.get_label().startswith("LCG edges")]
    assert list(edges[0].get_ydata()) == [4, 10]
    trees = [line for line in right.get_lines() if line.get_label().startswith("derivative as")]
    assert list(trees[0].get_ydata()) == [
        symbolic.swell(examples.composition_program(n), 0.5).derivative_nodes for n in (2, 3)]
    assert left.get_yscale() == right.get_yscale() == "log"
