"""Benchmark: the reaction-diffusion study (RAD paper Sec. 5) at the paper's size.

On the full problem (40,961 FTCS steps on the 31 x 31 interior; ``--quick``:
2,048 steps) the table times and measures, all in one run so that ratios are
taken on the same machine load:

* the forward simulation (loss included): ``minirad pde_engine.simulate_batch``
  against a bare numpy FTCS loop written the obvious way (the floor);
  target: minirad within 2x of the floor;
* the exact gradient (forward with every phi_n stored, then the adjoint
  recurrence): ``minirad pde_engine.run`` against the forward simulation;
  target: at most 3x;
* the retained bytes of RAD at fraction 0.01 against reverse mode's, counted
  and measured (tracemalloc peak less the forward simulation's peak);
  target: at most 2%;
* sqrt(N) checkpointing (``minirad.checkpoint.schedules``, reference chain) against
  the same chain with every state stored: peak states held (target at most
  2 sqrt(N)) and time (target at most 2.2x).

Each row's ``check`` column states its target and whether it was met.

Then the exact gradient against the array peers (:mod:`bench.peers`), timed in
turns, at the study's two horizons (4,096 steps, ``Reactor.quick()``; 40,961): the
study's engine (the hand-written adjoint, the floor), ``minirad.trace`` +
reverse sweep, its replay (:func:`minirad.replay` of the graph traced once before
the timing, then the reverse sweep), HIPS autograd, PyTorch eager and JAX ``jit``
with the time loop as ``lax.scan``, all on the same program
(:func:`bench.programs.pde_loss`).  minirad's trace, its replay and HIPS autograd
run at 4,096 steps only: a traced graph keeps every intermediate array (150 KB a
step, 6 GB at 40,961 steps, and a replay makes a second graph beside the first),
and all three take about four times PyTorch's time or more (measured at 4,096
steps, one CPU second per 700 to 900 steps), which at 40,961 steps would add
minutes to the run for a ratio the 4,096-step table already gives.

    python -m bench.bench_pde            # full size
    python -m bench.bench_pde --quick    # 2,048 steps, one repeat
"""

from __future__ import annotations

import argparse
import math
import tracemalloc
from functools import partial

import numpy as np

from bench.common import median_time, print_results, ratio_goal
from bench.peers import Method, compare, replayed_gradient, value_and_gradient
from bench.programs import pde_constants, pde_loss
from minirad.checkpoint.schedules import StoreAll, Uniform, sqrt_every
from minirad.studies.pde import Reactor, exact_gradient, initial_theta
from minirad.studies.pde import engine as pde_engine


def bare_ftcs_loss(p: Reactor, theta) -> float:
    """The floor: the FTCS loop and the loss as anyone would first write them in numpy,
    on the full 33 x 33 grid updated in place."""
    x = np.linspace(0.0, 1.0, p.cells + 1)
    sin2, cos2 = np.sin(2 * np.pi * x)[1:-1, None], np.cos(2 * np.pi * x)[1:-1, None]
    phi0 = np.outer(np.sin(np.pi * x), np.sin(np.pi * x))
    bump = 0.25 * np.outer(np.sin(2 * np.pi * x), np.sin(np.pi * x))
    phi, r, dt, total = phi0.copy(), p.ratio, p.dt, 0.0
    for n in range(p.n_steps):
        st, ct = math.sin(math.pi * n * dt), math.cos(math.pi * n * dt)
        c = (theta[0] + theta[1] * st + theta[2] * ct + (theta[3] * st + theta[4] * ct) * sin2
             + (theta[5] * st + theta[6] * ct) * cos2)
        inner = phi[1:-1, 1:-1]
        lap = phi[2:, 1:-1] + phi[:-2, 1:-1] + phi[1:-1, 2:] + phi[1:-1, :-2] - 4 * inner
        phi[1:-1, 1:-1] = inner + r * lap + dt * c * inner
        error = phi - phi0 - math.sin(math.pi * (n + 1) * dt) * bump
        total += float(np.sum(error * error))
    return total / (p.n_steps * p.size)


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _check(ok: bool, text: str) -> str:
    return f"{'met' if ok else 'NOT MET'}: {text}"


