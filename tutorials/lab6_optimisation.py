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
# # Lab 6: Optimising with exact and with sampled gradients
#
# Gradients exist to be followed downhill. This lab puts minirad's
# gradients to work in the simplest optimiser there is, **gradient
# descent**, first with exact gradients and then with the unbiased but noisy
# estimates of Algorithm 1 (Lab 5). On the way it settles a discrepancy with a
# published lab, which turns out to be the gradient-accumulation bug of Lab 4.
#
# The question behind randomized AD is whether an optimiser can live with
# noisy gradients. We will see what the noise does: the iterates still head
# for the minimum, **on average** exactly as with the true gradient, but they
# never settle; they jitter around the minimum at a level set by the step
# size and by the number of draws.
#
# **You need:** Labs 2, 4 and 5.
# **Exercises:** 6.1 (one descent step), 6.2 (descent with sampled gradients),
# 6.3 (the gradient through a solve: the implicit function theorem), 6.4 (the
# adjoint of a linear solve) and 6.5 (the adjoint of an ODE solve).

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

import minirad
from minirad import examples, labs
from minirad.draw.render import render
from minirad.exact.sweeps import reverse_sweep
from minirad.randomized.sampling import sample_paths

# %% [markdown]
# ## 1. The objective
#
# The reverse-mode lab this course borrows from minimises
#
# $$g(x, y) = y^2 + \sin x ,$$
#
# a valley along $y = 0$ with minima at $x = -\pi/2 + 2\pi m$, where
# $g = -1$. Its gradient is $\nabla g = (\cos x,\; 2y)$. minirad's version
# is `examples.descent_program`; tracing it gives its LCG and, by a reverse
# sweep, its gradient.

# %%
g_value = examples.descent_program(1.0, 1.0)
print("g(1, 1) =", g_value)
assert g_value == 1.8414709848078965  # the published lab's value, to the last digit

lcg = minirad.trace(examples.descent_program, 1.0, 1.0)
print(lcg.wengert())
print("gradient at (1, 1):", reverse_sweep(lcg).jacobian[0], " by hand:", (math.cos(1.0), 2.0))

# %% [markdown]
# ## 2. Exercise 6.1: one step of gradient descent
#
# From a point $p$, a step of gradient descent with **learning rate**
# $\lambda$ moves against the gradient:
#
# $$p \leftarrow p - \lambda\, \nabla f(p).$$
#
# **Exercise 6.1.** Complete `descend(f, rate, *args)`: trace `f` at the
# point `args` (one float per argument of `f`), get the gradient from
# minirad (a reverse sweep; the row of the $1 \times n$ Jacobian), and return
# the new point as a tuple of floats.

# %%
def descend(f, rate, *args):
    """One gradient-descent step on f from the point args; returns the new point."""
    # BEGIN SOLUTION Exercise 6.1: one gradient-descent step
    gradient = reverse_sweep(minirad.trace(f, *args)).jacobian[0]
    return tuple(float(x - rate * d) for x, d in zip(args, gradient))
    # END SOLUTION


# %% [markdown]
# The check takes one step on $g$ from $(1, 1)$ and from $(1.5, -2.4)$, and on
# three other functions (among them one with three arguments), and compares
# with minirad's numbers to 12 digits.

# %%
labs.check_descent_step(descend)

# %%
x, y = descend(examples.descent_program, 0.2, 1.0, 1.0)
print("one step of rate 0.2 from (1, 1):", (x, y), " g there:", examples.descent_program(x, y))
assert (x, y) == (0.891939538826372, 0.6)

# %% [markdown]
# ## 3. A published number, and what it teaches
#
# The reverse-mode lab we took $g$ from prints, for the same step,
# $(0.891939538826372,\, 0.8)$, and then $g = 1.4182910542267546$. The first
# coordinate agrees with ours to the last digit; the second does not. From
# $y = 1$ with rate $0.2$, landing at $0.8$ means the gradient's second entry
# was taken to be $1$, not $2y = 2$.
#
# The cause is the bug of Lab 4, section 4. That lab's tracked numbers store,
# for each input of an operation, a dictionary `children` from the result to
# the local partial: `a.children[z] = b.data; b.children[z] = a.data` for
# $z = a \cdot b$. In `y * y`, `a` and `b` are the **same** object, so the
# second assignment overwrites the first, and $y$ keeps one partial ($y$)
# instead of the sum of its two ($y + y$). Here is a faithful Python
# re-creation, with a switch between overwriting and accumulating:

