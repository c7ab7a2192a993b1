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
# # Lab 5: Randomized automatic differentiation
#
# Reverse mode needs the whole LCG in memory before the backward pass can
# start: every local partial of the forward pass, or the values needed to
# recompute them. For a large model that memory is the bottleneck. Oktay et
# al. (*Randomized Automatic Differentiation*, ICLR 2021) ask: stochastic
# gradient descent only needs an **unbiased** gradient, one that is right on
# average, so why pay for an exact one?
#
# Their answer is to keep a **random, sparse** part of the LCG, scaled so that
# reverse mode on it gives the exact Jacobian in expectation. This lab
# implements and tests their path-sampling algorithm (Algorithm 1), proves it
# unbiased, measures its variance, reproduces the paper's Figure 2 experiment
# (where sampling works and where it cannot). Lab 10 takes up the vector
# version, random matrix injection.
#
# **You need:** Labs 2-4, expectation and variance of a random variable.
# **Exercises:** 5.1 (Algorithm 1), 5.2 (its exact variance for $k = 1$), 5.3 (two-level
# sampling on a graph of arrays, and its exact variance).

# %%
import types

import matplotlib.pyplot as plt
import numpy as np

from minirad import examples, labs
from minirad.randomized.experiments import compare, variance_by_depth
from minirad.examples import chain_graph
from minirad.graph.scalarize import from_chain
from minirad.randomized.injection import injected_jacobians, injection_variance, random_projection
from minirad.exact.jacobians import jacobian
from minirad.draw.plots import plot_compare, plot_convergence, plot_variance_vs_depth
from minirad.draw.render import render
from minirad.exact.jacobians import jacobian
from minirad.randomized.experiments import compare, variance_by_depth
from minirad.randomized.sampling import sampled_jacobians

# %% [markdown]
# ## 1. Algorithm 1: sample a few edges at each vertex
#
# Bauer's formula (Lab 3) writes each Jacobian entry as a sum over paths. A
# sum can be estimated by sampling some of its terms and scaling them up.
# Algorithm 1 does this without ever listing paths, in one pass over the
# vertices in topological order (so it can run *during* the forward pass):
#
# * the inputs are **visited**;
# * a visited vertex $v$ with $d_v$ successors draws $k$ of its out-edges,
#   uniformly and **with replacement**; each draw of the edge $v \to w$ adds
#   $\frac{d_v}{k}\,\frac{\partial w}{\partial v}$ to that edge's weight in a
#   new graph $Q$, and makes $w$ visited;
# * a vertex that no drawn edge enters is **skipped**: nothing it computes is
#   ever needed by the backward pass, so nothing of it is stored. This is
#   where the memory goes down.
#
# Reverse mode on $Q$ (the drawn edges with their weights) then gives the
# estimate $\hat J$. Here is one run on Figure 1 with $k = 1$, recorded from
# minirad (you will write the algorithm in Exercise 5.1): $Q$ as a dict
# `{(u, v): weight}` of the drawn edges. To draw it, `as_sample` turns the
# dict into the per-edge draw counts, weights and visited flags the renderer
# reads.
#
# To draw samples by clicking and watch their mean close in on the Jacobian, make Figure 1's explorable page with `minirad explore minirad.examples:figure1 -o figure1.html` and open `figure1.html` in a browser (Sample panel).

# %%
def as_sample(g, Q, k):
    """Per-edge draw counts, weights and visited flags of a dict-shaped sample."""
    degree = np.diff(g.out_edges_csr[1])
    weights = np.array([Q.get((g.names[u], g.names[v]), 0.0) for u, v, _ in g.edges()])
    counts = np.rint(weights / (degree[g.sources] / k * g.partials)).astype(int)
    visited = np.zeros(g.n_vertices, dtype=bool)
    visited[list(g.inputs)] = True
    visited[g.targets[counts > 0]] = True
    draws = np.where(visited & (degree > 0), k, 0)
    return types.SimpleNamespace(counts=counts, weights=weights, visited=visited, draws=draws)


