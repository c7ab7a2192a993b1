"""Path sampling throughput: batched Monte Carlo against one sample at a time.

For three graphs of about 10^4 edges, and k = 1 and 2 draws per vertex,
the table times three ways of drawing Algorithm 1 estimates of the full
Jacobian:

* ``minirad sampled_jacobians``: the batched sampler, 10^4 estimates per run;
* ``minirad sample_paths loop``: :func:`minirad.randomized.sampling.sample_paths` (numpy
  per vertex) plus its reverse sweep, called once per estimate;
* ``literal Algorithm 1 (pure Python)``: the paper's pseudocode as written,
  in plain Python lists and dicts with ``random.Random``, then a reverse
  sweep over the sampled edges (adjacency lists are built once, untimed).

``median_s`` is the median wall time **per estimate** (batch time over
batch size), so ``vs baseline`` reads as "times slower than the batched
sampler".  The batched sampler and the literal loop are timed in turn,
repeat after repeat (the goal is their ratio).  ``edges_stored_per_sample``
is the mean number of edges in the sampled graph Q, beside ``full_edges``:
the memory the paper is about.

    python -m bench.bench_sampling          # full run
    python -m bench.bench_sampling --quick  # smaller batches, one repeat
"""

from __future__ import annotations

import os
import random
import sys

import numpy as np

from bench.common import goal, median_time, print_results
from minirad import examples
from minirad.randomized.sampling import sample_paths, sampled_jacobians

BENCHMARK = "path sampling (per estimate)"


def graphs(quick: bool):
    """(label, graph) pairs, each about 10^4 edges (fewer when quick)."""
    if quick:
        return [("random_dag", examples.random_dag(3, 80, 2, 0.3, rng=0)),
                ("interleaved", examples.interleaved(10, 6, "random", rng=0))]
    return [("random_dag", examples.random_dag(3, 250, 2, 0.3, rng=0)),
            ("interleaved", examples.interleaved(30, 11, "random", rng=0)),
            ("sparse chain", examples.random_dag(1, 3000, 1, 0.0023, rng=0))]


# ------------------------------------------------- the paper's pseudocode
def literal_setup(g):
    """Plain Python adjacency: successors and partials of each vertex."""
    order, ptr = g.out_edges_csr
    targets, partials = g.targets[order].tolist(), g.partials[order].tolist()
    bounds = ptr.tolist()
    succ = [targets[bounds[v]:bounds[v + 1]] for v in range(g.n_vertices)]
    part = [partials[bounds[v]:bounds[v + 1]] for v in range(g.n_vertices)]
    return succ, part, list(g.inputs), list(g.outputs)


def literal_algorithm1(setup, k: int, rnd: random.Random):
    """One estimate, exactly as Algorithm 1 reads: returns (jacobian, |Q|)."""
    succ, part, inputs, outputs = setup
    n = len(succ)
    q = {}  # (v, i) -> accumulated weight of v's i-th out-edge
    visited = [False] * n
    for v in inputs:
        visited[v] = True
    for v in range(n):
        d = len(succ[v])
        if not visited[v] or d == 0:
            continue
        for _ in range(k):
            i = rnd.randrange(d)
            q[v, i] = q.get((v, i), 0.0) + d / k * part[v][i]
            visited[succ[v][i]] = True
    out_edges = {}
    for (v, i), w in q.items():
        out_edges.setdefault(v, []).append((succ[v][i], w))
    rows = []
    for y in outputs:
        adjoint = {y: 1.0}
        for v in sorted(out_edges, reverse=True):
            total = 0.0
            for w, weight in out_edges[v]:
                total += weight * adjoint.get(w, 0.0)
            adjoint[v] = total
        rows.append([adjoint.get(x, 0.0) for x in inputs])
    return rows, len(q)


# ----------------------------------------------------------------- timing
def _median_per_estimate(run, batch: int, repeats: int) -> float:
    """Median seconds per estimate of ``run(batch)``, which makes ``batch`` of them."""
    seconds, _ = median_time(lambda: run(batch), repeats)
    return seconds / batch


def _rows(label: str, g, k: int, batched_n: int, single_n: int, repeats: int) -> list[dict]:
    size = f"{label}, {g.n_edges:,} edges, k={k}"
    sampled_jacobians(g, k, 10, rng=0)  # warm the graph's cached reachability once
    setup = literal_setup(g)
    rnd = random.Random(3)
    # the goal compares these two: timed in turn, repeat after repeat, so
    # that load from elsewhere on the machine falls on both alike
    batched, literal = [], []
    for repeat in range(repeats):
        batched.append(_median_per_estimate(
            lambda n, repeat=repeat: sampled_jacobians(g, k, n, rng=1 + repeat), batched_n, 1))
        literal.append(_median_per_estimate(
            lambda n: [literal_algorithm1(setup, k, rnd) for _ in range(n)], single_n, 1))
    batched, literal = float(np.median(batched)), float(np.median(literal))
    stored = []

    def single(n):
        rng = np.random.default_rng(2)
        for _ in range(n):
            s = sample_paths(g, k, rng=rng)
            s.jacobian  # noqa: B018 - the estimate is part of the work
            stored.append(s.edges_stored)

    per_sample = _median_per_estimate(single, single_n, repeats)
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    common = {"benchmark": BENCHMARK, "size": size, "full_edges": g.n_edges,
              "edges_stored_per_sample": round(float(np.mean(stored)), 1), "k": k}
    return [
        {**common, "method": "minirad sampled_jacobians", "median_s": batched,
         "batch": batched_n, "estimates_per_s": round(1 / batched), "baseline": True,
         "note": f"median_s is per estimate: batch time / batch; load {load}"},
        {**common, "method": "minirad sample_paths loop", "median_s": per_sample,
         "batch": single_n, "estimates_per_s": round(1 / per_sample)},
        {**common, "method": "literal Algorithm 1 (pure Python)", "median_s": literal,
         "batch": single_n, "estimates_per_s": round(1 / literal),
         "note": "timed in turn with the batched sampler"},
    ]


def run(quick: bool = False) -> list[dict]:
    """Rows for bench/common.py's table; ``median_s`` is seconds per estimate."""
    rows = []
    for label, g in graphs(quick):
        for k in (1, 2):
            rows += _rows(label, g, k, batched_n=1_000 if quick else 10_000,
                          single_n=10 if quick else 100, repeats=1 if quick else 3)
    return rows


def goals(rows: list[dict]) -> list[dict]:
    """Issue 16's goals for batched Algorithm 1, per graph and k."""
    out = []
    sizes = dict.fromkeys(r["size"] for r in rows if r.get("benchmark") == BENCHMARK)
    for size in sizes:
        by_method = {r["method"]: r for r in rows if r.get("size") == size}
        batched = by_method.get("minirad sampled_jacobians")
        literal = by_method.get("literal Algorithm 1 (pure Python)")
        if batched is None or not batched.get("median_s"):
            continue
        if batched.get("batch", 0) >= 10_000:
            out.append(goal(f"{size}: 10^4 batched estimates, seconds",
                            10_000 * batched["median_s"], 0.2, " s"))
        speedup = (None if literal is None or not literal.get("median_s")
                   else literal["median_s"] / batched["median_s"])
        out.append(goal(f"{size}: batched speed-up over the literal loop", speedup, 50.0,
                        at_most=False))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print_results(run(quick="--quick" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
