"""Handles: what a schedule step takes and returns instead of IR nodes.

:class:`BlockRV` finds its block by name (block names are unique in a function);
:class:`LoopRV` finds its loop by the identity of the loop variable, which every primitive
that keeps a loop keeps. :class:`ExprRV` is an ``int`` that remembers which sampling step
produced it, so a trace can replay it with another value. ``sym`` is the name the trace
gives the handle (``b0``, ``l1``, ``v2``), set when a step returns it.

    >>> b = sch.get_block("C")        # BlockRV(b0: 'C')
    >>> i, j, k = sch.get_loops(b)    # LoopRV(l1: i), ...
"""

from __future__ import annotations

from typing import Optional, Union

from ..tir.expr import Var


class BlockRV:
    """A handle to a block, valid for as long as a block of that name exists."""

    __slots__ = ("name", "func_name", "sym")

    def __init__(self, name: str, func_name: str):
        self.name, self.func_name, self.sym = name, func_name, None

    def __repr__(self) -> str:
        return f"BlockRV({self.sym}: {self.name!r})"


class LoopRV:
    """A handle to a loop, valid for as long as a loop over the same variable exists."""

    __slots__ = ("var", "func_name", "sym")

    def __init__(self, var: Var, func_name: str):
        self.var, self.func_name, self.sym = var, func_name, None

    def __repr__(self) -> str:
        return f"LoopRV({self.sym}: {self.var.name})"


class ExprRV(int):
    """An int produced by a sampling step; the trace records where it came from.

    Arithmetic on it gives a plain int, which the trace records as a constant: pass the
    ExprRV itself (``split(i, factors=[v0, v1])``) for a decision change to flow through.
    """

    sym: Optional[str]

    def __new__(cls, value: int):
        obj = super().__new__(cls, value)
        obj.sym = None
        return obj

    def __repr__(self) -> str:
        return f"ExprRV({self.sym}: {int(self)})"


Handle = Union[BlockRV, LoopRV, ExprRV]


def handles_in(value) -> list:
    """The handles in an argument: the value itself, or those in a (nested) list of them."""
    if isinstance(value, (BlockRV, LoopRV, ExprRV)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [h for v in value for h in handles_in(v)]
    return []


def describe(value) -> str:
    """A short description of an argument for an error message: a handle, or type and value."""
    if isinstance(value, (BlockRV, LoopRV)):
        return repr(value)
    return f"{type(value).__name__} {value!r:.40}"


__all__ = ["BlockRV", "LoopRV", "ExprRV", "Handle", "handles_in", "describe"]
