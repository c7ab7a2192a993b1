"""Pictures of sparsity patterns and strategies: what they draw, checked on the
figures' artists against the colourings and the plan."""

import numpy as np
from matplotlib.figure import Figure

from minirad import examples
from minirad.draw.figure import png
from minirad.draw.patterns import plot_pattern, plot_strategies
from minirad.exact.compressed import plan
from minirad.exact.sparsity import colour_columns, colour_rows, pattern


def test_pattern_picture_numbers_each_nonzero_with_its_group():
    g = examples.arrow(5, column=False)
    fig = plot_pattern(g)
    assert isinstance(fig, Figure) and png(fig)[:4] == b"\x89PNG"
    P = pattern(g)
    left, right = fig.axes
    for ax, colouring, side in ((left, colour_columns(P), 0), (right, colour_rows(P), 1)):
        texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
                 for t in ax.texts}
        assert set(texts) == {tuple(ij) for ij in np.argwhere(P)}
        for (i, j), text in texts.items():
            assert int(text) == colouring.colours[j if side == 0 else i]
    assert left.get_title().startswith("forward: 5 column groups")
    assert right.get_title().startswith("reverse: 2 row groups")


def test_pattern_picture_takes_a_pattern_and_skips_numbers_when_large():
    P = np.eye(30, dtype=bool)
    fig = plot_pattern(P)
    assert all(not ax.texts for ax in fig.axes)
    assert "1 column groups" in fig.axes[0].get_title()


def test_strategy_table_lists_every_strategy_and_highlights_the_choice():
    g = examples.banded(8)
    p = plan(g)
    fig = plot_strategies(p)
    table = fig.axes[0].tables[0]
    cells = table.get_celld()
    names = [cells[(r, 0)].get_text().get_text() for r in range(1, len(p.seedings) + 1)]
    assert names == [s.name for s in p.seedings]
    for r, s in enumerate(p.seedings, start=1):
        assert cells[(r, 3)].get_text().get_text() == str(s.multiplications)
        assert cells[(r, 5)].get_text().get_text() == str(s.pass_multiplications)
    chosen = names.index(p.best.name) + 1
    other = 1 if chosen != 1 else 2
    assert cells[(chosen, 0)].get_facecolor() != cells[(other, 0)].get_facecolor()
    assert "Chosen: coloured reverse" in fig.axes[0].texts[0].get_text()
    by_passes = plot_strategies(examples.arrow(6), by="passes")
    assert by_passes.axes[0].get_title().endswith("(chosen by passes: mixed)")
