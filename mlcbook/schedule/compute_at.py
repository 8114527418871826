"""Moving a block into another block's loops: ``compute_at`` and ``reverse_compute_at``.

``compute_at(Y, j0)`` moves producer Y under consumer C's loop ``j0``: each iteration of
``j0`` first computes the part of Y that C reads in that iteration, then C uses it::

    for i0, j0 in T.grid(4, 4):              # C's tile loops
        for ax0, ax1, ax2 in T.grid(32, 32, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i0 * 32 + ax0)   # only the tile C needs
                ...
        for i1, j1 in T.grid(32, 32):
            with T.block("C"): ...

``reverse_compute_at(C, j0)`` does the opposite: consumer C moves under its producer's
loop, and computes what that iteration has just produced. Both compute the region from
the index expressions (:mod:`.analysis`) and refuse when they cannot prove it covers what
is needed.
"""

from __future__ import annotations

from ..tir.analysis import collect_blocks, free_vars, loop_ranges
from ..tir.arith import Atoms, Linear, affine
from ..tir.expr import Const, PrimExpr, Var
from ..tir.functor import substitute
from ..tir.names import numbered_names
from ..tir.simplify import simplify
from ..tir.stmt import Block, BlockRealize, BufferStore, For, SeqStmt, Stmt, seq
from . import tree
from ._build import loop_names
from .analysis import (accesses, covers, load_indices, reads_of, region, touches, writes_any,
                       writes_of)
from .errors import (ComputeLocationError, CoverageError, NotProducerConsumerError,
                     OutputBlockError, UnsupportedError)
from .context import Context
from .handles import BlockRV, LoopRV
from .registry import schedule_primitive
from .requires import require_bounded, require_no_predicate, require_same_scope


def _order(ctx: Context, scope: BlockRealize, realize: BlockRealize, loop: For):
    """(blocks of the scope, index of ``realize``, indices of the blocks under ``loop``)."""
    blocks = tree.child_blocks(scope)
    me = next(k for k, b in enumerate(blocks) if b is realize)
    under = [k for k, b in enumerate(blocks) if tree.path_to(loop, b) is not None]
    return blocks, me, under


def _store_vars(ctx: Context, realize: BlockRealize, what: str) -> tuple:
    """The buffer the block writes and, per dimension, the iteration variable indexing it."""
    block = realize.block
    written = writes_of(block)
    name = block.name
    if len(written) != 1:
        ctx.fail(UnsupportedError, f"{what} needs block {name!r} to write exactly one buffer, "
                 f"but it writes {len(written)}.", "split the block's work into blocks that "
                 "write one buffer each.", realize, f"block {name!r}")
    buf = written[0]
    stores = [s for part in (block.init, block.body) if part is not None
              for s in tree.walk(part) if isinstance(s, BufferStore)]
    ivs = {iv.var: iv for iv in block.iter_vars}
    first = stores[0].indices if stores else ()
    ok = bool(stores) and all(
        len(s.indices) == len(first) and all(a is b for a, b in zip(s.indices, first))
        for s in stores)
    ok = ok and all(isinstance(i, Var) and i in ivs and ivs[i].kind == "spatial" for i in first)
    ok = ok and len({id(i) for i in first}) == len(first)
    if not ok:
        ctx.fail(UnsupportedError, f"{what} needs block {name!r} to store to "
                 f"{buf.name}[v0, v1, ...] with one spatial iteration variable per dimension, so "
                 "that the part of the buffer needed tells which instances to run.",
                 "use a block of that form (as mb.te and T.axis.remap produce).", realize,
                 f"block {name!r}")
    return buf, first


