"""From a Python function to an LCG: :func:`trace`.

* :mod:`~minirad.tracing.ops`: the table of elementary operations, each
  with its rule for numbers and its rule for arrays;
* :mod:`~minirad.tracing.tracer`: the tracer of numbers written plainly, to
  read first: a traced number records its operations with the table;
* :mod:`~minirad.tracing.tape`: the same tracer built for speed (an opcode
  tape), the engine :func:`trace` runs programs of numbers on; the suite
  checks that both give the same graph, bit for bit;
* :mod:`~minirad.tracing.arrays`: the tracer of numpy array programs, whose
  edges carry Jacobian blocks, with the rules of arithmetic, ``@``, ``sum``,
  indexing and joining; the other rules of numpy functions sit beside it, each
  module registering its own: :mod:`~minirad.tracing.reductions` (max, prod,
  var, cumsum, norm, ...), :mod:`~minirad.tracing.contractions` (dot, einsum,
  tensordot, ...), :mod:`~minirad.tracing.linalg` (inv, det, slogdet,
  cholesky) and :mod:`~minirad.tracing.rearrange` (what moves entries: tile,
  repeat, sort, diag, ...); :mod:`~minirad.tracing.catalog` lists them all
  with an example each, and writes ``docs/numpy_support.md``;
* :mod:`~minirad.tracing.naming`: how all three name the vertices;
* :mod:`~minirad.tracing.replay`: a graph traced from an array program run
  again at new inputs, by rerunning the rules the trace recorded
  (:mod:`~minirad.tracing.recording`), without running the program.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..graph.calls import use_tracer
from ..graph.lcg import LCG
from . import contractions, linalg, rearrange, reductions  # noqa: F401 - they register rules
from .arrays import Tracked, trace_on_arrays
from .naming import argument_positions, parameter_names
from .recording import read
from .replay import replay  # noqa: F401 - minirad.tracing.replay is the API
from .tape import Var, trace_on_tape


def trace(f, *args, wrt=None) -> LCG:
    """Run ``f(*args)`` on traced values and return its linearized computational graph.

    Parameters
    ----------
    f : callable
        A Python function of numbers or numpy arrays, written with
        :mod:`minirad.ops` or numpy's own functions.
    *args : float, list of float or numpy.ndarray
        The point to trace at: a number, a list of numbers (a vector: one
        input per element, named ``x[0]``, ``x[1]``, ...) or an array.
    wrt : int or sequence of int, optional
        The positions of the arguments to differentiate by (default: all);
        the others are data, passed to ``f`` as they are, constants inside
        the graph.

    Returns
    -------
    LCG
        One vertex per operation (per array operation when an argument is an
        array), inputs named after ``f``'s parameters and outputs ``y`` (or
        ``y[0]``, ``y[1]``, ... when ``f`` returns several).

    Raises
    ------
    TypeError
        When an argument is neither a number nor an array, or ``f`` calls a
        function minirad has no derivative rule for (the message names it).
    ValueError
        When ``wrt`` names no argument, or a value is not finite.

    See Also
    --------
    minirad.replay : The same graph at another point, without running ``f``.
    minirad.jacobian : Its Jacobian; ``jacobian(f, *args)`` traces first.
    minirad.detach : A value the trace treats as a constant.

    Notes
    -----
    When every argument differentiated is a number or a list of numbers the
    program runs on traced numbers (the opcode tape,
    :mod:`minirad.tracing.tape`): a graph of numbers, one vertex per
    operation.  When one of them is an array it runs on traced arrays
    (:mod:`minirad.tracing.arrays`): one vertex per array operation, a number
    being an array of shape ``()``, and the edges carry Jacobian blocks (the
    RAD paper's vectorized graph, Sec. 3.2).  Control flow follows the
    values (comparisons read them), so the graph is the linearisation along
    the path this call took.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import ops
    >>> trace(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    LCG(7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges)
    >>> g = trace(lambda X, w, s: ops.tanh(X @ w * s).sum(), np.ones((4, 3)), np.ones(3), 0.5,
    ...           wrt=[1, 2])                      # X is data; s is a vertex of shape ()
    >>> [g.shape(v) for v in g.inputs], g.names[g.outputs[0]]
    ([(3,), ()], 'y')
    """
    wrt = argument_positions(wrt, len(args))
    names = parameter_names(f, len(args))
    if all(_numbers(args[i]) for i in wrt):
        return trace_on_tape(f, args, wrt, names)
    return trace_on_arrays(f, args, wrt, names)


use_tracer(trace)  # every public function on a graph also takes a function and its point


def _numbers(arg) -> bool:
    """Whether ``arg`` is for the tracer of numbers: anything but an array, a nested
    sequence or other array-like (whose errors, if any, that tracer reports)."""
    if isinstance(arg, np.ndarray):
        return False
    if isinstance(arg, (list, tuple)):
        return all(isinstance(x, Real) or not hasattr(x, "__len__") for x in arg)
    return not hasattr(arg, "__array__") or isinstance(arg, np.generic)


def detach(x):
    """The plain value of a traced number or array: a constant from here on.

    No derivative flows through what ``detach`` returns: use it on purpose
    only, for a value the derivative should not see (a stopped gradient).

    Parameters
    ----------
    x : object
        A traced number or array, or anything else (returned unchanged).

    Returns
    -------
    object
        The number or array ``x`` holds.

    See Also
    --------
    minirad.trace : What makes traced values.

    Examples
    --------
    >>> from minirad import jacobian
    >>> jacobian(lambda x: x * detach(x), 3.0)   # d/dx of x*x would be 6
    array([[3.]])
    """
    if isinstance(x, Tracked):   # a value read: replay checks it is still the same
        return read(_value, x)
    return x.value if isinstance(x, Var) else x


def _value(x):
    return x
