# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab 4: Vertex elimination
#
# Labs 2 and 3 computed the Jacobian from the LCG in three ways: pushing
# tangents forward, pulling adjoints backward, and adding up products along
# paths. This lab shows that all three are special cases of one operation on
# the graph itself: **eliminating a vertex**. Remove an intermediate vertex,
# reconnect its neighbours with the chain rule, and repeat. When only inputs
# and outputs are left, the edges that remain *are* the Jacobian.
#
# The order in which vertices are eliminated does not change the answer, but
# it changes the amount of arithmetic. Forward and reverse mode are two
# particular orders; there are cheaper ones, and finding the cheapest is a
# hard combinatorial problem.
#
# **You need:** Labs 2 and 3 (the LCG, sweeps, paths).
# **Exercises:** 4.1 (eliminate one vertex), 4.2 (the Markowitz order) and
# 4.3 (colouring a sparsity pattern).

# %%
import numpy as np

import minirad
from minirad import examples, labs, ops
from minirad.draw.plots import plot_elimination_costs
from minirad.draw.render import Eliminating, elimination_strip, render, render_elimination
from minirad.exact.elimination import eliminate, elimination_cost
from minirad.exact.sweeps import reverse_sweep

# %% [markdown]
# ## 1. One elimination step
#
# Take an intermediate vertex $v$. Every path through $v$ enters it from some
# predecessor $p$ and leaves it to some successor $s$, and contributes
# $\frac{\partial s}{\partial v}\frac{\partial v}{\partial p}$ times the rest of the path
# (Lab 3). So we can delete $v$ without changing any path sum, provided that
# for every pair $(p, s)$ we put in the edge $p \to s$ with partial
#
# $$\frac{\partial s}{\partial p} \;\mathrel{+}=\; \frac{\partial s}{\partial v}\,
# \frac{\partial v}{\partial p}.$$
#
# The $\mathrel{+}=$ matters. If $p \to s$ already exists (there was a path
# from $p$ to $s$ that avoided $v$), the product is **added** to its partial:
# the two routes from $p$ to $s$ are parallel paths, and parallel paths add.
# If it does not exist, the step creates it: a **fill-in** edge.
#
# **Cost.** The step multiplies once per (predecessor, successor) pair:
# $|\mathrm{pred}(v)| \cdot |\mathrm{succ}(v)|$ multiplications, counted on the
# graph as it is at that moment (earlier steps may have given $v$ new
# neighbours). Each product that lands on an existing edge also costs one
# addition. This number, $|\mathrm{pred}(v)| \cdot |\mathrm{succ}(v)|$, is
# called the **Markowitz degree** of $v$. (Vertex elimination and its
# orders are treated in Griewank and Walther, *Evaluating Derivatives*,
# 2008, ch. 9, and Naumann, *The Art of Differentiating Computer Programs*,
# 2012.)
#
# Here is the paper's Figure 1 again, at $(x_1, x_2) = (1, 2)$, and its first
# elimination step in forward order: vertex `v2` ($a = e^{x_1}$).
#
# To eliminate its vertices by clicking, in any order, make Figure 1's explorable page with `minirad explore minirad.examples:figure1 -o figure1.html` and open `figure1.html` in a browser (Eliminate panel).

# %%
g = examples.figure1()
print(g.wengert())
labs.show(render(g, Eliminating("v2"), show_ops=True,
                 title="Figure 1: eliminating v2 = exp(x1)"), "lab4_figure1_step_v2")

# %% [markdown]
# **What to look for.** The yellow vertex `v2` is about to go. Its edges
# (orange) are the one edge in from `x1` and the two edges out to `v5` and
# `y`. One predecessor times two successors: two multiplications, and two new
# dashed pink edges, `x1 -> v5` and `x1 -> y`, each labelled with the
# product of the two partials it replaces (e.g. $2.718 \times 4.943 = 13.44$).
# Neither existed before, so both are fill-in and no addition is needed.
#
# ## 2. Figure 1, all the way down
#
# `render_elimination(g, order)` draws every step of an order on the graph
# as it is just before that step, then the final graph. Here is the forward
# order (`v2, v3, v4, v5`, the order of the trace).

# %%
drawings = render_elimination(g, "forward")
for number, drawing in enumerate(drawings, start=1):
    labs.show(drawing, f"lab4_forward_step_{number}")

