"""The one file format: graphs of numbers as JSON text, graphs with arrays as an .npz
archive; exact round trips, hostile files refused with ValueError and nothing else,
sizes checked before anything is allocated, atomic writes."""

import io
import json
import math
import os
import re
import struct
import zipfile
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import random_lcgs

from minirad import LCG, examples, load_graph, save_graph, trace
from minirad.graph.files import MAX_RATIO
from minirad.graph.lcg import relabelled
from minirad.graph.memory import retained_memory
from minirad.graph.operators import Added, Dense, Identity, ProjectedMatMul
from minirad.randomized.injection import inject_edge, inject_vertex, sample_activations
from minirad.tracing import name
from minirad.tracing.ops import relu
from minirad.tracing.rules import avg_pool2d, conv2d, matmul, softmax, softmax_cross_entropy


def full_jacobian(g):
    """The Jacobian every entry at once (the oracle of a round trip: the loaded
    operators must apply as the saved ones did)."""
    import minirad

    return minirad.jacobian(g)


# ------------------------------------------------------------------ graphs
def mlp_graph():
    X = np.random.default_rng(0).standard_normal((4, 3))
    return trace(lambda W, b: softmax_cross_entropy(
        name(relu(X @ W + b), "a") @ np.ones((2, 3)), np.array([0, 1, 2, 0])),
        np.random.default_rng(1).standard_normal((3, 2)), np.zeros(2))


def every_kind_graph():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 1, 4, 4))

    def f(w, v):
        c = avg_pool2d(conv2d(x, w, padding=1), 2)                  # index (padded), outer
        s = softmax(c.reshape(1, -1) * 2.0, axis=1)                 # reshape, softmax
        t = np.concatenate([s[0], np.exp(v)[:, 0], v.T.sum(axis=0)])   # concatenate, transpose
        return (np.maximum(t, 0.1) / (1.0 + v.sum() ** 2)).mean()   # mask, broadcast, pow
    return trace(f, rng.standard_normal((2, 1, 3, 3)), rng.standard_normal((3, 1)) * 0.1)


def solve_graph():
    A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    return trace(lambda A, b: (np.linalg.solve(A, b) ** 2).sum(), A, np.ones(3))


def sparse_graph():
    import scipy.sparse as sp

    A = sp.random(5, 5, density=0.4, format="csr", random_state=1)
    return trace(lambda x: np.tanh(matmul(A, x)).sum(), np.ones(5))


def injected_graph():
    X = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    g = trace(lambda W, V: (relu(X @ W) @ V).sum(),
                     np.ones((6, 3), np.float32), np.ones((3, 2), np.float32))
    g = sample_activations(g, 2, rng=0)
    return inject_vertex(g, g.names[g.n_vertices - 2], 1, "rademacher", rng=1)


def projected_graph():
    X = np.random.default_rng(4).standard_normal((3, 5))
    g = trace(lambda W: relu(X @ W).sum(), np.ones((5, 2)))
    return inject_edge(g, next(e for e, op in enumerate(g.labels) if op.kind == "outer"), 2,
                       "rademacher", rng=0)


def float32_sums_graph():
    return trace(lambda a: (a * a + a @ np.ones((3, 3), np.float32) - a).sum(),
                        np.ones(3, np.float32))


