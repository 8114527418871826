"""parallel, vectorize, unroll, annotate: expected programs, round trips, refusals."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import (AnnotationError, LoopCarriedDependenceError,
                                     ReduceLoopParallelError, RepeatedWorkError,
                                     VectorizeNotInnermostError)

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse
from .test_loops import STENCIL


def test_kinds_and_annotations():
    f = mm_relu()
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.parallel(i)
    sch.unroll(k)
    sch.annotate(j, "pragma_x", 4)
    sch.annotate(sch.get_block("C"), "tag", "relu")
    expected = parse("""
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i in T.parallel(16):
            for j in T.serial(16, annotations={"pragma_x": 4}):
                for k in T.unroll(16):
                    with T.block("Y"):
                        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                        with T.init():
                            Y[vi, vj] = T.float32(0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.block_attr({"tag": "relu"})
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """)
    mb.tir.assert_structural_equal(sch.func, expected)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)
    assert str(sch.trace).splitlines()[-1] == 'sch.annotate(b4, ann_key="tag", ann_val="relu")'


def test_vectorize_innermost():
    f = mm_relu()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("C"))
    _, ji = sch.split(j, [None, 4])
    sch.vectorize(ji)
    assert sch.get(ji).kind == "vectorized"
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_unannotate():
    f = mm_relu()
    sch = Schedule(f)
    i, _, _ = sch.get_loops(sch.get_block("Y"))
    sch.annotate(i, "a", [1, 2])
    sch.unannotate(i, "a")
    mb.tir.assert_structural_equal(sch.func, f)
    assert_roundtrip(sch, f)
    with pytest.raises(AnnotationError, match="loop i has no annotation 'a'"):
        sch.unannotate(i, "a")


def test_annotate_refuses_unrecordable_values():
    sch = Schedule(mm_relu())
    i, _, _ = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(AnnotationError, match="type dict"):
        sch.annotate(i, "a", {"x": 1})


@pytest.mark.parametrize("prim", ["parallel", "vectorize"])
def test_reduction_loop_cannot_run_at_once(prim):
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    with pytest.raises(ReduceLoopParallelError) as err:
        getattr(sch, prim)(k)
    msg = str(err.value)
    assert "block 'Y' uses it for its reduction axis vk" in msg
    assert "race on Y" in msg and "rfactor" in msg
    assert "for i, j, k in T.grid(16, 16, 16):  # <-- here: loop k" in msg


def test_vectorize_refuses_an_outer_loop():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    with pytest.raises(VectorizeNotInnermostError,
                       match="loop j is inside it, and only the innermost loop"):
        sch.vectorize(i)


def test_parallel_refuses_a_dependence_between_iterations():
    sch = Schedule(parse(STENCIL))
    i, j = sch.get_loops(sch.get_block("Q"))
    with pytest.raises(LoopCarriedDependenceError, match="cannot parallelize loop i"):
        sch.parallel(i)


def test_parallel_refuses_repeating_a_reduction():
    sch = Schedule(parse("""
    @T.prim_func
    def rowsum(A: T.Buffer((8, 8), "float32"), S: T.Buffer((8,), "float32")):
        for r, i, k in T.grid(2, 8, 8):
            with T.block("S"):
                vi = T.axis.spatial(8, i)
                vk = T.axis.reduce(8, k)
                with T.init():
                    S[vi] = T.float32(0)
                S[vi] = S[vi] + A[vi, vk]
    """))
    r, i, k = sch.get_loops(sch.get_block("S"))
    with pytest.raises(RepeatedWorkError, match="different iterations of loop r write "
                       "overlapping parts of S"):
        sch.parallel(r)
    sch.parallel(i)  # the spatial loop is fine


def test_parallel_after_fuse_is_proved_disjoint():
    f = mm_relu()
    sch = Schedule(f)
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.parallel(sch.fuse(i, j))
    assert_same_result(f, sch.func)


def test_parallel_over_a_fused_tile_nest():
    f = mm_relu()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, [None, 4])
    jo, ji = sch.split(j, [None, 4])
    sch.reorder(io, jo, ii, ji)
    sch.compute_at(sch.get_block("Y"), jo)
    sch.parallel(sch.fuse(io, jo))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)
