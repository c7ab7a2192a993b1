"""The array programs the benchmark differentiates, written once for every framework, and
the numpy floors: the same programs' gradients written out by hand.

A program takes a *kit* first (:class:`bench.peers.Kit`: one framework's relu,
cross-entropy, convolution, pooling and loop), so minirad, HIPS autograd, PyTorch
and JAX all run the same arithmetic in the same order.  Only the loop differs:
JAX runs it as ``lax.scan`` (its best configuration), the others in Python.

* :func:`mlp_loss`: the RAD paper's MLP (784-300-300-300-10, ReLU, softmax
  cross-entropy); :func:`mlp_gradient_by_hand` is its floor.
* :func:`relaxation`: ``x <- x + 0.01 (c x - x^3)``, ``steps`` times, on a vector,
  then the sum: six array operations a step (``x * x * x`` is two), so 2,000 steps
  are the 12,000-operation program of issue 30; :func:`relaxation_by_hand` is its floor.
* :func:`convnet_loss`, :func:`irnn_loss`: the NN study's ConvNet and IRNN
  (:mod:`minirad.studies.nn.graph` traces the same networks);
  :func:`irnn_gradient_by_hand` is the IRNN's floor (the study has none).
* :func:`pde_loss`: the reaction-diffusion study's loss (:mod:`minirad.studies.pde`)
  with the stencil's neighbour sums written as products with a constant shift matrix.

>>> import numpy as np
>>> from bench.peers import NUMPY
>>> x, c = np.array([0.5, -1.0]), np.array([1.0, 2.0])
>>> value, gx, gc = relaxation_by_hand(x, c, steps=3)
>>> bool(np.isclose(value, relaxation(NUMPY, x, c, steps=3)))
True
>>> h = 1e-6                                      # one central difference as a check
>>> up, down = relaxation(NUMPY, x + [h, 0], c, 3), relaxation(NUMPY, x - [h, 0], c, 3)
>>> bool(np.isclose(gx[0], (up - down) / (2 * h)))
True
"""

from __future__ import annotations

import math

import numpy as np

#: the relaxation's step size (the 0.01 of ``x <- x + 0.01 (c x - x^3)``)
RATE = 0.01


# ------------------------------------------------------------------------ MLP
def mlp_logits(kit, params, x):
    """ReLU layers, a linear last one, for ``params = [W1, b1, ..., WL, bL]``."""
    h = x
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i < len(params) - 2:
            h = kit.relu(h)
    return h


def mlp_loss(kit, x, labels, *params):
    """Mean softmax cross-entropy of the MLP on a batch."""
    return kit.cross_entropy(mlp_logits(kit, params, x), labels)


def cross_entropy_and_delta(z, labels):
    """The mean softmax cross-entropy of the logits ``z`` (batch, classes) and its
    gradient with respect to ``z``: ``(softmax(z) - one_hot(labels)) / batch``."""
    shifted = z - z.max(axis=1, keepdims=True)
    p = np.exp(shifted)
    total = p.sum(axis=1, keepdims=True)
    rows = np.arange(len(labels))
    loss = np.mean(np.log(total[:, 0]) - shifted[rows, labels])
    p /= total
    p[rows, labels] -= 1
    return loss, p / len(labels)


def mlp_gradient_by_hand(x, labels, *params):
    """[loss, dW1, db1, ...]: the forward and backward pass written out in numpy."""
    activations, pre, h = [x], [], x
    n_layers = len(params) // 2
    for i in range(n_layers):
        z = h @ params[2 * i] + params[2 * i + 1]
        pre.append(z)
        h = np.maximum(z, 0) if i < n_layers - 1 else z
        activations.append(h)
    loss, delta = cross_entropy_and_delta(pre[-1], labels)
    grads = [None] * len(params)
    for i in reversed(range(n_layers)):
        grads[2 * i] = activations[i].T @ delta
        grads[2 * i + 1] = delta.sum(axis=0)
        if i:
            delta = (delta @ params[2 * i].T) * (pre[i - 1] > 0)
    return [loss, *grads]


# ----------------------------------------------------------------- relaxation
def relaxation_step(x, c):
    return x + RATE * (c * x - x * x * x)


def relaxation(kit, x, c, steps: int):
    """``sum(x_steps)`` after ``steps`` steps from ``x``."""
    return kit.repeat(lambda x, _: relaxation_step(x, c), x, steps).sum()


def relaxation_by_hand(x, c, steps: int):
    """[value, d/dx, d/dc] of :func:`relaxation`: each state stored, then the adjoint
    ``x_bar <- x_bar (1 + 0.01 (c - 3 x^2))`` run backwards."""
    states = [x]
    for _ in range(steps):
        x = relaxation_step(x, c)
        states.append(x)
    x_bar, c_bar = np.ones_like(x), np.zeros_like(c)
    for x in reversed(states[:-1]):
        c_bar += RATE * x * x_bar
        x_bar = x_bar * (1 + RATE * (c - 3 * x * x))
    return [states[-1].sum(), x_bar, c_bar]


