"""Exercise checks for labs 4-6: vertex elimination, randomized AD, optimisation.

Same contract as :mod:`minirad.labs.checks`: a check runs the student's
function on several inputs, compares with minirad's own answer, prints one
line when everything agrees and otherwise raises
:class:`~minirad.labs.checks.CheckFailed` naming the input (so the student
can rebuild it) and what differs, without showing minirad's code.

Students work on plain dicts where a graph's edges are needed:
:func:`edge_dict` turns an LCG into ``{(u_name, v_name): partial}``, and
:func:`sample_jacobian` runs reverse accumulation on such a dict (a sampled
graph ``Q`` from Exercise 5.1).

>>> from minirad import examples
>>> edges = edge_dict(examples.lab())
>>> edges[("x", "v2")], len(edges)
(3.0, 5)
>>> check_markowitz_order(lambda g: [g.names[v] for v in g.intermediates])
Traceback (most recent call last):
...
minirad.labs.checks.CheckFailed: Exercise 4.2 (Markowitz order), on figure1(): your order is \
['v2', 'v3', 'v4', 'v5']; step 1 eliminates v2, whose Markowitz degree is 1 x 2 = 2, but v3 \
has degree 1 x 1 = 1
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from .. import examples
from ..exact.elimination import eliminate_vertex, elimination_order
from ..exact.sweeps import reverse_sweep
from ..graph.lcg import LCG
from ..randomized.sampling import path_sampling_variance, sample_paths, sampled_jacobians
from ..tracing import ops, trace
from .checks import CheckFailed, as_numbers, call_student, location, passed, time_limit
from .exercise import exercise

__all__ = [
    "check_descent_step", "check_eliminate_vertex", "check_markowitz_order", "check_sample_Q",
    "check_sgd", "edge_dict", "line_fit_loss", "sample_jacobian",
]

#: what the exercises of this module ask the student to write, in minirad
ELIMINATION_REFERENCE = ("minirad.exact.elimination", "minirad.exact._markowitz",
                         "minirad.exact.orders")


def _num(x) -> str:
    return f"{float(x):.10g}"


# ------------------------------------------------------------------ helpers
def edge_dict(g: LCG) -> dict[tuple[str, str], float]:
    """The edges of ``g`` as a dict ``{(u_name, v_name): partial}``.

    A new dict every call: changing it does not touch ``g``.

    >>> from minirad import examples
    >>> edge_dict(examples.figure1())[("x2", "v4")]
    0.9092974268256817
    """
    if not isinstance(g, LCG):
        raise TypeError(f"edge_dict takes an LCG, not {type(g).__name__}")
    return {(g.names[u], g.names[v]): float(p) for u, v, p in g.edges()}


class _EdgeTable:
    """Lookups for dict-shaped samples of one graph, built once per graph."""

    def __init__(self, g: LCG):
        self.g = g
        self.edges = {(g.names[u], g.names[v]): (u, v, float(p)) for u, v, p in g.edges()}
        self.out_degree = np.diff(g.out_edges_csr[1]).tolist()
        self.inputs, self.outputs = list(g.inputs), list(g.outputs)

    def jacobian(self, Q: Mapping) -> np.ndarray:
        g = self.g
        out_edges: list[list[tuple[int, float]]] = [[] for _ in range(g.n_vertices)]
        for key, w in Q.items():
            edge = self.edges.get(key)
            if edge is None:
                raise ValueError(f"Q has an entry for {key!r}, which is not an edge of the graph "
                                 f"(keys are pairs of vertex names)")
            out_edges[edge[0]].append((edge[1], float(w)))
        J = np.zeros((len(self.outputs), len(self.inputs)))
        for row, y in enumerate(self.outputs):
            adjoint = [0.0] * g.n_vertices
            adjoint[y] = 1.0
            for u in range(y - 1, -1, -1):
                total = 0.0
                for v, w in out_edges[u]:
                    total += w * adjoint[v]
                adjoint[u] = total
            J[row] = [adjoint[x] for x in self.inputs]
        return J


def sample_jacobian(g: LCG, Q: Mapping) -> np.ndarray:
    """Reverse accumulation on the sampled edges ``Q`` of ``g``: shape (n_outputs, n_inputs).

    ``Q`` maps ``(u_name, v_name)`` to the weight the edge carries in the
    sampled graph; edges of ``g`` missing from ``Q`` count as absent.  With
    ``Q = edge_dict(g)`` this is the exact Jacobian.

    >>> from minirad import examples
    >>> g = examples.lab()
    >>> sample_jacobian(g, edge_dict(g)).round(6).tolist()
    [[2.583853, 2.0]]
    """
    if not isinstance(g, LCG):
        raise TypeError(f"sample_jacobian takes the LCG first, not {type(g).__name__}")
    if not isinstance(Q, Mapping):
        raise TypeError(f"Q must be a dict {{(u_name, v_name): weight}}, not {type(Q).__name__}")
    return _EdgeTable(g).jacobian(Q)


def line_fit_loss(a, b):
    """Mean squared error of the line ``a*t + b`` on six fixed points (a small sum of terms).

    Its LCG has ``a`` and ``b`` feeding six terms each, so path sampling
    has something to choose; the minimum is near ``(0.718, 0.242)``.

    >>> round(line_fit_loss(0.0, 0.0), 6)
    0.310417
    """
    total = 0.0
    for t, s in _LINE_POINTS:
        r = a * t + b - s
        total = total + r * r
    return total / len(_LINE_POINTS)


_LINE_POINTS = ((-1.0, -0.6), (-0.6, -0.1), (-0.2, 0.2), (0.2, 0.3), (0.6, 0.8), (1.0, 0.85))


# --------------------------------------------------------------- lab 4: 4.1
def _elimination_walks():
    """(name, graph, order): every step of each walk is checked on the graph before it."""
    return [
        ("figure1()", examples.figure1(), "forward"),
        ("figure1()", examples.figure1(), "reverse"),
        ("lecture()", examples.lecture(), "markowitz"),
        ("lab()", examples.lab(), "forward"),
        ("two_outputs()", examples.two_outputs(), "forward"),
        ("random_dag(3, 10, 2, rng=0)", examples.random_dag(3, 10, 2, rng=0), "markowitz"),
        ("interleaved(3, 3, partials='random', rng=0)",
         examples.interleaved(3, 3, partials="random", rng=0), "reverse"),
    ]


def as_edge_dict(result, where: str, after: str = "the elimination") -> dict:
    """A student's edge dict with float partials; a ``CheckFailed`` naming the first
    thing that is not one (the lab's exercises on edge dicts share it)."""
    if not isinstance(result, Mapping):
        raise CheckFailed(f"{where}: your function returned {type(result).__name__}; return a "
                          f"new dict {{(u, w): partial}} holding the edges after {after}")
    clean = {}
    for key, value in result.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(x, str) for x in key)):
            raise CheckFailed(f"{where}: your dict has the key {key!r}; keys are pairs of vertex "
                              f"names such as ('x1', 'v2'), as in the dict you were given")
        try:
            clean[key] = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: your dict maps {key} to {value!r}, which is not a "
                              f"number") from None
    return clean


