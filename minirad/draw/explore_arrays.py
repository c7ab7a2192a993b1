"""What the explorable page shows of a graph with arrays: its Jacobian blocks, the
reverse sweep over them, and the memory the backward pass keeps against the
variance that activation sampling adds.

Memory comes from :func:`minirad.graph.memory.retained_memory`, on the graph as traced
and on :func:`minirad.randomized.injection.sample_activations` of it at each
kept fraction.  The exact variance of the sampled gradient is computed here,
from minirad's own injection and sweep, by a property of the estimator that
needs no formula for the graph at hand:

* every path from a weight to the loss meets at most one sampled edge (the
  page checks it), so the estimate is the exact gradient plus one zero-mean
  term per sampled edge, and the terms of different edges, drawn
  independently, add their variances;
* on one edge each row of the stored activation draws its own ``k`` entries,
  with replacement, independently: a row's term is the mean of ``k``
  independent one-draw terms, so its variance is the one-draw variance over
  ``k``, and the rows add theirs;
* a row's one-draw term takes ``d`` equally likely values, one per entry it
  may draw; :func:`minirad.randomized.injection.inject_edge` with that one
  draw given (``picks=``) and :func:`minirad.exact.sweeps.gradient` give each.

So ``Var = sum over edges and rows of (one-draw variance of the row) / k``,
exact up to rounding; the tests hold it against the closed form of an MLP
layer and against many sampled gradients.

>>> import numpy as np
>>> from minirad import trace
>>> X = np.array([[1.0, 2.0], [3.0, 0.0]])
>>> g = trace(lambda W: (X @ W).sum(), np.ones((2, 1)))
>>> one_draw_variance(g)["W"].ravel().tolist()   # (d - 1) * sum over rows of x^2, d = 2
[10.0, 4.0]
"""

from __future__ import annotations

import numpy as np

from ..exact.sweeps import gradient
from ..graph import labels
from ..graph.lcg import fill_template, shape_text
from ..graph.memory import retained_memory
from ..graph.operators import MatMul
from ..randomized.injection import draws, inject_edge, sample_activations
from .explore_data import number, numbers

# the sections of minirad.draw.explore's page: no API of their own
__all__: list[str] = []

#: the variance is computed from this many sampled gradients at most (rows x entries per edge)
MAX_PROBES = 4000
#: kept fractions the slider offers, after "no sampling"
FRACTIONS = (1.0, 0.5, 0.25, 0.1, 0.05)


def _kind(label) -> str:
    """An edge's kind: the operator's, or "number" for the float between two numbers."""
    return "number" if isinstance(label, float) else label.kind


def sampled_edges(g) -> list[int]:
    """The edges :func:`~minirad.randomized.injection.sample_activations` samples: the
    products with a stored activation (``outer``)."""
    return [e for e, label in enumerate(g.labels) if _kind(label) == "outer"]


def graph_section(g) -> dict:
    """Vertices (name, kind, shape, operation) and edges (ends, label, flops) of a
    graph with arrays; an edge between two numbers shows its partial."""
    ops = []
    for v in range(g.n_vertices):
        operands = [g.names[u] for u in g.predecessors(v)]
        ops.append(g.names[v] if g.kind(v) == "input" or not g.ops[v]
                   else f"{g.names[v]} = {fill_template(g.ops[v], operands)}")
    return dict(names=list(g.names), kinds=[g.kind(v) for v in range(g.n_vertices)], ops=ops,
                shapes=[shape_text(s) for s in g.shapes], dims=[list(s) for s in g.shapes],
                dtypes=[str(d) for d in g.dtypes], sources=g.sources.tolist(),
                targets=g.targets.tolist(),
                labels=[f"{op:.4g}" if isinstance(op, float) else op.label() for op in g.labels],
                flops=[1 if isinstance(op, float) else int(op.flops) for op in g.labels],
                inputs=list(g.inputs), outputs=list(g.outputs))


def _summary(x) -> dict:
    x = np.asarray(x, dtype=float)
    return dict(shape=shape_text(x.shape), norm=number(np.linalg.norm(x.ravel())),
                first=numbers(x.ravel()[:4]), size=int(x.size))


def exact_section(g) -> dict:
    """The reverse sweep over blocks seeded with ones at every output: each vertex's
    adjoint (shape, norm, first entries), in the order the sweep reaches them."""
    run = labels.reverse(g, {y: np.ones(g.shapes[y], dtype=g.dtypes[y]) for y in g.outputs})
    values = [None if a is None else _summary(a) for a in run.values]
    return dict(sweeps=[dict(direction="reverse", seed=-1, values=values,
                             order=list(range(g.n_vertices - 1, -1, -1)),
                             multiplications=int(run.multiplications))])


def _reaches(g, start: int, goal: int) -> bool:
    seen, todo = {start}, [start]
    while todo:
        u = todo.pop()
        if u == goal:
            return True
        for w in g.successors(u):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return False


