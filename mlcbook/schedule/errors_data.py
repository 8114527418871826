"""Errors of the primitives that change data and blocks: caches, reductions, layout,
padding, blockize,
tensorize.

Codes MLC-S050..S099 (the loop and compute-location primitives own S001..S049, in
:mod:`.errors`). Like those, each message is built with ``ctx.fail``: why the step would
change what the program computes, what to do instead, the program with the culprit marked.
Steps that may be legal but that mlcbook cannot prove raise the shared
:class:`~mlcbook.schedule.errors.UnsupportedError`.
"""

from __future__ import annotations

from ..errors import ScheduleError


class BufferIndexError(ScheduleError):
    """The buffer index (or name) does not pick a buffer the block reads or writes."""

    code = "MLC-S050"


class StorageScopeError(ScheduleError):
    """An unknown storage scope for a cache buffer."""

    code = "MLC-S051"


class NotSoleProducerError(ScheduleError):
    """cache_write / a padded or re-laid-out output: another block also writes the buffer,
    or the block reads values of it that it did not write itself."""

    code = "MLC-S052"


class StaleCacheError(ScheduleError):
    """cache_read: the buffer changes while the cache is in use, so the copy would be stale."""

    code = "MLC-S053"


class ConsumerBlockError(ScheduleError):
    """cache_read: a block given as consumer does not read the buffer, or is in another scope."""

    code = "MLC-S054"


class NotReductionError(ScheduleError):
    """decompose_reduction / rfactor on a block that is not a reduction with an init."""

    code = "MLC-S055"


class DecomposeLocationError(ScheduleError):
    """decompose_reduction at a loop that is not around the block, or inside a reduction loop."""

    code = "MLC-S056"


class ReducerPatternError(ScheduleError):
    """rfactor on a block whose update is not ``X = X + e``, ``max(X, e)`` or ``min(X, e)``."""

    code = "MLC-S057"


class RFactorLoopError(ScheduleError):
    """rfactor at a loop that is not a reduction loop of exactly one block."""

    code = "MLC-S058"


class FactorAxisError(ScheduleError):
    """rfactor's factor_axis is not a position in the new buffer's dimensions."""

    code = "MLC-S059"


class IndexMapError(ScheduleError):
    """transform_layout's index map is malformed: wrong arity, not integer, negative indices."""

    code = "MLC-S060"


class NonBijectiveMapError(ScheduleError):
    """transform_layout's index map sends two elements of the buffer to the same place."""

    code = "MLC-S061"


class NotEinsumError(ScheduleError):
    """pad_einsum on a block that does not index every buffer with its iteration variables."""

    code = "MLC-S062"


class PaddingError(ScheduleError):
    """pad_einsum's padding is malformed, or the padded iterations would change the result."""

    code = "MLC-S063"


class BlockizeError(ScheduleError):
    """blockize at a loop whose subtree is not one block with separable bindings."""

    code = "MLC-S064"


class SharedLoopError(ScheduleError):
    """The block's loops also run other blocks that use the data the step moves."""

    code = "MLC-S065"


class TensorizeError(ScheduleError):
    """tensorize: the block does not compute the intrinsic's desc (buffers, index pattern,
    iteration domain or dtype differ), or the intrinsic is unknown."""

    code = "MLC-S066"


__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and issubclass(obj, ScheduleError)]
