"""Scalar operations with the loop IR's semantics, in plain Python, shared by the reference
evaluator and the code the interpreter generates: IEEE results where Python would raise
(``1.0 / 0.0``, ``log(0)``, ``exp(1000)``), integer ``x // 0 == x % 0 == 0`` (as numpy and the
compiled code give), NaN-propagating min/max, rounding to float32/float16/bfloat16, C-like float ->
int casts, two's-complement wrapping, and the poison that fills fresh buffers.

    >>> fdiv(1.0, 0.0), MATH_IMPL["log"](0.0), idiv(7, 0), imod(-7, 0), wrap(300, "uint8")
    (inf, -inf, 0, 0, 44)

The generated code sees these under the names in :data:`GLOBALS`.
"""

from __future__ import annotations

import math
import operator
import struct
from array import array

from ..errors import BindingMismatchError, IndexOutOfBoundsError
from .expr import FLOAT_DTYPES, INT_DTYPES, int_range, is_unsigned


def wrap(value: int, dtype: str) -> int:
    """``value`` wrapped into integer ``dtype`` (two's complement), as a store or cast does."""
    lo, hi = int_range(dtype)
    return (value - lo) % (hi - lo + 1) + lo


#: what a freshly allocated buffer holds: NaN, the minimum signed value, the maximum unsigned
#: one, True, so a program reading memory it never wrote shows it in its results
POISON = {**{d: math.nan for d in FLOAT_DTYPES},
          **{d: int_range(d)[1] if is_unsigned(d) else int_range(d)[0] for d in INT_DTYPES},
          "bool": 1}


class Fault(Exception):
    """A value an operation cannot take (NaN cast to int); the interpreter and the reference
    evaluator turn it into an ExecutionError with a location."""


_F32 = array("f", [0.0])
_F16 = struct.Struct("e")


def round_f32(x: float) -> float:
    """``x`` rounded to the nearest float32 value."""
    _F32[0] = x
    return _F32[0]