def run(quick: bool = False) -> list[dict]:
    p = Reactor.quick(n_steps=2048) if quick else Reactor()
    theta = initial_theta(rng=0)
    repeats = 1 if quick else 3
    size = f"{p.n_steps:,} steps"
    rows = []

    # forward: minirad against the floor
    t_fwd, loss = median_time(lambda: pde_engine.simulate_batch(p, [theta])[0], repeats)
    t_bare, loss_bare = median_time(lambda: bare_ftcs_loss(p, theta), repeats)
    agree = abs(loss - loss_bare) <= 1e-12 * abs(loss_bare)
    rows.append({"benchmark": "PDE forward simulation (loss included)", "size": size,
                 "method": "minirad pde_engine.simulate_batch", "median_s": t_fwd,
                 "check": _check(t_fwd <= 2 * t_bare, f"<= 2x the floor ({t_fwd / t_bare:.2f}x)"),
                 "status": "ok" if agree else f"error: losses differ {loss} vs {loss_bare}"})
    rows.append({"benchmark": "PDE forward simulation (loss included)", "size": size,
                 "method": "bare numpy FTCS loop (floor)", "median_s": t_bare})

    # exact gradient against the forward simulation
    t_grad, out = median_time(lambda: pde_engine.run(p, [theta], ["exact"]), repeats)
    rows.append({"benchmark": "PDE exact gradient (adjoint)", "size": size,
                 "method": "minirad pde_engine.run exact", "median_s": t_grad,
                 "check": _check(t_grad <= 3 * t_fwd,
                                 f"<= 3x one forward simulation ({t_grad / t_fwd:.2f}x)")})
    rows.append({"benchmark": "PDE exact gradient (adjoint)", "size": size,
                 "method": "minirad forward simulation alone", "median_s": t_fwd})

    # memory of RAD at 1% against reverse mode
    forward_peak = _peak(lambda: pde_engine.simulate_batch(p, [theta]))
    counted, measured, results = {}, {}, {}

    def gradient_of(kind):
        results[kind] = pde_engine.run(p, [theta], [kind], rng=0)

    for kind in ("exact", 0.01):
        measured[kind] = _peak(lambda kind=kind: gradient_of(kind)) - forward_peak
        counted[kind] = int(results[kind].retained_bytes[0])
    for kind in ("exact", 0.01):
        share_c, share_m = counted[kind] / counted["exact"], measured[kind] / measured["exact"]
        row = {"benchmark": "PDE retained bytes per gradient", "size": size,
               "method": "minirad reverse mode" if kind == "exact" else "minirad RAD 0.01",
               "median_s": None, "status": "ok", "counted_bytes": counted[kind],
               "measured_bytes": measured[kind], "counted_share": f"{share_c:.2%}",
               "measured_share": f"{share_m:.2%}"}
        if kind != "exact":
            row["check"] = _check(share_c <= 0.02 and share_m <= 0.02,
                                  "<= 2% of reverse mode's, counted and measured")
        rows.append(row)

    # sqrt(N) checkpointing on the reference chain
    every = sqrt_every(p.n_steps)
    t_all, (_, g_all, r_all) = median_time(
        lambda: exact_gradient(p, theta, StoreAll(), details=True), repeats)
    t_ck, (_, g_ck, r_ck) = median_time(
        lambda: exact_gradient(p, theta, Uniform(every), details=True), repeats)
    same = np.array_equal(g_all, g_ck)
    bound = 2 * math.sqrt(p.n_steps)
    rows.append({"benchmark": "PDE gradient checkpointing (reference chain)", "size": size,
                 "method": "minirad chain, every state stored", "median_s": t_all,
                 "peak_states": r_all.peak_stored, "forward_steps": r_all.forward_steps,
                 "peak_bytes": r_all.peak_bytes})
    rows.append({"benchmark": "PDE gradient checkpointing (reference chain)", "size": size,
                 "method": f"minirad chain, checkpoint every {every} (sqrt N)",
                 "median_s": t_ck, "peak_states": r_ck.peak_stored,
                 "forward_steps": r_ck.forward_steps, "peak_bytes": r_ck.peak_bytes,
                 "status": "ok" if same else "error: gradient differs from store-all",
                 "check": _check(r_ck.peak_stored <= bound and t_ck <= 2.2 * t_all,
                                 f"states <= 2 sqrt(N) = {bound:.0f} "
                                 f"({r_ck.peak_stored}), time <= 2.2x ({t_ck / t_all:.2f}x)")})
    for row in rows:
        row.setdefault("repeats", repeats)
        row["baseline"] = row["method"].startswith(("bare numpy", "minirad forward simulation",
                                                    "minirad chain, every"))
    horizons = (64,) if quick else (Reactor.quick().n_steps, p.n_steps)
    for steps in horizons:
        rows += peer_rows(Reactor.quick(n_steps=steps), theta, repeats,
                          traced=steps <= TRACED_STEPS)
    return rows


