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
# # Lab 11: Symbolic differentiation and expression swell
#
# Before automatic differentiation there was, and still is, **symbolic
# differentiation**: write the function as a formula, apply the sum, product
# and chain rules to the formula, and get a formula for the derivative. It is
# what you do by hand and what a computer algebra system such as SymPy does.
# The AD lecture gives two objections: the derivative can be exponentially
# larger than the function, and it is wasteful to build a whole formula when
# all we want is its value at one point. AD instead differentiates one
# elementary operation at a time and keeps the intermediate results: the LCG.
#
# In this lab you will
#
# * run a minirad program on SymPy symbols and differentiate the formula it
#   computes, checking it against minirad's Jacobian,
# * count the nodes of an expression tree (the exercise), and see that a tree
#   counts a shared subexpression again every time it is used,
# * measure how the symbolic derivatives of two families of programs grow,
#   before and after common-subexpression elimination, against the LCG.
#
# **You need:** Lab 2 (the LCG), and SymPy: `pip install 'minirad[symbolic]'`.
# **Exercise:** 11.1 (tree size), followed by its check cell.
#
# Pictures open inline in Jupyter; when you run this file as a script they are
# saved as PNG files in `lab_output/` (or the folder named by the environment
# variable `MINIRAD_LAB_OUTPUT`).

# %%
import inspect

import numpy as np
import sympy as sp

import minirad
from minirad import examples, labs, symbolic
from minirad.draw.swell import plot_swell

# %% [markdown]
# ## 1. The same program, run on symbols
#
# A minirad program is ordinary Python over `ops.log`, `ops.sin`, `*`, `+`...
# Run on numbers it computes a number; run on traced scalars it records its
# LCG (Lab 2); run on SymPy symbols it builds the **formula** it computes.
# `symbolic.formula(f, *point)` does the last (the point only names the
# inputs, as the trace would). Here is the lecture's example:

# %%
print(inspect.getsource(examples.lecture_program))
lecture = symbolic.formula(examples.lecture_program, 2.0, 5.0)
print("formula:   ", lecture.outputs[0])
print("derivative:", symbolic.derivative(lecture))

# %% [markdown]
# SymPy applied its rules: $\partial y/\partial x_1 = x_2 + 1/x_1$ and
# $\partial y/\partial x_2 = x_1 - \cos x_2$. Evaluated at the lecture's point
# $(2, 5)$ it must give the same numbers as minirad's reverse sweep over the
# LCG, $(5.5, 1.716)$:

# %%
print("SymPy:  ", symbolic.jacobian(examples.lecture_program, 2.0, 5.0))
print("minirad:", minirad.jacobian(examples.lecture_program, 2.0, 5.0))

# %% [markdown]
# The paper's Figure 1 program uses $a = e^{x_1}$ twice. The formula has no
# names for intermediate values, so SymPy folds everything into one
# expression, and the derivative with respect to $x_2$ repeats
# $e^{2 x_1}$ in each of its terms:

# %%
figure1 = symbolic.formula(examples.figure1_program, 1.0, 2.0)
print("formula:    y =", figure1.outputs[0])
print("dy/dx2      =", symbolic.derivative(figure1)[1])
print("SymPy:  ", symbolic.jacobian(examples.figure1_program, 1.0, 2.0))
print("minirad:", minirad.jacobian(examples.figure1_program, 1.0, 2.0))

# %% [markdown]
# ## 2. A formula is a tree
#
# SymPy stores an expression as a tree: each node is a symbol, a number, or
# an operation whose arguments are its children (`e.func` and `e.args`).
# `x - y` is `Add(x, Mul(-1, y))`, five nodes. Here is the lecture's formula
# node by node:

# %%
print(sp.srepr(lecture.outputs[0]))

# %% [markdown]
# When a program uses a value twice, the formula writes the value's whole
# subtree twice. The program $x_{k+1} = \sin(x_k)\, x_k$ uses $x_k$ twice at
# every step, so its formula doubles at every step, although the program has
# one sine and one product per step:

# %%
for depth in (1, 2, 3):
    print(depth, symbolic.formula(examples.composition_program(depth), 0.5).outputs[0])

# %% [markdown]
# ## 3. Exercise 11.1: the size of a tree
#
# **Exercise 11.1.** Complete `tree_size(e)`: the number of nodes of the tree
# of the SymPy expression `e`, counting a subexpression again each time it
# appears. A node counts 1, plus the sizes of its arguments `e.args` (a symbol
# or a number has no arguments). Return a Python `int`.
#
# The check runs your function on the lecture's formulas and derivatives, and
# on $x_{40}$ of the composition above. Its tree has $5 \cdot 2^{39} - 1
# \approx 2.7 \cdot 10^{12}$ nodes: a function that visits them one by one
# would run for days, and the check stops it after 5 seconds. But the tree
# has only 81 *distinct* subexpressions. Count each distinct one once
# and remember its size in a dictionary; the tree size of a node is then one
# plus the remembered sizes of its arguments (the same dynamic programming as
# counting paths in Lab 3: the size of a tree is a number of paths in the
# graph of the formula).

