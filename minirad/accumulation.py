"""What every exact way of getting a Jacobian returns: the matrix and its cost."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Accumulation"]


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

    Every exact method returns one: :func:`minirad.sweeps.forward_sweep`,
    :func:`~minirad.sweeps.reverse_sweep`, :func:`minirad.paths.bauer`, and
    :func:`minirad.elimination.eliminate`, whose
    :class:`~minirad.elimination.Elimination` adds the graphs and steps.

    >>> from minirad import examples
    >>> from minirad.jacobian import accumulate
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

    @property
    def operations(self) -> int:
        """Multiplications plus additions."""
        return self.multiplications + self.additions

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(method={self.method!r}, jacobian shape "
                f"{self.jacobian.shape}, multiplications={self.multiplications}, "
                f"additions={self.additions})")
