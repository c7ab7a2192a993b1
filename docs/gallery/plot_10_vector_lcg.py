"""
A small network as an LCG of arrays (the paper's Figure 3)
==========================================================

For array programs the graph has one vertex per array and one edge per
Jacobian block, each stored as a structured operator. Here is a two-layer
ReLU network on a batch of 3 examples, traced with
:func:`minirad.trace`, with the bytes each edge keeps for the
backward pass.
"""

import numpy as np

import minirad
from minirad.tracing.rules import softmax_cross_entropy
from minirad.tracing.ops import relu

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)
labels = np.array([0, 1, 1])
W1 = rng.standard_normal((4, 5)).astype(np.float32)
W2 = rng.standard_normal((5, 2)).astype(np.float32)


def mlp(X, W1, W2):
    return softmax_cross_entropy(relu(X @ W1) @ W2, labels)


g = minirad.trace(mlp, X, W1, W2, wrt=[1, 2])
print(g)
print("bytes kept per example:", minirad.retained_memory(g).per_example(3))
drawing = minirad.render(g, title="Figure 3(a): a two-layer ReLU MLP", batch=3)
drawing

# %%
# Sampling the stored activations (Sec. 4.2 of the paper) keeps ``k = 2``
# entries of each example's row: the injected projections are the dashed
# edges, and the memory falls.
sampled = minirad.sample_activations(g, 2, rng=0)
print("bytes kept per example:", minirad.retained_memory(sampled).per_example(3))
sampled_drawing = minirad.render(sampled, title="The same graph, activations sampled",
                                 batch=3)
sampled_drawing
