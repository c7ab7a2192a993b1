"""The saved state of the PDE study's optimisation, written after every Adam iteration so
that a run of hours can stop and go on (``minirad study pde --resume``).

A state is read back only if it is one the run it belongs to could have written:

* a SHA-256 of its content (and one of the settings it belongs to) must match, so a
  damaged file is refused, not resumed with other numbers;
* every field has its type, range and length checked against the configuration:
  ``done`` iterations in 1..iterations, ``done`` rows of losses, one row of theta and of
  each Adam moment per member, every number a finite JSON float;
* what Adam itself guarantees is checked too (derivations at :func:`adam_bounds`):
  ``v >= 0``, ``m^2 <= S_t v`` and theta no further from its start than Adam's
  bounded steps reach; the members' first losses are equal (they share a start);
* the generator's state must belong to the study's seed and lie a plausible number of
  draws after its start (:func:`draws_between`): a state changed by one is
  ~2^127 draws away;
* the first and the last iteration's losses are recomputed, at the study's start and at
  the parameters before the last step, which theta and the moments give back
  (:func:`load_state`): an edited loss, or a moment no gradient gives, is refused though
  every checksum is recomputed to match.

The checksums guard against damage (a file cut short, a changed byte, a state written
for other settings); they are no seal against a hand that recomputes them, which the
checks of content are for.

Anything else is a ValueError naming the field, never another exception.

>>> from types import SimpleNamespace
>>> cfg = SimpleNamespace(n_steps=8, iterations=3, lr=0.01, fractions=(0.1,), released=(),
...                       seed=0)
>>> sorted(run_key(cfg))
['fractions', 'iterations', 'lr', 'n_steps', 'released', 'seed']
>>> parse_state(b'{"done": 1}', cfg, "state.json")
Traceback (most recent call last):
...
ValueError: state.json is not a usable saved optimisation of the pde study: it lacks \
config, config_sha256, format, losses, m, rng, seconds, sha256, theta, v, version; \
remove it to start again
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat

import numpy as np

from ...graph.files import write_atomically
from ...rng import as_generator
from .engine import simulate_batch
from .problem import ADAM_BETAS, Reactor, adam_step, initial_theta

__all__ = ["STATE_FILE", "adam_bounds", "draws_between", "generator", "load_state",
           "parse_state", "run_key", "save_state"]

#: the file in the study's folder that lets an interrupted optimisation go on
STATE_FILE = "pde_optimise_state.json"
FORMAT = "minirad study pde: optimisation state"
VERSION = 2
FIELDS = ("config", "config_sha256", "done", "format", "losses", "m", "rng", "seconds",
          "sha256", "theta", "v", "version")
#: PCG64's multiplier: its state steps as state * MULTIPLIER + inc (mod 2^128) per draw
MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645
MASK = (1 << 128) - 1


class _Refused(ValueError):
    """What is wrong with a state file, worded for :func:`_refuse`."""


def run_key(cfg) -> dict:
    """The settings a saved optimisation must agree with to be continued."""
    return {"n_steps": cfg.n_steps, "iterations": cfg.iterations, "lr": cfg.lr,
            "fractions": list(cfg.fractions), "released": list(cfg.released),
            "seed": cfg.seed}


def generator(cfg) -> np.random.Generator:
    """The optimisation's generator at its start (the seed after the study's own)."""
    return as_generator(cfg.seed + 1)


def _members(cfg) -> int:
    return 1 + len(cfg.fractions) + len(cfg.released)


def _digest(obj) -> str:
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- writing
def save_state(path: str, cfg, state: dict, rng: np.random.Generator, seconds: float) -> None:
    """Write Adam's ``state`` (as :func:`minirad.studies.pde.adam` hands it over), the
    generator and the time spent, atomically; the record is checked as a reader would
    check it first, so nothing is written that could not be resumed."""
    key = run_key(cfg)
    record = {"format": FORMAT, "version": VERSION, "config": key,
              "config_sha256": _digest(key), "done": int(state["done"]),
              "seconds": float(seconds), "rng": rng.bit_generator.state,
              **{name: np.asarray(state[name], dtype=float).tolist()
                 for name in ("theta", "m", "v", "losses")}}
    record["sha256"] = _digest(record)
    text = json.dumps(record, allow_nan=False)
    try:
        _check(json.loads(text), cfg, path)
    except _Refused as error:  # the run itself went wrong (diverged): keep the last good state
        raise ValueError(f"not saving the optimisation's state to {path}: {error}") from None
    write_atomically(path, lambda f: f.write(text.encode("utf-8")))


# ---------------------------------------------------------------- reading
def load_state(path: str, cfg) -> dict:
    """The state saved at ``path`` for configuration ``cfg``: ``done``, ``theta``, ``m``,
    ``v`` (arrays of one row per member), ``losses`` (one array per iteration done), ``rng``
    (a generator state) and ``seconds``.  A missing file, one of other settings, one
    that fails any check, or no regular file (a pipe would block the reader) is a
    ValueError saying what is wrong."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise ValueError(f"there is no saved run to resume at {path} (check the folder "
                         f"given with -o); run without --resume to start one") from None
    except OSError as error:
        raise ValueError(f"cannot read the saved run {path}: {error.strerror or error}") \
            from None
    if not stat.S_ISREG(found.st_mode):   # a pipe would block the reader: not opened
        raise ValueError(f"{path} is not a usable saved optimisation of the pde study: it is "
                         f"not a regular file (a pipe, a device or a folder); remove it to "
                         f"start again")
    limit = _size_limit(cfg)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as error:
        raise ValueError(f"cannot read the saved run {path}: {error.strerror or error}") \
            from None
    state = parse_state(data, cfg, path)
    _check_losses(state, cfg, path)
    return state


