"""How a failed check looks in a notebook: the hint first, then only the student's own frames.

A :class:`~minirad.labs.checking.CheckFailed` raised deep inside a check
would show about thirty lines of the checker's traceback before its
message.  Inside a Jupyter kernel, importing :mod:`minirad.labs` registers
:func:`show_failure` with IPython for that one exception type: the cell's
error then reads the message (what is wrong and the hint) and below it the
frames of the student's code only (the check cell, and the student's
function when it raised), none of minirad's.

>>> from minirad import labs
>>> def forward_sweep(g):
...     return 1 / 0
>>> try:
...     labs.check_forward_sweep(forward_sweep)
... except labs.CheckFailed as failure:
...     report = failure_report(failure)
>>> print(report[0])
CheckFailed: Exercise 2.1 (forward sweep), on figure1(): your function raised \
ZeroDivisionError: division by zero
>>> [line.strip() for line in report if "return 1 / 0" in line]
['return 1 / 0']
>>> any("labs/checking.py" in line or "labs/exercise.py" in line for line in report)
False
"""

from __future__ import annotations

import os
import sys
import traceback

__all__ = ["failure_report", "install", "show_failure"]

_HIDDEN = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]  # the minirad package


def _hidden(filename: str) -> bool:
    path = os.path.abspath(filename)
    return any(path.startswith(folder + os.sep) for folder in _HIDDEN) or (
        "IPython" in path.split(os.sep) or "ipykernel" in path.split(os.sep))


def _student_frames(tb) -> list[traceback.FrameSummary]:
    return [frame for frame in traceback.extract_tb(tb) if not _hidden(frame.filename)]


def failure_report(error: BaseException) -> list[str]:
    """The lines a student sees for a failed check: the message (with its hint)
    first, then the frames of the student's code, the check cell's and, when
    the student's function raised, the ones inside it."""
    lines = [f"{type(error).__name__}: {error}"]
    frames = _student_frames(error.__traceback__)
    cause = error.__cause__
    if cause is not None:
        frames += _student_frames(cause.__traceback__)
    if frames:
        lines.append("")
        lines.append("where, in your code:")
        lines += "".join(traceback.format_list(frames)).splitlines()
    return lines


def show_failure(shell, etype, value, tb, tb_offset=None) -> None:
    """IPython's custom exception handler for CheckFailed (see :func:`install`): it sends
    the cell's error itself, as IPython leaves that to a custom handler."""
    shell._showtraceback(etype, value, failure_report(value))


def install() -> bool:
    """Register :func:`show_failure` in the running Jupyter kernel; False outside one."""
    shell_module = sys.modules.get("IPython")
    shell = shell_module.get_ipython() if shell_module is not None else None
    if shell is None or not hasattr(shell, "kernel"):
        return False
    from .checking import CheckFailed

    shell.set_custom_exc((CheckFailed,), show_failure)
    return True
