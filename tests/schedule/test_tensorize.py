"""sch.tensorize: matching a block against an intrinsic's desc, and running the result.

Every built-in intrinsic is checked three ways: the tensorized program, interpreted (which
runs the block body, i.e. desc on each tile), equals numpy; native code equals numpy (or,
for instructions this machine lacks, the assembly holds the instruction and running is a
MissingFeatureError); a program that differs from desc is a TensorizeError naming the part.
"""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import MissingFeatureError
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors_data import TensorizeError

from ._util import assert_roundtrip, parse

HOST = mb.Target()
ZNVER4 = mb.Target("llvm -mcpu=znver4")


def int8_matmul(m=8, n=32, k=16, a="uint8", b="int8", b_layout="NK", op="+"):
    b_shape, b_index = ((n, k), "vj, vk") if b_layout == "NK" else ((k, n), "vk, vj")
    return parse(f"""
    @T.prim_func
    def mm(A: T.Buffer(({m}, {k}), "{a}"), B: T.Buffer({b_shape}, "{b}"),
           C: T.Buffer(({m}, {n}), "int32")):
        for i, j, k in T.grid({m}, {n}, {k}):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.int32(0)
                C[vi, vj] = C[vi, vj] {op} (T.Cast("int32", A[vi, vk])
                                             * T.Cast("int32", B[{b_index}]))
    """)


def f32_matmul(m=8, n=32, k=8):
    return parse(f"""
    @T.prim_func
    def mm(A: T.Buffer(({m}, {k}), "float32"), B: T.Buffer(({k}, {n}), "float32"),
           C: T.Buffer(({m}, {n}), "float32")):
        for i, j, k in T.grid({m}, {n}, {k}):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    """)


def tile_dot(func, lanes, intrin, kt=4):
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, [None, lanes])
    k0, k1 = sch.split(k, [None, kt])
    sch.reorder(i, j0, k0, j1, k1)
    sch.tensorize(j1, intrin)
    return sch


def tile_fma(func, rows, cols, intrin):
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, rows])
    j0, j1 = sch.split(j, [None, cols])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.tensorize(i1, intrin)
    return sch


def int8_data(func, seed=0):
    rng = np.random.default_rng(seed)
    (A, B, C) = func.params
    a = rng.integers(0, 256, A.shape).astype(A.dtype) if A.dtype == "uint8" else \
        rng.integers(-128, 128, A.shape).astype(A.dtype)
    b = rng.integers(-128, 128, B.shape).astype(B.dtype)
    want = a.astype(np.int32) @ b.astype(np.int32).T
    return a, b, np.zeros(C.shape, np.int32), want


def test_dot_avx2_interpreter_and_reference_run_desc():
    sch = tile_dot(int8_matmul(), 8, "x86.avx2.dot_u8i8_8x4")
    a, b, c, want = int8_data(sch.mod["main"])
    mb.tir.interpret(sch.mod["main"], a, b, c)
    np.testing.assert_array_equal(c, want)
    c[...] = 0
    mb.tir.evaluate(sch.mod["main"], a, b, c)
    np.testing.assert_array_equal(c, want)


def test_dot_avx2_native_matches_numpy_at_extremes():
    sch = tile_dot(int8_matmul(k=64), 8, "x86.avx2.dot_u8i8_8x4")
    a, b, c, _ = int8_data(sch.mod["main"])
    a[:] = 255          # u8 255 x i8 -128, 64 times: past int16, where vpmaddubsw saturates
    b[:] = -128
    mb.build(sch.mod["main"])(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32).T)


def test_dot_avx2_lowers_to_a_tensor_call():
    sch = tile_dot(int8_matmul(), 8, "x86.avx2.dot_u8i8_8x4")
    text = mb.lower(sch.mod["main"])["mm"].script()
    assert 'T.tensor_call("x86.dot_u8i8.8x4"' in text


def test_dot_vnni_interpreter_matches_numpy():
    sch = tile_dot(int8_matmul(), 16, "x86.vnni.dot_u8i8_16x4")
    a, b, c, want = int8_data(sch.mod["main"])
    mb.tir.interpret(sch.mod["main"], a, b, c)
    np.testing.assert_array_equal(c, want)


def test_dot_vnni_assembly_holds_vpdpbusd():
    sch = tile_dot(int8_matmul(), 16, "x86.vnni.dot_u8i8_16x4")
    asm = mb.build(sch.mod["main"], target=ZNVER4).asm()
    assert "vpdpbusd" in asm


@pytest.mark.skipif(HOST.has_feature("avx512vnni"), reason="this host has VNNI")
def test_dot_vnni_for_this_host_is_a_missing_feature_error():
    sch = tile_dot(int8_matmul(), 16, "x86.vnni.dot_u8i8_16x4")
    with pytest.raises(MissingFeatureError, match="avx512vnni"):
        mb.build(sch.mod["main"])
    kern = mb.build(sch.mod["main"], target=ZNVER4)
    a, b, c, _ = int8_data(sch.mod["main"])
    with pytest.raises(MissingFeatureError, match="avx512vnni.*not run here"):
        kern(a, b, c)


