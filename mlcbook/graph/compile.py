"""``mb.compile``: a graph model to an :class:`~mlcbook.graph.Executable`, in the order the
layers of the compiler meet it.

1. graph passes for ``opt_level`` (:mod:`mlcbook.graph.passes`): folding and cleanup (1),
   weight packing (2);
2. fusion (``opt_level >= 2``, :mod:`mlcbook.graph.fusion`): op calls grouped by kind, and
   each group legalized into one PrimFunc; below 2, one PrimFunc per op call;
3. the default schedule of every PrimFunc, then one native library for all of them;
4. the run plan, and (``opt_level >= 2``) the static memory plan: every intermediate placed
   in one arena, elementwise kernels writing over inputs that die.

    >>> exe = mb.compile(mod)                          # opt_level=3
    >>> exe = mb.compile(mod, opt_level=0)             # one kernel per op, a buffer per value
    >>> exe = mb.compile(mod, dump_dir="passes/")      # the graph after every pass, as text
    >>> exe.stats["arena_bytes"], exe.stats["unplanned_bytes"]
"""

from __future__ import annotations

import os
import time
from functools import partial
from typing import Any

from ..errors import DatabaseError, DynamicShapeError, LegalizeError
from ..ops import get as get_op
from ..ops import view_ops
from ..ops.registry import OpKind
from ..ops.types import TensorType, TupleType
from ..tir.function import IRModule, PrimFunc
from .batch import BatchExecutable, SymbolicBatchModule
from .default_schedule import default_schedule
from .executable import Executable
from .expr import CallTIR, Function, post_order
from .fused_kernels import legalize_fused
from .fusion import fuse_ops
from .interpret import main_function
from .legalize import legalize
from .memory_plan import elide_concats, plan_memory
from .passes import PassContext, optimize
from .plan import make_plan
from .records import Database, apply_best


#: most elements of one tensor: loop variables and indices are int32
MAX_ELEMENTS = 2**31 - 1
#: at opt_level >= 2, the inputs of a concat are written straight into its output where they
#: can be (see :func:`~.memory_plan.elide_concats`); ``bench/concat_in_place.py`` turns it
#: off to time the copying concat beside it in one process
CONCAT_IN_PLACE = True

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



