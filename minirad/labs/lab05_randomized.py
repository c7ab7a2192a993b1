"""Lab 5's exercises: Algorithm 1 (5.1), its exact variance for k = 1 (5.2), and the exact
variance of two-level sampling on a graph of arrays (5.3).

>>> from minirad import examples
>>> from minirad.labs import edge_dict, sample_jacobian
>>> g = examples.lab()
>>> sample_jacobian(g, edge_dict(g)).round(6).tolist()
[[2.583853, 2.0]]
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from ..graph.lcg import LCG
from ..randomized.sampling import path_sampling_variance
from ..tracing import trace
from .checking import (
    CheckFailed,
    as_float,
    build_graph,
    call_student,
    compare_jacobian,
    one,
    time_limit,
    type_name,
)
from .exercise import exercise
from .lab02_lcg import on_graph, random_graphs
from .lab04_elimination import EdgeTable, edge_dict

__all__ = ["MISTAKES", "Z_LIMIT", "check_sample_Q", "check_two_level_variance",
           "check_variance_k1", "fan_graph", "planted_variances", "two_level_slips"]

#: an entry of the mean may differ from the exact Jacobian by this many standard errors
Z_LIMIT = 5.0
#: samples per case for the statistical tests, and seconds the student's function may take
#: for all of them
SAMPLES, SECONDS = 2000, 60.0


def _num(x) -> str:
    return f"{float(x):.10g}"


# --------------------------------------------------------------- lab 5: 5.1
_SAMPLING_GRAPHS = [  # (name, graph, k)
    ("figure1()", ["figure1", [], {}], 1),
    ("figure1()", ["figure1", [], {}], 2),
    ("interleaved(3, 3, partials='random', rng=0)",
     ["interleaved", [3, 3], {"partials": "random", "rng": 0}], 2),
    ("independent_paths(4, 3, partials='random', rng=1)",
     ["independent_paths", [4, 3], {"partials": "random", "rng": 1}], 2),
    ("random_dag(2, 8, 2, density=0.4, rng=3)",
     ["random_dag", [2, 8, 2], {"density": 0.4, "rng": 3}], 1),
]


def _sampling_cases(rng) -> list[dict]:
    """Each case: a graph, k, two seeds the student's function must reproduce with, and the
    seed of the generator the statistical tests draw from."""
    if rng is None:
        return [{"name": f"{name} with k={k}", "graph": spec, "k": k, "seeds": [123, 456],
                 "seed": 2021} for name, spec, k in _SAMPLING_GRAPHS]
    graphs = random_graphs(rng)
    s = [int(x) for x in rng.integers(2 ** 31, size=3)]
    width, depth = int(rng.integers(3, 5)), int(rng.integers(2, 4))
    chosen = [(*graphs[0], 1), (*graphs[0], int(rng.integers(2, 4))),
              (f"interleaved(3, {depth}, partials='random', rng={s[0]})",
               ["interleaved", [3, depth], {"partials": "random", "rng": s[0]}], 2),
              (f"independent_paths({width}, 3, partials='random', rng={s[1]})",
               ["independent_paths", [width, 3], {"partials": "random", "rng": s[1]}], 2),
              (f"random_dag(2, 8, 2, density=0.4, rng={s[2]})",
               ["random_dag", [2, 8, 2], {"density": 0.4, "rng": s[2]}], 1)]
    return [{"name": f"{name} with k={k}", "graph": spec, "k": k,
             "seeds": [int(x) for x in rng.integers(10 ** 6, size=2)],
             "seed": int(rng.integers(10 ** 6))} for name, spec, k in chosen]


def _snapshot(raw):
    """The student's sample as it is now (a function that refills one dict and returns it
    again would otherwise hand every sample the last one's edges)."""
    return dict(raw) if isinstance(raw, dict) else raw


def _probe_sampling(fns, case, where):
    fn, g, k = fns[0], build_graph(case["graph"]), case["k"]
    repeat = {seed: [_snapshot(call_student(fn, where, g, k, np.random.default_rng(seed),
                                            seconds=SECONDS)) for _ in range(2)]
              for seed in case["seeds"]}
    rng = np.random.default_rng(case["seed"])
    samples = []
    with time_limit(SECONDS, where, " for all the samples of this case; is your function "
                                    "much slower than it needs to be?"):
        for _ in range(SAMPLES):
            samples.append(_snapshot(call_student(fn, where, g, k, rng)))
    return {"repeat": repeat, "samples": samples}


