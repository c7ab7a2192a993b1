"""Randomized AD (Oktay et al., ICLR 2021): path sampling and random matrix injection.

* :mod:`~minirad.randomized.sampling`: Algorithm 1, batched estimates, exact variances;
* :mod:`~minirad.randomized.injection`: random matrix injection on the graph;
* :mod:`~minirad.randomized.experiments`: estimates set against the exact Jacobian.
"""
