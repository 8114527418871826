"""Search spaces: a schedule *with decisions*, generated for any PrimFunc from rules keyed on
its blocks.

A space is a generator of schedules. Each of its knobs is a sampling step
(``sample_perfect_tile`` or ``sample_categorical``) recorded in the trace, and named after
the block and what it decides (``"C.rows"``, ``"C.order"``); a point of the space is the
dict of those decisions. Generating a point runs the rules with the decisions it has and
draws the ones it lacks, so every point is a schedule the primitives accepted (legal by
construction) or a :class:`~mlcbook.schedule.ScheduleError` raised before any measurement.

    >>> space = Space(func)                       # the rules read func's blocks
    >>> p = space.sample(seed=0)                  # a random point
    >>> p.decisions                               # {'C.rows': [64, 4], 'C.cols': [...], ...}
    >>> print(p.trace)                            # the schedule, sampling steps included
    >>> q = space.mutate(p, random.Random(1))     # one knob redrawn
    >>> space.point(p.decisions).func             # the same program again

The rules, like :mod:`mlcbook.graph.default_schedule` (whose block analysis they share):

* **tiled reductions** (matmul, conv, batched matmul): a register tile of ``rows`` (along
  the axis the vector operand does not depend on) by ``cols`` vectors of ``lanes`` lanes,
  accumulated in a ``local`` buffer and written back once per tile; knobs: the tile of
  every axis (``rows``, ``cols``, ``lanes``; at most twice the vector registers of
  accumulators), a cache-level ``block`` of row tiles, the ``order`` of the tile loops,
  the unrolled part of the longest reduce loop and (several reduce loops) their
  ``reduce_order``, whether the tile loops run in ``parallel``, and (for a weight read as
  ``W[k, j]``, or ``W[b, k, j]`` in a batched matmul) whether it is ``repack``-ed into
  panels of the tile's width. A reduction over several loops (a conv) also chooses
  whether its outermost reduce loop (the input channels, or their blocks in NCHW16c) goes
  above the ``block`` of row tiles, a ``panel`` whose weights the block shares from L1,
  and, along a prime-width row (a 7x7 map), a ``ragged`` row tile that does not divide
  it (4 + 3 pixels, the last tile predicated);
* a conv-like block (a weight ``W[f, c, ky, kx]``) also chooses its ``vector_axis``: along
  the output row as above, or along the output channels ``f``, with the weight repacked
  into blocks ``W[f // lanes, c, ky, kx, f % lanes]``, the accumulators laid out channel
  last and a tile of ``cols`` channel vectors by ``rows`` output columns (the input value
  broadcast);
* **spatial** blocks: the vector width and how many outer loops are fused and run in
  parallel (``depth``); an elementwise epilogue of a tiled result is folded into the
  tile's write-back instead;
* **row reductions**: how many spatial loops are fused and run in parallel;
* **unrolled tiles** (a Winograd transform, :data:`~mlcbook.tir.UNROLLED_TILE`): the tile
  positions unrolled as the default schedule does; knob: the parallel depth.

Most knobs carry a **hint**, the decision the default schedule
(:mod:`mlcbook.graph.default_schedule`) takes there: ``space.default_point()`` is the point
of every hint (the default schedule as far as the space can express it) and
``space.neighbours(p)`` the points one categorical knob away from ``p``; a search starts
from them (:mod:`.search`).

Vector widths and register budgets come from the target (``Target.vector_lanes()``,
``Target.vector_registers``), so the same rules make AVX2 and AVX-512 spaces.
"""

from __future__ import annotations

import math
import random
from typing import Callable, Optional

from ..codegen.target import Target
from ..errors import ScheduleError
from ..graph.border import border_loop
from ..graph.default_schedule import (PARALLEL_WORK, inline_intermediates, loop_nest,
                                      reuse_axis, root_stmts, shares_channel_blocks,
                                      tiled_blocks)
from ..graph.tile_size import row_tile as default_row_tile
from ..graph.tile_size import panel_accumulator_bytes, stream_lanes
from ..graph.unrolled_tile import unroll_tile
from ..schedule import Schedule
from ..tir.analysis import free_vars
from ..tir.expr import BufferLoad, Const, Var, bits
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import UNROLLED_TILE, BlockRealize
from .errors import SpaceError, TuneArgumentError
from .knobs import Knobs, Point

