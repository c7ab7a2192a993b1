"""The benchmark harness: one quick run completes and writes a table.

No timing is asserted; only that every group runs and reports.
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is a folder of the repository, not an installed package
    sys.path.insert(0, str(ROOT))

import bench.__main__ as bench_main  # noqa: E402 - after the path is set
import bench.bench_trace as bench_trace  # noqa: E402
import bench.common as common  # noqa: E402

# one quick run of the whole harness per test run: one worker runs this module
# (pyproject's --dist loadgroup) and the fixture is the session's
pytestmark = pytest.mark.xdist_group("bench")


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """One `python -m bench --quick`, into a temporary file (never bench/RESULTS.md)."""
    output = tmp_path_factory.mktemp("bench") / "RESULTS.md"
    results = bench_main.run(bench_main.discover(), quick=True, output=output,
                             argv=["--quick", "--output", str(output)])
    return results, output


@pytest.mark.slow
def test_every_group_produces_rows(quick_run):
    results, _ = quick_run
    assert set(bench_main.GROUPS) <= set(results)
    for group, rows in results.items():
        assert rows, f"group {group} produced no rows"
        errors = [r for r in rows if str(r.get("status", "")).startswith("error")]
        assert not errors, f"group {group} reported errors: {errors}"
        for row in rows:
            assert {"benchmark", "size", "method", "median_s"} <= set(row), row


def test_a_missing_module_is_an_error_row_not_a_crash():
    rows = bench_main.run_group("no_such_group", quick=True)
    assert len(rows) == 1 and rows[0]["status"].startswith("error: ")


@pytest.mark.slow
def test_the_report_is_written_with_the_machine_and_every_group(quick_run):
    results, output = quick_run
    text = output.read_text(encoding="utf-8")
    for label in ("CPU", "cores", "Python", "numpy", "scipy", "networkx", "micrograd",
                  "autograd"):
        assert f"| {label} |" in text
    for rows in results.values():
        assert f"### {rows[0]['benchmark']}" in text
    # an ordinary file, as open() would make it, not mkstemp's private 0o600
    umask = os.umask(0)
    os.umask(umask)
    assert output.stat().st_mode & 0o777 == 0o666 & ~umask


@pytest.mark.slow
def test_missing_peers_are_shown_as_skipped(quick_run):
    results, _ = quick_run
    for rows in results.values():
        for row in rows:
            method = str(row["method"]).split()[0]
            if method in ("micrograd", "autograd") and common.version(method) is None:
                assert row["status"] == common.SKIPPED


def test_ratios_are_taken_against_the_minirad_row():
    rows = [{"benchmark": "b", "size": 1, "method": "peer", "median_s": 3.0},
            {"benchmark": "b", "size": 1, "method": "minirad x", "median_s": 1.5},
            {"benchmark": "b", "size": 1, "method": "gone", "median_s": None,
             "status": common.SKIPPED}]
    common.add_ratios(rows)
    assert [r.get("ratio") for r in rows] == [2.0, 1.0, None]
    table = common.markdown_tables(rows)
    assert "| 2.00x |" in table and common.SKIPPED in table


def test_unknown_group_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        bench_main.main(["--only", "no_such_group", "--output", "/nonexistent/RESULTS.md"])
    assert "unknown group" in capsys.readouterr().err


def test_a_peer_that_is_not_installed_is_a_skipped_row(monkeypatch):
    monkeypatch.setattr(bench_trace, "version", lambda package: None)
    row = bench_trace._measure("micrograd", 1_000, quick=True)
    assert row["status"] == common.SKIPPED and row["median_s"] is None
    assert "micrograd" in row["method"]


def test_a_failing_worker_becomes_a_status():
    out = common.run_worker("bench.no_such_module", [], timeout=60)
    assert out["status"].startswith("error: worker exited with code 1")


@pytest.mark.slow
def test_without_output_nothing_is_written_and_check_gives_verdicts(capsys):
    committed = ROOT / "bench" / "RESULTS.md"
    before = committed.stat().st_mtime_ns if committed.exists() else None
    status = bench_main.main(["--quick", "--only", "paths", "--check"])
    printed = capsys.readouterr().out
    assert (committed.stat().st_mtime_ns if committed.exists() else None) == before
    assert "## Goals" in printed
    verdicts = [line.rsplit("|", 2)[-2].strip() for line in printed.splitlines()
                if line.startswith("| count_paths")]
    assert verdicts and set(verdicts) <= {"PASS", "FAIL"}
    assert status == (1 if "FAIL" in verdicts else 0)


def test_goals_compare_the_measured_ratio_with_the_target():
    rows = [{"benchmark": "b", "size": 1, "method": "mine", "median_s": 0.2},
            {"benchmark": "b", "size": 1, "method": "peer", "median_s": 1.0}]
    ratio = common.time_ratio(rows, "b", 1, "mine", "peer")
    assert ratio == pytest.approx(0.2)
    assert common.goal("g", ratio, 0.3)["verdict"] == "PASS"
    assert common.goal("g", ratio, 0.1)["verdict"] == "FAIL"
    assert common.goal("g", 60.0, 50.0, at_most=False)["verdict"] == "PASS"
    assert common.goal("g", None, 1.0)["verdict"] == "not measured"
    assert common.time_ratio(rows, "b", 2, "mine", "peer") is None


# ------------------------------------------------- the array peers (issue 30)
def test_in_turns_times_the_first_call_apart_and_keeps_a_failing_step_out():
    calls = {"a": 0}

    def a():
        calls["a"] += 1
        return calls["a"]

    def broken():
        raise RuntimeError("no such device")

    turns = common.in_turns({"a": a, "broken": broken}, repeats=4)
    assert calls["a"] == 5 and turns.first_result["a"] == 1     # one first call, 4 rounds
    assert set(turns.median_s) == {"a"} and turns.first_s["a"] >= 0
    assert "RuntimeError: no such device" in turns.errors["broken"]


def test_results_must_agree_with_the_floor_or_the_row_is_an_error():
    import numpy as np

    import bench.peers as peers

    floor = [np.float64(2.0), np.array([1.0, 0.0, -3.0])]
    assert peers.agree([2.0, np.array([1.0, 1e-12, -3.0])], floor, rtol=1e-10)
    assert not peers.agree([2.0, np.array([1.0, 1e-6, -3.0])], floor, rtol=1e-10)
    assert not peers.agree([2.0, np.array([1.0, 0.0])], floor, rtol=1e-10)     # shape
    methods = [peers.Method("floor", lambda: lambda: floor),
               peers.Method("off by 1%", lambda: lambda: [2.02, floor[1]]),
               peers.Method("replay", None)]
    rows = peers.compare("b", 1, methods, repeats=2, rtol=1e-6)
    assert [r["status"] for r in rows] == ["ok", "error: the result differs from the floor's",
                                           common.NOT_BUILT]
    assert rows[0]["baseline"] and rows[0]["first_call_s"] >= 0


def test_peers_that_are_not_installed_are_skipped_rows(monkeypatch):
    import bench.bench_vector as bench_vector
    import bench.peers as peers

    monkeypatch.setattr(peers, "version", lambda package: None)
    rows = bench_vector.mlp_rows(batch=4, repeats=1)
    by_method = {r["method"]: r for r in rows}
    for label, framework in bench_vector.PEERS:
        assert by_method[label]["status"] == common.SKIPPED
        assert f"pip install {framework}" in by_method[label]["note"]
    assert by_method[bench_vector.FLOOR]["status"] == "ok"
    assert by_method[bench_vector.MINIRAD]["status"] == "ok"


def test_issue_30_goals_read_the_full_size_rows():
    import bench.bench_vector as v

    def row(benchmark, size, method, seconds):
        return {"benchmark": benchmark, "size": size, "method": method, "median_s": seconds}

    rows = [row(v.MLP, v.MLP_SIZE, v.FLOOR, 1.0), row(v.MLP, v.MLP_SIZE, v.MINIRAD, 1.05),
            row(v.MLP, v.MLP_SIZE, "PyTorch eager", 1.2),
            {**row(v.MLP, v.MLP_SIZE, v.REPLAY, None), "status": common.NOT_BUILT},
            row(v.LOOP, v.LOOP_SIZE, v.FLOOR, 1.0), row(v.LOOP, v.LOOP_SIZE, v.MINIRAD, 30.0),
            row(v.LOOP, v.LOOP_SIZE, "PyTorch eager", 6.0), row(v.LOOP, v.LOOP_SIZE, v.REPLAY, 1.1)]
    verdicts = {g["goal"]: (g["verdict"], g["value"]) for g in v.goals(rows)}
    assert verdicts["12,000-op loop: trace + gradient vs PyTorch eager"] == ("FAIL", 5.0)
    assert verdicts["MLP gradient: trace + gradient vs the numpy floor"] == ("PASS", 1.05)
    assert verdicts["MLP gradient: trace + gradient vs PyTorch eager"][0] == "PASS"
    assert verdicts["MLP gradient: replay vs the numpy floor"] == (common.NOT_BUILT, None)
    assert verdicts["12,000-op loop: replay vs the numpy floor"][0] == "PASS"  # once it is built
    quick = [dict(r, size="small") for r in rows]                  # not the goals' sizes
    assert {g["verdict"] for g in v.goals(quick)} == {"not measured", common.NOT_BUILT}


def test_the_floors_by_hand_match_the_traced_graphs_and_finite_differences():
    import numpy as np

    from bench import programs
    from bench.peers import NUMPY, value_and_gradient

    rng = np.random.default_rng(0)
    x, labels = rng.standard_normal((6, 5)), rng.integers(0, 3, 6)
    params = [rng.standard_normal(s) for s in ((5, 4), (4,), (4, 4), (4,), (4, 3), (3,))]
    for by_hand, program, data in (
            (programs.mlp_gradient_by_hand, programs.mlp_loss, (x, labels)),
            (programs.irnn_gradient_by_hand, programs.irnn_loss,
             (rng.standard_normal((7, 6, 5)), labels))):      # 7 steps, time first
        loss, *grads = by_hand(*data, *params)
        value, *traced_grads = value_and_gradient("minirad", program, data, params)()
        assert np.isclose(loss, float(value), rtol=1e-12)
        for mine, traced in zip(grads, traced_grads):
            np.testing.assert_allclose(mine, traced, rtol=1e-10, atol=1e-12)
        # one entry of the recurrent (or second) weight by a central difference
        h, bumped = 1e-6, [p.copy() for p in params]
        bumped[2][1, 2] += h
        up = program(NUMPY, *data, *bumped)
        bumped[2][1, 2] -= 2 * h
        assert np.isclose(grads[2][1, 2], (up - program(NUMPY, *data, *bumped)) / (2 * h),
                          rtol=1e-6, atol=1e-9)


def test_the_pde_program_is_the_studys_loss():
    import numpy as np

    from bench.peers import NUMPY
    from bench.programs import pde_constants, pde_loss
    from minirad.studies.pde import Reactor, initial_theta, simulate

    p = Reactor.quick(n_steps=40)
    theta = initial_theta(rng=3)
    assert np.isclose(pde_loss(NUMPY, pde_constants(p), theta), simulate(p, theta), rtol=1e-12)


def test_replay_rows_and_the_replay_bound_compute_what_the_floor_computes():
    """The replay row's call gives what tracing gives, bit for bit; the bound's numpy calls
    give the floor's value and gradient (to rounding: they add in another order)."""
    from functools import partial

    import numpy as np

    import bench.peers as peers
    from bench import replay_bound
    from bench.programs import relaxation, relaxation_by_hand
    rng = np.random.default_rng(3)
    x, c = rng.uniform(-1, 1, 5), rng.uniform(0.5, 1.5, 5)
    program = partial(relaxation, steps=7)
    by_replay = peers.replayed_gradient(program, (), [x, c])()
    by_trace = peers.value_and_gradient("minirad", program, (), [x, c])()
    for a, b in zip(by_replay, by_trace):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(replay_bound.graph_calls(x, c, 7), relaxation_by_hand(x, c, 7)):
        np.testing.assert_allclose(a, b, rtol=1e-12)
