"""parallel, vectorize, unroll, annotate: expected programs, round trips, refusals."""

import pytest

import mlcbook as mb
from mlcbook.errors import VectorizeError
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import (AnnotationError, LoopCarriedDependenceError,
                                     ReduceLoopParallelError, RepeatedWorkError,
                                     VectorizeNotInnermostError, VectorLaneError)

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


def test_an_unchecked_schedule_skips_the_dependence_check_and_replaying_checks_it():
    func = parse(STENCIL)
    sch = Schedule(func, checks=False)
    i, j = sch.get_loops(sch.get_block("Q"))
    sch.parallel(i)  # illegal, but a search's proposal is not checked until picked
    assert "T.parallel" in sch.func.script()
    with pytest.raises(LoopCarriedDependenceError, match="cannot parallelize loop i"):
        sch.trace.apply(func)


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


# --- a loop vectorize accepts always compiles to vector code ----------------------------------
def _conv2d():
    x = mb.te.placeholder((1, 2, 6, 6), name="x")
    w = mb.te.placeholder((3, 2, 3, 3), name="w")
    return mb.te.create_prim_func([x, w, mb.te.ops.conv2d(x, w, padding=1)])


def test_vectorized_padding_loop_stays_vector_code_after_reorder():
    # found by the random schedules: the padding's select on the lane, with the row loop
    # moved inside the vectorized column loop
    f = _conv2d()
    sch = Schedule(f)
    n, c, h, w = sch.get_loops(sch.get_block("conv2d_pad"))
    sch.vectorize(w)
    sch.reorder(n, c, w, h)
    ir = mb.build(sch.func).llvm_ir()
    # where the select holds the clamped column is the plain one: a masked load, no gather
    assert "llvm.masked.load.v8f32" in ir and "store <8 x float>" in ir
    assert "gather" not in ir
    assert_same_result(f, sch.func)


DUPLICATE_PRODUCER = """
@T.prim_func
def dup(A: T.Buffer((4,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((4,), "float32")
    for j in range(8):
        with T.block("B"):
            vb = T.axis.spatial(4, j // 2)
            B[vb] = A[vb] * T.float32(2)
        with T.block("C"):
            vc = T.axis.spatial(8, j)
            C[vc] = B[vc // 2] + T.float32(1)
"""


def test_vectorize_refuses_lanes_that_share_an_element():
    # lanes 2m and 2m+1 both write B[m] and read it back: independent as iterations (same
    # value), but vector code cannot keep each lane's own write
    sch = Schedule(parse(DUPLICATE_PRODUCER))
    (j,) = sch.get_loops(sch.get_block("C"))
    before = sch.mod
    with pytest.raises(VectorLaneError) as err:
        sch.vectorize(j)
    msg = str(err.value)
    assert msg.startswith("[MLC-S022] cannot vectorize loop j: code generation could not run "
                          "its iterations as SIMD lanes: different lanes may access the same "
                          "element of 'B'")
    assert "Instead: vectorize a loop whose iterations each write their own elements" in msg
    assert "for j in range(8):  # <-- here: loop j" in msg
    assert sch.mod is before


def test_vectorize_accepts_lanes_storing_one_element_in_order():
    f = parse("""
    @T.prim_func
    def halves(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for j in range(8):
            with T.block("B"):
                vb = T.axis.spatial(4, j // 2)
                B[vb] = A[vb] * T.float32(2)
    """)
    sch = Schedule(f)
    (j,) = sch.get_loops(sch.get_block("B"))
    sch.vectorize(j)
    assert "llvm.masked.scatter.v8f32" in mb.build(sch.func).llvm_ir()
    assert_same_result(f, sch.func)


def test_vectorize_refuses_a_loop_inside_a_vectorized_one():
    sch = Schedule(mm_relu())
    i, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)
    sch.reorder(j, i)
    with pytest.raises(VectorLaneError, match="(?s)cannot vectorize loop i: loop j around it "
                       "is already vectorized.*Instead: vectorize either j or i, not both"):
        sch.vectorize(i)


LAYER_NORM_ROWS = """
@T.prim_func
def norm(A: T.Buffer((4, 8), "float32"), Out: T.Buffer((4, 8), "float32")):
    S = T.alloc_buffer((4,), "float32")
    for i, k in T.grid(4, 8):
        with T.block("S"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                S[vi] = T.float32(0)
            S[vi] = S[vi] + A[vi, vk] * A[vi, vk]
    for i, j in T.grid(4, 8):
        with T.block("Out"):
            vi, vj = T.axis.remap("SS", [i, j])
            Out[vi, vj] = A[vi, vj] * T.rsqrt(S[vi] + T.float32(1e-05))
"""


