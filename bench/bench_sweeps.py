"""Benchmark: one reverse sweep on large random LCGs, against its peers.

The adjoints ``a`` of a reverse sweep for output ``y`` solve the unit upper
triangular system ``(I - L^T) a = e_y``, with ``L[v, u] = dv/du`` the
strictly lower triangular matrix of partials.  So the natural peer is
SciPy's compiled sparse triangular solver on that matrix; the other peer is
the textbook plain Python loop over the edges in reverse order.

Two graph families, each at 10^5 and 10^6 edges:

* ``wide``: 100 layers, each vertex drawing 10 predecessors from the layer
  before (few levels, many edges per level: minirad's wavefront engine);
* ``deep``: layers of 10 vertices with 5 predecessors each, so thousands
  of levels (minirad hands these to the same SciPy solver).

Run ``python -m bench.bench_sweeps`` (add ``--quick`` for 10^5 edges only).
Times are medians over interleaved repetitions.  "warm" means the graph
has been swept before, so whatever minirad derived from it is cached;
"cold" is the first sweep of a freshly built graph object (same arrays,
nothing cached), everything it needs built inside the timing.  The peer
that the goals compare with is SciPy in its fastest configuration: a
prebuilt canonical CSR matrix with 32-bit indices, ``unit_diagonal=True,
overwrite_A=True, overwrite_b=True``; its default flags and a matrix built
inside the timing are shown too.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

from bench.common import goal, print_results, time_ratio
from minirad.exact.sweeps import reverse_sweep
from minirad.examples import random_layered
from minirad.graph.lcg import LCG

FAMILIES = {
    # name: (depth, degree); width follows from the edge count
    "wide": (100, 10),
    "deep": (None, 5),
}


def _graph(family: str, edges: int, seed: int) -> LCG:
    depth, degree = FAMILIES[family]
    if family == "wide":
        width = edges // (depth * degree)
    else:
        width = 10
        depth = edges // (width * degree)
    return random_layered(width, depth, degree, rng=seed)


def _adjoint_matrix(g: LCG):
    """``I - L^T`` in CSR form: upper triangular, unit diagonal, canonical, with
    32-bit indices, so that SciPy's solver gets its input the way it likes it."""
    n = g.n_vertices
    diagonal = np.arange(n)
    A = sp.csr_array((np.concatenate([np.ones(n), -g.partials]),
                      (np.concatenate([diagonal, g.sources]),
                       np.concatenate([diagonal, g.targets]))), shape=(n, n))
    A.sum_duplicates()
    A.indices = A.indices.astype(np.int32)
    A.indptr = A.indptr.astype(np.int32)
    return A


def _fresh(g: LCG) -> LCG:
    """The same graph with nothing cached, for cold timings."""
    return LCG.from_trusted_arrays(g.names, g.sources, g.targets, g.partials, g.inputs,
                                   g.outputs, g.values, g.ops)


def _methods(g: LCG, y: int):
    n = g.n_vertices
    e_y = np.zeros(n)
    e_y[y] = 1.0
    A = _adjoint_matrix(g)
    src, dst, par = g.sources.tolist(), g.targets.tolist(), g.partials.tolist()
    rsrc, rdst, rpar = src[::-1], dst[::-1], par[::-1]

    def python_loop():
        a = [0.0] * n
        a[y] = 1.0
        for s, d, p in zip(rsrc, rdst, rpar):
            a[s] += p * a[d]
        return np.array(a)

    def minirad_cold():
        return reverse_sweep(_fresh(g), outputs=[y]).adjoints[:, 0]

    def fastest():
        # overwrite_b: a fresh right-hand side every call, as minirad builds its seeds
        b = np.zeros(n)
        b[y] = 1.0
        return spsolve_triangular(A, b, lower=False, unit_diagonal=True, overwrite_A=True,
                                  overwrite_b=True)

    return {
        WARM: lambda: reverse_sweep(g, outputs=[y]).adjoints[:, 0],
        COLD: minirad_cold,
        FASTEST: fastest,
        "scipy spsolve_triangular, default flags": lambda: spsolve_triangular(A, e_y,
                                                                              lower=False),
        "scipy spsolve_triangular, matrix built inside": lambda: spsolve_triangular(
            _adjoint_matrix(g), e_y, lower=False, unit_diagonal=True),
        "python loop over edges": python_loop,
    }


WARM = "minirad reverse_sweep, warm"
COLD = "minirad reverse_sweep, cold (fresh graph, first sweep)"
FASTEST = "scipy spsolve_triangular, fastest flags, prebuilt matrix"


def benchmark_name(family: str) -> str:
    return f"reverse sweep, one output, {family} random LCG"


def goals(rows: list[dict]) -> list[dict]:
    """Issue 16's goals for sweeps at 10^6 edges, per family."""
    out = []
    for family in FAMILIES:
        name = benchmark_name(family)
        size = next((r["size"] for r in rows if r.get("benchmark") == name
                     and r["size"] >= 10**6), None)
        out.append(goal(f"{family}, 10^6 edges: cold first sweep vs scipy fastest",
                        time_ratio(rows, name, size, COLD, FASTEST), 1.0))
        out.append(goal(f"{family}, 10^6 edges: warm sweep vs scipy fastest",
                        time_ratio(rows, name, size, WARM, FASTEST), 0.5))
    return out


def _time(methods: dict, repeats: int, skip_slow_after: float) -> dict:
    """Median and minimum seconds per method, repetitions interleaved so that
    background load hits every method alike; slow methods stop early."""
    times = {name: [] for name in methods}
    for _ in range(repeats):
        for name, fn in methods.items():
            if len(times[name]) >= 3 and sum(times[name]) > skip_slow_after:
                continue
            gc.collect()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: (statistics.median(ts), min(ts), len(ts)) for name, ts in times.items()}


def run(quick: bool = False) -> list[dict]:
    """Time every method on every graph; one dict per (graph, method).

    Each row has ``benchmark``, ``size`` (edges), ``method``, ``median_s``,
    ``min_s``, ``repeats`` and ``graph``; the first (minirad's warm sweep) is
    the one ``add_ratios`` takes ratios against.
    """
    sizes = [10**5] if quick else [10**5, 10**6]
    repeats = 5 if quick else 15
    rows = []
    for family in FAMILIES:
        for size in sizes:
            g = _graph(family, size, seed=0)
            y = g.outputs[0]
            methods = _methods(g, y)
            reference = methods["scipy spsolve_triangular, default flags"]()
            for name, fn in methods.items():  # every peer must solve the same system
                np.testing.assert_allclose(fn(), reference, rtol=1e-8, atol=1e-10,
                                           err_msg=name)
            timed = _time(methods, repeats, skip_slow_after=3.0)
            known = g.memos.get("graph.levels")  # counted when "auto" chose wavefronts
            levels = int(known.max()) + 1 if known is not None and len(known) else None
            shape = (f"{g.n_vertices} vertices, "
                     + (f"{levels} levels" if levels else "too deep for wavefronts"))
            for name, (median, fastest, count) in timed.items():
                rows.append({"benchmark": benchmark_name(family),
                             "size": g.n_edges, "method": name, "median_s": median,
                             "min_s": fastest,
                             "repeats": count, "graph": shape})
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^5 edges only, fewer repeats")
    print_results(run(quick=parser.parse_args().quick))
