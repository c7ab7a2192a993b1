"""The linearized computational graph (LCG).

An LCG is a directed acyclic graph whose vertices are the values of a
program and whose edge ``(u, v)`` carries the local derivative ``dv/du``,
its *label*.  Every other part of minirad is a function over this one object.

A vertex holds a number or an array: its ``shape`` is ``()`` for a number.
An edge between two numbers carries a float (the partial derivative); an
edge that touches an array carries the Jacobian block as a structured linear
operator (:mod:`minirad.graph.operators`: a diagonal, a bit mask, a stored
matrix...), the vectorized graph of the RAD paper's Sec. 3.2 and Fig. 3.  A
graph of numbers only is the common case of the course, and it is stored
compactly: one float64 array of partials (``g.labels``) and one of values.
Either way ``g.labels`` and ``g.algebra`` (:mod:`minirad.graph.labels`) are
what the algorithms read, so one recurrence serves both.

Conventions (see DESIGN.md):

* vertices are numbered ``0 .. n-1`` in a topological order, so every edge
  goes from a lower to a higher number;
* inputs have no predecessors and outputs have no successors; a vertex is an
  input, an output or an intermediate, never two of these;
* the edges into a vertex keep the order of its operands, so that
  ``g.op(v)`` (a template such as ``"{0} - {1}"``) can be filled in with the
  names of ``g.predecessors(v)``.

The object is immutable: functions that transform a graph return a new one.

>>> g = LCG.from_edges([("x", "a", 2.0), ("a", "y", 3.0), ("x", "y", 1.0)],
...                    inputs=["x"], outputs=["y"])
>>> g
LCG(3 vertices: 1 input, 1 intermediate, 1 output; 3 edges)
>>> g.label("x", "a"), g.successors("x")
(2.0, (1, 2))
>>> import numpy as np
>>> from minirad.graph.operators import Diagonal
>>> h = LCG(["x", "y"], [0], [1], [Diagonal(np.array([2.0, 3.0]))], [0], [1],
...         values=[np.ones(2), np.array([2.0, 3.0])])
>>> h.shape("y"), h.label("x", "y").kind
((2,), 'diagonal')
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import networkx as nx
import numpy as np

from .labels import FLOATS, Algebra
from .levels import levels
from .names import VertexNames, VertexOps, vertex_number
from .operators import OPERATORS, Operator

__all__ = ["INPUT", "INTERMEDIATE", "KINDS", "LCG", "OUTPUT", "levels", "reachable", "relabelled"]

INPUT, INTERMEDIATE, OUTPUT = "input", "intermediate", "output"
KINDS = (INPUT, INTERMEDIATE, OUTPUT)

_PLACEHOLDER = re.compile(r"\{(\d+)\}")

_FLOAT_MAX = sys.float_info.max  # a Python float: compared with an int exactly, never overflowing
# up to this many edges a stable argsort groups edges by source quickly enough
_SORT_EDGES = 50_000
# up to this many edges a Python search over adjacency lists beats SciPy's call overhead
_SMALL_SEARCH = 4_000


def plural(count: int, word: str) -> str:
    """``"1 edge"``, ``"3 edges"``: a count with its noun.

    >>> plural(1, "edge"), plural(3, "edge"), plural(2, "vertex")
    ('1 edge', '3 edges', '2 vertices')
    """
    if count == 1:
        return f"{count} {word}"
    return f"{count} {'vertices' if word == 'vertex' else word + 's'}"


def shape_text(shape: tuple) -> str:
    """``R^(150×300)`` for a shape, ``R`` for a number.

    >>> shape_text((150, 300)), shape_text(())
    ('R^(150×300)', 'R')
    """
    if not shape:
        return "R"
    return "R^(" + "×".join(str(s) for s in shape) + ")"


def value_key(v: int) -> str:
    """The key under which operators retain the value of vertex ``v`` (see
    :class:`minirad.graph.operators.Retained`); :func:`minirad.graph.memory.retained_memory`
    treats the values of input vertices (parameters, kept by the caller
    anyway) as free."""
    return f"value:{int(v)}"


class LCG:
    """A linearized computational graph: values as vertices, local partials on the edges.

    Build one with :meth:`LCG.from_edges` (by hand), :func:`minirad.trace`
    (from a Python function of numbers or arrays), :meth:`LCG.from_networkx`
    or :func:`minirad.load_graph`.  The constructor itself takes columns and is
    what those builders call.

    Parameters
    ----------
    names : sequence of str
        One unique name per vertex.
    sources : sequence of int
        The tail of each edge, as a position in ``names``.
    targets : sequence of int
        The head of each edge, as a position in ``names``.
    labels : sequence of float or Operator
        ``labels[e]`` is d targets[e] / d sources[e]: a finite real number
        between two numbers, a :class:`~minirad.graph.operators.Operator`
        (mapping the source's shape to the target's) otherwise.  An operator
        between two numbers (a 1 x 1 block) is stored as its float.
    inputs : sequence of int
        The input vertices, in the order of the Jacobian's columns.
    outputs : sequence of int
        The output vertices, in the order of the Jacobian's rows.
    values : sequence, optional
        Primal values: numbers (NaN where unknown), or one array per vertex.
    ops : sequence of str, optional
        The operation that made each vertex, as a template over its
        predecessors (``"sin({0})"``), ``"input"`` for inputs, or ``""``.
    shapes : sequence of tuple, optional
        Per vertex, when ``values`` does not give it (default: ``()``, a number).
    dtypes : sequence of numpy.dtype, optional
        Per vertex, when ``values`` does not give it (default: float64).
    injections : sequence of dict, optional
        Records of random matrices injected into the graph
        (:mod:`minirad.randomized.injection`), kept for pictures and listings.

    Raises
    ------
    ValueError
        When the columns disagree in length, a vertex number is out of range,
        a label is not finite or does not map its source's shape to its
        target's, a vertex is both an input and an output, or the edges make
        a directed cycle.
    TypeError
        When a column holds something of the wrong type (a name that is not
        text, a vertex number that is not an integer).

    See Also
    --------
    minirad.trace : The LCG of a Python function.
    LCG.from_edges : An LCG from a list of ``(u, v, label)`` triples.
    minirad.jacobian : The Jacobian of an LCG, by every exact method.

    Notes
    -----
    The vertices are numbered in a topological order, so every edge runs from
    a lower to a higher number; if the columns are not, the vertices are
    renumbered by a stable topological sort.  This is the graph of Griewank and
    Walther, *Evaluating Derivatives* (2nd ed., 2008), Sec. 2.2, and of the RAD
    paper (Oktay et al., ICLR 2021), Sec. 3 and Fig. 3 for arrays.

    A graph of numbers keeps ``labels`` and ``values`` as read-only float64
    arrays; otherwise ``labels`` is a tuple (floats and operators) and
    ``values`` a tuple of read-only arrays (or None when unknown).
    ``g.names`` is a tuple, or, for traced graphs, a
    :class:`minirad.graph.names.VertexNames`, which behaves as the tuple of
    the same names but writes the ``v<i>`` ones out only when they are read;
    ``g.ops`` likewise a tuple or a :class:`minirad.graph.names.VertexOps`.

    Examples
    --------
    >>> g = LCG(["x", "a", "y"], [0, 1, 0], [1, 2, 2], [2.0, 3.0, 1.0], [0], [2])
    >>> g
    LCG(3 vertices: 1 input, 1 intermediate, 1 output; 3 edges)
    >>> g.partial("a", "y"), [g.name(v) for v in g.successors("x")]
    (3.0, ['a', 'y'])
    """

    __slots__ = (
        "_names", "_ops", "values", "_shapes", "_dtypes", "sources", "targets", "_labels",
        "inputs", "outputs", "injections", "_memos",
    )

    def __init__(self, names, sources, targets, labels, inputs, outputs,
                 values=None, ops=None, shapes=None, dtypes=None, injections=()):
        names = [str(name) for name in names]
        n = len(names)
        # every id and number is checked before conversion: nothing truncated (0.7 -> 0),
        # wrapped (2**64 - 1 -> -1) or overflowed (10**400 -> inf) on the way in
        src = _vertex_numbers(sources, n, "edge source")
        dst = _vertex_numbers(targets, n, "edge target")
        labels = _label_column(labels)
        if not (len(src) == len(dst) == len(labels)):
            raise ValueError(
                f"sources, targets and labels must have one entry per edge; got lengths "
                f"{len(src)}, {len(dst)} and {len(labels)}")
        ops = [""] * n if ops is None else [str(op) for op in ops]
        if len(ops) != n:
            raise ValueError(f"ops must have one entry per vertex ({n}); got {len(ops)}")
        _check_text(names, "vertex name")
        _check_text(ops, "operation")
        inputs = tuple(_vertex_numbers(inputs, n, "input").tolist())
        outputs = tuple(_vertex_numbers(outputs, n, "output").tolist())
        if isinstance(labels, np.ndarray) and _numbers_only(values, shapes):
            values = np.full(n, np.nan) if values is None else _reals(
                [_number(x) for x in values], "value")
            if len(values) != n:
                raise ValueError(f"values must have one entry per vertex ({n}); got "
                                 f"{len(values)}")
            infinite = np.flatnonzero(np.isinf(values))
            if len(infinite):
                v = infinite[0]
                raise ValueError(f"the value of vertex {names[v]} is {values[v]}; a primal value "
                                 f"is a finite number, or NaN where it is unknown")
            _validate(names, src, dst, labels, inputs, outputs)
            dtypes = _dtype_column(dtypes, n)
            order = _topological_order(names, src, dst)
            if order is not None:
                names, src, dst, values, ops, inputs, outputs = _renumber(
                    order, names, src, dst, values, ops, inputs, outputs)
                dtypes = None if dtypes is None else tuple(dtypes[i] for i in order)
            grouped = np.argsort(dst, kind="stable")  # operand order survives within a target
            self._set(names, ops, values, src[grouped], dst[grouped], labels[grouped],
                      inputs, outputs, dtypes=dtypes, injections=tuple(injections))
            return
        self._set_blocks(names, src, dst, list(labels), inputs, outputs, values, ops, shapes,
                         dtypes, injections)

    def _set_blocks(self, names, src, dst, labels, inputs, outputs, values, ops, shapes,
                    dtypes, injections):
        """The general case: some vertex is an array, so some label is an operator."""
        n = len(names)
        if values is not None:
            values = [_read_only(x) for x in values]
            if len(values) != n:
                raise ValueError(f"values must have one array per vertex ({n}), not "
                                 f"{len(values)}")
            shapes = [x.shape for x in values]
            dtypes = [x.dtype for x in values]
        elif shapes is None:
            shapes = [()] * n
        shapes = [_shape_of(shape, names[v] if v < n else "?") for v, shape in
                  enumerate(shapes)]
        dtypes = list(_dtype_column(dtypes, n) or [np.dtype(np.float64)] * n)
        if len(shapes) != n:
            raise ValueError(f"shapes must have one entry per vertex ({n}); got {len(shapes)}")
        labels = _checked_labels(names, src, dst, labels, shapes)
        _validate(names, src, dst, None, inputs, outputs)
        if values is not None:
            _check_values(names, values, unknown_allowed=all(s == () for s in shapes))
        order = _topological_order(names, src, dst)
        if order is not None:
            new = np.empty_like(order)
            new[order] = np.arange(n)
            names, ops = [names[i] for i in order], [ops[i] for i in order]
            shapes, dtypes = [shapes[i] for i in order], [dtypes[i] for i in order]
            values = None if values is None else [values[i] for i in order]
            src, dst = new[src], new[dst]
            inputs = tuple(int(new[v]) for v in inputs)
            outputs = tuple(int(new[v]) for v in outputs)
        grouped = np.argsort(dst, kind="stable")  # operand order survives within a target
        labels = [labels[e] for e in grouped]
        if all(s == () for s in shapes):
            # every vertex a number: every label is a float (1 x 1 blocks were stored as
            # floats), so the graph takes the compact form of a graph of numbers
            numbers = np.full(n, np.nan) if values is None else np.array(
                [float(x) for x in values])
            self._set(names, ops, numbers, src[grouped], dst[grouped],
                      np.array(labels, dtype=np.float64), inputs, outputs, tuple(dtypes),
                      tuple(injections))
            return
        self._set(names, ops, None if values is None else tuple(values), src[grouped],
                  dst[grouped], tuple(labels), inputs, outputs, tuple(dtypes),
                  tuple(injections), tuple(shapes))

    @classmethod
    def from_trusted_arrays(cls, names, sources, targets, partials, inputs, outputs,
                            values=None, ops=None, in_edges_ptr=None) -> LCG:
        """Build a graph of numbers without validation, for producers that
        guarantee the invariants.

        The caller promises what the constructor would otherwise check or
        establish: names unique, vertices numbered topologically (every edge
        from a lower to a higher number), edges grouped by target in operand
        order, no duplicate edges, finite partials, inputs without
        predecessors and outputs without successors.  Tracers, elimination
        and samplers know this by construction and skip an O(edges log
        edges) check; anything else should call :class:`LCG` itself.  A
        producer that already has :attr:`in_edges_ptr` (an int64 array of
        ``n_vertices + 1`` offsets) may hand it over, sparing the graph from
        working it out again.

        >>> g = LCG.from_trusted_arrays(["x", "y"], [0], [1], [2.0], [0], [1])
        >>> g.label("x", "y"), g.value("x")
        (2.0, nan)
        """
        n = len(names)
        values = np.full(n, np.nan) if values is None else values
        ops = [""] * n if ops is None else ops
        g = cls.__new__(cls)
        # _set keeps a tuple as it is (tuple() of a tuple is no copy): no list in between
        names = names if isinstance(names, (VertexNames, tuple)) else list(names)
        g._set(names, ops, np.asarray(values, dtype=np.float64),
               np.asarray(sources, dtype=np.int64), np.asarray(targets, dtype=np.int64),
               np.asarray(partials, dtype=np.float64), tuple(inputs), tuple(outputs))
        if in_edges_ptr is not None:
            ptr = np.asarray(in_edges_ptr, dtype=np.int64)
            if ptr.shape != (n + 1,) or ptr[0] != 0 or ptr[-1] != g.n_edges:
                raise ValueError(f"in_edges_ptr must hold {n + 1} offsets from 0 to "
                                 f"{g.n_edges}; got shape {ptr.shape}")
            ptr.flags.writeable = False
            g._memos["in_ptr"] = ptr
        return g

    @classmethod
    def from_trusted_blocks(cls, names, sources, targets, labels, inputs, outputs, values,
                            ops) -> LCG:
        """Build a graph of arrays without validation, for the array tracer, which
        guarantees what :class:`LCG` would check: names unique, vertices numbered
        topologically, edges grouped by target in operand order and never repeated,
        one operator per edge mapping its source's shape to its target's, and one
        finite array per vertex.  An operator between two numbers becomes
        its float, as the constructor makes it.  (:meth:`from_trusted_arrays` is the
        same for graphs of numbers.)

        >>> from minirad.graph.operators import Diagonal
        >>> values = [np.ones(2), np.array([2.0, 3.0])]
        >>> for v in values:
        ...     v.flags.writeable = False
        >>> g = LCG.from_trusted_blocks(["x", "y"], [0], [1], [Diagonal(values[1])], [0], [1],
        ...                             values, ["input", "{0} * c"])
        >>> g.label("x", "y").kind, g.shape("y")
        ('diagonal', (2,))
        """
        shapes = tuple(x.shape for x in values)
        if all(shape == () for shape in shapes):  # the compact graph of numbers
            return cls(names, sources, targets, labels, inputs, outputs, values=values, ops=ops)
        src = np.asarray(sources, dtype=np.int64)
        dst = np.asarray(targets, dtype=np.int64)
        labels = tuple(float(label.to_dense()[0, 0]) if shapes[u] == () == shapes[v] and
                       isinstance(label, Operator) else label
                       for u, v, label in zip(sources, targets, labels))
        # a value that views memory someone else can write is copied, as the constructor does
        values = tuple(_read_only(x) for x in values)
        g = cls.__new__(cls)
        g._set(tuple(names), ops, values, src, dst, labels, tuple(inputs),
               tuple(outputs), tuple(x.dtype for x in values), (), shapes)
        return g

    @classmethod
    def traced(cls, names, sources, targets, labels: Callable[[], Sequence], inputs, outputs,
               values, ops) -> LCG:
        """A traced graph, built without validation (the tracer guarantees what the
        constructor checks: see :meth:`from_trusted_blocks`), whose labels are
        given, or worked out by ``labels()`` when first read.  ``values`` are floats on a graph
        of numbers, else read-only arrays (floats among them are numbers)."""
        g = cls.__new__(cls)   # (the tracer's own arrays, kept as they are: no copy)
        src, dst = np.asarray(sources, dtype=np.int64), np.asarray(targets, dtype=np.int64)
        if all(type(x) is float for x in values):     # numbers
            if not callable(labels):
                labels = np.asarray(labels, dtype=np.float64)
            g._set(names, ops, np.array(values, dtype=np.float64), src, dst, labels,
                   tuple(inputs), tuple(outputs))
        elif all(np.shape(x) == () for x in values):   # numbers as arrays of shape ()
            labels = functools.partial(_as_floats, labels)
            g._set(names, ops, np.array([float(x) for x in values]), src, dst, labels,
                   tuple(inputs), tuple(outputs))
        else:
            values = tuple(x if isinstance(x, np.ndarray) else np.asarray(x, dtype=np.float64)
                           for x in values)
            g._set(names, ops, values, src, dst, labels, tuple(inputs), tuple(outputs),
                   tuple(x.dtype for x in values), (), tuple(x.shape for x in values))
        return g

    def _set(self, names, ops, values, src, dst, labels, inputs, outputs, dtypes=None,
             injections=(), shapes=None):
        for array in (values, src, dst, labels):
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
        # a traced graph's names and operations may come as functions: worked out when read
        self._names = names if callable(names) or isinstance(names, VertexNames) else tuple(
            names)
        self._ops = ops if callable(ops) or isinstance(ops, VertexOps) else tuple(ops)
        self.values = values
        # a traced program of numbers has millions of vertices, all of shape () and float64:
        # those two columns are written out only if someone reads them
        self._shapes = shapes
        self._dtypes = dtypes
        self.sources = src
        self.targets = dst
        self._labels = labels
        self.inputs = inputs
        self.outputs = outputs
        self.injections = injections
        self._memos = {}

    # ------------------------------------------------------------------ build
    @classmethod
    def from_edges(cls, edges: Iterable, inputs: Sequence, outputs: Sequence,
                   values: Mapping | Sequence | None = None,
                   ops: Mapping | Sequence | None = None,
                   vertices: Sequence | None = None) -> LCG:
        """Build an LCG by hand, e.g. from a lecture slide.

        ``edges`` holds triples ``(u, v, label)``, the label a number or a
        Jacobian block (:mod:`minirad.graph.operators`).  Vertices are named by
        strings, or by integers (then named ``v0``, ``v1``, ...).  Without
        ``vertices`` the graph has every vertex named in an edge, in
        ``inputs`` or in ``outputs``; with it, exactly those vertices, and an
        edge naming any other vertex is an error (a guard against typos).
        ``values`` and ``ops`` optionally map vertex names to primal values
        (numbers or arrays) and operation templates.

        >>> g = LCG.from_edges([("x1", "v", 0.5), ("x2", "v", 2.0), ("v", "y", -1.0)],
        ...                    inputs=["x1", "x2"], outputs=["y"], values={"x1": 2.0})
        >>> g.kind("v"), g.predecessors("v"), g.value("x1")
        ('intermediate', (0, 1), 2.0)
        >>> LCG.from_edges([("a", "b", 1.0), ("b", "a", 1.0)], inputs=[], outputs=[])
        Traceback (most recent call last):
        ...
        ValueError: the edges contain a directed cycle: a -> b -> a; an LCG must be acyclic
        """
        for role, given in (("inputs", inputs), ("outputs", outputs)):
            if isinstance(given, str):
                raise ValueError(f"{role} must be a list of vertex names, e.g. [{given!r}], "
                                 f"not the string {given!r}")
        edges = list(edges)
        for position, edge in enumerate(edges):
            if not (isinstance(edge, (tuple, list)) and len(edge) == 3):
                raise ValueError(f"edge #{position} is {edge!r:.80}; each edge must be a "
                                 f"triple (u, v, label dv/du)")
        def name_of(vertex) -> str:
            if isinstance(vertex, (bool, np.bool_)) or not isinstance(
                    vertex, (str, int, np.integer)):
                raise ValueError(f"vertex {vertex!r} must be named by a str or an int")
            return f"v{int(vertex)}" if isinstance(vertex, (int, np.integer)) else vertex

        # with declared vertices the numbering is fixed up front and nothing new may appear
        declared = vertices is not None
        index: dict[str, int] = {}
        for v in vertices or ():
            index.setdefault(name_of(v), len(index))
        if declared and len(index) != len(vertices):
            raise ValueError("vertices lists a vertex twice; names must be unique")

        def key(vertex, role="edge"):
            name = name_of(vertex)
            if declared and name not in index:
                raise ValueError(f"{role} names unknown vertex {vertex!r}; the declared vertices "
                                 f"are {list(index)}")
            return index.setdefault(name, len(index))

        # number inputs first so a hand-typed slide keeps its reading order
        input_ids = [key(v, "inputs") for v in inputs]
        src, dst, partials = [], [], []
        for u, v, partial in edges:
            src.append(key(u, f"edge ({u!r}, {v!r})"))
            dst.append(key(v, f"edge ({u!r}, {v!r})"))
            partials.append(partial if isinstance(partial, Operator)
                            else _as_partial(partial, u, v))
        output_ids = [key(v, "outputs") for v in outputs]
        names = list(index)
        if not declared:
            # an input or output that no edge touches is almost always a typo
            touched = set(src) | set(dst)
            for role, ids in (("input", input_ids), ("output", output_ids)):
                for i in ids:
                    if i not in touched and edges:
                        in_edges = [n for j, n in enumerate(names) if j in touched]
                        raise ValueError(
                            f"{role} {names[i]!r} appears in no edge; the vertices in edges are "
                            f"{in_edges} (to keep an isolated {role} on purpose, list every "
                            f"vertex in vertices=)")
        return cls(names, src, dst, partials, input_ids, output_ids,
                   values=_per_vertex(values, names, "values", None, lambda x: x),
                   ops=_per_vertex(ops, names, "ops", "", str))

    # ------------------------------------------------------------------ memo
    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """A value derived from this graph, computed by ``compute()`` on first
        use and kept: the graph is immutable, so it never goes stale.

        Modules name their keys ``"<module>.<what>"`` so they cannot collide.
        Whatever is stored is shared by every caller, so store arrays
        read-only (or never modify them).

        >>> g = LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=["y"])
        >>> calls = []
        >>> g.memo("doc.twice", lambda: calls.append(1) or 2 * g.n_edges)
        2
        >>> g.memo("doc.twice", lambda: calls.append(1) or 2 * g.n_edges), len(calls)
        (2, 1)
        >>> "doc.twice" in g.memos
        True
        """
        try:
            return self._memos[key]
        except KeyError:
            value = self._memos[key] = compute()
            return value

    @property
    def memos(self) -> Mapping[str, Any]:
        """A read-only view of what :meth:`memo` holds (for inspection and tests)."""
        return MappingProxyType(self._memos)

    # ------------------------------------------------------- edge labels
    @property
    def names(self) -> Sequence[str]:
        """The vertices' names, in vertex order (a tuple, or a sequence that behaves
        as one: :class:`minirad.graph.names.VertexNames`)."""
        if callable(self._names):
            self._names = self._names()
        return self._names

    @property
    def ops(self) -> Sequence[str]:
        """The operation that made each vertex, as a template over its predecessors
        (``"sin({0})"``), ``"input"`` for an input, ``""`` where unknown."""
        if callable(self._ops):
            self._ops = self._ops()
        return self._ops

    @property
    def labels(self):
        """The edge labels, in edge order: floats (a read-only float64 array) on a graph
        of numbers, floats and Jacobian blocks otherwise.  A traced graph works them
        out from its tape when they are first read (:mod:`minirad.tracing.tracer`)."""
        labels = self._labels
        if callable(labels):
            labels = self._labels = _label_storage(labels(), self._shapes is None)
        return labels

    @property
    def algebra(self) -> Algebra:
        """How to multiply and add this graph's labels: :data:`~minirad.graph.labels.FLOATS`
        when every label is a float, :data:`~minirad.graph.operators.OPERATORS` (Jacobian
        blocks, floats among them) otherwise.  Algorithms choose their fast paths by it."""
        return FLOATS if self._shapes is None else OPERATORS

    @property
    def partials(self) -> np.ndarray:
        """The labels of a graph of numbers: one float64 partial per edge.

        A graph with array vertices has Jacobian blocks instead; its
        :attr:`labels` hold them, and :func:`minirad.scalarize` turns it into
        a graph of numbers, one vertex per entry.
        """
        if not isinstance(self.labels, np.ndarray):
            raise TypeError("this graph has array vertices, so its labels are Jacobian blocks, "
                            "not floats; read g.labels (or g.label(u, v)), or scalarize(g) for "
                            "one float partial per scalar edge")
        return self.labels

    # ---------------------------------------------------------------- queries
    @property
    def n_vertices(self) -> int:
        # a traced graph's names are worked out when read; its values are always there
        return len(self.values) if callable(self._names) else len(self._names)

    @property
    def n_edges(self) -> int:
        return len(self.sources)

    def __len__(self) -> int:
        return self.n_vertices

    @property
    def shapes(self) -> Sequence[tuple]:
        """The shape of every vertex (``()`` for a number)."""
        return _Same((), self.n_vertices) if self._shapes is None else self._shapes

    @property
    def dtypes(self) -> Sequence[np.dtype]:
        """The dtype of every vertex's value."""
        if self._dtypes is None:
            return _Same(np.dtype(np.float64), self.n_vertices)
        return self._dtypes

    @property
    def intermediates(self) -> tuple[int, ...]:
        """Vertices that are neither inputs nor outputs, in topological order."""
        if "intermediates" not in self._memos:
            middle = np.flatnonzero(self._kinds == KINDS.index(INTERMEDIATE))
            self._memos["intermediates"] = tuple(middle.tolist())
        return self._memos["intermediates"]

    @property
    def _kinds(self) -> np.ndarray:
        """Per vertex, its kind as a position in ``KINDS``."""
        if "kinds" not in self._memos:
            kinds = np.full(self.n_vertices, KINDS.index(INTERMEDIATE), dtype=np.int8)
            kinds[list(self.inputs)] = KINDS.index(INPUT)
            kinds[list(self.outputs)] = KINDS.index(OUTPUT)
            self._memos["kinds"] = kinds
        return self._memos["kinds"]

    def index(self, vertex) -> int:
        """The number of a vertex given by number or by name."""
        return vertex_number(vertex, self.names, self._find_name)

    def _find_name(self, name: str) -> int:
        if isinstance(self.names, VertexNames):
            return self.names.find(name)  # no dictionary of every name needed
        if "by_name" not in self._memos:
            self._memos["by_name"] = {name: i for i, name in enumerate(self.names)}
        return self._memos["by_name"].get(name, -1)

    def name(self, vertex) -> str:
        return self.names[self.index(vertex)]

    def kind(self, vertex) -> str:
        """``"input"``, ``"intermediate"`` or ``"output"``."""
        return KINDS[self._kinds[self.index(vertex)]]

    def value(self, vertex):
        """The primal value: a float for a number (NaN when unknown), an array otherwise."""
        v = self.index(vertex)
        if isinstance(self.values, np.ndarray):
            return float(self.values[v])
        if self.values is None:
            raise ValueError("this graph was built without values (shapes only)")
        return self.values[v]

    def shape(self, vertex) -> tuple[int, ...]:
        return self.shapes[self.index(vertex)]

    def size(self, vertex) -> int:
        """The number of entries of a vertex's value (1 for a number)."""
        return math.prod(self.shape(vertex))

    def dtype(self, vertex) -> np.dtype:
        return self.dtypes[self.index(vertex)]

    def op(self, vertex) -> str:
        return self.ops[self.index(vertex)]

    def predecessors(self, vertex) -> tuple[int, ...]:
        """Predecessors of a vertex, in operand order."""
        start, stop = self._in_range(self.index(vertex))
        return tuple(self.sources[start:stop].tolist())

    def successors(self, vertex) -> tuple[int, ...]:
        """Successors of a vertex, in increasing order."""
        order, ptr = self.out_edges_csr
        v = self.index(vertex)
        return tuple(self.targets[order[ptr[v]:ptr[v + 1]]].tolist())

    def in_degree(self, vertex) -> int:
        start, stop = self._in_range(self.index(vertex))
        return stop - start

    def out_degree(self, vertex) -> int:
        _, ptr = self.out_edges_csr
        v = self.index(vertex)
        return int(ptr[v + 1] - ptr[v])

    def label(self, u, v):
        """The label d v / d u of edge (u, v): a float, or a Jacobian block."""
        label = self.labels[self.edge_index(u, v)]
        return float(label) if isinstance(self.labels, np.ndarray) else label

    def partial(self, u, v) -> float:
        """The partial dv/du on edge (u, v) of a graph of numbers."""
        return float(self.partials[self.edge_index(u, v)])

    def edge_index(self, u, v) -> int:
        """Position of edge (u, v) in ``sources``/``targets``/``labels``."""
        u, v = self.index(u), self.index(v)
        e = self._find_edge(u, v)
        if e < 0:
            start, stop = self._in_range(v)
            raise ValueError(f"there is no edge {self.names[u]} -> {self.names[v]}; the "
                             f"predecessors of {self.names[v]} are "
                             f"{[self.names[p] for p in self.sources[start:stop]]}")
        return e

    def has_edge(self, u, v) -> bool:
        return self._find_edge(self.index(u), self.index(v)) >= 0

    def _find_edge(self, u: int, v: int) -> int:
        """Position of edge (u, v), or -1 when there is none."""
        start, stop = self._in_range(v)
        hits = np.flatnonzero(self.sources[start:stop] == u)
        return int(start + hits[0]) if len(hits) else -1

    def edges(self):
        """Iterate over ``(u, v, label)`` triples, grouped by target."""
        labels = self.labels.tolist() if isinstance(self.labels, np.ndarray) else self.labels
        return zip(self.sources.tolist(), self.targets.tolist(), labels)

    # ------------------------------------------------- array views (cached)
    @property
    def in_edges_ptr(self) -> np.ndarray:
        """``ptr`` such that edges ``ptr[v]:ptr[v+1]`` are the edges into v."""
        if "in_ptr" not in self._memos:
            n, m = self.n_vertices, self.n_edges
            if m > 8 * n:
                # edges are grouped by target, so v's in-edges start at the first
                # target >= v: a binary search per vertex beats counting every
                # edge when vertices have many in-edges on average
                ptr = np.searchsorted(self.targets, np.arange(n + 1, dtype=np.int64))
                ptr = ptr.astype(np.int64, copy=False)
            else:
                ptr = np.zeros(n + 1, dtype=np.int64)
                np.cumsum(np.bincount(self.targets, minlength=n), out=ptr[1:])
            self._memos["in_ptr"] = ptr
        return self._memos["in_ptr"]

    @property
    def out_edges_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, ptr)``: edges ``order[ptr[v]:ptr[v+1]]`` leave v, by target."""
        if "out_csr" not in self._memos:
            n, m = self.n_vertices, self.n_edges
            ptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.sources, minlength=n), out=ptr[1:])
            # edges are already sorted by target, so grouping them by source is a
            # transposition: a stable sort on small graphs, and on large ones
            # SciPy's CSR-to-CSC conversion, a linear-time counting sort
            if m <= _SORT_EDGES:
                order = np.argsort(self.sources, kind="stable")
            else:
                import scipy.sparse as sp

                by_target = sp.csr_array((np.arange(m, dtype=np.int64), self.sources,
                                          self.in_edges_ptr), shape=(n, n))
                order = np.asarray(by_target.tocsc().data, dtype=np.int64)
            self._memos["out_csr"] = (order, ptr)
        return self._memos["out_csr"]

    @property
    def out_degrees(self) -> np.ndarray:
        """Out-degree of every vertex."""
        return np.diff(self.out_edges_csr[1])

    def _in_range(self, v: int) -> tuple[int, int]:
        ptr = self.in_edges_ptr
        return int(ptr[v]), int(ptr[v + 1])

    # ------------------------------------------------------------- display
    def __repr__(self) -> str:
        n_in, n_out = len(self.inputs), len(self.outputs)
        n_mid = self.n_vertices - n_in - n_out
        return (f"LCG({plural(self.n_vertices, 'vertex')}: "
                f"{plural(n_in, 'input')}, {plural(n_mid, 'intermediate')}, "
                f"{plural(n_out, 'output')}; {plural(self.n_edges, 'edge')})")

    def wengert(self) -> str:
        """The Wengert list: one line per vertex, in topological order.

        Each line assigns register ``v<i>`` from its operands and gives the
        primal value (a number) or the shape (an array), then the local
        derivatives of that line: the partials, or the kinds of the Jacobian
        blocks.  Inputs read ``v0 = x1`` (their name) and outputs are marked
        with theirs.

        >>> g = LCG.from_edges([("x", "y", 3.0)], inputs=["x"], outputs=["y"],
        ...                    values={"x": 2.0, "y": 6.0}, ops={"y": "3.0 * {0}"})
        >>> print(g.wengert())
        v0 = x          = 2.0
        v1 = 3.0 * v0   = 6.0   dv1/dv0 = 3.0   (output y)
        """
        register = [f"v{i}" for i in range(self.n_vertices)]
        ptr = self.in_edges_ptr.tolist()
        src = self.sources.tolist()
        labels = self.labels.tolist() if isinstance(self.labels, np.ndarray) else self.labels
        numbers = isinstance(self.values, np.ndarray)
        rows = []
        for v in range(self.n_vertices):
            preds = [register[u] for u in src[ptr[v]:ptr[v + 1]]]
            if self.kind(v) == INPUT:
                expr, derivatives, note = self.names[v], "", ""
            else:
                expr = fill_template(self.ops[v], preds)
                derivatives = ", ".join(
                    f"d{register[v]}/d{p} = {d!r}" if isinstance(d, float)
                    else f"d{register[v]}/d{p}: {d.label()}"
                    for p, d in zip(preds, labels[ptr[v]:ptr[v + 1]]))
                note = ""
                if self.kind(v) == OUTPUT:
                    note = f"(output {self.names[v]})"
                elif self.names[v] != register[v]:
                    note = f"({self.names[v]})"
            rows.append((f"{register[v]} = {expr}", self._shown_value(v, numbers), derivatives,
                         note))
        if not rows:
            return ""
        widths = [max(len(row[c]) for row in rows) for c in range(3)]
        lines = []
        for row in rows:
            parts = [row[c].ljust(widths[c]) for c in range(3)] + [row[3]]
            lines.append("   ".join(p for p in parts if p.strip()).rstrip())
        return "\n".join(lines)

    def _shown_value(self, v: int, numbers: bool) -> str:
        """``= 10.0`` for a number (``= ?`` when unknown), ``∈ R^(2×3)`` for an array."""
        if not numbers and self.shapes[v] != ():
            return f"∈ {shape_text(self.shapes[v])}"
        if self.values is None:
            return "= ?"
        value = float(self.values[v])
        return "= ?" if math.isnan(value) else f"= {value!r}"

    # --------------------------------------------------------------- networkx
    def to_networkx(self) -> nx.DiGraph:
        """A ``networkx.DiGraph`` keyed by vertex name.

        Nodes carry ``index``, ``kind``, ``op``, ``shape`` and ``value`` (a
        float, or the array); edges carry ``label`` (a float, or the Jacobian
        block) and, between numbers, ``partial``; ``graph["inputs"]`` and
        ``graph["outputs"]`` list names in Jacobian order.

        >>> g = LCG.from_edges([("x", "y", 3.0)], inputs=["x"], outputs=["y"])
        >>> G = g.to_networkx()
        >>> G.edges["x", "y"]["partial"], LCG.from_networkx(G).same_as(g)
        (3.0, True)
        """
        G = nx.DiGraph(inputs=[self.names[v] for v in self.inputs],
                       outputs=[self.names[v] for v in self.outputs])
        numbers = isinstance(self.values, np.ndarray)
        for v, name in enumerate(self.names):
            value = float(self.values[v]) if numbers else (
                None if self.values is None else self.values[v])
            G.add_node(name, index=v, kind=self.kind(v), op=self.ops[v], value=value,
                       shape=self.shapes[v])
        ptr = self.in_edges_ptr
        for e, (u, v, label) in enumerate(self.edges()):
            data = {"label": label, "operand": e - int(ptr[v])}
            if isinstance(label, float):
                data["partial"] = label
            G.add_edge(self.names[u], self.names[v], **data)
        return G

    @classmethod
    def from_networkx(cls, G: nx.DiGraph, inputs: Sequence | None = None,
                      outputs: Sequence | None = None) -> LCG:
        """Build an LCG from a ``networkx.DiGraph`` whose edges carry ``partial``
        (a float) or ``label`` (a float or a Jacobian block).

        Inputs and outputs are taken from the arguments, else from
        ``G.graph["inputs"/"outputs"]``, else from node ``kind`` attributes,
        else they are the vertices without predecessors / successors.  Node
        attributes ``value``, ``shape`` and ``op`` are kept; vertices are named
        ``str(node)`` and numbered by their ``index`` attribute where every
        node has one (as written by :meth:`to_networkx`); an edge attribute
        ``operand`` orders the edges into a vertex.
        """
        if not isinstance(G, nx.DiGraph) or G.is_multigraph():
            raise TypeError(f"from_networkx needs a networkx.DiGraph, not {type(G).__name__}")
        nodes = list(G)
        if all("index" in data for _, data in G.nodes(data=True)):
            _check_integer_attributes(((node, data["index"]) for node, data in G.nodes(data=True)),
                                      "node", "index")
            nodes.sort(key=lambda node: G.nodes[node]["index"])
        position = {node: i for i, node in enumerate(nodes)}

        def chosen(given, key, kind, degree):
            if given is None:
                given = G.graph.get(key)
            if given is None:
                given = [n for n in nodes if G.nodes[n].get("kind") == kind]
                if not given:
                    given = [n for n in nodes if degree(n) == 0]
            by_name = {str(n): n for n in nodes}
            resolved = []
            for n in given:
                if n in position:
                    resolved.append(position[n])
                elif str(n) in by_name:
                    resolved.append(position[by_name[str(n)]])
                else:
                    raise ValueError(f"{key[:-1]} {n!r} is not a node of the graph")
            return resolved

        src, dst, labels = [], [], []
        _check_integer_attributes((((u, v), data["operand"]) for u, v, data in G.edges(data=True)
                                   if "operand" in data), "edge", "operand")
        edges = sorted(G.edges(data=True),
                       key=lambda e: (position[e[1]], e[2].get("operand", 0)))
        for u, v, data in edges:
            if "label" in data and isinstance(data["label"], Operator):
                labels.append(data["label"])
            elif "partial" in data or "label" in data:
                labels.append(_as_partial(data.get("partial", data.get("label")), u, v))
            else:
                raise ValueError(f"edge {u!r} -> {v!r} has neither 'partial' nor 'label'; every "
                                 f"edge of an LCG carries its local derivative")
            src.append(position[u])
            dst.append(position[v])
        arrays = any(isinstance(G.nodes[n].get("value"), np.ndarray)
                     and G.nodes[n]["value"].shape != () for n in nodes)
        values = ([np.asarray(G.nodes[n]["value"]) for n in nodes] if arrays
                  else [_node_value(G, n) for n in nodes])
        shapes = [G.nodes[n].get("shape", ()) for n in nodes]
        return cls([str(n) for n in nodes], src, dst, labels,
                   chosen(inputs, "inputs", INPUT, G.in_degree),
                   chosen(outputs, "outputs", OUTPUT, G.out_degree),
                   values=values, ops=[str(G.nodes[n].get("op", "")) for n in nodes],
                   shapes=None if arrays or not any(shapes) else shapes)

    # ------------------------------------------------------------- equality
    def same_as(self, other: LCG) -> bool:
        """True when both graphs have identical vertices, edges, labels and values
        (Jacobian blocks compared entry by entry)."""
        if not (self.names == other.names and self.ops == other.ops
                and self.inputs == other.inputs and self.outputs == other.outputs
                and tuple(self.shapes) == tuple(other.shapes)
                and np.array_equal(self.sources, other.sources)
                and np.array_equal(self.targets, other.targets)):
            return False
        if isinstance(self.labels, np.ndarray) or isinstance(other.labels, np.ndarray):
            return (isinstance(self.labels, np.ndarray) and isinstance(other.labels, np.ndarray)
                    and np.array_equal(self.labels, other.labels)
                    and np.array_equal(self.values, other.values, equal_nan=True))
        same_labels = all(
            a == b if isinstance(a, float) or isinstance(b, float)
            else type(a) is type(b) and np.array_equal(a.to_dense(), b.to_dense())
            for a, b in zip(self.labels, other.labels))
        if self.values is None or other.values is None:
            return same_labels and self.values is other.values
        return same_labels and all(np.array_equal(a, b) for a, b in
                                   zip(self.values, other.values))


# ------------------------------------------------------- functions over an LCG
# the one tracer, set by minirad.tracing when it is imported
_TRACERS: list[Callable] = []


def use_tracer(trace: Callable) -> None:
    """Tell :func:`takes_graph_or_function` how to turn a function into an LCG.

    Parameters
    ----------
    trace : callable
        ``trace(f, *point)`` returns the LCG of ``f`` at ``point``;
        :mod:`minirad.tracing` passes :func:`minirad.trace`.

    Returns
    -------
    None
    """
    _TRACERS[:] = [trace]


def takes_graph_or_function(function: Callable) -> Callable:
    """Let ``function(g, ...)`` also be called as ``function(f, *point, **options)``.

    Parameters
    ----------
    function : callable
        A function whose first parameter is an LCG.

    Returns
    -------
    callable
        The same function, which also takes a Python function and the point
        to trace it at in place of the LCG (then the options by keyword).
        ``inspect.signature`` and ``help`` show ``function``'s own.

    Raises
    ------
    TypeError
        When called with something that is neither an LCG nor a callable,
        or with a function but no point.

    Examples
    --------
    >>> @takes_graph_or_function
    ... def size(g, scale=1):
    ...     return g.n_vertices * scale
    >>> size(lambda x, y: x * y + y, 2.0, 3.0, scale=10)
    40
    >>> size(lambda x: x)
    Traceback (most recent call last):
    ...
    TypeError: size(f, ...) needs the point to trace the function at, e.g. size(f, 2.0, 5.0)
    >>> size(3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: size works on an LCG (...) or on a function and the point to trace it at, not int
    """
    name = function.__name__
    parameters = inspect.signature(function).parameters.values()
    # how many positional arguments may follow the graph (None: any number)
    room = None if any(p.kind is p.VAR_POSITIONAL for p in parameters) else sum(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters) - 1

    @functools.wraps(function)
    def on_graph_or_function(g, *args, **kwargs):
        if isinstance(g, LCG):
            if room is not None and len(args) > room:
                raise TypeError(f"{name} got an LCG and {len(args)} more positional "
                                f"argument(s), but takes {room}: a point to trace at goes "
                                f"with a function, {name}(f, 2.0, 5.0), and options go by "
                                f"keyword")
            return function(g, *args, **kwargs)
        if callable(g):
            if not args:
                raise TypeError(f"{name}(f, ...) needs the point to trace the function at, "
                                f"e.g. {name}(f, 2.0, 5.0)")
            if not _TRACERS:
                raise TypeError(f"{name} was given a function, but no tracer is set up; "
                                f"import minirad")
            return function(_TRACERS[0](g, *args), **kwargs)
        raise TypeError(f"{name} works on an LCG (minirad.trace(f, *point), LCG.from_edges) "
                        f"or on a function and the point to trace it at, not "
                        f"{type(g).__name__}")

    on_graph_or_function.takes_graph_or_function = True
    return on_graph_or_function


def relabelled(g: LCG, labels: Mapping, injections=()) -> LCG:
    """A new graph: ``g`` with the edges of ``labels`` (edge number -> label)
    carrying new labels, and ``injections`` (records, see
    :mod:`minirad.randomized.injection`) added to ``g.injections``; names, edges,
    values and ``g`` itself unchanged.

    Only the new labels are checked (each must map its edge's source shape to
    its target shape): the rest of the graph was validated when ``g`` was
    built, so a graph is relabelled without rescanning its values (the patch
    arrays of a ConvNet are tens of megabytes).

    >>> g = LCG.from_edges([("x", "y", 2.0)], inputs=["x"], outputs=["y"])
    >>> relabelled(g, {0: 5.0}).label("x", "y"), g.label("x", "y")
    (5.0, 2.0)
    """
    if not isinstance(g, LCG):
        raise TypeError(f"relabelled takes an LCG, not {type(g).__name__}")
    new = list(g.labels.tolist() if isinstance(g.labels, np.ndarray) else g.labels)
    changed = {}
    for e, label in dict(labels).items():
        if isinstance(e, (bool, np.bool_)) or not isinstance(e, (int, np.integer)) \
                or not 0 <= e < g.n_edges:
            raise ValueError(f"edge {e!r} does not exist; the graph has {g.n_edges} edges "
                             f"(numbered 0..{g.n_edges - 1})")
        changed[int(e)] = label
    ends = np.array(list(changed), dtype=np.int64)
    checked = _checked_labels(g.names, g.sources[ends], g.targets[ends], list(changed.values()),
                              g.shapes)
    for e, label in zip(changed, checked):
        new[e] = label
    h = object.__new__(LCG)
    for slot in LCG.__slots__:     # every field is immutable: share it with g
        setattr(h, slot, getattr(g, slot))
    h._labels = _label_storage(new, isinstance(g.labels, np.ndarray))
    h.injections = tuple(g.injections) + tuple(injections)
    h._memos = {k: v for k, v in g._memos.items() if k in _STRUCTURAL_MEMOS}
    return h


# memos that depend on the vertices and edges only, not on the labels: a relabelled
# graph shares them
_STRUCTURAL_MEMOS = ("intermediates", "kinds", "by_name", "in_ptr", "out_csr")


def reachable(g: LCG, starts, direction: str = "forward") -> np.ndarray:
    """Mask of the vertices reachable from any of ``starts`` along the edges
    (``direction="forward"``) or against them (``"reverse"``); the starts themselves
    included.

    >>> g = LCG.from_edges([("x", "a", 1.0), ("a", "y", 1.0), ("x", "z", 1.0)],
    ...                    inputs=["x"], outputs=["y", "z"])
    >>> reachable(g, [g.index("y")], direction="reverse").tolist()
    [True, True, True, False]
    """
    if direction not in ("forward", "reverse"):
        raise ValueError(f"direction must be 'forward' or 'reverse', not {direction!r}")
    forward = direction == "forward"
    n = g.n_vertices
    starts = [int(v) for v in starts]
    if g.n_edges <= _SMALL_SEARCH:
        def adjacency_lists():
            if forward:
                order, ptr = g.out_edges_csr
                ends = g.targets[order].tolist()
            else:
                ptr, ends = g.in_edges_ptr, g.sources.tolist()
            bounds = ptr.tolist()
            return [ends[bounds[v]:bounds[v + 1]] for v in range(n)]

        adjacency = g.memo("reach.lists." + ("forward" if forward else "reverse"),
                           adjacency_lists)
        seen = [False] * n
        stack = []
        for s in starts:
            if not seen[s]:
                seen[s] = True
                stack.append(s)
        while stack:
            for w in adjacency[stack.pop()]:
                if not seen[w]:
                    seen[w] = True
                    stack.append(w)
        return np.array(seen, dtype=bool)
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    # one breadth-first search from an extra vertex n joined to every start
    tails, heads = (g.sources, g.targets) if forward else (g.targets, g.sources)
    rows = np.concatenate([tails, np.full(len(starts), n)])
    cols = np.concatenate([heads, np.asarray(starts, dtype=np.int64)])
    adjacency = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n + 1, n + 1))
    mask = np.zeros(n + 1, dtype=bool)
    mask[breadth_first_order(adjacency, n, directed=True, return_predecessors=False)] = True
    return mask[:n]


# ---------------------------------------------------------------- validation
def _show_int(x: int) -> str:
    """An integer for a message; a huge one by its size (``str`` refuses beyond
    4300 digits, and a 400-digit number helps nobody)."""
    if abs(x) < 10**24:
        return str(x)
    return f"an integer of about {int(abs(x).bit_length() * math.log10(2)) + 1} digits"


def _shown(x) -> str:
    """A JSON value for a message, as the file spells it, cut short."""
    if _is_integer(x):
        return _show_int(int(x))
    try:
        text = json.dumps(x, allow_nan=True)
    except (TypeError, ValueError, RecursionError):  # not JSON (the constructor takes any object)
        text = object.__repr__(x) if isinstance(x, (list, dict)) else repr(x)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_integer(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _items(given, fits) -> tuple[np.ndarray | None, list | None]:
    """``given`` as a flat numpy array when its dtype ``fits`` (a fast path for
    arrays), else as a flat list of Python objects to check one by one (a list
    from Python may hold a float, a bool or a huge integer that numpy would
    quietly convert)."""
    if isinstance(given, np.ndarray) and fits(given.dtype):
        return given.reshape(-1), None
    items = given.reshape(-1).tolist() if isinstance(given, np.ndarray) else list(given)
    return None, items


def _integer_type(t: type) -> bool:
    return issubclass(t, (int, np.integer)) and not issubclass(t, (bool, np.bool_))


def _real_type(t: type) -> bool:
    return _integer_type(t) or issubclass(t, (float, np.floating))


def _vertex_numbers(given, n: int, what: str) -> np.ndarray:
    """``given`` as int64 vertex numbers, each checked to be an integer in
    0..n-1 *before* conversion, so that nothing is truncated or wrapped.

    >>> _vertex_numbers([0.7], 2, "input")
    Traceback (most recent call last):
    ...
    TypeError: input #0 is 0.7 (float); vertex numbers are integers 0..1
    >>> _vertex_numbers(np.array([2**64 - 1], dtype=np.uint64), 2, "edge source")
    Traceback (most recent call last):
    ...
    ValueError: edge source #0 is 18446744073709551615, which names an unknown vertex; \
valid vertex numbers are 0..1
    """
    valid = f"0..{n - 1}" if n else "none (the graph has no vertices)"
    array, items = _items(given, lambda dtype: dtype.kind in "iu")
    if items is not None:
        if not all(_integer_type(t) for t in set(map(type, items))):
            i, x = next((i, x) for i, x in enumerate(items) if not _integer_type(type(x)))
            raise TypeError(f"{what} #{i} is {x!r:.40} ({type(x).__name__}); vertex numbers "
                            f"are integers {valid}")
        inside = not items or (min(items) >= 0 and max(items) < n)
        outside = [] if inside else [next(i for i, x in enumerate(items) if not 0 <= x < n)]
    else:
        outside = np.flatnonzero((array < 0) | (array >= n))
    if len(outside):
        i = int(outside[0])
        x = int(array[i]) if items is None else int(items[i])
        raise ValueError(f"{what} #{i} is {_show_int(x)}, which names an unknown vertex; valid "
                         f"vertex numbers are {valid}")
    return (array if items is None else np.asarray(items, dtype=np.int64)).astype(np.int64)


def _reals(given, what: str) -> np.ndarray:
    """``given`` as float64, refusing what is not a real number or is too large
    for a float64 (a huge integer would otherwise raise OverflowError)."""
    array, items = _items(given, lambda dtype: dtype.kind in "iuf")
    if items is None:
        return array.astype(np.float64)
    types = set(map(type, items))
    if not all(_real_type(t) for t in types):
        i, x = next((i, x) for i, x in enumerate(items) if not _real_type(type(x)))
        raise TypeError(f"{what} #{i} is {x!r:.40} ({type(x).__name__}); it must be a real "
                        f"number")
    if any(_integer_type(t) for t in types):
        huge = next(((i, int(x)) for i, x in enumerate(items)
                     if _integer_type(type(x)) and abs(int(x)) > _FLOAT_MAX), None)
        if huge is not None:
            raise ValueError(f"{what} #{huge[0]} is {_show_int(huge[1])}, too large for a "
                             f"float64 (at most about 1.8e308)")
    return np.asarray(items, dtype=np.float64)


def _as_partial(partial, u, v) -> float:
    if not _real_type(type(partial)):
        raise ValueError(f"the partial on edge {u} -> {v} is {_shown(partial)}; it must be a "
                         f"real number")
    if _integer_type(type(partial)) and abs(int(partial)) > _FLOAT_MAX:
        raise ValueError(f"the partial on edge {u} -> {v} is {_show_int(int(partial))}, too "
                         f"large for a float64 (at most about 1.8e308)")
    partial = float(partial)
    if not math.isfinite(partial):
        raise ValueError(f"the partial on edge {u} -> {v} is {partial}; partials must be finite")
    return partial


def _check_integer_attributes(pairs, what: str, attribute: str) -> None:
    """Sort keys read from networkx attributes must be integers: a string among
    them would stop the sort with a bare TypeError."""
    for owner, value in pairs:
        if not _is_integer(value):
            raise ValueError(f"{what} {owner!r:.60} has attribute {attribute!r} = "
                             f"{_shown(value)}; it must be an integer (an order)")


def _node_value(G, node) -> float:
    """The ``value`` attribute of a networkx node as a float (NaN when absent)."""
    value = G.nodes[node].get("value", math.nan)
    if value is None:
        return math.nan
    if not _real_type(type(value)) or (_integer_type(type(value))
                                       and abs(int(value)) > _FLOAT_MAX):
        raise ValueError(f"node {node!r:.40} has attribute 'value' = {_shown(value)} "
                         f"({type(value).__name__}); a vertex's primal value must be a real "
                         f"number, None or absent")
    return float(value)


def _per_vertex(given, names, what, default, convert):
    if given is None:
        return None
    if isinstance(given, Mapping):
        unknown = [k for k in given if k not in names]
        if unknown:
            raise ValueError(f"{what} names unknown vertices {unknown}; the vertices are {names}")
        return [convert(given.get(name, default)) for name in names]
    given = list(given)
    if len(given) != len(names):
        raise ValueError(f"{what} has {len(given)} entries for {len(names)} vertices; pass a "
                         f"mapping from vertex name to {what[:-1]}")
    return [convert(x) for x in given]


def _check_text(texts: list[str], what: str) -> None:
    """Refuse text that has no UTF-8 form (a lone surrogate, as JSON's ``\\ud800``
    makes): a graph's names and operations are saved, drawn and shown as UTF-8."""
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        bad = next(text for text in texts if not text.isascii() and any(
            "\ud800" <= c <= "\udfff" for c in text))
        raise ValueError(f"{what} {bad!r} holds a lone surrogate, which no file, picture or "
                         f"page can show (it has no UTF-8 form); use valid Unicode "
                         f"text") from None


def _validate(names, src, dst, partials, inputs, outputs):
    n = len(names)
    if len(set(names)) != n:
        seen, repeated = set(), []
        for name in names:
            if name in seen:
                repeated.append(name)
            seen.add(name)
        raise ValueError(f"vertex names must be unique; repeated: {sorted(set(repeated))}")
    for role, vertices in (("input", inputs), ("output", outputs)):
        if len(set(vertices)) != len(vertices):
            raise ValueError(f"an {role} is listed twice: {[names[v] for v in vertices]}")
    both = set(inputs) & set(outputs)
    if both:
        raise ValueError(f"vertex {names[min(both)]} is both an input and an output; give the "
                         f"output its own vertex joined by a unit copy edge")
    bad = [] if partials is None else np.flatnonzero(~np.isfinite(partials))
    if len(bad):
        e = bad[0]
        raise ValueError(f"the partial on edge {names[src[e]]} -> {names[dst[e]]} is "
                         f"{partials[e]}; partials must be finite")
    loops = np.flatnonzero(src == dst)
    if len(loops):
        raise ValueError(f"the edges contain a directed cycle: {names[src[loops[0]]]} -> "
                         f"{names[src[loops[0]]]}; an LCG must be acyclic")
    keys = src * max(n, 1) + dst
    unique, counts = np.unique(keys, return_counts=True)
    if np.any(counts > 1):
        key = unique[np.argmax(counts > 1)]
        raise ValueError(f"duplicate edge {names[key // n]} -> {names[key % n]}; merge parallel "
                         f"edges by adding their labels")
    has_pred = np.zeros(n, dtype=bool)
    has_pred[dst] = True
    has_succ = np.zeros(n, dtype=bool)
    has_succ[src] = True
    for v in inputs:
        if has_pred[v]:
            u = src[np.argmax(dst == v)]
            raise ValueError(f"input {names[v]} has a predecessor ({names[u]}); inputs must have "
                             f"no incoming edges")
    for v in outputs:
        if has_succ[v]:
            w = dst[np.argmax(src == v)]
            raise ValueError(f"output {names[v]} has a successor ({names[w]}); outputs must have "
                             f"no outgoing edges (add a separate output vertex with a copy edge)")


def _topological_order(names, src, dst):
    """None when the numbering is already topological, else a stable
    topological order (smallest original number first among ready vertices)."""
    if np.all(src < dst):
        return None
    import heapq

    n = len(names)
    indegree = np.bincount(dst, minlength=n).tolist()
    succ = [[] for _ in range(n)]
    for u, v in zip(src.tolist(), dst.tolist()):
        succ[u].append(v)
    ready = [v for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in succ[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, v)
    if len(order) < n:
        cycle = _cycle_text(names, src, dst, indegree)
        raise ValueError(f"the edges contain a directed cycle: {cycle}; an LCG must be acyclic")
    return np.asarray(order, dtype=np.int64)


# a cycle longer than this is shown by its first vertices and its length
_CYCLE_SHOWN = 8


def _cycle_text(names, src, dst, indegree) -> str:
    """One directed cycle among the vertices a topological sort could not
    place (``indegree > 0``), as ``a -> b -> a``, cut short when long.

    Each such vertex has a predecessor that is also unplaced, so walking to
    predecessors from any of them must revisit a vertex: the walk closes a
    cycle in time linear in the graph.
    """
    left = [d > 0 for d in indegree]
    pred = {}
    for u, v in zip(src.tolist(), dst.tolist()):
        if left[u] and left[v]:
            pred.setdefault(v, u)
    start = min(pred)
    seen, walk, v = {}, [], start
    while v not in seen:
        seen[v] = len(walk)
        walk.append(v)
        v = pred[v]
    cycle = walk[seen[v]:][::-1]  # the walk went against the edges
    first = cycle.index(min(cycle))  # start at the lowest-numbered vertex, for a stable message
    cycle = cycle[first:] + cycle[:first]
    if len(cycle) <= _CYCLE_SHOWN:
        return " -> ".join(names[v] for v in cycle + cycle[:1])
    shown = " -> ".join(names[v] for v in cycle[:_CYCLE_SHOWN - 3])
    return (f"{shown} -> ... -> {names[cycle[-1]]} -> {names[cycle[0]]} (a cycle of "
            f"{len(cycle)} vertices)")


def _renumber(order, names, src, dst, values, ops, inputs, outputs):
    new = np.empty_like(order)
    new[order] = np.arange(len(order))
    return ([names[i] for i in order], new[src], new[dst], values[order],
            [ops[i] for i in order], tuple(int(new[v]) for v in inputs),
            tuple(int(new[v]) for v in outputs))


def fill_template(template: str, operands: list[str]) -> str:
    """Substitute operand names for ``{0}``, ``{1}``...; a template that does
    not fit the operands (hand-built or transformed graphs) reads ``f(...)``.

    >>> fill_template("sin({0}) * {1}", ["x", "y"]), fill_template("{0} + {1}", ["x"])
    ('sin(x) * y', '{0} + {1}(x)')
    """
    if template:
        needed = [int(i) for i in _PLACEHOLDER.findall(template)]
        if all(i < len(operands) for i in needed) and set(needed) >= set(range(len(operands))):
            return _PLACEHOLDER.sub(lambda m: operands[int(m.group(1))], template)
    return f"{template or 'f'}({', '.join(operands)})"


# ------------------------------------------------------------ label columns
def _is_real(x) -> bool:
    return _real_type(type(x)) or (isinstance(x, np.ndarray) and x.shape == ()
                                   and x.dtype.kind in "iuf")


def _as_floats(labels: Callable[[], Sequence]) -> list[float]:
    """The labels of a graph of numbers whose 1 x 1 blocks are operators, as floats."""
    return [float(label.to_dense()[0, 0]) if isinstance(label, Operator) else float(label)
            for label in labels()]


def _label_storage(labels, numbers: bool):
    """Labels as a graph keeps them: a read-only float64 array on a graph of numbers, a
    tuple otherwise (an operator between two numbers stays an operator there)."""
    if numbers:
        labels = np.array(labels, dtype=np.float64)
        labels.flags.writeable = False
        return labels
    return tuple(labels)


def _label_column(labels):
    """The labels as a float64 array when every one is a real number (a graph of
    numbers, the fast case), else as a list to check one by one."""
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "iuf":
        return _reals(labels, "label")
    labels = list(labels)
    if all(_real_type(t) for t in {type(x) for x in labels}):
        return _reals(labels, "label")
    return labels


def _number(x):
    """A value of a graph of numbers: NaN for None, a float for a 0-d array."""
    if x is None:
        return math.nan
    if isinstance(x, np.ndarray) and x.shape == ():
        return x.item()
    return x


def _numbers_only(values, shapes) -> bool:
    """True when the vertices are all numbers (no shape or value says otherwise)."""
    if shapes is not None and any(tuple(s) != () for s in shapes):
        return False
    if values is None or isinstance(values, np.ndarray):
        return values is None or values.ndim == 1
    return not any(isinstance(x, np.ndarray) and x.shape != () for x in values)


def _dtype_column(dtypes, n: int):
    """Per-vertex dtypes as a tuple (None stands for float64 everywhere)."""
    if dtypes is None:
        return None
    try:
        dtypes = tuple(np.dtype(d) for d in dtypes)
    except TypeError as error:
        raise TypeError(f"dtypes must be numpy dtypes: {error}") from None
    if len(dtypes) != n:
        raise ValueError(f"dtypes must have one entry per vertex ({n}); got {len(dtypes)}")
    return dtypes


def _read_only(x) -> np.ndarray:
    """``x`` as the graph keeps it, unchanged whatever the caller later writes into its
    own arrays: ``x`` itself if nothing can write to it (read-only down to the memory
    it views, as the array tracer's values are), else a read-only copy."""
    frozen = x
    while isinstance(frozen, np.ndarray) and not frozen.flags.writeable:
        frozen = frozen.base
    if frozen is None:
        return x
    array = np.array(x)  # a copy: a view would change when the caller refills its buffer
    array.flags.writeable = False
    return array


def _shape_of(shape, name: str) -> tuple[int, ...]:
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"the shape of vertex {name} must be a tuple of ints, not "
                        f"{shape!r}") from None
    if not all(_integer_type(type(s)) and s >= 0 for s in shape):
        raise ValueError(f"the shape of vertex {name} is {shape}; a shape is a tuple of "
                         f"non-negative ints")
    return tuple(int(s) for s in shape)


def _checked_labels(names, src, dst, labels, shapes) -> list:
    """Each label as a float (between two numbers) or an operator of the right shapes."""
    checked = []
    for e, (u, v, label) in enumerate(zip(src.tolist(), dst.tolist(), labels)):
        ends = (shapes[u], shapes[v])
        if isinstance(label, Operator):
            if label.in_shape != ends[0] or label.out_shape != ends[1]:
                raise ValueError(f"edge {names[u]} -> {names[v]}: its block {label!r} maps "
                                 f"{label.in_shape} -> {label.out_shape} but the vertices "
                                 f"have shapes {ends[0]} and {ends[1]}")
            if ends == ((), ()):
                label = float(label.to_dense()[0, 0])  # a 1 x 1 block is its float
                if not math.isfinite(label):
                    raise ValueError(f"the label on edge {names[u]} -> {names[v]} is {label}; "
                                     f"labels must be finite")
        elif _is_real(label):
            if ends != ((), ()):
                raise ValueError(f"edge {names[u]} -> {names[v]} carries the number "
                                 f"{_shown(_number(label))}, but it joins shapes {ends[0]} and "
                                 f"{ends[1]}; an edge that touches an array carries a "
                                 f"Jacobian block (minirad.graph.operators)")
            label = _as_partial(_number(label), names[u], names[v])
        else:
            raise TypeError(f"edge #{e} ({names[u]} -> {names[v]}) carries a "
                            f"{type(label).__name__}; a label is a real number or a "
                            f"minirad.graph.operators.Operator")
        checked.append(label)
    return checked


def _check_values(names, values, unknown_allowed: bool) -> None:
    """Values are finite real arrays (in a graph of numbers, NaN marks an unknown value)."""
    for v, x in enumerate(values):
        if x.dtype.kind not in "iuf":
            raise TypeError(f"vertex {names[v]} has a value of dtype {x.dtype}; values are "
                            f"real arrays")
        bad = np.isinf(x) if unknown_allowed else ~np.isfinite(x)
        if np.any(bad):
            raise ValueError(f"vertex {names[v]} has a non-finite value")


class _Same(Sequence):
    """The same item ``n`` times, without a list of them (shapes and dtypes of a
    traced program of numbers)."""

    __slots__ = ("item", "n")

    def __init__(self, item, n: int):
        self.item, self.n = item, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self.item for _ in range(*i.indices(self.n)))
        if not -self.n <= i < self.n:
            raise IndexError(f"vertex {i} out of range 0..{self.n - 1}")
        return self.item

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(other) == self.n and all(
            x == self.item for x in other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"({self.item!r},) * {self.n}"
