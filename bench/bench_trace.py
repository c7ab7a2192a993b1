"""Tracing and reverse-mode gradient of one scalar program at 10^4, 10^5, 10^6 operations.

The program (:func:`program`) is a loop of twelve operations that updates
three accumulators and rereads the inputs every step, so values are reused
and the graph is about as deep as it is long.  It uses only what every
library here supports (micrograd 0.1.0 on PyPI has +, *, ** and relu, no
sin/tanh/exp), and its values settle near a fixed point, so it is
numerically stable at any length.

Methods, each in a fresh worker process (so a peer that crashes or hangs
becomes a status in the table, not the end of the run):

* ``plain floats``: the program on Python floats, the floor any tracer pays on top of;
* ``minirad``: ``minirad.trace`` then ``minirad.exact.sweeps.reverse_sweep``;
* ``micrograd``: build ``Value`` objects, then ``.backward()``;
* ``autograd``: HIPS autograd's ``make_vjp`` on the same function, then the vjp.

``build_s`` and ``backward_s`` split the median run (``median_s`` is their
sum) and ``cpu_s`` is its CPU time, a check on wall times taken on a busy
machine.  Gradients and values are compared across libraries at every size.

micrograd's ``backward`` sorts the graph with a recursive ``build_topo``:
with Python's default recursion limit (1000) it raises ``RecursionError``
once the graph is deeper than that, i.e. from about 1,200 operations here.
The worker records that, then raises the limit to time it anyway.

    python -m bench.bench_trace           # full sizes
    python -m bench.bench_trace --quick   # one small size
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import resource
import statistics
import sys
import time

from bench.common import find_row, goal, print_results, run_worker, skipped_row, time_ratio, version

BENCHMARK = "trace + gradient"
BENCHMARK_NO_GC = "trace + gradient, gc disabled"
SIZES = (10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000,)
INPUTS = (0.3, -0.7, 0.45)
OPS_PER_STEP = 12
TOLERANCE = 1e-9  # relative; every library does the same float operations in the same order


def program(x, y, z, steps, relu):
    """Twelve operations per step; ``relu`` is each library's spelling of max(t, 0)."""
    a, b, c = x, y, z
    for _ in range(steps):
        p = a * b
        q = p + c
        r = 0.5 * q
        s = r ** 2
        t = s + x          # reread an input: its gradient sums over every step
        u = relu(t)
        v = u * y
        w = v + r          # reuse r: two paths from r to the next accumulator
        a = 0.6 * w
        m = c * z
        b = m + 0.3 * a
        c = s
    return a + b + c


