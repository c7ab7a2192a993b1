"""The guard that tells whether a student's function entered minirad's reference,
and which exercise's check is running.

Kept apart from :mod:`minirad.labs.exercise` (which declares the exercises) and
:mod:`minirad.labs.checking` (which runs them), since both use it.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import sys
import types
from contextlib import contextmanager

__all__ = ["UsedReference", "current_exercise", "exercise_running", "guard_reference",
           "reference_codes"]

_current: contextvars.ContextVar = contextvars.ContextVar("exercise", default=None)
#: True in the grader's kernel, whose watch (:mod:`minirad.labs.kernel`) replaces the
#: settrace guard of :func:`guard_reference` (and refuses sys.settrace to everyone)
GUARDED_ELSEWHERE = False


def current_exercise():
    """The exercise whose check is running, or None."""
    return _current.get()


@contextmanager
def exercise_running(spec):
    """Within the block, :func:`current_exercise` is ``spec``."""
    token = _current.set(spec)
    try:
        yield spec
    finally:
        _current.reset(token)


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
    codes = reference_codes(tuple(reference)) if reference and not GUARDED_ELSEWHERE else {}
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
