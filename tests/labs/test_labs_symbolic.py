"""Lab 11's check accepts the reference solution and minirad's count, and rejects
planted wrong answers with a targeted hint (one of them, a count that visits every
node, only by the time limit: that test takes the check's 5 seconds)."""

import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad import symbolic
from minirad.labs.lab11_symbolic import SECONDS, check_tree_size, tree_size_cases

pytestmark = lab_group("lab11_symbolic")  # one run of the lab per test session

sp = pytest.importorskip("sympy")


def test_the_cases_are_counted_independently():
    # the closed form of the deep case against a full walk of shallower ones, and the
    # small cases against a walk of every node
    from minirad.labs.lab11_symbolic import _size, expression

    small, deep = tree_size_cases()
    for name, spec in small["questions"]:
        assert _size(spec) == sum(1 for _ in sp.preorder_traversal(expression(spec))), name
    assert _size(deep["questions"][0][1]) == 5 * 2**39 - 1
    for depth in (2, 3, 6):
        walked = sum(1 for _ in sp.preorder_traversal(expression(["composition", depth])))
        assert _size(["composition", depth]) == walked


@pytest.mark.slow
def test_accepts_the_reference_and_refuses_minirads_own(tmp_path_factory, capsys):
    solution = lab_solution("lab11_symbolic", "tree_size", tmp_path_factory)
    capsys.readouterr()
    check_tree_size(solution)
    assert capsys.readouterr().out.count("Exercise 11.1 passed") == 1
    expect_failure(check_tree_size, symbolic.tree_size, "used the reference")


def distinct_nodes(e):
    return len(set(sp.preorder_traversal(e)))


def leaves_only(e):
    return 1 if not e.args else sum(leaves_only(a) for a in e.args)


def memoised(e, sizes=None):
    sizes = {} if sizes is None else sizes
    if e not in sizes:
        sizes[e] = 1 + sum(memoised(a, sizes) for a in e.args)
    return sizes[e]


def test_rejects_planted_answers():
    expect_failure(check_tree_size, distinct_nodes, "on x*sin(x)", "returned 3, expected 4",
                   "distinct subexpression once")
    expect_failure(check_tree_size, leaves_only, "counted only the leaves")
    expect_failure(check_tree_size, lambda e: memoised(e) - 1, "on x: your function returned 0",
                   "one short: count the node itself")
    expect_failure(check_tree_size, lambda e: int(sp.count_ops(e)), "sympy.count_ops")
    expect_failure(check_tree_size, lambda e: float(memoised(e)), "as an int, not float")


def test_a_count_that_visits_every_node_is_stopped_with_a_hint():
    def naive(e):
        return 1 + sum(naive(a) for a in e.args)

    message = expect_failure(check_tree_size, naive, "x_40", f"longer than {SECONDS:g} s",
                             "2.7e+12 nodes", "remember the size of each distinct")
    assert "Exercise 11.1 (tree size)" in message
