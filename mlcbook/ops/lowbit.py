"""Conversions of ONNX's low-bit element types (float8, float4, int4, int2), as graph ops:
``lowbit_decode`` (to float32) and ``lowbit_encode`` (from any number, as ONNX's Cast).

Graph values of these types are numpy arrays of ``ml_dtypes``' types; the loop IR stores
them one element per byte (uint8) and computes the conversions on the bit patterns
(:mod:`mlcbook.te.ops.lowbit`). Other ops move them as bytes (reshape, transpose, ...);
arithmetic on them is not defined, as in ONNX: decode first.

    >>> get("lowbit_encode").infer_type([TensorType((4,))], {"format": "float8_e4m3fn"})
    Tensor((4,), "float8_e4m3fn")

The numpy references are ``ml_dtypes``' conversions, clamped first where ``saturate``
says so, and onnx's own E8M0 conversion: independent of the loop-IR code they check.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, OpDTypeError
from ..te.ops import lowbit as TL
from .registry import OpKind, register, register_legalization
from .types import LOWBIT_DTYPES, TensorType


def _check_format(op: str, fmt) -> str:
    if fmt not in LOWBIT_DTYPES:
        raise OpAttributeError(f"{op}: format={fmt!r} is not a low-bit type; Instead: use "
                               f"one of {', '.join(LOWBIT_DTYPES)}")
    return fmt


def _decode_infer(types, attrs):
    x, fmt = types[0], _check_format("lowbit_decode", attrs["format"])
    if x.dtype != fmt:
        raise OpDTypeError(f"lowbit_decode: the input is {x.dtype} but format={fmt!r}; "
                           f"Instead: pass format={x.dtype!r} (the input's own type)")
    return TensorType(x.shape, "float32")


def _decode_ref(x, format):  # noqa: A002 - the attribute's name
    return x.astype(np.float32)


register("lowbit_decode", kind=OpKind.ELEMWISE, infer=_decode_infer, reference=_decode_ref,
         attrs={"format": None},
         doc="the float32 values of a low-bit tensor (format: its type, ml_dtypes' name)")


def _encode_infer(types, attrs):
    x, fmt = types[0], _check_format("lowbit_encode", attrs["format"])
    if x.dtype == "bool" or x.dtype in LOWBIT_DTYPES:
        raise OpDTypeError(f"lowbit_encode converts int and float tensors, got {x.dtype}; "
                           "Instead: lowbit_decode a low-bit tensor, cast a bool one, first")
    if attrs["round_mode"] not in TL.ROUND_MODES:
        raise OpAttributeError(f"lowbit_encode: round_mode={attrs['round_mode']!r} is not one "
                               f"of {', '.join(TL.ROUND_MODES)}")
    return TensorType(x.shape, fmt)


def _encode_ref(x, format, saturate=True, round_mode="up"):  # noqa: A002
    dtype = np.dtype(format)
    f = TL.FORMATS[format]
    with np.errstate(invalid="ignore", over="ignore"):
        if f.kind == "e8m0":
            from onnx.numpy_helper import to_float8e8m0
            return to_float8e8m0(x.astype(np.float32), bool(saturate), round_mode)
        if f.kind == "int":
            # a C cast to int32 truncates; ml_dtypes keeps the low bits
            v = np.where(np.isfinite(x), x, 0).astype(np.float64)
            return np.trunc(v).astype(np.int64).astype(dtype)
        if saturate:
            x = np.clip(x.astype(np.float64), -f.max_value, f.max_value)
        return x.astype(dtype)


register("lowbit_encode", kind=OpKind.ELEMWISE, infer=_encode_infer, reference=_encode_ref,
         attrs={"format": None, "saturate": True, "round_mode": "up"},
         doc="a tensor converted to a low-bit type as ONNX's Cast converts it")


@register_legalization("lowbit_decode")
def _decode(ins, attrs, out_type):
    return TL.decode(ins[0], attrs["format"], name="lowbit_decode")


@register_legalization("lowbit_encode")
def _encode(ins, attrs, out_type):
    return TL.encode(ins[0], attrs["format"], bool(attrs["saturate"]), attrs["round_mode"],
                     name="lowbit_encode")
