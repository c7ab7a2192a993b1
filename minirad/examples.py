"""Named graphs and programs used throughout the docs, labs and tests.

>>> from minirad import examples
>>> examples.figure1()
LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
>>> round(examples.lecture().value("y"), 3)
11.652
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .graph.lcg import LCG
from .rng import as_generator as _rng
from .tracing import ops, trace


# ------------------------------------------------------------------ programs
def figure1_program(x1, x2):
    """The program of the RAD paper's Figure 1 (an example by Paul D. Hovland)."""
    a = ops.exp(x1)
    b = ops.sin(x2)
    c = b * x2
    d = a * c
    return a * d


def lecture_program(x1, x2):
    """y = ln(x1) + x1*x2 - sin(x2), written in the lecture's evaluation order."""
    v2 = ops.log(x1)
    v3 = x1 * x2
    v4 = ops.sin(x2)
    v5 = v2 + v3
    return v5 - v4


def lab_program(x, y):
    """f(x, y) = x*y + sin(x), the reverse-mode lab's example."""
    return x * y + ops.sin(x)


def descent_program(x, y):
    """g(x, y) = y*y + sin(x), the lab's gradient-descent objective."""
    return y * y + ops.sin(x)


def product_program(*x):
    """y = x_1 x_2 ... x_n, the AD lecture's example of symbolic swell: each
    entry of its gradient is a product of the other n - 1 inputs."""
    y = x[0]
    for factor in x[1:]:
        y = y * factor
    return y


def composition_program(depth: int):
    """The one-input program x_(k+1) = sin(x_k) * x_k, repeated ``depth`` times:
    written as a formula, each step doubles its size.

    >>> trace(composition_program(3), 0.5).n_edges        # 3 edges a step
    9
    """
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be a positive integer, not {depth!r}")

    def program(x):
        for _ in range(depth):
            x = ops.sin(x) * x
        return x

    return program


def two_outputs_program(x0, x1):
    """t = x0*sin(x0*x1); returns (cos(t), t/x1): a small two-output elimination example."""
    t = x0 * ops.sin(x0 * x1)
    return ops.cos(t), t / x1


# -------------------------------------------------------------------- graphs
def figure1(x1: float = 1.0, x2: float = 2.0) -> LCG:
    """The LCG of :func:`figure1_program`: 2 inputs, 4 intermediates, 1 output, 8 edges."""
    return trace(figure1_program, x1, x2)


def lecture(x1: float = 2.0, x2: float = 5.0) -> LCG:
    """The lecture's example at (2, 5): y = 11.652, dy/dx1 = 5.5, dy/dx2 = 1.716."""
    return trace(lecture_program, x1, x2)


def lab(x: float = 2.0, y: float = 3.0) -> LCG:
    """The lab's example at (2, 3): gradient (2.5838531634528574, 2.0)."""
    return trace(lab_program, x, y)


def two_outputs(x0: float = 1.5, x1: float = 0.5) -> LCG:
    """The LCG of :func:`two_outputs_program`."""
    return trace(two_outputs_program, x0, x1)


