"""Exercise checks for labs 1-3, the picture helper, and the tools checks are built from.

A check runs the student's function on several inputs (named example
graphs, seeded random DAGs, a few functions and points), compares each
answer with minirad's own, prints one line when everything agrees and
otherwise raises :class:`CheckFailed` saying what differs where.  The
message never shows minirad's code; it names the graph (or function) so
the student can rebuild it, e.g. ``labs.check_graphs()["figure1()"]``.

Building blocks for new checks (labs 4-6 use them too):

* :func:`check_graphs` -- the named graphs checks run on;
* :func:`call_student` -- call the student's function, turning its
  exceptions into a :class:`CheckFailed` naming the graph (a
  ``NotImplementedError`` from an unsolved stub passes through unchanged),
  optionally under a time limit;
* :func:`compare_jacobian` -- shape and entry-by-entry comparison with a
  readable message;
* :func:`passed` -- the success line.

>>> import numpy as np
>>> from minirad import examples
>>> def forward_sweep(g):                 # one tangent column per input
...     tangent = np.zeros((g.n_vertices, len(g.inputs)))
...     tangent[list(g.inputs), range(len(g.inputs))] = 1.0
...     for u, v, partial in g.edges():      # grouped by target, in vertex order
...         tangent[v] += partial * tangent[u]
...     return tangent[list(g.outputs)]
>>> check_forward_sweep(forward_sweep)
Exercise 2.1 passed: forward sweep agrees with minirad on 9 graphs
>>> check_forward_sweep(lambda g: np.zeros(len(g.inputs)))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
minirad.labs.checks.CheckFailed: Exercise 2.1 (forward sweep), on figure1(): your function \
returned shape (2,) but the Jacobian has shape (1, 2) (rows: outputs, columns: inputs)
"""

from __future__ import annotations

import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from numbers import Integral

import numpy as np

from .. import examples
from ..graph.lcg import LCG
from ..tracing import ops, trace
from .exercise import UsedReference, current_exercise, exercise, guard_reference

__all__ = [
    "CheckFailed", "as_numbers", "call_student", "check_central_difference", "check_count_paths",
    "check_directional_difference", "check_forward_sweep", "check_graphs",
    "check_reverse_sweep", "compare_jacobian", "output_folder", "passed", "show",
    "time_limit",
]

#: what the exercises of this module ask the student to write, in minirad
JACOBIAN_REFERENCE = ("minirad.exact.sweeps", "minirad.exact._engines", "minirad.exact.jacobians",
                      "minirad.exact.paths", "minirad.exact.elimination", "minirad.exact.orders")

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


# ------------------------------------------------------------ infrastructure
def _copies_graph() -> LCG:
    """An input returned as is and outputs listed out of vertex order."""
    return trace(lambda x, y: (x, x * y, ops.sin(y)), 2.0, 3.0)


_SWEEP_GRAPHS = {
    "figure1()": examples.figure1,
    "lecture()": examples.lecture,
    "lab()": examples.lab,
    "two_outputs()": examples.two_outputs,
    "copies (returns x, x*y, sin(y))": _copies_graph,
    "random_dag(3, 10, 2, rng=0)": lambda: examples.random_dag(3, 10, 2, rng=0),
    "random_dag(2, 25, 3, density=0.2, rng=1)":
        lambda: examples.random_dag(2, 25, 3, density=0.2, rng=1),
    "random_dag(4, 6, 1, density=0.5, rng=2)":
        lambda: examples.random_dag(4, 6, 1, density=0.5, rng=2),
    "interleaved(3, 4, partials='random', rng=0)":
        lambda: examples.interleaved(3, 4, partials="random", rng=0),
}

# Counting adds graphs whose path counts rule out enumeration (4.5e9 and 3^45 ~ 3e21 paths).
_COUNT_GRAPHS = {
    **_SWEEP_GRAPHS,
    "independent_paths(4, 6)": lambda: examples.independent_paths(4, 6),
    "interleaved(2, 10)": lambda: examples.interleaved(2, 10),
    "random_dag(2, 60, 2, density=0.5, rng=4)":
        lambda: examples.random_dag(2, 60, 2, density=0.5, rng=4),
    "interleaved(3, 45)": lambda: examples.interleaved(3, 45),
}

