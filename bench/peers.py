"""The array frameworks minirad is compared with, each in its best configuration here,
and the table of one comparison.

The peers are optional (the ``bench`` extra; the library never needs them): HIPS
autograd, PyTorch on the CPU (eager) and JAX on the CPU (``jit``).  Everything runs
on one thread, as numpy's BLAS does while the benchmark times:
``torch.set_num_threads(1)``, and XLA's one-thread flags, set before JAX is first
imported (XLA reads them once, so import JAX only through :func:`load`).

A :class:`Kit` is one framework's spelling of what :mod:`bench.programs` uses,
so every framework runs the same program.  :func:`value_and_gradient` and
:func:`training_iteration` turn a program into the call to time, and
:func:`compare` times a list of :class:`Method` in turns and makes the rows.

>>> kit = NUMPY
>>> float(kit.cross_entropy(np.zeros((2, 4)), np.array([0, 3])))   # log 4
1.3862943611198906
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from bench.common import NOT_BUILT, SKIPPED, in_turns, one_blas_thread, version

#: framework -> the distribution pip installs it from
PACKAGES = {"autograd": "autograd", "torch": "torch", "jax": "jax"}
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def installed(framework: str) -> bool:
    return version(PACKAGES[framework]) is not None


def load(framework: str):
    """The framework's module, set up to run on one thread."""
    if framework == "jax":
        if "jax" not in sys.modules:
            flags = os.environ.get("XLA_FLAGS", "")
            os.environ["XLA_FLAGS"] = f"{flags} {XLA_ONE_THREAD}".strip()
        import jax

        jax.config.update("jax_enable_x64", True)  # the float64 programs stay float64
        return jax
    if framework == "torch":
        import torch

        torch.set_num_threads(1)
        return torch
    if framework == "autograd":
        import autograd

        return autograd
    raise ValueError(f"framework must be one of {', '.join(PACKAGES)}, not {framework!r}")


# ------------------------------------------------------------------------ kits
@dataclass(frozen=True)
class Kit:
    """What the benchmark programs need, in one framework's words."""

    name: str
    asarray: Callable        # a numpy array -> the framework's array
    zeros: Callable          # (shape, dtype)
    relu: Callable
    cross_entropy: Callable  # (logits, integer labels) -> the mean softmax cross-entropy
    conv2d: Callable         # (images, kernels, biases): 5x5 kernels, zero padding 2
    pool: Callable           # 2x2 average pool
    repeat: Callable         # (step, carry, n, xs=None): carry <- step(carry, xs[i]), n times


def python_loop(step, carry, n: int, xs=None):
    for i in range(n):
        row = None if xs is None else (tuple(x[i] for x in xs) if isinstance(xs, tuple)
                                       else xs[i])
        carry = step(carry, row)
    return carry


def pool_by_reshape(a):
    b, c, h, w = a.shape
    return a.reshape(b, c, h // 2, 2, w // 2, 2).mean(axis=(3, 5))


def _numpy_cross_entropy(z, labels):
    shifted = z - z.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(labels)), labels].mean()


def _numpy_kit() -> Kit:
    from minirad.studies.nn.convnet_numpy import conv2d

    return Kit("numpy", np.asarray, np.zeros, lambda x: np.maximum(x, 0),
               _numpy_cross_entropy, conv2d, pool_by_reshape, python_loop)


NUMPY = _numpy_kit()


def minirad_kit() -> Kit:
    # the tracer's own rules of array functions
    from minirad.tracing.ops import relu
    from minirad.tracing.rules import avg_pool2d, conv2d, softmax_cross_entropy

    return Kit("minirad", lambda a: a, np.zeros, relu, softmax_cross_entropy,
               lambda x, k, b: conv2d(x, k, padding=2) + b.reshape(1, -1, 1, 1),
               lambda a: avg_pool2d(a, 2), python_loop)


def _autograd_kit() -> Kit:
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp

    def cross_entropy(z, labels):
        logp = z - logsumexp(z, axis=1, keepdims=True)
        return -anp.mean(logp[np.arange(len(labels)), labels])

    def conv2d(x, kernel, bias):
        # autograd has no 2-D convolution of its own that is fast: patches (im2col) by
        # slicing, then one matrix product, as the numpy floor does
        b, c, h, w = x.shape
        padded = anp.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="constant")
        cols = anp.stack([padded[:, :, i:i + h, j:j + w] for i in range(5) for j in range(5)],
                         axis=2).reshape(b, c * 25, h * w)
        out = anp.matmul(kernel.reshape(len(kernel), -1), cols) + bias[:, None]
        return out.reshape(b, len(kernel), h, w)

    return Kit("autograd", lambda a: a, anp.zeros, lambda x: anp.maximum(x, 0),
               cross_entropy, conv2d, pool_by_reshape, python_loop)


