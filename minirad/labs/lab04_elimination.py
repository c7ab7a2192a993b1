"""Lab 4's exercises: vertex elimination (4.1), the Markowitz order (4.2), column colouring
(4.3) and edge elimination (4.4).

Students work on plain dicts where a graph's edges are needed:
:func:`edge_dict` turns an LCG into ``{(u_name, v_name): partial}``, and
:func:`sample_jacobian` runs reverse accumulation on such a dict (a sampled
graph ``Q`` from Exercise 5.1).  The elimination exercises hand the student
one step at a time, along whole walks (every intermediate of a graph in some
order), so that fill-in edges made by one step meet the later ones; the
grader computes each step's input beforehand and sends it as an edge dict.

>>> from minirad import examples
>>> edges = edge_dict(examples.lab())
>>> edges[("x", "v2")], len(edges)
(3.0, 5)
>>> check_markowitz_order(lambda g: [g.names[v] for v in g.intermediates])
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 4.2 (Markowitz order), on figure1(): your order is \
['v2', 'v3', 'v4', 'v5']; step 1 eliminates v2, whose Markowitz degree is 1 x 2 = 2, but v3 \
has degree 1 x 1 = 1
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..exact.elimination import (
    FRONT,
    eliminate,
    eliminate_vertex,
    elimination_order,
    vertex_order_as_edges,
)
from ..exact.sparsity import colour_columns
from ..graph.lcg import LCG
from .checking import CheckFailed, build_graph, call_student, one, type_name
from .exercise import exercise
from .lab02_lcg import random_graphs

__all__ = [
    "ELIMINATION_REFERENCE", "EdgeTable", "MISTAKES", "as_edge_dict", "check_column_colouring",
    "check_eliminate_edge", "check_eliminate_vertex", "check_markowitz_order",
    "colouring_patterns", "edge_dict", "sample_jacobian",
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


class EdgeTable:
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
    return EdgeTable(g).jacobian(Q)


# --------------------------------------------------------------- lab 4: 4.1
_WALKS = [  # (name, graph, order)
    ("figure1()", ["figure1", [], {}], "forward"),
    ("figure1()", ["figure1", [], {}], "reverse"),
    ("lecture()", ["lecture", [], {}], "markowitz"),
    ("lab()", ["lab", [], {}], "forward"),
    ("two_outputs()", ["two_outputs", [], {}], "forward"),
    ("random_dag(3, 10, 2, rng=0)", ["random_dag", [3, 10, 2], {"rng": 0}], "markowitz"),
    ("interleaved(3, 3, partials='random', rng=0)",
     ["interleaved", [3, 3], {"partials": "random", "rng": 0}], "reverse"),
]


def _vertex_walks(rng) -> list[dict]:
    """The published cases are whole walks: the graph, the order, and each step's input
    (the edge dict before the step, computed here with minirad, so the kernel needs none
    of it).  A hidden case is one step from a random point of a walk: a later step's input
    would show an earlier step's answer, so a case never holds two steps of one walk."""
    if rng is None:
        walks = _WALKS
    else:
        graphs = random_graphs(rng)
        walks = [(*graphs[i], order) for i, order in (
            (0, "forward"), (0, "reverse"), (1, "markowitz"), (2, "forward"), (3, "forward"),
            (5, "markowitz"), (6, "reverse"), (7, "forward"), (8, "reverse"), (8, "markowitz"))]
    cases = []
    for name, spec, order in walks:
        g, steps = build_graph(spec), []
        for v in elimination_order(g, order):
            steps.append({"v": v, "edges": edge_dict(g)})
            g = eliminate_vertex(g, v)
        prefix = []
        if rng is not None and len(steps) > 1:   # one step, after a random prefix of the walk
            j = int(rng.integers(len(steps) - 1)) + 1 if len(steps) > 2 else 1
            prefix, steps = [s["v"] for s in steps[:j]], steps[j:j + 1]
        cases.append({"name": name, "graph": spec, "order": order, "prefix": prefix,
                      "steps": steps})
    return cases


def _step_where(where: str, done: list[str], step: str) -> str:
    """``"..., on figure1() after eliminating v2, v3, eliminating v4"``."""
    after = f" after {', '.join(done)}" if done else ""
    return f"{where}{after}, {step}"


