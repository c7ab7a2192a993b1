"""The LCG object: construction, validation, queries, I/O, Wengert list."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from oracles import random_lcgs

from minirad import LCG, examples


def slide_graph():
    # a small graph typed in by hand, deliberately not in topological order
    return LCG.from_edges(
        [("b", "y", 3.0), ("x1", "a", 2.0), ("a", "b", -1.0), ("x2", "b", 0.5), ("x1", "y", 1.0)],
        inputs=["x1", "x2"], outputs=["y"], values={"x1": 1.0, "x2": 4.0})


def test_from_edges_numbers_vertices_topologically():
    g = slide_graph()
    assert all(g.index(u) < g.index(v) for u, v, _ in g.edges())
    assert [g.name(v) for v in g.inputs] == ["x1", "x2"]
    assert [g.name(v) for v in g.outputs] == ["y"]
    assert {g.name(v) for v in g.intermediates} == {"a", "b"}
    assert g.n_vertices == 5 and g.n_edges == 5 and len(g) == 5


def test_queries():
    g = slide_graph()
    assert g.partial("a", "b") == -1.0
    assert g.partial(g.index("x2"), "b") == 0.5
    assert sorted(g.name(v) for v in g.predecessors("b")) == ["a", "x2"]
    assert sorted(g.name(v) for v in g.successors("x1")) == ["a", "y"]
    assert g.kind("x1") == "input" and g.kind("a") == "intermediate" and g.kind("y") == "output"
    assert g.value("x2") == 4.0 and math.isnan(g.value("a"))
    assert g.in_degree("b") == 2 and g.out_degree("x1") == 2
    assert g.has_edge("x1", "y") and not g.has_edge("x2", "y")
    assert repr(g) == "LCG(5 vertices: 2 inputs, 2 intermediates, 1 output; 5 edges)"


def test_integer_vertices_are_named():
    g = LCG.from_edges([(0, 2, 1.5), (1, 2, 2.0), (2, 3, 1.0)], inputs=[0, 1], outputs=[3])
    assert g.names == ("v0", "v1", "v2", "v3")
    assert g.partial("v0", "v2") == 1.5


def test_operand_order_is_kept():
    g = examples.lecture()
    # v6 = v5 - v4 in the lecture: the first operand is the sum, the second the sine
    y = g.index("y")
    first, second = g.predecessors(y)
    assert g.partial(first, y) == 1.0 and g.partial(second, y) == -1.0
    assert g.op(y) == "{0} - {1}"


@pytest.mark.parametrize("edges, inputs, outputs, message", [
    ([("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 1.0)], [], [], "directed cycle"),
    ([("x", "x", 1.0)], [], [], "directed cycle: x -> x"),
    ([("x", "y", float("nan"))], ["x"], ["y"], "partial on edge x -> y is nan"),
    ([("x", "y", float("inf"))], ["x"], ["y"], "must be finite"),
    ([("a", "x", 1.0), ("x", "y", 1.0)], ["x"], ["y"], "input x has a predecessor (a)"),
    ([("x", "y", 1.0), ("y", "z", 1.0)], ["x"], ["y"], "output y has a successor (z)"),
    ([("x", "y", 1.0), ("x", "y", 2.0)], ["x"], ["y"], "duplicate edge x -> y"),
    ([("x", "y", "1.0")], ["x"], ["y"], "must be a real number"),
    ([("x", "y")], ["x"], ["y"], "must be a triple"),
    ([("x", "y", 1.0)], ["x"], ["x"], "both an input and an output"),
])
def test_from_edges_rejects(edges, inputs, outputs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LCG.from_edges(edges, inputs=inputs, outputs=outputs)


def test_edge_to_unknown_vertex():
    with pytest.raises(ValueError, match="unknown vertex 'yy'"):
        LCG.from_edges([("x", "yy", 1.0)], inputs=["x"], outputs=["y"], vertices=["x", "y"])
    with pytest.raises(ValueError, match="names an unknown vertex"):
        LCG(["x", "y"], [0], [5], [1.0], [0], [1])


def test_unknown_vertex_queries():
    g = slide_graph()
    with pytest.raises(ValueError, match="unknown vertex 'q'"):
        g.index("q")
    with pytest.raises(ValueError, match="valid vertex numbers are 0..4"):
        g.predecessors(7)
    with pytest.raises(ValueError, match="no edge x2 -> y"):
        g.partial("x2", "y")


def test_graph_is_immutable():
    g = slide_graph()
    with pytest.raises(ValueError):
        g.partials[0] = 5.0


# ------------------------------------------------------------ round trips
@settings(max_examples=60, deadline=None)
@given(random_lcgs())
def test_networkx_round_trip_is_exact(g):
    G = g.to_networkx()
    assert G.number_of_nodes() == g.n_vertices and G.number_of_edges() == g.n_edges
    h = LCG.from_networkx(G)
    assert h.same_as(g)


def test_from_networkx_defaults_to_sources_and_sinks():
    G = nx.DiGraph()
    G.add_edge("x", "h", partial=2.0)
    G.add_edge("h", "y", partial=3.0)
    g = LCG.from_networkx(G)
    assert [g.name(v) for v in g.inputs] == ["x"] and [g.name(v) for v in g.outputs] == ["y"]
    G.add_edge("y", "x", partial=1.0)
    with pytest.raises(ValueError, match="directed cycle"):
        LCG.from_networkx(G, inputs=[], outputs=[])
    H = nx.DiGraph()
    H.add_edge("x", "y")
    with pytest.raises(ValueError, match="has neither 'partial' nor 'label'"):
        LCG.from_networkx(H)


# ---------------------------------------------------------------- Wengert
def test_wengert_lists_every_vertex_with_its_partials():
    g = slide_graph()
    lines = g.wengert().splitlines()
    assert len(lines) == g.n_vertices
    assert lines[0].startswith("v0 = x1") and "= 1.0" in lines[0]
    b = g.index("b")
    line = lines[b]
    assert line.startswith(f"v{b} = f(") and "(b)" in line and "= ?" in line
    assert f"dv{b}/dv{g.index('a')} = -1.0" in line and f"dv{b}/dv{g.index('x2')} = 0.5" in line
    assert lines[-1].endswith("(output y)")


def test_inputs_given_as_a_string_are_refused():
    with pytest.raises(ValueError, match=r"inputs must be a list of vertex names, e.g. \['x1'\]"):
        LCG.from_edges([("x1", "y", 1.0)], inputs="x1", outputs=["y"])


def test_a_misspelled_input_or_output_is_refused():
    with pytest.raises(ValueError, match=r"input 'z' appears in no edge; the vertices in edges "
                                         r"are \['x', 'y'\]"):
        LCG.from_edges([("x", "y", 1.0)], inputs=["z"], outputs=["y"])
    with pytest.raises(ValueError, match="output 'w' appears in no edge"):
        LCG.from_edges([("x", "y", 1.0)], inputs=["x"], outputs=["w"])
    # declared on purpose, an isolated output is fine
    g = LCG.from_edges([("x", "a", 1.0)], inputs=["x"], outputs=["y"], vertices=["x", "a", "y"])
    assert g.predecessors("y") == ()


def test_empty_graph_has_an_empty_wengert_list():
    assert LCG.from_edges([], inputs=[], outputs=[]).wengert() == ""


@pytest.mark.parametrize("name", ["count_paths", "bauer", "forward_sweep", "jvp",
                                  "sample_paths", "sampled_jacobians", "path_sampling_variance",
                                  "eliminate", "render"])
def test_functions_over_an_lcg_refuse_anything_else(name):
    import minirad

    with pytest.raises(TypeError, match="LCG"):
        getattr(minirad, name)("not a graph")


def test_float_and_out_of_range_vertex_ids_are_refused_not_converted():
    base = dict(names=["x", "y"], sources=[0], targets=[1], labels=[1.0], inputs=[0],
                outputs=[1])
    with pytest.raises(TypeError, match=r"edge source #0 is 0.7 \(float\); vertex numbers are "
                                        r"integers 0..1"):
        LCG(**dict(base, sources=[0.7]))
    with pytest.raises(TypeError, match=r"input #0 is 0.0 \(float\)"):
        LCG(**dict(base, inputs=np.array([0.0])))
    with pytest.raises(TypeError, match=r"output #0 is True \(bool\)"):
        LCG(**dict(base, outputs=[True]))
    with pytest.raises(ValueError, match="edge target #0 is 18446744073709551615, which names an "
                                         "unknown vertex"):
        LCG(**dict(base, targets=np.array([2**64 - 1], dtype=np.uint64)))
    with pytest.raises(ValueError, match="input #0 is 18446744073709551615"):
        LCG(**dict(base, inputs=[np.uint64(2**64 - 1)]))
    with pytest.raises(TypeError, match=r"edge #0 \(x -> y\) carries a str; a label is a real"):
        LCG(**dict(base, labels=["1.5"]))
    with pytest.raises(ValueError, match="the value of vertex y is inf"):
        LCG(**dict(base, values=[0.0, math.inf]))
    # integers of any integer type are fine, and a NaN value means "unknown"
    g = LCG(**dict(base, sources=np.array([0], dtype=np.uint8), inputs=[np.int32(0)],
                   values=[math.nan, 2]))
    assert g.sources.dtype == np.int64 and g.inputs == (0,) and g.value("y") == 2.0


def test_from_edges_refuses_huge_numbers_naming_the_edge_or_vertex():
    with pytest.raises(ValueError, match="partial on edge x -> y is an integer of about 401 "
                                         "digits, too large for a float64"):
        LCG.from_edges([("x", "y", 10**400)], inputs=["x"], outputs=["y"])
    with pytest.raises(ValueError, match="value #0 is an integer of about 401 digits"):
        LCG.from_edges([("x", "y", 1.0)], inputs=["x"], outputs=["y"], values={"x": 10**400})


def test_a_long_cycle_is_reported_briefly_without_recursion():
    # far past Python's recursion limit; how long detection takes is the bench's business
    n = 50_000
    names = [f"v{i}" for i in range(n)]
    with pytest.raises(ValueError) as caught:
        LCG(names, np.arange(n), (np.arange(n) + 1) % n, np.ones(n), [], [])
    assert str(caught.value) == ("the edges contain a directed cycle: v0 -> v1 -> v2 -> v3 -> "
                                 "v4 -> ... -> v49999 -> v0 (a cycle of 50000 vertices); an LCG "
                                 "must be acyclic")


def test_the_cycle_found_is_a_real_cycle():
    # a DAG part feeding a 3-cycle and a separate 2-cycle: whichever is shown must be a cycle
    edges = [("x", "a", 1.0), ("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 1.0),
             ("p", "q", 1.0), ("q", "p", 1.0), ("c", "y", 1.0)]
    with pytest.raises(ValueError, match="directed cycle: ") as caught:
        LCG.from_edges(edges, inputs=["x"], outputs=["y"])
    shown = str(caught.value).split(": ")[1].split(";")[0].split(" -> ")
    assert shown[0] == shown[-1]
    pairs = {(u, v) for u, v, _ in edges}
    assert all((u, v) in pairs for u, v in zip(shown, shown[1:]))


def test_from_networkx_names_the_node_with_a_bad_value():
    G = nx.DiGraph()
    G.add_node("x", value="abc")
    G.add_edge("x", "y", partial=1.0)
    with pytest.raises(ValueError, match=r"node 'x' has attribute 'value' = \"abc\" \(str\); a "
                                         r"vertex's primal value must be a real number"):
        LCG.from_networkx(G)
    G.nodes["x"]["value"] = 10**400
    with pytest.raises(ValueError, match="node 'x' has attribute 'value' = an integer of about"):
        LCG.from_networkx(G)
    G.nodes["x"]["value"] = None  # as good as absent
    assert math.isnan(LCG.from_networkx(G).value("x"))


def test_from_networkx_names_a_bad_order_attribute():
    G = examples.figure1().to_networkx()
    G.nodes["v3"]["index"] = "third"
    with pytest.raises(ValueError, match=r"node 'v3' has attribute 'index' = \"third\"; it must "
                                         r"be an integer"):
        LCG.from_networkx(G)
    G = examples.figure1().to_networkx()
    G.edges["x1", "v2"]["operand"] = 0.5
    with pytest.raises(ValueError, match=r"edge \('x1', 'v2'\) has attribute 'operand' = 0.5"):
        LCG.from_networkx(G)


@pytest.mark.parametrize("width, depth, degree", [(40, 3, 40), (3, 30, 2)])
def test_in_edge_pointers_count_the_edges_before_each_vertex(width, depth, degree):
    # (40, 3, 40): 40 in-edges per vertex, found by binary search; (3, 30, 2):
    # 2 per vertex, found by counting; both against a count by hand
    g = examples.random_layered(width, depth, degree, rng=1)
    assert (g.n_edges > 8 * g.n_vertices) == (degree == 40)
    targets = g.targets.tolist()
    by_hand = [sum(t < v for t in targets) for v in range(g.n_vertices + 1)]
    assert g.in_edges_ptr.tolist() == by_hand
    assert [g.in_degree(v) for v in range(g.n_vertices)] == [targets.count(v) for v in
                                                              range(g.n_vertices)]
