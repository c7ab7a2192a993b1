"""Saving and loading a vector LCG: one ``.npz`` file, no pickle, no eval.

The file holds a JSON manifest (stored as bytes under the key ``manifest``:
format name, version, vertices with name/op/shape/dtype, inputs, outputs,
and for every edge its endpoints and operator spec) and the arrays (vertex
values and operator data) under the names the manifest gives.  Loading
reads with ``allow_pickle=False`` and validates every field before building
anything; writes are atomic.  An array two operators hold (the LU factors that
the two edges of one linear solve share) is written once.

Implicit operators (:mod:`minirad.implicit.solves`) are saved as what they hold: a
linear solve's LU factors and pivots (any such pair is the factorisation of
``A = P L U``, so they are checked and used as they are, not recomputed: the
loaded edges apply bit for bit the same solves), the solution ``x`` for the
edge from ``A``, and a root's factors of ``f_x`` with ``f_p``; the keys of
what they retain come back shared as they were, so ``memory`` is unchanged.

>>> import os, tempfile
>>> import numpy as np
>>> from minirad import ops, trace
>>> g = trace(lambda W, x: ops.relu(W @ x).sum(), np.eye(2), np.ones(2))
>>> path = os.path.join(tempfile.mkdtemp(), "g.npz")
>>> save_vector(g, path)
>>> h = load_vector(path)
>>> h.names == g.names and [op.kind for op in h.labels] == [op.kind for op in g.labels]
True

A graph with a linear solve (the two edges share one LU factorisation):

>>> from minirad import blocks, memory
>>> g = trace(lambda A, b: (np.linalg.solve(A, b) ** 2).sum(),
...           np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([1.0, 2.0]))
>>> save_vector(g, path)
>>> h = load_vector(path)
>>> all(np.array_equal(a, b) for a, b in zip(blocks.gradient(h), blocks.gradient(g)))
True
>>> memory(h).per_edge == memory(g).per_edge      # LU + pivots + x, the LU kept once
True
"""

from __future__ import annotations

import json
import math
import os
import zipfile

import numpy as np

from ..implicit import solves as implicit
from . import operators as O
from .files import write_atomically
from .lcg import LCG
from .patches import ProjectedPatches, SampledPatches

FORMAT = "minirad.vector_lcg"
VERSION = 1

_ALLOWED_DTYPES = {"float16", "float32", "float64", "bool", "int64", "int32"}


# ------------------------------------------------------------------ saving
def _operator_spec(op, prefix: str, arrays: dict, written: dict) -> dict:
    """The operator's manifest entry; its arrays go into ``arrays``, each array object
    once (``written`` maps id -> (array, name) and keeps the array alive, so an id
    is never reused for another array during one save)."""
    if isinstance(op, float):   # the label of an edge between two numbers
        return {"kind": "number", "params": {"value": op}, "arrays": {}}
    if isinstance(op, O.Composed):
        return {"kind": "composed", "parts": [_operator_spec(p, f"{prefix}.{i}", arrays, written)
                                              for i, p in enumerate(op.parts)]}
    if isinstance(op, O.Added):
        return {"kind": "added", "terms": [_operator_spec(t, f"{prefix}.{i}", arrays, written)
                                           for i, t in enumerate(op.terms)]}
    params, data = op.spec()
    extra = {}
    if isinstance(op, O.MatMul) and op.gathered is not None:
        # the rearrangement that rebuilds the stored operand from its source
        extra["gathered"] = _operator_spec(op.gathered[1], f"{prefix}.gather", arrays, written)
    names = {}
    for key, array in data.items():
        if id(array) not in written:
            written[id(array)] = (array, f"{prefix}/{key}")
            arrays[f"{prefix}/{key}"] = np.asarray(array)
        names[key] = written[id(array)][1]
    return {"kind": op.kind, "params": params, "arrays": names, **extra}


def save_vector(g: LCG, path) -> None:
    """Write ``g`` to ``path`` (an ``.npz`` file), atomically."""
    if not isinstance(g, LCG):
        raise TypeError(f"save_vector takes a LCG, not {type(g).__name__}")
    if g.values is None:
        raise ValueError("save_vector needs a graph with values")
    arrays: dict[str, np.ndarray] = {}
    vertices = []
    for v in range(g.n_vertices):
        arrays[f"value/{v}"] = np.asarray(g.values[v])
        vertices.append({"name": g.names[v], "op": g.ops[v], "shape": list(g.shapes[v]),
                         "dtype": g.dtypes[v].name})
    written: dict = {}
    edges = [{"source": u, "target": v,
              "operator": _operator_spec(op, f"edge/{e}", arrays, written)}
             for e, (u, v, op) in enumerate(g.edges())]
    manifest = {"format": FORMAT, "version": VERSION, "vertices": vertices,
                "inputs": list(g.inputs), "outputs": list(g.outputs), "edges": edges,
                "injections": [dict(record) for record in g.injections]}
    text = json.dumps(manifest, allow_nan=False)
    arrays["manifest"] = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    write_atomically(path, lambda f: np.savez(f, **arrays))


