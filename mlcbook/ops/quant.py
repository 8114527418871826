"""Quantization ops, ONNX's: ``quantize_linear``, ``dequantize_linear``, ``matmul_integer``,
``conv_integer``, ``qlinear_matmul`` and ``qlinear_conv``, with their numpy references and
their legalizations to :mod:`mlcbook.te.ops.quant`.

Scales and zero points are inputs (constants, in a quantized model): one value (shape ``()``
or ``(1,)``) or one per index of an axis (``quantize_linear``'s ``axis``; the columns of a
matmul's second operand; a conv's output channels). Every op rounds as onnxruntime does, to
the nearest integer with ties to even, and saturates to the output dtype.

    >>> get("quantize_linear").infer_type([TensorType((2, 3)), TensorType(()),
    ...                                    TensorType((), "int8")], {})
    Tensor((2, 3), "int8")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpShapeError
from ..te.ops import quant as TQ
from ._infer import FLOATS, norm_axis, require_dtype
from .linalg import matmul_shape
from .registry import OpKind, get, register, register_legalization
from .types import TensorType

QTYPES = ("int8", "uint8")
#: what QuantizeLinear / DequantizeLinear convert to and from (ONNX also allows 16 bits)
LINEAR_QTYPES = QTYPES + ("int16", "uint16")


def _check_param(op: str, p: TensorType, x: TensorType, axis: int | None, what: str,
                 dtypes) -> None:
    require_dtype(op, p, dtypes, what)
    if p.size == 1 and p.ndim <= 1:
        return
    if axis is None or p.ndim != 1 or p.shape[0] != x.shape[axis]:
        per = "" if axis is None else f", or ({x.shape[axis]},): one per index of axis {axis}"
        raise OpShapeError(f"{op}: the {what} has shape {p.shape}; it must be one value{per} "
                           f"of the tensor {x.shape}")


def _per(p: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """A scale or zero point shaped to broadcast against a rank-``ndim`` tensor."""
    if p.size == 1:
        return p.reshape(())
    shape = [1] * ndim
    shape[axis] = -1
    return p.reshape(shape)


def _axis(op: str, axis: int, x: TensorType, *params: TensorType) -> int | None:
    """``axis`` made non-negative, or None when every parameter is one value (ONNX ignores
    the axis then, even one out of range)."""
    if all(p.size == 1 and p.ndim <= 1 for p in params):
        return None
    return norm_axis(op, axis, max(x.ndim, 1))


def _rint_saturate(v: np.ndarray, dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


# --- quantize_linear, dequantize_linear -----------------------------------------------------------
def _quantize_infer(types, attrs):
    x, s, zp = types
    require_dtype("quantize_linear", x, FLOATS)
    axis = _axis("quantize_linear", attrs["axis"], x, s, zp)
    _check_param("quantize_linear", s, x, axis, "scale", FLOATS)
    _check_param("quantize_linear", zp, x, axis, "zero point", LINEAR_QTYPES)
    return TensorType(x.shape, zp.dtype)


def _quantize_ref(x, scale, zp, axis=1):
    axis = axis % max(x.ndim, 1)
    q = np.rint(x.astype(np.float32) / _per(scale.astype(np.float32), x.ndim, axis))
    return _rint_saturate(q + _per(zp, x.ndim, axis).astype(np.float32), zp.dtype)


register("quantize_linear", kind=OpKind.BROADCAST, infer=_quantize_infer,
         reference=_quantize_ref, attrs={"axis": 1}, num_inputs=(3, 3),
         doc="saturate(rint(x / scale) + zero_point), in the zero point's dtype")


def _dequantize_infer(types, attrs):
    x, s, zp = types
    require_dtype("dequantize_linear", x, LINEAR_QTYPES + ("int32",))
    axis = _axis("dequantize_linear", attrs["axis"], x, s, zp)
    _check_param("dequantize_linear", s, x, axis, "scale", FLOATS)
    _check_param("dequantize_linear", zp, x, axis, "zero point", (x.dtype,))
    return TensorType(x.shape, s.dtype)


def _dequantize_ref(x, scale, zp, axis=1):
    axis = axis % max(x.ndim, 1)
    q = (x.astype(np.int64) - _per(zp, x.ndim, axis).astype(np.int64)).astype(np.float32)
    return (q * _per(scale.astype(np.float32), x.ndim, axis)).astype(scale.dtype)


register("dequantize_linear", kind=OpKind.BROADCAST, infer=_dequantize_infer,
         reference=_dequantize_ref, attrs={"axis": 1}, num_inputs=(3, 3),
         doc="(x - zero_point) * scale, in the scale's dtype")


# --- integer products -----------------------------------------------------------------------------
def _matmul_shape(op, a: TensorType, b: TensorType):
    if a.ndim < 2 or b.ndim < 2:
        raise OpShapeError(f"{op}: both operands must have at least 2 dimensions, got "
                           f"{a.shape} and {b.shape}")
    return matmul_shape(a.shape, b.shape)


def _matmul_integer_infer(types, attrs):
    a, b, azp, bzp = types
    require_dtype("matmul_integer", a, QTYPES, "first operand")
    require_dtype("matmul_integer", b, QTYPES, "second operand")
    _check_param("matmul_integer", azp, a, a.ndim - 2, "first zero point", (a.dtype,))
    _check_param("matmul_integer", bzp, b, b.ndim - 1, "second zero point", (b.dtype,))
    return TensorType(_matmul_shape("matmul_integer", a, b), "int32")


def _matmul_integer_ref(a, b, azp, bzp):
    a32 = a.astype(np.int32) - _per(azp, a.ndim, a.ndim - 2).astype(np.int32)
    b32 = b.astype(np.int32) - _per(bzp, b.ndim, b.ndim - 1).astype(np.int32)
    return np.matmul(a32, b32)


register("matmul_integer", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_matmul_integer_infer,
         reference=_matmul_integer_ref, num_inputs=(4, 4),
         doc="(a - a_zero_point) @ (b - b_zero_point) in int32")

_CONV_ATTRS = {"strides": None, "pads": None, "dilations": None, "group": 1,
               "kernel_shape": None}


def _conv_shape(op, x: TensorType, w: TensorType, attrs):
    window = {k: attrs[k] for k in _CONV_ATTRS if k in attrs}
    return get("conv").infer_type([TensorType(x.shape), TensorType(w.shape)], window).shape


def _conv_integer_infer(types, attrs):
    x, w, xzp, wzp = types
    require_dtype("conv_integer", x, QTYPES, "data")
    require_dtype("conv_integer", w, QTYPES, "weight")
    _check_param("conv_integer", xzp, x, None, "data zero point", (x.dtype,))
    _check_param("conv_integer", wzp, w, 0, "weight zero point", (w.dtype,))
    return TensorType(_conv_shape("conv_integer", x, w, attrs), "int32")


def _conv_int32(x, w, xzp, wzp, bias=None, **window):
    x32 = x.astype(np.float64) - xzp.astype(np.float64).reshape(())
    w32 = w.astype(np.float64) - _per(wzp, w.ndim, 0).astype(np.float64)
    y = get("conv").reference(x32, w32, None if bias is None else bias.astype(np.float64),
                              **window)
    return y.astype(np.int32)   # exact: float64 holds these integer sums


def _conv_integer_ref(x, w, xzp, wzp, **window):
    return _conv_int32(x, w, xzp, wzp, **window)


register("conv_integer", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_conv_integer_infer,
         reference=_conv_integer_ref, attrs=_CONV_ATTRS, num_inputs=(4, 4),
         doc="conv(x - x_zero_point, w - w_zero_point) in int32")


# --- qlinear_matmul, qlinear_conv -----------------------------------------------------------------
def _multiplier(s_a, s_b, s_y) -> np.ndarray:
    f = np.float32
    return (f(s_a.reshape(-1)[0]) * s_b.astype(f)) / f(s_y.reshape(-1)[0])


def _qlinear_params(op, x, xs, xzp, w, ws, wzp, ys, yzp, w_axis):
    require_dtype(op, x, QTYPES, "first operand")
    require_dtype(op, w, QTYPES, "second operand")
    for p, what in ((xs, "first scale"), (ys, "output scale")):
        _check_param(op, p, x, None, what, FLOATS)
    _check_param(op, xzp, x, None, "first zero point", (x.dtype,))
    _check_param(op, yzp, x, None, "output zero point", QTYPES)
    _check_param(op, ws, w, w_axis, "second scale", FLOATS)
    _check_param(op, wzp, w, w_axis, "second zero point", (w.dtype,))


def _qlinear_matmul_infer(types, attrs):
    a, as_, azp, b, bs, bzp, ys, yzp = types
    _qlinear_params("qlinear_matmul", a, as_, azp, b, bs, bzp, ys, yzp, b.ndim - 1)
    return TensorType(_matmul_shape("qlinear_matmul", a, b), yzp.dtype)


def _qlinear_matmul_ref(a, as_, azp, b, bs, bzp, ys, yzp):
    acc = _matmul_integer_ref(a, b, azp, bzp)
    m = _per(_multiplier(as_, bs, ys), acc.ndim, acc.ndim - 1)
    v = np.rint(acc.astype(np.float32) * m) + np.float32(yzp.reshape(-1)[0])
    return _rint_saturate(v, yzp.dtype)


register("qlinear_matmul", kind=OpKind.OPAQUE, infer=_qlinear_matmul_infer,
         reference=_qlinear_matmul_ref, num_inputs=(8, 8),
         doc="matmul_integer requantized: rint(acc * a_scale * b_scale / y_scale) + y_zero_point")


def _qlinear_conv_infer(types, attrs):
    x, xs, xzp, w, ws, wzp, ys, yzp = types[:8]
    _qlinear_params("qlinear_conv", x, xs, xzp, w, ws, wzp, ys, yzp, 0)
    if len(types) == 9:
        require_dtype("qlinear_conv", types[8], ("int32",), "bias")
        if types[8].shape != (w.shape[0],):
            raise OpShapeError(f"qlinear_conv: the bias has shape {types[8].shape}, it must be "
                               f"({w.shape[0]},), one per output channel")
    return TensorType(_conv_shape("qlinear_conv", x, w, attrs), yzp.dtype)


def _qlinear_conv_ref(x, xs, xzp, w, ws, wzp, ys, yzp, bias=None, **window):
    acc = _conv_int32(x, w, xzp, wzp, bias, **window)
    m = _per(_multiplier(xs, ws, ys), acc.ndim, 1)
    v = np.rint(acc.astype(np.float32) * m) + np.float32(yzp.reshape(-1)[0])
    return _rint_saturate(v, yzp.dtype)


register("qlinear_conv", kind=OpKind.OPAQUE, infer=_qlinear_conv_infer,
         reference=_qlinear_conv_ref, attrs=_CONV_ATTRS, num_inputs=(8, 9),
         doc="conv_integer (+ int32 bias) requantized with x_scale * w_scale / y_scale")


# --- legalizations --------------------------------------------------------------------------------
def _window(attrs):
    return {k: attrs[k] for k in _CONV_ATTRS if k in attrs}


@register_legalization("quantize_linear")
def _legalize_quantize(ins, attrs, out_type):
    return TQ.quantize_linear(*ins, axis=attrs["axis"])


@register_legalization("dequantize_linear")
def _legalize_dequantize(ins, attrs, out_type):
    return TQ.dequantize_linear(*ins, axis=attrs["axis"])


@register_legalization("matmul_integer")
def _legalize_matmul_integer(ins, attrs, out_type):
    return TQ.matmul_integer(*ins)


@register_legalization("conv_integer")
def _legalize_conv_integer(ins, attrs, out_type):
    return TQ.conv_integer(*ins, **_window(attrs))


@register_legalization("qlinear_matmul")
def _legalize_qlinear_matmul(ins, attrs, out_type):
    return TQ.qlinear_matmul(*ins)


@register_legalization("qlinear_conv")
def _legalize_qlinear_conv(ins, attrs, out_type):
    return TQ.qlinear_conv(*ins, **_window(attrs))
