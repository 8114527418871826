"""The int8 matmul and the int8 kernels of quantized models, with their default schedules,
tensorized with the best dot intrinsic."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.graph.default_schedule import default_schedule
from mlcbook.graph.int8_matmul import (dot_lanes, int8_matmul, pack_weights, schedule_int8_kernel,
                                       schedule_int8_matmul)
from mlcbook.ops import get, legalize_call, type_of_array
from mlcbook.ops.int8_kernels import pack_conv_int8, pack_int8


def data(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    return a, b, a.astype(np.int32) @ b.astype(np.int32).T


def test_default_schedule_tensorizes_and_matches_numpy():
    lanes = dot_lanes()
    func = schedule_int8_matmul(int8_matmul(32, 64, 128, lanes))
    assert "tensor_intrin" in func.script()
    a, b, want = data(32, 64, 128)
    c = np.zeros_like(want)
    mb.build(func)(a, pack_weights(b, lanes), c)
    np.testing.assert_array_equal(c, want)


def test_interpreter_runs_the_tensorized_matmul():
    func = schedule_int8_matmul(int8_matmul(4, 16, 8, dot_lanes()))
    a, b, want = data(4, 16, 8)
    c = np.zeros_like(want)
    mb.tir.interpret(func, a, pack_weights(b, dot_lanes()), c)
    np.testing.assert_array_equal(c, want)


def test_vnni_target_uses_vpdpbusd():
    target = mb.Target("llvm -mcpu=znver4")
    assert dot_lanes(target) == 16
    func = schedule_int8_matmul(int8_matmul(8, 32, 16, 16), target)
    assert "vpdpbusd" in mb.build(func, target=target).asm()


def test_pack_weights_layout():
    b = np.arange(8 * 8, dtype=np.int8).reshape(8, 8)
    bp = pack_weights(b, 4)
    assert bp.shape == (2, 2, 4, 4) and bp[1, 0, 2, 3] == b[6, 3]


def test_bad_shape_is_an_error():
    with pytest.raises(ScheduleError, match="multiple of lanes=8"):
        int8_matmul(4, 12, 8, 8)


def test_weights_packed_for_other_lanes_is_an_error():
    with pytest.raises(ScheduleError, match="packed for 4 lanes"):
        schedule_int8_matmul(int8_matmul(4, 16, 8, 4))


# --- the int8 kernels of quantized models (int8_dense, int8_conv2d) -------------------------------


def dense_case(m=3, k=10, n=20, seed=0, narrow=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(-64, 65, (n, k), dtype=np.int8) if narrow else \
        rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    mult = (rng.random(n) * 2e-4).astype(np.float32)
    args = [x, pack_int8(w), bias, mult]
    attrs = dict(units=n, x_zp=5, y_zp=60, relu=1, narrow=narrow)
    return legalize_call("int8_dense", [type_of_array(a) for a in args], attrs), args, \
        get("int8_dense").reference(*args, **attrs)


def test_default_schedule_tensorizes_int8_dense_and_matches_reference():
    func, args, want = dense_case()
    sched = default_schedule(func)
    assert "tensor_intrin" in sched.script()
    out = np.zeros_like(want)
    mb.build(sched)(*args, out)
    np.testing.assert_array_equal(out, want)
    out[:] = 0
    mb.tir.interpret(sched, *args, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("narrow, kernel", [(0, "x86.avx2.u8i8_pmaddwd_1x16x12"),
                                            (1, "x86.avx2.u8i8_pmaddubsw_3x16x12")])
def test_avx2_kernel_follows_the_narrow_mark(narrow, kernel):
    """AVX2 only (znver3): narrow weights get vpmaddubsw, the others the exact pmaddwd
    kernel (at most 2 rows, so 1 for m=3); 12 terms (k=10 padded to 12) per call."""
    target = mb.Target("llvm -mcpu=znver3")
    func, args, want = dense_case(narrow=narrow)
    sched = default_schedule(func, target)
    assert f'"tensor_intrin": "{kernel}"' in sched.script()
    out = np.zeros_like(want)
    mb.build(sched, target=target)(*args, out)
    np.testing.assert_array_equal(out, want)


def test_int8_conv2d_compiled_matches_reference():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 3, 5, 5), dtype=np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, 4).astype(np.int32),
            np.full(4, 1e-3, np.float32)]
    attrs = dict(channels=4, kernel_shape=(3, 3), pads=(1, 1, 1, 1), strides=(2, 2), x_zp=9,
                 y_zp=-3, dtype="int8")
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    want = get("int8_conv2d").reference(*args, **attrs)
    out = np.zeros_like(want)
    mb.build(default_schedule(func))(*args, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("c, strides, narrow", [(3, (1, 1), 1), (8, (2, 2), 0)])
def test_channels_last_int8_conv2d_compiled_matches_the_nchw_reference(c, strides, narrow):
    """layout="NHWC" (its own copy and epilogue) against the NCHW reference, transposed."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (2, c, 6, 5), dtype=np.uint8)
    w = rng.integers(-64, 64, (20, c, 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, 20).astype(np.int32),
            np.full(20, 2e-3, np.float32)]
    attrs = dict(channels=20, kernel_shape=(3, 3), pads=(1, 0, 1, 1), strides=strides, x_zp=7,
                 y_zp=3, relu=1, narrow=narrow)
    want = get("int8_conv2d").reference(*args, **attrs).transpose(0, 2, 3, 1)
    args[0] = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    attrs["layout"] = "NHWC"
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    out = np.zeros(want.shape, want.dtype)
    mb.build(default_schedule(func))(*args, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("narrow", [0, 1])
def test_a_channels_last_conv_with_many_sums_requantizes_each_tile(narrow):
    """Past epilogue_tile_bytes (0 here) the epilogue runs under the product's row tiles."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (2, 7, 8, 8), dtype=np.uint8)      # NHWC, 8 channels
    w = rng.integers(-64, 64, (12, 8, 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, 12).astype(np.int32),
            np.full(12, 2e-3, np.float32)]
    attrs = dict(channels=12, kernel_shape=(3, 3), pads=(1, 1, 1, 1), x_zp=7, y_zp=3,
                 narrow=narrow, layout="NHWC")
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    want = get("int8_conv2d").reference(*args, **attrs)
    target = mb.Target("llvm -mcpu=znver3")
    tiled = schedule_int8_kernel(func, target, epilogue_tile_bytes=0)

    def depth(f):   # of the epilogue: deeper when it sits under the product's loops
        line = next(ln for ln in f.script().splitlines() if 'T.block("int8_conv2d")' in ln)
        return len(line) - len(line.lstrip())

    assert depth(tiled) > depth(schedule_int8_kernel(func, target))
    out = np.zeros_like(want)
    mb.build(tiled, target=target)(*args, out)
    np.testing.assert_array_equal(out, want)


def test_int8_kernel_uses_vpdpbusd_on_a_vnni_target():
    target = mb.Target("llvm -mcpu=znver4")
    func, _, _ = dense_case()
    assert "vpdpbusd" in mb.build(default_schedule(func, target), target=target).asm()


def test_int8_kernel_on_a_target_without_a_dot_instruction_is_an_error():
    func, _, _ = dense_case()
    with pytest.raises(ScheduleError, match="needs a u8 x i8 dot-product instruction"):
        schedule_int8_kernel(func, "llvm -mcpu=x86-64")


def test_tensorizing_the_int8_stage_with_a_float_intrinsic_is_an_error():
    func, _, _ = dense_case()
    sch = mb.Schedule(func)
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("int8_dense_int8_acc"))
    sch.reorder(i, jo, ko, ji, ki)
    with pytest.raises(ScheduleError, match="does not match"):
        sch.tensorize(ji, "x86.avx2.fma_f32_4x16")
