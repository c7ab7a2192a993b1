"""Bauer's formula: path counts, lazy enumeration, path products, the path sum,
on graphs of numbers and on graphs with arrays.

Oracles: networkx's own path enumeration (all_simple_paths: every path of a
DAG is simple), closed forms for fully connected layered graphs, hand
products, the Jacobian by a dense linear solve, and on arrays the scalarized
graph's path counts, matrix products by hand and the shared label recurrences.
"""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import array_programs, broom, close, dense_jacobian, random_dags

import minirad
from minirad import LCG, examples, trace
from minirad.exact.paths import (
    bauer,
    bauer_reference,
    count_paths,
    count_paths_between,
    count_scalar_paths,
    path_costs,
    path_jacobian,
    path_product,
    paths,
)
from minirad.graph import labels
from minirad.graph.operators import Dense, Diagonal, Identity
from minirad.graph.scalarize import from_chain, scalarize

# ----------------------------------------------------------------- helpers


def nx_paths(g, s, t):
    G = nx.DiGraph()
    G.add_nodes_from(range(g.n_vertices))
    G.add_edges_from(zip(g.sources.tolist(), g.targets.tolist()))
    if s == t:
        return [(s,)]
    return [tuple(p) for p in nx.all_simple_paths(G, s, t)]


def layered(width, depth, partial=1.0, n_io=None):
    """Layers 0..depth of ``width`` vertices, each fully joined to the next.

    Layer 0 holds the inputs and layer ``depth`` the outputs; every input
    reaches every output by width ** (depth - 1) paths of ``depth`` edges.
    """
    src, dst = [], []
    for k in range(depth):
        for j in range(width):
            for i in range(width):
                src.append(k * width + i)
                dst.append((k + 1) * width + j)
    n = width * (depth + 1)
    return LCG([f"v{i}" for i in range(n)], src, dst, [partial] * len(src),
               inputs=range(width), outputs=range(n - width, n))


small_dags = random_dags(inputs=(1, 3), intermediates=(0, 9), outputs=(1, 3),
                         density=(0.1, 0.9))


# ---------------------------------------------------------------- counting
@settings(max_examples=60, deadline=None)
@given(small_dags)
def test_counts_match_enumeration(g):
    counts = count_paths(g)
    assert counts.shape == (len(g.outputs), len(g.inputs))
    assert counts.dtype == object
    for r, y in enumerate(g.outputs):
        for c, x in enumerate(g.inputs):
            expected = len(nx_paths(g, x, y))
            assert counts[r, c] == expected
            assert count_paths_between(g, x, y) == expected


@settings(max_examples=40, deadline=None)
@given(small_dags, st.data())
def test_count_between_any_pair(g, data):
    s = data.draw(st.integers(0, g.n_vertices - 1))
    t = data.draw(st.integers(0, g.n_vertices - 1))
    assert count_paths_between(g, s, t) == len(nx_paths(g, s, t) if s <= t else [])
    assert count_paths_between(g, g.names[s], g.names[t]) == count_paths_between(g, s, t)


def test_counts_of_named_examples():
    # Figure 1 of the paper has four paths, two from each input
    assert count_paths(examples.figure1()).tolist() == [[2, 2]]
    assert count_paths(examples.lecture()).tolist() == [[2, 2]]
    assert count_paths(examples.lab()).tolist() == [[2, 1]]


@pytest.mark.parametrize("width, depth", [(10, 32), (7, 40), (2, 120)])
def test_more_than_1e30_paths_counted_exactly(width, depth):
    g = layered(width, depth)
    counts = count_paths(g)
    per_pair = width ** (depth - 1)
    assert per_pair > 10**30
    assert counts.shape == (width, width)
    assert all(c == per_pair and isinstance(c, int) for c in counts.ravel())
    total_paths = width * width * per_pair
    # each path has `depth` edges: depth - 1 multiplications; every entry is reached
    assert path_costs(g) == (total_paths * (depth - 1), total_paths - width * width)


