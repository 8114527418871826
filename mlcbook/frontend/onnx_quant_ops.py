"""Converters of ONNX's quantization ops: ``QuantizeLinear``, ``DequantizeLinear``,
``MatMulInteger``, ``ConvInteger``, ``QLinearMatMul`` and ``QLinearConv``, onto the ops of
:mod:`mlcbook.ops.quant`.

An absent zero point is a constant 0 (of ``uint8`` for QuantizeLinear, as ONNX says, or of
its operand's dtype), so every graph op takes all of its inputs. Blocked quantization
(``block_size``), float8/int4/16-bit element types and ``precision`` are not supported.

    >>> sorted(CONVERTERS["QuantizeLinear"].attrs)
    ['axis', 'block_size', 'output_dtype', 'saturate']
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from .onnx_context import Unsupported, onnx_dtype
from .onnx_ops import converter, guard_dtype, pool_window


def _check_block(attrs):
    return [f"block_size={attrs['block_size']} (blocked quantization) is not supported"] \
        if attrs.get("block_size", 0) else []


def _zero(dtype: str) -> Constant:
    return Constant(np.zeros((), dtype))


def _or_zero(x, dtype: str):
    return x if x is not None else _zero(dtype)


@converter("QuantizeLinear", attrs=("axis", "block_size", "output_dtype", "saturate"),
           check=_check_block)
@guard_dtype
def _quantize(cx, ins, attrs):
    dtype = onnx_dtype(attrs["output_dtype"], "the output_dtype") \
        if attrs.get("output_dtype") else "uint8"
    zp = _or_zero(ins[2] if len(ins) > 2 else None, dtype)
    return cx.call("quantize_linear", ins[0], ins[1], zp, axis=attrs.get("axis", 1))


@converter("DequantizeLinear", attrs=("axis", "block_size"), check=_check_block)
@guard_dtype
def _dequantize(cx, ins, attrs):
    zp = _or_zero(ins[2] if len(ins) > 2 else None, ins[0].dtype)
    return cx.call("dequantize_linear", ins[0], ins[1], zp, axis=attrs.get("axis", 1))


def _input(ins, k):
    return ins[k] if len(ins) > k else None


@converter("MatMulInteger")
@guard_dtype
def _matmul_integer(cx, ins, attrs):
    a, b = ins[0], ins[1]
    return cx.call("matmul_integer", a, b, _or_zero(_input(ins, 2), a.dtype),
                   _or_zero(_input(ins, 3), b.dtype))


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def _conv_attrs(x, w, attrs) -> dict:
    kernel = tuple(attrs.get("kernel_shape") or w.shape[2:])
    return dict(group=attrs.get("group", 1), kernel_shape=kernel,
                **pool_window(x, attrs, kernel))


@converter("ConvInteger", attrs=_CONV_ATTRS)
@guard_dtype
def _conv_integer(cx, ins, attrs):
    x, w = ins[0], ins[1]
    return cx.call("conv_integer", x, w, _or_zero(_input(ins, 2), x.dtype),
                   _or_zero(_input(ins, 3), w.dtype), **_conv_attrs(x, w, attrs))


@converter("QLinearMatMul")
@guard_dtype
def _qlinear_matmul(cx, ins, attrs):
    return cx.call("qlinear_matmul", *ins[:8])


@converter("QLinearConv", attrs=_CONV_ATTRS)
@guard_dtype
def _qlinear_conv(cx, ins, attrs):
    args = [a for a in ins[:9] if a is not None]
    return cx.call("qlinear_conv", *args, **_conv_attrs(ins[0], ins[3], attrs))


@converter("DynamicQuantizeLinear", outputs=3)
@guard_dtype
def _dynamic_quantize(cx, ins, attrs):
    # uint8 over [min(x, 0), max(x, 0)]: scale = range / 255 (1 / 255 for a zero range), the
    # zero point maps min to 0, clipped to [0, 255] and rounded half to even, as is x / scale
    x = ins[0]
    if x.dtype != "float32":
        raise Unsupported(f"DynamicQuantizeLinear of {x.dtype} (ONNX defines it for float32)")
    zero, one = Constant(np.float32(0)), Constant(np.float32(1))
    hi = cx.call("maximum", cx.call("max", x, keepdims=0, suffix="_max"), zero, suffix="_hi")
    lo = cx.call("minimum", cx.call("min", x, keepdims=0, suffix="_min"), zero, suffix="_lo")
    span = cx.call("sub", hi, lo, suffix="_span")
    span = cx.call("where", cx.call("equal", span, zero, suffix="_flat"), one, span,
                   suffix="_range")
    scale = cx.call("div", span, Constant(np.float32(255)), suffix="_scale")
    zp = cx.call("clip", cx.call("div", cx.call("neg", lo, suffix="_neg"), scale,
                                 suffix="_zp_raw"), min=0.0, max=255.0, suffix="_zp_clip")
    zp = cx.call("round", zp, suffix="_zp")
    q = cx.call("add", cx.call("round", cx.call("div", x, scale, suffix="_scaled"),
                               suffix="_rounded"), zp, suffix="_shifted")
    q = cx.call("clip", q, min=0.0, max=255.0, suffix="_clipped")
    return (cx.call("cast", q, dtype="uint8"), scale,
            cx.call("cast", zp, dtype="uint8", suffix="_zero_point"))