# ----------------------------------------------------------------- loading
class _Reader:
    """Strict field access with messages that name the file and the field."""

    def __init__(self, path, arrays):
        self.path, self.arrays = path, arrays
        self.keys: dict[str, str] = {}

    def key(self, saved: str | None) -> str | None:
        """Keys of vertex values stay; other keys get fresh ones (consistently within the
        file), so they never collide with arrays made in this session."""
        if saved is None or saved.startswith("value:"):
            return saved
        if saved not in self.keys:
            self.keys[saved] = O.fresh_key(saved.split("#")[0])
        return self.keys[saved]

    def fail(self, what: str):
        raise ValueError(f"{self.path} is not a valid vector LCG file: {what}")

    def field(self, doc, key, kind, where):
        if not isinstance(doc, dict) or key not in doc:
            self.fail(f"{where} lacks the field {key!r}")
        value = doc[key]
        ok = (isinstance(value, kind) and not isinstance(value, bool)) if kind is int else \
            isinstance(value, kind)
        if not ok:
            self.fail(f"{where}.{key} must be {getattr(kind, '__name__', kind)}, not "
                      f"{type(value).__name__}")
        return value

    def shape(self, value, where):
        if not isinstance(value, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**31
                for s in value):
            self.fail(f"{where} must be a list of non-negative ints")
        return tuple(value)

    def array(self, name, where):
        if not isinstance(name, str) or name not in self.arrays:
            self.fail(f"{where} names the array {name!r}, which the file does not hold")
        return self.arrays[name]


def _retained(r: _Reader, value, where):
    if not isinstance(value, list):
        r.fail(f"{where}.retained must be a list")
    out = []
    for i, item in enumerate(value):
        ok = (isinstance(item, list) and len(item) == 5 and isinstance(item[0], str)
              and isinstance(item[1], int) and not isinstance(item[1], bool) and item[1] >= 0
              and (item[2] is None or isinstance(item[2], str))
              and isinstance(item[3], int) and not isinstance(item[3], bool) and item[3] >= 0
              and isinstance(item[4], str))
        if not ok:
            r.fail(f"{where}.retained[{i}] must be [key, bits, source key or null, source bits, "
                   f"description]")
        out.append(O.Retained(r.key(item[0]), item[1], r.key(item[2]), item[3], item[4]))
    return tuple(out)


def _dtype(r: _Reader, name, where):
    if name not in _ALLOWED_DTYPES:
        r.fail(f"{where} has dtype {name!r}; allowed: {sorted(_ALLOWED_DTYPES)}")
    return np.dtype(name)


