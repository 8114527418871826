"""Which elementwise blocks a default schedule computes inside their readers
(:func:`inline_intermediates`), and the loop-nest helpers it and the default schedule share.

A fused group's bias, BatchNorm scale or residual add is its own block after legalization;
computed inline, a chain of them collapses into its last block and no intermediate buffer
is written.

    >>> sch = Schedule(fused)        # a fused group: a conv block, then bias add, then relu
    >>> inline_intermediates(sch, tiled_blocks(sch.func)[0])   # the add goes into relu
"""

from __future__ import annotations

from ..schedule import Schedule
from ..schedule.errors import ScheduleError
from ..tir.analysis import collect_blocks
from ..tir.expr import BufferLoad, PrimExpr
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import KEEP_MATERIALIZED, UNROLLED_TILE, BlockRealize, For, SeqStmt


def root_stmts(func: PrimFunc):
    body = func.body.block.body
    return list(body.stmts) if isinstance(body, SeqStmt) else [body]


def loop_nest(stmt):
    """(loops, innermost statement) of a perfect loop nest."""
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


#: the size rule of :func:`inline_intermediates`: a block whose value has more nodes than
#: this is not inlined into a reader that loads it twice or more. The loop IR shares no
#: subexpressions, so each load would compute the value again, and a chain of such blocks
#: would grow exponentially
INLINE_COPY_LIMIT = 24


def _size_and_loads(node, buf) -> tuple[int, int]:
    """(expression nodes under ``node``, loads of ``buf`` among them)."""
    count = [0, 0]

    def visit(n):
        if isinstance(n, PrimExpr):
            count[0] += 1
            count[1] += isinstance(n, BufferLoad) and n.buffer is buf
    post_order_visit(node, visit)
    return count[0], count[1]


def _keeps_own_block(sch: Schedule, block, readers: list[str]) -> bool:
    """Whether :func:`inline_intermediates` leaves the spatial ``block`` (read by the blocks
    named ``readers``) a block of its own: when it is annotated
    :data:`~mlcbook.tir.KEEP_MATERIALIZED` (its te op knows the value is read many times), or
    when it has more than :data:`INLINE_COPY_LIMIT` nodes and a reader, as it is now (blocks
    inlined into it included), loads it twice or more."""
    if dict(block.annotations).get(KEEP_MATERIALIZED):
        return True
    if _size_and_loads(block.body, None)[0] <= INLINE_COPY_LIMIT:
        return False
    buf = block.writes[0].buffer
    now = {b.block.name: b.block for b in collect_blocks(sch.func.body)}
    return any(_size_and_loads(now[u].body, buf)[1] > 1 for u in readers if u in now)


def inline_intermediates(sch: Schedule, tiled: list[str]) -> None:
    """Compute every elementwise block that writes an intermediate buffer inside the blocks
    that read it (a fused group's bias, BatchNorm scale, residual add...), last first, so a
    chain collapses into its last block. Blocks read by a tiled reduction stay: the kernel
    reads its inputs many times, and padding is cheaper copied once than tested each time.
    So do the blocks marked :data:`~mlcbook.tir.KEEP_MATERIALIZED` by their te op (a value
    it knows is reused) and, by the size rule, a block of over :data:`INLINE_COPY_LIMIT`
    nodes that a reader loads twice or more. A block marked
    :data:`~mlcbook.tir.UNROLLED_TILE` takes its (by then single) elementwise reader in
    instead, so that its loops, which its schedule unrolls, compute the finished value."""
    func = sch.func
    params = {id(p) for p in func.params}
    realizes = [node for stmt in root_stmts(func)
                for node in [loop_nest(stmt)[1]] if isinstance(node, BlockRealize)]
    readers: dict[int, list[str]] = {}
    for r in realizes:
        for region in r.block.reads:
            readers.setdefault(id(region.buffer), []).append(r.block.name)
    for r in reversed(realizes):
        block = r.block
        if any(iv.kind != "spatial" for iv in block.iter_vars) or len(block.writes) != 1:
            continue
        buf = block.writes[0].buffer
        users = readers.get(id(buf), [])
        if id(buf) in params or not users or any(u in tiled for u in users):
            continue
        if dict(block.annotations).get(UNROLLED_TILE):
            _take_in_readers(sch, buf)
            continue
        if _keeps_own_block(sch, block, users):
            continue
        try:
            sch.compute_inline(sch.get_block(block.name))
        except ScheduleError:
            continue  # e.g. a stencil over its input: it keeps its own loops


def _take_in_readers(sch: Schedule, buf) -> None:
    """Fold the blocks that now read ``buf`` into the block that writes it, where they are
    elementwise in it (``reverse_compute_inline``)."""
    for b in collect_blocks(sch.func.body)[1:]:   # the root block's accesses are all of them
        if any(r.buffer is buf for r in b.block.reads) and all(w.buffer is not buf
                                                                for w in b.block.writes):
            try:
                sch.reverse_compute_inline(sch.get_block(b.block.name))
            except ScheduleError:
                continue  # e.g. a stencil over it: it keeps its own loops
