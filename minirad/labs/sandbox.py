"""One submission run in a sandbox: a process between the grader and the student's kernel.

The grader starts ``python -m minirad.labs.sandbox`` for each submission and
writes the job to its stdin: the notebook's code cells, the lab, each
exercise's cases and time limit, the limits of the kernel.  This process (the
*sandbox*, never the kernel's grandparent in a way a kernel can reach) then:

1. becomes a child subreaper (Linux), so that a process the kernel starts and
   orphans (a double fork, ``setsid``) is adopted by it and killed at the end;
2. makes the kernel's scratch folder (its working folder, its home, the only
   place it may write), and, when the grader runs as root and Python can be
   run by another user, gives the kernel a user id of its own: then the kernel
   can neither signal nor read the grader, the sandbox or other submissions;
3. starts the kernel (:mod:`minirad.labs.kernel`: ipykernel under a watch) in a
   session of its own, with limits on memory (``RLIMIT_AS``), CPU time, file
   size, open files and (for its own user) processes, with a pipe for the
   watch's frames, an empty ``PATH`` and nothing in its environment that names
   another file;
4. runs the submission's cells, each under a time limit, then one cell per
   exercise that answers the exercise's cases (:func:`minirad.labs.runner.probe`),
   under the exercise's limit; a kernel that dies is replaced by a fresh one,
   which reruns the cells but the one it died in and goes on with the
   exercises left; the scratch folder's size and the frames' size are watched
   and a kernel past either limit is stopped;
5. ends the kernel and every process it left (its session, its user, its
   orphans), and writes the frames (with the key that signs them), what
   happened to each exercise, and the cells' outputs (capped) to its stdout.

The grader reads that after the kernel is gone and judges it in its own
process (:mod:`minirad.labs.grading`).  :func:`run` is the grader's side:
start a sandbox, hand it a job, read its result, and clean up whatever a
sandbox that was killed left behind.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

__all__ = ["Job", "Limits", "Outcome", "font_cache", "kernel_python", "main", "run",
           "user_can_run"]

MARGIN = 15.0          # seconds a probe cell gets beyond its exercise's limit
STARTUP = 90.0         # seconds a kernel may take to start
PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Limits:
    """What one kernel may use.  Times in seconds, sizes in bytes."""

    notebook_seconds: float = 1200.0
    cell_seconds: float = 180.0
    memory: int = 4 * 2 ** 30
    processes: int = 256
    file_size: int = 64 * 2 ** 20
    open_files: int = 1024
    scratch_bytes: int = 512 * 2 ** 20
    frame_bytes: int = 256 * 2 ** 20
    output_bytes: int = 2 * 2 ** 20


@dataclass
class Job:
    """What a sandbox runs: the submission's cells, and each exercise's cases as the
    grader encoded them (:mod:`minirad.labs.wire`)."""

    lab: int
    cells: list[str]
    exercises: list[dict]          # {"number", "cases" (bytes), "seconds"}
    limits: Limits = field(default_factory=Limits)
    scratch: str = ""
    user: int | None = None
    python: str = sys.executable
    pythonpath: list[str] = field(default_factory=list)
    read_roots: list[str] = field(default_factory=list)
    matplotlib: str = ""           # a font cache made once, copied into each scratch


@dataclass
class Outcome:
    """What a sandbox reports: one entry per kernel it ran (``key`` hex, ``frames`` the
    bytes its watch wrote, ``probes`` each exercise asked with how its cell ended), the
    first kernel's cells with their outputs, notes, and an error if the run failed."""

    runs: list[dict] = field(default_factory=list)
    cells: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ""


# ------------------------------------------------------------ who runs Python
def _world_can_reach(path: str, executable: bool) -> bool:
    """Whether a user who owns nothing may read (and run) ``path``: every folder above it
    searchable by others, the file readable (and executable) by others."""
    path = os.path.realpath(path)
    parts = path.split("/")
    for i in range(2, len(parts)):
        folder = "/".join(parts[:i]) or "/"
        try:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    need = stat.S_IROTH | (stat.S_IXOTH if executable else 0)
    if stat.S_ISDIR(mode):
        need |= stat.S_IXOTH
    return mode & need == need


