"""Issue 39: a submission that ignores the grader's signals (SIGALRM inside the check,
SIGINT from the host) cannot stall the grading. It used to hold the kernel until the
notebook's limit (1,200 s by default): every later exercise queued behind it and timed
out too. Now the kernel is killed once it outlives a cell's limit and its interrupt, the
exercise scores "timed out", and a fresh kernel grades the rest."""

from test_labs_grade import by_number, notebook_of, write

from minirad.labs import grading as grade

DEAF = ("import signal\n\n"
        "def central_difference(f, x, h):\n"
        "    signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "    while True:\n"
        "        pass\n")


def test_a_check_that_ignores_every_signal_is_killed_and_the_rest_is_graded(tmp_path,
                                                                            monkeypatch):
    # the host waits limit + MARGIN for a check cell, then GRACE for a probe: shortened here
    monkeypatch.setattr(grade, "MARGIN", 2.0)
    monkeypatch.setattr(grade, "GRACE", 2.0)
    deaf = write(notebook_of("lab1_finite_differences", {"1.1": DEAF}), tmp_path / "deaf.ipynb")
    (report,) = grade.grade([deaf], tmp_path / "out", exercise_seconds=1, cell_seconds=10)
    scores = by_number(report)
    assert scores["1.1"].status == "timed out" and scores["1.1"].points == 0
    assert "ignored the interrupt, so its kernel was killed" in scores["1.1"].message
    # the next exercise is graded in a fresh kernel, on the same definitions: it passes
    # (before, it queued behind the loop and timed out too, 235 s in at 2 s a check)
    assert (scores["1.2"].status, scores["1.2"].points) == ("passed", 2)
