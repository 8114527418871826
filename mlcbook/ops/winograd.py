"""The three ops of a Winograd convolution (see :mod:`mlcbook.te.ops.winograd`):
``winograd_input``, ``winograd_product`` and ``winograd_output``. The graph pass
:func:`mlcbook.graph.passes.winograd_convs` puts them in place of a blocked 3x3 conv; models
never do. Each is a window or contraction op (``out_elemwise_fusable``): an elementwise op
before one stays its own kernel, and the bias, residual add and ReLU after a conv fuse into
``winograd_output``.

    >>> get("winograd_input").infer_type([TensorType((1, 4, 56, 56, 16))],
    ...                                  {"pads": (1, 1, 1, 1)})
    Tensor((16, 1, 4, 28, 28, 16), "float32")

Each is declared once from its te compute (:mod:`.declare`).
"""

from __future__ import annotations

from ..te.ops import winograd as te_winograd
from . import declare
from ._infer import FLOATS, require_dtype, same_dtype
from .registry import REQUIRED, OpKind

declare.op("winograd_input", lambda x, *, pads, name: te_winograd.winograd_input(
               x, pads, name=name),
           kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs={"pads": REQUIRED},
           check=lambda types, attrs: require_dtype("winograd_input", types[0], FLOATS),
           doc="Winograd F(2x2, 3x3) input transform: NCHW[c]c data -> (16, N, C/c, TH, TW, c)")
declare.op("winograd_product", te_winograd.winograd_product, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           num_inputs=(2, 2), check=lambda types, attrs: same_dtype("winograd_product", types),
           doc="Winograd product: per tile position, the sum over input channels of V x U")
declare.op("winograd_output", lambda m, *, out_hw, name: te_winograd.winograd_output(
               m, out_hw, name=name),
           kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs={"out_hw": REQUIRED},
           doc="Winograd output transform: (16, N, K/k, TH, TW, k) -> NCHW[k]c, cropped to out_hw")
