"""What a reader of the site sees of a figure's text: too small, overlapping, or cut off.

A figure is shown on the site at most as wide as the text column
(:data:`SITE_WIDTH`, measured in a 1,400 px window beside the section
sidebar); a wider figure is shrunk, and its text with it.  :func:`watching`
records every piece of text matplotlib draws while figures are saved, with
its box (``Text.get_window_extent``) and size; :func:`problems` then says,
figure by figure, which text a reader could not read:

* its height (the font's size in pixels, as shown) is under :data:`SMALLEST`;
* its box overlaps another text's box;
* its box reaches outside the figure.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import matplotlib.figure
import matplotlib.text

#: the width of the site's text column at 1,400 px, with the section sidebar
SITE_WIDTH = 820
#: the smallest text height, in pixels as shown, a reader is asked to read
SMALLEST = 8.0
#: boxes that share less than this many pixels each way are not said to overlap
TOUCH = 1.5


@dataclass
class Saved:
    """One figure as saved: its size in pixels and the text drawn into it."""

    name: str
    width: float
    height: float
    drawn: dict = field(default_factory=dict)  # id(Text) -> (text, box, size in pixels)

    @property
    def texts(self) -> list:
        """Each text as drawn last (saving may draw a figure twice, to lay it out first)."""
        return list(self.drawn.values())

    @property
    def scale(self) -> float:
        """How much the site shrinks the picture."""
        return min(1.0, SITE_WIDTH / self.width)


@contextlib.contextmanager
def watching():
    """Record every figure saved (to a PNG) inside the block, with the text drawn in it."""
    saved: list[Saved] = []
    current: list[Saved] = []
    original_draw, original_savefig = matplotlib.text.Text.draw, matplotlib.figure.Figure.savefig

    def draw(self, renderer):
        original_draw(self, renderer)
        if current and self.get_visible() and self.get_text().strip():
            box = self.get_window_extent(renderer)
            current[-1].drawn[id(self)] = (self.get_text(), box,
                                           self.get_fontsize() * renderer.dpi / 72)

    def savefig(self, fname, *args, **kwargs):
        fmt = kwargs.get("format") or (str(fname).rsplit(".", 1)[-1] if isinstance(fname, str)
                                       else "png")
        if fmt != "png":
            return original_savefig(self, fname, *args, **kwargs)
        dpi = kwargs.get("dpi") or self.dpi
        dpi = self.dpi if dpi == "figure" else dpi
        name = fname if isinstance(fname, str) else getattr(fname, "name", repr(fname))
        current.append(Saved(str(name), self.get_figwidth() * dpi,
                             self.get_figheight() * dpi))
        try:
            return original_savefig(self, fname, *args, **kwargs)
        finally:
            saved.append(current.pop())

    matplotlib.text.Text.draw, matplotlib.figure.Figure.savefig = draw, savefig
    try:
        yield saved
    finally:
        matplotlib.text.Text.draw, matplotlib.figure.Figure.savefig = original_draw, \
            original_savefig


def problems(figure: Saved) -> list[str]:
    """What a reader of the site could not read in one saved figure."""
    found = []
    texts = figure.texts
    for text, box, size in texts:
        shown = size * figure.scale
        if shown < SMALLEST:
            found.append(f"{text!r} is {shown:.1f} px high as shown ({size:.1f} px at "
                         f"{figure.width:.0f} px wide, shrunk to {SITE_WIDTH})")
        if box.x0 < -TOUCH or box.y0 < -TOUCH or box.x1 > figure.width + TOUCH \
                or box.y1 > figure.height + TOUCH:
            found.append(f"{text!r} reaches outside the figure")
    for i, (a, box_a, _) in enumerate(texts):
        for b, box_b, _ in texts[i + 1:]:
            wide = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            high = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if wide > TOUCH and high > TOUCH:
                found.append(f"{a!r} and {b!r} overlap ({wide:.0f} x {high:.0f} px)")
    return found
