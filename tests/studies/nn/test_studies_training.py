"""Adam with L2 weight decay, the x0.6 schedule, minibatches with replacement."""

import io

import numpy as np
import pytest

from minirad.studies.nn.training import Adam, Progress, learning_rate, train


def test_schedule():
    assert [learning_rate(1.0, it, 10) for it in (0, 9, 10, 25)] == [1.0, 1.0, 0.6, 0.36]
    with pytest.raises(ValueError, match="decay_every"):
        learning_rate(1.0, 3, 0)


def test_adam_two_steps_by_hand():
    # Kingma & Ba, Algorithm 1, with the L2 term wd * p added to the gradient
    lr, wd, b1, b2, eps = 0.1, 0.5, 0.9, 0.999, 1e-8
    p = np.array([2.0])
    opt = Adam(weight_decay=wd)
    opt.step([p], [np.array([1.0])], lr)
    g1 = 1.0 + wd * 2.0
    m, v = (1 - b1) * g1, (1 - b2) * g1 ** 2
    expected = 2.0 - lr * (m / (1 - b1)) / (np.sqrt(v / (1 - b2)) + eps)
    assert p[0] == pytest.approx(expected, rel=1e-12)
    opt.step([p], [np.array([-3.0])], lr)
    g2 = -3.0 + wd * expected
    m, v = b1 * m + (1 - b1) * g2, b2 * v + (1 - b2) * g2 ** 2
    expected -= lr * (m / (1 - b1 ** 2)) / (np.sqrt(v / (1 - b2 ** 2)) + eps)
    assert p[0] == pytest.approx(expected, rel=1e-12)


def _mean_fit(params, x, y, rng):
    """Least squares of a constant to the batch: the gradient sees which rows were drawn."""
    diff = params[0] - x[:, 0]
    return float(np.mean(diff ** 2)), [np.array([2 * diff.mean()])]


def test_training_is_reproducible_and_draws_with_replacement():
    x = np.arange(5.0)[:, None]
    y = np.zeros(5, np.int64)
    seen = []

    def spy(params, xb, yb, rng):
        seen.append(xb[:, 0].copy())
        return _mean_fit(params, xb, yb, rng)

    run = dict(batch=5, iterations=200, lr=0.05, rng=7, progress=False)
    a = train(spy, [np.zeros(1)], x, y, **run)
    b = train(_mean_fit, [np.zeros(1)], x, y, **run)
    assert a.params[0] == b.params[0]
    # with replacement: some batch of 5 from 5 rows repeats a row
    assert any(len(set(batch)) < 5 for batch in seen)
    assert abs(a.params[0][0] - 2.0) < 0.3


def test_evaluations_and_progress():
    x = np.arange(5.0)[:, None]
    y = np.zeros(5, np.int64)
    out = io.StringIO()
    history = train(_mean_fit, [np.zeros(1)], x, y, batch=2, iterations=10, lr=0.1, rng=0,
                    eval_fn=lambda p: float(p[0][0]), eval_every=4, progress=out)
    assert history.iterations == [0, 4, 8, 10]
    assert history.evaluations[0] == 0.0 and len(history.batch_losses) == 10
    assert "10/10" in out.getvalue()
    quiet = io.StringIO()
    Progress(5, "x", stream=quiet, enabled=False).update(5)
    assert quiet.getvalue() == ""


def test_bad_arguments():
    x = np.zeros((3, 1))
    y = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="batch"):
        train(_mean_fit, [np.zeros(1)], x, y, batch=0, iterations=1, lr=0.1)
    with pytest.raises(ValueError, match="lr"):
        train(_mean_fit, [np.zeros(1)], x, y, batch=1, iterations=1, lr=0.0)

    def diverging(params, xb, yb, rng):
        return float("inf"), [np.zeros(1)]

    with pytest.raises(ValueError, match="too large"):
        train(diverging, [np.zeros(1)], x, y, batch=1, iterations=3, lr=0.1, progress=False)
    with pytest.raises(ValueError, match="gradients"):
        Adam().step([np.zeros(1)], [], 0.1)
