"""``mb.compile``: a graph model to an :class:`~mlcbook.graph.Executable`, in the order the
layers of the compiler meet it. Every step is a named :class:`~.passes.Pass` from what the
step before made, timed, printed (``verbose``) and written out (``dump_dir``) by the
:class:`~.passes.PassContext`:

1. the graph passes of ``opt_level`` (:data:`~.passes.PIPELINE`: Function -> Function):
   folding and cleanup (1), weight packing (2), layouts (3);
2. :data:`LOWERING` (IRModule -> IRModule): ``fuse_ops`` (``opt_level >= 2``) groups the op
   calls by kind (:mod:`.fusion`) and makes one PrimFunc a group (:mod:`.fused_kernels`),
   each ``call_tir`` carrying what the planner may do with it (attrs ``inplace``,
   ``concat_axis``); below 2, ``legalize`` makes one PrimFunc per op call;
3. the run plan (graph -> plan, :func:`~.memory.plan.make_plan`), then :data:`PLANNING`
   (plan -> plan, :mod:`.memory`): outputs written over the inputs they update (declared
   by the function, :func:`~.memory.aliases.with_output_aliases`), concats elided
   (``opt_level >= 2``, option ``concat_in_place``), every intermediate placed in one arena
   (``opt_level >= 2``);
4. ``schedule_kernels`` (IRModule -> IRModule, :mod:`.kernels`): each kernel the plan calls
   by its tuning record or the default schedule; then one native library for all of them.

    >>> exe = mb.compile(mod)                          # opt_level=3
    >>> exe = mb.compile(mod, opt_level=0)             # one kernel per op, a buffer per value
    >>> exe = mb.compile(mod, dump_dir="passes/")      # what every step made, as text
    >>> exe = mb.compile(mod, options={"concat_in_place": False})   # see passes.OPTIONS
    >>> exe.stats["arena_bytes"], exe.stats["unplanned_bytes"]
"""

from __future__ import annotations

import gc
import os
import time
from contextlib import contextmanager
from functools import partial
from typing import Any, Mapping

from ..errors import DatabaseError, DynamicShapeError, LegalizeError
from ..ops import view_ops
from ..ops.types import TensorType, TupleType
from ..tir.function import IRModule, PrimFunc
from .batch import BatchExecutable, SymbolicBatchModule
from .expr import Function, post_order
from .fused_kernels import legalize_fused
from .fusion import fuse_ops
from .interpret import main_function
from .kernels.default_schedule import schedule_kernels
from .kernels.records import Database
from .legalize import legalize
from .memory.aliases import alias_outputs, declared_aliases
from .memory.memory_plan import elide_concat_steps, place_in_arena
from .memory.plan import Plan, make_plan
from .passes import PassContext, optimize
from .passes.pipeline import SCHEDULE_OPTIONS, Pass, check_opt_level
from .run.executable import Executable
from .run.signature import graph_output_names


#: most elements of one tensor: loop variables and indices are int32
MAX_ELEMENTS = 2**31 - 1


def check_sizes(func: Function) -> None:
    for n in list(func.params) + list(post_order(func.body)):
        for t in (n.type.fields if isinstance(n.type, TupleType) else (n.type,)):
            if isinstance(t, TensorType) and t.size > MAX_ELEMENTS:
                what = f"input {n.name!r}" if n in func.params else \
                    f"the value {getattr(n, 'name', None) or type(n).__name__!r}"
                raise LegalizeError(
                    f"cannot compile: {what} has shape {t.shape}, {t.size} elements, more than "
                    f"the {MAX_ELEMENTS} (2**31 - 1) that mlcbook's int32 loop indices reach; "
                    "Instead: compile for a smaller batch size or input shape")


def legalize_ops(mod: IRModule) -> IRModule:
    """One PrimFunc per op call (reshapes stay views)."""
    return legalize(mod, keep=view_ops())


def fuse_and_legalize(mod: IRModule) -> IRModule:
    """One PrimFunc per fusion group of the main function, the facts of each group on its
    ``call_tir`` (:func:`~.fused_kernels.call_facts`)."""
    return legalize_fused(mod, fuse_ops(main_function(mod)[0]), keep=view_ops())


def _schedule(mod: IRModule, ctx: PassContext) -> IRModule:
    out, tuned = schedule_kernels(mod, ctx.target, ctx.tuning_records,
                                  **{k: ctx.options[k] for k in SCHEDULE_OPTIONS})
    ctx.stats["tuned_kernels"] = len(tuned)
    return out


