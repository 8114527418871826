"""bench/_common.py: paired ratios and their intervals, measuring in groups, the machine line
and results files with one section per CPU."""
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from _common import (Case, machine, measure, median_interval, merge_results,  # noqa: E402
                     paired_ratio, results_sections, write_results)


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


def test_machine_names_the_cpu_and_shows_the_machine_model():
    import mlcbook as mb
    text = machine()
    line, _, block = text.partition("\n\n")
    assert line.endswith(".") and "cores" in line and "load average" in line
    assert block.startswith("```") and block.endswith("```")
    assert str(mb.Target().machine) in block
    assert "two threads then did" in line


def test_machine_warns_when_two_threads_did_not_scale(monkeypatch):
    import _common
    monkeypatch.setattr(_common, "two_thread_scaling", lambda: 1.02)
    line = machine().partition("\n\n")[0]
    assert "two threads then did 1.02x one thread's work" in line
    assert "the 2-thread figures above say more about the host's second core" in line
    monkeypatch.setattr(_common, "two_thread_scaling", lambda: 1.95)
    assert "second core" not in machine().partition("\n\n")[0]


def test_two_thread_scaling_is_a_ratio_of_work_done():
    from _common import two_thread_scaling
    r = two_thread_scaling(calls=20, repeats=1)    # its value is the host's (not asserted)
    assert isinstance(r, float) and math.isfinite(r) and r > 0


LEGACY = """# Convolutions: mlcbook default schedules vs onnxruntime

Written by `python bench/convs.py` (11 rounds).

| conv | threads | GFLOP/s |
|---|---:|---:|
| 3x3 64->64 @56 | 1 | 98.0 |

Machine: x86_64 `znver3`, 2 cores, Linux, Python 3.11.7, load average 0.6 (1 min), 2026-11-24.
"""
TITLE = "Convolutions: mlcbook default schedules vs onnxruntime"
ZEN5 = "znver5 / AMD EPYC 9B45"


def _body(figure: str) -> str:
    return f"| conv | threads | GFLOP/s |\n|---|---:|---:|\n| 3x3 | 1 | {figure} |\n"


def test_a_legacy_file_becomes_the_section_of_the_cpu_its_machine_line_names():
    merged = merge_results(LEGACY, TITLE, _body("240.0"), ZEN5)
    assert merged.startswith(f"# {TITLE}\n")
    assert merged.count(f"# {TITLE}") == 1            # the legacy title is not kept twice
    (k3, zen3), (k5, zen5) = results_sections(merged)
    assert (k3, k5) == ("znver3", ZEN5)
    assert "| 3x3 64->64 @56 | 1 | 98.0 |" in zen3 and "`znver3`, 2 cores" in zen3
    assert zen3.splitlines()[1].startswith("## znver3")
    assert "| 3x3 | 1 | 240.0 |" in zen5 and "98.0" not in zen5
    assert zen5.splitlines()[1] == "## znver5 (AMD EPYC 9B45)"


def test_a_run_replaces_its_cpus_section_and_keeps_the_others():
    first = merge_results(LEGACY, TITLE, _body("240.0"), ZEN5)
    again = merge_results(first, TITLE, _body("250.0"), ZEN5)
    sections = dict(results_sections(again))
    assert list(sections) == ["znver3", ZEN5]         # in place, not appended again
    assert sections["znver3"] == dict(results_sections(first))["znver3"]   # kept verbatim
    assert "250.0" in sections[ZEN5] and "240.0" not in sections[ZEN5]
    assert merge_results(again, TITLE, _body("250.0"), ZEN5) == again      # idempotent


def test_a_legacy_section_of_the_same_cpu_is_replaced():
    legacy_zen5 = LEGACY.replace("`znver3`", "`znver5`")
    merged = merge_results(legacy_zen5, TITLE, _body("240.0"), ZEN5)
    (key, text), = results_sections(merged)
    assert key == ZEN5 and "98.0" not in text
    # the same LLVM name with another model name is another CPU
    other = merge_results(merged, TITLE, _body("200.0"), "znver5 / AMD Ryzen 9 9950X")
    assert [k for k, _ in results_sections(other)] == [ZEN5, "znver5 / AMD Ryzen 9 9950X"]


def test_a_sections_headings_sit_under_its_cpu_heading():
    body = "Intro.\n\n## Tuned\n\n```text\n# not a heading\n```\n"
    (_, text), = results_sections(merge_results("", TITLE, body, ZEN5))
    assert "\n### Tuned\n" in text and "\n# not a heading\n" in text


def test_write_results_keeps_the_file_of_another_cpu(tmp_path, monkeypatch):
    import _common
    path = tmp_path / "RESULTS_x.md"
    path.write_text(LEGACY)
    monkeypatch.setattr(_common, "host_cpu", lambda: ZEN5)
    write_results(path, TITLE, _body("240.0"))
    assert [k for k, _ in results_sections(path.read_text())] == ["znver3", ZEN5]
