"""``minirad study pde``: the reaction-diffusion study's numbers, pictures and table.

Six parts, each a function returning plain numbers (so tests and notebooks can use
them without drawing):

* :func:`optimise`: Adam on the exact gradient and on RAD at several fractions (and
  the released sampler), all members stepped in one time loop (the paper's Figure 7b);
* :func:`memory`: bytes retained per fraction, counted and measured (tracemalloc);
* :func:`noise`: the spread of one estimate against k and against the number of steps;
* :func:`tradeoff`: bytes held (counted and measured) against forward steps against
  noise for reverse mode, checkpointing budgets, RAD fractions and RAD combined with
  checkpoints;
* :func:`released_bias`: the mean of many estimates against the exact gradient;
* :func:`adjoint`: the continuous adjoint solved backwards with stored, checkpointed and
  re-integrated states against the reverse sweep (:mod:`minirad.studies.pde.adjoint`),
  over at most 256 steps whatever the configuration (the re-integrated state is
  garbage long before that); about 3 s.

:func:`run_study` runs them all and writes PNGs and ``pde_results.md``.

>>> cfg = StudyConfig.quick()
>>> cfg.n_steps, cfg.iterations
(512, 30)
"""

from __future__ import annotations

import math
import os
import sys
import time
import tracemalloc
from dataclasses import dataclass

import numpy as np

from ...checkpoint.schedules import Binomial, StoreAll, Uniform, sqrt_every
from ...draw import palette
from ...draw.render import save_drawing
from ...graph.files import write_atomically
from ...rng import as_generator
from . import engine as pde_engine
from .adjoint_plots import HORIZON, plot_reintegration, reintegration
from .problem import (
    Reactor,
    adam,
    exact_gradient,
    initial_theta,
    rad_gradient,
    sample_count,
    simulate,
)
from .state import STATE_FILE, generator, load_state, save_state

__all__ = ["SECONDS_PER_STEP", "STATE_FILE", "StudyConfig", "adjoint", "curve_gaps",
           "estimated_seconds", "memory_use", "noise", "optimise", "relative_noise",
           "released_bias", "report", "run_study", "traced_peak", "tradeoff"]

FRACTIONS = (1.0, 0.1, 0.01, 0.002, 0.001)
#: one colour per estimator, the same in every picture
COLORS = {"exact": palette.BLACK, 1.0: palette.BLUE, 0.1: palette.GREEN,
          0.01: palette.VERMILLION, 0.002: palette.PURPLE, 0.001: palette.ORANGE}


@dataclass(frozen=True)
class StudyConfig:
    """What one run of the study computes.  The defaults are the paper's problem
    (40,961 steps, 800 Adam iterations: many hours in numpy on one core)."""

    n_steps: int = 40961
    iterations: int = 800
    lr: float = 1e-2
    fractions: tuple = FRACTIONS
    released: tuple = (0.01, 0.001)      # released-sampler curves beside eq. 8's
    noise_estimates: int = 100
    noise_horizon: int = 1024             # steps of the noise-vs-k measurement
    noise_steps: tuple = (64, 256, 1024, 4096)
    snapshots: tuple = (8, 32, 128)       # binomial checkpointing budgets
    seed: int = 0

    @classmethod
    def quick(cls) -> StudyConfig:
        """Under two minutes: t up to 1/8, 30 iterations, fewer estimates."""
        return cls(n_steps=512, iterations=30, noise_estimates=40, noise_horizon=256,
                   noise_steps=(32, 128, 512), snapshots=(4, 16))

    @classmethod
    def acceptance(cls) -> StudyConfig:
        """The issue's acceptance run: t up to 1 (4,096 steps), 150 iterations."""
        return cls(n_steps=4096, iterations=150, noise_steps=(64, 256, 1024, 4096))


#: the seconds one time step of one member's gradient takes (its forward and reverse
#: sweeps over the grid), about: the paper-sized run took 3-4 hours on one core, 45 to 55
#: microseconds a step; a loaded machine takes longer, so estimates err on the short side
SECONDS_PER_STEP = 5e-5


def estimated_seconds(cfg: StudyConfig) -> float:
    """An estimate of the optimisation's time, the study's longest part (on the short side):
    a gradient of ``n_steps`` steps per member and iteration.

    >>> round(estimated_seconds(StudyConfig()) / 3600, 1)     # the paper's run: hours
    3.6
    """
    members = 1 + len(cfg.fractions) + len(cfg.released)
    return SECONDS_PER_STEP * cfg.n_steps * members * cfg.iterations


