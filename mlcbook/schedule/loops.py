"""Reshaping loop nests: ``split``, ``fuse``, ``reorder``.

None of them changes which block instances run, only the loops that enumerate them: the
block bindings are rewritten so that every instance keeps its iteration values.

    for i in range(128):                       io, ii = sch.split(i, factors=[None, 32])
        with T.block("C"):                     for i_0, i_1 in T.grid(4, 32):
            vi = T.axis.spatial(128, i)            with T.block("C"):
                                                       vi = T.axis.spatial(128, i_0 * 32 + i_1)
"""

from __future__ import annotations

from typing import Optional

from ..tir.analysis import free_vars, loop_ranges
from ..tir.expr import Const, PrimExpr, Var
from ..tir.functor import substitute
from ..tir.simplify import simplify
from ..tir.stmt import BlockRealize, For, Stmt
from . import tree
from .deps import check_independent
from .errors import (FactorError, LoopNotNestedError, NonConstantExtentError,
                     NotSingleChildError, UnsupportedError)
from .context import Context
from .handles import LoopRV
from .registry import schedule_primitive


def _const_extent(ctx: Context, node: For, step: str) -> int:
    if not isinstance(node.extent, Const):
        ctx.fail(NonConstantExtentError,
                 f"cannot {step} loop {node.loop_var.name}: its extent {node.extent} is not a "
                 "constant, so the new loops' extents cannot be computed.",
                 f"{step} loops with constant extents.", node, f"loop {node.loop_var.name}")
    return node.extent.value


def _rebind(ctx: Context, body: Stmt, vmap: dict, new_ranges: dict,
            extra_pred: Optional[PrimExpr] = None) -> Stmt:
    """``body`` with loop variables replaced per ``vmap`` and the bindings (and predicates)
    of the blocks directly inside simplified; ``extra_pred`` is and-ed into each predicate."""
    body = substitute(body, vmap)
    ranges = {**loop_ranges(ctx.func.body), **new_ranges}

    def fix(s: Stmt):
        if not isinstance(s, BlockRealize):
            return s
        values = tuple(simplify(v, ranges) for v in s.iter_values)
        pred = s.predicate
        if extra_pred is not None:
            pred = extra_pred if tree.is_true(pred) else pred & extra_pred
        pred = simplify(pred, ranges)
        if all(a is b for a, b in zip(values, s.iter_values)) and pred is s.predicate:
            return s
        return BlockRealize(values, pred, s.block)

    return tree.map_stmts(body, lambda s: fix(s) if isinstance(s, BlockRealize) else s)


