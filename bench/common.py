"""Shared pieces of the benchmarks: timing, peer detection, subprocess workers,
the machine description and the results table.

A benchmark module ``bench/bench_<group>.py`` exposes ``run(quick=False)``
returning a list of row dicts.  Every row has

* ``benchmark``: the name of a comparison (rows with the same benchmark and
  size are compared with each other),
* ``size``: the problem size (a number or a short label),
* ``method``: what was timed (``"minirad ..."``, a peer's name, ``"plain floats"``),
* ``median_s``: the median wall time in seconds, or ``None`` when nothing ran,

and optionally ``status`` (``"ok"``, ``"skipped (not installed)"``,
``"not run: ..."``, ``"not built yet"``, ``"error: ..."``, ``"failed: ..."``,
``"timeout ..."``), ``note``, ``repeats``,
``baseline`` (True marks the row that ratios in its group are taken against;
by default the first timed row whose method starts with "minirad") and any
extra columns, which the table shows as they are.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent

SKIPPED = "skipped (not installed)"
#: the status of a method that does not exist yet (replay, issue 30)
NOT_BUILT = "not built yet"

# the columns every table starts with; the rest are a module's extra columns
_FIXED = ("benchmark", "size", "method", "median_s", "ratio", "status", "note",
          "baseline", "repeats")


# ------------------------------------------------------------------ timing
def median_time(fn, repeats: int) -> tuple[float, object]:
    """Median wall time of ``fn()`` over ``repeats`` calls, and the last call's result.

    The garbage of one call is collected before the next starts, so it is not
    billed to it.
    """
    times, result = [], None
    for _ in range(max(1, repeats)):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


@contextlib.contextmanager
def frozen_heap():
    """Leave what is alive now out of every garbage collection until the block ends.

    Once PyTorch and JAX are imported, a full collection walks their millions of objects
    (half a second each on the loaded 2-core machine); frozen, neither the collections
    between timed calls nor those the collector starts inside one walk them again.
    The peers' tables (:func:`in_turns`) time this way; :func:`median_time` does not,
    so the older groups measure as they always have.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@dataclass
class Turns:
    """What :func:`in_turns` measured, by step name: the first call's seconds and result,
    the median and the minimum of the rounds after it, and the error of a step that
    raised (that step is left out of everything else)."""

    first_s: dict = field(default_factory=dict)
    first_result: dict = field(default_factory=dict)
    median_s: dict = field(default_factory=dict)
    min_s: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)


def in_turns(steps: dict, repeats: int) -> Turns:
    """Time each step's first call (one after another), then ``repeats`` rounds in which
    every step runs once (A, B, C, A, B, C, ...), the garbage of one call collected
    before the next starts.

    The first call is reported apart: it is where JAX compiles and PyTorch warms up.
    Timing in turns makes load from other work on the machine fall on every step alike,
    so their ratios mean something even when the seconds do not.
    """
    turns, times = Turns(), {}
    with frozen_heap():
        _time_in_turns(steps, repeats, turns, times)
    turns.median_s = {name: statistics.median(t) for name, t in times.items()}
    turns.min_s = {name: min(t) for name, t in times.items()}
    return turns


def _time_in_turns(steps: dict, repeats: int, turns: Turns, times: dict) -> None:
    for name, step in steps.items():
        gc.collect()
        start = time.perf_counter()
        try:
            turns.first_result[name] = step()
        except Exception as error:  # noqa: BLE001 - a failing peer becomes an error row
            turns.errors[name] = f"{type(error).__name__}: {str(error)[:200]}"
            continue
        turns.first_s[name] = time.perf_counter() - start
        times[name] = []
    for _ in range(max(1, repeats)):
        for name in times:
            gc.collect()
            start = time.perf_counter()
            steps[name]()
            times[name].append(time.perf_counter() - start)


@contextlib.contextmanager
def one_blas_thread():
    """numpy's BLAS on one thread while timing, when threadpoolctl is installed: on a
    shared 2-core machine a multithreaded BLAS waits for its slowest thread, and those
    waits, not the work, then dominate the times.  Yields a description."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield "threads as configured (threadpoolctl not installed)"
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield "limited to 1 thread"


# ------------------------------------------------------------------- peers
def version(package: str) -> str | None:
    """Installed version of a distribution, or None when it is not installed."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def skipped_row(benchmark: str, size, method: str, package: str) -> dict:
    """The row of a peer that is not installed: shown, never silently dropped."""
    return {"benchmark": benchmark, "size": size, "method": method, "median_s": None,
            "status": SKIPPED, "note": f"pip install {package} (or pip install -e .[bench])"}


