"""Independent oracles and helpers shared by the tests of every folder: no oracle here
uses minirad's algorithms (Algorithm 1's enumeration reads only the draws per vertex
from minirad.randomized.sampling.draws_per_vertex, the way k is spelled).  At the end,
the programs that tests in several folders trace."""

import itertools
import math
import os
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import strategies as st
from scipy import stats

from minirad import LCG, examples, labs, ops, trace
from minirad.labs import notebook
from minirad.randomized.sampling import draws_per_vertex
from minirad.tracing import name
from minirad.tracing.ops import OPS, relu
from minirad.tracing.rules import softmax_cross_entropy

ROOT = Path(__file__).resolve().parents[1]


def dense_jacobian(g, partials=None) -> np.ndarray:
    """J = rows (outputs) and columns (inputs) of (I - L)^-1 with L[w, v] = dw/dv,
    by numpy's dense solver: no sweeps, no paths.  ``partials`` replaces g's."""
    n = g.n_vertices
    L = np.zeros((n, n))
    L[g.targets, g.sources] = g.partials if partials is None else partials
    T = np.linalg.solve(np.eye(n) - L, np.eye(n)[:, list(g.inputs)])
    return T[list(g.outputs), :]


def rational_jacobian(g, absolute: bool = False) -> np.ndarray:
    """The same sum over paths solved exactly in rationals (every float is one),
    rounded once at the end: an oracle that does not round on the way.

    With ``absolute`` the partials are replaced by their magnitudes, which
    bounds the size of every term in the path sum (the scale for rounding).
    """
    n = g.n_vertices
    L = [[Fraction(0)] * n for _ in range(n)]
    for u, v, d in g.edges():
        L[v][u] = Fraction(abs(d) if absolute else d)
    # rows of X = (I - L)^-1 E: unit lower triangular, so substitute in vertex order
    X = [[Fraction(int(v == x)) for x in g.inputs] for v in range(n)]
    for v in range(n):
        for u in range(v):
            if L[v][u]:
                X[v] = [a + L[v][u] * b for a, b in zip(X[v], X[u])]
    return np.array([[float(a) for a in X[y]] for y in g.outputs]).reshape(
        len(g.outputs), len(g.inputs))


def expect_failure(check, fn, *fragments) -> str:
    """Run a lab check on a planted wrong answer: it must fail, saying each fragment."""
    with pytest.raises(labs.CheckFailed) as caught:
        check(fn)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def algorithm1_outcomes(g, k) -> list[tuple[float, np.ndarray]]:
    """Every outcome of the literal Algorithm 1 (with skipping) as
    (probability, Jacobian estimate), by walking every sequence of draws; the
    draws of a vertex are ordered tuples, each equally likely.  Tiny graphs only."""
    draws = draws_per_vertex(g, k)
    order, ptr = g.out_edges_csr
    outcomes = []

    def walk(v, visited, counts, prob):
        if v == g.n_vertices:
            outcomes.append((prob, counts))
            return
        edges = order[ptr[v]:ptr[v + 1]]
        if not visited[v] or len(edges) == 0:
            walk(v + 1, visited, counts, prob)
            return
        d = len(edges)
        choices = [tuple(range(d))] if draws[v] == 0 else itertools.product(
            range(d), repeat=int(draws[v]))
        weight = 1.0 if draws[v] == 0 else d ** -float(draws[v])
        for seq in choices:
            c, seen = counts.copy(), visited.copy()
            for i in seq:
                c[edges[i]] += 1
                seen[g.targets[edges[i]]] = True
            walk(v + 1, seen, c, prob * weight)

    visited = np.zeros(g.n_vertices, dtype=bool)
    visited[list(g.inputs)] = True
    walk(0, visited, np.zeros(g.n_edges, dtype=np.int64), 1.0)
    degree = np.diff(ptr)[g.sources]
    per_draw = np.where(draws[g.sources] > 0, degree / np.maximum(draws[g.sources], 1), 1.0)
    return [(p, dense_jacobian(g, c * per_draw * g.partials)) for p, c in outcomes]


