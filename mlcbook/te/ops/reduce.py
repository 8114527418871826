"""Reductions over tensor dimensions, numpy-like: ``reduce_sum(x, axis=1, keepdims=True)``.

    >>> reduce_sum(x, axis=(0, 2)).shape        # x: (2, 3, 4)
    (3,)
    >>> reduce_mean(x, keepdims=True).shape
    (1, 1, 1)

``axis=None`` reduces every dimension; without ``keepdims`` that gives a 0-d tensor.
"""

from __future__ import annotations

from ...errors import TEError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from ._util import axis_names, check_tensor, compute_named, normalize_axes, prod


def _reduce(kind: str, x: Tensor, axis, keepdims: bool, name: str) -> Tensor:
    op = f"reduce_{kind}"
    check_tensor(x, op, "x")
    axes = normalize_axes(axis, x.ndim, op)
    red = {d: _r.reduce_axis(x.shape[d], name=f"k{d}") for d in axes}
    out_shape = tuple(1 if d in red else s for d, s in enumerate(x.shape)
                      if keepdims or d not in red)
    reducer = {"sum": _r.sum, "max": _r.max, "min": _r.min}[kind]

    def body(*idx):
        src, pos = [], 0
        for d in range(x.ndim):
            if d in red:
                src.append(red[d])
                pos += 1 if keepdims else 0
            else:
                src.append(idx[pos])
                pos += 1
        return reducer(x[tuple(src)], axis=[red[d] for d in axes])

    return compute_named(out_shape, axis_names(len(out_shape)), body, name)


def reduce_sum(x: Tensor, axis=None, keepdims: bool = False, name: str = "reduce_sum") -> Tensor:
    """``numpy.sum(x, axis, keepdims=keepdims)``."""
    return _reduce("sum", x, axis, keepdims, name)


def reduce_max(x: Tensor, axis=None, keepdims: bool = False, name: str = "reduce_max") -> Tensor:
    """``numpy.max(x, axis, keepdims=keepdims)``."""
    return _reduce("max", x, axis, keepdims, name)


def reduce_min(x: Tensor, axis=None, keepdims: bool = False, name: str = "reduce_min") -> Tensor:
    """``numpy.min(x, axis, keepdims=keepdims)``."""
    return _reduce("min", x, axis, keepdims, name)


def reduce_mean(x: Tensor, axis=None, keepdims: bool = False,
                name: str = "reduce_mean") -> Tensor:
    """``numpy.mean(x, axis, keepdims=keepdims)`` for float tensors: a sum stage
    ``<name>_sum`` and a scaling stage ``<name>``."""
    check_tensor(x, "reduce_mean", "x")
    if not _e.is_float(x.dtype):
        raise TEError(f"reduce_mean: {x.name!r} is {x.dtype}; the mean needs a float tensor")
    total = _reduce("sum", x, axis, keepdims, f"{name}_sum")
    count = prod(x.shape[d] for d in normalize_axes(axis, x.ndim, "reduce_mean"))
    inv = _e.const(1.0 / count, x.dtype)
    return compute_named(total.shape, axis_names(total.ndim),
                         lambda *i: total[i] * inv, name)
