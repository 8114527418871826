"""``border_loop``: which loop of a pad-like block to cut at its border.

A pad block's value selects on its iteration variables against constants,
``select(y - 1 >= 0 and y - 1 < 56 and x - 1 >= 0 and x - 1 < 56, a[...], 0)``. The
default schedule (:mod:`mlcbook.graph.kernels.default_schedule`) fuses and parallelizes the loops
above the innermost loop so tested and leaves that one apart, for lowering to cut it where
the tests change (:mod:`mlcbook.tir.transform.partition_loops`).

    >>> sch = Schedule(legalize_call("conv_nchwc", ...))
    >>> border_loop(sch, "conv_nchwc_pad", sch.get_loops(sch.get_block("conv_nchwc_pad")))
    3                                         # (n, cb, y, x, ci): x
"""

from __future__ import annotations

from ..schedule import Schedule
from ..tir.analysis import collect_blocks
from ..tir.expr import Select
from ..tir.functor import post_order_visit
from ..tir.simplify import conjuncts, var_bound


def border_loop(sch: Schedule, name: str, loops) -> int | None:
    """The position in ``loops`` (block ``name``'s, unscheduled) of the innermost loop but
    the last that binds an iteration variable the block's selects test against constants;
    None if no such loop."""
    realize = next(r for r in collect_blocks(sch.func.body) if r.block.name == name)
    tested: set = set()

    def visit(n):
        if isinstance(n, Select):
            tested.update(var_bound(p)[0] for p in conjuncts(n.cond))
    post_order_visit(realize.block.body, visit)
    bound = {id(v) for iv, v in zip(realize.block.iter_vars, realize.iter_values)
             if iv.var in tested}
    found = [k for k, lp in enumerate(loops[:-1]) if id(sch.get(lp).loop_var) in bound]
    return found[-1] if found else None
