"""The grader's gradebook: reports, the roster, late penalties, the instructor's secret.

:func:`write_reports` writes into the output folder:

* ``scores.csv``: a row per submission (student id, file, lab, points before
  and after the late penalty, the days late, a column per exercise, a note);
* ``canvas.csv``: the same totals in the CSV Canvas imports into its
  gradebook (``Student, ID, SIS User ID, SIS Login ID, Section`` and one
  column per lab, a ``Points Possible`` row first);
* ``<name>.json``: everything about one submission, every case's message;
* ``<name>.results.json``: Gradescope's autograder format.

A **roster** (:class:`Roster`) is a CSV with a ``student`` column (the id the
reports use) and a ``file`` column (the submission's file name, or the start
of it); optional columns: ``name``, ``canvas_id``, ``sis_id``, ``login``,
``section`` (copied into ``canvas.csv``), ``submitted`` (when the work was
handed in, ISO 8601; else the file's modification time counts) and
``deadline`` (a deadline of the student's own, ISO 8601).

>>> report = Report("lab2_lcg-ada.ipynb", "ada", 2, submitted=0.0)
>>> report.apply_late(late_days(86400 * 1.5, 0.0), 10)
>>> report.late_days, report.penalty
(2, 20.0)
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import secrets
from dataclasses import asdict, dataclass, field
from datetime import datetime

from ..graph.files import write_atomically
from .scoring import ExerciseScore

__all__ = ["Report", "Roster", "late_days", "parse_time", "read_secret", "write_reports"]


@dataclass
class Report:
    """One submission: its student, lab, a score per exercise, and why it was not graded (if
    so); ``penalty`` is the late penalty in percent, ``executed`` the first kernel's cells
    with their outputs."""

    submission: str
    student: str
    lab: int | None
    scores: list[ExerciseScore] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    submitted: float | None = None
    late_days: int = 0
    penalty: float = 0.0
    notes: list[str] = field(default_factory=list)
    executed: object = field(default=None, repr=False)

    @property
    def raw_total(self) -> float:
        return round(sum(score.points for score in self.scores), 2)

    @property
    def total(self) -> float:
        """The points after the late penalty."""
        return round(self.raw_total * (1 - self.penalty / 100), 2)

    @property
    def max_total(self) -> float:
        return sum(score.max_points for score in self.scores)

    def apply_late(self, days: int, percent_per_day: float) -> None:
        """Dock ``percent_per_day`` of the points per day started late (at most all)."""
        self.late_days = days
        self.penalty = min(100.0, days * float(percent_per_day))


def parse_time(text, what: str) -> float:
    """A time given as ISO 8601 (``2026-12-01T23:59``, local time unless it says its zone),
    as seconds since the epoch; ``ValueError`` naming ``what`` otherwise.

    >>> parse_time("1970-01-02T00:00:00+00:00", "the deadline")
    86400.0
    >>> parse_time("tomorrow", "the deadline")
    Traceback (most recent call last):
    ...
    ValueError: the deadline must be a date and time like 2026-12-01T23:59, not 'tomorrow'
    """
    try:
        return datetime.fromisoformat(str(text).strip()).timestamp()
    except ValueError:
        raise ValueError(f"{what} must be a date and time like 2026-12-01T23:59, not "
                         f"{text!r}") from None


def late_days(submitted: float | None, deadline: float | None) -> int:
    """Days (started) between the deadline and the time the work was handed in.

    >>> late_days(100.0, 200.0), late_days(200.0 + 1, 200.0), late_days(None, 200.0)
    (0, 1, 0)
    """
    if submitted is None or deadline is None or submitted <= deadline:
        return 0
    return math.ceil((submitted - deadline) / 86400)


class Roster:
    """Who handed in which file (see the module's docstring)."""

    def __init__(self, rows: list[dict], path: str = "the roster"):
        self.rows = rows
        self.path = path
        for i, row in enumerate(rows):
            if not row.get("student", "").strip() or not row.get("file", "").strip():
                raise ValueError(f"{path}, row {i + 2}: every row needs a student and a file")
            for column in ("submitted", "deadline"):
                if row.get(column, "").strip():
                    parse_time(row[column], f"{path}, row {i + 2}, {column}")

    @classmethod
    def read(cls, path) -> Roster:
        """Read a roster CSV (columns named in the first row)."""
        path = os.fspath(path)
        try:
            with open(path, newline="", encoding="utf-8-sig") as f:
                reader = csv.DictReader(f)
                if reader.fieldnames is None or not {"student", "file"} <= {
                        name.strip() for name in reader.fieldnames}:
                    raise ValueError(f"{path} needs the columns student and file (found "
                                     f"{reader.fieldnames})")
                rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()}
                        for row in reader]
        except OSError as error:
            raise ValueError(f"cannot read the roster {path}: {error.strerror}") from None
        return cls(rows, path)

    def _row_of(self, student: str) -> dict | None:
        return next((row for row in self.rows if row["student"] == student), None)

    def student_of(self, path: str) -> str | None:
        """The student whose file ``path`` is (its name, or a name it starts with)."""
        name = os.path.basename(path)
        for row in self.rows:
            if name == row["file"] or name.startswith(row["file"]):
                return row["student"]
        return None

    def submitted(self, student: str) -> float | None:
        row = self._row_of(student)
        return parse_time(row["submitted"], "submitted") if row and row.get("submitted") \
            else None

    def deadline(self, student: str) -> float | None:
        row = self._row_of(student)
        return parse_time(row["deadline"], "deadline") if row and row.get("deadline") \
            else None

    def column(self, student: str, name: str) -> str:
        row = self._row_of(student)
        return row.get(name, "") if row else ""


