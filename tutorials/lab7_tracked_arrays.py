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
# # Lab 7: Build your own tracer, then track whole arrays
#
# minirad's `trace` records a program one **scalar** at a time: every
# multiplication becomes a vertex of the LCG. That is the right picture for
# learning, and a terrible one for a neural network, where one matrix
# product is thousands of scalar multiplications. Real AD systems record
# whole **array** operations, each with a *pullback*: a function that takes
# the gradient with respect to the operation's output (a "wobble" of the
# output) and returns the gradient with respect to each input.
#
# In this lab you build both kinds of tracer yourself, the second one on the
# pattern of the lab seed's `TrackedArray` (written in Julia there, in
# Python here), check them against minirad's tracer and its LCG of arrays,
# measure how much faster arrays are, and train a small network with your
# own code.
#
# **You need:** Lab 2 (forward and reverse sweeps), matrix products.
# **Exercises:** 7.1 (a scalar tracer: operator overloading and a tape),
# 7.2 (the pullback of a matrix product), 7.3 (pullbacks of sum, +, -,
# squares, the sigmoid and concatenation).

# %%
import math
import time

import matplotlib.pyplot as plt
import numpy as np

from minirad import labs, ops, trace
from minirad.exact.sweeps import gradient as block_gradient
from minirad.exact.sweeps import reverse_sweep

# %% [markdown]
# ## 1. Exercise 7.1: a scalar tracer in twenty lines
#
# A tracer needs two things (the operator-overloading design of most AD
# tools; Baydin et al., "Automatic differentiation in machine learning: a
# survey", 2018, section 3).
#
# * **Operator overloading:** a number type `Var` whose `+`, `-`, `*` (and a
#   function `sin`) compute the value *and* record what they did.
# * **A tape:** the list of those records, in the order they happened,
#   which is a topological order of the LCG. Each record holds the result
#   and, for each operand, the local partial derivative.
#
# The backward pass then walks the tape **in reverse**: the result's
# adjoint is 1, and each record passes `partial * adjoint(result)` on to each
# operand, **adding** to what the operand already has (a variable used twice
# receives two contributions).
#
# **Exercise 7.1.** Write `Var` (with `__add__`, `__sub__`, `__mul__`),
# `sin`, and `gradient(f, x, y)`, which creates a fresh tape, wraps `x` and
# `y` as `Var`s on it, runs `f(X, Y, sin)`, walks the tape backwards from the
# result and returns `[df/dx, df/dy]`. Only `Var` op `Var` is needed. The
# cells after the check use your type, so keep this interface: `Var(value,
# tape)` has attributes `value` and `adjoint` (starting at 0), and the tape
# is a list of `(result, operands)` entries where `operands` is a tuple of
# `(operand, partial)` pairs. The check runs nine programs (among them the seed's $f = xy + \sin x$ and
# $g = y^2 + \sin x$) and compares with minirad's `trace` followed by a
# reverse sweep, and with central differences.

# %%
# BEGIN SOLUTION Exercise 7.1: a scalar tracer
class Var:
    """A tracked scalar: its value, its adjoint, and the tape it records on."""

    def __init__(self, value, tape):
        self.value, self.adjoint, self.tape = value, 0.0, tape

    def record(self, value, *operands):
        """A new Var for an operation's result; operands are (Var, partial) pairs."""
        result = Var(value, self.tape)
        self.tape.append((result, operands))
        return result

    def __add__(self, other):
        return self.record(self.value + other.value, (self, 1.0), (other, 1.0))

    def __sub__(self, other):
        return self.record(self.value - other.value, (self, 1.0), (other, -1.0))

    def __mul__(self, other):
        return self.record(self.value * other.value, (self, other.value), (other, self.value))


def sin(a):
    return a.record(math.sin(a.value), (a, math.cos(a.value)))


def gradient(f, x, y):
    tape = []
    X, Y = Var(x, tape), Var(y, tape)
    result = f(X, Y, sin)
    result.adjoint = 1.0
    for node, operands in reversed(tape):  # reverse topological order
        for operand, partial in operands:
            operand.adjoint += partial * node.adjoint  # add: a Var may be used twice
    return [X.adjoint, Y.adjoint]
