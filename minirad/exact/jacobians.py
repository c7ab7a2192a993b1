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

from ..graph.lcg import LCG, takes_graph_or_function
from .elimination import eliminate
from .paths import DEFAULT_MAX_PATHS, DEFAULT_MAX_PRODUCTS, bauer
from .result import Accumulation
from .sweeps import forward_sweep, reverse_jacobian, reverse_sweep

__all__ = ["METHODS", "accumulate", "jacobian"]

METHODS = ("bauer", "forward", "reverse", "eliminate")


@takes_graph_or_function
def accumulate(g: LCG, *, method: str = "reverse", order=None, on=None, max_paths=None,
               keep_values: bool = True, max_products=None,
               max_intermediates=None) -> Accumulation:
    """The Jacobian of ``g`` with the multiplications and additions it took.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (``jacobian(f, 2.0, 5.0, method="forward")``).
    method : {"reverse", "forward", "bauer", "eliminate"}, optional
        The algorithm (:data:`METHODS`): one reverse sweep per output (the
        default), one forward sweep per input, Bauer's sum over paths, or
        elimination.
    order : str or list, optional
        With ``method="eliminate"``: the elimination order (default
        ``"markowitz"``; see :func:`minirad.eliminate`).
    on : {"vertices", "edges", "faces"}, optional
        With ``method="eliminate"``: what is eliminated (default ``"vertices"``).
    max_paths : int, optional
        With ``method="bauer"``: the most paths it enumerates (default 1,000,000).
    keep_values : bool, optional
        Whether a sweep keeps every vertex's tangents or adjoints (default True).
    max_products : int, optional
        With ``method="bauer"``: the most multiplications along those paths
        (default 10,000,000).
    max_intermediates : int, optional
        With ``order="optimal"``: raise or lower the limit of the exhaustive
        search, in intermediates.

    Returns
    -------
    Accumulation
        ``jacobian`` (shape ``(n_outputs, n_inputs)``), ``method``, ``order``
        (the steps an elimination took, None for the other methods),
        ``multiplications`` and ``additions``; whatever the method, one type.

    Raises
    ------
    ValueError
        For an unknown method, an option given with a method it does not apply
        to, an order that stops before the Jacobian, more paths or products
        than allowed, or a Jacobian that overflows (``AccumulationOverflow``).
    TypeError
        When ``g`` is neither an LCG nor a function with a point.

    See Also
    --------
    jacobian : The matrix alone.
    minirad.eliminate : Elimination with its graphs and steps.
    minirad.exact.sweeps.forward_sweep : A sweep with its per-vertex values.

    Notes
    -----
    Every method computes the same matrix up to rounding, on a graph of numbers
    and on one with arrays alike; they differ in cost, counted by the cost
    convention of :mod:`minirad.exact.elimination` and :mod:`minirad.exact.sweeps`
    (Griewank and Walther, *Evaluating Derivatives*, 2nd ed., 2008, Ch. 3 and 9).

    Examples
    --------
    >>> from minirad import examples
    >>> r = accumulate(examples.lecture(), method="forward")
    >>> r.jacobian.round(3), r.multiplications, r.additions
    (array([[5.5  , 1.716]]), 10, 2)
    >>> accumulate(examples.figure1(), method="eliminate", order="optimal").multiplications
    5
    >>> accumulate(examples.lecture(), method="sideways")
    Traceback (most recent call last):
    ...
    ValueError: unknown method 'sideways'; valid methods are 'bauer', 'forward', ...
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; valid methods are "
                         f"{', '.join(map(repr, METHODS))}")
    for name, value in (("order", order), ("on", on),
                        ("max_intermediates", max_intermediates)):
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
                       on="vertices" if on is None else on,
                       max_intermediates=max_intermediates)
    if result.jacobian is None:
        if result.on == "vertices":
            left = len(g.intermediates) - len(result.order)
            raise ValueError(f"the order eliminates {len(result.order)} of the graph's "
                             f"{len(g.intermediates)} intermediates, so {left} remain and there "
                             f"is no Jacobian yet; list every intermediate or use a named order")
        raise ValueError(f"the order stops after {len(result.order)} steps on {result.on}, "
                         f"with intermediates left and no Jacobian yet; complete it or use a "
                         f"named order")
    # one result type whatever the method: eliminate() itself keeps the graphs and steps
    return Accumulation(result.jacobian, result.multiplications, result.additions,
                        "eliminate", order=result.order, shapes=result.shapes)


@takes_graph_or_function
def jacobian(g: LCG, *, method: str = "reverse", order=None, on=None, max_paths=None,
             max_products=None, max_intermediates=None) -> np.ndarray:
    """The Jacobian of an LCG, or of a function traced at a point, by any exact method.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (``jacobian(f, 2.0, 5.0, method="forward")``).
    method : {"reverse", "forward", "bauer", "eliminate"}, optional
        The algorithm (default ``"reverse"``); see :func:`accumulate`.
    order : str or list, optional
        With ``method="eliminate"``: the elimination order.
    on : {"vertices", "edges", "faces"}, optional
        With ``method="eliminate"``: what is eliminated.
    max_paths : int, optional
        With ``method="bauer"``: the most paths it enumerates.
    max_products : int, optional
        With ``method="bauer"``: the most multiplications along them.
    max_intermediates : int, optional
        With ``order="optimal"``: the limit of the exhaustive search.

    Returns
    -------
    numpy.ndarray
        Shape ``(n_outputs, n_inputs)``, float64, rows and columns in the
        graph's output and input order (for a traced function: its results and
        its arguments in order, arrays entry by entry in C order).

    Raises
    ------
    ValueError
        As :func:`accumulate` raises.
    TypeError
        When ``g`` is neither an LCG nor a function with a point.

    See Also
    --------
    accumulate : The Jacobian with its operation counts.
    minirad.gradient : The gradient of a graph with one number as output.
    minirad.sampled_jacobians : Unbiased estimates of it (randomized AD).

    Examples
    --------
    >>> from minirad import examples
    >>> for method in ("bauer", "forward", "reverse", "eliminate"):
    ...     print(method, jacobian(examples.lecture(), method=method).round(3))
    bauer [[5.5   1.716]]
    forward [[5.5   1.716]]
    reverse [[5.5   1.716]]
    eliminate [[5.5   1.716]]
    >>> jacobian(lambda x: x[0] * x[1], [3.0, 4.0], method="forward")
    array([[4., 3.]])

    A graph of arrays gives the same matrix, its rows and columns the array
    entries in C order:

    >>> import numpy as np
    >>> jacobian(lambda W, x: W @ x, np.eye(2), np.array([1.0, 2.0]))   # dy/dW, dy/dx
    array([[1., 2., 0., 0., 1., 0.],
           [0., 0., 1., 2., 0., 1.]])
    """
    if method == "reverse" and order is on is max_paths is max_products is max_intermediates \
            is None:
        return reverse_jacobian(g)    # the matrix alone: no counts, no values kept
    return accumulate(g, method=method, order=order, on=on, max_paths=max_paths,
                      keep_values=False, max_products=max_products,
                      max_intermediates=max_intermediates).jacobian