def _as_sample(result, table: EdgeTable, where: str) -> dict[tuple[int, int], float]:
    """The student's Q as {(u, v) numbers: weight}, after checking its form."""
    if not isinstance(result, Mapping):
        raise CheckFailed(f"{where}: your function returned {type_name(result)}; return a "
                          f"dict {{(u_name, v_name): weight}} of the sampled edges")
    Q = {}
    for key, value in result.items():
        edge = table.edges.get(key) if isinstance(key, tuple) else None
        if edge is None:
            if not (isinstance(key, tuple) and len(key) == 2
                    and all(isinstance(x, str) for x in key)):
                hint = " (g.names[v] turns a number into its name)" if isinstance(
                    key, tuple) and any(isinstance(x, (int, np.integer)) for x in key) else ""
                raise CheckFailed(f"{where}: your dict has the key {key!r}; keys are pairs of "
                                  f"vertex names such as ('x1', 'v2'){hint}")
            raise CheckFailed(f"{where}: your dict has an entry for {key[0]} -> {key[1]}, which "
                              f"is not an edge of the graph; Q holds only edges of g")
        try:
            weight = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"{where}: your dict maps {key} to {value!r}, which is not a "
                              f"number") from None
        if not math.isfinite(weight):
            raise CheckFailed(f"{where}: the weight of {key[0]} -> {key[1]} is {weight}")
        Q[edge[0], edge[1]] = (weight, edge[2])
    return Q


def _draw_counts(Q: dict, table: EdgeTable, k: int, where: str) -> dict[int, dict[int, int]]:
    """Check the form of one sample and return each visited vertex's draw counts.

    The rules: only edges out of visited vertices (inputs, or vertices an
    edge of Q enters); each weight is m * (d_u / k) * partial with m >= 1 an
    integer; the m of a visited vertex add up to k.
    """
    names = table.g.names
    visited = set(table.inputs) | {v for _, v in Q}
    draws: dict[int, dict[int, int]] = {}
    for (u, v), (weight, partial) in sorted(Q.items()):
        if u not in visited:
            raise CheckFailed(f"{where}: Q has the edge {names[u]} -> {names[v]}, but no sampled "
                              f"edge enters {names[u]} and it is not an input; Algorithm 1 skips "
                              f"such vertices (they store nothing)")
        d = table.out_degree[u]
        unit = d / k * partial
        if weight == 0 and unit != 0:
            raise CheckFailed(f"{where}: Q({names[u]}, {names[v]}) = 0; Q holds only the edges "
                              f"drawn at least once, so leave the others out")
        m = weight / unit if unit != 0 else 0.0
        if unit == 0 or m < 0.5 or abs(m - round(m)) > 1e-9 * max(1.0, m):
            raise CheckFailed(f"{where}: Q({names[u]}, {names[v]}) = {_num(weight)}, but a drawn "
                              f"edge carries (number of draws) x d/k x partial, a multiple of "
                              f"{d}/{k} x {_num(partial)} = {_num(unit)} ({names[u]} has "
                              f"out-degree d = {d}, k = {k})")
        draws.setdefault(u, {})[v] = int(round(m))
    for u in sorted(visited):
        if table.out_degree[u] == 0:
            continue
        total = sum(draws.get(u, {}).values())
        if total != k:
            hint = ""
            if total < k:
                hint = (" -- if an edge is drawn twice, its weights must ADD up "
                        "(Q[edge] += ...), not overwrite each other (=)")
            raise CheckFailed(f"{where}: {names[u]} is visited, and its edges in Q add up to "
                              f"{total} draw(s) of weight d/k x partial; a visited vertex draws "
                              f"exactly k = {k} times (with replacement){hint}")
    return draws


@exercise("5.1", "Algorithm 1", takes=("sample_Q",), points=4, minutes=35, seconds=150,
          reference=("minirad.randomized.sampling", "minirad.randomized._batches",
                     "minirad.randomized.experiments"),
          cases=_sampling_cases, probe=_probe_sampling,
          passed="Algorithm 1 well formed, reproducible and unbiased on {n} cases")
