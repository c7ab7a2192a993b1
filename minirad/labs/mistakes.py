"""The common mistakes the checks recognise: one planted wrong answer each.

:data:`MISTAKES` maps an exercise number to ``(mistake, answer)`` pairs, where
``answer()`` returns the wrong definitions, one per name the exercise's check
takes.  :func:`catalogue` runs every one through its check and keeps what
the check said, so the catalogue an instructor reads (``tutorials/INSTRUCTORS.md``)
is the checks' own output, not a second description of it; the tests run
the same table through the grader, where each must score 0.

>>> entry = next(e for e in catalogue(["1.1"]) if e.mistake.startswith("a one-sided"))
>>> entry.status, entry.hint
('wrong answer', 'your number matches the forward difference (f(x+h) - f(x)) / h, whose \
error shrinks only like h')
"""

from __future__ import annotations

import io
import math
from contextlib import redirect_stdout
from dataclasses import dataclass

import numpy as np

from ..studies.memory import kept_entries
from ..studies.pde import index_dtype
from .checks import CheckFailed
from .checks_injection import planted_variances
from .checks_memory import table1_variant
from .exercise import EXERCISES

__all__ = ["MISTAKES", "Entry", "catalogue"]


# ------------------------------------------------------------ lab 2 and 3
def _forward(g, overwrite=False, transpose=False, dtype=float, unit=False):
    tangent = np.zeros((g.n_vertices, len(g.inputs)), dtype=dtype)
    tangent[list(g.inputs), range(len(g.inputs))] = 1
    for u, v, partial in g.edges():
        term = (1 if unit else partial) * tangent[u]
        tangent[v] = term if overwrite else tangent[v] + term
    result = tangent[list(g.outputs)]
    return result.T if transpose else result


def _reverse(g, overwrite=False, transpose=False):
    adjoint = np.zeros((g.n_vertices, len(g.outputs)))
    adjoint[list(g.outputs), range(len(g.outputs))] = 1.0
    for u, v, partial in reversed(list(g.edges())):
        term = partial * adjoint[v]
        adjoint[u] = term if overwrite else adjoint[u] + term
    result = adjoint[list(g.inputs)].T
    return result.T if transpose else result


# ------------------------------------------------------------------ lab 4
def _eliminate(edges, v, combine=lambda old, new: old + new, product=lambda a, b: a * b):
    new = {edge: d for edge, d in edges.items() if v not in edge}
    for (p, w), d_pv in edges.items():
        if w != v:
            continue
        for (w2, s), d_vs in edges.items():
            if w2 == v:
                new[p, s] = combine(new.get((p, s), 0.0), product(d_vs, d_pv))
    return new


def _greedy_order(key):
    def order(g):
        pred = {v: set(g.predecessors(v)) for v in range(g.n_vertices)}
        succ = {v: set(g.successors(v)) for v in range(g.n_vertices)}
        left, result = set(g.intermediates), []
        while left:
            v = min(left, key=lambda u: key(len(pred[u]), len(succ[u]), u))
            for s in succ[v]:
                pred[s] = (pred[s] - {v}) | pred[v]
            for p in pred[v]:
                succ[p] = (succ[p] - {v}) | succ[v]
            left.remove(v)
            result.append(g.names[v])
        return result
    return order


def _static_order(g):
    degree = {v: len(g.predecessors(v)) * len(g.successors(v)) for v in g.intermediates}
    return [g.names[v] for v in sorted(degree, key=lambda v: (degree[v], v))]


def _edge_step(add: bool = True, prune: bool = True):
    """Exercise 4.4's edge step, with the product replacing an existing partial
    (``add=False``) or a vertex nothing reaches kept (``prune=False``)."""
    def eliminate_edge(edges, i, j, direction):
        new = dict(edges)
        c_ji = new.pop((i, j))
        front = direction == "front"
        for (a, b), c in edges.items():
            if (a == j) if front else (b == i):
                key = (i, b) if front else (a, j)
                new[key] = (new.get(key, 0.0) if add else 0.0) + c * c_ji
        end = j if front else i
        if prune and not any((b if front else a) == end for a, b in new):
            new = {(a, b): c for (a, b), c in new.items() if end not in (a, b)}
        return new
    return eliminate_edge


