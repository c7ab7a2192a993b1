"""Temporary stand-in for ``minirad.labels.Algebra`` until issue 11 lands on main.

Only the type is here; the operator algebra itself lives in ``minirad.operators``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Algebra:
    """Two operations on edge labels and their costs (see CONTRACT: label algebra)."""

    name: str
    multiply: Callable
    add: Callable
    zero: object
    one: object
    multiply_cost: Callable
    add_cost: Callable
