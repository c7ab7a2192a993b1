"""
A small network as an LCG of arrays (the paper's Figure 3)
==========================================================

For array programs the graph has one vertex per array and one edge per
Jacobian block, each stored as a structured operator. Here is a two-layer
ReLU network on a batch of 3 examples, traced with
:func:`minirad.trace`, with the bytes each edge keeps for the
backward pass: the program of :func:`minirad.examples.figure3`, and the
pictures ``figures/figure3_vector_lcg.png``,
``figures/figure3_vector_lcg_sampled.png`` and ``figures/figure3_blocks.png``.
"""

import numpy as np

import minirad
from minirad import examples
from minirad.draw.patterns import plot_blocks
from minirad.tracing.ops import relu
from minirad.tracing.rules import softmax_cross_entropy
from minirad.tracing.tracer import name

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)    # 3 examples, 4 features
classes = np.array([0, 1, 1])
W1 = rng.standard_normal((4, 5)).astype(np.float32)   # 5 hidden units
W2 = rng.standard_normal((5, 2)).astype(np.float32)   # 2 classes


def mlp(X, W1, W2):
    h1 = name(X @ W1, "h1")   # name() gives a vertex the name the paper uses
    a1 = name(relu(h1), "a1")
    h2 = name(a1 @ W2, "h2")
    return softmax_cross_entropy(h2, classes)


g = minirad.trace(mlp, X, W1, W2, wrt=[1, 2])         # X is data, not a vertex
print(g)
print("the graph of examples.figure3():", g.same_as(examples.figure3()))
print("bytes kept per example:", minirad.retained_memory(g).per_example(3))
drawing = minirad.render(
    g, show_ops=True, batch=3,
    title="Figure 3(a): the LCG of a two-layer ReLU MLP, batch of 3, float32\n"
          "each vertex an array, each edge a Jacobian block and the bytes "
          "the backward pass keeps for it")
drawing

# %%
# Sampling the stored activations (Sec. 4.2 of the paper) keeps ``k = 2``
# entries of each example's row: the injected projections are the dashed
# edges, and the memory falls. The draws continue the same generator.
sampled = minirad.sample_activations(g, 2, rng=rng)
print("bytes kept per example:", minirad.retained_memory(sampled).per_example(3))
sampled_drawing = minirad.render(
    sampled, show_ops=True, batch=3,
    title="The same graph with activation sampling (Sec. 4.2): each stored "
          "activation keeps k=2 entries per example\n(dashed: injected "
          "projections); the ReLU mask now costs 1 bit per entry")
sampled_drawing

# %%
# Each block is a matrix that the operator stores compactly: ``x @ W`` seen
# from ``W`` is a Kronecker pattern of the data, the ReLU a 0/1 diagonal.
blocks = plot_blocks(g, title="The Jacobian blocks of Figure 3(a) as matrices (red positive, "
                              "blue negative): what each operator stores compactly")
blocks
