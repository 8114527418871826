"""The facts schedule primitives check: who reads and writes what, and which region.

*Affine forms* (:class:`Aff`) are ``c0 + c1*x1 + c2*x2 ...`` with int coefficients. The
region a loop body touches in one buffer is computed per dimension as an interval whose
ends are affine in the loops that stay fixed (``i0 * 32`` to ``i0 * 32 + 31``) after
relaxing the loops inside (``ii`` over ``[0, 31]``)::

    >>> accesses(loop_j0.body, Y)        # every index tuple of Y, in loop variables
    >>> region(accs, relax={ii: (0, 31)}, ranges=all_loop_ranges)
    [(Aff(i0*32), Aff(i0*32 + 31)), ...]

Anything not affine (``//``, ``%``) falls back to constant bounds over every loop's range,
which is always safe for what is *read* (a larger region) and is never used for what is
*written* where a smaller region would be the safe side.
"""

from __future__ import annotations

from typing import Optional

from ..tir.analysis import expr_key, free_vars, int_bounds
from ..tir.expr import Binary, Buffer, BufferLoad, Cast, Const, PrimExpr, Unary, Var, is_int
from ..tir.functor import Visitor, substitute
from ..tir.simplify import simplify
from ..tir.stmt import Block, BlockRealize, BufferStore, For, Stmt
from . import tree


# --- buffers read and written ---------------------------------------------------------------
def _access_buffers(block: Block) -> tuple[list[Buffer], list[Buffer]]:
    reads: dict[int, Buffer] = {}
    writes: dict[int, Buffer] = {}
    for r in block.reads:
        reads.setdefault(id(r.buffer), r.buffer)
    for w in block.writes:
        writes.setdefault(id(w.buffer), w.buffer)

    class _V(Visitor):
        def visit_BufferLoad(self, n: BufferLoad):
            reads.setdefault(id(n.buffer), n.buffer)
            self.generic_visit(n)

        def visit_BufferStore(self, n: BufferStore):
            writes.setdefault(id(n.buffer), n.buffer)
            self.generic_visit(n)

    _V().visit(block.body)
    if block.init is not None:
        _V().visit(block.init)
    return list(reads.values()), list(writes.values())


def reads_of(block: Block) -> list[Buffer]:
    """Buffers the block reads: declared in ``T.reads`` or loaded in its body."""
    return _access_buffers(block)[0]


def writes_of(block: Block) -> list[Buffer]:
    """Buffers the block writes: declared in ``T.writes`` or stored in its body."""
    return _access_buffers(block)[1]


def _touches(a: list[Buffer], b: list[Buffer]) -> bool:
    return any(x is y for x in a for y in b)


def touches(block: Block, buffers) -> bool:
    """Does the block read or write any of ``buffers``?"""
    return _touches(reads_of(block) + writes_of(block), list(buffers))


def writes_any(block: Block, buffers) -> bool:
    """Does the block write any of ``buffers``?"""
    return _touches(writes_of(block), list(buffers))


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


# --- affine forms -----------------------------------------------------------------------------
class Aff:
    """``const + sum(coeff * var)``; variables are compared by identity."""

    __slots__ = ("coeffs", "const")

    def __init__(self, coeffs: Optional[dict] = None, const: int = 0):
        self.coeffs = {v: c for v, c in (coeffs or {}).items() if c != 0}
        self.const = const

    def __add__(self, o: "Aff") -> "Aff":
        c = dict(self.coeffs)
        for v, k in o.coeffs.items():
            c[v] = c.get(v, 0) + k
        return Aff(c, self.const + o.const)

    def scale(self, k: int) -> "Aff":
        return Aff({v: c * k for v, c in self.coeffs.items()}, self.const * k)

    def __sub__(self, o: "Aff") -> "Aff":
        return self + o.scale(-1)

    def is_const(self) -> bool:
        return not self.coeffs

    def to_expr(self) -> PrimExpr:
        """A tidy expression: ``i0 * 32 + 4``, ``j``, ``0``."""
        out: Optional[PrimExpr] = None
        for v, c in self.coeffs.items():
            term = v if c == 1 else v * c
            out = term if out is None else out + term
        if out is None:
            return Const(self.const, "int32")
        if self.const > 0:
            out = out + self.const
        elif self.const < 0:
            out = out - (-self.const)
        return out

    def __repr__(self) -> str:
        return f"Aff({self.to_expr()})"


class Atoms:
    """Names for non-affine pieces (``f // 32``) so that they can be compared across regions.

    Two occurrences of the same expression over the same variables become the same atom,
    a fresh Var whose range is the expression's bounds.
    """

    def __init__(self, ranges: dict):
        self.ranges = ranges
        self.by_key: dict = {}
        self.exprs: dict = {}   # atom var -> the expression it stands for

    def atom(self, e: PrimExpr) -> Optional[Var]:
        key = expr_key(e)
        v = self.by_key.get(key)
        if v is None:
            b = int_bounds(e, self.ranges)
            if b is None:
                return None
            v = Var(f"atom{len(self.by_key)}", e.dtype)
            self.by_key[key] = v
            self.exprs[v] = e
            self.ranges[v] = b
        return v


