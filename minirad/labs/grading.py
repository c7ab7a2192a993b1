"""Grade student submissions: each in a fresh Jupyter kernel, every exercise checked by the grader.

``minirad lab grade SUBMISSION... -o DIR`` calls :func:`grade`.  For each
submission (a handout notebook the student filled in, or a lab script):

1. the lab is read from the notebook's metadata (``minirad.source``, which
   the handout carries) or else from the file name (``lab2...``);
2. a fresh kernel, in an empty working folder, runs the submission's code
   cells in order, each under a time limit, errors allowed, skipping the
   cells that only call ``labs.check_...``: what the student printed or
   checked is ignored, only the definitions are kept;
3. for every exercise of the lab the grader runs the exercise's check
   itself (one cell each, under the time limit declared with the check),
   with the reference guard on (:mod:`minirad.labs.exercise`), and records
   points, a status and the message the student would have seen;
4. a kernel that dies (the student's code exits it) is replaced by a fresh
   one, which reruns the definitions without the cell that killed it and
   goes on with the exercises left; past the limit for the whole notebook
   the kernel is killed and the exercises left score 0.

An exercise scores its points when its check passes and 0 otherwise, with
one of the statuses ``passed``, ``wrong answer``, ``raised``, ``timed
out``, ``used the reference``, ``not implemented``, ``missing`` or ``kernel
died``.  :func:`write_reports` writes ``scores.csv`` (a row per submission,
a column per exercise), ``<name>.json`` per submission (every message) and
``<name>.results.json`` in Gradescope's autograder format.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import asdict, dataclass, field

from ..graph.files import write_atomically
from .exercise import EXERCISES, Exercise, exercises_of_lab

__all__ = ["ExerciseScore", "Report", "grade", "grade_in_kernel", "grade_submission",
           "identify_lab", "write_reports"]

STATUSES = ("passed", "wrong answer", "raised", "timed out", "used the reference",
            "not implemented", "missing", "kernel died")
NOTEBOOK_SECONDS = 1200.0  # the whole submission: definitions and every check
CELL_SECONDS = 180.0       # one cell of the student's
MARGIN = 30.0              # a check cell's kernel-side limit is the exercise's plus this
GRACE = 5.0                # a kernel still busy this long after its interrupt is killed


@dataclass
class ExerciseScore:
    """One exercise of one submission."""

    number: str
    title: str
    points: float
    max_points: float
    status: str
    message: str = ""


@dataclass
class Report:
    """One submission: its lab, a score per exercise, and why it was not graded (if so)."""

    submission: str
    lab: int | None
    scores: list[ExerciseScore] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    executed: object = field(default=None, repr=False)  # the first kernel's cells and outputs

    @property
    def total(self) -> float:
        return sum(score.points for score in self.scores)

    @property
    def max_total(self) -> float:
        return sum(score.max_points for score in self.scores)


# ------------------------------------------------------------ the kernel side
def grade_in_kernel(number: str, namespace: dict, out_path: str, stub_present: bool,
                    seconds: float | None = None) -> dict:
    """Run exercise ``number``'s check on the definitions in ``namespace``; write the
    outcome as JSON to ``out_path`` and return it.  Runs inside the student's kernel."""
    from .checking import CheckFailed, time_limit

    spec = EXERCISES[number]
    limit = spec.seconds if seconds is None else seconds
    missing = [name for name in spec.takes if name not in namespace]
    if missing:
        status = "not implemented" if stub_present else "missing"
        message = (f"{spec.label}: the exercise's stub is still there"
                   if stub_present else
                   f"{spec.label}: your notebook defines no {missing[0]!r}, which the check "
                   f"takes")
    else:
        status, message = "passed", ""
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()), \
                    time_limit(limit, f"Exercise {number} ({spec.title})",
                               " (the grader's limit for the whole exercise)"):
                spec.check(*[namespace[name] for name in spec.takes])
        except NotImplementedError as error:
            status, message = "not implemented", str(error)
        except CheckFailed as failure:
            status, message = failure.reason, str(failure)
        except KeyboardInterrupt:
            status, message = "timed out", (f"Exercise {number}: stopped after the grader's "
                                            f"limit of {limit:g} s")
        except BaseException as error:  # SystemExit and the like: the student's code did it
            status, message = "raised", f"Exercise {number}: {type(error).__name__}: {error}"
    outcome = {"number": number, "status": status, "message": message}
    text = json.dumps(outcome)
    write_atomically(out_path, lambda f: f.write(text.encode("utf-8")))
    return outcome


