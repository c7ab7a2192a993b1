"""Compressed sweeps: the whole Jacobian from few seeds, and which seeds to use.

A forward sweep seeded with the *sum* of several inputs' unit tangents
gives ``J @ s``, the sum of their columns.  When no row holds two of those
columns (a colour group of :func:`minirad.exact.sparsity.colour_columns`), each
entry of the sum is exactly one Jacobian entry and the pattern says which:
the columns are recovered from one sweep.  Reverse sweeps with row groups
likewise.  This module prices and runs five ways of getting the Jacobian:

* ``forward`` and ``reverse``: one sweep per input or output (the dense sweeps);
* ``coloured forward`` / ``coloured reverse``: one sweep per colour group;
* ``mixed``: the rows with many nonzeros by coloured reverse sweeps, the
  rest of the matrix by coloured forward sweeps (or the mirror image), for
  patterns such as an arrow, dense in a row *and* a column, where either
  direction alone needs a sweep per input or output.

Costs follow the sweeps' convention (:mod:`minirad.exact.sweeps`): one
multiplication per edge a seed group reaches, additions where reached edges
meet.  :func:`plan` prices every way from the structure alone and picks the
cheapest; :func:`recover` runs one and reads the Jacobian back.

>>> import numpy as np
>>> from minirad import trace, ops
>>> g = trace(lambda x: [ops.sin(x[0]) * x[1], x[1] * x[2], x[2] * x[3]],
...           [0.5, 1.0, 1.5, 2.0])
>>> p = plan(g)
>>> p.best.name, p.best.sweeps
('coloured forward', 2)
>>> result = recover(g, p.best)
>>> bool(np.allclose(result.jacobian, np.asarray(__import__("minirad").jacobian(g))))
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..graph import labels
from ..graph.lcg import takes_graph_or_function
from .result import Accumulation
from .sparsity import as_pattern, colour_columns, colour_rows, pattern, scalar_sizes

__all__ = ["CRITERIA", "STRATEGIES", "Plan", "Seeding", "plan", "recover", "seeding",
           "sparse_jacobian"]

STRATEGIES = ("forward", "reverse", "coloured forward", "coloured reverse", "mixed")


@dataclass(frozen=True)
class Seeding:
    """One way of getting the Jacobian by sweeps, with its price.

    ``column_groups``: the input columns seeded together in each forward
    sweep; ``row_groups``: the output rows seeded together in each reverse
    sweep; ``reverse_rows``: the rows read from the reverse sweeps (every
    other row is read from the forward sweeps).  ``multiplications`` and
    other row is read from the forward sweeps) unless the column is one of
    ``forward_columns``, which are read from the forward sweeps whatever the
    row.  ``multiplications`` and ``additions`` are what the sweeps cost, by
    the sweeps' convention.
    """

    name: str
    column_groups: tuple[tuple[int, ...], ...]
    row_groups: tuple[tuple[int, ...], ...]
    reverse_rows: tuple[int, ...]
    multiplications: int
    additions: int
    forward_columns: tuple[int, ...] = ()
    pass_multiplications: int = 0

    def from_forward(self, i: int, j: int) -> bool:
        """Whether entry (i, j) is read from a forward sweep (else a reverse one)."""
        return j in self.forward_columns or i not in self.reverse_rows

    @property
    def sweeps(self) -> int:
        return len(self.column_groups) + len(self.row_groups)

    @property
    def forward_sweeps(self) -> int:
        return len(self.column_groups)

    @property
    def reverse_sweeps(self) -> int:
        return len(self.row_groups)

    def describe(self) -> str:
        parts = []
        if self.column_groups:
            parts.append(f"{self.forward_sweeps} forward")
        if self.row_groups:
            parts.append(f"{self.reverse_sweeps} reverse")
        return (f"{self.name}: {' + '.join(parts) or 'no'} sweep(s), "
                f"{self.multiplications} multiplications ({self.pass_multiplications} if "
                f"every sweep visits every edge), {self.additions} additions")


# ------------------------------------------------------------- seeds
def _positions(g, vertices) -> list[tuple[int, int]]:
    """(vertex, flat entry) of each scalar column or row, in Jacobian order."""
    return [(v, e) for v, size in zip(vertices, scalar_sizes(g, vertices)) for e in range(size)]


def _seed_values(g, vertices, group) -> dict:
    """The sweep's seeds for one group: 1.0 on each chosen scalar (a float on a scalar
    LCG, a unit-entry array on an LCG of arrays)."""
    where = _positions(g, vertices)
    if g.algebra is labels.FLOATS:
        return {where[j][0]: 1.0 for j in group}
    seeds = {}
    for j in group:
        v, e = where[j]
        if v not in seeds:
            seeds[v] = np.zeros(g.shapes[v], dtype=np.float64)
        seeds[v].reshape(-1)[e] = 1.0
    return seeds


def _sweep(g, vertices, group, forward: bool, structural: bool) -> labels.Propagation:
    """One compressed sweep.  ``structural`` on a scalar LCG: the same recurrence over
    BOOLEANS with every label True, which counts the same operations with no numbers."""
    seeds = _seed_values(g, vertices, group)
    sweep = labels.forward if forward else labels.reverse
    if structural and g.algebra is labels.FLOATS:
        return sweep(g, {v: True for v in seeds}, algebra=labels.BOOLEANS,
                     labels=[True] * len(g.sources))
    return sweep(g, seeds)


def _full_pass(g) -> int:
    """Multiplications of one sweep that visits every edge (an engine that does not
    skip structural zeros): one per edge, or each operator's flops."""
    if g.algebra is labels.FLOATS:
        return len(g.sources)
    return int(sum(1 if isinstance(op, float) else op.flops for op in g.labels))


