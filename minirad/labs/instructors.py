"""The generated parts of the instructor's guide (``tutorials/INSTRUCTORS.md``).

Two tables come from the code rather than from a second hand-written copy:
the points table (points, class time and grading limit, as declared with
each check) and the catalogue of common mistakes (each planted mistake of
:mod:`minirad.labs.mistakes` with what its check answers).  Each sits in
the guide between ``<!-- BEGIN GENERATED name -->`` and ``<!-- END
GENERATED name -->``; ``python -m minirad.labs.instructors PATH`` rewrites
them in place, and the tests fail while the guide is out of date.

>>> print(points_table().splitlines()[2])
| 1 | 1.1 | central difference | 2 | 15 | 30 |
"""

from __future__ import annotations

import re
import sys

from .exercise import EXERCISES, exercises_of_lab

__all__ = ["mistakes_table", "points_table", "update"]


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
    :func:`~minirad.labs.mistakes.catalogue` (which runs every check: seconds)."""
    from .mistakes import catalogue

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