_SUITES = {"sweeps": _SWEEP_GRAPHS, "counts": _COUNT_GRAPHS}


def check_graphs(suite: str = "counts") -> dict[str, LCG]:
    """The graphs a check runs on, by the name its messages use.

    ``suite`` is ``"sweeps"`` (small graphs of every shape: one and several
    outputs, an input returned as is, seeded random DAGs, an interleaved
    graph) or ``"counts"`` (those plus graphs with up to 3^45 paths).

    >>> graphs = check_graphs("sweeps")
    >>> graphs["figure1()"]
    LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
    >>> len(check_graphs("counts")) > len(graphs)
    True
    """
    if suite not in _SUITES:
        raise ValueError(f"unknown suite {suite!r}; choose from {sorted(_SUITES)}")
    return {name: build() for name, build in _SUITES[suite].items()}


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
    minirad.labs.checks.CheckFailed: on a loop: your function took longer than 0.05 s and was \
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
    minirad.labs.checks.CheckFailed: on figure1(): your function raised ZeroDivisionError: \
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


def _low_precision(result) -> np.dtype | None:
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
    minirad.labs.checks.CheckFailed: on lab(): your function returned str; return the gradient
    """
    try:
        return np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        raise CheckFailed(f"{where}: {returned} {type(result).__name__}{advice}") from None


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
    minirad.labs.checks.CheckFailed: on lab(): your Jacobian entry [0, 1] is 3.2, expected 1.7
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
    low = _low_precision(result)
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


# ----------------------------------------------------------- lab 1: numbers
# (name, f, exact f', bound on |f'''| near x, x); the bound makes the
# central difference's truncation error h^2/6 * |f'''| checkable.
_SCALAR_CASES = [
    ("sin", math.sin, math.cos, lambda x, h: 1.0, 1.0),
    ("exp", math.exp, math.exp, lambda x, h: math.exp(x + h), 0.5),
    ("x**3 - 2*x", lambda x: x ** 3 - 2 * x, lambda x: 3 * x ** 2 - 2, lambda x, h: 6.0, 2.0),
    ("log", math.log, lambda x: 1 / x, lambda x, h: 2 / (x - h) ** 3, 2.0),
]
_STEPS = (1e-2, 1e-3, 1e-4)


def _one_sided_hint(f, x, h, value) -> str:
    """Name the usual slips when the student's number matches one of them."""
    candidates = {
        "the forward difference (f(x+h) - f(x)) / h, whose error shrinks only like h":
            (f(x + h) - f(x)) / h,
        "the backward difference (f(x) - f(x-h)) / h, whose error shrinks only like h":
            (f(x) - f(x - h)) / h,
        "(f(x+h) - f(x-h)) / h: divide by 2h, not h": (f(x + h) - f(x - h)) / h,
        "(f(x+h) - f(x-h)) / 2 * h: Python reads that as ((...) / 2) * h; write / (2 * h)":
            (f(x + h) - f(x - h)) / 2 * h,
    }
    for text, candidate in candidates.items():
        if abs(value - candidate) <= 1e-9 * max(1.0, abs(candidate)):
            return f" -- your number matches {text}"
    return ""


@exercise("1.1", "central difference", takes=("central_difference",), points=2, minutes=15,
          seconds=30, reference=("minirad.gradcheck",))
