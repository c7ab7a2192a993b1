"""The numbers behind the RAD paper's remaining neural-network figures (4, 8, 9, 10).

Each function returns plain numbers; :mod:`minirad.studies.nn.figure_plots` draws
them and :func:`run_figures` (``minirad study nn --paper-figures``) writes the
pictures and a table of their numbers.

* :func:`sample_positions` (Figure 4): where the samples fall in a convolutional
  layer's stored input, read off the injected graph: for ``different_sample`` a set
  of positions per example and channel, for ``same_sample`` one set for the batch;
* :func:`training_curves` (Figures 8 and 9): training and test loss and accuracy
  along training, and the time per iteration, for each estimator and seed;
* :func:`fraction_sweep` (Figure 10): the final training loss and test accuracy
  against the kept fraction for different sample and project, beside the reduced
  batch with the memory of each fraction.

The configurations (:class:`FiguresConfig`) are laptop-sized: hundreds of
iterations where the paper ran tens of thousands; ``figures/nn/README.md`` says
what each committed picture comes from.

>>> FiguresConfig.quick().iterations < FiguresConfig().iterations
True
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from ...graph.files import write_atomically
from . import graph as nn_graph
from . import memory, networks
from .study import (
    ALL_ESTIMATORS,
    ESTIMATORS,
    PAPER_HYPERPARAMETERS,
    estimator_batch,
    estimator_kind,
    one_blas_thread,
    train_network,
)

__all__ = ["FILES", "Curve", "FiguresConfig", "fraction_sweep", "iteration_times",
           "reduced_batches", "report", "run_figures", "sample_positions", "training_curves"]


@dataclass(frozen=True)
class FiguresConfig:
    """Sizes of the runs behind Figures 4 and 8-10 (the defaults: 5 to 15 minutes on
    two cores, depending on their load; the paper trained 20,000 MNIST iterations
    per run)."""

    batch: int = 150
    fraction: float = 0.1
    # Figure 8: the MLP 784-300-300-300-10, every estimator of Figure 6
    sizes: tuple = (784, 300, 300, 300, 10)
    iterations: int = 400
    decay_every: int = 40          # the paper's ten decays, x0.6 each
    seeds: tuple = (0, 1, 2)
    evaluations: int = 20
    hyperparameters: dict = field(default_factory=lambda: dict(PAPER_HYPERPARAMETERS))
    # Figure 9: the IRNN with "different project" beside the others, one learning rate
    irnn_iterations: int = 300
    irnn_seeds: tuple = (0, 1)
    irnn_lr: float = 1e-3
    irnn_pixels_per_step: int = 28
    irnn_eval_examples: int = 1000
    # Figure 10: the MLP at other fractions (seeds shared with Figure 8's runs)
    fractions: tuple = (0.05, 0.1, 0.3, 0.5, 0.8)
    sweep_seeds: tuple = (0, 1)
    # Figure 4: the second convolution of the study's ConvNet
    conv_channels: tuple = (4, 8, 8, 8)
    conv_layer: int = 2
    conv_examples: int = 3
    # the time per iteration of Figures 8 and 9: rounds of one gradient per estimator
    timing_rounds: int = 15

    @classmethod
    def quick(cls) -> FiguresConfig:
        """About a minute: a few iterations of each run, one seed, two fractions."""
        return cls(iterations=12, decay_every=4, seeds=(0,), evaluations=2,
                   irnn_iterations=6, irnn_seeds=(0,), irnn_eval_examples=200,
                   fractions=(0.1, 0.5), sweep_seeds=(0,), conv_examples=2, timing_rounds=3)


# ------------------------------------------------------------------ Figure 4
def sample_positions(data, kind: str, fraction: float = 0.1, channels=(4, 8, 8, 8),
                     layer: int = 2, examples: int = 3, rng=0) -> dict:
    """Where an estimator samples the stored input of convolution ``layer`` (1-4) of
    the study's ConvNet, on the first ``examples`` training images.

    The ConvNet at its initial parameters (seed 0) is traced, ``kind``
    (``different_sample`` or ``same_sample``) is injected on the graph
    (:func:`minirad.studies.nn.graph.inject`, drawing from ``rng``), and the
    positions are read off the injected edge.  Returns ``activation`` (B, C, H, W),
    the layer's stored input, and ``rows``, ``cols`` (B, C, k): the pixel of every
    draw (repeated draws appear twice), plus ``k`` and ``d = H W``.
    """
    if kind not in ("different_sample", "same_sample"):
        raise ValueError(f"kind must be 'different_sample' or 'same_sample', not {kind!r}")
    if layer not in (1, 2, 3, 4):
        raise ValueError(f"layer must be one of the four convolutions 1-4, not {layer!r}")
    net = networks.convnet(channels)
    x, y = net.inputs(data.x_train[:examples]), data.y_train[:examples]
    g = nn_graph.traced(net.program, net.init(0), x, y)
    # the layers' kernel edges keep their input, in layer order (the order inject draws in)
    edge = [e for e, label in enumerate(g.labels) if label.kind == "outer"][layer - 1]
    activation = g.labels[edge].gathered[0]
    picks = nn_graph.inject(g, kind, fraction, rng).labels[edge].picks
    b, c, h, w = activation.shape
    picks = np.broadcast_to(picks, (b * c, picks.shape[1])).reshape(b, c, -1)
    rows, cols = np.divmod(picks, w)
    return {"kind": kind, "layer": layer, "activation": activation, "rows": rows, "cols": cols,
            "k": picks.shape[-1], "d": h * w, "fraction": fraction}


# ------------------------------------------------------------- Figures 8, 9
@dataclass(frozen=True)
class Curve:
    """One training run: evaluations at ``iterations`` and the time per iteration
    (training steps only, evaluations excluded).  ``fraction`` is the kept fraction
    the estimator was given (for the reduced batch: the one whose memory its
    ``batch`` matches; the baseline ignores it)."""

    estimator: str
    seed: int
    batch: int
    fraction: float
    iterations: tuple
    train_loss: tuple
    train_accuracy: tuple
    test_loss: tuple
    test_accuracy: tuple
    ms_per_iteration: float


def _one_run(net, name: str, data, *, seed: int, iterations: int, lr: float,
             weight_decay: float, decay_every: int, batch: int, fraction: float,
             evaluations: int, eval_examples, progress) -> Curve:
    x_eval, y_eval = data.x_train[:eval_examples], data.y_train[:eval_examples]
    spent = [0.0]

    def evaluate(params):
        start = time.perf_counter()
        numbers = (networks.evaluate(net, params, x_eval, y_eval)
                   + networks.evaluate(net, params, data.x_test, data.y_test))
        spent[0] += time.perf_counter() - start
        return numbers

    history = train_network(net, name, data, seed=seed, iterations=iterations, lr=lr,
                            weight_decay=weight_decay, decay_every=decay_every, batch=batch,
                            fraction=fraction, engine="graph", evaluations=evaluations,
                            progress=progress, evaluate=evaluate)
    columns = list(zip(*history.evaluations))
    return Curve(name, seed, estimator_batch(name, batch, fraction, rules=net.rules), fraction,
                 tuple(history.iterations), *map(tuple, columns),
                 1e3 * (history.seconds - spent[0]) / iterations)


def training_curves(network: str, data, config: FiguresConfig, estimators=None,
                    progress=True) -> dict:
    """Figure 8 (``network="mlp"``, the paper's tuned learning rates and weight decays)
    or Figure 9 (``"irnn"``, one learning rate, no weight decay): estimator -> one
    :class:`Curve` per seed, every run on the traced graph."""
    if network == "mlp":
        net, iterations, seeds = networks.mlp(config.sizes), config.iterations, config.seeds
        names = estimators or ESTIMATORS
        decay_every, eval_examples = config.decay_every, None
    elif network == "irnn":
        net = networks.irnn(pixels_per_step=config.irnn_pixels_per_step)
        iterations, seeds, names = config.irnn_iterations, config.irnn_seeds, (
            estimators or ALL_ESTIMATORS)
        decay_every, eval_examples = max(1, iterations // 4), config.irnn_eval_examples
    else:
        raise ValueError(f"network must be 'mlp' or 'irnn', not {network!r}")
    curves = {}
    for name in names:
        lr, weight_decay = (config.hyperparameters[name] if network == "mlp"
                            else (config.irnn_lr, 0.0))
        curves[name] = [_one_run(net, name, data, seed=seed, iterations=iterations, lr=lr,
                                 weight_decay=weight_decay, decay_every=decay_every,
                                 batch=config.batch, fraction=config.fraction,
                                 evaluations=config.evaluations, eval_examples=eval_examples,
                                 progress=progress)
                        for seed in seeds]
    return curves


def iteration_times(network: str, data, config: FiguresConfig, estimators) -> dict:
    """Median milliseconds of one training step's gradient (trace, inject, reverse
    sweep) per estimator, at the initial parameters.  The estimators take turns,
    one step each per round, so that load from other work on the machine falls
    on all of them alike (the times of whole runs, taken one after another, do
    not share that load)."""
    net = (networks.mlp(config.sizes) if network == "mlp" else
           networks.irnn(pixels_per_step=config.irnn_pixels_per_step))
    params, x, gen = net.init(0), net.inputs(data.x_train), np.random.default_rng(0)
    steps = {name: (networks.gradient_function(net, estimator_kind(name), config.fraction),
                    estimator_batch(name, config.batch, config.fraction, rules=net.rules))
             for name in estimators}
    times = {name: [] for name in estimators}
    for _ in range(config.timing_rounds):
        for name, (grad_fn, batch) in steps.items():
            rows = gen.integers(len(data.y_train), size=batch)
            start = time.perf_counter()
            grad_fn(params, x[rows], data.y_train[rows], gen)
            times[name].append(1e3 * (time.perf_counter() - start))
    return {name: float(np.median(values)) for name, values in times.items()}


# ----------------------------------------------------------------- Figure 10
def fraction_sweep(data, config: FiguresConfig, reuse: dict | None = None,
                   progress=True) -> list[Curve]:
    """Figure 10: MLP runs of different sample and project at every kept fraction of
    ``config.fractions``, and of the reduced batch with the memory of each fraction
    (:func:`minirad.studies.nn.memory.equal_memory_batch`), plus the baseline; seeds
    ``config.sweep_seeds``.  Every estimator keeps its own tuned learning rate and
    weight decay at every fraction.  Runs of Figure 8 (``reuse``: its curves) with
    the same estimator, fraction and seed are taken, not run again."""
    net = networks.mlp(config.sizes)
    reuse = reuse or {}
    found = {(c.estimator, c.fraction, c.seed): c for curves in reuse.values() for c in curves}
    plan = [("baseline", config.fraction)] + [
        (name, f) for f in config.fractions
        for name in ("different_sample", "project", "reduced_batch")]
    out = []
    for name, fraction in plan:
        for seed in config.sweep_seeds:
            if (name, fraction, seed) in found:
                out.append(found[name, fraction, seed])
                continue
            lr, weight_decay = config.hyperparameters[name]
            out.append(_one_run(net, name, data, seed=seed, iterations=config.iterations,
                                lr=lr, weight_decay=weight_decay,
                                decay_every=config.decay_every, batch=config.batch,
                                fraction=fraction, evaluations=1, eval_examples=None,
                                progress=progress))
    return out


def reduced_batches(config: FiguresConfig) -> dict:
    """The equal-memory batch of the MLP at every fraction of the sweep."""
    rules = memory.mlp(config.sizes)
    return {f: memory.equal_memory_batch(rules, f, config.batch) for f in config.fractions}


# ------------------------------------------------------------- the pictures
FILES = {"fig4": "fig4_conv_sample_positions.png", "fig8": "fig8_mlp_training_curves.png",
         "fig9": "fig9_irnn_different_project.png", "fig10": "fig10_fraction_sweep.png",
         "table": "paper_figures.md"}


def run_figures(out_dir: str, config: FiguresConfig | None = None, progress=True) -> dict:
    """Compute and draw Figures 4, 8, 9 and 10 into ``out_dir`` (names in :data:`FILES`),
    with ``paper_figures.md`` holding their numbers; returns the paths written."""
    from . import figure_plots as plots
    from .data import mnist_split

    config = config or FiguresConfig()
    os.makedirs(out_dir, exist_ok=True)
    paths = {key: os.path.join(out_dir, name) for key, name in FILES.items()}
    start = time.perf_counter()
    data = mnist_split(rng=0)
    with one_blas_thread():
        positions = [sample_positions(data, kind, config.fraction, config.conv_channels,
                                      config.conv_layer, config.conv_examples, rng=0)
                     for kind in ("different_sample", "same_sample")]
        plots.plot_sample_positions(*positions, paths["fig4"])
        mlp = training_curves("mlp", data, config, progress=progress)
        mlp_times = iteration_times("mlp", data, config, list(mlp))
        plots.plot_curves(mlp, mlp_times, f"MNIST MLP {'-'.join(map(str, config.sizes))}, "
                          f"f = {config.fraction:g}, every estimator with its tuned learning "
                          f"rate and weight decay (paper Figure 8)", paths["fig8"],
                          loss_note=" on all 4,000 training images")
        irnn = training_curves("irnn", data, config, progress=progress)
        irnn_times = iteration_times("irnn", data, config, list(irnn))
        steps = 784 // config.irnn_pixels_per_step
        plots.plot_curves(irnn, irnn_times, f"IRNN on sequential MNIST ({steps} steps of "
                          f"{config.irnn_pixels_per_step} pixels), f = "
                          f"{config.fraction:g}, Adam lr {config.irnn_lr:g} for every "
                          f"estimator, with different project (paper Figure 9)", paths["fig9"],
                          loss_note=f" on {config.irnn_eval_examples} training images")
        sweep = fraction_sweep(data, config, reuse=mlp, progress=progress)
        batches = reduced_batches(config)
        plots.plot_fraction_sweep(sweep, batches, f"MNIST MLP after {config.iterations} "
                                  f"iterations: final loss and accuracy against the fraction "
                                  f"kept, {len(config.sweep_seeds)} seed(s), means joined "
                                  f"(paper Figure 10)", paths["fig10"])
    text = report(config, positions, (mlp, mlp_times), (irnn, irnn_times), sweep, batches,
                  time.perf_counter() - start)
    write_atomically(paths["table"], lambda f: f.write("\n".join(text).encode()))
    return {"paths": paths, "positions": positions, "mlp": mlp, "irnn": irnn, "sweep": sweep}


def _config_name(config: FiguresConfig) -> str:
    for name, known in (("quick", FiguresConfig.quick()), ("default", FiguresConfig())):
        if config == known:
            return name
    return "custom"


def _spread(values) -> str:
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.4g}" + (f" ± {values.std(ddof=1):.2g}" if len(values) > 1 else "")


def _final_table(curves: dict, times: dict, hyper) -> list[str]:
    lines = ["| estimator | batch | lr | weight decay | final training loss | final test loss "
             "| final training accuracy (%) | final test accuracy (%) | ms/iteration in "
             "turns | ms/iteration in training |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, runs in curves.items():
        lr, weight_decay = hyper(name)
        finals = {f: [getattr(r, f)[-1] for r in runs] for f in
                  ("train_loss", "test_loss", "train_accuracy", "test_accuracy")}
        lines.append(f"| {name} | {runs[0].batch} | {lr:g} | {weight_decay:g} | "
                     f"{_spread(finals['train_loss'])} | {_spread(finals['test_loss'])} | "
                     f"{_spread(100 * np.array(finals['train_accuracy']))} | "
                     f"{_spread(100 * np.array(finals['test_accuracy']))} | "
                     f"{times[name]:.0f} | {np.mean([r.ms_per_iteration for r in runs]):.0f} |")
    return lines + [""]


def report(config: FiguresConfig, positions, mlp, irnn, sweep, batches, seconds) -> list[str]:
    """The markdown of ``paper_figures.md``: every number the four pictures show
    (``mlp`` and ``irnn``: the curves and the times in turns)."""
    different = positions[0]
    (mlp, mlp_times), (irnn, irnn_times) = mlp, irnn
    text = ["# The RAD paper's Figures 4, 8, 9 and 10 at laptop scale", "",
            f"Written by `minirad study nn --paper-figures` in {seconds:.0f} s, configuration "
            f"{_config_name(config)}: the MLP {'-'.join(map(str, config.sizes))}, batch "
            f"{config.batch}, f = {config.fraction:g}; see figures/nn/README.md.", "",
            "## Figure 4: where the samples fall", "",
            f"Convolution {different['layer']} of the ConvNet with channels "
            f"{list(config.conv_channels)} at its initial parameters, on "
            f"{config.conv_examples} training images: k = {different['k']} of d = "
            f"{different['d']} pixels per map. Different sample draws "
            f"{different['rows'].shape[0] * different['rows'].shape[1]} sets (one per example "
            f"and channel); same sample one set, the same for every example and channel.", ""]
    text += ["## Figure 8: the MLP's training curves", "",
             f"{config.iterations} iterations, x0.6 every {config.decay_every}, seeds "
             f"{list(config.seeds)}, batch {config.batch} (the reduced batch "
             f"{mlp['reduced_batch'][0].batch}); losses and accuracies on all 4,000 "
             f"training and 1,000 test images; mean ± standard deviation over seeds. "
             f"Time per iteration: one gradient per estimator in turns, the median of "
             f"{config.timing_rounds} rounds (what the picture shows), and the training "
             f"steps of the runs above, evaluations excluded (run one after another, so "
             f"under changing load).", ""]
    text += _final_table(mlp, mlp_times, lambda n: config.hyperparameters[n])
    text += ["## Figure 9: the IRNN with different project", "",
             f"{config.irnn_iterations} iterations, x0.6 every quarter, seeds "
             f"{list(config.irnn_seeds)}; training loss and accuracy on the first "
             f"{config.irnn_eval_examples} training images, test on 1,000.", ""]
    text += _final_table(irnn, irnn_times, lambda n: (config.irnn_lr, 0.0))
    text += ["## Figure 10: the fraction sweep", "",
             f"Final values after {config.iterations} iterations, mean over seeds "
             f"{list(config.sweep_seeds)}; the reduced batch has the memory of RAD at the "
             f"fraction of its row.", "",
             "| fraction | estimator | batch | final training loss | final test accuracy (%) |",
             "|---:|---|---:|---:|---:|"]
    for run_name in ("baseline", "different_sample", "project", "reduced_batch"):
        group = [r for r in sweep if r.estimator == run_name]
        for fraction in sorted({r.fraction for r in group}):
            runs = [r for r in group if r.fraction == fraction]
            shown = "1 (all)" if run_name == "baseline" else f"{fraction:g}"
            text.append(f"| {shown} | {run_name} | {runs[0].batch} | "
                        f"{_spread([r.train_loss[-1] for r in runs])} | "
                        f"{_spread([100 * r.test_accuracy[-1] for r in runs])} |")
    return text
