"""Read and write regions of a block whose script leaves out ``T.reads``/``T.writes``.

The regions are read off the block's body (and init), as TVM does: each buffer the block
loads is read, each buffer it stores is written, in order of first access, except buffers
allocated by the block or inside it. Per dimension, a region is the point ``A[vi]`` when
every access uses the same index and that index is computed from the block's iteration
variables alone; otherwise it is the whole dimension ``A[0:n]`` (an index that moves with a
loop inside the block, loads from a buffer, or differs between accesses).

    >>> reads, writes = infer_regions(block_body, None, iter_vars, ())
"""

from __future__ import annotations

from .arith import expr_key
from .expr import Buffer, BufferLoad, Const, PrimExpr, Var
from .functor import Visitor, post_order_visit
from .stmt import Allocate, Block, BufferRegion, BufferStore, IterVar, Range, Stmt


def infer_regions(body: Stmt, init: Stmt | None, iter_vars: tuple[IterVar, ...],
                  alloc_buffers: tuple[Buffer, ...]) -> tuple[tuple, tuple]:
    """``(reads, writes)`` of a block with this body, init, domain and allocations."""
    reads: dict[int, tuple[Buffer, list]] = {}
    writes: dict[int, tuple[Buffer, list]] = {}
    local = {id(b) for b in alloc_buffers}

    def record(table, buf, indices):
        if id(buf) not in local:
            table.setdefault(id(buf), (buf, []))[1].append(indices)

    class _Accesses(Visitor):
        # buffers allocated inside the body do not exist outside the block
        def visit_Block(self, n: Block):
            local.update(id(b) for b in n.alloc_buffers)
            self.generic_visit(n)

        def visit_Allocate(self, n: Allocate):
            local.add(id(n.buffer))
            self.generic_visit(n)

        def visit_BufferLoad(self, n: BufferLoad):
            record(reads, n.buffer, n.indices)
            self.generic_visit(n)

        def visit_BufferStore(self, n: BufferStore):
            record(writes, n.buffer, n.indices)
            self.generic_visit(n)

    for stmt in (init, body):
        if stmt is not None:
            _Accesses().visit(stmt)
    for table in (reads, writes):
        for key in local & table.keys():
            del table[key]
    own = {id(iv.var) for iv in iter_vars}
    return (tuple(_cover(b, uses, own) for b, uses in reads.values()),
            tuple(_cover(b, uses, own) for b, uses in writes.values()))


def _cover(buf: Buffer, uses: list, own: set) -> BufferRegion:
    ranges = []
    for dim, size in enumerate(buf.shape):
        first = uses[0][dim]
        if all(same_expr(first, u[dim]) for u in uses) and _only_uses(first, own):
            ranges.append(Range(first, Const(1, first.dtype)))
        else:
            ranges.append(Range(Const(0, "int32"), Const(size, "int32")))
    return BufferRegion(buf, tuple(ranges))


def _only_uses(e: PrimExpr, var_ids: set) -> bool:
    # an index that loads (A[B[vi]]) may read a buffer that exists only inside the block
    outside = []
    post_order_visit(e, lambda n: outside.append(n) if isinstance(n, BufferLoad) or (
        isinstance(n, Var) and id(n) not in var_ids) else None)
    return not outside


def same_expr(a: PrimExpr, b: PrimExpr) -> bool:
    """The same expression over the same variables (unlike structural equality, which would
    let ``vi`` match ``vj``)."""
    return a is b or expr_key(a) == expr_key(b)