# %% [markdown]
# **What to look for.**
#
# * **Step 2** (eliminate `v3` $= \sin x_2$) creates no new edge: `x2 -> v4`
#   is already there, because $c = b \cdot x_2$ uses $x_2$ directly. The edge
#   turns green and its label shows the old and the new partial: the route
#   through $\sin$ is *added* to the direct one. That is the chain rule's sum
#   over the two uses of $x_2$, done once and for all on the graph.
# * **Step 4** (eliminate `v5`) both adds (to `x1 -> y`, which the first step
#   created) and fills in (`x2 -> y`).
# * The **last picture** has only inputs and outputs: a bipartite graph. Its
#   two edges carry $\partial y/\partial x_1$ and $\partial y/\partial x_2$.
#   Compare them with the reverse sweep of Lab 2:

# %%
result = eliminate(g, "forward")
print("Jacobian by elimination:", result.jacobian)
print("Jacobian by a reverse sweep:", reverse_sweep(g).jacobian)
print(f"forward order: {result.multiplications} multiplications, "
      f"{result.additions} additions")

# %% [markdown]
# ## 3. Exercise 4.1: eliminate one vertex
#
# For this exercise a graph is a plain Python dict that maps each edge, a
# pair of vertex names, to its partial: `{("x1", "v2"): 2.718..., ...}`.
# `labs.edge_dict(g)` makes one from an LCG.
#
# **Exercise 4.1.** Complete `eliminate_one(edges, v)`. It receives such a
# dict and the name `v` of an intermediate vertex, and **returns a new dict**
# for the graph with `v` eliminated:
#
# * no edge touches `v` any more;
# * for every predecessor `p` of `v` and every successor `s` of `v`, the
#   product `edges[v, s] * edges[p, v]` is added to the partial of `(p, s)`,
#   creating that edge (from 0) if it is missing;
# * all other edges are kept as they are.
#
# Do not modify the dict you are given (the check verifies this), so that
# the caller can still look at the graph before the step.

# %%
def eliminate_one(edges, v):
    """Eliminate vertex v from the edge dict {(u, w): dw/du}; return a new dict."""
    # BEGIN SOLUTION Exercise 4.1: eliminate one vertex
    into_v = {p: d for (p, w), d in edges.items() if w == v}
    out_of_v = {s: d for (w, s), d in edges.items() if w == v}
    new = {edge: d for edge, d in edges.items() if v not in edge}
    for p, d_vp in into_v.items():
        for s, d_sv in out_of_v.items():
            new[p, s] = new.get((p, s), 0.0) + d_sv * d_vp  # add: parallel paths sum
    return new
    # END SOLUTION


# %% [markdown]
# The check eliminates every intermediate of several graphs (Figure 1 in
# forward and in reverse order, the lecture's and the lab's examples, a
# two-output graph, a seeded random DAG, an interleaved graph) and compares
# each of your steps with `minirad.exact.elimination.eliminate_vertex` on the same
# graph. A failure names the graph and the vertices already eliminated.

# %%
labs.check_eliminate_vertex(eliminate_one)

# %% [markdown]
# Now use your function to collapse Figure 1 completely, in forward order.
# What is left must be the Jacobian.

# %%
edges = labs.edge_dict(g)
for v in ["v2", "v3", "v4", "v5"]:
    edges = eliminate_one(edges, v)
    print(f"after eliminating {v}: {len(edges)} edges")
print("what is left:", edges)
jacobian = reverse_sweep(g).jacobian
assert np.isclose(edges["x1", "y"], jacobian[0, 0])
assert np.isclose(edges["x2", "y"], jacobian[0, 1])

# %% [markdown]
# ## 4. A variable used twice: gradient accumulation
#
# Section 2 hinted at something important. In Figure 1, $x_2$ is used
# **twice** (by $b = \sin x_2$ and by $c = b\,x_2$), and so is $a$ (by
# $d = a\,c$ and by $y = a\,d$). A variable used in several places influences
# the output along several routes, and its derivative is the **sum** of the
# contributions of each use. The ChainRules notes put it as: a variable used
# several times receives the sum of its partial adjoints.
#
# Here are the two routes from $x_2$ up to $y$, drawn as paths.

