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

The register-tiled int8 kernels of the quantized models come in a family made on demand by
:func:`u8i8_tile` (``rows`` x 16 int32 sums held in ymm registers over ``depth`` groups of 4
terms, ``C[i, 0, j] += i32(A[i, 4d + k]) * i32(B[d, j, k])``; B is the packed weight tile),
each in two variants that compute the same ``desc`` with different instructions:

- ``pmaddubsw``: ``vpmaddubsw`` adds two u8 x s8 products in int16 *with saturation*, then
  ``vpmaddwd`` by ones widens the pair sums to int32. Exact only when every pair of weights
  it adds (``B[d, j, 0:2]`` and ``B[d, j, 2:4]``) has ``|w0| + |w1| <= 128`` (then
  ``255 * 128 = 32640`` fits in int16), which :func:`pairs_fit_int16` checks; all weights
  in ``[-64, 64]`` (onnxruntime's ``reduce_range``) always pass. The compiler uses it only
  for constant weights that pass that check.
- ``pmaddwd``: exact for all int8 weights. The weights are sign-extended to int16 and each
  row's 4 activations zero-extended and broadcast; ``vpmaddwd`` gives one int32 per
  (column, pair of terms), kept as pairs in registers over the depth and added into
  columns once at the end. On Zen 3 it ran a 1024^3 product at about half the speed of
  ``pmaddubsw`` (and above mlcbook's fp32 matmul): ``bench/int8.py`` has the figures.

Their names say which ran, e.g. ``x86.avx2.u8i8_pmaddubsw_4x16x16`` (4 rows, 16 columns,
16 terms deep); the tensorized block carries it as its ``tensor_intrin`` annotation.

    >>> mb.tir.TensorIntrin.available(mb.Target("llvm -mcpu=znver3"))   # before any u8i8_tile
    ['x86.avx2.dot_u8i8_8x4', 'x86.avx2.fma_f32_4x16']

A BF16 dot product (``vdpbf16ps``) is not among them: bfloat16 is a loop-IR dtype, but no
intrinsic describes that instruction yet.
"""

from __future__ import annotations

import re

import numpy as np

from .expr import Buffer, Const, TensorCall, Var, cast
from .function import PrimFunc, root_block_realize
from .stmt import Block, BlockRealize, BufferRegion, BufferStore, Evaluate, For, IterVar
from ..errors import TIRError
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


#: the variants of :func:`u8i8_tile` -> the most rows one kernel holds in 16 ymm registers
#: (pmaddubsw: rows x 2 accumulators + 2 weight vectors; pmaddwd keeps each row's sums as
#: pairs, rows x 4 accumulators + 4 widened weight vectors)
TILE_VARIANTS = {"pmaddubsw": 4, "pmaddwd": 2}
#: columns of one tile: the 16 lanes of a packed weight tile, two ymm of 8 int32
TILE_COLS = 16
_TILE_OP = re.compile(r"x86\.u8i8_tile\.(\w+)\.(\d+)x16x(\d+)$")


def tile_op(variant: str, rows: int, depth: int) -> str:
    """The tensor-call op of a :func:`u8i8_tile` kernel (``depth`` counts groups of 4)."""
    return f"x86.u8i8_tile.{variant}.{rows}x16x{depth}"


def parse_tile_op(op: str) -> tuple[str, int, int] | None:
    """``(variant, rows, depth)`` of a :func:`tile_op` name, None for other ops."""
    m = _TILE_OP.match(op)
    if m is None or m.group(1) not in TILE_VARIANTS:
        return None
    return m.group(1), int(m.group(2)), int(m.group(3))


def u8i8_tile(variant: str, rows: int, depth: int) -> TensorIntrin:
    """The register-tiled AVX2 kernel ``C[i, 0, j] += i32(A[i, 4d + k]) * i32(B[d, j, k])``
    for ``i < rows, j < 16, d < depth, k < 4``, registered on first use; ``variant`` is
    ``"pmaddubsw"`` (exact only if :func:`pairs_fit_int16` holds for the weights) or
    ``"pmaddwd"`` (always exact).

        >>> u8i8_tile("pmaddwd", 2, 4).name
        'x86.avx2.u8i8_pmaddwd_2x16x16'
    """
    if variant not in TILE_VARIANTS:
        raise TIRError(f"no int8 tile variant {variant!r}; Instead: use one of "
                       f"{', '.join(TILE_VARIANTS)}")
    if not 1 <= rows <= TILE_VARIANTS[variant] or depth < 1:
        raise TIRError(f"the {variant} int8 tile holds 1 to {TILE_VARIANTS[variant]} rows "
                       f"and a depth of at least 1 group of 4 terms, not rows={rows}, "
                       f"depth={depth}. Instead: split the rows and the reduction into such "
                       "tiles")
    name = f"x86.avx2.u8i8_{variant}_{rows}x{TILE_COLS}x{4 * depth}"
    if name in TensorIntrin.names():
        return TensorIntrin.get(name)

    def params():
        return (Buffer("A", (rows, 4 * depth), "uint8"),
                Buffer("B", (depth, TILE_COLS, 4), "int8"),
                Buffer("C", (rows, 1, TILE_COLS), "int32"))

    A, B, C = ps = params()
    desc = _desc(name + "_desc", ps, (rows, TILE_COLS, depth, 4), "SSRR",
                 lambda i, j, d, k: BufferStore(C, C[i, 0, j] + cast(
                     "int32", A[i, d * 4 + k]) * cast("int32", B[d, j, k]), (i, Const(0, "int32"), j)))
    impl = _impl(name + "_impl", tile_op(variant, rows, depth), params())
    return TensorIntrin.register(name, desc, impl, ("avx2",))


def pairs_fit_int16(wp: np.ndarray) -> bool:
    """Whether ``vpmaddubsw`` sums weights ``wp`` exactly: in each packed group of 4 (the
    last axis), ``|w0| + |w1|`` and ``|w2| + |w3|`` are at most 128, so that a pair of
    products with uint8 activations (at most ``255 * 128 = 32640``) never saturates int16.

        >>> pairs_fit_int16(np.full((1, 1, 16, 4), 64, np.int8))
        True
        >>> pairs_fit_int16(np.array([[[[127, -128, 0, 0]]]], np.int8))
        False
    """
    w = np.abs(np.asarray(wp, np.int32))
    if w.shape[-1] != 4:
        raise TIRError(f"pairs_fit_int16 takes packed weights (..., 4), got shape {w.shape}; "
                       "Instead: pack them with pack_int8 first")
    return bool((w[..., 0::2] + w[..., 1::2] <= 128).all())


def best_dot_u8i8(target) -> TensorIntrin | None:
    """The fastest u8 x i8 dot-product intrinsic ``target`` can run (None if none)."""
    for t in (DOT_VNNI, DOT_AVX2):
        if not t.missing_features(target):
            return t
    return None


__all__ = ["FMA_KERNELS", "DOT_AVX2", "DOT_VNNI", "FMA_AVX2", "FMA_AVX512", "best_dot_u8i8",
           "TILE_VARIANTS", "TILE_COLS", "tile_op", "parse_tile_op", "u8i8_tile",
           "pairs_fit_int16"]
