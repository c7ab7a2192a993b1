"""What the explorable page shows of a scalar LCG, computed by minirad and kept as JSON.

The page computes nothing of its own but one thing: the elimination step
of a vertex the student clicks (the JavaScript mirror of
:func:`minirad.exact.elimination.eliminate_vertex`, the same products and
sums in the same order, tested equal to it in a real browser).  Every
other number is here: the sweeps' tangents and adjoints, minirad's own
elimination orders with every step they take, Bauer's paths and their
products, the Algorithm 1 samples and estimates, the exact variances.

One section per panel of the page; each is a dict of plain lists,
strings and numbers (floats as Python writes them, so that JavaScript
reads back the very same doubles).

>>> from minirad import examples
>>> g = examples.figure1()
>>> [step["multiplications"] for step in elimination_section(g)["orders"]["markowitz"]["steps"]]
[1, 1, 2, 2]
>>> paths_section(g)["entries"][0]["count"]
'2'
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..exact.elimination import eliminate, elimination_order
from ..exact.orders import OPTIMAL_LIMIT
from ..exact.paths import count_paths, path_product, paths
from ..exact.result import format_count
from ..exact.sweeps import forward_sweep, reverse_sweep
from ..graph.labels import FLOATS
from ..graph.lcg import INTERMEDIATE, LCG, fill_template
from ..randomized.sampling import path_sampling_variance, sample_paths, sampled_jacobians
from ..rng import as_generator

# the sections of minirad.draw.explore's page: no API of their own
__all__: list[str] = []

#: the elimination orders the page can play, each minirad's own (optimal only for small graphs)
ORDERS = ("forward", "reverse", "markowitz", "optimal")
#: the exhaustive optimal order is left out above this many intermediates (it searches 2**k sets)
OPTIMAL_ON_PAGE = min(12, OPTIMAL_LIMIT)
#: Jacobian entries whose samples, means and variances the page keeps
MAX_ENTRIES = 6
#: significant digits kept of the running standard errors and variances
SPREAD_DIGITS = 8


def number(x) -> float | str:
    """A float for JSON: as Python writes it, or its name when not finite (JSON has no inf)."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def numbers(values, digits: int | None = None) -> list:
    """Floats for JSON, in full or to ``digits`` significant digits (a smaller file)."""
    flat = np.asarray(values, dtype=float).ravel()
    if digits is None:
        return [number(x) for x in flat]
    return [number(float(f"{x:.{digits}g}")) for x in flat]


def entry_names(g: LCG) -> list[str]:
    """``dy/dx1``, ... in row-major order of the Jacobian."""
    return [f"d{g.names[y]}/d{g.names[x]}" for y in g.outputs for x in g.inputs]


def vertex_text(g: LCG, v: int) -> str:
    """``v3 = sin(x2)``, or the name alone for an input."""
    if g.kind(v) == "input" or not g.ops[v]:
        return g.names[v]
    return f"{g.names[v]} = {fill_template(g.ops[v], [g.names[p] for p in g.predecessors(v)])}"


def graph_section(g: LCG) -> dict:
    """Vertices (name, kind, operation, value) and edges (ends, partial), in ``g``'s order."""
    return dict(
        names=list(g.names), kinds=[g.kind(v) for v in range(g.n_vertices)],
        ops=[vertex_text(g, v) for v in range(g.n_vertices)], values=numbers(g.values),
        sources=g.sources.tolist(), targets=g.targets.tolist(), labels=numbers(g.partials),
        inputs=list(g.inputs), outputs=list(g.outputs), entries=entry_names(g))


def exact_section(g: LCG) -> dict:
    """Each forward sweep (one per input) and reverse sweep (one per output): the
    tangent or adjoint of every vertex, in the order the sweep reaches them, and its cost."""
    sweeps = []
    for x in g.inputs:
        run = forward_sweep(g, wrt=x)
        sweeps.append(dict(direction="forward", seed=x, values=numbers(run.tangents[:, 0]),
                           order=list(range(g.n_vertices)),
                           multiplications=run.multiplications, additions=run.additions))
    for y in g.outputs:
        run = reverse_sweep(g, outputs=y)
        sweeps.append(dict(direction="reverse", seed=y, values=numbers(run.adjoints[:, 0]),
                           order=list(range(g.n_vertices - 1, -1, -1)),
                           multiplications=run.multiplications, additions=run.additions))
    return dict(sweeps=sweeps, jacobian=numbers(reverse_sweep(g, keep_values=False).jacobian))


def _step_record(step) -> dict:
    return dict(vertex=step.eliminated, predecessors=list(step.predecessors),
                successors=list(step.successors), fill_in=[list(e) for e in step.fill_in],
                updated=[list(e) for e in step.updated],
                fill_in_labels=numbers(step.fill_in_labels),
                updated_labels=numbers(step.updated_labels),
                multiplications=step.multiplications, additions=step.additions)


def elimination_section(g: LCG) -> dict:
    """minirad's elimination orders, each with every step :func:`eliminate` records
    (``keep_graphs=True``) and its final Jacobian; the page plays them back and
    checks its own step against each."""
    orders = {}
    for name in ORDERS:
        if name == "optimal" and len(g.intermediates) > OPTIMAL_ON_PAGE:
            continue
        order = elimination_order(g, name)
        result = eliminate(g, list(order), keep_graphs=True)
        orders[name] = dict(order=list(order), steps=[_step_record(s) for s in result.steps],
                            multiplications=result.multiplications, additions=result.additions,
                            jacobian=numbers(result.jacobian))
    return dict(orders=orders, intermediates=[v for v in range(g.n_vertices)
                                              if g.kind(v) == INTERMEDIATE],
                optimal_limit=OPTIMAL_ON_PAGE)


