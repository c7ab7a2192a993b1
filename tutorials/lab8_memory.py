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
# # Lab 8: Memory: what reverse mode keeps, checkpointing, and RAD at equal memory
#
# Reverse mode is cheap in arithmetic (one backward pass for the whole
# gradient) and expensive in **memory**: the backward pass runs the program
# in the opposite order, so everything it needs from the forward pass has to
# be kept until it gets there. For a network that is every layer's input for
# every example of the minibatch; for a simulation it is every time step's
# state. This lab counts that memory, then compares the two ways out of it:
#
# * **checkpointing** keeps a few states and *recomputes* the others: the
#   exact gradient, paid for in extra forward steps;
# * **randomized AD** (Oktay et al., ICLR 2021) keeps a random *sample* of
#   what reverse mode needs: no extra compute, paid for in *variance*.
#
# **You need:** Lab 5 (random matrix injection), Lab 7 (pullbacks), a little
# combinatorics. **Exercises:** 8.1 (Table 1 of the paper by hand), 8.2 (the
# sqrt(N) checkpointing schedule), 8.3 (its cost in closed form), 8.4 (how
# many samples RAD can keep in a given memory budget), 8.5 (the eq. 8
# estimator itself).

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from minirad import labs, render, trace
from minirad.checkpoint.schedules import (
    Binomial,
    Chain,
    StoreAll,
    binomial_forward_steps,
    reverse_chain,
    sqrt_every,
)
from minirad.graph.memory import retained_memory
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn import memory as table1
from minirad.studies.nn import mlp_numpy
from minirad.studies.pde import (
    Reactor,
    exact_gradient,
    index_dtype,
    initial_state,
    initial_theta,
    sampler,
    source_profile,
    step,
    target,
)
from minirad.studies.pde import engine as pde_engine
from minirad.tracing import name
from minirad.tracing.rules import softmax_cross_entropy
from minirad.tracing.ops import relu

# %% [markdown]
# ## 1. What the backward pass needs, read off the LCG of arrays
#
# In the LCG of arrays (Lab 7, the paper's Figure 3) every edge carries a
# linear operator, and each operator lists the arrays its transpose needs:
# `minirad.retained_memory(g)` adds them up. Take a two-layer network on a
# minibatch of 4 examples with 6 features, 32-bit floats:
# $h = xW_1 + b_1$, $a = \mathrm{relu}(h)$, logits $= aW_2 + b_2$, and the
# mean softmax cross-entropy.

# %%
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 6)).astype(np.float32)  # 4 examples, 6 features
labels = np.array([0, 2, 1, 0])
W1 = (0.4 * rng.standard_normal((6, 5))).astype(np.float32)
W2 = (0.4 * rng.standard_normal((5, 3))).astype(np.float32)
b1, b2 = np.zeros(5, np.float32), np.zeros(3, np.float32)


def two_layers(W1, b1, W2, b2):
    h = name(x @ W1 + b1, "h")
    a = name(relu(h), "a")
    return softmax_cross_entropy(name(a @ W2 + b2, "logits"), labels)


g = trace(two_layers, W1, b1, W2, b2)
kept = retained_memory(g)
print(f"{'edge':<22}{'operator':<11}{'bytes':>6}  why it costs nothing")
for e in range(g.n_edges):
    edge = f"{g.names[g.sources[e]]} -> {g.names[g.targets[e]]}"
    print(f"{edge:<22}{g.labels[e].kind:<11}{kept.per_edge[e]:>6.0f}  {kept.notes[e]}")
print(f"total {kept.total:.0f} bytes = {kept.per_example(4):.0f} per example")

# %%
labs.show(render(g, title="What reverse mode keeps for a two-layer network", batch=4),
          "lab8_what_reverse_mode_keeps")

