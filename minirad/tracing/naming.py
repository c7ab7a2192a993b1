"""How a trace names its vertices: inputs after the function's parameters,
outputs ``y`` (or ``y[0]``, ``y[1]``, ...), everything else ``v<number>``.

The tracer (:mod:`minirad.tracing.tracer`) names its graphs this way, and so does
:mod:`minirad.exact.higher` the graphs of recorded gradients.

>>> from minirad.tracing.tracer import parameter_names   # the inputs' names
>>> parameter_names(lambda a, *rest: None, 3)
['a', 'rest0', 'rest1']
>>> output_names(["x", "y"], 2, several=True)     # a parameter is called y: outputs are f
['f[0]', 'f[1]']
>>> named_vertices(4, ["v2", "b"], [3], several=False)   # an input called v2 keeps it
{0: 'v2', 1: 'b', 3: 'y', 2: "v2'"}
"""

from __future__ import annotations

from ..graph.names import VertexNames

__all__ = ["named_vertices", "output_names"]


def output_names(input_names, count: int, several: bool) -> list[str]:
    """The names of ``count`` outputs: ``y``, or ``y[0], y[1], ...`` when ``f``
    returned ``several`` (a tuple, a list or a vector); ``f`` (or ``out``) instead
    of ``y`` when an input is already called so."""
    base = next((b for b in ("y", "f", "out") if not any(
        name == b or name.startswith(b + "[") for name in input_names)), "y")
    return [f"{base}[{j}]" for j in range(count)] if several else [base] * count


def named_vertices(n: int, input_names, outputs, several: bool) -> dict[int, str]:
    """The names of a graph of ``n`` vertices that are not ``v<number>``: the inputs
    (vertices 0, 1, ...), the ``outputs`` and, primed, any vertex whose ``v<number>``
    an input has taken (a parameter called ``v3``)."""
    named = dict(enumerate(input_names))
    named.update(zip(outputs, output_names(input_names, len(outputs), several)))
    # only inputs can collide with the other names ("v<i>" and the output names differ)
    numbered = VertexNames(n, {})
    clashes = sorted(v for v in map(numbered.find, input_names) if v >= 0 and v not in named)
    taken = set(named.values())
    for v in clashes:
        name = f"v{v}'"
        while name in taken:
            name += "'"
        named[v] = name
        taken.add(name)
    return named


# what to do when a traced number meets an array: the program is an array program
ARRAY_HINT = ("; to trace a program that makes arrays, give trace its numbers as numpy "
              "arrays (np.asarray(2.0) is a number as an array of shape ())")