def _eliminate_hint(given: dict, v: str, key, mine: float) -> str:
    p, s = key
    into, out = given.get((p, v)), given.get((v, s))
    old = given.get(key)
    if into is None or out is None:
        return ""
    product = out * into
    close = lambda a, b: abs(a - b) <= 1e-12 * max(1.0, abs(b))  # noqa: E731
    if old is not None and close(mine, product):
        return (f" -- that is the product d{s}/d{v} * d{v}/d{p} alone, but {p} -> {s} already "
                f"carried {_num(old)}: parallel paths add up, so add the product to it")
    if old is not None and close(mine, old):
        return (f" -- that is the old partial of {p} -> {s}; add the product of the path "
                f"{p} -> {v} -> {s} to it")
    if close(mine, out + into):
        return f" -- that is d{s}/d{v} + d{v}/d{p}; the chain rule multiplies along a path"
    return ""


@exercise("4.1", "eliminate one vertex", takes=("eliminate_one",), points=3, minutes=25,
          seconds=60, reference=ELIMINATION_REFERENCE)
def check_eliminate_vertex(fn: Callable) -> None:
    """Exercise 4.1: ``fn(edges, v)`` eliminates intermediate ``v`` from an edge dict.

    ``edges`` is ``{(u, w): dw/du}`` keyed by vertex names (see
    :func:`edge_dict`); ``fn`` returns a new dict of the same kind for the
    graph without ``v``, and must leave ``edges`` unchanged.  Compared,
    step by step, with :func:`minirad.exact.elimination.eliminate_vertex` while
    eliminating every intermediate of several graphs in different orders,
    so that fill-in edges created by one step meet later steps.

    >>> from minirad.exact.elimination import eliminate_vertex
    >>> from minirad.labs.checks_more import edge_dict
    >>> def eliminate_one(edges, v):
    ...     g = LCG.from_edges([(a, b, d) for (a, b), d in edges.items()], [], [])
    ...     return edge_dict(eliminate_vertex(g, v))
    >>> check_eliminate_vertex(eliminate_one)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checks.CheckFailed: Exercise 4.1 (eliminate one vertex), on figure1(), \
eliminating v2: used the reference -- your function called minirad's eliminate_vertex ...
    """
    exercise, topic = "Exercise 4.1", "eliminate one vertex"
    walks = _elimination_walks()
    steps = 0
    for name, g, order in walks:
        done: list[str] = []
        for v in elimination_order(g, order):
            label = name if not done else f"{name} after eliminating {', '.join(done)}"
            where = location(exercise, topic, f"{label}, eliminating {v}")
            given = edge_dict(g)
            handed = dict(given)
            result = call_student(fn, where, handed, v, seconds=10)
            if handed != given:
                raise CheckFailed(f"{where}: your function changed the dict it was given; "
                                  f"build and return a new dict instead (start from a copy)")
            mine = as_edge_dict(result, where)
            g = eliminate_vertex(g, v)
            expected = edge_dict(g)
            stale = sorted(k for k in mine if v in k)
            if stale:
                raise CheckFailed(f"{where}: your result still has the edge {stale[0][0]} -> "
                                  f"{stale[0][1]}; once {v} is eliminated no edge may touch it")
            missing = [k for k in expected if k not in mine]
            if missing:
                p, s = missing[0]
                kind = ("a new edge" if (p, s) not in given else "an edge that was already there")
                raise CheckFailed(f"{where}: your result has no edge {p} -> {s} ({kind}); every "
                                  f"path {p} -> {v} -> {s} must become an edge {p} -> {s}")
            extra = [k for k in mine if k not in expected]
            if extra:
                raise CheckFailed(f"{where}: your result has an edge {extra[0][0]} -> "
                                  f"{extra[0][1]} that should not be there")
            for key, value in expected.items():
                if abs(mine[key] - value) > 1e-12 * max(1.0, abs(value)):
                    raise CheckFailed(f"{where}: your partial on {key[0]} -> {key[1]} is "
                                      f"{_num(mine[key])}, expected {_num(value)}"
                                      f"{_eliminate_hint(given, v, key, mine[key])}")
            done.append(v)
            steps += 1
    graphs = len({name for name, _, _ in walks})
    passed(exercise, f"eliminate_vertex agrees with minirad in {steps} steps on {graphs} graphs")


