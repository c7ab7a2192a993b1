"""The exercises of the labs: each declared once, with its cases, its probe and its judge.

An exercise is declared in its lab's module by decorating its *judge* with
:func:`exercise`::

    @exercise("2.1", "forward sweep", takes=("forward_sweep",), points=3, minutes=25,
              seconds=60, reference=("minirad.exact.sweeps", ...),
              cases=sweep_cases, probe=on_each_graph,
              passed="forward sweep agrees with minirad on {n} graphs")
    def check_forward_sweep(case, answer, where): ...

The three functions split a check where the grader needs it split:

* ``cases(rng)`` lists the inputs, as plain data (``{"name": ..., ...}``,
  what :mod:`minirad.labs.wire` carries): with ``rng=None`` the published
  cases a handout's check runs on, with a ``numpy.random.Generator`` the
  hidden cases the grader draws for one student (:func:`hidden_cases`);
  a case's ``"weight"`` (default 1) is its share of the exercise's points.
  A case holds the inputs only, never what the answer is (the student's code
  can read it in the kernel);
* ``probe(fns, case, where)`` runs the student's definitions (``fns``, in the
  order of ``takes``) on one case and returns what they gave, as plain data.
  It is the only part that runs in the student's kernel;
* the judge, ``judge(case, answer, where)``, compares that answer with
  minirad's own and raises :class:`~minirad.labs.checking.CheckFailed`
  (with a hint) when it is wrong.  The grader runs it in its own process.

The decorator returns the check students call in their notebook
(``labs.check_forward_sweep(forward_sweep)``): probe and judge on each
published case in turn, in the student's own process, one line on success.
``takes`` names the student's definitions the check is called with (the
grader fetches them from the submission), ``points`` and ``minutes`` (class
time) go into the syllabus, ``seconds`` is the grading limit for the whole
exercise, ``reference`` lists the modules (``"minirad.exact.sweeps"``) or
functions (``"minirad.exact.paths:count_paths"``) that compute what the
exercise asks for: the student's function may not enter them, in the
notebook (:func:`guard_reference`, "used the reference") as in the grader's
kernel (:mod:`minirad.labs.kernel`).

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
import hashlib
import hmac
import importlib
import inspect
import sys
import types
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

__all__ = ["EXERCISES", "Exercise", "UsedReference", "current_exercise", "exercise",
           "exercises_of_lab", "guard_reference", "hidden_cases"]


@dataclass(frozen=True)
class Exercise:
    """One exercise: its number (``"2.1"``), title, the student's names its check
    takes, points, class time in minutes, grading time limit in seconds, the
    reference it must not call, its cases, probe and judge (see the module's
    docstring), the success line, the modules its lab needs, and the check."""

    number: str
    title: str
    takes: tuple[str, ...]
    points: int
    minutes: int
    seconds: float
    reference: tuple[str, ...]
    cases: Callable = field(repr=False, compare=False)
    probe: Callable = field(repr=False, compare=False)
    judge: Callable = field(repr=False, compare=False)
    passed: str = field(default="", repr=False, compare=False)
    topic: str = field(default="", repr=False, compare=False)
    requires: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)
    slow: Callable | None = field(default=None, repr=False, compare=False)
    check: Callable = field(default=None, repr=False, compare=False)

    @property
    def lab(self) -> int:
        return int(self.number.split(".")[0])

    @property
    def label(self) -> str:
        """``"Exercise 2.1: forward sweep"``, as the lab's solution marker writes it."""
        return f"Exercise {self.number}: {self.title}"

    def where(self, case: dict) -> str:
        """How the messages name a case: ``"Exercise 2.1 (forward sweep), on figure1()"``."""
        return f"Exercise {self.number} ({self.topic or self.title}), on {case['name']}"


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
             seconds: float, cases: Callable, probe: Callable, passed: str,
             reference: tuple[str, ...] = (), topic: str = "",
             requires: tuple[tuple[str, str], ...] = (), slow: Callable | None = None):
    """Declare the judge it decorates as the judge of exercise ``number``; return the check.

    ``requires`` lists ``(module, extra)`` pairs: a module the lab needs beyond
    minirad's own dependencies, and the extra that installs it
    (``("sympy", "symbolic")``); the grader refuses to start without them.
    ``slow(case)``, if given, says why a case the student's function did not
    finish is slow (``" -- this graph has 3e21 paths; ..."``); it runs where the
    judge runs, so a case never carries what only the answer would reveal.
    """
    def declare(judge: Callable) -> Callable:
        @functools.wraps(judge)
        def check(*fns):
            from .checking import run_check

            token = _current.set(spec)
            try:
                return run_check(spec, fns)
            finally:
                _current.reset(token)

        check.__signature__ = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY) for name in takes])
        spec = Exercise(number, title, tuple(takes), points, minutes, seconds,
                        tuple(reference), cases, probe, judge, passed, topic,
                        tuple(requires), slow, check)
        if number in EXERCISES:
            raise ValueError(f"exercise {number} is declared twice")
        EXERCISES[number] = spec
        check.exercise = spec
        return check
    return declare


def hidden_cases(spec: Exercise, secret: bytes, student: str) -> list[dict]:
    """The cases the grader runs exercise ``spec`` on for ``student``: drawn by the
    exercise's own generator from a seed that is an HMAC of the student id and the
    exercise number under the instructor's ``secret``, so that nobody without the
    secret can compute them beforehand, and the same student gets the same cases
    when graded again.

    >>> spec = EXERCISES["2.1"]
    >>> secret = b"an instructor's secret"
    >>> ada, alan = (hidden_cases(spec, secret, s) for s in ("ada", "alan"))
    >>> [c["name"] for c in ada] == [c["name"] for c in hidden_cases(spec, secret, "ada")]
    True
    >>> [c["name"] for c in ada] == [c["name"] for c in alan]
    False
    """
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ValueError("the grader's secret must be at least 16 bytes")
    digest = hmac.new(secret, f"{student}\x00{spec.number}".encode(),
                      hashlib.sha256).digest()
    rng = np.random.default_rng(np.random.SeedSequence(int.from_bytes(digest, "big")))
    return spec.cases(rng)


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