def _why_no_variance(g, sampled: list[int]) -> str | None:
    """Why the exact variance is not computed for this graph, or None."""
    if len(g.outputs) != 1 or g.shapes[g.outputs[0]] != ():
        return "the exact variance is computed for one scalar output (a loss)"
    for e in sampled:
        edge = f"edge {g.names[g.sources[e]]} -> {g.names[g.targets[e]]}"
        if not isinstance(g.labels[e], MatMul):
            return (f"{edge} is a {_kind(g.labels[e])}, not a product with a stored array; "
                    f"only those are sampled here")
        if g.labels[e].gathered is not None:
            return (f"{edge} gathers its activation (a convolution); its variance is not "
                    f"computed here")
    for a in sampled:
        for b in sampled:
            if a != b and _reaches(g, int(g.targets[a]), int(g.sources[b])):
                return (f"a path meets two sampled edges ({g.names[g.sources[a]]} -> "
                        f"{g.names[g.targets[a]]}, then {g.names[g.sources[b]]} -> "
                        f"{g.names[g.targets[b]]}); the variance is computed when each path "
                        f"meets at most one")
    return None


def _rows_and_width(g, e: int) -> tuple[int, int]:
    """Rows of the stored activation of edge ``e`` and entries per row (d)."""
    d = inject_edge(g, e, 1, rng=0).injections[-1]["d"]
    return g.labels[e].stored.size // d, d


def edge_variances(g, edges=None) -> list[dict]:
    """Per sampled edge, per input name: the variance each gradient entry gets from that
    edge when every row of its stored activation keeps one draw (divide by k for k).

    ``edges`` are the sampled edges (default: those ``sample_activations`` samples).
    Raises ``ValueError`` naming the reason when the variance cannot be computed this way.
    """
    sampled = sampled_edges(g) if edges is None else list(edges)
    why = _why_no_variance(g, sampled)
    if why:
        raise ValueError(why)
    shapes = [_rows_and_width(g, e) for e in sampled]
    probes = sum(rows * d for rows, d in shapes)
    if probes > MAX_PROBES:
        raise ValueError(f"the exact variance needs {probes} sampled gradients here, more "
                         f"than {MAX_PROBES}; explore a smaller batch or narrower layers")
    shares = []
    for e, (rows, d) in zip(sampled, shapes):
        share = {g.names[x]: np.zeros(g.shapes[x]) for x in g.inputs}
        for row in range(rows):
            picks = np.zeros((rows, 1), dtype=np.int64)  # the other rows: fixed, no variance
            outcomes = []
            for i in range(d):
                picks[row, 0] = i
                outcomes.append([np.asarray(x, dtype=float)
                                 for x in gradient(inject_edge(g, e, picks=picks))])
            for j, x in enumerate(g.inputs):
                # the d equally likely outcomes of this row's draw
                share[g.names[x]] += np.stack([o[j] for o in outcomes]).var(axis=0)
        shares.append(share)
    return shares


def one_draw_variance(g, edges=None) -> dict:
    """Per input name, the variance of each gradient entry when every row of every
    sampled edge keeps one draw: the sum of :func:`edge_variances`."""
    shares = edge_variances(g, edges)
    return {g.names[x]: sum((s[g.names[x]] for s in shares), np.zeros(g.shapes[x]))
            for x in g.inputs}


def memory_section(g, fractions=FRACTIONS, *, rng: int = 0) -> dict:
    """Bytes per edge (and why an edge keeps nothing) for the graph as traced and after
    ``sample_activations(g, f, rng=rng)`` for each kept fraction ``f`` (``rng`` an integer
    seed, which the page shows); the exact
    variance of the sampled gradient at each ``f`` (or why it is not computed)."""
    full = retained_memory(g)
    sampled = sampled_edges(g)
    steps = [dict(fraction=None, per_edge=list(full.per_edge), total=full.total,
                  ks=[None] * len(sampled),
                  variance=[0.0] * len(g.inputs))]
    try:
        shares, why = edge_variances(g, sampled), None
    except ValueError as error:
        shares, why = None, str(error)
    for f in fractions:
        h = sample_activations(g, f, rng=rng)
        m = retained_memory(h)
        ks = [draws(_rows_and_width(g, e)[1], f) for e in sampled]
        variance = None
        if shares is not None:
            variance = [number(sum(float(shares[i][g.names[x]].sum()) / k
                                   for i, k in enumerate(ks))) for x in g.inputs]
        steps.append(dict(fraction=f, per_edge=list(m.per_edge), total=m.total,
                          ks=ks, variance=variance))
    norms = [number(float(np.sum(np.asarray(x, dtype=float) ** 2))) for x in gradient(g)] \
        if why is None or "scalar output" not in why else None
    return dict(notes=list(full.notes), sampled=sampled, steps=steps, seed=rng,
                variance_note=why, gradient_squared=norms,
                input_names=[g.names[x] for x in g.inputs])


# ------------------------------------------------------------ elimination on blocks
#: every set of eliminated intermediates is computed in advance up to this many of them
#: (2**8 graphs), so that a student can click them in any order; beyond, minirad's orders
MAX_CLICKABLE = 8


def _block_text(label) -> str:
    """An edge's label as the drawing writes it: the partial, or the block's kind."""
    return f"{label:.4g}" if isinstance(label, float) else label.label()


