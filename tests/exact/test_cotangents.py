"""Accumulating cotangents in place (add!!) and on demand (thunks): the options of the
reverse sweep, against the plain reference sweep.

Oracles: the plain reference sweep, bit for bit (np.array_equal and the same
dtype: the options must change allocations, never a number); allocation counts
derived by hand from the program (a term per edge whose pullback writes a new
array, a sum per extra term); for lazy sweeps, the multiplications of the same
program traced without the unused branch; tracemalloc for the bytes in flight.
"""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import array_programs, random_dags

from minirad import examples, trace
from minirad.exact import cotangents
from minirad.exact.sweeps import gradient, reverse_sweep, vjp
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn import mlp_numpy

OPTIONS = [(True, False), (False, True), (True, True)]   # (in_place, lazy)


def same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a, b), np.max(np.abs(a - b))


def same_lists(xs, ys):
    assert len(xs) == len(ys)
    for x, y in zip(xs, ys):
        same_bits(x, y)


# ------------------------------------------------------------ bit for bit
@settings(max_examples=30, deadline=None)
@given(array_programs(max_steps=5), st.integers(0, 2**32 - 1), st.data())
def test_options_give_the_plain_sweeps_numbers_on_random_array_programs(program, seed, data):
    f, args = program
    g = trace(f, *args)
    rng = np.random.default_rng(seed)
    u = [rng.standard_normal(g.shape(y)) for y in g.outputs]
    wrt = data.draw(st.lists(st.sampled_from(g.inputs), min_size=1, unique=True))
    plain = reverse_sweep(g)
    plain_vjp, plain_subset = vjp(g, u), vjp(g, u, wrt=wrt)
    for in_place, lazy in OPTIONS:
        options = dict(in_place=in_place, lazy=lazy)
        mine = reverse_sweep(g, **options)
        same_bits(mine.jacobian, plain.jacobian)
        # every vertex's adjoint, so a buffer wrongly shared and mutated would show
        same_lists(mine.adjoints, plain.adjoints)
        assert (mine.multiplications, mine.additions) == (plain.multiplications,
                                                          plain.additions)
        same_lists(vjp(g, u, **options), plain_vjp)
        same_lists(vjp(g, u, wrt=wrt, **options), plain_subset)
        blocks = reverse_sweep(g, keep_values=False, wrt=wrt, **options)
        same_bits(blocks.jacobian, reverse_sweep(g, keep_values=False, wrt=wrt).jacobian)


@settings(max_examples=20, deadline=None)
@given(random_dags(inputs=(1, 4), intermediates=(0, 20), outputs=(1, 3), density=(0.1, 0.8)),
       st.data())
def test_options_on_graphs_of_numbers_give_the_reference_engines_numbers(g, data):
    wrt = data.draw(st.lists(st.sampled_from(g.inputs), min_size=1, unique=True))
    u = np.linspace(-1.0, 2.0, len(g.outputs))
    reference = reverse_sweep(g, engine="reference")
    for in_place, lazy in OPTIONS:
        options = dict(in_place=in_place, lazy=lazy)
        mine = reverse_sweep(g, **options)
        same_bits(mine.jacobian, reference.jacobian)
        same_bits(mine.adjoints, reference.adjoints)       # the (n_vertices, n_rows) layout
        assert mine.shapes is None and mine.blocks is None
        same_bits(vjp(g, u, **options), vjp(g, u, engine="reference"))
        same_bits(reverse_sweep(g, wrt=wrt, keep_values=False, **options).jacobian,
                  reference.jacobian[:, [g.inputs.index(x) for x in wrt]])


def test_the_papers_mlp_gradient_is_the_same_in_float32():
    params = mlp_numpy.init_mlp((784, 300, 300, 300, 10), rng=0)    # float32
    rng = np.random.default_rng(0)
    X, labels = rng.random((6, 784), dtype=np.float32), np.arange(6) % 10
    g = nn_graph.traced(nn_graph.mlp_program, params, X, labels)
    plain = gradient(g)
    assert all(p.dtype == np.float32 for p in plain)
    for in_place, lazy in OPTIONS:
        same_lists(gradient(g, in_place=in_place, lazy=lazy), plain)
    # the last two layers only: a lazy sweep stops before the first two weight gradients
    last = g.inputs[-4:]
    same_lists(gradient(g, wrt=last, lazy=True), plain[-4:])


# ----------------------------------------------------------- what is saved
def test_allocations_of_a_vertex_used_three_times():
    # y = sum(2x + 3x + 4x): the sum's pullback and the two +'s pass views of y's seed
    # along; the three products write a new array each into x's cotangent, and the
    # plain sweep adds them in two new arrays; in place both sums go into the first term
    x = np.arange(5.0)
    g = trace(lambda x: (x * 2.0 + x * 3.0 + x * 4.0).sum(), x)
    seeds = {g.outputs[0]: np.ones(())}
    plain = cotangents.reverse_accumulation(g, seeds)
    mine = cotangents.reverse_accumulation(g, seeds, in_place=True)
    assert (plain.allocations, mine.allocations) == (5, 3)
    assert (plain.allocated_bytes, mine.allocated_bytes) == (5 * x.nbytes, 3 * x.nbytes)
    same_bits(mine.values[0], np.full(5, 9.0))


