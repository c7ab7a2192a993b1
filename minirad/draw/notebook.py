"""The rich notebook display of an LCG: the drawn graph, or its text when too large.

``import minirad`` inside a Jupyter kernel (or any IPython shell) calls
:func:`register`, so an :class:`~minirad.graph.lcg.LCG` as a cell's value shows
as its drawing by :func:`minirad.draw.render.render`, up to :data:`MAX_VERTICES`
vertices; a larger graph shows its one-line repr and how to draw it anyway
(a drawing of hundreds of vertices cannot be read, and ``dot`` takes long on
it).  Outside IPython nothing is registered and nothing changes.

The figures minirad returns show themselves (see :mod:`minirad.draw.figure`), and
so does the list :func:`minirad.draw.render.render_elimination` returns (one strip).

>>> from minirad import examples
>>> sorted(lcg_bundle(examples.figure1()))
['image/svg+xml', 'text/plain']
>>> register()  # a doctest does not run under IPython: nothing to register with
False
"""

from __future__ import annotations

import sys

from ..graph.lcg import LCG
from .render import render

__all__ = ["MAX_VERTICES", "register"]

#: an LCG with more vertices than this shows as text, not as a drawing
MAX_VERTICES = 100


def lcg_bundle(g: LCG) -> dict:
    """The display of ``g`` by MIME type: its drawing and its text repr, or
    the text alone with a note beyond :data:`MAX_VERTICES`.

    >>> from minirad import examples
    >>> print(lcg_bundle(examples.random_dag(3, 150, 2, rng=0))["text/plain"])
    LCG(155 vertices: 3 inputs, 150 intermediates, 2 outputs; 3571 edges)
    not drawn: 155 vertices is more than minirad.draw.notebook.MAX_VERTICES = 100 (raise it, or \
draw it with minirad.render(g, max_vertices=155))
    """
    text = repr(g)
    if g.n_vertices > MAX_VERTICES:
        return {"text/plain": f"{text}\nnot drawn: {g.n_vertices} vertices is more than "
                              f"minirad.draw.notebook.MAX_VERTICES = {MAX_VERTICES} (raise it, or "
                              f"draw it with minirad.render(g, max_vertices={g.n_vertices}))"}
    bundle = dict(render(g)._repr_mimebundle_())
    bundle["text/plain"] = text
    return bundle


def _running_shell():
    ipython = sys.modules.get("IPython")  # never imported here: only a shell that runs has it
    return ipython.get_ipython() if ipython is not None else None


def register(shell=None) -> bool:
    """Show LCGs with :func:`lcg_bundle` in ``shell`` (default: the running
    IPython shell, if any).  Returns whether there was a shell to register with."""
    if shell is None:
        shell = _running_shell()
    if shell is None:
        return False
    shell.display_formatter.mimebundle_formatter.for_type(LCG, lcg_bundle)
    return True