# --------------------------------------------------------------- lab 4: 4.2
def _markowitz_graphs() -> dict[str, LCG]:
    return {
        "figure1()": examples.figure1(),
        "lecture()": examples.lecture(),
        "lab()": examples.lab(),
        "two_outputs()": examples.two_outputs(),
        "independent_paths(3, 3)": examples.independent_paths(3, 3),
        "interleaved(3, 3)": examples.interleaved(3, 3),
        "random_dag(3, 10, 2, rng=0)": examples.random_dag(3, 10, 2, rng=0),
        "random_dag(2, 12, 2, density=0.4, rng=5)":
            examples.random_dag(2, 12, 2, density=0.4, rng=5),
        "random_dag(4, 20, 3, density=0.25, rng=7)":
            examples.random_dag(4, 20, 3, density=0.25, rng=7),
        "random_dag(1, 30, 1, density=0.15, rng=11)":
            examples.random_dag(1, 30, 1, density=0.15, rng=11),
    }


class _Structure:
    """Who is joined to whom while eliminating (numbers of the original graph)."""

    def __init__(self, g: LCG):
        self.pred = {v: set() for v in range(g.n_vertices)}
        self.succ = {v: set() for v in range(g.n_vertices)}
        for u, v, _ in g.edges():
            self.pred[v].add(u)
            self.succ[u].add(v)

    def degree(self, v: int) -> tuple[int, int]:
        return len(self.pred[v]), len(self.succ[v])

    def eliminate(self, v: int) -> None:
        for s in self.succ[v]:
            self.pred[s].discard(v)
            self.pred[s] |= self.pred[v]
        for p in self.pred[v]:
            self.succ[p].discard(v)
            self.succ[p] |= self.succ[v]
        del self.pred[v], self.succ[v]


def _greedy(g: LCG, key) -> list[str]:
    """A dynamic greedy order: the least ``key(pred, succ, v)`` first."""
    work, left, order = _Structure(g), set(g.intermediates), []
    while left:
        v = min(left, key=lambda u: key(*work.degree(u), u))
        order.append(g.names[v])
        work.eliminate(v)
        left.discard(v)
    return order


