"""Algorithm 1 for many samples at once (private: read
:func:`minirad.randomized.sampling.sample_paths`, the reference, first).

The reference walks the vertices in topological order and lets each
visited vertex draw.  Run for ``c`` samples at once that costs a round of
numpy calls per vertex, most of them for vertices that few samples visit.
Here the unit of work is a *level* of the graph (the vertices whose longest
path from a source has the same length: no edge joins two of them), and
the state is a table of marks, one byte per (vertex, sample) pair,
vertex-major (``v * row + s``, a row of ``c`` samples rounded up to whole
64-bit words):

* the inputs of every sample are marked visited;
* at each level, in order, the marked pairs of the level's vertices are
  found by one scan of their rows of the marks and make their draws -- all
  of them with one call on the generator (``k_v`` uniform choices among
  ``v``'s out-edges, with replacement; every out-edge where ``v`` keeps
  them all);
* the drawn edges' heads (all at later levels) are marked.

Every visited pair draws exactly once, with the law Algorithm 1 gives it:
whether a vertex draws never depends on which of its in-edges were drawn,
only on whether one was.  Only the order in which the generator's numbers
are used differs from the reference, so for one seed the two give
different estimates with the same law (``tests/randomized/test_sampling.py`` checks
that law, and feeds the reference's own draws through :func:`estimate`).

:func:`estimate` then runs reverse (or forward) accumulation over all
samples at once, one level at a time, in a table of values laid out like
the marks (one per pair and seed): a pair's adjoint is written when its
level is reached, before any draw into it is read, so the table needs no
clearing.  Draws whose head lies off every input-output path can never
reach an output; they all point to one extra row, the *trash*, whose
adjoint is zero.  The number of numpy calls is proportional to the number
of levels, not to the number of vertices or samples.  The tables are kept
from call to call (:class:`Scratch`; at most ``TABLE_ENTRIES`` floats,
64 MB, and a byte per entry of marks): fresh ones of tens of megabytes
would cost a page fault per 4 KB touched, in every call.

Where every vertex draws a single edge (``k = 1``), :func:`walks` does
without levels and without the table of visits: each sample's ``Q`` is
then one path per input, and its estimate a product along each.  Its
rounds of numpy calls number the steps of the longest walk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..graph.levels import ranges

#: the table of values holds at most this many floats in a chunk (64 MB)
TABLE_ENTRIES = 1 << 23
#: the table of :func:`walks` holds at most this many entries (of 1, 2 or 8 bytes)
WALK_ENTRIES = 1 << 24


class Plan:
    """What the batched sampler needs of ``g``: its vertices on input-output
    paths (``on``), renumbered ``0..R-1`` by level, then by number (a
    topological order); ``levels[i]:levels[i+1]`` are the local numbers of
    one level.  Per local vertex ``start``, ``degree`` index the CSR arrays
    ``head`` (local number of each out-edge's target; ``R`` for a target
    off every path) and ``weight`` (what one draw of the edge adds to
    ``Q``: ``(d_v / k_v) dw/dv``, or ``dw/dv`` where ``v`` keeps every
    out-edge), and ``draws`` is ``k_v`` (0: keeps every out-edge).
    ``edge`` maps CSR positions to ``g``'s edge numbers."""

    def __init__(self, g, draws: np.ndarray, on: np.ndarray, level: np.ndarray):
        vertices = np.flatnonzero(on)
        vertices = vertices[np.argsort(level[vertices], kind="stable")]
        self.size = size = len(vertices)
        self.vertices = vertices
        local = np.full(g.n_vertices, size, dtype=np.int64)
        local[vertices] = np.arange(size)
        self.inputs = local[list(g.inputs)]
        self.outputs = local[list(g.outputs)]
        changes = np.flatnonzero(np.diff(level[vertices])) + 1
        self.levels = np.concatenate(([0], changes, [size])).tolist()
        order, ptr = g.out_edges_csr
        self.start = ptr[vertices]
        self.degree = ptr[vertices + 1] - self.start
        self.draws = draws[vertices]
        self.edge = order
        self.head = local[g.targets[order]]
        degree = np.diff(ptr)[g.sources[order]]
        k = draws[g.sources[order]]
        self.weight = np.where(k > 0, degree / np.maximum(k, 1), 1.0) * g.partials[order]
        # draws one sample makes when it visits every vertex on the paths
        self.most_draws = int(np.where(self.draws > 0, self.draws, self.degree).sum())
        # per level: the k every vertex of it draws (0: not the same for all,
        # or some keep every edge or have none), and its common out-degree (0: none)
        self.level_draws, self.level_degree = [], []
        for lo, hi in zip(self.levels[:-1], self.levels[1:]):
            k, d = self.draws[lo:hi], self.degree[lo:hi]
            self.level_draws.append(int(k[0]) if (k == k[0]).all() and (d > 0).all() else 0)
            self.level_degree.append(int(d[0]) if (d == d[0]).all() else 0)
        # every vertex with successors draws once: each sample is a set of walks
        self.single = bool((self.draws[self.degree > 0] == 1).all())
        # Lemire's rejection threshold (2^32 - d) mod d per vertex, for uniform_below
        self.bound = np.maximum(self.degree, 1).astype(np.uint64)
        self.threshold = (np.uint64(2**32) - self.bound) % self.bound
        self.most_threshold = int(self.threshold.max(initial=0))
        for array in vars(self).values():  # a plan is shared (memoized on the graph)
            if isinstance(array, np.ndarray):
                array.flags.writeable = False


