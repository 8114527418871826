"""``resize``: the output of ONNX's Resize and Upsample in nearest, linear and cubic modes, with
the output sizes and scales resolved at import (:mod:`mlcbook.te.ops.resize` maps the
coordinates; this module's reference uses the same mapping on numpy arrays).

    >>> get("resize").infer_type([TensorType((1, 3, 4, 4))],
    ...                          {"sizes": (1, 3, 8, 8), "scales": (1, 1, 2, 2)})
    Tensor((1, 3, 8, 8), "float32")
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..errors import OpAttributeError
from ..te.ops.resize import (axis_taps, check_resize, nearest_index, resized_axes,
                             source_coordinate)
from .registry import REQUIRED, OpKind, register
from .types import TensorType


#: the coordinate helpers' functions on numpy arrays (te.ops.resize.IR_MATH on loop IR)
NP_MATH = SimpleNamespace(floor=np.floor, rint=np.rint, abs=np.abs, minimum=np.minimum,
                          maximum=np.maximum, where=np.where,
                          trunc=lambda v: v.astype(np.int64))


def _resize_infer(types, attrs):
    x = types[0]
    check_resize(x.shape, attrs["sizes"], attrs["scales"], attrs["mode"],
                 attrs["coordinate_transformation_mode"], attrs["nearest_mode"], x.dtype,
                 error=OpAttributeError)
    return TensorType(tuple(int(s) for s in attrs["sizes"]), x.dtype)


def _resize_ref(x, sizes, scales, mode="nearest", coordinate_transformation_mode="half_pixel",
                nearest_mode="round_prefer_floor", cubic_coeff_a=-0.75, exclude_outside=0,
                roi=(), extrapolation_value=0.0, antialias=0):
    # one axis after the other (the modes are separable), in float64
    roi = tuple(tuple(r) for r in roi) if roi else ((0.0, 1.0),) * x.ndim
    out = x.astype(np.float64) if mode != "nearest" else x
    outside = np.zeros(tuple(sizes), bool)
    for d in resized_axes(x.shape, sizes, scales, coordinate_transformation_mode, roi):
        n, along = sizes[d], (-1,) + (1,) * (x.ndim - d - 1)
        c = source_coordinate(np.arange(n, dtype=np.float64), coordinate_transformation_mode,
                              float(scales[d]), x.shape[d], n, roi[d])
        outside |= ((c < 0) | (c > x.shape[d] - 1)).reshape(along)
        if mode == "nearest":
            idx = np.clip(nearest_index(c, nearest_mode, np.floor, np.ceil), 0, x.shape[d] - 1)
            out = np.take(out, idx.astype(np.int64), axis=d)
            continue
        mixed = 0.0
        for p, w in axis_taps(c, x.shape[d], mode, cubic_coeff_a, exclude_outside, NP_MATH,
                              float(scales[d]) if antialias else 1.0):
            idx = np.clip(p, 0, x.shape[d] - 1).astype(np.int64)
            mixed = mixed + np.take(out, idx, axis=d) * w.reshape(along)
        out = mixed
    if coordinate_transformation_mode == "tf_crop_and_resize":
        out = np.where(outside, extrapolation_value, out)
    return out.astype(x.dtype)


register("resize", kind=OpKind.INJECTIVE, infer=_resize_infer, reference=_resize_ref,
         attrs={"sizes": REQUIRED, "scales": REQUIRED, "mode": "nearest",
                "coordinate_transformation_mode": "half_pixel",
                "nearest_mode": "round_prefer_floor", "cubic_coeff_a": -0.75,
                "exclude_outside": 0, "roi": (), "extrapolation_value": 0.0, "antialias": 0},
         doc="resize to `sizes` (nearest, linear or cubic; `scales` and `roi` map the "
             "coordinates)")
