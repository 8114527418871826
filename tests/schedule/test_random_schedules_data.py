"""Random schedules with the data primitives (caches, reductions, layout, padding, blockize)
mixed with the loop primitives: each step keeps the program's meaning (interpreter against
numpy) or raises ScheduleError and changes nothing; the trace replays.

The workloads and the loop-primitive steps come from :mod:`.test_random_schedules`.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlcbook.errors import ScheduleError
from mlcbook.schedule import Schedule
from mlcbook.schedule.analysis import reads_of, writes_of
from mlcbook.tir.analysis import collect_blocks

from ._util import assert_roundtrip
from .test_random_schedules import WORKLOADS, check_result, random_step, workload

DATA_ACTIONS = ["cache_read", "cache_write", "decompose_reduction", "rfactor",
                "transform_layout", "pad_einsum", "blockize"]


def _blocks(sch) -> list[str]:
    return [b.block.name for b in collect_blocks(sch.func.body) if b is not sch.func.body]


def _maps(ndim: int, data) -> object:
    """A random index map over ``ndim`` indices: often one-to-one, sometimes not."""
    kind = data.draw(st.sampled_from(["reverse", "split", "identity", "merge"]), label="map")
    names = [f"i{d}" for d in range(ndim)]
    outs = list(names)
    if kind == "reverse":
        outs.reverse()
    elif kind == "split":
        d = data.draw(st.integers(0, ndim - 1), label="dim")
        f = data.draw(st.integers(1, 4), label="factor")
        outs[d] = f"{names[d]} // {f}"
        outs.append(f"{names[d]} % {f}")
    elif kind == "merge" and ndim >= 2:
        outs = [f"{names[0]} + {names[1]}"] + names[2:]   # not one-to-one
    return f"lambda {', '.join(names)}: ({', '.join(outs)},)"


def _index(n: int, data) -> int:
    """Mostly a valid index below ``n``, sometimes one past the end."""
    return data.draw(st.integers(0, n) if data.draw(st.integers(0, 5), label="oob") == 0
                     else st.integers(0, max(n - 1, 0)), label="index")


def data_step(sch: Schedule, data) -> str:
    """One random step of a data primitive, legal or not."""
    action = data.draw(st.sampled_from(DATA_ACTIONS), label="action")
    names = _blocks(sch)
    if action in ("decompose_reduction", "rfactor") and data.draw(st.booleans(), label="red"):
        names = [n for n in names if sch.get(sch.get_block(n)).init is not None] or names
    block = sch.get_block(data.draw(st.sampled_from(names), label="block"))
    node = sch.get(block)
    loops = sch.get_loops(block)
    scope = data.draw(st.sampled_from(["local", "shared", "global", "local", "texture"]),
                      label="scope")
    if action == "cache_read":
        sch.cache_read(block, _index(len(reads_of(node)), data), scope)
    elif action == "cache_write":
        sch.cache_write(block, _index(len(writes_of(node)), data), scope)
    elif action == "decompose_reduction" and loops:
        sch.decompose_reduction(block, data.draw(st.sampled_from(loops), label="loop"))
    elif action == "rfactor" and loops:
        # te puts reduction loops innermost: aim there more often than not
        inner = loops[-2:] if data.draw(st.booleans(), label="inner") else loops
        sch.rfactor(data.draw(st.sampled_from(inner), label="loop"),
                    data.draw(st.integers(-3, 3), label="axis"))
    elif action == "transform_layout":
        bufs = [b for b in reads_of(node) + writes_of(node)]
        buf = data.draw(st.sampled_from(bufs), label="buffer")
        sch.transform_layout(block, buf.name, _maps(len(buf.shape), data))
    elif action == "pad_einsum":
        sch.pad_einsum(block, [data.draw(st.integers(1, 4), label="pad")
                               for _ in node.iter_vars])
    elif action == "blockize" and loops:
        sch.blockize(data.draw(st.sampled_from(loops), label="loop"))
    return action


@pytest.mark.parametrize("name", WORKLOADS)
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_data_steps_keep_meaning_or_raise_schedule_error(name, data):
    func, inputs, expected = workload(name)
    sch = Schedule(func, seed=data.draw(st.integers(0, 2**16), label="seed"))
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        before, steps = sch.mod, len(sch.trace)
        try:
            if data.draw(st.integers(0, 2), label="family") == 0:
                random_step(sch, data)
            else:
                data_step(sch, data)
        except ScheduleError:
            assert sch.mod is before
            assert all(i.kind.startswith(("get_", "sample_")) for i in sch.trace[steps:])
            continue
        check_result(sch.func, inputs, expected)
    assert_roundtrip(sch, func)


def _reduction_blocks(sch) -> list:
    return [sch.get_block(n) for n in _blocks(sch)
            if any(iv.kind == "reduce" for iv in sch.get(sch.get_block(n)).iter_vars)]


@pytest.mark.parametrize("name", WORKLOADS)
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_legal_data_steps_always_succeed(name, data):
    """On a fresh workload these steps are always legal, so they must never be refused."""
    func, inputs, expected = workload(name)
    sch = Schedule(func)
    reductions = _reduction_blocks(sch)
    action = data.draw(st.sampled_from(["cache_write", "decompose", "rfactor", "relayout",
                                        "blockize", "cache_read"]), label="action")
    if action in ("cache_write", "decompose", "rfactor") and reductions:
        block = data.draw(st.sampled_from(reductions), label="block")
        loops = sch.get_loops(block)
        if action == "cache_write":
            local = sch.cache_write(block, 0, "local")
            if data.draw(st.booleans(), label="move"):
                sch.reverse_compute_at(local, loops[0])
        elif action == "decompose":
            # te binds loop p to iteration variable p: decompose outside every reduction loop
            first = next(p for p, iv in enumerate(sch.get(block).iter_vars) if iv.kind == "reduce")
            sch.decompose_reduction(block, loops[data.draw(st.integers(0, first), label="at")])
        else:
            k = loops[-1]   # te puts reduction loops innermost
            extent = sch.get(k).extent.value
            factors = [f for f in range(2, extent) if extent % f == 0]
            if factors:
                k0, k1 = sch.split(k, [None, data.draw(st.sampled_from(factors), label="f")])
                k = data.draw(st.sampled_from([k0, k1]), label="rf loop")
            ndim = len(sch.get(block).writes[0].buffer.shape)
            rf = sch.rfactor(k, data.draw(st.integers(0, ndim), label="axis"))
            sch.parallel(sch.get_loops(rf)[0])
    elif action == "relayout":
        allocs = sch.func.root_block.alloc_buffers
        params = [p for p in func.params if len(p.shape) >= 2]
        buf = data.draw(st.sampled_from(list(allocs) + params), label="buffer")
        user = next(n for n in _blocks(sch) if any(
            b is buf for b in reads_of(sch.get(sch.get_block(n))) +
            writes_of(sch.get(sch.get_block(n)))))
        sch.transform_layout(sch.get_block(user), buf.name,
                             f"lambda {', '.join(f'i{d}' for d in range(len(buf.shape)))}: "
                             f"({', '.join(f'i{d}' for d in reversed(range(len(buf.shape))))},)")
    elif action == "blockize":
        block = sch.get_block(data.draw(st.sampled_from(_blocks(sch)), label="block"))
        loops = sch.get_loops(block)
        sch.blockize(data.draw(st.sampled_from(loops), label="loop"))
    elif action == "cache_read":
        block = sch.get_block(data.draw(st.sampled_from(_blocks(sch)), label="block"))
        inputs_read = [b for b in reads_of(sch.get(block)) if any(b is p for p in func.inputs)]
        if inputs_read:
            sch.cache_read(block, data.draw(st.sampled_from(inputs_read), label="buf").name,
                           "local")
    check_result(sch.func, inputs, expected)
    assert_roundtrip(sch, func)