# %%
labs.show(render(g, [("x2", "v3", "v4", "v5", "y"), ("x2", "v4", "v5", "y")],
                 title="x2 is used twice: two routes to y"), "lab4_x2_two_uses")

# %% [markdown]
# **What to look for.** The two coloured paths share their top part
# (`v4 -> v5 -> y`) and split at `x2`. The legend gives each path's
# product; $\partial y / \partial x_2$ is their sum. Elimination added them
# in step 2 (the green edge); a reverse sweep adds them when it pulls
# adjoints back into `x2`.
#
# In reverse mode each use contributes a **partial adjoint**: the adjoint of
# the vertex that used $x_2$, times the local partial of that use. In the
# reverse sweep, $\bar x_2 = \bar b \,\frac{\partial b}{\partial x_2} + \bar c\,
# \frac{\partial c}{\partial x_2}$:

# %%
adjoints = reverse_sweep(g).adjoints[:, 0]  # adjoints[v] = dy/dv
i = g.index
from_b = adjoints[i("v3")] * g.partial("x2", "v3")  # through b = sin(x2)
from_c = adjoints[i("v4")] * g.partial("x2", "v4")  # through c = b * x2
print(f"partial adjoint of x2 via b = sin(x2): {from_b:10.4f}")
print(f"partial adjoint of x2 via c = b * x2:  {from_c:10.4f}")
print(f"their sum:                             {from_b + from_c:10.4f}")
print(f"adjoint of x2 from the reverse sweep:  {adjoints[i('x2')]:10.4f}")
assert np.isclose(from_b + from_c, adjoints[i("x2")])

# %% [markdown]
# A reverse sweep therefore keeps one running total per vertex and
# **accumulates in place**: each use does `adjoint[u] += partial * adjoint[v]`.
# (The ChainRules notes make the same point for arrays, where adding into the
# existing buffer also saves allocating a new one.) Writing `=` instead of
# `+=` silently keeps only the **last** use a sweep visits, and a reverse
# sweep, going through the vertices from the top down, visits a vertex's
# lowest-numbered use last. So the buggy sweep computes the right Jacobian
# of the *wrong graph*: the one in which every vertex keeps only the edge to
# its first successor. We build that graph and run minirad's own reverse
# sweep on both:

# %%
def last_use_only(g):
    """g with each vertex keeping only its edge to its first successor: the
    graph a reverse sweep that overwrites (=) instead of adding (+=) runs on."""
    first = np.array([v == g.successors(u)[0] for u, v, _ in g.edges()], dtype=bool)
    return minirad.LCG(g.names, g.sources[first], g.targets[first], g.partials[first],
                       g.inputs, g.outputs)


print("accumulating (+=):", reverse_sweep(g).jacobian[0])
print("overwriting  (=): ", reverse_sweep(last_use_only(g)).jacobian[0])
print("edges the overwriting sweep loses:",
      sorted(set(labs.edge_dict(g)) - set(labs.edge_dict(last_use_only(g)))))

# %% [markdown]
# Both entries are wrong without accumulation, since both inputs reach $y$
# through a variable used twice ($x_1$ through $a$, $x_2$ directly).
#
# One more place where accumulation happens: **inside** a single operation.
# In `y * y` the same variable is both operands, so $\partial(y^2)/\partial y$
# gets a contribution from each: $y + y = 2y$. minirad's tracer adds the two
# at trace time and stores a single edge:

# %%
print(minirad.trace(lambda x, y: y * y + ops.sin(x), 1.0, 1.0).wengert())

# %% [markdown]
# The edge `v1 -> v2` carries $2.0 = 2y$, not $1.0$. Lab 6 meets a published
# number that came out of a tracer that did *not* add up the two operands.
#
# ## 5. Elimination orders and their costs
#
# Any order of the intermediates gives the same Jacobian (up to rounding),
# but not the same cost. Four named orders:
#
# * **forward**: the order of the trace (topological order);
# * **reverse**: the opposite;
# * **Markowitz**: always eliminate a vertex of least current Markowitz degree
#   $|\mathrm{pred}(v)| \cdot |\mathrm{succ}(v)|$, recomputed after every step;
#   ties go to the lowest vertex number. A greedy heuristic from sparse matrix
#   factorisation;
# * **optimal**: the cheapest order, found by searching all subsets of
#   eliminated vertices (exponential; minirad allows it up to 16
#   intermediates).
#
# Two of the graphs below come from Lab 2's cost comparison: a sum
# $\sum_i \sin(x_i x_{i+1})$ with six inputs and one output, and a recursion
# $y_{k+1} = t \sin y_k$ with one input and six outputs.

