"""bench/_common.py: paired ratios and their intervals, and measuring in groups."""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import Case, measure, median_interval, paired_ratio  # noqa: E402


def _binomial_coverage(n: int, k: int) -> float:
    """P(the k-th and (n+1-k)-th order statistics bracket the true median)."""
    outside = sum(math.comb(n, i) for i in range(k)) / 2 ** n
    return 1 - 2 * outside


@pytest.mark.parametrize("n", [6, 9, 20, 45, 100])
def test_median_interval_covers_the_median_with_about_95_percent(n):
    lo, hi = median_interval(list(range(1, n + 1)))
    assert lo + hi == n + 1                       # symmetric order statistics
    assert 0.93 <= _binomial_coverage(n, lo) <= 0.99


def test_median_interval_of_few_values_is_their_range():
    assert median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)


def test_paired_ratio_cancels_a_slow_phase_that_hits_both_sides():
    phases = [1.0, 1.3, 1.0, 1.3, 1.3, 1.0, 1.3]     # the host slows both programs alike
    a = Case("g", ("a",), 1, None, seconds=[0.9 * p for p in phases])
    b = Case("g", ("b",), 1, None, seconds=phases)
    r = paired_ratio(a, b)
    assert r.median == pytest.approx(0.9)
    assert r.low == pytest.approx(0.9) and r.high == pytest.approx(0.9)
    assert str(r) == "0.90x [0.90, 0.90]"


def test_paired_ratio_refuses_cases_from_different_rounds():
    a = Case("g", ("a",), 1, None, seconds=[1.0, 1.0])
    b = Case("g", ("b",), 1, None, seconds=[1.0])
    with pytest.raises(ValueError, match=r"\('a',\) and \('b',\) were measured in different"):
        paired_ratio(a, b)


def test_measure_interleaves_only_within_a_group():
    order = []
    cases = [Case("g", (name,), 1, lambda n=name: order.append(n)) for name in "abcd"]
    measure(cases, rounds=3, min_seconds=0.0, group=lambda c: c.key[0] in "ab")
    first_c = order.index("c")
    assert set(order[:first_c]) == {"a", "b"}      # a and b's group ran out before c's began
    assert set(order[first_c:]) == {"c", "d"}
    assert all(len(c.seconds) == 3 for c in cases)