@dataclass(frozen=True)
class Level:
    """The draws of the visited pairs of the level of local vertices
    ``lo:hi``, ``found`` (their entries ``v * row + s`` in the tables,
    sorted).  ``where`` holds CSR
    positions of the plan, shape (k, pairs) when every pair drew ``k``
    times (``made`` is then None; row ``t`` holds every pair's ``t``-th
    draw), else flat and grouped by pair, ``made[i]`` draws for pair ``i``.
    ``key`` is the entry of each draw's head."""

    lo: int
    hi: int
    found: np.ndarray
    where: np.ndarray
    key: np.ndarray
    made: np.ndarray | None


@dataclass(frozen=True)
class Draws:
    """The draws of ``c`` samples, level by level; ``marks[v * row + s]``
    is 1 where sample ``s`` visited local vertex ``v`` (row ``plan.size``:
    the trash)."""

    c: int
    row: int
    marks: np.ndarray
    levels: list

    @property
    def n_draws(self) -> int:
        return sum(level.key.size for level in self.levels)

    def visits(self, v: int) -> np.ndarray:
        """Which samples visited local vertex ``v``."""
        return self.marks[v * self.row:v * self.row + self.c] > 0

    def flat(self, plan: Plan) -> tuple[np.ndarray, np.ndarray]:
        """Every draw as (sample, edge of ``g``): what the tests compare with
        the reference, one sample at a time."""
        samples, edges = [], []
        for level in self.levels:
            # (k, pairs) blocks by pair, so that a pair's draws come together
            key, where = ((level.key.T, level.where.T) if level.made is None
                          else (level.key, level.where))
            samples.append((key % self.row).ravel())
            edges.append(plan.edge[where.ravel()])
        if not samples:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(samples), np.concatenate(edges)


class Scratch:
    """The tables of :func:`draw` and :func:`estimate`, kept between chunks
    and calls (:func:`borrow`): ``marks`` (bytes) and ``values`` (floats)."""

    def __init__(self, marks: int = 0, values: int = 0):
        self.marks = np.empty(marks, dtype=np.uint8)
        self.values = np.empty(values)

    def fit(self, marks: int, values: int) -> Scratch:
        """Grow the tables to at least these sizes (their contents are lost)."""
        if len(self.marks) < marks:
            self.marks = np.empty(marks, dtype=np.uint8)
        if len(self.values) < values:
            self.values = np.empty(values)
        return self


_kept: list[Scratch] = []


def borrow() -> Scratch:
    """The :class:`Scratch` kept by :func:`give_back`, or a new one (it is
    taken out while in use, so that threads never share one)."""
    try:
        return _kept.pop()
    except IndexError:
        return Scratch()


def give_back(scratch: Scratch) -> None:
    """Keep ``scratch`` for the next :func:`borrow` (only one is kept)."""
    _kept[:] = [scratch]


