"""Ops whose meaning changed between the opsets ``onnx.version_converter`` upgrades across,
but which the converter carries over unchanged: each is rewritten so that the upgraded
model computes what the old model meant, or refused with the reason.

* ``Hardmax`` before opset 13 flattens its input to 2-D at ``axis`` (default 1) and picks
  one winner per row of the flattened tensor; from 13 on it works on ``axis`` alone
  (default -1). Rewritten before the conversion as ``Reshape(Hardmax(Flatten(x, axis),
  axis=1), Shape(x))``, which means the same at every opset. (Softmax and LogSoftmax
  need nothing: the converter rewrites them the same way itself.)
* ``Upsample`` (opsets 7 to 9) and ``Resize`` at opset 10 map an output coordinate ``i``
  to ``i / scale`` (Resize-11's ``"asymmetric"``); nearest rounds down when it enlarges
  and up when it shrinks (onnxruntime's rule). The converter leaves opset 11's defaults
  (``"half_pixel"``, ``"round_prefer_floor"``) on the Resize it makes; the attributes are
  set after the conversion. A nearest resize that enlarges some axes and shrinks others
  has no opset-11 spelling and is refused.
* ``BatchNormalization`` with ``spatial=0`` (opsets 7 and 8: statistics per activation,
  not per channel) has no opset-13 spelling and is refused.

    >>> model, fixes = before_conversion(model, opset=9)
    >>> converted = after_conversion(onnx.version_converter.convert_version(model, 13), fixes)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UnsupportedModelError


def _attr(node, name: str, default=None):
    from onnx import helper
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _label(node, index: int) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else \
        f"node #{index} ({node.op_type}, output {node.output[0]!r})"


def before_conversion(model, opset: int) -> tuple[Any, dict[str, str]]:
    """``(model to convert, {output of a Resize-to-be: its old mode})``; ``model`` itself is
    not changed (a copy is rewritten when some node needs it)."""
    import onnx
    problems, fixes, hardmax = [], {}, []
    for i, node in enumerate(model.graph.node):
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type == "Hardmax" and opset < 13:
            if opset < 5:   # Reshape takes its shape as an input from opset 5 on
                problems.append(f"{_label(node, i)}: Hardmax at opset {opset} < 5")
            hardmax.append(i)
        elif node.op_type == "Upsample" or (node.op_type == "Resize" and opset < 11):
            fixes[node.output[0]] = _attr(node, "mode", b"nearest").decode()
        elif node.op_type == "BatchNormalization" and opset < 9 \
                and _attr(node, "spatial", 1) == 0:
            problems.append(f"{_label(node, i)}: spatial=0 (statistics per activation) has no "
                            "meaning from opset 9 on")
    if problems:
        raise UnsupportedModelError(
            f"the model's opset {opset} gives these nodes a meaning that no opset from 13 on "
            "can express: " + "; ".join(problems) +
            ". Instead: re-export the model at opset 13 or newer")
    if not hardmax:
        return model, fixes
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    nodes = list(copy.graph.node)
    copy.graph.ClearField("node")
    for i, node in enumerate(nodes):
        copy.graph.node.extend(_flat_hardmax(node, i) if i in hardmax else [node])
    return copy, fixes


def _flat_hardmax(node, index: int) -> list:
    """Hardmax's pre-13 meaning in ops whose meaning did not change."""
    from onnx import helper
    x, y = node.input[0], node.output[0]
    tmp = f"{y}__hardmax{index}"
    axis = _attr(node, "axis", 1)
    return [helper.make_node("Shape", [x], [tmp + "_shape"]),
            helper.make_node("Flatten", [x], [tmp + "_flat"], axis=axis),
            helper.make_node("Hardmax", [tmp + "_flat"], [tmp + "_max"], axis=1,
                             name=node.name),
            helper.make_node("Reshape", [tmp + "_max", tmp + "_shape"], [y])]


def after_conversion(model, fixes: dict[str, str]) -> Any:
    """``model`` (converted) with the old coordinate rule set on each Resize in ``fixes``."""
    from onnx import helper
    if not fixes:
        return model
    for i, node in enumerate(model.graph.node):
        if node.op_type != "Resize" or node.output[0] not in fixes:
            continue
        mode = fixes[node.output[0]]
        keep = [a for a in node.attribute
                if a.name not in ("coordinate_transformation_mode", "nearest_mode")]
        node.ClearField("attribute")
        node.attribute.extend(keep)
        node.attribute.append(helper.make_attribute("coordinate_transformation_mode",
                                                    "asymmetric"))
        if mode == "nearest":
            node.attribute.append(helper.make_attribute("nearest_mode",
                                                        _nearest_rounding(model, node, i)))
    return model


def _nearest_rounding(model, node, index: int) -> str:
    """``"floor"`` when every scale of ``node`` enlarges (or keeps) its axis, ``"ceil"``
    when every scale that changes an axis shrinks it."""
    scales = _constant(model, node.input[2]) if len(node.input) > 2 else None
    if scales is None or not scales.size:
        raise UnsupportedModelError(
            f"{_label(node, index)}: a nearest resize from before opset 11 rounds down or up "
            "by whether its scales enlarge or shrink, and its scales are not constants. "
            "Instead: re-export the model at opset 13 or newer")
    changed = scales[scales != 1]
    if (changed > 1).all():
        return "floor"
    if (changed < 1).all():
        return "ceil"
    raise UnsupportedModelError(
        f"{_label(node, index)}: a nearest resize from before opset 11 with scales "
        f"{scales.tolist()} rounds down on the axes it enlarges and up on those it shrinks, "
        "which no later opset can say. Instead: re-export the model at opset 13 or newer, "
        "or resize in two steps")


def _constant(model, name: str) -> np.ndarray | None:
    from onnx import numpy_helper
    for t in model.graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t)
    for n in model.graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(_attr(n, "value"))
    return None
