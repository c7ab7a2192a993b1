"""The gap search of minirad.studies.elimination_gaps and the named example it found."""

import networkx as nx
import pytest

from minirad import examples
from minirad.studies.elimination_gaps import KINDS, SEEDS, optimum, search_gap


def test_the_search_finds_the_named_example():
    gap = search_gap("edge", "vertex", max_edges=10, tries=300, rng=SEEDS["edge_beats_vertex"])
    assert gap.costs == {"edge": 6, "vertex": 7}
    assert gap.tries == 44
    assert examples.random_dag(**gap.parameters).same_as(gap.graph)
    # the named example is the same graph, renamed and with new partials
    found, named = gap.graph.to_networkx(), examples.edge_beats_vertex().to_networkx()
    assert nx.is_isomorphic(found, named, node_match=lambda a, b: a["kind"] == b["kind"])
    assert [optimum(examples.edge_beats_vertex(), kind) for kind in ("vertex", "edge")] == [7, 6]


def test_no_gap_in_too_few_tries():
    assert search_gap("edge", "vertex", max_edges=10, tries=43,
                      rng=SEEDS["edge_beats_vertex"]) is None


@pytest.mark.parametrize("cheaper, dearer, fragment", [
    ("vertex", "edge", "can never be strictly cheaper"),
    ("edge", "edge", "can never be strictly cheaper"),
    ("edges", "vertex", "unknown kind of elimination 'edges'"),
])
def test_bad_kinds(cheaper, dearer, fragment):
    with pytest.raises(ValueError, match=fragment):
        search_gap(cheaper, dearer, tries=1, rng=0)


def test_optimum_of_each_kind():
    assert [optimum(examples.lab(), kind) for kind in KINDS] == [3, 3, 3]
    with pytest.raises(ValueError, match="unknown kind"):
        optimum(examples.lab(), "paths")