# %%
def many_inputs(*x):
    total = ops.sin(x[0] * x[1])
    for a, b in zip(x[1:], x[2:]):
        total = total + ops.sin(a * b)
    return total


def many_outputs(t):
    ys = [ops.sin(t)]
    for _ in range(5):
        ys.append(t * ops.sin(ys[-1]))
    return tuple(ys)


graphs = {
    "Figure 1": examples.figure1(),
    "two outputs": examples.two_outputs(),
    "6 inputs, 1 output": minirad.trace(many_inputs, *np.linspace(0.1, 0.6, 6)),
    "1 input, 6 outputs": minirad.trace(many_outputs, 0.7),
    "interleaved(3, 3)": examples.interleaved(3, 3),
    "random DAG": examples.random_dag(3, 10, 2, rng=0),
}
orders = ("forward", "reverse", "markowitz", "optimal")
cost = {(name, order): elimination_cost(graph, order)[0]  # (multiplications, additions)[0]
        for name, graph in graphs.items() for order in orders}
print(f"{'graph':<20}{'vertices':>9}{'edges':>7}  " + "".join(f"{o:>11}" for o in orders))
for name, graph in graphs.items():
    print(f"{name:<20}{graph.n_vertices:>9}{graph.n_edges:>7}  "
          + "".join(f"{cost[name, order]:>11}" for order in orders))
print("(multiplications)")

# %%
labs.show(plot_elimination_costs(graphs, orders), "lab4_elimination_costs")

# %% [markdown]
# **What to look for.**
#
# * With **many inputs and one output** the reverse order is much cheaper
#   than the forward order, and with **one input and many outputs** it is the
#   other way round: the same trade-off as forward vs reverse sweeps in Lab 2.
# * **Markowitz** is never far off, and on the graph with six outputs it finds
#   the optimum, but it is a greedy rule, not a guarantee: on the six-input
#   sum and on `interleaved(3, 3)` it costs more than the best order (on the
#   latter even one more than forward order).
# * On **Figure 1** the optimal order saves one multiplication over all the
#   others. The picture below shows how.

# %%
# the claims above, checked
assert cost["6 inputs, 1 output", "reverse"] < cost["6 inputs, 1 output", "forward"]
assert cost["1 input, 6 outputs", "forward"] < cost["1 input, 6 outputs", "reverse"]
assert cost["1 input, 6 outputs", "markowitz"] == cost["1 input, 6 outputs", "optimal"]
assert cost["6 inputs, 1 output", "markowitz"] > cost["6 inputs, 1 output", "optimal"]
assert cost["interleaved(3, 3)", "markowitz"] == cost["interleaved(3, 3)", "forward"] + 1
assert cost["Figure 1", "optimal"] + 1 == min(cost["Figure 1", o] for o in orders[:3])
print("optimal order for Figure 1:", eliminate(g, "optimal").order)
labs.show(elimination_strip(g, "optimal", ncols=3), "lab4_figure1_optimal")

# %% [markdown]
# **What to look for.** The optimal order keeps `v2` ($a$) for last. By
# then everything above it has collapsed onto the single edge `v2 -> y`, so
# eliminating it costs one multiplication instead of two: leaving a vertex
# with several successors until its successors have merged pays off.
#
# ## 6. Exercise 4.2: the Markowitz order
#
# **Exercise 4.2.** Complete `markowitz_order(g)`: given an LCG, return the
# list of the names of its intermediate vertices in Markowitz order:
#
# 1. among the intermediates not yet eliminated, pick the one with the least
#    Markowitz degree $|\mathrm{pred}(v)| \cdot |\mathrm{succ}(v)|$ **on the
#    current graph**;
# 2. if several share the least degree, pick the one with the **lowest vertex
#    number** (the earliest in `g.names`);
# 3. eliminate it (its predecessors and successors become joined) and repeat.
#
# The degrees depend only on which vertices are joined, not on the partials,
# so you may track just the sets of predecessors and successors (or reuse
# your `eliminate_one` on `labs.edge_dict(g)`). Useful: `g.intermediates`
# (vertex numbers), `g.predecessors(v)`, `g.successors(v)`, `g.names[v]`.

