"""Small graph-building helpers the gradient rules share: typed scalars, undoing a broadcast,
broadcasting to a shape, and putting a strided slice back where it came from.

    >>> unbroadcast(g, (1, 5))          # g: (4, 5) -> sum over axis 0, keepdims -> (1, 5)
    >>> scatter_strided(v, axis=2, start=1, step=2, size=9)   # v[i] lands at 1 + 2 * i
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..graph.expr import Call, Constant, Expr, Var
from ..graph.functor import ExprMutator
from ..ops.types import Attrs


def scalar(value: float, dtype: str) -> Constant:
    """A 0-d constant of ``dtype``."""
    return Constant(np.asarray(value, dtype=dtype))


def call(op: str, *args: Expr, **attrs) -> Call:
    return Call(op, args, Attrs(attrs))


def as_float(mask: Expr, dtype: str) -> Expr:
    """A bool tensor as 0.0 / 1.0 of ``dtype``."""
    return call("cast", mask, dtype=dtype)


def reshape(x: Expr, shape: Sequence[int]) -> Expr:
    shape = tuple(shape)
    return x if x.shape == shape else call("reshape", x, shape=shape)


def unbroadcast(g: Expr, shape: Sequence[int]) -> Expr:
    """Sum ``g`` over the axes a broadcast to ``g.shape`` expanded from ``shape``."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape)
                                      if d == 1 and g.shape[lead + i] != 1)
    if axes:
        g = call("sum", g, axes=axes, keepdims=1)
    return reshape(g, shape)


def concat(parts: Sequence[Expr], axis: int) -> Expr:
    """``concat`` of any number of parts, in groups of at most 8 (mlcbook's legalization
    names up to 8 inputs of a kernel)."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [p[0] if len(p) == 1 else call("concat", *p, axis=axis)
                 for p in (parts[i:i + 8] for i in range(0, len(parts), 8))]
    return parts[0]


def broadcast_to(g: Expr, shape: Sequence[int]) -> Expr:
    """``g`` broadcast to ``shape`` (by adding zeros of that shape)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    return call("add", g, Constant(np.zeros(shape, g.dtype)))


def pad_axis(x: Expr, axis: int, before: int, after: int) -> Expr:
    """``x`` padded with zeros (or cropped, for negative sizes) along one axis."""
    if before == 0 and after == 0:
        return x
    pads = [0] * (2 * x.type.ndim)
    pads[axis], pads[x.type.ndim + axis] = before, after
    return call("pad", x, pads=tuple(pads))


def dilate(x: Expr, axis: int, step: int) -> Expr:
    """Insert ``step - 1`` zeros after each element along ``axis`` (the last one too)."""
    if step == 1:
        return x
    shape = x.shape
    split = shape[:axis + 1] + (1,) + shape[axis + 1:]
    y = pad_axis(reshape(x, split), axis + 1, 0, step - 1)
    return reshape(y, shape[:axis] + (shape[axis] * step,) + shape[axis + 1:])


def scatter_strided(v: Expr, axis: int, start: int, step: int, size: int) -> Expr:
    """A tensor of length ``size`` along ``axis``, zero except ``out[start + step * i] =
    v[i]``: the adjoint of ``slice(starts=start, steps=step)`` (``step`` may be negative)."""
    n = v.shape[axis]
    if n == 0:
        shape = v.shape[:axis] + (size,) + v.shape[axis + 1:]
        return Constant(np.zeros(shape, v.dtype))
    if step < 0:
        v = call("slice", v, starts=(n - 1,), ends=(-n - 1,), axes=(axis,), steps=(-1,))
        start, step = start + (n - 1) * step, -step
    y = dilate(v, axis, step)
    return pad_axis(y, axis, start, size - start - n * step)


def window(x: Expr, offsets: Sequence[int], strides: Sequence[int], out: Sequence[int]) -> Expr:
    """``x[..., o0 :: s0][:out0], ...`` over the trailing spatial axes: the values a window
    position at kernel offset ``offsets`` reads (``offsets`` already scaled by dilation)."""
    nsp = len(offsets)
    axes = tuple(range(x.type.ndim - nsp, x.type.ndim))
    ends = tuple(o + s * (n - 1) + 1 for o, s, n in zip(offsets, strides, out))
    return call("slice", x, starts=tuple(offsets), ends=ends, axes=axes, steps=tuple(strides))


def unwindow(v: Expr, offsets: Sequence[int], strides: Sequence[int],
             sizes: Sequence[int]) -> Expr:
    """The adjoint of :func:`window`: ``v`` put back into a tensor of spatial ``sizes``."""
    nsp = len(offsets)
    for i in range(nsp):
        axis = v.type.ndim - nsp + i
        v = scatter_strided(v, axis, offsets[i], strides[i], sizes[i])
    return v


class Bind(ExprMutator):
    """Each stand-in variable (by ``id``) replaced by the expression it stands for: a rule
    that differentiates a graph written on stand-ins binds the result to its call's
    arguments."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values

    def visit_Var(self, v: Var) -> Expr:
        return self.values.get(id(v), v)


__all__ = ["Bind", "scalar", "call", "concat", "as_float", "reshape", "unbroadcast", "broadcast_to",
           "pad_axis", "dilate", "scatter_strided", "window", "unwindow"]
