"""
Variance against the number of draws
====================================

On Figure 1, the exact variance of each Jacobian entry as the number of
draws per vertex ``k`` grows, beside the variance measured on 4,000 samples
for each ``k``. The two agree, and the variance falls as ``k`` grows.
"""

import minirad
from minirad import examples, plots

g = examples.figure1()
print(minirad.path_sampling_variance(g, k=1).round(3))

figure = plots.plot_variance_vs_k(g, ks=(1, 2, 4, 8, 16), n=4000, rng=3,
                                  title="Figure 1: variance of path sampling against k")
