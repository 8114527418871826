"""blockize: expected programs, results, round trips, refusals."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors_data import BlockizeError

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse

SCALE = """
@T.prim_func
def scale(A: T.Buffer((16, 12), "float32"), B: T.Buffer((16, 12), "float32")):
    for i, j in T.grid(16, 12):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * T.float32(2)
"""


def _error(exc_info, *words):
    msg = str(exc_info.value)
    for w in words:
        assert w in msg, msg
    assert "Instead:" in msg and "# <-- here" in msg, msg


def _tiled():
    f = parse(SCALE)
    sch = Schedule(f)
    B = sch.get_block("B")
    i, j = sch.get_loops(B)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 4])
    sch.reorder(i0, j0, i1, j1)
    return f, sch, B, (i0, j0, i1, j1)


def test_blockize_a_tile():
    f, sch, B, (i0, j0, i1, j1) = _tiled()
    B_o = sch.blockize(i1)
    assert B_o.name == "B_o"
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def scale(A: T.Buffer((16, 12), "float32"), B: T.Buffer((16, 12), "float32")):
        for i_0, j_0 in T.grid(4, 3):
            with T.block("B_o"):
                vi_o, vj_o = T.axis.remap("SS", [i_0, j_0])
                T.reads(A[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
                T.writes(B[vi_o * 4:vi_o * 4 + 4, vj_o * 4:vj_o * 4 + 4])
                for i_1, j_1 in T.grid(4, 4):
                    with T.block("B"):
                        vi = T.axis.spatial(16, vi_o * 4 + i_1)
                        vj = T.axis.spatial(12, vj_o * 4 + j_1)
                        B[vi, vj] = A[vi, vj] * T.float32(2)
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)
    # handles stay valid: the inner block and its loops are still there
    assert sch.get(B).name == "B" and sch.get(j1).loop_var.name == "j_1"
    sch.vectorize(j1)
    sch.parallel(i0)
    assert_same_result(f, sch.func)


def test_blockize_a_tiled_matmul_moves_the_init_out():
    f = mm_relu()
    sch = Schedule(f)
    Y = sch.get_block("Y")
    i, j, k = sch.get_loops(Y)
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 8])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    sch.blockize(i1)
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i_0, j_0, k_0 in T.grid(4, 2, 4):
            with T.block("Y_o"):
                vi_o, vj_o, vk_o = T.axis.remap("SSR", [i_0, j_0, k_0])
                T.reads(Y[vi_o * 4:vi_o * 4 + 4, vj_o * 8:vj_o * 8 + 8],
                        A[vi_o * 4:vi_o * 4 + 4, vk_o * 4:vk_o * 4 + 4],
                        B[vk_o * 4:vk_o * 4 + 4, vj_o * 8:vj_o * 8 + 8])
                T.writes(Y[vi_o * 4:vi_o * 4 + 4, vj_o * 8:vj_o * 8 + 8])
                with T.init():
                    for i_1_init, j_1_init in T.grid(4, 8):
                        with T.block("Y_init"):
                            vi = T.axis.spatial(16, vi_o * 4 + i_1_init)
                            vj = T.axis.spatial(16, vj_o * 8 + j_1_init)
                            Y[vi, vj] = T.float32(0)
                for i_1, j_1, k_1 in T.grid(4, 8, 4):
                    with T.block("Y"):
                        vi = T.axis.spatial(16, vi_o * 4 + i_1)
                        vj = T.axis.spatial(16, vj_o * 8 + j_1)
                        vk = T.axis.reduce(16, vk_o * 4 + k_1)
                        T.reads(Y[vi, vj], A[vi, vk], B[vk, vj])
                        T.writes(Y[vi, vj])
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_the_outer_block_of_a_reduction_can_be_decomposed():
    f = mm_relu()
    sch = Schedule(f)
    Y = sch.get_block("Y")
    i, j, k = sch.get_loops(Y)
    k0, k1 = sch.split(k, [None, 4])
    Y_o = sch.blockize(k1)
    init = sch.decompose_reduction(Y_o, k0)
    assert init.name == "Y_o_init"
    assert "T.writes(Y[vi_o, vj_o])" in str(sch.func)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_blockize_the_outermost_loop_gives_a_block_without_iteration_variables():
    f = parse(SCALE)
    sch = Schedule(f)
    B = sch.get_block("B")
    outer = sch.blockize(sch.get_loops(B)[0])
    assert sch.get(outer).iter_vars == ()
    assert "T.writes(B[0:16, 0:12])" in str(sch.func)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_blockize_keeps_a_predicate_on_inner_loops():
    f = parse(SCALE)
    sch = Schedule(f)
    B = sch.get_block("B")
    i, j = sch.get_loops(B)
    sch.split(j, [None, 5])           # 3 * 5 > 12: a predicate on j_0, j_1
    sch.blockize(sch.get_loops(B)[1])
    assert "T.where(j_0 * 5 + j_1 < 12)" in str(sch.func)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


# --- refusals ------------------------------------------------------------------------------
def test_blockize_a_loop_with_two_blocks():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    with pytest.raises(BlockizeError, match=r"MLC-S064") as err:
        sch.blockize(i)
    _error(err, "loop i holds 2 blocks")


def test_blockize_a_fused_binding():
    f = parse(SCALE)
    sch = Schedule(f)
    B = sch.get_block("B")
    ij = sch.fuse(*sch.get_loops(B))
    o, inner = sch.split(ij, [None, 8])
    with pytest.raises(BlockizeError) as err:
        sch.blockize(inner)
    _error(err, "not a sum of loop variables times constants", "after split, not after fuse")


def test_blockize_inner_loops_out_of_order():
    f, sch, B, (i0, j0, i1, j1) = _tiled()
    sch.reorder(i1, i0)
    with pytest.raises(BlockizeError) as err:
        sch.blockize(i0)
    _error(err, "do not enumerate a contiguous range", "coefficient of i_0 is 4")


def test_blockize_below_a_predicate_on_outer_loops():
    f = parse(SCALE)
    sch = Schedule(f)
    B = sch.get_block("B")
    i, j = sch.get_loops(B)
    j0, j1 = sch.split(j, [None, 5])
    with pytest.raises(BlockizeError) as err:
        sch.blockize(j1)
    _error(err, "predicate j_0 * 5 + j_1 < 12 uses loops outside loop j_1")
