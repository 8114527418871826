"""Ops whose indices are data, beside ``gather``: ``gather_elements``, ``gather_nd``,
``scatter_elements`` and ``scatter_nd`` (ONNX's ops of those names). The gathers are
declared once from their te computes (:mod:`.declare`); the scatters keep their inference
and numpy reference written out.

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

from ..errors import ArgumentError, OpAttributeError, OpShapeError
from ..te import ops as T
from ..te.ops.index import REDUCTIONS
from . import declare
from ._infer import norm_axis, require_dtype
from .registry import OpKind, register
from .types import TensorType

_INDEX_DTYPES = ("int32", "int64")


def _normalized(op: str, indices: np.ndarray, n) -> np.ndarray:
    """``indices`` with negatives counted from the end; raises if one is outside [-n, n)
    (``n`` an int, or one length per coordinate along the last axis)."""
    n = np.asarray(n)
    if indices.size and ((indices < -n).any() or (indices >= n).any()):
        raise ArgumentError(f"{op}: an index is outside [-n, n) for an axis of length n "
                            f"({n.tolist()}); Instead: give indices inside the data")
    return np.where(indices < 0, indices + n, indices)


def _check_reduction(op: str, reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise OpAttributeError(f"{op}: reduction={reduction!r} is not one of {REDUCTIONS}")


def _elements_infer(op: str, data: TensorType, indices: TensorType, axis: int) -> int:
    require_dtype(op, indices, _INDEX_DTYPES, "indices")
    axis = norm_axis(op, axis, data.ndim)
    if indices.ndim != data.ndim or any(i > d for k, (i, d) in enumerate(
            zip(indices.shape, data.shape)) if k != axis):
        raise OpShapeError(f"{op}: indices of shape {indices.shape} must have the rank of the "
                           f"data {data.shape} and be no longer outside axis {axis}")
    return axis


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
    q = indices.shape[-1] if indices.ndim else 0
    if (indices.ndim < 1 or not 1 <= q <= data.ndim - batch_dims
            or indices.shape[:batch_dims] != data.shape[:batch_dims]):
        raise OpShapeError(f"{op}: indices of shape {indices.shape} (the last axis: coordinates"
                           f") with batch_dims={batch_dims} do not address data {data.shape}")
    return q


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


_NP_REDUCE = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}


def _scatter_elements_infer(types, attrs):
    data, indices, updates = types
    _elements_infer("scatter_elements", data, indices, attrs["axis"])
    _check_reduction("scatter_elements", attrs["reduction"])
    if updates.shape != indices.shape or updates.dtype != data.dtype:
        raise OpShapeError(f"scatter_elements: updates {updates} must have the indices' shape "
                           f"{indices.shape} and the data's dtype {data.dtype}")
    return data


def _scatter_elements_ref(data, indices, updates, axis=0, reduction="none"):
    axis %= max(data.ndim, 1)       # ONNX allows a negative axis
    idx = _normalized("scatter_elements", indices, data.shape[axis])
    out = data.copy()
    for k in np.ndindex(*indices.shape):  # in order: the last of duplicate indices wins
        at = k[:axis] + (idx[k],) + k[axis + 1:]
        out[at] = updates[k] if reduction == "none" else _NP_REDUCE[reduction](out[at],
                                                                               updates[k])
    return out


register("scatter_elements", kind=OpKind.OPAQUE, infer=_scatter_elements_infer,
         reference=_scatter_elements_ref, attrs={"axis": 0, "reduction": "none"},
         num_inputs=(3, 3), indices=declare.indices_on_axis("scatter_elements"),
         doc="data with data[k, with indices[k] on axis] = updates[k] (or combined by reduction)")


def _scatter_nd_infer(types, attrs):
    data, indices, updates = types
    q = _nd_infer("scatter_nd", data, indices, 0)
    _check_reduction("scatter_nd", attrs["reduction"])
    if updates.shape != indices.shape[:-1] + data.shape[q:] or updates.dtype != data.dtype:
        raise OpShapeError(f"scatter_nd: updates {updates} must have the shape "
                           f"{indices.shape[:-1] + data.shape[q:]} and the data's dtype")
    return data


def _scatter_nd_ref(data, indices, updates, reduction="none"):
    q = indices.shape[-1]
    idx = _normalized("scatter_nd", indices, data.shape[:q])
    out = data.copy()
    for k in np.ndindex(*indices.shape[:-1]):
        at = tuple(idx[k])
        out[at] = updates[k] if reduction == "none" else _NP_REDUCE[reduction](out[at],
                                                                               updates[k])
    return out


register("scatter_nd", kind=OpKind.OPAQUE, infer=_scatter_nd_infer, reference=_scatter_nd_ref,
         attrs={"reduction": "none"}, num_inputs=(3, 3), indices=_nd_indices,
         doc="data with data[indices[u]] = updates[u] (or combined by reduction)")
