"""Converters of the ONNX ops that carry a state from one call to the next, built from graph
ops: ``CausalConvWithState`` (a depthwise causal 1-D convolution whose left context is the
previous call's last inputs, as in Mamba-style sequence models).

    >>> CONVERTERS["CausalConvWithState"].outputs      # output, present_state
    2
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from .onnx_ops import CONVERTERS, converter, guard_dtype


@converter("CausalConvWithState", attrs=("activation",), outputs=2)
@guard_dtype
def _causal_conv_with_state(cx, ins, attrs):
    x, w = ins[:2]
    bias, past = (ins[k] if k < len(ins) else None for k in (2, 3))
    (b, c, length), k = x.shape, w.shape[2]
    # the left context: the last k - 1 inputs of the previous call, or zeros
    if past is None:
        past = Constant(np.zeros((b, c, k - 1), x.dtype))
    padded = cx.call("concat", past, x, axis=2, suffix="_context")
    args = [padded, w] + ([bias] if bias is not None else [])
    y = cx.call("conv", *args, group=c, kernel_shape=(k,), strides=(1,), pads=(0, 0),
                dilations=(1,), suffix="_conv")
    # onnx's checker allows only "none", "silu" and "swish" (another name of silu)
    if attrs.get("activation", "none") in ("silu", "swish"):
        y = cx.call("swish", y, alpha=1.0, suffix="_silu")
    total = length + k - 1
    present = cx.call("slice", padded, starts=(total - (k - 1),), ends=(total,), axes=(2,),
                      suffix="_present_state")
    return [y, present]


__all__ = ["CONVERTERS"]
