"""Generated code (minirad.codegen) against the numpy floor, timed in turns.

Two programs a training loop runs many times, traced once, their adjoint code
generated once (neither timed), then called at each iteration:

* ``relaxation x <- x + 0.01 (c x - x^3)``: 2,000 steps on a 961-vector, the
  12,000-operation loop (:func:`bench.programs.relaxation`), against
  :func:`bench.programs.relaxation_by_hand`; goal at most 1.2x;
* the MLP 784-300-300-300-10 gradient (batch 150, float32) against
  :func:`bench.programs.mlp_gradient_by_hand`; goal at most 1.05x.

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
from bench.bench_vector import LOOP, MLP, mlp_problem
from bench.common import print_results, ratio_goal
from bench.peers import Method, compare, minirad_kit, replayed_gradient, value_and_gradient
from bench.programs import mlp_gradient_by_hand, mlp_loss, relaxation, relaxation_by_hand
from minirad.tracing.codegen import compiled

FLOOR, CODE, REPLAY = ("numpy by hand (floor)", "minirad generated code (codegen)",
                       "minirad replay of the traced graph")
PEERS = (("PyTorch eager", "torch"), ("JAX jit", "jax"))
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


def run(quick: bool = False) -> list[dict]:
    if quick:
        return mlp_rows(20, 3) + loop_rows(31, 50, 3)
    return mlp_rows(150, 41) + loop_rows(961, 2000, 21)


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
