"""Grouping a loop nest into one block: ``blockize``.

``blockize(i1)`` wraps the loops from ``i1`` down, and the single block inside them, in a
new outer block ``<name>_o`` whose iteration variables are the *outer* part of the inner
block's bindings; the inner block keeps its name and is bound relative to them::

    for i0, j0, i1, j1 in T.grid(8, 8, 4, 4):      for i0, j0 in T.grid(8, 8):
        with T.block("B"):                             with T.block("B_o"):
            vi = T.axis.spatial(32, i0 * 4 + i1)           vi_o, vj_o = T.axis.remap("SS", [i0, j0])
            vj = T.axis.spatial(32, j0 * 4 + j1)           for i1, j1 in T.grid(4, 4):
            B[vi, vj] = A[vi, vj] * 2.0                        with T.block("B"):
                                                                   vi = T.axis.spatial(32, vi_o * 4 + i1)
                                                                   vj = T.axis.spatial(32, vj_o * 4 + j1)
                                                                   B[vi, vj] = A[vi, vj] * 2.0

The outer block states which tile of each buffer one of its instances reads and writes,
which is what a hardware intrinsic (a 4x4 micro-kernel) needs to know: ``tensorize``,
when it comes, will blockize with :func:`blockize_loop` and then replace the outer block's
body by a call to an intrinsic whose description matches it. A reduction's init moves to
the outer block (as a nest of its own block ``<name>_init``), because the inner block now
runs again for each outer reduction step and must not reset the partial sums.
"""

from __future__ import annotations

from dataclasses import replace

from ..tir.analysis import collect_blocks, free_vars, loop_ranges
from ..tir.arith import affine
from ..tir.expr import Const, PrimExpr, Var
from ..tir.simplify import simplify
from ..tir.stmt import Block, BlockRealize, For, IterVar
from . import tree
from ..tir.names import fresh_name
from ._build import block_names, loop_names, relaxed_regions
from .analysis import reads_of, writes_of
from .errors_data import BlockizeError
from .reduction import init_nest
from .context import Context
from .handles import BlockRV, LoopRV
from .registry import schedule_primitive


def _fail(ctx: Context, node: For, why: str, instead: str) -> None:
    ctx.fail(BlockizeError, f"blockize: {why}", instead, node, f"loop {node.loop_var.name}")


def _divide(ctx: Context, node: For, iv: IterVar, value: PrimExpr, inner: dict):
    """Split ``value`` into ``outer * span + inner_part`` where ``inner_part`` uses only the
    loops in ``inner`` (var -> extent) and covers ``[0, span)`` exactly once.

    Returns ``(outer_expr or None, outer_extent, inner_expr(vo))``.
    """
    fv = free_vars(value)
    uses_inner = [v for v in fv if v in inner]
    if not uses_inner:
        return value, iv.extent.value, lambda vo: vo
    if len(uses_inner) == len(fv):
        return None, None, lambda vo: value
    a = affine(value)
    if a is None:
        _fail(ctx, node, f"{iv.var.name} is bound to {value}, which mixes loops inside and "
              f"outside loop {node.loop_var.name} in a way that is not a sum of loop "
              "variables times constants, so it cannot be divided into an outer and an inner "
              "part.", "blockize at a loop where each binding separates (e.g. after split, "
              "not after fuse).")
    terms = sorted((c, v) for v, c in a.coeffs.items() if v in inner and inner[v] > 1)
    span = 1
    for c, v in terms:
        if c != span:
            _fail(ctx, node, f"{iv.var.name} is bound to {value}: the loops inside "
                  f"{node.loop_var.name} do not enumerate a contiguous range of it (the "
                  f"coefficient of {v.name} is {c}, not {span}).",
                  "blockize at a loop whose inner loops come from splitting one loop, in order.")
        span *= inner[v]
    inner_part = a.part(lambda v: v in inner)
    outer = a - inner_part
    if any(c % span for c in outer.coeffs.values()) or outer.const % span:
        _fail(ctx, node, f"{iv.var.name} is bound to {value}, whose outer part is not a multiple "
              f"of the {span} values its inner loops cover.", "blockize at a loop whose inner "
              "loops form whole tiles.")
    extent = iv.extent.value
    if extent % span:
        _fail(ctx, node, f"the inner loops cover {span} values of {iv.var.name}, which do not "
              f"divide its extent {extent}.", "split with factors that divide the extent first.")
    vo_expr = outer.split(span)[0].to_expr()   # every coefficient is a multiple of span

    def make_inner(vo: Var) -> PrimExpr:
        base = vo * span if span > 1 else vo
        return base if inner_part.is_const() else base + inner_part.to_expr()

    return vo_expr, extent // span, make_inner


