"""Vertex names that are written out only when read.

A traced program of a million operations names almost every vertex ``v<i>``
(its number); only inputs, outputs and the odd renamed vertex differ.  Making
a million such strings costs a tenth of a second and tens of megabytes, for a
graph whose names are usually never read.  :class:`VertexNames` is the
sequence of those names, kept as a count and the exceptions: ``names[i]`` is
the exception for vertex i if there is one, else ``f"v{i}"``.  It behaves as
the tuple of its names does (indexing, slicing, iteration, ``in``, equality
with tuples and lists).

>>> names = VertexNames(5, {0: "x", 4: "y"})
>>> names[0], names[2], names[-1], names[1:3]
('x', 'v2', 'y', ('v1', 'v2'))
>>> names == ("x", "v1", "v2", "v3", "y"), "v3" in names, names.find("v3"), names.find("v0")
(True, True, 3, -1)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["VertexNames", "VertexOps", "vertex_number"]

_NUMBERED = re.compile(r"v(0|[1-9][0-9]*)")


def vertex_number(vertex, names: Sequence[str], find) -> int:
    """The number of ``vertex`` (a number or a name) among ``names``; ``find(name)``
    gives a name's number or -1.  One place for the rules and the messages that the
    graphs of numbers and of arrays share.

    >>> names = ("x", "v1", "y")
    >>> vertex_number("y", names, {"x": 0, "v1": 1, "y": 2}.get), vertex_number(1, names, None)
    (2, 1)
    >>> vertex_number(3, names, None)
    Traceback (most recent call last):
    ...
    ValueError: unknown vertex 3: valid vertex numbers are 0..2
    """
    n = len(names)
    if isinstance(vertex, (int, np.integer)) and not isinstance(vertex, (bool, np.bool_)):
        if 0 <= vertex < n:
            return int(vertex)
        raise ValueError(f"unknown vertex {vertex}: valid vertex numbers are 0..{n - 1}")
    if isinstance(vertex, str):
        found = find(vertex)
        if found is not None and found >= 0:
            return found
        shown = ", ".join(names[:8]) + (", ..." if n > 8 else "")
        raise ValueError(f"unknown vertex {vertex!r}: the graph's vertices are {shown}")
    raise TypeError(f"a vertex is a number or a name, not {type(vertex).__name__}")


class VertexNames(Sequence):
    """The names of ``n`` vertices: ``named[i]`` where given, ``v<i>`` elsewhere.

    The caller keeps the names unique (no exception may be ``v<j>`` for a
    vertex j that keeps its default name).
    """

    __slots__ = ("_n", "_named", "_by_name")

    def __init__(self, n: int, named: Mapping[int, str]):
        if any(not 0 <= i < n for i in named):
            raise ValueError(f"VertexNames({n}, ...) names vertex numbers outside 0..{n - 1}")
        self._n = n
        # an exception equal to the default is no exception
        self._named = {int(i): str(s) for i, s in named.items() if s != f"v{i}"}
        self._by_name = {s: i for i, s in self._named.items()}

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(self._n)))
        i = int(i)  # numpy integers too (an int or a numpy integer, as for a tuple)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"vertex name index {i} out of range for {self._n} vertices")
        name = self._named.get(i)
        return f"v{i}" if name is None else name

    def __iter__(self):
        names = [f"v{i}" for i in range(self._n)]
        for i, name in self._named.items():
            names[i] = name
        return iter(names)

    def find(self, name: str) -> int:
        """The vertex called ``name``, or -1 when there is none (constant time)."""
        i = self._by_name.get(name)
        if i is not None:
            return i
        match = _NUMBERED.fullmatch(name) if isinstance(name, str) else None
        if match is None:
            return -1
        i = int(match.group(1))
        return i if i < self._n and i not in self._named else -1

    def __contains__(self, name) -> bool:
        return self.find(name) >= 0

    def index(self, name, start: int = 0, stop: int | None = None) -> int:
        i = self.find(name)
        if i < start or (stop is not None and i >= stop):
            raise ValueError(f"{name!r} is not in the vertex names")
        return i

    def count(self, name) -> int:
        return int(name in self)

    def __eq__(self, other) -> bool:
        if isinstance(other, VertexNames):
            return self._n == other._n and self._named == other._named
        if isinstance(other, (tuple, list)):
            return len(other) == self._n and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


class VertexOps(Sequence):
    """The operation templates of ``len(ids)`` vertices: vertex i's is
    ``table[ids[i]]``.  A traced program repeats a handful of templates
    (``{0} * {1}``, ``0.5 * {0}``) a million times; keeping one small
    number per vertex and writing the strings out only when they are read
    spares building that million-entry tuple for every trace.  It behaves as
    the tuple of its templates does (indexing, slicing, iteration, equality
    with tuples and lists).  :meth:`deferred` puts off even the numbers
    until a template is first read.

    >>> ops = VertexOps(("input", "{0} + {1}", "2.0 * {0}"), [0, 0, 1, 2, 2])
    >>> ops[2], ops[-1], ops[1:3], len(ops)
    ('{0} + {1}', '2.0 * {0}', ('input', '{0} + {1}'), 5)
    >>> ops == ("input", "input", "{0} + {1}", "2.0 * {0}", "2.0 * {0}")
    True
    """

    __slots__ = ("_table", "_ids", "_n", "_make")

    def __init__(self, table: Sequence[str], ids):
        self._table = tuple(table)
        self._ids = np.asarray(ids)
        if self._ids.ndim != 1 or not np.issubdtype(self._ids.dtype, np.integer):
            raise TypeError(f"VertexOps needs a 1-D integer array of template numbers; got "
                            f"shape {self._ids.shape}, dtype {self._ids.dtype}")
        if len(self._ids) and not (0 <= self._ids.min() and self._ids.max() < len(self._table)):
            raise ValueError(f"VertexOps: template numbers must lie in 0..{len(self._table) - 1}")
        self._ids.flags.writeable = False
        self._n = len(self._ids)
        self._make = None

    @classmethod
    def deferred(cls, n: int, make: Callable[[], tuple[Sequence[str], Any]]) -> VertexOps:
        """The templates of ``n`` vertices, as ``VertexOps(*make())``, with
        ``make`` called only when a template is first read (a tracer's graph
        whose templates nobody reads never works them out).

        >>> ops = VertexOps.deferred(3, lambda: (("input", "-{0}"), [0, 1, 1]))
        >>> len(ops), ops[2], ops == ("input", "-{0}", "-{0}")
        (3, '-{0}', True)
        """
        ops = cls.__new__(cls)
        ops._n, ops._make = n, make
        return ops

    def _resolved(self) -> tuple[tuple[str, ...], np.ndarray]:
        if self._make is not None:
            made = VertexOps(*self._make())
            if len(made) != self._n:
                raise ValueError(f"VertexOps.deferred: made {len(made)} templates for "
                                 f"{self._n} vertices")
            self._table, self._ids = made._table, made._ids
            self._make = None  # what it held (the tracer's arrays) is freed
        return self._table, self._ids

    def __reduce__(self):
        return VertexOps, self._resolved()

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        table, ids = self._resolved()
        if isinstance(i, slice):
            return tuple(table[k] for k in ids[i].tolist())
        i = int(i)
        if not -len(ids) <= i < len(ids):
            raise IndexError(f"template index {i} out of range for {len(ids)} vertices")
        return table[ids[i]]

    def __iter__(self):
        table, ids = self._resolved()
        return iter(np.array(table, dtype=object)[ids].tolist())

    def __eq__(self, other) -> bool:
        if isinstance(other, VertexOps):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))
