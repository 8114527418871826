"""Facts about programs that passes and checks share: free variables, buffer uses, blocks, loops.

    >>> free_vars(A[i, j] + B[k]), buffers_read(A[i, j] + B[k])
    ([i, j, k], [A, B])

Integer facts (bounds, values, linear forms) are in :mod:`mlcbook.tir.arith`.
"""

from __future__ import annotations

import warnings

from . import arith
from .expr import Buffer, BufferLoad, Const, Var
from .functor import Visitor
from .stmt import Block, BlockRealize, BufferStore, For


def free_vars(node) -> list[Var]:
    """Variables used in ``node`` but not defined inside it, in order of first use."""
    defined: set[int] = set()
    seen: dict[int, Var] = {}

    class _V(Visitor):
        def visit_For(self, n: For):
            defined.add(id(n.loop_var))
            self.visit(n.extent)
            self.visit(n.body)

        def visit_Block(self, n: Block):
            for iv in n.iter_vars:
                defined.add(id(iv.var))
            self.generic_visit(n)

        def visit_Var(self, n: Var):
            if id(n) not in defined:
                seen.setdefault(id(n), n)

    _V().visit(node)
    return [v for k, v in seen.items() if k not in defined]


def buffers_read(node) -> list[Buffer]:
    """Buffers loaded anywhere in ``node``, in order of first load."""
    return _buffers(node, BufferLoad)


def buffers_written(node) -> list[Buffer]:
    """Buffers stored to anywhere in ``node``, in order of first store."""
    return _buffers(node, BufferStore)


def _buffers(node, kind: type) -> list[Buffer]:
    out: dict[int, Buffer] = {}

    class _V(Visitor):
        def visit(self, n):
            if isinstance(n, kind):
                out.setdefault(id(n.buffer), n.buffer)
            self.generic_visit(n)

    _V().visit(node)
    return list(out.values())


class _Statements(Visitor):
    """Walks statements only, in program order (a block's init before its body)."""

    def visit_Block(self, n: Block):
        if n.init is not None:
            self.visit(n.init)
        self.visit(n.body)

    def visit_BufferStore(self, n: BufferStore):
        pass  # expressions hold no statements

    def visit_Evaluate(self, n):
        pass


def collect_blocks(node) -> list[BlockRealize]:
    """Every BlockRealize under ``node`` in program order (``node`` included when it is one)."""
    out: list[BlockRealize] = []

    class _V(_Statements):
        def visit_BlockRealize(self, n: BlockRealize):
            out.append(n)
            self.visit(n.block)

    _V().visit(node)
    return out


def loop_ranges(node) -> dict:
    """``{var: (0, extent - 1)}`` for every loop and block iteration variable under ``node``
    whose extent is a constant."""
    out: dict = {}

    class _V(_Statements):
        def visit_For(self, n: For):
            if isinstance(n.extent, Const):
                out[n.loop_var] = (0, n.extent.value - 1)
            self.visit(n.body)

        def visit_BlockRealize(self, n: BlockRealize):
            for iv in n.block.iter_vars:
                if isinstance(iv.extent, Const):
                    out[iv.var] = (0, iv.extent.value - 1)
            self.visit(n.block)

    _V().visit(node)
    return out


_MOVED_TO_ARITH = ("expr_key", "int_bounds", "int_values")


def __getattr__(name: str):
    if name in _MOVED_TO_ARITH:
        warnings.warn(f"mlcbook.tir.analysis.{name} moved to mlcbook.tir.arith.{name}; "
                      "import it from there", DeprecationWarning, stacklevel=2)
        return getattr(arith, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