# %%
class Tracked:
    """A number that records, for each result computed from it, the local partial."""

    def __init__(self, data, accumulate):
        self.data, self.accumulate = data, accumulate
        self.children = {}  # result -> d result / d self
        self.grad = None

    def _record(self, result, partial):
        if self.accumulate:  # sum the partials of every use (Lab 4, seed notes on ChainRules)
            self.children[result] = self.children.get(result, 0.0) + partial
        else:  # the published lab: a second use within one operation overwrites the first
            self.children[result] = partial

    def __mul__(self, other):
        z = Tracked(self.data * other.data, self.accumulate)
        self._record(z, other.data)  # dz/dself = other
        other._record(z, self.data)  # dz/dother = self
        return z

    def __add__(self, other):
        z = Tracked(self.data + other.data, self.accumulate)
        self._record(z, 1.0)
        other._record(z, 1.0)
        return z

    def sin(self):
        z = Tracked(math.sin(self.data), self.accumulate)
        self._record(z, math.cos(self.data))
        return z


def adjoint(t):
    """The lab's recursive backward pass: the sum over children of partial * adjoint."""
    if t.grad is None:
        t.grad = sum(partial * adjoint(child) for child, partial in t.children.items())
    return t.grad


def tracked_gradient(f, *args, accumulate):
    inputs = [Tracked(a, accumulate) for a in args]
    output = f(*inputs)
    output.grad = 1.0
    return tuple(adjoint(t) for t in inputs)


def g_tracked(x, y):
    return y * y + x.sin()


def f_tracked(x, y):
    return x * y + x.sin()


for accumulate in (False, True):
    gradient = tracked_gradient(g_tracked, 1.0, 1.0, accumulate=accumulate)
    step = tuple(p - 0.2 * d for p, d in zip((1.0, 1.0), gradient))
    label = "accumulating" if accumulate else "overwriting "
    print(f"{label}: grad g(1, 1) = {gradient}, step to {step}, "
          f"g = {examples.descent_program(*step)!r}")

published = tracked_gradient(g_tracked, 1.0, 1.0, accumulate=False)
step = tuple(p - 0.2 * d for p, d in zip((1.0, 1.0), published))
assert step == (0.891939538826372, 0.8)  # the published step, reproduced exactly
assert examples.descent_program(*step) == 1.4182910542267546  # and the published g there
assert tracked_gradient(g_tracked, 1.0, 1.0, accumulate=True) == (math.cos(1.0), 2.0)

# %% [markdown]
# The overwriting version reproduces the published numbers exactly; the
# accumulating one agrees with minirad. The published lab also reports
# $\nabla f(2, 3) = (2.5838531634528574,\, 2.0)$ for $f(x, y) = xy + \sin x$,
# and that number is right: there $x$ is used twice, but in two *different*
# operations, so its two partials land under two different keys. The bug
# bites only when one operation uses the same variable twice.

# %%
for accumulate in (False, True):
    print("accumulate =", accumulate, " grad f(2, 3) =",
          tracked_gradient(f_tracked, 2.0, 3.0, accumulate=accumulate))
assert tracked_gradient(f_tracked, 2.0, 3.0, accumulate=False) == (2.5838531634528574, 2.0)

# %% [markdown]
# Why did nobody notice? Because the wrong gradient $(\cos x, y)$ still
# points downhill: it makes an acute angle with the true one, so descent
# still works, only more slowly in $y$ (each step multiplies $y$ by $0.8$
# instead of $0.6$). The picture shows both, from the published lab's two
# starting points.

# %%
def descent_path(step, start, steps):
    path = [start]
    for _ in range(steps):
        path.append(step(*path[-1]))
    return np.array(path)


def correct_step(x, y):
    return descend(examples.descent_program, 0.2, x, y)


