"""The pass pipeline as a data table, and the context that watches it run: the graph passes
here (``Function -> Function``), and after them the steps of ``mb.compile`` that lower the
graph to kernels, plan its memory and schedule its kernels (:data:`mlcbook.graph.compile.STEPS`).

Which passes run is decided by ``opt_level``, as in most compilers:

====  ==========================================================================
 0    nothing: every op becomes its own kernel, every value its own buffer
 1    quantized (QDQ) groups lowered to integer kernels; cleanup: constant
      folding, BatchNorm folding, chains of reshapes/transposes collapsed,
      common subexpressions merged
 2    + weight packing for the gemm kernels, operator fusion and memory planning
      (steps after the graph passes, see :mod:`mlcbook.graph.compile`)
 3    + data layouts chosen for the kernels (the default): blocked channels for the
      float convolutions, channels last for the int8 ones; big 3x3 convolutions
      computed by Winograd's F(2x2, 3x3)
====  ==========================================================================

    >>> ctx = PassContext(verbose=True)
    >>> func = optimize(func, opt_level=3, ctx=ctx)
    fold_constants      0.4 ms   12 calls -> 10 calls
    ...

The context also holds the options of a compile (:data:`OPTIONS`): choices a benchmark or a
test turns off to compare, which no module-level switch changes:

    >>> mb.compile(mod, options={"concat_in_place": False})
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ...errors import GraphError
from ..expr import Function
from ..interpret import main_function
from .weight_layout import pack_weights
from .fold import fold_batch_norm, fold_constants
from .int8_layout import convert_int8_layout
from .integer_ops import lower_integer_ops
from .layout import convert_layout
from .qdq import lower_qdq
from .simplify import eliminate_common_subexpressions, simplify_chains
from .winograd import MIN_FLOPS, winograd_convs


#: the options of a compile and their defaults: ``concat_in_place``: a concat whose slices
#: are contiguous is elided, its inputs written into its output (the ``elide_concats`` step);
#: ``pad_border_loops``: the default schedule cuts a big pad's loops at its border
#: (:func:`mlcbook.rules.spatial.schedule_spatial`); ``two_level_sums``: it sums a long
#: float reduction in two levels (:func:`mlcbook.rules.spatial.two_level`);
#: ``winograd_min_flops``: the fewest flops of a conv the ``winograd_convs`` pass takes
#: (``math.inf``: none)
OPTIONS: dict[str, Any] = {"concat_in_place": True, "pad_border_loops": True,
                           "two_level_sums": True, "winograd_min_flops": MIN_FLOPS}
#: the options the default schedule of each kernel reads (:class:`mlcbook.rules.Rules`)
SCHEDULE_OPTIONS = ("pad_border_loops", "two_level_sums")


@dataclass(frozen=True)
class Pass:
    """A named step that runs from ``opt_level`` up (below ``until``, when given) and, when
    ``option`` names one, only while that option is on. A graph pass maps a ``Function`` to
    a ``Function``; the steps after the graph passes map what the step before made to a
    ``makes`` (an ``IRModule``, a plan)."""

    name: str
    fn: Callable[..., Any]
    opt_level: int
    #: the pass decides by the machine (a layout's block, a panel's width): ``fn(func, target)``
    uses_target: bool = False
    #: the step reads the context (its target, its options): ``fn(x, ctx)``
    uses_context: bool = False
    makes: type = Function
    until: int = 4
    option: str | None = None

    def __call__(self, func: Function, target=None) -> Function:
        if self.uses_context:    # alone, a step that reads options reads their defaults
            return self.fn(func, PassContext(target=target))
        return self.fn(func, target) if self.uses_target else self.fn(func)

    def runs(self, opt_level: int, options: Mapping[str, Any]) -> bool:
        """Whether the step is part of a compile at ``opt_level`` with ``options``."""
        return self.opt_level <= opt_level < self.until and \
            (self.option is None or bool(options[self.option]))


#: the graph passes in the order they run; fusion and memory planning are steps after them
#: (:data:`mlcbook.graph.compile.STEPS`), on the lowered graph
PIPELINE: tuple[Pass, ...] = (
    # first: folding would turn the dequantized weights into float constants
    Pass("lower_qdq", lower_qdq, 1),
    Pass("lower_integer_ops", lower_integer_ops, 1),
    Pass("fold_constants", fold_constants, 1),
    Pass("fold_batch_norm", fold_batch_norm, 1),
    Pass("simplify_chains", simplify_chains, 1),
    Pass("eliminate_common_subexpressions", eliminate_common_subexpressions, 1),
    Pass("fold_constants", fold_constants, 1),   # what BatchNorm folding left constant
    Pass("pack_weights", pack_weights, 2, uses_target=True),
    Pass("convert_layout", convert_layout, 3, uses_target=True),
    # on the blocked convs convert_layout made
    Pass("winograd_convs", lambda f, ctx: winograd_convs(f, ctx.options["winograd_min_flops"]),
         3, uses_context=True),
    Pass("convert_int8_layout", convert_int8_layout, 3),
    Pass("eliminate_common_subexpressions", eliminate_common_subexpressions, 3),
)


@dataclass
class PassContext:
    """What to do around each pass: time it (always), print a line (``verbose``), and write
    what it made to ``dump_dir/NN_name.txt`` so a reader can diff the steps; the passes that
    decide by the machine decide for ``target`` (default: this one); ``options`` override
    :data:`OPTIONS` (``PassContext(options={"concat_in_place": False})``)."""

    verbose: bool = False
    dump_dir: str | Path | None = None
    target: object = None
    timings: list[tuple[str, float, int, int]] = field(default_factory=list)
    options: Mapping[str, Any] = field(default_factory=dict)
    #: the tuning database the kernels are scheduled from (None: the default schedules)
    tuning_records: Any = None
    #: figures the steps report (``tuned_kernels``)
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise GraphError(f"unknown compile option(s) {', '.join(map(repr, unknown))}; "
                             f"Instead: use one of {', '.join(sorted(OPTIONS))}")
        self.options = {**OPTIONS, **self.options}

    def run(self, p: Pass, x):
        """``x`` after the step ``p`` (timed, printed, dumped)."""
        before = _count(x)
        t0 = time.perf_counter()
        out = p.fn(x, self) if p.uses_context else p(x, self.target)
        dt = time.perf_counter() - t0
        if not isinstance(out, p.makes):
            raise GraphError(f"pass {p.name!r} returned {type(out).__name__}, not a "
                             f"{'graph ' if p.makes is Function else ''}{p.makes.__name__}; "
                             f"a pass maps a {type(x).__name__} to a {p.makes.__name__}")
        after = _count(out)
        self.timings.append((p.name, dt, before, after))
        if self.verbose:
            print(self._line(p.name, dt, before, after))
        if self.dump_dir is not None:
            d = Path(self.dump_dir)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{len(self.timings):02d}_{p.name}.txt").write_text(_text(out) + "\n")
        return out

    @staticmethod
    def _line(name: str, dt: float, before: int, after: int) -> str:
        return f"{name:<34}{dt * 1e3:8.1f} ms   {before:4d} calls -> {after:4d} calls"

    def report(self) -> str:
        """One line per pass run: its time and the op calls before and after it."""
        return "\n".join(self._line(*t) for t in self.timings)


def _count(x) -> int:
    """The calls of what a step made: op calls of a graph (a module's main graph), kernel
    calls of a plan; the kernels of a module of PrimFuncs alone."""
    if isinstance(x, Function):
        return len(x.calls())
    if hasattr(x, "steps"):
        return len(x.steps)
    graphs = [f for f in x.functions.values() if isinstance(f, Function)]
    return len(main_function(x)[0].calls()) if graphs else len(x.functions)


def _text(x) -> str:
    """What a step made as text: a graph or module as script; a plan as its steps (with the
    facts of their calls) and its slots (with their arena offsets)."""
    if hasattr(x, "script"):
        return x.script()
    facts = x.facts or [{}] * len(x.steps)
    steps = [f"step {k}: {name}{tuple(args)} {dict(f) or ''}".rstrip()
             for k, ((name, args), f) in enumerate(zip(x.steps, facts))]
    slots = [f"slot {i}: {s.kind} {tuple(s.shape)} {s.dtype}"
             + (f" @ {x.offsets[i]}" if i in x.offsets else "") for i, s in enumerate(x.slots)]
    return "\n".join(steps + slots)


def check_opt_level(opt_level) -> None:
    if opt_level not in (0, 1, 2, 3):
        raise GraphError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")


def optimize(target, opt_level: int = 3, ctx: PassContext | None = None) -> Function:
    """The main graph function of ``target`` after the passes of ``opt_level``."""
    check_opt_level(opt_level)
    func, _ = main_function(target)
    ctx = ctx if ctx is not None else PassContext()
    for p in PIPELINE:
        if p.runs(opt_level, ctx.options):
            func = ctx.run(p, func)
    return func
