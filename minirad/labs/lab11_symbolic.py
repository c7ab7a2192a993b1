"""Lab 11's exercise: the size of an expression tree.

* Exercise 11.1: the number of nodes of a SymPy expression tree, every
  repeated subexpression counted again (:func:`check_tree_size`), on the
  lecture's formulas, their derivatives, and a composition whose tree has
  2.7e12 nodes: counting them one by one never ends, remembering the size of
  each distinct subexpression takes a millisecond.

Same contract as :mod:`minirad.labs.checking`: one line on success, otherwise a
:class:`~minirad.labs.checking.CheckFailed` naming the input and what is wrong.
Needs SymPy (``pip install 'minirad[symbolic]'``).

>>> from minirad import symbolic
>>> def tree_size(e, sizes=None):            # remember each distinct subexpression's size
...     sizes = {} if sizes is None else sizes
...     if e not in sizes:
...         sizes[e] = 1 + sum(tree_size(a, sizes) for a in e.args)
...     return sizes[e]
>>> check_tree_size(tree_size)
Exercise 11.1 passed: tree sizes agree on 8 expressions, up to 2.7e+12 nodes
>>> check_tree_size(lambda e: len(set(symbolic.sympy().preorder_traversal(e))))
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 11.1 (tree size), on x*sin(x): your function \
returned 3, expected 4 -- you counted each distinct subexpression once, which is the size of \
the graph; a tree writes a subexpression out again every time it is used
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral

from .. import examples, symbolic
from .checking import (
    CheckFailed,
    call_student,
    location,
    one,
    passed,
)
from .exercise import exercise

__all__ = ["MISTAKES", "SECONDS", "check_tree_size", "tree_size_cases"]


#: the deep composition of the check: its tree has 5 * 2^39 - 1 nodes
DEEP = 40
#: seconds the deep case may take (a memoised count needs milliseconds)
SECONDS = 5.0


def _composition(depth: int):
    return symbolic.formula(examples.composition_program(depth), 0.5).outputs[0]


def tree_size_cases() -> dict[str, tuple]:
    """The expressions :func:`check_tree_size` runs on, by name, each with its
    size counted independently of :func:`minirad.symbolic.tree_size`: by
    walking every node (``sympy.preorder_traversal``), or, for the deep
    composition, by the closed form ``5 * 2^(depth - 1) - 1`` (SymPy
    flattens the product ``sin(x_k) x_k``, so a step takes a tree of s nodes
    to one of 2 s + 1).

    >>> cases = tree_size_cases()
    >>> cases["x*sin(x)"][1]
    4
    """
    sp = symbolic.sympy()
    x = sp.Symbol("x", real=True)
    lecture = symbolic.formula(examples.lecture_program, 2.0, 5.0)
    figure1 = symbolic.formula(examples.figure1_program, 1.0, 2.0)
    chain = _composition(3)
    small = {
        "x": x,
        "x*sin(x)": x * sp.sin(x),
        "the lecture's y = log(x1) + x1*x2 - sin(x2)": lecture.outputs[0],
        "dy/dx2 of the lecture's y": symbolic.derivative(lecture)[1],
        "Figure 1's y": figure1.outputs[0],
        "dy/dx2 of Figure 1's y": symbolic.derivative(figure1)[1],
        "d x_3 / d x_0 for x_(k+1) = sin(x_k) x_k": sp.diff(chain, chain.free_symbols.pop()),
    }
    cases = {name: (e, len(list(sp.preorder_traversal(e)))) for name, e in small.items()}
    cases[f"x_{DEEP} for x_(k+1) = sin(x_k) x_k"] = (_composition(DEEP),
                                                     5 * 2 ** (DEEP - 1) - 1)
    return cases


#: wrong answers a check can recognise: (hint, the count it would give)
SLIPS = (
    (" -- you counted each distinct subexpression once, which is the size of the graph; a "
     "tree writes a subexpression out again every time it is used",
     lambda e, nodes: len(set(nodes))),
    (" -- you counted only the leaves; an operation is a node too",
     lambda e, nodes: sum(1 for node in nodes if not node.args)),
    (" -- sympy.count_ops counts operations (x - y is one subtraction), not the nodes of "
     "the tree", lambda e, nodes: symbolic.sympy().count_ops(e)),
    (" -- one short: count the node itself as well as its arguments",
     lambda e, nodes: len(nodes) - 1),
)


def _hint(fn, cases) -> str:
    """The mistake whose count matches the student's answer on every small case."""
    sp = symbolic.sympy()
    small = [e for e, expected in cases.values() if expected < 10**6]
    try:
        answers = [fn(e) for e in small]
    except Exception:                  # the failure itself is reported already
        return ""
    walks = [list(sp.preorder_traversal(e)) for e in small]
    for hint, count in SLIPS:
        if all(answer == count(e, nodes) for answer, e, nodes in zip(answers, small, walks)):
            return hint
    return ""


@exercise("11.1", "tree size", takes=("tree_size",), points=3, minutes=20, seconds=30,
          reference=("minirad.symbolic:tree_size", "minirad.symbolic:cse_size"))
def check_tree_size(fn: Callable) -> None:
    """Exercise 11.1: ``fn(e)`` returns the number of nodes of the tree of the
    SymPy expression ``e``: one for the node, plus the sizes of its
    arguments ``e.args`` (a symbol or a number has none), every repeated
    subexpression counted each time it appears."""
    cases = tree_size_cases()
    for name, (e, expected) in cases.items():
        where = location("Exercise 11.1", "tree size", name)
        slow = (f": this tree has {expected:.2g} nodes, too many to visit one by one; "
                f"remember the size of each distinct subexpression (a dict), as Lab 3 "
                f"counted paths")
        answer = call_student(fn, where, e, seconds=SECONDS, slow_hint=slow)
        if isinstance(answer, bool) or not isinstance(answer, Integral):
            raise CheckFailed(f"{where}: return the number of nodes as an int, not "
                              f"{type(answer).__name__} {answer!r:.60}")
        if answer != expected:
            raise CheckFailed(f"{where}: your function returned {answer}, expected "
                              f"{expected}{_hint(fn, cases)}")
    largest = max(expected for _, expected in cases.values())
    passed("Exercise 11.1", f"tree sizes agree on {len(cases)} expressions, up to "
                            f"{largest:.2g} nodes")


# ------------------------------------------------------- planted mistakes
def _tree_size_slip(kind: str):
    """A wrong count of the nodes of a SymPy expression tree (lab 11)."""
    def count(e):
        from ..symbolic import sympy

        nodes = list(sympy().preorder_traversal(e))
        return {"distinct": len(set(nodes)), "leaves": sum(1 for n in nodes if not n.args),
                "count_ops": int(sympy().count_ops(e)), "one short": len(nodes) - 1}[kind]
    return one(count)


#: exercise number -> [(the mistake, a function returning the wrong definitions)]
MISTAKES = {
    "11.1": [
        ("each distinct subexpression counted once (the graph, not the tree)",
         _tree_size_slip("distinct")),
        ("only the leaves counted", _tree_size_slip("leaves")),
        ("sympy.count_ops (operations, not nodes)", _tree_size_slip("count_ops")),
        ("one short: the node itself not counted", _tree_size_slip("one short")),
    ],
}
