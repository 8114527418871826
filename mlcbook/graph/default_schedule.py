"""Default schedules: what ``mb.compile`` does to each legalized PrimFunc before building it,
without tuning. Every step is an ordinary :class:`mlcbook.Schedule` primitive, so the
trace of a default schedule can be printed and replayed.

Blocks are scheduled by what they are, read from their iteration variables:

* **spatial** blocks (elementwise, injective, epilogues, padding): the innermost loop is
  vectorized, the loops around it are fused and parallelized when there is enough work (a
  big pad's only above the loop lowering cuts at its border, :func:`_schedule_pad`);
* **row reductions** (the reduced axes are innermost in memory, e.g. softmax's sums):
  reduce loops stay innermost, the spatial loops are fused and parallelized;
* **unrolled tiles** (blocks marked :data:`~mlcbook.tir.UNROLLED_TILE`, a Winograd
  transform): the loops of the tile positions split and unrolled above the vectorized
  innermost loop, where the selects on those positions fold; the loops above them fused
  and parallelized; elementwise readers (bias, ReLU) folded into the block;
* **tiled reductions** (matmul, gemm, conv, and any reduction whose innermost output axis
  is long, or short but contiguous in an operand): the output is cut into register tiles
  of ``rows x cols``, sized for the target's vector registers (:func:`register_tile`); the
  reduce loops run around each tile and the tile's columns are vectorized. The tile
  accumulates in a ``local`` buffer (``cache_write``), copied out once per tile
  (``reverse_compute_at``); ``decompose_reduction`` zeroes it before the reduce loops
  instead of testing inside them. An elementwise epilogue of the result (gemm's bias) is
  folded into that write-back (``reverse_compute_inline``), so the result is written once,
  finished. When one tile's share of the vector operand over its reduction overflows L1
  (a 3x3 conv's weights over 64 or more input channels), the outermost reduce loop goes
  above a block of tiles, which then use each input-channel block's weights from L1
  (:func:`_panel_loops`); a prime-width output row (7x7 maps) is then tiled raggedly,
  4 + 3 pixels, the last tile predicated (``row_tile(..., ragged=True)``), or, when there
  are output-channel blocks to pair, the map's pixels as one axis in tiles of 2 pixels x
  2 blocks (:func:`~mlcbook.graph.tile_size.pixel_tile`).

    >>> func = default_schedule(legalize_call("matmul", [T((64, 784)), T((784, 512))]))
"""

from __future__ import annotations

import math

from ..codegen.target import Target
from ..schedule import Schedule
from ..schedule.errors import ScheduleError
from ..tir.analysis import free_vars
from ..tir.expr import Binary, BufferLoad, bits
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import KEEP_MATERIALIZED, UNROLLED_TILE, BlockRealize
from .border import border_loop
from .inlining import inline_intermediates, loop_nest, root_stmts
from .int8_matmul import int8_acc_blocks, schedule_int8_kernel
from .tile_size import panel_accumulator_bytes, pixel_tile, row_tile, stream_lanes
from .unrolled_tile import unroll_tile
from .tile_size import register_tile  # noqa: F401 - its old home

#: parallelize a loop nest only when it does at least this many inner iterations in total
#: (a tiled reduction: twice as many), about 5 us of work on one core: a launch costs about
#: a microsecond while the pool's workers spin (they do between the kernels of a run), and
#: the chunks are claimed dynamically, so a worker that starts late costs little. On the
#: CNN of bench/e2e.py this makes its two convolutions parallel and leaves the copies,
#: pools and the small gemm serial. (It was 2^20 while a chunk's code ran up to 2.5x
#: slower than the serial loop and a late worker held up its static half.)
PARALLEL_WORK = 1 << 15
#: fewest iterations of the tile loops a producer is computed under (see
#: _own_producers_level): they become the parallel loop, which needs enough to share
PRODUCER_CHUNKS = 16
#: vector registers a conv's register tile leaves free beyond its weights and one
#: broadcast (see :func:`row_tile`): with none, a tile of one vector of 8 output channels
#: took 14 pixels, and spilled (the CNN's conv 1->8 at 28x28: 47 us; 40 us with 4 x 2 pixels)
CONV_SPARE_REGISTERS = 1
#: schedule a big pad with its border loop apart (:func:`_schedule_pad`); False fuses it like
#: any spatial block (bench/pads.py compiles both to compare them)
PAD_BORDER_LOOPS = True
#: a float reduction of at least this many terms is summed in two levels (see _two_level)
LONG_REDUCTION = 1 << 13


