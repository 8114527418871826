"""Chapter 4's exercises: plausible wrong answers earn zero, with a message that says why.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)

``04.matmul_speed`` gives points by speed measured against numpy in the same check; on a
shared machine that varies, so these tests assert only what correctness decides: the
solution earns points, and wrong answers earn none for reasons that have nothing to do with
speed.
"""

from __future__ import annotations

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.grading import registry
from mlcbook.grading.ch04 import matmul
from mlcbook.grading.compare import Partial
from mlcbook.schedule import Schedule

from .conftest import solution, zero


LANES = mb.Target().vector_lanes("float32")


def test_matmul_solution_is_correct_and_timed():
    result = grading.check("04.matmul_speed", solution(4)["schedule_matmul"])
    assert result.points >= 1, str(result)
    assert "correct on" in result.message and "x numpy" in result.message


# --- 04.vectorize ----------------------------------------------------------------------------
def test_vectorize_the_reduction_loop():
    def answer(sch):
        j, i = sch.get_loops(sch.get_block("S"))
        sch.vectorize(i)
    message = zero("04.vectorize", answer)
    assert "refused by the schedule" in message and "MLC-S" in message
    assert "i is the reduction loop" in message


def test_vectorize_without_reorder():
    def answer(sch):
        j, i = sch.get_loops(sch.get_block("S"))
        j0, j1 = sch.split(j, [None, LANES])
        sch.vectorize(j1)
    message = zero("04.vectorize", answer)
    assert "refused" in message and "only the innermost loop can become SIMD lanes" in message


