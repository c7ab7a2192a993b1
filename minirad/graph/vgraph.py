"""The vector LCG: vertices hold arrays, edges hold linear operators.

The scalar :class:`minirad.LCG` has one vertex per number.  A
:class:`VectorLCG` (RAD paper Sec. 3.2 and Fig. 3) has one vertex per
*array* and one edge per local Jacobian *block*, stored as a structured
:class:`minirad.graph.operators.Operator` (a diagonal, a bit mask, a stored
matrix, ...).  The structural API is the scalar graph's: ``names``,
``sources``, ``targets`` (edges grouped by target in operand order, vertices
numbered topologically), ``inputs``, ``outputs``, ``predecessors``,
``successors``, ``kind``, ``op``, ``value``, ``edges``, ``labels`` (the
operators) and ``algebra`` (:data:`minirad.graph.operators.OPERATORS`), so the
recurrences written over labels run on it unchanged.

Functions over the graph: :func:`memory` (bytes the backward pass keeps),
:func:`scalarize` (the scalar LCG, one vertex per entry).

>>> import numpy as np
>>> from minirad.tracing.arrays import trace_arrays
>>> x = np.ones(3)                      # a constant: data, not a vertex
>>> g = trace_arrays(lambda W: np.tanh(W @ x).sum(), np.ones((2, 3)))
>>> g
VectorLCG(4 vertices: 1 input, 2 intermediates, 1 output; 3 edges)
>>> print(g.wengert())
v0 = W          W ∈ R^(2×3)
v1 = v0 @ c     v1 ∈ R^(2)    dv1/dv0: outer
v2 = tanh(v1)   v2 ∈ R^(2)    dv2/dv1: diag
v3 = sum(v2)    y ∈ R         dv3/dv2: sum     (output y)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .lcg import LCG
from .names import vertex_number
from .operators import DENSE_LIMIT, OPERATORS, Operator

INPUT, INTERMEDIATE, OUTPUT = "input", "intermediate", "output"

#: the largest scalar graph ``scalarize`` builds (scalar edges)
SCALARIZE_LIMIT = 200_000


def value_key(v: int) -> str:
    """The key under which operators retain the value of vertex ``v`` (see
    :class:`minirad.graph.operators.Retained`); :func:`memory` treats the values of
    input vertices (parameters, kept by the caller anyway) as free."""
    return f"value:{int(v)}"


def shape_text(shape: tuple) -> str:
    """``R^(150×300)`` for a shape, ``R`` for a scalar.

    >>> shape_text((150, 300)), shape_text(())
    ('R^(150×300)', 'R')
    """
    if not shape:
        return "R"
    return "R^(" + "×".join(str(s) for s in shape) + ")"


class VectorLCG:
    """A linearized computational graph over arrays.

    Build one with :func:`minirad.tracing.arrays.trace_arrays` or by hand.

    Parameters
    ----------
    names : sequence of str, one unique name per vertex.
    sources, targets : edge endpoints as vertex numbers; every edge goes from a
        lower to a higher number (the numbering is topological).
    operators : one :class:`~minirad.graph.operators.Operator` per edge, mapping the
        source's shape to the target's.
    inputs, outputs : vertex numbers, in Jacobian column and row order.
    values : one array per vertex (its primal value); or None, then ``shapes``.
    ops : per vertex, the operation as a template over its predecessors
        (``"relu({0})"``), ``"input"`` for inputs.
    injections : records of random matrices injected (see
        :mod:`minirad.randomized.injection`); kept for pictures and listings.

    >>> import numpy as np
    >>> from minirad.graph.operators import Diagonal
    >>> g = VectorLCG(["x", "y"], [0], [1], [Diagonal(np.array([2.0, 3.0]))], [0], [1],
    ...               values=[np.ones(2), np.array([2.0, 3.0])])
    >>> g.shape("y"), g.label("x", "y").kind
    ((2,), 'diagonal')
    """

    __slots__ = ("names", "ops", "values", "shapes", "dtypes", "sources", "targets",
                 "labels", "inputs", "outputs", "injections", "_index", "_in_ptr", "_out")

    algebra = OPERATORS

    def __init__(self, names, sources, targets, operators, inputs, outputs, values=None,
                 ops=None, shapes=None, dtypes=None, injections=()):
        names = tuple(str(n) for n in names)
        n = len(names)
        if len(set(names)) != n:
            seen = set()
            twice = next(x for x in names if x in seen or seen.add(x))
            raise ValueError(f"vertex names must be unique; {twice!r} appears twice")
        src = np.asarray(sources, dtype=np.int64).reshape(-1)
        dst = np.asarray(targets, dtype=np.int64).reshape(-1)
        operators = tuple(operators)
        if not len(src) == len(dst) == len(operators):
            raise ValueError(f"sources, targets and operators need one entry per edge; got "
                             f"{len(src)}, {len(dst)} and {len(operators)}")
        if values is not None:
            values = tuple(_read_only(x) for x in values)
            if len(values) != n:
                raise ValueError(f"values must have one array per vertex ({n}), not "
                                 f"{len(values)}")
            shapes = tuple(x.shape for x in values)
            dtypes = tuple(x.dtype for x in values)
        elif shapes is None:
            raise ValueError("give either values (one array per vertex) or shapes")
        shapes = tuple(tuple(int(s) for s in shape) for shape in shapes)
        dtypes = tuple(np.dtype(d) for d in (dtypes or [np.float64] * n))
        if len(shapes) != n or len(dtypes) != n:
            raise ValueError(f"shapes and dtypes need one entry per vertex ({n})")
        ops = tuple(str(o) for o in (ops if ops is not None else [""] * n))
        if len(ops) != n:
            raise ValueError(f"ops must have one entry per vertex ({n}), not {len(ops)}")
        inputs, outputs = tuple(int(v) for v in inputs), tuple(int(v) for v in outputs)
        _validate(names, src, dst, operators, inputs, outputs, shapes, values)
        grouped = np.argsort(dst, kind="stable")  # operand order survives within a target
        self.names, self.ops, self.values = names, ops, values
        self.shapes, self.dtypes = shapes, dtypes
        self.sources, self.targets = src[grouped], dst[grouped]
        self.sources.flags.writeable = self.targets.flags.writeable = False
        self.labels = tuple(operators[e] for e in grouped)
        self.inputs, self.outputs = inputs, outputs
        self.injections = tuple(injections)
        self._index = {name: i for i, name in enumerate(names)}
        self._in_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.targets, minlength=n), out=self._in_ptr[1:])
        self._out = None

    # ------------------------------------------------------------ queries
    @property
    def n_vertices(self) -> int:
        return len(self.names)

    @property
    def n_edges(self) -> int:
        return len(self.labels)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def intermediates(self) -> tuple[int, ...]:
        ends = set(self.inputs) | set(self.outputs)
        return tuple(v for v in range(self.n_vertices) if v not in ends)

    def index(self, vertex) -> int:
        """The number of a vertex given by number or by name."""
        return vertex_number(vertex, self.names, self._index.get)

    def name(self, vertex) -> str:
        return self.names[self.index(vertex)]

    def kind(self, vertex) -> str:
        v = self.index(vertex)
        return INPUT if v in self.inputs else OUTPUT if v in self.outputs else INTERMEDIATE

    def value(self, vertex) -> np.ndarray:
        if self.values is None:
            raise ValueError("this graph was built without values")
        return self.values[self.index(vertex)]

    def shape(self, vertex) -> tuple[int, ...]:
        return self.shapes[self.index(vertex)]

    def size(self, vertex) -> int:
        return math.prod(self.shape(vertex))

    def dtype(self, vertex) -> np.dtype:
        return self.dtypes[self.index(vertex)]

    def op(self, vertex) -> str:
        return self.ops[self.index(vertex)]

    def predecessors(self, vertex) -> tuple[int, ...]:
        """Predecessors, in operand order."""
        v = self.index(vertex)
        return tuple(self.sources[self._in_ptr[v]:self._in_ptr[v + 1]].tolist())

    def successors(self, vertex) -> tuple[int, ...]:
        """Successors, in increasing order."""
        order, ptr = self.out_edges_csr
        v = self.index(vertex)
        return tuple(self.targets[order[ptr[v]:ptr[v + 1]]].tolist())

    def edges(self):
        """Iterate over ``(u, v, operator)`` triples, grouped by target."""
        return zip(self.sources.tolist(), self.targets.tolist(), self.labels)

    def edge_index(self, u, v) -> int:
        u, v = self.index(u), self.index(v)
        start, stop = int(self._in_ptr[v]), int(self._in_ptr[v + 1])
        hits = np.flatnonzero(self.sources[start:stop] == u)
        if not len(hits):
            raise ValueError(f"there is no edge {self.names[u]} -> {self.names[v]}; the "
                             f"predecessors of {self.names[v]} are "
                             f"{[self.names[p] for p in self.sources[start:stop]]}")
        return start + int(hits[0])

    def label(self, u, v) -> Operator:
        """The operator d v / d u on edge (u, v)."""
        return self.labels[self.edge_index(u, v)]

    @property
    def in_edges_ptr(self) -> np.ndarray:
        """``ptr`` such that edges ``ptr[v]:ptr[v+1]`` are the edges into v."""
        return self._in_ptr

    @property
    def out_edges_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, ptr)``: edges ``order[ptr[v]:ptr[v+1]]`` leave v, by target."""
        if self._out is None:
            ptr = np.zeros(self.n_vertices + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.sources, minlength=self.n_vertices), out=ptr[1:])
            self._out = (np.argsort(self.sources, kind="stable"), ptr)
        return self._out

    # ------------------------------------------------------------ display
    def __repr__(self) -> str:
        n_in, n_out = len(self.inputs), len(self.outputs)
        n_mid = self.n_vertices - n_in - n_out

        def plural(c, w):
            return f"{c} {w}" if c == 1 else f"{c} {w}s"
        return (f"VectorLCG({plural(self.n_vertices, 'vertex').replace('vertexs', 'vertices')}"
                f": {plural(n_in, 'input')}, {plural(n_mid, 'intermediate')}, "
                f"{plural(n_out, 'output')}; {plural(self.n_edges, 'edge')})")

    def wengert(self) -> str:
        """One line per vertex: register, operation, name and shape, edge operators."""
        rows = []
        for v in range(self.n_vertices):
            reg = f"v{v}"
            preds = [f"v{u}" for u in self.predecessors(v)]
            if self.kind(v) == INPUT:
                expr = self.names[v]
            else:
                expr = _fill(self.ops[v], preds)
            start = int(self._in_ptr[v])
            derivs = ", ".join(f"d{reg}/{'d' + p}: {self.labels[start + i].label()}"
                               for i, p in enumerate(preds))
            note = f"(output {self.names[v]})" if self.kind(v) == OUTPUT else ""
            rows.append((f"{reg} = {expr}", f"{self.names[v]} ∈ {shape_text(self.shapes[v])}",
                         derivs, note))
        if not rows:
            return ""
        widths = [max(len(r[c]) for r in rows) for c in range(3)]
        return "\n".join("   ".join(p for p in [r[c].ljust(widths[c]) for c in range(3)]
                                    + [r[3]] if p.strip()).rstrip() for r in rows)


