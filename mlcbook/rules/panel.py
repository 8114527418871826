"""Where the tiles of a reduction meet the cache: a conv's channel panel (its outermost
reduce loop above a block of register tiles, which then share that step's weights from
L1), and producers computed under the tile loops (a depthwise conv's padding, one plane
at a time, in cache just before its tiles read it).

    >>> shares_channel_blocks(sch, reduce_loops, 16, "float32", target)   # 3x3 conv, 128 ch
    True
"""

from __future__ import annotations

import math

from ..codegen.target import Target
from ..errors import ScheduleError
from ..schedule import Schedule
from .blocks import extent, reads_any, root_realizes
from .spatial import item_bytes
from .tile_size import panel_accumulator_bytes

#: fewest reduction steps a register tile takes between loading its accumulators from
#: cache and storing them back (a 3x3 conv in NCHW16c: 144; in NCHW only its 9 taps,
#: which ran 1.4-1.7x slower hoisted)
PANEL_STEPS = 64
#: fewest iterations of the tile loops a producer is computed under (see
#: own_producers_level): they become the parallel loop, which needs enough to share
PRODUCER_CHUNKS = 16


def shares_channel_blocks(sch: Schedule, reduce_: list, cols: int, dtype: str,
                          target: Target) -> bool:
    """Whether the outermost of a reduction's loops may go above a block of register tiles
    (see :func:`panel_loops`): a tile's share of the vector operand over the whole
    reduction overflows the target's L1, and each step of that loop leaves a tile enough of
    the rest."""
    steps = math.prod(extent(sch, lp) for lp in reduce_)
    return len(reduce_) >= 2 \
        and steps * cols * item_bytes(dtype) > target.machine.l1d_bytes \
        and steps // extent(sch, reduce_[0]) >= PANEL_STEPS


def panel_bytes(rows: tuple, flat: tuple, cols: int, dtype: str) -> int:
    """Bytes of the accumulators of one row of pixel tiles ``flat`` = (pixels, blocks)
    over a map of ``rows``: the whole map's, as its pixels are one axis."""
    (p, m), n = flat, math.prod(rows)
    return -(-n // p) * p * m * cols * item_bytes(dtype)


def panel_fits(sch: Schedule, outer: list, rows_at: list[int], sizes: dict, reduce_: list,
               cols: int, dtype: str, target: Target) -> bool:
    """Whether :func:`panel_loops` can make a panel here: the reduction shares its channel
    blocks and one row of tiles accumulates within
    :func:`~mlcbook.rules.tile_size.panel_accumulator_bytes`."""
    if not rows_at or not shares_channel_blocks(sch, reduce_, cols, dtype, target):
        return False
    x = rows_at[0]
    return extent(sch, outer[x]) * sizes.get(x, 1) * cols * item_bytes(dtype) \
        <= panel_accumulator_bytes(target)


def panel_loops(sch: Schedule, outer: list, rows_at: list[int], sizes: dict, cols: int,
                dtype: str, target: Target):
    """``(outer, under)``: the tiles of a reduction over several loops sharing each step of
    its outermost reduce loop (call when :func:`panel_fits`). A 3x3 conv's register tile
    reads all the weights of its output channels over its reduction (128 channels in:
    72 KiB), more than L1 holds, so each tile streamed them from L2. Taking the outermost
    reduce loop (the input-channel blocks) above a block of tiles (a whole output row, and
    as many rows as :func:`~mlcbook.rules.tile_size.panel_accumulator_bytes` of accumulators
    hold while the parallel loop keeps at least :data:`PRODUCER_CHUNKS` chunks) lets them
    all use that channel block's 9 KiB of weights from L1; the tiles accumulate in cache,
    and in registers only over the rest of the reduction, at least :data:`PANEL_STEPS` of
    it. ``under`` are the tile loops taken below the reduce loop, ``outer`` those left above
    it (the row axis split if only part of it goes under); ``sizes`` maps each of
    ``rows_at`` to its register tile's size."""
    x = rows_at[0]
    row = extent(sch, outer[x]) * sizes.get(x, 1) * cols * item_bytes(dtype)
    most = panel_accumulator_bytes(target)
    outer = list(outer)
    under = [outer[x]]
    if len(rows_at) > 1:
        y = rows_at[1]
        ey = extent(sch, outer[y])
        chunks = math.prod(extent(sch, lp) for a, lp in enumerate(outer) if a not in (x, y))
        d = max((d for d in range(1, ey + 1) if ey % d == 0
                 and row * sizes.get(y, 1) * d <= most
                 and (d == 1 or chunks * (ey // d) >= PRODUCER_CHUNKS)), default=1)
        if d == ey:
            under.insert(0, outer[y])
            outer[y] = None
        elif d > 1:
            outer[y], yi = sch.split(outer[y], [None, d])
            under.insert(0, yi)
    outer[x] = None
    return [lp for lp in outer if lp is not None], under


def own_producers_level(sch: Schedule, name: str, tile_loops: list) -> tuple[int, list[str]]:
    """``(k, producers)``: the blocks that only block ``name`` reads (its padding) are
    computed under the first ``k`` of its tile loops, fused, when their iterations there
    part the producers' work without computing any of it twice (a depthwise conv pads one
    channel's plane per channel, in cache just before its tiles read it, instead of
    writing the whole padded tensor out and reading it back); ``(0, [])`` if no level
    does (a conv whose every tile reads all channels). The loops above the producers
    are the parallel ones: at least :data:`PRODUCER_CHUNKS` iterations of them, so that a
    batch of a few images does not become a parallel loop of a few chunks."""
    realizes = root_realizes(sch.func)
    params = {id(p) for p in sch.func.params}
    mine = {id(r.buffer) for r in sch.get(sch.get_block(name)).reads}
    producers = []
    for r in realizes:
        b = r.block
        if b.name == name or len(b.writes) != 1 or any(iv.kind != "spatial"
                                                        for iv in b.iter_vars):
            continue
        out = id(b.writes[0].buffer)
        others = [o for o in realizes if o.block.name not in (name, b.name)]
        if out in mine and out not in params and not any(reads_any(o.block, {out})
                                                          for o in others):
            producers.append(b.name)
    for k in range(len(tile_loops), 0, -1) if producers else ():
        if math.prod(extent(sch, lp) for lp in tile_loops[:k]) < PRODUCER_CHUNKS:
            break
        if all(_computes_once_at(sch, p, tile_loops[:k]) for p in producers):
            return k, producers
    return 0, []


def _computes_once_at(sch: Schedule, producer: str, loops: list) -> bool:
    """Whether ``producer`` computed at ``loops`` (fused) does its work once, and leaves that
    loop free to run in parallel (a ragged tile's guarded reads may reach past the part of
    the producer its iteration computes), tried on a copy of the schedule."""
    work = math.prod(extent(sch, lp) for lp in sch.get_loops(sch.get_block(producer)))
    trial = sch.copy()
    try:
        fused = trial.fuse(*loops) if len(loops) > 1 else loops[0]
        trial.compute_at(trial.get_block(producer), fused)
        if extent(trial, fused) > 1:
            trial.parallel(fused)
    except ScheduleError:
        return False
    return math.prod(extent(trial, lp)
                     for lp in trial.get_loops(trial.get_block(producer))) <= work


__all__ = ["PANEL_STEPS", "PRODUCER_CHUNKS", "shares_channel_blocks", "panel_bytes",
           "panel_fits", "panel_loops", "own_producers_level"]