def random_dag(n_inputs: int = 3, n_intermediates: int = 10, n_outputs: int = 2,
               density: float = 0.3, rng=None) -> LCG:
    """A random LCG with standard normal partials.

    Vertices are inputs ``x[i]``, intermediates ``v<k>`` and outputs
    ``y[j]``, numbered in that order.  Each possible forward edge into an
    intermediate or output is present with probability ``density``.  Every
    non-input vertex gets at least one predecessor and every non-output at
    least one successor, so every vertex lies on some input-to-output path.

    >>> g = random_dag(2, 5, 1, rng=0)
    >>> len(g.inputs), len(g.intermediates), len(g.outputs)
    (2, 5, 1)
    """
    for name, count in (("n_inputs", n_inputs), ("n_outputs", n_outputs)):
        if count < 1:
            raise ValueError(f"{name} must be at least 1, got {count}")
    if n_intermediates < 0:
        raise ValueError(f"n_intermediates must be >= 0, got {n_intermediates}")
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must lie in [0, 1], got {density}")
    rng = _rng(rng)
    n_sources = n_inputs + n_intermediates  # vertices that may have successors
    n = n_sources + n_outputs
    mask = np.zeros((n, n), dtype=bool)
    for v in range(n_inputs, n):
        candidates = min(v, n_sources)
        mask[v, :candidates] = rng.random(candidates) < density
        if not mask[v].any():
            mask[v, rng.integers(candidates)] = True
    for u in range(n_sources):
        if not mask[:, u].any():
            mask[rng.integers(max(u + 1, n_inputs), n), u] = True
    targets, sources = np.nonzero(mask)
    names = ([f"x[{i}]" for i in range(n_inputs)]
             + [f"v{k}" for k in range(n_inputs, n_sources)]
             + [f"y[{j}]" for j in range(n_outputs)])
    return LCG(names, sources, targets, rng.standard_normal(len(sources)),
               inputs=range(n_inputs), outputs=range(n_sources, n))


# ------------------------------------------------- Figure 2 of the RAD paper
def _family_partials(partials, sources, rng) -> np.ndarray:
    """Partials for the Figure 2 families, one per edge (edges listed by source)."""
    n_edges = len(sources)
    if partials is None:
        return np.ones(n_edges)
    if isinstance(partials, str):
        if partials not in ("random", "balanced"):
            raise ValueError(f"partials={partials!r} is not a known scheme; use None (all 1.0), "
                             f"a number, 'random' or 'balanced'")
        rng = _rng(rng)
        if partials == "random":
            return rng.uniform(0.5, 1.5, n_edges)
        # one draw per edge in source order, so the input's out-partials come
        # first and are the same for every depth under the same seed
        draws = rng.uniform(0.0, 1.0, n_edges)
        degree = np.bincount(sources)[sources]
        totals = np.bincount(sources, weights=draws)[sources]
        return np.where(degree == 1, 1.0, degree * draws / totals)
    if isinstance(partials, (bool, np.bool_)) or not isinstance(
            partials, (int, float, np.integer, np.floating)) or not np.isfinite(partials):
        raise ValueError(f"partials must be None, a finite number, 'random' or 'balanced', not "
                         f"{partials!r}")
    return np.full(n_edges, float(partials))


def layer_names(depth: int, width: int) -> list[list[str]]:
    """``a1 a2 ...`` for the first layer, ``b1 ...`` for the second, as in the
    paper's Figure 2; deep graphs run out of letters and use ``h<layer>_<i>``.

    >>> layer_names(2, 3)
    [['a1', 'a2', 'a3'], ['b1', 'b2', 'b3']]
    >>> layer_names(30, 1)[-1]
    ['h30_1']
    """
    if depth <= 24:  # a..x, so that no layer is called y
        return [[f"{chr(ord('a') + l)}{i + 1}" for i in range(width)] for l in range(depth)]
    return [[f"h{l + 1}_{i + 1}" for i in range(width)] for l in range(depth)]


def _chain_factors(chain) -> list[np.ndarray]:
    if isinstance(chain, np.ndarray) or not isinstance(chain, Sequence) or len(chain) == 0:
        raise TypeError("chain must be a nonempty list of 2-D arrays [J1, J2, ..., JL] whose "
                        "product JL ... J1 is the Jacobian")
    matrices = []
    for l, factor in enumerate(chain, start=1):
        m = np.asarray(factor, dtype=np.float64)
        if m.ndim != 2 or 0 in m.shape:
            raise ValueError(f"chain factor J{l} has shape {m.shape}; each factor must be a "
                             f"nonempty 2-D matrix")
        if not np.all(np.isfinite(m)):
            raise ValueError(f"chain factor J{l} has non-finite entries; partials must be finite")
        if matrices and m.shape[1] != matrices[-1].shape[0]:
            raise ValueError(f"J{l} has {m.shape[1]} columns but J{l - 1} has "
                             f"{matrices[-1].shape[0]} rows; J{l} @ J{l - 1} must be defined")
        matrices.append(m)
    return matrices


