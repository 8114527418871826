"""Ops whose value is known before the model runs: ``shape``, ``size``,
``constant_of_shape``, ``range``.

``shape`` and ``size`` read only the *type* of their input (``Op.reads_type_only``), and
the other two have no inputs at all, so :func:`mlcbook.graph.passes.fold_constants`
turns every call of them into a constant: the ONNX importer folds them as it builds the
graph, which is how a ``Reshape`` whose target shape is computed from ``Shape`` sees a
constant. Each is declared once (:mod:`.declare`): its compute writes the same constants,
for a graph compiled without folding (``opt_level=0``).

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
from . import declare
from ._infer import ints
from .registry import REQUIRED, OpKind
from .types import LOWBIT_DTYPES, check_graph_dtype, storage_dtype


def _shape_bounds(ndim: int, start, end) -> tuple[int, int]:
    """ONNX Shape's ``start``/``end``: negative counts from the end, then clamped to [0, ndim]."""
    def clamp(v):
        v = v + ndim if v < 0 else v
        return min(max(v, 0), ndim)
    return clamp(start), clamp(ndim if end is None else end)


def _table(values, shape: tuple, dtype: str, name: str):
    """A tensor of ``shape`` (``(len(values),)``, or ``()`` for one value) holding ``values``
    (a select chain on the index: these are short)."""
    def body(*i):
        out = _e.const(values[-1], dtype)
        for k in range(len(values) - 2, -1, -1):
            out = _e.select(i[0] == k, _e.const(values[k], dtype), out)
        return out
    return compute_named(shape, ["i"][:len(shape)], body, name)


def _shape(x, *, start, end=None, name):
    lo, hi = _shape_bounds(x.ndim, start, end)
    return _table(x.shape[lo:hi], (hi - lo,), "int64", name)


def _known(out_shape, value_of):
    """An ``empty`` rule (:func:`.declare.op`) giving ``value_of(types, attrs)`` where the
    output, of ``out_shape(types, attrs)``, or an input has no elements (te tensors cannot
    hold them; the values are known from the types and attributes alone)."""
    def empty(types, attrs, arrays):
        if 0 in out_shape(types, attrs) or any(0 in t.shape for t in types):
            return value_of(types, attrs)
        return None
    return empty


def _shape_of(types, attrs):
    lo, hi = _shape_bounds(types[0].ndim, attrs["start"], attrs.get("end"))
    return np.asarray(types[0].shape[lo:hi], np.int64).reshape(-1)


declare.op("shape", _shape, kind=OpKind.OPAQUE, attrs={"start": 0, "end": None},
           reads_type_only=True, empty=_known(lambda t, a: _shape_of(t, a).shape, _shape_of),
           onnx="Shape",
           doc="the input's shape as an int64 vector (dimensions start..end)")
declare.op("size", lambda x, *, name: _table([math.prod(x.shape)], (), "int64", name),
           kind=OpKind.OPAQUE, reads_type_only=True, onnx="Size",
           empty=_known(lambda t, a: (), lambda t, a: np.asarray(math.prod(t[0].shape),
                                                                  np.int64)),
           doc="the input's number of elements as an int64 scalar")


def _fill_check(types, attrs):
    shape = ints("constant_of_shape", "shape", attrs["shape"])
    if min(shape, default=0) < 0:
        raise OpAttributeError(f"constant_of_shape: shape={shape} has a negative dimension")
    check_graph_dtype(attrs["dtype"])


def _fill(*, shape, value, dtype, name):
    # a low-bit value is written as its byte (the op's dtype_attr says what the bytes are)
    stored = storage_dtype(dtype)
    if stored != dtype:
        value = np.asarray(value, dtype).view(stored).item()
    return compute_named(tuple(shape), [f"i{d}" for d in range(len(shape))],
                         lambda *i: _e.const(value, stored), name)


declare.op("constant_of_shape", _fill, kind=OpKind.OPAQUE, num_inputs=(0, 0),
           attrs={"shape": REQUIRED, "value": 0.0, "dtype": "float32"}, check=_fill_check,
           dtype_attr="dtype",
           empty=_known(lambda t, a: tuple(a["shape"]),
                        lambda t, a: np.full(tuple(a["shape"]), a["value"], a["dtype"])),
           onnx="ConstantOfShape", onnx_attrs=declare.OnnxAttrs(   # (value: a tensor of dtype)
               inputs={"shape": 0}, export=lambda attrs, types, opset: {
                   "value": np.full(1, attrs["value"], attrs["dtype"]), "dtype": None},
               since=lambda attrs, types: 21 if attrs["dtype"] in LOWBIT_DTYPES else 1),
           doc="a tensor of `shape` filled with `value`")


def _range_len(start, limit, delta) -> int:
    if delta == 0:
        raise OpAttributeError("range: delta=0 would never reach the limit; use a nonzero delta")
    return max(int(math.ceil((limit - start) / delta)), 0)


def _range(*, start, limit, delta, dtype, name):
    # ONNX defines element i as start + i * delta, computed in the output dtype
    n = _range_len(start, limit, delta)
    start, delta = _e.const(start, dtype), _e.const(delta, dtype)
    return compute_named((n,), ["i"], lambda i: start + _e.cast(dtype, i) * delta, name)


declare.op("range", _range, kind=OpKind.OPAQUE, num_inputs=(0, 0),
           attrs={"start": REQUIRED, "limit": REQUIRED, "delta": REQUIRED, "dtype": REQUIRED},
           check=lambda types, attrs: check_graph_dtype(attrs["dtype"]),
           empty=_known(lambda t, a: (_range_len(a["start"], a["limit"], a["delta"]),),
                        lambda t, a: np.empty(0, a["dtype"])),
           onnx="Range", onnx_attrs=declare.OnnxAttrs(   # (dtype: that of the inputs)
               inputs={a: declare.OnnxInput(k, "scalar", dtype="like")
                       for k, a in enumerate(("start", "limit", "delta"))},
               local={"dtype": None}),
           doc="start, start + delta, ... up to (not including) limit")
