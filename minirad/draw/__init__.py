"""Pictures: the graph with highlights, plots, and the notebook display.

* :mod:`~minirad.draw.render`: one scene, drawn by graphviz or by matplotlib;
* :mod:`~minirad.draw.plots`, :mod:`~minirad.draw.patterns`, :mod:`~minirad.draw.adjoints`:
  matplotlib figures of estimates, sparsity patterns and adjoints;
* :mod:`~minirad.draw.notebook`: how a graph shows itself in Jupyter.
"""