def _build(ctx: Context, block: Block, dims: dict, body_for_names: Stmt,
           preserve_unit_loops: bool, ranges: dict, atoms: Atoms) -> Stmt:
    """Loops and a BlockRealize running ``block`` with each iteration variable ``v`` over
    ``dims[v] = (lo, extent)`` (missing: its whole domain); a predicate keeps it in domain."""
    names = iter(numbered_names("ax", len(block.iter_vars), loop_names(body_for_names)))
    loops: list[tuple[Var, int]] = []
    values: list[PrimExpr] = []
    conds: list[PrimExpr] = []
    back = dict(atoms.exprs)
    for iv in block.iter_vars:
        dom = iv.extent.value
        lo, ext = dims.get(iv.var, (Linear(), dom))
        lo_e = substitute(lo.to_expr(), back)
        if ext == 1 and not preserve_unit_loops:
            value = lo_e
        else:
            ax = Var(next(names), iv.var.dtype)
            loops.append((ax, ext))
            value = ax if lo.is_const() and lo.const == 0 else lo_e + ax
        lo_b = lo.bounds(ranges)
        if lo_b is None or lo_b[0] < 0:
            conds.append(value >= 0)
        if lo_b is None or lo_b[1] + ext - 1 > dom - 1:
            conds.append(value < dom)
        values.append(value)
    sranges = {**ranges, **{v: (0, e - 1) for v, e in loops}}
    values = [simplify(v, sranges) for v in values]
    pred: PrimExpr = Const(True, "bool")
    for c in conds:
        pred = c if tree.is_true(pred) else pred & c
    stmt: Stmt = BlockRealize(tuple(values), simplify(pred, sranges), block)
    for ax, ext in reversed(loops):
        stmt = For(ax, ext, stmt)
    return stmt


def _dims_from(ctx: Context, reg, index_vars, block: Block, realize, step: str) -> dict:
    dims = {}
    extents = {iv.var: iv.extent.value for iv in block.iter_vars}
    for v, (lo, hi) in zip(index_vars, reg):
        width = hi - lo
        if v is None:
            continue
        if not width.is_const():
            ctx.fail(UnsupportedError, f"{step}: the part of the buffer needed per iteration "
                     f"has a size that changes from iteration to iteration ({lo.to_expr()} to "
                     f"{hi.to_expr()}).", "choose a loop whose iterations need equal-sized "
                     "parts.", realize, f"block {block.name!r}")
        if lo.is_const():
            first, last = max(lo.const, 0), min(lo.const + width.const, extents[v] - 1)
            dims[v] = (Linear(const=first), max(last - first + 1, 1))
        else:
            dims[v] = (lo, min(width.const + 1, extents[v]))
    return dims


def _taken_out(ctx: Context, realize: BlockRealize, loop: For) -> tuple:
    """The function body without ``realize``, the loop in it, its loop ranges, the loop and
    those around it (fixed per iteration), the ranges of the others, and the atoms."""
    body = tree.replace_stmt(ctx.func.body, realize, None)
    loop1 = tree.find_loop(body, loop.loop_var)
    ranges = loop_ranges(body)
    fixed = {lp.loop_var for lp in tree.loops_between(tree.path_to(body, loop1))} | {loop1.loop_var}
    relax_ranges = {v: r for v, r in ranges.items() if v not in fixed}
    return body, loop1, ranges, fixed, relax_ranges, Atoms(ranges)


def _require_intermediate(ctx: Context, realize: BlockRealize, buf, lname: str) -> None:
    """Producer ``realize`` writes an intermediate buffer ``buf`` (not a parameter), and has
    an init if it accumulates: compute_at may compute a part of it twice."""
    P, name = realize.block, realize.block.name
    if any(buf is p for p in ctx.func.params):
        ctx.fail(OutputBlockError, f"block {name!r} writes {buf.name}, a parameter of the "
                 f"function: moved under loop {lname} it would only compute the parts the "
                 "blocks there read, and the rest of the output would never be written.",
                 "compute_at producers of intermediate buffers; for the output block, move its "
                 "consumers or use reverse_compute_at.", realize, f"block {name!r}")
    if any(iv.kind == "reduce" for iv in P.iter_vars) and P.init is None:
        ctx.fail(UnsupportedError, f"block {name!r} accumulates into {buf.name} without an init, "
                 "so computing a part twice (as compute_at may) would add it twice.",
                 "compute_at before decompose_reduction.", realize, f"block {name!r}")


def _require_consumers_under(ctx: Context, realize: BlockRealize, loop: For, blocks: list,
                             buf) -> None:
    """Some block reads ``buf``, and every block that does is under ``loop``."""
    lname, name = loop.loop_var.name, realize.block.name
    consumers = [b for b in blocks if b is not realize and any(
        x is buf for x in reads_of(b.block))]
    if not consumers:
        ctx.fail(NotProducerConsumerError, f"no block reads {buf.name}, which block {name!r} "
                 "writes, so there is nothing to compute it for.", "", realize, f"block {name!r}")
    for c in consumers:
        if tree.path_to(loop, c) is None:
            ctx.fail(NotProducerConsumerError,
                     f"block {c.block.name!r} reads {buf.name} but is not under loop {lname}: "
                     f"after the move, {name!r} would only compute what the blocks under "
                     f"{lname} need.", f"pick a loop that encloses every consumer of "
                     f"{buf.name}, or inline/move {c.block.name!r} first.", loop, f"loop {lname}")


