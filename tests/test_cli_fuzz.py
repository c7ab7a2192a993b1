"""A seeded fuzz of the command line: hostile numbers, huge counts, odd strings,
missing and damaged files, for every subcommand, through ``minirad.cli.main``.

Every case must end in success (status 0, or argparse's ``SystemExit(0)`` for
--help) or in a refusal: status 1 and exactly one line on stderr, starting
with ``minirad``.  Nothing else may escape: no traceback, no other status.

What keeps it fast (about 10 s): memory is declared to be 2 GiB (so a huge
count is refused the same way on every machine, and no count that fits can
take long), the valid counts drawn are small, ``demo`` (which draws pictures)
gets a usable folder rarely, and the commands that run for minutes
(``study nn``, ``study pde``, ``figures``) are replaced by a stand-in once
their arguments are accepted: the fuzz is of the arguments, not the studies.
"""

import json
import random
import warnings

import pytest

import minirad._arguments
import minirad.gallery
import minirad.studies.nn.study
import minirad.studies.pde.study
from minirad import examples, save_graph
from minirad.cli import main

CASES = 600

#: numbers a careless or hostile user types, as text
NUMBERS = ["0", "-1", "1", "2", "3", "0.5", "1.0", "-0", "nan", "inf", "-inf", "1e400",
           "1e-320", "1e-300", "10**30", "1" + "0" * 30, "9" * 5000, "100000000000",
           "1000000000000", "18446744073709551616", "0x10", " 7 ", "", "1_000", "٣",
           "3.7", "1,2", "[1,2]", "1e18", "-5", "abc", "\x00", "2 3", "1e11"]
#: counts that either run in milliseconds or are refused for memory (never in between)
SAMPLES = ["1", "2", "7", "50", "0", "-3", "100000000000", "1" + "0" * 40, "1e11", "x",
           "9" * 5000, "٣"]
KS = ["1", "2", "3", "0.5", "1.0", "1e-300", "0", "-1", "nan", "inf", "1e400", "1000000000000",
      "1" + "0" * 30, "10**30", "0.0", "2.5", "", "k"]
STRINGS = ["", " ", "-", "--", "x" * 300, "é", "\u202e", "a\nb", "../", "/", "%s%n", "{}", "*"]


