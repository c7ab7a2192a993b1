"""
The running mean converges like one over the square root of n
==============================================================

The relative error of the mean of ``n`` path-sampling estimates on the
layered graph, for 1, 2 and 4 draws per vertex. On log axes each curve
wanders around its dotted line of slope -1/2, the error expected from the
exact variance: the estimates are unbiased and independent, so the error of
their mean falls like ``1/sqrt(n)``; more draws per vertex lower the line.
"""

from minirad import plots
from minirad.gallery import SEEDS, layered_multi

g = layered_multi(n_inputs=4, width=4, depth=2, n_outputs=3, rng=SEEDS["layered_graph"])
figure = plots.plot_convergence(g, ks=(1, 2, 4), n=5000, rng=SEEDS["convergence"],
                                title="Relative error of the running mean, k = 1, 2, 4")
figure
