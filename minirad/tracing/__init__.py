"""From a Python function to an LCG: :func:`trace`, and back again: :func:`replay`.

* :mod:`~minirad.tracing.tracer`: the tracer, for numbers and arrays alike; read it
  first;
* :mod:`~minirad.tracing.ops`: the table of elementwise operations, each with its
  rule for numbers and for arrays;
* :mod:`~minirad.tracing.rules`: the rules of numpy's other array operations
  (``@``, ``sum``, indexing, joining, ...) and the map from numpy's names to rules;
  the modules beside it add more, each registering its own:
  :mod:`~minirad.tracing.reductions` (max, prod, var, cumsum, norm, ...),
  :mod:`~minirad.tracing.contractions` (dot, einsum, tensordot, ...),
  :mod:`~minirad.tracing.linalg` (inv, det, slogdet, cholesky) and
  :mod:`~minirad.tracing.rearrange` (tile, repeat, sort, diag, ...);
* :mod:`~minirad.tracing.naming`: how a trace names its vertices;
* :mod:`~minirad.tracing.replay`: a traced graph run again at new inputs, from its
  tape, without running the program;
* :mod:`~minirad.tracing.codegen`: the same tape written out as a Python program, its
  forward, tangent or adjoint code, written by :mod:`~minirad.tracing.writer` into a
  :mod:`~minirad.tracing.program` from the rules' formulas as source
  (:mod:`~minirad.tracing.sources`).
"""

from ..graph.lcg import use_tracer

# rules and the modules beside it fill the table of numpy's names
from . import contractions, linalg, ops, rearrange, reductions, rules  # noqa: F401
from .replay import replay
from .rules import register, supported
from .tracer import detach, name, trace

__all__ = ["detach", "name", "ops", "register", "replay", "supported", "trace"]

use_tracer(trace)  # every public function on a graph also takes a function and its point
