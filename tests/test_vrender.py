"""Pictures of the vector LCG: what the labels say, injected edges drawn distinctly, files
written with and without the dot program."""

import numpy as np
import pytest

import minirad.draw.vrender as V
from minirad.draw.vrender import figure3_graph, render_vector, save_vector_picture
from minirad.randomized.injection import inject_vertex

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_labels_name_shapes_kinds_bytes_and_total():
    g = figure3_graph()
    source = render_vector(g, title="t", batch=3).source
    for text in ("h1 ∈ R^(3×5)", "W2 ∈ R^(5×2)", "y ∈ R\\n", "relu(h1)", "X @ W1",
                 "outer\\n48 B", "outer\\n60 B", "mask\\n0 B (rebuilt from a1)",
                 "matmul\\n0 B (W2 kept anyway)", "132 B (44 B per example of 3)"):
        assert text in source, text
    assert "dashed" not in source


def test_injected_projections_are_drawn_distinctly_with_k():
    source = render_vector(figure3_graph(injected=True)).source
    assert source.count("style=dashed") == 2 and "sampled k=2" in source
    assert "2 injected projections" in source
    g = inject_vertex(figure3_graph(), "a1", 3, "rademacher", axis=1, batch_axis=0, rng=0)
    source = render_vector(g).source
    assert "P k=3" in source and "penwidth=2" in source      # the vertex and its edge


@pytest.mark.parametrize("dot_installed", [True, False])
def test_files_with_and_without_dot(tmp_path, monkeypatch, dot_installed):
    if dot_installed and not V.has_dot():
        pytest.skip("the graphviz dot program is not installed")
    monkeypatch.setattr(V, "has_dot", lambda: dot_installed)
    g = figure3_graph(injected=True)
    png = save_vector_picture(g, tmp_path / "g.png", title="t", batch=3)
    data = open(png, "rb").read()
    assert data[:8] == PNG_MAGIC and len(data) > 5000
    again = save_vector_picture(g, tmp_path / "h.png", title="t", batch=3)
    assert open(again, "rb").read() == data                 # deterministic
    assert open(save_vector_picture(g, tmp_path / "g.dot"), encoding="utf-8").read().startswith(
        "digraph vector_lcg")
    with pytest.raises(ValueError, match="as .png, .svg or .dot"):
        save_vector_picture(g, tmp_path / "g.jpeg")


def test_render_refuses_other_objects():
    with pytest.raises(TypeError, match="takes a LCG"):
        render_vector(np.ones(3))


def test_blocks_are_drawn_as_their_matrices_and_large_ones_listed():
    g = figure3_graph()
    figure = V.draw_blocks(g)
    assert len(figure.axes) == g.n_edges
    first = figure.axes[0].images[0].get_array()
    np.testing.assert_array_equal(first, g.labels[0].to_dense())
    assert "15 × 20, 60 nonzero" in figure.axes[0].get_title()
    small = V.draw_blocks(g, limit=10)
    assert not small.axes[0].images and "too large to draw" in small.axes[0].texts[0].get_text()