def test_count_more_outputs_than_inputs_and_vice_versa():
    # a two-input, three-output graph and its mirror image exercise both DP directions
    g = LCG.from_edges([("a", "m", 1.0), ("b", "m", 1.0), ("a", "p", 1.0), ("m", "y1", 1.0),
                        ("m", "y2", 1.0), ("p", "y2", 1.0), ("p", "y3", 1.0), ("b", "y3", 1.0)],
                       inputs=["a", "b"], outputs=["y1", "y2", "y3"])
    assert count_paths(g).tolist() == [[1, 1], [2, 1], [1, 1]]
    mirror = LCG.from_edges([(v, u, d) for u, v, d in
                             [(g.names[s], g.names[t], 1.0) for s, t, _ in g.edges()]],
                            inputs=["y1", "y2", "y3"], outputs=["a", "b"])
    assert count_paths(mirror).tolist() == [[1, 2, 1], [1, 1, 1]]


def test_counts_of_graph_without_inputs_or_outputs():
    g = LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=[])
    assert count_paths(g).shape == (0, 1)
    assert path_costs(g) == (0, 0)
    assert path_jacobian(g).shape == (0, 1)


# ------------------------------------------------------------- enumeration
@settings(max_examples=60, deadline=None)
@given(small_dags)
def test_paths_are_exactly_the_graph_paths_in_lexicographic_order(g):
    for x in g.inputs:
        for y in g.outputs:
            listed = list(paths(g, x, y))
            assert listed == sorted(nx_paths(g, x, y))
    everything = list(paths(g))
    expected = [p for x in g.inputs for y in g.outputs for p in nx_paths(g, x, y)]
    assert sorted(everything) == sorted(expected)
    assert len(everything) == sum(count_paths(g).ravel())
    # per source, lexicographic; sources in input order
    starts = [p[0] for p in everything]
    assert starts == sorted(starts, key=list(g.inputs).index)


def test_paths_by_name_and_to_a_single_vertex():
    g = examples.lecture()
    assert list(paths(g, "x2", "y")) == [(1, 3, 5, 6), (1, 4, 6)]
    assert list(paths(g, "x1", "v5")) == [(0, 2, 5), (0, 3, 5)]
    assert list(paths(g, "v3", "v3")) == [(3,)]
    assert list(paths(g, "y", "x1")) == []
    assert list(paths(g, ["x1", "x2"], "v3")) == [(0, 3), (1, 3)]


def test_paths_is_lazy_on_an_astronomical_graph():
    g = layered(10, 40)  # 10**39 paths per pair
    first = next(paths(g, 0, g.outputs[0]))
    assert first == tuple([0] + [k * 10 for k in range(1, 41)])


def test_paths_handles_deep_graphs_without_recursion():
    depth = 5000  # far beyond Python's default recursion limit
    edges = [(f"v{k}", f"v{k + 1}", 1.0) for k in range(depth)]
    g = LCG.from_edges(edges, inputs=["v0"], outputs=[f"v{depth}"])
    (only,) = list(paths(g))
    assert len(only) == depth + 1
    assert count_paths(g)[0, 0] == 1


def test_paths_unknown_vertex():
    g = examples.lecture()
    with pytest.raises(ValueError, match="unknown vertex 'nope'"):
        list(paths(g, "nope", "y"))
    with pytest.raises(ValueError, match="unknown vertex 99"):
        count_paths_between(g, 0, 99)


# -------------------------------------------------------------- products
def test_path_product_by_hand():
    g = examples.lecture()  # at (2, 5)
    assert path_product(g, ["x1", "v2", "v5", "y"]) == 0.5  # 1/x1 * 1 * 1
    assert path_product(g, [1, 4, 6]) == pytest.approx(-math.cos(5.0), abs=1e-15)
    assert path_product(g, ("x1", "v3")) == 5.0
    assert path_product(g, ["v3"]) == 1.0


