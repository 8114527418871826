"""Can the iterations of some loops run in another order, or at the same time?

Within one block this is what the block's facts promise: spatial instances are
independent, and reduction steps may be reordered (the update is treated as associative
and commutative, as TVM does) but not run at once. Between blocks under the same loops
it must be proved: for every buffer one block writes and another touches, what any
iteration touches must lie inside what the writer writes *in that same iteration*, and
the writer's regions of different iterations must not overlap (unless it is a pure
block, which writes the same value whichever iteration computes it).
"""

from __future__ import annotations

from ..tir.analysis import collect_blocks, free_vars, loop_ranges
from ..tir.arith import Atoms, Linear
from ..tir.expr import Binary, Const, Var
from ..tir.stmt import Block, BlockRealize, BufferStore, For
from . import tree
from .analysis import accesses, covers, reads_of, region, writes_of
from .errors import (LoopCarriedDependenceError, ReduceLoopParallelError, RepeatedWorkError,
                     UnsupportedError)


def is_pure(block: Block) -> bool:
    """A block computing ``B[v0, v1, ...] = f(inputs)`` with one instance per element of B:
    no reduction, no init, its store indexed by all its iteration variables, not reading B."""
    if block.init is not None or any(iv.kind != "spatial" for iv in block.iter_vars):
        return False
    if not isinstance(block.body, BufferStore):
        return False
    st = block.body
    ivs = [iv.var for iv in block.iter_vars]
    if len(st.indices) != len(ivs) or not all(
            any(i is v for i in st.indices) for v in ivs):
        return False
    return not any(b is st.buffer for b in reads_of(block))


def check_independent(ctx, top: For, chain: list[For], step: str, *,
                      concurrent: bool = False) -> None:
    """Raise unless the iterations of the loops ``chain`` (a perfect nest starting at
    ``top``) can be reordered, or with ``concurrent`` run at the same time."""
    chain_vars = {c.loop_var for c in chain}
    label = "loop" + ("s " if len(chain) > 1 else " ") + ", ".join(c.loop_var.name for c in chain)
    blocks = collect_blocks(top)
    if concurrent:
        for b in blocks:
            for iv, value in zip(b.block.iter_vars, b.iter_values):
                used = [v for v in free_vars(value) if v in chain_vars]
                if iv.kind == "reduce" and used:
                    ctx.fail(ReduceLoopParallelError,
                             f"cannot {step} {label}: block {b.block.name!r} uses it for its "
                             f"reduction axis {iv.var.name}, and reduction steps run at the same "
                             f"time would race on {_written(b.block)}.",
                             "parallelize or vectorize a spatial loop, or split the reduction "
                             "with rfactor first.", chain[0], label)
    ranges = loop_ranges(ctx.func.body)
    fixed = {lp.loop_var for lp in ctx.loops_above(top)} | chain_vars
    relax_ranges = {v: r for v, r in ranges.items() if v not in fixed}
    atoms = Atoms(ranges)
    first = [b for b in blocks if not any(
        isinstance(s, BlockRealize) for s in tree.path_to(top, b)[:-1])]
    written: dict[int, list[BlockRealize]] = {}
    touched: dict[int, list[BlockRealize]] = {}
    buffers = {}
    for b in first:
        for buf in writes_of(b.block):
            written.setdefault(id(buf), []).append(b)
            buffers[id(buf)] = buf
        for buf in reads_of(b.block) + writes_of(b.block):
            lst = touched.setdefault(id(buf), [])
            if b not in lst:
                lst.append(b)
    for key, writers in written.items():
        buf = buffers[key]
        others = touched[key]
        shared = len(others) > 1
        for w in writers:
            if not (shared or concurrent):
                continue
            w_idx, _ = accesses(w, buf, "w")
            w_reg = region(w_idx, relax_ranges, ranges, atoms)
            if w_reg is None:
                _cannot_prove(ctx, step, label, chain[0], w.block.name, buf.name)
            if not _pure_here(w, first):
                if not _disjoint(w_reg, chain, ranges, atoms):
                    why = (f"different iterations of {label} write overlapping parts of "
                           f"{buf.name} in block {w.block.name!r}")
                    cls = RepeatedWorkError if w.block.init is not None or any(
                        iv.kind == "reduce" for iv in w.block.iter_vars) else LoopCarriedDependenceError
                    if concurrent or shared:
                        ctx.fail(cls, f"cannot {step} {label}: {why}, so the result would "
                                 "depend on which iteration runs last.",
                                 f"{step} a loop that indexes {buf.name} (a spatial loop of the "
                                 "block).", chain[0], label)
            for a in others:
                if a is w:
                    continue
                a_idx = accesses(a, buf, "r")[0] + accesses(a, buf, "w")[0]
                a_reg = region(a_idx, relax_ranges, ranges, atoms)
                if a_reg is None:
                    _cannot_prove(ctx, step, label, chain[0], a.block.name, buf.name)
                if covers(w_reg, a_reg, ranges) is not None:
                    ctx.fail(LoopCarriedDependenceError,
                             f"cannot {step} {label}: block {a.block.name!r} uses parts of "
                             f"{buf.name} that block {w.block.name!r} writes in other "
                             f"iterations of {label}, so changing the order of iterations "
                             "changes what it reads.",
                             "move the blocks so that each iteration only uses what it "
                             "computes (compute_at), or transform the loops around one block.",
                             chain[0], label)


