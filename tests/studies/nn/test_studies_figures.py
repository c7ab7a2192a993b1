"""The numbers behind the paper's Figures 4, 7a, 8, 9 and 10, on tiny configurations.

Oracles: the injection's own draws re-derived from the seed (Figure 4), the
ConvNet's hand-written numpy layer, the PDE sampler's draws and one FTCS step
by hand (Figure 7a), evaluations recomputed from the initial parameters, the
equal-memory batch from its definition, a z-test of different project's mean
against the exact gradient.
"""

import math

import numpy as np
import pytest

from minirad import cli
from minirad.graph.memory import retained_memory
from minirad.studies.nn import convnet_numpy, mlp_numpy, networks
from minirad.studies.nn import figures as nn_figures
from minirad.studies.nn import graph as nn_graph
from minirad.studies.nn import memory as rules
from minirad.studies.nn.activations import sample_pattern
from minirad.studies.nn.data import mnist_split
from minirad.studies.nn.figures import FiguresConfig
from minirad.studies.pde import Reactor, initial_theta, sampler
from minirad.studies.pde.sampling import FILE, run_figure, sampled_states

# its module fixture is built once per run: one worker runs this module (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("studies_figures")


@pytest.fixture(scope="module")
def data():
    return mnist_split(rng=0)


def tiny(**changes) -> FiguresConfig:
    settings = dict(batch=20, sizes=(784, 8, 10), iterations=2, decay_every=1, seeds=(0,),
                    evaluations=1, irnn_iterations=2, irnn_seeds=(0,), irnn_eval_examples=40,
                    fractions=(0.1, 0.5), sweep_seeds=(0,), conv_examples=2, timing_rounds=1)
    settings.update(changes)
    return FiguresConfig(**settings)


# ------------------------------------------------------------------ Figure 4
@pytest.mark.parametrize("kind", ["different_sample", "same_sample"])
def test_sample_positions_are_the_injections_draws(data, kind):
    found = nn_figures.sample_positions(data, kind, 0.1, channels=(2, 3, 3, 3), layer=2,
                                        examples=2, rng=5)
    b, c, h, w = found["activation"].shape
    assert (b, c, h, w) == (2, 2, 28, 28) and found["d"] == 784 and found["k"] == 79
    # the injection draws one seed per layer from rng, in layer order, and the layer's
    # pattern from that seed: layer 2 is the second draw
    gen = np.random.default_rng(5)
    seed = [int(gen.integers(2**63)) for _ in range(2)][1]
    picks = sample_pattern(kind, b * c, h * w, 79, seed)
    expected = np.broadcast_to(picks, (b * c, 79)).reshape(b, c, 79)
    np.testing.assert_array_equal(found["rows"] * w + found["cols"], expected)
    distinct = {tuple(found["rows"][i, j]) for i in range(b) for j in range(c)}
    assert len(distinct) == (1 if kind == "same_sample" else b * c)
    # the stored input of convolution 2 is the first layer's ReLU output
    net = networks.convnet((2, 3, 3, 3))
    k1, b1 = net.init(0)[:2]
    x = net.inputs(data.x_train[:2])
    np.testing.assert_allclose(found["activation"],
                               np.maximum(convnet_numpy.conv2d(x, k1, b1), 0), atol=1e-5)


def test_sample_positions_refuses_what_it_cannot_show(data):
    with pytest.raises(ValueError, match="'different_sample' or 'same_sample'"):
        nn_figures.sample_positions(data, "project")
    with pytest.raises(ValueError, match="one of the four convolutions"):
        nn_figures.sample_positions(data, "same_sample", layer=5)


# ------------------------------------------------------------ Figures 8, 9
def test_training_curves_start_at_the_initial_evaluation(data):
    config = tiny()
    curves = nn_figures.training_curves("mlp", data, config, progress=False)
    assert list(curves) == ["baseline", "same_sample", "different_sample", "project",
                            "reduced_batch"]
    net = networks.mlp(config.sizes)
    start = (networks.evaluate(net, net.init(0), data.x_train, data.y_train)
             + networks.evaluate(net, net.init(0), data.x_test, data.y_test))
    for (run,) in curves.values():
        assert run.iterations == (0, 2)
        first = (run.train_loss[0], run.train_accuracy[0], run.test_loss[0],
                 run.test_accuracy[0])
        np.testing.assert_allclose(first, start, rtol=1e-6)
        assert run.ms_per_iteration > 0
    assert curves["reduced_batch"][0].batch == rules.equal_memory_batch(
        rules.mlp(config.sizes), 0.1, 20)


@pytest.mark.slow
def test_the_irnn_curves_include_different_project(data):
    curves = nn_figures.training_curves("irnn", data, tiny(), progress=False)
    assert "different_project" in curves and len(curves) == 6
    assert all(len(runs) == 1 and math.isfinite(runs[0].train_loss[-1])
               for runs in curves.values())
    with pytest.raises(ValueError, match="'mlp' or 'irnn'"):
        nn_figures.training_curves("convnet", data, tiny())


