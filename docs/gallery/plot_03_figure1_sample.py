"""
One Algorithm 1 sample
======================

Path sampling (Algorithm 1 of the paper) keeps, at every vertex, ``k`` of its
outgoing edges drawn at random and reweighted so that the sampled graph's
Jacobian is an unbiased estimate of the exact one. With ``k = 1`` each vertex
keeps a single edge, and a vertex that no drawn edge reaches is skipped.
"""

import minirad
from minirad import examples

g = examples.figure1()
sample = minirad.sample_paths(g, k=1, rng=0)
print("edges stored:", sample.edges_stored, "of", g.n_edges)
print("estimate:", minirad.jacobian(sample.graph).round(4))
print("exact:   ", minirad.jacobian(g).round(4))

# %%
# Drawn edges are red, with their draw count and sampled weight; the edges
# left out are dashed grey.
drawing = minirad.render(g, sample, title="One Algorithm 1 sample, k = 1, seed 0")
drawing