def _is_tiled_reduction(realize: BlockRealize, loops) -> bool:
    block = realize.block
    spatial = [iv for iv in block.iter_vars if iv.kind == "spatial"]
    reduce_ = [iv for iv in block.iter_vars if iv.kind == "reduce"]
    if not reduce_ or block.init is None or len(spatial) < 1:
        return False
    inner = spatial[-1].extent.value if hasattr(spatial[-1].extent, "value") else 0
    work = math.prod(iv.extent.value for iv in reduce_)
    # a short output row (a 7x7 conv map in NCHW) still makes a vector when the operands
    # are contiguous along it; left to the row-reduction schedule it ran ~30x slower
    short = inner >= 4 and _contiguous_along(block, spatial[-1].var)
    return (inner >= 8 or short) and work >= 4


def _contiguous_along(block, var) -> bool:
    """Whether some buffer ``block`` reads (besides its output) is indexed on its last
    axis by ``var``."""
    written = [w.buffer for w in block.writes]
    loads = []
    post_order_visit(block.body, lambda n: loads.append(n) if isinstance(n, BufferLoad) else None)
    return any(var in free_vars(n.indices[-1]) for n in loads
               if not any(n.buffer is b for b in written))


def _extent(sch: Schedule, loop) -> int:
    return sch.get(loop).extent.value


