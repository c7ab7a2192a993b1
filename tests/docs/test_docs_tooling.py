"""The documentation site's own tooling (docs/_ext/), without building the site:
repository files included by reference with their links mapped onto the site,
bars in docstrings escaped for reST, the API pages listing what the package
holds, the labs in their order with their explorable pages embedded."""

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
    explore_pages = importlib.import_module("explore_pages")
    lab_pages = importlib.import_module("lab_pages")
finally:
    sys.path.remove(str(ROOT / "docs" / "_ext"))


@pytest.fixture
def repository(tmp_path):
    """A small repository: docs/run.md includes figures/run/README.md, which links to
    the study page, a table beside it, its picture and bench/; a lab in tutorials/."""
    (tmp_path / "docs" / "labs").mkdir(parents=True)
    (tmp_path / "docs" / "instructors").mkdir()
    (tmp_path / "figures" / "run" / "inner").mkdir(parents=True)
    (tmp_path / "bench").mkdir()
    (tmp_path / "tutorials").mkdir()
    (tmp_path / "bench" / "README.md").write_text("# bench\n")
    (tmp_path / "tutorials" / "lab1_x.py").write_text("# %% [markdown]\n# # Lab 1\n")
    (tmp_path / "docs" / "labs" / "lab1_x.ipynb").write_text("{}")
    (tmp_path / "figures" / "run" / "README.md").write_text(
        "# The run\n\nSee [the study](../../docs/study.md), [the table](table.md), "
        "[lab 1](../../tutorials/lab1_x.py) and [below](#the-run).\n\n![loss](loss.png)\n")
    (tmp_path / "figures" / "run" / "table.md").write_text("# Table\n")
    (tmp_path / "figures" / "run" / "loss.png").write_bytes(b"png")
    (tmp_path / "figures" / "run" / "inner" / "README.md").write_text("# Inner\n")
    (tmp_path / "docs" / "study.md").write_text("# Study\n")
    (tmp_path / "docs" / "instructors" / "guide.md").write_text("# Guide\n")
    (tmp_path / "docs" / "run.md").write_text("<!-- include: ../figures/run/README.md -->\n")
    (tmp_path / "docs" / "titled.md").write_text(
        "# Titled\n\n<!-- include: ../figures/run/inner/README.md -->\n")
    return tmp_path


def _site(root, **options):
    return repo_pages.Site(root, root / "docs", forms={"tutorials": ("labs", ".ipynb")},
                           **options)


def test_an_included_file_shows_on_its_page_with_its_links_mapped(repository):
    site = _site(repository)
    page = repository / "docs" / "run.md"
    text, files = site.include(page, page.read_text())
    assert files == [(repository / "figures" / "run" / "README.md").resolve()]
    assert text == (
        "# The run\n\nSee [the study](study.md), the table, [lab 1](labs/lab1_x.ipynb) and "
        "[below](#the-run).\n\n![loss](../figures/run/loss.png)\n\n")


def test_under_a_title_of_its_own_the_included_headings_move_down(repository):
    site = _site(repository)
    page = repository / "docs" / "titled.md"
    assert site.include(page, page.read_text())[0] == "# Titled\n\n## Inner\n\n"


def test_links_to_an_included_file_point_at_the_page_that_includes_it(repository):
    site = _site(repository)
    page = repository / "docs" / "study.md"
    text = ("The run is in [figures/run/](../figures/run/), its loss in "
            "![loss](../figures/run/loss.png), its heading [here](../figures/run/README.md#top).")
    assert site.rewrite_links(page, text) == (
        "The run is in [figures/run/](run.md), its loss in "
        "![loss](../figures/run/loss.png), its heading [here](run.md#top).")


def test_links_the_site_cannot_carry_keep_their_text_and_others_stay(repository):
    site = _site(repository)
    page = repository / "docs" / "study.md"
    text = ("Speed: [`bench/README.md`](../bench/README.md); web: [x](https://example.org/a.md); "
            "anchor: [y](#here); code: `labels[0](x)`; broken: [z](missing.md).")
    assert site.rewrite_links(page, text) == (
        "Speed: `bench/README.md`; web: [x](https://example.org/a.md); "
        "anchor: [y](#here); code: `labels[0](x)`; broken: [z](missing.md).")


