"""Lab 3's exercise: counting paths exactly (3.1).

The graphs are those of Lab 2 plus graphs with billions to about 3e21
paths, where walking the paths one by one cannot finish and counts held in
floats or numpy integers are inexact: only integer dynamic programming
passes.

>>> def count_paths(g):                   # Python ints keep every digit
...     counts = np.zeros((g.n_vertices, len(g.inputs)), dtype=object)
...     counts[list(g.inputs), range(len(g.inputs))] = 1
...     for u, v, _ in g.edges():
...         counts[v] += counts[u]
...     return counts[list(g.outputs)]
>>> check_count_paths(count_paths)
Exercise 3.1 passed: path counts exact on 13 graphs
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .checking import CheckFailed, build_graph, call_student, one, type_name
from .exercise import exercise
from .lab02_lcg import (
    JACOBIAN_REFERENCE,
    OVERWRITE_HINT,
    graph_cases,
    matches_any,
    overwrite_variants,
    planted_forward,
)

__all__ = ["MISTAKES", "SECONDS", "check_count_paths"]

#: seconds the student's function may take on one graph (dynamic programming takes
#: milliseconds; walking 3e21 paths never ends)
SECONDS = 10.0


# ------------------------------------------------------------- lab 3: paths
def _cases(rng) -> list[dict]:
    """The graphs of Lab 2 and the large ones."""
    return graph_cases(rng, counts=True)


def _probe(fns, case, where):
    return call_student(fns[0], where, build_graph(case["graph"]), seconds=SECONDS)


def _slow(case) -> str:
    """Why a graph is slow, told by the grader: the number of paths is the answer's sum."""
    from ..exact.paths import count_paths

    total = sum(int(c) for c in count_paths(build_graph(case["graph"])).flat)
    return (f" -- this graph has {total} input-output paths; visiting them one by one "
            f"cannot finish, so count by dynamic programming over the vertices")


def _exact_hint(kind: str, largest: int) -> str:
    """Why a count came out wrong, from the kind of number that holds it (only when
    ``largest``, the graph's largest count, is too big for that kind to hold)."""
    if kind == "f" and largest > 2 ** 53:
        return (" -- your entries are floats, which keep only 53 bits (about 16 digits); "
                "count with Python ints")
    if kind in ("i", "u") and largest > 2 ** 31 - 1:  # int32 on some platforms
        return (" -- numpy integers silently wrap around past 2**63 - 1 (about 9.2e18); count "
                "with Python ints (e.g. a numpy array with dtype=object, or lists)")
    return ""


def _number_kind(raw: np.ndarray) -> str:
    """numpy's dtype kind, or for an object array the kind of its first non-int entry."""
    if raw.dtype.kind != "O":
        return raw.dtype.kind
    for value in raw.flat:
        if isinstance(value, (float, np.floating)):
            return "f"
        if isinstance(value, np.integer):
            return "i"
    return "O"


@exercise("3.1", "count paths", takes=("count_paths",), points=3, minutes=30, seconds=150,
          reference=JACOBIAN_REFERENCE, cases=_cases, probe=_probe, slow=_slow,
          passed="path counts exact on {n} graphs")
def check_count_paths(case, answer, where) -> None:
    """Exercise 3.1: ``fn(g)`` returns the exact number of paths from each input
    to each output, shape (n_outputs, n_inputs).

    Compared entry by entry, exactly, with :func:`minirad.exact.paths.count_paths`.
    """
    from ..exact.paths import count_paths

    g = build_graph(case["graph"])
    expected = count_paths(g)
    most = max((int(c) for c in expected.flat), default=0)
    try:
        raw = np.asarray(answer)
        mine = np.asarray(answer, dtype=object)  # Python ints keep every digit
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: your function returned {type_name(answer)}, not "
                          f"an array of counts") from None
    if mine.shape != expected.shape:
        hint = " -- did you return the transpose?" if mine.shape == expected.shape[::-1] \
            else ""
        raise CheckFailed(f"{where}: your function returned shape {mine.shape} but the "
                          f"counts have shape {expected.shape} (rows: outputs, columns: "
                          f"inputs){hint}")
    for index in np.ndindex(expected.shape):
        value, exact = mine[index], int(expected[index])
        right = isinstance(value, (Integral, float, np.floating)) and value == exact
        if not right:
            shown = ", ".join(map(str, index))
            if matches_any(mine, overwrite_variants(g, "forward", np.ones(g.n_edges)),
                           rtol=0.0):
                hint = OVERWRITE_HINT["counts"]
            else:
                hint = _exact_hint(_number_kind(raw), most)
            raise CheckFailed(f"{where}: your count for entry [{shown}] is {value!r:.60}, "
                              f"expected exactly {exact}{hint}")


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "3.1": [
        ("counts held in floats", one(lambda g: planted_forward(g, unit=True))),
        ("counts in numpy integers, which wrap",
         one(lambda g: planted_forward(g, unit=True, dtype=np.int64))),
        ("= where counts must be added",
         one(lambda g: planted_forward(g, unit=True, dtype=object, overwrite=True))),
    ],
}
