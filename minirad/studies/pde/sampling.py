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
    """Where eq. 8 samples, in three panels: the flux at the first step with the entries
    kept at each of the steps in ``found`` (one colour and marker per step); how much the
    flux changes from the first to the last of them; and the entries drawn at each of the
    first steps."""
    from matplotlib.figure import Figure

    from ...draw import palette

    states, x = found["states"], found["x"]
    first, last = states[0], states[-1]
    change = last - first
    size = float(np.abs(first).max()) or 1.0
    fig = Figure(figsize=(12, 5.0), layout="constrained")
    flux, moved, raster_ax = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1.25]})

    image = flux.imshow(first.T, origin="lower", extent=(0, 1, 0, 1),
                        cmap=palette.SEQUENTIAL, vmin=0, vmax=size)
    fig.colorbar(image, ax=flux, shrink=0.9, label="flux phi at t = 0")
    for i, (t, rows, cols) in enumerate(zip(found["times"], found["rows"], found["cols"])):
        flux.scatter(x[rows], x[cols], s=34, marker="osD^v"[i % 5],
                     color=palette.SERIES[i % len(palette.SERIES)], edgecolors="white",
                     linewidths=0.7, label=f"t = {t:g}")
    flux.legend(title="entries kept at", fontsize=9, title_fontsize=9, ncols=3,
                loc="upper center", bbox_to_anchor=(0.5, -0.2), columnspacing=0.8,
                handletextpad=0.2)
    flux.set_title(f"the state and the {found['k']} entries kept,\nat {len(states)} "
                   f"of its steps", fontsize=10, pad=10)

    scale = float(np.abs(change).max()) or 1.0
    image = moved.imshow(change.T, origin="lower", extent=(0, 1, 0, 1),
                         cmap=palette.DIVERGING, vmin=-scale, vmax=scale)
    fig.colorbar(image, ax=moved, shrink=0.9, label="phi(t) - phi(0)")
    moved.set_title(f"the state moves little by t = {found['times'][-1]:g}:\n"
                    f"{100 * scale / size:.2g}% of its peak at most", fontsize=10, pad=10)
    for ax in (flux, moved):
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_xticks([0, 0.5, 1])
        ax.set_yticks([0, 0.5, 1])

    raster = found["raster"]
    raster_ax.scatter(np.repeat(np.arange(len(raster)), raster.shape[1]), raster.ravel(),
                      s=3, color=palette.VERMILLION)
    raster_ax.set_xlim(-1, len(raster))
    raster_ax.set_ylim(-5, found["side"] ** 2 + 5)
    raster_ax.set_xlabel("step n")
    raster_ax.set_ylabel("flat index of the kept entry (x, then y)")
    raster_ax.set_title(f"kept at each of the first {len(raster)} steps:\n"
                        f"drawn anew every step", fontsize=10)
    fig.suptitle(f"The entries of the state that eq. 8 keeps (paper Figure 7a): k = "
                 f"{found['k']} of {found['side'] ** 2} at every step (f = "
                 f"{found['fraction']:g}), drawn uniformly with replacement", fontsize=11)
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
