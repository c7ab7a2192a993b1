"""Pictures and markdown of the neural-network study (kept apart from running it).

>>> lines = table1_markdown()
>>> lines[0]
'## Table 1: peak memory (MB, batch 150, weights included)'
"""

from __future__ import annotations

import textwrap

import numpy as np

from ...draw import palette
from ...draw.figure import place_labels
from ...draw.render import save_drawing
from . import memory, verdicts

__all__ = ["COLORS", "budget_markdown", "noise_markdown", "plot_budget", "plot_noise",
           "other_training_markdown", "plot_training", "table1_markdown",
           "training_markdown"]

#: the resolution of the study's pictures (PNG, written atomically and without a timestamp
#: by :func:`minirad.draw.render.save_drawing`)
DPI = 110

#: one colour per estimator, from the palette every minirad picture uses
COLORS = {"baseline": palette.BLACK, "same_sample": palette.ORANGE,
          "different_sample": palette.BLUE, "project": palette.GREEN,
          "reduced_batch": palette.VERMILLION}


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_training(runs: dict, batches: dict, title: str, path: str,
                  loss_label: str = "training loss on all training images (log scale)",
                  loss_title: str = "Training loss (paper Figure 6)") -> None:
    """Figure 6: training loss (log scale) and test accuracy, one line per run."""
    plt = _pyplot()
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(12, 4.6))
    low = 100.0
    for name, histories in runs.items():
        for j, history in enumerate(histories):
            label = f"{name.replace('_', ' ')} (batch {batches[name]})" if j == 0 else None
            accs = [100 * e[1] for e in history.evaluations]
            low = min(low, min(accs))  # the whole curve: the axis cuts none of it
            ax_loss.plot(history.iterations, [e[0] for e in history.evaluations],
                         color=COLORS[name], label=label, lw=1.3, alpha=0.85)
            ax_acc.plot(history.iterations, accs, color=COLORS[name], label=label, lw=1.3,
                        alpha=0.85)
    ax_loss.set_yscale("log")
    low_loss, high_loss = ax_loss.get_ylim()
    if high_loss < 10 * low_loss:  # less than a decade: plain numbers, not 2.3 x 10^0,
        from matplotlib.ticker import FuncFormatter  # with the digits that tell ticks apart

        digits = int(np.clip(np.ceil(-np.log10(1 - low_loss / high_loss)) + 2, 3, 10))
        for axis in (ax_loss.yaxis.set_major_formatter, ax_loss.yaxis.set_minor_formatter):
            axis(FuncFormatter(lambda value, _: f"{value:.{digits}g}"))
    ax_loss.set_ylabel(loss_label)
    ax_loss.set_title(loss_title)
    bottom = max(0.0, np.floor(low) - 1)
    if low < 20:  # some run ends near guessing: show where guessing is
        bottom = min(bottom, 8.0)
        ax_acc.axhline(10, color="gray", ls=":", lw=1)
        ax_acc.annotate("chance (10%)", (0.01, 10), xycoords=("axes fraction", "data"),
                        xytext=(0, 3), textcoords="offset points", fontsize=9, color="gray")
    ax_acc.set_ylabel("test accuracy (%)")
    ax_acc.set_ylim(bottom, 100)
    ax_acc.set_title("Test accuracy")
    for ax in (ax_loss, ax_acc):
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    ax_loss.legend(fontsize=9)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_drawing(fig, path, dpi=DPI)
    plt.close(fig)


STYLES = {"reduced batch (exact)": (palette.VERMILLION, "o-"),
          "different sample, larger batches": (palette.BLUE, "s-"),
          "different sample, other fractions": (palette.SKY_BLUE, "^:"),
          "same sample": (palette.ORANGE, "D"),
          "project": (palette.GREEN, "v")}


