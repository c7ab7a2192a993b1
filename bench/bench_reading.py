"""The reading path: the lines of minirad one gradient runs, the lines a student reads.

For ``minirad.trace`` then ``minirad.jacobian(g, method="reverse")`` of the lecture's
program of numbers, ``log(x1) + x1*x2 - sin(x2)``, and of a small numpy program,
``np.tanh(X @ W).sum()``, the distinct (file, line) pairs of the minirad package that
execute, counted with ``sys.settrace`` after a warm-up call (imports and first-use
caches do not count).  Issue 37's goal: at most 350 lines in at most 8 files, the two
programs together.

    python -m bench.bench_reading
"""

from __future__ import annotations

import os
import sys

import numpy as np

import minirad
from bench.common import goal, print_results

BENCHMARK = "reading path"
PACKAGE = os.path.dirname(minirad.__file__)


def executed(function) -> set[tuple[str, int]]:
    """The (file, line) pairs of minirad that ``function()`` runs."""
    seen = set()

    def tracer(frame, event, arg):
        if frame.f_code.co_filename.startswith(PACKAGE) and event == "line":
            seen.add((frame.f_code.co_filename, frame.f_lineno))
        return tracer

    sys.settrace(tracer)
    try:
        function()
    finally:
        sys.settrace(None)
    return seen


def numbers():
    ops = minirad.ops
    g = minirad.trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    minirad.jacobian(g, method="reverse")


X = np.random.default_rng(0).normal(size=(4, 3))
W = np.random.default_rng(1).normal(size=(3, 2))


def arrays():
    g = minirad.trace(lambda W, X: np.tanh(X @ W).sum(), W, X)
    minirad.jacobian(g, method="reverse")


def run(quick: bool = False) -> list[dict]:
    numbers(), arrays()      # warm-up: lazy imports and caches do not count
    a, b = executed(numbers), executed(arrays)
    both = a | b
    files = sorted({os.path.relpath(f, PACKAGE) for f, _ in both})
    return [{"benchmark": BENCHMARK, "size": "-", "method": name, "median_s": None,
             "status": "ok", "lines": len(lines),
             "files": len({f for f, _ in lines}),
             "note": " ".join(files) if name == "both programs" else ""}
            for name, lines in (("program of numbers", a), ("numpy program", b),
                                ("both programs", both))]


def goals(rows: list[dict]) -> list[dict]:
    both = next(r for r in rows if r["method"] == "both programs")
    return [goal("reading path: distinct lines, both programs", both["lines"], 350, "lines"),
            goal("reading path: files, both programs", both["files"], 8, "files")]


if __name__ == "__main__":
    print_results(run())
