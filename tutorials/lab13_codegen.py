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
# # Lab 13: The derivative as a program
#
# There are three ways to get a derivative out of a program.
#
# * **Tracing** (Labs 2 and 7): run the program, record what it did (the
#   Wengert list, the LCG), then sweep the record. Control flow is followed as
#   it happens; the record is made again for every new input.
# * **A static graph**: build the graph once, ahead of time, and evaluate it
#   again and again (TensorFlow 1, and minirad's `replay`, which reruns a
#   recorded tape at new inputs).
# * **Source transformation**: write the derivative out as *code*: a program
#   whose statements compute the adjoints (Tapenade, Google's Tangent for
#   Python, JAX's printed jaxpr). The derivative is then a program you can read,
#   step through and run at numpy's speed, with no interpreter in between.
#
# `minirad.codegen(g)` does the third: it writes a traced graph out as Python.
# In this lab you will
#
# * read a program's Wengert list as generated code (`mode="forward"`),
# * write the adjoint code of a small array program by hand (Exercise 13.1) and
#   compare it, line by line, with the code minirad writes,
# * preaccumulate by hand: eliminate the intermediate vertices of one step of an
#   elementwise loop, so the adjoint makes fewer operations (Exercise 13.2), and
#   find the same diagonal in the generated code,
# * see what generated code does with a branch: a guard,
# * time the three ways against a program written by hand.
#
# **You need:** Lab 2 (the LCG and its sweeps), Lab 4 (vertex elimination) and
# Lab 7 (pullbacks of array operations).
# **Exercises:** 13.1 (adjoint code by hand) and 13.2 (preaccumulating a step),
# each followed by its check cell.
#
# Pictures open inline in Jupyter; when you run this file as a script they are
# saved as PNG files in `lab_output/` (or the folder named by the environment
# variable `MINIRAD_LAB_OUTPUT`).

# %%
import time

import numpy as np
from matplotlib.figure import Figure

import minirad
from minirad import labs, render
from minirad.labs.lab13_codegen import layer, relaxation_step

# %% [markdown]
# ## 1. The Wengert list as code
#
# The program of this lab is one layer of a network, summed:
# $y = \sum_i \tanh(W x)_i$. Trace it at a $3 \times 2$ matrix and print the
# forward program minirad writes from the trace: one statement per vertex of
# the LCG, named as the graph names it, each with a comment saying which rule
# made it. It is the Wengert list of Lab 2, made executable.

# %%
rng = np.random.default_rng(0)
W, x = rng.standard_normal((3, 2)), rng.standard_normal(2)
g = minirad.trace(layer, W, x)
print(g.wengert())
print()
print(minirad.codegen(g, "forward"))
labs.show(render(g), "lab13_layer_lcg")

# %% [markdown]
# The generated function is a function of new inputs of the same shapes: it
# computes what a fresh trace there would compute, with no tracer running.

# %%
forward = minirad.codegen(g, "forward")
W2, x2 = rng.standard_normal((3, 2)), rng.standard_normal(2)
print("generated:", float(forward(W2, x2)), "  numpy:", layer(W2, x2))

# %% [markdown]
# ## 2. Exercise 13.1: the adjoint code by hand
#
# The adjoint program runs the forward statements, then one statement per edge
# of the LCG in reverse order: each cotangent $\bar v = \partial y / \partial v$
# is pulled back through the edges into the vertex. For this program:
#
# | forward | adjoint |
# |---|---|
# | $v_2 = W x$ | $\bar W = \bar v_2\, x^\top$ (an outer product), $\bar x = W^\top \bar v_2$ |
# | $v_3 = \tanh v_2$ | $\bar v_2 = \bar v_3 \odot (1 - v_3^2)$ |
# | $y = \sum_i (v_3)_i$ | $\bar v_3 = \bar y$ in every entry |
#
# **Exercise 13.1.** Write `adjoint(W, x, y_bar)`, returning
# `(y, (W_bar, x_bar))`: the value and the cotangent of each input, for any
# shapes of `W` and `x` that multiply, and any cotangent `y_bar` of the
# output (the gradient is `y_bar = 1`). Use numpy only. The check compares
# your code with the adjoint code minirad generates from the traced graph, at
# four shapes and three cotangents.

