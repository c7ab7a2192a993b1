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
"""

from . import ops
from .graph import LCG
from .trace import Var, trace

__all__ = ["LCG", "Var", "ops", "trace"]
__version__ = "0.1.0"