# %%
def markowitz_order(g):
    """Names of g's intermediates in Markowitz order (ties: lowest vertex number)."""
    # BEGIN SOLUTION Exercise 4.2: Markowitz order
    pred = {v: set(g.predecessors(v)) for v in range(g.n_vertices)}
    succ = {v: set(g.successors(v)) for v in range(g.n_vertices)}
    left = set(g.intermediates)
    order = []
    while left:
        v = min(left, key=lambda u: (len(pred[u]) * len(succ[u]), u))
        for s in succ[v]:  # every predecessor of v now feeds every successor
            pred[s].discard(v)
            pred[s] |= pred[v]
        for p in pred[v]:
            succ[p].discard(v)
            succ[p] |= succ[v]
        left.remove(v)
        order.append(g.names[v])
    return order
    # END SOLUTION


# %% [markdown]
# The check compares your order with
# `minirad.exact.elimination.elimination_order(g, "markowitz")` on ten graphs,
# among them seeded random DAGs with many ties, and names the first step
# where the two differ.

# %%
labs.check_markowitz_order(markowitz_order)

# %% [markdown]
# Your order is a valid elimination order, so minirad can price it. Here is
# a random graph with 40 intermediates, too many for the exhaustive search.
# Which order wins? No rule wins on every graph: run it with a few other
# seeds (the `rng=` argument) and watch the ranking change.

# %%
big = examples.random_dag(3, 40, 3, density=0.15, rng=4)
mine = markowitz_order(big)
print(big)
for name, order in (("forward", "forward"), ("reverse", "reverse"), ("your Markowitz", mine)):
    m, a = elimination_cost(big, order)
    print(f"{name:<16} {m:>5} multiplications, {a:>5} additions")

# %% [markdown]
# ## 7. Exercise 4.3: fewer sweeps by colouring
#
# Every order above computes the whole Jacobian. When the Jacobian is
# **sparse**, sweeps can share the work. Its sparsity pattern needs no
# numbers: entry $(i, j)$ can be nonzero only if some path leads from input
# $j$ to output $i$, which is the same sweep run on Booleans
# (`minirad.exact.sparsity.pattern`). Here is a program whose output $i$ uses
# only inputs $i-1, i, i+1$: a tridiagonal Jacobian.

# %%
from minirad.draw.patterns import plot_pattern, plot_strategies
from minirad.exact.compressed import plan, recover
from minirad.exact.sparsity import pattern

band = examples.banded(8)
P = pattern(band)
print(P.astype(int))

# %% [markdown]
# A forward sweep seeded with $e_0 + e_3$ returns column 0 **plus** column 3.
# No row holds both (their nonzeros are rows 0-1 and rows 2-4), so each entry
# of the sum is one entry of the Jacobian, and the pattern says which: one
# sweep, two columns. Grouping columns so that no row holds two of a group
# is colouring a graph whose vertices are the columns, joined when they
# share a row (Gebremedhin, Manne and Pothen, "What color is your Jacobian?",
# 2005).
#
# **Exercise 4.3.** Complete `colour_columns(P)`: given a Boolean pattern
# `P` (rows: outputs, columns: inputs), return a list with one colour
# (0, 1, 2, ...) per column such that no row holds two columns of the same
# colour. Use the greedy rule: take the columns in order and give each the
# smallest colour that no earlier column sharing a row with it has.

# %%
def colour_columns(P):
    """One colour per column of P; columns of one colour share no row."""
    # BEGIN SOLUTION Exercise 4.3: colour the columns of a pattern
    colours = []
    for j in range(P.shape[1]):
        taken = {colours[k] for k in range(j) if np.any(P[:, j] & P[:, k])}
        colour = 0
        while colour in taken:
            colour += 1
        colours.append(colour)
    return colours
    # END SOLUTION


# %%
labs.check_column_colouring(colour_columns)

