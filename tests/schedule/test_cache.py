"""cache_read and cache_write: expected programs, results, trace round trips, refusals."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import ArgumentTypeError, UnsupportedError
from mlcbook.schedule.errors_data import (BufferIndexError, ConsumerBlockError,
                                          NotSoleProducerError, SharedLoopError,
                                          StaleCacheError, StorageScopeError)

from ._util import assert_roundtrip, assert_same_result, mm_relu, parse


def _check(sch, f, expected_src):
    mb.tir.assert_structural_equal(sch.func, parse(expected_src))
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_cache_read_copies_the_input_before_its_reader():
    f = mm_relu()
    sch = Schedule(f)
    A_local = sch.cache_read(sch.get_block("Y"), 1, "local")
    assert A_local.name == "A_local"
    _check(sch, f, """
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        A_local = T.alloc_buffer((16, 16), "float32", scope="local")
        for ax0, ax1 in T.grid(16, 16):
            with T.block("A_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                A_local[v0, v1] = A[v0, v1]
        for i, j, k in T.grid(16, 16, 16):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A_local[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """)


def test_cache_read_by_name_is_the_same_step_as_by_index():
    f = mm_relu()
    a, b = Schedule(f), Schedule(f)
    a.cache_read(a.get_block("Y"), 1, "local")
    b.cache_read(b.get_block("Y"), "A", "local")
    mb.tir.assert_structural_equal(a.mod, b.mod)
    assert 'read_buffer_index="A"' in str(b.trace)


def test_cached_copy_moves_into_the_tile_with_compute_at():
    f = mm_relu()
    sch = Schedule(f)
    Y = sch.get_block("Y")
    A_local = sch.cache_read(Y, "A", "local")
    i, j, k = sch.get_loops(Y)
    sch.compute_at(A_local, i)
    _check(sch, f, """
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        A_local = T.alloc_buffer((16, 16), "float32", scope="local")
        for i in range(16):
            for ax0 in range(16):
                with T.block("A_local"):
                    v0, v1 = T.axis.remap("SS", [i, ax0])
                    A_local[v0, v1] = A[v0, v1]
            for j, k in T.grid(16, 16):
                with T.block("Y"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        Y[vi, vj] = T.float32(0)
                    Y[vi, vj] = Y[vi, vj] + A_local[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """)


TWO_READERS = """
@T.prim_func(num_outputs=2)
def two(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32"),
        C: T.Buffer((16,), "float32")):
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi + 4] * T.float32(2)
    for i in range(16):
        with T.block("C"):
            vi = T.axis.spatial(16, i)
            C[vi] = A[vi] + T.float32(1)
"""


def test_cache_read_copies_only_the_region_its_consumers_read():
    f = parse(TWO_READERS)
    sch = Schedule(f)
    sch.cache_read(sch.get_block("B"), 0, "shared", consumer_blocks=[sch.get_block("B")])
    _check(sch, f, """
    @T.prim_func(num_outputs=2)
    def two(A: T.Buffer((16,), "float32"), B: T.Buffer((8,), "float32"),
            C: T.Buffer((16,), "float32")):
        A_shared = T.alloc_buffer((16,), "float32", scope="shared")
        for ax0 in range(8):
            with T.block("A_shared"):
                v0 = T.axis.spatial(16, ax0 + 4)
                A_shared[v0] = A[v0]
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A_shared[vi + 4] * T.float32(2)
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = A[vi] + T.float32(1)
    """)


def test_cache_read_serves_every_reader_by_default():
    f = parse(TWO_READERS)
    sch = Schedule(f)
    sch.cache_read(sch.get_block("C"), 0, "shared")
    text = str(sch.func)
    assert "B[vi] = A_shared[vi + 4]" in text and "C[vi] = A_shared[vi]" in text
    assert "T.grid" not in text and "for ax0 in range(16)" in text
    assert_roundtrip(sch, f)
    assert_same_result(f, sch.func)


def test_cache_write_makes_a_local_accumulator():
    f = mm_relu()
    sch = Schedule(f)
    Y_local = sch.cache_write(sch.get_block("Y"), 0, "local")
    assert Y_local.name == "Y_local"
    _check(sch, f, """
    @T.prim_func
    def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
                C: T.Buffer((16, 16), "float32")):
        Y = T.alloc_buffer((16, 16), "float32")
        Y_local = T.alloc_buffer((16, 16), "float32", scope="local")
        for i, j, k in T.grid(16, 16, 16):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y_local[vi, vj] = T.float32(0)
                Y_local[vi, vj] = Y_local[vi, vj] + A[vi, vk] * B[vk, vj]
        for ax0, ax1 in T.grid(16, 16):
            with T.block("Y_local"):
                v0, v1 = T.axis.remap("SS", [ax0, ax1])
                Y[v0, v1] = Y_local[v0, v1]
        for i, j in T.grid(16, 16):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
    """)


def test_cache_write_of_an_output_then_reverse_compute_at_the_tile():
    f = parse("""
    @T.prim_func
    def mm(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
           C: T.Buffer((8, 8), "float32")):
        for i, j, k in T.grid(8, 8, 8):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
    """)
    sch = Schedule(f)
    C = sch.get_block("C")
    C_local = sch.cache_write(C, "C", "local")
    i, j, k = sch.get_loops(C)
    sch.reverse_compute_at(C_local, i)
    _check(sch, f, """
    @T.prim_func
    def mm(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32"),
           C: T.Buffer((8, 8), "float32")):
        C_local = T.alloc_buffer((8, 8), "float32", scope="local")
        for i in range(8):
            for j, k in T.grid(8, 8):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        C_local[vi, vj] = T.float32(0)
                    C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
            for ax0 in range(8):
                with T.block("C_local"):
                    v0, v1 = T.axis.remap("SS", [i, ax0])
                    C[v0, v1] = C_local[v0, v1]
    """)


def test_cache_names_do_not_collide():
    f = mm_relu()
    sch = Schedule(f)
    first = sch.cache_read(sch.get_block("Y"), "A", "local")
    second = sch.cache_read(sch.get_block("Y"), "A_local", "local")
    assert (first.name, second.name) == ("A_local", "A_local_local")
    assert_same_result(f, sch.func)


# --- refusals ------------------------------------------------------------------------------
def _error(exc_info, *words):
    msg = str(exc_info.value)
    for w in words:
        assert w in msg, msg
    assert "Instead:" in msg and "# <-- here" in msg, msg


def test_cache_read_index_out_of_range():
    sch = Schedule(mm_relu())
    with pytest.raises(BufferIndexError, match=r"MLC-S050") as err:
        sch.cache_read(sch.get_block("C"), 3, "local")
    _error(err, "block 'C' reads 1 buffer(s), so index 3 picks none", "0: Y")


def test_cache_write_unknown_buffer_name():
    sch = Schedule(mm_relu())
    with pytest.raises(BufferIndexError) as err:
        sch.cache_write(sch.get_block("C"), "Y", "local")
    _error(err, "does not write a buffer named 'Y'", "0: C")


def test_cache_read_index_of_the_wrong_type():
    sch = Schedule(mm_relu())
    with pytest.raises(ArgumentTypeError, match="int or a buffer name"):
        sch.cache_read(sch.get_block("C"), 0.5, "local")
    assert len(sch.trace) == 1  # only get_block was recorded


def test_unknown_storage_scope():
    sch = Schedule(mm_relu())
    with pytest.raises(StorageScopeError, match=r"MLC-S051") as err:
        sch.cache_read(sch.get_block("C"), 0, "register")
    _error(err, "unknown storage scope 'register'", "'local'")


def test_cache_read_of_a_buffer_the_block_also_writes():
    sch = Schedule(mm_relu())
    with pytest.raises(StaleCacheError, match=r"MLC-S053") as err:
        sch.cache_read(sch.get_block("Y"), "Y", "local")
    _error(err, "writes Y as well as reading it", "cache_write")


def test_cache_read_across_a_write_of_the_buffer():
    f = parse("""
    @T.prim_func
    def f(A: T.Buffer((8,), "float32"), D: T.Buffer((8,), "float32")):
        X = T.alloc_buffer((8,), "float32")
        for i in range(8):
            with T.block("X"):
                vi = T.axis.spatial(8, i)
                X[vi] = A[vi]
        for i in range(8):
            with T.block("R1"):
                vi = T.axis.spatial(8, i)
                D[vi] = X[vi]
        for i in range(8):
            with T.block("W"):
                vi = T.axis.spatial(8, i)
                X[vi] = A[vi] * T.float32(2)
        for i in range(8):
            with T.block("R2"):
                vi = T.axis.spatial(8, i)
                D[vi] = D[vi] + X[vi]
    """)
    sch = Schedule(f)
    with pytest.raises(StaleCacheError) as err:
        sch.cache_read(sch.get_block("R1"), "X", "local")
    _error(err, "block 'W' writes X while the readers of the cache", "would read values")
    # limited to the reader before the write, the cache is legal
    sch.cache_read(sch.get_block("R1"), "X", "local", consumer_blocks=[sch.get_block("R1")])
    assert_same_result(f, sch.func)


def test_cache_read_consumer_that_does_not_read_the_buffer():
    g = parse("""
    @T.prim_func
    def g(A: T.Buffer((16,), "float32"), D: T.Buffer((16,), "float32"),
          C: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("C"):
                vi = T.axis.spatial(16, i)
                C[vi] = A[vi] + T.float32(1)
        for i in range(16):
            with T.block("E"):
                vi = T.axis.spatial(16, i)
                C[vi] = C[vi] + D[vi]
    """)
    sch = Schedule(g)
    with pytest.raises(ConsumerBlockError, match=r"MLC-S054") as err:
        sch.cache_read(sch.get_block("C"), "A", "local", consumer_blocks=[sch.get_block("E")])
    _error(err, "block 'E' does not read A")


def test_cache_write_after_decompose_reduction_has_two_writers():
    sch = Schedule(mm_relu())
    Y = sch.get_block("Y")
    sch.decompose_reduction(Y, sch.get_loops(Y)[0])
    with pytest.raises(NotSoleProducerError, match=r"MLC-S052") as err:
        sch.cache_write(Y, 0, "local")
    _error(err, "block 'Y_init' also writes Y", "before decompose_reduction")


def test_cache_write_of_a_block_that_reads_old_values():
    sch = Schedule(parse("""
    @T.prim_func
    def acc(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("C"):
                vi = T.axis.spatial(8, i)
                C[vi] = C[vi] + A[vi]
    """))
    with pytest.raises(NotSoleProducerError) as err:
        sch.cache_write(sch.get_block("C"), 0, "local")
    _error(err, "reads C without an init", "would not hold")


def test_cache_write_with_a_reader_in_the_same_loops():
    sch = Schedule(mm_relu())
    Y = sch.get_block("Y")
    sch.reverse_compute_at(sch.get_block("C"), sch.get_loops(Y)[1])
    with pytest.raises(SharedLoopError, match=r"MLC-S065") as err:
        sch.cache_write(Y, 0, "local")
    _error(err, "block 'C' uses Y inside the same loops", "before moving blocks")


def test_cache_write_of_a_store_that_is_not_one_element_per_instance():
    sch = Schedule(parse("""
    @T.prim_func
    def f(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vj, vi] = A[vi, vj]
    """))
    sch.cache_write(sch.get_block("C"), 0, "local")  # a transposed store is still exact
    sch = Schedule(parse("""
    @T.prim_func
    def f(A: T.Buffer((8, 8), "float32"), C: T.Buffer((8, 8), "float32")):
        for i, j in T.grid(8, 8):
            with T.block("C"):
                vi, vj = T.axis.remap("SS", [i, j])
                C[vi, 7 - vj] = A[vi, vj]
    """))
    with pytest.raises(UnsupportedError) as err:
        sch.cache_write(sch.get_block("C"), 0, "local")
    _error(err, "one spatial iteration variable per dimension")
