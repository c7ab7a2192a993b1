"""Independent oracles shared by the tests: nothing here uses minirad's algorithms."""

from fractions import Fraction

import numpy as np
import pytest

from minirad import labs


def dense_jacobian(g, partials=None) -> np.ndarray:
    """J = rows (outputs) and columns (inputs) of (I - L)^-1 with L[w, v] = dw/dv,
    by numpy's dense solver: no sweeps, no paths.  ``partials`` replaces g's."""
    n = g.n_vertices
    L = np.zeros((n, n))
    L[g.targets, g.sources] = g.partials if partials is None else partials
    T = np.linalg.solve(np.eye(n) - L, np.eye(n)[:, list(g.inputs)])
    return T[list(g.outputs), :]


def rational_jacobian(g, absolute: bool = False) -> np.ndarray:
    """The same sum over paths solved exactly in rationals (every float is one),
    rounded once at the end: an oracle that does not round on the way.

    With ``absolute`` the partials are replaced by their magnitudes, which
    bounds the size of every term in the path sum (the scale for rounding).
    """
    n = g.n_vertices
    L = [[Fraction(0)] * n for _ in range(n)]
    for u, v, d in g.edges():
        L[v][u] = Fraction(abs(d) if absolute else d)
    # rows of X = (I - L)^-1 E: unit lower triangular, so substitute in vertex order
    X = [[Fraction(int(v == x)) for x in g.inputs] for v in range(n)]
    for v in range(n):
        for u in range(v):
            if L[v][u]:
                X[v] = [a + L[v][u] * b for a, b in zip(X[v], X[u])]
    return np.array([[float(a) for a in X[y]] for y in g.outputs]).reshape(
        len(g.outputs), len(g.inputs))


def expect_failure(check, fn, *fragments) -> str:
    """Run a lab check on a planted wrong answer: it must fail, saying each fragment."""
    with pytest.raises(labs.CheckFailed) as caught:
        check(fn)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message, message
    return message
