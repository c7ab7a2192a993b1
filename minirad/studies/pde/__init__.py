"""The reaction-diffusion study of the RAD paper (Sec. 5, Appendix B): control of a
reactor's neutron flux, its gradient kept exactly, by eq. 8, or by checkpointing.

* :mod:`~minirad.studies.pde.problem`: the problem, its plain forward loop, the exact
  gradient by the adjoint recurrence, eq. 8 and Adam; its names are this package's
  too (``from minirad.studies.pde import Reactor, exact_gradient``);
* :mod:`~minirad.studies.pde.graph`: the simulation as a graph of arrays (the
  reference the engine is a fast path of);
* :mod:`~minirad.studies.pde.engine`: the fast path, every member of a run stepped in
  one time loop;
* :mod:`~minirad.studies.pde.traced`: the loss as a numpy program, traced and
  replayed by the library;
* :mod:`~minirad.studies.pde.adjoint`, :mod:`~minirad.studies.pde.adjoint_plots`:
  the continuous adjoint with stored, checkpointed or re-integrated states;
* :mod:`~minirad.studies.pde.study`, :mod:`~minirad.studies.pde.state`: the study
  itself, ``minirad study pde``, and its saved state (``--resume``);
* :mod:`~minirad.studies.pde.sampling`: the paper's Figure 7a
  (``minirad study pde --paper-figures``).
"""

from .problem import (
    ADAM_BETAS,
    RadEstimate,
    Reactor,
    adam,
    chain,
    check_theta,
    exact_gradient,
    exact_retained_bytes,
    index_dtype,
    initial_state,
    initial_theta,
    rad_gradient,
    sample_count,
    sampler,
    simulate,
    source_profile,
    step,
    target,
)

__all__ = [
    "ADAM_BETAS", "RadEstimate", "Reactor", "adam", "chain", "check_theta", "exact_gradient",
    "exact_retained_bytes", "index_dtype", "initial_state", "initial_theta", "rad_gradient",
    "sample_count", "sampler", "simulate", "source_profile", "step", "target",
]
