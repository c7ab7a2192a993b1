"""The reaction-diffusion loss as a numpy program of theta, on the library's graph.

:func:`loss` is the study's loss (:func:`minirad.studies.pde.simulate`) written as
plain numpy on theta, the way a user would write a time-stepping program: on a
float array it runs the simulation; :func:`minirad.trace` makes its graph, one
vertex per array operation.  :class:`ReplayedGradient` is the exact gradient an
optimisation needs at every iteration, on that graph: traced at the first
theta, replayed (:func:`minirad.replay`) at the others, so the program's Python
runs once.

The study itself runs its hand-written engine (:mod:`minirad.studies.pde.engine`):
the graph keeps every intermediate array (about 62 KB a step, 2.5 GB at the
paper's 40,961 steps), and a replay and its sweep cost about fourteen times the
engine's gradient (measured at 1,024 and 4,096 steps, ``python -m bench.bench_pde``).

>>> from minirad.studies.pde import Reactor, exact_gradient, initial_theta, simulate
>>> p = Reactor.quick(n_steps=16)
>>> theta = initial_theta(rng=0)
>>> bool(np.isclose(loss(p, theta), simulate(p, theta), rtol=1e-12))
True
>>> gradient = ReplayedGradient(p)
>>> value, g = gradient(theta)                      # traced
>>> value, g = gradient(theta + 0.1)                # replayed
>>> bool(np.allclose(g, exact_gradient(p, theta + 0.1)[1], rtol=1e-10, atol=0))
True
"""

from __future__ import annotations

import math

import numpy as np

from ...exact.sweeps import gradient
from ...tracing import replay, trace
from ...tracing.replay import recording
from .problem import Reactor, check_theta, initial_state, target

__all__ = ["ReplayedGradient", "loss"]

#: where theta's seven entries sit in the 3 x 3 coefficient matrix (row-major): see
#: :func:`minirad.studies.pde.coefficient_matrix`
_SLOTS = (0, 1, 2, 4, 5, 7, 8)


def loss(p: Reactor, theta):
    """The study's loss at ``theta``: the FTCS simulation and the mean squared distance
    to the target, in numpy operations a tracer records (a theta that is a traced
    array gives the graph)."""
    place = np.zeros((7, 9))
    place[np.arange(7), _SLOTS] = 1.0
    t = math.pi * p.dt * np.arange(p.n_steps)
    factors = np.stack([np.ones(p.n_steps), np.sin(t), np.cos(t)], axis=1)
    # the diagonal of every step's update, (steps, side): 1 - 4r + dt C(x, t_n)
    weights = factors @ (theta @ place).reshape(3, 3).T
    diagonals = (1 - 4 * p.ratio) + p.dt * (weights @ p.basis)
    shift = np.eye(p.side, k=1) + np.eye(p.side, k=-1)
    phi, total = initial_state(p), 0.0
    for n in range(p.n_steps):
        phi = diagonals[n].reshape(-1, 1) * phi + p.ratio * (shift @ phi + phi @ shift)
        error = phi - target(p, (n + 1) * p.dt)
        total = total + (error * error).sum()
    return total / (p.n_steps * p.size)


class ReplayedGradient:
    """``gradient(theta) -> (loss, d loss / d theta)`` on the graph of :func:`loss`:
    traced at the first call, replayed at every later one."""

    def __init__(self, p: Reactor):
        self.p, self.recording = p, None   # the trace's recording, none of its values

    def __call__(self, theta):
        theta = check_theta(theta)
        if self.recording is None:
            g = trace(lambda theta: loss(self.p, theta), theta)
            self.recording = recording(g)
        else:
            g = replay(self.recording, theta)
        return float(g.values[g.outputs[0]]), gradient(g)[0]
