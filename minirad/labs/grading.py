"""Grade student submissions: each run in a sandboxed kernel, every answer judged here.

``minirad lab grade SUBMISSION... -o DIR`` calls :func:`grade`.  For each
submission (a handout notebook the student filled in, or a lab script):

1. the grader reads it into memory (later changes to the file change nothing),
   tells its lab from the notebook's metadata (``minirad.source``) or its file
   name (``lab2...``), and its student from the roster or the file name;
2. it draws each exercise's hidden cases for that student
   (:func:`~minirad.labs.exercise.hidden_cases`, from the instructor's
   secret);
3. a sandbox (:mod:`minirad.labs.sandbox`) runs the submission's code cells
   in a fresh kernel under a watch (:mod:`minirad.labs.kernel`), skipping the
   cells that only call ``labs.check_...`` (what the student printed or
   checked counts for nothing), then the student's functions on each
   exercise's cases (:mod:`minirad.labs.runner`); it hands back the frames the
   watch signed, after the kernel and everything it started are gone;
4. here, in the grader's own process, the frames are verified (signature,
   order, the exercise's window opened and closed once, no use of the
   reference inside it) and each answer is judged against minirad's own
   (:mod:`minirad.labs.scoring`): points per case, by the cases' weights.

Submissions run in parallel, one sandbox per job (``jobs``, default one per
core).  When the grader runs as root and a Python exists that another user
can run, each kernel gets a user id of its own (``isolation="user"``);
otherwise kernels run as the grader's user, in sessions of their own, under
the watch's policy (``isolation="process"``).

The reports (:mod:`minirad.labs.gradebook`): ``scores.csv``, ``canvas.csv``,
``<name>.json`` per submission and ``<name>.results.json`` (Gradescope).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import hmac
import importlib.util
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import wire
from .exercise import EXERCISES, Exercise, exercises_of_lab, hidden_cases
from .gradebook import Report, Roster, late_days, read_secret, write_reports
from .sandbox import Job, Limits, font_cache, kernel_python, run
from .scoring import STATUSES, ExerciseScore, grade_answers

__all__ = ["STATUSES", "grade", "grade_submission", "identify_lab", "read_frames",
           "require_dependencies", "summary"]

#: user ids the kernels run as (isolation="user"), one per job, far above any real user's
FIRST_UID = 200_000


# ------------------------------------------------------------ the submission
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


def require_dependencies(labs) -> None:
    """Refuse to grade a lab whose exercises need a module that is not installed, naming
    the extra that installs it (``minirad[symbolic]`` for lab 11's SymPy): a student must
    never lose points to the grader's own missing dependency.

    >>> require_dependencies([1, 2])
    """
    missing = []
    for lab in sorted(set(labs)):
        for spec in exercises_of_lab(lab):
            for module, extra in spec.requires:
                if importlib.util.find_spec(module) is None:
                    missing.append(f"lab {lab} needs {module}: install it with "
                                   f"pip install \"minirad[{extra}]\"")
    if missing:
        raise ValueError("cannot grade: " + "; ".join(sorted(set(missing))))


# ------------------------------------------------------------ the frames
def read_frames(key: bytes, data: bytes) -> list[tuple[str, bytes]]:
    """The watch's frames in ``data``: ``(kind, payload)`` in order, each checked against its
    signature under ``key``.  Lines that are not frames signed with the key (whatever a
    kernel wrote into its channel by hand) are left out; the frames end at the first one
    missing from the sequence (nothing after a gap can be placed).

    >>> read_frames(b"k" * 32, b"\\nnot a frame\\n")
    []
    """
    frames, expected = [], 0
    for line in data.split(b"\n"):
        parts = line.split(b" ")
        if len(parts) != 4 or not parts[1].isdigit() or len(parts[1]) > 12:
            continue
        kind, number, mac, encoded = parts
        try:
            payload = base64.b64decode(encoded, validate=True)
        except ValueError:
            continue
        signer = hmac.new(key, kind + b" " + number + b" ", hashlib.sha256)
        signer.update(payload)
        if not hmac.compare_digest(signer.hexdigest().encode(), mac):
            continue
        if int(number) != expected:
            break
        expected += 1
        frames.append((kind.decode("ascii", "replace"), payload))
    return frames


class _Window:
    """What the frames say about one exercise."""

    def __init__(self):
        self.opened = 0
        self.closed = False
        self.answers: dict[int, object] = {}
        self.references: list[str] = []
        self.problems: list[str] = []


def _windows(frames, numbers: set, case_counts: dict) -> tuple[dict, list[str]]:
    """Each exercise's window from a run's frames, and what the policy refused."""
    windows: dict[str, _Window] = {}
    denied: list[str] = []
    current = None
    for kind, payload in frames:
        text = payload.decode("utf-8", "replace")
        if kind == "watch":
            number = text.split(" ")[0]
            window = windows.setdefault(number, _Window())
            window.opened += 1
            if window.opened > 1:
                window.problems.append("its window was opened twice")
            if current is not None and current != number:
                windows[current].problems.append(f"another window ({number}) opened inside it")
            current = number
        elif kind == "close":
            if current is None or text != current:
                target = windows.setdefault(text, _Window())
                target.problems.append("its window was closed out of turn")
            else:
                windows[current].closed = True
            current = None
        elif kind == "reference":
            number, _, name = text.partition(" ")
            windows.setdefault(number or str(current), _Window()).references.append(name)
        elif kind == "mismatch":
            windows.setdefault(text, _Window()).problems.append("its cases were asked for "
                                                                "under another exercise")
        elif kind == "denied":
            denied.append(text)
        elif kind == "data" and current is not None:
            window = windows[current]
            try:
                frame = wire.decode(payload)
                number, index, answer = frame["exercise"], frame["case"], frame["answer"]
                if number != current or type(index) is not int or not (
                        0 <= index < case_counts.get(current, 0)) or index in window.answers:
                    raise ValueError("a stray answer")
            except (ValueError, TypeError, KeyError):
                window.problems.append("an answer in its window could not be placed")
                continue
            window.answers[index] = answer
    return {n: w for n, w in windows.items() if n in numbers}, denied


def _score(spec: Exercise, cases: list, window: _Window | None, how: str,
           stub: bool) -> ExerciseScore:
    """One exercise's score from its window and how its probe cell ended."""
    if window is None:
        if how in ("died", "timed out"):
            return grade_answers(spec, cases, [None] * len(cases))
        return grade_answers(spec, cases, [None] * len(cases), override=(
            "tampered", f"{spec.label}: the grader's kernel never opened this exercise (the "
                        f"notebook replaced or stopped the grader's code)"))
    if window.references:
        return grade_answers(spec, cases, [window.answers.get(i) for i in range(len(cases))],
                             override=("used the reference",
                                       f"{spec.label}: used the reference -- your code called "
                                       f"minirad's {window.references[0]}, which computes what "
                                       f"{spec.label} asks you to write"))
    if window.problems or (not window.closed and how == "ok"):
        why = window.problems[0] if window.problems else "its window was never closed"
        return grade_answers(spec, cases, [None] * len(cases), override=(
            "tampered", f"{spec.label}: the grader's record of this exercise was tampered with "
                        f"({why})"))
    answers = []
    for i in range(len(cases)):
        answer = window.answers.get(i)
        if stub and isinstance(answer, dict) and answer.get("error") == "missing":
            answer = {"error": "not implemented",
                      "message": f"{spec.label}: the exercise's stub is still there"}
        answers.append(answer)
    score = grade_answers(spec, cases, answers)
    if how == "timed out" and score.status == "kernel died":
        score.status = "timed out"
    return score


# ------------------------------------------------------------ one submission
def _read_roots() -> list[str]:
    """What a kernel may read: Python's own folders, the installed packages, minirad."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, here, "/usr", "/etc",
             "/lib", "/lib64", "/opt"}
    roots |= {p for p in sys.path if p and os.path.isdir(p)}
    return sorted(os.path.realpath(r) for r in roots)


def grade_submission(submission: dict, secret: bytes, root: str, *, limits: Limits,
                     only=None, user: int | None = None, matplotlib: str = "",
                     exercise_seconds: float | None = None) -> Report:
    """Grade one submission read by :func:`_read` (see the module's docstring)."""
    started = time.monotonic()
    report = Report(submission=submission["path"], student=submission["student"],
                    lab=submission["lab"], submitted=submission["submitted"])
    if submission.get("error"):
        report.error = submission["error"]
        return report
    specs = [s for s in exercises_of_lab(report.lab) if only is None or s.number in only]
    cases = {spec.number: hidden_cases(spec, secret, report.student) for spec in specs}
    python, paths = (sys.executable, []) if user is None else kernel_python()
    if user is None:
        here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        paths = [here] + [p for p in sys.path if p and "site-packages" in p]
    scratch = tempfile.mkdtemp(prefix="s", dir=root)
    job = Job(lab=report.lab, cells=submission["cells"], limits=limits, scratch=scratch,
              user=user, python=python, pythonpath=paths, matplotlib=matplotlib,
              read_roots=_read_roots(),
              exercises=[{"number": spec.number,
                          "seconds": spec.seconds if exercise_seconds is None else
                          exercise_seconds, "cases": wire.encode(cases[spec.number])}
                         for spec in specs])
    try:
        outcome = run(job, limits.notebook_seconds + 120)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report.executed = outcome.cells
    report.notes = list(outcome.notes)
    if outcome.error and not outcome.runs:
        report.error = outcome.error
    text = submission["text"]
    seen = {}
    for record in outcome.runs:
        probes = {p["number"]: p["how"] for p in record.get("probes", [])}
        try:
            key = bytes.fromhex(record["key"])
            frames = read_frames(key, base64.b64decode(record["frames"]))
        except (ValueError, KeyError, TypeError):
            frames = []
        windows, denied = _windows(frames, set(probes), {n: len(c) for n, c in cases.items()})
        report.notes += [f"refused: {d}" for d in denied[:20]]
        for number, how in probes.items():
            if number in seen or number not in cases:
                continue
            spec = EXERCISES[number]
            stub = f'NotImplementedError("{spec.label}")' in text
            seen[number] = _score(spec, cases[number], windows.get(number), how, stub)
    for spec in specs:
        score = seen.get(spec.number)
        if score is None:
            reason = outcome.error or ("the notebook ran past its time limit of "
                                       f"{limits.notebook_seconds:g} s")
            score = grade_answers(spec, cases[spec.number], [None] * len(cases[spec.number]),
                                  override=("timed out" if not outcome.error else "not graded",
                                            f"{spec.label}: not graded: {reason}"))
        report.scores.append(score)
    report.seconds = time.monotonic() - started
    return report


def _student_of(path: str, lab: int | None, roster: Roster | None) -> str:
    """The student a file belongs to: the roster's, else the file name without the lab's
    own name (``lab2_lcg-ada.ipynb`` is ada's), else the whole file name."""
    if roster is not None:
        found = roster.student_of(path)
        if found:
            return found
    stem = os.path.splitext(os.path.basename(path))[0]
    match = re.match(r"lab\d+(_[a-z0-9]+)*[- .]+(?P<id>.+)$", stem, flags=re.I)
    return match.group("id") if match else stem


def _read(path: str, roster: Roster | None) -> dict:
    """A submission read into memory: cells, lab, student, time submitted."""
    from .notebook import read_submission

    entry = {"path": path, "lab": None, "cells": [], "text": "", "error": "",
             "student": "", "submitted": None}
    try:
        entry["submitted"] = os.stat(path).st_mtime
        nb = read_submission(path)
    except Exception as error:  # noqa: BLE001  (any unreadable file is the student's)
        entry["error"] = f"could not read the submission: {type(error).__name__}: {error}"
        entry["student"] = _student_of(path, None, roster)
        return entry
    entry["lab"] = identify_lab(nb, path)
    entry["student"] = _student_of(path, entry["lab"], roster)
    if roster is not None and roster.submitted(entry["student"]) is not None:
        entry["submitted"] = roster.submitted(entry["student"])
    if entry["lab"] is None or not exercises_of_lab(entry["lab"]):
        entry["error"] = ("could not tell which lab this is (no minirad metadata, and the file "
                          "name does not start with labN)")
        return entry
    entry["cells"] = _code_cells(nb)
    entry["text"] = "\n".join(entry["cells"])
    return entry


def _check_seconds(name: str, value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive, finite number of seconds, not {value!r}")
    return value


class _Users:
    """User ids for the kernels, one per job at a time, none shared with another grader
    on the machine (each is held with a lock file while in use)."""

    def __init__(self, count: int):
        import fcntl

        self.free, self.locks = [], []
        uid = FIRST_UID + (os.getpid() % 5000) * 16
        while len(self.free) < count and uid < FIRST_UID + 2_000_000:
            lock = open(os.path.join(tempfile.gettempdir(), f"minirad-grader-{uid}.lock"), "w")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.free.append(uid)
                self.locks.append(lock)
            except OSError:
                lock.close()
            uid += 1
        self.lock = threading.Lock()

    def take(self) -> int:
        with self.lock:
            return self.free.pop()

    def give(self, uid: int) -> None:
        with self.lock:
            self.free.append(uid)

    def close(self) -> None:
        for lock in self.locks:
            lock.close()


def grade(submissions, out_dir, *, notebook_seconds: float = 1200.0,
          cell_seconds: float = 180.0, exercise_seconds: float | None = None,
          memory_mb: int = 4096, jobs: int | None = None,
          secret: bytes | None = None, secret_file=None, roster=None, deadline=None,
          late_penalty: float = 0.0, only=None, isolation: str = "auto",
          progress=None) -> list[Report]:
    """Grade every submission and write the reports into ``out_dir``.

    ``jobs`` sandboxes run at once (default: one per core).  ``exercise_seconds`` replaces
    every exercise's declared time limit (a slow machine, or a quick test).  The hidden
    cases come from ``secret`` (bytes), else the file ``secret_file``, else
    ``out_dir/grader-secret``
    (made on the first run, kept for the next ones).  ``roster`` is a CSV naming each
    student's file (:class:`~minirad.labs.gradebook.Roster`); ``deadline`` (ISO 8601) and
    ``late_penalty`` (percent of the points per day started late) dock late work; ``only``
    (exercise numbers) regrades those exercises and keeps the others from the reports
    already in ``out_dir``.  ``isolation`` is ``"user"`` (a user id per kernel: needs
    root), ``"process"`` or ``"auto"``.
    """
    from .gradebook import parse_time

    paths = [os.fspath(p) for p in submissions]
    if not paths:
        raise ValueError("no submissions to grade")
    for path in paths:
        if not os.path.isfile(path):
            raise ValueError(f"no such submission: {path}")
    limits = Limits(notebook_seconds=_check_seconds("the notebook's time limit",
                                                    notebook_seconds),
                    cell_seconds=_check_seconds("a cell's time limit", cell_seconds),
                    memory=_check_memory(memory_mb))
    jobs = min(_check_jobs(jobs), len(paths))  # no more sandboxes (or user ids) than work
    if exercise_seconds is not None:
        exercise_seconds = _check_seconds("an exercise's time limit", exercise_seconds)
    if isolation not in ("auto", "user", "process"):
        raise ValueError(f"isolation must be auto, user or process, not {isolation!r}")
    own_users = isolation == "user" or (isolation == "auto" and _can_use_users())
    if isolation == "user" and not _can_use_users():
        raise ValueError("isolation='user' needs the grader to run as root and a Python that "
                         "another user can run (this one's folders are closed to others)")
    if not isinstance(late_penalty, (int, float)) or not math.isfinite(late_penalty) or not (
            0 <= late_penalty <= 100):
        raise ValueError(f"the late penalty is a percentage per day between 0 and 100, not "
                         f"{late_penalty!r}")
    due = parse_time(deadline, "the deadline") if deadline is not None else None
    if only is not None:
        only = {str(n) for n in only}
        unknown = sorted(only - set(EXERCISES))
        if unknown:
            raise ValueError(f"unknown exercise(s) {', '.join(unknown)}; the exercises are "
                             f"{', '.join(sorted(EXERCISES, key=_order))}")
    roster = Roster.read(roster) if roster is not None else None
    entries = [_read(path, roster) for path in paths]
    require_dependencies({e["lab"] for e in entries if e["lab"] is not None})
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    key = secret if secret is not None else read_secret(secret_file, out_dir)
    root = tempfile.mkdtemp(prefix="minirad-grading-")
    os.chmod(root, 0o711)
    users = _Users(jobs) if own_users else None
    fonts = font_cache(os.path.join(root, "matplotlib"))
    reports: list[Report | None] = [None] * len(entries)
    lock = threading.Lock()

    def one(index: int) -> None:
        uid = users.take() if users is not None else None
        try:
            report = grade_submission(entries[index], key, root, limits=limits, only=only,
                                      user=uid, matplotlib=fonts,
                                      exercise_seconds=exercise_seconds)
        except Exception as error:  # noqa: BLE001  (one submission's failure is reported)
            report = Report(submission=entries[index]["path"],
                            student=entries[index]["student"], lab=entries[index]["lab"],
                            error=f"the grader failed on this submission: "
                                  f"{type(error).__name__}: {error}")
        finally:
            if uid is not None:
                users.give(uid)
        due_here = roster.deadline(report.student) if roster is not None else None
        report.apply_late(late_days(report.submitted, due_here or due), late_penalty)
        reports[index] = report
        if progress is not None:
            with lock:
                progress(report)

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, range(len(entries))))
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if users is not None:
            users.close()
    write_reports(reports, out_dir, roster=roster, only=only)
    return reports


def _order(number: str) -> tuple:
    return tuple(int(part) for part in number.split("."))


def _check_memory(memory_mb) -> int:
    if isinstance(memory_mb, bool) or not isinstance(memory_mb, (int, float)) or not \
            math.isfinite(memory_mb) or memory_mb < 256:
        raise ValueError(f"a kernel's memory limit is at least 256 MB, not {memory_mb!r}")
    return int(memory_mb) * 2 ** 20


def _check_jobs(jobs) -> int:
    if jobs is None:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:
            return max(1, os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs is a whole number of sandboxes at once, at least 1, not "
                         f"{jobs!r}")
    return jobs


def _can_use_users() -> bool:
    from .sandbox import user_can_run

    return user_can_run()


def summary(report: Report) -> str:
    """One line per submission, for the command line."""
    if report.error:
        return f"{report.submission}: not graded: {report.error}"
    failed = [f"{s.number} {s.status}" for s in report.scores if s.status != "passed"]
    late = f", {report.penalty:g}% late penalty" if report.penalty else ""
    return (f"{report.submission} ({report.student}): {report.total:g}/{report.max_total:g}"
            + late + (f" ({'; '.join(failed)})" if failed else ""))
