"""Padding an einsum to tile-friendly extents: ``pad_einsum``.

``pad_einsum(block, [32, 32, 32])`` rounds each iteration extent of the block up to a
multiple of its padding, so later splits divide evenly and need no predicate. Every
buffer the block indexes along a padded axis gets a padded copy ``<name>_pad``: inputs are
copied in with zeros outside the original extent, the output is computed into its copy
and the original part copied back::

    for i, j, k in T.grid(127, 127, 127):          A_pad[v0, v1] = T.select(v0 < 127 and v1 < 127,
        C[vi, vj] = C[vi, vj] + A[vi, vk] * ...                     A[T.min(v0, 126), ...], 0)
                                              ->   for i, j, k in T.grid(128, 128, 128):
                                                       C_pad[vi, vj] = C_pad[vi, vj] + A_pad[vi, vk] * ...
                                                   C[v0, v1] = C_pad[v0, v1]          # 127 x 127

An *einsum* block indexes every buffer with its iteration variables (``A[vi, vk]``), each
dimension's size equal to that variable's extent, and runs under loops that are its
bindings, one loop per variable. Padded spatial iterations compute values nobody reads;
padded reduction iterations must add nothing, which is checked: the sum's term must be
zero when the inputs indexed by the padded axis are zero (``A[i, k] * B[k, j]`` is, ``exp``
of it is not).
"""

from __future__ import annotations

from dataclasses import replace

from ..tir.analysis import collect_blocks
from ..tir.expr import (Binary, Buffer, BufferLoad, Cast, Const, PrimExpr, Select, Unary, Var,
                        select)
from ..tir.functor import Mutator, post_order_visit, replace_buffers
from ..tir.stmt import BlockRealize, BufferRegion, BufferStore, For, IterVar, Range, Stmt
from . import tree
from ..tir.names import fresh_name
from ._build import block_names, buffer_names, copy_nest, loop_names, splice, top_stmt
from .analysis import reads_of, writes_of
from .cache import check_sole_writer, exact_store, require_root_scope
from .errors import ArgumentTypeError
from .errors_data import NotEinsumError, PaddingError, SharedLoopError
from .reduction import reducer_of
from .context import Context
from .handles import BlockRV
from .registry import schedule_primitive
from .requires import require_no_predicate


def _accesses(block) -> list[tuple[Buffer, tuple]]:
    out: list = []
    for part in (block.init, block.body):
        if part is None:
            continue
        for s in tree.walk(part):
            if isinstance(s, BufferStore):
                out.append((s.buffer, s.indices))
            for name in ("value", "cond"):
                if hasattr(s, name):
                    _loads(getattr(s, name), out)
            if isinstance(s, BufferStore):
                for i in s.indices:
                    _loads(i, out)
    return out


def _loads(e, out) -> None:
    post_order_visit(e, lambda n: out.append((n.buffer, n.indices))
                     if isinstance(n, BufferLoad) else None)


def _vanishes(e: PrimExpr, zero: set) -> bool:
    """True when ``e`` is 0 whenever the loads with ids in ``zero`` read 0."""
    if isinstance(e, BufferLoad):
        return id(e) in zero
    if isinstance(e, Const):
        return e.value == 0
    if isinstance(e, Cast):
        return _vanishes(e.value, zero)
    if isinstance(e, Unary) and e.op == "-":
        return _vanishes(e.a, zero)
    if isinstance(e, Binary):
        if e.op == "*":
            return _vanishes(e.a, zero) or _vanishes(e.b, zero)
        if e.op in ("+", "-"):
            return _vanishes(e.a, zero) and _vanishes(e.b, zero)
        if e.op == "/":
            return _vanishes(e.a, zero)
    if isinstance(e, Select):
        return _vanishes(e.true_value, zero) and _vanishes(e.false_value, zero)
    return False


def _require_einsum_accesses(ctx: Context, realize: BlockRealize) -> dict:
    """The block indexes each buffer by the same iteration variables everywhere, one per
    dimension over its whole size (the einsum form); returns ``{id(buffer): index}``."""
    B, name = realize.block, realize.block.name
    ivs = {iv.var: iv for iv in B.iter_vars}
    index_of: dict[int, tuple] = {}
    for buf, idx in _accesses(B):
        why = None
        if not all(isinstance(i, Var) and i in ivs for i in idx):
            why = (f"it indexes {buf.name} with [{', '.join(map(str, idx))}], not with its "
                   "iteration variables")
        elif id(buf) in index_of and not all(a is b for a, b in zip(index_of[id(buf)], idx)):
            why = f"it indexes {buf.name} in two different ways"
        else:
            for d, (i, size) in enumerate(zip(idx, buf.shape)):
                if not isinstance(ivs[i].extent, Const) or ivs[i].extent.value != size:
                    why = (f"dimension {d} of {buf.name} has size {size} but is indexed by "
                           f"{i.name}, whose extent is {ivs[i].extent}")
                    break
        if why is not None:
            ctx.fail(NotEinsumError, f"pad_einsum: block {name!r} is not an einsum: {why}, so "
                     "padding its axes would not pad the data consistently.",
                     "pad blocks like C[vi, vj] += A[vi, vk] * B[vk, vj]; for others, pad the "
                     "input with an explicit block.", realize, f"block {name!r}")
        index_of[id(buf)] = idx
    return index_of


