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
# # Lab 2: The linearized computational graph, forward and reverse
#
# Automatic differentiation (AD) does not manipulate formulas and does not
# take finite differences. It records the elementary operations a program
# performs, keeps the derivative of each one at the point where it was
# evaluated, and combines those local derivatives with the chain rule. The
# record is a graph: the **linearized computational graph** (LCG). Its vertices
# are the program's variables; an edge $u \to v$ means "$v$ was computed from
# $u$" and carries the number $\partial v / \partial u$, the **local partial**.
#
# Every way of computing a Jacobian in this course is an algorithm over that
# one graph. This lab builds the two classic ones:
#
# * the **forward sweep** (forward mode, tangents), and
# * the **reverse sweep** (reverse mode, adjoints, backpropagation),
#
# and replays the lecture's tangent and adjoint traces number by number.
# (Griewank and Walther, *Evaluating Derivatives*, 2008, chapters 2-4, treat
# both modes and their cost in full; Baydin et al., "Automatic
# differentiation in machine learning: a survey", 2018, is a shorter tour.)
#
# **You need:** Lab 1, the chain rule, Python loops over lists.
# **Exercises:** 2.1 (forward sweep) and 2.2 (reverse sweep); they are the core
# of the course, and Labs 3-6 build on them.

# %%
import inspect

import matplotlib.pyplot as plt
import numpy as np

import minirad
from minirad import examples, labs, ops
from minirad.draw.render import render

# %% [markdown]
# ## 1. Tracing the lecture's example
#
# The lecture differentiates $y = \ln(x_1) + x_1 x_2 - \sin(x_2)$ at
# $(x_1, x_2) = (2, 5)$. `minirad.trace` runs a Python function on special
# numbers that record every operation, and returns the LCG. The elementary
# functions come from `minirad.ops` (`ops.log`, `ops.sin`, ...), which know
# their own derivatives.
#
# We write the function one operation per line, in the lecture's order, because
# the trace numbers the variables in the order they are computed. (The one-liner
# `ops.log(x1) + x1 * x2 - ops.sin(x2)` gives the same graph but computes
# $\sin x_2$ after the addition, so its registers `v4` and `v5` swap.)

# %%
def f(x1, x2):
    v2 = ops.log(x1)
    v3 = x1 * x2
    v4 = ops.sin(x2)
    v5 = v2 + v3
    return v5 - v4


g = minirad.trace(f, 2.0, 5.0)
print(g)
print()
print(g.wengert())

# %% [markdown]
# That listing is a **Wengert list**: one line per variable, in the order the
# program computed them, each assigned once. Compare it with the lecture's
# *forward evaluation trace*: the registers `v0` ... `v6` are the same, so are
# the values ($v_6 = 11.652$). What the lecture does not write down, and the
# trace does, is the column on the right: the local partials of each line,
# evaluated at this point. For instance `v3 = v0 * v1` has
# $\partial v_3/\partial v_0 = v_1 = 5$ and $\partial v_3 / \partial v_1 = v_0 = 2$.
#
# Those partials are all AD needs. Here is the same information as a picture.

# %%
labs.show(render(g, show_ops=True, show_values=True,
                 title="LCG of ln(x1) + x1*x2 - sin(x2) at (2, 5)"),
          "lab2_lecture_lcg")

# %% [markdown]
# **What to look for.** The graph reads from the bottom up, like the RAD paper's
# Figure 1: inputs (blue boxes) at the bottom, the output (orange octagon) at
# the top. Each vertex shows its operation and value; each edge shows its
# local partial. $x_1$ has two outgoing edges because it is used twice (by
# the log and by the product), and so has $x_2$. The edge into $y$ from $v_4$
# carries $-1$ because $y = v_5 - v_4$.
#
# ## 2. The LCG as a Python object
#
# For the exercises you need only a handful of attributes. Vertices are
# numbered $0, \dots, n-1$ **in topological order**: every edge goes from a
# lower to a higher number, so a loop `for v in range(g.n_vertices)` visits
# every vertex after all of its predecessors.
#
# | expression | meaning |
# |---|---|
# | `g.n_vertices` | number of vertices $n$ |
# | `g.inputs`, `g.outputs` | tuples of vertex numbers, in Jacobian column and row order |
# | `g.predecessors(v)`, `g.successors(v)` | tuples of vertex numbers |
# | `g.partial(u, v)` | the local partial $\partial v / \partial u$ on edge $u \to v$ |
# | `g.edges()` | all edges as `(u, v, partial)` triples, grouped by `v` in topological order |
# | `g.names[v]`, `g.values[v]` | a vertex's name and primal value |
# | `g.sources`, `g.targets`, `g.partials` | the same edges as three numpy arrays |
#
# The Jacobian of a graph with $m$ outputs and $n$ inputs is an $m \times n$
# array: row $j$ belongs to output `g.outputs[j]`, column $i$ to input
# `g.inputs[i]`. Note that the outputs need not be the last vertices.