def blockize_loop(ctx: Context, node: For) -> BlockRealize:
    """The outer BlockRealize that replaces ``node`` (not yet put in the program)."""
    under = collect_blocks(node)
    lname = node.loop_var.name
    if len(under) != 1:
        _fail(ctx, node, f"loop {lname} holds {len(under)} blocks; blockize groups the loops of "
              "exactly one block.", "blockize a loop around a single block (move the others "
              "out, or pick an inner loop).")
    realize = under[0]
    B, name = realize.block, realize.block.name
    path = tree.path_to(node, realize)
    for s, nxt in zip(path[:-1], path[1:]):
        if not isinstance(s, For) or s.body is not nxt:
            _fail(ctx, node, f"the statements between loop {lname} and block {name!r} are not "
                  "only loops.", "blockize a loop whose body is a plain loop nest.")
    inner_loops = path[:-1]
    for lp in inner_loops:
        if not isinstance(lp.extent, Const):
            _fail(ctx, lp, f"loop {lp.loop_var.name} has no constant extent.",
                  "blockize loops with constant extents.")
    inner = {lp.loop_var: lp.extent.value for lp in inner_loops}
    if any(v not in inner for v in free_vars(realize.predicate)):
        _fail(ctx, node, f"block {name!r}'s predicate {realize.predicate} uses loops outside "
              f"loop {lname}, which the inner block cannot see.",
              "blockize before splitting with factors that do not divide the loops, or at "
              "an outer loop.")
    outer_ivs, outer_values, inner_values = [], [], []
    for iv, value in zip(B.iter_vars, realize.iter_values):
        if not isinstance(iv.extent, Const):
            _fail(ctx, node, f"{iv.var.name} has no constant extent.", "")
        vo_expr, vo_ext, make_inner = _divide(ctx, node, iv, value, inner)
        if vo_expr is None:
            inner_values.append(value)
            continue
        vo = Var(f"{iv.var.name}_o", iv.var.dtype)
        outer_ivs.append(IterVar(vo, vo_ext, iv.kind))
        outer_values.append(vo_expr)
        inner_values.append(make_inner(vo))
    ranges = {**loop_ranges(ctx.func.body),
              **{iv.var: (0, iv.extent.value - 1) for iv in outer_ivs}}
    inner_values = [simplify(v, ranges) for v in inner_values]
    outer_values = [simplify(v, ranges) for v in outer_values]
    init = None
    inner_block = B
    if B.init is not None:
        taken = block_names(ctx.func.body)
        init, _ = init_nest(B, tuple(inner_values), realize.predicate, inner_loops,
                                  fresh_name(f"{name}_init", taken), loop_names(ctx.func.body))
        inner_block = replace(B, init=None)
    body = BlockRealize(tuple(inner_values), realize.predicate, inner_block)
    for lp in reversed(inner_loops):
        body = For(lp.loop_var, lp.extent, body, lp.kind, lp.annotations)
    own = [b for b in reads_of(B) + writes_of(B) if not any(b is a for a in B.alloc_buffers)]
    reads = relaxed_regions([b for b in reads_of(B) if any(b is x for x in own)],
                            [body, init], "r", ranges)
    writes = relaxed_regions([b for b in writes_of(B) if any(b is x for x in own)],
                             [body, init], "w", ranges)
    outer = Block(fresh_name(f"{name}_o", block_names(ctx.func.body)), tuple(outer_ivs),
                  reads, writes, body, init)
    return BlockRealize(tuple(outer_values), Const(True, "bool"), outer)


@schedule_primitive("blockize")
def blockize(ctx: Context, loop: LoopRV) -> BlockRV:
    """Wrap ``loop`` and the single block under it in a new outer block ``<name>_o``, whose
    instances are the iterations of the loops outside. Returns the outer block.

        B_o = sch.blockize(i1)
    """
    node = ctx.loop(loop)
    outer = blockize_loop(ctx, node)
    ctx.replace(node, outer)
    return ctx.block_rv(outer.block.name)


__all__ = ["blockize", "blockize_loop"]
