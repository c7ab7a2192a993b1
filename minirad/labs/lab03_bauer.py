"""Lab 3's exercise: counting paths exactly (3.1).

>>> def count_paths(g):                   # Python ints keep every digit
...     counts = np.zeros((g.n_vertices, len(g.inputs)), dtype=object)
...     counts[list(g.inputs), range(len(g.inputs))] = 1
...     for u, v, _ in g.edges():
...         counts[v] += counts[u]
...     return counts[list(g.outputs)]
>>> check_count_paths(count_paths)
Exercise 3.1 passed: path counts exact on 13 graphs (the largest: 2954312706550833698643)
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral

import numpy as np

from .checking import (
    CheckFailed,
    call_student,
    location,
    one,
    passed,
)
from .exercise import exercise
from .lab02_lcg import (
    JACOBIAN_REFERENCE,
    OVERWRITE_HINT,
    check_graphs,
    matches_any,
    overwrite_variants,
    planted_forward,
)

__all__ = ["MISTAKES", "check_count_paths"]


# ------------------------------------------------------------- lab 3: paths
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
          reference=JACOBIAN_REFERENCE)
def check_count_paths(fn: Callable, seconds: float = 10.0) -> None:
    """Exercise 3.1: ``fn(g)`` returns the exact number of paths from each input
    to each output, shape (n_outputs, n_inputs).

    Compared entry by entry, exactly, with :func:`minirad.exact.paths.count_paths`
    on ``check_graphs("counts")``, which includes graphs with about 4.5e9
    and 3^45 (about 3e21) paths.  Walking the paths one by one cannot finish
    on those (each graph gets ``seconds``); counts held in floats or numpy
    int64 are inexact there, so only integer dynamic programming passes.

    >>> def count_paths(g):                   # Python ints keep every digit
    ...     counts = np.zeros((g.n_vertices, len(g.inputs)), dtype=object)
    ...     counts[list(g.inputs), range(len(g.inputs))] = 1
    ...     for u, v, _ in g.edges():
    ...         counts[v] += counts[u]
    ...     return counts[list(g.outputs)]
    >>> check_count_paths(count_paths)
    Exercise 3.1 passed: path counts exact on 13 graphs (the largest: 2954312706550833698643)
    """
    from ..exact.paths import count_paths

    exercise, topic = "Exercise 3.1", "count paths"
    graphs = check_graphs("counts")
    largest = 0
    for name, g in graphs.items():
        where = location(exercise, topic, name)
        expected = count_paths(g)
        total = sum(int(c) for c in expected.flat)
        slow = (f" -- this graph has {total} input-output paths; visiting them one by one "
                f"cannot finish, so count by dynamic programming over the vertices")
        result = call_student(fn, where, g, seconds=seconds, slow_hint=slow)
        most = max((int(c) for c in expected.flat), default=0)
        largest = max(largest, most)
        try:
            raw = np.asarray(result)
            mine = np.asarray(result, dtype=object)  # Python ints keep every digit
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: your function returned {type(result).__name__}, not "
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
                raise CheckFailed(f"{where}: your count for entry [{shown}] is {value!r}, "
                                  f"expected exactly {exact}{hint}")
    passed(exercise, f"path counts exact on {len(graphs)} graphs (the largest: {largest})")


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