def test_a_section_left_out_is_not_linked_to(repository):
    page = repository / "docs" / "study.md"
    text = "The [guide](instructors/guide.md)."
    assert _site(repository).rewrite_links(page, text) == text
    assert _site(repository, left_out=["instructors"]).rewrite_links(page, text) == \
        "The guide."


def test_a_missing_included_file_is_an_error(repository):
    page = repository / "docs" / "gone.md"
    page.write_text("<!-- include: ../figures/gone.md -->\n")
    with pytest.raises(FileNotFoundError, match="gone.md"):
        _site(repository).include(page, page.read_text())


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


def test_the_api_index_groups_every_public_name_once_with_its_summary(tmp_path):
    import inspect

    import minirad

    api_pages.write_pages("minirad", tmp_path)
    index = (tmp_path / api_pages.INDEX).read_text()
    grouped = api_pages.groups(minirad)
    # every name of minirad.__all__ under exactly one heading, the headings those of the parts
    listed = [name for names in grouped.values() for name in names]
    assert sorted(listed) == sorted(minirad.__all__) and len(set(listed)) == len(listed)
    assert list(grouped)[:3] == ["Graphs: trace, build, save and load",
                                 "Exact methods: every way to the Jacobian",
                                 "Checking a derivative"]
    assert "jacobian" in grouped["Exact methods: every way to the Jacobian"]
    assert "render" in grouped["Pictures"] and "More" not in grouped
    for heading, names in grouped.items():
        assert f"{heading}\n{'-' * len(heading)}\n" in index
        for name in names:
            # autosummary shows the first line of the docstring: each has one
            obj = getattr(minirad, name)
            entry = f"~{obj.__name__.removeprefix('minirad.')}" if inspect.ismodule(obj) \
                else name
            assert f"   {entry}\n" in index
            assert api_pages.summary(getattr(minirad, name)).endswith(".")
    # the parts, each with its one-line summary
    for part in api_pages.subpackages(minirad):
        summary = api_pages.summary(__import__(part, fromlist=["x"]))
        assert summary.endswith(".") and f":mod:`{part}`\n     - {summary}\n" in index


def test_no_module_of_the_library_lists_a_helper_as_public():
    """automodule documents a module's __all__: every module of the library's parts has
    one, but the tables of numpy functions (tracing.ops), whose names are all public."""
    import importlib
    import pkgutil

    without = []
    for part in api_pages.PARTS:
        package = importlib.import_module(f"minirad.{part}")
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"minirad.{part}.{info.name}")
            if not info.name.startswith("_") and not hasattr(module, "__all__"):
                without.append(module.__name__)
    assert without == ["minirad.tracing.ops"]


def test_labs_sort_in_their_order_and_the_toctree_keeps_it(tmp_path):
    names = ["lab10_a", "lab1_b", "lab12_c", "lab2_d", "lab11_e", "lab9_f"]
    paths = [tmp_path / f"{name}.ipynb" for name in names]
    ordered = sorted(paths, key=lambda p: lab_pages.natural_key(p.stem))
    assert [p.stem for p in ordered] == ["lab1_b", "lab2_d", "lab9_f", "lab10_a", "lab11_e",
                                         "lab12_c"]
    toctree = lab_pages.toctree("handouts", ordered)
    assert toctree.index("handouts/lab9_f") < toctree.index("handouts/lab10_a")
    assert doctest.testmod(lab_pages).failed == 0


def test_a_lab_that_names_an_explorable_page_gets_it_embedded_on_its_tab():
    notebook = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source":
         "Make it with `minirad explore minirad.examples:figure1 -o figure1.html` "
         "and open it (Sample panel)."},
        {"cell_type": "code", "metadata": {}, "source": "minirad explore  # not Markdown",
         "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "metadata": {}, "source": ["No page here."]}]}
    specs = explore_pages.embed(notebook, to_site="../../")
    assert specs == {"minirad.examples:figure1"}
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    assert kinds == ["markdown", "markdown", "code", "markdown"]
    frame = notebook["cells"][1]["source"]
    assert 'src="../../explore/figure1.html#sample"' in frame and frame.startswith("<iframe")
    assert doctest.testmod(explore_pages).failed == 0
