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

    An ``OSError`` names ``path``, never the temporary file (which the user
    did not ask for and which is gone by then).

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "note.txt")
    >>> write_atomically(path, lambda f: f.write(b"hello"))
    >>> open(path).read()
    'hello'
    >>> write_atomically(os.path.dirname(path), lambda f: f.write(b"hello"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IsADirectoryError: [Errno 21] Is a directory: '/...'
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"cannot save {path}: the folder {folder} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".minirad-", suffix=os.path.splitext(path)[1],
                                   dir=folder)
        with os.fdopen(fd, "wb") as f:
            write(f)
        # mkstemp makes the file private (0o600); what we save is an ordinary file
        os.chmod(tmp, _new_file_mode())
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError) and error.errno is not None and tmp in (
                error.filename, error.filename2):
            raise type(error)(error.errno, error.strerror, path) from error
        raise
