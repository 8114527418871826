"""Ops whose value is known before the model runs: ``shape``, ``size``,
``constant_of_shape``, ``range``.

``shape`` and ``size`` read only the *type* of their input (``Op.reads_type_only``), and
the other two have no inputs at all, so :func:`mlcbook.graph.passes.fold_constants`
turns every call of them into a constant: the ONNX importer folds them as it builds the
graph, which is how a ``Reshape`` whose target shape is computed from ``Shape`` sees a
constant. Their legalizations write the same constants, for a graph compiled without
folding (``opt_level=0``).

    >>> get("shape").infer_type([TensorType((2, 3, 4))], {"start": 1})
    Tensor((2,), "int64")
    >>> get("range").reference(start=0, limit=5, delta=2, dtype="int64")
    array([0, 2, 4])
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpAttributeError
from ..te.ops.util import compute_named
from ..tir import expr as _e
from ._infer import ints
from .registry import REQUIRED, OpKind, register, register_legalization
from .types import TensorType, check_graph_dtype


def _shape_bounds(ndim: int, start, end) -> tuple[int, int]:
    """ONNX Shape's ``start``/``end``: negative counts from the end, then clamped to [0, ndim]."""
    def clamp(v):
        v = v + ndim if v < 0 else v
        return min(max(v, 0), ndim)
    return clamp(start), clamp(ndim if end is None else end)


def _shape_infer(types, attrs):
    lo, hi = _shape_bounds(types[0].ndim, attrs["start"], attrs.get("end"))
    return TensorType((max(hi - lo, 0),), "int64")


def _shape_ref(x, start=0, end=None):
    lo, hi = _shape_bounds(x.ndim, start, end)
    return np.asarray(x.shape[lo:hi], np.int64).reshape(-1)


register("shape", kind=OpKind.OPAQUE, infer=_shape_infer, reference=_shape_ref,
         attrs={"start": 0, "end": None}, reads_type_only=True,
         doc="the input's shape as an int64 vector (dimensions start..end)")
register("size", kind=OpKind.OPAQUE, infer=lambda t, a: TensorType((), "int64"),
         reference=lambda x: np.asarray(x.size, np.int64), reads_type_only=True,
         doc="the input's number of elements as an int64 scalar")


def _fill_infer(types, attrs):
    shape = ints("constant_of_shape", "shape", attrs["shape"])
    if min(shape, default=0) < 0:
        raise OpAttributeError(f"constant_of_shape: shape={shape} has a negative dimension")
    return TensorType(shape, check_graph_dtype(attrs["dtype"]))


def _fill_ref(shape, value=0.0, dtype="float32"):
    return np.full(tuple(shape), value, dtype=dtype)


register("constant_of_shape", kind=OpKind.OPAQUE, infer=_fill_infer, reference=_fill_ref,
         attrs={"shape": REQUIRED, "value": 0.0, "dtype": "float32"}, num_inputs=(0, 0),
         doc="a tensor of `shape` filled with `value`")


def _range_len(start, limit, delta) -> int:
    if delta == 0:
        raise OpAttributeError("range: delta=0 would never reach the limit; use a nonzero delta")
    return max(int(math.ceil((limit - start) / delta)), 0)


def _range_infer(types, attrs):
    n = _range_len(attrs["start"], attrs["limit"], attrs["delta"])
    return TensorType((n,), check_graph_dtype(attrs["dtype"]))


def _range_ref(start, limit, delta, dtype):
    n = _range_len(start, limit, delta)
    # ONNX defines element i as start + i * delta, computed in the output dtype
    return (np.asarray(start, dtype) + np.arange(n).astype(dtype) * np.asarray(delta, dtype)
            ).astype(dtype)


register("range", kind=OpKind.OPAQUE, infer=_range_infer, reference=_range_ref,
         attrs={"start": REQUIRED, "limit": REQUIRED, "delta": REQUIRED, "dtype": REQUIRED},
         num_inputs=(0, 0), doc="start, start + delta, ... up to (not including) limit")


# --- legalizations: every element is known, so each is a compute of constants -------------------
def _table(values, out_type, name: str):
    """A 1-D tensor holding ``values`` (a select chain on the index: these are short)."""
    def body(i):
        out = _e.const(values[-1], out_type.dtype) if values else _e.const(0, out_type.dtype)
        for k in range(len(values) - 2, -1, -1):
            out = _e.select(i == k, _e.const(values[k], out_type.dtype), out)
        return out
    return compute_named(out_type.shape, ["i"], body, name)


@register_legalization("shape")
def _legalize_shape(ins, attrs, out_type):
    values = [int(v) for v in _shape_ref(np.broadcast_to(np.zeros(()), ins[0].shape),
                                         attrs["start"], attrs.get("end"))]
    return _table(values, out_type, "shape")


@register_legalization("size")
def _legalize_size(ins, attrs, out_type):
    return _table([int(np.prod(ins[0].shape))], out_type, "size")


@register_legalization("constant_of_shape")
def _legalize_fill(ins, attrs, out_type):
    names = [f"i{d}" for d in range(len(out_type.shape))]
    return compute_named(out_type.shape, names,
                         lambda *i: _e.const(attrs["value"], out_type.dtype), "constant_of_shape")


@register_legalization("range")
def _legalize_range(ins, attrs, out_type):
    dt = out_type.dtype
    start, delta = _e.const(attrs["start"], dt), _e.const(attrs["delta"], dt)
    return compute_named(out_type.shape, ["i"], lambda i: start + _e.cast(dt, i) * delta, "range")