# ------------------------------------------------------------- ConvNet, IRNN
def convnet_loss(kit, x, labels, *params):
    """The study's ConvNet (:mod:`minirad.studies.nn.convnet_numpy`): four 5x5 convolutions
    with zero padding 2, ReLU, a 2x2 average pool after the second and the fourth,
    then a linear layer."""
    a = x
    for layer in range(4):
        a = kit.relu(kit.conv2d(a, params[2 * layer], params[2 * layer + 1]))
        if layer in (1, 3):
            a = kit.pool(a)
    return kit.cross_entropy(a.reshape(a.shape[0], -1) @ params[8] + params[9], labels)


def irnn_loss(kit, x, labels, w_ih, b_ih, w_hh, b_hh, w, b):
    """The study's IRNN on sequences ``x`` (T, B, D), time first so that every kit
    loops over the leading axis: ``h_t = relu(x_t W_ih + b_ih + h_{t-1} W_hh + b_hh)``."""
    h = kit.repeat(lambda h, x_t: kit.relu(x_t @ w_ih + b_ih + h @ w_hh + b_hh),
                   kit.zeros((x.shape[1], w_hh.shape[0]), x.dtype), len(x), x)
    return kit.cross_entropy(h @ w + b, labels)


def irnn_gradient_by_hand(x, labels, w_ih, b_ih, w_hh, b_hh, w, b):
    """[loss, dW_ih, db_ih, dW_hh, db_hh, dW, db] of :func:`irnn_loss`: backpropagation
    through time written out in numpy."""
    h, hs, masks = np.zeros((x.shape[1], w_hh.shape[0]), x.dtype), [], []
    for x_t in x:
        hs.append(h)
        z = x_t @ w_ih + b_ih + h @ w_hh + b_hh
        masks.append(z > 0)
        h = np.maximum(z, 0)
    loss, delta = cross_entropy_and_delta(h @ w + b, labels)
    dh = delta @ w.T
    grads = [np.zeros_like(a) for a in (w_ih, b_ih, w_hh, b_hh)]
    for x_t, h_prev, mask in zip(reversed(x), reversed(hs), reversed(masks)):
        dz = dh * mask
        grads[0] += x_t.T @ dz
        grads[1] += dz.sum(axis=0)
        grads[2] += h_prev.T @ dz
        grads[3] += dz.sum(axis=0)
        dh = dz @ w_hh.T
    return [loss, *grads, h.T @ delta, delta.sum(axis=0)]


# ------------------------------------------------------------------------ PDE
def pde_constants(p):
    """What :func:`pde_loss` reads besides theta, for a :class:`minirad.studies.pde.Reactor`:
    the shift matrix, theta's selection into the coefficient matrix, the x-profiles,
    phi_0, the target's bump, and per step ``[1, sin pi t_n, cos pi t_n]`` and
    ``sin pi t_{n+1}`` (the target's time factor)."""
    from minirad.studies.pde import initial_state, target

    side = p.side
    shift = np.eye(side, k=1) + np.eye(side, k=-1)
    select = np.zeros((7, 9))  # theta -> coefficient_matrix(theta), row-major 3 x 3
    for k, slot in enumerate((0, 1, 2, 4, 5, 7, 8)):
        select[k, slot] = 1.0
    t = math.pi * p.dt * np.arange(p.n_steps + 1)
    factors = np.stack([np.ones(p.n_steps), np.sin(t[:-1]), np.cos(t[:-1])], axis=1)
    phi0 = initial_state(p)
    bump = target(p, 0.5) - phi0
    return dict(shift=shift, select=select, basis=p.basis, phi0=phi0, bump=bump,
                steps=(factors, np.sin(t[1:])), r=p.ratio, dt=p.dt,
                scale=1.0 / (p.n_steps * p.size))


def pde_loss(kit, k, theta):
    """The study's loss (:func:`minirad.studies.pde.simulate`) at ``theta``, from the
    constants ``k`` of :func:`pde_constants` (as the kit's arrays)."""
    profiles = (theta @ k["select"]).reshape(3, 3).T @ k["basis"]   # C_n = f_n @ profiles
    shift, bump, phi0 = k["shift"], k["bump"], k["phi0"]

    def step(state, inputs):
        phi, total = state
        factors, target_factor = inputs
        diagonal = (1 - 4 * k["r"]) + k["dt"] * (factors @ profiles).reshape(-1, 1)
        phi = diagonal * phi + k["r"] * (shift @ phi + phi @ shift)
        error = phi - (phi0 + target_factor * bump)
        return phi, total + (error * error).sum()

    _, total = kit.repeat(step, (phi0, 0.0), len(k["steps"][0]), k["steps"])
    return total * k["scale"]
