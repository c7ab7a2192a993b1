"""One training iteration of the paper's MLP (784-300-300-300-10, batch 150, float32)
with each gradient estimator, and the bytes its backward pass keeps.

An iteration is a forward pass that keeps what the backward pass needs, the
backward pass, and an Adam step, on the hand-written numpy network of
:mod:`minirad.studies.mlp_numpy`. ``vs minirad`` is the time over the
baseline's (the issue asks RAD to stay within 1.2x); ``kept_bytes_per_example``
is what the tape holds (6,776 at baseline and 828.5 at f = 0.1, so RAD keeps
0.122x). BLAS runs on one thread while timing (threadpoolctl, when installed).

    python -m bench.bench_nn            # full run
    python -m bench.bench_nn --quick    # fewer repeats
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

from bench.common import median_time, print_results
from minirad.studies import mlp_numpy
from minirad.studies.nn import ESTIMATORS, estimator_batch, estimator_kind
from minirad.studies.training import Adam

BENCHMARK = "MLP training iteration (numpy floor)"


def _one_thread():
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _time_estimator(name: str, x, y, repeats: int) -> dict:
    kind, batch = estimator_kind(name), estimator_batch(name)
    fraction = 1.0 if kind == "exact" else 0.1
    params = mlp_numpy.init_mlp(rng=0)
    optimizer = Adam()
    rng = np.random.default_rng(1)

    def iteration():
        pick = rng.integers(len(y), size=batch)
        _, tape = mlp_numpy.forward(params, x[pick], y[pick], kind, fraction, rng=rng)
        optimizer.step(params, mlp_numpy.backward(params, tape), 1e-4)
        return tape

    iteration()  # warm up
    seconds, tape = median_time(iteration, repeats)
    return {"benchmark": BENCHMARK, "size": "784-300-300-300-10",
            "method": f"{name} (batch {batch})", "median_s": seconds,
            "kept_bytes_per_example": mlp_numpy.tape_bytes(tape) / batch,
            "baseline": name == "baseline"}


def run(quick: bool = False) -> list[dict]:
    """One row per estimator; ``median_s`` is seconds per iteration."""
    gen = np.random.default_rng(0)
    x = gen.random((1000, 784), dtype=np.float32)
    y = gen.integers(10, size=1000)
    with _one_thread():
        return [_time_estimator(name, x, y, 5 if quick else 30) for name in ESTIMATORS]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print_results(run(quick="--quick" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
