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

The library is laid out as the course is: :mod:`minirad.graph` (the LCG and
its labels), :mod:`minirad.tracing`, :mod:`minirad.exact`,
:mod:`minirad.randomized`, :mod:`minirad.checkpoint`, :mod:`minirad.implicit`
and :mod:`minirad.draw`; the case studies and the labs live apart in
:mod:`minirad.studies` and :mod:`minirad.labs`.
"""

from . import examples
from .draw import notebook as _notebook
from .draw import plots
from .draw.explore import explore
from .draw.render import render, render_elimination, save_drawing
from .exact.elimination import eliminate, eliminate_vertex, elimination_order
from .exact.jacobians import accumulate, jacobian
from .exact.paths import bauer, count_paths, path_product
from .exact.sweeps import forward_sweep, gradient, jvp, reverse_sweep, vjp
from .gradcheck import gradcheck, numerical_jacobian
from .graph.files import load_graph, save_graph
from .graph.lcg import LCG
from .graph.memory import retained_memory
from .graph.scalarize import scalarize
from .implicit.solves import solve_root
from .randomized.experiments import compare
from .randomized.injection import inject_edge, inject_vertex, injection_variance, sample_activations
from .randomized.sampling import path_sampling_variance, sample_paths, sampled_jacobians
from .tracing import detach, ops, replay, trace
from .tracing.codegen import codegen

# what a student needs, one name per idea; everything else by its module
# (minirad.exact.sweeps, minirad.randomized.injection, ...), as the API reference lists it
__all__ = [
    # the graph: trace a program (and replay it), or build, save and load one
    "LCG", "trace", "replay", "codegen", "detach", "ops", "examples", "save_graph",
    "load_graph", "retained_memory", "scalarize",
    # exact Jacobians
    "jacobian", "accumulate", "forward_sweep", "reverse_sweep", "jvp", "vjp", "gradient",
    "bauer", "count_paths", "path_product", "eliminate", "eliminate_vertex",
    "elimination_order", "gradcheck", "numerical_jacobian", "solve_root",
    # randomized AD
    "sample_paths", "sampled_jacobians", "path_sampling_variance", "compare",
    "inject_vertex", "inject_edge", "sample_activations", "injection_variance",
    # pictures
    "render", "render_elimination", "save_drawing", "plots", "explore",
]
__version__ = "0.1.0"

_notebook.register()  # inside Jupyter, an LCG shows as its drawing (nothing happens elsewhere)
