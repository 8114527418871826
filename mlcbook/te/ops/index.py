"""Operators whose indices are data, beside :func:`~mlcbook.te.ops.transform.gather`:
``gather_elements``, ``gather_nd``, ``scatter_elements`` and ``scatter_nd`` (ONNX's ops of
those names, negative indices counting from the end).

    >>> y = gather_elements(x, idx, axis=1)      # y[i, j] = x[i, idx[i, j]]

An index out of range reads the edge here, so a kernel never reads outside its buffers; a
compiled model checks the indices before the kernel runs
(:func:`mlcbook.graph.legalize.index_bounds`), as it does for gather.

A scatter is computed from the output's side: each output element looks through the update
positions for those that target it (a reduction over them), then combines. That costs
output size x number of update positions: right for the small index tensors of ONNX models,
not for big scatters. With ``reduction="none"`` the last update that targets an element wins
(numpy's assignment order).
"""

from __future__ import annotations

import math

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import (and_all, axis_names, check_tensor, clamp, compute_dtype, compute_named,
                   load, normalize_axis, store)

#: the scatter reductions -> (te reducer, how the reduced updates combine with the data)
_COMBINE = {"add": ("sum", lambda d, u: d + u), "mul": ("prod", lambda d, u: d * u),
            "max": ("max", _e.max), "min": ("min", _e.min)}
REDUCTIONS = ("none",) + tuple(_COMBINE)


def _check_indices(op: str, indices: Tensor) -> None:
    check_tensor(indices, op, "indices")
    if not _e.is_int(indices.dtype):
        raise TEDTypeError(f"{op}: the indices are {indices.dtype}; Instead: give an int "
                           "tensor")


def _index(value, n: int):
    """An index read from data, as int32 in ``[0, n)``: negative counts from the end, and out
    of range is clamped (the graph level has checked it)."""
    ix = _e.cast("int32", value)
    return clamp(_e.select(ix < 0, ix + n, ix), n)


def elements_axis(op: str, data_shape, indices_shape, axis: int) -> int:
    """``axis`` (non-negative) of a gather or scatter of elements whose indices of
    ``indices_shape`` have the data's rank and fit in it outside ``axis``: their check, which
    the graph ops share."""
    axis = normalize_axis(axis, len(data_shape), op)
    if len(indices_shape) != len(data_shape) or any(i > d for k, (i, d) in enumerate(
            zip(indices_shape, data_shape)) if k != axis):
        raise TEShapeError(f"{op}: the indices {tuple(indices_shape)} must have the rank of the "
                           f"data {tuple(data_shape)} and fit in it outside axis {axis}")
    return axis


def nd_coordinates(op: str, data_shape, indices_shape, batch_dims: int = 0) -> int:
    """How many coordinates into the data the last axis of ``indices_shape`` holds (after
    ``batch_dims`` leading axes that indices and data share), checked: the check of
    gather_nd and scatter_nd, which the graph ops share."""
    b, q = batch_dims, indices_shape[-1] if len(indices_shape) else 0
    if (not indices_shape or not 1 <= q <= len(data_shape) - b
            or tuple(indices_shape[:b]) != tuple(data_shape[:b])):
        raise TEShapeError(f"{op}: the indices {tuple(indices_shape)} (the last axis: "
                           f"coordinates) with batch_dims={b} do not address the data "
                           f"{tuple(data_shape)}")
    return q


def _check_elements(op: str, data: Tensor, indices: Tensor, axis: int) -> int:
    check_tensor(data, op, "data")
    _check_indices(op, indices)
    return elements_axis(op, data.shape, indices.shape, axis)


def gather_elements(data: Tensor, indices: Tensor, axis: int = 0,
                    name: str = "gather_elements") -> Tensor:
    """``numpy.take_along_axis(data, indices, axis)``: the output has the indices' shape."""
    axis = _check_elements("gather_elements", data, indices, axis)
    n = data.shape[axis]

    def body(*i):
        return data[i[:axis] + (_index(indices[i], n),) + i[axis + 1:]]

    return compute_named(indices.shape, axis_names(indices.ndim), body, name)


def gather_nd(data: Tensor, indices: Tensor, batch_dims: int = 0,
              name: str = "gather_nd") -> Tensor:
    """ONNX's GatherND: the last axis of ``indices`` holds ``q`` coordinates into ``data``
    (after ``batch_dims`` leading axes both share); out[i, ...] = data[indices[i], ...]."""
    check_tensor(data, "gather_nd", "data")
    _check_indices("gather_nd", indices)
    b, q = batch_dims, nd_coordinates("gather_nd", data.shape, indices.shape, batch_dims)
    lead = indices.ndim - 1
    shape = indices.shape[:-1] + data.shape[b + q:]

    def body(*i):
        coords = tuple(_index(indices[i[:lead] + (c,)], data.shape[b + c]) for c in range(q))
        return data[i[:b] + coords + i[lead:]]

    return compute_named(shape, axis_names(len(shape)), body, name)


