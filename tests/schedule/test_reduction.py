"""decompose_reduction and rfactor: expected programs, results, round trips, refusals."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import UnsupportedError
from mlcbook.schedule.errors_data import (DecomposeLocationError, FactorAxisError,
                                          NotReductionError, ReducerPatternError,
                                          RFactorLoopError, SharedLoopError)

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse


def _check(sch, f, expected_src):
    mb.tir.assert_structural_equal(sch.func, parse(expected_src))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def _error(exc_info, *words):
    msg = str(exc_info.value)
    for w in words:
        assert w in msg, msg
    assert "Instead:" in msg and "# <-- here" in msg, msg


def test_decompose_reduction_inside_a_tile():
    f = mm_relu()
    sch = Schedule(f)
    Y = sch.get_block("Y")
    i, j, k = sch.get_loops(Y)
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(j0, k, j1)
    sch.vectorize(j1)
    Y_init = sch.decompose_reduction(Y, k)
    assert Y_init.name == "Y_init" and sch.get(Y).init is None
    _check(sch, f, """
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i, j_0 in T.grid(16, 4):
            for j_1_init in T.vectorized(4):
                with T.block("Y_init"):
                    vi = T.axis.spatial(16, i)
                    vj = T.axis.spatial(16, j_0 * 4 + j_1_init)
                    Y[vi, vj] = T.float32(0)
            for k in range(16):
                for j_1 in T.vectorized(4):
                    with T.block("Y"):
                        vi = T.axis.spatial(16, i)
                        vj = T.axis.spatial(16, j_0 * 4 + j_1)
                        vk = T.axis.reduce(16, k)
                        T.reads(Y[vi, vj], A[vi, vk], B[vk, vj])
                        T.writes(Y[vi, vj])
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """)


def test_decompose_reduction_at_the_outermost_loop():
    f = mm_relu()
    sch = Schedule(f)
    Y = sch.get_block("Y")
    sch.decompose_reduction(Y, sch.get_loops(Y)[0])
    _check(sch, f, """
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i_init, j_init in T.grid(16, 16):
            with T.block("Y_init"):
                vi, vj = T.axis.remap("SS", [i_init, j_init])
                Y[vi, vj] = T.float32(0)
        for i, j, k in T.grid(16, 16, 16):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(Y[vi, vj], A[vi, vk], B[vk, vj])
                T.writes(Y[vi, vj])
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """)


def test_decompose_reduction_with_the_consumer_in_the_loop():
    f = mm_relu()
    sch = Schedule(f)
    Y = sch.get_block("Y")
    i, j, k = sch.get_loops(Y)
    sch.reverse_compute_at(sch.get_block("C"), i)
    sch.decompose_reduction(Y, i)   # C reads Y after the update: still legal
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


RSUM = """
@T.prim_func
def rsum(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
    for i, k in T.grid(8, 16):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vi, vk]