# %% [markdown]
# **What to look for.** Read the graph from the bottom (the parameters) to
# the top (the loss); each edge says what it keeps. Only three edges cost
# anything:
#
# * **`outer` into $W_1$: 96 B.** The pullback into a weight is
#   $\bar W_1 = x^{\mathsf T} \bar h$: it needs the layer's *input* $x$,
#   $4 \times 6$ floats of 4 bytes.
# * **`outer` into $W_2$: 80 B.** The same for the second layer: its input
#   $a$, $4 \times 5$ floats.
# * **`dense` into the loss: 48 B**, the softmax probabilities ($4 \times 3$),
#   from which the loss's gradient is built.
#
# Everything else is free: `identity` and `broadcast` edges (the bias
# additions) keep nothing; the edge `a -> v7` needs $W_2$, which the caller
# keeps anyway; and the ReLU's **mask** ($h > 0$) is rebuilt from $a$, which
# is stored already ($a > 0$ exactly where $h > 0$). So the memory is
# (layer inputs + logits) per example: $4 (6 + 5 + 3) = 56$ bytes. That is
# the rule of the paper's Appendix A.
#
# ## 2. Exercise 8.1: Table 1 by hand
#
# Table 1 of the paper lists the peak training memory of three networks at
# minibatch 150, for exact backpropagation and for RAD keeping a fraction
# $f$ of each stored input. Its rules, for a fully connected network with
# layer sizes $(d_0, d_1, \dots, d_L)$ and a ReLU after every hidden layer:
#
# * every value is a 32-bit float (4 bytes); the weights and biases are kept
#   once: $4 \times$ (number of parameters);
# * per example, **exact** backprop keeps the input of every linear layer
#   ($d_0 + d_1 + \dots + d_{L-1}$ floats) and the logits ($d_L$ floats); the
#   ReLU masks are rebuilt from the stored inputs, as in the graph above;
# * per example, **RAD at fraction $f < 1$** keeps $\lceil f d_l \rceil$
#   floats of each layer input, the logits whole, and **one bit** for every
#   hidden ReLU unit: a mask can no longer be rebuilt from a sampled input;
# * total = $4 \times$ parameters + batch $\times$ per-example bytes.
#
# **Exercise 8.1.** Write `table1_bytes(sizes, fraction, batch)`, the total
# in bytes (a float: bits become eighths of bytes). `fraction = 1` is exact
# backpropagation. The check compares with minirad's accounting
# (`minirad.studies.nn.memory`) on seven small networks and on the paper's
# $(784, 300, 300, 300, 10)$ network at its six fractions.

# %%
def table1_bytes(sizes, fraction, batch):
    """Table 1's peak memory (bytes) of an MLP with these layer sizes."""
    # BEGIN SOLUTION Exercise 8.1: Table 1 by hand
    inputs, outputs = sizes[:-1], sizes[1:]
    parameters = sum(d_in * d_out + d_out for d_in, d_out in zip(inputs, outputs))
    if fraction == 1:
        per_example = 4 * (sum(inputs) + sizes[-1])
    else:
        kept = sum(math.ceil(fraction * d) for d in inputs)
        relu_units = sum(outputs[:-1])  # no ReLU after the last layer
        per_example = 4 * (kept + sizes[-1]) + relu_units / 8
    return 4 * parameters + batch * per_example
    # END SOLUTION


# %%
labs.check_table1_bytes(table1_bytes)

# %% [markdown]
# Your numbers beside the printed table (MB = $10^6$ bytes), and beside what
# minirad's LCG of arrays keeps when it traces the real network on two examples
# (`memory` of the traced graph, and of the graph with every stored input
# sampled by random matrix injection, Lab 5):

# %%
paper_net = (784, 300, 300, 300, 10)
print("fraction      " + "".join(f"{f:>8g}" for f in table1.FRACTIONS))
print("yours (MB)    " + "".join(f"{table1_bytes(paper_net, f, 150) / 1e6:>8.2f}"
                                 for f in table1.FRACTIONS))
print("paper (MB)    " + "".join(f"{v:>8.2f}" for v in table1.PAPER_TABLE1["mlp"]))

params = [p.astype(np.float32) for p in mlp_numpy.init_mlp(paper_net, rng=0)]
two = np.zeros((2, 784), np.float32)
traced = nn_graph.traced(nn_graph.mlp_program, params, two, np.array([0, 1]))
sampled = nn_graph.inject(traced, "different_sample", 0.1, rng=0)
for f, graph, which in ((1, traced, "traced"), (0.1, sampled, "injected")):
    per_example = table1_bytes(paper_net, f, 2) - table1_bytes(paper_net, f, 1)
    print(f"per example at f = {f:<3g}: your rule {per_example:.1f} B, the {which} graph "
          f"{retained_memory(graph).per_example(2):.1f} B")

# %% [markdown]
# Your rule and the graph agree: Table 1's rule is exactly what an
# implementation must keep. (At $f = 0.5$ the printed 2.21 is 2.2045 rounded
# twice; `minirad.studies.nn.memory.DISCREPANCIES` lists this and the other
# places where the printed table and its own rules part ways.) Where the
# memory goes:

# %%
def table1_parts(sizes, fraction, batch=150):
    """MB of weights, stored layer inputs, ReLU bits and logits under Table 1's rules."""
    inputs, outputs = sizes[:-1], sizes[1:]
    weights = 4 * sum(a * b + b for a, b in zip(inputs, outputs))
    if fraction == 1:
        stored, bits = 4 * sum(inputs), 0
    else:
        stored = 4 * sum(table1.kept_entries(d, fraction) for d in inputs)
        bits = sum(outputs[:-1]) / 8
    return np.array([weights, batch * stored, batch * bits, batch * 4 * sizes[-1]]) / 1e6


