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
# # Lab 12: Dual numbers and derivatives of derivatives
#
# Lab 2 computed derivatives by sweeping over a finished graph: forward
# (tangents) or reverse (adjoints). This lab takes both ideas one step on.
#
# * **Dual numbers** do forward mode *while the program runs*: every number
#   carries its tangent along, and each operation applies its derivative
#   rule at once. No graph is kept.
# * **The backward pass as a graph.** A reverse sweep is itself a program
#   (products of partials and adjoints, sums over uses). Run it on traced
#   numbers and its operations become more vertices of the graph: the
#   gradient is then a graph like any other, and differentiating it gives
#   second derivatives, the Hessian, for free.
# * **Forward over reverse.** Run the reverse pass on dual numbers and the
#   tangent of the gradient is a Hessian-vector product $Hv$, at the cost
#   of a few gradients and without ever forming $H$.
#
# In this lab you will
#
# * write a dual number type (Exercise 12.1) and check it against the forward
#   sweep of Lab 2,
# * count what forward mode costs against reverse mode,
# * look at the gradient recorded as a graph, its Hessian, and Algorithm 1
#   sampled on it,
# * compute Hessian-vector products by forward over reverse on a tracer of
#   your own (Exercise 12.2).
#
# **You need:** Lab 2 (the LCG and its sweeps); Lab 7's tape tracer helps.
# **Exercises:** 12.1 (dual numbers) and 12.2 (Hessian-vector product), each
# followed by its check cell.
#
# Pictures open inline in Jupyter; when you run this file as a script they are
# saved as PNG files in `lab_output/` (or the folder named by the environment
# variable `MINIRAD_LAB_OUTPUT`).

# %%
import math
import time

import numpy as np

import minirad
from minirad import labs, ops, render
from minirad.draw.modes import mode_costs, plot_mode_costs
from minirad.draw.render import Part
from minirad.exact import higher
from minirad.randomized.sampling import path_sampling_variance, sampled_jacobians
from minirad.tracing import dual

# %% [markdown]
# ## 1. Exercise 12.1: dual numbers
#
# A dual number is a pair $(a, \dot a)$: a value and its **tangent**, the
# derivative of that value along a direction chosen at the start. Think of
# it as $a + \dot a\,\varepsilon$ with $\varepsilon^2 = 0$: then
#
# $$(a + \dot a\varepsilon)(b + \dot b\varepsilon) = ab + (\dot a b + a \dot
# b)\varepsilon, \qquad \sin(a + \dot a\varepsilon) = \sin a + \cos a\;\dot
# a\,\varepsilon,$$
#
# the product rule and the chain rule, applied one operation at a time. To
# get $\partial y / \partial x_1$, start with $x_1 = (x_1, 1)$ and
# $x_2 = (x_2, 0)$: the tangent of the result is the derivative. That is the
# lecture's forward-mode tangent trace, computed alongside the values.
#
# **Exercise 12.1.** Complete `Dual(value, tangent)`: attributes `value` and
# `tangent`; the operators `+ - * /` between two duals and between a dual
# and a plain number **on either side** (`2.0 * d`, `1.0 - d`, `d / 3.0`:
# Python calls `__rmul__`, `__rsub__`, `__rtruediv__` when the number comes
# first), unary `-`; and the methods `sin`, `cos`, `exp`, `log`. numpy calls
# those methods: `np.sin(d)` on an object numpy does not know is `d.sin()`,
# so programs written with numpy run on your duals unchanged. Each operation
# returns a new `Dual`. The check tries each rule on its own against its
# derivative by hand, then six programs against minirad's forward sweep.

# %%
class Dual:
    """A value and its tangent: forward mode one operation at a time."""

    # BEGIN SOLUTION Exercise 12.1: dual numbers
    def __init__(self, value, tangent=0.0):
        self.value, self.tangent = value, tangent

    def __repr__(self):
        return f"Dual({self.value!r}, {self.tangent!r})"

    @staticmethod
    def lift(x):
        """A plain number as a dual: a constant, tangent 0."""
        return x if isinstance(x, Dual) else Dual(x, 0.0)

    def __add__(self, other):
        other = Dual.lift(other)
        return Dual(self.value + other.value, self.tangent + other.tangent)

    def __sub__(self, other):
        other = Dual.lift(other)
        return Dual(self.value - other.value, self.tangent - other.tangent)

    def __mul__(self, other):
        other = Dual.lift(other)
        return Dual(self.value * other.value,
                    self.tangent * other.value + self.value * other.tangent)

    def __truediv__(self, other):
        other = Dual.lift(other)
        return Dual(self.value / other.value,
                    (self.tangent * other.value - self.value * other.tangent)
                    / (other.value * other.value))

    def __radd__(self, other):
        return Dual.lift(other) + self

    def __rsub__(self, other):
        return Dual.lift(other) - self

    def __rmul__(self, other):
        return Dual.lift(other) * self

    def __rtruediv__(self, other):
        return Dual.lift(other) / self

    def __neg__(self):
        return Dual(-self.value, -self.tangent)

    def sin(self):
        return Dual(np.sin(self.value), np.cos(self.value) * self.tangent)

    def cos(self):
        return Dual(np.cos(self.value), -np.sin(self.value) * self.tangent)

    def exp(self):
        e = np.exp(self.value)
        return Dual(e, e * self.tangent)

    def log(self):
        return Dual(np.log(self.value), self.tangent / self.value)
    # END SOLUTION