def _block_name(label) -> str:
    """A block with its shape, for the log of a step: ``dense (3, 5) <- (4, 5)``."""
    if isinstance(label, float):
        return f"{label:.4g}"
    return f"{label.label()} {shape_text(label.out_shape)} ← {shape_text(label.in_shape)}"


def _block_step(step, index: dict) -> dict:
    """One elimination step on blocks, with vertex numbers of the graph as traced."""
    pairs = lambda names: [[index[p], index[s]] for p, s in names]  # noqa: E731
    return dict(vertex=index[step.eliminated], predecessors=[index[p] for p in step.predecessors],
                successors=[index[s] for s in step.successors], fill_in=pairs(step.fill_in),
                updated=pairs(step.updated),
                fill_in_labels=[_block_name(b) for b in step.fill_in_labels],
                updated_labels=[_block_name(b) for b in step.updated_labels],
                multiplications=int(step.multiplications), additions=int(step.additions))


def elimination_section(g) -> dict:
    """Vertex elimination on Jacobian blocks, every step minirad's own
    (:func:`minirad.exact.elimination.eliminate` on the graph left so far): the
    products of blocks are operators the page cannot form, so it looks them up.

    ``orders``: minirad's forward, reverse, Markowitz and optimal orders with their
    steps.  ``states`` (for at most :data:`MAX_CLICKABLE` intermediates): for every
    set of eliminated intermediates, written as a bit mask over ``intermediates``,
    the step of eliminating each intermediate still there, so that any order can be
    clicked (the page keeps the graph left by applying the steps' fill-in).  Costs are
    what the block algebra counts: multiplications of the entries of the blocks.

    >>> from minirad import examples
    >>> section = elimination_section(examples.figure3())
    >>> [section["orders"][o]["multiplications"] for o in ("forward", "reverse")]
    [1050, 135]
    >>> len(section["states"]), section["states"][0]["3"]["multiplications"]
    (8, 90)
    """
    from ..exact.elimination import eliminate, elimination_order

    index = {name: v for v, name in enumerate(g.names)}
    inter = list(g.intermediates)
    orders = {}
    for name in ("forward", "reverse", "markowitz", "optimal"):
        try:
            order = elimination_order(g, name)
        except ValueError:   # "optimal" beyond what minirad searches
            continue
        result = eliminate(g, order=list(order), keep_graphs=True)
        orders[name] = dict(order=list(order), steps=[_block_step(s, index)
                                                      for s in result.steps],
                            multiplications=int(result.multiplications),
                            additions=int(result.additions))
    states = None
    if len(inter) <= MAX_CLICKABLE:
        states = []
        for mask in range(2 ** len(inter)):
            gone = [g.names[v] for i, v in enumerate(inter) if mask >> i & 1]
            h = eliminate(g, order=gone).graph if gone else g
            states.append({str(v): _block_step(eliminate(h, order=[g.names[v]]).steps[0], index)
                           for i, v in enumerate(inter) if not mask >> i & 1})
    return dict(orders=orders, intermediates=inter, states=states, optimal_limit=len(inter),
                clickable_limit=MAX_CLICKABLE)


def paths_section(g, limit: int = 60) -> dict:
    """Per pair of an output array and an input array: the paths of arrays between them
    (Bauer's formula on blocks), each with its product, a block, and the block of the
    Jacobian they sum to, with the norms that compare them.

    >>> from minirad import examples
    >>> entry = paths_section(examples.figure3())["entries"][0]
    >>> entry["name"], entry["count"], entry["products"][0].split(",")[0]
    ('dy/dW1', '1', 'R ← R^(4×5)')
    """
    import itertools
    import math

    from ..exact.jacobians import accumulate
    from ..exact.paths import count_paths, path_product, paths
    from ..exact.result import format_count

    counts = count_paths(g)
    blocks = accumulate(g, method="reverse").blocks
    entries = []
    for (r, y), (c, x) in itertools.product(enumerate(g.outputs), enumerate(g.inputs)):
        listed = list(itertools.islice(paths(g, x, y), limit))
        blocks_along = [path_product(g, p) for p in listed]
        products = [np.asarray(b if isinstance(b, float) else b.to_dense(), dtype=float)
                    for b in blocks_along]
        exact = np.asarray(blocks[r][c], dtype=float).reshape(
            int(np.prod(g.shapes[y], dtype=int)), int(np.prod(g.shapes[x], dtype=int)))
        total = sum(products, np.zeros_like(exact)) if products else np.zeros_like(exact)
        shape = f"{shape_text(g.shapes[y])} ← {shape_text(g.shapes[x])}"
        entries.append(dict(
            name=f"d{g.names[y]}/d{g.names[x]}", count=format_count(counts[r, c]),
            complete=len(listed) == counts[r, c], paths=[list(p) for p in listed],
            products=[f"{shape}, norm {number(math.hypot(*p.ravel())):.6g}" for p in products],
            listed_sum=number(np.linalg.norm(total)), exact=number(np.linalg.norm(exact)),
            difference=number(np.linalg.norm(total - exact)), shape=shape))
    return dict(entries=entries, limit=limit, blocks=True)
