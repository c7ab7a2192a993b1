"""One entry point for every exact way of getting a Jacobian.

``jacobian(g)`` reads an LCG; ``jacobian(f, *args)`` traces ``f`` at
``args`` first.  ``method`` picks the algorithm:

* ``"bauer"``: the sum over paths of path products (:mod:`minirad.exact.paths`);
* ``"forward"``: one forward sweep per input (:mod:`minirad.exact.sweeps`);
* ``"reverse"``: one reverse sweep per output (the default);
* ``"eliminate"``: vertex elimination in the given ``order``
  (:mod:`minirad.exact.elimination`).

All four give the same matrix up to rounding, on a graph of numbers and
on one with arrays alike (rows and columns then the array entries in C
order); they differ in cost, which :func:`accumulate` reports alongside the
Jacobian.

>>> from minirad import examples
>>> jacobian(examples.lab_program, 2.0, 3.0).tolist()
[[2.5838531634528574, 2.0]]
>>> [accumulate(examples.figure1(), method=m).multiplications
...  for m in ("bauer", "forward", "reverse")]
[8, 9, 8]
"""

from __future__ import annotations

import numpy as np

from ..graph.calls import takes_graph_or_function
from ..graph.lcg import LCG
from .elimination import eliminate
from .paths import DEFAULT_MAX_PATHS, DEFAULT_MAX_PRODUCTS, bauer
from .result import Accumulation
from .sweeps import forward_sweep, reverse_sweep

METHODS = ("bauer", "forward", "reverse", "eliminate")


@takes_graph_or_function
def accumulate(g: LCG, *, method: str = "reverse", order=None, max_paths=None,
               keep_values: bool = True, max_products=None,
               max_intermediates=None) -> Accumulation:
    """The Jacobian with its operation counts.

    Returns an :class:`~minirad.exact.result.Accumulation`: ``jacobian``,
    ``method``, ``order`` (the elimination order, None for the other
    methods), ``multiplications`` and ``additions``; for ``"eliminate"`` it
    is an :class:`~minirad.exact.elimination.Elimination`, which also keeps the
    final graph and the steps.  ``order`` (default ``"markowitz"``)
    and ``max_intermediates`` (the limit of the optimal order's search) apply only
    to elimination, ``max_paths`` (default 1,000,000) and ``max_products`` (the
    multiplications along them, default 10,000,000) only to Bauer's formula;
    passing any with another method is an error.
    Sweeps keep their per-vertex tangents or adjoints unless
    ``keep_values=False``.

    >>> from minirad import examples
    >>> r = accumulate(examples.lecture(), method="forward")
    >>> r.jacobian.round(3), r.multiplications, r.additions
    (array([[5.5  , 1.716]]), 10, 2)
    >>> accumulate(examples.lecture(), method="sideways")
    Traceback (most recent call last):
    ...
    ValueError: unknown method 'sideways'; valid methods are 'bauer', 'forward', ...
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods are "
                         f"{', '.join(map(repr, METHODS))}")
    for name, value in (("order", order), ("max_intermediates", max_intermediates)):
        if value is not None and method != "eliminate":
            raise ValueError(f"{name}={value!r} applies only to method='eliminate', not "
                             f"method={method!r}")
    for name, value in (("max_paths", max_paths), ("max_products", max_products)):
        if value is not None and method != "bauer":
            raise ValueError(f"{name}={value!r} applies only to method='bauer', not "
                             f"method={method!r}")
    if method == "bauer":
        return bauer(g, DEFAULT_MAX_PATHS if max_paths is None else max_paths,
                     DEFAULT_MAX_PRODUCTS if max_products is None else max_products)
    if method == "forward":
        return forward_sweep(g, keep_values=keep_values)
    if method == "reverse":
        return reverse_sweep(g, keep_values=keep_values)
    result = eliminate(g, "markowitz" if order is None else order,
                       max_intermediates=max_intermediates)
    if result.jacobian is None:
        left = len(g.intermediates) - len(result.order)
        raise ValueError(f"the order eliminates {len(result.order)} of the graph's "
                         f"{len(g.intermediates)} intermediates, so {left} remain and there is "
                         f"no Jacobian yet; list every intermediate or use a named order")
    # one result type whatever the method: eliminate() itself keeps the graphs and steps
    return Accumulation(result.jacobian, result.multiplications, result.additions,
                        "eliminate", order=result.order, shapes=result.shapes)


@takes_graph_or_function
def jacobian(g: LCG, *, method: str = "reverse", order=None, max_paths=None,
             max_products=None, max_intermediates=None) -> np.ndarray:
    """The Jacobian of an LCG, or of a function traced at ``args``.

    Shape ``(n_outputs, n_inputs)``, rows and columns in the graph's output
    and input order (for a traced function: its results and its arguments
    in order, arrays element by element).  See :func:`accumulate` for the
    arguments and for the operation counts.

    >>> from minirad import examples
    >>> for method in ("bauer", "forward", "reverse", "eliminate"):
    ...     print(method, jacobian(examples.lecture(), method=method).round(3))
    bauer [[5.5   1.716]]
    forward [[5.5   1.716]]
    reverse [[5.5   1.716]]
    eliminate [[5.5   1.716]]
    >>> jacobian(lambda x: x[0] * x[1], [3.0, 4.0], method="forward")
    array([[4., 3.]])

    A graph of arrays (:func:`minirad.trace` of an array program) gives the same matrix, its
    rows and columns the array entries in C order:

    >>> import numpy as np
    >>> from minirad import trace
    >>> jacobian(trace(lambda x: x[0] * x[1], np.array([3.0, 4.0])), method="eliminate")
    array([[4., 3.]])
    >>> jacobian(lambda W, x: W @ x, np.eye(2), np.array([1.0, 2.0]))   # dy/dW, dy/dx
    array([[1., 2., 0., 0., 1., 0.],
           [0., 0., 1., 2., 0., 1.]])
    """
    # only the matrix is wanted, so sweeps need not hold every vertex's values
    return accumulate(g, method=method, order=order, max_paths=max_paths,
                      keep_values=False, max_products=max_products,
                      max_intermediates=max_intermediates).jacobian
