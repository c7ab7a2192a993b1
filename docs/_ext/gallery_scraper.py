"""A sphinx-gallery scraper for minirad's pictures.

minirad's plots are matplotlib Figures made without pyplot, and its graph
drawings are graphviz graphs, so sphinx-gallery's own matplotlib scraper sees
neither.  After each code block this scraper looks at the example's variables
and saves every Figure or graphviz graph (or list of graphviz graphs, as
``render_elimination`` returns) that it has not shown yet, with
``minirad.save_drawing``, which draws with matplotlib when graphviz's ``dot`` is
missing.  In a downloaded notebook the same variables show inline by themselves.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from sphinx_gallery.scrapers import figure_rst

SHOWN = "minirad_shown"  # kept in the example's variables of sphinx-gallery


def _pictures(value) -> list:
    import graphviz
    from matplotlib.figure import Figure

    kinds = (Figure, graphviz.Digraph, graphviz.Graph)
    if isinstance(value, kinds):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, kinds) for v in value):
        return list(value)
    return []


def minirad_scraper(block, block_vars, gallery_conf) -> str:
    """Save the pictures that the last block bound to a variable; return their reST."""
    import minirad

    # the shown pictures are kept alive here, so that a new picture cannot
    # reuse the id of one shown earlier and be skipped
    shown = block_vars.setdefault(SHOWN, [])
    seen = {id(picture) for picture in shown}
    fresh = []
    for value in list(block_vars["example_globals"].values()):
        for picture in _pictures(value):
            if id(picture) not in seen:
                seen.add(id(picture))
                fresh.append(picture)
    paths = []
    for picture, path in zip(fresh, block_vars["image_path_iterator"]):
        minirad.save_drawing(picture, str(path))
        paths.append(PurePosixPath(path))
    shown += fresh
    # one picture after another, each at the width of the text: given several at once,
    # sphinx-gallery would show them as a row of thumbnails
    return "".join(figure_rst([path], gallery_conf["src_dir"]) for path in paths)


def _get_sg_image_scraper():
    """How sphinx-gallery finds a scraper named by its module (``"gallery_scraper"``):
    a name, unlike a function, keeps the configuration picklable for Sphinx's cache."""
    return minirad_scraper
