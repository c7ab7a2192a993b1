"""Lab 2's exercises: the forward sweep (2.1) and the reverse sweep (2.2).

Each check runs the student's function on graphs of every shape: one and
several outputs, an input returned as is, seeded random DAGs, an
interleaved graph.  A case names its graph as an expression the student can
rebuild (``random_dag(3, 10, 2, rng=0)``); the published graphs are
:func:`check_graphs`, the hidden ones are drawn from the same shapes at
random points, sizes and seeds (:func:`random_graphs`).

>>> import numpy as np
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

import numpy as np

from ..graph.lcg import LCG
from .checking import CheckFailed, build_graph, call_student, compare_jacobian, one
from .exercise import exercise

__all__ = [
    "JACOBIAN_REFERENCE", "MISTAKES", "OVERWRITE_HINT", "check_forward_sweep", "check_graphs",
    "check_reverse_sweep", "graph_cases", "matches_any", "overwrite_variants", "planted_forward",
    "random_graphs",
]

#: what the exercises of labs 2 and 3 ask the student to write, in minirad
# the sweeps' recurrences in graph/labels.py too: a fresh copy of exact/sweeps.py runs them
JACOBIAN_REFERENCE = ("minirad.exact.sweeps", "minirad.exact._engines", "minirad.exact.jacobians",
                      "minirad.exact.paths", "minirad.exact.elimination", "minirad.exact.orders",
                      "minirad.graph.labels:forward", "minirad.graph.labels:reverse")

# (the name a message uses, [builder, args, kwargs] for checking.build_graph)
_SWEEP_GRAPHS = [
    ("figure1()", ["figure1", [], {}]),
    ("lecture()", ["lecture", [], {}]),
    ("lab()", ["lab", [], {}]),
    ("two_outputs()", ["two_outputs", [], {}]),
    ("copies (returns x, x*y, sin(y))", ["copies", [], {}]),
    ("random_dag(3, 10, 2, rng=0)", ["random_dag", [3, 10, 2], {"rng": 0}]),
    ("random_dag(2, 25, 3, density=0.2, rng=1)",
     ["random_dag", [2, 25, 3], {"density": 0.2, "rng": 1}]),
    ("random_dag(4, 6, 1, density=0.5, rng=2)",
     ["random_dag", [4, 6, 1], {"density": 0.5, "rng": 2}]),
    ("interleaved(3, 4, partials='random', rng=0)",
     ["interleaved", [3, 4], {"partials": "random", "rng": 0}]),
]

# Counting adds graphs whose path counts rule out enumeration (4.5e9 and 3^45 ~ 3e21 paths).
_COUNT_GRAPHS = _SWEEP_GRAPHS + [
    ("independent_paths(4, 6)", ["independent_paths", [4, 6], {}]),
    ("interleaved(2, 10)", ["interleaved", [2, 10], {}]),
    ("random_dag(2, 60, 2, density=0.5, rng=4)",
     ["random_dag", [2, 60, 2], {"density": 0.5, "rng": 4}]),
    ("interleaved(3, 45)", ["interleaved", [3, 45], {}]),
]

_SUITES = {"sweeps": _SWEEP_GRAPHS, "counts": _COUNT_GRAPHS}


def check_graphs(suite: str = "counts") -> dict[str, LCG]:
    """The published graphs the checks run on, by the name their messages use.

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
    return {name: build_graph(spec) for name, spec in _SUITES[suite]}


def _point(rng, low=0.3, high=2.5) -> list[float]:
    return np.round(rng.uniform(low, high, 2), 3).tolist()


def _other(rng, choices: list, published):
    """One of ``choices`` other than the published one."""
    left = [c for c in choices if c != published]
    return left[int(rng.integers(len(left)))]