def test_different_project_projects_every_example():
    # its unbiasedness is tested with the other injections
    # (tests/studies/nn/test_studies_nn_graph.py)
    rng = np.random.default_rng(0)
    params = mlp_numpy.init_mlp((6, 5, 3), rng=0)
    x, y = rng.standard_normal((4, 6)).astype(np.float32), np.array([0, 1, 2, 0])
    g = nn_graph.traced(nn_graph.mlp_program, params, x, y)
    h = nn_graph.inject(g, "different_project", 0.5, rng=0)
    assert [(r["method"], r["per_row"], r["k"]) for r in h.injections] == [
        ("rademacher", True, 3), ("rademacher", True, 3)]
    # it keeps what project keeps: k floats per example and layer
    projected = nn_graph.inject(g, "project", 0.5, rng=0)
    assert retained_memory(h).total == retained_memory(projected).total
    # one matrix per example: the first layer's kept input x R_b differs from x R for a
    # shared R, and two examples equal in x get different projections
    twin = np.repeat(x[:1], 2, axis=0)
    kept = nn_graph.inject(nn_graph.traced(nn_graph.mlp_program, params, twin, y[:2]),
                           "different_project", 0.5, rng=1).labels[0].stored
    assert not np.allclose(kept[0], kept[1])


# ----------------------------------------------------------------- Figure 10
@pytest.mark.slow
def test_fraction_sweep_reuses_runs_and_matches_memory(data):
    config = tiny()
    mlp = nn_figures.training_curves("mlp", data, config, progress=False)
    sweep = nn_figures.fraction_sweep(data, config, reuse=mlp, progress=False)
    plan = {(r.estimator, r.fraction) for r in sweep}
    assert plan == {("baseline", 0.1)} | {(name, f) for f in (0.1, 0.5) for name in
                                          ("different_sample", "project", "reduced_batch")}
    assert next(r for r in sweep if r.estimator == "project" and r.fraction == 0.1) is \
        mlp["project"][0]
    # a run not reused ends where the same run of Figure 8's kind would: training does
    # not depend on how often it is evaluated
    fresh = nn_figures.fraction_sweep(data, config, progress=False)
    for a, b in zip(sweep, fresh):
        assert a.train_loss[-1] == b.train_loss[-1] and a.batch == b.batch
    net = rules.mlp(config.sizes)
    for f, batch in nn_figures.reduced_batches(config).items():
        # the largest exact batch whose kept bytes stay within RAD's at fraction f
        budget = config.batch * rules.per_example_bytes(net, f)
        assert batch * rules.per_example_bytes(net, 1.0) <= budget + 1e-6
        assert (batch + 1) * rules.per_example_bytes(net, 1.0) > budget
        assert any(r.estimator == "reduced_batch" and r.batch == batch for r in sweep)


@pytest.mark.slow
def test_run_figures_writes_every_picture_and_table(data, tmp_path):
    result = nn_figures.run_figures(str(tmp_path), tiny(), progress=False)
    for key in ("fig4", "fig8", "fig9", "fig10"):
        with open(result["paths"][key], "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    text = (tmp_path / "paper_figures.md").read_text()
    for heading in ("Figure 4", "Figure 8", "Figure 9", "Figure 10"):
        assert f"## {heading}" in text
    assert "| different_project | 20 |" in text


# ----------------------------------------------------------------- Figure 7a
def test_sampled_states_are_the_samplers_draws_on_the_simulated_states():
    p, theta = Reactor.quick(n_steps=40), initial_theta(rng=1)
    found = sampled_states(p, theta, 0.05, (0, 1, 40), rng=3)
    indices, _ = sampler(p, 0.05, np.random.default_rng(3))
    np.testing.assert_array_equal(found["rows"] * p.side + found["cols"], indices[[0, 1, 40]])
    assert found["k"] == math.ceil(0.05 * 961)
    # phi_0 = sin(pi x) sin(pi y); phi_1 = phi_0 + r lap(phi_0) + dt C(x, 0) phi_0 by hand
    x = np.arange(1, 32) / 32
    phi0 = np.outer(np.sin(np.pi * x), np.sin(np.pi * x))
    np.testing.assert_allclose(found["states"][0], phi0, rtol=1e-15)
    padded = np.pad(phi0, 1)
    laplacian = (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
                 - 4 * phi0)
    c = theta[0] + theta[2] + theta[4] * np.sin(2 * np.pi * x) + theta[6] * np.cos(2 * np.pi * x)
    by_hand = phi0 + (0.25 * p.dt * 32 ** 2) * laplacian + p.dt * c[:, None] * phi0
    np.testing.assert_allclose(found["states"][1], by_hand, rtol=1e-13)
    with pytest.raises(ValueError, match="increasing step numbers"):
        sampled_states(p, theta, 0.05, (5, 2))
    with pytest.raises(ValueError, match="increasing step numbers"):
        sampled_states(p, theta, 0.05, (0, 41))


def test_the_pde_command_writes_figure_7a(tmp_path, capsys):
    assert cli.main(["study", "pde", "--paper-figures", "--steps", "30", "-o",
                     str(tmp_path)]) == 0
    assert (tmp_path / FILE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["study", "pde", "--paper-figures", "--iterations", "3", "-o",
                     str(tmp_path)]) == 1
    assert "do not apply to --paper-figures" in capsys.readouterr().err
    assert run_figure(str(tmp_path), 30).endswith(FILE)


@pytest.mark.slow
def test_the_nn_command_writes_the_figures(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(FiguresConfig, "quick", classmethod(lambda cls: tiny()))
    assert cli.main(["study", "nn", "--paper-figures", "--quick", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in nn_figures.FILES.values():
        assert name in out and (tmp_path / name).is_file()