def test_compute_at_into_a_vectorized_loop_refuses_a_shared_reduction():
    # every lane would redo the row's sum into the same element S[i]
    f = parse(LAYER_NORM_ROWS)
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("Out"))
    sch.vectorize(j)
    before, steps = sch.mod, len(sch.trace)
    with pytest.raises(VectorLaneError) as err:
        sch.compute_at(sch.get_block("S"), j)
    msg = str(err.value)
    assert msg.startswith("[MLC-S022] cannot compute_at: loop j is vectorized, and after this "
                          "step code generation could not run its iterations as SIMD lanes: "
                          "every lane reads and writes the same element of 'S'")
    assert "Instead: keep each lane of j on its own elements, e.g. compute_at" in msg
    assert "for j in T.vectorized(8):  # <-- here: loop j" in msg
    assert sch.mod is before and len(sch.trace) == steps + 1  # only the get_block
    sch.compute_at(sch.get_block("S"), i)  # outside the vectorized loop it is fine
    assert_same_result(f, sch.func)


def test_compute_at_into_a_vectorized_loop_refuses_overlapping_padding():
    # lanes x and x+1 would write overlapping windows of the padded input
    sch = Schedule(_conv2d())
    n, f, y, x, rc, ry, rx = sch.get_loops(sch.get_block("conv2d"))  # x is loop o1
    sch.reorder(n, f, y, rc, ry, rx, x)
    sch.vectorize(x)
    sch.reorder(n, f, y, x, rc, ry, rx)
    with pytest.raises(VectorLaneError, match="(?s)cannot compute_at: loop o1 is vectorized.*"
                       "'conv2d_pad' is written and accessed at different indices"):
        sch.compute_at(sch.get_block("conv2d_pad"), x)


def test_hand_marked_loop_codegen_refuses_does_not_block_other_steps():
    f = parse("""
    @T.prim_func
    def total(A: T.Buffer((8,), "float32"), S: T.Buffer((1,), "float32")):
        for i in T.vectorized(8):
            with T.block("S"):
                vi = T.axis.reduce(8, i)
                with T.init():
                    S[0] = T.float32(0)
                S[0] = S[0] + A[vi]
    """)
    sch = Schedule(f)
    sch.annotate(sch.get_block("S"), "tag", "sum")  # changes the loop, not its problem
    with pytest.raises(VectorizeError, match="loop i is marked vectorized, but its iterations "
                       "cannot run as SIMD lanes: every lane reads and writes the same element "
                       "of 'S'"):
        mb.build(sch.func)


def test_nested_unrolls_are_bounded_by_the_copies_of_the_body():
    # each loop alone is below the limit; i, j and k_1 together would copy the body
    # 32 * 24 * 16 = 12288 times, and LLVM then takes many minutes to compile
    from mlcbook.schedule.errors import UnrollTooLargeError
    from mlcbook.schedule.for_kind import MAX_UNROLLED_COPIES
    A = mb.te.placeholder((32, 16), "float32", name="A")
    B = mb.te.placeholder((16, 24), "float32", name="B")
    k = mb.te.reduce_axis(16, name="k")
    C = mb.te.compute((32, 24), lambda i, j: mb.te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = mb.Schedule(mb.te.create_prim_func([A, B, C]))
    i, j, kk = sch.get_loops(sch.get_block("C"))
    _, k1 = sch.split(kk, [None, 16])
    sch.unroll(k1)
    sch.unroll(j)
    with pytest.raises(UnrollTooLargeError, match=r"copied 12288 times .* more than 4096"):
        sch.unroll(i)
    _, i1 = sch.split(i, [None, 8])
    sch.unroll(i1)                                  # 8 * 24 * 16 copies: allowed
    assert 8 * 24 * 16 <= MAX_UNROLLED_COPIES < 32 * 24 * 16


def test_codegen_refuses_nested_unrolled_loops_written_by_hand():
    from mlcbook.errors import UnrollError
    src = """
@T.prim_func
def f(A: T.Buffer((64, 128), "float32")):
    for i in T.unroll(64):
        for j in T.unroll(128):
            with T.block("A"):
                vi, vj = T.axis.remap("SS", [i, j])
                A[vi, vj] = T.float32(1)
"""
    with pytest.raises(UnrollError, match="copy the body 8192 times"):
        mb.build(mb.script.parse(src))
