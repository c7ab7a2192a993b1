"""What traced arrays support, one example each: the source of ``docs/numpy_support.md``.

:data:`EXAMPLES` holds one :class:`Example` per rule: every entry of the
operation table (:data:`minirad.tracing.ops.OPS`) by numpy's name for it, and
every array rule (reductions, contractions, matrix functions,
rearrangements, minirad's own functions), each a small program written
against a numpy namespace ``xp`` (numpy itself, or ``jax.numpy`` where
``jax`` is true: the tests hold the two against each other) with operands
drawn from a stated domain.  :func:`supported_table` traces every example
and writes the page: what each rule's edges are and the bytes they keep for
the backward pass.  :func:`write_supported_table` writes it to a file; a test
checks that the committed page is the one this module writes.

    python -m minirad.tracing.catalog docs/numpy_support.md

>>> import numpy as np
>>> example = EXAMPLES["np.linalg.inv(A)"]
>>> example.group, [a.shape for a in example.arguments(np.random.default_rng(0))]
('linear algebra', [(3, 3)])
>>> kinds, kept = example.edges()
>>> kinds, kept
('scale∘matmul∘matmul', 'y 72 B')
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sparse

from ..graph.files import write_atomically
from ..graph.lcg import value_key
from ..graph.operators import FROM_SHAPES
from . import ops, trace
from .ops import OPS, UFUNCS
from .reductions import logsumexp
from .rules import avg_pool2d, conv2d, softmax, softmax_cross_entropy
from .rules import matmul as sparse_matmul

__all__ = ["Example", "Operand", "supported_table", "write_supported_table"]

#: where to draw the operands of each entry of the table: inside its domain and away
#: from where its derivative is infinite (the rest draw from (-2, 2))
DOMAINS = {
    "div": (0.5, 2.0), "pow": (0.3, 2.0), "float_power": (0.3, 2.0), "log": (0.2, 3.0),
    "log2": (0.2, 3.0), "log10": (0.2, 3.0), "log1p": (-0.5, 2.0), "sqrt": (0.2, 3.0),
    "cbrt": (0.2, 3.0), "reciprocal": (0.5, 2.0), "tan": (-1.2, 1.2), "arcsin": (-0.9, 0.9),
    "arccos": (-0.9, 0.9), "arctanh": (-0.9, 0.9), "arccosh": (1.2, 3.0),
    "remainder": (0.3, 2.0), "fmod": (0.3, 2.0), "floor_divide": (0.3, 2.0),
}
DEFAULT_DOMAIN = (-2.0, 2.0)

#: the shape of every operand of the table's examples
ELEMENTWISE_SHAPE = (3, 4)


@dataclass(frozen=True)
class Operand:
    """One argument of an example: its shape and where its entries come from, an
    interval ``(low, high)``, ``"invertible"`` (a square matrix far from singular) or
    ``"positive definite"`` (a symmetric one)."""

    shape: tuple
    domain: tuple | str = DEFAULT_DOMAIN

    def draw(self, rng, dtype=np.float64) -> np.ndarray:
        if isinstance(self.domain, tuple):
            return rng.uniform(*self.domain, self.shape).astype(dtype)
        n = self.shape[-1]
        B = rng.uniform(-1.0, 1.0, self.shape)
        if self.domain == "positive definite":
            B = B @ np.swapaxes(B, -1, -2)
        return (B + n * np.eye(n)).astype(dtype)   # diagonally dominant: far from singular


@dataclass(frozen=True)
class Example:
    """One rule at work: ``program(xp, *arguments)`` with ``xp`` a numpy namespace."""

    name: str
    group: str
    program: Callable
    operands: tuple
    jax: bool = True          # jax.numpy spells it the same way
    rule: str = ""            # what the table says the rule is (aliases, conventions)
    numpy: str = "1.24.0"     # the numpy that has the function (np.matvec came with 2.2)

    def arguments(self, rng, dtype=np.float64) -> list[np.ndarray]:
        return [operand.draw(rng, dtype) for operand in self.operands]

    def function(self, xp=np):
        """The program as a function of its arguments alone, named as the program names
        them (so a trace names its inputs so)."""
        def run(*args):
            return self.program(xp, *args)
        parameters = list(inspect.signature(self.program).parameters.values())[1:]
        run.__signature__ = inspect.Signature(parameters)
        return run

    def edges(self, dtype=np.float64) -> tuple[str, str]:
        """The labels of the example's edges and what they keep (its bytes), as text:
        traced at arguments drawn with a fixed seed."""
        g = trace(self.function(), *self.arguments(np.random.default_rng(0), dtype))
        kinds = list(dict.fromkeys(_label_text(label) for label in g.labels))
        return ", ".join(k for k in kinds if k != "identity") or "identity", _kept_text(g)


def _label_text(label) -> str:
    return "number" if isinstance(label, float) else label.label()


def _kept_text(g) -> str:
    """The arrays the labels of ``g`` keep, each once: its name (a vertex's, or what it
    is) and bytes, and what it can be rebuilt from."""
    seen, parts, shapes = set(), [], 0.0
    names = {value_key(v): g.names[v] for v in range(g.n_vertices)}
    numbers = sum(isinstance(label, float) for label in g.labels)
    for label in g.labels:
        for r in () if isinstance(label, float) else label.retained:
            if r.key in seen:
                continue
            seen.add(r.key)
            if r.recompute_from == FROM_SHAPES:
                shapes += r.nbytes
                continue
            text = f"{names.get(r.key, r.what or 'array')} {_bytes(r.nbytes)}"
            if r.recompute_from is not None:
                text += f" (or rebuilt from {names.get(r.recompute_from, r.recompute_from)})"
            parts.append(text)
    if numbers:   # an edge between two numbers keeps its partial, a float
        parts.append(f"partials {_bytes(8 * numbers)}")
    if shapes:
        parts.append(f"indices {_bytes(shapes)} (rebuilt from the shapes)")
    return "; ".join(parts) or "nothing"


def _bytes(n: float) -> str:
    return f"{n:g} B"


# ------------------------------------------------------------------- the table
def _aliases(op) -> list[str]:
    return sorted(name for name, entry in UFUNCS.items() if entry is op)


def _unary(name: str):
    return lambda xp, x: getattr(xp, name)(x)


def _binary(name: str):
    return lambda xp, a, b: getattr(xp, name)(a, b)


def _elementwise() -> list[Example]:
    examples = []
    for op in OPS.values():
        if op.name == "copy":
            continue
        operand = Operand(ELEMENTWISE_SHAPE, DOMAINS.get(op.name, DEFAULT_DOMAIN))
        names = _aliases(op)
        if names:
            numpy_name = op.ufunc if op.ufunc in names else names[0]
            program = _unary(numpy_name) if op.arity == 1 else _binary(numpy_name)
            call = f"np.{numpy_name}({'x' if op.arity == 1 else 'a, b'})"
            rule = ", ".join(f"np.{n}" for n in names)
            examples.append(Example(call, "elementwise", program, (operand,) * op.arity,
                                    rule=rule))
        else:   # minirad's own: sigmoid, relu
            examples.append(Example(f"ops.{op.name}(x)", "elementwise",
                                    lambda xp, x, name=op.name: getattr(ops, name)(x),
                                    (operand,), jax=False, rule=f"minirad.ops.{op.name}"))
    plain = Operand(ELEMENTWISE_SHAPE)
    examples.append(Example("np.square(x)", "elementwise", lambda xp, x: xp.square(x),
                            (plain,), rule="np.square"))
    examples.append(Example("np.modf(x)[0]", "elementwise", lambda xp, x: xp.modf(x)[0],
                            (plain,), rule="np.modf"))
    quotients = Operand(ELEMENTWISE_SHAPE, DOMAINS["remainder"])
    examples.append(Example("np.divmod(a, b)[1]", "elementwise",
                            lambda xp, a, b: xp.divmod(a, b)[1], (quotients, quotients),
                            rule="np.divmod"))
    return examples


# --------------------------------------------------------------- array rules
def _x(*shape, domain=DEFAULT_DOMAIN) -> Operand:
    return Operand(shape, domain)


X = _x(3, 4)
M = _x(3, 3, domain="invertible")
SPD = _x(3, 3, domain="positive definite")
MASK = np.array([[True, False, True, True], [False, True, False, True],
                 [True, True, False, False]])
LABELS = np.array([2, 0, 1])
LAPLACIAN = sparse.diags([[-1.0] * 3, [2.0] * 4, [-1.0] * 3], [-1, 0, 1], format="csr")


def _examples(group: str, rows, jax: bool = True) -> list[Example]:
    return [Example(name, group, program, operands, jax, numpy=_SINCE.get(name, "1.24.0"))
            for name, program, operands in rows]


# the examples of functions that came with numpy 2
_SINCE = {"np.cumulative_sum(x, axis=1)": "2.1.0", "np.cumulative_prod(x, axis=1)": "2.1.0",
          "np.linalg.vector_norm(x)": "2.0.0", "np.linalg.matrix_norm(x)": "2.0.0",
          "np.vecdot(a, b)": "2.0.0", "np.matvec(A, v)": "2.2.0", "np.vecmat(v, A)": "2.2.0"}


REDUCTIONS = _examples("reductions", [
    ("np.sum(x, axis=0)", lambda xp, x: xp.sum(x, axis=0), (X,)),
    ("x.mean(axis=1, keepdims=True)", lambda xp, x: x.mean(axis=1, keepdims=True), (X,)),
    ("np.max(x, axis=0)", lambda xp, x: xp.max(x, axis=0), (X,)),
    ("x.max()", lambda xp, x: x.max(), (X,)),
    ("np.amin(x, axis=1)", lambda xp, x: xp.amin(x, axis=1), (X,)),
    ("np.ptp(x, axis=1)", lambda xp, x: xp.ptp(x, axis=1), (X,)),
    ("np.prod(x, axis=1)", lambda xp, x: xp.prod(x, axis=1), (X,)),
    ("x.prod()", lambda xp, x: x.prod(), (_x(5, domain=(-1.5, 1.5)),)),
    ("np.var(x, axis=0, ddof=1)", lambda xp, x: xp.var(x, axis=0, ddof=1), (X,)),
    ("x.std()", lambda xp, x: x.std(), (X,)),
    ("np.cumsum(x, axis=1)", lambda xp, x: xp.cumsum(x, axis=1), (X,)),
    ("np.cumsum(x)", lambda xp, x: xp.cumsum(x), (X,)),
    ("np.cumprod(x, axis=0)", lambda xp, x: xp.cumprod(x, axis=0), (X,)),
    ("np.cumulative_sum(x, axis=1)", lambda xp, x: xp.cumulative_sum(x, axis=1), (X,)),
    ("np.cumulative_prod(x, axis=1)", lambda xp, x: xp.cumulative_prod(x, axis=1), (X,)),
    ("log-sum-exp by hand", lambda xp, x: (lambda m: m + xp.log(
        xp.exp(x - m).sum(axis=1, keepdims=True)))(x.max(axis=1, keepdims=True)), (X,)),
    ("np.linalg.norm(x)", lambda xp, x: xp.linalg.norm(x), (X,)),
    ("np.linalg.norm(x, axis=1)", lambda xp, x: xp.linalg.norm(x, axis=1), (X,)),
    ("np.linalg.norm(v, 1)", lambda xp, v: xp.linalg.norm(v, 1), (_x(5),)),
    ("np.linalg.norm(v, np.inf)", lambda xp, v: xp.linalg.norm(v, np.inf), (_x(5),)),
    ("np.linalg.norm(v, 3)", lambda xp, v: xp.linalg.norm(v, 3), (_x(5),)),
    ("np.linalg.norm(A, 'fro')", lambda xp, a: xp.linalg.norm(a, "fro"), (X,)),
    ("np.linalg.norm(A, 1)", lambda xp, a: xp.linalg.norm(a, 1), (X,)),
    ("np.linalg.norm(A, -np.inf)", lambda xp, a: xp.linalg.norm(a, -np.inf), (X,)),
    ("np.linalg.vector_norm(x)", lambda xp, x: xp.linalg.vector_norm(x), (X,)),
    ("np.linalg.matrix_norm(x)", lambda xp, x: xp.linalg.matrix_norm(x), (X,)),
]) + _examples("reductions", [
    ("reductions.logsumexp(x, axis=1)", lambda xp, x: logsumexp(x, axis=1), (X,)),
], jax=False)

LINEAR_ALGEBRA = _examples("linear algebra", [
    ("A @ B", lambda xp, a, b: a @ b, (X, _x(4, 2))),
    ("np.dot(a, b), 3 axes", lambda xp, a, b: xp.dot(a, b), (_x(2, 3, 4), _x(4, 2))),
    ("np.vdot(a, b)", lambda xp, a, b: xp.vdot(a, b), (X, X)),
    ("np.inner(a, b)", lambda xp, a, b: xp.inner(a, b), (X, _x(2, 4))),
    ("np.outer(a, b)", lambda xp, a, b: xp.outer(a, b), (_x(3), _x(4))),
    ("np.tensordot(a, b, axes=([1], [0]))",
     lambda xp, a, b: xp.tensordot(a, b, axes=([1], [0])), (X, _x(4, 2))),
    ("np.tensordot(a, b)", lambda xp, a, b: xp.tensordot(a, b), (_x(2, 3, 4), _x(3, 4, 2))),
    ('np.einsum("ij,jk->ik", A, B)', lambda xp, a, b: xp.einsum("ij,jk->ik", a, b),
     (X, _x(4, 2))),
    ('np.einsum("ij,ij->i", A, A)', lambda xp, a: xp.einsum("ij,ij->i", a, a), (X,)),
    ('np.einsum("...ij,...jk", A, B)', lambda xp, a, b: xp.einsum("...ij,...jk", a, b),
     (_x(2, 3, 4), _x(4, 2))),
    ('np.einsum("ii->i", A)', lambda xp, a: xp.einsum("ii->i", a), (M,)),
    ('np.einsum("ijk,jl,k", A, B, c)', lambda xp, a, b, c: xp.einsum("ijk,jl,k", a, b, c),
     (_x(2, 3, 4), _x(3, 2), _x(4))),
    ("np.vecdot(a, b)", lambda xp, a, b: xp.vecdot(a, b), (X, X)),
    ("np.matvec(A, v)", lambda xp, a, v: xp.matvec(a, v), (X, _x(4))),
    ("np.vecmat(v, A)", lambda xp, v, a: xp.vecmat(v, a), (_x(3), X)),
    ("np.trace(A)", lambda xp, a: xp.trace(a), (M,)),
    ("np.trace(A, offset=1)", lambda xp, a: xp.trace(a, offset=1), (X,)),
    ("np.diag(v)", lambda xp, v: xp.diag(v), (_x(4),)),
    ("np.diag(A, 1)", lambda xp, a: xp.diag(a, 1), (X,)),
    ("np.diagonal(A)", lambda xp, a: xp.diagonal(a), (X,)),
    ("np.linalg.inv(A)", lambda xp, a: xp.linalg.inv(a), (M,)),
    ("np.linalg.det(A)", lambda xp, a: xp.linalg.det(a), (M,)),
    ("np.linalg.slogdet(A)[1]", lambda xp, a: xp.linalg.slogdet(a)[1], (M,)),
    ("np.linalg.cholesky(B @ B.T + 3 I)",
     lambda xp, b: xp.linalg.cholesky(b @ b.T + 3 * xp.eye(3, dtype=b.dtype)),
     (_x(3, 3),)),
    ("np.linalg.solve(A, b)", lambda xp, a, b: xp.linalg.solve(a, b), (M, _x(3))),
]) + _examples("linear algebra", [
    # numpy reads the lower triangle only, and so does its derivative; jax.numpy reads
    # (A + A.T) / 2: the two agree on symmetric changes (the example above) only
    ("np.linalg.cholesky(A)", lambda xp, a: xp.linalg.cholesky(a), (SPD,)),
    ("rules.matmul(L, x), L sparse",
     lambda xp, x: sparse_matmul(LAPLACIAN, x), (_x(4, 2),)),
], jax=False)

SHAPES = _examples("shapes and selection", [
    ("x.reshape(4, 3)", lambda xp, x: x.reshape(4, 3), (X,)),
    ("x.ravel()", lambda xp, x: x.ravel(), (X,)),
    ("x.flatten()", lambda xp, x: x.flatten(), (X,)),
    ("x.T", lambda xp, x: x.T, (X,)),
    ("np.squeeze(x)", lambda xp, x: xp.squeeze(x), (_x(3, 1, 4),)),
    ("np.expand_dims(x, 1)", lambda xp, x: xp.expand_dims(x, 1), (X,)),
    ("np.swapaxes(x, 0, 2)", lambda xp, x: xp.swapaxes(x, 0, 2), (_x(2, 3, 4),)),
    ("np.moveaxis(x, 0, -1)", lambda xp, x: xp.moveaxis(x, 0, -1), (_x(2, 3, 4),)),
    ("np.broadcast_to(v, (3, 4))", lambda xp, v: xp.broadcast_to(v, (3, 4)), (_x(4),)),
    ("np.atleast_2d(v)", lambda xp, v: xp.atleast_2d(v), (_x(4),)),
    ("np.tile(x, (2, 1))", lambda xp, x: xp.tile(x, (2, 1)), (X,)),
    ("np.repeat(x, 2, axis=0)", lambda xp, x: xp.repeat(x, 2, axis=0), (X,)),
    ("np.split(x, 2, axis=1)[1]", lambda xp, x: xp.split(x, 2, axis=1)[1], (X,)),
    ("np.array_split(v, 3)[0]", lambda xp, v: xp.array_split(v, 3)[0], (_x(7),)),
    ("np.hsplit(x, 2)[0]", lambda xp, x: xp.hsplit(x, 2)[0], (X,)),
    ("np.take(x, [0, 5, 5])", lambda xp, x: xp.take(x, np.array([0, 5, 5])), (X,)),
    ("np.take_along_axis(x, i, 1)",
     lambda xp, x: xp.take_along_axis(x, np.array([[3], [0], [1]]), 1), (X,)),
    ("x[1:, ::2]", lambda xp, x: x[1:, ::2], (X,)),
    ("x[[0, 2]]", lambda xp, x: x[np.array([0, 2])], (X,)),
    ("x[mask]", lambda xp, x: x[MASK], (X,)),
    ("np.where(x > 0, x, 0.1 * x)", lambda xp, x: xp.where(x > 0, x, 0.1 * x), (X,)),
    ("np.clip(x, -0.5, 0.5)", lambda xp, x: xp.clip(x, -0.5, 0.5), (X,)),
    ("np.sort(x, axis=1)", lambda xp, x: xp.sort(x, axis=1), (X,)),
    ("np.flip(x, 0)", lambda xp, x: xp.flip(x, 0), (X,)),
    ("np.roll(x, 1, axis=1)", lambda xp, x: xp.roll(x, 1, axis=1), (X,)),
    ("np.rot90(x)", lambda xp, x: xp.rot90(x), (X,)),
    ("np.triu(x)", lambda xp, x: xp.triu(x), (X,)),
    ("np.pad(x, 1)", lambda xp, x: xp.pad(x, 1), (X,)),
    ("np.pad(x, 1, mode='reflect')", lambda xp, x: xp.pad(x, 1, mode="reflect"), (X,)),
    ("np.concatenate([a, b])", lambda xp, a, b: xp.concatenate([a, b]), (X, _x(2, 4))),
    ("np.stack([a, b], axis=1)", lambda xp, a, b: xp.stack([a, b], axis=1), (X, X)),
    ("np.hstack([a, b])", lambda xp, a, b: xp.hstack([a, b]), (X, _x(3, 2))),
    ("np.vstack([a, v])", lambda xp, a, v: xp.vstack([a, v]), (X, _x(4))),
    ("np.column_stack([a, v])", lambda xp, a, v: xp.column_stack([a, v]), (X, _x(3))),
    ("np.round(x, 1)", lambda xp, x: xp.round(x, 1), (X,)),
    ("x.astype(np.float32)", lambda xp, x: x.astype(np.float32), (X,)),
])

MINIRAD = _examples("minirad's own", [
    ("softmax(z)", lambda xp, z: softmax(z), (X,)),
    ("softmax_cross_entropy(z, labels)", lambda xp, z: softmax_cross_entropy(z, LABELS),
     (X,)),
    ("conv2d(x, w, padding=1)", lambda xp, x, w: conv2d(x, w, padding=1),
     (_x(1, 2, 4, 4), _x(2, 2, 3, 3))),
    ("avg_pool2d(x, 2)", lambda xp, x: avg_pool2d(x, 2), (_x(1, 2, 4, 4),)),
], jax=False)

EXAMPLES: dict[str, Example] = {e.name: e for e in (
    _elementwise() + REDUCTIONS + LINEAR_ALGEBRA + SHAPES + MINIRAD)
    if np.lib.NumpyVersion(np.__version__) >= e.numpy}
"""Every example by its name: how a student writes the call (those this numpy has)."""

GROUPS = ("elementwise", "reductions", "linear algebra", "shapes and selection",
          "minirad's own")


# --------------------------------------------------------------------- the page
_HEADER = """# numpy on traced arrays

