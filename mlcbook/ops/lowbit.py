"""Conversions of ONNX's low-bit element types (float8, float4, int4, int2), as graph ops:
``lowbit_decode`` (to float32) and ``lowbit_encode`` (from any number, as ONNX's Cast),
declared once from their te computes (:mod:`mlcbook.te.ops.lowbit`, :mod:`.declare`).

Graph values of these types are numpy arrays of ``ml_dtypes``' types; the loop IR stores
them one element per byte (uint8) and computes the conversions on the bit patterns. Other
ops move them as bytes (reshape, transpose, ...); arithmetic on them is not defined, as in
ONNX: decode first.

    >>> get("lowbit_encode").infer_type([TensorType((4,))], {"format": "float8_e4m3fn"})
    Tensor((4,), "float8_e4m3fn")
"""

from __future__ import annotations

from ..errors import OpDTypeError
from ..te.ops import lowbit as TL
from . import declare
from .registry import REQUIRED, OpKind
from .types import LOWBIT_DTYPES


def _decode_check(types, attrs):
    x, fmt = types[0], attrs["format"]
    TL.low_bit_format(fmt)       # before the input's type is compared with it
    if x.dtype != fmt:
        raise OpDTypeError(f"lowbit_decode: the input is {x.dtype} but format={fmt!r}; "
                           f"Instead: pass format={x.dtype!r} (the input's own type)")


declare.op("lowbit_decode", lambda x, format, name: TL.decode(x, format, name=name),
           kind=OpKind.ELEMWISE, attrs={"format": REQUIRED}, check=_decode_check,
           doc="the float32 values of a low-bit tensor (format: its type, ml_dtypes' name)")


def _encode_check(types, attrs):
    x = types[0]
    TL.low_bit_format(attrs["format"])   # (the compute checks the round mode)
    # the compute sees a low-bit tensor as its uint8 bytes: only the graph knows it is one
    if x.dtype == "bool" or x.dtype in LOWBIT_DTYPES:
        raise OpDTypeError(f"lowbit_encode converts int and float tensors, got {x.dtype}; "
                           "Instead: lowbit_decode a low-bit tensor, cast a bool one, first")


declare.op("lowbit_encode", lambda x, format, saturate, round_mode, name: TL.encode(
               x, format, bool(saturate), round_mode, name=name),
           kind=OpKind.ELEMWISE, attrs={"format": REQUIRED, "saturate": True, "round_mode": "up"},
           check=_encode_check, dtype_attr="format",
           doc="a tensor converted to a low-bit type as ONNX's Cast converts it")
