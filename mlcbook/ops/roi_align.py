"""``roi_align``, ONNX's RoiAlign, declared once from its te compute
(:mod:`mlcbook.te.ops.roi_align`): each region of interest pooled to a fixed size.

    >>> get("roi_align").infer_type([TensorType((1, 3, 8, 8)), TensorType((2, 4)),
    ...                              TensorType((2,), "int64")],
    ...                             {"output_height": 2, "output_width": 3, "sampling_ratio": 2})
    Tensor((2, 3, 2, 3), "float32")
"""

from __future__ import annotations

from ..te import ops as T
from . import declare
from ._infer import FLOATS, require_dtype, same_dtype
from .registry import OpKind


def bfloat16_since(first: int):
    """``since`` of an ONNX op from opset ``first`` that takes bfloat16 from opset 22 on
    (RoiAlign, DeformConv)."""
    return lambda attrs, types: 22 if types[0].dtype == "bfloat16" else first


def _check(types, attrs):
    x, rois, indices = types
    same_dtype("roi_align", [x, rois])
    require_dtype("roi_align", x, FLOATS, "input x")
    require_dtype("roi_align", indices, ("int64",), "batch_indices")


declare.op("roi_align", T.roi_align, kind=OpKind.OPAQUE, num_inputs=(3, 3),
           attrs={"coordinate_transformation_mode": "half_pixel", "mode": "avg",
                  "output_height": 1, "output_width": 1, "sampling_ratio": 0,
                  "spatial_scale": 1.0},
           check=_check, indices=lambda types, attrs: ((2, types[0].shape[0], 0, -1),),
           onnx="RoiAlign", onnx_attrs=declare.OnnxAttrs(since=bfloat16_since(16)),
           doc="each region of interest (x1, y1, x2, y2) of an image pooled to a fixed size, "
               "by the average or the maximum of bilinear samples")
