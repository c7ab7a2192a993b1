"""
What elimination orders cost
============================

The multiplications of forward, reverse, Markowitz and the optimal
elimination order on a few small graphs. Forward and reverse order are
sweeps in disguise; Markowitz is a greedy rule, and the exhaustive optimum
is sometimes cheaper.
"""

import minirad
from minirad import examples, plots
from minirad.gallery import SEEDS, layered_multi

graphs = {
    "Figure 1": examples.figure1(),
    "lecture": examples.lecture(),
    "two outputs": examples.two_outputs(),
    "interleaved\n3×3": examples.interleaved(3, 3),
    "layered\n4 → 4 → 4 → 3": layered_multi(rng=SEEDS["layered_graph"]),
}
for name, g in graphs.items():
    costs = [minirad.eliminate(g, order).multiplications
             for order in ("forward", "reverse", "markowitz", "optimal")]
    print(name.replace("\n", " "), costs)

figure = plots.plot_elimination_costs(graphs)
figure