def _price(g, name, column_groups, row_groups, reverse_rows, forward_columns=()) -> Seeding:
    multiplications = additions = 0
    for group in column_groups:
        swept = _sweep(g, g.inputs, group, True, structural=True)
        multiplications += swept.multiplications
        additions += swept.additions
    for group in row_groups:
        swept = _sweep(g, g.outputs, group, False, structural=True)
        multiplications += swept.multiplications
        additions += swept.additions
    sweeps = len(column_groups) + len(row_groups)
    return Seeding(name, tuple(column_groups), tuple(row_groups), tuple(reverse_rows),
                   multiplications, additions, tuple(forward_columns),
                   sweeps * _full_pass(g))


def _mixed_candidates(P: np.ndarray):
    """(column groups, row groups, reverse rows, forward columns) for each split:
    the rows holding at least t nonzeros go to reverse sweeps and the rest of
    the matrix to forward sweeps, and the mirror image with columns, for every
    threshold t."""
    m, n = P.shape
    row_counts, col_counts = P.sum(axis=1), P.sum(axis=0)
    for t in sorted(set(row_counts.tolist())):
        dense = np.flatnonzero(row_counts >= t)
        if 0 < len(dense) < m:
            rest = np.setdiff1d(np.arange(m), dense)
            rows = colour_rows(P[dense, :]).groups
            cols = colour_columns(P[rest, :]).groups
            yield ([c for c in cols if P[np.ix_(rest, c)].any()],
                   [tuple(int(dense[i]) for i in r) for r in rows], tuple(dense.tolist()), ())
    for t in sorted(set(col_counts.tolist())):
        dense = np.flatnonzero(col_counts >= t)
        if 0 < len(dense) < n:
            rest = np.setdiff1d(np.arange(n), dense)
            cols = colour_columns(P[:, dense]).groups
            rows = colour_rows(P[:, rest]).groups
            yield ([tuple(int(dense[j]) for j in c) for c in cols],
                   [r for r in rows if P[np.ix_(r, rest)].any()], tuple(range(m)),
                   tuple(dense.tolist()))


