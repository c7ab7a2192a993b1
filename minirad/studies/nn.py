"""Case study 1 of the RAD paper (Sec. 4) at laptop scale: the fully connected
network on real MNIST, trained with five gradient estimators at equal memory.

Estimators (all at minibatch 150 except the last; fraction f = 0.1):

* ``baseline``: exact backprop;
* ``same_sample``: one set of kept activation indices for the whole batch;
* ``different_sample``: independent indices for every example;
* ``project``: a Rademacher projection of each layer input;
* ``reduced_batch``: exact backprop on the smaller batch with the same memory
  (:func:`~minirad.studies.memory.equal_memory_batch`, 18 for this network).

Only the stored input of each linear layer is randomized; the adjoint passes
exactly through ``W^T`` and the ReLU masks (paper Sec. 4.2). The study writes

* ``nn_training.png``: training loss and test accuracy against iterations (Figure 6);
* ``nn_noise.png``: per-layer gradient noise against retained memory (Figure 5);
* ``nn_study.md``: Table 1 from the rules beside the paper's, memory counted and
  measured, final losses and test accuracies, and the orderings observed.

Run it with ``minirad study nn [--quick] [-o DIR]``.

>>> config = StudyConfig.quick()
>>> config.iterations, config.seeds
(300, (0,))
"""

from __future__ import annotations

import contextlib
import os
import time
import tracemalloc
from dataclasses import dataclass, field, replace

import numpy as np

from .._files import write_atomically
from . import memory
from . import mlp_numpy as floor
from .data import mnist_split
from .training import Progress, train

__all__ = ["ESTIMATORS", "PAPER_HYPERPARAMETERS", "StudyConfig", "estimator_batch",
           "estimator_kind", "gradient_noise", "measured_bytes", "run_study", "train_estimator"]

ESTIMATORS = ("baseline", "same_sample", "different_sample", "project", "reduced_batch")

# (learning rate, weight decay) released with the paper for MNIST, tuned per estimator
PAPER_HYPERPARAMETERS = {
    "baseline": (1.35e-3, 4.07e-7),
    "same_sample": (4.52e-4, 4.06e-6),
    "different_sample": (9.34e-4, 1.25e-6),
    "project": (5.27e-4, 1.01e-3),
    "reduced_batch": (6.45e-4, 5.69e-5),
}

COLORS = {"baseline": "black", "same_sample": "tab:orange", "different_sample": "tab:blue",
          "project": "tab:green", "reduced_batch": "tab:red"}


def _check_estimator(name: str) -> str:
    if name not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, not {name!r}")
    return name


def estimator_kind(name: str) -> str:
    """How the estimator keeps layer inputs (see :mod:`minirad.studies.activations`)."""
    _check_estimator(name)
    return "exact" if name in ("baseline", "reduced_batch") else name


def estimator_batch(name: str, batch: int = 150, fraction: float = 0.1,
                    sizes=floor.PAPER_SIZES) -> int:
    """The minibatch an estimator trains with; the reduced batch matches RAD's memory.

    >>> estimator_batch("reduced_batch"), estimator_batch("project")
    (18, 150)
    """
    if _check_estimator(name) == "reduced_batch":
        return memory.equal_memory_batch(memory.mlp(sizes), fraction, batch)
    return batch


@dataclass(frozen=True)
class StudyConfig:
    """Sizes of one run of the study (the paper: 20,000 iterations, decay every 2,000)."""

    iterations: int = 2000
    decay_every: int = 200
    seeds: tuple = (0, 1, 2)
    batch: int = 150
    fraction: float = 0.1
    evaluations: int = 30
    noise_draws: int = 40
    pilot_iterations: int = 300
    sizes: tuple = floor.PAPER_SIZES
    hyperparameters: dict = field(default_factory=lambda: dict(PAPER_HYPERPARAMETERS))

    @classmethod
    def quick(cls) -> StudyConfig:
        """Under two minutes: one seed, 300 iterations, fewer noise draws."""
        return cls(iterations=300, decay_every=100, seeds=(0,), evaluations=10,
                   noise_draws=8, pilot_iterations=100)


def _grad_fn(kind: str, fraction: float):
    def grad_fn(params, x, y, rng):
        return floor.loss_and_grad(params, x, y, kind, fraction, rng=rng)
    return grad_fn


