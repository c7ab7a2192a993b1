"""The grader (minirad lab grade): every exercise is declared next to its check, graded in a
fresh kernel from the student's definitions alone; the reference cannot be handed in, a
printed "passed" line counts for nothing, a loop is stopped at its limit, and a notebook
that deletes files or exits its kernel does not stop the grading of the next.

The solutions (full marks) and the unmodified handouts ("not implemented" per exercise) of
every lab are graded in tests/test_notebooks.py, which runs each lab in a kernel anyway.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import nbformat
import pytest

from minirad import labs
from minirad.cli import main
from minirad.labs import grading, instructors, notebook
from minirad.labs.exercise import EXERCISES, exercises_of_lab
from minirad.labs.instructors import catalogue, mistakes
from minirad.labs.reference_guard import reference_codes

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((ROOT / "tutorials").glob("lab*.py"))


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


# -------------------------------------------------------------- in a kernel
def notebook_of(lab: str, replace: dict | None = None, extra: list | None = None,
                solutions: bool = True):
    """A lab's solutions notebook with some solution cells replaced (by the exercise
    number's new source) and extra code cells appended."""
    nb = notebook.to_notebook(ROOT / "tutorials" / f"{lab}.py", solutions=solutions)
    handout = notebook.to_notebook(ROOT / "tutorials" / f"{lab}.py", solutions=False)
    for number, source in (replace or {}).items():
        label = EXERCISES[number].label
        index = next(i for i, cell in enumerate(handout.cells)
                     if f'NotImplementedError("{label}")' in cell.source)
        nb.cells[index].source = source
    for source in extra or []:
        nb.cells.append(nbformat.v4.new_code_cell(source))
    return nb


def write(nb, path: Path) -> Path:
    path.write_text(nbformat.writes(nb))
    return path


def by_number(report) -> dict:
    return {score.number: score for score in report.scores}


def test_both_fooling_attempts_score_zero_for_the_exercises_they_fake(tmp_path):
    """A Lab 2 submission that calls minirad's own sweep for 2.1, and answers 2.2 wrongly
    but prints the success line by hand (its check cell replaced by a print)."""
    forward_by_minirad = (
        "from minirad.exact import sweeps\n\n"
        "def forward_sweep(g):\n"
        "    return sweeps.forward_sweep(g).jacobian\n")
    wrong_reverse = (
        "import numpy as np\n\n"
        "def reverse_sweep(g):\n"
        "    return np.zeros((len(g.outputs), len(g.inputs)))\n\n"
        "print('Exercise 2.2 passed: reverse sweep agrees with minirad on 9 graphs')\n")
    nb = notebook_of("lab2_lcg", {"2.1": forward_by_minirad, "2.2": wrong_reverse})
    for cell in nb.cells:
        if cell.source.strip() == "labs.check_reverse_sweep(reverse_sweep)":
            cell.source = "print('Exercise 2.2 passed: reverse sweep agrees with minirad')"
    path = write(nb, tmp_path / "lab2_lcg.ipynb")
    (report,) = grading.grade([path], tmp_path / "out")
    scores = by_number(report)
    assert (scores["2.1"].points, scores["2.1"].status) == (0, "used the reference")
    assert "forward_sweep (minirad.exact.sweeps)" in scores["2.1"].message
    assert (scores["2.2"].points, scores["2.2"].status) == (0, "wrong answer")
    assert "Exercise 2.2 (reverse sweep), on figure1()" in scores["2.2"].message
    assert report.total == 0 and report.max_total == 6


def test_a_loop_is_stopped_and_a_kernel_that_exits_or_deletes_does_not_stop_the_grading(
        tmp_path, capsys):
    loop = write(notebook_of("lab1_finite_differences", {
        "1.1": "def central_difference(f, x, h):\n    while True:\n        pass\n"}),
        tmp_path / "loop.ipynb")
    # deletes every file it can see, exits the kernel at the top level and again in 1.2
    vandal = write(notebook_of("lab1_finite_differences", {
        "1.2": "import os\n\ndef directional_difference(f, x, delta, h):\n    os._exit(3)\n"},
        extra=["import os, shutil\nfor name in os.listdir('.'):\n"
               "    shutil.rmtree(name, ignore_errors=True)\nos._exit(1)\n"]),
        tmp_path / "vandal.ipynb")
    good = write(notebook_of("lab1_finite_differences"), tmp_path / "good.ipynb")
    scored = tmp_path / "scores"
    assert main(["lab", "grade", str(loop), str(vandal), str(good), "-o", str(scored),
                 "--exercise-seconds", "5", "--cell-seconds", "10"]) == 0

    reports = {Path(r["submission"]).stem: r for r in
               (json.loads((scored / f"{stem}.json").read_text())
                for stem in ("loop", "vandal", "good"))}
    status = {stem: {e["number"]: (e["points"], e["status"]) for e in r["exercises"]}
              for stem, r in reports.items()}
    limit = 5
    assert status["loop"] == {"1.1": (0, "timed out"), "1.2": (2, "passed")}
    assert f"longer than {limit:g} s" in reports["loop"]["exercises"][0]["message"]
    assert status["vandal"] == {"1.1": (2, "passed"), "1.2": (0, "kernel died")}
    assert status["good"] == {"1.1": (2, "passed"), "1.2": (2, "passed")}
    assert "good.ipynb: 4/4" in capsys.readouterr().out

    with open(scored / "scores.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(row["total"], row["1.1"], row["1.2"]) for row in rows] == [
        ("2", "0", "2"), ("2", "2", "0"), ("4", "2", "2")]
    gradescope = json.loads((scored / "loop.results.json").read_text())
    assert gradescope["score"] == 2
    assert [(t["name"], t["score"], t["max_score"], t["status"]) for t in gradescope["tests"]] \
        == [("Exercise 1.1: central difference", 0, 2, "failed"),
            ("Exercise 1.2: directional difference", 2, 2, "passed")]


