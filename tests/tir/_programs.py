"""Small programs built with the IR constructors, shared by the loop-IR tests."""

from mlcbook.tir import (Block, BlockRealize, Buffer, BufferRegion, BufferStore, For, IterVar,
                         PrimFunc, Var, const, root_block_realize)


def matmul(n=16, m=16, k=16, name="C"):
    """C = A @ B as one block with an init, inside i, j, k loops."""
    A, B, C = Buffer("A", (n, k)), Buffer("B", (k, m)), Buffer("C", (n, m))
    i, j, kk = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    block = Block(
        name, (IterVar(vi, n), IterVar(vj, m), IterVar(vk, k, "reduce")),
        (BufferRegion.point(A, (vi, vk)), BufferRegion.point(B, (vk, vj))),
        (BufferRegion.point(C, (vi, vj)),),
        BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
        init=BufferStore(C, const(0.0, "float32"), (vi, vj)))
    body = For(i, n, For(j, m, For(kk, k, BlockRealize((i, j, kk), True, block))))
    return PrimFunc("matmul", (A, B, C), root_block_realize(body))
