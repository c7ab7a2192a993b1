"""Issue 10: accumulation that overflows raises, naming method and vertex, for
every method; huge path counts are printed readably."""

import math
import warnings

import numpy as np
import pytest

from minirad import examples
from minirad.exact.jacobians import jacobian
from minirad.exact.overflow import AccumulationOverflow
from minirad.exact.paths import count_paths
from minirad.exact.result import Accumulation, format_count
from minirad.graph.lcg import LCG
from minirad.randomized.sampling import sample_paths, sampled_jacobians


def _overflowing():
    # dy/dx = 1e200 * 1e200 + 1 = 1e400: inf in double precision (hand derivation)
    return LCG.from_edges([("x", "a", 1e200), ("a", "y", 1e200), ("x", "b", 1.0),
                           ("b", "y", 1.0)], inputs=["x"], outputs=["y"])


@pytest.mark.parametrize("method, vertex", [("bauer", "y"), ("forward", "y"),
                                            ("reverse", "x"), ("eliminate", "a")])
def test_every_exact_method_raises_naming_itself_and_the_vertex(method, vertex):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy RuntimeWarning on the way either
        with pytest.raises(AccumulationOverflow, match=rf"^{method}: dy/dx overflowed to inf.*"
                                                       rf"first at vertex {vertex}\b"):
            jacobian(_overflowing(), method=method)


def test_sampling_raises_too():
    g = _overflowing()
    with pytest.raises(AccumulationOverflow, match=r"^sampling \(Algorithm 1\): dy/dx "
                                                   r"overflowed to inf in estimate \d+ of 50"):
        sampled_jacobians(g, 1, 50, rng=0)
    # with seed 1 the one draw at x takes x -> a; with seed 0 it takes x -> b (finite)
    assert sample_paths(g, 1, rng=1).counts.tolist()[:2] == [1, 0]
    with pytest.raises(AccumulationOverflow, match=r"^sampling .*first at vertex x"):
        _ = sample_paths(g, 1, rng=1).jacobian
    assert sample_paths(g, 1, rng=0).jacobian.tolist() == [[2.0]]


def test_a_finite_jacobian_is_untouched_near_the_limit():
    g = LCG.from_edges([("x", "a", 1e150), ("a", "y", 1e150)], inputs=["x"], outputs=["y"])
    for method in ("bauer", "forward", "reverse", "eliminate"):
        assert jacobian(g, method=method)[0, 0] == pytest.approx(1e300)


def test_format_count():
    assert format_count(999_999_999_999_999) == "999999999999999"
    assert format_count(10 ** 15) == "~1.0e15"
    assert format_count(2 ** 20000) == "~4.0e6020"      # log10(2) * 20000 = 6020.6
    assert format_count(-(10 ** 5000)) == "-~1.0e5000"
    assert format_count(int(9.96e30)) == "~1.0e31"       # rounding carries into the exponent


def test_bauer_on_a_deep_graph_reports_a_readable_count():
    """60,002 vertices, 2**30001-ish paths: Python cannot even print that int."""
    g = examples.interleaved(2, 30000)
    total = int(count_paths(g).sum())
    exponent = math.floor(math.log10(total))
    assert exponent > 4300  # beyond Python's int-to-str limit
    with pytest.raises(ValueError, match=rf"has ~\d\.\de{exponent} input-to-output paths.*"
                                         rf"reverse"):
        jacobian(g, method="bauer")
    huge = Accumulation(np.zeros((1, 1)), total, total, "bauer")
    assert f"e{exponent}" in repr(huge)
