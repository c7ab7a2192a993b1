"""An explorable LCG: one self-contained web page to step through the graph's algorithms.

:func:`explore` writes the graph, laid out as minirad draws it, into one
HTML file with its script, style and data inside (no server, no network,
nothing fetched when it is opened), with a panel per way of looking at it:

* **Exact**: hover or focus a vertex for its value, operation and local
  partials; step a forward or reverse sweep, one vertex at a time;
* **Eliminate**: click vertices to eliminate them, or play minirad's
  forward, reverse, Markowitz (and, for small graphs, optimal) orders; the
  removed edges, the fill-in and the running multiplication count show, a
  step can be undone, and the bipartite graph left at the end is the Jacobian;
* **Paths**: Bauer's paths of each Jacobian entry (up to a limit, with the
  exact count), one highlighted, with its product and the sum;
* **Sample**: Algorithm 1 runs with their drawn edges and weights, and the
  running mean, standard error and variance of the estimates (those runs
  first, then more from ``sampled_jacobians`` on the same generator) against
  the exact value and the exact variance, for a menu of k and seeds;
* **Memory** (array graphs): the bytes each edge keeps, and a slider for the
  kept fraction of sampled activations with the memory and the exact
  variance side by side.

On a graph of arrays the Eliminate, Paths and Sample panels work on its
Jacobian blocks: elimination multiplies blocks (every step minirad's own,
looked up, since the page cannot multiply operators), a path's product is a
block, and a sample draws paths through the arrays and then entries inside
each array it visits (the paper's two levels, both drawn).

Everything shown is computed here by minirad (:mod:`minirad.draw.explore_data`,
:mod:`minirad.draw.explore_arrays`) and stored in the page as JSON.  The one
computation the page makes itself is the elimination step of a vertex the
student clicks, in any order: a graph of 200 vertices has far too many sets
of eliminated vertices to store a graph for each, while the step is a few
products and sums of labels.  The page's step repeats
:func:`minirad.exact.elimination.eliminate_vertex` operation for operation (the
same products, summed in the same order, in the same double precision), and
whenever it plays one of minirad's orders it compares its step with the one
:func:`minirad.exact.elimination.eliminate` recorded, and says so on the page.

The colours are the Okabe-Ito palette, which readers with the common
colour-vision deficiencies can tell apart; every highlight also differs by
line style or weight.

>>> from minirad import examples
>>> page = explore(examples.lecture())
>>> page.html.startswith("<!DOCTYPE html>"), "http" in page.html.split("<body")[0]
(True, False)
>>> sorted(page.data)
['elimination', 'exact', 'graph', 'kind', 'layout', 'memory', 'paths', 'sample', 'title']
"""

from __future__ import annotations

import html
import json
import os
import re
from importlib import resources

import numpy as np

from ..graph.files import write_atomically
from ..graph.labels import FLOATS
from ..graph.lcg import LCG, takes_graph_or_function
from ..rng import seed_from
from . import explore_arrays, explore_data
from .explore_layout import positions
from .render import MAX_VERTICES

__all__ = ["Page", "explore"]


