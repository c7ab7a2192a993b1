"""Lab 7's exercises: a scalar tracer (7.1), pullbacks on tracked arrays (7.2, 7.3) and the
maybe-mutating add ``add!!`` (7.4).

Two oracles stand behind every answer: minirad itself (:func:`minirad.trace`
with a reverse sweep for scalars, :func:`minirad.trace` of arrays with
:func:`minirad.exact.sweeps.vjp` for arrays) and central finite differences,
which know nothing of either.  The programs of 7.1 travel as lists of
operations (:func:`program`), so that hidden cases can be random programs.

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
from .checking import CheckFailed, as_numbers, call_student, one, passed, type_name
from .exercise import exercise

__all__ = [
    "ARRAY_RULES", "MISTAKES", "check_add_bang", "check_matmul_pullback",
    "check_other_pullbacks", "check_pullbacks", "check_scalar_tracer", "program",
    "random_program", "written",
]

#: what the exercises of this module ask the student to write, in minirad
TRACER_REFERENCE = ("minirad.tracing.tracer", "minirad.tracing.rules",
                    "minirad.exact.sweeps", "minirad.exact._engines",
                    "minirad.exact.jacobians")


def _num(x) -> str:
    return f"{float(x):.6g}"


# ------------------------------------------------------- the scalar tracer
def program(steps) -> Callable:
    """The function ``f(x, y, sin)`` a list of steps describes: values 0 and 1 are ``x``
    and ``y``, each step ``[op, i]`` or ``[op, i, j]`` (``op`` one of ``add``, ``sub``,
    ``mul``, ``sin``) makes the next value from earlier ones (so a value may be used
    several times), and ``f`` returns the last.

    >>> f = program([["mul", 0, 1], ["sin", 2], ["add", 3, 0]])      # sin(x*y) + x
    >>> f(2.0, 3.0, math.sin) == math.sin(6.0) + 2.0
    True
    """
    steps = [tuple(step) for step in steps]

    def f(x, y, sin):
        values = [x, y]
        for op, *args in steps:
            a = values[args[0]]
            if op == "sin":
                values.append(sin(a))
            else:
                b = values[args[1]]
                values.append(a + b if op == "add" else a - b if op == "sub" else a * b)
        return values[-1]

    return f


_SCALAR_PROGRAMS = [  # (name, steps, point)
    ("x * y at (2, 5)", [["mul", 0, 1]], (2.0, 5.0)),
    ("x + y at (2, 5)", [["add", 0, 1]], (2.0, 5.0)),
    ("x - y at (2, 5)", [["sub", 0, 1]], (2.0, 5.0)),
    ("sin(x) at (0.5, 1)", [["sin", 0]], (0.5, 1.0)),
    ("x * x at (3, 1)", [["mul", 0, 0]], (3.0, 1.0)),
    ("x*y + sin(x) at (2, 5) (the lab seed's f)", [["mul", 0, 1], ["sin", 0], ["add", 2, 3]],
     (2.0, 5.0)),
    ("y*y + sin(x) at (1, -2) (the lab seed's g)", [["mul", 1, 1], ["sin", 0], ["add", 2, 3]],
     (1.0, -2.0)),
    ("(x + y) * (x - y) * sin(x * y) at (0.7, -1.3)",
     [["add", 0, 1], ["sub", 0, 1], ["mul", 2, 3], ["mul", 0, 1], ["sin", 5], ["mul", 4, 6]],
     (0.7, -1.3)),
    ("a = x*y; a*a - a*x + sin(a) at (1.1, 0.4)",
     [["mul", 0, 1], ["mul", 2, 2], ["mul", 2, 0], ["sub", 3, 4], ["sin", 2], ["add", 5, 6]],
     (1.1, 0.4)),
]


def written(steps) -> str:
    """A program's steps as a formula (values named x, y, a, b, ...).

    >>> written([["mul", 0, 1], ["sin", 2]])
    'a = x * y; b = sin(a)'
    """
    names, lines = ["x", "y"], []
    for index, (op, *args) in enumerate(steps):
        name = "abcdefghijklmnopqrstuvw"[index]
        operands = [names[i] for i in args]
        lines.append(f"{name} = " + (f"sin({operands[0]})" if op == "sin" else
                                     f" {dict(add='+', sub='-', mul='*')[op]} ".join(operands)))
        names.append(name)
    return "; ".join(lines)


def random_program(rng, size: int) -> list:
    """``size`` random steps of the kind :func:`program` runs."""
    steps = []
    for k in range(size):
        n = k + 2
        op = str(rng.choice(["add", "sub", "mul", "mul", "sin"]))
        # prefer the newest values, so that the output depends on most of the program
        first = n - 1 - int(rng.integers(0, min(n, 3)))
        steps.append([op, first] if op == "sin" else [op, first, int(rng.integers(0, n))])
    return steps


def _tracer_cases(rng) -> list[dict]:
    if rng is None:
        return [{"name": name, "steps": steps, "point": list(point)}
                for name, steps, point in _SCALAR_PROGRAMS]
    cases = []
    for name, steps, _ in _SCALAR_PROGRAMS[:5]:   # one operation each, at a new point
        point = np.round(rng.uniform(-2.5, 2.5, 2), 3).tolist()
        cases.append({"name": f"{name.split(' at ')[0]} at ({point[0]}, {point[1]})",
                      "steps": steps, "point": point})
    for size in (3, 5, 7, 9):
        steps = random_program(rng, size)
        point = np.round(rng.uniform(-2, 2, 2), 3).tolist()
        cases.append({"name": f"{written(steps)} at ({point[0]}, {point[1]})", "steps": steps,
                      "point": point})
    return cases


def _probe_tracer(fns, case, where):
    return call_student(fns[0], where, program(case["steps"]), *case["point"])


def _scalar_hint(steps, point, mine) -> str:
    x, y = point
    if steps == [["mul", 0, 1]] and np.allclose(mine, [x, y]):
        return (" -- you swapped the partials of a product: d(a*b)/da is b, and d(a*b)/db "
                "is a")
    if steps == [["sub", 0, 1]] and np.allclose(mine, [1.0, 1.0]):
        return " -- the partial of a - b with respect to b is -1"
    if steps == [["sin", 0]] and np.allclose(mine, [math.sin(x), 0.0]):
        return " -- the partial of sin(a) is cos(a)"
    if steps == [["mul", 0, 0]] and np.allclose(mine, [x, 0.0]):
        return (" -- x is used twice; each use adds its contribution to x's adjoint (+=), "
                "the second must not overwrite the first")
    return ""


@exercise("7.1", "a scalar tracer", takes=("gradient",), points=4, minutes=40, seconds=60,
          reference=TRACER_REFERENCE, topic="scalar tracer", cases=_tracer_cases,
          probe=_probe_tracer,
          passed="your tracer agrees with minirad.trace and with finite differences on {n} "
                 "programs")
def check_scalar_tracer(case, answer, where) -> None:
    """Exercise 7.1: ``gradient(f, x, y)`` differentiates ``f(x, y, sin)`` with your tracer.

    ``gradient`` wraps ``x`` and ``y`` as your tracked scalars, runs
    ``f(X, Y, sin)`` with your own ``sin`` (``f`` uses ``+``, ``-``, ``*``
    and ``sin`` only), walks your tape backwards from the result, and
    returns the two partials ``[df/dx, df/dy]``.  Compared with minirad's
    :func:`~minirad.trace` and a reverse sweep, and with central differences;
    hints name a swapped product rule, a lost minus, a missing cosine and an
    overwritten adjoint.

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
reference -- your function called minirad's trace (minirad.tracing.tracer), ...
    """
    f, point = program(case["steps"]), case["point"]
    mine = as_numbers(answer, where, "; return the list [df/dx, df/dy] of two "
                      "numbers").reshape(-1)
    if mine.shape != (2,):
        raise CheckFailed(f"{where}: your function returned {mine.size} numbers; return the "
                          f"two partials [df/dx, df/dy]")
    expected = reverse_sweep(trace(lambda a, b: f(a, b, ops.sin), *point)).jacobian[0]
    h = 1e-6
    fd = [(f(point[0] + h, point[1], math.sin) - f(point[0] - h, point[1], math.sin)) / (2 * h),
          (f(point[0], point[1] + h, math.sin) - f(point[0], point[1] - h, math.sin)) / (2 * h)]
    assert np.allclose(fd, expected, rtol=1e-5, atol=1e-5), where  # the two oracles agree
    if not np.allclose(mine, expected, rtol=1e-9, atol=1e-12):
        i = int(np.argmax(np.abs(mine - expected)))
        raise CheckFailed(f"{where}: your df/d{'xy'[i]} is {_num(mine[i])}, expected "
                          f"{_num(expected[i])} (finite differences: {_num(fd[i])})"
                          + _scalar_hint(case["steps"], point, mine))


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

#: the names the student's rules have in the lab, by rule
_TAKES = {"sum": "tsum", "add": "add", "sub": "sub", "abs2": "abs2", "sigmoid": "tsigmoid",
          "hcat": "hcat"}


def _random_shapes(rule: str, rng) -> list[tuple]:
    n, m, l = (int(x) for x in rng.integers(1, 5, 3))
    if rule == "matmul":
        return [((n, m + 1), (m + 1, l)), ((1, n + 1), (n + 1, 1)), ((l + 1, n), (n, m + 1))]
    if rule in ("sum", "abs2", "sigmoid"):
        return [((n, m + 1),), ((l + 2,),)] + ([((m + 1, 1),)] if rule == "sum" else [])
    if rule in ("add", "sub"):
        return [((n, m + 1), (n, m + 1)), ((l + 2,), (l + 2,))]
    widths = [int(x) for x in rng.integers(1, 4, 3)]
    return [tuple((n + 1, w) for w in widths), tuple((m + 1, w) for w in widths[::-1])]


def _pullback_cases(rules, rng) -> list[dict]:
    seeded = np.random.default_rng(7) if rng is None else rng
    cases = []
    for rule in rules:
        for shapes in (_SHAPES[rule] if rng is None else _random_shapes(rule, rng)):
            arrays = [seeded.standard_normal(shape) for shape in shapes]
            value = ARRAY_RULES[rule](*arrays)
            wobble = seeded.standard_normal(np.shape(value))
            cases.append({"name": " and ".join(f"an array of shape {s}" for s in shapes),
                          "rule": rule, "arrays": arrays, "wobble": np.asarray(wobble)})
    return cases


def _probe_pullback(rules: dict, vjp, case, where):
    arrays = [a.copy() for a in case["arrays"]]
    try:
        return call_student(vjp, where, rules[case["rule"]], *arrays, wobble=case["wobble"])
    except CheckFailed as failure:
        if case["rule"] == "matmul" and isinstance(failure.__cause__, ValueError):
            raise CheckFailed(f"{failure}{_MATMUL_SHAPES}",
                              reason=failure.reason) from failure.__cause__
        raise


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


def _judge_pullback(case, answer, where) -> None:
    rule, arrays, wobble = case["rule"], case["arrays"], case["wobble"]
    reference = ARRAY_RULES[rule]
    if not isinstance(answer, (list, tuple)) or len(answer) != len(arrays):
        raise CheckFailed(f"{where}: vjp returned {type_name(answer)}; it returns a "
                          f"list with one gradient per input ({len(arrays)})")
    g = trace(lambda *xs: reference(*xs), *arrays)
    expected = block_vjp(g, [np.asarray(wobble)])
    fd = _fd_vjp(reference, arrays, wobble)
    for i, (got, want, check) in enumerate(zip(answer, expected, fd)):
        assert np.allclose(want, check, rtol=1e-5, atol=1e-6), (rule, where)
        try:
            mine = np.asarray(got, dtype=float)
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: the gradient of input {i + 1} is "
                              f"{type_name(got)}, not an array of numbers") from None
        if mine.shape != np.shape(want) or not np.allclose(mine, want, rtol=1e-9, atol=1e-12):
            what = (f"has shape {mine.shape}, expected {np.shape(want)}"
                    if mine.shape != np.shape(want) else
                    f"differs from minirad's by up to "
                    f"{_num(np.max(np.abs(mine - want)))} (largest entry "
                    f"{_num(np.max(np.abs(want)))})")
            raise CheckFailed(f"{where}: the gradient of input {i + 1} {what}"
                              + _pullback_hint(rule, i, mine, arrays, wobble))


def _where(number: str, case: dict) -> str:
    return f"Exercise {number} (pullback of {case['rule']}), on {case['name']}"


def check_pullbacks(rules: Mapping[str, Callable], vjp: Callable) -> None:
    """Exercises 7.2 and 7.3: pullbacks of tracked-array operations.

    ``rules`` maps names from :data:`ARRAY_RULES` (``matmul``, ``sum``,
    ``add``, ``sub``, ``abs2``, ``sigmoid``, ``hcat``) to the student's
    operations; ``vjp(op, *arrays, wobble=w)`` tracks the numpy arrays, runs
    ``op`` on them, seeds the result's gradient with ``w`` and returns the
    list of the inputs' gradients.  Each rule is run on two or three shape
    cases with seeded random inputs and wobbles; each gradient is compared
    with minirad's VJP (:func:`minirad.exact.sweeps.vjp` on
    :func:`minirad.trace`) and with central differences, and the message
    names the rule, the input and the shapes, with a hint for a transposed
    matmul rule, a missing minus, a missing 2, a sigmoid derivative taken at
    the input, a sum that does not spread.  The exercise number is 7.2 when
    ``rules`` holds only ``matmul``, 7.3 otherwise.
    """
    if not isinstance(rules, Mapping) or not rules:
        raise TypeError("rules must be a dict {name: your operation}, e.g. {'matmul': matmul}")
    unknown = set(rules) - set(ARRAY_RULES)
    if unknown:
        raise ValueError(f"unknown rule(s) {sorted(unknown)}; the rules are "
                         f"{list(ARRAY_RULES)}")
    number = "7.2" if set(rules) == {"matmul"} else "7.3"
    cases = _pullback_cases(list(rules), None)
    for case in cases:
        where = _where(number, case)
        _judge_pullback(case, _probe_pullback(rules, vjp, case, where), where)
    names = ", ".join(rules)
    passed(f"Exercise {number}", f"the pullback{'s' if len(rules) > 1 else ''} of {names} "
                                 f"agree{'' if len(rules) > 1 else 's'} with minirad and with "
                                 f"finite differences on {len(cases)} cases")


@exercise("7.2", "matmul pullback", takes=("matmul", "vjp"), points=2, minutes=15, seconds=30,
          reference=TRACER_REFERENCE, topic="pullback of matmul",
          cases=lambda rng: _pullback_cases(["matmul"], rng),
          probe=lambda fns, case, where: _probe_pullback({"matmul": fns[0]}, fns[1], case, where),
          passed="the pullback of matmul agrees with minirad and with finite differences on "
                 "{n} cases")
def check_matmul_pullback(case, answer, where) -> None:
    """Exercise 7.2: the pullbacks of your ``matmul``, run through your ``vjp``
    (see :func:`check_pullbacks`)."""
    _judge_pullback(case, answer, where)


def _other_rules(fns) -> dict:
    return dict(zip(("sum", "add", "sub", "abs2", "sigmoid", "hcat"), fns[:6]))


@exercise("7.3", "the other pullbacks", takes=("tsum", "add", "sub", "abs2", "tsigmoid", "hcat",
                                               "vjp"),
          points=4, minutes=30, seconds=60, reference=TRACER_REFERENCE, topic="pullbacks",
          cases=lambda rng: _pullback_cases(["sum", "add", "sub", "abs2", "sigmoid", "hcat"],
                                            rng),
          probe=lambda fns, case, where: _probe_pullback(_other_rules(fns), fns[6], case,
                                                         where),
          passed="the pullbacks of sum, add, sub, abs2, sigmoid, hcat agree with minirad and "
                 "with finite differences on {n} cases")
def check_other_pullbacks(case, answer, where) -> None:
    """Exercise 7.3: the pullbacks of sum, +, -, abs2, sigmoid and hcat, run through your
    ``vjp`` (see :func:`check_pullbacks`)."""
    _judge_pullback(case, answer, where)


# ------------------------------------------------------------ 7.4: add!!
def _add_bang_cases(rng) -> list[dict]:
    """(name, total, term, own, whether add!! should write into total), the arrays as
    data: ``["array", values]``, ``["read-only", value, shape]`` (np.broadcast_to) or
    ``["number", value]``."""
    if rng is None:
        f64, f32 = np.arange(4.0) / 3, np.arange(3, dtype=np.float32) / 3
        chosen = [
            ("your own float64 vector plus a vector", ["array", f64], np.full(4, 0.1), True,
             True),
            ("an array that is not yours (own=False)", ["array", np.arange(4.0) / 3],
             np.full(4, 0.1), False, False),
            ("a read-only array (np.broadcast_to of a seed)", ["read-only", 0.7, [3]],
             np.arange(3.0), True, False),
            ("your own float32 vector plus a float64 vector (the sum is float64)",
             ["array", f32], np.full(3, 0.1), True, False),
            ("your own (1, 3) row plus a (2, 3) matrix (the sum is (2, 3))",
             ["array", np.ones((1, 3))], np.arange(6.0).reshape(2, 3), True, False),
            ("your own 0-d array plus a 0-d array", ["array", np.array(0.25)],
             np.array(1 / 3), True, True),
            ("two numbers (floats cannot be written into)", ["number", 0.25], 1 / 3, True,
             False),
        ]
    else:
        n, m = (int(x) for x in rng.integers(2, 6, 2))
        chosen = [
            (f"your own float64 vector of {n} plus a vector", ["array", rng.standard_normal(n)],
             rng.standard_normal(n), True, True),
            (f"an array of {n} that is not yours (own=False)",
             ["array", rng.standard_normal(n)], rng.standard_normal(n), False, False),
            (f"a read-only array of {m} (np.broadcast_to of a seed)",
             ["read-only", float(rng.standard_normal()), [m]], rng.standard_normal(m), True,
             False),
            ("your own float32 vector plus a float64 vector (the sum is float64)",
             ["array", rng.standard_normal(m).astype(np.float32)], rng.standard_normal(m),
             True, False),
            (f"your own (1, {n}) row plus a ({m}, {n}) matrix (the sum is ({m}, {n}))",
             ["array", rng.standard_normal((1, n))], rng.standard_normal((m, n)), True, False),
            ("your own 0-d array plus a 0-d array", ["array", np.array(rng.standard_normal())],
             np.array(rng.standard_normal()), True, True),
            ("two numbers (floats cannot be written into)",
             ["number", float(rng.standard_normal())], float(rng.standard_normal()), True,
             False),
        ]
    return [{"name": name, "total": total, "term": term, "own": own, "writes": writes}
            for name, total, term, own, writes in chosen]


def _total(spec):
    kind = spec[0]
    if kind == "array":
        return np.array(spec[1], copy=True)
    if kind == "read-only":
        return np.broadcast_to(np.array(spec[1]), tuple(spec[2]))
    return float(spec[1])


def _probe_add_bang(fns, case, where):
    total = _total(case["total"])
    before = np.array(total, copy=True)
    result = call_student(fns[0], where, total, case["term"], case["own"])
    if not (isinstance(result, tuple) and len(result) == 2):
        return {"pair": False, "returned": result}
    sum_, now_own = result
    return {"pair": True, "sum": sum_, "own": now_own, "is_total": sum_ is total,
            "changed": not np.array_equal(np.asarray(total), before)}


@exercise("7.4", "add!!", takes=("add_bang",), points=3, minutes=25, seconds=60,
          reference=("minirad.exact.cotangents",), cases=_add_bang_cases, probe=_probe_add_bang,
          passed="add!! gives total + term bit for bit, writes only into arrays it owns and "
                 "can hold the sum, on {n} cases")
def check_add_bang(case, answer, where) -> None:
    """Check ``add_bang(total, term, own) -> (sum, own)``: ``total + term``, written into
    ``total`` when ``own`` says the array is the caller's and it can hold the sum, else in
    a new array, which the caller then owns.  The oracle is numpy's ``total + term`` (the
    sum must be the same bits either way) and, for what may be mutated, the rule of
    :func:`minirad.exact.cotangents.add_bang`.

    >>> def add_bang(total, term, own):
    ...     can_hold = (isinstance(total, np.ndarray) and total.flags.writeable
    ...                 and np.result_type(total, term) == total.dtype
    ...                 and np.broadcast_shapes(total.shape, np.shape(term)) == total.shape)
    ...     if own and can_hold:
    ...         np.add(total, term, out=total)
    ...         return total, True
    ...     total = total + term
    ...     return total, isinstance(total, np.ndarray)
    >>> check_add_bang(add_bang)
    Exercise 7.4 passed: add!! gives total + term bit for bit, writes only into arrays it \
