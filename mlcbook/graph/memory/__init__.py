"""What plans memory: the run plan of a legalized graph (:mod:`.plan`: a slot for every
value, a step for every kernel call) and where its intermediates live (:mod:`.memory_plan`:
one arena, concats elided, elementwise kernels in place; :mod:`.aliases`: outputs written
over the inputs they update).

    >>> plan, weights = make_plan(func)
    >>> mp = plan_memory(plan, inplace_steps={3})
"""

from .aliases import alias_outputs, with_output_aliases
from .memory_plan import MemoryPlan, elide_concats, lifetimes, plan_memory
from .plan import Plan, Slot, check_plan, make_plan

__all__ = ["MemoryPlan", "elide_concats", "lifetimes", "plan_memory", "Plan", "Slot",
           "check_plan", "make_plan", "alias_outputs", "with_output_aliases"]
