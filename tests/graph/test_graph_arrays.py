"""The LCG of arrays: structural API, validation, memory accounting rules, and the
file format (round trip and hostile files)."""


import numpy as np
import pytest

from minirad import trace
from minirad.exact.jacobians import jacobian
from minirad.graph.lcg import LCG, relabelled
from minirad.graph.memory import retained_memory
from minirad.graph.operators import OPERATORS, Diagonal, Mask
from minirad.graph.scalarize import scalarize, vertex_copies
from minirad.tracing import name
from minirad.tracing.ops import relu
from minirad.tracing.rules import conv2d, softmax_cross_entropy


def small_graph():
    X = np.random.default_rng(0).standard_normal((4, 3))
    return trace(lambda W, b: softmax_cross_entropy(
        name(relu(X @ W + b), "a") @ np.ones((2, 3)), np.array([0, 1, 2, 0])),
        np.random.default_rng(1).standard_normal((3, 2)), np.zeros(2))


def test_structural_api_matches_the_scalar_graph():
    g = small_graph()
    assert g.algebra is OPERATORS
    assert g.labels is g.labels and len(g.labels) == g.n_edges
    assert list(g.sources) == [u for u, _, _ in g.edges()]
    assert all(u < v for u, v, _ in g.edges())
    assert g.kind("W") == "input" and g.kind("y") == "output" and g.kind("a") == "intermediate"
    a = g.index("a")
    assert g.predecessors(a) == (a - 1,) and g.successors(a) == (a + 1,)
    assert g.shape("a") == (4, 2) and g.dtype("a") == np.float64
    assert g.label(a - 1, a).kind == "mask"
    order, ptr = g.out_edges_csr
    assert sorted(order.tolist()) == list(range(g.n_edges))
    assert g.in_edges_ptr[-1] == g.n_edges
    line = next(row for row in g.wengert().splitlines() if row.endswith("(a)"))
    assert "∈ R^(4×2)" in line and "dv4/dv3: mask" in line
    assert repr(g).startswith("LCG(")
    assert list(vertex_copies(g, "b")) == list(range(6, 8))


def test_constructor_validates_shapes_topology_and_kinds():
    d = Diagonal(np.ones(2))
    values = [np.ones(2), np.ones(2)]
    with pytest.raises(ValueError, match=r"maps \(3,\) -> \(3,\) but the vertices have shapes"):
        LCG(["x", "y"], [0], [1], [Diagonal(np.ones(3))], [0], [1], values=values)
    # numbered against the edge: renumbered topologically, as any LCG
    assert LCG(["x", "y"], [1], [0], [d], [1], [0], values=values).names == ("y", "x")
    with pytest.raises(ValueError, match="duplicate edge x -> y"):
        LCG(["x", "y"], [0, 0], [1, 1], [d, d], [0], [1], values=values)
    with pytest.raises(ValueError, match="non-finite"):
        LCG(["x", "y"], [0], [1], [d], [0], [1], values=[np.ones(2), np.array([1, np.nan])])
    with pytest.raises(ValueError, match="carries the number 2.0, but it joins shapes"):
        LCG(["x", "y"], [0], [1], [2.0], [0], [1], values=values)
    with pytest.raises(TypeError, match="a label is a real number or a minirad.graph"):
        LCG(["x", "y"], [0], [1], ["2.0"], [0], [1], values=values)
    with pytest.raises(ValueError, match=r"output x has a successor \(y\)"):
        LCG(["x", "y"], [0], [1], [d], [], [0, 1], values=values)