# ------------------------------------------------------------------ lab 5
def _sampler(draw=lambda rng, d, k: rng.integers(d, size=k), scale=True, add=True):
    def sample_Q(g, k, rng):
        Q, visited = {}, set(g.inputs)
        for v in range(g.n_vertices):
            successors = g.successors(v)
            if v not in visited or not successors:
                continue
            d = len(successors)
            for i in draw(rng, d, k):
                w = successors[int(i)]
                edge = (g.names[v], g.names[w])
                weight = (d / k if scale else 1.0) * g.partial(v, w)
                Q[edge] = Q.get(edge, 0.0) + weight if add else weight
                visited.add(w)
        return Q
    return sample_Q


def _global_rng(rng, d, k):
    return np.random.randint(d, size=k)  # noqa: NPY002  (the planted mistake)


# ------------------------------------------------------------------ lab 6
def _descend(sign=-1.0, rated=True):
    def descend(f, rate, *args):
        from ..exact.sweeps import reverse_sweep
        from ..tracing import trace

        gradient = reverse_sweep(trace(f, *args)).jacobian[0]
        return tuple(float(x + sign * (rate if rated else 1.0) * d)
                     for x, d in zip(args, gradient))
    return descend


def _sgd(exact=False, fresh=False, start_row=True):
    def sgd(f, start, rate, steps, k=None, rng=None):
        from ..exact.sweeps import reverse_sweep
        from ..randomized.sampling import sample_paths
        from ..tracing import trace

        point = np.array(start, dtype=float)
        path = [point] if start_row else []
        for _ in range(steps):
            graph = trace(f, *point)
            if k is None or exact:
                gradient = reverse_sweep(graph).jacobian[0]
            else:
                gradient = sample_paths(graph, k, np.random.default_rng(0) if fresh
                                        else rng).jacobian[0]
            point = point - rate * gradient
            path.append(point)
        return np.array(path)
    return sgd


# ------------------------------------------------------------------ lab 7
def _tracer(mistake=""):
    """A tape tracer (Exercise 7.1) with one slip switched on."""
    class Var:
        def __init__(self, value, tape):
            self.value, self.adjoint, self.tape = value, 0.0, tape

        def record(self, value, *operands):
            result = Var(value, self.tape)
            self.tape.append((result, operands))
            return result

        def __add__(self, other):
            return self.record(self.value + other.value, (self, 1.0), (other, 1.0))

        def __sub__(self, other):
            minus = 1.0 if mistake == "lost minus" else -1.0
            return self.record(self.value - other.value, (self, 1.0), (other, minus))

        def __mul__(self, other):
            if mistake == "swapped product":
                return self.record(self.value * other.value, (self, self.value),
                                   (other, other.value))
            return self.record(self.value * other.value, (self, other.value),
                               (other, self.value))

    def sin(a):
        slope = math.sin(a.value) if mistake == "sin' = sin" else math.cos(a.value)
        return a.record(math.sin(a.value), (a, slope))

    def gradient(f, x, y):
        tape = []
        X, Y = Var(x, tape), Var(y, tape)
        result = f(X, Y, sin)
        result.adjoint = 1.0
        for node, operands in reversed(tape):
            for operand, partial in operands:
                if mistake == "overwritten adjoint":
                    operand.adjoint = partial * node.adjoint
                else:
                    operand.adjoint += partial * node.adjoint
        return [X.adjoint, Y.adjoint]

    return gradient


class _TArray:
    def __init__(self, data):
        self.data = np.asarray(data, dtype=float)
        self.grad = None
        self.children = []


def _accum(x):
    if x.grad is None:
        x.grad = sum((pullback(_accum(child)) for child, pullback in x.children),
                     np.zeros_like(x.data))
    return x.grad


def _vjp(op, *arrays, wobble):
    xs = [a if isinstance(a, _TArray) else _TArray(a) for a in arrays]
    z = op(*xs)
    z.grad = np.asarray(wobble, dtype=float)
    return [_accum(x) for x in xs]


def _matmul(into_x=lambda w, X, Y: w @ Y.T):
    def matmul(X, Y):
        Z = _TArray(X.data @ Y.data)
        X.children.append((Z, lambda w: into_x(w, X.data, Y.data)))
        Y.children.append((Z, lambda w: X.data.T @ w))
        return Z
    return matmul


def _unary(value, pullback):
    def op(x):
        z = _TArray(value(x.data))
        x.children.append((z, lambda w: pullback(w, x.data, z.data)))
        return z
    return op