# -------------------------------------------------------------- the host side
def identify_lab(nb, path: str) -> int | None:
    """The lab number of a submission: from its metadata, else from its file name.

    >>> identify_lab({"metadata": {"minirad": {"source": "lab3_bauer.py"}}}, "x.ipynb")
    3
    >>> identify_lab({"metadata": {}}, "submissions/lab10_injection-ada.ipynb")
    10
    >>> identify_lab({"metadata": {}}, "homework.ipynb") is None
    True
    """
    source = nb.get("metadata", {}).get("minirad", {}).get("source", "")
    for name in (source, os.path.basename(path)):
        match = re.match(r"lab(\d+)", str(name))
        if match:
            return int(match.group(1))
    return None


def _is_check_cell(source: str) -> bool:
    """A cell that only calls ``labs.check_...(...)``: the student's own checking."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False

    def is_check(node) -> bool:
        name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
        return name.startswith("check_")

    return bool(tree.body) and all(isinstance(statement, ast.Expr)
                                   and isinstance(statement.value, ast.Call)
                                   and is_check(statement.value.func)
                                   for statement in tree.body)


def _code_cells(nb) -> list[str]:
    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if source.strip() and not _is_check_cell(source):
            cells.append(source)
    return cells


def _kill(client) -> None:
    """Kill the kernel process at once (the watchdog's last resort)."""
    km = getattr(client, "km", None)
    provisioner = getattr(km, "provisioner", None)
    process = getattr(provisioner, "process", None)
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGKILL)


class Unresponsive(Exception):
    """The kernel went on past a cell's limit and its interrupt, and was killed."""


class _Kernel:
    """One fresh kernel, driven cell by cell; shut down (or killed) on leaving."""

    def __init__(self, folder: str, env: dict):
        from nbclient import NotebookClient
        from nbformat import v4

        self.v4 = v4
        self.nb = v4.new_notebook()
        self.client = NotebookClient(
            self.nb, timeout=CELL_SECONDS, kernel_name="python3", allow_errors=True,
            interrupt_on_timeout=True, iopub_timeout=5, shutdown_kernel="immediate",
            error_on_timeout={"ename": "TimeoutError", "evalue": "cell timed out",
                              "traceback": []},
            resources={"metadata": {"path": folder}})
        self.env = env
        self._context = None

    def __enter__(self):
        self._context = self.client.setup_kernel(env=self.env)
        self._context.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self._context.__exit__(None, None, None)
        except Exception:  # noqa: BLE001  (a dead kernel may refuse a clean shutdown)
            _kill(self.client)
        return False

    def run(self, source: str, seconds: float) -> dict:
        started = time.monotonic()
        cell = self._execute(source, seconds)
        if time.monotonic() - started >= max(int(seconds), 1):   # stopped at its limit
            probe = self._execute("pass", GRACE)
            self.nb.cells.remove(probe)
            if probe.get("execution_count") is None:
                # the student's code ignores the interrupt (SIGINT, SIGALRM): every later
                # cell would wait behind it until the notebook's limit, so it is killed
                _kill(self.client)
                raise Unresponsive(f"the kernel ignored the interrupt after {seconds:g} s")
        return cell

    def _execute(self, source: str, seconds: float) -> dict:
        cell = self.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        self.client.timeout = max(int(seconds), 1)
        self.client.execute_cell(cell, len(self.nb.cells) - 1)
        return cell