def check_reduction(op: str, reduction: str, dtype: str | None = None) -> None:
    """Raise unless a scatter of ``dtype`` data can combine its updates by ``reduction``:
    the scatters' check, which the graph ops share."""
    if reduction not in REDUCTIONS:
        raise TEAttributeError(f"{op}: reduction={reduction!r} is not one of {REDUCTIONS}")
    if dtype == "bool" and reduction != "none":
        raise TEDTypeError(f"{op}: reduction={reduction!r} of bool data; cast it to a number "
                           "type")


def _scatter(op, data, positions, match, update_at, reduction, name):
    """The output of a scatter: ``positions`` are the reduce axes over the update positions,
    ``match(i)`` says whether the update position targets output element ``i``, and
    ``update_at(i, pos)`` reads the update at position ``pos`` (index expressions) for it."""
    check_reduction(op, reduction, data.dtype)
    names = axis_names(data.ndim)
    if reduction == "none":
        # the last matching position, as a row-major number over the positions (-1: none)
        strides = [math.prod(p.extent for p in positions[k + 1:]) for k in range(len(positions))]
        linear = positions[0] * strides[0]
        for p, st in zip(positions[1:], strides[1:]):
            linear = linear + p * st
        last = compute_named(data.shape, names, lambda *i: _r.max(
            _e.select(match(i), linear, _e.const(-1, "int32")), axis=positions), f"{name}_last")

        def pick(*i):
            at = [clamp(last[i] // st % p.extent, p.extent) for p, st in zip(positions, strides)]
            return _e.select(last[i] >= 0, update_at(i, at), data[i])

        return compute_named(data.shape, names, pick, name)
    reducer, combine = _COMBINE[reduction]
    acc = compute_named(data.shape, names, lambda *i: getattr(_r, reducer)(
        _e.cast(compute_dtype(data.dtype), update_at(i, positions)), axis=positions,
        where=match(i)), f"{name}_acc")
    return compute_named(data.shape, names, lambda *i: store(
        combine(load(data, i), acc[i]), data.dtype), name)


def scatter_elements(data: Tensor, indices: Tensor, updates: Tensor, axis: int = 0,
                     reduction: str = "none", name: str = "scatter_elements") -> Tensor:
    """ONNX's ScatterElements: a copy of ``data`` where, for every position ``k`` of
    ``indices``, the element ``k`` with its ``axis`` coordinate replaced by ``indices[k]``
    takes ``updates[k]`` (``reduction`` "add", "mul", "max", "min": combined with it)."""
    axis = _check_elements("scatter_elements", data, indices, axis)
    check_tensor(updates, "scatter_elements", "updates")
    if updates.shape != indices.shape or updates.dtype != data.dtype:
        raise TEShapeError(f"scatter_elements: updates {updates.shape} {updates.dtype} must "
                           f"have the indices' shape {indices.shape} and the data's dtype "
                           f"{data.dtype}")
    n = data.shape[axis]
    r = _r.reduce_axis(indices.shape[axis], name="r")

    def position(i, at):
        # element i's coordinates outside the axis (clamped: ``inside`` guards them)
        return tuple(at[0] if d == axis else clamp(v, indices.shape[d]) for d, v in enumerate(i))

    def match(i):
        inside = and_all(v < indices.shape[d] for d, v in enumerate(i)
                         if d != axis and indices.shape[d] < data.shape[d])
        hit = _index(indices[position(i, [r])], n) == i[axis]
        return hit if inside is None else inside & hit

    return _scatter("scatter_elements", data, [r], match,
                    lambda i, at: updates[position(i, at)], reduction, name)


def scatter_nd(data: Tensor, indices: Tensor, updates: Tensor, reduction: str = "none",
               name: str = "scatter_nd") -> Tensor:
    """ONNX's ScatterND: the last axis of ``indices`` holds ``q`` coordinates into ``data``;
    the slice ``data[indices[u]]`` takes ``updates[u]`` for every position ``u`` of
    ``indices[..., 0]`` (``reduction`` "add", "mul", "max", "min": combined with it)."""
    check_tensor(data, "scatter_nd", "data")
    _check_indices("scatter_nd", indices)
    check_tensor(updates, "scatter_nd", "updates")
    q = nd_coordinates("scatter_nd", data.shape, indices.shape)
    lead = indices.shape[:-1]
    if updates.shape != lead + data.shape[q:] or updates.dtype != data.dtype:
        raise TEShapeError(f"scatter_nd: indices {indices.shape} and updates {updates.shape} "
                           f"{updates.dtype} do not fit data {data.shape} {data.dtype}; updates "
                           "must have shape indices.shape[:-1] + data.shape[q:]")
    # 1-d indices are one update position: a reduce axis of extent 1 stands for it
    positions = [_r.reduce_axis(e, name=f"u{k}") for k, e in enumerate(lead or (1,))]

    def at_lead(at):
        return tuple(at) if lead else ()

    def match(i):
        return and_all(_index(indices[at_lead(positions) + (c,)], data.shape[c]) == i[c]
                       for c in range(q))

    return _scatter("scatter_nd", data, positions, match,
                    lambda i, at: updates[at_lead(at) + tuple(i[q:])], reduction, name)