def as_law(estimates, probabilities=None, decimals=9) -> dict:
    """{rounded estimate: probability}, merging equal estimates (equally likely
    when no probabilities are given)."""
    if probabilities is None:
        probabilities = np.full(len(estimates), 1.0 / len(estimates))
    law = {}
    for p, x in zip(probabilities, estimates):
        key = tuple(np.round(np.ravel(x), decimals) + 0.0)  # + 0.0 folds -0.0 into 0.0
        law[key] = law.get(key, 0.0) + p
    return law


def chi_square_p(draws, law, decimals=9):
    """p-value of the chi-square goodness of fit of the sampled estimates to
    the exact law (cells with expected count < 5 pooled)."""
    keys = list(law)
    index = {key: i for i, key in enumerate(keys)}
    observed = np.zeros(len(keys))
    for J in draws:
        observed[index[tuple(np.round(J.ravel(), decimals))]] += 1  # KeyError: impossible value
    expected = np.array([law[key] for key in keys]) * len(draws)
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    statistic = ((observed - expected) ** 2 / expected).sum()
    return stats.chi2.sf(statistic, len(expected) - 1)


def random_dags(inputs, intermediates, outputs, density):
    """A hypothesis strategy: ``examples.random_dag`` graphs whose numbers of
    inputs, intermediates and outputs and whose density lie in the given
    (low, high) ranges, from any seed."""
    return st.builds(
        lambda ni, nm, no, d, seed: examples.random_dag(ni, nm, no, d, rng=seed),
        st.integers(*inputs), st.integers(*intermediates), st.integers(*outputs),
        st.floats(*density), st.integers(0, 2**32 - 1))


@st.composite
def random_lcgs(draw):
    """A hypothesis strategy: small random DAGs with any finite partials, values that
    are finite or unknown (NaN) and any op strings: what a file must carry exactly."""
    n_in, n_mid, n_out = draw(st.integers(1, 3)), draw(st.integers(0, 8)), draw(st.integers(1, 3))
    g = examples.random_dag(n_in, n_mid, n_out, draw(st.floats(0.1, 0.9)),
                            rng=draw(st.integers(0, 2**32 - 1)))
    finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
    partials = draw(st.lists(finite, min_size=g.n_edges, max_size=g.n_edges))
    values = draw(st.lists(st.one_of(finite, st.just(math.nan)),
                           min_size=g.n_vertices, max_size=g.n_vertices))
    ops = draw(st.lists(st.text(max_size=6), min_size=g.n_vertices, max_size=g.n_vertices))
    return LCG(g.names, g.sources, g.targets, partials, g.inputs, g.outputs, values, ops)


# Each lab runs once per test session in this process (its solutions, in-process: the
# checks' tests take the solution functions from it) and once in a grader's kernel (its
# solutions graded: tests/test_notebooks.py).  Under pytest-xdist every test of one lab
# carries the mark lab_group(stem), so that they share a worker and these caches.
_SOLVED: dict[str, tuple] = {}
_GRADED: dict[str, object] = {}


def lab_group(stem: str):
    """The mark that keeps a lab's tests on one xdist worker (``--dist loadgroup``)."""
    return pytest.mark.xdist_group(stem)


def solved_lab(stem: str, tmp_path_factory) -> notebook.RunResult:
    """The solutions notebook of tutorials/<stem>.py, run once per test session, in-process
    (what it printed is kept: :func:`solved_output`)."""
    if stem not in _SOLVED:
        import contextlib
        import io

        folder = tmp_path_factory.mktemp(f"{stem}_solutions")
        nb = notebook.to_notebook(ROOT / "tutorials" / f"{stem}.py", solutions=True)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = notebook.run_notebook(nb, cwd=folder,
                                           env={"MINIRAD_LAB_OUTPUT": folder / "pictures"})
        _SOLVED[stem] = (result, printed.getvalue(), folder)
    return _SOLVED[stem][0]


def solved_output(stem: str, tmp_path_factory) -> tuple[str, Path]:
    """What the in-process run of the lab's solutions printed, and its working folder."""
    solved_lab(stem, tmp_path_factory)
    return _SOLVED[stem][1], _SOLVED[stem][2]


def lab_solution(stem: str, name: str, tmp_path_factory):
    """The reference solution ``name`` of a lab, from its solved notebook."""
    result = solved_lab(stem, tmp_path_factory)
    assert result.ok, result
    return result.namespace[name]


