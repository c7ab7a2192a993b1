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
from .draw import notebook as display
from .draw import plots
from .draw.render import draw_matplotlib, render, render_elimination, save
from .exact import compressed, elimination, paths, sparsity, sweeps
from .exact.elimination import Elimination, Step, eliminate, eliminate_vertex, elimination_order
from .exact.jacobians import accumulate, jacobian
from .exact.paths import bauer, count_paths, path_jacobian, path_product
from .exact.result import Accumulation
from .exact.sweeps import forward_sweep, jvp, reverse_sweep, vjp
from .gradcheck import GradcheckReport, gradcheck, numerical_jacobian
from .graph import labels, operators
from .graph.files import load_graph, save_graph
from .graph.lcg import LCG
from .graph.memory import Memory, memory
from .graph.operators import OPERATORS
from .graph.scalarize import scalarize
from .implicit import solves as implicit
from .implicit.solves import solve_root
from .randomized import experiments, injection, sampling
from .randomized.experiments import Comparison, compare
from .randomized.injection import (
    inject_edge,
    inject_vertex,
    injection_variance,
    sample_activations,
)
from .randomized.sampling import PathSample, path_sampling_variance, sample_paths, sampled_jacobians
from .tracing import arrays as array_trace
from .tracing import detach, ops, replay, trace
from .tracing.tape import Var

__all__ = [
    "LCG", "Var", "trace", "replay", "detach", "ops", "examples", "save_graph", "load_graph",
    # exact Jacobians
    "jacobian", "accumulate", "Accumulation", "forward_sweep", "reverse_sweep", "jvp", "vjp",
    "bauer", "count_paths", "path_jacobian", "path_product", "paths",
    "eliminate", "eliminate_vertex", "elimination_order", "Elimination", "Step", "elimination",
    "gradcheck", "numerical_jacobian", "GradcheckReport",
    # randomized AD
    "sample_paths", "PathSample", "sampled_jacobians", "compare", "Comparison",
    "path_sampling_variance", "injection_variance",
    "sampling", "injection", "sweeps", "experiments", "labels",
    # pictures
    "render", "render_elimination", "draw_matplotlib", "save", "plots",
    # the vector LCG (arrays and Jacobian blocks)
    "LCG", "OPERATORS", "memory", "Memory", "scalarize",
    "inject_vertex", "inject_edge", "sample_activations",
    "operators", "array_trace",
    # sparsity and colouring; implicit operators (solves, roots)
    "sparsity", "compressed", "implicit", "solve_root",
]
__version__ = "0.1.0"

display.register()  # inside Jupyter, an LCG shows as its drawing (nothing happens elsewhere)