def _require_own_loops(ctx: Context, realize: BlockRealize) -> dict:
    """Each iteration variable is bound to a loop of its own over its whole extent, which
    padding can extend; returns ``{iteration variable: loop}``."""
    B, name = realize.block, realize.block.name
    loops = ctx.loops_above(realize)
    loop_of: dict = {}
    for iv, value in zip(B.iter_vars, realize.iter_values):
        lp = next((lp for lp in loops if lp.loop_var is value), None)
        if lp is None or id(lp) in {id(x) for x in loop_of.values()} or not (
                isinstance(lp.extent, Const) and lp.extent.value == iv.extent.value):
            ctx.fail(NotEinsumError, f"pad_einsum: iteration variable {iv.var.name} of block "
                     f"{name!r} is bound to {value}, not to a loop of its own over its whole "
                     "extent, so its loop cannot be extended.", "pad_einsum before split, fuse "
                     "or reorder change the block's loops.", realize, f"block {name!r}")
        loop_of[iv.var] = lp
    return loop_of


def _require_alone(ctx: Context, realize: BlockRealize) -> tuple[BlockRealize, Stmt]:
    """No other block runs under the block's loops, which padding runs more times; returns
    the block's scope and the statement of that scope holding it."""
    name = realize.block.name
    scope = require_root_scope(ctx, realize, "pad_einsum")
    at = top_stmt(scope, realize)
    others = [b for b in collect_blocks(at) if b is not realize] if at is not None else []
    if others or at is None:
        other = others[0] if others else realize
        ctx.fail(SharedLoopError, f"pad_einsum: block {other.block.name!r} runs under the same "
                 f"loops as block {name!r}, and extending the loops would run it more times.",
                 "pad_einsum before moving blocks into one loop nest.", other,
                 f"block {other.block.name!r}")
    return scope, at