g = examples.figure1()
Q_recorded = {("x1", "v2"): 2.718281828459045, ("x2", "v4"): 1.8185948536513634,
              ("v4", "v5"): 2.718281828459045, ("v2", "y"): 9.886906688019275,
              ("v5", "y"): 2.718281828459045}
sample = as_sample(g, Q_recorded, k=1)
labs.show(render(g, sample, title="Algorithm 1 on Figure 1, k = 1"),
          "lab5_figure1_sample")

# %% [markdown]
# **What to look for.** The red edges were drawn; each is labelled with its
# number of draws and its weight in $Q$. The grey dashed edges were not
# drawn. `v3` is greyed out: `x2` drew `v4`, so no drawn edge enters `v3`,
# and Algorithm 1 skipped it. Every vertex with one successor (like `x1`,
# `v4`, `v5`) has no choice: it draws its only edge, with weight
# $\frac{1}{1}\times$ its partial. A vertex with two successors (`x2`, `v2`)
# keeps one edge with **twice** its partial, making up for the one it dropped.
#
# Here is the same run told vertex by vertex, then the estimate next to the
# exact Jacobian.

# %%
def narrate(g, sample):
    """Print Algorithm 1's decisions at each vertex, in topological order."""
    order, ptr = g.out_edges_csr
    for v in range(g.n_vertices):
        name, out = g.names[v], order[ptr[v]:ptr[v + 1]]
        if not sample.visited[v]:
            print(f"{name:>3}: skipped (no drawn edge enters it); nothing stored")
        elif len(out) == 0:
            print(f"{name:>3}: output, nothing to draw")
        else:
            d, k = len(out), sample.draws[v]
            drawn = [e for e in out if sample.counts[e] > 0]
            text = "; ".join(
                f"drew {g.names[g.targets[e]]} {sample.counts[e]} time(s), so "
                f"Q({name}, {g.names[g.targets[e]]}) = {sample.counts[e]} * {d}/{k} * "
                f"{g.partials[e]:.4g} = {sample.weights[e]:.4g}" for e in drawn)
            print(f"{name:>3}: visited, d = {d}, k = {k}: {text}")


narrate(g, sample)
print()
print("estimate from this one sample:", labs.sample_jacobian(g, Q_recorded))
print("exact Jacobian:               ", jacobian(g))

# %% [markdown]
# The second entry is far off; a single sample is only meant to be right on
# average. The first entry is exact, and will be in *every* sample: the two
# paths from `x1` (through `v2 -> y` and through `v2 -> v5 -> y`) happen to
# have the same product, so whichever one `v2` keeps, doubled, equals their
# sum. Sampling costs nothing where the paths agree.
#
# Before checking the average, implement the algorithm.
#
# ## 2. Exercise 5.1: implement Algorithm 1
#
# **Exercise 5.1.** Complete `sample_Q(g, k, rng)`. It runs Algorithm 1 once
# on the LCG `g` with `k` draws per visited vertex and returns the sampled
# graph $Q$ as a dict `{(u_name, v_name): weight}` holding **only the edges
# drawn at least once**, where
#
# $$\text{weight}(u \to v) = (\text{number of times } u \to v \text{ was drawn})
# \times \frac{d_u}{k} \times \frac{\partial v}{\partial u}.$$
#
# * Visit the vertices in topological order (`range(g.n_vertices)`); inputs
#   are visited from the start; skip vertices nothing drawn enters, and
#   vertices without successors.
# * Draw with replacement, uniformly: `g.successors(v)[rng.integers(d)]`, $k$
#   times. Take **every** random number from `rng` (a
#   `numpy.random.Generator`), so that the same seed gives the same sample.
#
# The check verifies the form of $Q$ (only edges out of visited vertices,
# weights that are whole multiples of $\frac{d_u}{k} \times$ partial, exactly
# $k$ draws per visited vertex), reproducibility with a seed, that the mean
# of 2000 of your samples is within 5 standard errors of the exact Jacobian
# on five graphs, and that repeated draws of the same edge happen as often as
# drawing with replacement makes them happen.

