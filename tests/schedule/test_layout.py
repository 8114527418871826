"""transform_layout: expected programs, results, the recorded map, refusals."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import ArgumentTypeError
from mlcbook.schedule.errors_data import (BufferIndexError, IndexMapError, NonBijectiveMapError,
                                          NotSoleProducerError)

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


def test_transform_an_intermediate_buffer_everywhere():
    f = mm_relu()
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("Y"), ("write", 0), lambda i, j: (j, i))
    _check(sch, f, """
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        for i, j, k in T.grid(16, 16, 16):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vj, vi] = T.float32(0)
                Y[vj, vi] = Y[vj, vi] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vj, vi], T.float32(0))
    """)


MM = """
@T.prim_func
def mm(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 16), "float32"),
       C: T.Buffer((8, 16), "float32")):
    for i, j, k in T.grid(8, 16, 16):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def test_pack_the_matmul_weight_into_panels():
    f = parse(MM)
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "B", lambda k, j: (j // 4, k, j % 4))
    _check(sch, f, """
    @T.prim_func
    def mm(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 16), "float32"),
           C: T.Buffer((8, 16), "float32")):
        B_packed = T.alloc_buffer((4, 16, 4), "float32")
        for ax0, ax1 in T.grid(16, 16):
            with T.block("B_packed"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                B_packed[v1 // 4, v0, v1 % 4] = B[v0, v1]
        for i, j, k in T.grid(8, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B_packed[vj // 4, vk, vj % 4]
    """)
    # the repack block is an ordinary block
    pack = sch.get_block("B_packed")
    sch.parallel(sch.get_loops(pack)[0])
    assert_same_result(f, sch.func)


def test_the_repack_runs_in_parallel_one_panel_per_iteration():
    # (jo * 4 + ji) // 4 is jo: different panels never share an element of B_packed
    f = parse(MM)
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "B", lambda k, j: (j // 4, k, j % 4))
    k, j = sch.get_loops(sch.get_block("B_packed"))
    jo, ji = sch.split(j, [None, 4])
    sch.reorder(jo, k, ji)
    sch.parallel(jo)
    assert_same_result(f, sch.func)


def test_relayout_an_output_computes_into_a_packed_copy():
    f = parse(MM)
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "C", lambda i, j: (i // 4, j, i % 4))
    _check(sch, f, """
    @T.prim_func
    def mm(A: T.Buffer((8, 16), "float32"), B: T.Buffer((16, 16), "float32"),
           C: T.Buffer((8, 16), "float32")):
        C_packed = T.alloc_buffer((2, 16, 4), "float32")
        for i, j, k in T.grid(8, 16, 16):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C_packed[vi // 4, vj, vi % 4] = T.float32(0)
                C_packed[vi // 4, vj, vi % 4] = C_packed[vi // 4, vj, vi % 4] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(8, 16):
            with T.block("C_packed"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                C[v0, v1] = C_packed[v0 // 4, v1, v0 % 4]
    """)


def test_nchw_to_nchw4c_on_a_padded_conv2d():
    x = mb.te.placeholder((1, 8, 5, 5), "float32", name="X")
    w = mb.te.placeholder((4, 8, 3, 3), "float32", name="W")
    f = mb.te.create_prim_func([x, w, mb.te.ops.conv2d(x, w, padding=1)])
    sch = Schedule(f)
    conv = sch.get_block("conv2d")
    nchwc = lambda n, c, h, w: (n, c // 4, h, w, c % 4)  # noqa: E731
    sch.transform_layout(conv, "conv2d_pad", nchwc)
    sch.transform_layout(sch.get_block("conv2d_pad"), "X", nchwc)
    pads = {b.name: b.shape for b in sch.func.root_block.alloc_buffers}
    assert pads == {"conv2d_pad": (1, 2, 7, 7, 4), "X_packed": (1, 2, 5, 5, 4)}
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_the_trace_records_the_map_as_text_that_replays():
    f = parse(MM)
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "B", lambda k, j: (j // 4, k, j % 4))
    assert 'index_map="lambda k, j: (j // 4, k, j % 4)"' in str(sch.trace)
    again = Schedule(f)
    again.transform_layout(again.get_block("C"), "B", "lambda k, j: (j // 4, k, j % 4)")
    mb.tir.assert_structural_equal(again.mod, sch.mod)


def test_a_one_to_one_map_with_holes_enlarges_the_buffer():
    f = mm_relu()
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "Y", lambda i, j: (i // 3, j, i % 3))
    Y = [b for b in sch.func.root_block.alloc_buffers if b.name == "Y"][0]
    assert Y.shape == (6, 16, 3)   # 18 rows for 16: two are never used
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_a_map_to_one_dimension_records_a_tuple():
    f = mm_relu()
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "Y", lambda i, j: i * 16 + j)
    assert 'index_map="lambda i, j: (i * 16 + j,)"' in str(sch.trace)
    assert "Y[vi * 16 + vj]" in str(sch.func)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


# --- refusals ------------------------------------------------------------------------------
def test_a_map_that_is_not_one_to_one():
    sch = Schedule(mm_relu())
    with pytest.raises(NonBijectiveMapError, match=r"MLC-S061") as err:
        sch.transform_layout(sch.get_block("C"), "Y", lambda i, j: (i + j, j // 2))
    _error(err, "sends both Y[", "to the same place", "one-to-one")


@pytest.mark.parametrize("index_map, words", [
    (lambda i: (i,), "takes 1 indices but Y has 2 dimensions"),
    (lambda i, j: (i - 1, j), "negative index"),
    (lambda i, j: (i * 0.5, j), "raised DTypeMismatchError"),
    ("lambda i, j: (abs(i), j)", "uses 'abs(i)'"),
    ("i, j", "not a lambda"),
    ("lambda i, j: (i, j", "not valid Python"),
    (lambda i, j: (i, "j"), "not an integer expression"),
])
def test_malformed_index_maps(index_map, words):
    sch = Schedule(mm_relu())
    with pytest.raises(IndexMapError, match=r"MLC-S060") as err:
        sch.transform_layout(sch.get_block("C"), "Y", index_map)
    _error(err, words)


def test_a_plain_int_does_not_say_read_or_write():
    sch = Schedule(mm_relu())
    with pytest.raises(BufferIndexError) as err:
        sch.transform_layout(sch.get_block("C"), 0, lambda i, j: (j, i))
    _error(err, '("read", 0)')


def test_an_index_map_of_the_wrong_type():
    sch = Schedule(mm_relu())
    with pytest.raises(ArgumentTypeError, match="must be a lambda"):
        sch.transform_layout(sch.get_block("C"), "Y", [1, 0])


def test_relayout_an_output_with_two_writers():
    f = parse(MM)
    sch = Schedule(f)
    C = sch.get_block("C")
    sch.decompose_reduction(C, sch.get_loops(C)[0])
    with pytest.raises(NotSoleProducerError) as err:
        sch.transform_layout(C, "C", lambda i, j: (j, i))
    _error(err, "also writes C")


def test_the_interpreter_agrees_with_numpy_after_packing():
    f = parse(MM)
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "B", lambda k, j: (j // 8, k, j % 8))
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((8, 16), "float32"), rng.standard_normal((16, 16), "float32")
    c = np.zeros((8, 16), "float32")
    mb.tir.interpret(sch.func, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_a_map_with_max_replays_from_its_text():
    f = mm_relu()
    sch = Schedule(f)
    sch.transform_layout(sch.get_block("C"), "Y", lambda i, j: (mb.tir.max(i, 0), j))
    assert 'index_map="lambda i, j: (T.max(i, 0), j)"' in str(sch.trace)
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)
