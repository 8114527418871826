"""The built-in x86 (and 64-bit Arm int8) tensor intrinsics, registered with
:class:`mlcbook.tir.TensorIntrin` (``desc`` and ``impl`` here;
:mod:`mlcbook.codegen.tensor_calls` emits the instructions behind each ``impl`` call).

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
:func:`u8i8_tile`: ``C[i, b, j] += i32(A[i, 4d + k]) * i32(B[b, d, j, k])`` over ``rows``
x ``blocks`` packed weight tiles of 16 columns x ``depth`` groups of 4 terms, the int32 sums
held in registers. With VNNI, one variant per register width:

- ``vpdpbusd512`` (AVX-512 VNNI) and ``vpdpbusd256`` (AVX-VNNI: the VEX form on ymm, for
  CPUs without AVX-512): ``vpdpbusd`` adds four exact u8 x s8 products into each int32
  lane. A register tile of :func:`register_tile` (sized from the register file and the
  instruction's latency x throughput; 4 rows x 4 zmm on AVX-512) covers the call's rows
  and columns, a loop over whole tiles, then a smaller tile for the rows left over; each
  sums the whole depth in registers, broadcasting a row's 4 activations once per group
  and using them against every weight vector of the group.

On 64-bit Arm with the dotprod feature, the same register-tiled kernel with ``sdot`` (on
128-bit registers of 4 int32 lanes, 4 registers per column tile), which multiplies int8
by int8: each activation's top bit is flipped on its way in (the uint8 ``a`` read as the
int8 ``a - 128``), and the kernel adds back ``128 x`` each column's sum of weights, summed
by one more ``sdot`` per weight vector against a vector of ones. Its names start with
``aarch64.``: ``aarch64.dotprod.u8i8_sdot_7x16x64_4x16``.

With AVX2 only (``blocks`` 1: ``C[i, 0, j]``, ``B[d, j, k]``), two variants that compute
the same with different instructions:

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
16 terms deep) or ``x86.avx512vnni.u8i8_vpdpbusd512_50x64x1024_4x64`` (50 rows, 64
columns, 1024 terms, register tiles of 4 rows x 64 columns); the tensorized block carries
it as its ``tensor_intrin`` annotation.

    >>> mb.tir.TensorIntrin.available(mb.Target("llvm -mcpu=znver3"))   # before any u8i8_tile
    ['x86.avx2.dot_u8i8_8x4', 'x86.avx2.fma_f32_4x16']

The bfloat16 analogue, :func:`bf16_tile`: ``C[i, 16b + j] += f32(A[i, 2d + k]) *
f32(B[b, d, j, k])`` with ``k < 2`` (weights packed as bf16 pairs, C the float32 (rows, 16
x blocks) product itself), the float32 sums in registers. Its one variant,
``vdpbf16ps512`` (AVX-512 BF16), adds two bf16 x bf16 products into each float32 lane of a
zmm; a row's pair is broadcast as one 32-bit value. The same :func:`register_tile` sizes
it (from ``vdpbf16ps``'s latency x throughput: 4 rows x 4 zmm on Zen 5), the same code
covers the rows left over. The instruction flushes denormals and adds the pair's odd
product first, so a sum differs from ``desc``'s by float32 rounding only (the products of
two bf16 values are exact in float32).

    >>> bf16_tile(7, 128, 4, (4, 4)).name
    'x86.avx512bf16.bf16_vdpbf16ps512_7x64x256_4x64'
"""

from __future__ import annotations

import re
from typing import NamedTuple

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


#: the AVX2 variants of :func:`u8i8_tile` -> the most rows one kernel holds in 16 ymm
#: registers (pmaddubsw: rows x 2 accumulators + 2 weight vectors; pmaddwd keeps each row's
#: sums as pairs, rows x 4 accumulators + 4 widened weight vectors)
TILE_VARIANTS = {"pmaddubsw": 4, "pmaddwd": 2}
#: the VNNI variants -> (register bits, CPU features): one ``vpdpbusd`` adds four u8 x s8
#: products into each int32 lane of a zmm (AVX-512 VNNI) or, on CPUs with AVX-VNNI but no
#: AVX-512, of a ymm (the instruction's VEX form)
VNNI_VARIANTS = {"vpdpbusd512": (512, ("avx512vnni", "avx512f")),
                 "vpdpbusd256": (256, ("avxvnni",))}
