"""Case studies of the RAD paper, built on the core of minirad.

* :mod:`minirad.studies.pde`: reaction-diffusion control (paper Sec. 5, Appendix B),
  with :mod:`minirad.studies.pde_graph` (the simulation as a vector LCG, the
  reference), :mod:`minirad.studies.pde_engine` (the batched fast path) and
  :mod:`minirad.studies.pde_figures` (``minirad study pde``).

The core never imports this package.
"""