PEER_BENCHMARK = "PDE exact gradient against the array peers"
ENGINE = "numpy by hand: pde_engine.run exact (floor)"
REPLAY = "minirad replay of the traced graph"
#: the longest horizon at which the methods that keep every intermediate array run
TRACED_STEPS = 4096


def peer_rows(p: Reactor, theta, repeats: int, traced: bool) -> list[dict]:
    """The exact gradient (loss included) by the study's engine, minirad's tracer and the
    peers, in turns; the results must agree with the engine's to 1e-8."""
    constants = (pde_constants(p),)

    def engine():
        out = pde_engine.run(p, [theta], ["exact"])
        return [out.losses[0], out.gradients[0]]

    see = f"see {TRACED_STEPS:,} steps"
    too_big = None if traced else (f"not run: the trace would keep about "
                                   f"{p.n_steps * 150e3 / 1e9:.0f} GB; {see}")
    too_slow = None if traced else f"not run: about four times PyTorch's time; {see}"
    methods = [Method(ENGINE, lambda: engine),
               Method("minirad trace + reverse sweep",
                      partial(value_and_gradient, "minirad", pde_loss, constants, [theta]),
                      not_run=too_big),
               Method(REPLAY, partial(replayed_gradient, pde_loss, constants, [theta]),
                      not_run=too_big),
               Method("HIPS autograd", partial(value_and_gradient, "autograd", pde_loss,
                                               constants, [theta]), "autograd", too_slow),
               Method("PyTorch eager", partial(value_and_gradient, "torch", pde_loss, constants,
                                               [theta]), "torch"),
               Method("JAX jit (lax.scan)", partial(value_and_gradient, "jax", pde_loss,
                                                    constants, [theta]), "jax")]
    # 1e-8: the engine sums the steps' terms in another order (by blocks of steps); over
    # 40,961 steps that moves the gradient by about 1e-10 of its largest entry
    return compare(PEER_BENCHMARK, f"{p.n_steps:,} steps", methods, repeats, rtol=1e-8)


def goals(rows: list[dict]) -> list[dict]:
    """Issue 30's goal for the PDE: the study's gradient by replay of its graph within
    1.2x of the hand-written engine's time, at 40,961 steps."""
    return [ratio_goal(rows, "PDE exact gradient, 40,961 steps: replay vs pde_engine",
                       PEER_BENCHMARK, f"{Reactor().n_steps:,} steps", REPLAY, ENGINE, 1.2)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,048 steps, one repeat")
    print_results(run(quick=parser.parse_args().quick))
