"""Converters of ONNX's gathers and scatters beside ``Gather``: ``GatherElements``,
``GatherND``, ``ScatterElements`` (and ``Scatter``, its name before opset 11) and
``ScatterND``, each onto the graph op of its name.

    >>> CONVERTERS["ScatterND"].attrs
    frozenset({'reduction'})
"""

from __future__ import annotations

from .onnx_ops import CONVERTERS, converter, guard_dtype


@converter("GatherElements", attrs=("axis",))
@guard_dtype
def _gather_elements(cx, ins, attrs):
    return cx.call("gather_elements", ins[0], ins[1], axis=attrs.get("axis", 0))


@converter("GatherND", attrs=("batch_dims",))
@guard_dtype
def _gather_nd(cx, ins, attrs):
    return cx.call("gather_nd", ins[0], ins[1], batch_dims=attrs.get("batch_dims", 0))


@converter("ScatterElements", "Scatter", attrs=("axis", "reduction"))
@guard_dtype
def _scatter_elements(cx, ins, attrs):
    return cx.call("scatter_elements", ins[0], ins[1], ins[2], axis=attrs.get("axis", 0),
                   reduction=attrs.get("reduction", "none"))


@converter("ScatterND", attrs=("reduction",))
@guard_dtype
def _scatter_nd(cx, ins, attrs):
    return cx.call("scatter_nd", ins[0], ins[1], ins[2],
                   reduction=attrs.get("reduction", "none"))


__all__ = ["CONVERTERS"]
