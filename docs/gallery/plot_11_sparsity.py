"""
Sparsity patterns and colouring
===============================

The Jacobian's sparsity pattern follows from the graph alone. Columns that
share no row can be seeded together in one forward sweep, rows that share no
column in one reverse sweep: on a tridiagonal Jacobian three sweeps do the
work of ten.
"""

from minirad import compressed, examples, sparsity
from minirad.draw.patterns import plot_pattern, plot_strategies

g = examples.banded(10)
print(sparsity.pattern(g).astype(int))
pattern = plot_pattern(g)

# %%
# On an arrow-shaped Jacobian neither colouring alone is cheap; a mixed
# strategy is. :func:`minirad.compressed.plan` prices them all.
arrow = examples.arrow(8)
print(compressed.plan(arrow).best.name)
strategies = plot_strategies(arrow, by="passes")
