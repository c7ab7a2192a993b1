"""Argument checks shared by several modules."""

import numpy as np


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
