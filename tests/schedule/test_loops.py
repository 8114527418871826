"""split, fuse, reorder: expected programs, trace round trips, and every refusal."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import (FactorError, LoopCarriedDependenceError, LoopNotNestedError,
                                     NonConstantExtentError, NotSingleChildError)
from mlcbook.tir import (Block, BlockRealize, Buffer, BufferRegion, BufferStore, For, IterVar,
                         PrimFunc, Var, root_block_realize)

from ._util import add, assert_roundtrip, assert_same_result, mm_relu, parse


def _sch():
    f = add()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("B"))
    return f, sch, i, j


def _check(sch, f, expected_src):
    mb.tir.assert_structural_equal(sch.func, parse(expected_src))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_split_infers_none_and_guards_the_remainder():
    f, sch, i, j = _sch()
    io, ii = sch.split(i, factors=[None, 4])
    _check(sch, f, """
    @T.prim_func
    def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
        for i_0, i_1, j in T.grid(3, 4, 8):
            with T.block("B"):
                vi = T.axis.spatial(10, i_0 * 4 + i_1)
                vj = T.axis.spatial(8, j)
                T.where(i_0 * 4 + i_1 < 10)
                B[vi, vj] = A[vi, vj] + T.float32(1)
    """)
    assert [sch.get(lp).loop_var.name for lp in (io, ii)] == ["i_0", "i_1"]


def test_split_into_three():
    f, sch, i, j = _sch()
    sch.split(j, factors=[2, None, 2])
    _check(sch, f, """
    @T.prim_func
    def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
        for i, j_0, j_1, j_2 in T.grid(10, 2, 2, 2):
            with T.block("B"):
                vi = T.axis.spatial(10, i)
                vj = T.axis.spatial(8, j_0 * 4 + j_1 * 2 + j_2)
                B[vi, vj] = A[vi, vj] + T.float32(1)
    """)


def test_split_unit_factor_leaves_no_term():
    f, sch, i, j = _sch()
    sch.split(j, factors=[8, 1])
    _check(sch, f, """
    @T.prim_func
    def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
        for i, j_0, j_1 in T.grid(10, 8, 1):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j_0])
                B[vi, vj] = A[vi, vj] + T.float32(1)
    """)


@pytest.mark.parametrize("factors, words", [
    ([None, None], "more than one None"),
    ([0, None], "not a positive int"),
    ([2.5, None], "not a positive int"),
    ([3, 3], "fewer than its 10 iterations"),
    ([10], "at least two factors"),
])
def test_split_bad_factors(factors, words):
    f, sch, i, j = _sch()
    with pytest.raises(FactorError, match=words) as err:
        sch.split(i, factors=factors)
    assert "# <-- here: loop i" in str(err.value)
    assert len(sch.trace) == 2  # the failed step is not recorded
    assert sch.func is f


def test_split_non_constant_extent():
    A, B = Buffer("A", (8, 8)), Buffer("B", (8, 8))
    i, j, vi, vj = Var("i"), Var("j"), Var("vi"), Var("vj")
    block = Block("B", (IterVar(vi, 8), IterVar(vj, 8)), (BufferRegion.point(A, (vi, vj)),),
                  (BufferRegion.point(B, (vi, vj)),), BufferStore(B, A[vi, vj], (vi, vj)))
    body = For(i, 8, For(j, i + 1, BlockRealize((i, j), True, block)))
    f = PrimFunc("tri", (A, B), root_block_realize(body))
    sch = Schedule(f)
    _, jl = sch.get_loops(sch.get_block("B"))
    with pytest.raises(NonConstantExtentError, match="extent i \\+ 1 is not a constant"):
        sch.split(jl, [None, 2])


def test_fuse():
    f, sch, i, j = _sch()
    fused = sch.fuse(i, j)
    _check(sch, f, """
    @T.prim_func
    def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
        for i_j_fused in range(80):
            with T.block("B"):
                vi = T.axis.spatial(10, i_j_fused // 8)
                vj = T.axis.spatial(8, i_j_fused % 8)
                B[vi, vj] = A[vi, vj] + T.float32(1)
    """)
    assert sch.get(fused).loop_var.name == "i_j_fused"


def test_fuse_then_split_back_simplifies():
    f, sch, i, j = _sch()
    sch.split(sch.fuse(i, j), [10, 8])
    _check(sch, f, """
    @T.prim_func
    def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
        for i_j_fused_0, i_j_fused_1 in T.grid(10, 8):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i_j_fused_0, i_j_fused_1])
                B[vi, vj] = A[vi, vj] + T.float32(1)
    """)


def test_fuse_refuses_loops_out_of_order():
    f, sch, i, j = _sch()
    with pytest.raises(LoopNotNestedError, match="loop i is not inside loop j"):
        sch.fuse(j, i)


def test_fuse_refuses_a_gap():
    f = mm_relu()
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(LoopNotNestedError, match="loop j lies between loop i and loop k"):
        sch.fuse(i, k)


def test_fuse_refuses_loops_of_two_nests():
    f = mm_relu()
    sch = Schedule(f)
    i, _, _ = sch.get_loops(sch.get_block("Y"))
    i2, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(LoopNotNestedError):
        sch.fuse(i, i2)


def test_reorder():
    f, sch, i, j = _sch()
    sch.reorder(j, i)
    _check(sch, f, """
    @T.prim_func
    def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
        for j, i in T.grid(8, 10):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] + T.float32(1)
    """)


def test_reorder_keeps_loops_not_named_in_place():
    f = mm_relu()
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reorder(k, i)
    assert [lp.loop_var.name for lp in _loops(sch, "Y")] == ["k", "j", "i"]
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def _loops(sch, name):
    return [sch.get(lp) for lp in sch.get_loops(sch.get_block(name))]


def test_reorder_refuses_duplicates_and_two_nests():
    f = mm_relu()
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    i2, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(LoopNotNestedError, match="got loop i twice"):
        sch.reorder(i, j, i)
    with pytest.raises(LoopNotNestedError, match="not in one nest"):
        sch.reorder(i2, k)


def test_reorder_refuses_an_imperfect_nest():
    f = mm_relu()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("Y"), i)
    ax = sch.get_loops(sch.get_block("Y"))[1]
    with pytest.raises(NotSingleChildError, match="loop i contains more than loop"):
        sch.reorder(ax, i)


STENCIL = """
@T.prim_func
def stencil(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):
    Tmp = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 8):
        with T.block("P"):
            vi, vj = T.axis.remap("SS", [i, j])
            Tmp[vi, vj] = A[vi, vj] * T.float32(2)
        with T.block("Q"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = Tmp[T.min(vi + 1, 7), T.max(vj - 1, 0)]
"""


def test_reorder_refuses_to_break_a_dependence_between_blocks():
    sch = Schedule(parse(STENCIL))
    i, j = sch.get_loops(sch.get_block("Q"))
    with pytest.raises(LoopCarriedDependenceError, match="block 'Q' uses parts of Tmp that "
                       "block 'P' writes in other iterations"):
        sch.reorder(j, i)
