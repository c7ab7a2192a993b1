"""What every exact way of getting a Jacobian returns: the matrix and its cost."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np

__all__ = ["Accumulation", "format_count"]

#: counts with more digits than this are shown as ``~1.2e6020``
EXACT_DIGITS = 15


def format_count(n) -> str:
    """An exact count (of paths, of operations) as text a person can read.

    Up to :data:`EXACT_DIGITS` digits it is written out; beyond, as
    ``~m.me<exponent>``.  Python prints no int above 4300 digits, and a deep
    graph's path count easily has more, so every message showing such a
    count goes through here.

    >>> format_count(12_345), format_count(2 ** 64), format_count(2 ** 20000)
    ('12345', '~1.8e19', '~4.0e6020')
    """
    if not isinstance(n, Integral):
        return str(n)
    n = int(n)
    if abs(n) < 10 ** EXACT_DIGITS:
        return str(n)
    exponent = math.floor(math.log10(abs(n)))  # math.log10 takes ints of any size
    mantissa = 10 ** (math.log10(abs(n)) - exponent)
    if round(mantissa, 1) >= 10:
        mantissa, exponent = mantissa / 10, exponent + 1
    return f"{'-' if n < 0 else ''}~{mantissa:.1f}e{exponent}"


@dataclass(frozen=True, eq=False)
class Accumulation:
    """A Jacobian together with what it cost to accumulate.

    ``jacobian`` has shape ``(n_outputs, n_inputs)`` (or the selected rows
    or columns of a sweep over a subset of seeds); ``multiplications`` and
    ``additions`` follow the method's cost convention; ``method`` names it.

    ``order`` is the elimination order (vertex names) for vertex
    elimination and None for the other methods.  Sweeps also keep their
    per-vertex values, one column per seed: ``tangents[v, j]`` is
    d v / d seeds[j] (forward sweeps) and ``adjoints[v, j]`` is
    d seeds[j] / d v (reverse sweeps); ``seeds`` lists the seed vertices.

    ``multiplications`` and ``additions`` may be left None and given as
    ``counts``, a function returning both: they are then computed the first
    time either is read (a sweep's counts need a reachability search that
    a caller who only wants the Jacobian should not pay for).

    Every exact method returns one: :func:`minirad.exact.sweeps.forward_sweep`,
    :func:`~minirad.exact.sweeps.reverse_sweep`, :func:`minirad.exact.paths.bauer`, and
    :func:`minirad.exact.elimination.eliminate`, whose
    :class:`~minirad.exact.elimination.Elimination` adds the graphs and steps.

    >>> from minirad import examples
    >>> from minirad.exact.jacobians import accumulate
    >>> [(r.method, r.order, r.operations) for r in
    ...  (accumulate(examples.lab(), method=m) for m in ("forward", "eliminate"))]
    [('forward', None, 7), ('eliminate', ('v3', 'v2'), 4)]
    """

    jacobian: np.ndarray
    multiplications: int
    additions: int
    method: str
    order: tuple[str, ...] | None = field(default=None, kw_only=True)
    tangents: np.ndarray | None = field(default=None, kw_only=True)
    adjoints: np.ndarray | None = field(default=None, kw_only=True)
    seeds: tuple[int, ...] = field(default=(), kw_only=True)
    counts: Callable[[], tuple[int, int]] | None = field(default=None, kw_only=True,
                                                         repr=False)

    def __post_init__(self):
        if self.counts is not None and self.multiplications is None:
            # no instance attribute: the first read falls through to __getattr__
            object.__delattr__(self, "multiplications")
            object.__delattr__(self, "additions")

    def __getattr__(self, name: str):
        counts = self.__dict__.get("counts")
        if name in ("multiplications", "additions") and counts is not None:
            multiplications, additions = counts()
            object.__setattr__(self, "multiplications", multiplications)
            object.__setattr__(self, "additions", additions)
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def operations(self) -> int:
        """Multiplications plus additions."""
        return self.multiplications + self.additions

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, jacobian shape "
                f"{self.jacobian.shape}, multiplications={format_count(self.multiplications)}, "
                f"additions={format_count(self.additions)})")