def _require_producer_before(ctx: Context, realize: BlockRealize, loop: For, blocks: list,
                             me: int, under: list, buf) -> None:
    """Producer ``realize`` comes before ``loop``'s blocks, and no block between them (or
    under the loop) touches what it reads or writes, which moving it would reorder."""
    lname, name = loop.loop_var.name, realize.block.name
    first_under = min(k for k in under if k != me)
    if me > first_under:
        ctx.fail(ComputeLocationError, f"block {name!r} comes after loop {lname}'s blocks; "
                 "compute_at can only move a producer later, to where it is used.",
                 "use reverse_compute_at to move a consumer under its producer's loop.",
                 loop, f"loop {lname}")
    inputs = reads_of(realize.block)
    for k, b in enumerate(blocks):
        if b is realize:
            continue
        between = me < k < first_under
        inside = k in under
        if (between and (touches(b.block, [buf]) or writes_any(b.block, inputs))) or (
                inside and (writes_any(b.block, inputs) or writes_any(b.block, [buf]))):
            ctx.fail(NotProducerConsumerError,
                     f"block {b.block.name!r} {'writes' if writes_any(b.block, inputs + [buf]) else 'uses'} "
                     f"data that block {name!r} uses, and would run on the other side of it "
                     "after the move.", "move that block first, or compute at another loop.",
                     b, f"block {b.block.name!r}")


@schedule_primitive("compute_at")
def compute_at(ctx: Context, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False) -> None:
    """Move producer ``block`` under ``loop``, computing in each iteration exactly the part
    its consumers under the loop read.

        sch.compute_at(sch.get_block("Y"), j0)
    """
    realize = ctx.block_realize(block)
    node = ctx.loop(loop)
    P, name = realize.block, realize.block.name
    lname = node.loop_var.name
    scope = require_same_scope(ctx, realize, node,
                               "pick a loop around the block's consumers, in its own scope.")
    if any(s is node for s in ctx.path(realize)) and not tree.child_blocks(node)[1:]:
        ctx.fail(ComputeLocationError, f"loop {lname} is a loop of block {name!r} itself, not of its consumers.",
                 "pick a loop around the block's consumers.", node, f"loop {lname}")
    buf, index_vars = _store_vars(ctx, realize, "compute_at")
    _require_intermediate(ctx, realize, buf, lname)
    require_no_predicate(ctx, realize, "which compute_at would have to carry into new loops.",
                         "compute_at before splitting the block's loops with factors that do "
                         "not divide them.")
    blocks, me, under = _order(ctx, scope, realize, node)
    _require_consumers_under(ctx, realize, node, blocks, buf)
    _require_producer_before(ctx, realize, node, blocks, me, under, buf)
    # take the producer out, then compute the region its consumers need per iteration
    body, loop1, ranges, fixed, relax_ranges, atoms = _taken_out(ctx, realize, node)
    idx, inner = accesses(loop1, buf, "r")
    reg = require_bounded(ctx, region(idx, _without(fixed, inner, relax_ranges), ranges, atoms),
                          f"{buf.name} that the blocks under loop {lname} read", node)
    dims = _dims_from(ctx, reg, index_vars, P, realize, "compute_at")
    new = _build(ctx, P, dims, body, preserve_unit_loops, ranges, atoms)
    first = next(k for k, s in enumerate(_stmts(loop1.body))
                 if any(x is y for b in collect_blocks(s) for x in reads_of(b.block) for y in [buf]))
    stmts = _stmts(loop1.body)
    new_loop = For(loop1.loop_var, loop1.extent, seq(*stmts[:first], new, *stmts[first:]),
                   loop1.kind, loop1.annotations)
    ctx.set_func(ctx.func.with_body(tree.replace_stmt(body, loop1, new_loop)))


def _without(fixed: set, *range_dicts: dict) -> dict:
    """The merged ranges of every variable not in ``fixed`` (the loops that stay symbolic)."""
    out: dict = {}
    for d in range_dicts:
        out.update((v, r) for v, r in d.items() if v not in fixed)
    return out


def _stmts(s: Stmt) -> list[Stmt]:
    return list(s.stmts) if isinstance(s, SeqStmt) else [s]