# %%
print("inputs:", g.inputs, "outputs:", g.outputs, "vertices:", g.n_vertices)
print("predecessors of v3:", g.predecessors(3), " successors of x2:", g.successors(1))
print("dv3/dv0 =", g.partial(0, 3))
print("first three edges:", list(g.edges())[:3])

# %% [markdown]
# ## 3. Forward mode: the tangent trace
#
# Fix one input, say $x_1$, and attach to every vertex its derivative with
# respect to it, the **tangent** $\dot v = \partial v / \partial x_1$. The chain
# rule says that a vertex's tangent is the sum over its incoming edges of
# partial times the predecessor's tangent:
#
# $$\dot v = \sum_{u \to v} \frac{\partial v}{\partial u}\, \dot u,
# \qquad \dot x_1 = 1,\quad \dot x_2 = 0.$$
#
# In topological order every $\dot u$ on the right is ready when we need it,
# so one pass over the vertices computes all tangents. That pass is the
# lecture's *forward derivative trace*. Here are its numbers, next to each
# vertex's operation; your forward sweep (Exercise 2.1) will reproduce them.

# %%
def expression(g, v):
    """A vertex's operation with its operands' register names, e.g. 'v0 * v1'."""
    if v in g.inputs:
        return g.names[v]
    return g.op(v).format(*[f"v{u}" for u in g.predecessors(v)])


lecture_tangents = [1, 0, 0.5, 5, 0, 5.5, 5.5]  # the lecture's v0dot ... v6dot
print(f"{'vertex':<8} {'operation':<10} {'partials in':>24} {'tangent':>8}")
for v in range(g.n_vertices):
    partials = ", ".join(f"{g.partial(u, v):.3g}" for u in g.predecessors(v)) or "-"
    print(f"v{v:<7} {expression(g, v):<10} {partials:>24} {lecture_tangents[v]:>8g}")

# %% [markdown]
# The last row is $\partial y / \partial x_1 = 5.5$. One forward pass gave one
# *column* of the Jacobian: the derivatives of every output with respect to one
# input. For the whole Jacobian, repeat with each input seeded in turn.
#
# ## 4. Exercise 2.1: the forward sweep
#
# **Exercise 2.1.** Complete `forward_sweep(g)`: for each input, seed its
# tangent with 1 (all other tangents 0), push the tangents through the graph in
# topological order with the rule above, and store the outputs' tangents as that
# input's column. Return the Jacobian as a numpy array of shape
# `(len(g.outputs), len(g.inputs))`, nothing else.
#
# Mind the **sum**: a vertex with two incoming edges receives a contribution
# from each. Assigning instead of adding is the classic bug.

# %%
def forward_sweep(g):
    """The Jacobian of LCG g, one forward pass per input."""
    # BEGIN SOLUTION Exercise 2.1: forward sweep
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for column, x in enumerate(g.inputs):
        tangent = np.zeros(g.n_vertices)
        tangent[x] = 1.0
        for v in range(g.n_vertices):  # topological order: predecessors come first
            for u in g.predecessors(v):
                tangent[v] += g.partial(u, v) * tangent[u]
        jacobian[:, column] = tangent[list(g.outputs)]
    return jacobian
    # END SOLUTION


# %% [markdown]
# The check runs your function on the lecture's and the paper's examples, a
# graph with two outputs, one that returns an input unchanged, seeded random
# graphs and a densely connected one, and compares with minirad. If it fails,
# the message names the graph: rebuild it with
# `labs.check_graphs("sweeps")[name]` and debug on it.

# %%
labs.check_forward_sweep(forward_sweep)
print("your forward sweep on the lecture's example:", forward_sweep(g))

# %% [markdown]
# ## 5. Reverse mode: the adjoint trace
#
# Forward mode needs one pass per input. A loss function in machine learning
# has millions of inputs and one output, so we turn the computation around.
# Fix one output $y$ and attach to every vertex its **adjoint**
# $\bar v = \partial y / \partial v$: how much $y$ moves when $v$ moves. Now the
# chain rule runs over *outgoing* edges:
#
# $$\bar u = \sum_{u \to v} \frac{\partial v}{\partial u}\, \bar v,
# \qquad \bar y = 1.$$
#
# Visiting vertices in **reverse** topological order makes every $\bar v$ on
# the right final before it is used. Each vertex then passes its adjoint back
# to its predecessors; a vertex used several times collects one contribution
# per use, and the contributions are **added**. This is the lecture's
# `node_to_grad` algorithm, and the ChainRules notes' point about gradient
# accumulation: $x_2$ feeds both $v_3$ and $v_4$, so
# $\bar x_2 = \bar v_3 \cdot 2 + \bar v_4 \cos 5 = 2 - 0.284 = 1.716$.

