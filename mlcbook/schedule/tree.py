"""Finding and replacing statements in a function body: the tree operations every primitive uses.

Statements are immutable, so "where is this loop" means "the chain of statements from the
function body down to it" (:func:`path_to`), and changing one means rebuilding its
ancestors (:func:`replace_stmt`). Both work on object identity::

    path = path_to(func.body, loop)        # [root BlockRealize, Block, For i, For j]
    body = replace_stmt(func.body, loop, new_loop)
"""

from __future__ import annotations

from typing import Callable, Optional

from ..tir.analysis import child_stmts, walk  # noqa: F401 - the statement walk, used as tree.walk
from ..tir.expr import Const, PrimExpr
from ..tir.functor import Mutator
from ..tir.stmt import Block, BlockRealize, For, IfThenElse, SeqStmt, Stmt, no_op


def path_to(root: Stmt, target: object) -> Optional[list[Stmt]]:
    """Statements from ``root`` down to ``target`` (both included), or None if absent."""
    if root is target:
        return [root]
    for c in child_stmts(root):
        p = path_to(c, target)
        if p is not None:
            return [root] + p
    return None


def find_loop(root: Stmt, var) -> Optional[For]:
    """The For whose loop variable is ``var`` (by identity)."""
    for s in walk(root):
        if isinstance(s, For) and s.loop_var is var:
            return s
    return None


def find_block(root: Stmt, name: str) -> Optional[BlockRealize]:
    """The BlockRealize of the block called ``name``."""
    for s in walk(root):
        if isinstance(s, BlockRealize) and s.block.name == name:
            return s
    return None


def enclosing_block(path: list[Stmt]) -> BlockRealize:
    """The nearest BlockRealize strictly above the last statement of ``path`` (its scope)."""
    for s in reversed(path[:-1]):
        if isinstance(s, BlockRealize):
            return s
    raise ValueError("statement is not inside a block")


def loops_between(path: list[Stmt]) -> list[For]:
    """The loops on ``path`` below its last block (outermost first), excluding the end itself."""
    out: list[For] = []
    for s in path[:-1]:
        if isinstance(s, BlockRealize):
            out = []
        elif isinstance(s, For):
            out.append(s)
    return out


def child_blocks(s: Stmt) -> list[BlockRealize]:
    """BlockRealizes directly under ``s`` (not nested inside another block), in program order."""
    out: list[BlockRealize] = []
    for c in child_stmts(s.block if isinstance(s, BlockRealize) else s):
        if isinstance(c, BlockRealize):
            out.append(c)
        else:
            out.extend(child_blocks(c))
    return out


def loops_under(s: Stmt) -> list[For]:
    return [x for x in walk(s) if isinstance(x, For)]


class _Replace(Mutator):
    def __init__(self, fn: Callable[[Stmt], Optional[Stmt]]):
        self.fn = fn

    def visit(self, node):
        if not isinstance(node, Stmt):
            return node  # expressions, buffers and regions hold no statements
        new = self.fn(node)
        if new is not node:
            return new
        return super().visit(node)

    def visit_SeqStmt(self, node: SeqStmt):
        new = [self.visit(s) for s in node.stmts]
        if all(a is b for a, b in zip(new, node.stmts)):
            return node
        flat: list[Stmt] = []
        for s in new:
            if s is None:
                continue
            flat.extend(s.stmts if isinstance(s, SeqStmt) else [s])
        if not flat:
            return None
        return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))

    def visit_For(self, node: For):
        body = self.visit(node.body)
        if body is None:
            return None  # a loop with nothing left inside goes too
        return node if body is node.body else For(node.loop_var, node.extent, body, node.kind,
                                                   node.annotations)

    def visit_IfThenElse(self, node: IfThenElse):
        then = self.visit(node.then_case)
        other = self.visit(node.else_case) if node.else_case is not None else None
        if then is None:
            then = no_op()
        if then is node.then_case and other is node.else_case:
            return node
        return IfThenElse(node.cond, then, other)

    def visit_Block(self, node: Block):
        body = self.visit(node.body)
        init = self.visit(node.init) if node.init is not None else None
        if body is None:
            body = no_op()
        if body is node.body and init is node.init:
            return node
        return Block(node.name, node.iter_vars, node.reads, node.writes, body, init,
                     node.alloc_buffers, node.annotations)


def map_stmts(root: Stmt, fn: Callable[[Stmt], Optional[Stmt]]) -> Stmt:
    """Rebuild ``root`` with ``fn(s)`` for each statement (top-down; return ``s`` to recurse).

    Returning None removes the statement; a loop left empty is removed with it, and a
    SeqStmt returned inside a SeqStmt is flattened.
    """
    out = _Replace(fn).visit(root)
    return no_op() if out is None else out


def replace_stmt(root: Stmt, old: Stmt, new: Optional[Stmt]) -> Stmt:
    """``root`` with the statement ``old`` (by identity) replaced by ``new`` (None removes it)."""
    return map_stmts(root, lambda s: new if s is old else s)


def is_true(e: PrimExpr) -> bool:
    return isinstance(e, Const) and e.value is True