parts = np.array([table1_parts(paper_net, f) for f in table1.FRACTIONS])
fig, ax = plt.subplots(figsize=(7.5, 4.4))
positions = np.arange(len(table1.FRACTIONS))
bottom = np.zeros(len(positions))
for column, (label, colour) in enumerate([("weights and biases", "#999999"),
                                          ("stored layer inputs", "#0072B2"),
                                          ("ReLU masks (1 bit per unit)", "#E69F00"),
                                          ("logits", "#009E73")]):
    ax.bar(positions, parts[:, column], bottom=bottom, color=colour, label=label, width=0.6)
    bottom += parts[:, column]
ax.plot(positions, table1.PAPER_TABLE1["mlp"], "k_", markersize=28, markeredgewidth=2,
        label="printed in Table 1")
ax.set_xticks(positions, ["exact" if f == 1 else f"RAD f = {f:g}" for f in table1.FRACTIONS])
ax.set_ylabel("peak memory [MB], batch 150")
ax.set_title("Table 1, fully connected network (784-300-300-300-10)")
ax.set_ylim(0, 3.5)
ax.legend(loc="upper center", ncols=2, fontsize=9)
ax.grid(True, axis="y", alpha=0.3)
labs.show(fig, "lab8_table1_parts")

# %% [markdown]
# **What to look for.** The blue part (the stored inputs, 150 examples)
# shrinks in proportion to $f$; the grey part (the 419,110 weights and
# biases, 1.68 MB) does not move, so for this small network the total falls
# only from 2.69 MB to 1.75 MB: **RAD saves activation memory, not parameter
# memory.** The thin orange band is the price of sampling: the ReLU masks,
# 112.5 bytes per example, absent from the exact column because there they
# come for free. The logits (40 bytes per example) are too thin to see. The
# black marks are the printed values, at the tops of the bars.
#
# ## 3. Exercise 8.2: checkpointing, the sqrt(N) schedule
#
# A **chain** $x_{i+1} = \mathrm{step}(i, x_i)$, $i = 0, \dots, n-1$, is
# the shape of a simulation (time steps), an RNN (its steps) or a deep
# network (its layers). Its reverse sweep needs $x_i$ to go back through
# step $i$: `lam_i = vjp(i, x_i, lam_(i+1))`, starting from
# `lam_n = seed(x_n)`, the loss's gradient at the end. Plain reverse mode
# keeps all of $x_0, \dots, x_{n-1}$.
#
# **Checkpointing** keeps only every `every`-th state (the *checkpoints*
# $x_0, x_{e}, x_{2e}, \dots$ for $e$ = `every`) during the first sweep. In
# the reverse sweep, when it reaches a segment, it recomputes the segment's
# states from the segment's checkpoint, keeps them, reverses the segment's
# steps from last to first, and drops them. With $e \approx \sqrt n$ it
# holds about $2\sqrt n$ states instead of $n$, at the price of about one
# extra forward sweep: the schedule Chen et al. ("Training deep nets with
# sublinear memory cost", 2016) use for deep networks.
#
# **Exercise 8.2.** Write `checkpointed_gradient(step, vjp, seed, x0, n,
# every)`, returning `lam_0`. Keep nothing you do not need (the check
# counts how many states your code holds at once), call `step` only for the
# first sweep and the recomputations, and call `vjp` once per step, for
# $i = n-1, \dots, 0$ in that order. The last segment may be shorter than
# `every`.

# %%
def checkpointed_gradient(step, vjp, seed, x0, n, every):
    """lam_0 of the chain, keeping a checkpoint every `every` steps."""
    # BEGIN SOLUTION Exercise 8.2: the sqrt(N) schedule
    checkpoints, x = {}, x0
    for i in range(n):                        # first sweep: keep the checkpoints only
        if i % every == 0:
            checkpoints[i] = x
        x = step(i, x)
    lam = seed(x)
    del x                                     # x_n is no longer needed
    for start in reversed(range(0, n, every)):
        stop = min(start + every, n)
        states = [checkpoints.pop(start)]     # x_start .. x_(stop-1), recomputed
        for i in range(start, stop - 1):
            states.append(step(i, states[-1]))
        for i in range(stop - 1, start - 1, -1):
            lam = vjp(i, states.pop(), lam)   # drop each state once it is used
    return lam
    # END SOLUTION


# %%
labs.check_checkpointed_gradient(checkpointed_gradient)

# %% [markdown]
# On a chain of our own (a small recurrent cell, $x_{i+1} = x_i +
# \frac{1}{2}\tanh(A x_i + c_i)$, 100 steps), your schedule against
# minirad's, which counts the calls of `step` and the states it holds:

# %%
n_chain = 100
A = rng.standard_normal((8, 8)) / np.sqrt(8)
c = rng.standard_normal((n_chain, 8))
calls = {"step": 0}


def cell(i, x):
    calls["step"] += 1
    return x + 0.5 * np.tanh(A @ x + c[i])


def cell_vjp(i, x, lam):
    return lam + 0.5 * A.T @ ((1 - np.tanh(A @ x + c[i]) ** 2) * lam)


def cell_seed(x):
    return 2 * x  # loss |x_n|^2


def store_all(x0, n):
    """Plain reverse mode: keep every state, then sweep back."""
    states = [x0]
    for i in range(n):
        states.append(cell(i, states[-1]))
    lam = cell_seed(states[-1])
    for i in reversed(range(n)):
        lam = cell_vjp(i, states[i], lam)
    return lam


x_start = rng.standard_normal(8)
every = sqrt_every(n_chain)
yours = checkpointed_gradient(cell, cell_vjp, cell_seed, x_start, n_chain, every)
your_steps, calls["step"] = calls["step"], 0
plain = store_all(x_start, n_chain)
print(f"every = {every}: largest difference from plain reverse mode "
      f"{np.max(np.abs(yours - plain)):.1e}")
print(f"forward steps: yours {your_steps}, plain reverse mode {calls['step']}, "
      f"2n - ceil(n / every) = {2 * n_chain - -(-n_chain // every)}")

# %% [markdown]
# ## 4. Exercise 8.3: what the schedule costs
#
# **Exercise 8.3.** Write `uniform_cost(n, every)`, returning
# `(forward_steps, peak_states)` in closed form (no simulation):
#
# * `forward_steps`: calls of `step`, the first sweep and the
#   recomputations;
# * `peak_states`: the most states held at once, counting $x_0$ as the
#   first checkpoint and not counting the working state. While segment $j$
#   (counting from 0) is reversed, the schedule holds checkpoints
#   $0, \dots, j$ and the states of segment $j$, one of which *is*
#   checkpoint $j$.
#
# Mind the last segment, which may be shorter than `every`.

# %%
def uniform_cost(n, every):
    """(forward steps, peak states held) of the checkpoint-every-`every` schedule."""
    # BEGIN SOLUTION Exercise 8.3: the cost of the schedule
    segments = -(-n // every)  # ceil(n / every)
    forward_steps = n + (n - segments)  # each segment of L steps recomputes L - 1
    lengths = [min(every, n - j * every) for j in range(segments)]
    peak_states = max(j + length for j, length in enumerate(lengths))
    return forward_steps, peak_states
    # END SOLUTION


# %%
labs.check_uniform_cost(uniform_cost)

# %% [markdown]
# ### The binomial schedule
#
# Uniform spacing is not the best one can do. Griewank's **binomial**
# schedule (Griewank 1992; the *revolve* algorithm of Griewank and Walther,
# 2000) places checkpoints recursively: with
# $s$ snapshots it reverses a chain of $n$ steps in the fewest forward steps
# any schedule holding $s$ states can manage (minirad: `Binomial(s)`, closed
# form `binomial_forward_steps`). Here are the three schedules on a chain of
# 16 steps: each dot is a call of `step` (blue) or `vjp` (red), in the order
# they happen.

# %%
def timeline(n, schedule):
    """The calls a schedule makes on a chain of n steps: ('step' or 'vjp', i) in order."""
    events = []

    def step(i, x):
        events.append(("step", i))
        return x + 1.0

    def vjp(i, x, lam):
        events.append(("vjp", i))
        return lam, None

    if isinstance(schedule, int):  # your Exercise 8.2, checkpointing every `schedule` steps
        checkpointed_gradient(step, lambda i, x, lam: vjp(i, x, lam)[0], lambda x: 1.0,
                              0.0, n, schedule)
        return events, None
    result = reverse_chain(Chain(step=step, vjp=vjp, seed=lambda i, x: 1.0 if i == n else None),
                      0.0, n, schedule)
    return events, result


n_small = 16
schedules = [("plain reverse mode (store all)", StoreAll()),
             ("your checkpoints every 4 (sqrt N)", 4),
             ("binomial, 3 snapshots", Binomial(3))]
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharey=True, layout="constrained")
for ax, (title, schedule) in zip(axes, schedules):
    events, result = timeline(n_small, schedule)
    for kind, colour, marker in (("step", "#0072B2", "o"), ("vjp", "#D55E00", "s")):
        t = [k for k, (what, _) in enumerate(events) if what == kind]
        i = [i for what, i in events if what == kind]
        ax.plot(t, i, marker, color=colour, markersize=4,
                label="step(i): forward" if kind == "step" else "vjp(i): backward")
    steps = sum(what == "step" for what, _ in events)
    held = result.peak_stored if result is not None else uniform_cost(n_small, schedule)[1]
    ax.set_title(f"{title}\n{steps} forward steps, {held} states held at most", fontsize=10)
    ax.set_xlabel("order of the calls")
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel("step i")
axes[0].legend(loc="upper left")  # the lower right holds the last vjp calls
labs.show(fig, "lab8_schedules")

