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
# # Lab 1: Derivatives by definition
#
# Before we let a program differentiate other programs, we need a referee: a way
# to get a derivative that does not depend on any of the machinery we are about
# to build. The definition of the derivative is such a referee. Nudge the input
# a little, watch how much the output moves, divide.
#
# In this lab you will
#
# * compute derivatives with the forward and the central difference,
# * measure how their error behaves as the step $h$ shrinks, and see why it
#   stops improving (rounding),
# * use the central difference along random directions to *check* a gradient,
#   the way AD libraries test themselves.
#
# **You need:** Python, numpy, a little calculus (Taylor series).
# **Exercises:** 1.1 (central difference) and 1.2 (directional difference). Each
# is followed by a check cell: run it, and it either prints one "passed" line or
# tells you on which input your answer differs.
#
# Pictures open inline in Jupyter; when you run this file as a script they are
# saved as PNG files in `lab_output/` (or the folder named by the environment
# variable `MINIRAD_LAB_OUTPUT`).

# %%
import math

import matplotlib.pyplot as plt
import numpy as np

from minirad import detach, examples, labs
from minirad.gradcheck import gradcheck

# %% [markdown]
# ## 1. The forward difference
#
# The derivative of $f$ at $x$ is the limit of the slope of a secant:
#
# $$f'(x) = \lim_{h \to 0} \frac{f(x + h) - f(x)}{h}.$$
#
# Stopping before the limit, at a small but finite $h$, gives the **forward
# difference**. Taylor's theorem says how far off it is:
# $f(x+h) = f(x) + h f'(x) + \tfrac{h^2}{2} f''(\xi)$ for some $\xi$ between
# $x$ and $x+h$, so
#
# $$\frac{f(x+h) - f(x)}{h} = f'(x) + \frac{h}{2} f''(\xi).$$
#
# The error is proportional to $h$: make $h$ ten times smaller and the error
# drops tenfold. We say the method is of **first order**.
#
# Our running example is the lecture's function
# $y = \ln(x_1) + x_1 x_2 - \sin(x_2)$ at $(x_1, x_2) = (2, 5)$. Holding
# $x_2 = 5$ fixed leaves a function of $x_1$ alone, whose derivative is
# $1/x_1 + x_2 = 5.5$.

# %%
def lecture(x1, x2):
    """The lecture's example: y = ln(x1) + x1*x2 - sin(x2)."""
    return math.log(x1) + x1 * x2 - math.sin(x2)


def along_x1(t):
    """The lecture's function with x2 held at 5."""
    return lecture(t, 5.0)


def forward_difference(f, x, h):
    return (f(x + h) - f(x)) / h


exact = 1 / 2 + 5  # dy/dx1 at (2, 5)
for h in (1e-1, 1e-2, 1e-3, 1e-4):
    estimate = forward_difference(along_x1, 2.0, h)
    print(f"h = {h:<7g} forward difference = {estimate:.10f}   error = {estimate - exact:+.2e}")

# %% [markdown]
# Each row is ten times closer, as promised. Notice the sign: the error is
# negative because $f'' = -1/x_1^2 < 0$, and its size is about $h/2 \cdot 0.25$.

# %% [markdown]
# ## 2. Exercise 1.1: the central difference
#
# Take one step each way and divide by the distance between the two points:
#
# $$\frac{f(x + h) - f(x - h)}{2h}.$$
#
# Write the Taylor series of $f(x+h)$ and of $f(x-h)$ up to the $h^3$ term and
# subtract them. The $f(x)$ and $h^2 f''$ terms cancel, because they have the
# same sign on both sides; what survives is $2h f'(x) + \tfrac{h^3}{3} f'''$.
# So the error of the central difference is about $\tfrac{h^2}{6} f'''(x)$:
# a **second order** method, for the price of the same two evaluations of $f$.
#
# **Exercise 1.1.** Complete `central_difference(f, x, h)`: `f` takes a float
# and returns a float, `x` and `h` are floats, and the function returns the
# central difference above. Mind the brackets around `2 * h`.

# %%
def central_difference(f, x, h):
    # BEGIN SOLUTION Exercise 1.1: central difference
    return (f(x + h) - f(x - h)) / (2 * h)
    # END SOLUTION