def test_vectorize_half_a_register():
    def answer(sch):
        j, i = sch.get_loops(sch.get_block("S"))
        j0, j1 = sch.split(j, [None, LANES // 2])
        sch.reorder(j0, i, j1)
        sch.vectorize(j1)
    message = zero("04.vectorize", answer)
    assert f"{LANES // 2} floats wide (<{LANES // 2} x float>" in message
    assert f"hold {LANES} float32" in message


def test_vectorize_nothing():
    def answer(sch):
        j, i = sch.get_loops(sch.get_block("S"))
        j0, j1 = sch.split(j, [None, LANES])
        sch.reorder(j0, i, j1)
    message = zero("04.vectorize", answer)
    assert "no vector arithmetic" in message


def test_vectorize_the_strided_outer_part():
    def answer(sch):
        j, i = sch.get_loops(sch.get_block("S"))
        j0, j1 = sch.split(j, [LANES, None])
        sch.reorder(j1, i, j0)
        sch.vectorize(j0)  # lanes are j1-extent floats apart
    message = zero("04.vectorize", answer)
    assert "gathers" in message and "inner* part of the split j loop" in message


def test_vectorizing_at_a_small_stride_is_found_though_the_ir_has_no_gather():
    from mlcbook.grading.ch04 import _strided_access, weighted_column_sum
    sch = Schedule(weighted_column_sum(5, 2 * LANES))
    j, i = sch.get_loops(sch.get_block("S"))
    j0, j1 = sch.split(j, [LANES, None])
    sch.reorder(j1, i, j0)
    sch.vectorize(j0)
    # a stride of 2 compiles to one wide load and a shuffle: the IR shows no gather
    assert "llvm.masked.gather" not in mb.build(sch.mod).llvm_ir()
    assert _strided_access(sch.mod) == "S[j_0 * 2 + j_1], whose lanes (j_0) are 2 floats apart"


def test_vectorize_a_program_of_its_own():
    from mlcbook.grading.ch04 import weighted_column_sum

    def answer(sch):
        mine = Schedule(weighted_column_sum(5, 2 * LANES))
        j, i = mine.get_loops(mine.get_block("S"))
        return mine
    message = zero("04.vectorize", answer)
    assert "schedule the `sch` your function is given" in message


# --- 04.parallel -----------------------------------------------------------------------------
def test_parallel_the_reduction_loop():
    def answer(sch):
        k, i, j = sch.get_loops(sch.get_block("C"))
        sch.parallel(k)
    message = zero("04.parallel", answer)
    assert "refused by the schedule" in message and "k is the reduction loop" in message


def test_parallel_an_inner_loop():
    def answer(sch):
        k, i, j = sch.get_loops(sch.get_block("C"))
        sch.parallel(j)  # legal, but one parallel region per (k, i)
    message = zero("04.parallel", answer)
    assert "loop j is parallel, but it sits inside loop(s) k, i" in message


def test_parallel_nothing():
    def answer(sch):
        k, i, j = sch.get_loops(sch.get_block("C"))
        sch.reorder(i, k, j)
    assert "no loop is parallel" in zero("04.parallel", answer)


def test_parallel_a_loop_of_one_iteration():
    def answer(sch):
        k, i, j = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, [1, None])
        sch.reorder(i0, i1, k, j)
        sch.parallel(i0)
    assert "has 1 iteration" in zero("04.parallel", answer)


def test_parallel_returning_something_else():
    def answer(sch):
        k, i, j = sch.get_loops(sch.get_block("C"))
        sch.reorder(i, k, j)
        sch.parallel(i)
        return sch.mod
    assert "it should change the schedule it is given in place" in zero("04.parallel", answer)


# --- 04.flatten_index ------------------------------------------------------------------------
def test_flatten_column_major():
    def answer(indices, shape):
        flat, stride = 0, 1
        for index, size in zip(indices, shape):
            flat, stride = flat + index * stride, stride * size
        return flat
    message = zero("04.flatten_index", answer)
    assert "got flat index" in message and "column-major (Fortran) order" in message


def test_flatten_by_own_size():
    def answer(indices, shape):
        return sum(i * s for i, s in zip(indices[:-1], shape[:-1])) + indices[-1]
    assert "the size of its own dimension" in zero("04.flatten_index", answer)


def test_flatten_by_next_size_only():
    def answer(indices, shape):
        return sum(i * s for i, s in zip(indices[:-1], shape[1:])) + indices[-1]
    message = zero("04.flatten_index", answer)
    assert "for shape (" in message and "size of the next dimension only" in message


def test_flatten_returns_a_tuple():
    assert "returned a tuple; return one expression" in zero(
        "04.flatten_index", lambda indices, shape: tuple(indices))


def test_flatten_to_a_float():
    def answer(indices, shape):
        return mb.tir.cast("float32", indices[0])
    assert "has dtype float32, expected an int32 index" in zero("04.flatten_index", answer)


def test_flatten_with_a_stray_variable():
    def answer(indices, shape):
        return mb.tir.Var("q")
    assert "uses variable(s) q" in zero("04.flatten_index", answer)


# --- 04.matmul_speed -------------------------------------------------------------------------
def test_matmul_vectorize_reduction():
    def answer(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.vectorize(k)
    message = zero("04.matmul_speed", answer)
    assert "refused by the schedule" in message and "reduction axis" in message


def test_matmul_unchanged():
    message = zero("04.matmul_speed", lambda sch: None)
    assert "left the program unchanged" in message


def test_matmul_own_fixed_size_program():
    def answer(sch):
        mine = Schedule(matmul(500, 304, 400))
        i, j, k = mine.get_loops(mine.get_block("C"))
        mine.reorder(i, k, j)
        return mine
    message = zero("04.matmul_speed", answer)
    assert "but the check asked for" in message and "[(500, 400), (400, 304)" in message


def test_matmul_correct_but_slow_earns_some_points():
    def answer(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.reorder(i, k, j)
    result = grading.check("04.matmul_speed", answer)
    assert 1 <= result.points <= 4 and "x numpy" in result.message, str(result)


# --- partial points --------------------------------------------------------------------------
def _fake(monkeypatch, verdict):
    ex = registry.Exercise("99.fake", 3, "fake", lambda answer, rng: verdict, "answer")
    monkeypatch.setitem(registry._REGISTRY, "99.fake", ex)


def test_partial_verdict_gives_some_points(monkeypatch):
    _fake(monkeypatch, Partial(2, "correct but slow"))
    result = grading.check("99.fake", None)
    assert (result.points, result.max_points, result.message) == (2, 3, "correct but slow")
    assert not result.passed


def test_partial_verdict_out_of_range_is_an_internal_error(monkeypatch):
    _fake(monkeypatch, Partial(5, "too many"))
    result = grading.check("99.fake", None)
    assert result.points == 0 and "internal error in the checker (it gave 5 of 3" in result.message
