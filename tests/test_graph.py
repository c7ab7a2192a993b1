"""The LCG object: construction, validation, queries, I/O, Wengert list."""

import json
import math
import os
import re

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
@st.composite
def random_graphs(draw):
    n_in = draw(st.integers(1, 3))
    n_mid = draw(st.integers(0, 8))
    n_out = draw(st.integers(1, 3))
    density = draw(st.floats(0.1, 0.9))
    seed = draw(st.integers(0, 2**32 - 1))
    g = examples.random_dag(n_in, n_mid, n_out, density, rng=seed)
    finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
    partials = draw(st.lists(finite, min_size=g.n_edges, max_size=g.n_edges))
    values = draw(st.lists(st.one_of(finite, st.just(math.nan)),
                           min_size=g.n_vertices, max_size=g.n_vertices))
    ops = draw(st.lists(st.text(max_size=6), min_size=g.n_vertices, max_size=g.n_vertices))
    return LCG(g.names, g.sources, g.targets, partials, g.inputs, g.outputs, values, ops)


@settings(max_examples=60, deadline=None)
@given(random_graphs())
def test_json_round_trip_is_exact(tmp_path_factory, g):
    path = tmp_path_factory.mktemp("json") / "g.json"
    g.to_json(path)
    h = LCG.from_json(path)
    assert h.same_as(g)
    # bit-for-bit floats, not merely close ones
    assert h.partials.tobytes() == g.partials.tobytes()


@settings(max_examples=60, deadline=None)
@given(random_graphs())
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


# --------------------------------------------------------- malformed files
def write(tmp_path, text):
    path = tmp_path / "g.json"
    path.write_text(text)
    return path


def good_document():
    return examples.figure1().to_dict()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("edges"), r"missing field\(s\) \['edges'\]"),
    (lambda d: d.update(format="something"), "not an LCG file"),
    (lambda d: d.update(version=99), "unsupported LCG schema version 99"),
    (lambda d: d["edges"]["partial"].__setitem__(0, "big"), r"edges.partial'\[0\] is \"big\""),
    (lambda d: d["names"].__setitem__(0, 3), r"'names'\[0\] is 3"),
    (lambda d: d.update(inputs="x1"), "'inputs' must be a list"),
    (lambda d: d["edges"]["target"].__setitem__(0, 99), "unknown vertex"),
    (lambda d: d["edges"]["source"].__setitem__(0, d["edges"]["target"][-1]), "cycle|successor"),
    (lambda d: d["values"].pop(), "equal lengths"),
])
def test_from_json_rejects_malformed(tmp_path, mutate, message):
    doc = good_document()
    mutate(doc)
    with pytest.raises(ValueError, match=message):
        LCG.from_json(write(tmp_path, json.dumps(doc)))