def test_a_lab_script_is_graded_too_and_an_unknown_file_is_reported(tmp_path):
    script = tmp_path / "lab1_mine.py"
    script.write_text((ROOT / "tutorials" / "lab1_finite_differences.py").read_text())
    stray = tmp_path / "notes.ipynb"
    stray.write_text(nbformat.writes(nbformat.v4.new_notebook()))
    broken = tmp_path / "lab2_broken.ipynb"
    broken.write_text("{not json")
    reports = grading.grade([script, stray, broken], tmp_path / "out")
    assert [r.total for r in reports] == [4, 0, 0]
    assert "could not tell which lab" in reports[1].error
    assert "could not read" in reports[2].error
    with pytest.raises(ValueError, match="no such submission"):
        grading.grade([tmp_path / "missing.ipynb"], tmp_path / "out")


def test_in_the_kernel_a_missing_name_and_a_stub_are_told_apart(tmp_path):
    out = tmp_path / "result.json"
    outcome = grading.grade_in_kernel("2.1", {}, str(out), stub_present=True)
    assert outcome["status"] == "not implemented"
    outcome = grading.grade_in_kernel("2.1", {}, str(out), stub_present=False)
    assert outcome["status"] == "missing" and "'forward_sweep'" in outcome["message"]
    assert json.loads(out.read_text()) == outcome
    assert grading.grade_in_kernel("2.1", {"forward_sweep": 3}, str(out), False)["status"] == \
        "wrong answer"


def test_identify_lab_prefers_the_metadata():
    nb = notebook.to_notebook(LABS[0], solutions=False)
    assert grading.identify_lab(nb, "renamed.ipynb") == lab_number(LABS[0])
    assert labs.EXERCISES is EXERCISES


# ------------------------------------------------- the catalogue of mistakes
def test_every_planted_mistake_scores_zero_and_the_guide_shows_what_the_check_said(tmp_path):
    """The catalogue in INSTRUCTORS.md is the checks' own output on the planted mistakes:
    every one is rejected (by the check of its own exercise, which takes only that
    exercise's names), and the guide is regenerated from them without a change."""
    entries = catalogue()
    assert len(entries) == sum(len(m) for m in mistakes().values()) >= 60
    assert {number for number in mistakes()} == set(EXERCISES)  # every exercise has some
    accepted = [(e.number, e.mistake) for e in entries if e.status == "passed"]
    assert not accepted, accepted
    for entry in entries:
        assert entry.message.startswith(f"Exercise {entry.number} "), entry
        assert entry.status in grading.STATUSES and entry.status != "used the reference"
    guide = (ROOT / "tutorials" / "INSTRUCTORS.md").read_text()
    assert instructors.update(guide, entries) == guide, \
        "run: python -m minirad.labs.instructors tutorials/INSTRUCTORS.md"
    # through the grader's own entry point, as a notebook would be graded
    number, (_, answer) = "2.1", mistakes()["2.1"][0]
    namespace = dict(zip(EXERCISES[number].takes, answer()))
    outcome = grading.grade_in_kernel(number, namespace, str(tmp_path / "r.json"), False)
    assert outcome["status"] == "wrong answer" and "ADD" in outcome["message"]


# the minirad function each exercise asks the student to write, by the name it has in minirad
ANSWERS = {
    "2.1": {"forward_sweep"}, "2.2": {"reverse_sweep"}, "3.1": {"count_paths", "path_jacobian"},
    "4.1": {"eliminate_vertex"}, "4.2": {"elimination_order"}, "4.3": {"colour_columns"},
    "5.1": {"sample_paths"}, "5.2": {"path_sampling_variance"},
    "8.1": {"total_bytes", "table1_rows"}, "8.2": {"Uniform"},
    "8.3": {"uniform_forward_steps", "uniform_peak_stored"}, "9.1": {"keep_input"},
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