def check_sample_Q(case, answer, where) -> None:
    """Exercise 5.1: ``fn(g, k, rng)`` runs Algorithm 1 once and returns the sampled edges.

    The result is a dict ``{(u_name, v_name): weight}`` holding only the
    edges drawn at least once, where ``weight`` is (times drawn) x
    ``d_u / k`` x the edge's partial ``dv/du``.  ``rng`` is a
    ``numpy.random.Generator``; every random number must come from it.

    The check, on five (graph, k) cases:

    1. form: only edges out of visited vertices, weights that are whole
       multiples of ``d_u / k * partial``, exactly ``k`` draws per visited
       vertex with successors;
    2. reproducibility: two calls with a generator seeded the same (123, then
       456 in the published cases) return the same dict;
    3. unbiasedness: over 2000 samples drawn with one generator (seeded 2021),
       every Jacobian entry of the mean is within ``Z_LIMIT = 5`` standard
       errors of the exact Jacobian (the standard error from minirad's exact
       variance of Algorithm 1, so a correct sampler fails with probability
       below one in a million);
    4. draws with replacement: for ``k >= 2`` the same edge is drawn twice
       about as often as uniform draws with replacement make it happen
       (between 0.6 and 1.4 times the expected number of repeats).

    >>> from minirad.randomized.sampling import sample_paths
    >>> def sample_Q(g, k, rng):
    ...     s = sample_paths(g, k, rng=rng)
    ...     return {(g.names[u], g.names[v]): w for u, v, w in s.graph.edges()}
    >>> check_sample_Q(sample_Q)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 5.1 (Algorithm 1), on figure1() with k=1: used \
the reference -- your function called minirad's sample_paths ...
    """
    g, k = build_graph(case["graph"]), case["k"]
    table = EdgeTable(g)
    if not (isinstance(answer, dict) and set(answer) == {"repeat", "samples"}):
        raise CheckFailed(f"{where}: the grader could not read your samples")
    for seed in case["seeds"]:
        first, again = (_as_sample(raw, table, where) for raw in answer["repeat"][seed])
        if first != again:
            raise CheckFailed(f"{where}: two calls with np.random.default_rng({seed}) "
                              f"returned different samples; draw every random number from "
                              f"the rng argument (e.g. rng.integers(d)), never from "
                              f"np.random or the random module")
    n = len(answer["samples"])
    estimates = np.empty((n, len(g.outputs), len(g.inputs)))
    repeats, expected_repeats = 0, 0.0
    for i, raw in enumerate(answer["samples"]):
        Q = _as_sample(raw, table, f"{where} (sample {i + 1})")
        draws = _draw_counts(Q, table, k, f"{where} (sample {i + 1})")
        for u, counts in draws.items():
            d = table.out_degree[u]
            if k >= 2 and d >= 2:
                repeats += sum(m * (m - 1) for m in counts.values())
                expected_repeats += k * (k - 1) / d
        estimates[i] = table.jacobian(raw)
    exact = table.jacobian(edge_dict(g))
    stderr = np.sqrt(path_sampling_variance(g, k) / n)
    mean = estimates.mean(axis=0)
    allowed = Z_LIMIT * stderr + 1e-9 * max(1.0, float(np.abs(exact).max()))
    bad = np.abs(mean - exact) > allowed
    if bad.any():
        i, j = np.argwhere(bad)[0]
        y, x = g.names[g.outputs[i]], g.names[g.inputs[j]]
        raise CheckFailed(
            f"{where}: over {n} samples your mean estimate of d{y}/d{x} is "
            f"{_num(mean[i, j])} but the exact value is {_num(exact[i, j])}, "
            f"{abs(mean[i, j] - exact[i, j]) / max(stderr[i, j], 1e-300):.1f} standard "
            f"errors away (allowed: {Z_LIMIT:g}); the estimate is biased -- draw each "
            f"successor with probability 1/d and weight each draw by d/k")
    if expected_repeats >= 100 and not 0.6 <= repeats / expected_repeats <= 1.4:
        raise CheckFailed(
            f"{where}: over {n} samples the same edge was drawn twice at one vertex "
            f"{repeats} times (counting pairs of draws), but uniform draws with "
            f"replacement repeat about {expected_repeats:.0f} times; draw the k "
            f"successors independently, with replacement")


