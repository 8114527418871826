"""compute_inline and reverse_compute_inline: expected programs, round trips, refusals."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import NotInlinableError, NotProducerConsumerError, OutputBlockError

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse

CHAIN = """
@T.prim_func
def chain(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
    Y = T.alloc_buffer((8, 8), "float32")
    Z = T.alloc_buffer((8, 8), "float32")
    for i, j in T.grid(8, 8):
        with T.block("Y"):
            vi, vj = T.axis.remap("SS", [i, j])
            Y[vi, vj] = A[vi, vj] * T.float32(2)
    for i, j in T.grid(8, 8):
        with T.block("Z"):
            vi, vj = T.axis.remap("SS", [i, j])
            Z[vj, vi] = Y[vi, vj] + T.float32(1)
    for i, j in T.grid(8, 8):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Z[vi, vj], T.float32(0))
"""


def test_compute_inline():
    f = parse(CHAIN)
    sch = Schedule(f)
    sch.compute_inline(sch.get_block("Y"))
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def chain(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        Z = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vj, vi] = A[vi, vj] * T.float32(2) + T.float32(1)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Z[vi, vj], T.float32(0))
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_reverse_compute_inline_through_a_transpose():
    f = parse(CHAIN)
    sch = Schedule(f)
    sch.reverse_compute_inline(sch.get_block("C"))
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def chain(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        Y = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vj, vi] = T.max(Y[vi, vj] + T.float32(1), T.float32(0))
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_inlined_block_handle_says_what_removed_it():
    sch = Schedule(parse(CHAIN))
    y = sch.get_block("Y")
    sch.compute_inline(y)
    with pytest.raises(mb.errors.ScheduleError, match="block 'Y' was removed by compute_inline"):
        sch.get_loops(y)


def test_compute_inline_refuses_a_reduction():
    sch = Schedule(mm_relu())
    with pytest.raises(NotInlinableError, match="cannot compute_inline block 'Y': it is a "
                       "reduction") as err:
        sch.compute_inline(sch.get_block("Y"))
    assert 'with T.block("Y"):  # <-- here' in str(err.value)


def test_compute_inline_refuses_an_output():
    sch = Schedule(parse(CHAIN))
    with pytest.raises(OutputBlockError, match="writes C, a parameter"):
        sch.compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_refuses_a_reduction_producer():
    sch = Schedule(mm_relu())
    with pytest.raises(NotInlinableError, match="the producer is a reduction"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_refuses_a_non_bijective_read():
    sch = Schedule(parse("""
    @T.prim_func
    def col(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        Y = T.alloc_buffer((8, 8), "float32")
        for i, j in T.grid(8, 8):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = A[vi, vj] * T.float32(2)
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = Y[vi, 0]
    """))
    with pytest.raises(NotInlinableError, match="read Y at its own iteration variables"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_refuses_when_another_block_reads_the_buffer():
    sch = Schedule(parse("""
    @T.prim_func(num_outputs=2)
    def fan(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32"),
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
    with pytest.raises(NotProducerConsumerError, match="block 'C' also uses Y"):
        sch.reverse_compute_inline(sch.get_block("B"))
