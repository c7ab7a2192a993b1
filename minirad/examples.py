"""Named graphs and programs used throughout the docs, labs and tests.

>>> from minirad import examples
>>> examples.figure1()
LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
>>> round(examples.lecture().value("y"), 3)
11.652
"""

from __future__ import annotations

import numpy as np

from .graph.lcg import LCG
from .randomized.layered import layer_names
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


def independent_paths(width: int, depth: int, partials=None, rng=None) -> LCG:
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


def interleaved(width: int, depth: int, partials=None, rng=None) -> LCG:
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
def random_layered(width: int, depth: int, degree: int, rng=None) -> LCG:
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
def figure3(injected: bool = False, rng=0) -> LCG:
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
    from .tracing import trace
    from .tracing.arrays import name, softmax_cross_entropy
    from .tracing.ops import relu

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
