"""Edge labels and the one recurrence every exact method runs over them.

An LCG's edge ``u -> v`` carries a *label*: the local derivative dv/du.  Every
exact way of getting the Jacobian needs only two things from labels:

* ``multiply(outer, inner)``, the chain rule: for a path ``u -> v -> w`` the
  label from u to w is ``multiply(outer=dw/dv, inner=dv/du)``.  The order
  matters once labels are matrices (``outer @ inner``).
* ``add(a, b)``, accumulation where paths meet: a variable used several
  times receives the sum of its partial adjoints (the ChainRules seed).

An :class:`Algebra` bundles the two with ``zero``, ``one`` and what each
operation costs.  Swapping the algebra changes what the *same* code
computes:

* :data:`FLOATS`: real partials; the sweeps give the Jacobian;
* :data:`COUNTS`: Python integers with every label 1; the sweeps count
  paths, exactly (Python integers never overflow);
* :data:`BOOLEANS`: "an edge exists"; the sweeps give the sparsity pattern;
* ``OPERATORS`` (:mod:`minirad.graph.operators`): Jacobian blocks, the labels of an LCG of arrays.

The reference recurrences below read only ``n_vertices``, ``sources``,
``targets`` (vertices numbered topologically, edges grouped by target),
``labels`` and ``algebra`` of a graph, plus ``successors`` and
``edge_index`` for the path walks, so they run unchanged on any graph
type that has them.  A vertex no seed reaches holds ``None``: its value is
structurally zero and costs nothing.

The same forward sweep on the lecture's graph, once on its partials and
once on counts (every label 1):

>>> from minirad import examples
>>> g = examples.lecture()
>>> x1, y = g.index("x1"), g.index("y")
>>> forward(g, {x1: 1.0}).values[y]                 # dy/dx1 = 1/x1 + x2
5.5
>>> forward(g, {x1: 1}, algebra=COUNTS, labels=[1] * g.n_edges).values[y]  # paths x1 -> y
2
>>> reverse(g, {y: True}, algebra=BOOLEANS, labels=[True] * g.n_edges).values[x1]
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "BOOLEANS", "COUNTS", "FLOATS", "Algebra", "Propagation", "forward", "path_label",
    "path_sum", "reverse", "walk",
]


def _one_operation(a, b) -> int:
    return 1


@dataclass(frozen=True)
class Algebra:
    """What the recurrences need to know about edge labels.

    ``multiply(outer, inner)`` is the chain rule (``outer`` is the label
    nearer the output); it is also applied with a value on one side: a
    forward sweep computes ``multiply(edge_label, tangent)``, a reverse
    sweep ``multiply(adjoint, edge_label)``.  ``add(a, b)`` accumulates
    where paths meet.  ``zero`` and ``one`` may be ``None`` when they
    depend on a shape (Jacobian blocks); the recurrences never need them,
    since an absent value (``None``) stands for zero.  ``multiply_cost``
    and ``add_cost`` give the operation count of one multiply or add
    (1 for scalars: the convention of every count in minirad).

    >>> FLOATS.multiply(3.0, 2.0), FLOATS.add(1.0, 2.0), FLOATS.one
    (6.0, 3.0, 1.0)
    >>> COUNTS.add(2**64, 1)  # exact: no overflow
    18446744073709551617
    >>> BOOLEANS.multiply(True, False), BOOLEANS.add(True, False)
    (False, True)
    """

    name: str
    multiply: Callable[[Any, Any], Any]
    add: Callable[[Any, Any], Any]
    zero: Any = None
    one: Any = None
    multiply_cost: Callable[[Any, Any], int] = _one_operation
    add_cost: Callable[[Any, Any], int] = _one_operation

    def __repr__(self) -> str:
        return f"Algebra({self.name!r})"


#: real partials: the Jacobian
FLOATS = Algebra("floats", operator.mul, operator.add, zero=0.0, one=1.0)
#: exact Python integers: with every label 1, numbers of paths
COUNTS = Algebra("counts", operator.mul, operator.add, zero=0, one=1)
#: whether a path exists: with every label True, sparsity patterns
BOOLEANS = Algebra("booleans", operator.and_, operator.or_, zero=False, one=True)


class Propagation(NamedTuple):
    """What a sweep leaves: a value per vertex (``None`` where no seed
    reaches, i.e. structurally zero) and the operations it took."""

    values: list
    multiplications: int
    additions: int


def _setup(g, algebra, labels):
    algebra = g.algebra if algebra is None else algebra
    labels = g.labels if labels is None else labels
    if isinstance(labels, np.ndarray):
        labels = labels.tolist()  # Python floats: the scalar arithmetic below is faster
    if len(labels) != len(g.sources):
        raise ValueError(f"labels has {len(labels)} entries for {len(g.sources)} edges; give "
                         f"one label per edge, in the graph's edge order")
    return algebra, labels


def _seeded(g, seeds: Mapping) -> list:
    values = [None] * g.n_vertices
    for v, seed in seeds.items():
        values[int(v)] = seed
    return values


# ------------------------------------------------------ the two sweeps
def forward(g, seeds: Mapping, *, algebra: Algebra | None = None,
            labels: Sequence | None = None) -> Propagation:
    """The forward sweep: ``value[v] = sum over edges u -> v of label * value[u]``.

    ``seeds`` maps vertex numbers to their starting values (tangents).
    Edges are grouped by target and vertices numbered topologically, so one
    pass over the edges in order sees every value complete before it is
    used.  ``algebra`` and ``labels`` default to the graph's own.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> swept = forward(g, {g.index("x2"): 1.0})
    >>> round(swept.values[g.index("y")], 3), swept.multiplications, swept.additions
    (1.716, 5, 1)
    """
    algebra, labels = _setup(g, algebra, labels)
    multiply, add = algebra.multiply, algebra.add
    values = _seeded(g, seeds)
    multiplications = additions = 0
    for e, (u, v) in enumerate(zip(g.sources.tolist(), g.targets.tolist())):
        if values[u] is None:
            continue  # nothing flows along this edge
        term = multiply(labels[e], values[u])
        multiplications += algebra.multiply_cost(labels[e], values[u])
        if values[v] is None:
            values[v] = term
        else:
            additions += algebra.add_cost(values[v], term)
            values[v] = add(values[v], term)
    return Propagation(values, multiplications, additions)


def reverse(g, seeds: Mapping, *, algebra: Algebra | None = None,
            labels: Sequence | None = None) -> Propagation:
    """The reverse sweep: ``value[u] = sum over edges u -> v of value[v] * label``.

    ``seeds`` maps vertex numbers to their starting values (adjoints).  One
    pass over the edges in reverse order; a vertex used several times
    receives the sum of its partial adjoints.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> swept = reverse(g, {g.index("y"): 1.0})
    >>> [round(swept.values[x], 3) for x in g.inputs], swept.multiplications
    ([5.5, 1.716], 8)
    """
    algebra, labels = _setup(g, algebra, labels)
    multiply, add = algebra.multiply, algebra.add
    values = _seeded(g, seeds)
    multiplications = additions = 0
    src, dst = g.sources.tolist(), g.targets.tolist()
    for e in range(len(src) - 1, -1, -1):
        u, v = src[e], dst[e]
        if values[v] is None:
            continue
        term = multiply(values[v], labels[e])
        multiplications += algebra.multiply_cost(values[v], labels[e])
        if values[u] is None:
            values[u] = term
        else:
            additions += algebra.add_cost(values[u], term)
            values[u] = add(values[u], term)
    return Propagation(values, multiplications, additions)


# ------------------------------------------------------- paths (Bauer)
def path_label(g, path: Sequence[int], *, algebra: Algebra | None = None,
               labels: Sequence | None = None):
    """The chain rule along one path of vertex numbers: the product of its
    labels, each later edge multiplied on the outside.  ``None`` for a path
    of one vertex (the identity, whose shape a block label would need).

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> path_label(g, [g.index(v) for v in ("x1", "v3", "v5", "y")])  # dv3/dx1 = x2
    5.0
    """
    algebra, labels = _setup(g, algebra, labels)
    product = None
    for u, v in zip(path, path[1:]):
        label = labels[g.edge_index(u, v)]
        product = label if product is None else algebra.multiply(label, product)
    return product


def walk(g, source: int, target: int) -> Iterator[tuple[int, ...]]:
    """Every path from ``source`` to ``target``, depth first, as vertex tuples
    (an explicit stack: deep graphs do not hit the recursion limit).

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> [[g.names[v] for v in p] for p in walk(g, g.index("x2"), g.index("y"))]
    [['x2', 'v3', 'v5', 'y'], ['x2', 'v4', 'y']]
    """
    if source == target:
        yield (source,)
        return
    path, options = [source], [iter(g.successors(source))]
    while options:
        w = next(options[-1], None)
        if w is None:
            path.pop()
            options.pop()
        elif w == target:
            yield (*path, w)
        elif w < target:  # topological numbering: a later vertex cannot lead back
            path.append(w)
            options.append(iter(g.successors(w)))


def path_sum(g, source: int, target: int, *, algebra: Algebra | None = None,
             labels: Sequence | None = None):
    """Bauer's formula for one entry: the sum over every path from ``source``
    to ``target`` of its :func:`path_label` (``None`` when there is no path).

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> round(path_sum(g, g.index("x2"), g.index("y")), 3)
    1.716
    >>> path_sum(g, g.index("x2"), g.index("y"), algebra=COUNTS, labels=[1] * g.n_edges)
    2
    """
    algebra, labels = _setup(g, algebra, labels)
    total = None
    for path in walk(g, source, target):
        term = path_label(g, path, algebra=algebra, labels=labels)
        total = term if total is None else algebra.add(total, term)
    return total
