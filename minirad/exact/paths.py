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
along each path (:func:`minirad.graph.labels.path_label`), added up
(:func:`bauer_reference`).  On a graph of numbers the functions here run the
same recurrences with the fast engines of :mod:`minirad.exact._engines` (one
pass for all seeds at once, prefix products shared between paths), tested
equal to them.

Every function takes any graph.  Where vertices hold arrays, a path runs
through array vertices and its label is the product of Jacobian blocks in
order, ``J_k ... J_2 J_1`` (the RAD paper's Sec. 3.2): :func:`count_paths`
counts those paths, and :func:`count_scalar_paths` the paths between
entries, which are the paths of :func:`minirad.scalarize` ``(g)``.

>>> from minirad import examples
>>> g = examples.figure1()
>>> count_paths(g)
array([[2, 2]], dtype=object)
>>> [g.names[v] for v in next(paths(g, "x1", "y"))]
['x1', 'v2', 'v5', 'y']
>>> path_jacobian(g).round(4)
array([[26.8754,  0.569 ]])

A chain of two dense 3 x 3 blocks has one path of arrays and 3 x 3 x 3 of numbers:

>>> import numpy as np
>>> from minirad.graph.scalarize import from_chain
>>> chain = from_chain([np.ones((3, 3)), np.ones((3, 3))])
>>> count_paths(chain).tolist(), count_scalar_paths(chain).sum()
([[1]], 27)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator, Sequence
from numbers import Integral

import numpy as np

from ..graph.labels import COUNTS, FLOATS, Algebra, forward, path_label, reverse, walk
from ..graph.lcg import LCG, reachable, takes_graph_or_function
from ..graph.operators import Identity
from . import _engines
from .overflow import check_finite
from .result import Accumulation, format_count, from_labels
from .sparsity import operator_pattern, scalar_sizes

__all__ = ["DEFAULT_MAX_PATHS", "DEFAULT_MAX_PRODUCTS", "PathCount", "bauer",
           "bauer_reference", "count_paths", "count_paths_between", "count_paths_reference",
           "count_scalar_paths", "path_costs", "path_jacobian", "path_product", "paths"]

DEFAULT_MAX_PATHS = 1_000_000
#: Bauer's formula term by term multiplies along every path: the sum of the paths'
#: lengths less their number (:func:`path_costs`); a few seconds at this many
DEFAULT_MAX_PRODUCTS = 10_000_000


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


@takes_graph_or_function
def count_paths(g: LCG) -> np.ndarray:
    """Exact numbers of paths from each input to each output, as Python integers.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).

    Returns
    -------
    numpy.ndarray
        An object array of exact ints (:class:`PathCount`, which prints however
        many digits a count has), shape ``(n_outputs, n_inputs)``, rows and
        columns in ``g.outputs`` / ``g.inputs`` order.  On a graph with arrays
        these are paths of vertices, whatever their shapes.

    See Also
    --------
    count_scalar_paths : Paths between array entries.
    bauer : The Jacobian as the sum over those paths.

    Notes
    -----
    Column ``i`` is the forward sweep over counts seeded at input ``i``
    (:func:`count_paths_reference`): the label recurrence over the integers,
    every edge labelled 1.  The engine carries one count per input (or per
    output, whichever side is smaller) through the graph in one pass; counts of
    10**30 paths take milliseconds.

    Examples
    --------
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


@takes_graph_or_function
def count_paths_reference(g: LCG, direction: str = "forward") -> np.ndarray:
    """:func:`count_paths` straight from the label recurrence: one forward
    sweep over :data:`~minirad.graph.labels.COUNTS` per input (or, with
    ``direction="reverse"``, one reverse sweep per output), every edge labelled 1.  Slower;
    the oracle
    the engine is tested against.

    >>> from minirad import examples
    >>> count_paths_reference(examples.figure1()).tolist()
    [[2, 2]]
    """
    ones = [1] * g.n_edges
    result = np.zeros((len(g.outputs), len(g.inputs)), dtype=object)
    if direction == "forward":
        for c, x in enumerate(g.inputs):
            reached = forward(g, {x: 1}, algebra=COUNTS, labels=ones).values
            result[:, c] = [reached[y] or 0 for y in g.outputs]
    else:
        for r, y in enumerate(g.outputs):
            reached = reverse(g, {y: 1}, algebra=COUNTS, labels=ones).values
            result[r, :] = [reached[x] or 0 for x in g.inputs]
    return result


def _count_product(pattern, counts: np.ndarray) -> np.ndarray:
    """``pattern @ counts`` for a Boolean sparse block and an object array of ints
    (rows: the block's input entries), exact: each nonzero adds a row of counts."""
    rows = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))
    out = np.zeros((pattern.shape[0], counts.shape[1]), dtype=object)
    np.add.at(out, rows, counts[pattern.indices])
    return out


