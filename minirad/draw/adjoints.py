"""Pictures of the ODE adjoints: re-integrating the state backwards, and the
order at which the continuous adjoint meets the discrete one.

:func:`plot_reintegration` solves each problem forward, then runs the
continuous adjoint backwards three ways (:mod:`minirad.implicit.ode_adjoint`), and
draws (left) how far the state used on the way back is from the forward
solve, against time, and (right) how far each gradient is from the exact
gradient of the discrete program.  Stored and checkpointed states are the
forward states themselves (no error at all); the reintegrated state of an
oscillator stays within the solver's accuracy, that of a diffusion problem
grows by orders of magnitude per unit of time until it overflows.

>>> from minirad.implicit import ode_adjoint
>>> fig = plot_reintegration([ode_adjoint.oscillator(n_steps=20),
...                           ode_adjoint.diffusion(n_grid=9, n_steps=20)])
>>> [ax.get_title() for ax in fig.axes]
['state used by the backward solve', 'gradient error against the exact discrete gradient']

:func:`plot_convergence` draws the gap between the continuous and the
discrete adjoint against the step size on log-log axes, one line per
problem with its fitted slope (:func:`minirad.implicit.ode_adjoint.convergence`).

>>> fig = plot_adjoint_convergence([ode_adjoint.oscillator(n_steps=16)], refinements=(1, 2))
>>> fig.axes[0].get_lines()[0].get_label()
'damped oscillator: slope 3.97'
"""

from __future__ import annotations

import numpy as np

from ..implicit.ode_adjoint import STATES, continuous_gradient, convergence, discrete_gradient
from .render import PATH_COLORS

__all__ = ["plot_adjoint_convergence", "plot_reintegration"]

#: errors are drawn on a log scale clipped to [FLOOR, CEILING]; beyond is "overflow"
FLOOR, CEILING = 1e-17, 1e40


def _figure(width: float, height: float):
    from .figure import Figure  # shows inline in any Jupyter kernel

    return Figure(figsize=(width, height), layout="constrained")


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    with np.errstate(over="ignore", invalid="ignore"):
        error = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))
    return error if np.isfinite(error) else np.inf


def plot_reintegration(problems):
    """Two panels over several :class:`~minirad.implicit.ode_adjoint.ODEProblem` s (see the
    module docstring).  Time on the left runs from T back to 0, as the
    backward solve does."""
    fig = _figure(11.0, 4.4)
    left, right = fig.subplots(1, 2)
    width = 0.8 / len(STATES)
    method_colors = dict(zip(STATES, ("#0072B2", "#009E73", "#D55E00")))
    for k, problem in enumerate(problems):
        color = PATH_COLORS[k % len(PATH_COLORS)]
        exact = discrete_gradient(problem, problem.parameters)
        runs = {states: continuous_gradient(problem, problem.parameters, states_from=states)
                for states in STATES}
        t = problem.h * np.arange(problem.n_steps + 1)
        back = runs["reintegrate"]
        errors = np.array([_relative(back.states[n], exact.states[n])
                           for n in range(problem.n_steps + 1)])
        finite = np.isfinite(errors) & (errors < CEILING)
        left.semilogy(t[finite] / problem.T, np.maximum(errors[finite], FLOOR), color=color,
                      label=f"{problem.name} (T = {problem.T:.3g}): reintegrated")
        if not finite.all():
            last = np.flatnonzero(finite).min()   # time runs backwards: the last one kept
            overflow = np.flatnonzero(~np.isfinite(errors))
            where = (f"; non-finite from t/T = {t[overflow.max()] / problem.T:.2f}"
                     if len(overflow) else "")
            left.annotate(f"{problem.name}: error passes {CEILING:.0e} at t/T = "
                          f"{t[last] / problem.T:.2f}{where}",
                          (t[last] / problem.T, CEILING), xytext=(0.5, 1e30),
                          textcoords="data", color=color, fontsize=8, ha="center",
                          arrowprops={"arrowstyle": "->", "color": color})
        for j, states in enumerate(STATES):
            got = runs[states]
            error = _relative(got.gradient, exact.gradient)
            shown = min(max(error, FLOOR), CEILING)   # an overflow is drawn at the ceiling
            x = k + (j - (len(STATES) - 1) / 2) * width
            right.bar(x, shown, width=width * 0.9, color=method_colors[states],
                      label=states if k == 0 else None, log=True, bottom=FLOOR)
            text = ("non-finite" if not np.isfinite(error) else
                    f"{error:.0e}" if error < CEILING else f"> {CEILING:.0e}\n({error:.0e})")
            right.text(x, shown * 10, f"{text}\n{got.stored_states}\nkept", ha="center",
                       va="bottom", fontsize=8.5)
    left.axhline(1.0, color="#999999", linewidth=0.8, linestyle=":")
    left.set_xlim(1.02, -0.02)
    left.set_ylim(FLOOR, CEILING * 1e6)
    left.set_xlabel("t / T  (the backward solve runs from right to left)")
    left.set_ylabel("|u reintegrated - u forward| / |u forward|")
    left.set_title("state used by the backward solve")
    left.text(0.98, 0.97, "stored and checkpointed states: the forward states (error 0)",
              transform=left.transAxes, fontsize=8, ha="right", va="top")
    left.legend(fontsize=8, loc="center left")
    right.set_xticks(range(len(problems)), [p.name for p in problems])
    right.set_ylim(FLOOR, CEILING * 1e12)
    right.set_ylabel("|gradient - exact| / |exact|  (label: error, states kept)")
    right.set_title("gradient error against the exact discrete gradient")
    right.legend(title="states for the backward solve", fontsize=8, title_fontsize=8,
                 loc="upper left")
    fig.suptitle("Continuous adjoint solved backwards: stored or checkpointed states are "
                 "exact; re-integrating the state backwards is unstable for diffusion",
                 fontsize=10)
    return fig


def plot_adjoint_convergence(problems, refinements=(1, 2, 4, 8)):
    """The relative gap between the continuous adjoint (stored states) and
    the discrete adjoint against the step size h, for each problem at
    ``h / r`` for ``r`` in ``refinements``; the legend gives each line's
    least-squares slope, and a dashed guide has slope 4, RK4's order."""
    runs = [convergence(problem, refinements) for problem in problems]
    if not runs:
        raise ValueError("plot_convergence needs at least one ODEProblem")
    fig = _figure(6.4, 4.6)
    ax = fig.subplots()
    for k, (problem, run) in enumerate(zip(problems, runs)):
        ax.loglog(run.step_sizes, run.gaps, "o-", color=PATH_COLORS[k % len(PATH_COLORS)],
                  label=f"{problem.name}: slope {run.order:.2f}")
    h = np.array([min(run.step_sizes.min() for run in runs),
                  max(run.step_sizes.max() for run in runs)])
    top = runs[-1]       # the guide runs 3 times above the last problem's coarsest gap
    ax.loglog(h, 3 * top.gaps[0] * (h / top.step_sizes[0]) ** 4, "--", color="#777777",
              label="slope 4 (guide)")
    ax.set_xlabel("step size h")
    ax.set_ylabel("|continuous - discrete| / |discrete|")
    ax.set_title("Continuous against discrete adjoint of RK4, as h shrinks", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
