"""
The reverse pass, recorded as more vertices
===========================================

The lecture's y = ln(x1) + x1·x2 − sin(x2) at (2, 5), with its reverse sweep
run on traced numbers: the partials (cos(x2), 1/x1), their products with the
adjoints and the sums over uses become vertices (orange-red) after the program's
own. The outputs x̄1, x̄2 are the gradient, so the Jacobian of this graph is
the Hessian.
"""

from minirad import ops, render
from minirad.draw.render import Part
from minirad.exact.higher import backward_vertices, gradient_graph

G = gradient_graph(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
render(G, Part(backward_vertices(G), "the reverse pass, recorded"), show_ops=True)
