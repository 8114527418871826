"""Shared pieces of shape and dtype inference: broadcasting, axes, dtype agreement."""

from __future__ import annotations

from typing import Sequence

from ..errors import OpAttributeError, OpDTypeError, OpShapeError
from ..te.ops.util import broadcast_shapes as _broadcast_shapes
from ..tir.expr import FLOAT_DTYPES, INT_DTYPES
from .types import LOWBIT_DTYPES, TensorType

FLOATS = FLOAT_DTYPES
INTS = INT_DTYPES
NUMBERS = INTS + FLOATS


def broadcast_shapes(op: str, *shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of ``shapes``; raises :class:`~mlcbook.errors.OpShapeError` naming
    the op and the shapes when they do not fit (the rule is te's, shared by both layers)."""
    return _broadcast_shapes(op, *shapes, error=OpShapeError)


def same_dtype(op: str, types: Sequence[TensorType]) -> str:
    """The common dtype of ``types``; raises if they differ."""
    dtypes = [t.dtype for t in types]
    if len(set(dtypes)) > 1:
        raise OpDTypeError(
            f"{op}: inputs have different dtypes {', '.join(dtypes)}; insert a cast so they agree")
    return dtypes[0]


def require_dtype(op: str, t: TensorType, allowed: Sequence[str], what: str = "input") -> None:
    if t.dtype not in allowed:
        # the low-bit types only store numbers: arithmetic happens on their decoded values
        fix = "; Instead: convert it with lowbit_decode first (ONNX: Cast or DequantizeLinear)" \
            if t.dtype in LOWBIT_DTYPES else ""
        raise OpDTypeError(
            f"{op}: the {what} has dtype {t.dtype}, but {op} takes {', '.join(allowed)}{fix}")


def norm_axis(op: str, axis: int, ndim: int, name: str = "axis", allow_end: bool = False) -> int:
    """``axis`` in ``[0, ndim)`` (``[0, ndim]`` if ``allow_end``); negative counts from the end."""
    hi = ndim + 1 if allow_end else ndim
    if not -ndim <= axis < hi:
        raise OpAttributeError(
            f"{op}: {name}={axis} is out of range for a tensor of rank {ndim}; "
            f"use a value in [{-ndim}, {hi - 1}]")
    return axis + ndim if axis < 0 else axis


def norm_axes(op: str, axes: Sequence[int], ndim: int, name: str = "axes") -> tuple[int, ...]:
    out = tuple(norm_axis(op, int(a), ndim, name) for a in axes)
    if len(set(out)) != len(out):
        raise OpAttributeError(f"{op}: {name}={tuple(axes)} repeats an axis")
    return out


def ints(op: str, name: str, value, length: int | None = None) -> tuple[int, ...]:
    """An attribute that must be a tuple of ints (of ``length`` if given)."""
    if isinstance(value, int):
        value = (value,)
    try:
        out = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise OpAttributeError(f"{op}: {name} must be a list of ints, got {value!r}") from None
    if length is not None and len(out) != length:
        raise OpAttributeError(f"{op}: {name}={out} must have {length} values")
    return out