@schedule_primitive("split")
def split(ctx: Context, loop: LoopRV, factors: list) -> list[LoopRV]:
    """Split ``loop`` into nested loops with the given extents, outermost first.

    One factor may be None: it is inferred as ``ceil(extent / product of the others)``.
    When the factors' product exceeds the extent, the blocks inside get a predicate
    (``T.where(i_0 * 32 + i_1 < 100)``) so that no extra iteration runs.

        io, ii = sch.split(i, factors=[None, 32])
    """
    node = ctx.loop(loop)
    extent = _const_extent(ctx, node, "split")
    name = node.loop_var.name
    if not isinstance(factors, (list, tuple)) or len(factors) < 2:
        ctx.fail(FactorError, f"split needs a list of at least two factors for loop {name}, got "
                 f"{factors!r}.", "pass e.g. factors=[None, 32].", node, f"loop {name}")
    for f in factors:
        if f is not None and (not isinstance(f, int) or isinstance(f, bool) or f < 1):
            ctx.fail(FactorError, f"split factor {f!r} of loop {name} is not a positive int.",
                     "use positive ints, and None for the one factor to infer.", node,
                     f"loop {name}")
    if sum(f is None for f in factors) > 1:
        ctx.fail(FactorError, f"split factors {list(factors)} of loop {name} have more than one "
                 "None; only one factor can be inferred from the extent.",
                 "give all factors but one.", node, f"loop {name}")
    known = 1
    for f in factors:
        known *= f if f is not None else 1
    sizes = [int(f) if f is not None else -(-extent // known) for f in factors]
    total = known if None not in factors else known * sizes[factors.index(None)]
    if total < extent:
        ctx.fail(FactorError, f"split factors {[int(f) for f in factors]} of loop {name} multiply "
                 f"to {total}, fewer than its {extent} iterations: "
                 f"{extent - total} iterations would never run.",
                 "make the product at least the extent, or pass None for one factor to infer it.",
                 node, f"loop {name}")
    new_vars = [Var(f"{name}_{k}", node.loop_var.dtype) for k in range(len(sizes))]
    terms: Optional[PrimExpr] = None
    stride = 1
    for v, size in reversed(list(zip(new_vars, sizes))):
        if size > 1:
            term = v if stride == 1 else v * stride
            terms = term if terms is None else term + terms
        stride *= size
    fused = terms if terms is not None else Const(0, node.loop_var.dtype)
    pred = None
    if total > extent:
        if not tree.child_blocks(node):
            ctx.fail(UnsupportedError, f"loop {name} has no block inside to carry the predicate "
                     f"that keeps the {total - extent} extra iterations from running.",
                     "use factors whose product equals the extent.", node, f"loop {name}")
        pred = fused < extent
    new_ranges = {v: (0, s - 1) for v, s in zip(new_vars, sizes)}
    body = _rebind(ctx, node.body, {node.loop_var: fused}, new_ranges, pred)
    for v, size in reversed(list(zip(new_vars, sizes))):
        body = For(v, size, body)
    ctx.replace(node, body)
    return [ctx.loop_rv(v) for v in new_vars]


def _check_chain(ctx: Context, nodes: list[For], step: str) -> None:
    """Each loop's body must be exactly the next loop: a perfect nest, outermost first."""
    for outer, inner in zip(nodes, nodes[1:]):
        if outer.body is inner:
            continue
        p = tree.path_to(outer, inner)
        names = ", ".join(n.loop_var.name for n in nodes)
        if p is None:
            ctx.fail(LoopNotNestedError,
                     f"cannot {step} loops {names}: loop {inner.loop_var.name} is not inside "
                     f"loop {outer.loop_var.name}.",
                     "pass loops of one nest, outermost first (sch.get_loops(block) gives them "
                     "in that order).", outer, f"loop {outer.loop_var.name}")
        between = [s for s in p[1:-1] if isinstance(s, For)]
        if between and step == "fuse":
            ctx.fail(LoopNotNestedError,
                     f"cannot fuse loops {names}: loop {between[0].loop_var.name} lies between "
                     f"loop {outer.loop_var.name} and loop {inner.loop_var.name}.",
                     "fuse adjacent loops, or reorder first so that they are adjacent.", outer,
                     f"loop {outer.loop_var.name}")
        if any(isinstance(s, BlockRealize) for s in p[1:-1]):
            ctx.fail(LoopNotNestedError,
                     f"cannot {step} loops {names}: a block lies between loop "
                     f"{outer.loop_var.name} and loop {inner.loop_var.name}.",
                     "only loops of the same block scope can be combined.", outer,
                     f"loop {outer.loop_var.name}")
        ctx.fail(NotSingleChildError,
                 f"cannot {step} loops {names}: loop {outer.loop_var.name} contains more than "
                 f"loop {inner.loop_var.name}, and those other statements would be run a "
                 "different number of times.",
                 "move the other statements out first (compute_at / reverse_compute_at), or "
                 "only combine the loops below them.", outer, f"loop {outer.loop_var.name}")


@schedule_primitive("fuse")
def fuse(ctx: Context, *loops: LoopRV) -> LoopRV:
    """Fuse perfectly nested loops (outermost first) into one loop over all their iterations.

        ij = sch.fuse(i, j)        # for i_j_fused in range(128 * 64): vi = i_j_fused // 64 ...
    """
    nodes = [ctx.loop(lp) for lp in loops]
    if len(nodes) < 2:
        raise FactorError(f"fuse needs at least two loops, got {len(nodes)}")
    if len({id(n) for n in nodes}) != len(nodes):
        ctx.fail(LoopNotNestedError, "fuse got the same loop twice.", "pass each loop once.",
                 nodes[0], f"loop {nodes[0].loop_var.name}")
    _check_chain(ctx, nodes, "fuse")
    extents = [_const_extent(ctx, n, "fuse") for n in nodes]
    fused_var = Var("_".join(n.loop_var.name for n in nodes) + "_fused", nodes[0].loop_var.dtype)
    total = 1
    for e in extents:
        total *= e
    vmap = {}
    stride = total
    for k, (n, e) in enumerate(zip(nodes, extents)):
        stride //= e
        if e == 1:
            value: PrimExpr = Const(0, fused_var.dtype)
        else:
            value = fused_var if stride == 1 else fused_var // stride
            if k > 0 and stride * e < total:
                value = value % e
        vmap[n.loop_var] = value
    body = _rebind(ctx, nodes[-1].body, vmap, {fused_var: (0, total - 1)})
    ctx.replace(nodes[0], For(fused_var, total, body))
    return ctx.loop_rv(fused_var)


@schedule_primitive("reorder")
def reorder(ctx: Context, *loops: LoopRV) -> None:
    """Put the given loops of one nest in the given order; other loops stay where they are.

        sch.reorder(i0, j0, k, i1, j1)
    """
    nodes = [ctx.loop(lp) for lp in loops]
    if len({id(n) for n in nodes}) != len(nodes):
        dup = next(n for n in nodes if sum(m is n for m in nodes) > 1)
        ctx.fail(LoopNotNestedError, f"reorder got loop {dup.loop_var.name} twice.",
                 "pass each loop once.", dup, f"loop {dup.loop_var.name}")
    if len(nodes) < 2:
        return None
    paths = {id(n): ctx.path(n) for n in nodes}
    deepest = max(nodes, key=lambda n: len(paths[id(n)]))
    dpath = paths[id(deepest)]
    for n in nodes:
        if not any(s is n for s in dpath):
            ctx.fail(LoopNotNestedError,
                     f"cannot reorder: loop {n.loop_var.name} and loop {deepest.loop_var.name} "
                     "are not in one nest (neither is inside the other).",
                     "reorder loops that enclose the same block.", n, f"loop {n.loop_var.name}")
    top = min(nodes, key=lambda n: len(paths[id(n)]))
    chain = dpath[next(k for k, s in enumerate(dpath) if s is top):]
    if any(isinstance(s, BlockRealize) for s in chain):
        ctx.fail(LoopNotNestedError,
                 f"cannot reorder: a block lies between loop {top.loop_var.name} and loop "
                 f"{deepest.loop_var.name}.", "reorder loops of one block scope.", top,
                 f"loop {top.loop_var.name}")
    chain = [s for s in chain if isinstance(s, For)]
    _check_chain(ctx, chain, "reorder")
    chain_vars = {s.loop_var for s in chain}
    for s in chain:
        used = {v for v in chain_vars if v is not s.loop_var and _uses(s.extent, v)}
        if used:
            ctx.fail(UnsupportedError, f"loop {s.loop_var.name}'s extent depends on another "
                     "loop being reordered.", "reorder loops with independent extents.", s,
                     f"loop {s.loop_var.name}")
    if ctx.checks:
        check_independent(ctx, top, chain, "reorder")
    given = {id(n) for n in nodes}
    slots = [k for k, s in enumerate(chain) if id(s) in given]
    order = list(chain)
    for k, n in zip(slots, nodes):
        order[k] = n
    body = deepest.body
    for s in reversed(order):
        body = For(s.loop_var, s.extent, body, s.kind, s.annotations)
    ctx.replace(top, body)
    return None


def _uses(e: PrimExpr, v: Var) -> bool:
    return any(x is v for x in free_vars(e))
