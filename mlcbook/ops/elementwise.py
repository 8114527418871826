"""Elementwise and broadcasting ops: arithmetic, comparisons, activations, ``where``, ``cast``.

    >>> get("relu").reference(np.array([-1.0, 2.0]))
    array([0., 2.])

Binary ops broadcast like numpy. Integer ``div`` truncates toward zero (ONNX's rule, which
is C's), unlike numpy's ``//``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpAttributeError, OpDTypeError, OpShapeError
from ..tir.expr import bits
from ._infer import FLOATS, INTS, NUMBERS, broadcast_shapes, require_dtype, same_dtype
from .registry import REQUIRED, OpKind, register
from .types import LOWBIT_DTYPES, TensorType, check_graph_dtype, is_float_dtype

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _unary(name, fn, dtypes=FLOATS, attrs=None, doc=""):
    def infer(types, attrs):
        require_dtype(name, types[0], dtypes)
        return types[0]

    def reference(x, **a):
        return np.asarray(fn(x, **a)).astype(x.dtype, copy=False)

    register(name, kind=OpKind.ELEMWISE, infer=infer, reference=reference, attrs=attrs,
             num_inputs=(1, 1), doc=doc)


def _gelu(x, approximate="none"):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        return 0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    return 0.5 * x64 * (1 + _erf(x64 / math.sqrt(2)))


def _sigmoid(x):
    x64 = x.astype(np.float64)
    return 1 / (1 + np.exp(-x64))


SIGNED = ("int8", "int16", "int32", "int64") + FLOATS

_unary("neg", np.negative, SIGNED, doc="-x")
_unary("abs", np.abs, NUMBERS, doc="|x|")
_unary("exp", np.exp, doc="e**x")
_unary("log", np.log, doc="natural logarithm")
_unary("sqrt", np.sqrt, doc="square root")
_unary("reciprocal", lambda x: 1 / x, doc="1 / x")
_unary("relu", lambda x: np.maximum(x, 0), SIGNED, doc="max(x, 0)")
_unary("sigmoid", _sigmoid, doc="1 / (1 + exp(-x))")
_unary("tanh", np.tanh, doc="hyperbolic tangent")
_unary("erf", lambda x: _erf(x.astype(np.float64)), doc="the error function")
_unary("leaky_relu", lambda x, alpha: np.where(x < 0, x * np.asarray(alpha, x.dtype), x),
       attrs={"alpha": 0.01}, doc="x if x >= 0 else alpha * x")
_unary("gelu", _gelu, attrs={"approximate": "none"},
       doc="x * Phi(x); approximate='tanh' uses the tanh formula")


def _clip_ref(x, min=None, max=None):  # noqa: A002 - ONNX's names
    y = x
    if min is not None:
        y = np.maximum(y, np.asarray(min, x.dtype))
    if max is not None:
        y = np.minimum(y, np.asarray(max, x.dtype))
    return y


def _clip_infer(types, attrs):
    require_dtype("clip", types[0], NUMBERS)
    return types[0]


register("clip", kind=OpKind.ELEMWISE, infer=_clip_infer, reference=_clip_ref,
         attrs={"min": None, "max": None}, doc="min(max(x, min), max); a missing bound is no bound")


def _storage_bits(dtype: str) -> int:
    return 8 if dtype == "bool" else bits(dtype)   # a bool is stored as a byte


def _bitcast_infer(types, attrs):
    x, dtype = types[0], check_graph_dtype(attrs["dtype"])
    if dtype == "bool" or _storage_bits(x.dtype) != bits(dtype):
        raise OpDTypeError(f"bitcast: a {x.dtype} tensor cannot be read as {dtype}; the two "
                           "types must have the same width (bool only as the source). "
                           "Instead: cast it to convert the values")
    if "bfloat16" in (x.dtype, dtype) and {x.dtype, dtype} != {"bfloat16"}:
        raise OpDTypeError(f"bitcast: mlcbook does not read bfloat16 bits as {dtype} or "
                           f"other bits as bfloat16 ({x.dtype} -> {dtype})")
    return TensorType(x.shape, dtype)


register("bitcast", kind=OpKind.ELEMWISE, infer=_bitcast_infer,
         reference=lambda x, dtype: np.array(x, order="C").view(dtype),
         attrs={"dtype": REQUIRED},
         doc="each element's bits read as `dtype`, a type of the same width (numpy's view)")


def _cast_infer(types, attrs):
    dtype = check_graph_dtype(attrs["dtype"])
    for d in (types[0].dtype, dtype):
        if d in LOWBIT_DTYPES:
            raise OpDTypeError(f"cast does not convert the low-bit type {d}; Instead: use the "
                               "ops lowbit_decode (to float32) and lowbit_encode (from numbers)")
    return TensorType(types[0].shape, dtype)


def _cast_ref(x, dtype):
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(dtype)


register("cast", kind=OpKind.ELEMWISE, infer=_cast_infer, reference=_cast_ref,
         attrs={"dtype": None}, doc="convert to `dtype` (float -> int truncates toward zero)")


# --- binary, broadcasting ----------------------------------------------------------------------
def _trunc_div(x, y):
    if x.dtype.kind == "u":  # not through int64: uint64 values pass 2**63
        safe = np.where(y == 0, np.ones_like(y), y)
        return np.where(y == 0, np.zeros_like(x), x // safe).astype(x.dtype)
    if x.dtype.kind == "i":
        q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64))
        return (np.sign(x.astype(np.int64)) * np.sign(y.astype(np.int64)) * q).astype(x.dtype)
    return x / y


def _binary(name, fn, dtypes=NUMBERS, out_dtype=None, doc=""):
    def infer(types, attrs):
        dtype = same_dtype(name, types)
        require_dtype(name, types[0], dtypes)
        shape = broadcast_shapes(name, types[0].shape, types[1].shape)
        return TensorType(shape, out_dtype or dtype)

    def reference(x, y):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = np.asarray(fn(x, y))
        return out.astype(out_dtype or x.dtype, copy=False)

    register(name, kind=OpKind.BROADCAST, infer=infer, reference=reference, num_inputs=(2, 2),
             doc=doc)


_binary("add", np.add, doc="x + y")
_binary("sub", np.subtract, doc="x - y")
_binary("mul", np.multiply, doc="x * y")
_binary("div", _trunc_div, doc="x / y (integers: truncated toward zero)")
_binary("maximum", np.maximum, doc="elementwise max")
_binary("minimum", np.minimum, doc="elementwise min")
_binary("equal", np.equal, NUMBERS + ("bool",), "bool", doc="x == y")
_binary("less", np.less, NUMBERS, "bool", doc="x < y")
_binary("greater", np.greater, NUMBERS, "bool", doc="x > y")


def _pow_infer(types, attrs):
    require_dtype("pow", types[0], NUMBERS, "base")
    require_dtype("pow", types[1], NUMBERS, "exponent")
    return TensorType(broadcast_shapes("pow", types[0].shape, types[1].shape), types[0].dtype)


def _pow_ref(x, y):
    if x.dtype.kind in "iu" and y.dtype.kind in "iu":
        return np.power(x.astype(np.int64), y.astype(np.int64)).astype(x.dtype)
    return np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)


register("pow", kind=OpKind.BROADCAST, infer=_pow_infer, reference=_pow_ref, num_inputs=(2, 2),
         doc="x ** y; the result has the base's dtype, the exponent may have another")


def _where_infer(types, attrs):
    cond, x, y = types
    require_dtype("where", cond, ("bool",), "condition")
    dtype = same_dtype("where", (x, y))
    return TensorType(broadcast_shapes("where", cond.shape, x.shape, y.shape), dtype)


register("where", kind=OpKind.BROADCAST, infer=_where_infer,
         reference=lambda c, x, y: np.where(c, x, y), num_inputs=(3, 3),
         doc="x where cond else y, broadcasting all three")



# --- more unary math, activations and logic (the ONNX operator set) ------------------------------
def _expm1_scaled(x64, alpha):
    return alpha * (np.exp(x64) - 1)


def _f64(fn):
    """``fn`` computed in float64 (the reference's precision), in numpy's error state."""
    def ref(x, **a):
        with np.errstate(all="ignore"):
            return fn(x.astype(np.float64), **a)
    return ref


for _name, _fn in (("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("asin", np.arcsin),
                   ("acos", np.arccos), ("atan", np.arctan), ("sinh", np.sinh),
                   ("cosh", np.cosh), ("floor", np.floor), ("ceil", np.ceil),
                   ("round", np.round), ("asinh", np.arcsinh), ("acosh", np.arccosh),
                   ("atanh", np.arctanh)):
    _unary(_name, _f64(_fn), doc=f"numpy.{_fn.__name__}(x)")
_unary("softplus", _f64(lambda x: np.logaddexp(0, x)), doc="log(1 + exp(x))")
_unary("mish", _f64(lambda x: x * np.tanh(np.logaddexp(0, x))), doc="x * tanh(softplus(x))")
_unary("swish", _f64(lambda x, alpha: x / (1 + np.exp(-alpha * x))), attrs={"alpha": 1.0},
       doc="x * sigmoid(alpha * x)")
_unary("hard_swish", _f64(lambda x: x * np.clip(x / 6 + 0.5, 0, 1)), doc="x * max(0, min(1, x / 6 + 1 / 2))")
_unary("elu", _f64(lambda x, alpha: np.where(x < 0, _expm1_scaled(x, alpha), x)),
       attrs={"alpha": 1.0}, doc="x if x >= 0 else alpha * (exp(x) - 1)")
_unary("selu", _f64(lambda x, alpha, gamma: gamma * np.where(x <= 0, _expm1_scaled(x, alpha), x)),
       attrs={"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
       doc="gamma * (x if x > 0 else alpha * (exp(x) - 1))")
_unary("celu", _f64(lambda x, alpha: np.maximum(x, 0) + np.minimum(
    0, _expm1_scaled(x / alpha, alpha))), attrs={"alpha": 1.0},
       doc="max(0, x) + min(0, alpha * (exp(x / alpha) - 1))")
_unary("thresholded_relu", _f64(lambda x, alpha: np.where(x > alpha, x, 0)),
       attrs={"alpha": 1.0}, doc="x if x > alpha else 0")
_unary("shrink", lambda x, bias, lambd: np.where(x < -lambd, x + bias, np.where(
    x > lambd, x - bias, 0)), NUMBERS, attrs={"bias": 0.0, "lambd": 0.5},
       doc="x + bias if x < -lambd, x - bias if x > lambd, else 0")
_unary("sign", np.sign, NUMBERS, doc="-1, 0 or 1 (NaN stays NaN)")


def _predicate(name, fn, dtypes, attrs=None, doc=""):
    """A unary op whose result is bool."""
    def infer(types, attrs):
        require_dtype(name, types[0], dtypes)
        return TensorType(types[0].shape, "bool")

    register(name, kind=OpKind.ELEMWISE, infer=infer,
             reference=lambda x, **a: np.asarray(fn(x, **a), bool), attrs=attrs, doc=doc)


def _isinf_ref(x, detect_negative, detect_positive):
    return (np.isposinf(x) & bool(detect_positive)) | (np.isneginf(x) & bool(detect_negative))


_predicate("isnan", np.isnan, FLOATS, doc="x is NaN")
_predicate("isinf", _isinf_ref, FLOATS, attrs={"detect_negative": 1, "detect_positive": 1},
           doc="x is +inf or -inf (each sign can be left out)")
_predicate("logical_not", np.logical_not, ("bool",), doc="not x")

_binary("greater_equal", np.greater_equal, NUMBERS, "bool", doc="x >= y")
_binary("less_equal", np.less_equal, NUMBERS, "bool", doc="x <= y")
_binary("logical_and", np.logical_and, ("bool",), doc="x and y")
_binary("logical_or", np.logical_or, ("bool",), doc="x or y")
_binary("logical_xor", np.logical_xor, ("bool",), doc="x xor y")


def _prelu_infer(types, attrs):
    x, slope = types
    same_dtype("prelu", types)
    require_dtype("prelu", x, SIGNED)
    shape = broadcast_shapes("prelu", x.shape, slope.shape)
    if shape != x.shape:
        raise OpShapeError(f"prelu: the slope's shape {slope.shape} must broadcast to the "
                           f"input's {x.shape}, not widen it")
    return x


register("prelu", kind=OpKind.BROADCAST, infer=_prelu_infer,
         reference=lambda x, s: np.where(x < 0, x * s, x).astype(x.dtype), num_inputs=(2, 2),
         doc="x if x >= 0 else slope * x (the slope broadcasts to x)")


def _mod_infer(types, attrs):
    dtype = same_dtype("mod", types)
    require_dtype("mod", types[0], NUMBERS)
    return TensorType(broadcast_shapes("mod", types[0].shape, types[1].shape), dtype)


def _mod_ref(x, y, fmod):
    if x.dtype.kind == "u":  # fmod and mod agree on unsigned values; x % 0 is 0
        safe = np.where(y == 0, np.ones_like(y), y)
        return np.where(y == 0, np.zeros_like(x), np.mod(x, safe)).astype(x.dtype)
    if is_float_dtype(x.dtype):
        with np.errstate(all="ignore"):
            return (np.fmod(x, y) if fmod else np.mod(x, y)).astype(x.dtype)
    x64, y64 = np.broadcast_arrays(x.astype(np.int64), y.astype(np.int64))
    safe = np.where(y64 == 0, 1, y64)
    r = np.fmod(x64, safe) if fmod else np.mod(x64, safe)
    return np.where(y64 == 0, 0, r).astype(x.dtype)


register("mod", kind=OpKind.BROADCAST, infer=_mod_infer, reference=_mod_ref,
         attrs={"fmod": 0}, num_inputs=(2, 2),
         doc="remainder with the divisor's sign (fmod=0) or the dividend's (fmod=1)")


_unary("hard_sigmoid", _f64(lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1)),
       attrs={"alpha": 0.2, "beta": 0.5}, doc="max(0, min(1, alpha * x + beta))")
_unary("softsign", _f64(lambda x: x / (1 + np.abs(x))), doc="x / (1 + |x|)")


def _bitshift_infer(types, attrs):
    dtype = same_dtype("bitshift", types)
    require_dtype("bitshift", types[0], INTS)
    if attrs["direction"] not in ("LEFT", "RIGHT"):
        raise OpAttributeError(f"bitshift: direction={attrs['direction']!r} is not 'LEFT' or "
                               "'RIGHT'")
    return TensorType(broadcast_shapes("bitshift", types[0].shape, types[1].shape), dtype)


def _bitshift_ref(x, y, direction):
    x, y = np.broadcast_arrays(x, y)
    bits = np.iinfo(x.dtype).bits
    inside = (y >= 0) & (y < bits)
    s = np.where(inside, y, 0).astype(x.dtype)
    if direction == "LEFT":
        # through the unsigned type of the same width: a signed left shift wraps
        u = x.view(f"u{x.dtype.itemsize}") << s.astype(f"u{x.dtype.itemsize}")
        return np.where(inside, u.view(x.dtype), 0).astype(x.dtype)
    fill = np.where(x < 0, -1, 0) if x.dtype.kind == "i" else 0
    return np.where(inside, x >> s, fill).astype(x.dtype)


register("bitshift", kind=OpKind.BROADCAST, infer=_bitshift_infer, reference=_bitshift_ref,
         attrs={"direction": "LEFT"}, num_inputs=(2, 2),
         doc="x << y or x >> y (direction LEFT or RIGHT); a shift outside [0, bits) gives 0, "
             "or -1 for a negative x shifted right")


def _bitwise_infer(op: str):
    def infer(types, attrs):
        dtype = same_dtype(op, types)
        require_dtype(op, types[0], INTS)
        return TensorType(broadcast_shapes(op, *(t.shape for t in types)), dtype)
    return infer


for _name, _fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                   ("bitwise_xor", np.bitwise_xor)):
    register(_name, kind=OpKind.BROADCAST, infer=_bitwise_infer(_name), reference=_fn,
             num_inputs=(2, 2), doc=f"numpy.{_fn.__name__}(x, y) of integers")
register("bitwise_not", kind=OpKind.ELEMWISE, infer=_bitwise_infer("bitwise_not"),
         reference=np.invert, doc="numpy.invert(x): every bit of an integer flipped")
