"""A straight-line numpy program being written, and the symbolic linear combinations
code generation multiplies and adds while it writes one.

:mod:`minirad.tracing.codegen` writes a traced graph out as Python.  Two pieces
do the bookkeeping:

* :class:`Program` holds the statements written so far, one assignment each,
  with the variables each one reads.  It names variables, binds the constants
  the code refers to, reuses a value already computed (the same expression is
  written once), places a statement that reads forward values only among the
  forward statements (a partial derivative is computed where its operands are,
  so they can be freed), and in the end writes the source with ``del`` after the
  last read of every variable.
* :class:`Linear` is a derivative not written yet: ``const + sum(coef * var)``
  over variables of the program.  Multiplying by a number (the 0.01 of
  ``0.01 * x``, the -1 of a subtraction) only changes coefficients; two
  variables are multiplied, and terms added, in code, once their coefficients
  are settled.  In *exact* mode every coefficient is +1 or -1 (changing a sign is
  exact in floating point), and terms are added in the order they came, so the
  program computes what the reference sweep computes, bit for bit.

>>> p = Program(exact=False)
>>> u, d = p.parameter("u"), p.parameter("d")
>>> term = p.multiply(Linear.of(u, 0.01), Linear.of(d))   # 0.01 u d: one product
>>> p.materialize(p.add(term, Linear.of(u, 0.01)), "g")   # 0.01 (u d + u)
'g'
>>> print(p.source("f", ["u", "d"], "g"))
def f(u, d):
    t1 = u * d
    g = 0.01 * (t1 + u)
    del t1
    return g
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter

import numpy as np

from .sources import python_name

__all__ = ["BACKWARD", "Linear", "Program", "Statement", "count_calls"]

BACKWARD = math.inf
"""The position of everything computed from a cotangent: after the forward statements."""


class Linear:
    """``const + sum(coef * var)``: a derivative (an edge's diagonal, a cotangent, a
    tangent) as a linear combination of program variables, with numbers as
    coefficients."""

    __slots__ = ("terms", "const")

    def __init__(self, terms=(), const: float = 0.0):
        self.terms = list(terms)     # [(coef, var)], in the order they came
        self.const = const

    @classmethod
    def of(cls, var: str, coef: float = 1.0) -> Linear:
        return cls([(coef, var)])

    @property
    def constant(self) -> bool:
        return not self.terms

    def __repr__(self):
        return " + ".join([f"{c!r}*{v}" for c, v in self.terms] + [repr(self.const)])


class Statement:
    """One line of the program: ``target = text`` (or ``target += text``)."""

    __slots__ = ("target", "text", "reads", "comment", "key", "calls", "augmented", "pure")

    def __init__(self, target, text, reads, comment, key, calls, augmented="", pure=True):
        self.target, self.text, self.reads, self.comment = target, text, reads, comment
        self.key, self.calls, self.augmented = key, calls, augmented
        self.pure = pure and target is not None   # dropped when no one reads its result

    def line(self) -> str:
        code = self.text if self.target is None else (
            f"{self.target} {self.augmented}= {self.text}")
        return f"{code:<40}  # {self.comment}" if self.comment else code


_CALL = re.compile(r"[\w\])]\(")                                   # f(...), x.f(...)
_OPERATOR = re.compile(r" (?:[-+*/@<>&%]|\*\*|//|[<>=!]=) ")             # a + b, a <= b
_NEGATION = re.compile(r"(?:^|[(\[,=] ?)-[\w(]")                         # -x, f(-x)


def count_calls(text: str) -> int:
    """The operations in one expression (each makes an array): operators, negations
    and calls.

    >>> count_calls("0.01 * (a - b) + 1.0"), count_calls("np.where(m, -u, 0.0)")
    (3, 2)
    """
    return len(_CALL.findall(text)) + len(_OPERATOR.findall(text)) + len(
        _NEGATION.findall(text))


class Program:
    """Statements being written, the names they use, the constants they refer to."""

    def __init__(self, exact: bool, taken=(), in_place: bool = True):
        self.exact, self.in_place = exact, in_place
        self.taken = {"np", "math", *taken}
        self.namespace = {"np": np, "math": math}
        self.statements: list[Statement] = []
        self.position: dict[str, float] = {}    # var -> where it is defined (BACKWARD)
        self.masks: set[str] = set()            # vars holding booleans (a bit mask)
        self.own: set[str] = set()              # vars no one else holds: add!! may write
        self.seen: dict[str, str] = {}          # expression -> the var that holds it
        self.readers: dict[str, list] = {}      # var -> the expressions that name it
        self.by_id: dict[int, str] = {}         # constants already bound
        self.least = -1.0     # no statement goes before this position (a tangent's vertex)
        self._order = itertools.count()
        self._temps = itertools.count(1)

    # ------------------------------------------------------------ names
    def fresh(self, wanted: str) -> str:
        """An unused identifier like ``wanted``."""
        base = python_name(wanted)
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def temp(self) -> str:
        return self.fresh(f"t{next(self._temps)}")

    def parameter(self, wanted: str, position: float = -1.0) -> str:
        name = self.fresh(wanted)
        self.position[name] = position
        return name

    def constant(self, value, wanted: str = "c") -> str:
        """The name under which the program sees ``value`` (bound once per object)."""
        name = self.by_id.get(id(value))
        if name is None:
            name = self.fresh(wanted)
            self.namespace[name] = value
            self.by_id[id(value)] = name
            self._keep = getattr(self, "_keep", [])
            self._keep.append(value)        # the id stays that object's
        return name

    # ------------------------------------------------------------ statements
    def emit(self, text: str, reads, wanted: str = "", *, target: str | None = None,
             comment: str = "", at: float | None = None, own: bool = True,
             mask: bool = False, calls: int | None = None, reuse: bool = True,
             pure: bool = True) -> str:
        """Write ``target = text`` and return the target's name.  ``reads`` are the
        program variables the text reads; ``at`` places a forward statement (its tape
        position), otherwise it goes right after what it reads (a backward statement
        after the forward ones).  The same text written before gives its variable.  A
        ``pure`` statement whose result no one reads is left out of the source."""
        reads = _read_in(text, reads, self.position)
        if reuse and target is None and text in self.seen:
            self.own.discard(self.seen[text])     # held twice now
            return self.seen[text]
        where = at if at is not None else max((self.position[r] for r in reads),
                                              default=-1.0)
        where = max(where, self.least)
        if target is None:
            target = self.fresh(wanted) if wanted else self.temp()
        self.statements.append(Statement(target, text, reads, comment,
                                         (where, next(self._order)),
                                         count_calls(text) if calls is None else calls,
                                         pure=pure))
        self.position[target] = where
        if own:
            self.own.add(target)
        if mask:
            self.masks.add(target)
        if self.seen.setdefault(text, target) == target:
            for r in (*reads, target):
                self.readers.setdefault(r, []).append(text)
        return target

    def check(self, text: str, reads, comment: str = "", at: float | None = None) -> None:
        """A statement without a result: a guard, a check."""
        reads = _read_in(text, reads, self.position)
        where = at if at is not None else max((self.position[r] for r in reads), default=-1.0)
        self.statements.append(Statement(None, text, reads, comment,
                                         (where, next(self._order)), 0))

    def add_into(self, target: str, other: str, sign: float, comment: str = "") -> None:
        """``target += other`` (or ``-=``): the maybe-mutating add of an array this
        program owns."""
        self.statements.append(Statement(target, other, (target, other), comment,
                                         (BACKWARD if self.position[target] == BACKWARD
                                          else max(self.position[target],
                                                   self.position.get(other, -1.0)),
                                          next(self._order)), 1, "+" if sign > 0 else "-"))
        for text in self.readers.pop(target, ()):   # what held or read it holds no more
            self.seen.pop(text, None)

    # ---------------------------------------------------------- the algebra
    def scale(self, a: Linear, c: float) -> Linear:
        """``c * a``: coefficients only, where that is exact; otherwise one product."""
        if a.constant or c == 0.0:
            return Linear((), a.const * c)
        if self.exact and c not in (1.0, -1.0):
            coef, var = self.single(a)
            return Linear.of(self.emit(f"{var} * {c!r}", (var,)), coef)
        for _, var in a.terms:
            self.own.discard(var)      # held twice now
        return Linear([(k * c, v) for k, v in a.terms], a.const * c)

    def add(self, a: Linear, b: Linear) -> Linear:
        """``a + b``, nothing written; in exact mode the terms keep their order."""
        terms = a.terms + b.terms
        if not self.exact:
            merged: dict[str, float] = {}
            for c, v in terms:
                merged[v] = merged.get(v, 0.0) + c
            terms = [(c, v) for v, c in merged.items() if c != 0.0]
        return Linear(terms, a.const + b.const)

    def multiply(self, a: Linear, b: Linear, wanted: str = "", comment: str = "") -> Linear:
        """``a * b`` entry by entry: a number scales; two variables are multiplied in
        code (by a bit mask too: ``u * mask`` is 0 where the mask is, and twenty times
        faster than ``np.where``, which exact mode writes as the reference does)."""
        if a.constant:
            return self.scale(b, a.const)
        if b.constant:
            return self.scale(a, b.const)
        (ca, x), (cb, y) = self.single(a), self.single(b)
        if x in self.masks and y in self.masks:
            return Linear.of(self.emit(f"{x} & {y}", (x, y), wanted, comment=comment,
                                       mask=True), ca * cb)
        if self.exact and (y in self.masks or x in self.masks):
            x, y = (x, y) if y in self.masks else (y, x)
            text = f"np.where({y}, {x}, 0.0)"   # as the reference's Mask (and slower)
        else:
            text = f"{x} * {y}"
        return Linear.of(self.emit(text, (x, y), wanted, comment=comment), ca * cb)

    def single(self, a: Linear, wanted: str = "", comment: str = "") -> tuple[float, str]:
        """``a`` as ``coef * var``: the variable it is, or the sum of its variables when
        they share one coefficient, else all of it written out."""
        if len(a.terms) == 1 and a.const == 0.0:
            return a.terms[0]
        if not a.terms:
            raise ValueError("a constant has no variable")
        size = abs(a.terms[0][0])
        if a.const == 0.0 and all(abs(c) == size for c, _ in a.terms):
            signs = [(1.0 if c == a.terms[0][0] else -1.0, v) for c, v in a.terms]
            return a.terms[0][0], self.emit(_signed_sum(signs), [v for _, v in a.terms],
                                            wanted, comment=comment)
        return 1.0, self.materialize(a, wanted, comment)

    def materialize(self, a: Linear, wanted: str = "", comment: str = "") -> str:
        """``a`` written out as one variable (a number bound as a constant)."""
        if not a.terms:
            return repr(a.const)
        if len(a.terms) == 1 and a.terms[0][0] == 1.0 and a.const == 0.0:
            return a.terms[0][1]
        groups: dict[float, list] = {}
        for c, v in a.terms:
            groups.setdefault(abs(c), []).append((math.copysign(1.0, c), v))
        parts, reads = [], [v for _, v in a.terms]
        alone = len(groups) == 1 and not a.const
        for size, signed in groups.items():
            if size != 1.0:   # a scaled group is a value of its own, which others may share
                total = signed[0][1] if len(signed) == 1 else f"({_signed_sum(signed)})"
                if alone and signed[0][0] > 0:
                    return self.emit(f"{size!r} * {total}", [v for _, v in signed], wanted,
                                     comment=comment)
                scaled = self.emit(f"{size!r} * {total}", [v for _, v in signed])
                signed = [(signed[0][0] if len(signed) == 1 else 1.0, scaled)]
                reads.append(scaled)
            parts.append(_signed_sum(signed))
        text = " + ".join(parts).replace("+ -", "- ")
        if a.const:
            text += f" + {a.const!r}" if a.const > 0 else f" - {-a.const!r}"
        return self.emit(text, reads, wanted, comment=comment)

    def accumulate(self, total: Linear | None, term: Linear, wanted: str = "",
                   comment: str = "") -> Linear:
        """``total + term`` for a cotangent or tangent: terms of one coefficient are
        added in code as they come, into the first one's array when this program
        owns it (``add!!``)."""
        if total is None:
            return term
        merged = self.add(total, term)
        while True:
            pair = _same_size(merged.terms)
            if pair is None:
                return merged
            i, j = pair
            (ci, x), (cj, y) = merged.terms[i], merged.terms[j]
            sign = 1.0 if ci == cj else -1.0
            if self.in_place and x in self.own:
                self.add_into(x, y, sign, comment)
                self.own.discard(y)
                total_var = x
            else:
                total_var = self.emit(f"{x} {'+' if sign > 0 else '-'} {y}", (x, y), wanted,
                                      comment=comment, reuse=False)
            merged.terms[i] = (ci, total_var)
            del merged.terms[j]

    # ------------------------------------------------------------ the source
    def source(self, name: str, parameters, returned: str, docstring: str = "") -> str:
        """The program as the text of one function, statements in order, each variable
        deleted after its last read."""
        order = self.live(returned)
        last = {}
        for i, s in enumerate(order):
            for r in s.reads:
                last[r] = i
        kept = set(parameters) | _names_in(returned)
        lines = [f"def {name}({', '.join(parameters)}):"]
        if docstring:
            lines.append(f'    """{docstring}"""')
        defined = set(parameters)
        for i, s in enumerate(order):
            lines.append("    " + s.line())
            if s.target is not None:
                defined.add(s.target)
            dead = [r for r in dict.fromkeys((*s.reads, s.target)) if r is not None
                    and last.get(r, -1) <= i and r not in kept and r in defined]
            if dead:
                lines.append("    del " + ", ".join(dead))
                defined.difference_update(dead)
        lines.append(f"    return {returned}")
        return "\n".join(lines)

    def live(self, returned: str) -> list[Statement]:
        """The statements in order, without the pure ones whose results no later
        statement reads (nor the function returns)."""
        order = sorted(self.statements, key=lambda s: s.key)
        needed, kept = _names_in(returned), []
        for s in reversed(order):
            if s.pure and s.target not in needed:
                continue
            if s.target is not None and not s.augmented:
                needed.discard(s.target)
            needed.update(s.reads)
            kept.append(s)
        self.statements = kept[::-1]
        return self.statements

    def calls(self) -> int:
        """The numpy operations the statements make."""
        return sum(s.calls for s in self.statements)


def _signed_sum(signed) -> str:
    text = " + ".join(("-" if s < 0 else "") + v for s, v in signed)
    return text.replace("+ -", "- ")


def _same_size(terms):
    """The first two terms whose coefficients have one size, or None."""
    seen = {}
    for j, (c, _) in enumerate(terms):
        i = seen.get(abs(c))
        if i is not None:
            return i, j
        seen[abs(c)] = j
    return None


_WORD = re.compile(r"[A-Za-z_]\w*")


def _read_in(text: str, reads, defined) -> tuple[str, ...]:
    """The variables of ``reads`` that ``text`` names (and the program defines)."""
    words = set(_WORD.findall(text))
    return tuple(dict.fromkeys(r for r in reads if r in words and r in defined))


def _names_in(text: str) -> set[str]:
    return set(Counter(text.replace("(", " ").replace(")", " ").replace(",", " ").split()))
