"""``resize``: the output of ONNX's Resize and Upsample in nearest and linear modes, with
the output sizes and scales resolved at import (:mod:`mlcbook.te.ops.resize` maps the
coordinates; this module's reference uses the same mapping on numpy arrays).

    >>> get("resize").infer_type([TensorType((1, 3, 4, 4))],
    ...                          {"sizes": (1, 3, 8, 8), "scales": (1, 1, 2, 2)})
    Tensor((1, 3, 8, 8), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError
from ..te.ops.resize import check_resize, nearest_index, source_coordinate
from .registry import REQUIRED, OpKind, register
from .types import TensorType


def _resize_infer(types, attrs):
    x = types[0]
    check_resize(x.shape, attrs["sizes"], attrs["scales"], attrs["mode"],
                 attrs["coordinate_transformation_mode"], attrs["nearest_mode"], x.dtype,
                 error=OpAttributeError)
    return TensorType(tuple(int(s) for s in attrs["sizes"]), x.dtype)


def _resize_ref(x, sizes, scales, mode="nearest", coordinate_transformation_mode="half_pixel",
                nearest_mode="round_prefer_floor"):
    out = x.astype(np.float64) if mode == "linear" else x
    for d, (n, s) in enumerate(zip(sizes, scales)):
        if n == x.shape[d] and s == 1.0:
            continue
        c = source_coordinate(np.arange(n, dtype=np.float64), coordinate_transformation_mode,
                              float(s), x.shape[d], n)
        if mode == "nearest":
            idx = np.clip(nearest_index(c, nearest_mode, np.floor, np.ceil), 0, x.shape[d] - 1)
            out = np.take(out, idx.astype(np.int64), axis=d)
            continue
        lo = np.floor(c)
        w = (c - lo).reshape((-1,) + (1,) * (x.ndim - d - 1))
        lo = lo.astype(np.int64)
        a = np.take(out, np.clip(lo, 0, x.shape[d] - 1), axis=d)
        b = np.take(out, np.clip(lo + 1, 0, x.shape[d] - 1), axis=d)
        out = a * (1 - w) + b * w
    return out.astype(x.dtype)


register("resize", kind=OpKind.INJECTIVE, infer=_resize_infer, reference=_resize_ref,
         attrs={"sizes": REQUIRED, "scales": REQUIRED, "mode": "nearest",
                "coordinate_transformation_mode": "half_pixel",
                "nearest_mode": "round_prefer_floor"},
         doc="resize to `sizes` (nearest or linear; `scales` map the coordinates)")
