"""The lab series: one module per lab (its checks, planted mistakes and declarations), the
grader, the notebook tools and the instructor's pack.

In a lab::

    from minirad import labs
    labs.check_forward_sweep(forward_sweep)   # one line on success, CheckFailed otherwise
    labs.show(render(g), "lab2_lecture_lcg")  # inline in Jupyter, else a PNG

Where things live:

* ``lab01_finite_differences.py`` ... ``lab13_codegen.py``: each lab's exercises, declared
  with :func:`~minirad.labs.exercise.exercise` next to their checks, and the lab's planted
  mistakes (``MISTAKES``); a new exercise goes into its lab's module, and nowhere else;
* :mod:`~minirad.labs.checking`: what checks are built from (``CheckFailed``, ``show``...);
* :mod:`~minirad.labs.exercise`: the declarations and the reference guard;
* :mod:`~minirad.labs.grading`: the grader (``minirad lab grade``);
* :mod:`~minirad.labs.notebook`: lab scripts to handout and solutions notebooks;
* :mod:`~minirad.labs.instructors`: the generated parts of the instructor's guide.

For instructors (the ``minirad lab`` command calls these)::

    labs.write_notebooks("tutorials/", "handouts/")                  # stubs
    labs.write_notebooks("tutorials/", "solutions/", solutions=True)  # reference code

>>> from minirad import labs
>>> issubclass(labs.CheckFailed, AssertionError)
True
>>> [lab.__name__.rsplit(".", 1)[1] for lab in labs.LABS][:2]
['lab01_finite_differences', 'lab02_lcg']
"""

from . import (
    hints,
    lab01_finite_differences,
    lab02_lcg,
    lab03_bauer,
    lab04_elimination,
    lab05_randomized,
    lab06_optimisation,
    lab07_tracked_arrays,
    lab08_memory,
    lab09_rad_nn,
    lab10_injection,
    lab11_symbolic,
    lab12_higher,
    lab13_codegen,
)
from .checking import (
    CheckFailed,
    as_numbers,
    call_student,
    compare_jacobian,
    output_folder,
    passed,
    show,
    time_limit,
)
from .exercise import EXERCISES, Exercise, exercises_of_lab
from .lab01_finite_differences import check_central_difference, check_directional_difference
from .lab02_lcg import check_forward_sweep, check_graphs, check_reverse_sweep
from .lab03_bauer import check_count_paths
from .lab04_elimination import (
    check_column_colouring,
    check_eliminate_edge,
    check_eliminate_vertex,
    check_markowitz_order,
    edge_dict,
    sample_jacobian,
)
from .lab05_randomized import (
    check_sample_Q,
    check_two_level_variance,
    check_variance_k1,
    fan_graph,
)
from .lab06_optimisation import (
    adjoint_inputs,
    check_descent_step,
    check_implicit_gradient,
    check_ode_adjoint,
    check_sgd,
    check_solve_adjoint,
    line_fit_loss,
)
from .lab07_tracked_arrays import (
    ARRAY_RULES,
    check_add_bang,
    check_matmul_pullback,
    check_other_pullbacks,
    check_pullbacks,
    check_scalar_tracer,
)
from .lab08_memory import (
    check_checkpointed_gradient,
    check_eq8_gradient,
    check_rad_budget,
    check_table1_bytes,
    check_uniform_cost,
)
from .lab09_rad_nn import check_different_sample, check_same_sample, check_z_scores
from .lab10_injection import check_rademacher_P, check_sampling_P
from .lab11_symbolic import check_tree_size
from .lab12_higher import check_dual_numbers, check_hvp
from .lab13_codegen import check_adjoint_by_hand, check_step_diagonals
from .notebook import exercises, run_notebook, to_notebook, write_notebooks

#: the labs, in order: each module holds its lab's checks, mistakes and declarations
LABS = (lab01_finite_differences, lab02_lcg, lab03_bauer, lab04_elimination, lab05_randomized,
        lab06_optimisation, lab07_tracked_arrays, lab08_memory, lab09_rad_nn, lab10_injection,
        lab11_symbolic, lab12_higher, lab13_codegen)

hints.install()  # in a Jupyter kernel, a failed check shows its hint first

__all__ = [
    "ARRAY_RULES", "CheckFailed", "EXERCISES", "Exercise", "LABS", "adjoint_inputs", "as_numbers",
    "call_student", "check_add_bang", "check_adjoint_by_hand", "check_central_difference",
    "check_checkpointed_gradient", "check_column_colouring", "check_count_paths",
    "check_descent_step", "check_different_sample", "check_directional_difference",
    "check_dual_numbers", "check_eliminate_edge", "check_eliminate_vertex", "check_eq8_gradient",
    "check_forward_sweep", "check_graphs", "check_hvp", "check_implicit_gradient",
    "check_markowitz_order", "check_matmul_pullback", "check_ode_adjoint", "check_other_pullbacks",
    "check_pullbacks", "check_rad_budget", "check_rademacher_P", "check_reverse_sweep",
    "check_same_sample", "check_sample_Q", "check_sampling_P", "check_scalar_tracer", "check_sgd",
    "check_solve_adjoint", "check_step_diagonals", "check_table1_bytes", "check_tree_size",
    "check_two_level_variance", "check_uniform_cost", "check_variance_k1", "check_z_scores",
    "compare_jacobian", "edge_dict", "exercises", "exercises_of_lab", "fan_graph", "line_fit_loss",
    "output_folder", "passed", "run_notebook", "sample_jacobian", "show", "time_limit",
    "to_notebook", "write_notebooks",
]