def test_allocations_of_the_notes_first_example():
    # the ChainRules notes' sum_first_and_second: y = X[0] + X[1].  Each index's pullback
    # writes a new X-shaped array (the notes' a-bar and b-bar), the two edges into y
    # scale the 0-d seed (two 0-d arrays), and a plain sweep allocates X-bar = a-bar +
    # b-bar: five arrays; add!! writes b-bar into a-bar: four
    X = np.array([1.0, 2.0, 3.0])
    g = trace(lambda X: X[0] + X[1], X)
    seeds = {g.outputs[0]: np.ones(())}
    plain = cotangents.reverse_accumulation(g, seeds)
    mine = cotangents.reverse_accumulation(g, seeds, in_place=True)
    assert (plain.allocations, mine.allocations) == (5, 4)
    assert plain.allocated_bytes - mine.allocated_bytes == X.nbytes
    same_bits(mine.values[0], np.array([1.0, 1.0, 0.0]))


def test_a_view_of_another_cotangent_is_never_written_into():
    # x's first term (in reverse order) is the reshape's pullback: a writeable view of
    # r's cotangent, which is 2 everywhere.  Adding x * 5's term into it would turn r's
    # cotangent into 7: the sum must go into a new array
    x = np.arange(4.0)
    g = trace(lambda x: (x * 5.0).sum() + (x.reshape(2, 2) * 2.0).sum(), x)
    r = next(v for v in range(g.n_vertices) if g.shapes[v] == (2, 2))
    swept = reverse_sweep(g, in_place=True)
    same_bits(swept.adjoints[r], np.full((1, 2, 2), 2.0))
    same_bits(swept.adjoints[0], np.full((1, 4), 7.0))
    seeds = {g.outputs[0]: np.ones(())}
    assert (cotangents.reverse_accumulation(g, seeds, in_place=True).allocations
            == cotangents.reverse_accumulation(g, seeds).allocations)


def test_the_callers_seed_is_never_written_into():
    x = np.arange(3.0)
    g = trace(lambda x: x * 1.0, x)              # y's cotangent is the seed itself
    seed = np.ones(3)                                   # a writeable array of the caller's
    h = trace(lambda x: x + x * 3.0, x)          # x's first term: the seed itself
    for graph in (g, h):
        cotangents.reverse_accumulation(graph, {graph.outputs[0]: seed}, in_place=True)
        same_bits(seed, np.ones(3))
    same_bits(vjp(h, [seed], in_place=True)[0], np.full(3, 4.0))
    same_bits(seed, np.ones(3))


def test_a_lazy_sweep_skips_the_branch_no_wanted_input_needs():
    # w's branch is small, d's large; the oracle for the work left is the same program
    # traced with d as data, where the branch is not a part of the graph at all
    rng = np.random.default_rng(0)
    w, d, M = rng.standard_normal(8), rng.standard_normal(50), rng.standard_normal((50, 50))

    def f(w, d):
        return (w * w).sum() + np.tanh(M @ np.tanh(M @ d)).sum()

    g = trace(f, w, d)
    lazy = reverse_sweep(g, wrt="w", keep_values=False, lazy=True)
    eager = reverse_sweep(g, wrt="w", keep_values=False)
    alone = reverse_sweep(trace(lambda w: f(w, d), w))
    same_bits(lazy.jacobian, eager.jacobian)
    assert lazy.multiplications == alone.multiplications < eager.multiplications
    seeds = {g.outputs[0]: np.ones(())}
    swept = cotangents.reverse_accumulation(g, seeds, wanted=[g.index("w")], lazy=True)
    assert isinstance(swept.values[g.index("d")], cotangents.Thunk)
    assert swept.deferred == sum(isinstance(v, cotangents.Thunk) for v in swept.values) >= 5
    assert swept.allocated_bytes < cotangents.reverse_accumulation(g, seeds).allocated_bytes / 10
    # asking for every cotangent forces every thunk: nothing is deferred
    assert cotangents.reverse_accumulation(g, seeds, lazy=True).deferred == 0


def test_forcing_a_deep_chain_does_not_recurse():
    g = examples.independent_paths(1, 3000)              # one path of 3000 edges
    swept = cotangents.reverse_accumulation(g, {g.outputs[0]: 1.0}, wanted=g.inputs, lazy=True)
    assert swept.values[g.inputs[0]] == reverse_sweep(g, engine="reference").jacobian[0, 0]


def test_in_place_lowers_the_peak_bytes():
    # x (1 MB) used four times: a plain sum holds the old total, the term and the new
    # total at once; in place the third array is never made
    x = np.ones(1 << 17)
    g = trace(lambda x: (x * 1.0 + x * 2.0 + x * 3.0 + x * 4.0).sum(), x)

    def peak(in_place):
        tracemalloc.start()
        try:
            gradient(g, in_place=in_place)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(False)   # warm up caches the first call fills
    assert peak(False) - peak(True) >= 0.9 * x.nbytes


# ------------------------------------------------------------ bad options
def test_bad_options():
    g = trace(lambda x: (x * x).sum(), np.ones(3))
    with pytest.raises(TypeError, match="in_place must be True or False"):
        gradient(g, in_place="in_place")
    with pytest.raises(TypeError, match="lazy must be True or False"):
        vjp(g, [1.0], lazy="yes")
    with pytest.raises(ValueError, match="options of the 'reference' engine"):
        reverse_sweep(examples.lecture(), engine="loop", in_place=True)
    with pytest.raises(ValueError, match="is not an input of the graph"):
        gradient(g, wrt="y")
    with pytest.raises(ValueError, match="selected twice"):
        vjp(examples.lecture(), [1.0], wrt=["x1", "x1"])
