"""The check of lab 4's edge elimination exercise (4.4): it accepts the lab's
reference solution and a second correct answer, and rejects planted mistakes
with a message naming the graph, the step and, for the common slips, the slip."""

import re

import pytest
from oracles import expect_failure, lab_group, lab_solution

from minirad import LCG
from minirad.exact.elimination import eliminate
from minirad.labs.lab04_elimination import check_eliminate_edge, edge_dict

pytestmark = lab_group("lab4_elimination")  # one run of the lab per test session


def by_hand(edges, i, j, direction):
    """A second correct answer, written here from the definitions."""
    new = dict(edges)
    c_ji = new.pop((i, j))
    if direction == "front":
        for (a, k), c_kj in edges.items():
            if a == j:
                new[i, k] = new.get((i, k), 0.0) + c_kj * c_ji
        if not any(b == j for _, b in new):
            new = {(a, b): c for (a, b), c in new.items() if a != j}
    else:
        for (h, b), c_ih in edges.items():
            if b == i:
                new[h, j] = new.get((h, j), 0.0) + c_ji * c_ih
        if not any(a == i for a, _ in new):
            new = {(a, b): c for (a, b), c in new.items() if b != i}
    return new


def by_minirad(edges, i, j, direction):
    """minirad's own step, on the dict made into an LCG: the reference a student must
    not call."""
    g = LCG.from_edges([(u, w, d) for (u, w), d in edges.items()], [], [])
    return edge_dict(eliminate(g, [(i, j, direction)], on="edges").graph)


@pytest.mark.slow
def test_check_accepts_the_lab_solution(tmp_path_factory, capsys):
    solution = lab_solution("lab4_elimination", "eliminate_edge", tmp_path_factory)
    capsys.readouterr()
    check_eliminate_edge(solution)
    assert re.fullmatch(r"Exercise 4\.4 passed: .+\n", capsys.readouterr().out)


def test_check_accepts_another_correct_answer_and_refuses_minirad_s_own(capsys):
    check_eliminate_edge(by_hand)
    assert "Exercise 4.4 passed" in capsys.readouterr().out
    expect_failure(check_eliminate_edge, by_minirad, "used the reference",
                   "minirad.exact.elimination")


def test_a_stub_passes_through():
    def stub(edges, i, j, direction):
        raise NotImplementedError("Exercise 4.4: eliminate one edge")

    with pytest.raises(NotImplementedError, match="Exercise 4.4"):
        check_eliminate_edge(stub)


def test_replacing_instead_of_adding_is_named():
    def replaces(edges, i, j, direction):
        new = by_hand(edges, i, j, direction)
        for (u, w) in new:  # the product alone where an edge was already there
            if (u, w) in edges and new[u, w] != edges[u, w]:
                new[u, w] -= edges[u, w]
        return new

    expect_failure(check_eliminate_edge, replaces, "already carried", "parallel paths add up")


def test_keeping_a_vertex_nothing_reaches_is_named():
    def keeps(edges, i, j, direction):
        new = dict(by_hand(edges, i, j, direction))
        end = j if direction == "front" else i
        for (u, w), c in edges.items():
            if end in (u, w) and (u, w) != (i, j):
                new.setdefault((u, w), c)
        return new

    expect_failure(check_eliminate_edge, keeps, "has no in-edge left", "it goes with its other")


def test_back_done_as_front_is_caught():
    def always_front(edges, i, j, direction):
        if direction == "back":
            raise ValueError("I only know front elimination")
        return by_hand(edges, i, j, direction)

    expect_failure(check_eliminate_edge, always_front, "back-eliminating", "ValueError")


def test_changing_the_given_dict_and_bad_results_are_named():
    def mutates(edges, i, j, direction):
        result = by_hand(edges, i, j, direction)
        edges.clear()
        return result

    expect_failure(check_eliminate_edge, mutates, "changed the dict it was given")
    expect_failure(check_eliminate_edge, lambda edges, i, j, d: list(edges),
                   "returned list", "return a new dict")
    expect_failure(check_eliminate_edge, lambda edges, i, j, d: {"x1v2": 1.0},
                   "the key 'x1v2'")
    expect_failure(check_eliminate_edge,
                   lambda edges, i, j, d: {k: "one" for k in by_hand(edges, i, j, d)},
                   "which is not a number")


def test_a_missing_and_an_extra_edge_are_named():
    def drops(edges, i, j, direction):
        new = by_hand(edges, i, j, direction)
        new.pop(sorted(new)[0])
        return new

    expect_failure(check_eliminate_edge, drops, "your result has no edge")

    def adds(edges, i, j, direction):
        return {**by_hand(edges, i, j, direction), ("nowhere", "else"): 1.0}

    expect_failure(check_eliminate_edge, adds, "nowhere -> else that should not be there")