# ------------------------------------------------------- exact variance, k = 1
_VARIANCE_GRAPHS = [
    ("figure1()", ["figure1", [], {}]),
    ("lecture()", ["lecture", [], {}]),
    ("two_outputs()", ["two_outputs", [], {}]),
    ("independent_paths(3, 3, partials='random', rng=0)",
     ["independent_paths", [3, 3], {"partials": "random", "rng": 0}]),
    ("interleaved(3, 3, partials='random', rng=0)",
     ["interleaved", [3, 3], {"partials": "random", "rng": 0}]),
    ("random_dag(3, 10, 2, rng=0)", ["random_dag", [3, 10, 2], {"rng": 0}]),
    ("random_dag(2, 8, 2, density=0.4, rng=3)",
     ["random_dag", [2, 8, 2], {"density": 0.4, "rng": 3}]),
]


def _variance_cases(rng) -> list[dict]:
    if rng is None:
        graphs = _VARIANCE_GRAPHS
    else:
        graphs = random_graphs(rng)
        s = int(rng.integers(2 ** 31))
        graphs = graphs[:2] + graphs[3:4] + [
            (f"independent_paths(3, 3, partials='random', rng={s})",
             ["independent_paths", [3, 3], {"partials": "random", "rng": s}])] + graphs[5:]
    return [{"name": name, "graph": spec} for name, spec in graphs]


def planted_variances(g: LCG) -> dict[str, np.ndarray]:
    """The variance that three common slips in the k = 1 recursion would compute."""
    def recursion(step, subtract=True):
        out = np.zeros((len(g.outputs), len(g.inputs)))
        for row, y in enumerate(g.outputs):
            adjoint, second = np.zeros(g.n_vertices), np.zeros(g.n_vertices)
            adjoint[y] = second[y] = 1.0
            for z in range(y - 1, -1, -1):
                succ = list(g.successors(z))
                d = len(succ)
                p = np.array([g.partial(z, s) for s in succ])
                adjoint[z] = float(p @ adjoint[succ]) if d else 0.0
                second[z] = step(d, p, second[succ]) if d else 0.0
            out[row] = [second[x] - (adjoint[x] ** 2 if subtract else 0.0) for x in g.inputs]
        return out

    return {
        "forgets to square the partials (d * sum p * M)":
            recursion(lambda d, p, m: d * float(p @ m)),
        "leaves out the factor d (sum p^2 * M)":
            recursion(lambda d, p, m: float((p * p) @ m)),
        "returns the second moment E[J^2], without subtracting J^2":
            recursion(lambda d, p, m: d * float((p * p) @ m), subtract=False),
    }


@exercise("5.2", "exact variance for k = 1", takes=("variance_k1",), points=3, minutes=30,
          seconds=60, reference=("minirad.randomized.sampling:path_sampling_variance",
                                 "minirad.randomized.experiments"),
          topic="variance of Algorithm 1, k = 1", cases=_variance_cases, probe=on_graph,
          passed="exact k = 1 variance agrees with minirad on {n} graphs")
def check_variance_k1(case, answer, where) -> None:
    """Exercise 5.2: ``fn(g)`` is the exact variance of Algorithm 1 with ``k = 1``.

    Returns an array of shape (n_outputs, n_inputs): the variance of each
    entry of the estimate.  Compared with
    :func:`minirad.randomized.sampling.path_sampling_variance` (``k = 1``),
    with hints for a recursion that forgets to square the partials, leaves out
    the out-degree, or forgets to subtract the squared mean.

    >>> from minirad.randomized.sampling import path_sampling_variance
    >>> check_variance_k1(lambda g: path_sampling_variance(g, 1))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    minirad.labs.checking.CheckFailed: Exercise 5.2 (variance of Algorithm 1, k = 1), on \
figure1(): used the reference -- your function called minirad's path_sampling_variance ...
    """
    g = build_graph(case["graph"])
    expected = path_sampling_variance(g, 1)
    try:
        compare_jacobian(answer, expected, where, what="variance", rtol=1e-8)
    except CheckFailed as failure:
        mine = np.asarray(answer, dtype=float)
        for slip, wrong in planted_variances(g).items():
            if mine.shape == wrong.shape and np.allclose(mine, wrong, rtol=1e-8, atol=1e-12):
                raise CheckFailed(f"{failure} -- your recursion {slip}; the second moment "
                                  f"is M(z) = d_z * sum over successors s of "
                                  f"(ds/dz)^2 * M(s), and Var = M - (dy/dx)^2") from None
        if mine.shape == expected.shape and np.any(mine < -1e-9 * max(1.0, mine.max())):
            i = np.unravel_index(np.argmin(mine), mine.shape)
            raise CheckFailed(f"{failure} -- your entry [{i[0]}, {i[1]}] is negative, and a "
                              f"variance never is: the second moment M(x) is at least "
                              f"(dy/dx)^2, so M is too small (each draw's term needs the "
                              f"factor d_z, and the partial squared)") from None
        raise