#: after the graph passes: from the optimized graph to a module of PrimFuncs called by it
LOWERING: tuple[Pass, ...] = (
    Pass("legalize", legalize_ops, 0, makes=IRModule, until=2),
    Pass("fuse_ops", fuse_and_legalize, 2, makes=IRModule),
)
#: from the plan of the legalized graph to the plan a run follows
PLANNING: tuple[Pass, ...] = (
    Pass("alias_outputs", alias_outputs, 0, makes=Plan),
    Pass("elide_concats", elide_concat_steps, 2, makes=Plan, option="concat_in_place"),
    Pass("plan_memory", place_in_arena, 2, makes=Plan),
)
#: the kernels the plan calls, scheduled
SCHEDULING = Pass("schedule_kernels", _schedule, 0, makes=IRModule, uses_context=True)
#: every step after the graph passes, in order
STEPS: tuple[Pass, ...] = LOWERING + PLANNING + (SCHEDULING,)


def compile(mod, target: str = "llvm", fastmath: bool = False, opt_level: int = 3,  # noqa: A001
            dump_dir=None, verbose: bool = False, tuning_records=None,
            options: Mapping[str, Any] | None = None) -> Executable | BatchExecutable:
    """Compile a module's main graph function (or a graph Function) to an Executable.

    A :class:`~mlcbook.graph.SymbolicBatchModule` (``mb.from_onnx`` of a model with a
    symbolic batch size) compiles to a :class:`~mlcbook.graph.BatchExecutable`, which
    compiles with these options for each batch size on its first call with it (``dump_dir``
    gets one folder ``batch_N`` per size):

        >>> exe = mb.compile(mb.from_onnx("mlp.onnx"))     # nothing compiled yet
        >>> exe(x8); exe.batch_sizes                        # compiled for batch 8
        [8]

    ``opt_level`` picks the optimizations (0 none, 1 folding and cleanup, 2 + fusion and
    memory planning, 3 + layouts; see :mod:`mlcbook.graph.passes.pipeline`); ``dump_dir``
    writes what each step made; ``verbose`` prints each step's time;
    ``tuning_records`` (a path or a :class:`~.kernels.records.Database`, i.e.
    ``mb.tune.Database``) schedules every kernel it has a record for by its best record, the
    others by the default schedule (``exe.stats["tuned_kernels"]`` counts the former);
    ``options`` turn choices of the compiler off to compare (:data:`~.passes.OPTIONS`).
    """
    if isinstance(mod, SymbolicBatchModule):
        kwargs = dict(target=target, fastmath=fastmath, opt_level=opt_level, verbose=verbose,
                      tuning_records=tuning_records, options=options)
        return BatchExecutable(mod, partial(_compile_batch, mod, dump_dir, kwargs))
    with _cycle_collector_paused():
        return _compile(mod, target, fastmath, opt_level, dump_dir, verbose, tuning_records,
                        options)


