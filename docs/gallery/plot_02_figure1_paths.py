"""
Bauer's formula: the paths of Figure 1
======================================

Every Jacobian entry is a sum, over the paths from its input to its output,
of the product of the partials along the path. Figure 1 has four paths, two
from each input.
"""

import minirad
from minirad import examples
from minirad.exact.paths import paths

g = examples.figure1()
routes = [[g.name(v) for v in path] for path in paths(g)]
print(minirad.count_paths(g))
for route in routes:
    print(" → ".join(route), "=", round(minirad.path_product(g, route), 4))

# %%
# All four paths, each in its own colour; an edge shared by several paths
# gets one strand per path.
all_paths = minirad.render(g, routes, title="The four input-output paths of Figure 1")
all_paths

# %%
# The two paths from ``x2`` nearly cancel: their products add up to the small
# entry ``dy/dx2``.
print(minirad.jacobian(g).round(4))
from_x2 = minirad.render(g, [r for r in routes if r[0] == "x2"],
                         title="The two paths from x2")
from_x2
