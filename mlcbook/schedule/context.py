"""``Context``: what a schedule primitive sees while it runs.

The current function, handle resolution (a handle to something a step removed raises
:class:`~.errors.HandleError` naming that step), tree queries, the way to change the
program, the way to make output handles, and :meth:`Context.fail` for refusals::

    node = ctx.loop(loop)                 # LoopRV -> For
    ctx.loops_above(node)                 # the loops between its block and it
    ctx.replace(node, new_node)           # or ctx.set_func(new_func)
    return ctx.loop_rv(new_node)          # a handle the trace will name
"""

from __future__ import annotations

import random
from typing import Any, Optional, Union

from ..errors import ScheduleError
from ..tir.expr import Var
from ..tir.function import PrimFunc
from ..tir.stmt import Block, BlockRealize, For, Stmt
from . import tree
from .errors import ArgumentTypeError, HandleError, schedule_error
from .handles import BlockRV, ExprRV, LoopRV, describe


class Context:
    """What a primitive sees: the current function, handle resolution, tree helpers, failure.

    ``removed_loops`` / ``removed_blocks`` map what earlier steps removed to the step that
    did, for the error a stale handle gets; ``decision`` is the recorded decision when a
    trace is replayed. ``checks`` is False in a schedule that skips the legality checks
    (see :class:`~.state.Schedule`); a primitive runs its dependence checks only if it is
    True.
    """

    def __init__(self, func_name: str, func: PrimFunc, *, rng: random.Random,
                 removed_loops: dict, removed_blocks: dict, decision: Any = None,
                 checks: bool = True):
        self.func_name = func_name
        self.checks = checks
        self.func: PrimFunc = func
        self.decision = decision
        self.rng = rng
        self._removed_loops = removed_loops
        self._removed_blocks = removed_blocks
        self.new_handles: list = []
        # what to record instead of an argument the trace cannot store (a lambda -> its text)
        self.recorded_args: dict = {}

    # handles -> IR
    def loop(self, rv: LoopRV) -> For:
        """The For the handle refers to (raises HandleError if a step removed it)."""
        if not isinstance(rv, LoopRV):
            raise ArgumentTypeError(
                f"expected a loop handle (from get_loops, split, fuse), got {describe(rv)}")
        node = tree.find_loop(self.func.body, rv.var)
        if node is None:
            why = self._removed_loops.get(rv.var)
            if why is not None:
                raise HandleError(
                    f"loop {rv.var.name} was replaced by {why}; use the loops {why} returned, "
                    f"or call sch.get_loops(block) again")
            raise HandleError(f"loop {rv.var.name} is not in function {self.func_name!r}; "
                              "get a fresh handle with sch.get_loops(block)")
        return node

    def block_realize(self, rv: BlockRV) -> BlockRealize:
        """The BlockRealize the handle refers to (raises HandleError if a step removed it)."""
        if not isinstance(rv, BlockRV):
            raise ArgumentTypeError(
                f"expected a block handle (from get_block), got {describe(rv)}")
        node = tree.find_block(self.func.body, rv.name)
        if node is None:
            why = self._removed_blocks.get(rv.name)
            if why is not None:
                raise HandleError(f"block {rv.name!r} was removed by {why}; it no longer exists, "
                                  "schedule the block it was merged into instead")
            raise HandleError(f"block {rv.name!r} is not in function {self.func_name!r}")
        return node

    def removed_by(self, block_name: str) -> Optional[str]:
        """The step that removed the block called ``block_name``, if a step did."""
        return self._removed_blocks.get(block_name)

    def block(self, rv: BlockRV) -> Block:
        return self.block_realize(rv).block

    def stmt(self, rv: Union[BlockRV, LoopRV]) -> Stmt:
        """The For or BlockRealize behind a loop or block handle."""
        return self.loop(rv) if isinstance(rv, LoopRV) else self.block_realize(rv)

    # tree queries
    def path(self, node: Stmt) -> list[Stmt]:
        """Statements from the function body down to ``node``, both included."""
        p = tree.path_to(self.func.body, node)
        if p is None:
            raise ScheduleError(f"internal: statement not found in function {self.func_name!r}")
        return p

    def loops_above(self, node: Stmt) -> list[For]:
        """Loops between ``node``'s enclosing block and ``node``, outermost first."""
        return tree.loops_between(self.path(node))

    def scope_of(self, node: Stmt) -> BlockRealize:
        """The BlockRealize directly enclosing ``node`` (the root block for top-level loops)."""
        return tree.enclosing_block(self.path(node))

    # changing the program
    def replace(self, old: Stmt, new: Optional[Stmt]) -> None:
        """Replace statement ``old`` (by identity) with ``new``; None removes it."""
        self.set_func(self.func.with_body(tree.replace_stmt(self.func.body, old, new)))

    def set_func(self, func: PrimFunc) -> None:
        self.func = func

    # making outputs
    def loop_rv(self, loop: Union[For, Var]) -> LoopRV:
        rv = LoopRV(loop.loop_var if isinstance(loop, For) else loop, self.func_name)
        self.new_handles.append(rv)
        return rv

    def block_rv(self, block: Union[str, Block, BlockRealize]) -> BlockRV:
        if isinstance(block, BlockRealize):
            block = block.block
        rv = BlockRV(block if isinstance(block, str) else block.name, self.func_name)
        self.new_handles.append(rv)
        return rv

    def expr_rv(self, value: int) -> ExprRV:
        rv = ExprRV(value)
        self.new_handles.append(rv)
        return rv

    def decide(self, decision: Any) -> None:
        """Record the decision a sampling step took (replayed as ``ctx.decision``)."""
        self.decision = decision

    def fail(self, cls: type[ScheduleError], why: str, instead: str, mark=None,
             label: str = "") -> None:
        """Raise ``cls`` with the message: why, what to do instead, the program with ``mark`` marked."""
        raise schedule_error(cls, why, instead, self.func, mark, label)


__all__ = ["Context"]
