"""The multiplication counts of minirad/draw/modes.py, by hand on the lecture's example,
and the Part highlight that draws the recorded reverse pass."""

import pytest

from minirad import ops, render, trace
from minirad.draw.modes import lecture_family, mode_costs, plot_mode_costs
from minirad.draw.render import Part
from minirad.exact.higher import backward_vertices, gradient_graph


def test_the_lectures_counts_by_hand():
    # y = ln(x1) + x1 x2 - sin(x2) has 8 operand slots: ln 1, * 2, + 2, sin 1, - 2.
    # duals: every slot multiplies its tangent in each of the 2 passes: 16;
    # reverse: all 8 edges lie on a path to y: 8;
    # forward sweep: from x1 the edges out of x1 (2), ln, *, + (1 each): 5;
    #                from x2 those out of x2 (2), *, sin, + (1 each): 5
    costs = mode_costs(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    assert (costs["duals"], costs["reverse sweep"], costs["forward sweep"]) == (16, 8, 10)


@pytest.mark.parametrize("n", [2, 5, 9])
def test_dual_passes_multiply_on_every_edge_of_every_pass(n):
    f, args = lecture_family(n)
    g = trace(f, *args)
    assert mode_costs(f, *args)["duals"] == n * g.n_edges
    assert mode_costs(f, *args)["reverse sweep"] == g.n_edges  # every edge reaches y


def test_plot_refuses_sizes_below_two():
    with pytest.raises(ValueError, match="at least 2"):
        plot_mode_costs(sizes=(1, 4))


def test_part_colours_the_reverse_pass_and_names_it_in_the_legend():
    G = gradient_graph(lambda x1, x2: ops.log(x1) + x1 * x2 - ops.sin(x2), 2.0, 5.0)
    back = backward_vertices(G)
    source = render(G, Part(back, "reverse pass", "#D55E00")).source
    assert "reverse pass" in source
    coloured = [line for line in source.splitlines() if "->" in line and "#D55E00" in line]
    into_back = sum(1 for v in G.targets if v in set(back))
    assert len(coloured) == into_back > 0
    with pytest.raises(TypeError, match="vertex names or numbers"):
        render(G, Part(3.5))
