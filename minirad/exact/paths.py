"""Bauer's formula: the Jacobian as a sum over paths.

Entry ``J[j, i]`` of an LCG's Jacobian is the sum, over every directed path
from input ``i`` to output ``j``, of the product of the partials along that
path (eq. 1 of the RAD paper).  This module counts those paths exactly,
lists them lazily, multiplies along them and sums them.

Counting never enumerates: it is the forward sweep of
:mod:`minirad.graph.labels` over :data:`~minirad.graph.labels.COUNTS`, every edge
labelled 1, so the number of paths from ``s`` to ``v`` is the sum of the
numbers of paths from ``s`` to the predecessors of ``v``, one pass in
topological order with Python integers, which do not overflow::

    forward(g, {s: 1}, algebra=COUNTS, labels=[1] * g.n_edges).values[v]

So a graph with 10^30 paths is counted in a blink, while summing over its
paths would outlast the universe; :func:`path_jacobian` refuses such graphs.
Bauer's sum itself is :func:`minirad.graph.labels.path_sum`: the chain rule
along each path (:func:`minirad.graph.labels.path_label`), added up.  The
functions here run the same recurrences with the fast engines of
:mod:`minirad.exact._engines` (one pass for all seeds at once, prefix products
shared between paths), tested equal to them.

>>> from minirad import examples
>>> g = examples.figure1()
>>> count_paths(g)
array([[2, 2]], dtype=object)
>>> [g.names[v] for v in next(paths(g, "x1", "y"))]
['x1', 'v2', 'v5', 'y']
>>> path_jacobian(g).round(4)
array([[26.8754,  0.569 ]])
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from numbers import Integral

import numpy as np

from ..graph.labels import COUNTS, forward, path_label, reverse
from ..graph.lcg import LCG, reachable, takes_lcg
from . import _engines
from .overflow import check_finite
from .result import Accumulation, format_count

DEFAULT_MAX_PATHS = 1_000_000


class PathCount(int):
    """An exact number of paths: a Python int that also prints when it is too long
    for Python to print (more than ``sys.get_int_max_str_digits()`` digits, 4300 by
    default), as ``~m.me<exponent>`` (:func:`~minirad.exact.result.format_count`).
    Below that it prints every digit.  Arithmetic on it gives plain ints.

    >>> count = PathCount(2 ** 20000)
    >>> count, count % 1000 == 2 ** 20000 % 1000
    (~4.0e6020, True)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        limit = getattr(sys, "get_int_max_str_digits", lambda: 0)()
        # bit_length * 0.30103 + 1 bounds the number of digits from above
        if limit == 0 or self.bit_length() * 0.30103 + 1 <= limit:
            return int.__repr__(self)
        return format_count(int(self))

    __str__ = __repr__


@takes_lcg
def count_paths(g: LCG) -> np.ndarray:
    """Exact numbers of paths from each input to each output.

    Returns an object array of Python ints with shape ``(n_outputs,
    n_inputs)``, rows and columns in ``g.outputs`` / ``g.inputs`` order
    (:class:`PathCount`, so that it prints however many digits a count has).
    Column ``i`` is the forward sweep over counts seeded at input ``i``
    (:func:`count_paths_reference`); the engine carries one count per input
    (or per output, whichever side is smaller) through the graph in one pass.

    >>> from minirad import examples
    >>> count_paths(examples.lecture())
    array([[2, 2]], dtype=object)
    >>> chain = LCG.from_edges([("x", "a0", 1.0), ("x", "b0", 1.0)]
    ...     + [(f"{p}{k}", f"{q}{k + 1}", 1.0) for k in range(99) for p in "ab" for q in "ab"]
    ...     + [("a99", "y", 1.0), ("b99", "y", 1.0)], inputs=["x"], outputs=["y"])
    >>> count_paths(chain)[0, 0] == 2 ** 100  # two ways through each of 100 layers
    True
    """
    m, n = len(g.outputs), len(g.inputs)
    result = np.zeros((m, n), dtype=object)
    if m == 0 or n == 0:
        return result
    if n <= m:
        counts = _engines.path_counts(g, g.inputs, forward=True)
        for r, y in enumerate(g.outputs):
            result[r, :] = counts[y]
    else:
        counts = _engines.path_counts(g, g.outputs, forward=False)
        for c, x in enumerate(g.inputs):
            result[:, c] = counts[x]
    result.flat[:] = [PathCount(count) for count in result.flat]
    return result


