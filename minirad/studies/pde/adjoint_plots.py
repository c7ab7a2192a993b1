"""The picture of the continuous adjoint on the reactor: re-integrating diffusion
backwards blows up, stored and checkpointed states do not.

:func:`reintegration` computes the numbers (plain arrays, no drawing):
for every time step, how far the state the backward solve used is from the
forward state, and how far the theta-cotangent gathered from ``T`` down to
that time is from the same partial sum of the study's own reverse sweep
(:func:`minirad.studies.pde.adjoint.discrete_partials`).
:func:`plot_reintegration` draws them on a log scale, time running from
``T`` back to 0 as the backward solve does.

>>> from minirad.studies.pde import Reactor
>>> numbers = reintegration(Reactor.quick(n_steps=32))
>>> sorted(numbers["methods"])
['checkpoints', 'reintegrate', 'stored']
>>> numbers["methods"]["stored"]["state_error"].max()     # the forward states themselves
np.float64(0.0)
>>> fig = plot_reintegration(numbers)
>>> [ax.get_title() for ax in fig.axes]
['the state used on the way back', 'the gradient gathered from T down to t']
"""

from __future__ import annotations

import numpy as np

from ...implicit.ode_adjoint import STATES
from .adjoint import continuous_gradient, discrete_partials, growth_per_step
from .problem import Reactor, initial_theta

__all__ = ["HORIZON", "plot_reintegration", "reintegration"]

#: time steps of the picture (t up to 1/16): enough for the re-integrated state to
#: pass 1e30, few enough to take about three seconds
HORIZON = 256
#: errors are drawn on a log scale clipped to [FLOOR, CEILING]
FLOOR, CEILING = 1e-10, 1e80
COLORS = dict(zip(STATES, ("#0072B2", "#009E73", "#D55E00")))