#: the sweep over counts on blocks: a label is a block's Boolean pattern, a value an
#: object array of Python ints with one row per entry of its vertex and one column per
#: seed entry, so ``multiply`` counts the scalar paths through one more block
COUNT_BLOCKS = Algebra("count blocks", _count_product, lambda a, b: a + b)

#: the largest count matrices :func:`count_scalar_paths` holds (entries, summed over vertices)
SCALAR_COUNT_LIMIT = 2_000_000


@takes_graph_or_function
def count_scalar_paths(g: LCG, max_entries: int = SCALAR_COUNT_LIMIT) -> np.ndarray:
    """Exact numbers of paths between entries: from each input entry to each output
    entry, as Python ints of shape ``(output entries, input entries)`` (C order,
    one vertex after another).  These are the path counts of
    :func:`minirad.scalarize` ``(g)``, found without building it: a forward sweep
    per input over :data:`COUNT_BLOCKS`, whose labels are the blocks' nonzero
    patterns (:func:`minirad.exact.sparsity.operator_pattern`).  On a graph of
    numbers it is :func:`count_paths`.  Refused when the count matrices of one
    sweep would hold more than ``max_entries`` entries.

    >>> import numpy as np
    >>> from minirad import trace
    >>> g = trace(lambda x: np.exp(x).sum() * x, np.ones(2))
    >>> count_scalar_paths(g)          # y[i] <- x[i] twice (direct and via the sum), x[j] once
    array([[2, 1],
           [1, 2]], dtype=object)
    """
    if g.algebra is FLOATS:
        return count_paths(g)
    out_sizes, in_sizes = scalar_sizes(g, g.outputs), scalar_sizes(g, g.inputs)
    held = sum(math.prod(shape) for shape in g.shapes) * max(in_sizes, default=0)
    if held > max_entries:
        raise ValueError(f"counting scalar paths holds {held:,} counts per sweep, above the "
                         f"limit of {max_entries:,}; pass a larger max_entries, or count the "
                         f"paths of arrays (count_paths)")
    patterns = [operator_pattern(label) for label in g.labels]
    result = np.zeros((sum(out_sizes), sum(in_sizes)), dtype=object)
    rows = np.cumsum([0] + out_sizes)
    columns = np.cumsum([0] + in_sizes)
    for j, x in enumerate(g.inputs):
        seed = np.zeros((in_sizes[j], in_sizes[j]), dtype=object)
        np.fill_diagonal(seed, 1)
        reached = forward(g, {x: seed}, algebra=COUNT_BLOCKS, labels=patterns).values
        for i, y in enumerate(g.outputs):
            if reached[y] is not None:
                result[rows[i]:rows[i + 1], columns[j]:columns[j + 1]] = reached[y]
    return result


@takes_graph_or_function
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