def relabelled(g: VectorLCG, labels, injections=()) -> VectorLCG:
    """A new graph: ``g`` with the edges of ``labels`` (edge number -> operator)
    carrying new operators, and ``injections`` (records, see :mod:`minirad.randomized.injection`)
    added to ``g.injections``; names, edges, values and ``g`` itself unchanged.

    Only the new operators are checked (each must map its edge's source shape to its
    target shape): the rest of the graph was validated when ``g`` was built, so a
    graph is relabelled without rescanning its values (the patch arrays of a
    ConvNet are tens of megabytes).

    >>> from minirad.tracing.arrays import trace_arrays
    >>> from minirad.graph.operators import Diagonal
    >>> g = trace_arrays(lambda x: np.exp(x).sum(), np.zeros(2))
    >>> h = relabelled(g, {0: Diagonal(np.array([2.0, 3.0]))}, [{"kind": "by hand"}])
    >>> h.labels[0].d, g.labels[0].d, h.injections
    (array([2., 3.]), array([1., 1.]), ({'kind': 'by hand'},))
    """
    if not isinstance(g, VectorLCG):
        raise TypeError(f"relabelled takes a VectorLCG, not {type(g).__name__}")
    new = list(g.labels)
    for e, op in dict(labels).items():
        if isinstance(e, bool) or not isinstance(e, (int, np.integer)) \
                or not 0 <= e < g.n_edges:
            raise ValueError(f"edge {e!r} does not exist; the graph has {g.n_edges} edges "
                             f"(numbered 0..{g.n_edges - 1})")
        u, v = int(g.sources[e]), int(g.targets[e])
        if not isinstance(op, Operator):
            raise TypeError(f"edge {g.names[u]} -> {g.names[v]} would carry a "
                            f"{type(op).__name__}, not a minirad.graph.operators.Operator")
        if op.in_shape != g.shapes[u] or op.out_shape != g.shapes[v]:
            raise ValueError(f"edge {g.names[u]} -> {g.names[v]}: operator {op!r} maps "
                             f"{op.in_shape} -> {op.out_shape} but the vertices have shapes "
                             f"{g.shapes[u]} and {g.shapes[v]}")
        new[int(e)] = op
    h = object.__new__(VectorLCG)
    for slot in VectorLCG.__slots__:     # every field is immutable: share it with g
        setattr(h, slot, getattr(g, slot))
    h.labels, h.injections = tuple(new), g.injections + tuple(injections)
    return h


