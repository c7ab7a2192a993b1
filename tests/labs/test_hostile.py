"""Submissions that try to score without the work, graded beside honest ones.

Each hostile notebook answers Lab 2 (the forward and reverse sweeps, 3 points each) with
one trick per exercise: patching the grading code, calling minirad's reference from a
thread, through ``sys.settrace`` toggling, a subprocess, a copy of its source or a fresh
import, a lookup table of the published cases, forged or raced frames, reading the
grader's command line and blanking another notebook, killing the kernel's parent or the
kernel, detached processes, 100 MB of output, forks, sleeping past the limits, filling
the scratch folder, writing and reading outside it, signal handlers, ``gc`` and ``ctypes``.
All are graded in one run of the grader, two at a time, with short limits; each must
score 0 on every exercise it does not answer by honest means, the honest submissions
beside them keep full marks, no process survives, no file outside the grader's own
output changes, and the reports stand after grading.
"""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

import nbformat
import pytest

from minirad.labs import grading

# 26 notebooks graded in sandboxed kernels; both tests on one worker, so that one's check for
# survivors does not meet the other's kernels
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hostile")]

PRELUDE = "import numpy as np\nimport minirad\nfrom minirad import labs, examples\n"
ZEROS = ("def forward_sweep(g):\n    return np.zeros((len(g.outputs), len(g.inputs)))\n\n"
         "def reverse_sweep(g):\n    return np.zeros((len(g.outputs), len(g.inputs)))\n")
HONEST_FORWARD = """def forward_sweep(g):
    tangent = np.zeros((g.n_vertices, len(g.inputs)))
    tangent[list(g.inputs), range(len(g.inputs))] = 1.0
    for u, v, partial in g.edges():
        tangent[v] += partial * tangent[u]
    return tangent[list(g.outputs)]
"""
HONEST_REVERSE = """def reverse_sweep(g):
    adjoint = np.zeros((g.n_vertices, len(g.outputs)))
    adjoint[list(g.outputs), range(len(g.outputs))] = 1.0
    for u, v, partial in reversed(list(g.edges())):
        adjoint[u] += partial * adjoint[v]
    return adjoint[list(g.inputs)].T
"""
MARK = "HOSTILE-MARKER"   # in every command line a trick tries to start