def _markowitz_hint(g: LCG, mine: list[str]) -> str:
    """Name a common slip when the student's order is exactly what that slip gives."""
    static = {v: len(g.predecessors(v)) * len(g.successors(v)) for v in g.intermediates}
    slips = [
        ([g.names[v] for v in sorted(static, key=lambda v: (static[v], v))],
         " -- it is the order of the degrees on the original graph; eliminating a vertex "
         "changes its neighbours' degrees, so recompute them after every step"),
        (_greedy(g, lambda p, s, v: (p * s, -v)),
         " -- ties go to the lowest vertex number (the earliest in g.names), not the highest"),
        (_greedy(g, lambda p, s, v: (p + s, v)),
         " -- the Markowitz degree is |pred| * |succ| (the multiplications the step costs), "
         "not |pred| + |succ|"),
    ]
    for order, text in slips:
        if mine == order:
            return text
    return ""


@exercise("4.2", "Markowitz order", takes=("markowitz_order",), points=3, minutes=25,
          seconds=60, reference=ELIMINATION_REFERENCE)
def check_markowitz_order(fn: Callable) -> None:
    """Exercise 4.2: ``fn(g)`` returns the Markowitz elimination order of ``g``, as names.

    The rule: repeatedly eliminate the intermediate whose current Markowitz
    degree ``|pred(v)| * |succ(v)|`` (on the graph left by the earlier
    eliminations) is least; among equal degrees take the lowest vertex
    number (the earliest in ``g.names``).  Compared with
    ``minirad.exact.elimination.elimination_order(g, "markowitz")`` on named and
    seeded random graphs; the message names the first step that differs.
    """
    exercise, topic = "Exercise 4.2", "Markowitz order"
    graphs = _markowitz_graphs()
    for name, g in graphs.items():
        where = location(exercise, topic, name)
        result = call_student(fn, where, g, seconds=20)
        try:
            mine = list(result)
        except TypeError:
            raise CheckFailed(f"{where}: your function returned {type(result).__name__}; "
                              f"return a list of vertex names") from None
        if mine and not all(isinstance(x, str) for x in mine):
            bad = next(x for x in mine if not isinstance(x, str))
            hint = " (g.names[v] turns a number into its name)" if isinstance(
                bad, (int, np.integer)) else ""
            raise CheckFailed(f"{where}: your order contains {bad!r}; return vertex names "
                              f"such as 'v3'{hint}")
        mids = [g.names[v] for v in g.intermediates]
        if sorted(mine) != sorted(mids):
            wrong = [x for x in mine if x not in mids]
            if wrong:
                raise CheckFailed(f"{where}: your order contains {wrong[0]!r}, which is not "
                                  f"an intermediate; only intermediates are eliminated")
            if len(set(mine)) != len(mine):
                twice = next(x for x in mine if mine.count(x) > 1)
                raise CheckFailed(f"{where}: your order eliminates {twice} twice")
            absent = [x for x in mids if x not in mine]
            raise CheckFailed(f"{where}: your order never eliminates {absent[0]}; it must list "
                              f"every intermediate once ({len(mids)} of them)")
        expected = list(elimination_order(g, "markowitz"))
        if mine == expected:
            continue
        i = next(j for j, (a, b) in enumerate(zip(mine, expected)) if a != b)
        work = _Structure(g)
        for v in expected[:i]:
            work.eliminate(g.index(v))
        (p1, s1), (p2, s2) = work.degree(g.index(mine[i])), work.degree(g.index(expected[i]))
        after = f" (after eliminating {', '.join(expected[:i])})" if i else ""
        if p1 * s1 == p2 * s2:
            reason = (f"{expected[i]} has the same degree and a lower vertex number, and ties go "
                      f"to the lowest number")
        else:
            reason = f"{expected[i]} has degree {p2} x {s2} = {p2 * s2}"
        raise CheckFailed(f"{where}: your order is {mine}; step {i + 1}{after} eliminates "
                          f"{mine[i]}, whose Markowitz degree is {p1} x {s1} = {p1 * s1}, but "
                          f"{reason}{_markowitz_hint(g, mine)}")
    passed(exercise, f"Markowitz order agrees with minirad on {len(graphs)} graphs")


# --------------------------------------------------------------- lab 5: 5.1
# (name, graph builder, k, samples for the statistical tests)
_SAMPLING_CASES = [
    ("figure1()", examples.figure1, 1, 2000),
    ("figure1()", examples.figure1, 2, 2000),
    ("interleaved(3, 3, partials='random', rng=0)",
     lambda: examples.interleaved(3, 3, partials="random", rng=0), 2, 2000),
    ("independent_paths(4, 3, partials='random', rng=1)",
     lambda: examples.independent_paths(4, 3, partials="random", rng=1), 2, 2000),
    ("random_dag(2, 8, 2, density=0.4, rng=3)",
     lambda: examples.random_dag(2, 8, 2, density=0.4, rng=3), 1, 2000),
]

