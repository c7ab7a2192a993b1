"""Every exact way to a Jacobian: sweeps, Bauer's paths, elimination.

* :mod:`~minirad.exact.jacobians`: the one entry point, ``jacobian`` and ``accumulate``;
* :mod:`~minirad.exact.sweeps`: forward and reverse sweeps, JVP and VJP;
* :mod:`~minirad.exact.paths`: Bauer's formula and exact path counts;
* :mod:`~minirad.exact.elimination`: elimination of vertices, edges or faces in any
  order, with its costs; :mod:`~minirad.exact.dual`: the dual c-graph face steps
  change; :mod:`~minirad.exact.orders`: the exhaustive searches for the cheapest order;
* :mod:`~minirad.exact.result`: what every exact method returns;
* :mod:`~minirad.exact.sparsity`, :mod:`~minirad.exact.compressed`: sparsity patterns,
  colourings and compressed sweeps.
* :mod:`~minirad.exact.elimination_gaps`: a census of small random graphs for gaps
  between the vertex, edge and face elimination optima (an application of the
  eliminations: it draws its graphs from :mod:`minirad.examples`).
"""
