"""Visitor and mutator for graph functions: the one place that knows how to walk a graph.

Both walk the body in post order (every value after the values it uses), each node once,
without recursion, so a model with thousands of layers is fine.

    >>> class CountOps(ExprVisitor):
    ...     def __init__(self): self.n = 0
    ...     def visit_Call(self, call): self.n += 1
    >>> v = CountOps(); v.visit(func.body); v.n
    3

A mutator's ``visit_<Class>`` receives the *original* node and returns its replacement;
``self.new(child)`` gives the already-rewritten version of a child, and
``self.generic_visit(node)`` rebuilds the node from its rewritten children.
"""

from __future__ import annotations

from .expr import Expr, Function, children, post_order, rebuild


class ExprVisitor:
    """Call ``visit_<Class>(node)`` on every node of a graph, children first."""

    def visit(self, root: Expr) -> None:
        for node in post_order(root):
            method = getattr(self, "visit_" + type(node).__name__, None)
            if method is not None:
                method(node)

    def visit_function(self, func: Function) -> None:
        self.visit(func.body)


class ExprMutator:
    """Rebuild a graph bottom-up; a node whose children did not change is kept as is."""

    def __init__(self):
        self._memo: dict[int, Expr] = {}
        self._keep: list[Expr] = []  # keeps originals alive so their ids stay unique

    def new(self, node: Expr) -> Expr:
        """The rewritten version of ``node`` (a child of the node being visited)."""
        return self._memo.get(id(node), node)

    def visit(self, root: Expr) -> Expr:
        for node in post_order(root):
            if id(node) in self._memo:
                continue
            method = getattr(self, "visit_" + type(node).__name__, None)
            out = method(node) if method is not None else self.generic_visit(node)
            self._memo[id(node)] = out
            self._keep.append(node)
        return self.new(root)

    def generic_visit(self, node: Expr) -> Expr:
        kids = children(node)
        new_kids = tuple(self.new(c) for c in kids)
        if all(a is b for a, b in zip(kids, new_kids)):
            return node
        return rebuild(node, new_kids)

    def visit_function(self, func: Function) -> Function:
        """The function with its body rewritten (inputs rewritten too if a visit_Var does)."""
        body = self.visit(func.body)
        params = tuple(self.new(p) for p in func.params)
        if body is func.body and all(a is b for a, b in zip(params, func.params)):
            return func
        return func.with_body(body, params)