<!-- written by python -m minirad.tracing.catalog docs/numpy_support.md; do not edit -->

What `minirad.trace` supports on numpy arrays, generated from the operation
table (`minirad/tracing/ops.py`) and the array rules, with each rule traced
once on the example shown.  *Edges* are the Jacobian blocks the rule records
(`diag` a diagonal, `mask` a bit mask, `scale` a constant factor, `∘` a
composition, `einsum ...` a contraction with the other operands kept, `index`
a gather); *kept* is what those blocks retain for the backward pass, in bytes
for the example's float64 operands, by the name of the vertex kept (`x`, `y`
for the output) or what it is. `minirad.retained_memory` charges a kept input nothing
(the caller keeps it anyway) and an array rebuilt from one it keeps nothing
either; index arrays are rebuilt from the shapes. Where a derivative jumps,
the subgradient taken is the one the Kinks of `minirad.tracing.ops` state.

Anything else raises a `TypeError` naming the function; a rule of your own is
`minirad.tracing.register(np.function, rule)`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _elementwise_rows(examples) -> list[str]:
    shape = " x ".join(map(str, ELEMENTWISE_SHAPE))
    rows = [f"Operands of shape {shape}: {math.prod(ELEMENTWISE_SHAPE) * 8} B per float64 "
            f"array. The same entries serve traced numbers (`minirad.ops.sin(x)`, "
            f"`np.sin(x)` on a traced float).", "",
            "| numpy | template | edges | kept | at a jump or kink |", "|---|---|---|---|---|"]
    for e in examples:
        op, template = _entry(e)
        kinds, kept = e.edges()
        rows.append(f"| {_cell(e.rule)} | `{_cell(template)}` | {kinds} | {_cell(kept)} | "
                    f"{_cell(op.kink) or '-'} |")
    return rows


