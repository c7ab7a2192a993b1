"""Pictures of a vector LCG (the paper's Figure 3).

Each vertex shows its name and shape (``h1 ∈ R^(3×5)``) and, for computed
vertices, its operation; each edge shows the kind of its operator and the
bytes the backward pass keeps for it (as :func:`minirad.memory`
charges them, with the reason when it is nothing); injected projections are
drawn dashed in red with their k; the title carries the total.

:func:`render_vector` returns a graphviz graph; :func:`save_vector_picture`
writes a file and, without the ``dot`` program, draws with matplotlib.

>>> import numpy as np
>>> from minirad import ops, trace
>>> x = np.ones((3, 4), np.float32)
>>> dot = render_vector(trace(lambda W: ops.relu(x @ W).sum(), np.ones((4, 2), np.float32)))
>>> "W ∈ R^(4×2)" in dot.source and "outer" in dot.source
True
"""

from __future__ import annotations

import os

import graphviz
import numpy as np

from ..graph.files import write_atomically
from ..graph.lcg import INPUT, LCG, OUTPUT, shape_text
from ..graph.memory import memory
from ..graph.operators import Composed, InjectedMatMul, ProjectedMatMul, Projection
from ..graph.patches import ProjectedPatches, SampledPatches
from .render import has_dot

FONT = "Helvetica"
INK = "#222222"
INJECTED = "#d62728"
FILL = {INPUT: "#dbe9f6", "intermediate": "#ffffff", OUTPUT: "#fde2c8"}


def _bytes(x: float) -> str:
    if x >= 10_000:
        return f"{x / 1000:,.1f} kB"
    return f"{int(x):,} B" if x == int(x) else f"{x:,.3f}".rstrip("0") + " B"


def _injected(op) -> str | None:
    """``"P k=2"`` when the operator carries an injected projection."""
    if isinstance(op, (InjectedMatMul, ProjectedMatMul, SampledPatches,
                       ProjectedPatches)):
        return f"{'sampled' if op.method == 'sample' else 'projected'} k={op.k}"
    parts = op.parts if isinstance(op, Composed) else (op,)
    ks = [p.k for p in parts if isinstance(p, Projection)]
    return f"P k={ks[0]}" if ks else None


def _edge_text(g: LCG, e: int, charged: float, note: str) -> str:
    op = g.labels[e]
    kind = op.kind if not isinstance(op, Composed) else "∘".join(p.kind for p in op.parts)
    if isinstance(op, (InjectedMatMul, ProjectedMatMul, SampledPatches,
                       ProjectedPatches)):
        kind = "outer"
    lines = [kind, _bytes(charged)]
    if note and not charged:
        lines[-1] += f" ({note})"
    injected = _injected(op)
    if injected:
        lines.append(injected)
    return "\n".join(lines)


def _vertex_text(g: LCG, v: int) -> str:
    head = f"{g.names[v]} ∈ {shape_text(g.shapes[v])}"
    if g.kind(v) == INPUT:
        return head
    operands = [g.names[u] for u in g.predecessors(v)]
    try:
        op = g.ops[v].format(*operands)
    except (IndexError, KeyError, ValueError):
        op = g.ops[v]
    return f"{head}\n{op}" if op else head


def _title(g: LCG, title: str | None, batch: int | None) -> str:
    m = memory(g)
    line = f"retained for the backward pass: {_bytes(m.total)}"
    if batch:
        line += f" ({_bytes(m.per_example(batch))} per example of {batch})"
    if g.injections:
        line += f"; {len(g.injections)} injected projection" + (
            "s" if len(g.injections) > 1 else "")
    return f"{title}\n{line}" if title else line


