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
# # Lab 3: Bauer's formula, a Jacobian as a sum over paths
#
# In Lab 2 you computed Jacobians by sweeping over the linearized computational
# graph. This lab looks at the same graph from a different angle, the one the
# RAD paper (Oktay et al., ICLR 2021) builds on: **every entry of the Jacobian
# is a sum over the paths of the graph**. That view explains what the sweeps
# are really doing, and it is the starting point of randomized AD (Lab 5),
# which samples paths instead of visiting them all.
#
# In this lab you will
#
# * take the paper's Figure 1 apart into its four paths and add them up,
# * see why summing over paths one by one is hopeless on larger graphs,
# * count paths exactly, without visiting them, by dynamic programming.
#
# **You need:** Lab 2 (the LCG, the forward sweep).
# **Exercise:** 3.1 (count paths by dynamic programming).

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from minirad import LCG, examples, labs
from minirad.draw.render import PATH_COLORS, Paths, render
from minirad.exact.paths import path_product, paths
from minirad.exact.sweeps import forward_sweep, reverse_sweep

# %% [markdown]
# ## 1. The formula
#
# Write $\theta_i$ for the inputs, $y_j$ for the outputs and $z$ for any
# variable. Bauer's formula (Bauer, "Computational graphs and rounding
# error", 1974; eq. 1 in the RAD paper) says
#
# $$\frac{\partial y_j}{\partial \theta_i}
#   = \sum_{\text{paths } p \text{ from } \theta_i \text{ to } y_j}\;
#     \prod_{(k, l) \in p} \frac{\partial z_l}{\partial z_k}.$$
#
# Each path contributes the product of the local partials along its edges; the
# entry is the sum of these contributions.
#
# Why is this true? Take the forward sweep's rule from Lab 2,
# $\dot v = \sum_{u \to v} \frac{\partial v}{\partial u} \dot u$, and substitute
# it into itself: $\dot u$ is again a sum over $u$'s incoming edges, and so on,
# until every term reaches the seeded input, where $\dot\theta_i = 1$. Multiplying
# out the nested sums leaves one term per path, and that term is the path's
# product. The sweep computes exactly this sum, but it factors out the common
# beginnings of the paths instead of walking each one separately.

# %% [markdown]
# ## 2. The four paths of Figure 1
#
# The paper's program is `a = exp(x1); b = sin(x2); c = b * x2; d = a * c;
# return a * d`, traced at $(x_1, x_2) = (1, 2)$. minirad names its vertices
# `v2` ($a$), `v3` ($b$), `v4` ($c$), `v5` ($d$) and `y`.
# `minirad.exact.paths.paths(g)` lists every path from an input to an output, as a
# tuple of vertex numbers.

# %%
g = examples.figure1(1.0, 2.0)
all_paths = list(paths(g))
print(f"{len(all_paths)} paths from the inputs to the output")
labs.show(render(g, show_ops=True, title="Figure 1: the LCG at (1, 2)"), "lab3_figure1_lcg")

# %% [markdown]
# Now one path at a time. Each picture highlights one path; the table under it
# lists the partials along the path and their product.

# %%
def describe(g, path):
    """'x1 -> v2 -> y' and the partials along the path."""
    names = " -> ".join(g.names[v] for v in path)
    partials = [g.partial(u, v) for u, v in zip(path, path[1:])]
    return names, partials


for number, path in enumerate(all_paths, start=1):
    names, partials = describe(g, path)
    product = path_product(g, path)
    print(f"path {number}: {names}")
    print("   partials: " + " * ".join(f"{p:.4f}" for p in partials) + f" = {product:.4f}")
    # the number and colour this path has among all four (see the picture below)
    picture = render(g, Paths([path], labels=[f"path {number}"],
                              colors=[PATH_COLORS[number - 1]]),
                     title=f"path {number}: {names}   (product {product:.4f})")
    labs.show(picture, f"lab3_figure1_path{number}")