def hand_labelled_graph():
    """A projected product (as the NN study builds it) and a sum of two blocks (as
    elimination makes them): labels no tracer writes."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3, 5))
    g = trace(lambda W: relu(X @ W).sum(), np.ones((5, 2)))
    kinds = [op.kind for op in g.labels]
    outer, mask = g.labels[kinds.index("outer")], g.labels[kinds.index("mask")]
    projected = ProjectedMatMul.project(outer.stored, rng.standard_normal((5, 2)), outer.side,
                                        outer.in_shape, scale=0.5)
    dense = Dense(rng.standard_normal((6, 6)), mask.out_shape, mask.in_shape)
    return relabelled(g, {kinds.index("outer"): projected,
                          kinds.index("mask"): Added([mask, dense])})


ARRAY_GRAPHS = {"mlp": mlp_graph, "every kind": every_kind_graph, "solve": solve_graph,
                "sparse": sparse_graph, "injected": injected_graph,
                "projected": projected_graph, "float32 sums": float32_sums_graph,
                "hand-labelled": hand_labelled_graph}


def numbers_with_injections_and_float32():
    """A graph of numbers with float32 values and an injection
    record: what version 1 of the text form cannot say."""
    g = examples.figure1()
    return LCG(g.names, g.sources, g.targets, g.partials, g.inputs, g.outputs,
               values=g.values.astype(np.float32), ops=g.ops, dtypes=[np.float32] * len(g),
               injections=[{"kind": "vertex", "at": "v3", "k": 1}])


# ------------------------------------------------------------- round trips
@settings(max_examples=60, deadline=None)
@given(random_lcgs(), st.sampled_from(["g.json", "g.npz"]))
def test_a_graph_of_numbers_round_trips_exactly_in_both_forms(tmp_path_factory, g, file):
    path = tmp_path_factory.mktemp("files") / file
    h = load_graph(save_graph(g, path))
    assert h.same_as(g)
    # bit-for-bit floats, not merely close ones
    assert h.partials.tobytes() == g.partials.tobytes()


def test_a_graph_of_numbers_is_plain_json_text_of_version_1(tmp_path):
    g = examples.lecture()
    path = save_graph(g, tmp_path / "g.json")
    doc = json.loads(open(path, encoding="utf-8").read())
    assert (doc["format"], doc["version"]) == ("minirad.lcg", 1)
    assert doc["names"] == list(g.names) and doc["edges"]["partial"] == g.partials.tolist()
    # what a 0.1 file looks like, written by hand: it still loads
    old = tmp_path / "old.json"
    old.write_text(json.dumps({
        "format": "minirad.lcg", "version": 1, "names": ["x", "y"], "ops": ["input", "2*{0}"],
        "values": [1.5, None], "inputs": [0], "outputs": [1],
        "edges": {"source": [0], "target": [1], "partial": [2.0]}}))
    h = load_graph(old)
    assert h.label("x", "y") == 2.0 and h.value("x") == 1.5 and math.isnan(h.value("y"))


def test_version_2_keeps_injections_and_dtypes_of_numbers(tmp_path):
    g = numbers_with_injections_and_float32()
    assert g.algebra is examples.figure1().algebra and g.injections
    doc = json.loads(open(save_graph(g, tmp_path / "g.json"), encoding="utf-8").read())
    assert doc["version"] == 2 and doc["dtypes"][0] == "float32"
    h = load_graph(tmp_path / "g.json")
    assert h.same_as(g) and h.injections == g.injections and h.dtypes == g.dtypes
    doc["version"] = 1  # version 1 has no such columns
    (tmp_path / "v1.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['dtypes', 'injections'\]"):
        load_graph(tmp_path / "v1.json")


@pytest.mark.parametrize("build", ARRAY_GRAPHS.values(), ids=list(ARRAY_GRAPHS))
def test_array_graphs_round_trip(tmp_path, build):
    g = build()
    h = load_graph(save_graph(g, tmp_path / "g.npz"))
    assert h.same_as(g)
    assert h.dtypes == g.dtypes and h.injections == g.injections
    assert [type(op) for op in h.labels] == [type(op) for op in g.labels]
    np.testing.assert_array_equal(full_jacobian(h), full_jacobian(g))
    kept, before = retained_memory(h), retained_memory(g)
    assert (kept.per_edge, kept.notes) == (before.per_edge, before.notes)


def test_the_graphs_saved_hold_every_kind_of_label():
    kinds = set()
    for build in ARRAY_GRAPHS.values():
        labels = list(build().labels)
        while labels:
            op = labels.pop()
            kinds.add(getattr(op, "kind", "number"))
            labels += list(getattr(op, "parts", ())) + list(getattr(op, "terms", ()))
    assert {"index", "outer", "reshape", "softmax", "concatenate", "transpose", "mask",
            "broadcast", "sum", "diagonal", "number", "composed", "added", "solve",
            "solve_matrix", "sparse", "injected", "projected", "projection", "matmul",
            "dense"} <= kinds, kinds


def test_an_array_graph_is_refused_as_json_text(tmp_path):
    with pytest.raises(ValueError, match=r"has array vertices: save it as an \.npz archive"):
        save_graph(mlp_graph(), tmp_path / "g.json")
    with pytest.raises(TypeError, match="save_graph works on an LCG"):
        save_graph("graph", tmp_path / "g.json")
    assert list(tmp_path.iterdir()) == []


def test_the_form_is_read_from_the_bytes_not_the_name(tmp_path):
    g = mlp_graph()
    save_graph(g, tmp_path / "g.npz")
    os.rename(tmp_path / "g.npz", tmp_path / "g.json")
    assert load_graph(tmp_path / "g.json").same_as(g)


# ------------------------------------------------------------ atomic writes
class Unsavable(Identity):
    def spec(self):
        raise NotImplementedError("no file form")


def test_failed_save_leaves_nothing_behind(tmp_path, monkeypatch):
    path = tmp_path / "g.npz"
    save_graph(mlp_graph(), path)
    before = path.read_bytes()
    bad = LCG(["x", "y"], [0], [1], [Unsavable((2,))], [0], [1],
              values=[np.ones(2), np.ones(2)])
    with pytest.raises(NotImplementedError):
        save_graph(bad, path)
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["g.npz"]

    def broken_replace(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        save_graph(examples.figure1(), tmp_path / "h.json")
    assert sorted(os.listdir(tmp_path)) == ["g.npz"]


def test_save_overwrites_atomically_and_writes_an_ordinary_file(tmp_path):
    target = tmp_path / "g.json"
    save_graph(examples.lecture(), target)
    old = os.umask(0o022)
    try:
        save_graph(examples.figure1(), target)
    finally:
        os.umask(old)
    assert load_graph(target).same_as(examples.figure1())
    assert [p.name for p in tmp_path.iterdir()] == ["g.json"]
    # the temporary file behind an atomic save is private; the saved one must not be
    assert target.stat().st_mode & 0o777 == 0o644


def test_saving_into_a_missing_folder_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot save .*nowhere/g.json: the folder"):
        save_graph(examples.figure1(), tmp_path / "nowhere" / "g.json")


@pytest.mark.slow
def test_a_million_vertex_chain_round_trips_without_recursion(tmp_path):
    n = 1_000_000
    g = LCG([f"v{i}" for i in range(n)], np.arange(n - 1), np.arange(1, n),
            np.full(n - 1, 0.5), [0], [n - 1])
    h = load_graph(save_graph(g, tmp_path / "chain.json"))
    assert h.n_edges == n - 1 and h.partial(n - 2, n - 1) == 0.5


# ----------------------------------------------------- malformed text files
def write(tmp_path, text):
    path = tmp_path / "g.json"
    path.write_text(text)
    return path


def good_document():
    """A file of version 1 written by hand (the lecture's 7 vertices), as 0.1 wrote it."""
    return {"format": "minirad.lcg", "version": 1,
            "names": ["x1", "x2", "v2", "v3", "v4", "v5", "y"],
            "ops": ["input", "input", "log({0})", "{0} * {1}", "sin({0})", "{0} + {1}",
                    "{0} - {1}"],
            "values": [2.0, 5.0, None, 10.0, None, None, None], "inputs": [0, 1], "outputs": [6],
            "edges": {"source": [0, 0, 1, 1, 2, 3, 5, 4], "target": [2, 3, 3, 4, 5, 5, 6, 6],
                      "partial": [0.5, 5.0, 2.0, 0.28366, 1.0, 1.0, 1.0, -1.0]}}


def test_the_hand_written_document_is_the_lecture_graph(tmp_path):
    g = load_graph(write(tmp_path, json.dumps(good_document())))
    lecture = examples.lecture()
    assert g.names == lecture.names and g.inputs == lecture.inputs
    assert {(g.names[u], g.names[v]) for u, v, _ in g.edges()} == {
        (lecture.names[u], lecture.names[v]) for u, v, _ in lecture.edges()}
    assert g.label("x2", "v3") == 2.0 and g.value("v3") == 10.0 and math.isnan(g.value("y"))


def _mutated(mutate):
    doc = good_document()
    mutate(doc)
    return json.dumps(doc)


def _huge(field, index, token, column=None):
    """The document with one entry spelled ``token`` (a number JSON cannot hold)."""
    def put(d):
        (d["edges"][column] if column else d[field])[index] = "__HUGE__"
    return _mutated(put).replace('"__HUGE__"', token)


@pytest.mark.parametrize("text, message", [
    (_mutated(lambda d: d.pop("edges")), r"missing field\(s\) \['edges'\]"),
    (_mutated(lambda d: d.update(format="something")), "expected \"minirad.lcg\""),
    (_mutated(lambda d: d.update(version=99)), "unsupported schema version 99"),
    (_mutated(lambda d: d.update(version=True)), "unsupported schema version true"),
    (_mutated(lambda d: d.update(version=1.0)), "unsupported schema version 1.0"),
    (_mutated(lambda d: d["edges"]["partial"].__setitem__(0, "big")),
     r"edges.partial'\[0\] is \"big\""),
    (_mutated(lambda d: d["names"].__setitem__(0, 3)), r"'names'\[0\] is 3"),
    (_mutated(lambda d: d.update(inputs="x1")), "'inputs' must be a list"),
    (_mutated(lambda d: d["edges"]["target"].__setitem__(0, 99)), "unknown vertex"),
    (_mutated(lambda d: d["edges"]["source"].__setitem__(0, 6)), "cycle|successor"),
    (_mutated(lambda d: d["values"].pop()), "equal lengths"),
    (_mutated(lambda d: d.update(comment="hello")), r"unknown field\(s\) \['comment'\]"),
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
    (_huge("values", 0, "9" * 5001),
     "an integer of 5001 digits is too large for any field"),  # past Python's 4300-digit limit
    (_huge("values", 0, "1e400"),
     "the number 1e400 is too large for a float64 .* every number must be finite"),
    (_huge("edges", 0, "-2.5e308", "partial"), "the number -2.5e308 is too large"),
    (_huge("values", 0, "NaN"), "NaN is not allowed"),
    ("[" * 100_000, "nested too deeply"),
    ('{"format": "minirad.lcg", "version": 1, "names": ' + "[" * 100_000, "nested too deeply"),
    ('{"a":' * 100_000, "nested too deeply"),
    ("[1, 2, 3]", "the top level is a list, expected an object"),
])
def test_malformed_and_hostile_text_is_refused_with_a_clear_value_error(tmp_path, text,
                                                                        message):
    with pytest.raises(ValueError, match=message) as caught:
        load_graph(write(tmp_path, text))
    assert type(caught.value) is ValueError and len(str(caught.value)) < 600
    assert "is not a valid LCG file" in str(caught.value)


def test_truncated_binary_and_oversized_text_are_refused(tmp_path):
    text = json.dumps(good_document())
    with pytest.raises(ValueError, match="invalid JSON"):
        load_graph(write(tmp_path, text[: len(text) // 2]))
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ValueError, match="neither JSON text .* nor an .npz archive"):
        load_graph(path)
    with pytest.raises(ValueError, match="more than max_bytes=100"):
        load_graph(write(tmp_path, text), max_bytes=100)
    with pytest.raises(ValueError, match="is a folder"):
        load_graph(tmp_path)


# -------------------------------------------------- malformed archive files
def read_archive(path):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(arrays["manifest"].tobytes()), arrays


def write_archive(path, doc, arrays):
    arrays = dict(arrays, manifest=np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8))
    np.savez(path, **arrays)
    return path


def tampered(tmp_path, change_manifest=None, change_arrays=None, build=mlp_graph):
    doc, arrays = read_archive(save_graph(build(), tmp_path / "good.npz"))
    if change_manifest:
        change_manifest(doc)
    if change_arrays:
        change_arrays(arrays)
    return write_archive(tmp_path / "bad.npz", doc, arrays)


def _outer(d):
    return next(e for e in d["edges"] if e["operator"]["kind"] == "outer")["operator"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="other"), "format is not"),
    (lambda d: d.update(version=99), "version 99 is not supported"),
    (lambda d: d["vertices"][0].update(shape=[5, 5]), "stored value has shape"),
    (lambda d: d["vertices"][0].update(dtype="object"), "\"object\"; allowed"),
    (lambda d: d["vertices"][0].update(shape=[2**20, 2**20]),
     "declares 1099511627776 entries.*pass max_bytes=1099511627776 or more"),
    (lambda d: d["vertices"][0].update(shape=[1] * 40), "at most 32 non-negative ints"),
    (lambda d: d["edges"][0].update(target=0), "W -> W"),
    (lambda d: d["edges"][0]["operator"].update(kind="eval"), "unknown operator kind \"eval\""),
    (lambda d: d["edges"][0]["operator"].update(arrays={"stored": "nope"}), "does not hold"),
    (lambda d: d.pop("inputs"), "lacks the field 'inputs'"),
    (lambda d: _outer(d)["params"].update(retained="x"), "retained is \"x\"; it must be list"),
    (lambda d: _outer(d)["params"].update(variable_shape=[2**40]), "more than max_bytes"),
])
def test_hostile_manifests_are_refused(tmp_path, change, message):
    with pytest.raises(ValueError, match=message) as error:
        load_graph(tampered(tmp_path, change_manifest=change))
    assert "is not a valid LCG archive" in str(error.value)