def render_vector(g: LCG, title: str | None = None, batch: int | None = None
                  ) -> graphviz.Digraph:
    """A graphviz drawing of ``g``, inputs at the bottom; ``batch`` adds the
    per-example memory to the title."""
    if not isinstance(g, LCG):
        raise TypeError(f"render_vector takes a LCG, not {type(g).__name__}")
    m = memory(g)
    dot = graphviz.Digraph(name="vector_lcg", graph_attr={
        "rankdir": "BT", "nodesep": "0.5", "ranksep": "0.6", "fontname": FONT,
        "label": _title(g, title, batch).replace("\n", "\\n"), "labelloc": "t",
        "fontsize": "14"},
        node_attr={"fontname": FONT, "fontsize": "12", "shape": "box", "style": "filled,rounded",
                   "margin": "0.12,0.06"},
        edge_attr={"fontname": FONT, "fontsize": "10", "arrowsize": "0.7"})
    injected_at = {r.get("at") for r in g.injections if r.get("kind") == "vertex"}
    for v in range(g.n_vertices):
        attrs = {"fillcolor": FILL[g.kind(v)], "color": INK}
        if g.names[v] in injected_at:
            attrs.update(color=INJECTED, penwidth="2")
        dot.node(f"n{v}", label=_vertex_text(g, v).replace("\n", "\\n"), **attrs)
    for e, (u, v, op) in enumerate(g.edges()):
        text = _edge_text(g, e, m.per_edge[e], m.notes[e] if m.notes else "")
        attrs = {"label": text.replace("\n", "\\n"), "color": INK, "fontcolor": INK}
        if _injected(op):
            attrs.update(color=INJECTED, fontcolor=INJECTED, style="dashed", penwidth="1.8")
        dot.edge(f"n{u}", f"n{v}", **attrs)
    with dot.subgraph() as row:
        row.attr(rank="same")
        for v in g.inputs:
            row.node(f"n{v}")
    return dot