# %% [markdown]
# **What to look for.** In each picture the highlighted edges form one chain
# from an input at the bottom to $y$ at the top; the grey edges are the rest of
# the graph. Paths 1 and 2 start at $x_1$, paths 3 and 4 at $x_2$. Two paths
# from $x_1$ exist because $a = e^{x_1}$ reaches $y$ twice: directly (as the
# left factor of $y = a \cdot d$) and through $d$. Two paths from $x_2$ exist
# because $x_2$ enters $c = b \cdot x_2$ both directly and through $b = \sin x_2$.
#
# To pick an entry and step through its paths by clicking, make Figure 1's explorable page with `minirad explore minirad.examples:figure1 -o figure1.html` and open `figure1.html` in a browser (Paths panel).
#
# Adding the products per input gives the Jacobian. Compare with the reverse
# sweep:

# %%
by_paths = np.zeros((len(g.outputs), len(g.inputs)))
for path in all_paths:
    row, column = g.outputs.index(path[-1]), g.inputs.index(path[0])
    by_paths[row, column] += path_product(g, path)
print("sum over paths:", by_paths)
print("reverse sweep: ", reverse_sweep(g).jacobian)

# %% [markdown]
# Here are all four paths in one picture, as in the paper's Figure 1d. An edge
# used by several paths is drawn with one coloured strand per path.

# %%
labs.show(render(g, all_paths, title="Figure 1d: all four paths"),
          "lab3_figure1_all_paths")

# %% [markdown]
# **What to look for.** The edge $x_1 \to$ `v2` carries two strands: it is the
# shared first step of paths 1 and 2; `v4` $\to$ `v5` is shared by paths 3
# and 4, and `v5` $\to$ `y` by paths 1, 3 and 4. A sum over paths multiplies
# those shared partials again for every path; a forward sweep multiplies each
# shared beginning once, and a reverse sweep each shared ending once. On a graph this small that
# hardly matters; on a deep one it is the whole difference.

# %% [markdown]
# ## 3. Why enumerating paths explodes
#
# The paper's Figure 2b is a *fully interleaved* graph: an input $\theta$,
# then `depth` layers of `width` vertices, each vertex connected to every
# vertex of the next layer, then the output $y$. A path picks one vertex in
# each layer, so there are $\text{width}^\text{depth}$ paths, while the graph
# has only about $\text{width}^2 \cdot \text{depth}$ edges. Below is the
# smallest interesting one with a single path highlighted, the one the paper
# uses as its example ($\theta \to a_1 \to b_2 \to c_2 \to y$).

# %%
small = examples.interleaved(3, 3)
print(small, "paths:", 3 ** 3)  # width ** depth
labs.show(render(small, [("theta", "a1", "b2", "c2", "y")], edge_labels=False,
                 title="interleaved(3, 3): 27 paths, one highlighted"),
          "lab3_interleaved_3x3")

# %% [markdown]
# **What to look for.** Between any two layers all $3 \times 3$ edges are
# present, so after the highlighted path reaches $a_1$ it could have turned to
# any of $b_1, b_2, b_3$, and after that to any of $c_1, c_2, c_3$: $3 \cdot 3
# \cdot 3 = 27$ choices in total.
#
# Now let the depth grow. The number of paths is $3^\text{depth}$; we time how
# long it takes to walk through all of them one by one with `paths()`, as
# long as that is bearable. (In a moment you will count them without visiting
# them, and time that.)