#: the 64-bit Arm variants -> (register bits, CPU features): ``sdot`` adds four s8 x s8
#: products into each int32 lane of a 128-bit register (its u8 x s8 use: see the module
#: docstring)
ARM_VARIANTS = {"sdot": (128, ("dotprod",))}
#: the bfloat16 variants of :func:`bf16_tile` -> (register bits, CPU features): one
#: ``vdpbf16ps`` adds two bf16 x bf16 products into each float32 lane of a zmm
BF16_VARIANTS = {"vdpbf16ps512": (512, ("avx512bf16", "avx512f"))}
#: columns of one packed weight tile: 16 int32 (or float32) sums, one zmm or two ymm
TILE_COLS = 16
_TILE_OP = re.compile(r"(x86|aarch64)\.(u8i8|bf16)_tile\.(\w+)\.(\d+)x(\d+)x(\d+)"
                      r"(?:\.(\d+)x(\d+))?$")


def tile_arch(variant: str) -> str:
    """The architecture prefix of a tile variant's names: ``"aarch64"`` for
    :data:`ARM_VARIANTS`, else ``"x86"``."""
    return "aarch64" if variant in ARM_VARIANTS else "x86"


class TileOp(NamedTuple):
    """What a :func:`tile_op` name says: the call's ``rows`` x ``blocks`` packed column tiles
    x ``depth`` groups of terms (4 uint8 or 2 bfloat16), and for VNNI and BF16 the register
    tile (``tile_rows`` x ``tile_blocks``) the code covers them with."""

    variant: str
    rows: int
    depth: int
    blocks: int = 1
    tile_rows: int = 0
    tile_blocks: int = 1


def tile_op(variant: str, rows: int, depth: int, blocks: int = 1, tile=None) -> str:
    """The tensor-call op of a :func:`u8i8_tile` or :func:`bf16_tile` kernel (``depth``
    counts groups of 4 uint8 or 2 bfloat16 terms).

        >>> tile_op("vpdpbusd512", 50, 256, 4, (4, 4))
        'x86.u8i8_tile.vpdpbusd512.50x64x256.4x64'
        >>> tile_op("vdpbf16ps512", 50, 512, 4, (4, 4))
        'x86.bf16_tile.vdpbf16ps512.50x64x512.4x64'
        >>> tile_op("sdot", 7, 16, 1, (4, 1))
        'aarch64.u8i8_tile.sdot.7x16x16.4x16'
    """
    if variant in TILE_VARIANTS:
        return f"x86.u8i8_tile.{variant}.{rows}x{TILE_COLS}x{depth}"
    r, b = tile
    kind = "bf16" if variant in BF16_VARIANTS else "u8i8"
    return (f"{tile_arch(variant)}.{kind}_tile.{variant}.{rows}x{TILE_COLS * blocks}x{depth}."
            f"{r}x{TILE_COLS * b}")


