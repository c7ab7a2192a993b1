"""From a Python function to an LCG.

* :mod:`~minirad.tracing.ops`: the table of elementary operations, their values and partials;
* :mod:`~minirad.tracing.tape`: the tracer of scalar programs;
* :mod:`~minirad.tracing.arrays`: the tracer of numpy array programs.
"""
