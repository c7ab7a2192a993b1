"""Draw an LCG the way the RAD paper's Figure 1 does, with optional highlights.

:func:`render` returns a :class:`graphviz.Digraph` (it shows inline in
Jupyter and :func:`save_drawing` writes it as svg, png or pdf).  The picture reads
bottom-up like Figure 1(c): inputs at the bottom, outputs at the top, one
row per topological level, each edge labelled with its local partial.
Results of other modules are laid over it by passing them along,
``render(g, sample, path, step)``, each recognised by its type:

* a path sample: the drawn edges bold and coloured with their draw count
  and sampled weight, the others dashed grey, skipped vertices greyed out;
* a path or a list of paths (or :class:`Paths`), each in its own colour,
  like Figure 1(d);
* an elimination step (or :class:`Eliminating`): the vertex, the fill-in
  edges it is about to create (dashed) and the edges whose partials it
  changes;
* vertex factors (a mapping or :class:`Factors`), a sample of *vertices*
  as random matrix injection draws them: each vertex's factor, the
  vertices it drops greyed out, and the edges between kept vertices bold
  with their scaled weights.

Each kind is one entry of :data:`HIGHLIGHTS`: a test recognising the object
and a function marking up the picture.

A graph of arrays is drawn the same way (the RAD paper's Figure 3): each
vertex with its shape (``h1 ∈ R^(3×5)``), each edge with its Jacobian
block's short name and the bytes the backward pass keeps for it, the title
with the total; random matrix injections recorded in ``g.injections`` show on
either kind of graph, the edges carrying a projection dashed in red with its k.

:func:`render_elimination` draws a whole vertex elimination, one picture
per step (a list that shows as one strip in Jupyter), and
:func:`elimination_strip` puts them side by side in one Figure.

Every highlight is first turned into a neutral description of the picture
(a "scene"); the graphviz source and the matplotlib fallback
(:func:`draw_matplotlib`, used when the ``dot`` program is missing) are both
drawn from that one scene, so they always agree.  The DOT text itself needs
no ``dot`` program; the fallback places each edge label where it covers no
vertex and no other label.

>>> from minirad import examples
>>> dot = render(examples.figure1())
>>> dot.graph_attr["rankdir"]  # bottom to top
'BT'
>>> print(next(line for line in dot.source.splitlines() if "x1 -> v2" in line).strip())
x1 -> v2 [label=2.718 color="#222222" fontcolor="#222222"]
"""

from __future__ import annotations

import html
import io
import math
import os
import re
import shutil
import subprocess
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import graphviz
import numpy as np

from ..exact.paths import path_product
from ..graph.files import write_atomically
from ..graph.labels import FLOATS
from ..graph.lcg import (
    INPUT,
    INTERMEDIATE,
    LCG,
    OUTPUT,
    fill_template,
    plural,
    shape_text,
    takes_graph_or_function,
)
from ..graph.lcg import levels as topological_levels
from ..graph.memory import retained_memory
from . import palette

__all__ = [
    "HIGHLIGHTS", "Drawing", "Drawings", "Eliminating", "Factors", "MissingDotWarning", "Part",
    "Paths",
    "draw_matplotlib", "elimination_strip", "has_dot", "layout_positions", "render",
    "render_elimination", "save_drawing", "strip",
]

#: graphs with more vertices than this are refused unless ``max_vertices=`` is raised
MAX_VERTICES = 200

# ------------------------------------------------------------------ palette
# The colours are minirad.draw.palette's (Okabe and Ito's). Kinds differ by shape *and*
# fill so the picture survives grey-scale printing.
FILL = {INPUT: "#d6e6f5", INTERMEDIATE: "#ffffff", OUTPUT: "#fbdcc0"}  # tints of blue, orange
SHAPE = {INPUT: "box", INTERMEDIATE: "ellipse", OUTPUT: "doubleoctagon"}
_BORDER = {INPUT: 1.0, INTERMEDIATE: 1.0, OUTPUT: 1.0}  # line widths of the vertices' borders
INK = palette.INK
DIM = "#b0b0b0"            # edges and vertices a highlight leaves out
DIM_FILL = "#f2f2f2"
SAMPLE_COLOR = palette.VERMILLION   # the sampled edges
SAMPLE_WIDTH = 2.6
KEPT_COLOR = palette.BLUE  # vertices a vertex sample keeps and the edges joining them
KEPT_WIDTH = 2.4
PATH_WIDTH = 2.2
# yellow is left out of the paths' colours because it vanishes on white paper
PATH_COLORS = palette.SERIES
STEP_VERTEX_FILL = "#ffe45c"  # a tint of the palette's yellow
STEP_VERTEX_BORDER = "#9a7d00"
STEP_EDGE_COLOR = palette.ORANGE   # edges into and out of the vertex being eliminated
FILL_IN_COLOR = palette.PURPLE     # edges the step creates
INJECTED_COLOR = palette.VERMILLION  # random matrix injection: the vertices and edges it changed
INJECTED_WIDTH = 2.0
UPDATED_COLOR = palette.GREEN      # existing edges whose partial the step changes
FONT = "Helvetica"

_FORMATS = ("png", "svg", "pdf", "dot", "gv")


class MissingDotWarning(UserWarning):
    """The graphviz ``dot`` program is not installed; drawings fall back to matplotlib."""


_warned_missing_dot = False


def has_dot() -> bool:
    """Whether the graphviz ``dot`` program is on the PATH (checked afresh each call)."""
    return shutil.which("dot") is not None


def _warn_missing_dot() -> None:
    """Warn once per process: repeating it on every drawing would drown the output."""
    global _warned_missing_dot
    if not _warned_missing_dot:
        _warned_missing_dot = True
        warnings.warn(
            "the graphviz 'dot' program was not found on the PATH: minirad draws with its "
            "matplotlib fallback instead (saving as .dot still writes the DOT text). "
            "Install graphviz (e.g. 'apt-get install graphviz' or 'conda install graphviz') "
            "for the proper layout.", MissingDotWarning, stacklevel=3)


