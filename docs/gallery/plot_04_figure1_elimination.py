"""
Vertex elimination in Markowitz order
=====================================

Eliminating an intermediate vertex ``v`` joins each predecessor to each
successor by the product of the two partials (adding it to an edge already
there), at a cost of ``|pred(v)| × |succ(v)|`` multiplications. Eliminating
every intermediate leaves the bipartite graph of the Jacobian. Markowitz's
order picks, at each step, a vertex of least cost.
"""

import minirad
from minirad import examples

g = examples.figure1()
result = minirad.eliminate(g, "markowitz")
print("multiplications:", result.multiplications)
print("Jacobian:", result.jacobian.round(4))

# %%
# One drawing per step, each on the graph just before it: the vertex, its
# edges, and the fill-in edges it creates (dashed); the last drawing is the
# bipartite graph that remains.
steps = minirad.render_elimination(g, "markowitz", title="Figure 1, Markowitz order")
steps