def draw_vector_matplotlib(g: LCG, title: str | None = None, batch: int | None = None):
    """The same picture with matplotlib (no ``dot`` needed): rows by depth from the inputs."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    m = memory(g)
    depth = [0] * g.n_vertices
    for u, v, _ in g.edges():
        depth[v] = max(depth[v], depth[u] + 1)
    rows: dict[int, list[int]] = {}
    for v in range(g.n_vertices):
        rows.setdefault(depth[v], []).append(v)
    width = max(len(r) for r in rows.values())
    pos = {}
    for level, members in rows.items():
        for i, v in enumerate(members):
            pos[v] = ((i + 0.5) * width / len(members), level)
    figure = Figure(figsize=(max(9.0, 2.6 * width + 1), 1.5 * len(rows) + 1))
    ax = figure.subplots()
    ax.set_axis_off()
    for e, (u, v, op) in enumerate(g.edges()):
        color = INJECTED if _injected(op) else INK
        (x0, y0), (x1, y1) = pos[u], pos[v]
        ax.annotate("", xy=(x1, y1 - 0.18), xytext=(x0, y0 + 0.18),
                    arrowprops={"arrowstyle": "->", "color": color,
                                "linestyle": "--" if _injected(op) else "-"})
        ax.text((x0 + x1) / 2 + 0.05, (y0 + y1) / 2,
                _edge_text(g, e, m.per_edge[e], m.notes[e] if m.notes else ""),
                fontsize=7, color=color, ha="left", va="center")
    for v, (x, y) in pos.items():
        ax.text(x, y, _vertex_text(g, v), ha="center", va="center", fontsize=8,
                bbox={"boxstyle": "round", "facecolor": FILL[g.kind(v)], "edgecolor": INK})
    ax.set_xlim(-0.5, width + 0.5)
    ax.set_ylim(-0.6, max(rows) + 0.6)
    ax.set_title(_title(g, title, batch), fontsize=10)
    plt.close("all")
    return figure


def draw_blocks(g: LCG, limit: int = 4096, title: str | None = None):
    """Every edge's Jacobian block as a small heatmap (a matplotlib Figure): the
    structure an operator stores compactly, seen as the matrix it stands for (a
    diagonal, a mask, the Kronecker pattern of ``x @ W`` seen from W).  Blocks with
    more than ``limit`` entries are listed but not drawn.

    >>> import numpy as np
    >>> from minirad import ops, trace
    >>> figure = draw_blocks(trace(lambda W: ops.relu(np.ones((2, 3)) @ W).sum(),
    ...                            np.ones((3, 2))))
    >>> len(figure.axes)
    3
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    n = g.n_edges
    cols = min(n, 3)
    rows = max(1, -(-n // cols))
    figure = Figure(figsize=(4.2 * cols, 3.6 * rows), layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[n:]:
        figure.delaxes(ax)
    for e, (u, v, op) in enumerate(g.edges()):
        ax = axes[e]
        name = f"∂{g.names[v]}/∂{g.names[u]}: {op.label()}"
        if op.out_size * op.in_size > limit:
            ax.set_axis_off()
            ax.text(0.5, 0.5, f"{name}\n{op.out_size} × {op.in_size}\n(too large to draw)",
                    ha="center", va="center", fontsize=9)
            continue
        block = np.asarray(op.to_dense(), dtype=np.float64)
        scale = float(np.abs(block).max()) or 1.0
        ax.imshow(block, cmap="RdBu_r", vmin=-scale, vmax=scale, interpolation="nearest",
                  aspect="auto")
        ax.set_title(f"{name}\n{op.out_size} × {op.in_size}, "
                     f"{int(np.count_nonzero(block))} nonzero", fontsize=9)
        ax.set_xlabel(f"{g.names[u]} entries", fontsize=8)
        ax.set_ylabel(f"{g.names[v]} entries", fontsize=8)
        ax.tick_params(labelsize=7)
        for axis, count in ((ax.xaxis, block.shape[1]), (ax.yaxis, block.shape[0])):
            if count <= 8:
                axis.set_ticks(range(count))
            else:
                axis.set_major_locator(MaxNLocator(integer=True))
    if title:
        figure.suptitle(title, fontsize=11)
    plt.close("all")
    return figure


def save_vector_picture(g: LCG, path, title: str | None = None,
                        batch: int | None = None, dpi: int = 150) -> str:
    """Write the picture of ``g`` to ``path`` (.png, .svg or .dot), atomically, with
    graphviz when ``dot`` is installed and matplotlib otherwise.  Returns the path."""
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".png", ".svg", ".dot"):
        raise ValueError(f"save a vector LCG picture as .png, .svg or .dot, not {path!r}")
    dot = render_vector(g, title, batch)
    if ext == ".dot":
        data = dot.source.encode("utf-8")
    elif has_dot():
        dot.graph_attr["dpi"] = str(dpi) if ext == ".png" else "72"
        data = dot.pipe(format=ext[1:])
    else:
        import io

        figure = draw_vector_matplotlib(g, title, batch)
        buffer = io.BytesIO()
        metadata = {"Software": None} if ext == ".png" else {"Date": None, "Creator": None}
        figure.savefig(buffer, format=ext[1:], dpi=dpi, metadata=metadata)
        data = buffer.getvalue()
    write_atomically(path, lambda f: f.write(data))
    return path


def figure3_graph(injected: bool = False, rng=0) -> LCG:
    """The paper's Figure 3a as a traced program: a two-layer ReLU MLP on a batch of
    3 examples (4 features, 5 hidden units, 2 classes), float32, with the loss
    averaged over the batch.  ``injected``: its activations sampled at k=2 per row
    (Sec. 4.2)."""
    from ..randomized.injection import sample_activations
    from ..rng import as_generator
    from ..tracing import trace
    from ..tracing.arrays import name, softmax_cross_entropy
    from ..tracing.ops import relu

    r = as_generator(rng)
    X = r.standard_normal((3, 4)).astype(np.float32)
    labels = np.array([0, 1, 1])

    def mlp(X, W1, W2):
        h1 = name(X @ W1, "h1")
        a1 = name(relu(h1), "a1")
        h2 = name(a1 @ W2, "h2")
        return softmax_cross_entropy(h2, labels)
    g = trace(mlp, X, r.standard_normal((4, 5)).astype(np.float32),
              r.standard_normal((5, 2)).astype(np.float32), wrt=[1, 2])
    return sample_activations(g, 2, rng=r) if injected else g