# %% [markdown]
# **What to look for.** Time runs left to right. Plain reverse mode climbs
# once (16 blue dots) and comes down once (16 red dots), holding all 16
# states. The uniform schedule climbs once, then before each group of 4 red
# dots climbs a short blue staircase: the recomputation of one segment from
# its checkpoint. The binomial schedule's staircases are nested and longer,
# and it holds fewer states. Count the blue dots in each panel's title:
# that is the compute each one pays for its memory.
#
# The whole trade-off on a chain of 200 steps: every spacing of the uniform
# schedule and every number of binomial snapshots, as (states held, forward
# steps):

# %%
n_long = 200
uniform_points = sorted({uniform_cost(n_long, e) for e in range(1, n_long + 1)},
                        key=lambda cost: cost[1])
binomial_points = []
for s in range(1, n_long + 1):
    result = timeline(n_long, Binomial(s))[1]
    assert result.forward_steps == binomial_forward_steps(n_long, s) + 1
    binomial_points.append((result.forward_steps, result.peak_stored))

fig, ax = plt.subplots(figsize=(7, 4.6))
ax.plot([p[1] for p in uniform_points], [p[0] / n_long for p in uniform_points], "o",
        color="#0072B2", markersize=4, label="checkpoint every e steps (each e)")
ax.plot([p[1] for p in binomial_points], [p[0] / n_long for p in binomial_points], "s-",
        color="#D55E00", markersize=4, label=f"binomial (revolve), s = 1 .. {n_long} snapshots")
e = sqrt_every(n_long)
steps_e, held_e = uniform_cost(n_long, e)
ax.plot([held_e], [steps_e / n_long], "o", color="black", markersize=10, markerfacecolor="none",
        label=f"the sqrt(N) choice, e = {e}")
ax.plot([n_long], [1.0], "*", color="#009E73", markersize=14,
        label="plain reverse mode (all 200 states)")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel("states held at once (log)")
ax.set_ylabel("forward steps / n (log)")
ax.set_title(f"Memory against recomputation, chain of n = {n_long} steps")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=9)
labs.show(fig, "lab8_checkpointing_tradeoff")

# %% [markdown]
# **What to look for.** Lower left is better: little memory, little
# recomputation. The red binomial curve never lies above the blue points:
# at the memory of the sqrt(N) choice (the black circle, 27 states and
# about 2 sweeps' worth of steps) the binomial schedule needs a little
# fewer forward steps, and it keeps going to the left where the uniform
# schedule cannot: 10 states cost under 3 sweeps, 4 states about 6.5, and
# with one snapshot (2 states, far left) it recomputes each state from
# $x_0$, about $n/2 = 100$ sweeps. At the right end both reach plain reverse
# mode (the star). No schedule gets below 1 sweep or below 2 states:
# **memory is traded for compute, never for free.**
#
# ## 5. RAD at equal memory on the PDE
#
# The paper's Section 5 controls a reaction-diffusion equation: $N$ explicit
# time steps $\phi_{n+1} = A_n \phi_n$ on a grid of $d$ unknowns, with a
# loss summed over the steps (`minirad.studies.pde`). The gradient's
# reverse sweep needs every $\phi_n$: $N d$ floats. RAD (the paper's eq. 8)
# keeps, for each step, $k$ entries of $\phi_n$ drawn uniformly with
# replacement and weighted $d/k$; the adjoint through $A_n$ stays exact,
# so there is **no recomputation** and the estimate is unbiased. Each kept
# entry costs 8 bytes for its value and a few for its **index** (where on
# the grid it was drawn; the smallest unsigned integer type that numbers the
# grid, `index_dtype(p)`).
#
# We use a small grid (16 x 16 cells, $d = 225$ unknowns) and $N = 256$
# steps so that everything runs in seconds.

# %%
p = Reactor(cells=16, n_steps=256)
theta = initial_theta(rng=0)
loss, exact = exact_gradient(p, theta)
print(f"d = {p.size} unknowns, N = {p.n_steps} steps; reverse mode keeps N d floats = "
      f"{p.n_steps * p.size * 8:,} bytes; indices are {np.dtype(index_dtype(p)).name}")
