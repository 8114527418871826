"""compute_at and reverse_compute_at: expected programs, round trips, refusals."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import (ComputeLocationError, CoverageError,
                                     NotProducerConsumerError, OutputBlockError, UnsupportedError)

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse


def test_compute_at_computes_the_tile_the_consumer_reads():
    f = mm_relu()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, [None, 8])
    sch.compute_at(sch.get_block("Y"), i0)
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i_0 in range(2):
            for ax0, ax1, ax2 in T.grid(8, 16, 16):
                with T.block("Y"):
                    vi = T.axis.spatial(16, i_0 * 8 + ax0)
                    vj = T.axis.spatial(16, ax1)
                    vk = T.axis.reduce(16, ax2)
                    with T.init():
                        Y[vi, vj] = T.float32(0)
                    Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for i_1, j in T.grid(8, 16):
                with T.block("C"):
                    vi = T.axis.spatial(16, i_0 * 8 + i_1)
                    vj = T.axis.spatial(16, j)
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_reverse_compute_at_runs_the_consumer_per_produced_element():
    f = mm_relu()
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reverse_compute_at(sch.get_block("C"), j)
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i, j in T.grid(16, 16):
            for k in range(16):
                with T.block("Y"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        Y[vi, vj] = T.float32(0)
                    Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_compute_at_with_a_halo_on_conv2d():
    te, ops = mb.te, mb.te.ops
    x = te.placeholder((1, 2, 6, 6), name="x")
    w = te.placeholder((3, 2, 3, 3), name="w")
    f = te.create_prim_func([x, w, ops.conv2d(x, w, padding=1)])
    sch = Schedule(f)
    _, _, y, _, _, _, _ = sch.get_loops(sch.get_block("conv2d"))
    y0, _ = sch.split(y, [None, 2])
    sch.compute_at(sch.get_block("conv2d_pad"), y0)
    pad = sch.get(sch.get_block("conv2d_pad"))
    # 2 output rows of a 3x3 kernel need 4 padded rows
    assert [sch.get(lp).extent.value for lp in sch.get_loops(sch.get_block("conv2d_pad"))[-3:]] \
        == [2, 4, 8]
    assert pad.name == "conv2d_pad"
    sch.parallel(y0)  # the pad block is pure: overlapping halos write equal values
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_compute_at_refuses_an_output_block():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(OutputBlockError, match="block 'C' writes C, a parameter"):
        sch.compute_at(sch.get_block("C"), i)


def test_compute_at_refuses_a_loop_without_all_consumers():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(ComputeLocationError, match="loop i is a loop of block 'Y' itself"):
        sch.compute_at(sch.get_block("Y"), i)


def test_compute_at_refuses_when_a_consumer_stays_outside():
    sch = Schedule(parse("""
    @T.prim_func(num_outputs=2)
    def two(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"),
            C: T.Buffer((8,), "float32")):
        Y = T.alloc_buffer((8,), "float32")
        for i in range(8):
            with T.block("Y"):
                vi = T.axis.spatial(8, i)
                Y[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = Y[vi] + T.float32(1)
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = Y[vi] - T.float32(1)
    """))
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(NotProducerConsumerError, match="block 'C' reads Y but is not under loop i"):
        sch.compute_at(sch.get_block("Y"), i)


def test_reverse_compute_at_refuses_partial_sums():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(CoverageError, match="still accumulating its reduction over loop k"):
        sch.reverse_compute_at(sch.get_block("C"), k)


def test_reverse_compute_at_refuses_reading_ahead():
    sch = Schedule(parse("""
    @T.prim_func
    def ahead(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        Y = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = Y[vi, vj] + Y[T.min(vi + 1, 7), vj]
    """))
    i, j = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(CoverageError, match="would read parts of Y that loop i's iteration has "
                       "not produced yet"):
        sch.reverse_compute_at(sch.get_block("C"), i)


_POOLED = """
@T.prim_func
def pooled(A: T.Buffer((8, 4), "float32"), C: T.Buffer((4, 4), "float32")):
    Y = T.alloc_buffer((8, 4), "float32")
    for i, j in T.grid(8, 4):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(4, 4):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi * 2, vj], Y[vi * 2 + 1, vj])
"""


def test_reverse_compute_at_runs_a_pooling_consumer_per_window_of_rows():
    f = parse(_POOLED)
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("Y"))
    i0, i1 = sch.split(i, [None, 2])
    sch.reverse_compute_at(sch.get_block("C"), i0)
    # one row of C after each two rows of Y
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def pooled(A: T.Buffer((8, 4), "float32"), C: T.Buffer((4, 4), "float32")):
        Y = T.alloc_buffer((8, 4), "float32")
        for i_0 in range(4):
            for i_1, j in T.grid(2, 4):
                with T.block("Y"):
                    vi = T.axis.spatial(8, i_0 * 2 + i_1)
                    vj = T.axis.spatial(4, j)
                    Y[vi, vj] = A[vi, vj] * T.float32(2)
            for ax0 in range(4):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i_0, ax0])
                    C[vi, vj] = T.max(Y[vi * 2, vj], Y[vi * 2 + 1, vj])
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_reverse_compute_at_refuses_a_pooling_consumer_under_single_rows():
    sch = Schedule(parse(_POOLED))
    i, j = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(CoverageError, match="would read parts of Y that loop i's iteration has "
                                            "not produced yet"):
        sch.reverse_compute_at(sch.get_block("C"), i)


def test_reverse_compute_at_refuses_a_loop_without_producers():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    with pytest.raises(NotProducerConsumerError, match="no block under loop i writes a buffer that block .Y. reads"):
        sch.reverse_compute_at(sch.get_block("Y"), i)


def test_compute_at_refuses_a_predicated_block():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.split(i, [None, 5])
    ci, cj = sch.get_loops(sch.get_block("C"))
    with pytest.raises(UnsupportedError, match="has a predicate"):
        sch.compute_at(sch.get_block("Y"), ci)