def check_central_difference(fn: Callable) -> None:
    """Exercise 1.1: ``fn(f, x, h)`` must return (f(x+h) - f(x-h)) / (2h).

    Runs ``fn`` on four smooth functions at three step sizes and requires
    the error against the exact derivative to stay within what a central
    difference makes: ``h**2 / 6 * max|f'''|`` plus a rounding allowance.
    A one-sided difference fails because its error is of order ``h``.

    >>> check_central_difference(lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h))
    Exercise 1.1 passed: central difference within its O(h^2) error on 4 functions x 3 step sizes
    """
    exercise, topic = "Exercise 1.1", "central difference"
    for name, f, fprime, third, x in _SCALAR_CASES:
        for h in _STEPS:
            where = location(exercise, topic, f"{name} at x={x} with h={h:g}")
            value = call_student(fn, where, f, x, h)
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise CheckFailed(f"{where}: your function returned {value!r}; expected one "
                                  f"float") from None
            exact = fprime(x)
            size = max(abs(f(x + h)), abs(f(x - h)), abs(f(x)))
            bound = h * h / 6 * third(x, h) * 1.01 + 8 * EPS * size / h + 4 * EPS * abs(exact)
            error = abs(value - exact)
            if not error <= bound:
                raise CheckFailed(
                    f"{where}: your estimate is {value:.10g}, the exact derivative is "
                    f"{exact:.10g}; the error {error:.2g} exceeds the {bound:.2g} a central "
                    f"difference makes here{_one_sided_hint(f, x, h, value)}")
    passed(exercise, f"central difference within its O(h^2) error on "
                     f"{len(_SCALAR_CASES)} functions x {len(_STEPS)} step sizes")


def _lecture_f(v):
    return math.log(v[0]) + v[0] * v[1] - math.sin(v[1])


def _lecture_grad(v):
    return np.array([1 / v[0] + v[1], v[0] - math.cos(v[1])])


_A = np.array([[4.0, 1.0, 0.0, 0.5], [1.0, 3.0, -1.0, 0.0],
               [0.0, -1.0, 2.0, 0.3], [0.5, 0.0, 0.3, 1.0]])
_B = np.array([1.0, -2.0, 0.5, 3.0])

# (name, f, exact gradient, point)
_VECTOR_CASES = [
    ("the lecture's ln(x1) + x1*x2 - sin(x2)", _lecture_f, _lecture_grad, np.array([2.0, 5.0])),
    ("the lab's x*y + sin(x)", lambda v: v[0] * v[1] + math.sin(v[0]),
     lambda v: np.array([v[1] + math.cos(v[0]), v[0]]), np.array([2.0, 3.0])),
    ("a quadratic in 4 variables", lambda v: 0.5 * v @ _A @ v + _B @ v,
     lambda v: _A @ v + _B, np.array([0.3, -1.0, 2.0, 0.5])),
]


