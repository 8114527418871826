"""``Scatter``, ScatterElements' name before opset 11 (the gathers and scatters are declared
with their ONNX names in :mod:`mlcbook.ops.index`), and ``Compress``, a ``gather`` of the
positions its condition selects. Its output's shape depends on the condition's values, and
mlcbook's graphs have static shapes, so the condition must be known at import.

    >>> sorted(CONVERTERS["Scatter"].attrs)
    ['axis', 'reduction']
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype

CONVERTERS["Scatter"] = CONVERTERS["ScatterElements"]


@converter("Compress", attrs=("axis",), static=(1,))
@guard_dtype
def _compress(cx, ins, attrs):
    x = ins[0]
    if "axis" in attrs:
        axis = attrs["axis"] % x.type.ndim
    else:  # no axis: the flattened tensor
        x, axis = cx.call("reshape", x, shape=(-1,), suffix="_flat"), 0
    size = x.shape[axis]
    # numpy's rule, which ONNX follows: a condition shorter than the axis selects from its
    # start only
    keep = np.flatnonzero(np.asarray(cx.static(1, "condition")).reshape(-1)[:size])
    if keep.size == 0:
        raise Unsupported("Compress: the condition selects nothing, and an empty tensor has "
                          "nothing to compute")
    return cx.call("gather", x, Constant(keep.astype(np.int64)), axis=axis)


__all__ = ["CONVERTERS"]
