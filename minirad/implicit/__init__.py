"""Edges that are solved, not formed: linear solves, roots and ODE adjoints.

* :mod:`~minirad.implicit.solves`: ``np.linalg.solve`` on traced arrays, ``solve_root``;
* :mod:`~minirad.implicit.ode_adjoint`: discrete and continuous adjoints of ODE solves.
"""