def _read_only(x) -> np.ndarray:
    """A view of ``x`` that cannot be written through: the graph's values stay as traced."""
    view = np.asarray(x).view()
    view.flags.writeable = False
    return view


def _fill(template: str, operands: list[str]) -> str:
    try:
        return template.format(*operands)
    except (IndexError, KeyError, ValueError):
        return template


def _validate(names, src, dst, operators, inputs, outputs, shapes, values):
    n = len(names)
    if len(src) and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"edge endpoints must be vertex numbers 0..{n - 1}")
    back = np.flatnonzero(src >= dst)
    if len(back):
        e = int(back[0])
        raise ValueError(f"edge {names[src[e]]} -> {names[dst[e]]} does not go from a lower "
                         f"to a higher vertex number; number vertices topologically")
    pairs = set()
    for u, v, op in zip(src.tolist(), dst.tolist(), operators):
        if (u, v) in pairs:
            raise ValueError(f"edge {names[u]} -> {names[v]} appears twice; add the operators "
                             f"(OPERATORS.add) into one edge")
        pairs.add((u, v))
        if not isinstance(op, Operator):
            raise TypeError(f"edge {names[u]} -> {names[v]} carries a {type(op).__name__}, "
                            f"not a minirad.graph.operators.Operator")
        if op.in_shape != shapes[u] or op.out_shape != shapes[v]:
            raise ValueError(f"edge {names[u]} -> {names[v]}: operator {op!r} maps "
                             f"{op.in_shape} -> {op.out_shape} but the vertices have shapes "
                             f"{shapes[u]} and {shapes[v]}")
    for role, group in (("input", inputs), ("output", outputs)):
        if len(set(group)) != len(group) or any(not 0 <= v < n for v in group):
            raise ValueError(f"{role}s must be distinct vertex numbers 0..{n - 1}")
    if set(inputs) & set(outputs):
        raise ValueError("a vertex cannot be both an input and an output; join them by an "
                         "identity edge")
    has_in, has_out = set(dst.tolist()), set(src.tolist())
    for v in inputs:
        if v in has_in:
            raise ValueError(f"input {names[v]} has predecessors; inputs must have none")
    for v in outputs:
        if v in has_out:
            raise ValueError(f"output {names[v]} has successors; outputs must have none")
    if values is not None:
        for v, x in enumerate(values):
            if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype,
                                                                     np.complexfloating):
                raise TypeError(f"vertex {names[v]} has a value of dtype {x.dtype}; values "
                                f"are real arrays")
            if not np.all(np.isfinite(x)):
                raise ValueError(f"vertex {names[v]} has a non-finite value")


