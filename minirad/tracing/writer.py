"""The writer of generated code: a traced graph's recording as a :class:`Program`.

:func:`minirad.tracing.codegen.codegen` hands a recording to a :class:`Writer`,
which writes, in order,

* the forward statements: one per value of the tape, in tape order, each the
  formula of its rule (:mod:`minirad.tracing.sources`) or a call of the rule's
  own value function, and a guard per value the program read;
* each edge's label: an elementwise edge's diagonal as a :class:`Linear`
  combination (its partial's formula, a number, or a variable), a rule's edge
  as its products written out or its Jacobian block (built once when it depends
  on shapes alone, else from the values at run time by a :class:`Builder`);
* with preaccumulation, vertex elimination of the intermediate vertices of
  elementwise chains (:meth:`Writer.eliminate`);
* the reverse sweep (adjoint) or the forward sweep (tangent) over what is left.

The functions the generated code calls (:func:`guard`, :func:`finite`, the
:class:`Builder` of a rule's block) are here too.
"""

from __future__ import annotations

import builtins
import heapq
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..graph.lcg import LCG, reachable
from ..graph.operators import (
    FROM_SHAPES,
    OPERATORS,
    Added,
    Broadcast,
    Composed,
    CumSum,
    Embed,
    Gather,
    Identity,
    Im2Col,
    Reshape,
    SumAxes,
    Transpose,
)
from .ops import Op
from .program import BACKWARD, Linear, Program
from .sources import PRODUCTS, VALUES, formula, literal, python_name
from .tracer import RAISED, Edge, Recording, is_data, read_again

__all__ = ["Builder", "Writer", "Written", "block_label", "finite", "guard"]

_SHAPE_READS = (np.shape, np.ndim, np.size, np.result_type, np.iscomplexobj, np.isrealobj)
"""Reads of shapes and dtypes alone, which the checks of the arguments hold fixed: not
guarded."""
_BUILTINS = ("max", "min", "abs", "round", "dict", "float", "int", "bool", "len")
MODES = ("forward", "tangent", "adjoint")


class Written(NamedTuple):
    """What a :class:`Writer` wrote: the source, its compiled function, the numpy
    operations of the derivative and of the forward statements, and the names of the
    vertices preaccumulation eliminated."""

    source: str
    function: object
    calls: int
    forward_calls: int
    eliminated: tuple


# ------------------------------------------------------------- helpers run
def guard(what: str, function, args, kwargs, was) -> None:
    """Read a value again as the traced program read it; raise when it reads otherwise
    (new inputs would take another path)."""
    same, now = read_again(function, args, kwargs, was)
    if not same:
        raise ValueError(f"the program read {what}, which depends on the inputs: {was!r:.60} "
                         f"when traced, {now!r:.60} now, so at these inputs it takes another "
                         f"path (trace again)")


def finite(values) -> None:
    """Raise when a value is not finite (the trace would have refused it).

    >>> finite((1.0, np.array([1e308, 1e308])))
    >>> finite((np.array([1.0, np.nan]),))
    Traceback (most recent call last):
    ...
    ValueError: a value is not finite at these inputs (trace there to see which vertex)
    """
    for v in values:
        if not (np.isfinite(v).all() if type(v) is np.ndarray else math.isfinite(v)):
            raise ValueError("a value is not finite at these inputs (trace there to see which "
                             "vertex)")


def block_label(rule, positions, params, edge: Edge, *values):
    """The label of one edge of a rule, as the tracer builds it (the blocks of each
    position of the operand, added), from the operands' values and the result's."""
    *operands, y = values
    label = None
    for i in positions:
        part = rule.block(i, operands, y, edge, **params)
        label = part if label is None else OPERATORS.add(label, part)
    if type(label) is not float and np.shape(y) == () == np.shape(operands[positions[0]]):
        label = float(label.to_dense()[0, 0])     # between two numbers: a float
    return label