def uniform_below(rng, bound: np.ndarray, threshold: np.ndarray) -> np.ndarray:
    """Independent uniform integers in ``[0, bound)``, one per entry of
    ``bound`` (uint64 entries, each ``1 <= bound < 2**32``), exactly:
    Lemire's multiply-and-shift, vectorised.  A uniform 32-bit ``u`` maps
    to ``(u * bound) >> 32``; the ``u`` whose low half ``(u * bound) mod
    2**32`` falls below ``threshold = (2**32 - bound) mod bound`` (fewer
    than ``bound`` of the 2**32, so almost never) are drawn again, which
    leaves every value exactly ``floor(2**32 / bound)`` preimages.  numpy's
    ``rng.integers`` with an array of bounds does the same one element at a
    time through its broadcasting loop, about twice as slowly."""
    product = rng.integers(2**32, size=bound.shape, dtype=np.uint64)
    product *= bound
    out = product >> np.uint64(32)
    product &= np.uint64(0xFFFFFFFF)
    again = np.flatnonzero(product < threshold)
    if len(again):
        out[again] = uniform_below(rng, bound[again], threshold[again])
    return out.view(np.int64)


#: bit generators whose raw output is 64 uniform bits (MT19937's is 32)
_SIXTY_FOUR = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)


def words(rng, n: int) -> np.ndarray:
    """``n`` independent uniform 32-bit words (uint32).  From a 64-bit bit
    generator, the two halves of each raw output (independent and uniform
    when the output is), about twice as fast as ``rng.integers``."""
    bits = getattr(rng, "bit_generator", None)
    if isinstance(bits, _SIXTY_FOUR):
        return bits.random_raw((n + 1) // 2).view(np.uint32)[:n]
    return rng.integers(2**32, size=n, dtype=np.uint32)


def picks(rng, plan: Plan, vertex: np.ndarray, k: int, degree: int = 0) -> np.ndarray:
    """``k`` independent uniform out-edges of each local vertex in ``vertex``,
    as indices among its out-edges, shape (k, len(vertex)), row ``t`` the
    ``t``-th draw of every vertex:
    :func:`uniform_below` without reading a threshold per draw.  A low half
    that could be rejected lies below the largest threshold, which is rare
    (thresholds are below the degrees, out of 2**32): only those draws look
    up their own threshold, and the ones rejected are drawn again.
    ``degree``: the out-degree all of ``vertex`` share (0: not the same)."""
    word = words(rng, k * len(vertex)).reshape(k, -1)
    product = np.multiply(word, np.uint64(degree) if degree else plan.bound[vertex])
    pick = product >> np.uint64(32)
    product &= np.uint64(0xFFFFFFFF)
    most = 2**32 % degree if degree else plan.most_threshold
    suspect = (product < most).ravel().nonzero()[0] if most else ()
    if len(suspect):
        of = vertex[suspect % len(vertex)]
        rejected = product.ravel()[suspect] < plan.threshold[of]
        again, of = suspect[rejected], of[rejected]
        if len(again):
            pick.ravel()[again] = uniform_below(rng, plan.bound[of], plan.threshold[of])
    return pick.view(np.int64)


def rows(c: int) -> int:
    """Entries per vertex in the tables for ``c`` samples: whole 64-bit words."""
    return -(-c // 8) * 8


def draw(plan: Plan, c: int, rng, scratch: Scratch | None = None) -> Draws:
    """Algorithm 1 for ``c`` samples, level by level (module docstring), with
    its marks in ``scratch`` (new ones when not given)."""
    size, row = plan.size, rows(c)
    marks = (scratch or Scratch()).fit((size + 1) * row, 0).marks[:(size + 1) * row]
    marks[:] = 0
    for v in plan.inputs[plan.inputs < size]:
        marks[v * row:v * row + c] = 1
    head = plan.head * row  # the entry of each out-edge's head, less the sample
    levels = []
    for i, (lo, hi) in enumerate(zip(plan.levels[:-1], plan.levels[1:])):
        found = marks[lo * row:hi * row].view(bool).nonzero()[0]
        if not len(found):
            continue
        found += lo * row
        v, s = np.divmod(found, row)
        k = plan.level_draws[i]
        if k:  # every pair of the level draws k times: a (k, pairs) block
            where = picks(rng, plan, v, k, plan.level_degree[i])
            # (in place: a new array from a (k, pairs) and a (pairs,) operand is
            # filled with the short axis innermost, several times slower)
            where += plan.start[v]
            key = head.take(where)
            key += s
            made = None
        else:
            k = plan.draws[v]
            degree = plan.degree[v]
            start = plan.start[v]
            made = np.where(k > 0, k, degree)  # draws per pair (0 without successors)
            who = np.repeat(np.arange(len(v)), made)
            drawing = k[who] > 0
            where = np.empty(len(who), dtype=np.int64)
            chosen = v[who[drawing]]
            where[drawing] = plan.start[chosen] + uniform_below(rng, plan.bound[chosen],
                                                                plan.threshold[chosen])
            keep = k == 0
            where[~drawing] = ranges(start[keep], start[keep] + degree[keep])
            key = head[where] + s[who]
        marks[key.ravel()] = 1  # heads lie at later levels: not yet scanned
        levels.append(Level(lo, hi, found, where, key, made))
    return Draws(c, row, marks, levels)


def replay(plan: Plan, visited: np.ndarray, counts: np.ndarray) -> Draws:
    """The :class:`Draws` of given runs of Algorithm 1 (so that
    :func:`estimate` can be held equal to the reference on the same draws):
    ``visited`` (c, n_vertices) and ``counts`` (c, n_edges) as
    :class:`minirad.randomized.sampling.PathSample` records them, one row per sample.
    Vertices off every input-output path and their draws are left out,
    as :func:`draw` leaves them out."""
    c, size = len(visited), plan.size
    row = rows(c)
    marks = np.zeros((size + 1) * row, dtype=np.uint8)
    marks[:size * row].reshape(size, row)[:, :c] = visited[:, plan.vertices].T
    levels = []
    head = plan.head * row
    for lo, hi in zip(plan.levels[:-1], plan.levels[1:]):
        found = np.flatnonzero(marks[lo * row:hi * row]) + lo * row
        if not len(found):
            continue
        v, s = np.divmod(found, row)
        # each drawn out-edge, as often as it was drawn, in CSR order
        position = ranges(plan.start[v], plan.start[v] + plan.degree[v])
        owner = np.repeat(np.arange(len(v)), plan.degree[v])
        times = counts[s[owner], plan.edge[position]]
        where = np.repeat(position, times)
        made = np.bincount(np.repeat(owner, times), minlength=len(v))
        levels.append(Level(lo, hi, found, where, head[where] + s[np.repeat(owner, times)],
                            made))
    return Draws(c, row, marks, levels)


def group_sums(group: np.ndarray, x: np.ndarray, n: int) -> np.ndarray:
    """The sum of ``x`` over each of the ``n`` groups numbered in ``group``:
    ``np.bincount``, which takes no complex weights, part by part."""
    if not np.iscomplexobj(x):
        return np.bincount(group, weights=x, minlength=n)
    out = np.empty(n, dtype=x.dtype)
    out.real, out.imag = group_sums(group, x.real, n), group_sums(group, x.imag, n)
    return out


def estimate(plan: Plan, drawn: Draws, n_in: int, n_out: int, forward: bool,
             scratch: Scratch | None = None) -> np.ndarray:
    """The ``c`` estimates, (c, n_out, n_in), by reverse accumulation on
    every sampled graph at once (``forward``: forward accumulation, the
    same numbers up to rounding), level by level, in a table of values
    laid out like the marks, one per seed (in ``scratch``, or new).  The
    trash row holds zeros; tangents pushed there are never read."""
    c, row, size = drawn.c, drawn.row, plan.size
    seeded, read, width = ((plan.inputs, plan.outputs, n_in) if forward
                           else (plan.outputs, plan.inputs, n_out))
    entries = (size + 1) * row
    # the seeds of an entry side by side, gathered a column at a time (numpy's
    # 2-d fancy indexing is much slower)
    value = (scratch or Scratch()).fit(0, width * entries).values[:width * entries]
    value = value.reshape(entries, width)
    if forward:  # tangents are pushed into the heads: start from zero, seeds set
        value[:] = 0.0
        for j, v in enumerate(seeded):
            if v < size:
                value[v * row:v * row + c, j] = 1.0
    else:  # adjoints are written level by level, seeds added after: only the trash is set
        value[size * row:] = 0.0
    # two seeds ride as the real and imaginary parts of one complex number, so
    # that a draw costs one gather instead of two; a real weight times it
    # multiplies each part alone (the cross terms are products with 0.0)
    columns = value.view(np.complex128).T if width == 2 else value.T
    steps = drawn.levels if forward else reversed(drawn.levels)
    for level in steps:
        found, key = level.found, level.key
        weight = plan.weight.take(level.where)
        by = (None if level.made is None
              else np.repeat(np.arange(len(found)), level.made))
        for column in columns:
            if by is None and forward:  # push each pair's tangent along its draws
                for t in range(len(key)):
                    np.add.at(column, key[t], weight[t] * column[found])
            elif forward:
                np.add.at(column, key, weight * column[found][by])
            elif by is None:  # pull: a pair's adjoint sums its draws' contributions
                pulled = column[key]  # (np.take would copy a strided column first)
                pulled *= weight
                for t in range(1, len(pulled)):
                    pulled[0] += pulled[t]
                column[found] = pulled[0]
            else:
                column[found] = group_sums(by, weight * column[key], len(found))
        if not forward:  # the seeds: outputs draw nothing (their pull left 0)
            for j, v in enumerate(seeded):
                if level.lo <= v < level.hi:
                    value[v * row:v * row + c, j] += 1.0
    out = np.zeros((c, len(read), width))
    for i, v in enumerate(read):
        if v < size:
            out[:, i] = value[v * row:v * row + c]
    # (c, read, seeded) -> (c, n_out, n_in)
    return out if forward else out.transpose(0, 2, 1)


def walks(plan: Plan, c: int, rng, n_in: int, n_out: int) -> tuple[np.ndarray, int]:
    """Algorithm 1 for ``c`` samples when every vertex draws one edge
    (``plan.single``), as walks; returns the estimates, (c, n_out, n_in),
    and the number of draws made (a few, lost in ties, more than kept).

    With one draw per visited vertex, ``Q`` leaves each vertex by at most
    one edge, so from each input there is exactly one path in ``Q``, and
    the estimate of ``dy/dx`` is the product of the weights along it if it
    reaches ``y`` (0 otherwise).  So every (sample, input) pair is a walker
    that starts at its input and, one step per round, draws an out-edge
    where it stands and multiplies its product by the edge's weight; it
    stops at an output (recording its product there: outputs have no
    successors) or on leaving the input-output paths.  All walkers of all
    samples move in one round of numpy calls.  Walkers of one sample that
    stand on one vertex must follow the same draw (Algorithm 1 lets a
    vertex draw once), so with several inputs a table keeps each
    (sample, vertex) pair's draw, made by the first walker to arrive; the
    draws made are then exactly those of Algorithm 1 at the vertices it
    visits, with its law.  The products are formed along the walk instead
    of back from the output: the same numbers up to rounding."""
    size, row = plan.size, plan.size + 1
    out = np.zeros((c, n_out, n_in))
    # what a walker does on each local vertex: -1 walk on, -2 stop (the trash:
    # off every path), else record its product at the output, n_in * number
    output = np.full(row, -1, dtype=np.int64)
    output[size] = -2
    on = plan.outputs < size
    output[plan.outputs[on]] = np.flatnonzero(on) * n_in
    start = [(i, v) for i, v in enumerate(plan.inputs.tolist()) if v < size]
    if not start:
        return out, 0
    # walkers by sample, then input: the walkers of a sample share a row of the table
    vertex = np.tile([v for _, v in start], c)
    # a walker's entry of `out` is cell + n_in * (its output's number)
    cell = ((np.arange(c) * (n_out * n_in))[:, None] + np.array([i for i, _ in start])).ravel()
    product = np.ones(len(vertex))
    shared = len(start) > 1
    if shared:  # table[s * row + v]: 0 where sample s has not drawn at v, else 1 + the draw
        # (the smallest integer that holds a degree: a smaller table stays in cache)
        most = int(plan.degree.max(initial=0))
        kind = np.uint8 if most < 2**8 else np.uint16 if most < 2**16 else np.int64
        table = np.zeros(row * c, dtype=kind)
        base = np.repeat(np.arange(c) * row, len(start))  # s * row
    made = 0
    while len(vertex):
        if not shared:
            pick = picks(rng, plan, vertex, 1)[0]
            made += len(pick)
        else:
            key = base + vertex
            pick = table[key]
            fresh = np.flatnonzero(pick == 0)
            if len(fresh):
                # every walker on a (sample, vertex) not drawn at yet draws, and
                # one of those standing on the same pair wins the write; which
                # one depends on positions only, never on the values drawn, so
                # the draw kept is uniform, and all of them follow it
                at = key[fresh]
                table[at] = picks(rng, plan, vertex[fresh], 1)[0] + 1
                pick[fresh] = table[at]
                made += len(fresh)
            pick = pick - 1
        where = plan.start[vertex] + pick
        product *= plan.weight[where]
        vertex = plan.head[where]
        j = output[vertex]
        done = np.flatnonzero(j >= 0)
        if len(done):
            out.ravel()[cell[done] + j[done]] = product[done]
        going = np.flatnonzero(j == -1)
        if len(going) < len(vertex):
            vertex, cell, product = vertex[going], cell[going], product[going]
            if shared:
                base = base[going]
    return out, made
