"""What the neural-network report may claim: orders with ties, chance level, noise
comparisons only beyond their uncertainty, and the standard errors behind them."""

import numpy as np
import pytest

from minirad.studies.nn import mlp_numpy as mlp
from minirad.studies.nn import report as nn_report
from minirad.studies.nn import study as nn
from minirad.studies.nn.noise import Setting, gradient_noise
from minirad.studies.nn.training import History
from minirad.studies.nn.verdicts import at_chance, noise_verdict, ranking


def test_ranking_ties_neighbours_within_their_seed_to_seed_spread():
    # by hand: a and b differ by 0.10, spread hypot(0.0707, 0.0707) = 0.1 -> a tie at 0.10;
    # b and c differ by 1.0 against a spread of 0.1 -> apart
    values = {"c": [2.05, 2.15], "a": [1.0, 1.1], "b": [1.15, 1.05]}
    values["b"] = [1.1, 1.2]
    assert ranking(values) == "a ≈ b < c"
    assert ranking(values, higher_is_better=True) == "c > b ≈ a"
    values["b"] = [1.2, 1.3]  # now 0.2 apart against a spread of 0.1
    assert ranking(values) == "a < b < c"
    assert ranking({"a": [0.1], "b": [0.9]}).startswith("not ranked (one seed")


def test_at_chance_is_three_binomial_deviations_around_a_tenth():
    # sqrt(0.1 * 0.9 / 1000) = 0.009487, three of them 0.02846: 12.8% in, 12.9% out
    names = at_chance({"in": [0.128], "out": [0.129], "low": [0.072], "mixed": [0.1, 0.5]},
                      n_test=1000)
    assert names == ["in", "low"]


def test_noise_verdict_claims_little_on_equal_noises_and_finds_a_real_difference():
    """2,000 pairs of equal noises measured from 5 skewed (chi-square, 1 dof) draws each:
    the t-test at 5% calls them different in at most 5% of pairs (seeds 0-9: 1.0-1.5%, the
    skew makes it conservative; a false failure needs a threefold excess). With 30 draws
    as spread as a layer's MSE (chi-square with 10 dof, relative spread 0.45) a twofold
    difference is found in at least 95% of pairs (seeds 0-9: 99.8-100%)."""
    rng = np.random.default_rng(0)

    def measured(scale, draws, dof=1):
        x = scale * rng.chisquare(dof, size=draws) / dof
        return x.mean(), x.std(ddof=1) / np.sqrt(draws)

    claims = [noise_verdict(measured(1, 5), measured(1, 5), 5) != "not told apart"
              for _ in range(2000)]
    assert np.mean(claims) <= 0.05
    found = [noise_verdict(measured(2, 30, 10), measured(1, 30, 10), 30) == "higher"
             for _ in range(500)]
    assert np.mean(found) >= 0.95
    assert noise_verdict((2.0, 0.1), (1.0, 0.1), 1) == "not told apart"  # no error bars


def test_gradient_noise_reports_the_mean_and_standard_error_of_the_draws():
    """Exact minibatches of b examples drawn with replacement: the expected squared error of
    their mean gradient is (1/b) mean_i |G_i - g|^2, G_i one example's gradient, g the
    full one, both computed here by brute force, example by example. 400 draws: the
    measured mean lies within 4 of its standard errors (a false failure ~1e-4 for a
    normal mean) and the standard error is the draws' spread over sqrt(400)."""
    gen = np.random.default_rng(5)
    params = [p.astype(np.float64) for p in mlp.init_mlp((5, 4, 3), rng=0)]
    x, y = gen.standard_normal((40, 5)), gen.integers(3, size=40)
    per_example = [mlp.loss_and_grad(params, x[i:i + 1], y[i:i + 1])[1][0::2]
                   for i in range(40)]
    full = [np.mean([g[layer] for g in per_example], axis=0) for layer in range(2)]
    batch = 4
    exact = [np.mean([np.sum((g[layer] - full[layer]) ** 2) for g in per_example])
             / (batch * full[layer].size) for layer in range(2)]
    row, = gradient_noise(mlp.loss_and_grad, params, x, y,
                          [Setting("exact", "exact", 1.0, batch)], draws=400, rng=1)
    assert row["draws"] == 400 and row["se"].shape == (2,)
    assert np.all(np.abs(row["mse"] - exact) < 4 * row["se"])
    assert np.all((0.02 * row["mse"] < row["se"]) & (row["se"] < row["mse"]))


def _rows(rad, small, draws):
    return [{"label": "different sample, larger batches", "kind": "different_sample",
             "batch": 150, "mse": np.array([rad[0]]), "se": np.array([rad[1]]),
             "draws": draws},
            {"label": "reduced batch (exact)", "kind": "exact", "batch": 18,
             "mse": np.array([small[0]]), "se": np.array([small[1]]), "draws": draws}]


@pytest.mark.parametrize("rad, small, draws, word", [
    ((2.0, 0.1), (1.0, 0.1), 30, "has higher noise than"),
    ((1.0, 0.1), (2.0, 0.1), 30, "has lower noise than"),
    ((0.94, 0.3), (1.0, 0.3), 5, "noise not told apart"),
])
def test_the_noise_bullet_agrees_with_its_ratio(rad, small, draws, word):
    line, = nn._comparison(_rows(rad, small, draws), ["layer 1"], reduced=18, batch=150)
    assert word in line and f"{rad[0] / small[0]:.2f}x" in line
    assert f"± {rad[1]:.2g}" in line


def _history(loss, accuracy):
    return History([0, 10], [(2.3, 0.1), (loss, accuracy)], [], 1.0, [1.0])


def test_the_training_table_ranks_only_what_the_seeds_tell_apart():
    runs = {"baseline": [_history(0.010, 0.94), _history(0.014, 0.95)],
            "different_sample": [_history(0.150, 0.92), _history(0.160, 0.92)],
            "reduced_batch": [_history(0.155, 0.91), _history(0.170, 0.93)]}
    rows = {name: {"batch": 150, "lr": 1e-3, "weight_decay": 0.0, "rules": 1.0, "tape": 1.0,
                   "tracemalloc": 1.0, "ms": 1.0} for name in runs}
    text = "\n".join(nn_report.training_markdown(runs, rows, (0, 1), list(runs), n_test=1000))
    assert "lowest first: baseline < different_sample ≈ reduced_batch." in text
    # accuracies: 94.5 +- 0.71 against 92 +- 0 (2.5 apart, spread 0.71), then 92 and 92
    assert "highest first: baseline > different_sample ≈ reduced_batch." in text
    one_seed = {name: h[:1] for name, h in runs.items()}
    text = "\n".join(nn_report.other_training_markdown(
        one_seed, {n: 150 for n in runs}, {n: 1.0 for n in runs}, 1e-3, n_test=1000))
    assert "not ranked (one seed" in text and " < " not in text
    guessed = {name: [_history(2.30, 0.10)] for name in runs}
    text = "\n".join(nn_report.other_training_markdown(
        guessed, {n: 150 for n in runs}, {n: 1.0 for n in runs}, 1e-3, n_test=1000))
    assert "At chance" in text and "baseline, different_sample, reduced_batch." in text
