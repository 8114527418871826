"""Ops whose indices are data, beside ``gather``: ``gather_elements``, ``gather_nd``,
``scatter_elements`` and ``scatter_nd`` (ONNX's ops of those names), each declared once
from its te compute (:mod:`.declare`).

    >>> get("gather_elements").infer_type([TensorType((3, 4)), TensorType((3, 2), "int64")],
    ...                                   {"axis": 1})
    Tensor((3, 2), "float32")

Indices out of range follow gather's policy (see :mod:`mlcbook.ops.transform`): an index
outside ``[-n, n)`` is an :class:`~mlcbook.errors.ArgumentError` at run time, raised alike by
the references here, the graph interpreter and a compiled model, which checks the indices
before the kernel runs (:func:`mlcbook.graph.legalize.index_bounds`).
"""

from __future__ import annotations

import numpy as np

from ..te import ops as T
from ..te.ops import index as TI
from . import declare
from ._infer import norm_axis, require_dtype
from .registry import OpKind
from .types import TensorType

_INDEX_DTYPES = ("int32", "int64")


def _elements_infer(op: str, data: TensorType, indices: TensorType, axis: int) -> int:
    require_dtype(op, indices, _INDEX_DTYPES, "indices")
    return TI.elements_axis(op, data.shape, indices.shape, norm_axis(op, axis, data.ndim))


def _gather_elements_shape(types, attrs):
    data, indices = types
    _elements_infer("gather_elements", data, indices, attrs["axis"])
    return indices.shape


declare.op("gather_elements", T.gather_elements, kind=OpKind.INJECTIVE, attrs={"axis": 0},
           num_inputs=(2, 2), check=_gather_elements_shape,
           empty=declare.empty_output(_gather_elements_shape),
           indices=declare.indices_on_axis("gather_elements"), onnx="GatherElements",
           doc="out[k] = data[k with indices[k] on axis]: the output has the indices' shape")


def _nd_infer(op: str, data: TensorType, indices: TensorType, batch_dims: int) -> int:
    require_dtype(op, indices, _INDEX_DTYPES, "indices")
    return TI.nd_coordinates(op, data.shape, indices.shape, batch_dims)


def _gather_nd_shape(types, attrs):
    data, indices = types
    b = attrs["batch_dims"]
    q = _nd_infer("gather_nd", data, indices, b)
    return indices.shape[:-1] + data.shape[b + q:]


def _nd_indices(types, attrs):
    """Coordinate j of the indices' last axis indexes axis batch_dims + j of the data (an
    ``indices`` rule: :func:`.declare.op`)."""
    data, b = types[0], attrs.get("batch_dims", 0)
    return tuple((1, data.shape[b + j], b + j, j) for j in range(types[1].shape[-1]))


declare.op("gather_nd", T.gather_nd, kind=OpKind.INJECTIVE, attrs={"batch_dims": 0},
           num_inputs=(2, 2), check=_gather_nd_shape, empty=declare.empty_output(_gather_nd_shape),
           indices=_nd_indices, onnx="GatherND",
           doc="data[indices[i]] for every i: the indices' last axis holds coordinates")


def _scatter_empty(types, attrs, arrays):
    """A scatter with no updates is its data; one into empty data is empty data."""
    if not any(0 in t.shape for t in types):
        return None
    data = types[0]
    return np.empty(data.shape, data.dtype) if arrays is None else np.array(arrays[0])


def _scatter(name: str, address, indices, onnx: str, attrs, doc: str) -> None:
    """Declare the scatter ``name``; ``address(types, attrs)`` checks that the indices
    address the data, with te's check, for a scatter with no updates too (the compute checks
    the updates' shape and dtype)."""
    def check(types, attrs):
        address(types, attrs)
        TI.check_reduction(name, attrs["reduction"])
    declare.op(name, getattr(T, name), kind=OpKind.OPAQUE, attrs=attrs, num_inputs=(3, 3),
               check=check, empty=_scatter_empty, indices=indices, onnx=onnx, doc=doc)


# with reduction "none", the last of duplicate indices wins (numpy's assignment order)
_scatter("scatter_elements", lambda types, attrs: _elements_infer(
             "scatter_elements", types[0], types[1], attrs["axis"]),
         declare.indices_on_axis("scatter_elements"), "ScatterElements",
         {"axis": 0, "reduction": "none"},
         "data with data[k, with indices[k] on axis] = updates[k] (or combined by reduction)")
_scatter("scatter_nd", lambda types, attrs: _nd_infer("scatter_nd", types[0], types[1], 0),
         _nd_indices, "ScatterND", {"reduction": "none"},
         "data with data[indices[u]] = updates[u] (or combined by reduction)")
