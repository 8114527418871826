"""Looking things up: blocks by name, the loops around a block, children, producers, consumers.

These are recorded in the trace like every other step, because later steps refer to the
handles they return::

    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
"""

from __future__ import annotations

from typing import Optional, Union

from ..tir.analysis import collect_blocks
from . import tree
from .analysis import consumers_of, producers_of
from .errors import BlockNotFoundError
from .context import Context
from .handles import BlockRV, LoopRV
from .registry import schedule_primitive


@schedule_primitive("get_block")
def get_block(ctx: Context, name: str, func_name: Optional[str] = None) -> BlockRV:
    """The block called ``name``: ``sch.get_block("C")``."""
    if tree.find_block(ctx.func.body, name) is None:
        names = [b.block.name for b in collect_blocks(ctx.func.body) if b.block.name != "root"]
        removed = ctx.removed_by(name)
        extra = f" (it was removed by {removed})" if removed else ""
        raise BlockNotFoundError(
            f"function {ctx.func_name!r} has no block named {name!r}{extra}; its blocks are: "
            f"{', '.join(repr(n) for n in names) or 'none'}")
    return ctx.block_rv(name)


@schedule_primitive("get_loops")
def get_loops(ctx: Context, block: BlockRV) -> list[LoopRV]:
    """The loops around ``block`` (up to its enclosing block), outermost first."""
    realize = ctx.block_realize(block)
    return [ctx.loop_rv(lp) for lp in ctx.loops_above(realize)]


@schedule_primitive("get_child_blocks")
def get_child_blocks(ctx: Context, block_or_loop: Union[BlockRV, LoopRV]) -> list[BlockRV]:
    """The blocks directly inside a block or loop (not nested in another block), in order."""
    node = ctx.stmt(block_or_loop)
    return [ctx.block_rv(b) for b in tree.child_blocks(node)]


@schedule_primitive("get_producers")
def get_producers(ctx: Context, block: BlockRV) -> list[BlockRV]:
    """Blocks in the same scope that run before ``block`` and write a buffer it reads."""
    realize = ctx.block_realize(block)
    return [ctx.block_rv(b) for b in producers_of(ctx.scope_of(realize), realize)]


@schedule_primitive("get_consumers")
def get_consumers(ctx: Context, block: BlockRV) -> list[BlockRV]:
    """Blocks in the same scope that run after ``block`` and read a buffer it writes."""
    realize = ctx.block_realize(block)
    return [ctx.block_rv(b) for b in consumers_of(ctx.scope_of(realize), realize)]