def _covered_domain(lo: Linear, ext: int, dom: int, ranges: dict) -> bool:
    """Does ``[lo, lo + ext)`` over every value of lo's variables cover ``[0, dom)``?"""
    terms = sorted((c, v) for v, c in lo.coeffs.items())
    if any(c < 0 for c, _ in terms):
        return False
    span = ext
    for c, v in terms:
        r = ranges.get(v)
        if r is None or r[0] != 0 or c > span:
            return False
        span += c * r[1]
    return lo.const <= 0 and lo.const + span >= dom


def _require_producers_under(ctx: Context, realize: BlockRealize, loop: For, blocks: list,
                             me: int, under: list) -> tuple[list, list]:
    """Some other block under ``loop`` writes a buffer consumer ``realize`` reads; returns
    the positions of the other blocks under it and the buffers they produce for it."""
    lname, name = loop.loop_var.name, realize.block.name
    others_under = [k for k in under if k != me]
    if not others_under:
        ctx.fail(NotProducerConsumerError, f"loop {lname} holds no other block.",
                 "pick a loop around the block's producers.", loop, f"loop {lname}")
    produced = [x for x in reads_of(realize.block)
                if any(writes_any(blocks[k].block, [x]) for k in others_under)]
    if not produced:
        ctx.fail(NotProducerConsumerError, f"no block under loop {lname} writes a buffer that "
                 f"block {name!r} reads.", "pick a loop around the block's producers.", loop,
                 f"loop {lname}")
    return others_under, produced


def _require_consumer_after(ctx: Context, realize: BlockRealize, loop: For, blocks: list,
                            me: int, under: list, others_under: list) -> None:
    """Consumer ``realize`` comes after ``loop``'s blocks, and no block between them (or
    under the loop) touches what it reads or writes, which moving it would reorder."""
    lname, name = loop.loop_var.name, realize.block.name
    last_under = max(others_under)
    if me < last_under:
        ctx.fail(ComputeLocationError, f"block {name!r} comes before loop {lname}'s blocks; "
                 "reverse_compute_at can only move a consumer earlier, to where its input is "
                 "made.", "use compute_at to move a producer under its consumer's loop.",
                 loop, f"loop {lname}")
    inputs, outputs = reads_of(realize.block), writes_of(realize.block)
    for k, b in enumerate(blocks):
        if b is realize:
            continue
        between = last_under < k < me and k not in under
        if (between and (writes_any(b.block, inputs) or touches(b.block, outputs))) or (
                k in under and touches(b.block, outputs)):
            ctx.fail(NotProducerConsumerError,
                     f"block {b.block.name!r} uses data that block {name!r} reads or writes, "
                     "and would run on the other side of it after the move.",
                     "move that block first, or pick another loop.", b, f"block {b.block.name!r}")


def _require_finished_producers(ctx: Context, realize: BlockRealize, loop: For, body: Stmt,
                                producers: list, produced: list, fixed: set) -> None:
    """No producer under ``loop`` still accumulates over the fixed loops (the loop and
    those outside it): it would not have finished its values where the consumer reads."""
    lname = loop.loop_var.name
    for w in producers:
        if not writes_any(w.block, produced):
            continue
        w1 = tree.find_block(body, w.block.name)
        for iv, value in zip(w1.block.iter_vars, w1.iter_values):
            if iv.kind == "reduce" and any(v in fixed for v in free_vars(value)):
                ctx.fail(CoverageError,
                         f"block {w.block.name!r} is still accumulating its reduction over loop "
                         f"{lname} (or a loop outside it), so block {realize.block.name!r} "
                         "would read partial sums.", f"pick a loop outside the reduction's "
                         f"loops of {w.block.name!r}.", loop, f"loop {lname}")


