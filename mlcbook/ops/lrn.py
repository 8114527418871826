"""``lrn``: local response normalization across channels (ONNX's LRN), declared once from
:func:`mlcbook.te.ops.normalization.lrn`.

    >>> get("lrn").infer_type([TensorType((1, 8, 4, 4))], {"size": 3})
    Tensor((1, 8, 4, 4), "float32")
"""

from __future__ import annotations

from ..errors import OpAttributeError
from ..te.ops.normalization import lrn as te_lrn
from . import declare
from ._infer import FLOATS, require_dtype
from .registry import REQUIRED, OpKind


def _check(types, attrs):
    require_dtype("lrn", types[0], FLOATS)
    if attrs["size"] < 1:
        raise OpAttributeError(f"lrn: size={attrs['size']} must be >= 1")


def _lrn(x, *, size, alpha, beta, bias, name):
    return te_lrn(x, int(size), float(alpha), float(beta), float(bias), name=name)


declare.op("lrn", _lrn, kind=OpKind.OUT_ELEMWISE_FUSABLE, check=_check, onnx="LRN",
           empty=declare.empty_output(lambda types, attrs: types[0].shape),
           attrs={"size": REQUIRED, "alpha": 1e-4, "beta": 0.75, "bias": 1.0},
           doc="x / (bias + alpha/size * sum of x**2 over `size` neighbouring channels)**beta")
