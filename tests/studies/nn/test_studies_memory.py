"""Table 1 of the RAD paper from its memory rules, against the printed table and
hand arithmetic from Appendix A."""

import doctest
import math

import pytest
from oracles import ROOT

from minirad.studies.nn import memory
from minirad.studies.nn.memory import (
    FRACTIONS,
    PAPER_TABLE1,
    Layer,
    Network,
    convnet,
    equal_memory_batch,
    irnn,
    kept_entries,
    mlp,
    parameter_count,
    per_example_bytes,
    table1_rows,
    total_bytes,
)


def test_mlp_per_example_bytes_are_appendix_a():
    # Appendix A: (784 + 300 + 300 + 300 + 10) floats; RAD keeps 79 + 30 + 30 + 30 floats,
    # the 10 logits whole, and one bit for each of the 900 ReLU units
    assert per_example_bytes(mlp(), 1.0) == (784 + 3 * 300 + 10) * 4 == 6776
    assert per_example_bytes(mlp(), 0.1) == (79 + 3 * 30 + 10) * 4 + 900 / 8 == 828.5


def test_convnet_and_irnn_per_example_bytes():
    # the convnet's floats are the paper's (308 + 1639 + 820 + 820 + 205 + 10); its ReLU
    # bits count the four conv outputs before pooling: 16*32*32 + 32*32*32 + 2 * 32*16*16
    assert per_example_bytes(convnet(), 1.0) == 151592
    assert per_example_bytes(convnet(), 0.1) == (308 + 1639 + 820 + 820 + 205 + 10) * 4 \
        + (16 * 1024 + 32 * 1024 + 2 * 32 * 256) / 8
    assert per_example_bytes(irnn(), 1.0) == (784 * 101 + 100 + 10) * 4 == 317176
    assert per_example_bytes(irnn(), 0.1) == (784 * 11 + 10 + 10) * 4 + 784 * 100 / 8 == 44376


def test_parameter_counts_by_hand():
    assert parameter_count(mlp()) == 784 * 300 + 300 + 2 * (300 * 300 + 300) + 3010
    assert parameter_count(convnet()) == (3 * 16 + 16 * 32 + 2 * 32 * 32) * 25 + 16 + 3 * 32 \
        + 2048 * 10 + 10
    assert parameter_count(irnn()) == 100 + 100 + 100 * 100 + 100 + 100 * 10 + 10


def test_table1_rows_beside_the_paper():
    for row in table1_rows():
        print(f"{row['network']:8s} rules {row['rules_mb']}\n{'':8s} paper {row['paper_mb']}")
    rows = {row["network"]: row for row in table1_rows()}
    # MLP: every printed entry within rounding of the rules (f = 0.5 is 2.2045 printed 2.21)
    for f, paper in zip(FRACTIONS, PAPER_TABLE1["mlp"]):
        assert abs(total_bytes(mlp(), f) / 1e6 - paper) < 0.0056
    assert rows["convnet"]["rules_mb"][0] == PAPER_TABLE1["convnet"][0]
    assert rows["irnn"]["rules_mb"][0] != PAPER_TABLE1["irnn"][0]


def _paper_convnet():
    """The convnet as the paper counted it: ReLU bits at the pooled sizes (34,816)."""
    net = convnet()
    bits = (16384, 8192, 8192, 2048, 0)
    return Network(net.name, tuple(Layer(layer.name, layer.stored, relu, layer.params)
                                   for layer, relu in zip(net.layers, bits)), net.logits)


def test_convnet_discrepancy_is_the_pooled_relu_count():
    paper_net = _paper_convnet()
    assert sum(layer.relu for layer in paper_net.layers) == 34816
    assert per_example_bytes(paper_net, 0.1) == 19560  # Appendix A's 19.56 kBytes
    for f, printed in zip(FRACTIONS, PAPER_TABLE1["convnet"]):
        assert round(total_bytes(paper_net, f) / 1e6, 2) == printed
        if f < 1:  # the rules charge more: 65,536 ReLU bits
            extra = 150 * (65536 - 34816) / 8
            assert total_bytes(convnet(), f) - total_bytes(paper_net, f) == extra


def test_irnn_discrepancy_is_the_weight_count():
    weights = 4 * (784 * 100 + 100 * 100)  # 353,600 bytes, as if W_ih read whole images
    for f, printed in zip(FRACTIONS, PAPER_TABLE1["irnn"]):
        as_printed = weights + 150 * per_example_bytes(irnn(), f)
        assert abs(as_printed / 1e6 - printed) < 0.0051  # 4.655 is printed 4.66
        assert round(total_bytes(irnn(), f) / 1e6, 2) < printed


def test_kept_entries_is_an_exact_ceiling():
    assert [kept_entries(d, 0.1) for d in (784, 300, 30, 1, 3072)] == [79, 30, 3, 1, 308]
    assert kept_entries(300, 1.0) == 300 and kept_entries(7, 0.5) == 4
    for d in range(1, 400):
        for f in (0.05, 0.1, 0.3, 0.5, 0.8):
            k = kept_entries(d, f)
            assert k - 1 < f * d * (1 + 1e-12) and k >= f * d * (1 - 1e-12)


def test_equal_memory_batch_fits_the_budget():
    for net in (mlp(), convnet(), irnn()):
        b = equal_memory_batch(net, 0.1)
        budget = total_bytes(net, 0.1)
        assert total_bytes(net, 1.0, b) <= budget < total_bytes(net, 1.0, b + 1)
    assert equal_memory_batch(mlp()) == math.floor(150 * 828.5 / 6776) == 18
    assert equal_memory_batch(mlp(), 1.0) == 150


@pytest.mark.parametrize("bad", [0, -0.1, 1.5, "0.1", True, float("nan")])
def test_bad_fraction(bad):
    with pytest.raises(ValueError, match="fraction"):
        per_example_bytes(mlp(), bad)


def test_bad_layers_and_batch():
    with pytest.raises(ValueError, match="stored"):
        Layer("x", stored=-1, relu=0, params=0)
    with pytest.raises(ValueError, match="batch"):
        total_bytes(mlp(), 0.1, batch=0)
    with pytest.raises(ValueError, match="sizes"):
        mlp((784,))
    with pytest.raises(ValueError, match="divisible"):
        convnet(size=30)
    assert memory.DISCREPANCIES.keys() == PAPER_TABLE1.keys()


def test_the_study_docs_examples_run():
    result = doctest.testfile(str(ROOT / "docs" / "nn_study.md"), module_relative=False)
    assert result.attempted >= 5 and result.failed == 0
