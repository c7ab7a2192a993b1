"""The exercises of the labs, each declared next to its check, and the reference guard.

A check is declared with :func:`exercise`, which records what an instructor
and the grader need to know about it::

    @exercise("2.1", "forward sweep", takes=("forward_sweep",), points=3, minutes=25,
              seconds=60, reference=("minirad.exact.sweeps", ...))
    def check_forward_sweep(fn): ...

``takes`` names the student's definitions the check is called with (the
grader fetches them from the submission), ``points`` and ``minutes`` (class
time) go into the syllabus and the points table, ``seconds`` is the time the
grader allows the whole check.  ``reference`` lists the modules
(``"minirad.exact.sweeps"``) or functions (``"minirad.exact.paths:count_paths"``)
that compute what the exercise asks for: while the check runs the student's
function, entering any of them ends the call and the check fails with
"used the reference", so that minirad's own answer cannot be handed in,
directly or through a public function that calls it.

>>> from minirad import labs
>>> spec = labs.EXERCISES["2.1"]
>>> spec.title, spec.takes, spec.lab
('forward sweep', ('forward_sweep',), 2)
>>> from minirad.exact.sweeps import forward_sweep
>>> labs.check_forward_sweep(lambda g: forward_sweep(g).jacobian)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 2.1 (forward sweep), on figure1(): used the \
reference -- your function called minirad's forward_sweep (minirad.exact.sweeps)...
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import sys
import types
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["EXERCISES", "Exercise", "UsedReference", "current_exercise", "exercise",
           "exercises_of_lab", "guard_reference"]


@dataclass(frozen=True)
class Exercise:
    """One exercise: its number (``"2.1"``), title, the student's names its check
    takes, points, class time in minutes, grading time limit in seconds, the
    reference it must not call, and the check itself."""

    number: str
    title: str
    takes: tuple[str, ...]
    points: int
    minutes: int
    seconds: float
    reference: tuple[str, ...]
    check: Callable = field(repr=False, compare=False)

    @property
    def lab(self) -> int:
        return int(self.number.split(".")[0])

    @property
    def label(self) -> str:
        """``"Exercise 2.1: forward sweep"``, as the lab's solution marker writes it."""
        return f"Exercise {self.number}: {self.title}"


EXERCISES: dict[str, Exercise] = {}
_current: contextvars.ContextVar[Exercise | None] = contextvars.ContextVar("exercise",
                                                                          default=None)


def current_exercise() -> Exercise | None:
    """The exercise whose check is running, or None."""
    return _current.get()


def exercises_of_lab(lab: int) -> list[Exercise]:
    """The exercises of lab ``lab``, in order.

    >>> [e.number for e in exercises_of_lab(2)]
    ['2.1', '2.2']
    """
    found = [e for e in EXERCISES.values() if e.lab == lab]
    return sorted(found, key=lambda e: int(e.number.split(".")[1]))


def exercise(number: str, title: str, *, takes: tuple[str, ...], points: int, minutes: int,
             seconds: float, reference: tuple[str, ...] = ()):
    """Declare the check it decorates as the check of exercise ``number``."""
    def declare(check: Callable) -> Callable:
        @functools.wraps(check)
        def run(*args, **kwargs):
            token = _current.set(spec)
            try:
                return check(*args, **kwargs)
            finally:
                _current.reset(token)

        spec = Exercise(number, title, tuple(takes), points, minutes, seconds,
                        tuple(reference), run)
        if number in EXERCISES:
            raise ValueError(f"exercise {number} is declared twice")
        EXERCISES[number] = spec
        run.exercise = spec
        return run
    return declare


# ------------------------------------------------------------ the reference guard
class UsedReference(BaseException):
    """Raised inside the student's call when it enters the reference.  A
    BaseException, so that the student's ``except Exception`` does not hide it."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _resolve(name: str):
    module_name, _, attribute = name.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attribute) if attribute else module
    except (ImportError, AttributeError) as error:
        raise ValueError(f"the reference {name!r} does not exist ({error}); name a module "
                         f"('minirad.exact.sweeps') or a function in it "
                         f"('minirad.exact.paths:count_paths')") from None


def _code_objects(obj, module_name: str, found: dict) -> None:
    """Every code object of a function or class (nested functions included), mapped to
    a name a student recognises."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        for part in (obj.fget, obj.fset, obj.fdel):
            if part is not None:
                _code_objects(part, module_name, found)
        return
    if inspect.isclass(obj):
        for member in vars(obj).values():
            _code_objects(member, module_name, found)
        return
    code = getattr(inspect.unwrap(obj), "__code__", None) if callable(obj) else None
    if code is None:
        return
    name = f"{getattr(obj, '__qualname__', code.co_name)} ({module_name})"
    stack = [code]
    while stack:
        current = stack.pop()
        found.setdefault(id(current), (name, current))  # keep the code alive with its id
        stack += [c for c in current.co_consts if isinstance(c, types.CodeType)]


@functools.cache
def reference_codes(reference: tuple[str, ...]) -> dict[int, tuple[str, types.CodeType]]:
    """``{id(code): (name, code)}`` for every function of the named modules or functions."""
    found: dict = {}
    for name in reference:
        obj = _resolve(name)
        if isinstance(obj, types.ModuleType):
            for member in vars(obj).values():
                if getattr(member, "__module__", None) == obj.__name__:
                    _code_objects(member, obj.__name__, found)
        else:
            _code_objects(obj, name.partition(":")[0], found)
    return found


@contextmanager
def guard_reference(reference: tuple[str, ...], used: list | None = None):
    """Within the block, entering any function of ``reference`` raises
    :class:`UsedReference`; ``used`` (a list, also yielded) records what was
    entered, even if the student's code swallowed the exception.  A block
    that switches the guard off (``sys.settrace``) is recorded as such.

    >>> with guard_reference(("minirad.exact.paths:count_paths",)) as used:
    ...     try:
    ...         from minirad import examples
    ...         from minirad.exact.paths import count_paths
    ...         count_paths(examples.lab())
    ...     except UsedReference:
    ...         pass
    >>> used
    ['count_paths (minirad.exact.paths)']
    """
    codes = reference_codes(tuple(reference)) if reference else {}
    used = [] if used is None else used
    if not codes:
        yield used
        return

    def watch(frame, event, arg):
        if event == "call":
            entry = codes.get(id(frame.f_code))
            if entry is not None and entry[1] is frame.f_code:
                used.append(entry[0])
                raise UsedReference(entry[0])
        return None  # no line events: only calls are watched

    previous = sys.gettrace()
    sys.settrace(watch)
    try:
        yield used
    except BaseException:
        # an exception raised while the watch itself runs (a time limit's alarm) unsets it
        # too, so a failed call says nothing about switching it off; it scores 0 anyway
        sys.settrace(previous)
        raise
    switched_off = sys.gettrace() is not watch and not used
    sys.settrace(previous)
    if switched_off:
        used.append("sys.settrace (your code switched off the grader's watch)")