def published_step(x, y):
    gradient = tracked_gradient(g_tracked, x, y, accumulate=False)
    return (x - 0.2 * gradient[0], y - 0.2 * gradient[1])


X, Y = np.meshgrid(np.linspace(-4, 6.5, 300), np.linspace(-3, 3, 200))
fig, ax = plt.subplots(figsize=(8.5, 4.8))
filled = ax.contourf(X, Y, Y**2 + np.sin(X), levels=20, cmap="RdYlBu_r")
fig.colorbar(filled, ax=ax, label="g(x, y)")
for start, steps in (((1.5, -2.4), 34), ((1.8, -2.4), 16)):
    right, wrong = descent_path(correct_step, start, steps), descent_path(published_step,
                                                                          start, steps)
    ax.plot(*right.T, "o-", color="black", ms=3, lw=1.2)
    ax.plot(*wrong.T, "s--", color="white", ms=3, lw=1.0)
    ax.plot(*start, "*", color="black", ms=14)
ax.plot([-math.pi / 2, 3 * math.pi / 2], [0, 0], "X", color="lime", ms=11, mec="black")
ax.plot([], [], "o-", color="black", label="minirad's gradient (dg/dy = 2y)")
ax.plot([], [], "s--", color="white", mec="grey", label="overwritten adjoint (dg/dy = y)")
ax.plot([], [], "*", color="black", ms=12, label="start")
ax.plot([], [], "X", color="lime", mec="black", ms=10, label="minimum (g = -1)")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title("Gradient descent on g(x, y) = y² + sin x, rate 0.2")
ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
labs.show(fig, "lab6_descent_contour")

# %% [markdown]
# **What to look for.** From $(1.5, -2.4)$, where $\cos x > 0$, both paths
# head left to the minimum at $(-\pi/2, 0)$; from $(1.8, -2.4)$, just past the
# crest of $\sin x$ at $x = \pi/2$, they head right, to $(3\pi/2, 0)$: which
# minimum you reach depends on where you start. The black path (true
# gradient) drops onto the valley floor $y = 0$ in a few steps; the white
# one (overwritten adjoint) approaches it more gently, since its $y$ shrinks
# by $0.8$ per step instead of $0.6$. Along $x$ the two coincide: the bug
# only touches $y$.
#
# ## 4. Sampled gradients on $g$: nothing to sample
#
# Now replace the exact gradient by Algorithm 1's estimate. On $g$ this
# changes nothing at all:

# %%
sample = sample_paths(lcg, k=1, rng=0)
print("sampled:", sample.jacobian, " exact:", reverse_sweep(lcg).jacobian)
assert np.array_equal(sample.jacobian, reverse_sweep(lcg).jacobian)
labs.show(render(lcg, sample, title="Algorithm 1 on the LCG of g: every edge kept"),
          "lab6_descent_sample")

# %% [markdown]
# **What to look for.** Every edge is red, drawn once, with weight equal to
# its partial. (The output is called `f` because the input `y` already has
# that name.) Every vertex of $g$'s LCG has a **single** successor (the one
# variable used twice, $y$ in `y * y`, became a single edge when traced), so
# Algorithm 1 has no choice to make, the weight $d_v/k = 1$, and the
# estimate is exact. Sampling only saves memory, and only adds noise, where
# a vertex fans out to several successors.
#
# ## 5. An objective worth sampling: a sum of many terms
#
# Most objectives in machine learning are sums over data. Fit a line
# $a t + b$ to $n = 16$ points $(t_i, s_i)$ by least squares:
#
# $$L(a, b) = \frac{1}{n} \sum_{i=1}^{n} (a\, t_i + b - s_i)^2 .$$
#
# In its LCG, $a$ feeds the $n$ products $a t_i$ and $b$ feeds the $n$ sums:
# both have $n$ successors. Algorithm 1 with $k$ draws at $a$ keeps $k$ of the
# $n$ terms, each scaled by $n/k$: it estimates $\partial L/\partial a$ from a
# random **mini-batch** of $k$ data points (and, independently, $b$ from
# another). Section 4.1 of the paper makes this point: mini-batch SGD is path
# sampling on a graph of independent paths, one per data point. Here is the
# graph for 4 points, with $k = 1$:

# %%
rng = np.random.default_rng(0)
t_data = np.linspace(-1.0, 1.0, 16)
s_data = 0.7 * t_data + 0.3 + 0.3 * rng.standard_normal(16)


def make_loss(ts, ss):
    """Mean squared error of the line a*t + b on the points (ts, ss)."""
    points = list(zip(np.asarray(ts).tolist(), np.asarray(ss).tolist()))

    def loss(a, b):
        total = 0.0
        for t, s in points:
            r = a * t + b - s
            total = total + r * r
        return total / len(points)

    return loss


loss = make_loss(t_data, s_data)
small = minirad.trace(make_loss(t_data[::5], s_data[::5]), 0.0, 0.0)
labs.show(render(small, sample_paths(small, k=1, rng=2),
                 title="Line fit on 4 points, k = 1 at a and at b"), "lab6_line_fit_sample")

# %% [markdown]
# **What to look for.** `a` and `b` (the blue inputs) each fan out to four
# terms. With $k = 1$ each keeps one edge, with its partial scaled by 4; the
# terms not drawn are greyed out and would not be stored. Above the terms the
# graph is a chain of additions, where every vertex has one successor and
# nothing is sampled.
#
# The least-squares minimum is known in closed form, which lets us measure
# how far an iterate is from it.

# %%
design = np.column_stack([t_data, np.ones_like(t_data)])
best = np.linalg.lstsq(design, s_data, rcond=None)[0]
best_loss = loss(*best)
print(f"minimum at a = {best[0]:.4f}, b = {best[1]:.4f}, L = {best_loss:.5f}")
print(f"gradient there (exact): {reverse_sweep(minirad.trace(loss, *best)).jacobian[0]}")
at_best = minirad.trace(loss, *best)
draws = [sample_paths(at_best, 1, rng=i).jacobian[0].round(3).tolist() for i in range(3)]
print(f"gradient there, sampled with k = 1 (three draws): {draws}")

# %% [markdown]
# At the minimum the exact gradient is zero, but a sampled one is not: one
# data point's residual alone does not vanish there. That single fact explains
# the rest of the lab.
#
# ## 6. Exercise 6.2: descent with sampled gradients
#
# **Exercise 6.2.** Complete `sgd(f, start, rate, steps, k=None, rng=None)`:
# starting from the point `start` (a sequence of floats), take `steps` steps
# $p \leftarrow p - \lambda \hat g(p)$ and return every point visited as a
# numpy array of shape `(steps + 1, len(start))`, the start in row 0. At each
# step, trace `f` at the current point and estimate the gradient with
#
#     sample_paths(minirad.trace(f, *p), k, rng=rng).jacobian[0]
#
# using the `rng` you were given (never a new one), or, when `k` is `None`,
# use the exact gradient (a reverse sweep). With the same seed, your run and
# minirad's then draw the same samples, and the check compares them iterate
# by iterate. Do not modify `start`.

# %%
def sgd(f, start, rate, steps, k=None, rng=None):
    """Descent from start with Algorithm 1 gradients (exact ones if k is None)."""
    # BEGIN SOLUTION Exercise 6.2: descent with sampled gradients
    point = np.array(start, dtype=float)
    path = [point]
    for _ in range(steps):
        graph = minirad.trace(f, *point)
        if k is None:
            gradient = reverse_sweep(graph).jacobian[0]
        else:
            gradient = sample_paths(graph, k, rng=rng).jacobian[0]
        point = point - rate * gradient  # a new array: the path keeps the old one
        path.append(point)
    return np.array(path)
    # END SOLUTION


# %%
labs.check_sgd(sgd)

# %% [markdown]
# ## 7. What the noise does
#
# Run descent on $L$ from $(a, b) = (2, -1)$ with rate $0.3$: once with exact
# gradients, and five times each with $k = 1$, $4$ and $16$ draws per vertex
# (for $k = 16$ the mini-batch is as large as the data, but drawn with
# replacement, so still noisy). We follow the **excess loss**
# $L(a_t, b_t) - L_{\min}$ on a log scale.

