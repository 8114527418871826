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

import numpy as np

from ..analysis import free_vars, loop_ranges
from ..arith import int_values, linear
from ..expr import Buffer, BufferLoad, Const, PrimExpr
from ..functor import Mutator, Visitor, post_order_visit
from ..simplify import simplify
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


def _inner_loops(node) -> tuple[set, dict]:
    """The variables of the loops inside ``node``, and the ranges of those whose extent is
    a constant."""
    loop_vars: set = set()
    post_order_visit(node, lambda n: loop_vars.add(n.loop_var) if isinstance(n, For) else None)
    return loop_vars, loop_ranges(node)


def _split(index: PrimExpr, loops: set) -> Optional[tuple]:
    """``index`` as ``(outer part key, outer part, inner part)`` with the inner part over the
    ``loops`` inside (and the constant), or None when a term mixes variables from inside and
    outside."""
    lin = linear(simplify(index))
    outer_atoms = set()
    for _, atom in lin.terms.values():
        fv = set(free_vars(atom))
        if not fv & loops:
            outer_atoms.add(id(atom))
        elif not fv <= loops:
            return None
    outer = lin.part(lambda atom: id(atom) in outer_atoms)
    okey = tuple(sorted((k, c) for k, (c, _) in outer.terms.items()))
    return okey, outer, lin - outer


def _split_by_var(index: PrimExpr, loops: set, v) -> Optional[tuple]:
    """``index`` as ``(key of its part in v, that part's terms, key of the rest outside,
    inner part)``; None when a term mixes the loops inside with those outside."""
    parts = _split(index, loops)
    if parts is None:
        return None
    _, outer, inner_lin = parts
    vterms = [(k, c, a) for k, (c, a) in outer.terms.items() if v in free_vars(a)]
    rest = tuple(sorted((k, c) for k, (c, a) in outer.terms.items() if v not in free_vars(a)))
    return tuple(sorted((k, c) for k, c, _ in vterms)), vterms, rest, inner_lin


def _disjoint_iterations(buf: Buffer, loop: For) -> bool:
    """Whether no two iterations of ``loop`` touch a common element of ``buf``.

    A dimension indexed ``c * a(v) + rest`` (the same ``a`` and ``rest`` outside the loop
    in every access, ``rest`` inside spanning less than ``c``) separates iterations whose
    ``a(v)`` differ; the iterations are disjoint when the separating ``a``s together tell
    every iteration apart: ``v`` itself, or ``v // 16`` and ``v % 16`` of a fused loop."""
    if isinstance(loop.extent, Const) and loop.extent.value == 1:
        return True
    v = loop.loop_var
    loops, inner = _inner_loops(loop.body)
    accesses = _accesses(buf, loop.body)
    separating = []
    for dim in range(buf.ndim):
        parts = [_split_by_var(idx[dim], loops, v) for idx in accesses]
        if any(p is None for p in parts):
            continue
        if len({p[0] for p in parts}) != 1 or len({p[2] for p in parts}) != 1:
            continue
        vterms = parts[0][1]
        if len(vterms) != 1:
            continue
        spans = [p[3].bounds(inner) for p in parts]
        if any(sp is None for sp in spans):
            continue
        lo, hi = min(sp[0] for sp in spans), max(sp[1] for sp in spans)
        _, coef, atom = vterms[0]
        if hi - lo < abs(coef):
            separating.append(atom)
    if any(atom is v for atom in separating):
        return True
    return bool(separating) and _tell_apart(separating, v, loop.extent)


#: enumerate at most this many iterations to check that fused-loop atoms tell them apart
_MAX_ENUMERATED = 1 << 16


def _tell_apart(atoms: list, v, extent) -> bool:
    """Whether the values of ``atoms`` differ between any two iterations ``v`` of the loop."""
    if not isinstance(extent, Const) or extent.value > _MAX_ENUMERATED:
        return False
    env = {v: np.arange(extent.value, dtype=np.int64)}
    try:
        columns = [np.broadcast_to(int_values(a, env), (extent.value,)) for a in atoms]
    except ValueError:
        return False
    return len(set(zip(*(c.tolist() for c in columns)))) == extent.value


# --- how big it needs to be ---------------------------------------------------------------------
def _compact(buf: Buffer, node: Stmt) -> tuple[Buffer, Stmt]:
    loops, inner = _inner_loops(node)
    accesses = _accesses(buf, node)
    shape, shifts = [], []
    for dim, size in enumerate(buf.shape):
        parts = [_split(idx[dim], loops) for idx in accesses]
        new = None
        if parts and all(p is not None for p in parts) and len({p[0] for p in parts}) == 1:
            spans = [p[2].bounds(inner) for p in parts]
            if all(sp is not None for sp in spans):
                lo, hi = min(sp[0] for sp in spans), max(sp[1] for sp in spans)
                if hi - lo + 1 < size:
                    new = (hi - lo + 1, parts[0][1], lo)
        if new is None:
            shape.append(size)
            shifts.append(None)
        else:
            shape.append(new[0])
            shifts.append(new[1:])
    if all(s is None for s in shifts):
        return buf, node
    new_buf = Buffer(buf.name, tuple(shape), buf.dtype, buf.scope)

    def reindex(indices):
        out = []
        for idx, shift in zip(indices, shifts):
            if shift is None:
                out.append(idx)
            else:
                outer, lo = shift
                out.append((linear(simplify(idx)) - outer - lo).to_expr())
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
