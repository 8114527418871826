"""Integer and low-precision arithmetic in the loop IR: what casts do, and the two helpers
quantized code needs, :func:`saturate` and :func:`round_half_even`.

The rules (the interpreter, the reference evaluator and compiled code all follow them, and
they are numpy's):

* ``int8``/``uint8``/``int16``/``uint16`` are storage types: loads are cast to ``int32``
  before arithmetic, and sums of products accumulate in ``int32`` (``u8 * i8`` products fit
  in 16 bits, so a sum of fewer than about 65000 of them cannot overflow);
* ``uint32``/``uint64`` compute in their own type: they compare, divide and widen unsigned
  (``uint32(1) - uint32(2) > 0`` is True), and convert to and from floats as numpy does;
* ``int32`` arithmetic wraps on overflow (two's complement), as numpy's int32 does;
* ``cast("int8", x)`` of an integer keeps the low 8 bits (``300 -> 44``, ``-129 -> 127``):
  it wraps, it does not saturate; use :func:`saturate` to clamp;
* ``cast`` from float to integer truncates toward zero (``-2.7 -> -2``); use
  :func:`round_half_even` first to round as ``np.rint`` does (``2.5 -> 2``, ``3.5 -> 4``).

    >>> q = saturate("int8", round_half_even(x / scale))     # ONNX QuantizeLinear's rounding
"""

from __future__ import annotations

from ..errors import DTypeMismatchError
from .expr import INT_DTYPES, STORAGE_COMPUTE_DTYPE, PrimExpr, as_expr, cast, floor, int_range, is_float, max, min, select


def saturate(dtype: str, x) -> PrimExpr:
    """``x`` clamped to the range of integer ``dtype`` and cast to it (a float ``x`` is
    truncated toward zero after clamping): ``saturate("int8", 300) == 127``."""
    x = as_expr(x)
    if dtype not in INT_DTYPES:
        raise DTypeMismatchError(f"saturate clamps to an integer dtype, got {dtype!r}; "
                                 "Instead: use mb.tir.min/max to clamp floats")
    lo, hi = int_range(dtype)
    if is_float(x.dtype):
        return cast(dtype, min(max(x, float(lo)), float(hi)))
    x = cast(STORAGE_COMPUTE_DTYPE.get(x.dtype, x.dtype), x)
    # clamp in x's own type, to the part of dtype's range it can hold (uint32 -> int32: hi only)
    xlo, xhi = int_range(x.dtype)
    if lo > xlo:
        x = max(x, lo)
    if hi < xhi:
        x = min(x, hi)
    return cast(dtype, x)


def round_half_even(x) -> PrimExpr:
    """The nearest integer to float ``x`` (still a float), ties to even as ``np.rint``."""
    x = as_expr(x)
    r = floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - floor(r * 0.5) * 2.0) == 1.0
    return select(tie & odd, r - 1.0, r)


__all__ = ["saturate", "round_half_even"]