def train_estimator(name: str, data, config: StudyConfig, seed: int, progress=True):
    """Train the MLP with one estimator; returns the :class:`~.training.History` whose
    evaluations are ``(training-set loss, test accuracy)``."""
    lr, weight_decay = config.hyperparameters[name]
    params = floor.init_mlp(config.sizes, rng=seed)

    def evaluate(p):
        return (floor.loss(p, data.x_train, data.y_train),
                floor.accuracy(p, data.x_test, data.y_test))

    return train(_grad_fn(estimator_kind(name), config.fraction), params,
                 data.x_train, data.y_train,
                 batch=estimator_batch(name, config.batch, config.fraction, config.sizes),
                 iterations=config.iterations, lr=lr, weight_decay=weight_decay,
                 decay_every=config.decay_every, rng=1000 + seed, eval_fn=evaluate,
                 eval_every=max(1, config.iterations // config.evaluations),
                 progress=progress, label=f"{name} seed {seed}")


def measured_bytes(params, x, y, batch: int, kind: str, fraction: float, rng=0) -> dict:
    """Retained backward-pass bytes of one forward pass: counted and measured.

    ``tape``: the nbytes of the arrays the tape holds; ``tracemalloc``: memory
    still allocated after the forward pass returns (the batch is gathered inside
    the measured region, as in training, so an exact tape that keeps it is
    charged for it); ``peak``: the forward pass's high-water mark above the start.
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


def _noise_settings(batch: int, fraction: float, reduced: int):
    """(label, kind, fraction, batch) for Figure 5: exact batches against RAD."""
    exact = sorted({5, 10, reduced, 37, 75, batch, 2 * batch})
    settings = [("reduced batch (exact)", "exact", 1.0, b) for b in exact]
    settings += [(f"different sample f={fraction:g}", "different_sample", fraction, b)
                 for b in (batch, 2 * batch, 4 * batch, 8 * batch)]
    settings += [("different sample, batch 150", "different_sample", f, batch)
                 for f in (0.05, 0.3, 0.5)]
    settings += [(f"same sample f={fraction:g}", "same_sample", fraction, batch),
                 (f"project f={fraction:g}", "project", fraction, batch)]
    return settings


def gradient_noise(params, data, config: StudyConfig, rng=0, progress=True) -> list[dict]:
    """Per-layer mean squared error of weight-gradient estimates against the
    full-training-set gradient, for exact minibatches and for RAD (Figure 5)."""
    _, full = floor.loss_and_grad(params, data.x_train, data.y_train)
    full_w = full[0::2]
    net = memory.mlp(config.sizes)
    reduced = memory.equal_memory_batch(net, config.fraction, config.batch)
    settings = _noise_settings(config.batch, config.fraction, reduced)
    gen = np.random.default_rng(rng)
    bar = Progress(len(settings), "gradient noise", enabled=bool(progress))
    rows = []
    for i, (label, kind, fraction, batch) in enumerate(settings):
        errors = np.zeros(len(full_w))
        for _ in range(config.noise_draws):
            pick = gen.integers(len(data.y_train), size=batch)
            _, grads = floor.loss_and_grad(params, data.x_train[pick], data.y_train[pick],
                                           kind, fraction, rng=gen)
            errors += [np.mean((g.astype(np.float64) - f) ** 2)
                       for g, f in zip(grads[0::2], full_w)]
        rows.append({"label": label, "kind": kind, "fraction": fraction, "batch": batch,
                     "bytes": batch * memory.per_example_bytes(net, fraction),
                     "mse": errors / config.noise_draws})
        bar.update(i + 1)
    return rows


# ---------------------------------------------------------------- pictures and tables
def _plot_training(runs: dict, config: StudyConfig, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.6))
    for name, histories in runs.items():
        for j, history in enumerate(histories):
            losses = [e[0] for e in history.evaluations]
            accs = [100 * e[1] for e in history.evaluations]
            batch = estimator_batch(name, config.batch, config.fraction, config.sizes)
            label = f"{name.replace('_', ' ')} (batch {batch})" if j == 0 else None
            ax_loss.plot(history.iterations, losses, color=COLORS[name], label=label, lw=1.4)
            ax_acc.plot(history.iterations, accs, color=COLORS[name], label=label, lw=1.4)
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("training loss (all 4,000 training images)")
    ax_loss.set_title("Training loss (paper Figure 6a, MNIST MLP)")
    ax_acc.set_xlabel("iteration")
    ax_acc.set_ylabel("test accuracy (%) on 1,000 held-out images")
    ax_acc.set_ylim(80, 100)
    ax_acc.set_title("Test accuracy")
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
    ax_loss.legend(fontsize=8)
    fig.suptitle(f"784-300-300-300-10 MLP, f = {config.fraction:g}, equal memory for all "
                 f"but baseline; {len(config.seeds)} seed(s) per estimator, one line each",
                 fontsize=10)
    fig.tight_layout()
    _save_figure(fig, path)
    plt.close(fig)


def _plot_noise(rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_layers = len(rows[0]["mse"])
    fig, axes = plt.subplots(1, n_layers, figsize=(3.6 * n_layers, 3.8), sharex=True)
    styles = {"reduced batch (exact)": ("tab:red", "o-"),
              "different sample f=0.1": ("tab:blue", "s-"),
              "different sample, batch 150": ("tab:cyan", "^:"),
              "same sample f=0.1": ("tab:orange", "D"),
              "project f=0.1": ("tab:green", "v")}
    for layer, ax in enumerate(np.atleast_1d(axes)):
        for label in dict.fromkeys(r["label"] for r in rows):
            group = [r for r in rows if r["label"] == label]
            color, style = styles.get(label, ("gray", "x-"))
            ax.plot([r["bytes"] / 1e3 for r in group], [r["mse"][layer] for r in group],
                    style, color=color, label=label, ms=4)
            if label.startswith("reduced"):
                for r in group:
                    ax.annotate(str(r["batch"]), (r["bytes"] / 1e3, r["mse"][layer]),
                                fontsize=6, xytext=(2, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"layer {layer + 1} weights")
        ax.set_xlabel("retained activation memory (kB)")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("MSE vs full-training-set gradient")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle("Gradient noise vs memory (paper Figure 5, here the MNIST MLP); "
                 "numbers on red points are batch sizes", fontsize=10)
    fig.tight_layout()
    _save_figure(fig, path)
    plt.close(fig)


def _save_figure(fig, path: str) -> None:
    import io
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    write_atomically(path, lambda f: f.write(buffer.getvalue()))


def _table1_markdown() -> list[str]:
    lines = ["## Table 1: peak memory (MB, batch 150, weights included)", "",
             "| network | parameters | source | " + " | ".join(
                 "baseline" if f == 1.0 else f"f={f:g}" for f in memory.FRACTIONS)
             + " | equal-memory batch at f=0.1 |",
             "|---|---:|---|" + "---:|" * len(memory.FRACTIONS) + "---:|"]
    for row in memory.table1_rows():
        lines.append(f"| {row['network']} | {row['parameters']:,} | rules | "
                     + " | ".join(f"{v:.2f}" for v in row["rules_mb"])
                     + f" | {row['equal_memory_batch']} |")
        lines.append("| | | paper | " + " | ".join(f"{v:.2f}" for v in row["paper_mb"])
                     + f" | {row['paper_reduced_batch']} |")
    lines += ["", "Per-example bytes from the rules: " + "; ".join(
        f"{row['network']} {row['per_example_bytes'][0]:,.1f} at baseline, "
        f"{row['per_example_bytes'][4]:,.1f} at f=0.1" for row in memory.table1_rows()), ""]
    lines += [f"* **{name}**: {text}" for name, text in memory.DISCREPANCIES.items()]
    return lines + [""]


def _summary_markdown(runs, noise_rows, measured, config, seconds) -> list[str]:
    net = memory.mlp(config.sizes)
    lines = ["## Training (paper Figure 6, MNIST MLP)", "",
             f"{config.iterations} iterations, learning rate x0.6 every {config.decay_every}, "
             f"batches drawn with replacement from 4,000 training images; seeds "
             f"{list(config.seeds)}; (learning rate, weight decay) as released with the paper.",
             "",
             "| estimator | batch | lr | weight decay | kept bytes/example (rules) | "
             "tape bytes/example | tracemalloc bytes/example | final training loss | "
             "test accuracy (%) | ms/iteration |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    finals = {}
    for name, histories in runs.items():
        batch = estimator_batch(name, config.batch, config.fraction, config.sizes)
        frac = 1.0 if estimator_kind(name) == "exact" else config.fraction
        lr, wd = config.hyperparameters[name]
        losses = np.array([h.evaluations[-1][0] for h in histories])
        accs = np.array([100 * h.evaluations[-1][1] for h in histories])
        finals[name] = losses
        ms = np.mean([1e3 * h.seconds / config.iterations for h in histories])
        m = measured[name]
        lines.append(
            f"| {name} | {batch} | {lr:.3g} | {wd:.3g} | "
            f"{memory.per_example_bytes(net, frac):,.1f} | {m['tape'] / batch:,.1f} | "
            f"{m['tracemalloc'] / batch:,.1f} | {_mean_sd(losses, '.4f')} | "
            f"{_mean_sd(accs, '.1f')} | {ms:.1f} |")
    order = sorted(finals, key=lambda n: finals[n].mean())
    lines += ["", "Ordering by mean final training loss (lowest first): "
              + " < ".join(order) + ".", ""]
    claim = ("baseline", "different_sample", "reduced_batch", "same_sample")
    for j, seed in enumerate(config.seeds):
        per_seed = [finals[n][j] for n in claim]
        holds = all(a < b for a, b in zip(per_seed, per_seed[1:]))
        lines.append(f"* seed {seed}: the paper's order baseline < different sample < reduced "
                     f"batch < same sample {'holds' if holds else 'does NOT hold'} ("
                     + ", ".join(f"{n} {v:.4f}" for n, v in zip(claim, per_seed)) + ")")
    lines += ["", "## Gradient noise (paper Figure 5, on the MLP)", "",
              f"Mean squared error per weight entry against the full-training-set gradient, "
              f"{config.noise_draws} draws per point, at the parameters reached by "
              f"{config.pilot_iterations} baseline iterations (seed 0).", "",
              "| setting | batch | f | retained kB | " + " | ".join(
                  f"layer {i + 1}" for i in range(len(noise_rows[0]["mse"]))) + " |",
              "|---|---:|---:|---:|" + "---:|" * len(noise_rows[0]["mse"])]
    for r in noise_rows:
        lines.append(f"| {r['label']} | {r['batch']} | {r['fraction']:g} | "
                     f"{r['bytes'] / 1e3:.1f} | "
                     + " | ".join(f"{v:.3g}" for v in r["mse"]) + " |")
    lines += ["", f"Total time: {seconds:.0f} s.", ""]
    return lines


def _mean_sd(values, fmt: str) -> str:
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(values.mean(), fmt)} ± {format(values.std(ddof=1), fmt)}"


def _one_blas_thread():
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
    with _one_blas_thread():
        return _run_study(out_dir, quick, config, progress)


def _run_study(out_dir, quick, config, progress) -> dict:
    config = config or (StudyConfig.quick() if quick else StudyConfig())
    os.makedirs(out_dir, exist_ok=True)
    start = time.perf_counter()
    data = mnist_split(rng=0)
    runs = {name: [train_estimator(name, data, config, seed, progress) for seed in config.seeds]
            for name in ESTIMATORS}
    pilot = train_estimator("baseline", data,
                            replace(config, iterations=config.pilot_iterations,
                                    evaluations=1), seed=0, progress=False).params
    noise_rows = gradient_noise(pilot, data, config, rng=0, progress=progress)
    measured = {}
    for name in ESTIMATORS:
        kind = estimator_kind(name)
        measured[name] = measured_bytes(
            pilot, data.x_train, data.y_train,
            estimator_batch(name, config.batch, config.fraction, config.sizes),
            kind, config.fraction if kind != "exact" else 1.0)
    seconds = time.perf_counter() - start
    paths = {"training": os.path.join(out_dir, "nn_training.png"),
             "noise": os.path.join(out_dir, "nn_noise.png"),
             "table": os.path.join(out_dir, "nn_study.md")}
    _plot_training(runs, config, paths["training"])
    _plot_noise(noise_rows, paths["noise"])
    text = "\n".join(["# Neural-network case study (RAD paper Sec. 4) on real MNIST", "",
                      f"Configuration: {'quick' if quick else 'default'} "
                      f"({config.iterations} iterations, seeds {list(config.seeds)}).", ""]
                     + _table1_markdown()
                     + _summary_markdown(runs, noise_rows, measured, config, seconds))
    write_atomically(paths["table"], lambda f: f.write(text.encode()))
    return {"paths": paths, "runs": runs, "noise": noise_rows, "measured": measured,
            "seconds": seconds}
