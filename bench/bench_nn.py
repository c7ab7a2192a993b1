"""One training iteration per gradient estimator, timed in turns: MLP and ConvNet.

The paper's MLP (784-300-300-300-10, batch 150, float32) and the study's ConvNet,
with each gradient estimator, and the bytes the MLP's backward pass keeps.

An iteration is a forward pass that keeps what the backward pass needs, the
backward pass, and an Adam step. ``vs baseline`` is the time over the baseline's
(exact backprop, batch 150); the issue asks RAD to stay within 1.2x. Every table
times its methods **in turns in one process** (one iteration of each, then the
next round, ``repeats`` rounds; medians), so load from other work falls on all of
them alike and the ratios are not load noise. BLAS runs on one thread while
timing (threadpoolctl, when installed).

* MLP training iteration (numpy floor): the hand-written network of
  :mod:`minirad.studies.nn.mlp_numpy`; ``kept_bytes_per_example`` is what its tape
  holds (6,776 at baseline and 828.5 at f = 0.1, so RAD keeps 0.122x).
* MLP training iteration on the graph: the graph of the forward pass (traced at
  the first iteration, replayed at the others), the estimator injected on it,
  reverse sweep (what ``minirad study nn`` runs by default), with
  ``graph_vs_floor``, its time over the floor's for the same estimator and batch
  (timed in the same turns).
* ConvNet training iteration on the graph: the same for the ConvNet as the study
  trains it (channels 4, 8, 8, 8 on 28x28 images), baseline and the three RAD
  estimators; the floor is :mod:`minirad.studies.nn.convnet_numpy`.

* MLP, ConvNet and IRNN training iteration against the array peers: the
  exact (baseline) iteration of each network the study trains, by the numpy
  floor (the study's hand-written network; for the IRNN, which has none,
  :func:`bench.programs.irnn_gradient_by_hand`), minirad on the graph traced
  afresh at every iteration, minirad's replay (what the study runs: traced at the
  first iteration, replayed at the others, :class:`minirad.studies.nn.graph.Replayed`),
  HIPS autograd,
  PyTorch eager with its Adam and JAX ``jit`` with Adam inside the compiled step
  (:mod:`bench.peers`), ``first_call_s`` apart from the steady state.  The first
  iteration's gradients must agree with the floor's.

    python -m bench.bench_nn              # full run
    python -m bench.bench_nn --quick      # fewer repeats, a tiny ConvNet
    python -m bench.bench_nn --convnet    # only the ConvNet rows
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from bench.common import find_row, goal, in_turns, one_blas_thread, print_results, time_ratio
from bench.peers import Method, compare, training_iteration
from bench.programs import convnet_loss, irnn_gradient_by_hand, irnn_loss, mlp_loss
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn import mlp_numpy, networks
from minirad.studies.nn.study import ESTIMATORS, estimator_batch, estimator_kind
from minirad.studies.nn.training import Adam

BENCHMARK = "MLP training iteration (numpy floor)"
GRAPH_BENCHMARK = "MLP training iteration on the graph (vs the floor)"
CONV_BENCHMARK = "ConvNet training iteration on the graph (vs the floor)"
MLP_SIZE = "784-300-300-300-10"
RAD = ("same_sample", "different_sample", "project")


def _floor_step(name: str, x, y):
    """One iteration of the hand-written MLP; returns it and the bytes it keeps."""
    kind, batch = estimator_kind(name), estimator_batch(name)
    fraction = 1.0 if kind == "exact" else 0.1
    params = mlp_numpy.init_mlp(rng=0)
    optimizer = Adam()
    rng = np.random.default_rng(1)
    kept = []

    def iteration():
        pick = rng.integers(len(y), size=batch)
        _, tape = mlp_numpy.forward(params, x[pick], y[pick], kind, fraction, rng=rng)
        optimizer.step(params, mlp_numpy.backward(params, tape), 1e-4)
        kept[:] = [mlp_numpy.tape_bytes(tape) / batch]

    return iteration, kept


def _engine_step(name: str, engine: str, x, y, net):
    """One iteration (gradient and Adam step) through ``networks.gradient_function``."""
    kind, batch = estimator_kind(name), estimator_batch(name, rules=net.rules)
    grad_fn = networks.gradient_function(net, kind, 0.1, engine)
    params = net.init(0)
    optimizer = Adam()
    rng = np.random.default_rng(1)

    def iteration():
        pick = rng.integers(len(y), size=batch)
        optimizer.step(params, grad_fn(params, x[pick], y[pick], rng)[1], 1e-4)

    return iteration


def _floor_rows(x, y, repeats: int) -> list[dict]:
    steps, kept = {}, {}
    for name in ESTIMATORS:
        steps[name], kept[name] = _floor_step(name, x, y)
    seconds = in_turns(steps, repeats).median_s  # the first call warms up
    return [{"benchmark": BENCHMARK, "size": MLP_SIZE,
             "method": f"{name} (batch {estimator_batch(name)})", "median_s": seconds[name],
             "kept_bytes_per_example": kept[name][0], "baseline": name == "baseline",
             "repeats": repeats} for name in ESTIMATORS]


def _graph_rows(benchmark: str, size: str, net, names, x, y, repeats: int) -> list[dict]:
    # every estimator on the graph and on the floor, all in turns
    steps = {}
    for name in names:
        steps[name, "graph"] = _engine_step(name, "graph", x, y, net)
        steps[name, "floor"] = _engine_step(name, "floor", x, y, net)
    seconds = in_turns(steps, repeats).median_s  # the first call warms up
    rows = []
    for name in names:
        graph, floor = seconds[name, "graph"], seconds[name, "floor"]
        rows.append({"benchmark": benchmark, "size": size,
                     "method": f"graph {name} (batch {estimator_batch(name, rules=net.rules)})",
                     "median_s": graph, "floor_s": floor,
                     "graph_vs_floor": round(graph / floor, 2), "baseline": name == "baseline",
                     "repeats": repeats})
    return rows


PEER_BENCHMARK = "training iteration against the array peers"
PEERS = (("HIPS autograd", "autograd"), ("PyTorch eager", "torch"), ("JAX jit", "jax"))
LEARNING_RATE = 1e-3


def _study_iteration(net, engine: str, params, x, y):
    """The study's exact iteration (``networks.gradient_function``, then its Adam);
    returns ``[loss, *gradients]``, taken before the step."""
    grad_fn, params, optimizer = networks.gradient_function(net, "exact", 1.0, engine), \
        [p.copy() for p in params], Adam()

    def iteration():
        loss, grads = grad_fn(params, x, y, 0)
        optimizer.step(params, grads, LEARNING_RATE)
        return [loss, *grads]
    return iteration


def _traced_iteration(net, params, x, y):
    """The exact iteration with the network traced afresh every time (no replay)."""
    params, optimizer = [p.copy() for p in params], Adam()

    def iteration():
        loss, grads = nn_graph.loss_and_grad(params, x, y, program=net.program)
        optimizer.step(params, grads, LEARNING_RATE)
        return [loss, *grads]
    return iteration


def _hand_iteration(by_hand, params, constants):
    params, optimizer = [p.copy() for p in params], Adam()

    def iteration():
        out = by_hand(*constants, *params)
        optimizer.step(params, out[1:], LEARNING_RATE)
        return out
    return iteration


def peer_rows(networks_to_run, x, images, y, repeats: int) -> list[dict]:
    """One table per network: every method's exact training iteration on one batch, in
    turns; the first iteration's results must agree with the floor's."""
    rows = []
    for net, program, data in networks_to_run:
        params = net.init(0)
        inputs = {"mlp": x, "convnet": images, "irnn": net.inputs(x)}[net.name]
        # the peers' IRNN reads its sequence time first (it loops over the leading axis)
        constants = (np.ascontiguousarray(inputs.swapaxes(0, 1)) if net.name == "irnn"
                     else inputs, y)
        floor = (_hand_iteration(irnn_gradient_by_hand, params, constants) if net.floor is None
                 else _study_iteration(net, "floor", params, inputs, y))
        methods = [Method("numpy by hand (floor)", lambda floor=floor: floor),
                   Method("minirad on the graph", lambda net=net, inputs=inputs, params=params:
                          _traced_iteration(net, params, inputs, y)),
                   Method("minirad replay of the traced graph",
                          lambda net=net, inputs=inputs, params=params:
                          _study_iteration(net, "graph", params, inputs, y))]
        methods += [Method(label, lambda f=framework, program=program, constants=constants,
                           params=params: training_iteration(f, program, constants, params,
                                                             LEARNING_RATE), framework)
                    for label, framework in PEERS]
        rows += compare(PEER_BENCHMARK, f"{net.name} {data}", methods, repeats, rtol=1e-3)
    return rows


def run(quick: bool = False, convnet_only: bool = False) -> list[dict]:
    """One row per estimator and engine; ``median_s`` is seconds per iteration."""
    gen = np.random.default_rng(0)
    x = gen.random((1000, 784), dtype=np.float32)
    y = gen.integers(10, size=1000)
    repeats = 5 if quick else 30
    # the ConvNet as the study trains it (channels 4, 8, 8, 8 on 28x28 images)
    channels = (2, 2, 2, 2) if quick else (4, 8, 8, 8)
    images = gen.random((300, 1, 28, 28), dtype=np.float32)
    conv_size = f"channels {', '.join(map(str, channels))}, 1x28x28"
    rows = []
    with one_blas_thread():
        if not convnet_only:
            rows += _floor_rows(x, y, repeats)
            rows += _graph_rows(GRAPH_BENCHMARK, MLP_SIZE, networks.mlp(), ESTIMATORS, x, y,
                                repeats)
        rows += _graph_rows(CONV_BENCHMARK, conv_size, networks.convnet(channels),
                            ("baseline",) + RAD, images, y[:300], 1 if quick else 11)
    batch = 20 if quick else 150
    nets = [(networks.mlp(), mlp_loss, f"{MLP_SIZE}, batch {batch}"),
            (networks.convnet(channels), convnet_loss, f"{conv_size}, batch {batch}"),
            (networks.irnn(), irnn_loss, f"hidden 100, 28 steps of 28 pixels, batch {batch}")]
    if convnet_only:
        nets = nets[1:2]
    rows += peer_rows(nets, x[:batch], images[:batch], y[:batch], 3 if quick else 11)
    return rows


#: the fewest rounds in turns whose median ratio a goal reads (``--quick`` runs fewer)
GOAL_REPEATS = 7


def goals(rows: list[dict]) -> list[dict]:
    """Issue 13's goals: a RAD iteration on the graph (what the study trains with)
    within 1.2x of the baseline's, for the MLP and the study's ConvNet; RAD's MLP
    tape at most 0.13x of the baseline's bytes.  Timings of fewer than
    :data:`GOAL_REPEATS` rounds, or of the ``--quick`` ConvNet, are not measured."""
    out = []
    conv_size = "channels 4, 8, 8, 8, 1x28x28"
    for benchmark, size, net in ((GRAPH_BENCHMARK, MLP_SIZE, "MLP"),
                                 (CONV_BENCHMARK, conv_size, "ConvNet")):
        base = find_row(rows, benchmark, size, "graph baseline (batch 150)")
        enough = base is not None and base.get("repeats", 0) >= GOAL_REPEATS
        for name in RAD:
            out.append(goal(f"{net} ({size}) on the graph: {name} iteration vs baseline",
                            time_ratio(rows, benchmark, size, f"graph {name} (batch 150)",
                                       "graph baseline (batch 150)") if enough else None, 1.2))
    base = find_row(rows, BENCHMARK, MLP_SIZE, "baseline (batch 150)")
    rad = find_row(rows, BENCHMARK, MLP_SIZE, "different_sample (batch 150)")
    out.append(goal("MLP: RAD's kept bytes at f = 0.1 vs the baseline's",
                    None if base is None or rad is None
                    else rad["kept_bytes_per_example"] / base["kept_bytes_per_example"], 0.13))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, a tiny ConvNet")
    parser.add_argument("--convnet", action="store_true", help="only the ConvNet rows")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    print_results(run(quick=args.quick, convnet_only=args.convnet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
