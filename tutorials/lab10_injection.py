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
# # Lab 10: Random matrix injection
#
# Lab 5 sampled **edges** of a scalar graph, independently at each vertex.
# With vector operations (a layer of a network, a step of a simulation) the
# graph is better seen as a chain of Jacobian matrices, and Oktay et al.
# (*Randomized Automatic Differentiation*, ICLR 2021, Sec. 3.2, eqs. 2-6)
# sample it the way one samples a matrix product: insert a random matrix
# $P$ with $\mathbb E[P] = I$ between two factors. This lab builds the two
# kinds of $P$ of the paper, checks by simulation that the product stays
# unbiased, measures how the variance grows with every injection, and looks
# at what injection does to the scalar graph: it keeps whole **vertices**.
#
# **You need:** Lab 5 (unbiasedness, variance, Algorithm 1), matrix products.
# **Exercises:** 10.1 (the sampling matrix), 10.2 (the Rademacher matrix).

# %%
import matplotlib.pyplot as plt
import numpy as np

from minirad import labs
from minirad.draw.render import Factors, render
from minirad.exact.jacobians import jacobian
from minirad.examples import chain_graph
from minirad.graph.scalarize import from_chain
from minirad.randomized.injection import injection_variance

# %% [markdown]
# ## 1. An unbiased product
#
# With vector operations the graph is better seen as a chain of Jacobian
# *matrices*, as in the paper's Figure 2c:
# $\theta \to A \to B \to C \to y$ with
# $J = \frac{\partial y}{\partial C}\frac{\partial C}{\partial B}
# \frac{\partial B}{\partial A}\frac{\partial A}{\partial \theta}$.
# Insert between two factors a random matrix $P$ with $\mathbb E[P] = I$:
# by linearity of expectation the product stays unbiased, and with
# independent $P$'s so does a product with several of them inserted.
#
# The **sampling** matrix keeps $k$ of the $d$ components of a vector, drawn
# with replacement, scaled by $d/k$:
# $P = \frac{d}{k} \sum_{s=1}^{k} e_{i_s} e_{i_s}^{\mathsf T}$. Only the kept
# components need storing.
#
# **Exercise 10.1.** Complete `sampling_P(d, k, rng)`: draw $k$ indices
# from $0, \dots, d-1$ uniformly **with replacement** (`rng.integers(d,
# size=k)`), and return the $d \times d$ numpy array $P$ above. A component
# drawn twice gets $2 \cdot d/k$. Every random number must come from `rng`.
# The check: $P$ is diagonal, its entries are whole multiples of $d/k$
# adding up to $k$ draws (its trace is $d$), the same seed gives the same
# $P$, the mean of 2000 of your matrices is within 5 standard errors of $I$,
# and repeated draws happen as often as drawing with replacement makes them.
#
# The **Rademacher** matrix projects onto $k$ random directions instead:
# $P = R R^{\mathsf T}$ where $R$ is $d \times k$ with independent entries
# $\pm 1/\sqrt k$ (each sign with probability $1/2$). Then
# $\mathbb E[(RR^{\mathsf T})_{ij}] = \sum_s \mathbb E[R_{is} R_{js}]$ is
# $k \cdot \frac1k = 1$ on the diagonal and $0$ off it. Storing $R^{\mathsf T}v$
# costs $k$ numbers instead of $d$.
#
# **Exercise 10.2.** Complete `rademacher_P(d, k, rng)`, returning the
# $d \times d$ array $R R^{\mathsf T}$. The check: $P$ is symmetric with
# diagonal exactly 1, entries whole multiples of $1/k$ in $[-1, 1]$, rank at
# most $k$, reproducible with a seed, mean within 5 standard errors of $I$
# over 2000 matrices, and an off-diagonal variance of $1/k$ (within 25%).

# %%
def sampling_P(d, k, rng):
    """(d/k) * sum over k draws with replacement of e_i e_i^T, as a d x d array."""
    # BEGIN SOLUTION Exercise 10.1: sampling matrix P
    counts = np.bincount(rng.integers(d, size=k), minlength=d)
    return np.diag(counts * (d / k))
    # END SOLUTION


# %%
labs.check_sampling_P(sampling_P)

