"""Finite differences, and checking minirad's Jacobians against them.

Differentiation by definition needs no graph at all: nudge an input by
``h`` and watch the output move.  The forward difference
``(f(x + h) - f(x)) / h`` has truncation error O(h); the central difference
``(f(x + h) - f(x - h)) / (2h)`` has O(h^2).  Both also suffer rounding
error of order ``eps * |f| / h``, which grows as ``h`` shrinks, so the total
error first falls and then rises again; the best ``h`` is near
``eps ** (1/2)`` (forward) or ``eps ** (1/3)`` (central), scaled by ``|x|``.

Finite differences are too slow and too inexact to compute gradients with,
but they are independent of everything minirad does, which makes them the
right referee for a gradient check: :func:`gradcheck` compares the Jacobian
from any of minirad's methods with a central-difference Jacobian, entry by
entry and along random directions.

>>> import math
>>> round(central_difference(math.exp, 1.0), 8) == round(math.e, 8)
True
>>> from minirad import examples
>>> gradcheck(examples.lecture_program, 2.0, 5.0).passed
True

Array programs are checked the same way, entry by entry:

>>> import numpy as np
>>> gradcheck(lambda W, x: np.tanh(W @ x), np.ones((2, 3)) / 4, np.arange(3.0)).passed
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from .exact.jacobians import jacobian
from .exact.result import entry_name
from .graph.lcg import LCG
from .rng import as_generator
from .tracing import trace

_EPS = np.finfo(np.float64).eps
SCHEMES = ("central", "forward")


# ------------------------------------------------------------ scalar rules
def _check_step(h) -> float:
    if isinstance(h, bool) or not isinstance(h, Real) or not (math.isfinite(h) and h > 0):
        raise ValueError(f"the step h must be a positive finite number, got {h!r}")
    return float(h)


def central_difference(f, x: float, h: float = 1e-5):
    """``(f(x + h) - f(x - h)) / (2h)``: error O(h^2) plus rounding O(eps/h).

    ``f`` maps a float to a float (or to an array, differenced elementwise).

    >>> round(central_difference(lambda t: t ** 3, 2.0, h=1e-3), 9)  # 12 + h^2
    12.000001
    """
    h = _check_step(h)
    return (f(x + h) - f(x - h)) / (2 * h)


def forward_difference(f, x: float, h: float = 1e-8):
    """``(f(x + h) - f(x)) / h``: error O(h) plus rounding O(eps/h).

    >>> round(forward_difference(lambda t: t * t, 3.0, h=1e-3), 6)  # 6 + h
    6.001
    """
    h = _check_step(h)
    return (f(x + h) - f(x)) / h


# ---------------------------------------------- functions of many arguments
def _check_function(f) -> None:
    if isinstance(f, LCG):
        raise TypeError("finite differences need the function itself and a point, e.g. "
                        "gradcheck(f, 2.0, 5.0), not an LCG (a graph cannot be re-evaluated)")
    if not callable(f):
        raise TypeError(f"f must be a function, not {type(f).__name__}")


def _flatten_args(args) -> tuple[np.ndarray, list]:
    """The arguments as one float vector, plus the shape of each argument
    (None for a scalar, else the container type and shape) to rebuild them.
    A numpy array may have any shape (its entries in C order); a list or
    tuple is a 1-D sequence of numbers."""
    if not args:
        raise ValueError("f needs at least one argument to differentiate with respect to")
    pieces, layout = [], []
    for position, arg in enumerate(args):
        if isinstance(arg, Real) and not isinstance(arg, bool):
            pieces.append([float(arg)])
            layout.append(None)
            continue
        if isinstance(arg, (str, bytes)) or not hasattr(arg, "__len__"):
            raise TypeError(f"argument {position} is a {type(arg).__name__}; finite "
                            f"differences take floats or 1-D sequences of floats")
        try:
            array = np.asarray(arg, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"argument {position} is not an array of numbers; finite "
                            f"differences take floats, 1-D sequences of floats and numpy "
                            f"arrays") from None
        if array.ndim != 1 and not isinstance(arg, np.ndarray):
            raise TypeError(f"argument {position} has shape {array.shape}; finite "
                            f"differences take floats, 1-D sequences of floats and numpy "
                            f"arrays (pass np.array(...) for an array of this shape)")
        pieces.append(array.reshape(-1).tolist())
        layout.append((type(arg), array.shape))
    x = np.array([v for piece in pieces for v in piece], dtype=np.float64)
    if not np.all(np.isfinite(x)):
        raise ValueError("the arguments contain non-finite values")
    return x, layout


def _rebuild(x: np.ndarray, layout: list) -> tuple:
    args, at = [], 0
    for item in layout:
        if item is None:
            args.append(float(x[at]))
            at += 1
            continue
        kind, shape = item
        length = math.prod(shape)
        values = x[at:at + length]
        at += length
        if issubclass(kind, np.ndarray):
            args.append(values.reshape(shape))
        elif kind is tuple:
            args.append(tuple(values.tolist()))
        else:
            args.append(values.tolist())
    return tuple(args)


def _outputs(result) -> np.ndarray:
    """A function's result (a number, an array, or a tuple/list of them) as one
    float vector: every output's entries in C order, one output after another."""
    parts = result if isinstance(result, (tuple, list)) else [result]
    pieces = []
    for part in parts:
        if isinstance(part, bool) or not isinstance(part, (Real, np.ndarray, np.generic)):
            raise TypeError(f"f returned a {type(part).__name__}; expected a number, an array "
                            f"or a tuple/list of them")
        pieces.append(np.asarray(part, dtype=np.float64).reshape(-1))
    values = np.concatenate(pieces) if pieces else np.zeros(0)
    if not np.all(np.isfinite(values)):
        raise ValueError("f returned non-finite values near the point; finite differences "
                         "need f to be finite in a neighbourhood")
    return values