def _diagonal_scales(projections, sizes: list[int]) -> list[np.ndarray]:
    """Per position 0..L, the factor of each component: the diagonal of the
    projection given there (a sampling matrix), else ones."""
    if not isinstance(projections, Mapping):
        raise TypeError(f"projections must map positions to matrices, not "
                        f"{type(projections).__name__}")
    scale = [np.ones(d) for d in sizes]
    for l, p in projections.items():
        if isinstance(l, (bool, np.bool_)) or not isinstance(l, (int, np.integer)) or not (
                0 <= l < len(sizes)):
            raise ValueError(f"projection position {l!r} is not valid: positions are the ints "
                             f"0 (input) .. {len(sizes) - 1} (output)")
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (sizes[l], sizes[l]):
            raise ValueError(f"the matrix at position {l} has shape {p.shape}; the vector "
                             f"there has {sizes[l]} components, so it must be "
                             f"{sizes[l]} x {sizes[l]}")
        if np.any(p != np.diag(np.diag(p))):
            raise ValueError(f"the projection at position {l} must be a diagonal matrix (a "
                             f"sampling projection: only those keep or drop whole vertices)")
        scale[l] = np.diag(p).copy()
    return scale


def chain_graph(chain, projections: Mapping | None = None) -> LCG:
    """The scalar LCG of a chain of Jacobians ``J_L ... J_1`` (the paper's Figure 2):
    a vertex per vector component, an edge per matrix entry, zeros included, so
    out-degrees are the vector sizes.  (:func:`minirad.graph.scalarize.from_chain`
    builds the same chain as an array graph.)

    Inputs are ``theta`` (or ``x1..xp``), the vectors inside the chain are
    lettered by position (:func:`layer_names`), and outputs are ``y`` (or
    ``y1..ym``).  With ``projections`` (diagonal sampling matrices by position,
    as :func:`minirad.randomized.injection.random_projection` draws them), every
    edge into component ``i`` at position ``l`` (out of input ``i`` at position 0)
    is multiplied by ``P[i, i]`` and dropped where that is zero: the graph whose
    Jacobian is the injected estimate, showing that injection samples vertices.

    >>> chain = [np.ones((3, 1)), np.ones((3, 3)), np.ones((3, 3)), np.ones((1, 3))]
    >>> chain_graph(chain).same_as(interleaved(3, 3))
    True
    >>> chain_graph([np.ones((2, 1)), np.ones((1, 2))], {1: np.diag([2.0, 0.0])}).n_edges
    3
    """
    chain = _chain_factors(chain)
    sizes = [chain[0].shape[1]] + [m.shape[0] for m in chain]
    scale = _diagonal_scales({} if projections is None else projections, sizes)
    inner = layer_names(len(chain) - 1, max(sizes)) if len(chain) > 1 else []
    names = [["theta"] if sizes[0] == 1 else [f"x{i + 1}" for i in range(sizes[0])]]
    names += [layer[:d] for layer, d in zip(inner, sizes[1:-1])]
    names += [["y"] if sizes[-1] == 1 else [f"y{i + 1}" for i in range(sizes[-1])]]
    first = np.cumsum([0] + sizes)
    sources, targets, partials = [], [], []
    for l, factor in enumerate(chain, start=1):
        into, out_of = np.meshgrid(np.arange(sizes[l]), np.arange(sizes[l - 1]), indexing="ij")
        column_scale = scale[0] if l == 1 else np.ones(sizes[l - 1])  # inputs: out-edges
        weight = factor * scale[l][:, None] * column_scale[None, :]
        kept = (scale[l][:, None] != 0) & (column_scale[None, :] != 0)
        sources.append((first[l - 1] + out_of)[kept])
        targets.append((first[l] + into)[kept])
        partials.append(weight[kept])
    flat = [name for layer in names for name in layer]
    return LCG(flat, np.concatenate(sources), np.concatenate(targets),
               np.concatenate(partials), inputs=range(sizes[0]),
               outputs=range(first[-2], first[-1]))