# %% [markdown]
# Three colours, so three forward sweeps instead of eight give the whole
# tridiagonal Jacobian; rows can be coloured the same way for reverse
# sweeps. `minirad.exact.compressed.plan` prices every strategy by the sweeps'
# cost convention and picks one, and the pictures show the groups and the
# bill.

# %%
colours = colour_columns(P)
print("your colours:", colours)
chosen = plan(band)
print(chosen.explanation())
J = recover(band, chosen.best).jacobian
assert np.allclose(J, minirad.jacobian(band))
labs.show(plot_pattern(band), "lab4_colouring")
labs.show(plot_strategies(chosen), "lab4_strategies")

# %% [markdown]
# **What to look for.** The multiplications of the coloured sweeps equal
# those of the dense ones here: minirad's sweeps already skip what a seed
# cannot reach, so colouring saves **passes** over the graph (what an AD
# tool that runs the whole program once per seed pays), not arithmetic.
# Try `examples.arrow(8)`: a dense row *and* a dense column defeat both
# colourings, and only the **mixed** strategy (the dense row by a reverse
# sweep, the rest by coloured forward sweeps) needs few sweeps.

# %% [markdown]
# ## 8. Exercise 4.4: eliminating one edge at a time
#
# Elimination works on edges too. A vertex step applies the chain rule to
# **every** path through a vertex at once.
# Naumann's **edge elimination** applies it to the paths through a single
# edge $i \to j$, in one of two directions ($c_{ji}$ is the partial on
# $i \to j$):
#
# * **front elimination** ($j$ an intermediate): for every successor $k$ of
#   $j$, add $c_{kj}\,c_{ji}$ to the edge $i \to k$ (creating it if needed),
#   then delete $i \to j$. Cost: $|\mathrm{succ}(j)|$ multiplications. If $j$
#   has no in-edge left, no input reaches it any more: $j$ goes, with its
#   out-edges.
# * **back elimination** ($i$ an intermediate): for every predecessor $h$ of
#   $i$, add $c_{ji}\,c_{ih}$ to the edge $h \to j$, then delete $i \to j$.
#   Cost: $|\mathrm{pred}(i)|$ multiplications. If $i$ has no out-edge left,
#   it reaches no output any more: $i$ goes, with its in-edges.
#
# Front-eliminating all the in-edges of a vertex is eliminating the vertex;
# so is back-eliminating all its out-edges. Mixing the two, edge by edge,
# can be cheaper than every vertex order. `examples.edge_beats_vertex()` is
# such a graph (found by a search over random graphs,
# `minirad.exact.elimination_gaps`): every vertex order costs at least 7
# multiplications, the best edge sequence 6.

# %%
from minirad.draw.edge_steps import edge_elimination_strip

beats = examples.edge_beats_vertex()
best_edges = eliminate(beats, "optimal", on="edges")   # the same engine, one edge a step
print("cheapest vertex order:", elimination_cost(beats, "optimal"), "(multiplications, additions)")
print("cheapest edge sequence:", (best_edges.multiplications, best_edges.additions))
for step in best_edges.order:
    print("   ", step)
labs.show(edge_elimination_strip(beats, "optimal", title="edge_beats_vertex(): the cheapest "
                                 "edge sequence"), "lab4_edge_beats_vertex")

# %% [markdown]
# **What to look for.** Each row is one step: on the left the eliminated
# edge (orange) and the products it forms (coloured paths), on the right
# where they landed. Vertex `a` loses its out-edge `a -> b` by back
# elimination in the first step, but its in-edge `x -> a` only in the last,
# by front elimination: a vertex order would have to treat all of `a`'s
# edges in one step.
#
# **Exercise 4.4.** Complete `eliminate_edge(edges, i, j, direction)`. It
# receives an edge dict as in Exercise 4.1, the edge `i -> j` and the
# direction, `"front"` or `"back"` (the check only asks for steps the
# definitions allow: `j` is an intermediate for front, `i` for back), and
# **returns a new dict** for the graph after the step, following the two
# definitions above. In a dict a vertex exists only through its edges, so
# deleting `j` (or `i`) is deleting its remaining edges.

