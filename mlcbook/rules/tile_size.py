"""Sizes of register tiles: how many output rows and vector columns one tile of a tiled
reduction (matmul, conv) accumulates in registers, from the target's machine model
(:attr:`Target.machine <mlcbook.codegen.Target.machine>`): its vector registers, and a
core's FMA and load throughput and FMA latency: the hints of the tiled rule's knobs
(:mod:`mlcbook.rules.tiled`); :mod:`mlcbook.graph.passes.weight_layout` packs weights to their
column width.

    >>> register_tile(64, 512, "llvm -mcpu=znver3")
    (4, 16)
"""

from __future__ import annotations

import math

from ..codegen.machine import Machine
from ..codegen.target import Target


def split_registers(c: int, lanes: int) -> int:
    """The vector registers LLVM splits a vector of ``c`` lanes into, each an instruction:
    whole ones, then one per power of two of the rest (AVX-512 float32: 28 lanes are a zmm,
    a ymm and an xmm; 49 are three zmm and a scalar).

        >>> split_registers(28, 16), split_registers(49, 16), split_registers(32, 16)
        (3, 4, 2)
    """
    return c // lanes + bin(c % lanes).count("1")


def column_widths(extent: int, lanes: int, most: int) -> list[int]:
    """Candidate tile widths along an output row of ``extent``, in at most ``most`` vector
    registers: its divisors in whole vectors; else every divisor of at least a quarter
    vector that fits (in the registers LLVM splits it into, :func:`split_registers`: a
    196-pixel row offers 49, three zmm and a scalar, beside 28 and 98); else one vector
    (the last tile predicated).

        >>> column_widths(196, 16, 30)
        [4, 7, 14, 28, 49, 98, 196]
    """
    whole = [c for c in range(lanes, min(extent, most * lanes) + 1, lanes) if extent % c == 0]
    if whole:
        return whole
    # split_registers(c) >= c // lanes: no width past (most + 1) * lanes can fit
    widths = [c for c in range(max(1, lanes // 4), min(extent, (most + 1) * lanes) + 1)
              if extent % c == 0 and split_registers(c, lanes) <= most]
    return widths or [lanes]


def register_tile(rows: int, cols: int, target=None, dtype: str = "float32") -> tuple[int, int]:
    """(rows, columns) of the register tile of a tiled reduction whose output has ``rows``
    along its reuse axis (1 if none) and ``cols`` along its vectorized axis: the
    one-axis case of :func:`row_tile`.

        >>> register_tile(64, 512, "llvm -mcpu=znver3")        # 8 of 16 ymm accumulate
        (4, 16)
    """
    (r,), c = row_tile((rows,), cols, target, dtype)
    return r, c


def row_tile(rows: tuple[int, ...], cols: int, target=None, dtype: str = "float32",
             ragged: bool = False, spare: int = 0,
             depth: int | None = None) -> tuple[tuple[int, ...], int]:
    """(rows per axis, columns) of the register tile of a tiled reduction whose output
    has extents ``rows`` along its reuse axes (innermost first) and ``cols`` along its
    vectorized axis, each tile size dividing its extent when it can. A tile of ``r`` rows
    in all (the product over the axes) of ``v`` vectors (the registers LLVM splits its
    columns into, :func:`split_registers`) needs ``r*v`` accumulators, ``v``
    registers for the vector operand and one for the broadcast, all within
    ``target.vector_registers`` (16 with AVX2, 32 with AVX-512). Of the tiles that fit,
    the one taken does the most useful FMA lanes per cycle, estimated from its
    accumulators against its loads (``r + v``) and the FMA latency (fewer than
    ``fma_per_cycle * fma_latency`` accumulators leave the FMA units idle); ties go to more
    work per tile, then more rows, then more of them along the inner axes. The FMA and
    load throughput and the FMA latency are the target's (``Target.machine``): Zen 3 issues
    two ymm FMAs and two loads a cycle, each FMA ready 4 cycles later, so a tile needs 8
    accumulators to keep its FMA units busy.

    Taking rows from a second axis keeps a short output row in wide tiles: a 14x14 map
    of 16 channels has no 4 to 6 pixel divisor of its row, but 2 x 2 pixels of 2 ymm
    each make 8 accumulators that share every broadcast twice.

        >>> row_tile((14, 14), 16, "llvm -mcpu=znver3")
        ((2, 2), 16)

    ``ragged`` also weighs, along an axis that has no divisor that fits (a prime width),
    sizes that do not divide it (the last tile is predicated), at the fraction of their
    rows that is useful, and breaks ties by fewer loads per useful FMA: a 7x7 map gets
    4 pixels (4 + 3) of 2 ymm, 6 loads a step, rather than 7 pixels of 1 ymm, 8 loads.

        >>> row_tile((7, 7), 16, "llvm -mcpu=znver3", ragged=True)
        ((4, 1), 16)

    ``spare`` registers are left out of the budget: a conv's window loads the broadcast of
    one pixel for several taps, which the compiler then keeps in registers, so a tile of 14
    accumulators + 1 weight + 1 broadcast spills; with 1 spare it takes 8:

        >>> row_tile((28, 28), 8, "llvm -mcpu=znver3", ragged=True, spare=1)
        ((4, 2), 8)

    With the reduction's ``depth``, a tile whose vector operand (``depth`` rows of its
    width) does not fit half the L1 reads it from L2, at
    :attr:`~mlcbook.codegen.machine.Machine.l2_loads_per_cycle`: a one-row tile as wide
    as a whole 196-pixel row of a shufflenet matmul (68 deep) then loses to 2 rows of 98:

        >>> row_tile((68,), 196, "llvm -mcpu=znver5", depth=68)
        ((2,), 98)
    """
    m = Target(target or "llvm").machine
    lanes, regs = m.lanes(dtype), m.vector_registers
    best, best_key = ((1,) * len(rows), lanes), None
    for c in column_widths(cols, lanes, regs - 2):
        v = split_registers(c, lanes)
        most = max(1, (regs - v - 1 - spare) // v)
        for sizes in row_sizes(rows, most, ragged):
            r = math.prod(sizes)
            acc = r * v
            useful = r * c / lanes * _filled(rows, sizes)  # full vectors
            from_l2 = depth is not None and depth * c * m.vector_bits // 8 // lanes > m.l1d_bytes // 2
            speed = _speed(m, useful, acc, r + v, v if from_l2 else 0)
            key = (speed, useful, -(r + v) / useful if ragged else 0, r, sizes)
            if best_key is None or key > best_key:
                best, best_key = (sizes, c), key
    return best


def _filled(rows, sizes) -> float:
    """The useful fraction of tiles of ``sizes`` over ``rows`` (the last ones may be short)."""
    return math.prod(e / (-(-e // d) * d) for e, d in zip(rows, sizes))


def _speed(m: Machine, useful: float, acc: int, loads: int, from_l2: int = 0) -> float:
    """Useful FMA lanes per cycle (in full vectors) of a register tile of ``acc``
    accumulators that loads ``loads`` registers per reduction step on the core ``m``,
    ``from_l2`` of them from L2: bound by its FMA issue, its loads, or the FMA latency
    (fewer than ``fma_per_cycle * fma_latency`` accumulators leave the FMA units idle)."""
    return useful / max(acc / m.fma_per_cycle, loads / m.loads_per_cycle,
                        from_l2 / m.l2_loads_per_cycle, m.fma_latency)


def pixel_tile(rows: tuple[int, ...], blocks: int, cols: int, target=None,
               dtype: str = "float32", ragged: bool = True) -> tuple[int, int] | None:
    """``(pixels, channel_blocks)`` of a register tile that takes the output rows
    ``rows`` (a conv's map, innermost first) as one flattened axis of pixels, and
    ``channel_blocks`` of the ``blocks`` output-channel blocks of ``cols`` lanes each
    (the vector operand differs per block): when the best :func:`row_tile` is ragged (if
    ``ragged``) or has too few accumulators to hide the FMA latency, and this models
    faster, else None. A 7x7 map tiled 4 + 3 pixels leaves a tail of 6 accumulators; its
    49 pixels in tiles of 2 pixels x 2 blocks of 16 channels (8 accumulators, 4 weight and
    2 broadcast loads a step) waste only the last tile's second pixel.

        >>> pixel_tile((7, 7), 32, 16, "llvm -mcpu=znver3")
        (2, 2)
        >>> pixel_tile((14, 14), 16, 16, "llvm -mcpu=znver3") is None   # 2 x 2 px divide
        True

    With AVX-512 a 7-pixel row of one zmm is 7 accumulators, one short of Zen 5's 2 FMAs x
    4 cycles: 7 pixels x 2 blocks ran 1.3-1.5x faster (1x1 and 3x3 convs onto 7x7 maps).

        >>> pixel_tile((7, 7), 32, 16, "llvm -mcpu=znver5")
        (7, 2)

    Only tiles of at least two blocks whose last tile is short by at most one pixel are
    weighed: the test guarding a short tile's pixels must leave the reduction loops (LLVM
    unswitches one guarded pixel; several keep their accumulators in memory, 2-3x slower).
    """
    mach = Target(target or "llvm").machine
    lanes, regs = mach.lanes(dtype), mach.vector_registers
    sizes, c = row_tile(rows, cols, target, dtype, ragged=True)
    v, r = split_registers(c, lanes), math.prod(sizes)
    uneven = not all(e % d == 0 for e, d in zip(rows, sizes))
    short = not (uneven and ragged)
    if short and r * v >= mach.fma_per_cycle * mach.fma_latency:
        return None
    best, best_speed = None, _speed(mach, r * c / lanes * _filled(rows, sizes), r * v, r + v)
    v, n = split_registers(cols, lanes), math.prod(rows)
    for p, m in pixel_tiles(rows, blocks, cols, target, dtype):
        # a short row's tiles are whole rows: then each tile's pixels are one row of the
        # map, which the parallel tile loops keep apart (a tile across rows would have
        # only a region of the map in its accumulators, not a box)
        if short and p != rows[0]:
            continue
        useful = p * m * cols / lanes * _filled((n,), (p,))
        speed = _speed(mach, useful, p * m * v, p + m * v)
        if speed > best_speed:
            best, best_speed = (p, m), speed
    return best


def pixel_tiles(rows: tuple[int, ...], blocks: int, cols: int, target=None,
                dtype: str = "float32") -> list[tuple[int, int]]:
    """The ``(pixels, channel_blocks)`` tiles :func:`pixel_tile` weighs: at least two of the
    ``blocks`` channel blocks, within the vector registers beside one weight vector per
    block and a broadcast, the map's last tile short by at most one pixel.

        >>> pixel_tiles((7, 7), 2, 16, "llvm -mcpu=znver5")[:3]
        [(1, 2), (2, 2), (5, 2)]
    """
    mach = Target(target or "llvm").machine
    regs, v, n = mach.vector_registers, -(-cols // mach.lanes(dtype)), math.prod(rows)
    return [(p, m) for m in range(2, blocks + 1) if blocks % m == 0
            for p in range(1, regs) if p * m * v + m * v + 1 <= regs and n % p in (0, p - 1)]


def row_sizes(rows: tuple[int, ...], most: int, ragged: bool = False):
    """Every tuple of divisors of ``rows`` whose product is at most ``most``; ``ragged``:
    along an axis with no divisor from 2 to ``most`` (a prime width), of any size."""
    if not rows:
        yield ()
        return
    top = min(rows[0], most)
    any_size = ragged and not any(rows[0] % d == 0 for d in range(2, top + 1))
    for d in range(1, top + 1):
        if rows[0] % d == 0 or any_size:
            for rest in row_sizes(rows[1:], most // d, ragged):
                yield (d,) + rest


def stream_lanes(target: Target) -> int:
    """Lanes of the vectors a spatial (streaming) loop runs on: at least 16 float32, so that
    each step has enough independent loads in flight (two registers with AVX2, one with
    AVX-512); any dtype takes the same count of lanes.

        >>> stream_lanes(Target("llvm -mcpu=x86-64-v3")), stream_lanes(Target("llvm -mcpu=znver5"))
        (16, 16)
    """
    lanes = target.vector_lanes("float32")
    return lanes * max(1, -(-16 // lanes))


def channel_block(target: Target) -> int:
    """Channels per block of a blocked conv layout (NCHW[b]c): as many as
    :func:`stream_lanes`, one AVX-512 register or two AVX2 ones of float32 (on Zen 3, 16
    ran faster than 8: a register tile then shares each broadcast between two vectors).

        >>> channel_block(Target("llvm -mcpu=znver5"))
        16
    """
    return stream_lanes(target)


def panel_accumulator_bytes(target: Target) -> int:
    """The most bytes a block of register tiles may accumulate in cache, beside the panel
    of the vector operand it shares (a conv's channel panel): half of the target's L1.

        >>> panel_accumulator_bytes(Target("llvm -mcpu=znver3"))
        16384
    """
    return target.machine.l1d_bytes // 2


__all__ = ["register_tile", "row_tile", "pixel_tile", "pixel_tiles", "stream_lanes",
           "channel_block",
           "panel_accumulator_bytes", "column_widths", "row_sizes"]
