"""The unary elementwise ops: math, activations and predicates, each declared once with its
formula, its ONNX name and the formula of its derivative (:mod:`.declare`).

    >>> get("swish").onnx, get("swish").grad_ops
    ('Swish', ('swish_grad',))

A formula gets one element ``v`` in its compute dtype (float32 for float16 and bfloat16,
int32 for int8) and the op's attributes; a derivative gets the input ``x``, the output ``y``
and the incoming gradient ``g``. Python numbers take the dtype of the expression beside them;
:func:`k` makes a constant where the dtype may be an integer's.
"""

from __future__ import annotations

import math

from ..te.ops.util import const_like as k
from ..tir import expr as _e
from ._infer import FLOATS, INTS, NUMBERS
from .declare import OnnxAttrs, OnnxInput, one_of, unary

SIGNED = ("int8", "int16", "int32", "int64") + FLOATS
_SQRT_2_PI = math.sqrt(2 / math.pi)
_GELU_CUBIC = 0.044715


def _sq(v):
    return v * v


# --- arithmetic and the classic activations ---------------------------------------------------
unary("neg", lambda v: -v, dtypes=SIGNED, onnx="Neg", grad=lambda x, y, g: -g, doc="-x")
unary("abs", _e.abs, dtypes=NUMBERS, onnx="Abs",
      grad=lambda x, y, g: _e.select(x < 0, -g, g), doc="|x|")
unary("exp", _e.exp, onnx="Exp", grad=lambda x, y, g: g * y, doc="e**x")
unary("log", _e.log, onnx="Log", grad=lambda x, y, g: g / x, doc="natural logarithm")
unary("sqrt", _e.sqrt, onnx="Sqrt", grad=lambda x, y, g: g / (2 * y), doc="square root")
unary("reciprocal", lambda v: 1 / v, onnx="Reciprocal", grad=lambda x, y, g: -g * y * y,
      doc="1 / x")
unary("relu", lambda v: _e.max(v, k(0, v)), dtypes=SIGNED, onnx="Relu",
      grad=lambda x, y, g: _e.select(x > 0, g, 0.0), doc="max(x, 0)")
unary("leaky_relu", lambda v, alpha: _e.select(v < 0, v * alpha, v), attrs={"alpha": 0.01},
      onnx="LeakyRelu", grad=lambda x, y, g, alpha: _e.select(x < 0, g * alpha, g),
      doc="x if x >= 0 else alpha * x")
unary("sigmoid", _e.sigmoid, onnx="Sigmoid", grad=lambda x, y, g: g * y * (1 - y),
      doc="1 / (1 + exp(-x))")
unary("tanh", _e.tanh, onnx="Tanh", grad=lambda x, y, g: g * (1 - y * y),
      doc="hyperbolic tangent")
unary("erf", _e.erf, onnx="Erf", grad=lambda x, y, g: g * (2 / math.sqrt(math.pi))
      * _e.exp(-x * x), doc="the error function")


def _gelu(v, approximate):
    if approximate == "tanh":
        return 0.5 * v * (1 + _e.tanh(_SQRT_2_PI * (v + _GELU_CUBIC * v * v * v)))
    return 0.5 * v * (1 + _e.erf(v * (1 / math.sqrt(2))))


def _gelu_grad(x, y, g, approximate):
    if approximate == "tanh":
        t = _e.tanh(_SQRT_2_PI * (x + _GELU_CUBIC * x * x * x))
        dt = (1 - t * t) * _SQRT_2_PI * (1 + 3 * _GELU_CUBIC * x * x)
        return g * (0.5 * (1 + t) + 0.5 * x * dt)
    cdf = 0.5 * (1 + _e.erf(x * (1 / math.sqrt(2))))
    pdf = (1 / math.sqrt(2 * math.pi)) * _e.exp(-0.5 * x * x)
    return g * (cdf + x * pdf)


unary("gelu", _gelu, attrs={"approximate": "none"}, onnx="Gelu", grad=_gelu_grad,
      check_attrs=one_of("gelu", "approximate", ("none", "tanh")),
      doc="x * Phi(x); approximate='tanh' uses the tanh formula")


def _clip(v, min=None, max=None):  # noqa: A002 - ONNX's names
    if min is not None:
        v = _e.max(v, k(min, v))
    if max is not None:
        v = _e.min(v, k(max, v))
    return v


