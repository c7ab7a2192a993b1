"""The PDE study's saved optimisation state: damaged or forged files are refused with a
ValueError naming what is wrong, never resumed with other numbers; Adam's bounds and the
generator's distance that the checks rely on are tested against their derivations."""

import hashlib
import json
import threading

import numpy as np
import pytest
from oracles import not_a_regular_file

from minirad.cli import main
from minirad.studies.pde import adam
from minirad.studies.pde import state as pde_state
from minirad.studies.pde import study as pde_figures
from minirad.studies.pde.study import StudyConfig

CFG = StudyConfig(n_steps=24, iterations=5, fractions=(0.1,), released=(0.1,))


class _Stop(Exception):
    pass


def _interrupt_after(n):
    def progress(text, done=None, total=None):
        if text == "optimising" and done == n and total != n:
            raise _Stop
    return progress


def _saved_run(folder, cfg, after=3):
    """The state file of a run of ``cfg`` stopped when iteration ``after`` starts."""
    path = folder / pde_state.STATE_FILE
    with pytest.raises(_Stop):
        pde_figures.optimise(cfg, _interrupt_after(after), state_path=str(path))
    return path


# its module fixture is built once per run: one worker runs this module (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("pde_state")


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    path = _saved_run(tmp_path_factory.mktemp("state"), CFG)
    return path.read_bytes(), pde_state.load_state(str(path), CFG)


def _sign(record: dict) -> dict:
    """The checksum the format documents: SHA-256 of the record without it, as sorted
    compact JSON (what a forger who read the source would recompute)."""
    body = {k: v for k, v in record.items() if k != "sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return {**body, "sha256": hashlib.sha256(text.encode()).hexdigest()}


def _same(a: dict, b: dict) -> bool:
    return (a["done"] == b["done"] and a["rng"] == b["rng"] and a["seconds"] == b["seconds"]
            and all(np.array_equal(a[k], b[k]) for k in ("theta", "m", "v"))
            and np.array_equal(np.array(a["losses"]), np.array(b["losses"])))


def _edit(text: bytes, change) -> dict:
    record = json.loads(text)
    change(record)
    return record


def _set(path, value):
    def change(record):
        target = record
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


# the damage the issue reproduced: each is refused, with its checksum kept or recomputed
ISSUE_DAMAGE = {
    "config not a dict": (_set(["config"], 3), "config is not the settings"),
    "rng without its state": (lambda r: r["rng"].pop("state"), "not the state of a PCG64"),
    "rng state -1": (_set(["rng", "state", "state"], -1), "outside a PCG64 state's ranges"),
    "rng state + 1": (lambda r: r["rng"]["state"].__setitem__(
        "state", r["rng"]["state"]["state"] + 1), "not a state the study's generator"),
    "10**400 in theta": (_set(["theta", 0, 0], 10 ** 400), "not a floating-point number"),
    "10**400 in seconds": (_set(["seconds"], 10 ** 400), "not a time"),
    "m entry true": (_set(["m", 1, 2], True), "not a floating-point number"),
    "done out of step with theta": (lambda r: r.__setitem__("done", r["done"] - 1),
                                    "losses is not a list of 2 rows"),
    "a null loss": (_set(["losses", 1, 0], None), "not a floating-point number"),
    "a negative v": (_set(["v", 0, 3], -1e-9), "negative entry"),
    "m out of proportion to v": (_set(["m", 0, 3], 1.0), "moments are inconsistent"),
    "theta moved further than Adam reaches": (_set(["theta", 2, 0], 6.0), "further than"),
}


@pytest.mark.parametrize("name", sorted(ISSUE_DAMAGE))
@pytest.mark.parametrize("resign", [False, True])
def test_each_damage_of_the_issue_is_refused(genuine, name, resign):
    text, _ = genuine
    change, message = ISSUE_DAMAGE[name]
    record = _edit(text, change)
    data = json.dumps(_sign(record) if resign else record).encode()
    expected = message if resign or name == "config not a dict" else "checksum|" + message
    with pytest.raises(ValueError, match=expected):
        pde_state.parse_state(data, CFG, "f.json")


@pytest.mark.parametrize("text, message", [
    ('{"seconds": NaN}', "holds NaN"),
    ('{"v": [Infinity]}', "holds Infinity"),
    ('{"theta": 1e400}', "beyond the range of a float"),
    ("[" * 5000 + "]" * 5000, "nested deeper"),
    ('{"done": 1, "done": 2}', "appears twice"),
    ("\xff\xfe{}", "not UTF-8"),
    ('{"done": ' + "9" * 5000 + "}", "Python cannot read"),
    ("[1, 2]", "JSON list, not an object"),
])
def test_hostile_json_is_refused_before_any_field_is_read(text, message):
    data = text.encode("latin-1")
    with pytest.raises(ValueError, match=message):
        pde_state.parse_state(data, CFG, "f.json")


def test_an_oversized_file_is_refused_unread(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 10_000_000)
    with pytest.raises(ValueError, match="larger"):
        pde_state.load_state(str(path), CFG)


_HOSTILE = [None, True, False, 0, -1, 1, 2 ** 128, 10 ** 400, "x", [], {}, [[0.0]],
            float("nan"), float("inf"), -0.0, 1e-320, 1e308, [0.0] * 500]


def _leaves(obj, path=()):
    """Every (path, value) in a JSON document, containers included."""
    yield path, obj
    items = obj.items() if isinstance(obj, dict) else \
        enumerate(obj) if isinstance(obj, list) else ()
    for key, value in items:
        yield from _leaves(value, path + (key,))


def _mutate(text: bytes, rng) -> tuple[bytes, bool]:
    """One random damage of a state file, and whether its checksum was recomputed."""
    kind = rng.integers(8)
    if kind < 3:  # bytes: cut, flip a bit, duplicate or drop a stretch
        i, j = sorted(rng.integers(0, len(text) + 1, size=2))
        if kind == 0:
            return text[:i], False
        if kind == 1 and i < len(text):
            return text[:i] + bytes([text[i] ^ (1 << rng.integers(8))]) + text[i + 1:], False
        return (text[:j] + text[i:j] + text[j:] if rng.random() < 0.5
                else text[:i] + text[j:]), False
    record = json.loads(text)
    paths = [p for p, _ in _leaves(record) if p]
    path = paths[rng.integers(len(paths))]
    parent = record
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]]
    if kind == 3 and isinstance(old, (int, float)) and not isinstance(old, bool):
        new = [old + 1, old - 1, -old, old * (1 + 2 ** -52), old / 2][rng.integers(5)]
    elif kind == 4 and isinstance(parent, dict):
        del parent[path[-1]]
        new = None
    elif kind == 5 and isinstance(parent, list):
        parent.insert(int(rng.integers(len(parent) + 1)), old)
        new = None
    else:
        new = _HOSTILE[rng.integers(len(_HOSTILE))]
    if new is not None or kind not in (4, 5):
        parent[path[-1]] = new
    resign = bool(rng.random() < 0.5)
    return json.dumps(_sign(record) if resign else record).encode(), resign