# ------------------------------------------------------------------ memory
@dataclass(frozen=True)
class Memory:
    """What the backward pass keeps: bytes per edge and in total.

    ``per_edge[e]`` is the bytes charged to edge ``e`` (an array shared by
    several edges is charged to the first); ``notes[e]`` says why an edge's
    arrays cost nothing (a parameter kept anyway, rebuilt from a kept array,
    shared with another edge); ``arrays`` maps each retained array's key to
    its bytes; ``kept_anyway`` is the bytes of input values (parameters)
    that operators use but the caller holds regardless.
    """

    per_edge: tuple[float, ...]
    arrays: dict
    kept_anyway: float
    notes: tuple[str, ...] = ()

    @property
    def total(self) -> float:
        return float(sum(self.per_edge))

    def per_example(self, batch: int) -> float:
        """``total / batch``: the paper's per-mini-batch-element figure."""
        return self.total / batch

    def __repr__(self) -> str:
        return f"Memory(total={self.total:,.1f} bytes over {len(self.arrays)} arrays)"


def _key_text(g: VectorLCG, key: str) -> str:
    if key.startswith("value:"):
        v = int(key.split(":")[1])
        if 0 <= v < g.n_vertices:
            return g.names[v]
    return key.split("#")[0]


def memory(g: VectorLCG) -> Memory:
    """Bytes the reverse sweep must keep, following each array's dtype.

    Every operator lists the arrays it needs (:class:`Retained`).  Arrays
    with the same key are stored once; the values of input vertices are free
    (the caller keeps its parameters anyway); an array that can be rebuilt
    from another (a ReLU mask from the ReLU's output, im2col columns from the
    image) is free when that one is stored, and otherwise the cheaper of the
    two is stored.  These are the rules of the RAD paper's Appendix A.

    >>> import numpy as np
    >>> from minirad.tracing.arrays import trace_arrays, relu
    >>> x = np.ones((4, 3), dtype=np.float32)
    >>> g = trace_arrays(lambda W: relu(x @ W).sum(), np.ones((3, 2), np.float32))
    >>> m = memory(g)     # x (4x3 floats) for dW; the ReLU mask (8 bits) for the relu
    >>> m.total, m.per_edge
    (49.0, (48.0, 1.0, 0.0))
    """
    free = {value_key(v) for v in g.inputs}
    charged = [0] * g.n_edges
    notes: list[list[str]] = [[] for _ in range(g.n_edges)]
    bits: dict[str, int] = {}
    kept = {}
    deferred = []
    for e, op in enumerate(g.labels):
        for r in op.retained:
            if r.key in free:
                kept[r.key] = r.nbits
                notes[e].append(f"{_key_text(g, r.key)} kept anyway")
            elif r.recompute_from is not None:
                deferred.append((e, r))
            elif r.key not in bits:
                bits[r.key] = r.nbits
                charged[e] += r.nbits
            else:
                notes[e].append(f"{_key_text(g, r.key)} shared")
    # arrays cheaper to rebuild from their source keep the source first (im2col patches keep
    # the image), so that arrays rebuilt from those sources (ReLU masks) then find them kept
    deferred.sort(key=lambda item: not 0 < item[1].source_bits < item[1].nbits)
    for e, r in deferred:
        source = r.recompute_from
        if r.key in bits:
            notes[e].append(f"{_key_text(g, r.key)} shared")
        elif source in free:
            notes[e].append(f"{_key_text(g, source)} kept anyway")
        elif source in bits:
            notes[e].append(f"rebuilt from {_key_text(g, source)}")
        elif 0 < r.source_bits < r.nbits:   # keep the smaller source and rebuild from it
            bits[source] = r.source_bits
            charged[e] += r.source_bits
            notes[e].append(f"keeps {_key_text(g, source)}, rebuilds the rest")
        else:
            bits[r.key] = r.nbits
            charged[e] += r.nbits
    return Memory(tuple(c / 8 for c in charged), {k: b / 8 for k, b in bits.items()},
                  sum(kept.values()) / 8, tuple("; ".join(n) for n in notes))