def round_f16(x: float) -> float:
    """``x`` rounded to the nearest float16 value (inf beyond its range)."""
    try:
        return _F16.unpack(_F16.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_U32 = struct.Struct("<I")


def round_bf16(x: float) -> float:
    """``x`` rounded to the nearest bfloat16 value, as compiled code rounds it: first to
    float32, then its bit pattern to the upper 16 bits, ties to even (NaN stays NaN)."""
    if x != x:
        return x
    _F32[0] = x
    b = _U32.unpack(_F32.tobytes())[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", _U32.pack(b))[0]


_FORMATS = {"float16": "e", "float32": "f", "float64": "d", "int8": "b", "uint8": "B",
            "int16": "h", "uint16": "H", "int32": "i", "uint32": "I", "int64": "q",
            "uint64": "Q"}


def reinterpret(value, src: str, dst: str):
    """The bits of ``value`` (of dtype ``src``) read as ``dst``, a dtype of the same width.

        >>> reinterpret(1.0, "float32", "int32")
        1065353216
    """
    if src not in ("float16", "float32", "float64"):
        value = wrap(int(value), src)
    return struct.unpack("=" + _FORMATS[dst], struct.pack("=" + _FORMATS[src], value))[0]


def float_to_int(x: float) -> int:
    """``x`` truncated toward zero; NaN or inf raise :class:`Fault`."""
    if math.isfinite(x):
        return int(x)
    raise Fault(f"the float value {x} cannot be cast to an integer")


def fdiv(a: float, b: float) -> float:
    """``a / b`` with IEEE results for a zero divisor (inf, -inf or nan)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def idiv(a: int, b: int) -> int:
    """Floor division, 0 when ``b`` is 0."""
    return a // b if b else 0


def imod(a: int, b: int) -> int:
    """Floor modulo (the sign of ``b``), 0 when ``b`` is 0."""
    return a % b if b else 0


def fmin(a: float, b: float) -> float:
    """The smaller of ``a`` and ``b``, NaN if either is NaN (``np.minimum``)."""
    return a if a <= b or a != a else b


def fmax(a: float, b: float) -> float:
    """The larger of ``a`` and ``b``, NaN if either is NaN (``np.maximum``)."""
    return a if a >= b or a != a else b


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _log(x: float) -> float:
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _rsqrt(x: float) -> float:
    if x > 0:
        return 1.0 / math.sqrt(x)
    return math.copysign(math.inf, x) if x == 0 else math.nan


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)  # x < 0 or NaN: no overflow either way
    return e / (1.0 + e)


def _odd_int(y: float) -> bool:
    return math.isfinite(y) and y == int(y) and int(y) % 2 == 1


def _pow(x: float, y: float) -> float:
    try:
        return math.pow(x, y)
    except OverflowError:
        return -math.inf if x < 0 and _odd_int(y) else math.inf
    except ValueError:
        if x == 0:  # 0 ** negative
            return math.copysign(math.inf, x) if _odd_int(y) else math.inf
        return math.nan  # negative ** non-integer


def _floor(x: float) -> float:
    return math.copysign(float(math.floor(x)), x) if math.isfinite(x) else x


def _ceil(x: float) -> float:
    return math.copysign(float(math.ceil(x)), x) if math.isfinite(x) else x


def round_half_even(x: float) -> float:
    """``x`` rounded to the nearest integer, halves to even (numpy's and ONNX's rule)."""
    return math.copysign(float(round(x)), x) if math.isfinite(x) else x


def _total(fn):
    """``fn`` made total as C's libm is: NaN for a domain error, signed inf for overflow."""
    def total(x: float) -> float:
        try:
            return fn(x)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.copysign(math.inf, x) if fn is math.sinh else math.inf
    return total


def _atanh(x: float) -> float:
    if abs(x) == 1:
        return math.copysign(math.inf, x)
    return _total(math.atanh)(x)


# A checked access's message carries VALUE where the offending value goes (not str.format:
# the printed IR may contain braces).
VALUE = "\x00"


def _oob(message: str, value: int):
    raise IndexOutOfBoundsError(message.replace(VALUE, str(value)))


def _bad_binding(message: str, value: int):
    raise BindingMismatchError(message.replace(VALUE, str(value)))


#: math function of the IR -> its implementation
MATH_IMPL = {"exp": _exp, "log": _log, "sqrt": _sqrt, "rsqrt": _rsqrt, "tanh": math.tanh,
             "sigmoid": _sigmoid, "erf": math.erf, "pow": _pow, "abs": abs, "floor": _floor,
             "ceil": _ceil, "round": round_half_even, "sin": _total(math.sin),
             "cos": _total(math.cos), "tan": _total(math.tan), "asin": _total(math.asin),
             "acos": _total(math.acos), "atan": math.atan, "sinh": _total(math.sinh),
             "cosh": _total(math.cosh), "asinh": math.asinh, "acosh": _total(math.acosh),
             "atanh": _atanh,
             # integers in range give results in range, signed (two's complement) or not
             "bitwise_and": operator.and_, "bitwise_or": operator.or_,
             "bitwise_xor": operator.xor}
#: math function of the IR -> name of its implementation in the generated code
MATH = {name: name if name == "abs" else "_" + name for name in MATH_IMPL}
#: the names the interpreter's generated code uses
GLOBALS = {"_reinterpret": reinterpret, "_rf32": round_f32, "_rf16": round_f16,
           "_rbf16": round_bf16, "_f2i": float_to_int, "_fdiv": fdiv, "_idiv": idiv,
           "_imod": imod, "_fmin": fmin, "_fmax": fmax, "_oob": _oob,
           "_bad_binding": _bad_binding, "_inf": math.inf, "_nan": math.nan,
           **{MATH[name]: fn for name, fn in MATH_IMPL.items() if name != "abs"}}
