"""Pictures of edge elimination: each step as a pair, what it multiplies and what it changes.

A vertex elimination step is drawn on one graph (:func:`minirad.draw.render.render`
with the step as highlight).  An edge step is drawn as two pictures, made
of render's own path highlights, with every vertex kept in its place:

* **before**: the graph just before the step; each product the step forms
  is a coloured path (``i -> j -> k`` for front elimination of ``i -> j``,
  ``h -> i -> j`` for back elimination), its value in the legend;
* **after**: the graph the step leaves; each edge a product landed on is
  drawn in its product's colour, "new" for fill-in, "was ..." for an edge
  the product was added to.  A vertex the step deleted is named in the title.

:func:`edge_step_pictures` draws one step, :func:`edge_elimination_strip`
a whole sequence as one matplotlib Figure, a row per step.

>>> from minirad import eliminate, examples
>>> g = examples.lab()
>>> result = eliminate(g, [("x", "v2", "front")], on="edges")
>>> before, after = edge_step_pictures(g, result.steps[0])
>>> print(before.options["title"])
front-eliminate x → v2: |succ(v2)| = 1 multiplication, 0 additions
>>> "new x → f: x → v2 → f" in before.source, "new: x → f" in after.source
(True, True)
"""

from __future__ import annotations

from ..exact.elimination import FRONT, Step, eliminate
from ..graph.lcg import LCG, plural, takes_graph_or_function
from .render import (
    PATH_COLORS,
    STEP_EDGE_COLOR,
    Paths,
    has_dot,
    layout_positions,
    render,
    save_drawing,
    strip,
)

#: the products' colours: render's path colours but the eliminated edge's orange
PRODUCT_COLORS = tuple(c for c in PATH_COLORS if c.lower() != "#e69f00")

__all__ = ["edge_elimination_strip", "edge_step_pictures", "step_title"]


def step_title(step: Step) -> str:
    """One line saying what an edge step does and what it costs."""
    i, j, end = step.eliminated
    degree = f"|succ({j})|" if end == FRONT else f"|pred({i})|"
    return (f"{end}-eliminate {i} → {j}: {degree} = "
            f"{plural(step.multiplications, 'multiplication')}, "
            f"{plural(step.additions, 'addition')}")


def _products(step: Step) -> list[tuple[tuple[str, ...], tuple[str, str]]]:
    """Each product of the step as (its path, the edge it lands on), in partner order."""
    i, j, end = step.eliminated
    if end == FRONT:
        return [((i, j, k), (i, k)) for k in step.successors]
    return [((h, i, j), (h, j)) for h in step.predecessors]


def edge_step_pictures(before: LCG, step: Step, **options) -> tuple:
    """The two drawings of one edge step (see the module docstring).

    ``before`` is the graph just before the step (``Elimination.graphs[i]``
    for ``steps[i]``, which needs ``keep_graphs=True``); the graph after it
    is made by taking the step again.  Other keyword arguments go to
    :func:`minirad.draw.render.render`; both pictures share ``positions``
    (from :func:`minirad.draw.render.layout_positions` of ``before`` when
    ``dot`` is installed), so every vertex stays in its place.
    """
    if step.on != "edges":
        raise ValueError(f"edge_step_pictures draws an edge elimination step, not a step on "
                         f"{step.on} (render draws a vertex step)")
    i, j, end = step.eliminated
    after = eliminate(before, [(i, j, end)], on="edges").graph
    if has_dot() and "positions" not in options:
        options = dict(options, positions=layout_positions(before))
    products = _products(step)
    colors = [PRODUCT_COLORS[n % len(PRODUCT_COLORS)] for n in range(len(products))]
    new = set(step.fill_in)
    made = [f"{'new' if target in new else 'added to'} {target[0]} → {target[1]}"
            for _, target in products]
    # the eliminated edge first, in the colour vertex steps give the edges they remove
    first = render(before, Paths([(i, j)] + [path for path, _ in products],
                                 labels=[f"eliminated ({end})"] + made,
                                 colors=[STEP_EDGE_COLOR] + colors),
                   title=options.pop("title", None) or step_title(step), **options)
    landed = [target for _, target in products]
    notes = ["new" if target in new else f"updated, was {before.partial(*target):.4g}"
             for target in landed]
    gone = (f"\n{', '.join(step.removed)} deleted (no {'in' if end == FRONT else 'out'}"
            f"-edge left)") if step.removed else ""
    second = render(after, Paths(landed, labels=notes, colors=colors),
                    title=f"after it: {i} → {j} eliminated{gone}", **options)
    return first, second


@takes_graph_or_function
def edge_elimination_strip(g: LCG, order="optimal", path=None, dpi: int = 110, *,
                           title: str | None = None, **options):
    """Every step of an edge elimination as a row of two pictures, in one Figure.

    ``order`` is an edge order of :func:`minirad.exact.elimination.eliminate`;
    ``title`` goes above all the rows; saved to ``path`` when given.

    >>> from minirad import examples
    >>> figure = edge_elimination_strip(examples.lab(), "optimal", title="lab")
    >>> len(figure.axes), figure.get_suptitle()
    (4, 'lab')
    """
    result = eliminate(g, order, on="edges", keep_graphs=True)
    if has_dot() and "positions" not in options:
        options = dict(options, positions=layout_positions(g))
    drawings = []
    for number, (before, step) in enumerate(zip(result.graphs, result.steps), 1):
        # two short lines: a long one would run past a tile of the strip
        what, cost = step_title(step).split(": ", 1)
        pair = edge_step_pictures(before, step, title=f"step {number}/{len(result.steps)}: "
                                  f"{what}\n{cost}", **options)
        drawings += pair
    figure = strip(drawings, ncols=2, dpi=dpi, title=title)
    if path is not None:
        save_drawing(figure, path, dpi=dpi)
    return figure