# %%
def adjoint(W, x, y_bar):
    """y = sum(tanh(W @ x)) and its cotangents W_bar, x_bar, by hand."""
    # BEGIN SOLUTION Exercise 13.1: adjoint code by hand
    v2 = W @ x
    v3 = np.tanh(v2)
    y = v3.sum()
    v3_bar = np.full(v3.shape, y_bar)        # the sum spreads y_bar to every entry
    v2_bar = v3_bar * (1.0 - v3 * v3)        # tanh' = 1 - tanh^2, from the kept value
    W_bar = np.outer(v2_bar, x)              # the edge W -> v2 keeps x
    x_bar = W.T @ v2_bar                     # the edge x -> v2 keeps W
    return y, (W_bar, x_bar)
    # END SOLUTION


# %%
labs.check_adjoint_by_hand(adjoint)

# %% [markdown]
# Now the code minirad writes for the same graph, edge by edge in the reverse
# sweep's order (`preaccumulate=False`: the sweep's own operations, so its
# numbers equal `minirad.gradient(g)` to the last bit). Put it beside yours:
# the same statements, with the graph's names (`v3_bar` is your `v3_bar`); the
# sum's pullback is the block of `sum` applied (`J_y_v3.apply_transpose`), and
# `dv3/dv2` is the formula of the table of operations, `1.0 - v3 * v3`.

# %%
plain = minirad.codegen(g, preaccumulate=False)
print(plain)
value, (W_bar, x_bar) = plain(W, x)
print("generated = yours:", np.array_equal(W_bar, adjoint(W, x, 1.0)[1][0]))

# %% [markdown]
# ## 3. Exercise 13.2: preaccumulation by hand
#
# Lab 4 eliminated vertices of an LCG: eliminating $v$ multiplies each
# in-edge's label into each out-edge's and adds the products to the edges
# that skip $v$. Between arrays, an *elementwise* vertex has diagonal edges,
# and a diagonal times a diagonal is a diagonal: a chain of elementwise
# operations collapses into **one** diagonal per input, an entrywise
# formula, before the adjoint is written. Constant factors (the 0.01, the
# minus sign) multiply at that time, not in the program.
#
# The loop of the benchmark, $x \leftarrow x + 0.01\,(c\,x - x^3)$, is six
# array operations per step and eleven edges. Eliminate the five intermediate
# vertices of one step by hand.
#
# **Exercise 13.2.** Write `step_diagonals(x, c)`, returning `(d_x, d_c)`: the
# diagonals of $\partial x'/\partial x$ and $\partial x'/\partial c$ for one
# step, as arrays like `x`. The check compares them with the diagonal of the
# traced step's Jacobian.

# %%
def step_diagonals(x, c):
    """The diagonals of one relaxation step's Jacobian, d x'/d x and d x'/d c."""
    # BEGIN SOLUTION Exercise 13.2: preaccumulating a step
    d_x = 1.0 + 0.01 * (c - 3.0 * x * x)     # the identity path, plus 0.01 (c - 3 x^2)
    d_c = 0.01 * x
    return d_x, d_c
    # END SOLUTION


# %%
labs.check_step_diagonals(step_diagonals)

# %% [markdown]
# minirad does the same elimination when it writes the adjoint
# (`preaccumulate=True`, the default). Find your diagonal in its code: the
# $3x^2$ arrives as `0.03 * v3` (the partial of `x * x` is `x + x`, and the
# three paths through $x \cdot x \cdot x$ add up to three times the square,
# multiplied by $-0.01$ when the code is written), and the cotangent of `c`
# is summed over the steps before its factor 0.01 is applied, once.

# %%
x0, c0 = rng.uniform(-1, 1, 5), rng.uniform(0.5, 1.5, 5)


def relaxation(x, c, steps=3):
    for _ in range(steps):
        x = relaxation_step(x, c)
    return x.sum()


h = minirad.trace(relaxation, x0, c0)
fused = minirad.codegen(h)
print(fused)
edge_by_edge = minirad.codegen(h, preaccumulate=False)
print(f"the graph has {h.n_edges} edges; the adjoint written edge by edge makes "
      f"{edge_by_edge.calls} operations, preaccumulated {fused.calls} "
      f"({fused.saved} fewer, {len(fused.eliminated)} vertices eliminated)")

# %%
fig = Figure(figsize=(6.4, 3.2))
ax = fig.subplots()
counts = [h.n_edges, edge_by_edge.calls, fused.calls]
labels = ["edges of\nthe LCG", "operations of the\nadjoint, edge by edge",
          "operations of the\nadjoint, preaccumulated"]