_SHAPE_ONLY = (Identity, SumAxes, Broadcast, Reshape, Transpose, Im2Col, CumSum, Embed, Gather)


def _static(label) -> bool:
    """Whether a block depends on the shapes alone (so it is built once, not per call)."""
    if isinstance(label, (Composed, Added)):
        return all(_static(p) for p in (label.parts if isinstance(label, Composed)
                                        else label.terms))
    return isinstance(label, _SHAPE_ONLY) and all(
        r.recompute_from == FROM_SHAPES for r in label.retained)


# -------------------------------------------------------------- the writer
@dataclass
class _Diagonal:
    """An elementwise edge: the diagonal as a linear combination, and the operand's
    shape when it was broadcast (None otherwise)."""

    d: Linear
    spread: tuple | None = None


@dataclass
class _Block:
    """An edge of a rule: its operator (a constant, or the variable holding it) or its
    products written out."""

    rule: object
    t: int
    positions: list
    label: str | None = None        # the variable or constant of the operator
    number: bool = False            # a float label (between two numbers)
    texts: tuple | None = None      # (vjp, jvp) source, where written out


class Writer:
    """Writes one traced graph as one program."""

    def __init__(self, g: LCG, kept: Recording, mode: str, preaccumulate: bool):
        self.g, self.kept, self.mode = g, kept, mode
        self.names = list(g.names)                       # as comments name vertices
        self.ids = [python_name(n) for n in self.names]   # as variables are named
        self.tape = tape = kept.tape
        self.tape_of = [t for t, a in enumerate(tape.active) if a] + [
            t for t in kept.outputs if not tape.active[t]]
        self.vertex = {t: v for v, t in enumerate(self.tape_of)}
        dtypes = {np.asarray(x).dtype for x in tape.values if not isinstance(x, float)}
        self.p = Program(exact=not preaccumulate, taken=("finite", "guard", *_BUILTINS),
                         in_place=len(dtypes) <= 1)
        self.p.namespace.update(finite=finite, guard=guard)
        self.var = [None] * len(tape.values)    # tape position -> its variable
        self.preaccumulate = preaccumulate and mode != "forward"
        self.eliminated = []

    # ------------------------------------------------------------ the code
    def code(self) -> Written:
        """Write the program; its source, the compiled function and its counts."""
        p, g = self.p, self.g
        parameters = self.parameters()
        self.forward()
        if self.mode == "forward":
            returned = self.values_returned()
        else:
            preds = self.labels()
            if self.preaccumulate:
                self.eliminate(preds)
            if self.mode == "adjoint":
                seeds = [p.parameter(self.ids[v] + "_bar", BACKWARD) for v in g.outputs]
                parameters += seeds
                derivative = self.adjoint(preds, seeds)
            else:
                seeds = [p.parameter(self.ids[v] + "_dot") for v in g.inputs]
                parameters += seeds
                derivative = self.tangent(preds, seeds)
            present = [d for d in derivative if d in p.position]
            if present:
                p.check(f"finite(({', '.join(present)},))", present,
                        "the derivative is finite, as the sweep's would be")
            returned = f"{self.values_returned()}, ({', '.join(derivative)},)"
        p.live(returned)
        forward_calls = sum(s.calls for s in p.statements if s.key[1] < self._forward_end)
        calls = p.calls() - forward_calls
        what = {"forward": "program", "tangent": "tangent (forward mode)",
                "adjoint": "adjoint"}[self.mode]
        doc = (f"The {what} of a traced graph ({g.n_vertices} vertices, {g.n_edges} edges),"
               f"\n    written by minirad.codegen.")
        if self.mode != "forward":
            doc += f"\n    The derivative makes {calls} operations"
            if self.eliminated:
                doc += (f" (preaccumulation eliminated {len(self.eliminated)} vertices of\n"
                        f"    elementwise chains first)")
            doc += "."
        source = p.source(self.mode, parameters, returned, doc)
        namespace = dict(p.namespace)
        exec(compile(source, f"<minirad.codegen {self.mode}>", "exec"), namespace)  # noqa: S102
        return Written(source, namespace[self.mode], calls, forward_calls,
                       tuple(self.names[v] for v in self.eliminated))

    def parameters(self) -> list[str]:
        """The function's parameters: the inputs (by vertex name), then the data."""
        tape, kept, p = self.tape, self.kept, self.p
        slots = [t for t, step in enumerate(tape.steps) if step is None]
        n_data = sum(1 for q in range(len(kept.args))
                     if q not in kept.positions and is_data(kept.args[q]))
        names = []
        for t in slots[:kept.n_inputs + n_data]:
            wanted = self.names[self.vertex[t]] if tape.active[t] else tape.names.get(
                t, f"data{t}")
            self.var[t] = p.parameter(wanted)
            names.append(self.var[t])
        for t in slots[kept.n_inputs + n_data:]:      # constant outputs
            self.var[t] = p.constant(tape.values[t], "constant") if literal(
                tape.values[t]) is None else literal(tape.values[t])
        return names

    def name(self, t: int) -> str:
        """How a comment names the value at tape position ``t``."""
        if t in self.vertex:
            return self.names[self.vertex[t]]
        return self.var[t] or f"data{t}"

    def shown(self, o) -> str:
        """How a message names an operand: its vertex or data name, a number, or ``c``."""
        if type(o) is int:
            return self.name(o)
        if isinstance(o, (float, np.ndarray, np.generic)) and np.ndim(o) == 0:
            return repr(np.asarray(o).item())
        return "c"

    def operand(self, o) -> str:
        """The text of an operand: its variable, or a constant written in or bound."""
        if type(o) is int:
            return self.var[o]
        text = literal(o)
        if text is None:
            return self.p.constant(o, "c")
        return f"({text})" if text.startswith("-") else text

    # ------------------------------------------------------------- forward
    def forward(self) -> None:
        """One statement per value of the tape, and a guard per value read."""
        tape, p = self.tape, self.p
        reads = [r for r in tape.reads if r[1] not in _SHAPE_READS]
        for t, step in enumerate(tape.steps):
            while reads and reads[0][0] <= t:
                self.guard(reads.pop(0))
            if step is None:
                continue
            rule, operands, params = step
            wanted = self.names[self.vertex[t]] if t in self.vertex else tape.names.get(
                t, f"data{t}")
            text = self.value_text(rule, operands, params, tape.values[t])
            comment = (f"{self.name(t)} = " + self.template(rule, operands, params))
            self.var[t] = p.emit(text, [self.var[o] for o in operands if type(o) is int],
                                 wanted, comment=comment, at=float(t), own=False, reuse=False,
                                 pure=False)
        for read in reads:
            self.guard(read)
        if all(type(x) is float for x in tape.values):
            names = [self.var[t] for t in range(len(tape.values)) if self.var[t] in p.position]
            p.check(f"finite(({', '.join(names)},))", names,
                    "every value is finite, as the trace's were", at=len(tape.values) - 0.5)
        else:
            outs = [self.var[t] for t in self.kept.outputs if self.var[t] in p.position]
            if outs:
                p.check(f"finite(({', '.join(outs)},))", outs, "the outputs are finite",
                        at=len(tape.values) - 0.5)
        self._forward_end = len(p.statements) and p.statements[-1].key[1] + 1

    def template(self, rule, operands, params) -> str:
        pieces = [self.shown(o) for o in operands]
        try:
            return (rule.template(pieces, params) if callable(rule.template)
                    else rule.template.format(*pieces, **params))
        except (KeyError, IndexError, ValueError):
            return rule.name

    def value_text(self, rule, operands, params, value) -> str:
        texts = [self.operand(o) for o in operands]
        values = [self.tape.values[o] if type(o) is int else o for o in operands]
        if isinstance(rule, Op):
            number = all(type(v) is float for v in values)
            function = rule.value if number else rule.on_arrays[0]
            text = self.call(function, texts, f"{rule.name}_value")
            return text if number or np.ndim(value) else f"np.asarray({text})"
        written = VALUES.get(rule)
        text = written(values) if written is not None else None
        if text is not None:
            return text.format(*texts)
        arguments = texts + [f"{k}={self.operand_param(v)}" for k, v in params.items()]
        return f"{self.p.constant(rule.value, rule.name + '_value')}({', '.join(arguments)})"

    def operand_param(self, v) -> str:
        text = literal(v)
        return text if text is not None else self.p.constant(v, "param")

    def call(self, function, texts, wanted: str) -> str:
        """``function(*texts)`` as source: its formula when it has one, else a call by
        name (a function of math or a builtin by its own)."""
        template = formula(function, len(texts))
        if template is not None:
            return template.format(*texts)
        own = getattr(function, "__name__", "")
        module = {"math": math, "builtins": builtins}.get(getattr(function, "__module__", ""))
        if module is not None and getattr(module, own, None) is function:
            name = f"math.{own}" if module is math else own
        else:
            name = self.p.constant(function, wanted)
        return f"{name}({', '.join(texts)})"

    def guard(self, read) -> None:
        at, function, operands, kwargs, result = read
        p = self.p
        texts = [self.var[o] if type(o) is int else self.operand(o) for o in operands]
        name = getattr(function, "__name__", "value")
        shown = f"{name}({', '.join(self.shown(o) for o in operands)})"
        was = literal(result) if result is not RAISED else None
        if was is None:
            was = p.constant(result, "was")
        fn = p.constant(function, python_name(f"read_{name}"))
        args = "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
        kw = literal(tuple(sorted(kwargs.items())))
        kw_text = f"dict({kw})" if kw is not None and kwargs else (
            "{}" if not kwargs else p.constant(kwargs, "options"))
        p.check(f"guard({shown!r}, {fn}, {args}, {kw_text}, {was})",
                [self.var[o] for o in operands if type(o) is int],
                "the trace read this value: the path holds", at=at - 0.5)

    def values_returned(self) -> str:
        outs = [self.var[t] for t in self.kept.outputs]
        return outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ",)"

    # -------------------------------------------------------------- labels
    def labels(self) -> list[dict]:
        """Per vertex, its in-edges: predecessor -> label (:class:`_Diagonal` or
        :class:`_Block`), in the graph's edge order."""
        tape, g = self.tape, self.g
        preds = [dict() for _ in range(g.n_vertices)]
        live = reachable(g, g.outputs, "reverse")   # an edge no output reads: not written
        for v, t in enumerate(self.tape_of):
            step = tape.steps[t]
            if step is None or not tape.active[t] or not live[v]:
                continue
            rule, operands, params = step
            positions = {}
            for i, o in enumerate(operands):
                if type(o) is int and tape.active[o]:
                    positions.setdefault(o, []).append(i)
            for o, where in positions.items():
                label = (self.diagonal(rule, t, operands, where, o) if isinstance(rule, Op)
                         else self.block(rule, t, operands, params, where))
                preds[v][self.vertex[o]] = label
        return preds

    def diagonal(self, op: Op, t: int, operands, positions, o) -> _Diagonal:
        tape, p = self.tape, self.p
        values = [tape.values[q] if type(q) is int else q for q in operands]
        y = tape.values[t]
        number = all(type(x) is float for x in values)
        total = None
        for i in positions:
            function = op.partials[i] if number else op.on_arrays[1][i]
            part = self.partial(op, i, function, operands, values, t, number)
            total = part if total is None else p.add(total, part)
        spread = None if number or np.shape(values[positions[0]]) == np.shape(y) else \
            np.shape(values[positions[0]])
        return _Diagonal(total, spread)

    def partial(self, op: Op, i: int, function, operands, values, t: int,
                number: bool) -> Linear:
        """The partial of operand ``i`` as a linear combination: a number, a variable of
        the program, or a new statement computing it."""
        p, tape = self.p, self.tape
        y = tape.values[t]
        texts = [self.operand(o) for o in operands] + [self.var[t]]
        template = formula(function, len(operands) + 1)
        reads = [self.var[o] for o in operands if type(o) is int] + [self.var[t]]
        if template is not None and template.startswith("{") and template.endswith("}") \
                and template[1:-1].isdigit():
            k = int(template[1:-1])
            source = (operands + (t,))[k] if k < len(operands) else t
            if type(source) is int:
                return Linear.of(self.var[source])
            if literal(source) is not None and np.ndim(source) == 0:
                return Linear((), float(source))
            return Linear.of(p.constant(source, "c"))
        if template is not None and "{" not in template.replace("{{", ""):
            return Linear((), float(eval(template, {"np": np, "math": math})))  # noqa: S307
        d = None
        if not number:
            with np.errstate(all="ignore"):
                d = function(*values, y)
        mask = isinstance(d, np.ndarray) and d.dtype == np.bool_
        text = template.format(*texts) if template is not None else (
            f"{p.constant(function, f'{op.name}_d{i}')}({', '.join(texts)})")
        if isinstance(d, np.ndarray) and not mask and d.dtype != np.asarray(y).dtype:
            text = f"np.asarray({text}, dtype=np.{np.asarray(y).dtype.name})"
        v, u = self.names[self.vertex[t]], self.name(operands[i])
        var = p.emit(text, reads, python_name(f"d{v}_d{u}".replace("[", "").replace("]", "")),
                     comment=f"d{v}/d{u}", own=False, mask=mask,
                     at=float(t))
        return Linear.of(var)

    def block(self, rule, t: int, operands, params, positions) -> _Block:
        tape, p = self.tape, self.p
        values = [tape.values[q] if type(q) is int else q for q in operands]
        y = tape.values[t]
        number = np.shape(y) == () == np.shape(values[positions[0]])
        written = PRODUCTS.get(rule)
        if written is not None and len(positions) == 1 and written[0](values):
            i = positions[0]
            return _Block(rule, t, positions, texts=(written[1][i], written[2][i]))
        edge = Edge(tape, t, operands, self.vertex)
        with np.errstate(all="ignore"):
            label = block_label(rule, positions, params, edge, *values, y)
        v, u = (python_name(n).strip("_") for n in (self.names[self.vertex[t]],
                                                    self.name(operands[positions[0]])))
        if not number and _static(label):
            return _Block(rule, t, positions, p.constant(label, f"J_{v}_{u}"))
        builder = Builder(rule, positions, params, edge, operands)
        name = p.constant(builder, f"{rule.name}_block")
        args = [self.var[o] for o in operands if type(o) is int] + [self.var[t]]
        var = p.emit(f"{name}({', '.join(args)})", args, f"J_{v}_{u}",
                     comment=f"d{v}/d{u}: the block of {rule.name}", own=False, calls=1,
                     at=float(t))
        return _Block(rule, t, positions, var, number)

    # -------------------------------------------------------- elimination
    def eliminate(self, preds: list[dict]) -> None:
        """Vertex elimination of the intermediate vertices of elementwise chains, in a
        dynamic order (the lowest-numbered vertex that qualifies first)."""
        g = self.g
        succs = [set() for _ in range(g.n_vertices)]
        for v, edges in enumerate(preds):
            for u in edges:
                succs[u].add(v)
        ends = set(g.inputs) | set(g.outputs)
        heap = [v for v in range(g.n_vertices) if v not in ends]
        heapq.heapify(heap)
        gone = set()
        while heap:
            v = heapq.heappop(heap)
            if v in gone or not self.eliminable(v, preds, succs):
                continue
            self.eliminate_vertex(v, preds, succs)
            gone.add(v)
            self.eliminated.append(v)
            for w in [*preds[v], *succs[v]]:
                if w not in ends and w not in gone:
                    heapq.heappush(heap, w)
            preds[v], succs[v] = {}, set()

    def eliminable(self, v: int, preds, succs) -> bool:
        ins, outs = preds[v], succs[v]
        if not ins or not outs:
            return False
        if not all(isinstance(label, _Diagonal) for label in ins.values()):
            return False
        out_labels = [preds[w][v] for w in outs]
        if not all(isinstance(label, _Diagonal) and label.spread is None
                   for label in out_labels):
            return False
        products = 0
        for w, out in zip(outs, out_labels):
            for u, inner in ins.items():
                there = preds[w].get(u)
                if there is not None and not (isinstance(there, _Diagonal)
                                              and there.spread == inner.spread):
                    return False
                products += not out.d.constant and not inner.d.constant
        return products <= 1

    def eliminate_vertex(self, v: int, preds, succs) -> None:
        p, name = self.p, self.names
        for w in sorted(succs[v]):
            out = preds[w].pop(v)
            for u, inner in preds[v].items():
                d = p.multiply(out.d, inner.d, f"d{self.ids[w]}_d{self.ids[u]}",
                               comment=f"d{name[w]}/d{name[u]} through {name[v]}")
                there = preds[w].get(u)
                preds[w][u] = _Diagonal(d if there is None else p.add(there.d, d),
                                        inner.spread)
                succs[u].add(w)
        for u in preds[v]:
            succs[u].discard(v)

    # ------------------------------------------------------------- sweeps
    def adjoint(self, preds, seeds) -> list[str]:
        """The reverse sweep: cotangents pulled back vertex by vertex, last first."""
        g, p = self.g, self.p
        names = self.ids
        cot: dict[int, Linear] = {v: Linear.of(s) for v, s in zip(g.outputs, seeds)}
        for v in range(g.n_vertices - 1, -1, -1):
            if v not in cot or not preds[v] or cot[v].constant:
                continue
            coef, var = p.single(cot[v], f"{names[v]}_bar")
            bar = Linear.of(var, coef)
            for u, label in reversed(list(preds[v].items())):
                wanted = f"{names[u]}_bar" if u not in cot else ""
                term = self.pullback(bar, label, u, v, wanted)
                cot[u] = p.accumulate(cot.get(u), term, f"{names[u]}_bar",
                                      comment=f"{names[u]}_bar: the edge {self.names[u]} -> "
                                              f"{self.names[v]} too")
        out = []
        for x in g.inputs:
            if x in cot and not cot[x].constant:
                out.append(p.materialize(cot[x], f"{names[x]}_bar"))
            else:
                out.append("None")
        return out

    def pullback(self, bar: Linear, label, u: int, v: int, wanted: str) -> Linear:
        """The term ``bar * label`` that the edge u -> v adds to u's cotangent."""
        p, g = self.p, self.g
        comment = f"the edge {self.names[u]} -> {self.names[v]}"
        if isinstance(label, _Diagonal):
            term = p.multiply(bar, self.settled(label.d, u, v), wanted, comment)
            if label.spread is None or term.constant:
                return term
            coef, var = p.single(term)
            spread = Broadcast(label.spread, g.shape(v), g.dtype(v))
            summed = any(a != b for a, b in zip((1,) * (len(g.shape(v)) - len(
                label.spread)) + label.spread, g.shape(v)))
            op = p.constant(spread, f"spread_{self.ids[u]}")
            return Linear.of(p.emit(f"{op}.apply_transpose({var})", (var,), wanted,
                                    comment=comment + ", summed back", own=summed), coef)
        coef, var = p.single(bar)
        if label.texts is not None:
            texts = [self.operand(o) for o in self.tape.steps[label.t][1]]
            text = label.texts[0].format(*texts, u=var)
            return Linear.of(p.emit(text, [var, *texts], wanted, comment=comment), coef)
        if label.number:
            text = f"{var} * {label.label}"
        else:
            text = f"{label.label}.apply_transpose({var})"
        return Linear.of(p.emit(text, (var, label.label), wanted, comment=comment,
                                own=label.number), coef)

    def settled(self, d: Linear, u: int, v: int) -> Linear:
        """An edge's diagonal as one scaled variable (written out, named after the edge,
        when it is a combination of several)."""
        if d.constant or (len(d.terms) == 1 and not d.const):
            return d
        names, ids, p = self.names, self.ids, self.p
        how = "preaccumulated" if self.preaccumulate else "the partials of its uses added"
        # written where its operands are (so that they can be freed), not beside v
        coef, var = p.single(d, f"d{ids[v]}_d{ids[u]}".replace("__", "_"),
                             f"d{names[v]}/d{names[u]}, {how}")
        return Linear.of(var, coef)

    def tangent(self, preds, seeds) -> list[str]:
        """The forward sweep: each tangent beside its value, in the graph's order."""
        g, p = self.g, self.p
        names = self.ids
        tan: dict[int, Linear] = {v: Linear.of(s) for v, s in zip(g.inputs, seeds)}
        for v in range(g.n_vertices):
            if v in tan:
                continue
            total = None
            p.least = float(self.tape_of[v])      # beside the value, not before it
            for u, label in preds[v].items():
                if u not in tan or tan[u].constant:
                    continue
                term = self.pushforward(tan[u], label, u, v,
                                        f"{names[v]}_dot" if total is None else "")
                total = p.accumulate(total, term, f"{names[v]}_dot")
            if total is not None:
                if len(total.terms) > 1 or total.const:
                    coef, var = p.single(total, f"{names[v]}_dot")
                    total = Linear.of(var, coef)
                tan[v] = total
        p.least = -1.0
        return [p.materialize(tan[o], f"{names[o]}_dot") if o in tan and not tan[o].constant
                else "None" for o in g.outputs]

    def pushforward(self, dot: Linear, label, u: int, v: int, wanted: str) -> Linear:
        """The term ``label * dot`` that the edge u -> v adds to v's tangent."""
        p, g = self.p, self.g
        comment = f"the edge {self.names[u]} -> {self.names[v]}"
        if isinstance(label, _Diagonal):
            term = p.multiply(self.settled(label.d, u, v), dot, wanted, comment)
            if label.spread is None or term.constant:
                return term
            coef, var = p.single(term)
            return Linear.of(p.emit(f"np.broadcast_to({var}, {g.shape(v)!r})", (var,), wanted,
                                    comment=comment + ", broadcast", own=False), coef)
        coef, var = p.single(dot)
        if label.texts is not None:
            texts = [self.operand(o) for o in self.tape.steps[label.t][1]]
            text = label.texts[1].format(*texts, t=var)
            return Linear.of(p.emit(text, [var, *texts], wanted, comment=comment), coef)
        text = f"{label.label} * {var}" if label.number else f"{label.label}.apply({var})"
        return Linear.of(p.emit(text, (var, label.label), wanted, comment=comment,
                                own=label.number), coef)


class Builder:
    """Builds the block of one rule's edge from the values at run time."""

    def __init__(self, rule, positions, params, edge, operands):
        self.rule, self.positions, self.params, self.edge = rule, positions, params, edge
        self.slots = [i for i, o in enumerate(operands) if type(o) is int]
        self.constants = list(operands)

    def __call__(self, *values):
        *given, y = values
        operands = list(self.constants)
        for i, value in zip(self.slots, given):
            operands[i] = value
        return block_label(self.rule, self.positions, self.params, self.edge, *operands, y)

    def __repr__(self):
        return f"the block of {self.rule.name}"
