"""The reference run a transformed program is checked against.

``run_reference(func, *arrays)`` runs ``func`` with the reference evaluator
(``mb.tir.evaluate``, a plain tree walk with every access checked, which shares no analysis
with the interpreter or the code generator) when the program is small enough for it, and
with the fast interpreter otherwise, so a test can always call it.

    >>> run_reference(before, a, b, out)     # then compare out with what `after` writes
"""

from __future__ import annotations

import mlcbook as mb
from mlcbook.tir import Const, For, Visitor

#: loop-body executions the reference evaluator runs in well under a second
SMALL = 20_000


class _Work(Visitor):
    """How many times the innermost statements run, counting a non-constant extent as 64."""

    def __init__(self):
        self.total, self.scale = 0, 1

    def visit_For(self, s: For) -> None:
        outer = self.scale
        self.scale *= s.extent.value if isinstance(s.extent, Const) else 64
        self.generic_visit(s)
        self.scale = outer

    def visit_BufferStore(self, s) -> None:
        self.total += self.scale


def is_small(func) -> bool:
    work = _Work()
    work.visit(func.body)
    return work.total <= SMALL


def run_reference(func, *arrays) -> None:
    """``func`` run on ``arrays`` (outputs written in place) by the reference evaluator, or
    by the interpreter when the program is too big for it."""
    func = func.main() if isinstance(func, mb.tir.IRModule) else func
    runner = mb.tir.evaluate if is_small(func) else mb.tir.interpret
    runner(func, *arrays)