def _fmt(x: float, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; -0 reads as 0."""
    text = f"{x:.{digits}g}"
    return "0" if text == "-0" else text


def _label_text(label, digits: int) -> str:
    """An edge label in a few characters: a number to ``digits`` significant digits, a
    Jacobian block by its short name (``diag``, ``outer``, ``dense∘P k=3``)."""
    if isinstance(label, (int, float, np.integer, np.floating)):
        return _fmt(float(label), digits)
    return label.label().replace(", ", " ")


def _bytes(x: float) -> str:
    """A number of bytes as a student reads it: ``48 B``, ``0.25 B``, ``12.3 kB``."""
    if x >= 10_000:
        return f"{x / 1000:,.1f} kB"
    return f"{int(x):,} B" if x == int(x) else f"{x:,.3f}".rstrip("0") + " B"


# ------------------------------------------------------------------- scene
@dataclass
class _Node:
    lines: list[str]
    kind: str
    fill: str
    border: str = INK
    fontcolor: str = INK
    penwidth: float = 1.0
    dashed: bool = False


@dataclass
class _Edge:
    u: int
    v: int
    label: str
    colors: list[str] = field(default_factory=list)  # empty: the default ink
    penwidth: float = 1.0
    dashed: bool = False
    fontcolor: str = INK
    proposed: bool = False  # a fill-in edge that the step is about to create


@dataclass
class _Key:
    """One legend entry: a vertex swatch or an edge sample."""

    text: str
    color: str
    edge: bool = True
    dashed: bool = False
    fill: str | None = None
    shape: str = "box"
    penwidth: float = 1.0


@dataclass
class _Scene:
    g: LCG
    nodes: list[_Node]
    edges: list[_Edge]
    levels: list[int]
    keys: list[_Key]
    title: str | None
    dim_plain_edges: bool = False
    positions: dict | None = None  # vertex name -> (x, y) in points: pinned, not laid out


def _levels(g: LCG, fixed=None) -> list[int]:
    """Row of each vertex: the longest path from an input, outputs on the top row.

    ``fixed`` (name -> row) overrides the computed rows, so that the pictures
    of an elimination sequence keep every surviving vertex in place.
    """
    level = topological_levels(g).tolist()  # longest path into each vertex, as in sweeps
    top = max(level, default=0)
    for y in g.outputs:
        level[y] = top
    if fixed is not None:
        for v, name in enumerate(g.names):
            if name in fixed:
                level[v] = int(fixed[name])
        # rows left empty by eliminated vertices close up, as they do in dot
        dense = {row: i for i, row in enumerate(sorted(set(level)))}
        level = [dense[row] for row in level]
    return level


# a float literal in an op template (``0.1257302210933933 * {0}``, ``{0} ** 3.0``,
# ``1e-07``); plain integers such as the ``0`` of ``{0}`` are left alone
_FLOAT_LITERAL = re.compile(
    r"(?<![\w.])(?:\d+\.\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])")


def _round_constants(template: str, digits: int) -> str:
    """The op template with its numeric constants to ``digits`` significant digits."""
    return _FLOAT_LITERAL.sub(lambda m: _fmt(float(m.group()), digits), template)


def _node_lines(g: LCG, v: int, show_ops: bool, show_values: bool, digits: int) -> list[str]:
    """A vertex's text: its name (on a graph of arrays with its shape, ``h1 ∈ R^(3×5)``),
    optionally its operation and a number's value."""
    name, shape = g.names[v], g.shape(v)
    operation = None
    if show_ops and g.kind(v) != INPUT and g.ops[v]:
        template = _round_constants(g.ops[v], digits)  # before the names go in: names stay
        operation = fill_template(template, [g.names[p] for p in g.predecessors(v)])
    value = math.nan if g.values is None or shape != () else g.value(v)
    if g.algebra is not FLOATS:  # a graph of arrays: every shape beside its name
        lines = [f"{name} ∈ {shape_text(shape)}"] + ([operation] if operation else [])
        return lines + ([f"= {_fmt(value, digits)}"] if show_values and math.isfinite(value)
                        else [])
    head, lines = name if operation is None else f"{name} = {operation}", []
    if show_values and math.isfinite(value):
        if head == name:
            head = f"{name} = {_fmt(value, digits)}"
        else:
            lines.append(f"= {_fmt(value, digits)}")
    return [head, *lines]


def _block_text(label, retained: float, note: str) -> str:
    """An array edge's text: the block's short name, the bytes the backward pass keeps for
    it (with the reason when it keeps nothing), and an injected projection's k."""
    name, *injected = label.label().split(", ")
    kept = _bytes(retained) + (f" ({note})" if note and not retained else "")
    return "\n".join([name, kept, *injected])


def _injected_edges(g: LCG) -> dict[int, str]:
    """Edge number -> what was injected there (``sampled k=2``, ``P k=3``), from the
    graph's records: an edge injection marks its edge, a vertex injection the edges that
    carry its P (out of the vertex, or into it for an output)."""
    marked = {}
    for record in g.injections:
        k = record.get("k")
        if record.get("kind") == "edge" and len(record.get("edge", ())) == 2:
            method = "sampled" if record.get("method") == "sample" else "projected"
            u, v = record["edge"]
            if g.has_edge(u, v):
                marked[g.edge_index(u, v)] = f"{method} k={k}"
        elif record.get("kind") == "vertex" and record.get("at") in g.names:
            at = g.index(record["at"])
            ends = ([(p, at) for p in g.predecessors(at)] if g.kind(at) == OUTPUT
                    else [(at, w) for w in g.successors(at)])
            for u, v in ends:
                marked[g.edge_index(u, v)] = f"P k={k}"
    return marked


def _memory_line(g: LCG, m, batch: int | None) -> str:
    """The title's line on memory: what the backward pass retains (per example of a batch)."""
    line = f"retained for the backward pass: {_bytes(m.total)}"
    if batch:
        line += f" ({_bytes(m.per_example(batch))} per example of {batch})"
    if g.injections:
        line += f"; {plural(len(g.injections), 'injected projection')}"
    return line


def _base_scene(g, show_ops, show_values, edge_labels, digits, levels, title,
                batch=None) -> _Scene:
    nodes = [_Node(_node_lines(g, v, show_ops, show_values, digits), g.kind(v),
                   FILL[g.kind(v)]) for v in range(g.n_vertices)]
    arrays = g.algebra is not FLOATS
    m = retained_memory(g) if arrays or batch else None
    if m is not None:
        title = "\n".join(filter(None, [title, _memory_line(g, m, batch)]))
    if arrays and edge_labels:
        texts = [_label_text(d, digits) if isinstance(d, float) else
                 _block_text(d, m.per_edge[e], m.notes[e] if m.notes else "")
                 for e, (_, _, d) in enumerate(g.edges())]
    else:
        texts = [_fmt(d, digits) if edge_labels else "" for d in g.labels]
    edges = [_Edge(u, v, text) for (u, v, _), text in zip(g.edges(), texts)]
    scene = _Scene(g, nodes, edges, _levels(g, levels), [], title)
    _mark_injections(scene)
    return scene


def _mark_injections(scene: _Scene) -> None:
    """Injected vertices with a red border, the edges carrying an injected projection
    dashed in orange-red with their k; a legend entry for each."""
    g = scene.g
    marked = _injected_edges(g)
    for e, what in marked.items():
        edge = scene.edges[e]
        edge.colors, edge.dashed, edge.fontcolor = [INJECTED_COLOR], True, INJECTED_COLOR
        edge.penwidth = INJECTED_WIDTH
        if edge.label and what not in edge.label:
            edge.label += f"\n{what}"
    at = [g.index(r["at"]) for r in g.injections
          if r.get("kind") == "vertex" and r.get("at") in g.names]
    for v in at:
        scene.nodes[v].border, scene.nodes[v].penwidth = INJECTED_COLOR, INJECTED_WIDTH
    if at:
        scene.keys.append(_Key("injected vertex: a random P = R Rᵀ (E[P] = I) where its "
                               "paths pass", INJECTED_COLOR, edge=False, fill=FILL[INTERMEDIATE],
                               shape="ellipse", penwidth=INJECTED_WIDTH))
    if marked:
        scene.keys.append(_Key("edge carrying an injected projection (k: its rank)",
                               INJECTED_COLOR, dashed=True, penwidth=INJECTED_WIDTH))


def _kind_keys(g: LCG) -> list[_Key]:
    present = {g.kind(v) for v in range(g.n_vertices)}
    return [_Key(kind, INK, edge=False, fill=FILL[kind], shape=SHAPE[kind],
                 penwidth=_BORDER[kind])
            for kind in (INPUT, INTERMEDIATE, OUTPUT) if kind in present]


# -------------------------------------------------------------- highlights
def _check_sample(g: LCG, sample) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    missing = [a for a in ("counts", "weights", "visited") if not hasattr(sample, a)]
    if missing:
        raise TypeError(f"a sample must be a PathSample (from minirad.sample_paths) "
                        f"with counts, weights and visited; {type(sample).__name__} lacks "
                        f"{', '.join(missing)}")
    counts = np.asarray(sample.counts).reshape(-1)
    weights = list(sample.weights)  # numbers, or blocks on a graph of arrays
    visited = np.asarray(sample.visited, dtype=bool).reshape(-1)
    if len(counts) != g.n_edges or len(weights) != g.n_edges or len(visited) != g.n_vertices \
            or not _same_structure(g, sample):
        raise ValueError(f"the sample was drawn from a different graph ({len(counts)} edge counts, "
                         f"{len(visited)} vertices) than the one drawn ({g.n_edges} edges, "
                         f"{g.n_vertices} vertices); pass the graph that was sampled")
    return counts, weights, visited


def _same_structure(g: LCG, sample) -> bool:
    """Whether the sample's graph has ``g``'s vertices and edges (the counts
    are aligned with the sampled graph's edge arrays)."""
    original = getattr(sample, "original", None)
    if isinstance(original, LCG):
        return (original.names == g.names and np.array_equal(original.sources, g.sources)
                and np.array_equal(original.targets, g.targets))
    q = getattr(sample, "graph", None)  # Q: same vertices, a subset of the edges
    if isinstance(q, LCG):
        return q.names == g.names and all(g.has_edge(u, v) for u, v, _ in q.edges())
    return True


def _apply_sample(scene: _Scene, sample, digits: int) -> None:
    counts, weights, visited = _check_sample(scene.g, sample)
    for e, edge in enumerate(scene.edges):  # scene edges follow g's edge arrays
        if counts[e] > 0:
            edge.colors.append(SAMPLE_COLOR)
            edge.penwidth = max(edge.penwidth, SAMPLE_WIDTH)
            # words, not "×1 w=...": "x1" next to a weight reads as a product with x1
            edge.label = f"draws {int(counts[e])}, w = {_label_text(weights[e], digits)}"
            edge.fontcolor = SAMPLE_COLOR
        else:
            edge.dashed = True
            edge.fontcolor = DIM
    for v, node in enumerate(scene.nodes):
        if not visited[v]:
            node.fill, node.border, node.fontcolor, node.dashed = DIM_FILL, DIM, DIM, True
    scene.dim_plain_edges = True
    scene.keys += [
        _Key("sampled edge: draws n, weight w = n × d_v/k × partial\n(d_v: out-degree of "
             "the edge's tail v, k: draws at v)", SAMPLE_COLOR, penwidth=SAMPLE_WIDTH),
        _Key("edge not drawn", DIM, dashed=True),
    ]
    if not visited.all():
        scene.keys.append(_Key("skipped vertex (no sampled edge in)", DIM, edge=False,
                               dashed=True, fill=DIM_FILL, shape="ellipse"))


def _as_factors(g: LCG, kept) -> dict[int, float]:
    """Vertex factors as {vertex number: factor}, checked."""
    if not isinstance(kept, Mapping):
        raise TypeError(f"vertex factors are a mapping {{vertex: factor}} (e.g. "
                        f"Factors({{'a1': 1.5, 'a2': 0}})), "
                        f"not {type(kept).__name__}")
    factors = {}
    for vertex, factor in kept.items():
        try:
            factor = float(factor)
        except (TypeError, ValueError):
            raise TypeError(f"the factors map {vertex!r} to {factor!r}; factors are "
                            f"numbers") from None
        if not math.isfinite(factor):
            raise ValueError(f"the factors map {vertex!r} to {factor}; factors must be "
                             f"finite")
        factors[g.index(vertex)] = factor
    return factors


def _apply_kept(scene: _Scene, kept, factor_name: str, digits: int) -> None:
    g = scene.g
    listed = _as_factors(g, kept)
    ends = set(g.inputs) | set(g.outputs)
    factor = [listed.get(v, 1.0 if v in ends else 0.0) for v in range(g.n_vertices)]
    for v, node in enumerate(scene.nodes):
        if v in listed:
            node.lines.append(f"{factor_name} = {_fmt(factor[v], digits)}")
        if factor[v] == 0:
            node.fill, node.border, node.fontcolor, node.dashed = DIM_FILL, DIM, DIM, True
        elif v in listed:
            node.border, node.penwidth = KEPT_COLOR, KEPT_WIDTH
    for edge, (u, v, d) in zip(scene.edges, g.edges()):  # scene edges follow g's edges
        if factor[u] != 0 and factor[v] != 0:
            edge.colors.append(KEPT_COLOR)
            edge.penwidth = max(edge.penwidth, KEPT_WIDTH)
            edge.fontcolor = KEPT_COLOR
            if v in listed and edge.label:
                scaled = (_fmt(factor[v] * d, digits) if isinstance(d, float) else
                          f"{_fmt(factor[v], digits)} × {_label_text(d, digits)}")
                edge.label = f"{factor_name} {_fmt(factor[v], digits)}, w = {scaled}"
        else:
            edge.dashed = True
            edge.fontcolor = DIM
    scene.dim_plain_edges = True
    scene.keys += [
        _Key(f"kept vertex: its {factor_name} scales the edges into it", KEPT_COLOR,
             edge=False, fill=FILL[INTERMEDIATE], shape="ellipse", penwidth=KEPT_WIDTH),
        _Key(f"edge between kept vertices: {factor_name} f of its head, w = f × partial",
             KEPT_COLOR, penwidth=KEPT_WIDTH),
        _Key("edge not used (an end is dropped)", DIM, dashed=True),
    ]
    if 0.0 in factor:
        scene.keys.append(_Key(f"dropped vertex ({factor_name} = 0)", DIM, edge=False,
                               dashed=True, fill=DIM_FILL, shape="ellipse"))


def _as_paths(g: LCG, paths) -> list[tuple[int, ...]]:
    """One path or many (vertex names or numbers) as tuples of vertex numbers."""
    if isinstance(paths, (str, bytes)) or not isinstance(paths, Iterable):
        raise TypeError(f"Paths takes a path (a sequence of vertices) or a list of paths, "
                        f"not {type(paths).__name__}")
    paths = list(paths)
    if paths and isinstance(paths[0], (str, int, np.integer)):
        paths = [paths]  # a single path
    if len(paths) == 1 and isinstance(paths[0], Sequence) and len(paths[0]) == 2 \
            and not isinstance(paths[0], (str, bytes)) and not g.has_edge(*paths[0]):
        paths = _paths_between(g, *paths[0])  # (source, target): every path between them
    result = []
    for number, path in enumerate(paths, 1):
        if isinstance(path, (str, bytes)) or not isinstance(path, Sequence):
            raise TypeError(f"path {number} is {path!r}; a path is a sequence of vertices "
                            f"such as ('x1', 'v2', 'y')")
        vertices = tuple(g.index(v) for v in path)
        if len(vertices) < 2:
            raise ValueError(f"path {number} has {len(vertices)} vertex; a path needs at least "
                             f"two vertices joined by an edge")
        for u, v in zip(vertices, vertices[1:]):
            if not g.has_edge(u, v):
                raise ValueError(f"path {number} steps from {g.names[u]} to {g.names[v]}, "
                                 f"which is not an edge of the graph; successors of "
                                 f"{g.names[u]}: {[g.names[s] for s in g.successors(u)]}")
        result.append(vertices)
    return result


MAX_PATH_KEYS = 10
#: a (source, target) pair is drawn as all the paths between them, up to this many
MAX_PATHS_BETWEEN = 20


def _paths_between(g: LCG, source, target) -> list[tuple[int, ...]]:
    """Every path from ``source`` to ``target``, refused beyond :data:`MAX_PATHS_BETWEEN`."""
    from ..exact.paths import count_paths_between, paths
    from ..exact.result import format_count

    count = count_paths_between(g, source, target)
    s, t = g.names[g.index(source)], g.names[g.index(target)]
    if count == 0:
        raise ValueError(f"({s!r}, {t!r}) is not an edge and there is no path from {s} to "
                         f"{t}; a pair of vertices draws every path between them")
    if count > MAX_PATHS_BETWEEN:
        raise ValueError(f"there are {format_count(count)} paths from {s} to {t}, too many to "
                         f"draw ({s!r}, {t!r}) as all of them (at most {MAX_PATHS_BETWEEN}); "
                         f"pass the chosen paths, e.g. a few from minirad.exact.paths.paths(g, "
                         f"{s!r}, {t!r})")
    return list(paths(g, source, target))


def _one_per_path(values, count: int, what: str, example: str) -> list[str] | None:
    """``path_labels=`` or ``colors=``: one string per path (a lone string for one path)."""
    if values is None:
        return None
    values = [values] if isinstance(values, str) else [str(value) for value in values]
    if len(values) != count:
        raise ValueError(f"{what} has {len(values)} entries for {count} paths; give one per "
                         f"path, such as {what}={example}")
    return values


def _apply_paths(scene: _Scene, paths, digits: int, path_labels=None, colors=None) -> None:
    g = scene.g
    paths = _as_paths(g, paths)
    labels = _one_per_path(path_labels, len(paths), "path_labels", "['path 3']")
    colors = _one_per_path(colors, len(paths), "colors", "[PATH_COLORS[2]]")
    for number, path in enumerate(paths):
        color = colors[number] if colors else PATH_COLORS[number % len(PATH_COLORS)]
        for u, v in zip(path, path[1:]):
            edge = scene.edges[g.edge_index(u, v)]  # scene edges follow g's edges
            edge.colors.append(color)  # several paths: a multi-coloured edge
            edge.penwidth = max(edge.penwidth, PATH_WIDTH)
        if number < MAX_PATH_KEYS:
            route = " → ".join(g.names[v] for v in path)
            label = labels[number] if labels else f"path {number + 1}"
            scene.keys.append(_Key(f"{label}: {route}  ({_product_text(g, path, digits)})",
                                   color, penwidth=PATH_WIDTH))
        elif number == MAX_PATH_KEYS:
            scene.keys.append(_Key("... more paths (colours repeat)", DIM))
    scene.dim_plain_edges = True


def _product_text(g: LCG, path, digits: int) -> str:
    """The chain rule along a path: its number, or the size of the block it multiplies to."""
    if g.algebra is FLOATS:
        return f"product {_fmt(path_product(g, path), digits)}"
    return f"product: a {g.size(path[-1])} × {g.size(path[0])} block"


def _as_step(g: LCG, step):
    """An elimination Step checked against ``g``, the graph *before* the step,
    with the labels its new and updated edges carry after it."""
    if isinstance(step, Eliminating):
        from ..exact.elimination import eliminate  # elimination never draws, so no import cycle

        v = g.index(step.vertex)
        if g.kind(v) != INTERMEDIATE:
            raise ValueError(f"Eliminating({g.names[v]!r}): {g.names[v]} is an {g.kind(v)}; "
                             f"only intermediates can be eliminated")
        step = eliminate(g, [v]).steps[0]
    if step.on != "vertices":
        raise ValueError(f"render draws a vertex elimination step; a step on {step.on} is drawn "
                         f"by minirad.draw.edge_steps.edge_step_pictures (edges)")
    v = g.index(step.eliminated)
    fill_in, updated = [tuple(e) for e in step.fill_in], [tuple(e) for e in step.updated]
    # a step eliminates its vertex on the graph before it: there its neighbours
    # are the step's, every fill-in edge is still missing and every update present
    if g.kind(v) != INTERMEDIATE or \
            tuple(g.names[p] for p in g.predecessors(v)) != tuple(step.predecessors) or \
            tuple(g.names[w] for w in g.successors(v)) != tuple(step.successors) or \
            any(g.has_edge(p, w) for p, w in fill_in) or \
            not all(g.has_edge(p, w) for p, w in updated):
        raise ValueError(f"the step eliminates {step.eliminated!r} on a different graph: its "
                         f"neighbours, fill-in and updated edges do not match this one; draw "
                         f"it on the graph *before* the step (Elimination.graphs[i] for "
                         f"steps[i])")
    new_fill = tuple(getattr(step, "fill_in_labels", ()))
    new_updated = tuple(getattr(step, "updated_labels", ()))
    if len(new_fill) != len(fill_in) or len(new_updated) != len(updated):
        raise ValueError(f"the step eliminating {step.eliminated!r} does not carry the labels of "
                         f"its new and updated edges; pass a Step from "
                         f"minirad.exact.elimination.eliminate, or "
                         f"Eliminating({step.eliminated!r})")
    return step, dict(zip(fill_in, new_fill)), dict(zip(updated, new_updated))


def _apply_step(scene: _Scene, step, digits: int) -> None:
    g = scene.g
    step, new_fill, new_updated = _as_step(g, step)
    v = g.index(step.eliminated)
    node = scene.nodes[v]
    node.fill, node.border, node.penwidth, node.dashed = (
        STEP_VERTEX_FILL, STEP_VERTEX_BORDER, 3.0, False)
    node.fontcolor = INK
    for edge in scene.edges:
        if v in (edge.u, edge.v):
            edge.colors.append(STEP_EDGE_COLOR)
            edge.penwidth = max(edge.penwidth, 2.0)
    # the new partials are the step's own: the chain rule's products and sums
    # are minirad.exact.elimination's to compute
    for p_name, s_name in step.updated:
        edge = scene.edges[g.edge_index(p_name, s_name)]  # scene edges follow g's edges
        old, new = g.label(p_name, s_name), new_updated[p_name, s_name]
        edge.colors.append(UPDATED_COLOR)
        edge.penwidth = max(edge.penwidth, 2.4)
        edge.label = f"{_label_text(old, digits)} → {_label_text(new, digits)}"
        edge.fontcolor = UPDATED_COLOR
    for p_name, s_name in step.fill_in:
        p, s = g.index(p_name), g.index(s_name)
        new = new_fill[p_name, s_name]
        scene.edges.append(_Edge(p, s, f"new {_label_text(new, digits)}", [FILL_IN_COLOR], 2.0,
                                 dashed=True, fontcolor=FILL_IN_COLOR, proposed=True))
    scene.keys += [
        _Key(f"vertex eliminated: {g.names[v]}", STEP_VERTEX_BORDER, edge=False,
             fill=STEP_VERTEX_FILL, shape="ellipse", penwidth=3.0),
        _Key(f"edge into or out of {g.names[v]} (removed)", STEP_EDGE_COLOR,
             penwidth=2.0),
    ]
    if step.fill_in:
        scene.keys.append(_Key("fill-in edge (created): new partial", FILL_IN_COLOR,
                               dashed=True, penwidth=2.0))
    if step.updated:
        scene.keys.append(_Key("updated edge: old → new partial", UPDATED_COLOR, penwidth=2.4))


# ------------------------------------------------- highlights by type
@dataclass(frozen=True)
class Paths:
    """Paths to highlight, with their names in the legend and their colours.

    A plain path (a sequence of vertices) or list of paths may be passed to
    :func:`render` directly; wrap them in ``Paths`` to name or colour them:
    one label and one colour per path (defaults ``"path 1"``, ... and
    :data:`PATH_COLORS` in turn), so a path drawn alone can keep the number
    and colour it has among all the paths.
    """

    paths: object
    labels: Sequence[str] | str | None = None
    colors: Sequence[str] | str | None = None


@dataclass(frozen=True)
class Factors:
    """A sample of *vertices*, as random matrix injection draws them.

    ``factors`` maps vertices to the factor that scales the edges into them
    (0: dropped; see :func:`minirad.examples.chain_graph`); ``name`` is what
    the pictures call a factor (e.g. ``"P_ii"`` for an injected matrix P).
    A plain mapping passed to :func:`render` is read as ``Factors(mapping)``.
    """

    factors: Mapping
    name: str = "factor"


@dataclass(frozen=True)
class Part:
    """A part of the graph in its own colour, with one legend entry: its vertices
    get a bold border of that colour and the edges into them that colour (the
    reverse pass that :func:`minirad.exact.higher.gradient_graph` records after
    the program, say).  Paths drawn in the same picture go over it."""

    vertices: object
    label: str = "part"
    color: str = PATH_COLORS[1]


@dataclass(frozen=True)
class Eliminating:
    """The elimination step that removes ``vertex`` from the drawn graph."""

    vertex: str | int


def _is_sample(h) -> bool:
    return all(hasattr(h, a) for a in ("counts", "weights", "visited"))


def _is_step(h) -> bool:
    return isinstance(h, Eliminating) or all(hasattr(h, a)
                                             for a in ("eliminated", "fill_in", "updated"))


def _is_paths(h) -> bool:
    return isinstance(h, Paths) or (isinstance(h, (Sequence, Iterator)) and not isinstance(
        h, (str, bytes)))


def _is_factors(h) -> bool:
    return isinstance(h, (Factors, Mapping))


def _draw_sample(scene: _Scene, sample, digits: int) -> None:
    _apply_sample(scene, sample, digits)


def _draw_factors(scene: _Scene, factors, digits: int) -> None:
    if not isinstance(factors, Factors):
        factors = Factors(factors)
    _apply_kept(scene, factors.factors, str(factors.name), digits)


def _draw_part(scene: _Scene, part: Part, digits: int) -> None:
    g = scene.g
    try:
        members = {g.index(v) for v in part.vertices}
    except TypeError:
        raise TypeError(f"Part(vertices=...) lists vertex names or numbers, not "
                        f"{type(part.vertices).__name__}") from None
    for v in members:
        scene.nodes[v].border, scene.nodes[v].penwidth = part.color, PATH_WIDTH
    for edge in scene.edges:
        if edge.v in members:
            edge.colors.append(part.color)
            edge.fontcolor = part.color
    scene.keys.append(_Key(str(part.label), part.color, penwidth=PATH_WIDTH))


def _draw_paths(scene: _Scene, paths, digits: int) -> None:
    if not isinstance(paths, Paths):
        paths = Paths(paths)
    _apply_paths(scene, paths.paths, digits, paths.labels, paths.colors)


#: The highlights render knows, in the order they are laid over the picture:
#: (name, recognise, draw).  Adding a kind of highlight is one more entry: a
#: test that recognises the object and a function that marks up the scene.
HIGHLIGHTS = [
    ("sample", _is_sample, _draw_sample),
    ("factors", _is_factors, _draw_factors),
    ("step", _is_step, lambda scene, step, digits: _apply_step(scene, step, digits)),
    ("part", lambda h: isinstance(h, Part), _draw_part),
    ("paths", _is_paths, _draw_paths),
]


def _kind_of(h) -> str:
    for name, recognise, _ in HIGHLIGHTS:
        if recognise(h):
            return name
    raise TypeError(f"render cannot draw a {type(h).__name__} as a highlight; pass a path "
                    f"sample (minirad.sample_paths), an elimination Step or Eliminating(v), "
                    f"a path or a list of paths (or Paths(...)), vertex factors (a mapping "
                    f"or Factors(...)), or Part(vertices) to colour")


def _settle(highlights) -> tuple:
    """The highlights as a tuple (an iterator of paths is read once, here)."""
    settled = []
    for h in highlights:
        if isinstance(h, Iterator):
            h = list(h)
        elif isinstance(h, Paths) and isinstance(h.paths, Iterator):
            h = Paths(list(h.paths), h.labels, h.colors)
        settled.append(h)
    return tuple(settled)


def _scene(g, highlights=(), *, show_ops=False, show_values=False, edge_labels=True,
           digits=4, levels=None, title=None, legend=None, positions=None,
           max_vertices=MAX_VERTICES, batch=None) -> _Scene:
    if not isinstance(g, LCG):
        raise TypeError(f"render draws an LCG, not {type(g).__name__}")
    if isinstance(digits, bool) or not isinstance(digits, int) or digits < 1:
        raise ValueError(f"digits must be a positive integer, not {digits!r}")
    if g.n_vertices > max_vertices:
        raise ValueError(
            f"the graph has {g.n_vertices} vertices, more than max_vertices={max_vertices} "
            f"that can be read in one picture; pass max_vertices={g.n_vertices} to draw it "
            f"anyway, or render a smaller subgraph")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)
                              or batch < 1):
        raise ValueError(f"batch is the number of examples in the batch (a positive int), "
                         f"not {batch!r}")
    scene = _base_scene(g, show_ops, show_values, edge_labels, digits, levels, title, batch)
    if positions is not None:
        missing = [name for name in g.names if name not in positions]
        if missing:
            raise ValueError(f"positions= places {len(positions)} vertices but not "
                             f"{', '.join(missing[:5])}; give every vertex's (x, y)")
        scene.positions = dict(positions)  # all of them: they fix the picture's frame
    by_kind = {}
    for h in highlights:
        kind = _kind_of(h)
        if kind in by_kind:
            raise ValueError(f"two {kind} highlights; draw one of each kind per picture "
                             f"(several paths go in one list)")
        by_kind[kind] = h
    if "sample" in by_kind and "factors" in by_kind:
        raise ValueError("a path sample (edges drawn by path sampling) and vertex factors (a "
                         "sample of vertices) label the same edges; draw them in two pictures")
    for kind, _, draw in HIGHLIGHTS:
        if kind in by_kind:
            draw(scene, by_kind[kind], digits)
    highlighted = bool(scene.keys)
    if legend if legend is not None else highlighted:
        scene.keys = _kind_keys(g) + scene.keys
    else:
        scene.keys = []
    for edge in scene.edges:
        if not edge.colors:
            edge.colors = [DIM if scene.dim_plain_edges else INK]
            if scene.dim_plain_edges and edge.fontcolor == INK:
                edge.fontcolor = "#777777"
    return scene


