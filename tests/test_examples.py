"""Tests for minirad.examples: the named graphs, random DAGs and Figure 2's families."""

import math

import numpy as np
import pytest
from oracles import dense_jacobian

from minirad import examples, load_graph, save_graph
from minirad.graph.lcg import LCG


# ------------------------------------------------------------ named graphs
def test_figure1_shape_and_gradient():
    g = examples.figure1()
    assert (g.n_vertices, g.n_edges, len(g.inputs), len(g.outputs)) == (7, 8, 2, 1)
    x1, x2 = 1.0, 2.0  # y = exp(x1)^2 * sin(x2) * x2
    y = math.exp(2 * x1) * math.sin(x2) * x2
    assert g.value(g.outputs[0]) == pytest.approx(y)
    want = [2 * y, math.exp(2 * x1) * (math.cos(x2) * x2 + math.sin(x2))]
    assert np.allclose(dense_jacobian(g), [want])


def test_lecture_and_lab_match_their_docstrings():
    g = examples.lecture()
    assert g.value("y") == pytest.approx(11.652, abs=1e-3)
    assert np.allclose(dense_jacobian(g), [[5.5, 1.0 * 2.0 - math.cos(5.0)]])
    assert np.allclose(dense_jacobian(examples.lab()), [[2.5838531634528574, 2.0]])


def test_two_outputs_matches_finite_differences():
    g = examples.two_outputs(1.5, 0.5)
    assert len(g.outputs) == 2
    f = examples.two_outputs_program
    h = 1e-6
    columns = [(np.array(f(1.5 + h, 0.5)) - np.array(f(1.5 - h, 0.5))) / (2 * h),
               (np.array(f(1.5, 0.5 + h)) - np.array(f(1.5, 0.5 - h))) / (2 * h)]
    assert np.allclose(dense_jacobian(g), np.column_stack(columns), atol=1e-6)


# -------------------------------------------------------------- random DAGs
@pytest.mark.parametrize("seed", range(10))
def test_random_dag_has_the_requested_shape_and_every_vertex_on_a_path(seed):
    g = examples.random_dag(3, 12, 2, 0.3, rng=seed)
    assert (len(g.inputs), len(g.intermediates), len(g.outputs)) == (3, 12, 2)
    assert np.all(g.sources < g.targets)
    for v in g.intermediates:
        assert g.in_degree(v) >= 1 and g.out_degree(v) >= 1
    for v in g.inputs:
        assert g.out_degree(v) >= 1
    for v in g.outputs:
        assert g.in_degree(v) >= 1


def test_random_dag_is_reproducible_and_validates():
    a, b = examples.random_dag(2, 6, 2, rng=4), examples.random_dag(2, 6, 2, rng=4)
    assert a.same_as(b)
    assert a.same_as(examples.random_dag(2, 6, 2, rng=np.random.default_rng(4)))
    with pytest.raises(ValueError, match="n_inputs"):
        examples.random_dag(0, 3, 1)
    with pytest.raises(ValueError, match="density"):
        examples.random_dag(1, 3, 1, density=1.5)
    with pytest.raises(ValueError, match="rng"):
        examples.random_dag(1, 3, 1, rng="seed")


# ------------------------------------------------------------ Figure 2
@pytest.mark.parametrize("width,depth", [(1, 1), (3, 1), (3, 4), (5, 2)])
def test_independent_paths_structure(width, depth):
    g = examples.independent_paths(width, depth)
    assert (g.n_vertices, g.n_edges) == (width * depth + 2, width * (depth + 1))
    assert g.inputs == (g.index("theta"),) and g.outputs == (g.index("y"),)
    assert g.out_degree("theta") == width and g.in_degree("y") == width
    for v in g.intermediates:
        assert g.in_degree(v) == 1 and g.out_degree(v) == 1
    assert dense_jacobian(g)[0, 0] == pytest.approx(width)  # one unit path per chain


@pytest.mark.parametrize("width,depth", [(1, 1), (3, 1), (3, 3), (2, 5)])
def test_interleaved_structure(width, depth):
    g = examples.interleaved(width, depth)
    assert g.n_vertices == width * depth + 2
    assert g.n_edges == 2 * width + width * width * (depth - 1)
    if depth > 1:
        assert g.successors("a1") == tuple(g.index(f"b{i}") for i in range(1, width + 1))
    assert dense_jacobian(g)[0, 0] == pytest.approx(width**depth)  # number of paths


def test_figure_2c_names():
    assert examples.interleaved(3, 3).names == (
        "theta", "a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3", "y")
    deep = examples.interleaved(2, 30)
    assert deep.names[1] == "h1_1" and deep.names[-2] == "h30_2"


def test_partial_schemes():
    assert np.all(examples.interleaved(2, 2, partials=-0.5).partials == -0.5)
    random = examples.interleaved(3, 3, partials="random", rng=0)
    assert np.all((random.partials >= 0.5) & (random.partials < 1.5))
    assert random.same_as(examples.interleaved(3, 3, partials="random", rng=0))
    assert not random.same_as(examples.interleaved(3, 3, partials="random", rng=1))
    balanced = examples.interleaved(4, 3, partials="balanced", rng=2)
    out_sum = np.bincount(balanced.sources, weights=balanced.partials)
    out_degree = np.bincount(balanced.sources)
    assert np.allclose(out_sum[:-1], out_degree[:-1])  # out-partials average 1
    assert dense_jacobian(balanced)[0, 0] == pytest.approx(4**3)
    # one seed: theta's out-partials are the same at every depth
    first = [examples.independent_paths(5, depth, "balanced", rng=3).partial("theta", "a2")
             for depth in (1, 4, 9)]
    assert first[0] == first[1] == first[2]
    chains = examples.independent_paths(5, 4, "balanced", rng=3)
    assert np.all(chains.partials[chains.sources != 0] == 1.0)


@pytest.mark.parametrize("bad,error", [((0, 2), ValueError), ((2, 0), ValueError),
                                       ((2.0, 2), TypeError), ((2, True), TypeError)])
def test_family_shapes_are_validated(bad, error):
    for family in (examples.independent_paths, examples.interleaved):
        with pytest.raises(error, match="width|depth"):
            family(*bad)


@pytest.mark.parametrize("partials", ["gaussian", math.inf, [1.0, 2.0], True])
def test_family_partials_are_validated(partials):
    with pytest.raises(ValueError, match="partials"):
        examples.interleaved(2, 2, partials=partials)


def test_families_are_lcgs_that_round_trip(tmp_path):
    g = examples.interleaved(3, 2, "random", rng=1)
    assert isinstance(g, LCG)
    assert load_graph(save_graph(g, tmp_path / "g.json")).same_as(g)
