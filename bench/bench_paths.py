"""Exact path counts on interleaved graphs with up to 10^147 paths.

``interleaved(width, depth)`` (Figure 2b of the RAD paper) is ``depth`` fully
connected layers of ``width`` vertices between one input and one output, so
it has ``width ** depth`` input-output paths: 10^31 at width 10, depth 31.

Methods:

* ``minirad count_paths``: one dynamic-programming pass over the LCG's edge
  arrays with Python integers (``minirad.exact.paths.count_paths``);
* ``networkx DP``: the same recurrence written the networkx way, over
  ``nx.topological_sort`` and ``G.predecessors`` of ``g.to_networkx()``
  (building the DiGraph is not timed);
* ``networkx all_simple_paths``: counting by enumeration, which is what a
  library without a counting routine offers.  It runs on small graphs only;
  on the big ones the row gives the time extrapolated from the measured rate
  instead of running for longer than the universe has existed.

Counts must agree exactly between the methods.

    python -m bench.bench_paths           # full sizes
    python -m bench.bench_paths --quick
"""

from __future__ import annotations

import argparse

import networkx as nx

from bench.common import goal, median_time, print_results, time_ratio
from minirad import examples
from minirad.exact.paths import count_paths

BENCHMARK = "path counting"
# (width, depth): small graphs where enumeration still finishes, then big ones
ENUMERABLE = ((3, 6), (3, 8), (3, 10))
BIG = ((10, 31), (30, 100))
QUICK_ENUMERABLE = ((3, 6),)
QUICK_BIG = ((10, 31),)
SECONDS_PER_YEAR = 3.156e7


def networkx_count(G: nx.DiGraph, source, target) -> int:
    """Paths from source to target by the DP over a networkx topological order."""
    count = {}
    for node in nx.topological_sort(G):
        count[node] = 1 if node == source else sum(count[p] for p in G.predecessors(node))
    return count[target]


def enumeration_count(G: nx.DiGraph, source, target) -> int:
    return sum(1 for _ in nx.all_simple_paths(G, source, target))


def show_count(n: int) -> str:
    """Exact when short enough to read, else the leading digits and the length."""
    return str(n) if n < 10**40 else f"{n:.4e} ({len(str(n))} digits)"


def _graph(width, depth):
    g = examples.interleaved(width, depth)
    G = g.to_networkx()
    return g, G, g.names[g.inputs[0]], g.names[g.outputs[0]]


def _row(size, method, seconds, repeats, count, expected, edges):
    row = {"benchmark": BENCHMARK, "size": size, "method": method, "median_s": seconds,
           "repeats": repeats, "edges": edges, "paths": show_count(count)}
    if count != expected:
        row["status"] = f"error: counted {count}, minirad counted {expected}"
    return row


def _compare(width, depth, repeats, enumerate_rate=None):
    """Rows for one graph; returns them and the enumeration rate (paths / s) if measured."""
    g, G, source, target = _graph(width, depth)
    size = f"width {width}, depth {depth}"
    rows, rate = [], None

    seconds, counts = median_time(lambda: count_paths(g), repeats)
    expected = int(counts[0, 0])
    rows.append(_row(size, "minirad count_paths", seconds, repeats, expected, expected,
                     g.n_edges))
    seconds, count = median_time(lambda: networkx_count(G, source, target), repeats)
    rows.append(_row(size, "networkx DP over topological_sort", seconds, repeats, count,
                     expected, g.n_edges))
    method = "networkx all_simple_paths (enumerates)"
    if enumerate_rate is None:
        seconds, count = median_time(lambda: enumeration_count(G, source, target), 1)
        rows.append(_row(size, method, seconds, 1, count, expected, g.n_edges))
        rate = expected / seconds
    else:
        years = expected / enumerate_rate / SECONDS_PER_YEAR
        rows.append({"benchmark": BENCHMARK, "size": size, "method": method,
                     "median_s": None, "status": "not run (would not finish)",
                     "edges": g.n_edges, "paths": show_count(expected),
                     "note": f"~{years:.1e} years at the {enumerate_rate:,.0f} paths/s "
                             f"measured on the largest small graph"})
    return rows, rate


def run(quick: bool = False) -> list[dict]:
    rows, rate = [], None
    for width, depth in QUICK_ENUMERABLE if quick else ENUMERABLE:
        group, rate = _compare(width, depth, 3 if quick else 5)
        rows += group
    for width, depth in QUICK_BIG if quick else BIG:
        group, _ = _compare(width, depth, 3 if quick else 5, enumerate_rate=rate)
        rows += group
    return rows


def goals(rows: list[dict]) -> list[dict]:
    """Issue 16's goal: count_paths at least as fast as the networkx DP on every graph."""
    sizes = dict.fromkeys(r["size"] for r in rows if r.get("benchmark") == BENCHMARK)
    return [goal(f"count_paths, {size}: time vs the networkx DP",
                 time_ratio(rows, BENCHMARK, size, "minirad count_paths",
                            "networkx DP over topological_sort"), 1.0) for size in sizes]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args(argv)
    print_results(run(quick=args.quick))


if __name__ == "__main__":
    main()