#: an entry of the mean may differ from the exact Jacobian by this many standard errors
Z_LIMIT = 5.0


def _as_sample(result, table: _EdgeTable, where: str) -> dict[tuple[int, int], float]:
    """The student's Q as {(u, v) numbers: weight}, after checking its form."""
    if not isinstance(result, Mapping):
        raise CheckFailed(f"{where}: your function returned {type(result).__name__}; return a "
                          f"dict {{(u_name, v_name): weight}} of the sampled edges")
    Q = {}
    for key, value in result.items():
        edge = table.edges.get(key) if isinstance(key, tuple) else None
        if edge is None:
            if not (isinstance(key, tuple) and len(key) == 2
                    and all(isinstance(x, str) for x in key)):
                hint = " (g.names[v] turns a number into its name)" if isinstance(
                    key, tuple) and any(isinstance(x, (int, np.integer)) for x in key) else ""
                raise CheckFailed(f"{where}: your dict has the key {key!r}; keys are pairs of "
                                  f"vertex names such as ('x1', 'v2'){hint}")
            raise CheckFailed(f"{where}: your dict has an entry for {key[0]} -> {key[1]}, which "
                              f"is not an edge of the graph; Q holds only edges of g")
        try:
            weight = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: your dict maps {key} to {value!r}, which is not a "
                              f"number") from None
        if not math.isfinite(weight):
            raise CheckFailed(f"{where}: the weight of {key[0]} -> {key[1]} is {weight}")
        Q[edge[0], edge[1]] = (weight, edge[2])
    return Q


def _draw_counts(Q: dict, table: _EdgeTable, k: int, where: str) -> dict[int, dict[int, int]]:
    """Check the form of one sample and return each visited vertex's draw counts.

    The rules: only edges out of visited vertices (inputs, or vertices an
    edge of Q enters); each weight is m * (d_u / k) * partial with m >= 1 an
    integer; the m of a visited vertex add up to k.
    """
    names = table.g.names
    visited = set(table.inputs) | {v for _, v in Q}
    draws: dict[int, dict[int, int]] = {}
    for (u, v), (weight, partial) in sorted(Q.items()):
        if u not in visited:
            raise CheckFailed(f"{where}: Q has the edge {names[u]} -> {names[v]}, but no sampled "
                              f"edge enters {names[u]} and it is not an input; Algorithm 1 skips "
                              f"such vertices (they store nothing)")
        d = table.out_degree[u]
        unit = d / k * partial
        if weight == 0 and unit != 0:
            raise CheckFailed(f"{where}: Q({names[u]}, {names[v]}) = 0; Q holds only the edges "
                              f"drawn at least once, so leave the others out")
        m = weight / unit if unit != 0 else 0.0
        if unit == 0 or m < 0.5 or abs(m - round(m)) > 1e-9 * max(1.0, m):
            raise CheckFailed(f"{where}: Q({names[u]}, {names[v]}) = {_num(weight)}, but a drawn "
                              f"edge carries (number of draws) x d/k x partial, a multiple of "
                              f"{d}/{k} x {_num(partial)} = {_num(unit)} ({names[u]} has "
                              f"out-degree d = {d}, k = {k})")
        draws.setdefault(u, {})[v] = int(round(m))
    for u in sorted(visited):
        if table.out_degree[u] == 0:
            continue
        total = sum(draws.get(u, {}).values())
        if total != k:
            hint = ""
            if total < k:
                hint = (" -- if an edge is drawn twice, its weights must ADD up "
                        "(Q[edge] += ...), not overwrite each other (=)")
            raise CheckFailed(f"{where}: {names[u]} is visited, and its edges in Q add up to "
                              f"{total} draw(s) of weight d/k x partial; a visited vertex draws "
                              f"exactly k = {k} times (with replacement){hint}")
    return draws


@exercise("5.1", "Algorithm 1", takes=("sample_Q",), points=4, minutes=35, seconds=150,
          reference=("minirad.randomized.sampling", "minirad.randomized._batches",
                     "minirad.randomized.experiments"))