# --------------------------------------------------------------- graphviz
class Drawing(graphviz.Digraph):
    """A :class:`graphviz.Digraph` that remembers what it draws.

    Knowing the graph and its highlights lets :func:`save_drawing` and Jupyter fall
    back to :func:`draw_matplotlib` when the ``dot`` program is missing.
    graphviz's own methods keep their meaning and signatures (``.save`` writes
    the DOT text, ``.render`` runs ``dot``): a picture by its extension is
    :func:`save_drawing` ``(drawing, path)``.
    """

    lcg: LCG | None = None
    highlights: tuple = ()
    options: dict | None = None

    def copy(self):
        twin = super().copy()
        twin.lcg, twin.highlights = self.lcg, self.highlights
        twin.options = dict(self.options or {})
        return twin

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        if has_dot() or self.lcg is None:
            return super()._repr_mimebundle_(include, exclude, **kwargs)
        _warn_missing_dot()
        buffer = io.StringIO()
        figure = draw_matplotlib(self.lcg, *self.highlights, **self.options)
        figure.savefig(buffer, format="svg")
        return {"image/svg+xml": buffer.getvalue()}


def _dot_text(text: str) -> str:
    """Text for a DOT label: backslashes doubled (they start escapes), lines
    joined with DOT's centred line break, and always quoted (``<lambda>`` would
    otherwise be read as an HTML label)."""
    return graphviz.nohtml("\\n".join(line.replace("\\", "\\\\") for line in text.split("\n")))