def _check_shape(width, depth):
    for name, value in (("width", width), ("depth", depth)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")


def _layered(width, depth, partials, rng, connect) -> LCG:
    """One input ``theta``, ``depth`` layers of ``width`` vertices, one output ``y``;
    ``connect(i)`` lists the next-layer positions that position ``i`` feeds."""
    _check_shape(width, depth)
    layers = layer_names(depth, width)
    names = ["theta"] + [name for layer in layers for name in layer] + ["y"]
    first = 1  # number of the first vertex of the current layer
    sources = [0] * width
    targets = list(range(1, width + 1))
    for _ in range(depth - 1):
        for i in range(width):
            for j in connect(i):
                sources.append(first + i)
                targets.append(first + width + j)
        first += width
    sources += range(first, first + width)
    targets += [len(names) - 1] * width
    sources = np.asarray(sources)
    return LCG(names, sources, targets, _family_partials(partials, sources, rng),
               inputs=[0], outputs=[len(names) - 1])


def independent_paths(width: int, depth: int, partials=None, *, rng=None) -> LCG:
    """Figure 2a of the RAD paper: ``width`` disjoint chains from ``theta`` to ``y``.

    Chain ``i`` runs ``theta -> a<i> -> b<i> -> ... -> y`` through ``depth``
    intermediates (layers are lettered ``a``, ``b``, ... as in the paper), so
    the graph has ``width`` input-output paths whatever its depth.

    ``partials`` may be ``None`` (every partial 1.0), a number (every partial
    that number), ``"random"`` (independent uniform draws from [0.5, 1.5)) or
    ``"balanced"`` (each vertex's out-partials are uniform draws rescaled to
    average 1; a vertex with one successor gets 1.0, so here only the edges
    leaving ``theta`` vary).  Balanced partials keep the Jacobian equal to
    the number of paths and make every vertex's out-edges unequal, which is
    what gives path sampling something to get wrong.  Random schemes draw
    from ``rng`` (a ``numpy.random.Generator`` or a seed), edge by edge in
    order of their source, so one seed gives ``theta`` the same out-partials
    at every depth.

    >>> g = independent_paths(3, 2)
    >>> g
    LCG(8 vertices: 1 input, 6 intermediates, 1 output; 9 edges)
    >>> g.successors("theta") == tuple(g.index(v) for v in ("a1", "a2", "a3"))
    True
    >>> [g.name(v) for v in g.successors("a2")]
    ['b2']
    """
    return _layered(width, depth, partials, rng, lambda i: (i,))


def interleaved(width: int, depth: int, partials=None, *, rng=None) -> LCG:
    """Figure 2b of the RAD paper: ``depth`` fully connected layers of ``width`` vertices.

    ``theta`` feeds every vertex of the first layer, every vertex of a layer
    feeds every vertex of the next, and the last layer feeds ``y``: there
    are ``width ** depth`` input-output paths.  ``interleaved(3, 3)`` is the
    scalar graph behind the vector chain ``theta -> A -> B -> C -> y`` of
    Figure 2c.  ``partials`` and ``rng`` are as in :func:`independent_paths`.

    >>> g = interleaved(3, 3)
    >>> g
    LCG(11 vertices: 1 input, 9 intermediates, 1 output; 24 edges)
    >>> [g.name(v) for v in g.successors("b2")]
    ['c1', 'c2', 'c3']
    >>> g = interleaved(2, 4, partials="balanced", rng=0)
    >>> round(sum(g.partial("theta", v) for v in ("a1", "a2")), 12)
    2.0
    """
    return _layered(width, depth, partials, rng, lambda i: range(width))


# ------------------------------------------------------- big random graphs
def random_layered(width: int, depth: int, degree: int, *, rng=None) -> LCG:
    """A random layered LCG: ``depth + 1`` layers of ``width`` vertices.

    Layer 0 holds the inputs ``x[i]`` and the last layer the outputs
    ``y[j]``; every other vertex draws ``degree`` distinct predecessors
    uniformly from the layer before.  Partials are normal with variance
    ``1 / degree``, so that tangents and adjoints neither explode nor vanish
    with depth.  There are ``width * depth * degree`` edges, drawn without a
    Python loop per edge, so graphs of 10^6 edges take well under a second.

    >>> g = random_layered(4, 3, 2, rng=0)
    >>> g.n_vertices, g.n_edges, len(g.inputs), len(g.outputs)
    (16, 24, 4, 4)
    >>> sorted({len(g.predecessors(v)) for v in range(4, 16)})
    [2]
    """
    _check_shape(width, depth)
    if isinstance(degree, (bool, np.bool_)) or not isinstance(degree, (int, np.integer)):
        raise TypeError(f"degree must be an int, not {type(degree).__name__}")
    if not 1 <= degree <= width:
        raise ValueError(f"degree must lie in 1..width ({width}), got {degree}")
    rng = _rng(rng)
    n = width * (depth + 1)
    preds = rng.integers(0, width, size=(width * depth, degree))
    while True:  # redraw repeated predecessors until each row is distinct
        preds.sort(axis=1)
        repeated = np.zeros(preds.shape, dtype=bool)
        repeated[:, 1:] = preds[:, 1:] == preds[:, :-1]
        if not repeated.any():
            break
        preds[repeated] = rng.integers(0, width, size=int(repeated.sum()))
    targets = np.repeat(np.arange(width, n), degree)
    sources = preds.reshape(-1) + (targets // width - 1) * width
    partials = rng.standard_normal(len(sources)) / np.sqrt(degree)
    names = ([f"x[{i}]" for i in range(width)]
             + [f"v{k}" for k in range(width, n - width)]
             + [f"y[{j}]" for j in range(width)])
    # layer by layer is a topological numbering, and the edges are grouped by
    # target without duplicates: the invariants LCG would check, by construction
    return LCG.from_trusted_arrays(names, sources, targets, partials, range(width),
                                   range(n - width, n))


# ------------------------------------------- sparse Jacobians (colouring)
def _size(n, least: int = 1) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int, not {type(n).__name__}")
    if n < least:
        raise ValueError(f"n must be at least {least}, got {n}")
    return int(n)


def _points(n: int) -> list[float]:
    return np.linspace(0.5, 1.5, n).tolist()


def banded(n: int = 8, width: int = 1) -> LCG:
    """``y[i] = x[i] * sin(x[i-width] + ... + x[i+width])``: a Jacobian whose
    nonzeros lie within ``width`` of the diagonal (tridiagonal for width 1).

    >>> from minirad.exact.sparsity import pattern
    >>> pattern(banded(4)).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    n, width = _size(n), _size(width, least=0)

    def program(x):
        out = []
        for i in range(n):
            band = [x[j] for j in range(max(0, i - width), min(n, i + width + 1))]
            total = band[0]
            for term in band[1:]:
                total = total + term
            out.append(x[i] * ops.sin(total))
        return out

    return trace(program, _points(n))


def arrow(n: int = 8, row: bool = True, column: bool = True) -> LCG:
    """An arrow-shaped Jacobian: the diagonal, plus a dense first row
    (``y[0]`` uses every input) and/or a dense first column (every output
    uses ``x[0]``).  With the row only, forward sweeps need n seeds and
    reverse sweeps 2; with the column only, the other way round.

    >>> from minirad.exact.sparsity import pattern
    >>> pattern(arrow(4)).astype(int)
    array([[1, 1, 1, 1],
           [1, 1, 0, 0],
           [1, 0, 1, 0],
           [1, 0, 0, 1]])
    """
    n = _size(n, least=2)

    def program(x):
        head = x[0] * x[0]
        if row:
            for j in range(1, n):
                head = head + x[j] * x[j]
        out = [ops.sin(head)]
        for i in range(1, n):
            out.append(ops.sin(x[i]) * x[0] if column else ops.sin(x[i]))
        return out

    return trace(program, _points(n))


def block_diagonal(blocks: int = 3, size: int = 3) -> LCG:
    """``blocks`` independent dense blocks of ``size`` x ``size``: output k of a
    block is ``x[k] * exp(sum of the block's inputs)``.

    >>> from minirad.exact.sparsity import pattern
    >>> pattern(block_diagonal(2, 2)).astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 0, 0],
           [0, 0, 1, 1],
           [0, 0, 1, 1]])
    """
    blocks, size = _size(blocks), _size(size)

    def program(x):
        out = []
        for b in range(blocks):
            members = x[b * size:(b + 1) * size]
            total = members[0]
            for term in members[1:]:
                total = total + term
            shared = ops.exp(total)
            out.extend(m * shared for m in members)
        return out

    return trace(program, _points(blocks * size))


# ---------------------------------------------------------------- arrays
def figure3(injected: bool = False, *, rng=0) -> LCG:
    """The RAD paper's Figure 3a as a traced program: a two-layer ReLU MLP on a batch
    of 3 examples (4 features, 5 hidden units, 2 classes), float32, its loss averaged
    over the batch; each vertex an array, each edge a Jacobian block.  ``injected``:
    its stored activations sampled at k=2 entries per row (Sec. 4.2).

    >>> from minirad import examples
    >>> g = examples.figure3()
    >>> g, g.shape("h1")
    (LCG(6 vertices: 2 inputs, 3 intermediates, 1 output; 5 edges), (3, 5))
    """
    from .randomized.injection import sample_activations
    from .tracing import name, trace
    from .tracing.ops import relu
    from .tracing.rules import softmax_cross_entropy

    r = _rng(rng)
    X = r.standard_normal((3, 4)).astype(np.float32)
    classes = np.array([0, 1, 1])

    def mlp(X, W1, W2):
        h1 = name(X @ W1, "h1")
        a1 = name(relu(h1), "a1")
        h2 = name(a1 @ W2, "h2")
        return softmax_cross_entropy(h2, classes)
    g = trace(mlp, X, r.standard_normal((4, 5)).astype(np.float32),
                     r.standard_normal((5, 2)).astype(np.float32), wrt=[1, 2])
    return sample_activations(g, 2, rng=r) if injected else g


# ------------------------------------------------- elimination beyond vertices
def edge_beats_vertex() -> LCG:
    """A graph on which edge elimination beats every vertex elimination order.

    One input, one output, four intermediates and ten edges::

        x -> a, x -> b, a -> b, a -> c, x -> d, b -> d, c -> d, a -> y, c -> y, d -> y

    Every vertex order costs 7 or 8 multiplications, the best edge sequence
    6 (``eliminate(g, "optimal", on="edges")``): back ``a -> b``, front
    ``x -> b``, back ``d -> y``, front ``a -> c``, front ``x -> a``.  It takes
    ``a``'s out-edge ``a -> b`` first and its in-edge ``x -> a`` last, where a
    vertex order removes all of a vertex's edges in one step.  Found by
    ``minirad.exact.elimination_gaps.search_gap("edges", "vertices", max_edges=10,
    n_graphs=300, rng=1)`` (the 44th random graph it drew; 31,602 random graphs
    with at most 9 edges showed no gap), vertices renamed and the random
    partials replaced by small numbers to check by hand.

    >>> from minirad.exact.elimination import elimination_cost
    >>> g = edge_beats_vertex()
    >>> elimination_cost(g, "optimal")[0], elimination_cost(g, "optimal", on="edges")[0]
    (7, 6)
    """
    edges = [("x", "a", 2.0), ("x", "b", 3.0), ("a", "b", -1.0), ("a", "c", 0.5),
             ("x", "d", 1.5), ("b", "d", 2.0), ("c", "d", -3.0), ("a", "y", 1.0),
             ("c", "y", 4.0), ("d", "y", -0.5)]
    return LCG.from_edges(edges, inputs=["x"], outputs=["y"])