@contextmanager
def _cycle_collector_paused():
    """Pause Python's cyclic garbage collector (restoring its state after). A compile makes
    millions of short-lived IR nodes, which reference counting frees; the collector would
    walk them again and again, and with them everything a long process keeps (every
    executable it compiled before): a sixth of a zoo model's compile in a process that
    keeps a few others. What is left in cycles (the LLVM IR builder's objects, tens of MB)
    goes at the collector's first pass after."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _compile(mod, target, fastmath, opt_level, dump_dir, verbose, tuning_records, options):
    from ..runtime import build
    t0 = time.perf_counter()
    ctx = PassContext(verbose=verbose, dump_dir=dump_dir, target=target,
                      options=dict(options or {}), tuning_records=_records(tuning_records))
    lmod, n_ops = _lowered(mod, opt_level, ctx)
    plan, consts = _planned(mod, lmod, opt_level, ctx, PLANNING)
    unplanned = sum(s.nbytes for s in plan.slots if s.kind == "temp")
    used = {name for name, _ in plan.steps}   # an elided concat's kernel is never built
    prims = ctx.run(SCHEDULING, IRModule({n: f for n, f in lmod.functions.items()
                                          if isinstance(f, PrimFunc) and n in used}))
    t1 = time.perf_counter()
    kernels: dict[str, Any] = {}
    if prims.functions:
        lib = build(prims, target=target, fastmath=fastmath)
        kernels = {next(iter(prims)): lib} if len(prims.functions) == 1 else dict(lib.kernels)
    stats = {"schedule_s": t1 - t0, "build_s": time.perf_counter() - t1,
             "kernels": len(kernels), "tuned_kernels": ctx.stats["tuned_kernels"],
             "calls": len(plan.steps), "ops": n_ops,
             "arena_bytes": plan.arena_bytes if plan.offsets else unplanned,
             "unplanned_bytes": unplanned,
             "passes": [(name, dt) for name, dt, _, _ in ctx.timings]}
    return Executable(plan, kernels, consts, stats)


def _compile_batch(mod: SymbolicBatchModule, dump_dir, kwargs: dict,
                   batch_size: int) -> Executable:
    dump = os.path.join(dump_dir, f"batch_{batch_size}") if dump_dir is not None else None
    return compile(mod.specialize(batch_size), dump_dir=dump, **kwargs)


def _lowered(mod, opt_level: int, ctx: PassContext) -> tuple[IRModule, int]:
    """The graph passes and :data:`LOWERING`: (module of the main graph function and its
    PrimFuncs, ops in the input)."""
    check_opt_level(opt_level)
    func, _ = main_function(mod)
    check_sizes(func)
    n_ops = len(func.calls())
    func = optimize(func, opt_level, ctx)
    others = {k: f for k, f in (mod.functions.items() if isinstance(mod, IRModule) else ())
              if k != func.name}
    lmod = IRModule({**others, "main": func})
    for p in LOWERING:
        if p.runs(opt_level, ctx.options):
            lmod = ctx.run(p, lmod)
    return lmod, n_ops


def _planned(mod, lmod: IRModule, opt_level: int, ctx: PassContext, steps) -> tuple:
    """The plan of the legalized ``lmod`` after ``steps`` (those of ``opt_level``), and the
    weights by slot; ``mod``, the input, declares output names and aliases."""
    func, _ = main_function(lmod)
    bounds = {name: dict(f.attrs)["index_bounds"] for name, f in lmod.items()
              if isinstance(f, PrimFunc) and "index_bounds" in dict(f.attrs)}
    declared = main_function(mod)[0]
    plan, consts = make_plan(func, bounds, declared_aliases(declared))
    plan.output_names = graph_output_names(declared, len(plan.outputs))
    for p in steps:
        if p.runs(opt_level, ctx.options):
            plan = ctx.run(p, plan)
    return plan, consts


def kernel_calls(mod, opt_level: int = 3, target=None,
                 options: Mapping[str, Any] | None = None) -> list:
    """``[(name, PrimFunc, calls per run)]`` of the kernels ``mb.compile`` would build for
    ``mod`` for ``target`` (default: this machine) with ``options``, before scheduling: what
    tuning tasks are made of.

        >>> [(name, n) for name, _, n in kernel_calls(mod)]     # [('fused_matmul_add', 1), ...]
    """
    if isinstance(mod, SymbolicBatchModule):
        raise DynamicShapeError(
            f"the module has the symbolic batch size {mod.batch_dim!r}, and kernels are made "
            "for static shapes. Instead: pick the batch size to tune for with "
            "mod.specialize(n), or import with mb.from_onnx(..., batch_size=n)")
    ctx = PassContext(target=target, options=dict(options or {}))
    lmod, _ = _lowered(mod, opt_level, ctx)
    # the plan's steps without the arena: a concat that costs no copy is no task
    plan, _ = _planned(mod, lmod, opt_level, ctx,
                       [p for p in PLANNING if p.name != "plan_memory"])
    counts: dict = {}
    for name, _ in plan.steps:
        counts[name] = counts.get(name, 0) + 1
    return [(name, lmod[name], c) for name, c in counts.items()
            if isinstance(lmod[name], PrimFunc)]


def _records(tuning_records):
    if tuning_records is None or isinstance(tuning_records, Database):
        return tuning_records
    if not os.path.exists(tuning_records):
        raise DatabaseError(f"no tuning records at {tuning_records!r}; Instead: pass the file "
                            "`mlcbook tune` or mb.tune.tune(..., database=PATH) wrote")
    return Database(tuning_records)


__all__ = ["compile", "kernel_calls", "LOWERING", "PLANNING", "SCHEDULING", "STEPS",
           "legalize_ops", "fuse_and_legalize"]