print(f"loss {loss:.3e}; exact gradient: " + ", ".join(f"{v:.2e}" for v in exact))

# %% [markdown]
# **Exercise 8.4.** Write `rad_samples_for_budget(p, budget)`: the largest
# number $k$ of samples per state (at most $d$) such that RAD's stored
# samples, values and indices for the $N$ steps, fit in `budget` bytes. (The
# reverse sweep needs $\phi_0, \dots, \phi_{N-1}$; the last state is used as
# soon as it is computed.) The check runs the estimator with your $k$ and
# with $k + 1$ under minirad's ledger, on eight reactors, one of them so
# large that its indices need 4 bytes.

# %%
def rad_samples_for_budget(p, budget):
    """The most samples per state RAD can keep for the whole sweep in `budget` bytes."""
    # BEGIN SOLUTION Exercise 8.4: RAD at a memory budget
    per_sample = p.n_steps * (8 + np.dtype(index_dtype(p)).itemsize)  # value + index, N steps
    return min(p.size, budget // per_sample)
    # END SOLUTION


# %%
labs.check_rad_budget(rad_samples_for_budget)

# %% [markdown]
# Now the comparison. For each memory budget (a share of what plain reverse
# mode keeps) we take the best each method can do within it:
#
# * **exact, uniform checkpoints**: the spacing with the fewest forward steps
#   whose held states fit (none fits below about $2\sqrt N$ states);
# * **exact, binomial**: the most snapshots that fit;
# * **RAD**: $k$ from your Exercise 8.4, no checkpoints, and the noise of
#   one estimate measured over 40 independent estimates:
#   $\sqrt{\mathrm{mean}\, |\hat g - g|^2} / |g|$.
#
# The checkpointing costs come from the closed forms (your `uniform_cost`,
# minirad's `binomial_forward_steps`; the cell after the table runs one of
# them on the real simulation to confirm), the RAD estimates from the fast
# engine (`minirad.studies.pde.engine`, tested equal to the reference).

# %%
state_bytes = p.size * 8
full = p.n_steps * state_bytes
shares = [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128]
noise_rng = np.random.default_rng(2021)
rows = []
for share in shares:
    budget = int(share * full)
    held = budget // state_bytes  # whole states that fit
    fits = [e for e in range(1, p.n_steps + 1) if uniform_cost(p.n_steps, e)[1] <= held]
    uniform_steps = min(uniform_cost(p.n_steps, e)[0] for e in fits) if fits else None
    snapshots = held - 1  # the binomial schedule holds its snapshots plus one state
    binomial_steps = (binomial_forward_steps(p.n_steps, snapshots) + 1
                      if snapshots >= 1 else None)
    k = rad_samples_for_budget(p, budget)
    estimates = pde_engine.run(p, [theta] * 40, [k / p.size] * 40, rng=noise_rng).gradients
    noise = float(np.sqrt(np.mean(np.sum((estimates - exact) ** 2, axis=1)))
                  / np.linalg.norm(exact))
    rows.append((share, budget, uniform_steps, binomial_steps, k, noise))

print(f"{'memory':>8} {'bytes':>9} | {'uniform':>9} {'binomial':>9} | {'RAD k':>6} "
      f"{'RAD noise':>10}")
print(f"{'':>8} {'':>9} | {'forward steps / N':>19} |")
for share, budget, uniform_steps, binomial_steps, k, noise in rows:
    u = f"{uniform_steps / p.n_steps:9.2f}" if uniform_steps else f"{'-':>9}"
    b = f"{binomial_steps / p.n_steps:9.2f}" if binomial_steps else f"{'-':>9}"
    print(f"{'1/' + str(round(1 / share)):>8} {budget:>9,} | {u} {b} | {k:>6} {noise:>10.3f}")

# %%
# one row on the real simulation: the binomial schedule at 1/8 of the memory, under the ledger
budget = full // 8
snapshots = budget // state_bytes - 1
_, checked, run = exact_gradient(p, theta, Binomial(snapshots), details=True)
print(f"binomial, {snapshots} snapshots: {run.forward_steps} forward steps (closed form "
      f"{binomial_forward_steps(p.n_steps, snapshots) + 1}), {run.peak_bytes:,} bytes held at "
      f"most (budget {budget:,}); the same gradient: {np.allclose(checked, exact, rtol=1e-12)}")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.6), layout="constrained")
memory_share = [row[0] for row in rows]
for column, label, colour, marker in ((2, "exact, checkpoint every e (best e that fits)",
                                       "#0072B2", "o"),
                                      (3, "exact, binomial (most snapshots that fit)",
                                       "#D55E00", "s")):
    points = [(row[0], row[column] / p.n_steps) for row in rows if row[column]]
    left.plot(*zip(*points), marker + "-", color=colour, label=label)