def _directions(dimension: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Two random unit directions and one of length 2 (delta is not normalised)."""
    unit = [d / np.linalg.norm(d) for d in rng.standard_normal((2, dimension))]
    return unit + [2.0 * unit[0]]


@exercise("1.2", "directional difference", takes=("directional_difference",), points=2,
          minutes=15, seconds=30, reference=("minirad.gradcheck",))
def check_directional_difference(fn: Callable) -> None:
    """Exercise 1.2: ``fn(f, x, delta, h)`` must return (f(x + h delta) - f(x - h delta)) / (2h).

    That number approximates ``delta @ grad f(x)`` with an O(h^2) error.
    The check compares with the exact directional derivative along random
    directions (one of them of length 2: ``delta`` must not be normalised),
    allowing a few times the error of a correct central difference.

    >>> check_directional_difference(
    ...     lambda f, x, d, h: (f(x + h * d) - f(x - h * d)) / (2 * h))
    Exercise 1.2 passed: directional difference matches delta . grad f on 3 functions x 3 directions
    """
    exercise, topic = "Exercise 1.2", "directional difference"
    rng = np.random.default_rng(12)
    h = 1e-3
    for name, f, grad, x in _VECTOR_CASES:
        for delta in _directions(len(x), rng):
            where = location(exercise, topic, f"{name} at x={x.tolist()} along "
                                           f"delta={np.round(delta, 3).tolist()}")
            value = call_student(fn, where, f, x.copy(), delta.copy(), h)
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise CheckFailed(f"{where}: your function returned {value!r}; expected one "
                                  f"float") from None
            exact = float(delta @ grad(x))
            reference = (f(x + h * delta) - f(x - h * delta)) / (2 * h)
            allowed = 4 * abs(reference - exact) + 1e-9 * (1 + abs(exact))
            if not abs(value - exact) <= allowed:
                hint = ""
                forward = (f(x + h * delta) - f(x)) / h
                if abs(value - forward) <= 1e-9 * max(1.0, abs(forward)):
                    hint = " -- your number matches the one-sided (forward) difference"
                elif abs(value * np.linalg.norm(delta) - exact) <= allowed:
                    hint = " -- it looks as if you normalised delta; use it as given"
                elif abs(value - 2 * exact) <= 2 * allowed:
                    hint = (" -- that is twice delta . grad f: the two points are 2h apart, so "
                            "divide by 2h, not h")
                elif abs(2 * value - exact) <= allowed:
                    hint = (" -- that is half of delta . grad f: divide the difference by 2h, "
                            "not by 4h (or h / 2 steps)")
                raise CheckFailed(f"{where}: your estimate is {value:.10g}, but delta . grad "
                                  f"f(x) = {exact:.10g} (a central difference is off by only "
                                  f"{abs(reference - exact):.2g} here){hint}")
    passed(exercise, f"directional difference matches delta . grad f on "
                     f"{len(_VECTOR_CASES)} functions x 3 directions")


# ------------------------------------------------------------ lab 2: sweeps
def _overwrite_variants(g: LCG, direction: str, partials=None) -> list[np.ndarray]:
    """What a sweep that overwrites (``=``) instead of adding (``+=``) computes.

    With ``=`` each vertex keeps only one contribution: the last one its loop
    wrote.  Which one that is depends on the order the loop visits the edges
    in, so this returns one Jacobian per natural choice: forward, the first
    or last predecessor in operand order (a loop over ``g.predecessors(v)``
    or ``g.edges()``) or by vertex number (a loop pushing along
    ``g.successors(u)``); reverse, the lowest or highest-numbered successor.
    ``partials`` replaces ``g``'s (all ones: the path counts of Exercise 3.1).
    """
    partials = g.partials if partials is None else np.asarray(partials, dtype=float)
    n = g.n_vertices
    if direction == "forward":
        incoming = [[] for _ in range(n)]  # in operand order: edges are grouped by target
        for e, (u, v) in enumerate(zip(g.sources.tolist(), g.targets.tolist())):
            incoming[v].append((u, partials[e]))
        rules = (lambda edges: edges[-1], lambda edges: edges[0],
                 lambda edges: max(edges, key=lambda edge: edge[0]),
                 lambda edges: min(edges, key=lambda edge: edge[0]))
        variants = []
        for keep in rules:
            tangents = np.zeros((n, len(g.inputs)))
            tangents[list(g.inputs), range(len(g.inputs))] = 1.0
            for v in range(n):
                if incoming[v]:
                    u, d = keep(incoming[v])
                    tangents[v] = d * tangents[u]
            variants.append(tangents[list(g.outputs)])
    else:
        outgoing = [[] for _ in range(n)]
        for e, (u, v) in enumerate(zip(g.sources.tolist(), g.targets.tolist())):
            outgoing[u].append((v, partials[e]))
        variants = []
        for keep in (min, max):
            adjoints = np.zeros((n, len(g.outputs)))
            adjoints[list(g.outputs), range(len(g.outputs))] = 1.0
            for u in reversed(range(n)):
                if outgoing[u]:
                    v, d = keep(outgoing[u], key=lambda edge: edge[0])
                    adjoints[u] = d * adjoints[v]
            variants.append(adjoints[list(g.inputs)].T)
    return variants


def _matches_any(result, candidates, rtol: float = 1e-9) -> bool:
    """Whether ``result`` equals one of ``candidates`` (arrays), to ``rtol``."""
    try:
        mine = np.asarray(result, dtype=float)
    except (TypeError, ValueError):
        return False
    for candidate in candidates:
        scale = max(1.0, float(np.max(np.abs(candidate), initial=0.0)))
        if mine.shape == candidate.shape and np.all(np.abs(mine - candidate) <= rtol * scale):
            return True
    return False


_OVERWRITE_HINT = {
    "forward": (" -- your answer matches a sweep in which each vertex keeps only one incoming "
                "contribution: a vertex with several incoming edges must ADD their "
                "contributions (tangent[v] += ...), not overwrite them (=)"),
    "reverse": (" -- your answer matches a sweep in which each vertex keeps only one "
                "contribution from its uses: a vertex with several outgoing edges (used "
                "several times) must ADD the adjoints they pass back (adjoint[u] += ...), not "
                "overwrite them (=)"),
    "counts": (" -- your counts match a recurrence in which each vertex keeps only one "
               "predecessor's counts: a vertex with several incoming edges must ADD the counts "
               "of all its predecessors (+=), not overwrite them (=)"),
}


def _check_jacobian_fn(fn, exercise, topic, reference, direction) -> None:
    graphs = check_graphs("sweeps")
    for name, g in graphs.items():
        where = location(exercise, topic, name)
        result = call_student(fn, where, g, seconds=60)
        if isinstance(result, tuple):
            raise CheckFailed(f"{where}: your function returned a tuple; return only the "
                              f"Jacobian, a numpy array of shape (n_outputs, n_inputs)")
        try:
            compare_jacobian(result, reference(g), where)
        except CheckFailed as failure:
            if _matches_any(result, _overwrite_variants(g, direction)):
                raise CheckFailed(f"{failure}{_OVERWRITE_HINT[direction]}") from None
            raise
    passed(exercise, f"{topic} agrees with minirad on {len(graphs)} graphs")


@exercise("2.1", "forward sweep", takes=("forward_sweep",), points=3, minutes=25, seconds=60,
          reference=JACOBIAN_REFERENCE)
def check_forward_sweep(fn: Callable) -> None:
    """Exercise 2.1: ``fn(g)`` returns the Jacobian of LCG ``g`` (shape (n_outputs, n_inputs)).

    Compared with :func:`minirad.exact.sweeps.forward_sweep` on every graph of
    ``check_graphs("sweeps")``.
    """
    from ..exact.sweeps import forward_sweep

    _check_jacobian_fn(fn, "Exercise 2.1", "forward sweep", lambda g: forward_sweep(g).jacobian,
                       "forward")


@exercise("2.2", "reverse sweep", takes=("reverse_sweep",), points=3, minutes=25, seconds=60,
          reference=JACOBIAN_REFERENCE)
def check_reverse_sweep(fn: Callable) -> None:
    """Exercise 2.2: ``fn(g)`` returns the Jacobian of LCG ``g`` by a reverse sweep.

    Same contract and graphs as :func:`check_forward_sweep`, compared with
    :func:`minirad.exact.sweeps.reverse_sweep`.

    >>> def reverse_sweep(g):                 # one adjoint column per output
    ...     adjoint = np.zeros((g.n_vertices, len(g.outputs)))
    ...     adjoint[list(g.outputs), range(len(g.outputs))] = 1.0
    ...     for u, v, partial in reversed(list(g.edges())):
    ...         adjoint[u] += partial * adjoint[v]
    ...     return adjoint[list(g.inputs)].T
    >>> check_reverse_sweep(reverse_sweep)
    Exercise 2.2 passed: reverse sweep agrees with minirad on 9 graphs
    >>> from minirad.exact import sweeps                # minirad's own is not an answer
    >>> check_reverse_sweep(lambda g: sweeps.reverse_sweep(g).jacobian)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checks.CheckFailed: Exercise 2.2 (reverse sweep), on figure1(): used the \
reference -- your function called minirad's reverse_sweep (minirad.exact.sweeps), ...
    """
    from ..exact.sweeps import reverse_sweep

    _check_jacobian_fn(fn, "Exercise 2.2", "reverse sweep", lambda g: reverse_sweep(g).jacobian,
                       "reverse")


# ------------------------------------------------------------- lab 3: paths
def _exact_hint(kind: str, largest: int) -> str:
    """Why a count came out wrong, from the kind of number that holds it (only when
    ``largest``, the graph's largest count, is too big for that kind to hold)."""
    if kind == "f" and largest > 2 ** 53:
        return (" -- your entries are floats, which keep only 53 bits (about 16 digits); "
                "count with Python ints")
    if kind in ("i", "u") and largest > 2 ** 31 - 1:  # int32 on some platforms
        return (" -- numpy integers silently wrap around past 2**63 - 1 (about 9.2e18); count "
                "with Python ints (e.g. a numpy array with dtype=object, or lists)")
    return ""


def _number_kind(raw: np.ndarray) -> str:
    """numpy's dtype kind, or for an object array the kind of its first non-int entry."""
    if raw.dtype.kind != "O":
        return raw.dtype.kind
    for value in raw.flat:
        if isinstance(value, (float, np.floating)):
            return "f"
        if isinstance(value, np.integer):
            return "i"
    return "O"


@exercise("3.1", "count paths", takes=("count_paths",), points=3, minutes=30, seconds=150,
          reference=JACOBIAN_REFERENCE)
def check_count_paths(fn: Callable, seconds: float = 10.0) -> None:
    """Exercise 3.1: ``fn(g)`` returns the exact number of paths from each input
    to each output, shape (n_outputs, n_inputs).

    Compared entry by entry, exactly, with :func:`minirad.exact.paths.count_paths`
    on ``check_graphs("counts")``, which includes graphs with about 4.5e9
    and 3^45 (about 3e21) paths.  Walking the paths one by one cannot finish
    on those (each graph gets ``seconds``); counts held in floats or numpy
    int64 are inexact there, so only integer dynamic programming passes.

    >>> def count_paths(g):                   # Python ints keep every digit
    ...     counts = np.zeros((g.n_vertices, len(g.inputs)), dtype=object)
    ...     counts[list(g.inputs), range(len(g.inputs))] = 1
    ...     for u, v, _ in g.edges():
    ...         counts[v] += counts[u]
    ...     return counts[list(g.outputs)]
    >>> check_count_paths(count_paths)
    Exercise 3.1 passed: path counts exact on 13 graphs (the largest: 2954312706550833698643)
    """
    from ..exact.paths import count_paths

    exercise, topic = "Exercise 3.1", "count paths"
    graphs = check_graphs("counts")
    largest = 0
    for name, g in graphs.items():
        where = location(exercise, topic, name)
        expected = count_paths(g)
        total = sum(int(c) for c in expected.flat)
        slow = (f" -- this graph has {total} input-output paths; visiting them one by one "
                f"cannot finish, so count by dynamic programming over the vertices")
        result = call_student(fn, where, g, seconds=seconds, slow_hint=slow)
        most = max((int(c) for c in expected.flat), default=0)
        largest = max(largest, most)
        try:
            raw = np.asarray(result)
            mine = np.asarray(result, dtype=object)  # Python ints keep every digit
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: your function returned {type(result).__name__}, not "
                              f"an array of counts") from None
        if mine.shape != expected.shape:
            hint = " -- did you return the transpose?" if mine.shape == expected.shape[::-1] \
                else ""
            raise CheckFailed(f"{where}: your function returned shape {mine.shape} but the "
                              f"counts have shape {expected.shape} (rows: outputs, columns: "
                              f"inputs){hint}")
        for index in np.ndindex(expected.shape):
            value, exact = mine[index], int(expected[index])
            right = isinstance(value, (Integral, float, np.floating)) and value == exact
            if not right:
                shown = ", ".join(map(str, index))
                if _matches_any(mine, _overwrite_variants(g, "forward", np.ones(g.n_edges)),
                                rtol=0.0):
                    hint = _OVERWRITE_HINT["counts"]
                else:
                    hint = _exact_hint(_number_kind(raw), most)
                raise CheckFailed(f"{where}: your count for entry [{shown}] is {value!r}, "
                                  f"expected exactly {exact}{hint}")
    passed(exercise, f"path counts exact on {len(graphs)} graphs (the largest: {largest})")