def _steps(x: np.ndarray, h, scheme: str) -> np.ndarray:
    if h is not None:
        return np.full(len(x), _check_step(h))
    power = 1 / 3 if scheme == "central" else 1 / 2
    return _EPS ** power * np.maximum(1.0, np.abs(x))


def numerical_jacobian(f, *args, h=None, scheme: str = "central") -> np.ndarray:
    """The finite-difference Jacobian of ``f`` at ``args``, one coordinate at a time.

    Parameters
    ----------
    f : callable
        Takes floats, 1-D sequences of floats and numpy arrays of any shape, and
        returns a number, an array or a tuple or list of them; it is called on
        plain floats and arrays (no tracing).
    *args : float, list of float or numpy.ndarray
        The point.
    h : float, optional
        The step; by default ``eps ** (1/3) * max(1, |x_i|)`` (central) or
        ``eps ** (1/2) * max(1, |x_i|)`` (forward) per coordinate.
    scheme : {"central", "forward"}, optional
        The difference formula (default ``"central"``).

    Returns
    -------
    numpy.ndarray
        Shape ``(n_outputs, n_inputs)``, rows and columns the entries in order
        (arrays in C order), as the Jacobians of minirad.

    Raises
    ------
    ValueError
        For an unknown scheme, or a step that is not a positive finite number.
    TypeError
        When ``f`` is not callable.

    See Also
    --------
    gradcheck : minirad's Jacobian against this one.

    Notes
    -----
    The central difference ``(f(x + h e_i) - f(x - h e_i)) / 2h`` has error
    ``O(h**2)``, the forward one ``O(h)``; both divide by the step actually
    taken, which removes the representation error of ``x + h``.

    Examples
    --------
    >>> from minirad import examples
    >>> numerical_jacobian(examples.lab_program, 2.0, 3.0).round(6)
    array([[2.583853, 2.      ]])
    """
    _check_function(f)
    if scheme not in SCHEMES:
        raise ValueError(f"unknown scheme {scheme!r}; valid schemes are "
                         f"{', '.join(map(repr, SCHEMES))}")
    x, layout = _flatten_args(args)
    base = _outputs(f(*args)) if scheme == "forward" else None
    columns = []
    for i, step in enumerate(_steps(x, h, scheme)):
        up = x.copy()
        up[i] += step
        if scheme == "central":
            down = x.copy()
            down[i] -= step
            # dividing by the step actually taken removes the representation error of x + h
            columns.append((_outputs(f(*_rebuild(up, layout)))
                            - _outputs(f(*_rebuild(down, layout)))) / (up[i] - down[i]))
        else:
            columns.append((_outputs(f(*_rebuild(up, layout))) - base) / (up[i] - x[i]))
    return np.column_stack(columns)


