"""Issue 39: a fuzz of the resource-hungry arguments of every command (sizes, counts,
seeds, time limits: 0, negative, nan, inf, 10**12).

Every numeric option of every command (found in the parser itself, so a new one is fuzzed
too) is given each hostile value on an otherwise valid command line; then a seeded mix of
them, and the large graphs the defaults must refuse. Each run must succeed or be refused in
one line, quickly (a run still going after RUN_SECONDS counts as work started that cannot
finish), and no heavy run (a study, the figures, the grader, stood in for here) may be
started with work beyond its budget.
"""

import math
import os
import random
import signal
import warnings

import pytest
from oracles import broom, fake_zip64

import minirad._arguments
import minirad.gallery
import minirad.labs.grading
import minirad.studies.nn.figures
import minirad.studies.nn.study
import minirad.studies.pde.sampling
import minirad.studies.pde.study
from minirad import examples, save_graph
from minirad.cli import build_parser, main
from minirad.studies.pde.study import estimated_seconds

HOSTILE = ["0", "-1", "nan", "inf", "1e12", "1000000000000"]
#: options that take a count as text (parsed by the command, not argparse)
COUNTED = {"render": ["--sample"], "compare": ["--k"]}
#: seconds after which a run counts as work started that cannot finish
RUN_SECONDS = 60
#: the budget of a study run when --max-days is not given
DEFAULT_DAYS = 30.0


class RanTooLong(BaseException):
    """Raised in a run that outlasts RUN_SECONDS (not an Exception: the CLI lets it out)."""


def numeric_options(verb: str) -> list[str]:
    """The options of ``verb`` that take a number, from the parser, and its counted ones."""
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ ==
               "_SubParsersAction").choices[verb]
    typed = [a.option_strings[-1] for a in sub._actions
             if a.option_strings and takes_number(a.type)]
    return typed + COUNTED.get(verb, [])


def takes_number(kind) -> bool:
    """Whether an option's type makes a number of "2" (int, float, or a checked number such
    as the grader's time limits)."""
    try:
        return kind is not None and isinstance(kind("2"), (int, float))
    except Exception:  # noqa: BLE001  (a type that refuses "2" takes something else)
        return False


def verbs() -> list[str]:
    return list(next(a for a in build_parser()._actions if a.__class__.__name__ ==
                     "_SubParsersAction").choices)