def kernel_python() -> tuple[str, list[str]] | None:
    """A Python another user can run, with the folders to put on its path so that it
    imports this environment's packages (numpy, ipykernel, minirad): this interpreter if
    others can run it, else a system interpreter of the same version.  None if neither."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    paths = [p for p in sys.path if p and os.path.isdir(p) and "site-packages" in p]
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [here] + paths
    if not all(_world_can_reach(p, False) for p in paths):
        return None
    if _world_can_reach(sys.executable, True):
        return sys.executable, paths
    for folder in ("/usr/bin", "/usr/local/bin", "/bin"):
        candidate = os.path.join(folder, version)
        if os.path.exists(candidate) and _world_can_reach(candidate, True):
            return candidate, paths
    return None


def font_cache(folder: str) -> str:
    """Make matplotlib's font cache in ``folder`` once (a kernel would spend seconds on its
    own, and call a program to do it); each sandbox copies it into its kernel's scratch
    folder.  Return ``folder``."""
    os.makedirs(folder, mode=0o755, exist_ok=True)
    env = dict(os.environ, MPLCONFIGDIR=folder, MPLBACKEND="Agg")
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300,
                   check=False)
    for name in os.listdir(folder):
        os.chmod(os.path.join(folder, name), 0o644)
    return folder


def user_can_run() -> bool:
    """Whether kernels can get a user of their own: the grader is root and a Python exists
    that another user can run."""
    return hasattr(os, "getuid") and os.getuid() == 0 and kernel_python() is not None


# ------------------------------------------------------------ the sandbox side
def _subreaper() -> bool:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    """The processes whose parent is this one (Linux /proc)."""
    found, me = [], str(os.getpid())
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == me:
            found.append(int(name))
    return found


def _kill_user(uid: int) -> None:
    """Kill every process of ``uid``: a child takes that user id and signals -1 (every
    process it may signal, itself spared).  Only for the kernels' own user ids."""
    if uid < 10_000:
        raise ValueError(f"refusing to kill the processes of user {uid}")
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _reap_all(session: int | None, uid: int | None) -> None:
    """End the kernel's session, its user's processes and every orphan adopted here."""
    for _ in range(50):
        if session:
            try:
                os.killpg(session, signal.SIGKILL)
            except OSError:
                pass
        if uid is not None:
            _kill_user(uid)
        children = _children()
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid == 0:
                break
        if not children:
            return
        time.sleep(0.02)


def _folder_size(path: str, stop_at: int) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                pass
            if total > stop_at:
                return total
    return total


class Died(Exception):
    """The kernel died, or was stopped by the sandbox (``str`` says why)."""