def directional_difference(f, args, direction, h=None) -> np.ndarray:
    """Central difference of ``f`` at ``args`` along ``direction``: about ``J @ direction``.

    ``args`` is the tuple of arguments; ``direction`` has one entry per
    flattened input.  ``h=None`` picks ``eps ** (1/3) * max(1, max |x_i|)``.

    >>> from minirad import examples
    >>> directional_difference(examples.lab_program, (2.0, 3.0), [0.0, 1.0]).round(8)
    array([2.])
    """
    x, layout = _flatten_args(tuple(args))
    d = np.asarray(direction, dtype=np.float64)
    if d.shape != x.shape or not np.all(np.isfinite(d)):
        raise ValueError(f"direction must be {len(x)} finite numbers (one per input), got "
                         f"shape {d.shape}")
    step = (_check_step(h) if h is not None
            else _EPS ** (1 / 3) * max(1.0, float(np.max(np.abs(x)))))
    up = _outputs(f(*_rebuild(x + step * d, layout)))
    down = _outputs(f(*_rebuild(x - step * d, layout)))
    return (up - down) / (2 * step)


def random_directions(n: int, count: int, *, rng=None) -> np.ndarray:
    """``count`` directions drawn uniformly from the unit sphere in R^n, one per row.

    >>> d = random_directions(3, 2, rng=0)
    >>> d.shape, np.allclose(np.linalg.norm(d, axis=1), 1.0)
    ((2, 3), True)
    """
    for name, value in (("n", n), ("count", count)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    if n == 0 and count:
        raise ValueError("there are no directions in R^0")
    # a standard normal vector is isotropic, so its normalisation is uniform on the sphere
    draws = as_generator(rng).standard_normal((count, n))
    return draws / np.linalg.norm(draws, axis=1, keepdims=True)


# ---------------------------------------------------------------- the check
@dataclass(frozen=True, eq=False)
class GradcheckReport:
    """What :func:`gradcheck` found.

    ``jacobian`` is minirad's, ``numerical`` the central-difference one;
    ``abs_error`` and ``rel_error`` (relative to the larger of the two
    entries) are per entry.  ``worst`` names the entry furthest beyond (or
    closest to) its tolerance as ``(output, input)``.  ``directional_error``
    holds, per random direction, the largest abs error of ``J @ d`` against
    the directional difference.
    """

    method: str
    jacobian: np.ndarray
    numerical: np.ndarray
    abs_error: np.ndarray
    rel_error: np.ndarray
    directional_error: np.ndarray
    worst: tuple[str, str] | None
    passed: bool
    rtol: float
    atol: float

    @property
    def max_abs_error(self) -> float:
        return float(self.abs_error.max()) if self.abs_error.size else 0.0

    @property
    def max_rel_error(self) -> float:
        return float(self.rel_error.max()) if self.rel_error.size else 0.0

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        return (f"GradcheckReport({verdict}, method={self.method!r}, shape "
                f"{self.jacobian.shape}, max abs error {self.max_abs_error:.3g}, max rel "
                f"error {self.max_rel_error:.3g})")


def gradcheck(f, *args, method: str = "reverse", order=None, on=None, h=None,
              rtol: float = 1e-5, atol: float = 1e-6, n_directions: int = 2,
              raise_on_failure: bool = True, rng=None) -> GradcheckReport:
    """Check minirad's Jacobian of ``f`` at ``args`` against finite differences.

    Parameters
    ----------
    f : callable
        A Python function of numbers or arrays, as :func:`minirad.trace` takes.
    *args : float, list of float or numpy.ndarray
        The point to check at.
    method : {"reverse", "forward", "bauer", "eliminate"}, optional
        The exact method whose Jacobian is checked (default ``"reverse"``).
    order : str or list, optional
        With ``method="eliminate"``: the elimination order.
    on : {"vertices", "edges", "faces"}, optional
        With ``method="eliminate"``: what is eliminated.
    h : float, optional
        The finite-difference step (default: chosen per coordinate, see
        :func:`numerical_jacobian`).
    rtol : float, optional
        The relative tolerance (default 1e-5).
    atol : float, optional
        The absolute tolerance (default 1e-6).
    n_directions : int, optional
        How many random unit directions ``d`` to check ``J @ d`` along (default 2).
    raise_on_failure : bool, optional
        Raise on a mismatch (default); with False the report says ``passed=False``.
    rng : numpy.random.Generator or int, optional
        The generator of the random directions (or a seed).

    Returns
    -------
    GradcheckReport
        ``passed``, the method, the two Jacobians, the largest absolute and
        relative errors and the worst entry.

    Raises
    ------
    ValueError
        On a mismatch (naming the worst entry and both values), unless
        ``raise_on_failure=False``; for a tolerance or ``n_directions`` out of
        range, or an ``f`` whose Jacobian has another shape on floats than
        traced.
    TypeError
        When ``f`` is not callable.

    See Also
    --------
    numerical_jacobian : The finite-difference side of the check.
    minirad.jacobian : The exact side.

    Notes
    -----
    Entry by entry ``|J - N| <= atol + rtol * |N|`` with ``N`` the central
    difference Jacobian, and along each direction ``d`` the directional
    difference against ``J @ d`` to the same tolerance.  A step of about
    ``eps ** (1/3)`` balances the truncation error ``O(h**2)`` against rounding
    ``O(eps / h)`` (lab 1; Griewank and Walther, 2008, Sec. 1.2).

    Examples
    --------
    >>> from minirad import ops
    >>> gradcheck(lambda x, y: (x * y, ops.exp(x) / y), 0.5, 2.0, method="forward")
    GradcheckReport(passed, method='forward', shape (2, 2), max abs error ..., max rel error ...)
    >>> from minirad import detach
    >>> cut = lambda x: x * detach(x)  # detach makes x a constant: the trace misses a term
    >>> gradcheck(cut, 3.0, raise_on_failure=False).passed
    False
    >>> gradcheck(cut, 3.0)
    Traceback (most recent call last):
    ...
    ValueError: gradcheck failed: d y / d x is 3.0 by minirad's 'reverse' method but 6.0 by ...
    """
    _check_function(f)
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
            raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    if isinstance(n_directions, bool) or not isinstance(n_directions, (int, np.integer)) \
            or n_directions < 0:
        raise ValueError(f"n_directions must be a non-negative integer, got {n_directions!r}")
    g = trace(f, *args)
    exact = jacobian(g, method=method, order=order, on=on)
    numeric = numerical_jacobian(f, *args, h=h)
    if numeric.shape != exact.shape:  # f behaves differently on floats than when traced
        raise ValueError(f"f has a {exact.shape} Jacobian when traced but {numeric.shape} "
                         f"when evaluated on floats")
    abs_error = np.abs(exact - numeric)
    scale = np.maximum(np.abs(exact), np.abs(numeric))
    rel_error = np.divide(abs_error, scale, out=np.zeros_like(abs_error), where=scale > 0)
    allowed = atol + rtol * np.abs(numeric)
    excess = abs_error / allowed if atol > 0 else np.where(abs_error > allowed, np.inf, 0.0)
    worst = None
    if exact.size:
        row, col = np.unravel_index(int(np.argmax(excess)), exact.shape)
        worst = (entry_name(g, g.outputs, row), entry_name(g, g.inputs, col))

    n_inputs = exact.shape[1]  # one column per traced input, as numerical_jacobian flattens
    direction_errors = []
    failed_direction = None
    for k, d in enumerate(random_directions(n_inputs, n_directions if n_inputs else 0, rng=rng)):
        along = directional_difference(f, args, d, h=h)
        error = np.abs(exact @ d - along)
        direction_errors.append(float(error.max()) if error.size else 0.0)
        if failed_direction is None and np.any(error > atol + rtol * np.abs(along)):
            failed_direction = (k, int(np.argmax(error)), exact @ d, along)

    entries_ok = bool(np.all(abs_error <= allowed))
    report = GradcheckReport(method, exact, numeric, abs_error, rel_error,
                             np.array(direction_errors), worst, entries_ok
                             and failed_direction is None, float(rtol), float(atol))
    if report.passed or not raise_on_failure:
        return report
    if not entries_ok:  # row, col and worst name the entry that exceeds its tolerance most
        out, inp = worst
        raise ValueError(
            f"gradcheck failed: d {out} / d {inp} is {float(exact[row, col])!r} by minirad's "
            f"{method!r} method but {float(numeric[row, col])!r} by central differences (abs error "
            f"{abs_error[row, col]:.3g}, allowed {allowed[row, col]:.3g} = atol + rtol * |fd|)")
    k, row, ad, fd = failed_direction
    raise ValueError(
        f"gradcheck failed along random direction #{k}: output {entry_name(g, g.outputs, row)} "
        f"changes at rate {float(ad[row])!r} by minirad's {method!r} method but "
        f"{float(fd[row])!r} by "
        f"central differences")