def plot_noise(rows: list[dict], layer_names, title: str, path: str) -> None:
    """Figure 5: per-layer MSE against retained activation memory, log-log, with bars of
    two standard errors over the draws; each point of the reduced batch and of the larger
    batches is labelled with its batch size, each other fraction with its fraction,
    where the labels do not collide."""
    plt = _pyplot()
    from matplotlib.ticker import NullFormatter

    n = len(layer_names)
    columns = 2  # wider panels would shrink their text on the page
    rows_ = -(-n // columns)
    fig, axes = plt.subplots(rows_, columns, figsize=(4.8 * columns, 3.9 * rows_ + 1.0),
                             squeeze=False)
    axes = axes.ravel()
    for ax in axes[n:]:
        ax.axis("off")
    notes = []
    for layer, ax in enumerate(axes[:n]):
        for label in dict.fromkeys(r["label"] for r in rows):
            group = [r for r in rows if r["label"] == label]
            color, style = STYLES.get(label, (palette.GREY, "x-"))
            mse = np.array([r["mse"][layer] for r in group])
            se = np.nan_to_num([r["se"][layer] for r in group])
            # two standard errors, the lower bar cut at a tenth of the value (log axis)
            ax.errorbar([r["bytes"] / 1e3 for r in group], mse, fmt=style, color=color,
                        yerr=[np.minimum(2 * se, 0.9 * mse), 2 * se], label=label, ms=4,
                        elinewidth=0.8, capsize=2)
            for r in group:
                note = (str(r["batch"]) if label.startswith(("reduced", "different sample, l"))
                        else f"f={r['fraction']:g}" if "fractions" in label else "")
                if note:
                    notes.append((ax, r["bytes"] / 1e3, r["mse"][layer], note, color))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(layer_names[layer], fontsize=10)
        ax.set_xlabel("retained activation memory (kB)", fontsize=9)
        ax.tick_params(labelsize=8.5)
        ax.xaxis.set_minor_formatter(NullFormatter())  # log-scale minor labels collide
        ax.grid(alpha=0.3)
        if layer % columns == 0:
            ax.set_ylabel("MSE vs full-training-set gradient", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    title = "\n".join(textwrap.wrap(title, 95))  # as wide as the two columns of panels
    if n < len(axes):  # a free panel holds the legend
        axes[n].legend(handles, labels, fontsize=9, loc="center")
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
    else:  # the legend under the panels
        fig.legend(handles, labels, fontsize=9, loc="lower center", ncols=3, frameon=False)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout(rect=(0, 0.9 / fig.get_figheight(), 1, 1))
    for ax in axes[:n]:  # the layout is final: the labels can be placed apart
        mine = [note for note in notes if note[0] is ax]
        place_labels(ax, [x for _, x, _, _, _ in mine], [y for _, _, y, _, _ in mine],
                     [text for *_, text, _ in mine], [color for *_, color in mine],
                     fontsize=7.5)
    save_drawing(fig, path, dpi=DPI)
    plt.close(fig)


def table1_markdown() -> list[str]:
    """Table 1 from the rules beside the printed one, and why they differ."""
    lines = ["## Table 1: peak memory (MB, batch 150, weights included)", "",
             "| network | parameters | source | " + " | ".join(
                 "baseline" if f == 1.0 else f"f={f:g}" for f in memory.FRACTIONS)
             + " | equal-memory batch at f=0.1 |",
             "|---|---:|---|" + "---:|" * len(memory.FRACTIONS) + "---:|"]
    rows = memory.table1_rows()
    for row in rows:
        lines.append(f"| {row['network']} | {row['parameters']:,} | rules | "
                     + " | ".join(f"{v:.2f}" for v in row["rules_mb"])
                     + f" | {row['equal_memory_batch']} |")
        lines.append("| | | paper | " + " | ".join(f"{v:.2f}" for v in row["paper_mb"])
                     + f" | {row['paper_reduced_batch']} |")
    lines += ["", "Per-example bytes from the rules: " + "; ".join(
        f"{row['network']} {row['per_example_bytes'][0]:,.1f} at baseline and "
        f"{row['per_example_bytes'][4]:,.1f} at f=0.1" for row in rows) + ".", "",
        "Where the rules and the printed table differ:", ""]
    lines += [f"* **{name}**: {text}" for name, text in memory.DISCREPANCIES.items()]
    return lines + [""]


def _mean_sd(values, fmt: str) -> str:
    values = np.asarray(values)
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(values.mean(), fmt)} ± {format(values.std(ddof=1), fmt)}"


def _verdicts(finals: dict, n_test: int) -> list[str]:
    """The orders a report may claim from final (losses, accuracies %) per estimator, and
    which estimators guessed."""
    if min(len(f[0]) for f in finals.values()) < 2:
        lines = ["", "Final training loss and test accuracy: not ranked (one seed, so no "
                 "seed-to-seed spread to tell a difference from)."]
    else:
        lines = ["", "Final training loss, lowest first: "
                 + verdicts.ranking({n: f[0] for n, f in finals.items()}) + ".",
                 "Final test accuracy, highest first: "
                 + verdicts.ranking({n: f[1] for n, f in finals.items()},
                                    higher_is_better=True) + ".",
                 "(≈: neighbours whose difference is within the seed-to-seed spread, a tie.)"]
    chance = verdicts.at_chance({n: np.asarray(f[1]) / 100 for n, f in finals.items()},
                                n_test)
    if chance:
        lines.append(f"At chance (within three binomial standard deviations of 10% on "
                     f"{n_test:,} test images): {', '.join(chance)}.")
    return lines + [""]


def _finals(runs: dict) -> dict:
    """name -> (final training losses, final test accuracies in %), one entry per seed."""
    return {name: (np.array([h.evaluations[-1][0] for h in histories]),
                   np.array([100 * h.evaluations[-1][1] for h in histories]))
            for name, histories in runs.items()}


def training_markdown(runs: dict, rows: dict, seeds, claim, n_test: int,
                      smoke_test: bool = False) -> list[str]:
    """The training table (one row per estimator), the orders the seeds can tell apart
    and, unless ``smoke_test``, whether the paper's order ``claim`` holds on each seed.

    ``rows[name]`` holds the columns other than the final loss and accuracy.
    """
    lines = ["| estimator | batch | lr | weight decay | kept bytes/example (rules) | "
             "tape bytes/example | tracemalloc bytes/example | final training loss | "
             "final test accuracy (%) | ms/iteration |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    finals = _finals(runs)
    for name, (losses, accs) in finals.items():
        r = rows[name]
        lines.append(f"| {name} | {r['batch']} | {r['lr']:.3g} | {r['weight_decay']:.3g} | "
                     f"{r['rules']:,.1f} | {r['tape']:,.1f} | {r['tracemalloc']:,.1f} | "
                     f"{_mean_sd(losses, '.4f')} | {_mean_sd(accs, '.1f')} | "
                     f"{r['ms']:.1f} |")
    lines += _verdicts(finals, n_test)
    if smoke_test:
        return lines
    for j, seed in enumerate(seeds):
        values = [finals[n][0][j] for n in claim]
        holds = all(a < b for a, b in zip(values, values[1:]))
        lines.append(f"* seed {seed}: the paper's order {' < '.join(claim)} "
                     f"{'holds' if holds else 'does NOT hold'} ("
                     + ", ".join(f"{n} {v:.4f}" for n, v in zip(claim, values)) + ")")
    return lines + [""]


def other_training_markdown(runs: dict, batches: dict, ms: dict, lr: float,
                            n_test: int) -> list[str]:
    """A ConvNet's or IRNN's training table: final loss and accuracy per estimator,
    and the orders the seeds can tell apart (one learning rate for every estimator)."""
    lines = ["| estimator | batch | lr | final training loss | final test accuracy (%) | "
             "ms/iteration |", "|---|---:|---:|---:|---:|---:|"]
    finals = _finals(runs)
    for name, (losses, accs) in finals.items():
        lines.append(f"| {name} | {batches[name]} | {lr:.3g} | {_mean_sd(losses, '.4f')} | "
                     f"{_mean_sd(accs, '.1f')} | {ms[name]:.1f} |")
    return lines + _verdicts(finals, n_test)


def noise_markdown(rows: list[dict], layer_names) -> list[str]:
    """Figure 5's numbers as a table."""
    lines = ["| setting | batch | f | retained kB | " + " | ".join(layer_names) + " |",
             "|---|---:|---:|---:|" + "---:|" * len(layer_names)]
    for r in rows:
        lines.append(f"| {r['label']} | {r['batch']} | {r['fraction']:g} | "
                     f"{r['bytes'] / 1e3:.1f} | " + " | ".join(f"{v:.3g}" for v in r["mse"])
                     + " |")
    return lines + [""]


def plot_budget(result: dict, title: str, path: str) -> None:
    """Kept floats per layer (uniform against allocated) and the training curves of both."""
    plt = _pyplot()
    fig, (ax_k, ax_var, ax_loss) = plt.subplots(1, 3, figsize=(12, 4.2))
    layers = np.arange(len(result["widths"]))
    names = [f"layer {i + 1}\n(d={d})" for i, d in enumerate(result["widths"])]
    for offset, key, color, label in ((-0.2, "uniform", palette.BLUE, "uniform fraction"),
                                      (0.2, "chosen", palette.PURPLE, "allocated")):
        ax_k.bar(layers + offset, result[key], 0.4, color=color, label=label)
        ax_var.bar(layers + offset, result[f"{key}_variance"], 0.4, color=color, label=label)
    for ax, ylabel in ((ax_k, "floats kept per example"),
                       (ax_var, "variance of the weight gradient\n(sum over entries)")):
        ax.set_xticks(layers)
        ax.set_xticklabels(names, fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.legend(fontsize=9)
    ax_var.set_yscale("log")
    ax_k.set_title(f"Same budget: {sum(result['uniform'])} floats per example", fontsize=10)
    ax_var.set_title(f"Total variance {result['uniform_variance'].sum():.3g} -> "
                     f"{result['chosen_variance'].sum():.3g}", fontsize=10)
    for runs, color, label in ((result["uniform_runs"], palette.BLUE, "uniform fraction"),
                               (result["allocated_runs"], palette.PURPLE, "allocated")):
        for j, history in enumerate(runs):
            ax_loss.plot(history.iterations, [e[0] for e in history.evaluations], color=color,
                         label=label if j == 0 else None, lw=1.3, alpha=0.85)
    ax_loss.set_yscale("log")
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("training loss (log scale)", fontsize=9)
    ax_loss.set_title("Training, different sample", fontsize=10)
    ax_loss.legend(fontsize=9)
    ax_loss.grid(alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_drawing(fig, path, dpi=DPI)
    plt.close(fig)


def budget_markdown(result: dict) -> list[str]:
    """The allocation, its variance, and the final losses against the uniform fraction."""
    lines = ["| layer | d | kept (uniform) | kept (allocated) | variance (uniform) | "
             "variance (allocated) |", "|---|---:|---:|---:|---:|---:|"]
    for i, d in enumerate(result["widths"]):
        lines.append(f"| {i + 1} | {d} | {result['uniform'][i]} | {result['chosen'][i]} | "
                     f"{result['uniform_variance'][i]:.3g} | "
                     f"{result['chosen_variance'][i]:.3g} |")
    total_u, total_c = result["uniform_variance"].sum(), result["chosen_variance"].sum()
    final_u = [h.evaluations[-1][0] for h in result["uniform_runs"]]
    final_c = [h.evaluations[-1][0] for h in result["allocated_runs"]]
    acc_u = [100 * h.evaluations[-1][1] for h in result["uniform_runs"]]
    acc_c = [100 * h.evaluations[-1][1] for h in result["allocated_runs"]]
    lines += ["", f"Total variance on the pilot minibatches: {total_u:.4g} (uniform) and "
              f"{total_c:.4g} (allocated), {total_c / total_u:.2f}x. Final training loss "
              f"{_mean_sd(final_u, '.4f')} (uniform) and {_mean_sd(final_c, '.4f')} "
              f"(allocated); test accuracy {_mean_sd(acc_u, '.1f')}% and "
              f"{_mean_sd(acc_c, '.1f')}%.", ""]
    return lines
