"""The linearized computational graph: vertices with shapes, edges with labels.

* :mod:`~minirad.graph.labels`: the label algebra and the one recurrence every exact method runs;
* :mod:`~minirad.graph.operators`: Jacobian blocks, the labels of array edges;
* :mod:`~minirad.graph.lcg`: the graph object, its validation, networkx and the Wengert list;
* :mod:`~minirad.graph.files`: saving and loading;
* :mod:`~minirad.graph.names`: vertex names written out only when read.
"""
