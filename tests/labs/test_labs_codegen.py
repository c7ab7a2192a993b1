"""Lab 13's checks accept the reference solutions, refuse minirad's own answers, and
reject planted wrong answers with a targeted hint (every planted mistake of
minirad/labs/lab13_codegen.py are run through the grader in tests/labs/test_labs_grade.py)."""

import numpy as np
import pytest
from oracles import expect_failure, lab_solution

import minirad
from minirad.labs.lab13_codegen import (
    check_adjoint_by_hand,
    check_step_diagonals,
    layer,
    relaxation_step,
)


@pytest.mark.slow
def test_accepts_the_reference_solutions(tmp_path_factory, capsys):
    adjoint = lab_solution("lab13_codegen", "adjoint", tmp_path_factory)
    diagonals = lab_solution("lab13_codegen", "step_diagonals", tmp_path_factory)
    capsys.readouterr()
    check_adjoint_by_hand(adjoint)
    check_step_diagonals(diagonals)
    out = capsys.readouterr().out
    assert "Exercise 13.1 passed" in out and "Exercise 13.2 passed" in out


def test_the_oracles_are_the_derivatives():
    # the programs the checks differentiate, against central differences
    rng = np.random.default_rng(0)
    W, x, h = rng.standard_normal((3, 2)), rng.standard_normal(2), 1e-6
    _, (W_bar, _) = minirad.codegen(minirad.trace(layer, W, x))(W, x)
    E = np.zeros_like(W)
    E[1, 0] = h
    assert abs((layer(W + E, x) - layer(W - E, x)) / (2 * h) - W_bar[1, 0]) < 1e-8
    xs, c = np.array([0.3]), np.array([1.2])
    step = (relaxation_step(xs + h, c) - relaxation_step(xs - h, c)) / (2 * h)
    assert abs(step[0] - (1 + 0.01 * (1.2 - 3 * 0.09))) < 1e-8


def test_minirad_s_own_answers_are_refused():
    def adjoint_by_minirad(W, x, y_bar):
        code = minirad.codegen(minirad.trace(layer, W, x))
        return code(W, x, cotangents=[np.asarray(y_bar)])

    expect_failure(check_adjoint_by_hand, adjoint_by_minirad, "used the reference")

    def diagonals_by_minirad(x, c):
        J = minirad.jacobian(relaxation_step, x, c)
        n = len(x)
        return np.diag(J[:, :n]), np.diag(J[:, n:])

    expect_failure(check_step_diagonals, diagonals_by_minirad, "used the reference")


def test_a_result_of_the_wrong_form_is_named():
    expect_failure(check_adjoint_by_hand, lambda W, x, y_bar: np.tanh(W @ x).sum(),
                   "return (y, (W_bar, x_bar))")
    expect_failure(check_step_diagonals, lambda x, c: 0.01 * x, "return (d_x, d_c)")
