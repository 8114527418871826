"""Winograd convolutions (opt_level 3): a big blocked 3x3 conv with stride 1 becomes the three
ops of F(2x2, 3x3) (:mod:`mlcbook.te.ops.winograd`), with 2.25x fewer multiplications.

    >>> func = winograd_convs(convert_layout(func))
    >>> [c.op for c in func.calls()][:5]
    ['to_blocked', 'winograd_input', 'winograd_product', 'winograd_output', 'add']

The weights are transformed once, here (``U = G g Gt``, 16/9 the size of the 3x3 weights).
A conv qualifies when its weights are constants and it does at least ``min_flops`` (default
:data:`MIN_FLOPS`; ``mb.compile``'s option ``winograd_min_flops``) floating-point
operations: below that, three kernel launches and the traffic of the transformed planes cost
about what the products save. Measured on a 2-core Zen 3 (direct / Winograd time, 1 and 2
threads, median of paired rounds): 32 channels at 28x28 (14.5 MFLOP) 1.17x and 1.00x, at
36x36 (23.9 MFLOP) 1.30x and 1.12x (interval down to 0.87x); 48 channels at 28x28 (32.5
MFLOP) 1.59x and 1.38x; ResNet-18's 64 at 56x56 1.56x and 1.53x, 512 at 7x7 (its last tiles
stick out of the map) 1.34x and 1.33x.
"""

from __future__ import annotations

import math

from ...ops.types import Attrs
from ...te.ops.winograd import winograd_weight
from ..expr import Call, Constant
from ..functor import ExprMutator

#: fewest floating-point operations (2 per multiply-add) of the direct conv for Winograd
MIN_FLOPS = 30_000_000


def _qualifies(conv: Call, min_flops: float) -> bool:
    x, w = conv.args
    attrs = conv.attrs
    if not isinstance(w, Constant) or w.data.ndim != 6 or w.data.shape[2:4] != (3, 3) \
            or attrs.get("group", 1) != 1:
        return False
    if tuple(attrs.get("strides") or (1, 1)) != (1, 1) \
            or tuple(attrs.get("dilations") or (1, 1)) != (1, 1):
        return False
    in_channels = w.data.shape[1] * w.data.shape[4]
    flops = 2 * math.prod(conv.shape) * in_channels * 9
    return flops >= min_flops and x.dtype == "float32"


class _Winograd(ExprMutator):
    def __init__(self, min_flops: float):
        super().__init__()
        self.min_flops = min_flops

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op != "conv_nchwc" or not _qualifies(new, self.min_flops):
            return new
        x, w = new.args
        pads = tuple(new.attrs.get("pads") or (0, 0, 0, 0))
        u = Constant(winograd_weight(w.data), w.name, w.owner)
        v = Call("winograd_input", (x,), Attrs(pads=pads), f"{new.name}_input")
        m = Call("winograd_product", (v, u), Attrs(), f"{new.name}_product")
        return Call("winograd_output", (m,), Attrs(out_hw=tuple(new.shape[2:4])), new.name)


def winograd_convs(func, min_flops: float = MIN_FLOPS):
    """``func`` with every qualifying ``conv_nchwc`` computed by Winograd's F(2x2, 3x3) (see
    the module docstring): ``min_flops=0`` takes every 3x3 stride-1 conv, ``math.inf`` none."""
    return _Winograd(min_flops).visit_function(func)