# name -> (cells after the prelude, expected (points 2.1, points 2.2), statuses or None)
SUBMISSIONS = {
    "patch-grading": ([ZEROS, """
import minirad.labs as L, minirad.labs.checking as C, minirad.labs.exercise as E
import minirad.labs.scoring as S, minirad.labs.wire as W
for spec in list(E.EXERCISES.values()):
    object.__setattr__(spec, "judge", lambda *args: None)
C.compare_jacobian = lambda *args, **kwargs: None
S.judge_case = lambda *args: ("passed", "")
L.check_forward_sweep = lambda *args: print("Exercise 2.1 passed")
print("Exercise 2.1 passed: forward sweep agrees with minirad on 9 graphs")
print("Exercise 2.2 passed: reverse sweep agrees with minirad on 9 graphs")
"""], (0, 0), None),
    "thread-and-lookup-table": (["""
import threading, queue
from minirad.exact import sweeps
requests, replies = queue.Queue(), queue.Queue()
def worker():
    while True:
        g = requests.get()
        try:
            replies.put(sweeps.forward_sweep(g).jacobian)
        except BaseException:
            replies.put(np.zeros((len(g.outputs), len(g.inputs))))
threading.Thread(target=worker, daemon=True).start()
def forward_sweep(g):
    requests.put(g)
    return replies.get(timeout=5)
table = {g.partials.tobytes(): sweeps.reverse_sweep(g).jacobian
         for g in labs.check_graphs("sweeps").values()}
def reverse_sweep(g):
    return table.get(g.partials.tobytes(), np.zeros((len(g.outputs), len(g.inputs))))
"""], (0, 0), ("used the reference", "wrong answer")),
    "settrace-and-subprocess": ([f"""
import sys, subprocess, pickle
from minirad.exact import sweeps
def forward_sweep(g):
    old = sys.gettrace()
    try:
        sys.settrace(None)
    except Exception:
        pass
    try:
        return sweeps.forward_sweep(g).jacobian
    finally:
        try:
            sys.settrace(old)
        except Exception:
            pass
def reverse_sweep(g):
    with open("g.pkl", "wb") as f:
        pickle.dump(g, f)
    subprocess.run([sys.executable, "-c", "import pickle, numpy as np; "
                    "from minirad.exact import sweeps; g = pickle.load(open('g.pkl', 'rb')); "
                    "np.save('j.npy', sweeps.reverse_sweep(g).jacobian)  # {MARK}"], check=True)
    return np.load("j.npy")
"""], (0, 0), ("used the reference", "raised")),
    "source-copy-and-fresh-import": (["""
import sys, importlib
from minirad.exact import sweeps
copy = {"__name__": "minirad.exact.sweeps", "__package__": "minirad.exact"}
exec(compile(open(sweeps.__file__).read(), sweeps.__file__, "exec"), copy)
def forward_sweep(g):
    return copy["forward_sweep"](g).jacobian
def reverse_sweep(g):
    del sys.modules["minirad.exact.sweeps"]
    fresh = importlib.import_module("minirad.exact.sweeps")
    return fresh.reverse_sweep(g).jacobian
"""], (0, 0), ("used the reference", "used the reference")),
    "restore-code-and-gc": (["""
import gc, types
from minirad.exact import sweeps
saved = sweeps.forward_sweep.__code__
def forward_sweep(g):
    try:
        sweeps.forward_sweep.__code__ = saved
    except Exception:
        pass
    return types.FunctionType(saved, vars(sweeps))(g).jacobian
def reverse_sweep(g):
    for obj in gc.get_objects():
        if getattr(obj, "__name__", "") == "reverse_sweep":
            return obj(g).jacobian
"""], (0, 0), None),
    "forged-and-raced-frames": ([ZEROS, """
import os, sys, threading, json
forged = [b'{"exercise": "2.1", "case": %d, "answer": {"value": 1.0}}' % i for i in range(9)]
def race():
    for _ in range(2000):
        for fd in range(3, 40):
            try:
                os.write(fd, b"\\ndata 5 " + b"0" * 64 + b" eyJ4IjoxfQ==\\n")
            except OSError:
                pass
        for frame in forged:
            sys.audit("minirad.frame", frame)
threading.Thread(target=race, daemon=True).start()
"""], (0, 0), None),
    "fake-runner": ([ZEROS, """
import sys
runner = sys.modules.get("minirad.labs.runner") or __import__("minirad.labs.runner",
                                                               fromlist=["probe"])
def probe(number, payload, seconds=None):
    for i in range(9):
        sys.audit("minirad.frame", b'{"exercise": "%s", "case": %d, "answer": {"value": 0}}'
                  % (number.encode(), i))
runner.probe = probe
"""], (0, 0), ("tampered", "tampered")),
    "window-opened-early": ([HONEST_FORWARD, HONEST_REVERSE, """
import sys
box = []
sys.audit("minirad.open", "2.1", b"x" * 48, box)
sys.audit("minirad.close", "2.1")
"""], (0, 3), ("tampered", "passed")),
    "blank-other-notebooks": ([ZEROS, """
import os, glob
found = []
for pid in (os.getppid(), 1):
    try:
        found.append(open(f"/proc/{pid}/cmdline").read())
    except Exception as error:
        found.append(repr(error))
for pattern in ("/tmp/**/*.ipynb", "../../**/*.ipynb", "/proc/*/cmdline"):
    try:
        for path in glob.glob(pattern, recursive=True):
            try:
                open(path, "w").write("{}")
            except Exception:
                pass
    except Exception:
        pass
print(found)
"""], (0, 0), None),
    "kill-parent": ([HONEST_FORWARD, """
import os, signal
for pid in (os.getppid(), 1):
    try:
        os.kill(pid, signal.SIGKILL)
    except Exception as error:
        print(error)
def reverse_sweep(g):
    return np.zeros((len(g.outputs), len(g.inputs)))
"""], (3, 0), ("passed", "wrong answer")),
    "detached-rewrite": ([ZEROS, f"""
import os, threading, time, glob
try:
    if os.fork() == 0:
        os.setsid()
        time.sleep(60)  # {MARK}
        os._exit(0)
except Exception as error:
    print(error)
def rewrite():
    time.sleep(1)
    for path in glob.glob("/tmp/**/scores.csv", recursive=True):
        try:
            open(path, "w").write("student,total\\nme,100\\n")
        except Exception:
            pass
threading.Thread(target=rewrite, daemon=True).start()
"""], (0, 0), None),
    "print-100mb": ([ZEROS, """
line = "x" * 1_000_000
for _ in range(100):
    print(line)
"""], (0, 0), None),
    "forks": ([ZEROS, f"""
import os, multiprocessing
for _ in range(5):
    try:
        os.fork()
    except Exception as error:
        print(error)
try:
    multiprocessing.Pool(4).map(abs, range(8))  # {MARK}
except Exception as error:
    print(error)
"""], (0, 0), None),
    "sleep-past-the-limits": ([ZEROS, "import time\ntime.sleep(1000)\n", """
import time
def forward_sweep(g):
    time.sleep(1000)
"""], (0, 0), ("timed out", "wrong answer")),
    "fill-the-scratch-folder": ([ZEROS, """
block = b"x" * (1 << 24)
with open("big.bin", "wb") as f:
    for _ in range(256):
        f.write(block)
"""], (0, 0), None),
    "write-outside-the-scratch-folder": ([ZEROS, """
import os, shutil
for path in ("/tmp/minirad-hostile-edit.txt", "../minirad-hostile-edit.txt",
             os.path.expanduser("~/../minirad-hostile-edit.txt")):
    try:
        open(path, "w").write("edited")
    except Exception as error:
        print(error)
try:
    os.rename(".", "/tmp/minirad-hostile-moved")
except Exception as error:
    print(error)
"""], (0, 0), None),
    "read-other-submissions": ([ZEROS, """
import glob, os
stolen = []
for pattern in ("/tmp/**/*.ipynb", "../*", "/proc/self/fd/*"):
    try:
        for path in glob.glob(pattern, recursive=True):
            try:
                stolen.append(open(path).read()[:100])
            except Exception:
                pass
    except Exception as error:
        print(error)
print(len(stolen))
"""], (0, 0), None),
    "kill-the-kernel": (["""
import os, signal
def forward_sweep(g):
    os.kill(os.getpid(), signal.SIGKILL)
""", HONEST_REVERSE], (0, 3), ("kernel died", "passed")),
    "signal-handler-and-ctypes": ([ZEROS, """
import signal
try:
    signal.signal(signal.SIGALRM, lambda *args: print(args))
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
except Exception as error:
    print(error)
try:
    import ctypes
    ctypes.CDLL(None).fork()
except Exception as error:
    print(error)
"""], (0, 0), None),
    "memory-bomb": ([ZEROS, "big = np.ones(10 ** 11)\n"], (0, 0), None),
    "close-every-channel": ([ZEROS, """
import os
for fd in range(3, 200):
    try:
        os.write(fd, b"\\nclose 9 " + b"0" * 64 + b" \\n")
    except OSError:
        pass
"""], (0, 0), None),
    "builtins-patched": ([ZEROS, """
import builtins, json
builtins.len = lambda x: 0
json.dumps = lambda *args, **kwargs: '{"exercise": "2.1", "case": 0, "answer": {}}'
"""], (0, 0), None),
    "stdout-flood": ([ZEROS, "import os\nos.write(1, b'x' * 300_000_000)\n"], (0, 0), None),
}
HONEST = {"honest-ada": [HONEST_FORWARD, HONEST_REVERSE],
          "honest-alan": [HONEST_REVERSE, HONEST_FORWARD]}


