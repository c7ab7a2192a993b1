"""Case studies of the RAD paper, built on the core of minirad; the core never
imports this package.

* :mod:`minirad.studies.nn`: training neural networks on real MNIST with
  randomized backward passes (paper Sec. 4, Table 1), with
  :mod:`minirad.studies.nn_graph` (the networks as LCGs of arrays) and
  ``minirad study nn``;
* :mod:`minirad.studies.pde`: reaction-diffusion control (paper Sec. 5,
  Appendix B), with :mod:`minirad.studies.pde_graph` (the simulation as a
  LCG of arrays, the reference), :mod:`minirad.studies.pde_engine` (the batched
  fast path), :mod:`minirad.studies.pde_traced` (the loss as a numpy program,
  traced and replayed by the library) and :mod:`minirad.studies.pde_figures`
  (``minirad study pde``).

The search of small graphs for gaps between the vertex, edge and face
elimination optima, a census rather than a study of the paper, is
:mod:`minirad.exact.elimination_gaps`.
"""