# %%
lecture_adjoints = [5.5, 1.716, 1, 1, -1, 1, 1]  # the lecture's v0bar ... v6bar
print(f"{'vertex':<8} {'operation':<10} {'partials out':>24} {'adjoint':>8}")
for v in reversed(range(g.n_vertices)):  # the lecture lists the adjoints from v6 down
    partials = ", ".join(f"{g.partial(v, s):.3g}" for s in g.successors(v)) or "-"
    print(f"v{v:<7} {expression(g, v):<10} {partials:>24} {lecture_adjoints[v]:>8g}")

# %% [markdown]
# The last two rows are the whole gradient, $(5.5, 1.716)$, from **one**
# backward pass. A reverse pass gives one *row* of the Jacobian: the
# derivatives of one output with respect to every input.
#
# ## 6. Exercise 2.2: the reverse sweep
#
# **Exercise 2.2.** Complete `reverse_sweep(g)`: for each output, seed its
# adjoint with 1 (all others 0), visit the vertices in reverse topological
# order, and let each vertex add `partial * adjoint` to each of its
# predecessors. Store the inputs' adjoints as that output's row and return the
# Jacobian, shape `(len(g.outputs), len(g.inputs))`, as in Exercise 2.1.

# %%
def reverse_sweep(g):
    """The Jacobian of LCG g, one reverse pass per output."""
    # BEGIN SOLUTION Exercise 2.2: reverse sweep
    jacobian = np.zeros((len(g.outputs), len(g.inputs)))
    for row, y in enumerate(g.outputs):
        adjoint = np.zeros(g.n_vertices)
        adjoint[y] = 1.0
        for v in reversed(range(g.n_vertices)):  # successors come first
            for u in g.predecessors(v):
                adjoint[u] += g.partial(u, v) * adjoint[v]  # add: u may have several uses
        jacobian[row, :] = adjoint[list(g.inputs)]
    return jacobian
    # END SOLUTION


# %%
labs.check_reverse_sweep(reverse_sweep)
print("your reverse sweep on the lecture's example:", reverse_sweep(g))

# %% [markdown]
# ## 7. The paper's Figure 1
#
# The RAD paper (Oktay et al., ICLR 2021) opens with this small program, an
# example due to Paul Hovland. Trace it at $(x_1, x_2) = (1, 2)$ and draw its
# LCG: this is the paper's Figure 1c.

# %%
print(inspect.getsource(examples.figure1_program))
g1 = minirad.trace(examples.figure1_program, 1.0, 2.0)
print(g1.wengert())
labs.show(render(g1, show_ops=True, title="Figure 1: LCG of the paper's program at (1, 2)"),
          "lab2_figure1_lcg")

# %% [markdown]
# **What to look for.** $a = e^{x_1}$ is used twice (in $d = a c$ and in
# $y = a d$), so vertex `v2` has two outgoing edges, and $x_2$ is used twice
# (in $\sin x_2$ and in $c = b x_2$). Every path from an input up to $y$ is a
# chain of local partials; Lab 3 is about those paths.
#
# By hand, $y = e^{2x_1} x_2 \sin x_2$, so $\partial y/\partial x_1 = 2y$ and
# $\partial y/\partial x_2 = e^{2x_1}(\sin x_2 + x_2 \cos x_2)$. Your two sweeps
# should agree with both formulas:

# %%
x1, x2 = 1.0, 2.0
by_hand = np.array([[2 * g1.value("y"), np.exp(2 * x1) * (np.sin(x2) + x2 * np.cos(x2))]])
print("by hand:      ", by_hand)
print("forward sweep:", forward_sweep(g1))
print("reverse sweep:", reverse_sweep(g1))

# %% [markdown]
# ## 8. Which mode is cheaper?
#
# Both sweeps give the same numbers; they differ in cost. A forward sweep costs
# one pass **per input**, a reverse sweep one pass **per output**. We
# count the multiplications each sweep performs: one per edge that the seeded
# input can reach (forward) or that can reach the seeded output (reverse). We
# compare them on two families of traced programs of growing size $n$:
#
# * many inputs, one output: $y = \sum_{i} \sin(x_i x_{i+1})$ over $n$ inputs;
# * one input, many outputs: $y_1 = \sin t$, $y_{k+1} = t \sin y_k$, $n$ outputs.

