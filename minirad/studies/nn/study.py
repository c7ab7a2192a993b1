"""Case study 1 of the RAD paper (Sec. 4) at laptop scale: neural networks on
real MNIST trained with five gradient estimators at equal memory.

Estimators (all at minibatch 150 except the last; fraction f = 0.1):

* ``baseline``: exact backprop;
* ``same_sample``: one set of kept activation indices for the whole batch;
* ``different_sample``: independent indices for every example;
* ``project``: a Rademacher projection of each layer input;
* ``reduced_batch``: exact backprop on the smaller batch with the same memory
  (:func:`~minirad.studies.nn.memory.equal_memory_batch`: 18 for the MLP).

A sixth, ``different_project`` (a Rademacher projection per example, the
paper's Appendix A), trains only for the paper's Figure 9
(:mod:`minirad.studies.nn.figures`).

Only the stored input of each linear (or convolutional) layer is randomized;
the adjoint passes exactly through ``W^T`` and the ReLU masks (paper Sec. 4.2).
The study writes into its folder

* ``nn_training.png``: the MLP's training loss and test accuracy (Figure 6);
* ``nn_noise_mlp.png`` and ``nn_noise_convnet.png``: per-layer gradient noise
  against retained memory for RAD and for smaller batches (Figure 5);
* ``nn_study.md``: Table 1 from the rules beside the paper's, memory counted
  and measured, final losses and accuracies, and the orderings observed.

Run it with ``minirad study nn [--quick] [-o DIR]``.

>>> StudyConfig.quick().iterations, StudyConfig().iterations
(150, 1000)
"""

from __future__ import annotations

import contextlib
import os
import time
import tracemalloc
from dataclasses import dataclass, field, replace

import numpy as np

from ...graph.files import write_atomically
from . import budget, convnet_numpy, memory, networks, verdicts
from . import mlp_numpy as floor
from . import report as nn_report
from .data import mnist_split
from .noise import Setting, full_gradient, gradient_noise
from .training import train

__all__ = ["ALL_ESTIMATORS", "ESTIMATORS", "PAPER_HYPERPARAMETERS", "StudyConfig",
           "budget_allocation", "convnet_noise", "estimator_batch", "estimator_kind",
           "measured_bytes", "mlp_noise", "one_blas_thread", "run_budget_study", "run_study",
           "train_estimator", "train_network", "train_other"]

ESTIMATORS = ("baseline", "same_sample", "different_sample", "project", "reduced_batch")
#: with Appendix A's "different project", which only the paper's Figure 9 trains
ALL_ESTIMATORS = ESTIMATORS[:4] + ("different_project",) + ESTIMATORS[4:]

# (learning rate, weight decay) released with the paper for MNIST, tuned per estimator
PAPER_HYPERPARAMETERS = {
    "baseline": (1.35e-3, 4.07e-7),
    "same_sample": (4.52e-4, 4.06e-6),
    "different_sample": (9.34e-4, 1.25e-6),
    "project": (5.27e-4, 1.01e-3),
    "reduced_batch": (6.45e-4, 5.69e-5),
}

# Figure 6's claim for the MNIST MLP: final training loss in this order
PAPER_ORDER = ("baseline", "different_sample", "reduced_batch", "same_sample")


def _check_estimator(name: str) -> str:
    if name not in ALL_ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ALL_ESTIMATORS)}, not {name!r}")
    return name


def estimator_kind(name: str) -> str:
    """How the estimator keeps layer inputs (see :mod:`minirad.studies.nn.activations`)."""
    _check_estimator(name)
    return "exact" if name in ("baseline", "reduced_batch") else name


def estimator_batch(name: str, batch: int = 150, fraction: float = 0.1,
                    sizes=floor.PAPER_SIZES, rules: memory.Network | None = None) -> int:
    """The minibatch an estimator trains with; the reduced batch matches RAD's memory
    (of the MLP with ``sizes``, or of the network ``rules``).

    >>> estimator_batch("reduced_batch"), estimator_batch("project")
    (18, 150)
    """
    if _check_estimator(name) == "reduced_batch":
        return memory.equal_memory_batch(rules or memory.mlp(sizes), fraction, batch)
    return batch