# %%
start, rate, steps, runs = (2.0, -1.0), 0.3, 120, 5
exact_path = sgd(loss, start, rate, steps)
sampled = {k: [sgd(loss, start, rate, steps, k, np.random.default_rng(100 * k + r))
               for r in range(runs)] for k in (1, 4, 16)}


def excess(path):
    return np.array([loss(a, b) for a, b in path]) - best_loss


colors = {1: "#D55E00", 4: "#0072B2", 16: "#009E73"}
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.4))
iterations = np.arange(steps + 1)
for k, paths in sampled.items():
    curves = np.array([excess(p) for p in paths])
    for curve in curves:
        left.plot(iterations, curve, color=colors[k], lw=0.6, alpha=0.35)
    left.plot(iterations, curves.mean(axis=0), color=colors[k], lw=2,
              label=f"k = {k}: mean of {runs} runs (thin: each run)")
left.plot(iterations, np.maximum(excess(exact_path), 1e-16), color="black", lw=2,
          label="exact gradient")
left.set_yscale("log")
left.set_ylim(1e-6, 10)
left.set_xlabel("iteration")
left.set_ylabel("excess loss  L - L_min")
left.set_title("Exact descent converges; sampled descent stalls at a noise floor")
left.legend(fontsize=8)
left.grid(True, which="both", alpha=0.3)

for path in sampled[1]:
    right.plot(iterations, path[:, 0], color=colors[1], lw=0.6, alpha=0.5)
right.plot(iterations, np.mean([p[:, 0] for p in sampled[1]], axis=0), color=colors[1], lw=2,
           ls="--", label=f"k = 1: mean of {runs} runs (thin: each run)")
right.plot(iterations, exact_path[:, 0], color="black", lw=1.5, label="exact gradient")
right.axhline(best[0], color="grey", lw=1, ls=":", label="least-squares a")
right.set_xlabel("iteration")
right.set_ylabel("slope a")
right.set_title("The mean of the sampled runs follows the exact path")
right.legend(fontsize=8)
right.grid(True, alpha=0.3)
fig.tight_layout()
labs.show(fig, "lab6_sgd_convergence")
floor = {k: np.mean([excess(p)[-50:] for p in paths]) for k, paths in sampled.items()}
print("mean excess loss over the last 50 iterations:",
      ", ".join(f"k = {k}: {value:.1e}" for k, value in floor.items()),
      f"; exact: {excess(exact_path)[-1]:.1e}")
assert floor[1] > floor[4] > floor[16] > excess(exact_path)[-1]

# %% [markdown]
# **What to look for.**
#
# * **Left.** With exact gradients the excess loss falls in a straight line
#   on the log scale (geometric convergence), off the bottom of the plot.
#   The sampled runs fall just as fast at first, while the gradient is large
#   compared with its noise, then flatten out at a **noise floor**. More
#   draws ($k = 16$ against $k = 1$) lower the floor: the estimate's variance
#   falls roughly like $1/k$ (Lab 5).
# * **Right.** Each sampled run of the slope $a$ (thin) wanders around the
#   exact path, but their average (dashed) follows it closely. For this
#   objective that is exact in expectation: $L$ is quadratic, so its gradient
#   is linear in $(a, b)$, and averaging an unbiased estimate over the noise
#   gives $\mathbb E[p_{t+1}] = \mathbb E[p_t] - \lambda \nabla L(\mathbb E[p_t])$,
#   which is gradient descent itself. With five runs the average still
#   carries some noise of its own.
#
# **Why a floor?** Near the minimum the true gradient is tiny but the
# estimate is not (section 5): every step gets a random kick of size about
# $\lambda \times$ (noise of the estimate). The pull towards the minimum
# grows with the distance from it, so the iterates settle where pull and
# kicks balance, at an excess loss roughly proportional to $\lambda$ times
# the gradient noise. Hence the two remedies: more draws, or smaller steps.
# Here are smaller steps, with $k = 1$:

# %%
rates, long_steps, few_runs = (0.3, 0.1, 0.03), 250, 3
by_rate = {r: [sgd(loss, start, r, long_steps, 1, np.random.default_rng(7000 + i))
               for i in range(few_runs)] for r in rates}