# %%
labs.check_dual_numbers(Dual)

# %% [markdown]
# ## 2. Your duals, minirad's duals and the sweeps
#
# The lecture's example $y = \ln x_1 + x_1 x_2 - \sin x_2$ at $(2, 5)$, seeded
# with $\dot x_1 = 1, \dot x_2 = 0$: the tangent of $y$ is
# $\partial y/\partial x_1 = 1/x_1 + x_2 = 5.5$. Printing each intermediate
# value with its tangent gives the lecture's forward-mode table row by row.

# %%
x1, x2 = Dual(2.0, 1.0), Dual(5.0, 0.0)
v1 = np.log(x1)
v2 = x1 * x2
v3 = np.sin(x2)
v4 = v1 + v2
y = v4 - v3
for name, v in [("x1", x1), ("x2", x2), ("v1 = ln x1", v1), ("v2 = x1 x2", v2),
                ("v3 = sin x2", v3), ("v4 = v1 + v2", v4), ("y = v4 - v3", y)]:
    print(f"{name:14} value {float(v.value):8.4f}   tangent {float(v.tangent):8.4f}")

# %% [markdown]
# minirad has dual numbers too (`minirad.tracing.dual.Dual`), built on the
# same table of operations as its tracers: each operation's derivative rule
# is written once, and the tracer, the sweeps and the duals all read it.
# Because a dual applies the same partials in the same order as the forward
# sweep over the traced graph, the two agree **to the last bit**, not just to
# rounding:

# %%
def lecture(x1, x2):
    return ops.log(x1) + x1 * x2 - ops.sin(x2)


g = minirad.trace(lecture, 2.0, 5.0)
swept = minirad.jvp(g, [0.3, -1.1])
by_duals = lecture(dual.Dual(2.0, 0.3), dual.Dual(5.0, -1.1)).tangent
print("forward sweep:", swept[0], "  dual numbers:", by_duals, "  identical:",
      swept[0] == by_duals)

# %% [markdown]
# **What forward mode costs.** One pass of duals gives one directional
# derivative $J\dot x$: the gradient of a function of $n$ inputs takes $n$
# passes, each multiplying a partial by a tangent on every operand of every
# operation (a dual does not know that its tangent is zero). The forward
# sweep on the graph skips what its seed cannot reach, and the reverse sweep
# gets the whole gradient in one pass. The picture counts the
# multiplications on the lecture's example and on that example summed over
# the neighbouring pairs of $n$ inputs.

# %%
print("the lecture's example:", mode_costs(lecture, 2.0, 5.0))
labs.show(plot_mode_costs(sizes=(2, 4, 8, 16, 32)), "lab12_mode_costs")

# %% [markdown]
# Several directions can travel at once: give each input a *vector* of
# tangents, one entry per direction. Seeding input $j$ with the unit vector
# $e_j$ gives the whole Jacobian in one pass (`dual.jacobian_by_duals`); the
# arithmetic is the same as $n$ passes, only Python's overhead is shared.

# %%
print(dual.jacobian_by_duals(lecture, 2.0, 5.0), minirad.jacobian(lecture, 2.0, 5.0))

# %% [markdown]
# ## 3. The backward pass as a graph
#
# The reverse sweep of Lab 2 multiplied partials by adjoints and summed over
# the uses of each vertex. Every one of those numbers is a function of the
# inputs, and every operation on them is an elementary one: so we can
# **trace the reverse pass**. `higher.gradient_graph(f, *x)` runs `f`, then
# its reverse sweep, on traced numbers: the partials (`cos(x2)` for a
# `sin(x2)`), the products and the sums become vertices after the program's
# own, and the outputs are the gradient $\bar x_1, \bar x_2$.

# %%
G = higher.gradient_graph(lecture, 2.0, 5.0)
print(G.wengert())

