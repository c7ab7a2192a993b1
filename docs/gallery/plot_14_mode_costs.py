"""
What forward mode, reverse mode and a Hessian-vector product cost
=================================================================

Multiplications of a partial by a tangent or an adjoint: forward mode on dual
numbers (n passes), the forward sweep (n seeds) and the reverse sweep (one) on
the lecture's example and on that example summed over n inputs; and one
Hessian-vector product (forward over reverse on the recorded gradient graph)
in units of one gradient.
"""

from minirad.draw.modes import plot_mode_costs

figure = plot_mode_costs()
figure
