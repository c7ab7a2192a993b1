"""The generated parts of the instructor's guide (``tutorials/INSTRUCTORS.md``).

Two tables come from the code rather than from a second hand-written copy:
the points table (points, class time and grading limit, as declared with
each check) and the catalogue of common mistakes (each planted mistake, the
``MISTAKES`` of each lab's module, with what its check answers: see
:func:`catalogue`).  Each sits in
the guide between ``<!-- BEGIN GENERATED name -->`` and ``<!-- END
GENERATED name -->``; ``python -m minirad.labs.instructors PATH`` rewrites
them in place, and the tests fail while the guide is out of date.

>>> print(points_table().splitlines()[2])
| 1 | 1.1 | central difference | 2 | 15 | 30 |
"""

from __future__ import annotations

import io
import re
import sys
from contextlib import redirect_stdout
from dataclasses import dataclass

import numpy as np

from .checking import CheckFailed
from .exercise import EXERCISES, exercises_of_lab

__all__ = ["Entry", "catalogue", "mistakes", "mistakes_table", "points_table", "update"]


# ------------------------------------------------------- the planted mistakes
def mistakes() -> dict[str, list]:
    """Every lab's planted mistakes: exercise number -> [(the mistake, a function returning
    the wrong definitions, one per name the exercise's check takes)], in course order.

    >>> table = mistakes()
    >>> list(table)[:3], table["1.1"][0][0]
    (['1.1', '1.2', '2.1'], 'a one-sided (forward) difference')
    """
    from . import LABS

    found: dict[str, list] = {}
    for lab in LABS:
        found.update(lab.MISTAKES)
    return found


@dataclass(frozen=True)
class Entry:
    """One row of the catalogue: what the student did, and what the check answered."""

    number: str
    mistake: str
    status: str
    message: str

    @property
    def hint(self) -> str:
        """The hint part of the message (after ' -- '), or the message's last clause."""
        return self.message.split(" -- ", 1)[1] if " -- " in self.message else \
            self.message.split(": ", 1)[-1]


def catalogue(numbers=None) -> list[Entry]:
    """Run every planted mistake (of the exercises ``numbers``, default all) through its
    check; what each check said, in the order of :func:`mistakes`.

    >>> entry = next(e for e in catalogue(["1.1"]) if e.mistake.startswith("a one-sided"))
    >>> entry.status, entry.hint
    ('wrong answer', 'your number matches the forward difference (f(x+h) - f(x)) / h, whose \
error shrinks only like h')
    """
    entries = []
    for number, planted in mistakes().items():
        if numbers is not None and number not in numbers:
            continue
        spec = EXERCISES[number]
        for mistake, answer in planted:
            # one planted mistake draws from numpy's global generator: start it from the
            # same state for every entry, so that the catalogue reads the same whatever ran
            # before it (and give the caller its state back)
            state = np.random.get_state()
            np.random.seed(0)  # noqa: NPY002
            try:
                with redirect_stdout(io.StringIO()):
                    spec.check(*answer())
                status, message = "passed", ""
            except CheckFailed as failure:
                status, message = failure.reason, str(failure)
            finally:
                np.random.set_state(state)  # noqa: NPY002
            entries.append(Entry(number, mistake, status, message))
    return entries


def _labs() -> list[int]:
    return sorted({spec.lab for spec in EXERCISES.values()})


def points_table() -> str:
    """Every exercise with its points, class time (minutes) and grading limit (seconds)."""
    rows = ["| lab | exercise | title | points | class time (min) | grading limit (s) |",
            "|---|---|---|---|---|---|"]
    for lab in _labs():
        specs = exercises_of_lab(lab)
        for spec in specs:
            rows.append(f"| {lab} | {spec.number} | {spec.title} | {spec.points} | "
                        f"{spec.minutes} | {spec.seconds:g} |")
        rows.append(f"| {lab} | all | | **{sum(s.points for s in specs)}** | "
                    f"**{sum(s.minutes for s in specs)}** | |")
    total = sum(spec.points for spec in EXERCISES.values())
    rows.append(f"| | **course** | | **{total}** | | |")
    return "\n".join(rows)


def mistakes_table(entries=None) -> str:
    """Each planted mistake and the check's answer to it; ``entries`` defaults to a fresh
    :func:`catalogue` (which runs every check: seconds)."""
    rows = ["| exercise | the mistake | what the check answers |", "|---|---|---|"]
    for entry in catalogue() if entries is None else entries:
        answer = entry.hint if entry.status != "passed" else "(not recognised)"
        answer = answer.replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {entry.number} | {entry.mistake} | {answer} |")
    return "\n".join(rows)


def update(text: str, entries=None) -> str:
    """``text`` with every generated section replaced by its current content (the
    catalogue from ``entries`` if given)."""
    tables = {"points": points_table, "mistakes": lambda: mistakes_table(entries)}
    for name, build in tables.items():
        pattern = re.compile(rf"(<!-- BEGIN GENERATED {name} -->\n).*?(<!-- END GENERATED "
                             rf"{name} -->)", flags=re.S)
        if not pattern.search(text):
            raise ValueError(f"the guide has no generated section {name!r}; mark it with "
                             f"<!-- BEGIN GENERATED {name} --> and <!-- END GENERATED {name} -->")
        content = build()
        text = pattern.sub(lambda match, content=content: match[1] + content + "\n" + match[2],
                           text)
    return text


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m minirad.labs.instructors tutorials/INSTRUCTORS.md",
              file=sys.stderr)
        return 2
    from ..graph.files import write_atomically

    with open(argv[0], encoding="utf-8") as f:
        text = update(f.read())
    write_atomically(argv[0], lambda out: out.write(text.encode("utf-8")))
    print(f"updated {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
