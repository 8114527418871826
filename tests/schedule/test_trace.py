"""The trace: printed as Python, stored as JSON, replayed, with decisions changed."""

import json

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule, Trace
from mlcbook.schedule.errors import SamplingError, TraceError

from ._util import assert_roundtrip, assert_same_result, mm_relu


def _tiled(seed=0):
    f = mm_relu()
    sch = Schedule(f, seed=seed)
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    ti = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    io, ii = sch.split(i, factors=ti)
    jo, ji = sch.split(j, factors=[None, 4])
    sch.reorder(io, jo, ii, ji)
    sch.compute_at(sch.get_block("Y"), jo)
    sch.vectorize(ji)
    return f, sch


def test_trace_prints_as_python():
    f, sch = _tiled()
    decision = sch.trace[2].decision
    assert str(sch.trace) == "\n".join([
        'b0 = sch.get_block("C")',
        "l1, l2 = sch.get_loops(b0)",
        f"v3, v4 = sch.sample_perfect_tile(l1, n=2, max_innermost_factor=8, decision="
        f"{json.dumps(decision)})",
        "l5, l6 = sch.split(l1, factors=[v3, v4])",
        "l7, l8 = sch.split(l2, factors=[None, 4])",
        "sch.reorder(l5, l7, l6, l8)",
        'b9 = sch.get_block("Y")',
        "sch.compute_at(b9, l7)",
        "sch.vectorize(l8)",
    ])


def test_trace_round_trips():
    f, sch = _tiled()
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)
    text = json.dumps(sch.trace.as_json())
    assert mb.tir.structural_equal(Trace.from_json(text).apply(f).mod, sch.mod)


def test_sampling_is_reproducible_from_the_seed():
    decisions = [_tiled(seed)[1].trace[2].decision for seed in range(12)]
    assert decisions == [_tiled(seed)[1].trace[2].decision for seed in range(12)]
    assert len({tuple(d) for d in decisions}) > 1
    for d in decisions:
        assert d[0] * d[1] == 16 and d[1] <= 8


def test_with_decision_replays_another_tile():
    f, sch = _tiled()
    k, inst = sch.trace.decisions[0]
    assert inst.kind == "sample_perfect_tile"
    new = sch.trace.with_decision(k, [2, 8]).apply(f)
    i0, i1 = [new.get(lp) for lp in new.get_loops(new.get_block("C"))[:3:2]]
    assert (i0.extent.value, i1.extent.value) == (2, 8)
    assert new.trace[2].decision == [2, 8]
    assert_same_result(f, new.func)
    same = sch.trace.with_decision(inst, inst.decision).apply(f)
    mb.tir.assert_structural_equal(same.mod, sch.mod)


def test_a_decision_that_does_not_fit_is_refused():
    f, sch = _tiled()
    with pytest.raises(SamplingError, match="needs 2 positive ints whose product is 16"):
        sch.trace.with_decision(2, [3, 5]).apply(f)
    with pytest.raises(SamplingError, match="the last at most 8"):
        sch.trace.with_decision(2, [1, 16]).apply(f)


def test_with_decision_needs_a_sampling_step():
    f, sch = _tiled()
    with pytest.raises(TraceError, match="makes no random decision"):
        sch.trace.with_decision(3, [1])
    with pytest.raises(TraceError, match="out of range"):
        sch.trace.with_decision(99, [1])


def test_sample_categorical():
    f = mm_relu()
    sch = Schedule(f, seed=1)
    v = sch.sample_categorical([0, 16, 64], probs=[0.0, 0.0, 1.0])
    assert v == 64 and sch.trace[-1].decision == 2
    i, _, _ = sch.get_loops(sch.get_block("Y"))
    sch.annotate(i, "pragma_auto_unroll_max_step", v)
    assert str(sch.trace).splitlines()[-1] == (
        'sch.annotate(l2, ann_key="pragma_auto_unroll_max_step", ann_val=v0)')
    new = sch.trace.with_decision(0, 1).apply(f)
    assert new.get(new.get_loops(new.get_block("Y"))[0]).annotations == (
        ("pragma_auto_unroll_max_step", 16),)
    with pytest.raises(SamplingError, match="one per candidate"):
        sch.sample_categorical([1, 2], probs=[1.0])
    with pytest.raises(SamplingError, match="list of ints"):
        sch.sample_categorical(["a"], probs=[1.0])
    with pytest.raises(SamplingError, match="must be an index"):
        sch.trace.with_decision(0, 7).apply(f)


def test_single_output_list_prints_as_a_list_target():
    f = mm_relu()
    sch = Schedule(f)
    (y,) = sch.get_producers(sch.get_block("C"))
    assert str(sch.trace).splitlines()[-1] == "[b1] = sch.get_producers(b0)"
    assert_roundtrip(sch, f)


def test_malformed_json_is_refused():
    with pytest.raises(TraceError, match="not valid JSON"):
        Trace.from_json("{")
    with pytest.raises(TraceError, match="not a trace of version 1"):
        Trace.from_json({"insts": []})
    with pytest.raises(TraceError, match="instruction #0 of the trace is malformed"):
        Trace.from_json({"version": 1, "insts": [{"kind": 3}]})


def test_unknown_instruction_and_undefined_handle():
    f = mm_relu()
    bad = Trace.from_json({"version": 1, "insts": [{"kind": "nope", "args": {}, "outputs": None}]})
    with pytest.raises(TraceError, match="unknown instruction 'nope'"):
        bad.apply(f)
    bad = Trace.from_json({"version": 1, "insts": [
        {"kind": "get_loops", "args": {"block": {"rv": "b7"}}, "outputs": ["l1"]}]})
    with pytest.raises(TraceError, match="uses {'rv': 'b7'} before any step defines it"):
        bad.apply(f)


def test_sch_trace_is_a_copy():
    f, sch = _tiled()
    t = sch.trace
    t.insts.clear()
    assert len(sch.trace) == 9
