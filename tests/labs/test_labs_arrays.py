"""Checks of lab 7 (a scalar tracer, pullbacks on tracked arrays): they accept the lab's
reference solutions and minirad itself, and reject planted mistakes with a message
naming the rule, the input and the slip."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from oracles import expect_failure, lab_group, solved_lab

from minirad import labs, ops, trace
from minirad.exact.sweeps import reverse_sweep
from minirad.exact.sweeps import vjp as block_vjp

pytestmark = lab_group("lab7_tracked_arrays")  # one run of the lab per test session

STEM = "lab7_tracked_arrays"


@pytest.fixture(scope="module")
def lab7(tmp_path_factory):
    result = solved_lab(STEM, tmp_path_factory)
    assert result.ok, result
    return result.namespace


@pytest.mark.slow
def test_checks_accept_the_lab_solutions(lab7, capsys):
    labs.check_scalar_tracer(lab7["gradient"])
    labs.check_pullbacks({"matmul": lab7["matmul"]}, lab7["vjp"])
    rules = {"sum": lab7["tsum"], "add": lab7["add"], "sub": lab7["sub"], "abs2": lab7["abs2"],
             "sigmoid": lab7["tsigmoid"], "hcat": lab7["hcat"]}
    labs.check_pullbacks(rules, lab7["vjp"])
    out = capsys.readouterr().out.splitlines()[-3:]
    for line, number in zip(out, ("7.1", "7.2", "7.3")):
        assert re.match(rf"Exercise {number} passed: ", line), line


def minirad_vjp(op, *arrays, wobble):
    return block_vjp(trace(lambda *xs: op(*xs), *arrays), [np.asarray(wobble)])


def test_the_pullback_oracle_accepts_minirad_but_the_exercises_refuse_it(capsys):
    labs.check_pullbacks(labs.ARRAY_RULES, minirad_vjp)  # the oracle, outside an exercise
    assert capsys.readouterr().out.count("passed:") == 1
    expect_failure(labs.check_scalar_tracer,
                   lambda f, x, y: reverse_sweep(trace(lambda a, b: f(a, b, ops.sin), x,
                                                       y)).jacobian[0],
                   "Exercise 7.1", "used the reference", "trace (minirad.tracing.tracer)")
    with pytest.raises(labs.CheckFailed, match="Exercise 7.2.*used the reference"):
        labs.check_matmul_pullback(labs.ARRAY_RULES["matmul"], minirad_vjp)


def test_stubs_pass_through_and_bad_rule_names_are_refused():
    def stub(*args, **kwargs):
        raise NotImplementedError("Exercise 9.9: stub")

    with pytest.raises(NotImplementedError):
        labs.check_scalar_tracer(stub)
    with pytest.raises(NotImplementedError):
        labs.check_pullbacks({"matmul": stub}, minirad_vjp)
    with pytest.raises(ValueError, match="unknown rule"):
        labs.check_pullbacks({"conv": stub}, minirad_vjp)
    with pytest.raises(TypeError, match="dict"):
        labs.check_pullbacks([stub], minirad_vjp)


# ------------------------------------------------- planted scalar-tracer slips
class Slip:
    """A tiny tape tracer with one deliberate mistake switched on."""

    def __init__(self, mistake):
        self.mistake = mistake

    def gradient(self, f, x, y):
        tape, mistake = [], self.mistake

        class V:
            def __init__(self, value):
                self.value, self.adjoint = value, 0.0

            def rec(self, value, *parts):
                r = V(value)
                tape.append((r, parts))
                return r

            def __add__(self, o):
                return self.rec(self.value + o.value, (self, 1.0), (o, 1.0))

            def __sub__(self, o):
                return self.rec(self.value - o.value, (self, 1.0),
                                (o, 1.0 if mistake == "minus" else -1.0))

            def __mul__(self, o):
                if mistake == "swap":
                    return self.rec(self.value * o.value, (self, self.value), (o, o.value))
                return self.rec(self.value * o.value, (self, o.value), (o, self.value))

        def sin(a):
            return a.rec(math.sin(a.value),
                         (a, math.sin(a.value) if mistake == "cos" else math.cos(a.value)))

        X, Y = V(x), V(y)
        z = f(X, Y, sin)
        z.adjoint = 1.0
        for node, parts in reversed(tape):
            for operand, partial in parts:
                if mistake == "overwrite":
                    operand.adjoint = partial * node.adjoint
                else:
                    operand.adjoint += partial * node.adjoint
        return [X.adjoint, Y.adjoint]


@pytest.mark.parametrize("mistake, where, hint", [
    ("swap", "on x * y at (2, 5)", "swapped the partials of a product"),
    ("minus", "on x - y at (2, 5)", "with respect to b is -1"),
    ("cos", "on sin(x) at (0.5, 1)", "is cos(a)"),
    ("overwrite", "on x * x at (3, 1)", "must not overwrite"),
])
def test_scalar_tracer_check_names_each_slip(mistake, where, hint):
    labs.check_scalar_tracer(Slip(None).gradient)  # the unplanted tracer passes
    expect_failure(labs.check_scalar_tracer, Slip(mistake).gradient,
                   f"Exercise 7.1 (scalar tracer), {where}", hint)


# ------------------------------------------------------ planted pullback slips
def wrong(rule, fn):
    """A vjp whose rule `rule` computes its input gradients with fn (minirad for the rest)."""
    def vjp(op, *arrays, wobble):
        return fn(*arrays, wobble=np.asarray(wobble))
    return {rule: labs.ARRAY_RULES[rule]}, vjp


@pytest.mark.parametrize("rule, fn, fragments", [
    ("matmul", lambda X, Y, wobble: [X.T @ wobble, wobble @ Y.T],
     ["pullback of matmul", "has shape", "wobble @ Y^T"]),
    ("matmul", lambda X, Y, wobble: [(Y @ wobble.T), X.T @ wobble],
     ["gradient of input 1", "transposed"]),
    ("sum", lambda x, wobble: [wobble], ["pullback of sum", "spreads the scalar wobble"]),
    ("sub", lambda X, Y, wobble: [wobble, wobble], ["gradient of input 2", "is -wobble"]),
    ("abs2", lambda x, wobble: [wobble * x], ["pullback of abs2", "is 2x"]),
    ("sigmoid", lambda x, wobble: [wobble * x * (1 - x)], ["use the output sigma(x)"]),
    ("sigmoid", lambda x, wobble: [wobble / (1 + np.exp(-x))], ["(1 - sigma(x))"]),
    ("hcat", lambda A, B, C, wobble: [wobble[:, :1], wobble[:, :3], wobble[:, 3:]],
     ["pullback of hcat", "gradient of input 2", "differs from minirad's"]),
    ("hcat", lambda A, B, C, wobble: [wobble, wobble, wobble],
     ["gradient of input 1 has shape", "its own shape"]),
    ("add", lambda X, Y, wobble: [wobble, 2 * wobble], ["pullback of add", "input 2"]),
])
def test_pullback_check_rejects_planted_rules(rule, fn, fragments):
    rules, vjp = wrong(rule, fn)
    with pytest.raises(labs.CheckFailed) as caught:
        labs.check_pullbacks(rules, vjp)
    message = str(caught.value)
    assert message.startswith("Exercise 7.") and "on an array of shape" in message, message
    for fragment in fragments:
        assert fragment in message, message