def read_secret(path, out_dir: str) -> bytes:
    """The instructor's secret the hidden cases are drawn from: the file ``path``, else
    ``out_dir/grader-secret``, made (32 random bytes, readable by its owner only) on the
    first run and read on the later ones, so that regrading draws the same cases."""
    if path is None:
        path = os.path.join(out_dir, "grader-secret")
        if not os.path.exists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            secret = f.read(4097)
    except OSError as error:
        raise ValueError(f"cannot read the grader's secret {path}: {error.strerror}") from None
    if len(secret) < 16 or len(secret) > 4096:
        raise ValueError(f"the grader's secret {path} must hold 16 to 4096 bytes, not "
                         f"{len(secret)}")
    return secret


# ------------------------------------------------------------------ reports
def _stem(report: Report, taken: set) -> str:
    base = os.path.splitext(os.path.basename(report.submission))[0]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", base) or "x"
    name, n = stem, 1
    while name in taken:
        n += 1
        name = f"{stem}-{n}"
    taken.add(name)
    return name


def _order(number: str) -> tuple:
    return tuple(int(part) for part in number.split("."))


def gradescope_results(report: Report) -> dict:
    """The submission's report in Gradescope's autograder format (``results.json``)."""
    tests = [{"name": f"Exercise {s.number}: {s.title}", "number": s.number,
              "score": s.points, "max_score": s.max_points,
              "status": "passed" if s.status == "passed" else "failed",
              "output": s.message or "passed"} for s in report.scores]
    result = {"score": report.total, "tests": tests, "execution_time": round(report.seconds, 1)}
    notes = []
    if report.error:
        notes.append(report.error)
    if report.penalty:
        notes.append(f"late by {report.late_days} day(s): {report.penalty:g}% off "
                     f"{report.raw_total:g} points")
    if notes:
        result["output"] = "\n".join(notes)
    return result


def _document(report: Report) -> dict:
    return {"submission": report.submission, "student": report.student, "lab": report.lab,
            "total": report.total, "points": report.raw_total, "max": report.max_total,
            "late_days": report.late_days, "penalty": report.penalty, "error": report.error,
            "seconds": round(report.seconds, 1), "notes": report.notes[:50],
            "exercises": [asdict(s) for s in report.scores]}