def _torch_kit() -> Kit:
    torch = load("torch")
    functional = torch.nn.functional
    return Kit("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)),
               lambda shape, dtype: torch.zeros(shape, dtype=dtype), torch.relu,
               functional.cross_entropy,
               lambda x, k, b: functional.conv2d(x, k, b, padding=2),
               lambda a: functional.avg_pool2d(a, 2), python_loop)


def _jax_kit() -> Kit:
    jax = load("jax")
    import jax.numpy as jnp

    def cross_entropy(z, labels):
        logp = jax.nn.log_softmax(z, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    def conv2d(x, kernel, bias):
        return jax.lax.conv_general_dilated(x, kernel, (1, 1), ((2, 2), (2, 2))) \
            + bias[None, :, None, None]

    def scan(step, carry, n, xs=None):
        return jax.lax.scan(lambda c, x: (step(c, x), None), carry, xs, length=n)[0]

    return Kit("jax", jnp.asarray, jnp.zeros, jax.nn.relu, cross_entropy, conv2d,
               pool_by_reshape, scan)


def kit(framework: str) -> Kit:
    return {"autograd": _autograd_kit, "torch": _torch_kit, "jax": _jax_kit}[framework]()


def converted(value, to: Callable):
    """``value`` with every numpy array in it (in dicts, tuples, lists) passed to ``to``."""
    if isinstance(value, np.ndarray):
        return to(value)
    if isinstance(value, dict):
        return {key: converted(v, to) for key, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(converted(v, to) for v in value)
    return value


# ---------------------------------------------------------- what is timed
def value_and_gradient(framework: str, program, constants, params) -> Callable[[], list]:
    """A call returning ``[value, d value / d param for each of params]`` of
    ``program(kit, *constants, *params)`` by ``framework``'s reverse mode
    (``"minirad"``: trace, then the reverse sweep)."""
    params = list(params)
    if framework == "minirad":
        import minirad
        from minirad.exact.sweeps import gradient

        tools = minirad_kit()

        def call():
            g = minirad.trace(lambda *ps: program(tools, *constants, *ps), *params)
            return [g.values[g.outputs[0]], *gradient(g)]
        return call
    tools = kit(framework)
    inputs = converted(list(constants), tools.asarray)
    if framework == "torch":
        def call():
            leaves = [tools.asarray(p).requires_grad_() for p in params]
            value = program(tools, *inputs, *leaves)
            value.backward()
            return [value.detach(), *(leaf.grad for leaf in leaves)]
        return call
    if framework == "autograd":
        import autograd

        both = autograd.value_and_grad(lambda ps: program(tools, *inputs, *ps))

        def call():
            value, grads = both(params)
            return [value, *grads]
        return call
    jax = load("jax")
    n = len(inputs)
    both = jax.jit(jax.value_and_grad(lambda *a: program(tools, *a),
                                      argnums=tuple(range(n, n + len(params)))))
    arrays = [tools.asarray(p) for p in params]

    def call():
        value, grads = jax.block_until_ready(both(*inputs, *arrays))
        return [value, *grads]
    return call


def replayed_gradient(program, constants, params) -> Callable[[], list]:
    """A call returning what ``value_and_gradient("minirad", ...)`` returns, by replay:
    the program is traced once here (not timed), with the constants as arguments that
    are not differentiated; each call replays the graph at the same arguments
    (:func:`minirad.replay`, as a training loop replays it at new ones) and sweeps it."""
    import minirad
    from minirad.exact.sweeps import gradient

    tools, constants, params = minirad_kit(), list(constants), list(params)
    arguments = [*constants, *params]
    g = minirad.trace(lambda *a: program(tools, *a), *arguments,
                      wrt=range(len(constants), len(arguments)))

    def call():
        h = minirad.replay(g, *arguments)
        return [h.values[h.outputs[0]], *gradient(h)]
    return call


def training_iteration(framework: str, program, constants, params, lr: float):
    """One training iteration of ``program(kit, *constants, *params)`` by ``framework``
    (autograd, torch, jax): value and gradient, then an Adam step on the parameters
    (PyTorch's own optimizer; JAX's written into the compiled step; autograd's arrays
    by :class:`minirad.studies.nn.training.Adam`).  The call returns ``[value, *gradients]``
    of that iteration, taken before the step."""
    params = [p.copy() for p in params]
    if framework == "autograd":
        from minirad.studies.nn.training import Adam

        gradient, optimizer = value_and_gradient("autograd", program, constants, params), Adam()

        def call():
            out = gradient()
            optimizer.step(params, out[1:], lr)
            return out
        return call
    tools = kit(framework)
    inputs = converted(list(constants), tools.asarray)
    if framework == "torch":
        torch = load("torch")
        leaves = [tools.asarray(p).requires_grad_() for p in params]
        optimizer = torch.optim.Adam(leaves, lr=lr)

        def call():
            optimizer.zero_grad(set_to_none=True)
            value = program(tools, *inputs, *leaves)
            value.backward()
            out = [value.detach(), *(leaf.grad for leaf in leaves)]
            optimizer.step()
            return out
        return call
    jax = load("jax")
    import jax.numpy as jnp

    n = len(inputs)
    both = jax.value_and_grad(lambda *a: program(tools, *a),
                              argnums=tuple(range(n, n + len(params))))

    @jax.jit
    def step(inputs, state):
        params, m, v, t = state
        value, grads = both(*inputs, *params)
        t = t + 1
        m = [0.9 * mi + 0.1 * g for mi, g in zip(m, grads)]
        v = [0.999 * vi + 0.001 * g * g for vi, g in zip(v, grads)]
        c1, c2 = 1 - 0.9 ** t, 1 - 0.999 ** t
        params = [p - (lr * (mi / c1) / (jnp.sqrt(vi / c2) + 1e-8)).astype(p.dtype)
                  for p, mi, vi in zip(params, m, v)]
        return (params, m, v, t), value, grads

    arrays = [tools.asarray(p) for p in params]
    # the step count as a typed array: a Python 0 would compile the step a second time
    state = [(arrays, [jnp.zeros_like(a) for a in arrays], [jnp.zeros_like(a) for a in arrays],
              jnp.zeros((), jnp.int32))]

    def call():
        state[0], value, grads = jax.block_until_ready(step(inputs, state[0]))
        return [value, *grads]
    return call


# ------------------------------------------------------------------ the table
@dataclass(frozen=True)
class Method:
    """One row of a comparison: ``make()`` builds the call to time (not timed); a peer
    names its ``framework`` (shown as skipped when that is not installed);
    ``not_run`` says why a method is not run at this size."""

    label: str
    make: Callable[[], Callable[[], list]] | None
    framework: str | None = None
    not_run: str | None = None


def agree(a: list, b: list, rtol: float) -> bool:
    """Whether two results (value and gradients, in any framework's arrays) are equal:
    each array's largest difference at most ``rtol`` times its largest entry in ``b``
    (a scale that neither zero gradients behind a ReLU nor tiny entries defeat)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape or np.max(np.abs(x - y)) > rtol * np.max(np.abs(y)):
            return False
    return True


def compare(benchmark: str, size, methods: list[Method], repeats: int,
            rtol: float) -> list[dict]:
    """Time the methods in turns (:func:`bench.common.in_turns`) and make their rows.

    The first method is the floor: ``vs baseline`` is taken against it, and every other
    method's first result must equal its first result to ``rtol`` (:func:`agree`; every
    method starts from the same inputs), or the row is an error.  ``first_call_s`` is the
    first call (JAX compiles there, PyTorch warms up), ``median_s`` the median of the
    ``repeats`` rounds after it and ``min_s`` their minimum (the steadier figure on a
    loaded machine).
    """
    rows, calls = [], {}
    for method in methods:
        row = {"benchmark": benchmark, "size": size, "method": method.label, "median_s": None}
        rows.append(row)
        if method.not_run is not None:
            row["status"] = method.not_run
        elif method.make is None:
            row["status"] = NOT_BUILT
        elif method.framework is not None and not installed(method.framework):
            row.update(status=SKIPPED, note=f"pip install {PACKAGES[method.framework]} "
                                            "(or pip install -e .[bench])")
        else:
            try:
                calls[method.label] = method.make()
            except Exception as error:  # noqa: BLE001 - a broken peer must not end the table
                row["status"] = f"error: {type(error).__name__}: {str(error)[:200]}"
    with one_blas_thread() as threads:
        turns = in_turns(calls, repeats)
    floor = turns.first_result.get(methods[0].label)
    for row in rows:
        label = row["method"]
        row["baseline"] = label == methods[0].label
        if label in turns.errors:
            row["status"] = f"error: {turns.errors[label]}"
        if label not in turns.median_s:
            continue
        row.update(median_s=turns.median_s[label], first_call_s=turns.first_s[label],
                   min_s=turns.min_s[label], repeats=repeats, status="ok")
        if row["baseline"]:
            row["note"] = f"the floor; in turns with the rows below, BLAS {threads}"
        if floor is not None and not agree(turns.first_result[label], floor, rtol):
            row["status"] = "error: the result differs from the floor's"
    return rows
