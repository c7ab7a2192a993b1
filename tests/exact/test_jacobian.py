"""The single entry point: every exact method agrees, on named and random graphs,
of numbers and of arrays.

Oracles: calculus by hand for the named examples; for random graphs, the
methods against each other (tolerance relative to the sum of |path
products|, the natural scale of their rounding) and a dense linear solve;
for random array programs, the same methods on the scalarized graph and
central differences, which know nothing of either.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import array_programs, central_differences, close, dense_jacobian, random_dags

import minirad
from minirad import LCG, examples, ops, trace
from minirad.exact import elimination
from minirad.exact.jacobians import METHODS, accumulate, jacobian
from minirad.exact.paths import path_costs
from minirad.graph.scalarize import scalarize
from minirad.tracing.ops import sigmoid

EXACT = ["bauer", "forward", "reverse", "eliminate"]
NAMED_ORDERS = ["forward", "reverse", "markowitz"]


def every_way(g, rng=None):
    """(label, Jacobian) for every method, and every elimination order we can try."""
    results = [(m, jacobian(g, method=m)) for m in ("bauer", "forward", "reverse")]
    for order in NAMED_ORDERS + (["optimal"] if len(g.intermediates) <= 8 else []):
        results.append((f"eliminate/{order}", jacobian(g, method="eliminate", order=order)))
    rng = np.random.default_rng(rng)
    for k in range(3):
        order = [int(v) for v in rng.permutation(g.intermediates)]
        results.append((f"eliminate/random{k}", jacobian(g, method="eliminate", order=order)))
    return results




# ----------------------------------------------------------- named examples
def test_lecture_by_every_method():
    g = examples.lecture()
    for label, J in every_way(g, rng=0):
        assert J.shape == (1, 2), label
        assert round(J[0, 0], 3) == 5.5, label
        assert round(J[0, 1], 3) == 1.716, label
        np.testing.assert_allclose(J, [[5.5, 2 - math.cos(5)]], rtol=1e-14, err_msg=label)


def test_lab_by_every_method():
    g = examples.lab()
    for label, J in every_way(g, rng=1):
        np.testing.assert_allclose(J, [[2.5838531634528574, 2.0]], rtol=1e-15, err_msg=label)
    assert jacobian(examples.lab_program, 2.0, 3.0).tolist() == [[2.5838531634528574, 2.0]]


def test_figure1_and_two_outputs_by_every_method():
    x1, x2 = 1.0, 2.0  # f = exp(x1)^2 * sin(x2) * x2
    expected = [[2 * math.exp(2 * x1) * math.sin(x2) * x2,
                 math.exp(2 * x1) * (math.cos(x2) * x2 + math.sin(x2))]]
    for label, J in every_way(examples.figure1(x1, x2), rng=2):
        np.testing.assert_allclose(J, expected, rtol=1e-14, err_msg=label)
    g = examples.two_outputs()
    reference = dense_jacobian(g)
    for label, J in every_way(g, rng=3):
        np.testing.assert_allclose(J, reference, rtol=1e-13, err_msg=label)


def test_traced_function_with_vector_arguments():
    def f(w, b, x):
        return ops.tanh(w[0] * x[0] + w[1] * x[1] + b), w[0] * w[1]

    args = ([0.3, -0.7], 0.1, [1.5, 2.0])
    s = 0.3 * 1.5 - 0.7 * 2.0 + 0.1
    d = 1 - math.tanh(s) ** 2
    expected = [[d * 1.5, d * 2.0, d, d * 0.3, d * -0.7],
                [-0.7, 0.3, 0.0, 0.0, 0.0]]
    for method in EXACT:
        np.testing.assert_allclose(jacobian(f, *args, method=method), expected, rtol=1e-14,
                                   atol=1e-16, err_msg=method)


# ------------------------------------------------------------ random graphs
small_dags = random_dags(inputs=(1, 4), intermediates=(0, 12), outputs=(1, 4),
                         density=(0.05, 0.9))


@settings(max_examples=60, deadline=None)
@given(small_dags, st.integers(0, 2**32 - 1))
def test_every_method_agrees_on_random_graphs(g, seed):
    magnitude = jacobian(LCG(g.names, g.sources, g.targets, np.abs(g.partials),
                             g.inputs, g.outputs), method="bauer")
    reference = jacobian(g, method="bauer")
    for label, J in every_way(g, rng=seed):
        assert J.shape == (len(g.outputs), len(g.inputs)), label
        # 1e-10 relative to the sum of |path products| (exact zeros must stay exact)
        assert np.all(np.abs(J - reference) <= 1e-10 * magnitude), label
    slack = 1e-13 * max(1.0, float(magnitude.max()))
    assert np.all(np.abs(reference - dense_jacobian(g)) <= 1e-10 * magnitude + slack)


@settings(max_examples=40, deadline=None)
@given(small_dags)
def test_accumulate_reports_counts(g):
    bauer = accumulate(g, method="bauer")
    assert (bauer.multiplications, bauer.additions) == path_costs(g)
    for method in EXACT:
        r = accumulate(g, method=method)
        assert r.method == method
        assert isinstance(r.multiplications, int) and r.multiplications >= 0
        assert isinstance(r.additions, int) and r.additions >= 0
    # reverse needs at most one pass over the edges per output, forward per input
    assert accumulate(g, method="reverse").multiplications <= len(g.outputs) * g.n_edges
    assert accumulate(g, method="forward").multiplications <= len(g.inputs) * g.n_edges


def test_eliminate_defaults_to_markowitz_and_keeps_its_result_type():
    g = examples.figure1()
    r = accumulate(g, method="eliminate")
    assert r.order == elimination.eliminate(g, "markowitz").order
    assert r.multiplications == elimination.eliminate(g, "markowitz").multiplications
    assert accumulate(g, method="eliminate", order="reverse").order == \
        elimination.eliminate(g, "reverse").order


# --------------------------------------------------------------- bad input
def test_unknown_method_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown method 'adjoint'; valid methods are 'bauer', "
                                         "'forward', 'reverse', 'eliminate'"):
        jacobian(examples.lecture(), method="adjoint")
    assert METHODS == ("bauer", "forward", "reverse", "eliminate")


def test_order_and_max_paths_only_with_their_method():
    g = examples.lecture()
    with pytest.raises(ValueError, match="order='markowitz' applies only to "
                                         "method='eliminate', not method='reverse'"):
        jacobian(g, order="markowitz")
    with pytest.raises(ValueError, match="max_paths=10 applies only to method='bauer'"):
        jacobian(g, method="forward", max_paths=10)


def test_too_many_paths_through_the_entry_point():
    width, depth = 10, 32
    src = [k * width + i for k in range(depth) for j in range(width) for i in range(width)]
    dst = [(k + 1) * width + j for k in range(depth) for j in range(width) for i in range(width)]
    n = width * (depth + 1)
    g = LCG([f"v{i}" for i in range(n)], src, dst, np.full(len(src), 0.1),
            inputs=range(width), outputs=range(n - width, n))
    with pytest.raises(ValueError, match=r"~1\.0e33 input-to-output paths.*method='reverse'"):
        jacobian(g, method="bauer")
    with pytest.raises(ValueError, match="has 4 input-to-output paths, more than max_paths=3"):
        jacobian(examples.figure1(), method="bauer", max_paths=3)
    # the sweeps do not care how many paths there are: each entry is 10^31 * 0.1^32
    np.testing.assert_allclose(jacobian(g), np.full((width, width), 0.1), rtol=1e-9)


def test_bad_first_arguments():
    with pytest.raises(TypeError, match="works on an LCG .* or on a function and the point "
                                        "to trace it at, not int"):
        jacobian(3)
    with pytest.raises(TypeError, match=r"got an LCG and 1 more positional argument\(s\), "
                                        r"but takes 0: a point to trace at goes with a function"):
        jacobian(examples.lecture(), 2.0)
    with pytest.raises(TypeError, match=r"needs the point to trace the function at"):
        jacobian(examples.lab_program)
    with pytest.raises(ValueError, match="unknown vertex 'nope'"):
        minirad.exact.sweeps.forward_sweep(examples.lecture(), wrt="nope")


def test_bad_elimination_orders():
    g = examples.lecture()
    with pytest.raises(ValueError, match="eliminates 1 of the graph's 4 intermediates"):
        jacobian(g, method="eliminate", order=["v3"])
    with pytest.raises(ValueError, match="unknown vertex 'zz'"):
        jacobian(g, method="eliminate", order=["zz"])


def test_the_entry_point_takes_a_vector_lcg_for_every_method():
    """jacobian(vector LCG, method=...) equals the scalar Jacobian of its scalarized graph."""
    from minirad import scalarize, trace

    rng = np.random.default_rng(3)
    W, x = rng.normal(size=(3, 4)), rng.normal(size=4)
    g = trace(lambda W, x: sigmoid(W @ x) * x[:3], W, x)
    oracle = jacobian(scalarize(g), method="reverse")
    for method in ("bauer", "forward", "reverse", "eliminate"):
        np.testing.assert_allclose(jacobian(g, method=method), oracle, rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError, match="valid methods"):
        jacobian(g, method="sideways")


# ------------------------------------------------------- random array programs
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(array_programs(), st.integers(0, 2**32 - 1))
def test_every_method_agrees_on_random_array_programs(program, seed):
    """Sweeps, Bauer over array paths, elimination in every order (named, optimal and
    random) on the array graph; every scalar method on its scalarized graph; central
    differences: all one Jacobian, to 1e-10 relative (central differences to 1e-6)."""
    f, args = program
    g = trace(f, *args)
    reference = jacobian(g, method="reverse")
    close(jacobian(g, method="forward"), reference)
    close(jacobian(g, method="bauer"), reference)
    orders = ["forward", "reverse", "markowitz"]
    if len(g.intermediates) <= 5:   # the exhaustive search stays quick
        orders.append("optimal")
    orders.append([int(v) for v in np.random.default_rng(seed).permutation(g.intermediates)])
    for order in orders:
        close(jacobian(g, method="eliminate", order=order), reference)
    s = scalarize(g)
    for method in ("bauer", "forward", "reverse", "eliminate"):
        close(jacobian(s, method=method), reference)
    np.testing.assert_allclose(reference, central_differences(f, args), rtol=1e-6, atol=1e-7)
    # every method reports the same blocks, shaped as the vertices
    for method in METHODS:
        blocks = accumulate(g, method=method).blocks
        assert [[b.shape for b in row] for row in blocks] == [
            [g.shape(y) + g.shape(x) for x in g.inputs] for y in g.outputs], method


def test_a_number_and_an_array_as_inputs():
    """f(s, x) = s * tanh(x) + s**2 * sum(x), by hand: dy/ds = tanh(x) + 2 s sum(x),
    dy/dx = s diag(1 - tanh(x)^2) + s^2 (every column)."""
    s, x = 0.7, np.array([0.2, -0.4, 1.1])

    def f(s, x):
        return s * np.tanh(x) + s ** 2 * x.sum()

    expected = np.column_stack([np.tanh(x) + 2 * s * x.sum(),
                                s * np.diag(1 - np.tanh(x) ** 2) + s ** 2])
    g = trace(f, s, x)
    assert g.shape("s") == () and g.shape("x") == (3,)
    for method in EXACT:
        np.testing.assert_allclose(jacobian(g, method=method), expected, rtol=1e-13,
                                   err_msg=method)
    result = accumulate(g, method="reverse")
    assert result.blocks[0][0].shape == (3,) and result.blocks[0][1].shape == (3, 3)
    np.testing.assert_allclose(result.blocks[0][1], expected[:, 1:], rtol=1e-13)
    # a function traced at a number and a matrix goes to the array tracer
    W = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(jacobian(lambda s, W: (s * W).sum(), 0.5, W),
                               [[10.0, 0.5, 0.5, 0.5, 0.5]], rtol=1e-15)


def test_jacobians_of_arrays_above_the_dense_limit_are_refused():
    g = trace(lambda x: np.tanh(x), np.zeros(3000))
    with pytest.raises(ValueError, match="3,000 x 3,000 = 9,000,000 entries"):
        jacobian(g, method="forward")
