"""Gradient checkpointing: the gradient is the stored-everything gradient bit for bit,
and the step counts and memory equal the closed forms."""

import math

import numpy as np
import pytest

from minirad.checkpoint.schedules import (
    Binomial,
    Chain,
    StoreAll,
    Uniform,
    binomial_capacity,
    binomial_forward_steps,
    binomial_forward_steps_dp,
    repetition_number,
    reverse_chain,
    sqrt_every,
    uniform_forward_steps,
    uniform_peak_stored,
)


def rnn_chain(n_steps, d=5, seed=0):
    """x_{i+1} = tanh(W x_i + b_i); loss = sum_i 0.5 |x_i|^2 over i = 1..n.

    The parameter cotangent is (dW, db) packed in one flat vector so that it adds."""
    rng = np.random.default_rng(seed)
    W = rng.normal(scale=0.6, size=(d, d))
    b = rng.normal(scale=0.1, size=(n_steps, d))

    def step(i, x, W=W):
        return np.tanh(W @ x + b[i])

    def vjp(i, x, lam):
        y = np.tanh(W @ x + b[i])
        u = (1 - y * y) * lam  # through tanh
        return W.T @ u, np.concatenate([np.outer(u, x).ravel(), u])

    def seed(i, x):
        return x if i >= 1 else None

    return Chain(step=step, vjp=vjp, seed=seed), W, b


def rnn_loss(W, x0, b):
    x, total = x0, 0.0
    for i in range(len(b)):
        x = np.tanh(W @ x + b[i])
        total += 0.5 * x @ x
    return total


SCHEDULES = [Uniform(1), Uniform(3), Uniform(7), Binomial(1), Binomial(2), Binomial(3),
             Binomial(6), Binomial(40)]


def test_store_all_matches_central_differences():
    """The reference reverse sweep against an independent oracle."""
    n, d = 12, 5
    chain, W, b = rnn_chain(n, d)
    x0 = np.linspace(-1, 1, d)
    result = reverse_chain(chain, x0, n)
    h = 1e-6
    dW = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        E = np.zeros_like(W)
        E[idx] = h
        dW[idx] = (rnn_loss(W + E, x0, b) - rnn_loss(W - E, x0, b)) / (2 * h)
    dx0 = np.array([(rnn_loss(W, x0 + h * e, b) - rnn_loss(W, x0 - h * e, b)) / (2 * h)
                    for e in np.eye(d)])
    np.testing.assert_allclose(result.param_bar[:d * d].reshape(d, d), dW, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(result.state_bar, dx0, rtol=1e-6, atol=1e-9)
    assert result.forward_steps == n and result.peak_stored == n


@pytest.mark.parametrize("schedule", SCHEDULES, ids=repr)
@pytest.mark.parametrize("n", [1, 2, 13, 29])
def test_every_schedule_gives_the_stored_everything_gradient_bit_for_bit(schedule, n):
    chain, _, _ = rnn_chain(n)
    x0 = np.linspace(-1, 1, 5)
    ref = reverse_chain(chain, x0, n, StoreAll())
    got = reverse_chain(chain, x0, n, schedule)
    assert np.array_equal(got.state_bar, ref.state_bar)
    assert np.array_equal(got.param_bar, ref.param_bar)
    assert np.array_equal(got.final_state, ref.final_state)


def test_mlp_layers_with_their_own_weights():
    """Different parameters per step: the VJP writes each layer's gradient itself."""
    rng = np.random.default_rng(1)
    widths = [6, 8, 8, 7, 5, 3]
    Ws = [rng.normal(size=(o, i)) / np.sqrt(i) for i, o in zip(widths, widths[1:])]
    n = len(Ws)

    def run(schedule):
        grads = [None] * n

        def vjp(i, x, lam):
            z = Ws[i] @ x
            u = lam * (z > 0)
            grads[i] = np.outer(u, x)
            return Ws[i].T @ u, None

        chain = Chain(step=lambda i, x: np.maximum(Ws[i] @ x, 0.0), vjp=vjp,
                      seed=lambda i, x: np.ones_like(x) if i == n else None)
        return reverse_chain(chain, np.linspace(-1, 2, widths[0]), n, schedule), grads

    ref, ref_grads = run(StoreAll())
    for schedule in (Uniform(2), Binomial(2), Binomial(1)):
        got, got_grads = run(schedule)
        assert np.array_equal(got.state_bar, ref.state_bar)
        assert all(np.array_equal(a, b) for a, b in zip(got_grads, ref_grads))


# ------------------------------------------------------------------ counts
def scalar_chain(n):
    return Chain(step=lambda i, x: 0.9 * x + math.sin(x),
                 vjp=lambda i, x, lam: ((0.9 + math.cos(x)) * lam, None),
                 seed=lambda i, x: 1.0 if i == n else None)


def test_binomial_closed_form_equals_dynamic_programming():
    """Griewank's r n - beta(s+1, r-1) against the minimum over every first split."""
    for s in range(1, 7):
        for n in range(1, 61):
            assert binomial_forward_steps(n, s) == binomial_forward_steps_dp(n, s), (n, s)


def test_binomial_known_values():
    assert [binomial_forward_steps(n, 1) for n in range(1, 7)] == [n * (n - 1) // 2
                                                                 for n in range(1, 7)]
    assert binomial_forward_steps(50, 50) == 49  # enough snapshots: no step twice
    assert binomial_capacity(3, 4) == 35 and binomial_capacity(3, -1) == 0
    # beta(s, r - 1) < n <= beta(s, r)
    for n, s in [(35, 3), (36, 3), (1, 4), (1000, 5)]:
        r = repetition_number(n, s)
        assert binomial_capacity(s, r - 1) < n <= binomial_capacity(s, r)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 11, 36, 57, 300])
