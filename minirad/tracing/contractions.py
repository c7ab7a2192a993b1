"""Products that sum over paired axes, on traced arrays: ``np.einsum`` and its cases.

``np.einsum`` with any subscripts (ellipses, numpy's implicit output, the
interleaved ``einsum(a, [0, 1], b, [1, 2])`` form), and the products that are
einsums with fixed subscripts: ``np.dot`` (beyond two axes; up to two it is
``@``), ``np.vdot``, ``np.inner``, ``np.outer``, ``np.tensordot``,
``np.vecdot``, ``np.matvec``, ``np.vecmat`` and their ``np.linalg`` twins.
Each is one vertex; the edge from each traced operand is an
:class:`~minirad.graph.einsum.Einsum` that keeps the other operands (free
when they are inputs, as the weights of ``x @ W`` are), never a matrix.

>>> import numpy as np, minirad
>>> A, B = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
>>> g = minirad.trace(lambda A: np.einsum("ij,jk->", A, B), A)
>>> [op.label() for op in g.labels], minirad.jacobian(g)   # d/dA of sum(A @ B): B's rows summed
(['einsum ij,jk-> in ij'], array([[2., 2., 2., 2., 2., 2.]]))
"""

from __future__ import annotations

import string
from collections import Counter

import numpy as np

from ..graph.einsum import Einsum, letter_sizes
from ..graph.operators import Reshape, Retained, compose
from .ops import OPS
from .rules import Rule, check_entries, matmul, plain, refuse_options, register_rules
from .tracer import Edge, record

__all__ = ["contract", "dot", "einsum", "inner", "matvec", "outer", "tensordot", "vdot",
           "vecdot", "vecmat"]

_LABELS = string.ascii_uppercase + string.ascii_lowercase   # numpy's order of int labels


