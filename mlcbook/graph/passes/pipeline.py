"""The pass pipeline as a data table, and the context that watches it run.

Which passes run is decided by ``opt_level``, as in most compilers:

====  ==========================================================================
 0    nothing: every op becomes its own kernel, every value its own buffer
 1    quantized (QDQ) groups lowered to integer kernels; cleanup: constant
      folding, BatchNorm folding, chains of reshapes/transposes collapsed,
      common subexpressions merged
 2    + weight packing for the gemm kernels, operator fusion and memory planning
      (both happen when the graph is lowered, see :mod:`mlcbook.graph.fusion`
      and :mod:`mlcbook.graph.memory_plan`)
 3    + data layouts chosen for the kernels (the default): blocked channels for the
      float convolutions, channels last for the int8 ones; big 3x3 convolutions
      computed by Winograd's F(2x2, 3x3)
====  ==========================================================================

    >>> ctx = PassContext(verbose=True)
    >>> func = optimize(func, opt_level=3, ctx=ctx)
    fold_constants      0.4 ms   12 calls -> 10 calls
    ...
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ...errors import GraphError
from ..expr import Function
from ..interpret import main_function
from ..weight_layout import pack_weights
from .fold import fold_batch_norm, fold_constants
from .int8_layout import convert_int8_layout
from .integer_ops import lower_integer_ops
from .layout import convert_layout
from .qdq import lower_qdq
from .simplify import eliminate_common_subexpressions, simplify_chains
from .winograd import winograd_convs


@dataclass(frozen=True)
class Pass:
    """A named function ``Function -> Function`` that runs from ``opt_level`` up."""

    name: str
    fn: Callable[..., Function]
    opt_level: int
    #: the pass decides by the machine (a layout's block, a panel's width): ``fn(func, target)``
    uses_target: bool = False

    def __call__(self, func: Function, target=None) -> Function:
        return self.fn(func, target) if self.uses_target else self.fn(func)


#: the graph passes in the order they run; fusion and memory planning happen later, when
#: the optimized graph is lowered (they need the kernels' shapes, not just the graph's)
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
    Pass("winograd_convs", winograd_convs, 3),   # on the blocked convs convert_layout made
    Pass("convert_int8_layout", convert_int8_layout, 3),
    Pass("eliminate_common_subexpressions", eliminate_common_subexpressions, 3),
)


@dataclass
class PassContext:
    """What to do around each pass: time it (always), print a line (``verbose``), and write
    the function after it to ``dump_dir/NN_name.txt`` so a reader can diff the steps; the
    passes that decide by the machine decide for ``target`` (default: this one)."""

    verbose: bool = False
    dump_dir: str | Path | None = None
    target: object = None
    timings: list[tuple[str, float, int, int]] = field(default_factory=list)

    def run(self, p: Pass, func: Function) -> Function:
        before = len(func.calls())
        t0 = time.perf_counter()
        out = p(func, self.target)
        dt = time.perf_counter() - t0
        if not isinstance(out, Function):
            raise GraphError(f"pass {p.name!r} returned {type(out).__name__}, not a graph "
                             "Function; a pass maps a Function to a Function")
        after = len(out.calls())
        self.timings.append((p.name, dt, before, after))
        if self.verbose:
            print(self._line(p.name, dt, before, after))
        if self.dump_dir is not None:
            d = Path(self.dump_dir)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{len(self.timings):02d}_{p.name}.txt").write_text(out.script() + "\n")
        return out

    @staticmethod
    def _line(name: str, dt: float, before: int, after: int) -> str:
        return f"{name:<34}{dt * 1e3:8.1f} ms   {before:4d} calls -> {after:4d} calls"

    def report(self) -> str:
        """One line per pass run: its time and the op calls before and after it."""
        return "\n".join(self._line(*t) for t in self.timings)


def optimize(target, opt_level: int = 3, ctx: PassContext | None = None) -> Function:
    """The main graph function of ``target`` after the passes of ``opt_level``."""
    if opt_level not in (0, 1, 2, 3):
        raise GraphError(f"opt_level must be 0, 1, 2 or 3, got {opt_level!r}")
    func, _ = main_function(target)
    ctx = ctx if ctx is not None else PassContext()
    for p in PIPELINE:
        if p.opt_level <= opt_level:
            func = ctx.run(p, func)
    return func
