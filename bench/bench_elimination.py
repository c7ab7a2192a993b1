"""How Markowitz elimination scales: sparse LCGs of 10^3 and 10^4 vertices.

Two families of graphs, both with about three edges into each vertex:

* ``random_dag`` -- :func:`minirad.examples.random_dag` with density
  ``6 / n``: operands drawn from anywhere earlier in the program;
* ``local`` -- a program-like graph where each operation reads two or three
  of the 50 values computed just before it (``local_dag`` below).

For each graph the table gives the median wall time of
``eliminate(g, "markowitz")``, the growth exponent
``log(t2 / t1) / log(n2 / n1)`` between the two sizes (1 means linear), and
the time per counted multiplication or addition, which separates the cost
of choosing vertices from the arithmetic the order itself demands (the
number of operations grows faster than n because fill-in accumulates).
As a peer, ``markowitz-rescan`` chooses the same vertices by scanning every
remaining intermediate at each step (the quadratic way); it runs at the
smaller size only and must agree on the order.  Forward and reverse costs
are listed for comparison of the orders, not of speed.  The last rows time
the exhaustive ``"optimal"`` search on random graphs of 8 to 16
intermediates.

    python -m bench.bench_elimination          # full run
    python -m bench.bench_elimination --quick  # smaller sizes, one repeat
"""

from __future__ import annotations

import math
import sys

import numpy as np

from bench.common import goal, median_time, print_results
from minirad import LCG, examples
from minirad.exact.elimination import eliminate, elimination_cost
from minirad.exact.orders import OPTIMAL_LIMIT
from minirad.rng import as_generator

SIZES = (1_000, 10_000, 30_000)
QUICK_SIZES = (300, 3_000)
OPTIMAL_SIZES = (8, 12, OPTIMAL_LIMIT)  # intermediates; the search visits 2**k sets
QUICK_OPTIMAL_SIZES = (8, 12)
RESCAN_LIMIT = 2_000  # the quadratic peer takes minutes at 10^4
LARGE = 20_000  # above this size, 3 runs (a few seconds each), not 5


def local_dag(n_intermediates: int, n_inputs: int = 20, n_outputs: int = 20,
              window: int = 50, rng=0) -> LCG:
    """Each intermediate reads 2 or 3 distinct operands among the ``window``
    vertices before it; each output reads one late intermediate."""
    rng = as_generator(rng)
    src, dst = [], []
    first = n_inputs
    for v in range(first, first + n_intermediates):
        low = max(0, v - window)
        fan_in = min(v - low, int(rng.integers(2, 4)))
        for u in rng.choice(np.arange(low, v), size=fan_in, replace=False):
            src.append(int(u))
            dst.append(v)
    last = first + n_intermediates
    for j in range(n_outputs):
        src.append(int(rng.integers(max(first, last - window), last)))
        dst.append(last + j)
    names = ([f"x[{i}]" for i in range(n_inputs)]
             + [f"v{k}" for k in range(first, last)]
             + [f"y[{j}]" for j in range(n_outputs)])
    return LCG(names, src, dst, rng.standard_normal(len(src)),
               inputs=range(n_inputs), outputs=range(last, last + n_outputs))


def graph(family: str, n: int) -> LCG:
    if family == "random_dag":
        return examples.random_dag(20, n, 20, density=6.0 / n, rng=n)
    return local_dag(n, rng=n)


def rescan_markowitz(g: LCG) -> list[int]:
    """Markowitz order by full rescans of the remaining intermediates (the
    slow peer); structure only, on sets."""
    pred = {v: set(g.predecessors(v)) for v in range(g.n_vertices)}
    succ = {v: set(g.successors(v)) for v in range(g.n_vertices)}
    remaining = set(g.intermediates)
    order = []
    while remaining:
        v = min(remaining, key=lambda u: (len(pred[u]) * len(succ[u]), u))
        for p in pred[v]:
            succ[p].discard(v)
            succ[p] |= succ[v]
        for s in succ[v]:
            pred[s].discard(v)
            pred[s] |= pred[v]
        remaining.remove(v)
        order.append(v)
    return order


def run(quick: bool = False) -> list[dict]:
    sizes = QUICK_SIZES if quick else SIZES
    repeats = 1 if quick else 5
    rows = []
    for family in ("random_dag", "local"):
        previous = None
        for n in sizes:
            g = graph(family, n)
            seconds, result = median_time(lambda g=g: eliminate(g, "markowitz"),
                                          min(3, repeats) if n > LARGE else repeats)
            forward = elimination_cost(g, "forward")
            reverse = elimination_cost(g, "reverse")
            exponent = (math.log(seconds / previous[1]) / math.log(n / previous[0])
                        if previous else None)
            rows.append({
                "benchmark": f"markowitz/{family}", "size": g.n_vertices,
                "method": "markowitz", "baseline": True, "median_s": seconds, "exponent": exponent,
                "ns_per_op": 1e9 * seconds / (result.multiplications + result.additions),
                "edges": g.n_edges, "multiplications": result.multiplications,
                "additions": result.additions, "forward_mults": forward[0],
                "reverse_mults": reverse[0],
            })
            previous = (n, seconds)
            if n <= RESCAN_LIMIT:
                slow, order = median_time(lambda g=g: rescan_markowitz(g), 1)
                if tuple(g.names[v] for v in order) != result.order:
                    raise AssertionError(f"the rescan peer chose a different order on {family}")
                rows.append({
                    "benchmark": f"markowitz/{family}", "size": g.n_vertices,
                    "method": "markowitz-rescan", "median_s": slow, "exponent": None,
                    "edges": g.n_edges, "multiplications": result.multiplications,
                    "additions": result.additions, "forward_mults": forward[0],
                    "reverse_mults": reverse[0],
                })
    # the exhaustive order: doubling per extra intermediate, so only tiny graphs
    for k in (QUICK_OPTIMAL_SIZES if quick else OPTIMAL_SIZES):
        g = examples.random_dag(3, k, 3, density=0.3, rng=k)
        seconds, result = median_time(lambda g=g: eliminate(g, "optimal"), 1)
        markowitz = elimination_cost(g, "markowitz")
        rows.append({
            "benchmark": "optimal/random_dag", "size": k, "method": "optimal",
            "median_s": seconds, "exponent": None, "edges": g.n_edges,
            "multiplications": result.multiplications, "additions": result.additions,
            "forward_mults": elimination_cost(g, "forward")[0],
            "reverse_mults": elimination_cost(g, "reverse")[0],
            "markowitz_mults": markowitz[0],
        })
    return rows


def goals(rows: list[dict]) -> list[dict]:
    """Issue 16's goals for Markowitz elimination."""
    out = []
    for family in ("random_dag", "local"):
        mine = [r for r in rows if r.get("benchmark") == f"markowitz/{family}"
                and r.get("method") == "markowitz" and r.get("median_s")]
        spread = None
        if len(mine) >= 2 and mine[-1]["size"] >= 2 * 10**4:
            spread = mine[-1]["ns_per_op"] / mine[0]["ns_per_op"]
        out.append(goal(f"markowitz/{family}: time per counted operation, largest over "
                        f"smallest size (10^3 to 3x10^4 vertices)", spread, 1.3))
    local = next((r for r in rows if r.get("benchmark") == "markowitz/local"
                  and r.get("method") == "markowitz" and 9_000 <= r["size"] <= 11_000), None)
    out.append(goal("markowitz/local (width-50 window), 10^4 vertices: seconds",
                    None if local is None else local["median_s"], 2.0, " s"))
    return out


if __name__ == "__main__":
    print_results(run(quick="--quick" in sys.argv[1:]))