def _kernel_env(folder: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "MPLBACKEND"}
    env["MINIRAD_LAB_OUTPUT"] = os.path.join(folder, "pictures")
    env["MPLBACKEND"] = "Agg"
    return env


def grade_submission(path, notebook_seconds: float = NOTEBOOK_SECONDS,
                     exercise_seconds: float | None = None,
                     cell_seconds: float = CELL_SECONDS) -> Report:
    """Grade one submission (see the module's docstring); never raises for what the
    student did.  ``exercise_seconds`` overrides every exercise's declared limit;
    ``cell_seconds`` limits each of the student's cells."""
    from nbclient.exceptions import DeadKernelError

    from .notebook import read_submission

    path = os.fspath(path)
    started = time.monotonic()
    report = Report(submission=path, lab=None)
    try:
        nb = read_submission(path)
    except Exception as error:  # noqa: BLE001  (any unreadable file is the student's)
        report.error = f"could not read the submission: {type(error).__name__}: {error}"
        return report
    report.lab = identify_lab(nb, path)
    specs = exercises_of_lab(report.lab) if report.lab is not None else []
    if not specs:
        report.error = ("could not tell which lab this is (no minirad metadata, and the file "
                        "name does not start with labN)")
        return report
    cells = _code_cells(nb)
    text = "\n".join(cells)
    results: dict[str, dict] = {}
    skipped: set[int] = set()
    deadline = started + notebook_seconds
    folder = tempfile.mkdtemp(prefix="minirad-grade-")
    try:
        pending = list(specs)
        for _attempt in range(len(cells) + len(specs) + 1):
            if not pending or time.monotonic() >= deadline:
                break
            current = None
            with _Kernel(folder, _kernel_env(folder)) as kernel:
                if report.executed is None:
                    report.executed = kernel.nb
                watchdog = threading.Timer(max(deadline - time.monotonic(), 0.0), _kill,
                                           (kernel.client,))
                watchdog.daemon = True
                watchdog.start()
                try:
                    for index, source in enumerate(cells):
                        if index in skipped:
                            continue
                        current = ("cell", index)
                        kernel.run(source, min(cell_seconds, deadline - time.monotonic() + 1))
                    kernel.run("from minirad.labs.grading import grade_in_kernel as "
                               "_minirad_grade_in_kernel", 60)
                    while pending:
                        spec = pending[0]
                        current = ("exercise", spec)
                        limit = spec.seconds if exercise_seconds is None else exercise_seconds
                        out = os.path.join(folder, f"exercise-{spec.number}.json")
                        stub = f'NotImplementedError("{spec.label}")' in text
                        kernel.run(f"_minirad_grade_in_kernel({spec.number!r}, globals(), "
                                   f"{out!r}, {stub!r}, {limit!r})", limit + MARGIN)
                        results[spec.number] = _read_outcome(out, spec, limit)
                        pending.pop(0)
                except (DeadKernelError, Unresponsive) as error:
                    if time.monotonic() >= deadline - 0.5:
                        break
                    if current and current[0] == "cell":
                        skipped.add(current[1])
                    elif current:
                        spec = current[1]
                        results[spec.number] = {
                            "status": "kernel died",
                            "message": f"{spec.label}: the kernel died while the check ran "
                                       f"(your code exited it or crashed it)"}
                        if isinstance(error, Unresponsive):
                            results[spec.number] = {
                                "status": "timed out",
                                "message": f"{spec.label}: stopped after the grader's limit of "
                                           f"{limit:g} s; your code ignored the interrupt, so "
                                           f"its kernel was killed"}
                        pending.remove(spec)
                finally:
                    watchdog.cancel()
        for spec in specs:
            results.setdefault(spec.number, {
                "status": "timed out",
                "message": f"{spec.label}: not graded, the notebook ran longer than its limit "
                           f"of {notebook_seconds:g} s"})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for spec in specs:
        outcome = results[spec.number]
        points = spec.points if outcome["status"] == "passed" else 0
        report.scores.append(ExerciseScore(spec.number, spec.title, points, spec.points,
                                           outcome["status"], outcome["message"]))
    report.seconds = time.monotonic() - started
    return report