@takes_graph_or_function
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

    On a graph with arrays a product of blocks costs the algebra's
    ``multiply_cost`` (its flops) and a sum its ``add_cost``, which depend
    on the blocks each product makes, so the sum is formed
    (:func:`bauer_reference`) to count them.

    >>> from minirad import examples
    >>> path_costs(examples.figure1())  # 4 paths of 3 edges into 2 entries
    (8, 2)
    """
    if g.algebra is not FLOATS:
        result = bauer_reference(g)
        return result.multiplications, result.additions
    return _path_costs(g, count_paths(g))


def _path_costs(g: LCG, counts: np.ndarray) -> tuple[int, int]:
    paths, products = _path_totals(g, g.inputs, g.outputs)
    reached = int(np.count_nonzero(counts))
    return products, paths - reached


def _path_totals(g: LCG, sources, targets, most_paths: int | None = None
                 ) -> tuple[int, int | None]:
    """``(paths, products)``: the number of paths from ``sources`` to ``targets``, and
    the multiplications of Bauer's formula along them term by term (their lengths in
    edges, summed, less their number).  Two columns of Python ints (one per vertex),
    whatever the numbers of inputs and outputs; the products are not summed (None)
    when there are more than ``most_paths`` paths."""
    if not len(sources) or not len(targets):
        return 0, 0
    into = _engines.total_counts(g, sources, forward=True)
    paths = sum(into[y] for y in targets)
    if most_paths is not None and paths > most_paths:
        return paths, None
    out_of = _engines.total_counts(g, targets, forward=False)
    on_paths = sum(into[u] * out_of[v] for u, v in zip(g.sources.tolist(), g.targets.tolist()))
    return paths, on_paths - paths


# --------------------------------------------------------------- enumeration
def _vertex_set(g: LCG, given, default: Sequence[int]) -> list[int]:
    if given is None:
        return list(default)
    if isinstance(given, (str, Integral)):
        return [g.index(given)]
    return [g.index(v) for v in given]


@takes_graph_or_function
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
    useful = reachable(g, targets, direction="reverse")
    return (path for path, _ in _engines.walk_products(g, sources, targets, useful,
                                                       products=False))


@takes_graph_or_function
def path_product(g: LCG, path: Sequence):
    """The product of the labels along a path of vertices, the first edge innermost.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    path : sequence
        Vertices by name or number, each joined to the next by an edge.

    Returns
    -------
    float or Operator
        A float where the path joins two numbers (1.0 for a single vertex);
        otherwise the Jacobian block of the path as an operator, as
        :meth:`~minirad.graph.lcg.LCG.label` gives an edge's (the identity for
        a single array vertex).

    Raises
    ------
    TypeError
        When ``path`` is not a sequence of vertices.
    ValueError
        When ``path`` is empty, or a step of it is not an edge.

    See Also
    --------
    bauer : The sum of these products over every input-output path.
    minirad.exact.paths.paths : Every path between two vertices.

    Notes
    -----
    Bauer's formula (F. L. Bauer, 1974; the RAD paper's eq. 1) writes every
    Jacobian entry as the sum, over the paths from the input to the output, of
    these products.

    Examples
    --------
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
    if product is None:
        shape = g.shapes[vertices[0]]
        return 1.0 if shape == () else Identity(shape, g.dtypes[vertices[0]])
    return float(product) if isinstance(product, (float, np.floating)) else product


