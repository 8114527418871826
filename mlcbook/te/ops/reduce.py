"""Reductions over tensor dimensions, numpy-like: ``sum(x, axis=1, keepdims=True)``.

    >>> sum(x, axis=(0, 2)).shape        # x: (2, 3, 4)
    (3,)
    >>> mean(x, keepdims=True).shape
    (1, 1, 1)

``axis=None`` reduces every dimension; without ``keepdims`` that gives a 0-d tensor.
Storage dtypes accumulate in their compute dtype (int8 sums in int32), bools as int32.
"""

from __future__ import annotations

from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import (axis_names, check_tensor, compute_named, load, normalize_axes, prod,
                    reduce_stage, store, trunc_div)

_REDUCERS = {"sum": _r.sum, "max": _r.max, "min": _r.min}


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
    count = prod(x.shape[d] for d in normalize_axes(axis, x.ndim, "mean"))

    def divide(*i):
        t = total[i]
        if _e.is_float(t.dtype):
            return store(t / _e.const(float(count), t.dtype), x.dtype)
        return store(trunc_div(t, _e.const(count, t.dtype)), x.dtype)

    return compute_named(total.shape, axis_names(total.ndim), divide, name)