def _check_losses(state: dict, cfg, where: str) -> None:
    """The losses the saved parameters give, recomputed (one forward simulation of every
    member at two points, seconds at the paper's size) against the losses saved: the first
    iteration's at the study's start, the last iteration's at the parameters before its step,
    which theta, m and v give back (``theta + adam_step(m, v, done)``).  An edited first
    or last loss, or a moment no gradient gives (an edited ``v`` changes the step back), is
    refused even with both checksums recomputed."""
    members = _members(cfg)
    with np.errstate(over="ignore"):   # an edited v past the float range: a step of 0
        before = state["theta"] + adam_step(state["m"], state["v"], state["done"], cfg.lr)
    start = np.tile(initial_theta(rng=cfg.seed), (members, 1))
    saved = np.concatenate([state["losses"][0], state["losses"][-1]])
    try:
        recomputed = simulate_batch(Reactor(n_steps=cfg.n_steps), np.vstack([start, before]))
    except ValueError as error:   # parameters outside what the problem takes
        recomputed, why = None, str(error)
    if recomputed is None or not np.allclose(recomputed, saved, rtol=1e-9, atol=0.0):
        worst = 0 if recomputed is None else int(np.argmax(np.abs(recomputed - saved)))
        found = why if recomputed is None else f"{recomputed[worst]!r}"
        row = "first" if worst < members else "last"
        raise ValueError(f"{where} is not a usable saved optimisation of the pde study: its "
                         f"{row} losses are not those of its parameters (member "
                         f"{worst % members}: saved {saved[worst]!r}, recomputed {found}), so "
                         f"its moments, theta or losses were changed; remove it to start again")


def parse_state(data: bytes, cfg, where: str = "the saved state") -> dict:
    """The checks of :func:`load_state` on a file's bytes (``where`` names it)."""
    try:
        if len(data) > _size_limit(cfg):
            raise _Refused(f"it is larger ({len(data):,} bytes or more) than any state of "
                           f"these settings")
        return _check(_decode(data), cfg, where)
    except _Refused as error:
        raise ValueError(f"{where} is not a usable saved optimisation of the pde study: "
                         f"{error}; remove it to start again") from None


def _size_limit(cfg) -> int:
    """Generous: 40 characters for each number a state of these settings holds."""
    numbers = (cfg.iterations + 3 * 7) * _members(cfg)
    return 8192 + 40 * numbers


