"""The tools the labs' checks are built from, and the picture helper.

A check runs the student's function on several inputs (named example
graphs, seeded random DAGs, a few functions and points), compares each
answer with minirad's own, prints one line when everything agrees and
otherwise raises :class:`CheckFailed` saying what differs where.  The
message never shows minirad's code; it names the input so the student can
rebuild it.

* :func:`call_student` -- call the student's function, turning its
  exceptions into a :class:`CheckFailed` naming the input (a
  ``NotImplementedError`` from an unsolved stub passes through unchanged),
  optionally under a time limit;
* :func:`compare_jacobian` -- shape and entry-by-entry comparison with a
  readable message;
* :func:`passed` -- the success line;
* :func:`build_graph` -- the graph a case names, from plain data, so that the
  student's kernel and the grader build the same one;
* :func:`run_check` -- what every check does in a notebook: probe and judge
  each published case (see :mod:`minirad.labs.exercise`);
* :func:`show` -- a picture inline in Jupyter, else saved as a PNG.

>>> compare_jacobian([[1.0, 2.0]], np.array([[1.0, 2.0]]), "on lab()")
>>> call_student(lambda: 1 / 0, "on lab()")
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: on lab(): your function raised ZeroDivisionError: division \
by zero
"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from . import wire
from .reference_guard import UsedReference, current_exercise, guard_reference

__all__ = [
    "CheckFailed", "EPS", "alarm_handler", "as_float", "as_numbers", "build_graph",
    "call_student", "compare_jacobian", "location", "low_precision", "one", "output_folder",
    "passed", "run_check", "show", "time_limit", "type_name",
]


EPS = np.finfo(float).eps


class CheckFailed(AssertionError):
    """A student's answer disagrees with minirad; the message says where and how.

    ``reason`` sorts the failure for the grader: ``"wrong answer"``,
    ``"raised"`` (the student's function raised), ``"timed out"`` or
    ``"used the reference"``.
    """

    def __init__(self, message: str = "", reason: str = "wrong answer"):
        super().__init__(message)
        self.reason = reason


# ------------------------------------------------------------------ pictures
def output_folder() -> str:
    """Where :func:`show` saves pictures outside Jupyter: ``$MINIRAD_LAB_OUTPUT``
    or ``./lab_output``."""
    return os.environ.get("MINIRAD_LAB_OUTPUT") or "lab_output"


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (where a picture can be shown inline)."""
    shell_module = sys.modules.get("IPython")
    if shell_module is None:
        return False
    shell = shell_module.get_ipython()
    return shell is not None and hasattr(shell, "kernel")


def _file_name(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("._")
    if not stem:
        raise ValueError(f"picture name {name!r} has no usable characters; use e.g. "
                         f"'lab2_lecture_lcg'")
    return stem if stem.endswith(".png") else stem + ".png"


def show(obj, name: str, folder=None):
    """Show a picture: inline under Jupyter, else saved as PNG and its path printed.

    ``obj`` is what :func:`minirad.draw.render.render` returns (a graphviz
    Digraph), a matplotlib Figure, or the list of drawings
    :func:`minirad.draw.render.render_elimination` returns (shown as one strip).
    In a Jupyter kernel a Figure is sent as a PNG image, whatever matplotlib
    backend is active.  Outside a kernel the picture goes to
    ``<folder>/<name>.png``, ``folder`` defaulting to :func:`output_folder`,
    and the path is returned.  Figures are closed once shown, so that a
    notebook does not draw them a second time.

    >>> import os, tempfile
    >>> from matplotlib.figure import Figure
    >>> path = show(Figure(), "demo plot", folder=tempfile.mkdtemp())  # doctest: +ELLIPSIS
    picture saved: .../demo_plot.png
    >>> os.path.basename(path)
    'demo_plot.png'
    """
    from matplotlib.figure import Figure

    from ..draw.figure import png
    from ..draw.render import Drawings, save_drawing, strip

    if isinstance(obj, Drawings):
        obj = strip(obj)
    is_figure = isinstance(obj, Figure)
    if not is_figure and not hasattr(obj, "source"):
        raise TypeError(f"show takes a graphviz drawing (from minirad.draw.render.render), a "
                        f"matplotlib Figure or render_elimination's list, not "
                        f"{type(obj).__name__}")
    try:
        if _in_kernel():
            from IPython.display import display

            if is_figure:  # as an image: a bare Figure shows as text without the inline backend
                display({"image/png": png(obj), "text/plain": repr(obj)}, raw=True)
            else:
                display(obj)
            return None
        folder = os.fspath(folder) if folder is not None else output_folder()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, _file_name(name))
        if is_figure:
            obj.savefig(path, dpi=150, bbox_inches="tight")
        else:
            save_drawing(obj, path)
        print(f"picture saved: {path}")
        return path
    finally:
        pyplot = sys.modules.get("matplotlib.pyplot")
        if is_figure and pyplot is not None:  # only pyplot keeps figures open
            pyplot.close(obj)


class _TimeUp(BaseException):
    """The alarm of one :func:`time_limit`; a BaseException, so that a student's
    ``except Exception`` inside a loop does not swallow it."""

    def __init__(self, token):
        super().__init__()
        self.token = token


_deadlines: list[list] = []  # [deadline, token] of every active time_limit, outermost first


def _arm_alarm() -> None:
    """Set the timer to the earliest active deadline (or switch it off)."""
    if _deadlines:
        left = min(deadline for deadline, _ in _deadlines) - time.monotonic()
        signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3))
    else:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _alarm(signum, frame):
    now = time.monotonic()
    due = [entry for entry in _deadlines if entry[0] <= now + 1e-3]
    if due:
        raise _TimeUp(min(due, key=lambda entry: entry[0])[1])
    _arm_alarm()  # woken early: wait for the next deadline


