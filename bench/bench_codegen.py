"""Generated code (minirad.codegen) against the numpy floor, timed in turns.

Two programs a training loop runs many times, traced once, their adjoint code
generated once (neither timed), then called at each iteration:

* ``relaxation x <- x + 0.01 (c x - x^3)``: 2,000 steps on a 961-vector, the
  12,000-operation loop (:func:`bench.programs.relaxation`), against
  :func:`bench.programs.relaxation_by_hand`; goal at most 1.2x;
* the MLP 784-300-300-300-10 gradient (batch 150, float32) against
  :func:`bench.programs.mlp_gradient_by_hand`; goal at most 1.05x;
* the reaction-diffusion study's exact gradient at 4,096 and 40,961 steps, by the
  generated code of one time step in a loop (:func:`generated_pde_gradient`), against
  the study's hand-written engine (``minirad.studies.pde.engine.run``, whose time is
  the row kept for issue 41's goal of 1.2x).

Each table times, in turns in one process (A, B, C, A, B, C, ...; medians of the
rounds, BLAS on one thread): the floor, the generated code, minirad's replay
(the interpreter of the same recording, for scale) and the peers (PyTorch eager,
JAX ``jit``), which show as skipped where they are not installed.  A result that
differs from the floor's is an error row.  ``codegen_s`` is the one-time cost of
writing and compiling the code (after the trace).

    python -m bench.bench_codegen           # full sizes
    python -m bench.bench_codegen --quick
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

import minirad
from bench.bench_vector import LOOP as VECTOR_LOOP
from bench.bench_vector import MLP as VECTOR_MLP
from bench.bench_vector import mlp_problem
from bench.common import print_results, ratio_goal
from bench.peers import Method, compare, minirad_kit, replayed_gradient, value_and_gradient
from bench.programs import mlp_gradient_by_hand, mlp_loss, relaxation, relaxation_by_hand
from minirad.tracing.codegen import compiled

FLOOR, CODE, REPLAY = ("numpy by hand (floor)", "minirad generated code (codegen)",
                       "minirad replay of the traced graph")
PEERS = (("PyTorch eager", "torch"), ("JAX jit", "jax"))
# bench_vector.py times the same programs by trace and replay: tables of their own here
LOOP, MLP = f"{VECTOR_LOOP}, by generated code", f"{VECTOR_MLP}, by generated code"
LOOP_SIZE, MLP_SIZE = "961-vector, 2,000 steps (12,000 ops)", "784-300-300-300-10, batch 150"
_GENERATED: dict = {}


def generated_gradient(program, constants, params, key: str):
    """A call returning ``[value, *gradients]`` by the program's generated adjoint code:
    traced once with the constants as data, the code written and compiled once (not
    timed; the seconds it took are kept under ``key``)."""
    tools, constants, params = minirad_kit(), list(constants), list(params)
    arguments = [*constants, *params]
    g = minirad.trace(lambda *a: program(tools, *a), *arguments,
                      wrt=range(len(constants), len(arguments)))
    start = time.perf_counter()
    code = compiled(g)
    _GENERATED[key] = (time.perf_counter() - start, code)

    def call():
        value, grads = code(*arguments)
        return [value, *grads]
    return call


def methods(key, floor, program, constants, params) -> list[Method]:
    return ([Method(FLOOR, lambda: floor),
             Method(CODE, lambda: generated_gradient(program, constants, params, key)),
             Method(REPLAY, lambda: replayed_gradient(program, constants, params))]
            + [Method(label, partial(value_and_gradient, framework, program, constants,
                                     params), framework) for label, framework in PEERS])


def _noted(rows, key):
    if key in _GENERATED:
        seconds, code = _GENERATED.pop(key)
        for row in rows:
            if row["method"] == CODE:
                row["codegen_s"] = round(seconds, 3)
                row["note"] = (f"adjoint makes {code.calls} numpy operations, "
                               f"{code.forward_calls} forward; {len(code.eliminated)} vertices "
                               f"preaccumulated")
    return rows


def loop_rows(n: int, steps: int, repeats: int) -> list[dict]:
    rng = np.random.default_rng(0)
    x, c = rng.uniform(-1, 1, n), rng.uniform(0.5, 1.5, n)
    size = LOOP_SIZE if (n, steps) == (961, 2000) else f"{n}-vector, {steps:,} steps"
    rows = compare(LOOP, size, methods("loop", lambda: relaxation_by_hand(x, c, steps),
                                       partial(relaxation, steps=steps), (), [x, c]),
                   repeats, rtol=1e-10)
    return _noted(rows, "loop")


def mlp_rows(batch: int, repeats: int) -> list[dict]:
    X, labels, params = mlp_problem(batch)
    rows = compare(MLP, f"784-300-300-300-10, batch {batch}",
                   methods("mlp", lambda: mlp_gradient_by_hand(X, labels, *params), mlp_loss,
                           (X, labels), params),
                   repeats, rtol=1e-4)
    return _noted(rows, "mlp")


def generated_pde_gradient(p):
    """``gradient(theta) -> [loss, d loss / d theta]`` of the reaction-diffusion study by
    generated code of ONE time step (traced once, its forward and adjoint code written
    once): a forward loop keeping phi_n (what the study's engine keeps), then the adjoint
    code of each step in reverse order, which recomputes that step's forward values."""
    from bench.programs import pde_constants
    from minirad.tracing.codegen import codegen

    k = pde_constants(p)
    shift, bump, phi0, r, dt, scale = (k[name] for name in ("shift", "bump", "phi0", "r", "dt",
                                                             "scale"))
    factors, target_factors = k["steps"]

    def step(phi, profiles, f, target_factor):
        diagonal = (1 - 4 * r) + dt * (f @ profiles).reshape(-1, 1)
        phi = diagonal * phi + r * (shift @ phi + phi @ shift)
        error = phi - (phi0 + target_factor * bump)
        return phi, (error * error).sum()

    profiles0 = np.ones((3, p.side))
    g = minirad.trace(step, phi0, profiles0, factors[0], target_factors[0], wrt=[0, 1])
    forward, adjoint = codegen(g, "forward").function, codegen(g).function

    def gradient(theta):
        profiles = (theta @ k["select"]).reshape(3, 3).T @ k["basis"]
        phi, total, states = phi0, 0.0, []
        for n in range(p.n_steps):
            states.append(phi)
            phi, squares = forward(phi, profiles, factors[n], target_factors[n])
            total += squares
        lam, profiles_bar, seed = np.zeros_like(phi), np.zeros_like(profiles), np.asarray(scale)
        for n in range(p.n_steps - 1, -1, -1):
            _, (lam, bar) = adjoint(states[n], profiles, factors[n], target_factors[n], lam,
                                    seed)
            profiles_bar += bar
        theta_bar = k["select"] @ (profiles_bar @ k["basis"].T).T.reshape(-1)   # M = C^T
        return [total * scale, theta_bar]
    return gradient


PDE = "PDE exact gradient: one step's generated code against the study's engine"
ENGINE = "numpy by hand: pde_engine.run exact (floor)"
PER_STEP = "minirad generated code of one step, per-step loop"


def pde_rows(steps: int, repeats: int) -> list[dict]:
    from minirad.studies.pde import Reactor, initial_theta
    from minirad.studies.pde import engine as pde_engine

    p, theta = Reactor.quick(n_steps=steps), initial_theta(rng=0)

    def engine():
        out = pde_engine.run(p, [theta], ["exact"])
        return [out.losses[0], out.gradients[0]]

    rows = compare(PDE, f"{steps:,} steps",
                   [Method(ENGINE, lambda: engine),
                    Method(PER_STEP, lambda: partial(generated_pde_gradient(p), theta))],
                   repeats, rtol=1e-8)
    for row in rows:
        if row["method"] == PER_STEP:
            row["note"] = ("phi_n kept per step (as the engine); each step's adjoint code "
                           "recomputes its forward values")
    return rows


def run(quick: bool = False) -> list[dict]:
    if quick:
        return mlp_rows(20, 3) + loop_rows(31, 50, 3) + pde_rows(64, 3)
    return (mlp_rows(150, 101) + loop_rows(961, 2000, 21) + pde_rows(4096, 5)
            + pde_rows(40961, 3))


def goals(rows: list[dict]) -> list[dict]:
    """Issue 41's goals for generated code, read off this group's rows."""
    return [
        ratio_goal(rows, "12,000-op loop: generated code vs the numpy floor", LOOP, LOOP_SIZE,
                   CODE, FLOOR, 1.2),
        ratio_goal(rows, "MLP gradient: generated code vs the numpy floor", MLP, MLP_SIZE,
                   CODE, FLOOR, 1.05),
        ratio_goal(rows, "MLP gradient: generated code vs PyTorch eager", MLP, MLP_SIZE,
                   CODE, "PyTorch eager", 1.0),
        ratio_goal(rows, "MLP gradient: generated code vs JAX jit", MLP, MLP_SIZE, CODE,
                   "JAX jit", 1.1),
        ratio_goal(rows, "PDE exact gradient, 40,961 steps: generated code vs pde_engine",
                   PDE, "40,961 steps", PER_STEP, ENGINE, 1.2),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    rows = run(parser.parse_args(argv).quick)
    print_results(rows)
    for g in goals(rows):
        shown = "-" if g["value"] is None else f"{g['value']:.3g}x"
        print(f"{g['goal']}: {shown} (target <= {g['limit']}x): {g['verdict']}")


if __name__ == "__main__":
    main()
