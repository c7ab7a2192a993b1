"""Every edge label the numpy rules make works wherever a label goes (issue 33, with the
one-LCG guarantee of issue 25): the four exact methods agree, path sampling and random
matrix injection stay unbiased through it, it saves and loads to the same Jacobian and
memory, and it is drawn with its name.

Each rule of the catalog is traced inside a small program that gives its edges
something to do: its operands are intermediate vertices (``a * 1.0``, so path sampling
draws entries inside them and the rule's edges leave a sampled vertex), and its output
has two uses (so path sampling draws between them)."""

import math

import numpy as np
import pytest
from test_numpy_rules import arguments

import minirad
from minirad import trace
from minirad.graph.operators import MatMul, Operator
from minirad.randomized.injection import injected_jacobians, injection_variance
from minirad.randomized.sampling import path_sampling_variance, sampled_jacobians
from minirad.tracing.catalog import EXAMPLES

RULES = [name for name, e in EXAMPLES.items() if e.group != "elementwise"]
# the table's entries make diagonals, masks and scales, which tests/graph/test_graph_arrays.py and
# test_injection.py already carry through; one of each here is enough
ENTRIES = ["np.sin(x)", "ops.relu(x)", "np.hypot(a, b)", "np.floor(x)"]


def in_a_program(example):
    """The example's rule between intermediate operands and an output used twice."""
    f = example.function()

    def program(*args):
        out = f(*[a * 1.0 for a in args])
        weights = np.sin(np.arange(out.size) + 1.0).reshape(out.shape)
        return (out * weights).sum() + (out * out).sum() * 0.25
    return program


def graph_of(name):
    example = EXAMPLES[name]
    return trace(in_a_program(example), *arguments(example))


def rule_edges(g):
    """The edges the rule made: those leaving the operands (a * 1.0) and those after, up
    to the two uses of its output (the last four edges are the weighting's)."""
    first = len(g.inputs)
    return [e for e in range(g.n_edges) if g.sources[e] >= first
            and isinstance(g.labels[e], Operator) and e < g.n_edges - 5]


@pytest.mark.parametrize("name", RULES + ENTRIES)
def test_the_four_exact_methods_agree(name):
    g = graph_of(name)
    reverse = minirad.jacobian(g, method="reverse")
    for method in ("forward", "bauer", "eliminate"):
        np.testing.assert_allclose(minirad.jacobian(g, method=method), reverse, rtol=1e-11,
                                   atol=1e-12 * max(1.0, np.abs(reverse).max()), err_msg=method)


@pytest.mark.parametrize("name", RULES + ENTRIES)
def test_path_sampling_through_the_rule_is_unbiased(name):
    g = graph_of(name)
    exact = minirad.jacobian(g)
    # every intermediate vertex draws 2 of its entries; every vertex 1 of its out-edges
    n = 4000
    mean = sampled_jacobians(g, 1, n, rng=33, entries=2).mean(axis=0)
    standard_error = np.sqrt(path_sampling_variance(g, 1, entries=2) / n)
    # each entry within 6 standard errors: a false failure about 2e-9 per entry (normal
    # tails; n = 4000 makes the mean close to normal), under 1e-6 over the whole test
    assert np.all(np.abs(mean - exact) <= 6 * standard_error + 1e-9 * np.abs(exact).max())
    one = minirad.sample_paths(g, 1, rng=0, entries=2)
    assert one.jacobian.shape == exact.shape and np.all(np.isfinite(one.jacobian))


@pytest.mark.parametrize("name", RULES + ENTRIES)
def test_injection_on_every_edge_of_the_rule_is_unbiased(name):
    g = graph_of(name)
    exact = minirad.jacobian(g)
    for e in rule_edges(g):
        label = g.labels[e]
        if isinstance(label, MatMul):   # its own sampling of the stored operand: tested in
            continue                    # test_injection.py
        d = label.in_size
        # P = d e_i e_i^T for one pick i: averaged over every i, exactly the identity
        mean = sum(minirad.jacobian(minirad.inject_edge(g, e, picks=[i]))
                   for i in range(d)) / d
        tolerance = 1e-9 if all(np.dtype(t) == np.float64 for t in g.dtypes) else 1e-5
        np.testing.assert_allclose(mean, exact, rtol=tolerance, err_msg=str(e),
                                   atol=tolerance * max(1.0, np.abs(exact).max()))


@pytest.mark.parametrize("name", RULES + ENTRIES)
def test_injection_at_the_rule_output_is_unbiased(name):
    g = graph_of(name)
    v = g.names[int(g.sources[g.n_edges - 1])]   # the rule's output feeds the last edges
    if math.prod(g.shape(v)) == 1:
        return   # a number: P = 1
    exact, n = minirad.jacobian(g), 4000
    mean = injected_jacobians(g, [v], k=1, n=n, rng=7).mean(axis=0)
    standard_error = np.sqrt(injection_variance(g, [v], k=1) / n)
    # 6 standard errors, as for path sampling
    assert np.all(np.abs(mean - exact) <= 6 * standard_error + 1e-9 * np.abs(exact).max())


@pytest.mark.parametrize("name", RULES + ENTRIES)
def test_saving_and_loading_keeps_every_label(tmp_path, name):
    g = graph_of(name)
    h = minirad.load_graph(minirad.save_graph(g, tmp_path / "g.npz"))
    assert [type(op) for op in h.labels] == [type(op) for op in g.labels]
    assert [getattr(op, "kind", "number") for op in h.labels] == [
        getattr(op, "kind", "number") for op in g.labels]
    np.testing.assert_array_equal(minirad.jacobian(h), minirad.jacobian(g))
    m, n = minirad.retained_memory(h), minirad.retained_memory(g)
    assert (m.per_edge, m.notes, m.from_shapes) == (n.per_edge, n.notes, n.from_shapes)


@pytest.mark.parametrize("name", RULES + ENTRIES)
def test_drawing_names_every_label(name):
    g = graph_of(name)
    source = minirad.render(g).source
    for e in rule_edges(g):
        assert g.labels[e].label().split(", ")[0] in source, g.labels[e].label()