def _from_sublists(arguments) -> tuple[str, list]:
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as ``("AB,BC->AC", [a, b])``."""
    def letters(sublist):
        try:
            return "".join("..." if k is Ellipsis else _LABELS[k] for k in sublist)
        except (TypeError, IndexError):
            raise ValueError(f"einsum: a sublist holds axis labels 0..51 or Ellipsis, not "
                             f"{sublist!r}") from None
    arguments, out = list(arguments), None
    if len(arguments) % 2:
        out = arguments.pop()
    text = ",".join(letters(s) for s in arguments[1::2])
    return (text if out is None else f"{text}->{letters(out)}"), arguments[0::2]


def explicit_subscripts(subscripts: str, ndims: list[int]) -> str:
    """numpy's subscripts with ellipses spelled out and the output written, so that every
    axis has a letter: ``"...ij,jk"`` for operands of 3 and 2 axes is ``"aij,jk->aik"``.

    >>> explicit_subscripts("...ij,jk", [3, 2]), explicit_subscripts("ii", [2])
    ('aij,jk->aik', 'ii->')
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum subscripts are a string, not {type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    inputs, arrow, out = text.partition("->")
    inputs = inputs.split(",")
    if len(inputs) != len(ndims):
        raise ValueError(f"einsum: the subscripts {subscripts!r} name {len(inputs)} operands, "
                         f"but {len(ndims)} were given")
    spare = [c for c in string.ascii_letters if c not in text]
    extra = []
    for letters, ndim in zip(inputs, ndims):
        named = len(letters.replace("...", ""))
        if ("..." in letters and named > ndim) or ("..." not in letters and named != ndim):
            raise ValueError(f"einsum: subscripts {letters!r} do not fit an operand of "
                             f"{ndim} axes")
        extra.append(ndim - named if "..." in letters else 0)
    broadcast = "".join(spare[:max(extra, default=0)])
    spelled = [letters.replace("...", broadcast[len(broadcast) - e:])
               for letters, e in zip(inputs, extra)]
    if arrow:
        out = out.replace("...", broadcast)
    else:   # numpy's implicit output: the ellipsis, then the letters used once, sorted
        once = Counter("".join(inputs).replace("...", ""))
        out = broadcast + "".join(sorted(c for c, k in once.items() if k == 1))
    for c in out:
        if out.count(c) > 1:
            raise ValueError(f"einsum: the output letter {c!r} of {subscripts!r} appeared more "
                             f"than once")
        if c not in "".join(spelled):
            raise ValueError(f"einsum: the output letter {c!r} of {subscripts!r} is no "
                             f"operand's")
    return f"{','.join(spelled)}->{out}"


def _kept_others(edge: Edge, i: int):
    """The records of the operands other than ``i``, which the edge from ``i`` keeps."""
    n = len(edge.operands)
    if n <= 2:
        return edge.kept("" if n == 1 else "b" if i == 0 else "a")
    # three or more operands: Edge.kept names two ("a", "b"), so until it takes operand
    # positions each is asked about as the operand of a rule of one
    records = []
    for j, o in enumerate(edge.operands):
        if j != i:
            if type(o) is int:
                records += Edge(edge.tape, edge.t, (o,), edge.vertex).kept("x")
            elif np.ndim(o):   # a number is kept inside the block
                records.append(_constant_record(edge, j, o))
    return tuple(records)


def _constant_record(edge: Edge, j: int, value):
    """A constant operand kept, keyed as :meth:`~minirad.tracing.tracer.Edge.kept` keys it."""
    return Retained(f"const:{edge.t}.{j}", int(value.size) * value.dtype.itemsize * 8,
                    what="c")


def _einsum_value(*operands, subscripts, flat, text):
    if flat:
        operands = [np.reshape(o, -1) for o in operands]
    return np.asarray(np.einsum(subscripts, *operands, optimize=True))


def _einsum_block(i, values, y, edge, subscripts, flat, text):
    shape = np.shape(values[i])
    if flat:
        values = [np.reshape(v, -1) for v in values]
    others = [np.asarray(v) for j, v in enumerate(values) if j != i]
    block = Einsum(subscripts, others, i, np.shape(values[i]), y.dtype, _kept_others(edge, i))
    return compose(block, Reshape(shape, (int(np.prod(shape)),), y.dtype)) if flat else block


def _einsum_text(pieces, params) -> str:
    if params["text"] is None:
        return f"einsum('{params['subscripts']}', {', '.join(pieces)})"
    return params["text"].format(*pieces)


EINSUM = Rule("einsum", _einsum_text, _einsum_value, _einsum_block)
"""A contraction; the edge from each operand keeps the others (``Rule.keeps`` names two
operands; this rule takes any number)."""


def contract(subscripts: str, *operands, template: str | None = None, flat: bool = False):
    """``np.einsum(subscripts, *operands)`` recorded as one vertex, with an
    :class:`~minirad.graph.einsum.Einsum` edge from each traced operand (``flat``: of
    the operands flattened, as ``np.vdot`` and ``np.outer`` take them)."""
    values = [np.asarray(plain(o)) for o in operands]
    ndims = [1 if flat else v.ndim for v in values]
    explicit = explicit_subscripts(subscripts, ndims)
    inputs, out = explicit.split("->")
    shapes = [(v.size,) if flat else v.shape for v in values]
    sizes = letter_sizes(inputs.split(","), shapes)
    check_entries(tuple(sizes[c] for c in out), "einsum")
    return record(EINSUM, *operands, subscripts=explicit, flat=flat, text=template)


def einsum(*arguments, out=None, optimize=False, dtype=None, order="K", casting="safe"):
    """``np.einsum``: any subscripts, as a string or in the interleaved form."""
    refuse_options("np.einsum", out=out, dtype=dtype)
    if not arguments:
        raise TypeError("np.einsum needs subscripts and operands")
    if isinstance(arguments[0], str):
        subscripts, operands = arguments[0], arguments[1:]
    else:
        subscripts, operands = _from_sublists(arguments)
    return contract(subscripts, *operands)


def _ndims(*xs) -> list[int]:
    return [np.ndim(plain(x)) for x in xs]


def dot(a, b, out=None):
    """``np.dot``: ``*`` with a number, ``@`` up to two axes, else the sum over a's last
    axis and b's second to last."""
    refuse_options("np.dot", out=out)
    da, db = _ndims(a, b)
    if da == 0 or db == 0:
        return record(OPS["mul"], a, b)
    if da <= 2 and db <= 2:
        return matmul(a, b)
    first, rest = string.ascii_letters[:da], string.ascii_letters[da:da + db]
    paired = first[-1]
    second = paired if db == 1 else rest[:db - 2] + paired + rest[db - 1]
    kept = first[:-1] + second.replace(paired, "")
    return contract(f"{first},{second}->{kept}", a, b, template="dot({0}, {1})")


def vdot(a, b):
    """``np.vdot``: the sum of the entrywise products, the arrays flattened."""
    return contract("i,i->", a, b, template="vdot({0}, {1})", flat=True)


def inner(a, b):
    """``np.inner``: the sum over the last axis of each."""
    da, db = _ndims(a, b)
    if da == 0 or db == 0:
        return record(OPS["mul"], a, b)
    first, second = string.ascii_letters[:da - 1], string.ascii_letters[da - 1:da + db - 2]
    return contract(f"{first}Z,{second}Z->{first}{second}", a, b, template="inner({0}, {1})")


def outer(a, b, out=None):
    """``np.outer``: every product of an entry of ``a`` with one of ``b``, both flattened."""
    refuse_options("np.outer", out=out)
    return contract("i,j->ij", a, b, template="outer({0}, {1})", flat=True)


def _axes(axes, ndim: int, what: str) -> list[int]:
    try:
        listed = [axes] if isinstance(axes, (int, np.integer)) else list(axes)
    except TypeError:
        raise ValueError(f"{what}: axes must be integers, not {axes!r}") from None
    return [_axis(a, ndim, what) for a in listed]


def _axis(axis, ndim: int, what: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not (
            -ndim <= axis < ndim):
        raise ValueError(f"{what}: axis {axis!r} is out of range for {ndim} axes")
    return int(axis) % ndim


def tensordot(a, b, axes=2):
    """``np.tensordot``: the sum over ``axes`` of ``a`` paired with those of ``b``."""
    da, db = _ndims(a, b)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        if not 0 <= axes <= min(da, db):
            raise ValueError(f"np.tensordot: axes={axes} must lie in 0..{min(da, db)}")
        pairs_a, pairs_b = list(range(da - axes, da)), list(range(axes))
    else:
        try:
            first, second = axes
        except (TypeError, ValueError):
            raise ValueError(f"np.tensordot: axes is a count or a pair of axis lists, not "
                             f"{axes!r}") from None
        pairs_a, pairs_b = _axes(first, da, "np.tensordot"), _axes(second, db, "np.tensordot")
        if len(pairs_a) != len(pairs_b):
            raise ValueError("np.tensordot: the two lists of axes must have one length")
    letters = iter(string.ascii_letters)
    first = [next(letters) for _ in range(da)]
    second = [next(letters) for _ in range(db)]
    for i, j in zip(pairs_a, pairs_b):
        second[j] = first[i]
    out = [c for i, c in enumerate(first) if i not in pairs_a] + [
        c for j, c in enumerate(second) if j not in pairs_b]
    return contract(f"{''.join(first)},{''.join(second)}->{''.join(out)}", a, b,
                    template=f"tensordot({{0}}, {{1}}, axes={axes!r})")


def vecdot(x1, x2, /, *, axis=-1):
    """``np.vecdot``: the sum over one axis of the entrywise products, broadcasting."""
    n1, n2 = _ndims(x1, x2)
    a, b = (np.moveaxis(x, _axis(axis, n, "np.vecdot"), -1) if axis != -1 else x
            for x, n in ((x1, n1), (x2, n2)))
    return contract("...i,...i->...", a, b, template="vecdot({0}, {1})")


def matvec(x1, x2, /):
    """``np.matvec``: matrices times vectors, broadcasting over the rest."""
    return contract("...ij,...j->...i", x1, x2, template="matvec({0}, {1})")


def vecmat(x1, x2, /):
    """``np.vecmat``: vectors times matrices, broadcasting over the rest."""
    return contract("...i,...ij->...j", x1, x2, template="vecmat({0}, {1})")


def _linalg_outer(x1, x2, /):
    if np.ndim(plain(x1)) != 1 or np.ndim(plain(x2)) != 1:
        raise ValueError("np.linalg.outer takes two vectors")
    return outer(x1, x2)


register_rules({
    "einsum": einsum, "dot": dot, "vdot": vdot, "inner": inner, "outer": outer,
    "tensordot": tensordot, "linalg.tensordot": tensordot, "linalg.outer": _linalg_outer,
    "linalg.vecdot": vecdot, "linalg.matmul": matmul, "vecdot": vecdot, "matvec": matvec,
    "vecmat": vecmat,
})
