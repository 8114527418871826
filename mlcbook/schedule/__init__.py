"""``mb.schedule``: transform a loop-IR function step by step, each step checked and recorded.

    >>> sch = mb.Schedule(func)
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 32])
    >>> sch.reorder(io, j, k, ii)
    >>> sch.parallel(io)
    >>> print(sch.trace)          # the steps, as Python that replays them

Modules, one family of primitives each: :mod:`.queries` (get_block, get_loops, ...),
:mod:`.loops` (split, fuse, reorder), :mod:`.for_kind` (parallel, vectorize, unroll,
annotate), :mod:`.compute_at`, :mod:`.inline` (compute_inline, reverse_compute_inline),
:mod:`.sampling`, :mod:`.cache` (cache_read, cache_write), :mod:`.reduction`
(decompose_reduction, rfactor), :mod:`.layout` (transform_layout), :mod:`.padding`
(pad_einsum), :mod:`.blockize`; the core is :mod:`.state` (Schedule and its
Trace), :mod:`.registry` (the ``schedule_primitive`` decorator), :mod:`.context` (what a
primitive sees), :mod:`.handles`, :mod:`.instruction`, :mod:`.postconditions` (the checks
after every step), :mod:`.errors`, :mod:`.tree` and :mod:`.analysis`.
"""

from . import errors
from .errors import *  # noqa: F401,F403 - the error classes are part of the public surface
from .errors_data import *  # noqa: F401,F403 - errors of cache/reduction/layout/padding/blockize
from .state import (BlockRV, Context, ExprRV, Instruction, LoopRV, Schedule, Trace,
                    schedule_primitive)

__all__ = ["Schedule", "Trace", "Instruction", "BlockRV", "LoopRV", "ExprRV", "Context",
           "schedule_primitive", "errors"]