#: keep this many vector registers free of accumulators (the broadcast and a weight vector)
SPARE_REGISTERS = 2


#: a rule schedules one block: ``rule(knobs, block_name, space)``
Rule = Callable[["Knobs", str, "Space"], None]


class Space:
    """The schedules of ``func`` that the rules generate for ``target`` (default: this CPU).

    ``rules`` maps a block kind (``"tiled"``, ``"spatial"``, ``"row_reduction"``, or a kind
    returned by a custom ``classify(block, loops)``) to a rule; the defaults are this
    module's. A rule schedules one block through :class:`Knobs`.
    """

    def __init__(self, func: PrimFunc, target=None, rules: Optional[dict] = None,
                 classify: Optional[Callable] = None):
        if not isinstance(func, PrimFunc):
            raise TuneArgumentError(f"a space needs a PrimFunc, got {type(func).__name__}")
        self.func = func
        self.target = target if isinstance(target, Target) else Target(target or "llvm")
        self.lanes = self.target.vector_lanes("float32")
        self.registers = self.target.vector_registers
        self.rules = {**DEFAULT_RULES, **(rules or {})}
        self.classify = classify or classify_block

    # --- points ------------------------------------------------------------------------
    def point(self, decisions: dict, *, seed: int = 0, lenient: bool = False,
              checks: bool = True, redraw: Optional[tuple] = None,
              hinted: bool = False) -> Point:
        """The point with these decisions (missing ones drawn with ``seed``, or with
        ``hinted`` taken from the rules' hints); raises a ScheduleError if they do not fit
        (unless ``lenient``: then they are drawn anew).

        ``checks=False`` builds it without the schedule's legality checks (several times
        faster): a proposal to score, which must be built again with checks before it is
        measured (the search does)."""
        sch = Schedule(self.func, seed=seed, checks=checks)
        knobs = Knobs(sch, dict(decisions), lenient, redraw=redraw, hinted=hinted)
        self._generate(knobs)
        return Point(dict(knobs.chosen), sch.trace, sch.func, frozenset(knobs.single),
                     dict(knobs.categories))

    def default_point(self) -> Point:
        """The point whose every knob takes its rule's hint: the default schedule's
        decisions where the space can express them (the tiled rule: the register tile of
        :func:`~mlcbook.graph.default_schedule.row_tile` along one reuse axis, ragged along
        a conv's prime-width row, column tiles outermost, the reduction not unrolled, a
        conv's channel panel where a tile's weights overflow L1, the tiles in parallel when
        the work is large, no repack); a knob without a hint is drawn with seed 0."""
        return self.point({}, hinted=True)

    def neighbours(self, p: Point) -> list:
        """The points that differ from ``p`` in one categorical knob (each other candidate
        of each): the knobs that depend on it take their hints, or are drawn if they
        have none. Those that the rules reject are left out."""
        out = []
        for name in sorted(p.categories):
            for k in range(p.categories[name]):
                if k == p.decisions.get(name) or name in p.fixed:
                    continue
                try:
                    q = self.point({**p.decisions, name: k}, lenient=True, hinted=True)
                except ScheduleError:
                    continue
                if q.key != p.key:
                    out.append(q)
        return out

    def sample(self, seed: int, checks: bool = True) -> Point:
        """A random point."""
        return self.point({}, seed=seed, checks=checks)

    def mutate(self, p: Point, rng: random.Random, checks: bool = True) -> Point:
        """``p`` with one knob drawn again (knobs that depend on it are redrawn if needed)."""
        names = [n for n in sorted(p.decisions) if n not in p.fixed]
        if not names:
            return p
        q = p
        for _ in range(8):  # a redraw may land on the same value: draw again
            name = rng.choice(names)
            fixed = {k: v for k, v in p.decisions.items() if k != name}
            q = self.point(fixed, seed=rng.randrange(2**31), lenient=True, checks=checks,
                           redraw=(name, p.decisions[name]))
            if q.key != p.key:
                break
        return q

    # --- the rules, block by block -------------------------------------------------------
    def _generate(self, knobs: Knobs) -> None:
        sch = knobs.sch
        inline_intermediates(sch, tiled_blocks(sch.func)[0])
        tiled, results = tiled_blocks(sch.func)
        for stmt in root_stmts(sch.func):
            loops, node = loop_nest(stmt)
            if not isinstance(node, BlockRealize):
                continue
            block = node.block
            if block.name not in tiled and any(id(r.buffer) in results for r in block.reads) \
                    and all(iv.kind == "spatial" for iv in block.iter_vars):
                if fold_epilogue(sch, block.name):
                    continue
            tiles = block.name in tiled and _contiguous_along_last_spatial(block)
            kind = "tiled" if tiles else self.classify(node, loops)
            rule = self.rules.get(kind)
            if rule is None:
                raise TuneArgumentError(
                    f"block {block.name!r} is of kind {kind!r}, which no rule schedules; "
                    f"Instead: pass rules={{{kind!r}: my_rule}} (known: {sorted(self.rules)})")
            rule(knobs, block.name, self)


