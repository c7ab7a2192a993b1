"""The examples in docs/ run (README.md's are run by pytest's doctest glob), and the
README stays a front page: short, with the two commands that set minirad up."""

import doctest
import re

import pytest
from oracles import ROOT

PAGES = sorted(page for page in (ROOT / "docs").rglob("*.md")
               if "_build" not in page.parts and ">>> " in page.read_text(encoding="utf-8"))


def test_the_pages_with_examples_are_found():
    names = {page.relative_to(ROOT / "docs").as_posix() for page in PAGES}
    assert {"index.md", "getting_started.md", "architecture.md", "concepts/lcg.md",
            "concepts/higher.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_the_examples_of_a_page_run(page):
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0


def test_the_readme_fits_on_two_screens_with_its_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    # the picture comes first, then the code
    assert readme.index("![") < readme.index("```python")
    # exactly one install-and-run command and one test command, each on a line of its own
    commands = [line.strip() for line in readme.splitlines() if line.startswith("    pip ")]
    assert commands == ['pip install -e . && minirad demo',
                        'pip install -e ".[dev]" && pytest']
    # the test command is the one CI runs
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r'pip install [^\n]*-e "\.\[dev\]"', ci) and '-m pytest\n' in ci


def test_every_page_the_readme_links_to_exists():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)", readme)
    assert len(targets) >= 15
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, missing
