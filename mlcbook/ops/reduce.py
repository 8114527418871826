"""Reductions over axes: ``sum``, ``mean``, ``max``, ``min``, ``prod``; the index of an
extremum (``argmax``, ``argmin``), running sums and products, ``topk``. Each is declared once
(:mod:`.declare`) from its compute in :mod:`mlcbook.te.ops.reduce`.

``axes=None`` reduces every axis; ``keepdims=1`` keeps reduced axes as size 1.

    >>> get("sum").infer_type([TensorType((2, 3, 4))], {"axes": (1,), "keepdims": 0})
    Tensor((2, 4), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te import ops as T
from . import declare
from ._infer import NUMBERS, norm_axes, require_dtype
from .onnx_attrs import OnnxInput
from .registry import REQUIRED, OpKind
from .types import is_float_dtype


def reduce_axes(op: str, ndim: int, axes) -> tuple[int, ...]:
    """The normalized axes to reduce (all of them when ``axes`` is None)."""
    return tuple(range(ndim)) if axes is None else tuple(sorted(norm_axes(op, axes, ndim)))


def reduced_shape(shape, axes, keepdims) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _identity(name: str, dtype: np.dtype):
    """The value a reduction of no elements gives (ONNX's rule; a mean of no floats is NaN,
    of no integers 0)."""
    if name in ("sum", "prod"):
        return int(name == "prod")
    if name == "mean":
        return np.nan if is_float_dtype(dtype) else 0
    if is_float_dtype(dtype):
        return -np.inf if name == "max" else np.inf
    if dtype.kind == "b":
        return name == "min"
    return np.iinfo(dtype).min if name == "max" else np.iinfo(dtype).max


def _of_nothing(rule):
    """An op's ``empty`` rule (:func:`.declare.op`) that applies when an input has no
    elements."""
    return lambda types, attrs, arrays: \
        rule(types, attrs) if any(0 in t.shape for t in types) else None


def _reduction(name: str, dtypes, onnx: str, axes_since: int = 18):
    def check(types, attrs):
        require_dtype(name, types[0], dtypes)
        reduce_axes(name, types[0].ndim, attrs.get("axes"))

    def empty(types, attrs):
        x, dtype = types[0], np.dtype(types[0].dtype)
        shape = reduced_shape(x.shape, reduce_axes(name, x.ndim, attrs.get("axes")),
                              attrs["keepdims"])
        return np.full(shape, _identity(name, dtype), dtype)

    fn = getattr(T, name)

    def compute(x, *, name, axes=None, keepdims):
        if x.ndim == 0:   # the one element of a 0-d tensor, reduced alone
            x, keepdims = T.reshape(x, (1,), name=f"{name}_element"), 0
        return fn(x, axis=axes, keepdims=keepdims, name=name)

    # ONNX's Reduce* take their axes as an input from opset 18 (ReduceSum from 13)
    declare.op(name, compute, kind=OpKind.REDUCTION, attrs={"axes": None, "keepdims": 1},
               check=check, empty=_of_nothing(empty), onnx=onnx,
               onnx_attrs=declare.OnnxAttrs(inputs={"axes": OnnxInput(1, since=axes_since)}),
               doc=f"{name} over `axes`")


_reduction("sum", NUMBERS, "ReduceSum", axes_since=13)
_reduction("mean", NUMBERS, "ReduceMean")
_reduction("max", NUMBERS + ("bool",), "ReduceMax")
_reduction("min", NUMBERS + ("bool",), "ReduceMin")
_reduction("prod", NUMBERS, "ReduceProd")


def _along_axis(name: str, extra=None):
    """The check of an op along ``attrs["axis"]`` of a number tensor (and ``extra``'s)."""
    def check(types, attrs):
        require_dtype(name, types[0], NUMBERS)
        axis = norm_axes(name, (attrs["axis"],), types[0].ndim)[0]
        if extra is not None:
            extra(types[0], axis, attrs)
    return check


def _arg_empty(name: str):
    def empty(types, attrs):
        x = types[0]
        axis = norm_axes(name, (attrs["axis"],), x.ndim)[0]
        if x.shape[axis] == 0:
            raise OpShapeError(f"{name}: axis {axis} of {x.shape} has no elements, so it has "
                               f"no {name[3:]}imum. Instead: reduce a non-empty axis")
        return np.zeros(reduced_shape(x.shape, (axis,), attrs["keepdims"]), np.int64)
    return empty


for _name, _onnx in (("argmax", "ArgMax"), ("argmin", "ArgMin")):
    declare.op(_name, getattr(T, _name), kind=OpKind.REDUCTION,
               attrs={"axis": 0, "keepdims": 1, "select_last_index": 0},
               check=_along_axis(_name), empty=_of_nothing(_arg_empty(_name)), onnx=_onnx,
               doc=f"the index of the {_name[3:]}imum along `axis` as int64 (the last of ties "
                   "if select_last_index)")

for _name, _what in (("cumsum", "sum"), ("cumprod", "product")):
    declare.op(_name, getattr(T, _name), kind=OpKind.REDUCTION,
               attrs={"axis": REQUIRED, "exclusive": 0, "reverse": 0}, check=_along_axis(_name),
               onnx=f"Cum{_name[3:].capitalize()}",
               onnx_attrs=declare.OnnxAttrs(inputs={"axis": OnnxInput(1, "scalar")}),
               empty=_of_nothing(lambda types, attrs: np.empty(types[0].shape, types[0].dtype)),
               doc=f"running {_what} along `axis` (exclusive: without the element; reverse: "
                   "from the end)")


def _topk_k(x, axis, attrs):
    k = attrs["k"]
    if not 1 <= k <= x.shape[axis]:
        raise OpAttributeError(f"topk: k={k} must be in [1, {x.shape[axis]}], the size of "
                               f"axis {axis} of {x.shape}")


def _topk_empty(types, attrs):
    x = types[0]
    axis = norm_axes("topk", (attrs["axis"],), x.ndim)[0]
    shape = x.shape[:axis] + (attrs["k"],) + x.shape[axis + 1:]
    return np.empty(shape, x.dtype), np.empty(shape, np.int64)


def _topk(x, *, k, axis, largest, name):
    return T.topk(x, k, axis, bool(largest), name=name)


# sorted=0 lets a TopK give its values in any order: the sorted order is one of them
declare.op("topk", _topk, kind=OpKind.OPAQUE, attrs={"k": REQUIRED, "axis": -1, "largest": 1},
           check=_along_axis("topk", _topk_k), empty=_of_nothing(_topk_empty), onnx="TopK",
           onnx_attrs=declare.OnnxAttrs(names={"k": "K"}, inputs={"k": OnnxInput(1, "one")},
                                        onnx_only=("sorted",), outputs=2),
           doc="the k largest (or smallest) values along `axis`, sorted, and their indices")
