"""Default schedules: what ``mb.compile`` does to each legalized PrimFunc before building it,
without tuning records: the schedule rules (:mod:`mlcbook.rules`) with every knob at the
decision the target's machine model gives it. Every step is an ordinary
:class:`mlcbook.Schedule` primitive, so the trace of a default schedule can be printed and
replayed, and it is the default point of the tuning space (``mb.tune.Space(f, target)``).

    >>> func = default_schedule(legalize_call("matmul", [T((64, 784)), T((784, 512))]))
"""

from __future__ import annotations

from ..codegen.target import Target
from ..rules import Rules
from ..tir.function import PrimFunc


def default_schedule(func: PrimFunc, target=None) -> PrimFunc:
    """``func`` with the default schedule applied to every block; ``target`` (default: this
    machine) gives the machine model its decisions derive from."""
    return Rules(Target(target or "llvm")).schedule(func)


__all__ = ["default_schedule"]
