"""Error statistics: ranks with ties, the summary's definitions, threshold checks."""

import math

import numpy as np
import pytest

from kernelfoundry.fidelity.error_stats import check, ranks, spearman, summarize


def test_ranks_share_ties_and_spearman_matches_definition():
    assert list(ranks(np.array([10.0, 20.0, 20.0, 5.0]))) == [2.0, 3.5, 3.5, 1.0]
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)      # 1 - 6*4/(5*24)
    assert math.isnan(spearman([1, 2], [1, 2]))


def test_summary_uses_ratio_errors_and_weights():
    s = summarize([2.0, 1.0, 0.5, 1.2], [1.0, 1.0, 1.0, 1.0])
    assert s.n == 4 and s.max_error == pytest.approx(2.0)
    assert s.geomean_error == pytest.approx(math.exp((2 * math.log(2) + math.log(1.2)) / 4))
    assert s.within_25 == pytest.approx(0.5) and s.within_2x == pytest.approx(1.0)
    assert s.median_ratio == pytest.approx(1.1) and s.median_error == pytest.approx(0.35)
    w = summarize([2.0, 1.0], [1.0, 1.0], weights=[0.25, 1.0])
    assert w.within_25 == pytest.approx(0.8) and w.geomean_error == pytest.approx(2 ** 0.2)


def test_check_names_each_broken_threshold():
    s = summarize([3.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert check(s, {"max_error_max": 3.5, "within_2x_min": 0.5}) == []
    broken = check(s, {"max_error_max": 2.0, "within_25_min": 0.9, "spearman_min": 0.5})
    assert any("worst error 3.00x" in b for b in broken) and any("within ±25%" in b for b in broken)
    assert any("Spearman" in b for b in broken)