ax.bar(labels, counts, color=["#999999", "#4c72b0", "#55a868"])
for i, n in enumerate(counts):
    ax.text(i, n, str(n), ha="center", va="bottom")
ax.set_ylabel("count")
ax.set_title("Three relaxation steps: the graph and its adjoint code")
ax.set_ylim(0, max(counts) * 1.2)
fig.tight_layout()
labs.show(fig, "lab13_operations")

# %% [markdown]
# ## 4. A branch is a guard
#
# A trace follows the path the program took at the traced input; code written
# from it is straight-line, with no `if`. Every value the program *read* (a
# comparison, a truth value, an index) becomes a **guard**: the code reads it
# again and raises `ValueError` when new inputs would take the other branch.
# `np.maximum(x, 0)` is a ReLU whose mask is part of its derivative (no value
# read); `np.where(x > 0, x, 0.1 * x)` reads the signs of `x`.

# %%
def leaky(x):
    return np.where(x > 0, x, 0.1 * x).sum()


code = minirad.codegen(minirad.trace(leaky, np.array([1.0, -2.0])))
print(code)
print("same signs:", code(np.array([3.0, -1.0])))
try:
    code(np.array([-3.0, -1.0]))
except ValueError as error:
    print("other signs:", error)

# %% [markdown]
# ## 5. The three ways, timed
#
# For 200 steps of the relaxation on 961 entries: the gradient written by hand
# in numpy (the floor), a fresh trace and reverse sweep each time (tracing), the
# recorded tape replayed and swept (a static graph), and the generated code
# (source transformation). The code runs at the speed of the hand-written
# program; the interpreters pay for every edge in Python.

# %%
n, steps = 961, 200
xs, cs = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n)


def by_hand(x, c):
    kept = []
    for _ in range(steps):
        kept.append(x)
        x = relaxation_step(x, c)
    x_bar, c_bar = np.ones_like(x), np.zeros_like(c)
    for x in reversed(kept):
        c_bar += 0.01 * x * x_bar
        x_bar = x_bar * (1 + 0.01 * (c - 3 * x * x))
    return x_bar, c_bar


def relaxation_long(x, c):
    return relaxation(x, c, steps)


traced = minirad.trace(relaxation_long, xs, cs)
generated = minirad.codegen(traced)
ways = {
    "by hand": lambda: by_hand(xs, cs),
    "tracing": lambda: minirad.gradient(minirad.trace(relaxation_long, xs, cs)),
    "static graph (replay)": lambda: minirad.gradient(minirad.replay(traced, xs, cs)),
    "generated code": lambda: generated(xs, cs)[1],
}
times = {}
for name, way in ways.items():
    way()
    start = time.perf_counter()
    for _ in range(3):
        way()
    times[name] = (time.perf_counter() - start) / 3
for name, seconds in times.items():
    print(f"{name:>22}: {seconds * 1e3:7.2f} ms  ({seconds / times['by hand']:5.1f}x by hand)")
print("same gradient:", np.allclose(generated(xs, cs)[1][0], by_hand(xs, cs)[0], rtol=1e-10))

# %% [markdown]
# ## What you learned
#
# * A traced graph is a program: its forward code is the Wengert list, one
#   statement per vertex, and its adjoint code one statement per edge, in
#   reverse order, each from the rule of that edge.
# * Writing the adjoint by hand and by machine gives the same statements:
#   cotangents, partials computed from kept values, outer products for weights.
# * Preaccumulation is vertex elimination applied before the code is written:
#   elementwise chains collapse into one diagonal, and constants multiply at
#   generation time, so the adjoint makes fewer operations than the graph has
#   edges.
# * Straight-line code cannot branch: the values a program reads become guards.
# * Source transformation runs at numpy's speed; an interpreter of the graph
#   pays Python's cost for every edge.
#
# ## Going further
#
# 1. Print `minirad.codegen(g, "tangent")` for the layer: where does each
#    tangent statement go, and why does forward mode need no stored values?
# 2. Preaccumulation eliminated only vertices with one successor (or whose
#    products are free). Find a vertex with two successors where eliminating it
#    would cost more operations than it saves.
# 3. In Exercise 13.1, which forward values does the adjoint read, and which
#    could the forward code free at once? Compare with the `del` lines of the
#    generated code.