# %%
def many_inputs(*x):
    total = ops.sin(x[0] * x[1])
    for a, b in zip(x[1:], x[2:]):
        total = total + ops.sin(a * b)
    return total


def many_outputs(t, n):
    ys = [ops.sin(t)]
    for _ in range(n - 1):
        ys.append(t * ops.sin(ys[-1]))
    return tuple(ys)


def sweep_cost(g, forward):
    """Multiplications of a sweep: one per edge each seeded input reaches (forward), or
    each edge that reaches the seeded output (reverse), summed over the seeds."""
    seeds = g.inputs if forward else g.outputs
    step = g.successors if forward else g.predecessors
    total = 0
    for seed in seeds:
        reached, stack = {seed}, [seed]
        while stack:
            for w in step(stack.pop()):
                total += 1  # the edge is traversed once, whichever way it was reached
                if w not in reached:
                    reached.add(w)
                    stack.append(w)
    return total


sizes = list(range(2, 41, 2))
costs = {"many inputs": ([], []), "many outputs": ([], [])}
for n in sizes:
    wide = minirad.trace(many_inputs, *np.linspace(0.1, 1.0, n))
    tall = minirad.trace(lambda t, n=n: many_outputs(t, n), 0.7)
    for name, graph in (("many inputs", wide), ("many outputs", tall)):
        costs[name][0].append(sweep_cost(graph, forward=True))
        costs[name][1].append(sweep_cost(graph, forward=False))
print(f"n = {sizes[-1]}: many inputs   forward {costs['many inputs'][0][-1]:>4}, reverse "
      f"{costs['many inputs'][1][-1]:>4} multiplications")
print(f"n = {sizes[-1]}: many outputs  forward {costs['many outputs'][0][-1]:>4}, reverse "
      f"{costs['many outputs'][1][-1]:>4} multiplications")


# %%
def cost_plot(sizes, costs):
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    titles = {"many inputs": r"$n$ inputs, 1 output:  $y = \sum_i \sin(x_i x_{i+1})$",
              "many outputs": r"1 input, $n$ outputs:  $y_{k+1} = t \sin y_k$"}
    for ax, (name, (forward, reverse)) in zip(axes, costs.items()):
        ax.plot(sizes, forward, "o-", color="#0072B2", ms=4, label="forward sweep")
        ax.plot(sizes, reverse, "s-", color="#D55E00", ms=4, label="reverse sweep")
        ax.set_title(titles[name], fontsize=10)
        ax.set_xlabel("n")
        ax.grid(True, alpha=0.3)
        ax.legend()
    axes[0].set_ylabel("multiplications for the whole Jacobian")
    fig.suptitle("One pass per input (forward) or per output (reverse)")
    fig.tight_layout()
    return fig


labs.show(cost_plot(sizes, costs), "lab2_sweep_costs")

# %% [markdown]
# **What to look for.** On the left (many inputs, one output) the reverse
# sweep's cost grows in a straight line with $n$, while the forward sweep's
# grows like $n^2$: each of the $n$ forward passes walks the rest of the sum.
# On the right the roles swap. The rule of thumb: forward mode when there are
# few inputs, reverse mode when there are few outputs, which is why
# backpropagation (reverse mode on a scalar loss) trains neural networks.
#
# ## What you learned
#
# * Tracing a program records its Wengert list; with the local partials on the
#   edges it is the linearized computational graph.
# * Forward mode pushes tangents $\dot v = \sum \partial v/\partial u \cdot \dot u$
#   in topological order, one pass per input, one Jacobian column per pass.
# * Reverse mode pulls adjoints $\bar u = \sum \partial v/\partial u \cdot \bar v$
#   in reverse order, one pass per output, one row per pass; a variable used
#   several times *adds up* its contributions.
# * Both compute the same Jacobian; their costs scale with the number of inputs
#   and outputs respectively.
#
# ## Going further
#
# * Count the multiplications your own sweeps perform and compare with
#   `minirad.exact.sweeps.forward_sweep(g).multiplications`. Do you count edges the
#   seed cannot reach, whose tangents are zero whatever the partials? minirad
#   does not.
# * `minirad.exact.sweeps.jvp(g, v)` and `vjp(g, u)` seed a whole vector instead of a
#   single input or output: a Jacobian-vector product in one pass. How would
#   you change your sweeps to do that?
# * Lab 3 shows that both sweeps are clever ways of adding up products along
#   the paths of the LCG.
