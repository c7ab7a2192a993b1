"""What the reverse sweep's accumulation options save: arrays allocated, bytes, peak memory.

The options of :func:`minirad.exact.sweeps.gradient` (see
:mod:`minirad.exact.cotangents`): ``in_place=True`` adds each term into
the sweep's own accumulator (the ChainRules notes' ``add!!``), ``lazy=True``
defers every cotangent until a requested input needs it.  Three programs:

* ``MLP``: the RAD paper's MLP (784-300-300-300-10, float32, as in
  ``bench_vector``); no vertex is used twice, so ``add!!`` has no sum to save,
  and every vertex leads back to a weight, so laziness has nothing to skip;
* ``IRNN``: the study's recurrent network (28 steps of 28 pixels, hidden 100):
  ``W_hh`` and the biases are used at every step, so their cotangents are sums
  of 28 terms;
* ``unused branch``: ``sum(tanh(x W)) + sum(tanh(tanh(D M1) M2))`` with the
  gradient asked for ``W`` only: the large branch through ``D`` leads back to
  no requested input.

Columns: ``allocations`` and ``allocated MB``, the arrays the sweep created (terms
written to new buffers, and sums; counted by the sweep); ``peak MB``,
tracemalloc's high-water mark during one gradient above the memory held
before it; ``flops``, the multiplications the sweep counted.  The four
methods are timed in turns, as in ``bench_vector``.  Every method's gradient
must equal the plain sweep's bit for bit (else the row is an error).

    python -m bench.bench_accumulation [--quick]
"""

from __future__ import annotations

import argparse
import tracemalloc
from functools import partial

import numpy as np

from bench.bench_vector import mlp_problem
from bench.common import in_turns, one_blas_thread, print_results
from bench.peers import minirad_kit
from bench.programs import mlp_loss
from minirad import trace
from minirad.exact import cotangents
from minirad.exact.sweeps import gradient
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn import networks

BENCHMARK = "reverse sweep accumulation"
METHODS = {"minirad plain (the reference)": (False, False),   # (in_place, lazy)
           "minirad in place (add!!)": (True, False),
           "minirad lazy (thunks)": (False, True),
           "minirad in place + lazy": (True, True)}


def mlp_graph(batch: int):
    X, labels, params = mlp_problem(batch)
    program = partial(mlp_loss, minirad_kit())
    return trace(program, X, labels, *params, wrt=range(2, 2 + len(params))), None


def irnn_graph(batch: int):
    net = networks.irnn()
    x = net.inputs(np.random.default_rng(0).random((batch, 784), dtype=np.float32))
    y = np.arange(batch) % 10
    return nn_graph.traced(nn_graph.irnn_program, net.init(0), x, y), None


def branch_graph(batch: int, width: int = 784):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 30))
    M1, M2 = rng.standard_normal((2, width, width)) / np.sqrt(width)

    def f(W, D):
        return np.tanh(x @ W).sum() + np.tanh(np.tanh(D @ M1) @ M2).sum()

    g = trace(f, rng.standard_normal((30, 10)), rng.standard_normal((batch, width)))
    return g, ["W"]


def peak_bytes(fn) -> int:
    """tracemalloc's high-water mark during ``fn()`` above what was held before."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def rows_for(name: str, size: str, g, wrt, repeats: int) -> list[dict]:
    y = g.outputs[0]
    wanted = g.inputs if wrt is None else [g.index(v) for v in wrt]
    seeds = {y: np.ones((), g.dtypes[y])}
    runs = [lambda options=options: gradient(g, wrt=wrt, in_place=options[0], lazy=options[1])
            for options in METHODS.values()]
    with one_blas_thread():   # in turns, so that load from other work falls on all alike
        turns = in_turns(dict(zip(METHODS, runs)), repeats)
    if turns.errors:  # errors are strings here; the group's runner reports them as a row
        raise RuntimeError("; ".join(f"{name}: {error}" for name, error in turns.errors.items()))
    medians = [turns.median_s[method] for method in METHODS]
    results = [turns.first_result[method] for method in METHODS]
    rows = []
    for (method, (in_place, lazy)), seconds, fn, result in zip(METHODS.items(), medians, runs,
                                                                 results):
        swept = cotangents.reverse_accumulation(g, seeds, wanted=wanted, in_place=in_place,
                                                lazy=lazy)
        row = {"benchmark": BENCHMARK, "size": f"{name}: {size}", "method": method,
               "median_s": seconds, "repeats": repeats, "allocations": swept.allocations,
               "allocated MB": swept.allocated_bytes / 1e6, "peak MB": peak_bytes(fn) / 1e6,
               "flops": swept.multiplications, "baseline": not in_place and not lazy}
        if not all(a.dtype == b.dtype and np.array_equal(a, b)
                   for a, b in zip(result, results[0])):
            row["status"] = "error: the gradient differs from the plain sweep's"
        rows.append(row)
    plain, best = rows[0], min(rows, key=lambda r: r["peak MB"])
    rows[0]["note"] = (f"fewest allocations {min(r['allocations'] for r in rows)} of "
                       f"{plain['allocations']}; lowest peak {best['peak MB']:.2f} MB of "
                       f"{plain['peak MB']:.2f} MB ({best['method'][8:]})")
    return rows


def run(quick: bool = False) -> list[dict]:
    batch, repeats = (20, 3) if quick else (150, 7)
    rows = []
    for name, build, size in (("MLP", mlp_graph, f"784-300-300-300-10, batch {batch}"),
                              ("IRNN", irnn_graph, f"28 steps, hidden 100, batch {batch}"),
                              ("unused branch", branch_graph,
                               f"D ({batch}, 784) through two 784 x 784 layers; wrt W")):
        g, wrt = build(batch)
        rows += rows_for(name, size, g, wrt, repeats)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print_results(run(parser.parse_args(argv).quick))


if __name__ == "__main__":
    main()