def _relative_rows(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Per row n: |a_n - b_n| / scale_n, inf where it is not finite."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.linalg.norm((a - b).reshape(len(a), -1), axis=1) / scale
    return np.where(np.isfinite(diff), diff, np.inf)


def reintegration(p: Reactor | None = None, theta=None) -> dict:
    """The numbers behind :func:`plot_reintegration` for the reactor ``p`` (default:
    the study's grid over :data:`HORIZON` steps) at ``theta`` (default the study's
    initial theta, seed 0): per method its gradient, its relative error against the
    discrete gradient, the states it kept, and per time step ``state_error`` (relative
    to the forward state) and ``gradient_error`` (relative to the whole gradient)."""
    p = Reactor.quick(n_steps=HORIZON) if p is None else p
    theta = initial_theta(rng=0) if theta is None else np.asarray(theta, dtype=float)
    partial, states = discrete_partials(p, theta)
    exact = partial[0]
    size = np.linalg.norm(states.reshape(len(states), -1), axis=1)
    norm = np.linalg.norm(exact)
    out = {"n_steps": p.n_steps, "dt": p.dt, "t": p.dt * np.arange(p.n_steps + 1),
           "exact": exact, "growth": growth_per_step(p, theta), "methods": {}}
    for states_from in STATES:
        run = continuous_gradient(p, theta, states_from)
        out["methods"][states_from] = {
            "gradient": run.gradient,
            "error": float(_relative_rows(run.gradient[None], exact[None], norm)[0]),
            "kept": run.stored_states,
            "forward_steps": run.forward_steps,
            "state_error": _relative_rows(run.states, states, size),
            "gradient_error": _relative_rows(run.partial, partial, norm),
        }
    return out


def _figure(width: float, height: float):
    from ...draw.figure import Figure  # shows inline in any Jupyter kernel

    return Figure(figsize=(width, height), layout="constrained")


def _text(error: float) -> str:
    return "non-finite" if not np.isfinite(error) else f"{error:.1e}"


def plot_reintegration(numbers: dict):
    """Two panels from :func:`reintegration` (see the module docstring)."""
    fig = _figure(11.5, 5.0)
    left, right = fig.subplots(1, 2, sharex=True)
    t, T = numbers["t"], numbers["t"][-1]
    back = numbers["methods"]["reintegrate"]

    # left: the state; stored and checkpointed ones are the forward states (error 0)
    err = back["state_error"]
    shown = np.isfinite(err) & (err > 0)
    left.semilogy(t[shown], np.clip(err[shown], FLOOR, CEILING), color=COLORS["reintegrate"],
                  lw=2, label="re-integrated backwards from phi(T)")
    # the predicted slope: the fastest mode grows by `growth` per backward step, drawn
    # through the last step (first in backward time) where the error passes 1
    n = np.arange(len(t))
    past = np.flatnonzero(shown & (err > 1.0))
    if len(past):
        anchor = int(past.max())
        predicted = err[anchor] * numbers["growth"] ** (anchor - n)
        keep = (n <= anchor + 15) & (predicted < CEILING)
        left.semilogy(t[keep], predicted[keep], color="black", ls=":", lw=1.5,
                      label=f"predicted: x {numbers['growth']:.3f} per step (RK4 run "
                            f"backwards\non the grid's fastest-decaying mode)")
    left.axhline(1.0, color="#999999", lw=0.8, ls="--")
    left.text(T, 2.0, "error = the state itself", fontsize=9, color="#777777", va="bottom")
    left.text(0.03, 0.62, "stored and checkpointed states are the forward states:\n"
              "error exactly 0 (nothing to draw on a log scale).\nThe first plateau: "
              "RK4 backwards is not the study's\nEuler step undone (below 1e-6); "
              "then it grows.", transform=left.transAxes, fontsize=9, ha="left",
              va="top")
    left.set_ylabel("|phi used - phi forward| / |phi forward|")
    left.set_title("the state used on the way back")
    left.legend(fontsize=9, loc="upper left")

    # right: the gradient gathered so far, against the study's reverse sweep
    styles = {"stored": {"lw": 2.5}, "checkpoints": {"lw": 1.5, "ls": "--"},
              "reintegrate": {"lw": 2}}
    for name in STATES:
        m = numbers["methods"][name]
        err = m["gradient_error"]
        shown = np.isfinite(err) & (err > 0)
        right.semilogy(t[shown], np.clip(err[shown], FLOOR, CEILING), color=COLORS[name],
                       label=f"{name}: {_text(m['error'])} at t = 0, "
                             f"{m['kept']} state{'s' * (m['kept'] != 1)} kept, "
                             f"{m['forward_steps']} forward steps", **styles[name])
    right.axhline(1.0, color="#999999", lw=0.8, ls="--")
    right.text(T, 2.0, "error = the whole gradient", fontsize=9, color="#777777",
               va="bottom")
    right.text(0.03, 0.62, "stored and checkpointed: the same numbers;\n"
               "their gap to the discrete gradient is the\n"
               "FTCS step's first-order error (it halves\nwhen dt halves)",
               transform=right.transAxes, fontsize=9, ha="left", va="top")
    right.set_ylabel("|mu(t) - the reverse sweep's sum over t_n >= t| / |dL/dtheta|")
    right.set_title("the gradient gathered from T down to t")
    right.legend(title="state for the backward RK4 solve", fontsize=9, title_fontsize=9,
                 loc="upper left")
    for ax in (left, right):
        ax.set_xlim(T * 1.02, -T * 0.02)
        ax.set_ylim(FLOOR, CEILING)
        ax.set_yticks(10.0 ** np.arange(np.log10(FLOOR), np.log10(CEILING) + 1, 10))
        ax.set_xlabel("t  (the backward solve runs from left to right)")
        ax.grid(True, which="major", alpha=0.3)
    fig.suptitle(f"Continuous adjoint of the PDE study's reactor (961 unknowns, "
                 f"{numbers['n_steps']} steps of dt = 1/{round(1 / numbers['dt'])}), "
                 f"solved backwards in time against the study's reverse sweep\n"
                 f"re-integrating diffusion backwards blows up; stored and checkpointed "
                 f"states agree with the discrete gradient", fontsize=10)
    return fig
