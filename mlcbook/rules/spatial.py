"""The rules of blocks without a reduction to tile: spatial blocks (elementwise, injective,
padding), row reductions (the reduced axes innermost, e.g. softmax's sums) and unrolled
tiles (a Winograd transform). Each decides through two knobs: the vector of its innermost
loop (``"<block>.vector"``) and how many of the loops above run in parallel
(``"<block>.parallel"``), both hinted by the machine model.

    >>> schedule_spatial(Knobs.defaults(sch), "relu", rules)    # vectorized, fused, parallel
"""

from __future__ import annotations

import math

from ..errors import ScheduleError
from ..tir.expr import bits
from .blocks import extent, transposed_axis
from .border import border_loop
from .knobs import Knobs
from .tile_size import stream_lanes
from .unrolled_tile import unroll_tile

#: parallelize a loop nest only when it does at least this many inner iterations in total
#: (a tiled reduction: twice as many), about 5 us of work on one core: a launch costs about
#: a microsecond while the pool's workers spin (they do between the kernels of a run), and
#: the chunks are claimed dynamically, so a worker that starts late costs little. On the
#: CNN of bench/e2e.py this makes its two convolutions parallel and leaves the copies,
#: pools and the small gemm serial. (It was 2^20 while a chunk's code ran up to 2.5x
#: slower than the serial loop and a late worker held up its static half.)
PARALLEL_WORK = 1 << 15
#: a float reduction of at least this many terms is summed in two levels (see two_level)
LONG_REDUCTION = 1 << 13