def test_fuzzed_state_files_are_refused_or_resume_the_same_numbers(genuine):
    """600 seeded damaged files (about 1 s): nothing but ValueError escapes; a file whose
    checksum was kept loads only with exactly the saved numbers; one with a recomputed
    checksum (a forgery) loads only if it passes every check of its fields."""
    text, original = genuine
    rng = np.random.default_rng(26)
    escapes, accepted, changed = [], 0, []
    for case in range(600):
        data, resigned = _mutate(text, rng)
        try:
            state = pde_state.parse_state(data, CFG, "f.json")
        except ValueError:
            continue
        except Exception as error:  # noqa: BLE001 - counting what escapes is the test
            escapes.append(f"case {case}: {type(error).__name__}: {error}")
            continue
        accepted += 1
        if not resigned and not _same(state, original):
            changed.append(case)
        if resigned:  # a forgery that passes: finite, Adam-consistent, a reachable rng
            assert np.all(np.isfinite(state["m"])) and np.all(state["v"] >= 0)
            np.random.PCG64().state = state["rng"]
    assert escapes == [] and changed == []
    assert accepted < 100  # the checks refuse nearly every damaged file


def test_a_few_damaged_states_through_the_command_line(tmp_path, capsys):
    cli_cfg = StudyConfig(n_steps=24, iterations=5)
    path = _saved_run(tmp_path, cli_cfg)
    text = path.read_bytes()
    argv = ["study", "pde", "--steps", "24", "--iterations", "5", "--resume", "-o",
            str(tmp_path)]
    rng, tried = np.random.default_rng(7), 0
    while tried < 6:
        damaged, _ = _mutate(text, rng)
        if damaged == text:
            continue
        tried += 1
        path.write_bytes(damaged)
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "remove it to start again" in err
    assert not (tmp_path / "pde_results.md").exists()  # refused before any work


