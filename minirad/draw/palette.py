"""One palette for every picture minirad draws.

The colours are Okabe and Ito's eight (*Color Universal Design*, 2008),
which readers with the common colour-vision deficiencies can tell apart;
the graph drawings, the plots, the case studies' figures and the explorable
page all take their colours from here, so that a colour means the same in
every picture of a page.  Where many curves share a plot they take
:data:`SERIES` in order.  Values with a sign use the diverging map
:data:`DIVERGING` (blue negative, red positive, white at 0), magnitudes the
sequential :data:`SEQUENTIAL`.

>>> SERIES[:3]
('#0072B2', '#D55E00', '#009E73')
"""

from __future__ import annotations

__all__ = ["BLACK", "BLUE", "DIVERGING", "GREEN", "GREY", "INK", "LIGHT_GREY", "ORANGE",
           "PURPLE", "SEQUENTIAL", "SERIES", "SKY_BLUE", "VERMILLION", "YELLOW"]

BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
GREEN = "#009E73"       # Okabe and Ito's "bluish green"
YELLOW = "#F0E442"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"      # Okabe and Ito's "reddish purple"

INK = "#222222"         # text and plain edges
GREY = "#999999"        # guides, references, what a highlight leaves out
LIGHT_GREY = "#BBBBBB"

#: one colour per curve (or path), in this order
SERIES = (BLUE, VERMILLION, GREEN, PURPLE, ORANGE, SKY_BLUE, BLACK)
#: matplotlib colour maps: signed values, and magnitudes
DIVERGING = "RdBu_r"
SEQUENTIAL = "viridis"
