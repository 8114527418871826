"""Staging data through a cache buffer: ``cache_read`` and ``cache_write``.

``cache_read(block, i, "local")`` copies the part of the block's ``i``-th read buffer that
its readers use into a new buffer in that storage scope, and makes them read the copy;
``cache_write(block, i, "local")`` makes the block write a new buffer (an accumulator)
and copies it back after the block. Each returns the new copy block, usually moved next
to its user afterwards with compute_at / reverse_compute_at::

    C_local = sch.cache_write(sch.get_block("C"), 0, "local")
    sch.reverse_compute_at(C_local, j0)

    for i, j, k in T.grid(16, 16, 16):             for ax0, ax1 in T.grid(16, 16):
        with T.block("C"):                              with T.block("C_local"):
            ...                                             v0 = T.axis.spatial(16, ax0)
            C_local[vi, vj] = C_local[vi, vj] + ...         v1 = T.axis.spatial(16, ax1)
                                                            C[v0, v1] = C_local[v0, v1]

The cache buffer has the shape of the original (compute_at later narrows what is copied),
and the new block and buffer are both named ``<buffer>_<scope>``.
"""

from __future__ import annotations

from typing import Optional, Union

from ..tir.analysis import collect_blocks, loop_ranges
from ..tir.expr import Buffer, Const, Var
from ..tir.functor import replace_buffers
from ..tir.stmt import BlockRealize, BufferStore, SeqStmt, Stmt
from ..tir.regions import same_expr
from . import tree
from ._build import copy_nest, fresh_buffer, loop_names, splice, top_stmt
from .analysis import (accesses, load_indices, reads_any, reads_of, region, touches,
                       writes_any, writes_of)
from .errors import ArgumentTypeError, UnsupportedError
from .errors_data import (BufferIndexError, ConsumerBlockError, NotSoleProducerError,
                          SharedLoopError, StaleCacheError, StorageScopeError)
from .context import Context
from .handles import BlockRV
from .registry import schedule_primitive

#: storage scopes a cache buffer may live in
SCOPES = ("global", "local", "shared")


def pick_buffer(ctx: Context, realize: BlockRealize, index: Union[int, str], kind: str,
                step: str) -> Buffer:
    """The buffer the block reads (``kind="read"``) or writes with this index or name."""
    block = realize.block
    bufs = reads_of(block) if kind == "read" else writes_of(block)
    bufs = [b for b in bufs if not any(b is a for a in block.alloc_buffers)]
    listing = ", ".join(f"{k}: {b.name}" for k, b in enumerate(bufs)) or "none"
    label = f"block {block.name!r}"
    if isinstance(index, str):
        for b in bufs:
            if b.name == index:
                return b
        ctx.fail(BufferIndexError, f"{step}: block {block.name!r} does not {kind} a buffer named "
                 f"{index!r}.", f"pass one of the buffers it {kind}s ({listing}), by index or "
                 "name.", realize, label)
    if not isinstance(index, int) or isinstance(index, bool):
        raise ArgumentTypeError(f"{step}: the {kind} buffer index must be an int or a buffer "
                                f"name, got {type(index).__name__} {index!r:.40}")
    if not 0 <= index < len(bufs):
        ctx.fail(BufferIndexError, f"{step}: block {block.name!r} {kind}s {len(bufs)} "
                 f"buffer(s), so index {index} picks none of them.",
                 f"pass an index of its {kind} buffers ({listing}) or the buffer's name.",
                 realize, label)
    return bufs[index]


def check_scope(ctx: Context, scope: str, realize: BlockRealize, step: str) -> None:
    if not isinstance(scope, str):
        raise ArgumentTypeError(f"{step}: the storage scope must be a string such as \"local\", "
                                f"got {type(scope).__name__} {scope!r:.40}")
    if scope not in SCOPES:
        ctx.fail(StorageScopeError, f"{step}: unknown storage scope {scope!r}.",
                 f"use one of {', '.join(repr(s) for s in SCOPES)}.", realize,
                 f"block {realize.block.name!r}")