@dataclass(frozen=True)
class StudyConfig:
    """Sizes of one run (the paper: 20,000 iterations on 60,000 images, x0.6 every 2,000;
    the default keeps its ten decays in 1,000 iterations on 4,000 images)."""

    iterations: int = 1000
    decay_every: int = 100
    seeds: tuple = (0, 1, 2)
    batch: int = 150
    fraction: float = 0.1
    evaluations: int = 25
    sizes: tuple = floor.PAPER_SIZES
    hyperparameters: dict = field(default_factory=lambda: dict(PAPER_HYPERPARAMETERS))
    noise_draws: int = 30          # MLP gradient-noise draws per point
    pilot_iterations: int = 300    # baseline steps before measuring the MLP's noise
    conv_channels: tuple = (8, 16, 16, 16)  # the paper's (16, 32, 32, 32) costs 4x more
    conv_draws: int = 10
    conv_pilot_iterations: int = 20
    engine: str = "graph"          # the MLP trains on the traced graph (or "floor")
    # ConvNet and IRNN training: one seed, one learning rate for every estimator
    conv_train_channels: tuple = (4, 8, 8, 8)
    conv_iterations: int = 150
    conv_engine: str = "graph"     # the traced ConvNet costs 1.1-1.4x its floor (or "floor")
    conv_lr: float = 1e-3
    irnn_iterations: int = 400
    irnn_pixels_per_step: int = 28  # rows; 1 is the paper's pixel-by-pixel MNIST
    irnn_lr: float = 1e-3
    other_seeds: tuple = (0,)
    other_evaluations: int = 6
    other_eval_examples: int = 500   # training-loss evaluation on this many images
    smoke_test: bool = False         # too short to show the paper's findings: say so

    @classmethod
    def quick(cls) -> StudyConfig:
        """Under two minutes: one seed, 150 MLP iterations, thin short ConvNet and IRNN
        runs, few draws.  A smoke test: it shows that every part runs, and its pictures and
        report say so instead of claiming the paper's figures."""
        return cls(smoke_test=True, iterations=150, decay_every=50, seeds=(0,), evaluations=6,
                   noise_draws=5,
                   pilot_iterations=60, conv_channels=(4, 8, 8, 8), conv_draws=2,
                   conv_pilot_iterations=0, conv_train_channels=(2, 4, 4, 4),
                   conv_iterations=12, irnn_iterations=40, other_evaluations=3,
                   other_eval_examples=300)


