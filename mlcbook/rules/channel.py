"""Two layouts the tiled rule can choose for a weight: a conv in NCHW vectorized along its
output channels (knob ``vector_axis``), the weight repacked into blocks of the vector's
lanes; and a matmul's weight repacked into panels of the tile's width (knob ``repack``).

    >>> schedule_channel_tiled(knobs, "conv", rules, "W", 1)   # W[f // 16, c, ky, kx, f % 16]
"""

from __future__ import annotations

import math

from ..errors import SpaceError
from ..schedule import Schedule
from .blocks import extent
from .knobs import Knobs
from .spatial import PARALLEL_WORK

#: keep this many vector registers free of accumulators (the broadcast and a weight vector)
SPARE_REGISTERS = 2


def schedule_channel_tiled(knobs: Knobs, name: str, rules, weight: str, axis: int) -> None:
    """The tile rule vectorized along ``axis`` (a conv's output channels): the weight
    repacked to a blocked layout ``W[s // lanes, ..., s % lanes]`` (contiguous vectors),
    the accumulators laid out with ``s`` last, a tile of ``cols`` vectors of channels by
    ``rows`` along the last spatial axis (an output row: the input value is broadcast);
    the knobs ``cols``, ``rows``, ``parallel``."""
    sch = knobs.sch
    block = sch.get_block(name)
    lanes = rules.lanes
    ndim = len(next(p for p in sch.func.params if p.name == weight).shape)
    names = [f"x{k}" for k in range(ndim)]
    sch.transform_layout(block, weight, f"lambda {', '.join(names)}: ({names[0]} // {lanes}, "
                         f"{', '.join(names[1:])}, {names[0]} % {lanes})")
    write_back = sch.cache_write(block, 0, "local")
    local = sch.get(block).writes[0].buffer
    out = [f"y{k}" for k in range(len(local.shape))]
    moved = out[:axis] + out[axis + 1:] + [out[axis]]
    sch.transform_layout(block, local.name, f"lambda {', '.join(out)}: ({', '.join(moved)})")
    loops = sch.get_loops(block)
    n_spatial = len(out)
    spatial, reduce_ = list(loops[:n_spatial]), list(loops[n_spatial:])
    work = math.prod(extent(sch, lp) for lp in loops)
    limit = 2 * rules.registers
    s0, vec = sch.split(spatial[axis], [None, lanes])
    sa, cols = sch.split(s0, knobs.tile(f"{name}.cols", s0, 2, rules.registers - SPARE_REGISTERS))
    width = spatial[-1]
    wa, rows = sch.split(width, knobs.tile(f"{name}.rows", width, 2,
                                           max(1, limit // extent(sch, cols))))
    if extent(sch, rows) * extent(sch, cols) > limit:
        raise SpaceError(f"block {name!r}: a register tile of {extent(sch, rows)} x "
                         f"{extent(sch, cols)} vectors is larger than {limit} accumulators; "
                         "Instead: draw smaller rows or cols")
    tile_loops = [sa if lp is spatial[axis] else wa if lp is width else lp for lp in spatial]
    sch.reorder(*tile_loops, *reduce_, rows, cols, vec)
    sch.unroll(rows)
    sch.unroll(cols)
    sch.vectorize(vec)
    fused = sch.fuse(*tile_loops) if len(tile_loops) > 1 else tile_loops[0]
    sch.reverse_compute_at(write_back, fused)
    wb_loops = sch.get_loops(write_back)
    if wb_loops[-1].var is not sch.get_loops(sch.get_block(name))[0].var:
        vectorize_row(sch, wb_loops[-1], lanes)
    sch.decompose_reduction(sch.get_block(name), reduce_[0])
    if knobs.choice(f"{name}.parallel", [0, 1], hint=int(work >= 2 * PARALLEL_WORK)) \
            and extent(sch, fused) > 1:
        sch.parallel(fused)


def split_row(sch: Schedule, loop, lanes: int):
    """Split the columns of a tile row into registers of ``lanes`` (unrolled) when they
    split evenly; returns the loop of one register's lanes, to vectorize. (Split by any
    other width, a tile row sized for one AVX-512 register became two AVX2-sized halves:
    twice the accumulators, spilled.)"""
    e = extent(sch, loop)
    if not (e > lanes and e % lanes == 0):
        return loop
    outer, inner = sch.split(loop, [None, lanes])
    sch.unroll(outer)
    return inner


def vectorize_row(sch: Schedule, loop, lanes: int) -> None:
    """Vectorize a tile row one register at a time (the registers unrolled)."""
    sch.vectorize(split_row(sch, loop, lanes))


def repack(sch: Schedule, name: str, operand: tuple[str, int], width: int,
           lanes: int) -> None:
    """Lay ``buf[b..., k, j]`` out as panels ``[b..., j // width, k, j % width]``: each
    tile's columns of the weight contiguous (rows of a wide weight are a power-of-two bytes
    apart, so a tile's column strip would map to few cache sets), repacked once, the
    panels in parallel."""
    buf, n_batch, width = operand[0], operand[1], int(width)
    lead = [f"b{k}" for k in range(n_batch)]
    sch.transform_layout(sch.get_block(name), buf,
                         f"lambda {', '.join(lead + ['k', 'j'])}: "
                         f"({', '.join(lead + [f'j // {width}', 'k', f'j % {width}'])})")
    *batch, rows, cols = sch.get_loops(sch.get_block(f"{buf}_packed"))
    panel, col = sch.split(cols, [None, width])
    sch.reorder(*batch, panel, rows, col)
    vectorize_row(sch, col, lanes)
    outer = sch.fuse(*batch, panel) if batch else panel
    if extent(sch, outer) > 1:
        sch.parallel(outer)


__all__ = ["schedule_channel_tiled", "repack", "split_row", "vectorize_row", "SPARE_REGISTERS"]