@pytest.mark.skipif(not HOST.has_feature("avx512vnni"), reason="no VNNI on this host")
def test_dot_vnni_native_matches_numpy():
    sch = tile_dot(int8_matmul(), 16, "x86.vnni.dot_u8i8_16x4")
    a, b, c, want = int8_data(sch.mod["main"])
    mb.build(sch.mod["main"])(a, b, c)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("intrin,rows,cols", [("x86.avx2.fma_f32_4x16", 4, 16),
                                              ("x86.avx512.fma_f32_4x32", 4, 32)])
def test_fma_tile_interpreter_matches_numpy(intrin, rows, cols):
    sch = tile_fma(f32_matmul(), rows, cols, intrin)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 8), np.float32), rng.standard_normal((8, 32), np.float32)
    c = np.zeros((8, 32), np.float32)
    mb.tir.interpret(sch.mod["main"], a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_fma_avx2_native_matches_numpy():
    sch = tile_fma(f32_matmul(m=16, n=64, k=32), 4, 16, "x86.avx2.fma_f32_4x16")
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 32), np.float32), rng.standard_normal((32, 64), np.float32)
    c = np.zeros((16, 64), np.float32)
    kern = mb.build(sch.mod["main"])
    kern(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "vfmadd" in kern.asm() and "ymm" in kern.asm()


def test_fma_avx512_assembly_uses_zmm_fma():
    sch = tile_fma(f32_matmul(), 4, 32, "x86.avx512.fma_f32_4x32")
    asm = mb.build(sch.mod["main"], target=ZNVER4).asm()
    assert any("vfmadd" in line and "zmm" in line for line in asm.splitlines())


def test_tensorize_a_blockized_block():
    sch = Schedule(int8_matmul())
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, [None, 8])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i, j0, k0, j1, k1)
    outer = sch.blockize(j1)
    sch.tensorize(outer, "x86.avx2.dot_u8i8_8x4")
    a, b, c, want = int8_data(sch.mod["main"])
    mb.build(sch.mod["main"])(a, b, c)
    np.testing.assert_array_equal(c, want)


def test_tensorize_trace_round_trips():
    func = int8_matmul()
    sch = tile_dot(func, 8, "x86.avx2.dot_u8i8_8x4")
    assert_roundtrip(sch, func)


# --- mismatches ---------------------------------------------------------------------------------
def test_wrong_index_pattern_is_an_error():
    with pytest.raises(TensorizeError, match=r"MLC-S066.*index pattern.*index 0 of B is vk "
                                             r"but desc.s B is indexed by vj"):
        tile_dot(int8_matmul(b_layout="KN"), 8, "x86.avx2.dot_u8i8_8x4")


def test_wrong_dtype_is_an_error():
    with pytest.raises(TensorizeError, match=r"dtype.*A is int8 but desc's A is uint8"):
        tile_dot(int8_matmul(a="int8"), 8, "x86.avx2.dot_u8i8_8x4")


def test_wrong_extent_is_an_error():
    with pytest.raises(TensorizeError, match=r"iteration domain.*extent 4 but desc's loop 0 "
                                             r"has extent 8"):
        tile_dot(int8_matmul(), 4, "x86.avx2.dot_u8i8_8x4")


def test_wrong_reduction_depth_is_an_error():
    with pytest.raises(TensorizeError, match=r"iteration domain.*extent 8 but desc's loop 1"):
        tile_dot(int8_matmul(), 8, "x86.avx2.dot_u8i8_8x4", kt=8)


def test_wrong_computation_is_an_error():
    with pytest.raises(TensorizeError, match=r"computation does not match desc"):
        tile_dot(int8_matmul(op="-"), 8, "x86.avx2.dot_u8i8_8x4")


def test_other_intrinsic_shape_is_an_error():
    with pytest.raises(TensorizeError, match=r"iteration domain.*3 loop\(s\) but desc runs 2"):
        tile_fma(f32_matmul(), 4, 16, "x86.avx2.dot_u8i8_8x4")


def test_unknown_intrinsic_is_an_error():
    sch = Schedule(int8_matmul())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(TensorizeError, match="no tensor intrinsic named 'nope'"):
        sch.tensorize(i, "nope")


def test_error_marks_the_loop():
    with pytest.raises(TensorizeError, match=r"# <-- here: loop j_1"):
        tile_dot(int8_matmul(), 4, "x86.avx2.dot_u8i8_8x4")


def test_tensorize_of_a_plain_block_is_an_error():
    sch = Schedule(int8_matmul())
    with pytest.raises(TensorizeError, match=r"the structure does not match desc.*not a loop "
                                             r"nest around one block"):
        sch.tensorize(sch.get_block("C"), "x86.avx2.dot_u8i8_8x4")