def vectorize(knobs: Knobs, name: str, loop, width: int) -> list:
    """Vectorize ``loop`` (knob ``<name>.vector``: 0 vectorizes the whole loop, ``w`` splits
    ``w`` lanes off it first); returns the outer loops made. The hint: the whole loop up to
    ``width`` lanes (or up to four times that when no width divides it), else ``width`` or
    the half or quarter of it that divides, else ``width`` lanes with the last vector
    predicated."""
    sch = knobs.sch
    e = extent(sch, loop)
    if e < 4:
        return [loop]
    whole = e <= width or (e % width and e <= 4 * width)
    lanes = 0 if whole else next((w for w in (width, width // 2, width // 4) if e % w == 0),
                                 width)
    options = sorted({lanes} | {w for w in (width // 2, width, 2 * width, 4 * width)
                                if 4 <= w < e and e % w == 0}
                     | ({0} if e <= 4 * width else set()))
    lanes = knobs.choice(f"{name}.vector", options, hint=lanes)
    if lanes == 0:
        sch.vectorize(loop)
        return []
    outer, inner = sch.split(loop, [None, lanes])
    sch.vectorize(inner)
    return [outer]


def parallel(knobs: Knobs, name: str, loops: list, work: int, least: int = PARALLEL_WORK):
    """Fuse ``loops``; knob ``<name>.parallel``: how many of the outermost run in parallel
    (0: none; then all are fused into one serial loop). Hint: all of them when the nest does
    at least ``least`` iterations and the fused loop more than one, else none. Returns the
    outermost loop made (the parallel one, if any), or None."""
    sch = knobs.sch
    if not loops:
        return None
    big = work >= least and math.prod(extent(sch, lp) for lp in loops) > 1
    depth = knobs.choice(f"{name}.parallel", list(range(len(loops) + 1)),
                         hint=len(loops) if big else 0)
    if depth == 0:
        return sch.fuse(*loops) if len(loops) > 1 else loops[0]
    fused = sch.fuse(*loops[:depth]) if depth > 1 else loops[0]
    if extent(sch, fused) > 1:
        sch.parallel(fused)
    return fused


def schedule_spatial(knobs: Knobs, name: str, rules) -> None:
    """An elementwise, injective or padding block: its innermost loop vectorized, the loops
    above fused and parallel when there is enough work (a big pad's only above the loop
    lowering cuts at its border, :func:`_schedule_pad`)."""
    sch = knobs.sch
    width = stream_lanes(rules.target)
    loops = sch.get_loops(sch.get_block(name))
    if not loops:
        return
    work = math.prod(extent(sch, lp) for lp in loops)
    border = border_loop(sch, name, loops) \
        if work >= PARALLEL_WORK and rules.pad_border_loops else None
    if border is not None:
        _schedule_pad(knobs, name, loops, border, work, width)
        return
    transposed = transposed_axis(sch, name)
    if transposed is not None and extent(sch, loops[-1]) >= 4 \
            and (transposed[1] or extent(sch, loops[transposed[0]]) % width == 0) \
            and knobs.choice(f"{name}.transpose", [0, 1], hint=1):
        _schedule_transpose(knobs, name, loops, transposed[0], work, width)
        return
    loops = _without_unit_inner(sch, loops)
    if len(loops) > 1 and extent(sch, loops[-1]) < 4:
        # an innermost loop too short for a vector (the 3 channels of an RGB image going to
        # blocks) is unrolled and kept out of the fused loop: fused, every element paid a
        # division and a remainder by it to recover its indices
        sch.unroll(loops[-1])
        parallel(knobs, name, list(loops[:-1]), work)
        return
    rest = vectorize(knobs, name, loops[-1], width)
    parallel(knobs, name, list(loops[:-1]) + rest, work)


def _schedule_transpose(knobs: Knobs, name: str, loops: list, axis: int, work: int,
                        width: int) -> None:
    """A transposing copy (:func:`~mlcbook.rules.blocks.transposed_axis`) in tiles of
    ``width`` x ``width``: the loop along which the source is contiguous split, its inner
    part just outside the vectorized last loop. Each vector then gathers from the same
    ``width`` cache lines as the one before, in L1, where the whole plane between them
    evicted those lines (Zen 5, 2 threads: ``to_blocked`` of 272 channels in 4 groups at
    28x28 55 -> 42 us, ``from_blocked`` of 64 channels at 56x56 48 -> 39 us). A source
    read through index arithmetic (``c % 16``) is tiled only along whole tiles: a cropping
    ``from_blocked`` (68 channels) ran 13% slower tiled."""
    sch = knobs.sch
    a_o, a_i = sch.split(loops[axis], [None, min(width, extent(sch, loops[axis]))])
    last = loops[-1]
    b_o, b_i = sch.split(last, [None, width]) if extent(sch, last) > width else (None, last)
    outer = [a_o if k == axis else lp for k, lp in enumerate(loops[:-1])]
    outer += [b_o] if b_o is not None else []
    sch.reorder(*outer, a_i, b_i)
    sch.vectorize(b_i)
    parallel(knobs, name, outer, work)


def _without_unit_inner(sch, loops) -> list:
    """``loops`` with the innermost ones of extent 1 (a block of 1 channel, e.g. the padding
    of a 1-channel image in NCHW1c) fused into the last longer loop: the vector then runs
    along the pixels of a row rather than the whole nest being fused into one scalar loop of
    divisions and remainders."""
    loops = list(loops)
    k = len(loops)
    while k > 1 and extent(sch, loops[k - 1]) == 1:
        k -= 1
    if k == len(loops) or extent(sch, loops[k - 1]) == 1:
        return loops
    return loops[:k - 1] + [sch.fuse(*loops[k - 1:])]


def _schedule_pad(knobs: Knobs, name: str, loops, border: int, work: int, width: int) -> None:
    """A big pad: the loops above its innermost tested one fused and parallel, that one and
    those below it left apart (the innermost vectorized, or unrolled when short), so that
    lowering cuts the tested loop at the border (:mod:`~mlcbook.tir.transform.partition_loops`):
    the interior then copies without tests, where every element of the fused loop paid
    divisions to recover its indices and a branch on the border."""
    sch = knobs.sch
    inner = loops[-1]
    if extent(sch, inner) < 4:
        sch.unroll(inner)
    else:
        vectorize(knobs, name, inner, width)
    parallel(knobs, name, list(loops[:border]), work)


def schedule_unrolled_tile(knobs: Knobs, name: str, rules) -> None:
    """A block whose value depends on its position in a small tile (a Winograd transform):
    those positions unrolled (:func:`~mlcbook.rules.unrolled_tile.unroll_tile`), the innermost
    loop vectorized, the loops above fused and parallel."""
    sch = knobs.sch
    work = math.prod(extent(sch, lp) for lp in sch.get_loops(sch.get_block(name)))
    outer, inner = unroll_tile(sch, name, rules.target)
    vectorize(knobs, name, inner, stream_lanes(rules.target))
    parallel(knobs, name, outer, work)


def schedule_row_reduction(knobs: Knobs, name: str, rules) -> None:
    """A reduction whose reduced axes are innermost (softmax's sums): a long float one summed
    in two levels (:func:`two_level`), the spatial loops fused and parallel."""
    sch = knobs.sch
    block = sch.get_block(name)
    n_spatial = sum(iv.kind == "spatial" for iv in sch.get(block).iter_vars)
    row_reduction(knobs, block, n_spatial, rules.long_reduction)


def row_reduction(knobs: Knobs, block, n_spatial: int,
                  long_reduction: float = LONG_REDUCTION) -> None:
    """:func:`schedule_row_reduction` of ``block`` with ``n_spatial`` spatial loops; sums of
    at least ``long_reduction`` terms in two levels."""
    sch = knobs.sch
    partial = two_level(sch, block, n_spatial, long_reduction=long_reduction)
    if partial is not None:
        # the partial sums first: one row reduction more, whose rows are the blocks
        row_reduction(knobs, partial, n_spatial + 1, long_reduction)
    loops = sch.get_loops(block)
    work = math.prod(extent(sch, lp) for lp in loops)
    parallel(knobs, sch.get(block).name, list(loops[:n_spatial]), work)


def two_level(sch, block, n_spatial: int, factor_axis: int | None = None,
              long_reduction: float = LONG_REDUCTION):
    """Sum a long float reduction in two levels: blocks of about sqrt(n) consecutive terms
    (``rfactor`` into partial sums, their block axis at ``factor_axis`` of the partial-sum
    buffer, default last), then the partial sums. A float32 sum of n terms in one
    running total loses up to about n rounding errors; two levels lose about 2 sqrt(n), and
    the blocks can run in parallel. Returns the partial-sum block, or None (short, integer,
    or no block size divides the reduction: then one level). "Long" is at least
    ``long_reduction`` terms. Not a knob: it decides the result's precision, not its speed
    (the compile option ``two_level_sums=False`` turns it off, to compare)."""
    loops = sch.get_loops(block)
    reduce_loops = loops[n_spatial:]
    node = sch.get(block)
    n = math.prod(extent(sch, lp) for lp in reduce_loops) if reduce_loops else 0
    if n < long_reduction or not node.writes or not node.writes[0].buffer.dtype.startswith(
            "float"):
        return None
    size = _block_size(n)
    if size is None:
        return None
    try:
        k = sch.fuse(*reduce_loops) if len(reduce_loops) > 1 else reduce_loops[0]
        outer, _ = sch.split(k, [None, size])
        return sch.rfactor(outer, factor_axis=n_spatial if factor_axis is None else factor_axis)
    except ScheduleError:
        return None   # e.g. a reducer rfactor cannot split (not a sum, max or min)


def _block_size(n: int) -> int | None:
    """The divisor of ``n`` nearest to sqrt(n), if it is at least 64."""
    root = math.isqrt(n)
    best = max((d for k in range(1, root + 1) if n % k == 0 for d in (k, n // k)
                if d <= 4 * root), key=lambda d: -abs(d - root), default=None)
    return best if best is not None and best >= 64 else None


def item_bytes(dtype: str) -> int:
    """Bytes of one element of ``dtype`` (at least 1)."""
    return max(1, bits(dtype) // 8)


__all__ = ["PARALLEL_WORK", "LONG_REDUCTION", "vectorize", "parallel",
           "schedule_spatial", "schedule_unrolled_tile", "schedule_row_reduction",
           "row_reduction", "two_level", "item_bytes"]
