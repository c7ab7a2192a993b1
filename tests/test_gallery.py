"""The figure gallery: every file is written and valid, rebuilds are byte for byte
the same, the committed figures/README.md names every file, and the build
works without the dot program."""

import importlib
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from minirad import gallery
from minirad.examples import chain_graph

R = importlib.import_module("minirad.draw.render")  # the module; minirad.render is the function

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
README = Path(__file__).resolve().parents[1] / "figures" / "README.md"

pytestmark = [pytest.mark.drawing,  # every test here runs again without dot (.ci/run)
              # the gallery is built once per run: one worker runs this module
              # (pyproject's --dist loadgroup) and the fixture is the session's
              pytest.mark.xdist_group("gallery")]

needs_dot = pytest.mark.skipif(not R.has_dot(), reason="the graphviz dot program is not "
                                                       "installed (CI installs it)")


def _entry(name):
    return next(entry for entry in gallery.FIGURES if entry.name == name)


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Build the whole gallery once: (folder, paths written, progress messages)."""
    folder = tmp_path_factory.mktemp("figures") / "nested"  # created by build_figures
    messages = []
    written = gallery.build_figures(folder, progress=messages.append)
    return folder, written, messages


@pytest.mark.slow
def test_every_expected_file_is_written(built):
    folder, written, _ = built
    names = [os.path.basename(path) for path in written]
    assert names == gallery.figure_files()
    assert len(set(names)) == len(names)
    assert all(os.path.dirname(path) == str(folder) for path in written)
    assert sorted(os.listdir(folder)) == sorted(names)  # no temporary files left behind
    required = {"figure1_lcg.png", "figure1_lcg.svg", "figure1_paths.png", "figure1_sample.png",
                "figure1_elimination.png", "figure1_elimination_step1.png",
                "interleaved_heatmaps.png", "convergence.png", "variance_vs_depth.png",
                "variance_vs_k.png", "elimination_costs.png"}
    assert required <= set(names)


@pytest.mark.slow
def test_files_are_valid_images(built):
    folder, written, _ = built
    for path in written:
        data = Path(path).read_bytes()
        assert len(data) > 1000, path
        if path.endswith(".png"):
            assert data[:8] == PNG_MAGIC, path
        else:
            assert path.endswith(".svg")
            assert ET.fromstring(data).tag.endswith("svg"), path


@pytest.mark.slow
def test_files_are_readable_by_others(built):
    """Saved through a private temporary file, the pictures still get the usual mode."""
    umask = os.umask(0)
    os.umask(umask)
    for path in built[1]:
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask, path


@pytest.mark.slow
def test_progress_once_per_figure(built):
    _, written, messages = built
    assert len(messages) == len(gallery.FIGURES)
    for entry, message in zip(gallery.FIGURES, messages):
        assert entry.name in message
        assert all(name in message for name in entry.files())


@pytest.mark.slow
@pytest.mark.parametrize("name, files", [
    ("figure1_lcg", ["figure1_lcg.png", "figure1_lcg.svg"]),          # graphviz (or fallback)
    ("figure1_sample", ["figure1_sample.png"]),                        # graphviz (or fallback)
    ("interleaved_heatmaps", ["interleaved_heatmaps.png"]),            # matplotlib, sampled
    ("variance_vs_depth", ["variance_vs_depth.png"]),                  # matplotlib
])
def test_rebuilding_gives_the_same_bytes(built, tmp_path, name, files):
    folder = built[0]
    _entry(name).make(str(tmp_path))
    for file in files:
        assert (tmp_path / file).read_bytes() == (folder / file).read_bytes(), file


def test_readme_names_every_figure():
    text = README.read_text(encoding="utf-8")
    missing = [name for name in gallery.figure_files() if name not in text]
    assert not missing, f"figures/README.md does not mention {missing}"
    assert "minirad figures" in text
    for seed in set(gallery.SEEDS.values()):
        assert re.search(rf"\| {seed} \|", text), f"seed {seed} is not in the README's table"


def test_committed_figures_are_the_gallery():
    """figures/ holds what the build writes (if it has been built at all)."""
    folder = README.parent
    pictures = {p.name for p in folder.iterdir() if p.suffix in (".png", ".svg")}
    if pictures:
        assert pictures == set(gallery.figure_files())


def test_layered_multi_is_the_figure_2b_family_with_several_ends():
    g = gallery.layered_multi(4, 4, 2, 3, rng=gallery.SEEDS["layered_graph"])
    assert (len(g.inputs), len(g.intermediates), len(g.outputs)) == (4, 8, 3)
    assert g.n_edges == 4 * 4 + 4 * 4 + 4 * 3
    assert all(len(g.successors(v)) == 4 for v in ("x1", "a3"))
    assert gallery.layered_multi(rng=5).partials.tolist() == \
        gallery.layered_multi(rng=5).partials.tolist()


def test_layered_multi_is_a_chain_graph_at_any_depth():
    """The scalar graph of its chain of layers; past 24 layers the letters would
    reach y, the outputs' name, so deep layers are named h<layer>_<i> instead."""
    g = gallery.layered_multi(2, 3, 1, 2, rng=0)
    chain = [g.partials[:6].reshape(3, 2), g.partials[6:].reshape(2, 3)]  # grouped by target
    assert g.same_as(chain_graph(chain))
    deep = gallery.layered_multi(2, 2, 25, 2, rng=0)
    assert len(set(deep.names)) == deep.n_vertices == 2 + 2 * 25 + 2
    assert [deep.name(v) for v in deep.outputs] == ["y1", "y2"]
    assert deep.intermediates and all(deep.name(v).startswith("h")
                                      for v in deep.intermediates)