def alarm_handler():
    """The SIGALRM handler :func:`time_limit` installs (the grader's kernel allows it)."""
    return _alarm


@contextmanager
def time_limit(seconds: float | None, where: str, hint: str = ""):
    """Raise :class:`CheckFailed` if the body runs longer than ``seconds``.

    ``hint`` is appended to the message (e.g. why this input is slow).  Limits
    nest (a check's limit per input inside the grader's limit per exercise):
    whichever runs out first stops the body.  Uses ``SIGALRM``, so it only
    limits code on the main thread of a POSIX system (a script, pytest, a
    Jupyter kernel); elsewhere it does nothing.

    >>> with time_limit(0.05, "on a loop"):
    ...     while True:
    ...         pass
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: on a loop: your function took longer than 0.05 s and was \
stopped
    """
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return
    entry = [time.monotonic() + seconds, object()]
    outermost = not _deadlines
    previous = signal.signal(signal.SIGALRM, _alarm) if outermost else None
    _deadlines.append(entry)
    try:
        _arm_alarm()
        yield
    except _TimeUp as up:
        if up.token is not entry[1]:
            raise
        raise CheckFailed(f"{where}: your function took longer than {seconds:g} s and was "
                          f"stopped{hint}", reason="timed out") from None
    finally:
        _deadlines.remove(entry)
        _arm_alarm()
        if outermost:
            signal.signal(signal.SIGALRM, previous)


def call_student(fn: Callable, where: str, *args, seconds: float | None = None,
                 slow_hint: str = "", **kwargs):
    """``fn(*args, **kwargs)``, with its failures reported against ``where``.

    A ``NotImplementedError`` (an exercise stub not yet filled in) passes
    through unchanged; any other exception becomes a :class:`CheckFailed`
    that names ``where`` and keeps the original as its cause, so the
    traceback still points into the student's code.  With ``seconds``, a
    call running longer is stopped (see :func:`time_limit`) and reported
    with ``slow_hint`` appended.  Inside a declared check (see
    :mod:`minirad.labs.exercise`) the call may not enter the exercise's
    reference: if it does, the check fails with "used the reference".

    >>> call_student(lambda g: 1 / 0, "on figure1()", None)
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: on figure1(): your function raised ZeroDivisionError: \
division by zero
    """
    if not callable(fn):
        raise CheckFailed(f"expected your function, got {type(fn).__name__} {fn!r}")
    spec = current_exercise()
    used: list[str] = []
    try:
        with time_limit(seconds, where, slow_hint), \
                guard_reference(spec.reference if spec else (), used):
            result = fn(*args, **kwargs)
    except UsedReference:
        result = None
    except (NotImplementedError, CheckFailed):
        if not used:
            raise
    except Exception as error:
        if not used:
            raise CheckFailed(f"{where}: your function raised {type(error).__name__}: "
                              f"{error}", reason="raised") from error
    if used:
        raise CheckFailed(f"{where}: used the reference -- your function called minirad's "
                          f"{used[0]}, which computes what {spec.label} asks you to write; "
                          f"write it yourself (minirad's own is there to compare with, outside "
                          f"your function)", reason="used the reference")
    return result