def test_path_product_rejects_non_edges_and_bad_paths():
    g = examples.lecture()
    with pytest.raises(ValueError, match="step 2 of the path is not an edge: there is no edge "
                                         "v3 -> y"):
        path_product(g, ["x1", "v3", "y"])
    with pytest.raises(ValueError, match="unknown vertex 'q'"):
        path_product(g, ["x1", "q"])
    with pytest.raises(ValueError, match="at least one vertex"):
        path_product(g, [])
    with pytest.raises(TypeError, match="sequence of vertices"):
        path_product(g, "x1")


# --------------------------------------------------------------- the sum
@settings(max_examples=60, deadline=None)
@given(small_dags)
def test_path_sum_matches_dense_solve(g):
    exact = dense_jacobian(g)
    magnitude = dense_jacobian(LCG(g.names, g.sources, g.targets, np.abs(g.partials),
                                   g.inputs, g.outputs))
    # rounding is bounded relative to the sum of |path products|; the dense
    # solve itself leaves ~1e-17 residue on structurally zero entries
    slack = 1e-13 * max(1.0, float(np.abs(magnitude).max()))
    assert np.all(np.abs(path_jacobian(g) - exact) <= 1e-10 * np.abs(magnitude) + slack)


@settings(max_examples=50, deadline=None)
@given(small_dags)
def test_counts_of_bauer_match_enumeration(g):
    every = [p for x in g.inputs for y in g.outputs for p in nx_paths(g, x, y)]
    reached = sum(1 for x in g.inputs for y in g.outputs if nx_paths(g, x, y))
    multiplications = sum(len(p) - 2 for p in every)  # a path of k edges: k - 1 products
    result = bauer(g)
    assert (result.multiplications, result.additions) == (multiplications,
                                                           len(every) - reached)
    assert path_costs(g) == (result.multiplications, result.additions)
    assert result.method == "bauer"


def test_path_sum_of_every_path_product():
    g = examples.figure1()
    J = np.zeros((1, 2))
    for p in paths(g):
        J[0, list(g.inputs).index(p[0])] += path_product(g, p)
    np.testing.assert_allclose(path_jacobian(g), J, rtol=1e-15)
    x1, x2 = 1.0, 2.0  # f = exp(x1)^2 sin(x2) x2
    expected = [2 * math.exp(2 * x1) * math.sin(x2) * x2,
                math.exp(2 * x1) * (math.cos(x2) * x2 + math.sin(x2))]
    np.testing.assert_allclose(path_jacobian(g)[0], expected, rtol=1e-14)


def test_too_many_paths_refused_with_count():
    g = layered(10, 32)
    with pytest.raises(ValueError, match=r"has ~1\.0e33 input-to-output paths, more than "
                                         r"max_paths=1000000.*forward or reverse sweep"):
        path_jacobian(g)
    small = layered(3, 3)  # 9 pairs * 9 paths
    with pytest.raises(ValueError, match="has 81 input-to-output paths, more than max_paths=80"):
        path_jacobian(small, max_paths=80)
    assert path_jacobian(small, max_paths=81).tolist() == [[9.0] * 3] * 3


@pytest.mark.parametrize("bad", [-1, 1.5, "many", True, None])
def test_max_paths_must_be_a_count(bad):
    with pytest.raises(ValueError, match="max_paths must be a non-negative integer"):
        path_jacobian(examples.lecture(), max_paths=bad)


# ------------------------------------------------------- the reference sum
@settings(max_examples=50, deadline=None)
@given(small_dags)
def test_the_engine_is_the_reference_path_sum(g):
    fast, reference = bauer(g), bauer_reference(g)
    magnitude = path_jacobian(LCG(g.names, g.sources, g.targets, np.abs(g.partials),
                                  g.inputs, g.outputs))
    assert np.all(np.abs(fast.jacobian - reference.jacobian) <= 1e-12 * magnitude)
    assert (fast.multiplications, fast.additions) == (reference.multiplications,
                                                      reference.additions)
    assert reference.blocks is None          # a graph of numbers has no blocks


# ------------------------------------------------------------------ arrays
A_B = (np.full((2, 3), 0.3), np.full(3, 0.2))