# %%
def sample_Q(g, k, rng):
    """Algorithm 1 once: the drawn edges of g as {(u_name, v_name): weight}."""
    # BEGIN SOLUTION Exercise 5.1: Algorithm 1
    Q = {}
    visited = set(g.inputs)
    for v in range(g.n_vertices):  # topological order
        successors = g.successors(v)
        if v not in visited or not successors:
            continue  # nothing drawn reaches v (or v has nothing to draw)
        d = len(successors)
        for _ in range(k):
            w = successors[rng.integers(d)]
            edge = (g.names[v], g.names[w])
            Q[edge] = Q.get(edge, 0.0) + d / k * g.partial(v, w)
            visited.add(w)
    return Q
    # END SOLUTION


# %%
labs.check_sample_Q(sample_Q)

# %% [markdown]
# `labs.sample_jacobian(g, Q)` runs reverse accumulation on your dict, and
# `as_sample` (section 1) lets us draw it.

# %%
wide = examples.interleaved(3, 3, partials="random", rng=0)
Q = sample_Q(wide, 2, np.random.default_rng(5))
print("your estimate:", labs.sample_jacobian(wide, Q), " exact:", jacobian(wide))
labs.show(render(wide, as_sample(wide, Q, 2), title="Your Algorithm 1 on "
                 "interleaved(3, 3), k = 2"), "lab5_your_sample")

# %% [markdown]
# **What to look for.** Every visited vertex has exactly two draws. A vertex
# with three successors shows either two red edges, each with weight
# $\frac{3}{2}\times$ its partial, or one edge drawn twice ("×2") with weight
# $3 \times$ its partial. A `c` vertex has a single successor, so both its
# draws pick the edge into `y`, whose weight is then $2 \times \frac{1}{2}
# \times$ partial: the partial itself. Vertices no drawn edge reaches are
# grey: they would not be stored.
#
# ## 3. Why the estimate is unbiased
#
# Fix one output $y$. For every vertex $z$ write $\bar z = \partial y/\partial z$
# for its exact adjoint and $\hat z$ for the estimate that reverse mode on $Q$
# computes. Reverse mode on $Q$ means
#
# $$\hat y = 1, \qquad \hat z = \sum_{z \to v} Q(z, v)\, \hat v
#   = \sum_{z \to v} \frac{d_z}{k} N_{zv} \frac{\partial v}{\partial z}\, \hat v,$$
#
# where $N_{zv}$ counts how many of $z$'s $k$ draws picked $v$. (We may
# pretend every vertex draws, skipped or not: a skipped vertex is reached by
# no drawn edge, so its draws cannot change the estimate at any input.)
#
# **Claim.** $\mathbb E[\hat z] = \bar z$ for every vertex $z$.
#
# **Proof,** by induction over the vertices in *reverse* topological order
# (Appendix C of the paper, with $k$ draws instead of one).
#
# * *Base:* $\hat y = 1 = \bar y$.
# * *Step:* take a vertex $z$ and assume the claim for every vertex after it,
#   in particular for its successors $v$. Each of $z$'s draws picks $v$ with
#   probability $1/d_z$, so $\mathbb E[N_{zv}] = k/d_z$. The counts $N_{zv}$
#   come from $z$'s own draws, while $\hat v$ depends only on the draws of
#   $v$ and of vertices after $v$, which all come after $z$; independent
#   draws make the two independent, so the expectation of their product is
#   the product of expectations:
#
# $$\mathbb E[\hat z] = \sum_{z \to v} \frac{d_z}{k}\, \mathbb E[N_{zv}]\,
#   \frac{\partial v}{\partial z}\, \mathbb E[\hat v]
#   = \sum_{z \to v} \frac{d_z}{k}\cdot\frac{k}{d_z}\cdot
#   \frac{\partial v}{\partial z}\, \bar v
#   = \sum_{z \to v} \frac{\partial v}{\partial z}\, \bar v = \bar z .$$
#
#   The last step is the reverse-mode recursion of Lab 2. $\square$
#
# At the inputs, $\mathbb E[\hat x] = \bar x = \partial y / \partial x$: the
# estimate is unbiased. Note what the proof needs: the factor $d_z/k$
# exactly cancels the probability of a draw, and each vertex's draws are
# independent of everything downstream.
#
# **A Monte Carlo check.** Average $n$ independent estimates. If they are
# unbiased, the mean differs from the exact Jacobian by about one
# **standard error** $\sqrt{\mathrm{Var}/n}$, so the ratio
# $z = (\text{mean} - \text{exact}) / \text{standard error}$ should be a
# number of order 1 (beyond 3 or 4 would be suspicious).
# `minirad.randomized.experiments.compare` does this with its fast batched sampler.