def _vectorize_inner(sch: Schedule, loop, width: int) -> list:
    """Vectorize ``loop`` (split to at most ``width`` lanes first); returns the outer loops
    made."""
    e = _extent(sch, loop)
    if e < 4:
        return [loop]
    if e <= width or (e % width and e <= 4 * width):
        sch.vectorize(loop)
        return []
    # a width that divides the extent, else full vectors with the last one predicated
    lanes = next((w for w in (width, width // 2, width // 4) if e % w == 0), width)
    outer, inner = sch.split(loop, [None, lanes])
    sch.vectorize(inner)
    return [outer]


def _parallel_outer(sch: Schedule, loops, work: int) -> None:
    if not loops:
        return
    fused = sch.fuse(*loops) if len(loops) > 1 else loops[0]
    if work >= PARALLEL_WORK and _extent(sch, fused) > 1:
        sch.parallel(fused)


def _schedule_spatial(sch: Schedule, name: str, width: int) -> None:
    block = sch.get_block(name)
    loops = sch.get_loops(block)
    if not loops:
        return
    work = math.prod(_extent(sch, lp) for lp in loops)
    border = border_loop(sch, name, loops) if work >= PARALLEL_WORK and PAD_BORDER_LOOPS \
        else None
    if border is not None:
        _schedule_pad(sch, loops, border, work, width)
        return
    loops = _without_unit_inner(sch, loops)
    if len(loops) > 1 and _extent(sch, loops[-1]) < 4:
        _unroll_short_inner(sch, loops, work)
        return
    rest = _vectorize_inner(sch, loops[-1], width)
    _parallel_outer(sch, list(loops[:-1]) + rest, work)


def _schedule_unrolled_tile(sch: Schedule, name: str, width: int, target: Target) -> None:
    """A block whose value depends on its position in a small tile (a Winograd transform):
    those positions unrolled (:func:`unroll_tile`), the innermost loop vectorized, the
    loops above fused and parallel."""
    work = math.prod(_extent(sch, lp) for lp in sch.get_loops(sch.get_block(name)))
    outer, inner = unroll_tile(sch, name, target)
    _vectorize_inner(sch, inner, width)
    _parallel_outer(sch, outer, work)


def _without_unit_inner(sch: Schedule, loops) -> list:
    """``loops`` with the innermost ones of extent 1 (a block of 1 channel, e.g. the padding
    of a 1-channel image in NCHW1c) fused into the last longer loop: the vector then runs
    along the pixels of a row rather than the whole nest being fused into one scalar loop of
    divisions and remainders."""
    loops = list(loops)
    k = len(loops)
    while k > 1 and _extent(sch, loops[k - 1]) == 1:
        k -= 1
    if k == len(loops) or _extent(sch, loops[k - 1]) == 1:
        return loops
    return loops[:k - 1] + [sch.fuse(*loops[k - 1:])]


def _schedule_pad(sch: Schedule, loops, border: int, work: int, width: int) -> None:
    """A big pad: the loops above its innermost tested one fused and parallel, that one and
    those below it left apart (the innermost vectorized, or unrolled when short), so that
    lowering cuts the tested loop at the border (:mod:`~mlcbook.tir.transform.partition_loops`):
    the interior then copies without tests, where every element of the fused loop paid
    divisions to recover its indices and a branch on the border."""
    inner = loops[-1]
    if _extent(sch, inner) < 4:
        sch.unroll(inner)
    else:
        _vectorize_inner(sch, inner, width)
    _parallel_outer(sch, list(loops[:border]), work)


def _unroll_short_inner(sch: Schedule, loops, work: int) -> None:
    """An innermost loop too short for a vector (the 3 channels of an RGB image going to
    NHWC-like blocks) is unrolled and kept out of the fused parallel loop: fused, every
    element paid a division and a remainder by it to recover its indices."""
    sch.unroll(loops[-1])
    _parallel_outer(sch, list(loops[:-1]), work)


def _schedule_row_reduction(sch: Schedule, block, n_spatial: int) -> None:
    partial = _two_level(sch, block, n_spatial)
    if partial is not None:
        # the partial sums first: one row reduction more, whose rows are the blocks
        _schedule_row_reduction(sch, partial, n_spatial + 1)
    loops = sch.get_loops(block)
    work = math.prod(_extent(sch, lp) for lp in loops)
    _parallel_outer(sch, list(loops[:n_spatial]), work)


def _two_level(sch: Schedule, block, n_spatial: int, factor_axis: int | None = None):
    """Sum a long float reduction in two levels: blocks of about sqrt(n) consecutive terms
    (``rfactor`` into partial sums, their block axis at ``factor_axis`` of the partial-sum
    buffer, default last), then the partial sums. A float32 sum of n terms in one
    running total loses up to about n rounding errors; two levels lose about 2 sqrt(n), and
    the blocks can run in parallel. Returns the partial-sum block, or None (short, integer,
    or no block size divides the reduction: then one level, as before)."""
    loops = sch.get_loops(block)
    reduce_loops = loops[n_spatial:]
    node = sch.get(block)
    n = math.prod(_extent(sch, lp) for lp in reduce_loops) if reduce_loops else 0
    if n < LONG_REDUCTION or not node.writes or not node.writes[0].buffer.dtype.startswith(
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


def _two_level_tiled(sch: Schedule, name: str, n_spatial: int) -> str | None:
    """A long statistic along outer axes (a sum of one tensor, e.g. a mean over the rows of
    a matrix) in two levels like :func:`_two_level`, the block axis first, so that the
    partial sums tile the same output columns; returns the partial-sum block's name, or None.
    Contractions (matmul, conv: two operands indexed by the reduction) keep one level."""
    block = sch.get_block(name)
    node = sch.get(block)
    reduce_vars = {iv.var for iv in node.iter_vars if iv.kind == "reduce"}
    operands: set = set()

    def visit(n):
        if isinstance(n, BufferLoad) and reduce_vars & set(free_vars(n)):
            operands.add(id(n.buffer))

    post_order_visit(node.body, visit)
    if len(operands) != 1:
        return None
    partial = _two_level(sch, block, n_spatial, factor_axis=0)
    if partial is None:
        return None
    loops = sch.get_loops(partial)
    sch.reorder(loops[n_spatial], *loops[:n_spatial])   # block axis outermost, as its index
    return sch.get(partial).name


def _block_size(n: int) -> int | None:
    """The divisor of ``n`` nearest to sqrt(n), if it is at least 64."""
    root = math.isqrt(n)
    best = max((d for k in range(1, root + 1) if n % k == 0 for d in (k, n // k)
                if d <= 4 * root), key=lambda d: -abs(d - root), default=None)
    return best if best is not None and best >= 64 else None


def reuse_axes(sch: Schedule, name: str, n_spatial: int) -> list[int]:
    """The spatial axes a register tile can unroll along, innermost first: those (before
    the vectorized last axis) that the vector operand does not depend on, so that each
    vector load serves every row of the tile (matmul: rows of A; conv in NCHW: output
    channels; conv in NCHW16c: output columns, then output rows)."""
    block = sch.get(sch.get_block(name))
    ivs = [iv.var for iv in block.iter_vars[:n_spatial]]
    written = [w.buffer for w in block.writes]
    used: set = set()

    def visit(n):
        if isinstance(n, BufferLoad) and not any(n.buffer is b for b in written):
            names = set(free_vars(n))
            if ivs[-1] in names:
                used.update(names)

    post_order_visit(block.body, visit)
    return [k for k in reversed(range(n_spatial - 1)) if ivs[k] not in used]


def _pool_rows(sch: Schedule, name: str, n_spatial: int) -> list[int]:
    """``[the axis outside the vectorized one]`` for a max or min over a window of one
    operand (a max pool), else ``[]``: no load serves two outputs, but a tile of outputs
    along the row keeps independent running maxima instead of one chain through the
    instruction's latency (max pools of ResNet and SqueezeNet in NCHW16c ran 1.4-1.65x faster
    on Zen 5; average pools, sums, gained at stride 2 and lost at stride 1: left alone)."""
    block = sch.get(sch.get_block(name))
    written = {id(w.buffer) for w in block.writes}
    operands = {id(r.buffer) for r in block.reads if id(r.buffer) not in written}
    value = getattr(block.body, "value", None)
    extreme = isinstance(value, Binary) and value.op in ("max", "min")
    return [n_spatial - 2] if extreme and len(operands) == 1 and n_spatial >= 2 else []


def reuse_axis(sch: Schedule, name: str, n_spatial: int) -> int | None:
    """The innermost of :func:`reuse_axes`, or None."""
    axes = reuse_axes(sch, name, n_spatial)
    return axes[0] if axes else None


def _channel_block_axis(sch: Schedule, name: str, n_spatial: int, rows_at: list[int]):
    """The output axis just outside a conv's map (its output-channel blocks in NCHW16c),
    which :func:`pixel_tile` may take into a register tile: when ``rows_at`` are the
    map's columns and rows, adjacent and just outside the vectorized axis, and the vector
    operand depends on that axis (each block has its own weights), else None."""
    if rows_at != [n_spatial - 2, n_spatial - 3] or n_spatial < 4:
        return None
    b = rows_at[1] - 1
    return None if b in reuse_axes(sch, name, n_spatial) else b


def _split_tile_row(sch: Schedule, loop, lanes: int):
    """Split the columns of a tile row into registers of ``lanes`` (unrolled) when they
    split evenly; returns the loop of one register's lanes, to vectorize. (Split by any
    other width, a tile row sized for one AVX-512 register became two AVX2-sized halves:
    twice the accumulators, spilled.)"""
    e = _extent(sch, loop)
    if not (e > lanes and e % lanes == 0):
        return loop
    outer, inner = sch.split(loop, [None, lanes])
    sch.unroll(outer)
    return inner


def _schedule_tiled(sch: Schedule, name: str, n_spatial: int, target: Target):
    block = sch.get_block(name)
    rows_at = reuse_axes(sch, name, n_spatial)[:2] or _pool_rows(sch, name, n_spatial)
    dtype = sch.get(block).writes[0].buffer.dtype
    # accumulate each tile in a local buffer (registers, once compact_allocations shrinks
    # it to the tile) and write it back once, after its reduction
    write_back = sch.cache_write(block, 0, "local")
    loops = sch.get_loops(block)
    spatial, reduce_ = list(loops[:n_spatial]), list(loops[n_spatial:])
    work = math.prod(_extent(sch, lp) for lp in loops)
    j = spatial[-1]
    outer = spatial[:-1]
    # a reduction over several loops (a conv) may tile a prime-width row raggedly; a
    # matmul keeps divisor tiles, the width weight_layout packs its weights to
    rows = tuple(_extent(sch, outer[a]) for a in rows_at) or (1,)
    conv = len(reduce_) > 1
    sizes, bj = row_tile(rows, _extent(sch, j), target, dtype, ragged=conv,
                         spare=CONV_SPARE_REGISTERS if conv else 0)
    # a ragged row only under a panel (below): a tile of several blocks of weights over the
    # whole sum would not stay in L1 (a 1x1/2 conv's 256 channels: 32 KiB; measured slower
    # on Zen 3); a row too short to hide the FMA latency always
    b = _channel_block_axis(sch, name, n_spatial, rows_at)
    flat = b is not None and pixel_tile(
        rows, _extent(sch, outer[b]), _extent(sch, j), target, dtype,
        ragged=shares_channel_blocks(sch, reduce_, _extent(sch, j), dtype, target))
    if flat and flat[0] != rows[0] and _panel_bytes(rows, flat, _extent(sch, j), dtype) \
            > panel_accumulator_bytes(target):
        # tiles across rows of the map need the panel, whose accumulators must fit: without
        # it the parallel tile loop writes parts of the map it cannot prove apart
        flat = None
    if flat:
        # the map's rows and columns as one axis of pixels, tiled with channel blocks
        (p, m), (x, y) = flat, rows_at
        bj = _extent(sch, j)
        po, pi = sch.split(sch.fuse(outer[y], outer[x]), [None, p])
        outer[b], bi = sch.split(outer[b], [None, m])
        outer = outer[:y] + [po]
        rows_at, sizes, inner = [y], (p * m,), [pi, bi]
    jo, ji = sch.split(j, [None, bj])
    if not flat:
        tiled = {}
        for a, size in zip(rows_at, sizes):
            if size > 1:
                outer[a], tiled[a] = sch.split(outer[a], [None, size])
        inner = [tiled[a] for a in sorted(tiled)]     # in the order of the output's axes
    panel = _panel_loops(sch, outer, rows_at, dict(zip(rows_at, sizes)), reduce_, bj, dtype,
                         target)
    # column tiles outermost: one tile's columns of the vector operand (a panel of B) stay
    # in cache while every row tile uses them
    if panel:
        outer, under = panel
        sch.reorder(jo, *outer, reduce_[0], *under, *reduce_[1:], *inner, ji)
    else:
        sch.reorder(jo, *outer, *reduce_, *inner, ji)
    register = target.vector_lanes(dtype)
    lanes = _split_tile_row(sch, ji, register)
    for lp in inner:
        sch.unroll(lp)
    tile_loops = [jo] + outer
    # the parallel loop: all tile loops, or the first `at` when producers go under them
    at, producers = _own_producers_level(sch, name, tile_loops) if not panel else (0, [])
    head, rest = (tile_loops[:at], tile_loops[at:]) if at else (tile_loops, [])
    fused = sch.fuse(*head) if len(head) > 1 else head[0]
    tiles = fused if not rest else sch.fuse(*rest) if len(rest) > 1 else rest[0]
    sch.reverse_compute_at(write_back, tiles)
    wb_lanes = _split_tile_row(sch, sch.get_loops(write_back)[-1], register)
    init = sch.decompose_reduction(block, reduce_[0])
    for producer in producers:
        sch.compute_at(sch.get_block(producer), fused)
        _vectorize_inner(sch, sch.get_loops(sch.get_block(producer))[-1], stream_lanes(target))
    if work >= 2 * PARALLEL_WORK and _extent(sch, fused) > 1:
        sch.parallel(fused)
    # vectorized last: after every step the lane check lowers the function again for each
    # vectorized accumulation it has not judged yet, which is most of this schedule's time
    for lp in (sch.get_loops(init)[-1], wb_lanes, lanes):
        sch.vectorize(lp)
    return fused


#: fewest reduction steps a register tile takes between loading its accumulators from
#: cache and storing them back (a 3x3 conv in NCHW16c: 144; in NCHW only its 9 taps,
#: which ran 1.4-1.7x slower hoisted)
PANEL_STEPS = 64


def _panel_bytes(rows: tuple, flat: tuple, cols: int, dtype: str) -> int:
    """Bytes of the accumulators of one row of pixel tiles ``flat`` = (pixels, blocks)
    over a map of ``rows``: the whole map's, as its pixels are one axis."""
    (p, m), n = flat, math.prod(rows)
    return -(-n // p) * p * m * cols * max(1, bits(dtype) // 8)


def shares_channel_blocks(sch: Schedule, reduce_: list, cols: int, dtype: str,
                          target: Target) -> bool:
    """Whether the outermost of a reduction's loops goes above a block of register tiles
    (see :func:`_panel_loops`): a tile's share of the vector operand over the whole
    reduction overflows the target's L1, and each step of that loop leaves a tile enough of
    the rest."""
    steps = math.prod(_extent(sch, lp) for lp in reduce_)
    return len(reduce_) >= 2 \
        and steps * cols * max(1, bits(dtype) // 8) > target.machine.l1d_bytes \
        and steps // _extent(sch, reduce_[0]) >= PANEL_STEPS


def _panel_loops(sch: Schedule, outer: list, rows_at: list[int], sizes: dict, reduce_: list,
                 cols: int, dtype: str, target: Target):
    """``(outer, under)`` when the tiles of a reduction over several loops should share
    each step of its outermost reduce loop, else None. A 3x3 conv's register tile reads
    all the weights of its output channels over its reduction (128 channels in: 72 KiB),
    more than L1 holds, so each tile streamed them from L2. Taking the outermost reduce
    loop (the input-channel blocks) above a block of tiles (a whole output row, and as
    many rows as :func:`panel_accumulator_bytes` of accumulators hold while the parallel loop
    keeps at least :data:`PRODUCER_CHUNKS` chunks) lets them all use that channel block's
    9 KiB of weights from L1; the tiles accumulate in cache, and in registers only over
    the rest of the reduction, at least :data:`PANEL_STEPS` of it. ``under`` are the tile
    loops taken below the reduce loop, ``outer`` those left above it (the row axis split
    if only part of it goes under); ``sizes`` maps each of ``rows_at`` to its register
    tile's size."""
    if not rows_at or not shares_channel_blocks(sch, reduce_, cols, dtype, target):
        return None
    item = max(1, bits(dtype) // 8)
    x = rows_at[0]
    row = _extent(sch, outer[x]) * sizes.get(x, 1) * cols * item   # one row of tiles
    most = panel_accumulator_bytes(target)
    if row > most:
        return None
    outer = list(outer)
    under = [outer[x]]
    if len(rows_at) > 1:
        y = rows_at[1]
        ey = _extent(sch, outer[y])
        chunks = math.prod(_extent(sch, lp) for a, lp in enumerate(outer) if a not in (x, y))
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


def _own_producers_level(sch: Schedule, name: str, tile_loops: list) -> tuple[int, list[str]]:
    """``(k, producers)``: the blocks that only block ``name`` reads (its padding) are
    computed under the first ``k`` of its tile loops, fused, when their iterations there
    part the producers' work without computing any of it twice (a depthwise conv pads one
    channel's plane per channel, in cache just before its tiles read it, instead of
    writing the whole padded tensor out and reading it back); ``(0, [])`` if no level
    does (a conv whose every tile reads all channels). The loops above the producers
    are the parallel ones: at least :data:`PRODUCER_CHUNKS` iterations of them, so that a
    batch of a few images does not become a parallel loop of a few chunks."""
    realizes = _root_realizes(sch.func)
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
        if out in mine and out not in params and not any(_reads_any(o.block, {out})
                                                          for o in others):
            producers.append(b.name)
    for k in range(len(tile_loops), 0, -1) if producers else ():
        if math.prod(_extent(sch, lp) for lp in tile_loops[:k]) < PRODUCER_CHUNKS:
            break
        if all(_computes_once_at(sch, p, tile_loops[:k]) for p in producers):
            return k, producers
    return 0, []


def _computes_once_at(sch: Schedule, producer: str, loops: list) -> bool:
    """Whether ``producer`` computed at ``loops`` (fused) does its work once, tried on a
    copy of the schedule."""
    work = math.prod(_extent(sch, lp) for lp in sch.get_loops(sch.get_block(producer)))
    trial = sch.copy()
    try:
        trial.compute_at(trial.get_block(producer),
                         trial.fuse(*loops) if len(loops) > 1 else loops[0])
    except ScheduleError:
        return False
    return math.prod(_extent(trial, lp)
                     for lp in trial.get_loops(trial.get_block(producer))) <= work


def _root_realizes(func: PrimFunc) -> list:
    return [node for stmt in root_stmts(func) for node in [loop_nest(stmt)[1]]
            if isinstance(node, BlockRealize)]


def _reads_any(block, buffer_ids: set) -> bool:
    return any(id(r.buffer) in buffer_ids for r in block.reads)


def _fold_epilogue(sch: Schedule, name: str) -> bool:
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


def tiled_blocks(func: PrimFunc) -> tuple[list[str], set[int]]:
    """Names of the tiled-reduction blocks at the root, and ids of the buffers they write."""
    tiled, results = [], set()
    for stmt in root_stmts(func):
        loops, node = loop_nest(stmt)
        if isinstance(node, BlockRealize) and _is_tiled_reduction(node, loops):
            tiled.append(node.block.name)
            results.update(id(w.buffer) for w in node.block.writes)
    return tiled, results


def default_schedule(func: PrimFunc, target=None) -> PrimFunc:
    """``func`` with the default schedule applied to every block (see the module docstring);
    ``target`` (default: this machine) sizes register tiles."""
    if int8_acc_blocks(func):
        return schedule_int8_kernel(func, target, PARALLEL_WORK)
    target = Target(target or "llvm")
    sch = Schedule(func)
    inline_intermediates(sch, tiled_blocks(func)[0])
    func = sch.func
    tiled, tiled_results = tiled_blocks(func)
    done: set[str] = set()
    for stmt in root_stmts(func):
        loops, node = loop_nest(stmt)
        if not isinstance(node, BlockRealize) or node.block.name in done:
            continue
        block = node.block
        name = block.name
        n_spatial = sum(iv.kind == "spatial" for iv in block.iter_vars)
        if name in tiled:
            partial = _two_level_tiled(sch, name, n_spatial)
            if partial is None:
                _schedule_tiled(sch, name, n_spatial, target)
            else:
                # the sum of the partial sums is short beside them: a plain row reduction
                _schedule_tiled(sch, partial, n_spatial + 1, target)
                block = sch.get_block(name)
                _schedule_row_reduction(sch, block, len(sch.get_loops(block)) - 1)
        elif dict(block.annotations).get(UNROLLED_TILE):
            _schedule_unrolled_tile(sch, name, stream_lanes(target), target)
        elif n_spatial == len(block.iter_vars):
            if not (_reads_any(block, tiled_results) and _fold_epilogue(sch, name)):
                _schedule_spatial(sch, name, stream_lanes(target))
        else:
            _schedule_row_reduction(sch, sch.get_block(name), n_spatial)
        done.add(name)
    return sch.func
