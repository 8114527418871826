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
(pad_einsum), :mod:`.blockize`; the core is :mod:`.state` (Schedule, handles, the
``schedule_primitive`` decorator), :mod:`.trace`, :mod:`.errors`, :mod:`.tree` and
:mod:`.analysis`.
"""

from . import errors
from .errors import *  # noqa: F401,F403 - the error classes are part of the public surface
from .state import BlockRV, Context, ExprRV, LoopRV, Schedule, schedule_primitive
from .trace import Instruction, Trace
from . import compute_at, for_kind, inline, loops, queries, sampling  # noqa: E402,F401 - register primitives
from .errors_data import *  # noqa: F401,F403,E402 - errors of cache/reduction/layout/padding/blockize
from . import blockize, cache, layout, padding, reduction  # noqa: E402,F401 - register primitives

__all__ = ["Schedule", "Trace", "Instruction", "BlockRV", "LoopRV", "ExprRV", "Context",
           "schedule_primitive", "errors"]