# -------------------------------------------------------------- the path sum
def _check_limit(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _refuse_costly_paths(g: LCG, max_paths, max_products) -> tuple[int, int]:
    """``(paths, products)`` of Bauer's formula on ``g`` (:func:`_path_totals`), after
    refusing more than ``max_paths`` paths or ``max_products`` multiplications along
    them: before any path is walked, in memory of two ints per vertex."""
    most_paths = _check_limit(max_paths, "max_paths")
    most_products = _check_limit(max_products, "max_products")
    paths, products = _path_totals(g, g.inputs, g.outputs, most_paths)
    instead = ("use a forward or reverse sweep or vertex elimination instead, e.g. "
               "minirad.jacobian(g, method='reverse')")
    if products is None:
        raise ValueError(
            f"the graph has {format_count(paths)} input-to-output paths, more than "
            f"max_paths={format_count(most_paths)}; summing over them is hopeless, so {instead}"
            + (f", or pass max_paths={paths} to sum them anyway" if paths <= 10 ** 12 else ""))
    if products > most_products:
        raise ValueError(
            f"Bauer's formula multiplies {format_count(products)} times along the graph's "
            f"{format_count(paths)} input-to-output paths (their lengths summed), more than "
            f"max_products={format_count(most_products)}; {instead}, or pass "
            f"max_products={products} to multiply along them anyway")
    return paths, products


@takes_graph_or_function
def bauer_reference(g: LCG, max_paths: int = DEFAULT_MAX_PATHS,
                    max_products: int = DEFAULT_MAX_PRODUCTS) -> Accumulation:
    """Bauer's formula as written, on any graph: for each input and output, every
    path between them (:func:`minirad.graph.labels.walk`), its labels multiplied
    in order, the first edge innermost, and the products added up, each
    multiplication and addition counted by the graph's algebra.

    On a graph of numbers this is :func:`bauer` (tested equal), only slower;
    on a graph with arrays it is what :func:`bauer` runs, and a path's
    product is ``J_k ... J_1`` of its blocks: two dense blocks cost m x k x n,
    two diagonals d.

    >>> import numpy as np
    >>> from minirad.graph.scalarize import from_chain
    >>> result = bauer_reference(from_chain([np.ones((3, 2)), np.ones((4, 3))]))
    >>> result.jacobian.tolist(), result.multiplications   # one (4x3)(3x2) product
    ([[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]], 24)
    """
    _refuse_costly_paths(g, max_paths, max_products)
    algebra = g.algebra
    sums, multiplications, additions = {}, 0, 0
    with np.errstate(over="ignore", invalid="ignore"):  # checked below
        for t in g.outputs:
            for s in g.inputs:
                for path in walk(g, s, t):
                    product = None
                    for u, v in zip(path, path[1:]):
                        label = g.labels[g.edge_index(u, v)]
                        if isinstance(label, np.floating):
                            label = float(label)
                        if product is None:
                            product = label
                        else:
                            multiplications += algebra.multiply_cost(label, product)
                            product = algebra.multiply(label, product)
                    if (t, s) in sums:
                        additions += algebra.add_cost(sums[t, s], product)
                        product = algebra.add(sums[t, s], product)
                    sums[t, s] = product
        jacobian = from_labels(g, g.outputs, g.inputs, lambda t, s: sums.get((t, s)))
    check_finite(g, jacobian, "bauer")
    shapes = None if algebra is FLOATS else (tuple(g.shapes[v] for v in g.outputs),
                                             tuple(g.shapes[v] for v in g.inputs))
    return Accumulation(jacobian, multiplications, additions, "bauer", shapes=shapes)


@takes_graph_or_function
def bauer(g: LCG, max_paths: int = DEFAULT_MAX_PATHS,
          max_products: int = DEFAULT_MAX_PRODUCTS) -> Accumulation:
    """The Jacobian by Bauer's formula, the sum over paths, with its operation counts.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    max_paths : int, optional
        The most input-output paths the formula may walk (default 1,000,000).
    max_products : int, optional
        The most multiplications along them, the sum of their lengths (default
        10,000,000: a million paths of a million edges are under any sensible
        path limit, yet take days).

    Returns
    -------
    Accumulation
        The Jacobian with method ``"bauer"``, and the multiplications and
        additions of the formula evaluated term by term (:func:`path_costs`).

    Raises
    ------
    ValueError
        Before walking any path, when the graph has more than ``max_paths``
        paths or the formula more than ``max_products`` multiplications (the
        message gives both counts and the keyword to raise them); when the
        Jacobian overflows (``AccumulationOverflow``).

    See Also
    --------
    count_paths : How many paths there are.
    path_product : One path's product.
    minirad.jacobian : The same matrix by a sweep or elimination.

    Notes
    -----
    Each entry ``dy/dx`` is the sum over the paths from ``x`` to ``y`` of the
    product of their labels (Bauer 1974; the RAD paper's eq. 1).  On a graph of
    numbers the depth-first walk here reuses prefix products, so it does fewer
    multiplications than it reports, but the counts describe the method, which
    is what comparisons with sweeps and elimination are about.  On a graph with
    arrays a product of blocks costs its flops (:func:`bauer_reference`).

    Examples
    --------
    >>> from minirad import examples
    >>> result = bauer(examples.lecture())
    >>> result.jacobian.round(3), result.multiplications, result.additions
    (array([[5.5  , 1.716]]), 7, 2)
    """
    if g.algebra is not FLOATS:
        return bauer_reference(g, max_paths, max_products)
    paths, products = _refuse_costly_paths(g, max_paths, max_products)
    jac = np.zeros((len(g.outputs), len(g.inputs)))
    reached = np.zeros(jac.shape, dtype=bool)     # entries with a path, whatever its product
    row = {y: r for r, y in enumerate(g.outputs)}
    useful = reachable(g, g.outputs, direction="reverse")
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        for col, x in enumerate(g.inputs):
            for path, product in _engines.walk_products(g, [x], list(g.outputs), useful):
                jac[row[path[-1]], col] += product
                reached[row[path[-1]], col] = True
    check_finite(g, jac, "bauer")
    return Accumulation(jac, products, paths - int(reached.sum()), "bauer")


@takes_graph_or_function
def path_jacobian(g: LCG, max_paths: int = DEFAULT_MAX_PATHS,
                  max_products: int = DEFAULT_MAX_PRODUCTS) -> np.ndarray:
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
    return bauer(g, max_paths, max_products).jacobian

