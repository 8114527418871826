"""Facts several primitives require, each a named check that refuses with a clear error.

A primitive reads as the list of what it needs, then the rewrite::

    require_same_scope(ctx, realize, node, "pick a loop around the block's producers, ...")
    require_no_predicate(ctx, realize, "which compute_at would have to carry into new loops.",
                         "compute_at before splitting ...")
    reg = require_bounded(ctx, region(...), f"{buf.name} that the blocks under loop {l} read", node)

Each check names the block or loop at fault (marked in the program of the message) and
returns what it established, when that is something the primitive goes on with.
"""

from __future__ import annotations

from typing import Optional

from ..tir.stmt import BlockRealize, For
from . import tree
from .context import Context
from .errors import ComputeLocationError, UnsupportedError


def require_same_scope(ctx: Context, realize: BlockRealize, loop: For,
                       instead: str) -> BlockRealize:
    """``loop`` is in the block scope of ``realize``; returns that scope."""
    scope = ctx.scope_of(realize)
    if ctx.scope_of(loop) is not scope:
        lname = loop.loop_var.name
        ctx.fail(ComputeLocationError, f"loop {lname} is not in the same block scope as block "
                 f"{realize.block.name!r}.", instead, loop, f"loop {lname}")
    return scope


def require_no_predicate(ctx: Context, realize: BlockRealize, consequence: str, instead: str,
                         step: str = "", cls: type = UnsupportedError) -> None:
    """``realize`` has no predicate (``T.where``); else ``cls``: "[step: ]block 'B' has a
    predicate (T.where), <consequence>"."""
    if not tree.is_true(realize.predicate):
        name = realize.block.name
        prefix = f"{step}: " if step else ""
        ctx.fail(cls, f"{prefix}block {name!r} has a predicate (T.where), {consequence}",
                 instead, realize, f"block {name!r}")


def require_bounded(ctx: Context, reg: Optional[list], part: str, loop: For) -> list:
    """The region analysis bounded ``part`` of a buffer (``reg`` is not None); returns it."""
    if reg is None:
        ctx.fail(UnsupportedError, f"cannot bound the part of {part}.", "use index expressions "
                 "that are sums of loop variables times constants.", loop,
                 f"loop {loop.loop_var.name}")
    return reg


__all__ = ["require_same_scope", "require_no_predicate", "require_bounded"]
