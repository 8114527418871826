"""tir.analysis: free variables, buffers used, blocks and loop ranges of a program."""

from mlcbook.tir import Block, BlockRealize, Buffer, BufferStore, For, Var, const, seq
from mlcbook.tir.analysis import buffers_read, buffers_written, collect_blocks, loop_ranges

from ._programs import matmul


def test_buffers_are_listed_once_in_order_of_first_use():
    A, B, C = Buffer("A", (8,)), Buffer("B", (8,)), Buffer("C", (8,))
    i = Var("i")
    body = seq(BufferStore(C, A[i] + B[i], (i,)), BufferStore(A, C[i] + A[i], (i,)))
    assert buffers_read(body) == [A, B, C]
    assert buffers_written(body) == [C, A]


def test_loop_ranges_hold_constant_loops_and_block_iteration_variables():
    func = matmul(4, 5, 6)
    ranges = loop_ranges(func.body)
    assert sorted((v.name, r) for v, r in ranges.items()) == [
        ("i", (0, 3)), ("j", (0, 4)), ("k", (0, 5)), ("vi", (0, 3)), ("vj", (0, 4)),
        ("vk", (0, 5))]


def test_loop_ranges_leave_out_symbolic_extents():
    n, i, j = Var("n"), Var("i"), Var("j")
    A = Buffer("A", (8,))
    body = For(i, n, For(j, 8, BufferStore(A, const(0.0, "float32"), (j,))))
    assert loop_ranges(body) == {j: (0, 7)}


def _block(name, body, init=None):
    return BlockRealize((), True, Block(name, (), (), (), body, init))


def test_collect_blocks_lists_an_init_before_the_body_it_precedes():
    A = Buffer("A", (1,))
    store = BufferStore(A, const(0.0, "float32"), (0,))
    outer = _block("outer", _block("update", store), init=_block("init", store))
    assert [b.block.name for b in collect_blocks(outer)] == ["outer", "init", "update"]


def test_collect_blocks_includes_the_root():
    names = [b.block.name for b in collect_blocks(matmul().body)]
    assert names == ["root", "C"]
