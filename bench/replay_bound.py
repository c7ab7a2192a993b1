"""The least a replay of the relaxation's graph can cost, against the numpy floor.

Replaying a traced graph and sweeping it edge by edge makes one numpy call per
vertex and per non-identity edge, and one addition per extra term of a cotangent.
For a step of ``x <- x + 0.01 (c x - x^3)`` the traced graph has six vertices, the
partial of ``x * x`` (``x + x``) and eleven edges; the hand-written adjoint fuses
them into six operations.  :func:`graph_calls` makes exactly the graph's calls with
no Python between them but the loop: no executor of the graph can do less, so its
time over the floor's bounds any replay from below (issue 30 asks for 1.2x).

    python -m bench.replay_bound      # about 1.8x on the 2-core machine
"""

from __future__ import annotations

import numpy as np

from bench.common import in_turns, one_blas_thread
from bench.programs import RATE, relaxation_by_hand


def graph_calls(x, c, steps: int):
    """[value, d/dx, d/dc] by the numpy calls of the traced graph's vertices and edges."""
    kept = []
    for _ in range(steps):
        cx, xx, twice_x = c * x, x * x, x + x     # vertices; the merged partial of x * x
        xxx = xx * x
        kept.append((x, xx, twice_x))
        x = x + RATE * (cx - xxx)                  # three more vertices
    value, x_bar, c_bar = x.sum(), np.ones_like(x), None
    for x, xx, twice_x in reversed(kept):
        scaled = RATE * x_bar                      # one call per edge that is not identity
        minus = -scaled
        xx_bar = minus * x
        terms = (minus * xx, xx_bar * twice_x, scaled * c)
        c_term = scaled * x
        c_bar = c_term if c_bar is None else c_bar + c_term
        for term in terms:                         # the cotangent of x: four terms
            x_bar = x_bar + term
    return [value, x_bar, c_bar]


def main() -> None:
    rng = np.random.default_rng(0)
    x, c = rng.uniform(-1, 1, 961), rng.uniform(0.5, 1.5, 961)
    floor, calls = relaxation_by_hand(x, c, 2000), graph_calls(x, c, 2000)
    assert all(np.allclose(a, b, rtol=1e-10) for a, b in zip(floor, calls))
    with one_blas_thread():
        turns = in_turns({"floor": lambda: relaxation_by_hand(x, c, 2000),
                          "graph calls": lambda: graph_calls(x, c, 2000)}, 21)
    ratio = turns.median_s["graph calls"] / turns.median_s["floor"]
    print(f"floor {turns.median_s['floor'] * 1e3:.1f} ms, the graph's numpy calls "
          f"{turns.median_s['graph calls'] * 1e3:.1f} ms: {ratio:.2f}x (medians of 21 rounds)")


if __name__ == "__main__":
    main()