def _number(x, digits: int = 6) -> str:
    if not isinstance(x, (float, np.floating)):
        return str(x)
    text = f"{x:.{digits}g}"
    return "0" if text == "-0" else text


def _two_numbers(mine, expected) -> tuple[str, str]:
    """Both numbers with as many digits as it takes to tell them apart.

    >>> _two_numbers(np.float32(0.568985), 0.5689853)
    ('0.568985', '0.5689853')
    """
    for digits in range(6, 18):
        a, b = _number(float(mine), digits), _number(float(expected), digits)
        if a != b:
            return a, b
    return a, b


def low_precision(result) -> np.dtype | None:
    """The dtype of an answer held in fewer bits than a float64 (float32, float16), or None."""
    try:
        dtype = np.asarray(result).dtype
    except (TypeError, ValueError):
        return None
    return dtype if dtype.kind == "f" and dtype.itemsize < 8 else None


def as_numbers(result, where: str, advice: str = ", which is not an array of numbers",
               returned: str = "your function returned") -> np.ndarray:
    """A student's answer as a float array, or a CheckFailed that names what came back
    and what to return instead.

    >>> as_numbers([1, 2], "on lab()").tolist()
    [1.0, 2.0]
    >>> as_numbers("grad", "on lab()", "; return the gradient")
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: on lab(): your function returned str; return the gradient
    """
    try:
        return np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: {returned} {type_name(result)}{advice}") from None


def type_name(value) -> str:
    """The type of what the student's function returned, as a message names it (a value
    the grader's format does not carry arrives as :class:`~minirad.labs.wire.Other`,
    which keeps the name of its type).

    >>> type_name(3.0), type_name(wire.Other("mymodule.Vector"))
    ('float', 'mymodule.Vector')
    """
    return value.type if isinstance(value, wire.Other) else type(value).__name__


def as_float(value, where: str, advice: str = "; expected one float") -> float:
    """One number from the student's answer, or a CheckFailed naming what came back.

    >>> as_float([1.0], "on lab()")
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: on lab(): your function returned list [1.0]; expected \
one float
    """
    try:
        if isinstance(value, (list, tuple, dict, str, bytes, wire.Other)):
            raise TypeError
        return float(value)
    except (TypeError, ValueError, OverflowError):
        shown = "" if isinstance(value, wire.Other) else f" {value!r:.60}"
        raise CheckFailed(f"{where}: your function returned {type_name(value)}{shown}"
                          f"{advice}") from None


def compare_jacobian(result, expected: np.ndarray, where: str, what: str = "Jacobian",
                     rtol: float = 1e-9) -> None:
    """Raise :class:`CheckFailed` unless ``result`` matches ``expected``.

    Shapes must agree exactly (a transposed answer is named as such); entries
    must agree to ``rtol`` relative to the largest expected entry.  An answer
    in float32 (or float16) is held to that type's own precision instead, a
    few units of its last digit; a miss beyond it names the type.

    >>> compare_jacobian([[1.0, 3.2]], np.array([[1.0, 1.7]]), "on lab()")
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: on lab(): your Jacobian entry [0, 1] is 3.2, expected 1.7
    """
    expected = np.asarray(expected, dtype=float)
    mine = as_numbers(result, where)
    layout = ("(rows: outputs, columns: inputs)" if what == "Jacobian" else "")
    if mine.shape != expected.shape:
        hint = " -- did you return the transpose?" if mine.shape == expected.shape[::-1] else ""
        raise CheckFailed(f"{where}: your function returned shape {mine.shape} but the {what} "
                          f"has shape {expected.shape} {layout}".rstrip() + hint)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    error = np.abs(mine - expected)
    error[np.isnan(error)] = np.inf
    low = low_precision(result)
    tolerance = max(rtol, 8 * float(np.finfo(low).eps)) if low is not None else rtol
    if np.all(error <= tolerance * scale):
        return
    i = np.unravel_index(np.argmax(error), error.shape)
    index = ", ".join(str(int(k)) for k in i)
    shown, wanted = _two_numbers(mine[i], expected[i])
    message = f"{where}: your {what} entry [{index}] is {shown}, expected {wanted}"
    if mine.ndim == 2 and mine.shape[0] == mine.shape[1] and np.allclose(mine.T, expected):
        message += " -- you seem to have returned the transpose (rows are outputs)"
    elif low is not None:
        message += (f" -- your answer is {low}, which keeps about "
                    f"{np.finfo(low).precision} digits; the miss is larger than that type's "
                    f"rounding, so the numbers themselves are off")
    raise CheckFailed(message)