def classify_block(realize: BlockRealize, loops) -> str:
    """``"unrolled_tile"`` for a block marked :data:`~mlcbook.tir.UNROLLED_TILE` (a Winograd
    transform), ``"spatial"`` when every iteration variable is spatial, else
    ``"row_reduction"`` (tiled reductions are recognized before, as the default schedule
    does)."""
    if dict(realize.block.annotations).get(UNROLLED_TILE):
        return "unrolled_tile"
    if all(iv.kind == "spatial" for iv in realize.block.iter_vars):
        return "spatial"
    return "row_reduction"


def _contiguous_along_last_spatial(block) -> bool:
    """Whether some buffer the block reads has its innermost spatial variable in its last
    index, so that vectors along that axis are (nearly) contiguous loads (matmul's
    ``B[k, j]``, a conv's ``X[c, y + ky, x + kx]``; not a row sum's ``A[i, j]`` with ``j``
    reduced)."""
    spatial = [iv.var for iv in block.iter_vars if iv.kind == "spatial"]
    if not spatial:
        return False
    last = spatial[-1]
    written = {id(w.buffer) for w in block.writes}
    found = []

    def visit(n):
        if isinstance(n, BufferLoad) and id(n.buffer) not in written and n.indices \
                and any(v is last for v in free_vars(n.indices[-1])):
            found.append(n)

    post_order_visit(block.body, visit)
    return bool(found)


def fold_epilogue(sch: Schedule, name: str) -> bool:
    """Fold elementwise block ``name`` into the tile write-back that produces its input;
    whether it could (a stencil over the tile cannot)."""
    try:
        sch.reverse_compute_inline(sch.get_block(name))
    except ScheduleError:
        return False
    return True


def _extent(sch: Schedule, loop) -> int:
    return sch.get(loop).extent.value


def _parallel_depth(knobs: Knobs, name: str, loops: list, work: int,
                    hint: Optional[int] = None) -> None:
    """Fuse the outermost ``depth`` loops and run them in parallel (0: serial); ``hint``: the
    default schedule's depth, if not all of them when there is enough work."""
    sch = knobs.sch
    if not loops:
        return
    depths = list(range(len(loops) + 1))
    big = work >= PARALLEL_WORK
    # favour parallel loops when there is enough work for threads, serial ones otherwise
    probs = [2.0 if (d > 0) == big else 1.0 for d in depths]
    if hint is None:
        hint = len(loops) if big else 0
    depth = knobs.choice(f"{name}.depth", depths, probs, hint=hint)
    if depth == 0:
        return
    fused = sch.fuse(*loops[:depth]) if depth > 1 else loops[0]
    if _extent(sch, fused) > 1:
        sch.parallel(fused)


