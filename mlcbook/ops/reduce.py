"""Reductions over axes: ``sum``, ``mean``, ``max``, ``min``.

``axes=None`` reduces every axis; ``keepdims=1`` keeps reduced axes as size 1.

    >>> get("sum").infer_type([TensorType((2, 3, 4))], {"axes": (1,), "keepdims": 0})
    Tensor((2, 4), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError
from ._infer import NUMBERS, norm_axes, require_dtype
from .registry import REQUIRED, OpKind, register
from .types import TensorType, TupleType, is_float_dtype


def reduce_axes(op: str, ndim: int, axes) -> tuple[int, ...]:
    """The normalized axes to reduce (all of them when ``axes`` is None)."""
    return tuple(range(ndim)) if axes is None else tuple(sorted(norm_axes(op, axes, ndim)))


def reduced_shape(shape, axes, keepdims) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _identity(name: str, dtype: np.dtype):
    """The value a reduction of no elements gives (ONNX's rule)."""
    if name == "max":
        if is_float_dtype(dtype):
            return -np.inf
        return False if dtype.kind == "b" else np.iinfo(dtype).min
    if is_float_dtype(dtype):
        return np.inf
    return True if dtype.kind == "b" else np.iinfo(dtype).max


def _reduce(name, fn, dtypes):
    def infer(types, attrs):
        x = types[0]
        require_dtype(name, x, dtypes)
        axes = reduce_axes(name, x.ndim, attrs.get("axes"))
        return TensorType(reduced_shape(x.shape, axes, attrs["keepdims"]), x.dtype)

    def reference(x, axes=None, keepdims=1):
        ax = reduce_axes(name, x.ndim, axes)
        if name in ("max", "min"):
            out = fn(x, axis=ax, keepdims=bool(keepdims), initial=_identity(name, x.dtype))
        elif is_float_dtype(x.dtype):
            with np.errstate(invalid="ignore"):
                out = fn(x.astype(np.float64), axis=ax, keepdims=bool(keepdims))
        else:
            out = fn(x, axis=ax, keepdims=bool(keepdims))
        return np.asarray(out).astype(x.dtype)

    register(name, kind=OpKind.REDUCTION, infer=infer, reference=reference,
             attrs={"axes": None, "keepdims": 1}, doc=f"{name} over `axes`")


_reduce("sum", np.sum, NUMBERS)
_reduce("mean", np.mean, NUMBERS)
_reduce("max", np.max, NUMBERS + ("bool",))
_reduce("min", np.min, NUMBERS + ("bool",))
_reduce("prod", np.prod, NUMBERS)


def _arg_infer(name):
    def infer(types, attrs):
        x = types[0]
        require_dtype(name, x, NUMBERS)
        axis = norm_axes(name, (attrs["axis"],), x.ndim)
        return TensorType(reduced_shape(x.shape, axis, attrs["keepdims"]), "int64")
    return infer


def _arg_ref(fn):
    def reference(x, axis=0, keepdims=1, select_last_index=0):
        if select_last_index:
            flipped = np.flip(x, axis)
            out = x.shape[axis] - 1 - fn(flipped, axis=axis)
        else:
            out = fn(x, axis=axis)
        out = np.asarray(out, np.int64)
        return np.expand_dims(out, axis) if keepdims else out
    return reference


for _name, _fn in (("argmax", np.argmax), ("argmin", np.argmin)):
    register(_name, kind=OpKind.REDUCTION, infer=_arg_infer(_name), reference=_arg_ref(_fn),
             attrs={"axis": 0, "keepdims": 1, "select_last_index": 0},
             doc=f"{_fn.__name__} along `axis` as int64 (the last of ties if select_last_index)")


def _running_infer(op: str):
    def infer(types, attrs):
        require_dtype(op, types[0], NUMBERS)
        norm_axes(op, (attrs["axis"],), types[0].ndim)
        return types[0]
    return infer


def _running_ref(fn, identity):
    def reference(x, axis, exclusive=0, reverse=0):
        y = np.flip(x, axis) if reverse else x
        # floats accumulate in float64, integers in int64 (wrapping back to the dtype)
        acc = fn(y.astype(np.float64 if is_float_dtype(x.dtype) else np.int64), axis=axis)
        if exclusive:
            # the running result of the elements before: shift by one, the identity first
            first = np.full_like(np.take(acc, [0], axis=axis), identity)
            acc = np.concatenate([first, np.delete(acc, -1, axis=axis)], axis=axis)
        acc = np.flip(acc, axis) if reverse else acc
        return acc.astype(x.dtype)
    return reference


for _name, _fn, _start, _what in (("cumsum", np.cumsum, 0, "sum"),
                                   ("cumprod", np.cumprod, 1, "product")):
    register(_name, kind=OpKind.REDUCTION, infer=_running_infer(_name),
             reference=_running_ref(_fn, _start),
             attrs={"axis": REQUIRED, "exclusive": 0, "reverse": 0},
             doc=f"running {_what} along `axis` (exclusive: without the element; reverse: "
                 "from the end)")


def _topk_infer(types, attrs):
    x = types[0]
    require_dtype("topk", x, NUMBERS)
    axis = norm_axes("topk", (attrs["axis"],), x.ndim)[0]
    k = attrs["k"]
    if not 1 <= k <= x.shape[axis]:
        raise OpAttributeError(f"topk: k={k} must be in [1, {x.shape[axis]}], the size of "
                               f"axis {axis} of {x.shape}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return TupleType((TensorType(shape, x.dtype), TensorType(shape, "int64")))


def _topk_ref(x, k, axis=-1, largest=1):
    # a stable sort keeps equal values in index order; for the largest, sort the negation
    # (integers in int64, so that the lowest value negates without overflow; unsigned ones
    # subtracted from their maximum, which cannot overflow either)
    if not largest:
        key = x
    elif x.dtype.kind == "u":
        key = np.iinfo(x.dtype).max - x
    else:
        key = -x.astype(np.float64 if is_float_dtype(x.dtype) else np.int64)
    order = np.take(np.argsort(key, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)


register("topk", kind=OpKind.OPAQUE, infer=_topk_infer, reference=_topk_ref,
         attrs={"k": REQUIRED, "axis": -1, "largest": 1},
         doc="the k largest (or smallest) values along `axis`, sorted, and their indices")
