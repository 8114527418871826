"""The facts schedule primitives check: who reads and writes what, and which region.

The region a loop body touches in one buffer is computed per dimension as an interval
whose ends are affine forms (:mod:`mlcbook.tir.arith`) in the loops that stay fixed
(``i0 * 32`` to ``i0 * 32 + 31``) after relaxing the loops inside (``ii`` over ``[0, 31]``)::

    >>> idx, inner = accesses(loop_j0.body, Y)    # every index tuple of Y, in loop variables
    >>> region(idx, relax_ranges={ii: (0, 31)}, ranges=loop_ranges(func.body))
    [(Linear(i0 * 32), Linear(i0 * 32 + 31)), ...]

Anything not affine (``//``, ``%``) falls back to constant bounds over every loop's range,
which is always safe for what is *read* (a larger region) and is never used for what is
*written* where a smaller region would be the safe side.
"""

from __future__ import annotations

from typing import Optional

from ..tir.analysis import buffers_read, buffers_written
from ..tir.arith import Atoms, Linear, provably_le, relax, union
from ..tir.expr import Buffer, BufferLoad, Const
from ..tir.functor import Visitor, substitute
from ..tir.simplify import simplify
from ..tir.stmt import Block, BlockRealize, BufferStore, For, Stmt
from . import tree


# --- buffers read and written ---------------------------------------------------------------
def reads_of(block: Block) -> list[Buffer]:
    """Buffers the block reads: declared in ``T.reads`` or loaded in its body or init."""
    return _union([r.buffer for r in block.reads], buffers_read(block))


def writes_of(block: Block) -> list[Buffer]:
    """Buffers the block writes: declared in ``T.writes`` or stored in its body or init."""
    return _union([w.buffer for w in block.writes], buffers_written(block))


def _union(a: list[Buffer], b: list[Buffer]) -> list[Buffer]:
    return list({id(x): x for x in [*a, *b]}.values())


def _touches(a: list[Buffer], b: list[Buffer]) -> bool:
    return any(x is y for x in a for y in b)


def touches(block: Block, buffers) -> bool:
    """Does the block read or write any of ``buffers``?"""
    return _touches(reads_of(block) + writes_of(block), list(buffers))


def writes_any(block: Block, buffers) -> bool:
    """Does the block write any of ``buffers``?"""
    return _touches(writes_of(block), list(buffers))


def reads_any(block: Block, buffers) -> bool:
    """Does the block read any of ``buffers``?"""
    return _touches(reads_of(block), list(buffers))


def producers_of(scope: Stmt, realize: BlockRealize) -> list[BlockRealize]:
    """Blocks of ``scope`` before ``realize`` that write a buffer it reads."""
    blocks = tree.child_blocks(scope)
    k = next(i for i, b in enumerate(blocks) if b is realize)
    reads = reads_of(realize.block)
    return [b for b in blocks[:k] if _touches(writes_of(b.block), reads)]


def consumers_of(scope: Stmt, realize: BlockRealize) -> list[BlockRealize]:
    """Blocks of ``scope`` after ``realize`` that read a buffer it writes."""
    blocks = tree.child_blocks(scope)
    k = next(i for i, b in enumerate(blocks) if b is realize)
    writes = writes_of(realize.block)
    return [b for b in blocks[k + 1:] if _touches(reads_of(b.block), writes)]


# --- accesses of a subtree ---------------------------------------------------------------------
def accesses(s: Stmt, buffer: Buffer, kind: str = "r", outer: Optional[dict] = None):
    """Index tuples of ``buffer`` read (``kind="r"``) or written (``"w"``) anywhere under ``s``,
    with block iteration variables replaced by their bindings.

    Returns ``(index_tuples, inner_ranges)``: each tuple is in terms of loop variables
    outside ``s`` and the loops inside ``s``, whose ranges ``inner_ranges`` holds.
    ``outer`` maps block iteration variables of enclosing blocks to their values.
    """
    found: list[tuple] = []
    inner: dict = {}
    _collect(s, buffer, kind, dict(outer or {}), found, inner)
    return found, inner


def _collect(s, buffer, kind, vmap, found, inner) -> None:
    if isinstance(s, For):
        if isinstance(s.extent, Const):
            inner[s.loop_var] = (0, s.extent.value - 1)
        _collect(s.body, buffer, kind, vmap, found, inner)
        return
    if isinstance(s, BlockRealize):
        vm = dict(vmap)
        for iv, value in zip(s.block.iter_vars, s.iter_values):
            vm[iv.var] = substitute(value, vmap)
        # the block's own domain bounds its iteration variables even where bindings cannot
        for iv in s.block.iter_vars:
            if isinstance(iv.extent, Const):
                inner.setdefault(iv.var, (0, iv.extent.value - 1))
        for child in (s.block.init, s.block.body):
            if child is not None:
                _collect(child, buffer, kind, vm, found, inner)
        return
    if isinstance(s, BufferStore):
        if kind == "w" and s.buffer is buffer:
            found.append(tuple(substitute(i, vmap) for i in s.indices))
        if kind == "r":
            _loads(s.value, buffer, vmap, found)
            for i in s.indices:
                _loads(i, buffer, vmap, found)
        return
    for c in tree.child_stmts(s):
        _collect(c, buffer, kind, vmap, found, inner)
    if kind == "r" and hasattr(s, "cond"):
        _loads(s.cond, buffer, vmap, found)


def _loads(e, buffer, vmap, found) -> None:
    _Loads(buffer, vmap, found).visit(e)


# (a module-level visitor, not a class made per call: thousands of calls per compile)
class _Loads(Visitor):
    def __init__(self, buffer, vmap, found):
        self.buffer, self.vmap, self.found = buffer, vmap, found

    def visit_BufferLoad(self, n: BufferLoad):
        if n.buffer is self.buffer:
            self.found.append(tuple(substitute(i, self.vmap) for i in n.indices))
        self.generic_visit(n)


def region(index_tuples, relax_ranges: dict, ranges: dict,
           atoms: Optional[Atoms] = None) -> Optional[list[tuple[Linear, Linear]]]:
    """Per-dimension inclusive bounds covering every index tuple; None if one is unbounded."""
    out: Optional[list] = None
    for idx in index_tuples:
        dims = []
        for e in idx:
            # with the loops' ranges, a split loop's (jo * 64 + ji) // 64 is just jo
            r = relax(simplify(e, ranges), relax_ranges, ranges, atoms)
            if r is None:
                return None
            dims.append(r)
        if out is None:
            out = dims
        else:
            merged = [union(a, b, ranges) for a, b in zip(out, dims)]
            if any(m is None for m in merged):
                return None
            out = merged
    return out


def covers(outer: list[tuple[Linear, Linear]], inner: list[tuple[Linear, Linear]],
           ranges: dict) -> Optional[int]:
    """The first dimension where ``inner`` is not provably inside ``outer``, or None if covered."""
    for d, ((olo, ohi), (ilo, ihi)) in enumerate(zip(outer, inner)):
        if not (provably_le(olo, ilo, ranges) and provably_le(ihi, ohi, ranges)):
            return d
    return None


def load_indices(block: Block, buffer: Buffer) -> list[tuple]:
    """Index tuples of every load of ``buffer`` in the block's init and body, in order."""
    found: list[tuple] = []
    for part in (block.init, block.body):
        if part is not None:
            for s in tree.walk(part):
                for name in ("value", "cond"):
                    if hasattr(s, name):
                        _loads(getattr(s, name), buffer, {}, found)
                if isinstance(s, BufferStore):
                    for i in s.indices:
                        _loads(i, buffer, {}, found)
    return found