# %%
def z_table(exact, estimates):
    """Exact entries against the mean of the estimates, with standard errors."""
    mean = estimates.mean(axis=0)
    stderr = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    print(f"{'entry':<10}{'exact':>10}{'mean':>10}{'std error':>11}{'z':>7}")
    for (i, j), value in np.ndenumerate(exact):
        if stderr[i, j] <= 1e-12 * max(1.0, abs(value)):
            z = "(every estimate exact)"  # no variance: nothing to divide by
        else:
            z = f"{(mean[i, j] - value) / stderr[i, j]:>7.2f}"
        print(f"[{i}, {j}]{'':<4}{value:>10.4f}{mean[i, j]:>10.4f}{stderr[i, j]:>11.4f} {z}")


result = compare(g, k=1, n=20000, rng=1)
z_table(result.exact, result.estimates)
assert np.all(np.abs(result.z) < 5)

# %% [markdown]
# And with **your** sampler, more slowly (a Python loop):

# %%
rng = np.random.default_rng(2)
yours = np.array([labs.sample_jacobian(g, sample_Q(g, 1, rng)) for _ in range(4000)])
z_table(jacobian(g), yours)

# %% [markdown]
# The error of the mean falls like $1/\sqrt n$: four times as many samples
# halve it. The next plot follows the running mean for $k = 1, 2, 4$ on a
# random graph with 3 inputs, 10 intermediates and 2 outputs (on Figure 1 the
# picture would be odd: the estimate of $\partial y/\partial x_2$ takes only
# two values, and their running mean lands exactly on the true value every
# time it has seen as many of one as of the other).

# %%
dag = examples.random_dag(3, 10, 2, rng=0)
labs.show(plot_convergence(dag, ks=(1, 2, 4), n=5000, rng=3), "lab5_convergence")

# %% [markdown]
# **What to look for.** Each solid curve wiggles around its dotted line, the
# error that the exact variance predicts, and both fall with slope $-1/2$
# on the log-log axes. More draws per vertex ($k$) shift the line down, but
# do not change its slope.
#
# The same graph entry by entry: one $Q$ serves every output (the proof
# above works output by output).

# %%
labs.show(plot_compare(dag, k=1, n=5000, rng=4), "lab5_compare_heatmaps")

