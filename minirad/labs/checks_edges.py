"""Exercise check for lab 4's edge elimination section (Exercise 4.4).

Same contract as :mod:`minirad.labs.checks`: the check runs the student's
function on several inputs, compares each answer with minirad's own
(:func:`minirad.exact.elimination.eliminate` with ``on="edges"``), prints one line
when everything agrees and otherwise raises
:class:`~minirad.labs.checks.CheckFailed` naming the graph, the steps
already taken and what differs.  Graphs are plain dicts
``{(u_name, v_name): partial}``, as in Exercise 4.1
(:func:`minirad.labs.checks_more.edge_dict`).

>>> def by_hand(edges, i, j, direction):
...     new = dict(edges)
...     c_ji = new.pop((i, j))
...     if direction == "front":              # i joins every successor k of j
...         for (a, k), c_kj in edges.items():
...             if a == j:
...                 new[i, k] = new.get((i, k), 0.0) + c_kj * c_ji
...         if not any(b == j for _, b in new):   # nothing reaches j: it goes
...             new = {(a, b): c for (a, b), c in new.items() if a != j}
...     else:                                 # every predecessor h of i joins j
...         for (h, b), c_ih in edges.items():
...             if b == i:
...                 new[h, j] = new.get((h, j), 0.0) + c_ji * c_ih
...         if not any(a == i for a, _ in new):   # i reaches nothing: it goes
...             new = {(a, b): c for (a, b), c in new.items() if b != i}
...     return new
>>> check_eliminate_edge(by_hand)
Exercise 4.4 passed: edge elimination agrees with minirad in 34 steps, 6 sequences on 5 graphs
>>> def keeps_the_edge(edges, i, j, direction):
...     return dict(edges)
>>> check_eliminate_edge(keeps_the_edge)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
minirad.labs.checks.CheckFailed: Exercise 4.4 (eliminate one edge), on figure1(), \
front-eliminating x1 -> v2: your result still has the edge x1 -> v2; the eliminated edge must go
"""

from __future__ import annotations

from collections.abc import Callable

from .. import examples
from ..exact.elimination import FRONT, eliminate, elimination_order, vertex_order_as_edges
from ..graph.lcg import LCG
from .checks import CheckFailed, call_student, location, passed
from .checks_more import as_edge_dict, edge_dict
from .exercise import exercise

__all__ = ["check_eliminate_edge"]


def _walks() -> list[tuple[str, LCG, tuple]]:
    """(name, graph, edge sequence): front only, back only, and mixed sequences."""
    figure1, beats = examples.figure1(), examples.edge_beats_vertex()
    two, lab = examples.two_outputs(), examples.lab()
    random = examples.random_dag(3, 6, 2, rng=0)
    return [
        ("figure1()", figure1, vertex_order_as_edges(figure1, "forward", "front")),
        ("figure1()", figure1, vertex_order_as_edges(figure1, "reverse", "back")),
        ("edge_beats_vertex()", beats, elimination_order(beats, "optimal", on="edges")),
        ("two_outputs()", two, elimination_order(two, "markowitz", on="edges")),
        ("lab()", lab, (("v3", "f", "back"), ("x", "v2", "front"), ("y", "v2", "front"))),
        ("random_dag(3, 6, 2, rng=0)", random, elimination_order(random, "markowitz",
                                                                 on="edges")),
    ]


def _compare(mine: dict, expected: dict, given: dict, step, where: str) -> None:
    i, j, direction = step
    end = j if direction == FRONT else i
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
                                 "minirad.exact.orders"))
def check_eliminate_edge(fn: Callable) -> None:
    """Exercise 4.4: ``fn(edges, i, j, direction)`` eliminates the edge ``i -> j`` from
    an edge dict, by front (``"front"``) or back (``"back"``) elimination.

    Only steps the definitions allow are asked for (``j`` an intermediate
    for front, ``i`` for back).  ``fn`` returns a new dict for the graph
    after the step and must leave ``edges`` unchanged.  Compared step by step with
    minirad along front-only, back-only and mixed sequences on five graphs.
    """
    exercise, topic = "Exercise 4.4", "eliminate one edge"
    steps = 0
    walks = _walks()
    for name, g, sequence in walks:
        done: list[str] = []
        for i, j, direction in sequence:
            label = name if not done else f"{name} after {', '.join(done)}"
            where = location(exercise, topic, f"{label}, {direction}-eliminating {i} -> {j}")
            given = edge_dict(g)
            handed = dict(given)
            result = call_student(fn, where, handed, i, j, direction, seconds=10)
            if handed != given:
                raise CheckFailed(f"{where}: your function changed the dict it was given; "
                                  f"build and return a new dict instead (start from a copy)")
            g = eliminate(g, [(i, j, direction)], on="edges").graph
            mine = as_edge_dict(result, where, after="the step")
            _compare(mine, edge_dict(g), given, (i, j, direction), where)
            done.append(f"{direction} {i} -> {j}")
            steps += 1
    passed(exercise, f"edge elimination agrees with minirad in {steps} steps, {len(walks)} "
                     f"sequences on {len({name for name, _, _ in walks})} graphs")
