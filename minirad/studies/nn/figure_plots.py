"""Drawing the RAD paper's Figures 4, 8, 9 and 10 from :mod:`minirad.studies.nn.figures`.

Every function takes the numbers a function of :mod:`~minirad.studies.nn.figures`
returned, writes one PNG and returns nothing; the colours are the study's
(:data:`minirad.studies.nn.report.COLORS`).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ...draw import palette
from ...draw.render import save_drawing
from .report import COLORS, DPI

__all__ = ["COLORS_ALL", "plot_curves", "plot_fraction_sweep", "plot_sample_positions"]

#: the study's colours, and one for Appendix A's "different project"
COLORS_ALL = {**COLORS, "different_project": palette.PURPLE}


def _name(estimator: str) -> str:
    return estimator.replace("_", " ")


def _log_y(ax) -> None:
    """A log-scale y axis labelled with plain numbers (0.3, not 3 x 10^-1): at 1, 2, 3
    and 5 times the powers of ten, or at every multiple when the data span less
    than a decade.  Call it after plotting."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_yscale("log")
    low, high = ax.get_ylim()
    subs = (1.0, 2.0, 3.0, 5.0) if high / low > 10 else tuple(range(1, 10))
    ax.yaxis.set_major_locator(LogLocator(subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def plot_sample_positions(different: dict, same: dict, path: str, channels: int = 4) -> None:
    """Figure 4: the stored input of one convolution, an image per example and channel
    (columns), with the sampled pixels marked: different sample in the upper rows, same
    sample in the lower ones."""
    examples = different["activation"].shape[0]
    channels = min(channels, different["activation"].shape[1])
    fig = Figure(figsize=(2.1 * channels + 0.6, 2.1 * 2 * examples + 1.9))
    grid = fig.add_gridspec(2 * examples + 1, channels,
                            height_ratios=[1] * examples + [0.22] + [1] * examples)
    for side, found in enumerate((different, same)):
        for b in range(examples):
            for c in range(channels):
                ax = fig.add_subplot(grid[b + side * (examples + 1), c])
                ax.imshow(found["activation"][b, c], cmap="gray_r", interpolation="nearest")
                ax.scatter(found["cols"][b, c], found["rows"][b, c], s=12,
                           color=palette.VERMILLION, edgecolors="white", linewidths=0.4)
                ax.set_xticks([])
                ax.set_yticks([])
                if b == 0 and side == 0:
                    ax.set_title(f"channel {c + 1}", fontsize=10)
                if c == 0:
                    ax.set_ylabel(f"example {b + 1}", fontsize=10)
    k, d = different["k"], different["d"]
    top = 1 - 1.25 / fig.get_figheight()
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.01, top=top, wspace=0.06, hspace=0.08)
    for side, text in enumerate((f"different sample: its own {k} pixels for each example "
                                 f"and channel",
                                 f"same sample: the same {k} pixels for every example and "
                                 f"channel")):
        first = fig.axes[side * examples * channels].get_position()  # its top left image
        fig.text(0.5, first.y1 + (0.3 if side == 0 else 0.1) / fig.get_figheight(), text,
                 ha="center", fontsize=10.5, fontweight="bold")
    fig.suptitle(f"Where RAD samples the stored input of convolution {different['layer']}\n"
                 f"(paper Figure 4): k = {k} of the {d} pixels of each "
                 f"{int(np.sqrt(d))} x {int(np.sqrt(d))} map (f = {different['fraction']:g}), "
                 f"orange-red dots;\ndarker pixels: larger activations", fontsize=11,
                 y=1 - 0.1 / fig.get_figheight(), va="top")
    save_drawing(fig, path, dpi=DPI)


def plot_curves(curves: dict, times: dict, title: str, path: str, loss_note: str = "") -> None:
    """Figures 8 and 9: training and test loss and accuracy against iterations, one
    line per run, and each estimator's time per iteration (``times``, ms)."""
    fig = Figure(figsize=(12.5, 8.4))
    axes = fig.subplots(2, 3)
    panels = [("train_loss", axes[0, 0], f"training loss{loss_note} (log scale)"),
              ("test_loss", axes[0, 1], "test loss (log scale)"),
              ("train_accuracy", axes[1, 0], f"training accuracy{loss_note} (%)"),
              ("test_accuracy", axes[1, 1], "test accuracy (%)")]
    for field, ax, label in panels:
        low = 100.0
        for name, runs in curves.items():
            for j, run in enumerate(runs):
                values = np.array(getattr(run, field), dtype=float)
                if "accuracy" in field:
                    values = 100 * values
                    low = min(low, values.min())  # the whole curve: the axis cuts none
                ax.plot(run.iterations, values, color=COLORS_ALL[name], lw=1.2, alpha=0.8,
                        label=f"{_name(name)} (batch {run.batch})" if j == 0 else None)
        if "loss" in field:
            _log_y(ax)
        else:
            ax.set_ylim(max(0.0, np.floor(low) - 2), 100)
        ax.set_xlabel("iteration")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    names = list(curves)
    ms = [times[n] for n in names]
    bars = axes[0, 2]
    bars.barh(range(len(names)), ms, color=[COLORS_ALL[n] for n in names])
    bars.set_yticks(range(len(names)), [_name(n) for n in names], fontsize=9)
    bars.invert_yaxis()
    bars.set_xlabel("ms per gradient (median;\nthe estimators in turns)")
    bars.set_title("run time per iteration\n(trace, inject, reverse sweep)", fontsize=10)
    for i, value in enumerate(ms):
        bars.annotate(f"{value:.0f}", (value, i), xytext=(3, 0), textcoords="offset points",
                      va="center", fontsize=9)
    bars.set_xlim(0, 1.2 * max(ms))
    bars.grid(alpha=0.3, axis="x")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    axes[1, 2].axis("off")
    axes[1, 2].legend(handles, labels, loc="center", fontsize=10,
                      title=f"{len(next(iter(curves.values())))} seed(s), one line each")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    save_drawing(fig, path, dpi=DPI)


def plot_fraction_sweep(runs: list, batches: dict, title: str, path: str) -> None:
    """Figure 10: final training loss and test accuracy against the kept fraction; the
    reduced batch is drawn at the fraction whose memory its batch matches, the
    baseline as a band (its seeds' range)."""
    fig = Figure(figsize=(12, 5.6))
    ax_loss, ax_acc = fig.subplots(1, 2)
    for ax, field, scale in ((ax_loss, "train_loss", 1), (ax_acc, "test_accuracy", 100)):
        base_runs = [r for r in runs if r.estimator == "baseline"]
        base = [scale * getattr(r, field)[-1] for r in base_runs]
        ax.axhspan(min(base), max(base), color=COLORS_ALL["baseline"], alpha=0.15)
        ax.axhline(np.mean(base), color=COLORS_ALL["baseline"], lw=1,
                   label=f"baseline (batch {base_runs[0].batch}, all the memory; band: its "
                         f"seeds)")
        ax.annotate(f"baseline {np.mean(base):.3g}", (1, np.mean(base)),
                    xycoords=("axes fraction", "data"), xytext=(-4, 4),
                    textcoords="offset points", ha="right", fontsize=9)
        for name, marker in (("different_sample", "o"), ("project", "s"),
                             ("reduced_batch", "^")):
            group = [r for r in runs if r.estimator == name]
            fractions = sorted({r.fraction for r in group})
            means = [np.mean([scale * getattr(r, field)[-1] for r in group
                              if r.fraction == f]) for f in fractions]
            label = (_name(name) if name != "reduced_batch" else
                     "reduced batch at the same memory (batch " +
                     ", ".join(str(batches[f]) for f in fractions) + ")")
            ax.plot(fractions, means, marker + "-", color=COLORS_ALL[name], label=label)
            ax.plot([r.fraction for r in group], [scale * getattr(r, field)[-1] for r in group],
                    marker, color=COLORS_ALL[name], alpha=0.35, ms=4)
        ax.set_xscale("log")
        fractions = sorted({r.fraction for r in runs if r.estimator != "baseline"})
        ax.set_xticks(fractions, [f"{f:g}" for f in fractions])
        ax.minorticks_off()
        ax.set_xlabel("fraction of each layer input kept (memory of RAD at that fraction)")
        ax.grid(alpha=0.3)
    _log_y(ax_loss)
    ax_loss.set_ylabel("final training loss (log scale)")
    ax_acc.set_ylabel("final test accuracy (%)")
    handles, labels = ax_loss.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=9, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.11, 1, 1))
    save_drawing(fig, path, dpi=DPI)