# %% [markdown]
# **What to look for.** The mean of 5000 samples (second panel) matches the
# exact Jacobian (first) cell by cell, while a single sample (third) is
# visibly wrong, with some entries exactly 0 (no sampled path) and others
# several times too large. The fourth panel shows how noisy one sample is,
# entry by entry, and the last one whether the mean's misses are only that
# noise: each entry's distance from the exact value in standard errors,
# $z = (\text{mean} - \text{exact}) / (\text{std}/\sqrt{n})$. For an unbiased
# estimator about 95% of them lie within $\pm 2$ (pale cells).
#
# ## 4. Exercise 5.2: the exact variance for $k = 1$
#
# The proof above tracks the **mean** of each adjoint estimate backwards
# through the graph. The same induction tracks its **second moment**
# $M(z) = \mathbb E[\hat z^2]$ when $k = 1$. A visited vertex $z$ with $d_z$
# successors draws exactly one of them, $s$, each with probability $1/d_z$,
# and then $\hat z = d_z \frac{\partial s}{\partial z} \hat s$. Squaring,
# averaging over the draw, and using again that $\hat s$ is independent of
# $z$'s draw:
#
# $$M(y) = 1, \qquad M(z) = \sum_{z \to s} \frac{1}{d_z}
#   \Big(d_z \frac{\partial s}{\partial z}\Big)^2 M(s)
#   = d_z \sum_{z \to s} \Big(\frac{\partial s}{\partial z}\Big)^2 M(s),$$
#
# and the variance of the estimate of $\partial y/\partial x$ is
# $M(x) - (\partial y / \partial x)^2$. A vertex without successors other
# than $y$ has $M = 0$; $d_z$ counts **all** out-edges of $z$, also those
# that lead to other outputs.
#
# **Exercise 5.2.** Complete `variance_k1(g)`: return a numpy array of shape
# `(n_outputs, n_inputs)` holding the exact variance of every entry of the
# Algorithm 1 estimate with $k = 1$. Use `g.successors(z)`,
# `g.partial(z, s)`, `g.inputs`, `g.outputs`, and the exact Jacobian from
# `jacobian(g)`. The check compares your answer with minirad's exact
# variance on seven graphs (two with two outputs), and
# names the slip if your recursion forgets to square the partials, leaves out
# $d_z$, or returns $M$ without subtracting the squared mean.

# %%
def variance_k1(g):
    """Exact variance of Algorithm 1 (k = 1), shape (n_outputs, n_inputs)."""
    # BEGIN SOLUTION Exercise 5.2: exact variance for k = 1
    J = jacobian(g)
    variance = np.zeros((len(g.outputs), len(g.inputs)))
    for row, y in enumerate(g.outputs):
        M = np.zeros(g.n_vertices)  # second moments; 0 for vertices y cannot be reached from
        M[y] = 1.0
        for z in range(y - 1, -1, -1):  # reverse topological order
            successors = g.successors(z)
            d = len(successors)
            M[z] = d * sum(g.partial(z, s) ** 2 * M[s] for s in successors)
        for col, x in enumerate(g.inputs):
            variance[row, col] = M[x] - J[row, col] ** 2
    return variance
    # END SOLUTION


# %%
labs.check_variance_k1(variance_k1)

# %% [markdown]
# With your formula, Figure 1 at once: the first entry has variance zero
# (whichever path `v2` keeps, doubled, gives the same product, as we saw in
# section 1), and the second does not.

# %%
print("exact variance (k = 1) on Figure 1:", variance_k1(g).round(4))
print("measured from 20000 samples:       ",
      sampled_jacobians(g, 1, 20000, rng=10).var(axis=0, ddof=1).round(4))

# %% [markdown]
# ## 5. Variance against $k$
#
# Unbiased is not enough: an estimate with a huge variance is useless for
# optimisation. Your `variance_k1` gives the exact variance for $k = 1$; for
# more draws we measure it on 20000 samples (minirad's batched sampler,
# `sampled_jacobians`), and set it against the memory used: the number of
# edges stored in $Q$, counted on samples of your `sample_Q`. The graph is `interleaved(4, 3)` with random partials: every layer
# vertex has 4 successors.

# %%
dense = examples.interleaved(4, 3, partials="random", rng=0)
J = jacobian(dense)[0, 0]
print(dense, " exact dy/dtheta =", round(J, 3))
print(f"exact relative variance for k = 1 (your variance_k1): "
      f"{variance_k1(dense)[0, 0] / J**2:.4f}")
print(f"{'k':>3}{'measured rel. var':>19}{'edges stored':>14}")
ks = (1, 2, 4, 8, 16)
relative, stored = [], []
rng = np.random.default_rng(11)
for k in ks:
    measured = sampled_jacobians(dense, k, 20000, rng=k).var(ddof=1)
    edges = np.mean([len(sample_Q(dense, k, rng)) for _ in range(200)])
    relative.append(measured / J**2)
    stored.append(edges)
    print(f"{k:>3}{measured / J**2:>19.4f}{edges:>10.1f} / {dense.n_edges}")

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.4))
ax.plot(stored, relative, "o-", color="#0072B2")
for k, x, y in zip(ks, stored, relative):
    ax.annotate(f"k={k}", (x, y), textcoords="offset points", xytext=(6, 4))