def _binary(sign):
    def op(X, Y):
        Z = _TArray(X.data + sign * Y.data)
        X.children.append((Z, lambda w: w))
        Y.children.append((Z, lambda w: sign * w))
        return Z
    return op


def _hcat(*xs):
    z = _TArray(np.concatenate([x.data for x in xs], axis=1))
    start = 0
    for x in xs:
        stop = start + x.data.shape[1]
        x.children.append((z, lambda w, a=start, b=stop: w[:, a:b]))
        start = stop
    return z


def _array_rules(**changed):
    """The seven names Exercise 7.3's check takes, right but for ``changed``."""
    rules = {
        "tsum": _unary(np.sum, lambda w, x, z: w * np.ones_like(x)),
        "add": _binary(1.0),
        "sub": _binary(-1.0),
        "abs2": _unary(np.square, lambda w, x, z: w * 2 * x),
        "tsigmoid": _unary(lambda x: 1 / (1 + np.exp(-x)), lambda w, x, z: w * z * (1 - z)),
        "hcat": _hcat,
        "vjp": _vjp,
    }
    rules.update(changed)
    return tuple(rules.values())


def _add_bang(writes: str = "own", new_owned: bool = True):
    """Exercise 7.4's add!!: writing into an accumulator only when ``writes`` is
    ``"own"``, always (``"always"``) or never (``"never"``); a new sum marked as
    the caller's own unless ``new_owned`` is False."""
    def add_bang(total, term, own):
        can_hold = (isinstance(total, np.ndarray) and total.flags.writeable
                    and np.result_type(total, term) == total.dtype
                    and np.broadcast_shapes(total.shape, np.shape(term)) == total.shape)
        if can_hold and (writes == "always" or (writes == "own" and own)):
            np.add(total, term, out=total)
            return total, True
        total = total + term
        return total, new_owned and isinstance(total, np.ndarray)
    return add_bang


# ------------------------------------------------------------------ lab 8
def _checkpoints(every_state=False, from_start=False):
    def checkpointed_gradient(step, vjp, seed, x0, n, every):
        if every_state:
            states = [x0]
            for i in range(n):
                states.append(step(i, states[-1]))
            lam = seed(states[-1])
            for i in reversed(range(n)):
                lam = vjp(i, states[i], lam)
            return lam
        checkpoints, x = {0: x0}, x0
        for i in range(n):
            x = step(i, x)
            if (i + 1) % every == 0 and i + 1 < n:
                checkpoints[i + 1] = x
        lam = seed(x)
        for start in reversed(range(0, n, every)):
            x = x0 if from_start else checkpoints[start]
            states = [x]
            for i in range(0 if from_start else start, min(start + every, n) - 1):
                states.append(step(i, states[-1]))
            states = states[-(min(start + every, n) - start):]
            for offset in reversed(range(len(states))):
                lam = vjp(start + offset, states[offset], lam)
        return lam
    return checkpointed_gradient


