"""Unrolled tiles: the loops of a block whose value depends on its position in a small tile
(a Winograd transform, marked :data:`~mlcbook.tir.UNROLLED_TILE`) split by the tile's size
and unrolled, so that each unrolled copy decides its selects at compile time. The default
schedule (:mod:`mlcbook.graph.kernels.default_schedule`) and the tuning space
(:mod:`mlcbook.tune.space`) both place them with :func:`unroll_tile`.

    >>> outer, inner = unroll_tile(sch, "winograd_input", target)
"""

from __future__ import annotations

import math

from ..codegen.target import Target
from ..schedule import Schedule
from ..tir.expr import bits
from ..tir.stmt import UNROLLED_TILE


def unroll_tile(sch: Schedule, name: str, target=None) -> tuple[list, object]:
    """Split the loops that block ``name``'s :data:`~mlcbook.tir.UNROLLED_TILE` names by
    their factors and unroll the inner parts, placed in that order just above the innermost
    loop; returns (the loops above them, the innermost loop).

        >>> unroll_tile(sch, "winograd_output")   # loops n, ko, y, x, k; y and x by 2
        ([n, ko, yo, xo], k)

    Where the positions' stores lie a multiple of the target's L1 set stride apart
    (:func:`aliased`), the unrolled loops go above the last of the others instead, and the
    loops returned are those above them: a Winograd input transform of 4 x 16 channels at
    56x56 gets ``n, cb, ty`` (returned), ``p`` (unrolled), ``tx``, ``c``.
    """
    block = sch.get_block(name)
    loops = sch.get_loops(block)   # one per iteration variable, in their order
    outer, inner = list(loops[:-1]), []
    for axis, factor in dict(sch.get(block).annotations)[UNROLLED_TILE]:
        at = outer.index(loops[axis])
        if sch.get(outer[at]).extent.value <= factor:
            inner.append(outer.pop(at))
        else:
            outer[at], part = sch.split(outer[at], [None, factor])
            inner.append(part)
    if len(outer) > 1 and aliased(sch, name, target):
        sch.reorder(*outer[:-1], *inner, outer[-1], loops[-1])
        outer = outer[:-1]
    else:
        sch.reorder(*outer, *inner, loops[-1])
    for lp in inner:
        sch.unroll(lp)
    return outer, loops[-1]


def aliased(sch: Schedule, name: str, target=None) -> bool:
    """Whether the stores of block ``name``'s tile positions lie a multiple of the target's
    L1 set stride apart (``Target.machine.l1d_set_stride``: 4 KiB), so that all of one tile's
    stores fall in one L1 set. A Winograd input transform of 4 x 16 channels at 56x56 writes
    its 16 positions 196 KiB apart: with the positions above its row of tiles (each
    position's stores then run along a row) it ran 2.5x faster on Zen 5, and 1.9x at 32 x 16
    channels at 7x7 (32 KiB apart); at 28x28 and 14x14 (98 and 49 KiB apart) the tile-inner
    order was 1.1-1.5x faster.
    """
    if target is None:
        return False
    block = sch.get(sch.get_block(name))
    out = block.writes[0].buffer
    item = max(1, bits(out.dtype) // 8)
    stride = Target(target).machine.l1d_set_stride
    shape = [int(getattr(d, "value", d)) for d in out.shape]
    return any(math.prod(shape[axis + 1:]) * item % stride == 0
               for axis, _ in dict(block.annotations)[UNROLLED_TILE])


__all__ = ["unroll_tile", "aliased"]