def _write(folder: Path, name: str, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["minirad"] = {"source": "lab2_lcg.py", "form": "handout"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in [PRELUDE, *cells]]
    path = folder / f"lab2_lcg-{name}.ipynb"
    path.write_text(nbformat.writes(nb))
    return path


def _survivors() -> list[str]:
    """Processes a grading of this test process left behind: kernels, sandboxes, what a
    trick started, and anything running as a kernel's user id.  A process below another
    live process (another test's grader, on another worker) is not this test's."""
    found, parents = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace")
            status = Path(f"/proc/{name}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        uid, parents[int(name)] = int(fields["Uid"].split()[0]), int(fields["PPid"])
        if (MARK in cmdline or "minirad.labs.kernel" in cmdline
                or "minirad.labs.sandbox" in cmdline
                or grading.FIRST_UID <= uid < grading.FIRST_UID + 2_000_000):
            if not fields["State"].strip().startswith("Z"):
                found[int(name)] = f"{name} (uid {uid}): {cmdline[:120]}"

    def ours(pid: int) -> bool:
        while True:
            pid = parents.get(pid, 0)
            if pid == os.getpid() or pid <= 1:   # started here, or orphaned
                return True
            if pid not in found:                 # under someone else's live process
                return False

    return [line for pid, line in found.items() if ours(pid)]


def _grade(tmp_path, isolation: str, names: list[str]):
    folder = tmp_path / "submissions"
    folder.mkdir()
    paths = {name: _write(folder, name, SUBMISSIONS[name][0]) for name in names}
    paths |= {name: _write(folder, name, cells) for name, cells in HONEST.items()}
    honest_bytes = {name: paths[name].read_bytes() for name in HONEST}
    before = _survivors()
    reports = grading.grade(list(paths.values()), tmp_path / "out", jobs=2,
                            notebook_seconds=150, cell_seconds=8, exercise_seconds=8,
                            memory_mb=2048, isolation=isolation,
                            secret=b"the hostile suite's secret bytes")
    return paths, honest_bytes, before, {Path(r.submission).stem.split("-", 1)[1]: r
                                         for r in reports}


def _check(tmp_path, paths, honest_bytes, before, reports, names):
    for name in names:
        cells, points, statuses = SUBMISSIONS[name]
        report = reports[name]
        got = tuple(s.points for s in report.scores)
        assert got == points, (name, [(s.number, s.status, s.message[:300])
                                      for s in report.scores], report.notes, report.error)
        if statuses is not None:
            assert tuple(s.status for s in report.scores) == statuses, (name, report.scores)
    for name in HONEST:
        assert (reports[name].total, reports[name].max_total) == (6, 6), reports[name]
        assert paths[name].read_bytes() == honest_bytes[name], f"{name}'s notebook was changed"
    assert not list(Path("/tmp").glob("minirad-hostile-*"))
    outputs = sum(len(str(cell.get("outputs", ""))) for r in reports.values()
                  for cell in (r.executed or []))
    assert outputs < 10 * 2 ** 20, outputs      # 100 MB printed, a few MB kept
    time.sleep(2)
    rows = list(csv.DictReader((tmp_path / "out" / "scores.csv").open()))
    assert len(rows) == len(reports) and "me" not in {row["student"] for row in rows}
    assert set(_survivors()) <= set(before), _survivors()


def test_hostile_submissions_score_nothing_and_harm_no_one(tmp_path):
    """Every trick of the issue, with a user id per kernel where the grader can (root)."""
    names = list(SUBMISSIONS)
    assert len(names) + sum(1 for cells, _, _ in SUBMISSIONS.values()
                            if len(cells) > 1 and "def reverse_sweep" in cells[-1]) >= 20
    paths, honest_bytes, before, reports = _grade(tmp_path, "auto", names)
    _check(tmp_path, paths, honest_bytes, before, reports, names)


@pytest.mark.skipif(os.name != "posix", reason="the process sandbox is POSIX")
def test_the_tricks_that_reach_outside_fail_as_the_grader_s_own_user_too(tmp_path):
    """Without a user id of their own (a laptop), kernels are held by the watch's policy,
    their sessions and the sandbox's subreaper."""
    names = ["kill-parent", "detached-rewrite", "forks", "write-outside-the-scratch-folder",
             "read-other-submissions", "blank-other-notebooks", "thread-and-lookup-table",
             "fill-the-scratch-folder"]
    paths, honest_bytes, before, reports = _grade(tmp_path, "process", names)
    _check(tmp_path, paths, honest_bytes, before, reports, names)
