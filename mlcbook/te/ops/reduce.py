"""Reductions over tensor dimensions, numpy-like: ``sum(x, axis=1, keepdims=True)``.

    >>> sum(x, axis=(0, 2)).shape        # x: (2, 3, 4)
    (3,)
    >>> mean(x, keepdims=True).shape
    (1, 1, 1)

``axis=None`` reduces every dimension; without ``keepdims`` that gives a 0-d tensor.
Storage dtypes accumulate in their compute dtype (int8 sums in int32), bools as int32.
"""

from __future__ import annotations

import math

from ...errors import TEError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import (axis_names, check_tensor, compute_named, load, normalize_axes, reduce_stage,
                    store, trunc_div)

_REDUCERS = {"sum": _r.sum, "max": _r.max, "min": _r.min, "prod": _r.prod}


def _reduce(kind: str, x: Tensor, axis, keepdims: bool, name: str, op: str,
            accumulate_only: bool = False) -> Tensor:
    check_tensor(x, op, "x")
    axes = normalize_axes(axis, x.ndim, op)
    red = {d: _r.reduce_axis(x.shape[d], name=f"k{d}") for d in axes}
    out_shape = tuple(1 if d in red else s for d, s in enumerate(x.shape)
                      if keepdims or d not in red)

    def body(*idx):
        src, pos = [], 0
        for d in range(x.ndim):
            if d in red:
                src.append(red[d])
                pos += 1 if keepdims else 0
            else:
                src.append(idx[pos])
                pos += 1
        v = load(x, src)
        v = _e.cast("int32", v) if v.dtype == "bool" else v
        return _REDUCERS[kind](v, axis=[red[d] for d in axes])

    names = axis_names(len(out_shape))
    if accumulate_only:
        return compute_named(out_shape, names, body, name)
    return reduce_stage(out_shape, names, body, x.dtype, name)


def sum(x: Tensor, axis=None, keepdims: bool = False,  # noqa: A001 - numpy's name
        name: str = "sum") -> Tensor:
    """``numpy.sum(x, axis, keepdims=keepdims)``."""
    return _reduce("sum", x, axis, keepdims, name, "sum")


def max(x: Tensor, axis=None, keepdims: bool = False,  # noqa: A001 - numpy's name
        name: str = "max") -> Tensor:
    """``numpy.max(x, axis, keepdims=keepdims)``."""
    return _reduce("max", x, axis, keepdims, name, "max")


def min(x: Tensor, axis=None, keepdims: bool = False,  # noqa: A001 - numpy's name
        name: str = "min") -> Tensor:
    """``numpy.min(x, axis, keepdims=keepdims)``."""
    return _reduce("min", x, axis, keepdims, name, "min")


def mean(x: Tensor, axis=None, keepdims: bool = False, name: str = "mean") -> Tensor:
    """``numpy.mean(x, axis, keepdims=keepdims)``: a sum stage ``<name>_sum`` and a
    division stage ``<name>`` (integers: rounded toward zero)."""
    check_tensor(x, "mean", "x")
    total = _reduce("sum", x, axis, keepdims, f"{name}_sum", "mean", True)
    count = math.prod(x.shape[d] for d in normalize_axes(axis, x.ndim, "mean"))

    def divide(*i):
        t = total[i]
        if _e.is_float(t.dtype):
            return store(t / _e.const(float(count), t.dtype), x.dtype)
        return store(trunc_div(t, _e.const(count, t.dtype)), x.dtype)

    return compute_named(total.shape, axis_names(total.ndim), divide, name)


def prod(x: Tensor, axis=None, keepdims: bool = False, name: str = "prod") -> Tensor:
    """``numpy.prod(x, axis, keepdims=keepdims)``."""
    return _reduce("prod", x, axis, keepdims, name, "prod")


def _arg(kind: str, x: Tensor, axis: int, keepdims: bool, select_last_index: bool,
         name: str) -> Tensor:
    """The index of the max/min along ``axis`` (first or last one; the first NaN wins, as
    in numpy): the extreme ``<name>_value``, then the index of the matches."""
    check_tensor(x, f"arg{kind}", "x")
    axis = normalize_axes(axis, x.ndim, f"arg{kind}")[0]
    best = _reduce(kind, x, axis, True, f"{name}_value", f"arg{kind}", True)
    n = x.shape[axis]
    k = _r.reduce_axis(n, name="k")
    out_shape = tuple(s for d, s in enumerate(x.shape) if keepdims or d != axis)
    if keepdims:
        out_shape = tuple(1 if d == axis else s for d, s in enumerate(x.shape))

    def body(*idx):
        full = list(idx) if keepdims else list(idx[:axis]) + [0] + list(idx[axis:])
        at_best = list(full)
        full[axis] = k
        at_best[axis] = 0
        v, b = load(x, full), best[tuple(at_best)]
        hit = _e.logical_or(v == b, v != v) if _e.is_float(v.dtype) else v == b
        kk = _e.cast("int64", k)
        if select_last_index:
            return _r.max(_e.select(hit, kk, _e.const(-1, "int64")), axis=k)
        return _r.min(_e.select(hit, kk, _e.const(n, "int64")), axis=k)

    return compute_named(out_shape, axis_names(len(out_shape)), body, name)


