"""The RAD paper's Figure 7a: the entries of the PDE's state that the eq. 8 estimator keeps.

The reverse sweep of the reaction-diffusion study needs every state ``phi_n``;
eq. 8 keeps instead ``k`` of its 961 interior entries, drawn anew at every
step (:func:`minirad.studies.pde.sampler`).  :func:`sampled_states` returns the
states at a few steps with the entries kept there, and the draws of the
first steps; :func:`plot_sampled_states` draws them
(``minirad study pde --paper-figures``).

>>> from minirad.studies.pde import Reactor, initial_theta
>>> found = sampled_states(Reactor.quick(n_steps=64), initial_theta(rng=0), 0.01, (0, 64))
>>> found["states"].shape, found["rows"].shape, found["k"]
((2, 31, 31), (2, 10), 10)
"""

from __future__ import annotations

import os

import numpy as np

from ...draw.render import save_drawing
from .problem import Reactor, check_theta, initial_state, initial_theta, sampler, step

__all__ = ["FILE", "plot_sampled_states", "run_figure", "sampled_states"]

FILE = "fig7a_pde_sampled_states.png"


def sampled_states(p: Reactor, theta, fraction: float, steps, rng=0, raster: int = 200) -> dict:
    """The states ``phi_n`` at ``steps`` (increasing step numbers up to ``p.n_steps``) and
    where eq. 8 samples each: ``rows`` and ``cols`` (len(steps), k) are the x and y
    grid indices of the kept entries (repeated draws appear twice), drawn with the
    study's sampler from ``rng``.  ``raster`` holds the flat indices drawn at the
    first ``raster`` steps, (raster, k)."""
    theta = check_theta(theta)
    steps = [int(n) for n in steps]
    if not steps or steps != sorted(set(steps)) or steps[0] < 0 or steps[-1] > p.n_steps:
        raise ValueError(f"steps must be increasing step numbers in 0..{p.n_steps}, not "
                         f"{steps}")
    indices, _ = sampler(p, fraction, rng)
    indices = indices.astype(np.int64)
    phi, states = initial_state(p), []
    for n in range(steps[-1] + 1):
        if n in steps:
            states.append(phi)
        if n < steps[-1]:
            phi = step(p, theta, n, phi)
    rows, cols = np.divmod(indices[steps], p.side)
    return {"steps": steps, "times": [n * p.dt for n in steps], "states": np.array(states),
            "rows": rows, "cols": cols, "k": indices.shape[1], "fraction": fraction,
            "raster": indices[:min(raster, p.n_steps + 1)], "side": p.side, "x": p.x}


def plot_sampled_states(found: dict, path: str) -> None:
    """One panel per state (the flux over the unit square, kept entries as red dots)
    and a last panel with the entries drawn at each of the first steps."""
    from matplotlib.figure import Figure

    states = found["states"]
    n = len(states)
    fig = Figure(figsize=(3.2 * n + 5.0, 3.9))
    axes = fig.subplots(1, n + 3, gridspec_kw={"width_ratios": [1] * n + [0.07, 0.3, 1.35]})
    x, top = found["x"], float(states.max())
    for ax, phi, t, step_n, rows, cols in zip(axes, states, found["times"], found["steps"],
                                             found["rows"], found["cols"]):
        image = ax.imshow(phi.T, origin="lower", extent=(0, 1, 0, 1), cmap="viridis",
                          vmin=0, vmax=top)
        ax.scatter(x[rows], x[cols], s=22, color="tab:red", edgecolors="white", linewidths=0.6)
        ax.set_title(f"t = {t:g} (step {step_n})", fontsize=10)
        ax.set_xlabel("x")
        ax.set_xticks([0, 0.5, 1])
        ax.set_yticks([0, 0.5, 1])
    axes[0].set_ylabel("y")
    fig.colorbar(image, cax=axes[n], label="flux phi")
    axes[n + 1].axis("off")
    raster = found["raster"]
    last = axes[n + 2]
    last.scatter(np.repeat(np.arange(len(raster)), raster.shape[1]), raster.ravel(), s=2,
                 color="tab:red")
    last.set_xlim(-1, len(raster))
    last.set_ylim(-5, found["side"] ** 2 + 5)
    last.set_xlabel("step n")
    last.set_ylabel("flat index of the kept entry (x, then y)")
    last.set_title(f"drawn anew at every step (first {len(raster)})", fontsize=10)
    fig.suptitle(f"The entries of the state that eq. 8 keeps (paper Figure 7a): k = "
                 f"{found['k']} of {found['side'] ** 2} at every step (f = "
                 f"{found['fraction']:g}), drawn uniformly with replacement", fontsize=11)
    fig.subplots_adjust(left=0.04, right=0.98, bottom=0.14, top=0.82, wspace=0.3)
    save_drawing(fig, path, dpi=110)


def run_figure(folder: str, n_steps: int = Reactor.n_steps, seed: int = 0,
               fraction: float = 0.01) -> str:
    """Write :data:`FILE` into ``folder`` for the study's problem over ``n_steps`` steps,
    at its starting parameters (``initial_theta(seed)``), the draws from ``seed``:
    the states at t = 0 and at 10%, 30%, 60% and 100% of the horizon; returns the
    path.  At the paper's 40,961 steps that is t = 0, 1, 3, 6 and 10 (about 15 s)."""

    p = Reactor(n_steps=n_steps)
    last = p.n_steps - 1
    steps = sorted({0, last // 10, 3 * last // 10, 6 * last // 10, last})
    found = sampled_states(p, initial_theta(rng=seed), fraction, steps, rng=seed)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, FILE)
    plot_sampled_states(found, path)
    return path