ax.set_yscale("log")
ax.set_xlabel(f"edges stored in Q (mean over 200 samples; full graph: {dense.n_edges})")
ax.set_ylabel(r"relative variance  Var$(\hat J)\,/\,J^2$ (20000 samples)")
ax.set_title("Memory against variance: Algorithm 1 on interleaved(4, 3)")
ax.grid(True, which="both", alpha=0.3)
labs.show(fig, "lab5_memory_vs_variance")

# %% [markdown]
# **What to look for.** Each point is one $k$. Moving right (more draws, more
# memory) the variance falls roughly like $1/k$. With $k = 1$ the sampler
# stores 4 of the 40 edges (a single path) and pays with the largest
# variance: the standard deviation, the square root of the relative variance
# in the table, is a sizeable fraction of the gradient itself. Even at
# $k = 16$, when almost every edge is stored, the variance is not zero,
# because draws with replacement still repeat some edges and miss others.
# For $k = 1$ the measured value agrees with your exact one to a few percent.
#
# ## 6. Where sampling works and where it cannot: the paper's Figure 2
#
# Section 3.3 of the paper contrasts two extreme graphs of the same width and
# depth:
#
# * **independent paths** (Figure 2a): $\theta$ feeds `width` separate chains;
#   there are only `width` paths, whatever the depth;
# * **fully interleaved** layers (Figure 2b): every vertex of a layer feeds
#   every vertex of the next; there are `width`$^{\text{depth}}$ paths.
#
# Here is one sample of each, by your `sample_Q` with two draws at every
# vertex.

# %%
for name, family in (("independent", examples.independent_paths),
                     ("interleaved", examples.interleaved)):
    h = family(3, 3, partials="random", rng=0)
    Q = sample_Q(h, 2, np.random.default_rng(1))
    labs.show(render(h, as_sample(h, Q, 2), edge_labels=False,
                     title=f"{name} paths, width 3, depth 3: two draws at each vertex"),
              f"lab5_{name}_sample")

# %% [markdown]
# **What to look for.** On independent paths only $\theta$ has a choice; once a
# chain is picked, every vertex on it has one successor and keeps it, so the
# sample is a set of *whole* paths. On the interleaved graph every visited
# vertex chooses again, layer after layer, and the errors of those choices
# multiply along the path.
#
# The exact relative variance against depth, sampling a fixed fraction (here a
# quarter: one of four edges) at every vertex, shows what that does. The
# dashed curves use random matrix injection (Lab 10) instead, keeping a
# quarter of the vertices of every layer.

# %%
labs.show(plot_variance_vs_depth(width=4, depths=range(1, 13), fraction=0.25,
                                 methods=("paths", "injection")),
          "lab5_variance_vs_depth")

# %% [markdown]
# **What to look for.** On a log scale a straight rising line means
# exponential growth. Path sampling on independent paths (solid blue) is
# **flat**: depth adds vertices, but no new choices. On interleaved layers
# (solid orange) the relative variance grows by a constant factor per layer.
# Injection does badly on *both* families: keeping a quarter of each
# layer's vertices independently breaks independent chains too, since a path
# survives only if its vertex is kept at every layer.
#
# The growth factor per layer, from the exact variances, and a Monte Carlo
# check of two points:

# %%
for fraction in (0.25, 0.5, 1.0):
    flat = variance_by_depth("independent", 4, list(range(1, 13)), fraction=fraction)
    steep = variance_by_depth("interleaved", 4, list(range(1, 13)), fraction=fraction)
    print(f"fraction {fraction:.2f}: relative variance x{flat.growth:.3f} per layer "
          f"(independent), x{steep.growth:.3f} per layer (interleaved)")
