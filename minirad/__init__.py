"""minirad: automatic differentiation as graph computation.

Trace a Python function into a linearized computational graph (LCG), get
its Jacobian every exact way (Bauer's path sum, forward and reverse sweeps,
vertex elimination), estimate it with randomized AD (path sampling, random
matrix injection), and draw it.

>>> import minirad
>>> from minirad import ops
>>> g = minirad.trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
>>> g.n_vertices, g.n_edges
(7, 8)
>>> minirad.jacobian(g).round(3)
array([[5.5  , 1.716]])

``minirad.trace``, ``minirad.jacobian`` and ``minirad.render`` are modules
that can be called as their main function, so both ``minirad.render(g)``
and ``minirad.render.has_dot()`` work (see ``minirad/_callable.py``).
"""

from . import (
    array_trace,
    blocks,
    compressed,
    display,
    elimination,
    examples,
    experiments,
    implicit,
    injection,
    jacobian,
    labels,
    layered,
    operators,
    ops,
    paths,
    plots,
    render,
    sampling,
    sparsity,
    sweeps,
    trace,
    vinject,
)
from .accumulation import Accumulation
from .array_trace import trace_arrays
from .elimination import Elimination, Step, eliminate, eliminate_vertex, elimination_order
from .experiments import Comparison, compare
from .gradcheck import GradcheckReport, gradcheck, numerical_jacobian
from .graph import LCG
from .implicit import solve_root
from .injection import inject, injected_products, injection_variance
from .jacobian import accumulate
from .operators import OPERATORS
from .paths import bauer, count_paths, path_jacobian, path_product
from .render import draw_matplotlib, render_elimination, save
from .sampling import PathSample, path_sampling_variance, sample_paths, sampled_jacobians
from .sweeps import forward_sweep, jvp, reverse_sweep, vjp
from .trace import Var, detach
from .vfile import load_vector, save_vector
from .vgraph import Memory, VectorLCG, memory, scalarize
from .vinject import inject_edge, inject_vertex, sample_activations
from .vrender import render_vector, save_vector_picture

__all__ = [
    "LCG", "Var", "trace", "detach", "ops", "examples",
    # exact Jacobians
    "jacobian", "accumulate", "Accumulation", "forward_sweep", "reverse_sweep", "jvp", "vjp",
    "bauer", "count_paths", "path_jacobian", "path_product", "paths",
    "eliminate", "eliminate_vertex", "elimination_order", "Elimination", "Step", "elimination",
    "gradcheck", "numerical_jacobian", "GradcheckReport",
    # randomized AD
    "sample_paths", "PathSample", "sampled_jacobians", "compare", "Comparison",
    "path_sampling_variance", "inject", "injected_products", "injection_variance",
    "sampling", "injection", "sweeps", "experiments", "labels", "layered",
    # pictures
    "render", "render_elimination", "draw_matplotlib", "save", "plots",
    # the vector LCG (arrays and Jacobian blocks)
    "VectorLCG", "trace_arrays", "OPERATORS", "memory", "Memory", "scalarize",
    "save_vector", "load_vector", "inject_vertex", "inject_edge", "sample_activations",
    "render_vector", "save_vector_picture", "operators", "blocks", "array_trace", "vinject",
    # sparsity and colouring; implicit operators (solves, roots)
    "sparsity", "compressed", "implicit", "solve_root",
]
__version__ = "0.1.0"

display.register()  # inside Jupyter, an LCG shows as its drawing (nothing happens elsewhere)