# END SOLUTION


# %%
labs.check_scalar_tracer(gradient)

# %% [markdown]
# Your tracer and minirad's side by side on the lecture's function
# $y = \ln x_1 + x_1 x_2 - \sin x_2$... almost: we have no `ln`, so take the
# seed's $f(x, y) = xy + \sin x$ at $(2, 5)$, and print your tape.

# %%
tape = []
X, Y = Var(2.0, tape), Var(5.0, tape)
Z = X * Y + sin(X)
names = {id(X): "x", id(Y): "y"}
for i, (node, operands) in enumerate(tape):
    names[id(node)] = f"v{i + 1}"
    parts = ", ".join(f"d/d{names[id(o)]} = {p:.4f}" for o, p in operands)
    print(f"{names[id(node)]} = {node.value:8.4f}   ({parts})")
print("your gradient:   ", gradient(lambda x, y, sin: x * y + sin(x), 2.0, 5.0))
print("minirad's:       ",
      reverse_sweep(trace(lambda x, y: x * y + ops.sin(x), 2.0, 5.0)).jacobian[0])

# %% [markdown]
# Your tape is the Wengert list of Lab 2: `v1 = x*y`, `v2 = sin(x)`,
# `v3 = v1 + v2`, each with its local partials, and $\partial f/\partial x
# = y + \cos x = 5 - 0.416$.
#
# ## 2. Tracked arrays and pullbacks
#
# For arrays we record one operation per array, not per entry. Here is the
# type (given: you write its operations). `children` lists, for each
# operation that used this array, the result and the **pullback** into this
# array: a function from the result's gradient to this array's share of it.
# `accum` computes an array's gradient by asking each child for its
# gradient first (recursively) and summing the pullbacks; the result of the
# whole program has its gradient set by hand (the seed).

# %%
class TArray:
    """A tracked array: data, gradient (None until computed), children."""

    def __init__(self, data):
        self.data = np.asarray(data, dtype=float)
        self.grad = None
        self.children = []  # (result TArray, pullback from its grad to ours)

    def __repr__(self):
        return f"TArray({self.data!r})"


def track(x):
    return x if isinstance(x, TArray) else TArray(x)


def accum(x):
    """The gradient of x: the sum of its children's gradients, pulled back."""
    if x.grad is None:
        x.grad = sum((pullback(accum(child)) for child, pullback in x.children),
                     np.zeros_like(x.data))
    return x.grad


def vjp(op, *arrays, wobble):
    """Track the arrays, run op, seed the result with wobble, return each input's gradient."""
    xs = [track(a) for a in arrays]
    z = op(*xs)
    z.grad = np.asarray(wobble, dtype=float)
    return [accum(x) for x in xs]


# %% [markdown]
# ## 3. Exercise 7.2: the pullback of a matrix product
#
# For $Z = XY$ with $X$ of shape $(n, m)$ and $Y$ of shape $(m, l)$, and a
# wobble $\bar Z$ of shape $(n, l)$, the pullbacks are
#
# $$\bar X = \bar Z\, Y^{\mathsf T}, \qquad \bar Y = X^{\mathsf T} \bar Z .$$
#
# (Check the shapes: $(n, l)(l, m) = (n, m)$, the shape of $X$.) One entry
# shows why: $Z_{ij} = \sum_k X_{ik} Y_{kj}$, so $X_{ik}$ reaches every
# $Z_{ij}$ of row $i$ with partial $Y_{kj}$, and
# $\bar X_{ik} = \sum_j \bar Z_{ij} Y_{kj}$. The two rules multiply by
# $\bar Z$ from **different sides**, so a pullback must be a function
# (a closure), not a stored matrix.
#
# **Exercise 7.2.** Complete `matmul(X, Y)`: it has computed `Z`; append
# `(Z, pullback)` to `X.children` and to `Y.children`. The check calls
# `vjp(matmul, X, Y, wobble=...)` on three pairs of shapes (none square, so
# a transposed rule shows) and compares with minirad's LCG of arrays and with
# finite differences.

