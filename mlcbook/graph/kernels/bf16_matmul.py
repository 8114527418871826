"""The bfloat16 matrix product on AVX-512 BF16: ``C = A @ B`` with ``A`` and ``B`` bfloat16
and ``C`` float32, register-tiled with ``vdpbf16ps`` (two bf16 x bf16 products added into
each float32 lane of a zmm), twice the terms per instruction of an fp32 FMA.

``B`` (K, N) is packed once, offline, in bf16 pairs: ``Bp[j // 16, k // 2, j % 16, k % 2]``
(:func:`pack_bf16`), so that one zmm load is a 16-column x 2-term weight tile and a row's
pair of ``A`` values is one 32-bit broadcast. The schedule (:func:`schedule_bf16_matmul`)
tensorizes the product with :func:`~mlcbook.tir.x86_intrinsics.bf16_tile`: a tile of rows x
column tiles of float32 sums held in registers over the whole reduction, sized by the same
rule as the int8 VNNI tile (:func:`bf16_register_tile`: the target's vector registers and
``vdpbf16ps``'s latency x throughput; 4 rows x 4 zmm on Zen 5), whole tiles then a smaller
one for the rows left over, so every ``M`` gets the kernel::

    from mlcbook.graph.kernels.bf16_matmul import (bf16_matmul, pack_bf16, pad_k,
                                                   schedule_bf16_matmul)
    a, bp = pad_k(a), pack_bf16(b)                  # a (M, K), b (K, N): float32 or bfloat16
    kernel = mb.build(schedule_bf16_matmul(bf16_matmul(m, bp.shape[0] * 16, a.shape[1])))
    kernel(a, bp, c)                                # c (M, N) float32 == a @ b, summed in fp32

A target without AVX-512 BF16 is a :class:`~mlcbook.errors.MissingFeatureError` from
:func:`schedule_bf16_matmul` naming the feature: there, a float32 product of the bfloat16
inputs widened as loaded is the bf16 matmul, never picked silently here.
"""

from __future__ import annotations

import numpy as np

from ...codegen.target import Target
from ...errors import MissingFeatureError, ScheduleError
from ...schedule import Schedule
from ...script import parse
from ...tir.function import PrimFunc
from ...tir.x86_intrinsics import BF16_VARIANTS, TILE_COLS, bf16_tile
from ...rules.int8 import dot_register_tile, row_chunk