def schedule_spatial(knobs: Knobs, name: str, space: Space) -> None:
    """Vector width (a divisor of the innermost extent, up to four registers) and parallel
    depth of an elementwise/injective block."""
    sch = knobs.sch
    loops = sch.get_loops(sch.get_block(name))
    if not loops:
        return
    work = math.prod(_extent(sch, lp) for lp in loops)
    # a big pad: the default schedule's depth stops above its innermost tested loop
    border = border_loop(sch, name, loops) if work >= PARALLEL_WORK else None
    inner = _extent(sch, loops[-1])
    widths = [w for w in (space.lanes // 2, space.lanes, 2 * space.lanes, 4 * space.lanes)
              if w >= 4 and inner % w == 0]
    outer = list(loops[:-1])
    if inner <= space.lanes and inner >= 4:
        sch.vectorize(loops[-1])
    elif widths:
        w = knobs.choice(f"{name}.vector", widths,
                         hint=max((w for w in widths if w <= stream_lanes(space.target)),
                                  default=widths[0]))
        o, i = sch.split(loops[-1], [None, w])
        sch.vectorize(i)
        outer.append(o)
    else:
        outer.append(loops[-1])
    _parallel_depth(knobs, name, outer, work, border)


def schedule_unrolled_tile(knobs: Knobs, name: str, space: Space) -> None:
    """The tile positions unrolled as the default schedule does
    (:func:`~mlcbook.graph.unrolled_tile.unroll_tile`), the innermost loop vectorized;
    knob: the parallel depth of the loops above."""
    sch = knobs.sch
    work = math.prod(_extent(sch, lp) for lp in sch.get_loops(sch.get_block(name)))
    outer, inner = unroll_tile(sch, name, space.target)
    # a block of channels, as the default vectorizes it
    if 4 <= _extent(sch, inner) <= stream_lanes(space.target):
        sch.vectorize(inner)
    _parallel_depth(knobs, name, outer, work)


def schedule_row_reduction(knobs: Knobs, name: str, space: Space) -> None:
    """Parallel depth over the spatial loops of a reduction whose reduced axes are innermost."""
    sch = knobs.sch
    block = sch.get_block(name)
    loops = sch.get_loops(block)
    n_spatial = sum(iv.kind == "spatial" for iv in sch.get(block).iter_vars)
    work = math.prod(_extent(sch, lp) for lp in loops)
    _parallel_depth(knobs, name, list(loops[:n_spatial]), work)


def _vectorize_row(sch: Schedule, loop, lanes: int) -> None:
    """Vectorize a tile row one register at a time (the registers unrolled)."""
    e = _extent(sch, loop)
    if e > lanes and e % lanes == 0:
        outer, inner = sch.split(loop, [None, lanes])
        sch.unroll(outer)
        sch.vectorize(inner)
    else:
        sch.vectorize(loop)


def _panel_operand(sch: Schedule, name: str, n_spatial: int) -> Optional[tuple[str, int]]:
    """``(weight, batch dims)`` of the weight a panel repack applies to: a parameter read as
    ``W[b..., k, j]`` with ``j`` the block's innermost spatial variable, ``k`` a reduce
    variable and ``b...`` (a batched matmul's batch, none for a matmul) other spatial ones."""
    block = sch.get(sch.get_block(name))
    ivs = block.iter_vars
    j = ivs[n_spatial - 1].var
    reduce_vars = {id(iv.var) for iv in ivs[n_spatial:]}
    batch_vars = {id(iv.var) for iv in ivs[:n_spatial - 1]}
    params = {id(p) for p in sch.func.params}
    found: list = []

    def visit(n):
        if isinstance(n, BufferLoad) and len(n.indices) >= 2 and id(n.buffer) in params:
            *lead, a, b = n.indices
            if isinstance(a, Var) and id(a) in reduce_vars and b is j \
                    and all(isinstance(e, Var) and id(e) in batch_vars for e in lead):
                found.append((n.buffer.name, len(lead)))

    post_order_visit(block.body, visit)
    return found[0] if len(set(found)) == 1 else None


def _unroll_and_order_reduce(knobs: Knobs, name: str, reduce_: list) -> list:
    """Split the longest reduce loop with a part to unroll (knob ``unroll``) and, when there
    are several reduce loops, choose their order (knob ``reduce_order``: 0 keeps them as
    written, 1 puts the outer part of the split first, its unrolled part last: a conv sums
    over a block of input channels per kernel tap then)."""
    sch = knobs.sch
    kbig = max(reduce_, key=lambda lp: _extent(sch, lp))
    k0, k1 = sch.split(kbig, knobs.tile(f"{name}.unroll", kbig, 2, 8, hint=1))
    if _extent(sch, k1) > 1:
        sch.unroll(k1)
    rest = [lp for lp in reduce_ if lp is not kbig]
    if rest and knobs.choice(f"{name}.reduce_order", [0, 1], hint=0):
        return [k0, *rest, k1]
    return [x for lp in reduce_ for x in ((k0, k1) if lp is kbig else (lp,))]


def _tile_limit(space: "Space") -> int:
    """The most accumulator vectors of a register tile: twice the vector registers. A tile
    larger than the register file keeps part of itself in L1 (the hand-written best matmul
    of bench/ does, at 94% of peak): whether that pays is for the measurements to say."""
    return 2 * space.registers


def _finish_tile(knobs: Knobs, name: str, space: Space, write_back, tile_loops: list,
                 reduce_: list, inner: list, lanes, work: int, under: tuple = ()) -> None:
    """The common end of both tile rules: reorder, unroll the tile, vectorize its lanes, write
    the accumulators back once per tile, run the tiles in parallel (knob ``parallel``).
    ``under``: tile loops that go below the outermost reduce loop (a panel)."""
    sch = knobs.sch
    sch.reorder(*tile_loops, *reduce_[:1], *under, *reduce_[1:], *inner, lanes)
    for lp in inner:
        sch.unroll(lp)
    sch.vectorize(lanes)
    fused = sch.fuse(*tile_loops) if len(tile_loops) > 1 else tile_loops[0]
    sch.reverse_compute_at(write_back, fused)
    wb_loops = sch.get_loops(write_back)
    if wb_loops[-1].var is not sch.get_loops(sch.get_block(name))[0].var:
        _vectorize_row(sch, wb_loops[-1], space.lanes)
    sch.decompose_reduction(sch.get_block(name), reduce_[0])
    par = knobs.choice(f"{name}.parallel", [1, 0],
                       [3.0, 1.0] if work >= PARALLEL_WORK else [1, 1],
                       hint=int(work >= 2 * PARALLEL_WORK))
    if par and _extent(sch, fused) > 1:
        sch.parallel(fused)


def schedule_tiled(knobs: Knobs, name: str, space: Space) -> None:
    """The register-tiled reduction rule (see the module docstring)."""
    sch = knobs.sch
    block = sch.get_block(name)
    n_spatial = sum(iv.kind == "spatial" for iv in sch.get(block).iter_vars)
    channel = _channel_operand(sch, name, n_spatial, space.lanes)
    if channel is not None and knobs.choice(f"{name}.vector_axis", [0, 1], hint=0):
        schedule_channel_tiled(knobs, name, space, *channel)
        return
    packed = _panel_operand(sch, name, n_spatial)
    write_back = sch.cache_write(block, 0, "local")
    loops = sch.get_loops(block)
    spatial, reduce_ = list(loops[:n_spatial]), list(loops[n_spatial:])
    work = math.prod(_extent(sch, lp) for lp in loops)
    limit = _tile_limit(space)
    # the vector axis: lanes (<= one register), then registers per tile row
    j = spatial[-1]
    extent_j = _extent(sch, j)
    widths = [w for w in (space.lanes, space.lanes // 2, space.lanes // 4)
              if w >= 2 and extent_j % w == 0]
    if widths:
        jo, lanes = sch.split(j, [None, knobs.choice(f"{name}.lanes", widths,
                                                     hint=space.lanes)])
    else:
        jo, lanes = sch.split(j, knobs.tile(f"{name}.lanes", j, 2, space.lanes))
    row = reuse_axis(sch, name, n_spatial)
    rows_loop = spatial[row] if row is not None and _extent(sch, spatial[row]) > 1 else None
    # the default schedule's register tile: the hints of rows and cols (a reduction over
    # several loops, a conv, may tile a prime-width row raggedly, as the default does)
    n_rows = _extent(sch, rows_loop) if rows_loop else 1
    convlike = len(reduce_) > 1
    (hint_rows,), hint_width = default_row_tile((n_rows,), extent_j, space.target,
                                                ragged=convlike)
    most = space.registers - SPARE_REGISTERS
    row_tile = knobs.tile(f"{name}.rows", rows_loop, 2, most,
                          hint=hint_rows) if rows_loop else None
    ragged = _ragged_sizes(n_rows, most) if rows_loop and convlike else []
    if ragged:
        # knob "ragged": a row tile that does not divide the row, the last one predicated
        # (0: the perfect tile of "rows")
        size = knobs.choice(f"{name}.ragged", [0] + ragged,
                            hint=hint_rows if hint_rows in ragged else 0)
        row_tile = [None, size] if size else row_tile
    rows = int(row_tile[1]) if row_tile else 1
    j0, cols = sch.split(jo, knobs.tile(f"{name}.cols", jo, 2, max(1, limit // rows),
                                        hint=max(1, hint_width // _extent(sch, lanes))))
    _check_tile(name, rows, _extent(sch, cols), limit)
    outer = spatial[:-1]
    inner = []
    tile_loops = None
    under = []
    if row_tile:
        i0, i1 = sch.split(rows_loop, row_tile)
        inner = [i1]
        width = _extent(sch, cols) * _extent(sch, lanes)
        dtype = sch.get(sch.get_block(name)).writes[0].buffer.dtype
        panel = len(reduce_) > 1 and knobs.choice(
            f"{name}.panel", [0, 1],
            hint=int(_default_panel(sch, reduce_, i0, rows, width, dtype, space.target)))
        # a cache-level tile over the row tiles (knob "block"): with order 2 a block of
        # rows stays in cache while the column tiles pass over it; under a panel, the
        # block shares each step of the outermost reduce loop (the default: a whole row)
        ia, ib = sch.split(i0, knobs.tile(f"{name}.block", i0, 2, 64,
                                          hint=_extent(sch, i0) if panel else 1))
        before = [ia if lp is rows_loop else lp for lp in outer]
        order = 0 if panel else knobs.choice(f"{name}.order", [0, 1, 2], hint=0)
        if panel:
            tile_loops, under = [j0] + before, [ib]
        elif order == 2:
            tile_loops = before + [j0, ib]
        else:
            outer = [x for lp in outer for x in ((ia, ib) if lp is rows_loop else (lp,))]
    if tile_loops is None:
        if not row_tile:
            order = knobs.choice(f"{name}.order", [0, 1], hint=0)
        tile_loops = [j0] + outer if order == 0 else outer + [j0]
    reduce_ = _unroll_and_order_reduce(knobs, name, reduce_)
    _finish_tile(knobs, name, space, write_back, tile_loops, reduce_, inner + [cols], lanes,
                 work, under)
    if packed is not None:
        width = int(sch.get(cols).extent.value) * int(sch.get(lanes).extent.value)
        if knobs.choice(f"{name}.repack", [0, 1], hint=0):
            _repack(sch, name, packed, width, space.lanes)


def _ragged_sizes(extent: int, most: int) -> list[int]:
    """Row tiles that do not divide ``extent``, offered when it is a prime above 3 (a 7x7
    or 13x13 map's row): from 2 to ``most`` rows, below the extent."""
    if extent <= 3 or any(extent % d == 0 for d in range(2, math.isqrt(extent) + 1)):
        return []
    return list(range(2, min(most, extent - 1) + 1))


def _default_panel(sch: Schedule, reduce_: list, row_tiles, rows: int, width: int,
                   dtype: str, target: Target) -> bool:
    """Whether the default schedule takes the outermost reduce loop above a row of register
    tiles: the reduction shares its channel blocks
    (:func:`~mlcbook.graph.default_schedule.shares_channel_blocks`) and a row of tiles
    accumulates within :func:`~mlcbook.graph.tile_size.panel_accumulator_bytes`."""
    item = max(1, bits(dtype) // 8)
    return shares_channel_blocks(sch, reduce_, width, dtype, target) \
        and _extent(sch, row_tiles) * rows * width * item <= panel_accumulator_bytes(target)


def _check_tile(name: str, rows: int, cols: int, limit: int) -> None:
    if rows * cols > limit:
        raise SpaceError(f"block {name!r}: a register tile of {rows} x {cols} vectors is "
                         f"larger than {limit} accumulators; Instead: draw smaller rows or cols")


def _channel_operand(sch: Schedule, name: str, n_spatial: int, lanes: int):
    """``(weight, axis)`` when the block could vectorize along a spatial axis other than
    the last one: a parameter ``weight`` read as ``W[s, r, r...]`` with ``s`` the spatial
    variable of ``axis`` (extent a multiple of ``lanes``) and two or more reduce variables
    after it, that no other operand depends on: a conv's output channels, ``W[f, c, ky,
    kx]`` (a matmul's ``A[i, k]`` would qualify with one reduce variable, but its rows
    tile better along ``j``)."""
    block = sch.get(sch.get_block(name))
    ivs = block.iter_vars
    reduce_vars = {id(iv.var) for iv in ivs[n_spatial:]}
    spatial = {id(iv.var): k for k, iv in enumerate(ivs[:n_spatial - 1])}
    params = {id(p) for p in sch.func.params}
    written = {id(w.buffer) for w in block.writes}
    found: list = []
    others: list = []

    def visit(n):
        if not isinstance(n, BufferLoad) or id(n.buffer) in written:
            return
        idx = n.indices
        if id(n.buffer) in params and len(idx) > 2 and isinstance(idx[0], Var) \
                and id(idx[0]) in spatial \
                and all(isinstance(e, Var) and id(e) in reduce_vars for e in idx[1:]):
            found.append((n.buffer.name, spatial[id(idx[0])], idx[0]))
        else:
            others.append(n)

    post_order_visit(block.body, visit)
    if len(found) != 1:
        return None
    buf, axis, var = found[0]
    if not isinstance(ivs[axis].extent, Const) or ivs[axis].extent.value % lanes \
            or any(v is var for o in others for v in free_vars(o)):
        return None
    return buf, axis


def schedule_channel_tiled(knobs: Knobs, name: str, space: Space, weight: str,
                           axis: int) -> None:
    """The tile rule vectorized along ``axis`` (a conv's output channels): the weight
    repacked to a blocked layout ``W[s // lanes, ..., s % lanes]`` (contiguous vectors),
    the accumulators laid out with ``s`` last, a tile of ``cols`` vectors of channels by
    ``rows`` along the last spatial axis (an output row: the input value is broadcast);
    the knobs ``cols``, ``rows``, ``unroll``, ``reduce_order``, ``parallel``."""
    sch = knobs.sch
    block = sch.get_block(name)
    lanes = space.lanes
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
    work = math.prod(_extent(sch, lp) for lp in loops)
    limit = _tile_limit(space)
    s0, vec = sch.split(spatial[axis], [None, lanes])
    sa, cols = sch.split(s0, knobs.tile(f"{name}.cols", s0, 2, space.registers - SPARE_REGISTERS))
    width = spatial[-1]
    wa, rows = sch.split(width, knobs.tile(f"{name}.rows", width, 2,
                                           max(1, limit // _extent(sch, cols))))
    _check_tile(name, _extent(sch, rows), _extent(sch, cols), limit)
    tile_loops = [sa if lp is spatial[axis] else wa if lp is width else lp for lp in spatial]
    reduce_ = _unroll_and_order_reduce(knobs, name, reduce_)
    _finish_tile(knobs, name, space, write_back, tile_loops, reduce_, [rows, cols], vec, work)


def _repack(sch: Schedule, name: str, operand: tuple[str, int], width: int,
            lanes: int) -> None:
    """Lay ``buf[b..., k, j]`` out as panels ``[b..., j // width, k, j % width]``: each
    tile's columns of the weight contiguous (rows of a wide weight are a power-of-two bytes
    apart, so a tile's column strip would map to few cache sets), repacked once, the
    panels in parallel."""
    buf, n_batch = operand
    lead = [f"b{k}" for k in range(n_batch)]
    sch.transform_layout(sch.get_block(name), buf,
                         f"lambda {', '.join(lead + ['k', 'j'])}: "
                         f"({', '.join(lead + [f'j // {width}', 'k', f'j % {width}'])})")
    *batch, rows, cols = sch.get_loops(sch.get_block(f"{buf}_packed"))
    panel, col = sch.split(cols, [None, width])
    sch.reorder(*batch, panel, rows, col)
    _vectorize_row(sch, col, lanes)
    outer = sch.fuse(*batch, panel) if batch else panel
    if _extent(sch, outer) > 1:
        sch.parallel(outer)


DEFAULT_RULES: dict = {"tiled": schedule_tiled, "spatial": schedule_spatial,
                       "row_reduction": schedule_row_reduction,
                       "unrolled_tile": schedule_unrolled_tile}

__all__ = ["Space", "Rule", "DEFAULT_RULES", "classify_block",
           "schedule_tiled", "schedule_spatial", "schedule_row_reduction",
           "schedule_unrolled_tile", "fold_epilogue",
           "SPARE_REGISTERS"]
