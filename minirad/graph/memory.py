"""What the backward pass keeps: the bytes each edge's label retains, and in total.

Every label knows what it needs to apply its transpose (its
:class:`~minirad.graph.operators.Retained` records): a ReLU keeps a bit mask,
``x @ W`` keeps ``x`` for the gradient of ``W``, a float partial keeps itself.
:func:`retained_memory` adds them up over a graph the way the RAD paper's Appendix A
does: an array kept by several edges counts once, parameters are free (the
caller keeps them anyway), and what can be rebuilt from a kept array is free.
Index arrays (the positions of an indexing or a ``concatenate``, int64, often
larger than the floats they move) are rebuilt from the shapes, so they are
free too, but they are not hidden: ``Memory.from_shapes`` reports their bytes.
Random matrix injection, path sampling and checkpointing are all ways of
making this number smaller.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lcg import LCG, takes_graph_or_function, value_key
from .operators import FROM_SHAPES

__all__ = ["Memory", "retained_memory"]


@dataclass(frozen=True)
class Memory:
    """What the backward pass keeps: bytes per edge and in total.

    ``per_edge[e]`` is the bytes charged to edge ``e`` (an array shared by
    several edges is charged to the first); ``notes[e]`` says why an edge's
    arrays cost nothing (a parameter kept anyway, rebuilt from a kept array,
    shared with another edge); ``arrays`` maps each retained array's key to
    its bytes; ``kept_anyway`` is the bytes of input values (parameters)
    that operators use but the caller holds regardless; ``from_shapes`` is
    the bytes of the index arrays the labels hold (each counted once), which
    ``total`` does not charge because the shapes rebuild them.
    """

    per_edge: tuple[float, ...]
    arrays: dict
    kept_anyway: float
    notes: tuple[str, ...] = ()
    from_shapes: float = 0.0

    @property
    def total(self) -> float:
        return float(sum(self.per_edge))

    def per_example(self, batch: int) -> float:
        """``total / batch``: the paper's per-mini-batch-element figure."""
        return self.total / batch

    def __repr__(self) -> str:
        rebuilt = (f", and {self.from_shapes:,.1f} bytes of index arrays rebuilt from the "
                   f"shapes" if self.from_shapes else "")
        return f"Memory(total={self.total:,.1f} bytes over {len(self.arrays)} arrays{rebuilt})"


def _key_text(g: LCG, key: str) -> str:
    """How a note names a kept array: the vertex whose value it is (``value:<vertex>``, or
    an array made from it, ``value:<vertex>:...``), else its key; a key that names no
    vertex (``value:abc``, built by hand) is shown as it is."""
    if key.startswith("value:"):
        number = key[len("value:"):].split(":")[0]
        if number.isascii() and number.isdigit() and int(number) < g.n_vertices:
            return g.names[int(number)]
    return key.split("#")[0]


@takes_graph_or_function
def retained_memory(g: LCG) -> Memory:
    """The bytes the reverse sweep of ``g`` must keep, per edge and in total.

    Parameters
    ----------
    g : LCG
        The graph (or a function, followed by its point, to trace first).

    Returns
    -------
    Memory
        ``per_edge`` (the bytes charged to each edge), ``total``, ``arrays``
        (each kept array's bytes), ``notes`` (why an edge keeps nothing) and
        ``from_shapes`` (index arrays rebuilt from the shapes, not charged).

    See Also
    --------
    minirad.sample_activations : Keep less, by sampling the stored activations.
    minirad.render : Draws each edge's bytes on a graph with arrays.

    Notes
    -----
    Every operator lists the arrays it needs (:class:`Retained`), following each
    array's dtype.  Arrays with the same key are stored once; the values of
    input vertices are free (the caller keeps its parameters anyway); an array
    that can be rebuilt from another (a ReLU mask from the ReLU's output, im2col
    columns from the image) is free when that one is stored, and otherwise the
    cheaper of the two is stored.  These are the rules of the RAD paper's
    Appendix A (Oktay et al., ICLR 2021).  An index array (a gather's or a
    concatenation's positions) is rebuilt from the shapes: it is free, and its
    bytes are reported in ``from_shapes`` (an implementation that keeps them
    would add that much).  A float label (an edge between two numbers) keeps
    itself: 8 bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from minirad import ops, trace
    >>> x = np.ones((4, 3), dtype=np.float32)
    >>> g = trace(lambda W: ops.relu(x @ W).sum(), np.ones((3, 2), np.float32))
    >>> m = retained_memory(g)     # x (4x3 floats) for dW; the ReLU mask (8 bits) for the relu
    >>> m.total, m.per_edge
    (49.0, (48.0, 1.0, 0.0))
    >>> from minirad import examples
    >>> retained_memory(examples.lecture()).total    # eight float partials
    64.0
    >>> m = retained_memory(trace(lambda v: (v[1:] * 2.0).sum(), np.ones(4, np.float32)))
    >>> m.total, m.from_shapes              # the slice's 3 int64 positions are not charged
    (0.0, 24.0)
    """
    if isinstance(g.labels, np.ndarray):   # a graph of numbers keeps its partials
        return Memory((8.0,) * g.n_edges, {}, 0.0, ("",) * g.n_edges)
    free = {value_key(v) for v in g.inputs}
    charged = [0] * g.n_edges
    notes: list[list[str]] = [[] for _ in range(g.n_edges)]
    bits: dict[str, int] = {}
    kept = {}
    from_shapes: dict[str, int] = {}
    deferred = []
    for e, op in enumerate(g.labels):
        if isinstance(op, float):
            charged[e] += 64
            continue
        for r in op.retained:
            if r.recompute_from == FROM_SHAPES:
                from_shapes[r.key] = r.nbits
                notes[e].append(f"{r.nbits / 8:,.0f} B of indices rebuilt from the shapes")
            elif r.key in free:
                kept[r.key] = r.nbits
                notes[e].append(f"{_key_text(g, r.key)} kept anyway")
            elif r.recompute_from is not None:
                deferred.append((e, r))
            elif r.key not in bits:
                bits[r.key] = r.nbits
                charged[e] += r.nbits
            else:
                notes[e].append(f"{_key_text(g, r.key)} shared")
    # arrays cheaper to rebuild from their source keep the source first (im2col patches keep
    # the image), so that arrays rebuilt from those sources (ReLU masks) then find them kept
    deferred.sort(key=lambda item: not 0 < item[1].source_bits < item[1].nbits)
    for e, r in deferred:
        source = r.recompute_from
        if r.key in bits:
            notes[e].append(f"{_key_text(g, r.key)} shared")
        elif source in free:
            notes[e].append(f"{_key_text(g, source)} kept anyway")
        elif source in bits:
            notes[e].append(f"rebuilt from {_key_text(g, source)}")
        elif 0 < r.source_bits < r.nbits:   # keep the smaller source and rebuild from it
            bits[source] = r.source_bits
            charged[e] += r.source_bits
            notes[e].append(f"keeps {_key_text(g, source)}, rebuilds the rest")
        else:
            bits[r.key] = r.nbits
            charged[e] += r.nbits
    return Memory(tuple(c / 8 for c in charged), {k: b / 8 for k, b in bits.items()},
                  sum(kept.values()) / 8, tuple("; ".join(n) for n in notes),
                  sum(from_shapes.values()) / 8)


