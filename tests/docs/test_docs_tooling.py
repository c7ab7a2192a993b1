"""The documentation site's own tooling (docs/_ext/), without building the site:
links written for the repository mapped onto the site, bars in docstrings
escaped for reST, the API pages listing what the package holds."""

import doctest
import importlib
import sys

import pytest
from oracles import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))  # where docs/conf.py finds them too
try:
    api_pages = importlib.import_module("api_pages")
    docstrings = importlib.import_module("docstrings")
    repo_pages = importlib.import_module("repo_pages")
finally:
    sys.path.remove(str(ROOT / "docs" / "_ext"))


@pytest.fixture
def repository(tmp_path):
    """A small repository: docs/study.md links into figures/run/ and to bench/."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "figures" / "run" / "inner").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "README.md").write_text("# bench\n")
    (tmp_path / "figures" / "run" / "README.md").write_text(
        "# The run\n\nSee [the study](../../docs/study.md) and [the table](table.md).\n")
    (tmp_path / "figures" / "run" / "table.md").write_text("# Table\n")
    (tmp_path / "figures" / "run" / "loss.png").write_bytes(b"png")
    (tmp_path / "figures" / "run" / "inner" / "README.md").write_text("# Inner\n")
    (tmp_path / "docs" / "study.md").write_text("# Study\n")
    site = repo_pages.Site(tmp_path, tmp_path / "docs", ["figures/run"])
    site.copy()
    return tmp_path, site


def test_links_into_a_copied_folder_point_at_the_copy(repository):
    root, site = repository
    page = root / "docs" / "study.md"
    text = ("The run is in [figures/run/](../figures/run/), its loss in "
            "![loss](../figures/run/loss.png), its inner part in "
            "[inner](../figures/run/inner/README.md#top).")
    assert site.rewrite_links(page, text) == (
        "The run is in [figures/run/](runs/run/README.md), its loss in "
        "![loss](runs/run/loss.png), its inner part in [inner](runs/run/inner/README.md#top).")


def test_links_from_a_copy_back_to_the_site_and_within_the_copy(repository):
    root, site = repository
    copy = root / "docs" / "runs" / "run" / "README.md"
    assert site.rewrite_links(copy, copy.read_text()) == (
        "# The run\n\nSee [the study](../../study.md) and [the table](table.md)."
        "\n\n\n## The pictures\n\n### `loss.png`\n\n![loss.png](loss.png)\n\n")


def test_links_the_site_cannot_carry_keep_their_text_and_others_stay(repository):
    root, site = repository
    page = root / "docs" / "study.md"
    text = ("Speed: [`bench/README.md`](../bench/README.md); web: [x](https://example.org/a.md); "
            "anchor: [y](#here); code: `labels[0](x)`; broken: [z](missing.md).")
    assert site.rewrite_links(page, text) == (
        "Speed: `bench/README.md`; web: [x](https://example.org/a.md); "
        "anchor: [y](#here); code: `labels[0](x)`; broken: [z](missing.md).")


def test_pages_beside_a_readme_are_reached_from_it(repository):
    root, _ = repository
    assert (root / "docs" / "runs" / "run" / "table.md").read_text().startswith(
        "---\norphan: true\n---\n")
    assert (root / "docs" / "runs" / "run" / "inner" / "README.md").read_text() == "# Inner\n"


def test_bars_are_escaped_in_prose_only():
    assert docstrings.escape_bars([
        "cost |pred| x |succ|, as ``|x|`` and :math:`|y|` say",
        "::",
        "",
        "    |literal|",
        "back to |prose|",
        ">>> abs(-1)  # |x|",
        "1",
    ]) == [
        r"cost \|pred\| x \|succ\|, as ``|x|`` and :math:`|y|` say",
        "::",
        "",
        "    |literal|",
        r"back to \|prose\|",
        ">>> abs(-1)  # |x|",
        "1",
    ]
    assert doctest.testmod(docstrings).failed == 0


def test_api_pages_list_every_module_on_disk(tmp_path):
    parts = api_pages.write_pages("minirad", tmp_path)
    # the oracle: the package's folders (at any depth: studies/nn/) and files
    folders = sorted(".".join(p.parent.relative_to(ROOT / "minirad").parts)
                     for p in (ROOT / "minirad").glob("*/**/__init__.py"))
    assert "studies.nn" in folders
    assert parts == ["minirad"] + [f"minirad.{name}" for name in folders]
    for name in folders:
        page = (tmp_path / f"minirad.{name}.rst").read_text()
        for module in (ROOT / "minirad" / name.replace(".", "/")).glob("*.py"):
            listed = f"   {module.stem}\n" in page
            assert listed == (not module.stem.startswith("_")), (name, module.stem)
    studies = (tmp_path / "minirad.studies.rst").read_text()
    assert "* :mod:`minirad.studies.nn`" in studies and "   nn\n" not in studies
    top = (tmp_path / "minirad.rst").read_text()
    assert "   trace\n" in top and "   examples\n" in top
