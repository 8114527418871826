"""Random schedules on real workloads: every step either keeps the program's meaning
(checked by the interpreter against numpy after each step) or raises ScheduleError and
leaves the schedule unchanged; the trace of what succeeded replays to the same program."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.schedule import Schedule, tree
from mlcbook.tir.analysis import collect_blocks

from ._util import assert_roundtrip


def _conv_ref(x, w, pad):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    out = np.zeros((n, f, h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1), np.float64)
    for r in range(kh):
        for s in range(kw):
            patch = xp[:, :, r:r + out.shape[2], s:s + out.shape[3]]
            out += np.einsum("nchw,fc->nfhw", patch, w[:, :, r, s])
    return out


def _softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer_norm(a):
    m = a.mean(axis=-1, keepdims=True)
    return (a - m) / np.sqrt(((a - m) ** 2).mean(axis=-1, keepdims=True) + 1e-5)


@functools.lru_cache(maxsize=None)
def workload(name: str):
    """(func, inputs, expected output) with small shapes: the interpreter is pure Python."""
    te, ops = mb.te, mb.te.ops
    rng = np.random.default_rng(0)
    if name in ("matmul", "mm_relu"):
        a, b = te.placeholder((8, 8), name="A"), te.placeholder((8, 8), name="B")
        out = ops.matmul(a, b, name="Y")
        if name == "mm_relu":
            out = ops.relu(out, name="C")
        args = [a, b, out]
        ref = lambda x, y: np.maximum(x @ y, 0) if name == "mm_relu" else x @ y  # noqa: E731
    elif name == "batch_matmul":
        a, b = te.placeholder((2, 4, 6), name="A"), te.placeholder((2, 6, 4), name="B")
        args, ref = [a, b, ops.batch_matmul(a, b)], lambda x, y: x @ y
    elif name == "conv2d":
        x, w = te.placeholder((1, 2, 6, 6), name="x"), te.placeholder((3, 2, 3, 3), name="w")
        args, ref = [x, w, ops.conv2d(x, w, padding=1)], lambda x, w: _conv_ref(x, w, 1)
    elif name == "softmax":
        a = te.placeholder((4, 8), name="A")
        args, ref = [a, ops.softmax(a)], _softmax
    elif name == "layer_norm":
        a = te.placeholder((4, 8), name="A")
        args, ref = [a, ops.layer_norm(a)], _layer_norm
    elif name == "elementwise":
        a, b = te.placeholder((6, 8), name="A"), te.placeholder((8,), name="B")
        out = ops.relu(ops.add(ops.exp(a), b, name="add"), name="relu")
        args, ref = [a, b, out], lambda x, y: np.maximum(np.exp(x) + y, 0)
    func = te.create_prim_func(args)
    inputs = [rng.standard_normal(p.shape).astype("float32") for p in func.inputs]
    return func, inputs, ref(*[x.astype(np.float64) for x in inputs])


WORKLOADS = ["matmul", "batch_matmul", "conv2d", "softmax", "layer_norm", "mm_relu",
             "elementwise"]


def check_result(func, inputs, expected) -> None:
    out = np.full(func.outputs[0].shape, np.nan, "float32")
    mb.tir.interpret(func, *[x.copy() for x in inputs], out)
    np.testing.assert_allclose(out, expected, rtol=2e-4, atol=2e-4)
    native = np.full(func.outputs[0].shape, np.nan, "float32")
    mb.build(func)(*[np.ascontiguousarray(x) for x in inputs], native)
    np.testing.assert_allclose(native, expected, rtol=2e-4, atol=2e-4)


def _block_names(sch) -> list[str]:
    return [b.block.name for b in collect_blocks(sch.func.body) if b is not sch.func.body]


ACTIONS = ["split", "sample_split", "fuse", "reorder", "parallel", "vectorize", "unroll",
           "annotate", "compute_at", "reverse_compute_at", "compute_inline",
           "reverse_compute_inline"]


def random_step(sch: Schedule, data) -> str:
    """One random step, legal or not; returns its name."""
    names = _block_names(sch)
    block = sch.get_block(data.draw(st.sampled_from(names), label="block"))
    loops = sch.get_loops(block)
    action = data.draw(st.sampled_from(ACTIONS), label="action")
    if action in ("compute_inline", "reverse_compute_inline"):
        getattr(sch, action)(block)
        return action
    if action in ("compute_at", "reverse_compute_at"):
        # mostly a real consumer (producer), sometimes any block
        near = sch.get_consumers(block) if action == "compute_at" else sch.get_producers(block)
        if near and data.draw(st.booleans(), label="near"):
            other = data.draw(st.sampled_from(near), label="target")
        else:
            other = sch.get_block(data.draw(st.sampled_from(names), label="target"))
        target_loops = sch.get_loops(other)
        if target_loops:
            getattr(sch, action)(block, data.draw(st.sampled_from(target_loops), label="loop"))
        return action
    if not loops:
        return "none"
    k = data.draw(st.integers(0, len(loops) - 1), label="loop index")
    loop = loops[k]
    if action == "split":
        factor = data.draw(st.integers(1, 5), label="factor")
        inner = data.draw(st.booleans(), label="None first")
        sch.split(loop, [None, factor] if inner else [factor, None])
    elif action == "sample_split":
        n = data.draw(st.integers(2, 3), label="n")
        tiles = sch.sample_perfect_tile(loop, n=n,
                                        max_innermost_factor=data.draw(st.integers(1, 8)))
        sch.split(loop, tiles)
    elif action == "fuse":
        m = data.draw(st.integers(2, 3), label="count")
        sch.fuse(*loops[k:k + m]) if len(loops[k:k + m]) >= 2 else None
    elif action == "reorder":
        sch.reorder(*data.draw(st.permutations(loops), label="order"))
    elif action == "annotate":
        sch.annotate(loop, "pragma_test", data.draw(st.integers(0, 4)))
    else:
        getattr(sch, action)(loop)
    return action


@pytest.mark.parametrize("name", WORKLOADS)
@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_steps_keep_meaning_or_raise_schedule_error(name, data):
    func, inputs, expected = workload(name)
    sch = Schedule(func, seed=data.draw(st.integers(0, 2**16), label="seed"))
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        before, steps = sch.mod, len(sch.trace)
        try:
            random_step(sch, data)
        except ScheduleError:
            # a refused step changes nothing (the lookups before it are recorded)
            assert sch.mod is before
            assert all(i.kind.startswith(("get_", "sample_")) for i in sch.trace[steps:])
            continue
        check_result(sch.func, inputs, expected)
    assert_roundtrip(sch, func)


LEGAL = ["sample_split", "split", "reorder", "fuse", "unroll", "annotate"]


@pytest.mark.parametrize("name", WORKLOADS)
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_legal_loop_steps_always_succeed(name, data):
    """Steps on one block's own loop nest that are always legal must never be refused."""
    func, inputs, expected = workload(name)
    sch = Schedule(func, seed=data.draw(st.integers(0, 2**16), label="seed"))
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        names = _block_names(sch)
        block = sch.get_block(data.draw(st.sampled_from(names), label="block"))
        loops = sch.get_loops(block)
        action = data.draw(st.sampled_from(LEGAL), label="action")
        k = data.draw(st.integers(0, len(loops) - 1), label="loop index")
        if action == "sample_split":
            tiles = sch.sample_perfect_tile(loops[k], n=data.draw(st.integers(2, 3)),
                                            max_innermost_factor=data.draw(st.integers(1, 8)))
            sch.split(loops[k], tiles)
        elif action == "split":
            sch.split(loops[k], [None, data.draw(st.integers(1, 5))])
        elif action == "reorder":
            sch.reorder(*data.draw(st.permutations(loops)))
        elif action == "fuse" and k + 1 < len(loops):
            sch.fuse(loops[k], loops[k + 1])
        elif action == "unroll":
            sch.unroll(loops[k])
        elif action == "annotate":
            sch.annotate(loops[k], "pragma_test", 1)
        check_result(sch.func, inputs, expected)
    assert_roundtrip(sch, func)
    # the sampled decisions replay, and changing none of them changes nothing
    for k, inst in sch.trace.decisions:
        again = sch.trace.with_decision(k, inst.decision).apply(func)
        mb.tir.assert_structural_equal(again.mod, sch.mod)


@pytest.mark.parametrize("name", WORKLOADS)
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_a_loop_vectorize_accepts_compiles_and_keeps_meaning(name, data):
    """After any steps, a loop that vectorize accepts builds (code generation has no serial
    fallback: it emits vector code or raises) and computes the same."""
    func, inputs, expected = workload(name)
    sch = Schedule(func, seed=data.draw(st.integers(0, 2**16), label="seed"))
    for _ in range(data.draw(st.integers(0, 4), label="steps")):
        try:
            random_step(sch, data)
        except ScheduleError:
            continue
    # innermost loops only: vectorize refuses the others before any lane analysis
    loops = [lp for b in _block_names(sch) for lp in sch.get_loops(sch.get_block(b))
             if not tree.loops_under(sch.get(lp).body)]
    if not loops:
        return
    try:
        sch.vectorize(data.draw(st.sampled_from(loops), label="vectorized loop"))
    except ScheduleError:
        return
    check_result(sch.func, inputs, expected)