def compile(mod, target: str = "llvm", fastmath: bool = False, opt_level: int = 3,  # noqa: A001
            dump_dir=None, verbose: bool = False,
            tuning_records=None) -> Executable | BatchExecutable:
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
    writes the graph after each pass; ``verbose`` prints each pass's time;
    ``tuning_records`` (a path or a :class:`~.records.Database`, i.e. ``mb.tune.Database``) schedules every kernel it has a
    record for by its best record, the others by the default schedule
    (``exe.stats["tuned_kernels"]`` counts the former).
    """
    if isinstance(mod, SymbolicBatchModule):
        options = dict(target=target, fastmath=fastmath, opt_level=opt_level, verbose=verbose,
                       tuning_records=tuning_records)
        return BatchExecutable(mod, partial(_compile_batch, mod, dump_dir, options))
    from ..runtime import build
    t0 = time.perf_counter()
    ctx = PassContext(verbose=verbose, dump_dir=dump_dir, target=target)
    lmod, func, (inplace_names, concat_axes), n_ops = _legalized(mod, opt_level, ctx)
    bounds = {name: dict(f.attrs)["index_bounds"] for name, f in lmod.items()
              if isinstance(f, PrimFunc) and "index_bounds" in dict(f.attrs)}
    plan, consts = make_plan(func, bounds)
    unplanned = sum(s.nbytes for s in plan.slots if s.kind == "temp")
    if opt_level >= 2:
        calls = [n for n in post_order(func.body) if isinstance(n, CallTIR)]
        plan, kept, parts = _elide_concats(plan, calls, concat_axes)
        inplace_steps = {i for i, k in enumerate(kept) if calls[k].name in inplace_names}
        mp = plan_memory(plan, inplace_steps, parts)
        plan.offsets, plan.arena_bytes = mp.offsets, mp.arena_bytes
    plan.output_names = _output_names(mod, len(plan.outputs))
    used = {name for name, _ in plan.steps}   # an elided concat's kernel is never built
    records = _records(tuning_records)
    prims, tuned = {}, 0
    for name, f in lmod.items():
        if isinstance(f, PrimFunc) and name in used:
            best = apply_best(f, records, target) if records is not None else None
            tuned += best is not None
            prims[name] = best if best is not None else default_schedule(f, target)
    t1 = time.perf_counter()
    kernels: dict[str, Any] = {}
    if prims:
        lib = build(IRModule(prims), target=target, fastmath=fastmath)
        kernels = {next(iter(prims)): lib} if len(prims) == 1 else dict(lib.kernels)
    stats = {"schedule_s": t1 - t0, "build_s": time.perf_counter() - t1,
             "kernels": len(kernels), "tuned_kernels": tuned, "calls": len(plan.steps),
             "ops": n_ops,
             "arena_bytes": plan.arena_bytes if plan.offsets else unplanned,
             "unplanned_bytes": unplanned,
             "passes": [(name, dt) for name, dt, _, _ in ctx.timings]}
    return Executable(plan, kernels, consts, stats)


def _compile_batch(mod: SymbolicBatchModule, dump_dir, options: dict,
                   batch_size: int) -> Executable:
    dump = os.path.join(dump_dir, f"batch_{batch_size}") if dump_dir is not None else None
    return compile(mod.specialize(batch_size), dump_dir=dump, **options)


def _output_names(mod, count: int) -> list[str]:
    """The names the imported graph gave its outputs (``from_onnx`` keeps the ONNX graph's in
    the main function's attrs), if there is one distinct name per output; else none."""
    names = list(dict(main_function(mod)[0].attrs).get("output_names", ()))
    return names if len(names) == count and len(set(names)) == count else []


def _legalized(mod, opt_level: int, ctx: PassContext):
    """The graph passes, fusion and legalization: (module of graph + PrimFuncs, its main
    graph function, (names of the calls that may run in place, {name of a call that is one
    concat of distinct values: its axis}), ops in the input)."""
    func, _ = main_function(mod)
    check_sizes(func)
    n_ops = len(func.calls())
    func = optimize(func, opt_level, ctx)
    others = {k: f for k, f in (mod.functions.items() if isinstance(mod, IRModule) else ())
              if k != func.name}
    inplace_names: set[str] = set()
    concat_axes: dict[str, int] = {}
    if opt_level >= 2:
        fusion = fuse_ops(func)
        lmod = legalize_fused(IRModule({**others, "main": func}), fusion, keep=view_ops())
        inplace_names = {g.name for g in fusion.groups
                         if g.kind <= OpKind.BROADCAST and all(
                             get_op(c.op).kind <= OpKind.BROADCAST for c in g.calls)}
        names = [g.name for g in fusion.groups]
        # calls are matched to groups by name: only a name no other group has is certain
        concat_axes = {g.name: int(g.output.attrs["axis"]) for g in fusion.groups
                       if CONCAT_IN_PLACE and len(g.calls) == 1 and g.output.op == "concat"
                       and len({id(a) for a in g.output.args}) == len(g.output.args)
                       and names.count(g.name) == 1}
    else:
        lmod = legalize(IRModule({**others, "main": func}), keep=view_ops())
    func, _ = main_function(lmod)
    return lmod, func, (inplace_names, concat_axes), n_ops


def _elide_concats(plan, calls: list, concat_axes: dict):
    """:func:`~.memory_plan.elide_concats` of the steps that call one concat (``calls``: the
    CallTIR of each step; ``concat_axes``: by call name, the axis of each such call)."""
    return elide_concats(plan, {k: concat_axes[n.name] for k, n in enumerate(calls)
                                if n.name in concat_axes})


def kernel_calls(mod, opt_level: int = 3, target=None) -> list:
    """``[(name, PrimFunc, calls per run)]`` of the kernels ``mb.compile`` would build for
    ``mod`` for ``target`` (default: this machine), before scheduling: what tuning tasks are
    made of.

        >>> [(name, n) for name, _, n in kernel_calls(mod)]     # [('fused_matmul_add', 1), ...]
    """
    if isinstance(mod, SymbolicBatchModule):
        raise DynamicShapeError(
            f"the module has the symbolic batch size {mod.batch_dim!r}, and kernels are made "
            "for static shapes. Instead: pick the batch size to tune for with "
            "mod.specialize(n), or import with mb.from_onnx(..., batch_size=n)")
    lmod, func, (_, concat_axes), _ = _legalized(mod, opt_level, PassContext(target=target))
    calls = [n for n in post_order(func.body) if isinstance(n, CallTIR)]
    if concat_axes:   # a concat that costs no copy is no task
        calls = [calls[k] for k in _elide_concats(make_plan(func)[0], calls, concat_axes)[1]]
    counts: dict = {}
    for n in calls:
        counts[n.func] = counts.get(n.func, 0) + 1
    return [(name, lmod[name], c) for name, c in counts.items()
            if isinstance(lmod[name], PrimFunc)]


def _records(tuning_records):
    if tuning_records is None or isinstance(tuning_records, Database):
        return tuning_records
    if not os.path.exists(tuning_records):
        raise DatabaseError(f"no tuning records at {tuning_records!r}; Instead: pass the file "
                            "`mlcbook tune` or mb.tune.tune(..., database=PATH) wrote")
    return Database(tuning_records)


__all__ = ["compile", "kernel_calls"]
