"""The examples in docs/ run (README.md's are run by pytest's doctest glob)."""

import doctest

from oracles import ROOT


def test_architecture_examples_run():
    result = doctest.testfile(str(ROOT / "docs" / "architecture.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0


def test_home_page_example_runs():
    result = doctest.testfile(str(ROOT / "docs" / "index.md"), module_relative=False)
    assert result.attempted >= 4 and result.failed == 0


def test_higher_derivatives_page_runs():
    result = doctest.testfile(str(ROOT / "docs" / "higher.md"), module_relative=False)
    assert result.attempted >= 10 and result.failed == 0
