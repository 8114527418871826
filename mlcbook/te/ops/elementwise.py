"""Elementwise operators: unary math, binary arithmetic and comparisons with numpy
broadcasting, ``where``, ``cast`` and ``clip``.

    >>> y = add(x, bias)            # (4, 3) + (3,) -> (4, 3)
    >>> z = exp(neg(y))

A binary operator takes two tensors, or a tensor and a Python number (which takes the
tensor's dtype). Both tensors must have the same dtype: there is no implicit promotion,
cast one with :func:`cast`. Storage dtypes (int8, uint8, int16, uint16, float16, bfloat16)
are computed in int32 / float32 and the result cast back (:func:`.util.compute_dtype`);
bfloat16 results are rounded to nearest even on that cast.
"""

from __future__ import annotations

import math

from ...errors import TEError
from ...tir import expr as _e
from ..tensor import Tensor
from .util import (axis_names, broadcast_indices, broadcast_shapes, check_tensor,
                    compute_dtype, compute_named, const_like, load, store, trunc_div)


def _map(x: Tensor, fn, name: str, dtype: str | None = None) -> Tensor:
    return compute_named(x.shape, axis_names(x.ndim),
                         lambda *idx: store(fn(load(x, idx)), dtype or x.dtype), name)


def _float_only(x: Tensor, op: str) -> None:
    if not _e.is_float(x.dtype):
        raise TEError(f"{op}: tensor {x.name!r} has dtype {x.dtype} but {op} needs a float "
                      f"tensor; cast it first, e.g. ops.cast({x.name}, 'float32')")


def _unary(op: str, fn, doc: str, any_dtype: bool = False):
    def unary(x: Tensor, name: str = op) -> Tensor:
        check_tensor(x, op, "x")
        if not any_dtype:
            _float_only(x, op)
        return _map(x, fn, name)

    unary.__name__ = unary.__qualname__ = op
    unary.__doc__ = doc
    return unary


exp = _unary("exp", _e.exp, "``numpy.exp(x)`` elementwise.")
log = _unary("log", _e.log, "``numpy.log(x)`` elementwise.")
sqrt = _unary("sqrt", _e.sqrt, "``numpy.sqrt(x)`` elementwise.")
rsqrt = _unary("rsqrt", _e.rsqrt, "``1 / numpy.sqrt(x)`` elementwise.")
reciprocal = _unary("reciprocal", lambda v: const_like(1.0, v) / v, "``1 / x`` elementwise.")
tanh = _unary("tanh", _e.tanh, "``numpy.tanh(x)`` elementwise.")
sigmoid = _unary("sigmoid", _e.sigmoid, "``1 / (1 + exp(-x))`` elementwise.")
erf = _unary("erf", _e.erf, "the error function (``scipy.special.erf``) elementwise.")
floor = _unary("floor", _e.floor, "``numpy.floor(x)`` elementwise.")
ceil = _unary("ceil", _e.ceil, "``numpy.ceil(x)`` elementwise.")
neg = _unary("neg", lambda v: -v, "``-x`` elementwise.", any_dtype=True)
relu = _unary("relu", lambda v: _e.max(v, const_like(0, v)), "``max(x, 0)`` elementwise.",
              any_dtype=True)
abs = _unary("abs", _e.abs, "``numpy.abs(x)`` elementwise.",  # noqa: A001 - like numpy.abs
             any_dtype=True)


def leaky_relu(x: Tensor, alpha: float = 0.01, name: str = "leaky_relu") -> Tensor:
    """``x if x >= 0 else alpha * x`` elementwise."""
    check_tensor(x, "leaky_relu", "x")
    return _map(x, lambda v: _e.select(v < const_like(0, v), v * const_like(alpha, v), v), name)