left.plot(memory_share, [1.0] * len(rows), "^-", color="#009E73",
          label="RAD, k samples per step (no recomputation)")
ticks = (shares, [f"1/{round(1 / share)}" for share in shares])
left.set_xscale("log", base=2)
left.set_xticks(*ticks)
left.set_xticks([], minor=True)
left.set_yscale("log")
left.set_xlabel("memory budget, share of plain reverse mode (log)")
left.set_ylabel("forward steps / N (log)")
left.set_title("Compute: what the exact gradient costs at that memory")
left.grid(True, which="both", alpha=0.3)
left.legend(fontsize=9)
right.plot(memory_share, [row[5] for row in rows], "^-", color="#009E73",
           label="RAD: relative noise of one estimate")
right.axhline(0, color="black", linestyle="--", label="checkpointing: exact gradient, noise 0")
for share, _, _, _, k, noise in rows:
    right.annotate(f"k = {k}", (share, noise), textcoords="offset points", xytext=(4, 6),
                   fontsize=8)
right.set_xscale("log", base=2)
right.set_xticks(*ticks)
right.set_xticks([], minor=True)
right.set_xlim(shares[-1] / 1.4, shares[0] * 1.6)
right.set_xlabel("memory budget, share of plain reverse mode (log)")
right.set_ylabel("|estimate - gradient| / |gradient|  (rms)")
right.set_title("Variance: what RAD pays at that memory")
right.grid(True, which="both", alpha=0.3)
right.legend(fontsize=9, loc="upper right")
labs.show(fig, "lab8_memory_compute_variance")

# %% [markdown]
# **What to look for.** Read both panels at the same point of the
# horizontal axis: that is one memory budget, and the two panels show its
# two prices. On the left, the exact gradient gets dearer as memory shrinks:
# the blue uniform schedule stops where even $2\sqrt N$ states do not fit,
# and the red binomial schedule climbs from 1.5 sweeps at half the memory
# to over a hundred at 1/128.
# RAD stays at one sweep. On the right, RAD's price instead: the noise of
# one estimate grows as $k$ falls (roughly like $1/\sqrt k$), while the
# checkpointed gradients sit at zero. Note how small RAD's noise is even at
# $k$ = a few: every step's sampling error averages out over the 256 steps
# of the sum. Which price is better depends on what the gradient is for: an
# optimiser that takes many small steps tolerates noise (the paper trains
# the PDE's parameters with it); a single, exact sensitivity does not.
#
# ## 6. Exercise 8.5: the eq. 8 estimator by hand
#
# Section 5 used minirad's estimator; now write it. The gradient of the
# PDE's loss is a sum over paths that leave $\theta$ through the source
# $C_n$ of some step, cross the steps $A_{n+1}, \dots$ and end in the loss
# at some later $\phi_t$ (the paper's gradient formula above eq. 8). Only
# two factors of a path need the state: the edge $C_n \to \phi_{n+1}$,
# which is $\Delta t\,\mathrm{diag}(\phi_n)$, and the loss's seed
# $\partial L/\partial\phi_t = 2(\phi_t - \phi^{\text{target}}_t)/(N d)$.
# Eq. 8 applies the sampling matrix $P^{\phi_n}$ (Lab 10; $k$ of the $d$
# entries, with replacement, weight $d/k$) to both, with **one draw per
# state**, and keeps everything else exact. The reverse sweep, with
# $S$ the draws of step $n$ (a list of $k$ flat indices, repeats allowed):
#
# * $\lambda_N = \frac dk \sum_{i \in S_N} e_i\, \partial L/\partial\phi_{N,i}$;
# * for $n = N-1, \dots, 0$: the source term
#   $\bar\theta \mathrel{+}= \frac{\partial C_n}{\partial\theta}^T u_n$ with
#   $u_n = \frac dk \sum_{i \in S_n} e_i\,\Delta t\, \phi_{n,i}\,
#   \lambda_{n+1,i}$ (summed over the $y$ of each grid column, since
#   $C_n$ depends on $x$ only), then
#   $\lambda_n = A_n^T \lambda_{n+1} + (\text{the sampled seed of } \phi_n)$,
#   no seed for $\phi_0$.
#
# $A_n$ is symmetric, so $A_n^T\lambda$ is `step(p, theta, n, lam)`; $C_n$ is
# linear in $\theta$, so `source_profile(p, np.eye(7), n * p.dt)` is
# $\partial C_n/\partial\theta$, a (7, side) array; `target(p, t)` is the
# target; the state is a (side, side) array with axes $(x, y)$ and the flat
# index of entry $(i, j)$ is `i * side + j` (`phi.ravel()`).
#
# **Exercise 8.5.** Complete `eq8_gradient(p, theta, indices)`: run the
# forward loop keeping only `phi.ravel()[indices[n]]` of each state, then the
# reverse sweep above; return $\hat g$, 7 numbers. `indices` is an int array
# of shape $(N+1, k)$. No randomness inside your function: the draws are
# given, so the check compares your estimate with minirad's (`chain(p,
# theta, samples)` reversed) draw for draw, on four small reactors (one with
# $k = d$, where draws repeat), and names the slip if you leave out $d/k$,
# let a repeated draw overwrite another, keep the loss's seed exact, or pair
# $\phi_n$ with the adjoint one step late.

