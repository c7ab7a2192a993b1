"""Benchmark: a Hessian-vector product against one gradient, and forward mode by duals.

The program is the lecture's y = ln(x1) + x1 x2 - sin(x2) summed over the
neighbouring pairs of n inputs (:func:`minirad.draw.modes.lecture_family`).
Each method is timed in turns with the others (bench.common.in_turns), so load
from other work falls on all of them alike and the ``ratio`` column (time over
the gradient's) means something even when the seconds do not:

* ``minirad gradient``: :func:`minirad.trace` and one reverse sweep (the baseline);
* ``gradient, the recorded reverse pass on floats``: the reverse pass that
  :func:`~minirad.exact.higher.hvp` runs, on plain floats: the same Python
  machinery as the two HVPs, so their time over it is the constant of an HVP
  (the baseline runs on the opcode tape and numpy sweeps, several times faster
  per operation);
* ``hvp, duals over the recorded reverse pass``: :func:`minirad.exact.higher.hvp`;
* ``hvp, gradient graph + forward sweep``: :func:`~minirad.exact.higher.gradient_graph`
  and :func:`minirad.jvp` along v;
* ``gradient by duals, n passes``: forward mode on :class:`minirad.tracing.dual.Dual`.

``mults`` is the multiplications of partials by tangents or adjoints each
method's sweeps make (:func:`minirad.draw.modes.mode_costs`); ``edges`` the
edges of the graph it sweeps (the program's, or the recorded gradient graph's).

Run ``python -m bench.bench_higher`` (``--quick``: one small size).
"""

from __future__ import annotations

import argparse

import numpy as np

from bench.common import in_turns, print_results
from minirad import jvp, trace
from minirad.draw.modes import lecture_family, mode_costs
from minirad.exact.higher import gradient_graph, hvp, recorded_gradient
from minirad.exact.sweeps import gradient
from minirad.tracing.dual import Dual

BENCHMARK = "one Hessian-vector product against one gradient (the lecture's y over n inputs)"


def _steps(f, x, v) -> dict:
    """The methods timed, by name: each a call with no arguments."""
    n = len(x)
    steps = {
        "minirad gradient (trace + reverse sweep)": lambda: gradient(trace(f, *x)),
        "gradient, the recorded reverse pass on floats":
            lambda: recorded_gradient(f, x, list(range(n)), list(x)).gradient,
        "hvp, duals over the recorded reverse pass": lambda: hvp(f, *x, v=v),
        "hvp, gradient graph + forward sweep": lambda: jvp(gradient_graph(f, *x), v),
    }
    if n <= 64:  # n passes: quadratic in n
        steps["gradient by duals, n passes"] = lambda: [
            f(*(Dual(a, float(i == j)) for i, a in enumerate(x))).tangent for j in range(n)]
    return steps


def run(quick: bool = False) -> list[dict]:
    sizes = [8] if quick else [8, 64, 512]
    repeats = 3 if quick else 9
    rows = []
    for n in sizes:
        f, x = lecture_family(n)
        v = np.cos(np.arange(n))
        steps = _steps(f, x, v)
        turns = in_turns(steps, repeats)
        costs = mode_costs(f, *x)
        g, G = trace(f, *x), gradient_graph(f, *x)
        mults = {"minirad gradient (trace + reverse sweep)": costs["reverse sweep"],
                 "gradient, the recorded reverse pass on floats": costs["reverse sweep"],
                 "hvp, duals over the recorded reverse pass": costs["hvp"],
                 "hvp, gradient graph + forward sweep": costs["hvp"],
                 "gradient by duals, n passes": costs["duals"]}
        edges = {"minirad gradient (trace + reverse sweep)": g.n_edges,
                 "gradient, the recorded reverse pass on floats": g.n_edges,
                 "gradient by duals, n passes": g.n_edges}
        for name in steps:
            row = {"benchmark": BENCHMARK, "size": n, "method": name, "repeats": repeats,
                   "mults": mults[name], "edges": edges.get(name, G.n_edges)}
            if name in turns.errors:
                row["status"] = turns.errors[name]
            else:
                row.update(median_s=turns.median_s[name], min_s=turns.min_s[name])
            rows.append(row)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size, fewer repeats")
    print_results(run(quick=parser.parse_args().quick))
