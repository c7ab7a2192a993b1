"""
Exact and sampled Jacobians of a layered graph
==============================================

A graph of interleaved dense layers, 4 inputs, two layers of 4 and 3
outputs, with random partials of both signs. On the left the exact
Jacobian, then the mean of 2,000 path-sampling estimates with ``k = 1``, one
single estimate, and the z-scores of the mean against the exact value.
"""

from minirad import plots
from minirad.gallery import SEEDS, layered_multi

g = layered_multi(n_inputs=4, width=4, depth=2, n_outputs=3, rng=SEEDS["layered_graph"])
print(g)

figure = plots.plot_compare(g, k=1, n=2000, rng=SEEDS["heatmaps"], exact_std=True,
                            title="Path sampling on interleaved layers: k = 1, n = 2000")
figure
