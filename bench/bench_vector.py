"""The vector LCG against hand-written numpy and against scalar tracing.

Two benchmarks, ratios in one run:

* ``MLP minibatch gradient``: one gradient of the RAD paper's MLP
  (784-300-300-300-10, ReLU, softmax cross-entropy, batch 150, float32) by
  ``minirad.trace`` + reverse sweep (``minirad.exact.sweeps.gradient``), against the
  same forward and backward pass written by hand in numpy (the floor: no
  graph, no dispatch), and against PyTorch on the CPU when it is installed.
  Goal: minirad within 1.3x of the hand-written pass.
* ``sum(X @ Y) gradient``: the lab's TrackedArray example at 100 x 100, by
  array tracing against scalar tracing (``minirad.trace`` of lists of numbers,
  arranged into object arrays of traced numbers, then ``reverse_sweep``).
  Goal: array tracing >= 50x faster.

Gradients must agree between methods (else the row is an error).

    python -m bench.bench_vector           # full sizes
    python -m bench.bench_vector --quick
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import statistics
import time

import numpy as np

from bench.common import median_time, print_results, skipped_row, version
from minirad import trace
from minirad.exact import sweeps
from minirad.exact.sweeps import gradient
from minirad.tracing.arrays import softmax_cross_entropy
from minirad.tracing.ops import relu

MLP = "MLP minibatch gradient"
MATMUL = "sum(X @ Y) gradient"
SIZES = (784, 300, 300, 300, 10)


def mlp_problem(batch: int, rng=0):
    rng = np.random.default_rng(rng)
    X = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], batch)
    params = []
    for a, b in zip(SIZES, SIZES[1:]):
        params += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
                   (0.01 * rng.standard_normal(b)).astype(np.float32)]
    return X, labels, params


def mlp_loss(X, labels, *params):
    h = X
    for i in range(0, len(params), 2):
        h = h @ params[i] + params[i + 1]
        if i < len(params) - 2:
            h = relu(h)
    return softmax_cross_entropy(h, labels)


def minirad_gradient(X, labels, params):
    g = trace(mlp_loss, X, labels, *params, wrt=range(2, 2 + len(params)))
    return gradient(g)


def numpy_gradient(X, labels, params):
    """Forward and backward by hand: what any framework's work reduces to."""
    activations, pre = [X], []
    h = X
    n_layers = len(params) // 2
    for i in range(n_layers):
        z = h @ params[2 * i] + params[2 * i + 1]
        pre.append(z)
        h = np.maximum(z, 0) if i < n_layers - 1 else z
        activations.append(h)
    z = pre[-1]
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1
    delta = p / len(labels)
    grads = [None] * len(params)
    for i in reversed(range(n_layers)):
        grads[2 * i] = activations[i].T @ delta
        grads[2 * i + 1] = delta.sum(axis=0)
        if i:
            delta = (delta @ params[2 * i].T) * (pre[i - 1] > 0)
    return grads


def torch_gradient(torch, X, labels, params):
    tensors = [torch.from_numpy(p).requires_grad_() for p in params]
    h = torch.from_numpy(X)
    for i in range(0, len(tensors), 2):
        h = h @ tensors[i] + tensors[i + 1]
        if i < len(tensors) - 2:
            h = torch.relu(h)
    loss = torch.nn.functional.cross_entropy(h, torch.from_numpy(labels))
    loss.backward()
    return [t.grad.numpy() for t in tensors]


def _agree(a, b) -> bool:
    return all(np.allclose(x, y, rtol=1e-3, atol=1e-5) for x, y in zip(a, b))


@contextlib.contextmanager
def one_blas_thread():
    """BLAS on one thread while timing, when threadpoolctl is installed: on a shared
    2-core machine a multithreaded BLAS waits for its slowest thread, and those waits,
    not the work, then dominate both methods' times.  Yields a description."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield "threads as configured (threadpoolctl not installed)"
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield "limited to 1 thread"


def interleaved_times(functions, repeats: int):
    """Wall times of each function, run in turn ``repeats`` times: on a shared machine the
    load then falls on all of them alike.  Returns (medians, minima, last results)."""
    times = [[] for _ in functions]
    results = [None] * len(functions)
    for _ in range(repeats):
        for i, fn in enumerate(functions):
            gc.collect()
            start = time.perf_counter()
            results[i] = fn()
            times[i].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times], [min(t) for t in times], results


def mlp_rows(batch: int, repeats: int) -> list[dict]:
    X, labels, params = mlp_problem(batch)
    size = f"784-300-300-300-10, batch {batch}"
    with one_blas_thread() as threads:
        (t_mine, t_np), (best_mine, best_np), (mine, by_hand) = interleaved_times(
            [lambda: minirad_gradient(X, labels, params),
             lambda: numpy_gradient(X, labels, params)], repeats)
    rows = [{"benchmark": MLP, "size": size, "method": "minirad trace + reverse sweep",
             "median_s": t_mine, "repeats": repeats, "min s": best_mine},
            {"benchmark": MLP, "size": size, "method": "numpy forward + backward by hand (floor)",
             "median_s": t_np, "repeats": repeats, "min s": best_np,
             "note": f"minirad / numpy: {t_mine / t_np:.2f}x by medians, "
                     f"{best_mine / best_np:.2f}x by minima (goal <= 1.3x); BLAS {threads}"}]
    if not _agree(mine, by_hand):
        rows[1]["status"] = "error: gradients disagree with minirad's"
    if version("torch") is None:
        rows.append(skipped_row(MLP, size, "PyTorch CPU autograd", "torch"))
    else:
        import torch

        t_torch, theirs = median_time(lambda: torch_gradient(torch, X, labels, params),
                                      repeats)
        rows.append({"benchmark": MLP, "size": size, "method": "PyTorch CPU autograd",
                     "median_s": t_torch, "repeats": repeats,
                     "status": "ok" if _agree(mine, theirs) else
                     "error: gradients disagree with minirad's"})
    return rows


def matmul_rows(n: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((n, n)), rng.standard_normal((n, n))

    def arrays():
        return gradient(trace(lambda X, Y: (X @ Y).sum(), X, Y))

    def scalars():
        def program(x, y):  # lists of traced numbers, as n x n object arrays
            return np.sum(np.array(x, dtype=object).reshape(n, n)
                          @ np.array(y, dtype=object).reshape(n, n))
        g = trace(program, X.ravel().tolist(), Y.ravel().tolist())
        row = sweeps.reverse_sweep(g).jacobian[0]
        return [row[:n * n].reshape(n, n), row[n * n:].reshape(n, n)]
    with one_blas_thread():
        t_array, a = median_time(arrays, repeats)
        t_scalar, s = median_time(scalars, 1)
    size = f"{n} x {n}"
    rows = [{"benchmark": MATMUL, "size": size, "method": "minirad array trace + gradient",
             "median_s": t_array, "repeats": repeats},
            {"benchmark": MATMUL, "size": size, "method": "minirad scalar trace + reverse_sweep",
             "median_s": t_scalar, "repeats": 1,
             "note": f"array tracing is {t_scalar / t_array:.0f}x faster (goal >= 50x)"}]
    if not all(np.allclose(x, y) for x, y in zip(a, s)):
        rows[1]["status"] = "error: gradients disagree with array tracing's"
    return rows


def run(quick: bool = False) -> list[dict]:
    if quick:
        return mlp_rows(20, 3) + matmul_rows(20, 3)
    return mlp_rows(150, 21) + matmul_rows(100, 5)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print_results(run(parser.parse_args(argv).quick))


if __name__ == "__main__":
    main()
