"""Atomic file writes: a failed save never leaves a half-written file behind."""

import os
import tempfile


def _new_file_mode() -> int:
    """The mode ``open()`` would give a new file: 0o666 less the umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path, write) -> None:
    """Call ``write(f)`` on a temporary binary file beside ``path``, then rename it.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "note.txt")
    >>> write_atomically(path, lambda f: f.write(b"hello"))
    >>> open(path).read()
    'hello'
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save {path}: the folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=".minirad-", suffix=os.path.splitext(path)[1], dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        # mkstemp makes the file private (0o600); what we save is an ordinary file
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