for depth in (4, 8):
    h = examples.interleaved(4, depth, partials="balanced", rng=0)
    estimates = sampled_jacobians(h, 0.25, 20000, rng=depth)[:, 0, 0]
    exact = variance_by_depth("interleaved", 4, [depth], fraction=0.25)
    print(f"interleaved, depth {depth}: relative variance {exact.relative_variance[0]:.3f} "
          f"exact, {estimates.var(ddof=1) / exact.jacobian[0] ** 2:.3f} measured from 20000 "
          f"estimates")

# %% [markdown]
# (The measured variance is itself a random number, and a noisy one when the
# estimates have heavy tails, as they do on deep interleaved graphs; it agrees
# with the exact value to within its own sampling error.)
#
# Sampling more edges slows the growth but does not stop it: even keeping
# (with replacement) as many draws as edges, the interleaved variance still
# compounds layer by layer. The lesson of the paper's Section 3.3: randomized
# AD needs graphs whose noise does not compound, which is why Sections 4 and 5
# of the paper design their sampling around the structure of neural networks
# and of a PDE solver rather than applying it blindly.
#
# ## 7. Exercise 5.3: two levels of sampling on a graph of arrays
#
# When the vertices of the graph hold arrays, one path through the array
# vertices stands for many paths through their entries (the paper's
# Section 3.2), and there are two places to sample: the **vertex level**
# (Algorithm 1 on the array graph: draw $k$ of the out-edges of each visited
# vertex, weight $d/k$ per draw) and the **entry level** (inside each visited
# array of $n$ entries, keep $m$ entries drawn with replacement: the edges
# leaving it are multiplied by $P = \frac{n}{m}\sum_{s=1}^{m} e_{i_s}
# e_{i_s}^T$, whose mean is the identity). minirad's `sample_paths` and
# `sampled_jacobians` do both with `entries=m`.
#
# The smallest graph where both levels matter: a number $\theta$ feeds $d$
# arrays $A_j = a_j\theta$ of $n$ entries each, and $y = \sum_j b_j \cdot
# A_j$ (`labs.fan_graph(a, b)`, with `a` and `b` of shape $(d, n)$).
# The estimate is
#
# $$\hat J = \sum_j c_j\, b_j^T P_j a_j, \qquad
#   c_j = \frac{d}{k}\,(\text{times } \theta \to A_j \text{ was drawn}).$$
#
# Its variance splits by the law of total variance. Write $x_j = b_j \cdot
# a_j$ (the exact contribution of array $j$) and $s_j = \mathrm{Var}(b_j^T
# P_j a_j) = \big(n \sum_i (b_{ji} a_{ji})^2 - x_j^2\big)/m$ (the noise of
# the entry level alone). The draws of $\theta$ and the $P_j$ are
# independent, so
#
# $$\mathrm{Var}\,\hat J = \underbrace{\frac{d \sum_j x_j^2 - (\sum_j x_j)^2}{k}}_{\text{vertex level}}
#   + \sum_j \mathbb E[c_j^2]\, s_j, \qquad
#   \mathbb E[c_j^2] = 1 - \frac1k + \frac dk .$$
#
# Notice the weight $c_j$ on the second term: array $j$'s entry noise is
# scaled up by the vertex level's weight whenever $j$ is drawn.

# %%
fan = labs.fan_graph([[1.0, -2.0, 0.5], [0.3, 1.0, 2.0]], [[2.0, 1.0, 1.0], [1.0, -1.0, 0.5]])
labs.show(render(fan, title="theta feeds d = 2 arrays of n = 3 entries; y sums b_j . A_j"),
          "lab5_fan_graph")