def check_sample_Q(fn: Callable, seconds: float = 60.0) -> None:
    """Exercise 5.1: ``fn(g, k, rng)`` runs Algorithm 1 once and returns the sampled edges.

    The result is a dict ``{(u_name, v_name): weight}`` holding only the
    edges drawn at least once, where ``weight`` is (times drawn) x
    ``d_u / k`` x the edge's partial ``dv/du``.  ``rng`` is a
    ``numpy.random.Generator``; every random number must come from it.

    The check, on five (graph, k) cases:

    1. form: only edges out of visited vertices, weights that are whole
       multiples of ``d_u / k * partial``, exactly ``k`` draws per visited
       vertex with successors;
    2. reproducibility: two calls with ``np.random.default_rng(123)`` return
       the same dict, and so do two with ``np.random.default_rng(456)``;
    3. unbiasedness: over 2000 samples drawn with the generator
       ``np.random.default_rng(2021)``, every Jacobian entry of the mean is
       within ``Z_LIMIT = 5`` standard errors of the exact Jacobian (the
       standard error from minirad's exact variance of Algorithm 1, so a
       correct sampler fails with probability below one in a million);
    4. draws with replacement: for ``k >= 2`` the same edge is drawn twice
       about as often as uniform draws with replacement make it happen
       (between 0.6 and 1.4 times the expected number of repeats).

    >>> from minirad.randomized.sampling import sample_paths
    >>> def sample_Q(g, k, rng):
    ...     s = sample_paths(g, k, rng=rng)
    ...     return {(g.names[u], g.names[v]): w for u, v, w in s.graph.edges()}
    >>> check_sample_Q(sample_Q)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checks.CheckFailed: Exercise 5.1 (Algorithm 1), on figure1() with k=1: used \
the reference -- your function called minirad's sample_paths ...
    """
    exercise, topic = "Exercise 5.1", "Algorithm 1"
    total = 0
    for name, build, k, n in _SAMPLING_CASES:
        g = build()
        where = location(exercise, topic, f"{name} with k={k}")
        table = _EdgeTable(g)
        for seed in (123, 456):
            first, again = (_as_sample(call_student(fn, where, g, k, np.random.default_rng(seed),
                                                    seconds=seconds), table, where)
                            for _ in range(2))
            if first != again:
                raise CheckFailed(f"{where}: two calls with np.random.default_rng({seed}) "
                                  f"returned different samples; draw every random number from "
                                  f"the rng argument (e.g. rng.integers(d)), never from "
                                  f"np.random or the random module")
        rng = np.random.default_rng(2021)
        estimates = np.empty((n, len(g.outputs), len(g.inputs)))
        repeats, expected_repeats = 0, 0.0
        with time_limit(seconds, where, " for all the samples of this case; is your "
                                        "function much slower than it needs to be?"):
            for i in range(n):
                raw = call_student(fn, where, g, k, rng)
                Q = _as_sample(raw, table, f"{where} (sample {i + 1})")
                draws = _draw_counts(Q, table, k, f"{where} (sample {i + 1})")
                for u, counts in draws.items():
                    d = table.out_degree[u]
                    if k >= 2 and d >= 2:
                        repeats += sum(m * (m - 1) for m in counts.values())
                        expected_repeats += k * (k - 1) / d
                estimates[i] = table.jacobian(raw)
        exact = table.jacobian(edge_dict(g))
        stderr = np.sqrt(path_sampling_variance(g, k) / n)
        mean = estimates.mean(axis=0)
        allowed = Z_LIMIT * stderr + 1e-9 * max(1.0, float(np.abs(exact).max()))
        bad = np.abs(mean - exact) > allowed
        if bad.any():
            i, j = np.argwhere(bad)[0]
            y, x = g.names[g.outputs[i]], g.names[g.inputs[j]]
            raise CheckFailed(
                f"{where}: over {n} samples your mean estimate of d{y}/d{x} is "
                f"{_num(mean[i, j])} but the exact value is {_num(exact[i, j])}, "
                f"{abs(mean[i, j] - exact[i, j]) / max(stderr[i, j], 1e-300):.1f} standard "
                f"errors away (allowed: {Z_LIMIT:g}); the estimate is biased -- draw each "
                f"successor with probability 1/d and weight each draw by d/k")
        if expected_repeats >= 100 and not 0.6 <= repeats / expected_repeats <= 1.4:
            raise CheckFailed(
                f"{where}: over {n} samples the same edge was drawn twice at one vertex "
                f"{repeats} times (counting pairs of draws), but uniform draws with "
                f"replacement repeat about {expected_repeats:.0f} times; draw the k "
                f"successors independently, with replacement")
        total += n
    passed(exercise, f"Algorithm 1 well formed, reproducible and unbiased on "
                     f"{len(_SAMPLING_CASES)} cases ({total} samples)")