def paths_section(g: LCG, max_paths: int = 60) -> dict:
    """Per Jacobian entry: the exact number of paths (Bauer's formula sums over them),
    the first ``max_paths`` of them in minirad's order with their products, and the entry."""
    counts = count_paths(g)
    jacobian = reverse_sweep(g, keep_values=False).jacobian
    entries = []
    for (r, y), (c, x) in itertools.product(enumerate(g.outputs), enumerate(g.inputs)):
        listed = list(itertools.islice(paths(g, x, y), max_paths))
        products = [path_product(g, p) for p in listed]
        entries.append(dict(name=f"d{g.names[y]}/d{g.names[x]}", count=format_count(counts[r, c]),
                            complete=len(listed) == counts[r, c],
                            paths=[list(p) for p in listed], products=numbers(products),
                            listed_sum=number(math.fsum(products)), exact=number(jacobian[r, c])))
    return dict(entries=entries, limit=max_paths)


def _running(estimates: np.ndarray) -> dict:
    """Running mean, standard error of the mean and sample variance after 1, 2, ... estimates."""
    n = np.arange(1, len(estimates) + 1)[:, None]
    mean = np.cumsum(estimates, axis=0) / n
    with np.errstate(over="ignore"):  # a spread beyond the float range is inf
        squares = np.cumsum((estimates - mean[-1]) ** 2, axis=0)  # about the final mean
    shift = np.cumsum(estimates - mean[-1], axis=0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        variance = (squares - shift ** 2 / n) / (n - 1)  # NaN for one estimate: undefined
    variance = np.maximum(variance, 0.0)
    return dict(mean=mean, stderr=np.sqrt(variance / n), variance=variance)


def sample_section(g: LCG, ks=(1, 2), seeds=(0, 1, 2), n: int = 100, runs: int = 12,
                   entries=(None,)) -> dict:
    """For each k and seed, ``n`` estimates of Algorithm 1 with their running mean,
    standard error and variance (the first :data:`MAX_ENTRIES` entries).  The first
    ``runs`` of them (at most ``n``) are single runs of ``sample_paths`` on one generator
    made from the seed, kept with their drawn edges, weights and skipped vertices, so
    that the samples a student steps through are the first ones the running mean
    averages; the rest come from ``sampled_jacobians(g, k, n - runs, rng=rng)`` on the same
    generator afterwards (the same law, drawn in batches).  The estimates and means are
    kept in full, the standard errors and variances to :data:`SPREAD_DIGITS`
    significant digits (the page prints fewer).

    On a graph of arrays ``entries`` lists the second levels to offer (each as
    :func:`~minirad.randomized.sampling.sample_paths` takes it: entries kept inside
    each visited array); each run then keeps, per vertex that sampled inside, the
    weight of each of its entries (0 where not kept), and the Jacobian's entries are
    those of the arrays, row by row."""
    total = sum(g.size(y) for y in g.outputs) * sum(g.size(x) for x in g.inputs)
    shown = min(MAX_ENTRIES, total)
    exact = reverse_sweep(g, keep_values=False).jacobian.ravel()[:shown]
    menu = []
    for k, inside in itertools.product(ks, entries):
        try:
            variance = numbers(path_sampling_variance(g, k, entries=inside).ravel()[:shown])
        except ValueError as error:  # too many vertices for the dense covariance
            variance = str(error)
        for seed in seeds:
            rng = as_generator(seed)
            singles, first = [], []
            for _ in range(min(runs, n)):
                s = sample_paths(g, k, rng=rng, entries=inside)
                drawn = np.flatnonzero(s.counts)
                first.append(np.asarray(s.jacobian, dtype=np.float64).ravel())
                singles.append(dict(edges=drawn.tolist(), counts=s.counts[drawn].tolist(),
                                    weights=numbers(s.weights[drawn]),
                                    skipped=np.flatnonzero(~s.visited).tolist(),
                                    estimate=numbers(s.jacobian.ravel()[:shown]),
                                    inside={str(v): numbers(w) for v, w in s.inside.items()},
                                    edges_stored=s.edges_stored,
                                    vertices_stored=s.vertices_stored))
            parts = [np.array(first)]
            if n > len(first):
                parts.append(sampled_jacobians(g, k, n - len(first), rng=rng, entries=inside)
                             .reshape(n - len(first), -1))
            estimates = np.concatenate(parts)[:, :shown]
            running = _running(estimates)
            menu.append(dict(k=k, entries=inside, seed=seed, n=n, runs=len(singles),
                             exact_variance=variance,
                             estimates=[numbers(row) for row in estimates],
                             mean=[numbers(row) for row in running["mean"]],
                             stderr=[numbers(row, SPREAD_DIGITS) for row in running["stderr"]],
                             variance=[numbers(row, SPREAD_DIGITS)
                                       for row in running["variance"]],
                             singles=singles))
    names = entry_names(g) if g.algebra is FLOATS else _array_entry_names(g)
    return dict(entries=names[:shown], all_entries=total,
                exact=numbers(exact), menu=menu)


def _array_entry_names(g: LCG) -> list[str]:
    """``dy/dW1[0,1]``, ...: the entries of a graph of arrays' Jacobian, row by row."""
    rows = [f"{g.names[y]}{_index(i, g.shapes[y])}" for y in g.outputs
            for i in np.ndindex(*g.shapes[y])]
    columns = [f"{g.names[x]}{_index(j, g.shapes[x])}" for x in g.inputs
               for j in np.ndindex(*g.shapes[x])]
    return [f"d{r}/d{c}" for r in rows for c in columns]


def _index(i: tuple, shape: tuple) -> str:
    return "" if not shape else "[" + ",".join(map(str, i)) + "]"
