"""Which rule schedules which block: :class:`Rules` walks a function's blocks and hands each
to the rule of its kind, through the knobs it is given. The default schedule and every point
of a tuning space are this walk; only the knobs differ (each taking its hint, or a search's
decision).

    >>> Rules("llvm -mcpu=znver5").schedule(func)          # the default schedule
    >>> Rules(target).apply(Knobs(Schedule(func), {"C.rows": 2}, hinted=True))
"""

from __future__ import annotations

import math
from typing import Callable, Optional

from ..codegen.target import Target
from ..errors import SpaceError
from ..schedule import Schedule
from ..tir.function import PrimFunc
from ..tir.stmt import BlockRealize
from .blocks import kind_of, reads_any, tiled_blocks
from .inlining import inline_intermediates, loop_nest, root_stmts
from .int8 import int8_acc_blocks, int8_rule
from .knobs import Knobs
from .spatial import LONG_REDUCTION, schedule_row_reduction, schedule_spatial, \
    schedule_unrolled_tile
from .tiled import fold_epilogue, schedule_tiled

#: a rule schedules one block: ``rule(knobs, block_name, rules)``
Rule = Callable[[Knobs, str, "Rules"], None]

#: the rule of each block kind (:func:`~mlcbook.rules.blocks.kind_of`); ``"int8"`` schedules
#: a whole kernel with an int8 product stage (:mod:`.int8`)
RULES: dict = {"tiled": schedule_tiled, "spatial": schedule_spatial,
               "row_reduction": schedule_row_reduction,
               "unrolled_tile": schedule_unrolled_tile, "int8": int8_rule}


class Rules:
    """The schedule rules for ``target`` (default: this CPU): ``table`` maps a block kind to
    its rule (the defaults: :data:`RULES`), ``classify(realize, loops)`` names a block's kind
    (default :func:`~mlcbook.rules.blocks.kind_of`). A rule reads the machine from
    ``rules.target`` (``rules.lanes``: float32 lanes of a vector; ``rules.registers``).
    ``pad_border_loops=False`` schedules a big pad like any spatial block instead of cutting
    its loops at the border (``bench/pads.py`` compares the two); ``two_level_sums=False``
    sums every float reduction in one level (``bench/reduction_precision.py --one-level``),
    ``rules.long_reduction`` the fewest terms summed in two levels."""

    def __init__(self, target=None, table: Optional[dict] = None,
                 classify: Optional[Callable] = None, pad_border_loops: bool = True,
                 two_level_sums: bool = True):
        self.target = target if isinstance(target, Target) else Target(target or "llvm")
        self.lanes = self.target.vector_lanes("float32")
        self.registers = self.target.vector_registers
        self.table = {**RULES, **(table or {})}
        self.classify = classify or kind_of
        self.pad_border_loops = pad_border_loops
        self.long_reduction = LONG_REDUCTION if two_level_sums else math.inf

    def apply(self, knobs: Knobs) -> None:
        """Schedule every block of ``knobs.sch`` by its rule: intermediates inlined into the
        tiled reductions that read them, an elementwise epilogue of a tiled result folded
        into the tile's write-back, every other block by the rule of its kind; a kernel with
        an int8 product stage by the ``"int8"`` rule, whole."""
        sch = knobs.sch
        products = int8_acc_blocks(sch.func)
        if products:
            self.table["int8"](knobs, products[0], self)
            return
        inline_intermediates(sch, tiled_blocks(sch.func)[0])
        _, results = tiled_blocks(sch.func)
        for stmt in root_stmts(sch.func):
            loops, node = loop_nest(stmt)
            if not isinstance(node, BlockRealize):
                continue
            block = node.block
            kind = self.classify(node, loops)
            if kind == "spatial" and reads_any(block, results) \
                    and fold_epilogue(sch, block.name):
                continue
            rule = self.table.get(kind)
            if rule is None:
                raise SpaceError(
                    f"block {block.name!r} is of kind {kind!r}, which no rule schedules; "
                    f"Instead: pass rules={{{kind!r}: my_rule}} (known: {sorted(self.table)})")
            rule(knobs, block.name, self)

    def schedule(self, func: PrimFunc) -> PrimFunc:
        """``func`` with every knob at its hint: the default schedule."""
        sch = Schedule(func)
        self.apply(Knobs.defaults(sch))
        return sch.func


__all__ = ["Rules", "Rule", "RULES"]
