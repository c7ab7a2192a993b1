"""`minirad study pde`: a tiny run writes every picture and the table; bad input is one line."""

import io

import numpy as np
import pytest

from minirad.cli import main
from minirad.studies.pde import state as pde_state
from minirad.studies.pde import study as pde_figures
from minirad.studies.pde.study import StudyConfig, curve_gaps, run_study

TINY = StudyConfig(n_steps=32, iterations=3, noise_estimates=6, noise_horizon=32,
                   noise_steps=(16, 32), snapshots=(2,))


@pytest.mark.slow
def test_a_tiny_study_writes_every_picture_and_the_table(tmp_path):
    progress = pde_figures.Progress(io.StringIO())
    written = run_study(str(tmp_path), TINY, progress=progress)
    names = sorted(p.rsplit("/", 1)[-1] for p in written)
    assert names == ["pde_adjoint_reintegration.png", "pde_loss_curves.png", "pde_memory.png",
                     "pde_noise.png", "pde_released.png", "pde_results.md", "pde_tradeoff.png"]
    text = (tmp_path / "pde_results.md").read_text()
    assert "not the paper's configuration" in text
    for heading in ("## Optimisation", "## Memory per gradient", "## Noise of one estimate",
                    "## Memory, recomputation and noise", "## The released sampler",
                    "## Continuous adjoint (32 steps"):
        assert heading in text
    assert "optimising 3/3" in progress.stream.getvalue()


def test_optimisation_members_share_a_start_and_gaps_are_measured_from_exact():
    result = pde_figures.optimise(TINY)
    losses = result["losses"]
    assert losses.shape == (TINY.iterations, 1 + len(TINY.fractions) + len(TINY.released))
    assert np.all(losses[0] == losses[0, 0])  # one initial theta for every member
    rows = curve_gaps(result)
    assert rows[0]["label"] == "exact gradient" and rows[0]["max_gap"] == 0.0


@pytest.mark.slow
def test_adam_on_a_sampled_gradient_tracks_the_exact_curve():
    """The issue's optimisation acceptance at t up to 1/8 (512 steps), Adam lr 0.01, 150
    iterations (the committed figures are the 4,096-step run): at fraction 0.01 the curve
    stays within 3% of the exact one and falls at least 3x, and the curves stray further as
    the fraction shrinks. Seeds 0-11 all pass (largest gap at 0.01: 1.9%, falls 15.6-21x,
    mean gaps ordered on every seed), so a false failure at seed 0 is not expected. The
    final losses themselves are not ordered by fraction (noise moves them both ways)."""
    cfg = StudyConfig(n_steps=512, iterations=150, fractions=(0.1, 0.01, 0.001), released=())
    rows = {row["kind"]: row for row in curve_gaps(pde_figures.optimise(cfg))}
    assert rows[0.01]["max_gap"] < 0.03 and rows[0.01]["fall"] >= 3
    assert rows["exact"]["fall"] >= 3
    mean_gaps = [rows[kind]["mean_gap"] for kind in ("exact", 0.1, 0.01, 0.001)]
    assert mean_gaps == sorted(mean_gaps) and len(set(mean_gaps)) == 4


def test_tradeoff_counts_follow_the_schedules():
    rows = {r["method"]: r for r in pde_figures.tradeoff(TINY)}
    full = rows["reverse mode (store all)"]
    assert full["forward_steps"] == 32 and full["held_bytes"] == 32 * 961 * 8
    assert rows["binomial, 2 snapshots"]["held_bytes"] == 3 * 961 * 8  # 2 + the one in use
    assert all(r["noise"] == 0 for m, r in rows.items() if not m.startswith("RAD"))
    assert all(r["noise"] > 0 for m, r in rows.items() if m.startswith("RAD"))
    # measured beside every count: never below it (tracemalloc sees what is held), and a
    # combined schedule holds every step's draws (drawn up front) on top of its count
    assert all(r["measured"] >= 0.9 * r["held_bytes"] for r in rows.values())
    both = next(r for m, r in rows.items() if "+" in m and r["fraction"] == 0.1)
    assert both["measured"] >= both["held_bytes"] + 33 * 97 * 2