def _decode(data: bytes):
    def no_constant(name):
        raise _Refused(f"it holds {name}, and every number of a state is finite")

    def finite(text):
        value = float(text)
        if not math.isfinite(value):
            raise _Refused(f"it holds the number {text}, beyond the range of a float")
        return value

    def unique(pairs):
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):
            raise _Refused("a key appears twice in one object")
        return dict(pairs)

    try:
        return json.loads(data.decode("utf-8"), parse_constant=no_constant,
                          parse_float=finite, object_pairs_hook=unique)
    except RecursionError:
        raise _Refused("it is nested deeper than any state") from None
    except UnicodeDecodeError:
        raise _Refused("it is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise _Refused(f"it is not valid JSON ({error})") from None
    except ValueError as error:  # an integer of more digits than Python converts
        if isinstance(error, _Refused):
            raise
        raise _Refused(f"it holds a number Python cannot read ({error})") from None


def _check(record, cfg, where: str) -> dict:
    if not isinstance(record, dict):
        raise _Refused(f"it holds a JSON {type(record).__name__}, not an object")
    missing, extra = sorted(set(FIELDS) - set(record)), sorted(set(record) - set(FIELDS))
    if missing or extra:
        raise _Refused("; ".join(filter(None, [
            missing and f"it lacks {', '.join(missing)}",
            extra and f"it has fields no state has: {', '.join(map(repr, extra[:5]))}"])))
    if record["format"] != FORMAT or record["version"] != VERSION:
        raise _Refused(f"its format is {_short(record['format'])} version "
                       f"{_short(record['version'])}, not {FORMAT!r} version {VERSION}")
    _check_config(record["config"], record["config_sha256"], cfg, where)
    members, done = _members(cfg), record["done"]
    if not _is_int(done) or not 1 <= done <= cfg.iterations:
        raise _Refused(f"done is {_short(done)}, not a count of iterations from 1 to "
                       f"{cfg.iterations}")
    arrays = {name: _floats(record[name], (members, 7), name) for name in ("theta", "m", "v")}
    losses = _floats(record["losses"], (done, members), "losses")
    seconds = record["seconds"]
    if not isinstance(seconds, float) or not 0 <= seconds < 1e9:
        raise _Refused(f"seconds is {_short(seconds)}, not a time from 0 to 1e9 s")
    _check_rng(record["rng"], cfg, done)
    claimed = record["sha256"]
    if _digest({k: v for k, v in record.items() if k != "sha256"}) != claimed:
        raise _Refused("its content does not match its checksum (sha256): it was changed "
                       "or damaged after it was written")
    _check_adam(arrays, losses, cfg, done)
    return {"done": done, "losses": list(losses), "rng": record["rng"], "seconds": seconds,
            **arrays}


def _short(value) -> str:
    """A field's value for a message, cut short (a damaged field can be huge)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_config(key, digest, cfg, where: str) -> None:
    expected = run_key(cfg)
    if not isinstance(key, dict) or set(key) != set(expected):
        raise _Refused("its config is not the settings object a state holds")
    if key != expected:
        changed = sorted(k for k in expected if key[k] != expected[k])
        raise ValueError(f"{where} was saved by a run with other settings "
                         f"({', '.join(changed)}); continue it with the same settings or "
                         f"remove it")
    if digest != _digest(expected):
        raise _Refused("its settings do not match their checksum (config_sha256)")


def _floats(rows, shape: tuple, name: str) -> np.ndarray:
    """A list of ``shape[0]`` lists of ``shape[1]`` JSON floats, as an array."""
    if not isinstance(rows, list) or len(rows) != shape[0]:
        raise _Refused(f"{name} is not a list of {shape[0]} rows")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != shape[1]:
            raise _Refused(f"{name}[{i}] is not a list of {shape[1]} numbers")
        for x in row:
            if not isinstance(x, float):
                raise _Refused(f"{name}[{i}] holds {_short(x)}, not a floating-point number")
    return np.array(rows, dtype=float).reshape(shape)


# -------------------------------------------------------- Adam's invariants
def adam_bounds(done: int, betas=ADAM_BETAS) -> tuple[float, float]:
    """``(S, reach)`` after ``done`` Adam iterations, for any gradients: ``m^2 <= S v``
    entry by entry, and ``|theta - theta_0| <= reach * lr``.

    With ``m_t = sum_i (1-b1) b1^(t-i) g_i`` and ``v_t = sum_i (1-b2) b2^(t-i) g_i^2``,
    Cauchy-Schwarz gives ``m_t^2 <= S_t v_t`` with
    ``S_t = sum_{j<t} (1-b1)^2 b1^(2j) / ((1-b2) b2^j)``.  A step moves theta by
    ``lr |m_hat| / (sqrt(v_hat) + eps) <= lr sqrt(S_t) sqrt(1-b2^t) / (1-b1^t)``, and
    ``reach`` sums that over the steps taken.

    >>> s, reach = adam_bounds(1)          # the first step: m = (1-b1) g, v = (1-b2) g^2
    >>> round(s, 9), round(reach, 9)       # (0.1 g)^2 = 10 * 0.001 g^2; a step of lr
    (10.0, 1.0)
    """
    b1, b2 = betas
    t = np.arange(1, done + 1)
    s = np.cumsum((1 - b1) ** 2 / (1 - b2) * (b1 ** 2 / b2) ** (t - 1))
    steps = np.sqrt(s) * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
    return float(s[-1]), float(steps.sum())


def _check_adam(arrays: dict, losses: np.ndarray, cfg, done: int) -> None:
    m, v, theta = arrays["m"], arrays["v"], arrays["theta"]
    s, reach = adam_bounds(done)
    if np.any(v < 0):
        raise _Refused("Adam's second moment v has a negative entry")
    # a little room for rounding: m and v are sums of rounded products (and a product
    # past the float range is inf, still compared correctly)
    with np.errstate(over="ignore"):
        inconsistent = np.any(m * m > s * v * (1 + 1e-9) + 1e-300)
    if inconsistent:
        raise _Refused(f"Adam's moments are inconsistent: m^2 exceeds {s:.4g} v somewhere, "
                       f"which no sequence of gradients gives")
    drift = np.abs(theta - initial_theta(rng=cfg.seed)).max()
    if drift > reach * cfg.lr * (1 + 1e-9) + 1e-12:
        raise _Refused(f"theta is {drift:.4g} from its start, further than {done} Adam "
                       f"steps of lr {cfg.lr:g} reach ({reach * cfg.lr:.4g})")
    if np.any(losses < 0) or np.any(losses[0] != losses[0, 0]):
        raise _Refused("its losses are not those of one start: a loss is negative or the "
                       "members' first losses differ")


# ------------------------------------------------------------- the generator
def draws_between(start: int, end: int, inc: int) -> int:
    """How many draws take PCG64's 128-bit state from ``start`` to ``end`` (each draw
    steps ``state * MULTIPLIER + inc``), by Brown's jump-ahead one bit at a time.

    >>> g = np.random.default_rng(5)
    >>> before = g.bit_generator.state["state"]
    >>> _ = g.bit_generator.random_raw(1000)
    >>> draws_between(before["state"], g.bit_generator.state["state"]["state"], before["inc"])
    1000
    """
    mult, plus, bit, distance = MULTIPLIER, inc, 1, 0
    while start != end and bit <= MASK:
        if (start ^ end) & bit:
            start = (start * mult + plus) & MASK
            distance |= bit
        plus = ((mult + 1) * plus) & MASK  # the step applied twice: a jump of 2 bit
        mult = (mult * mult) & MASK
        bit <<= 1
    return distance if start == end else MASK + 1   # unreachable: inc is even


def _check_rng(state, cfg, done: int) -> None:
    if not isinstance(state, dict) or set(state) != {"bit_generator", "state", "has_uint32",
                                                     "uinteger"} \
            or state["bit_generator"] != "PCG64" or not isinstance(state["state"], dict) \
            or set(state["state"]) != {"state", "inc"}:
        raise _Refused("rng is not the state of a PCG64 generator")
    inner = state["state"]
    if not all(_is_int(inner[k]) and 0 <= inner[k] <= MASK for k in ("state", "inc")) \
            or state["has_uint32"] not in (0, 1) or not _is_int(state["has_uint32"]) \
            or not _is_int(state["uinteger"]) or not 0 <= state["uinteger"] < 2 ** 32:
        raise _Refused("rng holds numbers outside a PCG64 state's ranges")
    start = generator(cfg).bit_generator.state["state"]
    if inner["inc"] != start["inc"]:
        raise _Refused(f"rng belongs to another seed than the study's ({cfg.seed})")
    # at most (N+1) x (grid points) draws per member and iteration, x4 for rejections:
    # far below the ~2^127 draws a damaged state lies from the start
    grid = (Reactor().cells + 1) ** 2
    most = 4 * done * _members(cfg) * (cfg.n_steps + 1) * grid
    least = done if _members(cfg) > 1 else 0
    if not least <= draws_between(start["state"], inner["state"], start["inc"]) <= most:
        raise _Refused("rng is not a state the study's generator reaches in the iterations "
                       "done")