def npy_bytes(header: dict, data: bytes = b"") -> bytes:
    """An .npy member written by hand: its header may say anything."""
    text = repr(header).encode("latin1")
    text += b" " * (-(len(text) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


def archive_with(tmp_path, member: str, content: bytes, compress=zipfile.ZIP_STORED):
    """The good archive with one member replaced."""
    good = save_graph(mlp_graph(), tmp_path / "good.npz")
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(good) as old, zipfile.ZipFile(bad, "w", compress) as new:
        for info in old.infolist():
            data = content if info.filename == member else old.read(info)
            new.writestr(info.filename, data)
    return bad


@pytest.mark.parametrize("content, message", [
    (npy_bytes({"descr": "<f8", "fortran_order": False, "shape": (2**40,)}),
     r"declares shape \(1099511627776,\)"),
    (npy_bytes({"descr": "|O", "fortran_order": False, "shape": (1,)}, b"\0" * 8), "holds object"),
    (npy_bytes({"descr": "<U3", "fortran_order": False, "shape": (1,)}, b"\0" * 12), "holds <U3"),
    (npy_bytes({"descr": "<f8", "fortran_order": False, "shape": (3,)}, b"\0" * 8),
     r"\(24 bytes\) but holds 8"),
    (npy_bytes({"descr": "<f8", "fortran_order": False, "shape": ((1,),)}), "cannot be read"),
    (b"\x93NUMPY\x09\x00 garbage", "cannot be read"),
])
def test_hostile_npy_headers_are_refused_before_any_allocation(tmp_path, content, message):
    with pytest.raises(ValueError, match=message):
        load_graph(archive_with(tmp_path, "value/0.npy", content))


def test_hostile_arrays_and_zip_files_are_refused(tmp_path):
    def nan_value(arrays):
        arrays["value/0"] = np.full_like(arrays["value/0"], np.nan)
    with pytest.raises(ValueError, match="non-finite"):
        load_graph(tampered(tmp_path, change_arrays=nan_value))
    buffer = io.BytesIO()
    doc, arrays = read_archive(save_graph(mlp_graph(), tmp_path / "good.npz"))
    arrays["value/0"] = np.array([{"x": 1}], dtype=object)   # needs pickle: refused
    np.savez(buffer, **arrays)
    (tmp_path / "pickled.npz").write_bytes(buffer.getvalue())
    with pytest.raises(ValueError, match="holds object"):
        load_graph(tmp_path / "pickled.npz")
    with zipfile.ZipFile(tmp_path / "empty.npz", "w"):
        pass
    with pytest.raises(ValueError, match="holds no manifest"):
        load_graph(tmp_path / "empty.npz")
    (tmp_path / "cut.npz").write_bytes((tmp_path / "good.npz").read_bytes()[:200])
    with pytest.raises(ValueError, match="zip directory is damaged"):
        load_graph(tmp_path / "cut.npz")
    with pytest.raises(ValueError, match="more than max_bytes=1,000"):
        load_graph(tmp_path / "good.npz", max_bytes=1000)
    with pytest.raises(ValueError, match="not one .npy array"):
        load_graph(_with_extra_member(tmp_path))


def _with_extra_member(tmp_path):
    bad = tmp_path / "extra.npz"
    bad.write_bytes(open(save_graph(mlp_graph(), tmp_path / "good.npz"), "rb").read())
    with zipfile.ZipFile(bad, "a") as z:
        z.writestr("script.py", "print('hello')")
    return bad


def test_a_zip_bomb_is_refused_from_its_directory(tmp_path):
    """A 1 MiB archive whose member expands to 1 GiB of zeros (a float64 array of 2**27
    entries): refused from the zip directory's sizes, before anything is read."""
    header = npy_bytes({"descr": "<f8", "fortran_order": False, "shape": (2**27,)})
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)   # raw deflate, as zip holds it
    pieces = [deflate.compress(header), deflate.flush(zlib.Z_FULL_FLUSH)]
    # after a full flush the compressor starts afresh: 16 MiB of zeros compress to the same
    # bytes every time, so one compressed chunk repeated 64 times expands to 1 GiB
    chunk = deflate.compress(bytes(2**24)) + deflate.flush(zlib.Z_FULL_FLUSH)
    payload = b"".join(pieces) + chunk * 64 + deflate.flush()
    crc = zlib.crc32(header)
    zeros = bytes(2**24)
    for _ in range(64):
        crc = zlib.crc32(zeros, crc)
    bomb = tmp_path / "bomb.npz"
    good = save_graph(mlp_graph(), tmp_path / "good.npz")
    with zipfile.ZipFile(good) as old, open(bomb, "wb") as out:
        members = [(info.filename, old.read(info), zipfile.ZIP_STORED, zlib.crc32(old.read(info)))
                   for info in old.infolist() if info.filename != "value/0.npy"]
        members.append(("value/0.npy", payload, zipfile.ZIP_DEFLATED, crc,
                        len(header) + 2**30))
        _write_zip(out, members)
    assert bomb.stat().st_size < 2**21
    with zipfile.ZipFile(bomb) as z:  # a valid zip: the member does expand to 1 GiB
        assert z.getinfo("value/0.npy").file_size == len(header) + 2**30
    with pytest.raises(ValueError, match=r"expands from .* to 1,073,741,952 bytes \(a zip bomb"):
        load_graph(bomb)
    assert MAX_RATIO < 2**30 / len(payload)


def _write_zip(out, members):
    """A zip file written by hand from (name, bytes as stored, method, crc[, size])."""
    directory, offset = [], 0
    for member in members:
        filename, stored, method, crc = member[:4]
        size = member[4] if len(member) > 4 else len(stored)
        name_bytes = filename.encode()
        fields = struct.pack("<HHHHHIIIHH", 20, 0, method, 0, 0, crc, len(stored), size,
                             len(name_bytes), 0)
        out.write(b"PK\x03\x04" + fields + name_bytes + stored)
        directory.append(b"PK\x01\x02" + struct.pack("<H", 20) + fields
                         + struct.pack("<HHHII", 0, 0, 0, 0, offset) + name_bytes)
        offset += 30 + len(name_bytes) + len(stored)
    start = offset
    for entry in directory:
        out.write(entry)
    out.write(b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, len(directory), len(directory),
                                          sum(map(len, directory)), start, 0))