# %%
def rademacher_P(d, k, rng):
    """R @ R.T with R (d x k) of independent +-1/sqrt(k) entries."""
    # BEGIN SOLUTION Exercise 10.2: Rademacher matrix P
    R = rng.choice([-1.0, 1.0], size=(d, k)) / np.sqrt(k)
    return R @ R.T
    # END SOLUTION


# %%
labs.check_rademacher_P(rademacher_P)

# %% [markdown]
# Your matrices, and $\mathbb E[P] = I$ by simulation:

# %%
rng = np.random.default_rng(6)
mean_sampling = np.mean([sampling_P(3, 1, rng) for _ in range(20000)], axis=0)
mean_rademacher = np.mean([rademacher_P(3, 1, rng) for _ in range(20000)], axis=0)
print("one sampling matrix (d=3, k=1):\n", sampling_P(3, 1, np.random.default_rng(0)))
print("one Rademacher matrix (d=3, k=1):\n", rademacher_P(3, 1, np.random.default_rng(0)))
print("mean of 20000 sampling matrices:\n", mean_sampling.round(2))
print("mean of 20000 Rademacher matrices R R^T:\n", mean_rademacher.round(2))

# %% [markdown]
# Now a chain of random matrices of the shape of Figure 2c, with $P$ injected
# after $A$, after $B$ and after $C$ (positions 1, 2, 3), each $P$ drawn by
# your function:

# %%
def injected_estimates(chain, make_P, k, n, rng, where):
    """n estimates of the chain's product, an independent make_P(d, k, rng) inserted
    after each factor whose position (1, 2, ...) is in `where`."""
    estimates = np.empty(n)
    for t in range(n):
        vector = chain[0]
        for position, factor in enumerate(chain[1:], start=1):
            if position in where:
                vector = make_P(vector.shape[0], k, rng) @ vector
            vector = factor @ vector
        estimates[t] = vector[0, 0]
    return estimates


rng = np.random.default_rng(7)
chain = [rng.standard_normal((3, 1)), rng.standard_normal((3, 3)),
         rng.standard_normal((3, 3)), rng.standard_normal((1, 3))]
exact_chain = jacobian(from_chain(chain))[0, 0]
estimates = injected_estimates(chain, sampling_P, 1, 10000, np.random.default_rng(8), [1, 2, 3])
stderr = estimates.std(ddof=1) / np.sqrt(len(estimates))
print(f"exact dy/dtheta = {exact_chain:.4f}; mean of 10000 injected estimates = "
      f"{estimates.mean():.4f} +/- {stderr:.4f} "
      f"(z = {(estimates.mean() - exact_chain) / stderr:.2f})")

# %% [markdown]
# Each injection is another independent source of noise, and the noise of
# a product compounds. minirad computes the variance exactly
# (`injection_variance`); we also measure it with your matrices, for one,
# two and three injections and for both kinds of $P$.

# %%
positions = ([1], [1, 2], [1, 2, 3])
rows = []
for kind, make_P in (("sample", sampling_P), ("rademacher", rademacher_P)):
    for where in positions:
        at = [f"v{position}" for position in where]  # the vector after factor `position`
        exact_var = injection_variance(from_chain(chain), at, k=1, law=kind)[0, 0]
        measured = injected_estimates(chain, make_P, 1, 10000, np.random.default_rng(9),
                                      where).var(ddof=1)
        rows.append((kind, len(where), exact_var, measured))
        print(f"{kind:<11} {len(where)} injection(s): variance {exact_var:9.3f} exact, "
              f"{measured:9.3f} measured")

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.4))
for kind, color, marker in (("sample", "#0072B2", "o"), ("rademacher", "#D55E00", "s")):
    counts = [n for k_, n, _, _ in rows if k_ == kind]
    ax.plot(counts, [e / exact_chain**2 for k_, _, e, _ in rows if k_ == kind], "-",
            color=color, marker=marker, label=f"{kind} P: exact")
    ax.plot(counts, [m / exact_chain**2 for k_, _, _, m in rows if k_ == kind], "x",
            color="black", markersize=9)