# %%
def matmul(X, Y):
    """Z = X @ Y, with the pullbacks into X and Y recorded."""
    Z = TArray(X.data @ Y.data)
    # BEGIN SOLUTION Exercise 7.2: matmul pullback
    X.children.append((Z, lambda wobble: wobble @ Y.data.T))
    Y.children.append((Z, lambda wobble: X.data.T @ wobble))
    # END SOLUTION
    return Z


# %%
labs.check_matmul_pullback(matmul, vjp)

# %% [markdown]
# ## 4. Exercise 7.3: the other rules
#
# **Exercise 7.3.** Write `tsum(x)` (a scalar result: its pullback spreads
# the scalar wobble over an array of `x`'s shape), `add(X, Y)`, `sub(X, Y)`,
# `abs2(x)` (entrywise square, pullback `wobble * 2x`), `tsigmoid(x)` with
# $\sigma(x) = 1/(1 + e^{-x})$ and $\sigma' = \sigma(1 - \sigma)$ (compute it
# from the **output**, which you have anyway), and `hcat(*xs)`, which
# joins 2-D arrays with the same number of rows side by side, each input
# getting back its own columns of the wobble. Each returns a new `TArray`.
# The check runs every rule on two shape cases through `vjp`, against minirad
# and finite differences.

# %%
# BEGIN SOLUTION Exercise 7.3: the other pullbacks
def tsum(x):
    z = TArray(x.data.sum())
    x.children.append((z, lambda wobble: wobble * np.ones_like(x.data)))
    return z


def add(X, Y):
    Z = TArray(X.data + Y.data)
    X.children.append((Z, lambda wobble: wobble))
    Y.children.append((Z, lambda wobble: wobble))
    return Z


def sub(X, Y):
    Z = TArray(X.data - Y.data)
    X.children.append((Z, lambda wobble: wobble))
    Y.children.append((Z, lambda wobble: -wobble))
    return Z


def abs2(x):
    z = TArray(x.data ** 2)
    x.children.append((z, lambda wobble: wobble * 2 * x.data))
    return z


def tsigmoid(x):
    z = TArray(1 / (1 + np.exp(-x.data)))
    s = z.data
    x.children.append((z, lambda wobble: wobble * s * (1 - s)))
    return z


def hcat(*xs):
    z = TArray(np.concatenate([x.data for x in xs], axis=1))
    start = 0
    for x in xs:
        stop = start + x.data.shape[1]
        x.children.append((z, lambda wobble, a=start, b=stop: wobble[:, a:b]))
        start = stop
    return z
# END SOLUTION


# %%
labs.check_other_pullbacks(tsum, add, sub, abs2, tsigmoid, hcat, vjp)

# %% [markdown]
# The rules compose. A whole loss, squared error of a one-layer sigmoid
# model, through your type and through minirad's LCG of arrays:

# %%
rng = np.random.default_rng(0)
W0, X0, T0 = rng.standard_normal((2, 3)), rng.standard_normal((3, 5)), rng.standard_normal((2, 5))
yours = vjp(lambda W, X, T: tsum(abs2(sub(tsigmoid(matmul(W, X)), T))), W0, X0, T0, wobble=1.0)
g = trace(lambda W, X, T: ((ops.sigmoid(W @ X) - T) ** 2).sum(), W0, X0, T0)
theirs = block_gradient(g)
for name, a, b in zip("WXT", yours, theirs):
    print(f"d loss / d{name}: largest difference {np.max(np.abs(a - b)):.2e}")
print(g)

# %% [markdown]
# Five array operations, five vertices after the inputs: minirad's vector
# LCG has exactly the structure your `children` lists record.
#
# ## 5. An array of tracked scalars against a tracked array
#
# Why not simply fill a numpy array with your `Var`s from Exercise 7.1? It
# works (numpy's `@` calls your `*` and `+` on objects), but every scalar
# multiplication becomes a Python object and a tape record: an $n \times n$
# product records about $2n^3$ of them, while your `TArray` records two
# (the product and the sum) and hands the arithmetic to compiled code. We time the gradient of
# `sum(A @ B)` both ways (the best of several runs).

