"""Gradient checkpointing: trade recomputation for memory.

* :mod:`~minirad.checkpoint.schedules`: store-all, sqrt(N) and binomial schedules on a chain;
* :mod:`~minirad.checkpoint.on_graph`: the same schedules on a chain-shaped LCG.
"""