# --------------------------------------------------------------- lab 6: 6.1
def _three_variables(x, y, z):
    return x * y * z + ops.exp(x * z) - y * y


# (name, f, point, rate)
_DESCENT_CASES = [
    ("g(x, y) = y*y + sin(x) at (1, 1), rate 0.2", examples.descent_program, (1.0, 1.0), 0.2),
    ("g(x, y) = y*y + sin(x) at (1.5, -2.4), rate 0.2", examples.descent_program, (1.5, -2.4),
     0.2),
    ("f(x, y) = x*y + sin(x) at (2, 3), rate 0.1", examples.lab_program, (2.0, 3.0), 0.1),
    ("the lecture's ln(x1) + x1*x2 - sin(x2) at (2, 5), rate 0.05", examples.lecture_program,
     (2.0, 5.0), 0.05),
    ("x*y*z + exp(x*z) - y*y at (0.5, -1, 2), rate 0.01", _three_variables, (0.5, -1.0, 2.0),
     0.01),
]


def _gradient(f, point) -> np.ndarray:
    return reverse_sweep(trace(f, *point)).jacobian[0]


def _point(result, n: int, where: str, what: str) -> np.ndarray:
    x = as_numbers(result, where, f"; return {what}")
    if x.shape != (n,):
        raise CheckFailed(f"{where}: your function returned shape {x.shape}; return {what} "
                          f"(shape ({n},))")
    return x


@exercise("6.1", "one gradient-descent step", takes=("descend",), points=1, minutes=10,
          seconds=30)
def check_descent_step(fn: Callable) -> None:
    """Exercise 6.1: ``fn(f, rate, *args)`` returns the point after one gradient-descent step.

    The new point is ``args - rate * grad f(args)``, one float per argument
    of ``f``, with the gradient from minirad (trace, then a reverse sweep).
    Checked on the lab's objective ``g(x, y) = y*y + sin(x)`` (from (1, 1)
    with rate 0.2 the step lands on (0.891939538826372, 0.6)) and on three
    other functions.

    >>> import numpy as np
    >>> from minirad.exact.jacobians import jacobian
    >>> check_descent_step(lambda f, rate, *args:
    ...                    np.array(args) - rate * jacobian(f, *args)[0])
    Exercise 6.1 passed: one descent step agrees with minirad on 5 functions and points
    """
    exercise, topic = "Exercise 6.1", "one descent step"
    for name, f, point, rate in _DESCENT_CASES:
        where = location(exercise, topic, name)
        result = call_student(fn, where, f, rate, *point, seconds=10)
        mine = _point(result, len(point), where, "the new point, one float per argument")
        x = np.array(point)
        grad = _gradient(f, point)
        expected = x - rate * grad
        error = np.abs(mine - expected)
        if np.all(error <= 1e-12 * np.maximum(1.0, np.abs(expected))):
            continue
        hint = ""
        if np.allclose(mine, x + rate * grad, rtol=1e-12, atol=1e-12):
            hint = " -- you stepped uphill: subtract rate * gradient"
        elif np.allclose(mine, x - grad, rtol=1e-12, atol=1e-12):
            hint = " -- you forgot to scale the gradient by the rate"
        elif f is examples.descent_program and point == (1.0, 1.0) and np.allclose(
                mine, (0.891939538826372, 0.8), rtol=1e-12):
            hint = (" -- that is the reverse-mode lab's published step, which loses one of the "
                    "two adjoints of y in y*y; use minirad's gradient (dg/dy = 2y = 2)")
        i = int(np.argmax(error))
        raise CheckFailed(f"{where}: your new point is {mine.tolist()}, expected "
                          f"{expected.tolist()} (coordinate {i} differs){hint}")
    passed(exercise, f"one descent step agrees with minirad on {len(_DESCENT_CASES)} functions "
                     f"and points")