def _eliminated(done: list[str]) -> list[str]:
    """``["eliminating v2, v3"]``, as a walk's messages say what came before."""
    return [f"eliminating {', '.join(done)}"] if done else []


def _probe_walk(fns, case, where):
    answers, done = [], list(case["prefix"])
    for step in case["steps"]:
        handed = dict(step["edges"])
        result = call_student(fns[0], _step_where(where, _eliminated(done),
                                                  f"eliminating {step['v']}"),
                              handed, step["v"], seconds=10)
        answers.append({"result": result, "changed": handed != step["edges"]})
        done.append(step["v"])
    return answers


def _answers(answer, n: int, where: str) -> list:
    """The per-step answers of a walk, as the probe packed them."""
    if not (isinstance(answer, list) and len(answer) == n and all(
            isinstance(a, dict) and set(a) == {"result", "changed"} for a in answer)):
        raise CheckFailed(f"{where}: the grader could not read your answers to the steps of "
                          f"this walk")
    return answer


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
          seconds=60, reference=ELIMINATION_REFERENCE, cases=_vertex_walks, probe=_probe_walk,
          passed="eliminate_vertex agrees with minirad along {n} walks")
def check_eliminate_vertex(case, answer, where) -> None:
    """Exercise 4.1: ``fn(edges, v)`` eliminates intermediate ``v`` from an edge dict.

    ``edges`` is ``{(u, w): dw/du}`` keyed by vertex names (see
    :func:`edge_dict`); ``fn`` returns a new dict of the same kind for the
    graph without ``v``, and must leave ``edges`` unchanged.  Compared,
    step by step, with :func:`minirad.exact.elimination.eliminate_vertex` while
    eliminating every intermediate of several graphs in different orders,
    so that fill-in edges created by one step meet later steps.

    >>> from minirad.exact.elimination import eliminate_vertex
    >>> def eliminate_one(edges, v):
    ...     g = LCG.from_edges([(a, b, d) for (a, b), d in edges.items()], [], [])
    ...     return edge_dict(eliminate_vertex(g, v))
    >>> check_eliminate_vertex(eliminate_one)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 4.1 (eliminate one vertex), on figure1(), \
eliminating v2: used the reference -- your function called minirad's eliminate_vertex ...
    """
    g, done = build_graph(case["graph"]), list(case["prefix"])
    for v in done:
        g = eliminate_vertex(g, v)
    for step, got in zip(case["steps"], _answers(answer, len(case["steps"]), where)):
        v, given = step["v"], step["edges"]
        at = _step_where(where, _eliminated(done), f"eliminating {v}")
        if got["changed"]:
            raise CheckFailed(f"{at}: your function changed the dict it was given; "
                              f"build and return a new dict instead (start from a copy)")
        mine = as_edge_dict(got["result"], at)
        g = eliminate_vertex(g, v)
        expected = edge_dict(g)
        stale = sorted(k for k in mine if v in k)
        if stale:
            raise CheckFailed(f"{at}: your result still has the edge {stale[0][0]} -> "
                              f"{stale[0][1]}; once {v} is eliminated no edge may touch it")
        missing = [k for k in expected if k not in mine]
        if missing:
            p, s = missing[0]
            kind = ("a new edge" if (p, s) not in given else "an edge that was already there")
            raise CheckFailed(f"{at}: your result has no edge {p} -> {s} ({kind}); every "
                              f"path {p} -> {v} -> {s} must become an edge {p} -> {s}")
        extra = [k for k in mine if k not in expected]
        if extra:
            raise CheckFailed(f"{at}: your result has an edge {extra[0][0]} -> "
                              f"{extra[0][1]} that should not be there")
        for key, value in expected.items():
            if abs(mine[key] - value) > 1e-12 * max(1.0, abs(value)):
                raise CheckFailed(f"{at}: your partial on {key[0]} -> {key[1]} is "
                                  f"{_num(mine[key])}, expected {_num(value)}"
                                  f"{_eliminate_hint(given, v, key, mine[key])}")
        done.append(v)


