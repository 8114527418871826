"""What a block is, read from its iteration variables and the buffers it reads: the facts the
schedule rules dispatch on and size their tiles by.

    >>> kind_of(realize, loops)          # "tiled", "unrolled_tile", "spatial", "row_reduction"
    >>> reuse_axes(sch, "C", 2)          # [0]: matmul's rows share each vector of B
"""

from __future__ import annotations

import math

from ..schedule import Schedule
from ..tir.analysis import free_vars
from ..tir.expr import Binary, BufferLoad, Const, Var
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import UNROLLED_TILE, BlockRealize
from .inlining import loop_nest, root_stmts


def extent(sch: Schedule, loop) -> int:
    """The constant extent of ``loop``."""
    return sch.get(loop).extent.value


def is_tiled_reduction(realize: BlockRealize, loops=None) -> bool:
    """Whether a block is a reduction to tile in registers (matmul, conv, a long sum along
    outer axes): its innermost output axis is long, or short but contiguous in an operand."""
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


def kind_of(realize: BlockRealize, loops=None) -> str:
    """The rule a block takes: ``"tiled"`` (:func:`is_tiled_reduction`, with vectors along
    its last output axis contiguous in some operand: not a sum along rows), ``"unrolled_tile"``
    (marked :data:`~mlcbook.tir.UNROLLED_TILE`, a Winograd transform), ``"spatial"`` (every
    iteration variable spatial), else ``"row_reduction"``."""
    if is_tiled_reduction(realize, loops) and _contiguous_along(realize.block,
                                                                _last_spatial(realize.block)):
        return "tiled"
    if dict(realize.block.annotations).get(UNROLLED_TILE):
        return "unrolled_tile"
    if all(iv.kind == "spatial" for iv in realize.block.iter_vars):
        return "spatial"
    return "row_reduction"


def _last_spatial(block):
    return [iv.var for iv in block.iter_vars if iv.kind == "spatial"][-1]


def root_realizes(func: PrimFunc) -> list:
    """The blocks at the root of ``func``, in order."""
    return [node for stmt in root_stmts(func) for node in [loop_nest(stmt)[1]]
            if isinstance(node, BlockRealize)]


def tiled_blocks(func: PrimFunc) -> tuple[list[str], set[int]]:
    """Names of the tiled-reduction blocks at the root, and ids of the buffers they write."""
    tiled, results = [], set()
    for stmt in root_stmts(func):
        loops, node = loop_nest(stmt)
        if isinstance(node, BlockRealize) and is_tiled_reduction(node, loops):
            tiled.append(node.block.name)
            results.update(id(w.buffer) for w in node.block.writes)
    return tiled, results


def reads_any(block, buffer_ids: set) -> bool:
    """Whether ``block`` reads any of the buffers with these ids."""
    return any(id(r.buffer) in buffer_ids for r in block.reads)


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


def pool_rows(sch: Schedule, name: str, n_spatial: int) -> list[int]:
    """``[the axis outside the vectorized one]`` for a block without :func:`reuse_axes`
    whose row tile still pays, else ``[]``:

    * a max or min over a window of one operand (a max pool): no load serves two outputs,
      but a tile of outputs along the row keeps independent running maxima instead of one
      chain through the instruction's latency (max pools of ResNet and SqueezeNet in
      NCHW16c ran 1.4-1.65x faster on Zen 5; average pools, sums, gained at stride 2 and
      lost at stride 1: left alone);
    * a product of vectors one of which does not move along the row (a depthwise conv in
      blocks: its weights), which each of the tile's pixels then shares."""
    if n_spatial < 2:
        return []
    block = sch.get(sch.get_block(name))
    written = {id(w.buffer) for w in block.writes}
    operands = {id(r.buffer) for r in block.reads if id(r.buffer) not in written}
    value = getattr(block.body, "value", None)
    extreme = isinstance(value, Binary) and value.op in ("max", "min")
    if extreme and len(operands) == 1:
        return [n_spatial - 2]
    ivs = [iv.var for iv in block.iter_vars[:n_spatial]]
    vectors: list = []

    def visit(n):
        if isinstance(n, BufferLoad) and id(n.buffer) not in written:
            names = set(free_vars(n))
            if ivs[-1] in names:
                vectors.append(names)

    post_order_visit(block.body, visit)
    return [n_spatial - 2] if len(vectors) > 1 and any(ivs[-2] not in v for v in vectors) \
        else []


def transposed_axis(sch: Schedule, name: str) -> tuple[int, bool] | None:
    """``(axis, direct)``: the output axis along which a copy's one operand is contiguous,
    when that is not the output's last axis (a transposing copy: ``to_blocked`` reads NCHW
    along the width and writes blocks of channels; ``from_blocked`` the other way), and
    whether the operand's last index is that axis's variable itself (``to_blocked``'s
    width, not ``from_blocked``'s ``c % 16``); else None."""
    block = sch.get(sch.get_block(name))
    written = {id(w.buffer) for w in block.writes}
    loads: list = []
    post_order_visit(block.body, lambda n: loads.append(n) if isinstance(n, BufferLoad)
                     and id(n.buffer) not in written else None)
    if len({id(n.buffer) for n in loads}) != 1 or not all(n.indices for n in loads) \
            or any(iv.kind != "spatial" for iv in block.iter_vars):
        return None
    last = {v for n in loads for v in free_vars(n.indices[-1])}
    ivs = [iv.var for iv in block.iter_vars]
    axes = [k for k, v in enumerate(ivs[:-1]) if v in last]
    if len(ivs) < 2 or ivs[-1] in last or len(axes) != 1:
        return None
    return axes[0], all(n.indices[-1] is ivs[axes[0]] for n in loads)


def channel_block_axis(sch: Schedule, name: str, n_spatial: int, rows_at: list[int]):
    """The output axis just outside a conv's map (its output-channel blocks in NCHW16c),
    which a pixel tile (:func:`~mlcbook.rules.tile_size.pixel_tile`) may take into a register
    tile: when ``rows_at`` are the map's columns and rows, adjacent and just outside the
    vectorized axis, and the vector operand depends on that axis (each block has its own
    weights), else None."""
    if rows_at != [n_spatial - 2, n_spatial - 3] or n_spatial < 4:
        return None
    b = rows_at[1] - 1
    return None if b in reuse_axes(sch, name, n_spatial) else b


def channel_operand(sch: Schedule, name: str, n_spatial: int, lanes: int):
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


def panel_operand(sch: Schedule, name: str, n_spatial: int):
    """``(weight, batch dims)`` of the weight a panel repack applies to: a parameter read as
    ``W[b..., k, j]`` with ``j`` the block's innermost spatial variable, ``k`` a reduce
    variable and ``b...`` (a batched matmul's batch, none for a matmul) other spatial ones;
    else None."""
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


__all__ = ["extent", "is_tiled_reduction", "kind_of", "root_realizes", "tiled_blocks",
           "reads_any", "reuse_axes", "pool_rows", "transposed_axis", "channel_block_axis",
           "channel_operand",
           "panel_operand"]
