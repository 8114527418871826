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


# --- time_interleaved -----------------------------------------------------------------------
def test_interleaved_rounds_rotate_the_order():
    order = []
    mb.runtime.time_interleaved({"a": lambda: order.append("a"), "b": lambda: order.append("b"),
                                 "c": lambda: order.append("c")},
                                rounds=3, min_seconds=0)
    # min_seconds=0: one call per batch; 2 calibration calls each, then per round each
    # program runs one untimed and one timed call, in an order rotated by one per round
    rounds = "".join(order[6:])
    assert rounds == "aabbcc" + "bbccaa" + "ccaabb"


def test_interleaved_returns_one_result_per_round_and_tells_programs_apart():
    k = mb.build(mb.script.parse(ADD))
    a, b, c = np.ones((4, 8), "float32"), np.ones(8, "float32"), np.zeros((4, 8), "float32")
    r = mb.runtime.time_interleaved({"kernel": (k, a, b, c),
                                     "slow": lambda: sum(range(20000))}, rounds=4)
    assert set(r) == {"kernel", "slow"}
    assert len(r["kernel"].results) == 4 and len(r["slow"].results) == 4
    assert r["slow"].median > r["kernel"].median
    np.testing.assert_array_equal(c, 2)


def test_interleaved_enters_around_for_every_measurement():
    entered = []
    import contextlib

    @contextlib.contextmanager
    def around(name):
        entered.append(name)
        yield
    mb.runtime.time_interleaved({"x": lambda: None, "y": lambda: None}, rounds=2,
                                min_seconds=0, around=around)
    assert entered == ["x", "y", "x", "y", "y", "x"]   # calibration, then rounds


@pytest.mark.parametrize("kw,msg", [({"programs": {}}, "non-empty dict"),
                                    ({"rounds": 0}, "rounds"),
                                    ({"settle": -1}, "settle"),
                                    ({"programs": {"x": 3}}, "kernel or a callable")])
def test_interleaved_bad_settings(kw, msg):
    args = {"programs": {"x": lambda: None}, **kw}
    with pytest.raises(ArgumentError, match=msg):
        mb.runtime.time_interleaved(**args)


# --- machine_load -------------------------------------------------------------------------
def test_machine_load_reads_the_busy_share_of_the_cores():
    load = mb.runtime.machine_load(0.05)
    assert 0 <= load.others <= load.cores


def test_machine_load_note_says_busy_or_quiet():
    from mlcbook.runtime import MachineLoad
    busy, quiet = MachineLoad(1.3, 2, "test"), MachineLoad(0.1, 2, "test")
    assert busy.busy and "Warning" in busy.note() and "1.3 of this machine's 2" in busy.note()
    assert not quiet.busy and "quiet" in quiet.note()


def test_machine_load_bad_window():
    with pytest.raises(ArgumentError, match="seconds"):
        mb.runtime.machine_load(0)
