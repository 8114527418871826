"""The sampling ops, declared once from their te computes: ``resize``, the output of ONNX's
Resize and Upsample in nearest, linear and cubic modes, with the output sizes and scales
resolved at import (:func:`mlcbook.te.ops.resize.resize` maps the coordinates);
``grid_sample`` and ``affine_grid``, ONNX's GridSample and AffineGrid, and ``deform_conv``,
ONNX's DeformConv, a convolution of taps sampled as grid_sample samples
(:mod:`mlcbook.te.ops.grid_sample`).

    >>> get("resize").infer_type([TensorType((1, 3, 4, 4))],
    ...                          {"sizes": (1, 3, 8, 8), "scales": (1, 1, 2, 2)})
    Tensor((1, 3, 8, 8), "float32")
    >>> get("grid_sample").infer_type([TensorType((1, 3, 4, 4)), TensorType((1, 6, 5, 2))], {})
    Tensor((1, 3, 6, 5), "float32")
    >>> get("affine_grid").infer_type([TensorType((2, 2, 3))], {"size": (2, 1, 4, 5)})
    Tensor((2, 4, 5, 2), "float32")
"""

from __future__ import annotations

import math

from ..errors import OpAttributeError
from ..te import ops as T
from ..te.ops.grid_sample import MODES as GRID_MODES
from ..te.ops.grid_sample import PADDING_MODES
from . import declare
from ._infer import require_dtype
from .registry import REQUIRED, OpKind
from .roi_align import bfloat16_since


def _resize_onnx(attrs, types, opset):
    """Resize's inputs: the sizes where the scales are theirs over the input's shape, else
    the scales where they give the sizes (ONNX takes one and computes the other); the
    region (starts, then ends) for tf_crop_and_resize; antialias only where it is on."""
    shape, sizes, scales = types[0].shape, attrs["sizes"], attrs["scales"]
    if all(math.isclose(s, n / d, rel_tol=1e-6) for s, n, d in zip(scales, sizes, shape)):
        scales = None
    elif all(math.floor(d * s) == n for s, n, d in zip(scales, sizes, shape)):
        sizes = None
    else:
        raise OpAttributeError(f"scales={scales} neither give the sizes {sizes} of "
                               f"an input of shape {shape} nor are sizes / shape, one of which "
                               "ONNX's Resize computes from the other. Instead: give scales "
                               "equal to sizes / shape")
    roi = None
    if attrs["coordinate_transformation_mode"] == "tf_crop_and_resize":
        pairs = attrs["roi"] or ((0.0, 1.0),) * len(shape)
        roi = tuple(p[0] for p in pairs) + tuple(p[1] for p in pairs)
    return {"sizes": sizes, "scales": scales, "roi": roi, "antialias": attrs["antialias"] or None}


# (the import resolves sizes and scales from Resize's and Upsample's forms, axes and aspect
# ratio policies included: mlcbook.frontend.onnx_resize_ops)
_RESIZE_ONNX = declare.OnnxAttrs(
    inputs={"roi": declare.OnnxInput(1, "floats"), "scales": declare.OnnxInput(2, "floats"),
            "sizes": 3},
    export=_resize_onnx, since=lambda attrs, types: 19 if attrs[
        "coordinate_transformation_mode"] == "half_pixel_symmetric" else 1)

# (the compute checks the attributes: te.ops.resize.check_resize)
declare.op("resize", T.resize, kind=OpKind.INJECTIVE,
           attrs={"sizes": REQUIRED, "scales": REQUIRED, "mode": "nearest",
                  "coordinate_transformation_mode": "half_pixel",
                  "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75,
                  "exclude_outside": 0, "roi": (), "extrapolation_value": 0.0, "antialias": 0},
           onnx="Resize", onnx_attrs=_RESIZE_ONNX,
           doc="resize to `sizes` (nearest, linear or cubic; `scales` and `roi` map the "
               "coordinates)")


# --- grid_sample and affine_grid -------------------------------------------------------------
_FLOATS = ("float32", "float64")


def _grid_sample_check(types, attrs):
    x, grid = types
    require_dtype("grid_sample", x, _FLOATS, "input x")
    require_dtype("grid_sample", grid, _FLOATS, "grid")   # (the compute checks the rest)


#: GridSample's opset-16 names of its modes, which opset 20 renamed as the op names them
_OPSET16_MODES = {"bilinear": "linear", "bicubic": "cubic"}


def _grid_mode(attrs) -> str:
    mode = attrs.get("mode", "linear")
    return _OPSET16_MODES.get(mode, mode)


def _grid_sample_onnx_check(attrs):
    given = {"mode": (_grid_mode(attrs), GRID_MODES),
             "padding_mode": (attrs.get("padding_mode", "zeros"), PADDING_MODES)}
    return [f"{a}={v!r} (supported: {', '.join(ok)})" for a, (v, ok) in given.items()
            if v not in ok]


declare.op("grid_sample", T.grid_sample, kind=OpKind.OPAQUE, num_inputs=(2, 2),
           attrs={"mode": "linear", "padding_mode": "zeros", "align_corners": 0},
           check=_grid_sample_check, onnx="GridSample", onnx_attrs=declare.OnnxAttrs(
               since=20, check=_grid_sample_onnx_check,
               derive=lambda attrs, types, used: {"mode": _grid_mode(attrs)}),
           doc="x sampled at the normalized positions of grid (nearest, linear or cubic)")
declare.op("affine_grid", T.affine_grid, kind=OpKind.OPAQUE,
           attrs={"size": REQUIRED, "align_corners": 0},
           check=lambda types, attrs: require_dtype("affine_grid", types[0], _FLOATS, "theta"),
           onnx="AffineGrid", onnx_attrs=declare.OnnxAttrs(inputs={"size": 1}),
           doc="the sampling grid of the affine transforms theta for an output of size")


# --- deform_conv ---------------------------------------------------------------------------
def _deform_masked(attrs, types, used):
    """Whether the node's last input is its mask: a 4-D one, where the bias is 1-D (the
    import drops the inputs left out, so the bias or the mask may be the fourth)."""
    return {"masked": int(len(types) > 3 and len(types[-1].shape) == 4)}


def _deform_places(attrs, n):
    """Where the call's inputs sit among DeformConv's (B 3, mask 4)."""
    masked = attrs.get("masked", 0)
    return (0, 1, 2) + ((3,) if n - 3 > masked else ()) + ((4,) if masked else ()), None


declare.op("deform_conv", T.deform_conv, kind=OpKind.OPAQUE, num_inputs=(3, 5),
           attrs={"masked": 0, "dilations": None, "group": 1, "kernel_shape": None,
                  "offset_group": 1, "pads": None, "strides": None},
           check=lambda types, attrs: require_dtype("deform_conv", types[0], _FLOATS,
                                                     "input x"),
           onnx="DeformConv", onnx_attrs=declare.OnnxAttrs(
               since=bfloat16_since(19), derive=_deform_masked, places=_deform_places,
               local={"masked": None}),
           doc="2-D convolution whose taps are moved by offset (read bilinearly) and "
               "weighed by an optional mask")