# --------------------------------------------------------------- lab 6: 6.2
def _sgd_reference(f, start, rate, steps, k, seed, batched: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.array(start, dtype=float)
    path = [x.copy()]
    for _ in range(steps):
        g = trace(f, *x)
        if k is None:
            grad = reverse_sweep(g).jacobian[0]
        elif batched:
            grad = sampled_jacobians(g, k, 1, rng=rng)[0, 0]
        else:
            grad = sample_paths(g, k, rng=rng).jacobian[0]
        x = x - rate * grad
        path.append(x.copy())
    return np.array(path)


# (name, f, start, rate, steps, k, seed)
_SGD_CASES = [
    ("g(x, y) = y*y + sin(x) from (1.5, -2.4), exact gradients", examples.descent_program,
     (1.5, -2.4), 0.2, 12, None, 0),
    ("g(x, y) = y*y + sin(x) from (1.5, -2.4), k=1", examples.descent_program, (1.5, -2.4), 0.2,
     12, 1, 0),
    ("line_fit_loss from (0, 0), k=1", line_fit_loss, (0.0, 0.0), 0.3, 15, 1, 1),
    ("line_fit_loss from (2, -1), k=3", line_fit_loss, (2.0, -1.0), 0.2, 15, 3, 2),
    ("x*y*z + exp(x*z) - y*y from (0.5, -1, 2), k=1", _three_variables, (0.5, -1.0, 2.0), 0.01,
     10, 1, 3),
]


@exercise("6.2", "descent with sampled gradients", takes=("sgd",), points=3, minutes=25,
          seconds=60)
def check_sgd(fn: Callable) -> None:
    """Exercise 6.2: ``fn(f, start, rate, steps, k, rng)`` runs ``steps`` steps of descent.

    Returns an array of shape ``(steps + 1, len(start))``: the start, then
    each iterate.  Each step traces ``f`` at the current point and, for an
    int ``k``, uses the Algorithm 1 estimate
    ``sample_paths(trace(f, *x), k, rng=rng).jacobian[0]`` (or, equally,
    ``sampled_jacobians(trace(f, *x), k, 1, rng=rng)[0, 0]``) drawn from the
    ``rng`` passed in; ``k=None`` means the exact gradient.  With the same
    seed the run is then reproducible, and the check compares it iterate by
    iterate (to 1e-9) with minirad's run.

    >>> from minirad.randomized.sampling import sample_paths
    >>> from minirad.exact.sweeps import reverse_sweep
    >>> def sgd(f, start, rate, steps, k, rng):
    ...     x = np.array(start, dtype=float)
    ...     path = [x]
    ...     for _ in range(steps):
    ...         g = trace(f, *x)
    ...         grad = (reverse_sweep(g).jacobian[0] if k is None
    ...                 else sample_paths(g, k, rng=rng).jacobian[0])
    ...         x = x - rate * grad
    ...         path.append(x)
    ...     return np.array(path)
    >>> check_sgd(sgd)
    Exercise 6.2 passed: descent with sampled gradients agrees with minirad on 5 runs
    """
    exercise, topic = "Exercise 6.2", "descent with sampled gradients"
    for name, f, start, rate, steps, k, seed in _SGD_CASES:
        where = location(exercise, topic, f"{name}, rate {rate}, {steps} steps, "
                                        f"rng=np.random.default_rng({seed})")
        handed = np.array(start, dtype=float)
        result = call_student(fn, where, f, handed, rate, steps, k,
                              np.random.default_rng(seed), seconds=30)
        if not np.array_equal(handed, np.array(start)):
            raise CheckFailed(f"{where}: your function changed the start array it was given; "
                              f"work on a copy")
        mine = as_numbers(result, where, "; return an array of the iterates")
        n = len(start)
        if mine.shape != (steps + 1, n):
            hint = ""
            if mine.shape == (steps, n):
                hint = " -- include the start as row 0"
            raise CheckFailed(f"{where}: your function returned shape {mine.shape}; expected "
                              f"({steps + 1}, {n}): the start, then one row per step{hint}")
        candidates = [_sgd_reference(f, start, rate, steps, k, seed, batched)
                      for batched in (False, True)]
        tolerance = lambda ref: 1e-9 * np.maximum(1.0, np.abs(ref))  # noqa: E731
        if any(np.all(np.abs(mine - ref) <= tolerance(ref)) for ref in candidates):
            continue
        reference = candidates[0]
        t = int(np.argmax(np.any(np.abs(mine - reference) > tolerance(reference), axis=1)))
        hint = ""
        exact = _sgd_reference(f, start, rate, steps, None, seed, False)
        if k is not None and np.allclose(mine, exact, rtol=1e-9, atol=1e-12):
            hint = (" -- your run follows the exact gradient; use the Algorithm 1 estimate "
                    "with k draws per vertex")
        elif t == 0:
            hint = " -- row 0 is the start itself"
        elif k is not None:
            hint = (" -- estimate each step's gradient with sample_paths(trace(f, *x), k, "
                    "rng=rng).jacobian[0], drawing from the rng you were given (do not make a "
                    "new one)")
        raise CheckFailed(f"{where}: your iterate {t} is {mine[t].tolist()}, expected "
                          f"{reference[t].tolist()}{hint}")
    passed(exercise, f"descent with sampled gradients agrees with minirad on {len(_SGD_CASES)} "
                     f"runs")
