"""Shared test setup for every folder of tests/.

The tests mirror the package (tests/graph/ tests minirad/graph/, and so on); the
helpers that tests of several folders use (oracles.py, browser.py) live here, at the
top, and are imported by their bare names (``from oracles import dense_jacobian``).
Test folders are not packages, so each test file's basename must be unique across
tests/ (pytest says "import file mismatch" otherwise); a folder's own fixtures go in
that folder's conftest.py.
"""

import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")  # tests never open windows; set here, never in the library

# pytest's default import mode puts this folder on sys.path when it imports this file;
# saying so here keeps ``from oracles import ...`` working under any import mode
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def pytest_collection_modifyitems(items):
    """Every doctest is a "drawing" test too: the docstrings draw, and .ci/run reruns
    the drawing tests without the dot program (the docs must hold on such a machine)."""
    for item in items:
        if isinstance(item, pytest.DoctestItem):
            item.add_marker(pytest.mark.drawing)
