"""Vectorized loops become LLVM vector instructions of the loop's width, and stay correct."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import VectorizeError
from mlcbook.tir import Buffer, BufferStore, For, IfThenElse, PrimFunc, Var, const, seq

from .._reference import run_reference
from ._util import map_func

RNG = np.random.default_rng(1)


def f32(*shape):
    return RNG.standard_normal(shape).astype("float32")


def test_16_wide_loop_yields_16_float_vector_ops():
    k = mb.build(map_func(lambda x: x * 2.0 + 1.0, ["float32"], "float32", n=64, lanes=16))
    ir = k.llvm_ir()
    assert "load <16 x float>" in ir
    assert "store <16 x float>" in ir
    assert "fmul contract <16 x float>" in ir
    a = f32(64)
    np.testing.assert_allclose(k(a), a * 2 + 1, rtol=1e-6)


def test_vector_width_follows_the_loop_extent():
    k = mb.build(map_func(lambda x: x + x, ["float64"], "float64", n=32, lanes=8))
    assert "<8 x double>" in k.llvm_ir()


def test_loop_invariant_value_is_broadcast():
    # Out[i] = X0[i] * s[0]: s[0] is loaded once and splat across the lanes
    n = 32
    A, s, out = Buffer("A", (n,)), Buffer("s", (1,)), Buffer("Out", (n,))
    io, ii = Var("io"), Var("ii")
    body = For(io, 2, For(ii, 16, BufferStore(out, A[io * 16 + ii] * s[0], (io * 16 + ii,)),
                          "vectorized"))
    k = mb.build(PrimFunc("scale", (A, s, out), body))
    ir = k.llvm_ir()
    assert "shufflevector" in ir and "load float" in ir
    a, sv = f32(n), np.array([3.0], "float32")
    np.testing.assert_allclose(k(a, sv), a * 3, rtol=1e-6)


def test_transposed_store_becomes_a_scatter():
    A, out = Buffer("A", (8, 16)), Buffer("Out", (16, 8))
    i, j = Var("i"), Var("j")
    k = mb.build(PrimFunc("t", (A, out),
                          For(i, 8, For(j, 16, BufferStore(out, A[i, j], (j, i)), "vectorized"))))
    assert "llvm.masked.scatter.v16f32" in k.llvm_ir()
    a = f32(8, 16)
    np.testing.assert_array_equal(k(a), a.T)


def test_lane_dependent_if_becomes_masked_accesses():
    # 10 elements in 16-wide chunks: the predicate of the non-dividing split masks lanes
    A, out = Buffer("A", (10,)), Buffer("Out", (10,))
    io, ii = Var("io"), Var("ii")
    i = io * 16 + ii
    body = For(io, 1, For(ii, 16, IfThenElse(i < 10, BufferStore(out, A[i] + 1.0, (i,))),
                          "vectorized"))
    k = mb.build(PrimFunc("pred", (A, out), body))
    ir = k.llvm_ir()
    assert "llvm.masked.load.v16f32" in ir and "llvm.masked.store.v16f32" in ir
    a = f32(10)
    np.testing.assert_allclose(k(a), a + 1, rtol=1e-6)


def test_vectorized_loop_with_inner_reduction_loop():
    # C[i, j] += A[i, k] * B[k, j] with j vectorized and k a serial loop inside it
    src = '''
@T.prim_func
def mm(A: T.Buffer((4, 8), "float32"), B: T.Buffer((8, 16), "float32"), C: T.Buffer((4, 16), "float32")):
    for i in range(4):
        for j in T.vectorized(16):
            for k in range(8):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''
    k = mb.build(mb.script.parse(src))
    assert "<16 x float>" in k.llvm_ir()
    a, b = f32(4, 8), f32(8, 16)
    np.testing.assert_allclose(k(a, b), a @ b, rtol=1e-5, atol=1e-6)


def test_long_vectorized_loop_is_emitted_in_chunks():
    n = 200  # 3 chunks of 64 lanes and a tail of 8
    A, out = Buffer("A", (n,)), Buffer("Out", (n,))
    i = Var("i")
    k = mb.build(PrimFunc("long", (A, out), For(i, n, BufferStore(out, A[i] * 3.0, (i,)),
                                                "vectorized")))
    ir = k.llvm_ir()
    assert "<64 x float>" in ir and "<8 x float>" in ir
    a = f32(n)
    np.testing.assert_allclose(k(a), a * 3, rtol=1e-6)


def test_a_loop_of_an_odd_width_is_emitted_in_vectors_of_powers_of_two():
    # 14 lanes as 8 + 4 + 2: a 14-wide accumulator tile then stays in registers (LLVM kept
    # a <14 x float> tile in memory, stored every iteration)
    k = mb.build(map_func(lambda x: x * 2.0 + 1.0, ["float32"], "float32", n=42, lanes=14))
    ir = k.llvm_ir()
    assert "<14 x float>" not in ir
    assert all(f"load <{w} x float>" in ir for w in (8, 4, 2))
    a = f32(42)
    np.testing.assert_allclose(k(a), a * 2 + 1, rtol=1e-6)


def test_loop_carried_dependence_is_a_vectorize_error():
    # s[0] = s[0] + A[i]: every lane updates the same element — vector code would be wrong
    A, s = Buffer("A", (16,)), Buffer("s", (1,))
    i = Var("i")
    body = seq(BufferStore(s, const(0.0, "float32"), (0,)),
               For(i, 16, BufferStore(s, s[0] + A[i], (0,)), "vectorized"))
    with pytest.raises(VectorizeError, match=r"\[MLC-C006\] loop i is marked vectorized.*"
                       r"every lane reads and writes the same element of 's'.*Mark it serial"):
        mb.build(PrimFunc("sum", (A, s), body))


def test_shifted_access_in_place_is_a_vectorize_error():
    # A[i+1] = A[i] propagates A[0] in a serial loop; lanes would read stale values
    A = Buffer("A", (17,))
    i = Var("i")
    f = PrimFunc("shift", (A,), For(i, 16, BufferStore(A, A[i], (i + 1,)), "vectorized"))
    with pytest.raises(VectorizeError, match="loop i .*'A' is written and accessed at "
                       "different indices"):
        mb.build(f)


def _compare_with_reference(f, *inputs):
    """Build ``f``, run it and the reference on ``inputs`` and zeroed outputs; return the IR."""
    k = mb.build(f)
    expected = [np.zeros(b.shape, b.dtype) for b in f.params[len(inputs):]]
    run_reference(f, *[x.copy() for x in inputs], *expected)
    got = [np.zeros_like(o) for o in expected]
    k(*[x.copy() for x in inputs], *got)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    return k.llvm_ir()


PADDED_ROWS = """
@T.prim_func(root=False)
def pad(A: T.Buffer((36,), "float32"), P: T.Buffer((64,), "float32")):
    for v in T.vectorized(8):
        for h in range(8):
            P[h * 8 + v] = T.select(h >= 1 and h < 7 and v >= 1 and v < 7, A[T.max(T.min(h - 1, 5), 0) * 6 + T.max(T.min(v - 1, 5), 0)], T.float32(0))
