"""A traced program behaves as numpy does where numpy has a meaning of its own
(issue 39): ``axis=None`` flattens before joining, and a singular matrix raises
numpy's own ``LinAlgError``, so the program's ``except np.linalg.LinAlgError``
catches it traced as it does untraced."""

import numpy as np
import pytest
from oracles import central_differences

import minirad
from minirad import trace

RNG = np.random.default_rng(39)


@pytest.mark.parametrize("shapes", [[(2, 3), (3,)], [(2, 2), (2, 2)], [(), (4,)]])
def test_concatenate_with_axis_none_flattens_as_numpy_does(shapes):
    """Issue 39: axis=None raised TypeError (None % int). The oracles: numpy's value,
    and central differences of the function for the gradient."""
    constant = RNG.standard_normal(5)
    point = [RNG.standard_normal(s) for s in shapes]

    def f(*xs):
        joined = np.concatenate(list(xs) + [constant], axis=None)
        return (np.sin(joined) * np.arange(1, joined.size + 1)).sum()

    g = trace(f, *point)
    assert g.values[g.outputs[0]] == pytest.approx(f(*point), rel=1e-15)
    row = minirad.jacobian(g)[0]
    expected = np.concatenate([np.ravel(d) for d in central_differences(f, point)])
    np.testing.assert_allclose(row, expected, rtol=1e-7, atol=1e-9)


def _guarded(call):
    """A program that handles a singular matrix itself, as numpy code often does."""
    def f(A):
        try:
            return call(A).sum()
        except np.linalg.LinAlgError:
            return (A * 0.0).sum() - 1.0     # its fallback, traced too
    return f


@pytest.mark.parametrize("call", [lambda A: np.linalg.solve(A, np.ones(2)),
                                  np.linalg.inv, np.linalg.cholesky],
                         ids=["solve", "inv", "cholesky"])
def test_a_singular_matrix_raises_numpys_linalg_error_inside_a_trace(call):
    """Issue 39: the traced solve raised ValueError, so the program's own handler did not
    run. Now the traced program takes the branch the untraced one takes."""
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])   # also not positive definite
    untraced = _guarded(call)(singular)
    assert untraced == -1.0                          # numpy itself raised LinAlgError
    g = trace(_guarded(call), singular)
    assert g.values[g.outputs[0]] == -1.0
    assert not minirad.jacobian(g).any()             # the fallback's gradient: 0
    with pytest.raises(np.linalg.LinAlgError, match="singular|undefined"):
        trace(lambda A: call(A).sum(), singular)
    with pytest.raises(ValueError):                  # LinAlgError is a ValueError
        trace(lambda A: call(A).sum(), singular)
