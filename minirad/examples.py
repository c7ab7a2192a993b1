"""Named graphs and programs used throughout the docs, labs and tests.

>>> from minirad import examples
>>> examples.figure1()
LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
>>> round(examples.lecture().value("y"), 3)
11.652
"""

from __future__ import annotations

import numpy as np

from . import ops
from .graph import LCG
from .trace import trace


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


def _rng(rng):
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise ValueError(f"rng must be a numpy.random.Generator or an integer seed, not "
                     f"{type(rng).__name__}")


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