def gelu(x: Tensor, approximate: str = "none", name: str = "gelu") -> Tensor:
    """``x * Phi(x)`` (Phi: the standard normal CDF, through erf); ``approximate="tanh"``
    uses ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    check_tensor(x, "gelu", "x")
    _float_only(x, "gelu")

    def fn(v):
        half, one = const_like(0.5, v), const_like(1.0, v)
        if approximate == "tanh":
            cube = const_like(0.044715, v) * v * v * v
            inner = const_like(math.sqrt(2 / math.pi), v) * (v + cube)
            return half * v * (one + _e.tanh(inner))
        return half * v * (one + _e.erf(v * const_like(1 / math.sqrt(2), v)))

    return _map(x, fn, name)


def cast(x: Tensor, dtype: str, name: str = "cast") -> Tensor:
    """``x.astype(dtype)``: float -> int truncates toward zero, -> bool is ``x != 0``."""
    check_tensor(x, "cast", "x")
    dtype = _e.check_dtype(dtype)

    def body(*idx):
        v = x[idx]
        if dtype == "bool":
            return store(v, "bool")
        if v.dtype == "float64" and dtype == "float16":
            # through float32: the JIT has no direct double -> half conversion routine
            v = _e.cast("float32", v)
        return _e.cast(dtype, v)

    return compute_named(x.shape, axis_names(x.ndim), body, name)


def bitcast(x: Tensor, dtype: str, name: str = "bitcast") -> Tensor:
    """``x.view(dtype)``: each element's bits read as ``dtype``, a type of the same width
    (float32 <-> int32, float64 <-> int64, int8 <-> uint8, bool -> uint8)."""
    check_tensor(x, "bitcast", "x")
    dtype = _e.check_dtype(dtype)
    if dtype == "bool" or (8 if x.dtype == "bool" else _e.bits(x.dtype)) != _e.bits(dtype):
        raise TEError(f"bitcast: {x.name!r} is {x.dtype}, which cannot be read as {dtype}; "
                      "the two types must have the same width (and bool is only a source)")

    def body(*idx):
        v = x[idx]
        if _e.is_float(v.dtype) != _e.is_float(dtype):
            return _e.reinterpret(dtype, v)
        # a bool is stored as the byte 0 or 1, and an int <-> int conversion of one width
        # keeps the bits: a cast reads them unchanged
        return _e.cast(dtype, v)

    return compute_named(x.shape, axis_names(x.ndim), body, name)


def clip(x: Tensor, a_min=None, a_max=None, name: str = "clip") -> Tensor:
    """``numpy.clip(x, a_min, a_max)`` with scalar bounds; a bound of None is no bound."""
    check_tensor(x, "clip", "x")

    def fn(v):
        if a_min is not None:
            v = _e.max(v, const_like(a_min, v))
        if a_max is not None:
            v = _e.min(v, const_like(a_max, v))
        return v

    return _map(x, fn, name)


def _broadcast(op: str, operands, fn, out_dtype: str | None, name: str) -> Tensor:
    """out[idx] = fn(*operands at their broadcast indices), computed in the compute dtype."""
    tensors = [v for v in operands if isinstance(v, Tensor)]
    dtype = compute_dtype(tensors[0].dtype)
    out_shape = broadcast_shapes(op, *(t.shape for t in tensors))

    def operand(v, idx):
        if isinstance(v, Tensor):
            return load(v, broadcast_indices(v.shape, idx, out_shape))
        return _e.as_expr(v, dtype)

    def body(*idx):
        return store(fn(*(operand(v, idx) for v in operands)), out_dtype or tensors[0].dtype)

    return compute_named(out_shape, axis_names(len(out_shape)), body, name)


def _check_operands(op: str, a, b, same_dtype: bool = True) -> None:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TEError(f"{op}: at least one of the operands must be a te tensor, got "
                      f"{a!r} and {b!r}")
    for arg, v in (("a", a), ("b", b)):
        if not isinstance(v, (Tensor, int, float)) or isinstance(v, bool):
            raise TEError(f"{op}: operand {arg} is {v!r}; give a te tensor or a number")
    if same_dtype and isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype:
        raise TEError(f"{op}: {a.name!r} is {a.dtype} but {b.name!r} is {b.dtype}; cast one "
                      f"of them, e.g. ops.cast({b.name}, {a.dtype!r})")


def _binary(op: str, fn, doc: str, out_dtype: str | None = None):
    def binary(a, b, name: str = op) -> Tensor:
        _check_operands(op, a, b)
        return _broadcast(op, (a, b), fn, out_dtype, name)

    binary.__name__ = binary.__qualname__ = op
    binary.__doc__ = doc
    return binary


add = _binary("add", lambda x, y: x + y, "``a + b`` with numpy broadcasting.")
sub = _binary("sub", lambda x, y: x - y, "``a - b`` with numpy broadcasting.")
mul = _binary("mul", lambda x, y: x * y, "``a * b`` with numpy broadcasting.")
div = _binary("div", lambda x, y: x / y if _e.is_float(x.dtype) else trunc_div(x, y),
              "``a / b`` with numpy broadcasting; integers divide rounding toward zero (C's "
              "and ONNX's rule, where numpy's ``//`` rounds down).")
maximum = _binary("maximum", _e.max, "``numpy.maximum(a, b)`` with broadcasting.")
minimum = _binary("minimum", _e.min, "``numpy.minimum(a, b)`` with broadcasting.")
equal = _binary("equal", lambda x, y: x == y, "``a == b`` (bool) with broadcasting.",
                out_dtype="bool")
less = _binary("less", lambda x, y: x < y, "``a < b`` (bool) with broadcasting.",
               out_dtype="bool")
greater = _binary("greater", lambda x, y: x > y, "``a > b`` (bool) with broadcasting.",
                  out_dtype="bool")


def pow(a, b, name: str = "pow") -> Tensor:  # noqa: A001 - the op's name, as numpy.pow
    """``a ** b`` with numpy broadcasting, in the base's dtype; the exponent may have another
    dtype. Integer powers are computed in float64 and truncated back."""
    _check_operands("pow", a, b, same_dtype=False)

    def fn(x, y):
        if _e.is_float(x.dtype):
            return _e.pow(x, _e.cast(x.dtype, y))
        return _e.cast(x.dtype, _e.pow(_e.cast("float64", x), _e.cast("float64", y)))

    return _broadcast("pow", (a, b), fn, None, name)


def where(cond: Tensor, a: Tensor, b: Tensor, name: str = "where") -> Tensor:
    """``numpy.where(cond, a, b)``: ``a`` where the bool ``cond`` holds, else ``b``,
    broadcasting all three."""
    for arg, t in (("cond", cond), ("a", a), ("b", b)):
        check_tensor(t, "where", arg)
    if cond.dtype != "bool":
        raise TEError(f"where: the condition {cond.name!r} is {cond.dtype}, not bool; compare "
                      "first, e.g. ops.greater(x, 0)")
    _check_operands("where", a, b)
    return _broadcast("where", (cond, a, b), _e.select, a.dtype, name)


# --- more comparisons, logic, remainders and bits (the ONNX operator set) -------------------
greater_equal = _binary("greater_equal", lambda x, y: x >= y, "``a >= b`` (bool), broadcasting.",
                        out_dtype="bool")
less_equal = _binary("less_equal", lambda x, y: x <= y, "``a <= b`` (bool), broadcasting.",
                     out_dtype="bool")
logical_and = _binary("logical_and", _e.logical_and, "``a and b`` of bools, broadcasting.")
logical_or = _binary("logical_or", _e.logical_or, "``a or b`` of bools, broadcasting.")
logical_xor = _binary("logical_xor", lambda x, y: x != y, "``a xor b`` of bools, broadcasting.")
prelu = _binary("prelu", lambda x, s: _e.select(x < const_like(0, x), x * s, x),
                "``x if x >= 0 else slope * x``, the slope broadcast to x.")


def _float_mod(x, y, fmod: int):
    """numpy's ``fmod`` (``fmod=1``) or ``mod`` of floats, computed in float64: x - t * y
    with t the quotient truncated, then moved to the divisor's sign for ``mod``."""
    x, y = _e.cast("float64", x), _e.cast("float64", y)
    zero, inf = _e.const(0.0, "float64"), _e.infinity("float64")
    q = x / y
    r = x - _e.select(q < zero, _e.ceil(q), _e.floor(q)) * y
    # a finite x over an infinite y leaves x (the formula would give inf * 0 = NaN)
    r = _e.select(((y == inf) | (y == -inf)) & (x < inf) & (x > -inf), x, r)
    if not fmod:
        r = _e.select((r != zero) & ((r < zero) != (y < zero)), r + y, r)
    return r


