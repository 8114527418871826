"""Schedule rules: how each block of a PrimFunc is scheduled for a target, every decision a
named knob whose default derives from the target's machine model
(:attr:`Target.machine <mlcbook.codegen.Target.machine>`). The default schedule is the
rules with every knob at its hint; a tuning space (:class:`mlcbook.tune.Space`) is the same
rules with the knobs drawn, so the default is a point of the space and a search starts
there.

    >>> rules = Rules("llvm -mcpu=znver5")
    >>> rules.schedule(func)                                 # the default schedule
    >>> rules.apply(Knobs(Schedule(func), {"C.rows": 2}, hinted=True))   # another point

Modules: :mod:`.dispatch` (which rule a block takes), :mod:`.blocks` (what a block is),
:mod:`.spatial` (elementwise, padding, row reductions, unrolled tiles), :mod:`.tiled`
(register tiles of matmuls and convs), :mod:`.panel` (tiles sharing the cache),
:mod:`.channel` (weight layouts a tile may choose), :mod:`.tile_size` (sizes from the
machine), :mod:`.unrolled_tile`, :mod:`.border`, :mod:`.inlining`, :mod:`.knobs`.
"""

from .dispatch import RULES, Rule, Rules
from .knobs import Knobs, Point

__all__ = ["Rules", "Rule", "RULES", "Knobs", "Point"]
