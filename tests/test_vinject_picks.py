"""Edge injection with given draws (picks), sampling folded into diagonal edges, and
several edges at once: the generic machinery the PDE's eq. 8 graph is built with."""

import math

import numpy as np
import pytest

from minirad import trace
from minirad.exact.jacobians import jacobian
from minirad.exact.sweeps import gradient
from minirad.graph.files import load_graph, save_graph
from minirad.graph.memory import memory
from minirad.graph.operators import Projection, compose
from minirad.randomized.injection import inject_edge, inject_edges, random_basis
from minirad.tracing.arrays import name

# Statistical test: each of the 5 gradient entries' mean over 2000 draws must lie within 5
# standard errors of the exact value; a two-sided 5-sigma miss has probability 5.7e-7, so
# this file fails by chance less than once in 300,000 runs (fixed seeds: reproducible).
Z = 5.0


def two_uses():
    """x is kept by two diagonal edges: d exp(x)/dx keeps exp(x), d(x*x)/dx keeps x."""
    x = np.array([0.3, -1.2, 0.7, 2.0, -0.4])
    return trace(lambda x: (np.exp(x) * 0.5 + name(x * x, "sq")).sum(), x)


def dense_projection(picks, d):
    """P = (d/k) sum_j e_{p_j} e_{p_j}^T, by hand."""
    P = np.zeros((d, d))
    for i in picks:
        P[i, i] += d / len(picks)
    return P


def test_given_picks_on_a_diagonal_edge_fold_into_the_diagonal():
    g = two_uses()
    e = g.edge_index("x", "v1")
    picks = np.array([4, 1, 4])
    h = inject_edge(g, e, picks=picks)
    op = h.labels[e]
    assert op.kind == "diagonal"
    J = g.labels[e].to_dense()
    np.testing.assert_allclose(op.to_dense(), J @ dense_projection(picks, 5), rtol=1e-15)
    # 3 of the 5 float64 entries and 3 one-byte indices, in place of 5 floats
    assert op.retained_bytes == 3 * 9 and g.labels[e].retained_bytes == 40
    record = h.injections[-1]
    assert (record["k"], record["d"], record["given_picks"]) == (3, 5, True)


def test_drawn_sampling_of_a_diagonal_is_the_projection_it_replaces():
    """With rng the draws are those random_basis makes, so the folded diagonal is J P for
    the P that the generic J ∘ P form would have used."""
    g = two_uses()
    e = g.edge_index("x", "v1")
    h = inject_edge(g, e, 2, rng=11)
    R = random_basis(5, 2, rng=11)
    P = Projection((5,), R)
    np.testing.assert_allclose(h.labels[e].to_dense(),
                               compose(g.labels[e], P).to_dense(), rtol=1e-15)


def test_sampled_diagonals_are_unbiased():
    g = two_uses()
    exact = gradient(g)[0]
    rng = np.random.default_rng(5)
    edges = [("x", "v1"), ("x", "sq")]
    samples = np.array([gradient(inject_edges(g, edges, 2, rng=rng))[0]
                        for _ in range(2000)])
    se = samples.std(axis=0, ddof=1) / math.sqrt(len(samples))
    assert np.all(np.abs(samples.mean(axis=0) - exact) < Z * se)
    assert samples.std(axis=0).min() > 0


def test_same_array_same_picks_share_one_copy():
    """Two edges keeping one array (a state, as phi_n in the PDE: dt diag(phi_n) and the
    loss row), sampled with the same draws, keep one copy of the k entries (eq. 8's
    shared sample); different draws keep two."""
    from minirad.graph.lcg import LCG
    from minirad.graph.operators import Diagonal, Retained, SumAxes

    x = np.array([1.0, 2.0, 3.0, 4.0])
    keep = (Retained("state", 4 * 64),)
    g = LCG(["x", "y", "L"], [0, 0, 1], [1, 2, 2],
                  [Diagonal(2 * x, retained=keep), compose(SumAxes((4,)), Diagonal(x, None, keep)),
                   SumAxes((4,))], [0], [2], values=[x, x * x, np.array(0.0)])
    assert memory(g).total == 32
    picks = np.array([3, 3, 0])
    shared = inject_edges(g, [(0, 1), (0, 2)], picks=[picks, picks])
    assert memory(shared).total == 3 * 9                   # one copy: 3 floats, 3 indices
    apart = inject_edges(g, [(0, 1), (0, 2)], picks=[picks, np.array([1, 1, 2])])
    assert memory(apart).total == 2 * 3 * 9
    # the loss edge sum ∘ diag(x) sampled: sum over the picks of (d/k) x_i
    P = dense_projection(picks, 4)
    np.testing.assert_allclose(shared.labels[1].to_dense(), (x @ P)[None, :], rtol=1e-15)


def test_picks_on_a_multiplication_edge_sample_each_row():
    X = np.arange(12.0).reshape(3, 4)
    g = trace(lambda W: (X @ W).sum(), np.ones((4, 2)))
    picks = np.array([[0, 0], [1, 3], [2, 2]])        # row r of X keeps entries picks[r]
    h = inject_edge(g, ("W", "v1"), picks=picks)
    stored = np.stack([X[r] @ dense_projection(picks[r], 4) for r in range(3)])
    np.testing.assert_allclose(h.labels[0].stored, stored, rtol=1e-15)
    shared = inject_edge(g, ("W", "v1"), picks=np.array([1, 2]), per_row=False)
    np.testing.assert_allclose(shared.labels[0].stored, X @ dense_projection([1, 2], 4))


def test_several_edges_at_once_equal_one_at_a_time():
    g = two_uses()
    edges = [("x", "v1"), ("x", "sq")]
    together = inject_edges(g, edges, 2, rng=3)
    rng = np.random.default_rng(3)
    apart = inject_edge(inject_edge(g, edges[0], 2, rng=rng), edges[1], 2, rng=rng)
    np.testing.assert_array_equal(jacobian(together), jacobian(apart))
    assert together.injections == apart.injections


def test_round_trip_keeps_the_sampled_diagonal(tmp_path):
    g = inject_edge(two_uses(), ("x", "v1"), picks=[0, 0, 3])
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    np.testing.assert_array_equal(jacobian(h), jacobian(g))
    assert memory(h).total == memory(g).total and h.injections == g.injections


def test_bad_picks_are_named():
    g = two_uses()
    with pytest.raises(ValueError, match="does not draw indices"):
        inject_edge(g, 0, picks=[1, 2], method="rademacher")
    with pytest.raises(ValueError, match=r"indices 0..4"):
        inject_edge(g, 0, picks=[1, 5])
    with pytest.raises(ValueError, match="integer indices"):
        inject_edge(g, 0, picks=[0.5, 1.0])
    with pytest.raises(ValueError, match=r"shape \(k,\)"):
        inject_edge(g, 0, picks=[[1, 2], [0, 1]])
    with pytest.raises(ValueError, match="give k"):
        inject_edge(g, 0)
    with pytest.raises(ValueError, match="one array of picks per edge"):
        inject_edges(g, [0, 1], picks=[[1, 2]])
    with pytest.raises(TypeError, match="list of edges"):
        inject_edges(g, 0, 2)