owns and can hold the sum, on 7 cases
    >>> check_add_bang(lambda total, term, own: (total + term, True))
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 7.4 (add!!), on your own float64 vector plus \
a vector: you returned a new array, but the accumulator was yours and can hold the sum: add \
the term into it (np.add(total, term, out=total)) and return it
    """
    own, writes = case["own"], case["writes"]
    expected = _total(case["total"]) + case["term"]
    if not (isinstance(answer, dict) and "pair" in answer):
        raise CheckFailed(f"{where}: the grader could not read your answer")
    if not answer["pair"]:
        raise CheckFailed(f"{where}: return a pair (sum, own), not "
                          f"{type_name(answer['returned'])}")
    sum_, now_own = answer["sum"], answer["own"]
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
    if writes and not answer["is_total"]:
        raise CheckFailed(f"{where}: you returned a new array, but the accumulator was "
                          f"yours and can hold the sum: add the term into it "
                          f"(np.add(total, term, out=total)) and return it")
    if not writes and answer["changed"]:
        raise CheckFailed(f"{where}: you wrote into total, which must stay as it was: "
                          + ("it is not yours" if not own else
                             "it cannot hold the sum") + "; allocate total + term instead")
    owned = isinstance(sum_, np.ndarray) and np.ndim(sum_) >= 0 and not isinstance(
        sum_, np.generic)
    if bool(now_own) != owned:
        raise CheckFailed(f"{where}: you said own={now_own!r:.40}; the sum is "
                          + ("an array you made or wrote, so it is yours (own=True)"
                             if owned else "a number, which has no buffer to write into "
                                           "later (own=False)"))


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
