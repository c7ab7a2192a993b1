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

import numpy as np
from matplotlib.figure import Figure as _MatplotlibFigure

__all__ = ["Figure", "place_labels", "png"]

#: where a point's label may go, in points from the point (tried in this order)
_SPOTS = ((4, 3), (4, -11), (-4, 3), (-4, -11), (7, -4), (-7, -4), (4, 12), (4, -20),
          (-4, 12), (-4, -20), (12, 3), (-12, 3))


def png(figure) -> bytes:
    """A matplotlib Figure as PNG bytes, trimmed to what is drawn."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return buffer.getvalue()


class Figure(_MatplotlibFigure):
    """A matplotlib Figure that shows itself as an image in Jupyter."""

    def _repr_png_(self) -> bytes:
        return png(self)


def place_labels(ax, xs, ys, texts, colors=None, fontsize: float = 8) -> list:
    """Write ``texts[i]`` beside the point ``(xs[i], ys[i])`` of ``ax``, each where it
    overlaps no label placed before it and no other labelled point, and crosses as
    few of the axes' lines as it can: the first free spot of a dozen around the point,
    or the least crowded one.  Call it once the axes' limits and the figure's layout
    are final.  Returns the Text artists.

    >>> from minirad.draw.figure import Figure
    >>> fig = Figure(figsize=(3, 2))
    >>> ax = fig.add_subplot()
    >>> _ = ax.plot([1, 1.02, 3], [1, 1.02, 2], "o")
    >>> labels = place_labels(ax, [1, 1.02, 3], [1, 1.02, 2], ["a", "b", "c"])
    >>> renderer = fig.canvas.get_renderer()
    >>> a, b = (label.get_window_extent(renderer) for label in labels[:2])
    >>> bool(a.overlaps(b))    # two points almost on top of each other, their labels apart
    False
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    figure = ax.figure
    if not hasattr(figure.canvas, "get_renderer"):  # a Figure made without pyplot
        FigureCanvasAgg(figure)
    figure.draw_without_rendering()
    renderer = figure.canvas.get_renderer()
    points = ax.transData.transform(np.column_stack([xs, ys]))
    pad = 3.0 * figure.dpi / 72  # the room a marker takes around its point
    markers = [(x - pad, y - pad, x + pad, y + pad) for x, y in points]
    taken, placed = [], []
    colors = colors or [None] * len(texts)
    # the axes' lines, as points every few pixels along them
    traced = []
    for line in ax.get_lines():
        drawn = ax.transData.transform(np.asarray(line.get_xydata(), dtype=float))
        drawn = drawn[np.isfinite(drawn).all(axis=1)]
        for a, b in zip(drawn, drawn[1:]):
            steps = max(2, int(np.hypot(*(b - a)) / 3))
            traced.append(a + np.linspace(0, 1, steps)[:, None] * (b - a))
    traced = np.vstack(traced) if traced else np.empty((0, 2))

    def crowding(box, own):
        boxes = taken + [m for i, m in enumerate(markers) if i != own]
        area = sum(max(0.0, min(box.x1, b[2]) - max(box.x0, b[0]))
                   * max(0.0, min(box.y1, b[3]) - max(box.y0, b[1])) for b in boxes)
        crossed = np.count_nonzero((traced[:, 0] > box.x0) & (traced[:, 0] < box.x1)
                                   & (traced[:, 1] > box.y0) & (traced[:, 1] < box.y1))
        return (area, crossed)

    for i, (x, y, text, color) in enumerate(zip(xs, ys, texts, colors)):
        best = None
        for dx, dy in _SPOTS:
            label = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points",
                                fontsize=fontsize, color=color,
                                ha="left" if dx >= 0 else "right", va="bottom")
            box = label.get_window_extent(renderer)
            cost = crowding(box, i)
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, label, box)
            else:
                label.remove()
            if cost == (0, 0):
                break
        _, label, box = best
        taken.append((box.x0, box.y0, box.x1, box.y1))
        placed.append(label)
    return placed