def graded_lab(stem: str, tmp_path_factory):
    """The lab's solutions notebook graded by ``minirad lab grade`` (a sandboxed kernel),
    once per test session."""
    if stem not in _GRADED:
        import nbformat

        from minirad.labs.grading import grade

        folder = tmp_path_factory.mktemp(f"{stem}_graded")
        path = folder / f"{stem}.ipynb"
        nb = notebook.to_notebook(ROOT / "tutorials" / f"{stem}.py", solutions=True)
        path.write_text(nbformat.writes(nb))
        (_GRADED[stem],) = grade([path], folder / "scores", jobs=1,
                                 secret=b"the tests' own secret, 32 bytes.")
    return _GRADED[stem]


# ----------------------------------------------------- random array programs
# values live in a few shapes; every step maps earlier values to one of them
A_SHAPE, B_SHAPE = (2, 3), (3,)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_UNARY = {"tanh": np.tanh, "sigmoid": _sigmoid, "square": np.square,
          "exp": lambda x: np.exp(x * 0.5)}


@st.composite
def array_programs(draw, max_steps: int = 6, mixed=None):
    """(f, args): a random straight-line numpy program of matrices, vectors and, when
    ``mixed`` (drawn when None), a number as a third input.  The arguments are
    arrays (a number as a 0-d array), so central differences can nudge them;
    the functions run on minirad's traced arrays and on plain numpy alike."""
    mixed = draw(st.booleans()) if mixed is None else mixed
    shapes = [A_SHAPE, B_SHAPE] + ([()] if mixed else [])
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        n = len(shapes)
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(0, n - 1))
        si, sj = shapes[i], shapes[j]
        options = [("unary", draw(st.sampled_from(sorted(_UNARY))))]
        try:
            out = np.broadcast_shapes(si, sj)
            if out in (A_SHAPE, B_SHAPE, (2,), ()):
                options.append(("binary", draw(st.sampled_from(["+", "-", "*"]))))
        except ValueError:
            pass
        if si == A_SHAPE and sj == B_SHAPE:
            options.append(("matmul", "A@b"))
        if si == (2,) and sj == A_SHAPE:
            options.append(("matmul", "c@A"))
        if si == A_SHAPE:
            options += [("sum", 0), ("sum", 1), ("index", "row")]
        if si == B_SHAPE and sj == B_SHAPE:
            options.append(("stack", None))
        if si == B_SHAPE:
            options += [("index", "head"), ("total", None)]
        kind, arg = draw(st.sampled_from(options))
        if kind == "unary":
            shape = si
        elif kind == "binary":
            shape = np.broadcast_shapes(si, sj)
        elif kind == "matmul":
            shape = (2,) if arg == "A@b" else B_SHAPE
        elif kind == "sum":
            shape = B_SHAPE if arg == 0 else (2,)
        elif kind == "index":
            shape = B_SHAPE if arg == "row" else (2,)
        elif kind == "total":
            shape = ()
        else:
            shape = A_SHAPE
        steps.append((kind, arg, i, j))
        shapes.append(shape)
    n_out = draw(st.integers(1, 2))
    outputs = list(range(len(shapes) - n_out, len(shapes)))

    def f(*inputs):
        values = list(inputs)
        for kind, arg, i, j in steps:
            x, y = values[i], values[j]
            if kind == "unary":
                values.append(_UNARY[arg](x))
            elif kind == "binary":
                values.append(x + y if arg == "+" else x - y if arg == "-" else x * y)
            elif kind == "matmul":
                values.append(x @ y)
            elif kind == "sum":
                values.append(x.sum(axis=arg))
            elif kind == "index":
                values.append(x[1] if arg == "row" else x[:2])
            elif kind == "total":
                values.append(x.sum())
            else:
                values.append(np.stack([x, y]))
        return tuple(values[k] for k in outputs)

    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    args = [rng.uniform(-1, 1, A_SHAPE), rng.uniform(-1, 1, B_SHAPE)]
    if mixed:
        args.append(np.array(rng.uniform(0.5, 1.5)))
    return f, args