fig, ax = plt.subplots(figsize=(6.4, 4.4))
tail = {}
for r, color in zip(rates, ("#D55E00", "#CC79A7", "#56B4E9")):
    curve = np.mean([excess(p) for p in by_rate[r]], axis=0)
    tail[r] = curve[-50:].mean()
    ax.plot(np.arange(long_steps + 1), curve, color=color, lw=1.5,
            label=f"rate {r}: mean of {few_runs} runs")
ax.set_yscale("log")
ax.set_xlabel("iteration")
ax.set_ylabel("excess loss  L - L_min")
ax.set_title("Sampled descent (k = 1): smaller steps, lower floor, slower start")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
labs.show(fig, "lab6_step_sizes")
for r in rates:
    print(f"rate {r:<5} mean excess loss over the last 50 iterations: {tail[r]:.2e}")
assert tail[0.3] > tail[0.1] > tail[0.03]

# %% [markdown]
# **What to look for.** The largest rate gets down fastest and then stalls
# highest; each smaller rate starts more slowly and, once there, hovers
# lower (the smallest needs about 200 iterations to get there). This is the
# classic trade-off of stochastic gradient descent, and the reason SGD
# schedules shrink the learning rate over time: with rates that decrease
# suitably (e.g. like $1/t$) the iterates converge to the minimum itself,
# noise and all.

# %% [markdown]
# ## 8. Exercise 6.3: the gradient through a solve
#
# Fitting often puts a **solver** inside the loss: $x(p)$ is defined by
# $f(x, p) = 0$ (a steady state, an equilibrium) and the cost is $g(x)$.
# Differentiating through the solver's iterations works but keeps every
# iterate. There is a shortcut. Differentiate $f(x(p), p) = 0$:
# $f_x \, x_p + f_p = 0$, so $x_p = -f_x^{-1} f_p$ and
#
# $$\frac{dg}{dp} = g_x \, x_p = -\left(g_x f_x^{-1}\right) f_p = -\lambda^T f_p,
# \qquad f_x^T \lambda = g_x^T .$$
#
# One solve with $f_x^T$, whatever the solver did and however many steps it
# took: the reverse sweep's version of the implicit function theorem.
#
# **Exercise 6.3.** Complete `implicit_gradient(f_x, f_p, g_x)`: the
# Jacobians at the solution ($f_x$: $n \times n$, $f_p$: $n \times m$,
# $g_x$: length $n$) in, $dg/dp$ (length $m$) out. Use `np.linalg.solve`;
# do not form $f_x^{-1}$ or $x_p$.

# %%
def implicit_gradient(f_x, f_p, g_x):
    """dg/dp at a root of f(x, p) = 0, by one transposed solve."""
    # BEGIN SOLUTION Exercise 6.3: the implicit gradient
    lam = np.linalg.solve(f_x.T, g_x)
    return -lam @ f_p
    # END SOLUTION


# %%
labs.check_implicit_gradient(implicit_gradient)

# %% [markdown]
# An LCG of arrays does the same on its own: `minirad.implicit.solves.solve_root`
# runs Newton's method and records **one** edge from $p$ to $x$ whose
# operator is $-f_x^{-1} f_p$, applied by solves. Compare with tracing a
# fixed-point iteration step by step: the same gradient from a far smaller
# graph.

# %%
from minirad import trace
from minirad.exact.sweeps import gradient as exact_gradient
from minirad.graph.memory import retained_memory
from minirad.implicit.solves import solve_root

A = np.array([[3.0, 1.0], [0.5, 4.0]])


def residual(x, p):
    return A @ x + 0.1 * x ** 3 - p


def through_iterations(p, steps=60):
    x = np.zeros(2)
    for _ in range(steps):   # Richardson's iteration: x <- x - f(x, p) / 5
        x = x - residual(x, p) / 5.0
    return (x * x).sum()