"""


def _rsum_split():
    f = parse(RSUM)
    sch = Schedule(f)
    i, k = sch.get_loops(sch.get_block("B"))
    k0, k1 = sch.split(k, [None, 4])
    return f, sch, i, k0, k1


def test_rfactor_sum_into_parallel_partial_sums():
    f, sch, i, k0, k1 = _rsum_split()
    B_rf = sch.rfactor(k1, factor_axis=0)
    assert B_rf.name == "B_rf"
    _check(sch, f, """
    @T.prim_func
    def rsum(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
        B_rf = T.alloc_buffer((4, 8), "float32")
        for i, k_0, k_1 in T.grid(8, 4, 4):
            with T.block("B_rf"):
                vk_1, vi, vk_0 = T.axis.remap("SSR", [k_1, i, k_0])
                with T.init():
                    B_rf[vk_1, vi] = T.float32(0)
                B_rf[vk_1, vi] = B_rf[vk_1, vi] + A[vi, vk_0 * 4 + vk_1]
        for i, k_1 in T.grid(8, 4):
            with T.block("B"):
                vi, vk_1 = T.axis.remap("SR", [i, k_1])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] + B_rf[vk_1, vi]
    """)
    # the partial sums are spatial now: their loop may run in parallel
    sch.reorder(k1, k0)
    sch.parallel(k1)
    assert_same_result(f, sch.func)
    assert_roundtrip(sch, f)


def test_rfactor_factor_axis_places_the_new_dimension():
    f, sch, i, k0, k1 = _rsum_split()
    sch.rfactor(k1, factor_axis=-1)
    rf = [b for b in sch.func.root_block.alloc_buffers if b.name == "B_rf"][0]
    assert rf.shape == (8, 4)
    assert "B_rf[vi, vk_1] = B_rf[vi, vk_1] + A[vi, vk_0 * 4 + vk_1]" in str(sch.func)
    assert "factor_axis=-1" in str(sch.trace)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_rfactor_of_a_max_reduction_starts_partial_results_at_minus_infinity():
    x = mb.te.placeholder((4, 12), "float32", name="X")
    f = mb.te.create_prim_func([x, mb.te.ops.softmax(x)])
    sch = Schedule(f)
    mx = sch.get_block("softmax_max")
    i0, i1, k = sch.get_loops(mx)
    k0, k1 = sch.split(k, [None, 3])
    rf = sch.rfactor(k0, 1)
    assert 'softmax_max_rf[vi0, vk_0, vi1] = T.float32("-inf")' in str(sch.func)
    sch.decompose_reduction(rf, sch.get_loops(rf)[0])
    a = np.random.default_rng(0).standard_normal((4, 12)).astype("float32") - 5
    out = np.zeros_like(a)
    mb.tir.interpret(sch.func, a, out)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    assert_roundtrip(sch, f)


def test_rfactor_block_can_be_decomposed():
    f, sch, i, k0, k1 = _rsum_split()
    rf = sch.rfactor(k1)
    init = sch.decompose_reduction(rf, k0)
    assert init.name == "B_rf_init"
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


# --- refusals ------------------------------------------------------------------------------
def test_decompose_a_block_without_init():
    sch = Schedule(mm_relu())
    C = sch.get_block("C")
    with pytest.raises(NotReductionError, match=r"MLC-S055") as err:
        sch.decompose_reduction(C, sch.get_loops(C)[0])
    _error(err, "block 'C' has no T.init()")


def test_decompose_at_a_loop_of_another_block():
    sch = Schedule(mm_relu())
    with pytest.raises(DecomposeLocationError, match=r"MLC-S056") as err:
        sch.decompose_reduction(sch.get_block("Y"), sch.get_loops(sch.get_block("C"))[0])
    _error(err, "is not one of block 'Y''s loops")


def test_decompose_inside_a_reduction_loop():
    sch = Schedule(mm_relu())
    Y = sch.get_block("Y")
    i, j, k = sch.get_loops(Y)
    sch.reorder(k, j)
    with pytest.raises(DecomposeLocationError) as err:
        sch.decompose_reduction(Y, j)
    _error(err, "k drives reduction axis vk", "reset the partial results", "decompose at loop k")


def test_decompose_before_a_producer_of_what_the_init_reads():
    f = parse("""
    @T.prim_func
    def f(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8,), "float32")):
        D = T.alloc_buffer((8,), "float32")
        for i in range(8):
            with T.block("D"):
                vi = T.axis.spatial(8, i)
                D[vi] = A[vi, 0]
        for i, k in T.grid(8, 8):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = D[vi]
                C[vi] = C[vi] + A[vi, vk]
    """)
    sch = Schedule(f)
    C = sch.get_block("C")
    i, k = sch.get_loops(C)
    sch.compute_at(sch.get_block("D"), i)
    with pytest.raises(SharedLoopError, match=r"MLC-S065") as err:
        sch.decompose_reduction(C, i)
    _error(err, "block 'D' under loop i writes data that block 'C''s init touches")
    sch.decompose_reduction(C, k)   # below D: fine
    assert_same_result(f, sch.func)


def test_rfactor_loop_with_two_blocks():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    with pytest.raises(RFactorLoopError, match=r"MLC-S058") as err:
        sch.rfactor(i, 0)
    _error(err, "loop i holds 2 blocks")


def test_rfactor_a_spatial_loop():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(RFactorLoopError) as err:
        sch.rfactor(j, 0)
    _error(err, "loop j does not drive a reduction axis")


def test_rfactor_a_loop_of_spatial_and_reduction_axes():
    f, sch, i, k0, k1 = _rsum_split()
    ik = sch.fuse(i, k0)
    with pytest.raises(RFactorLoopError) as err:
        sch.rfactor(ik, 0)
    _error(err, "drives both spatial and reduction axes")


def test_rfactor_after_decompose_has_no_init():
    f, sch, i, k0, k1 = _rsum_split()
    B = sch.get_block("B")
    sch.decompose_reduction(B, i)
    with pytest.raises(NotReductionError) as err:
        sch.rfactor(k1, 0)
    _error(err, "block 'B' has no T.init()")


def test_rfactor_of_a_non_commutative_update():
    sch = Schedule(parse("""
    @T.prim_func
    def f(A: T.Buffer((8, 16), "float32"), B: T.Buffer((8,), "float32")):
        for i, k in T.grid(8, 16):
            with T.block("B"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    B[vi] = T.float32(0)
                B[vi] = B[vi] * T.float32(0.5) + A[vi, vk]
    """))
    i, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ReducerPatternError, match=r"MLC-S057") as err:
        sch.rfactor(k, 0)
    _error(err, "not X = X + e", "sum, max or min")


def test_rfactor_factor_axis_out_of_range():
    f, sch, i, k0, k1 = _rsum_split()
    with pytest.raises(FactorAxisError, match=r"MLC-S059") as err:
        sch.rfactor(k1, 2)
    _error(err, "factor_axis 2 is not a position", "[-2, 1]")


def test_rfactor_with_a_predicate():
    f = parse(RSUM)
    sch = Schedule(f)
    i, k = sch.get_loops(sch.get_block("B"))
    k0, k1 = sch.split(k, [None, 5])
    with pytest.raises(UnsupportedError) as err:
        sch.rfactor(k1, 0)
    _error(err, "has a predicate", "factors that divide")


def test_rfactor_with_a_reader_in_the_same_loops():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    with pytest.raises(SharedLoopError) as err:
        sch.rfactor(k, 0)
    _error(err, "block 'C' uses Y inside the loops of block 'Y'")
