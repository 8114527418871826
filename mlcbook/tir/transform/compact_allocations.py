"""Place each allocation as deep as it can go, and shrink it to what one visit touches.

A schedule that caches C in a ``"local"`` buffer (``cache_write`` + ``reverse_compute_at``)
still allocates the whole ``(n, m)`` buffer in the root block, but every iteration of the
``io, jo`` loops only touches a ``4 x 64`` tile of it. This pass moves the ``Allocate``
into those loops and re-indexes the buffer to the tile, so that the tile can live in
registers::

    Y = allocate((1024, 1024))                 for jo, io:
    for jo, io:                                    Y = allocate((4, 64))
        Y[io*4 + ii, jo*64 + ji] = ...     ->         Y[ii, ji] = ...

An allocation moves into a loop only when different iterations of the loop touch disjoint
parts of the buffer (some dimension is indexed ``c*v + rest`` with the same ``rest`` outside
the loop and ``rest`` inside the loop spanning less than ``c``), so no value flows from one
iteration to the next through it. It never moves into a vectorized loop (one allocation
serves all lanes there). Then each dimension whose indices are ``base + offset`` with the
same ``base`` everywhere shrinks to the span of the offsets.
"""

from __future__ import annotations

from typing import Optional

from ..analysis import expr_key, free_vars
from ..expr import Buffer, BufferLoad, Const, PrimExpr
from ..functor import Mutator, Visitor
from ..simplify import _Lin, _Simplifier, simplify
from ..stmt import Allocate, BufferStore, For, IfThenElse, SeqStmt, Stmt


def compact_allocations(body: Stmt) -> Stmt:
    """Return ``body`` with every ``Allocate`` placed and compacted (see the module docstring)."""
    return _Compactor().visit(body)


class _Compactor(Mutator):
    def visit_Allocate(self, s: Allocate):
        body = self.visit(s.body)
        buf = s.buffer
        path, target = _sink(buf, body)
        new_buf, rewritten = _compact(buf, target)
        placed = Allocate(new_buf, rewritten)
        return _replace(body, path, placed)


# --- where the allocation goes -------------------------------------------------------------------
def _accesses(buf: Buffer, node) -> list[tuple]:
    out: list[tuple] = []

    class _V(Visitor):
        def visit_BufferLoad(self, e: BufferLoad):
            if e.buffer is buf:
                out.append(e.indices)
            self.generic_visit(e)

        def visit_BufferStore(self, st: BufferStore):
            if st.buffer is buf:
                out.append(st.indices)
            self.generic_visit(st)

    _V().visit(node)
    return out


def _sink(buf: Buffer, body: Stmt) -> tuple[list, Stmt]:
    """The path (list of (node, child field or index)) from ``body`` to the deepest statement
    that can own the allocation, and that statement."""
    path: list = []
    node = body
    while True:
        nxt = None
        if isinstance(node, SeqStmt):
            users = [k for k, st in enumerate(node.stmts) if _accesses(buf, st)]
            if len(users) == 1:
                nxt = (users[0], node.stmts[users[0]])
        elif isinstance(node, For):
            if node.kind != "vectorized" and _disjoint_iterations(buf, node):
                nxt = ("body", node.body)
        elif isinstance(node, IfThenElse):
            if not _accesses(buf, node.cond):
                sides = [(f, st) for f, st in (("then_case", node.then_case),
                                               ("else_case", node.else_case))
                         if st is not None and _accesses(buf, st)]
                if len(sides) == 1:
                    nxt = sides[0]
        elif isinstance(node, Allocate):
            nxt = ("body", node.body)
        if nxt is None:
            return path, node
        path.append((node, nxt[0]))
        node = nxt[1]


def _replace(node: Stmt, path: list, new: Stmt) -> Stmt:
    if not path:
        return new
    (parent, where), rest = path[0], path[1:]
    child = parent.stmts[where] if isinstance(where, int) else getattr(parent, where)
    child = _replace(child, rest, new)
    if isinstance(where, int):
        stmts = list(parent.stmts)
        stmts[where] = child
        return SeqStmt(tuple(stmts))
    fields = {f: getattr(parent, f) for f in _FIELDS[type(parent)]}
    fields[where] = child
    return type(parent)(**fields)


_FIELDS = {For: ("loop_var", "extent", "body", "kind", "annotations"),
           IfThenElse: ("cond", "then_case", "else_case"), Allocate: ("buffer", "body")}