class _Run:
    """One kernel: its key, its channel, its frames, and what happened to its exercises.
    Cells are sent and their replies awaited here, each wait bounded: a cell past its time
    is interrupted, and a kernel that does not answer the interrupt is killed."""

    def __init__(self, job: Job, home: str, first: bool):
        self.job, self.home, self.first = job, home, first
        self.key = os.urandom(32)
        self.frames = bytearray()
        self.probes: list[dict] = []
        self.cells: list[dict] = []
        self.stopped = ""           # why the sandbox stopped this kernel, if it did
        self.timed_out = False      # killed because a cell went on past its interrupt
        self.output_bytes = 0
        self.read_end, self.write_end = os.pipe()
        self.manager = _manager(job, home, self.key, self.write_end)
        self.client = None
        self.session = None
        self._done = threading.Event()

    def start(self) -> None:
        log = os.open(os.path.join(self.home, "kernel.log"),
                      os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            self.manager.start_kernel(
                env=_kernel_env(self.job), cwd=self.job.scratch, pass_fds=(self.write_end,),
                umask=0o077, stdout=log, stderr=log, **_user_kwargs(self.job.user))
        finally:
            os.close(log)
            os.close(self.write_end)
        process = getattr(self.manager.provisioner, "process", None)
        self.session = process.pid if process is not None else None
        print(f"KERNEL {self.session}", flush=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=self._watch_size, daemon=True).start()
        self.client = self.manager.blocking_client()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=STARTUP)
        except RuntimeError as error:
            raise Died(f"the kernel did not start: {error}") from None

    def _read(self) -> None:
        limit = self.job.limits.frame_bytes
        while True:
            try:
                chunk = os.read(self.read_end, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.frames += chunk
            if len(self.frames) > limit:
                self.stop(f"the kernel wrote more than {limit:,} bytes of answers")
                break
        os.close(self.read_end)

    def _watch_size(self) -> None:
        limit = self.job.limits.scratch_bytes
        while not self._done.wait(0.2):
            if _folder_size(self.job.scratch, limit) > limit:
                self.stop(f"the kernel's scratch folder passed its limit of {limit:,} bytes")
                return

    def stop(self, why: str) -> None:
        if not self.stopped:
            self.stopped = why
        if self.session:
            try:
                os.killpg(self.session, signal.SIGKILL)
            except OSError:
                pass

    def _alive(self) -> bool:
        process = getattr(self.manager.provisioner, "process", None)
        return process is not None and process.poll() is None and not self.stopped

    def _keep(self, outputs: list, msg: dict) -> None:
        """One iopub message as an output of the cell, while the kernel's outputs stay
        under their limit (a cell that prints 100 MB costs the sandbox its limit)."""
        from nbformat.v4 import output_from_msg

        if msg["msg_type"] not in ("stream", "display_data", "execute_result", "error"):
            return
        size = len(json.dumps(msg.get("content", {}), default=str))
        self.output_bytes += size
        limit = self.job.limits.output_bytes
        if self.output_bytes > limit:
            if self.output_bytes - size <= limit:
                outputs.append({"output_type": "stream", "name": "stderr", "text": (
                    f"[the grader kept only the first {limit:,} bytes of this kernel's "
                    f"output]\n")})
            return
        try:
            outputs.append(dict(output_from_msg(msg)))
        except ValueError:
            pass

    def run_cell(self, source: str, seconds: float) -> dict:
        """Run ``source``; return ``{"source", "outputs", "status"}`` with status ``ok``,
        ``error`` or ``timed out`` (interrupted); raise :class:`Died` if the kernel died or
        had to be killed."""
        from queue import Empty

        cell = {"source": source, "outputs": [], "status": "ok"}
        self.cells.append(cell)
        msg_id = self.client.execute(source, store_history=False, allow_stdin=False)
        deadline = time.monotonic() + max(seconds, 0.5)
        interrupted = False
        reply = None
        idle = False
        while not (reply is not None and idle):
            if not self._alive():
                raise Died(self.stopped or "the kernel died")
            if time.monotonic() > deadline:
                if interrupted:
                    self.timed_out = True
                    self.stop(f"a cell ran past its limit of {seconds:g} s and did not stop")
                    raise Died(self.stopped)
                interrupted = True
                cell["status"] = "timed out"
                try:
                    self.manager.interrupt_kernel()
                except Exception:  # noqa: BLE001  (a kernel that cannot be interrupted dies)
                    pass
                deadline = time.monotonic() + 3.0
            try:
                msg = self.client.get_iopub_msg(timeout=0.05)
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    if msg["msg_type"] == "status":
                        idle = msg["content"].get("execution_state") == "idle"
                    else:
                        self._keep(cell["outputs"], msg)
            except Empty:
                pass
            try:
                while reply is None:
                    msg = self.client.get_shell_msg(timeout=0)
                    if msg.get("parent_header", {}).get("msg_id") == msg_id:
                        reply = msg
            except Empty:
                pass
        if reply["content"].get("status") == "error" and cell["status"] == "ok":
            cell["status"] = "error"
        return cell

    def close(self) -> None:
        self._done.set()
        try:
            if self.client is not None:
                self.client.stop_channels()
        except Exception:  # noqa: BLE001
            pass
        try:
            self.manager.shutdown_kernel(now=True)
        except Exception:  # noqa: BLE001  (a dead kernel may refuse a clean shutdown)
            pass
        try:
            self.manager.cleanup_resources()
        except Exception:  # noqa: BLE001
            pass
        _reap_all(self.session, self.job.user)
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join(5)     # the frames written last, before the channel closed


def _manager(job: Job, home: str, key: bytes, channel: int):
    """A kernel manager that starts :mod:`minirad.labs.kernel` over IPC sockets in the
    scratch folder, its connection file readable by the kernel's user only."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    specs = os.path.join(home, "kernels", "minirad-grading")
    os.makedirs(specs, exist_ok=True)
    with open(os.path.join(specs, "kernel.json"), "w", encoding="utf-8") as f:
        json.dump({"argv": [job.python, "-m", "minirad.labs.kernel", "-f", "{connection_file}",
                            # the kernel's own stdout stays the sandbox's log file, whose
                            # size is limited, not a pipe a flood can block
                            "--IPKernelApp.capture_fd_output=False"],
                   "display_name": "minirad grading", "language": "python"}, f)
    config_path = _config_path(job)
    key_path = os.path.join(job.scratch, ".minirad-key")
    with open(key_path, "wb") as f:
        f.write(key)
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump({"key": key_path, "scratch": job.scratch, "lab": job.lab, "channel": channel,
                   "read_roots": job.read_roots, "limits": _kernel_limits(job.limits),
                   "own_user": job.user is not None}, f)
    for path in (key_path, config_path):
        os.chmod(path, 0o600)
        if job.user is not None:
            os.chown(path, job.user, job.user)

    class Manager(KernelManager):
        def write_connection_file(self, **kwargs):
            super().write_connection_file(**kwargs)
            if job.user is not None:
                os.chown(self.connection_file, job.user, job.user)

    specs_manager = KernelSpecManager(kernel_dirs=[os.path.join(home, "kernels")])
    manager = Manager(kernel_name="minirad-grading", kernel_spec_manager=specs_manager,
                      transport="ipc", ip=os.path.join(job.scratch, ".kernel"),
                      connection_file=os.path.join(job.scratch, ".kernel.json"))
    manager.autorestart = False
    return manager


def _config_path(job: Job) -> str:
    return os.path.join(job.scratch, ".minirad-grading.json")


def _kernel_limits(limits: Limits) -> dict:
    return {"memory": limits.memory, "cpu": int(limits.notebook_seconds + 60),
            "processes": limits.processes, "file_size": limits.file_size,
            "open_files": limits.open_files}


def _kernel_env(job: Job) -> dict:
    """Nothing that names a file but the scratch folder and Python's own."""
    scratch = job.scratch
    return {
        "PATH": "", "HOME": scratch, "TMPDIR": scratch, "USER": "student", "LOGNAME": "student",
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONPATH": os.pathsep.join(job.pythonpath),
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "MPLBACKEND": "",
        "MPLCONFIGDIR": os.path.join(scratch, ".matplotlib"),
        "IPYTHONDIR": os.path.join(scratch, ".ipython"),
        "JUPYTER_RUNTIME_DIR": os.path.join(scratch, ".jupyter"),
        "JUPYTER_DATA_DIR": os.path.join(scratch, ".jupyter"),
        "JUPYTER_CONFIG_DIR": os.path.join(scratch, ".jupyter"),
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2", "MINIRAD_LAB_OUTPUT": os.path.join(scratch, "pictures"),
        "MINIRAD_GRADING_CONFIG": _config_path(job),
    }


def _user_kwargs(user: int | None) -> dict:
    return {} if user is None else {"user": user, "group": user, "extra_groups": []}


def _setup_cell() -> str:
    return ("import sys as _minirad_sys\n_minirad_sys.audit('minirad.strict')\n"
            "import minirad.labs.runner as _minirad_runner\n"
            "del _minirad_sys, _minirad_runner\n")


def _probe_cell(number: str, payload: bytes, seconds: float) -> str:
    text = base64.b64encode(payload).decode("ascii")
    return (f"__import__('minirad.labs.runner', fromlist=['probe']).probe({number!r}, "
            f"__import__('base64').b64decode({text!r}), {float(seconds)!r})")


def _encrypt(key: bytes, number: str, plain: bytes) -> bytes:
    """The cases of one exercise as only the kernel's watch can read them (see
    :func:`minirad.labs.kernel.install`): an HMAC keystream under the kernel's key."""
    import hashlib
    import hmac

    nonce = os.urandom(16)
    body = number.encode() + b"\n" + plain
    stream = b"".join(hmac.new(key, b"cases " + nonce + block.to_bytes(8, "big"),
                               hashlib.sha256).digest()
                      for block in range((len(body) + 31) // 32))[:len(body)]
    return nonce + (int.from_bytes(body, "big") ^ int.from_bytes(stream, "big")).to_bytes(
        len(body), "big")


def _cells_of(run: _Run, count: int) -> list[dict]:
    """The first kernel's submission cells and their outputs (the setup cell left out)."""
    return [{"source": c["source"], "outputs": c["outputs"]} for c in run.cells[1:1 + count]]


def _execute(job: Job, home: str) -> Outcome:
    outcome = Outcome()
    started = time.monotonic()
    deadline = started + job.limits.notebook_seconds
    skipped: set[int] = set()
    pending = list(job.exercises)
    attempts = 0
    while pending and attempts <= len(job.cells) + len(job.exercises) and \
            time.monotonic() < deadline:
        attempts += 1
        run = _Run(job, home, first=not outcome.runs)
        record = {"key": run.key.hex(), "probes": run.probes, "frames": ""}
        outcome.runs.append(record)
        watchdog = None
        current = ("start",)
        try:
            run.start()
            watchdog = threading.Timer(max(deadline - time.monotonic(), 0.0), run.stop,
                                       ("the notebook ran past its time limit",))
            watchdog.daemon = True
            watchdog.start()
            run.run_cell(_setup_cell(), 60)
            for index, source in enumerate(job.cells):
                if index in skipped:
                    continue
                current = ("cell", index)
                seconds = min(job.limits.cell_seconds, deadline - time.monotonic() + 1)
                run.run_cell(source, seconds)
            while pending:
                exercise = pending[0]
                current = ("exercise", exercise)
                payload = _encrypt(run.key, exercise["number"], exercise["cases"])
                seconds = min(exercise["seconds"] + MARGIN, deadline - time.monotonic() + 1)
                cell = run.run_cell(_probe_cell(exercise["number"], payload,
                                                exercise["seconds"]), seconds)
                run.probes.append({"number": exercise["number"], "how": cell["status"],
                                   "stopped": run.stopped})
                pending.pop(0)
        except Died as died:
            why = run.stopped or str(died) or "the kernel died"
            outcome.notes.append(why)
            if current[0] == "start":
                outcome.error = f"the kernel could not start: {why}"[:2000]
                break
            if current[0] == "cell":
                skipped.add(current[1])
            else:
                exercise = current[1]
                run.probes.append({"number": exercise["number"],
                                   "how": "timed out" if run.timed_out else "died",
                                   "stopped": why})
                if exercise in pending:
                    pending.remove(exercise)
        except Exception as error:  # noqa: BLE001  (a kernel that cannot start, nbclient...)
            outcome.notes.append(f"{type(error).__name__}: {error}"[:500])
            if current[0] == "start":    # it never started: tell the grader, do not retry
                outcome.error = f"the kernel could not start: {error}"[:2000]
                break
            if current[0] == "exercise" and current[1] in pending:
                run.probes.append({"number": current[1]["number"], "how": "died",
                                   "stopped": str(error)[:200]})
                pending.remove(current[1])
        finally:
            if watchdog is not None:
                watchdog.cancel()
            if outcome.runs and len(outcome.runs) == 1 and not outcome.cells:
                outcome.cells = _cells_of(run, len(job.cells))
            run.close()
            record["frames"] = base64.b64encode(bytes(run.frames)).decode("ascii")
            record["stopped"] = run.stopped
    if pending and not outcome.error:
        outcome.notes.append(f"not graded, the notebook ran past its limit of "
                             f"{job.limits.notebook_seconds:g} s: "
                             + ", ".join(e["number"] for e in pending))
    return outcome


def _read_job(data: bytes) -> Job:
    raw = json.loads(data)
    limits = Limits(**raw.pop("limits"))
    exercises = [{"number": str(e["number"]), "seconds": float(e["seconds"]),
                  "cases": base64.b64decode(e["cases"])} for e in raw.pop("exercises")]
    return Job(limits=limits, exercises=exercises, **raw)


def _prepare(job: Job) -> str:
    """The sandbox's own folder (root's, closed to the kernel) and the kernel's scratch."""
    home = tempfile.mkdtemp(prefix="minirad-sandbox-")
    os.makedirs(job.scratch, mode=0o700, exist_ok=True)
    os.chmod(job.scratch, 0o700)
    fonts = os.path.join(job.scratch, ".matplotlib")
    os.makedirs(fonts, mode=0o700, exist_ok=True)
    if job.matplotlib and os.path.isdir(job.matplotlib):
        for name in os.listdir(job.matplotlib):
            shutil.copyfile(os.path.join(job.matplotlib, name), os.path.join(fonts, name))
    if job.user is not None:
        for folder, _, names in os.walk(job.scratch):
            os.chown(folder, job.user, job.user)
            for name in names:
                os.chown(os.path.join(folder, name), job.user, job.user)
    return home


def main() -> int:
    """The sandbox process: read a job from stdin, run it, write the outcome to stdout."""
    resource.setrlimit(resource.RLIMIT_AS, (8 * 2 ** 30, 8 * 2 ** 30))
    _subreaper()
    data = sys.stdin.buffer.read(512 * 2 ** 20 + 1)
    job = _read_job(data)
    home = _prepare(job)
    try:
        outcome = _execute(job, home)
    except Exception as error:  # noqa: BLE001  (whatever went wrong, the grader gets a report)
        outcome = Outcome(error=f"the sandbox failed: {type(error).__name__}: {error}"[:2000])
    finally:
        _reap_all(None, job.user)
        shutil.rmtree(home, ignore_errors=True)
    text = json.dumps({"runs": outcome.runs, "cells": outcome.cells, "notes": outcome.notes,
                       "error": outcome.error}, default=str)
    sys.stdout.write(f"RESULT {len(text)}\n{text}")
    sys.stdout.flush()
    return 0


# ------------------------------------------------------------ the grader's side
def run(job: Job, timeout: float) -> Outcome:
    """Run ``job`` in a sandbox process and return what it reported.  Whatever happens to
    the sandbox (killed by the kernel, past ``timeout``), an :class:`Outcome` comes back,
    and the kernel's session and user are ended."""
    data = json.dumps({
        "lab": job.lab, "cells": job.cells, "scratch": job.scratch, "user": job.user,
        "python": job.python, "pythonpath": job.pythonpath, "read_roots": job.read_roots,
        "matplotlib": job.matplotlib,
        "limits": job.limits.__dict__,
        "exercises": [{"number": e["number"], "seconds": e["seconds"],
                       "cases": base64.b64encode(e["cases"]).decode("ascii")}
                      for e in job.exercises]}).encode("utf-8")
    process = subprocess.Popen([sys.executable, "-m", "minirad.labs.sandbox"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, start_new_session=True,
                               cwd="/", env=_sandbox_env())
    sessions: list[int] = []
    result: list[bytes] = []

    def talk() -> None:
        try:
            process.stdin.write(data)
            process.stdin.close()
        except OSError:
            return
        stream = process.stdout
        while True:
            line = stream.readline(1000)
            if not line:
                return
            if line.startswith(b"KERNEL "):
                try:
                    sessions.append(int(line.split()[1]))
                except (ValueError, IndexError):
                    pass
            elif line.startswith(b"RESULT "):
                size = int(line.split()[1])
                result.append(stream.read(min(size, 2 * 2 ** 30)))
                return

    reader = threading.Thread(target=talk, daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive() or process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass
    for session in sessions:      # a sandbox that was killed leaves its kernel behind
        try:
            os.killpg(session, signal.SIGKILL)
        except OSError:
            pass
    if job.user is not None:
        _kill_user(job.user)
    if not result:
        code = process.returncode
        return Outcome(error=("the grading process of this submission was stopped before it "
                              f"reported (exit status {code}; a submission that kills its "
                              f"kernel's parent, or ran past the time limit)"))
    try:
        raw = json.loads(result[0])
        return Outcome(runs=list(raw["runs"]), cells=list(raw["cells"]),
                       notes=[str(n) for n in raw["notes"]], error=str(raw["error"]))
    except (ValueError, KeyError, TypeError) as error:
        return Outcome(error=f"the sandbox's report could not be read: {error}")


def _sandbox_env() -> dict:
    env = {key: value for key, value in os.environ.items()
           if key in ("PATH", "PYTHONPATH", "LANG", "LC_ALL", "HOME", "VIRTUAL_ENV")}
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([here, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


if __name__ == "__main__":
    sys.exit(main())