class Page:
    """An explorable page: ``html`` (the whole file), ``data`` (what it shows), ``save``.

    In Jupyter it shows itself inline, in a frame of its own.
    """

    def __init__(self, html_text: str, data: dict):
        self.html, self.data = html_text, data

    def save(self, path) -> str:
        """Write the page to ``path`` (an ``.html`` file), atomically; returns the path."""
        path = os.fspath(path)
        if not path.lower().endswith((".html", ".htm")):
            raise ValueError(f"an explorable page is an HTML file; give a name ending in .html, "
                             f"not {path!r}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ValueError(f"cannot write {path}: the folder {folder} does not exist")
        data = self.html.encode("utf-8")
        write_atomically(path, lambda f: f.write(data))
        return path

    def _repr_html_(self) -> str:
        # a frame keeps the page's style and script apart from the notebook's
        title = html.escape(self.data["title"])
        return (f'<iframe srcdoc="{html.escape(self.html, quote=True)}" title="{title}" '
                f'style="width: 100%; height: 820px; border: 1px solid #ccc"></iframe>')

    def __repr__(self) -> str:
        return f"Page({self.data['title']!r}, {len(self.html.encode('utf-8')):,} bytes)"


def _layout_section(g, lines, max_vertices: int) -> dict:
    spots = positions(g, lines, max_vertices)
    return dict(x=spots.x, y=spots.y, width=spots.width, height=spots.height,
                lines=lines, engine=spots.layout)


def _check_options(ks, seeds, n) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= 10_000:
        raise ValueError(f"n must be a whole number from 2 to 10000 (estimates kept per "
                         f"k and seed), not {n!r}")
    for seed in seeds:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seeds must be non-negative integers, not {seed!r}")
    if not ks or not seeds:
        raise ValueError("give at least one k and one seed for the Sample panel")


@takes_graph_or_function
def explore(g: LCG, *, title: str | None = None, ks=(1, 2), seeds=(0, 1, 2), n: int = 100,
            max_paths: int = 60, fractions=explore_arrays.FRACTIONS,
            max_vertices: int = MAX_VERTICES, entries=(None, 1, 2), rng=0) -> Page:
    """One self-contained web page to step through ``g``'s algorithms in a browser.

    Parameters
    ----------
    g : LCG or callable
        The graph, of numbers or of arrays; or a Python function, followed by
        the point to trace it at (the other arguments then by keyword).
    title : str, optional
        The page's title (default: the graph's repr).
    ks : sequence of int, optional
        The k's of the Sample panel's menu.
    seeds : sequence of int, optional
        The seeds of the Sample panel's menu; each (k, seed) pair is
        precomputed.
    n : int, optional
        Estimates per (k, seed) pair, 2 to 10,000: the first dozen from runs of
        :func:`~minirad.randomized.sampling.sample_paths` shown with their
        draws, the rest from :func:`~minirad.randomized.sampling.sampled_jacobians`.
    max_paths : int, optional
        The most paths listed per Jacobian entry in the Paths panel.
    fractions : sequence of float, optional
        The kept fractions of the Memory panel's slider (graphs with arrays),
        each drawn by :func:`~minirad.randomized.injection.sample_activations`.
    max_vertices : int, optional
        Larger graphs are refused before anything is computed (default 200).
    entries : sequence of int or None, optional
        On a graph of arrays, the second level of the Sample panel's menu: how
        many entries each array vertex samples inside it (``None``: all of them).
    rng : numpy.random.Generator or int, optional
        The Memory panel's seed, or a generator to draw it from (the page names
        it).

    Returns
    -------
    Page
        ``html`` (the whole file), ``data`` (what it shows) and ``save(path)``;
        in Jupyter it shows inline.

    Raises
    ------
    ValueError
        For a graph with more than ``max_vertices`` vertices, or a bad menu
        (``n`` out of range, negative seeds, no k).
    TypeError
        For a ``max_vertices`` that is not an int, or a ``g`` that is not an LCG.

    See Also
    --------
    minirad.render : A picture of the graph.
    minirad.eliminate : The steps the Eliminate panel plays.

    Notes
    -----
    Nothing is fetched when the page is opened; the one computation it makes
    itself is the elimination step of a vertex the student clicks, which it
    checks against minirad's own steps when it plays one of minirad's orders
    (the module docstring).

    Examples
    --------
    >>> from minirad import examples
    >>> page = explore(examples.lecture())
    >>> page
    Page('an LCG of 7 vertices: 2 inputs, 4 intermediates, 1 output; 8 edges', ... bytes)
    >>> sorted(page.data)[:4]
    ['elimination', 'exact', 'graph', 'kind']
    """
    if isinstance(max_vertices, bool) or not isinstance(max_vertices, int):
        raise TypeError(f"max_vertices must be an int, not {max_vertices!r}")
    if g.n_vertices > max_vertices:   # before any panel: they cost time and memory
        raise ValueError(f"the graph has {g.n_vertices:,} vertices, more than "
                         f"max_vertices={max_vertices} that one page can lay out and be read; "
                         f"explore a smaller subgraph, or pass max_vertices={g.n_vertices} "
                         f"(--max-vertices {g.n_vertices}) to build it anyway")
    if g.algebra is FLOATS:  # a graph of numbers: every panel but Memory
        _check_options(list(ks), list(seeds), n)
        lines = [[name] for name in g.names]
        data = dict(kind="scalars", graph=explore_data.graph_section(g),
                    exact=explore_data.exact_section(g),
                    elimination=explore_data.elimination_section(g),
                    paths=_optional(explore_data.paths_section, g, max_paths),
                    sample=_optional(explore_data.sample_section, g, tuple(ks), tuple(seeds),
                                     n),
                    memory=None)
    else:  # a graph with arrays: the same panels on its blocks, and Memory
        _check_options(list(ks), list(seeds), n)
        lines = [[name, shape] for name, shape in zip(g.names, map(
            explore_arrays.shape_text, g.shapes))]
        data = dict(kind="arrays", graph=explore_arrays.graph_section(g),
                    exact=explore_arrays.exact_section(g),
                    memory=explore_arrays.memory_section(g, fractions, rng=seed_from(
                        np.random.default_rng() if rng is None else rng)),
                    elimination=explore_arrays.elimination_section(g),
                    paths=_optional(explore_arrays.paths_section, g, max_paths),
                    sample=_optional(explore_data.sample_section, g, tuple(ks), tuple(seeds),
                                     n, 12, tuple(entries)))
    data["layout"] = _layout_section(g, lines, max_vertices)
    data["title"] = title or "an LCG of " + repr(g).removeprefix("LCG(").removesuffix(")")
    return Page(_fill(data), data)


def _optional(section, g, *args):
    """A section, or why it cannot be shown (a graph with no input-output path)."""
    try:
        return section(g, *args)
    except ValueError as error:
        if "no path from any input" in str(error):
            return dict(unavailable=str(error))
        raise


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("explore_page", name).read_text("utf-8")


def _fill(data: dict) -> str:
    """The page template with its style, script and data put in."""
    payload = json.dumps(data, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    # "<" only occurs inside JSON strings, where \u003c means the same: no name such as
    # "</script>" can end the block the data sits in
    payload = payload.replace("<", "\\u003c")
    parts = {"/*STYLE*/": _asset("explore.css"), "/*SCRIPT*/": _asset("explore.js"),
             "{{TITLE}}": html.escape(data["title"]), "{{DATA}}": payload}
    # one pass over the template: text put in is never searched for markers again
    return re.sub("|".join(map(re.escape, parts)), lambda m: parts[m.group()], _asset("page.html"))