def require_root_scope(ctx: Context, realize: BlockRealize, step: str) -> BlockRealize:
    """The block's scope, which must be the function's root block: a copy placed inside
    another block would run, on a fresh buffer, once per instance of that block."""
    scope = ctx.scope_of(realize)
    if scope is not ctx.func.body:
        ctx.fail(UnsupportedError, f"{step}: block {realize.block.name!r} is inside block "
                 f"{scope.block.name!r}, and mlcbook only places copies at the top level of the "
                 "function.", f"apply {step} before blockize.", realize,
                 f"block {realize.block.name!r}")
    return scope


def _related(a: Stmt, b: Stmt) -> bool:
    """One statement holds the other (or they are the same)."""
    return tree.path_to(a, b) is not None or tree.path_to(b, a) is not None


def read_region(ctx: Context, readers: list[BlockRealize], buf: Buffer) -> list[tuple[int, int]]:
    """``(first, extent)`` per dimension of ``buf`` covering every read by ``readers``."""
    ranges = loop_ranges(ctx.func.body)
    idx = [t for r in readers for t in accesses(r, buf, "r")[0]]
    reg = region(idx, ranges, ranges) if idx else None
    out = []
    for d, size in enumerate(buf.shape):
        lo, hi = (reg[d] if reg is not None else (None, None))
        if lo is None or not (lo.is_const() and hi.is_const()):
            out.append((0, size))
            continue
        first, last = max(lo.const, 0), min(hi.const, size - 1)
        out.append((first, max(last - first + 1, 1)))
    return out


def insert_cache_read(ctx: Context, scope: BlockRealize, buf: Buffer,
                      consumers: list[BlockRealize], cache: Buffer, step: str) -> None:
    """Copy ``buf`` into ``cache`` before the first of ``consumers`` (blocks directly in
    ``scope``) and make them read the copy. Refuses if ``buf`` changes while they read."""
    blocks = tree.child_blocks(scope)
    order = [k for k, b in enumerate(blocks) if any(b is c for c in consumers)]
    tops = []
    for k in order:
        t = top_stmt(scope, blocks[k])
        if t is None:
            ctx.fail(UnsupportedError, f"{step}: block {blocks[k].block.name!r} is inside the "
                     "init of its enclosing block.", "cache the buffer outside the init.",
                     blocks[k], f"block {blocks[k].block.name!r}")
        tops.append(t)
    body = scope.block.body
    stmts = list(body.stmts) if isinstance(body, SeqStmt) else [body]
    first = min(next(p for p, s in enumerate(stmts) if s is t) for t in tops)
    last = max(next(p for p, s in enumerate(stmts) if s is t) for t in tops)
    for s in stmts[first:last + 1]:
        for b in collect_blocks(s):
            if writes_any(b.block, [buf]) and any(b is c for c in consumers):
                ctx.fail(StaleCacheError,
                         f"{step}: block {b.block.name!r} writes {buf.name} as well as reading "
                         "it, so a copy made before it runs would miss its own updates.",
                         f"cache a buffer the block only reads, or cache {buf.name} with "
                         "cache_write.", b, f"block {b.block.name!r}")
            if writes_any(b.block, [buf]):
                ctx.fail(StaleCacheError,
                         f"{step}: block {b.block.name!r} writes {buf.name} while the readers "
                         f"of the cache (such as {consumers[0].block.name!r}) still use it, so "
                         "they would read values from before that write.",
                         f"cache {buf.name} only for readers that run after its last write, "
                         "or cache the writer's output with cache_write.", b,
                         f"block {b.block.name!r}")
    region_ = read_region(ctx, consumers, buf)
    nest = copy_nest(cache.name, buf, cache, region_, loop_names(ctx.func.body))
    ids = {id(c) for c in consumers}

    def redirect(s: Stmt) -> Stmt:
        return tree.map_stmts(s, lambda x: BlockRealize(
            x.iter_values, x.predicate, replace_buffers(x.block, {buf: cache}))
            if id(x) in ids else x)

    new_scope = splice(scope, stmts[first], before=[nest], allocs=[cache], rewrite=redirect)
    ctx.replace(scope, new_scope)