p0 = np.array([1.0, -2.0])
implicit = trace(lambda p: (solve_root(residual, np.zeros(2), p) ** 2).sum(), p0)
unrolled = trace(through_iterations, p0)
for label, g in (("implicit", implicit), ("through the iterations", unrolled)):
    print(f"{label:<24} {g.n_vertices:>4} vertices, {retained_memory(g).total:>7,.0f} bytes kept, "
          f"gradient {exact_gradient(g)[0].round(10)}")
assert np.allclose(exact_gradient(implicit)[0], exact_gradient(unrolled)[0], rtol=1e-9)

# %% [markdown]
# ## 9. Exercise 6.4: the adjoint of a linear solve
#
# `np.linalg.solve(A, b)` on traced arrays is **one** vertex $x = A^{-1} b$
# with two edges, from $b$ and from $A$. Differentiating $A x = b$ gives
# $A\, dx + dA\, x = db$, so $dx = A^{-1}(db - dA\, x)$. The reverse sweep
# applies the transpose: with $\lambda = A^{-T} \bar x$,
#
# $$\bar b = \lambda, \qquad \bar A = -\lambda\, x^T .$$
#
# One solve with $A^T$ (the LU factors of $A$ serve both solves), never
# $A^{-1}$: that is what minirad's solve edges keep and apply
# (`minirad.implicit.solves`).
#
# **Exercise 6.4.** Complete `solve_adjoint(A, b, x_bar)`: return the pair
# `(A_bar, b_bar)`. `b` (and `x_bar`) may have several columns; then
# $\bar A = -\Lambda X^T$ with one column of $\Lambda$ per column of $X$.

# %%
def solve_adjoint(A, b, x_bar):
    """The adjoints of A and b for x = A^{-1} b, given the adjoint x_bar of x."""
    # BEGIN SOLUTION Exercise 6.4: the adjoint of a linear solve
    x = np.linalg.solve(A, b)
    lam = np.linalg.solve(A.T, x_bar)
    A_bar = -(lam @ x.T if x.ndim == 2 else np.outer(lam, x))
    return A_bar, lam
    # END SOLUTION


# %%
labs.check_solve_adjoint(solve_adjoint)

# %% [markdown]
# ## 10. Exercise 6.5: the adjoint of an ODE solve
#
# A simulation is a solver too: $u' = f(u, p)$ from $u(0) = u_0$, and a cost
# $G(p) = \phi(u(T)) + \int_0^T g(u, p, t)\, dt$. Tracing the RK4 loop and
# sweeping back through it (**discretise, then differentiate**) gives the
# exact gradient of the program, `minirad.implicit.ode_adjoint.discrete_gradient`.
# The other way (**differentiate, then discretise**) solves the adjoint ODE
# backwards in time:
#
# $$\lambda(T) = \phi_u^T, \qquad \lambda' = -f_u^T \lambda - g_u^T, \qquad
# \mu' = -f_p^T \lambda - g_p^T,\ \mu(T) = 0, \qquad \frac{dG}{dp} = \mu(0).$$
#
# Every right-hand side is one vector-Jacobian product of $f$ (and $g$) at
# $u(t)$, so the backward solve needs $u(t)$ at every step: here the states
# of the forward solve, with the midpoints of each step interpolated.
#
# **Exercise 6.5.** Complete `adjoint_gradient(vjp, states, h, lam_T)`: one
# RK4 step backwards per forward step, from $t_N = T$ down to 0, for
# $(\lambda, \mu)$ together. `states[2n]` is $u(t_n)$ and `states[2n - 1]`
# the midpoint $u(t_n - h/2)$; `vjp(u, lam, t)` returns the pair
# $(f_u^T \lambda + g_u^T,\ f_p^T \lambda + g_p^T)$ at $(u, t)$, i.e. minus
# the rates of $(\lambda, \mu)$. Return $\mu(0)$.

# %%
def adjoint_gradient(vjp, states, h, lam_T):
    """dG/dp by the continuous adjoint, solved backwards by RK4."""
    # BEGIN SOLUTION Exercise 6.5: the adjoint of an ODE solve
    lam, mu = lam_T, 0.0
    for n in range((len(states) - 1) // 2, 0, -1):
        t = n * h
        k1 = vjp(states[2 * n], lam, t)
        k2 = vjp(states[2 * n - 1], lam + h / 2 * k1[0], t - h / 2)
        k3 = vjp(states[2 * n - 1], lam + h / 2 * k2[0], t - h / 2)
        k4 = vjp(states[2 * n - 2], lam + h * k3[0], t - h)
        lam = lam + h * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) / 6
        mu = mu + h * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) / 6
    return mu
    # END SOLUTION