def _node_id(g: LCG):
    """Vertex names as DOT ids, unless a name would be misread (``a:b`` is a port);
    quoted, since a name in angle brackets would be read as HTML."""
    if any(":" in name or "\\" in name for name in g.names):
        return lambda v: f"n{v}"
    return lambda v: graphviz.nohtml(g.names[v])


def _node_attrs(node: _Node) -> dict[str, str]:
    style = ["filled"] + (["dashed"] if node.dashed else [])
    if node.kind == INPUT:
        style.append("rounded")
    attrs = {"label": _dot_text("\n".join(node.lines)), "shape": SHAPE[node.kind],
             "style": ",".join(style), "fillcolor": node.fill, "color": node.border,
             "fontcolor": node.fontcolor}
    if node.penwidth != 1.0:
        attrs["penwidth"] = f"{node.penwidth:g}"
    return attrs


def _edge_attrs(edge: _Edge) -> dict[str, str]:
    attrs = {}  # the colour is set per strand
    if edge.label:
        attrs["label"] = _dot_text(edge.label)
        attrs["fontcolor"] = edge.fontcolor
    if edge.penwidth != 1.0:
        attrs["penwidth"] = f"{edge.penwidth:g}"
    if edge.dashed:
        attrs["style"] = "dashed"
    if edge.proposed:
        attrs["constraint"] = "false"  # a proposal must not move the vertices about
    return attrs


def _legend_html(keys: list[_Key]) -> str:
    rows = []
    for key in keys:
        text = html.escape(key.text).replace("\n", '<br align="left"/>')
        if key.edge:
            glyph = "‒ ‒ ‒" if key.dashed else ("━━━" if key.penwidth > 1.5 else "───")
            swatch = f'<td><font color="{key.color}">{glyph}</font></td>'
        else:
            style = ' style="dashed"' if key.dashed else (' style="rounded"'
                                                          if key.shape == "box" else "")
            swatch = (f'<td bgcolor="{key.fill}" border="1" color="{key.color}"{style}>'
                      f'&nbsp;&nbsp;&nbsp;&nbsp;</td>')
        rows.append(f'<tr>{swatch}<td align="left">{text}</td></tr>')
    return ('<<table border="0" cellborder="0" cellspacing="3" cellpadding="2">'
            + "".join(rows) + "</table>>")