def _up(n: int, m: int) -> int:
    return -(-n // m) * m


def _bf16(x) -> np.ndarray:
    """``x`` as a bfloat16 array (float values rounded to nearest even)."""
    import ml_dtypes
    return np.asarray(x).astype(ml_dtypes.bfloat16)


def pack_bf16(b) -> np.ndarray:
    """``b`` (K, N) -> ``Bp (ceil(N/16), ceil(K/2), 16, 2)`` bfloat16, zero padded: the
    layout of :func:`bf16_matmul`'s ``Bp`` (float inputs are rounded to bfloat16).

        >>> pack_bf16(np.ones((5, 3), np.float32)).shape
        (1, 3, 16, 2)
    """
    b = _bf16(b)
    k, n = b.shape
    bp = np.zeros((_up(k, 2), _up(n, TILE_COLS)), b.dtype)
    bp[:k, :n] = b
    kb, nb = bp.shape[0] // 2, bp.shape[1] // TILE_COLS
    return np.ascontiguousarray(bp.reshape(kb, 2, nb, TILE_COLS).transpose(2, 0, 3, 1))


def pad_k(a) -> np.ndarray:
    """``a`` (M, K) as bfloat16 with a zero column added when ``K`` is odd: the packed
    weights hold K in pairs, and a zero term adds nothing.

        >>> pad_k(np.ones((2, 5), np.float32)).shape
        (2, 6)
    """
    a = _bf16(a)
    return np.pad(a, ((0, 0), (0, a.shape[1] % 2))) if a.shape[1] % 2 else a


def bf16_matmul(m: int, n: int, k: int) -> PrimFunc:
    """The PrimFunc ``(A (m, k) bfloat16, Bp (n // 16, k // 2, 16, 2) bfloat16, C (m, n)
    float32)``: ``C[i, j] = sum_k f32(A[i, k]) * f32(B[k, j])`` with ``Bp`` from
    :func:`pack_bf16`; ``n`` must be a multiple of 16 and ``k`` even (:func:`pad_k`)."""
    if n % TILE_COLS or k % 2:
        raise ScheduleError(f"bf16_matmul: n={n} must be a multiple of {TILE_COLS} and k={k} "
                            "even. Instead: pad the matrices (pack_bf16 pads B, pad_k pads "
                            "A's columns; slice the extra columns off C)")
    nb, kb = n // TILE_COLS, k // 2
    return parse(f"""
@T.prim_func
def bf16_matmul(A: T.Buffer(({m}, {k}), "bfloat16"),
                Bp: T.Buffer(({nb}, {kb}, {TILE_COLS}, 2), "bfloat16"),
                C: T.Buffer(({m}, {n}), "float32")):
    for i, jo, ji, ko, ki in T.grid({m}, {nb}, {TILE_COLS}, {kb}, 2):
        with T.block("C"):
            vi, vjo, vji, vko, vki = T.axis.remap("SSSRR", [i, jo, ji, ko, ki])
            with T.init():
                C[vi, vjo * {TILE_COLS} + vji] = T.float32(0)
            C[vi, vjo * {TILE_COLS} + vji] = C[vi, vjo * {TILE_COLS} + vji] + T.Cast(
                "float32", A[vi, vko * 2 + vki]) * T.Cast("float32", Bp[vjo, vko, vji, vki])
""")


def bf16_variant(target=None) -> str | None:
    """The :func:`~mlcbook.tir.x86_intrinsics.bf16_tile` variant of ``target``: ``vdpbf16ps``
    on the widest registers its machine model has it for, else None.

        >>> bf16_variant("llvm -mcpu=znver5"), bf16_variant("llvm -mcpu=x86-64-v3")
        ('vdpbf16ps512', None)
    """
    dot = Target(target or "llvm").machine.dot_product("bf16")
    name = None if dot is None else f"{dot.instruction}{dot.bits}"
    return name if name in BF16_VARIANTS else None


def bf16_register_tile(target=None, blocks: int = 64, most_rows: int = 16) -> tuple[int, int]:
    """``(rows, column tiles of 16)`` of the bf16 register tile for ``target``: the int8
    VNNI tile's rule (:func:`~mlcbook.tir.x86_intrinsics.register_tile`) with the float32
    lanes of ``vdpbf16ps`` and the sums it needs in flight, its latency x how many start
    per cycle (``Target.machine.dot_product("bf16")``: 6 x 2 = 12 on Zen 5).

        >>> bf16_register_tile("llvm -mcpu=znver5")       # 16 zmm of sums
        (4, 4)
        >>> bf16_register_tile("llvm -mcpu=znver5", blocks=1)
        (8, 1)
    """
    return dot_register_tile(target, "bf16", blocks, most_rows)


def schedule_bf16_matmul(func: PrimFunc, target=None, parallel_work: int = 1 << 20
                         ) -> PrimFunc:
    """Tensorize :func:`bf16_matmul`'s product with a ``vdpbf16ps`` register tile for
    ``target`` (default: this machine): loops ``(i, jo, ji, ko, ki)`` ->
    ``(jo_o, i_o, [i_i, jo_i, ji, ko, ki])``, the bracket one
    :func:`~mlcbook.tir.x86_intrinsics.bf16_tile` call summing all of K in registers; its
    column tiles divide ``jo``, its rows come from
    :func:`~mlcbook.rules.int8.row_chunk` (whole register tiles, then a smaller one
    for the rest). Rows run inside each group of column tiles, which keeps that group's
    weights in cache for all of them; the two outer loops run in parallel when the product
    has at least ``parallel_work`` terms. A :class:`~mlcbook.errors.MissingFeatureError`
    if ``target`` has no AVX-512 BF16."""
    t = Target(target or "llvm")
    variant = bf16_variant(t)
    if variant is None:
        raise MissingFeatureError(
            f"the bf16 matmul {func.name!r} needs AVX-512 BF16 (the CPU feature avx512bf16, "
            f"for vdpbf16ps), which target {t} does not have. Instead: compute the product in "
            "float32 from the bfloat16 inputs (a te.compute that casts them, under the default "
            "schedule), or target a CPU that has it (e.g. 'llvm -mcpu=znver4' or "
            "'llvm -mcpu=sapphirerapids') to read the assembly")
    sch = Schedule(func)
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("C"))
    m, nb, kb = (sch.get(lp).extent.value for lp in (i, jo, ko))
    tile = bf16_register_tile(t, nb, m)
    io, ii = sch.split(i, [None, row_chunk(m, tile[0])])
    jo_o, jo_i = sch.split(jo, [None, tile[1]])
    sch.reorder(jo_o, io, ii, jo_i, ji, ko, ki)
    sch.tensorize(ii, bf16_tile(sch.get(ii).extent.value, kb, tile[1], tile, variant).name)
    if m * nb * TILE_COLS * kb * 2 >= parallel_work:
        sch.parallel(sch.fuse(jo_o, io))
    return sch.func


__all__ = ["bf16_matmul", "pack_bf16", "pad_k", "bf16_variant", "bf16_register_tile",
           "schedule_bf16_matmul"]