@takes_graph_or_function
def seeding(g, name: str, P=None) -> Seeding:
    """Price one way of getting the Jacobian (a name from :data:`STRATEGIES`).

    >>> from minirad import examples
    >>> s = seeding(examples.lecture(), "reverse")
    >>> s.sweeps, s.multiplications
    (1, 8)
    """
    P = pattern(g) if P is None else as_pattern(P)
    m, n = P.shape
    if name == "forward":
        return _price(g, name, [(j,) for j in range(n)], [], ())
    if name == "reverse":
        return _price(g, name, [], [(i,) for i in range(m)], tuple(range(m)))
    if name == "coloured forward":
        return _price(g, name, colour_columns(P).groups, [], ())
    if name == "coloured reverse":
        return _price(g, name, [], colour_rows(P).groups, tuple(range(m)))
    if name == "mixed":
        best = None
        for cols, rows, reverse_rows, forward_columns in _mixed_candidates(P):
            priced = _price(g, name, cols, rows, reverse_rows, forward_columns)
            if best is None or (priced.multiplications, priced.sweeps) < (
                    best.multiplications, best.sweeps):
                best = priced
        if best is None:   # no row or column to split off: mixed is coloured forward
            best = dataclasses.replace(seeding(g, "coloured forward", P), name=name)
        return best
    raise ValueError(f"unknown strategy {name!r}; valid strategies are "
                     f"{', '.join(map(repr, STRATEGIES))}")


#: what :func:`plan` minimises: the sweeps' own count (a sweep skips what its seeds
#: cannot reach), or whole passes (every sweep visits every edge, as an AD tool
#: that evaluates a JVP or VJP of the whole program does)
CRITERIA = ("multiplications", "passes")


def _key(s: Seeding, by: str):
    if by == "passes":
        return (s.pass_multiplications, s.multiplications)
    return (s.multiplications, s.sweeps)


@dataclass(frozen=True)
class Plan:
    """Every strategy priced on one graph's pattern, and the cheapest.

    ``best`` minimises ``by``: ``"multiplications"`` (the sweeps' cost
    convention; ties go to fewer sweeps, then the order of
    :data:`STRATEGIES`) or ``"passes"`` (multiplications if every sweep
    visited every edge, i.e. the number of sweeps weighted by the graph's
    size).  ``explanation()`` says why, in words.
    """

    pattern: np.ndarray
    seedings: tuple[Seeding, ...]
    by: str = "multiplications"

    @property
    def best(self) -> Seeding:
        return min(self.seedings, key=lambda s: _key(s, self.by))

    def __getitem__(self, name: str) -> Seeding:
        for s in self.seedings:
            if s.name == name:
                return s
        raise KeyError(f"no strategy {name!r}; this plan has "
                       f"{', '.join(s.name for s in self.seedings)}")

    def explanation(self) -> str:
        m, n = self.pattern.shape
        best = self.best
        lines = [f"Jacobian {m} x {n} with {int(self.pattern.sum())} structural nonzeros "
                 f"(at most {int(self.pattern.sum(axis=1).max(initial=0))} per row, "
                 f"{int(self.pattern.sum(axis=0).max(initial=0))} per column)."]
        lines += ["  " + s.describe() for s in self.seedings]
        dense = [s for s in self.seedings if s.name in ("forward", "reverse")]
        measure = ("multiplications" if self.by == "multiplications"
                   else "multiplications if every sweep visits every edge")
        if best.name in ("forward", "reverse") or not dense:
            lines.append(f"Chosen: {best.name}, the fewest {measure}.")
            cheaper_passes = min(self.seedings, key=lambda s: _key(s, "passes"))
            if self.by == "multiplications" and cheaper_passes.sweeps < best.sweeps:
                lines.append(f"{cheaper_passes.name} needs only {cheaper_passes.sweeps} "
                             f"sweep(s) but its sweeps cover overlapping parts of the graph: more "
                             f"multiplications here, fewer passes over the graph "
                             f"(plan(g, by='passes') picks it).")
            return "\n".join(lines)
        rival = min(dense, key=lambda s: _key(s, self.by))
        ours, theirs = _key(best, self.by)[0], _key(rival, self.by)[0]
        if best.forward_sweeps and best.reverse_sweeps:
            why = ("the dense rows (or columns) go to reverse (forward) sweeps and the "
                   "rest of the matrix, now sparse in the other direction, to coloured "
                   "sweeps")
        else:
            side = "columns" if best.forward_sweeps else "rows"
            other = "row" if best.forward_sweeps else "column"
            why = f"{side} that share no {other} are seeded together"
        lines.append(f"Chosen: {best.name}, {best.sweeps} sweep(s) instead of {rival.sweeps} "
                     f"for the cheaper dense sweep ({rival.name}): {ours} {measure} against "
                     f"{theirs}, because {why}.")
        if self.by == "multiplications" and ours == theirs:
            lines.append("The multiplications tie: a sweep here already skips what its seeds "
                         "cannot reach, so seeding together saves passes over the graph, "
                         f"not multiplications ({best.pass_multiplications} against "
                         f"{rival.pass_multiplications} if every sweep visited every edge).")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Plan(best={self.best.name!r}, by={self.by!r}, {len(self.seedings)} strategies)"


