"""Grading in parallel: ``minirad lab grade`` on 20 submissions, one at a time and two at once.

Issue 40's goal: 20 submissions graded in parallel on 2 cores within the time of grading
them one after another divided by 1.6.  Every submission is Lab 2's solutions notebook
(a student id of its own, so each draws its own hidden cases), graded through
:func:`minirad.labs.grading.grade`, the function the command calls, with ``jobs=1`` and
``jobs=2`` in turns (serial, parallel, serial, parallel: load from other work falls on both).
Each run's wall time, its CPU time (the grader's own and its sandboxes' and kernels', which
it waits for), the grader's own CPU time (its threads share one interpreter: the part that
does not run in parallel) and the 1-minute load average at its start are columns of the
row; the median is over the runs.  Every run must give each submission full marks, else the row is
an error.

    python -m bench --only grading --check      # 20 submissions, 2 runs each
    python -m bench.bench_grading --quick       # 2 submissions, 1 run each
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from bench.common import REPO_DIR, goal, print_results, time_ratio
from minirad.labs import grading, notebook

BENCHMARK = "grading Lab 2 solutions"
SERIAL = "minirad lab grade --jobs 1"
PARALLEL = "minirad lab grade --jobs 2"
SECRET = b"the benchmark's own secret, 32 bytes"
#: issue 40: parallel time at most serial time / 1.6
SPEEDUP = 1.6


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process (the grader) and of the children it waited for."""
    return tuple(usage.ru_utime + usage.ru_stime for usage in
                 (resource.getrusage(resource.RUSAGE_SELF),
                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def _grade_once(paths: list[Path], out: Path, jobs: int) -> tuple[float, float, float, float]:
    """(wall s, CPU s in all, CPU s of the grader's own process, 1-minute load at the
    start) of one grading of ``paths``."""
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    (own, waited), began = _cpu_seconds(), time.perf_counter()
    reports = grading.grade(paths, out, jobs=jobs, secret=SECRET)
    wall, (own_after, waited_after) = time.perf_counter() - began, _cpu_seconds()
    own, cpu = own_after - own, own_after - own + waited_after - waited
    short = [f"{r.student}: {grading.summary(r)}" for r in reports
             if r.error or r.total != r.max_total]
    if short:
        raise RuntimeError(f"a solutions notebook lost points: {short[0]}")
    return wall, cpu, own, load


def run(quick: bool = False) -> list[dict]:
    count, rounds = (2, 1) if quick else (20, 2)
    folder = Path(tempfile.mkdtemp(prefix="minirad-bench-grading-"))
    try:
        solved = nbformat.writes(notebook.to_notebook(REPO_DIR / "tutorials" / "lab2_lcg.py",
                                                      solutions=True))
        paths = []
        for i in range(count):
            paths.append(folder / f"lab2_lcg-student{i + 1:02d}.ipynb")
            paths[-1].write_text(solved, encoding="utf-8")
        runs = {SERIAL: [], PARALLEL: []}
        for _ in range(rounds):
            for method, jobs in ((SERIAL, 1), (PARALLEL, 2)):
                runs[method].append(_grade_once(paths, folder / "grades", jobs))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    rows = []
    for method, measured in runs.items():
        walls = [w for w, *_ in measured]
        rows.append({"benchmark": BENCHMARK, "size": f"{count} submissions", "method": method,
                     "median_s": statistics.median(walls), "repeats": len(walls),
                     "baseline": method == SERIAL,
                     "runs_s": " ".join(f"{w:.1f}" for w in walls),
                     "cpu_s": " ".join(f"{c:.1f}" for _, c, _, _ in measured),
                     "grader_cpu_s": " ".join(f"{g:.1f}" for _, _, g, _ in measured),
                     "load_at_start": " ".join(f"{x:.1f}" for *_, x in measured),
                     "cores": len(os.sched_getaffinity(0))})
    return rows


def goals(rows: list[dict]) -> list[dict]:
    """Issue 40's goal: parallel grading of 20 submissions within serial / 1.6."""
    return [goal(f"20 submissions: --jobs 2 vs --jobs 1 (<= 1/{SPEEDUP:g})",
                 time_ratio(rows, BENCHMARK, "20 submissions", PARALLEL, SERIAL),
                 round(1 / SPEEDUP, 4))]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 submissions, one run each")
    print_results(run(quick=parser.parse_args().quick))