@pytest.mark.parametrize("s", [1, 2, 3, 5, 9])
def test_binomial_schedule_counts_steps_exactly(n, s):
    if s == 1 and n > 60:
        pytest.skip("quadratic")
    got = reverse_chain(scalar_chain(n), 0.3, n, Binomial(s))
    assert got.forward_steps == binomial_forward_steps(n, s) + 1  # + computing x_n itself
    # the snapshots plus the residual of the step being reversed, never more
    assert got.peak_stored <= min(s, n) + 1


def test_binomial_large_run_counts_and_holds_s_plus_one():
    n, s = 4000, 10
    got = reverse_chain(scalar_chain(n), 0.3, n, Binomial(s))
    assert got.forward_steps == binomial_forward_steps(n, s) + 1
    assert got.peak_stored == s + 1


@pytest.mark.parametrize("n", [1, 7, 30, 100, 101])
@pytest.mark.parametrize("every", [1, 2, 3, 10, 11])
def test_uniform_counts_and_peak_equal_the_formulas(n, every):
    got = reverse_chain(scalar_chain(n), 0.3, n, Uniform(every))
    assert got.forward_steps == uniform_forward_steps(n, every) == 2 * n - math.ceil(n / every)
    assert got.peak_stored == uniform_peak_stored(n, every)


def test_sqrt_schedule_holds_at_most_two_sqrt_n_states():
    for n in (100, 1000, 4096, 40961):
        k = sqrt_every(n)
        assert uniform_peak_stored(n, k) <= 2 * math.sqrt(n), n
        assert abs(k - math.sqrt(n)) <= 0.2 * math.sqrt(n) + 1


def test_peak_bytes_follow_the_arrays():
    d, n = 16, 40
    chain = Chain(step=lambda i, x: 0.5 * x, vjp=lambda i, x, lam: (0.5 * lam, None),
                  seed=lambda i, x: x)
    x0 = np.ones(d)
    assert reverse_chain(chain, x0, n).peak_bytes == n * d * 8
    k = sqrt_every(n)
    assert reverse_chain(chain, x0, n, Uniform(k)).peak_bytes == uniform_peak_stored(n, k) * d * 8
    # a residual smaller than the state (4 entries) with checkpoints of the state
    small = Chain(step=chain.step, vjp=lambda i, r, lam: (0.5 * lam, None),
                  seed=lambda i, r: np.zeros(d), residual=lambda i, x: x[:4].copy())
    got = reverse_chain(small, x0, n, Uniform(10))
    assert got.peak_bytes == 4 * d * 8 + 10 * 4 * 8  # 4 checkpoints + one segment's residuals