# %%
def eliminate_edge(edges, i, j, direction):
    """Front- or back-eliminate the edge i -> j of the edge dict; return a new dict."""
    # BEGIN SOLUTION Exercise 4.4: eliminate one edge
    new = dict(edges)
    c_ji = new.pop((i, j))
    if direction == "front":  # i joins every successor k of j
        for (a, k), c_kj in edges.items():
            if a == j:
                new[i, k] = new.get((i, k), 0.0) + c_kj * c_ji  # parallel paths add up
        if not any(b == j for _, b in new):  # nothing reaches j any more: it goes
            new = {(a, b): c for (a, b), c in new.items() if a != j}
    else:  # every predecessor h of i joins j
        for (h, b), c_ih in edges.items():
            if b == i:
                new[h, j] = new.get((h, j), 0.0) + c_ji * c_ih
        if not any(a == i for a, _ in new):  # i reaches nothing any more: it goes
            new = {(a, b): c for (a, b), c in new.items() if b != i}
    return new
    # END SOLUTION


# %% [markdown]
# The check replays front-only, back-only and mixed sequences on five
# graphs (among them `edge_beats_vertex()` in its cheapest sequence) and
# compares each of your steps with minirad's (`eliminate(g, order, on="edges")`).

# %%
labs.check_eliminate_edge(eliminate_edge)

# %% [markdown]
# Replay the cheapest sequence with your own function and count its
# multiplications as the definitions price them: what is left is the
# Jacobian, for 6 multiplications where vertex elimination needs 7.

# %%
edges = labs.edge_dict(beats)
multiplications = 0
for i, j, direction in best_edges.order:
    partners = [b for a, b in edges if a == j] if direction == "front" else \
        [a for a, b in edges if b == i]
    multiplications += len(partners)
    edges = eliminate_edge(edges, i, j, direction)
print("what is left:", edges, "after", multiplications, "multiplications")
assert multiplications == 6 and np.isclose(edges["x", "y"], minirad.jacobian(beats)[0, 0])

# %% [markdown]
# Elimination goes one level further still: Naumann's **face elimination**
# (`eliminate(g, order, on="faces")`) works on the dual graph, whose
# vertices are the LCG's edges, and eliminates one *pair* of consecutive
# edges at a time. Every edge sequence is a face sequence of the same cost,
# so its optimum can only be lower. Naumann reports graphs where it *is*
# lower, yet none has turned up among the thousands of small graphs
# `minirad.exact.elimination_gaps` has searched (its docstring lists
# them), although face steps reach dual graphs that no edge sequence
# reaches. An open exercise: find one. `face_edge_census(n_inputs,
# n_intermediates, n_outputs, max_edges)` goes through every small graph of
# a shape, and `minirad.exact.elimination.cheaper_than(g, cost)` asks whether faces
# beat a cost you know (the edge optimum), which is far quicker than
# finding the face optimum.

# %% [markdown]
# ## What you learned
#
# * Eliminating an intermediate vertex joins each predecessor to each
#   successor with the product of the two partials, **adding** it to an
#   existing edge or creating a fill-in edge. Repeated until only inputs and
#   outputs remain, it leaves the Jacobian on the edges.
# * A step costs $|\mathrm{pred}(v)| \cdot |\mathrm{succ}(v)|$
#   multiplications on the current graph, so the order matters. Forward and
#   reverse order mirror forward and reverse mode; Markowitz is a good greedy
#   heuristic; the optimal order can be cheaper still and is expensive to
#   find.
# * A variable used several times receives the **sum** of its partial
#   adjoints. A reverse sweep accumulates them in place (`+=`); elimination
#   accumulates them into existing edges; the tracer accumulates the operands
#   of `y * y` into one edge.
# * A sparse Jacobian needs fewer sweeps: columns that share no row can be
#   seeded together (a colouring of the pattern, which the graph gives
#   without any numbers), and likewise rows for reverse sweeps.
# * Eliminating one edge at a time (front or back) is a finer step than a
#   vertex, and some graphs have an edge sequence cheaper than every vertex
#   order.
#
# ## Going further
#
# * Find a small graph where forward, reverse and Markowitz orders all miss
#   the optimum. (`examples.random_dag` with a few seeds and
#   `elimination_cost(g, "optimal")` make a quick search.)
# * Face elimination (section 8's last paragraph) can only be cheaper than
#   edge elimination; find a graph where it is.
# * Lab 5 keeps the graph but gives up exactness: it samples a few edges at
#   each vertex and still gets the Jacobian right **on average**.