def _clip_grad(x, y, g, min=None, max=None):  # noqa: A002
    inside = _e.const(True, "bool")
    if min is not None:
        inside = inside & (x >= k(min, x))
    if max is not None:
        inside = inside & (x <= k(max, x))
    return _e.select(inside, g, 0.0)


unary("clip", _clip, dtypes=NUMBERS, attrs={"min": None, "max": None}, grad=_clip_grad,
      onnx="Clip", onnx_attrs=OnnxAttrs(inputs={"min": OnnxInput(1, "scalar", "like"),
                                                "max": OnnxInput(2, "scalar", "like")}),
      doc="min(max(x, min), max); a missing bound is no bound")

# --- more math: trigonometry, rounding -----------------------------------------------------------
_TRIG = {
    "sin": ("Sin", lambda x, y, g: g * _e.cos(x)),
    "cos": ("Cos", lambda x, y, g: -g * _e.sin(x)),
    "tan": ("Tan", lambda x, y, g: g * (1 + y * y)),
    "asin": ("Asin", lambda x, y, g: g / _e.sqrt(1 - x * x)),
    "acos": ("Acos", lambda x, y, g: -g / _e.sqrt(1 - x * x)),
    "atan": ("Atan", lambda x, y, g: g / (1 + x * x)),
    "sinh": ("Sinh", lambda x, y, g: g * _e.cosh(x)),
    "cosh": ("Cosh", lambda x, y, g: g * _e.sinh(x)),
    "asinh": ("Asinh", lambda x, y, g: g / _e.sqrt(x * x + 1)),
    "acosh": ("Acosh", lambda x, y, g: g / _e.sqrt(x * x - 1)),
    "atanh": ("Atanh", lambda x, y, g: g / (1 - x * x)),
}
for _name, (_onnx, _grad) in _TRIG.items():
    unary(_name, getattr(_e, _name), onnx=_onnx, grad=_grad, doc=f"numpy's {_name}(x)")
# piecewise constant: no gradient to declare
unary("floor", _e.floor, onnx="Floor", doc="numpy.floor(x)")
unary("ceil", _e.ceil, onnx="Ceil", doc="numpy.ceil(x)")
unary("round", _e.round, onnx="Round", doc="to the nearest integer, halves to even")

# --- activations of the ONNX operator set --------------------------------------------------------


def _softplus(v):
    # max(x, 0) + log(1 + exp(-|x|)): no overflow for large |x|
    return _e.max(v, 0.0) + _e.log(1 + _e.exp(-_e.abs(v)))


def _mish_grad(x, y, g):
    t = _e.tanh(_softplus(x))
    return g * (t + x * (1 - t * t) * _e.sigmoid(x))


def _swish_grad(x, y, g, alpha):
    s = _e.sigmoid(alpha * x)
    return g * (s + alpha * x * s * (1 - s))


def _expm1_scaled(v, alpha):
    return alpha * (_e.exp(v) - 1)


unary("softplus", _softplus, onnx="Softplus", grad=lambda x, y, g: g * _e.sigmoid(x),
      doc="log(1 + exp(x))")
unary("mish", lambda v: v * _e.tanh(_softplus(v)), onnx="Mish", grad=_mish_grad,
      doc="x * tanh(softplus(x))")
unary("swish", lambda v, alpha: v * _e.sigmoid(v * alpha), attrs={"alpha": 1.0},
      onnx="Swish", grad=_swish_grad, doc="x * sigmoid(alpha * x)")
unary("hard_swish", lambda v: v * _e.max(0.0, _e.min(1.0, v * (1 / 6) + 0.5)),
      onnx="HardSwish", grad=lambda x, y, g: _e.select(
          x < -3, 0.0, _e.select(x > 3, g, g * (x * (1 / 3) + 0.5))),
      doc="x * max(0, min(1, x / 6 + 1 / 2))")
unary("elu", lambda v, alpha: _e.select(v < 0, _expm1_scaled(v, alpha), v),
      attrs={"alpha": 1.0}, onnx="Elu",
      grad=lambda x, y, g, alpha: _e.select(x < 0, g * (y + alpha), g),
      doc="x if x >= 0 else alpha * (exp(x) - 1)")