@schedule_primitive("cache_read")
def cache_read(ctx: Context, block: BlockRV, read_buffer_index: Union[int, str], scope: str,
               consumer_blocks: Optional[list] = None) -> BlockRV:
    """Copy a buffer the block reads into a new buffer in ``scope`` and read it from there.

    ``read_buffer_index`` picks the buffer among the block's reads (an index, or the name);
    ``consumer_blocks`` limits which readers switch to the copy (default: every block of
    the scope that reads it). Returns the copy block ``<buffer>_<scope>``.

        A_local = sch.cache_read(sch.get_block("C"), 0, "local")
    """
    realize = ctx.block_realize(block)
    buf = pick_buffer(ctx, realize, read_buffer_index, "read", "cache_read")
    check_scope(ctx, scope, realize, "cache_read")
    outer = require_root_scope(ctx, realize, "cache_read")
    if not consumer_blocks:
        consumers = [b for b in tree.child_blocks(outer) if reads_any(b.block, [buf])]
    else:
        if not isinstance(consumer_blocks, (list, tuple)):
            raise ArgumentTypeError("cache_read: consumer_blocks must be a list of block handles")
        consumers = [ctx.block_realize(b) for b in consumer_blocks]
        for c in consumers:
            if ctx.scope_of(c) is not outer:
                ctx.fail(ConsumerBlockError, f"cache_read: block {c.block.name!r} is not in the "
                         f"same block scope as block {realize.block.name!r}.",
                         "list consumers from one scope.", c, f"block {c.block.name!r}")
            if not reads_any(c.block, [buf]):
                ctx.fail(ConsumerBlockError, f"cache_read: block {c.block.name!r} does not read "
                         f"{buf.name}, so it cannot read the cache of it.",
                         f"list only blocks that read {buf.name}.", c, f"block {c.block.name!r}")
    cache = fresh_buffer(ctx.func, f"{buf.name}_{scope}", buf, scope)
    insert_cache_read(ctx, outer, buf, consumers, cache, "cache_read")
    return ctx.block_rv(cache.name)


def exact_store(ctx: Context, realize: BlockRealize, buf: Buffer, step: str) -> tuple:
    """The index tuple ``(v0, v1, ...)`` every store of ``buf`` in the block uses: distinct
    spatial iteration variables, so the block writes exactly the box of their domains.
    Also refuses a block that reads ``buf`` without an init (it would read old values)."""
    block, name = realize.block, realize.block.name
    label = f"block {name!r}"
    stores = [s for part in (block.init, block.body) if part is not None
              for s in tree.walk(part) if isinstance(s, BufferStore) and s.buffer is buf]
    ivs = {iv.var: iv for iv in block.iter_vars}
    first = stores[0].indices if stores else ()
    ok = bool(stores) and all(len(s.indices) == len(first) and all(
        same_expr(a, b) for a, b in zip(s.indices, first)) for s in stores)
    ok = ok and all(isinstance(i, Var) and i in ivs and ivs[i].kind == "spatial"
                    and isinstance(ivs[i].extent, Const) for i in first)
    ok = ok and len({id(i) for i in first}) == len(first)
    if not ok:
        ctx.fail(UnsupportedError, f"{step} needs block {name!r} to store to "
                 f"{buf.name}[v0, v1, ...] with one spatial iteration variable per dimension, "
                 f"so that the part of {buf.name} it writes is known exactly.",
                 "apply it to a block of that form (as mb.te and T.axis.remap produce), "
                 "before blockize.", realize, label)
    loads = load_indices(block, buf)
    if loads and (block.init is None or not all(
            all(same_expr(a, b) for a, b in zip(t, first)) for t in loads)):
        why = ("reads " + buf.name + " without an init, so it uses the values " + buf.name +
               " held before it ran") if block.init is None else (
            f"reads elements of {buf.name} other than the one it writes")
        ctx.fail(NotSoleProducerError, f"{step}: block {name!r} {why}, which the new buffer "
                 "would not hold.", f"{step} a block that computes {buf.name} from scratch "
                 "(a reduction with T.init(): apply it before decompose_reduction).",
                 realize, label)
    return first