def _written(block: Block) -> str:
    return ", ".join(b.name for b in writes_of(block)) or "its output"


def _pure_here(w: BlockRealize, blocks: list[BlockRealize]) -> bool:
    """Pure, and nothing else under the loops changes what it reads: then every iteration
    that computes an element computes the same value."""
    if not is_pure(w.block):
        return False
    reads = reads_of(w.block)
    return not any(b is not w and any(x is y for x in writes_of(b.block) for y in reads)
                   for b in blocks)


def _cannot_prove(ctx, step, label, mark, block_name, buf_name) -> None:
    ctx.fail(UnsupportedError,
             f"cannot {step} {label}: mlcbook cannot bound the part of {buf_name} that block "
             f"{block_name!r} touches, so it cannot prove the step keeps the program's meaning.",
             "use loops whose bindings are sums of loop variables times constants.", mark, label)


def _disjoint(reg: list[tuple[Linear, Linear]], chain: list[For], ranges: dict, atoms: Atoms) -> bool:
    """True when the boxes ``reg`` of different iterations of ``chain`` never overlap."""
    chain_vars = {c.loop_var for c in chain}
    # digits: chain loop vars, and atoms over exactly one chain var (x // c, x % c, ...)
    digit_of: dict[Var, Var] = {}
    place: dict[Var, tuple[int, float]] = {}
    for lo, hi in reg:
        for v in lo.coeffs:
            if v in chain_vars:
                digit_of[v], place[v] = v, (1, float("inf"))
            elif v in atoms.exprs:
                fv = [x for x in free_vars(atoms.exprs[v]) if x in chain_vars]
                if not fv:
                    continue
                p = _place_value(atoms.exprs[v])
                if len(fv) > 1 or p is None:
                    return False
                digit_of[v], place[v] = fv[0], p
    good_digits = set()
    for lo, hi in reg:
        width = hi - lo
        if not width.is_const():
            return False
        digits = sorted(((abs(c), v) for v, c in lo.coeffs.items() if v in digit_of),
                        key=lambda t: t[0])
        span, ok = width.const + 1, True
        for c, v in digits:
            r = ranges.get(v)
            if r is None or c < span:
                ok = False
                break
            span += c * (r[1] - r[0])
        if ok:
            good_digits.update(v for _, v in digits)
    for c in chain:
        ext = c.extent.value if isinstance(c.extent, Const) else None
        if ext is None:
            return False
        if ext == 1:
            continue
        spans = sorted(place[d] for d in good_digits if digit_of[d] is c.loop_var)
        reach = 1  # place values [1, reach) are covered
        for lo_p, hi_p in spans:
            if lo_p > reach:
                break
            reach = max(reach, hi_p)
        if reach < ext:
            return False
    return True


def _place_value(e) -> tuple[int, float] | None:
    """Which place values of x the atom keeps: ``x // c`` -> [c, inf), ``x % c`` -> [1, c),
    ``x // c % d`` -> [c, c*d); None for other shapes."""
    if isinstance(e, Var):
        return 1, float("inf")
    if isinstance(e, Binary) and isinstance(e.b, Const) and e.b.value > 0:
        inner = _place_value(e.a)
        if inner is None:
            return None
        lo, hi = inner
        c = e.b.value
        if e.op == "//":
            return lo * c, hi * c if hi != float("inf") else hi
        if e.op == "%":
            return lo, min(hi, lo * c)
    return None

