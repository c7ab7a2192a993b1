"""Randomized AD (Oktay et al., ICLR 2021): path sampling and random matrix injection,
on any LCG (numbers or arrays).

* :mod:`~minirad.randomized.sampling`: Algorithm 1 (on arrays with the second level of
  Sec. 3.2, entries sampled inside each vertex), batched estimates, exact variances;
* :mod:`~minirad.randomized.injection`: random matrix injection at vertices and edges;
* :mod:`~minirad.randomized.stacked`: many estimates in one reverse sweep;
* :mod:`~minirad.randomized.moments`: the one recursion behind every exact variance;
* :mod:`~minirad.randomized.experiments`: estimates set against the exact Jacobian.
"""
