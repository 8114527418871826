"""Structural equality and hashing of graph functions and mixed modules.

Two graphs are equal when they compute the same dataflow: same ops, attributes, types,
weight names and values, and the same sharing of values; input variables and call names
may differ (``x`` vs ``data``, ``relu`` vs ``relu_3``). PrimFuncs inside a module are compared
with the loop IR's :func:`mlcbook.tir.structural_equal`.

    >>> structural_equal(f, g)
    True
"""

from __future__ import annotations

import numpy as np

from ..errors import StructuralMismatchError
from ..ops.types import is_float_dtype
from ..tir.function import IRModule, PrimFunc
from ..tir.structural import structural_equal as tir_equal
from ..tir.structural import structural_hash as tir_hash
from .expr import (Call, CallTIR, Constant, Expr, Function, Tuple, TupleGetItem, children,
                   post_order)


class _Mismatch(Exception):
    def __init__(self, where: str, why: str):
        self.where, self.why = where, why


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=is_float_dtype(a.dtype)))


class _GraphEqual:
    def __init__(self):
        self.fwd: dict[int, Expr] = {}
        self.bwd: dict[int, Expr] = {}
        self.weights: list[tuple[Constant, Constant]] = []

    def bind(self, a: Expr, b: Expr, where: str) -> None:
        fa, fb = self.fwd.get(id(a)), self.bwd.get(id(b))
        if fa is None and fb is None:
            self.fwd[id(a)], self.bwd[id(b)] = b, a
        elif fa is not b or fb is not a:
            raise _Mismatch(where, "values are shared differently (one graph reuses a value "
                                   "where the other computes a new one)")

    def owners(self, root_a: Expr, root_b: Expr) -> None:
        """Weight owners name calls; the named calls must correspond, whatever their names."""
        calls_a = {n.name: n for n in post_order(root_a) if isinstance(n, (Call, CallTIR))}
        calls_b = {n.name: n for n in post_order(root_b) if isinstance(n, (Call, CallTIR))}
        for wa, wb in self.weights:
            ca, cb = calls_a.get(wa.owner), calls_b.get(wb.owner)
            if (ca is None) != (cb is None) or (ca is not None and self.fwd.get(id(ca)) is not cb):
                raise _Mismatch(f"weight {wa.name!r}", f"owned by {wa.owner!r} in one graph but "
                                                       f"by {wb.owner!r} in the other")

    def function(self, f: Function, g: Function) -> None:
        if len(f.params) != len(g.params):
            raise _Mismatch("params", f"{len(f.params)} inputs vs {len(g.params)}")
        for k, (p, q) in enumerate(zip(f.params, g.params)):
            if p.type != q.type:
                raise _Mismatch(f"input {k}", f"{p.type} vs {q.type}")
            self.bind(p, q, f"input {k}")
        self.expr(f.body, g.body)

    def expr(self, root_a: Expr, root_b: Expr) -> None:
        stack = [(root_a, root_b)]
        while stack:
            a, b = stack.pop()
            if id(a) in self.fwd or id(b) in self.bwd:
                self.bind(a, b, _where(a))
                continue
            self.node(a, b)
            self.bind(a, b, _where(a))
            stack.extend(zip(children(a), children(b)))
        self.owners(root_a, root_b)

    def node(self, a: Expr, b: Expr) -> None:
        where = _where(a)
        if type(a) is not type(b):
            raise _Mismatch(where, f"{type(a).__name__} vs {type(b).__name__}")
        if a.type != b.type:
            raise _Mismatch(where, f"type {a.type} vs {b.type}")
        if isinstance(a, Constant):
            if a.name != b.name or bool(a.owner) != bool(b.owner):
                raise _Mismatch(where, f"weight {a.name!r} (owner {a.owner!r}) vs {b.name!r} "
                                       f"(owner {b.owner!r})")
            self.weights.append((a, b))
            if not _same_array(a.data, b.data):
                raise _Mismatch(where, "constant values differ")
        elif isinstance(a, Call):
            if a.op != b.op or a.attrs != b.attrs or len(a.args) != len(b.args):
                raise _Mismatch(where, f"{a.op}{dict(a.attrs)} vs {b.op}{dict(b.attrs)}")
        elif isinstance(a, CallTIR):
            if a.func != b.func or a.attrs != b.attrs or len(a.args) != len(b.args):
                raise _Mismatch(where, f"call_tir {a.func!r}{dict(a.attrs)} vs "
                                f"{b.func!r}{dict(b.attrs)}")
        elif isinstance(a, Tuple):
            if len(a.fields) != len(b.fields):
                raise _Mismatch(where, f"{len(a.fields)} fields vs {len(b.fields)}")
        elif isinstance(a, TupleGetItem) and a.index != b.index:
            raise _Mismatch(where, f"item {a.index} vs {b.index}")


