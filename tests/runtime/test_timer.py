"""time_kernel: warm-up excluded, repeats of `number` calls, a readable result."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError
from mlcbook.runtime import TimingResult

from ._programs import ADD


def test_counts_calls_and_excludes_warmup():
    calls = []
    r = mb.time_kernel(lambda: calls.append(1), number=3, repeat=4)
    assert len(calls) == 1 + 3 * 4   # one warm-up call, then 4 measurements of 3 calls
    assert len(r.results) == 4 and r.number == 3


def test_statistics_and_repr():
    r = TimingResult((3e-3, 1e-3, 2e-3), 10)
    assert r.median == 2e-3 and r.min == 1e-3 and r.max == 3e-3
    assert r.spread == pytest.approx(1.0)
    assert repr(r) == ("TimingResult(median=2.000 ms, min=1.000 ms, max=3.000 ms, "
                       "spread=100.0%, 3 x 10 runs)")


def test_times_a_kernel_and_checks_its_arguments_once():
    k = mb.build(mb.script.parse(ADD))
    a, b, c = np.ones((4, 8), "float32"), np.ones(8, "float32"), np.zeros((4, 8), "float32")
    r = mb.time_kernel(k, a, b, c, repeat=3)
    assert r.median > 0 and r.number >= 1
    np.testing.assert_array_equal(c, 2)
    with pytest.raises(ArgumentError, match="'C'"):
        mb.time_kernel(k, a, b, c[:2])


@pytest.mark.parametrize("kw,msg", [({"repeat": 0}, "repeat"), ({"number": 0}, "number")])
def test_bad_settings(kw, msg):
    with pytest.raises(ArgumentError, match=msg):
        mb.time_kernel(lambda: None, **kw)
