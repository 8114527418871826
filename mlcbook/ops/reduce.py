"""Reductions over axes: ``sum``, ``mean``, ``max``, ``min``.

``axes=None`` reduces every axis; ``keepdims=1`` keeps reduced axes as size 1.

    >>> get("sum").infer_type([TensorType((2, 3, 4))], {"axes": (1,), "keepdims": 0})
    Tensor((2, 4), "float32")
"""

from __future__ import annotations

import numpy as np

from ._infer import NUMBERS, norm_axes, require_dtype
from .registry import OpKind, register
from .types import TensorType


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
        if dtype.kind == "f":
            return -np.inf
        return False if dtype.kind == "b" else np.iinfo(dtype).min
    if dtype.kind == "f":
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
        elif x.dtype.kind == "f":
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
