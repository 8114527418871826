"""The low-bit element types of ONNX as tensor expressions: conversions between their bit
patterns and float32, following ONNX's Cast.

A low-bit tensor is stored one element per byte (``uint8``), its bit pattern in the low
bits: the float8 formats (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0), FLOAT4E2M1 and the
integers INT4, UINT4, INT2, UINT2 (ONNX packs the 4- and 2-bit ones two or four per byte
only in its files). The formats are named as ``ml_dtypes`` names their numpy types::

    x = te.placeholder((8,), "uint8", name="x")          # E4M3FN bit patterns
    y = decode(x, "float8_e4m3fn")                        # float32, exact
    z = encode(y, "float8_e5m2", saturate=False)          # uint8 bit patterns

Every conversion is integer and float arithmetic on the bit pattern (shifts are products
and floor divisions by powers of two, masks are remainders, exponents are found by a
logarithm corrected exactly by powers of two), so the interpreter and compiled code agree
bit for bit. The rules, from ONNX's Cast (and its reference implementation where the two
differ, marked *):

* floats round to nearest, ties to even; ``saturate`` (the default) clamps values beyond
  the largest finite value, infinities included, to it; without it they become Inf (E5M2)
  or NaN (the others). NaN stays NaN (E4M3FN and E5M2: with the sign bit clear, whatever
  the input's sign). The FNUZ formats have no -0 (a negative value that rounds to 0 is
  +0). FLOAT4E2M1 has neither Inf nor NaN: it always saturates, and NaN becomes ``0x8``
  (as ``ml_dtypes`` converts it*).
* E8M0 (a power of two, ``2**(b - 127)``; ``0xFF`` is NaN) reads the float32 value's
  exponent and fraction fields: ``round_mode`` "up" (the default) adds one to the
  exponent when the fraction is not 0, "down" never, "nearest" as onnx's reference does*;
  ``saturate`` keeps the largest exponent from rounding up into NaN; NaN and Inf are NaN*.
* integers: ``encode`` truncates toward zero and keeps the low bits (``-9 -> 7`` in
  INT4), as a cast to a narrower integer does; QuantizeLinear clamps before it encodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import TEAttributeError, TEDTypeError
from ...tir import expr as _e
from ...tir.stmt import KEEP_MATERIALIZED
from ..tensor import Tensor
from .util import axis_names, check_tensor, compute_named

__all__ = ["LowBitFormat", "FORMATS", "decode", "encode", "ROUND_MODES"]


@dataclass(frozen=True)
class LowBitFormat:
    """A low-bit element type: ``kind`` "float" (sign, ``exp`` exponent and ``man`` mantissa
    bits, exponent ``bias``), "e8m0" (an unsigned exponent) or "int" (``bits`` wide,
    ``signed``); ``nan`` the NaN pattern (None: the format has none), ``inf`` the Inf
    pattern, ``fnuz`` no negative zero."""

    name: str
    kind: str
    bits: int
    exp: int = 0
    man: int = 0
    bias: int = 0
    signed: bool = True
    nan: int | None = None
    inf: int | None = None
    fnuz: bool = False

    @property
    def max_code(self) -> int:
        """The bit pattern (without sign) of the largest finite value."""
        if self.kind == "int":
            return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1
        if self.kind == "e8m0":
            return 0xFE
        top = (1 << (self.exp + self.man)) - 1
        if self.inf is not None:
            return (self.inf & top) - 1         # E5M2: below the infinity
        if self.nan is not None and not self.fnuz:
            return top - 1                      # E4M3FN: all ones is NaN
        return top

    @property
    def max_value(self) -> float:
        """The largest finite value."""
        c = self.max_code
        if self.kind != "float":
            return float(2.0 ** (c - 127) if self.kind == "e8m0" else c)
        e, m = c >> self.man, c & ((1 << self.man) - 1)
        return ((1 << self.man) + m) * 2.0 ** (e - self.bias - self.man)


def _float(name, exp, man, bias, nan, inf=None, fnuz=False):
    return LowBitFormat(name, "float", 1 + exp + man, exp, man, bias, True, nan, inf, fnuz)


def _int(name, bits, signed):
    return LowBitFormat(name, "int", bits, signed=signed)


#: the formats by name (``ml_dtypes``' names of the numpy types)
FORMATS = {f.name: f for f in (
    _float("float8_e4m3fn", 4, 3, 7, nan=0x7F),
    _float("float8_e4m3fnuz", 4, 3, 8, nan=0x80, fnuz=True),
    _float("float8_e5m2", 5, 2, 15, nan=0x7E, inf=0x7C),
    _float("float8_e5m2fnuz", 5, 2, 16, nan=0x80, fnuz=True),
    _float("float4_e2m1fn", 2, 1, 1, nan=None),
    LowBitFormat("float8_e8m0fnu", "e8m0", 8, bias=127, signed=False, nan=0xFF),
    _int("int4", 4, True), _int("uint4", 4, False), _int("int2", 2, True), _int("uint2", 2, False),
)}

ROUND_MODES = ("up", "down", "nearest")


def low_bit_format(name: str) -> LowBitFormat:
    """The low-bit format ``name`` (``float8_e4m3fn``, ...): the check of a format argument,
    which the graph ops share."""
    if name not in FORMATS:
        raise TEAttributeError(f"format={name!r} is not a low-bit type; Instead: use one of "
                               f"{', '.join(FORMATS)}")
    return FORMATS[name]


def _f64(v) -> _e.PrimExpr:
    return _e.const(float(v), "float64")


def _pow2(k: _e.PrimExpr) -> _e.PrimExpr:
    """``2.0 ** k`` for an integral float64 ``k`` (exact: libm's pow is, for powers of two)."""
    return _e.pow(_f64(2.0), k)


def _log2_floor(a: _e.PrimExpr) -> _e.PrimExpr:
    """``floor(log2(a))`` of a positive finite float64, exactly: the logarithm's estimate
    (never off by more than one) corrected by comparing with powers of two."""
    e = _e.floor(_e.log(a) * _f64(1 / math.log(2)))
    fix = _e.select(_pow2(e) > a, _f64(-1), _e.select(_pow2(e + _f64(1)) <= a, _f64(1), _f64(0)))
    return e + fix


# --- decode: bit pattern -> float32 ------------------------------------------------------------
def _decode_value(b: _e.PrimExpr, f: LowBitFormat) -> _e.PrimExpr:
    """The float32 value of the pattern in the low bits of the int32 ``b``."""
    nan = _e.const(math.nan, "float32")
    if f.kind == "int":
        v = b % (1 << f.bits)
        if f.signed:
            v = _e.select(v >= (1 << (f.bits - 1)), v - (1 << f.bits), v)
        return _e.cast("float32", v)
    if f.kind == "e8m0":
        v = _e.cast("float32", _pow2(_e.cast("float64", b - f.bias)))
        return _e.select(b == f.nan, nan, v)
    b = b % (1 << f.bits)
    sign_bit = 1 << (f.bits - 1)
    mag = b % sign_bit
    e, m = mag // (1 << f.man), mag % (1 << f.man)
    m64 = _e.cast("float64", m)
    sub = m64 * _f64(2.0 ** (1 - f.bias - f.man))
    normal = (m64 + _f64(1 << f.man)) * _pow2(_e.cast("float64", e - (f.bias + f.man)))
    v = _e.cast("float32", _e.select(e == 0, sub, normal))
    v = _e.select(b >= sign_bit, -v, v)
    if f.inf is not None:
        v = _e.select(mag == f.inf, _e.select(b >= sign_bit, _e.neg_infinity("float32"),
                                              _e.infinity("float32")), v)
        return _e.select(mag > f.inf, nan, v)
    if f.fnuz:
        return _e.select(b == f.nan, nan, v)
    if f.nan is not None:
        return _e.select(mag == f.nan, nan, v)
    return v


def decode(x: Tensor, fmt: str, name: str = "decode") -> Tensor:
    """The float32 values of the ``fmt`` bit patterns in the uint8 tensor ``x`` (exact)."""
    check_tensor(x, "decode", "x")
    f = low_bit_format(fmt)
    if x.dtype != "uint8":
        raise TEDTypeError(f"decode reads bit patterns stored in uint8, but the data "
                           f"{x.name!r} is {x.dtype}; Instead: pass the uint8 storage of the "
                           f"{fmt} tensor")
    return compute_named(x.shape, axis_names(x.ndim),
                         lambda *i: _decode_value(_e.cast("int32", x[i]), f), name)


# --- encode: number -> bit pattern -------------------------------------------------------------
# The loop IR has no common subexpressions, so a value used several times is computed as
# often: the float encodings are three stages (exponent, magnitude pattern, sign), each
# reading the one before from memory several times; the first two are marked
# KEEP_MATERIALIZED so that schedules keep them stored rather than inline them.
def _as_f64(v: _e.PrimExpr, f: LowBitFormat) -> _e.PrimExpr:
    if f.kind == "e8m0":   # ONNX reads the fields of the float32 value
        v = _e.cast("float32", v)
    return _e.cast("float64", v)


def _magnitude(v: _e.PrimExpr, f: LowBitFormat, saturate: bool) -> _e.PrimExpr:
    """``|v|``, clamped to the largest value when saturating (FLOAT4E2M1, which has no NaN
    or Inf, always saturates); NaN and Inf become 0 (their patterns are set apart)."""
    a = _e.abs(v)
    if f.kind == "float" and (saturate or f.nan is None):
        a = _e.min(a, _f64(f.max_value))
    return _e.select((a != a) | (a == _e.infinity("float64")), _f64(0), a)


def _least_exponent(f: LowBitFormat) -> int:
    """The exponent of the smallest normal value (float32's for E8M0, which reads it)."""
    return -126 if f.kind == "e8m0" else 1 - f.bias


def _float_code(v: _e.PrimExpr, e: _e.PrimExpr, f: LowBitFormat, saturate: bool):
    """The pattern (without sign) of float64 ``v`` rounded to ``f``, its exponent ``e`` at
    least the smallest normal one: ``v = n * 2**(e - man)``, the pattern is then
    ``(e + bias - 1) * 2**man + n``, a rounding carry moving into the exponent by itself."""
    a = _magnitude(v, f, saturate)
    n = _e.round(a / _pow2(e - _f64(f.man)))
    code = _e.cast("int32", (e + _f64(f.bias - 1)) * _f64(1 << f.man) + n)
    if saturate or f.nan is None:   # clamped: it cannot overflow
        return code
    overflow = f.nan if f.inf is None else f.inf
    too_big = (code > f.max_code) | (_e.abs(v) == _e.infinity("float64"))
    return _e.select(too_big, _e.const(overflow, "int32"), code)


def _float_sign(v: _e.PrimExpr, code: _e.PrimExpr, f: LowBitFormat) -> _e.PrimExpr:
    """The pattern ``code`` with the sign of ``v`` (-0 too; not on 0 and NaN in FNUZ);
    NaN's own pattern for NaN."""
    zero = _f64(0.0)
    negative = (v < zero) | ((v == zero) & (_f64(1.0) / v < zero))
    sign_bit = 1 << (f.bits - 1)
    if f.fnuz:
        negative = negative & (code != 0) & (code != f.nan)
    signed = _e.select(negative, code + sign_bit, code)
    return _e.select(v != v, _e.const(f.nan if f.nan is not None else sign_bit, "int32"), signed)


def _e8m0_code(v: _e.PrimExpr, e: _e.PrimExpr, f: LowBitFormat, saturate: bool,
               round_mode: str) -> _e.PrimExpr:
    """The E8M0 pattern of float32 ``v`` (as float64) from its exponent field and its 23
    fraction bits (``e``: its exponent, at least -126), rounded as onnx's reference does."""
    a = _magnitude(v, f, saturate)
    subnormal = a < _f64(2.0 ** -126)
    field = _e.cast("int32", _e.select(subnormal, _f64(0), e + _f64(127)))
    frac = _e.select(subnormal, a * _f64(2.0 ** 149), (a / _pow2(e) - _f64(1)) * _f64(2 ** 23))
    frac = _e.cast("int32", frac)
    if round_mode == "up":
        up = frac != 0
    elif round_mode == "nearest":
        g, r = (frac // (1 << 22)) % 2 == 1, (frac // (1 << 21)) % 2 == 1
        up = g & (r | (frac % (1 << 21) != 0) | (field > 0))
    else:
        up = _e.const(False, "bool")
    if saturate:
        up = up & (field != 0xFE)
    special = (v != v) | (_e.abs(v) == _e.infinity("float64"))
    return _e.select(special, _e.const(f.nan, "int32"), _e.select(up, field + 1, field))


def _int_code(v: _e.PrimExpr, f: LowBitFormat) -> _e.PrimExpr:
    """The low ``f.bits`` bits of float64 ``v`` truncated toward zero (NaN, Inf: 0)."""
    ok = (v == v) & (_e.abs(v) != _e.infinity("float64"))
    t = _e.select(ok, _e.select(v < _f64(0), _e.ceil(v), _e.floor(v)), _f64(0))
    size = _f64(1 << f.bits)
    return _e.cast("int32", t - _e.floor(t / size) * size)


def encode(x: Tensor, fmt: str, saturate: bool = True, round_mode: str = "up",
           name: str = "encode") -> Tensor:
    """The ``fmt`` bit patterns (uint8) of the numbers in ``x`` (any int or float dtype),
    converted as ONNX's Cast converts to ``fmt``."""
    check_tensor(x, "encode", "x")
    f = low_bit_format(fmt)
    if round_mode not in ROUND_MODES:
        raise TEAttributeError(f"round_mode={round_mode!r} is not one of "
                               f"{', '.join(ROUND_MODES)}; Instead: use 'up' (ONNX's default)")
    if x.dtype == "bool":
        raise TEDTypeError(f"encode converts numbers, but the data {x.name!r} is bool; "
                           "Instead: cast it to float32 first")
    names = axis_names(x.ndim)

    def stage(suffix, fn, final=False):
        if final:
            return compute_named(x.shape, names, fn, name)
        return compute_named(x.shape, names, fn, f"{name}_{suffix}",
                             attrs={KEEP_MATERIALIZED: True})

    def v(i):
        return _as_f64(x[i], f)

    if f.kind == "int":
        return stage("", lambda *i: _e.cast("uint8", _int_code(v(i), f)), final=True)
    least = _least_exponent(f)
    e = stage("exponent", lambda *i: _e.max(
        _log2_floor(_e.max(_magnitude(v(i), f, saturate), _f64(2.0 ** least))), _f64(least)))
    if f.kind == "e8m0":
        return stage("", lambda *i: _e.cast("uint8", _e8m0_code(v(i), e[i], f, saturate,
                                                                 round_mode)), final=True)
    code = stage("magnitude", lambda *i: _float_code(v(i), e[i], f, saturate))
    return stage("", lambda *i: _e.cast("uint8", _float_sign(v(i), code[i], f)), final=True)
