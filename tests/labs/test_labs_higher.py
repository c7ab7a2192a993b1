"""Lab 12's checks accept the reference solutions, refuse minirad's own answers, and
reject planted wrong answers with a targeted hint (the planted mistakes of
minirad/labs/lab12_higher.py are run through the grader in tests/test_labs_grade.py)."""

import numpy as np
import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad.exact import higher
from minirad.labs.lab12_higher import HVP_PROGRAMS, RULES, check_dual_numbers, check_hvp
from minirad.tracing.dual import Dual

pytestmark = lab_group("lab12_higher")  # one run of the lab per test session


@pytest.mark.slow
def test_accepts_the_reference_solutions(tmp_path_factory, capsys):
    dual = lab_solution("lab12_higher", "Dual", tmp_path_factory)
    hvp = lab_solution("lab12_higher", "hvp", tmp_path_factory)
    capsys.readouterr()
    check_dual_numbers(dual)
    check_hvp(hvp)
    out = capsys.readouterr().out
    assert "Exercise 12.1 passed" in out and "Exercise 12.2 passed" in out


@pytest.mark.slow
def test_the_solution_s_hvp_on_the_lab_s_own_tracer_and_duals(tmp_path_factory):
    # forward over reverse entirely on the lab's code: its Var tracer, its Dual
    names = {name: lab_solution("lab12_higher", name, tmp_path_factory)
             for name in ("hvp", "gradient", "Dual")}
    for name, program, point, v in HVP_PROGRAMS:
        mine = names["hvp"](program, list(point), list(v), names["gradient"], names["Dual"])
        np.testing.assert_allclose(mine, higher.hessian(program, *point) @ v, rtol=1e-12,
                                   atol=1e-12, err_msg=name)


def test_the_rules_by_hand_are_the_derivatives():
    # each rule's tangent against a central difference along the seeded direction
    from minirad.labs.lab12_higher import TX, TY, X, Y

    h = 1e-6
    for name, rule, value, tangent in RULES:
        value, tangent = value(X, Y), tangent(X, Y, TX, TY)
        assert abs(rule(X, Y) - value) <= 1e-14 * max(1.0, abs(value)), name
        difference = (rule(X + h * TX, Y + h * TY) - rule(X - h * TX, Y - h * TY)) / (2 * h)
        assert abs(difference - tangent) <= 1e-7 * max(1.0, abs(tangent)), name


def test_minirad_s_own_answers_are_refused():
    expect_failure(check_dual_numbers, Dual, "used the reference")

    def hvp_by_minirad(f, x, v, gradient, Dual):
        return higher.hvp(f, *x, v=v)

    expect_failure(check_hvp, hvp_by_minirad, "used the reference")


def test_a_result_that_is_not_a_dual_is_named():
    class Plain:
        def __init__(self, value, tangent):
            self.value = value

        def __add__(self, other):
            return self.value + other.value

    expect_failure(check_dual_numbers, Plain, "must return a Dual")
