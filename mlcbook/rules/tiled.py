"""The tiled-reduction rule (matmul, gemm, conv, and any reduction whose innermost output axis
is long, or short but contiguous in an operand): the output cut into register tiles of
``rows x cols``, the reduce loops around each tile, the tile's columns vectorized. The tile
accumulates in a ``local`` buffer (``cache_write``), copied out once per tile
(``reverse_compute_at``); ``decompose_reduction`` zeroes it before the reduce loops instead
of testing inside them. Every decision is a knob whose hint comes from the machine model
(:mod:`.tile_size`, :mod:`.panel`):

* ``cols`` (the tile's width along the vectorized axis) and ``rows`` (``rows2``: its size
  along each reuse axis, :func:`~mlcbook.rules.blocks.reuse_axes`, or a max pool's row):
  :func:`~mlcbook.rules.tile_size.row_tile`; a reduction over several loops (a conv) may
  take a size that does not divide a prime-width row (7x7 maps: 4 + 3 pixels);
* ``pixels`` (a conv in blocked layout): the map's pixels as one axis, tiled with
  output-channel blocks (:func:`~mlcbook.rules.tile_size.pixel_tile`), or not (0);
* ``panel``: the outermost reduce loop above a row of tiles, which share its weights from
  L1 (:func:`~mlcbook.rules.panel.panel_loops`); ``order``: the column tiles outermost (0)
  or innermost (1) of the tile loops;
* ``unroll`` (a part of the longest reduce loop unrolled) and ``reduce_order``;
  ``parallel``; ``repack`` (a matmul's weight in panels of the tile's width); and for a
  conv in NCHW, ``vector_axis`` (along the output channels instead, :mod:`.channel`).

    >>> schedule_tiled(Knobs.defaults(sch), "C", rules)     # the default register tile
"""

from __future__ import annotations

import math

from ..errors import ScheduleError
from ..schedule import Schedule
from ..tir.analysis import free_vars
from ..tir.expr import BufferLoad
from ..tir.functor import post_order_visit
from ..tir.stmt import KEEP_MATERIALIZED
from .blocks import (channel_block_axis, channel_operand, extent, panel_operand, pool_rows,
                     reuse_axes)
from .channel import repack, schedule_channel_tiled, split_row
from .knobs import Knobs
from .panel import (own_producers_level, panel_bytes, panel_fits, panel_loops,
                    shares_channel_blocks)
from .spatial import PARALLEL_WORK, row_reduction, two_level, vectorize
from .tile_size import (column_widths, panel_accumulator_bytes, pixel_tile, pixel_tiles,
                        row_tile, split_registers, stream_lanes)

#: vector registers a conv's register tile leaves free beyond its weights and one
#: broadcast (see :func:`~mlcbook.rules.tile_size.row_tile`): with none, a tile of one vector
#: of 8 output channels took 14 pixels, and spilled (the CNN's conv 1->8 at 28x28: 47 us;
#: 40 us with 4 x 2 pixels)
CONV_SPARE_REGISTERS = 1


def schedule_tiled(knobs: Knobs, name: str, rules) -> None:
    """The register-tiled reduction rule (see the module docstring). A long statistic along
    outer axes (a sum of one tensor) is summed in two levels first, its partial sums tiled."""
    sch = knobs.sch
    n_spatial = sum(iv.kind == "spatial" for iv in sch.get(sch.get_block(name)).iter_vars)
    partial = _two_level_tiled(sch, name, n_spatial, rules.long_reduction)
    if partial is not None:
        _tile(knobs, partial, n_spatial + 1, rules)
        # the sum of the partial sums is short beside them: a plain row reduction
        block = sch.get_block(name)
        row_reduction(knobs, block, len(sch.get_loops(block)) - 1, rules.long_reduction)
        return
    channel = channel_operand(sch, name, n_spatial, rules.lanes)
    if channel is not None and knobs.choice(f"{name}.vector_axis", [0, 1], hint=0):
        schedule_channel_tiled(knobs, name, rules, *channel)
        return
    _tile(knobs, name, n_spatial, rules)


def _two_level_tiled(sch: Schedule, name: str, n_spatial: int,
                     long_reduction: float) -> str | None:
    """A long statistic along outer axes (a sum of one tensor, e.g. a mean over the rows of
    a matrix) in two levels (:func:`~mlcbook.rules.spatial.two_level`), the block axis first,
    so that the partial sums tile the same output columns; returns the partial-sum block's
    name, or None. Contractions (matmul, conv: two operands indexed by the reduction) keep
    one level."""
    node = sch.get(sch.get_block(name))
    reduce_vars = {iv.var for iv in node.iter_vars if iv.kind == "reduce"}
    operands: set = set()

    def visit(n):
        if isinstance(n, BufferLoad) and reduce_vars & set(free_vars(n)):
            operands.add(id(n.buffer))

    post_order_visit(node.body, visit)
    if len(operands) != 1:
        return None
    partial = two_level(sch, sch.get_block(name), n_spatial, factor_axis=0,
                        long_reduction=long_reduction)
    if partial is None:
        return None
    loops = sch.get_loops(partial)
    sch.reorder(loops[n_spatial], *loops[:n_spatial])   # block axis outermost, as its index
    return sch.get(partial).name


