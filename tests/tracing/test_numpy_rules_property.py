"""Random programs drawn from every rule of the catalog (issue 33), checked by hypothesis:
the gradient against fourth-order central differences to 1e-8 in float64, against the
float64 answer in float32 (which stays float32), and against JAX where it is installed.

A program chains one to three rules; each rule's operands are cut from the earlier
values (flattened, repeated, reshaped) and put in the rule's domain with tanh, so any
chain is defined: ``lo + (hi - lo) (tanh(v) + 1) / 2`` for an interval, ``tanh(v)`` plus
``n I`` for a matrix that must be invertible (and ``B B^T + n I`` for one that must be
positive definite).  Where a rule's value jumps (floor, remainder, ...) within reach of
the differences, two step sizes disagree and the point is left to JAX, which has no step.
The examples are fixed (``derandomize``): the same programs every run."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from test_numpy_rules import PROMOTED, central_jacobian

import minirad
from minirad import trace
from minirad.tracing.catalog import EXAMPLES

NAMES = sorted(EXAMPLES)
SIZES = ((12,), (7,))     # the program's two inputs


def fit(xp, value, operand):
    """``value`` (any shape) cut and repeated to the operand's shape, inside its domain."""
    shape = operand.shape
    size = math.prod(shape)
    flat = xp.ravel(value)
    repeats = -(-size // flat.shape[0])
    if repeats > 1:
        flat = xp.concatenate([flat] * repeats)
    u = xp.tanh(flat[:size]).reshape(shape)
    if isinstance(operand.domain, tuple):
        low, high = operand.domain
        return low + (high - low) * (u + 1.0) / 2.0
    n = shape[-1]
    if operand.domain == "positive definite":
        u = u @ xp.swapaxes(u, -1, -2)
    return u + n * xp.eye(n, dtype=u.dtype)


def program_of(plan):
    """The program ``plan`` describes, as a function of a numpy namespace and the inputs."""
    def program(xp, x, y):
        pool, total = [x, y], 0.0
        for k, (name, picks) in enumerate(plan):
            example = EXAMPLES[name]
            args = [fit(xp, pool[p % len(pool)], operand)
                    for p, operand in zip(picks, example.operands)]
            out = example.program(xp, *args)
            pool.append(out)
            weights = np.sin(np.arange(math.prod(out.shape)) + k + 1.0).reshape(
                out.shape).astype(out.dtype)     # float32 weights for a float32 value
            total = total + (out * weights).sum()
        return total
    return program


def inputs(seed, dtype):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, size).astype(dtype) for size in SIZES]


plans = st.lists(st.tuples(st.sampled_from(NAMES), st.lists(st.integers(0, 7), min_size=3,
                                                           max_size=3)),
                 min_size=1, max_size=3)
seeds = st.integers(0, 2 ** 32 - 1)
FIXED = settings(derandomize=True, deadline=None, database=None,
                 phases=[Phase.generate, Phase.shrink],
                 suppress_health_check=[HealthCheck.too_slow])


def scale_of(expected) -> float:
    return max(1.0, float(np.max(np.abs(expected))))


@settings(FIXED, max_examples=60)
@given(plan=plans, seed=seeds)
def test_random_programs_in_float64_match_central_differences(plan, seed):
    program = program_of(plan)
    args = inputs(seed, np.float64)
    g = trace(lambda x, y: program(np, x, y), *args)
    J = minirad.jacobian(g)
    coarse = central_jacobian(lambda x, y: program(np, x, y), args, 1e-3)
    fine = central_jacobian(lambda x, y: program(np, x, y), args, 5e-4)
    scale = scale_of(coarse)
    if np.max(np.abs(coarse - fine)) > 1e-9 * scale:
        event("a jump within reach of the differences: left to JAX")
        return
    event("checked against central differences")
    np.testing.assert_allclose(J, coarse, rtol=1e-8, atol=1e-8 * scale)


@settings(FIXED, max_examples=30)
@given(plan=plans, seed=seeds)
def test_random_programs_stay_float32_and_agree_with_float64(plan, seed):
    if any(name in PROMOTED for name, _ in plan):
        plan = [step for step in plan if step[0] not in PROMOTED] or [("np.sin(x)", [0, 0, 0])]
    program = program_of(plan)
    args = inputs(seed, np.float32)
    g = trace(lambda x, y: program(np, x, y), *args)
    assert {np.dtype(d) for d in g.dtypes} == {np.dtype(np.float32)}
    exact = minirad.jacobian(trace(lambda x, y: program(np, x, y),
                                   *[a.astype(np.float64) for a in args]))
    # float32 rounding (eps 1.2e-7) through up to three rules and the weighting
    np.testing.assert_allclose(minirad.jacobian(g), exact, rtol=2e-3,
                               atol=2e-3 * scale_of(exact))


# jax.numpy spells these as numpy does; each program jit-compiles once (about 0.15 s)
JAX_NAMES = [name for name in NAMES if EXAMPLES[name].jax]


@settings(FIXED, max_examples=12)
@given(plan=st.lists(st.tuples(st.sampled_from(JAX_NAMES),
                               st.lists(st.integers(0, 7), min_size=3, max_size=3)),
                     min_size=2, max_size=4),
       seed=seeds)
def test_random_programs_match_jax(jax_x64, plan, seed):
    jax, jnp = jax_x64
    program = program_of(plan)
    args = inputs(seed, np.float64)
    J = minirad.jacobian(trace(lambda x, y: program(np, x, y), *args))
    dx, dy = jax.jit(jax.grad(lambda x, y: program(jnp, x, y), argnums=(0, 1)))(*args)
    expected = np.concatenate([np.asarray(dx), np.asarray(dy)])[None, :]
    tolerance = 1e-8 if all(step[0] != "x.astype(np.float32)" for step in plan) else 1e-5
    np.testing.assert_allclose(J, expected, rtol=tolerance, atol=tolerance * scale_of(expected))


@pytest.fixture(scope="module")
def jax_x64():
    """jax with float64 on (the tests compare in float64), as it was afterwards."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield jax, jnp
    jax.config.update("jax_enable_x64", before)
