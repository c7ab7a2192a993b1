"""Judging answers into points, in the grader's own process.

The kernel hands back, for each case of an exercise, what the student's
functions answered (:func:`minirad.labs.runner.answer`): a value or an error.
:func:`judge_case` runs the exercise's judge on a value (comparison with
minirad's own answer, hints); :func:`score_exercise` turns the cases into the
exercise's points: each case carries a weight (default 1) and the exercise
scores its points times the share of the weight whose cases passed (partial
credit), except that an exercise whose window saw the reference used, or whose
record was tampered with, scores 0.

Statuses of an exercise: ``passed``, ``partly passed``, ``wrong answer``,
``raised``, ``timed out``, ``used the reference``, ``not implemented``,
``missing``, ``kernel died``, ``tampered``, ``not graded``.

>>> from minirad.labs.exercise import EXERCISES
>>> spec = EXERCISES["1.1"]
>>> cases = spec.cases(None)[:2]
>>> right = lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h)
>>> score = grade_answers(spec, cases, [{"value": right(__import__("math").sin, 1.0, 1e-2)},
...                                     {"error": "raised", "message": "boom"}])
>>> score.points, score.status, [c.status for c in score.cases]
(1.0, 'partly passed', ['passed', 'raised'])
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import wire
from .checking import CheckFailed, low_precision
from .exercise import Exercise

__all__ = ["STATUSES", "CaseResult", "ExerciseScore", "grade_answers", "grade_in_process",
           "judge_case"]

STATUSES = ("passed", "partly passed", "wrong answer", "raised", "timed out",
            "used the reference", "not implemented", "missing", "kernel died", "tampered",
            "not graded")
_ERRORS = ("raised", "timed out", "used the reference", "not implemented", "missing",
           "kernel died", "wrong answer")


@dataclass
class CaseResult:
    """One case of one exercise: its name, weight, status and message."""

    name: str
    weight: float
    status: str
    message: str = ""


@dataclass
class ExerciseScore:
    """One exercise of one submission."""

    number: str
    title: str
    points: float
    max_points: float
    status: str
    message: str = ""
    cases: list[CaseResult] = field(default_factory=list)


def _low_precision_in(value, depth: int = 0):
    """The first float32/float16 dtype anywhere in an answer, or None."""
    if depth > 6:
        return None
    if isinstance(value, (np.ndarray, np.generic)):
        return low_precision(value)
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    else:
        return None
    for item in items[:1000]:
        found = _low_precision_in(item, depth + 1)
        if found is not None:
            return found
    return None


def judge_case(spec: Exercise, case: dict, answer: dict) -> tuple[str, str]:
    """``(status, message)`` of one case: the kernel's error, or the judge's verdict on the
    value.  A rejected answer held in float32 (or float16) says so, so that a student
    never reads a miss that is only the type's rounding as a wrong formula."""
    where = spec.where(case)
    if not isinstance(answer, dict):
        return "tampered", f"{where}: the kernel's answer could not be read"
    if "error" in answer:
        status = answer["error"] if answer["error"] in _ERRORS else "raised"
        message = answer.get("message", "")
        message = message if isinstance(message, str) else ""
        if status == "timed out" and spec.slow is not None:
            message += spec.slow(case)
        return status, message[:4000]
    if "value" not in answer:
        return "tampered", f"{where}: the kernel's answer could not be read"
    value = answer["value"]
    try:
        spec.judge(case, value, where)
    except CheckFailed as failure:
        message = str(failure)
        low = _low_precision_in(value)
        if low is not None and str(low) not in message:
            message += (f" (note: your answer holds {low} numbers, which keep about "
                        f"{np.finfo(low).precision} digits; return float64 where the check "
                        f"compares more digits than that)")
        return failure.reason, message
    except Exception as error:  # noqa: BLE001  (any answer the judge cannot read is wrong)
        return "wrong answer", (f"{where}: the grader could not read your answer "
                                f"({type(error).__name__}: {str(error)[:200]})")
    return "passed", ""


def grade_answers(spec: Exercise, cases: list[dict], answers: list, *,
                  override: tuple[str, str] | None = None) -> ExerciseScore:
    """The exercise's score from one answer per case (``None``: the case got no answer, the
    kernel died first).  ``override`` = ``(status, message)`` sets the whole exercise to 0
    with that status (the reference used, a tampered record)."""
    results = []
    for case, answer in zip(cases, answers):
        weight = float(case.get("weight", 1.0))
        if answer is None:
            status, message = "kernel died", (f"{spec.where(case)}: no answer, the kernel died "
                                              f"or was stopped before this case")
        else:
            status, message = judge_case(spec, case, answer)
        results.append(CaseResult(case["name"], weight, status, message))
    total = sum(r.weight for r in results) or 1.0
    earned = sum(r.weight for r in results if r.status == "passed")
    failed = [r for r in results if r.status != "passed"]
    if override is not None:
        status, message = override
        return ExerciseScore(spec.number, spec.title, 0.0, spec.points, status, message,
                             results)
    points = round(spec.points * earned / total, 2)
    if not failed:
        return ExerciseScore(spec.number, spec.title, float(spec.points), spec.points,
                             "passed", "", results)
    first = failed[0]
    passed = len(results) - len(failed)
    status = "partly passed" if passed else first.status
    if status in ("not implemented", "missing") and all(r.status == status for r in results):
        message = first.message.split(": ", 1)[-1] if status == "missing" else (
            f"{spec.label}: not implemented (the exercise's stub is still there)")
        return ExerciseScore(spec.number, spec.title, 0.0, spec.points, status, message,
                             results)
    message = f"{first.message} ({passed} of {len(results)} cases passed)"
    return ExerciseScore(spec.number, spec.title, points, spec.points, status, message,
                         results)


def grade_in_process(spec: Exercise, fns, cases: list[dict]) -> ExerciseScore:
    """Grade the definitions ``fns`` on ``cases`` in this process: each case answered as the
    kernel would (:func:`minirad.labs.runner.answer`, then through :mod:`wire` and back)
    and judged as the grader does.  What the tests and the catalogue of mistakes use."""
    from .runner import answer, case_seconds

    answers = []
    for case in cases:
        result = answer(spec, fns, case, case_seconds(spec.seconds, len(cases)))
        answers.append(wire.decode(wire.encode(result)))
    return grade_answers(spec, cases, answers)