# %%
def seconds(function, *args, repeat=1):
    """Best of `repeat` timings: the minimum is the least disturbed by other programs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        best = min(best, time.perf_counter() - start)
    return best


def walk_all(g):
    return sum(1 for _ in paths(g))


depths = list(range(1, 46))
width = 3
table = []
for depth in depths:
    graph = examples.interleaved(width, depth)
    count = width ** depth
    walk_time = seconds(walk_all, graph) if depth <= 10 else None
    table.append((depth, graph.n_vertices, graph.n_edges, count, walk_time))

print(f"{'depth':>5} {'vertices':>8} {'edges':>6} {'paths':>24} {'walk (s)':>9}")
for depth, n_vertices, n_edges, count, walk_time in table:
    if depth in (1, 2, 3, 5, 8, 10, 15, 20, 30, 45):
        walked = f"{walk_time:9.4f}" if walk_time is not None else f"{'-':>9}"
        print(f"{depth:>5} {n_vertices:>8} {n_edges:>6} {count:>24} {walked}")

per_path = table[9][4] / table[9][3]  # seconds per path when walking depth 10
years = per_path * table[-1][3] / (3600 * 24 * 365)
print(f"\nwalking costs about {per_path * 1e6:.2f} microseconds per path here, so walking the "
      f"{table[-1][3]:.2e} paths of depth 45 would take about {years:.0e} years")


# %%
def explosion_plot(table, width, per_path):
    depth = np.array([row[0] for row in table])
    edges = np.array([row[2] for row in table], dtype=float)
    count = np.array([float(row[3]) for row in table])
    walked = [(row[0], row[4]) for row in table if row[4] is not None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.3))
    left.semilogy(depth, count, "o-", ms=3, color="#D55E00", label=f"paths (${width}^{{depth}}$)")
    left.semilogy(depth, edges, "s-", ms=3, color="#0072B2", label="edges")
    left.axhline(1e20, color="#555555", ls=":", lw=1)
    left.text(1, 2e20, r"$10^{20}$", fontsize=9, color="#555555")
    left.set_xlabel("depth")
    left.set_ylabel("how many (log scale)")
    left.set_title(f"interleaved({width}, depth): paths explode, edges grow linearly",
                   fontsize=10)
    left.legend()
    left.grid(True, alpha=0.3)
    right.semilogy([d for d, _ in walked], [t for _, t in walked], "o-", ms=3, color="#D55E00",
                   label="walk every path (measured)")
    # beyond the measured depths: the time per path times the number of paths
    later = depth >= walked[-1][0]
    right.semilogy(depth[later], per_path * count[later], "--", color="#D55E00",
                   label="walk every path (extrapolated)")
    year = 3600 * 24 * 365
    right.axhline(year, color="#555555", ls=":", lw=1)
    right.text(1, year * 3, "one year", fontsize=9, color="#555555")
    right.set_xlabel("depth")
    right.set_ylabel("seconds (log scale)")
    right.set_title("time to walk every path", fontsize=10)
    right.legend()
    right.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


labs.show(explosion_plot(table, width, per_path), "lab3_path_explosion")

# %% [markdown]
# **What to look for.** On the left, on a logarithmic axis, the number of paths
# is a straight line (exponential growth: each layer multiplies it by 3) and
# passes $10^{20}$ at depth 42, while the number of edges barely rises (linear
# growth looks almost flat on a log axis). On the right, walking the paths gets
# about three times slower with every layer; we measured up to depth 10 and the
# dashed line extrapolates, crossing the dotted "one year" line near depth 28
# (on a typical laptop). Counting need not walk: the exercise below counts
# them in time that grows only with the number of edges.
#
# Summing Bauer's formula term by term has the same problem as walking: one
# term per path. Sweeps, vertex elimination (Lab 4) and path sampling (Lab 5)
# all avoid it.

# %% [markdown]
# ## 4. Exercise 3.1: counting paths by dynamic programming
#
# Let $N(v)$ be the number of paths from a fixed input to vertex $v$. Every
# path into $v$ arrives through exactly one incoming edge $u \to v$, after a
# path into $u$; so
#
# $$N(v) = \sum_{u \to v} N(u), \qquad N(\text{the input}) = 1.$$
#
# That is the forward sweep of Lab 2 with every partial replaced by 1. In
# topological order each $N(u)$ is ready when $v$ needs it.
#
# **Exercise 3.1.** Complete `count_paths(g)`: return the exact number of paths
# from every input to every output, shape `(len(g.outputs), len(g.inputs))`
# (a list of lists or a numpy array with `dtype=object`), entry `[j][i]` for
# output `g.outputs[j]` and input `g.inputs[i]`.
#
# Two traps, both caught by the check:
#
# * **Do not enumerate paths.** The check includes graphs with about
#   $4.5 \times 10^9$ and $3^{45} \approx 3 \times 10^{21}$ paths and stops a
#   function after 10 seconds.
# * **Count with Python integers.** A float keeps only 53 bits (about 16 digits),
#   so it cannot hold $3^{45}$ exactly, and a numpy `int64` silently wraps
#   around above $2^{63} - 1 \approx 9.2 \times 10^{18}$. Python's `int` has no
#   limit. Avoid `np.zeros` (floats) and `np.int64` arrays for the counts.

# %%
def count_paths(g):
    """Exact numbers of input-to-output paths, one row per output, one column per input."""
    # BEGIN SOLUTION Exercise 3.1: count paths
    # counts[v][i]: paths from input i to v, as Python ints (no overflow, no rounding)
    counts = [[0] * len(g.inputs) for _ in range(g.n_vertices)]
    for i, x in enumerate(g.inputs):
        counts[x][i] = 1
    for v in range(g.n_vertices):  # topological order: predecessors are final
        for u in g.predecessors(v):
            counts[v] = [a + b for a, b in zip(counts[v], counts[u])]
    return [counts[y] for y in g.outputs]
    # END SOLUTION


# %%
labs.check_count_paths(count_paths)
print("Figure 1:", count_paths(g))
print("interleaved(3, 45):", count_paths(examples.interleaved(3, 45)))
deepest = examples.interleaved(3, 45)
print(f"your count on depth 45 took {seconds(count_paths, deepest, repeat=5):.5f} s; walking "
      f"would take about {per_path * 3 ** 45 / (3600 * 24 * 365):.0e} years")

# %% [markdown]
# ## 5. Counting is a sweep with unit partials
#
# The recurrence for $N(v)$ is the forward sweep with every partial set to 1.
# So a forward sweep on a copy of the graph whose partials are all 1 computes
# path counts too, as floats. On Figure 1 it gives exactly your counts; on the
# deep interleaved graph the float is close but not exact, for the reason the
# exercise warned about.

# %%
def with_unit_partials(g):
    """The same graph with every partial set to 1: Bauer's sum then counts paths."""
    return LCG(g.names, g.sources, g.targets, np.ones(g.n_edges), g.inputs, g.outputs)