def count_paths_reference(g: LCG, backward: bool = False) -> np.ndarray:
    """:func:`count_paths` straight from the label recurrence: one forward
    sweep over :data:`~minirad.graph.labels.COUNTS` per input (or, ``backward``, one
    reverse sweep per output), every edge labelled 1.  Slower; the oracle
    the engine is tested against.

    >>> from minirad import examples
    >>> count_paths_reference(examples.figure1()).tolist()
    [[2, 2]]
    """
    ones = [1] * g.n_edges
    result = np.zeros((len(g.outputs), len(g.inputs)), dtype=object)
    if not backward:
        for c, x in enumerate(g.inputs):
            reached = forward(g, {x: 1}, algebra=COUNTS, labels=ones).values
            result[:, c] = [reached[y] or 0 for y in g.outputs]
    else:
        for r, y in enumerate(g.outputs):
            reached = reverse(g, {y: 1}, algebra=COUNTS, labels=ones).values
            result[r, :] = [reached[x] or 0 for x in g.inputs]
    return result


@takes_lcg
def count_paths_between(g: LCG, source, target) -> int:
    """Exact number of paths from one vertex to another (1 when they coincide).

    >>> from minirad import examples
    >>> g = examples.figure1()
    >>> count_paths_between(g, "x2", "y"), count_paths_between(g, "y", "x2")
    (2, 0)
    """
    s, t = g.index(source), g.index(target)
    if s > t:  # topological numbering: no path can run backwards
        return 0
    counts = {s: 1}
    ptr = g.in_edges_ptr
    # only edges into s+1 .. t can lie on a path from s to t
    lo, hi = int(ptr[s + 1]), int(ptr[t + 1])
    for u, v in zip(g.sources[lo:hi].tolist(), g.targets[lo:hi].tolist()):
        c = counts.get(u)
        if c:
            counts[v] = counts.get(v, 0) + c
    return PathCount(counts.get(t, 0))


@takes_lcg
def path_costs(g: LCG) -> tuple[int, int]:
    """Multiplications and additions of evaluating Bauer's formula term by term.

    A path with ``k`` edges costs ``k - 1`` multiplications (its product),
    and an entry reached by ``p >= 1`` paths costs ``p - 1`` additions; so

        multiplications = (sum over paths of their edge counts) - paths
        additions       = paths - (entries reached by at least one path)

    Every edge counts, partials of ±1 included.  The sum of path lengths
    comes without enumeration: edge ``(u, v)`` lies on
    ``(paths from an input to u) * (paths from v to an output)`` paths.
    Exact Python ints, so astronomically large costs are reported exactly.

    >>> from minirad import examples
    >>> path_costs(examples.figure1())  # 4 paths of 3 edges into 2 entries
    (8, 2)
    """
    return _path_costs(g, count_paths(g))


def _path_costs(g: LCG, counts: np.ndarray) -> tuple[int, int]:
    if not g.inputs or not g.outputs:
        return 0, 0
    into = _engines.total_counts(g, g.inputs, forward=True)
    out_of = _engines.total_counts(g, g.outputs, forward=False)
    total = sum(into[y] for y in g.outputs)
    on_paths = sum(into[u] * out_of[v] for u, v in zip(g.sources.tolist(), g.targets.tolist()))
    reached = int(np.count_nonzero(counts))
    return on_paths - total, total - reached


# --------------------------------------------------------------- enumeration
def _vertex_set(g: LCG, given, default: Sequence[int]) -> list[int]:
    if given is None:
        return list(default)
    if isinstance(given, (str, Integral)):
        return [g.index(given)]
    return [g.index(v) for v in given]


@takes_lcg
def paths(g: LCG, source=None, target=None) -> Iterator[tuple[int, ...]]:
    """Lazily yield every path from ``source`` to ``target`` as a vertex tuple.

    ``source`` and ``target`` are vertices (numbers or names), lists of
    them, or ``None`` for all inputs / all outputs.  Paths come in
    lexicographic order of their vertex numbers (sources in the order
    given).  The search uses an explicit stack, so deep graphs do not hit
    Python's recursion limit, and it never enters a vertex that cannot reach
    a target, so each path arrives after at most one walk down the graph.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> list(paths(g, "x2", "y"))
    [(1, 3, 5, 6), (1, 4, 6)]
    >>> len(list(paths(g)))  # all input-to-output paths
    4
    """
    sources = _vertex_set(g, source, g.inputs)
    targets = _vertex_set(g, target, g.outputs)
    useful = reachable(g, targets, forward=False)
    return (path for path, _ in _engines.walk_products(g, sources, targets, useful))


