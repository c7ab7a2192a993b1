"""Issue 39: a graph that loads can be used. What a file (or a constructor) accepts can
be saved again, drawn, explored and its memory counted; what could not be is refused
when it is read, with a ValueError naming the field, not later by the function that
stumbles on it."""

import json

import numpy as np
import pytest

import minirad
from minirad import LCG, examples, load_graph, retained_memory, save_graph
from minirad.draw.explore import explore
from minirad.draw.render import render, save_drawing


def _rewritten(source, target, change):
    """The archive ``source`` with its manifest changed by ``change(manifest)``."""
    arrays = dict(np.load(source))
    manifest = json.loads(arrays["manifest"].tobytes().decode("utf-8"))
    change(manifest)
    arrays["manifest"] = np.frombuffer(json.dumps(manifest).encode("utf-8"), dtype=np.uint8)
    np.savez(target, **arrays)
    return target


def _retained_keys(manifest):
    return [kept for edge in manifest["edges"]
            for kept in edge["operator"]["params"].get("retained", [])]


@pytest.mark.parametrize("key", ["value:abc", "value:999999", "value:01", "value:-1",
                                 "value:٣", "value:", "value:0", "value:abc:sample:1",
                                 "value:999999:sample:1", "value:01:sample:1"])
@pytest.mark.parametrize("field", [0, 2], ids=["key", "source_key"])
def test_an_archive_whose_retained_value_key_names_no_vertex_is_refused(tmp_path, key, field):
    """``value:abc`` loaded, then retained_memory() and render failed (int('abc')); ``value:999999``
    loaded and changed the memory total. ``value:0`` names W1, a vertex of other bits.
    The oracle: the unchanged archive loads and counts what the traced graph counts."""
    g = examples.figure3()          # keeps value:1 (W2), value:3 (a1) and a mask from value:3
    path = save_graph(g, tmp_path / "g.npz")
    assert retained_memory(load_graph(path)).total == retained_memory(g).total
    keys = [kept[field] for kept in _retained_keys(json.loads(
        np.load(path)["manifest"].tobytes().decode("utf-8")))]
    assert any(isinstance(k, str) and k.startswith("value:") for k in keys)

    def change(manifest):
        for kept in _retained_keys(manifest):
            if isinstance(kept[field], str) and kept[field].startswith("value:"):
                kept[field] = key

    bad = _rewritten(path, tmp_path / "bad.npz", change)
    with pytest.raises(ValueError, match=r"is not a valid LCG archive: edges\[\d\]\.operator "
                                         r"keeps"):
        load_graph(bad)


@pytest.mark.parametrize("where", ["name", "op"])
def test_a_lone_surrogate_is_refused_where_the_graph_is_made(tmp_path, where):
    """Issue 39: a vertex name holding a lone surrogate (JSON's \\ud800) loaded, then explore
    and render failed with UnicodeEncodeError. Now the file, and the constructor, refuse
    it; the same graph with a valid name (the oracle) saves, draws and explores."""
    good = LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=["y"])
    path = save_graph(good, tmp_path / "g.json")
    doc = json.loads(open(path, encoding="utf-8").read())
    doc["names" if where == "name" else "ops"][0] = "x\ud800"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")     # ASCII, with the escape \\ud800
    with pytest.raises(ValueError, match="lone surrogate"):
        load_graph(bad)
    with pytest.raises(ValueError, match="vertex name 'x\\\\ud800' holds a lone surrogate"):
        LCG.from_edges([("x\ud800", "y", 2.0)], inputs=["x\ud800"], outputs=["y"])
    for name in ("x\u00e9", "x\U0001F600"):     # valid non-ASCII text is fine everywhere
        g = LCG.from_edges([(name, "y", 2.0)], inputs=[name], outputs=["y"])
        assert load_graph(save_graph(g, tmp_path / "ok.json")).names[0] == name
        explore(g).save(tmp_path / "ok.html")
        save_drawing(render(g), tmp_path / "ok.dot")
        assert minirad.jacobian(g).tolist() == [[2.0]]


@pytest.mark.parametrize("key", ["value:abc", "value:", "value:-1", "value:٣", "value:7:x"])
def test_a_constructed_graph_keeping_a_key_that_names_no_vertex_counts_its_memory(key):
    """The constructor accepts any key (a label built by hand): retained_memory() named the
    kept arrays by int(key) and failed with "invalid literal for int()". The oracle, by
    hand: two edges keeping one 64-bit array under one key store it once, 8 bytes."""
    from minirad.graph.operators import Dense, Retained

    labels = [Dense(np.ones((2, 2)), (2,), (2,), retained=(Retained(key, 64),))
              for _ in range(2)]
    g = LCG(["x", "h", "y"], [0, 1], [1, 2], labels, [0], [2], values=[np.ones(2)] * 3)
    m = retained_memory(g)
    assert m.total == 8.0 and m.per_edge == (8.0, 0.0)
    assert m.notes[1] == f"{key} shared"       # no vertex 7 among three: the key as it is
    assert render(g).source