def _where(e: Expr) -> str:
    if isinstance(e, Call):
        return f"call {e.name or e.op!r}"
    if isinstance(e, CallTIR):
        return f"call_tir {e.name or e.func!r}"
    return type(e).__name__


def _compare(a, b) -> None:
    if isinstance(a, IRModule) and isinstance(b, IRModule):
        if sorted(a.functions) != sorted(b.functions):
            raise _Mismatch("module", f"functions {sorted(a.functions)} vs {sorted(b.functions)}")
        for name in sorted(a.functions):
            try:
                _compare(a[name], b[name])
            except _Mismatch as m:
                raise _Mismatch(f"[{name!r}] {m.where}", m.why) from None
    elif isinstance(a, PrimFunc) or isinstance(b, PrimFunc):
        if not (isinstance(a, PrimFunc) and isinstance(b, PrimFunc) and tir_equal(a, b)):
            raise _Mismatch("PrimFunc", "the loop-level functions differ "
                                        "(mb.tir.assert_structural_equal shows where)")
    elif isinstance(a, Function) and isinstance(b, Function):
        _GraphEqual().function(a, b)
    elif isinstance(a, Expr) and isinstance(b, Expr):
        _GraphEqual().expr(a, b)
    else:
        raise _Mismatch("top", f"{type(a).__name__} vs {type(b).__name__}")


def structural_equal(a, b) -> bool:
    """True when ``a`` and ``b`` (graph functions, expressions or modules) are the same graph."""
    try:
        _compare(a, b)
        return True
    except _Mismatch:
        return False


def assert_structural_equal(a, b) -> None:
    """Raise :class:`StructuralMismatchError` saying where ``a`` and ``b`` first differ."""
    try:
        _compare(a, b)
    except _Mismatch as m:
        raise StructuralMismatchError(f"graphs differ at {m.where}: {m.why}") from None


def structural_hash(x) -> int:
    """A hash that agrees with :func:`structural_equal`."""
    if isinstance(x, IRModule):
        return hash(tuple((k, structural_hash(x[k])) for k in sorted(x.functions)))
    if isinstance(x, PrimFunc):
        return tir_hash(x)
    root = x.body if isinstance(x, Function) else x
    params = x.params if isinstance(x, Function) else ()
    ids = {id(p): k for k, p in enumerate(params)}
    items: list = [tuple(p.type for p in params)]
    nodes = post_order(root)
    call_index = {n.name: k for k, n in enumerate(nodes) if isinstance(n, (Call, CallTIR))}
    for n in nodes:
        ids.setdefault(id(n), len(ids))
        kids = tuple(ids[id(c)] for c in children(n))
        if isinstance(n, Constant):
            items.append(("c", n.name, call_index.get(n.owner), n.type, n.data.tobytes()))
        elif isinstance(n, Call):
            items.append(("call", n.op, n.attrs, kids))
        elif isinstance(n, CallTIR):
            items.append(("tir", n.func, n.out_type, n.attrs, kids))
        elif isinstance(n, TupleGetItem):
            items.append(("get", n.index, kids))
        else:
            items.append((type(n).__name__, n.type, kids))
    return hash(tuple(items))