def program(a, b):
    # a @ b reached directly and through tanh; a also through a.sum()
    return np.tanh(a @ b) * a.sum() + (a @ b) ** 2


def test_path_counts_at_both_levels():
    ones = [np.ones((3, 1)), np.ones((3, 3)), np.ones((1, 3))]
    g = from_chain(ones)
    assert count_paths(g).tolist() == [[1]]              # one path of arrays
    assert count_scalar_paths(g).tolist() == [[9]]       # 3 x 3 paths of numbers
    assert minirad.count_paths(scalarize(g)).tolist() == [[9]]
    g = trace(program, *A_B)
    assert count_paths(g).tolist() == [[3, 2]]
    np.testing.assert_array_equal(count_scalar_paths(g), count_paths(scalarize(g)))


@settings(max_examples=30, deadline=None)
@given(array_programs(max_steps=5))
def test_scalar_path_counts_are_those_of_the_scalarized_graph(program):
    f, args = program
    g = trace(f, *args)
    counts = count_scalar_paths(g)
    assert counts.dtype == object
    np.testing.assert_array_equal(counts, count_paths(scalarize(g)))


def test_scalar_path_counts_are_exact_beyond_int64():
    # 70 layers of a dense 2 x 2 block of ones: 2**69 paths between each pair of entries
    g = from_chain([np.ones((2, 2))] * 70)
    assert count_paths(g).tolist() == [[1]]
    assert count_scalar_paths(g).tolist() == [[2 ** 69] * 2] * 2
    assert count_scalar_paths(examples.lecture()).tolist() == count_paths(
        examples.lecture()).tolist()
    with pytest.raises(ValueError, match="pass a larger max_entries"):
        count_scalar_paths(g, max_entries=10)


def test_bauer_costs_one_product_per_path():
    g = from_chain([np.ones((3, 2)), np.ones((4, 3)), np.ones((2, 4))])
    result = bauer(g)
    # one path, two dense products: (4x3)(3x2) then (2x4)(4x2)
    assert result.multiplications == 4 * 3 * 2 + 2 * 4 * 2 and result.additions == 0
    assert path_costs(g) == (result.multiplications, result.additions)
    np.testing.assert_allclose(result.jacobian, np.full((2, 2), 12.0))
    # two diagonals multiply entry by entry, and where two paths meet their sums cost d
    d = Diagonal(np.array([1.0, 2.0, 3.0]))
    h = LCG(["x", "a", "y"], [0, 1, 0], [1, 2, 2], [d, d, d], [0], [2], shapes=[(3,)] * 3)
    result = bauer(h)
    assert (result.multiplications, result.additions) == (3, 3)
    np.testing.assert_allclose(result.jacobian, np.diag([2.0, 6.0, 12.0]))


def test_the_shared_label_recurrences_run_unchanged_on_arrays():
    g = trace(program, *A_B)
    result = bauer(g)
    for c, s in enumerate(g.inputs):
        block = labels.path_sum(g, s, g.outputs[0])          # Bauer, in minirad.graph.labels
        close(block.to_dense().reshape(result.blocks[0][c].shape), result.blocks[0][c])
        assert labels.path_sum(g, s, g.outputs[0], algebra=labels.COUNTS,
                               labels=[1] * g.n_edges) == count_paths(g)[0, c]
    t = [np.full((2, 3), 0.1), np.full(3, -0.2)]
    close(labels.forward(g, dict(zip(g.inputs, t))).values[g.outputs[0]],
          result.jacobian @ np.concatenate([x.ravel() for x in t]))


def test_paths_and_path_products_on_arrays():
    g = trace(program, *A_B)
    a, y = g.index("a"), g.outputs[0]
    found = list(paths(g, "a", y))
    assert sorted(found) == sorted(nx_paths(g, a, y)) and len(found) == 3
    total = sum(path_product(g, p).to_dense() for p in found)
    close(total, bauer(g).blocks[0][0].reshape(total.shape))
    # a product of blocks by hand: W then a diagonal is diag(d) W
    W, d = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([5.0, 7.0])
    h = LCG(["x", "u", "y"], [0, 1], [1, 2], [Dense(W, (2,), (2,)), Diagonal(d)], [0], [2],
            shapes=[(2,)] * 3)
    np.testing.assert_allclose(path_product(h, ["x", "u", "y"]).to_dense(), d[:, None] * W)
    one = path_product(h, ["u"])
    assert isinstance(one, Identity) and one.in_shape == (2,)


