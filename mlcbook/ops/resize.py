"""The sampling ops, declared once from their te computes: ``resize``, the output of ONNX's
Resize and Upsample in nearest, linear and cubic modes, with the output sizes and scales
resolved at import (:func:`mlcbook.te.ops.resize.resize` maps the coordinates);
``grid_sample`` and ``affine_grid``, ONNX's GridSample and AffineGrid
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

from ..errors import OpAttributeError, OpShapeError
from ..te import ops as T
from ..te.ops.grid_sample import check_grid_sample
from ..te.ops.resize import check_resize
from . import declare
from ._infer import require_dtype
from .registry import REQUIRED, OpKind


def _resize_check(types, attrs):
    check_resize(types[0].shape, attrs["sizes"], attrs["scales"], attrs["mode"],
                 attrs["coordinate_transformation_mode"], attrs["nearest_mode"],
                 types[0].dtype, error=OpAttributeError)


declare.op("resize", T.resize, kind=OpKind.INJECTIVE, check=_resize_check,
           attrs={"sizes": REQUIRED, "scales": REQUIRED, "mode": "nearest",
                  "coordinate_transformation_mode": "half_pixel",
                  "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75,
                  "exclude_outside": 0, "roi": (), "extrapolation_value": 0.0, "antialias": 0},
           doc="resize to `sizes` (nearest, linear or cubic; `scales` and `roi` map the "
               "coordinates)")


# --- grid_sample and affine_grid -------------------------------------------------------------
_FLOATS = ("float32", "float64")


def _grid_sample_check(types, attrs):
    x, grid = types
    require_dtype("grid_sample", x, _FLOATS, "input x")
    require_dtype("grid_sample", grid, _FLOATS, "grid")
    check_grid_sample(x.shape, grid.shape, attrs["mode"], attrs["padding_mode"],
                      error=OpShapeError)


declare.op("grid_sample", T.grid_sample, kind=OpKind.OPAQUE, num_inputs=(2, 2),
           attrs={"mode": "linear", "padding_mode": "zeros", "align_corners": 0},
           check=_grid_sample_check,
           doc="x sampled at the normalized positions of grid (nearest, linear or cubic)")
declare.op("affine_grid", T.affine_grid, kind=OpKind.OPAQUE,
           attrs={"size": REQUIRED, "align_corners": 0},
           check=lambda types, attrs: require_dtype("affine_grid", types[0], _FLOATS, "theta"),
           doc="the sampling grid of the affine transforms theta for an output of size")