def check_sole_writer(ctx: Context, realize: BlockRealize, buf: Buffer, step: str) -> None:
    for b in collect_blocks(ctx.func.body):
        if _related(b, realize):
            continue
        if writes_any(b.block, [buf]):
            ctx.fail(NotSoleProducerError, f"{step}: block {b.block.name!r} also writes "
                     f"{buf.name}, and its values would be overwritten when the new buffer is "
                     f"copied back (or never reach block {realize.block.name!r}'s buffer).",
                     f"apply {step} to a buffer with one writer (before decompose_reduction, "
                     "which splits a block into two writers).", b, f"block {b.block.name!r}")


def insert_cache_write(ctx: Context, realize: BlockRealize, buf: Buffer, cache: Buffer,
                       step: str) -> str:
    """Make the block write ``cache`` instead of ``buf`` and copy it back right after the
    block's loop nest; returns the copy block's name."""
    block = realize.block
    check_sole_writer(ctx, realize, buf, step)
    index_vars = exact_store(ctx, realize, buf, step)
    scope = require_root_scope(ctx, realize, step)
    at = top_stmt(scope, realize)
    if at is None:
        ctx.fail(UnsupportedError, f"{step}: block {block.name!r} is inside the init of its "
                 "enclosing block.", f"apply {step} outside the init.", realize,
                 f"block {block.name!r}")
    for b in collect_blocks(at):
        if not _related(b, realize) and touches(b.block, [buf]):
            ctx.fail(SharedLoopError, f"{step}: block {b.block.name!r} uses {buf.name} inside "
                     f"the same loops as block {block.name!r}, before the copy back after "
                     "those loops, so it would read values not yet copied.",
                     f"apply {step} before moving blocks into one loop nest (compute_at, "
                     "reverse_compute_at).", b, f"block {b.block.name!r}")
    ivs = {iv.var: iv for iv in block.iter_vars}
    region_ = [(0, ivs[v].extent.value) for v in index_vars]
    new_block = replace_buffers(block, {buf: cache})
    new_realize = BlockRealize(realize.iter_values, realize.predicate, new_block)
    nest = copy_nest(cache.name, cache, buf, region_, loop_names(ctx.func.body))
    new_scope = splice(scope, at, after=[nest], allocs=[cache],
                       rewrite=lambda s: tree.replace_stmt(s, realize, new_realize)
                       if s is at else s)
    ctx.replace(scope, new_scope)
    return cache.name


@schedule_primitive("cache_write")
def cache_write(ctx: Context, block: BlockRV, write_buffer_index: Union[int, str],
                scope: str) -> BlockRV:
    """Make the block write a new buffer in ``scope`` (e.g. a "local" accumulator) and copy
    it to the original buffer after the block. Returns the copy block ``<buffer>_<scope>``.

        C_local = sch.cache_write(sch.get_block("C"), 0, "local")
        sch.reverse_compute_at(C_local, j0)
    """
    realize = ctx.block_realize(block)
    buf = pick_buffer(ctx, realize, write_buffer_index, "write", "cache_write")
    check_scope(ctx, scope, realize, "cache_write")
    cache = fresh_buffer(ctx.func, f"{buf.name}_{scope}", buf, scope)
    return ctx.block_rv(insert_cache_write(ctx, realize, buf, cache, "cache_write"))


__all__ = ["cache_read", "cache_write", "SCOPES"]