@pytest.mark.slow
def test_build_without_dot(monkeypatch, tmp_path):
    """The graph drawings fall back to matplotlib, still deterministic."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(R, "_warned_missing_dot", False)
    assert not R.has_dot()
    for run in ("a", "b"):
        (tmp_path / run).mkdir()
        with pytest.warns(R.MissingDotWarning):
            for name in ("figure1_lcg", "figure1_elimination"):
                _entry(name).make(str(tmp_path / run))
        monkeypatch.setattr(R, "_warned_missing_dot", False)
    for file in ("figure1_lcg.png", "figure1_lcg.svg", "figure1_elimination.png",
                 "figure1_elimination_step1.png"):
        data = (tmp_path / "a" / file).read_bytes()
        assert data == (tmp_path / "b" / file).read_bytes(), file
        if file.endswith(".png"):
            assert data[:8] == PNG_MAGIC
        else:
            assert ET.fromstring(data).tag.endswith("svg")


@pytest.mark.slow
@needs_dot
def test_graph_drawings_use_dot_when_present(built):
    svg = (built[0] / "figure1_lcg.svg").read_text(encoding="utf-8")
    assert "Generated by graphviz" in svg


def test_a_figure_whose_dependency_is_missing_is_skipped(monkeypatch, tmp_path):
    """Without its optional dependency a figure is left out, and the message says
    which extra brings it; the figures that need nothing are still drawn."""
    drawn = gallery.Entry("drawn", lambda: ["drawn.png"], _entry("figure1_sample").make, "one")
    missing = gallery.Entry("missing", lambda: ["missing.png"], lambda folder: 1 / 0, "two",
                            needs=("no_module_of_this_name", "imaginary"))
    monkeypatch.setattr(gallery, "FIGURES", (missing, drawn))
    messages = []
    written = gallery.build_figures(tmp_path, progress=messages.append)
    assert [os.path.basename(path) for path in written] == ["figure1_sample.png"]
    assert messages[0] == ("[1/2] missing: skipped, it needs no_module_of_this_name "
                           "(pip install 'minirad[imaginary]')")
    assert messages[1].startswith("[2/2] drawn:")
