import pytest

from mlcbook.errors import (BindingMismatchError, DuplicateNameError, IndexOutOfBoundsError,
                            ReadOnlyStoreError, UndefinedVariableError)
from mlcbook.tir import (Block, BlockRealize, Buffer, BufferRegion, BufferStore, For, IterVar,
                         PrimFunc, SeqStmt, Var, root_block_realize, verify)

from ._programs import matmul


def _copy_func(bind=lambda i: i, extent=8, store_index=lambda vi: vi, loop_extent=8,
               target="B"):
    """B[vi] = A[vi] for vi bound to bind(i), i in range(loop_extent)."""
    A, B = Buffer("A", (8,)), Buffer("B", (8,))
    dst = {"A": A, "B": B}[target]
    i, vi = Var("i"), Var("vi")
    block = Block("copy", (IterVar(vi, extent),), (BufferRegion.point(A, (vi,)),),
                  (BufferRegion.point(dst, (vi,)),),
                  BufferStore(dst, A[vi], (store_index(vi),)))
    body = For(i, loop_extent, BlockRealize((bind(i),), True, block))
    return PrimFunc("copy", (A, B), root_block_realize(body))


def test_well_formed_programs_pass():
    verify(matmul())
    verify(_copy_func())


def test_undefined_variable():
    A = Buffer("A", (8,))
    k = Var("k")
    f = PrimFunc("f", (A,), For(Var("i"), 8, BufferStore(A, 0.0, (k,))))
    with pytest.raises(UndefinedVariableError, match="MLC-T001.*'k'.*never defined"):
        verify(f)


def test_block_cannot_see_outer_loop_variables():
    A, B = Buffer("A", (8,)), Buffer("B", (8,))
    i, vi = Var("i"), Var("vi")
    block = Block("copy", (IterVar(vi, 8),), (), (BufferRegion.point(B, (vi,)),),
                  BufferStore(B, A[i], (vi,)))
    f = PrimFunc("f", (A, B), root_block_realize(For(i, 8, BlockRealize((i,), True, block))))
    with pytest.raises(UndefinedVariableError, match="'i'.*block 'copy'.*own iteration variables"):
        verify(f)


def test_binding_outside_domain():
    with pytest.raises(BindingMismatchError, match=r"MLC-T002.*domain \[0, 8\).*i \+ 1.*\[1, 8\]"):
        verify(_copy_func(bind=lambda i: i + 1))


def test_store_to_input_parameter():
    with pytest.raises(ReadOnlyStoreError, match="MLC-T003.*'A', an input parameter"):
        verify(_copy_func(target="A"))


def test_index_out_of_bounds_in_block():
    with pytest.raises(IndexOutOfBoundsError, match=r"MLC-T005.*B\[\(?vi \+ 1\)?\].*\[1, 8\].*size 8"):
        verify(_copy_func(store_index=lambda vi: vi + 1))


def test_constant_index_out_of_bounds():
    A = Buffer("A", (8,))
    f = PrimFunc("f", (A,), BufferStore(A, 0.0, (8,)))
    with pytest.raises(IndexOutOfBoundsError, match="size 8"):
        verify(f)


def test_undefined_buffer():
    A, T = Buffer("A", (8,)), Buffer("T", (8,))
    f = PrimFunc("f", (A,), BufferStore(A, T[0], (0,)))
    with pytest.raises(UndefinedVariableError, match="buffer 'T'.*alloc_buffer"):
        verify(f)


def test_duplicate_block_names():
    f = matmul()
    body = f.body.block.body
    g = PrimFunc("g", f.params, root_block_realize(SeqStmt((body, body))))
    with pytest.raises(DuplicateNameError):
        verify(g)
