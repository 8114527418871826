"""Visitor, mutator and functor base classes: the one place that knows how to walk the IR.

A pass subclasses :class:`Visitor` (to collect facts) or :class:`Mutator` (to rebuild) and
overrides ``visit_<NodeClass>`` for the nodes it cares about; every other node is walked
through its dataclass fields, so a new node type needs no change here.

    >>> class CountLoads(Visitor):
    ...     def __init__(self): self.n = 0
    ...     def visit_BufferLoad(self, node):
    ...         self.n += 1
    ...         self.generic_visit(node)

An evaluator or a code generator, which must handle *every* node and returns a value for
each, subclasses :class:`ExprFunctor` (``expr_<NodeClass>`` methods, called by ``expr``)
and/or :class:`StmtFunctor` (``stmt_<NodeClass>``, called by ``stmt``). A node with no
method is an error, never a silent walk through its fields.

    >>> class Depth(ExprFunctor):
    ...     def expr_Var(self, e): return 1
    ...     def expr_Const(self, e): return 1
    ...     def expr_Binary(self, e): return 1 + max(self.expr(e.a), self.expr(e.b))
    >>> Depth().expr(Var("i") + 1)
    2

All of them find a node's method the same way, through :func:`dispatch`: one table per
functor class, keyed by node class, filled on first use.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from ..errors import TIRError
from .expr import Buffer, PrimExpr, Var
from .stmt import BufferRegion, IterVar, Range, Stmt

NODE_TYPES = (PrimExpr, Stmt, Buffer, BufferRegion, Range, IterVar)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _init_fields(cls: type) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        _FIELDS[cls] = names
    return names


def is_node(x: Any) -> bool:
    return isinstance(x, NODE_TYPES)


def children(node) -> list:
    """The IR nodes directly inside ``node``, in field order."""
    # (the hottest function of a compile: the checks are written inline, not called)
    out = []
    for name in _FIELDS.get(type(node)) or _init_fields(type(node)):
        v = getattr(node, name)
        if isinstance(v, NODE_TYPES):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(x for x in v if isinstance(x, NODE_TYPES))
    return out


#: the attribute of each functor kind's dispatch table
_TABLES = {p: f"_dispatch_{p}" for p in ("visit_", "expr_", "stmt_")}


def dispatch(functor_cls: type, prefix: str, node_cls: type) -> Callable | None:
    """The function ``functor_cls`` defines for nodes of ``node_cls`` (the attribute
    ``prefix + node_cls.__name__``), or None; looked up once per (class, prefix, node class).

        >>> dispatch(Depth, "expr_", Binary) is Depth.expr_Binary
        True
    """
    # the table lives on the class itself (its own __dict__, never a base class's), so a
    # functor class defined inside a function is freed with it: a module-level table keyed
    # by class kept every such class alive, thousands per compiled model
    attr = _TABLES.get(prefix) or f"_dispatch_{prefix}"
    try:    # (a million lookups per compiled model: the found case first)
        return functor_cls.__dict__[attr][node_cls]
    except KeyError:
        pass
    table = functor_cls.__dict__.get(attr)
    if table is None:
        table = {}
        setattr(functor_cls, attr, table)
    fn = table[node_cls] = getattr(functor_cls, prefix + node_cls.__name__, None)
    return fn


class Visitor:
    """Depth-first walk; override ``visit_<Class>`` and call ``self.generic_visit(node)`` to recurse."""

    def visit(self, node) -> None:
        method = dispatch(type(self), "visit_", type(node))
        if method is not None:
            method(self, node)
        else:
            self.generic_visit(node)

    def generic_visit(self, node) -> None:
        for child in children(node):
            self.visit(child)


class Mutator:
    """Rebuild the IR bottom-up; a node whose children are unchanged is returned as is.

    Override ``visit_<Class>`` to return a replacement; call ``self.generic_visit(node)``
    to rebuild a node from its visited children.
    """

    def visit(self, node):
        method = dispatch(type(self), "visit_", type(node))
        if method is not None:
            return method(self, node)
        return self.generic_visit(node)

    def _visit_value(self, v):
        if isinstance(v, NODE_TYPES):
            return self.visit(v)
        if isinstance(v, tuple) and any(isinstance(x, NODE_TYPES) for x in v):
            new = tuple(self.visit(x) if isinstance(x, NODE_TYPES) else x for x in v)
            return v if all(a is b for a, b in zip(new, v)) else new
        return v

    def generic_visit(self, node):
        if isinstance(node, (Var, Buffer)):
            return node
        names = _FIELDS.get(type(node)) or _init_fields(type(node))
        changed = {}
        for name in names:
            old = getattr(node, name)
            new = self._visit_value(old)
            if new is not old:
                changed[name] = new
        if not changed:
            return node
        return type(node)(**{n: changed.get(n, getattr(node, n)) for n in names})


class ExprFunctor:
    """A function of expressions: ``self.expr(e)`` returns ``self.expr_<Class>(e)``.

    Subclasses define one method per expression class they accept; any other expression
    goes to :meth:`unhandled_expr`, which raises :class:`~mlcbook.errors.TIRError` (override
    it to raise the error of your layer).
    """

    def expr(self, e):
        method = dispatch(type(self), "expr_", type(e))
        if method is None:
            return self.unhandled_expr(e)
        return method(self, e)

    def unhandled_expr(self, e):
        raise TIRError(
            f"{type(self).__name__} has no method for {type(e).__name__} expressions ({e}); "
            f"Instead: give it an expr_{type(e).__name__} method, or rewrite the expression "
            "with the node types it knows")


class StmtFunctor:
    """A function of statements: ``self.stmt(s)`` returns ``self.stmt_<Class>(s)``.

    Like :class:`ExprFunctor`; a statement class without a method goes to
    :meth:`unhandled_stmt`, which raises :class:`~mlcbook.errors.TIRError`.
    """

    def stmt(self, s):
        method = dispatch(type(self), "stmt_", type(s))
        if method is None:
            return self.unhandled_stmt(s)
        return method(self, s)

    def unhandled_stmt(self, s):
        raise TIRError(
            f"{type(self).__name__} has no method for {type(s).__name__} statements; Instead: "
            f"give it a stmt_{type(s).__name__} method, or lower the program to statements it "
            "knows (mb.lower)")


def post_order_visit(node, fn: Callable[[Any], None]) -> None:
    """Call ``fn`` on every node under ``node`` (children before parents)."""
    _PostOrder(fn).visit(node)


# (module-level visitors, not classes made per call: tens of thousands of calls per compile)
class _PostOrder(Visitor):
    def __init__(self, fn: Callable[[Any], None]):
        self.fn = fn

    def visit(self, n):
        self.generic_visit(n)
        self.fn(n)


class _Substituter(Mutator):
    def __init__(self, vmap: dict):
        self.vmap = vmap

    def visit_Var(self, node):
        return self.vmap.get(node, node)


def substitute(node, vmap: dict):
    """Replace variables (``{var: expr}``) everywhere in ``node``."""
    if not vmap:
        return node
    return _Substituter(vmap).visit(node)


class _BufferReplacer(Mutator):
    def __init__(self, bmap: dict):
        self.bmap = bmap

    def visit_Buffer(self, node):
        return self.bmap.get(node, node)


def replace_buffers(node, bmap: dict):
    """Replace buffers (``{old: new}``) everywhere in ``node``: loads, stores, regions, allocations."""
    if not bmap:
        return node
    return _BufferReplacer(bmap).visit(node)