def _operator(r: _Reader, doc, where, depth=0):
    if depth > 20:
        r.fail(f"{where} nests operators too deeply")
    kind = r.field(doc, "kind", str, where)
    if kind in ("composed", "added"):
        key = "parts" if kind == "composed" else "terms"
        items = r.field(doc, key, list, where)
        ops = [_operator(r, d, f"{where}.{key}[{i}]", depth + 1) for i, d in enumerate(items)]
        return O.Composed(ops) if kind == "composed" else O.Added(ops)
    params = r.field(doc, "params", dict, where)
    names = r.field(doc, "arrays", dict, where)
    data = {k: r.array(v, f"{where}.arrays.{k}") for k, v in names.items()}

    def p(key, kind_):
        return r.field(params, key, kind_, f"{where}.params")

    def a(key):
        if key not in data:
            r.fail(f"{where} lacks the array {key!r}")
        return data[key]

    def floats(key):
        x = a(key)
        if not np.issubdtype(x.dtype, np.floating) or not np.all(np.isfinite(x)):
            r.fail(f"{where}.{key} must be a finite float array")
        return x

    def ints(key):
        x = a(key)
        if not np.issubdtype(x.dtype, np.integer):
            r.fail(f"{where}.{key} must be an integer array")
        return x

    def dt():
        return _dtype(r, p("dtype", str), f"{where}.params.dtype")

    def retained():
        return _retained(r, p("retained", list), f"{where}.params")

    if kind == "number":
        value = p("value", (int, float))
        if isinstance(value, bool) or not np.isfinite(value):
            r.fail(f"{where} has a label that is not a finite number")
        return float(value)
    if kind == "identity":
        return O.Identity(r.shape(p("shape", list), where), dt())
    if kind == "diagonal":
        return O.Diagonal(floats("d"), r.shape(p("shape", list), where), retained())
    if kind == "mask":
        mask = a("mask")
        if mask.dtype != np.bool_:
            r.fail(f"{where}.mask must be a boolean array")
        return O.Mask(mask, dt(), retained())
    if kind == "dense":
        return O.Dense(floats("matrix"), r.shape(p("out_shape", list), where),
                       r.shape(p("in_shape", list), where), retained())
    if kind == "softmax":
        return O.Softmax(floats("p"), p("axis", int), retained())
    if kind in ("matmul", "outer"):
        cls = O.MatMul if kind == "matmul" else O.Outer
        gathered = None
        if "gathered" in doc:        # the source and the operator that gathers from it
            gathered = (floats("source"),
                        _operator(r, r.field(doc, "gathered", dict, where), f"{where}.gathered",
                                  depth + 1))
        elif "source" in data:       # files written before: the source and int positions
            gathered = (floats("source"), ints("positions"))
        return cls(floats("stored"), p("side", str), r.shape(p("variable_shape", list), where),
                   retained(), gathered)
    if kind == "sparse":
        import scipy.sparse as sp

        shape = r.shape(p("shape", list), where)
        if len(shape) != 2:
            r.fail(f"{where}.params.shape must have two entries")
        try:
            A = sp.csr_array((floats("data"), ints("indices"), ints("indptr")), shape=shape)
            A.check_format(full_check=True)
        except ValueError as error:
            r.fail(f"{where} holds an invalid sparse matrix: {error}")
        return O.SparseMatMul(A, p("side", str), r.shape(p("variable_shape", list), where),
                              retained())
    if kind == "injected":
        return O.InjectedMatMul(floats("stored"), p("side", str),
                                r.shape(p("variable_shape", list), where), p("k", int),
                                p("method", str), retained())
    if kind == "projected":
        return O.ProjectedMatMul(floats("kept"), floats("R"), p("side", str),
                                 r.shape(p("variable_shape", list), where),
                                 p("scale", (int, float)), p("method", str), retained())
    if kind == "sampled_patches":
        values = floats("values")
        gather = O.Im2Col(r.shape(p("image_shape", list), where),
                          r.shape(p("kernel", list), where), 1, p("padding", int), values.dtype)
        return SampledPatches(gather, ints("picks"), values, p("scale", (int, float)),
                              r.shape(p("variable_shape", list), where), p("method", str),
                              retained())
    if kind == "projected_patches":
        kept = floats("kept")
        gather = O.Im2Col(r.shape(p("image_shape", list), where),
                          r.shape(p("kernel", list), where), 1, p("padding", int), kept.dtype)
        return ProjectedPatches(gather, kept, floats("R"), p("scale", (int, float)),
                                r.shape(p("variable_shape", list), where), p("method", str),
                                retained())
    if kind == "projection":
        def optional_axis(key):
            value = params.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                r.fail(f"{where}.params.{key} must be an int or null")
            return value
        return O.Projection(r.shape(p("shape", list), where), floats("R"), optional_axis("axis"),
                            optional_axis("batch_axis"), p("method", str))
    if kind == "sum":
        axes = p("axes", list)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in axes):
            r.fail(f"{where}.params.axes must be ints")
        scale = p("scale", (int, float))
        if not math.isfinite(scale):
            r.fail(f"{where}.params.scale must be finite")
        return O.SumAxes(r.shape(p("in_shape", list), where), axes, p("keepdims", bool),
                         scale, dt())
    if kind == "broadcast":
        return O.Broadcast(r.shape(p("in_shape", list), where),
                           r.shape(p("out_shape", list), where), dt())
    if kind == "reshape":
        return O.Reshape(r.shape(p("in_shape", list), where),
                         r.shape(p("out_shape", list), where), dt())
    if kind == "transpose":
        axes = p("axes", list)
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in axes):
            r.fail(f"{where}.params.axes must be ints")
        return O.Transpose(r.shape(p("in_shape", list), where), axes, dt())
    if kind == "im2col":
        return O.Im2Col(r.shape(p("in_shape", list), where), r.shape(p("kernel", list), where),
                        p("stride", int), p("padding", int), dt())
    if kind == "index":
        return O.Gather(r.shape(p("in_shape", list), where), ints("positions"), dt())
    if kind == "concatenate":
        return O.Embed(r.shape(p("out_shape", list), where), ints("positions"), dt())
    if kind in ("solve", "solve_matrix", "implicit"):
        return _implicit(r, kind, p, a, floats, where)
    r.fail(f"{where} has the unknown operator kind {kind!r}")


