"""The registry of schedule primitives: name -> function and signature.

A primitive is a function ``fn(ctx, ...)`` of a :class:`~.context.Context` and the
step's arguments. :func:`schedule_primitive` registers it under a name; the
:class:`~.state.Schedule` method of that name runs it (binding the arguments, checking
handles, verifying and recording the step), and a :class:`~.state.Trace` replays it by
name::

    @schedule_primitive("parallel")
    def parallel(ctx: Context, loop: LoopRV) -> None:
        node = ctx.loop(loop)                     # the For; ctx.path(node) its ancestors
        if ...:                                   # a fact forbids it
            ctx.fail(ReduceLoopParallelError, "why ...", "what instead ...", mark=node)
        ctx.replace(node, new_node)               # or ctx.set_func(new_func)

The library's primitives each have a written-out method on ``Schedule``; a primitive
registered elsewhere (an extension) is reachable as ``sch.<name>(...)`` too.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Primitive:
    """A registered schedule primitive: its name, function and signature (without ``ctx``)."""

    name: str
    fn: Callable
    signature: inspect.Signature
    sampling: bool


PRIMITIVES: dict[str, Primitive] = {}


def schedule_primitive(name: str, *, sampling: bool = False) -> Callable[[Callable], Callable]:
    """Register ``fn(ctx, ...)`` as the primitive ``name`` (``sch.<name>(...)`` runs it).

    ``sampling=True`` marks a step that makes a random decision (``ctx.decide``), which
    the trace records and can replay or change; its method also takes ``decision=`` to
    force the outcome (the trace prints it so, and ``ctx.decision`` holds it).
    """

    def register(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1:]
        PRIMITIVES[name] = Primitive(name, fn, sig.replace(parameters=params), sampling)
        return fn

    return register


__all__ = ["Primitive", "PRIMITIVES", "schedule_primitive"]
