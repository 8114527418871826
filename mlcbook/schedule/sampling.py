"""Random decisions a schedule can make, recorded in the trace so that a search can change them.

    >>> v0, v1 = sch.sample_perfect_tile(i, n=2, max_innermost_factor=16)   # e.g. [8, 16]
    >>> io, ii = sch.split(i, factors=[v0, v1])
    >>> u = sch.sample_categorical([0, 16, 64], probs=[0.2, 0.4, 0.4])

The draws come from the schedule's random generator (``Schedule(func, seed=0)``); a replayed
trace reuses each recorded decision, or the one given with ``trace.with_decision``.
"""

from __future__ import annotations

from ..tir.expr import Const
from .errors import NonConstantExtentError, SamplingError
from .context import Context
from .handles import ExprRV, LoopRV
from .registry import schedule_primitive


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@schedule_primitive("sample_perfect_tile", sampling=True)
def sample_perfect_tile(ctx: Context, loop: LoopRV, n: int,
                        max_innermost_factor: int = 16) -> list[ExprRV]:
    """``n`` factors whose product is the loop's extent, the innermost at most
    ``max_innermost_factor``: tile sizes that split the loop without a remainder."""
    node = ctx.loop(loop)
    if not isinstance(node.extent, Const):
        ctx.fail(NonConstantExtentError,
                 f"cannot sample tiles of loop {node.loop_var.name}: its extent {node.extent} is "
                 "not a constant.", "sample tiles of a loop with a constant extent.", node,
                 f"loop {node.loop_var.name}")
    if not isinstance(n, int) or n < 1:
        raise SamplingError(f"sample_perfect_tile needs n >= 1 factors, got {n!r}")
    if not isinstance(max_innermost_factor, int) or max_innermost_factor < 1:
        raise SamplingError(
            f"max_innermost_factor must be a positive int, got {max_innermost_factor!r}")
    extent = node.extent.value
    if ctx.decision is not None:
        factors = ctx.decision
        ok = (isinstance(factors, list) and len(factors) == n and all(
            isinstance(f, int) and not isinstance(f, bool) and f >= 1 for f in factors))
        prod = 1
        for f in factors if ok else []:
            prod *= f
        if not ok or prod != extent or (n > 1 and factors[-1] > max_innermost_factor):
            raise SamplingError(
                f"the decision {factors!r} for sample_perfect_tile does not fit loop "
                f"{node.loop_var.name}: it needs {n} positive ints whose product is {extent}, "
                f"the last at most {max_innermost_factor}")
    elif n == 1:
        factors = [extent]
        ctx.decide(list(factors))
    else:
        inner = ctx.rng.choice([d for d in _divisors(extent) if d <= max_innermost_factor])
        rest = extent // inner
        middle = []
        for _ in range(n - 2):
            d = ctx.rng.choice(_divisors(rest))
            middle.append(d)
            rest //= d
        factors = [rest] + middle[::-1] + [inner]
        ctx.decide(list(factors))
    return [ctx.expr_rv(f) for f in factors]


@schedule_primitive("sample_categorical", sampling=True)
def sample_categorical(ctx: Context, candidates: list, probs: list) -> ExprRV:
    """One of ``candidates`` (ints), drawn with the given probabilities; the decision is its index."""
    if (not isinstance(candidates, list) or not candidates
            or not all(isinstance(c, int) and not isinstance(c, bool) for c in candidates)):
        raise SamplingError(f"candidates must be a non-empty list of ints, got {candidates!r}")
    if (not isinstance(probs, list) or len(probs) != len(candidates)
            or not all(isinstance(p, (int, float)) and p >= 0 for p in probs) or sum(probs) <= 0):
        raise SamplingError(
            f"probs must be {len(candidates)} non-negative numbers with a positive sum (one per "
            f"candidate), got {probs!r}")
    if ctx.decision is not None:
        k = ctx.decision
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(candidates):
            raise SamplingError(f"the decision {k!r} of sample_categorical must be an index in "
                                f"[0, {len(candidates)})")
    else:
        k = ctx.rng.choices(range(len(candidates)), weights=probs)[0]
        ctx.decide(k)
    return ctx.expr_rv(candidates[k])