def train_network(net: networks.Network, name: str, data, *, seed: int, iterations: int,
                  lr: float, weight_decay: float = 0.0, decay_every: int | None = None,
                  batch: int = 150, fraction: float = 0.1, engine: str = "graph",
                  evaluations: int = 10, eval_examples: int | None = None, progress=True,
                  evaluate=None):
    """Train ``net`` with one estimator (Adam, L2 weight decay, x0.6 steps, batches with
    replacement); returns the :class:`~.training.History` whose evaluations are
    ``(training loss, test accuracy)``, the loss over the first ``eval_examples``
    training images (all when None), or what ``evaluate(params)`` returns.

    With ``engine="graph"`` every step traces the network, injects the estimator
    on the graph and sweeps it in reverse; ``"floor"`` runs the numpy network on
    the same samples (the two are tested equal).
    """
    x_eval, y_eval = data.x_train[:eval_examples], data.y_train[:eval_examples]

    def loss_and_accuracy(p):
        return (networks.evaluate(net, p, x_eval, y_eval)[0],
                networks.evaluate(net, p, data.x_test, data.y_test)[1])

    return train(networks.gradient_function(net, estimator_kind(name), fraction, engine),
                 net.init(seed), net.inputs(data.x_train), data.y_train,
                 batch=estimator_batch(name, batch, fraction, rules=net.rules),
                 iterations=iterations, lr=lr, weight_decay=weight_decay,
                 decay_every=decay_every, rng=1000 + seed,
                 eval_fn=evaluate or loss_and_accuracy,
                 eval_every=max(1, iterations // evaluations), progress=progress,
                 label=f"{net.name} {name} seed {seed}")


def train_estimator(name: str, data, config: StudyConfig, seed: int, progress=True):
    """Train the MLP with one estimator and the paper's tuned (learning rate, weight
    decay) for it, on ``config.engine``; evaluations are (training-set loss, test
    accuracy)."""
    lr, weight_decay = config.hyperparameters[name]
    return train_network(networks.mlp(config.sizes), name, data, seed=seed,
                         iterations=config.iterations, lr=lr, weight_decay=weight_decay,
                         decay_every=config.decay_every, batch=config.batch,
                         fraction=config.fraction, engine=config.engine,
                         evaluations=config.evaluations, progress=progress)


def train_other(network: str, data, config: StudyConfig, progress=True) -> dict:
    """The ConvNet's or the IRNN's runs: estimator -> histories (one per seed in
    ``config.other_seeds``), every estimator at one learning rate, no weight decay."""
    if network == "convnet":
        net, iterations, lr, engine = (networks.convnet(config.conv_train_channels),
                                       config.conv_iterations, config.conv_lr,
                                       config.conv_engine)
    elif network == "irnn":
        net, iterations, lr, engine = (networks.irnn(pixels_per_step=config.irnn_pixels_per_step),
                                       config.irnn_iterations, config.irnn_lr, "graph")
    else:
        raise ValueError(f"network must be 'convnet' or 'irnn', not {network!r}")
    return {name: [train_network(net, name, data, seed=seed, iterations=iterations, lr=lr,
                                 decay_every=max(1, iterations // 4), batch=config.batch,
                                 fraction=config.fraction, engine=engine,
                                 evaluations=config.other_evaluations,
                                 eval_examples=config.other_eval_examples, progress=progress)
                   for seed in config.other_seeds]
            for name in ESTIMATORS}


def measured_bytes(params, x, y, batch: int, kind: str, fraction: float, rng=0) -> dict:
    """Retained backward-pass bytes of one MLP forward pass: counted and measured.

    ``tape``: the nbytes of the arrays the tape holds; ``tracemalloc``: memory
    still allocated after the forward pass returns, less the labels (the batch
    is gathered inside the measured region, as in training, so an exact tape
    that keeps it is charged for it); ``peak``: the high-water mark above the start.
    """
    gen = np.random.default_rng(rng)
    rows = gen.integers(len(y), size=batch)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        xb, yb = x[rows], y[rows]
        _, tape = floor.forward(params, xb, yb, kind, fraction, rng=gen)
        del xb
        retained, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {"tape": floor.tape_bytes(tape), "tracemalloc": retained - start - yb.nbytes,
            "peak": peak - start}


def _settings(batch: int, fraction: float, reduced: int, exact_batches, rad_batches,
              fractions, project: bool):
    """Figure 5's points: exact minibatches against RAD with more examples or a larger f."""
    exact = sorted(set(exact_batches) | {reduced, batch})
    out = [Setting("reduced batch (exact)", "exact", 1.0, b) for b in exact]
    out += [Setting("different sample, larger batches", "different_sample", fraction, b)
            for b in rad_batches]
    out += [Setting("different sample, other fractions", "different_sample", f, batch)
            for f in fractions]
    out.append(Setting("same sample", "same_sample", fraction, batch))
    if project:
        out.append(Setting("project", "project", fraction, batch))
    return out


def mlp_noise(params, data, config: StudyConfig, progress=True) -> list[dict]:
    """Figure 5 on the MLP: per-layer MSE of the weight gradients at ``params``."""
    net = memory.mlp(config.sizes)
    reduced = memory.equal_memory_batch(net, config.fraction, config.batch)
    b = config.batch
    settings = _settings(b, config.fraction, reduced, (5, 10, 37, 75, 2 * b),
                         (b, 2 * b, 4 * b, 8 * b), (0.05, 0.3, 0.5), project=True)
    return gradient_noise(floor.loss_and_grad, params, data.x_train, data.y_train, settings,
                          draws=config.noise_draws, rng=0, progress=progress,
                          per_example_bytes=lambda f: memory.per_example_bytes(net, f))


def convnet_noise(data, config: StudyConfig, progress=True) -> tuple[list[dict], dict]:
    """Figure 5 on the ConvNet (MNIST 1x28x28), after a short baseline pilot."""
    net = memory.convnet(in_channels=1, size=28, channels=config.conv_channels)
    reduced = memory.equal_memory_batch(net, config.fraction, config.batch)
    x = data.x_train.reshape(-1, 1, 28, 28)
    params = convnet_numpy.init_convnet(config.conv_channels, rng=0)

    def grad_fn(p, xb, yb, rng):
        return convnet_numpy.loss_and_grad(p, xb, yb, rng=rng)

    if config.conv_pilot_iterations:
        params = train(grad_fn, params, x, data.y_train, batch=config.batch,
                       iterations=config.conv_pilot_iterations, lr=1e-3, rng=0,
                       progress=progress, label="convnet pilot").params
    b = config.batch
    settings = _settings(b, config.fraction, reduced, (5, 10, 75), (b, 2 * b), (), False)
    full = full_gradient(convnet_numpy.loss_and_grad, params, x, data.y_train, chunk=100)
    rows = gradient_noise(convnet_numpy.loss_and_grad, params, x, data.y_train, settings,
                          draws=config.conv_draws, rng=0, full=full, progress=progress,
                          per_example_bytes=lambda f: memory.per_example_bytes(net, f))
    return rows, {"reduced": reduced, "channels": config.conv_channels}


def budget_allocation(data, config: StudyConfig, pilot, uniform_runs=None,
                      progress=True) -> dict:
    """Beyond the paper: per-layer kept counts chosen for the least total variance at
    the memory of the uniform fraction (see :mod:`minirad.studies.nn.budget`), and
    training curves of both (different sample, the paper's hyperparameters)."""
    widths = config.sizes[:-1]
    uniform = tuple(memory.kept_entries(d, config.fraction) for d in widths)
    gen = np.random.default_rng(7)
    coefficients = np.mean([budget.variance_coefficients(
        pilot, data.x_train[rows], data.y_train[rows])
        for rows in gen.integers(len(data.y_train), size=(5, config.batch))], axis=0)
    chosen = budget.allocate(coefficients, widths, sum(uniform))
    fractions = [k / d for k, d in zip(chosen, widths)]
    lr, weight_decay = config.hyperparameters["different_sample"]

    def run(seed, layer_fractions, label):
        params = floor.init_mlp(config.sizes, rng=seed)

        def grad_fn(p, x, y, rng):
            return floor.loss_and_grad(p, x, y, "different_sample", layer_fractions, rng=rng)

        return train(grad_fn, params, data.x_train, data.y_train, batch=config.batch,
                     iterations=config.iterations, lr=lr, weight_decay=weight_decay,
                     decay_every=config.decay_every, rng=1000 + seed,
                     eval_fn=lambda p: (floor.loss(p, data.x_train, data.y_train),
                                        floor.accuracy(p, data.x_test, data.y_test)),
                     eval_every=max(1, config.iterations // config.evaluations),
                     progress=progress, label=f"{label} seed {seed}")

    if uniform_runs is None:
        uniform_runs = [run(seed, config.fraction, "uniform f") for seed in config.seeds]
    allocated_runs = [run(seed, fractions, "allocated") for seed in config.seeds]
    return {"widths": widths, "uniform": uniform, "chosen": chosen,
            "coefficients": coefficients,
            "uniform_variance": budget.sampling_variance(coefficients, uniform),
            "chosen_variance": budget.sampling_variance(coefficients, chosen),
            "uniform_runs": uniform_runs, "allocated_runs": allocated_runs}


def one_blas_thread():
    """Matrices of a few hundred rows gain little from BLAS threads, and on a shared
    two-core machine threads that wait for each other made an iteration 3x slower."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def run_study(out_dir: str = "nn_study", quick: bool = False, config: StudyConfig | None = None,
              progress=True) -> dict:
    """Run the whole study and write its pictures and table into ``out_dir``."""
    with one_blas_thread():
        return _run_study(out_dir, config or (StudyConfig.quick() if quick else StudyConfig()),
                          progress)


def _config_name(config: StudyConfig) -> str:
    """'quick', 'default', or 'custom' (what produced a set of figures)."""
    for name, known in (("quick", StudyConfig.quick()), ("default", StudyConfig())):
        if config == known:
            return name
    return "custom"


def _comparison(rows, layer_names, reduced: int, batch: int) -> list[str]:
    """Per layer: RAD (different sample, batch 150) against the equal-memory exact batch,
    a verdict only where a t-test over the draws tells them apart."""
    rad = next(r for r in rows if r["kind"] == "different_sample" and r["batch"] == batch
               and r["label"].endswith("larger batches"))
    small = next(r for r in rows if r["kind"] == "exact" and r["batch"] == reduced)
    lines = []
    for i, name in enumerate(layer_names):
        verdict = verdicts.noise_verdict((rad["mse"][i], rad["se"][i]),
                                         (small["mse"][i], small["se"][i]),
                                         min(rad["draws"], small["draws"]))
        said = (f"{verdict} noise than" if verdict != "not told apart" else
                f"noise not told apart (a t-test at 5% over {rad['draws']} draws) from")
        lines.append(f"* {name}: different sample (batch {batch}) has {said} the equal-memory "
                     f"batch of {reduced}: MSE {_with_se(rad, i)} against {_with_se(small, i)}, "
                     f"{rad['mse'][i] / small['mse'][i]:.2f}x")
    return lines


def _with_se(row: dict, i: int) -> str:
    se = row["se"][i]
    return f"{row['mse'][i]:.3g}" + (f" ± {se:.2g}" if np.isfinite(se) else "")


def _run_study(out_dir: str, config: StudyConfig, progress) -> dict:
    os.makedirs(out_dir, exist_ok=True)
    start = time.perf_counter()
    data = mnist_split(rng=0)
    runs = {name: [train_estimator(name, data, config, seed, progress) for seed in config.seeds]
            for name in ESTIMATORS}
    pilot = train_estimator("baseline", data,
                            replace(config, iterations=max(1, config.pilot_iterations),
                                    evaluations=1), seed=0, progress=False).params
    allocation = budget_allocation(data, config, pilot, runs["different_sample"], progress)
    others = {network: train_other(network, data, config, progress)
              for network in ("convnet", "irnn")}
    mlp_rows = mlp_noise(pilot, data, config, progress)
    conv_rows, conv_info = convnet_noise(data, config, progress)
    net = memory.mlp(config.sizes)
    table_rows = {}
    for name, histories in runs.items():
        kind = estimator_kind(name)
        fraction = 1.0 if kind == "exact" else config.fraction
        batch = estimator_batch(name, config.batch, config.fraction, config.sizes)
        measured = measured_bytes(pilot, data.x_train, data.y_train, batch, kind, fraction)
        lr, weight_decay = config.hyperparameters[name]
        table_rows[name] = {
            "batch": batch, "lr": lr, "weight_decay": weight_decay,
            "rules": memory.per_example_bytes(net, fraction),
            "tape": measured["tape"] / batch, "tracemalloc": measured["tracemalloc"] / batch,
            "ms": np.mean([1e3 * h.seconds / config.iterations for h in histories])}
    seconds = time.perf_counter() - start

    paths = {"training": os.path.join(out_dir, "nn_training.png"),
             "noise_mlp": os.path.join(out_dir, "nn_noise_mlp.png"),
             "noise_convnet": os.path.join(out_dir, "nn_noise_convnet.png"),
             "budget": os.path.join(out_dir, "nn_budget.png"),
             "training_convnet": os.path.join(out_dir, "nn_training_convnet.png"),
             "training_irnn": os.path.join(out_dir, "nn_training_irnn.png"),
             "table": os.path.join(out_dir, "nn_study.md")}
    other_text = _plot_others(others, config, paths, n_test=len(data.y_test))
    batches = {name: row["batch"] for name, row in table_rows.items()}
    smoke = _smoke_title(config)
    nn_report.plot_training(
        runs, batches, f"{smoke}MNIST MLP 784-300-300-300-10, f = {config.fraction:g}; every "
        f"estimator but baseline uses about the same memory; {len(config.seeds)} seed(s), one "
        f"line each", paths["training"], loss_title=_loss_title(config))
    mlp_layers = [f"layer {i + 1} ({a}x{b})" for i, (a, b) in
                  enumerate(zip(config.sizes[:-1], config.sizes[1:]))]
    nn_report.plot_noise(mlp_rows, mlp_layers, f"{smoke}Gradient noise vs memory, MNIST MLP "
                         f"(numbers: batch sizes; f: fraction kept; bars: 2 standard errors "
                         f"over {config.noise_draws} draws)", paths["noise_mlp"])
    ch = config.conv_channels
    conv_layers = [f"conv1 (1->{ch[0]})", f"conv2 ({ch[0]}->{ch[1]})",
                   f"conv3 ({ch[1]}->{ch[2]})", f"conv4 ({ch[2]}->{ch[3]})",
                   f"linear ({ch[3] * 49}->10)"]
    figure5 = "" if config.smoke_test else "paper Figure 5; "
    nn_report.plot_noise(conv_rows, conv_layers, f"{smoke}Gradient noise vs memory, MNIST "
                         f"ConvNet with channels {ch} ({figure5}numbers: batch sizes; bars: 2 "
                         f"standard errors over {config.conv_draws} draws)",
                         paths["noise_convnet"])

    nn_report.plot_budget(allocation, _budget_title(config), paths["budget"])

    b = config.batch
    text = ["# Neural-network case study (RAD paper Sec. 4) on real MNIST", "",
            f"Configuration: {_config_name(config)} ({config.iterations} iterations, "
            f"seeds {list(config.seeds)}, ConvNet channels {list(ch)}); total time "
            f"{seconds:.0f} s. The MLP trains on the {_engine_text(config.engine)}, the "
            f"ConvNet on the {_engine_text(config.conv_engine)}, the IRNN on the traced "
            f"graph; the gradient-noise measurements use the numpy networks.", ""]
    if config.smoke_test:
        text += [f"**A smoke test, not the paper's results**: {config.iterations} MLP "
                 f"iterations on one seed, {config.conv_iterations} ConvNet iterations, "
                 f"{config.noise_draws} noise draws per point. It shows that every part "
                 f"runs; its training runs are too short and too few to tell the "
                 f"estimators apart, so no order of them is claimed, and a noise "
                 f"comparison is made only where a t-test over the draws allows. Run "
                 f"`minirad study nn` for the study itself.", ""]
    text += nn_report.table1_markdown()
    text += ["## Training the MLP (paper Figure 6)", "",
             f"{config.iterations} iterations, learning rate x0.6 every {config.decay_every}, "
             f"minibatches drawn with replacement from 4,000 training images, evaluated on "
             f"all of them and on 1,000 test images; (learning rate, weight decay) as "
             f"released with the paper for MNIST. Memory per example is counted by the rules, "
             f"by the arrays the numpy tape holds, and measured with tracemalloc.", ""]
    text += nn_report.training_markdown(runs, table_rows, config.seeds, PAPER_ORDER,
                                        n_test=len(data.y_test), smoke_test=config.smoke_test)
    text += ["## Gradient noise on the MLP (Figure 5's measurement)", "",
             f"Mean squared error per weight entry against the full-training-set gradient, "
             f"{config.noise_draws} draws per point, at the parameters after "
             f"{config.pilot_iterations} baseline iterations (seed 0).", ""]
    text += nn_report.noise_markdown(mlp_rows, mlp_layers)
    text += _comparison(mlp_rows, mlp_layers, estimator_batch("reduced_batch", b,
                                                              config.fraction, config.sizes), b)
    text += ["", "## Gradient noise on the ConvNet (paper Figure 5)", "",
             f"Channels {list(ch)} on 1x28x28 MNIST, {config.conv_draws} draws per point, at the "
             f"parameters after {config.conv_pilot_iterations} baseline iterations; the "
             f"equal-memory exact batch from the rules is {conv_info['reduced']}. Different "
             f"sample keeps ceil(f H W) positions per example and channel.", ""]
    text += nn_report.noise_markdown(conv_rows, conv_layers)
    text += _comparison(conv_rows, conv_layers, conv_info["reduced"], b) + [""]
    text += other_text
    text += _budget_intro(config) + nn_report.budget_markdown(allocation)
    write_atomically(paths["table"], lambda f: f.write("\n".join(text).encode()))
    return {"paths": paths, "runs": runs, "noise_mlp": mlp_rows, "noise_convnet": conv_rows,
            "table_rows": table_rows, "budget": allocation, "seconds": seconds,
            "convnet_runs": others["convnet"], "irnn_runs": others["irnn"]}


def _engine_text(engine: str) -> str:
    return ("traced LCG of arrays (estimators injected on the graph)" if engine == "graph"
            else "hand-written numpy network (tested equal to the graph on the same samples)")


def _plot_others(others: dict, config: StudyConfig, paths: dict, n_test: int) -> list[str]:
    """Figures and markdown of the ConvNet and IRNN training runs."""
    text = []
    for network, runs in others.items():
        if network == "convnet":
            net = networks.convnet(config.conv_train_channels)
            what = (f"MNIST ConvNet, channels {config.conv_train_channels}, "
                    f"{config.conv_iterations} iterations")
            lr, engine = config.conv_lr, config.conv_engine
        else:
            net = networks.irnn(pixels_per_step=config.irnn_pixels_per_step)
            steps = 784 // config.irnn_pixels_per_step
            what = (f"IRNN (hidden 100, W_hh = I at start) on sequential MNIST, {steps} steps "
                    f"of {config.irnn_pixels_per_step} pixels, {config.irnn_iterations} "
                    f"iterations")
            lr, engine = config.irnn_lr, "graph"
        batches = {name: estimator_batch(name, config.batch, config.fraction, rules=net.rules)
                   for name in runs}
        ms = {name: np.mean([1e3 * h.seconds / len(h.batch_losses) for h in hs])
              for name, hs in runs.items()}
        nn_report.plot_training(
            runs, batches, f"{_smoke_title(config)}{what}; f = {config.fraction:g}, Adam lr "
            f"{lr:g} for every estimator; {len(config.other_seeds)} seed(s)",
            paths[f"training_{network}"], loss_title=_loss_title(config),
            loss_label=f"training loss on {config.other_eval_examples} training images (log)")
        text += [f"## Training the {'ConvNet' if network == 'convnet' else 'IRNN'}", "",
                 f"{what} on the {_engine_text(engine)}. Adam with one learning rate "
                 f"({lr:g}) and no weight decay for every estimator (the paper tuned the "
                 f"ConvNet on CIFAR-10 and trained the IRNN with SGD at 1e-4 for 200,000 "
                 f"iterations, out of reach here), x0.6 every quarter of the run; the "
                 f"equal-memory batch from the rules is {batches['reduced_batch']}.", ""]
        text += nn_report.other_training_markdown(runs, batches, ms, lr, n_test)
    return text


def _smoke_title(config: StudyConfig) -> str:
    return "SMOKE TEST (--quick), not the paper's result: " if config.smoke_test else ""


def _loss_title(config: StudyConfig) -> str:
    return ("Training loss (a few iterations: a smoke test)" if config.smoke_test
            else "Training loss (paper Figure 6)")


def _budget_title(config: StudyConfig) -> str:
    return (f"{_smoke_title(config)}Beyond the paper: per-layer kept counts for the least "
            f"variance at the memory of f = {config.fraction:g} (MNIST MLP, different sample)")


def _budget_intro(config: StudyConfig) -> list[str]:
    return ["## Beyond the paper: where to spend the memory", "",
            f"The paper keeps ceil({config.fraction:g} d) entries of every layer input. For "
            f"different sample the variance of layer l's weight gradient on a fixed minibatch "
            f"is exactly c_l / k_l with c_l = (d_l - 1) sum_b |x_b|^2 |delta_b|^2, so at the "
            f"same number of kept floats the total variance is least with k_l roughly "
            f"proportional to sqrt(c_l) (integer optimum by greedy marginal gains). c_l is "
            f"averaged over 5 pilot minibatches at the Figure 5 parameters; the allocation is "
            f"then fixed for the whole run, with the uniform runs' hyperparameters.", ""]


def run_budget_study(out_dir: str, config: StudyConfig | None = None, progress=True) -> dict:
    """Only the budget part: ``nn_budget.png`` and ``nn_budget.md`` in ``out_dir``."""
    config = config or StudyConfig()
    with one_blas_thread():
        os.makedirs(out_dir, exist_ok=True)
        data = mnist_split(rng=0)
        pilot = train_estimator("baseline", data,
                                replace(config, iterations=max(1, config.pilot_iterations),
                                        evaluations=1), seed=0, progress=False).params
        allocation = budget_allocation(data, config, pilot, progress=progress)
        paths = {"budget": os.path.join(out_dir, "nn_budget.png"),
                 "table": os.path.join(out_dir, "nn_budget.md")}
        nn_report.plot_budget(allocation, _budget_title(config), paths["budget"])
        text = _budget_intro(config) + nn_report.budget_markdown(allocation) + [
            f"Configuration: {_config_name(config)} ({config.iterations} iterations, seeds "
            f"{list(config.seeds)})."]
        write_atomically(paths["table"], lambda f: f.write("\n".join(text).encode()))
    return {"paths": paths, "budget": allocation}
