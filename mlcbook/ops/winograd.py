"""The three ops of a Winograd convolution (see :mod:`mlcbook.te.ops.winograd`):
``winograd_input``, ``winograd_product`` and ``winograd_output``. The graph pass
:func:`mlcbook.graph.passes.winograd_convs` puts them in place of a blocked 3x3 conv; models
never do. Each is a window or contraction op (``out_elemwise_fusable``): an elementwise op
before one stays its own kernel, and the bias, residual add and ReLU after a conv fuse into
``winograd_output``.

    >>> get("winograd_input").infer_type([TensorType((1, 4, 56, 56, 16))],
    ...                                  {"pads": (1, 1, 1, 1)})
    Tensor((16, 1, 4, 28, 28, 16), "float32")

The numpy references compute the same transforms with ``einsum`` over the matrices, apart
from the loop IR's select chains.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpShapeError
from ..te.ops import winograd as te_winograd
from ..te.ops.winograd import ALPHA, AT, BT, M, R, tiles
from ._infer import FLOATS, ints, require_dtype, same_dtype
from .registry import REQUIRED, OpKind, register, register_legalization
from .types import TensorType

_POSITIONS = ALPHA * ALPHA


def _input_infer(types, attrs):
    (x,) = types
    require_dtype("winograd_input", x, FLOATS)
    pt, pl, pb, pr = ints("winograd_input", "pads", attrs["pads"], 4)
    if x.ndim != 5:
        raise OpShapeError(f"winograd_input: data must be (N, C/c, H, W, c), got {x.shape}")
    n, cb, h, w, c = x.shape
    oh, ow = h + pt + pb - R + 1, w + pl + pr - R + 1
    if oh < 1 or ow < 1:
        raise OpShapeError(f"winograd_input: a 3x3 window does not fit in {h}x{w} with pads "
                           f"{(pt, pl, pb, pr)}")
    return TensorType((_POSITIONS, n, cb, tiles(oh), tiles(ow), c), x.dtype)


def _input_ref(x, pads):
    pt, pl, pb, pr = pads
    n, cb, h, w, c = x.shape
    th, tw = tiles(h + pt + pb - R + 1), tiles(w + pl + pr - R + 1)
    rows, cols = M * th + ALPHA - M, M * tw + ALPHA - M
    xp = np.zeros((n, cb, rows, cols, c), x.dtype)   # the tiles cover pt + h + pb rows or more
    xp[:, :, pt:pt + h, pl:pl + w] = x
    d = np.stack([np.stack([xp[:, :, i:i + M * th:M, j:j + M * tw:M] for j in range(ALPHA)], -1)
                  for i in range(ALPHA)], -2)                      # (n, cb, th, tw, c, 4, 4)
    v = np.einsum("ei,fj,nbyxcij->efnbyxc", BT, BT, d.astype(np.float64))
    return v.reshape(_POSITIONS, *v.shape[2:]).astype(x.dtype)


register("winograd_input", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_input_infer,
         reference=_input_ref, attrs={"pads": REQUIRED},
         doc="Winograd F(2x2, 3x3) input transform: NCHW[c]c data -> (16, N, C/c, TH, TW, c)")


def _product_infer(types, attrs):
    v, u = types
    same_dtype("winograd_product", types)
    if v.ndim != 6 or u.ndim != 5 or (u.shape[0], u.shape[2], u.shape[3]) != (
            v.shape[0], v.shape[2], v.shape[5]):
        raise OpShapeError(f"winograd_product: v must be (16, N, C/c, TH, TW, c) and u "
                           f"(16, K/k, C/c, c, k) with the same 16, C/c and c; got {v.shape} "
                           f"and {u.shape}")
    p, n, _, th, tw, _ = v.shape
    return TensorType((p, n, u.shape[1], th, tw, u.shape[4]), v.dtype)


def _product_ref(v, u):
    return np.einsum("pnbyxc,pkbco->pnkyxo", v, u)


register("winograd_product", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_product_infer,
         reference=_product_ref, num_inputs=(2, 2),
         doc="Winograd product: per tile position, the sum over input channels of V x U")


def _output_infer(types, attrs):
    (m,) = types
    oh, ow = ints("winograd_output", "out_hw", attrs["out_hw"], 2)
    if m.ndim != 6 or m.shape[0] != _POSITIONS or m.shape[3:5] != (tiles(oh), tiles(ow)):
        raise OpShapeError(f"winograd_output: m must be (16, N, K/k, TH, TW, k) with tiles of "
                           f"2x2 covering out_hw {(oh, ow)}, got {m.shape}")
    return TensorType((m.shape[1], m.shape[2], oh, ow, m.shape[5]), m.dtype)


def _output_ref(m, out_hw):
    _, n, kb, th, tw, k = m.shape
    y = np.einsum("ye,xf,efnbstk->nbsytxk", AT, AT,
                  m.reshape(ALPHA, ALPHA, n, kb, th, tw, k).astype(np.float64))
    y = y.reshape(n, kb, M * th, M * tw, k)
    return np.ascontiguousarray(y[:, :, :out_hw[0], :out_hw[1]]).astype(m.dtype)


register("winograd_output", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_output_infer,
         reference=_output_ref, attrs={"out_hw": REQUIRED},
         doc="Winograd output transform: (16, N, K/k, TH, TW, k) -> NCHW[k]c, cropped to out_hw")


@register_legalization("winograd_input")
def _lower_input(ins, attrs, out_type):
    return te_winograd.winograd_input(ins[0], attrs["pads"], name="winograd_input")


@register_legalization("winograd_product")
def _lower_product(ins, attrs, out_type):
    return te_winograd.winograd_product(ins[0], ins[1], name="winograd_product")


@register_legalization("winograd_output")
def _lower_output(ins, attrs, out_type):
    return te_winograd.winograd_output(ins[0], attrs["out_hw"], name="winograd_output")
