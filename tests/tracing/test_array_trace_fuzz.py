"""A seeded fuzz of hostile array programs (issue 26): random compositions of the
operations the array tracer supports and of many it refuses, on arguments of odd
shapes and dtypes, with NaN and inf entries, object and masked arrays, huge declared
sizes and shapes that do not fit.  Nothing but ``ValueError`` or ``TypeError`` may
escape from tracing or from the reverse sweep, and a gradient that comes back must
be right: it is checked against central differences of the same program run on
plain arrays (where the program is smooth there, which two step sizes tell)."""

from collections import Counter

import numpy as np

import minirad
from minirad import ops, trace
from minirad.tracing.rules import softmax

N_CASES = 1000
SHAPES = [(), (3,), (2, 3), (3, 1), (1, 3), (4,), (0,)]


def _array(rng, shape, dtype=np.float64):
    return rng.uniform(-1.5, 1.5, shape).astype(dtype)


def hostile_value(rng):
    """A constant or an argument as a careless or hostile user might pass it."""
    shape = SHAPES[rng.integers(len(SHAPES) - 1)]
    pick = int(rng.integers(18))
    return [
        lambda: float(rng.uniform(-2, 2)), lambda: int(rng.integers(-3, 4)),
        lambda: _array(rng, shape), lambda: _array(rng, shape, np.float32),
        lambda: rng.integers(-2, 3, shape), lambda: rng.uniform(-1, 1, shape) > 0,
        lambda: np.full(shape, np.nan), lambda: np.array([1.0, np.inf, 0.5]),
        lambda: 10 ** 400, lambda: 1j, lambda: "abc", lambda: None,
        lambda: np.array([1.0, "a"], dtype=object), lambda: np.array([0.5, None], dtype=object),
        lambda: np.ma.masked_array(_array(rng, (3,)), mask=[0, 1, 0]),
        lambda: np.broadcast_to(1.0, (10 ** 6, 10 ** 6)), lambda: np.ones((1,) * 40),
        lambda: [[1.0, 2.0], [3.0]],
    ][pick]()


def operand(rng, constants: bool):
    """A value from the pool (an argument or an earlier result) or, with ``constants``,
    now and then a constant, often a hostile one.  An operation always has one operand
    from the pool: constants alone would be the user's own numpy code, not traced."""
    if not constants or rng.random() < 0.7:
        return ("pool", int(rng.integers(1 << 30)))
    return ("constant", hostile_value(rng) if rng.random() < 0.4 else _array(
        rng, SHAPES[rng.integers(6)]))


UNARY = [
    np.sin, np.cos, np.tanh, np.exp, np.log, np.sqrt, np.abs, np.arctan, np.log1p, np.tan,
    np.square, ops.relu, ops.sigmoid, ops.sin, lambda x: -x, lambda x: x ** 2,
    lambda x: x ** 3, lambda x: x ** 0.5, lambda x: 2.0 ** x, lambda x: x.sum(),
    lambda x: x.sum(axis=0), lambda x: x.mean(axis=-1, keepdims=True), lambda x: x.T,
    lambda x: x.ravel(), lambda x: x.reshape(-1, 1), lambda x: x.reshape(2, 2),
    lambda x: x[0], lambda x: x[..., ::-1], lambda x: x[None], lambda x: x.squeeze(),
    lambda x: x.clip(-0.5, 0.5), lambda x: np.maximum(x, 0.2), lambda x: np.minimum(x, 0.1),
    lambda x: np.where(x > 0, x, 0.1 * x), lambda x: softmax(x), lambda x: x.flatten(),
    lambda x: x.astype(np.float32), lambda x: x.astype(int), lambda x: x.copy(),
    lambda x: np.transpose(x), lambda x: x.swapaxes(0, -1), lambda x: x[x > 0],
    # refused ones, and hostile ones
    lambda x: x.max(), lambda x: np.cumsum(x), lambda x: x.item(), lambda x: np.sort(x),
    lambda x: float(x), lambda x: x.reshape(10 ** 10), lambda x: x.reshape((1,) * 40),
    lambda x: x[1.5], lambda x: x.sum(axis=7), lambda x: np.sin(x, out=np.zeros(3)),
    lambda x: np.add.reduce(x), lambda x: x.tolist(), lambda x: len(x) * x,
    lambda x: np.array([x, x]), lambda x: x if x else -x,
]
BINARY = [
    lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
    lambda a, b: a ** b, lambda a, b: a @ b, lambda a, b: np.maximum(a, b),
    lambda a, b: np.minimum(a, b), lambda a, b: np.concatenate([a, b]),
    lambda a, b: np.stack([a, b]), lambda a, b: np.where(a > 0.3, a, b),
    lambda a, b: np.dot(a, b), lambda a, b: np.matmul(a, b), lambda a, b: ops.maximum(a, b),
    lambda a, b: np.concatenate([a, b], axis=1), lambda a, b: a[b],
]