# %%
def tree_size(e):
    """The number of nodes of the expression tree of e, repeats counted again."""
    # BEGIN SOLUTION Exercise 11.1: tree size
    sizes = {}

    def size(node):
        if node not in sizes:
            sizes[node] = 1 + sum(size(argument) for argument in node.args)
        return sizes[node]

    return size(e)
    # END SOLUTION


# %%
labs.check_tree_size(tree_size)

# %% [markdown]
# ## 4. Expression swell, measured
#
# The lecture's example of swell is $y = \prod_{i=1}^{n} x_i$: each entry of
# the gradient is the product of the other $n - 1$ inputs, so the gradient
# written out has about $n^2$ nodes, while the program is $n - 1$
# multiplications and its LCG has $2(n - 1)$ edges. A reverse sweep over the
# LCG costs one multiplication per edge.
#
# `symbolic.swell(f, *point)` measures four sizes: the program as a tree, its
# derivative as trees, the derivative after SymPy's **common-subexpression
# elimination** (`sympy.cse`, which names each repeated subexpression once,
# `x0 = ...`, and counts it once), and the edges of the LCG.

# %%
print(f"{'n':>3} {'program':>8} {'derivative':>11} {'after cse':>10} {'LCG edges':>10}")
for n in (2, 4, 8, 16, 32):
    s = symbolic.swell(examples.product_program, *np.ones(n))
    print(f"{n:>3} {s.formula_nodes:>8} {s.derivative_nodes:>11} {s.cse_nodes:>10} "
          f"{s.lcg_edges:>10}")

# %% [markdown]
# The derivative of the composition grows much faster: each step applies the
# product rule, which copies both factors, and the chain rule, which copies
# the inner function.

# %%
print(f"{'n':>3} {'program':>8} {'derivative':>11} {'after cse':>10} {'LCG edges':>10}")
for n in range(1, 9):
    s = symbolic.swell(examples.composition_program(n), 0.5)
    print(f"{n:>3} {s.formula_nodes:>8} {s.derivative_nodes:>11} {s.cse_nodes:>10} "
          f"{s.lcg_edges:>10}")

# %%
labs.show(plot_swell(sizes=(2, 4, 8, 16, 32), depths=tuple(range(1, 9))), "lab11_swell")

# %% [markdown]
# **What to look for.** On the right the tree of the derivative grows by a
# factor of about 2.4 per step: exponential swell. Common-subexpression
# elimination takes most of it back, because the repeated subtrees are the
# same $x_k$ again and again; what is left grows slowly, yet stays several
# times larger than the LCG, which gains 3 edges per step. On the left CSE
# helps far less: the $n$ entries of the product's gradient share only some
# pairs of factors, and the gradient stays quadratic. Reverse mode gets all
# $n$ entries from $2(n - 1)$ edges because it shares the partial products
# $x_{k+1} \cdots x_n$ (the adjoints of the running products), which SymPy's
# flat products $x_1 x_2 \cdots x_n$ do not contain as subexpressions.
#
# Here is what CSE makes of the composition's derivative at depth 3: a short
# program of named intermediate values, much like the Wengert list of Lab 2.

# %%
x = sp.Symbol("x", real=True)
chain = symbolic.formula(examples.composition_program(3), 0.5).outputs[0]
named, reduced = sp.cse(sp.diff(chain, x))
for name, value in named:
    print(f"{name} = {value}")
print("dx_3/dx =", reduced[0])

# %% [markdown]
# ## What you learned
#
# * Symbolic differentiation applies the rules to a formula; for the
#   lecture's examples it gives the same numbers as the LCG's sweeps.
# * A formula is a tree: a value used twice is written twice, so programs
#   that reuse values have formulas exponentially larger than themselves, and
#   the product and chain rules make the derivative larger still.
# * Counting the nodes of a tree is a dynamic programme over its distinct
#   subexpressions, the same as counting paths.
# * Naming shared subexpressions (CSE) turns a formula back into a program;
#   AD never builds the formula, it records the program's graph and
#   multiplies along its edges.
#
# ## Going further
#
# * A symbolic derivative is valid at every point, an LCG only at the point
#   where it was traced. When is the formula worth its size?
# * `sympy.cse` found no common factors in the product's gradient beyond some
#   pairs. Write the prefix products $x_1, x_1 x_2, \dots$ and suffix
#   products by hand and express each gradient entry with two of them: how
#   many multiplications is that, and how does it compare with the LCG?
# * Try `symbolic.swell` on `examples.two_outputs_program` or on a program of
#   your own with `ops.tanh` and `ops.exp`.
