"""Lab 7's exercises: a scalar tracer (7.1), pullbacks on tracked arrays (7.2, 7.3) and the
maybe-mutating add ``add!!`` (7.4).

Same contract as :mod:`minirad.labs.checking`.  Two oracles stand behind
every answer: minirad itself (:func:`minirad.trace` with a reverse sweep for
scalars, :func:`minirad.trace` of arrays with
:func:`minirad.exact.sweeps.vjp` for arrays) and central finite differences,
which know nothing of either.

The array checks do not look inside the student's tracked-array type: they
call a ``vjp(op, *arrays, wobble=...)`` helper (written in the lab on top of
that type) that tracks the arrays, runs ``op`` on them, seeds the result with
``wobble`` and returns the gradient of every input.

>>> import numpy as np
>>> from minirad import trace
>>> from minirad.exact.sweeps import vjp as block_vjp
>>> def vjp(op, *arrays, wobble):   # minirad standing in for a student's type
...     return block_vjp(trace(lambda *xs: op(*xs), *arrays), [wobble])
>>> check_pullbacks({"matmul": lambda X, Y: X @ Y}, vjp)
Exercise 7.2 passed: the pullback of matmul agrees with minirad and with finite differences \
on 3 cases
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from ..exact.sweeps import reverse_sweep
from ..exact.sweeps import vjp as block_vjp
from ..tracing import ops, trace
from .checking import (
    CheckFailed,
    as_numbers,
    call_student,
    location,
    one,
    passed,
)
from .exercise import exercise

__all__ = [
    "ARRAY_RULES", "MISTAKES", "check_add_bang", "check_matmul_pullback",
    "check_other_pullbacks", "check_pullbacks", "check_scalar_tracer",
]


#: what the exercises of this module ask the student to write, in minirad
TRACER_REFERENCE = ("minirad.tracing", "minirad.tracing.tracer", "minirad.tracing.tape",
                    "minirad.tracing.arrays", "minirad.exact.sweeps", "minirad.exact._engines",
                    "minirad.exact.jacobians")


def _num(x) -> str:
    return f"{float(x):.6g}"


# ------------------------------------------------------- the scalar tracer
# (name, program f(x, y, sin), point, hint when the answer equals a slip's answer)
def _scalar_cases():
    return [
        ("x * y at (2, 5)", lambda x, y, sin: x * y, (2.0, 5.0)),
        ("x + y at (2, 5)", lambda x, y, sin: x + y, (2.0, 5.0)),
        ("x - y at (2, 5)", lambda x, y, sin: x - y, (2.0, 5.0)),
        ("sin(x) at (0.5, 1)", lambda x, y, sin: sin(x), (0.5, 1.0)),
        ("x * x at (3, 1)", lambda x, y, sin: x * x, (3.0, 1.0)),
        ("x*y + sin(x) at (2, 5) (the lab seed's f)", lambda x, y, sin: x * y + sin(x),
         (2.0, 5.0)),
        ("y*y + sin(x) at (1, -2) (the lab seed's g)", lambda x, y, sin: y * y + sin(x),
         (1.0, -2.0)),
        ("(x + y) * (x - y) * sin(x * y) at (0.7, -1.3)",
         lambda x, y, sin: (x + y) * (x - y) * sin(x * y), (0.7, -1.3)),
        ("a = x*y; a*a - a*x + sin(a) at (1.1, 0.4)",
         lambda x, y, sin: (lambda a: a * a - a * x + sin(a))(x * y), (1.1, 0.4)),
    ]


def _scalar_hint(name: str, point, mine) -> str:
    x, y = point
    if name.startswith("x * y") and np.allclose(mine, [x, y]):
        return (" -- you swapped the partials of a product: d(a*b)/da is b, and d(a*b)/db "
                "is a")
    if name.startswith("x - y") and np.allclose(mine, [1.0, 1.0]):
        return " -- the partial of a - b with respect to b is -1"
    if name.startswith("sin") and np.allclose(mine, [math.sin(x), 0.0]):
        return " -- the partial of sin(a) is cos(a)"
    if name.startswith("x * x") and np.allclose(mine, [x, 0.0]):
        return (" -- x is used twice; each use adds its contribution to x's adjoint (+=), "
                "the second must not overwrite the first")
    return ""


@exercise("7.1", "a scalar tracer", takes=("gradient",), points=4, minutes=40, seconds=60,
          reference=TRACER_REFERENCE)
def check_scalar_tracer(gradient: Callable) -> None:
    """Exercise 7.1: ``gradient(f, x, y)`` differentiates ``f(x, y, sin)`` with your tracer.

    ``gradient`` wraps ``x`` and ``y`` as your tracked scalars, runs
    ``f(X, Y, sin)`` with your own ``sin`` (``f`` uses ``+``, ``-``, ``*``
    and ``sin`` only), walks your tape backwards from the result, and
    returns the two partials ``[df/dx, df/dy]``.  Compared on nine programs
    with minirad's :func:`~minirad.trace` and a reverse sweep, and with
    central differences; hints name a swapped product rule, a lost minus, a
    missing cosine and an overwritten adjoint.

    >>> from minirad import ops
    >>> from minirad.exact.sweeps import reverse_sweep
    >>> from minirad import trace
    >>> def gradient(f, x, y):
    ...     g = trace(lambda a, b: f(a, b, ops.sin), x, y)
    ...     return reverse_sweep(g).jacobian[0]
    >>> check_scalar_tracer(gradient)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 7.1 (scalar tracer), on x * y at (2, 5): used the \
