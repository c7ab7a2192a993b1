"""Every method on blocks: sweeps, Bauer on vector paths, elimination, the matrix-chain
order; agreement on random array programs (hypothesis) with scalarize + every scalar
method and with central differences; operation counts that respect structure."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_array_trace import central_differences

import minirad
from minirad import trace
from minirad.exact.blocks import (
    chain_labels,
    count_vector_paths,
    forward_sweep,
    jacobian,
    optimal_chain,
    reverse_sweep,
    vector_bauer,
    vector_eliminate,
)
from minirad.graph import labels
from minirad.graph.lcg import LCG
from minirad.graph.operators import OPERATORS, Dense, Diagonal
from minirad.graph.scalarize import from_chain, scalarize
from minirad.tracing.ops import sigmoid

# ------------------------------------------------------------ random array programs
# values live in four shapes; every step maps earlier values to one of them
A_SHAPE, B_SHAPE = (2, 3), (3,)


def _unary(name):
    return {"tanh": np.tanh, "sigmoid": sigmoid, "square": np.square,
            "exp": lambda x: np.exp(x * 0.5)}[name]


@st.composite
def programs(draw):
    """(f, args): a random straight-line program of the supported operations."""
    steps = []
    shapes = [A_SHAPE, B_SHAPE]
    for _ in range(draw(st.integers(1, 6))):
        n = len(shapes)
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(0, n - 1))
        si, sj = shapes[i], shapes[j]
        options = [("unary", draw(st.sampled_from(["tanh", "sigmoid", "square", "exp"])))]
        try:
            out = np.broadcast_shapes(si, sj)
            if out in (A_SHAPE, B_SHAPE, (2,), ()):
                options.append(("binary", draw(st.sampled_from(["+", "-", "*"]))))
        except ValueError:
            pass
        if si == A_SHAPE and sj == B_SHAPE:
            options.append(("matmul", "A@b"))
        if si == (2,) and sj == A_SHAPE:
            options.append(("matmul", "c@A"))
        if si == A_SHAPE:
            options += [("sum", 0), ("sum", 1), ("index", "row")]
        if si == B_SHAPE and sj == B_SHAPE:
            options.append(("stack", None))
        if si == B_SHAPE:
            options.append(("index", "head"))
        kind, arg = draw(st.sampled_from(options))
        if kind == "unary":
            shape = si
        elif kind == "binary":
            shape = np.broadcast_shapes(si, sj)
        elif kind == "matmul":
            shape = (2,) if arg == "A@b" else B_SHAPE
        elif kind == "sum":
            shape = (B_SHAPE if arg == 0 else (2,))
        elif kind == "index":
            shape = B_SHAPE if arg == "row" else (2,)
        else:
            shape = A_SHAPE
        steps.append((kind, arg, i, j))
        shapes.append(shape)
    n_out = draw(st.integers(1, 2))
    outputs = list(range(len(shapes) - n_out, len(shapes)))

    def f(a, b):
        values = [a, b]
        for kind, arg, i, j in steps:
            x, y = values[i], values[j]
            if kind == "unary":
                values.append(_unary(arg)(x))
            elif kind == "binary":
                values.append(x + y if arg == "+" else x - y if arg == "-" else x * y)
            elif kind == "matmul":
                values.append(x @ y)
            elif kind == "sum":
                values.append(x.sum(axis=arg))
            elif kind == "index":
                values.append(x[1] if arg == "row" else x[:2])
            else:
                values.append(np.stack([x, y]))
        return tuple(values[k] for k in outputs)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return f, [rng.uniform(-1, 1, A_SHAPE), rng.uniform(-1, 1, B_SHAPE)]


def close(a, b):
    scale = max(1.0, float(np.abs(b).max(initial=0)))
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * scale)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_every_method_agrees_on_random_array_programs(program):
    f, args = program
    g = trace(f, *args)
    reference = jacobian(g, "reverse")
    close(jacobian(g, "forward"), reference)
    close(vector_bauer(g).dense(), reference)
    for order in ("forward", "reverse", "markowitz"):
        close(vector_eliminate(g, order).dense(), reference)
    s = scalarize(g)
    for method in ("bauer", "forward", "reverse", "eliminate"):
        close(minirad.jacobian(s, method=method), reference)
    np.testing.assert_allclose(reference, central_differences(f, args), rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------- path counts
def test_path_counts_at_both_levels():
    ones = [np.ones((3, 1)), np.ones((3, 3)), np.ones((1, 3))]
    g = from_chain(ones)
    assert count_vector_paths(g).tolist() == [[1]]            # one path of arrays
    assert minirad.count_paths(scalarize(g)).tolist() == [[9]]  # 3 x 3 paths of numbers
    # a @ b reached directly and through tanh; a also through a.sum()
    g = trace(lambda a, b: np.tanh(a @ b) * a.sum() + (a @ b) ** 2, np.ones((2, 3)),
              np.ones(3))
    assert count_vector_paths(g).tolist() == [[3, 2]]


# ------------------------------------------------------------- structure in the counts
def test_sweep_costs_respect_structure():
    g = trace(lambda x: np.tanh(np.exp(x)), np.ones(100) * 0.1)
    # two diagonal edges: 100 multiplications each per tangent, not 100^2
    assert forward_sweep(g, [np.ones(100)]).multiplications == 200
    assert reverse_sweep(g, [np.ones(100)]).multiplications == 200
    # a stack of 3 tangents costs 3 times as much
    assert forward_sweep(g, [np.ones((3, 100))]).multiplications == 600
    # an explicit matrix costs m x n
    h = from_chain([np.ones((50, 100))])
    assert forward_sweep(h, [np.ones(100)]).multiplications == 5000


def test_bauer_costs_one_product_per_path():
    g = from_chain([np.ones((3, 2)), np.ones((4, 3)), np.ones((2, 4))])
    result = vector_bauer(g)
    # one path, two dense products: (4x3)(3x2) then (2x4)(4x2)
    assert result.multiplications == 4 * 3 * 2 + 2 * 4 * 2 and result.additions == 0


# ------------------------------------------------------------------- matrix chains
def chain_graph(factors):
    shapes = [factors[0].in_shape] + [op.out_shape for op in factors]
    names = ["x"] + [f"v{i}" for i in range(1, len(factors))] + ["y"]
    return LCG(names, range(len(factors)), range(1, len(factors) + 1), factors, [0],
                     [len(factors)], shapes=shapes)


def random_chain(rng, length):
    sizes = rng.integers(1, 7, length + 1).tolist()
    factors = []
    for i in range(length):
        if sizes[i] == sizes[i + 1] and rng.random() < 0.4:
            factors.append(Diagonal(rng.standard_normal(sizes[i])))
        else:
            factors.append(Dense(rng.standard_normal((sizes[i + 1], sizes[i])), (sizes[i + 1],),
                                 (sizes[i],)))
    return factors


@pytest.mark.parametrize("seed", range(12))
def test_optimal_chain_order_is_never_worse_and_is_optimal(seed):
    rng = np.random.default_rng(seed)
    factors = random_chain(rng, int(rng.integers(2, 6)))
    g = chain_graph(factors)
    assert chain_labels(g) == factors
    best = optimal_chain(factors, OPERATORS)
    exact = jacobian(g)
    close(best.product.to_dense(), exact)
    # the DP's order, run as an elimination, costs exactly what the DP says
    middle = g.intermediates
    run = vector_eliminate(g, [middle[p - 1] for p in best.order])
    assert run.multiplications == best.cost
    close(run.dense(), exact)
    for order in ("forward", "reverse", "markowitz"):
        assert best.cost <= vector_eliminate(g, order).multiplications
    # and no elimination order at all does better (every order is a parenthesization)
    cheapest = min(vector_eliminate(g, list(p)).multiplications
                   for p in itertools.permutations(middle))
    assert best.cost == cheapest


def test_optimal_chain_classic_example():
    # (10x30)(30x5)(5x60) from the textbook: 4,500 via (AB)C, 27,000 via A(BC)
    A = Dense(np.ones((10, 30)), (10,), (30,))
    B = Dense(np.ones((30, 5)), (30,), (5,))
    C = Dense(np.ones((5, 60)), (5,), (60,))
    best = optimal_chain([C, B, A])      # C applied first: the product is A B C
    assert best.cost == 10 * 30 * 5 + 10 * 5 * 60 == 4500
    assert best.parenthesized == "((J3 J2) J1)"


def test_elimination_refuses_bad_orders():
    g = from_chain([np.ones((2, 2))] * 3)
    with pytest.raises(ValueError, match="every intermediate vertex once"):
        vector_eliminate(g, ["v1"])
    with pytest.raises(ValueError, match="order must be one of"):
        vector_eliminate(g, "sideways")
    with pytest.raises(ValueError, match="not a chain"):
        chain_labels(trace(lambda a, b: a * b, np.ones(2), np.ones(2)))
    assert math.isfinite(vector_eliminate(g).operations)


def test_the_shared_label_recurrences_run_unchanged_on_the_vector_graph():
    g = trace(lambda a, b: np.tanh(a @ b) * a.sum() + (a @ b) ** 2,
              np.full((2, 3), 0.3), np.full(3, 0.2))
    for c, s in enumerate(g.inputs):
        block = labels.path_sum(g, s, g.outputs[0])          # Bauer, in minirad.graph.labels
        close(block.to_dense(), vector_bauer(g).blocks[0][c].to_dense())
        assert labels.path_sum(g, s, g.outputs[0], algebra=labels.COUNTS,
                               labels=[1] * g.n_edges) == count_vector_paths(g)[0, c]
    t = [np.full((2, 3), 0.1), np.full(3, -0.2)]
    close(labels.forward(g, dict(zip(g.inputs, t))).values[g.outputs[0]],
          jacobian(g) @ np.concatenate([x.ravel() for x in t]))