class Progress:
    """One status line on stderr, rewritten in place."""

    def __init__(self, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()

    def __call__(self, text: str, done: int | None = None, total: int | None = None):
        elapsed = time.perf_counter() - self.start
        count = f" {done}/{total}" if total else ""
        self.stream.write(f"\r[pde {elapsed:6.0f} s] {text}{count}\x1b[K")
        if total is None or done == total:
            self.stream.write("\n")
        self.stream.flush()


def _label(kind, variant="eq8") -> str:
    if kind == "exact":
        return "exact gradient"
    prefix = "released code" if variant == "released" else "RAD"
    return f"{prefix}, fraction {kind:g}"


# ------------------------------------------------------------- optimise
def optimise(cfg: StudyConfig, progress=None, state_path: str | None = None,
             resume: bool = False) -> dict:
    """Adam from one initial theta for every member; returns labels, kinds, variants and
    the loss at each iteration (iterations, members), plus seconds per iteration.

    With ``state_path`` the run saves its state there after every iteration (Adam's
    moments, the losses, the generator: :mod:`minirad.studies.pde.state`); ``resume=True``
    continues from that file, which must exist and pass every check, and ends with
    exactly the numbers an uninterrupted run gives."""
    progress = progress or (lambda *a, **k: None)
    p = Reactor(n_steps=cfg.n_steps)
    kinds = ["exact", *cfg.fractions, *cfg.released]
    variants = ["eq8"] * (1 + len(cfg.fractions)) + ["released"] * len(cfg.released)
    theta0 = np.tile(initial_theta(rng=cfg.seed), (len(kinds), 1))
    rng = generator(cfg)
    if resume and not state_path:
        raise ValueError("resume=True needs the state_path of the saved run")
    saved = load_state(state_path, cfg) if resume else None
    if saved is not None:
        rng.bit_generator.state = saved["rng"]
    earlier = saved["seconds"] if saved else 0.0
    start = time.perf_counter()

    def grad_fn(thetas, i):
        progress("optimising", i, cfg.iterations)
        out = pde_engine.run(p, thetas, kinds, rng=rng, variant=variants)
        return out.losses, out.gradients

    def save(state):
        save_state(state_path, cfg, state, rng, earlier + time.perf_counter() - start)

    thetas, losses = adam(grad_fn, theta0, cfg.iterations, lr=cfg.lr, resume=saved,
                          on_iteration=save if state_path else None)
    progress("optimising", cfg.iterations, cfg.iterations)
    return {"kinds": kinds, "variants": variants,
            "labels": [_label(k, v) for k, v in zip(kinds, variants)],
            "losses": losses, "thetas": thetas, "resumed_at": saved["done"] if saved else 0,
            "seconds_per_iteration": (earlier + time.perf_counter() - start) / cfg.iterations}


def curve_gaps(result: dict) -> list[dict]:
    """Per member: first and final loss, how many times it fell, and its largest and mean
    relative distance from the exact-gradient curve over all iterations."""
    losses, rows = result["losses"], []
    exact = losses[:, 0]
    for b, label in enumerate(result["labels"]):
        gap = np.abs(losses[:, b] - exact) / exact
        rows.append({"label": label, "kind": result["kinds"][b],
                     "variant": result["variants"][b], "first": losses[0, b],
                     "final": losses[-1, b], "fall": losses[0, b] / losses[-1, b],
                     "max_gap": float(gap.max()), "mean_gap": float(gap.mean())})
    return rows


# --------------------------------------------------------------- memory
def memory_use(cfg: StudyConfig, progress=None) -> list[dict]:
    """Bytes per gradient: counted (what the sweep keeps) and measured (tracemalloc's peak
    while one gradient is computed, and that peak less the peak of the forward
    simulation alone: what the reverse sweep adds, its working buffers included)."""
    progress = progress or (lambda *a, **k: None)
    p = Reactor(n_steps=cfg.n_steps)
    theta = initial_theta(rng=cfg.seed)
    forward_peak = traced_peak(pde_engine.simulate_batch, p, [theta])[1]
    rows, kinds = [], ["exact", *cfg.fractions]
    for i, kind in enumerate(kinds):
        progress("measuring memory", i, len(kinds))
        out, peak = traced_peak(pde_engine.run, p, [theta], [kind], rng=cfg.seed)
        k = p.size if kind == "exact" else sample_count(p, kind)
        rows.append({"kind": kind, "k": k, "counted": int(out.retained_bytes[0]),
                     "measured": int(peak), "measured_extra": int(peak - forward_peak),
                     "forward_peak": int(forward_peak)})
    progress("measuring memory", len(kinds), len(kinds))
    full = rows[0]["counted"]
    for row in rows:
        row["share"] = row["counted"] / full
    return rows


def traced_peak(function, *args, **kwargs):
    """``(function(*args, **kwargs), the peak bytes tracemalloc saw while it ran)``."""
    tracemalloc.start()
    try:
        return function(*args, **kwargs), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------- noise
def _estimates(p: Reactor, theta, fraction, count: int, rng, variant="eq8") -> np.ndarray:
    """``count`` independent estimates, in batches small enough to keep the sampled
    values under ~200 MB."""
    k = sample_count(p, fraction, variant)
    per_batch = max(1, min(count, int(2e8 // (p.n_steps * k * 8 + p.size * 64))))
    out = []
    while sum(len(o) for o in out) < count:
        b = min(per_batch, count - sum(len(o) for o in out))
        out.append(pde_engine.run(p, [theta] * b, [fraction] * b, rng=rng,
                                  variant=variant).gradients)
    return np.concatenate(out)


def relative_noise(estimates: np.ndarray, exact: np.ndarray) -> float:
    """sqrt(mean |g_hat - g|^2) / |g|: the spread of one estimate, relative."""
    return float(np.sqrt(np.mean(np.sum((estimates - exact) ** 2, axis=1)))
                 / np.linalg.norm(exact))


def noise(cfg: StudyConfig, progress=None) -> dict:
    """Relative noise of one estimate against k (at ``noise_horizon`` steps) and against
    the number of steps (at fractions 0.1 and 0.01)."""
    progress = progress or (lambda *a, **k: None)
    theta, rng = initial_theta(rng=cfg.seed), as_generator(cfg.seed + 2)
    p = Reactor(n_steps=cfg.noise_horizon)
    exact = exact_gradient(p, theta)[1]
    fractions = sorted({*cfg.fractions, 0.5, 0.2, 0.05, 0.02, 0.005}, reverse=True)
    by_k = []
    for i, f in enumerate(fractions):
        progress("noise against k", i, len(fractions))
        est = _estimates(p, theta, f, cfg.noise_estimates, rng)
        by_k.append({"fraction": f, "k": sample_count(p, f),
                     "noise": relative_noise(est, exact)})
    progress("noise against k", len(fractions), len(fractions))
    by_steps = []
    jobs = [(f, n) for f in (0.1, 0.01) for n in cfg.noise_steps]
    for i, (f, n) in enumerate(jobs):
        progress("noise against steps", i, len(jobs))
        q = Reactor(n_steps=n)
        est = _estimates(q, theta, f, cfg.noise_estimates, rng)
        by_steps.append({"fraction": f, "steps": n,
                         "noise": relative_noise(est, exact_gradient(q, theta)[1])})
    progress("noise against steps", len(jobs), len(jobs))
    return {"by_k": by_k, "by_steps": by_steps, "horizon": cfg.noise_horizon,
            "estimates": cfg.noise_estimates}


# ------------------------------------------------------------- tradeoff
def tradeoff(cfg: StudyConfig, progress=None) -> list[dict]:
    """Held bytes, forward steps and noise of each way to get a gradient, on the study's
    horizon, by the reference chain (:func:`minirad.checkpoint.schedules.reverse_chain`).
    ``held_bytes`` is counted by the schedule's ledger (the arrays it holds at its peak);
    ``measured`` is tracemalloc's peak during the gradient less that of the plain forward
    loop (``forward_peak``): it adds the Python objects that hold each step's residual
    and, under checkpoints, RAD's draws of every step, drawn up front.  Noise is 0 for
    the exact methods and measured for RAD (a combined schedule computes the very same
    estimate as RAD alone)."""
    progress = progress or (lambda *a, **k: None)
    p = Reactor(n_steps=cfg.n_steps)
    theta, rng = initial_theta(rng=cfg.seed), as_generator(cfg.seed + 3)
    exact = exact_gradient(p, theta)[1]
    every = sqrt_every(p.n_steps)
    jobs = [("reverse mode (store all)", None, StoreAll())]
    jobs += [(f"checkpoints every {every} (sqrt N)", None, Uniform(every))]
    jobs += [(f"binomial, {s} snapshots", None, Binomial(s)) for s in cfg.snapshots
             if s < p.n_steps]
    rad_fractions = [f for f in (0.1, 0.01, 0.001) if f in cfg.fractions or f == 0.01]
    jobs += [(f"RAD {f:g}", f, StoreAll()) for f in rad_fractions]
    for f in (0.1, 0.01):
        k = sample_count(p, f)
        # checkpoint spacing minimising d floats per checkpoint + k samples per step
        best = max(1, round(math.sqrt(p.n_steps * p.size * 8 / (k * 10))))
        jobs.append((f"RAD {f:g} + checkpoints every {best}", f, Uniform(best)))
    rows, noise_of = [], {}
    forward_peak = traced_peak(simulate, p, theta)[1]
    for i, (label, f, schedule) in enumerate(jobs):
        progress("trade-off", i, len(jobs))
        if f is None:
            (_, _, result), peak = traced_peak(exact_gradient, p, theta, schedule,
                                               details=True)
            held, steps, spread = result.peak_bytes, result.forward_steps, 0.0
        else:
            est, peak = traced_peak(rad_gradient, p, theta, f, rng=rng, schedule=schedule)
            held, steps = est.peak_bytes, est.forward_steps
            if f not in noise_of:
                many = _estimates(p, theta, f, max(20, cfg.noise_estimates // 2), rng)
                noise_of[f] = relative_noise(many, exact)
            spread = noise_of[f]
        rows.append({"method": label, "fraction": f, "held_bytes": int(held),
                     "measured": int(peak - forward_peak), "forward_peak": int(forward_peak),
                     "forward_steps": int(steps), "recompute": steps / p.n_steps,
                     "noise": spread})
    progress("trade-off", len(jobs), len(jobs))
    return rows


# --------------------------------------------------------- released bias
def released_bias(cfg: StudyConfig, fraction: float = 0.1, progress=None) -> dict:
    """Means of many estimates from eq. 8 and from the released sampler, against the
    exact gradient; the released mean should be (m / 1089)^2 times it."""
    progress = progress or (lambda *a, **k: None)
    progress("released sampler's bias")
    p = Reactor(n_steps=cfg.noise_horizon)
    theta, rng = initial_theta(rng=cfg.seed), as_generator(cfg.seed + 4)
    exact = exact_gradient(p, theta)[1]
    out = {"fraction": fraction, "exact": exact,
           "share": sample_count(p, fraction, "released") / (p.cells + 1) ** 2}
    count = 2 * cfg.noise_estimates
    for variant in ("eq8", "released"):
        est = _estimates(p, theta, fraction, count, rng, variant)
        out[variant] = (est.mean(axis=0), est.std(axis=0, ddof=1) / math.sqrt(count))
    return out


# ---------------------------------------------------------------- figures
# -------------------------------------------------------------- adjoint
def adjoint(cfg: StudyConfig, progress=None) -> dict:
    """The numbers of :func:`minirad.studies.pde.adjoint_plots.reintegration` over
    ``min(cfg.n_steps, 256)`` steps at the study's initial theta (seed ``cfg.seed``;
    no random draws)."""
    progress = progress or (lambda *a, **k: None)
    progress("continuous adjoint: stored, checkpointed, re-integrated states")
    return reintegration(Reactor(n_steps=min(cfg.n_steps, HORIZON)),
                         initial_theta(rng=cfg.seed))


def _figure(width, height, ncols=1):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(1, ncols)


def _human(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


def plot_losses(result: dict, cfg: StudyConfig):
    """Figure 7b in three panels: the losses, which lie on top of one another (each RAD
    curve drawn over the exact one with its own markers, spaced apart); each curve's gap
    to the exact one in percent, with its sign; and the size of that gap on a log scale,
    which tells the small gaps of the large fractions apart."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 9.5), layout="constrained")
    top, signed, size = fig.subplots(3, 1, sharex=True, height_ratios=[2.2, 1.6, 1.6])
    losses = result["losses"]
    it = np.arange(1, len(losses) + 1)
    members = [(b, kind) for b, (kind, variant) in
               enumerate(zip(result["kinds"], result["variants"])) if variant != "released"]
    every = max(1, len(it) // 12)
    largest = 0.0
    for rank, (b, kind) in enumerate(members):
        color = COLORS.get(kind, "gray")
        keeps = "" if kind == "exact" else f" (keeps {sample_count(Reactor(), kind)} of 961)"
        if kind == "exact":
            top.plot(it, losses[:, b], color=color, lw=4, alpha=0.35,
                     label=_label(kind) + keeps)
            continue
        marks = dict(marker="osD^v"[rank % 5], markevery=(rank * every // len(members), every),
                     ms=5)
        top.plot(it, losses[:, b], color=color, lw=1.0, label=_label(kind) + keeps, **marks)
        gap = 100 * (losses[:, b] / losses[:, 0] - 1)
        largest = max(largest, float(np.abs(gap).max()))
        signed.plot(it, gap, color=color, lw=1.0, **marks)
        size.plot(it, np.where(gap != 0, np.abs(gap), np.nan), color=color, lw=1.0, **marks)
    top.set_yscale("log")
    top.set_ylabel("loss (mean squared error\nto the target)")
    top.set_title(f"Reaction-diffusion control: RAD against the exact gradient\n"
                  f"{cfg.n_steps:,} time steps (t up to {cfg.n_steps / 4096:.3g}), "
                  f"same start, fresh samples each iteration")
    if largest < 3:  # the curves cover one another: say so where they are drawn
        top.text(0.98, 0.55, f"the curves lie within {largest:.2g}% of the exact one,\n"
                             f"so close that they cover one another:\nthe panels below "
                             f"show the gaps", transform=top.transAxes, ha="right",
                 va="center", fontsize=9, bbox=dict(boxstyle="round,pad=0.3",
                                                    facecolor="white", edgecolor="#bbbbbb"))
    top.grid(True, which="both", alpha=0.3)
    top.legend(fontsize=8.5, loc="upper right")
    signed.axhline(0, color="black", lw=0.8)
    signed.set_ylabel("gap to the exact curve (%)\n(above 0: RAD's loss is higher)")
    size.set_yscale("log")
    size.set_ylabel("size of the gap (%),\nlog scale")
    size.set_xlabel("Adam iteration (learning rate 0.01)")
    for ax in (signed, size):
        ax.grid(True, which="both", alpha=0.3)
    return fig


def plot_memory(rows: list[dict], cfg: StudyConfig):
    fig, ax = _figure(7.5, 4.8)
    names = ["reverse mode" if r["kind"] == "exact" else f"RAD {r['kind']:g}\n(k={r['k']})"
             for r in rows]
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["counted"] for r in rows], 0.4, color=palette.BLUE,
           label="counted: values (and indices) kept for the reverse sweep")
    ax.bar(x + 0.2, [r["measured_extra"] for r in rows], 0.4, color=palette.ORANGE,
           label="measured: tracemalloc peak of one gradient\nless that of the forward "
                 "simulation alone")
    for xi, r in zip(x, rows):
        ax.annotate(f"{r['share']:.2%}", (xi - 0.2, r["counted"]), ha="center",
                    va="bottom", fontsize=9)
    ax.set_yscale("log")
    ax.set_xticks(x, names, fontsize=9)
    ax.set_ylabel("bytes per gradient (log scale)")
    ax.set_title(f"Memory of one gradient, {cfg.n_steps:,} steps\n(percentages: counted "
                 f"bytes as a share of reverse mode's; fraction 1 samples with replacement)",
                 fontsize=10)
    ax.legend(fontsize=9, loc="upper right")
    return fig


def plot_noise(result: dict):
    fig, (left, right) = _figure(10, 4.3, ncols=2)
    k = np.array([r["k"] for r in result["by_k"]])
    spread = np.array([r["noise"] for r in result["by_k"]])
    left.loglog(k, spread, "o", color=palette.VERMILLION, label="measured")
    mid = len(k) // 2
    ref = spread[mid] * np.sqrt(k[mid] / k)
    left.loglog(k, ref, "-", color="gray", label=r"$\propto 1/\sqrt{k}$")
    left.set_xlabel("k: entries of each state kept (of 961)")
    left.set_ylabel("relative error of one estimate\n" r"$\sqrt{E|\hat g - g|^2}\,/\,|g|$")
    left.set_title(f"Against k ({result['horizon']:,} steps, "
                   f"{result['estimates']} estimates each)")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=9)
    for f, color in ((0.1, palette.GREEN), (0.01, palette.VERMILLION)):
        rows = [r for r in result["by_steps"] if r["fraction"] == f]
        n = np.array([r["steps"] for r in rows])
        s = np.array([r["noise"] for r in rows])
        right.loglog(n, s, "o-", color=color, label=f"RAD fraction {f:g}")
        right.loglog(n, s[0] * np.sqrt(n[0] / n), ":", color=color)
    right.plot([], [], ":", color="gray", label=r"$\propto 1/\sqrt{N}$ from the first point")
    steps = sorted({r["steps"] for r in result["by_steps"]})
    right.set_xticks(steps, [f"{n:,}" for n in steps])
    right.minorticks_off()
    right.set_xlabel("number of time steps N (dt fixed: a longer horizon)")
    right.set_ylabel("relative error of one estimate")
    right.set_title("Against the number of time steps")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=9)
    return fig


def plot_tradeoff(rows: list[dict], cfg: StudyConfig):
    fig, (left, right) = _figure(12, 6, ncols=2)
    styles = {"reverse": ("s", palette.BLACK), "checkpoints": ("^", palette.BLUE),
              "binomial": ("v", palette.SKY_BLUE), "RAD": ("o", palette.VERMILLION),
              "+": ("D", palette.GREEN)}

    def style(method):
        if "+" in method:
            return styles["+"]
        return next(v for key, v in styles.items() if method.startswith(key))

    placed = {"left": [], "right": []}

    def label(ax, side, number, x, y, color, log_y):
        """A short number beside the marker; below it when an earlier point sits on top
        (the legend says which method each number is)."""
        near = [(u, v) for u, v in placed[side] if abs(math.log10(x / u)) < 0.15
                and (abs(math.log10(y / v)) < 0.08 if log_y else abs(y - v) < 0.25)]
        placed[side].append((x, y))
        ax.annotate(str(number), (x, y), xytext=(7, -14 if near else 5),
                    textcoords="offset points", fontsize=9, fontweight="bold", color=color)

    for number, r in enumerate(rows, start=1):
        marker, color = style(r["method"])
        left.plot(r["held_bytes"], r["recompute"], marker, color=color, ms=9,
                  label=f"{number}: {r['method']}")
        label(left, "left", number, r["held_bytes"], r["recompute"], color, False)
        panels = [(left, r["recompute"])] + ([(right, r["noise"])] if r["noise"] > 0 else [])
        for ax, y in panels:  # the measured peak, hollow, joined to the count
            ax.plot([r["held_bytes"], r["measured"]], [y, y], "-", color=color, lw=0.8,
                    alpha=0.5)
            ax.plot(r["measured"], y, marker, color=color, mfc="none", ms=9)
        if r["noise"] > 0:
            right.plot(r["held_bytes"], r["noise"], marker, color=color, ms=9)
            label(right, "right", number, r["held_bytes"], r["noise"], color, True)
    left.margins(x=0.15, y=0.12)
    right.margins(x=0.15, y=0.2)
    fig.legend(loc="outside lower center", ncols=3, fontsize=9)
    left.set_xscale("log")
    left.set_xlabel("bytes held at the peak (log scale)")
    left.set_ylabel("forward steps / N  (1 = no recomputation)")
    left.set_title("Memory against recomputation")
    left.grid(True, which="both", alpha=0.3)
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("bytes held at the peak (log scale)")
    right.set_ylabel("relative error of one gradient")
    right.set_title("Memory against gradient noise\n(reverse mode and checkpointing: "
                    "exact, noise 0, not drawn)")
    right.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"Three ways to spend memory on the PDE gradient ({cfg.n_steps:,} steps, "
                 f"reference chain)\nfilled: bytes counted (the arrays held); hollow: "
                 f"measured by tracemalloc (less the forward loop's peak)")
    return fig


def plot_released(bias: dict, result: dict):
    fig, (left, right) = _figure(11, 4.3, ncols=2)
    exact = bias["exact"]
    x = np.arange(7)
    for shift, variant, color in ((-0.15, "eq8", palette.VERMILLION),
                                  (0.15, "released", palette.GREY)):
        mean, se = bias[variant]
        left.errorbar(x + shift, mean / exact, yerr=2 * se / np.abs(exact), fmt="o",
                      color=color, label="eq. 8 (d/k weights)" if variant == "eq8" else
                      "released code (no weights, boundary points)")
    left.axhline(1.0, color="black", lw=1)
    left.axhline(bias["share"] ** 2, color=palette.GREY, ls=":",
                 label=f"(m/1089)^2 = {bias['share'] ** 2:.3g}")
    left.set_yscale("log")
    left.set_xticks(x, [f"theta{i}" for i in range(7)])
    left.set_ylabel("mean estimate / exact gradient (log)")
    left.set_title(f"Mean of many estimates at fraction {bias['fraction']:g} "
                   f"(bars: 2 standard errors)")
    left.legend(fontsize=9)
    losses = result["losses"]
    it = np.arange(1, len(losses) + 1)
    for b, (kind, variant) in enumerate(zip(result["kinds"], result["variants"])):
        if kind == "exact" or (kind in [k for k, v in zip(result["kinds"], result["variants"])
                                        if v == "released"]):
            right.plot(it, losses[:, b], color=COLORS.get(kind, "gray"),
                       ls="-" if variant != "released" else ":", lw=2 if kind == "exact"
                       else 1.4, label=_label(kind, variant))
    right.set_yscale("log")
    right.set_xlabel("Adam iteration")
    right.set_ylabel("loss")
    right.set_title("Optimisation: eq. 8 against the released sampler\n(its gradient is "
                    "shrunk by (m/1089)^2, towards Adam's eps = 1e-8)", fontsize=10)
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=9)
    return fig


# ------------------------------------------------------------------ table
def _table(header, rows) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *["| " + " | ".join(str(c) for c in row) + " |" for row in rows]]


def report(cfg: StudyConfig, parts: dict, seconds: float, command: str) -> str:
    lines = ["# Reaction-diffusion study (RAD paper Sec. 5)", "",
             f"Produced by `{command}` in {seconds:.0f} s.", "",
             f"Configuration: {cfg.n_steps:,} time steps of 1/4096 (t up to "
             f"{cfg.n_steps / 4096:g}), grid 1/32 (961 unknowns), Adam lr {cfg.lr:g}, "
             f"{cfg.iterations} iterations, seed {cfg.seed}."]
    if cfg.n_steps != 40961 or cfg.iterations != 800:
        lines += ["", "**This is not the paper's configuration** (40,961 steps, 800 "
                  "iterations); see the command above."]
    if "optimise" in parts:
        res = parts["optimise"]
        resumed = (f" It went on from a state saved after {res['resumed_at']} iterations "
                   f"(the time above is this last process's; the time per iteration "
                   f"counts every process)." if res["resumed_at"] else "")
        lines += ["", "## Optimisation (Figure 7b)", "",
                  f"{res['seconds_per_iteration']:.2f} s per iteration for all "
                  f"{len(res['kinds'])} members together.{resumed}", ""]
        lines += _table(["estimator", "first loss", "final loss", "fell by",
                         "largest gap to exact", "mean gap to exact"],
                        [[r["label"], f"{r['first']:.4g}", f"{r['final']:.4g}",
                          f"{r['fall']:.2f}x", f"{r['max_gap']:.2%}", f"{r['mean_gap']:.2%}"]
                         for r in curve_gaps(res)])
        eq8 = [r for r in curve_gaps(res) if r["variant"] == "eq8"]
        swapped = [f"{a['label']} ({a['final']:.6g}) above {b['label']} ({b['final']:.6g})"
                   for a, b in zip(eq8, eq8[1:]) if a["final"] > b["final"]]
        lines += ["", "Final losses ordered by fraction (exact, then fractions from 1 down): "
                      + ("yes." if not swapped else "no: " + "; ".join(swapped) + ".")]
    if "memory" in parts:
        lines += ["", "## Memory per gradient", ""]
        lines += ["The forward simulation alone peaks at "
                  f"{_human(parts['memory'][0]['forward_peak'])} (tracemalloc).", ""]
        lines += _table(["estimator", "k", "counted", "share of reverse mode",
                         "measured peak", "measured peak less forward's"],
                        [["reverse mode" if r["kind"] == "exact" else f"RAD {r['kind']:g}",
                          r["k"], _human(r["counted"]), f"{r['share']:.2%}",
                          _human(r["measured"]), _human(r["measured_extra"])]
                         for r in parts["memory"]])
    if "noise" in parts:
        nz = parts["noise"]
        lines += ["", f"## Noise of one estimate ({nz['estimates']} estimates per point)",
                  "", f"Against k at {nz['horizon']:,} steps:", ""]
        lines += _table(["fraction", "k", "relative error"],
                        [[f"{r['fraction']:g}", r["k"], f"{r['noise']:.3g}"]
                         for r in nz["by_k"]])
        lines += ["", "Against the number of steps:", ""]
        lines += _table(["fraction", "steps", "relative error"],
                        [[f"{r['fraction']:g}", r["steps"], f"{r['noise']:.3g}"]
                         for r in nz["by_steps"]])
    if "tradeoff" in parts:
        rows = parts["tradeoff"]
        lines += ["", "## Memory, recomputation and noise", "",
                  "By the reference chain (`minirad.checkpoint.schedules`). Counted: the "
                  "arrays the schedule holds at its peak. Measured: tracemalloc's peak during "
                  "the gradient less the plain forward loop's "
                  f"({_human(rows[0]['forward_peak'])}); it adds the Python objects around "
                  "each step's residual and, with checkpoints, RAD's draws for every step.",
                  ""]
        lines += _table(["method", "bytes held at the peak (counted)", "measured peak less "
                         "forward's", "forward steps", "forward steps / N", "relative error"],
                        [[r["method"], _human(r["held_bytes"]), _human(r["measured"]),
                          f"{r['forward_steps']:,}", f"{r['recompute']:.2f}",
                          f"{r['noise']:.3g}"] for r in rows])
    if "released" in parts:
        b = parts["released"]
        ratio_eq8 = b["eq8"][0] / b["exact"]
        ratio_rel = b["released"][0] / b["exact"]
        lines += ["", f"## The released sampler (fraction {b['fraction']:g})", "",
                  f"Mean estimate / exact gradient per component: eq. 8 "
                  f"{np.round(ratio_eq8, 3).tolist()}; released "
                  f"{np.round(ratio_rel, 5).tolist()}; predicted for the released "
                  f"sampler (m/1089)^2 = {b['share'] ** 2:.5f}."]
    if "adjoint" in parts:
        a = parts["adjoint"]
        back = a["methods"]["reintegrate"]["state_error"]
        gone = np.flatnonzero(~(back < 1.0))     # not below 1: as large as the state, or inf
        when = (f"passes the state's own size at t = {a['t'][gone.max()]:.4g} "
                f"({a['n_steps'] - gone.max()} steps back from T)" if len(gone)
                else "stays below the state's own size")
        lines += ["", f"## Continuous adjoint ({a['n_steps']} steps, t up to "
                      f"{a['t'][-1]:.4g})", "",
                  "The adjoint PDE solved backwards by RK4, the state taken three ways, "
                  "against the reverse sweep's gradient:", ""]
        lines += _table(["state for the backward solve", "relative error of dL/dtheta",
                         "states kept", "forward steps"],
                        [[name, f"{m['error']:.3g}", m["kept"], m["forward_steps"]]
                         for name, m in a["methods"].items()])
        lines += ["", f"The re-integrated state's error {when}; predicted growth "
                      f"{a['growth']:.4f} per step."]
    return "\n".join(lines) + "\n"


def run_study(folder: str, cfg: StudyConfig | None = None, progress=None,
              command: str = "minirad study pde", resume: bool = False) -> list[str]:
    """Run every part, write the pictures and ``pde_results.md`` into ``folder``;
    returns the paths written.

    The optimisation saves its state in ``folder`` after every iteration
    (:data:`STATE_FILE`, removed when the study completes), so a run that stops, even
    hours in, goes on with ``resume=True``.  Without it an unfinished saved run is
    never overwritten: that raises ValueError."""
    cfg = cfg or StudyConfig()
    state_path = os.path.join(folder, STATE_FILE)
    if not resume and os.path.exists(state_path):
        raise ValueError(f"{folder} holds an unfinished run ({state_path}); continue it "
                         f"with resume (--resume) or remove that file to start again")
    if resume:
        load_state(state_path, cfg)   # refuse a missing or mismatched state before any work
    if not os.path.isdir(folder):
        os.makedirs(folder)
    progress = progress or Progress()
    start, parts, written = time.perf_counter(), {}, []

    def picture(fig, name):
        path = os.path.join(folder, name)
        save_drawing(fig, path, dpi=130)
        written.append(path)

    path = os.path.join(folder, "pde_results.md")

    def table():  # rewritten after every part, so a long run that stops keeps what it has
        text = report(cfg, parts, time.perf_counter() - start, command)
        write_atomically(path, lambda f: f.write(text.encode("utf-8")))

    steps = [("optimise", lambda: optimise(cfg, progress, state_path, resume),
              lambda: plot_losses(parts["optimise"], cfg), "pde_loss_curves.png"),
             ("memory", lambda: memory_use(cfg, progress),
              lambda: plot_memory(parts["memory"], cfg), "pde_memory.png"),
             ("noise", lambda: noise(cfg, progress),
              lambda: plot_noise(parts["noise"]), "pde_noise.png"),
             ("tradeoff", lambda: tradeoff(cfg, progress),
              lambda: plot_tradeoff(parts["tradeoff"], cfg), "pde_tradeoff.png"),
             ("released", lambda: released_bias(cfg, progress=progress),
              lambda: plot_released(parts["released"], parts["optimise"]),
              "pde_released.png"),
             ("adjoint", lambda: adjoint(cfg, progress),
              lambda: plot_reintegration(parts["adjoint"]), "pde_adjoint_reintegration.png")]
    for key, compute, draw, name in steps:
        parts[key] = compute()
        picture(draw(), name)
        table()
    written.append(path)
    os.remove(state_path)
    return written

