"""Reshaping reductions: ``decompose_reduction`` and ``rfactor``.

``decompose_reduction(C, j1)`` takes a reduction's ``T.init()`` out into its own block
``C_init``, run over the spatial loops from ``j1`` down, right before ``j1``; the update
block keeps its name (and handle) and loses the init::

    for i, j0 in T.grid(16, 2):                    for i, j0 in T.grid(16, 2):
        for j1, k in T.grid(8, 16):                    for j1_init in range(8):
            with T.block("C"):                             with T.block("C_init"):
                ...                                            C[vi, vj] = T.float32(0)
                with T.init():                         for j1, k in T.grid(8, 16):
                    C[vi, vj] = T.float32(0)               with T.block("C"):
                C[vi, vj] = C[vi, vj] + ...                    C[vi, vj] = C[vi, vj] + ...

``rfactor(k1, factor_axis)`` turns part of a reduction into data parallelism: the block
``B_rf`` computes partial results ``B_rf[k1, ...]``, one per iteration of the reduction
loop ``k1``, which can then run in parallel; the original block (same name) reduces them::

    for i, k0, k1 in T.grid(16, 4, 4):             B_rf[vk1, vi] = B_rf[vk1, vi] + A[vi, vk0 * 4 + vk1]
    for i, k1 in T.grid(16, 4):                    B[vi] = B[vi] + B_rf[vk1, vi]

Reductions are ``X = X + e``, ``X = max(X, e)`` or ``X = min(X, e)``; like TVM, mlcbook
treats them as associative and commutative, so a float sum may round differently.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np

from ..tir.regions import same_expr
from ..tir.analysis import buffers_read, buffers_written, collect_blocks, free_vars
from ..tir.expr import (Binary, Buffer, BufferLoad, Const, PrimExpr, Var, infinity, is_float,
                        neg_infinity)
from ..tir.functor import post_order_visit, substitute
from ..tir.stmt import Block, BlockRealize, BufferStore, For, IterVar, Stmt, seq
from . import tree
from ..tir.names import fresh_name
from ._build import (all_of, block_names, buffer_names, conjuncts, loop_names, relaxed_regions,
                     splice, top_stmt, with_regions)
from .analysis import reads_of, writes_of
from .errors import NonConstantExtentError, UnsupportedError
from .errors_data import (DecomposeLocationError, FactorAxisError, NotReductionError,
                          ReducerPatternError, RFactorLoopError, SharedLoopError)
from .context import Context
from .handles import BlockRV, LoopRV
from .registry import schedule_primitive
from .requires import require_no_predicate

#: reduction operators and their identities
REDUCERS = ("+", "max", "min")


def identity(op: str, dtype: str) -> Const:
    """The value ``x`` with ``x op y == y``: 0 for +, -inf (or the smallest int) for max."""
    if op == "+":
        return Const(0, dtype)
    if is_float(dtype):
        return neg_infinity(dtype) if op == "max" else infinity(dtype)
    info = np.iinfo(dtype)
    return Const(int(info.min if op == "max" else info.max), dtype)


def reducer_of(block: Block) -> Optional[tuple]:
    """``(op, store, rhs, acc_first)`` when the body is ``X[i] = X[i] op rhs`` (or ``rhs op
    X[i]``) with ``rhs`` not reading X; None otherwise."""
    st = block.body
    if not isinstance(st, BufferStore) or not isinstance(st.value, Binary):
        return None
    v = st.value
    if v.op not in REDUCERS:
        return None

    def is_acc(e) -> bool:
        return (isinstance(e, BufferLoad) and e.buffer is st.buffer and
                all(same_expr(a, b) for a, b in zip(e.indices, st.indices)))

    for acc, rhs, first in ((v.a, v.b, True), (v.b, v.a, False)):
        if is_acc(acc):
            reads_acc: list = []
            post_order_visit(rhs, lambda n: reads_acc.append(n) if isinstance(
                n, BufferLoad) and n.buffer is st.buffer else None)
            if not reads_acc:
                return v.op, st, rhs, first
    return None


def _combine(op: str, acc: PrimExpr, rhs: PrimExpr, acc_first: bool) -> PrimExpr:
    a, b = (acc, rhs) if acc_first else (rhs, acc)
    return Binary(op, a, b)


def init_nest(block: Block, bindings: tuple, predicate: PrimExpr, loops: list[For],
              name: str, loop_taken: set) -> tuple[Stmt, list]:
    """A loop nest running ``block``'s init as its own block ``name``.

    ``loops`` are the loops (outermost first) whose variables ``bindings`` may use below
    the place the nest goes; only those the spatial bindings use are copied (as
    ``<loop>_init``), the rest are reduction loops the init does not need. Returns the
    nest and the conjuncts of ``predicate`` that had to be dropped with those loops.
    """
    spatial_vars = set()
    for iv, value in zip(block.iter_vars, bindings):
        if iv.kind == "spatial":
            spatial_vars.update(free_vars(value))
    kept = [lp for lp in loops if lp.loop_var in spatial_vars]
    vmap = {lp.loop_var: Var(fresh_name(f"{lp.loop_var.name}_init", loop_taken),
                             lp.loop_var.dtype) for lp in kept}
    dropped_vars = {lp.loop_var for lp in loops} - set(vmap)
    preds, dropped = [], []
    for c in conjuncts(predicate):
        if any(v in dropped_vars for v in free_vars(c)):
            dropped.append(c)
        else:
            preds.append(substitute(c, vmap))
    ivs, values, ivmap = [], [], {}
    for iv, value in zip(block.iter_vars, bindings):
        if iv.kind != "spatial":
            continue
        nv = Var(iv.var.name, iv.var.dtype)
        ivmap[iv.var] = nv
        ivs.append(IterVar(nv, iv.extent, "spatial"))
        values.append(substitute(value, vmap))
    body = substitute(block.init, ivmap)
    init_block = Block(name, tuple(ivs), (), (), body)
    if isinstance(body, BufferStore):
        init_block = with_regions(init_block)
    else:  # an init with loops and blocks of its own (an outer block's, after blockize)
        ranges = {iv.var: (0, iv.extent.value - 1) for iv in ivs if isinstance(iv.extent, Const)}
        init_block = replace(init_block,
                             reads=relaxed_regions(buffers_read(body), [body], "r", ranges),
                             writes=relaxed_regions(buffers_written(body), [body], "w", ranges))
    stmt: Stmt = BlockRealize(tuple(values), all_of(preds), init_block)
    for lp in reversed(kept):
        stmt = For(vmap[lp.loop_var], lp.extent, stmt, lp.kind, lp.annotations)
    return stmt, dropped


def _require_init(ctx: Context, realize: BlockRealize, step: str) -> None:
    block = realize.block
    if block.init is None or not any(iv.kind == "reduce" for iv in block.iter_vars):
        what = "has no T.init()" if block.init is None else "has no reduction axis"
        ctx.fail(NotReductionError, f"{step}: block {block.name!r} {what}, so it is not a "
                 "reduction whose initialization could be separated or split.",
                 f"apply {step} to a reduction block with T.init() (e.g. the sum of a "
                 "matmul), before decompose_reduction has taken its init out.", realize,
                 f"block {block.name!r}")


@schedule_primitive("decompose_reduction")
def decompose_reduction(ctx: Context, block: BlockRV, loop: LoopRV) -> BlockRV:
    """Move the block's init into a new block ``<name>_init`` placed right before ``loop``
    (one of the block's loops, outside all its reduction loops). Returns the init block.

        C_init = sch.decompose_reduction(sch.get_block("C"), k)
    """
    realize = ctx.block_realize(block)
    node = ctx.loop(loop)
    B, name = realize.block, realize.block.name
    lname = node.loop_var.name
    _require_init(ctx, realize, "decompose_reduction")
    loops = ctx.loops_above(realize)
    k = next((p for p, lp in enumerate(loops) if lp is node), None)
    if k is None:
        ctx.fail(DecomposeLocationError, f"decompose_reduction: loop {lname} is not one of "
                 f"block {name!r}'s loops, so the init placed before it would not run for the "
                 "block's instances.", "pick a loop from sch.get_loops(block).", node,
                 f"loop {lname}")
    inner = loops[k:]
    inner_vars = {lp.loop_var for lp in inner}
    for iv, value in zip(B.iter_vars, realize.iter_values):
        if iv.kind != "reduce":
            continue
        outside = [v for v in free_vars(value) if v not in inner_vars]
        if outside:
            v = outside[0]
            mark = next((lp for lp in loops if lp.loop_var is v), node)
            ctx.fail(DecomposeLocationError,
                     f"decompose_reduction: {v.name} drives reduction axis {iv.var.name} of "
                     f"block {name!r} from outside loop {lname}, so an init placed before "
                     f"{lname} would run again in each of its iterations and reset the partial "
                     "results.", f"decompose at loop {v.name} or a loop outside it." if mark
                     is not node else "decompose the enclosing block instead.", mark,
                     f"loop {v.name}" if mark is not node else f"loop {lname}")
    # the init now runs before everything under the loop: no other block there may change
    # what it reads or writes, nor read what it writes before the update block does
    init_writes, init_reads = buffers_written(B.init), buffers_read(B.init)
    seen_update = False
    for other in collect_blocks(node):
        if other is realize:
            seen_update = True
        if other is realize or tree.path_to(realize, other) is not None:
            continue
        if _meets(writes_of(other.block), init_writes + init_reads):
            verb = "writes"
        elif not seen_update and _meets(reads_of(other.block), init_writes):
            verb = "reads"
        else:
            continue
        ctx.fail(SharedLoopError, f"decompose_reduction: block {other.block.name!r} under loop "
                 f"{lname} {verb} data that block {name!r}'s init touches, and would now run "
                 "after the init instead of before it.", "decompose at a loop inside, below "
                 f"{other.block.name!r}, or move {other.block.name!r} out first.", other,
                 f"block {other.block.name!r}")
    init_name = fresh_name(f"{name}_init", block_names(ctx.func.body))
    nest, dropped = init_nest(B, realize.iter_values, realize.predicate, inner, init_name,
                              loop_names(ctx.func.body))
    mixed = [c for c in dropped if any(v not in inner_vars or _spatial_loop(v, B, realize)
                                       for v in free_vars(c))]
    if mixed:
        ctx.fail(UnsupportedError, f"decompose_reduction: block {name!r}'s predicate "
                 f"{mixed[0]} mixes reduction loops with others, so mlcbook cannot tell which "
                 "elements the init must cover.", "decompose before splitting loops with "
                 "factors that do not divide them.", realize, f"block {name!r}")
    update = BlockRealize(realize.iter_values, realize.predicate, replace(B, init=None))
    new_node = tree.replace_stmt(node, realize, update)
    ctx.replace(node, seq(nest, new_node))
    return ctx.block_rv(init_name)


def _meets(a: list, b: list) -> bool:
    return any(x is y for x in a for y in b)


def _spatial_loop(v: Var, block: Block, realize: BlockRealize) -> bool:
    return any(iv.kind == "spatial" and v in free_vars(value)
               for iv, value in zip(block.iter_vars, realize.iter_values))


def _require_single_block(ctx: Context, loop: For) -> BlockRealize:
    """``loop`` holds exactly one block; returns it."""
    lname = loop.loop_var.name
    under = collect_blocks(loop)
    if len(under) != 1:
        ctx.fail(RFactorLoopError, f"rfactor: loop {lname} holds {len(under)} blocks; it must "
                 "hold exactly one reduction block whose work it divides.",
                 "rfactor a loop around a single block.", loop, f"loop {lname}")
    return under[0]


def _require_reducer(ctx: Context, realize: BlockRealize) -> tuple:
    """The block's update is a sum, max or min into one element per spatial instance;
    returns :func:`reducer_of` of it."""
    B, name = realize.block, realize.block.name
    red = reducer_of(B)
    if red is None:
        ctx.fail(ReducerPatternError, f"rfactor: block {name!r}'s update is not X = X + e, "
                 "X = max(X, e) or X = min(X, e), so partial results could not be combined "
                 "in another order without changing the result.",
                 "rfactor sum, max or min reductions.", realize, f"block {name!r}")
    st = red[1]
    ivs = {iv.var: iv for iv in B.iter_vars}
    if any(isinstance(v, Var) and v in ivs and ivs[v].kind == "reduce"
           for i in st.indices for v in free_vars(i)):
        ctx.fail(ReducerPatternError, f"rfactor: block {name!r} stores to {st.buffer.name} at an "
                 "index that depends on a reduction axis, so it is not one reduction per "
                 "element.", "rfactor blocks whose output index uses only spatial axes.",
                 realize, f"block {name!r}")
    return red


def _require_reduction_loops(ctx: Context, realize: BlockRealize, loop: For,
                             loops: list[For]) -> tuple[set, set]:
    """The reduction axes are bound to the block's own loops, ``loop`` among them, each of
    constant extent and driving no spatial axis; returns the loop variables the spatial
    axes use and those the reduction axes use."""
    B, name, lname = realize.block, realize.block.name, loop.loop_var.name
    loop_vars = {lp.loop_var for lp in loops}
    spatial_used, reduce_used = set(), set()
    for iv, value in zip(B.iter_vars, realize.iter_values):
        (spatial_used if iv.kind == "spatial" else reduce_used).update(free_vars(value))
        if iv.kind == "reduce" and any(v not in loop_vars for v in free_vars(value)):
            ctx.fail(UnsupportedError, f"rfactor: reduction axis {iv.var.name} of block "
                     f"{name!r} is bound to {value}, which uses more than the block's loops.",
                     "rfactor blocks whose reduction axes are bound to their own loops.",
                     realize, f"block {name!r}")
    if loop.loop_var not in reduce_used:
        ctx.fail(RFactorLoopError, f"rfactor: loop {lname} does not drive a reduction axis of "
                 f"block {name!r}, so there is no reduction to divide along it.",
                 "pass one of the block's reduction loops (e.g. an inner part of a split "
                 "reduction loop).", loop, f"loop {lname}")
    for lp in loops:
        if lp.loop_var in reduce_used and lp.loop_var in spatial_used:
            ctx.fail(RFactorLoopError, f"rfactor: loop {lp.loop_var.name} drives both spatial "
                     f"and reduction axes of block {name!r}, so its iterations cannot be "
                     "separated into partial results.", "rfactor before fusing spatial and "
                     "reduction loops.", lp, f"loop {lp.loop_var.name}")
        if lp.loop_var in reduce_used and not isinstance(lp.extent, Const):
            ctx.fail(NonConstantExtentError, f"rfactor: loop {lp.loop_var.name} has no constant "
                     "extent.", "rfactor loops with constant extents.", lp,
                     f"loop {lp.loop_var.name}")
    return spatial_used, reduce_used


def _require_factor_axis(ctx: Context, factor_axis, ndim: int, buf: Buffer, loop: For) -> None:
    """``factor_axis`` is a position among the ``ndim + 1`` dimensions of the partial results."""
    lname = loop.loop_var.name
    if not isinstance(factor_axis, int) or isinstance(factor_axis, bool) or not (
            -ndim - 1 <= factor_axis <= ndim):
        ctx.fail(FactorAxisError, f"rfactor: factor_axis {factor_axis!r} is not a position in "
                 f"the {ndim + 1} dimensions of the partial-result buffer ({buf.name}'s "
                 f"{ndim} and one for loop {lname}).", f"pass an int in [{-ndim - 1}, {ndim}].",
                 loop, f"loop {lname}")


def _require_alone_with(ctx: Context, realize: BlockRealize, buf: Buffer) -> tuple:
    """No other block inside the loops of ``realize`` uses its output ``buf``, which rfactor
    completes only after those loops; returns the block's scope and the statement of that
    scope holding it."""
    name = realize.block.name
    scope = ctx.scope_of(realize)
    at = top_stmt(scope, realize)
    for other in collect_blocks(at):
        if other is not realize and any(x is buf for x in reads_of(other.block) +
                                        writes_of(other.block)):
            ctx.fail(SharedLoopError, f"rfactor: block {other.block.name!r} uses {buf.name} "
                     f"inside the loops of block {name!r}, but after rfactor {buf.name} is only "
                     "complete after those loops.", f"rfactor before moving blocks into the "
                     f"loops of {name!r} (compute_at, reverse_compute_at).", other,
                     f"block {other.block.name!r}")
    return scope, at


@schedule_primitive("rfactor")
def rfactor(ctx: Context, loop: LoopRV, factor_axis: int = 0) -> BlockRV:
    """Split the reduction of the block under ``loop`` (one of its reduction loops) into a
    block ``<name>_rf`` computing one partial result per iteration of ``loop``, stored along
    dimension ``factor_axis`` of a new buffer ``<buffer>_rf``, and the original block, which
    now reduces those. Returns the rfactor block.

        k0, k1 = sch.split(k, factors=[None, 4])
        B_rf = sch.rfactor(k1, factor_axis=0)
    """
    node = ctx.loop(loop)
    lname = node.loop_var.name
    realize = _require_single_block(ctx, node)
    B, name = realize.block, realize.block.name
    _require_init(ctx, realize, "rfactor")
    op, st, rhs, acc_first = _require_reducer(ctx, realize)
    buf = st.buffer
    require_no_predicate(ctx, realize, "which the partial results would have to carry.",
                         "split the reduction loop with factors that divide its extent before "
                         "rfactor.", step="rfactor")
    loops = ctx.loops_above(realize)
    spatial_used, reduce_used = _require_reduction_loops(ctx, realize, node, loops)
    ndim = len(buf.shape)
    _require_factor_axis(ctx, factor_axis, ndim, buf, node)
    axis = factor_axis + ndim + 1 if factor_axis < 0 else factor_axis
    scope, at = _require_alone_with(ctx, realize, buf)
    # the rfactor block: one spatial axis for `loop`, a reduction axis per other reduction loop
    rf_name = fresh_name(f"{name}_rf", block_names(ctx.func.body))
    rf_buf = Buffer(fresh_name(f"{buf.name}_rf", buffer_names(ctx.func)),
                    buf.shape[:axis] + (node.extent.value,) + buf.shape[axis:], buf.dtype,
                    buf.scope)
    red_loops = [lp for lp in loops if lp.loop_var in reduce_used]
    loop_iv = {lp.loop_var: IterVar(Var(f"v{lp.loop_var.name}", lp.loop_var.dtype), lp.extent,
                                    "spatial" if lp is node else "reduce") for lp in red_loops}
    to_iv = {v: iv.var for v, iv in loop_iv.items()}
    red_sub = {iv.var: substitute(value, to_iv)
               for iv, value in zip(B.iter_vars, realize.iter_values) if iv.kind == "reduce"}
    spatial = [(iv, value) for iv, value in zip(B.iter_vars, realize.iter_values)
               if iv.kind == "spatial"]
    rf_var = loop_iv[node.loop_var].var
    rf_idx = st.indices[:axis] + (rf_var,) + st.indices[axis:]
    rf_ivs = [loop_iv[node.loop_var]] + [iv for iv, _ in spatial] + [
        loop_iv[lp.loop_var] for lp in red_loops if lp is not node]
    rf_values = [node.loop_var] + [v for _, v in spatial] + [
        lp.loop_var for lp in red_loops if lp is not node]
    rf_body = BufferStore(rf_buf, _combine(op, rf_buf[rf_idx], substitute(rhs, red_sub),
                                           acc_first), rf_idx)
    rf_init = BufferStore(rf_buf, identity(op, buf.dtype), rf_idx)
    rf_block = with_regions(Block(rf_name, tuple(rf_ivs), (), (), rf_body, rf_init))
    rf_realize = BlockRealize(tuple(rf_values), realize.predicate, rf_block)
    # the write-back: the original block, reducing the partial results
    keep = [lp for lp in loops if lp.loop_var in spatial_used or lp is node]
    lvmap = {lp.loop_var: Var(lp.loop_var.name, lp.loop_var.dtype) for lp in keep}
    svmap = {iv.var: Var(iv.var.name, iv.var.dtype) for iv, _ in spatial}
    wb_rf = IterVar(Var(rf_var.name, rf_var.dtype), node.extent, "reduce")
    idx = tuple(substitute(i, svmap) for i in st.indices)
    wb_idx = idx[:axis] + (wb_rf.var,) + idx[axis:]
    wb_body = BufferStore(buf, _combine(op, buf[idx], rf_buf[wb_idx], acc_first), idx)
    wb_ivs = [IterVar(svmap[iv.var], iv.extent, "spatial") for iv, _ in spatial] + [wb_rf]
    wb_values = [substitute(v, lvmap) for _, v in spatial] + [lvmap[node.loop_var]]
    wb_block = Block(name, tuple(wb_ivs), (), (), wb_body, substitute(B.init, svmap))
    wb_block = with_regions(wb_block)
    wb: Stmt = BlockRealize(tuple(wb_values), realize.predicate, wb_block)
    for lp in reversed(keep):
        if lp is node:
            wb = For(lvmap[lp.loop_var], lp.extent, wb)
        else:
            wb = For(lvmap[lp.loop_var], lp.extent, wb, lp.kind, lp.annotations)
    new_scope = splice(scope, at, after=[wb], allocs=[rf_buf],
                       rewrite=lambda s: tree.replace_stmt(s, realize, rf_realize)
                       if s is at else s)
    ctx.replace(scope, new_scope)
    return ctx.block_rv(rf_name)


__all__ = ["decompose_reduction", "rfactor", "reducer_of", "identity", "init_nest", "REDUCERS"]
