"""Pictures of edge elimination steps: what each picture says, checked against the
step worked out by hand on a graph of integer partials."""

from minirad import LCG
from minirad.draw.edge_steps import edge_elimination_strip, edge_step_pictures, step_title
from minirad.exact.elimination import eliminate

# x -> a (2), a -> b (3), a -> c (5), b -> y (7), c -> y (11), x -> c (13)
EDGES = [("x", "a", 2.0), ("a", "b", 3.0), ("a", "c", 5.0), ("b", "y", 7.0), ("c", "y", 11.0),
         ("x", "c", 13.0)]


def small() -> LCG:
    return LCG.from_edges(EDGES, inputs=["x"], outputs=["y"])


def test_front_step_pictures_by_hand():
    g = small()
    step = eliminate(g, [("x", "a", "front")], on="edges").steps[0]
    before, after = edge_step_pictures(g, step)
    # before: the edge and its two products, x -> a -> b = 6 (new), x -> a -> c = 10 (added)
    assert before.options["title"] == "front-eliminate x → a: |succ(a)| = 2 multiplications, " \
                                      "1 addition"
    assert "eliminated (front): x → a  (product 2)" in before.source
    assert "new x → b: x → a → b  (product 6)" in before.source
    assert "added to x → c: x → a → c  (product 10)" in before.source
    # after: x -> b is new (6), x -> c went from 13 to 23, and a has gone
    assert "new: x → b  (product 6)" in after.source
    assert "updated, was 13: x → c  (product 23)" in after.source
    assert after.options["title"] == "after it: x → a eliminated\na deleted (no in-edge left)"
    assert "a" not in after.lcg.names


def test_back_step_title_names_the_predecessors():
    g = small()
    step = eliminate(g, [("c", "y", "back")], on="edges").steps[0]
    assert step_title(step) == "back-eliminate c → y: |pred(c)| = 2 multiplications, 0 additions"
    before, after = edge_step_pictures(g, step, title="custom")
    assert before.options["title"] == "custom"
    assert "new a → y: a → c → y  (product 55)" in before.source
    assert "c deleted (no out-edge left)" in after.options["title"]


def test_strip_has_a_row_per_step():
    sequence = [("x", "a", "front"), ("x", "b", "front"), ("x", "c", "front")]
    figure = edge_elimination_strip(small(), sequence, title="three steps")
    assert len(figure.axes) == 6 and figure.get_suptitle() == "three steps"