# --------------------------------------------------------------- scalarize
def entry_names(name: str, shape: tuple) -> list[str]:
    """Names of the scalar copies of an array vertex: ``x`` or ``x[0,1]``, ..."""
    if shape == ():
        return [name]
    return [f"{name}[{','.join(map(str, idx))}]" for idx in np.ndindex(*shape)]


def scalarize(g: VectorLCG, limit: int = SCALARIZE_LIMIT) -> LCG:
    """The scalar LCG of a vector LCG: one vertex per array entry, one edge per
    nonzero entry of each operator's matrix (the 1x1 blocks).

    Every scalar algorithm (Bauer's paths, elimination, Algorithm 1, the
    pictures) then applies.  Refused when the result would exceed ``limit``
    scalar edges or vertices.

    >>> import numpy as np
    >>> from minirad.tracing.arrays import trace_arrays
    >>> g = trace_arrays(lambda x: (x * x).sum(), np.array([1.0, 2.0]))
    >>> s = scalarize(g)
    >>> s.n_vertices, s.n_edges, [s.partial(u, v) for u, v, _ in s.edges()]
    (5, 4, [2.0, 4.0, 1.0, 1.0])
    """
    sizes = [math.prod(s) for s in g.shapes]
    if sum(sizes) > limit:
        raise ValueError(f"scalarizing makes {sum(sizes):,} scalar vertices, above the limit "
                         f"of {limit:,}; pass a larger limit")
    first = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    src, dst, partials = [], [], []
    total = 0
    for u, v, op in g.edges():
        try:
            dense = op.to_dense(limit=max(DENSE_LIMIT, 50 * limit))
        except ValueError as error:
            raise ValueError(f"cannot scalarize edge {g.names[u]} -> {g.names[v]}: "
                             f"{error}") from None
        rows, cols = np.nonzero(dense)
        total += len(rows)
        if total > limit:
            raise ValueError(f"scalarizing makes more than {limit:,} scalar edges; pass a "
                             f"larger limit")
        src.append(first[u] + cols)
        dst.append(first[v] + rows)
        partials.append(dense[rows, cols].astype(np.float64))
    names = [n for v in range(g.n_vertices) for n in entry_names(g.names[v], g.shapes[v])]
    values = (np.concatenate([np.asarray(x, dtype=np.float64).reshape(-1) for x in g.values])
              if g.values is not None and names else None)

    def concat(parts):
        return np.concatenate(parts) if parts else np.zeros(0)
    inputs = [i for v in g.inputs for i in range(first[v], first[v + 1])]
    outputs = [i for v in g.outputs for i in range(first[v], first[v + 1])]
    ops = ["input" if g.kind(v) == INPUT else "" for v in range(g.n_vertices)
           for _ in range(sizes[v])]
    return LCG(names, concat(src), concat(dst), concat(partials), inputs, outputs,
               values=values, ops=ops)


