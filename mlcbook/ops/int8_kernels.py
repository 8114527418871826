"""The integer kernel ops quantized models are rewritten to (QDQ groups by
:mod:`mlcbook.graph.passes.qdq`, ONNX's integer ops by :mod:`mlcbook.graph.passes.integer_ops`):
``int8_dense`` and ``int8_conv2d``. Unlike ONNX's QLinear ops they take their weights packed
for the dot-product instructions (:func:`~mlcbook.te.ops.int8_kernels.pack_int8`,
:func:`~mlcbook.te.ops.int8_kernels.pack_conv_int8`), an int32
bias that already holds the activation zero point's correction, and one float32
requantization multiplier per output channel (``dtype="int32"``: the int32 sums plus the
bias, unscaled, as MatMulInteger outputs them); see :mod:`mlcbook.te.ops.int8_kernels`.

    >>> wp = pack_int8(w)                                  # w (10, 64) int8
    >>> get("int8_dense").infer_type([TensorType((4, 64), "uint8"), type_of_array(wp),
    ...     TensorType((10,), "int32"), TensorType((10,))], {"units": 10})
    Tensor((4, 10), "uint8")
"""

from __future__ import annotations

import numpy as np

from ..te.ops import int8_kernels as TK
from ..te.ops.int8_kernels import (OUT_DTYPES, PACK_LANES, conv_row_terms, pack_conv_int8,
                                   pack_int8)
from . import declare
from ._infer import require_dtype
from .registry import REQUIRED, OpKind

__all__ = ["pack_int8", "pack_conv_int8", "unpack_int8", "unpack_conv_int8", "OUT_DTYPES"]


def unpack_int8(wp: np.ndarray, n: int, k: int) -> np.ndarray:
    """The ``(n, k)`` int8 weights ``wp`` was packed from."""
    nb, kb = wp.shape[:2]
    return wp.transpose(0, 2, 1, 3).reshape(nb * PACK_LANES, kb * 4)[:n, :k]


def unpack_conv_int8(wp: np.ndarray, channels: int, c: int, kernel_shape) -> np.ndarray:
    """The conv weights ``(channels, c, KH, KW)`` that :func:`pack_conv_int8` packed into
    ``wp``."""
    kh, kw = kernel_shape
    rows = unpack_int8(wp, channels, kh * conv_row_terms(c, kw)).reshape(channels, kh, -1)
    return rows[..., :kw * c].reshape(channels, kh, kw, c).transpose(0, 3, 1, 2)


def _check(op: str):
    """The inputs' dtypes (the compute checks the shapes and the attributes)."""
    def check(types, attrs):
        x, wp, bias, mult = types
        require_dtype(op, x, ("uint8",), "data")
        require_dtype(op, wp, ("int8",), "packed weight")
        require_dtype(op, bias, ("int32",), "bias")
        require_dtype(op, mult, ("float32",), "multiplier")
    return check

#: ``narrow=1`` says the weights pass pairs_fit_int16 (the qdq pass sets it only after
#: checking the constant weights); it picks the schedule's kernel, not the result
_EPILOGUE = {"x_zp": 0, "y_zp": 0, "dtype": "uint8", "relu": 0, "narrow": 0}


declare.op("int8_dense", TK.int8_dense, kind=OpKind.OPAQUE,
           attrs={"units": REQUIRED, **_EPILOGUE}, num_inputs=(4, 4),
           check=_check("int8_dense"),
           doc="uint8 x @ int8 W.T + bias in int32, requantized (W packed by pack_int8)")

_WINDOW = {"kernel_shape": REQUIRED, "strides": (1, 1), "pads": (0, 0, 0, 0),
           "dilations": (1, 1)}


def _conv(x, wp, bias, mult, *, kernel_shape, strides, pads, dilations, pool, **attrs):
    return TK.int8_conv2d(x, wp, bias, mult, kernel_shape=tuple(kernel_shape),
                          strides=tuple(strides), pads=tuple(pads),
                          dilations=tuple(dilations), pool=tuple(pool), **attrs)


declare.op("int8_conv2d", _conv, kind=OpKind.OPAQUE,
           attrs={"channels": REQUIRED, **_WINDOW, **_EPILOGUE, "layout": "NCHW",
                  "pool": (1, 1), "pixels": 1},
           num_inputs=(4, 4), check=_check("int8_conv2d"),
           doc="2-D conv of uint8 data (NCHW, or NHWC with layout='NHWC') with int8 weights "
               "packed by pack_conv_int8, int32 sums requantized (pool: the largest sum of "
               "each window; pixels: neighbouring pixels per column)")