# %%
labs.show(render(G, Part(higher.backward_vertices(G), "the reverse pass, recorded"),
                 show_ops=True), "lab12_gradient_graph")

# %% [markdown]
# Read the orange part: `b₀ = cos(x2)` is the partial of `sin`, `b₂ = 1/x1`
# the partial of `log`; $\bar x_1 = x_2 + 1/x_1$ and
# $\bar x_2 = x_1 - \cos x_2$. The reverse pass never reads $y$: this
# gradient needs only the inputs.
#
# The graph's outputs are the gradient, so **the Jacobian of this graph is
# the Hessian**, and every method of Labs 2-5 applies to it: a sweep, a
# vertex elimination, or Algorithm 1.

# %%
H = higher.hessian(lecture, 2.0, 5.0)
by_hand = np.array([[-1 / 2.0 ** 2, 1.0], [1.0, math.sin(5.0)]])
print(H, "\nby hand:\n", by_hand)

# %% [markdown]
# Algorithm 1 on the gradient graph samples paths of the *recorded* graph:
# each estimate is a random sparse version of it, and the mean of many is the
# Hessian (unbiased, as Lab 5 proved for any LCG). The z-scores divide each
# entry's error by its standard error, from the exact variance of Lab 5:
# for an unbiased estimator they are draws of a standard normal, mostly
# between -2 and 2.

# %%
n = 200_000
estimates = sampled_jacobians(G, k=1, n=n, rng=12)
standard_error = np.sqrt(path_sampling_variance(G, k=1) / n)
print(f"mean of {n} sampled Hessians:\n", estimates.mean(axis=0).round(3))
print("z-scores:\n", ((estimates.mean(axis=0) - H) / standard_error).round(2))

# %% [markdown]
# ## 4. Exercise 12.2: forward over reverse on your own tracer
#
# Here is a reverse-mode tracer in the style of Lab 7, with one change: it
# never assumes a value is a float. The partials are computed with numpy
# (`np.cos(self.value)`) and with `*` and `/` on the values, so a value may be
# a float **or one of your duals**. Each `Var` keeps its value and its
# `(operand, partial)` pairs; `gradient(f, *x)` runs `f` on `Var`s and walks
# the tape backwards.

# %%
class Var:
    """A traced number whose value may be any number type (a float or a dual)."""

    def __init__(self, value, tape, operands=()):
        self.value, self.operands = value, operands
        tape.append(self)
        self.tape = tape

    def new(self, value, *operands):
        return Var(value, self.tape, operands)

    def lift(self, x):
        return x if isinstance(x, Var) else Var(x, self.tape)  # a constant: no operands

    def __add__(self, other):
        other = self.lift(other)
        return self.new(self.value + other.value, (self, 1.0), (other, 1.0))

    def __sub__(self, other):
        other = self.lift(other)
        return self.new(self.value - other.value, (self, 1.0), (other, -1.0))

    def __mul__(self, other):
        other = self.lift(other)
        return self.new(self.value * other.value, (self, other.value), (other, self.value))

    def __truediv__(self, other):
        other = self.lift(other)
        q = self.value / other.value
        return self.new(q, (self, 1.0 / other.value), (other, -q / other.value))

    def __radd__(self, other):
        return self.lift(other) + self

    def __rsub__(self, other):
        return self.lift(other) - self

    def __rmul__(self, other):
        return self.lift(other) * self

    def __rtruediv__(self, other):
        return self.lift(other) / self

    def __neg__(self):
        return self.new(-self.value, (self, -1.0))

    def sin(self):
        return self.new(np.sin(self.value), (self, np.cos(self.value)))

    def cos(self):
        return self.new(np.cos(self.value), (self, -np.sin(self.value)))

    def exp(self):
        e = np.exp(self.value)
        return self.new(e, (self, e))

    def log(self):
        return self.new(np.log(self.value), (self, 1.0 / self.value))


def gradient(f, *x):
    """The gradient of f at x by one reverse sweep over the tape; the adjoints are
    of the values' type (floats, or duals when the x are duals)."""
    tape = []
    inputs = [Var(value, tape) for value in x]
    result = f(*inputs)
    adjoint = {id(result): 1.0}
    for node in reversed(tape):
        a = adjoint.get(id(node))
        if a is None:
            continue
        for operand, partial in node.operands:
            adjoint[id(operand)] = adjoint.get(id(operand), 0.0) + partial * a
    return [adjoint.get(id(v), 0.0) for v in inputs]


def f(x, y):
    return x * y * y + np.sin(x)


print("gradient:", [float(a) for a in gradient(f, 0.7, -1.3)],
      " by hand:", [(-1.3) ** 2 + math.cos(0.7), 2 * 0.7 * -1.3])

