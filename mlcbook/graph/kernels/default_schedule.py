"""Default schedules: what ``mb.compile`` does to each legalized PrimFunc before building it,
without tuning records: the schedule rules (:mod:`mlcbook.rules`) with every knob at the
decision the target's machine model gives it. Every step is an ordinary
:class:`mlcbook.Schedule` primitive, so the trace of a default schedule can be printed and
replayed, and it is the default point of the tuning space (``mb.tune.Space(f, target)``).

    >>> func = default_schedule(legalize_call("matmul", [T((64, 784)), T((784, 512))]))
    >>> mod, tuned = schedule_kernels(mod, "llvm -mcpu=znver5")   # every kernel of a module
"""

from __future__ import annotations

from ...codegen.target import Target
from ...rules import Rules
from ...tir.function import IRModule, PrimFunc
from .records import apply_best


def default_schedule(func: PrimFunc, target=None, pad_border_loops: bool = True,
                     two_level_sums: bool = True) -> PrimFunc:
    """``func`` with the default schedule applied to every block; ``target`` (default: this
    machine) gives the machine model its decisions derive from; ``pad_border_loops=False``
    schedules a big pad like any spatial block, ``two_level_sums=False`` sums long float
    reductions in one level (see :class:`mlcbook.rules.Rules`)."""
    return Rules(Target(target or "llvm"), pad_border_loops=pad_border_loops,
                 two_level_sums=two_level_sums).schedule(func)


def schedule_kernels(mod: IRModule, target=None, records=None,
                     **options) -> tuple[IRModule, list[str]]:
    """``mod`` with every PrimFunc scheduled: by the best record of its workload in the
    tuning database ``records`` (a :class:`~.records.Database`) when there is one, else by
    :func:`default_schedule` with ``options`` (``pad_border_loops``, ``two_level_sums``);
    and the names of the kernels a record scheduled."""
    funcs, tuned = {}, []
    for name, f in mod.functions.items():
        if not isinstance(f, PrimFunc):
            funcs[name] = f
            continue
        best = apply_best(f, records, target) if records is not None else None
        if best is not None:
            tuned.append(name)
        funcs[name] = best if best is not None else default_schedule(f, target, **options)
    return IRModule(funcs), tuned


__all__ = ["default_schedule", "schedule_kernels"]