# ----------------------------------------------- two levels on a graph of arrays
_FAN_CASES = [  # (name, d, n, k, m, seed of a and b, equal contributions)
    ("d=3 arrays of n=4, k=1, m=1", 3, 4, 1, 1, 0, False),
    ("d=3 arrays of n=4, k=2, m=1", 3, 4, 2, 1, 0, False),
    ("d=2 arrays of n=5, k=3, m=2", 2, 5, 3, 2, 1, False),
    ("d=4 arrays of n=3, k=2, m=3", 4, 3, 2, 3, 2, False),
    ("d=3 arrays of n=4, k=1, m=2, equal b_j . a_j", 3, 4, 1, 2, 3, True),
]


def _fan_arrays(d: int, n: int, seed: int, equal: bool) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(d, n)), rng.normal(size=(d, n))
    if equal:  # every array carries the same b_j . a_j: the path level adds no noise
        b *= 1.0 / (a * b).sum(axis=1, keepdims=True)
    return a.round(6).tolist(), b.round(6).tolist()


def _fan_cases(rng) -> list[dict]:
    """Each case: the rows a_j = dA_j/dtheta and b_j = dy/dA_j, and k and m."""
    if rng is None:
        chosen = _FAN_CASES
    else:
        chosen = []
        for i in range(5):
            d, n = int(rng.integers(2, 6)), int(rng.integers(2, 7))
            k, m = int(rng.integers(1, 5)), int(rng.integers(1, n + 1))
            chosen.append((f"d={d} arrays of n={n}, k={k}, m={m}", d, n, k, m,
                           int(rng.integers(2 ** 31)), i == 4))
    cases = []
    for name, d, n, k, m, seed, equal in chosen:
        a, b = _fan_arrays(d, n, seed, equal)
        cases.append({"name": name, "a": a, "b": b, "k": k, "m": m})
    return cases


def fan_graph(a, b) -> LCG:
    """The graph of arrays of Exercise 5.3: a number ``theta`` feeds ``d`` arrays
    ``A_j = a_j * theta`` of ``n`` entries each, and ``y = sum_j b_j . A_j``.

    >>> g = fan_graph([[1.0, 2.0], [3.0, 4.0]], [[1.0, 0.0], [0.0, 1.0]])
    >>> [g.shape(v) for v in g.successors(g.inputs[0])]
    [(2,), (2,)]
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)

    def program(theta):
        total = b[0] @ (a[0] * theta)
        for j in range(1, len(a)):
            total = total + b[j] @ (a[j] * theta)
        return total

    return trace(program, np.array(1.0))


def _probe_fan(fns, case, where):
    return call_student(fns[0], where, np.array(case["a"]), np.array(case["b"]), case["k"],
                        case["m"], seconds=30)


def two_level_slips(a, b, k: int, m: int) -> dict[str, float]:
    """The variance that common slips in Exercise 5.3 compute, each with its hint."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d, n = a.shape
    x = (a * b).sum(axis=1)
    paths = (d * (x ** 2).sum() - x.sum() ** 2) / k
    entries = ((n * (a * b) ** 2).sum(axis=1) - x ** 2) / m
    drawn = 1 - 1 / k + d / k  # E[c_j^2]
    return {
        "the two levels' variances added, each as if the other were exact: an array's "
        "entry-level noise is scaled by its weight c_j, so it enters as E[c_j^2] s_j, "
        "with E[c_j^2] = 1 - 1/k + d/k":
            paths + entries.sum(),
        "E[c_j^2] = d/k: with k >= 2 draws, c_j = (d/k) N_j with N_j binomial(k, 1/d), "
        "so E[c_j^2] = (d/k)^2 (k/d (1 - 1/d) + k^2/d^2) = 1 - 1/k + d/k":
            paths + d / k * entries.sum(),
        "the entry level without its factor n: P = (n/m) sum e_i e_i^T, so one draw "
        "gives n b_ji a_ji and its second moment is n sum_i (b_ji a_ji)^2":
            paths + drawn * (((a * b) ** 2).sum(axis=1) - x ** 2).sum() / m,
    }


