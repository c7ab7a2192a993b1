"""The grader's kernel: a Jupyter kernel started under a watch the student's code cannot remove.

The sandbox (:mod:`minirad.labs.sandbox`) starts ``python -m minirad.labs.kernel
-f CONNECTION_FILE`` instead of ``ipykernel_launcher``.  Before ipykernel
starts, :func:`install` adds two audit hooks (:func:`sys.addaudithook`: once
added, a hook cannot be removed from Python):

* the **policy** hook refuses, once the grader has sent ``minirad.strict``
  (before the first cell of the submission), what a notebook has no need for
  and a cheat does: starting processes (``subprocess``, ``os.system``,
  ``os.fork``, ``os.exec*``, ``os.posix_spawn``, and ``_posixsubprocess``,
  replaced by a function that refuses), ``ctypes``, signals to other processes,
  writing, renaming or deleting files outside the kernel's scratch folder,
  reading files outside Python's own folders and that folder, listing
  other folders, ``gc.get_objects`` and its kind, ``sys._current_frames``,
  ``sys.settrace``/``setprofile``, new audit hooks, changing the ``__code__``
  of a function of the reference (or giving a function the reference's code),
  a signal handler of the student's own, sockets;
  it answers with ``PermissionError`` and reports what it refused;
* the **watch** hook keeps a channel to the sandbox (a pipe; every frame it
  writes carries a sequence number and an HMAC under a key the kernel reads
  once at start, so frames cannot be forged, dropped or reordered unseen) and
  answers four events: ``minirad.open`` (an exercise's window: it replaces the
  code of every function of the exercise's reference, wherever it is found in
  the heap, by a stub that reports and raises, then decrypts the exercise's
  cases for the caller), ``minirad.frame`` (an answer), ``minirad.close`` (the
  window ends, the code comes back) and ``minirad.used`` (a stub was entered:
  the reference was used, from any thread, whatever ``sys.settrace`` says).
  It never raises and never calls anything the student's code can replace.

What it cannot see: a student who copies minirad's source into the notebook
(with a change, so that its code objects differ), and native code (a compiled
extension) brought in another way; the grader's INSTRUCTORS.md says so.
"""

from __future__ import annotations

import binascii
import gc
import json
import os
import signal
import sys
import types
import warnings

__all__ = ["install", "main"]


def _normalise(path: str, cwd: str) -> str:
    """An absolute path without ``.``/``..`` or double slashes (symbolic links are
    refused elsewhere, so the text is the place).  Closure-free on purpose."""
    if not path.startswith("/"):
        path = cwd + "/" + path
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def _inside(path: str, roots: tuple) -> bool:
    """Whether ``path`` is one of ``roots`` or below one.  Closure-free on purpose."""
    for root in roots:
        if path == root or path.startswith(root + "/"):
            return True
    return False


def _refuse_fork_exec(*args, **kwargs):
    raise PermissionError("the grader's kernel does not start processes")


