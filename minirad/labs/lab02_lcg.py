"""Lab 2's exercises: the forward sweep (2.1) and the reverse sweep (2.2).

A check runs the student's function on several inputs (named example
graphs, seeded random DAGs, a few functions and points), compares each
answer with minirad's own, prints one line when everything agrees and
otherwise raises :class:`CheckFailed` saying what differs where.  The
message never shows minirad's code; it names the graph (or function) so
the student can rebuild it, e.g. ``labs.check_graphs()["figure1()"]``.

Building blocks for new checks (labs 4-6 use them too):

* :func:`check_graphs` -- the named graphs checks run on;
* :func:`call_student` -- call the student's function, turning its
  exceptions into a :class:`CheckFailed` naming the graph (a
  ``NotImplementedError`` from an unsolved stub passes through unchanged),
  optionally under a time limit;
* :func:`compare_jacobian` -- shape and entry-by-entry comparison with a
  readable message;
* :func:`passed` -- the success line.

>>> import numpy as np
>>> from minirad import examples
>>> def forward_sweep(g):                 # one tangent column per input
...     tangent = np.zeros((g.n_vertices, len(g.inputs)))
...     tangent[list(g.inputs), range(len(g.inputs))] = 1.0
...     for u, v, partial in g.edges():      # grouped by target, in vertex order
...         tangent[v] += partial * tangent[u]
...     return tangent[list(g.outputs)]
>>> check_forward_sweep(forward_sweep)
Exercise 2.1 passed: forward sweep agrees with minirad on 9 graphs
>>> check_forward_sweep(lambda g: np.zeros(len(g.inputs)))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 2.1 (forward sweep), on figure1(): your function \
returned shape (2,) but the Jacobian has shape (1, 2) (rows: outputs, columns: inputs)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import examples
from ..graph.lcg import LCG
from ..tracing import ops, trace
from .checking import (
    CheckFailed,
    call_student,
    compare_jacobian,
    location,
    one,
    passed,
)
from .exercise import exercise

__all__ = [
    "JACOBIAN_REFERENCE", "MISTAKES", "check_forward_sweep", "check_graphs",
    "check_reverse_sweep",
]


#: what the exercises of this module ask the student to write, in minirad
JACOBIAN_REFERENCE = ("minirad.exact.sweeps", "minirad.exact._engines", "minirad.exact.jacobians",
                      "minirad.exact.paths", "minirad.exact.elimination", "minirad.exact.orders")


# ------------------------------------------------------------ infrastructure
def _copies_graph() -> LCG:
    """An input returned as is and outputs listed out of vertex order."""
    return trace(lambda x, y: (x, x * y, ops.sin(y)), 2.0, 3.0)


_SWEEP_GRAPHS = {
    "figure1()": examples.figure1,
    "lecture()": examples.lecture,
    "lab()": examples.lab,
    "two_outputs()": examples.two_outputs,
    "copies (returns x, x*y, sin(y))": _copies_graph,
    "random_dag(3, 10, 2, rng=0)": lambda: examples.random_dag(3, 10, 2, rng=0),
    "random_dag(2, 25, 3, density=0.2, rng=1)":
        lambda: examples.random_dag(2, 25, 3, density=0.2, rng=1),
    "random_dag(4, 6, 1, density=0.5, rng=2)":
        lambda: examples.random_dag(4, 6, 1, density=0.5, rng=2),
    "interleaved(3, 4, partials='random', rng=0)":
        lambda: examples.interleaved(3, 4, partials="random", rng=0),
}

# Counting adds graphs whose path counts rule out enumeration (4.5e9 and 3^45 ~ 3e21 paths).
_COUNT_GRAPHS = {
    **_SWEEP_GRAPHS,
    "independent_paths(4, 6)": lambda: examples.independent_paths(4, 6),
    "interleaved(2, 10)": lambda: examples.interleaved(2, 10),
    "random_dag(2, 60, 2, density=0.5, rng=4)":
        lambda: examples.random_dag(2, 60, 2, density=0.5, rng=4),
    "interleaved(3, 45)": lambda: examples.interleaved(3, 45),
}

_SUITES = {"sweeps": _SWEEP_GRAPHS, "counts": _COUNT_GRAPHS}


def check_graphs(suite: str = "counts") -> dict[str, LCG]:
    """The graphs a check runs on, by the name its messages use.

    ``suite`` is ``"sweeps"`` (small graphs of every shape: one and several
    outputs, an input returned as is, seeded random DAGs, an interleaved
    graph) or ``"counts"`` (those plus graphs with up to 3^45 paths).

    >>> graphs = check_graphs("sweeps")
    >>> graphs["figure1()"]
    LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
    >>> len(check_graphs("counts")) > len(graphs)
    True
    """
    if suite not in _SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose from {sorted(_SUITES)}")
    return {name: build() for name, build in _SUITES[suite].items()}


# ------------------------------------------------------------ lab 2: sweeps
def overwrite_variants(g: LCG, direction: str, partials=None) -> list[np.ndarray]:
    """What a sweep that overwrites (``=``) instead of adding (``+=``) computes.

    With ``=`` each vertex keeps only one contribution: the last one its loop
    wrote.  Which one that is depends on the order the loop visits the edges
    in, so this returns one Jacobian per natural choice: forward, the first
    or last predecessor in operand order (a loop over ``g.predecessors(v)``
    or ``g.edges()``) or by vertex number (a loop pushing along
    ``g.successors(u)``); reverse, the lowest or highest-numbered successor.
    ``partials`` replaces ``g``'s (all ones: the path counts of Exercise 3.1).
    """
    partials = g.partials if partials is None else np.asarray(partials, dtype=float)
    n = g.n_vertices
    if direction == "forward":
        incoming = [[] for _ in range(n)]  # in operand order: edges are grouped by target
        for e, (u, v) in enumerate(zip(g.sources.tolist(), g.targets.tolist())):
            incoming[v].append((u, partials[e]))
        rules = (lambda edges: edges[-1], lambda edges: edges[0],
                 lambda edges: max(edges, key=lambda edge: edge[0]),
                 lambda edges: min(edges, key=lambda edge: edge[0]))
        variants = []
        for keep in rules:
            tangents = np.zeros((n, len(g.inputs)))
            tangents[list(g.inputs), range(len(g.inputs))] = 1.0
            for v in range(n):
                if incoming[v]:
                    u, d = keep(incoming[v])
                    tangents[v] = d * tangents[u]
            variants.append(tangents[list(g.outputs)])
    else:
        outgoing = [[] for _ in range(n)]
        for e, (u, v) in enumerate(zip(g.sources.tolist(), g.targets.tolist())):
            outgoing[u].append((v, partials[e]))
        variants = []
        for keep in (min, max):
            adjoints = np.zeros((n, len(g.outputs)))
            adjoints[list(g.outputs), range(len(g.outputs))] = 1.0
            for u in reversed(range(n)):
                if outgoing[u]:
                    v, d = keep(outgoing[u], key=lambda edge: edge[0])
                    adjoints[u] = d * adjoints[v]
            variants.append(adjoints[list(g.inputs)].T)
    return variants


def matches_any(result, candidates, rtol: float = 1e-9) -> bool:
    """Whether ``result`` equals one of ``candidates`` (arrays), to ``rtol``."""
    try:
        mine = np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        return False
    for candidate in candidates:
        scale = max(1.0, float(np.max(np.abs(candidate), initial=0.0)))
        if mine.shape == candidate.shape and np.all(np.abs(mine - candidate) <= rtol * scale):
            return True
    return False


OVERWRITE_HINT = {
    "forward": (" -- your answer matches a sweep in which each vertex keeps only one incoming "
                "contribution: a vertex with several incoming edges must ADD their "
                "contributions (tangent[v] += ...), not overwrite them (=)"),
    "reverse": (" -- your answer matches a sweep in which each vertex keeps only one "
                "contribution from its uses: a vertex with several outgoing edges (used "
                "several times) must ADD the adjoints they pass back (adjoint[u] += ...), not "
                "overwrite them (=)"),
    "counts": (" -- your counts match a recurrence in which each vertex keeps only one "
               "predecessor's counts: a vertex with several incoming edges must ADD the counts "
               "of all its predecessors (+=), not overwrite them (=)"),
}


def _check_jacobian_fn(fn, exercise, topic, reference, direction) -> None:
    graphs = check_graphs("sweeps")
    for name, g in graphs.items():
        where = location(exercise, topic, name)
        result = call_student(fn, where, g, seconds=60)
        if isinstance(result, tuple):
            raise CheckFailed(f"{where}: your function returned a tuple; return only the "
                              f"Jacobian, a numpy array of shape (n_outputs, n_inputs)")
        try:
            compare_jacobian(result, reference(g), where)
        except CheckFailed as failure:
            if matches_any(result, overwrite_variants(g, direction)):
                raise CheckFailed(f"{failure}{OVERWRITE_HINT[direction]}") from None
            raise
    passed(exercise, f"{topic} agrees with minirad on {len(graphs)} graphs")


@exercise("2.1", "forward sweep", takes=("forward_sweep",), points=3, minutes=25, seconds=60,
          reference=JACOBIAN_REFERENCE)
def check_forward_sweep(fn: Callable) -> None:
    """Exercise 2.1: ``fn(g)`` returns the Jacobian of LCG ``g`` (shape (n_outputs, n_inputs)).

    Compared with :func:`minirad.exact.sweeps.forward_sweep` on every graph of
    ``check_graphs("sweeps")``.
    """
    from ..exact.sweeps import forward_sweep

    _check_jacobian_fn(fn, "Exercise 2.1", "forward sweep", lambda g: forward_sweep(g).jacobian,
                       "forward")


@exercise("2.2", "reverse sweep", takes=("reverse_sweep",), points=3, minutes=25, seconds=60,
          reference=JACOBIAN_REFERENCE)
def check_reverse_sweep(fn: Callable) -> None:
    """Exercise 2.2: ``fn(g)`` returns the Jacobian of LCG ``g`` by a reverse sweep.

    Same contract and graphs as :func:`check_forward_sweep`, compared with
    :func:`minirad.exact.sweeps.reverse_sweep`.

    >>> def reverse_sweep(g):                 # one adjoint column per output
    ...     adjoint = np.zeros((g.n_vertices, len(g.outputs)))
    ...     adjoint[list(g.outputs), range(len(g.outputs))] = 1.0
    ...     for u, v, partial in reversed(list(g.edges())):
    ...         adjoint[u] += partial * adjoint[v]
    ...     return adjoint[list(g.inputs)].T
    >>> check_reverse_sweep(reverse_sweep)
    Exercise 2.2 passed: reverse sweep agrees with minirad on 9 graphs
    >>> from minirad.exact import sweeps                # minirad's own is not an answer
    >>> check_reverse_sweep(lambda g: sweeps.reverse_sweep(g).jacobian)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 2.2 (reverse sweep), on figure1(): used the \