def test_resume_without_a_saved_run_refuses_in_one_line(tmp_path, capsys):
    typo = tmp_path / "pde-papr"
    assert main(["study", "pde", "--resume", "-o", str(typo)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "there is no saved run to resume" in err
    assert not typo.exists()
    with pytest.raises(ValueError, match="no saved run"):
        pde_figures.optimise(CFG, state_path=str(tmp_path / "none.json"), resume=True)


def test_a_state_of_another_seed_is_refused_by_its_generator(genuine):
    text, _ = genuine
    other = StudyConfig(n_steps=24, iterations=5, fractions=(0.1,), released=(0.1,), seed=3)
    record = _edit(text, lambda r: r["rng"].__setitem__(
        "state", other_rng_state(other)))
    with pytest.raises(ValueError, match="another seed"):
        pde_state.parse_state(json.dumps(_sign(record)).encode(), CFG, "f.json")


def other_rng_state(cfg):
    return pde_state.generator(cfg).bit_generator.state["state"]


def test_adam_bounds_hold_for_any_gradients_and_are_reached_at_the_first_step():
    """m^2 <= S v and the distance travelled <= reach * lr on 200 random gradient
    sequences of mixed scales, spikes and zeros included; at t = 1 both are equalities
    (m = 0.1 g, v = 0.001 g^2, one step of exactly lr, by hand)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        steps = int(rng.integers(1, 40))
        grads = rng.standard_normal((steps, 4)) * 10.0 ** rng.integers(-6, 7, size=(steps, 1))
        grads[rng.random(steps) < 0.3] = 0.0
        seen = []
        theta, _ = adam(lambda th, i, grads=grads: (0.0, grads[i]), np.zeros(4), steps,
                        lr=0.01, on_iteration=seen.append)
        s, reach = pde_state.adam_bounds(steps)
        last = seen[-1]
        assert np.all(last["m"] ** 2 <= s * last["v"] * (1 + 1e-9) + 1e-300)
        assert np.abs(theta).max() <= reach * 0.01 * (1 + 1e-9)
    s, reach = pde_state.adam_bounds(1)
    g = 3.0
    assert (0.1 * g) ** 2 == pytest.approx(s * 0.001 * g ** 2) and reach == pytest.approx(1.0)


def test_draws_between_counts_the_generator_steps():
    rng = np.random.default_rng(1)
    for n in rng.integers(0, 10_000, size=20).tolist() + [0, 1, 2 ** 20]:
        g = np.random.default_rng(int(n))
        before = g.bit_generator.state["state"]
        g.bit_generator.advance(n)  # PCG64's own jump ahead, the oracle
        after = g.bit_generator.state["state"]["state"]
        assert pde_state.draws_between(before["state"], after, before["inc"]) == n


# ----------------------------------------------------------------- issue 39
@pytest.mark.parametrize("name, change, row", [
    ("v beyond any gradient", _set(["v", 0, 0], 1e308), "last"),
    ("the last loss doubled", lambda r: r["losses"][-1].__setitem__(
        0, 2 * r["losses"][-1][0]), "last"),
    ("the first loss halved", lambda r: r["losses"][0].__setitem__(
        slice(None), [x / 2 for x in r["losses"][0]]), "first"),
    ("theta moved within Adam's reach", lambda r: r["theta"][1].__setitem__(
        3, r["theta"][1][3] + 1e-3), "last"),
])
def test_a_forgery_with_both_checksums_recomputed_is_refused_on_load(genuine, tmp_path, name,
                                                                     change, row):
    """Issue 39: Adam's v[0][0] = 1e308 or the last loss doubled, both checksums recomputed,
    resumed and trained to other numbers: each field passed its own checks. The losses are
    recomputed from the parameters (the first at the study's start, the last before the last
    step, which theta and the moments give back): a forged state does not match them. The
    oracle: the genuine state loads, and gives the same numbers recomputed."""
    text, original = genuine
    record = _edit(text, change)
    data = json.dumps(_sign(record)).encode()
    pde_state.parse_state(data, CFG, "f.json")      # every field alone is plausible
    path = tmp_path / pde_state.STATE_FILE
    path.write_bytes(data)
    with pytest.raises(ValueError, match=f"its {row} losses are not those of its parameters"):
        pde_state.load_state(str(path), CFG)
    path.write_bytes(text)
    assert _same(pde_state.load_state(str(path), CFG), original)


@pytest.mark.parametrize("target", ["fifo", "/dev/zero", "folder"])
def test_a_state_that_is_no_regular_file_is_refused_unopened(tmp_path, target, capsys):
    """A pipe at the state's path blocked --resume for ever (open waits for a writer); a
    link to a device or a folder is no state either. Each is refused from its file type,
    in one line; a thread that would hang on the pipe must come back."""
    path = tmp_path / pde_state.STATE_FILE
    not_a_regular_file(path, target)
    said = []

    def resume():
        try:
            pde_state.load_state(str(path), CFG)
        except ValueError as error:
            said.append(str(error))

    worker = threading.Thread(target=resume, daemon=True)
    worker.start()
    worker.join(10)
    assert said and "it is not a regular file" in said[0], "the loader blocked or read it"
    argv = ["study", "pde", "--steps", "24", "--iterations", "5", "--resume", "-o",
            str(tmp_path)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err
