"""Converters of ONNX's quantization ops that need more than their declaration
(:mod:`mlcbook.ops.quant`, which gives ``QLinearMatMul``'s and ``QLinearConv``'s):
``QuantizeLinear``, ``DequantizeLinear``, ``MatMulInteger`` and ``ConvInteger``. When their
weights are constants, ``mb.compile`` (opt_level >= 1) runs the four integer products on the
int8 kernels of quantized models (:mod:`mlcbook.graph.passes.integer_ops`).

An absent zero point is a constant 0 (of ``uint8`` for QuantizeLinear, as ONNX says, or of
its operand's dtype), so every graph op takes all of its inputs. The low-bit types (float8,
float4, int4, int2) are composed of graph ops around ``lowbit_decode``/``lowbit_encode``
(:mod:`mlcbook.ops.lowbit`). Blocked quantization (``block_size``), 16-bit element types
and ``precision`` are not supported.

    >>> sorted(CONVERTERS["QuantizeLinear"].attrs)
    ['axis', 'block_size', 'output_dtype', 'saturate']
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidModelError
from ..graph.expr import Constant
from ..ops import get as get_op
from ..ops.nn import check_auto_pad
from ..ops.types import LOWBIT_DTYPES
from ..te.ops.lowbit import FORMATS
from .onnx_context import Unsupported, onnx_dtype
from .onnx_ops import converter, guard_dtype


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
    zp = _input(ins, 2)
    if zp is not None:
        dtype = zp.dtype
    elif attrs.get("output_dtype"):
        dtype = onnx_dtype(attrs["output_dtype"], "the output_dtype")
    else:
        dtype = "uint8"
    if dtype in LOWBIT_DTYPES:
        return _quantize_lowbit(cx, ins[0], ins[1], zp, dtype, attrs)
    return cx.call("quantize_linear", ins[0], ins[1], _or_zero(zp, dtype),
                   axis=attrs.get("axis", 1))


@converter("DequantizeLinear", attrs=("axis", "block_size"), check=_check_block)
@guard_dtype
def _dequantize(cx, ins, attrs):
    if ins[0].dtype in LOWBIT_DTYPES:
        return _dequantize_lowbit(cx, ins[0], ins[1], _input(ins, 2), attrs.get("axis", 1))
    zp = _or_zero(ins[2] if len(ins) > 2 else None, ins[0].dtype)
    return cx.call("dequantize_linear", ins[0], ins[1], zp, axis=attrs.get("axis", 1))


# --- the low-bit types: graph ops around lowbit_decode / lowbit_encode ----------------------------
def _along(cx, p, x, axis: int, suffix: str):
    """A scale or zero point shaped to broadcast against ``x``: one value, or one per index
    of ``axis``."""
    if p.type.size == 1:
        return cx.call("reshape", p, shape=(), suffix=suffix)
    ndim = len(x.shape)
    axis %= max(ndim, 1)
    shape = [1] * ndim
    shape[axis] = p.type.size
    return cx.call("reshape", p, shape=tuple(shape), suffix=suffix)


def _float32(cx, v, suffix: str):
    return v if v.dtype == "float32" else cx.call("cast", v, dtype="float32", suffix=suffix)


def _check_float8_zero(cx, zp, dtype: str) -> None:
    """Refuse a float8 zero point known at import that is not all 0 (ONNX requires 0; the
    conversion does not read it). One computed at run time cannot be checked here."""
    if zp is None or FORMATS[dtype].kind != "float" or dtype == "float4_e2m1fn":
        return
    name = cx.node.input[2]
    try:
        value = cx.static(2)
    except Unsupported:
        return
    values = np.asarray(value, np.float32)
    if np.all(values == 0):
        return
    bad = values[values != 0]
    raise InvalidModelError(
        f"{cx.node.op_type}: the zero point {name!r} of the {dtype} tensor holds "
        f"{bad.ravel()[:4].tolist()}{' ...' if bad.size > 4 else ''}, but ONNX requires a "
        f"float8 zero point to be 0. Instead: drop the zero point (or make it 0) and fold "
        "any offset into the values before quantizing")


def _quantize_lowbit(cx, x, scale, zp, dtype: str, attrs):
    """ONNX's QuantizeLinear to a low-bit type: ``x / scale`` (in float16 when both are),
    then for the integers rounded (ties to even), plus the zero point, clamped; for float8
    converted as Cast converts (the zero point must be 0); for FLOAT4E2M1 plus the zero
    point, converted."""
    kind = FORMATS[dtype].kind   # not E8M0: onnx's checker refuses it here
    _check_float8_zero(cx, zp, dtype)
    axis = attrs.get("axis", 1)
    if x.dtype != scale.dtype:
        x, scale = _float32(cx, x, "_x"), _float32(cx, scale, "_scale")
    q = cx.call("div", x, _along(cx, scale, x, axis, "_scale_b"), suffix="_div")
    if kind == "int":
        q = _float32(cx, cx.call("round", q, suffix="_round"), "_round32")
    else:
        q = _float32(cx, q, "_div32")
    if zp is not None and (kind == "int" or dtype == "float4_e2m1fn"):
        z = cx.call("lowbit_decode", zp, format=dtype, suffix="_zp")
        q = cx.call("add", q, _along(cx, z, x, axis, "_zp_b"), suffix="_add")
    if kind == "int":
        f = FORMATS[dtype]
        lo, hi = (-(1 << (f.bits - 1)), f.max_code) if f.signed else (0, f.max_code)
        q = cx.call("clip", q, min=float(lo), max=float(hi), suffix="_clip")
    return cx.call("lowbit_encode", q, format=dtype, saturate=bool(attrs.get("saturate", 1)))


def _dequantize_lowbit(cx, x, scale, zp, axis: int):
    """ONNX's DequantizeLinear of a low-bit tensor: ``(x - zero_point) * scale`` in float32
    (a float8 zero point must be 0 and is not read), in the scale's dtype."""
    _check_float8_zero(cx, zp, x.dtype)
    dx = cx.call("lowbit_decode", x, format=x.dtype, suffix="_decode")
    if zp is not None and FORMATS[x.dtype].kind != "float":
        z = cx.call("lowbit_decode", zp, format=zp.dtype, suffix="_zp")
        dx = cx.call("sub", dx, _along(cx, z, x, axis, "_zp_b"), suffix="_sub")
    y = cx.call("mul", dx, _along(cx, _float32(cx, scale, "_scale"), x, axis, "_scale_b"),
                suffix="" if scale.dtype == "float32" else "_mul")
    return y if scale.dtype == "float32" else cx.call("cast", y, dtype=scale.dtype)


def _input(ins, k):
    return ins[k] if len(ins) > k else None


@converter("MatMulInteger")
@guard_dtype
def _matmul_integer(cx, ins, attrs):
    a, b = ins[0], ins[1]
    return cx.call("matmul_integer", a, b, _or_zero(_input(ins, 2), a.dtype),
                   _or_zero(_input(ins, 3), b.dtype))


@converter("ConvInteger", attrs=("auto_pad", "dilations", "group", "kernel_shape", "pads",
                                 "strides"), check=check_auto_pad)
@guard_dtype
def _conv_integer(cx, ins, attrs):
    # the window attributes are Conv's (auto_pad made pads; kernel_shape the weight's)
    x, w = ins[0], ins[1]
    window = get_op("conv").onnx_attrs.derive(attrs, [x.type, w.type], ())
    return cx.call("conv_integer", x, w, _or_zero(_input(ins, 2), x.dtype),
                   _or_zero(_input(ins, 3), w.dtype), group=attrs.get("group", 1), **window)


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
