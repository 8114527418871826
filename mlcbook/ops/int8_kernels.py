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

from ..errors import OpShapeError
from ..te.ops import int8_kernels as TK
from ..te.ops.int8_kernels import PACK_LANES, conv_row_terms, pack_conv_int8, pack_int8
from . import declare
from ._infer import require_dtype
from .quant import QTYPES
from .registry import REQUIRED, OpKind, get
from .types import TensorType

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


def _check(op, types, n: int, k: int) -> None:
    x, wp, bias, mult = types
    require_dtype(op, x, ("uint8",), "data")
    require_dtype(op, wp, ("int8",), "packed weight")
    require_dtype(op, bias, ("int32",), "bias")
    require_dtype(op, mult, ("float32",), "multiplier")
    want = (-(-n // PACK_LANES), -(-k // 4), PACK_LANES, 4)
    if wp.shape != want or bias.shape != (n,) or mult.shape != (n,):
        raise OpShapeError(f"{op}: for {n} outputs over {k} terms the packed weight must be "
                           f"{want}, bias and multiplier ({n},); got {wp.shape}, {bias.shape}, "
                           f"{mult.shape}. Instead: pack the weights with pack_int8")


#: what the kernels output: requantized int8/uint8, or the int32 sums (plus bias) themselves
OUT_DTYPES = QTYPES + ("int32",)

#: ``narrow=1`` says the weights pass pairs_fit_int16 (the qdq pass sets it only after
#: checking the constant weights); it picks the schedule's kernel, not the result
_EPILOGUE = {"x_zp": 0, "y_zp": 0, "dtype": "uint8", "relu": 0, "narrow": 0}


def _check_dtype(op: str, dtype: str) -> None:
    if dtype not in OUT_DTYPES:
        raise OpShapeError(f"{op}: dtype={dtype!r} is not int8, uint8 or int32")


def _dense_check(types, attrs):
    x = types[0]
    if x.ndim != 2:
        raise OpShapeError(f"int8_dense: the data must be 2-D (M, K), got {x.shape}")
    _check("int8_dense", types, attrs["units"], x.shape[1])
    _check_dtype("int8_dense", attrs["dtype"])


declare.op("int8_dense", TK.int8_dense, kind=OpKind.OPAQUE,
           attrs={"units": REQUIRED, **_EPILOGUE}, num_inputs=(4, 4), check=_dense_check,
           doc="uint8 x @ int8 W.T + bias in int32, requantized (W packed by pack_int8)")

_WINDOW = {"kernel_shape": REQUIRED, "strides": (1, 1), "pads": (0, 0, 0, 0),
           "dilations": (1, 1)}


def _window(attrs) -> dict:
    return {k: tuple(attrs[k]) for k in _WINDOW}


def _conv_check(types, attrs):
    x, layout = types[0], attrs["layout"]
    if layout not in TK.CONV_LAYOUTS:
        raise OpShapeError(f"int8_conv2d: layout={layout!r} is not one of {TK.CONV_LAYOUTS}. "
                           "Instead: give NCHW data, or NHWC (channels last)")
    if x.ndim != 4:
        raise OpShapeError(f"int8_conv2d: the data must be 4-D ({', '.join(layout)}), got "
                           f"{x.shape}")
    nchw = tuple(x.shape[k] for k in (0, 3, 1, 2)) if layout == "NHWC" else x.shape
    kh, kw = attrs["kernel_shape"]
    _check("int8_conv2d", types, attrs["channels"], kh * conv_row_terms(nchw[1], kw))
    _check_dtype("int8_conv2d", attrs["dtype"])
    _, c, oh, ow = get("conv").infer_type([TensorType(nchw), TensorType(
        (attrs["channels"], nchw[1], kh, kw))], _window(attrs)).shape
    (ph, pw), p = attrs["pool"], attrs["pixels"]
    if (ph, pw, p) != (1, 1, 1) and (layout != "NHWC" or c % p or pw % p or
                                     min(ph, pw, p) < 1 or oh < ph or ow * p < pw):
        raise OpShapeError(f"int8_conv2d: pool={(ph, pw)} over pixels={p} needs layout='NHWC', "
                           f"channels in groups of {p} pixels, the pool's width a multiple of "
                           f"{p} and a whole window in the {oh}x{ow * p} output pixels; got "
                           f"layout={layout!r}, {c} channels. Instead: pool with max_pool")


def _conv(x, wp, bias, mult, *, kernel_shape, strides, pads, dilations, pool, **attrs):
    return TK.int8_conv2d(x, wp, bias, mult, kernel_shape=tuple(kernel_shape),
                          strides=tuple(strides), pads=tuple(pads),
                          dilations=tuple(dilations), pool=tuple(pool), **attrs)


declare.op("int8_conv2d", _conv, kind=OpKind.OPAQUE,
           attrs={"channels": REQUIRED, **_WINDOW, **_EPILOGUE, "layout": "NCHW",
                  "pool": (1, 1), "pixels": 1},
           num_inputs=(4, 4), check=_conv_check,
           doc="2-D conv of uint8 data (NCHW, or NHWC with layout='NHWC') with int8 weights "
               "packed by pack_conv_int8, int32 sums requantized (pool: the largest sum of "
               "each window; pixels: neighbouring pixels per column)")