def parse_tile_op(op: str) -> TileOp | None:
    """The :class:`TileOp` of a :func:`tile_op` name, None for other ops."""
    m = _TILE_OP.match(op)
    family = BF16_VARIANTS if m is not None and m.group(2) == "bf16" else \
        {**TILE_VARIANTS, **VNNI_VARIANTS, **ARM_VARIANTS}
    if m is None or m.group(3) not in family or m.group(1) != tile_arch(m.group(3)):
        return None
    variant, rows, cols, depth = m.group(3), int(m.group(4)), int(m.group(5)), int(m.group(6))
    if (m.group(7) is None) != (variant in TILE_VARIANTS) or cols % TILE_COLS:
        return None
    if variant in TILE_VARIANTS:
        return TileOp(variant, rows, depth) if cols == TILE_COLS else None
    return TileOp(variant, rows, depth, cols // TILE_COLS, int(m.group(7)),
                  int(m.group(8)) // TILE_COLS)


def tile_features(variant: str) -> tuple[str, ...]:
    """The CPU features a :func:`u8i8_tile` or :func:`bf16_tile` variant's instructions
    need."""
    wide = {**VNNI_VARIANTS, **BF16_VARIANTS, **ARM_VARIANTS}
    return wide[variant][1] if variant in wide else ("avx2",)


def register_tile(registers: int, lanes: int, chains: int, blocks: int,
                  most_rows: int = 16, column_sums: bool = False) -> tuple[int, int]:
    """``(rows, column tiles)`` of the VNNI (or BF16) register tile for a target with
    ``registers`` vector registers of ``lanes`` 32-bit sums, whose dot instruction needs
    ``chains`` independent sums in flight (its latency x how many start per cycle), over
    ``blocks`` packed column tiles of 16. Each (row, column tile) takes ``16 // lanes``
    accumulators, and the tile must fit beside its weight vectors and one broadcast per row
    (what LLVM keeps live when it hoists the broadcasts; then it need not spill). Among the
    tiles that fit: enough accumulators for ``chains`` (else as many as fit), then the most
    instructions per vector loaded (accumulators / (rows + weight vectors)), then more rows.
    Rows are powers of two up to ``most_rows`` (they divide the usual shapes; a call covers
    the rest with a smaller tile); column tiles, up to 8, divide ``blocks`` (no column tail:
    the rows adapt instead). With ``column_sums`` (Arm's ``sdot`` kernel) each weight vector
    has one more accumulator, its column sums, and two registers hold constants.

        >>> register_tile(32, 4, 8, blocks=64, column_sums=True)   # sdot: 4 rows x 4 regs
        (4, 1)
        >>> register_tile(32, 16, 8, blocks=64)      # AVX-512: 4 rows x 4 zmm, 16 sums
        (4, 4)
        >>> register_tile(16, 8, 8, blocks=64)       # AVX-VNNI: 4 rows x 2 ymm
        (4, 1)
        >>> register_tile(32, 16, 8, blocks=1)       # one column tile: 8 rows keep 8 sums
        (8, 1)
        >>> register_tile(32, 16, 8, blocks=64, most_rows=1)   # one row: 8 column tiles
        (1, 8)
    """
    per = max(1, TILE_COLS // lanes)
    fits = register_tiles(registers, lanes, blocks, most_rows, column_sums)

    def score(rb):
        r, b = rb
        acc = r * b * per
        return min(acc, chains), acc / (r + b * per), r

    return max(fits, key=score) if fits else (1, 1)


def register_tiles(registers: int, lanes: int, blocks: int, most_rows: int = 16,
                   column_sums: bool = False) -> list[tuple[int, int]]:
    """Every ``(rows, column tiles)`` register tile :func:`register_tile` weighs: rows a power
    of two up to 16 and ``most_rows``, column tiles up to 8 dividing ``blocks``, the tile
    within ``registers`` beside its weight vectors and one broadcast per row (and with
    ``column_sums``, a column-sum accumulator per weight vector and two constants).

        >>> register_tiles(16, 8, blocks=1, most_rows=2)
        [(1, 1), (2, 1)]
    """
    per = max(1, TILE_COLS // lanes)
    rows = [1 << k for k in range(5) if 1 << k <= max(1, most_rows)]   # at most 16
    cols = [b for b in range(1, 9) if blocks % b == 0]
    vectors = 2 if column_sums else 1      # per weight vector: itself (and its column sums)
    constants = 2 if column_sums else 0
    return [(r, b) for r in rows for b in cols
            if r * b * per + vectors * b * per + r + constants <= registers]


def u8i8_tile(variant: str, rows: int, depth: int, blocks: int = 1, tile=None) -> TensorIntrin:
    """The register-tiled kernel ``C[i, b, j] += i32(A[i, 4d + k]) * i32(B[b, d, j, k])``
    for ``i < rows, b < blocks, j < 16, d < depth, k < 4`` (B: ``blocks`` packed weight
    tiles), registered on first use. ``variant``:

    - AVX2 (``blocks=1``; B and C without that axis: ``C[i, 0, j]``, ``B[d, j, k]``):
      ``"pmaddubsw"`` (exact only if :func:`pairs_fit_int16` holds for the weights) or
      ``"pmaddwd"`` (always exact), at most :data:`TILE_VARIANTS` rows, sums in registers.
    - VNNI: ``"vpdpbusd512"`` (zmm) or ``"vpdpbusd256"`` (ymm, AVX-VNNI), any ``rows`` and
      ``blocks``: the code covers them with register tiles of ``tile`` = (rows, column
      tiles) (:func:`register_tile`), a loop over whole ones and a smaller tile for the
      rows left over, each summing all ``depth`` groups in registers.
    - 64-bit Arm with dotprod: ``"sdot"``, any ``rows`` and ``blocks`` like VNNI's.

        >>> u8i8_tile("pmaddwd", 2, 4).name
        'x86.avx2.u8i8_pmaddwd_2x16x16'
        >>> u8i8_tile("vpdpbusd512", 7, 256, 4, (4, 4)).name
        'x86.avx512vnni.u8i8_vpdpbusd512_7x64x1024_4x64'
    """
    if variant in VNNI_VARIANTS or variant in ARM_VARIANTS:
        return _vnni_tile(variant, rows, depth, blocks, tile or (rows, blocks))
    if variant not in TILE_VARIANTS:
        raise TIRError(f"no int8 tile variant {variant!r}; Instead: use one of "
                       f"{', '.join([*TILE_VARIANTS, *VNNI_VARIANTS, *ARM_VARIANTS])}")
    if not 1 <= rows <= TILE_VARIANTS[variant] or depth < 1 or blocks != 1:
        raise TIRError(f"the {variant} int8 tile holds 1 to {TILE_VARIANTS[variant]} rows, "
                       f"one column tile and a depth of at least 1 group of 4 terms, not "
                       f"rows={rows}, blocks={blocks}, depth={depth}. Instead: split the "
                       "rows, columns and the reduction into such tiles")
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


def _vnni_tile(variant: str, rows: int, depth: int, blocks: int, tile) -> TensorIntrin:
    isa = tile_features(variant)[0]      # avx512vnni, avxvnni or dotprod
    return _dot_tile(variant, isa, "u8i8", rows, depth, blocks, tile, 4, ("uint8", "int8"),
                     "int32", (rows, blocks, TILE_COLS), lambda i, o, j: (i, o, j))


def bf16_tile(rows: int, depth: int, blocks: int, tile, variant: str = "vdpbf16ps512"
              ) -> TensorIntrin:
    """The register-tiled kernel ``C[i, 16b + j] += f32(A[i, 2d + k]) * f32(B[b, d, j, k])``
    for ``i < rows, b < blocks, j < 16, d < depth, k < 2`` (A bfloat16, B ``blocks``
    packed tiles of bf16 pairs, C float32), registered on first use; its code covers the
    rows and columns with register tiles of ``tile`` = (rows, column tiles)
    (:func:`register_tile`), as the VNNI kernels of :func:`u8i8_tile` do.

        >>> bf16_tile(50, 512, 64, (4, 4)).name
        'x86.avx512bf16.bf16_vdpbf16ps512_50x1024x1024_4x64'
    """
    if variant not in BF16_VARIANTS:
        raise TIRError(f"no bf16 tile variant {variant!r}; Instead: use one of "
                       f"{', '.join(BF16_VARIANTS)}")
    return _dot_tile(variant, "avx512bf16", "bf16", rows, depth, blocks, tile, 2,
                     ("bfloat16", "bfloat16"), "float32", (rows, TILE_COLS * blocks),
                     lambda i, o, j: (i, o * TILE_COLS + j))


def _dot_tile(variant: str, isa: str, kind: str, rows: int, depth: int, blocks: int, tile,
              terms: int, dtypes: tuple[str, str], acc: str, c_shape: tuple,
              c_index) -> TensorIntrin:
    """The intrinsic of a register-tiled dot kernel: ``C[c_index(i, o, j)] += acc(A[i,
    terms d + k]) * acc(B[o, d, j, k])``, A and B of ``dtypes``, its code covering rows and
    column tiles with register tiles of ``tile``; registered on first use."""
    r, b = min(tile[0], rows), min(tile[1], blocks)
    what = "group of 4 terms" if terms == 4 else "pair of terms"
    if min(rows, depth, blocks, r, b) < 1:
        raise TIRError(f"the {variant} {kind} tile needs at least 1 row, column tile, {what} "
                       f"and register tile row and column, not rows={rows}, "
                       f"blocks={blocks}, depth={depth}, tile={tuple(tile)}. Instead: take "
                       "the register tile from register_tile")
    name = (f"{tile_arch(variant)}.{isa}.{kind}_{variant}_{rows}x{TILE_COLS * blocks}x"
            f"{terms * depth}_{r}x{TILE_COLS * b}")
    if name in TensorIntrin.names():
        return TensorIntrin.get(name)

    def params():
        return (Buffer("A", (rows, terms * depth), dtypes[0]),
                Buffer("B", (blocks, depth, TILE_COLS, terms), dtypes[1]),
                Buffer("C", c_shape, acc))

    A, B, C = ps = params()

    def value(i, o, j, d, k):
        at = c_index(i, o, j)
        return BufferStore(C, C[at] + cast(acc, A[i, d * terms + k]) * cast(acc, B[o, d, j, k]),
                           at)

    desc = _desc(name + "_desc", ps, (rows, blocks, TILE_COLS, depth, terms), "SSSRR", value)
    impl = _impl(name + "_impl", tile_op(variant, rows, depth, blocks, (r, b)), params())
    return TensorIntrin.register(name, desc, impl, tile_features(variant))


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
           "TILE_VARIANTS", "VNNI_VARIANTS", "ARM_VARIANTS", "BF16_VARIANTS", "TILE_COLS",
           "TileOp", "tile_arch", "tile_op", "parse_tile_op", "tile_features", "register_tile",
           "u8i8_tile", "bf16_tile", "pairs_fit_int16"]
