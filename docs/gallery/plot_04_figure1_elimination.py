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
result = minirad.eliminate(g, order="markowitz")
print("multiplications:", result.multiplications)
print("Jacobian:", result.jacobian.round(4))

# %%
# One drawing per step, each on the graph just before it: the vertex, its
# edges, and the fill-in edges it creates (dashed); the last drawing is the
# bipartite graph that remains. ``minirad.render_elimination`` returns the
# drawings as a list (in a notebook it shows as one strip);
# ``elimination_strip`` puts them in one picture, ``figures/figure1_elimination.png``.
from minirad.draw.render import elimination_strip  # noqa: E402

head = "Figure 1, vertex elimination in Markowitz order"
strip = elimination_strip(
    g, "markowitz", ncols=2, dpi=110,
    title=f"{head}: each step eliminates a vertex of least |pred| × |succ|")
strip
