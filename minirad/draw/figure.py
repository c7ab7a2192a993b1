"""The matplotlib Figure minirad returns: it shows itself as an image in Jupyter.

A kernel shows a cell's value through the value's ``_repr_*_`` methods.  A
plain matplotlib Figure has none: it is drawn only once pyplot's inline
backend has registered a formatter for it, which a fresh kernel does not do
until ``%matplotlib inline`` runs or pyplot is imported.  minirad builds its
figures without pyplot (nothing global is touched), so every Figure it
returns is a :class:`Figure`, which carries its own PNG and shows inline in
any kernel.  Everything else about it is matplotlib's.

>>> figure = Figure(figsize=(2, 1))
>>> png(figure)[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure as _MatplotlibFigure

__all__ = ["Figure", "png"]


def png(figure) -> bytes:
    """A matplotlib Figure as PNG bytes, trimmed to what is drawn."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


class Figure(_MatplotlibFigure):
    """A matplotlib Figure that shows itself as an image in Jupyter."""

    def _repr_png_(self) -> bytes:
        return png(self)
