"""What every exact way of getting a Jacobian returns: the matrix and its cost.

The matrix is always dense float64, rows and columns the *entries* of the
outputs and inputs (a number is one entry, an array its entries in C
order), whatever the graph holds.  On a graph with array vertices the same
matrix is also cut into its Jacobian blocks, one per (output, input) pair.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

__all__ = ["Accumulation", "format_count"]

#: counts with more digits than this are shown as ``~1.2e6020``
EXACT_DIGITS = 15
#: the largest dense Jacobian (entries) a method on a graph with arrays assembles
JACOBIAN_LIMIT = 4_000_000


def format_count(n) -> str:
    """An exact count (of paths, of operations) as text a person can read.

    Up to :data:`EXACT_DIGITS` digits it is written out; beyond, as
    ``~m.me<exponent>``.  Python prints no int above 4300 digits, and a deep
    graph's path count easily has more, so every message showing such a
    count goes through here.

    >>> format_count(12_345), format_count(2 ** 64), format_count(2 ** 20000)
    ('12345', '~1.8e19', '~4.0e6020')
    """
    if not isinstance(n, Integral):
        return str(n)
    n = int(n)
    if abs(n) < 10 ** EXACT_DIGITS:
        return str(n)
    exponent = math.floor(math.log10(abs(n)))  # math.log10 takes ints of any size
    mantissa = 10 ** (math.log10(abs(n)) - exponent)
    if round(mantissa, 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{'-' if n < 0 else ''}~{mantissa:.1f}e{exponent}"


@dataclass(frozen=True, eq=False)
class Accumulation:
    """A Jacobian together with what it cost to accumulate.

    ``jacobian`` has shape ``(n_outputs, n_inputs)`` (or the selected rows
    or columns of a sweep over a subset of seeds); ``multiplications`` and
    ``additions`` follow the method's cost convention; ``method`` names it.

    On a graph with array vertices the rows and columns are array entries
    (C order, one vertex after another), ``shapes`` holds the shapes of the
    row and column vertices, ``(output shapes, input shapes)``, and
    ``blocks[i][j]`` is the Jacobian block of row vertex i and column vertex
    j as an array of shape ``out_shape + in_shape`` (a view into
    ``jacobian``).  On a graph of numbers both are None.

    ``order`` is the elimination order (vertex names) for vertex
    elimination and None for the other methods.  Sweeps also keep their
    per-vertex values, one per seed: ``tangents[v][j]`` is d v / d seed j
    (forward sweeps) and ``adjoints[v][j]`` is d seed j / d v (reverse
    sweeps).  On a graph of numbers they are ``(n_vertices, n_seeds)``
    arrays, so ``tangents[v, j]`` reads the same; on a graph with arrays
    they are tuples holding one ``(n_seeds,) + shape`` array per vertex,
    where the seeds are the entries of the ``seeds`` vertices in order.

    ``multiplications`` and ``additions`` may be left None and given as
    ``counts``, a function returning both: they are then computed the first
    time either is read (a sweep's counts need a reachability search that
    a caller who only wants the Jacobian should not pay for).

    Every exact method returns one: :func:`minirad.exact.sweeps.forward_sweep`,
    :func:`~minirad.exact.sweeps.reverse_sweep`, :func:`minirad.exact.paths.bauer`, and
    :func:`minirad.exact.elimination.eliminate`, whose
    :class:`~minirad.exact.elimination.Elimination` adds the graphs and steps.

    >>> from minirad import examples
    >>> from minirad.exact.jacobians import accumulate
    >>> [(r.method, r.order, r.operations) for r in
    ...  (accumulate(examples.lab(), method=m) for m in ("forward", "eliminate"))]
    [('forward', None, 7), ('eliminate', ('v3', 'v2'), 4)]
    """

    jacobian: np.ndarray
    multiplications: int
    additions: int
    method: str
    order: tuple[str, ...] | None = field(default=None, kw_only=True)
    tangents: np.ndarray | None = field(default=None, kw_only=True)
    adjoints: np.ndarray | None = field(default=None, kw_only=True)
    seeds: tuple[int, ...] = field(default=(), kw_only=True)
    shapes: tuple[tuple, tuple] | None = field(default=None, kw_only=True)
    counts: Callable[[], tuple[int, int]] | None = field(default=None, kw_only=True,
                                                         repr=False)

    def __post_init__(self):
        if self.counts is not None and self.multiplications is None:
            # no instance attribute: the first read falls through to __getattr__
            object.__delattr__(self, "multiplications")
            object.__delattr__(self, "additions")

    def __getattr__(self, name: str):
        counts = self.__dict__.get("counts")
        if name in ("multiplications", "additions") and counts is not None:
            multiplications, additions = counts()
            object.__setattr__(self, "multiplications", multiplications)
            object.__setattr__(self, "additions", additions)
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def blocks(self) -> tuple[tuple[np.ndarray, ...], ...] | None:
        """``blocks[i][j]``: the block of row vertex i and column vertex j, shaped
        ``out_shape + in_shape``; None on a graph of numbers."""
        if self.shapes is None or self.jacobian is None:
            return None
        out_shapes, in_shapes = self.shapes
        rows = _offsets(out_shapes)
        columns = _offsets(in_shapes)
        return tuple(tuple(self.jacobian[rows[i]:rows[i + 1], columns[j]:columns[j + 1]]
                           .reshape(o + x) for j, x in enumerate(in_shapes))
                     for i, o in enumerate(out_shapes))

    @property
    def operations(self) -> int:
        """Multiplications plus additions."""
        return self.multiplications + self.additions

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, jacobian shape "
                f"{self.jacobian.shape}, multiplications={format_count(self.multiplications)}, "
                f"additions={format_count(self.additions)})")


def _offsets(shapes) -> list[int]:
    """Where each vertex's entries start among the rows (or columns), plus the total."""
    starts = [0]
    for shape in shapes:
        starts.append(starts[-1] + math.prod(shape))
    return starts


