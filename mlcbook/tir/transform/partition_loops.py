"""``partition_loops``: an innermost serial loop whose body tests its own variable against
constants is cut where those tests change value, and each piece simplified on its own.

A pad block copies its input into a zero-bordered buffer, one select per element::

    for x in range(58):
        for ci in T.vectorized(16):
            pad[.. + x * 16 + ci] = T.select(<y's tests> and x - 1 >= 0 and x - 1 < 56,
                                             a[.. + T.max(T.min(x - 1, 55), 0) * 16 + ci], 0)

becomes three loops: ``x = 0`` stores zeros, ``x`` in 1..56 copies with neither the tests
on ``x`` nor the clamps, ``x = 57`` stores zeros. Cutting a loop is always correct; it is
done only where a test of the form ``±x + c <op> const`` (see
:func:`~mlcbook.tir.simplify.var_bound`) changes value inside the loop, at most
:data:`MAX_PIECES` pieces, only for a loop with no serial or parallel loop inside, so the
code it copies stays small, and not inside a vectorized loop, whose lanes must run the
same statements.
"""

from __future__ import annotations

from ..expr import Const, Select, Var
from ..functor import Mutator, post_order_visit, substitute
from ..simplify import conjuncts, simplify, var_bound
from ..stmt import Allocate, For, IfThenElse, seq

#: a loop is cut into at most this many pieces (a pad's left border, interior, right border)
MAX_PIECES = 3


def partition_loops(stmt):
    """``stmt`` with every loop cut as the module docstring says."""
    return _Partitioner().visit(stmt)


class _Partitioner(Mutator):
    def __init__(self):
        self.ranges: dict = {}
        self.in_vector = 0

    def visit_For(self, s: For):
        if isinstance(s.extent, Const):
            self.ranges[s.loop_var] = (0, s.extent.value - 1)
        self.in_vector += s.kind == "vectorized"
        body = self.visit(s.body)
        self.in_vector -= s.kind == "vectorized"
        # a loop inside a vectorized one runs per lane: cut, its lanes would take different
        # statements
        cuts = _cuts(s) if (s.kind == "serial" and isinstance(s.extent, Const)
                            and not self.in_vector) else []
        self.ranges.pop(s.loop_var, None)
        if not cuts:
            return s if body is s.body else For(s.loop_var, s.extent, body, s.kind,
                                                s.annotations)
        bounds = [0, *cuts, s.extent.value]
        return seq(*(self._piece(s, body, lo, hi) for lo, hi in zip(bounds, bounds[1:])))

    def _piece(self, s: For, body, lo: int, hi: int):
        # every piece binds loop variables of its own (a variable is bound once per function)
        body = _FreshLoops().visit(body)
        if hi - lo == 1:
            return simplify(substitute(body, {s.loop_var: Const(lo, s.loop_var.dtype)}),
                            self.ranges)
        v = Var(s.loop_var.name, s.loop_var.dtype)
        body = substitute(body, {s.loop_var: v + lo if lo else v})
        return simplify(For(v, hi - lo, body, s.kind, s.annotations), self.ranges)


class _FreshLoops(Mutator):
    def visit_For(self, s: For):
        v = Var(s.loop_var.name, s.loop_var.dtype)
        return For(v, s.extent, substitute(self.visit(s.body), {s.loop_var: v}), s.kind,
                   s.annotations)


def _cuts(s: For) -> list[int]:
    """Where the tests of ``s``'s variable in its body change value, inside the loop; none
    when the body has loops that are not vectorized or unrolled, or allocations, or there
    would be more than :data:`MAX_PIECES` pieces."""
    conds, inner = [], []

    def visit(n):
        if isinstance(n, (Select, IfThenElse)):
            conds.append(n.cond)
        elif isinstance(n, Allocate) or isinstance(n, For) and n.kind in ("serial",
                                                                          "parallel"):
            inner.append(n)
    post_order_visit(s.body, visit)
    if inner:
        return []
    points = set()
    for cond in conds:
        for part in conjuncts(cond):
            v, lo, hi = var_bound(part)
            if v is s.loop_var:
                points.update(p for p in (lo, None if hi is None else hi + 1) if p is not None)
    cuts = sorted(p for p in points if 0 < p < s.extent.value)
    return cuts if len(cuts) < MAX_PIECES else []