@takes_lcg
def path_product(g: LCG, path: Sequence) -> float:
    """Product of the partials along a path of vertices (1.0 for a single vertex).

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> path_product(g, ["x1", "v3", "v5", "y"])  # dv3/dx1 = x2 = 5
    5.0
    >>> path_product(g, ["x1", "v4"])
    Traceback (most recent call last):
    ...
    ValueError: step 1 of the path is not an edge: there is no edge x1 -> v4; ...
    """
    if isinstance(path, (str, bytes)) or not isinstance(path, Sequence):
        raise TypeError(f"a path is a sequence of vertices, not {type(path).__name__}")
    if len(path) == 0:
        raise ValueError("a path needs at least one vertex")
    vertices = [g.index(v) for v in path]
    for step, (u, v) in enumerate(zip(vertices, vertices[1:]), start=1):
        try:
            g.edge_index(u, v)
        except ValueError as error:
            raise ValueError(f"step {step} of the path is not an edge: {error}") from None
    product = path_label(g, vertices)  # the chain rule along the path, in the graph's algebra
    return g.algebra.one if product is None else float(product)


# -------------------------------------------------------------- the path sum
def _check_max_paths(max_paths) -> int:
    if isinstance(max_paths, bool) or not isinstance(max_paths, Integral) or max_paths < 0:
        raise ValueError(f"max_paths must be a non-negative integer, got {max_paths!r}")
    return int(max_paths)


@takes_lcg
def bauer(g: LCG, max_paths: int = DEFAULT_MAX_PATHS) -> Accumulation:
    """The Jacobian by Bauer's formula, with its operation counts.

    Sums the product of partials over every input-to-output path.  Counts
    are those of :func:`path_costs` (the formula evaluated term by term);
    the depth-first walk here reuses prefix products, so it does fewer
    multiplications than it reports, but the counts describe the method,
    which is what comparisons with sweeps and elimination are about.

    Raises ``ValueError`` when the graph has more than ``max_paths`` paths.

    >>> from minirad import examples
    >>> result = bauer(examples.lecture())
    >>> result.jacobian.round(3), result.multiplications, result.additions
    (array([[5.5  , 1.716]]), 7, 2)
    """
    limit = _check_max_paths(max_paths)
    counts = count_paths(g)
    total = int(counts.sum()) if counts.size else 0
    if total > limit:
        raise ValueError(
            f"the graph has {format_count(total)} input-to-output paths, more than "
            f"max_paths={format_count(limit)}; "
            f"summing over them is hopeless, so use a forward or reverse sweep or vertex "
            f"elimination instead, e.g. minirad.jacobian(g, method='reverse')")
    jac = np.zeros((len(g.outputs), len(g.inputs)))
    row = {y: r for r, y in enumerate(g.outputs)}
    useful = reachable(g, g.outputs, forward=False)
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        for col, x in enumerate(g.inputs):
            for path, product in _engines.walk_products(g, [x], list(g.outputs), useful):
                jac[row[path[-1]], col] += product
    check_finite(g, jac, "bauer")
    multiplications, additions = _path_costs(g, counts)
    return Accumulation(jac, multiplications, additions, "bauer")


@takes_lcg
def path_jacobian(g: LCG, max_paths: int = DEFAULT_MAX_PATHS) -> np.ndarray:
    """The Jacobian as the sum over paths of path products (eq. 1).

    Shape ``(n_outputs, n_inputs)``.  See :func:`bauer` for the counts and
    :func:`path_costs` for what they mean.

    >>> from minirad import examples
    >>> path_jacobian(examples.lab()).tolist()
    [[2.5838531634528574, 2.0]]
    >>> path_jacobian(examples.lab(), max_paths=2)
    Traceback (most recent call last):
    ...
    ValueError: the graph has 3 input-to-output paths, more than max_paths=2; ...
    """
    return bauer(g, max_paths).jacobian

