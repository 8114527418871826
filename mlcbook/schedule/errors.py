"""Schedule errors: one class per violated fact, each with a stable code ``MLC-S0xx``.

A message has three parts, built by :func:`schedule_error`: one plain sentence saying why
the step would change what the program computes, what to do instead, and the program
printed with the offending loop or block marked ``# <-- here``::

    >>> sch.parallel(k)
    ReduceLoopParallelError: [MLC-S004] cannot parallelize loop k: block "C" uses it for
    its reduction axis vk, and reduction steps run at the same time would race on C.
    Instead: parallelize a spatial loop, or split the reduction with rfactor first.
        for i, j, k in T.grid(128, 128, 128):  # <-- here: loop k
        ...

Codes MLC-S001..S049 belong to the loop, kind and compute-location primitives (this
file); MLC-S050..S099 are reserved for caches, reductions, layout and blockize.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ScheduleError
from ..tir.expr import Var
from ..tir.functor import Mutator, substitute
from ..tir.stmt import BlockRealize, For


class HandleError(ScheduleError):
    """A loop or block handle no longer refers to anything (its loop was split, its block inlined)."""

    code = "MLC-S001"


class BlockNotFoundError(ScheduleError):
    code = "MLC-S002"


class LoopNotNestedError(ScheduleError):
    """Loops given together (to fuse, reorder) are not one nest, one inside the other."""

    code = "MLC-S003"


class ReduceLoopParallelError(ScheduleError):
    """A loop bound to a reduction axis would be run in parallel or vectorized."""

    code = "MLC-S004"


class VectorizeNotInnermostError(ScheduleError):
    code = "MLC-S005"


class NonConstantExtentError(ScheduleError):
    code = "MLC-S006"


class FactorError(ScheduleError):
    """Split factors that are not positive ints, more than one None, or do not cover the loop."""

    code = "MLC-S007"


class NotSingleChildError(ScheduleError):
    """A loop between loops to fuse or reorder has other statements beside the next loop."""

    code = "MLC-S008"


class CoverageError(ScheduleError):
    """compute_at / reverse_compute_at cannot provide every element the other side needs."""

    code = "MLC-S009"


class LoopCarriedDependenceError(ScheduleError):
    """An iteration reads what another iteration writes, so the iterations cannot be reordered or run at once."""

    code = "MLC-S010"


class NotProducerConsumerError(ScheduleError):
    """The block is not a producer (consumer) of the blocks under the target loop, or others use its data."""

    code = "MLC-S011"


class ComputeLocationError(ScheduleError):
    """The target loop of compute_at / reverse_compute_at is in the wrong place (inside the block, before it...)."""

    code = "MLC-S012"


class OutputBlockError(ScheduleError):
    """The block writes a function output, which must stay computed in full."""

    code = "MLC-S013"


class NotInlinableError(ScheduleError):
    """A block is not a single elementwise store that can be substituted into its readers."""

    code = "MLC-S014"


class RepeatedWorkError(ScheduleError):
    """A loop that does not index a reduction block's instances would run the same reduction at once."""

    code = "MLC-S015"


class AnnotationError(ScheduleError):
    code = "MLC-S016"


class ArgumentTypeError(ScheduleError):
    """A primitive was given the wrong kind of argument (a block where a loop is needed, ...)."""

    code = "MLC-S017"


class SamplingError(ScheduleError):
    """Bad candidates or probabilities, or a replayed decision that does not fit the loop."""

    code = "MLC-S018"


class TraceError(ScheduleError):
    """A trace that cannot be read or replayed (unknown instruction, undefined handle)."""

    code = "MLC-S019"


class InvalidResultError(ScheduleError):
    """Last line of defence: the step produced a program the verifier rejects."""

    code = "MLC-S020"


class UnsupportedError(ScheduleError):
    """The step may be legal, but mlcbook cannot prove it (non-affine index, unusual block)."""

    code = "MLC-S021"


class VectorLaneError(ScheduleError):
    """A vectorized loop whose lanes would touch each other's memory (or that holds another
    vectorized loop), so code generation could not run its iterations as SIMD lanes."""

    code = "MLC-S022"


class UnrollTooLargeError(ScheduleError):
    """Nested unrolled loops would copy a loop body too many times to compile in time."""

    code = "MLC-S023"


def schedule_error(cls: type[ScheduleError], why: str, instead: str, func=None,
                   mark=None, label: str = "") -> ScheduleError:
    """Build ``cls`` with the standard message: why, what to do instead, the marked program.

    ``mark`` is the For, Block or BlockRealize to point at (or None); ``label`` names it
    beside the marker ("loop k").
    """
    msg = why.rstrip()
    if instead:
        msg += "\nInstead: " + instead.rstrip()
    if func is not None:
        msg += "\n" + marked_program(func, mark, label)
    return cls(msg)


_WINDOW = 18  # lines shown on each side of the marker; whole programs can be long


def marked_program(func, mark=None, label: str = "") -> str:
    """The function's script text, indented, with the line of ``mark`` ending ``# <-- here``.

    The line is found without help from the printer: the marked loop variable (or block)
    is renamed to a unique token, the program printed, and the token searched for.
    """
    token = "MLCMARK_7f3a"
    text = None
    if mark is not None:
        if isinstance(mark, BlockRealize):
            mark = mark.block
        target = mark

        class _Rename(Mutator):
            def visit_For(self, node):
                if node is target:
                    return substitute(node, {node.loop_var: Var(token, node.loop_var.dtype)})
                return self.generic_visit(node)

            def visit_Block(self, node):
                if node is target:
                    return replace(node, name=token)
                return self.generic_visit(node)

        try:
            renamed = func.with_body(_Rename().visit(func.body))
            text = renamed.script()
        except Exception:  # noqa: BLE001 - a printer failure must not hide the real error
            text = None
        if text is not None and token not in text:
            text = None
        if text is not None:
            original = target.loop_var.name if isinstance(target, For) else target.name
            lines = text.splitlines()
            at = next(k for k, line in enumerate(lines) if token in line)
            lines = [line.replace(token, original) for line in lines]
            note = f"  # <-- here{': ' + label if label else ''}"
            lines[at] += note
            lo, hi = max(0, at - _WINDOW), min(len(lines), at + _WINDOW + 1)
            shown = (["    ..."] if lo > 0 else []) + lines[lo:hi] + (["    ..."] if hi < len(lines) else [])
            return "\n".join("    " + line for line in shown)
    # no mark, or it could not be located: show the program's head and name the part
    try:
        text = func.script()
    except Exception:  # noqa: BLE001
        text = repr(func)
    lines = text.splitlines()
    if len(lines) > 2 * _WINDOW:
        lines = lines[: 2 * _WINDOW] + ["..."]
    where = f"  (the offending part: {label})" if label else ""
    return "\n".join("    " + line for line in lines) + where


__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and issubclass(obj, ScheduleError) and obj is not ScheduleError
           ] + ["schedule_error", "marked_program"]
