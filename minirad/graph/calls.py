"""How a public function receives its graph: an LCG, or a Python function and a point.

Every public function of minirad that works on a graph is written for an
LCG, ``function(g, ...)``, and wrapped by :func:`takes_graph_or_function`,
so that it is called in either of two ways:

* ``function(g, ...)``: ``g`` is an LCG (from :func:`minirad.trace`,
  :meth:`~minirad.graph.lcg.LCG.from_edges` or :func:`minirad.load_graph`) and
  the other arguments are the function's own, positional or by keyword;
* ``function(f, *point, **options)``: ``f`` is a Python function, traced at
  ``point`` first (``minirad.trace(f, *point)``); the positional arguments
  are the point, so every other argument is passed by keyword.

The graph package imports nothing above it, so it does not know the
tracer: :mod:`minirad.tracing` hands :func:`minirad.trace` over when it is
imported (:func:`use_tracer`), which happens whenever ``minirad`` is.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from .lcg import LCG

__all__ = ["takes_graph_or_function", "use_tracer"]

# the one tracer, set by minirad.tracing when it is imported
_TRACERS: list[Callable] = []


def use_tracer(trace: Callable) -> None:
    """Tell :func:`takes_graph_or_function` how to turn a function into an LCG.

    Parameters
    ----------
    trace : callable
        ``trace(f, *point)`` returns the LCG of ``f`` at ``point``;
        :mod:`minirad.tracing` passes :func:`minirad.trace`.

    Returns
    -------
    None
    """
    _TRACERS[:] = [trace]


def takes_graph_or_function(function: Callable) -> Callable:
    """Let ``function(g, ...)`` also be called as ``function(f, *point, **options)``.

    Parameters
    ----------
    function : callable
        A function whose first parameter is an LCG.

    Returns
    -------
    callable
        The same function, which also takes a Python function and the point
        to trace it at in place of the LCG (then the options by keyword).
        ``inspect.signature`` and ``help`` show ``function``'s own.

    Raises
    ------
    TypeError
        When called with something that is neither an LCG nor a callable,
        or with a function but no point.

    Examples
    --------
    >>> @takes_graph_or_function
    ... def size(g, scale=1):
    ...     return g.n_vertices * scale
    >>> size(lambda x, y: x * y + y, 2.0, 3.0, scale=10)
    40
    >>> size(lambda x: x)
    Traceback (most recent call last):
    ...
    TypeError: size(f, ...) needs the point to trace the function at, e.g. size(f, 2.0, 5.0)
    >>> size(3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: size works on an LCG (...) or on a function and the point to trace it at, not int
    """
    name = function.__name__
    parameters = inspect.signature(function).parameters.values()
    # how many positional arguments may follow the graph (None: any number)
    room = None if any(p.kind is p.VAR_POSITIONAL for p in parameters) else sum(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters) - 1

    @functools.wraps(function)
    def on_graph_or_function(g, *args, **kwargs):
        if isinstance(g, LCG):
            if room is not None and len(args) > room:
                raise TypeError(f"{name} got an LCG and {len(args)} more positional "
                                f"argument(s), but takes {room}: a point to trace at goes "
                                f"with a function, {name}(f, 2.0, 5.0), and options go by "
                                f"keyword")
            return function(g, *args, **kwargs)
        if callable(g):
            if not args:
                raise TypeError(f"{name}(f, ...) needs the point to trace the function at, "
                                f"e.g. {name}(f, 2.0, 5.0)")
            if not _TRACERS:
                raise TypeError(f"{name} was given a function, but no tracer is set up; "
                                f"import minirad")
            return function(_TRACERS[0](g, *args), **kwargs)
        raise TypeError(f"{name} works on an LCG (minirad.trace(f, *point), LCG.from_edges) "
                        f"or on a function and the point to trace it at, not "
                        f"{type(g).__name__}")

    on_graph_or_function.takes_graph_or_function = True
    return on_graph_or_function