@schedule_primitive("pad_einsum")
def pad_einsum(ctx: Context, block: BlockRV, padding: list) -> None:
    """Round each iteration extent of an einsum block up to a multiple of ``padding[k]``
    (one int per iteration variable), padding the buffers it indexes with zeros.

        sch.pad_einsum(sch.get_block("C"), [32, 32, 32])
    """
    realize = ctx.block_realize(block)
    B, name = realize.block, realize.block.name
    label = f"block {name!r}"
    if not isinstance(padding, (list, tuple)) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in padding):
        raise ArgumentTypeError(f"pad_einsum: padding must be a list of ints, got {padding!r:.60}")
    if len(padding) != len(B.iter_vars) or any(p < 1 for p in padding):
        ctx.fail(PaddingError, f"pad_einsum: padding {list(padding)} must give one positive "
                 f"multiple per iteration variable of block {name!r} "
                 f"({', '.join(iv.var.name for iv in B.iter_vars)}).",
                 "pass e.g. [32] * number of iteration variables; 1 leaves an axis as is.",
                 realize, label)
    ivs = {iv.var: iv for iv in B.iter_vars}
    index_of = _require_einsum_accesses(ctx, realize)
    require_no_predicate(ctx, realize, "so some of its iterations are skipped already.",
                         "pad before splitting with factors that do not divide the loops.",
                         step="pad_einsum", cls=NotEinsumError)
    loop_of = _require_own_loops(ctx, realize)
    scope, at = _require_alone(ctx, realize)
    new_ext = {iv.var: -(-iv.extent.value // p) * p for iv, p in zip(B.iter_vars, padding)}
    padded = {v for v, e in new_ext.items() if e != ivs[v].extent.value}
    if not padded:
        return None
    outs = writes_of(B)
    if len(outs) != 1:
        ctx.fail(NotEinsumError, f"pad_einsum: block {name!r} writes {len(outs)} buffers, not "
                 "one, so it is not an einsum.", "pad a block with a single output.", realize,
                 label)
    out = outs[0]
    if any(ivs[v].kind == "reduce" for v in padded):
        red = reducer_of(B)
        if red is None or red[0] != "+":
            ctx.fail(PaddingError, f"pad_einsum: block {name!r} is not a sum, so the extra "
                     "iterations of its padded reduction axes would change the result.",
                     "pad only its spatial axes (padding 1 for the reduction axes).", realize,
                     label)
        rhs = red[2]
        zero: set = set()
        for n in _rhs_loads(rhs):
            if any(i in padded and ivs[i].kind == "reduce" for i in n.indices):
                zero.add(id(n))
        if not _vanishes(rhs, zero):
            ctx.fail(PaddingError, f"pad_einsum: the term {rhs} that block {name!r} adds is not "
                     "zero when its inputs are zero-padded, so the extra reduction iterations "
                     "would change the sum.", "pad only the spatial axes (padding 1 for the "
                     "reduction axes), or pad an einsum whose term is a product of inputs.",
                     realize, label)
    check_sole_writer(ctx, realize, out, "pad_einsum")
    exact_store(ctx, realize, out, "pad_einsum")
    # padded copies of every buffer indexed along a padded axis
    taken = buffer_names(ctx.func) | block_names(ctx.func.body)
    lnames = loop_names(ctx.func.body)
    bmap, before, after, allocs = {}, [], [], []
    for buf in [b for b in reads_of(B) if b is not out] + [out]:
        if id(buf) in {id(x) for x in bmap} or id(buf) not in index_of:
            continue
        idx = index_of[id(buf)]
        if not any(i in padded for i in idx):
            continue
        shape = tuple(new_ext[i] for i in idx)
        pbuf = Buffer(fresh_name(f"{buf.name}_pad", taken), shape, buf.dtype, buf.scope)
        bmap[buf] = pbuf
        allocs.append(pbuf)
        if buf is out:
            after.append(copy_nest(pbuf.name, pbuf, buf, [(0, n) for n in buf.shape], lnames))
        else:
            before.append(copy_nest(pbuf.name, buf, pbuf, [(0, n) for n in shape], lnames,
                                    value=_guarded(buf)))
    new_block = _Regions(bmap).visit(replace_buffers(B, bmap))
    new_block = replace(new_block, iter_vars=tuple(
        IterVar(iv.var, new_ext[iv.var], iv.kind) for iv in B.iter_vars))
    new_realize = BlockRealize(realize.iter_values, realize.predicate, new_block)
    grow = {loop_of[v].loop_var: new_ext[v] for v in padded}

    def rewrite(s: Stmt) -> Stmt:
        return _Grow(grow).visit(tree.replace_stmt(s, realize, new_realize)) if s is at else s

    ctx.replace(scope, splice(scope, at, before=before, after=after, allocs=allocs,
                              rewrite=rewrite))
    return None


class _Grow(Mutator):
    """Loops over the given variables get the given extents."""

    def __init__(self, extents: dict):
        self.extents = extents

    def visit_For(self, node: For):
        body = self.visit(node.body)
        ext = self.extents.get(node.loop_var)
        if ext is None and body is node.body:
            return node
        return For(node.loop_var, node.extent if ext is None else ext, body, node.kind,
                   node.annotations)


def _rhs_loads(e) -> list[BufferLoad]:
    out: list = []
    post_order_visit(e, lambda n: out.append(n) if isinstance(n, BufferLoad) else None)
    return out


def _guarded(buf: Buffer):
    """``value(vs)``: ``buf[vs]`` inside its shape, 0 outside; the load's indices are clamped
    so that no branch ever reads out of bounds."""
    def value(vs: list[Var]) -> PrimExpr:
        conds = [v < n for v, n in zip(vs, buf.shape)]
        cond = conds[0]
        for c in conds[1:]:
            cond = cond & c
        load = buf[tuple(Binary("min", v, Const(n - 1, v.dtype)) for v, n in zip(vs, buf.shape))]
        return select(cond, load, Const(0, buf.dtype))
    return value


class _Regions(Mutator):
    """Regions over whole padded dimensions grow with them (point regions stay points)."""

    def __init__(self, bmap: dict):
        self.news = {id(b): b for b in bmap.values()}
        self.olds = {id(new): old for old, new in bmap.items()}

    def visit_BufferRegion(self, node: BufferRegion):
        if id(node.buffer) not in self.news:
            return node
        old = self.olds[id(node.buffer)]
        ranges = []
        for r, n_old, n_new in zip(node.region, old.shape, node.buffer.shape):
            full = (isinstance(r.min, Const) and r.min.value == 0 and isinstance(r.extent, Const)
                    and r.extent.value == n_old)
            ranges.append(Range(0, n_new) if full and n_old != n_new else r)
        return BufferRegion(node.buffer, tuple(ranges))


__all__ = ["pad_einsum"]
