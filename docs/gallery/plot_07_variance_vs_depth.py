"""
Variance against depth (the paper's Figure 2)
=============================================

The exact relative variance of path sampling on the two families of the
paper's Figure 2: independent paths, whose variance stays flat as they get
longer, and interleaved layers, whose variance grows exponentially with
depth. No sampling is involved: :func:`minirad.path_sampling_variance` gives
the variance in closed form.
"""

from minirad import plots

figure = plots.plot_variance_vs_depth(
    width=4, depths=range(1, 13), fraction=0.25, rng=0,
    title="Relative variance against depth: width 4, each vertex keeps 25% of its out-edges")
figure