def _require_read_dims(ctx: Context, realize: BlockRealize, loop: For, x0, written: list) -> dict:
    """``{iteration variable: (first, extent)}`` of the consumer instances to run per
    iteration, from where it reads ``x0`` at its spatial iteration variables (``written``:
    the part of ``x0`` one iteration writes); each part must keep its size."""
    C, name, lname = realize.block, realize.block.name, loop.loop_var.name
    ivs = {iv.var: iv for iv in C.iter_vars}
    dims: dict = {}
    for d, e in enumerate(load_indices(C, x0)[0]):
        e, step, shift = _scaled_var(e)
        if isinstance(e, Var) and e in ivs and e not in dims and ivs[e].kind == "spatial":
            lo, hi = written[d]
            width = hi - lo
            if not width.is_const():
                ctx.fail(UnsupportedError, f"reverse_compute_at: the part of {x0.name} written "
                         "per iteration changes size between iterations.",
                         "pick a loop whose iterations write equal-sized parts.", loop,
                         f"loop {lname}")
            # read at v * step + shift (a pooling window's first row: step rows apart): the
            # instances whose first reads fall in the written part; the check after building
            # proves the rest
            first, rest = (lo - shift).split(step)
            if rest.is_const() and rest.const == 0:
                dims[e] = (first, -(-(width.const + 1) // step))
    if not dims:
        ctx.fail(UnsupportedError, f"block {name!r} does not read {x0.name} at its iteration "
                 "variables (as C[vi, vj] = f(Y[vi, vj]) does), so the part to compute cannot be "
                 "derived.", "move an elementwise consumer instead.", realize, f"block {name!r}")
    return dims


def _scaled_var(e: PrimExpr) -> tuple[PrimExpr, int, int]:
    """``(v, k, c)`` when ``e`` is ``v * k + c`` for a variable ``v`` and constants ``k`` > 1
    and ``c``, else ``(e, 1, 0)``."""
    a = affine(e)
    if a is not None and len(a.terms) == 1:
        ((k, v),) = a.terms.values()
        if isinstance(v, Var) and k > 1:
            return v, k, a.const
    return e, 1, 0


@schedule_primitive("reverse_compute_at")
def reverse_compute_at(ctx: Context, block: BlockRV, loop: LoopRV,
                       preserve_unit_loops: bool = False) -> None:
    """Move consumer ``block`` under its producer's ``loop``, computing in each iteration
    the part of its output whose inputs that iteration has just produced.

        sch.reverse_compute_at(sch.get_block("C"), j0)
    """
    realize = ctx.block_realize(block)
    node = ctx.loop(loop)
    C, name = realize.block, realize.block.name
    lname = node.loop_var.name
    scope = require_same_scope(ctx, realize, node,
                               "pick a loop around the block's producers, in its own scope.")
    require_no_predicate(ctx, realize, "which reverse_compute_at would have to carry into new "
                         "loops.", "reverse_compute_at before splitting the block's loops with "
                         "factors that do not divide them.")
    blocks, me, under = _order(ctx, scope, realize, node)
    others_under, produced = _require_producers_under(ctx, realize, node, blocks, me, under)
    _require_consumer_after(ctx, realize, node, blocks, me, under, others_under)
    body, loop1, ranges, fixed, relax_ranges, atoms = _taken_out(ctx, realize, node)
    written = {}
    for x in produced:
        idx, inner = accesses(loop1, x, "w")
        written[id(x)] = require_bounded(
            ctx, region(idx, _without(fixed, inner, relax_ranges), ranges, atoms),
            f"{x.name} written under loop {lname}", node)
    _require_finished_producers(ctx, realize, node, body, [blocks[k] for k in others_under],
                                produced, fixed)
    # the first read of the first produced buffer tells which instances of C to run
    x0 = produced[0]
    dims = _require_read_dims(ctx, realize, node, x0, written[id(x0)])
    ivs = {iv.var: iv for iv in C.iter_vars}
    for v, (lo, ext) in dims.items():
        dom = ivs[v].extent.value
        if not _covered_domain(lo, ext, dom, ranges):
            ctx.fail(CoverageError, f"the iterations of loop {lname} together do not produce all "
                     f"of {x0.name} that block {name!r} reads ({v.name} in [0, {dom})), so some "
                     f"of {name!r}'s work would never run.", "pick a loop whose iterations "
                     "together cover the producer's whole output.", node, f"loop {lname}")
    new = _build(ctx, C, dims, body, preserve_unit_loops, ranges, atoms)
    new_ranges = loop_ranges(new)
    for x in produced:
        idx, inner = accesses(new, x, "r")
        need = region(idx, _without(fixed, inner, new_ranges, relax_ranges),
                      {**ranges, **new_ranges}, atoms)
        d = None if need is None else covers(written[id(x)], need, {**ranges, **new_ranges})
        if need is None or d is not None:
            ctx.fail(CoverageError,
                     f"block {name!r} would read parts of {x.name} that loop {lname}'s "
                     f"iteration has not produced yet (dimension {d}), so it would read stale "
                     "data.", f"pick an outer loop, or reverse_compute_at a consumer that reads "
                     f"{x.name} only where it writes.", node, f"loop {lname}")
    new_loop = For(loop1.loop_var, loop1.extent, seq(loop1.body, new), loop1.kind,
                   loop1.annotations)
    ctx.set_func(ctx.func.with_body(tree.replace_stmt(body, loop1, new_loop)))