def affine(e: PrimExpr, atoms: Optional[Atoms] = None, relaxed: Optional[dict] = None) -> Optional[Aff]:
    """``e`` as an affine form, or None if it is not one (``//``, ``%``, loads, ...).

    With ``atoms``, a non-affine piece that uses none of the ``relaxed`` variables becomes
    an atom instead of making the whole expression non-affine.
    """
    if isinstance(e, Const):
        return Aff({}, int(e.value)) if is_int(e.dtype) else None
    if isinstance(e, Var):
        return Aff({e: 1})
    if isinstance(e, Cast):
        return affine(e.value, atoms, relaxed) if is_int(e.dtype) and is_int(e.value.dtype) else None
    if isinstance(e, Unary) and e.op == "-":
        a = affine(e.a, atoms, relaxed)
        return None if a is None else a.scale(-1)
    if isinstance(e, Binary) and e.op in ("+", "-", "*"):
        a, b = affine(e.a, atoms, relaxed), affine(e.b, atoms, relaxed)
        if a is not None and b is not None:
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a - b
            if a.is_const():
                return b.scale(a.const)
            if b.is_const():
                return a.scale(b.const)
    if atoms is not None and is_int(e.dtype) and not any(
            v in (relaxed or {}) for v in free_vars(e)):
        v = atoms.atom(e)
        if v is not None:
            return Aff({v: 1})
    return None


def relax(e: PrimExpr, relax_ranges: dict, ranges: dict,
          atoms: Optional[Atoms] = None) -> Optional[tuple[Aff, Aff]]:
    """Inclusive bounds of ``e`` when the variables of ``relax_ranges`` take any value in
    their ranges; the other variables stay symbolic. Falls back to constant bounds over
    ``ranges`` (every variable) when ``e`` is not affine; None if it cannot be bounded."""
    a = affine(e, atoms, relax_ranges)
    if a is not None:
        lo, hi = Aff({}, a.const), Aff({}, a.const)
        for v, c in a.coeffs.items():
            if v in relax_ranges:
                r0, r1 = relax_ranges[v]
                lo = lo + Aff({}, min(c * r0, c * r1))
                hi = hi + Aff({}, max(c * r0, c * r1))
            else:
                lo, hi = lo + Aff({v: c}), hi + Aff({v: c})
        return lo, hi
    b = int_bounds(e, ranges)
    if b is None:
        return None
    return Aff({}, b[0]), Aff({}, b[1])


def const_bounds(a: Aff, ranges: dict) -> Optional[tuple[int, int]]:
    return int_bounds(a.to_expr(), ranges)


def union(x: tuple[Aff, Aff], y: tuple[Aff, Aff], ranges: dict) -> Optional[tuple[Aff, Aff]]:
    """The smallest interval with affine ends holding both (constant if the ends differ in shape)."""
    lo_d, hi_d = x[0] - y[0], x[1] - y[1]
    if lo_d.is_const() and hi_d.is_const():
        return (x[0] if lo_d.const <= 0 else y[0]), (x[1] if hi_d.const >= 0 else y[1])
    bs = [const_bounds(a, ranges) for a in (*x, *y)]
    if any(b is None for b in bs):
        return None
    return Aff({}, min(b[0] for b in bs)), Aff({}, max(b[1] for b in bs))


def provably_le(a: Aff, b: Aff, ranges: dict) -> bool:
    """True when ``a <= b`` for every value of the variables in ``ranges``."""
    d = b - a
    if d.is_const():
        return d.const >= 0
    bd = const_bounds(d, ranges)
    return bd is not None and bd[0] >= 0


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
    class _V(Visitor):
        def visit_BufferLoad(self, n: BufferLoad):
            if n.buffer is buffer:
                found.append(tuple(substitute(i, vmap) for i in n.indices))
            self.generic_visit(n)

    _V().visit(e)


def region(index_tuples, relax_ranges: dict, ranges: dict,
           atoms: Optional[Atoms] = None) -> Optional[list[tuple[Aff, Aff]]]:
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


def covers(outer: list[tuple[Aff, Aff]], inner: list[tuple[Aff, Aff]], ranges: dict) -> Optional[int]:
    """The first dimension where ``inner`` is not provably inside ``outer``, or None if covered."""
    for d, ((olo, ohi), (ilo, ihi)) in enumerate(zip(outer, inner)):
        if not (provably_le(olo, ilo, ranges) and provably_le(ihi, ohi, ranges)):
            return d
    return None


def all_loop_ranges(root: Stmt) -> dict:
    """Ranges of every constant-extent loop variable and block iteration variable under ``root``."""
    out: dict = {}
    for s in tree.walk(root):
        if isinstance(s, For) and isinstance(s.extent, Const):
            out[s.loop_var] = (0, s.extent.value - 1)
        elif isinstance(s, BlockRealize):
            for iv in s.block.iter_vars:
                if isinstance(iv.extent, Const):
                    out[iv.var] = (0, iv.extent.value - 1)
    return out


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