def test_a_count_too_long_for_python_to_print_still_prints():
    """A traced loop of 20,000 steps y = sin(x) + cos(x): two paths through each
    step, 2**20000 in all (6021 digits, past Python's 4300-digit limit on str of
    an int, which made numpy's printing of the array fail)."""
    from minirad import ops, trace

    def loop(x):
        for _ in range(20_000):
            x = ops.sin(x) + ops.cos(x)
        return x

    counts = count_paths(trace(loop, 0.3))
    assert counts[0, 0] == 2**20000 and isinstance(counts[0, 0], int)
    assert repr(counts) == "array([[~4.0e6020]], dtype=object)"
    assert str(counts) == "[[~4.0e6020]]" and str(counts[0, 0]) == "~4.0e6020"
    total = counts.sum() + 1  # arithmetic gives plain, exact ints
    assert type(total) is int and total - 2**20000 == 1
    # below the limit every digit is printed, as for any int
    assert str(count_paths(layered(10, 32))[0, 0]) == str(10**31)


# ----------------------------------------------------------------- issue 39
def test_bauer_is_bounded_by_the_products_along_its_paths_not_only_their_number():
    """Issue 39: n paths of average length n/2 are under any path limit yet cost n^2/2
    products (two days at n = 10^6). Refused before any path is walked, naming the
    products and the keyword that asks for them anyway; within the bound the counts are
    the hand count and the Jacobian the reverse sweep's (the oracle)."""
    n = 300
    g = broom(n)
    products = n * (n + 1) // 2
    with pytest.raises(ValueError, match=f"multiplies {products} times along the graph's "
                                         f"{n} input-to-output paths.*max_products={products - 1}"
                                         f".*pass max_products={products}"):
        bauer(g, max_products=products - 1)
    with pytest.raises(ValueError, match=f"max_products={products}"):
        minirad.jacobian(g, method="bauer", max_products=products - 1)
    result = minirad.accumulate(g, method="bauer", max_products=products)
    assert result.multiplications == products and result.additions == n - 1
    np.testing.assert_allclose(result.jacobian, minirad.jacobian(g), rtol=0)
    with pytest.raises(ValueError, match="max_products=5 applies only to method='bauer'"):
        minirad.jacobian(g, method="reverse", max_products=5)
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="max_products must be a non-negative integer"):
            bauer(g, max_products=bad)
    big = broom(100_000)        # 5e9 products, refused by default
    with pytest.raises(ValueError, match="multiplies 5000050000 times"):
        bauer(big)


def test_refusing_bauer_takes_two_counts_per_vertex_not_one_per_input():
    """Issue 39: the refusal counted the paths of every input to every vertex (a float
    and a Python int each), 4.2 GB on a 10^6-edge graph. 2,000 inputs and 2,000 outputs
    joined by a chain of 50,000 vertices: 4,000,000 paths. The old counts table alone
    would take 2,000 x 54,000 ints (over 3 GB); the refusal now takes a few MB."""
    import tracemalloc

    k, length = 2000, 50_000
    names = [f"x{i}" for i in range(k)] + [f"c{i}" for i in range(length)] + \
            [f"y{i}" for i in range(k)]
    sources = list(range(k)) + list(range(k, k + length - 1)) + [k + length - 1] * k
    targets = [k] * k + list(range(k + 1, k + length)) + list(range(k + length, 2 * k + length))
    g = LCG(names, sources, targets, np.ones(len(sources)), list(range(k)),
            list(range(k + length, 2 * k + length)))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="has 4000000 input-to-output paths, more than "
                                             "max_paths=1000000.*pass max_paths=4000000"):
            bauer(g)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * 2**20