unary("selu", lambda v, alpha, gamma: gamma * _e.select(v <= 0, _expm1_scaled(v, alpha), v),
      attrs={"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
      onnx="Selu", grad=lambda x, y, g, alpha, gamma: _e.select(
          x <= 0, g * (y + gamma * alpha), g * gamma),
      doc="gamma * (x if x > 0 else alpha * (exp(x) - 1))")
unary("celu", lambda v, alpha: _e.max(v, 0.0) + _e.min(0.0, _expm1_scaled(v / alpha, alpha)),
      attrs={"alpha": 1.0}, onnx="Celu",
      grad=lambda x, y, g, alpha: _e.select(x < 0, g * _e.exp(x / alpha), g),
      doc="max(0, x) + min(0, alpha * (exp(x / alpha) - 1))")
unary("thresholded_relu", lambda v, alpha: _e.select(v > alpha, v, 0.0), attrs={"alpha": 1.0},
      onnx="ThresholdedRelu", grad=lambda x, y, g, alpha: _e.select(x > alpha, g, 0.0),
      doc="x if x > alpha else 0")
unary("hard_sigmoid", lambda v, alpha, beta: _e.max(0.0, _e.min(1.0, v * alpha + beta)),
      attrs={"alpha": 0.2, "beta": 0.5}, onnx="HardSigmoid",
      grad=lambda x, y, g, alpha, beta: _e.select(
          (x * alpha + beta > 0) & (x * alpha + beta < 1), g * alpha, 0.0),
      doc="max(0, min(1, alpha * x + beta))")
unary("softsign", lambda v: v / (1 + _e.abs(v)), onnx="Softsign",
      grad=lambda x, y, g: g / _sq(1 + _e.abs(x)), doc="x / (1 + |x|)")


def _shrink(v, bias, lambd):
    # on integers the bounds and the bias stay fractional (onnxruntime adds in floating
    # point, then the store truncates): rounding them to the dtype first shifts the result
    if _e.is_int(v.dtype):
        v = _e.cast("float64", v)
    return _e.select(v < k(-lambd, v), v + k(bias, v),
                     _e.select(v > k(lambd, v), v - k(bias, v), k(0, v)))


unary("shrink", _shrink, dtypes=NUMBERS, attrs={"bias": 0.0, "lambd": 0.5}, onnx="Shrink",
      grad=lambda x, y, g, bias, lambd: _e.select((x < -lambd) | (x > lambd), g, 0.0),
      doc="x + bias if x < -lambd, x - bias if x > lambd, else 0")


def _sign(v):
    if v.dtype in _e.UNSIGNED_DTYPES:   # never negative: no -1 to spell in the dtype
        return _e.select(v > k(0, v), k(1, v), v)
    return _e.select(v > k(0, v), k(1, v), _e.select(v < k(0, v), k(-1, v), v))


unary("sign", _sign, dtypes=NUMBERS, onnx="Sign", doc="-1, 0 or 1 (NaN stays NaN)")

# --- predicates and bits -------------------------------------------------------------------------


def _isinf(v, detect_negative, detect_positive):
    found = _e.const(False, "bool")
    if detect_positive:
        found = found | (v == _e.infinity(v.dtype))
    if detect_negative:
        found = found | (v == _e.neg_infinity(v.dtype))
    return found


unary("isnan", lambda v: v != v, out_dtype="bool", onnx="IsNaN", doc="x is NaN")
unary("isinf", _isinf, out_dtype="bool", attrs={"detect_negative": 1, "detect_positive": 1},
      onnx="IsInf", doc="x is +inf or -inf (each sign can be left out)")
unary("logical_not", _e.logical_not, dtypes=("bool",), onnx="Not", doc="not x")


def _bitwise_not(v):
    # all ones: -1 in a signed compute dtype (int32 for int8 and uint8: the store wraps it
    # back), the largest value in an unsigned one
    ones = _e.int_range(v.dtype)[1] if v.dtype in _e.UNSIGNED_DTYPES else -1
    return _e.bitwise_xor(v, k(ones, v))


unary("bitwise_not", _bitwise_not, dtypes=INTS, onnx="BitwiseNot",
      doc="numpy.invert(x): every bit of an integer flipped")