# %%
def scalar_way(A, B):
    tape = []
    a = np.array([[Var(v, tape) for v in row] for row in A], dtype=object)
    b = np.array([[Var(v, tape) for v in row] for row in B], dtype=object)
    z = (a @ b).sum()
    z.adjoint = 1.0
    for node, operands in reversed(tape):
        for operand, partial in operands:
            operand.adjoint += partial * node.adjoint
    return np.array([[v.adjoint for v in row] for row in a]), len(tape)


def array_way(A, B):
    return vjp(lambda X, Y: tsum(matmul(X, Y)), A, B, wobble=1.0)[0]


sizes, slow, fast = [4, 8, 16, 24], [], []
for n in sizes:
    A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    timings = []
    for _ in range(3):  # the best of three runs: the least disturbed by other programs
        start = time.perf_counter()
        grad_scalar, records = scalar_way(A, B)
        timings.append(time.perf_counter() - start)
    slow.append(min(timings))
    timings = []
    for _ in range(20):
        start = time.perf_counter()
        grad_array = array_way(A, B)
        timings.append(time.perf_counter() - start)
    fast.append(min(timings))
    assert np.allclose(grad_scalar, grad_array)
    print(f"n = {n:>2}: {records:>6} tape records, {slow[-1] * 1e3:8.2f} ms as scalars; "
          f"2 records, {fast[-1] * 1e3:6.3f} ms as arrays ({slow[-1] / fast[-1]:,.0f}x faster)")

# %%
fig, ax = plt.subplots(figsize=(6.4, 4.4))
ax.loglog(sizes, np.array(slow) * 1e3, "o-", color="#D55E00",
          label="array of tracked scalars (your Var)")
ax.loglog(sizes, np.array(fast) * 1e3, "s-", color="#0072B2",
          label="tracked array (your TArray)")
ax.loglog(sizes, np.array(slow[0]) * 1e3 * (np.array(sizes) / sizes[0]) ** 3, ":",
          color="#D55E00", label="slope 3 (n^3 records)")
ax.set_xticks(sizes, [str(n) for n in sizes])
ax.set_xticks([], minor=True)
ax.set_xlabel("n (A and B are n x n)")
ax.set_ylabel("time for the gradient of sum(A @ B) [ms]")
ax.set_title("Tracing scalars against tracing arrays")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
labs.show(fig, "lab7_scalars_vs_arrays")

# %% [markdown]
# **What to look for.** The orange line climbs with slope about 3 on the
# log-log axes (the dotted guide; the measured line may bend a little above
# it as the tape outgrows the processor's caches): the scalar tracer's cost
# is its number of tape records, $\sim n^3$. The blue line is nearly flat at
# these sizes: two records, and the time goes to Python overhead, not
# arithmetic. The gap is a factor of hundreds or more at $n = 16$ and grows
# like $n^3$; a real layer has $n$ in the hundreds.
#
# ## 6. Train a network with your own AD
#
# The seed's last task: approximate $g(x, y) = y^2 + \sin x$ on
# $[-2, 2]^2$ with a network of one hidden layer of 16 sigmoid units. The
# inputs get a row of ones so that $W_1$ also holds the hidden biases;
# the hidden layer gets one too, for the output bias. We build each batch
# from single points with your `hcat`, as the seed does, and take plain
# gradient steps with momentum.

# %%
def g_target(x, y):
    return y * y + np.sin(x)


rng = np.random.default_rng(1)
grid = np.linspace(-2, 2, 12)
points = np.array([(x, y) for x in grid for y in grid])  # 144 training points
targets = g_target(points[:, 0], points[:, 1])
hidden = 16
W1 = rng.standard_normal((hidden, 3))
W2 = rng.standard_normal((1, hidden + 1)) * 0.1
velocity = [np.zeros_like(W1), np.zeros_like(W2)]


