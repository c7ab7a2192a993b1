"""One training iteration of the paper's MLP (784-300-300-300-10, batch 150, float32)
with each gradient estimator, and the bytes its backward pass keeps.

An iteration is a forward pass that keeps what the backward pass needs, the
backward pass, and an Adam step, on the hand-written numpy network of
:mod:`minirad.studies.mlp_numpy`. ``vs minirad`` is the time over the
baseline's (the issue asks RAD to stay within 1.2x); ``kept_bytes_per_example``
is what the tape holds (6,776 at baseline and 828.5 at f = 0.1, so RAD keeps
0.122x). BLAS runs on one thread while timing (threadpoolctl, when installed).

The second group times the same iteration on the traced vector LCG (trace the
forward pass, inject the estimator on the graph, reverse sweep: what
``minirad study nn`` runs for the MLP by default) and gives ``graph_vs_floor``,
its time over the floor's for the same estimator and batch. The third group does
the same for the ConvNet as the study trains it (channels 4, 8, 8, 8 on 28x28
images), baseline and different sample, three repeats.

    python -m bench.bench_nn            # full run
    python -m bench.bench_nn --quick    # fewer repeats
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

from bench.common import median_time, print_results
from minirad.studies import mlp_numpy, networks
from minirad.studies.nn import ESTIMATORS, estimator_batch, estimator_kind
from minirad.studies.training import Adam

BENCHMARK = "MLP training iteration (numpy floor)"
GRAPH_BENCHMARK = "MLP training iteration on the graph (vs the floor)"
CONV_BENCHMARK = "ConvNet training iteration on the graph (vs the floor)"


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


def _engine_iteration(name: str, engine: str, x, y, net=None):
    """One iteration (gradient and Adam step) through ``networks.gradient_function``."""
    net = networks.mlp() if net is None else net
    kind, batch = estimator_kind(name), estimator_batch(name, rules=net.rules)
    grad_fn = networks.gradient_function(net, kind, 0.1, engine)
    params = net.init(0)
    optimizer = Adam()
    rng = np.random.default_rng(1)

    def iteration():
        pick = rng.integers(len(y), size=batch)
        optimizer.step(params, grad_fn(params, x[pick], y[pick], rng)[1], 1e-4)

    iteration()  # warm up
    return iteration


def _graph_row(name: str, x, y, repeats: int, net=None, size="784-300-300-300-10") -> dict:
    # the two engines in turn, repeat after repeat, so load from other work falls on both
    graph_step = _engine_iteration(name, "graph", x, y, net)
    floor_step = _engine_iteration(name, "floor", x, y, net)
    graph_times, floor_times = [], []
    for _ in range(repeats):
        graph_times.append(median_time(graph_step, 1)[0])
        floor_times.append(median_time(floor_step, 1)[0])
    graph, floor = float(np.median(graph_times)), float(np.median(floor_times))
    batch = estimator_batch(name, rules=(net or networks.mlp()).rules)
    return {"benchmark": GRAPH_BENCHMARK if net is None else CONV_BENCHMARK, "size": size,
            "method": f"graph {name} (batch {batch})", "median_s": graph,
            "floor_s": floor, "graph_vs_floor": round(graph / floor, 2),
            "baseline": name == "baseline"}


def run(quick: bool = False) -> list[dict]:
    """One row per estimator and engine; ``median_s`` is seconds per iteration."""
    gen = np.random.default_rng(0)
    x = gen.random((1000, 784), dtype=np.float32)
    y = gen.integers(10, size=1000)
    repeats = 5 if quick else 30
    # the ConvNet as the study trains it (channels 4, 8, 8, 8 on 28x28 images)
    channels = (2, 2, 2, 2) if quick else (4, 8, 8, 8)
    conv = networks.convnet(channels)
    images = gen.random((300, 1, 28, 28), dtype=np.float32)
    with _one_thread():
        rows = [_time_estimator(name, x, y, repeats) for name in ESTIMATORS]
        rows += [_graph_row(name, x, y, repeats) for name in ESTIMATORS]
        size = f"channels {', '.join(map(str, channels))}, 1x28x28"
        return rows + [_graph_row(name, images, y[:300], 1 if quick else 3, conv, size)
                       for name in ("baseline", "different_sample")]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print_results(run(quick="--quick" in argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