def test_from_json_rejects_truncated_and_non_json(tmp_path):
    text = json.dumps(good_document())
    with pytest.raises(ValueError, match="invalid JSON"):
        LCG.from_json(write(tmp_path, text[: len(text) // 2]))
    with pytest.raises(ValueError, match="not an LCG file"):
        LCG.from_json(write(tmp_path, "[1, 2, 3]"))
    with pytest.raises(ValueError, match="NaN is not allowed"):
        LCG.from_json(write(tmp_path, text.replace("1.0", "NaN", 1)))
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="not an LCG file"):
        LCG.from_json(path)


def test_failed_save_leaves_nothing_behind(tmp_path, monkeypatch):
    g = examples.figure1()
    target = tmp_path / "g.json"

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        g.to_json(target)
    assert list(tmp_path.iterdir()) == []


def test_save_overwrites_atomically(tmp_path):
    target = tmp_path / "g.json"
    examples.lecture().to_json(target)
    examples.figure1().to_json(target)
    assert LCG.from_json(target).same_as(examples.figure1())
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]


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


def test_large_graph_serialises_without_recursion(tmp_path):
    # a chain of 10^6 vertices: nothing in construction or I/O may recurse per vertex
    n = 1_000_000
    g = LCG([f"v{i}" for i in range(n)], np.arange(n - 1), np.arange(1, n),
            np.full(n - 1, 0.5), [0], [n - 1])
    g.to_json(tmp_path / "chain.json")
    h = LCG.from_json(tmp_path / "chain.json")
    assert h.n_edges == n - 1 and h.partial(n - 2, n - 1) == 0.5


def test_saved_file_is_an_ordinary_file(tmp_path):
    # the temporary file behind an atomic save is private; the saved one must not be
    old = os.umask(0o022)
    try:
        examples.figure1().to_json(tmp_path / "g.json")
    finally:
        os.umask(old)
    assert (tmp_path / "g.json").stat().st_mode & 0o777 == 0o644


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


def test_unknown_json_field_is_refused(tmp_path):
    doc = good_document()
    doc["comment"] = "hello"
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['comment'\]"):
        LCG.from_json(write(tmp_path, json.dumps(doc)))


def test_saving_into_a_missing_folder_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot save .*nowhere/g.json: the folder"):
        examples.figure1().to_json(tmp_path / "nowhere" / "g.json")


@pytest.mark.parametrize("name", ["count_paths", "path_jacobian", "forward_sweep", "jvp",
                                  "sample_paths", "sampled_jacobians", "path_sampling_variance",
                                  "eliminate", "render"])
def test_functions_over_an_lcg_refuse_anything_else(name):
    import minirad

    with pytest.raises(TypeError, match="LCG"):
        getattr(minirad, name)("not a graph")


# ------------------------------------------------------------ hostile input
# Every one of these raised OverflowError or RecursionError, or was accepted, before.
def _mutated(mutate):
    doc = good_document()
    mutate(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("text, message", [
    (_mutated(lambda d: d["edges"]["source"].__setitem__(0, 10**30)),
     "edge source #0 is an integer of about 31 digits, which names an unknown vertex"),
    (_mutated(lambda d: d["edges"]["target"].__setitem__(1, 2**63)),
     "edge target #1 is 9223372036854775808, which names an unknown vertex; valid vertex "
     "numbers are 0..6"),
    (_mutated(lambda d: d["inputs"].__setitem__(0, 2**63)), "input #0 is 9223372036854775808"),
    (_mutated(lambda d: d["outputs"].__setitem__(0, -1)), "output #0 is -1, which names"),
    (_mutated(lambda d: d["edges"]["partial"].__setitem__(2, 10**400)),
     "label #2 is an integer of about 401 digits, too large for a float64"),
    (_mutated(lambda d: d["values"].__setitem__(0, -(10**400))),
     "value #0 is an integer of about 401 digits, too large for a float64"),
    (_mutated(lambda d: d["values"].__setitem__(0, "__HUGE__")).replace('"__HUGE__"', "9" * 5001),
     "an integer of 5001 digits is too large for any field"),  # past Python's 4300-digit limit
    (_mutated(lambda d: d["values"].__setitem__(0, "__HUGE__")).replace('"__HUGE__"', "1e400"),
     "the number 1e400 is too large for a float64 .* every number must be finite"),
    (_mutated(lambda d: d["edges"]["partial"].__setitem__(0, "__HUGE__")).replace(
        '"__HUGE__"', "-2.5e308"), "the number -2.5e308 is too large"),
    (_mutated(lambda d: d.update(version=True)), "unsupported LCG schema version true"),
    (_mutated(lambda d: d.update(version=1.0)), "unsupported LCG schema version 1.0"),
    ("[" * 100_000, "nested too deeply"),
    ('{"format": "minirad.lcg", "version": 1, "names": ' + "[" * 100_000, "nested too deeply"),
    ('{"a":' * 100_000, "nested too deeply"),
], ids=["source 10**30", "target 2**63", "input 2**63", "output -1", "partial 10**400",
        "value -10**400", "5001 digits", "1e400", "-2.5e308", "version true", "version 1.0",
        "100000 [", "names 100000 [", "100000 {"])
def test_hostile_json_is_refused_with_a_clear_value_error(tmp_path, text, message):
    with pytest.raises(ValueError, match=message) as caught:
        LCG.from_json(write(tmp_path, text))
    assert type(caught.value) is ValueError and len(str(caught.value)) < 500


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


_HOSTILE_TOKENS = ["1e400", "-1e400", "true", "false", "null", "-1", "0", "0.5", "1.0",
                   str(2**63), str(10**30), str(10**400), '"x"', '""', "[]", "{}", "[[0]]",
                   '{"a": 1}', "NaN", "Infinity", "[" * 50, "]", "}", ",", ":", "\\u0000",
                   '"\\ud800"', "\x00", "\u00e9"]


def _mutate_text(text: str, rng) -> str:
    """One random edit of a JSON text: replace a number or string token, or cut,
    duplicate or insert a stretch of characters."""
    tokens = list(re.finditer(r'-?\d+(\.\d+)?([eE][-+]?\d+)?|"[^"]*"|true|false|null', text))
    choice = rng.integers(5)
    if choice <= 1 and tokens:
        token = tokens[rng.integers(len(tokens))]
        new = _HOSTILE_TOKENS[rng.integers(len(_HOSTILE_TOKENS))]
        return text[:token.start()] + new + text[token.end():]
    i, j = sorted(rng.integers(0, len(text) + 1, size=2))
    if choice == 2:
        return text[:i] + text[j:]
    if choice == 3:
        return text[:j] + text[i:j] + text[j:]
    return text[:i] + _HOSTILE_TOKENS[rng.integers(len(_HOSTILE_TOKENS))] + text[i:]


def test_the_loader_survives_thousands_of_mutated_files(tmp_path):
    # a seeded mutation loop (deterministic, ~2 s): only ValueError or TypeError may escape,
    # and a file that loads must save and load again unchanged
    rng = np.random.default_rng(2024)
    texts = [json.dumps(g.to_dict()) for g in
             (examples.figure1(), examples.lecture(), examples.two_outputs())]
    path = tmp_path / "g.json"
    loaded = 0
    for trial in range(2000):
        text = texts[trial % len(texts)]
        for _ in range(1 + rng.integers(3)):
            text = _mutate_text(text, rng)
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        try:
            g = LCG.from_json(path)
        except (ValueError, TypeError):
            continue
        loaded += 1
        g.to_json(tmp_path / "again.json")
        assert LCG.from_json(tmp_path / "again.json").same_as(g)
    assert 0 < loaded < 2000  # the mutations both break files and keep some loadable


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
