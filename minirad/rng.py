"""One way to turn an ``rng=`` argument into a numpy Generator."""

import numpy as np


def as_generator(rng) -> np.random.Generator:
    """A Generator as given, or a new one from an integer seed (None: fresh entropy).

    >>> int(as_generator(0).integers(10)) == int(as_generator(0).integers(10))
    True
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool)):
        if rng is not None and rng < 0:
            raise ValueError(f"an rng seed must be a non-negative integer, not {rng}")
        return np.random.default_rng(rng)
    raise ValueError(f"rng must be a numpy.random.Generator or an integer seed, not "
                     f"{type(rng).__name__}")


def seed_from(rng) -> int:
    """An integer seed: a seed as given, or one drawn from a Generator, so that
    several runs (curves, depths) can share or split it reproducibly.

    >>> seed_from(7)
    7
    """
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(2**63))
    as_generator(rng)  # validates a seed
    return rng