@pytest.mark.parametrize("argv, message", [
    (["study", "pde", "--quick", "--steps", "10"], "--quick sets its own"),
    (["study", "pde", "--steps", "0"], "--steps must be a positive integer"),
    (["study", "pde", "--iterations", "-2"], "--iterations must be a positive integer"),
])
def test_cli_refuses_bad_options_in_one_line(argv, message, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_refuses_a_file_as_the_output_folder(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("x")
    assert main(["study", "pde", "--quick", "-o", str(target)]) == 1
    assert "it is a file" in capsys.readouterr().err


class _Stop(Exception):
    pass


def _interrupt_after(n):
    """A progress callback that stops the optimisation when iteration ``n`` starts."""
    def progress(text, done=None, total=None):
        if text == "optimising" and done == n and total != n:
            raise _Stop
    return progress


def test_an_interrupted_optimisation_resumes_to_the_uninterrupted_numbers(tmp_path):
    cfg = StudyConfig(n_steps=24, iterations=5, fractions=(0.1,), released=(0.1,))
    whole = pde_figures.optimise(cfg)
    path = str(tmp_path / pde_figures.STATE_FILE)
    with pytest.raises(_Stop):
        pde_figures.optimise(cfg, _interrupt_after(3), state_path=path)
    assert pde_state.load_state(path, cfg)["done"] == 3
    resumed = pde_figures.optimise(cfg, state_path=path, resume=True)
    # RAD members draw random samples: equal numbers need the generator restored too
    assert np.array_equal(resumed["losses"], whole["losses"])
    assert np.array_equal(resumed["thetas"], whole["thetas"])
    assert whole["resumed_at"] == 0 and resumed["resumed_at"] == 3
    text = pde_figures.report(cfg, {"optimise": resumed}, 1.0, "minirad study pde --resume")
    assert "went on from a state saved after 3 iterations" in text
    assert "went on" not in pde_figures.report(cfg, {"optimise": whole}, 1.0, "minirad")


def test_a_saved_run_is_never_overwritten_or_mixed_with_other_settings(tmp_path, capsys):
    cfg = StudyConfig(n_steps=24, iterations=4, fractions=(0.1,), released=())
    path = tmp_path / pde_figures.STATE_FILE
    with pytest.raises(_Stop):
        pde_figures.optimise(cfg, _interrupt_after(2), state_path=str(path))
    before = path.read_bytes()
    with pytest.raises(ValueError, match="unfinished run"):
        run_study(str(tmp_path), cfg)
    with pytest.raises(ValueError, match=r"other settings \(iterations\)"):
        run_study(str(tmp_path), StudyConfig(n_steps=24, iterations=9, fractions=(0.1,),
                                             released=()), resume=True)
    assert main(["study", "pde", "-o", str(tmp_path), "--steps", "24"]) == 1
    assert "--resume" in capsys.readouterr().err
    assert path.read_bytes() == before
    path.write_text('{"config": 3}')
    with pytest.raises(ValueError, match="not a usable saved optimisation"):
        pde_state.load_state(str(path), cfg)


@pytest.mark.slow
def test_a_study_run_to_the_end_removes_its_saved_state(tmp_path):
    cfg = StudyConfig(n_steps=24, iterations=3, fractions=(0.1,), released=(),
                      noise_estimates=4, noise_horizon=24, noise_steps=(16,), snapshots=(2,))
    with pytest.raises(_Stop):
        pde_figures.optimise(cfg, _interrupt_after(2),
                             state_path=str(tmp_path / pde_figures.STATE_FILE))
    run_study(str(tmp_path), cfg, progress=pde_figures.Progress(io.StringIO()), resume=True)
    assert not (tmp_path / pde_figures.STATE_FILE).exists()
    assert "went on from a state saved after 2 iterations" in \
        (tmp_path / "pde_results.md").read_text()


def test_resume_belongs_to_the_pde_study(capsys):
    assert main(["study", "nn", "--resume"]) == 1
    assert "apply to the pde study only" in capsys.readouterr().err