def loss_fn(W1, W2, columns, T):
    X = hcat(*columns)  # the batch, one column per point
    H = tsigmoid(matmul(W1, X))
    H1 = TArray(np.vstack([H.data, np.ones((1, H.data.shape[1]))]))  # with a constant row, for the bias:
    H.children.append((H1, lambda wobble: wobble[:-1]))  # its pullback drops that row
    return tsum(abs2(sub(matmul(W2, H1), TArray(T))))  # T: a constant, tracked fresh


columns = [np.array([[x], [y], [1.0]]) for x, y in points]
T = targets.reshape(1, -1)
history = []
for step in range(1500):
    grads = vjp(lambda W1, W2, *cols: loss_fn(W1, W2, cols, T), W1, W2, *columns, wobble=1.0)
    history.append(float(np.mean((W2 @ np.vstack([1 / (1 + np.exp(-W1 @ np.hstack(columns))),
                                                   np.ones((1, len(points)))]) - T) ** 2)))
    for i, (W, dW) in enumerate(zip((W1, W2), grads[:2])):
        velocity[i] = 0.9 * velocity[i] - 0.002 * dW
        W += velocity[i]
print(f"mean squared error: {history[0]:.3f} at the start, {history[-1]:.4f} after "
      f"{len(history)} steps (the target varies between {targets.min():.2f} and "
      f"{targets.max():.2f})")

# %%
def predict(x, y):
    X = np.vstack([x.ravel(), y.ravel(), np.ones(x.size)])
    H = np.vstack([1 / (1 + np.exp(-W1 @ X)), np.ones((1, x.size))])
    return (W2 @ H).reshape(x.shape)


xs = np.linspace(-2, 2, 81)
gx, gy = np.meshgrid(xs, xs)
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), layout="constrained")
levels = np.linspace(-1.2, 5.2, 17)
for ax, values, title in ((axes[0], g_target(gx, gy), "target  g(x, y) = y^2 + sin x"),
                          (axes[1], predict(gx, gy), "your network (16 sigmoid units)")):
    im = ax.contourf(gx, gy, values, levels=levels, cmap="viridis")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title)
axes[1].plot(points[:, 0], points[:, 1], ".", color="white", markersize=2)
fig.colorbar(im, ax=axes[:2], shrink=0.9, label="g(x, y)")
axes[2].semilogy(history, color="#0072B2")
axes[2].set_xlabel("gradient step")
axes[2].set_ylabel("mean squared error")
axes[2].set_title("training loss")
axes[2].grid(True, which="both", alpha=0.3)
labs.show(fig, "lab7_network_fit")

# %% [markdown]
# **What to look for.** The middle panel should look like the left one: a
# valley along $y = 0$ (the $y^2$ term), deepest near $x = -\pi/2$ and
# rising to the right (the $\sin x$ term). The white dots are the training points; between them the
# network interpolates smoothly. The loss on the right falls by orders of
# magnitude and flattens out: a small network with plain gradient steps.

# %% [markdown]
# ## 7. Exercise 7.4: accumulating in place, as the ChainRules notes do
#
# Your `accum` adds the pullbacks of a variable's uses with `+`. The
# ChainRules notes on gradient accumulation (the course's seed 002) count
# what that costs for `sum_first_and_second(X) = X[1] + X[2]`: the pullback
# of each index writes a fresh array of `X`'s shape ($\bar a$ and $\bar b$:
# zeros with the output's gradient at one position), and $\bar X = \bar a
# + \bar b$ is a third array. **Three allocations.** But $\bar a$ is used
# for nothing else: adding $\bar b$ into it, `ā .+= b̄`, gives $\bar X$
# with **two**. ChainRules calls such an addition `add!!`, a
# *maybe-mutating* add: it writes into its first argument when it may, and
# allocates when it must.
#
# When may it? Only when the array is **ours**: made by this backward pass
# and seen by no one else. Look at your `add` from Exercise 7.3: its
# pullback returns `wobble` itself, the result's gradient. Writing into that
# array would change the gradient of the result, and of the *other* operand,
# which received the same array. A seed passed in by the caller is not
# ours either, nor is a read-only array (`np.broadcast_to` makes those), and
# a float32 buffer cannot hold a float64 sum, nor a `(1, 3)` row a `(2, 3)`
# sum. A sum we had to allocate, on the other hand, is ours from then on.
#
# **Exercise 7.4.** Write `add_bang(total, term, own)`: it returns the pair
# `(total + term, own)`. When `own` is true and `total` is a writeable
# array whose dtype and shape the sum keeps, add the term into it
# (`np.add(total, term, out=total)`) and return it; otherwise return a new
# `total + term`, which is then ours (`own=True`) if it is an array. Plain
# numbers cannot be written into: for them it is `+` with `own=False`.
# The check compares with numpy's `total + term` bit for bit (adding in place
# rounds exactly as `+` does) and watches which arrays you wrote into.