def _read_outcome(path: str, spec: Exercise, limit: float) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            outcome = json.load(f)
        os.remove(path)
        return outcome
    except (OSError, ValueError):
        return {"status": "timed out",
                "message": f"{spec.label}: the check was stopped after the grader's limit of "
                           f"{limit:g} s (or the student's code removed its result)"}


# ------------------------------------------------------------------ reports
def _stem(path: str, taken: set) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.splitext(os.path.basename(path))[0]) or "x"
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    taken.add(name)
    return name


def gradescope_results(report: Report) -> dict:
    """The submission's report in Gradescope's autograder format (``results.json``)."""
    tests = [{"name": f"Exercise {s.number}: {s.title}", "number": s.number,
              "score": s.points, "max_score": s.max_points,
              "status": "passed" if s.status == "passed" else "failed",
              "output": s.message or "passed"} for s in report.scores]
    result = {"score": report.total, "tests": tests,
              "execution_time": round(report.seconds, 1)}
    if report.error:
        result["output"] = report.error
    return result


def write_reports(reports: list[Report], out_dir) -> list[str]:
    """Write ``scores.csv``, ``<name>.json`` and ``<name>.results.json`` into ``out_dir``."""
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    numbers = sorted({s.number for r in reports for s in r.scores},
                     key=lambda n: tuple(int(part) for part in n.split(".")))
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["submission", "lab", "total", "max", *numbers, "note"])
    written, taken = [], set()
    for report in reports:
        by_number = {s.number: s.points for s in report.scores}
        writer.writerow([report.submission, report.lab if report.lab is not None else "",
                         f"{report.total:g}", f"{report.max_total:g}",
                         *[f"{by_number[n]:g}" if n in by_number else "" for n in numbers],
                         report.error])
        stem = _stem(report.submission, taken)
        document = {"submission": report.submission, "lab": report.lab,
                    "total": report.total, "max": report.max_total, "error": report.error,
                    "seconds": round(report.seconds, 1),
                    "exercises": [asdict(s) for s in report.scores]}
        for name, content in ((f"{stem}.json", document),
                              (f"{stem}.results.json", gradescope_results(report))):
            target = os.path.join(out_dir, name)
            text = json.dumps(content, indent=1) + "\n"
            write_atomically(target, lambda f, text=text: f.write(text.encode("utf-8")))
            written.append(target)
    target = os.path.join(out_dir, "scores.csv")
    text = table.getvalue()
    write_atomically(target, lambda f: f.write(text.encode("utf-8")))
    return [target, *written]


def grade(submissions, out_dir, notebook_seconds: float = NOTEBOOK_SECONDS,
          exercise_seconds: float | None = None, cell_seconds: float = CELL_SECONDS,
          progress=None) -> list[Report]:
    """Grade every submission in turn and write the reports into ``out_dir``."""
    paths = [os.fspath(p) for p in submissions]
    for path in paths:
        if not os.path.isfile(path):
            raise ValueError(f"no such submission: {path}")
    reports = []
    for path in paths:
        report = grade_submission(path, notebook_seconds, exercise_seconds, cell_seconds)
        reports.append(report)
        if progress is not None:
            progress(report)
    write_reports(reports, out_dir)
    return reports


def summary(report: Report) -> str:
    """One line per submission, for the command line."""
    if report.error:
        return f"{report.submission}: not graded: {report.error}"
    failed = [f"{s.number} {s.status}" for s in report.scores if s.status != "passed"]
    return (f"{report.submission}: {report.total:g}/{report.max_total:g}"
            + (f" ({'; '.join(failed)})" if failed else ""))