def test_relabelled_is_the_constructor_with_new_labels():
    g = small_graph()
    e = next(e for e, op in enumerate(g.labels) if op.kind == "mask")
    new = Diagonal(np.full(g.labels[e].in_shape, 0.5))
    h = relabelled(g, {e: new}, [{"kind": "by hand"}])
    labels = list(g.labels)
    labels[e] = new
    built = LCG(g.names, g.sources, g.targets, labels, g.inputs, g.outputs, values=g.values,
                      ops=g.ops, injections=({"kind": "by hand"},))
    assert h.labels == built.labels and h.injections == built.injections
    for field in ("names", "ops", "shapes", "dtypes", "inputs", "outputs"):
        assert getattr(h, field) == getattr(built, field)
    np.testing.assert_array_equal(h.sources, built.sources)
    np.testing.assert_array_equal(h.in_edges_ptr, built.in_edges_ptr)
    for a, b in zip(jacobian(h), jacobian(built)):
        np.testing.assert_array_equal(a, b)
    assert g.labels[e].kind == "mask" and g.injections == ()      # g itself is unchanged


def test_relabelled_checks_the_new_labels():
    g = small_graph()
    e = next(e for e, op in enumerate(g.labels) if op.kind == "mask")
    with pytest.raises(ValueError, match=r"maps \(3,\) -> \(3,\) but the vertices have shapes"):
        relabelled(g, {e: Diagonal(np.ones(3))})
    with pytest.raises(ValueError, match="carries the number 2.0"):
        relabelled(g, {e: 2.0})
    with pytest.raises(ValueError, match="does not exist"):
        relabelled(g, {g.n_edges: Diagonal(np.ones(2))})
    with pytest.raises(TypeError, match="takes an LCG"):
        relabelled("graph", {})


def test_memory_rules():
    x = np.ones((4, 3), np.float32)
    # a ReLU whose output is kept anyway (the next layer's activation) costs nothing
    g = trace(lambda W, V: (relu(x @ W) @ V).sum(), np.ones((3, 2), np.float32),
              np.ones((2, 2), np.float32))
    m = retained_memory(g)
    assert m.total == 4 * 3 * 4 + 4 * 2 * 4          # x and relu(x @ W), floats
    assert dict(zip([op.kind for op in g.labels], m.per_edge))["mask"] == 0
    # an array used by two edges is stored once
    g = trace(lambda a: (x * a + x * a * 2.0).sum(), np.ones((4, 3), np.float32))
    assert retained_memory(g).total == 48      # x, for both products; "* 2.0" keeps nothing
    # im2col columns are rebuilt from the image: the image is what is kept
    img = np.ones((2, 1, 6, 6), np.float32)
    g = trace(lambda w: conv2d(img, w, padding=1).sum(), np.ones((4, 1, 3, 3), np.float32))
    assert retained_memory(g).total == img.nbytes


def test_scalarize_of_a_hand_built_graph():
    g = LCG(["x", "y"], [0], [1], [Mask(np.array([True, False]))], [0], [1],
                  values=[np.ones(2), np.array([1.0, 0.0])])
    s = scalarize(g)
    assert s.names == ("x[0]", "x[1]", "y[0]", "y[1]") and s.n_edges == 1


def test_a_graph_of_1x1_blocks_is_the_graph_of_floats():
    """A scalar is an array of shape (): built from 1 x 1 Jacobian blocks, a graph
    of numbers is the very graph of float partials, and runs the float algebra."""
    from minirad import LCG, examples
    from minirad.graph import labels
    from minirad.graph.operators import OPERATORS, Dense
    for g in (examples.figure1(), examples.lecture(), examples.interleaved(3, 3)):
        blocks = [Dense(np.array([[p]]), (), ()) for p in g.partials.tolist()]
        v = LCG(g.names, g.sources, g.targets, blocks, g.inputs, g.outputs,
                values=[np.asarray(x) for x in g.values], ops=g.ops)
        assert v.same_as(g) and v.algebra is labels.FLOATS
        # the same recurrence over the block algebra costs the same: one multiplication per
        # edge, and gives the same numbers
        seeds = {x: 1.0 for x in g.inputs[:1]}
        scalar = labels.forward(g, seeds)
        block = labels.forward(g, seeds, algebra=OPERATORS, labels=list(blocks))
        assert (block.multiplications, block.additions) == (scalar.multiplications,
                                                            scalar.additions)
        for y in g.outputs:
            np.testing.assert_allclose(np.asarray(block.values[y]), scalar.values[y],
                                       rtol=1e-15)