def _merge_previous(report: Report, path: str, only: set) -> None:
    """For ``--only``: the exercises not regraded keep their scores from the last report."""
    from .exercise import EXERCISES
    from .scoring import CaseResult

    try:
        with open(path, encoding="utf-8") as f:
            previous = json.load(f)
        kept = {e["number"]: e for e in previous["exercises"]
                if isinstance(e, dict) and e.get("number") not in only}
    except (OSError, ValueError, KeyError, TypeError):
        kept = {}
    scores = {s.number: s for s in report.scores}
    for spec_number in sorted(set(kept) | set(scores), key=_order):
        if spec_number in scores or spec_number not in EXERCISES:
            continue
        e = kept[spec_number]
        try:
            cases = [CaseResult(**c) for c in e.get("cases", [])]
            scores[spec_number] = ExerciseScore(
                e["number"], e["title"], float(e["points"]), float(e["max_points"]),
                str(e["status"]), str(e.get("message", "")), cases)
        except (KeyError, TypeError, ValueError):
            continue
    report.scores = [scores[n] for n in sorted(scores, key=_order)]


def write_reports(reports: list[Report], out_dir, roster=None, only=None) -> list[str]:
    """Write ``scores.csv``, ``canvas.csv`` and each submission's ``.json`` and
    ``.results.json`` into ``out_dir`` (see the module's docstring)."""
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    taken: set = set()
    stems = [_stem(report, taken) for report in reports]
    if only:
        for report, stem in zip(reports, stems):
            _merge_previous(report, os.path.join(out_dir, f"{stem}.json"), set(only))
    numbers = sorted({s.number for r in reports for s in r.scores}, key=_order)
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["student", "submission", "lab", "total", "points", "max", "late_days",
                     "penalty", *numbers, "note"])
    written = []
    for report, stem in zip(reports, stems):
        by_number = {s.number: s.points for s in report.scores}
        writer.writerow([report.student, report.submission,
                         report.lab if report.lab is not None else "", f"{report.total:g}",
                         f"{report.raw_total:g}", f"{report.max_total:g}", report.late_days,
                         f"{report.penalty:g}",
                         *[f"{by_number[n]:g}" if n in by_number else "" for n in numbers],
                         report.error])
        for name, content in ((f"{stem}.json", _document(report)),
                              (f"{stem}.results.json", gradescope_results(report))):
            target = os.path.join(out_dir, name)
            text = json.dumps(content, indent=1, default=str) + "\n"
            write_atomically(target, lambda f, text=text: f.write(text.encode("utf-8")))
            written.append(target)
    targets = []
    for name, text in (("scores.csv", table.getvalue()),
                       ("canvas.csv", canvas_csv(reports, roster))):
        target = os.path.join(out_dir, name)
        write_atomically(target, lambda f, text=text: f.write(text.encode("utf-8")))
        targets.append(target)
    return targets + written


def canvas_csv(reports: list[Report], roster=None) -> str:
    """The totals as Canvas's gradebook import reads them: one row per student, one column
    per lab (``Lab 2 (minirad)``), a ``Points Possible`` row first."""
    labs = sorted({r.lab for r in reports if r.lab is not None})
    possible = {lab: max((r.max_total for r in reports if r.lab == lab), default=0)
                for lab in labs}
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                     *[f"Lab {lab} (minirad)" for lab in labs]])
    writer.writerow(["    Points Possible", "", "", "", "",
                     *[f"{possible[lab]:g}" for lab in labs]])
    students: dict[str, dict] = {}
    for report in reports:
        row = students.setdefault(report.student, {})
        if report.lab is not None:
            row[report.lab] = max(row.get(report.lab, 0.0), report.total)
    for student, points in students.items():
        info = {name: roster.column(student, name) if roster is not None else ""
                for name in ("name", "canvas_id", "sis_id", "login", "section")}
        writer.writerow([info["name"] or student, info["canvas_id"], info["sis_id"] or student,
                         info["login"], info["section"],
                         *[f"{points[lab]:g}" if lab in points else "" for lab in labs]])
    return table.getvalue()
