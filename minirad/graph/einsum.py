"""The Jacobian block of a contraction: :class:`Einsum`, one operand of ``np.einsum``.

Every product that sums over paired axes (``np.dot``, ``np.inner``,
``np.outer``, ``np.tensordot``, ``np.einsum`` itself, a trace) is linear in
each operand when the others are held fixed.  The edge from operand ``i``
keeps the other operands and applies the same ``einsum`` with the variable in
place ``i``; its transpose contracts the output with the others back onto the
variable's axes.  So ``np.einsum("ij,jk->ik", A, B)`` gives the edge from
``A`` the block ``dA -> einsum("ij,jk->ik", dA, B)`` (it keeps ``B``) and its
transpose ``Y -> einsum("ik,jk->ij", Y, B)``: the matrix of ``A @ B`` never
formed, whatever the subscripts.

The subscripts are explicit (``"ij,jk->ik"``, letters only: the tracer
spells out ellipses and numpy's implicit output first).  A letter repeated
within the variable's subscripts (``"ii->"``, a trace) puts the transpose on
a diagonal; a letter of length 1 in the variable but longer elsewhere is
broadcast, as numpy does, and summed back by the transpose.

>>> import numpy as np
>>> B = np.array([[1.0, 2.0], [3.0, 4.0]])
>>> op = Einsum("ij,jk->ik", [B], position=0, variable_shape=(1, 2))
>>> op.apply(np.array([[1.0, 1.0]]))              # dA @ B
array([[4., 6.]])
>>> op.apply_transpose(np.array([[1.0, 0.0]]))    # Y @ B.T
array([[1., 3.]])
>>> Einsum("ii->", [], 0, (2, 2)).apply_transpose(np.array(5.0))   # a trace's transpose
array([[5., 0.],
       [0., 5.]])
"""

from __future__ import annotations

import math
import string

import numpy as np

from .operators import Operator, Retained, fresh_key, retained_spec

__all__ = ["MAX_OPERANDS", "Einsum"]

#: the most operands one contraction may have (numpy's einsum takes at most 32)
MAX_OPERANDS = 32


def _parse(subscripts: str, count: int) -> tuple[list[str], str]:
    """The explicit subscripts ``"ij,jk->ik"`` as the inputs' letters and the output's."""
    if not isinstance(subscripts, str) or subscripts.count("->") != 1:
        raise ValueError(f"einsum subscripts must be explicit, 'ij,jk->ik', not "
                         f"{subscripts!r}")
    inputs, out = subscripts.split("->")
    inputs = inputs.split(",")
    if any(not (c.isascii() and c.isalpha()) for c in "".join(inputs) + out):
        raise ValueError(f"einsum subscripts are ASCII letters, commas and one '->', not "
                         f"{subscripts!r}")
    if len(inputs) != count:
        raise ValueError(f"the subscripts {subscripts!r} name {len(inputs)} operands, not "
                         f"{count}")
    if len(set(out)) != len(out) or not set(out) <= set("".join(inputs)):
        raise ValueError(f"the output of {subscripts!r} must name distinct letters of its "
                         f"inputs")
    return inputs, out


def letter_sizes(inputs: list[str], shapes: list[tuple]) -> dict[str, int]:
    """The length of each letter over the operands, numpy's way: equal, or 1 broadcast.

    >>> letter_sizes(["ij", "jk"], [(2, 3), (1, 4)])
    {'i': 2, 'j': 3, 'k': 4}
    """
    sizes: dict[str, int] = {}
    for letters, shape in zip(inputs, shapes):
        if len(letters) != len(shape):
            raise ValueError(f"subscripts {letters!r} name {len(letters)} axes of an operand "
                             f"of shape {tuple(shape)}")
        own: dict[str, int] = {}
        for c, n in zip(letters, shape):
            if own.setdefault(c, n) != n:
                raise ValueError(f"the repeated letter {c!r} of {letters!r} needs axes of one "
                                 f"length, not shape {tuple(shape)}")
            known = sizes.get(c, n)
            if known != n and 1 not in (known, n):
                raise ValueError(f"the letter {c!r} has lengths {known} and {n}, which do not "
                                 f"broadcast")
            sizes[c] = max(known, n) if 1 in (known, n) else n
    return sizes