@pytest.fixture
def files(tmp_path):
    """A valid LCG or two, and every kind of bad file."""
    made = {}
    for name, g in (("figure1", examples.figure1()), ("two_outputs", examples.two_outputs()),
                    ("lab", examples.lab())):
        made[name] = str(tmp_path / f"{name}.json")
        save_graph(g, made[name])
    text = open(made["figure1"]).read()
    damaged = {
        "empty.json": b"", "null.json": b"null", "list.json": b"[]", "dict.json": b"{}",
        "truncated.json": text[: len(text) // 2].encode(),
        "binary.json": bytes(range(256)), "latin1.json": "caf\xe9".encode("latin-1"),
        "deep.json": b"[" * 100_000 + b"]" * 100_000,
        "huge.json": text.replace("1.0", "1e400", 1).encode(),
        "bigint.json": text.replace("1.0", "9" * 5000, 1).encode(),
        "schema.json": json.dumps({"format": "minirad-lcg", "version": 99}).encode(),
    }
    for name, data in damaged.items():
        (tmp_path / name).write_bytes(data)
        made[name] = str(tmp_path / name)
    made["missing"] = str(tmp_path / "missing.json")
    made["folder"] = str(tmp_path)
    made["device"] = "/dev/null"
    (tmp_path / "user.py").write_text("import numpy as np\n\ndef f(x):\n    return x * x\n\n"
                                      "def g(x, y):\n    return x * y + np.sin(x)\n\n"
                                      "def v(x):\n    return (x * x).sum()\n")
    made["user.py"] = str(tmp_path / "user.py")
    (tmp_path / "not_python.py").write_bytes(b"\xff\xfe\x00")
    made["not_python.py"] = str(tmp_path / "not_python.py")
    return made


def _graph_file(rnd, files):
    keys = list(files)
    return files[rnd.choice(["figure1", "two_outputs", "lab"] * 3 + keys)]


def _output(rnd, tmp_path, extensions):
    """Mostly a name refused at once (bad extension, missing folder, a folder)."""
    good = str(tmp_path / f"out{rnd.randrange(10**6)}{rnd.choice(extensions)}")
    return rnd.choice([good, good, str(tmp_path / "no" / "such" / "out.svg"),
                       str(tmp_path / "out.jpeg"), str(tmp_path), rnd.choice(STRINGS),
                       str(tmp_path / "out")])


def _case(rnd, files, tmp_path):
    """One argument list for a random subcommand."""
    command = rnd.choice(["wengert", "trace", "jacobian", "render", "compare", "compare",
                          "render", "study", "figures", "lab", "demo", "bogus", "--help"])
    if command in ("bogus", "--help"):
        return [command] + rnd.sample(STRINGS, rnd.randrange(2))
    if command == "wengert":
        return [command, _graph_file(rnd, files)]
    if command == "trace":
        spec = rnd.choice(["f", "g", "v", "nope", ""])
        module = rnd.choice([files["user.py"], files["user.py"], files["missing"] + ".py",
                             files["not_python.py"], "math", "json", "no_such_module", ""])
        points = [rnd.choice(NUMBERS + ["1,2,3", "1,,2", ",", "[1,2"])
                  for _ in range(rnd.choice([0, 1, 1, 2, 3]))]
        output = _output(rnd, tmp_path, [".json"])
        argv = [command, f"{module}:{spec}" if rnd.random() < 0.9 else module, *points]
        return argv + (["-o", output] if rnd.random() < 0.9 else []) + (
            ["--wengert"] if rnd.random() < 0.3 else [])
    if command == "jacobian":
        argv = [command, _graph_file(rnd, files)]
        if rnd.random() < 0.8:
            argv += ["--method", rnd.choice(["bauer", "forward", "reverse", "eliminate",
                                             "eliminate", "backward", ""])]
        if rnd.random() < 0.5:
            argv += ["--order", rnd.choice(["forward", "reverse", "markowitz", "optimal",
                                            "v2,v3,v4,v5", "v5,v4", "x1", "v2,v2", ",",
                                            "nope", ""] + STRINGS)]
        return argv
    if command == "render":
        argv = [command, _graph_file(rnd, files), "-o",
                _output(rnd, tmp_path, [".dot"] * 8 + [".gv", ".svg"])]
        for option, values in (("--sample", KS), ("--seed", NUMBERS),
                               ("--max-vertices", NUMBERS), ("--timeout", NUMBERS)):
            if rnd.random() < 0.3:
                argv += [option, rnd.choice(values)]
        if rnd.random() < 0.3:
            argv += ["--paths", rnd.choice(["x1", "x2", "y", "v2", "nope"]),
                     rnd.choice(["y", "y1", "x1", "nope", ""])]
        return argv + [flag for flag in ("--ops", "--values") if rnd.random() < 0.3]
    if command == "compare":
        argv = [command, _graph_file(rnd, files)]
        for option, values in (("--k", KS), ("--samples", SAMPLES), ("--seed", NUMBERS),
                               ("--precision", NUMBERS + ["17", "18"])):
            if rnd.random() < 0.6:
                argv += [option, rnd.choice(values)]
        if "--samples" not in argv:
            argv += ["--samples", rnd.choice(SAMPLES)]  # the default 1000 is slower
        if rnd.random() < 0.15:  # a picture is drawn only now and then: it takes 0.3 s
            argv += ["-o", rnd.choice([str(tmp_path / "cmp.jpeg"), str(tmp_path / "no/c.png"),
                                       str(tmp_path), "", str(tmp_path / "cmp.png")]
                                      if rnd.random() < 0.2 else
                                      [str(tmp_path / "cmp.jpeg"), ""])]
        return argv
    if command == "study":
        argv = [command, rnd.choice(["pde", "nn", "pde", "bogus", ""])]
        for option, values in (("--steps", NUMBERS), ("--iterations", NUMBERS),
                               ("-o", [files["figure1"], str(tmp_path / "study"), ""])):
            if rnd.random() < 0.5:
                argv += [option, rnd.choice(values)]
        return argv + [flag for flag in ("--quick", "--resume") if rnd.random() < 0.3]
    if command == "figures":
        return [command, "-o", rnd.choice([files["figure1"], str(tmp_path / "figs"), ""])]
    if command == "lab":
        argv = [command, rnd.choice(["handout", "solutions", "bogus", ""])]
        argv.append(rnd.choice([files["missing"], files["device"], files["not_python.py"],
                                str(tmp_path / "nolab"), ""]))
        if rnd.random() < 0.7:
            argv += ["-o", rnd.choice([files["figure1"], str(tmp_path / "labs"), ""])]
        return argv
    # demo: only its folder can be given; a valid one draws three pictures, so rarely
    return [command, "-o", rnd.choice([files["figure1"], "", "x" * 300 + "/y"] * 20
                                      + [str(tmp_path / "demo")])]


@pytest.mark.slow
def test_fuzz_the_command_line(files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(minirad._arguments, "memory_available", lambda: 2 * 2**30)
    ran = []  # the heavy commands whose arguments were accepted

    def stand_in(*args, **kwargs):
        ran.append(args)
        return {"paths": {}} if "quick" in kwargs else []

    monkeypatch.setattr(minirad.studies.pde.study, "run_study", stand_in)
    monkeypatch.setattr(minirad.studies.nn.study, "run_study", stand_in)
    monkeypatch.setattr(minirad.gallery, "build_figures", stand_in)
    rnd = random.Random(20260)
    escapes, outcomes = [], {"success": 0, "refused": 0}
    for _ in range(CASES):
        argv = _case(rnd, files, tmp_path)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("default")  # as on the command line, not pytest's errors
                status = main(argv)
        except SystemExit as stop:  # --help
            status = 0 if stop.code == 0 else f"SystemExit({stop.code!r})"
        except BaseException as error:  # the escape being counted
            status = f"{type(error).__name__}: {error}"[:300]
        err = capsys.readouterr().err
        lines = err.splitlines()
        if status == 0 and "Traceback" not in err and all(
                line.startswith(("minirad ", "  ")) for line in lines):
            outcomes["success"] += 1
        elif status == 1 and len(lines) == 1 and err.endswith("\n") and \
                lines[0].startswith("minirad") and "Traceback" not in err:
            outcomes["refused"] += 1
        else:
            escapes.append((argv, status, err[-400:]))
    print(f"{CASES} cases: {outcomes['success']} succeeded, {outcomes['refused']} refused in "
          f"one line, {len(escapes)} escaped; {len(ran)} heavy runs stood in for")
    assert not escapes, "\n".join(f"{argv!r} -> {status!r}\n{err}" for argv, status, err
                                  in escapes[:10])
    # the fuzz reached both sides on most commands (a generator that only made
    # refusals would test little)
    assert outcomes["success"] > 60 and outcomes["refused"] > 300