@exercise("5.3", "two-level sampling on a graph of arrays", takes=("two_level_variance",),
          points=3, minutes=25, seconds=60,
          reference=("minirad.randomized.sampling:path_sampling_variance",
                     "minirad.randomized.moments", "minirad.randomized.experiments"),
          topic="variance of two-level sampling", cases=_fan_cases, probe=_probe_fan,
          passed="the exact two-level variance agrees with minirad on {n} graphs of arrays")
def check_two_level_variance(case, answer, where) -> None:
    """Exercise 5.3: ``fn(a, b, k, m)`` is the exact variance of two-level sampling.

    The graph (:func:`fan_graph`): ``theta`` feeds ``d`` arrays ``A_j = a_j
    theta`` of ``n`` entries, and ``y = sum_j b_j . A_j``; ``a`` and ``b`` are
    ``(d, n)`` arrays.  Two-level sampling (the paper's Sec. 3.2) draws ``k``
    of the ``d`` edges out of ``theta`` (weight ``d/k`` per draw) and, inside
    each array, ``m`` of its ``n`` entries (the matrix ``P = (n/m) sum e_i
    e_i^T``).  The answer, one number, is compared with minirad's exact
    variance of that estimator on the traced graph
    (:func:`~minirad.randomized.sampling.path_sampling_variance` with
    ``entries=m``), with hints for the levels added as if independent,
    ``E[c^2] = d/k``, and the entry level without its factor ``n``.

    >>> def two_level_variance(a, b, k, m):
    ...     d, n = a.shape
    ...     x = (a * b).sum(axis=1)
    ...     s = ((n * (a * b) ** 2).sum(axis=1) - x ** 2) / m
    ...     return (d * (x ** 2).sum() - x.sum() ** 2) / k + (1 - 1 / k + d / k) * s.sum()
    >>> check_two_level_variance(two_level_variance)
    Exercise 5.3 passed: the exact two-level variance agrees with minirad on 5 graphs of arrays
    """
    g = fan_graph(case["a"], case["b"])
    expected = float(path_sampling_variance(g, case["k"], entries=case["m"])[0, 0])
    mine = as_float(answer, where, "; return the variance, one number")
    scale = max(1.0, abs(expected))
    if abs(mine - expected) <= 1e-9 * scale:
        return
    message = (f"{where}: your variance is {_num(mine)}, but minirad's exact variance of the "
               f"two-level estimate is {_num(expected)}")
    for slip, wrong in two_level_slips(case["a"], case["b"], case["k"], case["m"]).items():
        if abs(wrong - expected) > 1e-9 * scale and abs(mine - wrong) <= 1e-9 * scale:
            raise CheckFailed(f"{message} -- {slip}")
    if mine < 0:
        message += " -- a variance is never negative"
    raise CheckFailed(message)


# ------------------------------------------------------- planted mistakes
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


def _variance_slip(i: int):
    return one(lambda g: list(planted_variances(g).values())[i])


def _two_level_slip(i: int):
    return one(lambda a, b, k, m: list(two_level_slips(a, b, k, m).values())[i])


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "5.1": [
        ("weights without the d/k", one(_sampler(scale=False))),
        ("a repeated draw overwritten instead of added", one(_sampler(add=False))),
        ("draws without replacement",
         one(_sampler(draw=lambda rng, d, k: rng.choice(d, size=k, replace=k > d)))),
        ("numbers from numpy's global generator", one(_sampler(draw=_global_rng))),
    ],
    "5.2": [
        (slip, _variance_slip(i))
        for i, slip in enumerate(("partials not squared", "the factor d left out",
                                  "the second moment, J^2 not subtracted"))
    ],
    "5.3": [
        (slip, _two_level_slip(i))
        for i, slip in enumerate(("the levels added as if independent", "E[c^2] = d/k",
                                  "the entry level without its factor n"))
    ],
}
