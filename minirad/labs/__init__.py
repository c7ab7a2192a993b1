"""The lab series: exercise checks, the picture helper, and handout/solution notebooks.

In a lab::

    from minirad import labs
    labs.check_forward_sweep(forward_sweep)   # one line on success, CheckFailed otherwise
    labs.show(render(g), "lab2_lecture_lcg")  # inline in Jupyter, else a PNG

For instructors (the ``minirad lab`` command calls these)::

    labs.write_notebooks("tutorials/", "handouts/")                  # stubs
    labs.write_notebooks("tutorials/", "solutions/", solutions=True)  # reference code

>>> from minirad import labs
>>> issubclass(labs.CheckFailed, AssertionError)
True
"""

from . import hints
from .checks import (
    CheckFailed,
    call_student,
    check_central_difference,
    check_count_paths,
    check_directional_difference,
    check_forward_sweep,
    check_graphs,
    check_reverse_sweep,
    compare_jacobian,
    output_folder,
    passed,
    show,
    time_limit,
)
from .checks_accumulation import check_add_bang
from .checks_arrays import (
    ARRAY_RULES,
    check_matmul_pullback,
    check_other_pullbacks,
    check_pullbacks,
    check_scalar_tracer,
)
from .checks_codegen import check_adjoint_by_hand, check_step_diagonals
from .checks_edges import check_eliminate_edge
from .checks_higher import check_dual_numbers, check_hvp
from .checks_injection import check_rademacher_P, check_sampling_P, check_variance_k1
from .checks_memory import (
    check_checkpointed_gradient,
    check_rad_budget,
    check_table1_bytes,
    check_uniform_cost,
)
from .checks_more import (
    check_descent_step,
    check_eliminate_vertex,
    check_markowitz_order,
    check_sample_Q,
    check_sgd,
    edge_dict,
    line_fit_loss,
    sample_jacobian,
)
from .checks_rad_nn import check_different_sample, check_same_sample, check_z_scores
from .checks_sparse import check_column_colouring, check_implicit_gradient
from .checks_symbolic import check_tree_size
from .exercise import EXERCISES, Exercise, exercises_of_lab
from .notebook import exercises, run_notebook, to_notebook, write_notebooks

hints.install()  # in a Jupyter kernel, a failed check shows its hint first

__all__ = [
    "ARRAY_RULES", "check_add_bang", "check_eliminate_edge", "EXERCISES", "Exercise",
    "check_matmul_pullback", "check_other_pullbacks",
    "check_pullbacks", "check_scalar_tracer", "exercises_of_lab",
    "check_checkpointed_gradient", "check_rad_budget", "check_table1_bytes",
    "check_uniform_cost",
    "CheckFailed", "call_student", "check_central_difference", "check_column_colouring",
    "check_count_paths", "check_implicit_gradient",
    "check_descent_step", "check_directional_difference", "check_eliminate_vertex",
    "check_forward_sweep", "check_graphs", "check_rademacher_P", "check_sampling_P",
    "check_variance_k1", "check_markowitz_order", "check_reverse_sweep",
    "check_sample_Q", "check_sgd", "compare_jacobian", "edge_dict", "exercises",
    "line_fit_loss", "output_folder", "passed", "run_notebook", "sample_jacobian", "show",
    "time_limit", "to_notebook", "write_notebooks",
    "check_different_sample", "check_same_sample", "check_z_scores", "check_tree_size",
    "check_dual_numbers", "check_hvp", "check_adjoint_by_hand", "check_step_diagonals",
]
