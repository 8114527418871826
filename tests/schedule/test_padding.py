"""pad_einsum: expected programs, results, round trips, refusals."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import ArgumentTypeError
from mlcbook.schedule.errors_data import NotEinsumError, PaddingError, SharedLoopError

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse

MM = """
@T.prim_func
def mm(A: T.Buffer((7, 5), "float32"), B: T.Buffer((5, 6), "float32"),
       C: T.Buffer((7, 6), "float32")):
    for i, j, k in T.grid(7, 6, 5):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def _error(exc_info, *words):
    msg = str(exc_info.value)
    for w in words:
        assert w in msg, msg
    assert "Instead:" in msg and "# <-- here" in msg, msg


def test_pad_einsum_pads_inputs_with_zeros_and_copies_the_output_back():
    f = parse(MM)
    sch = Schedule(f)
    sch.pad_einsum(sch.get_block("C"), [4, 4, 4])
    mb.tir.assert_structural_equal(sch.func, parse("""
    @T.prim_func
    def mm(A: T.Buffer((7, 5), "float32"), B: T.Buffer((5, 6), "float32"),
           C: T.Buffer((7, 6), "float32")):
        A_pad = T.alloc_buffer((8, 8), "float32")
        B_pad = T.alloc_buffer((8, 8), "float32")
        C_pad = T.alloc_buffer((8, 8), "float32")
        for ax0, ax1 in T.grid(8, 8):
            with T.block("A_pad"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                A_pad[v0, v1] = T.select(v0 < 7 and v1 < 5, A[T.min(v0, 6), T.min(v1, 4)],
                                         T.float32(0))
        for ax0, ax1 in T.grid(8, 8):
            with T.block("B_pad"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                B_pad[v0, v1] = T.select(v0 < 5 and v1 < 6, B[T.min(v0, 4), T.min(v1, 5)],
                                         T.float32(0))
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C_pad[vi, vj] = T.float32(0)
                C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * B_pad[vk, vj]
        for ax0, ax1 in T.grid(7, 6):
            with T.block("C_pad"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                C[v0, v1] = C_pad[v0, v1]
    """))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_padded_loops_split_without_a_predicate():
    f = parse(MM)
    sch = Schedule(f)
    C = sch.get_block("C")
    sch.pad_einsum(C, [4, 4, 1])
    i, j, k = sch.get_loops(C)
    sch.split(i, [None, 4])
    sch.split(j, [None, 4])
    assert "T.where" not in str(sch.func)
    assert "B_pad" in str(sch.func) and "A_pad" in str(sch.func)   # only B's j axis is padded
    assert [b.shape for b in sch.func.root_block.alloc_buffers] == [(8, 5), (5, 8), (8, 8)]
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_pad_einsum_is_a_no_op_when_extents_are_multiples():
    f = parse(MM)
    sch = Schedule(f)
    sch.pad_einsum(sch.get_block("C"), [7, 3, 5])
    mb.tir.assert_structural_equal(sch.func, f)
    assert len(sch.trace) == 2


def test_pad_the_spatial_axis_of_a_max_reduction():
    x = mb.te.placeholder((3, 8), "float32", name="X")
    f = mb.te.create_prim_func([x, mb.te.ops.softmax(x)])
    sch = Schedule(f)
    sch.pad_einsum(sch.get_block("softmax_max"), [4, 1, 1])
    assert_roundtrip(sch, f)
    a = np.random.default_rng(0).standard_normal((3, 8)).astype("float32")
    out = np.zeros_like(a)
    mb.tir.interpret(sch.func, a, out)
    e = np.exp(a - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)


# --- refusals ------------------------------------------------------------------------------
def test_padding_of_the_wrong_length():
    sch = Schedule(parse(MM))
    with pytest.raises(PaddingError, match=r"MLC-S063") as err:
        sch.pad_einsum(sch.get_block("C"), [4, 4])
    _error(err, "one positive multiple per iteration variable", "vi, vj, vk")


def test_padding_of_the_wrong_type():
    sch = Schedule(parse(MM))
    with pytest.raises(ArgumentTypeError):
        sch.pad_einsum(sch.get_block("C"), 4)


def test_padding_the_reduction_of_a_max():
    x = mb.te.placeholder((3, 7), "float32", name="X")
    sch = Schedule(mb.te.create_prim_func([x, mb.te.ops.softmax(x)]))
    with pytest.raises(PaddingError) as err:
        sch.pad_einsum(sch.get_block("softmax_max"), [1, 1, 4])
    _error(err, "is not a sum", "padding 1 for the reduction axes")


def test_padding_a_reduction_whose_term_is_not_zero_on_zeros():
    sch = Schedule(parse("""
    @T.prim_func
    def f(A: T.Buffer((4, 5), "float32"), C: T.Buffer((4,), "float32")):
        for i, k in T.grid(4, 5):
            with T.block("C"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    C[vi] = T.float32(0)
                C[vi] = C[vi] + T.exp(A[vi, vk])
    """))
    with pytest.raises(PaddingError) as err:
        sch.pad_einsum(sch.get_block("C"), [1, 4])
    _error(err, "T.exp(A[vi, vk])", "not zero when its inputs are zero-padded")


def test_pad_a_block_that_is_not_an_einsum():
    x = mb.te.placeholder((1, 2, 5, 5), "float32", name="X")
    w = mb.te.placeholder((2, 2, 3, 3), "float32", name="W")
    sch = Schedule(mb.te.create_prim_func([x, w, mb.te.ops.conv2d(x, w)]))
    with pytest.raises(NotEinsumError, match=r"MLC-S062") as err:
        sch.pad_einsum(sch.get_block("conv2d"), [1, 1, 4, 4, 1, 1, 1])
    _error(err, "is not an einsum", "vo0 + vr0")


def test_pad_after_split():
    sch = Schedule(parse(MM))
    C = sch.get_block("C")
    sch.split(sch.get_loops(C)[1], [None, 3])
    with pytest.raises(NotEinsumError) as err:
        sch.pad_einsum(C, [4, 4, 4])
    _error(err, "is bound to j_0 * 3 + j_1", "before split")


def test_pad_with_another_block_in_the_loops():
    sch = Schedule(mm_relu())
    Y = sch.get_block("Y")
    sch.reverse_compute_at(sch.get_block("C"), sch.get_loops(Y)[0])
    with pytest.raises(SharedLoopError) as err:
        sch.pad_einsum(Y, [1, 32, 1])
    _error(err, "block 'C' runs under the same loops")