def passed(exercise: str, text: str) -> None:
    """Print the one success line of a check."""
    print(f"{exercise} passed: {text}")


def location(exercise: str, topic: str, name: str) -> str:
    return f"{exercise} ({topic}), on {name}"


def one(fn: Callable) -> Callable:
    """A planted answer of one definition, as the catalogue of mistakes takes it:
    a function returning the tuple of definitions an exercise's check takes."""
    return lambda: (fn,)


# ------------------------------------------------------------ cases as data
def _copies(x: float = 2.0, y: float = 3.0):
    """An input returned as is and outputs listed out of vertex order."""
    from ..tracing import ops, trace

    return trace(lambda a, b: (a, a * b, ops.sin(b)), x, y)


def _graph_builders() -> dict[str, Callable]:
    from .. import examples

    return {name: getattr(examples, name) for name in (
        "figure1", "lecture", "lab", "two_outputs", "random_dag", "interleaved",
        "independent_paths", "edge_beats_vertex", "random_layered")} | {"copies": _copies}


def build_graph(spec):
    """The LCG a case describes as ``[builder, args, kwargs]``: one of minirad's example
    graphs (``["random_dag", [3, 10, 2], {"rng": 7}]``, ``["figure1", [0.5, 1.5], {}]``)
    or ``["copies", [x, y], {}]`` (a graph returning an input as is).  The kernel and the
    grader build the same graph from the same data.

    >>> build_graph(["random_dag", [2, 5, 1], {"density": 0.5, "rng": 3}])
    LCG(8 vertices: 2 inputs, 5 intermediates, 1 output; 16 edges)
    >>> build_graph(["open", ["/etc/passwd"], {}])
    Traceback (most recent call last):
    ...
    ValueError: a case names the graph builder 'open'; the builders are copies, edge_beats_vertex, \
figure1, independent_paths, interleaved, lab, lecture, random_dag, random_layered, two_outputs
    """
    builders = _graph_builders()
    if not (isinstance(spec, (list, tuple)) and len(spec) == 3 and isinstance(spec[1], (
            list, tuple)) and isinstance(spec[2], dict)):
        raise ValueError(f"a graph is described as [builder, args, kwargs], not {spec!r:.80}")
    name, args, kwargs = spec
    if name not in builders:
        raise ValueError(f"a case names the graph builder {name!r}; the builders are "
                         f"{', '.join(sorted(builders))}")
    return builders[name](*args, **kwargs)


def run_check(spec, fns) -> None:
    """Exercise ``spec``'s check in the student's own process: probe each published case
    and judge the answer, as the grader would see it (sent through :mod:`wire` and back);
    the first failure raises :class:`CheckFailed`, else the success line is printed."""
    cases = spec.cases(None)
    for case in cases:
        where = spec.where(case)
        try:
            answer = spec.probe(fns, case, where)
        except CheckFailed as failure:
            if failure.reason != "timed out" or spec.slow is None:
                raise
            raise CheckFailed(f"{failure}{spec.slow(case)}", reason="timed out") from None
        spec.judge(case, wire.decode(wire.encode(answer)), where)
    passed(f"Exercise {spec.number}", spec.passed.format(n=len(cases)))
