"""
The continuous adjoint, stored and re-integrated
================================================

Solving the adjoint ODE backwards needs the forward states. Storing them all,
keeping checkpoints and recomputing, or re-integrating the ODE backwards from
the final state (one state kept) all give the gradient to about 1e-8 on a
damped oscillator and on Lotka-Volterra. On a diffusion, re-integrating
backwards is unstable: the re-integrated state's error passes 1e40, and so
does the gradient's.
"""

from minirad.draw.adjoints import plot_reintegration
from minirad.implicit import ode_adjoint

problems = [ode_adjoint.oscillator(), ode_adjoint.lotka_volterra(), ode_adjoint.diffusion()]
figure = plot_reintegration(problems)
figure
