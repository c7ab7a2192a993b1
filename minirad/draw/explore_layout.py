"""Where the explorable page puts each vertex: the places minirad's own drawings use.

The positions are those of :func:`minirad.draw.render.layout_positions`: with
the graphviz ``dot`` program installed dot's layered layout, without it the
rows and columns of minirad's matplotlib drawing
(:func:`minirad.draw.render.draw_matplotlib`).  The one renderer lays out
graphs of numbers and of arrays in the same bottom-up style.

The page draws its own SVG from these positions (y grows downwards there),
so that edges made later, by vertex elimination, are drawn the same way as
the first ones.

>>> from minirad import examples
>>> spots = positions(examples.lecture())
>>> spots.layout in ("dot", "matplotlib")
True
>>> spots.y[spots.names.index("x1")] > spots.y[spots.names.index("y")]   # inputs at the bottom
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..graph.lcg import LCG
from .render import MAX_VERTICES, has_dot, layout_positions

# the sections of minirad.draw.explore's page: no API of their own
__all__: list[str] = []

#: the width of one character and the height of one line of a vertex's text, in points
CHAR_WIDTH, LINE_HEIGHT = 7.4, 16.0


@dataclass(frozen=True)
class Positions:
    """Vertex centres and box sizes in SVG points (y downwards), and which layout made them."""

    names: list
    x: list
    y: list
    width: list
    height: list
    layout: str


def box_size(lines: list[str]) -> tuple[float, float]:
    """Width and height of a vertex box holding ``lines`` of text."""
    return (max(44.0, max(len(line) for line in lines) * CHAR_WIDTH + 18.0),
            max(28.0, len(lines) * LINE_HEIGHT + 12.0))


#: names that DOT reads as they are; others (``<b>`` starts an HTML label there) are replaced
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\[\]]+")


def stand_in(g) -> tuple[LCG, list[str]]:
    """The graph to lay out and its name for each vertex of ``g``: ``g`` itself, unless
    DOT could misread a name; then a graph of numbers with ``g``'s edges (every partial
    1: the layout reads only the structure) and vertices ``n0``, ``n1``, ..."""
    if all(_PLAIN_NAME.fullmatch(name) for name in g.names):
        return g, list(g.names)
    names = [f"n{v}" for v in range(g.n_vertices)]
    edges = [(names[u], names[v], 1.0) for u, v in zip(g.sources.tolist(), g.targets.tolist())]
    return LCG.from_edges(edges, inputs=[names[v] for v in g.inputs],
                          outputs=[names[v] for v in g.outputs]), names


def positions(g, lines: list[list[str]] | None = None,
              max_vertices: int = MAX_VERTICES) -> Positions:
    """Centres and sizes of the vertices of ``g`` (any LCG of at most ``max_vertices``).

    ``lines`` is the text of each vertex box (default: its name).  Vertices in
    one row are spread apart when their boxes would touch.
    """
    if g.n_vertices > max_vertices:
        raise ValueError(f"the graph has {g.n_vertices} vertices; the page lays out at most "
                         f"max_vertices={max_vertices}, as minirad's drawings do; explore a "
                         f"smaller subgraph, or pass max_vertices={g.n_vertices}")
    lines = lines or [[name] for name in g.names]
    laid_out, names = stand_in(g)
    spots = layout_positions(laid_out, legend=False, edge_labels=False,
                             max_vertices=max_vertices)
    layout = "dot" if has_dot() else "matplotlib"
    x = [spots[name][0] for name in names]
    y = [-spots[name][1] for name in names]  # SVG's y grows downwards
    sizes = [box_size(text) for text in lines]
    stretch = 1.0
    for a in range(len(x)):
        for b in range(a + 1, len(x)):
            gap = abs(x[a] - x[b])
            if abs(y[a] - y[b]) < 1.0 and gap > 0:
                need = (sizes[a][0] + sizes[b][0]) / 2 + 24.0
                stretch = max(stretch, need / gap)
    low = min(x, default=0.0)
    top = min(y, default=0.0)
    return Positions(list(g.names), [round((v - low) * stretch, 1) for v in x],
                     [round(v - top, 1) for v in y], [round(w, 1) for w, _ in sizes],
                     [round(h, 1) for _, h in sizes], layout)