deep = examples.interleaved(3, 45)
print("Figure 1, sweep on unit partials:", forward_sweep(with_unit_partials(g)).jacobian)
as_float = forward_sweep(with_unit_partials(deep)).jacobian[0, 0]
exact_count = count_paths(deep)[0][0]
print(f"interleaved(3, 45): sweep gives {as_float:.17g}")
print(f"                    exact count {exact_count}")
print(f"                    float off by {int(as_float) - exact_count}")

# %% [markdown]
# ## What you learned
#
# * Bauer's formula: a Jacobian entry is the sum, over all paths from the input
#   to the output, of the product of the local partials along the path.
# * The forward and reverse sweeps evaluate that sum without listing paths, by
#   sharing the common beginnings (forward) or endings (reverse) of paths.
# * The number of paths can grow exponentially with depth ($3^{45}$ on a graph
#   of 402 edges), yet counting them takes one pass over the edges, with exact
#   integers.
#
# ## Going further
#
# * `minirad.exact.paths.path_costs(g)` gives the multiplications and additions of
#   summing Bauer's formula term by term. Compare it with
#   `forward_sweep(g).multiplications` for `examples.interleaved(3, depth)`.
# * Count the paths *through* a given edge $(u, v)$: it is (paths into $u$)
#   times (paths out of $v$). Which edge of Figure 1 lies on the most paths?
# * Lab 4 collapses the graph one vertex at a time (vertex elimination), of
#   which the forward and reverse sweeps are two special orders; Lab 5 estimates
#   Bauer's sum by sampling a few paths, the idea of randomized AD.
