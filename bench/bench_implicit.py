"""Benchmark: the gradient through a nonlinear solve, implicitly or through the iterations.

The problem: ``x(p)`` solves ``A x + x^3 / 10 = p`` (A tridiagonal, 4 on the
diagonal, 1 beside it: a contraction for the fixed-point map below), and the
loss is ``|x|^2``.  Two traced programs give its gradient:

* ``implicit``: :func:`minirad.implicit.solves.solve_root` finds x by Newton's
  method and records one edge ``p -> x`` whose operator ``-f_x^{-1} f_p`` is
  applied by a solve (the implicit function theorem);
* ``unrolled``: Richardson's iteration ``x <- x - (A x + x^3 / 10 - p) / 6``
  (it contracts by about 2/3 a step: A's eigenvalues lie in (2, 6)) traced
  step by step, and the reverse sweep through every step.

Columns: ``retained bytes`` (:func:`minirad.retained_memory`: what the reverse
sweep keeps), ``vertices``, and ``grad diff`` (largest relative difference of
the gradient from the implicit one).  Time is trace plus reverse sweep.

Run ``python -m bench.bench_implicit`` (``--quick``: small sizes).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench.common import print_results
from minirad import trace
from minirad.exact.sweeps import gradient
from minirad.graph.memory import retained_memory
from minirad.implicit.solves import solve_root


def problem(n: int):
    A = 4 * np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1)
    p = np.sin(np.arange(1, n + 1))

    def residual(x, q):
        return A @ x + 0.1 * x ** 3 - q

    def implicit(q):
        x = solve_root(residual, np.zeros(n), q)
        return (x * x).sum()

    def unrolled(q, iterations):
        x = np.zeros(n)
        for _ in range(iterations):
            x = x - (A @ x + 0.1 * x ** 3 - q) / 6.0
        return (x * x).sum()

    return p, implicit, unrolled


def _gradient(program, p):
    g = trace(program, p)
    return g, gradient(g)[0]


def run(quick: bool = False) -> list[dict]:
    sizes = [20] if quick else [20, 200]
    iterations = [20, 40] if quick else [20, 40, 80, 160]
    repeats = 3 if quick else 7
    rows = []
    for n in sizes:
        p, implicit, unrolled = problem(n)
        methods = {"implicit (solve_root)": implicit}
        methods.update({f"unrolled, {k} iterations": (lambda q, k=k, f=unrolled: f(q, k))
                        for k in iterations})
        g0, reference = _gradient(implicit, p)
        for name, program in methods.items():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                g, grad = _gradient(program, p)
                times.append(time.perf_counter() - start)
            diff = float(np.max(np.abs(grad - reference)) / np.max(np.abs(reference)))
            rows.append({"benchmark": "gradient through a nonlinear solve A x + x^3/10 = p",
                         "size": n, "method": name, "median_s": statistics.median(times),
                         "min_s": min(times), "repeats": repeats,
                         "retained bytes": f"{retained_memory(g).total:,.0f}",
                         "vertices": g.n_vertices, "grad diff": f"{diff:.1e}"})
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer repeats")
    print_results(run(quick=parser.parse_args().quick))
