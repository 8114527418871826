"""What schedules the kernels of a compiled model: each legalized PrimFunc gets the default
schedule of the rules (:mod:`.default_schedule`) or the best schedule a tuning database
recorded for it (:mod:`.records`); :mod:`.int8_matmul` and :mod:`.bf16_matmul` are the
low-precision matmul kernels written and scheduled by hand.

    >>> from mlcbook.graph.kernels import default_schedule, schedule_kernels
    >>> sched = default_schedule(prim_func, "llvm -mcpu=znver5")
    >>> mod = schedule_kernels(mod, target="llvm")     # every PrimFunc of an IRModule
"""

from .default_schedule import default_schedule, schedule_kernels
from .records import Database, Record, apply_best

__all__ = ["default_schedule", "schedule_kernels", "Database", "Record", "apply_best"]