"""


def test_loop_inside_a_vectorized_loop_runs_for_all_lanes():
    # conv2d's padding after `vectorize(w)` then `reorder(w, h)`: the index h*8 + v gives
    # every lane its own elements whatever h is, and the select on the lane masks the load;
    # where the select holds, 1 <= v <= 6, so the clamped column is v - 1: contiguous lanes,
    # one masked load rather than a gather
    ir = _compare_with_reference(mb.script.parse(PADDED_ROWS), f32(36))
    assert "llvm.masked.load.v8f32" in ir and "store <8 x float>" in ir
    assert "gather" not in ir


def test_nonlinear_inner_index_is_checked_lane_by_lane():
    # P[(h // 2) * 8 + v]: not a sum of variables times constants, but the lanes never meet
    src = """
@T.prim_func(root=False)
def halves(A: T.Buffer((32,), "float32"), P: T.Buffer((16,), "float32")):
    for v in T.vectorized(8):
        for h in range(4):
            P[h // 2 * 8 + v] = A[h * 8 + v] + T.float32(1)
"""
    ir = _compare_with_reference(mb.script.parse(src), f32(32))
    assert "<8 x float>" in ir


def test_lanes_meeting_inside_an_inner_loop_is_a_vectorize_error():
    # X[k] = A[v*4 + k]: every lane writes X[0..3]; in vector order the last lane of each
    # k would win, in the loop the last lane's last k
    src = """
@T.prim_func(root=False)
def meet(A: T.Buffer((16,), "float32"), X: T.Buffer((4,), "float32")):
    for v in T.vectorized(4):
        for k in range(4):
            X[k] = A[v * 4 + k]
"""
    with pytest.raises(VectorizeError, match="loop v .*different lanes may access the same "
                       "element of 'X'"):
        mb.build(mb.script.parse(src))


def test_lanes_storing_to_one_element_keep_the_last_lane():
    # Out[v // 2] = A[v]: lanes 2m and 2m+1 both store; a scatter stores in lane order, so
    # the odd lane wins, as in the loop
    src = """
@T.prim_func(root=False)
def odd(A: T.Buffer((8,), "float32"), Out: T.Buffer((4,), "float32")):
    for v in T.vectorized(8):
        Out[v // 2] = A[v]
"""
    a = f32(8)
    ir = _compare_with_reference(mb.script.parse(src), a)
    assert "llvm.masked.scatter.v8f32" in ir
    np.testing.assert_array_equal(mb.build(mb.script.parse(src))(a), a[1::2])


def test_two_masked_stores_to_one_element_is_a_vectorize_error():
    # lane 0 stores 2 after lane 1 stored 1 in vector order, but before it in the loop
    src = """
@T.prim_func(root=False)
def order(X: T.Buffer((1,), "float32")):
    for v in T.vectorized(2):
        if v == 1:
            X[0] = T.float32(1)
        if v == 0:
            X[0] = T.float32(2)
"""
    with pytest.raises(VectorizeError, match="different lanes may access the same element "
                       "of 'X'"):
        mb.build(mb.script.parse(src))


def test_nested_vectorized_loops_are_a_vectorize_error():
    src = """
@T.prim_func(root=False)
def nested(A: T.Buffer((32,), "float32"), B: T.Buffer((32,), "float32")):
    for i in T.vectorized(4):
        for j in T.vectorized(8):
            B[i * 8 + j] = A[i * 8 + j]
"""
    with pytest.raises(VectorizeError, match="loop i .*loop j inside the loop over i is "
                       "vectorized too"):
        mb.build(mb.script.parse(src))


def test_vectorized_loop_of_unknown_extent_is_a_vectorize_error():
    A, out = Buffer("A", (8, 8)), Buffer("Out", (8, 8))
    i, j = Var("i"), Var("j")
    f = PrimFunc("tri", (A, out), For(i, 8, For(j, i + 1, BufferStore(out, A[i, j], (i, j)),
                                                  "vectorized")))
    with pytest.raises(VectorizeError, match="loop j .*extent i \\+ 1 is not a constant"):
        mb.build(f)


def test_safe_vectorized_loop_gives_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mb.build(map_func(lambda x: x - 1.0, ["float32"], "float32", n=48, lanes=16))


STRIDED = '''
@T.prim_func(root=False)
def every(X: T.Buffer(({n},), "float32"), Y: T.Buffer(({m},), "float32")):
    for i in range({outer}):
        for v in T.vectorized({lanes}):
            Y[i * {lanes} + v] = X[i * {lanes} * {s} + v * {s} + {off}]
'''


@pytest.mark.parametrize("s,off", [(2, 0), (2, 1), (3, 2), (4, 3)])
def test_short_constant_stride_loads_the_span_once_and_shuffles(s, off):
    lanes, outer = 8, 3
    m = lanes * outer
    n = (m - 1) * s + off + 1          # the last lane reads the last element
    k = mb.build(mb.script.parse(STRIDED.format(n=n, m=m, lanes=lanes, outer=outer, s=s,
                                                off=off)))
    ir = k.llvm_ir()
    assert "shufflevector" in ir and "masked.gather" not in ir
    x = f32(n)
    np.testing.assert_array_equal(k(x), x[off::s][:m])


def test_long_stride_is_still_a_gather():
    k = mb.build(mb.script.parse(STRIDED.format(n=8 * 24, m=24, lanes=8, outer=3, s=8, off=0)))
    assert "masked.gather" in k.llvm_ir()
    x = f32(8 * 24)
    np.testing.assert_array_equal(k(x), x[::8])


def test_stride_two_loads_two_vectors_and_picks_with_one_shuffle():
    # 8 lanes 2 apart span 15 elements: two <8 x float> loads (the second ending at the
    # 15th) and one two-source shuffle, not a load of an odd-sized <15 x float>
    k = mb.build(mb.script.parse(STRIDED.format(n=47, m=24, lanes=8, outer=3, s=2, off=0)))
    ir = k.llvm_ir()
    assert "load <8 x float>" in ir and "<15 x float>" not in ir
    x = f32(47)
    np.testing.assert_array_equal(k(x), x[::2][:24])


PADDED_STRIDED = """
@T.prim_func(root=False)
def pool_row(A: T.Buffer((40,), "float32"), P: T.Buffer((60,), "float32")):
    for r in range(3):
        for v in T.vectorized(16):
            P[r * 20 + v] = T.select(v * 2 + r - 1 >= 0 and v * 2 + r - 1 < 32, A[T.max(T.min(v * 2 + r - 1, 31), 0)], T.float32(-1))
"""


def test_a_padded_stride_two_read_is_masked_loads_not_a_gather():
    # a stride-2 pool's padded row: where the select holds its clamps are the identity, so
    # the read is a ramp of stride 2 under a mask: masked loads of the elements the active
    # lanes pick (lane 0 of tap 0 reads A[-1], which must not be touched)
    ir = _compare_with_reference(mb.script.parse(PADDED_STRIDED), f32(40))
    assert "masked.load" in ir and "gather" not in ir