def steps_for(size: int) -> int:
    return max(1, (size - 2) // OPS_PER_STEP)


def operation_count(steps: int) -> int:
    """Elementary operations of :func:`program`: 12 per step and 2 at the end."""
    return OPS_PER_STEP * steps + 2


# ------------------------------------------------------------------ workers
# Each worker builds and differentiates the program `repeats` times in its
# own process and returns the median split of the runs and the result.

def _timed_runs(build, backward, repeats, probe=None):
    """Run build() then backward(built) `repeats` times: the wall-time split of
    the median run, its CPU time, and the last result.  ``probe(built)``, if
    given, runs untimed on the first graph before its backward; it returns True
    when it used the graph up, and then an identical graph is built (untimed)
    for the timed backward."""
    runs, result = [], None
    for i in range(repeats):
        gc.collect()  # the previous repeat's garbage is not billed to this one
        wall, cpu = time.perf_counter(), time.process_time()
        built = build()
        build_s, build_cpu = time.perf_counter() - wall, time.process_time() - cpu
        if i == 0 and probe is not None and probe(built):
            built = build()
        wall, cpu = time.perf_counter(), time.process_time()
        result = backward(built)
        runs.append((build_s, time.perf_counter() - wall,
                     build_cpu + time.process_time() - cpu))
        del built
    totals = [build_s + backward_s for build_s, backward_s, _ in runs]
    middle = statistics.median(totals)
    build_s, backward_s, cpu_s = runs[min(range(repeats),
                                          key=lambda i: abs(totals[i] - middle))]
    return {"build_s": build_s, "backward_s": backward_s, "cpu_s": cpu_s,
            "median_s": middle, "result": result}


def work_floats(steps, repeats):
    def relu(t):
        return t if t > 0.0 else 0.0

    out = _timed_runs(lambda: program(*INPUTS, steps, relu), lambda value: (value, None), repeats)
    out["backward_s"] = None
    return out


def work_minirad(steps, repeats):
    from minirad import ops, trace
    from minirad.exact.sweeps import reverse_sweep

    def build():
        return trace(lambda x, y, z: program(x, y, z, steps, ops.relu), *INPUTS)

    def backward(g):
        gradient = [float(d) for d in reverse_sweep(g).jacobian[0]]
        return g.value(g.outputs[0]), gradient, g.n_vertices - 3

    out = _timed_runs(build, backward, repeats)
    out["ops"] = out["result"][2]
    return out


def work_micrograd(steps, repeats):
    from micrograd.engine import Value

    default_limit = sys.getrecursionlimit()
    deep_limit = _deep_limit(steps)
    notes = []

    def build():
        xs = [Value(x) for x in INPUTS]
        return xs, program(*xs, steps, lambda t: t.relu())

    def probe(built):
        """What micrograd does as installed, at Python's default recursion limit."""
        sys.setrecursionlimit(default_limit)
        try:
            built[1].backward()
        except RecursionError:  # raised while sorting, before any gradient is touched
            notes.append(f"RecursionError at the default recursion limit ({default_limit}); "
                         f"timed with sys.setrecursionlimit({deep_limit:,})")
            return False
        finally:
            sys.setrecursionlimit(deep_limit)
        notes.append(f"works at the default recursion limit ({default_limit})")
        return True  # gradients were accumulated: the timed backward needs a fresh graph

    def backward(built):
        xs, out = built
        out.backward()
        return out.data, [v.grad for v in xs]

    out = _timed_runs(build, backward, repeats, probe)
    out["note"] = notes[0]
    return out


def _deep_limit(steps):
    return 2 * operation_count(steps) + 10_000  # deeper than any path through the graph


def work_autograd(steps, repeats):
    import autograd.numpy as anp
    from autograd import make_vjp

    def f(v):
        return program(v[0], v[1], v[2], steps, lambda t: anp.maximum(t, 0.0))

    def backward(built):
        vjp, value = built
        return float(value), [float(d) for d in vjp(1.0)]

    return _timed_runs(lambda: make_vjp(f)(anp.array(INPUTS)), backward, repeats)


def work_jax(steps, repeats):
    """JAX: ``jit(value_and_grad(f))`` of the unrolled program.  The first call
    traces the Python loop and compiles it with XLA (``first_s``); later calls
    at new points run the compiled code (``median_s``, the steady state)."""
    import jax

    jax.config.update("jax_enable_x64", True)  # float64, as every other method here
    import jax.numpy as jnp

    def f(v):
        return program(v[0], v[1], v[2], steps, lambda t: jnp.maximum(t, 0.0))

    gradient = jax.jit(jax.value_and_grad(f))
    start = time.perf_counter()
    value, grad = gradient(jnp.array(INPUTS))
    grad.block_until_ready()
    first = time.perf_counter() - start
    times = []
    for i in range(max(3, repeats)):
        point = jnp.array(INPUTS) * (1.0 + 1e-3 * (i + 1))  # a new point: no cached result
        start = time.perf_counter()
        gradient(point)[1].block_until_ready()
        times.append(time.perf_counter() - start)
    return {"first_s": first, "median_s": statistics.median(times), "build_s": None,
            "backward_s": None, "cpu_s": None,
            "result": (float(value), [float(d) for d in grad])}


def work_minirad_repeated(steps, repeats):
    """minirad's first and steady-state gradient: it compiles nothing, so every
    gradient at a new point is a new trace and sweep."""
    out = work_minirad(steps, repeats)
    out["first_s"] = out["median_s"]
    return out


WORKERS = {"floats": work_floats, "minirad": work_minirad, "micrograd": work_micrograd,
           "autograd": work_autograd, "jax": work_jax, "minirad_jax": work_minirad_repeated}
METHODS = {"floats": "plain floats (floor)", "minirad": "minirad trace + reverse_sweep",
           "micrograd": "micrograd build + backward", "autograd": "autograd make_vjp + vjp",
           "jax": "jax jit(value_and_grad)", "minirad_jax": "minirad trace + reverse_sweep"}
PACKAGES = {"micrograd": "micrograd", "autograd": "autograd", "jax": "jax"}
# the main table: (worker, gc on?); micrograd's headline row is its best
# configuration, with the collector off (its graph is reference cycles that the
# collector walks again and again while it grows); the default is shown too
MAIN = (("floats", True), ("minirad", True), ("micrograd", False), ("micrograd", True),
        ("autograd", True))
NO_GC_WORKERS = ("minirad", "micrograd")
BENCHMARK_HUGE = "trace + gradient, 10^7 operations"
HUGE = 10_000_000
BENCHMARK_JAX = "unrolled scalar program: first gradient and steady state"
JAX_SIZES = (300, 1_000)
QUICK_JAX_SIZES = (100,)


# ------------------------------------------------------------------ harness
def _timeout(size, repeats):
    return 60 + 4e-4 * size * (repeats + 1)  # many times the slowest peer's (autograd) time


def _repeats(size, quick):
    if quick:
        return 3
    return 1 if size >= 1_000_000 else (3 if size >= 100_000 else 5)


def method_name(name, gc_enabled, benchmark=BENCHMARK):
    if name == "micrograd" and benchmark == BENCHMARK:
        return METHODS[name] + (", gc on (default)" if gc_enabled else ", gc off (best)")
    return METHODS[name]


def _measure(name, size, quick, gc_enabled=True, benchmark=None, timeout=None):
    """One table row for one method at one size."""
    steps, repeats = steps_for(size), _repeats(size, quick)
    benchmark = benchmark or (BENCHMARK if gc_enabled else BENCHMARK_NO_GC)
    method = method_name(name, gc_enabled, benchmark)
    row = {"benchmark": benchmark, "size": size, "method": method, "median_s": None,
           "repeats": repeats, "ops": operation_count(steps)}
    package = PACKAGES.get(name)
    if package and version(package) is None:
        return {**skipped_row(benchmark, size, method, package), "ops": row["ops"]}
    args = ["--worker", name, "--steps", str(steps), "--repeats", str(repeats)]
    out = run_worker("bench.bench_trace", args + ([] if gc_enabled else ["--no-gc"]),
                     timeout or _timeout(size, repeats))
    if "status" in out:
        return {**row, "status": out["status"]}
    row.update(median_s=out["median_s"], build_s=out["build_s"], backward_s=out["backward_s"],
               cpu_s=out["cpu_s"], status="ok", result=out["result"])
    if "first_s" in out:
        row["first_gradient_s"] = out["first_s"]
    if "peak_rss_mb" in out:
        row["peak_rss_mb"] = out["peak_rss_mb"]
    if out.get("note"):
        row["note"] = out["note"]
    if out.get("ops", row["ops"]) != row["ops"]:  # minirad counts the vertices it traced
        row["note"] = f"traced {out['ops']:,} operations, expected {row['ops']:,}"
    return row


def _check_agreement(rows):
    """Every library's value must match plain floats', and its gradient minirad's."""
    results = [row.pop("result", None) for row in rows]
    by_method = {row["method"]: result for row, result in zip(rows, results) if result}
    floor = by_method.get(METHODS["floats"])
    mine = by_method.get(METHODS["minirad"])
    if floor is None and mine is not None:  # no floor row: values are checked against minirad's
        floor = mine
    for row, result in zip(rows, results):
        if result is None:
            continue
        value, grad = result[0], result[1]
        problems = []
        if floor is not None and not _close([value], [floor[0]]):
            problems.append(f"value {value!r} differs from plain floats' {floor[0]!r}")
        if grad is not None and mine is not None:
            row["grad agrees"] = _close(grad, mine[1])
            if not row["grad agrees"]:
                problems.append(f"gradient {grad} differs from minirad's {mine[1]}")
        if problems:
            row["status"] = "error: " + "; ".join(problems)


def _close(a, b):
    return len(a) == len(b) and all(
        math.isclose(x, y, rel_tol=TOLERANCE, abs_tol=1e-12) for x, y in zip(a, b))


def run(quick: bool = False) -> list[dict]:
    sizes = QUICK_SIZES if quick else SIZES
    rows = []
    for size in sizes:
        group = [_measure(name, size, quick, gc_enabled, benchmark=BENCHMARK)
                 for name, gc_enabled in MAIN]
        _check_agreement(group)
        rows += group
    # the same with Python's cyclic garbage collector off: how much of each
    # tracer's time is the collector walking the objects it keeps alive
    for size in sizes:
        group = [_measure(name, size, quick, gc_enabled=False) for name in NO_GC_WORKERS]
        _check_agreement(group)
        rows += group
    # JAX compiles the unrolled program once, then runs it at any point;
    # minirad compiles nothing and traces again at every new point
    for size in QUICK_JAX_SIZES if quick else JAX_SIZES:
        group = [_measure(name, size, quick, benchmark=BENCHMARK_JAX,
                          timeout=None if name == "minirad_jax" else 600)
                 for name in ("minirad_jax", "jax")]
        _check_agreement(group)
        rows += group
    if not quick:  # the scale goal: 10^7 operations in under a minute and 4 GB
        group = [_measure("minirad", HUGE, quick, benchmark=BENCHMARK_HUGE, timeout=600)]
        rows += group
        group[0].pop("result", None)
    return rows


def goals(rows: list[dict]) -> list[dict]:
    """Issue 16's goals for tracing, read off this group's rows.  Its goal "tracing alone
    at most 15x plain floats" is retired (issue 30): a tracer that records by Python
    operator overloading cannot reach it (bench/README.md, "Where tracing's time goes")."""
    size = 100_000
    best = method_name("micrograd", False)
    huge = find_row(rows, BENCHMARK_HUGE, HUGE, METHODS["minirad"])
    return [
        goal("trace + gradient, 10^5 ops, vs micrograd gc off (best)",
             time_ratio(rows, BENCHMARK, size, METHODS["minirad"], best), 0.3),
        goal("trace + gradient, 10^5 ops, vs micrograd gc on (default)",
             time_ratio(rows, BENCHMARK, size, METHODS["minirad"],
                        method_name("micrograd", True)), 0.3),
        goal("trace + gradient, 10^7 ops: seconds",
             None if huge is None else huge["median_s"], 60.0, " s"),
        goal("trace + gradient, 10^7 ops: peak memory",
             None if huge is None else huge.get("peak_rss_mb", 0) / 1024, 4.0, " GB"),
    ]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small size")
    parser.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--no-gc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:  # inside a worker process: one JSON line on stdout
        if args.no_gc:
            gc.disable()
        out = WORKERS[args.worker](args.steps, args.repeats)
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(out))
        return
    print_results(run(quick=args.quick))


if __name__ == "__main__":
    main()
