"""Reductions in tensor expressions: reduce axes and the reducers ``sum``, ``max``, ``min``.

    >>> k = reduce_axis(64, name="k")
    >>> C = compute((32, 32), lambda i, j: sum(A[i, k] * B[k, j], axis=k), name="C")

A reduction is an expression node that is only meaningful as the *whole* body of a
``te.compute``: ``create_prim_func`` turns it into a block whose reduce iteration variables
run the reduction, with ``init`` storing the reducer's identity.

This module defines functions named ``sum``, ``max`` and ``min`` (they are ``te.sum`` ...),
so it never calls the Python builtins of those names; other modules import it as a module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..errors import TEError
from ..tir.expr import Binary, Const, PrimExpr, Var, as_expr, infinity, neg_infinity

#: reducer name -> function giving its identity for a dtype
_IDENTITY = {
    "sum": lambda dtype: Const(0, dtype),
    "max": neg_infinity,  # -inf for floats, the lowest value for ints
    "min": infinity,      # +inf for floats, the highest value for ints
    "prod": lambda dtype: Const(1, dtype),
}


@dataclass(frozen=True, eq=False, repr=False)
class ReduceAxis(Var):
    """A reduction variable ranging over ``[start, start + extent)``; made by :func:`reduce_axis`.

    It is an ordinary int32 variable in expressions (``A[i, k]``, ``k * 2``); the
    reducer that lists it in ``axis=`` sums (or maxes, mins) over it.
    """

    extent: int = 1
    start: int = 0


def reduce_axis(extent_or_range, name: str = "k") -> ReduceAxis:
    """A reduce axis: ``reduce_axis(16)`` ranges over 0..15, ``reduce_axis((2, 5))`` over 2..4."""
    if isinstance(extent_or_range, (tuple, list)):
        if len(extent_or_range) != 2:
            raise TEError(
                f"reduce_axis({extent_or_range!r}, name={name!r}): a range is (start, stop); "
                "give two ints or a single extent")
        start, stop = (_as_int(v, name) for v in extent_or_range)
    else:
        start, stop = 0, _as_int(extent_or_range, name)
    if stop <= start:
        raise TEError(
            f"reduce axis {name!r} has the empty range [{start}, {stop}); give a positive extent")
    return ReduceAxis(name, "int32", stop - start, start)


def _as_int(v, name: str) -> int:
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    if hasattr(v, "__index__") and not isinstance(v, bool):
        return v.__index__()
    raise TEError(f"reduce axis {name!r}: its extent must be an int, got {v!r}")


@dataclass(frozen=True, eq=False, repr=False)
class Reduce(PrimExpr):
    """``combiner`` (sum/max/min) of ``source`` over the reduce axes ``axis``, counting only
    the points where ``where`` holds (``None``: all points). Only valid as a compute body."""

    combiner: str
    source: PrimExpr
    axis: tuple[ReduceAxis, ...]
    where: Optional[PrimExpr] = None
    dtype: str = field(default="", init=False)

    def __post_init__(self):
        object.__setattr__(self, "dtype", self.source.dtype)

    def __str__(self) -> str:
        axes = ", ".join(ax.name for ax in self.axis)
        where = "" if self.where is None else f", where={self.where}"
        return f"te.{self.combiner}({self.source}, axis=[{axes}]{where})"

    def identity(self) -> Const:
        """The value the reduction starts from (0 for sum, -inf/lowest for max, ...)."""
        return _IDENTITY[self.combiner](self.dtype)

    def combine(self, acc: PrimExpr, value: PrimExpr) -> PrimExpr:
        """One step of the reduction: the new accumulator from the old one and a value."""
        if self.combiner == "sum":
            return acc + value
        if self.combiner == "prod":
            return acc * value
        return Binary(self.combiner, acc, value)


def _make(combiner: str, expr, axis, where) -> Reduce:
    if isinstance(expr, Reduce):
        raise TEError(
            f"te.{combiner} of another reduction ({expr.combiner}); nest reductions by "
            "computing the inner one as its own te.compute stage")
    source = as_expr(expr)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not axes:
        raise TEError(f"te.{combiner}(..., axis=[]) reduces over nothing; pass at least one "
                      "axis made with te.reduce_axis")
    for ax in axes:
        if not isinstance(ax, ReduceAxis):
            raise TEError(
                f"te.{combiner}: axis {ax!r} is not a reduce axis; make it with "
                "te.reduce_axis(extent, name=...)")
    for n, ax in enumerate(axes):
        if any(ax is other for other in axes[:n]):
            raise TEError(f"te.{combiner}: reduce axis {ax.name!r} is listed twice in axis=")
    if source.dtype == "bool":
        raise TEError(f"te.{combiner} of a bool expression ({source}); cast it to a number type "
                      "with mb.tir.cast first")
    if where is not None:
        where = as_expr(where)
        if where.dtype != "bool":
            raise TEError(f"te.{combiner}(..., where={where}): the condition must be bool, "
                          f"got {where.dtype}")
    return Reduce(combiner, source, axes, where)


def sum(expr, axis, where=None) -> Reduce:  # noqa: A001 - te.sum, as in TVM
    """``te.sum(A[i, k], axis=k)``: the sum over the reduce axes (one axis or a list),
    counting only points where the optional bool condition ``where`` holds."""
    return _make("sum", expr, axis, where)


def max(expr, axis, where=None) -> Reduce:  # noqa: A001
    """``te.max(A[i, k], axis=k)``: the maximum over the reduce axes (identity: -inf, or the
    lowest value of an integer dtype)."""
    return _make("max", expr, axis, where)


def prod(expr, axis, where=None) -> Reduce:
    """``te.prod(A[i, k], axis=k)``: the product over the reduce axes (identity: 1)."""
    return _make("prod", expr, axis, where)


def min(expr, axis, where=None) -> Reduce:  # noqa: A001
    """``te.min(A[i, k], axis=k)``: the minimum over the reduce axes (identity: +inf, or the
    highest value of an integer dtype)."""
    return _make("min", expr, axis, where)