def _loop_ranges(node) -> dict:
    """``{var: (0, extent - 1) or None}`` for every loop inside ``node`` (None: the extent
    is not a constant)."""
    ranges: dict = {}

    class _V(Visitor):
        def visit_For(self, f: For):
            ranges[f.loop_var] = (0, f.extent.value - 1) if isinstance(f.extent, Const) else None
            self.generic_visit(f)

    _V().visit(node)
    return ranges


def _split(index: PrimExpr, inner: dict, v=None) -> Optional[tuple]:
    """``index`` as ``(coef of v, outer part key, outer part, inner lin)``, or None when a term
    mixes variables from inside and outside."""
    s = _Simplifier(None)
    lin = s._lin(simplify(index))
    coef, outer, inner_lin = 0, _Lin(lin.dtype), _Lin(lin.dtype, const=lin.const)
    for key, (c, atom) in lin.terms.items():
        fv = set(free_vars(atom))
        if v is not None and atom is v:
            coef += c
        elif v is not None and v in fv:
            return None
        elif fv & inner.keys():
            if not fv <= inner.keys():
                return None
            inner_lin.terms[key] = [c, atom]
        else:
            outer.terms[key] = [c, atom]
    okey = tuple(sorted((k, c) for k, (c, _) in outer.terms.items()))
    return coef, okey, outer, inner_lin


def _span(lin: _Lin, inner: dict) -> Optional[tuple[int, int]]:
    """Bounds of ``lin`` over the inner loops (None if a loop's extent is not constant)."""
    return _Simplifier({k: r for k, r in inner.items() if r is not None})._bounds_of(lin)


def _disjoint_iterations(buf: Buffer, loop: For) -> bool:
    if isinstance(loop.extent, Const) and loop.extent.value == 1:
        return True
    inner = _loop_ranges(loop.body)
    accesses = _accesses(buf, loop.body)
    for dim in range(buf.ndim):
        parts = [_split(idx[dim], inner, loop.loop_var) for idx in accesses]
        if any(p is None for p in parts):
            continue
        coefs = {p[0] for p in parts}
        outers = {p[1] for p in parts}
        if len(coefs) != 1 or len(outers) != 1 or 0 in coefs:
            continue
        spans = [_span(p[3], inner) for p in parts]
        if any(sp is None for sp in spans):
            continue
        lo, hi = min(sp[0] for sp in spans), max(sp[1] for sp in spans)
        if hi - lo < abs(coefs.pop()):
            return True
    return False


# --- how big it needs to be ---------------------------------------------------------------------
def _compact(buf: Buffer, node: Stmt) -> tuple[Buffer, Stmt]:
    inner = _loop_ranges(node)
    accesses = _accesses(buf, node)
    shape, shifts = [], []
    for dim, size in enumerate(buf.shape):
        parts = [_split(idx[dim], inner) for idx in accesses]
        new = None
        if parts and all(p is not None for p in parts) and len({p[1] for p in parts}) == 1:
            spans = [_span(p[3], inner) for p in parts]
            if all(sp is not None for sp in spans):
                lo, hi = min(sp[0] for sp in spans), max(sp[1] for sp in spans)
                if hi - lo + 1 < size:
                    new = (hi - lo + 1, parts[0][2], lo)
        if new is None:
            shape.append(size)
            shifts.append(None)
        else:
            shape.append(new[0])
            shifts.append(new[1:])
    if all(s is None for s in shifts):
        return buf, node
    new_buf = Buffer(buf.name, tuple(shape), buf.dtype, buf.scope)
    s = _Simplifier(None)

    def reindex(indices):
        out = []
        for idx, shift in zip(indices, shifts):
            if shift is None:
                out.append(idx)
            else:
                outer, lo = shift
                lin = s._lin(simplify(idx)).add(outer, -1)
                lin.const -= lo
                out.append(s._from_lin(lin))
        return tuple(out)

    class _Reindex(Mutator):
        def visit_BufferLoad(self, e: BufferLoad):
            e = self.generic_visit(e)
            return BufferLoad(new_buf, reindex(e.indices)) if e.buffer is buf else e

        def visit_BufferStore(self, st: BufferStore):
            st = self.generic_visit(st)
            if st.buffer is not buf:
                return st
            return BufferStore(new_buf, st.value, reindex(st.indices))

    return new_buf, _Reindex().visit(node)
