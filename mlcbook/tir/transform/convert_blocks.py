"""Remove blocks: the first lowering step, from "what is computed" to plain loops.

A block's iteration variables become the expressions they are bound to, its predicate
becomes an ``if``, its allocations become :class:`~mlcbook.tir.Allocate` statements, and
its ``init`` (which runs when every reduce variable is 0) is placed in one of two ways:

* **hoisted** in front of the reduce loops, when the innermost loops around the block are
  exactly the loops that drive its reduce variables and nothing else runs inside them::

      for i, j:                              for i, j:
          for k:                                 C[i, j] = 0
              block(vk = k):          ->         for k:
                  init: C = 0                        C[i, j] += A[i, k] * B[k, j]
                  C += A * B

* **guarded** by ``if vk == 0 and ...`` otherwise (e.g. when a spatial loop sits inside the
  reduce loop after a reorder), which always means the same but costs a test per iteration.
"""

from __future__ import annotations

from ..analysis import free_vars
from ..expr import Const, PrimExpr
from ..functor import Mutator, substitute
from ..simplify import simplify
from ..stmt import Allocate, BlockRealize, For, IfThenElse, Stmt, seq


def convert_blocks(body: Stmt) -> Stmt:
    """Return ``body`` without any block (see the module docstring)."""
    return _BlockLowerer().visit(body)


class _BlockLowerer(Mutator):
    def __init__(self):
        # loops perfectly nested right around the statement being visited, outermost first
        self.chain: list[For] = []
        # how many of the enclosing chain loops the last block rebuilt itself (hoisted init)
        self.pending = 0

    def visit_For(self, s: For):
        self.chain.append(s)
        body = self.visit(s.body)
        self.chain.pop()
        if self.pending:
            self.pending -= 1
            return body
        return s if body is s.body else For(s.loop_var, s.extent, body, s.kind, s.annotations)

    def _isolated(self, s):
        saved, self.chain = self.chain, []
        out = self.generic_visit(s)
        self.chain = saved
        return out

    visit_SeqStmt = visit_IfThenElse = visit_Allocate = _isolated

    def visit_BlockRealize(self, s: BlockRealize):
        chain, self.chain = self.chain, []
        block = s.block
        body = self.visit(block.body)
        init = self.visit(block.init) if block.init is not None else None
        self.chain = chain

        bindings = dict(zip((iv.var for iv in block.iter_vars), s.iter_values))
        body = substitute(body, bindings)
        pred = None if _is_true(s.predicate) else s.predicate
        reduce_ivs = [iv for iv in block.iter_vars if iv.kind == "reduce"]

        if init is None:
            stmt = body
        elif not reduce_ivs:
            stmt = seq(substitute(init, bindings), body)
        else:
            # init runs where every reduce variable is 0
            init = substitute(init, {**bindings, **{iv.var: Const(0, iv.var.dtype)
                                                    for iv in reduce_ivs}})
            n = _hoistable_loops(s, chain)
            if n:
                loops = chain[len(chain) - n:]
                for lp in reversed(loops):
                    body = For(lp.loop_var, lp.extent, body, lp.kind, lp.annotations)
                stmt = seq(init, body)
                self.pending = n
            else:
                cond = None
                for iv in reduce_ivs:
                    c = simplify(bindings[iv.var] == 0)
                    cond = c if cond is None else cond & c
                stmt = seq(IfThenElse(cond, init), body)
        if pred is not None:
            stmt = IfThenElse(pred, stmt)
        for buf in reversed(block.alloc_buffers):
            stmt = Allocate(buf, stmt)
        return stmt


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, Const) and e.value is True


def _hoistable_loops(realize: BlockRealize, chain: list[For]) -> int:
    """How many innermost loops of ``chain`` the init can be hoisted out of (0: guard it)."""
    block = realize.block
    spatial_vars, reduce_vars = set(), set()
    for iv, value in zip(block.iter_vars, realize.iter_values):
        (reduce_vars if iv.kind == "reduce" else spatial_vars).update(free_vars(value))
    pred_vars = set(free_vars(realize.predicate))
    n = 0
    for lp in reversed(chain):
        v = lp.loop_var
        if v not in reduce_vars or v in spatial_vars or v in pred_vars:
            break
        n += 1
    if n == 0:
        return 0
    suffix = {lp.loop_var for lp in chain[len(chain) - n:]}
    if not reduce_vars <= suffix:
        return 0  # a reduce variable also moves with a loop outside: not the first visit
    zero = {v: Const(0, v.dtype) for v in suffix}
    for iv, value in zip(block.iter_vars, realize.iter_values):
        if iv.kind == "reduce":
            at_start = simplify(substitute(value, zero))
            if not (isinstance(at_start, Const) and at_start.value == 0):
                return 0  # the first iteration of the loops is not where the reduction starts
    return n