# %% [markdown]
# **Exercise 5.3.** Complete `two_level_variance(a, b, k, m)`: `a` and `b`
# are numpy arrays of shape $(d, n)$ (row $j$: $\partial A_j/\partial\theta$
# and $\partial y/\partial A_j$), $k$ the draws at $\theta$, $m$ the entries
# drawn inside each array; return the exact variance of $\hat J$, one
# number. The check compares it with minirad's exact variance of the
# two-level estimator on the traced graph (`path_sampling_variance(g, k,
# entries=m)`) for five fans, and names the slip if you add the two levels'
# variances as if each were alone, take $\mathbb E[c_j^2] = d/k$, or leave
# out the factor $n$ of $P$.

# %%
def two_level_variance(a, b, k, m):
    """Exact variance of two-level sampling on the fan theta -> A_1..A_d -> y."""
    # BEGIN SOLUTION Exercise 5.3: two-level sampling on a graph of arrays
    d, n = a.shape
    terms = a * b                      # b_ji a_ji: one entry-level path each
    x = terms.sum(axis=1)              # exact contribution of each array
    entry_level = (n * (terms ** 2).sum(axis=1) - x ** 2) / m
    vertex_level = (d * (x ** 2).sum() - x.sum() ** 2) / k
    return vertex_level + (1 - 1 / k + d / k) * entry_level.sum()
    # END SOLUTION


# %%
labs.check_two_level_variance(two_level_variance)

# %% [markdown]
# Your formula against 40000 two-level samples of minirad's sampler, for a
# few $(k, m)$: more draws at either level lower the variance, but the
# vertex level's term stays whatever $m$ is, and the entry level's stays
# (scaled by $\mathbb E[c_j^2]$) whatever $k$ is.

# %%
a_fan = np.array([[1.0, -2.0, 0.5], [0.3, 1.0, 2.0]])
b_fan = np.array([[2.0, 1.0, 1.0], [1.0, -1.0, 0.5]])
print(f"{'k':>3}{'m':>3}{'exact (yours)':>15}{'measured':>10}")
for k, m in ((1, 1), (1, 3), (2, 1), (4, 3)):
    measured = sampled_jacobians(fan, k, 40000, entries=m, rng=k * 10 + m).var(ddof=1)
    print(f"{k:>3}{m:>3}{two_level_variance(a_fan, b_fan, k, m):>15.4f}{measured:>10.4f}")

# %% [markdown]
# ## What you learned
#
# * Algorithm 1 draws $k$ out-edges per visited vertex, weights each draw by
#   $d_v/k$ times its partial, and skips vertices no drawn edge reaches;
#   reverse mode on the sampled graph is an **unbiased** Jacobian estimate.
# * The proof is an induction in reverse topological order: the factor
#   $d_v/k$ cancels the chance of a draw, and each vertex's draws are
#   independent of everything downstream.
# * A mean of $n$ estimates has standard error $\sqrt{\mathrm{Var}/n}$;
#   more draws per vertex cost memory and lower the variance roughly like
#   $1/k$.
# * The graph's shape decides everything: on independent paths the variance
#   is flat in depth, on interleaved layers it grows exponentially.
# * For $k = 1$ the second moment of each adjoint estimate obeys its own
#   backward recursion, $M(z) = d_z \sum_s (\partial s/\partial z)^2 M(s)$,
#   which gives the exact variance without sampling.
# * On a graph of arrays, sampling has two levels, the array out-edges and
#   the entries inside an array; the entry level's noise enters the variance
#   multiplied by $\mathbb E[c^2] = 1 - 1/k + d/k$, the vertex level's weight
#   squared.
#
# ## Going further
#
# * Algorithm 1 with `k` given per vertex (minirad's
#   `minirad.randomized.sampling.sample_paths(g, {"theta": 2})`)
#   samples only where you choose. On `interleaved(4, 8)`, sample only at
#   $\theta$: how does the variance depend on depth now?
# * Mini-batch SGD is path sampling on a graph of independent paths (one path
#   per data point; Section 4.1 of the paper). Lab 6 uses this, and Lab 10
#   samples the vector form of the graph, random matrix injection.
# * Why does the proof need draws *with replacement* to be independent across
#   draws, but not for unbiasedness? Try sampling without replacement in your
#   `sample_Q` and see which part of the check fails.