@takes_graph_or_function
def plan(g, strategies=STRATEGIES, by: str = "multiplications") -> Plan:
    """Price each strategy on ``g`` (an LCG of numbers or of arrays) and keep them all.

    On a scalar LCG the prices come from the structure alone (the sweep
    recurrence over BOOLEANS counts the same operations as over floats); on
    an LCG of arrays the compressed sweeps are run and their flops counted.
    ``by`` is what ``best`` minimises (:data:`CRITERIA`).

    >>> from minirad import examples
    >>> plan(examples.lecture()).best.name   # one output: a single reverse sweep
    'reverse'
    >>> arrow = examples.arrow(8)            # dense in a row and in a column
    >>> plan(arrow).best.name, plan(arrow, by="passes").best.name
    ('reverse', 'mixed')
    """
    if by not in CRITERIA:
        raise ValueError(f"by must be one of {', '.join(map(repr, CRITERIA))}, not {by!r}")
    for name in strategies:
        if name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r}; valid strategies are "
                             f"{', '.join(map(repr, STRATEGIES))}")
    P = pattern(g)
    return Plan(P, tuple(seeding(g, name, P) for name in strategies), by)


@takes_graph_or_function
def recover(g, chosen: Seeding, P=None) -> Accumulation:
    """Run the sweeps of ``chosen`` and read the full Jacobian back from them.

    The returned :class:`~minirad.exact.result.Accumulation` counts the
    operations the sweeps actually did (equal to the price).
    """
    P = pattern(g) if P is None else as_pattern(P)
    m, n = P.shape
    J = np.zeros((m, n))
    multiplications = additions = 0
    reverse_rows, forward_columns = set(chosen.reverse_rows), set(chosen.forward_columns)
    outputs = _positions(g, g.outputs)
    inputs = _positions(g, g.inputs)
    for group in chosen.column_groups:
        swept = _sweep(g, g.inputs, group, True, structural=False)
        multiplications += swept.multiplications
        additions += swept.additions
        compressed = _read(swept.values, outputs)
        for j in group:
            for i in np.flatnonzero(P[:, j]):
                if j in forward_columns or i not in reverse_rows:
                    J[i, j] = compressed[i]
    for group in chosen.row_groups:
        swept = _sweep(g, g.outputs, group, False, structural=False)
        multiplications += swept.multiplications
        additions += swept.additions
        compressed = _read(swept.values, inputs)
        for i in group:
            for j in np.flatnonzero(P[i, :]):
                if j not in forward_columns:
                    J[i, j] = compressed[j]
    shapes = None if g.algebra is labels.FLOATS else (
        tuple(g.shapes[v] for v in g.outputs), tuple(g.shapes[v] for v in g.inputs))
    return Accumulation(J, multiplications, additions, chosen.name, shapes=shapes)


def _read(values, where) -> np.ndarray:
    """The scalars at ``where`` ((vertex, entry) pairs) of a sweep's values."""
    out = np.zeros(len(where))
    for k, (v, e) in enumerate(where):
        if values[v] is not None:
            out[k] = np.asarray(values[v], dtype=np.float64).reshape(-1)[e]
    return out


@takes_graph_or_function
def sparse_jacobian(g, by: str = "multiplications") -> tuple[Accumulation, Plan]:
    """The Jacobian by the cheapest strategy of :func:`plan`, with the plan.

    >>> from minirad import examples
    >>> acc, p = sparse_jacobian(examples.lecture())
    >>> acc.method, acc.jacobian.round(3)
    ('reverse', array([[5.5  , 1.716]]))
    """
    chosen = plan(g, by=by)
    return recover(g, chosen.best, chosen.pattern), chosen
