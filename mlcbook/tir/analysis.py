"""Facts about programs that passes and checks share: free variables, buffer uses, blocks, loops.

    >>> free_vars(A[i, j] + B[k]), buffers_read(A[i, j] + B[k])
    ([i, j, k], [A, B])

Integer facts (bounds, values, linear forms) are in :mod:`mlcbook.tir.arith`.
"""

from __future__ import annotations

import warnings
from typing import Iterator

from . import arith
from .expr import Buffer, BufferLoad, Const, Var
from .functor import Visitor
from .stmt import Block, BlockRealize, BufferStore, For, Stmt


def free_vars(node) -> list[Var]:
    """Variables used in ``node`` but not defined inside it, in order of first use."""
    v = _FreeVars()
    v.visit(node)
    return [x for k, x in v.seen.items() if k not in v.defined]


# (module-level visitors, not classes made per call: tens of thousands of calls per compile)
class _FreeVars(Visitor):
    def __init__(self):
        self.defined: set[int] = set()
        self.seen: dict[int, Var] = {}

    def visit_For(self, n: For):
        self.defined.add(id(n.loop_var))
        self.visit(n.extent)
        self.visit(n.body)

    def visit_Block(self, n: Block):
        for iv in n.iter_vars:
            self.defined.add(id(iv.var))
        self.generic_visit(n)

    def visit_Var(self, n: Var):
        if id(n) not in self.defined:
            self.seen.setdefault(id(n), n)


def buffers_read(node) -> list[Buffer]:
    """Buffers loaded anywhere in ``node``, in order of first load."""
    return _buffers(node, BufferLoad)


def buffers_written(node) -> list[Buffer]:
    """Buffers stored to anywhere in ``node``, in order of first store."""
    return _buffers(node, BufferStore)


def _buffers(node, kind: type) -> list[Buffer]:
    v = _Buffers(kind)
    v.visit(node)
    return list(v.out.values())


class _Buffers(Visitor):
    def __init__(self, kind: type):
        self.kind, self.out = kind, {}

    def visit(self, n):
        if isinstance(n, self.kind):
            self.out.setdefault(id(n.buffer), n.buffer)
        self.generic_visit(n)


#: statement types that hold other statements, and the fields that hold them
_STMT_FIELDS = {
    "For": ("body",), "BlockRealize": ("block",), "Block": ("init", "body"),
    "SeqStmt": ("stmts",), "IfThenElse": ("then_case", "else_case"), "Allocate": ("body",),
}


def child_stmts(s: Stmt) -> list[Stmt]:
    """The statements directly inside ``s`` (a Block's init comes before its body)."""
    out: list[Stmt] = []
    for name in _STMT_FIELDS.get(type(s).__name__, ()):
        v = getattr(s, name)
        if isinstance(v, tuple):
            out.extend(v)
        elif v is not None:
            out.append(v)
    return out


def walk(s: Stmt) -> Iterator[Stmt]:
    """Every statement under ``s`` (``s`` included) in program order, parents first."""
    yield s
    for c in child_stmts(s):
        yield from walk(c)


def collect_blocks(node: Stmt) -> list[BlockRealize]:
    """Every BlockRealize under ``node`` in program order (``node`` included when it is one)."""
    return [s for s in walk(node) if isinstance(s, BlockRealize)]


def loop_ranges(node: Stmt) -> dict:
    """``{var: (0, extent - 1)}`` for every loop and block iteration variable under ``node``
    whose extent is a constant."""
    out: dict = {}
    for s in walk(node):
        if isinstance(s, For) and isinstance(s.extent, Const):
            out[s.loop_var] = (0, s.extent.value - 1)
        elif isinstance(s, BlockRealize):
            for iv in s.block.iter_vars:
                if isinstance(iv.extent, Const):
                    out[iv.var] = (0, iv.extent.value - 1)
    return out


_MOVED_TO_ARITH = ("expr_key", "int_bounds", "int_values")


def __getattr__(name: str):
    if name in _MOVED_TO_ARITH:
        warnings.warn(f"mlcbook.tir.analysis.{name} moved to mlcbook.tir.arith.{name}; "
                      "import it from there", DeprecationWarning, stacklevel=2)
        return getattr(arith, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