@pytest.fixture
def setting(tmp_path, monkeypatch):
    """Files, a user module, a lab submission, and stand-ins for the heavy runs that
    check what they were asked for."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(minirad._arguments, "memory_available", lambda: 2 * 2**30)
    made = {"small": str(save_graph(examples.figure1(), tmp_path / "small.json")),
            "arrays": str(save_graph(examples.figure3(), tmp_path / "arrays.npz")),
            "big": str(save_graph(broom(5000), tmp_path / "big.json")),
            "zip64": str(fake_zip64(tmp_path / "million.npz", 10**6))}
    with open(tmp_path / "nul.json", "wb") as f:
        f.truncate(2**30)
    made["nul"] = str(tmp_path / "nul.json")
    (tmp_path / "user.py").write_text("def f(x):\n    return x * x\n")
    made["user"] = str(tmp_path / "user.py")
    (tmp_path / "lab1_x.ipynb").write_text("{}")
    made["submission"] = str(tmp_path / "lab1_x.ipynb")
    made["lab"] = str(tmp_path / "lab1_mine.py")
    (tmp_path / "lab1_mine.py").write_text("x = 1\n")
    heavy = []

    def study(folder, cfg=None, *args, **kwargs):
        heavy.append(("pde", cfg))
        return []

    def stand_in(name):
        def run(*args, **kwargs):
            heavy.append((name, kwargs))
            return {"paths": {}} if name == "nn" else []
        return run

    monkeypatch.setattr(minirad.studies.pde.study, "run_study", study)
    monkeypatch.setattr(minirad.studies.pde.sampling, "run_figure",
                        lambda folder, steps: heavy.append(("fig7a", steps)) or "fig.png")
    monkeypatch.setattr(minirad.studies.nn.study, "run_study", stand_in("nn"))
    monkeypatch.setattr(minirad.studies.nn.figures, "run_figures", stand_in("nn"))
    monkeypatch.setattr(minirad.gallery, "build_figures", stand_in("figures"))
    monkeypatch.setattr(minirad.labs.grading, "grade", stand_in("grade"))
    return made, heavy, tmp_path


def base(verb: str, made: dict, tmp) -> list[str]:
    """A valid command line for ``verb`` that runs in a second or two."""
    return {"demo": ["demo", "-o", str(tmp / "demo")],
            "wengert": ["wengert", made["small"]],
            "trace": ["trace", f"{made['user']}:f", "2.0", "-o", str(tmp / "t.json")],
            "jacobian": ["jacobian", made["small"], "--method", "bauer"],
            "render": ["render", made["small"], "-o", str(tmp / "g.dot")],
            "compare": ["compare", made["small"], "--samples", "50"],
            "figures": ["figures", "-o", str(tmp / "figures")],
            "study": ["study", "pde", "-o", str(tmp / "study")],
            "explore": ["explore", made["small"], "-o", str(tmp / "p.html"), "--samples", "2"],
            "lab": ["lab", "grade", made["submission"], "-o", str(tmp / "grades")]}[verb]


def with_value(argv: list[str], option: str, value: str) -> list[str]:
    """``argv`` with ``option`` set to ``value`` (replaced if it is there already)."""
    if option in argv:
        i = argv.index(option)
        return argv[:i + 1] + [value] + argv[i + 2:]
    return argv + [option, value]


def run(argv: list[str], capsys) -> tuple[object, str]:
    """``main(argv)`` under a time limit: (status, stderr); a traceback is the status."""
    def stop(signum, frame):
        raise RanTooLong(f"still running after {RUN_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, RUN_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")  # as on the command line, not pytest's errors
            status = main(argv)
    except SystemExit as end:                 # --help
        status = 0 if end.code == 0 else f"SystemExit({end.code!r})"
    except BaseException as error:            # noqa: BLE001 - the escape is what is counted
        status = f"{type(error).__name__}: {error}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return status, capsys.readouterr().err


def outcome(status, err: str) -> str | None:
    """'success', 'refused', or None for an escape."""
    lines = err.splitlines()
    if status == 0 and "Traceback" not in err and all(
            line.startswith(("minirad ", "  ")) for line in lines):
        return "success"
    if status == 1 and len(lines) == 1 and lines[0].startswith("minirad") and \
            "Traceback" not in err:
        return "refused"
    return None


def days_asked(argv: list[str]) -> float:
    if "--max-days" not in argv:
        return DEFAULT_DAYS
    return float(argv[argv.index("--max-days") + 1])


def test_every_numeric_option_of_every_command_takes_hostile_values(setting, capsys):
    made, heavy, tmp = setting
    cases = [base(verb, made, tmp) for verb in verbs()]            # each command once, valid
    for verb in verbs():
        options = numeric_options(verb) + (["point"] if verb in ("trace", "explore") else [])
        for option, value in ((o, v) for o in options for v in HOSTILE):
            if option == "point":
                argv = (base(verb, made, tmp) if verb == "trace" else
                        ["explore", f"{made['user']}:f", "-o", str(tmp / "q.html"),
                         "--samples", "2"])
                i = argv.index("-o")
                cases.append(argv[:i] + [value] + argv[i:] if verb == "explore" else
                             argv[:2] + [value] + argv[3:])
            else:
                cases.append(with_value(base(verb, made, tmp), option, value))
    # what the defaults must refuse: large graphs, hungry files, heavy orders and counts
    cases += [["jacobian", made["big"], "--method", "bauer"],
              ["jacobian", made["big"], "--method", "eliminate", "--order", "optimal"],
              ["render", made["big"], "-o", str(tmp / "big.dot")],
              ["explore", made["big"], "-o", str(tmp / "big.html")],
              ["compare", made["big"], "--samples", "1000000000000"],
              ["wengert", made["nul"]], ["wengert", made["zip64"]],
              ["explore", made["zip64"], "-o", str(tmp / "z.html")],
              ["study", "pde", "-o", str(tmp / "s"), "--iterations", "1000000000000"],
              ["study", "pde", "-o", str(tmp / "s"), "--steps", "1000000000000"],
              ["study", "pde", "-o", str(tmp / "s"), "--paper-figures", "--steps",
               "1000000000000"],
              ["lab", "handout", made["lab"], "-o", str(tmp / "handouts")]]
    rnd = random.Random(39)                 # a seeded mix: several hostile options at once
    for _ in range(60):
        verb = rnd.choice([v for v in verbs() if numeric_options(v)])
        argv = base(verb, made, tmp)
        for option in rnd.sample(numeric_options(verb), min(2, len(numeric_options(verb)))):
            argv = with_value(argv, option, rnd.choice(HOSTILE + ["2", "7"]))
        cases.append(argv)

    tally, escapes = {}, []
    for argv in cases:
        before = len(heavy)
        status, err = run(argv, capsys)
        result = outcome(status, err)
        if result is None:
            escapes.append(f"{argv!r} -> {status!r}\n{err[-300:]}")
            continue
        verb = argv[0]
        tally.setdefault(verb, {"success": 0, "refused": 0})[result] += 1
        for name, asked in heavy[before:]:    # a heavy run started: within its budget
            if name == "pde":
                assert estimated_seconds(asked) <= days_asked(argv) * 86400, argv
            if name == "fig7a":
                assert math.isfinite(asked) and asked <= 10**9, argv
            if name == "grade":               # every time limit one a grader can keep
                for key in ("notebook_seconds", "cell_seconds", "exercise_seconds"):
                    assert asked[key] is None or 0 < asked[key] <= 86400, argv
    assert escapes == [], "\n".join(escapes[:10])
    assert set(tally) == set(verbs())         # every command was run
    for verb, counts in tally.items():        # and reached both outcomes where it can refuse
        assert counts["success"] >= 1, verb
        assert counts["refused"] >= (3 if numeric_options(verb) else 0), verb
    assert os.path.getsize(made["nul"]) == 2**30    # nothing written over the hungry files
