"""Building blocks for primitives that add blocks and buffers: names taken in a scope,
inferred regions, copy nests, and splicing statements into a block scope.

    >>> nest = copy_nest("A_local", src=A, dst=A_local, region=[(0, 16), (0, 16)], taken=names)
    >>> body = splice(scope_realize, before=top_stmt, stmts=[nest], allocs=[A_local])

A copy nest is what cache_read, cache_write, pad_einsum and transform_layout insert::

    for ax0, ax1 in T.grid(16, 16):
        with T.block("A_local"):
            v0 = T.axis.spatial(16, ax0)
            v1 = T.axis.spatial(16, ax1)
            A_local[v0, v1] = A[v0, v1]
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

from ..tir.analysis import collect_blocks
from ..tir.expr import Binary, Buffer, Const, PrimExpr, Var
from ..tir.names import fresh_name, numbered_names
from ..tir.regions import infer_regions
from ..tir.simplify import simplify
from ..tir.stmt import (Block, BlockRealize, BufferRegion, BufferStore, For, IterVar, Range,
                        SeqStmt, Stmt, seq)
from . import tree
from .analysis import accesses, region


def block_names(root: Stmt) -> set:
    return {b.block.name for b in collect_blocks(root)}


def buffer_names(func) -> set:
    """Names of the function's parameters and of every buffer a block allocates."""
    names = {p.name for p in func.params}
    for b in collect_blocks(func.body):
        names.update(x.name for x in b.block.alloc_buffers)
    return names


def loop_names(root: Stmt) -> set:
    return {s.loop_var.name for s in tree.loops_under(root)}


def fresh_buffer(func, base: str, like: Buffer, scope: str) -> Buffer:
    """A buffer shaped like ``like`` in ``scope``, named ``base`` or ``base_1``, ... so that
    no buffer or block of ``func`` has the name."""
    taken = buffer_names(func) | block_names(func.body)
    return Buffer(fresh_name(base, taken), like.shape, like.dtype, scope)


def with_regions(block: Block) -> Block:
    """The block with reads and writes inferred from its body, as the script parser does."""
    reads, writes = infer_regions(block.body, block.init, block.iter_vars, block.alloc_buffers)
    return replace(block, reads=reads, writes=writes)


def copy_nest(name: str, src: Buffer, dst: Buffer, region: list[tuple[int, int]],
              taken_loops: set,
              value: Optional[Callable[[list[Var]], PrimExpr]] = None) -> Stmt:
    """Loops over ``region`` (``(first, extent)`` per dimension of ``dst``) and a block
    ``name`` storing ``dst[v] = src[v]`` (or ``value(vs)``) for each point ``v``.

    Iteration variable ``v_d`` has the domain ``[0, dst.shape[d])`` and is bound to
    ``first + ax_d``, so that compute_at can later narrow the nest to a tile.
    """
    loop_vars = [Var(n) for n in numbered_names("ax", len(region), taken_loops)]
    ivs = [IterVar(Var(f"v{d}"), Const(dst.shape[d], "int32"), "spatial")
           for d in range(len(region))]
    vs = [iv.var for iv in ivs]
    rhs = src[tuple(vs)] if value is None else value(vs)
    body = BufferStore(dst, rhs, tuple(vs))
    block = with_regions(Block(name, tuple(ivs), (), (), body))
    bindings = [lv if first == 0 else lv + first for lv, (first, _) in zip(loop_vars, region)]
    stmt: Stmt = BlockRealize(tuple(bindings), Const(True, "bool"), block)
    for lv, (_, ext) in reversed(list(zip(loop_vars, region))):
        stmt = For(lv, ext, stmt)
    return stmt


def top_stmt(scope: BlockRealize, node: Stmt) -> Optional[Stmt]:
    """The statement of ``scope``'s body (an element of its SeqStmt) that holds ``node``;
    None when ``node`` is in the scope's init instead."""
    body = scope.block.body
    for s in (body.stmts if isinstance(body, SeqStmt) else (body,)):
        if tree.path_to(s, node) is not None:
            return s
    return None


def splice(scope: BlockRealize, at: Stmt, before: list[Stmt] = (), after: list[Stmt] = (),
           allocs: list[Buffer] = (),
           rewrite: Callable[[Stmt], Stmt] = lambda s: s) -> BlockRealize:
    """``scope`` with ``before`` and ``after`` placed around its top statement ``at``, every
    top statement passed through ``rewrite``, and ``allocs`` added to its allocations."""
    body = scope.block.body
    stmts = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    out: list[Stmt] = []
    for s in stmts:
        if s is at:
            out.extend(before)
            out.append(rewrite(s))
            out.extend(after)
        else:
            out.append(rewrite(s))
    block = replace(scope.block, body=seq(*out),
                    alloc_buffers=scope.block.alloc_buffers + tuple(allocs))
    return BlockRealize(scope.iter_values, scope.predicate, block)


def relaxed_regions(bufs: list[Buffer], parts: list, kind: str, ranges: dict) -> tuple:
    """What ``parts`` (statements, None skipped) read (``kind="r"``) or write (``"w"``) of
    each buffer, with every loop and block iteration variable defined inside them relaxed
    over its range; the variables of ``ranges`` stay symbolic. A dimension whose extent is
    not constant covers the whole buffer; a buffer ``parts`` never writes is left out."""
    out = []
    for buf in bufs:
        idx, inner = [], {}
        for part in parts:
            if part is not None:
                found, rng = accesses(part, buf, kind)
                idx += found
                inner.update(rng)
        if not idx and kind == "w":
            continue
        all_ranges = {**ranges, **inner}
        reg = region(idx, inner, all_ranges) if idx else None
        dims = []
        for d, size in enumerate(buf.shape):
            lo, hi = reg[d] if reg is not None else (None, None)
            if lo is None or not (hi - lo).is_const():
                dims.append(Range(0, size))
            else:
                dims.append(Range(simplify(lo.to_expr(), all_ranges), (hi - lo).const + 1))
        out.append(BufferRegion(buf, tuple(dims)))
    return tuple(out)


def conjuncts(pred: PrimExpr) -> list[PrimExpr]:
    """``a and b and c`` as ``[a, b, c]``; ``True`` as ``[]``."""
    if tree.is_true(pred):
        return []
    if isinstance(pred, Binary) and pred.op == "and":
        return conjuncts(pred.a) + conjuncts(pred.b)
    return [pred]


def all_of(preds: list[PrimExpr]) -> PrimExpr:
    out: PrimExpr = Const(True, "bool")
    for p in preds:
        out = p if tree.is_true(out) else out & p
    return out