# the ufuncs that are made of entries: which entry, as what
_PIECES = {"np.square": (OPS["pow"], "x ** 2"),
           "np.modf": (OPS["fmod"], "(fmod(x, 1), trunc(x))"),
           "np.divmod": (OPS["remainder"], "(floor_divide(a, b), remainder(a, b))")}


def _entry(example: Example):
    """The table's entry an elementwise example shows, and its template."""
    if example.rule in _PIECES:
        return _PIECES[example.rule]
    name = example.rule.split(",")[0].removeprefix("np.").removeprefix("minirad.ops.")
    op = UFUNCS.get(name) or OPS[name]
    return op, op.template.format(*(("x",) if op.arity == 1 else ("a", "b")))


def _rule_rows(examples) -> list[str]:
    rows = ["| call | operands | edges | kept |", "|---|---|---|---|"]
    for e in examples:
        kinds, kept = e.edges()
        shapes = ", ".join(" x ".join(map(str, o.shape)) or "()" for o in e.operands)
        rows.append(f"| `{_cell(e.name)}` | {shapes} | {_cell(kinds)} | {_cell(kept)} |")
    return rows


def supported_table() -> str:
    """The page ``docs/numpy_support.md``: every example traced, grouped."""
    lines = [_HEADER]
    for group in GROUPS:
        members = [e for e in EXAMPLES.values() if e.group == group]
        lines += [f"## {group[0].upper()}{group[1:]}", ""]
        lines += _elementwise_rows(members) if group == "elementwise" else _rule_rows(members)
        lines.append("")
    return "\n".join(lines)


def write_supported_table(path) -> str:
    """Write :func:`supported_table` to ``path`` (atomically); returns the path."""
    text = supported_table()
    write_atomically(str(path), lambda f: f.write(text.encode("utf-8")))
    return str(path)


if __name__ == "__main__":   # pragma: no cover - the command in the module docstring
    print(write_supported_table(sys.argv[1] if len(sys.argv) > 1 else "docs/numpy_support.md"))