def run_worker(module: str, args: list[str], timeout: float) -> dict:
    """Run ``python -m <module> <args>`` and parse the JSON line it prints last.

    Peers whose deep recursion may kill the interpreter, or that may take
    forever, run here: a crash or a timeout becomes a status, not our crash.
    Returns the worker's dict, or ``{"status": "..."}`` describing the failure.
    """
    command = [sys.executable, "-m", module, *args]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_DIR), env.get("PYTHONPATH")]))
    try:
        done = subprocess.run(command, cwd=REPO_DIR, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout (> {timeout:.0f} s)"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode == 0 and lines:
        return json.loads(lines[-1])
    if done.returncode < 0:
        return {"status": f"crashed (signal {-done.returncode})"}
    last = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": f"error: worker exited with code {done.returncode}: {last[:200]}"}


# ----------------------------------------------------------------- machine
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def memory_gib() -> str:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def machine() -> list[tuple[str, str]]:
    """What the numbers depend on, as (label, value) pairs."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    rows = [("CPU", cpu_model()),
            ("cores", f"{os.cpu_count()} ({usable} usable by this process)"),
            ("memory", memory_gib()),
            ("OS", platform.platform()),
            ("Python", f"{platform.python_version()} ({platform.python_implementation()})")]
    for package in ("minirad", "numpy", "scipy", "networkx", "micrograd", "autograd", "jax",
                    "torch"):
        rows.append((package, version(package) or "not installed"))
    return rows


# ------------------------------------------------------------------- table
def add_ratios(rows: list[dict]) -> None:
    """Set ``ratio`` = median / baseline median within each (benchmark, size).

    The baseline is the row flagged ``baseline``, else the first timed row whose
    method starts with "minirad".  A ratio above 1 means slower than the baseline.
    """
    groups: dict = {}
    for row in rows:
        groups.setdefault((row.get("benchmark"), str(row.get("size"))), []).append(row)
    for group in groups.values():
        timed = [r for r in group if _timed(r)]
        flagged = [r for r in timed if r.get("baseline")]
        mine = [r for r in timed if str(r.get("method", "")).lower().startswith("minirad")]
        base = (flagged or mine or [None])[0]
        for row in group:
            if base is not None and _timed(row) and base["median_s"] > 0:
                row["ratio"] = row["median_s"] / base["median_s"]


def _timed(row: dict) -> bool:
    return isinstance(row.get("median_s"), (int, float)) and row.get("status", "ok") == "ok"


def status(row: dict) -> str:
    if "status" in row:
        return str(row["status"])
    return "ok" if _timed(row) else "no time reported"


def format_seconds(x) -> str:
    if not isinstance(x, (int, float)):
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 1e-3:
        return f"{x:.3g}" if x < 1 else f"{x:.2f}"
    return f"{x:.2e}"


def _ratio(ratio) -> str:
    if not isinstance(ratio, float):
        return "-"
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return format_seconds(value) if abs(value) < 1e6 else f"{value:.3e}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) < 10**15 else str(value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_tables(rows: list[dict]) -> str:
    """One markdown table per benchmark, rows in the order they were produced."""
    benchmarks: dict[str, list[dict]] = {}
    for row in rows:
        benchmarks.setdefault(str(row.get("benchmark", "?")), []).append(row)
    out = []
    for name, group in benchmarks.items():
        extra = []
        for row in group:
            extra += [k for k in row if k not in _FIXED and k not in extra]
        header = ["size", "method", "median s", "vs baseline", "status"] + extra + ["note"]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in group:
            ratio = row.get("ratio")
            cells = [_cell(row.get("size")), _cell(row.get("method")),
                     format_seconds(row.get("median_s")),
                     _ratio(ratio),
                     _cell(status(row))]
            cells += [_cell(row.get(k)) for k in extra]
            cells.append(_cell(row.get("note", "")) if row.get("note") else "")
            lines.append("| " + " | ".join(cells) + " |")
        out.append(f"### {name}\n\n" + "\n".join(lines))
    return "\n\n".join(out) + "\n"


def print_results(rows: list[dict]) -> None:
    """Ratios and tables of one group's rows, as a standalone ``python -m bench.bench_<group>``
    prints them."""
    add_ratios(rows)
    print(markdown_tables(rows))


# ------------------------------------------------------------------- goals
# A group may define ``goals(rows) -> list[dict]``: the targets of issues 13, 16 and 30,
# read off its own rows after a run (``python -m bench --check`` prints them).
def find_row(rows: list[dict], benchmark: str, size, method: str) -> dict | None:
    """The timed row of one (benchmark, size, method), or None."""
    for row in rows:
        if (row.get("benchmark") == benchmark and str(row.get("size")) == str(size)
                and row.get("method") == method and _timed(row)):
            return row
    return None


def goal(name: str, value, limit: float, unit: str = "x", *, at_most: bool = True,
         missing: str = "not measured") -> dict:
    """One goal: ``value`` (None when not measured) against ``limit``."""
    if value is None:
        return {"goal": name, "value": None, "limit": limit, "unit": unit, "at_most": at_most,
                "verdict": missing}
    passed = value <= limit if at_most else value >= limit
    return {"goal": name, "value": value, "limit": limit, "unit": unit, "at_most": at_most,
            "verdict": "PASS" if passed else "FAIL"}


def time_ratio(rows, benchmark, size, numerator: str, denominator: str) -> float | None:
    """median_s of one method over another's, at one size; None unless both ran."""
    a, b = (find_row(rows, benchmark, size, m) for m in (numerator, denominator))
    if a is None or b is None or not b["median_s"]:
        return None
    return a["median_s"] / b["median_s"]


def ratio_goal(rows, name: str, benchmark: str, size, method: str, against: str,
               limit: float) -> dict:
    """``method``'s median over ``against``'s at one size, at most ``limit``.  Not measured
    when either did not run at that size; ``not built yet`` when the benchmark shows
    either as not built."""
    built = all(r.get("status") != NOT_BUILT for r in rows
                if r.get("benchmark") == benchmark and r.get("method") in (method, against))
    return goal(name, time_ratio(rows, benchmark, size, method, against), limit,
                missing="not measured" if built else NOT_BUILT)


def goals_table(goals: list[dict]) -> str:
    lines = ["| goal | measured | target | verdict |", "|---|---|---|---|"]
    for g in goals:
        value = g["value"]
        shown = "-" if value is None else (f"{value:.3g}{g['unit']}")
        target = f"{'<=' if g.get('at_most', True) else '>='} {g['limit']:g}{g['unit']}"
        lines.append(f"| {g['goal']} | {shown} | {target} | {g['verdict']} |")
    return "\n".join(lines) + "\n"
