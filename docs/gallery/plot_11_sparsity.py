"""
Sparsity patterns and colouring
===============================

The Jacobian's sparsity pattern follows from the graph alone. Columns that
share no row can be seeded together in one forward sweep, rows that share no
column in one reverse sweep: on a tridiagonal Jacobian three sweeps do the
work of ten.
"""

from minirad import examples
from minirad.draw.patterns import plot_pattern, plot_strategies
from minirad.exact import compressed, sparsity

g = examples.banded(10)
print(sparsity.pattern(g).astype(int))
pattern = plot_pattern(g)
pattern

# %%
# An arrow-shaped Jacobian is dense in one row and in one column, so neither
# colouring saves a sweep: both need 8. A mixed strategy gives the dense
# parts sweeps of their own and colours what is left, now sparse: 3 sweeps in
# all. Counted in multiplications, plain reverse mode stays cheapest (44
# against 60). :func:`minirad.exact.compressed.plan` prices every strategy and
# picks by either criterion.
arrow = examples.arrow(8)
print("fewest sweeps:", compressed.plan(arrow, by="passes").best.name)
print("fewest multiplications:", compressed.plan(arrow).best.name)
strategies = plot_strategies(arrow, by="passes")
strategies