def close(a, b, rtol=1e-10):
    """a equals b to ``rtol`` relative to b's largest entry (at least 1)."""
    scale = max(1.0, float(np.abs(b).max(initial=0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


# ------------------------------------------------------- unbiasedness with power
# An unbiasedness test of n estimates of a Jacobian J makes two z-scores, each against
# Z_BOUND (a two-sided normal tail of 5.7e-7, by the CLT):
# * per entry, (mean - J) / its standard error: any entry's bias;
# * the projection T = <estimate, J> / <J, J> over the entries the estimator makes random
#   (those with positive variance; the others are checked to equal J), whose mean is 1
#   and becomes 1 + b when the estimate is scaled by 1 + b; its variance is
#   J' C J / <J, J>^2 (C: the covariance of the estimate).
# So a test over m entries fails by chance with probability below (m + 1) x 5.7e-7.  The
# number of estimates comes from the exact covariance (draws_for_power): enough that a
# BIAS = 5% scaling moves the projection's z by POWER_SHIFT = 10, which then stays within
# Z_BOUND with probability Phi(5 - 10) = 2.9e-7: the biased test fails with probability
# above 1 - 3e-7 (assert_power runs it on the estimates scaled by 1.05).  Without an
# exact covariance the standard errors are the sample ones (t-statistics of many draws).
Z_BOUND = 5.0
BIAS = 0.05
POWER_SHIFT = 10.0
MIN_DRAWS = 2000   # below this the normal approximation of a mean is not trusted


def _random(estimates, exact, covariance) -> np.ndarray:
    """The entries the estimator makes random (positive variance, beyond rounding)."""
    j = np.ravel(exact)
    variance = np.diag(covariance) if covariance is not None else estimates.var(axis=0)
    return variance > 1e-24 * np.maximum(j ** 2, 1.0)


def _projection_sd(exact, covariance) -> float:
    covariance = np.asarray(covariance)
    random = np.diag(covariance) > 1e-24 * np.maximum(np.ravel(exact) ** 2, 1.0)
    j = np.ravel(exact)[random]
    return float(np.sqrt(max(j @ covariance[np.ix_(random, random)] @ j, 0.0)) / (j @ j))


def draws_for_power(exact, covariance, bias: float = BIAS, shift: float = POWER_SHIFT) -> int:
    """The number of estimates at which a relative bias ``bias`` moves the z-score of
    the projection T by ``shift`` (``covariance``: the estimate's, entries x entries),
    and at least :data:`MIN_DRAWS`."""
    return max(MIN_DRAWS, int(np.ceil((shift * _projection_sd(exact, covariance) / bias) ** 2)))


def z_scores(estimates, exact, covariance=None) -> tuple[np.ndarray, float]:
    """The per-entry z-scores and the projection's, over the entries that vary."""
    estimates = np.asarray(estimates, dtype=np.float64).reshape(len(estimates), -1)
    n, j = len(estimates), np.ravel(exact)
    random = _random(estimates, exact, covariance)
    mean, jr = estimates.mean(axis=0), j[random]
    if covariance is None:
        variance = estimates.var(axis=0, ddof=1)
        projection_var = (estimates[:, random] @ jr / (jr @ jr)).var(ddof=1)
    else:
        variance = np.diag(covariance)
        projection_var = _projection_sd(exact, covariance) ** 2
    entries = (mean[random] - jr) / np.sqrt(variance[random] / n)
    T = (mean[random] @ jr) / (jr @ jr)
    return entries, (T - 1.0) / np.sqrt(projection_var / n)


def assert_unbiased(estimates, exact, covariance=None, bound: float = Z_BOUND) -> None:
    """Both z-scores within ``bound``; entries that never vary equal J up to rounding."""
    entries, projection = z_scores(estimates, exact, covariance)
    assert np.all(np.abs(entries) < bound), f"max entry |z| = {np.abs(entries).max():.2f}"
    assert abs(projection) < bound, f"projection z = {projection:.2f}"
    estimates = np.asarray(estimates, dtype=np.float64).reshape(len(estimates), -1)
    fixed = ~_random(estimates, exact, covariance)
    np.testing.assert_allclose(estimates[:, fixed].mean(axis=0), np.ravel(exact)[fixed],
                               rtol=1e-9, atol=1e-9)


def assert_power(estimates, exact, covariance=None, bias: float = BIAS) -> None:
    """The projection's z-test fails on the estimates scaled by 1 + ``bias`` (a biased
    estimator); with an exact covariance, given the draws :func:`draws_for_power` asks."""
    if covariance is not None:
        assert len(estimates) >= draws_for_power(exact, covariance, bias)
    _, projection = z_scores((1.0 + bias) * np.asarray(estimates), exact, covariance)
    assert abs(projection) >= Z_BOUND, f"a {bias:.0%} bias went unnoticed: z = {projection:.2f}"


def central_differences(f, args, h=1e-6):
    """Jacobian of f (arrays -> array or tuple of arrays) by central differences."""
    def flat_out(xs):
        out = f(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        return np.concatenate([np.ravel(o) for o in outs])
    columns = []
    for i, a in enumerate(args):
        for j in range(a.size):
            plus = [x.copy() for x in args]
            minus = [x.copy() for x in args]
            plus[i].reshape(-1)[j] += h
            minus[i].reshape(-1)[j] -= h
            columns.append((flat_out(plus) - flat_out(minus)) / (2 * h))
    return np.stack(columns, axis=1)


# ---------------------------------------------- random programs of the whole op table
# every function of the table, as minirad.ops and as numpy spells it
TABLE_UNARY = tuple(name for name, op in OPS.items() if op.arity == 1 and hasattr(ops, name))
# numpy runs these on an object it does not know by calling its method of the same name
# (floor, trunc, sign and reciprocal call math.floor, <, 1 / x instead)
TABLE_NUMPY_UNARY = tuple(op.ufunc for op in OPS.values() if op.arity == 1
                          and op.ufunc == op.name
                          and op.name not in ("positive", "sign", "floor", "ceil", "trunc",
                                              "reciprocal"))
TABLE_BINARY = tuple(name for name, op in OPS.items() if op.arity == 2 and hasattr(ops, name))

# six ways to combine two pool values u, w and a constant c, per kind of step (L: the
# namespace of minirad.ops's functions, swapped for JAX's by the tests that compare with it)
TABLE_STEPS = {
    "binary": (lambda u, w, c, L: u + w, lambda u, w, c, L: u - w, lambda u, w, c, L: u * w,
               lambda u, w, c, L: u / w, lambda u, w, c, L: L.maximum(u, w),
               lambda u, w, c, L: L.minimum(u, w)),
    "constant": (lambda u, w, c, L: u + c, lambda u, w, c, L: c + u, lambda u, w, c, L: u - c,
                 lambda u, w, c, L: c - u, lambda u, w, c, L: u * c, lambda u, w, c, L: c * u),
    # numpy and integer constants, division by and of a constant, maximum with one
    "other constant": (lambda u, w, c, L: np.float64(c) * u, lambda u, w, c, L: u * 2,
                       lambda u, w, c, L: 3 - u, lambda u, w, c, L: u + np.float64(c),
                       lambda u, w, c, L: c / u, lambda u, w, c, L: L.maximum(u, c)),
    "sign": (lambda u, w, c, L: -u, lambda u, w, c, L: abs(u), lambda u, w, c, L: +u * 1.0,
             lambda u, w, c, L: -(u - w), lambda u, w, c, L: abs(u - c),
             lambda u, w, c, L: L.relu(-u)),
    "twice": (lambda u, w, c, L: u + u, lambda u, w, c, L: u - u, lambda u, w, c, L: u * u,
              lambda u, w, c, L: u / u, lambda u, w, c, L: L.maximum(u, u),
              lambda u, w, c, L: u ** u),
    "pow": (lambda u, w, c, L: u ** 2, lambda u, w, c, L: u ** 2.0, lambda u, w, c, L: u ** 3,
            lambda u, w, c, L: u ** c, lambda u, w, c, L: 2.0 ** u,
            lambda u, w, c, L: abs(u) ** w),
}


def random_table_program(rng, steps):
    """A straight-line program of ``steps`` random operations on (a, b, x[0], x[1]) that
    uses every operation of minirad's table in every spelling (operators both ways
    round, Python and numpy constants, an operand twice, minirad.ops functions, numpy
    ufuncs, abs and unary minus), as a function that runs on the tracer's scalars and
    on Refs alike.  Its attribute ``using(L, N)`` is the same program with minirad.ops
    and numpy replaced by the namespaces L and N (JAX's, say)."""
    plan = []
    for _ in range(steps):
        kind = str(rng.choice([*TABLE_STEPS, "unary", "numpy", "binary table"]))
        plan.append((kind, rng.integers(1 << 30), rng.integers(1 << 30),
                     rng.integers(len(TABLE_UNARY) * len(TABLE_NUMPY_UNARY)), rng.integers(6),
                     float(rng.uniform(-2, 2))))

    def using(L, N):
        def program(a, b, x):
            pool = [a, b, x[0], x[1]]
            for kind, i, j, k, which, c in plan:
                u, w = pool[i % len(pool)], pool[j % len(pool)]
                c = round(c, 2) or 0.5  # a few distinct constants, so templates repeat
                if kind == "unary":
                    pool.append(getattr(L, TABLE_UNARY[k % len(TABLE_UNARY)])(u))
                elif kind == "numpy":
                    pool.append(getattr(N, TABLE_NUMPY_UNARY[k % len(TABLE_NUMPY_UNARY)])(u))
                elif kind == "binary table":
                    pool.append(getattr(L, TABLE_BINARY[k % len(TABLE_BINARY)])(u, w))
                else:
                    pool.append(TABLE_STEPS[kind][which](u, w, c, L))
            # outputs: some intermediates, an input, a value twice, a constant
            picks = [pool[-1], pool[len(pool) // 2], pool[-1], pool[1], 2.5, pool[-3]]
            return tuple(picks[: 1 + int(plan[0][1] % len(picks))])

        return program

    program = using(ops, np)
    program.using = using
    return program


# ------------------------------------------- programs the tests of several folders share
def paper_mlp(batch=150, dtype=np.float32, rng=0):
    rng = np.random.default_rng(rng)
    sizes = [784, 300, 300, 300, 10]
    X = rng.standard_normal((batch, 784)).astype(dtype)
    labels = rng.integers(0, 10, batch)
    params = []
    for a, b in zip(sizes, sizes[1:]):
        params += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(dtype), np.zeros(b, dtype)]

    def mlp(W1, b1, W2, b2, W3, b3, W4, b4):
        h = X
        for i, (W, b) in enumerate([(W1, b1), (W2, b2), (W3, b3), (W4, b4)]):
            h = name(h @ W + b, f"h{i + 1}")
            if i < 3:
                h = name(relu(h), f"a{i + 1}")
        return softmax_cross_entropy(h, labels)
    return mlp, params


def small_mlp(batch=4, sizes=(3, 5, 2), seed=0):
    """A two-layer ReLU network's loss as an array graph, in float64."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((batch, sizes[0]))
    weights = [rng.standard_normal((a, b)) / np.sqrt(a) for a, b in zip(sizes, sizes[1:])]

    def loss(W1, W2):
        return (relu(X @ W1) @ W2).sum()

    return trace(loss, *weights), X, weights


def broom(n: int) -> LCG:
    """x enters a chain c1 -> ... -> cn at every vertex, and cn leads to y: n paths, the
    one entering at ci of n - i + 2 edges, so Bauer's formula multiplies
    sum_i (n - i + 1) = n (n + 1) / 2 times along them (counted by hand)."""
    names = ["x"] + [f"c{i}" for i in range(1, n + 1)] + ["y"]
    sources = [0] * n + list(range(1, n)) + [n]
    targets = list(range(1, n + 1)) + list(range(2, n + 1)) + [n + 1]
    return LCG(names, sources, targets, np.ones(len(sources)), [0], [n + 1])


def fake_zip64(path, members: int):
    """A zip file whose end records (zip64) declare ``members`` entries, their directory
    never written: zipfile would try to read all of them."""
    directory_size, directory_offset = 100 * members, 4
    record = (b"PK\x06\x06" + struct.pack("<QHHIIQQQQ", 44, 45, 45, 0, 0, members, members,
                                          directory_size, directory_offset))
    record_offset = 4
    locator = b"PK\x06\x07" + struct.pack("<IQI", 0, record_offset, 1)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                                      0xFFFFFFFF, 0)
    path.write_bytes(b"PK\x03\x04" + record + locator + end)
    return path


def not_a_regular_file(path, target: str) -> None:
    """Put at ``path`` what a loader must refuse unopened: a ``"fifo"``, a ``"folder"``, or
    a link to the device ``target`` (``/dev/zero``; skipped where it does not exist)."""
    if target.startswith("/dev/") and not os.path.exists(target):
        pytest.skip(f"{target} does not exist here")
    if target == "fifo":
        os.mkfifo(path)
    elif target == "folder":
        path.mkdir()
    else:
        path.symlink_to(target)
