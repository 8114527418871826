"""The built-in x86 tensor intrinsics, registered with :class:`mlcbook.tir.TensorIntrin`
(``desc`` and ``impl`` here; :mod:`mlcbook.codegen.tensor_calls` emits the instructions
behind each ``impl`` call).

=========================  =========================================  =====================
name                       desc                                       needs
=========================  =========================================  =====================
``x86.avx2.dot_u8i8_8x4``  ``C[i] += i32(A[k]) * i32(B[i, k])``,      avx2 (widening
                           i < 8, k < 4; A uint8, B int8, C int32     multiply and add)
``x86.vnni.dot_u8i8_16x4`` the same with i < 16                       avx512vnni
                                                                      (one ``vpdpbusd``)
``x86.avx2.fma_f32_4x16``  ``C[i, j] += A[i, k] * B[k, j]``, a 4 x 16  avx2, fma
                           float32 register tile, k < 4
``x86.avx512.fma_f32_4x32`` the same over a 4 x 32 tile               avx512f
=========================  =========================================  =====================

    >>> mb.tir.TensorIntrin.available(mb.Target("llvm -mcpu=znver3"))
    ['x86.avx2.dot_u8i8_8x4', 'x86.avx2.fma_f32_4x16']

A BF16 dot product (``vdpbf16ps``) is not among them: bfloat16 is a loop-IR dtype, but no
intrinsic describes that instruction yet.
"""

from __future__ import annotations

from .expr import Buffer, Const, TensorCall, Var, cast
from .function import PrimFunc, root_block_realize
from .stmt import Block, BlockRealize, BufferRegion, BufferStore, Evaluate, For, IterVar
from .tensor_intrin import TensorIntrin

#: the fp32 micro-kernel calls (code in :mod:`mlcbook.codegen.tensor_calls`):
#: op name -> (vector lanes, rows, cols, depth, CPU features)
FMA_KERNELS = {"x86.fma_f32.4x16x4": (8, 4, 16, 4, ("avx2", "fma")),
               "x86.fma_f32.4x32x4": (16, 4, 32, 4, ("avx512f",))}


def _desc(name: str, params, extents, kinds: str, value) -> PrimFunc:
    """One loop per iteration variable around a block ``out[...] = value(vars)``."""
    loops = [Var(f"l{k}") for k in range(len(extents))]
    ivs = [IterVar(Var(f"v{k}"), n, "spatial" if c == "S" else "reduce")
           for k, (n, c) in enumerate(zip(extents, kinds))]
    store = value(*(iv.var for iv in ivs))
    reads = tuple(BufferRegion.full(p) for p in params)
    block = Block("update", tuple(ivs), reads, (BufferRegion.full(params[-1]),), store)
    body = BlockRealize(tuple(loops), Const(True, "bool"), block)
    for lp, n in reversed(list(zip(loops, extents))):
        body = For(lp, n, body)
    return PrimFunc(name, tuple(params), root_block_realize(body), num_outputs=1)


def _impl(name: str, op: str, params) -> PrimFunc:
    call = TensorCall(op, tuple(p[tuple(0 for _ in p.shape)] for p in params))
    return PrimFunc(name, tuple(params), Evaluate(call), num_outputs=1)


def _dot(name: str, lanes: int, op: str, features) -> TensorIntrin:
    def params():
        return (Buffer("A", (4,), "uint8"), Buffer("B", (lanes, 4), "int8"),
                Buffer("C", (lanes,), "int32"))

    A, B, C = ps = params()
    desc = _desc(name + "_desc", ps, (lanes, 4), "SR", lambda i, k: BufferStore(
        C, C[i] + cast("int32", A[k]) * cast("int32", B[i, k]), (i,)))
    return TensorIntrin.register(name, desc, _impl(name + "_impl", op, params()), features)


def _fma(name: str, op: str) -> TensorIntrin:
    lanes, rows, cols, depth, features = FMA_KERNELS[op]

    def params():
        return (Buffer("A", (rows, depth), "float32"), Buffer("B", (depth, cols), "float32"),
                Buffer("C", (rows, cols), "float32"))

    A, B, C = ps = params()
    desc = _desc(name + "_desc", ps, (rows, cols, depth), "SSR", lambda i, j, k: BufferStore(
        C, C[i, j] + A[i, k] * B[k, j], (i, j)))
    return TensorIntrin.register(name, desc, _impl(name + "_impl", op, params()), features)


DOT_AVX2 = _dot("x86.avx2.dot_u8i8_8x4", 8, "x86.dot_u8i8.8x4", ("avx2",))
DOT_VNNI = _dot("x86.vnni.dot_u8i8_16x4", 16, "x86.vpdpbusd.16x4", ("avx512vnni", "avx512f"))
FMA_AVX2 = _fma("x86.avx2.fma_f32_4x16", "x86.fma_f32.4x16x4")
FMA_AVX512 = _fma("x86.avx512.fma_f32_4x32", "x86.fma_f32.4x32x4")


def best_dot_u8i8(target) -> TensorIntrin | None:
    """The fastest u8 x i8 dot-product intrinsic ``target`` can run (None if none)."""
    for t in (DOT_VNNI, DOT_AVX2):
        if not t.missing_features(target):
            return t
    return None


__all__ = ["FMA_KERNELS", "DOT_AVX2", "DOT_VNNI", "FMA_AVX2", "FMA_AVX512", "best_dot_u8i8"]