def random_graphs(rng: np.random.Generator, counts: bool = False) -> list[tuple[str, list]]:
    """Hidden graphs of the shapes of :func:`check_graphs`: the programs at random points,
    random DAGs and interleaved graphs of random sizes and seeds; with ``counts``, also
    graphs with billions to about 1e21 paths.

    >>> names = [name for name, _ in random_graphs(np.random.default_rng(1))]
    >>> len(names), names[0].startswith("figure1(")
    (9, True)
    """
    seed = lambda: int(rng.integers(2 ** 31))  # noqa: E731
    graphs = []
    for builder in ("figure1", "lecture", "lab", "two_outputs", "copies"):
        point = _point(rng)
        shown = f"{builder}({point[0]}, {point[1]})"
        if builder == "copies":
            shown = f"copies (returns x, x*y, sin(y)) at {tuple(point)}"
        graphs.append((shown, [builder, point, {}]))
    for n_in, n_mid, n_out, density in ((3, 10, 2, 0.3), (2, 25, 3, 0.2), (4, 6, 1, 0.5)):
        shape = [int(n_in + rng.integers(-1, 2)), int(n_mid + rng.integers(-2, 3)),
                 int(n_out + rng.integers(0, 2))]
        density, s = round(density + float(rng.uniform(-0.05, 0.05)), 3), seed()
        graphs.append((f"random_dag({shape[0]}, {shape[1]}, {shape[2]}, density={density}, "
                       f"rng={s})", ["random_dag", shape, {"density": density, "rng": s}]))
    width, depth, s = int(rng.integers(2, 4)), int(rng.integers(3, 6)), seed()
    graphs.append((f"interleaved({width}, {depth}, partials='random', rng={s})",
                   ["interleaved", [width, depth], {"partials": "random", "rng": s}]))
    if counts:   # never a published count graph: their answers are known
        width, depth = _other(rng, [(w, d) for w in range(3, 6) for d in range(5, 9)], (4, 6))
        graphs.append((f"independent_paths({width}, {depth})",
                       ["independent_paths", [width, depth], {}]))
        depth = _other(rng, list(range(8, 13)), 10)
        graphs.append((f"interleaved(2, {depth})", ["interleaved", [2, depth], {}]))
        s = seed()
        graphs.append((f"random_dag(2, 60, 2, density=0.5, rng={s})",
                       ["random_dag", [2, 60, 2], {"density": 0.5, "rng": s}]))
        depth = _other(rng, list(range(43, 48)), 45)
        graphs.append((f"interleaved(3, {depth})", ["interleaved", [3, depth], {}]))
    return graphs


def graph_cases(rng, counts: bool = False) -> list[dict]:
    """The cases of an exercise on graphs: published (``rng=None``) or hidden."""
    graphs = _SUITES["counts" if counts else "sweeps"] if rng is None else random_graphs(
        rng, counts)
    return [{"name": name, "graph": spec} for name, spec in graphs]


def on_graph(fns, case, where):
    """The probe of an exercise whose function takes one graph: what it returned."""
    return call_student(fns[0], where, build_graph(case["graph"]), seconds=60)


# ------------------------------------------------------------ the judges
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


def _judge_sweep(answer, g: LCG, where: str, reference, direction: str) -> None:
    if isinstance(answer, tuple):
        raise CheckFailed(f"{where}: your function returned a tuple; return only the "
                          f"Jacobian, a numpy array of shape (n_outputs, n_inputs)")
    try:
        compare_jacobian(answer, reference(g), where)
    except CheckFailed as failure:
        if matches_any(answer, overwrite_variants(g, direction)):
            raise CheckFailed(f"{failure}{OVERWRITE_HINT[direction]}") from None
        raise


@exercise("2.1", "forward sweep", takes=("forward_sweep",), points=3, minutes=25, seconds=60,
          reference=JACOBIAN_REFERENCE, cases=graph_cases, probe=on_graph,
          passed="forward sweep agrees with minirad on {n} graphs")
def check_forward_sweep(case, answer, where) -> None:
    """Exercise 2.1: ``fn(g)`` returns the Jacobian of LCG ``g`` (shape (n_outputs, n_inputs)).

    Compared with :func:`minirad.exact.sweeps.forward_sweep`; a sweep that
    overwrites where it must add is named as such.
    """
    from ..exact.sweeps import forward_sweep

    _judge_sweep(answer, build_graph(case["graph"]), where,
                 lambda g: forward_sweep(g).jacobian, "forward")


@exercise("2.2", "reverse sweep", takes=("reverse_sweep",), points=3, minutes=25, seconds=60,
          reference=JACOBIAN_REFERENCE, cases=graph_cases, probe=on_graph,
          passed="reverse sweep agrees with minirad on {n} graphs")
def check_reverse_sweep(case, answer, where) -> None:
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

    _judge_sweep(answer, build_graph(case["graph"]), where,
                 lambda g: reverse_sweep(g).jacobian, "reverse")


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
