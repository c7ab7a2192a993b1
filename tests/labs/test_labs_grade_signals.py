"""Issue 39: a submission that ignores the grader's interrupt cannot stall the grading.
It used to hold the kernel until the notebook's limit (1,200 s by default): every later
exercise queued behind it and timed out too. Now the sandbox interrupts a probe cell past
its exercise's limit, kills the kernel that goes on regardless, the exercise scores
"timed out", and a fresh kernel grades the rest. (The grader's kernel refuses signal
handlers of the student's own, so the code below swallows the interrupt instead.)"""

import nbformat
import pytest

from minirad.labs import grading

pytestmark = pytest.mark.slow

DEAF = ("def central_difference(f, x, h):\n"
        "    while True:\n"
        "        try:\n"
        "            while True:\n"
        "                pass\n"
        "        except BaseException:\n"
        "            pass\n")
HONEST = ("def directional_difference(f, x, delta, h):\n"
          "    return (f(x + h * delta) - f(x - h * delta)) / (2 * h)\n")


def test_a_check_that_swallows_the_interrupt_is_killed_and_the_rest_is_graded(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["minirad"] = {"source": "lab1_finite_differences.py", "form": "handout"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (DEAF, HONEST)]
    path = tmp_path / "lab1_finite_differences-deaf.ipynb"
    path.write_text(nbformat.writes(nb))
    (report,) = grading.grade([path], tmp_path / "out", exercise_seconds=2, cell_seconds=10,
                              notebook_seconds=300, jobs=1, secret=b"sixteen or more bytes")
    scores = {score.number: score for score in report.scores}
    assert (scores["1.1"].status, scores["1.1"].points) == ("timed out", 0), scores["1.1"]
    # the next exercise is graded in a fresh kernel, on the same definitions: it passes
    # (before, it queued behind the loop and timed out too)
    assert (scores["1.2"].status, scores["1.2"].points) == ("passed", 2), scores["1.2"]
    assert report.seconds < 120, report.seconds