def random_case(rng):
    """Arguments, a straight-line program and a weighting of its last value."""
    n_args = int(rng.integers(1, 4))
    args = []
    for _ in range(n_args):
        if rng.random() < 0.15:
            args.append(hostile_value(rng))
        else:
            dtype = np.float32 if rng.random() < 0.15 else np.float64
            args.append(_array(rng, SHAPES[rng.integers(6)], dtype))
    if not any(isinstance(a, np.ndarray) for a in args):
        # an array program: numbers alone go to the tracer of numbers, where x.sum()
        # is an AttributeError as on a float
        args[0] = _array(rng, SHAPES[rng.integers(6)])
    steps = []
    for _ in range(int(rng.integers(1, 7))):
        if rng.random() < 0.5:
            steps.append(("unary", int(rng.integers(len(UNARY))), operand(rng, False)))
        else:
            first, second = operand(rng, False), operand(rng, True)
            huge = isinstance(second[1], np.ndarray) and second[1].size > 10 ** 6
            if rng.random() < 0.5 and not huge:  # a constant first, but not the huge one:
                first, second = second, first    # numpy's own work on it is not traced
            steps.append(("binary", int(rng.integers(len(BINARY))), first, second))
    weights = rng.standard_normal(16)

    def program(*xs):
        pool = list(xs)

        def pick(source):
            kind, what = source
            return pool[what % len(pool)] if kind == "pool" else what
        for step in steps:
            if step[0] == "unary":
                pool.append(UNARY[step[1]](pick(step[2])))
            else:
                pool.append(BINARY[step[1]](pick(step[2]), pick(step[3])))
        last = pool[-1]
        return (last * weights[:np.size(last)].reshape(np.shape(last))).sum()
    return args, program


def plain(program, args):
    with np.errstate(all="ignore"):
        return float(program(*args))


def central(program, args, h, sides=(1, -1)):
    """Central differences of the program on plain float64 arrays (with ``sides=(1, 0)``
    forward differences, with ``(0, -1)`` backward ones)."""
    columns = []
    for i, a in enumerate(args):
        for j in range(a.size):
            up, down = [x.copy() for x in args], [x.copy() for x in args]
            up[i].reshape(-1)[j] += sides[0] * h
            down[i].reshape(-1)[j] += sides[1] * h
            columns.append((plain(program, up) - plain(program, down)) /
                           ((sides[0] - sides[1]) * h))
    return np.array(columns)


def check_gradient(program, args, g) -> str:
    """'right', 'not smooth' (central differences disagree between step sizes, or
    differences forward and backward disagree: a kink or a branch within reach; a
    piecewise linear kink, np.where(x > 0, x, 0.1 * x) at 0, fools the first test) or
    'float32'; anything wrong fails the test."""
    row = minirad.jacobian(g)[0]
    assert np.all(np.isfinite(row))
    if any(a.dtype != np.float64 for a in args):
        return "float32"
    value = plain(program, args)
    assert np.isclose(float(g.value(g.outputs[0])), value, rtol=1e-6, atol=1e-9)
    coarse, fine = central(program, args, 1e-4), central(program, args, 1e-6)
    scale = 1.0 + np.abs(coarse)
    if not (np.all(np.isfinite(coarse)) and np.all(np.abs(coarse - fine) <= 1e-4 * scale)):
        return "not smooth"
    forward, backward = central(program, args, 1e-6, (1, 0)), central(program, args, 1e-6, (0, -1))
    if not np.all(np.abs(forward - backward) <= 1e-3 * scale):
        return "not smooth"
    assert np.all(np.abs(row - coarse) <= 1e-5 * scale), (row, coarse)
    return "right"


def test_hostile_array_programs_raise_only_value_and_type_errors_and_never_lie():
    rng = np.random.default_rng(2026)
    outcomes, escapes = Counter(), []
    for case in range(N_CASES):
        args, program = random_case(rng)
        try:
            g = trace(program, *args)
        except (ValueError, TypeError) as error:
            outcomes[f"refused ({type(error).__name__})"] += 1
            continue
        except Exception as error:  # noqa: BLE001 - an escape is what this test counts
            escapes.append((case, type(error).__name__, str(error)[:200]))
            continue
        try:
            numeric_args = [np.asarray(a, dtype=np.asarray(a).dtype if np.asarray(
                a).dtype.kind == "f" else np.float64) for a in args]
            outcomes[check_gradient(program, numeric_args, g)] += 1
        except (ValueError, TypeError) as error:
            outcomes[f"sweep refused ({type(error).__name__})"] += 1
        except AssertionError:
            raise
        except Exception as error:  # noqa: BLE001
            escapes.append((case, type(error).__name__, str(error)[:200]))
    print(dict(outcomes))
    assert not escapes, escapes
    # the fuzz exercised both halves: refusals and gradients checked against differences
    assert outcomes["right"] >= 120 and sum(
        n for k, n in outcomes.items() if k.startswith("refused")) >= 300