# %% [markdown]
# The check calls your function on four smooth functions at three step sizes
# and accepts it when its error is no larger than $\tfrac{h^2}{6}\max|f'''|$
# plus a little rounding: a one-sided difference is far outside that bound.

# %%
labs.check_central_difference(central_difference)

# %% [markdown]
# ## 3. How small should h be?
#
# Both errors shrink with $h$, so why not take $h = 10^{-15}$? Because the
# computer stores numbers with about 16 significant digits (the spacing of
# doubles near 1 is $\varepsilon \approx 2.2 \times 10^{-16}$). Evaluating
# $f(x+h)$ and $f(x)$ each carries a rounding error of about
# $\varepsilon |f(x)|$; their difference is then divided by $h$, which inflates
# that error to about $\varepsilon |f(x)| / h$. This **rounding error** grows
# as $h$ shrinks, while the **truncation error** (the Taylor remainder) falls.
# The total error is smallest where the two meet.
#
# The next cell measures both methods' errors for steps from $10^{-1}$ down to
# $10^{-15}$ and plots them on log-log axes. On such axes $C h^p$ is a straight
# line of slope $p$, so the order of a method can be read off as a slope.

# %%
steps = np.logspace(-15, -1, 141)
forward_errors = np.array([abs(forward_difference(along_x1, 2.0, h) - exact) for h in steps])
central_errors = np.array([abs(central_difference(along_x1, 2.0, h) - exact) for h in steps])

print(f"{'h':>8}  {'forward error':>14}  {'central error':>14}")
for h in (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10, 1e-12):
    forward_error = abs(forward_difference(along_x1, 2.0, h) - exact)
    central_error = abs(central_difference(along_x1, 2.0, h) - exact)
    print(f"{h:8.0e}  {forward_error:14.2e}  {central_error:14.2e}")


# %%
def error_plot(steps, forward_errors, central_errors):
    """Log-log plot of the two errors with the h, h^2 and eps/h guide lines."""
    eps = np.finfo(float).eps
    fig, ax = plt.subplots(figsize=(7.5, 5.6))
    # an error that happens to be exactly 0 has no logarithm: leave a gap
    ax.loglog(steps, np.where(forward_errors > 0, forward_errors, np.nan), "o", ms=3,
              color="#0072B2", label="forward difference")
    ax.loglog(steps, np.where(central_errors > 0, central_errors, np.nan), "s", ms=3,
              color="#D55E00", label="central difference")
    # the Taylor terms for this function: f'' = -1/4 and f''' = 1/4 at x1 = 2
    ax.loglog(steps, steps / 2 * 0.25, "--", color="#0072B2", lw=1,
              label=r"truncation $\frac{h}{2}|f''|$ (slope 1)")
    ax.loglog(steps, steps ** 2 / 6 * 0.25, "--", color="#D55E00", lw=1,
              label=r"truncation $\frac{h^2}{6}|f'''|$ (slope 2)")
    ax.loglog(steps, eps * abs(along_x1(2.0)) / steps, ":", color="#555555", lw=1.5,
              label=r"rounding $\varepsilon|f|/h$ (slope $-1$)")
    # label each minimum below the curves, where the plot is empty
    for errors, color, offset in ((forward_errors, "#0072B2", (-45, -70)),
                                  (central_errors, "#D55E00", (25, -55))):
        best = int(np.nanargmin(np.where(errors > 0, errors, np.nan)))
        ax.annotate(f"best h ≈ {steps[best]:.0e}\nerror ≈ {errors[best]:.0e}",
                    (steps[best], errors[best]), xytext=offset, textcoords="offset points",
                    ha="center", color=color, fontsize=9,
                    arrowprops=dict(arrowstyle="->", color=color))
    ax.set_ylim(1e-15, 1e1)
    ax.set_xlabel("step h")
    ax.set_ylabel("|estimate - exact derivative|")
    ax.set_title("Error of finite differences for d/dx1 [ln x1 + 5 x1 - sin 5] at x1 = 2")
    ax.grid(True, which="major", alpha=0.3)
    # the legend goes below the axes: inside, it would hide data at any corner
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=9)
    return fig


labs.show(error_plot(steps, forward_errors, central_errors), "lab1_error_vs_h")