# ------------------------------------------------------------------ fuzzing
_HOSTILE_TOKENS = ["1e400", "-1e400", "true", "false", "null", "-1", "0", "0.5", "1.0",
                   str(2**31), str(2**63), str(10**30), str(10**400), '"x"', '""', "[]", "{}",
                   "[[0]]", '{"a": 1}', "NaN", "Infinity", "[" * 50, "]", "}", ",", ":",
                   "\\u0000", '"\\ud800"', "\x00", "\u00e9", "[1099511627776]",
                   "[65536, 65536]", "[" + ", ".join(["2"] * 40) + "]", "[-3]", "[0]",
                   "[100000]", '"composed"', '"added"', '"im2col"', '"value/0"']


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


def test_the_text_loader_survives_thousands_of_mutated_files(tmp_path):
    # a seeded mutation loop (deterministic, ~2 s): only ValueError may escape, and a file
    # that loads must save and load again unchanged
    rng = np.random.default_rng(2024)
    texts = [open(save_graph(g, tmp_path / "g.json"), encoding="utf-8").read() for g in
             (examples.figure1(), examples.lecture(), examples.two_outputs(),
              numbers_with_injections_and_float32())]
    path = tmp_path / "g.json"
    loaded = 0
    for trial in range(2000):
        text = texts[trial % len(texts)]
        for _ in range(1 + rng.integers(3)):
            text = _mutate_text(text, rng)
        path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
        try:
            g = load_graph(path)
        except ValueError:
            continue
        loaded += 1
        assert load_graph(save_graph(g, tmp_path / "again.json")).same_as(g)
    assert 0 < loaded < 2000  # the mutations both break files and keep some loadable