# %% [markdown]
# Now give `gradient` dual numbers: $x_i = (x_i, v_i)$. Every value in the
# tape is then a dual, every partial too (`np.cos` of a dual is your
# `Dual.cos`), and so is every adjoint. The value of adjoint $\bar x_i$ is
# $\partial f/\partial x_i$; its **tangent** is the derivative of that along
# $v$:
#
# $$\frac{d}{dt}\, \nabla f(x + t v)\Big|_{t=0} = H v .$$
#
# That is **forward over reverse**: one reverse pass, on numbers that carry a
# tangent, costs a small constant times a gradient and gives $Hv$ without
# forming the $n \times n$ Hessian. (The full Hessian is $n$ of them, one per
# unit vector.)
#
# **Exercise 12.2.** Complete `hvp(f, x, v, gradient, Dual)`: `x` and `v` are
# lists of $n$ numbers; return the $n$ numbers of $Hv$ as a list, by one
# call of `gradient` on duals. It is handed the `gradient` and the `Dual` to
# use, so that the check can run it with minirad's own (a slip in 12.1 then
# costs nothing here); below you run it with yours. An entry of the gradient
# that does not depend on the inputs comes back as the plain number `0.0`:
# its tangent is 0.

# %%
def hvp(f, x, v, gradient, Dual):
    """H v at x, by a reverse sweep (gradient) over dual numbers seeded with v."""
    # BEGIN SOLUTION Exercise 12.2: Hessian-vector product
    adjoints = gradient(f, *(Dual(xi, vi) for xi, vi in zip(x, v)))
    return [float(a.tangent) if isinstance(a, Dual) else 0.0 for a in adjoints]
    # END SOLUTION


# %%
labs.check_hvp(hvp)

# %% [markdown]
# Your `hvp` on your own duals and this tracer, against minirad, which runs
# the same idea on its recorded gradient graph; and the Hessian of $f$ by
# hand: $f_{xx} = -\sin x$, $f_{xy} = 2y$, $f_{yy} = 2x$.

# %%
x, v = [0.7, -1.3], [1.0, 0.5]
by_hand = np.array([[-math.sin(0.7), 2 * -1.3], [2 * -1.3, 2 * 0.7]])
print("yours:  ", hvp(f, x, v, gradient, Dual))
print("minirad:", higher.hvp(f, *x, v=v))
print("H v by hand:", by_hand @ v)

# %% [markdown]
# **What it costs.** Time one gradient and one Hessian-vector product of a
# function of many inputs with your tracer. The ratio stays a small constant
# as $n$ grows, while the full Hessian costs $n$ products. One run of a
# few milliseconds is at the mercy of whatever else the machine does, so
# each time is the median of several runs.

# %%
def chain(*x):
    total = 0.0
    for a, b in zip(x, x[1:]):
        total = total + np.log(a) + a * b - np.sin(b)
    return total


def median_seconds(function, *args, repeats=7):
    """The median time of ``repeats`` calls of ``function(*args)``: one slow run (another
    program took the processor) does not move it."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


for n in (10, 40, 160):
    point = list(2.0 + np.arange(n) % 3)
    direction = list(np.ones(n))
    one_gradient = median_seconds(gradient, chain, *point)
    one_hvp = median_seconds(hvp, chain, point, direction, gradient, Dual)
    print(f"n = {n:4}: one HVP takes {one_hvp / one_gradient:4.1f} gradients "
          f"(medians of 7 runs)")

# %% [markdown]
# ## What you learned
#
# * A dual number carries a tangent through the program: forward mode applies
#   each derivative rule the moment the operation runs, and equals the
#   forward sweep on the traced graph, to the last bit.
# * One forward pass gives one directional derivative: a gradient of $n$
#   inputs takes $n$ passes where reverse mode takes one.
# * The reverse pass is itself a program of elementary operations; traced, it
#   is more vertices of the graph, and the Jacobian of that graph is the
#   Hessian. Everything that works on an LCG (sweeps, elimination,
#   Algorithm 1) works on it.
# * Running the reverse pass on dual numbers gives $Hv$ for a few gradients'
#   cost: forward over reverse, what `jax.jvp(jax.grad(f), ...)` does.
#
# ## Going further
#
# * Reverse over forward: run a forward pass on duals inside a reverse
#   tracer (the duals' values are `Var`s). Which derivative do you get, and
#   what does it cost for a Hessian-vector product?
# * Reverse over reverse: trace `higher.gradient_graph`'s reverse pass once
#   more (the gradient of $v^\top \nabla f$). How many multiplications does a
#   Hessian-vector product take that way on the chain above?
# * The third derivative: what would a dual whose value and tangent are
#   themselves duals compute?
