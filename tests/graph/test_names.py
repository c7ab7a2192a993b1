"""VertexNames and VertexOps: the lazily written vertex names and templates of
traced graphs behave as the tuples of the same strings do."""

import pickle

import numpy as np
import pytest

from minirad import load_graph, save_graph, trace
from minirad import ops as ops_module
from minirad.graph.names import VertexNames, VertexOps


def test_vertex_names_behave_as_the_tuple_of_their_names():
    names = VertexNames(6, {0: "x", 1: "v1", 5: "y", 3: "v4'"})
    spelled = ("x", "v1", "v2", "v4'", "v4", "y")  # written out by hand
    assert tuple(names) == spelled and list(names) == list(spelled)
    assert names == spelled and spelled == names and names == list(spelled)
    assert names != spelled[:-1] and names != ("x",) * 6
    assert hash(names) == hash(spelled) and repr(names) == repr(spelled)
    assert len(names) == 6
    for i in range(-6, 6):
        assert names[i] == spelled[i]
    assert names[np.int64(4)] == "v4"
    assert names[1:5] == spelled[1:5] and names[::-2] == spelled[::-2]
    for name in spelled:
        assert name in names and names.index(name) == spelled.index(name)
        assert names.find(name) == spelled.index(name) and names.count(name) == 1
    for absent in ("v3", "v6", "v04", "z", "v-1", 3):
        assert absent not in names and names.find(absent) == -1 and names.count(absent) == 0
    with pytest.raises(ValueError, match="not in the vertex names"):
        names.index("v3")
    with pytest.raises(IndexError, match="out of range"):
        names[6]
    with pytest.raises(ValueError, match="outside 0..1"):
        VertexNames(2, {2: "x"})
    assert VertexNames(3, {1: "v1"}) == VertexNames(3, {}) == ("v0", "v1", "v2")


def test_a_traced_graph_keeps_its_names_lazy_and_looks_them_up_by_name(tmp_path):
    g = trace(lambda v2, b: v2 * b + b, 2.0, 3.0)
    assert isinstance(g.names, VertexNames)
    # the parameter v2 keeps its name; vertex 2 (v2 * b) is primed instead
    assert g.names == ("v2", "b", "v2'", "y")
    assert [g.index(name) for name in g.names] == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="unknown vertex 'v9'"):
        g.index("v9")
    h = load_graph(save_graph(g, tmp_path / "g.json"))
    assert h.same_as(g) and g.same_as(h) and tuple(h.names) == tuple(g.names)


def test_vertex_ops_behave_as_the_tuple_of_their_templates():
    table = ("input", "{0} + {1}", "0.5 * {0}", "sin({0})")
    ops = VertexOps(table, np.array([0, 0, 1, 2, 3, 2]))
    spelled = ("input", "input", "{0} + {1}", "0.5 * {0}", "sin({0})", "0.5 * {0}")
    assert tuple(ops) == spelled and list(ops) == list(spelled) and len(ops) == 6
    assert ops == spelled and spelled == ops and ops == list(spelled)
    assert ops == VertexOps(("input", "{0} + {1}", "0.5 * {0}", "sin({0})", "unused"),
                            [0, 0, 1, 2, 3, 2])
    assert ops != spelled[:-1] and ops != ("input",) * 6
    assert hash(ops) == hash(spelled) and repr(ops) == repr(spelled)
    for i in range(-6, 6):
        assert ops[i] == spelled[i]
    assert ops[np.int64(3)] == "0.5 * {0}"
    assert ops[1:5] == spelled[1:5] and ops[::-2] == spelled[::-2]
    assert ops.index("sin({0})") == 4 and ops.count("0.5 * {0}") == 2
    with pytest.raises(IndexError, match="out of range"):
        ops[6]
    with pytest.raises(ValueError, match="must lie in 0..3"):
        VertexOps(table, [0, 4])
    with pytest.raises(TypeError, match="1-D integer array"):
        VertexOps(table, [0.0, 1.0])


def test_a_traced_graph_keeps_its_templates_lazy(tmp_path):
    g = trace(lambda x, y: (0.5 * x * y + ops_module.sin(x), x * x), 2.0, 3.0)
    assert isinstance(g.ops, VertexOps)
    assert g.ops == ("input", "input", "0.5 * {0}", "{0} * {1}", "sin({0})", "{0} + {1}",
                     "{0} * {0}")
    h = load_graph(save_graph(g, tmp_path / "g.json"))
    assert isinstance(h.ops, tuple) and h.ops == g.ops and g.same_as(h) and h.same_as(g)
    # worked out only when read, and pickled as the templates themselves
    program = lambda x, y: (0.5 * x * y + ops_module.sin(x), x * x)  # noqa: E731
    unread = trace(program, 2.0, 3.0).ops
    assert len(unread) == len(g.ops)
    assert pickle.loads(pickle.dumps(unread)) == g.ops and unread == g.ops
