"""Issue 39: what reading a saved graph costs is bounded before the work (max_bytes, the
command's --max-bytes), and only regular files are read: a gigabyte of NUL bytes, an
archive of a million tiny arrays, a pipe or a link to /dev/zero are refused at once."""

import json
import os
import threading
import tracemalloc
import zipfile

import numpy as np
import pytest
from oracles import fake_zip64, not_a_regular_file
from test_files import read_archive, write_archive

from minirad import examples, load_graph, save_graph, trace, vjp
from minirad.cli import main
from minirad.graph.files import ARRAY_COST, INDEX_COST, MAX_BYTES, TEXT_COST


def peak_of(call):
    """``call()``'s result and the most memory Python allocated during it."""
    tracemalloc.start()
    try:
        return call(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def peak_bytes(call) -> tuple[int, str]:
    """The most memory Python allocated during ``call()``, which must raise a ValueError,
    and its message."""
    def refused():
        with pytest.raises(ValueError) as refusal:
            call()
        return str(refusal.value)

    message, peak = peak_of(refused)
    return peak, message


def test_a_gigabyte_of_nul_bytes_is_refused_having_read_64_bytes(tmp_path):
    """It was read whole and decoded (2.1 GB) before json said no. A sparse file: no disk."""
    path = tmp_path / "nul.json"
    with open(path, "wb") as f:
        f.truncate(2**30)
    peak, message = peak_bytes(lambda: load_graph(path))
    assert peak < 2**20 and "neither JSON text (UTF-8) nor an .npz archive" in message


def test_json_text_counts_what_parsing_it_takes(tmp_path):
    """A text file counts TEXT_COST times its size: refused one byte under, read at it (the
    oracle: the graph saved)."""
    g = examples.figure1()
    path = save_graph(g, tmp_path / "g.json")
    cost = TEXT_COST * os.path.getsize(path)
    with pytest.raises(ValueError, match=f"more than max_bytes={cost - 1:,}; pass "
                                         f"max_bytes={cost} to read it"):
        load_graph(path, max_bytes=cost - 1)
    assert load_graph(path, max_bytes=cost).same_as(g)
    big = tmp_path / "big.json"       # a JSON object of a gigabyte: refused by its size
    with open(big, "wb") as f:
        f.write(b"{")
        f.truncate(2**30)
    peak, message = peak_bytes(lambda: load_graph(big))
    assert peak < 2**20 and f"pass max_bytes={TEXT_COST * 2**30}" in message


def test_an_archive_counts_each_array_and_its_manifest(tmp_path):
    """Each member at least ARRAY_COST, the manifest TEXT_COST times: the oracle is this sum
    over the zip directory, computed here; one byte under it is refused, it is read."""
    g = examples.figure3()
    path = save_graph(g, tmp_path / "g.npz")
    with zipfile.ZipFile(path) as z:
        sizes = {info.filename: info.file_size for info in z.infolist()}
    cost = sum(max(size, ARRAY_COST) for size in sizes.values()) + \
        (TEXT_COST - 1) * sizes["manifest.npy"]
    with pytest.raises(ValueError, match=f"pass max_bytes={cost} to read it"):
        load_graph(path, max_bytes=cost - 1)
    assert load_graph(path, max_bytes=cost).same_as(g)
    assert cost < MAX_BYTES


def test_an_archive_of_a_million_arrays_is_refused_from_its_end_records(tmp_path):
    """A 755 MB archive of 10^6 array vertices took 149 s and 5.6 GB to load. Its end
    records say how many arrays it lists: refused before zipfile reads its directory."""
    path = fake_zip64(tmp_path / "million.npz", 2 * 10**6)
    peak, message = peak_bytes(lambda: load_graph(path))
    assert peak < 2**20
    assert "lists about 2,000,000 arrays" in message
    assert f"pass max_bytes={2 * 10**6 * ARRAY_COST} or more" in message


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/urandom", "fifo", "folder"])
def test_only_a_regular_file_is_read(tmp_path, target, capsys):
    """A pipe blocked the loader, a link to /dev/zero grew without bound. The opener
    thread below would hang on a pipe if the loader opened it: it must not."""
    path = tmp_path / "g.json"
    not_a_regular_file(path, target)
    outcome = []
    worker = threading.Thread(target=lambda: outcome.append(_refusal(path)), daemon=True)
    worker.start()
    worker.join(10)
    assert outcome and outcome[0] is not None, "the loader blocked or read the file"
    assert ("not a regular file" in outcome[0]) or ("is a folder" in outcome[0])
    assert main(["wengert", str(path)]) == 1
    assert "is not a file" in capsys.readouterr().err


def _refusal(path):
    try:
        load_graph(path)
    except ValueError as error:
        return str(error)
    return None


def test_the_command_names_its_flag_for_more(tmp_path, capsys):
    g = examples.figure1()
    path = str(save_graph(g, tmp_path / "g.json"))
    cost = TEXT_COST * os.path.getsize(path)
    assert main(["jacobian", path, "--max-bytes", str(cost - 1)]) == 1
    assert f"pass --max-bytes {cost} to read it" in capsys.readouterr().err
    assert main(["jacobian", path, "--max-bytes", str(cost)]) == 0
    assert main(["wengert", path, "--max-bytes", "0"]) == 1
    assert "--max-bytes must be a positive number" in capsys.readouterr().err
    json.loads(open(path).read())    # the file itself was left as it was
    np.testing.assert_allclose(load_graph(path).labels, g.labels)


@pytest.mark.parametrize("dtype", [np.int64, np.int8])
def test_positions_count_what_their_operator_takes_to_build(tmp_path, dtype):
    """An index's positions were counted at their bytes on file, but its operator keeps
    int64 copies and sorts them: int8 positions cost 33 times their file (a hostile file
    under the default limit, about 30 GB). Each entry now counts INDEX_COST bytes. The
    oracle: the cost summed here from the zip directory; one byte under it is refused, at
    it the graph loads, and the memory tracemalloc sees stays within it."""
    n = 500_000
    idx = np.arange(n) % 3
    g = trace(lambda x: x[idx].sum(), np.ones(3))
    doc, arrays = read_archive(save_graph(g, tmp_path / "good.npz"))
    index = next(e for e in doc["edges"] if e["operator"]["kind"] == "index")["operator"]
    arrays[index["arrays"]["positions"]] = idx.astype(dtype)
    path = write_archive(tmp_path / "positions.npz", doc, arrays)
    with zipfile.ZipFile(path) as z:
        sizes = {info.filename: info.file_size for info in z.infolist()}
    cost = sum(max(size, ARRAY_COST) for size in sizes.values()) + \
        (TEXT_COST - 1) * sizes["manifest.npy"] + (INDEX_COST - np.dtype(dtype).itemsize) * n
    peak, message = peak_bytes(lambda: load_graph(path, max_bytes=cost - 1))
    assert f"({n:,} {np.dtype(dtype)} entries)" in message
    assert f"pass max_bytes={cost} or more to read it" in message
    on_file = sum(sizes.values())
    assert peak < on_file + 2**22    # the arrays read, in pieces of a MiB, and no more
    loaded, peak = peak_of(lambda: load_graph(path, max_bytes=cost))
    assert on_file + 2**22 < peak <= cost    # building took more than reading: counted
    np.testing.assert_array_equal(loaded.values[-2], g.values[-2])    # x[idx], read back


def test_loading_large_arrays_takes_about_what_is_counted(tmp_path):
    """Each member was read whole into bytes, copied into an array, and copied again by the
    LCG (its values read-only): 1.7 times the counted work at the peak. The oracle: the
    cost summed from the zip directory, and tracemalloc's peak while loading."""
    rng = np.random.default_rng(0)
    g = trace(lambda W, x: np.tanh(W @ x).sum(), rng.normal(size=(1000, 1000)),
              rng.normal(size=(1000, 20)))
    path = save_graph(g, tmp_path / "big.npz")
    with zipfile.ZipFile(path) as z:
        sizes = {info.filename: info.file_size for info in z.infolist()}
    cost = sum(max(size, ARRAY_COST) for size in sizes.values()) + \
        (TEXT_COST - 1) * sizes["manifest.npy"]
    loaded, peak = peak_of(lambda: load_graph(path, max_bytes=cost))
    assert peak <= cost + 2**22    # and a few MiB read at a time
    for a, b in zip(vjp(loaded, [1.0]), vjp(g, [1.0])):   # the blocks apply as saved
        np.testing.assert_array_equal(a, b)