reference -- your function called minirad's reverse_sweep (minirad.exact.sweeps), ...
    """
    from ..exact.sweeps import reverse_sweep

    _check_jacobian_fn(fn, "Exercise 2.2", "reverse sweep", lambda g: reverse_sweep(g).jacobian,
                       "reverse")


# ------------------------------------------------------- planted mistakes
def planted_forward(g, overwrite=False, transpose=False, dtype=float, unit=False):
    tangent = np.zeros((g.n_vertices, len(g.inputs)), dtype=dtype)
    tangent[list(g.inputs), range(len(g.inputs))] = 1
    for u, v, partial in g.edges():
        term = (1 if unit else partial) * tangent[u]
        tangent[v] = term if overwrite else tangent[v] + term
    result = tangent[list(g.outputs)]
    return result.T if transpose else result


def _reverse(g, overwrite=False, transpose=False):
    adjoint = np.zeros((g.n_vertices, len(g.outputs)))
    adjoint[list(g.outputs), range(len(g.outputs))] = 1.0
    for u, v, partial in reversed(list(g.edges())):
        term = partial * adjoint[v]
        adjoint[u] = term if overwrite else adjoint[u] + term
    result = adjoint[list(g.inputs)].T
    return result.T if transpose else result


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "2.1": [
        ("= where contributions must be added", one(lambda g: planted_forward(g, overwrite=True))),
        ("the transposed Jacobian", one(lambda g: planted_forward(g, transpose=True))),
    ],
    "2.2": [
        ("= where contributions must be added", one(lambda g: _reverse(g, overwrite=True))),
        ("the transposed Jacobian", one(lambda g: _reverse(g, transpose=True))),
    ],
}