# %%
def eq8_gradient(p, theta, indices):
    """The eq. 8 estimate of dL/dtheta with the given draws (N + 1, k)."""
    # BEGIN SOLUTION Exercise 8.5: the eq. 8 estimator
    d, k, n_steps = p.size, indices.shape[1], p.n_steps
    weight, scale = d / k, 2.0 / (n_steps * d)
    phi, kept = initial_state(p), []
    for n in range(n_steps + 1):  # keep k entries of each state, never the state
        kept.append(phi.ravel()[indices[n]])
        if n < n_steps:
            phi = step(p, theta, n, phi)
    lam, grad = np.zeros(d), np.zeros(7)
    for n in range(n_steps, -1, -1):
        idx = indices[n]
        if n < n_steps:  # lam is lambda_(n+1): the source term of step n, then back through A_n
            u = np.zeros(d)
            np.add.at(u, idx, weight * p.dt * kept[n] * lam[idx])  # repeats add up
            grad += source_profile(p, np.eye(7), n * p.dt) @ u.reshape(p.side, p.side).sum(1)
            lam = step(p, theta, n, lam.reshape(p.side, p.side)).ravel()
        if n > 0:  # the sampled seed of phi_n
            residual = kept[n] - target(p, n * p.dt).ravel()[idx]
            np.add.at(lam, idx, weight * scale * residual)
    return grad
    # END SOLUTION


# %%
labs.check_eq8_gradient(eq8_gradient)

# %% [markdown]
# Unbiased in practice: the mean of 200 of your estimates, each with fresh
# draws from minirad's `sampler` (a tenth of each state), against the exact
# gradient, entry by entry in standard errors (about 95% of them within
# $\pm 2$ for an unbiased estimator).

# %%
small = Reactor(cells=8, n_steps=32, dt=1 / 128)
theta_small = initial_theta(rng=1)
exact_small = exact_gradient(small, theta_small)[1]
draws_rng = np.random.default_rng(8)
estimates = np.array([eq8_gradient(small, theta_small,
                                   sampler(small, 0.1, draws_rng)[0].astype(np.int64))
                      for _ in range(200)])
z = (estimates.mean(axis=0) - exact_small) / (estimates.std(axis=0, ddof=1) / np.sqrt(200))
print(f"k = {sampler(small, 0.1, 0)[0].shape[1]} of d = {small.size} entries per state")
print("exact gradient:", exact_small.round(5))
print("mean estimate: ", estimates.mean(axis=0).round(5))
print("z-scores:      ", z.round(2))

# %% [markdown]
# ## What you learned
#
# * The backward pass keeps what the operators' transposes need: a layer's
#   input for its weight gradient, softmax probabilities, nothing for sums
#   and bias additions; a ReLU mask is free while the layer's output is kept.
# * Table 1's rules: layer inputs and logits per example, the weights once;
#   RAD samples the inputs, keeps the logits whole and pays one bit per ReLU
#   unit. It saves activation memory, never parameter memory.
# * Checkpointing every $\sqrt n$ steps holds about $2\sqrt n$ states for
#   $2n - \lceil n/e \rceil$ forward steps; the binomial schedule needs
#   fewer steps at every memory and still works far below $2\sqrt n$ states.
# * At equal memory, checkpointing pays in compute and RAD in variance.
# * Eq. 8 samples each state once and uses the draw twice, in the loss's
#   seed and in the source's edge; the adjoint through $A_n$ stays exact, so
#   the estimate is unbiased and needs no recomputation.
#
# ## Going further
#
# * Checkpoints and RAD combine: keep whole states every $e$ steps and only
#   samples in between (`rad_gradient(p, theta, f, schedule=Uniform(e))` in
#   `minirad.studies.pde`). Which $e$ minimises the memory for a given $k$?
# * The ConvNet of Table 1 charges one bit per ReLU unit *after* pooling
#   (`table1.DISCREPANCIES["convnet"]`). Trace it with `nn_graph` and read
#   off what the graph keeps before each pool.
# * Lab 9 applies RAD to the weight gradients of neural networks and trains
#   with it.