# %%
labs.check_ode_adjoint(adjoint_gradient)

# %% [markdown]
# The two ways do not give the same number: each is RK4's approximation of
# the true $dG/dp$, and they differ by $O(h^4)$. Halve the step and the gap
# to the discrete adjoint should shrink about 16-fold:

# %%
from dataclasses import replace

from minirad.implicit import ode_adjoint

base = ode_adjoint.oscillator(n_steps=10)
for r in (1, 2, 4):
    finer = replace(base, h=base.h / r, n_steps=base.n_steps * r)
    mine = adjoint_gradient(*labs.adjoint_inputs(finer, finer.parameters))
    exact = ode_adjoint.discrete_gradient(finer, finer.parameters).gradient
    gap = np.linalg.norm(mine - exact) / np.linalg.norm(exact)
    print(f"h = {finer.h:.4f}: relative gap to the discrete adjoint {gap:.2e}")

# %% [markdown]
# Keeping every state costs memory for all $N$ of them. The library's
# `continuous_gradient` also recomputes them from checkpoints (the same
# numbers, about $2\sqrt N$ states kept) or integrates $u' = f$ backwards
# beside $\lambda$ (nothing kept). The last fails on diffusion, which forgets
# its high frequencies going forward and so amplifies them going backward,
# rounding errors included:

# %%
heat = ode_adjoint.diffusion(n_grid=15, n_steps=60)
for states in ode_adjoint.STATES:
    got = ode_adjoint.continuous_gradient(heat, heat.parameters, states_from=states)
    print(f"{states:<12} {got.stored_states:>3} states kept, gradient {got.gradient.round(6)}")

# %% [markdown]
# ## What you learned
#
# * One step of gradient descent is `p - rate * gradient`, with the gradient
#   from a reverse sweep on the traced LCG, re-traced at every iterate.
# * A published lab step, $(0.891939538826372, 0.8)$, comes from a tracer
#   that overwrote instead of accumulating the two partials of `y * y`; the
#   correct step is $(0.891939538826372, 0.6)$. A wrong gradient can still
#   descend, which is why such bugs survive: check gradients (Lab 1).
# * Algorithm 1 only adds noise where vertices fan out. On a sum over data it
#   is mini-batch sampling.
# * With unbiased gradient estimates, descent converges **in expectation**
#   (exactly so for a quadratic), but the iterates hover around the minimum
#   at a noise floor that more draws or smaller steps push down.
# * Through a solver, the gradient needs one transposed solve,
#   $f_x^T \lambda = g_x^T$, then $dg/dp = -\lambda^T f_p$: no iterates kept,
#   however many the solver took (the implicit function theorem).
# * A linear solve's adjoint is one more solve, with $A^T$: $\bar b = \lambda$,
#   $\bar A = -\lambda x^T$.
# * An ODE solve has two gradients: the reverse sweep through its steps
#   (exact for the program) and the adjoint ODE solved backwards, a sequence of
#   vector-Jacobian products of $f$; they agree to the solver's order,
#   $O(h^4)$ for RK4, and the adjoint needs $u(t)$ on the way back: stored,
#   recomputed from checkpoints, or integrated backwards where that is stable.
#
# ## Going further
#
# * Make the learning rate decrease, e.g. $\lambda_t = \lambda_0 / (1 + t/20)$.
#   Does the excess loss keep falling?
# * Compare equal **memory** rather than equal iterations: $k = 4$ stores
#   about four times as many edges as $k = 1$. Which reaches a given excess
#   loss with the least total storage?
# * The paper's neural-network case study (Section 4) samples *activations*
#   inside each layer on top of the mini-batch. Build a tiny two-layer model
#   with `minirad.ops.tanh`, trace its loss, and see where Algorithm 1 fans
#   out in its LCG.