# --------------------------------------------------------------- lab 4: 4.2
_MARKOWITZ_GRAPHS = [
    ("figure1()", ["figure1", [], {}]),
    ("lecture()", ["lecture", [], {}]),
    ("lab()", ["lab", [], {}]),
    ("two_outputs()", ["two_outputs", [], {}]),
    ("independent_paths(3, 3)", ["independent_paths", [3, 3], {}]),
    ("interleaved(3, 3)", ["interleaved", [3, 3], {}]),
    ("random_dag(3, 10, 2, rng=0)", ["random_dag", [3, 10, 2], {"rng": 0}]),
    ("random_dag(2, 12, 2, density=0.4, rng=5)",
     ["random_dag", [2, 12, 2], {"density": 0.4, "rng": 5}]),
    ("random_dag(4, 20, 3, density=0.25, rng=7)",
     ["random_dag", [4, 20, 3], {"density": 0.25, "rng": 7}]),
    ("random_dag(1, 30, 1, density=0.15, rng=11)",
     ["random_dag", [1, 30, 1], {"density": 0.15, "rng": 11}]),
]


def _markowitz_cases(rng) -> list[dict]:
    if rng is None:
        graphs = _MARKOWITZ_GRAPHS
    else:
        graphs = random_graphs(rng)[:4]
        for n_in, n_mid, n_out, density in ((3, 10, 2, 0.3), (2, 12, 2, 0.4), (4, 20, 3, 0.25),
                                            (1, 30, 1, 0.15), (2, 16, 2, 0.3), (3, 24, 2, 0.2)):
            s = int(rng.integers(2 ** 31))
            graphs.append((f"random_dag({n_in}, {n_mid}, {n_out}, density={density}, rng={s})",
                           ["random_dag", [n_in, n_mid, n_out], {"density": density, "rng": s}]))
    return [{"name": name, "graph": spec} for name, spec in graphs]


def _probe_order(fns, case, where):
    return call_student(fns[0], where, build_graph(case["graph"]), seconds=20)


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

    def eliminate(self, v: int, fill: bool = True) -> None:
        for s in self.succ[v]:
            self.pred[s].discard(v)
            if fill:
                self.pred[s] |= self.pred[v]
        for p in self.pred[v]:
            self.succ[p].discard(v)
            if fill:
                self.succ[p] |= self.succ[v]
        del self.pred[v], self.succ[v]


def _greedy(g: LCG, key, fill: bool = True) -> list[str]:
    """A dynamic greedy order: the least ``key(pred, succ, v)`` first (``fill=False``: an
    eliminated vertex leaves its neighbours' sets, but no fill-in joins them)."""
    work, left, order = _Structure(g), set(g.intermediates), []
    while left:
        v = min(left, key=lambda u: key(*work.degree(u), u))
        order.append(g.names[v])
        work.eliminate(v, fill)
        left.discard(v)
    return order


def _markowitz_hint(g: LCG, mine: list[str]) -> str:
    """Name a common slip when the student's order is exactly what that slip gives."""
    static = {v: len(g.predecessors(v)) * len(g.successors(v)) for v in g.intermediates}
    slips = [
        ([g.names[v] for v in sorted(static, key=lambda v: (static[v], v))],
         " -- it is the order of the degrees on the original graph: the degrees must come "
         "from the graph left by the earlier eliminations, so after each one update its "
         "neighbours (its predecessors become predecessors of its successors, and it leaves "
         "their sets) and recompute their degrees"),
        (_greedy(g, lambda p, s, v: (p * s, -v)),
         " -- ties go to the lowest vertex number (the earliest in g.names), not the highest"),
        (_greedy(g, lambda p, s, v: (p + s, v)),
         " -- the Markowitz degree is |pred| * |succ| (the multiplications the step costs), "
         "not |pred| + |succ|"),
        (_greedy(g, lambda p, s, v: (p * s, v), fill=False),
         " -- after eliminating a vertex you take it out of its neighbours' sets but do not "
         "join its predecessors to its successors: the fill-in edges p -> s count in their "
         "degrees too"),
    ]
    for order, text in slips:
        if mine == order:
            return text
    return ""