def vertex_copies(g: VectorLCG, vertex) -> range:
    """The numbers of a vertex's scalar copies in :func:`scalarize` ``(g)``."""
    v = g.index(vertex)
    start = sum(math.prod(s) for s in g.shapes[:v])
    return range(start, start + math.prod(g.shapes[v]))


def from_chain(chain) -> VectorLCG:
    """The vector LCG of a chain of Jacobians ``J_L ... J_1`` (``chain[0]`` applied
    first): vertices ``theta``, ``v1``, ..., ``y`` holding vectors, one dense edge
    per factor.  Vertex ``l`` is position ``l`` of :mod:`minirad.randomized.chains`, and
    ``scalarize(from_chain(chain))`` is ``injection.chain_graph(chain)`` up to names.

    >>> g = from_chain([np.ones((3, 1)), np.ones((2, 3))])
    >>> g.names, g.shapes
    (('theta', 'v1', 'y'), ((1,), (3,), (2,)))
    """
    from .operators import Dense

    if isinstance(chain, np.ndarray) or not len(chain):
        raise ValueError("a chain is a non-empty list of 2-D matrices")
    factors = [np.asarray(m, dtype=np.float64) for m in chain]
    for l, m in enumerate(factors):
        if m.ndim != 2:
            raise ValueError(f"chain[{l}] has shape {m.shape}; factors are 2-D matrices")
        if l and m.shape[1] != factors[l - 1].shape[0]:
            raise ValueError(f"chain[{l}] has {m.shape[1]} columns but chain[{l - 1}] has "
                             f"{factors[l - 1].shape[0]} rows")
        if not np.all(np.isfinite(m)):
            raise ValueError(f"chain[{l}] has a non-finite entry")
    L = len(factors)
    names = ["theta"] + [f"v{l}" for l in range(1, L)] + ["y"]
    shapes = [(factors[0].shape[1],)] + [(m.shape[0],) for m in factors]
    labels = [Dense(m, (m.shape[0],), (m.shape[1],)) for m in factors]
    return VectorLCG(names, range(L), range(1, L + 1), labels, [0], [L], shapes=shapes)


def vectorize(g: LCG) -> VectorLCG:
    """The scalar LCG ``g`` as a vector LCG: every vertex an array of shape (), every
    partial a 1 x 1 operator.  The scalar graph is the special case of the vector
    one: ``scalarize(vectorize(g))`` gives ``g``'s vertices, edges and partials back.

    >>> from minirad import examples
    >>> v = vectorize(examples.lecture())
    >>> v.shape("x1"), v.labels[0].kind, scalarize(v).n_edges
    ((), 'dense', 8)
    """
    from .operators import Dense

    if not isinstance(g, LCG):
        raise TypeError(f"vectorize takes an LCG, not {type(g).__name__}")
    labels = [Dense(np.array([[p]], dtype=np.float64), (), ()) for p in g.partials.tolist()]
    values = np.asarray(g.values, dtype=np.float64)
    known = bool(np.all(np.isfinite(values)))
    return VectorLCG(g.names, g.sources, g.targets, labels, g.inputs, g.outputs,
                     values=[np.asarray(x) for x in values] if known else None,
                     ops=g.ops, shapes=[()] * g.n_vertices)