def _register_tile(knobs: Knobs, name: str, rows: tuple, cols: int, target, dtype: str,
                   conv: bool, depth: int) -> tuple[tuple, int]:
    """Knobs ``cols`` (the tile's width, in lanes) and ``rows`` per reuse axis, hinted by
    :func:`~mlcbook.rules.tile_size.row_tile`; a tile holds at most twice the vector
    registers of accumulators (past the register file it keeps part of itself in L1:
    whether that pays is for measurements to say)."""
    m = target.machine
    lanes, regs = m.lanes(dtype), m.vector_registers
    hint_rows, hint_cols = row_tile(rows, cols, target, dtype, ragged=conv,
                                    spare=CONV_SPARE_REGISTERS if conv else 0, depth=depth)
    widths = sorted(set(column_widths(cols, lanes, regs - 2)) | {hint_cols})
    width = knobs.choice(f"{name}.cols", widths, hint=hint_cols)
    most = max(1, 2 * regs // split_registers(width, lanes))
    sizes = []
    for k, (e, hint) in enumerate(zip(rows, hint_rows)):
        options = sorted(set(_row_options(e, most, conv)) | {hint})
        size = knobs.choice(f"{name}.rows" + (str(k + 1) if k else ""), options, hint=hint)
        sizes.append(size)
        most = max(1, most // size)
    return tuple(sizes), width


def _row_options(e: int, most: int, ragged: bool) -> list[int]:
    """Row tile sizes along an axis of ``e``: its divisors up to ``most``; with ``ragged``,
    along a width above 3 that no size from 2 to ``most`` divides but itself (a prime: a 7x7
    map's row), every size up to ``most`` below it too (the last tile predicated)."""
    divisors = [d for d in range(1, min(e, most) + 1) if e % d == 0]
    undivided = e > 3 and divisors[1:] in ([], [e])
    return sorted(set(divisors) | set(range(2, min(most, e - 1) + 1))) \
        if ragged and undivided else divisors


def _pixel_tile(knobs: Knobs, name: str, sch: Schedule, rows: tuple, blocks: int, cols: int,
                reduce_: list, target, dtype: str):
    """Knob ``pixels``: ``(pixels, channel blocks)`` of a pixel tile, or None. The options:
    :func:`~mlcbook.rules.tile_size.pixel_tiles` of one row of the map, or of
    several when the reduction shares its channel blocks and the whole map's accumulators
    fit the panel (without it the parallel tile loops write parts of the map they cannot
    prove apart). The hint: :func:`~mlcbook.rules.tile_size.pixel_tile`."""
    shares = shares_channel_blocks(sch, reduce_, cols, dtype, target)

    def fits(p, k):
        return p == rows[0] or shares and panel_bytes(rows, (p, k), cols, dtype) \
            <= panel_accumulator_bytes(target)

    options = [t for t in pixel_tiles(rows, blocks, cols, target, dtype) if fits(*t)]
    hint = pixel_tile(rows, blocks, cols, target, dtype, ragged=shares)
    hint = hint if hint is not None and fits(*hint) else None
    if hint is not None and hint not in options:
        options.append(hint)
    if not options:
        return None
    return knobs.choice(f"{name}.pixels", [None] + options, hint=hint)


def _tile(knobs: Knobs, name: str, n_spatial: int, rules) -> None:
    sch, target = knobs.sch, rules.target
    block = sch.get_block(name)
    rows_at = reuse_axes(sch, name, n_spatial)[:2] or pool_rows(sch, name, n_spatial)
    dtype = sch.get(block).writes[0].buffer.dtype
    packed = panel_operand(sch, name, n_spatial)
    # accumulate each tile in a local buffer (registers, once compact_allocations shrinks
    # it to the tile) and write it back once, after its reduction
    write_back = sch.cache_write(block, 0, "local")
    loops = sch.get_loops(block)
    spatial, reduce_ = list(loops[:n_spatial]), list(loops[n_spatial:])
    work = math.prod(extent(sch, lp) for lp in loops)
    j = spatial[-1]
    outer = spatial[:-1]
    rows = tuple(extent(sch, outer[a]) for a in rows_at) or (1,)
    conv = len(reduce_) > 1
    b = channel_block_axis(sch, name, n_spatial, rows_at)
    flat = b is not None and _pixel_tile(knobs, name, sch, rows, extent(sch, outer[b]),
                                         extent(sch, j), reduce_, target, dtype)
    if flat:
        # the map's rows and columns as one axis of pixels, tiled with channel blocks
        (p, m), (x, y) = flat, rows_at
        bj = extent(sch, j)
        po, pi = sch.split(sch.fuse(outer[y], outer[x]), [None, p])
        outer[b], bi = sch.split(outer[b], [None, m])
        outer = outer[:y] + [po]
        rows_at, sizes, inner = [y], (p * m,), [pi, bi]
    else:
        # a matmul keeps divisor tiles, the width weight_layout packs its weights to; a
        # conv may tile a prime-width row raggedly
        sizes, bj = _register_tile(knobs, name, rows, extent(sch, j), target, dtype, conv,
                                   math.prod(extent(sch, lp) for lp in reduce_))
    jo, ji = sch.split(j, [None, bj])
    if not flat:
        tiled = {}
        for a, size in zip(rows_at, sizes):
            if size > 1:
                outer[a], tiled[a] = sch.split(outer[a], [None, size])
        inner = [tiled[a] for a in sorted(tiled)]     # in the order of the output's axes
    by_axis = dict(zip(rows_at, sizes))
    fits = panel_fits(sch, outer, rows_at, by_axis, reduce_, bj, dtype, target)
    # a pixel tile across rows of the map needs the panel
    across = bool(flat) and flat[0] != rows[0]
    panel = knobs.choice(f"{name}.panel", [1] if across else [0, 1] if fits else [0],
                         hint=int(fits))
    under = []
    if panel:
        outer, under = panel_loops(sch, outer, rows_at, by_axis, bj, dtype, target)
        tile_loops = [jo] + outer
    else:
        # column tiles outermost (0): one tile's columns of the vector operand (a panel of
        # B) stay in cache while every row tile uses them
        order = knobs.choice(f"{name}.order", [0, 1], hint=0)
        tile_loops = [jo] + outer if order == 0 else outer + [jo]
    reduce_ = _unroll_reduce(knobs, name, reduce_)
    sch.reorder(*tile_loops, *reduce_[:1], *under, *reduce_[1:], *inner, ji)
    register = target.vector_lanes(dtype)
    lanes = split_row(sch, ji, register)
    for lp in inner:
        sch.unroll(lp)
    # the parallel loop: all tile loops, or the first `at` when producers go under them
    at, producers = own_producers_level(sch, name, tile_loops) if not panel else (0, [])
    head, rest = (tile_loops[:at], tile_loops[at:]) if at else (tile_loops, [])
    fused = sch.fuse(*head) if len(head) > 1 else head[0]
    tiles = fused if not rest else sch.fuse(*rest) if len(rest) > 1 else rest[0]
    sch.reverse_compute_at(write_back, tiles)
    wb_lanes = split_row(sch, sch.get_loops(write_back)[-1], register)
    init = sch.decompose_reduction(sch.get_block(name), reduce_[0])
    for producer in producers:
        sch.compute_at(sch.get_block(producer), fused)
        vectorize(knobs, f"{producer}.at", sch.get_loops(sch.get_block(producer))[-1],
                  stream_lanes(target))
    big = work >= 2 * PARALLEL_WORK and extent(sch, fused) > 1
    if knobs.choice(f"{name}.parallel", [0, 1], hint=int(big)) and extent(sch, fused) > 1:
        sch.parallel(fused)
    # vectorized last: after every step the lane check lowers the function again for each
    # vectorized accumulation it has not judged yet, which is most of this schedule's time
    for lp in (sch.get_loops(init)[-1], wb_lanes, lanes):
        sch.vectorize(lp)
    if packed is not None and knobs.choice(f"{name}.repack", [0, 1], hint=0):
        repack(sch, name, packed, bj, rules.lanes)


def _unroll_reduce(knobs: Knobs, name: str, reduce_: list) -> list:
    """Knob ``unroll``: a part of the longest reduce loop unrolled (1: none); with it and
    several reduce loops, knob ``reduce_order``: 1 puts the split's outer part first and its
    unrolled part last (a conv then sums a block of input channels per kernel tap)."""
    sch = knobs.sch
    kbig = max(reduce_, key=lambda lp: extent(sch, lp))
    e = extent(sch, kbig)
    factor = knobs.choice(f"{name}.unroll", [f for f in (1, 2, 4, 8) if f < e and e % f == 0]
                          or [1], hint=1)
    if factor == 1:
        return reduce_
    k0, k1 = sch.split(kbig, [None, factor])
    sch.unroll(k1)
    rest = [lp for lp in reduce_ if lp is not kbig]
    if rest and knobs.choice(f"{name}.reduce_order", [0, 1], hint=0):
        return [k0, *rest, k1]
    return [x for lp in reduce_ for x in ((k0, k1) if lp is kbig else (lp,))]


def fold_epilogue(sch: Schedule, name: str) -> bool:
    """Fold spatial block ``name`` into the tile write-back that produces its input, when
    the block is elementwise in that input; whether it was folded. A block marked
    :data:`~mlcbook.tir.KEEP_MATERIALIZED` stays a block of its own (and a failed attempt,
    which renders the program for its message, is not cheap)."""
    if dict(sch.get(sch.get_block(name)).annotations).get(KEEP_MATERIALIZED):
        return False
    try:
        sch.reverse_compute_inline(sch.get_block(name))
    except ScheduleError:
        # it reads the tile at other places than its own (e.g. a stencil): own loops then
        return False
    return True


__all__ = ["schedule_tiled", "fold_epilogue", "CONV_SPARE_REGISTERS"]