_HOSTILE_HEADERS = [npy_bytes({"descr": descr, "fortran_order": fortran, "shape": shape}, data)
                    for descr, fortran, shape, data in [
                        ("<f8", False, (2**40,), b""), ("<f8", False, (2**62, 2**62), b""),
                        ("<f8", False, (-1,), b""), ("|O", False, (1,), b"\0" * 8),
                        ("<U3", False, (1,), b"\0" * 12), ("<c16", False, (1,), b"\0" * 16),
                        ("|V8", False, (1,), b"\0" * 8), (">f8", False, (2,), b"\0" * 16),
                        ("<f8", True, (2, 2), b"\0" * 32), ("<f8", False, (True,), b"\0" * 8),
                        ("<f8", False, "(1,)", b"\0" * 8), ("<i8", False, (3,), b"\0" * 8)]]
_HOSTILE_HEADERS += [b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**31) + b"{",
                     b"\x93NUMPY\x01\x00\xff\xff" + b"[" * 60, b"\x93NUMPY", b""]


def _replaced_member(raw: bytes, member: str, content: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(raw)) as old, zipfile.ZipFile(buffer, "w") as new:
        for info in old.infolist():
            new.writestr(info.filename, content if info.filename == member else old.read(info))
    return buffer.getvalue()


def _mutate_archive(doc_text: str, arrays: dict, raw: bytes, rng):
    """One mutated archive as bytes: its manifest edited, one array replaced by a hostile
    one, one member's .npy header replaced, or the zip file's own bytes damaged."""
    choice = rng.integers(10)
    if choice < 6:  # the manifest, one to three edits
        for _ in range(1 + rng.integers(3)):
            doc_text = _mutate_text(doc_text, rng)
        arrays = dict(arrays, manifest=np.frombuffer(
            doc_text.encode("utf-8", errors="surrogatepass"), dtype=np.uint8))
    elif choice < 8:  # one array: another shape, dtype or content
        key = sorted(arrays)[rng.integers(len(arrays))]
        x = arrays[key]
        arrays = dict(arrays)
        arrays[key] = [
            lambda: x.reshape(-1)[: max(x.size - 1, 0)],
            lambda: x.astype(np.float32) if x.dtype != np.float32 else x.astype(np.int64),
            lambda: np.full(x.shape, np.inf),
            lambda: np.zeros((2,) + x.shape, x.dtype),
            lambda: x.astype(bool),
            lambda: (-np.abs(x.astype(np.int64)) - 1 if x.dtype.kind in "iu"
                     else np.full(x.shape, 1e300)),
        ][rng.integers(6)]()
    elif choice < 9:  # one member's .npy header
        member = sorted(arrays)[rng.integers(len(arrays))] + ".npy"
        return _replaced_member(raw, member, _HOSTILE_HEADERS[rng.integers(
            len(_HOSTILE_HEADERS))])
    else:  # the zip file's bytes
        data = bytearray(raw)
        for _ in range(1 + rng.integers(4)):
            i = int(rng.integers(len(data)))
            data[i] = int(rng.integers(256))
        if rng.integers(4) == 0:
            data = data[: int(rng.integers(len(data)))]
        return bytes(data)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def test_the_archive_loader_survives_hundreds_of_mutated_files(tmp_path):
    # a seeded mutation loop over 600 archives of six graphs that hold every operator kind
    # (deterministic, a few seconds): nothing but ValueError may escape (no MemoryError,
    # RecursionError, OverflowError...), and a file that loads must save and load again
    rng = np.random.default_rng(25)
    sources = []
    for build in ARRAY_GRAPHS.values():
        path = save_graph(build(), tmp_path / "good.npz")
        doc, arrays = read_archive(path)
        sources.append((json.dumps(doc), arrays, open(path, "rb").read()))
    path = tmp_path / "mutated.npz"
    loaded, refused = 0, 0
    for trial in range(600):
        path.write_bytes(_mutate_archive(*sources[trial % len(sources)], rng))
        try:
            g = load_graph(path, max_bytes=2**24)
        except ValueError:
            refused += 1
            continue
        loaded += 1
        assert load_graph(save_graph(g, tmp_path / "again.npz")).same_as(g)
    assert loaded > 20 and refused > 300  # both outcomes are exercised
