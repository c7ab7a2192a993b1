"""Case studies of the RAD paper, built on the public names of minirad; the core never
imports this package.  One folder per study, one module per part of it:

* :mod:`minirad.studies.nn`: neural networks on real MNIST trained with randomized
  backward passes (paper Sec. 4, Table 1, Figures 4-6 and 8-10): ``minirad study nn``;
* :mod:`minirad.studies.pde`: reaction-diffusion control with the eq. 8 estimator and
  checkpointing (paper Sec. 5, Appendix B, Figure 7): ``minirad study pde``.

The search of small graphs for gaps between the vertex, edge and face
elimination optima, a census rather than a study of the paper, is
:mod:`minirad.exact.elimination_gaps`.
"""
