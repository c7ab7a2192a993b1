"""Array programs: minirad against numpy by hand, HIPS autograd, PyTorch and JAX.

Three benchmarks, ratios in one run:

* ``MLP minibatch gradient``: one gradient of the RAD paper's MLP
  (784-300-300-300-10, ReLU, softmax cross-entropy, batch 150, float32).
* ``relaxation x <- x + 0.01 (c x - x^3)``: 2,000 steps on a 961-vector (12,000
  array operations), value and gradient with respect to ``x`` and ``c``: a program
  of many small operations, where a tracer's own cost per operation shows.
* ``sum(X @ Y) gradient``: the lab's TrackedArray example at 100 x 100, by array
  tracing against scalar tracing (``minirad.trace`` of lists of numbers, arranged into object
  arrays of traced numbers, then ``reverse_sweep``).  Goal: array tracing >= 50x faster.

The first two time every method in turns in one process (:mod:`bench.peers`):
the floor (the gradient written out by hand in numpy, :mod:`bench.programs`),
``minirad.trace`` + reverse sweep, minirad's replay of the traced graph
(:func:`minirad.replay` + reverse sweep, traced once before the timing), HIPS
autograd, PyTorch eager and JAX ``jit`` (the loop as ``lax.scan``), all on one
thread; ``first_call_s`` apart from the steady state.  Results must agree with the
floor's, else the row is an error.

    python -m bench.bench_vector           # full sizes
    python -m bench.bench_vector --quick
"""

from __future__ import annotations

import argparse
from functools import partial

import numpy as np

import minirad
from bench.common import median_time, print_results, ratio_goal
from bench.peers import Method, compare, replayed_gradient, value_and_gradient
from bench.programs import mlp_gradient_by_hand, mlp_loss, relaxation, relaxation_by_hand
from minirad.exact import sweeps
from minirad.exact.sweeps import gradient

MLP = "MLP minibatch gradient"
LOOP = "relaxation x <- x + 0.01 (c x - x^3), value and gradient"
MATMUL = "sum(X @ Y) gradient"
SIZES = (784, 300, 300, 300, 10)
MLP_SIZE = "784-300-300-300-10, batch 150"
LOOP_SIZE = "961-vector, 2,000 steps (12,000 ops)"
FLOOR, MINIRAD, REPLAY = ("numpy by hand (floor)", "minirad trace + reverse sweep",
                          "minirad replay of the traced graph")
PEERS = (("HIPS autograd", "autograd"), ("PyTorch eager", "torch"), ("JAX jit", "jax"))
LOOP_PEERS = PEERS[:2] + (("JAX jit (lax.scan)", "jax"),)


def mlp_problem(batch: int, rng=0):
    rng = np.random.default_rng(rng)
    X = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], batch)
    params = []
    for a, b in zip(SIZES, SIZES[1:]):
        params += [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
                   (0.01 * rng.standard_normal(b)).astype(np.float32)]
    return X, labels, params


def methods(floor, program, constants, params, peers=PEERS) -> list[Method]:
    """The floor, minirad, its replay and the peers, for one program."""
    return ([Method(FLOOR, lambda: floor),
             Method(MINIRAD, lambda: value_and_gradient("minirad", program, constants, params)),
             Method(REPLAY, lambda: replayed_gradient(program, constants, params))]
            + [Method(label, partial(value_and_gradient, framework, program, constants, params),
                      framework) for label, framework in peers])


def mlp_rows(batch: int, repeats: int) -> list[dict]:
    X, labels, params = mlp_problem(batch)
    return compare(MLP, f"784-300-300-300-10, batch {batch}",
                   methods(lambda: mlp_gradient_by_hand(X, labels, *params), mlp_loss,
                           (X, labels), params),
                   repeats, rtol=1e-4)


def loop_rows(n: int, steps: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    x, c = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n)
    return compare(LOOP, f"{n}-vector, {steps:,} steps ({6 * steps:,} ops)",
                   methods(lambda: relaxation_by_hand(x, c, steps),
                           partial(relaxation, steps=steps), (), [x, c], LOOP_PEERS),
                   repeats, rtol=1e-10)


def matmul_rows(n: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((n, n)), rng.standard_normal((n, n))

    def arrays():
        return gradient(minirad.trace(lambda X, Y: (X @ Y).sum(), X, Y))

    def scalars():
        def program(x, y):  # lists of traced numbers, as n x n object arrays
            return np.sum(np.array(x, dtype=object).reshape(n, n)
                          @ np.array(y, dtype=object).reshape(n, n))
        g = minirad.trace(program, X.ravel().tolist(), Y.ravel().tolist())
        row = sweeps.reverse_sweep(g).jacobian[0]
        return [row[:n * n].reshape(n, n), row[n * n:].reshape(n, n)]
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
        return mlp_rows(20, 3) + loop_rows(31, 50, 3) + matmul_rows(20, 3)
    return mlp_rows(150, 21) + loop_rows(961, 2000, 11) + matmul_rows(100, 5)


def goals(rows: list[dict]) -> list[dict]:
    """Issue 30's goals for the tracer's cost, at the full sizes, read off this group's
    rows: the loop's trace + gradient at most PyTorch eager's time; the MLP gradient at
    most 1.1x the floor and faster than PyTorch eager; by replay both within 1.2x of
    the floor."""
    return [
        ratio_goal(rows, "12,000-op loop: trace + gradient vs PyTorch eager", LOOP, LOOP_SIZE,
                   MINIRAD, "PyTorch eager", 1.0),
        ratio_goal(rows, "MLP gradient: trace + gradient vs the numpy floor", MLP, MLP_SIZE,
                   MINIRAD, FLOOR, 1.1),
        ratio_goal(rows, "MLP gradient: trace + gradient vs PyTorch eager", MLP, MLP_SIZE,
                   MINIRAD, "PyTorch eager", 1.0),
        ratio_goal(rows, "12,000-op loop: replay vs the numpy floor", LOOP, LOOP_SIZE, REPLAY,
                   FLOOR, 1.2),
        ratio_goal(rows, "MLP gradient: replay vs the numpy floor", MLP, MLP_SIZE, REPLAY,
                   FLOOR, 1.2),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print_results(run(parser.parse_args(argv).quick))


if __name__ == "__main__":
    main()