def argmax(x: Tensor, axis: int = 0, keepdims: bool = True, select_last_index: bool = False,
           name: str = "argmax") -> Tensor:
    """``numpy.argmax(x, axis)`` as int64 (``select_last_index``: the last of equal maxima)."""
    return _arg("max", x, axis, keepdims, select_last_index, name)


def argmin(x: Tensor, axis: int = 0, keepdims: bool = True, select_last_index: bool = False,
           name: str = "argmin") -> Tensor:
    """``numpy.argmin(x, axis)`` as int64 (``select_last_index``: the last of equal minima)."""
    return _arg("min", x, axis, keepdims, select_last_index, name)


def _running(kind: str, x: Tensor, axis: int, exclusive: bool, reverse: bool,
             name: str) -> Tensor:
    """The running sum or product along ``axis``: each output reduces its prefix (its
    suffix if ``reverse``), with the element itself unless ``exclusive``: O(n**2) along
    ``axis``. An empty prefix gives the reduction's identity (0 or 1)."""
    check_tensor(x, f"cum{kind}", "x")
    axis = normalize_axes(axis, x.ndim, f"cum{kind}")[0]
    k = _r.reduce_axis(x.shape[axis], name="k")

    def body(*idx):
        src = list(idx)
        src[axis] = k
        i = idx[axis]
        if reverse:
            cond = k > i if exclusive else k >= i
        else:
            cond = k < i if exclusive else k <= i
        return _REDUCERS[kind](load(x, src), axis=k, where=cond)

    return reduce_stage(x.shape, axis_names(x.ndim), body, x.dtype, name)


def cumsum(x: Tensor, axis: int = 0, exclusive: bool = False, reverse: bool = False,
           name: str = "cumsum") -> Tensor:
    """``numpy.cumsum(x, axis)``; ``exclusive`` leaves out the element itself, ``reverse``
    sums from the end. Each output sums its prefix: O(n**2) along ``axis``."""
    return _running("sum", x, axis, exclusive, reverse, name)


def cumprod(x: Tensor, axis: int = 0, exclusive: bool = False, reverse: bool = False,
            name: str = "cumprod") -> Tensor:
    """``numpy.cumprod(x, axis)``; ``exclusive`` leaves out the element itself (the first
    output is 1), ``reverse`` multiplies from the end. O(n**2) along ``axis``."""
    return _running("prod", x, axis, exclusive, reverse, name)


def topk(x: Tensor, k: int, axis: int = -1, largest: bool = True,
         name: str = "topk") -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) values along ``axis``, sorted, and their int64
    indices; equal values keep their order (the lower index first), as ONNX's TopK does.
    Stages: ``<name>_rank`` (each element's place: how many elements go before it, an
    O(n**2) count), then ``<name>_values`` and ``<name>_indices`` (the element of each place)."""
    check_tensor(x, "topk", "x")
    axis = normalize_axes(axis, x.ndim, "topk")[0]
    n = x.shape[axis]
    if not 1 <= k <= n:
        raise TEError(f"topk: k={k} must be in [1, {n}], the size of axis {axis}")
    j = _r.reduce_axis(n, name="j")

    def rank(*idx):
        other = list(idx)
        other[axis] = j
        v, w = load(x, idx), load(x, other)
        ahead = w > v if largest else w < v
        before = _e.logical_or(ahead, _e.logical_and(w == v, j < idx[axis]))
        return _r.sum(_e.select(before, _e.const(1, "int32"), _e.const(0, "int32")), axis=j)

    places = compute_named(x.shape, axis_names(x.ndim), rank, f"{name}_rank")
    out = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    i = _r.reduce_axis(n, name="i")

    def pick(value):
        def body(*idx):
            src = list(idx)
            src[axis] = i
            hit = places[tuple(src)] == _e.cast("int32", idx[axis])
            v = value(src)
            return _r.sum(_e.select(hit, v, _e.const(0, v.dtype)), axis=i)
        return body

    values = reduce_stage(out, axis_names(len(out)), pick(lambda src: load(x, src)), x.dtype,
                          f"{name}_values")
    indices = compute_named(out, axis_names(len(out)),
                            pick(lambda src: _e.cast("int64", src[axis])), f"{name}_indices")
    return values, indices