# %%
# BEGIN SOLUTION Exercise 7.4: add!!
def add_bang(total, term, own):
    can_hold = (isinstance(total, np.ndarray) and total.flags.writeable
                and np.result_type(total, term) == total.dtype
                and np.broadcast_shapes(total.shape, np.shape(term)) == total.shape)
    if own and can_hold:
        np.add(total, term, out=total)
        return total, True
    total = total + term
    return total, isinstance(total, np.ndarray)
# END SOLUTION


# %%
labs.check_add_bang(add_bang)

# %% [markdown]
# Now the backward pass itself. `accum_counted` is your `accum` with two
# changes: it starts from the first term instead of from zeros, and it
# counts the arrays it makes (a pullback's result that is not a view of the
# result's gradient, and every sum). `accum_bang` adds with your `add_bang`,
# keeping track of which accumulators are its own: the first term is, unless
# it shares memory with the gradient it came from.

# %%
allocations = {"count": 0}


def made(array, source=None):
    """Count ``array`` when it is a new buffer (not a view of ``source``)."""
    if isinstance(array, np.ndarray) and (source is None or not np.shares_memory(array, source)):
        allocations["count"] += 1
    return array


def accum_counted(x):
    if x.grad is None:
        total = None
        for child, pullback in x.children:
            wobble = accum_counted(child)
            term = made(pullback(wobble), wobble)
            total = term if total is None else made(total + term)
        x.grad = np.zeros_like(x.data) if total is None else total
    return x.grad


def accum_bang(x):
    if x.grad is None:
        total, own = None, False
        for child, pullback in x.children:
            wobble = accum_bang(child)
            term = pullback(wobble)
            fresh = not np.shares_memory(term, wobble)
            made(term, wobble)
            if total is None:
                total, own = term, fresh and term.flags.writeable
            else:
                new_total, own = add_bang(total, term, own)
                if new_total is not total:
                    made(new_total)
                total = new_total
        x.grad = np.zeros_like(x.data) if total is None else total
    return x.grad


def getindex(X, i):
    """X[i] as a tracked scalar; the pullback writes a fresh array, as in the notes."""
    z = TArray(X.data[i])

    def pullback(wobble):
        grad = np.zeros_like(X.data)
        grad[i] = wobble
        return grad

    X.children.append((z, pullback))
    return z


def backward(program, data, accumulate):
    """Run program on a tracked copy of data, seed its result with 1, count allocations."""
    X = TArray(data)
    result = program(X)
    result.grad = np.ones_like(result.data)
    allocations["count"] = 0
    return accumulate(X), allocations["count"]


def sum_first_and_second(X):
    return add(getindex(X, 0), getindex(X, 1))


def mysum(X):  # the notes' second example: total += X[i] for every i
    total = getindex(X, 0)
    for i in range(1, len(X.data)):
        total = add(total, getindex(X, i))
    return total


data = np.arange(1.0, 7.0)
for name, program in (("sum_first_and_second", sum_first_and_second), ("mysum", mysum)):
    plain, n_plain = backward(program, data, accum_counted)
    mine, n_mine = backward(program, data, accum_bang)
    assert np.array_equal(plain, mine)
    print(f"{name:>20}: {n_plain:2} allocations with +, {n_mine:2} with add!!   "
          f"(gradient {mine})")