def _to_dot(scene: _Scene) -> Drawing:
    g = scene.g
    node_id = _node_id(g)
    dot = Drawing(name="lcg", graph_attr={"rankdir": "BT", "nodesep": "0.45", "ranksep": "0.55",
                                          "fontname": FONT, "newrank": "true"},
                  node_attr={"fontname": FONT, "fontsize": "12", "margin": "0.08,0.04"},
                  edge_attr={"fontname": FONT, "fontsize": "10", "arrowsize": "0.7"})
    if scene.title:
        dot.attr(label=_dot_text(scene.title), labelloc="t", fontsize="14")
    for v, node in enumerate(scene.nodes):
        dot.node(node_id(v), **_node_attrs(node))
    # one row per level, as in the paper's Figure 1
    for level in sorted(set(scene.levels)):
        _same_rank(dot, [node_id(v) for v, lv in enumerate(scene.levels) if lv == level])
    for edge in scene.edges:
        attrs = _edge_attrs(edge)
        if scene.positions is not None and "label" in attrs:
            # pinned vertices: neato would put the label on its edge's midpoint, over
            # whatever is there; _pin places it as a node beside the edge instead
            attrs.pop("label")
            attrs.pop("fontcolor", None)
        # an edge on several paths: one parallel strand per path, which dot
        # spreads apart (a "red:blue" colour list draws the strands touching);
        # the label goes on the first strand only
        for i, color in enumerate(edge.colors):
            strand = dict(attrs, color=color)
            if i > 0:
                strand.pop("label", None)
                strand.pop("fontcolor", None)
            dot.edge(node_id(edge.u), node_id(edge.v), **strand)
    # keep inputs (Jacobian columns) and outputs (rows) in their order, left to right
    for ends in (g.inputs, g.outputs):
        for a, b in zip(ends, ends[1:]):
            if scene.levels[a] == scene.levels[b]:
                dot.edge(node_id(a), node_id(b), style="invis")
    if scene.positions is not None:
        _pin(dot, scene)
        return dot
    if scene.keys:
        legend = "legend" if "legend" not in g.names else "__legend__"
        # the legend sits under the graph, below the middle of its bottom row
        bottom = [node_id(v) for v, lv in enumerate(scene.levels) if lv == min(scene.levels)]
        _legend_column(dot, scene.keys, legend, bottom[len(bottom) // 2])
    return dot


def _legend_column(dot: graphviz.Digraph, keys: list[_Key], legend: str, beside: str) -> None:
    """The legend as a framed box under the graph: each kind of vertex drawn in its own
    shape with its meaning written inside, as the picture draws them (a table cannot
    draw an ellipse or an octagon), side by side in one row, and the edge samples in a
    table under them.  ``beside`` is a vertex of the graph's bottom row."""
    with dot.subgraph(name=f"cluster_{legend}") as box:
        box.attr(label="legend", labelloc="b", fontsize="10", color="#c8c8c8",
                 style="rounded", fontcolor="#555555")
        row = [f"{legend}_{i}" for i, key in enumerate(k for k in keys if not k.edge)]
        for name, key in zip(row, (k for k in keys if not k.edge)):
            box.node(name, **_key_vertex(key, _wrap(key.text, 22)))
        _same_rank(box, row)
        for a, b in zip(row, row[1:]):  # in the order given, left to right
            box.edge(a, b, style="invis")
        edge_keys = [key for key in keys if key.edge]
        if edge_keys:
            box.node(f"{legend}_edges", label=_legend_html(edge_keys), shape="none",
                     margin="0", fontsize="10")
            if row:
                box.edge(f"{legend}_edges", row[len(row) // 2], style="invis")
    # the whole box one rank below the graph's bottom row
    top = row[len(row) // 2] if row else f"{legend}_edges"
    dot.edge(top, beside, style="invis")


def _key_vertex(key: _Key, text: str) -> dict[str, str]:
    """DOT attributes of a legend entry drawn as a vertex of the key's shape."""
    style = ["filled"] + (["dashed"] if key.dashed else []) + (
        ["rounded"] if key.shape == "box" else [])
    return dict(label=_dot_text(text), shape=key.shape, style=",".join(style),
                fillcolor=key.fill or "#ffffff", color=key.color, fontcolor=INK,
                # dot doubles the octagon's line itself; the thick border is matplotlib's
                penwidth="1" if key.shape == "doubleoctagon" else f"{key.penwidth:g}",
                fontsize="10", margin="0.06,0.03")


def _wrap(text: str, width: int) -> str:
    """Break ``text`` into lines of about ``width`` characters, at spaces."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def sample_title(g: LCG, sample, heading: str = "One Algorithm 1 sample",
                 digits: int = 4) -> str:
    """A two-line title for a drawing of ``sample``: what it stores, then its
    estimate against the exact Jacobian (entry by entry for up to four
    entries, else the relative error and the worst entry).

    >>> from minirad import examples
    >>> from minirad.randomized.sampling import sample_paths
    >>> print(sample_title(examples.figure1(), sample_paths(examples.figure1(), 1, rng=0)))
    One Algorithm 1 sample: 5 of 8 edges, 6 of 7 vertices stored
    estimate (dy/dx1, dy/dx2) = (26.88, 13.44); exact = (26.88, 0.569)
    """
    from ..exact.jacobians import jacobian
    from ..graph.scalarize import entry_names

    exact, estimate = jacobian(g), np.asarray(sample.jacobian)
    head = (f"{heading}: {sample.edges_stored} of {sample.full_edges} edges, "
            f"{sample.vertices_stored} of {sample.full_vertices} vertices stored")
    # an array vertex by its entries (W[2,0]), as the matrix's rows and columns are
    rows, columns = ([name for v in vertices for name in entry_names(g.names[v], g.shape(v))]
                     for vertices in (g.outputs, g.inputs))
    names = [f"d{y}/d{x}" for y in rows for x in columns]
    if len(names) <= 4:
        shown = ", ".join(names)
        return (f"{head}\nestimate ({shown}) = "
                f"({', '.join(_fmt(x, digits) for x in estimate.ravel())}); exact = "
                f"({', '.join(_fmt(x, digits) for x in exact.ravel())})")
    error = np.abs(estimate - exact).ravel()
    worst = int(np.argmax(error))
    scale = np.linalg.norm(exact)
    relative = f"{np.linalg.norm(estimate - exact) / scale:.3g}" if scale > 0 else "undefined"
    return (f"{head}\nrelative error of the estimate {relative}; worst entry {names[worst]}: "
            f"{_fmt(estimate.ravel()[worst], digits)} (exact {_fmt(exact.ravel()[worst], digits)})")


def _pin(dot: Drawing, scene: _Scene) -> None:
    """Keep every vertex where ``scene.positions`` puts it: neato with pinned
    positions instead of dot's layered layout (which moves vertices about as
    edges come and go), edges routed around the vertices; the legend, if
    any, to the right of the vertices, its bottom level with theirs."""
    g = scene.g
    node_id = _node_id(g)
    dot.engine = "neato"
    dot.graph_attr.update(splines="true", overlap="true", inputscale="72", esep="+4")
    for v, name in enumerate(g.names):
        x, y = scene.positions[name]
        dot.node(node_id(v), pos=f"{x:.1f},{y:.1f}!")
    # two invisible corners: every picture pinned to the same positions gets the same
    # frame, so pictures of a sequence line up vertex for vertex
    xs, ys = zip(*scene.positions.values())
    for corner, (x, y) in enumerate(((min(xs) - 40, min(ys) - 25), (max(xs) + 40, max(ys) + 25))):
        dot.node(f"__corner{corner}", label="", style="invis", width="0", height="0",
                 pos=f"{x:.1f},{y:.1f}!")
    for e, (x, y, edge) in enumerate(_edge_label_spots(scene)):
        dot.node(f"__label{e}", label=_dot_text(edge.label), shape="plaintext",
                 fontsize="10", fontcolor=edge.fontcolor, margin="0", width="0", height="0",
                 pos=f"{x:.1f},{y:.1f}!")
    if scene.keys:
        vertices = [spot for name, spot in scene.positions.items()
                    if not name.startswith("__frame")]
        left = max(x for x, _ in vertices) + 70
        y = min(y for _, y in vertices) - 12
        legend = "legend" if "legend" not in g.names else "__legend__"
        # bottom-up as in _legend_column: the edge samples, then a vertex of each kind
        edge_keys = [key for key in scene.keys if key.edge]
        if edge_keys:
            width = max(len(k.text) for k in edge_keys) * 5.6 + 50
            height = 19 * len(edge_keys) + 8
            dot.node(f"{legend}_edges", label=_legend_html(edge_keys), shape="none",
                     margin="0", fontsize="10", pos=f"{left + width / 2:.1f},{y + height / 2:.1f}!")
            y += height + 16
        for i, key in enumerate(key for key in scene.keys if not key.edge):
            text = _wrap(key.text, 22)
            width, height = _text_box(text.split("\n"), 10)
            grow = 1.0 if key.shape == "box" else 1.45  # an ellipse or octagon around the text
            width, height = max(54, (width + 16) * grow), max(36, (height + 8) * grow)
            dot.node(f"{legend}_{i}", **_key_vertex(key, text),
                     pos=f"{left + width / 2:.1f},{y + height / 2:.1f}!")
            y += height + 16


def _text_box(lines: list[str], size: float) -> tuple[float, float]:
    """Rough width and height in points of text at ``size`` points (Helvetica)."""
    return max(len(line) for line in lines) * 0.56 * size, 1.2 * size * len(lines)


def _edge_label_spots(scene: _Scene):
    """(x, y, edge) for each labelled edge of a pinned scene: beside the
    straight line from tail to head, at the first of a few places along it
    (middle first) and on either side whose box overlaps no vertex, no label
    placed before and no other edge."""
    g, at = scene.g, scene.positions
    point = {v: np.array(at[name], dtype=float) for v, name in enumerate(g.names)}
    boxes = []  # (centre, half width, half height) of what a label must not cover
    for v, node in enumerate(scene.nodes):
        w, h = _text_box(node.lines, 12)
        boxes.append((point[v], max(w + 24, 54) / 2 + 10, max(h + 12, 36) / 2 + 10))
    segments = [(point[e.u], point[e.v]) for e in scene.edges]

    def clear(centre, hw, hh, own):
        for c, bw, bh in boxes:
            if abs(centre[0] - c[0]) < hw + bw and abs(centre[1] - c[1]) < hh + bh:
                return False
        for i, (a, b) in enumerate(segments):
            if i == own:
                continue
            # the box, grown by a margin, must not reach the segment: sample along it
            for t in np.linspace(0, 1, 25):
                q = a + t * (b - a)
                if abs(q[0] - centre[0]) < hw + 3 and abs(q[1] - centre[1]) < hh + 3:
                    return False
        return True

    for i, edge in enumerate(scene.edges):
        if not edge.label:
            continue
        hw, hh = (d / 2 for d in _text_box(edge.label.split("\n"), 10))
        a, b = segments[i]
        direction = (b - a) / max(np.linalg.norm(b - a), 1e-9)
        normal = np.array([-direction[1], direction[0]])
        # distance from the line to the box centre, so that the box just clears the line
        gap = abs(normal[0]) * hw + abs(normal[1]) * hh + 4
        choices = [a + t * (b - a) + side * gap * normal
                   for t in (0.5, 0.4, 0.6, 0.3, 0.7, 0.22, 0.78) for side in (1, -1)]
        spot = next((c for c in choices if clear(c, hw, hh, i)), choices[0])
        boxes.append((spot, hw, hh))
        yield float(spot[0]), float(spot[1]), edge


@takes_graph_or_function
def layout_positions(g: LCG, **options) -> dict:
    """Where dot puts each vertex of ``render(g, **options)``: name -> (x, y)
    in points.  Pass it as ``positions=`` to draw related graphs (the steps
    of an elimination) with every vertex in the same place.  Without the
    ``dot`` program: where :func:`draw_matplotlib` puts them, in points too.

    >>> from minirad import examples
    >>> spots = layout_positions(examples.lecture())
    >>> spots["x1"][1] < spots["v3"][1] < spots["y"][1]  # bottom-up
    True
    """
    import json

    if not has_dot():
        scene = _scene(g, **dict(options, legend=False))
        layout, unit = _layout(scene), 72 * _unit_inches(scene)
        return {name: (layout.x["v", v] * unit, layout.y["v", v] * 72 * _ROW_INCHES)
                for v, name in enumerate(g.names)}
    drawing = render(g, **dict(options, legend=False))
    # wider than dot's own spacing: edges created later (fill-in) need room between vertices
    drawing.graph_attr.update(nodesep="1.1", ranksep="0.75")
    laid_out = json.loads(drawing.pipe(format="json").decode("utf-8"))
    ids = {node_id: name for node_id, name in
           zip(map(_node_id(g), range(g.n_vertices)), g.names)}
    spots = {}
    for obj in laid_out.get("objects", []):
        if obj.get("name") in ids and "pos" in obj:
            x, y = (float(c) for c in obj["pos"].split(","))
            spots[ids[obj["name"]]] = (x, y)
    return spots


def _same_rank(dot: graphviz.Digraph, members: list[str]) -> None:
    with dot.subgraph() as row:
        row.attr(rank="same")
        for member in members:
            row.node(member)


@takes_graph_or_function
def render(g: LCG, *highlights, show_ops: bool = False, show_values: bool = False,
           edge_labels: bool = True, digits: int = 4, title: str | None = None,
           legend: bool | None = None, levels=None, max_vertices: int = MAX_VERTICES,
           positions=None, batch: int | None = None) -> Drawing:
    """Draw ``g`` bottom-up (inputs at the bottom) as a :class:`graphviz.Digraph`.

    A graph of numbers shows each edge's partial.  A graph with array vertices
    shows each array's shape beside its name (``h1 ∈ R^(3×5)``) and, on each
    edge, its Jacobian block's short name and the bytes the backward pass keeps
    for it (as :func:`minirad.retained_memory` counts them, with the reason when
    it keeps nothing); its title says what the whole backward pass retains.
    Random matrix injections recorded in ``g.injections`` are drawn on either
    kind of graph: the injected vertex with a red border, the edges carrying the
    projection dashed in red with its k.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    *highlights : PathSample, path, Step, mapping or Part
        Results to lay over the picture, recognised by type (at most one of
        each kind; see :data:`HIGHLIGHTS`):

        * a path sample (:func:`minirad.randomized.sampling.sample_paths` on ``g``):
          drawn edges in red with their draw count and sampled weight, the
          others dashed grey, skipped vertices grey;
        * a path (a sequence of vertex names or numbers) or a list of paths,
          each in its own colour (an edge on several paths gets one strand
          per path); :class:`Paths` adds legend names and colours.  A pair
          ``(source, target)`` that is not an edge stands for every path
          from ``source`` to ``target`` (refused beyond
          :data:`MAX_PATHS_BETWEEN` paths);
        * an elimination :class:`~minirad.exact.elimination.Step` (from
          :func:`minirad.exact.elimination.eliminate`, drawn on the graph before
          it) or :class:`Eliminating` ``(vertex)``: the vertex, its edges, the
          fill-in edges it will create (dashed) and the edges it will update;
        * vertex factors, as random matrix injection draws them: a mapping
          vertex -> factor or :class:`Factors`.  Listed vertices show their
          factor and scale the edges into them; intermediates not listed are
          dropped (grey), inputs and outputs not listed keep factor 1; an
          edge between kept vertices is bold.  Not combined with a sample;
        * a :class:`Part` of the graph: its vertices and the edges into them
          in one colour, with a legend entry.
    show_ops : bool, optional
        Add each vertex's operation (``v2 = exp(x1)``).
    show_values : bool, optional
        Add each vertex's primal value.
    edge_labels : bool, optional
        Label edges with their partials, or an array edge with its block and
        bytes (default True).
    digits : int, optional
        Significant digits of the numbers shown (default 4).
    title : str, optional
        The title above the picture.
    legend : bool, optional
        Draw a legend (default: whenever a highlight is on).
    levels : mapping, optional
        Fix the row of some vertices: name -> int.
    max_vertices : int, optional
        Larger graphs are refused: they cannot be read in one picture (default 200).
    positions : mapping, optional
        Pin every vertex at a point, name -> (x, y) in points, y upwards, e.g.
        from :func:`layout_positions` of a related graph: the pictures of an
        elimination keep each vertex in one place this way.  Points under other
        names only widen the picture's frame.
    batch : int, optional
        The number of examples in the batch: the title adds the memory per
        example.

    Returns
    -------
    Drawing
        A :class:`graphviz.Digraph` (the DOT text is ``.source``; no ``dot``
        program is needed for it) that knows its graph and highlights; in
        Jupyter it shows itself.

    Raises
    ------
    ValueError
        For more than ``max_vertices`` vertices, a highlight that does not fit
        the graph (a path through a non-edge, a sample of another graph, a step
        on another graph), two highlights of one kind, or bad options.
    TypeError
        For a highlight of no known kind, or a ``g`` that is not an LCG.

    See Also
    --------
    save_drawing : Write it as svg, png, pdf or DOT.
    render_elimination : One picture per elimination step.
    minirad.explore : A page to step through the graph in a browser.

    Notes
    -----
    :func:`save_drawing` and Jupyter fall back to :func:`draw_matplotlib` where
    graphviz's ``dot`` program is missing, with a warning once.  The colours are
    the Okabe-Ito palette; every highlight also differs by line style or weight.

    Examples
    --------
    >>> from minirad import examples
    >>> g = examples.figure1()
    >>> dot = render(g, [("x1", "v2", "y"), ("x1", "v2", "v5", "y")])
    >>> for line in dot.source.splitlines():  # x1 -> v2 lies on both paths
    ...     if "x1 -> v2" in line:
    ...         print(line.strip())
    x1 -> v2 [label=2.718 color="#0072B2" fontcolor="#222222" penwidth=2.2]
    x1 -> v2 [color="#D55E00" penwidth=2.2]
    >>> both = render(g, ("x1", "y"))  # not an edge: every path from x1 to y
    >>> "path 1: x1 → v2 → v5 → y" in both.source, "path 2: x1 → v2 → y" in both.source
    (True, True)
    >>> render(g, [("x1", "v3", "y")])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: path 1 steps from x1 to v3, which is not an edge of the graph; ...
    """
    highlights = _settle(highlights)
    options = dict(show_ops=show_ops, show_values=show_values, edge_labels=edge_labels,
                   digits=digits, title=title, legend=legend, levels=levels,
                   positions=positions, max_vertices=max_vertices, batch=batch)
    dot = _to_dot(_scene(g, highlights, **options))
    dot.lcg, dot.highlights, dot.options = g, highlights, options
    return dot  # (no warning about a missing dot here: the DOT text needs none)


# -------------------------------------------------------------------- save
def _format_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in _FORMATS:
        raise ValueError(f"cannot tell the format of {path!r} from its extension; use one of "
                         f"{', '.join('.' + f for f in _FORMATS)}")
    return ext


def save_drawing(drawing, path, dpi: int = 150, timeout: float | None = None) -> str:
    """Save a drawing, choosing the format from the extension of ``path``.

    Parameters
    ----------
    drawing : Drawing, graphviz.Digraph or matplotlib.figure.Figure
        What :func:`render` returns (or any graphviz graph), or a Figure.
    path : str or os.PathLike
        Where to write: ``.png``, ``.svg``, ``.pdf``, or ``.dot``/``.gv`` for the
        DOT text.
    dpi : int, optional
        Dots per inch of a png (default 150).
    timeout : float, optional
        Seconds the ``dot`` program may take (it can take minutes on a large
        graph).

    Returns
    -------
    str
        The path written.

    Raises
    ------
    ValueError
        For an extension of no known format, or a Figure asked for DOT text.
    TypeError
        For a ``drawing`` that is neither a graphviz graph nor a Figure.
    RuntimeError
        Without the ``dot`` program, for a graphviz graph that
        :func:`render` did not make (a :class:`Drawing` falls back to matplotlib).
    TimeoutError
        When ``dot`` takes longer than ``timeout``; nothing is written.

    See Also
    --------
    render : What to save.
    minirad.save_graph : Save the graph itself.

    Notes
    -----
    Without the ``dot`` program a :class:`Drawing` is drawn by
    :func:`draw_matplotlib` instead.  Files drawn by matplotlib carry no
    timestamp or version, so saving the same picture twice gives the same bytes.

    Examples
    --------
    >>> import os, tempfile
    >>> from minirad import examples
    >>> folder = tempfile.mkdtemp()
    >>> path = save_drawing(render(examples.lab()), os.path.join(folder, "lab.dot"))
    >>> open(path).read().startswith("digraph lcg {")
    True
    >>> save_drawing(render(examples.lab()), "lab.jpeg")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cannot tell the format of 'lab.jpeg' from its extension; use one of .png, ...
    """
    path = os.fspath(path)
    fmt = _format_of(path)
    from matplotlib.figure import Figure

    if isinstance(drawing, Figure):
        if fmt in ("dot", "gv"):
            raise ValueError(f"a matplotlib Figure has no DOT text; save it as .png, .svg or "
                             f".pdf, not {path!r}")
        return _save_figure(drawing, path, fmt, dpi)
    if not isinstance(drawing, (graphviz.Digraph, graphviz.Graph, graphviz.Source)):
        raise TypeError(f"save_drawing takes what render() returns (a graphviz graph) or a "
                        f"matplotlib "
                        f"Figure, not {type(drawing).__name__}")
    if fmt in ("dot", "gv"):
        text = drawing.source.encode("utf-8")
        write_atomically(path, lambda f: f.write(text))
    elif has_dot():
        sized = drawing.copy()
        if fmt == "png" and hasattr(sized, "graph_attr"):
            sized.graph_attr["dpi"] = str(dpi)  # dot's default 96 dpi looks blurry
        data = _run_dot(sized, fmt, timeout)
        write_atomically(path, lambda f: f.write(data))
    elif getattr(drawing, "lcg", None) is not None:
        _warn_missing_dot()
        _save_figure(draw_matplotlib(drawing.lcg, *drawing.highlights, **drawing.options),
                     path, fmt, dpi)
    else:
        raise RuntimeError(f"saving {path!r} needs the graphviz 'dot' program, which is not on "
                           f"the PATH, and this graph was not made by minirad.render (which "
                           f"could fall back to matplotlib); install graphviz or save as .dot")
    return path


def _run_dot(drawing, fmt: str, timeout: float | None) -> bytes:
    """The ``dot`` program's output, stopped after ``timeout`` seconds."""
    if timeout is None:
        return drawing.pipe(format=fmt)
    try:
        done = subprocess.run(["dot", f"-T{fmt}"], input=drawing.source.encode("utf-8"),
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        size = f"{drawing.lcg.n_vertices} vertices" if getattr(drawing, "lcg", None) else \
            "the graph"
        raise TimeoutError(f"the graphviz 'dot' program did not finish drawing {size} in "
                           f"{timeout:g} s, so nothing was written; draw a smaller subgraph, "
                           f"save the DOT text (.dot) instead, or allow more time") from None
    if done.returncode != 0:
        raise OSError(f"the graphviz 'dot' program failed: "
                      f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _save_figure(figure, path: str, fmt: str, dpi: int) -> str:
    """Save a matplotlib Figure with no timestamp or version in the file."""
    import matplotlib

    metadata = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None},
                "pdf": {"CreationDate": None, "Producer": None, "Creator": None}}[fmt]
    with matplotlib.rc_context({"svg.hashsalt": "minirad"}):  # else svg ids are random
        write_atomically(path, lambda f: figure.savefig(f, format=fmt, dpi=dpi,
                                                        metadata=metadata))
    return path


# ------------------------------------------------------------- matplotlib
@dataclass
class _Layout:
    """Positions for the matplotlib drawing.

    An edge that spans several rows is routed through one "dummy" slot per
    row it crosses (the layered layout of Sugiyama et al., as dot does), so
    it never runs through a vertex; ``routes[e]`` lists the points of
    scene edge ``e`` from tail to head.
    """

    x: dict
    y: dict
    routes: list
    width: float
    height: int


def _layout(scene: _Scene) -> _Layout:
    rows: dict[int, list] = {}
    for v, level in enumerate(scene.levels):
        rows.setdefault(level, []).append(("v", v))
    chains, lower, upper = [], {}, {}
    for e, edge in enumerate(scene.edges):
        low, high = scene.levels[edge.u], scene.levels[edge.v]
        chain = [("v", edge.u)]
        for level in range(low + 1, high):
            dummy = ("d", e, level)
            rows.setdefault(level, []).append(dummy)
            chain.append(dummy)
        chain.append(("v", edge.v))
        chains.append(chain)
        for a, b in zip(chain, chain[1:]):
            lower.setdefault(b, []).append(a)
            upper.setdefault(a, []).append(b)
    x: dict = {}

    def place(row):
        # a vertex takes a unit of width, a dummy (a passing edge) half of one
        sizes = [1.0 if slot[0] == "v" else 0.5 for slot in row]
        edges = np.concatenate([[0.0], np.cumsum(sizes)])
        centre = edges[-1] / 2
        for slot, left, size in zip(row, edges, sizes):
            x[slot] = left + size / 2 - centre

    for row in rows.values():
        place(row)
    levels = sorted(rows)
    # barycentre sweeps, up then down: each slot moves under the mean of its neighbours
    for sweep in range(6):
        near = lower if sweep % 2 == 0 else upper
        for level in levels if sweep % 2 == 0 else levels[::-1]:
            row = rows[level]
            row.sort(key=lambda slot: np.mean([x[o] for o in near[slot]])
                     if near.get(slot) else x[slot])
            _keep_order(row, scene.g)
            place(row)
    y = {slot: float(slot[2] if slot[0] == "d" else scene.levels[slot[1]]) for slot in x}
    width = max(sum(1.0 if s[0] == "v" else 0.5 for s in row) for row in rows.values())
    routes = [[(x[s], y[s]) for s in chain] for chain in chains]
    return _Layout(x, y, routes, width, max(levels, default=0) + 1)


def _keep_order(row: list, g: LCG) -> None:
    """Put the inputs (Jacobian columns) and outputs (rows) of a row back in
    their order, in the places the sort gave them, as the DOT drawing does."""
    for ends in (g.inputs, g.outputs):
        rank = {v: i for i, v in enumerate(ends)}
        places = [i for i, slot in enumerate(row) if slot[0] == "v" and slot[1] in rank]
        ordered = sorted((row[i] for i in places), key=lambda slot: rank[slot[1]])
        for i, slot in zip(places, ordered):
            row[i] = slot


def _outline(shape: str, x0: float, y0: float, width: float, height: float, inset: float = 0.0):
    """The outline of a vertex of ``shape`` (dot's names) filling the box (x0, y0, width,
    height): a rounded box, an ellipse, or a double octagon (two outlines, ``inset``
    apart). The matplotlib drawing and its legend draw the same outlines as dot."""
    from matplotlib.path import Path

    cx, cy, a, b = x0 + width / 2, y0 + height / 2, width / 2, height / 2
    if shape == "ellipse":
        circle = Path.unit_circle()
        return Path(circle.vertices * [a, b] + [cx, cy], circle.codes)
    if shape == "doubleoctagon":
        turn = np.pi / 8 + np.arange(8) * np.pi / 4
        corners = np.column_stack([np.cos(turn), np.sin(turn)]) / np.cos(np.pi / 8)
        rings = []
        for shrink in (0.0, inset):
            ring = corners * [max(a - shrink, 0.0), max(b - shrink, 0.0)] + [cx, cy]
            rings.append(Path(np.vstack([ring, ring[:1]]), closed=True))
        return Path.make_compound_path(*rings)
    r = min(0.25 * min(width, height), 6.0)  # a box with rounded corners
    return Path.make_compound_path(Path(np.array([
        (x0 + r, y0), (x0 + width - r, y0), (x0 + width, y0), (x0 + width, y0 + r),
        (x0 + width, y0 + height - r), (x0 + width, y0 + height), (x0 + width - r, y0 + height),
        (x0 + r, y0 + height), (x0, y0 + height), (x0, y0 + height - r), (x0, y0 + r),
        (x0, y0), (x0 + r, y0), (x0 + r, y0)]),
        [Path.MOVETO, Path.LINETO, Path.CURVE3, Path.CURVE3, Path.LINETO, Path.CURVE3,
         Path.CURVE3, Path.LINETO, Path.CURVE3, Path.CURVE3, Path.LINETO, Path.CURVE3,
         Path.CURVE3, Path.CLOSEPOLY]))


class _VertexBox:
    """A matplotlib box style drawing a vertex's shape around its text: the ellipse and
    the octagon pass through the corners of the padded text box, as dot's do."""

    def __init__(self, shape: str, pad: float = 0.35):
        self.shape, self.pad = shape, pad

    def __call__(self, x0, y0, width, height, mutation_size):
        pad = self.pad * mutation_size
        x0, y0, width, height = x0 - pad, y0 - pad, width + 2 * pad, height + 2 * pad
        if self.shape != "box":  # round shapes reach the padded box's corners
            grow = np.sqrt(2.0) if self.shape == "ellipse" else 1.5
            x0 -= width * (grow - 1) / 2
            y0 -= height * (grow - 1) / 2
            width, height = width * grow, height * grow
        return _outline(self.shape, x0, y0, width, height, inset=0.28 * mutation_size)


@takes_graph_or_function
def draw_matplotlib(g: LCG, *highlights, ax=None, **options):
    """Draw ``g`` with matplotlib, with the same highlights and options as :func:`render`.

    The fallback when the graphviz ``dot`` program is missing: vertices in
    rows by topological level (inputs at the bottom), spread out within
    each row, long edges routed around the rows they cross.  Draws into
    ``ax`` if given, else into a new Figure; returns the Figure (it shows
    in Jupyter as a cell's value; this never calls ``plt.show``).

    >>> from minirad import examples
    >>> fig = draw_matplotlib(examples.figure1(), [("x2", "v4", "v5", "y")])
    >>> len(fig.axes), fig.axes[0].get_legend() is not None
    (1, True)
    """
    from .figure import Figure  # shows inline in Jupyter

    scene = _scene(g, _settle(highlights), **options)
    layout = _layout(scene)
    own = ax is None
    if own:
        graph_width = 1.0 + _unit_inches(scene) * layout.width
        # the title and the legend (below the graph, in as many columns as fit) may
        # need more width than the graph: the figure is as wide as the widest of them
        heading = max((len(line) for line in (scene.title or "").split("\n")), default=0)
        columns, legend_width = _legend_columns(scene.keys, max(graph_width, 0.1 * heading))
        width = max(graph_width, 0.6 + 0.095 * heading, legend_width)
        legend_rows = -(-len(scene.keys) // columns) if scene.keys else 0
        height = (0.5 + 0.2 * (scene.title or "").count("\n") + _ROW_INCHES * layout.height
                  + 0.32 * legend_rows)
        figure = Figure(figsize=(width, height), layout="constrained")
        ax = figure.add_subplot()
    boxes = _draw_nodes(ax, scene, layout)
    _draw_edges(ax, scene, layout, boxes)
    ax.set_xlim(-layout.width / 2 - 0.1, layout.width / 2 + 0.1)
    ax.set_ylim(-0.5, layout.height - 0.5)
    ax.set_axis_off()
    if scene.title:
        ax.set_title(scene.title, fontsize=10)
    if scene.keys and own:  # below the graph (the layout makes room for it)
        ax.legend(handles=[_legend_handle(key) for key in scene.keys],
                  handler_map=_legend_handlers(), loc="upper center",
                  bbox_to_anchor=(0.5, 0.0), ncols=columns, fontsize=9, frameon=False,
                  handleheight=1.4, handlelength=2.2, columnspacing=1.6)
    elif scene.keys:
        ax.legend(handles=[_legend_handle(key) for key in scene.keys],
                  handler_map=_legend_handlers(), loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  fontsize=9, frameon=False, handleheight=1.4, handlelength=2.2)
    _place_edge_labels(ax, scene, layout, boxes)
    return ax.figure


def _legend_columns(keys: list[_Key], room: float, fontsize: float = 9) -> tuple[int, float]:
    """How many columns the legend below a drawing takes to fit ``room`` inches (at
    least one), and how wide it then is."""
    if not keys:
        return 1, 0.0
    char = 0.0083 * fontsize  # inches: a character is about 0.6 of the font's size wide
    widths = [10 * char + char * max(len(line) for line in key.text.split("\n"))
              for key in keys]
    for columns in range(len(keys), 0, -1):
        # matplotlib's split: the first len(keys) % columns columns hold one entry more
        rows, longer = divmod(len(keys), columns)
        starts = [c * rows + min(c, longer) for c in range(columns + 1)]
        # each column is as wide as its widest entry
        total = sum(max(widths[starts[c]:starts[c + 1]]) for c in range(columns))
        if total <= room or columns == 1:
            return columns, total


#: inches between the rows of the matplotlib drawing
_ROW_INCHES = 1.1


def _unit_inches(scene: _Scene) -> float:
    """Inches between neighbouring vertices of a row: room for the widest vertex text
    (9.5-point characters about 0.6 of a point size wide), at least 1.5."""
    widest = max((len(line) for node in scene.nodes for line in node.lines), default=0)
    return max(1.5, widest * 9.5 * 0.6 / 72 + 0.45)


def _draw_nodes(ax, scene: _Scene, layout: _Layout) -> dict:
    boxes = {}
    for v, node in enumerate(scene.nodes):
        text = ax.text(layout.x["v", v], layout.y["v", v], "\n".join(node.lines),
                       ha="center", va="center", fontsize=9.5, color=node.fontcolor, zorder=2,
                       bbox=dict(boxstyle=_VertexBox(SHAPE[node.kind]), facecolor=node.fill,
                                 edgecolor=node.border,
                                 linewidth=max(node.penwidth, _BORDER[node.kind]),
                                 linestyle="--" if node.dashed else "-"))
        boxes[v] = text.get_bbox_patch()
    return boxes


def _draw_edges(ax, scene: _Scene, layout: _Layout, boxes: dict) -> None:
    from matplotlib.patches import FancyArrowPatch

    for edge, route in zip(scene.edges, layout.routes):
        strands = len(edge.colors)
        for i, color in enumerate(edge.colors):
            # parallel strands side by side, one per path through the edge
            shift = 0.06 * (i - (strands - 1) / 2)
            points = [(px + shift, py) for px, py in route]
            style = dict(color=color, linewidth=edge.penwidth * 0.8,
                         linestyle="--" if edge.dashed else "-", zorder=3)
            # node boxes are drawn first (zorder 2) and so are sized for the
            # current resolution when the arrows are clipped to them
            ax.add_patch(FancyArrowPatch(points[0], points[1], patchA=boxes[edge.u],
                                         patchB=boxes[edge.v] if len(points) == 2 else None,
                                         arrowstyle="-|>" if len(points) == 2 else "-",
                                         mutation_scale=11, shrinkA=1, shrinkB=1, **style))
            if len(points) > 2:
                ax.plot([p[0] for p in points[1:-1]], [p[1] for p in points[1:-1]],
                        solid_capstyle="round", **style)
                ax.add_patch(FancyArrowPatch(points[-2], points[-1], patchB=boxes[edge.v],
                                             arrowstyle="-|>", mutation_scale=11, shrinkA=0,
                                             shrinkB=1, **style))


def _along(route, t: float):
    """The point a fraction ``t`` of the way along a route (by length), and the
    direction of the route there."""
    points = np.asarray(route, dtype=float)
    steps = np.diff(points, axis=0)
    lengths = np.hypot(steps[:, 0], steps[:, 1])
    at = t * lengths.sum()
    for i, (start, step, length) in enumerate(zip(points, steps, lengths)):
        if at <= length or i == len(steps) - 1:  # the last segment takes what rounding left
            return start + step * min(at / (length or 1.0), 1.0), step / (length or 1.0)
        at -= length


def _overlap(a, b) -> float:
    """The area two display boxes share (0 when apart)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def _passes_through(box, points) -> bool:
    """Whether a route (display points) passes through a box (sampled along each line)."""
    t = np.linspace(0.0, 1.0, 24)[:, None]
    for a, b in zip(points, points[1:]):
        q = a + t * (b - a)
        if np.any((q[:, 0] > box.x0) & (q[:, 0] < box.x1) & (q[:, 1] > box.y0)
                  & (q[:, 1] < box.y1)):
            return True
    return False


def _crossings(box, routes: list, own: int) -> int:
    """How many other edges pass through a label's box."""
    return sum(_passes_through(box, points) for i, points in enumerate(routes) if i != own)


def _place_edge_labels(ax, scene: _Scene, layout: _Layout, boxes: dict) -> None:
    """Each edge label where it covers no vertex and no other label: tried along its
    edge (the middle first), beside the line and on it, measured as drawn; among the
    free places the one fewest other edges pass through, beside its own line if it can
    be (on a white background either way)."""
    labelled = [i for i, edge in enumerate(scene.edges) if edge.label]
    if not labelled:
        return
    figure = ax.figure
    if not hasattr(figure.canvas, "get_renderer"):  # a Figure made without pyplot
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure)
    figure.draw_without_rendering()  # the layout settles: display coordinates are final
    renderer = figure.canvas.get_renderer()
    taken = [box.get_window_extent(renderer).padded(2) for box in boxes.values()]
    to_display = ax.transData.transform
    routes = [to_display(np.asarray(route, dtype=float)) for route in layout.routes]
    for i in labelled:
        edge = scene.edges[i]
        text = ax.text(0, 0, edge.label, ha="center", va="center", fontsize=7.5,
                       color=edge.fontcolor, zorder=4,
                       bbox=dict(boxstyle="round,pad=0.12", facecolor="white",
                                 edgecolor="none"))  # opaque: its own line stops under it
        text.set_in_layout(False)  # placed after the layout: it must not move the axes
        size = text.get_window_extent(renderer)
        half = np.array([size.width, size.height]) / 2 + 3
        best = None
        for rank, t in enumerate((0.45, 0.35, 0.55, 0.25, 0.65, 0.18, 0.75)):
            point, direction = _along(routes[i], t)
            normal = np.array([-direction[1], direction[0]])
            gap = abs(normal[0]) * half[0] + abs(normal[1]) * half[1] + 2
            for side in (0, 1, -1):
                centre = point + side * gap * normal
                box = type(size).from_extents(*(centre - half), *(centre + half))
                # beside its edge rather than on it, unless only the line has room; beside
                # one segment of a bent edge, clear of its other segments too (a label that
                # its own line runs into reads "0:5" for "0.5")
                on_its_line = side == 0 or _passes_through(box, routes[i])
                cost = (sum(_overlap(box, other) for other in taken),
                        _crossings(box, routes, i), on_its_line, rank)
                if best is None or cost < best[0]:
                    best = (cost, centre, box)
        _, centre, box = best
        text.set_position(ax.transData.inverted().transform(centre))
        taken.append(box)


def _legend_handle(key: _Key):
    """A legend entry drawn as the picture draws it: an edge's line, a vertex's shape."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch

    if key.edge:
        return Line2D([], [], color=key.color, linewidth=key.penwidth * 0.8,
                      linestyle="--" if key.dashed else "-", label=key.text)
    # a stand-in that carries the shape; _VertexHandler draws it at the legend's size
    swatch = PathPatch(_outline("box", 0, 0, 1, 1), facecolor=key.fill, edgecolor=key.color,
                       linewidth=key.penwidth, linestyle="--" if key.dashed else "-",
                       label=key.text)
    swatch.minirad_shape = key.shape
    return swatch


def _legend_handlers() -> dict:
    """The legend's handler for vertex swatches: their own shape, filling the entry's box."""
    from matplotlib.legend_handler import HandlerPatch
    from matplotlib.patches import PathPatch

    def shaped(legend, orig_handle, xdescent, ydescent, width, height, fontsize):
        shape = getattr(orig_handle, "minirad_shape", "box")
        return PathPatch(_outline(shape, -xdescent, -ydescent - 0.15 * height, width,
                                  1.3 * height, inset=0.12 * height))

    return {PathPatch: HandlerPatch(patch_func=shaped)}


# ------------------------------------------------------------- elimination
def _step_title(number: int, total: int, step) -> str:
    # two short lines: a long one would set the width of every picture of the sequence
    return (f"step {number}/{total}: eliminate {step.eliminated}\n"
            f"{len(step.predecessors)}×{len(step.successors)} = "
            f"{plural(step.multiplications, 'multiplication')}, "
            f"{plural(step.additions, 'addition')}")


@takes_graph_or_function
def render_elimination(g: LCG, order="markowitz", path_pattern: str | None = None, *,
                       title: str | None = None, **options) -> Drawings:
    """One drawing per vertex elimination step, then the final bipartite graph.

    Parameters
    ----------
    g : LCG or callable
        The graph; or a Python function, followed by the point to trace it at
        (the other arguments then by keyword).
    order : str or list, optional
        A vertex elimination order, as for :func:`minirad.eliminate` (default
        ``"markowitz"``).
    path_pattern : str, optional
        Also save the drawings, e.g. ``"out/step_{:02d}.png"`` (filled with 1, 2, ...).
    title : str, optional
        A heading above every step's title.
    **options
        Other keyword arguments go to :func:`render`.

    Returns
    -------
    Drawings
        A list of :class:`Drawing`: in Jupyter it shows as one strip of all the
        steps.

    Raises
    ------
    ValueError
        As :func:`minirad.eliminate` and :func:`render` raise.

    See Also
    --------
    elimination_strip : The same pictures in one matplotlib Figure.
    minirad.draw.edge_steps.edge_elimination_strip : The pictures of edge steps.
    minirad.eliminate : The steps drawn.

    Notes
    -----
    Each step is drawn on the graph just before it, with the step highlighted
    (the eliminated vertex, its edges, the fill-in it creates, dashed, and the
    edges it updates) and titled with its cost, ``|pred| x |succ|``
    multiplications; vertices keep the rows they have in ``g``, and with ``dot``
    their places too, so the pictures line up.

    Examples
    --------
    >>> from minirad import examples
    >>> drawings = render_elimination(examples.figure1(), "markowitz", title="Figure 1")
    >>> len(drawings), drawings[0].graph_attr["rankdir"]
    (5, 'BT')
    >>> print(drawings[0].options["title"])
    Figure 1
    step 1/4: eliminate v3
    1×1 = 1 multiplication, 1 addition
    """
    from ..exact.elimination import eliminate

    result = eliminate(g, order, keep_graphs=True)
    fixed = dict(zip(g.names, _levels(g)))  # every vertex keeps its row in g
    if has_dot() and "positions" not in options:
        # and its place: dot lays out g once, every step is drawn with those positions
        sizing = {k: options[k] for k in ("show_ops", "show_values", "edge_labels", "digits",
                                          "max_vertices") if k in options}
        options = dict(options, positions=layout_positions(g, **sizing))
    total = len(result.steps)
    head = f"{title}\n" if title else ""
    if "positions" in options:
        # one frame for all the pictures (points that are not vertices only widen it), so
        # that they line up vertex for vertex: as wide as the widest title, and wide enough
        # for an edge label beside the outermost vertices
        titles = [head + _step_title(i, total, step) for i, step in enumerate(result.steps, 1)]
        xs, ys = zip(*options["positions"].values())
        wide = max(max(_text_box(t.split("\n"), 14)[0] for t in titles) * 1.15 / 2 + 10,
                   (max(xs) - min(xs)) / 2 + 110)
        middle, low = (min(xs) + max(xs)) / 2, min(ys)
        options["positions"] = dict(options["positions"], __frame_left__=(middle - wide, low),
                                    __frame_right__=(middle + wide, low))
    drawings = Drawings()
    drawings.keys = _strip_keys(g)  # a strip of them shows this one legend
    for number, (before, step) in enumerate(zip(result.graphs, result.steps), 1):
        drawings.append(render(before, step, levels=fixed,
                               title=head + _step_title(number, total, step), **options))
    done = (f"Jacobian after {plural(total, 'step')}:\n"
            f"{plural(result.multiplications, 'multiplication')}, "
            f"{plural(result.additions, 'addition')}")
    drawings.append(render(result.graphs[-1], levels=fixed, title=head + done, **options))
    if path_pattern is not None:
        for number, drawing in enumerate(drawings, 1):
            save_drawing(drawing, path_pattern.format(number))
    return drawings


@takes_graph_or_function
def elimination_strip(g: LCG, order="markowitz", path=None, ncols: int = 2,
                      dpi: int = 110, *, title: str | None = None, **options):
    """All the pictures of :func:`render_elimination` in one matplotlib Figure.

    See :func:`strip` for the layout; ``title`` goes above all the tiles.
    Saved to ``path`` when given; returns the Figure.

    >>> from minirad import examples
    >>> figure = elimination_strip(examples.lab(), "forward", ncols=2, title="lab graph")
    >>> len(figure.axes), figure.get_suptitle()
    (4, 'lab graph')
    """
    figure = strip(render_elimination(g, order, **options), ncols=ncols, dpi=dpi, title=title)
    if path is not None:
        save_drawing(figure, path, dpi=dpi)
    return figure


def strip(drawings: Sequence[Drawing], ncols: int = 2, dpi: int = 110,
          title: str | None = None):
    """Drawings side by side in one matplotlib Figure, ``ncols`` to a row.

    Uses graphviz when ``dot`` is installed and :func:`draw_matplotlib`
    otherwise.  Every tile is drawn at the same scale, so text has one size
    throughout; ``title`` goes above them all.

    >>> from minirad import examples
    >>> figure = strip([render(examples.lab()), render(examples.figure1())], title="two")
    >>> len(figure.axes), figure.get_suptitle()
    (2, 'two')
    """
    from .figure import Figure

    if isinstance(ncols, bool) or not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols must be a positive integer, not {ncols!r}")
    keys = getattr(drawings, "keys", None)  # Drawings of an elimination: one shared legend
    drawings = list(drawings)
    if not drawings:
        raise ValueError("strip needs at least one drawing")
    if keys:
        # the tiles without their own legends (each would repeat the shared one, small)
        drawings = [render(d.lcg, *d.highlights, **dict(d.options, legend=False))
                    if isinstance(d, Drawing) and d.lcg is not None else d for d in drawings]
    ncols = min(ncols, len(drawings))
    nrows = -(-len(drawings) // ncols)
    if has_dot():
        images = [_png_array(drawing, dpi) for drawing in drawings]
        height = max(image.shape[0] for image in images)
        width = max(image.shape[1] for image in images)
        # each picture centred in a tile of the largest picture's size: one scale for all;
        # the tiles keep only the part that some picture draws on (a margin that every
        # picture leaves blank, such as the room a pinned frame keeps for labels, would
        # only shrink the strip, and its text, on a page)
        offsets = [((height - image.shape[0]) / 2, (width - image.shape[1]) / 2)
                   for image in images]
        drawn = [_drawn_box(image, top, left) for image, (top, left) in zip(images, offsets)]
        top_edge = max(0.0, min(box[0] for box in drawn) - 8)
        bottom_edge = min(float(height), max(box[1] for box in drawn) + 8)
        left_edge = max(0.0, min(box[2] for box in drawn) - 8)
        right_edge = min(float(width), max(box[3] for box in drawn) + 8)
        height, width = bottom_edge - top_edge, right_edge - left_edge
        if title:  # in lines as long as the strip is wide
            title = _wrapped(title, ncols * width / dpi, 18)
        band = 0.3 * (title.count("\n") + 1) + 0.25 if title else 0.0  # inches for the title
        if keys:  # the legend below, in as many columns as fit
            columns, _ = _legend_columns(keys, ncols * width / dpi, fontsize=15)
            foot = 0.2 + 0.36 * -(-len(keys) // columns)  # inches for the legend
        else:
            foot = 0.0
        inches = nrows * height / dpi + band + foot
        figure = Figure(figsize=(ncols * width / dpi, inches), dpi=dpi)
        axes = figure.subplots(nrows, ncols, squeeze=False,
                               gridspec_kw=dict(wspace=0, hspace=0, left=0, right=1,
                                                bottom=foot / inches,
                                                top=1 - band / inches)).ravel()
        for ax, image, (top, left) in zip(axes, images, offsets):
            ax.imshow(image, extent=(left, left + image.shape[1], top + image.shape[0], top))
            ax.set_xlim(left_edge, right_edge)
            ax.set_ylim(bottom_edge, top_edge)
        if title:  # in the band left free above the tiles
            figure.suptitle(title, fontsize=18, y=1 - 0.5 * band / inches, va="center")
        if keys:
            figure.legend(handles=[_legend_handle(key) for key in keys], loc="center",
                          handler_map=_legend_handlers(),
                          bbox_to_anchor=(0.5, 0.5 * foot / inches), ncols=columns,
                          fontsize=15, frameon=False, handlelength=2.4, handleheight=1.3)
    else:
        _warn_missing_dot()
        if not keys:   # tiles with legends of their own beside them: one tile to a row
            ncols, nrows = 1, len(drawings)
        # tiles 5 inches wide (6.5 with a legend beside): shown at a page's width (820 px),
        # matplotlib's labels stay 8 px high or more
        inches = 5.0 * ncols if keys else 6.5
        figure = Figure(figsize=(inches, 5.0 * nrows), layout="constrained")
        axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, drawing in zip(axes, drawings):
            draw_matplotlib(drawing.lcg, *drawing.highlights, ax=ax, **drawing.options)
        if title:  # constrained layout makes room; lines as long as the figure is wide
            figure.suptitle(_wrapped(title, inches, 16), fontsize=16)
        if keys:
            columns, _ = _legend_columns(keys, inches, fontsize=13)
            figure.legend(handles=[_legend_handle(key) for key in keys],
                          handler_map=_legend_handlers(), loc="outside lower center",
                          ncols=columns, fontsize=13, frameon=False,
                          handlelength=2.4, handleheight=1.3)
    for ax in axes:
        ax.set_axis_off()
    return figure


def _wrapped(text: str, inches: float, fontsize: float) -> str:
    """``text`` broken into lines that fit ``inches`` at ``fontsize`` points (a character
    about 0.55 of the font's size wide)."""
    import textwrap

    room = max(20, int(inches * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(line, room) for line in text.split("\n"))


def _strip_keys(g: LCG) -> list[_Key]:
    """The legend of a whole elimination strip: what every step's highlight means."""
    return _kind_keys(g) + [
        _Key("vertex eliminated in the step", STEP_VERTEX_BORDER, edge=False,
             fill=STEP_VERTEX_FILL, shape="ellipse", penwidth=3.0),
        _Key("its edges (removed with it)", STEP_EDGE_COLOR, penwidth=2.0),
        _Key("fill-in edge (created): new partial", FILL_IN_COLOR, dashed=True, penwidth=2.0),
        _Key("updated edge: old → new partial", UPDATED_COLOR, penwidth=2.4),
    ]


class Drawings(list):
    """A list of drawings (what :func:`render_elimination` returns) that
    shows itself in Jupyter as one image: the drawings side by side, as
    :func:`strip` lays them out.  ``keys``, if set, is the one legend the
    strip shows below the tiles (their own legends are left out).

    >>> from minirad import examples
    >>> drawings = render_elimination(examples.lab(), "forward")
    >>> drawings._repr_png_()[:4] == b"\\x89PNG"
    True
    """

    keys: list | None = None

    def _repr_png_(self) -> bytes | None:
        from .figure import png

        if not self:
            return None  # an empty list shows as []
        return png(strip(self))


def _drawn_box(image: np.ndarray, top: float, left: float) -> tuple[float, float, float, float]:
    """Where a picture (an RGB or RGBA array, placed at ``top``, ``left`` of its tile) is
    not blank: (top, bottom, left, right) in the tile's pixels; the whole picture if blank."""
    ink = np.any(image[..., :3] < 0.97, axis=2)
    if image.shape[2] == 4:
        ink &= image[..., 3] > 0.03
    rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not len(rows):
        return top, top + image.shape[0], left, left + image.shape[1]
    return (top + rows[0], top + rows[-1] + 1, left + columns[0], left + columns[-1] + 1)


def _png_array(drawing: Drawing, dpi: int) -> np.ndarray:
    import matplotlib.image as mpimg

    sized = drawing.copy()
    sized.graph_attr["dpi"] = str(dpi)
    return mpimg.imread(io.BytesIO(sized.pipe(format="png")), format="png")