@exercise("4.2", "Markowitz order", takes=("markowitz_order",), points=3, minutes=25,
          seconds=60, reference=ELIMINATION_REFERENCE, cases=_markowitz_cases,
          probe=_probe_order, passed="Markowitz order agrees with minirad on {n} graphs")
def check_markowitz_order(case, answer, where) -> None:
    """Exercise 4.2: ``fn(g)`` returns the Markowitz elimination order of ``g``, as names.

    The rule: repeatedly eliminate the intermediate whose current Markowitz
    degree ``|pred(v)| * |succ(v)|`` (on the graph left by the earlier
    eliminations) is least; among equal degrees take the lowest vertex
    number (the earliest in ``g.names``).  Compared with
    ``minirad.exact.elimination.elimination_order(g, "markowitz")``; the message
    names the first step that differs.
    """
    g = build_graph(case["graph"])
    if not isinstance(answer, (list, tuple, np.ndarray)):
        raise CheckFailed(f"{where}: your function returned {type_name(answer)}; "
                          f"return a list of vertex names")
    mine = list(answer)
    if mine and not all(isinstance(x, str) for x in mine):
        bad = next(x for x in mine if not isinstance(x, str))
        hint = " (g.names[v] turns a number into its name)" if isinstance(
            bad, (int, np.integer)) else ""
        raise CheckFailed(f"{where}: your order contains {bad!r:.40}; return vertex names "
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
        return
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


# ----------------------------------------------------------- 4.3: colouring
def colouring_patterns() -> dict[str, np.ndarray]:
    """The patterns :func:`check_column_colouring` runs on, by name.

    >>> list(colouring_patterns())[:2]
    ['tridiagonal(6)', 'pentadiagonal(6)']
    """
    n = 6
    i, j = np.indices((n, n))
    rng = np.random.default_rng(43)
    random = rng.random((7, 9)) < 0.3
    return {
        "tridiagonal(6)": abs(i - j) <= 1,
        "pentadiagonal(6)": abs(i - j) <= 2,
        "arrow, dense row (5)": ((i == j) | (i == 0))[:5, :5],
        "arrow, dense column (5)": ((i == j) | (j == 0))[:5, :5],
        "block diagonal (3 x 2)": i // 2 == j // 2,
        "random 7 x 9 (seed 43)": random,
    }


def _colouring_cases(rng) -> list[dict]:
    if rng is None:
        return [{"name": name, "P": P} for name, P in colouring_patterns().items()]
    cases = []
    for band in (1, 2):
        n = int(rng.integers(5, 10))
        i, j = np.indices((n, n))
        cases.append({"name": f"a band of half-width {band}, {n} x {n}", "P": abs(i - j) <= band})
    n = int(rng.integers(4, 8))
    i, j = np.indices((n, n))
    cases.append({"name": f"arrow, dense row ({n})", "P": (i == j) | (i == 0)})
    cases.append({"name": f"arrow, dense column ({n})", "P": (i == j) | (j == 0)})
    size, blocks = int(rng.integers(2, 4)), int(rng.integers(2, 4))
    i, j = np.indices((size * blocks, size * blocks))
    cases.append({"name": f"block diagonal ({blocks} x {size})", "P": i // size == j // size})
    for _ in range(2):
        rows, cols = (int(x) for x in rng.integers(5, 10, 2))
        density = round(float(rng.uniform(0.2, 0.4)), 2)
        cases.append({"name": f"a random {rows} x {cols} pattern of density {density}",
                      "P": rng.random((rows, cols)) < density})
    return cases


def _probe_colouring(fns, case, where):
    return call_student(fns[0], where, case["P"].copy())


def _colours(result, n: int, where: str) -> list[int]:
    try:
        colours = [int(c) for c in result]
        if any(c != float(r) for c, r in zip(colours, result)):
            raise ValueError
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: return a list of integer colours, one per column; got "
                          f"{result!r:.80}") from None
    if len(colours) != n:
        raise CheckFailed(f"{where}: the pattern has {n} columns but you returned "
                          f"{len(colours)} colours (one per column, not per row?)")
    if min(colours, default=0) < 0:
        raise CheckFailed(f"{where}: colours are numbered 0, 1, 2, ...; got {min(colours)}")
    return colours


@exercise("4.3", "colour the columns of a pattern", takes=("colour_columns",), points=2,
          minutes=20, seconds=60, reference=("minirad.exact.sparsity", "minirad.exact.compressed"),
          topic="column colouring", cases=_colouring_cases, probe=_probe_colouring,
          passed="column colouring valid and compact on {n} patterns")
def check_column_colouring(case, answer, where) -> None:
    """Exercise 4.3: ``fn(P)`` returns one colour per column of the Boolean pattern
    ``P`` (rows: outputs, columns: inputs) such that no row holds two columns of
    the same colour, using no more colours than greedy colouring does (in
    column order or largest-first order, whichever needs more)."""
    P = case["P"]
    colours = _colours(answer, P.shape[1], where)
    for row in range(P.shape[0]):
        seen: dict[int, int] = {}
        for col in np.flatnonzero(P[row]).tolist():
            c = colours[col]
            if c in seen:
                raise CheckFailed(
                    f"{where}: columns {seen[c]} and {col} both have colour {c} but both "
                    f"are nonzero in row {row}: one forward sweep seeded with both would "
                    f"add their entries in that row")
            seen[c] = col
    # what greedy colouring reaches, in column order and largest-first order
    bound = max(colour_columns(P, "natural").n_colours,
                colour_columns(P, "largest_first").n_colours)
    used = len(set(colours))
    if used > bound:
        raise CheckFailed(
            f"{where}: your colouring is valid but uses {used} colours; greedy colouring "
            f"(take the columns in order, give each the smallest colour that no column "
            f"sharing a row with it has) needs only {bound}")


# --------------------------------------------------------------- lab 4: 4.4
_EDGE_WALKS = [  # (name, graph, how its sequence is made)
    ("figure1()", ["figure1", [], {}], ("forward", "front")),
    ("figure1()", ["figure1", [], {}], ("reverse", "back")),
    ("edge_beats_vertex()", ["edge_beats_vertex", [], {}], "optimal"),
    ("two_outputs()", ["two_outputs", [], {}], "markowitz"),
    ("lab()", ["lab", [], {}], [["v3", "f", "back"], ["x", "v2", "front"], ["y", "v2", "front"]]),
    ("random_dag(3, 6, 2, rng=0)", ["random_dag", [3, 6, 2], {"rng": 0}], "markowitz"),
]


def _sequence(g: LCG, how) -> list:
    if isinstance(how, tuple):
        return [list(step) for step in vertex_order_as_edges(g, *how)]
    if isinstance(how, str):
        return [list(step) for step in elimination_order(g, how, on="edges")]
    return how


def _edge_walks(rng) -> list[dict]:
    """Front only, back only and mixed sequences; each step's input computed here.  As in
    Exercise 4.1, a hidden case is one step from a random point of a sequence."""
    if rng is None:
        walks = _EDGE_WALKS
    else:
        graphs = random_graphs(rng)
        s = int(rng.integers(2 ** 31))
        walks = [(*graphs[0], ("forward", "front")), (*graphs[0], ("reverse", "back")),
                 ("edge_beats_vertex()", ["edge_beats_vertex", [], {}], "markowitz"),
                 (*graphs[3], "markowitz"), (*graphs[2], ("reverse", "back")),
                 (*graphs[1], ("forward", "front")), (*graphs[5], "markowitz"),
                 (f"random_dag(3, 6, 2, rng={s})", ["random_dag", [3, 6, 2], {"rng": s}],
                  "markowitz")]
    cases = []
    for name, spec, how in walks:
        g = build_graph(spec)
        steps = []
        for i, j, direction in _sequence(g, how):
            steps.append({"step": [i, j, direction], "edges": edge_dict(g)})
            g = eliminate(g, [(i, j, direction)], on="edges").graph
        prefix = []
        if rng is not None and len(steps) > 1:
            j = int(rng.integers(len(steps)))
            prefix, steps = [s["step"] for s in steps[:j]], steps[j:j + 1]
        cases.append({"name": name, "graph": spec, "prefix": prefix, "steps": steps})
    return cases


def _edge_step_name(step) -> str:
    i, j, direction = step
    return f"{direction}-eliminating {i} -> {j}"


def _done_steps(prefix) -> list[str]:
    return ["{2} {0} -> {1}".format(*step) for step in prefix]


def _probe_edge_walk(fns, case, where):
    answers, done = [], _done_steps(case["prefix"])
    for step in case["steps"]:
        handed = dict(step["edges"])
        result = call_student(fns[0], _step_where(where, done, _edge_step_name(step["step"])),
                              handed, *step["step"], seconds=10)
        answers.append({"result": result, "changed": handed != step["edges"]})
        done.append("{2} {0} -> {1}".format(*step["step"]))
    return answers


def _compare(mine: dict, expected: dict, given: dict, step, where: str) -> None:
    i, j, direction = step
    end = j if direction == FRONT else i
    other = "back" if direction == FRONT else "front"
    swapped = _edge_step()(given, i, j, other)
    if mine != expected and set(mine) == set(swapped) and all(
            abs(mine[k] - swapped[k]) <= 1e-12 * max(1.0, abs(swapped[k])) for k in mine):
        rule = ("front elimination of i -> j joins i to every successor k of j "
                "(i -> k += dk/dj * dj/di)" if direction == FRONT else
                "back elimination of i -> j joins every predecessor h of i to j "
                "(h -> j += dj/di * di/dh)")
        raise CheckFailed(f"{where}: your result is what {other}-eliminating {i} -> {j} gives; "
                          f"front and back are swapped -- {rule}")
    if (i, j) in mine:
        raise CheckFailed(f"{where}: your result still has the edge {i} -> {j}; the eliminated "
                          f"edge must go")
    for u, w in mine:
        if (u, w) not in expected:
            if end in (u, w):
                side = "in-edge" if direction == FRONT else "out-edge"
                raise CheckFailed(f"{where}: your result still has the edge {u} -> {w}, but "
                                  f"{end} has no {side} left: it lies on no input-output path "
                                  f"any more, so it goes with its other edges")
            raise CheckFailed(f"{where}: your result has an edge {u} -> {w} that should not be "
                              f"there")
    for (u, w), value in expected.items():
        if (u, w) not in mine:
            raise CheckFailed(f"{where}: your result has no edge {u} -> {w}; every path through "
                              f"{i} -> {j} must be joined over an edge {u} -> {w}")
        if abs(mine[u, w] - value) > 1e-12 * max(1.0, abs(value)):
            hint = ""
            if (u, w) in given and abs(mine[u, w] - (value - given[u, w])) <= 1e-12 * max(
                    1.0, abs(value)):
                hint = (f" -- that is the product alone, but {u} -> {w} already carried "
                        f"{given[u, w]:.10g}: parallel paths add up, so add the product to it")
            raise CheckFailed(f"{where}: your partial on {u} -> {w} is {mine[u, w]:.10g}, "
                              f"expected {value:.10g}{hint}")


@exercise("4.4", "eliminate one edge", takes=("eliminate_edge",), points=3, minutes=30,
          seconds=60, reference=("minirad.exact.elimination", "minirad.exact.dual",
                                 "minirad.exact.orders"),
          cases=_edge_walks, probe=_probe_edge_walk,
          passed="edge elimination agrees with minirad along {n} sequences")
def check_eliminate_edge(case, answer, where) -> None:
    """Exercise 4.4: ``fn(edges, i, j, direction)`` eliminates the edge ``i -> j`` from
    an edge dict, by front (``"front"``) or back (``"back"``) elimination.

    Only steps the definitions allow are asked for (``j`` an intermediate
    for front, ``i`` for back).  ``fn`` returns a new dict for the graph
    after the step and must leave ``edges`` unchanged.  Compared step by step with
    minirad along front-only, back-only and mixed sequences.
    """
    g, done = build_graph(case["graph"]), _done_steps(case["prefix"])
    if case["prefix"]:
        g = eliminate(g, [tuple(step) for step in case["prefix"]], on="edges").graph
    for step, got in zip(case["steps"], _answers(answer, len(case["steps"]), where)):
        i, j, direction = step["step"]
        at = _step_where(where, done, _edge_step_name(step["step"]))
        if got["changed"]:
            raise CheckFailed(f"{at}: your function changed the dict it was given; "
                              f"build and return a new dict instead (start from a copy)")
        g = eliminate(g, [(i, j, direction)], on="edges").graph
        mine = as_edge_dict(got["result"], at, after="the step")
        _compare(mine, edge_dict(g), step["edges"], (i, j, direction), at)
        done.append(f"{direction} {i} -> {j}")


# ------------------------------------------------------- planted mistakes
def _eliminate(edges, v, combine=lambda old, new: old + new, product=lambda a, b: a * b):
    new = {edge: d for edge, d in edges.items() if v not in edge}
    for (p, w), d_pv in edges.items():
        if w != v:
            continue
        for (w2, s), d_vs in edges.items():
            if w2 == v:
                new[p, s] = combine(new.get((p, s), 0.0), product(d_vs, d_pv))
    return new


def _greedy_order(key):
    def order(g):
        pred = {v: set(g.predecessors(v)) for v in range(g.n_vertices)}
        succ = {v: set(g.successors(v)) for v in range(g.n_vertices)}
        left, result = set(g.intermediates), []
        while left:
            v = min(left, key=lambda u: key(len(pred[u]), len(succ[u]), u))
            for s in succ[v]:
                pred[s] = (pred[s] - {v}) | pred[v]
            for p in pred[v]:
                succ[p] = (succ[p] - {v}) | succ[v]
            left.remove(v)
            result.append(g.names[v])
        return result
    return order


def _stale_neighbours(g):
    """Degrees recomputed after every step, but on neighbour sets never updated."""
    pred = {v: set(g.predecessors(v)) for v in range(g.n_vertices)}
    succ = {v: set(g.successors(v)) for v in range(g.n_vertices)}
    left, result = set(g.intermediates), []
    while left:
        v = min(left, key=lambda u: (len(pred[u]) * len(succ[u]), u))
        left.remove(v)
        result.append(g.names[v])
    return result


def _static_order(g):
    degree = {v: len(g.predecessors(v)) * len(g.successors(v)) for v in g.intermediates}
    return [g.names[v] for v in sorted(degree, key=lambda v: (degree[v], v))]


def _edge_step(add: bool = True, prune: bool = True, swap: bool = False):
    """Exercise 4.4's edge step, right by default; with the product replacing an existing
    partial (``add=False``), a vertex nothing reaches kept (``prune=False``), or front and
    back swapped (``swap=True``)."""
    def eliminate_edge(edges, i, j, direction):
        new = dict(edges)
        c_ji = new.pop((i, j))
        front = (direction == "front") != swap
        for (a, b), c in edges.items():
            if (a == j) if front else (b == i):
                key = (i, b) if front else (a, j)
                new[key] = (new.get(key, 0.0) if add else 0.0) + c * c_ji
        end = j if front else i
        if prune and not any((b if front else a) == end for a, b in new):
            new = {(a, b): c for (a, b), c in new.items() if end not in (a, b)}
        return new
    return eliminate_edge


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "4.1": [
        ("a sum of the partials instead of their product",
         one(lambda edges, v: _eliminate(edges, v, product=lambda a, b: a + b))),
        ("a parallel edge overwritten instead of added to",
         one(lambda edges, v: _eliminate(edges, v, combine=lambda old, new: new))),
    ],
    "4.2": [
        ("degrees computed once, on the original graph", one(_static_order)),
        ("neighbours not updated after a step (degrees recomputed on the original sets)",
         one(_stale_neighbours)),
        ("ties to the highest vertex number", one(_greedy_order(lambda p, s, v: (p * s, -v)))),
        ("|pred| + |succ| instead of the product",
         one(_greedy_order(lambda p, s, v: (p + s, v)))),
    ],
    "4.3": [
        ("one colour for every column", one(lambda P: [0] * P.shape[1])),
        ("a colour per column: valid but wasteful", one(lambda P: list(range(P.shape[1])))),
    ],
    "4.4": [
        ("the product replaces the partial already on the edge", one(_edge_step(add=False))),
        ("a vertex nothing reaches kept", one(_edge_step(prune=False))),
        ("front and back swapped", one(_edge_step(swap=True))),
    ],
}
