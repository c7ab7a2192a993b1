"""Checks of labs 4-6: they accept the labs' reference solutions and other correct
answers, and reject planted mistakes with a message that names the input and,
for the common slips, the slip.

Running the labs themselves (as scripts, as solution notebooks, as handouts)
is covered by tests/test_labs.py, which picks up every tutorials/lab*.py.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad import LCG, examples, labs, trace
from minirad.exact.elimination import eliminate_vertex, elimination_order
from minirad.exact.sweeps import reverse_sweep
from minirad.labs import checking, lab04_elimination, lab05_randomized, lab06_optimisation
from minirad.randomized.sampling import sample_paths

# ------------------------------------------------------------- references
REFERENCES = [
    ("lab4_elimination", "eliminate_one", labs.check_eliminate_vertex, "4.1"),
    ("lab4_elimination", "markowitz_order", labs.check_markowitz_order, "4.2"),
    ("lab5_randomized", "sample_Q", labs.check_sample_Q, "5.1"),
    ("lab5_randomized", "two_level_variance", labs.check_two_level_variance, "5.3"),
    ("lab6_optimisation", "descend", labs.check_descent_step, "6.1"),
    ("lab6_optimisation", "sgd", labs.check_sgd, "6.2"),
]


@pytest.mark.slow
@pytest.mark.parametrize("stem, name, check, number",
                         [pytest.param(*r, marks=lab_group(r[0])) for r in REFERENCES],
                         ids=[r[1] for r in REFERENCES])
def test_check_accepts_the_lab_solution(stem, name, check, number, tmp_path_factory, capsys):
    solution = lab_solution(stem, name, tmp_path_factory)
    capsys.readouterr()  # what the notebook printed, if it ran just now
    check(solution)
    out = capsys.readouterr().out
    assert re.fullmatch(rf"Exercise {re.escape(number)} passed: .+\n", out), out


def test_checks_are_exported_from_labs():
    for module in (lab04_elimination, lab05_randomized, lab06_optimisation):
        for name in module.__all__:
            if name.startswith("check_") or name in ("edge_dict", "sample_jacobian",
                                                     "line_fit_loss"):
                assert getattr(labs, name) is getattr(module, name)
    assert checking.CheckFailed is labs.CheckFailed


@pytest.mark.parametrize("check", [labs.check_eliminate_vertex, labs.check_markowitz_order,
                                   labs.check_sample_Q, labs.check_two_level_variance,
                                   labs.check_descent_step,
                                   labs.check_sgd])
def test_checks_let_unsolved_stubs_through(check):
    def stub(*args):
        raise NotImplementedError("Exercise 9.9: stub")

    with pytest.raises(NotImplementedError, match="Exercise 9.9: stub"):
        check(stub)


def test_checks_report_student_exceptions_with_the_input():
    def crash(*args):
        raise KeyError("oops")

    expect_failure(labs.check_eliminate_vertex, crash,
                   "Exercise 4.1 (eliminate one vertex), on figure1(), eliminating v2",
                   "your function raised KeyError")
    expect_failure(labs.check_sample_Q, crash, "Exercise 5.1 (Algorithm 1), on figure1() with "
                                               "k=1", "raised KeyError")


# ----------------------------------------------------------------- helpers
def test_edge_dict_and_sample_jacobian():
    g = examples.two_outputs()
    edges = labs.edge_dict(g)
    assert len(edges) == g.n_edges
    assert all(edges[g.names[u], g.names[v]] == p for u, v, p in g.edges())
    np.testing.assert_allclose(labs.sample_jacobian(g, edges), reverse_sweep(g).jacobian,
                               rtol=1e-13)
    s = sample_paths(g, 2, rng=0)
    q = {(g.names[u], g.names[v]): w for u, v, w in s.graph.edges()}
    np.testing.assert_allclose(labs.sample_jacobian(g, q), s.jacobian, rtol=1e-13)
    with pytest.raises(ValueError, match="not an edge"):
        labs.sample_jacobian(g, {("y[0]", "x0"): 1.0})
    with pytest.raises(TypeError):
        labs.sample_jacobian(edges, g)


def test_line_fit_loss_minimum():
    points = np.array(lab06_optimisation._LINE_POINTS)
    a, b = np.polyfit(points[:, 0], points[:, 1], 1)
    gradient = reverse_sweep(trace(labs.line_fit_loss, a, b)).jacobian[0]
    np.testing.assert_allclose(gradient, 0.0, atol=1e-12)
    assert labs.line_fit_loss(a, b) < labs.line_fit_loss(a + 0.01, b)


# ------------------------------------------------------------ Exercise 4.1
def eliminate_with(update):
    """A dict-based elimination whose edge update is ``update(new, p, s, d_vp, d_sv)``."""
    def eliminate_one(edges, v):
        into = {p: d for (p, w), d in edges.items() if w == v}
        out = {s: d for (w, s), d in edges.items() if w == v}
        new = {e: d for e, d in edges.items() if v not in e}
        for p, d_vp in into.items():
            for s, d_sv in out.items():
                update(new, p, s, d_vp, d_sv)
        return new
    return eliminate_one


def overwrite(new, p, s, d_vp, d_sv):
    new[p, s] = d_sv * d_vp


def add_partials(new, p, s, d_vp, d_sv):
    new[p, s] = new.get((p, s), 0.0) + d_sv + d_vp


def add_product(new, p, s, d_vp, d_sv):
    new[p, s] = new.get((p, s), 0.0) + d_sv * d_vp


def only_existing(new, p, s, d_vp, d_sv):
    if (p, s) in new:
        new[p, s] += d_sv * d_vp


def test_eliminate_vertex_check_refuses_minirad_s_own_step():
    def via_lcg(edges, v):
        g = LCG.from_edges([(a, b, d) for (a, b), d in edges.items()], [], [])
        return labs.edge_dict(eliminate_vertex(g, v))

    expect_failure(labs.check_eliminate_vertex, via_lcg, "Exercise 4.1", "used the reference",
                   "eliminate_vertex (minirad.exact.elimination)")


def test_eliminate_vertex_check_rejects_planted_bugs():
    expect_failure(labs.check_eliminate_vertex, eliminate_with(overwrite),
                   "on figure1() after eliminating v2, eliminating v3",
                   "partial on x2 -> v4", "parallel paths add up")
    expect_failure(labs.check_eliminate_vertex, eliminate_with(add_partials),
                   "on figure1(), eliminating v2", "the chain rule multiplies")
    expect_failure(labs.check_eliminate_vertex, eliminate_with(only_existing),
                   "has no edge x1 -> v5 (a new edge)")

    def keeps_v(edges, v):
        new = dict(edges)
        for (p, w), d_vp in edges.items():
            if w == v:
                for (w2, s), d_sv in edges.items():
                    if w2 == v:
                        add_product(new, p, s, d_vp, d_sv)
        return new

    expect_failure(labs.check_eliminate_vertex, keeps_v, "still has the edge",
                   "no edge may touch it")

    def in_place(edges, v):
        result = eliminate_with(add_product)(edges, v)
        edges.clear()
        edges.update(result)
        return edges

    expect_failure(labs.check_eliminate_vertex, in_place, "changed the dict it was given")
    expect_failure(labs.check_eliminate_vertex, lambda edges, v: list(edges),
                   "returned list")
    expect_failure(labs.check_eliminate_vertex,
                   lambda edges, v: {(0, 1): 1.0}, "keys are pairs of vertex names")


# ------------------------------------------------------------ Exercise 4.2
def greedy_order(key):
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


def test_markowitz_check_accepts_an_independent_answer():
    labs.check_markowitz_order(greedy_order(lambda p, s, v: (p * s, v)))


def test_markowitz_check_rejects_planted_bugs():
    def static(g):
        degree = {v: len(g.predecessors(v)) * len(g.successors(v)) for v in g.intermediates}
        return [g.names[v] for v in sorted(degree, key=lambda v: (degree[v], v))]

    expect_failure(labs.check_markowitz_order, static,
                   "Exercise 4.2 (Markowitz order), on figure1()",
                   "step 2 (after eliminating v3) eliminates v2", "recompute their degrees")
    expect_failure(labs.check_markowitz_order, greedy_order(lambda p, s, v: (p * s, -v)),
                   "lower vertex number", "ties go to the lowest vertex number")
    expect_failure(labs.check_markowitz_order, greedy_order(lambda p, s, v: (p + s, v)),
                   "not |pred| + |succ|")
    expect_failure(labs.check_markowitz_order, lambda g: list(g.intermediates),
                   "return vertex names", "g.names[v]")
    markowitz = greedy_order(lambda p, s, v: (p * s, v))
    expect_failure(labs.check_markowitz_order, lambda g: markowitz(g)[:-1], "never eliminates")
    expect_failure(labs.check_markowitz_order,
                   lambda g: [g.names[g.inputs[0]]] + markowitz(g), "is not an intermediate")
    expect_failure(labs.check_markowitz_order,
                   lambda g: list(elimination_order(g, "markowitz")), "used the reference",
                   "elimination_order")
    expect_failure(labs.check_markowitz_order, lambda g: None, "returned NoneType")


# ------------------------------------------------------------ Exercise 5.1
def sampler(choose, weight=lambda d, k, m, partial: m * d / k * partial, skip=True):
    """A dict-shaped Algorithm 1 with pluggable draws and weights.

    ``choose(rng, d, k)`` returns the k successor positions drawn."""
    def sample_q(g, k, rng):
        counts, visited = {}, set(g.inputs)
        for v in range(g.n_vertices):
            succ = g.successors(v)
            if (skip and v not in visited) or not succ:
                continue
            for i in choose(rng, len(succ), k):
                w = succ[int(i)]
                counts[v, w] = counts.get((v, w), 0) + 1
                visited.add(w)
        return {(g.names[v], g.names[w]): weight(g.out_degree(v), k, m, g.partial(v, w))
                for (v, w), m in counts.items()}
    return sample_q


def with_replacement(rng, d, k):
    return rng.integers(d, size=k)


@pytest.mark.slow
def test_sample_check_refuses_minirad_and_accepts_a_plain_loop():
    def via_minirad(g, k, rng):
        s = sample_paths(g, k, rng=rng)
        return {(g.names[u], g.names[v]): w for u, v, w in s.graph.edges()}

    expect_failure(labs.check_sample_Q, via_minirad, "Exercise 5.1", "used the reference",
                   "sample_paths")
    labs.check_sample_Q(sampler(lambda rng, d, k: [rng.integers(d) for _ in range(k)]))


@pytest.mark.slow
def test_sample_check_rejects_planted_bugs():
    expect_failure(labs.check_sample_Q,
                   sampler(with_replacement, weight=lambda d, k, m, p: m * p),
                   "on figure1() with k=1", "a multiple of 2/1")
    expect_failure(labs.check_sample_Q,
                   sampler(with_replacement, weight=lambda d, k, m, p: m * d * p),
                   "on figure1() with k=2", "exactly k = 2")
    def overwrites_repeats(g, k, rng):  # Q[edge] = ... drops the earlier draws of an edge
        q = sampler(with_replacement)(g, k, rng)
        return {(u, v): w / round(w / (g.out_degree(u) / k * g.partial(u, v)))
                for (u, v), w in q.items()}

    expect_failure(labs.check_sample_Q, overwrites_repeats, "on figure1() with k=2",
                   "exactly k = 2", "must ADD up")
    assert "ADD" not in expect_failure(
        labs.check_sample_Q, sampler(with_replacement, weight=lambda d, k, m, p: m * d * p),
        "exactly k = 2")
    expect_failure(labs.check_sample_Q, sampler(with_replacement, skip=False),
                   "no sampled edge enters", "Algorithm 1 skips")
    legacy = np.random.default_rng()  # not the rng the check passes in
    expect_failure(labs.check_sample_Q, sampler(lambda rng, d, k: legacy.integers(d, size=k)),
                   "returned different samples", "never from np.random")
    expect_failure(labs.check_sample_Q,
                   sampler(lambda rng, d, k: np.minimum(rng.integers(d, size=k),
                                                        rng.integers(d, size=k))),
                   "on figure1() with k=1", "over 2000 samples", "biased")

    def without_replacement(rng, d, k):
        return rng.choice(d, size=k, replace=False) if k <= d else rng.integers(d, size=k)

    expect_failure(labs.check_sample_Q, sampler(without_replacement),
                   "on figure1() with k=2", "with replacement")

    def all_edges(g, k, rng):
        q = sampler(with_replacement)(g, k, rng)
        return {(g.names[u], g.names[v]): q.get((g.names[u], g.names[v]), 0.0)
                for u, v, _ in g.edges()}

    expect_failure(labs.check_sample_Q, all_edges, "leave the others out")

    def numbered(g, k, rng):
        q = sampler(with_replacement)(g, k, rng)
        return {(g.index(u), g.index(v)): w for (u, v), w in q.items()}

    expect_failure(labs.check_sample_Q, numbered, "keys are pairs of vertex names",
                   "g.names[v]")
    expect_failure(labs.check_sample_Q, lambda g, k, rng: [], "returned list")


# ------------------------------------------------------------ Exercise 6.1
def gradient(f, args):
    return reverse_sweep(trace(f, *args)).jacobian[0]


def test_descent_check_rejects_planted_bugs():
    expect_failure(labs.check_descent_step,
                   lambda f, rate, *args: np.array(args) + rate * gradient(f, args),
                   "Exercise 6.1 (one descent step), on g(x, y) = y*y + sin(x) at (1, 1)",
                   "uphill")
    expect_failure(labs.check_descent_step,
                   lambda f, rate, *args: np.array(args) - gradient(f, args),
                   "scale the gradient by the rate")

    def published(f, rate, *args):  # the overwritten adjoint of y in y*y
        if f is examples.descent_program and args == (1.0, 1.0):
            return (0.891939538826372, 0.8)
        return tuple(np.array(args) - rate * gradient(f, args))

    expect_failure(labs.check_descent_step, published, "published step", "dg/dy = 2y")
    expect_failure(labs.check_descent_step, lambda f, rate, *args: gradient(f, args)[0],
                   "returned shape ()")


# ------------------------------------------------------------ Exercise 6.2
def sgd_with(estimate, include_start=True, copy=True):
    def sgd(f, start, rate, steps, k=None, rng=None):
        x = np.array(start, dtype=float) if copy else start
        path = [x.copy()] if include_start else []
        for _ in range(steps):
            g = trace(f, *x)
            grad = estimate(g, k, rng)
            if copy:
                x = x - rate * grad
            else:
                x -= rate * grad
            path.append(x.copy())
        return np.array(path)
    return sgd


def exact(g, k, rng):
    return reverse_sweep(g).jacobian[0]


def sampled(g, k, rng):
    return exact(g, k, rng) if k is None else sample_paths(g, k, rng=rng).jacobian[0]


def test_sgd_check_rejects_planted_bugs():
    # on g sampling is exact (every vertex has one successor): the first miss is the line fit
    expect_failure(labs.check_sgd, sgd_with(exact),
                   "Exercise 6.2 (descent with sampled gradients), on line_fit_loss from (0, 0), "
                   "k=1", "follows the exact gradient")
    expect_failure(labs.check_sgd, sgd_with(sampled, include_start=False),
                   "include the start as row 0")
    expect_failure(labs.check_sgd, sgd_with(sampled, copy=False), "changed the start array")
    expect_failure(labs.check_sgd,
                   sgd_with(lambda g, k, rng: sampled(g, k, np.random.default_rng(0))),
                   "line_fit_loss from (0, 0), k=1", "do not make a new one")
    expect_failure(labs.check_sgd, sgd_with(lambda g, k, rng: sampled(g, k and 1, rng)),
                   "line_fit_loss from (2, -1), k=3")
    expect_failure(labs.check_sgd, lambda f, start, rate, steps, k, rng: "done",
                   "returned str", "return an array of the iterates")


# ------------------------------------------------ 5.3: two levels on a fan of arrays
def _enumerated_variance(a, b, k, m) -> float:
    """Independent oracle: the variance of the two-level estimate by walking every
    equally likely outcome (k ordered draws among the d arrays, then m ordered draws
    among the n entries of each array); tiny fans only."""
    import itertools

    d, n = a.shape
    per_array = []   # each array's entry-level estimates b_j^T P_j a_j, equally likely
    for j in range(d):
        per_array.append([n / m * sum(b[j, i] * a[j, i] for i in entries)
                          for entries in itertools.product(range(n), repeat=m)])
    mean = second = 0.0
    outcomes = 0
    for branches in itertools.product(range(d), repeat=k):
        counts = np.bincount(branches, minlength=d)
        for inside in itertools.product(*per_array):
            estimate = sum(d / k * counts[j] * inside[j] for j in range(d))
            mean, second, outcomes = mean + estimate, second + estimate ** 2, outcomes + 1
    return second / outcomes - (mean / outcomes) ** 2


@pytest.mark.parametrize("d, n, k, m", [(2, 3, 1, 1), (2, 2, 2, 2), (3, 2, 2, 1), (2, 3, 3, 2)])
def test_fan_graph_two_level_variance_is_the_enumerated_one(d, n, k, m):
    from minirad.randomized.sampling import path_sampling_variance

    rng = np.random.default_rng(d * 100 + n * 10 + k + m)
    a, b = rng.normal(size=(d, n)), rng.normal(size=(d, n))
    exact = float(path_sampling_variance(labs.fan_graph(a, b), k, entries=m)[0, 0])
    assert exact == pytest.approx(_enumerated_variance(a, b, k, m), rel=1e-10)


def _two_level_by_moments(a, b, k, m):
    """5.3 as a student might write it: the second moment of each level by hand."""
    d, n = a.shape
    total = 0.0
    means = [float(b[j] @ a[j]) for j in range(d)]
    second = [n / m * float(((b[j] * a[j]) ** 2).sum()) + (1 - 1 / m) * means[j] ** 2
              for j in range(d)]
    c_square, c_cross = 1 - 1 / k + d / k, 1 - 1 / k      # E[c_j^2], E[c_i c_j]
    for i in range(d):
        for j in range(d):
            total += c_square * second[i] if i == j else c_cross * means[i] * means[j]
    return total - sum(means) ** 2


def test_two_level_check_accepts_an_independent_answer_and_refuses_minirad(capsys):
    from minirad.randomized.sampling import path_sampling_variance

    labs.check_two_level_variance(_two_level_by_moments)
    assert "Exercise 5.3 passed" in capsys.readouterr().out
    expect_failure(
        labs.check_two_level_variance,
        lambda a, b, k, m: path_sampling_variance(labs.fan_graph(a, b), k, entries=m)[0, 0],
        "Exercise 5.3", "used the reference", "path_sampling_variance")


def test_two_level_check_names_the_slips():
    def independent_levels(a, b, k, m):   # each level's variance as if the other were exact
        d, n = a.shape
        x = (a * b).sum(axis=1)
        entries = (n * ((a * b) ** 2).sum(axis=1) - x ** 2) / m
        return (d * (x ** 2).sum() - x.sum() ** 2) / k + entries.sum()

    def d_over_k(a, b, k, m):
        d, n = a.shape
        x = (a * b).sum(axis=1)
        entries = (n * ((a * b) ** 2).sum(axis=1) - x ** 2) / m
        return (d * (x ** 2).sum() - x.sum() ** 2) / k + d / k * entries.sum()

    expect_failure(labs.check_two_level_variance, independent_levels, "k=1, m=1",
                   "E[c_j^2] s_j")
    expect_failure(labs.check_two_level_variance, d_over_k, "k=2, m=1",
                   "E[c_j^2] = d/k: with k >= 2 draws")
    expect_failure(labs.check_two_level_variance, lambda a, b, k, m: [1.0, 2.0],
                   "returned list", "one number")