ax.plot([], [], "x", color="black", label="measured (10000 estimates)")
ax.set_yscale("log")
ax.set_xticks([1, 2, 3])
ax.set_xlabel("number of injected matrices (k = 1 of 3 components each)")
ax.set_ylabel(r"relative variance  Var$(\hat J)\,/\,J^2$")
ax.set_title("Random matrix injection on the chain theta -> A -> B -> C -> y")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
labs.show(fig, "lab10_injection_variance")

# %% [markdown]
# **What to look for.** Both curves rise with every injection (each extra
# $P$ can only add variance, a fact proved in `injection_variance`'s
# docstring), and the crosses sit on the lines. Which kind of $P$ is better
# depends on the matrices.
#
# What does injecting a sampling matrix do to the scalar graph? It removes
# whole **vertices**: `chain_graph(chain, projections)` builds the scalar LCG
# of the chain with each kept vertex's incoming edges scaled and the others
# dropped.

# %%
rng = np.random.default_rng(14)
Ps = {position: sampling_P(3, 2, rng) for position in (1, 2, 3)}
for position, P in Ps.items():
    print(f"P at position {position}: diagonal {np.diag(P).tolist()}")
full, injected = chain_graph(chain), chain_graph(chain, Ps)
print("injected estimate from the scalar graph:", jacobian(injected)[0, 0],
      "  from the matrices:", (chain[3] @ Ps[3] @ chain[2] @ Ps[2] @ chain[1] @ Ps[1]
                               @ chain[0])[0, 0])

# draw the full scalar graph with what each P keeps: vertex numbers follow the
# chain (theta, then the components after A, after B, after C, then y), and
# component i at a position is kept with factor P_ii (0: dropped)
sizes = [chain[0].shape[1]] + [factor.shape[0] for factor in chain]  # vector sizes: 1, 3, 3, 3, 1
first = np.cumsum([0] + sizes)  # the number of the first vertex at each position
P_ii = {full.names[first[position] + i]: P[i, i]
        for position, P in Ps.items() for i in range(P.shape[0])}
labs.show(render(full, Factors(P_ii, name="P_ii"),
                 title="Matrix injection keeps vertices: k = 2 of 3 components after each "
                       "of A, B, C"), "lab10_injected_graph")

# %% [markdown]
# **What to look for.** Each component shows its diagonal entry $P_{ii}$ of
# the $P$ injected after its layer. The components whose $P_{ii}$ is zero
# are grey and dashed: $P$ dropped them, and nothing that passes through them
# counts. Between kept components **every** edge is used (blue), and each
# edge into a kept component is scaled by its $P_{ii}$ ($\frac{3}{2}$ if
# drawn once, $3$ if drawn twice): `P_ii 1.5, w = ...` is that factor and
# the scaled partial. Compare with Algorithm 1 (Lab 5): it samples **edges**, independently at each vertex, while injection
# samples **vertices**, a whole layer at once. Same mean, different variance.
#
# ## What you learned
#
# * Random matrix injection is the vector form of randomized AD: a random
#   $P$ with $\mathbb E[P] = I$ inserted into a chain of Jacobians keeps the
#   product unbiased, by linearity of expectation and independence.
# * The sampling matrix keeps $k$ components drawn with replacement, scaled
#   by $d/k$; the Rademacher matrix $R R^{\mathsf T}$ projects onto $k$
#   random directions with entries $\pm 1/\sqrt k$. Both store $k$ numbers
#   instead of $d$.
# * Every injection adds variance, and the variance of a product compounds;
#   which $P$ is better depends on the matrices.
# * On the scalar graph, a sampling matrix keeps or drops whole vertices of
#   a layer, where Algorithm 1 keeps or drops single edges: same mean,
#   different variance.
#
# ## Going further
#
# * Take $k = 3 = d$ in `sampling_P`. Is $P$ then the identity? What is the
#   variance of the chain's estimate, and why is it not zero?
# * For a fixed chain, compute `injection_variance(from_chain(chain), ["v1"], k,
#   law=...)` with `law="sample"` and `law="rademacher"` for $k = 1, 2, 3$. Which kind wins here, and does
#   the answer change with $k$?
# * Lab 9 applies the sampling matrix to the stored input of each layer of a
#   neural network: there $x P$ is stored instead of $x$, and only the
#   weight gradient is an estimate.
