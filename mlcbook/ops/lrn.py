"""``lrn``: local response normalization across channels (ONNX's LRN), with its
legalization to :func:`mlcbook.te.ops.lrn`.

    >>> get("lrn").infer_type([TensorType((1, 8, 4, 4))], {"size": 3})
    Tensor((1, 8, 4, 4), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te.ops.lrn import lrn as te_lrn
from ._infer import FLOATS, require_dtype
from .registry import REQUIRED, OpKind, register, register_legalization


def _lrn_infer(types, attrs):
    x = types[0]
    require_dtype("lrn", x, FLOATS)
    if x.ndim < 3:
        raise OpShapeError(f"lrn: data must be (N, C, *spatial), got shape {x.shape}")
    if attrs["size"] < 1:
        raise OpAttributeError(f"lrn: size={attrs['size']} must be >= 1")
    return x


def _lrn_ref(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    x64 = x.astype(np.float64)
    sq = np.zeros_like(x64)
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    for c in range(x.shape[1]):
        sq[:, c] = (x64[:, max(0, c - lo):c + hi + 1] ** 2).sum(axis=1)
    return (x64 / (bias + alpha / size * sq) ** beta).astype(x.dtype)


register("lrn", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_lrn_infer, reference=_lrn_ref,
         attrs={"size": REQUIRED, "alpha": 1e-4, "beta": 0.75, "bias": 1.0},
         doc="x / (bias + alpha/size * sum of x**2 over `size` neighbouring channels)**beta")


@register_legalization("lrn")
def _legalize(ins, attrs, out_type):
    return te_lrn(ins[0], int(attrs["size"]), float(attrs["alpha"]), float(attrs["beta"]),
                  float(attrs["bias"]), name="lrn")
