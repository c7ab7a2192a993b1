"""The neural-network study end to end at toy size, and its command."""

from dataclasses import replace

import pytest

from minirad import cli
from minirad.studies.nn import report as nn_report
from minirad.studies.nn import study as nn


def tiny():
    return nn.StudyConfig(iterations=6, decay_every=3, seeds=(0,), evaluations=2,
                          noise_draws=1, pilot_iterations=2, conv_channels=(2, 2, 2, 2),
                          conv_draws=1, conv_pilot_iterations=1,
                          conv_train_channels=(2, 2, 2, 2), conv_iterations=2,
                          irnn_iterations=2, other_evaluations=1, other_eval_examples=20)


@pytest.mark.slow
def test_study_writes_figures_and_table(tmp_path):
    result = nn.run_study(str(tmp_path), config=tiny(), progress=False)
    for key in ("training", "noise_mlp", "noise_convnet", "budget", "training_convnet",
                "training_irnn"):
        with open(result["paths"][key], "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    text = open(result["paths"]["table"]).read()
    assert "| mlp | 419,110 | rules | 2.69 | 2.51 | 2.20 | 2.00 | 1.80 | 1.75 | 18 |" in text
    assert "| | | paper | 2.69 | 2.51 | 2.21 | 2.00 | 1.80 | 1.75 | 22 |" in text
    for name in nn.ESTIMATORS:
        assert f"| {name} |" in text
    assert set(result["runs"]) == set(nn.ESTIMATORS)
    assert "Beyond the paper" in text
    allocation = result["budget"]
    assert sum(allocation["chosen"]) == sum(allocation["uniform"]) == 79 + 3 * 30
    assert allocation["chosen_variance"].sum() <= allocation["uniform_variance"].sum()
    # every estimator's evaluations: (training loss, test accuracy) at steps 0, 3, 6
    assert all(h.iterations == [0, 3, 6] for runs in result["runs"].values() for h in runs)
    # the ConvNet and the IRNN train with all five estimators too, each with its own
    # equal-memory batch from the rules
    for network, reduced in (("convnet", 21), ("irnn", 19)):
        assert set(result[f"{network}_runs"]) == set(nn.ESTIMATORS)
        assert f"## Training the {'ConvNet' if network == 'convnet' else 'IRNN'}" in text
        assert f"| reduced_batch | {reduced} |" in text
    assert "The MLP trains on the traced LCG of arrays" in text


def test_quick_config_and_estimators():
    assert nn.StudyConfig.quick().iterations < nn.StudyConfig().iterations
    assert set(nn.PAPER_HYPERPARAMETERS) == set(nn.ESTIMATORS)
    with pytest.raises(ValueError, match="estimator must be one of"):
        nn.estimator_kind("sampled")


@pytest.mark.slow
def test_cli_study(tmp_path, monkeypatch, capsys):
    """The command runs on a damaged MNIST cache (one line says it is rebuilt); a quick run
    is a smoke test, and its pictures and report say so and rank nothing."""
    monkeypatch.setattr(nn.StudyConfig, "quick",
                        classmethod(lambda cls: replace(tiny(), smoke_test=True)))
    titles = []
    real_plot = nn_report.plot_training

    def plot_training(runs, batches, title, path, **kwargs):
        titles.append((title, kwargs.get("loss_title", "")))
        real_plot(runs, batches, title, path, **kwargs)

    monkeypatch.setattr(nn_report, "plot_training", plot_training)
    cache = tmp_path / "cache" / "minirad"
    cache.mkdir(parents=True)
    (cache / "mnist_5k.npz").write_bytes(b"PK\x03\x04 and then nothing a zip holds")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cli.main(["study", "nn", "--quick", "-o", str(tmp_path / "out")]) == 0
    out, err = capsys.readouterr()
    assert "nn_study.md" in out and (tmp_path / "out" / "nn_training.png").is_file()
    assert err.count("not a usable MNIST cache") == 1 and "rebuilding it from" in err
    assert len(titles) == 3 and all(title.startswith("SMOKE TEST") and "Figure 6" not in loss
                                    for title, loss in titles)
    text = (tmp_path / "out" / "nn_study.md").read_text()
    assert "**A smoke test, not the paper's results**" in text
    assert "lowest first" not in text and "highest first" not in text
    assert "the paper's order" not in text
    assert text.count("not ranked (one seed") == 3     # MLP, ConvNet, IRNN