def _cost(segments=lambda n, e: -(-n // e), first_sweep=True):
    def uniform_cost(n, every):
        count = segments(n, every)
        steps = (n if first_sweep else 0) + (n - count)
        lengths = [min(every, n - j * every) for j in range(count)]
        return steps, max((j + length for j, length in enumerate(lengths)), default=0)
    return uniform_cost


def _budget(value_bytes=8, index=True, states=lambda p: p.n_steps, rounding=math.floor):
    def rad_samples_for_budget(p, budget):
        per_sample = value_bytes + (np.dtype(index_dtype(p)).itemsize if index else 0)
        return min(p.size, int(rounding(budget / (states(p) * per_sample))))
    return rad_samples_for_budget


# ------------------------------------------------------------------ lab 9
def _estimator(shared=False, scale=lambda d, k, f: d / k, keep=kept_entries):
    def estimate(x, delta, f, rng):
        B, d = x.shape
        k = keep(d, f)
        P = np.zeros((B, d))
        rows = [P[0]] if shared else P
        for row in rows:
            np.add.at(row, rng.integers(0, d, size=k), scale(d, k, f))
        if shared:
            P[:] = P[0]
        return (x * P).T @ delta
    return estimate


def _z(stderr=lambda s, n: s / np.sqrt(n), ddof=1, sign=1.0):
    def z_scores(estimates, exact):
        estimates = np.asarray(estimates, dtype=float)
        miss = sign * (estimates.mean(axis=0) - exact)
        s = stderr(estimates.std(axis=0, ddof=ddof), len(estimates))
        z = np.zeros(miss.shape)
        np.divide(miss, s, out=z, where=s > 0)
        flat = (s == 0) & ~np.isclose(estimates.mean(axis=0), exact)
        z[flat] = np.copysign(np.inf, miss[flat])
        return z
    return z_scores


# ----------------------------------------------------------------- lab 10
def _sampling(draws=lambda d, k: k, scale=True, add=True, replace=True):
    def sampling_P(d, k, rng):
        n = draws(d, k)
        picks = rng.integers(d, size=n) if replace else rng.permutation(d)[:min(n, d)]
        diagonal = np.zeros(d)
        for i in picks:
            diagonal[i] = diagonal[i] + 1 if add else 1
        return np.diag(diagonal * (d / k if scale else 1.0))
    return sampling_P


def _rademacher(divide=math.sqrt, transpose=False):
    def rademacher_P(d, k, rng):
        R = rng.choice([-1.0, 1.0], size=(d, k)) / divide(k)
        return R.T @ R if transpose else R @ R.T
    return rademacher_P


def _one(fn):
    return lambda: (fn,)


def _tree_size_slip(kind: str):
    """A wrong count of the nodes of a SymPy expression tree (lab 11)."""
    def count(e):
        from ..symbolic import sympy

        nodes = list(sympy().preorder_traversal(e))
        return {"distinct": len(set(nodes)), "leaves": sum(1 for n in nodes if not n.args),
                "count_ops": int(sympy().count_ops(e)), "one short": len(nodes) - 1}[kind]
    return _one(count)


class _Dual:
    """A correct dual number, the base of the planted slips of Exercise 12.1."""

    def __init__(self, value, tangent=0.0):
        self.value, self.tangent = value, tangent

    @classmethod
    def lift(cls, x):
        return x if isinstance(x, _Dual) else cls(x, 0.0)

    def __add__(self, other):
        other = self.lift(other)
        return type(self)(self.value + other.value, self.tangent + other.tangent)

    __radd__ = __add__

    def __sub__(self, other):
        other = self.lift(other)
        return type(self)(self.value - other.value, self.tangent - other.tangent)

    def __rsub__(self, other):
        return self.lift(other) - self

    def __mul__(self, other):
        other = self.lift(other)
        return type(self)(self.value * other.value,
                          self.tangent * other.value + self.value * other.tangent)

    __rmul__ = __mul__

    def __truediv__(self, other):
        other = self.lift(other)
        return type(self)(self.value / other.value, (self.tangent * other.value - self.value
                                                     * other.tangent) / other.value ** 2)

    def __rtruediv__(self, other):
        return self.lift(other) / self

    def __neg__(self):
        return type(self)(-self.value, -self.tangent)

    def sin(self):
        return type(self)(math.sin(self.value), math.cos(self.value) * self.tangent)

    def cos(self):
        return type(self)(math.cos(self.value), -math.sin(self.value) * self.tangent)

    def exp(self):
        return type(self)(math.exp(self.value), math.exp(self.value) * self.tangent)

    def log(self):
        return type(self)(math.log(self.value), self.tangent / self.value)


def _dual_slip(name: str, method):
    """``_Dual`` with one method replaced by a wrong one."""
    return _one(type("Dual", (_Dual,), {name: method}))


def _hvp_slip(kind: str):
    """A wrong Hessian-vector product for Exercise 12.2, built on the gradient and Dual
    the check hands in."""
    def hvp(f, x, v, gradient, Dual):
        if kind == "difference":  # the gradient differenced along v
            h = 1e-6
            ahead = gradient(f, *(a + h * b for a, b in zip(x, v)))
            return [(float(p) - float(q)) / h for p, q in zip(ahead, gradient(f, *x))]
        seeds = {"gradient": v, "ones": [1.0] * len(x),
                 "first": [v[0]] + [0.0] * (len(x) - 1)}[kind]
        adjoints = gradient(f, *(Dual(a, t) for a, t in zip(x, seeds)))
        read = (lambda a: a.value) if kind == "gradient" else (lambda a: a.tangent)
        return [float(read(a)) if isinstance(a, Dual) else 0.0 for a in adjoints]
    return _one(hvp)


def _variance_slip(i: int):
    return _one(lambda g: list(planted_variances(g).values())[i])


def _table1_slip(variant: dict):
    return lambda sizes, f, batch: table1_variant(sizes, f, batch, **variant)


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
def _adjoint_slip(kind: str):
    """A wrong adjoint of sum(tanh(W @ x)) for Exercise 13.1."""
    def adjoint(W, x, y_bar):
        v = np.tanh(W @ x)
        v_bar = np.full(v.shape, float(y_bar))
        v2_bar = {"no tanh": v_bar, "tanh' = 1 - tanh": v_bar * (1.0 - v),
                  "no y_bar": 1.0 - v * v}.get(kind, v_bar * (1.0 - v * v))
        W_bar = np.outer(x, v2_bar) if kind == "transposed" else np.outer(v2_bar, x)
        x_bar = v2_bar @ W.T if kind == "x_bar by W" else W.T @ v2_bar
        return float(v.sum()), (W_bar, x_bar)
    return lambda: (adjoint,)


def _diagonal_slip(kind: str):
    """Wrong diagonals of one relaxation step for Exercise 13.2."""
    def step_diagonals(x, c):
        cube = x * x if kind == "x^2" else 3.0 * x * x
        d_x = 0.01 * (c - cube) + (0.0 if kind == "no identity" else 1.0)
        return d_x, (x if kind == "no 0.01" else 0.01 * x)
    return lambda: (step_diagonals,)


MISTAKES = {
    "1.1": [
        ("a one-sided (forward) difference", _one(lambda f, x, h: (f(x + h) - f(x)) / h)),
        ("dividing by h instead of 2h", _one(lambda f, x, h: (f(x + h) - f(x - h)) / h)),
        ("writing / 2 * h for / (2 * h)", _one(lambda f, x, h: (f(x + h) - f(x - h)) / 2 * h)),
    ],
    "1.2": [
        ("a one-sided (forward) difference",
         _one(lambda f, x, d, h: (f(x + h * d) - f(x)) / h)),
        ("a normalised direction",
         _one(lambda f, x, d, h: (f(x + h * d / np.linalg.norm(d))
                                  - f(x - h * d / np.linalg.norm(d))) / (2 * h))),
        ("dividing by h instead of 2h",
         _one(lambda f, x, d, h: (f(x + h * d) - f(x - h * d)) / h)),
    ],
    "2.1": [
        ("= where contributions must be added", _one(lambda g: _forward(g, overwrite=True))),
        ("the transposed Jacobian", _one(lambda g: _forward(g, transpose=True))),
    ],
    "2.2": [
        ("= where contributions must be added", _one(lambda g: _reverse(g, overwrite=True))),
        ("the transposed Jacobian", _one(lambda g: _reverse(g, transpose=True))),
    ],
    "3.1": [
        ("counts held in floats", _one(lambda g: _forward(g, unit=True))),
        ("counts in numpy integers, which wrap",
         _one(lambda g: _forward(g, unit=True, dtype=np.int64))),
        ("= where counts must be added",
         _one(lambda g: _forward(g, unit=True, dtype=object, overwrite=True))),
    ],
    "4.1": [
        ("a sum of the partials instead of their product",
         _one(lambda edges, v: _eliminate(edges, v, product=lambda a, b: a + b))),
        ("a parallel edge overwritten instead of added to",
         _one(lambda edges, v: _eliminate(edges, v, combine=lambda old, new: new))),
    ],
    "4.2": [
        ("degrees computed once, on the original graph", _one(_static_order)),
        ("ties to the highest vertex number", _one(_greedy_order(lambda p, s, v: (p * s, -v)))),
        ("|pred| + |succ| instead of the product",
         _one(_greedy_order(lambda p, s, v: (p + s, v)))),
    ],
    "4.3": [
        ("one colour for every column", _one(lambda P: [0] * P.shape[1])),
        ("a colour per column: valid but wasteful", _one(lambda P: list(range(P.shape[1])))),
    ],
    "4.4": [
        ("the product replaces the partial already on the edge", _one(_edge_step(add=False))),
        ("a vertex nothing reaches kept", _one(_edge_step(prune=False))),
    ],
    "5.1": [
        ("weights without the d/k", _one(_sampler(scale=False))),
        ("a repeated draw overwritten instead of added", _one(_sampler(add=False))),
        ("draws without replacement",
         _one(_sampler(draw=lambda rng, d, k: rng.choice(d, size=k, replace=k > d)))),
        ("numbers from numpy's global generator", _one(_sampler(draw=_global_rng))),
    ],
    "5.2": [
        (slip, _variance_slip(i))
        for i, slip in enumerate(("partials not squared", "the factor d left out",
                                  "the second moment, J^2 not subtracted"))
    ],
    "6.1": [
        ("a step uphill", _one(_descend(sign=1.0))),
        ("the gradient not scaled by the rate", _one(_descend(rated=False))),
    ],
    "6.2": [
        ("the exact gradient instead of an estimate", _one(_sgd(exact=True))),
        ("a new generator instead of the one given", _one(_sgd(fresh=True))),
        ("no row for the start", _one(_sgd(start_row=False))),
    ],
    "6.3": [
        ("the wrong sign", _one(lambda f_x, f_p, g_x: np.linalg.solve(f_x.T, g_x) @ f_p)),
        ("f_x instead of its transpose",
         _one(lambda f_x, f_p, g_x: -np.linalg.solve(f_x, g_x) @ f_p)),
    ],
    "7.1": [
        (f"a tracer with a {slip}", _one(_tracer(slip)))
        for slip in ("swapped product", "lost minus", "sin' = sin", "overwritten adjoint")
    ],
    "7.2": [
        ("the gradient into X transposed",
         lambda: (_matmul(lambda w, X, Y: (w @ Y.T).T), _vjp)),
        ("Y^T multiplied from the wrong side", lambda: (_matmul(lambda w, X, Y: Y.T @ w), _vjp)),
    ],
    "7.3": [
        ("abs2's pullback without the 2",
         lambda: _array_rules(abs2=_unary(np.square, lambda w, x, z: w * x))),
        ("the minus of sub lost", lambda: _array_rules(sub=_binary(1.0))),
        ("sigma' taken at the input",
         lambda: _array_rules(tsigmoid=_unary(lambda x: 1 / (1 + np.exp(-x)),
                                              lambda w, x, z: w * x * (1 - x)))),
    ],
    "7.4": [
        ("always a new array", _one(_add_bang(writes="never"))),
        ("writing into an array that is not yours", _one(_add_bang(writes="always"))),
        ("a new sum not marked as yours", _one(_add_bang(new_owned=False))),
    ],
    "8.1": [
        (slip, _one(_table1_slip(variant)))
        for slip, variant in (("8-byte floats", dict(float_bytes=8)),
                              ("the biases left out", dict(biases=False)),
                              ("ReLU masks counted as bytes", dict(relu_bytes=1)),
                              ("floor(f d) where the rule says ceil",
                               dict(keep=lambda d, f: math.floor(round(f * d, 9)))))
    ],
    "8.2": [
        ("every state kept", _one(_checkpoints(every_state=True))),
        ("segments recomputed from x_0", _one(_checkpoints(from_start=True))),
    ],
    "8.3": [
        ("n // every segments", _one(_cost(segments=lambda n, e: n // e))),
        ("the first sweep left out", _one(_cost(first_sweep=False))),
    ],
    "8.4": [
        ("the indices left out", _one(_budget(index=False))),
        ("N + 1 states", _one(_budget(states=lambda p: p.n_steps + 1))),
        ("rounded up", _one(_budget(rounding=math.ceil))),
    ],
    "9.1": [
        ("the d/k left out", _one(_estimator(scale=lambda d, k, f: 1.0))),
        ("scaled by 1/f instead of d/k", _one(_estimator(scale=lambda d, k, f: 1 / f))),
        ("floor(f d) draws", _one(_estimator(keep=lambda d, f: max(1, math.floor(f * d))))),
        ("one sample shared by the batch", _one(_estimator(shared=True))),
    ],
    "9.2": [
        ("s instead of s / sqrt(n)", _one(_z(stderr=lambda s, n: s))),
        ("ddof=0", _one(_z(ddof=0))),
        ("the sign reversed", _one(_z(sign=-1.0))),
    ],
    "9.3": [
        ("rows drawn independently", _one(_estimator(shared=False))),
        ("the d/k left out", _one(_estimator(shared=True, scale=lambda d, k, f: 1.0))),
        ("floor(f d) draws",
         _one(_estimator(shared=True, keep=lambda d, f: max(1, math.floor(f * d))))),
    ],
    "10.1": [
        ("the draw counts without d/k", _one(_sampling(scale=False))),
        ("d draws instead of k", _one(_sampling(draws=lambda d, k: d))),
        ("a repeated draw overwritten", _one(_sampling(add=False))),
        ("draws without replacement", _one(_sampling(replace=False))),
    ],
    "10.2": [
        ("+-1 entries without the 1/sqrt(k)", _one(_rademacher(divide=lambda k: 1.0))),
        ("R / k instead of R / sqrt(k)", _one(_rademacher(divide=lambda k: k))),
        ("R^T R instead of R R^T", _one(_rademacher(transpose=True))),
    ],
    "11.1": [
        ("each distinct subexpression counted once (the graph, not the tree)",
         _tree_size_slip("distinct")),
        ("only the leaves counted", _tree_size_slip("leaves")),
        ("sympy.count_ops (operations, not nodes)", _tree_size_slip("count_ops")),
        ("one short: the node itself not counted", _tree_size_slip("one short")),
    ],
    "12.1": [
        ("the product rule as a' b'", _dual_slip(
            "__mul__", lambda self, other: type(self)(
                self.value * self.lift(other).value, self.tangent * self.lift(other).tangent))),
        ("the quotient rule with a plus", _dual_slip(
            "__truediv__", lambda self, other: type(self)(
                self.value / self.lift(other).value,
                (self.tangent * self.lift(other).value + self.value * self.lift(other).tangent)
                / self.lift(other).value ** 2))),
        ("cos' = sin, the sign lost", _dual_slip(
            "cos", lambda self: type(self)(math.cos(self.value),
                                           math.sin(self.value) * self.tangent))),
        ("log' = y instead of 1/y", _dual_slip(
            "log", lambda self: type(self)(math.log(self.value), self.tangent * self.value))),
        ("__rsub__ as d - c", _dual_slip("__rsub__", lambda self, other: self - other)),
        ("no __rmul__: 2.0 * d fails",
         _dual_slip("__rmul__", lambda self, other: NotImplemented)),
    ],
    "12.2": [
        ("the gradient's values returned, not their tangents", _hvp_slip("gradient")),
        ("every input seeded with tangent 1", _hvp_slip("ones")),
        ("only the first input seeded", _hvp_slip("first")),
        ("a difference quotient of the gradient along v", _hvp_slip("difference")),
    ],
    "13.1": [
        ("the tanh's partial left out", _adjoint_slip("no tanh")),
        ("tanh' written as 1 - tanh", _adjoint_slip("tanh' = 1 - tanh")),
        ("the cotangent y_bar not applied", _adjoint_slip("no y_bar")),
        ("W_bar as outer(x, v2_bar), transposed", _adjoint_slip("transposed")),
        ("x_bar as v2_bar @ W.T", _adjoint_slip("x_bar by W")),
    ],
    "13.2": [
        ("the identity path x -> x' left out", _diagonal_slip("no identity")),
        ("x^3's derivative as x^2", _diagonal_slip("x^2")),
        ("d_c without the 0.01", _diagonal_slip("no 0.01")),
    ],
}


@dataclass(frozen=True)
class Entry:
    """One row of the catalogue: what the student did, and what the check answered."""

    number: str
    mistake: str
    status: str
    message: str

    @property
    def hint(self) -> str:
        """The hint part of the message (after ' -- '), or the message's last clause."""
        return self.message.split(" -- ", 1)[1] if " -- " in self.message else \
            self.message.split(": ", 1)[-1]


def catalogue(numbers=None) -> list[Entry]:
    """Run every planted mistake (of the exercises ``numbers``, default all) through its
    check; what each check said, in the order of :data:`MISTAKES`."""
    entries = []
    for number, mistakes in MISTAKES.items():
        if numbers is not None and number not in numbers:
            continue
        spec = EXERCISES[number]
        for mistake, answer in mistakes:
            # one planted mistake draws from numpy's global generator: start it from the
            # same state for every entry, so that the catalogue reads the same whatever ran
            # before it (and give the caller its state back)
            state = np.random.get_state()
            np.random.seed(0)  # noqa: NPY002
            try:
                with redirect_stdout(io.StringIO()):
                    spec.check(*answer())
                status, message = "passed", ""
            except CheckFailed as failure:
                status, message = failure.reason, str(failure)
            finally:
                np.random.set_state(state)  # noqa: NPY002
            entries.append(Entry(number, mistake, status, message))
    return entries