def check_size(n_rows: int, n_columns: int, limit: int = JACOBIAN_LIMIT) -> None:
    """Refuse a dense Jacobian of more than ``limit`` entries, before it is allocated."""
    if n_rows * n_columns > limit:
        raise ValueError(f"the Jacobian is {n_rows:,} x {n_columns:,} = {n_rows * n_columns:,} "
                         f"entries, above the limit of {limit:,} for a dense matrix; ask for "
                         f"products with vectors instead (jvp, vjp) or for fewer seeds")


def entry_name(g, vertices, position: int) -> str:
    """The name of row or column ``position`` of a Jacobian whose rows (columns) are
    the entries of ``vertices``: the vertex name for a number, ``x[i,j]`` for an entry.

    >>> from minirad import examples
    >>> g = examples.lecture()
    >>> entry_name(g, g.inputs, 1)
    'x2'
    """
    for v in vertices:
        shape = g.shapes[v]
        size = math.prod(shape)
        if position < size:
            if shape == ():
                return g.names[v]
            index = np.unravel_index(position, shape)
            return f"{g.names[v]}[{','.join(str(int(i)) for i in index)}]"
        position -= size
    raise ValueError(f"position {position} is past the entries of the given vertices")


def from_labels(g, rows, columns, label_of) -> np.ndarray:
    """The dense float64 Jacobian whose block (r, c) is ``label_of(r, c)``, a label
    of ``g`` (a float or an operator) from column vertex c to row vertex r, or
    None where no path joins them.  Rows and columns are the entries of
    ``rows`` and ``columns``."""
    row_at = _offsets([g.shapes[v] for v in rows])
    column_at = _offsets([g.shapes[v] for v in columns])
    check_size(row_at[-1], column_at[-1])
    J = np.zeros((row_at[-1], column_at[-1]))
    for i, r in enumerate(rows):
        for j, c in enumerate(columns):
            label = label_of(r, c)
            if label is None:
                continue
            block = (np.array([[label]]) if isinstance(label, float)
                     else np.asarray(label.to_dense(), dtype=np.float64))
            J[row_at[i]:row_at[i + 1], column_at[j]:column_at[j + 1]] = block
    return J
