"""Shared test setup."""

import matplotlib
import pytest

matplotlib.use("Agg")  # tests never open windows; set here, never in the library


def pytest_collection_modifyitems(items):
    """Every doctest is a "drawing" test too: the docstrings draw, and .ci/run reruns
    the drawing tests without the dot program (the docs must hold on such a machine)."""
    for item in items:
        if isinstance(item, pytest.DoctestItem):
            item.add_marker(pytest.mark.drawing)
