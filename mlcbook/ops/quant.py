"""Quantization ops, ONNX's: ``quantize_linear``, ``dequantize_linear``, ``matmul_integer``,
``conv_integer``, ``qlinear_matmul`` and ``qlinear_conv``, each declared once from its te
compute (:mod:`mlcbook.te.ops.quant`, :mod:`.declare`); the checks below refuse the dtypes
the graph does not take (the computes check the shapes).

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
from . import declare
from ._infer import FLOATS, norm_axis, require_dtype
from .linalg import matmul_shape
from .nn import check_auto_pad
from .registry import OpKind, get
from .types import TensorType

QTYPES = ("int8", "uint8")
#: what QuantizeLinear / DequantizeLinear convert to and from (ONNX also allows 16 bits)
LINEAR_QTYPES = QTYPES + ("int16", "uint16")


def _check_param(op: str, p: TensorType, x: TensorType, axis: int | None, what: str,
                 dtypes) -> None:
    require_dtype(op, p, dtypes, what)
    TQ.check_param(what, p.shape, x.shape, axis)


def _axis(op: str, axis: int, x: TensorType, *params: TensorType) -> int | None:
    """``axis`` made non-negative, or None when every parameter is one value (ONNX ignores
    the axis then, even one out of range)."""
    if all(p.size == 1 and p.ndim <= 1 for p in params):
        return None
    return norm_axis(op, axis, max(x.ndim, 1))


def _elementwise_empty(dtype_from: int):
    """An ``empty`` rule: a tensor of no elements converts to one of its shape, in the dtype
    of input ``dtype_from`` (the per-axis parameters need not broadcast against it)."""
    def empty(types, attrs, arrays):
        x = types[0]
        return np.empty(x.shape, types[dtype_from].dtype) if 0 in x.shape else None
    return empty


# --- quantize_linear, dequantize_linear -----------------------------------------------------------
def _quantize_check(types, attrs):
    x, s, zp = types
    require_dtype("quantize_linear", x, FLOATS)
    axis = _axis("quantize_linear", attrs["axis"], x, s, zp)
    _check_param("quantize_linear", s, x, axis, "scale", FLOATS)
    _check_param("quantize_linear", zp, x, axis, "zero point", LINEAR_QTYPES)


declare.op("quantize_linear", TQ.quantize_linear, kind=OpKind.BROADCAST, attrs={"axis": 1},
           num_inputs=(3, 3), check=_quantize_check, empty=_elementwise_empty(2),
           onnx="QuantizeLinear",
           doc="saturate(rint(x / scale) + zero_point), in the zero point's dtype")


def _dequantize_check(types, attrs):
    x, s, zp = types
    require_dtype("dequantize_linear", x, LINEAR_QTYPES + ("int32",))
    axis = _axis("dequantize_linear", attrs["axis"], x, s, zp)
    _check_param("dequantize_linear", s, x, axis, "scale", FLOATS)
    _check_param("dequantize_linear", zp, x, axis, "zero point", (x.dtype,))


declare.op("dequantize_linear", TQ.dequantize_linear, kind=OpKind.BROADCAST, attrs={"axis": 1},
           num_inputs=(3, 3), check=_dequantize_check, empty=_elementwise_empty(1),
           onnx="DequantizeLinear", doc="(x - zero_point) * scale, in the scale's dtype")


# --- integer products -----------------------------------------------------------------------------
def _matmul_shape(op, a: TensorType, b: TensorType):
    if a.ndim < 2 or b.ndim < 2:
        raise OpShapeError(f"{op}: both operands must have at least 2 dimensions, got "
                           f"{a.shape} and {b.shape}")
    return matmul_shape(a.shape, b.shape)


def _operands(types) -> tuple[TensorType, TensorType]:
    """The data and the weight of an integer product (a QLinear op's are inputs 0 and 3)."""
    return (types[0], types[1]) if len(types) == 4 else (types[0], types[3])


def _matmul_empty(types, attrs, arrays):
    """A product over no terms is 0 (requantized: the output zero point); one with no rows
    or columns is empty."""
    if not any(0 in t.shape for t in types):
        return None
    shape = matmul_shape(*(t.shape for t in _operands(types)))
    if len(types) == 4:
        return np.zeros(shape, np.int32)
    zp = 0 if arrays is None else arrays[7].reshape(-1)[0]
    return np.full(shape, zp, types[7].dtype)


def _matmul_integer_check(types, attrs):
    a, b, azp, bzp = types
    require_dtype("matmul_integer", a, QTYPES, "first operand")
    require_dtype("matmul_integer", b, QTYPES, "second operand")
    _check_param("matmul_integer", azp, a, a.ndim - 2, "first zero point", (a.dtype,))
    _check_param("matmul_integer", bzp, b, b.ndim - 1, "second zero point", (b.dtype,))
    _matmul_shape("matmul_integer", a, b)


declare.op("matmul_integer", TQ.matmul_integer, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           num_inputs=(4, 4), check=_matmul_integer_check, empty=_matmul_empty,
           onnx="MatMulInteger", doc="(a - a_zero_point) @ (b - b_zero_point) in int32")

_CONV_ATTRS = {"strides": None, "pads": None, "dilations": None, "group": 1,
               "kernel_shape": None}


def _conv_integer_check(types, attrs):
    x, w, xzp, wzp = types
    require_dtype("conv_integer", x, QTYPES, "data")
    require_dtype("conv_integer", w, QTYPES, "weight")
    _check_param("conv_integer", xzp, x, None, "data zero point", (x.dtype,))
    _check_param("conv_integer", wzp, w, 0, "weight zero point", (w.dtype,))


declare.op("conv_integer", TQ.conv_integer, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs=_CONV_ATTRS, num_inputs=(4, 4), check=_conv_integer_check,
           empty=declare.empty_batch("conv_integer"), onnx="ConvInteger",
           doc="conv(x - x_zero_point, w - w_zero_point) in int32")


# --- qlinear_matmul, qlinear_conv -----------------------------------------------------------------
def _qlinear_params(op, x, xs, xzp, w, ws, wzp, ys, yzp, w_axis):
    require_dtype(op, x, QTYPES, "first operand")
    require_dtype(op, w, QTYPES, "second operand")
    for p, what in ((xs, "first scale"), (ys, "output scale")):
        _check_param(op, p, x, None, what, FLOATS)
    _check_param(op, xzp, x, None, "first zero point", (x.dtype,))
    _check_param(op, yzp, x, None, "output zero point", QTYPES)
    _check_param(op, ws, w, w_axis, "second scale", FLOATS)
    _check_param(op, wzp, w, w_axis, "second zero point", (w.dtype,))


def _qlinear_matmul_check(types, attrs):
    a, as_, azp, b, bs, bzp, ys, yzp = types
    _qlinear_params("qlinear_matmul", a, as_, azp, b, bs, bzp, ys, yzp, b.ndim - 1)
    _matmul_shape("qlinear_matmul", a, b)


declare.op("qlinear_matmul", TQ.qlinear_matmul, kind=OpKind.OPAQUE, num_inputs=(8, 8),
           check=_qlinear_matmul_check, empty=_matmul_empty, onnx="QLinearMatMul",
           doc="matmul_integer requantized: rint(acc * a_scale * b_scale / y_scale) + y_zero_point")


def _qlinear_conv_check(types, attrs):
    x, xs, xzp, w, ws, wzp, ys, yzp = types[:8]
    _qlinear_params("qlinear_conv", x, xs, xzp, w, ws, wzp, ys, yzp, 0)
    if len(types) == 9:
        require_dtype("qlinear_conv", types[8], ("int32",), "bias")


def _onnx_qlinear_conv_window(attrs, types, used):
    """QLinearConv's window attributes are Conv's, of its data and its weight (input 3)."""
    return get("conv").onnx_attrs.derive(attrs, [types[0], types[3]], used)


declare.op("qlinear_conv", TQ.qlinear_conv, kind=OpKind.OPAQUE, attrs=_CONV_ATTRS,
           num_inputs=(8, 9), check=_qlinear_conv_check,
           empty=declare.empty_batch("qlinear_conv"), onnx="QLinearConv",
           onnx_attrs=declare.OnnxAttrs(onnx_only=("auto_pad",), check=check_auto_pad,
                                        derive=_onnx_qlinear_conv_window),
           doc="conv_integer (+ int32 bias) requantized with x_scale * w_scale / y_scale")