def test_bad_input_is_refused_with_a_clear_message():
    chain = scalar_chain(3)
    with pytest.raises(ValueError, match="n_steps must be a positive integer"):
        reverse_chain(chain, 0.3, 0)
    with pytest.raises(ValueError, match="snapshots/every"):
        reverse_chain(chain, 0.3, 3, Binomial(0))
    with pytest.raises(TypeError, match="positive integer, not float"):
        reverse_chain(chain, 0.3, 3, Uniform(2.5))
    with pytest.raises(TypeError, match="schedule must be"):
        reverse_chain(chain, 0.3, 3, "sqrt")
    with pytest.raises(TypeError, match="Chain"):
        reverse_chain(lambda i, x: x, 0.3, 3)
    with pytest.raises(ValueError, match="seed of the last state"):
        reverse_chain(Chain(step=chain.step, vjp=chain.vjp), 0.3, 3)


# ------------------------------------------- large sizes: closed forms, no recursion
def _peak_by_segments(n, every):
    """Uniform's peak from its definition: reversing segment j holds checkpoints
    0..j and that segment's states (checkpoint j among them)."""
    return max(j + min(every, n - j * every) for j in range(-(-n // every)))


def _repetition_by_counting(n, s):
    r = 0
    while math.comb(s + r, s) < n:
        r += 1
    return r


def test_closed_forms_equal_their_definitions_on_small_sizes():
    for n in range(1, 150):
        for every in range(1, n + 3):
            assert uniform_peak_stored(n, every) == _peak_by_segments(n, every), (n, every)
    for n in range(1, 700):
        best = min(range(1, n + 1), key=lambda e: (_peak_by_segments(n, e), e))
        assert sqrt_every(n) == best, n
    for n in range(1, 200):
        for s in range(1, 10):
            assert repetition_number(n, s) == _repetition_by_counting(n, s), (n, s)


def test_counts_at_large_sizes_are_fast_and_match_the_closed_forms(monkeypatch):
    import minirad.checkpoint.schedules as schedules

    calls = []
    capacity = schedules.binomial_capacity
    monkeypatch.setattr(schedules, "binomial_capacity",
                        lambda s, r: calls.append(1) or capacity(s, r))
    # one snapshot: beta(1, r) = r + 1, and each step is advanced to from x_0
    assert repetition_number(10**8, 1) == 10**8 - 1
    assert binomial_forward_steps(10**9, 1) == 10**9 * (10**9 - 1) // 2
    # two snapshots: beta(2, r) = (r + 1)(r + 2) / 2, the least r reaching n
    n = 10**15 + 7
    r = math.isqrt(2 * n)
    while (r + 1) * (r + 2) // 2 >= n:
        r -= 1
    assert repetition_number(n, 2) == r + 1
    assert len(calls) < 400  # a bisection: about 2 log2(n) coefficients per search, not r
    # Uniform: the spacing holds no more than any other near sqrt(n), which all hold more
    n = 10**6
    k = sqrt_every(n)
    e = np.arange(1, 3 * math.isqrt(n))
    peaks = e + -(-n // e) - 2 + (n % e == 0)  # uniform_peak_stored below n
    assert uniform_peak_stored(n, k) == peaks.min() and k == e[np.argmin(peaks)]
    assert uniform_peak_stored(n, k) <= 2 * math.sqrt(n)


@pytest.mark.parametrize("n, s", [(1300, 1200), (1500, 1000), (1000, 1000)])
def test_binomial_with_a_thousand_snapshots_runs_without_recursion(n, s):
    got = reverse_chain(scalar_chain(n), 0.3, n, Binomial(s))
    assert got.forward_steps == binomial_forward_steps(n, s) + 1
    assert got.peak_stored == min(s, n) + (s < n)  # the snapshots and the residual in use
    assert got.state_bar == reverse_chain(scalar_chain(n), 0.3, n).state_bar  # bit for bit


def test_binomial_schedule_equals_the_dynamic_programme():
    """The schedule's advances against the minimum over every first split, an
    oracle that shares no code with the closed form the schedule follows."""
    for s in range(1, 6):
        for n in range(1, 41):
            got = reverse_chain(scalar_chain(n), 0.3, n, Binomial(s))
            assert got.forward_steps == binomial_forward_steps_dp(n, s) + 1, (n, s)
            assert got.peak_stored <= min(s, n) + 1
