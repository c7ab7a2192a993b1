"""
Variance against the number of draws
====================================

On Figure 1, the exact variance of path sampling as the number of draws per
vertex ``k`` grows: on the left the total over the Jacobian relative to its
squared norm, with crosses for the variance measured on 4,000 samples at each
``k``; on the right each entry relative to its own square. Both fall like
``1/k``. ``dy/dx1`` has no variance at all: both of its paths have the
product 13.44, so whichever edge ``v2`` draws, the estimate is exact.
"""

import minirad
from minirad import examples, plots

g = examples.figure1()
print(minirad.path_sampling_variance(g, k=1).round(3))

figure = plots.plot_variance_vs_k(g, ks=(1, 2, 4, 8, 16), n=4000, rng=3,
                                  title="Figure 1: variance of path sampling against k")
figure