class Einsum(Operator):
    """``x -> np.einsum(subscripts, *stored, with x at place position)``: the edge from
    one operand of a contraction, keeping the others (``stored``, in order)."""

    kind = "einsum"

    def __init__(self, subscripts: str, stored, position: int, variable_shape, dtype=None,
                 retained=None):
        # in C order, as a saved file gives them back: the same einsum, the same rounding
        # (ascontiguousarray makes a number an array of shape (1,): the shape is put back)
        stored = [np.ascontiguousarray(s).reshape(np.shape(s)) for s in stored]
        if len(stored) >= MAX_OPERANDS:
            raise ValueError(f"a contraction has at most {MAX_OPERANDS} operands")
        inputs, out = _parse(subscripts, len(stored) + 1)
        position = int(position)
        if not 0 <= position <= len(stored):
            raise ValueError(f"position {position} is not one of the {len(stored) + 1} operands")
        variable_shape = tuple(int(n) for n in variable_shape)
        shapes = [s.shape for s in stored]
        shapes.insert(position, variable_shape)
        sizes = letter_sizes(inputs, shapes)
        free = [c for c in string.ascii_letters if c not in sizes]
        if not free:
            raise ValueError("a contraction of all 52 letters leaves none for a stack of "
                             "vectors")
        if dtype is None:
            dtype = np.result_type(*[s.dtype for s in stored], np.float32)
        if retained is None:
            retained = tuple(Retained(fresh_key("einsum"), s.size * s.dtype.itemsize * 8)
                             for s in stored)
        super().__init__(tuple(sizes[c] for c in out), variable_shape, dtype, retained)
        self.subscripts, self.stored, self.position = subscripts, stored, position
        self._inputs, self._out, self._sizes, self._spare = inputs, out, sizes, free[0]

    @property
    def flops(self) -> int:
        """Multiply-adds of the plain loop over every letter (numpy's contraction order
        may need fewer)."""
        return math.prod(self._sizes.values()) * max(1, len(self.stored))

    def _apply(self, xs):
        z = self._spare
        inputs = list(self._inputs)
        inputs[self.position] = z + inputs[self.position]
        operands = list(self.stored)
        operands.insert(self.position, xs)
        return np.einsum(f"{','.join(inputs)}->{z}{self._out}", *operands, optimize=True)

    def _transpose(self, ys):
        z, letters = self._spare, self._inputs[self.position]
        unique = "".join(dict.fromkeys(letters))
        others = [s for i, s in enumerate(self._inputs) if i != self.position]
        reached = "".join(c for c in unique if c in self._out or any(c in s for s in others))
        g = np.einsum(f"{','.join([z + self._out, *others])}->{z}{reached}", ys, *self.stored,
                      optimize=True)
        # letters of the variable alone: every entry along them gets the same adjoint
        n, lengths = len(ys), iter(g.shape[1:])
        g = g.reshape((n,) + tuple(next(lengths) if c in reached else 1 for c in unique))
        mine = dict(zip(letters, self.in_shape))
        g = np.broadcast_to(g, (n,) + tuple(self._sizes[c] for c in unique))
        # letters broadcast from length 1: their adjoints add up
        summed = tuple(i + 1 for i, c in enumerate(unique) if mine[c] == 1 < self._sizes[c])
        if summed:
            g = g.sum(axis=summed, keepdims=True)
        if len(unique) == len(letters):
            return g
        diagonal = np.zeros((n,) + self.in_shape, dtype=g.dtype)
        np.einsum(f"{z}{letters}->{z}{unique}", diagonal)[...] = g   # a writeable view
        return diagonal

    def spec(self):
        return ({"subscripts": self.subscripts, "position": self.position,
                 "variable_shape": list(self.in_shape), "dtype": self.dtype.name,
                 "retained": retained_spec(self)},
                {f"operand{i}": s for i, s in enumerate(self.stored)})

    def label(self):
        letters = self._inputs[self.position]
        return f"einsum {self.subscripts} in {letters}" if len(self._inputs) > 1 else \
            f"einsum {self.subscripts}"
