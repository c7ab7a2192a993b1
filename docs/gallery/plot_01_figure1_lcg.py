"""
The LCG of the paper's Figure 1
===============================

The RAD paper's example program, ``y = exp(x1) · exp(x1) · sin(x2) · x2``,
traced at ``(x1, x2) = (1, 2)``. Each vertex shows its operation and value,
each edge ``u → v`` the local partial ``∂v/∂u``; the inputs are at the bottom.
"""

import minirad
from minirad import examples

g = examples.figure1()
print(g)
print(g.wengert())

# %%
# The partials depend on the values: the edge ``x1 → v2`` carries
# ``exp(1) = 2.718`` and ``x2 → v3`` carries ``cos(2) = -0.4161``.
drawing = minirad.render(
    g, show_ops=True, show_values=True, legend=True,
    title="Figure 1(c): the LCG of y = exp(x1) · exp(x1) · sin(x2) · x2 at (x1, x2) = (1, 2)"
          "\neach vertex: its operation and value; each edge u → v: the local partial ∂v/∂u")
drawing
