"""The sparsity and implicit-gradient lab checks accept the reference solutions and
reject planted wrong answers with a targeted hint."""

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad.exact.sparsity import colour_columns
from minirad.labs.lab04_elimination import check_column_colouring
from minirad.labs.lab06_optimisation import check_implicit_gradient


def greedy(P):
    """The reference: each column gets the smallest colour its neighbours lack."""
    colours = []
    for j in range(P.shape[1]):
        taken = {colours[k] for k in range(j) if np.any(P[:, j] & P[:, k])}
        colours.append(min(set(range(len(taken) + 1)) - taken))
    return colours


def test_colouring_accepts_greedy_and_refuses_minirad(capsys):
    check_column_colouring(greedy)
    assert capsys.readouterr().out.count("Exercise 4.3 passed") == 1
    expect_failure(check_column_colouring, lambda P: list(colour_columns(P).colours),
                   "Exercise 4.3", "used the reference", "colour_columns")


def test_colouring_rejects_planted_answers():
    expect_failure(check_column_colouring, lambda P: [0] * P.shape[1],
                   "columns 0 and 1 both have colour 0", "row 0")
    expect_failure(check_column_colouring, lambda P: list(range(P.shape[1])),
                   "valid but uses 6 colours", "needs only 3")
    # neighbours only: misses columns two apart that share a row of the band
    expect_failure(check_column_colouring, lambda P: [j % 2 for j in range(P.shape[1])],
                   "columns 0 and 2 both have colour 0", "row 1")
    # the row colouring: fails on the dense row, where rows do not collide but columns do
    expect_failure(check_column_colouring, lambda P: greedy(P.T),
                   "arrow, dense row (5)", "both are nonzero in row 0")
    expect_failure(check_column_colouring, lambda P: [0] * P.shape[0] if P.shape == (7, 9)
                   else greedy(P), "random 7 x 9", "returned 7 colours (one per column, not "
                   "per row?)")
    expect_failure(check_column_colouring, lambda P: "red", "list of integer colours")
    expect_failure(check_column_colouring, lambda P: [0.5] * P.shape[1],
                   "list of integer colours")


def reference_implicit(f_x, f_p, g_x):
    lam = np.linalg.solve(f_x.T, g_x)      # one transposed solve
    return -lam @ f_p


def test_implicit_accepts_the_reference(capsys):
    check_implicit_gradient(reference_implicit)
    assert "Exercise 6.3 passed" in capsys.readouterr().out


def test_implicit_rejects_planted_answers():
    expect_failure(check_implicit_gradient, lambda fx, fp, gx: -reference_implicit(fx, fp, gx),
                   "off by the sign")
    expect_failure(check_implicit_gradient,
                   lambda fx, fp, gx: -np.linalg.solve(fx, gx) @ fp, "f_x^T lambda = g_x")
    expect_failure(check_implicit_gradient, lambda fx, fp, gx: -np.linalg.solve(fx, fp),
                   "looks like dx/dp")
    expect_failure(check_implicit_gradient, lambda fx, fp, gx: gx @ fp, "should be")


# ------------------------------------------------- the labs' own solutions
@pytest.mark.slow
@lab_group("lab4_elimination")
def test_lab_4_s_colouring_passes_its_check(tmp_path_factory, capsys):
    from minirad import labs

    colour = lab_solution("lab4_elimination", "colour_columns", tmp_path_factory)
    capsys.readouterr()   # what the notebook printed, if it ran just now
    labs.check_column_colouring(colour)
    assert capsys.readouterr().out.startswith("Exercise 4.3 passed")


@pytest.mark.slow
@lab_group("lab6_optimisation")
def test_lab_6_s_implicit_gradient_passes_its_check(tmp_path_factory, capsys):
    from minirad import labs

    implicit = lab_solution("lab6_optimisation", "implicit_gradient", tmp_path_factory)
    capsys.readouterr()
    labs.check_implicit_gradient(implicit)
    assert capsys.readouterr().out.startswith("Exercise 6.3 passed")


def test_checks_let_unsolved_stubs_through():
    def stub(*args):
        raise NotImplementedError("Exercise 9.9: stub")

    for check in (check_column_colouring, check_implicit_gradient):
        with pytest.raises(NotImplementedError, match="Exercise 9.9: stub"):
            check(stub)