# %% [markdown]
# The notes' count: 3 against 2 for `sum_first_and_second`. For `mysum`
# over six entries, each index writes a fresh array (6) and `+` adds them
# in 5 more; `add!!` writes the five sums into the first array.
#
# Counting by hand is one view; the memory allocator is another. With `X`
# of a million entries (8 MB) tracemalloc's peak, in units of one such
# array, shows the third array `+` needs while the other two are alive:

# %%
import tracemalloc

big = np.random.default_rng(0).standard_normal(1_000_000)
for accumulate in (accum_counted, accum_bang):
    X = TArray(big)
    result = sum_first_and_second(X)
    result.grad = np.ones_like(result.data)
    tracemalloc.start()
    accumulate(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"{accumulate.__name__:>14}: peak {peak / big.nbytes:.2f} arrays of X's size")

# %% [markdown]
# minirad's reverse sweep has the same option (`in_place=True`),
# and a second one from the notes: `lazy=True` leaves every cotangent as a
# *thunk* (what to add, not yet added) until an input you asked for needs
# it, so a branch that leads to no such input is never computed. Both give
# the same bits as the plain sweep. On a traced program where `x` is used
# three times, and where a second input `d` is not asked for:

# %%
from minirad.exact import cotangents

x0, d0 = np.arange(4.0), np.arange(4.0)
g = trace(lambda x, d: (x * 2.0 + x * 3.0 + x * 4.0).sum() + np.exp(d).sum(), x0, d0)
seed = {g.outputs[0]: np.ones(())}
x_only = [g.index("x")]
for label, options in (("plain", dict()), ("in place", dict(in_place=True)),
                       ("lazy, x wanted", dict(lazy=True, wanted=x_only)),
                       ("both", dict(in_place=True, lazy=True, wanted=x_only))):
    swept = cotangents.reverse_accumulation(g, seed, **options)
    print(f"{label:>14}: {swept.allocations} arrays allocated, {swept.deferred} thunks never "
          f"forced, dx = {swept.values[g.index('x')]}")
print(block_gradient(g, wrt="x", in_place=True, lazy=True))

# %% [markdown]
# **What to look for.** In place, the two sums of `x`'s three terms cost
# nothing; lazily, the branch through `d` (`d`, `exp(d)` and its sum) stays
# three thunks that nobody forces, and their two arrays are never made. The
# last line is the same through `gradient`, the function you would call.
# The notes go one step further: an *inplaceable thunk* adds the pullback
# of `X[i]` straight into the accumulator (`ā[i] += ȳ`), so `mysum` needs
# one array instead of six. Which of your pullbacks could do that, and
# what would it have to be given?

# %% [markdown]
# ## What you learned
#
# * A scalar tracer is operator overloading plus a tape; the backward pass
#   walks the tape in reverse and **adds** contributions.
# * An array operation records one pullback per input: for $Z = XY$,
#   $\bar X = \bar Z Y^{\mathsf T}$ and $\bar Y = X^{\mathsf T} \bar Z$; a
#   pullback is a function because the two rules multiply from different
#   sides.
# * An array of tracked scalars costs one record per scalar operation
#   ($\sim n^3$ for a product); a tracked array costs one, and runs at the
#   speed of compiled linear algebra.
# * Those few rules are enough to train a neural network.
# * Adding into an accumulator in place (`add!!`) saves an allocation, but
#   only an array the backward pass made itself, writeable and able to hold
#   the sum, may be written into.
#
# ## Going further
#
# * Your `accum` recurses from each input towards the result. Rewrite it to
#   walk a tape of array operations in reverse instead, as in Exercise 7.1.
#   Which one handles a graph 5000 operations deep?
# * What does the pullback of `X * Y` (entrywise) store? And of `X @ Y`?
#   Lab 8 counts what reverse mode must keep in memory.