# %% [markdown]
# **What to look for.** Read the plot from right to left, as $h$ shrinks:
#
# * On the right the markers follow the dashed lines: the forward error falls
#   with slope 1, the central error with slope 2 (a hundredfold per decade).
# * Further left each curve turns around and climbs along the dotted line of
#   slope $-1$: now rounding dominates and the points scatter, because rounding
#   errors are erratic.
# * The forward difference is at its best near $h \approx 10^{-7}$ to $10^{-8}$
#   (about $\sqrt{\varepsilon}$) with 8 or 9 correct digits; the central difference
#   near $h \approx 10^{-5}$ (about $\varepsilon^{1/3}$) with 10 or 11. Neither
#   gets anywhere near the 16 digits of the numbers themselves, and at
#   $h = 10^{-15}$ both are useless.
#
# That is the case against computing gradients with finite differences: they
# are inexact, and a gradient with respect to $n$ inputs needs $n$ (forward) or
# $2n$ (central) extra evaluations of $f$. Automatic differentiation, the
# subject of the rest of the course, gets every digit at a cost independent of
# $n$ (reverse mode). But finite differences stay useful as a referee.

# %% [markdown]
# ## 4. Exercise 1.2: checking a gradient along a direction
#
# Suppose someone hands us a function `grad` that claims to compute
# $\nabla f(x)$ for $f:\mathbb{R}^n \to \mathbb{R}$. We could check each of its
# $n$ entries with a central difference along a coordinate axis $e_i$, at
# $2n$ evaluations of $f$. The lecture's trick checks all entries at once: for
# any direction $\delta$,
#
# $$\frac{f(x + h\delta) - f(x - h\delta)}{2h} = \delta^\top \nabla f(x) + O(h^2),$$
#
# because the left side is the central difference of the one-variable function
# $t \mapsto f(x + t\delta)$ at $t = 0$, whose derivative is $\delta^\top
# \nabla f(x)$. Pick $\delta$ at random (say uniformly on the unit sphere) and
# compare both sides: two evaluations of $f$ test the whole gradient.
#
# **Exercise 1.2.** Complete `directional_difference(f, x, delta, h)`: `f`
# takes a numpy vector and returns a float; `x` and `delta` are numpy vectors
# of the same length; return the central difference above. Use `delta` as
# given: do not normalise it.

# %%
def directional_difference(f, x, delta, h):
    # BEGIN SOLUTION Exercise 1.2: directional difference
    return (f(x + h * delta) - f(x - h * delta)) / (2 * h)
    # END SOLUTION


# %%
labs.check_directional_difference(directional_difference)

# %% [markdown]
# Now let us catch a bug. Below are two gradients of the lecture's function:
# the right one, $(1/x_1 + x_2,\; x_1 - \cos x_2)$, and one with a classic slip,
# the sign of the derivative of $-\sin x_2$. We compare each with your
# directional difference along a few random unit directions.

# %%
def f_vec(x):
    return lecture(x[0], x[1])


def grad_right(x):
    return np.array([1 / x[0] + x[1], x[0] - math.cos(x[1])])


def grad_buggy(x):
    return np.array([1 / x[0] + x[1], x[0] + math.cos(x[1])])  # wrong sign on cos


def random_unit_directions(n, count, rng):
    """Directions drawn uniformly on the unit sphere: normalised Gaussian vectors."""
    d = rng.standard_normal((count, n))
    return d / np.linalg.norm(d, axis=1, keepdims=True)


x0, h = np.array([2.0, 5.0]), 1e-5
rng = np.random.default_rng(0)
print(f"{'direction':>18}  {'finite diff.':>13}  {'right grad':>13}  {'buggy grad':>13}")
for delta in random_unit_directions(2, 5, rng):
    numeric = directional_difference(f_vec, x0, delta, h)
    print(f"({delta[0]:+.3f}, {delta[1]:+.3f})  {numeric:13.8f}  {delta @ grad_right(x0):13.8f}"
          f"  {delta @ grad_buggy(x0):13.8f}")

# %% [markdown]
# The right gradient agrees with the finite difference to about 10 digits; the
# buggy one is off in the first or second digit. Is one random direction always
# enough? In two dimensions we can try *every* direction: write
# $\delta = (\cos\theta, \sin\theta)$ and plot the disagreement against
# $\theta$.

