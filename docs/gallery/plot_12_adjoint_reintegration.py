"""
The continuous adjoint, stored and re-integrated
================================================

Differentiating an ODE solve backwards needs the forward states. Storing
them, checkpointing them, or re-integrating the ODE backwards from the final
state give the same gradient on an oscillator and on Lotka-Volterra; on a
diffusion, re-integrating backwards is unstable and the error explodes.
"""

from minirad.draw.adjoints import plot_reintegration
from minirad.implicit import ode_adjoint

problems = [ode_adjoint.oscillator(), ode_adjoint.lotka_volterra(), ode_adjoint.diffusion()]
figure = plot_reintegration(problems)