reference -- your function called minirad's trace (minirad.tracing), ...
    """
    exercise, topic = "Exercise 7.1", "scalar tracer"
    cases = _scalar_cases()
    for name, f, point in cases:
        where = location(exercise, topic, name)
        result = call_student(gradient, where, f, *point)
        mine = as_numbers(result, where, "; return the list [df/dx, df/dy] of two "
                          "numbers").reshape(-1)
        if mine.shape != (2,):
            raise CheckFailed(f"{where}: your function returned {mine.size} numbers; return the "
                              f"two partials [df/dx, df/dy]")
        expected = reverse_sweep(trace(lambda a, b, f=f: f(a, b, ops.sin), *point)).jacobian[0]
        h = 1e-6
        fd = [(f(point[0] + h, point[1], math.sin) - f(point[0] - h, point[1], math.sin)) / (2 * h),
              (f(point[0], point[1] + h, math.sin) - f(point[0], point[1] - h, math.sin)) / (2 * h)]
        assert np.allclose(fd, expected, rtol=1e-6, atol=1e-6), name  # the two oracles agree
        if not np.allclose(mine, expected, rtol=1e-9, atol=1e-12):
            i = int(np.argmax(np.abs(mine - expected)))
            raise CheckFailed(f"{where}: your df/d{'xy'[i]} is {_num(mine[i])}, expected "
                              f"{_num(expected[i])} (finite differences: {_num(fd[i])})"
                              + _scalar_hint(name, point, mine))
    passed(exercise, f"your tracer agrees with minirad.trace and with finite differences on "
                     f"{len(cases)} programs")


# ---------------------------------------------------------- array pullbacks
def _concat(*xs):
    return np.concatenate(xs, axis=1)


#: the array rules of lab 7, as numpy programs minirad can trace
ARRAY_RULES: dict[str, Callable] = {
    "matmul": lambda X, Y: X @ Y,
    "sum": lambda x: x.sum(),
    "add": lambda X, Y: X + Y,
    "sub": lambda X, Y: X - Y,
    "abs2": lambda x: x * x,
    "sigmoid": ops.sigmoid,
    "hcat": lambda A, B, C: _concat(A, B, C),
}

# input shapes per rule: several cases, non-square so that a transposed rule shows
_SHAPES = {
    "matmul": [((2, 3), (3, 4)), ((1, 5), (5, 1)), ((4, 2), (2, 3))],
    "sum": [((2, 3),), ((5,),), ((3, 1),)],
    "add": [((2, 3), (2, 3)), ((4,), (4,))],
    "sub": [((2, 3), (2, 3)), ((4,), (4,))],
    "abs2": [((2, 3),), ((5,),)],
    "sigmoid": [((2, 3),), ((5,),)],
    "hcat": [((2, 1), (2, 3), (2, 2)), ((3, 2), (3, 1), (3, 1))],
}


def _fd_vjp(f, arrays, wobble, h=1e-6):
    """<wobble, f(arrays)> differentiated by central differences, entry by entry."""
    grads = []
    for i, a in enumerate(arrays):
        grad = np.zeros_like(a)
        for index in np.ndindex(a.shape):
            plus = [b.copy() for b in arrays]
            minus = [b.copy() for b in arrays]
            plus[i][index] += h
            minus[i][index] -= h
            grad[index] = (np.sum(wobble * f(*plus)) - np.sum(wobble * f(*minus))) / (2 * h)
        grads.append(grad)
    return grads


def _pullback_hint(rule: str, index: int, mine: np.ndarray, arrays, wobble) -> str:
    close = lambda a, b: a.shape == b.shape and np.allclose(a, b)  # noqa: E731
    if rule == "sub" and index == 1 and close(mine, wobble):
        return " -- the pullback of X - Y into Y is -wobble"
    if rule == "abs2" and close(mine, wobble * arrays[0]):
        return " -- d(x^2)/dx is 2x: the pullback is wobble * 2x"
    if rule == "sigmoid":
        s = 1 / (1 + np.exp(-arrays[0]))
        if close(mine, wobble * arrays[0] * (1 - arrays[0])):
            return (" -- sigma'(x) = sigma(x) (1 - sigma(x)): use the output sigma(x), not "
                    "the input x")
        if close(mine, wobble * s):
            return " -- that is wobble * sigma(x); the derivative is sigma(x) (1 - sigma(x))"
    if rule == "matmul":
        if mine.shape == arrays[index].shape[::-1] and mine.shape != arrays[index].shape:
            return (" -- your gradient is transposed: into X it is wobble @ Y^T, into Y it is "
                    "X^T @ wobble")
        if mine.shape != arrays[index].shape:
            return (" -- a pullback returns an array of its input's shape: into X it is "
                    "wobble @ Y^T, into Y it is X^T @ wobble")
    if rule == "sum" and mine.shape != arrays[0].shape:
        return (" -- the pullback of sum spreads the scalar wobble over an array of x's shape "
                "(wobble * ones)")
    if rule == "hcat" and mine.shape != arrays[index].shape:
        return (" -- each input gets back the columns of the wobble where it was placed, an "
                "array of its own shape")
    return ""


_MATMUL_SHAPES = (" -- the shapes do not fit: a pullback takes the wobble, shaped like Z = X @ Y "
                  "(n, l), back to its input's shape: into X (n, m) it is wobble @ Y^T, "
                  "(n, l)(l, m); into Y (m, l) it is X^T @ wobble, (m, n)(n, l)")


def check_pullbacks(rules: Mapping[str, Callable], vjp: Callable) -> None:
    """Exercises 7.2 and 7.3: pullbacks of tracked-array operations.

    ``rules`` maps names from :data:`ARRAY_RULES` (``matmul``, ``sum``,
    ``add``, ``sub``, ``abs2``, ``sigmoid``, ``hcat``) to the student's
    operations; ``vjp(op, *arrays, wobble=w)`` tracks the numpy arrays, runs
    ``op`` on them, seeds the result's gradient with ``w`` and returns the
    list of the inputs' gradients.  Each rule is run on two or three shape
    cases with seeded random inputs and wobbles; each gradient is compared
    with minirad's VJP (:func:`minirad.exact.sweeps.vjp` on
    :func:`minirad.trace`) and with central
    differences, and the message names the rule, the input and the shapes,
    with a hint for a transposed matmul rule, a missing minus, a missing 2,
    a sigmoid derivative taken at the input, a sum that does not spread.
    The exercise number is 7.2 when ``rules`` holds only ``matmul``, 7.3
    otherwise.
    """
    if not isinstance(rules, Mapping) or not rules:
        raise TypeError("rules must be a dict {name: your operation}, e.g. {'matmul': matmul}")
    unknown = set(rules) - set(ARRAY_RULES)
    if unknown:
        raise ValueError(f"unknown rule(s) {sorted(unknown)}; the rules are "
                         f"{list(ARRAY_RULES)}")
    exercise = "Exercise 7.2" if set(rules) == {"matmul"} else "Exercise 7.3"
    rng = np.random.default_rng(7)
    cases = 0
    for rule, op in rules.items():
        reference = ARRAY_RULES[rule]
        for shapes in _SHAPES[rule]:
            arrays = [rng.standard_normal(shape) for shape in shapes]
            value = reference(*arrays)
            wobble = rng.standard_normal(np.shape(value))
            where = location(exercise, f"pullback of {rule}",
                             " and ".join(f"an array of shape {s}" for s in shapes))
            try:
                result = call_student(vjp, where, op, *[a.copy() for a in arrays],
                                      wobble=wobble)
            except CheckFailed as failure:
                if rule == "matmul" and isinstance(failure.__cause__, ValueError):
                    raise CheckFailed(f"{failure}{_MATMUL_SHAPES}",
                                      reason=failure.reason) from failure.__cause__
                raise
            if not isinstance(result, (list, tuple)) or len(result) != len(arrays):
                raise CheckFailed(f"{where}: vjp returned {type(result).__name__}; it returns a "
                                  f"list with one gradient per input ({len(arrays)})")
            g = trace(lambda *xs, f=reference: f(*xs), *arrays)
            expected = block_vjp(g, [np.asarray(wobble)])
            fd = _fd_vjp(reference, arrays, wobble)
            for i, (got, want, check) in enumerate(zip(result, expected, fd)):
                assert np.allclose(want, check, rtol=1e-5, atol=1e-6), (rule, shapes)
                try:
                    mine = np.asarray(got, dtype=float)
                except (TypeError, ValueError):
                    raise CheckFailed(f"{where}: the gradient of input {i + 1} is "
                                      f"{type(got).__name__}, not an array of numbers") from None
                if mine.shape != np.shape(want) or not np.allclose(mine, want, rtol=1e-9,
                                                                    atol=1e-12):
                    what = (f"has shape {mine.shape}, expected {np.shape(want)}"
                            if mine.shape != np.shape(want) else
                            f"differs from minirad's by up to "
                            f"{_num(np.max(np.abs(mine - want)))} (largest entry "
                            f"{_num(np.max(np.abs(want)))})")
                    raise CheckFailed(f"{where}: the gradient of input {i + 1} {what}"
                                      + _pullback_hint(rule, i, mine, arrays, wobble))
            cases += 1
    names = ", ".join(rules)
    passed(exercise, f"the pullback{'s' if len(rules) > 1 else ''} of {names} "
                     f"agree{'' if len(rules) > 1 else 's'} with minirad and with finite "
                     f"differences on {cases} cases")


@exercise("7.2", "matmul pullback", takes=("matmul", "vjp"), points=2, minutes=15, seconds=30,
          reference=TRACER_REFERENCE)
def check_matmul_pullback(matmul: Callable, vjp: Callable) -> None:
    """Exercise 7.2: the pullbacks of your ``matmul``, run through your ``vjp``
    (see :func:`check_pullbacks`)."""
    check_pullbacks({"matmul": matmul}, vjp)


@exercise("7.3", "the other pullbacks", takes=("tsum", "add", "sub", "abs2", "tsigmoid", "hcat",
                                               "vjp"),
          points=4, minutes=30, seconds=60, reference=TRACER_REFERENCE)
def check_other_pullbacks(tsum: Callable, add: Callable, sub: Callable, abs2: Callable,
                          tsigmoid: Callable, hcat: Callable, vjp: Callable) -> None:
    """Exercise 7.3: the pullbacks of sum, +, -, abs2, sigmoid and hcat, run through your
    ``vjp`` (see :func:`check_pullbacks`)."""
    check_pullbacks({"sum": tsum, "add": add, "sub": sub, "abs2": abs2, "sigmoid": tsigmoid,
                     "hcat": hcat}, vjp)


# ------------------------------------------------------------ 7.4: add!!
EXERCISE = "Exercise 7.4"


def _cases():
    """(name, total, term, own, whether add!! should write into total)."""
    shared = np.arange(4.0) / 3                     # someone else's (a view, a seed, ...)
    return [
        ("your own float64 vector plus a vector", np.arange(4.0) / 3, np.full(4, 0.1), True,
         True),
        ("an array that is not yours (own=False)", shared, np.full(4, 0.1), False, False),
        ("a read-only array (np.broadcast_to of a seed)", np.broadcast_to(np.array(0.7), (3,)),
         np.arange(3.0), True, False),
        ("your own float32 vector plus a float64 vector (the sum is float64)",
         np.arange(3, dtype=np.float32) / 3, np.full(3, 0.1), True, False),
        ("your own (1, 3) row plus a (2, 3) matrix (the sum is (2, 3))",
         np.ones((1, 3)), np.arange(6.0).reshape(2, 3), True, False),
        ("your own 0-d array plus a 0-d array", np.array(0.25), np.array(1 / 3), True, True),
        ("two numbers (floats cannot be written into)", 0.25, 1 / 3, True, False),
    ]


def _as_result(result, where: str):
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{where}: return a pair (sum, own), not {type(result).__name__}")
    return result


@exercise("7.4", "add!!", takes=("add_bang",), points=3, minutes=25, seconds=60,
          reference=("minirad.exact.cotangents",))
def check_add_bang(add_bang) -> None:
    """Check ``add_bang(total, term, own) -> (sum, own)`` on seven cases."""
    cases = _cases()
    for name, total, term, own, writes in cases:
        where = location(EXERCISE, "add!!", name)
        before = np.array(total, copy=True)
        expected = total + term
        sum_, now_own = _as_result(call_student(add_bang, where, total, term, own), where)
        if np.shape(sum_) != np.shape(expected) or np.result_type(sum_) != np.result_type(
                expected):
            raise CheckFailed(f"{where}: your sum has shape {np.shape(sum_)} and dtype "
                              f"{np.result_type(sum_)}; total + term has shape "
                              f"{np.shape(expected)} and dtype {np.result_type(expected)}"
                              + (" -- a float32 buffer cannot hold a float64 sum: allocate"
                                 if np.result_type(sum_) == np.float32 else ""))
        if not np.array_equal(sum_, expected):
            raise CheckFailed(f"{where}: your sum {np.round(sum_, 6).tolist()} is not total + "
                              f"term = {np.round(expected, 6).tolist()}")
        if writes and sum_ is not total:
            raise CheckFailed(f"{where}: you returned a new array, but the accumulator was "
                              f"yours and can hold the sum: add the term into it "
                              f"(np.add(total, term, out=total)) and return it")
        if not writes and not np.array_equal(np.asarray(total), before):
            raise CheckFailed(f"{where}: you wrote into total, which must stay as it was: "
                              + ("it is not yours" if not own else
                                 "it cannot hold the sum") + "; allocate total + term instead")
        owned = isinstance(sum_, np.ndarray)
        if bool(now_own) != owned:
            raise CheckFailed(f"{where}: you said own={now_own!r}; the sum is "
                              + ("an array you made or wrote, so it is yours (own=True)"
                                 if owned else "a number, which has no buffer to write into "
                                               "later (own=False)"))
    passed(EXERCISE, f"add!! gives total + term bit for bit, writes only into arrays it owns "
                     f"and can hold the sum, on {len(cases)} cases")


# ------------------------------------------------------- planted mistakes
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


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "7.1": [
        (f"a tracer with a {slip}", one(_tracer(slip)))
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
        ("always a new array", one(_add_bang(writes="never"))),
        ("writing into an array that is not yours", one(_add_bang(writes="always"))),
        ("a new sum not marked as yours", one(_add_bang(new_owned=False))),
    ],
}