def mod(a: Tensor, b: Tensor, fmod: int = 0, name: str = "mod") -> Tensor:
    """Remainder: with ``fmod=0`` it has the divisor's sign (Python's ``%``, numpy.mod), with
    ``fmod=1`` the dividend's (C's ``%``, numpy.fmod). An integer zero divisor gives 0, a float
    one NaN."""
    _check_operands("mod", a, b)

    def fn(x, y):
        if _e.is_float(x.dtype):
            return _float_mod(x, y, fmod)
        zero = const_like(0, y)
        safe = _e.select(y == zero, const_like(1, y), y)
        r = x % safe if not fmod else x - trunc_div(x, safe) * safe
        return _e.select(y == zero, zero, r)

    return _broadcast("mod", (a, b), fn, None, name)


def _pow2(y, bits: int):
    """``2**y`` wrapped to the dtype, for ``0 <= y < bits``, from the bits of y: the product
    of ``2**(2**b)`` over the set bits ``b`` (the IR has no shift)."""
    p = const_like(1, y)
    for b in range(bits.bit_length() - 1):
        bit = (y // const_like(1 << b, y)) % const_like(2, y) == const_like(1, y)
        p = p * _e.select(bit, const_like(1 << (1 << b), y), const_like(1, y))
    return p


def bitshift(a: Tensor, b: Tensor, direction: str = "LEFT", name: str = "bitshift") -> Tensor:
    """``a << b`` (``direction="LEFT"``) or ``a >> b`` (arithmetic for signed ints) with
    broadcasting. A shift outside ``[0, bits)`` gives 0 (right shift of a negative: -1),
    ONNX's rule; a left shift wraps."""
    _check_operands("bitshift", a, b)
    if direction not in ("LEFT", "RIGHT"):
        raise TEError(f"bitshift: direction={direction!r} is not 'LEFT' or 'RIGHT'")
    for t in (a, b):
        if isinstance(t, Tensor) and not _e.is_int(t.dtype):
            raise TEError(f"bitshift: {t.name!r} is {t.dtype}; bitshift takes integer tensors")
    dtype = a.dtype if isinstance(a, Tensor) else b.dtype
    bits, signed = int(dtype.split("int")[1]), not dtype.startswith("u")

    def fn(x, y):
        x, y = _e.cast(dtype, x), _e.cast(dtype, y)
        zero = const_like(0, x)
        fill = _e.select(x < zero, const_like(-1, x), zero) if signed else zero
        if direction == "LEFT":
            return _e.select((y >= zero) & (y < const_like(bits, y)), x * _pow2(y, bits), zero)
        # a signed shift by bits - 1 is the sign fill too; 2**(bits - 1) is not representable
        top = bits - 1 if signed else bits
        return _e.select((y >= zero) & (y < const_like(top, y)), x // _pow2(y, bits), fill)

    return _broadcast("bitshift", (a, b), fn, None, name)


def _int_only(op: str, *operands) -> None:
    for t in operands:
        if isinstance(t, Tensor) and not _e.is_int(t.dtype):
            raise TEError(f"{op}: {t.name!r} is {t.dtype}; {op} takes integer tensors")


def _bitwise(op: str, doc: str):
    fn = getattr(_e, op)

    def bitwise(a, b, name: str = op) -> Tensor:
        _check_operands(op, a, b)
        _int_only(op, a, b)
        return _broadcast(op, (a, b), fn, None, name)

    bitwise.__name__ = bitwise.__qualname__ = op
    bitwise.__doc__ = doc
    return bitwise


bitwise_and = _bitwise("bitwise_and", "``a & b`` of integers, broadcasting.")
bitwise_or = _bitwise("bitwise_or", "``a | b`` of integers, broadcasting.")
bitwise_xor = _bitwise("bitwise_xor", "``a ^ b`` of integers, broadcasting.")
