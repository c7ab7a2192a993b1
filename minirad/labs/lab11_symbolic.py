"""Lab 11's exercise: the size of an expression tree.

* Exercise 11.1: the number of nodes of a SymPy expression tree, every
  repeated subexpression counted again (:func:`check_tree_size`), on the
  lecture's formulas, their derivatives, and a composition whose tree has
  2.7e12 nodes: counting them one by one never ends, remembering the size of
  each distinct subexpression takes a millisecond.

The expressions travel as recipes (:func:`expression`), so that the kernel and
the grader build the same SymPy object; the small ones form one case (so that
a hint can name the slip every answer follows), the deep composition another.
Needs SymPy (``pip install 'minirad[symbolic]'``): the grader refuses to grade
this lab without it.

>>> from minirad import symbolic
>>> def tree_size(e, sizes=None):            # remember each distinct subexpression's size
...     sizes = {} if sizes is None else sizes
...     if e not in sizes:
...         sizes[e] = 1 + sum(tree_size(a, sizes) for a in e.args)
...     return sizes[e]
>>> check_tree_size(tree_size)
Exercise 11.1 passed: tree sizes agree on 2 groups of expressions
>>> check_tree_size(lambda e: len(set(symbolic.sympy().preorder_traversal(e))))
Traceback (most recent call last):
...
minirad.labs.checking.CheckFailed: Exercise 11.1 (tree size), on x*sin(x): your function \
returned 3, expected 4 -- you counted each distinct subexpression once, which is the size of \
the graph; a tree writes a subexpression out again every time it is used
"""

from __future__ import annotations

from numbers import Integral

from .. import examples, symbolic
from ..tracing import ops
from .checking import CheckFailed, call_student, one
from .exercise import exercise
from .lab07_tracked_arrays import program, random_program, written

__all__ = ["MISTAKES", "SECONDS", "check_tree_size", "expression", "tree_size_cases"]


#: the deep composition of the check: its tree has 5 * 2^39 - 1 nodes
DEEP = 40
#: seconds the deep case may take (a memoised count needs milliseconds)
SECONDS = 5.0

_PROGRAMS = {"lecture": examples.lecture_program, "figure1": examples.figure1_program}


def _composition(depth: int):
    return symbolic.formula(examples.composition_program(depth), 0.5).outputs[0]


def expression(spec):
    """The SymPy expression a case describes: ``["x"]``, ``["x*sin(x)"]``,
    ``["output", program, point]`` and ``["derivative", program, point, i]`` (``program``
    ``"lecture"``, ``"figure1"`` or a list of Lab 7 steps), ``["chain derivative",
    depth]`` (d x_depth / d x_0 of the composition) or ``["composition", depth]``.

    >>> expression(["output", "lecture", [2.0, 5.0]])
    x1*x2 + log(x1) - sin(x2)
    """
    sp = symbolic.sympy()
    kind = spec[0]
    if kind == "x":
        return sp.Symbol("x", real=True)
    if kind == "x*sin(x)":
        x = sp.Symbol("x", real=True)
        return x * sp.sin(x)
    if kind in ("output", "derivative"):
        name, point = spec[1], spec[2]
        if isinstance(name, str):
            f = _PROGRAMS[name]
        else:
            steps = program(name)
            f = lambda a, b: steps(a, b, ops.sin)  # noqa: E731
        form = symbolic.formula(f, *point)
        return form.outputs[0] if kind == "output" else symbolic.derivative(form)[spec[3]]
    if kind == "chain derivative":
        chain = _composition(spec[1])
        return sp.diff(chain, chain.free_symbols.pop())
    if kind == "composition":
        return _composition(spec[1])
    raise ValueError(f"unknown expression {kind!r}")


_SMALL = [  # (name, recipe)
    ("x", ["x"]),
    ("x*sin(x)", ["x*sin(x)"]),
    ("the lecture's y = log(x1) + x1*x2 - sin(x2)", ["output", "lecture", [2.0, 5.0]]),
    ("dy/dx2 of the lecture's y", ["derivative", "lecture", [2.0, 5.0], 1]),
    ("Figure 1's y", ["output", "figure1", [1.0, 2.0]]),
    ("dy/dx2 of Figure 1's y", ["derivative", "figure1", [1.0, 2.0], 1]),
    ("d x_3 / d x_0 for x_(k+1) = sin(x_k) x_k", ["chain derivative", 3]),
]