# %%
def disagreement_plot(x0, h):
    angles = np.linspace(0, 2 * np.pi, 721)
    right, buggy = [], []
    for theta in angles:
        delta = np.array([math.cos(theta), math.sin(theta)])
        numeric = directional_difference(f_vec, x0, delta, h)
        right.append(abs(numeric - delta @ grad_right(x0)))
        buggy.append(abs(numeric - delta @ grad_buggy(x0)))
    right, buggy = np.array(right), np.array(buggy)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    ax.semilogy(angles, np.where(buggy > 0, buggy, np.nan), color="#D55E00",
                label="buggy gradient")
    ax.semilogy(angles, np.where(right > 0, right, np.nan), color="#0072B2",
                label="right gradient")
    ax.axhline(1e-6, color="#555555", ls=":", lw=1.5, label="a sensible tolerance, 1e-6")
    for theta, name in ((0, "δ = e1"), (np.pi, "δ = -e1")):
        ax.axvline(theta, color="#999999", lw=0.8)
        ax.text(theta + 0.05, 3e-3, name, fontsize=9, color="#555555")
    ax.set_xticks(np.arange(0, 2 * np.pi + 0.01, np.pi / 2),
                  ["0", "π/2", "π", "3π/2", "2π"])
    ax.set_xlabel("angle θ of the direction δ = (cos θ, sin θ)")
    ax.set_ylabel("|finite difference - δ·grad|")
    ax.set_title("Gradient check of ln x1 + x1 x2 - sin x2 at (2, 5), every direction")
    ax.legend(loc="center right", fontsize=9)
    ax.set_ylim(1e-13, 10)
    return fig


labs.show(disagreement_plot(x0, h), "lab1_gradient_check_directions")

# %% [markdown]
# **What to look for.** The blue curve (right gradient) stays near $10^{-10}$
# for every direction: that is the finite difference's own error. The orange
# curve (buggy gradient) sits about ten orders of magnitude higher, except in
# two narrow dips at $\theta = 0$ and $\theta = \pi$, where it falls to the
# blue level. There $\delta = \pm e_1$ points along $x_1$, and the bug, which
# lives in $\partial f/\partial x_2$, is invisible. A random direction lands
# exactly in a dip with probability zero, but directions *near* one make the
# bug look small, so practical gradient checks use a few random directions and
# a tolerance well above the finite-difference error (the dotted line).

# %% [markdown]
# ## 5. minirad's gradient check
#
# minirad has these tools built in (`minirad.gradcheck`). `gradcheck(f, *args)`
# traces `f`, computes its Jacobian by reverse-mode AD, and compares it with
# central differences entry by entry and along random directions. Here it is
# on the lecture's function, and on a function that hides a bug from the
# tracer: `minirad.detach(x)` turns the traced number into a plain constant,
# so the graph loses a dependency and the derivative comes out wrong. (minirad
# refuses `float(x)` and `math.sin(x)` on traced numbers for this very reason:
# they would drop the derivative without a word.)

# %%
print(gradcheck(examples.lecture_program, 2.0, 5.0))


def cut(x):
    return x * detach(x)  # the second factor is frozen: d/dx comes out as x, not 2x


report = gradcheck(cut, 3.0, raise_on_failure=False)
print("cut passes the check:", report.passed)

# %% [markdown]
# ## What you learned
#
# * The forward difference has error $O(h)$, the central difference $O(h^2)$;
#   on a log-log plot the order is the slope.
# * Shrinking $h$ trades truncation error for rounding error
#   $\approx \varepsilon |f| / h$; the best achievable accuracy is about 8-9
#   (forward) or 10-11 (central) digits, not 16.
# * A gradient can be checked with two evaluations of $f$ along a random
#   direction; using a few directions guards against unlucky ones.
#
# ## Going further
#
# * Repeat the error plot for $f = \exp$ at $x = 10$: the best $h$ moves,
#   because the rounding error scales with $|f|$ and the truncation error with
#   $|f''|$ or $|f'''|$. Can you predict where?
# * The *complex step* $\operatorname{Im} f(x + ih)/h$ has no subtraction and
#   therefore no rounding catastrophe: try it with `cmath` and $h = 10^{-20}$.
# * Next, Lab 2 builds the graph that automatic differentiation works on, and
#   computes exact derivatives by sweeping over it.
