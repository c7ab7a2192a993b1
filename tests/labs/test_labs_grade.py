"""The grader (minirad lab grade): every exercise declared once with its cases, probe and
judge; hidden cases drawn per student from the instructor's secret; answers judged in the
grader's process from signed frames, with partial credit per case; the gradebook (roster,
late penalties, Canvas, --only); the arguments checked before any work starts.

The kernel side and the sandbox are tried in tests/test_labs_hostile.py (twenty-odd
submissions that try to score without the work) and tests/test_notebooks.py (every lab's
solutions graded in a kernel).
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
import math
import os
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from minirad.cli import main
from minirad.labs import gradebook, grading, instructors, notebook, scoring, wire
from minirad.labs.exercise import EXERCISES, exercises_of_lab, hidden_cases
from minirad.labs.instructors import catalogue, mistakes
from minirad.labs.reference_guard import reference_codes

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((ROOT / "tutorials").glob("lab*.py"))
SECRET = b"the tests' own secret, 32 bytes."


def lab_number(path: Path) -> int:
    return int(re.match(r"lab(\d+)", path.name).group(1))


# ------------------------------------------------------------ the declarations
@pytest.mark.parametrize("lab", LABS, ids=[lab.stem for lab in LABS])
def test_each_lab_s_exercises_are_the_ones_declared_with_the_checks(lab):
    declared = [spec.label for spec in exercises_of_lab(lab_number(lab))]
    assert notebook.exercises(lab) == declared
    text = lab.read_text()
    for spec in exercises_of_lab(lab_number(lab)):
        # the lab's check cell calls this exercise's check with the names the grader takes
        call = f"labs.{spec.check.__name__}({', '.join(spec.takes)})"
        assert call in text, call
        assert spec.points > 0 and spec.minutes > 0 and 0 < spec.seconds <= 300


def test_every_reference_names_real_functions():
    for spec in EXERCISES.values():
        for name in spec.reference:
            assert reference_codes((name,)), f"{spec.number}: {name} holds no function"


def test_a_name_two_exercises_take_is_a_helper_of_the_lab_not_an_answer():
    """So that a wrong answer to one exercise cannot cost the points of another."""
    for lab in LABS:
        specs = exercises_of_lab(lab_number(lab))
        answers = "\n".join(cell.source for cell in notebook.read_lab(lab).cells
                            if "BEGIN SOLUTION" in cell.source)
        for i, first in enumerate(specs):
            for second in specs[i + 1:]:
                for name in set(first.takes) & set(second.takes):
                    assert not re.search(rf"^def {name}\b", answers, flags=re.M), name


def test_the_syllabus_prints_each_lab_s_points_and_time_limits():
    readme = (ROOT / "tutorials" / "README.md").read_text()
    for lab in LABS:
        specs = exercises_of_lab(lab_number(lab))
        row = next(line for line in readme.splitlines() if f"`{lab.name}`" in line)
        assert f"{sum(s.points for s in specs)} points" in row, row
        for spec in specs:
            assert f"{spec.number}: {spec.points} pt, {spec.seconds:g} s" in row, row


# ------------------------------------------------------------ the hidden cases
def _names(cases) -> list[str]:
    return [case["name"] for case in cases]


@pytest.mark.parametrize("number", sorted(EXERCISES, key=lambda n: tuple(map(int, n.split(".")))))
def test_hidden_cases_are_the_student_s_own_and_none_is_published(number):
    spec = EXERCISES[number]
    published = wire.encode(spec.cases(None))
    ada = hidden_cases(spec, SECRET, "ada")
    assert wire.encode(ada) == wire.encode(hidden_cases(spec, SECRET, "ada"))   # regraded alike
    assert wire.encode(ada) != wire.encode(hidden_cases(spec, SECRET, "alan"))
    assert wire.encode(ada) != wire.encode(hidden_cases(spec, SECRET + b"!", "ada"))
    published_cases = [wire.encode(case) for case in spec.cases(None)]
    for case in ada:   # a lookup table of the published cases answers no hidden one
        assert wire.encode(case) not in published_cases, (number, case["name"])
    assert wire.decode(published) is not None and len(ada) >= 2


def test_the_secret_must_be_long_enough():
    with pytest.raises(ValueError, match="at least 16 bytes"):
        hidden_cases(EXERCISES["2.1"], b"short", "ada")


# --------------------------------------------------------- judged by what it is
def _forward(g, dtype=np.float64):
    tangent = np.zeros((g.n_vertices, len(g.inputs)))
    tangent[list(g.inputs), range(len(g.inputs))] = 1.0
    for u, v, partial in g.edges():
        tangent[v] += partial * tangent[u]
    return tangent[list(g.outputs)].astype(dtype)


def _sampling_P(d, k, rng, dtype=np.float64):
    return np.diag(np.bincount(rng.integers(0, d, size=k), minlength=d) * (d / k)).astype(dtype)


@pytest.mark.parametrize("number, fn", [
    ("2.1", lambda g: _forward(g, np.float32)),
    ("10.1", lambda d, k, rng: _sampling_P(d, k, rng, np.float32)),
], ids=["2.1", "10.1"])
def test_a_correct_float32_answer_scores_full_marks(number, fn):
    spec = EXERCISES[number]
    for student in ("ada", "alan"):
        score = scoring.grade_in_process(spec, (fn,), hidden_cases(spec, SECRET, student))
        assert (score.points, score.status) == (spec.points, "passed"), score.message


def test_a_wrong_float32_answer_is_told_its_dtype():
    spec = EXERCISES["6.1"]    # compares to 1e-12: float32 cannot hold the step
    from minirad.exact.jacobians import jacobian

    def descend(f, rate, *args):
        return (np.array(args) - rate * jacobian(f, *args)[0]).astype(np.float32)

    score = scoring.grade_in_process(spec, (descend,), spec.cases(None))
    assert score.points == 0 and "float32" in score.message, score.message


def test_an_hvp_that_cannot_read_a_plain_zero_gradient_entry_loses_that_case():
    spec = EXERCISES["12.2"]

    def hvp(f, x, v, gradient, Dual):
        return [g.tangent for g in gradient(f, *(Dual(a, b) for a, b in zip(x, v)))]

    score = scoring.grade_in_process(spec, (hvp,), hidden_cases(spec, SECRET, "ada"))
    failed = [case for case in score.cases if case.status != "passed"]
    assert [case.status for case in failed] == ["raised"], score
    assert "z unused" in failed[0].name and "plain 0.0" in failed[0].name
    assert 0 < score.points < spec.points and score.status == "partly passed"


def test_partial_credit_follows_the_cases_weights():
    spec = EXERCISES["1.1"]
    from minirad.labs.lab01_finite_differences import scalar_function

    cases = [dict(case, weight=w) for case, w in zip(spec.cases(None)[:3], (1, 2, 5))]
    answers = []
    for case in cases:
        f, x, h = scalar_function(case["f"])[0], case["x"], case["h"]
        answers.append({"value": (f(x + h) - f(x - h)) / (2 * h)})
    answers[2] = {"error": "raised", "message": "boom"}
    score = scoring.grade_answers(spec, cases, answers)
    assert score.points == round(spec.points * 3 / 8, 2) and score.status == "partly passed"
    assert [case.status for case in score.cases] == ["passed", "passed", "raised"]


# ------------------------------------------------------------ the frames
def _frame(key: bytes, kind: bytes, seq: int, payload: bytes) -> bytes:
    head = b"%s %d " % (kind, seq)
    mac = hmac.new(key, head + payload, hashlib.sha256).hexdigest().encode()
    import base64

    return b"\n" + head + mac + b" " + base64.b64encode(payload) + b"\n"


def test_frames_are_read_only_when_signed_and_in_sequence():
    key = os.urandom(32)
    good = [_frame(key, b"strict", 0, b""), _frame(key, b"watch", 1, b"2.1 3"),
            _frame(key, b"data", 2, b"x"), _frame(key, b"close", 3, b"2.1")]
    forged = _frame(os.urandom(32), b"reference", 2, b"2.1 forward_sweep")
    garbage = b"reference 2 00 AAAA\n\x00\xff not a frame"
    data = good[0] + garbage + good[1] + forged + good[2] + good[3]
    kinds = [kind for kind, _ in grading.read_frames(key, data)]
    assert kinds == ["strict", "watch", "data", "close"]
    # a frame lost from the sequence ends what can be placed
    assert [k for k, _ in grading.read_frames(key, good[0] + good[2] + good[3])] == ["strict"]
    # a frame whose payload was changed is not a frame
    changed = good[2].replace(b" eA==", b" eQ==")
    assert [k for k, _ in grading.read_frames(key, good[0] + good[1] + changed)] == [
        "strict", "watch"]


# ------------------------------------------------------------ the gradebook
def test_late_work_loses_its_penalty_per_day_started(tmp_path):
    report = gradebook.Report("lab2_lcg-ada.ipynb", "ada", 2, submitted=1000.0)
    report.scores = [scoring.ExerciseScore("2.1", "forward sweep", 3.0, 3, "passed")]
    report.apply_late(gradebook.late_days(1000.0 + 86400 * 2 + 1, 1000.0), 15)
    assert (report.late_days, report.penalty, report.raw_total, report.total) == (
        3, 45.0, 3.0, 1.65)
    report.apply_late(gradebook.late_days(None, 1000.0), 15)
    assert report.total == 3.0


def test_the_roster_names_students_and_their_times(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("student,file,name,submitted,deadline\n"
                      "s123,lab2_lcg-ada,Ada Lovelace,2026-01-02T10:00+00:00,\n"
                      "s456,alan_lab2.ipynb,Alan Turing,,2026-01-05T00:00+00:00\n")
    read = gradebook.Roster.read(roster)
    assert read.student_of("/x/lab2_lcg-ada.ipynb") == "s123"
    assert read.student_of("alan_lab2.ipynb") == "s456"
    assert read.student_of("nobody.ipynb") is None
    assert read.submitted("s123") == gradebook.parse_time("2026-01-02T10:00+00:00", "x")
    assert read.deadline("s456") == gradebook.parse_time("2026-01-05T00:00+00:00", "x")
    bad = tmp_path / "bad.csv"
    bad.write_text("name,file\nAda,x\n")
    with pytest.raises(ValueError, match="needs the columns student and file"):
        gradebook.Roster.read(bad)
    bad.write_text("student,file,submitted\nada,x,yesterday\n")
    with pytest.raises(ValueError, match="row 2, submitted must be a date"):
        gradebook.Roster.read(bad)


def test_the_reports_hold_scores_canvas_gradescope_and_merge_a_regrade(tmp_path):
    def report(student, points, lab=2):
        r = gradebook.Report(f"lab{lab}_x-{student}.ipynb", student, lab)
        r.scores = [scoring.ExerciseScore("2.1", "forward sweep", points[0], 3, "passed"),
                    scoring.ExerciseScore("2.2", "reverse sweep", points[1], 3, "wrong answer",
                                          "Exercise 2.2 (reverse sweep), on lab(): no")]
        return r

    first = [report("ada", (3.0, 1.5)), report("bob", (0.0, 3.0))]
    first[1].apply_late(2, 10)
    gradebook.write_reports(first, tmp_path)
    rows = list(csv.DictReader((tmp_path / "scores.csv").open()))
    assert [(r["student"], r["total"], r["points"], r["penalty"], r["2.1"], r["2.2"])
            for r in rows] == [("ada", "4.5", "4.5", "0", "3", "1.5"),
                               ("bob", "2.4", "3", "20", "0", "3")]
    canvas = list(csv.reader((tmp_path / "canvas.csv").open()))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[0][5] == "Lab 2 (minirad)" and canvas[1][0].strip() == "Points Possible"
    assert canvas[1][5] == "6" and canvas[2][5] == "4.5" and canvas[3][5] == "2.4"
    gradescope = json.loads((tmp_path / "lab2_x-bob.results.json").read_text())
    assert gradescope["score"] == 2.4 and "late by 2 day(s)" in gradescope["output"]
    # --only 2.2: 2.2 is graded again, 2.1 keeps what the last report says
    regraded = gradebook.Report("lab2_x-ada.ipynb", "ada", 2)
    regraded.scores = [scoring.ExerciseScore("2.2", "reverse sweep", 3.0, 3, "passed")]
    gradebook.write_reports([regraded], tmp_path, only={"2.2"})
    assert [(s.number, s.points) for s in regraded.scores] == [("2.1", 3.0), ("2.2", 3.0)]
    saved = json.loads((tmp_path / "lab2_x-ada.json").read_text())
    assert saved["total"] == 6.0


def test_the_secret_is_made_once_and_kept(tmp_path):
    first = gradebook.read_secret(None, str(tmp_path))
    assert gradebook.read_secret(None, str(tmp_path)) == first and len(first) == 32
    assert os.stat(tmp_path / "grader-secret").st_mode & 0o777 == 0o600
    short = tmp_path / "short"
    short.write_bytes(b"abc")
    with pytest.raises(ValueError, match="16 to 4096 bytes"):
        gradebook.read_secret(short, str(tmp_path))


# ------------------------------------------------------------ refused before work starts
@pytest.mark.parametrize("option, value, message", [
    ("--notebook-seconds", "0", "positive, finite number of seconds"),
    ("--notebook-seconds", "-5", "positive, finite number of seconds"),
    ("--cell-seconds", "nan", "positive, finite number of seconds"),
    ("--cell-seconds", "inf", "positive, finite number of seconds"),
    ("--cell-seconds", "soon", "not a number of seconds"),
    ("--jobs", "0", "at least 1"),
    ("--jobs", "1.5", "not a whole number"),
    ("--memory", "-1", "at least 1"),
    ("--late-penalty", "120", "between 0 and 100"),
    ("--late-penalty", "nan", "between 0 and 100"),
])
def test_the_command_refuses_bad_arguments_with_one_line(option, value, message, tmp_path,
                                                        capsys):
    submission = tmp_path / "lab2_lcg.ipynb"
    submission.write_text("{}")
    assert main(["lab", "grade", str(submission), "-o", str(tmp_path / "out"), option,
                 value]) != 0
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keyword, value, message", [
    ("notebook_seconds", math.inf, "positive, finite"),
    ("cell_seconds", 0, "positive, finite"),
    ("jobs", 0, "at least 1"),
    ("memory_mb", 10, "at least 256 MB"),
    ("late_penalty", -1, "between 0 and 100"),
    ("deadline", "tomorrow", "the deadline must be a date"),
    ("only", ["9.9"], "unknown exercise"),
    ("isolation", "none", "isolation must be"),
])
def test_grade_refuses_bad_arguments_before_any_kernel(keyword, value, message, tmp_path):
    submission = tmp_path / "lab2_lcg.ipynb"
    submission.write_text("{}")
    with pytest.raises(ValueError, match=message):
        grading.grade([submission], tmp_path / "out", **{keyword: value})
    assert not (tmp_path / "out").exists()


def test_a_lab_whose_dependency_is_missing_is_refused_naming_the_extra(monkeypatch, tmp_path):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sympy" else real(name, *a))
    submission = tmp_path / "lab11_symbolic.ipynb"
    submission.write_text(nbformat.writes(notebook.to_notebook(
        ROOT / "tutorials" / "lab11_symbolic.py", solutions=True)))
    with pytest.raises(ValueError, match=r"lab 11 needs sympy: install it with pip install "
                                         r"\"minirad\[symbolic\]\""):
        grading.grade([submission], tmp_path / "out")
    grading.require_dependencies([1, 2, 12])   # the others need nothing more


def test_the_student_is_named_by_the_roster_or_the_file(tmp_path):
    assert grading._student_of("subs/lab2_lcg-ada.ipynb", 2, None) == "ada"
    assert grading._student_of("subs/lab1_finite_differences-s99.ipynb", 1, None) == "s99"
    assert grading._student_of("subs/homework.ipynb", None, None) == "homework"


# ------------------------------------------------- the catalogue of mistakes
@pytest.mark.slow
def test_every_planted_mistake_is_judged_wrong_with_its_hint_and_the_guide_shows_it():
    """The catalogue in INSTRUCTORS.md is the checks' own output on the planted mistakes:
    every one is rejected by its exercise's check (published cases), and also loses points
    on a student's hidden cases, as the grader judges them; the guide regenerates
    unchanged."""
    entries = catalogue()
    planted = mistakes()
    assert len(entries) == sum(len(m) for m in planted.values()) >= 90
    assert set(planted) == set(EXERCISES)  # every exercise has some
    accepted = [(e.number, e.mistake) for e in entries if e.status == "passed"]
    assert not accepted, accepted
    for entry in entries:
        assert entry.message.startswith(f"Exercise {entry.number} "), entry
        assert entry.status in scoring.STATUSES and entry.status != "used the reference"
    guide = (ROOT / "tutorials" / "INSTRUCTORS.md").read_text()
    assert instructors.update(guide, entries) == guide, \
        "run: python -m minirad.labs.instructors tutorials/INSTRUCTORS.md"


@pytest.mark.slow
@pytest.mark.parametrize("number", sorted(mistakes(), key=lambda n: tuple(map(int, n.split(".")))))
def test_every_planted_mistake_loses_points_on_a_student_s_hidden_cases(number):
    """As the grader judges them: on hidden cases (drawn for one student), no planted
    mistake keeps full marks."""
    spec = EXERCISES[number]
    cases = hidden_cases(spec, SECRET, "ada")
    full_marks = []
    for mistake, answer in mistakes()[number]:
        state = np.random.get_state()
        np.random.seed(0)  # noqa: NPY002  (one mistake draws from the global generator)
        try:
            score = scoring.grade_in_process(spec, answer(), cases)
        finally:
            np.random.set_state(state)  # noqa: NPY002
        if score.points >= score.max_points:
            full_marks.append(mistake)
    assert not full_marks, full_marks


# the minirad function each exercise asks the student to write, by the name it has in minirad
ANSWERS = {
    "2.1": {"forward_sweep"}, "2.2": {"reverse_sweep"}, "3.1": {"count_paths", "path_jacobian"},
    "4.1": {"eliminate_vertex"}, "4.2": {"elimination_order"}, "4.3": {"colour_columns"},
    "5.1": {"sample_paths"}, "5.2": {"path_sampling_variance"},
    "5.3": {"path_sampling_variance", "compare_levels"},
    "8.1": {"total_bytes", "table1_rows"}, "8.2": {"Uniform"},
    "8.3": {"uniform_forward_steps", "uniform_peak_stored"},
    "8.5": {"rad_gradient", "chain", "eq8_reference"}, "9.1": {"keep_input"},
    "9.2": {"reference_z_scores"}, "9.3": {"keep_input"},
    "10.1": {"sampling_projection", "injected_products"},
    "10.2": {"rademacher_projection", "injected_products"},
}


@pytest.mark.parametrize("lab", LABS, ids=[lab.stem for lab in LABS])
def test_a_handout_neither_imports_nor_calls_minirad_s_answer_to_its_exercises(lab):
    """Where a later cell needs an exercise's result it calls the student's function
    (or uses a recorded value): the handout never reaches for minirad's own."""
    import ast

    forbidden = set().union(*[ANSWERS.get(spec.number, set())
                              for spec in exercises_of_lab(lab_number(lab))])
    found = set()
    for cell in notebook.to_notebook(lab, solutions=False).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom):
                found |= {alias.name for alias in node.names} & forbidden
            elif isinstance(node, ast.Attribute) and node.attr in forbidden:
                found.add(node.attr)
    assert not found, found