def _stub_code(n_free: int, name: str, audit, exception) -> types.CodeType:
    """A code object to put in place of a reference function's: it reports ``name`` through
    ``audit`` and raises ``exception``, both held as constants (nothing to look up)."""
    free = ", ".join(f"a{i}" for i in range(n_free))
    touch = "; ".join(f"a{i}" for i in range(n_free)) or "pass"
    source = (f"def make({free}):\n    def stub(*args, **kwargs):\n        {touch}\n"
              f"        (0.5)('minirad.used', '@NAME@')\n        raise (0.25)\n    return stub\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # "float is not callable": replaced below
        module = compile(source, "<minirad watch>", "exec")
    make = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    stub = next(c for c in make.co_consts if isinstance(c, types.CodeType))
    consts = tuple(audit if type(c) is float and c == 0.5 else
                   exception if type(c) is float and c == 0.25 else
                   name if c == "@NAME@" else c for c in stub.co_consts)
    return stub.replace(co_consts=consts)


def install(scratch: str, read_roots: tuple, channel: int, key: bytes,
            references: dict, handlers: tuple = ()) -> None:
    """Add the policy and watch hooks (see the module's docstring).

    ``references`` maps an exercise number to ``{code object: display name}`` of its
    reference's functions; ``handlers`` are signal handlers the grader's own code installs
    (the time limits of :mod:`minirad.labs.checking`).  Call it once, before any code of
    the student's runs.
    """
    import _hashlib
    import _posixsubprocess
    import _signal
    import _thread

    from .reference_guard import UsedReference

    # everything the hooks use, bound now: a later change to a module cannot reach them
    _type, _str, _bytes, _int, _list, _tuple = type, str, bytes, int, list, tuple
    _len, _Permission = len, PermissionError
    _get_ident, _audit, _normalise_, _inside_ = _thread.get_ident, sys.audit, _normalise, _inside
    _getcwd, _write, _FunctionType = os.getcwd, os.write, types.FunctionType
    _objects, _gc_enable, _gc_disable, _gc_enabled = (gc.get_objects, gc.enable, gc.disable,
                                                      gc.isenabled)
    _mask, _SIG_BLOCK, _SIG_SETMASK = signal.pthread_sigmask, signal.SIG_BLOCK, signal.SIG_SETMASK
    _all_signals = frozenset(signal.valid_signals())
    _b64, _from_bytes = binascii.b2a_base64, int.from_bytes
    _signal_signal, _getsignal = _signal.signal, _signal.getsignal
    _builtin_type = _type(len)
    _stub, _UsedReference = _stub_code, UsedReference
    mac = _hashlib.hmac_new(key, digestmod="sha256")
    pid = os.getpid()
    scratch = _normalise(scratch, "/")
    read_roots = tuple(_normalise(root, "/") for root in read_roots) + (scratch,)
    write_roots = (scratch, "/dev/null")
    # /proc/self/maps: threadpoolctl lists the loaded BLAS libraries from it (lab 9 limits
    # their threads); the kernel's memory itself (/proc/self/mem) stays closed
    proc_files = ("/proc/self/stat", "/proc/self/status", "/proc/self/statm",
                  "/proc/self/maps", "/proc/meminfo",
                  "/proc/cpuinfo", "/proc/stat", "/proc/loadavg", "/dev/null", "/dev/urandom",
                  "/dev/random", "/dev/zero", "/dev/shm")
    codes = {number: (frozenset(names), dict(names)) for number, names in references.items()}
    everything = frozenset(code for found, _ in codes.values() for code in found)
    refused_modules = ("ctypes", "_ctypes", "_posixsubprocess", "_signal", "posix", "gc", "_thread")
    blocked = ("os.system", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty",
               "os.startfile", "subprocess.Popen", "pty.spawn", "sys.settrace", "sys.setprofile",
               "sys.addaudithook", "sys._current_frames", "gc.get_objects", "gc.get_referrers",
               "gc.get_referents", "socket.connect", "socket.bind", "socket.sendto",
               "os.link", "os.symlink", "os.killpg", "signal.pthread_kill")
    one_path = ("os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown",
                "os.utime", "shutil.rmtree", "os.chdir", "os.chflags", "os.lchown",
                "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod")
    strict = False
    working = 0          # the thread the watch is working in, or 0
    seq = 0
    current = None       # the exercise whose window is open
    swapped = []         # [(function, its own code)] while a window is open
    allowed_handlers = list(handlers)

    # ------------------------------------------------------------ the watch
    def send(kind: bytes, payload: bytes) -> None:
        nonlocal seq
        number = seq
        seq += 1
        head = b"%s %d " % (kind, number)
        signer = mac.copy()
        signer.update(head)
        signer.update(payload)
        frame = b"\n" + head + signer.hexdigest().encode() + b" " + _b64(payload, newline=False) \
            + b"\n"
        while frame:
            written = _write(channel, frame)
            frame = frame[written:]

    def restore() -> None:
        while swapped:
            function, code = swapped.pop()
            function.__code__ = code

    def watch_exercise(number: str) -> int:
        found, names = codes.get(number, (frozenset(), {}))
        if not found:
            return 0
        stubs = {}
        for obj in _objects():
            if _type(obj) is _FunctionType:
                code = obj.__code__
                if code in found:
                    name = names.get(code, "a function of the reference")
                    n_free = _len(code.co_freevars)
                    stub = stubs.get((name, n_free))
                    if stub is None:
                        stub = _stub(n_free, name, _audit, _UsedReference(name))
                        stubs[(name, n_free)] = stub
                    swapped.append((obj, code))
                    obj.__code__ = stub
        return _len(swapped)

    def decrypt(number: str, payload: bytes) -> bytes:
        nonce, body = payload[:16], payload[16:]
        stream, block = [], 0
        while 32 * block < _len(body):
            signer = mac.copy()
            signer.update(b"cases " + nonce + block.to_bytes(8, "big"))
            stream.append(signer.digest())
            block += 1
        key_stream = b"".join(stream)[:_len(body)]
        plain = (_from_bytes(body, "big") ^ _from_bytes(key_stream, "big")).to_bytes(
            _len(body), "big")
        prefix = number.encode() + b"\n"
        return plain[_len(prefix):] if plain[:_len(prefix)] == prefix else b""

    def watch(event, args):
        nonlocal working, current, strict
        if _type(event) is not _str or not event.startswith("minirad."):
            return
        was = _gc_enabled()
        _gc_disable()
        blocked_signals = _mask(_SIG_BLOCK, _all_signals)
        working = _get_ident()
        try:
            if event == "minirad.frame" and _len(args) == 1 and _type(args[0]) is _bytes:
                send(b"data", args[0])
            elif event == "minirad.used" and _len(args) == 1 and _type(args[0]) is _str:
                send(b"reference", (current or "").encode() + b" " + args[0].encode())
            elif (event == "minirad.open" and _len(args) == 3 and _type(args[0]) is _str
                  and _type(args[1]) is _bytes and _type(args[2]) is _list):
                restore()
                current = args[0]
                count = watch_exercise(current)
                send(b"watch", current.encode() + b" %d" % count)
                plain = decrypt(current, args[1])
                if plain:
                    args[2].append(plain)
                else:
                    send(b"mismatch", current.encode())
            elif event == "minirad.close" and _len(args) == 1 and _type(args[0]) is _str:
                restore()
                send(b"close", args[0].encode())
                current = None
            elif event == "minirad.strict" and not strict:
                strict = True
                for signum in _all_signals:
                    try:
                        allowed_handlers.append(_getsignal(signum))
                    except (OSError, ValueError, TypeError):
                        pass
                send(b"strict", b"")
            elif event == "minirad.signal" and _len(args) == 3 and _type(args[2]) is _list:
                signum, handler = args[0], args[1]
                if (_type(signum) is _int and (_type(handler) in (_int, _builtin_type)
                                               or any(handler is h for h in allowed_handlers))):
                    args[2].append(_signal_signal(signum, handler))
            elif event == "minirad.denied" and _len(args) == 1 and _type(args[0]) is _str:
                send(b"denied", args[0].encode()[:500])
        except BaseException:  # noqa: BLE001  (never raise into the caller: see the docstring)
            pass
        finally:
            working = 0
            _mask(_SIG_SETMASK, blocked_signals)
            if was:
                _gc_enable()

    # ------------------------------------------------------------ the policy
    # The policy raises, so its frame can reach a student through a traceback: it keeps no
    # function of its own and no state but flags (values, which a frame cannot rebind).
    def policy(event, args):
        if not strict or working == _get_ident() or _type(event) is not _str:
            return
        if event.startswith("minirad."):
            return
        why = ""
        if event in blocked or event.startswith("ctypes."):
            why = event
        elif event == "open":
            path, mode, flags = args
            if _type(path) is _bytes:
                path = path.decode("utf-8", "surrogateescape")
            if _type(path) is _str:
                full = _normalise_(path, _getcwd())
                writing = (_type(flags) is _int and flags & 0o3 != 0) or (
                    _type(mode) is _str and ("w" in mode or "a" in mode or "x" in mode
                                             or "+" in mode))
                if writing:
                    if not _inside_(full, write_roots) or full.endswith((".so", ".pyd")):
                        why = f"writing {full}"
                elif not (_inside_(full, read_roots) or full in proc_files):
                    why = f"reading {full}"
            elif _type(path) is not _int:
                why = "opening an unusual path"
        elif event in ("os.listdir", "os.scandir"):
            path = args[0] if args else "."
            if _type(path) is _bytes:
                path = path.decode("utf-8", "surrogateescape")
            if _type(path) is _str:
                if not _inside_(_normalise_(path, _getcwd()), read_roots):
                    why = f"listing {path[:200]}"
            elif _type(path) is not _int and path is not None:
                why = "listing an unusual path"
        elif event in one_path or event == "os.rename":
            for path in (args[:2] if event == "os.rename" else args[:1]):
                if _type(path) is _bytes:
                    path = path.decode("utf-8", "surrogateescape")
                if _type(path) is _str:
                    if not _inside_(_normalise_(path, _getcwd()), (scratch,)):
                        why = f"{event} on {path[:200]}"
                elif _type(path) is not _int:
                    why = f"{event} on an unusual path"
        elif event == "os.kill":
            if not (_len(args) >= 1 and _type(args[0]) is _int and args[0] == pid):
                why = "a signal to another process"
        elif event == "import":
            name = args[0] if args else None
            filename = args[1] if _len(args) > 1 else None
            if _type(name) is _str and name.split(".")[0] in refused_modules:
                why = f"importing {name} again"
            elif (_type(filename) is _str and _inside_(_normalise_(filename, "/"), (scratch,))
                  and not filename.endswith(".py")):
                why = f"loading native code from {filename}"
        elif event == "object.__setattr__":
            # only the reference's code is guarded: libraries swap code of their own
            # (networkx's argmap compiles its wrappers on first call)
            if (_len(args) >= 3 and _type(args[0]) is _FunctionType and _type(args[1]) is _str
                    and args[1] == "__code__"
                    and (args[2] in everything or args[0].__code__ in everything)):
                why = "changing the __code__ of minirad's reference"
        elif event == "function.__new__":
            if args and args[0] in everything:
                why = "a new function made from minirad's reference code"
        elif event == "sqlite3.connect":
            path = args[0] if args else ":memory:"
            if (_type(path) is _str and path != ":memory:"
                    and not _inside_(_normalise_(path, _getcwd()), (scratch,))):
                why = f"a database at {path[:200]}"
        if why:
            _audit("minirad.denied", why)
            raise _Permission(f"the grader's kernel does not allow this: {why}")

    # installed as _signal.signal: it shares no variable with the hooks (its own audit)
    def make_no_handler(ask):
        def no_handler(signalnum, handler):
            box = []
            ask("minirad.signal", signalnum, handler, box)
            if not box:
                raise PermissionError("the grader's kernel does not allow signal handlers of "
                                      "your own")
            return box[0]
        return no_handler

    sys.addaudithook(policy)
    sys.addaudithook(watch)
    _posixsubprocess.fork_exec = _refuse_fork_exec
    _signal.signal = make_no_handler(sys.audit)


def _references(lab: int) -> dict:
    """``{exercise number: {code: name}}`` for the lab's exercises."""
    from . import LABS  # noqa: F401  (declares every exercise)
    from .exercise import exercises_of_lab
    from .reference_guard import reference_codes

    return {spec.number: {code: name for name, code in reference_codes(spec.reference).values()}
            for spec in exercises_of_lab(lab)}


def _limit(config: dict) -> None:
    """The kernel's limits, set before anything else runs (only lowered: a process may not
    raise them again)."""
    import resource

    limits = config["limits"]
    chosen = [(resource.RLIMIT_AS, limits["memory"]), (resource.RLIMIT_CPU, limits["cpu"]),
              (resource.RLIMIT_FSIZE, limits["file_size"]),
              (resource.RLIMIT_NOFILE, limits["open_files"]), (resource.RLIMIT_CORE, 0)]
    if config.get("own_user"):   # the count is per user: meaningful for a user of its own
        chosen.append((resource.RLIMIT_NPROC, limits["processes"]))
    for which, value in chosen:
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # past the file size: an error, not death


def main() -> None:
    """Read the sandbox's configuration, install the watch, start ipykernel."""
    with open(os.environ.pop("MINIRAD_GRADING_CONFIG"), encoding="utf-8") as f:
        config = json.load(f)
    _limit(config)
    with open(config["key"], "rb") as f:
        key = f.read()
    os.unlink(config["key"])
    import matplotlib  # noqa: F401  (imported while files may still be read freely)
    import numpy  # noqa: F401

    from . import checking, reference_guard

    references = _references(int(config["lab"]))
    reference_guard.GUARDED_ELSEWHERE = True   # the watch replaces the notebook's settrace guard
    install(config["scratch"], tuple(config["read_roots"]), int(config["channel"]), key,
            references, handlers=(checking.alarm_handler(),))
    del key, config
    from ipykernel.kernelapp import launch_new_instance

    launch_new_instance()


if __name__ == "__main__":
    main()