def _implicit(r: _Reader, kind, p, a, floats, where):
    """A linear solve's edges or a root's edge from their factors (checked by
    :func:`minirad.implicit.solves.checked_factors`) and the keys they retain."""
    count = {"solve": 1, "solve_matrix": 2, "implicit": 2}[kind]
    keys = p("keys", list)
    if len(keys) != count or not all(isinstance(k, str) for k in keys):
        r.fail(f"{where}.params.keys must be {count} string(s)")
    keys = [r.key(k) for k in keys]
    lu = implicit.checked_factors(floats("lu"), a("piv"), f"{where}: the factors")
    if kind == "solve":
        return implicit.LinearSolve(lu, r.shape(p("shape", list), where), keys[0])
    if kind == "solve_matrix":
        x = floats("x")
        if x.dtype != lu[0].dtype:
            r.fail(f"{where}.x has dtype {x.dtype}, its factors {lu[0].dtype}")
        return implicit.SolveMatrix(lu, x, *keys)
    return implicit.ImplicitSolution(lu, floats("f_p"), r.shape(p("x_shape", list), where),
                                     r.shape(p("p_shape", list), where), *keys)


def load_vector(path) -> LCG:
    """Read a vector LCG written by :func:`save_vector`, validating everything."""
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ValueError(f"{path} is not a vector LCG file (.npz): {error}") from None
    except ValueError as error:   # not a zip, or object arrays (they need pickle: refused)
        raise ValueError(f"{path} is not a vector LCG file (.npz without pickled data): "
                         f"{error}") from None
    r = _Reader(path, arrays)
    raw = arrays.get("manifest")
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        r.fail("no manifest")

    def reject(token):
        r.fail(f"the manifest contains {token}")
    try:
        doc = json.loads(raw.tobytes().decode("utf-8"), parse_constant=reject)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        r.fail(f"the manifest is not JSON ({error})")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        r.fail(f"the manifest's format is not {FORMAT!r}")
    if doc.get("version") != VERSION:
        r.fail(f"version {doc.get('version')!r} is not supported (this minirad reads "
               f"version {VERSION})")
    vertices = r.field(doc, "vertices", list, "manifest")
    names, ops, values = [], [], []
    for v, vd in enumerate(vertices):
        where = f"vertices[{v}]"
        names.append(r.field(vd, "name", str, where))
        ops.append(r.field(vd, "op", str, where))
        shape = r.shape(r.field(vd, "shape", list, where), f"{where}.shape")
        dtype = _dtype(r, r.field(vd, "dtype", str, where), where)
        value = r.array(f"value/{v}", where)
        if value.shape != shape or value.dtype != dtype:
            r.fail(f"{where} says shape {shape} and dtype {dtype}, but its stored value has "
                   f"shape {value.shape} and dtype {value.dtype}")
        if not np.all(np.isfinite(value)):
            r.fail(f"{where} ({names[-1]}) has a non-finite value")
        values.append(value)
    edges = r.field(doc, "edges", list, "manifest")
    sources, targets, labels = [], [], []
    for e, ed in enumerate(edges):
        where = f"edges[{e}]"
        sources.append(r.field(ed, "source", int, where))
        targets.append(r.field(ed, "target", int, where))
        try:
            labels.append(_operator(r, r.field(ed, "operator", dict, where), where))
        except (TypeError, ValueError) as error:
            if str(error).startswith(f"{path} is not"):
                raise
            r.fail(f"{where}: {error}")
    inputs = r.field(doc, "inputs", list, "manifest")
    outputs = r.field(doc, "outputs", list, "manifest")
    injections = r.field(doc, "injections", list, "manifest")
    for group, what in ((inputs, "inputs"), (outputs, "outputs")):
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in group):
            r.fail(f"{what} must be vertex numbers")
    if not all(isinstance(x, dict) for x in injections):
        r.fail("injections must be a list of records")
    try:
        return LCG(names, sources, targets, labels, inputs, outputs, values=values,
                         ops=ops, injections=injections)
    except (TypeError, ValueError) as error:
        r.fail(str(error))