def _size(spec) -> int:
    """An expression's tree size counted independently of :func:`minirad.symbolic.tree_size`:
    by walking every node, or for the deep composition by the closed form
    ``5 * 2^(depth - 1) - 1`` (SymPy flattens the product ``sin(x_k) x_k``, so a step
    takes a tree of s nodes to one of 2 s + 1)."""
    if spec[0] == "composition":
        return 5 * 2 ** (spec[1] - 1) - 1
    return len(list(symbolic.sympy().preorder_traversal(expression(spec))))


def tree_size_cases(rng=None) -> list[dict]:
    """The cases of :func:`check_tree_size`: the small expressions (one case) and the deep
    composition (another); hidden cases use random programs of Lab 7's kind, their
    derivatives and a composition of random depth.

    >>> [case["name"] for case in tree_size_cases()]
    ['seven small expressions', 'x_40 for x_(k+1) = sin(x_k) x_k']
    >>> _size(tree_size_cases()[0]["questions"][1][1])
    4
    """
    if rng is None:
        small, depth = _SMALL, DEEP
    else:
        small = [("x", ["x"]), ("x*sin(x)", ["x*sin(x)"])]
        for size in (3, 4, 5):
            steps = random_program(rng, size)
            point = [round(float(v), 3) for v in rng.uniform(0.3, 2.0, 2)]
            small.append((f"{written(steps)} at {tuple(point)}", ["output", steps, point]))
            small.append((f"d/dy of {written(steps)} at {tuple(point)}",
                          ["derivative", steps, point, 1]))
        depth = int(rng.integers(36, 44))
        small.append((f"d x_{depth % 4 + 2} / d x_0 for x_(k+1) = sin(x_k) x_k",
                      ["chain derivative", depth % 4 + 2]))
    return [{"name": f"{len(small)} small expressions".replace("7 small", "seven small"),
             "questions": [list(q) for q in small]},
            {"name": f"x_{depth} for x_(k+1) = sin(x_k) x_k", "questions": [
                [f"x_{depth} for x_(k+1) = sin(x_k) x_k", ["composition", depth]]]}]


def _probe(fns, case, where):
    head = where.split(", on ", 1)[0]
    return [call_student(fns[0], f"{head}, on {name}", expression(spec), seconds=SECONDS)
            for name, spec in case["questions"]]


def _slow(case) -> str:
    largest = max(_size(spec) for _, spec in case["questions"])
    return (f": this tree has {largest:.2g} nodes, too many to visit one by one; remember "
            f"the size of each distinct subexpression (a dict), as Lab 3 counted paths")


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


def _hint(answers, exprs) -> str:
    """The mistake whose count matches the student's answer on every small expression."""
    sp = symbolic.sympy()
    walks = [list(sp.preorder_traversal(e)) for e in exprs]
    for hint, count in SLIPS:
        if all(answer == count(e, nodes) for answer, e, nodes in zip(answers, exprs, walks)):
            return hint
    return ""


@exercise("11.1", "tree size", takes=("tree_size",), points=3, minutes=20, seconds=30,
          reference=("minirad.symbolic:tree_size", "minirad.symbolic:cse_size"),
          requires=(("sympy", "symbolic"),), cases=tree_size_cases, probe=_probe, slow=_slow,
          passed="tree sizes agree on {n} groups of expressions")
def check_tree_size(case, answer, where) -> None:
    """Exercise 11.1: ``fn(e)`` returns the number of nodes of the tree of the
    SymPy expression ``e``: one for the node, plus the sizes of its
    arguments ``e.args`` (a symbol or a number has none), every repeated
    subexpression counted each time it appears."""
    questions = case["questions"]
    if not (isinstance(answer, list) and len(answer) == len(questions)):
        raise CheckFailed(f"{where}: the grader could not read your answers")
    head = where.split(", on ", 1)[0]
    for (name, spec), value in zip(questions, answer):
        at = f"{head}, on {name}"
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise CheckFailed(f"{at}: return the number of nodes as an int, not "
                              f"{type(value).__name__} {value!r:.60}")
        expected = _size(spec)
        if value != expected:
            small = [(s, a) for (_, s), a in zip(questions, answer) if s[0] != "composition"]
            hint = _hint([a for _, a in small], [expression(s) for s, _ in small]) if small \
                else ""
            raise CheckFailed(f"{at}: your function returned {value}, expected "
                              f"{expected}{hint}")


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
