"""Argument checks shared by several modules."""

import functools

import numpy as np

from .graph.lcg import LCG
from .tracing import trace


def number_of_estimates(n) -> int:
    """``n``, the number of estimates to draw, as an int >= 1.

    >>> number_of_estimates(3)
    3
    >>> number_of_estimates(0)
    Traceback (most recent call last):
    ...
    ValueError: n (the number of estimates) must be at least 1, got 0
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n (the number of estimates) must be an int, not {type(n).__name__}")
    if n < 1:
        raise ValueError(f"n (the number of estimates) must be at least 1, got {n}")
    return int(n)


def takes_graph_or_function(function):
    """Let ``function(g, ...)`` also be called as ``function(f, *point, **options)``.

    Given an LCG, the call goes through unchanged (its positional arguments
    are the function's own: ``sampled_jacobians(g, 2, 300)``).  Given a
    Python function instead, the positional arguments are the point to trace
    it at, as in :func:`minirad.exact.jacobians.jacobian`, and the options must be
    passed by keyword: ``sampled_jacobians(f, 2.0, 5.0, k=1, n=300)``.

    >>> @takes_graph_or_function
    ... def size(g, scale=1):
    ...     return g.n_vertices * scale
    >>> size(lambda x, y: x * y + y, 2.0, 3.0, scale=10)
    40
    """
    @functools.wraps(function)
    def either(g_or_f, *args, **kwargs):
        if isinstance(g_or_f, LCG):
            return function(g_or_f, *args, **kwargs)
        if callable(g_or_f):
            if not args:
                raise TypeError(f"{function.__name__}({getattr(g_or_f, '__name__', 'f')}, ...) "
                                f"needs the point to trace the function at, e.g. "
                                f"{function.__name__}(f, 2.0, 5.0, k=1)")
            return function(trace(g_or_f, *args), **kwargs)
        raise TypeError(f"{function.__name__} works on an LCG (from minirad.tracing.tape or "
                        f"LCG.from_edges) or a function and a point to trace it at, not a "
                        f"{type(g_or_f).__name__}")

    return either
